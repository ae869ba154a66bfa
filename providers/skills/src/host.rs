//! A running `skills.fs` mount: the last complete scan of every root it has
//! read, what of each must be read again, the projects it keeps (at most
//! `max_watched_projects`, the least recently used dropped), and a watcher
//! whose events mark folders to read again and, once they settle, republish.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use notify_debouncer_full::notify::{self, EventKind, RecursiveMode, Watcher as _};
use seam_engine::runtime::{BoxFuture, BuildCx, Changes, Running, State, Status};
use serde_json::{Map, Value as Json, json};

use crate::FsSkills;
use crate::discover::{self, Dirty, Root, Scan};
use crate::trust::{self, RootTrust};

/// How long events must pause before a republish.
pub const SETTLE: Duration = Duration::from_millis(100);
/// The longest a republish waits while events keep coming.
pub const MAX_SETTLE: Duration = Duration::from_secs(1);

static SERIALS: AtomicU64 = AtomicU64::new(1);

/// One observation of a workspace by one mount: every root it reads, each
/// with its scan, or why the observation is incomplete.
#[derive(Clone, Debug)]
pub struct Observation {
    pub roots: Vec<(Root, Arc<Scan>)>,
    /// Roots refused by `read_only_roots`, with the reason.
    pub refused: Vec<(Root, String)>,
    pub incomplete: Option<String>,
    /// The mount's revision this observation is complete at.
    pub revision: u64,
}

#[derive(Default)]
struct RootState {
    scan: Option<Arc<Scan>>,
    dirty: Dirty,
    /// Watches placed: the root itself and these folders.
    watched_root: bool,
    watched_folders: HashSet<String>,
    /// The project a project root belongs to.
    project: Option<PathBuf>,
}

#[derive(Default)]
struct Inner {
    roots: HashMap<PathBuf, RootState>,
    /// Projects kept, least recently used first.
    projects: VecDeque<PathBuf>,
    watcher: Option<notify::RecommendedWatcher>,
    /// Set when the watcher reported an error; the next observation is incomplete once.
    watch_error: Option<String>,
}

pub struct SkillsMount {
    pub id: String,
    pub config: FsSkills,
    /// `services.workspace.root`: the workspace when the client gives no roots.
    pub workspace: Option<PathBuf>,
    /// Unique in the process: cache keys name the mount by it.
    pub serial: u64,
    revision: AtomicU64,
    republishes: AtomicU64,
    inner: Mutex<Inner>,
    changes: Changes,
    disposed: AtomicBool,
    stop: tokio_util::sync::CancellationToken,
}

pub fn build(config: FsSkills, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, String>> {
    Box::pin(async move {
        let mount = start(Arc::new(SkillsMount::new(cx.id, config, cx.workspace, cx.changes)))?;
        // The configured workspace is read at start, so the first listing is already warm.
        if let Some(ws) = mount.workspace.clone() {
            let m = mount.clone();
            let observed = tokio::task::spawn_blocking(move || m.observe(&ws)).await.map_err(|e| e.to_string())?;
            if let Some(reason) = observed.incomplete {
                tracing::warn!(mount = %mount.id, "skill discovery incomplete: {reason}");
            }
        }
        Ok(mount as Arc<dyn Running>)
    })
}

/// Starts a mount's watcher (when `watch` is on); inside a tokio runtime.
pub fn start(mount: Arc<SkillsMount>) -> Result<Arc<SkillsMount>, String> {
    mount.start_watching()?;
    Ok(mount)
}

impl SkillsMount {
    pub fn new(id: String, config: FsSkills, workspace: Option<PathBuf>, changes: Changes) -> SkillsMount {
        SkillsMount {
            id,
            config,
            workspace,
            serial: SERIALS.fetch_add(1, Ordering::Relaxed),
            revision: AtomicU64::new(0),
            republishes: AtomicU64::new(0),
            inner: Mutex::default(),
            changes,
            disposed: AtomicBool::new(false),
            stop: tokio_util::sync::CancellationToken::new(),
        }
    }

    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::SeqCst)
    }

    /// How many times settled watcher events republished the catalog.
    pub fn republishes(&self) -> u64 {
        self.republishes.load(Ordering::SeqCst)
    }

    /// Projects kept (watched, when watching), least recently used first.
    pub fn projects(&self) -> Vec<PathBuf> {
        self.inner.lock().expect("skills lock").projects.iter().cloned().collect()
    }

    fn home() -> Option<PathBuf> {
        std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
    }

    /// The roots this mount reads for a workspace.
    pub fn roots_for(&self, workspace: &Path) -> Vec<Root> {
        discover::roots(&self.config, &discover::project_of(workspace), Self::home().as_deref())
    }

    /// Reads what changed since the last observation of the workspace's roots
    /// (blocking). A revision bump while reading is retried once; a second
    /// one, an unreadable root or a watcher failure makes it incomplete.
    pub fn observe(&self, workspace: &Path) -> Observation {
        let project = discover::project_of(workspace);
        self.keep_project(&project);
        let roots = discover::roots(&self.config, &project, Self::home().as_deref());
        let mut attempt = 0;
        loop {
            let revision = self.revision();
            let mut observation = Observation { roots: Vec::new(), refused: Vec::new(), incomplete: None, revision };
            if let Some(e) = self.inner.lock().expect("skills lock").watch_error.take() {
                observation.incomplete = Some(format!("the watcher failed: {e}"));
            }
            for root in &roots {
                let trust = trust::of(root, self.workspace.as_deref());
                if self.config.read_only_roots
                    && let Some(reason) = trust.refusal()
                {
                    observation.refused.push((root.clone(), reason));
                    continue;
                }
                match self.read_root(root) {
                    Ok(scan) => observation.roots.push((root.clone(), scan)),
                    Err(e) => {
                        observation.incomplete.get_or_insert(e);
                    }
                }
            }
            if observation.incomplete.is_some() || self.revision() == revision {
                return observation;
            }
            attempt += 1;
            if attempt > 1 {
                observation.incomplete = Some("the skill roots kept changing while they were read".into());
                return observation;
            }
        }
    }

    fn read_root(&self, root: &Root) -> Result<Arc<Scan>, String> {
        let (previous, dirty) = {
            let mut inner = self.inner.lock().expect("skills lock");
            let state = inner.roots.entry(root.path.clone()).or_default();
            if state.scan.is_some() && state.dirty == Dirty::Clean {
                return Ok(state.scan.clone().expect("checked"));
            }
            // Taken now: an event arriving while the root is read marks it again.
            (state.scan.clone(), std::mem::take(&mut state.dirty))
        };
        let scan = match discover::scan(root, previous.as_deref(), &dirty) {
            Ok(scan) => Arc::new(scan),
            Err(e) => {
                let mut inner = self.inner.lock().expect("skills lock");
                inner.roots.entry(root.path.clone()).or_default().dirty = Dirty::All;
                return Err(e);
            }
        };
        let mut inner = self.inner.lock().expect("skills lock");
        let watch_failed = self.watch_root(&mut inner, root, &scan);
        let state = inner.roots.entry(root.path.clone()).or_default();
        state.scan = Some(scan.clone());
        state.project = root.project.clone();
        if let Err(e) = watch_failed {
            state.dirty = Dirty::All;
            return Err(e);
        }
        Ok(scan)
    }

    /// Places the watches a scan of `root` needs: the root and each skill folder, non-recursively.
    fn watch_root(&self, inner: &mut Inner, root: &Root, scan: &Scan) -> Result<(), String> {
        let Inner { roots, watcher, .. } = inner;
        let (Some(watcher), true) = (watcher.as_mut(), scan.exists) else { return Ok(()) };
        let state = roots.entry(root.path.clone()).or_default();
        let fail = |path: &Path, e: notify::Error| format!("cannot watch {}: {e}", path.display());
        if !state.watched_root {
            watcher.watch(&root.path, RecursiveMode::NonRecursive).map_err(|e| fail(&root.path, e))?;
            state.watched_root = true;
        }
        for folder in scan.folders() {
            if !state.watched_folders.contains(folder) {
                let dir = root.path.join(folder);
                watcher.watch(&dir, RecursiveMode::NonRecursive).map_err(|e| fail(&dir, e))?;
                state.watched_folders.insert(folder.to_owned());
            }
        }
        Ok(())
    }

    /// Marks `project` the most recently used; past `max_watched_projects` the
    /// least recently used is dropped: its roots unwatched and forgotten.
    fn keep_project(&self, project: &Path) {
        let mut inner = self.inner.lock().expect("skills lock");
        if let Some(at) = inner.projects.iter().position(|p| p == project) {
            let p = inner.projects.remove(at).expect("found");
            inner.projects.push_back(p);
            return;
        }
        inner.projects.push_back(project.to_owned());
        while inner.projects.len() > self.config.max_watched_projects as usize {
            let dropped = inner.projects.pop_front().expect("over the limit");
            let Inner { roots, watcher, .. } = &mut *inner;
            roots.retain(|path, state| {
                if state.project.as_ref() != Some(&dropped) {
                    return true;
                }
                if let Some(w) = watcher.as_mut() {
                    for folder in &state.watched_folders {
                        let _ = w.unwatch(&path.join(folder));
                    }
                    if state.watched_root {
                        let _ = w.unwatch(path);
                    }
                }
                false
            });
            self.revision.fetch_add(1, Ordering::SeqCst);
            tracing::debug!(mount = %self.id, project = %dropped.display(), "project dropped from the watched set");
        }
    }

    /// The watched roots' paths, for tests and `/status`.
    pub fn watched_roots(&self) -> Vec<PathBuf> {
        let inner = self.inner.lock().expect("skills lock");
        let mut out: Vec<PathBuf> = inner.roots.iter().filter(|(_, s)| s.watched_root).map(|(p, _)| p.clone()).collect();
        out.sort();
        out
    }

    /// Marks what an event about `path` makes stale, at once (no settling):
    /// the folder it is in, or the whole root for an event on the root.
    /// Returns whether the path is in one of the mount's roots.
    pub fn invalidate(&self, path: &Path) -> bool {
        let mut inner = self.inner.lock().expect("skills lock");
        let mut hit = false;
        for (root, state) in inner.roots.iter_mut() {
            let Ok(rest) = path.strip_prefix(root) else { continue };
            let folder = rest.components().next().and_then(|c| c.as_os_str().to_str()).map(str::to_owned);
            // The root itself, a file beside the skill folders, or inside one.
            state.dirty.add(folder);
            hit = true;
        }
        drop(inner);
        if hit {
            self.revision.fetch_add(1, Ordering::SeqCst);
        }
        hit
    }

    /// Forgets everything read (the watcher lost events).
    fn invalidate_all(&self) {
        let mut inner = self.inner.lock().expect("skills lock");
        for state in inner.roots.values_mut() {
            state.dirty = Dirty::All;
        }
        drop(inner);
        self.revision.fetch_add(1, Ordering::SeqCst);
    }

    fn start_watching(self: &Arc<Self>) -> Result<(), String> {
        if !self.config.watch {
            return Ok(());
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<notify::Result<notify::Event>>();
        let watcher = notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        })
        .map_err(|e| format!("cannot start the skills watcher: {e}"))?;
        self.inner.lock().expect("skills lock").watcher = Some(watcher);
        tokio::spawn(coalesce(Arc::downgrade(self), rx, self.stop.clone()));
        Ok(())
    }

    /// What one watcher event means: paths to invalidate, or "everything" for a watcher error.
    fn take_event(&self, event: notify::Result<notify::Event>) -> bool {
        match event {
            Ok(e) if matches!(e.kind, EventKind::Access(notify::event::AccessKind::Close(notify::event::AccessMode::Write))) => {
                e.paths.iter().fold(false, |hit, p| self.invalidate(p) | hit)
            }
            Ok(e) if matches!(e.kind, EventKind::Access(_)) => false,
            Ok(e) => e.paths.iter().fold(false, |hit, p| self.invalidate(p) | hit),
            Err(e) => {
                tracing::warn!(mount = %self.id, "skills watcher: {e}");
                self.inner.lock().expect("skills lock").watch_error = Some(e.to_string());
                self.invalidate_all();
                true
            }
        }
    }

    fn republish(&self) {
        self.republishes.fetch_add(1, Ordering::SeqCst);
        self.changes.notify();
    }

    /// `/status` and the tools' view of this mount.
    pub fn status_json(&self) -> Json {
        let workspace = self.workspace.clone();
        let roots: Vec<Json> = workspace
            .as_deref()
            .map(|ws| self.roots_for(ws))
            .unwrap_or_default()
            .iter()
            .map(|root| {
                let trust = trust::of(root, self.workspace.as_deref());
                let inner = self.inner.lock().expect("skills lock");
                let scan = inner.roots.get(&root.path).and_then(|s| s.scan.clone());
                let mut j = root_json(root, &trust);
                if let Some(scan) = scan {
                    j["skills"] = json!(scan.skills().count());
                    j["invalid"] = json!(scan.invalid().map(|i| i.to_string()).collect::<Vec<_>>());
                }
                j["refused"] = json!(self.config.read_only_roots && trust.refusal().is_some());
                j
            })
            .collect();
        json!({
            "roots": roots,
            "projects": self.projects(),
            "revision": self.revision(),
            "republishes": self.republishes(),
            "watching": self.config.watch,
        })
    }
}

pub fn root_json(root: &Root, trust: &RootTrust) -> Json {
    json!({
        "path": root.path,
        "rank": root.rank,
        "origin": root.origin,
        "exists": trust.exists,
        "owner_uid": trust.owner_uid,
        "mode": trust.mode.map(|m| format!("{:04o}", m & 0o7777)),
        "world_writable": trust.world_writable,
        "in_workspace": trust.in_workspace,
        "warning": trust.warning(),
    })
}

/// The republisher: each event invalidates at once; a republish follows once
/// events pause for `SETTLE` (or `MAX_SETTLE` after the first, if they never
/// pause), so a burst of edits costs one republish.
pub(crate) async fn coalesce(
    mount: Weak<SkillsMount>,
    mut events: tokio::sync::mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
    stop: tokio_util::sync::CancellationToken,
) {
    loop {
        let first = tokio::select! {
            e = events.recv() => e,
            _ = stop.cancelled() => return,
        };
        let Some(first) = first else { return };
        let Some(m) = mount.upgrade() else { return };
        let mut pending = m.take_event(first);
        drop(m);
        let deadline = tokio::time::Instant::now() + MAX_SETTLE;
        loop {
            let settle = tokio::time::sleep(SETTLE.min(deadline.saturating_duration_since(tokio::time::Instant::now())));
            tokio::select! {
                e = events.recv() => match (e, mount.upgrade()) {
                    (Some(e), Some(m)) => pending |= m.take_event(e),
                    _ => return,
                },
                _ = settle => break,
                _ = stop.cancelled() => return,
            }
        }
        if pending && let Some(m) = mount.upgrade() {
            m.republish();
        }
    }
}

impl Running for SkillsMount {
    fn status(&self) -> Status {
        if self.disposed.load(Ordering::SeqCst) {
            return Status::new(State::Retired, None);
        }
        Status::new(State::Ready, None)
    }
    fn dispose(&self, _within: Duration) -> BoxFuture<'static, ()> {
        self.disposed.store(true, Ordering::SeqCst);
        self.stop.cancel();
        // Dropping the watcher ends its thread and its watches.
        self.inner.lock().expect("skills lock").watcher = None;
        Box::pin(async {})
    }
    fn facts(&self) -> Map<String, Json> {
        let mut facts = Map::new();
        facts.insert("projects".into(), json!(self.projects()));
        facts.insert("revision".into(), json!(self.revision()));
        facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::ModifyKind;

    /// Events arrive every 5 ms for half a second: one republish once they pause;
    /// a later event is another; a stream that never pauses republishes every `MAX_SETTLE`.
    #[tokio::test(start_paused = true)]
    async fn a_burst_of_events_is_one_republish() {
        let dir = std::env::temp_dir().join(format!("seam-skills-coalesce-{}", std::process::id()));
        let root = dir.join("custom");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/SKILL.md"), "---\nname: a\ndescription: d\n---\n").unwrap();
        let config = FsSkills {
            kind: "skills.fs".into(),
            include_default_roots: false,
            custom_dirs: vec![root.display().to_string()],
            bundled_dir: None,
            watch: false,
            max_watched_projects: 1,
            read_only_roots: false,
        };
        let mount = Arc::new(SkillsMount::new("m".into(), config, Some(dir.clone()), Changes::default()));
        mount.observe(&dir);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(coalesce(Arc::downgrade(&mount), rx, stop.clone()));
        let send = |path: PathBuf| tx.send(Ok(notify::Event::new(EventKind::Modify(ModifyKind::Any)).add_path(path))).unwrap();
        let tick = Duration::from_millis(5);

        for _ in 0..100 {
            send(root.join("a/SKILL.md"));
            tokio::time::sleep(tick).await;
        }
        assert_eq!(mount.republishes(), 0, "nothing while events keep coming (500 ms, under MAX_SETTLE)");
        tokio::time::sleep(SETTLE + tick).await;
        assert_eq!(mount.republishes(), 1, "100 events, one republish");

        send(root.join("a"));
        tokio::time::sleep(SETTLE + tick).await;
        assert_eq!(mount.republishes(), 2, "a pause longer than SETTLE separates bursts");

        send(dir.join("elsewhere"));
        tokio::time::sleep(SETTLE + tick).await;
        assert_eq!(mount.republishes(), 2, "an event outside the roots republishes nothing");

        let stream = MAX_SETTLE.as_millis() as u32 / 5 + 20;
        for _ in 0..stream {
            send(root.join("a/SKILL.md"));
            tokio::time::sleep(tick).await;
        }
        assert_eq!(mount.republishes(), 3, "a stream that never pauses still republishes after MAX_SETTLE");
        stop.cancel();
        task.await.unwrap();
    }
}

//! A running `skills.fs` mount: the last complete scan of every root it has
//! read, what of each must be read again, the projects it keeps (at most
//! `max_watched_projects`, the least recently used dropped), and a watcher
//! whose events mark folders to read again and, once they settle, republish.
//!
//! An existing root is watched recursively (one request to the watcher,
//! which also watches folders made in it later); a root that does not exist
//! yet is watched through its nearest existing ancestor, non-recursively, so
//! that creating `.seam/skills` in a project is seen. A root is watched
//! before it is read, so no edit falls between a read and its watch. Calls
//! through seam that may have written files (`saw_write`) invalidate the
//! roots they name at once, before the watcher would.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use notify_debouncer_full::notify::{self, EventKind, RecursiveMode, Watcher as _};
use seam_engine::runtime::{BoxFuture, BuildCx, Changes, ProviderError, Running, State, Status, WriteWatcher};
use serde_json::{Map, Value as Json, json};

use crate::FsSkills;
use crate::discover::{self, Dirty, DiscoverError, Root, Scan};
use crate::trust::{self, RootTrust};

/// How long events must pause before a republish.
pub const SETTLE: Duration = Duration::from_millis(100);
/// The longest a republish waits while events keep coming.
pub const MAX_SETTLE: Duration = Duration::from_secs(1);

/// Why a mount's watcher could not start, or a root could not be watched or read.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("cannot start the skills watcher: {source}")]
    StartWatcher {
        #[source]
        source: notify::Error,
    },
    /// The root, or the ancestor it is watched through, could not be watched.
    #[error("cannot watch {}: {source}", path.display())]
    Watch {
        path: PathBuf,
        #[source]
        source: notify::Error,
    },
    /// The root could not be read.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
}

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
    /// Bumped by every event that touches the root: an observation is
    /// complete when none of its roots moved while it read them.
    revision: u64,
    /// The path watched for the root: the root itself (recursively) when it
    /// exists, else its nearest existing ancestor.
    anchor: Option<PathBuf>,
    /// The anchor itself was touched (removed, renamed, made again): its
    /// watch may be gone with it, so the next read watches it again.
    rewatch: bool,
    /// Why the root cannot be watched (the watch limit, say); such a root is
    /// relisted at every observation, rereading only files whose stamp moved.
    unwatchable: Option<String>,
    /// The project a project root belongs to.
    project: Option<PathBuf>,
}

#[derive(Default)]
struct Inner {
    roots: HashMap<PathBuf, RootState>,
    /// Projects kept, least recently used first.
    projects: VecDeque<PathBuf>,
    /// Per watched path: how many roots hold it and whether recursively (a
    /// project folder is the anchor of both of its missing roots).
    held: HashMap<PathBuf, (u32, RecursiveMode)>,
    /// Set when the watcher reported an error; the next observation is incomplete once.
    watch_error: Option<String>,
}

impl Inner {
    /// One holder fewer for `path`; the path when nothing holds it any more.
    fn release(&mut self, path: &Path) -> Option<PathBuf> {
        let (n, _) = self.held.get_mut(path)?;
        *n -= 1;
        if *n > 0 {
            return None;
        }
        self.held.remove(path);
        Some(path.to_owned())
    }
}

/// The first retry after an incomplete observation, and the longest wait between retries.
pub const RETRY_FIRST: Duration = Duration::from_secs(1);
pub const RETRY_MAX: Duration = Duration::from_secs(30);

pub struct SkillsMount {
    pub id: String,
    pub config: FsSkills,
    /// `services.workspace.root`: the workspace when the client gives no roots;
    /// `None` when the composition sets none (there is no implicit one).
    pub configured_root: Option<PathBuf>,
    /// The workspace of a client that gives no roots: the configured root, else
    /// the folder seam was started in. Fixed for the mount's life, so found once
    /// (`saw_write` runs after every call that may write).
    rootless_workspace: PathBuf,
    /// The catalogs of the chains this mount is the first of (`registry::Chains`):
    /// kept with the mounts they were read from, not in the process.
    pub(crate) chains: crate::registry::Chains,
    /// The digests of files served from those chains' catalogs (`served::Digests`).
    pub(crate) digests: Arc<crate::served::Digests>,
    revision: AtomicU64,
    republishes: AtomicU64,
    /// Skill files read by discovery since the mount started (each edit costs one).
    files_read: AtomicU64,
    /// Taken for short bookkeeping only, never across a read or a watch.
    inner: Mutex<Inner>,
    /// Touched only while observing (one observation at a time) and at disposal.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// One observation at a time: reads of a root never interleave.
    observing: Mutex<()>,
    /// Incomplete observations in a row; while there are any, a retry republishes after a backoff.
    incomplete_streak: AtomicU32,
    retry: Arc<tokio::sync::Notify>,
    changes: Changes,
    disposed: AtomicBool,
    stop: tokio_util::sync::CancellationToken,
}

pub fn build(config: FsSkills, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    Box::pin(async move {
        // The workspace as sessions will name it (real path), so that both read the same roots.
        let workspace = cx.workspace.as_deref().map(|w| crate::registry::workspace_of(Some(w), &[]));
        let mount = start(Arc::new(SkillsMount::new(cx.id, config, workspace, cx.changes)))?;
        // The configured workspace is read at start, so the first listing is already warm.
        if let Some(ws) = mount.configured_root.clone() {
            let m = mount.clone();
            let observed = tokio::task::spawn_blocking(move || m.observe(&ws)).await?;
            if let Some(reason) = observed.incomplete {
                tracing::warn!(mount = %mount.id, "skill discovery incomplete: {reason}");
            }
        }
        Ok::<_, ProviderError>(mount as Arc<dyn Running>)
    })
}

/// Starts a mount's watcher (when `watch` is on) and its retries; inside a tokio runtime.
pub fn start(mount: Arc<SkillsMount>) -> Result<Arc<SkillsMount>, MountError> {
    mount.start_watching()?;
    tokio::spawn(retry(Arc::downgrade(&mount), mount.retry.clone(), mount.stop.clone()));
    Ok(mount)
}

impl SkillsMount {
    pub fn new(id: String, config: FsSkills, configured_root: Option<PathBuf>, changes: Changes) -> SkillsMount {
        SkillsMount {
            id,
            config,
            rootless_workspace: crate::registry::workspace_of(configured_root.as_deref(), &[]),
            configured_root,
            chains: crate::registry::Chains::default(),
            digests: Arc::default(),
            revision: AtomicU64::new(0),
            republishes: AtomicU64::new(0),
            files_read: AtomicU64::new(0),
            inner: Mutex::default(),
            watcher: Mutex::default(),
            observing: Mutex::default(),
            incomplete_streak: AtomicU32::new(0),
            retry: Arc::default(),
            changes,
            disposed: AtomicBool::new(false),
            stop: tokio_util::sync::CancellationToken::new(),
        }
    }

    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::SeqCst)
    }

    /// Whether some root cannot be watched: a cached catalog cannot be
    /// trusted to be current, so every listing observes again.
    pub fn polling(&self) -> bool {
        self.inner.lock().expect("skills lock").roots.values().any(|s| s.unwatchable.is_some())
    }

    /// How many times the catalog was republished (settled events, writes through seam, retries).
    pub fn republishes(&self) -> u64 {
        self.republishes.load(Ordering::SeqCst)
    }

    /// Skill files discovery has read since the mount started.
    pub fn files_read(&self) -> u64 {
        self.files_read.load(Ordering::SeqCst)
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

    fn root_revisions(&self, roots: &[Root]) -> Vec<u64> {
        let inner = self.inner.lock().expect("skills lock");
        roots.iter().map(|r| inner.roots.get(&r.path).map_or(0, |s| s.revision)).collect()
    }

    /// Reads what changed since the last observation of the workspace's roots
    /// (blocking; one observation of the mount at a time). An event on one of
    /// these roots while they are read is retried once; a second one, an
    /// unreadable root or a watcher failure makes the observation incomplete,
    /// and an incomplete observation is retried after a backoff.
    pub fn observe(&self, workspace: &Path) -> Observation {
        let _one_at_a_time = self.observing.lock().expect("observe lock");
        let project = discover::project_of(workspace);
        self.keep_project(&project);
        // Trust is judged against the configured root, else against the workspace observed (the
        // client's root or the folder seam was started in): the folder the served tools work in.
        let judged = self.configured_root.as_deref().unwrap_or(workspace);
        let roots = discover::roots(&self.config, &project, Self::home().as_deref());
        let mut attempt = 0;
        let observation = loop {
            let revision = self.revision();
            let before = self.root_revisions(&roots);
            let mut observation = Observation { roots: Vec::new(), refused: Vec::new(), incomplete: None, revision };
            if let Some(e) = self.inner.lock().expect("skills lock").watch_error.take() {
                observation.incomplete = Some(format!("the watcher failed: {e}"));
            }
            for root in &roots {
                let trust = trust::of(root, Some(judged));
                if self.config.read_only_roots
                    && let Some(reason) = trust.refusal()
                {
                    // Watched all the same: a root made safe (`chmod o-w`) is an event.
                    let _ = self.anchor(root);
                    observation.refused.push((root.clone(), reason));
                    continue;
                }
                match self.read_root(root, judged) {
                    Ok(scan) => observation.roots.push((root.clone(), scan)),
                    Err(e) => {
                        observation.incomplete.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            if observation.incomplete.is_some() || self.root_revisions(&roots) == before {
                break observation;
            }
            attempt += 1;
            if attempt > 1 {
                observation.incomplete = Some("the skill roots kept changing while they were read".into());
                break observation;
            }
        };
        if observation.incomplete.is_some() {
            self.incomplete_streak.fetch_add(1, Ordering::SeqCst);
            self.retry.notify_one();
        } else {
            self.incomplete_streak.store(0, Ordering::SeqCst);
        }
        observation
    }

    fn read_root(&self, root: &Root, judged: &Path) -> Result<Arc<Scan>, MountError> {
        let (previous, dirty, unwatchable) = {
            let mut inner = self.inner.lock().expect("skills lock");
            let state = inner.roots.entry(root.path.clone()).or_default();
            if let Some(scan) = state.scan.clone().filter(|_| state.dirty == Dirty::Clean && !state.rewatch && state.unwatchable.is_none())
            {
                return Ok(scan);
            }
            state.project = root.project.clone();
            if state.unwatchable.is_some() {
                state.dirty = Dirty::All;
            }
            // Taken now: an event arriving while the root is read marks it again.
            (state.scan.clone(), std::mem::take(&mut state.dirty), state.unwatchable.is_some())
        };
        // Watched before it is read: a skill folder made while it is read is an event.
        if !unwatchable && let Err(e) = self.anchor(root) {
            tracing::warn!(mount = %self.id, root = %root.path.display(), "{e}; the root is relisted at every listing instead");
            let mut inner = self.inner.lock().expect("skills lock");
            let state = inner.roots.entry(root.path.clone()).or_default();
            state.unwatchable = Some(e.to_string());
            state.dirty = Dirty::All;
            return Err(e);
        }
        let guard = self.config.read_only_roots.then(|| Arc::new(trust::Guard { root: root.clone(), workspace: Some(judged.to_owned()) }));
        let scan = match discover::scan(root, previous.as_deref(), &dirty, guard.as_ref()) {
            Ok(scan) => Arc::new(scan),
            Err(e) => {
                let mut inner = self.inner.lock().expect("skills lock");
                inner.roots.entry(root.path.clone()).or_default().dirty = Dirty::All;
                return Err(e.into());
            }
        };
        self.files_read.fetch_add(scan.files_read as u64, Ordering::SeqCst);
        for invalid in scan.new_invalid(previous.as_deref()) {
            tracing::warn!(mount = %self.id, "skipped a skill file that is not a skill: {invalid}");
        }
        let mut inner = self.inner.lock().expect("skills lock");
        inner.roots.entry(root.path.clone()).or_default().scan = Some(scan.clone());
        Ok(scan)
    }

    /// Watches a root before it is read: the root itself, recursively, when it
    /// is a folder; else its nearest existing ancestor, non-recursively. The
    /// watcher is called without the bookkeeping lock held.
    fn anchor(&self, root: &Root) -> Result<(), MountError> {
        let mut watcher = self.watcher.lock().expect("watcher lock");
        let Some(watcher) = watcher.as_mut() else { return Ok(()) };
        let (target, mode) = if root.path.is_dir() {
            (root.path.clone(), RecursiveMode::Recursive)
        } else {
            match root.path.ancestors().skip(1).find(|a| a.is_dir()) {
                Some(a) => (a.to_owned(), RecursiveMode::NonRecursive),
                None => return Ok(()),
            }
        };
        let (current, call) = {
            let mut inner = self.inner.lock().expect("skills lock");
            let held = inner.held.get(&target).copied();
            let state = inner.roots.entry(root.path.clone()).or_default();
            if state.anchor.as_ref() == Some(&target) && !state.rewatch {
                return Ok(());
            }
            // A path held by nothing, held flatly and now wanted recursively, or whose watch may be gone.
            let call = state.rewatch || held.is_none_or(|(_, m)| m == RecursiveMode::NonRecursive && mode == RecursiveMode::Recursive);
            (state.anchor.clone(), call)
        };
        if call && let Err(source) = watcher.watch(&target, mode) {
            // A recursive watch may have placed part of its watches before failing.
            if current.as_ref() != Some(&target) && !self.inner.lock().expect("skills lock").held.contains_key(&target) {
                let _ = watcher.unwatch(&target);
            }
            return Err(MountError::Watch { path: target, source });
        }
        let unwatch = {
            let mut inner = self.inner.lock().expect("skills lock");
            let mut unwatch = None;
            if current.as_ref() != Some(&target) {
                let entry = inner.held.entry(target.clone()).or_insert((0, mode));
                entry.0 += 1;
                if mode == RecursiveMode::Recursive {
                    entry.1 = mode;
                }
                if let Some(old) = &current {
                    unwatch = inner.release(old);
                }
            }
            let state = inner.roots.entry(root.path.clone()).or_default();
            state.anchor = Some(target);
            state.rewatch = false;
            unwatch
        };
        if let Some(old) = unwatch {
            // It may be gone already, and its watch with it.
            let _ = watcher.unwatch(&old);
        }
        Ok(())
    }

    /// Marks `project` the most recently used; past `max_watched_projects` the
    /// least recently used is dropped: its roots unwatched and forgotten.
    /// Called while observing.
    fn keep_project(&self, project: &Path) {
        let mut unwatch = Vec::new();
        {
            let mut inner = self.inner.lock().expect("skills lock");
            if let Some(at) = inner.projects.iter().position(|p| p == project) {
                let p = inner.projects.remove(at).expect("found");
                inner.projects.push_back(p);
                return;
            }
            inner.projects.push_back(project.to_owned());
            while inner.projects.len() > self.config.max_watched_projects as usize {
                let dropped = inner.projects.pop_front().expect("over the limit");
                let gone: Vec<PathBuf> =
                    inner.roots.iter().filter(|(_, s)| s.project.as_ref() == Some(&dropped)).map(|(p, _)| p.clone()).collect();
                for path in gone {
                    let state = inner.roots.remove(&path).expect("listed");
                    if let Some(anchor) = &state.anchor {
                        unwatch.extend(inner.release(anchor));
                    }
                }
                self.revision.fetch_add(1, Ordering::SeqCst);
                tracing::debug!(mount = %self.id, project = %dropped.display(), "project dropped from the watched set");
            }
        }
        if let Some(w) = self.watcher.lock().expect("watcher lock").as_mut() {
            for path in unwatch {
                let _ = w.unwatch(&path);
            }
        }
    }

    /// The roots watched themselves (they exist), for tests.
    pub fn watched_roots(&self) -> Vec<PathBuf> {
        let inner = self.inner.lock().expect("skills lock");
        let mut out: Vec<PathBuf> = inner
            .roots
            .iter()
            .filter(|(p, s)| s.anchor.as_deref() == Some(p.as_path()) && inner.held.contains_key(p.as_path()))
            .map(|(p, _)| p.clone())
            .collect();
        out.sort();
        out
    }

    /// Every path the watcher watches now, sorted (for tests).
    pub fn watched_paths(&self) -> Vec<PathBuf> {
        let inner = self.inner.lock().expect("skills lock");
        let mut out: Vec<PathBuf> = inner.held.keys().cloned().collect();
        out.sort();
        out
    }

    /// Marks what an event about `path` makes stale, at once (no settling):
    /// the skill folder it is in or is; the whole root for an event on the
    /// root, on a file beside the skill folders, or on an ancestor of the
    /// root (which may have made or removed it). An event on the watched
    /// path itself also has it watched again. Returns whether any root of
    /// the mount was touched.
    pub fn invalidate(&self, path: &Path) -> bool {
        let mut inner = self.inner.lock().expect("skills lock");
        let mut hit = false;
        for (root, state) in inner.roots.iter_mut() {
            if path == root || state.anchor.as_deref() == Some(path) {
                state.rewatch = true;
            }
            if let Ok(rest) = path.strip_prefix(root) {
                let folder = rest.components().next().and_then(|c| c.as_os_str().to_str()).map(str::to_owned);
                state.dirty.add(folder);
            } else if root.starts_with(path) {
                state.dirty = Dirty::All;
            } else {
                continue;
            }
            state.revision += 1;
            hit = true;
        }
        drop(inner);
        if hit {
            self.revision.fetch_add(1, Ordering::SeqCst);
        }
        hit
    }

    /// Forgets everything read and watched (the watcher lost events).
    fn invalidate_all(&self) {
        let mut inner = self.inner.lock().expect("skills lock");
        for state in inner.roots.values_mut() {
            state.dirty = Dirty::All;
            state.rewatch = true;
            state.revision += 1;
        }
        drop(inner);
        self.revision.fetch_add(1, Ordering::SeqCst);
    }

    fn start_watching(self: &Arc<Self>) -> Result<(), MountError> {
        if !self.config.watch {
            return Ok(());
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<notify::Result<notify::Event>>();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Reads (discovery's own among them: an open per skill file) change nothing; only a write's close does.
            let read = event.as_ref().is_ok_and(
                |e| matches!(e.kind, EventKind::Access(a) if a != notify::event::AccessKind::Close(notify::event::AccessMode::Write)),
            );
            if !read {
                let _ = tx.send(event);
            }
        })
        .map_err(|source| MountError::StartWatcher { source })?;
        *self.watcher.lock().expect("watcher lock") = Some(watcher);
        tokio::spawn(coalesce(Arc::downgrade(self), rx, self.stop.clone()));
        Ok(())
    }

    /// What one watcher event means: paths to invalidate, or "everything" for
    /// a watcher error or lost events (the kernel's queue overflowed).
    fn take_event(&self, event: notify::Result<notify::Event>) -> bool {
        match event {
            Ok(e) if e.need_rescan() => {
                tracing::warn!(mount = %self.id, "the skills watcher lost events; every root is read again");
                self.invalidate_all();
                true
            }
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
        // Without a configured root, the roots of the folder seam was started in, as a client without roots sees them.
        let workspace = &self.rootless_workspace;
        let roots: Vec<Json> = self
            .roots_for(workspace)
            .iter()
            .map(|root| {
                let trust = trust::of(root, Some(workspace));
                let (scan, unwatchable) = {
                    let inner = self.inner.lock().expect("skills lock");
                    let state = inner.roots.get(&root.path);
                    (state.and_then(|s| s.scan.clone()), state.and_then(|s| s.unwatchable.clone()))
                };
                let mut j = root_json(root, &trust);
                if let Some(scan) = scan {
                    j["skills"] = json!(scan.skills().count());
                    j["invalid"] = json!(scan.invalid().map(|i| i.to_string()).collect::<Vec<_>>());
                }
                j["refused"] = json!(self.config.read_only_roots && trust.refusal().is_some());
                if let Some(reason) = unwatchable {
                    j["unwatched"] = json!(reason);
                }
                j
            })
            .collect();
        json!({
            "roots": roots,
            "projects": self.projects(),
            "revision": self.revision(),
            "republishes": self.republishes(),
            "files_read": self.files_read(),
            "watching": self.config.watch,
            "incomplete_in_a_row": self.incomplete_streak.load(Ordering::SeqCst),
        })
    }
}

/// While observations are incomplete, republishes after a backoff (doubling
/// from `RETRY_FIRST` to `RETRY_MAX`), so that a transient failure does not
/// leave sessions on the last good catalog until some client lists again.
async fn retry(mount: Weak<SkillsMount>, wake: Arc<tokio::sync::Notify>, stop: tokio_util::sync::CancellationToken) {
    loop {
        tokio::select! {
            _ = wake.notified() => {}
            _ = stop.cancelled() => return,
        }
        let Some(streak) = mount.upgrade().map(|m| m.incomplete_streak.load(Ordering::SeqCst)) else { return };
        let delay = RETRY_FIRST.saturating_mul(1 << streak.saturating_sub(1).min(5)).min(RETRY_MAX);
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.cancelled() => return,
        }
        match mount.upgrade() {
            Some(m) if m.incomplete_streak.load(Ordering::SeqCst) > 0 => m.republish(),
            Some(_) => {}
            None => return,
        }
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
        "replaceable_via": trust.replaceable_via,
        "foreign_owner": trust.foreign_owner.as_ref().map(|(path, uid)| json!({ "path": path, "uid": uid })),
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
        *self.watcher.lock().expect("watcher lock") = None;
        self.inner.lock().expect("skills lock").held.clear();
        Box::pin(async {})
    }
    fn facts(&self) -> Map<String, Json> {
        let mut facts = Map::new();
        facts.insert("projects".into(), json!(self.projects()));
        facts.insert("revision".into(), json!(self.revision()));
        facts
    }
    fn write_watcher(&self) -> Option<&dyn WriteWatcher> {
        Some(self)
    }
}

impl WriteWatcher for SkillsMount {
    /// A write through seam (an MCP filesystem server's `write_file`, say)
    /// invalidates the roots its arguments name and republishes at once:
    /// the client's next listing already shows the skill it wrote.
    fn saw_write(&self, arguments: &Map<String, Json>) {
        let mut hit = false;
        for path in written_paths(arguments, Some(&self.rootless_workspace)) {
            hit |= self.invalidate(&path);
        }
        if hit {
            tracing::debug!(mount = %self.id, "a call through seam wrote into a skill root");
            self.republish();
        }
    }
}

/// The most argument strings `written_paths` looks at, and the longest it takes for a path.
const MAX_WRITTEN_PATHS: usize = 64;
const MAX_PATH_CHARS: usize = 4096;

/// The paths a call's arguments may name: every string value (nested too)
/// that reads as a path, as written and with its existing part's symlinks
/// resolved (a root may be named either way). A relative path is taken
/// against the workspace; a `file://` URI as its path.
pub fn written_paths(arguments: &Map<String, Json>, workspace: Option<&Path>) -> Vec<PathBuf> {
    let mut strings = Vec::new();
    let mut stack: Vec<&Json> = arguments.values().collect();
    while let Some(value) = stack.pop() {
        match value {
            Json::String(s) if strings.len() < MAX_WRITTEN_PATHS => strings.push(s.as_str()),
            Json::Array(items) => stack.extend(items),
            Json::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for s in strings {
        if s.is_empty() || s.len() > MAX_PATH_CHARS || s.contains(['\n', '\0']) {
            continue;
        }
        // A `file:` URI as the path it names (percent-decoded; `localhost` or no host).
        let from_uri;
        let path = if s.starts_with("file:") {
            let Some(p) = url::Url::parse(s).ok().and_then(|u| u.to_file_path().ok()) else { continue };
            from_uri = p;
            from_uri.as_path()
        } else {
            Path::new(s)
        };
        let path = match (path.is_absolute(), workspace) {
            (true, _) => path.to_owned(),
            (false, Some(ws)) => ws.join(path),
            (false, None) => continue,
        };
        let lexical = normalize(&path);
        let resolved = resolve_existing(&lexical);
        out.push(lexical);
        out.extend(resolved);
    }
    out
}

/// `.` and `..` taken away without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path with the symlinks of its longest existing ancestor resolved, when that changes it.
fn resolve_existing(path: &Path) -> Option<PathBuf> {
    let existing = path.ancestors().find(|a| a.exists())?;
    let real = std::fs::canonicalize(existing).ok()?;
    let resolved = real.join(path.strip_prefix(existing).ok()?);
    (resolved != path).then_some(resolved)
}

#[cfg(test)]
mod tests;

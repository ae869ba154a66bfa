//! `seam lock FILE`: the lock of what the composition's servers offer
//! (`seam_engine::lock`), written beside it as `NAME.lock.json`. The composition is
//! started with pins not enforced, each mount's server listed, and the lock written,
//! compared (`--check`, for CI) or updated (`--update`, which approves changes,
//! optionally only a mount's or a tool's).
//!
//! Without `--update`, an existing lock is never overwritten: when the servers offer
//! something else, the differences are printed and the exit code is 1.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use seam_engine::lock::{self, Lock, LockRead, MountLock};

use crate::Exit;

/// What `seam lock` was asked.
pub struct Args {
    pub check: bool,
    pub update: bool,
    /// With `--update`: only these mounts (all when empty).
    pub mounts: Vec<String>,
    /// With `--update`: only these tools, prompts or templates, by the server's name (all when empty).
    pub tools: Vec<String>,
}

pub fn run(file: &Path, args: Args, limit: u64) -> Result<Exit, crate::error::Error> {
    let Some(offered) = offered(file)? else { return Ok(Exit::Invalid) };
    let now = Lock { seam_lock: lock::LOCK_VERSION, composition: lock::composition_name(file), mounts: offered };
    let path = lock::path_for(file);
    let written = match LockRead::of(file, limit) {
        LockRead::Read(_, lock) => Some((*lock).clone()),
        LockRead::Absent(_) => None,
        LockRead::Broken(_, why) if args.update && args.mounts.is_empty() && args.tools.is_empty() => {
            eprintln!("seam: the lock at {} is replaced: {why}", path.display());
            None
        }
        LockRead::Broken(_, why) => {
            eprintln!("seam: the lock at {} cannot be used: {why}; `seam lock {} --update` writes it anew", path.display(), file.display());
            return Ok(Exit::Invalid);
        }
        LockRead::Ignored => unreachable!("a lock read from its file is never ignored"),
    };
    let Some(written) = written else {
        if args.check {
            eprintln!("seam: there is no lock at {}; `seam lock {}` writes it", path.display(), file.display());
            return Ok(Exit::Invalid);
        }
        write(&path, &now)?;
        eprintln!("seam: wrote {} ({})", path.display(), counted(&now));
        return Ok(Exit::Valid);
    };
    let report = differences(&written, &now);
    if report.is_empty() {
        eprintln!("seam: {} holds what the servers offer ({})", path.display(), counted(&now));
        return Ok(Exit::Valid);
    }
    if !args.update {
        super::print(&report);
        let next = if args.check { "" } else { " (`--update` approves them)" };
        eprintln!("seam: the servers offer what {} does not hold{next}", path.display());
        return Ok(Exit::Invalid);
    }
    let updated = update(written, &now, &args.mounts, &args.tools);
    write(&path, &updated)?;
    let left = differences(&updated, &now);
    super::print(&report);
    eprintln!(
        "seam: updated {}{}",
        path.display(),
        if left.is_empty() { String::new() } else { "; what was not selected is left as it was".to_owned() }
    );
    Ok(Exit::Valid)
}

/// Starts the composition with pins not enforced and lists what each mount's server
/// offers; `None` when it did not start (its diagnostics are printed).
fn offered(file: &Path) -> Result<Option<BTreeMap<String, MountLock>>, crate::error::Error> {
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let engine = crate::engine().ignoring_lock();
        let Ok(deployment) =
            super::serve::start(engine, file, std::time::Duration::from_secs(5), super::serve::Reach::Local, Vec::new()).await
        else {
            return Ok(None);
        };
        let mut offered = BTreeMap::new();
        let mut silent = Vec::new();
        if let Some(live) = deployment.live() {
            for (id, slot) in &live.mounts {
                if !matches!(slot.exposure, seam_engine::surface::Exposure::Dynamic { .. }) {
                    continue;
                }
                match slot.running.offered() {
                    Some(lock) => {
                        offered.insert(id.clone(), lock);
                    }
                    None => silent.push(format!("`{id}` ({})", slot.running.status().state.as_str())),
                }
            }
        }
        deployment.shutdown().await;
        if !silent.is_empty() {
            eprintln!("seam: these mounts' servers did not list what they offer, so nothing can be locked: {}", silent.join(", "));
            return Ok(None);
        }
        Ok(Some(offered))
    })
}

/// The lock with what `now` says for the selected mounts and names (all when none is named).
fn update(mut written: Lock, now: &Lock, mounts: &[String], names: &[String]) -> Lock {
    let ids: std::collections::BTreeSet<&String> = written.mounts.keys().chain(now.mounts.keys()).collect();
    let ids: Vec<String> = ids.into_iter().filter(|id| mounts.is_empty() || mounts.contains(id)).cloned().collect();
    for id in ids {
        let Some(current) = now.mounts.get(&id) else {
            if names.is_empty() {
                written.mounts.remove(&id);
            }
            continue;
        };
        if names.is_empty() {
            written.mounts.insert(id, current.clone());
            continue;
        }
        let entry = written.mounts.entry(id).or_default();
        for (was, is) in [
            (&mut entry.tools, &current.tools),
            (&mut entry.prompts, &current.prompts),
            (&mut entry.resource_templates, &current.resource_templates),
        ] {
            for name in names {
                match is.get(name) {
                    Some(locked) => {
                        was.insert(name.clone(), locked.clone());
                    }
                    None => {
                        was.remove(name);
                    }
                }
            }
        }
    }
    written
}

/// The differences between the lock and what is offered now, per mount, as lines.
fn differences(written: &Lock, now: &Lock) -> String {
    let mut out = String::new();
    let empty = MountLock::default();
    let ids: std::collections::BTreeSet<&String> = written.mounts.keys().chain(now.mounts.keys()).collect();
    for id in ids {
        let drift = lock::drift(written.mounts.get(id).unwrap_or(&empty), now.mounts.get(id).unwrap_or(&empty));
        if drift.is_empty() {
            continue;
        }
        let _ = writeln!(out, "mount `{id}`:");
        for name in &drift.added {
            let _ = writeln!(out, "  + {name} (offered, not in the lock)");
        }
        for name in &drift.removed {
            let _ = writeln!(out, "  - {name} (in the lock, no longer offered)");
        }
        for changed in &drift.changed {
            let _ = writeln!(out, "  ~ {}/{} differs from the lock:", changed.kind, changed.name);
            for line in changed.diff.lines() {
                let _ = writeln!(out, "      {line}");
            }
        }
    }
    out
}

/// `3 mounts, 40 definitions`.
fn counted(lock: &Lock) -> String {
    let definitions: usize = lock.mounts.values().map(|m| m.tools.len() + m.prompts.len() + m.resource_templates.len()).sum();
    format!("{} mount{}, {definitions} definition{}", lock.mounts.len(), plural(lock.mounts.len()), plural(definitions))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Writes the lock whole or not at all (a file beside it, renamed over it): a `seam serve`
/// watching it never reads half a lock.
fn write(path: &Path, lock: &Lock) -> Result<(), crate::error::Error> {
    let text = format!("{}\n", serde_json::to_string_pretty(lock).expect("a lock serializes"));
    let partial = path.with_extension("json.partial");
    let error = |source| crate::error::Error::Write { path: path.to_owned(), source };
    std::fs::write(&partial, text).map_err(error)?;
    std::fs::rename(&partial, path).map_err(error)
}

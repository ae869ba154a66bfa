//! Watching a composition and every file it `extends`, turning changes into reloads.
//!
//! The folders holding those files are watched, not the files: an editor's
//! atomic save (write a temp file, rename it over), a delete then recreate, and a
//! Kubernetes ConfigMap update (the `..data` symlink swapped to a new timestamped
//! folder) all replace the file's inode, which a watch on the file itself would
//! lose. An event about one of the files, or about a `..`-prefixed entry beside
//! it (the kubelet's), requests a reload after the debounce; the reload re-reads
//! everything, so a half-written file is rejected and the completed write applied.
//! A file that is a symlink is also watched where it leads, so that a write to
//! its target is seen.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use seam_engine::deploy::Deployment;
use tokio_util::sync::CancellationToken;

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Runs until `stop` fires.
pub async fn run(deployment: Arc<Deployment>, debounce: Duration, stop: CancellationToken) -> Result<(), crate::error::Error> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<DebounceEventResult>();
    let mut debouncer = new_debouncer(debounce, None, move |result| {
        let _ = tx.send(result);
    })
    .map_err(crate::error::Error::Watch)?;
    let mut watched_dirs: BTreeSet<PathBuf> = BTreeSet::new();
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    let mut rewatch = |debouncer: &mut notify_debouncer_full::Debouncer<_, _>, files: &mut BTreeSet<PathBuf>| {
        // Each file as named, and where its symlinks lead: a write to the target
        // (a dotfile linked into place, a ConfigMap's current folder) is an edit too.
        *files = deployment.files().iter().flat_map(|f| [Some(absolute(f)), std::fs::canonicalize(f).ok()]).flatten().collect();
        for dir in files.iter().filter_map(|f| f.parent()) {
            if watched_dirs.insert(dir.to_owned())
                && let Err(e) = debouncer.watch(dir, RecursiveMode::NonRecursive)
            {
                tracing::warn!("cannot watch {}: {e}", dir.display());
                watched_dirs.remove(dir);
            }
        }
    };
    rewatch(&mut debouncer, &mut files);
    tracing::info!(files = ?files, "watching the composition for changes");
    loop {
        let events = tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            e = rx.recv() => match e { Some(e) => e, None => return Ok(()) },
        };
        // Everything already queued is covered by the one reload this batch causes.
        let mut batch = vec![events];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        let relevant = batch.into_iter().any(|events| match events {
            // Reading the files (as every reload does) is an access event: never a reason to reload.
            Ok(events) => events.iter().filter(|e| !e.kind.is_access()).flat_map(|e| e.paths.iter()).any(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                name.starts_with("..") || files.iter().any(|f| f.file_name() == p.file_name())
            }),
            Err(errors) => {
                for e in errors {
                    tracing::warn!("watch error: {e}");
                }
                true
            }
        });
        if relevant {
            let outcome = deployment.reload().await;
            seam_engine::outcome::log_outcome(&outcome);
            rewatch(&mut debouncer, &mut files);
        }
    }
}

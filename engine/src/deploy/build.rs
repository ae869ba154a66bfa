//! Building a reload's mounts beside the live generation: carried over, reconfigured,
//! or built anew under the concurrency bound; a required one that fails rejects it.

use super::*;

impl Deployment {
    /// The next generation's mounts: the live ones the diff keeps, carried over; changed
    /// ones that can take their change while they run, reconfigured (applied at the swap);
    /// the rest built beside the live generation, at most `max_concurrent_starts` at once.
    /// A required mount that does not start rejects the reload (`Err`: each such mount),
    /// and what was built is disposed.
    pub(super) async fn build_mounts(
        &self,
        resolved: &Resolved,
        diff: &Diff,
        live: Option<&Generation>,
    ) -> Result<NextMounts, Vec<StartFailure>> {
        let (subprocess, workspace) = build_services(resolved);
        let mut next = NextMounts::default();
        let mut builds = Vec::new();
        for (id, mount) in &resolved.mounts {
            let r = mount.resolved.as_ref().expect("a planned composition has every mount resolved");
            // A mount with a connection per agent is built again when the agents that see it change.
            let serves_others = |slot: &Slot| slot.running.agents().is_some_and(|had| had != agents_of(resolved, id));
            if let Some(slot) = live.and_then(|g| g.mounts.get(id)).filter(|slot| !serves_others(slot))
                && let Some(kept) = carried_over(id, mount, r, slot, diff, &mut next)
            {
                next.mounts.insert(id.clone(), kept);
                continue;
            }
            builds.push(build_slot(id.clone(), mount.kind, r, self.build_cx(resolved, id, &subprocess, &workspace)));
        }
        let failures = settle(&mut next, self.start_all(builds).await);
        // Keep the composition's own order.
        next.mounts.sort_by_cached_key(|id, _| resolved.mounts.get_index_of(id));
        if failures.is_empty() {
            return Ok(next);
        }
        for id in &next.built {
            next.mounts[id].running.dispose(self.options.dispose_timeout).await;
        }
        Err(failures)
    }

    /// What the build of mount `id` is given.
    fn build_cx(&self, resolved: &Resolved, id: &str, subprocess: &Arc<SubprocessService>, workspace: &Option<PathBuf>) -> BuildCx {
        BuildCx {
            id: id.to_owned(),
            subprocess: subprocess.clone(),
            workspace: workspace.clone(),
            changes: self.changes.clone(),
            status: self.status_changes.clone(),
            events: self.events.clone(),
            live_workspace: self.workspace.subscribe(),
            interest: self.interests.lock().expect("interests lock").entry(id.to_owned()).or_default().clone(),
            agents: agents_of(resolved, id),
        }
    }

    /// The generation `checked` would be, built without starting what would start a
    /// server (`seam test` without `--live`): a mount whose tools a server gives at run
    /// time is its kind's stand-in (`MountKind::stand_in`) offering `fixture(id)`; every
    /// other mount is built as a start builds it, which starts nothing (a provider's
    /// client, a folder's scan). Nothing is stored live, and the mounts built are the
    /// caller's to dispose. `None` for a composition with errors; a fixture that does
    /// not read is an error for its mount id.
    pub async fn rehearse(&self, checked: Checked, fixture: impl Fn(&str) -> Json) -> Result<Option<Generation>, (String, String)> {
        let Some(plan) = checked.plan() else { return Ok(None) };
        let Some(resolved) = checked.resolved else { return Ok(None) };
        let (subprocess, workspace) = build_services(&resolved);
        let mut builds = Vec::new();
        let mut mounts = IndexMap::new();
        for (id, mount) in &resolved.mounts {
            let r = mount.resolved.as_ref().expect("a planned composition has every mount resolved");
            match matches!(r.exposure, Exposure::Dynamic { .. }).then(|| mount.kind.stand_in(&*r.config, id, &fixture(id))).flatten() {
                Some(Ok(running)) => {
                    let slot = Slot {
                        id: id.clone(),
                        kind: mount.kind.name(),
                        registry: mount.kind.registry(),
                        required: r.required,
                        exposure: r.exposure.clone(),
                        running,
                    };
                    mounts.insert(id.clone(), Arc::new(slot));
                }
                Some(Err(why)) => return Err((id.clone(), why)),
                None => builds.push(build_slot(id.clone(), mount.kind, r, self.build_cx(&resolved, id, &subprocess, &workspace))),
            }
        }
        for (slot, _) in self.start_all(builds).await {
            mounts.insert(slot.id.clone(), Arc::new(slot));
        }
        mounts.sort_by_cached_key(|id, _| resolved.mounts.get_index_of(id));
        let digest = plan.digest();
        Ok(Some(Generation::assemble(0, digest, resolved, plan, mounts, None)))
    }

    /// Runs the builds, at most `max_concurrent_starts` at once, telling `on_activated` of each.
    pub(super) async fn start_all(&self, builds: Vec<impl Future<Output = (Slot, Option<String>)>>) -> Vec<(Slot, Option<String>)> {
        let total = builds.len();
        let done = AtomicUsize::new(0);
        let on_activated = self.options.on_activated.clone();
        let starts = tokio::sync::Semaphore::new(self.options.max_concurrent_starts.max(1));
        futures::future::join_all(builds.into_iter().map(|build| async {
            let permit = starts.acquire().await.expect("the semaphore is never closed");
            let (slot, error) = build.await;
            drop(permit);
            if let Some(report) = &on_activated {
                let done = done.fetch_add(1, Ordering::Relaxed) + 1;
                report(Activated { id: &slot.id, state: slot.running.status().state, done, total });
            }
            (slot, error)
        }))
        .await
    }
}

/// The agents whose scope holds mount `id`, in name order (`BuildCx::agents`).
fn agents_of(resolved: &Resolved, id: &str) -> Vec<String> {
    resolved.agents.iter().filter(|(_, a)| a.scope.contains(id)).map(|(name, _)| name.clone()).collect()
}

/// What every build of `resolved`'s mounts shares: the one way to spawn, and the workspace root.
fn build_services(resolved: &Resolved) -> (Arc<SubprocessService>, Option<PathBuf>) {
    let subprocess = Arc::new(SubprocessService::new(
        resolved.services.get("subprocess").and_then(|s| serde_json::from_value(s.clone()).ok()).unwrap_or_default(),
    ));
    (subprocess, resolved.workspace_root().map(PathBuf::from))
}

/// A live mount the next generation keeps: as it is when the diff leaves it, or
/// reconfigured when it changed and can take its change while it runs (its kind and the
/// services it needs unchanged); `None` when it must be built again.
pub(super) fn carried_over(
    id: &str,
    mount: &crate::resolve::Mount,
    r: &crate::surface::ResolvedMount,
    slot: &Arc<Slot>,
    diff: &Diff,
    next: &mut NextMounts,
) -> Option<Arc<Slot>> {
    let node = format!("mount:{id}");
    if !diff.add.contains(&node) && !diff.restart.contains(&node) {
        return Some(slot.clone());
    }
    let services_changed = r.needs.iter().any(|s| {
        let node = format!("service:{s}");
        diff.change.contains(&node) || diff.add.contains(&node)
    });
    if !diff.change.contains(&node) || slot.kind != mount.kind.name() || services_changed {
        return None;
    }
    let apply = slot.running.reconfigure(&*r.config)?;
    next.live_changes.push(apply);
    next.reconfigured.push(id.to_owned());
    let reconfigured = Slot {
        id: id.to_owned(),
        kind: slot.kind,
        registry: slot.registry,
        required: r.required,
        exposure: r.exposure.clone(),
        running: slot.running.clone(),
    };
    Some(Arc::new(reconfigured))
}

/// Builds mount `id` of `kind`: its slot, and why the build failed (the slot is then inert).
pub(super) fn build_slot(
    id: String,
    kind: &'static dyn crate::surface::MountKind,
    r: &crate::surface::ResolvedMount,
    cx: BuildCx,
) -> impl Future<Output = (Slot, Option<String>)> + use<> {
    let (config, exposure, required) = (r.config.clone(), r.exposure.clone(), r.required);
    // A span of seam's own work, for a front end that exports spans (traces).
    let span = tracing::info_span!("seam.mount.start", seam.mount = %id, seam.kind = kind.name());
    let started = async move {
        let (running, error): (Arc<dyn Running>, _) = match kind.build(&*config, cx) {
            Some(build) => match build.await {
                Ok(running) => (running, None),
                Err(e) => {
                    let why = e.to_string();
                    (Arc::new(Inert::failed(why.clone())), Some(why))
                }
            },
            None => (Arc::new(Inert::no_runtime(kind.name())), None),
        };
        (Slot { id, kind: kind.name(), registry: kind.registry(), required, exposure, running }, error)
    };
    tracing::Instrument::instrument(started, span)
}

/// Takes the built mounts into `next`: each required one that failed or is not ready is
/// a failure of the reload; one not required activates as failed, logged.
pub(super) fn settle(next: &mut NextMounts, built: Vec<(Slot, Option<String>)>) -> Vec<StartFailure> {
    let mut failures = Vec::new();
    for (slot, error) in built {
        let problem = error.or_else(|| {
            (slot.required && !slot.running.is_ready())
                .then(|| slot.running.status().detail.unwrap_or_else(|| "it is not ready".to_owned()))
        });
        match problem {
            Some(problem) if slot.required => failures.push(StartFailure { id: slot.id.clone(), problem }),
            Some(problem) => tracing::warn!(mount = %slot.id, "mount activates as failed: {problem}"),
            None => {}
        }
        next.built.push(slot.id.clone());
        next.mounts.insert(slot.id.clone(), Arc::new(slot));
    }
    failures
}

//! `/status` of a deployment: what it serves now and how its last reload went, as
//! `crate::status` types.

use super::*;

impl Deployment {
    /// `/status`.
    pub fn status(&self) -> crate::status::DeploymentStatus {
        let live = self.live();
        let mut mounts = IndexMap::new();
        if let Some(g) = &live {
            for (id, slot) in &g.mounts {
                let status = slot.running.status();
                let offers = slot.running.offers();
                let offers = (!offers.prompts.is_empty() || !offers.resources.is_empty() || !offers.templates.is_empty()).then(|| {
                    crate::status::OfferCounts {
                        prompts: offers.prompts.len(),
                        resources: offers.resources.len(),
                        templates: offers.templates.len(),
                    }
                });
                let mut facts = slot.running.facts();
                let own = facts.remove("warnings").and_then(|w| serde_json::from_value::<Vec<String>>(w).ok());
                let mount = crate::status::MountStatus {
                    kind: slot.kind,
                    state: status.state,
                    since: timestamp(status.since),
                    code: status.code,
                    detail: status.detail,
                    tools: slot.running.tools().len(),
                    required: slot.required,
                    offers,
                    facts,
                    warnings: own.unwrap_or_default(),
                };
                mounts.insert(id.clone(), mount);
            }
            // A tool name two things serve to an agent is served by neither: each mount is told so.
            for (id, warnings) in g.collisions() {
                mounts[&id].warnings.extend(warnings);
            }
            // A URI or template two mounts list is read from the first, in mount order: the others are told so.
            let all = Routes { mounts: g.mounts.iter().map(|(id, slot)| (id.as_str(), slot.running.offers())).collect() };
            for (id, key, first) in all.shadowed() {
                mounts[&id].warnings.push(format!("`{key}` is also listed by mount `{first}`, which comes first: reads of it go there"));
            }
        }
        let mut services = Map::new();
        if let Some(g) = &live {
            for surface in &g.resolved.surfaces {
                let mounts = g
                    .mounts
                    .values()
                    .filter(|slot| surface.kinds().iter().any(|k| k.name() == slot.kind))
                    .map(|slot| provider(&g.resolved, slot))
                    .collect();
                let cx = StatusCx { section: g.resolved.services.get(surface.service()), mounts };
                if let Some(view) = surface.status(&cx) {
                    services.insert(surface.service().to_owned(), view);
                }
            }
        }
        let mut quotas = BTreeMap::new();
        if let Some(g) = &live {
            let now = tokio::time::Instant::now();
            for (agent, rules) in g.resolved.agents.iter().map(|(name, a)| (name, &a.quota)).filter(|(_, q)| !q.is_empty()) {
                if let Some(state) = g.callers.get(agent) {
                    quotas.insert(agent.clone(), state.quotas.usage(rules, now));
                }
            }
        }
        let catalogs = live
            .as_ref()
            .map(|g| g.resolved.agents.keys().filter_map(|agent| Some((agent.clone(), g.catalog_cost(agent)?))).collect())
            .unwrap_or_default();
        crate::status::DeploymentStatus {
            audit: self.audit().map(|trail| trail.status()),
            quotas,
            catalogs,
            generation: live.as_ref().map(|g| g.number),
            digest: live.as_ref().map(|g| g.digest.clone()),
            loaded_at: live.as_ref().map(|g| timestamp(g.loaded_at)),
            calls_in_flight: live.as_ref().map(|g| g.calls_in_flight()),
            last_reload: self.last_outcome(),
            reloading_since: self.reloading_since.lock().expect("reloading lock").map(timestamp),
            mounts,
            services,
        }
    }
}

/// What a person asked about a call (`approve`) answered: yes, no, nothing in time, or
/// nothing at all (the client could not be asked).
pub const APPROVAL_ANSWERS: [&str; 4] = ["yes", "no", "timeout", "unavailable"];

impl Deployment {
    /// How many calls a person was asked about since the start, by answer.
    pub fn approval_counts(&self) -> [(&'static str, u64); 4] {
        std::array::from_fn(|i| (APPROVAL_ANSWERS[i], self.approvals[i].load(Ordering::Relaxed)))
    }

    /// Counts an answer of `APPROVAL_ANSWERS`.
    pub(crate) fn approval_answered(&self, answer: &str) {
        let at = APPROVAL_ANSWERS.iter().position(|a| *a == answer).expect("every answer is listed");
        self.approvals[at].fetch_add(1, Ordering::Relaxed);
    }

    /// How many requests reached the call stage, by what became of them, since the start.
    pub fn decision_counts(&self) -> [(crate::audit::Decision, u64); 8] {
        std::array::from_fn(|i| (crate::audit::Decision::ALL[i], self.decisions[i].load(Ordering::Relaxed)))
    }

    /// Counts a request's decision (`relay`).
    pub(crate) fn decided(&self, decision: crate::audit::Decision) {
        let at = crate::audit::Decision::ALL.iter().position(|d| *d == decision).expect("every decision is listed");
        self.decisions[at].fetch_add(1, Ordering::Relaxed);
    }

    /// How many reloads (the start included) ended each way since the start.
    pub fn reload_counts(&self) -> [(OutcomeKind, u64); 3] {
        std::array::from_fn(|i| (OutcomeKind::ALL[i], self.reloads[i].load(Ordering::Relaxed)))
    }
}

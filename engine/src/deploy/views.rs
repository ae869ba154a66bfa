//! What a generation shows each agent: its catalog, the view a session lists, its
//! prompts, resources and skills, and where a prompt or a URI is served.

use super::*;
use crate::disclosure::Deferral;

/// What one session of an agent is shown: its tools, prompts and resources.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct View {
    /// Sorted by name.
    pub tools: Vec<ToolSpec>,
    /// The live tools' prompts (skills), sorted by name.
    pub prompts: Arc<Vec<PromptSpec>>,
    /// The visible mounts' prompts, resources and templates (`Routes::listed`).
    pub offered: OfferedView,
}

impl View {
    /// What its tool list costs a model in every request, estimated (`crate::tokens`): the
    /// `tools` of a `tools/list` result as the client is sent them.
    pub fn catalog_tokens(&self) -> usize {
        catalog_tokens(self.tools.iter().map(|t| &*t.definition))
    }
}

/// What an agent's `disclosure` makes of its catalog, for one state of its mounts' tools.
pub struct Disclosed {
    /// The definitions of the catalog it was made from (held, so none is another's address).
    made_from: Vec<Arc<Map<String, Json>>>,
    /// Whether `auto` defers its tools: the catalog is past its size.
    auto_searches: bool,
    /// The deferred tools, for `tool_search` (empty when none is).
    pub index: crate::disclosure::Index,
    /// `tool_search`'s and `tool_call`'s definitions, when any tool is deferred.
    tools: Option<[Arc<Map<String, Json>>; 2]>,
    /// The most definitions one search returns.
    pub max_results: u32,
    /// What the catalog costs, counted once it is asked.
    cost: std::sync::OnceLock<crate::status::CatalogCost>,
}

/// The estimated tokens of these definitions listed: a `tools/list` result's `tools`.
fn catalog_tokens<'d>(definitions: impl Iterator<Item = &'d Map<String, Json>>) -> usize {
    let listed: Vec<&Map<String, Json>> = definitions.collect();
    crate::tokens::estimate(&serde_json::json!({ "tools": listed }).to_string())
}

/// The visible mounts' prompts, resources and resource templates, each sorted by key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OfferedView {
    pub prompts: Vec<Offered>,
    pub resources: Vec<Offered>,
    pub templates: Vec<Offered>,
}

impl Generation {
    /// `serve`'s limits for this generation.
    pub fn serve(&self) -> &crate::model::ServeLimits {
        &self.serve
    }

    /// The agent's tools, sorted by name; `None` for an agent the composition
    /// does not have. A live tool is shown with its definition for the
    /// generation (`view` gives the one it lists now).
    pub fn catalog(&self, agent: &str) -> Option<Vec<CatalogEntry>> {
        Some(self.catalog_and_collisions(agent)?.0)
    }

    /// The agent's tools, and the names two of the things it sees would serve
    /// (a mount of raw names beside another, or beside a fixed tool): those
    /// are served by neither, so that no call goes where its client did not mean.
    pub(super) fn catalog_and_collisions(&self, agent: &str) -> Option<(Vec<CatalogEntry>, Vec<CatalogEntry>)> {
        self.catalog_disclosed(agent).map(|(catalog, collisions, _)| (catalog, collisions))
    }

    /// The agent's catalog, the names left out for their collisions, and what its
    /// `disclosure` makes of the catalog when any of its tools may be deferred. With
    /// tools deferred, the catalog has seam's `tool_search` and `tool_call` too.
    pub(super) fn catalog_disclosed(&self, agent: &str) -> Option<(Vec<CatalogEntry>, Vec<CatalogEntry>, Arc<Disclosed>)> {
        let a = self.resolved.agents.get(agent)?;
        let mut out: Vec<CatalogEntry> = self.fixed[agent].iter().map(|f| f.entry.clone()).collect();
        let mut raw = false;
        for (id, slot) in &self.mounts {
            let Some(prefix) = self.visible_prefix(agent, id, slot) else { continue };
            raw |= matches!(slot.exposure, Exposure::Dynamic { raw: true, .. });
            out.extend(slot.running.tools_for(agent).iter().filter_map(|spec| self.entry(a, id, prefix, &slot.exposure, spec)));
        }
        out.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        let mut collisions = Vec::new();
        // Prefixed names cannot collide: namespaces are unique, and no fixed tool has the prefix.
        if raw {
            let twice: BTreeSet<String> =
                out.windows(2).filter(|w| w[0].spec.name == w[1].spec.name).map(|w| w[0].spec.name.clone()).collect();
            let (left_out, kept): (Vec<CatalogEntry>, Vec<CatalogEntry>) = out.into_iter().partition(|e| twice.contains(&e.spec.name));
            out = kept;
            collisions = left_out;
        }
        let disclosed = self.disclosed(agent, a, &out);
        {
            for entry in &mut out {
                if entry.deferral == Deferral::Auto {
                    entry.deferral = if disclosed.auto_searches { Deferral::Search } else { Deferral::Never };
                }
            }
            for definition in disclosed.tools.iter().flatten() {
                let name = definition["name"].as_str().expect("seam's tools are named").to_owned();
                let spec = ToolSpec { name, definition: definition.clone(), ruled_as: None };
                let entry = CatalogEntry {
                    spec,
                    source: Source::Seam,
                    timeout: None,
                    max_output_chars: None,
                    approve: false,
                    deferral: Deferral::Never,
                };
                let at = out.partition_point(|e| e.spec.name < entry.spec.name);
                out.insert(at, entry);
            }
            // seam's two names are its own while tools are deferred: a raw-named mount's
            // tool of either name is left out, and `/status` says so (`collisions`).
            if disclosed.tools.is_some() {
                let (taken, kept): (Vec<CatalogEntry>, Vec<CatalogEntry>) =
                    out.into_iter().partition(|e| e.source != Source::Seam && crate::disclosure::is_seam_tool(&e.spec.name));
                out = kept;
                collisions.extend(taken);
            }
        }
        Some((out, collisions, disclosed))
    }

    /// What the agent's tool list costs a model, as listed and listed whole (counted
    /// once per state of its catalog); `None` for an agent the composition does not have.
    pub fn catalog_cost(&self, agent: &str) -> Option<crate::status::CatalogCost> {
        let (catalog, _, disclosed) = self.catalog_disclosed(agent)?;
        Some(*disclosed.cost.get_or_init(|| {
            let listed = catalog.iter().filter(|e| e.deferral == Deferral::Never);
            let whole = catalog.iter().filter(|e| e.source != Source::Seam);
            crate::status::CatalogCost {
                tools: listed.clone().count(),
                tokens: catalog_tokens(listed.map(|e| &*e.spec.definition)),
                deferred: catalog.iter().filter(|e| e.deferral != Deferral::Never).count(),
                tools_all: whole.clone().count(),
                tokens_all: catalog_tokens(whole.map(|e| &*e.spec.definition)),
            }
        }))
    }

    /// What agent `a`'s `disclosure` makes of its catalog `base` (sorted, collisions
    /// left out, `auto` undecided): kept while the catalog's definitions are the same
    /// ones, so that a search does not build its index again.
    fn disclosed(&self, agent: &str, a: &crate::resolve::Agent, base: &[CatalogEntry]) -> Arc<Disclosed> {
        let kept = |kept: &BTreeMap<String, Arc<Disclosed>>| {
            kept.get(agent)
                .filter(|d| {
                    d.made_from.len() == base.len() && d.made_from.iter().zip(base).all(|(made, e)| Arc::ptr_eq(made, &e.spec.definition))
                })
                .cloned()
        };
        // Nothing is built under the lock: a catalog's count and index are made beside it.
        if let Some(d) = kept(&self.disclosed.lock().unwrap_or_else(std::sync::PoisonError::into_inner)) {
            return d;
        }
        let rules = &a.disclosure;
        let auto_searches = base.iter().any(|e| e.deferral == Deferral::Auto) && {
            let tokens = if rules.auto_counts_tokens() { catalog_tokens(base.iter().map(|e| &*e.spec.definition)) } else { 0 };
            rules.auto_searches(base.len(), tokens)
        };
        let deferred: Vec<&CatalogEntry> =
            base.iter().filter(|e| e.deferral == Deferral::Search || (e.deferral == Deferral::Auto && auto_searches)).collect();
        let servers: BTreeSet<&str> = deferred
            .iter()
            .filter_map(|e| match &e.source {
                Source::Mount(id) => Some(id.as_str()),
                _ => None,
            })
            .collect();
        let found = deferred
            .iter()
            .map(|e| {
                let server = match &e.source {
                    Source::Mount(id) => id.as_str(),
                    _ => "",
                };
                (crate::disclosure::Found { name: e.spec.name.clone(), definition: e.spec.definition.clone() }, server)
            })
            .collect();
        let servers: Vec<&str> = servers.into_iter().collect();
        let tools = (!deferred.is_empty()).then(|| crate::disclosure::tools(&servers, rules.max_results).map(Arc::new));
        let disclosed = Arc::new(Disclosed {
            made_from: base.iter().map(|e| e.spec.definition.clone()).collect(),
            auto_searches,
            index: crate::disclosure::Index::new(found),
            tools,
            max_results: rules.max_results,
            cost: std::sync::OnceLock::new(),
        });
        self.disclosed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(agent.to_owned(), disclosed.clone());
        disclosed
    }

    /// Whether any of the agent's tools may be deferred: its `disclosure`, or that of a
    /// mount it sees, is not `all`. Without, seam's two tools are never its.
    pub(super) fn may_defer(&self, agent: &str) -> bool {
        let Some(a) = self.resolved.agents.get(agent) else { return false };
        a.disclosure.mode != crate::model::DisclosureMode::All
            || self.mounts.keys().any(|id| {
                self.sees(agent, id)
                    && self.resolved.mounts[id.as_str()]
                        .resolved
                        .as_ref()
                        .and_then(|r| r.disclosure)
                        .is_some_and(|m| m != crate::model::DisclosureMode::All)
            })
    }

    /// Per mount, the names of its tools left out for an agent because another thing that agent sees serves the same name.
    pub fn collisions(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for agent in self.resolved.agents.keys() {
            let Some((_, collisions)) = self.catalog_and_collisions(agent) else { continue };
            for entry in &collisions {
                let Source::Mount(id) = &entry.source else { continue };
                let others: Vec<String> = collisions
                    .iter()
                    .filter(|other| other.spec.name == entry.spec.name && other.source != entry.source)
                    .map(|other| match &other.source {
                        Source::Mount(other) => format!("mount `{other}`"),
                        Source::Service(_) | Source::Seam => "a fixed tool".to_owned(),
                    })
                    .collect();
                if others.is_empty() {
                    out.entry(id.clone()).or_default().push(format!(
                        "tool `{}` is seam's own while agent `{agent}`'s tools are deferred (`disclosure`): the mount's is not served to it",
                        entry.spec.name
                    ));
                    continue;
                }
                out.entry(id.clone()).or_default().push(format!(
                    "tool `{}` is also served by {} to agent `{agent}`: neither is served to it",
                    entry.spec.name,
                    others.join(" and ")
                ));
            }
        }
        out
    }

    /// Whether what the agent is shown depends on the session's roots (it has a live tool).
    pub fn lists_by_roots(&self, agent: &str) -> bool {
        self.fixed.get(agent).is_some_and(|f| f.iter().any(|f| f.tool.is_live()))
    }

    /// What a session of the agent is shown now, given its roots: the catalog
    /// with live tools' definitions as they list now, and their prompts.
    pub async fn view(&self, agent: &str, roots: &[PathBuf]) -> Option<View> {
        let catalog = self.catalog(agent)?;
        let mut view = View::default();
        let mut prompts: Vec<Arc<Vec<PromptSpec>>> = Vec::new();
        for entry in catalog {
            if entry.deferral != Deferral::Never {
                continue;
            }
            let live = match entry.source {
                Source::Service(_) => self.fixed[agent].iter().find(|f| f.tool.is_live() && f.entry.spec.name == entry.spec.name),
                Source::Mount(_) | Source::Seam => None,
            };
            let Some(f) = live else {
                view.tools.push(entry.spec);
                continue;
            };
            let listed = f.tool.list(&f.settings, f.listing(roots)).await;
            view.tools.push(ToolSpec { name: entry.spec.name, definition: listed.definition, ruled_as: None });
            if !listed.prompts.is_empty() {
                prompts.push(listed.prompts);
            }
        }
        if let Some(routes) = self.routes(agent) {
            view.offered = OfferedView {
                prompts: routes.prompts(),
                resources: routes.listed(|o| &o.resources),
                templates: routes.listed(|o| &o.templates),
            };
        }
        // One tool's prompts are shared as they are; several are merged in name order.
        view.prompts = match prompts.len() {
            0 => Arc::default(),
            1 => prompts.pop().expect("one"),
            _ => {
                let mut all: Vec<PromptSpec> = prompts.iter().flat_map(|p| p.iter().cloned()).collect();
                all.sort_by(|a, b| a.name.cmp(&b.name));
                Arc::new(all)
            }
        };
        Some(view)
    }

    /// Which provider fixed tool `tool` would use for a call of agent `agent` now
    /// (`FixedTool::selects`); `None` when the agent is not served the tool, or the tool
    /// picks no provider.
    pub fn selection(&self, agent: &str, tool: &str) -> Option<Result<String, crate::surface::Unselected>> {
        let f = self.fixed.get(agent)?.iter().find(|f| f.entry.spec.name == tool)?;
        f.tool.selects(&f.providers, f.section.as_ref())
    }

    /// Whether the agent is served skills over MCP's skills extension (one of its fixed
    /// tools serves them).
    pub fn serves_skills(&self, agent: &str) -> bool {
        self.fixed.get(agent).is_some_and(|f| f.iter().any(|f| f.tool.skill_server().is_some()))
    }

    /// Whether `uri` is in the namespace of the skills the agent is served
    /// (`SkillServer::names_skill`).
    pub fn names_skill(&self, agent: &str, uri: &str) -> bool {
        self.fixed.get(agent).is_some_and(|f| f.iter().any(|f| f.tool.skill_server().is_some_and(|s| s.names_skill(uri))))
    }

    /// `skills/list` for a session of the agent with these roots: every entry its tools
    /// serve (only the one at URI `only`, when given: `skills/get`).
    pub async fn skills(&self, agent: &str, roots: &[PathBuf], only: Option<&str>) -> Vec<Json> {
        let mut all = Vec::new();
        for f in self.fixed.get(agent).into_iter().flatten() {
            if let Some(server) = f.tool.skill_server() {
                all.extend(server.skills(&f.settings, f.listing(roots), only.map(str::to_owned)).await);
            }
        }
        all
    }

    /// `resources/read` of a served skill's file (with `directory`,
    /// `resources/directory/read` of a folder), by the first of the agent's tools whose
    /// skill it is; `None` when it is none's.
    pub async fn read_skill(
        &self,
        agent: &str,
        roots: &[PathBuf],
        uri: &str,
        directory: bool,
        hold: &crate::reads::ReadHold,
    ) -> crate::surface::SkillRead {
        for f in self.fixed.get(agent).into_iter().flatten() {
            let Some(server) = f.tool.skill_server() else { continue };
            if let Some(read) = server.read_skill(&f.settings, f.listing(roots), uri.to_owned(), directory, hold.clone()).await {
                return Some(read);
            }
        }
        None
    }

    /// `prompts/get`: the first of the agent's live tools that lists the prompt gives it.
    pub async fn get_prompt(&self, agent: &str, name: &str, arguments: Map<String, Json>, roots: &[PathBuf]) -> Result<Json, PromptError> {
        let Some(fixed) = self.fixed.get(agent) else {
            return Err(PromptError::new(crate::codes::AGENT_UNKNOWN, format!("the composition has no agent `{agent}`")));
        };
        for f in fixed.iter().filter(|f| f.tool.is_live()) {
            let call = PromptCall {
                name: name.to_owned(),
                arguments: arguments.clone(),
                providers: f.providers.clone(),
                section: f.section.clone(),
                roots: roots.to_vec(),
            };
            match f.tool.get_prompt(&f.settings, call).await {
                Err(e) if e.code == crate::codes::PROMPT_UNKNOWN => continue,
                answer => return answer,
            }
        }
        Err(PromptError::unknown(name))
    }

    /// The mounts agent `agent` sees, in mount order, with what each offers; `None` for an unknown agent.
    pub fn routes(&self, agent: &str) -> Option<Routes<'_>> {
        let a = self.resolved.agents.get(agent)?;
        let mounts = self
            .mounts
            .iter()
            .filter(|(id, slot)| self.visible_prefix(agent, id, slot).is_some())
            .map(|(id, slot)| (id.as_str(), self.offers_for(agent, a, id, slot)))
            .collect();
        Some(Routes { mounts })
    }

    /// What mount `id` offers agent `a`: its prompts and resources as the agent's rules leave them.
    pub(super) fn offers_for(&self, agent: &str, a: &crate::resolve::Agent, id: &str, slot: &Slot) -> Arc<crate::offers::Offers> {
        let offers = slot.running.offers_for(agent);
        if a.offers.is_empty() {
            return offers;
        }
        let mut shown = (*offers).clone();
        // Rules name prompts `<prefix><prompt>` however clients see them.
        shown.prompts.retain(|p| match &slot.exposure {
            Exposure::Dynamic { prefix, raw: true } => a.offers.shows_prompt(&format!("{prefix}{}", p.key)),
            _ => a.offers.shows_prompt(&p.key),
        });
        if !a.offers.shows_resources(id) {
            shown.resources.clear();
            shown.templates.clear();
            shown.views.clear();
        }
        Arc::new(shown)
    }

    /// The agent's instructions (`offers::instructions`): first, under `seam's tools`, a
    /// line for each of seam's own tools it is served; then each visible mount's.
    pub fn instructions(&self, agent: &str) -> Option<String> {
        let routes = self.routes(agent)?;
        // Not a fixed tool the agent is not served for its name's collision with a raw-named mount's.
        let colliding: Vec<String> =
            self.catalog_and_collisions(agent).map(|(_, c)| c.into_iter().map(|e| e.spec.name).collect()).unwrap_or_default();
        let own: Vec<&str> = self
            .fixed
            .get(agent)
            .into_iter()
            .flatten()
            .filter(|entry| !colliding.contains(&entry.entry.spec.name))
            .filter_map(|entry| entry.tool.guidance())
            .collect();
        let own = own.join("\n");
        let mounts = routes.mounts.iter().filter_map(|(id, offers)| Some((*id, offers.instructions.as_deref()?)));
        // A heading no mount id can take.
        crate::offers::instructions(std::iter::once(("seam's tools", own.as_str())).chain(mounts))
    }

    /// The mount that serves prompt `name` for agent `agent`, if a visible mount lists it.
    pub(super) fn prompt_mount(&self, agent: &str, name: &str) -> Option<&Arc<Slot>> {
        let a = self.resolved.agents.get(agent)?;
        let lists =
            |id: &str, slot: &Slot| self.offers_for(agent, a, id, slot).prompts.binary_search_by(|p| p.key.as_str().cmp(name)).is_ok();
        let mut serving = self.mounts.iter().filter(|(id, slot)| {
            let named = match &slot.exposure {
                Exposure::Dynamic { raw: true, .. } => true,
                _ => self.visible_prefix(agent, id, slot).is_some_and(|p| name.starts_with(p)),
            };
            named && self.visible_prefix(agent, id, slot).is_some() && lists(id, slot)
        });
        // A name two mounts serve is served by neither (`Routes::prompts`).
        match (serving.next(), serving.next()) {
            (Some((_, slot)), None) => Some(slot),
            _ => None,
        }
    }

    /// Whether agent `agent` sees mount `id`'s tools, prompts and resources.
    pub fn sees(&self, agent: &str, id: &str) -> bool {
        self.mounts.get(id).is_some_and(|slot| self.visible_prefix(agent, id, slot).is_some())
    }

    /// The mounts agent `agent` sees, in mount order.
    pub fn seen_mounts(&self, agent: &str) -> Vec<Arc<dyn Running>> {
        self.mounts.iter().filter(|(id, slot)| self.visible_prefix(agent, id, slot).is_some()).map(|(_, s)| s.running.clone()).collect()
    }

    /// The id of the mount that serves `uri` for `caller` (`Routes::resource`).
    pub fn resource_mount(&self, caller: &crate::chain::Caller, uri: &str) -> Option<String> {
        self.routes(&caller.agent)?.resource(uri, &caller.state.links).map(str::to_owned)
    }

    /// Whether `name` is a prompt of a mount the agent sees (not a live tool's).
    pub fn is_mount_prompt(&self, agent: &str, name: &str) -> bool {
        self.prompt_mount(agent, name).is_some()
    }

    /// The name prefix of a mount whose discovered tools the agent can see.
    pub(super) fn visible_prefix<'s>(&self, agent: &str, id: &str, slot: &'s Slot) -> Option<&'s str> {
        let Exposure::Dynamic { prefix, .. } = &slot.exposure else { return None };
        self.resolved.is_visible(agent, id).then_some(prefix.as_str())
    }

    pub(super) fn entry(
        &self,
        agent: &crate::resolve::Agent,
        id: &str,
        prefix: &str,
        exposure: &Exposure,
        spec: &ToolSpec,
    ) -> Option<CatalogEntry> {
        // Rules name a mount's tools `<prefix><tool>` however clients see them, and by the
        // server's own tool when a rewrite shows it under another name.
        let ruled = spec.ruled_as.as_deref().unwrap_or(&spec.name);
        let tool = match exposure {
            Exposure::Dynamic { raw: true, .. } => ruled,
            _ => ruled.strip_prefix(prefix)?,
        };
        let settings = agent.tools.dynamic_settings(id, tool, &self.resolved.budgets)?;
        // `always` names a tool as the agent's rules do: `<prefix><tool>`.
        let rule_name = match exposure {
            Exposure::Dynamic { raw: true, .. } => format!("{prefix}{ruled}"),
            _ => ruled.to_owned(),
        };
        let mount_mode = self.resolved.mounts.get(id).and_then(|m| m.resolved.as_ref()).and_then(|r| r.disclosure);
        Some(CatalogEntry {
            spec: spec.clone(),
            source: Source::Mount(id.to_owned()),
            timeout: settings.timeout,
            max_output_chars: settings.max_output_chars,
            approve: settings.approve.is_some_and(|approve| approve.asks_for(spec)),
            deferral: agent.disclosure.deferral(mount_mode, &rule_name),
        })
    }

    pub fn calls_in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Whether every required mount answers now.
    pub fn ready(&self) -> bool {
        self.mounts.values().all(|s| !s.required || s.running.is_ready())
    }
}

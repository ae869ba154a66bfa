//! The resolved phase: references checked, agents' tool tables computed, every
//! mount resolved by its kind. Built from a schema-checked document; collects
//! every semantic diagnostic instead of stopping at the first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet};
use globset::{Glob, GlobMatcher};
use indexmap::{IndexMap, IndexSet};
use serde::Deserialize;
use serde_json::{Map, Value as Json};

use crate::diagnostic::{Diagnostic, Sources, pointer};
use crate::model::{Budgets, Serve, Subprocess, Workspace};
use crate::schema::did_you_mean;
use crate::surface::{Exposure, MountCx, MountKind, ResolvedMount, Surface, SurfaceCx, locate, resolve_path};
use crate::tool_rules::{DynamicRule, ToolTable, dynamic_rule};
use crate::yaml::{Mapping, Node, Value};

/// The root agent; every other agent descends from it.
pub const DEFAULT_AGENT: &str = "default";

pub struct Resolved {
    pub name: Option<String>,
    pub budgets: Budgets,
    /// Engine services and surface service sections, as resolved config.
    pub services: BTreeMap<String, Json>,
    pub mounts: IndexMap<String, Mount>,
    pub agents: BTreeMap<String, Agent>,
    pub surfaces: Vec<&'static dyn Surface>,
    /// Mounts whose `kind` is not compiled in: id → kind as written.
    pub unknown: BTreeMap<String, String>,
}

pub struct Mount {
    pub kind: &'static dyn MountKind,
    pub surface: &'static dyn Surface,
    /// `None` when the mount's config has errors.
    pub resolved: Option<ResolvedMount>,
}

impl Mount {
    /// Whether the mount provides to registry `registry`: its kind's, or one it contributes to.
    pub fn provides(&self, registry: &str) -> bool {
        self.kind.registry() == registry || self.resolved.as_ref().is_some_and(|r| r.contributes.contains(&registry))
    }
}

pub struct Agent {
    pub parent: Option<String>,
    /// Rules over MCP mounts' prompts and resources, root agent first.
    pub offers: OfferRules,
    /// Mounts this agent can see, in file order.
    pub scope: Scope,
    /// The scope layer of each scoped mount it sees: the depth, counted from
    /// the root agent as 1, of the nearest agent on its chain that lists the
    /// mount. The composition's global mounts are layer 0.
    pub layers: BTreeMap<String, u32>,
    pub tools: ToolTable,
}

/// The mounts one agent can see: a mask over the composition's mount ids,
/// which every agent shares, so an agent costs a bit per mount instead of a
/// copy of every id.
#[derive(Clone, Debug)]
pub struct Scope {
    ids: Arc<IndexSet<String, foldhash::fast::RandomState>>,
    visible: Vec<bool>,
}

impl Scope {
    pub fn contains(&self, id: &str) -> bool {
        self.ids.get_index_of(id).is_some_and(|i| self.visible[i])
    }

    /// The visible mount ids, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.ids.iter().zip(&self.visible).filter(|(_, v)| **v).map(|(id, _)| id)
    }
}

impl Agent {
    /// The scope layer mount `id` is in for this agent (0: global); a nearer layer is larger.
    pub fn layer(&self, id: &str) -> u32 {
        self.layers.get(id).copied().unwrap_or(0)
    }
}

/// An agent's rules over what MCP mounts offer beyond tools; each list in
/// the order the rules apply (root agent first), the last match deciding.
#[derive(Clone, Debug, Default)]
pub struct OfferRules {
    /// Over prompts, by `<prefix><server>__<prompt>`.
    pub prompts: Vec<OfferRule>,
    /// Over a mount's resources and templates, by mount id.
    pub resources: Vec<OfferRule>,
}

#[derive(Clone, Debug)]
pub struct OfferRule {
    matcher: GlobMatcher,
    shows: bool,
}

impl OfferRules {
    /// The rules in the order they apply, as the agent's graph node holds them: an
    /// edit to them is a change of the agent (a digest that left them out took
    /// an edit to `prompts` alone for an unchanged composition).
    pub fn to_json(&self) -> Json {
        let rules = |rules: &[OfferRule]| -> Vec<Json> {
            rules.iter().map(|r| serde_json::json!({ "pattern": r.matcher.glob().glob(), "shows": r.shows })).collect()
        };
        serde_json::json!({ "prompts": rules(&self.prompts), "resources": rules(&self.resources) })
    }

    /// Whether prompt `name` (as rules name it: `mcp__<server>__<prompt>`) is shown; visible unless a rule hides it.
    pub fn shows_prompt(&self, name: &str) -> bool {
        self.prompts.iter().rev().find(|r| r.matcher.is_match(name)).is_none_or(|r| r.shows)
    }

    /// Whether mount `id`'s resources and templates are shown.
    pub fn shows_resources(&self, id: &str) -> bool {
        self.resources.iter().rev().find(|r| r.matcher.is_match(id)).is_none_or(|r| r.shows)
    }

    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty() && self.resources.is_empty()
    }
}

/// The rules of one `prompts` or `resources` map, in the order written; a key that is not a glob is an error.
fn offer_rules(map: Option<&Mapping>, at: &str, tree: &Node, out: &mut Vec<Diagnostic>) -> Vec<OfferRule> {
    let mut rules = Vec::new();
    for (key, entry) in map.into_iter().flatten() {
        // The schema has checked that each value is a boolean.
        let Value::Bool(shows) = entry.node.value else { continue };
        match Glob::new(key) {
            Ok(glob) => rules.push(OfferRule { matcher: glob.compile_matcher(), shows }),
            Err(e) => {
                let pointer = format!("{at}/{}", crate::diagnostic::escape_pointer_segment(key));
                out.push(Diagnostic::new(
                    crate::codes::OFFER_RULE_INVALID_GLOB,
                    crate::surface::locate_key(tree, &pointer),
                    &pointer,
                    format!("`{key}` is not a valid glob: {e}"),
                ));
            }
        }
    }
    rules
}

impl Resolved {
    /// The token that opens `agent`'s endpoint over HTTP, with where it is
    /// written (`/serve`, `/agents/<name>/serve`): its own, else its
    /// nearest ancestor's, else the top-level `serve` one (`default`'s).
    pub fn token_for(&self, agent: &str) -> Option<(crate::model::TokenSource, String)> {
        let serve = self.services.get("serve")?;
        let mut at = Some(agent);
        let mut seen = 0;
        while let Some(name) = at.filter(|_| seen <= self.agents.len()) {
            if let Some(source) = crate::model::TokenSource::from_json(&serve["agents"][name]) {
                return Some((source, pointer(["agents", name, "serve"])));
            }
            at = self.agents.get(name).and_then(|a| a.parent.as_deref());
            seen += 1;
        }
        crate::model::TokenSource::of(&self.services).map(|s| (s, "/serve".to_owned()))
    }

    /// `services.workspace.root` as resolved (absolute); `None` when the composition sets none
    /// (there is no implicit workspace).
    pub fn workspace_root(&self) -> Option<&std::path::Path> {
        self.services.get("workspace").and_then(|w| w["root"].as_str()).map(std::path::Path::new)
    }

    /// Agents whose endpoint no token guards, sorted.
    pub fn open_agents(&self) -> Vec<&str> {
        self.agents.keys().filter(|a| self.token_for(a).is_none()).map(String::as_str).collect()
    }

    /// Whether agent `agent` sees the tools of mount `id`: it is in scope and its tool is enabled.
    pub fn is_visible(&self, agent: &str, id: &str) -> bool {
        let (Some(a), Some(resolved)) = (self.agents.get(agent), self.mounts.get(id).and_then(|m| m.resolved.as_ref())) else {
            return false;
        };
        a.scope.contains(id)
            && match &resolved.exposure {
                Exposure::Tool(tool) => a.tools.fixed.get(tool).is_some_and(Option::is_some),
                Exposure::Dynamic { .. } => !a.tools.hides_server(id),
            }
    }

    /// The agents (sorted) to which mount `id` is visible.
    pub fn visible_agents(&self, id: &str) -> Vec<&str> {
        self.agents.keys().filter(|a| self.is_visible(a, id)).map(String::as_str).collect()
    }

    /// The mounts visible to `agent` through tools discovered at run time.
    pub fn visible_dynamic_mounts(&self, agent: &str) -> Vec<&str> {
        self.mounts
            .iter()
            .filter(|(id, m)| {
                matches!(m.resolved.as_ref().map(|r| &r.exposure), Some(Exposure::Dynamic { .. })) && self.is_visible(agent, id)
            })
            .map(|(id, _)| id.as_str())
            .collect()
    }
}

/// A fixed tool an agent enables though no mount it sees can serve it: every
/// call would fail (`web_fetch: true` with no fetch provider). One warning per
/// key that enables it, where the nearest agent on the chain (or the top
/// `tools`) writes it, naming the agents it leaves without a provider. Not
/// judged while a mount's kind is unknown: it may be the provider meant.
fn unserved_tools(resolved: &Resolved, tree: &Node, out: &mut Vec<Diagnostic>) {
    if !resolved.unknown.is_empty() {
        return;
    }
    let written = |at: &str| {
        let segments = crate::diagnostic::pointer_segments(at);
        tree.lookup(&segments).2 == segments.len()
    };
    let mut unserved: BTreeMap<String, (&'static str, Vec<&str>)> = BTreeMap::new();
    for tool in resolved.surfaces.iter().flat_map(|s| s.tools()) {
        for (name, agent) in &resolved.agents {
            if !agent.tools.fixed.get(tool.name()).is_some_and(Option::is_some) {
                continue;
            }
            if resolved.mounts.iter().any(|(id, m)| agent.scope.contains(id) && tool.exposes().iter().any(|r| m.provides(r))) {
                continue;
            }
            // The nearest key on the chain decides, so the nearest one written is the one that enables it.
            let mut chain = Some(name.as_str());
            let mut at = pointer(["tools", tool.name()]);
            while let Some(a) = chain {
                let key = pointer(["agents", a, "tools", tool.name()]);
                if written(&key) {
                    at = key;
                    break;
                }
                chain = resolved.agents.get(a).and_then(|a| a.parent.as_deref());
            }
            unserved.entry(at).or_insert((tool.name(), Vec::new())).1.push(name);
        }
    }
    for (at, (tool, agents)) in unserved {
        let agents = agents.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ");
        out.push(
            Diagnostic::new(
                crate::codes::TOOL_UNSERVED,
                locate(tree, &at),
                &at,
                format!("`{tool}` is enabled, but no mount that {agents} can see serves it: every call would fail"),
            )
            .with_help(format!("mount a provider of `{tool}` where these agents see it, or write `{tool}: false`")),
        );
    }
}

fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    id.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

pub(crate) fn resolve(tree: &Node, sources: &Sources, surfaces: &[&'static dyn Surface], out: &mut Vec<Diagnostic>) -> Resolved {
    let section = |key: &str| tree.get(key).filter(|v| v.value != Value::Null);
    let budgets = section("budgets").and_then(|v| Budgets::deserialize(v).ok()).unwrap_or_default();

    let mut services = BTreeMap::new();
    let service_section = |name: &str| tree.get("services").and_then(|s| s.get(name));
    // A root absent, null or empty is none: there is no implicit workspace (the composition's
    // folder is where it was written, not the code it is about).
    if let Some(ws) = service_section("workspace").and_then(|v| Workspace::deserialize(v).ok()) {
        let at = "/services/workspace/root";
        let root = ws.root.filter(|root| !root.is_empty()).map(|root| resolve_path(sources.path(locate(tree, at).file), &root));
        if root.is_none() {
            let pointer = "/services/workspace";
            let message = "`services.workspace` has no `root` (absent, null or empty): there is no workspace";
            out.push(
                Diagnostic::new(crate::codes::WORKSPACE_WITHOUT_ROOT, locate(tree, pointer), pointer, message)
                    .with_help("set `root:` (relative to this file), or leave `workspace` out"),
            );
        }
        services.insert("workspace".to_owned(), serde_json::json!({ "root": root }));
    }
    let subprocess: Subprocess = service_section("subprocess").and_then(|v| Subprocess::deserialize(v).ok()).unwrap_or_default();
    // `serve` sits in the plan as a service: a new token source or limit is a change a reload applies.
    let mut serve_tokens = Map::new();
    let token = |at: &str, env: &Option<crate::model::EnvName>, file: &Option<String>, out: &mut Vec<Diagnostic>| match (env, file) {
        (Some(_), Some(_)) => {
            let pointer = format!("{at}/bearer_token_file");
            out.push(Diagnostic::new(
                crate::codes::SERVE_TOKEN_CONFLICT,
                locate(tree, &pointer),
                &pointer,
                format!("`{at}` names both `bearer_token_env` and `bearer_token_file`; name one"),
            ));
            None
        }
        (Some(env), None) => Some(serde_json::json!({ "env": env.0 })),
        (None, Some(file)) => {
            let at = format!("{at}/bearer_token_file");
            Some(serde_json::json!({ "file": resolve_path(sources.path(locate(tree, &at).file), file) }))
        }
        (None, None) => None,
    };
    let serve = section("serve").and_then(|v| Serve::deserialize(v).ok());
    for (name, entry) in section("agents").and_then(Node::as_map).into_iter().flatten() {
        let Some(own) = entry.node.get("serve").and_then(|v| crate::model::AgentServe::deserialize(v).ok()) else { continue };
        if let Some(t) = token(&pointer(["agents", name.as_str(), "serve"]), &own.bearer_token_env, &own.bearer_token_file, out) {
            serve_tokens.insert(name.clone(), t);
        }
    }
    if serve.is_some() || !serve_tokens.is_empty() {
        let serve = serve.unwrap_or_default();
        if serve.max_request_bytes > serve.max_buffered_request_bytes {
            // One largest body must fit in what all may buffer together, or it would be refused forever.
            // Located at the budget where the file writes it (its documented range), else at the body limit.
            let budget_written = section("serve").and_then(|s| s.get("max_buffered_request_bytes")).is_some();
            let pointer = if budget_written { "/serve/max_buffered_request_bytes" } else { "/serve/max_request_bytes" };
            out.push(Diagnostic::new(
                crate::codes::SERVE_LIMIT_ORDER,
                locate(tree, pointer),
                pointer,
                format!(
                    "`max_request_bytes` ({}) is more than `max_buffered_request_bytes` ({}): a body that large could never be buffered",
                    serve.max_request_bytes, serve.max_buffered_request_bytes
                ),
            ));
        }
        let mut section = serde_json::to_value(crate::model::ServeLimits::from(&serve)).expect("serializable");
        if let Some(t) = token("/serve", &serve.bearer_token_env, &serve.bearer_token_file, out) {
            section["bearer_token"] = t;
        }
        if !serve_tokens.is_empty() {
            section["agents"] = Json::Object(serve_tokens);
        }
        services.insert("serve".to_owned(), section);
    }

    // Mounts, each resolved by its kind.
    let kinds: HashMap<&str, (&'static dyn MountKind, &'static dyn Surface)> =
        surfaces.iter().flat_map(|s| s.kinds().iter().map(move |k| (k.name(), (*k, *s)))).collect();
    let mut mounts = IndexMap::new();
    let mut unknown = BTreeMap::new();
    // Mounts the schema already found wrong are not resolved: no follow-on errors.
    let mounts_with_errors: BTreeSet<String> = out
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| crate::diagnostic::pointer_segments(&d.pointer).get(..2).filter(|s| s[0] == "mounts").map(|s| s[1].clone()))
        .collect();
    for (id, entry) in section("mounts").and_then(Node::as_map).into_iter().flatten() {
        let config = &entry.node;
        let mount_pointer = pointer(["mounts", id.as_str()]);
        if !valid_id(id) {
            out.push(Diagnostic::new(
                crate::codes::MOUNT_ID_INVALID,
                crate::surface::locate_key(tree, &mount_pointer),
                &mount_pointer,
                format!("mount id `{id}` must start with a letter or digit and use only letters, digits, `_`, `-` and `.` (64 at most)"),
            ));
        }
        let Some((kind, surface)) = config.get("kind").and_then(Node::as_str).and_then(|k| kinds.get(k)).copied() else {
            unknown.insert(id.clone(), config.get("kind").and_then(Node::as_str).unwrap_or_default().to_owned());
            continue;
        };
        let schema_clean = !mounts_with_errors.contains(id.as_str());
        let resolved = if schema_clean {
            let mut cx = MountCx { id, pointer: mount_pointer, config, root: tree, sources, diagnostics: out };
            kind.resolve(&mut cx)
        } else {
            None
        };
        mounts.insert(id.clone(), Mount { kind, surface, resolved });
    }
    // An engine service is in the plan when it is configured or a mount needs it.
    let needed = |service: &str| mounts.values().any(|m| m.resolved.as_ref().is_some_and(|r| r.needs.contains(&service)));
    if service_section("subprocess").is_some() || needed("subprocess") {
        services.insert("subprocess".to_owned(), serde_json::to_value(&subprocess).expect("serializable"));
    }
    if !services.contains_key("workspace") && needed("workspace") {
        // No implicit workspace: the composition's folder is where it was written, not the code it
        // is about (under Kubernetes, a ConfigMap's). Each surface says what it does without one;
        // `inventory` and the graph show the root as null.
        services.insert("workspace".to_owned(), serde_json::json!({ "root": null }));
    }

    check_claims(&mounts, tree, sources, out);

    let fixed_tools: BTreeMap<&'static str, &'static dyn crate::surface::FixedTool> =
        surfaces.iter().flat_map(|s| s.tools().iter().map(|t| (t.name(), *t))).collect();
    let prefixes: Vec<(&'static str, &'static dyn Surface)> =
        surfaces.iter().filter_map(|s| s.dynamic_tool_prefix().map(|p| (p, *s))).collect();
    let agents = resolve_agents(tree, &budgets, &mounts, &unknown, &fixed_tools, &prefixes, out);

    let mut resolved = Resolved {
        name: tree.get("name").and_then(Node::as_str).map(str::to_owned),
        budgets,
        services,
        mounts,
        agents,
        surfaces: surfaces.to_vec(),
        unknown,
    };

    for surface in surfaces {
        let section_pointer = pointer(["services", surface.service()]);
        let section = service_section(surface.service());
        let mut cx = SurfaceCx { section, section_pointer, resolved: &resolved, root: tree, diagnostics: out };
        if let Some(config) = surface.check(&mut cx) {
            resolved.services.insert(surface.service().to_owned(), config);
        }
    }

    for (id, mount) in &resolved.mounts {
        if mount.resolved.as_ref().is_some_and(|r| r.required) && resolved.visible_agents(id).is_empty() {
            let at = pointer(["mounts", id.as_str(), "required"]);
            out.push(
                Diagnostic::new(
                    crate::codes::MOUNT_REQUIRED_INVISIBLE,
                    locate(tree, &at),
                    at,
                    format!("mount `{id}` is required, but no agent can see its tools"),
                )
                .with_help("enable its tool for an agent that has it in scope, or drop `required: true`"),
            );
        }
    }
    unserved_tools(&resolved, tree, out);
    name_collisions(&resolved, tree, out);
    resolved
}

/// Names two things one agent sees would serve, where validation knows them
/// (`ResolvedMount::names`): a mount of raw names beside a fixed tool the
/// agent enables, or beside another such mount. Each name is reported once,
/// where the later mount names it.
fn name_collisions(resolved: &Resolved, tree: &Node, out: &mut Vec<Diagnostic>) {
    let mut reported = BTreeSet::new();
    for (agent, a) in &resolved.agents {
        let mut first: HashMap<&str, String> =
            a.tools.fixed.iter().filter(|(_, s)| s.is_some()).map(|(name, _)| (*name, format!("the fixed tool `{name}`"))).collect();
        for id in a.scope.iter().filter(|id| resolved.is_visible(agent, id)) {
            let Some(mount) = resolved.mounts[id].resolved.as_ref() else { continue };
            for (name, at) in &mount.names {
                if a.tools.dynamic_settings(id, name, &resolved.budgets).is_none() {
                    continue;
                }
                match first.get(name.as_str()) {
                    Some(other) if reported.insert(at.clone()) => out.push(Diagnostic::new(
                        crate::codes::TOOL_NAME_COLLISION,
                        locate(tree, at),
                        at,
                        format!("tool `{name}` of mount `{id}` (naming: raw) is also served to agent `{agent}` by {other}: neither would be served to it"),
                    )),
                    Some(_) => {}
                    None => {
                        first.insert(name, format!("mount `{id}`"));
                    }
                }
            }
        }
    }
}

fn check_claims(mounts: &IndexMap<String, Mount>, tree: &Node, sources: &Sources, out: &mut Vec<Diagnostic>) {
    let mut taken: HashMap<(&str, &str), (&str, &str)> = HashMap::new();
    for (id, mount) in mounts {
        let Some(resolved) = &mount.resolved else { continue };
        for claim in &resolved.claims {
            match taken.get(&(claim.space, claim.key.as_str())) {
                Some((first_id, first_pointer)) => {
                    let first = crate::surface::locate_key(tree, first_pointer);
                    out.push(Diagnostic::new(
                        claim.code,
                        crate::surface::locate_key(tree, &claim.pointer),
                        &claim.pointer,
                        format!(
                            "{} is claimed by mount `{first_id}` ({}:{}:{}) and by mount `{id}`",
                            claim.what,
                            sources.path(first.file).display(),
                            first.line,
                            first.column
                        ),
                    ));
                }
                None => {
                    taken.insert((claim.space, claim.key.as_str()), (id.as_str(), claim.pointer.as_str()));
                }
            }
        }
    }
}

fn resolve_agents(
    tree: &Node,
    budgets: &Budgets,
    mounts: &IndexMap<String, Mount>,
    unknown_mounts: &BTreeMap<String, String>,
    fixed_tools: &BTreeMap<&'static str, &'static dyn crate::surface::FixedTool>,
    prefixes: &[(&'static str, &'static dyn Surface)],
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Agent> {
    let (docs, agent_tools) = read_agents(tree, out);
    let parents = resolve_parents(tree, &docs, out);
    let scoped = scoped_mounts(tree, &docs, mounts, unknown_mounts, out);
    let top_tools: Option<&Mapping> = tree.get("tools").and_then(Node::as_map);
    let mounts_by_prefix = dynamic_ids(mounts, unknown_mounts, prefixes);
    let rules_of = tool_rules(tree, &docs, &agent_tools, &mounts_by_prefix, fixed_tools, prefixes, out);

    // Each agent's table: built-in defaults, then budgets, then entries from the root down.
    // Agents are built parents first, each starting from its parent's finished state.
    let dynamic_servers: Vec<&str> = mounts
        .iter()
        .filter(|(_, m)| matches!(m.resolved.as_ref().map(|r| &r.exposure), Some(Exposure::Dynamic { .. })))
        .map(|(id, _)| id.as_str())
        .collect();
    let mount_ids: Arc<IndexSet<String, foldhash::fast::RandomState>> = Arc::new(mounts.keys().cloned().collect());
    let is_scoped: Vec<bool> = mount_ids.iter().map(|id| scoped.contains(id.as_str())).collect();
    let mut states: HashMap<String, AgentState> = HashMap::new();
    let mut agents = BTreeMap::new();
    for name in parents_first(&parents) {
        let parent = parents.get(name).cloned().flatten();
        let mut state = match parent.as_ref().and_then(|p| states.get(p)) {
            Some(p) => AgentState {
                fixed: p.fixed.clone(),
                dynamic: p.dynamic.clone(),
                offers: p.offers.clone(),
                listed: p.listed.clone(),
                depth: p.depth + 1,
            },
            None => AgentState::root(fixed_tools, budgets),
        };
        let own = docs.get(name);
        let agent_at = pointer(["agents", name.as_str()]);
        let mut rule_maps: Vec<(Option<&Node>, String)> = Vec::new();
        if name == DEFAULT_AGENT {
            rule_maps.push((Some(tree), String::new()));
        }
        rule_maps.push((tree.get("agents").and_then(|a| a.get(name)), agent_at));
        for (node, at) in rule_maps {
            let Some(node) = node else { continue };
            let prompts = offer_rules(node.get("prompts").and_then(Node::as_map), &format!("{at}/prompts"), tree, out);
            let resources = offer_rules(node.get("resources").and_then(Node::as_map), &format!("{at}/resources"), tree, out);
            state.offers.prompts.extend(prompts);
            state.offers.resources.extend(resources);
        }
        let mut entries: Vec<&Mapping> = Vec::new();
        if name == DEFAULT_AGENT {
            entries.extend(top_tools);
            state.dynamic.extend(rules_of.get(&None).cloned());
        }
        entries.extend(agent_tools.get(name.as_str()).copied());
        state.dynamic.extend(rules_of.get(&Some(name.as_str())).cloned());
        for table in entries {
            state.apply_fixed_entries(table);
        }
        let depth = state.depth;
        state.listed.extend(own.into_iter().flat_map(|a| a.mounts.iter().map(|m| (m.clone(), depth))));
        let scope = Scope {
            ids: mount_ids.clone(),
            visible: mount_ids.iter().zip(&is_scoped).map(|(id, scoped)| !scoped || state.listed.contains_key(id)).collect(),
        };
        let layers = state.listed.iter().filter(|(id, _)| scope.contains(id)).map(|(id, d)| (id.clone(), *d)).collect();
        let mut table = ToolTable::new(state.fixed.iter().map(|(t, (s, on))| (*t, on.then(|| s.clone()))).collect(), state.dynamic.clone());
        table.hide_servers(dynamic_servers.iter().copied().filter(|id| scope.contains(id)));
        agents.insert(name.clone(), Agent { parent, offers: state.offers.clone(), scope, layers, tools: table });
        states.insert(name.clone(), state);
    }
    agents
}

/// What resolution needs of an agent as written: its parent and its scoped mounts.
struct AgentRefs {
    parent: Option<String>,
    mounts: Vec<String>,
}

/// Every agent as written, by name, and each one's `tools` map; a name that is not
/// an agent name is an error (the agent still exists, so references keep their meaning).
fn read_agents<'t>(tree: &'t Node, out: &mut Vec<Diagnostic>) -> (BTreeMap<String, AgentRefs>, HashMap<&'t str, &'t Mapping>) {
    let mut docs: BTreeMap<String, AgentRefs> = BTreeMap::new();
    let mut agent_tools: HashMap<&str, &Mapping> = HashMap::new();
    for (name, entry) in tree.get("agents").and_then(Node::as_map).into_iter().flatten() {
        let value = &entry.node;
        let at = pointer(["agents", name.as_str()]);
        let valid = !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
        if !valid {
            out.push(Diagnostic::new(
                crate::codes::AGENT_NAME_INVALID,
                crate::surface::locate_key(tree, &at),
                &at,
                format!("agent name `{name}` must be 1 to 64 letters, digits, `_` or `-`"),
            ));
        }
        // Read by hand rather than deserialized: the schema has checked the types, an
        // agent with a schema error still exists (so references to it keep their
        // meaning), and its `tools` map is used in place, not copied.
        let a = AgentRefs {
            parent: value.get("parent").and_then(Node::as_str).map(str::to_owned),
            mounts: value.get("mounts").and_then(Node::as_seq).into_iter().flatten().filter_map(Node::as_str).map(str::to_owned).collect(),
        };
        if let Some(t) = value.get("tools").and_then(Node::as_map) {
            agent_tools.insert(name.as_str(), t);
        }
        docs.insert(name.clone(), a);
    }
    (docs, agent_tools)
}

/// Each agent's parent (`None` for `default`): an unknown parent or one on a cycle is an
/// error, and such an agent hangs off `default`.
fn resolve_parents(tree: &Node, docs: &BTreeMap<String, AgentRefs>, out: &mut Vec<Diagnostic>) -> BTreeMap<String, Option<String>> {
    let mut parents: BTreeMap<String, Option<String>> = BTreeMap::new();
    parents.insert(DEFAULT_AGENT.to_owned(), None);
    for (name, a) in docs {
        if name == DEFAULT_AGENT {
            if a.parent.is_some() {
                let at = "/agents/default/parent";
                out.push(Diagnostic::new(
                    crate::codes::AGENT_DEFAULT_PARENT,
                    locate(tree, at),
                    at,
                    "the `default` agent is the root and has no parent",
                ));
            }
            continue;
        }
        let parent = a.parent.clone().unwrap_or_else(|| DEFAULT_AGENT.to_owned());
        if parent != DEFAULT_AGENT && !docs.contains_key(&parent) {
            let at = pointer(["agents", name.as_str(), "parent"]);
            let mut d = Diagnostic::new(
                crate::codes::AGENT_UNKNOWN_PARENT,
                locate(tree, &at),
                &at,
                format!("agent `{name}` names parent `{parent}`, which is not an agent"),
            );
            if let Some(s) = did_you_mean(&parent, docs.keys().map(String::as_str).filter(|n| n != name).chain([DEFAULT_AGENT])) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            out.push(d);
            parents.insert(name.clone(), Some(DEFAULT_AGENT.to_owned()));
            continue;
        }
        parents.insert(name.clone(), Some(parent));
    }
    // Each agent is walked once: a walk stops at an agent already finished, or
    // finds a cycle when it meets an agent on its own path.
    let mut reported: BTreeSet<String> = BTreeSet::new();
    let mut finished: BTreeSet<String> = BTreeSet::new();
    for name in docs.keys() {
        let mut path: Vec<String> = Vec::new();
        let mut on_path: HashMap<String, usize> = HashMap::new();
        let mut current = Some(name.clone());
        while let Some(c) = current {
            if finished.contains(&c) {
                break;
            }
            if let Some(&start) = on_path.get(&c) {
                let cycle: Vec<String> = path[start..].to_vec();
                let first = cycle.iter().min().expect("a cycle has members").clone();
                let at = pointer(["agents", first.as_str(), "parent"]);
                let mut names = cycle.clone();
                let rot = names.iter().position(|n| *n == first).unwrap_or(0);
                names.rotate_left(rot);
                names.push(first.clone());
                out.push(Diagnostic::new(
                    crate::codes::AGENT_PARENT_CYCLE,
                    locate(tree, &at),
                    &at,
                    format!("agent parents form a cycle: {}", names.join(" → ")),
                ));
                reported.extend(cycle);
                break;
            }
            on_path.insert(c.clone(), path.len());
            path.push(c.clone());
            current = parents.get(&c).cloned().flatten();
        }
        finished.extend(path);
    }
    for name in &reported {
        parents.insert(name.clone(), Some(DEFAULT_AGENT.to_owned()));
    }
    parents
}

/// The mounts some agent lists: each is visible only in the subtree of an agent that
/// lists it. A listed id that is no mount is an error.
fn scoped_mounts<'m>(
    tree: &Node,
    docs: &'m BTreeMap<String, AgentRefs>,
    mounts: &IndexMap<String, Mount>,
    unknown_mounts: &BTreeMap<String, String>,
    out: &mut Vec<Diagnostic>,
) -> HashSet<&'m str> {
    let mut scoped: HashSet<&str> = HashSet::default();
    for (name, a) in docs {
        for (i, m) in a.mounts.iter().enumerate() {
            if mounts.contains_key(m) {
                scoped.insert(m.as_str());
            } else if !unknown_mounts.contains_key(m) {
                let at = format!("{}/mounts/{i}", pointer(["agents", name.as_str()]));
                let mut d = Diagnostic::new(
                    crate::codes::AGENT_UNKNOWN_MOUNT,
                    locate(tree, &at),
                    &at,
                    format!("agent `{name}` lists mount `{m}`, which is not defined under `mounts`"),
                );
                if let Some(s) = did_you_mean(m, mounts.keys().map(String::as_str)) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                out.push(d);
            }
        }
    }
    scoped
}

/// Each dynamic-tool prefix (`mcp__`) with the ids of the mounts whose tools it names;
/// a mount of an unknown kind counts for every prefix (its own error says what it is).
fn dynamic_ids<'m>(
    mounts: &'m IndexMap<String, Mount>,
    unknown_mounts: &'m BTreeMap<String, String>,
    prefixes: &[(&'static str, &'static dyn Surface)],
) -> Vec<(&'static str, HashSet<&'m str>)> {
    prefixes
        .iter()
        .map(|(p, s)| {
            (
                *p,
                mounts
                    .iter()
                    .filter(|(_, m)| m.surface.service() == s.service())
                    .map(|(id, _)| id.as_str())
                    .chain(unknown_mounts.keys().map(String::as_str))
                    .collect(),
            )
        })
        .collect()
}

/// The dynamic-tool rules of every `tools` map (the top-level one under `None`), each
/// key checked once, where it is written.
fn tool_rules<'a>(
    tree: &Node,
    docs: &'a BTreeMap<String, AgentRefs>,
    agent_tools: &HashMap<&str, &Mapping>,
    mounts_by_prefix: &[(&'static str, HashSet<&str>)],
    fixed_tools: &BTreeMap<&'static str, &'static dyn crate::surface::FixedTool>,
    prefixes: &[(&'static str, &'static dyn Surface)],
    out: &mut Vec<Diagnostic>,
) -> HashMap<Option<&'a str>, Arc<Vec<DynamicRule>>> {
    // The top-level `tools` (the default agent's first layer) has no agent name: `None`.
    let mut tables: Vec<(Option<&str>, String, &Mapping)> = Vec::new();
    if let Some(t) = tree.get("tools").and_then(Node::as_map) {
        tables.push((None, "/tools".to_owned(), t));
    }
    for name in docs.keys() {
        if let Some(t) = agent_tools.get(name.as_str()) {
            tables.push((Some(name.as_str()), format!("{}/tools", pointer(["agents", name.as_str()])), t));
        }
    }
    let mut rules_of: HashMap<Option<&str>, Arc<Vec<DynamicRule>>> = HashMap::new();
    for (owner, at, table) in &tables {
        let mut rules = Vec::with_capacity(table.len());
        for (key, value) in table.iter() {
            if fixed_tools.contains_key(key.as_str()) {
                continue;
            }
            match dynamic_rule(key, &value.node, mounts_by_prefix) {
                Ok(rule) => rules.push(rule),
                Err((code, message)) => {
                    let key_at = format!("{at}/{}", crate::diagnostic::escape_pointer_segment(key));
                    let mut d = Diagnostic::new(code, crate::surface::locate_key(tree, &key_at), &key_at, message);
                    if code == crate::codes::TOOLS_UNKNOWN_KEY {
                        let names: Vec<&str> = fixed_tools.keys().copied().collect();
                        d = d.with_help(match did_you_mean(key, names.iter().copied()) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => format!(
                                "fixed tools: {}; MCP tools: `{}<server>__<tool>` (globs allowed)",
                                names.join(", "),
                                prefixes.first().map_or("mcp__", |p| p.0)
                            ),
                        });
                    }
                    out.push(d);
                }
            }
        }
        rules_of.insert(*owner, Arc::new(rules));
    }
    rules_of
}

/// Every agent once, each after its parent.
fn parents_first(parents: &BTreeMap<String, Option<String>>) -> Vec<&String> {
    let mut order: Vec<&String> = Vec::new();
    let mut queued: BTreeSet<&String> = BTreeSet::new();
    // From each agent, walk up to the first ancestor already queued, then queue down.
    for name in parents.keys() {
        let mut chain = Vec::new();
        let mut current = Some(name);
        while let Some(n) = current.filter(|n| !queued.contains(*n)) {
            chain.push(n);
            current = parents.get(n).and_then(Option::as_ref);
        }
        for n in chain.into_iter().rev() {
            queued.insert(n);
            order.push(n);
        }
    }
    order
}

/// An agent's resolution so far, which each child starts from.
struct AgentState {
    /// Each fixed tool's settings, and whether it is enabled.
    fixed: BTreeMap<&'static str, (Json, bool)>,
    dynamic: Vec<Arc<Vec<DynamicRule>>>,
    offers: OfferRules,
    /// Mounts listed on the chain so far, each with the depth of the nearest agent listing it.
    listed: BTreeMap<String, u32>,
    depth: u32,
}

impl AgentState {
    /// The root's: every fixed tool at its built-in defaults, with `budgets` over them, off.
    fn root(fixed_tools: &BTreeMap<&'static str, &'static dyn crate::surface::FixedTool>, budgets: &Budgets) -> AgentState {
        let budget_values = match serde_json::to_value(budgets).expect("serializable") {
            Json::Object(o) => o,
            _ => Map::new(),
        };
        let fixed = fixed_tools
            .values()
            .map(|tool| {
                let mut settings = tool.defaults();
                if let Json::Object(o) = &mut settings {
                    for (k, v) in &budget_values {
                        if o.contains_key(k) {
                            o.insert(k.clone(), v.clone());
                        }
                    }
                }
                (tool.name(), (settings, false))
            })
            .collect();
        AgentState { fixed, dynamic: Vec::new(), offers: OfferRules::default(), listed: BTreeMap::new(), depth: 1 }
    }

    /// A `tools` map's fixed-tool entries: `true`/`false` switch a tool; a map enables it
    /// and overrides the settings it names (`false` keeps them for a later `true`).
    fn apply_fixed_entries(&mut self, table: &Mapping) {
        for (tool, (settings, enabled)) in self.fixed.iter_mut() {
            match table.get(tool).map(|e| &e.node.value) {
                Some(Value::Bool(on)) => *enabled = *on,
                Some(Value::Map(over)) => {
                    *enabled = true;
                    if let Json::Object(o) = settings {
                        for (k, e) in over.iter() {
                            o.insert(k.clone(), e.node.to_json());
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

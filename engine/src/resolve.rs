//! The resolved phase: references checked, agents' tool tables computed, every
//! mount resolved by its kind. Built from a schema-checked document; collects
//! every semantic diagnostic instead of stopping at the first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};
use globset::GlobMatcher;
use indexmap::{IndexMap, IndexSet};
use serde::Deserialize;
use serde_json::{Map, Value as Json};

use crate::diagnostic::{Diagnostic, Sources, pointer};
use crate::model::{Budgets, Serve, Subprocess, Workspace};
use crate::surface::{Exposure, MountCx, MountKind, ResolvedMount, Surface, SurfaceCx, locate, resolve_path};
use crate::tool_rules::ToolTable;
use crate::yaml::{Node, Value};

mod agents;

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
    /// Its `quota` rules, its parent's first; each agent counts on its own.
    pub quota: Vec<Arc<crate::quota::QuotaRule>>,
    /// How its MCP tools reach its model: its own `disclosure`, else its parent's.
    pub disclosure: crate::disclosure::Rules,
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
    /// Whether this agent sees the tools of `mount`, whose id is `id`: it is in scope and
    /// its tool is enabled (`Resolved::is_visible`, for a caller that holds both).
    pub fn sees(&self, id: &str, mount: &Mount) -> bool {
        let Some(resolved) = mount.resolved.as_ref() else { return false };
        self.scope.contains(id)
            && match &resolved.exposure {
                Exposure::Tool(tool) => self.tools.fixed.get(tool).is_some_and(Option::is_some),
                Exposure::Dynamic { .. } => !self.tools.hides_server(id),
            }
    }

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
        let (Some(a), Some(mount)) = (self.agents.get(agent), self.mounts.get(id)) else { return false };
        a.sees(id, mount)
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
            // The kind first: a scope lookup for every mount, for every agent, was most of the cost with many agents.
            if resolved.mounts.iter().any(|(id, m)| tool.exposes().iter().any(|r| m.provides(r)) && agent.scope.contains(id)) {
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

pub(crate) fn resolve(
    tree: &Node,
    sources: &Sources,
    lock: &crate::lock::LockRead,
    surfaces: &[&'static dyn Surface],
    out: &mut Vec<Diagnostic>,
) -> Resolved {
    let budgets = section(tree, "budgets").and_then(|v| Budgets::deserialize(v).ok()).unwrap_or_default();
    let mut services = BTreeMap::new();
    if let Some(workspace) = workspace_service(tree, sources, out) {
        services.insert("workspace".to_owned(), workspace);
    }
    if let Some(serve) = serve_service(tree, sources, out) {
        services.insert("serve".to_owned(), serve);
    }
    let (mounts, unknown) = resolve_mounts(tree, sources, lock, surfaces, out);
    add_needed_services(&mut services, tree, &mounts);

    check_claims(&mounts, tree, sources, out);

    let fixed_tools: BTreeMap<&'static str, &'static dyn crate::surface::FixedTool> =
        surfaces.iter().flat_map(|s| s.tools().iter().map(|t| (t.name(), *t))).collect();
    let prefixes: Vec<(&'static str, &'static dyn Surface)> =
        surfaces.iter().filter_map(|s| s.dynamic_tool_prefix().map(|p| (p, *s))).collect();
    let agents = agents::resolve_agents(tree, &budgets, &mounts, &unknown, &fixed_tools, &prefixes, out);

    let mut resolved = Resolved {
        name: tree.get("name").and_then(Node::as_str).map(str::to_owned),
        budgets,
        services,
        mounts,
        agents,
        surfaces: surfaces.to_vec(),
        unknown,
    };
    check_surfaces(&mut resolved, surfaces, tree, out);
    required_invisible(&resolved, tree, out);
    unserved_tools(&resolved, tree, out);
    name_collisions(&resolved, tree, out);
    resolved
}

/// A top-level section of the composition; `null` is as good as absent.
fn section<'t>(tree: &'t Node, key: &str) -> Option<&'t Node> {
    tree.get(key).filter(|v| v.value != Value::Null)
}

/// The section of service `name` under `services`, as written (`null` included).
fn service_section<'t>(tree: &'t Node, name: &str) -> Option<&'t Node> {
    tree.get("services").and_then(|s| s.get(name))
}

/// `services.workspace` as resolved: its root made absolute. A root absent, null or
/// empty is none: there is no implicit workspace (the composition's folder is where
/// it was written, not the code it is about).
fn workspace_service(tree: &Node, sources: &Sources, out: &mut Vec<Diagnostic>) -> Option<Json> {
    let ws = service_section(tree, "workspace").and_then(|v| Workspace::deserialize(v).ok())?;
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
    Some(serde_json::json!({ "root": root }))
}

/// `serve` as the plan holds it, a service: a new token source or limit is a change
/// a reload applies. `None` when neither `serve` nor any agent's `serve` is written.
fn serve_service(tree: &Node, sources: &Sources, out: &mut Vec<Diagnostic>) -> Option<Json> {
    let mut serve_tokens = Map::new();
    let serve = section(tree, "serve").and_then(|v| Serve::deserialize(v).ok());
    for (name, entry) in section(tree, "agents").and_then(Node::as_map).into_iter().flatten() {
        let Some(own) = entry.node.get("serve").and_then(|v| crate::model::AgentServe::deserialize(v).ok()) else { continue };
        let at = pointer(["agents", name.as_str(), "serve"]);
        if let Some(t) = token_source(tree, sources, &at, &own.bearer_token_env, &own.bearer_token_file, out) {
            serve_tokens.insert(name.clone(), t);
        }
    }
    if serve.is_none() && serve_tokens.is_empty() {
        return None;
    }
    let serve = serve.unwrap_or_default();
    if serve.max_request_bytes > serve.max_buffered_request_bytes {
        // One largest body must fit in what all may buffer together, or it would be refused forever.
        // Located at the budget where the file writes it (its documented range), else at the body limit.
        let budget_written = section(tree, "serve").and_then(|s| s.get("max_buffered_request_bytes")).is_some();
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
    if let Some(t) = token_source(tree, sources, "/serve", &serve.bearer_token_env, &serve.bearer_token_file, out) {
        section["bearer_token"] = t;
    }
    if let Some(audit) = &serve.audit {
        let written_in = sources.path(locate(tree, "/serve/audit/path").file);
        section["audit"]["path"] = Json::from(resolve_path(written_in, &audit.path).display().to_string());
    }
    if !serve_tokens.is_empty() {
        section["agents"] = Json::Object(serve_tokens);
    }
    Some(section)
}

/// Where the `serve` section at `at` takes its token from: an environment variable or
/// a file (its path made absolute). Naming both is an error, and then there is none.
fn token_source(
    tree: &Node,
    sources: &Sources,
    at: &str,
    env: &Option<crate::model::EnvName>,
    file: &Option<String>,
    out: &mut Vec<Diagnostic>,
) -> Option<Json> {
    match (env, file) {
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
    }
}

/// Every mount resolved by its kind, in file order, and the mounts whose kind is
/// not compiled in (id → kind as written). A mount the schema already found wrong
/// is not resolved: no follow-on errors.
fn resolve_mounts(
    tree: &Node,
    sources: &Sources,
    lock: &crate::lock::LockRead,
    surfaces: &[&'static dyn Surface],
    out: &mut Vec<Diagnostic>,
) -> (IndexMap<String, Mount>, BTreeMap<String, String>) {
    let kinds: HashMap<&str, (&'static dyn MountKind, &'static dyn Surface)> =
        surfaces.iter().flat_map(|s| s.kinds().iter().map(move |k| (k.name(), (*k, *s)))).collect();
    let mut mounts = IndexMap::new();
    let mut unknown = BTreeMap::new();
    let mounts_with_errors: BTreeSet<String> = out
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| crate::diagnostic::pointer_segments(&d.pointer).get(..2).filter(|s| s[0] == "mounts").map(|s| s[1].clone()))
        .collect();
    for (id, entry) in section(tree, "mounts").and_then(Node::as_map).into_iter().flatten() {
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
            let mut cx = MountCx { id, pointer: mount_pointer, config, root: tree, sources, lock, diagnostics: out };
            kind.resolve(&mut cx)
        } else {
            None
        };
        mounts.insert(id.clone(), Mount { kind, surface, resolved });
    }
    (mounts, unknown)
}

/// The engine services a mount needs join those the composition configures: an
/// engine service is in the plan when it is configured or a mount needs it.
fn add_needed_services(services: &mut BTreeMap<String, Json>, tree: &Node, mounts: &IndexMap<String, Mount>) {
    let needed = |service: &str| mounts.values().any(|m| m.resolved.as_ref().is_some_and(|r| r.needs.contains(&service)));
    if service_section(tree, "subprocess").is_some() || needed("subprocess") {
        let subprocess: Subprocess = service_section(tree, "subprocess").and_then(|v| Subprocess::deserialize(v).ok()).unwrap_or_default();
        services.insert("subprocess".to_owned(), serde_json::to_value(&subprocess).expect("serializable"));
    }
    if !services.contains_key("workspace") && needed("workspace") {
        // No implicit workspace: the composition's folder is where it was written, not the code it
        // is about (under Kubernetes, a ConfigMap's). Each surface says what it does without one;
        // `inventory` and the graph show the root as null.
        services.insert("workspace".to_owned(), serde_json::json!({ "root": null }));
    }
}

/// Each surface checks its `services` section against the resolved composition;
/// the config it gives back is that service's in the plan.
fn check_surfaces(resolved: &mut Resolved, surfaces: &[&'static dyn Surface], tree: &Node, out: &mut Vec<Diagnostic>) {
    for surface in surfaces {
        let section_pointer = pointer(["services", surface.service()]);
        let section = service_section(tree, surface.service());
        let mut cx = SurfaceCx { section, section_pointer, resolved, root: tree, diagnostics: out };
        if let Some(config) = surface.check(&mut cx) {
            resolved.services.insert(surface.service().to_owned(), config);
        }
    }
}

/// A mount marked `required` that no agent can see: it could never be called.
fn required_invisible(resolved: &Resolved, tree: &Node, out: &mut Vec<Diagnostic>) {
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
        for (id, mount) in resolved.mounts.iter().filter(|(id, mount)| a.sees(id, mount)) {
            let Some(mount) = mount.resolved.as_ref() else { continue };
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

/// The resolved composition as a surface's whole-composition check sees it.
impl crate::surface::Composition for Resolved {
    fn mount_exists(&self, id: &str) -> bool {
        self.mounts.contains_key(id) || self.unknown.contains_key(id)
    }
    fn mount_kind(&self, id: &str) -> Option<&'static dyn MountKind> {
        self.mounts.get(id).map(|m| m.kind)
    }
    fn mounts_in(&self, registry: &str) -> Vec<&str> {
        self.mounts.iter().filter(|(_, m)| m.kind.registry() == registry).map(|(id, _)| id.as_str()).collect()
    }
    fn mount_config(&self, id: &str) -> Option<serde_json::Value> {
        self.mounts.get(id)?.resolved.as_ref().map(|r| r.config.to_json())
    }
    fn workspace_dir(&self) -> Option<&std::path::Path> {
        self.workspace_root()
    }
    fn mount_visible(&self, id: &str) -> bool {
        !self.visible_agents(id).is_empty()
    }
}

//! Agents resolved: each one's parent, the mounts it sees, and its tool table
//! and offer rules, built parents first, each from its parent's finished state.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet};
use globset::Glob;
use indexmap::{IndexMap, IndexSet};
use serde_json::{Map, Value as Json};

use super::{Agent, DEFAULT_AGENT, Mount, OfferRule, OfferRules, Scope};
use crate::diagnostic::{Diagnostic, pointer};
use crate::model::Budgets;
use crate::schema::did_you_mean;
use crate::surface::{Exposure, Surface, locate};
use crate::tool_rules::{DynamicRule, ToolTable, dynamic_rule};
use crate::yaml::{Mapping, Node, Value};

/// Every agent, by name: its parent, its scope and layers, its offer rules and
/// its tool table. The schema-checked `agents` are read by hand, so an agent
/// with an error still exists and references to it keep their meaning.
pub(super) fn resolve_agents(
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
    // A mount of `disclosure: auto` reads its agents' `above`, whatever their own mode.
    let any_auto_mount =
        mounts.values().any(|m| m.resolved.as_ref().and_then(|r| r.disclosure) == Some(crate::model::DisclosureMode::Auto));
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
                quota: p.quota.clone(),
                disclosure: p.disclosure.clone(),
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
            state.quota.extend(quota_rules(node.get("quota"), &format!("{at}/quota"), mounts, unknown_mounts, tree, out));
            if let Some(rules) = disclosure_rules(node.get("disclosure"), &format!("{at}/disclosure"), any_auto_mount, tree, out) {
                state.disclosure = rules;
            }
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
        let quota = state.quota.clone();
        let disclosure = state.disclosure.clone();
        agents.insert(name.clone(), Agent { parent, offers: state.offers.clone(), scope, layers, tools: table, quota, disclosure });
        states.insert(name.clone(), state);
    }
    agents
}

/// The rules of one `quota` list, in the order written; one that limits nothing, has a
/// `tools` glob that does not parse or names a mount the composition lacks is an error,
/// and left out (a window's length is the schema's to check: a `Duration` is at least 1ms).
fn quota_rules(
    list: Option<&Node>,
    at: &str,
    mounts: &IndexMap<String, Mount>,
    unknown_mounts: &BTreeMap<String, String>,
    tree: &Node,
    out: &mut Vec<Diagnostic>,
) -> Vec<Arc<crate::quota::QuotaRule>> {
    use serde::Deserialize;
    let mut rules = Vec::new();
    for (n, node) in list.and_then(Node::as_seq).into_iter().flatten().enumerate() {
        // The schema has checked its form; one that failed it is left out (and reported there).
        let Ok(doc) = crate::quota::QuotaDoc::deserialize(node) else { continue };
        let rule_at = format!("{at}/{n}");
        let mut found = Vec::new();
        let mut invalid = |field: &str, code, message: String| {
            let pointer = if field.is_empty() { rule_at.clone() } else { format!("{rule_at}/{field}") };
            found.push(Diagnostic::new(code, crate::surface::locate_key(tree, &pointer), &pointer, message));
        };
        if doc.calls.is_none() && doc.concurrent.is_none() && doc.output_bytes.is_none() {
            let why = "this quota rule limits nothing: give it `calls`, `concurrent` or `output_bytes`".to_owned();
            invalid("", crate::codes::QUOTA_RULE_INVALID, why);
        }
        if let Some(mount) = doc.mount.as_deref().filter(|m| !mounts.contains_key(*m) && !unknown_mounts.contains_key(*m)) {
            invalid("mount", crate::codes::QUOTA_MOUNT_UNKNOWN, format!("the composition has no mount `{mount}`"));
        }
        let tools = match doc.tools.as_deref().map(Glob::new) {
            Some(Ok(glob)) => Some(glob.compile_matcher()),
            Some(Err(e)) => {
                invalid("tools", crate::codes::QUOTA_RULE_INVALID, format!("`tools` is not a valid glob: {e}"));
                None
            }
            None => None,
        };
        if found.is_empty() {
            rules.push(Arc::new(crate::quota::QuotaRule::new(doc, rule_at, tools)));
        }
        out.extend(found);
    }
    rules
}

/// An agent's `disclosure` as written at `at`, resolved; `None` when it is not written,
/// or fails the schema (reported there) or has a glob that does not parse.
fn disclosure_rules(
    node: Option<&Node>,
    at: &str,
    any_auto_mount: bool,
    tree: &Node,
    out: &mut Vec<Diagnostic>,
) -> Option<crate::disclosure::Rules> {
    use serde::Deserialize;
    let written = crate::model::Disclosure::deserialize(node?).ok()?;
    if let crate::model::Disclosure::Rules(rules) = &written
        && rules.above.is_some()
        && rules.mode != crate::model::DisclosureMode::Auto
        && !any_auto_mount
    {
        let pointer = format!("{at}/above");
        let message = "`above` is read only by `mode: auto`: this agent's tools are disclosed by their mode alone";
        out.push(Diagnostic::new(crate::codes::DISCLOSURE_ABOVE_UNUSED, crate::surface::locate_key(tree, &pointer), &pointer, message));
    }
    match crate::disclosure::Rules::new(&written) {
        Ok(rules) => Some(rules),
        Err((i, message)) => {
            let pointer = format!("{at}/always/{i}");
            out.push(Diagnostic::new(crate::codes::DISCLOSURE_GLOB_INVALID, locate(tree, &pointer), &pointer, message));
            None
        }
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
    /// `quota` rules on the chain so far, the root's first.
    quota: Vec<Arc<crate::quota::QuotaRule>>,
    /// The nearest `disclosure` on the chain so far.
    disclosure: crate::disclosure::Rules,
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
        AgentState {
            fixed,
            dynamic: Vec::new(),
            offers: OfferRules::default(),
            listed: BTreeMap::new(),
            depth: 1,
            quota: Vec::new(),
            disclosure: Default::default(),
        }
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

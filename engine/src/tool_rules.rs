//! An agent's tools: its fixed tools' settings, and the rules of its `tools` maps over
//! dynamic tools (`mcp__<server-glob>__<tool-glob>`), applied in order, the last match
//! deciding a tool's visibility and each map its budgets.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet};
use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use serde_json::Value as Json;

use crate::model::Budgets;
use crate::yaml::{Node, Value};

/// One agent's tools: fixed tools (`None` = not visible) and rules over dynamic tools.
#[derive(Clone, Debug, Default)]
pub struct ToolTable {
    pub fixed: BTreeMap<&'static str, Option<Json>>,
    /// The `tools` maps that apply, root agent first; later rules win. Shared, not copied, between agents.
    pub dynamic: Vec<Arc<Vec<DynamicRule>>>,
    /// Dynamic-tool servers whose every tool a rule hides (`mcp__x__*: false` and the like).
    hidden_servers: BTreeSet<String>,
}

impl ToolTable {
    /// An agent's table: its fixed tools and its rules, no server hidden yet (`hide_servers`).
    pub(crate) fn new(fixed: BTreeMap<&'static str, Option<Json>>, dynamic: Vec<Arc<Vec<DynamicRule>>>) -> ToolTable {
        ToolTable { fixed, dynamic, hidden_servers: BTreeSet::new() }
    }

    /// Whether a rule hides every tool of dynamic-tool server `id`.
    pub(crate) fn hides_server(&self, id: &str) -> bool {
        self.hidden_servers.contains(id)
    }

    /// Every rule over dynamic tools, in the order they apply.
    pub fn rules(&self) -> impl Iterator<Item = &DynamicRule> {
        self.dynamic.iter().flat_map(|layer| layer.iter())
    }

    /// The budgets of dynamic tool `tool` of server `server` (the name after
    /// `<prefix><server>__`), or `None` when a rule hides it. Tools are visible
    /// unless hidden; the last matching rule decides visibility, and each map
    /// over it sets the budgets it names.
    pub fn dynamic_settings(&self, server: &str, tool: &str, defaults: &Budgets) -> Option<Budgets> {
        let mut budgets = defaults.clone();
        let mut visible = true;
        for rule in self.rules().filter(|r| r.server_matches(server) && r.tool_matches(tool)) {
            visible = rule.shows;
            if let Some(over) = &rule.budgets {
                budgets.timeout = over.timeout.or(budgets.timeout);
                budgets.max_output_chars = over.max_output_chars.or(budgets.max_output_chars);
                budgets.approve = over.approve.or(budgets.approve);
            }
        }
        visible.then_some(budgets)
    }

    /// Works out which servers are hidden whole, once: the last rule covering all
    /// of a server's tools hides them when it is `false`, unless a later rule
    /// enables some of them again (`mcp__*: false` then `mcp__ev__echo: true`).
    pub(crate) fn hide_servers<'a>(&mut self, servers: impl Iterator<Item = &'a str>) {
        // Only a rule over every tool of a server can hide it whole; most tables have none.
        if !self.rules().any(|rule| rule.whole_server && !rule.shows) {
            self.hidden_servers = BTreeSet::new();
            return;
        }
        let mut whole_literal: HashMap<&str, (usize, bool)> = HashMap::new();
        let mut whole_globs: Vec<(usize, &DynamicRule)> = Vec::new();
        let mut enable_literal: HashMap<&str, usize> = HashMap::new();
        let mut enable_globs: Vec<(usize, &DynamicRule)> = Vec::new();
        for (position, rule) in self.rules().enumerate() {
            let enables = rule.shows;
            match (rule.server.literal(&rule.pattern), rule.whole_server) {
                (Some(server), true) => {
                    whole_literal.insert(server, (position, !enables));
                }
                (None, true) => whole_globs.push((position, rule)),
                _ => {}
            }
            if enables {
                match rule.server.literal(&rule.pattern) {
                    Some(server) => {
                        enable_literal.insert(server, position);
                    }
                    None => enable_globs.push((position, rule)),
                }
            }
        }
        let mut hidden = BTreeSet::new();
        for server in servers {
            let by_name = whole_literal.get(server).copied();
            let by_glob = whole_globs.iter().rev().find(|(_, r)| r.server_matches(server)).map(|(p, r)| (*p, !r.shows));
            let last = match (by_name, by_glob) {
                (Some(a), Some(b)) => Some(if a.0 > b.0 { a } else { b }),
                (a, b) => a.or(b),
            };
            let Some((position, true)) = last else { continue };
            let enabled_later = enable_literal.get(server).is_some_and(|p| *p > position)
                || enable_globs.iter().any(|(p, r)| *p > position && r.server_matches(server));
            if !enabled_later {
                hidden.insert(server.to_owned());
            }
        }
        self.hidden_servers = hidden;
    }
}

#[derive(Clone, Debug)]
pub struct DynamicRule {
    pub pattern: String,
    /// `false` hides what the rule matches; `true` and a budgets map show it.
    pub shows: bool,
    server: Pattern,
    tool: Pattern,
    /// The budgets a map value sets (a map that failed the schema sets none).
    budgets: Option<Budgets>,
    /// The rule names every tool of the servers it matches (`mcp__x__*`).
    whole_server: bool,
}

impl DynamicRule {
    /// The rule's value as the plan records it: `false`, `true`, or the budgets it sets.
    pub fn value(&self) -> Json {
        match &self.budgets {
            Some(budgets) => serde_json::to_value(budgets).expect("serializable"),
            None => Json::Bool(self.shows),
        }
    }

    /// Whether the rule is about tools of the dynamic-tool server `server` (a mount id).
    pub fn server_matches(&self, server: &str) -> bool {
        self.server.is_match(&self.pattern, server)
    }

    fn tool_matches(&self, tool: &str) -> bool {
        self.tool.is_match(&self.pattern, tool)
    }
}

/// A glob, kept as plain text when it has no metacharacters, or as a prefix when its
/// only one is a trailing `*`: most `tools` keys name one server and one tool or every
/// tool that starts so, and compiling thousands of matchers would dominate validation.
/// Any other glob is parsed when read (its syntax is checked then) and compiled only
/// when it is first matched. The text is a range of the rule's `pattern`, not a copy.
#[derive(Clone, Debug)]
enum Pattern {
    Literal(std::ops::Range<usize>),
    /// `<literal>*`: every text that starts with the literal (globset's `*` matches any
    /// characters, `/` included, as `Glob::new` reads it).
    Prefix(std::ops::Range<usize>),
    Glob(Glob, std::sync::OnceLock<GlobMatcher>),
}

/// Whether `text` uses glob syntax; a text without it matches only itself.
pub fn is_glob(text: &str) -> bool {
    text.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

impl Pattern {
    /// The pattern written at `at` in `key`.
    fn new(key: &str, at: std::ops::Range<usize>) -> Result<Pattern, globset::Error> {
        let text = &key[at.clone()];
        if !is_glob(text) {
            return Ok(Pattern::Literal(at));
        }
        match text.strip_suffix('*') {
            Some(prefix) if !is_glob(prefix) => Ok(Pattern::Prefix(at.start..at.end - 1)),
            _ => Ok(Pattern::Glob(Glob::new(text)?, std::sync::OnceLock::new())),
        }
    }

    /// The literal text, read from the key it was written in.
    fn literal<'k>(&self, key: &'k str) -> Option<&'k str> {
        match self {
            Pattern::Literal(at) => Some(&key[at.clone()]),
            Pattern::Prefix(_) | Pattern::Glob(..) => None,
        }
    }

    fn is_match(&self, key: &str, s: &str) -> bool {
        match self {
            Pattern::Literal(at) => &key[at.clone()] == s,
            Pattern::Prefix(at) => s.starts_with(&key[at.clone()]),
            Pattern::Glob(glob, matcher) => matcher.get_or_init(|| glob.compile_matcher()).is_match(s),
        }
    }
}

/// A `tools` key over dynamic tools: `<prefix><server-glob>__<tool-glob>`.
pub(crate) fn dynamic_rule(
    key: &str,
    value: &Node,
    prefixes: &[(&'static str, HashSet<&str>)],
) -> Result<DynamicRule, (crate::codes::Code, String)> {
    let Some((prefix, ids)) = prefixes.iter().find(|(p, _)| key.starts_with(p)) else {
        return Err((crate::codes::TOOLS_UNKNOWN_KEY, format!("`{key}` names no tool")));
    };
    let rest = &key[prefix.len()..];
    let start = prefix.len();
    // The server and tool parts as ranges of the key; `mcp__x*` alone means every tool.
    // A byte search: `str::find` with a pattern sets up a two-way searcher per key.
    let (server_at, tool_at) = match rest.as_bytes().windows(2).position(|w| w == b"__") {
        Some(i) => (start..start + i, Some(start + i + 2..key.len())),
        None if rest.ends_with('*') => (start..key.len(), None),
        None => return Err((crate::codes::TOOLS_UNKNOWN_KEY, format!("`{key}` names no tool: MCP tools are `{prefix}<server>__<tool>`"))),
    };
    let server = &key[server_at.clone()];
    let invalid = |e: globset::Error| (crate::codes::TOOLS_INVALID_GLOB, format!("`{key}` is not a valid glob: {e}"));
    let server_matcher = Pattern::new(key, server_at).map_err(invalid)?;
    let matches_a_mount = match &server_matcher {
        Pattern::Literal(_) => ids.contains(server),
        pattern => ids.iter().any(|id| pattern.is_match(key, id)),
    };
    if !matches_a_mount {
        return Err((
            crate::codes::TOOLS_UNKNOWN_KEY,
            if is_glob(server) {
                format!("`{key}` matches no MCP mount")
            } else {
                format!("`{key}` names MCP server `{server}`, but no `{}` mount has that id", prefix.trim_end_matches('_'))
            },
        ));
    }
    let budgets = value.as_map().and_then(|_| Budgets::deserialize(value).ok());
    let whole_server = tool_at.as_ref().is_none_or(|at| &key[at.clone()] == "*");
    let tool_matcher = match tool_at {
        Some(at) => Pattern::new(key, at).map_err(invalid)?,
        None => Pattern::Prefix(key.len()..key.len()),
    };
    Ok(DynamicRule {
        pattern: key.to_owned(),
        shows: value.value != Value::Bool(false),
        server: server_matcher,
        tool: tool_matcher,
        budgets,
        whole_server,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pattern read as a literal or a prefix matches exactly what globset's compiled
    /// glob of the same text matches; only other globs are kept to be compiled.
    #[test]
    fn literals_and_prefixes_match_as_their_compiled_globs_do() {
        let texts = ["", "read", "read_file", "rea", "Read", "read/x", "x_read", "re*d", "read*", "ü", "üx"];
        let patterns = [
            ("read", "literal"),
            ("re", "literal"),
            ("read*", "prefix"),
            ("*", "prefix"),
            ("ü*", "prefix"),
            ("read_f*", "prefix"),
            ("re*d", "glob"),
            ("r?ad", "glob"),
            ("[rw]ead*", "glob"),
            ("{read,write}", "glob"),
            ("read\\*", "glob"),
        ];
        for (pattern, expected_kind) in patterns {
            let parsed = Pattern::new(pattern, 0..pattern.len()).unwrap();
            let kind = match &parsed {
                Pattern::Literal(_) => "literal",
                Pattern::Prefix(_) => "prefix",
                Pattern::Glob(..) => "glob",
            };
            assert_eq!(kind, expected_kind, "{pattern}");
            let compiled = Glob::new(pattern).unwrap().compile_matcher();
            for text in texts {
                assert_eq!(parsed.is_match(pattern, text), compiled.is_match(text), "`{pattern}` against `{text}`");
            }
        }
        assert!(Pattern::new("[a", 0..2).is_err(), "a glob's syntax is checked when it is read");
    }
}

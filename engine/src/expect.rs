//! `seam test`: what a composition means, written down as cases and checked. A
//! test file (`*.test.yaml`, beside the compositions) holds cases; a case names a
//! composition (a path, or one written in the case that may `extends` one), the
//! environment it is checked in, what its MCP servers offer (fixtures), and per
//! agent what it must be served. A case is checked against a generation: one
//! rehearsed without starting any server (`Deployment::rehearse`), or with
//! `--live` the one a start builds.
//!
//! An MCP mount with no fixture in the case is taken to offer the tools the case's
//! expectations name exactly under its prefix (`mcp__<mount>__<tool>`): whether such
//! a tool is served then depends on the composition's rules only. A glob matches
//! what the fixtures (and those names) give.

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value as Json, json};

use crate::deploy::{Generation, Source};
use crate::diagnostic::{Diagnostic, pointer};
use crate::surface::{Exposure, locate};
use crate::yaml::Node;

/// A file of cases for `seam test`: `NAME.test.yaml`, with a modeline naming
/// `schemas/composition-test.schema.json`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "seam composition tests")]
pub struct TestFile {
    /// The format version of test files: 1.
    #[schemars(range(min = 1, max = 1))]
    pub seam_test: u32,
    /// The cases, by name.
    pub cases: IndexMap<String, Case>,
}

/// One case: a composition, its environment, what its servers offer, and what each agent must be served.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The composition: a path relative to this file, or a composition written here
    /// (which may `extends` one, relative to this file).
    pub composition: CompositionRef,
    /// Variables set while the case is checked (not with `--live`, whose servers run in
    /// seam's own process: set them around `seam test --live` instead).
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[^=\\u0000]+$" }, "additionalProperties" = { "type": "string", "pattern": "^[^\\u0000]*$" }))]
    pub env: BTreeMap<String, String>,
    /// Per MCP mount id, the tools its server offers: names, or tool objects as MCP lists them.
    #[serde(default)]
    pub tools: BTreeMap<String, Vec<Json>>,
    /// Per MCP mount id, the prompts its server offers: names, or MCP prompt objects.
    #[serde(default)]
    pub prompts: BTreeMap<String, Vec<Json>>,
    /// Per MCP mount id, the resources its server offers: URIs, or MCP resource objects.
    #[serde(default)]
    pub resources: BTreeMap<String, Vec<Json>>,
    /// Per MCP mount id, the resource templates its server offers: URI templates, or MCP resource template objects.
    #[serde(default)]
    pub resource_templates: BTreeMap<String, Vec<Json>>,
    /// What each agent must be served.
    pub agents: IndexMap<String, Expectations>,
}

/// A composition by path, or written in the case.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CompositionRef {
    Path(String),
    Inline(serde_json::Map<String, Json>),
}

/// What one agent must be served.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    /// Its tools, by name (globs allowed in `includes` and `excludes`): those it lists and
    /// those its `disclosure` defers, which it can find and call all the same.
    pub tools: Option<Names>,
    /// Per tool, how it is served: by which mount (or service), with which timeout and cap.
    #[serde(default)]
    pub tool: IndexMap<String, ToolExpectation>,
    /// Per fixed tool that picks a provider (`web_search`, `web_fetch`): the mount id a
    /// call uses now, or `{ error: CODE }`, the error a call gets (its code, or the code
    /// of a reason it gives, such as `WEB_PROVIDER_CREDENTIAL_MISSING`).
    #[serde(default)]
    pub providers: IndexMap<String, ProviderExpectation>,
    /// Its prompts, by name as clients see them.
    pub prompts: Option<Names>,
    /// Its resources and resource templates, by URI (or URI template).
    pub resources: Option<Names>,
    /// Its skills, by name.
    pub skills: Option<Names>,
    /// The most tokens its tool list may cost, estimated in o200k_base (`crate::tokens`).
    #[schemars(range(min = 1))]
    pub max_catalog_tokens: Option<u64>,
}

/// A set of names: exactly these, or at least `includes` and none of `excludes`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Names {
    /// Exactly these names, no more and no fewer.
    pub exactly: Option<Vec<String>>,
    /// Each of these is served; a glob (`mcp__fs__read*`) must match at least one.
    #[serde(default)]
    pub includes: Vec<String>,
    /// None of these is served; a glob must match none.
    #[serde(default)]
    pub excludes: Vec<String>,
}

/// How one tool is served.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolExpectation {
    /// The mount id that serves it, or for a fixed tool its service (`web`, `lsp`, `skills`).
    pub served_by: Option<String>,
    /// Its resolved timeout (`30s`).
    pub timeout: Option<crate::units::Duration>,
    /// Its resolved cap on a result's characters.
    pub max_output_chars: Option<u64>,
}

/// The provider a call uses, or the error it gets.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProviderExpectation {
    Mount(String),
    Error {
        /// A code of the error a call gets.
        error: String,
    },
}

/// The test file's JSON Schema, as published at `schemas/composition-test.schema.json`.
pub fn schema() -> Json {
    let mut schema = serde_json::to_value(schemars::schema_for!(TestFile)).expect("a schema serializes");
    crate::schema::strip_integer_formats(&mut schema);
    schema
}

/// A test file read: its cases, or the diagnostics of why it does not read as one.
pub fn read(tree: &Node) -> Result<TestFile, Vec<Diagnostic>> {
    // Compiled once for the process: `seam test DIR` reads many files.
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| jsonschema::validator_for(&schema()).expect("the test schema compiles"));
    let instance = tree.to_json();
    let diagnostics: Vec<Diagnostic> = validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            Diagnostic::new(crate::codes::TEST_FILE_INVALID, locate(tree, &at), &at, e.to_string())
        })
        .collect();
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    TestFile::deserialize(tree).map_err(|e| vec![Diagnostic::new(crate::codes::TEST_FILE_INVALID, tree.span, "", e.to_string())])
}

/// What a case gives the rehearsal of its composition (`fixtures`).
#[derive(Debug, Default)]
pub struct Fixtures {
    /// Per MCP mount id, what its server offers: the case's fixtures, else the tools the
    /// case's expectations name exactly under the mount's prefix.
    pub offered: BTreeMap<String, Json>,
    /// The MCP mounts with no `tools` fixture, each with the prefix of its tools' names
    /// (`None`: it keeps its server's names): a glob over their tools cannot be checked.
    pub unfixtured: Vec<(String, Option<String>)>,
}

/// The case's fixtures for the composition's MCP mounts (`mounts`: each mount's id and
/// how its tools are named); a fixture for a mount that is not one is a located error.
pub fn fixtures(case: &Case, mounts: &[(String, Exposure)], tree: &Node, at: &str) -> Result<Fixtures, Vec<Diagnostic>> {
    let dynamic = |id: &str| mounts.iter().any(|(m, e)| m == id && matches!(e, Exposure::Dynamic { .. }));
    let mut strays = Vec::new();
    let given = [
        ("tools", &case.tools),
        ("prompts", &case.prompts),
        ("resources", &case.resources),
        ("resource_templates", &case.resource_templates),
    ];
    for (key, lists) in given {
        for id in lists.keys().filter(|id| !dynamic(id)) {
            let pointer = format!("{at}/{key}/{}", crate::diagnostic::escape_pointer_segment(id));
            let message = format!("`{id}` is no mount of the composition whose server gives its {key} (an MCP mount)");
            strays.push(Diagnostic::new(crate::codes::TEST_FIXTURE_INVALID, crate::surface::locate_key(tree, &pointer), pointer, message));
        }
    }
    if !strays.is_empty() {
        return Err(strays);
    }
    let mut named: BTreeSet<&str> = BTreeSet::new();
    for e in case.agents.values() {
        for names in [&e.tools].into_iter().flatten() {
            named.extend(names.exactly.iter().flatten().chain(&names.includes).chain(&names.excludes).map(String::as_str));
        }
        named.extend(e.tool.keys().map(String::as_str));
    }
    let mut out = Fixtures::default();
    for (id, exposure) in mounts {
        let Exposure::Dynamic { prefix, raw } = exposure else { continue };
        let list = |lists: &BTreeMap<String, Vec<Json>>| Json::Array(lists.get(id).cloned().unwrap_or_default());
        let tools = match case.tools.get(id) {
            Some(tools) => Json::Array(tools.clone()),
            None => {
                out.unfixtured.push((id.clone(), (!raw).then(|| prefix.clone())));
                let assumed = named.iter().filter(|n| !crate::tool_rules::is_glob(n)).filter_map(|n| n.strip_prefix(prefix.as_str()));
                if *raw { json!([]) } else { Json::Array(assumed.map(Json::from).collect()) }
            }
        };
        let offered = json!({
            "tools": tools,
            "prompts": list(&case.prompts),
            "resources": list(&case.resources),
            "resource_templates": list(&case.resource_templates),
        });
        out.offered.insert(id.clone(), offered);
    }
    Ok(out)
}

/// The first fixture-less mount whose tools glob `pattern` could match.
fn unchecked_by<'u>(pattern: &str, unfixtured: &'u [(String, Option<String>)]) -> Option<&'u str> {
    let literal = &pattern[..pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len())];
    unfixtured
        .iter()
        .find(|(_, prefix)| prefix.as_deref().is_none_or(|p| literal.starts_with(p) || p.starts_with(literal)))
        .map(|(id, _)| id.as_str())
}

/// What one case found: its failed expectations (each located in the test file),
/// and what each agent it names is served.
#[derive(Debug, Default)]
pub struct Verdict {
    pub failures: Vec<Diagnostic>,
    pub agents: BTreeMap<String, Served>,
}

/// What an agent is served, as a report states it whether or not the case passed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Served {
    pub tools: usize,
    /// Its tool list's estimated tokens (`crate::tokens`).
    pub catalog_tokens: usize,
    /// The tools its `disclosure` defers (found with `tool_search`, not listed).
    pub deferred: usize,
    /// Its tool list's estimated tokens with every tool listed (`disclosure: all`).
    pub catalog_tokens_all: usize,
}

/// Checks case `case` (at pointer `at` in the test file `tree`) against `generation`.
/// `unfixtured`: the MCP mounts whose tools a case could not know (`Fixtures`; none when
/// the servers run).
pub async fn check(generation: &Generation, case: &Case, unfixtured: &[(String, Option<String>)], tree: &Node, at: &str) -> Verdict {
    let mut verdict = Verdict::default();
    for (agent, expected) in &case.agents {
        let base = format!("{at}/agents/{}", crate::diagnostic::escape_pointer_segment(agent));
        let mut fail = |pointer: String, message: String| {
            verdict.failures.push(Diagnostic::new(crate::codes::TEST_EXPECTATION_FAILED, locate(tree, &pointer), pointer, message));
        };
        let Some(view) = generation.view(agent, &[]).await else {
            let known: Vec<&str> = generation.resolved.agents.keys().map(String::as_str).collect();
            let message = format!("the composition has no agent `{agent}` (it has {})", known.join(", "));
            // At the agent's name, as a typo in it would be.
            let at = crate::surface::locate_key(tree, &base);
            verdict.failures.push(Diagnostic::new(crate::codes::TEST_EXPECTATION_FAILED, at, base, message));
            continue;
        };
        let catalog = generation.catalog(agent).unwrap_or_default();
        let cost = generation.catalog_cost(agent).expect("the agent has a view");
        let served = Served {
            tools: view.tools.len(),
            catalog_tokens: view.catalog_tokens(),
            deferred: cost.deferred,
            catalog_tokens_all: cost.tokens_all,
        };
        // What it is served: what it lists, and what it can find and call (deferred).
        let deferred = catalog.iter().filter(|e| e.deferral != crate::disclosure::Deferral::Never).map(|e| e.spec.name.as_str());
        let mut tool_names: Vec<&str> = view.tools.iter().map(|t| t.name.as_str()).chain(deferred).collect();
        tool_names.sort_unstable();
        if let Some(names) = &expected.tools {
            let base = format!("{base}/tools");
            let globs = names.includes.iter().enumerate().map(|(i, p)| (format!("{base}/includes/{i}"), p));
            let globs = globs.chain(names.excludes.iter().enumerate().map(|(i, p)| (format!("{base}/excludes/{i}"), p)));
            let mut unchecked = false;
            for (pointer, pattern) in globs.filter(|(_, p)| crate::tool_rules::is_glob(p)) {
                if let Some(id) = unchecked_by(pattern, unfixtured) {
                    unchecked = true;
                    let why = format!(
                        "`{pattern}` may match tools of mount `{id}`, whose server's tools this case does not give: \
                         give them (`tools: {{ {id}: [...] }}`), or run `seam test --live`"
                    );
                    fail(pointer, why);
                }
            }
            if !unchecked {
                check_names(&mut fail, &base, agent, "tool", names, &tool_names);
            }
        }
        for (tool, e) in &expected.tool {
            let pointer = format!("{base}/tool/{}", crate::diagnostic::escape_pointer_segment(tool));
            let Some(entry) = catalog.iter().find(|c| c.spec.name == *tool) else {
                fail(pointer, format!("agent `{agent}` is not served `{tool}`"));
                continue;
            };
            if let Some(by) = &e.served_by {
                let actual = match &entry.source {
                    Source::Mount(id) => id.as_str(),
                    Source::Service(service) => service,
                    Source::Seam => "seam",
                };
                if actual != by {
                    fail(format!("{pointer}/served_by"), format!("`{tool}` is served to agent `{agent}` by `{actual}`, not `{by}`"));
                }
            }
            let settings = generation.resolved.agents[agent].tools.fixed.get(tool.as_str()).cloned().flatten();
            if let Some(timeout) = e.timeout {
                let actual =
                    entry.timeout.or_else(|| settings.as_ref().and_then(|s| crate::units::Duration::deserialize(&s["timeout"]).ok()));
                if actual != Some(timeout) {
                    let actual = actual.map_or("none".to_owned(), |d| d.to_string());
                    fail(format!("{pointer}/timeout"), format!("`{tool}`'s timeout for agent `{agent}` is {actual}, not {timeout}"));
                }
            }
            if let Some(cap) = e.max_output_chars {
                let actual = entry.max_output_chars.or_else(|| settings.as_ref().and_then(|s| s["max_output_chars"].as_u64()));
                if actual != Some(cap) {
                    let actual = actual.map_or("none".to_owned(), |c| c.to_string());
                    fail(
                        format!("{pointer}/max_output_chars"),
                        format!("`{tool}`'s max_output_chars for agent `{agent}` is {actual}, not {cap}"),
                    );
                }
            }
        }
        for (tool, e) in &expected.providers {
            let pointer = format!("{base}/providers/{}", crate::diagnostic::escape_pointer_segment(tool));
            let Some(selection) = generation.selection(agent, tool) else {
                fail(pointer, format!("agent `{agent}` is not served `{tool}`, or `{tool}` picks no provider"));
                continue;
            };
            match (e, selection) {
                (ProviderExpectation::Mount(want), Ok(got)) if *want == got => {}
                (ProviderExpectation::Mount(want), Ok(got)) => {
                    fail(pointer, format!("`{tool}` of agent `{agent}` uses provider `{got}`, not `{want}`"));
                }
                (ProviderExpectation::Mount(want), Err(e)) => {
                    fail(
                        pointer,
                        format!("`{tool}` of agent `{agent}` would use no provider, not `{want}`: {}: {}", e.codes[0], e.message),
                    );
                }
                (ProviderExpectation::Error { error }, Ok(got)) => {
                    fail(format!("{pointer}/error"), format!("`{tool}` of agent `{agent}` uses provider `{got}`: no {error}"));
                }
                (ProviderExpectation::Error { error }, Err(e)) if e.codes.iter().any(|c| c.code == error) => {}
                (ProviderExpectation::Error { error }, Err(e)) => {
                    let codes: Vec<&str> = e.codes.iter().map(|c| c.code).collect();
                    fail(
                        format!("{pointer}/error"),
                        format!("`{tool}` of agent `{agent}` fails with {}, not {error}: {}", codes.join(" / "), e.message),
                    );
                }
            }
        }
        if let Some(names) = &expected.prompts {
            let mut prompts: Vec<&str> = view.offered.prompts.iter().map(|p| p.key.as_str()).collect();
            prompts.extend(view.prompts.iter().map(|p| &*p.name));
            check_names(&mut fail, &format!("{base}/prompts"), agent, "prompt", names, &prompts);
        }
        if let Some(names) = &expected.resources {
            let uris: Vec<&str> = view.offered.resources.iter().chain(&view.offered.templates).map(|r| r.key.as_str()).collect();
            check_names(&mut fail, &format!("{base}/resources"), agent, "resource", names, &uris);
        }
        if let Some(names) = &expected.skills {
            let skills = generation.skills(agent, &[], None).await;
            let skills: Vec<&str> = skills.iter().filter_map(|s| s["frontmatter"]["name"].as_str()).collect();
            check_names(&mut fail, &format!("{base}/skills"), agent, "skill", names, &skills);
        }
        if let Some(budget) = expected.max_catalog_tokens
            && served.catalog_tokens as u64 > budget
        {
            fail(
                format!("{base}/max_catalog_tokens"),
                format!(
                    "agent `{agent}`'s tool list costs about {} tokens ({} estimate), over its budget of {budget}",
                    served.catalog_tokens,
                    crate::tokens::ENCODING
                ),
            );
        }
        verdict.agents.insert(agent.clone(), served);
    }
    seam_sort(&mut verdict.failures);
    verdict
}

/// Failures in the order of the file.
fn seam_sort(failures: &mut [Diagnostic]) {
    failures.sort_by_key(|d| (d.span.line, d.span.column));
}

/// Checks `names` against what is `served`: each failure at the entry of the list that fails.
fn check_names(fail: &mut impl FnMut(String, String), base: &str, agent: &str, what: &str, names: &Names, served: &[&str]) {
    // A name is itself first: a URI template (`file:///{path}`) has glob characters.
    let matches = |pattern: &str, name: &str| {
        pattern == name
            || (crate::tool_rules::is_glob(pattern) && globset::Glob::new(pattern).is_ok_and(|g| g.compile_matcher().is_match(name)))
    };
    if let Some(exactly) = &names.exactly {
        for (i, name) in exactly.iter().enumerate() {
            if !served.contains(&name.as_str()) {
                fail(format!("{base}/exactly/{i}"), format!("agent `{agent}` is not served {what} `{name}`"));
            }
        }
        let extra: Vec<&str> = served.iter().copied().filter(|s| !exactly.iter().any(|n| n == s)).collect();
        if !extra.is_empty() {
            fail(format!("{base}/exactly"), format!("agent `{agent}` is also served {what}s {}", quoted(&extra)));
        }
    }
    for (i, pattern) in names.includes.iter().enumerate() {
        if !served.iter().any(|s| matches(pattern, s)) {
            fail(
                format!("{base}/includes/{i}"),
                format!("agent `{agent}` is served no {what} `{pattern}` (it is served {})", quoted(served)),
            );
        }
    }
    for (i, pattern) in names.excludes.iter().enumerate() {
        let hit: Vec<&str> = served.iter().copied().filter(|s| matches(pattern, s)).collect();
        if !hit.is_empty() {
            fail(format!("{base}/excludes/{i}"), format!("agent `{agent}` is served {what} {}, which `{pattern}` excludes", quoted(&hit)));
        }
    }
}

fn quoted(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// The pointer of case `name` in a test file.
pub fn case_pointer(name: &str) -> String {
    pointer(["cases", name])
}

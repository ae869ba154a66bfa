//! Semantics of the resolved composition, checked through the engine's API.

use std::collections::HashMap;
use std::path::Path;

use seam_engine::resolve::Resolved;
use serde_json::json;

fn resolve(text: &str) -> Resolved {
    let checked = seam::engine().check_bytes(Path::new("/nonexistent/c.yaml"), text.as_bytes().to_vec(), &HashMap::new());
    // Tool tables are checked here without providers: that they would serve nobody is beside the point.
    let found: Vec<_> = checked.diagnostics.iter().filter(|d| d.code != "TOOL_UNSERVED").collect();
    assert!(found.is_empty(), "{found:#?}");
    checked.resolved.expect("resolved")
}

const EVERYTHING: &str = "seam: 1\nmounts:\n  ev: { kind: mcp.stdio, command: x }\n  fs: { kind: mcp.stdio, command: y }\n";

#[test]
fn a_later_rule_for_one_tool_makes_a_hidden_server_visible_again() {
    let r = resolve(&format!("{EVERYTHING}tools:\n  \"mcp__*\": false\n  mcp__ev__echo: true\n"));
    assert_eq!(r.visible_agents("ev"), ["default"]);
    assert!(r.visible_agents("fs").is_empty());
}

#[test]
fn disabling_a_tool_keeps_its_settings_for_a_descendant_that_enables_it() {
    let r = resolve(
        "seam: 1\ntools: { lsp: { max_locations: 7 } }\nagents:\n  a: { tools: { lsp: false } }\n  b: { parent: a, tools: { lsp: { max_result_chars: 9 } } }\n",
    );
    assert_eq!(r.agents["a"].tools.fixed["lsp"], None);
    let b = r.agents["b"].tools.fixed["lsp"].clone().expect("enabled for b");
    assert_eq!((b["max_locations"].clone(), b["max_result_chars"].clone()), (json!(7), json!(9)));
}

#[test]
fn budgets_sit_below_tool_entries_and_above_built_in_defaults() {
    let r = resolve("seam: 1\nbudgets: { timeout: 5s }\ntools: { lsp: true, web_search: { timeout: 60s } }\n");
    let default = &r.agents["default"].tools.fixed;
    assert_eq!(default["lsp"].as_ref().unwrap()["timeout"], json!("5s"));
    assert_eq!(default["web_search"].as_ref().unwrap()["timeout"], json!("60s"));
    assert_eq!(default["skill"], None, "fixed tools are visible only where enabled");
}

#[test]
fn a_long_chain_of_agents_inherits_from_the_root() {
    let mut text = String::from("seam: 1\ntools: { skill: { catalog_description_max: 42 } }\nagents:\n  a0: {}\n");
    for i in 1..300 {
        text.push_str(&format!("  a{i}: {{ parent: a{} }}\n", i - 1));
    }
    let r = resolve(&text);
    assert_eq!(r.agents["a299"].tools.fixed["skill"].as_ref().unwrap()["catalog_description_max"], json!(42));
    assert_eq!(r.agents["a299"].parent.as_deref(), Some("a298"));
}

#[test]
fn scoped_mounts_are_visible_to_their_agent_and_its_descendants_only() {
    let r = resolve(&format!("{EVERYTHING}agents:\n  reviewer: {{ mounts: [fs] }}\n  junior: {{ parent: reviewer }}\n  other: {{}}\n"));
    assert_eq!(r.visible_agents("fs"), ["junior", "reviewer"]);
    assert_eq!(r.visible_agents("ev"), ["default", "junior", "other", "reviewer"]);
}

#[test]
fn null_removes_a_key_with_or_without_extends() {
    let r = resolve("seam: 1\nbudgets: null\ntools: { lsp: null, skill: true }\n");
    assert_eq!(r.agents["default"].tools.fixed["lsp"], None);
    assert!(r.agents["default"].tools.fixed["skill"].is_some());
}

#[test]
fn a_budget_change_restarts_the_agents() {
    let plan = |text: &str| {
        let c = seam::engine().check_bytes(Path::new("/nonexistent/c.yaml"), text.as_bytes().to_vec(), &HashMap::new());
        c.plan().expect("valid")
    };
    let old = plan(&format!("{EVERYTHING}budgets: {{ timeout: 30s }}\n"));
    let new = plan(&format!("{EVERYTHING}budgets: {{ timeout: 5s }}\n"));
    let diff = seam_engine::diff::Diff::between(Some(&old), &new);
    assert_eq!(diff.change, ["agent:default"]);
    assert!(diff.keep.contains(&"mount:ev".to_owned()));
}

/// A `tools` key that names no tool says what was likely meant, or which names there are.
#[test]
fn an_unknown_tools_key_comes_with_help() {
    let help = |text: &str| {
        let checked = seam::engine().check_bytes(Path::new("/nonexistent/c.yaml"), text.as_bytes().to_vec(), &HashMap::new());
        let d = checked.diagnostics.iter().find(|d| d.code == "TOOLS_UNKNOWN_KEY").expect("TOOLS_UNKNOWN_KEY");
        d.help.clone().unwrap_or_default()
    };
    assert_eq!(help("seam: 1\ntools:\n  web_serch: true\n"), "did you mean `web_search`?");
    assert!(help("seam: 1\ntools:\n  zzzzzz: true\n").starts_with("fixed tools: "));
}

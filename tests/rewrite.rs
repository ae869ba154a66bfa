//! Rewriting a server's tools (`rewrite` on an MCP mount): server-everything behind seam,
//! called by the official TypeScript SDK's client, sees the fixed and default arguments
//! arrive, and the client never sees the arguments seam fills in.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{SdkClient, peer_bin, scratch, seam_bin, write_atomically};

fn composition(file: &Path, rewrite: &str) {
    let text = format!(
        "seam: 1\nmounts:\n  everything:\n    kind: mcp.stdio\n    command: {}\n    args: [stdio]\n    rewrite:\n{rewrite}\
         agents:\n  reviewer:\n    parent: default\n    tools: {{ \"mcp__everything__*\": false, \"mcp__everything__get-sum\": true }}\n",
        json!(peer_bin("mcp-server-everything"))
    );
    write_atomically(file, &text);
}

const REWRITES: &str = "      get-sum:\n        name: add-ten\n        description: { append: Adds ten to a. }\n        arguments: { fixed: { b: 10 } }\n      \
                        echo:\n        arguments: { defaults: { message: hello } }\n";

/// The renamed tool is listed under its new name with the fixed argument gone from its
/// schema and the note appended; calls reach the server with the fixed value (a client's
/// own value overridden) and the default; agents' rules still name the server's tool.
#[test]
fn a_rewritten_tool_round_trips_through_the_server() {
    let dir = scratch("rewrite-round-trip");
    let file = dir.join("rw.yaml");
    composition(&file, REWRITES);
    let mut client = SdkClient::stdio(&file, &[]);
    let tools = client.send(json!({ "op": "list" }));
    let tools = tools["tools"].as_array().unwrap();
    let add = tools.iter().find(|t| t["name"] == "mcp__everything__add-ten").unwrap_or_else(|| panic!("{tools:?}"));
    assert!(!tools.iter().any(|t| t["name"] == "mcp__everything__get-sum"));
    assert_eq!(add["inputSchema"]["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["a"], "{add}");
    assert_eq!(add["inputSchema"]["required"], json!(["a"]), "{add}");
    assert!(add["description"].as_str().unwrap().ends_with("\nAdds ten to a."), "{add}");
    let echo = tools.iter().find(|t| t["name"] == "mcp__everything__echo").unwrap();
    assert_eq!(echo["inputSchema"]["properties"]["message"]["default"], "hello", "{echo}");
    assert!(echo["inputSchema"]["required"].as_array().is_none_or(|r| r.is_empty()), "{echo}");

    assert_eq!(client.call_text("mcp__everything__add-ten", json!({ "a": 5 })), "The sum of 5 and 10 is 15.");
    assert_eq!(client.call_text("mcp__everything__add-ten", json!({ "a": 5, "b": 1 })), "The sum of 5 and 10 is 15.");
    assert_eq!(client.call_text("mcp__everything__echo", json!({})), "Echo: hello");
    assert_eq!(client.call_text("mcp__everything__echo", json!({ "message": "mine" })), "Echo: mine");
    client.close();

    let mut reviewer = SdkClient::stdio(&file, &["--agent", "reviewer"]);
    assert_eq!(reviewer.tool_names(), ["mcp__everything__add-ten"]);
    reviewer.close();
}

/// A hidden argument the server requires, with no value, leaves the tool out, saying why.
#[test]
fn a_rewrite_that_cannot_apply_leaves_its_tool_out() {
    let dir = scratch("rewrite-cannot-apply");
    let file = dir.join("rw.yaml");
    composition(&file, "      echo:\n        arguments: { hidden: [message] }\n");
    let o = Command::new(seam_bin()).args(["inventory", &file.display().to_string(), "--probe", "--format", "json"]).output().unwrap();
    let inventory: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let mount = inventory["mounts"].as_array().unwrap().iter().find(|m| m["id"] == "everything").unwrap().clone();
    let warnings = mount["warnings"].to_string();
    assert!(
        warnings.contains("tool `echo` is left out: its `rewrite` cannot apply: argument `message` is required by the server"),
        "{mount}"
    );
    let served = inventory["agents"].as_array().unwrap().iter().find(|a| a["name"] == "default").unwrap()["resolved"].clone();
    assert!(!served.as_array().unwrap().iter().any(|t| t == "mcp__everything__echo"), "{served}");
}

/// The official Python SDK's client, in both eras, through `seam serve` over stdio: the
/// rewritten tool is listed without the argument seam fixes, and a call gets seam's value.
#[test]
fn the_python_sdk_client_calls_a_rewritten_tool_in_both_eras() {
    let dir = scratch("rewrite-python");
    let file = dir.join("rw.yaml");
    composition(&file, REWRITES);
    let f = file.display().to_string();
    for era in ["legacy", "2026-07-28"] {
        let seen = crate::support::python_peer(
            "py-tools.py",
            &[era, "mcp__everything__add-ten", r#"{"a": 5, "b": 1}"#, "stdio", seam_bin(), "serve", &f, "--no-watch"],
        );
        assert_eq!(seen["tools"]["mcp__everything__add-ten"], json!(["a"]), "{era}: {seen}");
        assert!(seen["tools"].get("mcp__everything__get-sum").is_none(), "{era}: {seen}");
        assert_eq!(seen["call"], json!({ "text": "The sum of 5 and 10 is 15.", "error": false }), "{era}: {seen}");
    }
}

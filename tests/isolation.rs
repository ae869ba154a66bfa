//! Isolation of an MCP mount's upstream (`isolation` on `mcp.stdio`/`mcp.http`): with
//! `per-agent`, each agent that sees the mount reaches the server over a connection of
//! its own (a child of its own, over stdio), so that what a server keeps per connection
//! is never shared between agents; `shared` keeps one for all.

use serde_json::json;

use crate::support::{HttpSeam, SdkClient, flaky_mount, scratch, write_atomically};

/// The process ids the flaky server reports to the `default` and `b` agents.
fn pids(isolation: &str) -> (String, String) {
    let dir = scratch(&format!("isolation-{isolation}"));
    let file = dir.join("c.yaml");
    let mount = flaky_mount("f", &[("FLAKY_TOOLS", "alpha")], &format!("    isolation: {isolation}\n"));
    write_atomically(&file, &format!("seam: 1\nmounts:\n{mount}agents:\n  b: {{ parent: default }}\n"));
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut default = SdkClient::http(&format!("{}/mcp", seam.base));
    let mut b = SdkClient::http(&format!("{}/agents/b/mcp", seam.base));
    let pids = (default.call_text("mcp__f__pid", json!({})), b.call_text("mcp__f__pid", json!({})));
    default.close();
    b.close();
    assert!(seam.terminate().success());
    pids
}

#[test]
fn per_agent_gives_each_agent_its_own_server_and_shared_one_for_all() {
    let (default, b) = pids("per-agent");
    assert_ne!(default, b, "per-agent: each agent has its own child");
    let (default, b) = pids("shared");
    assert_eq!(default, b, "shared: one child for every agent");
}

/// server-everything's `gzip-file-as-resource` makes a resource of the session that
/// called it: with `per-agent`, the agent that made it reads it, and another agent,
/// whose connection never had it, neither lists nor reads it.
#[test]
fn a_session_resource_made_through_one_agent_is_not_another_s() {
    use crate::support::peer_bin;
    let dir = scratch("isolation-resource");
    let file = dir.join("c.yaml");
    let mount = format!(
        "  everything:\n    kind: mcp.stdio\n    command: {}\n    args: [stdio]\n    isolation: per-agent\n",
        json!(peer_bin("mcp-server-everything"))
    );
    write_atomically(&file, &format!("seam: 1\nmounts:\n{mount}agents:\n  b: {{ parent: default }}\n"));
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut a = SdkClient::http(&format!("{}/mcp", seam.base));
    let mut b = SdkClient::http(&format!("{}/agents/b/mcp", seam.base));
    let args = json!({ "name": "note.txt.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink" });
    let made = a.call("mcp__everything__gzip-file-as-resource", args);
    let link = made["content"].as_array().unwrap().iter().find(|c| c["type"] == "resource_link").unwrap_or_else(|| panic!("{made}"));
    let uri = link["uri"].as_str().unwrap().to_owned();

    let read = a.send(json!({ "op": "read", "uri": uri }));
    assert_eq!(read["ok"], true, "the agent that made it reads it: {read}");
    let listed = b.send(json!({ "op": "resources" }));
    assert!(!listed["resources"].as_array().unwrap().iter().any(|r| r["uri"] == uri.as_str()), "{listed}");
    let refused = b.send(json!({ "op": "read", "uri": uri }));
    assert_eq!(refused["ok"], false, "another agent's connection never had it: {refused}");
    a.close();
    b.close();
    assert!(seam.terminate().success());
}

/// A reload that gives a per-agent mount to another agent starts the mount again, so
/// that the new agent has a connection of its own too.
#[test]
fn an_agent_a_reload_adds_gets_its_own_connection() {
    let dir = scratch("isolation-reload");
    let file = dir.join("c.yaml");
    let mount = flaky_mount("f", &[("FLAKY_TOOLS", "alpha")], "    isolation: per-agent\n");
    // Listed by an agent, the mount is that agent's alone (and its descendants').
    let scoped =
        |b: &str| format!("seam: 1\nmounts:\n{mount}agents:\n  a: {{ parent: default, mounts: [f] }}\n  b: {{ parent: default{b} }}\n");
    write_atomically(&file, &scoped(""));
    let mut seam = HttpSeam::start(&file, &[]);
    let mut a = SdkClient::http(&format!("{}/agents/a/mcp", seam.base));
    let before = a.call_text("mcp__f__pid", json!({}));
    write_atomically(&file, &scoped(", mounts: [f]"));
    seam.stderr.wait_outcome(1, "applied");
    let mut b = SdkClient::http(&format!("{}/agents/b/mcp", seam.base));
    let theirs = b.call_text("mcp__f__pid", json!({}));
    let ours = a.call_text("mcp__f__pid", json!({}));
    assert!(theirs.parse::<u32>().is_ok(), "b is served: {theirs}");
    assert_ne!(theirs, ours, "b has a child of its own");
    assert_ne!(ours, before, "the mount was started again");
    a.close();
    b.close();
    assert!(seam.terminate().success());
}

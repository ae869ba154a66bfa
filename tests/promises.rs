//! Promises the README makes that no other test reached, each tested at its
//! boundary (at the limit and one past it) against real peers: a live token
//! file that vanishes, the served skills' entry and depth limits, the
//! composition byte budget from the environment, `TOOL_CALLS_EXCEEDED` over
//! HTTP, calls drained on SIGTERM and SIGINT, and `protocol: auto` falling
//! back after 10 s of silence. (The backoff and the ping interval are unit
//! tests in `providers/mcp/src/runtime.rs`, the stdio backlog's real bounds in
//! `src/gateway.rs`, a namespace's leading `_` a fixture.)

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

/// Writes the composition `seam: 1` with these mounts and extra top-level YAML.
fn compose(path: &Path, mounts: &[String], extra: &str) {
    std::fs::write(path, format!("seam: 1\nmounts:\n{}{extra}", mounts.concat())).unwrap();
}

/// A runtime for the requests a test makes by hand.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// The status of a GET of `url`, with `Authorization: Bearer <token>` if given.
fn get_status(url: &str, token: Option<&str>) -> u16 {
    runtime().block_on(async {
        let request = http_client().get(url);
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        request.send().await.unwrap().status().as_u16()
    })
}

fn initialize_body() -> Value {
    json!({ "jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "promises", "version": "1" } } })
}

/// The JSON-RPC message answering `id` in a Streamable HTTP answer: its JSON body,
/// or the `data:` of one of its events.
fn answer_to(body: &str, id: &Value) -> Value {
    let whole = serde_json::from_str::<Value>(body).ok().into_iter();
    let events =
        body.lines().filter_map(|line| line.strip_prefix("data:")).filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok());
    whole.chain(events).find(|message| message["id"] == *id).unwrap_or_else(|| panic!("no answer to {id} in {body:?}"))
}

/// A 2025-06-18 session opened on `url` by hand: its id.
async fn open_session(client: &reqwest::Client, url: &str) -> String {
    let opened = mcp_post(client, url, "2025-06-18", None, &initialize_body()).send().await.unwrap();
    assert_eq!(opened.status().as_u16(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let body = opened.text().await.unwrap();
    assert!(answer_to(&body, &json!("init"))["result"]["serverInfo"].is_object(), "{body}");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let sent = mcp_post(client, url, "2025-06-18", Some(&session), &initialized).send().await.unwrap();
    assert!(sent.status().is_success(), "{}", sent.status());
    session
}

/// `tools/call` of `name` in `session`, and its answer's `result`.
async fn call_in_session(client: &reqwest::Client, url: &str, session: &str, id: &str, name: &str, arguments: Value) -> Value {
    let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": arguments } });
    let answered = mcp_post(client, url, "2025-06-18", Some(session), &call).send().await.unwrap();
    assert_eq!(answered.status().as_u16(), 200);
    let body = answered.text().await.unwrap();
    answer_to(&body, &json!(id))["result"].clone()
}

/// Should a live token's file vanish, its endpoints answer 503 rather than
/// opening (with the token, or without one); they open again once it is back.
/// Another agent's endpoint, guarded by a file still there, is not touched.
#[test]
fn a_live_token_file_that_vanishes_closes_its_endpoints_with_503() {
    let dir = scratch("promises-token-vanishes");
    let file = dir.join("seam.yaml");
    let (token, ops_token) = (dir.join("token"), dir.join("ops-token"));
    std::fs::write(&token, "the-token\n").unwrap();
    std::fs::write(&ops_token, "ops-token\n").unwrap();
    let agents = "serve:\n  bearer_token_file: ./token\nagents:\n  ops:\n    serve: { bearer_token_file: ./ops-token }\n  inherits: {}\n";
    compose(&file, &[flaky_mount("a", &[], "")], agents);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = |path: &str| format!("{}{path}", seam.base);
    let initialize = |path: &str, token: Option<&str>| {
        runtime().block_on(async {
            let request = mcp_post(&http_client(), &url(path), "2025-06-18", None, &initialize_body());
            let request = match token {
                Some(token) => request.bearer_auth(token),
                None => request,
            };
            request.send().await.unwrap().status().as_u16()
        })
    };
    // While the file is there: its token opens, none or another is refused.
    assert_eq!(get_status(&url("/status"), Some("the-token")), 200);
    assert_eq!(get_status(&url("/status"), None), 401);
    assert_eq!(initialize("/mcp", Some("the-token")), 200);
    assert_eq!(initialize("/agents/inherits/mcp", Some("the-token")), 200);
    assert_eq!(initialize("/agents/ops/mcp", Some("ops-token")), 200);

    std::fs::remove_file(&token).unwrap();
    assert_eq!(get_status(&url("/healthz"), None), 200, "seam still answers");
    assert_eq!(get_status(&url("/status"), Some("the-token")), 503);
    assert_eq!(get_status(&url("/status"), None), 503, "not opened to a request without a token either");
    assert_eq!(initialize("/mcp", Some("the-token")), 503);
    assert_eq!(initialize("/mcp", None), 503);
    assert_eq!(initialize("/agents/inherits/mcp", Some("the-token")), 503, "an agent that inherits the token is closed too");
    assert_eq!(initialize("/agents/ops/mcp", Some("ops-token")), 200, "an agent with a token of its own is not");

    std::fs::write(&token, "the-token\n").unwrap();
    assert_eq!(get_status(&url("/status"), Some("the-token")), 200, "open again once the file is back");
    assert_eq!(get_status(&url("/status"), None), 401);
    assert!(seam.terminate().success());
}

/// Writes skill `name` under `skills`; its folder.
fn skill(skills: &Path, name: &str) -> PathBuf {
    let dir = skills.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n")).unwrap();
    dir
}

/// A skill whose folder holds more than 4,096 entries (SKILL.md, files and
/// folders, at any depth) or nests deeper than 16 folders is left out of
/// `skills/list`; at each limit it is served. The `skill` tool keeps all four.
#[test]
fn a_skill_past_4096_entries_or_16_levels_is_not_served_over_the_extension() {
    let dir = scratch("promises-skills-walk-limits");
    let skills = dir.join("skills");
    // SKILL.md, 100 files (under the 512-file limit) and the rest empty folders.
    for (name, entries) in [("entries-at-limit", 4096), ("entries-past-limit", 4097)] {
        let at = skill(&skills, name);
        for n in 0..100 {
            std::fs::write(at.join(format!("f{n}.txt")), "x").unwrap();
        }
        for n in 0..entries - 101 {
            std::fs::create_dir(at.join(format!("d{n}"))).unwrap();
        }
    }
    // A file in the 16th folder down; one more folder down, past the limit.
    let deep = |levels: usize| (0..levels).map(|_| "d").collect::<Vec<_>>().join("/");
    for (name, levels) in [("depth-at-limit", 16), ("depth-past-limit", 17)] {
        let at = skill(&skills, name).join(deep(levels));
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("deep.txt"), "deep\n").unwrap();
    }
    let file = dir.join("c.yaml");
    std::fs::write(&file, "seam: 1\nmounts:\n  skills:\n    kind: skills.fs\n    bundled_dir: ./skills\ntools:\n  skill: true\n").unwrap();
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let listed = client.send(json!({ "op": "request", "method": "skills/list" }));
    let served = listed["result"]["skills"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let uris: Vec<&str> = served.iter().map(|s| s["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["skill://depth-at-limit/SKILL.md", "skill://entries-at-limit/SKILL.md"]);
    let files =
        |skill: &Value| skill["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert!(files(&served[0]).contains(&format!("skill://depth-at-limit/{}/deep.txt", deep(16))), "{}", served[0]);
    assert_eq!(files(&served[1]).len(), 101, "SKILL.md and its 100 files");
    let catalog = client.tool("skill")["description"].as_str().unwrap().to_owned();
    for name in ["entries-at-limit", "entries-past-limit", "depth-at-limit", "depth-past-limit"] {
        assert!(catalog.contains(&format!("- {name}:")), "{name} stays in the skill tool: {catalog}");
    }
    client.close();
    assert!(seam.terminate().success());
}

/// `SEAM_MAX_COMPOSITION_BYTES` sets the byte budget as `--max-composition-bytes`
/// does, on every command: a composition and its base of exactly that many bytes
/// are read, one byte more is `COMPOSITION_TOO_LARGE`.
#[test]
fn seam_max_composition_bytes_from_the_environment_bounds_every_command() {
    let dir = scratch("promises-max-composition-bytes");
    std::fs::write(dir.join("base.yaml"), "mounts:\n  fetch:\n    kind: web.fetch.http\n").unwrap();
    let file = dir.join("c.yaml");
    std::fs::write(&file, "seam: 1\nextends: [base.yaml]\ntools:\n  web_fetch: true\n").unwrap();
    let bytes = std::fs::metadata(&file).unwrap().len() + std::fs::metadata(dir.join("base.yaml")).unwrap().len();
    let run = |args: &[&str], budget: u64| {
        Command::new(seam_bin()).args(args).arg(&file).env("SEAM_MAX_COMPOSITION_BYTES", format!("{budget}B")).output().unwrap()
    };
    let validated = run(&["validate"], bytes);
    assert_eq!(validated.status.code(), Some(0), "at the budget: {}", String::from_utf8_lossy(&validated.stdout));
    let refused = run(&["validate"], bytes - 1);
    let out = String::from_utf8_lossy(&refused.stdout);
    assert_eq!(refused.status.code(), Some(1), "one byte past it: {out}");
    assert!(out.contains("error[COMPOSITION_TOO_LARGE]"), "{out}");
    // Another command reads within the same budget.
    let graphed = run(&["graph", "--format", "json"], bytes);
    assert_eq!(graphed.status.code(), Some(0), "{}", String::from_utf8_lossy(&graphed.stderr));
    assert!(String::from_utf8_lossy(&graphed.stdout).contains("\"mount:fetch\""));
    let refused = run(&["graph", "--format", "json"], bytes - 1);
    assert_ne!(refused.status.code(), Some(0));
    let said = format!("{}{}", String::from_utf8_lossy(&refused.stdout), String::from_utf8_lossy(&refused.stderr));
    assert!(said.contains("COMPOSITION_TOO_LARGE"), "{said}");
}

/// An HTTP session, like a stdio client, may have 1,024 calls running at once:
/// with 1,023 running, one more runs; with 1,024, the next is answered
/// `TOOL_CALLS_EXCEEDED` at once. Another session's calls are its own.
#[test]
fn over_http_a_session_may_have_1024_calls_running_and_the_next_is_refused() {
    let dir = scratch("promises-http-calls-exceeded");
    let file = dir.join("c.yaml");
    // One connection per running call, and more than the default 1,024 of them.
    compose(&file, &[flaky_mount("a", &[], "    call_timeout: 120s\n")], "serve:\n  max_connections: 2048\n");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    let runtime = runtime();
    let client = http_client();
    let session = runtime.block_on(open_session(&client, &url));
    let hang = |ids: std::ops::Range<usize>| {
        for n in ids {
            let (client, url, session) = (client.clone(), url.clone(), session.clone());
            runtime.spawn(async move { call_in_session(&client, &url, &session, &format!("hang-{n}"), "mcp__a__hang", json!({})).await });
        }
    };
    let running = |n: u64| wait_until(&format!("{n} calls running"), || seam.status()["calls_in_flight"] == n);
    let call = |session: &str, id: &str| runtime.block_on(call_in_session(&client, &url, session, id, "mcp__a__sleep", json!({ "ms": 1 })));

    hang(0..1023);
    running(1023);
    let at_limit = call(&session, "at-limit");
    assert_eq!(at_limit["content"][0]["text"], "slept", "the 1,024th call runs: {at_limit}");

    hang(1023..1024);
    running(1024);
    let past = call(&session, "past-limit");
    assert_eq!(past["isError"], true, "{past}");
    let text = past["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("TOOL_CALLS_EXCEEDED: "), "{text}");
    let other = runtime.block_on(open_session(&client, &url));
    assert_eq!(call(&other, "other-session")["content"][0]["text"], "slept", "another session's call runs");
    runtime.shutdown_background();
}

/// A call running when seam is told to stop (`signal`) gets its answer, the
/// tool's own, before seam exits 0, and its server is gone after: over HTTP
/// (the call seen in flight on `/status`) and over stdio (the call seen
/// arrived at the server).
fn a_signal_drains_the_call_in_flight(signal_name: &str) {
    let call = json!({ "ms": 1500 });
    // Over HTTP.
    let dir = scratch(&format!("promises-drain-http-{signal_name}"));
    let (file, pid_file) = (dir.join("c.yaml"), dir.join("a.pids"));
    compose(&file, &[flaky_mount("a", &[("FLAKY_PID_FILE", &pid_file.display().to_string())], "")], "");
    let mut seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    client.send_only(json!({ "op": "call", "name": "mcp__a__sleep", "args": call }));
    wait_until("the call to be in flight", || seam.status()["calls_in_flight"] == 1);
    signal(seam.child.id(), signal_name);
    let answer = client.answer();
    assert_eq!(answer["ok"], true, "HTTP, SIG{signal_name}: {answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "slept", "HTTP, SIG{signal_name}: {answer}");
    assert_ne!(answer["result"]["isError"], true, "HTTP, SIG{signal_name}: {answer}");
    let exit = seam.child.wait().unwrap();
    assert!(exit.success(), "HTTP, SIG{signal_name}: {exit:?}");
    let server = pids(&pid_file);
    assert_eq!(server.len(), 1);
    wait_dead(&server);

    // Over stdio.
    let dir = scratch(&format!("promises-drain-stdio-{signal_name}"));
    let (file, pid_file, heard) = (dir.join("c.yaml"), dir.join("a.pids"), dir.join("heard"));
    let env = [("FLAKY_PID_FILE", pid_file.display().to_string()), ("FLAKY_HEARD", heard.display().to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    compose(&file, &[flaky_mount("a", &env, "")], "");
    let mut seam = serve_stdio_raw(&file);
    let mut answers = Lines::spawn(seam.stdout.take().unwrap(), "");
    let mut stdin = seam.stdin.take().unwrap();
    let request = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "mcp__a__sleep", "arguments": call } });
    writeln!(stdin, "{}{request}", mcp_handshake_lines()).unwrap();
    stdin.flush().unwrap();
    wait_until("the call to reach the server", || std::fs::read_to_string(&heard).unwrap_or_default().contains(" tools/call\n"));
    signal(seam.id(), signal_name);
    let answer = loop {
        let line = answers.next(PATIENCE).unwrap_or_else(|| panic!("stdio, SIG{signal_name}: no answer to the call"));
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            break message;
        }
    };
    assert_eq!(answer["result"]["content"][0]["text"], "slept", "stdio, SIG{signal_name}: {answer}");
    assert_ne!(answer["result"]["isError"], true, "stdio, SIG{signal_name}: {answer}");
    // Its input still open: the signal, not the end of input, stops it.
    let exit = seam.wait().unwrap();
    drop(stdin);
    assert!(exit.success(), "stdio, SIG{signal_name}: {exit:?}");
    let server = pids(&pid_file);
    assert_eq!(server.len(), 1);
    wait_dead(&server);
}

#[test]
fn sigterm_drains_the_call_in_flight_then_stops() {
    a_signal_drains_the_call_in_flight("TERM");
}

#[test]
fn sigint_drains_the_call_in_flight_then_stops() {
    a_signal_drains_the_call_in_flight("INT");
}

/// `protocol: auto` probes with `server/discover` and, when the server stays
/// silent to it, falls back to the `initialize` handshake after 10 s, given
/// beyond `startup_timeout` (2 s here): the server hears the handshake no
/// sooner, and the mount comes up speaking the older revision.
#[test]
fn protocol_auto_falls_back_to_the_handshake_after_10_s_of_silence() {
    let dir = scratch("promises-auto-silence");
    let (file, heard) = (dir.join("c.yaml"), dir.join("heard"));
    let env = [("FLAKY_IGNORE", "server/discover"), ("FLAKY_HEARD", &heard.display().to_string())];
    compose(&file, &[flaky_mount("quiet", &env, "    protocol: auto\n    startup_timeout: 2s\n")], "");
    // Before seam, so before rmcp's 10 s start (the server, still starting, may read the probe later).
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mount = seam.status()["mounts"]["quiet"].clone();
    assert_eq!(mount["state"], "ready", "{mount}");
    assert!(mount["protocol_version"].as_str().is_some_and(|v| v < "2026-07-28"), "{mount}");
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__quiet__ping", json!({ "message": "hi" })), "ping: hi");
    client.close();
    let heard = std::fs::read_to_string(&heard).unwrap();
    let at = |method: &str| -> u64 {
        let line = heard.lines().find(|l| l.ends_with(&format!(" {method}"))).unwrap_or_else(|| panic!("no {method}: {heard}"));
        line.split(' ').next().unwrap().parse().unwrap()
    };
    assert!(heard.lines().next().unwrap().ends_with(" server/discover"), "probed first: {heard}");
    assert!(at("server/discover") <= at("initialize"), "{heard}");
    let waited = at("initialize") - started;
    assert!(waited >= 10_000, "the handshake came {waited} ms after seam started: {heard}");
    assert!(seam.terminate().success());
}

//! `seam serve` and `seam call` end to end, against real peers: the official MCP
//! SDK client drives seam; seam mounts the MCP reference server and our own
//! controllable server (`tests/peers/flaky-mcp-server.mjs`).

mod conformance;
mod eras;
pub(crate) mod inspector;
mod parity;
mod skills;
mod skills_import;
mod tasks;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

/// Writes `seam: 1`, the mounts, then `extra` YAML.
fn compose(path: &Path, mounts: &[String], extra: &str) {
    write_atomically(path, &format!("seam: 1\nmounts:\n{}{extra}", mounts.concat()));
}

/// The YAML of an `mcp.stdio` mount running one of our peer servers (`tests/peers/<script>`) on node.
fn node_mount(id: &str, script: &str) -> String {
    format!(
        "  {id}:\n    kind: mcp.stdio\n    command: node\n    args: [{}]\n",
        json!(root().join("tests/peers").join(script).display().to_string())
    )
}

/// server-everything over Streamable HTTP on a loopback port it was given by the
/// kernel, once it listens; and that port.
fn everything_over_http() -> (Peer, u16) {
    let mut command = Command::new(peer_bin("mcp-server-everything"));
    command.arg("streamableHttp").env("PORT", "0");
    Peer::listening(command)
}

/// Our flaky server over Streamable HTTP on `port` (0: one the kernel gives it), once it listens; and its port.
fn flaky_over_http(port: u16) -> (Peer, u16) {
    let mut command = Command::new("node");
    command.arg(flaky_server()).env("FLAKY_HTTP_PORT", port.to_string());
    Peer::listening(command)
}

/// The YAML of an `mcp.stdio` mount running `tests/peers/py-asks-server.py`, a Python
/// SDK server that asks its client mid-call in either revision.
fn py_asks_mount(id: &str, extra: &str) -> String {
    let server = root().join("tests/peers/py-asks-server.py");
    format!("  {id}:\n    kind: mcp.stdio\n    command: {}\n    args: [{}]\n{extra}", json!(python()), json!(server))
}

fn everything_mount(id: &str, extra: &str) -> String {
    format!("  {id}:\n    kind: mcp.stdio\n    command: {}\n    args: [stdio]\n{extra}", json!(peer_bin("mcp-server-everything")))
}

fn seam_call(file: &Path, tool: &str, args: Value, env: &[(&str, &str)]) -> (i32, Value, String) {
    let out = Command::new(seam_bin())
        .args(["call", &file.display().to_string(), tool, "--args", &args.to_string()])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let result = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), result, stderr)
}

#[test]
fn the_sdk_client_lists_and_calls_server_everything_through_seam_over_stdio() {
    let dir = scratch("stdio-everything");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "    tools: { deny: [\"toggle-*\"] }\n")], "");
    let mut client = SdkClient::stdio(&file, &[]);
    let names = client.tool_names();
    assert!(names.contains(&"mcp__everything__echo".to_owned()), "{names:?}");
    assert!(names.contains(&"mcp__everything__get-tiny-image".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("toggle")), "the deny filter applies before the catalog: {names:?}");
    assert_eq!(client.call_text("mcp__everything__echo", json!({ "message": "hi" })), "Echo: hi");

    // Image blocks are forwarded intact, not replaced by placeholders.
    let image = client.call("mcp__everything__get-tiny-image", json!({}));
    let blocks = image["content"].as_array().unwrap();
    let png = blocks.iter().find(|b| b["type"] == "image").unwrap_or_else(|| panic!("no image block: {image}"));
    assert_eq!(png["mimeType"], "image/png");
    assert!(png["data"].as_str().unwrap().len() > 20);

    // structuredContent is preserved (and checked against the advertised output schema).
    let structured = client.call("mcp__everything__get-structured-content", json!({ "location": "New York" }));
    assert_ne!(structured["isError"], true, "{structured}");
    assert!(structured["structuredContent"].is_object(), "{structured}");
    client.close();
}

#[test]
fn results_errors_budgets_and_truncation_follow_the_composition() {
    let dir = scratch("results");
    let file = dir.join("c.yaml");
    let tools =
        "tools:\n  \"mcp__a__sleep\": { timeout: 300ms }\n  \"mcp__a__ping\": { max_output_chars: 10 }\n  \"mcp__a__hang\": false\n";
    compose(&file, &[flaky_mount("a", &[], "")], tools);
    let mut client = SdkClient::stdio(&file, &[]);
    let names = client.tool_names();
    assert!(!names.contains(&"mcp__a__hang".to_owned()), "`false` hides a tool: {names:?}");

    let timed_out = client.call("mcp__a__sleep", json!({ "ms": 5000 }));
    assert_eq!(timed_out["isError"], true);
    assert!(timed_out["content"][0]["text"].as_str().unwrap().starts_with("TOOL_TIMEOUT: "), "{timed_out}");

    // `ping: ` + 4 characters is exactly 10: not cut; one more is.
    assert_eq!(client.call("mcp__a__ping", json!({ "message": "abcd" }))["content"].as_array().unwrap().len(), 1);
    let cut = client.call("mcp__a__ping", json!({ "message": "abcde" }));
    assert_eq!(cut["content"][0]["text"], "ping: abcd");
    assert!(cut["content"][1]["text"].as_str().unwrap().contains("truncated, 1 more characters"), "{cut}");

    let failed = client.call("mcp__a__fail", json!({}));
    assert_eq!(failed["isError"], true, "isError passes through: {failed}");
    assert_eq!(failed["content"][0]["text"], "it failed");

    let structured = client.call("mcp__a__structured", json!({}));
    assert_eq!(structured["structuredContent"], json!({ "n": 42 }));

    let unknown = client.call("mcp__a__nope", json!({}));
    assert!(unknown["content"][0]["text"].as_str().unwrap().starts_with("TOOL_UNKNOWN: "), "{unknown}");
    client.close();
}

#[test]
fn reloads_add_restart_only_what_changed_remove_and_reject_without_dropping_the_catalog() {
    let dir = scratch("reload");
    let file = dir.join("c.yaml");
    let pid_file = |id: &str| dir.join(format!("{id}.pids")).display().to_string();
    // Each serves a prompt too, which the last edit hides: its prompts/list_changed follows any earlier notification.
    let mount = |id: &str, tools: &str| {
        flaky_mount(id, &[("FLAKY_TOOLS", tools), ("FLAKY_PID_FILE", &pid_file(id)), ("FLAKY_PROMPTS", "hello")], "")
    };
    let allow = "    tools: { allow: [\"*\"], deny: [set_tools, crash, hang, sleep, image, structured, bad_structured, headers, fail, rpc_error] }\n";
    let with_filter = |m: String| format!("{m}{allow}");
    compose(&file, &[with_filter(mount("a", "alpha")), with_filter(mount("b", "beta"))], "");
    let mut client = SdkClient::stdio(&file, &[]);
    assert_eq!(client.tool_names(), ["mcp__a__alpha", "mcp__a__pid", "mcp__b__beta", "mcp__b__pid"]);
    let a_pid = client.call_text("mcp__a__pid", json!({}));
    let b_pid: u32 = client.call_text("mcp__b__pid", json!({})).parse().unwrap();

    // Add a server.
    compose(&file, &[with_filter(mount("a", "alpha")), with_filter(mount("b", "beta")), with_filter(mount("c", "gamma"))], "");
    client.wait_list_changed();
    assert!(client.tool_names().contains(&"mcp__c__gamma".to_owned()));
    let c_pid: u32 = client.call_text("mcp__c__pid", json!({})).parse().unwrap();

    // Change one server's config: only it restarts.
    compose(&file, &[with_filter(mount("a", "alpha")), with_filter(mount("b", "beta2")), with_filter(mount("c", "gamma"))], "");
    client.wait_list_changed();
    let names = client.tool_names();
    assert!(names.contains(&"mcp__b__beta2".to_owned()) && !names.contains(&"mcp__b__beta".to_owned()), "{names:?}");
    assert_eq!(client.call_text("mcp__a__pid", json!({})), a_pid, "a kept mount is the same process");
    assert_eq!(client.call_text("mcp__c__pid", json!({})), c_pid.to_string());
    wait_dead(&[b_pid]);

    // Remove one: its process ends and its tools leave.
    compose(&file, &[with_filter(mount("a", "alpha")), with_filter(mount("b", "beta2"))], "");
    client.wait_list_changed();
    assert!(!client.tool_names().iter().any(|n| n.starts_with("mcp__c__")));
    wait_dead(&[c_pid]);

    // An invalid edit is rejected; the live catalog keeps serving, and clients are told nothing.
    let before = client.tool_names();
    let notified = client.list_changed_count();
    write_atomically(&file, &std::fs::read_to_string(&file).unwrap().replace("kind: mcp.stdio", "kind: mcp.stdoi"));
    let rejected = client.stderr.wait_outcome(1, "rejected");
    assert_eq!(rejected_codes(&rejected), ["MOUNT_UNKNOWN_KIND"], "{rejected}");
    assert_eq!(client.tool_names(), before);
    assert_eq!(client.call_text("mcp__a__alpha", json!({ "message": "still" })), "alpha: still");
    // A later edit hides a prompt: its notification comes after any the rejection could have caused.
    let prompts_notified = client.prompt_list_changed_count();
    compose(&file, &[with_filter(mount("a", "alpha")), with_filter(mount("b", "beta2"))], "prompts:\n  \"mcp__a__hello\": false\n");
    while client.prompt_list_changed_count() == prompts_notified {
        client.wait_prompt_list_changed();
    }
    assert_eq!(client.list_changed_count(), notified, "no tools/list_changed without a catalog change");

    let all: Vec<u32> = ["a", "b", "c"].iter().flat_map(|id| pids(Path::new(&pid_file(id)))).collect();
    client.close();
    wait_dead(&all);
}

#[test]
fn http_serves_the_sdk_client_status_readiness_and_keeps_serving_after_a_rejected_reload() {
    let dir = scratch("http");
    let file = dir.join("c.yaml");
    let pid_file = dir.join("a.pids");
    let a = flaky_mount("a", &[("FLAKY_PID_FILE", &pid_file.display().to_string())], "    required: true\n");
    compose(&file, std::slice::from_ref(&a), "agents:\n  reviewer:\n    tools: { \"mcp__a__crash\": false }\n");
    let seam = HttpSeam::start(&file, &["--debounce", "50ms"]);
    assert_eq!(seam.get("/healthz").0, 200);
    assert_eq!(seam.get("/readyz").0, 200);
    let status = seam.status();
    assert_eq!(status["generation"], 1);
    assert_eq!(status["mounts"]["a"]["state"], "ready");
    assert_eq!(status["mounts"]["a"]["kind"], "mcp.stdio");
    assert_eq!(status["last_reload"]["outcome"], "applied");

    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert!(client.tool_names().contains(&"mcp__a__crash".to_owned()));
    assert_eq!(client.call_text("mcp__a__ping", json!({ "message": "http" })), "ping: http");
    let mut reviewer = SdkClient::http(&format!("{}/agents/reviewer/mcp", seam.base));
    assert!(!reviewer.tool_names().contains(&"mcp__a__crash".to_owned()), "each agent gets its own catalog");
    assert_eq!(seam.get("/agents/nobody/mcp").0, 404);

    // A schema error: rejected, with its diagnostics in /status; the old catalog stays.
    compose(&file, &[format!("{a}    startup_timout: 5s\n")], "");
    let rejected = seam.wait_reload(2);
    assert_eq!(rejected["outcome"], "rejected");
    let status = seam.status();
    assert_eq!(status["generation"], 1);
    let d = &status["last_reload"]["diagnostics"][0];
    assert_eq!(d["code"], "SCHEMA_UNKNOWN_KEY", "{d}");
    assert_eq!(d["pointer"], "/mounts/a/startup_timout");
    assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(10), Some(5)), "{d}");
    assert_eq!(client.call_text("mcp__a__ping", json!({ "message": "after" })), "ping: after");

    client.close();
    reviewer.close();
    let exit = seam.terminate();
    assert!(exit.success(), "{exit:?}");
    wait_dead(&pids(&pid_file));
}

/// seam can outlive the process that read its stderr (a supervisor that died, a
/// closed terminal): its log lines are lost, but SIGTERM still drains, disposes
/// every mount and ends it, and no child outlives it.
#[test]
fn sigterm_stops_seam_after_its_stderr_is_closed() {
    use std::io::BufRead as _;
    use std::process::Stdio;
    let dir = scratch("stderr-closed");
    let file = dir.join("c.yaml");
    let pid_file = dir.join("a.pids");
    compose(&file, &[flaky_mount("a", &[("FLAKY_PID_FILE", &pid_file.display().to_string())], "")], "");
    let mut seam = Command::new(seam_bin())
        .env("RUST_LOG", "info,rmcp=warn")
        .envs([JSON_LOG])
        .arg("serve")
        .arg(&file)
        .args(["--transport", "http", "--listen", "127.0.0.1:0", "--no-watch"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = seam.id();
    let mut stderr = std::io::BufReader::new(seam.stderr.take().unwrap());
    // Read through the event that says seam serves, the last it logs on start, then close the pipe.
    let mut line = String::new();
    while !serde_json::from_str::<Value>(&line).is_ok_and(|e| e["url"].is_string()) {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "seam ended before it served");
    }
    drop(stderr);
    assert_eq!(pids(&pid_file).len(), 1);

    signal(pid, "TERM");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(seam.wait().unwrap()));
    let Ok(exit) = rx.recv_timeout(PATIENCE) else {
        signal(pid, "KILL");
        panic!("seam did not stop on SIGTERM once its stderr was closed");
    };
    assert!(exit.success(), "{exit:?}");
    wait_dead(&pids(&pid_file));
}

#[test]
fn a_crash_loop_spends_the_reconnect_budget_then_unregisters_the_tools() {
    let dir = scratch("crash-loop");
    let file = dir.join("c.yaml");
    let pid_file = dir.join("a.pids");
    let exit_file = dir.join("exit-at-start");
    let reconnect = "    reconnect: { initial_delay: 20ms, max_delay: 10s, max_attempts: 2 }\n";
    let env = [("FLAKY_PID_FILE", pid_file.display().to_string()), ("FLAKY_EXIT_FILE", exit_file.display().to_string())];
    let a = flaky_mount("a", &env.iter().map(|(k, v)| (*k, v.as_str())).collect::<Vec<_>>(), reconnect);
    compose(&file, &[a], "");
    let mut client = SdkClient::stdio(&file, &[]);
    assert!(client.tool_names().contains(&"mcp__a__ping".to_owned()));
    // The server crashes; each process started after it exits before its handshake, so no
    // connection comes up to reset the budget, and the second reconnect spends it.
    std::fs::write(&exit_file, "").unwrap();
    let crashed = client.send(json!({ "op": "call", "name": "mcp__a__crash", "args": {} }));
    assert!(crashed["ok"] == false || crashed["result"]["isError"] == true, "{crashed}");
    let gave_up = client.stderr.wait_event("mount a failing", |e| e["mount"] == "a" && e["state"] == "failed");
    let reconnects = client.stderr.events_seen(|e| e["mount"] == "a" && e["attempt"].is_u64());
    let attempts: Vec<(u64, u64)> =
        reconnects.iter().map(|e| (e["attempt"].as_u64().unwrap(), e["max_attempts"].as_u64().unwrap())).collect();
    assert_eq!(attempts, [(1, 2), (2, 2)], "{gave_up}");
    while !client.tool_names().is_empty() {
        client.wait_list_changed();
    }
    let pids = pids(&pid_file);
    assert_eq!(pids.len(), 3, "one start and two reconnects: {pids:?}");
    wait_dead(&pids);
    let call = client.call("mcp__a__ping", json!({}));
    assert!(call["content"][0]["text"].as_str().unwrap().starts_with("TOOL_UNKNOWN: "), "{call}");
    client.close();
}

#[test]
fn a_connection_that_stays_up_for_max_delay_resets_the_budget() {
    let dir = scratch("stable");
    let file = dir.join("c.yaml");
    let max_delay = Duration::from_millis(200);
    let reconnect = "    reconnect: { initial_delay: 20ms, max_delay: 200ms, max_attempts: 1 }\n";
    compose(&file, &[flaky_mount("a", &[], reconnect)], "");
    let mut client = SdkClient::stdio(&file, &[]);
    for round in 1..=3 {
        // Up again (a call answers), then up for longer than max_delay: the crash that ends
        // it is a first failure, and the one attempt the budget has brings the server back.
        wait_until("mount a answering", || client.call_text("mcp__a__ping", json!({ "message": "up" })) == "ping: up");
        std::thread::sleep(max_delay + Duration::from_millis(50));
        let _ = client.send(json!({ "op": "call", "name": "mcp__a__crash", "args": {} }));
        let reconnect = client.stderr.wait_event("a reconnect of mount a", |e| e["mount"] == "a" && e["attempt"].is_u64());
        assert_eq!((reconnect["attempt"].as_u64(), reconnect["max_attempts"].as_u64()), (Some(1), Some(1)), "round {round}: {reconnect}");
    }
    wait_until("mount a answering", || client.call_text("mcp__a__ping", json!({ "message": "up" })) == "ping: up");
    client.close();
}

#[test]
fn a_required_server_that_hangs_at_startup_rejects_the_start() {
    let dir = scratch("hang");
    let file = dir.join("c.yaml");
    let a = flaky_mount("a", &[("FLAKY_HANG_STARTUP", "1")], "    required: true\n    startup_timeout: 300ms\n");
    compose(&file, &[a], "");
    let (code, _, stderr) = seam_call(&file, "mcp__a__ping", json!({}), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("error[MOUNT_START_FAILED]: required mount `a` did not start: no answer within startup_timeout 300ms"),
        "{stderr}"
    );
    assert!(stderr.contains("c.yaml:4:11:"), "located at the mount's kind: {stderr}");
    // Nothing announces a reconnect that a rejected start will never make.
    assert!(!stderr.contains("reconnecting"), "{stderr}");

    // Not required: it activates as failed, and its tools are simply not there.
    compose(&file, &[flaky_mount("a", &[("FLAKY_HANG_STARTUP", "1")], "    startup_timeout: 300ms\n")], "");
    let (code, result, stderr) = seam_call(&file, "mcp__a__ping", json!({}), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(result["content"][0]["text"].as_str().unwrap().starts_with("TOOL_UNKNOWN: "), "{result}");
}

#[test]
fn discovery_follows_pages_and_keeps_nothing_from_a_repeated_cursor_or_a_duplicate_name() {
    let dir = scratch("pages");
    let file = dir.join("c.yaml");
    // `fail` is the last tool the server lists: reaching it needs every page.
    compose(&file, &[flaky_mount("a", &[("FLAKY_PAGE_SIZE", "2")], "")], "");
    let (code, result, stderr) = seam_call(&file, "mcp__a__fail", json!({}), &[]);
    assert_eq!((code, result["content"][0]["text"].as_str()), (1, Some("it failed")), "{stderr}");

    for (env, why) in [("FLAKY_REPEAT_CURSOR", "repeated cursor"), ("FLAKY_DUPLICATE", "listed tool `ping` twice")] {
        compose(&file, &[flaky_mount("a", &[(env, "1"), ("FLAKY_PAGE_SIZE", "2")], "    required: true\n")], "");
        let (code, _, stderr) = seam_call(&file, "mcp__a__ping", json!({}), &[]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(why), "{env}: {stderr}");
    }
}

/// A server listing `a.b` and also the clean name `a.b` hashes to: those two
/// are left out (a call could not tell which was meant), its other tools are
/// served, and `/status` says why; the server is not dropped and reconnected.
#[test]
fn two_tools_that_map_to_one_name_are_left_out_and_the_rest_served() {
    let dir = scratch("colliding");
    let file = dir.join("c.yaml");
    let hashed = seam_mcp::runtime::tool_name("a", "a.b");
    let clean = hashed.strip_prefix("mcp__a__").unwrap().to_owned();
    compose(&file, &[flaky_mount("a", &[("FLAKY_TOOLS", &format!("ping,a.b,{clean}"))], "    required: true\n")], "");
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let names = client.tool_names();
    assert!(names.contains(&"mcp__a__ping".to_owned()) && !names.contains(&hashed), "{names:?}");
    assert_eq!(client.call_text("mcp__a__ping", json!({ "message": "m" })), "ping: m");
    let status = seam.status();
    let mount = &status["mounts"]["a"];
    assert_eq!(mount["state"], "ready", "{status}");
    let warning = mount["warnings"][0].as_str().unwrap_or_default();
    assert!(warning.contains(&hashed) && warning.contains("`a.b`") && warning.contains(&format!("`{clean}`")), "{status}");
    let out = std::process::Command::new(seam_bin())
        .args(["inventory", &file.display().to_string(), "--probe", "--format", "json"])
        .output()
        .unwrap();
    let inventory: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let a = inventory["mounts"].as_array().unwrap().iter().find(|m| m["id"] == "a").unwrap();
    assert_eq!(a["warnings"], mount["warnings"], "inventory --probe says it too");
}

/// `inventory --probe` says what each agent's tool list costs a model in every request,
/// estimated: more tools, more tokens.
#[test]
fn inventory_says_what_each_agent_s_tool_list_costs() {
    let dir = scratch("inventory-tokens");
    let file = dir.join("c.yaml");
    let probe = |tools: &str, format: &str| {
        compose(&file, &[flaky_mount("a", &[("FLAKY_TOOLS", tools)], "")], "");
        let out = std::process::Command::new(seam_bin())
            .args(["inventory", &file.display().to_string(), "--probe", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let tokens = |tools: &str| {
        let inventory: Value = serde_json::from_str(&probe(tools, "json")).unwrap();
        let agent = inventory["agents"].as_array().unwrap().iter().find(|a| a["name"] == "default").unwrap().clone();
        agent["catalog_tokens"].as_u64().unwrap_or_else(|| panic!("{agent}"))
    };
    let one = tokens("ping");
    let two = tokens("ping,a_second_tool_with_a_longer_name");
    assert!(one > 0 && two > one, "{one} then {two}");
    let human = probe("ping", "human");
    assert!(human.contains(&format!("its tool list costs about {one} tokens a request (o200k_base estimate)")), "{human}");
}

#[test]
fn a_stdio_server_gets_only_the_allowlisted_environment_and_its_own_env() {
    let dir = scratch("env");
    let file = dir.join("c.yaml");
    let extra = "    env: { FROM_MOUNT: mount-value }\n    env_passthrough: [SEAM_TEST_PASSED]\n";
    compose(&file, &[everything_mount("ev", extra)], "");
    let env = [("SEAM_TEST_PASSED", "passed"), ("SEAM_TEST_SECRET", "must-not-leak")];
    let (code, result, stderr) = seam_call(&file, "mcp__ev__get-env", json!({}), &env);
    assert_eq!(code, 0, "{stderr}");
    let text = result["content"][0]["text"].as_str().unwrap();
    let child_env: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("get-env is JSON: {text}"));
    assert_eq!(child_env["SEAM_TEST_PASSED"], "passed");
    assert_eq!(child_env["FROM_MOUNT"], "mount-value");
    assert!(child_env.get("SEAM_TEST_SECRET").is_none(), "{child_env}");
    assert!(child_env.get("PATH").is_some(), "PATH is in the default allowlist");
}

/// Writes `text` to `path` the way an editor's atomic save does: a temp file renamed over it.

#[test]
fn every_way_a_file_changes_is_an_ordinary_reload() {
    let dir = scratch("watch");
    let file = dir.join("c.yaml");
    let text = |tools: &str| format!("seam: 1\nmounts:\n{}", flaky_mount("a", &[("FLAKY_TOOLS", tools)], ""));
    std::fs::write(&file, text("one")).unwrap();
    let mut client = SdkClient::stdio(&file, &["--debounce", "50ms"]);
    let has = |client: &mut SdkClient, tool: &str| client.tool_names().contains(&format!("mcp__a__{tool}"));
    assert!(has(&mut client, "one"));

    write_atomically(&file, &text("two"));
    client.wait_list_changed();
    assert!(has(&mut client, "two"), "atomic save");
    let saved = client.stderr.wait_outcome(1, "applied");

    std::fs::remove_file(&file).unwrap();
    let deleted = client.stderr.wait_outcome(reload_number(&saved), "rejected");
    assert_eq!(rejected_codes(&deleted), ["COMPOSITION_UNREADABLE"], "{deleted}");
    assert!(has(&mut client, "two"), "a deleted file keeps the live generation");
    std::fs::write(&file, text("three")).unwrap();
    client.wait_list_changed();
    assert!(has(&mut client, "three"), "recreated");
    let recreated = client.stderr.wait_outcome(reload_number(&deleted), "applied");

    // Half a file: rejected; the completed write is applied.
    let full = text("four");
    std::fs::write(&file, &full[..full.len() / 2]).unwrap();
    client.stderr.wait_outcome(reload_number(&recreated), "rejected");
    assert!(has(&mut client, "three"));
    std::fs::write(&file, &full).unwrap();
    client.wait_list_changed();
    assert!(has(&mut client, "four"), "completed write");
    client.close();
}

/// Edits that would make a served seam read without end or block on a file
/// are refused where they are written, each a rejected reload, and the next
/// good edit applies: a FIFO or a device as a base, a base that is no map, a
/// base past `--max-composition-bytes`.
#[test]
fn an_edit_that_reads_without_end_is_rejected_and_reloads_go_on() {
    let dir = scratch("unbounded");
    let file = dir.join("c.yaml");
    let text = |tools: &str, extends: &str| format!("seam: 1\n{extends}mounts:\n{}", flaky_mount("a", &[("FLAKY_TOOLS", tools)], ""));
    std::fs::write(&file, text("one", "")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(dir.join("fifo.yaml")).status().unwrap().success());
    std::fs::write(dir.join("scalar.yaml"), "just a line\n").unwrap();
    std::fs::write(dir.join("large.yaml"), format!("name: {}\n", "x".repeat(8 * 1024))).unwrap();
    let mut client = SdkClient::stdio(&file, &["--debounce", "50ms", "--max-composition-bytes", "8KiB"]);
    let has = |client: &mut SdkClient, tool: &str| client.tool_names().contains(&format!("mcp__a__{tool}"));
    assert!(has(&mut client, "one"));
    let mut reloads = 1;
    for (base, code) in [
        ("fifo.yaml", "EXTENDS_NOT_A_FILE"),
        ("/dev/zero", "EXTENDS_NOT_A_FILE"),
        ("scalar.yaml", "EXTENDS_NOT_MAPPING"),
        ("large.yaml", "COMPOSITION_TOO_LARGE"),
    ] {
        write_atomically(&file, &text("two", &format!("extends: [{base}]\n")));
        let rejected = client.stderr.wait_outcome(reloads, "rejected");
        assert_eq!(rejected_codes(&rejected), [code], "{base}: {rejected}");
        reloads = reload_number(&rejected);
        assert!(has(&mut client, "one"), "{base}: the live generation keeps serving");
    }
    write_atomically(&file, &text("three", ""));
    client.wait_list_changed();
    assert!(has(&mut client, "three"), "a good edit after them applies");
    client.close();
}

/// The layout the kubelet gives a mounted ConfigMap: `c.yaml -> ..data/c.yaml`,
/// `..data -> ..<timestamp>`; an update writes a new timestamped folder and swaps
/// `..data` to it by renaming a new symlink over the old one.
#[test]
fn a_configmap_update_is_an_ordinary_reload() {
    let dir = scratch("configmap");
    let text = |tools: &str| format!("seam: 1\nmounts:\n{}", flaky_mount("a", &[("FLAKY_TOOLS", tools)], ""));
    let version = |name: &str, tools: &str| {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("c.yaml"), text(tools)).unwrap();
    };
    version("..2026_12_02_10_00_00.1", "first");
    std::os::unix::fs::symlink("..2026_12_02_10_00_00.1", dir.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/c.yaml", dir.join("c.yaml")).unwrap();
    let mut client = SdkClient::stdio(&dir.join("c.yaml"), &["--debounce", "50ms"]);
    assert!(client.tool_names().contains(&"mcp__a__first".to_owned()));

    version("..2026_12_02_10_05_00.2", "second");
    std::os::unix::fs::symlink("..2026_12_02_10_05_00.2", dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    std::fs::remove_dir_all(dir.join("..2026_12_02_10_00_00.1")).unwrap();
    client.wait_list_changed();
    assert!(client.tool_names().contains(&"mcp__a__second".to_owned()));
    client.close();
}

#[test]
fn sighup_reloads_when_watching_is_off() {
    let dir = scratch("sighup");
    let file = dir.join("c.yaml");
    let text = |tools: &str| format!("seam: 1\nmounts:\n{}", flaky_mount("a", &[("FLAKY_TOOLS", tools), ("FLAKY_PROMPTS", "hello")], ""));
    std::fs::write(&file, text("before")).unwrap();
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    std::fs::write(&file, text("after")).unwrap();
    signal(seam.child.id(), "HUP");
    assert_eq!(seam.wait_reload(2)["outcome"], "applied");
    assert_eq!(seam.status()["generation"], 2);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert!(client.tool_names().contains(&"mcp__a__after".to_owned()));

    // Comments and key order are not part of any node's digest: nothing to do.
    std::fs::write(&file, format!("# a comment\n{}", text("after"))).unwrap();
    signal(seam.child.id(), "HUP");
    seam.wait_reload(3);
    let status = seam.status();
    assert_eq!((status["generation"].as_u64(), status["last_reload"]["outcome"].as_str()), (Some(2), Some("unchanged")));
    // Hiding a prompt is a change: its notification comes after any the unchanged reload could have caused.
    std::fs::write(&file, format!("{}prompts:\n  \"mcp__a__hello\": false\n", text("after"))).unwrap();
    signal(seam.child.id(), "HUP");
    assert_eq!(seam.wait_reload(4)["outcome"], "applied");
    while client.prompt_list_changed_count() == 0 {
        client.wait_prompt_list_changed();
    }
    assert_eq!(client.list_changed_count(), 0);
    client.close();
    assert!(seam.terminate().success());
}

#[test]
fn mcp_http_mounts_server_everything_over_streamable_http_and_mcp_stdio_mounts_server_filesystem() {
    let dir = scratch("http-backend");
    let (backend, port) = everything_over_http();
    std::fs::write(dir.join("hello.txt"), "hello from disk").unwrap();
    let file = dir.join("c.yaml");
    let http = format!(
        "  remote:\n    kind: mcp.http\n    url: http://127.0.0.1:{port}/mcp\n    headers: {{ X-Seam-Test: yes }}\n    required: true\n"
    );
    let fs = format!("  fs:\n    kind: mcp.stdio\n    command: {}\n    args: [{}]\n", json!(peer_bin("mcp-server-filesystem")), json!(dir));
    compose(&file, &[http, fs], "");
    let mut client = SdkClient::stdio(&file, &[]);
    assert_eq!(client.call_text("mcp__remote__echo", json!({ "message": "over http" })), "Echo: over http");
    let read = client.call_text("mcp__fs__read_text_file", json!({ "path": dir.join("hello.txt") }));
    assert_eq!(read, "hello from disk");
    // A JSON-RPC error from the server is a typed error result.
    let bad = client.call("mcp__remote__get-sum", json!({ "a": "not a number" }));
    assert_eq!(bad["isError"], true, "{bad}");
    client.close();
    drop(backend);
}

#[test]
fn calls_on_a_restarted_mount_finish_on_the_old_process_before_it_is_retired() {
    let dir = scratch("drain");
    let file = dir.join("c.yaml");
    let pid_file = dir.join("a.pids");
    let text = |tools: &str| {
        format!(
            "seam: 1\nmounts:\n{}",
            flaky_mount("a", &[("FLAKY_TOOLS", tools), ("FLAKY_PID_FILE", &pid_file.display().to_string())], "")
        )
    };
    std::fs::write(&file, text("one")).unwrap();
    let seam = HttpSeam::start(&file, &["--debounce", "20ms"]);
    let url = format!("{}/mcp", seam.base);
    let (mut caller, mut watcher) = (SdkClient::http(&url), SdkClient::http(&url));
    caller.send_only(json!({ "op": "call", "name": "mcp__a__sleep", "args": { "ms": 5000 } }));
    wait_until("the call to be in flight", || seam.status()["calls_in_flight"] == 1);
    let old = pids(&pid_file);
    std::fs::write(&file, text("two")).unwrap();
    watcher.wait_list_changed();
    assert!(watcher.tool_names().contains(&"mcp__a__two".to_owned()));
    assert!(old.iter().all(|p| alive(*p)), "the old process serves its call until it ends");
    let answer = caller.answer();
    assert_eq!(answer["result"]["content"][0]["text"], "slept", "{answer}");
    wait_dead(&old);
    caller.close();
    watcher.close();
    assert!(seam.terminate().success());
}

#[test]
fn outages_and_removed_agents_give_typed_errors_and_a_required_mount_that_fails_rejects_the_reload() {
    let dir = scratch("outage");
    let file = dir.join("c.yaml");
    let reconnect = "    reconnect: { initial_delay: 30s, max_delay: 30s }\n";
    let agents = "agents:\n  reviewer: {}\n";
    compose(&file, &[flaky_mount("a", &[], reconnect), flaky_mount("b", &[], "    required: true\n")], agents);
    let seam = HttpSeam::start(&file, &["--debounce", "20ms"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let mut reviewer = SdkClient::http(&format!("{}/agents/reviewer/mcp", seam.base));

    // The server dies during a call; while it waits to reconnect, its tools stay listed and calls fail typed.
    let crashed = client.call_text("mcp__a__crash", json!({}));
    assert!(crashed.starts_with("MCP_UNAVAILABLE: "), "{crashed}");
    wait_until("a to be degraded", || seam.status()["mounts"]["a"]["state"] == "degraded");
    assert!(client.tool_names().contains(&"mcp__a__ping".to_owned()), "the last good tools stay listed");
    let during = client.call_text("mcp__a__ping", json!({}));
    assert!(during.starts_with("MCP_UNAVAILABLE: MCP server `a` is unavailable"), "{during}");

    // A required mount that cannot start rejects the reload; everything keeps serving.
    let broken = flaky_mount("b", &[("FLAKY_HANG_STARTUP", "1")], "    required: true\n    startup_timeout: 200ms\n");
    compose(&file, &[flaky_mount("a", &[], reconnect), broken], agents);
    assert_eq!(seam.wait_reload(2)["outcome"], "rejected");
    let status = seam.status();
    assert_eq!(status["last_reload"]["diagnostics"][0]["code"], "MOUNT_START_FAILED", "{status}");
    assert_eq!(client.call_text("mcp__b__ping", json!({ "message": "kept" })), "ping: kept");

    // An agent removed by a reload: its endpoint is gone, open sessions included.
    compose(&file, &[flaky_mount("a", &[], reconnect), flaky_mount("b", &[], "    required: true\n")], "");
    assert_eq!(seam.wait_reload(3)["outcome"], "applied");
    let gone = reviewer.send(json!({ "op": "call", "name": "mcp__b__ping", "args": {} }));
    assert_eq!((gone["ok"].as_bool(), gone["code"].as_u64()), (Some(false), Some(404)), "{gone}");
    assert!(gone["error"].as_str().unwrap().contains("no agent `reviewer`"), "{gone}");
    client.close();
    reviewer.close();
    assert!(seam.terminate().success());
}

#[test]
fn a_stdio_session_whose_agent_a_reload_removes_gets_agent_unknown() {
    let dir = scratch("agent-removed");
    let file = dir.join("c.yaml");
    compose(&file, &[flaky_mount("a", &[], "")], "agents:\n  reviewer: {}\n");
    let mut client = SdkClient::stdio(&file, &["--agent", "reviewer", "--debounce", "20ms"]);
    assert_eq!(client.call_text("mcp__a__ping", json!({ "message": "x" })), "ping: x");
    compose(&file, &[flaky_mount("a", &[], "")], "");
    client.wait_list_changed();
    assert!(client.tool_names().is_empty(), "an agent that is gone has no tools");
    let gone = client.call_text("mcp__a__ping", json!({}));
    assert!(gone.starts_with("AGENT_UNKNOWN: the composition has no agent `reviewer`"), "{gone}");
    client.close();
}

#[test]
fn inventory_probe_starts_the_composition_and_reports_ready_per_mount() {
    let dir = scratch("probe");
    let file = dir.join("c.yaml");
    let broken = "  broken:\n    kind: mcp.stdio\n    command: /nonexistent/server\n".to_owned();
    compose(&file, &[everything_mount("ev", ""), broken], "");
    let out = Command::new(seam_bin()).args(["inventory", &file.display().to_string(), "--probe", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let inventory: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ready = |id: &str| inventory["mounts"].as_array().unwrap().iter().find(|m| m["id"] == id).unwrap()["ready"].clone();
    assert_eq!(ready("ev"), "yes");
    assert!(ready("broken").as_str().unwrap().starts_with("no (failed: cannot start `/nonexistent/server`"), "{inventory}");
    // The tools each mount discovered, with the hints their server gives.
    let ev = inventory["mounts"].as_array().unwrap().iter().find(|m| m["id"] == "ev").unwrap();
    let echo = ev["discovered"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__ev__echo").expect("echo listed");
    assert_eq!(echo["annotations"]["readOnlyHint"], true, "{echo}");
    assert_eq!(ev["discovered"].as_array().unwrap().len() as u64, ev["tools"].as_u64().unwrap());
    let human = Command::new(seam_bin()).args(["inventory", &file.display().to_string(), "--probe"]).output().unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.contains("\nev tools:\n") && human.contains("\n  mcp__ev__echo  (read-only, idempotent)\n"), "{human}");
    let without = Command::new(seam_bin()).args(["inventory", &file.display().to_string(), "--format", "json"]).output().unwrap();
    let inventory: Value = serde_json::from_slice(&without.stdout).unwrap();
    assert_eq!(inventory["mounts"][0]["ready"], "not probed");
}

/// The README's main command serves this shipped composition, with the peers on PATH.
#[test]
fn the_shipped_mcp_everything_example_serves_echo() {
    let bin = root().join(".cache/peers/node_modules/.bin");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let file = root().join("compositions/examples/mcp-everything.yaml");
    let (code, result, stderr) = seam_call(&file, "mcp__everything__echo", json!({ "message": "readme" }), &[("PATH", &path)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(result["content"][0]["text"], "Echo: readme");
}

#[test]
fn mcp_http_sends_literal_env_and_bearer_headers_and_output_schemas_are_enforced() {
    let dir = scratch("http-headers");
    let (backend, port) = flaky_over_http(0);
    let file = dir.join("c.yaml");
    let mount = format!(
        "  h:\n    kind: mcp.http\n    url: http://127.0.0.1:{port}/mcp\n    headers: {{ X-Seam-Test: literal }}\n    \
         headers_env: {{ X-From-Env: SEAM_TEST_HEADER }}\n    bearer_token_env: SEAM_TEST_BEARER\n    required: true\n"
    );
    compose(&file, &[mount], "");
    let env = [("SEAM_TEST_HEADER", "from-env"), ("SEAM_TEST_BEARER", "tok-123")];
    let (code, result, stderr) = seam_call(&file, "mcp__h__headers", json!({}), &env);
    assert_eq!(code, 0, "{stderr}");
    let headers: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(headers["x-seam-test"], "literal");
    assert_eq!(headers["x-from-env"], "from-env");
    assert_eq!(headers["authorization"], "Bearer tok-123");

    let (code, result, _) = seam_call(&file, "mcp__h__bad_structured", json!({}), &env);
    assert_eq!(code, 1);
    assert!(result["content"][0]["text"].as_str().unwrap().starts_with("MCP_OUTPUT_INVALID: "), "{result}");

    // The token variable unset: the required mount cannot connect, and says why.
    let (code, _, stderr) = seam_call(&file, "mcp__h__headers", json!({}), &env[..1]);
    assert_eq!(code, 2);
    assert!(stderr.contains("environment variable `SEAM_TEST_BEARER` is not set"), "{stderr}");
    drop(backend);
}

/// A dead Streamable HTTP server does not close rmcp's transport; seam notices by
/// its liveness ping (or a failed call), reports the mount degraded, and
/// reconnects once it is back.
#[test]
fn an_http_server_that_goes_away_is_reconnected_when_it_returns() {
    let dir = scratch("http-outage");
    // The server comes back on the port it had, which no other test can be given meanwhile.
    let port = port_outside_ephemeral_range();
    let backend = || flaky_over_http(port).0;
    let first = backend();
    let file = dir.join("c.yaml");
    let reconnect = "    reconnect: { initial_delay: 100ms, max_delay: 1s, max_attempts: 100 }\n";
    compose(&file, &[format!("  h:\n    kind: mcp.http\n    url: http://127.0.0.1:{port}/mcp\n{reconnect}")], "");
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__h__ping", json!({ "message": "1" })), "ping: 1");
    drop(first);
    // No call needed: an idle connection is pinged every max_delay (1s here).
    wait_until("h to be degraded", || seam.status()["mounts"]["h"]["state"] == "degraded");
    let down = client.call_text("mcp__h__ping", json!({}));
    assert!(down.starts_with("MCP_UNAVAILABLE: "), "{down}");
    assert!(client.tool_names().contains(&"mcp__h__ping".to_owned()), "the last good tools stay listed");
    let second = backend();
    wait_until("h to be ready again", || seam.status()["mounts"]["h"]["state"] == "ready");
    assert_eq!(client.call_text("mcp__h__ping", json!({ "message": "2" })), "ping: 2");

    // A call that meets the dead server is a typed error at once, and marks the connection closed.
    drop(second);
    let down = client.call_text("mcp__h__ping", json!({}));
    assert!(down.starts_with("MCP_UNAVAILABLE: "), "{down}");
    wait_until("h to be degraded again", || seam.status()["mounts"]["h"]["state"] == "degraded");
    client.close();
    assert!(seam.terminate().success());
}

#[test]
fn a_mount_tool_filter_edit_applies_without_restarting_the_server() {
    let dir = scratch("filter-live");
    let file = dir.join("c.yaml");
    let text =
        |deny: &str| format!("seam: 1\nmounts:\n{}    tools: {{ deny: [{deny}] }}\n", flaky_mount("a", &[("FLAKY_TOOLS", "x,y")], ""));
    std::fs::write(&file, text("y")).unwrap();
    let seam = HttpSeam::start(&file, &["--debounce", "20ms"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let pid = client.call_text("mcp__a__pid", json!({}));
    assert!(!client.tool_names().contains(&"mcp__a__y".to_owned()));

    write_atomically(&file, &text("x"));
    client.wait_list_changed();
    let names = client.tool_names();
    assert!(names.contains(&"mcp__a__y".to_owned()) && !names.contains(&"mcp__a__x".to_owned()), "{names:?}");
    assert_eq!(client.call_text("mcp__a__pid", json!({})), pid, "the same process");
    let last = seam.wait_reload(2);
    assert_eq!((last["reconfigured"].clone(), last["built"].clone()), (json!(["a"]), json!([])), "{last}");

    // A change beyond the filter still restarts.
    write_atomically(&file, &text("x").replace("x,y", "x,y,z"));
    client.wait_list_changed();
    assert_ne!(client.call_text("mcp__a__pid", json!({})), pid);
    client.close();
    assert!(seam.terminate().success());
}

/// A composition in a fresh folder `name` with one flaky mount `a` (its `extra`
/// lines added) that logs each call its client cancels: the file and the log.
fn compose_cancel_logged(name: &str, extra_mount: &str, extra: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(name);
    let (file, cancelled) = (dir.join("c.yaml"), dir.join("cancelled.log"));
    let _ = std::fs::remove_file(&cancelled);
    compose(&file, &[flaky_mount("a", &[("FLAKY_CANCEL_LOG", cancelled.to_str().unwrap())], extra_mount)], extra);
    (file, cancelled)
}

/// Over HTTP, the client's `notifications/cancelled` reaches the server,
/// calls alone keep the session from going idle, and a session idle past
/// `session_idle_timeout` is still closed.
#[test]
fn over_http_a_cancelled_call_reaches_the_server_and_calls_count_as_use() {
    // A call_timeout past the test's patience: only the client's cancellation can end `hang` in time.
    let (file, cancelled) = compose_cancel_logged("http-cancel", "    call_timeout: 300s\n", "serve:\n  session_idle_timeout: 1s\n");
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));

    // Calls spread over twice the idle timeout, each sooner than it: the session is in use throughout.
    let started = std::time::Instant::now();
    let mut n = 0;
    while started.elapsed() < std::time::Duration::from_secs(2) {
        assert_eq!(client.call_text("mcp__a__ping", json!({ "message": n })), format!("ping: {n}"));
        n += 1;
        std::thread::sleep(std::time::Duration::from_millis(250));
    }

    // The SDK client gives up after 300 ms and sends `notifications/cancelled`; it reaches the server.
    let given_up = client.send(json!({ "op": "call", "name": "mcp__a__hang", "args": {}, "timeout_ms": 300 }));
    assert_eq!(given_up["ok"], false, "{given_up}");
    wait_until("the server to be told the call was cancelled", || {
        std::fs::read_to_string(&cancelled).is_ok_and(|log| log.contains("hang cancelled"))
    });
    assert_eq!(client.call_text("mcp__a__ping", json!({ "message": "after" })), "ping: after");
    wait_until("the cancelled call to end", || seam.status()["calls_in_flight"] == 0);

    // The thing under test is time passing with nothing sent: wait well past the timeout.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let closed = client.send(json!({ "op": "call", "name": "mcp__a__ping", "args": {} }));
    assert_eq!((closed["ok"].as_bool(), closed["code"].as_u64()), (Some(false), Some(404)), "{closed}");
    client.close();
    assert!(seam.terminate().success());
}

/// Over stdio, on both streams: a cancelled call reaches the server; errors,
/// image blocks and 4 MiB each way pass through; calls in flight together are
/// each answered to their own request.
#[test]
fn over_stdio_a_cancelled_call_reaches_the_server_and_errors_and_blocks_pass_through() {
    let (file, cancelled) = compose_cancel_logged("stdio-cancel", "", "");
    let mut client = SdkClient::stdio(&file, &[]);

    // The SDK client gives up after 300 ms and sends `notifications/cancelled`; seam passes it on to the server.
    let given_up = client.send(json!({ "op": "call", "name": "mcp__a__hang", "args": {}, "timeout_ms": 300 }));
    assert_eq!(given_up["ok"], false, "{given_up}");
    wait_until("the server to be told the call was cancelled", || {
        std::fs::read_to_string(&cancelled).is_ok_and(|log| log.contains("hang cancelled"))
    });

    let broke = client.call("mcp__a__rpc_error", json!({}));
    assert_eq!(broke["isError"], true, "{broke}");
    let text = broke["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("MCP_CALL_FAILED: ") && text.contains("it broke on purpose"), "{broke}");

    let image = client.call("mcp__a__image", json!({}));
    assert_eq!(image["content"][1]["type"], "image", "{image}");
    assert_eq!(image["content"][1]["mimeType"], "image/png", "{image}");
    assert!(image["content"][1]["data"].as_str().is_some_and(|d| d.starts_with("iVBORw0KGgo")), "{image}");

    let invalid = client.call("mcp__a__bad_structured", json!({}));
    assert!(invalid["content"][0]["text"].as_str().unwrap().starts_with("MCP_OUTPUT_INVALID: "), "{invalid}");

    // 4 MiB each way: more than a socket or a pipe holds, so every write on the way waits for its reader.
    let big = "x".repeat(4 << 20);
    assert!(client.call_text("mcp__a__ping", json!({ "message": big })) == format!("ping: {big}"), "the 4 MiB echo came back whole");

    // Calls in flight together are each answered to their own request, the quick ones first.
    let calls = json!([
        { "name": "mcp__a__sleep", "args": { "ms": 200 } },
        { "name": "mcp__a__ping", "args": { "message": "m1" } },
        { "name": "mcp__a__sleep", "args": { "ms": 100 } },
        { "name": "mcp__a__ping", "args": { "message": "m2" } },
    ]);
    let answer = client.send(json!({ "op": "call_all", "calls": calls }));
    let texts: Vec<&str> = answer["results"].as_array().unwrap().iter().map(|r| r["content"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["slept", "ping: m1", "slept", "ping: m2"], "{answer}");
    client.close();
}

/// Over HTTP, a POST whose answer comes first is answered `application/json`;
/// one whose stream brings a server request first (the client's roots) stays SSE.
#[test]
fn http_answers_a_plain_call_as_json_and_streams_a_call_that_asks_the_client_first() {
    let dir = scratch("json-answers");
    let file = dir.join("c.yaml");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/a.ts"), "let a = 1;\n").unwrap();
    let ts = format!(
        "  ts:\n    kind: lsp.stdio\n    command: {}\n    args: [--stdio]\n    extensions: {{ .ts: typescript }}\n",
        json!(peer_bin("typescript-language-server"))
    );
    compose(&file, &[flaky_mount("a", &[], ""), ts], "services:\n  workspace: { root: . }\ntools:\n  lsp: true\n");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let post = |session: Option<String>, body: Value| mcp_post(&client, &url, "2025-06-18", session.as_deref(), &body).send();
        let capabilities = json!({ "roots": { "listChanged": true } });
        let init = post(None, json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": { "name": "raw", "version": "1" } } }))
        .await
        .unwrap();
        assert_eq!(init.headers()["content-type"], "application/json");
        let session = init.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let answer: Value = init.json().await.unwrap();
        assert_eq!(answer["id"], 1, "{answer}");
        assert!(answer["result"]["serverInfo"]["name"].as_str().unwrap().starts_with("seam"), "{answer}");
        // seam's own tools come with a line each in the instructions.
        let instructions = answer["result"]["instructions"].as_str().unwrap_or_default();
        assert!(instructions.starts_with("## seam's tools\n\n`lsp`: for exact relations between symbols"), "{answer}");
        let initialized = post(Some(session.clone()), json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await.unwrap();
        assert_eq!(initialized.status(), 202);

        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "mcp__a__ping", "arguments": { "message": "hi" } } });
        let called = post(Some(session.clone()), call).await.unwrap();
        assert_eq!(called.headers()["content-type"], "application/json");
        let answer: Value = called.json().await.unwrap();
        assert_eq!(answer["id"], 2, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "ping: hi", "{answer}");

        let list = post(Some(session.clone()), json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" })).await.unwrap();
        assert_eq!(list.headers()["content-type"], "application/json", "a listing that asks nothing is JSON too");
        drop(list);

        // The `lsp` tool asks the client's roots before it answers: that answer streams.
        let hover = json!({ "operation": "hover", "file_path": "src/a.ts", "line": 1, "character": 5 });
        let call = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": { "name": "lsp", "arguments": hover } });
        let mut streamed = post(Some(session.clone()), call).await.unwrap();
        assert_eq!(streamed.headers()["content-type"], "text/event-stream");
        let mut text = String::new();
        let mut next_event = async || -> Value {
            loop {
                if let Some(end) = text.find("\n\n") {
                    let event: String = text.drain(..end + 2).collect();
                    let data: String = event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
                    if !data.is_empty() {
                        return serde_json::from_str(&data).unwrap();
                    }
                    continue;
                }
                let chunk = streamed.chunk().await.unwrap().expect("the stream goes on until the answer");
                text.push_str(std::str::from_utf8(&chunk).unwrap());
            }
        };
        let asked = next_event().await;
        assert_eq!(asked["method"], "roots/list", "{asked}");
        let roots = json!({ "roots": [{ "uri": url::Url::from_directory_path(std::fs::canonicalize(&dir).unwrap()).unwrap().to_string() }] });
        let told = post(Some(session.clone()), json!({ "jsonrpc": "2.0", "id": asked["id"], "result": roots })).await.unwrap();
        assert_eq!(told.status(), 202);
        let answer = next_event().await;
        assert_eq!(answer["id"], 4, "{answer}");
        // typescript-language-server's hover of `a` in `let a = 1;`: its declaration and type.
        assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("let a: number"), "{answer}");
    });
}

/// A client that sends its calls and closes its input still gets their answers (rmcp's own rule).
#[test]
fn over_stdio_calls_sent_before_the_input_closes_are_answered() {
    use std::io::{Read as _, Write as _};
    let dir = scratch("stdin-closed");
    let file = dir.join("c.yaml");
    compose(&file, &[flaky_mount("a", &[], "")], "");
    let mut seam = serve_stdio_raw(&file);
    let call =
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "mcp__a__sleep", "arguments": { "ms": 300 } } });
    let mut stdin = seam.stdin.take().unwrap();
    writeln!(stdin, "{}{call}", mcp_handshake_lines()).unwrap();
    drop(stdin);
    let mut out = String::new();
    seam.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    seam.wait().unwrap();
    let answers: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let call = answers.iter().find(|a| a["id"] == 2).unwrap_or_else(|| panic!("no answer to the call in {out}"));
    assert_eq!(call["result"]["content"][0]["text"], "slept", "{call}");
}

/// The wait for those answers is bounded (5 s): a call that would outlast it (here one that hangs, under
/// a `call_timeout` past the test's patience) goes unanswered, and seam still ends.
#[test]
fn over_stdio_a_call_outlasting_the_drain_after_the_input_closes_does_not_keep_seam() {
    use std::io::{Read as _, Write as _};
    let dir = scratch("stdin-closed-hang");
    let file = dir.join("c.yaml");
    compose(&file, &[flaky_mount("a", &[], "    call_timeout: 120s\n")], "");
    let mut seam = serve_stdio_raw(&file);
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "mcp__a__hang", "arguments": {} } });
    let mut stdin = seam.stdin.take().unwrap();
    writeln!(stdin, "{}{call}", mcp_handshake_lines()).unwrap();
    drop(stdin);
    let mut stdout = seam.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = tx.send((out, seam.wait().unwrap()));
    });
    let (out, exit) = rx.recv_timeout(PATIENCE).expect("seam ended within its drain bound, not the call's timeout");
    assert!(exit.success(), "{exit:?}");
    assert!(!out.lines().any(|l| serde_json::from_str::<Value>(l).unwrap()["id"] == 2), "the hanging call was not answered: {out}");
}

/// A stdio client may have 1024 calls running at once (`MAX_CALLS_IN_FLIGHT`).
/// A call past them is answered `TOOL_CALLS_EXCEEDED` at once, before any of
/// the hanging ones, and the client's other messages are still read (a `ping`
/// behind it is answered): the backlog leaves calls to the cap. (Over stdio
/// calls start on one thread in the order they were read, so the call past
/// the cap is the last one written.)
#[test]
fn over_stdio_a_client_may_have_1024_calls_running_and_the_next_is_refused_at_once() {
    use std::io::Write as _;
    for (hanging, refused) in [(1023, false), (1024, true)] {
        let dir = scratch(&format!("in-flight-{hanging}"));
        let file = dir.join("c.yaml");
        compose(&file, &[flaky_mount("a", &[], "    call_timeout: 60s\n")], "");
        let mut seam = serve_stdio_raw(&file);
        let mut answers = Lines::spawn(seam.stdout.take().unwrap(), "");
        let mut stdin = seam.stdin.take().unwrap();
        let mut text = mcp_handshake_lines();
        for id in 0..hanging {
            let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": "mcp__a__hang", "arguments": {} } });
            text.push_str(&format!("{call}\n"));
        }
        let last = json!({ "jsonrpc": "2.0", "id": "last", "method": "tools/call", "params": { "name": "mcp__a__sleep", "arguments": { "ms": 1 } } });
        text.push_str(&format!("{last}\n{}\n", json!({ "jsonrpc": "2.0", "id": "ping", "method": "ping" })));
        stdin.write_all(text.as_bytes()).unwrap();
        let (mut last, mut pinged) = (None, false);
        while last.is_none() || !pinged {
            let line =
                answers.next(PATIENCE).unwrap_or_else(|| panic!("behind {hanging} calls: the last call answered {last:?}, ping {pinged}"));
            let answer: Value = serde_json::from_str(&line).unwrap();
            assert!(!answer["id"].is_number(), "a hanging call was answered: {answer}");
            match answer["id"].as_str() {
                Some("last") => last = Some(answer),
                Some("ping") => pinged = true,
                _ => {}
            }
        }
        let last = last.unwrap();
        let text = last["result"]["content"][0]["text"].as_str().unwrap_or_default();
        if refused {
            assert_eq!(last["result"]["isError"], true, "{last}");
            assert!(text.starts_with("TOOL_CALLS_EXCEEDED: "), "{last}");
        } else {
            assert_eq!(text, "slept", "{last}");
        }
        drop(stdin);
        assert!(seam.wait().unwrap().success());
    }
}

/// A stdio server's answer longer than the line seam reads fails its call at
/// once with `MCP_FRAME_TOO_LARGE` (its id, at the end of the line as the SDK
/// writes it, is read as the line is discarded), not `TOOL_TIMEOUT` after
/// `call_timeout`; the server's next answer is read as usual.
#[test]
fn over_stdio_a_server_answer_past_the_line_limit_fails_its_call_at_once() {
    let dir = scratch("frame-too-large");
    let file = dir.join("c.yaml");
    // The text alone is one byte past the limit. A call_timeout past the test's patience: only the fix answers in time.
    let bytes = (seam_wire::stdio::MAX_LINE + 1).to_string();
    compose(&file, &[flaky_mount("a", &[("FLAKY_ANSWER_BYTES", &bytes)], "    call_timeout: 300s\n")], "");
    let mut client = SdkClient::stdio(&file, &[]);
    let failed = client.call("mcp__a__ping", json!({}));
    assert_eq!(failed["isError"], true, "{failed}");
    let text = failed["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("MCP_FRAME_TOO_LARGE: "), "{text}");
    assert!(client.call_text("mcp__a__pid", json!({})).parse::<u32>().is_ok(), "the server's next answer is read");
    client.close();
}

/// A client line seam cannot read is answered an error with its id where the
/// id reads: not JSON (the id after the error, as the TS SDK writes keys
/// after `params`), or longer than the line limit. A line whose id cannot be
/// read is not answered; the session goes on either way.
#[test]
fn over_stdio_a_client_line_seam_cannot_read_is_answered_with_its_id() {
    use std::io::Write as _;
    let dir = scratch("client-unreadable");
    let file = dir.join("c.yaml");
    compose(&file, &[flaky_mount("a", &[], "")], "");
    let mut seam = serve_stdio_raw(&file);
    let mut answers = Lines::spawn(seam.stdout.take().unwrap(), "");
    let mut stdin = seam.stdin.take().unwrap();
    let mut text = mcp_handshake_lines();
    text.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\",\"params\":{\"cursor\":},\"id\":\"broken-1\"}\n");
    text.push_str("{\"jsonrpc\":\"2.0\",\"method\": oops\n");
    let pad = "p".repeat(seam_wire::stdio::MAX_LINE);
    text.push_str(&format!("{}\n", json!({ "jsonrpc": "2.0", "method": "ping", "params": { "pad": pad }, "id": 7 })));
    text.push_str(&format!("{}\n", json!({ "jsonrpc": "2.0", "id": "after", "method": "ping" })));
    stdin.write_all(text.as_bytes()).unwrap();
    let mut seen = std::collections::BTreeMap::new();
    while !seen.contains_key("\"after\"") {
        let line = answers.next(PATIENCE).unwrap_or_else(|| panic!("no answer to the ping after the lines; answered {seen:?}"));
        let answer: Value = serde_json::from_str(&line).unwrap();
        seen.insert(answer["id"].to_string(), answer);
    }
    let answer = |id: &str| seen.get(id).unwrap_or_else(|| panic!("no answer to {id}: {seen:?}"));
    let broken = answer("\"broken-1\"");
    assert_eq!(broken["error"]["code"], -32700, "{broken}");
    let long = answer("7");
    assert_eq!(long["error"]["code"], -32600, "{long}");
    assert!(long["error"]["message"].as_str().unwrap().contains(&seam_wire::stdio::MAX_LINE.to_string()), "{long}");
    assert_eq!(seen.keys().collect::<Vec<_>>(), ["\"after\"", "\"broken-1\"", "\"init\"", "7"], "{seen:?}");
    drop(stdin);
    assert!(seam.wait().unwrap().success());
}

/// `inventory` does not hide a deny: without a probe an agent's tools are its rules
/// (`mcp__fs__*` then `!mcp__fs__write*`, "… but not …"), and after one, the tools each
/// agent was served and those its rules removed (`agents[].resolved`, `agents[].removed`).
/// Before, `reviewer`, which cannot call `write_file`, read `mcp__fs__*` as `default` did.
#[test]
fn inventory_shows_each_agent_s_rules_and_after_a_probe_its_tools() {
    let dir = scratch("probe-agents");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let file = dir.join("c.yaml");
    let fs =
        format!("  fs:\n    kind: mcp.stdio\n    command: {}\n    args: [{}]\n", json!(peer_bin("mcp-server-filesystem")), json!(files));
    compose(&file, &[fs], "agents:\n  reviewer:\n    tools: { \"mcp__fs__write*\": false }\n");
    let inventory = |args: &[&str]| {
        let out = Command::new(seam_bin()).args(["inventory", &file.display().to_string()]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let agent = |inventory: &Value, name: &str| inventory["agents"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap().clone();
    let rules: Value = serde_json::from_str(&inventory(&["--format", "json"])).unwrap();
    assert_eq!(agent(&rules, "default")["tools"], json!(["mcp__fs__*"]));
    assert_eq!(agent(&rules, "reviewer")["tools"], json!(["mcp__fs__*", "!mcp__fs__write*"]));
    assert!(agent(&rules, "reviewer").get("resolved").is_none(), "no probe, no resolved set");
    let human = inventory(&[]);
    assert!(human.contains("agent reviewer: mcp__fs__* but not mcp__fs__write*\n"), "{human}");

    let probed: Value = serde_json::from_str(&inventory(&["--probe", "--format", "json"])).unwrap();
    let names = |a: &Value, key: &str| a[key].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let (default, reviewer) = (agent(&probed, "default"), agent(&probed, "reviewer"));
    assert!(names(&default, "resolved").contains(&"mcp__fs__write_file".to_owned()), "{default}");
    assert!(!names(&reviewer, "resolved").contains(&"mcp__fs__write_file".to_owned()), "{reviewer}");
    assert_eq!(names(&reviewer, "removed"), ["mcp__fs__write_file"], "{reviewer}");
    assert_eq!(names(&reviewer, "resolved").len() + 1, names(&default, "resolved").len());
    assert_eq!(names(&default, "removed"), Vec::<String>::new());
    let human = inventory(&["--probe"]);
    assert!(human.contains("  removed by its rules: mcp__fs__write_file\n"), "{human}");
    assert!(human.contains(&format!("  served {} tools: ", names(&reviewer, "resolved").len())), "{human}");
}

/// Each fixed tool's schema allows no argument it does not name (`additionalProperties:
/// false`), and a call with one is refused with the tool's code, naming the key: a
/// misspelt optional argument is not ignored without a word. The same calls without it
/// get past the arguments (to whatever the tool answers next).
#[test]
fn fixed_tools_refuse_an_argument_their_schema_does_not_name() {
    let dir = scratch("fixed-extra-arguments");
    std::fs::create_dir_all(dir.join("skills/notes")).unwrap();
    std::fs::write(dir.join("skills/notes/SKILL.md"), "---\nname: notes\ndescription: Notes.\n---\nTake notes.\n").unwrap();
    std::fs::write(dir.join("a.ts"), "const a = 1;\n").unwrap();
    let file = dir.join("c.yaml");
    let mounts = [
        "  search:\n    kind: web.search.searxng\n    base_url: http://127.0.0.1:9\n".to_owned(),
        "  fetch:\n    kind: web.fetch.http\n".to_owned(),
        format!(
            "  ts:\n    kind: lsp.stdio\n    command: {}\n    args: [--stdio]\n    extensions: {{ .ts: typescript }}\n",
            json!(peer_bin("typescript-language-server"))
        ),
        "  skills:\n    kind: skills.fs\n    include_default_roots: false\n    custom_dirs: [./skills]\n".to_owned(),
    ];
    compose(
        &file,
        &mounts,
        "services:\n  workspace: { root: . }\ntools:\n  web_search: true\n  web_fetch: true\n  lsp: true\n  skill: true\n",
    );
    let calls = [
        ("web_search", json!({ "queries": ["x"] }), "WEB_INVALID_ARGUMENTS"),
        ("web_fetch", json!({ "url": "http://127.0.0.1:9/" }), "WEB_INVALID_ARGUMENTS"),
        ("lsp", json!({ "operation": "hover", "file_path": "a.ts", "line": 1, "character": 7 }), "LSP_INVALID_ARGUMENTS"),
        ("skill", json!({ "name": "notes" }), "SKILL_INVALID_ARGUMENTS"),
    ];
    for (tool, arguments, code) in calls {
        let mut misspelt = arguments.clone();
        misspelt["max_result"] = json!(1);
        let (_, result, stderr) = seam_call(&file, tool, misspelt, &[]);
        let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{tool}: {result} {stderr}"));
        assert!(text.starts_with(code) && text.contains("`max_result`"), "{tool}: {text}");
        let (_, result, _) = seam_call(&file, tool, arguments, &[]);
        assert!(!result.to_string().contains("INVALID_ARGUMENTS"), "{tool} without it: {result}");
    }
}

/// What a call without an MCP client behind it (`seam call`) answers when a server
/// wants what only a client could give: URLs opened first (-32042,
/// `MCP_URL_ELICITATION_REQUIRED`), or a task the caller cannot hold, answered though it
/// was not asked for (`MCP_TASK_REQUIRED`). Each is a tool error with its code, not a
/// hang or a relayed protocol error.
#[test]
fn a_call_without_a_client_is_told_what_the_server_wanted_of_one() {
    let dir = scratch("call-without-client");
    let file = dir.join("c.yaml");
    let tasks = format!("{}    env: {{ TASKS_ALWAYS: \"1\" }}\n", node_mount("tasks", "tasks-server.mjs"));
    compose(&file, &[node_mount("apps", "apps-server.mjs"), tasks], "");
    let text = |tool: &str| {
        let (_, result, stderr) = seam_call(&file, tool, json!({}), &[]);
        assert_eq!(result["isError"], true, "{tool}: {result} {stderr}");
        result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
    };
    let gated = text("mcp__apps__gated");
    assert!(gated.starts_with("MCP_URL_ELICITATION_REQUIRED"), "{gated}");
    assert!(gated.contains("https://example.com/gate"), "the URL to open: {gated}");
    let task = text("mcp__tasks__slow");
    assert!(task.starts_with("MCP_TASK_REQUIRED"), "{task}");
}

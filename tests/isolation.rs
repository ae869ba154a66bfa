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

/// `/status`'s `connections` of mount `id`: how many client sessions have one.
fn connections(seam: &HttpSeam, id: &str) -> u64 {
    let status = seam.status();
    status["mounts"][id]["connections"].as_u64().unwrap_or_else(|| panic!("{status}"))
}

/// With `per-session`, each client session has a server of its own, started by its first
/// request and ended when the session ends. `max_connections` is the most sessions at
/// once: at it every session is served, one past it is refused with a clear error, and a
/// session that ends makes room.
#[test]
fn per_session_gives_each_session_its_own_server_up_to_max_connections() {
    let dir = scratch("isolation-per-session");
    let file = dir.join("c.yaml");
    let mount = flaky_mount("f", &[("FLAKY_TOOLS", "alpha")], "    isolation: { per-session: { max_connections: 2 } }\n");
    write_atomically(&file, &format!("seam: 1\nmounts:\n{mount}"));
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    let listed = SdkClient::http(&url).send(json!({ "op": "list" }));
    assert!(
        listed["tools"].as_array().unwrap().iter().any(|t| t["name"] == "mcp__f__pid"),
        "listed before any session's request: {listed}"
    );
    assert_eq!(connections(&seam, "f"), 0, "listing starts no session's connection");

    let mut one = SdkClient::http(&url);
    let mut two = SdkClient::http(&url);
    let first = one.call_text("mcp__f__pid", json!({}));
    assert_eq!(one.call_text("mcp__f__pid", json!({})), first, "a session keeps its connection");
    let second = two.call_text("mcp__f__pid", json!({}));
    assert_ne!(first, second, "each session has a server of its own");
    assert_eq!(connections(&seam, "f"), 2, "at max_connections");

    let mut three = SdkClient::http(&url);
    let refused = three.call("mcp__f__pid", json!({}));
    assert_eq!(refused["isError"], true, "one past max_connections: {refused}");
    let why = refused["content"][0]["text"].as_str().unwrap();
    assert!(why.starts_with("MCP_SESSION_CONNECTIONS_FULL: ") && why.contains("max_connections"), "{why}");

    // A session that ends ends its server, and makes room for another.
    assert_eq!(one.send(json!({ "op": "end_session" }))["ok"], true);
    crate::support::wait_dead(&[first.parse().unwrap()]);
    seam.wait_status("a connection less", |s| s["mounts"]["f"]["connections"] == 1);
    let third = three.call_text("mcp__f__pid", json!({}));
    assert!(third.parse::<u32>().is_ok() && third != first && third != second, "{third}");
    for client in [two, three] {
        client.close();
    }
    assert!(seam.terminate().success());
}

/// A 2026-07-28 client has no session: its connection is its agent's, token's and
/// `clientInfo`'s, so one client's requests share one, another's have their own, and
/// only idleness (`idle_timeout`, here `g`'s) ends it. The official Python SDK client,
/// each run a process (and stateless requests) of its own.
#[test]
fn a_2026_client_has_the_connection_of_the_name_it_gives_until_it_idles() {
    let dir = scratch("isolation-stateless");
    let file = dir.join("c.yaml");
    let f = flaky_mount(
        "f",
        &[("FLAKY_TOOLS", "alpha")],
        "    isolation: per-session
",
    );
    let g = flaky_mount("g", &[("FLAKY_TOOLS", "alpha")], "    isolation: { per-session: { idle_timeout: 1s } }\n");
    let h = flaky_mount("h", &[("FLAKY_TOOLS", "alpha")], "    isolation: { per-session: { max_connections: 2 } }\n");
    write_atomically(&file, &format!("seam: 1\nmounts:\n{f}{g}{h}"));
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    let pid_of = |tool: &str, name: &str| {
        let seen = crate::support::python_peer_with_env("py-tools.py", &["2026-07-28", tool, "{}", &url], &[("SEAM_CLIENT_NAME", name)]);
        assert_eq!(seen["call"]["error"], false, "{seen}");
        seen["call"]["text"].as_str().unwrap().to_owned()
    };
    let (x, x_again, y) = (pid_of("mcp__f__pid", "x"), pid_of("mcp__f__pid", "x"), pid_of("mcp__f__pid", "y"));
    assert_eq!(x, x_again, "one client's requests share a connection");
    assert_ne!(x, y, "another client has its own");
    assert_eq!(connections(&seam, "f"), 2);

    let idle = pid_of("mcp__g__pid", "x");
    crate::support::wait_dead(&[idle.parse().unwrap()]);
    seam.wait_status("the idle connection gone", |s| s["mounts"]["g"]["connections"] == 0);
    assert_ne!(pid_of("mcp__g__pid", "x"), idle, "a client that comes back gets a new connection");

    // Names an agent gives its clients take at most half a mount's connections: of
    // `h`'s 2, one (at the limit), not two (one past).
    pid_of("mcp__h__pid", "x");
    let past =
        crate::support::python_peer_with_env("py-tools.py", &["2026-07-28", "mcp__h__pid", "{}", &url], &[("SEAM_CLIENT_NAME", "y")]);
    let text = past["call"]["text"].as_str().unwrap_or_default();
    assert!(past["call"]["error"] == true && text.starts_with("MCP_SESSION_CONNECTIONS_FULL: "), "{past}");
    assert!(seam.terminate().success());
}

/// server-everything asks for roots when it is initialized, and keeps them for its
/// connection (`get-roots-list`). With `per-session` and `roots: client`, each session's
/// server is started by that session and told its client's roots: each client sees its
/// own, never another's or the workspace's. The official Python SDK client, 2025-11-25.
#[test]
fn per_session_roots_given_at_initialization_are_the_calling_client_s() {
    use crate::support::peer_bin;
    let dir = scratch("isolation-roots");
    let file = dir.join("c.yaml");
    let mount = format!(
        "  everything:\n    kind: mcp.stdio\n    command: {}\n    args: [stdio]\n    roots: client\n    isolation: per-session\n",
        json!(peer_bin("mcp-server-everything"))
    );
    write_atomically(&file, &format!("seam: 1\nmounts:\n{mount}"));
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    let (a, b) = (dir.join("a").display().to_string(), dir.join("b").display().to_string());
    for (mine, theirs) in [(&a, &b), (&b, &a)] {
        let seen = crate::support::python_peer_with_env(
            "py-tools.py",
            &["legacy", "mcp__everything__get-roots-list", "{}", &url],
            &[("SEAM_ROOTS", mine)],
        );
        let text = seen["call"]["text"].as_str().unwrap_or_else(|| panic!("{seen}"));
        assert!(text.contains(&format!("file://{mine}")), "{mine}: {text}");
        assert!(!text.contains(theirs), "{mine}: {text}");
    }
    assert!(seam.terminate().success());
}

/// What a server says outside a call on an agent's or a session's own connection (a log
/// line) is told to that agent's or that session's clients only; on the shared
/// connection, to every session whose agent sees the mount. Each of two clients (of two
/// agents, or two sessions of one) logs a word of its own through the mount and waits
/// until it is told it: by then it was told any earlier line it may hear, since every
/// session hears one stream of events, in order.
#[test]
fn a_connection_s_log_lines_reach_only_the_clients_it_is_for() {
    for (isolation, other_path) in [("per-agent", "agents/b/mcp"), ("per-session", "mcp"), ("shared", "agents/b/mcp")] {
        let dir = scratch(&format!("isolation-logs-{isolation}"));
        let file = dir.join("c.yaml");
        let mount = flaky_mount("f", &[("FLAKY_LOG", "1")], &format!("    isolation: {isolation}\n"));
        write_atomically(&file, &format!("seam: 1\nmounts:\n{mount}agents:\n  b: {{ parent: default }}\n"));
        let seam = HttpSeam::start(&file, &["--no-watch"]);
        let mut first = SdkClient::http(&format!("{}/mcp", seam.base));
        let mut other = SdkClient::http(&format!("{}/{other_path}", seam.base));
        assert!(other.tool_names().contains(&"mcp__f__log".to_owned()), "{isolation}");
        let patience = crate::support::PATIENCE.as_millis() as u64;
        for (client, word) in [(&mut first, "from-first"), (&mut other, "from-other")] {
            assert_eq!(client.call_text("mcp__f__log", json!({ "message": word })), "logged", "{isolation}");
            let told = client.send(json!({ "op": "wait_log", "contains": word, "timeout_ms": patience }));
            assert_eq!(told["ok"], true, "{isolation}: {told}");
            assert_eq!(told["found"]["logger"], "f", "{isolation}: {told}");
        }
        let logs = other.send(json!({ "op": "logs" }));
        let words: Vec<&str> = logs["logs"].as_array().unwrap().iter().filter_map(|l| l["data"].as_str()).collect();
        if isolation == "shared" {
            assert_eq!(words, ["from-first", "from-other"], "one connection, heard by all: {logs}");
        } else {
            assert_eq!(words, ["from-other"], "{isolation}: another's connection is not this client's to hear: {logs}");
        }
        first.close();
        other.close();
        assert!(seam.terminate().success());
    }
}

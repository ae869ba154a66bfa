//! The status page in a real browser: Debian's Chromium, headless, driven by
//! playwright-core (`tests/peers/browser.mjs`), against `seam serve
//! --transport http`. Each state is saved as a PNG under
//! `target/tmp/ui-screenshots/` for a person to look at.

use std::path::Path;
use std::process::Command;

use crate::support::*;
use serde_json::{Value, json};

fn mcp_mount(id: &str) -> String {
    flaky_mount(id, &[], "")
}

fn compose(path: &Path, mounts: &[String], extra: &str) {
    write_atomically(path, &format!("seam: 1\nname: ui-test\nmounts:\n{}{extra}", mounts.concat()));
}

/// The nodes `seam graph` plans for a file.
fn planned_nodes(file: &Path) -> u64 {
    let out = Command::new(seam_bin()).args(["graph", &file.display().to_string(), "--format", "json"]).output().unwrap();
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    plan["nodes"].as_array().unwrap().len() as u64
}

/// Traffic on the page: per agent, mount and tool, the calls of the last five minutes, their
/// rate, errors, p50 and p99, and the last errors by code and message (no argument in it),
/// drawn in place as calls are made, in a real browser.
#[test]
fn the_status_page_shows_traffic_live_in_a_real_browser() {
    let dir = scratch("ui-traffic");
    let file = dir.join("seam.yaml");
    let quota = "quota:\n  - { tools: mcp__alpha__fail, calls: { max: 2, per: 1h } }\n";
    compose(&file, &[mcp_mount("alpha")], quota);
    let seam = HttpSeam::start(&file, &[]);
    let mut browser = Browser::start();
    assert_eq!(browser.goto(&format!("{}/ui", seam.base)), 200);
    browser.wait("#live", Some("live"));
    browser.wait(".card-traffic", Some("No tool was called"));
    browser.send(json!({ "op": "mark" }));

    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    for ms in [20, 40, 60] {
        assert_eq!(client.call_text("mcp__alpha__sleep", json!({ "ms": ms })), "slept");
    }
    // A server's error result twice, then the quota's refusal: three errors, the newest first.
    for _ in 0..3 {
        assert_eq!(client.call("mcp__alpha__fail", json!({}))["isError"], true);
    }
    browser.wait("tr[data-agent=\"default\"][data-tool=\"mcp__alpha__sleep\"][data-calls=\"3\"][data-errors=\"0\"]", None);
    browser.wait("tr[data-tool=\"mcp__alpha__fail\"][data-calls=\"3\"][data-errors=\"3\"]", None);
    assert_eq!(browser.send(json!({ "op": "marked" }))["marked"], true, "drawn in place, not reloaded");
    let sleep = browser.text("tr[data-tool=\"mcp__alpha__sleep\"]");
    assert!(sleep.contains("alpha"), "the mount: {sleep}");
    let p50 = browser.text("tr[data-tool=\"mcp__alpha__sleep\"] td:nth-child(7)");
    let ms: f64 = p50.trim_end_matches(" ms").parse().unwrap_or_else(|e| panic!("{p50}: {e}"));
    assert!((40.0..=60.0).contains(&ms), "the middle call took 40 ms and a bit, within a bucket: {p50}");
    let codes: Vec<String> = (1..=3)
        .map(|n| {
            browser.send(
                json!({ "op": "attr", "selector": format!("tr[data-tool=\"mcp__alpha__fail\"] li:nth-child({n})"), "name": "data-code" }),
            )["value"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(codes, ["QUOTA_EXCEEDED", "tool_error", "tool_error"]);
    let errors = browser.text("tr[data-tool=\"mcp__alpha__fail\"] ul.errors");
    assert!(errors.contains("QUOTA_EXCEEDED: "), "seam's own error, code and message: {errors}");
    assert!(!errors.contains("it failed"), "a server's own words are not shown: {errors}");
    browser.screenshot("traffic");
    client.close();
}

#[test]
fn the_status_page_follows_reloads_live_in_a_real_browser() {
    let dir = scratch("ui-live");
    let file = dir.join("seam.yaml");
    compose(&file, &[mcp_mount("alpha"), mcp_mount("beta")], "");
    let seam = HttpSeam::start(&file, &["--debounce", "20ms"]);

    // Served whole by the server: the rows are there without any script.
    let (code, html) = http_get(&format!("{}/ui", seam.base));
    assert_eq!(code, 200);
    assert!(html.contains("data-mount=\"alpha\"") && html.contains("data-mount=\"beta\""), "{html}");

    let mut browser = Browser::start();
    assert_eq!(browser.goto(&format!("{}/ui", seam.base)), 200);
    browser.wait("#live", Some("live"));
    browser.wait("tr[data-mount=\"alpha\"][data-state=\"ready\"]", None);
    browser.wait("tr[data-mount=\"beta\"][data-state=\"ready\"]", None);
    assert_eq!(browser.text("[data-generation]"), "1");
    assert_eq!(browser.count("[data-section=\"graph\"] svg g.node"), planned_nodes(&file), "one drawn node per planned node");
    assert_eq!(browser.count("[data-section=\"graph\"] svg g.node.state-ready"), 2, "both mounts drawn as ready");
    assert!(browser.text(".card-agents").contains("mcp__alpha__ping"), "the agent's catalog lists the tools");
    browser.screenshot("1-two-mounts-ready");
    // The keyboard's first stop is the skip link to the status.
    let order = browser.send(json!({ "op": "focus_order", "count": 1 }))["order"].clone();
    assert_eq!(order[0], "a:Skip to the status");

    // A valid edit: one mount fewer. The page follows without being reloaded.
    browser.send(json!({ "op": "mark" }));
    compose(&file, &[mcp_mount("alpha")], "");
    let gone = browser.wait_gone("tr[data-mount=\"beta\"]");
    let risen = browser.wait("[data-generation=\"2\"]", None);
    eprintln!("the row left after {gone} ms and the generation rose after {} ms more", risen);
    assert_eq!(browser.send(json!({ "op": "marked" }))["marked"], true, "updated in place, not reloaded");
    browser.wait(".card-outcome .badge", Some("applied"));
    assert!(browser.text(".card-outcome").contains("Retired: beta"), "{}", browser.text(".card-outcome"));
    assert_eq!(browser.count("[data-section=\"graph\"] svg g.node"), planned_nodes(&file));
    browser.screenshot("2-one-mount-removed");

    // An invalid edit: rejected, shown as `seam validate` prints it, and the live generation keeps serving.
    std::fs::write(&file, "seam: 1\nname: ui-test\nmounts:\n  alpha:\n    kind: mcp.stdio\n    command: node\n    startup_timeout: 10\n")
        .unwrap();
    browser.wait(".card-outcome .diagnostic[data-code=\"DURATION_INVALID\"]", None);
    let diagnostic = browser.text(".card-outcome .diagnostic[data-code=\"DURATION_INVALID\"]");
    assert!(diagnostic.contains(&format!("{}:7:22: error[DURATION_INVALID]", file.display())), "{diagnostic}");
    assert!(diagnostic.contains("startup_timeout: 10") && diagnostic.contains('^'), "the source line and the caret: {diagnostic}");
    assert!(browser.text(".card-outcome").contains("generation 2 keeps serving"));
    assert_eq!(browser.text("[data-generation]"), "2");
    browser.wait("tr[data-mount=\"alpha\"][data-state=\"ready\"]", None);
    assert_eq!(browser.count(".card-history tbody tr"), 3, "three reloads so far");
    assert_eq!(browser.send(json!({ "op": "marked" }))["marked"], true);
    browser.screenshot("3-invalid-edit-rejected");

    // A catalog change with no reload: the server swaps its echo tool for two others (11 control tools stay).
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    client.call_text("mcp__alpha__set_tools", json!({ "names": ["first", "second"] }));
    browser.wait(".card-agents details[data-agent=\"default\"] summary", Some("13 tools"));
    browser.wait(".card-agents tr[data-tool=\"mcp__alpha__second\"]", None);
    client.close();

    // A mount's state with no reload: its server dies, the mount reconnects, the row follows.
    let pid = seam.status()["mounts"]["alpha"]["pid"].as_u64().unwrap() as u32;
    signal(pid, "KILL");
    browser.wait("tr[data-mount=\"alpha\"][data-state=\"degraded\"]", None);
    browser.screenshot("4-mount-reconnecting");
    browser.wait("tr[data-mount=\"alpha\"][data-state=\"ready\"]", None);
    assert!(!browser.text("tr[data-mount=\"alpha\"]").contains(&pid.to_string()), "a new process, a new pid");
    assert_eq!(browser.send(json!({ "op": "marked" }))["marked"], true);

    // A rename alone changes no node, and still applies: the header and the tab's title follow.
    std::fs::write(&file, format!("seam: 1\nname: renamed\nmounts:\n{}", mcp_mount("alpha"))).unwrap();
    browser.wait("[data-section=\"name\"]", Some("renamed"));
    assert_eq!(browser.text("title"), "renamed · seam");
    assert_eq!(browser.text("[data-generation]"), "3");
    assert_eq!(browser.send(json!({ "op": "marked" }))["marked"], true);
}

/// Every box and every point of every edge lies inside the drawing's declared size.
fn assert_within_bounds(svg: &str) {
    let attr = |s: &str, name: &str| -> f64 {
        let start = s.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        s[start..].split('"').next().unwrap().parse().unwrap()
    };
    let head = &svg[..svg.find('>').unwrap()];
    let (width, height) = (attr(head, "width"), attr(head, "height"));
    for path in svg.split(" d=\"").skip(1) {
        let numbers: Vec<f64> = path
            .split('"')
            .next()
            .unwrap()
            .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .filter_map(|n| n.parse().ok())
            .collect();
        for p in numbers.chunks_exact(2) {
            assert!(p[0] <= width && p[1] <= height, "({}, {}) outside {width}x{height}", p[0], p[1]);
        }
    }
}

/// Long edges (a chain of agents over many mounts) pass through points no box
/// is at: the drawing is sized to hold them too.
#[test]
fn a_deep_graph_is_drawn_whole() {
    let dir = scratch("ui-deep-graph");
    let file = dir.join("deep.yaml");
    let mounts: String = (0..8).map(|i| format!("  m{i}:\n    kind: mcp.stdio\n    command: node\n")).collect();
    let agents: String =
        (0..5).map(|i| format!("  a{i}:\n    parent: {}\n", if i == 0 { "default".to_owned() } else { format!("a{}", i - 1) })).collect();
    std::fs::write(&file, format!("seam: 1\nmounts:\n{mounts}  skills:\n    kind: skills.fs\ntools:\n  skill: true\nagents:\n{agents}"))
        .unwrap();
    let out = Command::new(seam_bin()).args(["graph", &file.display().to_string(), "--format", "svg"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let svg = String::from_utf8(out.stdout).unwrap();
    assert_eq!(svg.matches("<g class=\"node ").count() as u64, planned_nodes(&file));
    assert_within_bounds(&svg);
}

#[test]
fn seam_graph_draws_the_same_svg() {
    let file = root().join("compositions/coding.yaml");
    let out = Command::new(seam_bin()).args(["graph", &file.display().to_string(), "--format", "svg"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(svg.starts_with("<svg "), "no XML declaration: it embeds as it is");
    assert_eq!(svg.matches("<g class=\"node ").count() as u64, planned_nodes(&file));
    assert!(svg.contains("data-node=\"mount:typescript\""), "{svg}");
    assert_within_bounds(&svg);
    // The page colours a drawing by state without laying it out again.
    let coloured = seam_engine::plan::with_states(&svg, &|node| (node == "mount:typescript").then(|| "failed".to_owned()));
    assert_eq!(coloured.matches("<g class=\"node ").count(), svg.matches("<g class=\"node ").count());
    assert!(
        coloured
            .contains("<g class=\"node kind-mount state-failed\" data-node=\"mount:typescript\"><title>mount:typescript: failed</title>"),
        "{coloured}"
    );
    assert_eq!(coloured.matches("state-").count(), 1);
}

/// With `serve.bearer_token_env`, every endpoint but `/healthz` asks for the
/// token; a browser brings it once in the address and gets a cookie.
#[test]
fn the_status_page_asks_for_the_token() {
    let dir = scratch("ui-token");
    let file = dir.join("seam.yaml");
    compose(&file, &[mcp_mount("alpha")], "serve:\n  bearer_token_env: SEAM_UI_TOKEN\n");
    let token = "s3cret-token-for-the-ui";
    let seam = HttpSeam::start_with_env(&file, &[], &[("SEAM_UI_TOKEN", token)], &[]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let get = |path: &str, header: Option<(&str, String)>| {
        runtime.block_on(async {
            let mut request = client.get(format!("{}{path}", seam.base));
            if let Some((name, value)) = header {
                request = request.header(name, value);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            (status, headers, response.text().await.unwrap())
        })
    };

    assert_eq!(get("/healthz", None).0, 200, "health stays open");
    for path in ["/ui", "/status", "/readyz", "/events", "/ui/page.js"] {
        let (status, _, body) = get(path, None);
        assert_eq!(status, 401, "{path}");
        assert!(!body.contains("<html") && !body.contains("alpha"), "no detail leaks: {body}");
    }
    assert_eq!(get("/ui?token=wrong", None).0, 401);
    assert_eq!(get("/status", Some(("authorization", "Bearer wrong".into()))).0, 401);
    assert_eq!(get("/status", Some(("authorization", format!("Bearer {token}")))).0, 200);
    assert_eq!(get("/status", Some(("authorization", format!("bearer {token}")))).0, 200, "the scheme is case-insensitive");
    // DNS rebinding: a page of another name that resolves here gets nothing.
    assert_eq!(get("/ui", Some(("host", "evil.example".into()))).0, 403);
    assert_eq!(get("/healthz", Some(("host", "evil.example".into()))).0, 200);

    let (status, headers, _) = get(&format!("/ui?token={token}"), None);
    assert_eq!(status, 303);
    assert_eq!(headers["location"], "/ui", "back to a clean address");
    let cookie = headers["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains(token), "the cookie is not the token: {cookie}");
    let session = cookie.split(';').next().unwrap().to_owned();
    let (status, _, page) = get("/ui", Some(("cookie", session.clone())));
    assert_eq!(status, 200);
    assert!(page.contains("data-mount=\"alpha\""));
    assert_eq!(get("/ui", Some(("cookie", "seam_session=forged".into()))).0, 401);
    assert_eq!(get("/ui/page.js", Some(("cookie", session.clone()))).0, 200);
    // The page's cookie opens the page, not the endpoints that run tools or the JSON status.
    assert_eq!(get("/status", Some(("cookie", session.clone()))).0, 401);
    let (status, _, _) = runtime.block_on(async {
        let response = client
            .post(format!("{}/mcp", seam.base))
            .header("cookie", session.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, (), ())
    });
    assert_eq!(status, 401, "no MCP session on the page's cookie");

    // The official MCP client with the token; without it, no session.
    let mut mcp = SdkClient::http_with_token(&format!("{}/mcp", seam.base), token);
    assert!(mcp.tool_names().contains(&"mcp__alpha__ping".to_owned()));
    mcp.close();

    // A real browser: the token once, then the page on a clean address, live.
    let mut browser = Browser::start();
    browser.goto(&format!("{}/ui?token={token}", seam.base));
    browser.wait("#live", Some("live"));
    browser.wait("tr[data-mount=\"alpha\"]", None);
    let href = browser.send(json!({ "op": "attr", "selector": "html", "name": "lang" }));
    assert_eq!(href["value"], "en");
    browser.screenshot("5-after-the-token");
}

/// A reload that points `serve` at a token nobody can read is rejected: it
/// would shut every client out, the page that says why included. The live
/// token keeps working.
#[test]
fn a_reload_to_an_unreadable_token_is_rejected() {
    let dir = scratch("ui-token-reload");
    let file = dir.join("seam.yaml");
    std::fs::write(dir.join("token"), "from-a-file\n").unwrap();
    compose(&file, &[mcp_mount("alpha")], "serve:\n  bearer_token_file: ./token\n");
    let mut seam = HttpSeam::start(&file, &["--debounce", "20ms"]);
    let bearer = |t: &str| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let client = reqwest::Client::builder().no_proxy().build().unwrap();
            client.get(format!("{}/status", seam.base)).bearer_auth(t).send().await.unwrap().status().as_u16()
        })
    };
    assert_eq!(bearer("from-a-file"), 200, "the file's token, its newline dropped");
    compose(&file, &[mcp_mount("alpha")], "serve:\n  bearer_token_file: ./missing\n");
    seam.token = Some("from-a-file".to_owned());
    let rejected = seam.wait_reload(2);
    let d = &rejected["diagnostics"][0];
    assert_eq!(
        (d["code"].as_str(), d["line"].as_u64(), d["column"].as_u64()),
        (Some("SERVE_TOKEN_UNREADABLE"), Some(9), Some(22)),
        "{rejected}"
    );
    assert_eq!(bearer("from-a-file"), 200, "the live token still opens");
    // The live token file rotated in place: read again at the next request, no reload needed.
    std::fs::write(dir.join("token"), "rotated\n").unwrap();
    assert_eq!(bearer("rotated"), 200);
    assert_eq!(bearer("from-a-file"), 401);
    // Once the file exists, the same edit applies.
    std::fs::write(dir.join("missing"), "the-new-one\n").unwrap();
    compose(&file, &[mcp_mount("alpha")], "serve:\n  bearer_token_file: ./missing\n");
    // Applied, the new file's token opens and the rotated one no longer does.
    wait_until("the new token to open", || bearer("the-new-one") == 200);
    assert_eq!(bearer("rotated"), 401);
}

/// The page draws a graph of up to 500 nodes (`DRAW_UP_TO`); one node more,
/// and it says how to draw it instead. Each `web.fetch.http` mount is one
/// node, the `default` agent one more.
#[test]
fn the_page_draws_up_to_500_nodes_and_says_so_past_it() {
    let fetchers = |n: usize| -> String {
        let mounts: String = (0..n).map(|i| format!("  f{i}:\n    kind: web.fetch.http\n")).collect();
        format!("seam: 1\nmounts:\n{mounts}")
    };
    let dir = scratch("ui-draw-limit");
    let file = dir.join("seam.yaml");
    std::fs::write(&file, fetchers(499)).unwrap();
    assert_eq!(planned_nodes(&file), 500);
    let seam = HttpSeam::start(&file, &["--debounce", "20ms"]);
    let page = || http_get(&format!("{}/ui", seam.base)).1;
    // Laid out on a thread of its own; the page has it once it is ready.
    wait_until("the 500-node graph drawn", || page().contains("<svg"));
    assert!(!page().contains("more than this page draws"));

    std::fs::write(&file, fetchers(500)).unwrap();
    assert_eq!(planned_nodes(&file), 501);
    wait_until("the 501-node generation", || seam.status()["generation"] == 2);
    let past = page();
    assert!(past.contains("The graph has 501 nodes, more than this page draws (500)"), "{past}");
    assert!(!past.contains("<svg"), "not drawn");
}

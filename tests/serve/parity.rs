//! Parity: what the official SDK client sees of server-everything beyond its
//! tools, directly and through `seam serve` (stdio and Streamable HTTP), with
//! seam's prefix taken off names. Every feature the direct connection shows
//! must show through seam.

use serde_json::{Value, json};

use super::{compose, everything_mount, node_mount};
use crate::support::*;

/// The server-everything mount's name prefix in seam.
const PREFIX: &str = "mcp__everything__";

/// A list answer's items, each a JSON object, with `key`'s prefix taken off and sorted by it.
fn items(answer: &Value, list: &str, key: &str, prefix: &str) -> Vec<Value> {
    assert_eq!(answer["ok"], true, "{answer}");
    let mut out: Vec<Value> = answer[list]
        .as_array()
        .unwrap_or_else(|| panic!("no `{list}`: {answer}"))
        .iter()
        .map(|item| {
            let mut item = item.clone();
            let name = item[key].as_str().unwrap().to_owned();
            item[key] = json!(name.strip_prefix(prefix).unwrap_or(&name));
            item
        })
        .collect();
    out.sort_by(|a, b| a[key].as_str().cmp(&b[key].as_str()));
    out
}

/// The text of each content item, timestamps aside (server-everything's
/// dynamic resources say when they were made); a blob, which holds one, as
/// its MIME type.
fn texts(result: &Value, list: &str) -> Vec<String> {
    let strip = |t: &str| t.split(" created at ").next().unwrap_or_default().to_owned();
    let text = |c: &Value| {
        let text = c["text"].as_str().or_else(|| c["content"]["text"].as_str()).or_else(|| c["content"]["resource"]["text"].as_str());
        match (text, c["blob"].is_string()) {
            (Some(text), _) => strip(text),
            (None, true) => format!("blob of {}", c["mimeType"]),
            (None, false) => panic!("no text or blob in {c}"),
        }
    };
    result[list].as_array().unwrap_or_else(|| panic!("no `{list}`: {result}")).iter().map(text).collect()
}

/// Everything one client sees of server-everything beyond tools, names without `prefix`.
fn probe(client: &mut SdkClient, prefix: &str) -> Value {
    let resources = items(&client.send(json!({ "op": "resources" })), "resources", "uri", "");
    let templates = items(&client.send(json!({ "op": "templates" })), "templates", "uriTemplate", "");
    let prompts = items(&client.send(json!({ "op": "prompts" })), "prompts", "name", prefix);
    let read = |client: &mut SdkClient, uri: &str| {
        let answer = client.send(json!({ "op": "read", "uri": uri }));
        assert_eq!(answer["ok"], true, "{uri}: {answer}");
        texts(&answer["result"], "contents")
    };
    let listed = read(client, "demo://resource/static/document/startup.md");
    let templated = read(client, "demo://resource/dynamic/text/42");
    // A tool answers with links; each is read back.
    let links = client.call(&format!("{prefix}get-resource-links"), json!({ "count": 3 }));
    let linked: Vec<Vec<String>> = links["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "resource_link")
        .map(|block| read(client, block["uri"].as_str().unwrap()))
        .collect();
    assert_eq!(linked.len(), 3, "{links}");
    let prompt = client.send(json!({ "op": "get_prompt", "name": format!("{prefix}args-prompt"), "args": { "city": "Paris" } }));
    assert_eq!(prompt["ok"], true, "{prompt}");
    let embedded = client.send(json!({
        "op": "get_prompt", "name": format!("{prefix}resource-prompt"), "args": { "resourceType": "Text", "resourceId": "2" }
    }));
    assert_eq!(embedded["ok"], true, "{embedded}");
    let completion = client.send(json!({
        "op": "complete",
        "ref": { "type": "ref/prompt", "name": format!("{prefix}completable-prompt") },
        "argument": { "name": "department", "value": "E" }
    }));
    assert_eq!(completion["ok"], true, "{completion}");
    let server = client.send(json!({ "op": "server" }));
    let capabilities = &server["capabilities"];
    json!({
        "resources": resources,
        "templates": templates,
        "prompts": prompts,
        "read": { "listed": listed, "templated": templated, "linked": linked },
        "prompt": prompt["result"],
        "embedded": texts(&embedded["result"], "messages"),
        "completion": completion["result"],
        "declares": {
            "prompts": capabilities["prompts"].is_object(),
            "resources": capabilities["resources"].is_object(),
            "completions": capabilities["completions"].is_object(),
        },
        "instructions": server["instructions"].as_str().map(|i| i.lines().find(|l| l.starts_with("# ")).unwrap_or_default().to_owned()),
    })
}

/// What server-everything shows a client connected to it directly.
fn direct() -> Value {
    let mut client = SdkClient::direct(&peer_bin("mcp-server-everything"), &["stdio"], &[]);
    let seen = probe(&mut client, "");
    client.close();
    seen
}

#[test]
fn prompts_resources_completions_and_instructions_pass_through_seam_over_stdio_and_http() {
    let direct = direct();
    assert_eq!(direct["resources"].as_array().map(Vec::len), Some(7), "{direct}");
    assert_eq!(direct["prompts"].as_array().map(Vec::len), Some(4), "{direct}");
    let dir = scratch("parity");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");

    let mut client = SdkClient::stdio(&file, &[]);
    assert_eq!(probe(&mut client, PREFIX), direct, "over stdio");
    client.close();

    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(probe(&mut client, PREFIX), direct, "over Streamable HTTP");
    // The instructions come under the mount's id.
    let instructions = client.send(json!({ "op": "server" }))["instructions"].as_str().unwrap_or_default().to_owned();
    assert!(instructions.starts_with("## everything\n\n# Everything Server"), "{instructions}");
    client.close();
    assert!(seam.terminate().success());
}

#[test]
fn mount_filters_and_agents_decide_which_prompts_and_resources_a_client_sees() {
    let dir = scratch("parity-filters");
    let file = dir.join("c.yaml");
    let filters = "    prompts: { allow: [\"simple-*\", \"args-*\"] }\n    resources: { deny: [\"*/startup.md\", \"*/blob/*\"] }\n";
    let agents = "agents:\n  blind:\n    tools: { \"mcp__everything__*\": false }\n  picky:\n    prompts: { \"mcp__everything__*\": false, \"mcp__everything__simple-prompt\": true }\n    resources: { \"every*\": false }\n";
    compose(&file, &[everything_mount("everything", filters)], agents);
    let seam = HttpSeam::start(&file, &["--debounce", "50ms"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let names = |client: &mut SdkClient, op: &str, list: &str, key: &str| -> Vec<String> {
        items(&client.send(json!({ "op": op })), list, key, "").iter().map(|i| i[key].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(names(&mut client, "prompts", "prompts", "name"), ["mcp__everything__args-prompt", "mcp__everything__simple-prompt"]);
    let resources = names(&mut client, "resources", "resources", "uri");
    assert_eq!(resources.len(), 6, "{resources:?}");
    assert!(!resources.iter().any(|r| r.ends_with("/startup.md")), "{resources:?}");
    assert_eq!(names(&mut client, "templates", "templates", "uriTemplate"), ["demo://resource/dynamic/text/{resourceId}"]);
    // `/status` and the status page count what the mount serves, its filters applied.
    let status = seam.status()["mounts"]["everything"].clone();
    assert_eq!(
        (status["prompts"].as_u64(), status["resources"].as_u64(), status["templates"].as_u64()),
        (Some(2), Some(6), Some(1)),
        "{status}"
    );
    let (code, page) = seam.get("/ui");
    assert_eq!(code, 200);
    assert!(page.contains("<span class=\"k\">resources</span> 6"), "{page}");
    // A prompt the filter leaves out is unknown; a URI no visible template or listing covers is not found.
    let hidden = client.send(json!({ "op": "get_prompt", "name": "mcp__everything__completable-prompt" }));
    assert_eq!((hidden["ok"].as_bool(), hidden["code"].as_i64()), (Some(false), Some(-32602)), "{hidden}");
    let unrouted = client.send(json!({ "op": "read", "uri": "demo://resource/dynamic/blob/1" }));
    assert_eq!((unrouted["ok"].as_bool(), unrouted["code"].as_i64()), (Some(false), Some(-32002)), "{unrouted}");

    // An agent that sees none of the mount's tools sees none of its prompts or resources either.
    let mut blind = SdkClient::http(&format!("{}/agents/blind/mcp", seam.base));
    assert!(names(&mut blind, "prompts", "prompts", "name").is_empty());
    assert!(names(&mut blind, "resources", "resources", "uri").is_empty());
    let read = blind.send(json!({ "op": "read", "uri": "demo://resource/static/document/features.md" }));
    assert_eq!(read["code"].as_i64(), Some(-32002), "{read}");

    // An agent's own rules: the last matching prompt rule wins; a mount's resources hidden whole.
    let mut picky = SdkClient::http(&format!("{}/agents/picky/mcp", seam.base));
    assert_eq!(names(&mut picky, "prompts", "prompts", "name"), ["mcp__everything__simple-prompt"]);
    assert!(names(&mut picky, "resources", "resources", "uri").is_empty());
    assert!(names(&mut picky, "templates", "templates", "uriTemplate").is_empty());
    let hidden = picky.send(json!({ "op": "get_prompt", "name": "mcp__everything__args-prompt", "args": { "city": "x" } }));
    assert_eq!(hidden["code"].as_i64(), Some(-32602), "{hidden}");
    let read = picky.send(json!({ "op": "read", "uri": "demo://resource/dynamic/text/1" }));
    assert_eq!(read["code"].as_i64(), Some(-32002), "{read}");
    assert_eq!(picky.call_text("mcp__everything__echo", json!({ "message": "tools stay" })), "Echo: tools stay");
    picky.close();

    // A filter edit applies live, the server not restarted: the open session is told its resources changed, and lists the new set.
    let pid = seam.status()["mounts"]["everything"]["pid"].clone();
    compose(&file, &[everything_mount("everything", "    prompts: { allow: [\"simple-*\", \"args-*\"] }\n")], agents);
    client.wait_resource_list_changed();
    assert_eq!(names(&mut client, "resources", "resources", "uri").len(), 7);
    assert_eq!(names(&mut client, "templates", "templates", "uriTemplate").len(), 2);
    let status = seam.status();
    assert_eq!(status["generation"], 2);
    assert_eq!(status["last_reload"]["reconfigured"], json!(["everything"]), "{status}");
    assert_eq!(status["mounts"]["everything"]["pid"], pid, "the same server process");
    client.close();
    blind.close();
    assert!(seam.terminate().success());
}

/// Two mounts that list the same URIs: `inventory --probe` (as `/status`)
/// shows what each offers and warns on the second that the first serves those
/// URIs (the routing itself: `seam_engine::offers` unit tests).
#[test]
fn inventory_shows_what_each_mount_offers_and_which_uris_a_later_mount_yields() {
    let dir = scratch("parity-shadow");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("first", ""), everything_mount("second", "")], "");
    let out = std::process::Command::new(seam_bin())
        .args(["inventory", "--probe", "--format", "json", &file.display().to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let inventory: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mount = |id: &str| inventory["mounts"].as_array().unwrap().iter().find(|m| m["id"] == id).cloned().unwrap();
    for id in ["first", "second"] {
        let m = mount(id);
        assert_eq!((m["prompts"].as_u64(), m["resources"].as_u64(), m["templates"].as_u64()), (Some(4), Some(7), Some(2)), "{m}");
    }
    assert!(mount("first")["warnings"].is_null(), "{}", mount("first"));
    let warnings = mount("second")["warnings"].clone();
    assert_eq!(warnings.as_array().map(Vec::len), Some(9), "7 resources and 2 templates shadowed: {warnings}");
    assert!(
        warnings
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("`demo://resource/static/document/startup.md` is also listed by mount `first`")),
        "{warnings}"
    );
}

/// Log lines and resource updates that no call asked for reach the sessions
/// that may see them: a log line under the mount's id as its logger, an update
/// of a URI the session subscribed to; `logging/setLevel` reaches the mount.
#[test]
fn mount_log_lines_and_resource_updates_reach_the_session_that_asked() {
    let dir = scratch("parity-events");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let uri = "demo://resource/static/document/features.md";
    for transport in ["stdio", "http"] {
        let seam = (transport == "http").then(|| HttpSeam::start(&file, &[]));
        let mut client = match &seam {
            Some(seam) => SdkClient::http(&format!("{}/mcp", seam.base)),
            None => SdkClient::stdio(&file, &[]),
        };
        let patience = PATIENCE.as_millis() as u64;
        assert_eq!(client.send(json!({ "op": "set_level", "level": "info" }))["ok"], true);
        let subscribed = client.send(json!({ "op": "subscribe", "uri": uri }));
        assert_eq!(subscribed["ok"], true, "{transport}: {subscribed}");
        // server-everything says at level info that it got the subscription.
        let log = client.send(json!({ "op": "wait_log", "contains": uri, "timeout_ms": patience }));
        assert_eq!(log["ok"], true, "{transport}: {log}");
        assert_eq!(log["found"]["logger"], "everything", "{transport}: {log}");
        assert_eq!(log["found"]["level"], "info", "{transport}: {log}");
        // Updates of subscribed resources start with this toggle, one at once.
        client.call("mcp__everything__toggle-subscriber-updates", json!({}));
        let updated = client.send(json!({ "op": "wait_resource_updated", "uri": uri, "timeout_ms": patience }));
        assert_eq!(updated["ok"], true, "{transport}: {updated}");
        assert_eq!(client.send(json!({ "op": "unsubscribe", "uri": uri }))["ok"], true);
        let unknown = client.send(json!({ "op": "subscribe", "uri": "nowhere://x" }));
        assert_eq!(unknown["code"].as_i64(), Some(-32002), "{transport}: {unknown}");
        // A session holds at most 1,024 subscriptions: at the limit every one is taken, one more is refused.
        let uris: Vec<String> = (0..=1024).map(|i| format!("demo://resource/dynamic/text/{i}")).collect();
        let many = client.send(json!({ "op": "subscribe_many", "uris": uris }));
        assert_eq!(many["taken"], 1024, "{transport}: {many}");
        assert_eq!(many["refused"]["code"].as_i64(), Some(-32600), "{transport}: {many}");
        client.close();
        if let Some(seam) = seam {
            assert!(seam.terminate().success());
        }
    }
}

/// A reload that builds a mount anew (a change no live reconfigure takes)
/// hands the new build what the sessions wanted of the old: the new server is
/// subscribed, its updates reach the session, and unsubscribing reaches it.
#[test]
fn a_subscription_follows_its_mount_through_a_rebuild() {
    let dir = scratch("parity-rebuilt-subscription");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let seam = HttpSeam::start(&file, &["--debounce", "50ms"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let uri = "demo://resource/static/document/features.md";
    assert_eq!(client.send(json!({ "op": "subscribe", "uri": uri }))["ok"], true);
    let pid = seam.status()["mounts"]["everything"]["pid"].clone();
    assert_eq!(seam.status()["mounts"]["everything"]["subscriptions"], 1);
    // A new environment is a new server process.
    compose(&file, &[everything_mount("everything", "    env: { GENERATION: \"2\" }\n")], "");
    wait_until("the mount built anew and ready", || {
        let mount = seam.status()["mounts"]["everything"].clone();
        mount["pid"] != pid && mount["state"] == "ready"
    });
    assert_eq!(seam.status()["mounts"]["everything"]["subscriptions"], 1);
    client.call("mcp__everything__toggle-subscriber-updates", json!({}));
    let patience = PATIENCE.as_millis() as u64;
    let updated = client.send(json!({ "op": "wait_resource_updated", "uri": uri, "timeout_ms": patience }));
    assert_eq!(updated["ok"], true, "{updated}");
    let unsubscribed = client.send(json!({ "op": "unsubscribe", "uri": uri }));
    assert_eq!(unsubscribed["ok"], true, "{unsubscribed}");
    assert!(seam.status()["mounts"]["everything"]["subscriptions"].is_null());
    client.close();
    assert!(seam.terminate().success());
}

/// A session that ends gives its subscriptions back, though it never said
/// `notifications/initialized` (so no notifier ever ran for it).
#[test]
fn an_ended_session_gives_its_subscriptions_back() {
    let dir = scratch("parity-ended-subscription");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let seam = HttpSeam::start(&file, &[]);
    let url = format!("{}/mcp", seam.base);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let session = runtime.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let post = |session: Option<&str>, body: Value| mcp_post(&client, &url, "2025-11-25", session, &body).send();
        let init = post(
            None,
            json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } } }),
        )
        .await
        .unwrap();
        let session = init.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let uri = "demo://resource/static/document/features.md";
        let subscribe = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": uri } });
        let answer: Value = post(Some(&session), subscribe).await.unwrap().json().await.unwrap();
        assert_eq!(answer["result"], json!({}), "{answer}");
        session
    });
    assert_eq!(seam.status()["mounts"]["everything"]["subscriptions"], 1);
    let ended = runtime.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        client.delete(&url).header("mcp-session-id", session).send().await.unwrap().status()
    });
    assert_eq!(ended, 200);
    wait_until("the subscription given back", || seam.status()["mounts"]["everything"]["subscriptions"].is_null());
    assert!(seam.terminate().success());
}

/// 2025-11-25's experimental tasks. rmcp carries only the 2026-07-28 tasks
/// extension (`tasks.rs`), so seam declares no `tasks` capability: a 2025-11-25
/// client's task-augmented call is answered at once as a plain call (what that
/// revision asks of a receiver that declares no tasks), `tasks/*` of a mount
/// that declares no tasks extension are method-not-found, and a tool whose
/// server requires a task answers with the server's own error: nothing waits.
#[test]
fn task_augmented_requests_are_answered_at_once_or_refused() {
    let dir = scratch("parity-tasks");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let seam = HttpSeam::start(&file, &[]);
    for transport in ["stdio", "http"] {
        let mut client = match transport {
            "http" => SdkClient::http(&format!("{}/mcp", seam.base)),
            _ => SdkClient::stdio(&file, &[]),
        };
        let server = client.send(json!({ "op": "server" }));
        assert!(server["capabilities"]["tasks"].is_null(), "{transport}: {server}");
        let task = json!({ "ttl": 60000 });
        let echo = json!({ "name": "mcp__everything__echo", "arguments": { "message": "now" }, "task": task });
        let answered = client.send(json!({ "op": "request", "method": "tools/call", "params": echo }));
        assert_eq!(answered["result"]["content"][0]["text"], "Echo: now", "{transport}: {answered}");
        assert!(answered["result"]["task"].is_null(), "{transport}: {answered}");
        for method in ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"] {
            let refused = client.send(json!({ "op": "request", "method": method, "params": { "taskId": "t1" } }));
            assert_eq!(refused["code"].as_i64(), Some(-32601), "{transport}: {method}: {refused}");
        }
        let research = json!({ "name": "mcp__everything__simulate-research-query", "arguments": { "topic": "x" }, "task": task });
        let required = client.send(json!({ "op": "request", "method": "tools/call", "params": research }));
        assert_eq!(required["result"]["isError"], true, "{transport}: {required}");
        assert!(
            required["result"]["content"][0]["text"].as_str().unwrap().contains("requires task augmentation"),
            "{transport}: {required}"
        );
        client.close();
    }
    assert!(seam.terminate().success());
}

/// A server's question while it answers `prompts/get` (a request, not a
/// call) goes to the client that asked for the prompt, over stdio and HTTP.
#[test]
fn a_question_during_prompts_get_reaches_the_client_that_asked() {
    let dir = scratch("parity-prompt-question");
    let file = dir.join("c.yaml");
    let apps = node_mount("apps", "apps-server.mjs");
    compose(&file, &[apps], "");
    let seam = HttpSeam::start(&file, &[]);
    let answers = [("SEAM_ANSWERS", "1")];
    for transport in ["stdio", "http"] {
        let mut client = match transport {
            "http" => SdkClient::http_with_env(&format!("{}/mcp", seam.base), &answers),
            _ => SdkClient::stdio_with_env(&file, &answers),
        };
        let prompt = client.send(json!({ "op": "get_prompt", "name": "mcp__apps__confirm" }));
        assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "confirmed by seam", "{transport}: {prompt}");
        let asked = client.send(json!({ "op": "asked" }));
        assert_eq!(asked["asked"][0]["method"], "elicitation/create", "{transport}: {asked}");
        client.close();
    }
    assert!(seam.terminate().success());
}

/// MCP Apps: a tool's `_meta.ui` is kept, the view it names is readable
/// through seam though its server does not list it, and the `ui` extension
/// its server declares is declared to the clients of the agents that see it.
#[test]
fn an_mcp_apps_view_is_kept_readable_and_its_extension_declared() {
    let dir = scratch("parity-apps");
    let file = dir.join("c.yaml");
    let apps = node_mount("apps", "apps-server.mjs");
    compose(&file, &[apps], "agents:\n  blind:\n    tools: { \"mcp__apps__*\": false }\n");
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let tool = client.tool("mcp__apps__clock");
    assert_eq!(tool["_meta"]["ui"]["resourceUri"], "ui://clock/app.html", "{tool}");
    let view = client.send(json!({ "op": "read", "uri": "ui://clock/app.html" }));
    assert_eq!(view["result"]["contents"][0]["text"], "<html><body>clock</body></html>", "{view}");
    let server = client.send(json!({ "op": "server" }));
    let ui = &server["capabilities"]["extensions"]["io.modelcontextprotocol/ui"];
    assert_eq!(ui["mimeTypes"][0], "text/html;profile=mcp-app", "{server}");
    // The server also declares an extension seam knows nothing of: withheld, and /status says so.
    assert!(server["capabilities"]["extensions"]["com.example/unrouted"].is_null(), "{server}");
    let warnings = seam.status()["mounts"]["apps"]["warnings"].clone();
    assert!(warnings.to_string().contains("extension `com.example/unrouted` is not declared to clients"), "{warnings}");
    let mut blind = SdkClient::http(&format!("{}/agents/blind/mcp", seam.base));
    let server = blind.send(json!({ "op": "server" }));
    assert!(server["capabilities"]["extensions"].is_null(), "an agent that does not see the mount: {server}");
    client.close();
    blind.close();
    assert!(seam.terminate().success());
}

/// The names of the tools a client is served, without `prefix`, sorted.
fn tool_names(client: &mut SdkClient, prefix: &str) -> Vec<String> {
    client
        .tool_names()
        .iter()
        .map(|n| n.strip_prefix(prefix).unwrap_or(n).to_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The first text block of a call's result.
fn first_text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

/// What a server asks during a call (sampling, elicitation in form and URL
/// mode) reaches the client that made the call and its answer goes back;
/// `roots/list` is answered with the workspace root; the client's progress
/// token follows the call upstream and the server's progress comes back. A
/// client that did not declare sampling is not asked: the call fails clearly.
#[test]
fn a_server_s_questions_during_a_call_reach_the_calling_client_and_progress_comes_back() {
    let answers = [("SEAM_ANSWERS", "1")];
    // A direct client offers roots too, as seam does to its mounts.
    let mut direct = SdkClient::direct(&peer_bin("mcp-server-everything"), &["stdio"], &[("SEAM_ANSWERS", "1"), ("SEAM_ROOTS", "/")]);
    let direct_tools = tool_names(&mut direct, "");
    direct.close();
    assert_eq!(direct_tools.len(), 17, "{direct_tools:?}");
    let dir = scratch("parity-asks");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "services: { workspace: { root: . } }\n");
    for transport in ["stdio", "http"] {
        let seam = (transport == "http").then(|| HttpSeam::start(&file, &[]));
        let url = seam.as_ref().map(|seam| format!("{}/mcp", seam.base));
        let connect = |env: &[(&str, &str)]| match &url {
            Some(url) => SdkClient::http_with_env(url, env),
            None => SdkClient::stdio_with_env(&file, env),
        };
        let mut client = connect(&answers);
        assert_eq!(tool_names(&mut client, PREFIX), direct_tools, "{transport}");
        let sampled = client.call("mcp__everything__trigger-sampling-request", json!({ "prompt": "hi", "maxTokens": 10 }));
        assert!(first_text(&sampled).contains("sampled: Resource trigger-sampling-request context: hi"), "{transport}: {sampled}");
        let form = client.call("mcp__everything__trigger-elicitation-request", json!({}));
        assert!(form["content"][1]["text"].as_str().unwrap_or_default().contains("Name: seam"), "{transport}: {form}");
        let url_mode = client.call("mcp__everything__trigger-url-elicitation", json!({ "url": "https://example.com/consent" }));
        assert!(first_text(&url_mode).contains("completed the URL elicitation"), "{transport}: {url_mode}");
        let asked = client.send(json!({ "op": "asked" }));
        let methods: Vec<&str> = asked["asked"].as_array().unwrap().iter().filter_map(|a| a["method"].as_str()).collect();
        assert_eq!(methods, ["sampling/createMessage", "elicitation/create", "elicitation/create"], "{transport}: {asked}");
        let roots = client.call("mcp__everything__get-roots-list", json!({}));
        let workspace = url::Url::from_file_path(dir.canonicalize().unwrap()).unwrap().to_string();
        assert!(roots["content"][0]["text"].as_str().unwrap_or_default().contains(&workspace), "{transport}: {roots}");
        let long = client.send(json!({
            "op": "call", "name": "mcp__everything__trigger-long-running-operation", "args": { "duration": 1, "steps": 3 }, "progress": true
        }));
        assert_eq!(long["ok"], true, "{transport}: {long}");
        let progress = long["progress"].as_array().unwrap();
        assert!(!progress.is_empty() && progress.iter().all(|p| p["total"] == 3), "{transport}: {long}");
        client.close();

        let mut silent = connect(&[]);
        let refused = silent.call("mcp__everything__trigger-sampling-request", json!({ "prompt": "hi", "maxTokens": 10 }));
        assert!(first_text(&refused).contains("did not declare sampling"), "{transport}: {refused}");
        silent.close();
        if let Some(seam) = seam {
            // `/status` says which of the clients' capabilities the mount's server used.
            let asks = seam.status()["mounts"]["everything"]["asks"].clone();
            assert_eq!(asks["sampling"], json!({ "passed_on": 1, "refused": 1 }), "{asks}");
            assert_eq!(asks["elicitation"], json!({ "passed_on": 2, "refused": 0 }), "{asks}");
            assert!(seam.terminate().success());
        }
    }
}

/// `naming: raw`: a mount's tools and prompts keep the server's names; rules
/// still name them `mcp__<server>__<tool>`; a name two mounts of raw names
/// would serve one agent is served to it by neither, and `/status` says so.
#[test]
fn raw_names_are_served_as_the_server_wrote_them_and_a_shared_name_by_neither() {
    let dir = scratch("parity-raw");
    let file = dir.join("c.yaml");
    let agents = "agents:\n  solo:\n    tools: { \"mcp__b__*\": false, \"mcp__a__get-sum\": false }\n";
    compose(&file, &[everything_mount("a", "    naming: raw\n"), everything_mount("b", "    naming: raw\n")], agents);
    let seam = HttpSeam::start(&file, &[]);
    let mut solo = SdkClient::http(&format!("{}/agents/solo/mcp", seam.base));
    let names = solo.tool_names();
    assert!(names.contains(&"echo".to_owned()) && !names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    assert!(!names.contains(&"get-sum".to_owned()), "a rule names the raw tool `mcp__a__get-sum`: {names:?}");
    assert_eq!(solo.call_text("echo", json!({ "message": "raw" })), "Echo: raw");
    let prompt = solo.send(json!({ "op": "get_prompt", "name": "simple-prompt" }));
    assert_eq!(prompt["ok"], true, "{prompt}");

    // The default agent sees both mounts: every name they share is served by neither.
    let mut both = SdkClient::http(&format!("{}/mcp", seam.base));
    assert!(both.tool_names().is_empty(), "{:?}", both.tool_names());
    assert!(both.prompts().is_empty(), "prompt names are shared too: {:?}", both.prompts());
    let prompt = both.send(json!({ "op": "get_prompt", "name": "simple-prompt" }));
    assert_eq!(prompt["code"].as_i64(), Some(-32602), "{prompt}");
    let refused = both.send(json!({ "op": "call", "name": "echo", "args": { "message": "x" } }));
    assert!(first_text(&refused["result"]).starts_with("TOOL_UNKNOWN"), "{refused}");
    let warnings = seam.status()["mounts"]["a"]["warnings"].clone();
    assert!(
        warnings
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == "tool `echo` is also served by mount `b` to agent `default`: neither is served to it"),
        "{warnings}"
    );
    solo.close();
    both.close();
    assert!(seam.terminate().success());
}

/// The official Python SDK client: what it sees of server-everything directly
/// (stdio) it sees through `seam serve` over stdio and Streamable HTTP; and a
/// 2026-07-28 client (`server/discover`, no session) sees what a 2025-11-25
/// client sees, its lists carrying the private, uncached hints (`ttlMs: 0`,
/// `cacheScope: private`: lists depend on the agent).
#[test]
fn the_python_sdk_client_sees_through_seam_what_it_sees_directly_in_both_eras() {
    let dir = scratch("parity-python");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let probe = |era: &str, prefix: &str, target: &[&str]| python_peer("py-probe.py", &[&[era, prefix], target].concat());
    let everything = peer_bin("mcp-server-everything");
    let mut direct = probe("legacy", "", &["stdio", &everything, "stdio"]);
    let file_arg = file.display().to_string();
    let mut stdio = probe("legacy", PREFIX, &["stdio", seam_bin(), "serve", &file_arg]);
    let seam = HttpSeam::start(&file, &[]);
    let url = format!("{}/mcp", seam.base);
    let mut legacy = probe("legacy", PREFIX, &[&url]);
    let mut modern = probe("2026-07-28", PREFIX, &[&url]);
    assert!(seam.terminate().success());
    assert_eq!(legacy["version"], "2025-11-25", "{legacy}");
    assert_eq!(modern["version"], "2026-07-28", "{modern}");
    for hints in ["tools_hints", "resources_hints"] {
        assert_eq!(modern[hints], json!({ "ttlMs": 0, "cacheScope": "private" }), "{modern}");
    }
    assert_eq!(modern["call"], "Echo: python");
    assert_eq!(direct["tools"].as_array().map(Vec::len), Some(17), "{direct}");
    // In the 2026-07-28 era, inside the call's input_required result and the client's retry.
    for seen in [&direct, &stdio, &legacy, &modern] {
        assert_eq!(seen["sampled"], true, "the client answered the server's sampling request: {seen}");
    }
    for seen in [&mut direct, &mut stdio, &mut legacy, &mut modern] {
        let seen = seen.as_object_mut().unwrap();
        for era_bound in ["version", "tools_hints", "resources_hints", "sampled"] {
            seen.remove(era_bound);
        }
    }
    assert_eq!(stdio, direct, "through seam over stdio");
    assert_eq!(legacy, direct, "through seam over Streamable HTTP");
    assert_eq!(modern, direct, "through seam in the 2026-07-28 era");
}

/// `roots: client`: a server that asks for roots during a call gets the
/// calling client's; a client that offers none leaves it the workspace root.
/// (The Python SDK server asks in each call; server-everything asks once, on a
/// timer after the handshake, when no call is running.)
#[test]
fn with_roots_from_the_client_a_server_sees_the_calling_client_s_roots() {
    let dir = scratch("parity-client-roots");
    let file = dir.join("c.yaml");
    compose(&file, &[super::py_asks_mount("asks", "    roots: client\n")], "services: { workspace: { root: . } }\n");
    let theirs = dir.join("their project");
    std::fs::create_dir_all(&theirs).unwrap();
    let their_uri = url::Url::from_file_path(&theirs).unwrap().to_string();
    let workspace = url::Url::from_file_path(dir.canonicalize().unwrap()).unwrap().to_string();
    let seam = HttpSeam::start(&file, &[]);
    let theirs = theirs.display().to_string();
    let mut offering = SdkClient::http_with_env(&format!("{}/mcp", seam.base), &[("SEAM_ROOTS", theirs.as_str())]);
    assert_eq!(offering.call_text("mcp__asks__ask-roots", json!({})), format!("roots {their_uri}"));
    offering.close();
    let mut silent = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(silent.call_text("mcp__asks__ask-roots", json!({})), format!("roots {workspace}"));
    silent.close();
    assert!(seam.terminate().success());
}

/// A URL elicitation a server passes through seam, and its completion
/// (`notifications/elicitation/complete`), reach the client that was asked;
/// so does a server's "URL elicitation required" error (-32042).
#[test]
fn a_url_elicitation_s_completion_reaches_the_client_that_was_asked() {
    let dir = scratch("parity-elicitation-complete");
    let file = dir.join("c.yaml");
    let apps = node_mount("apps", "apps-server.mjs");
    compose(&file, &[apps], "");
    let answers = [("SEAM_ANSWERS", "1")];
    for transport in ["stdio", "http"] {
        let seam = (transport == "http").then(|| HttpSeam::start(&file, &[]));
        let mut client = match &seam {
            Some(seam) => SdkClient::http_with_env(&format!("{}/mcp", seam.base), &answers),
            None => SdkClient::stdio_with_env(&file, &answers),
        };
        assert_eq!(client.call_text("mcp__apps__consent", json!({})), "consent: accept", "{transport}");
        // A server's "URL elicitation required" reaches the client as that error, its data intact.
        let gated = client.send(json!({ "op": "call", "name": "mcp__apps__gated", "args": {} }));
        assert_eq!((gated["ok"].as_bool(), gated["code"].as_i64()), (Some(false), Some(-32042)), "{transport}: {gated}");
        assert_eq!(gated["data"]["elicitations"][0]["elicitationId"], "gate-1", "{transport}: {gated}");
        let patience = PATIENCE.as_millis() as u64;
        let done = client.send(json!({ "op": "wait_elicitation_complete", "id": "consent-1", "timeout_ms": patience }));
        assert_eq!(done["ok"], true, "{transport}: {done}");
        client.close();
        if let Some(seam) = seam {
            assert!(seam.terminate().success());
        }
    }
}

/// A reload that moves the workspace root and keeps the mount: its server is
/// told its roots changed (`roots/list_changed`), and is given the new root.
#[test]
fn a_moved_workspace_root_reaches_a_kept_mount_s_server() {
    let dir = scratch("parity-moved-root");
    let file = dir.join("c.yaml");
    for sub in ["first", "second"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let with_root =
        |root: &str| compose(&file, &[everything_mount("everything", "")], &format!("services: {{ workspace: {{ root: {root} }} }}\n"));
    with_root("first");
    let seam = HttpSeam::start(&file, &["--debounce", "50ms"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let roots_text = |client: &mut SdkClient| {
        client.call("mcp__everything__get-roots-list", json!({}))["content"][0]["text"].as_str().unwrap_or_default().to_owned()
    };
    let uri = |sub: &str| url::Url::from_file_path(dir.canonicalize().unwrap().join(sub)).unwrap().to_string();
    assert!(roots_text(&mut client).contains(&uri("first")));
    let pid = seam.status()["mounts"]["everything"]["pid"].clone();
    with_root("second");
    // server-everything asks for the roots again when told they changed.
    wait_until("the server to be given the new root", || roots_text(&mut client).contains(&uri("second")));
    assert_eq!(seam.status()["mounts"]["everything"]["pid"], pid, "the mount was kept, not restarted");
    client.close();
    assert!(seam.terminate().success());
}

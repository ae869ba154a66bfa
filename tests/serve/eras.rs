//! Both protocol eras through seam (issue 28). A 2026-07-28 client cannot be sent a
//! request: a question a (legacy) mount's server asks during its call comes back in
//! the call's `input_required` result, and the call waits, still running, for the
//! client's retry with its answers under a `requestState` seam minted. The state is
//! bound to its agent, tool and arguments, used once, and expires at
//! `serve.input_timeout`; each refusal has its code.

use serde_json::{Value, json};

use super::{compose, everything_mount};
use crate::support::*;

const SAMPLING: &str = "mcp__everything__trigger-sampling-request";

/// A `tools/call` of a client that declares sampling, as a 2026-07-28 client sends it, at
/// `path`; a retry carries `requestState` and `inputResponses`.
fn modern_call(base: &str, path: &str, tool: &str, arguments: Value, retry: Option<(&str, Value)>) -> Value {
    let mut params = json!({ "name": tool, "arguments": arguments });
    if let Some((state, responses)) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = responses;
    }
    modern_request(base, path, "tools/call", params, json!({ "sampling": {} }))
}

/// Mount `modern` of the rmcp server at `url`, spoken to in 2026-07-28.
fn modern_mount(url: &str, extra: &str) -> String {
    format!("  modern:\n    kind: mcp.http\n    url: {url}\n    protocol: modern\n{extra}")
}

fn sampled(text: &str) -> Value {
    json!({ "q1": { "role": "assistant", "model": "probe", "content": { "type": "text", "text": text } } })
}

#[test]
fn a_modern_client_answers_a_legacy_server_s_question_by_retrying_under_a_bound_single_use_state() {
    let dir = scratch("eras-request-state");
    let file = dir.join("c.yaml");
    // Patient while a retry must be taken, whatever the machine's pace; 2s for the expiry below.
    let with_timeout = |timeout: &str| format!("serve:\n  input_timeout: {timeout}\nagents:\n  other: {{}}\n");
    compose(&file, &[everything_mount("everything", "")], &with_timeout("1m"));
    let seam = HttpSeam::start(&file, &[]);
    let base = seam.base.clone();
    let arguments = json!({ "prompt": "hi", "maxTokens": 5 });
    let call = |path: &str, arguments: &Value, retry: Option<(&str, Value)>| modern_call(&base, path, SAMPLING, arguments.clone(), retry);
    let code_of = |answer: &Value| answer["error"]["data"]["code"].as_str().map(str::to_owned).unwrap_or_else(|| panic!("{answer}"));

    let first = call("/mcp", &arguments, None);
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(first["result"]["inputRequests"]["q1"]["method"], "sampling/createMessage", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();

    // Refused, and the call keeps waiting: a state seam never gave, another agent's
    // endpoint, another request, an answer that is no sampling result.
    let mut forged = state.clone();
    forged.replace_range(..1, if forged.starts_with('0') { "1" } else { "0" });
    assert_eq!(code_of(&call("/mcp", &arguments, Some((&forged, sampled("x"))))), "INPUT_STATE_UNKNOWN");
    assert_eq!(code_of(&call("/agents/other/mcp", &arguments, Some((&state, sampled("x"))))), "INPUT_STATE_WRONG_AGENT");
    let other = json!({ "prompt": "bye", "maxTokens": 5 });
    assert_eq!(code_of(&call("/mcp", &other, Some((&state, sampled("x"))))), "INPUT_STATE_WRONG_REQUEST");
    assert_eq!(code_of(&call("/mcp", &arguments, Some((&state, json!({ "q1": { "nope": 1 } }))))), "INPUT_RESPONSE_INVALID");

    // The answer reaches the server, and the call completes with what it made of it.
    let done = call("/mcp", &arguments, Some((&state, sampled("a fine sample"))));
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{done}"));
    assert!(text.contains("a fine sample"), "{done}");
    // Used once.
    assert_eq!(code_of(&call("/mcp", &arguments, Some((&state, sampled("again"))))), "INPUT_STATE_UNKNOWN");

    // Past `input_timeout` (read when a call starts waiting), the call was cancelled and its state says so.
    compose(&file, &[everything_mount("everything", "")], &with_timeout("2s"));
    wait_until("the 2s timeout to be live", || seam.status()["generation"] == 2);
    let waiting = call("/mcp", &arguments, None);
    let late = waiting["result"]["requestState"].as_str().unwrap().to_owned();
    assert_eq!(seam.status()["calls_in_flight"], 1, "the call runs while it waits");
    // Asked with other arguments, so that the asking takes nothing: refused while the call waits.
    let mut asked = Value::Null;
    wait_until("input_timeout to pass", || {
        asked = call("/mcp", &json!({ "prompt": "probe", "maxTokens": 1 }), Some((&late, sampled("x"))));
        asked["error"]["data"]["code"] != "INPUT_STATE_WRONG_REQUEST"
    });
    assert_eq!(code_of(&asked), "INPUT_STATE_EXPIRED");
    wait_until("the expired call to be cancelled", || seam.status()["calls_in_flight"] == 0);
    // Said once; then the state is unknown, as any used one.
    assert_eq!(code_of(&call("/mcp", &arguments, Some((&late, sampled("too late"))))), "INPUT_STATE_UNKNOWN");
    assert!(seam.terminate().success());
}

/// server-everything over Streamable HTTP (`super::everything_over_http`) as mount `id`.
/// Over HTTP each of the server's questions comes on its call's own stream, so seam
/// knows which waiting call it is for however many there are (over stdio it cannot
/// tell two sessions' calls apart, and refuses the question).
fn everything_http_mount(id: &str, extra: &str) -> (Peer, String) {
    let (backend, port) = super::everything_over_http();
    (backend, format!("  {id}:\n    kind: mcp.http\n    url: http://127.0.0.1:{port}/mcp\n{extra}"))
}

/// An agent holds at most `MAX_WAITING_CALLS` (256) calls waiting for their clients'
/// answers: at the bound each asks its client; the question of the call past it is
/// refused to the server that asked (and counted so in `/status`), and that call
/// completes with what the server made of it.
#[test]
fn an_agent_holds_at_most_256_waiting_calls_and_refuses_the_question_past_them() {
    let dir = scratch("eras-waiting-bound");
    let file = dir.join("c.yaml");
    let (_backend, mount) = everything_http_mount("everything", "");
    compose(&file, &[mount], "serve:\n  input_timeout: 10m\nagents:\n  other: {}\n");
    let seam = HttpSeam::start(&file, &[]);
    let arguments = json!({ "prompt": "hi", "maxTokens": 5 });
    for n in 1..=256 {
        let waiting = modern_call(&seam.base, "/mcp", SAMPLING, arguments.clone(), None);
        assert_eq!(waiting["result"]["resultType"], "input_required", "call {n}: {waiting}");
    }
    let past = modern_call(&seam.base, "/mcp", SAMPLING, arguments.clone(), None);
    assert!(past["error"].is_null() && past["result"].get("resultType").is_none_or(|t| t != "input_required"), "{past}");
    let told = past["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{past}"));
    assert!(told.contains("INPUT_CALLS_EXCEEDED"), "the server was told why: {past}");
    let asks = &seam.status()["mounts"]["everything"]["asks"];
    assert_eq!(asks["sampling"], json!({ "passed_on": 256, "refused": 1 }), "{asks}");
    // The bound is each agent's: another's call still waits.
    let other = modern_call(&seam.base, "/agents/other/mcp", SAMPLING, arguments, None);
    assert_eq!(other["result"]["resultType"], "input_required", "{other}");
    assert!(seam.terminate().success());
}

/// A question a legacy server asks while it answers a 2026-07-28 client's `prompts/get`
/// comes back `input_required` too, and the retry's answer reaches it; the state is
/// bound to that method and prompt.
#[test]
fn a_modern_client_answers_a_question_asked_during_prompts_get() {
    let dir = scratch("eras-prompt");
    let file = dir.join("c.yaml");
    compose(&file, &[super::node_mount("apps", "apps-server.mjs")], "");
    let seam = HttpSeam::start(&file, &[]);
    let elicitation = json!({ "elicitation": {} });
    let prompt = json!({ "name": "mcp__apps__confirm", "arguments": {} });
    let asked = modern_request(&seam.base, "/mcp", "prompts/get", prompt.clone(), elicitation.clone());
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    assert_eq!(asked["result"]["inputRequests"]["q1"]["method"], "elicitation/create", "{asked}");
    let state = asked["result"]["requestState"].clone();
    // Bound to its method: the same state in a `tools/call` is refused.
    let as_call = modern_request(
        &seam.base,
        "/mcp",
        "tools/call",
        json!({ "name": "mcp__apps__confirm", "arguments": {}, "requestState": state, "inputResponses": {} }),
        elicitation.clone(),
    );
    assert_eq!(as_call["error"]["data"]["code"], "INPUT_STATE_WRONG_REQUEST", "{as_call}");
    let mut retry = prompt;
    retry["requestState"] = state;
    retry["inputResponses"] = json!({ "q1": { "action": "accept", "content": { "name": "eve" } } });
    let answered = modern_request(&seam.base, "/mcp", "prompts/get", retry, elicitation);
    assert_eq!(answered["result"]["messages"][0]["content"]["text"], "confirmed by eve", "{answered}");
    assert!(seam.terminate().success());
}

/// A question a 2026-07-28 client did not declare it can answer is not put to it: its
/// server is refused at once, and the call completes with what the server made of that.
#[test]
fn a_modern_client_is_not_asked_what_it_did_not_declare() {
    let dir = scratch("eras-undeclared");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let seam = HttpSeam::start(&file, &[]);
    let params = json!({ "name": SAMPLING, "arguments": { "prompt": "hi", "maxTokens": 5 } });
    let answered = modern_request(&seam.base, "/mcp", "tools/call", params, json!({ "elicitation": {} }));
    assert!(answered["error"].is_null() && answered["result"].get("inputRequests").is_none(), "{answered}");
    let told = answered["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answered}"));
    assert!(told.contains("did not declare sampling"), "the server was told why: {answered}");
    assert_eq!(seam.status()["calls_in_flight"], 0, "nothing waits: {answered}");
    assert!(seam.terminate().success());
}

/// A legacy server's "URL elicitation required" (-32042) has no place in 2026-07-28: to
/// such a client the URLs are the call's questions, and its retry calls the tool afresh
/// (here the server refuses again, so the retry is asked again, under a new state).
#[test]
fn a_url_elicitation_required_is_a_modern_client_s_question_and_its_retry_calls_again() {
    let dir = scratch("eras-url-required");
    let file = dir.join("c.yaml");
    compose(&file, &[super::node_mount("apps", "apps-server.mjs")], "");
    let seam = HttpSeam::start(&file, &[]);
    let url_mode = json!({ "elicitation": { "url": {} } });
    let call = json!({ "name": "mcp__apps__gated", "arguments": {} });
    let first = modern_request(&seam.base, "/mcp", "tools/call", call.clone(), url_mode.clone());
    let question = &first["result"]["inputRequests"]["q1"];
    assert_eq!((question["method"].as_str(), question["params"]["mode"].as_str()), (Some("elicitation/create"), Some("url")), "{first}");
    assert_eq!(question["params"]["url"], "https://example.com/gate", "{first}");
    let mut retry = call;
    retry["requestState"] = first["result"]["requestState"].clone();
    retry["inputResponses"] = json!({ "q1": { "action": "accept" } });
    let again = modern_request(&seam.base, "/mcp", "tools/call", retry, url_mode);
    assert_eq!(again["result"]["resultType"], "input_required", "called afresh, and refused again: {again}");
    assert_ne!(again["result"]["requestState"], first["result"]["requestState"], "{again}");
    assert!(seam.terminate().success());
}

/// A 2026-07-28 client's `subscriptions/listen` (request id 42) at `base`/mcp for
/// `notifications`: what the stream carried until `read` (given all read so far, after
/// each read; it may cause what the test waits for) says it is enough, or 30 s passed.
pub(super) fn listen(base: &str, notifications: Value, mut read: impl FnMut(&str) -> bool) -> String {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    let body = json!({ "jsonrpc": "2.0", "id": 42, "method": "subscriptions/listen", "params": { "notifications": notifications, "_meta": meta } });
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let sent = mcp_post(&client, &format!("{base}/mcp"), "2026-07-28", None, &body).header("mcp-method", "subscriptions/listen");
        let mut stream = sent.send().await.unwrap();
        let mut seen = String::new();
        let reading = async {
            while let Some(chunk) = stream.chunk().await.unwrap() {
                seen.push_str(&String::from_utf8_lossy(&chunk));
                if read(&seen) {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(PATIENCE, reading).await;
        seen
    })
}

/// `subscriptions/listen`, a 2026-07-28 client's stream of what changes (it has no
/// session and no GET stream): acknowledged first, then a reload that adds a mount is
/// `tools/list_changed`, and an update of a resource it named is `resources/updated`,
/// each marked with the listen request's id.
#[test]
fn a_modern_client_listens_for_list_changes_and_resource_updates() {
    let dir = scratch("eras-listen");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let seam = HttpSeam::start(&file, &[]);
    let uri = "demo://resource/static/document/features.md";
    let notifications = json!({ "toolsListChanged": true, "resourceSubscriptions": [uri] });
    let (mut reloaded, mut asked_updates) = (false, false);
    let base = seam.base.clone();
    let seen = listen(&seam.base, notifications, |seen| {
        if seen.contains("notifications/subscriptions/acknowledged") && !reloaded {
            reloaded = true;
            compose(&file, &[everything_mount("everything", ""), super::node_mount("apps", "apps-server.mjs")], "");
        }
        if seen.contains("notifications/tools/list_changed") && !asked_updates {
            asked_updates = true;
            // Updates of subscribed resources start with this toggle (a request of its own, from a thread of its own).
            let base = base.clone();
            std::thread::spawn(move || modern_call(&base, "/mcp", "mcp__everything__toggle-subscriber-updates", json!({}), None))
                .join()
                .unwrap();
        }
        seen.contains("notifications/resources/updated")
    });
    assert!(seen.contains("notifications/subscriptions/acknowledged"), "{seen}");
    assert!(seen.contains("notifications/tools/list_changed"), "{seen}");
    assert!(seen.contains(&format!("\"uri\":\"{uri}\"")), "{seen}");
    assert!(seen.contains("\"io.modelcontextprotocol/subscriptionId\":42"), "{seen}");
    assert!(!seen.contains("notifications/prompts/list_changed"), "nothing it did not ask for: {seen}");
    assert!(seam.terminate().success());
}

/// One agent cannot hold what every agent shares: `max_listen_streams_per_agent` listen
/// streams open at once, and `max_subscriptions_per_agent` resource subscriptions, its
/// streams' and its sessions' together; one past either is refused
/// `SUBSCRIPTIONS_EXCEEDED`, another agent is not, a place given back is taken again, and
/// `/status` counts what each agent holds. (Listen streams are no sessions: before,
/// 300 streams of 1,024 URIs each held 307,200 upstream subscriptions.)
#[test]
fn listen_streams_and_subscriptions_are_bounded_per_agent() {
    let dir = scratch("eras-listen-bounds");
    let file = dir.join("c.yaml");
    let serve = "serve:\n  max_listen_streams_per_agent: 2\n  max_subscriptions_per_agent: 3\nagents:\n  other: {}\n";
    compose(&file, &[everything_mount("everything", "")], serve);
    let seam = HttpSeam::start(&file, &[]);
    let uri = |n: u32| format!("demo://resource/dynamic/text/{n}");
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        // A listen stream at `path` for `uris`, read until it says `until` or ends; the stream (kept open) and what it said.
        // (rmcp acknowledges a stream before seam's handler can refuse it: a refusal follows its acknowledgement.)
        let listen = |path: &str, uris: Vec<String>, until: &'static str| {
            let body = json!({ "jsonrpc": "2.0", "id": 42, "method": "subscriptions/listen",
                "params": { "notifications": { "toolsListChanged": true, "resourceSubscriptions": uris }, "_meta": meta } });
            let sent =
                mcp_post(&client, &format!("{}{path}", seam.base), "2026-07-28", None, &body).header("mcp-method", "subscriptions/listen");
            async move {
                let mut stream = sent.send().await.unwrap();
                let mut seen = String::new();
                let read = async {
                    while !seen.contains(until) {
                        let Some(chunk) = stream.chunk().await.unwrap() else { break };
                        seen.push_str(&String::from_utf8_lossy(&chunk));
                    }
                };
                tokio::time::timeout(PATIENCE, read).await.expect("what the stream was to say");
                (stream, seen)
            }
        };
        let status = || async { client.get(format!("{}/status", seam.base)).send().await.unwrap().json::<Value>().await.unwrap() };
        let (first, said) = listen("/mcp", vec![uri(1), uri(2)], "acknowledged").await;
        assert!(said.contains("acknowledged"), "{said}");
        let (_second, said) = listen("/mcp", vec![], "acknowledged").await;
        assert!(said.contains("acknowledged"), "{said}");
        let (_, said) = listen("/mcp", vec![], "\"error\"").await;
        assert!(
            said.contains("SUBSCRIPTIONS_EXCEEDED") && said.contains("max_listen_streams_per_agent"),
            "one stream past the bound: {said}"
        );
        let (_other, said) = listen("/agents/other/mcp", vec![], "acknowledged").await;
        assert!(said.contains("acknowledged"), "another agent's stream: {said}");
        let now = status().await;
        assert_eq!(now["clients"]["agents"]["default"], json!({ "sessions": 0, "listen_streams": 2, "subscriptions": 2 }), "{now}");

        // A legacy session of the same agent: its third subscription is the agent's third, its fourth one past.
        let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "bounds", "version": "1" } } });
        let opened = mcp_post(&client, &format!("{}/mcp", seam.base), "2025-11-25", None, &initialize).send().await.unwrap();
        let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let post = |body: Value| mcp_post(&client, &format!("{}/mcp", seam.base), "2025-11-25", Some(&session), &body).send();
        post(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await.unwrap();
        let subscribe =
            |id: u32, n: u32| json!({ "jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": { "uri": uri(n) } });
        let answer = post(subscribe(2, 3)).await.unwrap().text().await.unwrap();
        assert!(answer.contains("\"result\""), "the agent's third: {answer}");
        let answer = post(subscribe(3, 4)).await.unwrap().text().await.unwrap();
        assert!(answer.contains("SUBSCRIPTIONS_EXCEEDED") && answer.contains("max_subscriptions_per_agent"), "one past: {answer}");

        // The first stream ends: its stream's place and its two subscriptions are given back.
        drop(first);
        let given_back = || async {
            loop {
                if status().await["clients"]["agents"]["default"]["subscriptions"] == 1 {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(PATIENCE, given_back()).await.expect("the ended stream's subscriptions given back");
        let answer = post(subscribe(4, 4)).await.unwrap().text().await.unwrap();
        assert!(answer.contains("\"result\""), "a place given back is taken again: {answer}");
        let (_third, said) = listen("/mcp", vec![], "acknowledged").await;
        assert!(said.contains("acknowledged"), "{said}");
    });
    assert!(seam.terminate().success());
}

/// What a client sends wrong is refused with the error JSON-RPC has for it, quoting at
/// most a prefix of what it sent: params of the wrong JSON type (`requestState: 5`,
/// `taskId: 5`) are -32602 naming why, not -32601 as if the method were unknown; an
/// unknown method of 5,000 characters is -32601 with a prefix of its name; a URI past
/// `MAX_URI_BYTES` is refused before it is routed, and a listen stream's acknowledgement
/// does not echo one.
#[test]
fn malformed_requests_get_json_rpc_s_errors_and_are_not_echoed_whole() {
    let dir = scratch("eras-malformed");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "");
    let seam = HttpSeam::start(&file, &[]);
    let wrong_state = json!({ "name": "mcp__everything__echo", "arguments": { "message": "x" }, "requestState": 5 });
    let answer = modern_request(&seam.base, "/mcp", "tools/call", wrong_state, json!({}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("expected a string"), "{answer}");
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let answer = modern_request(&seam.base, "/mcp", "tasks/get", json!({ "taskId": 5 }), tasks);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let long_method = "m".repeat(5000);
    let answer = modern_request(&seam.base, "/mcp", &long_method, json!({}), json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    assert!(answer.to_string().len() < 400, "a prefix of the method: {answer}");
    let long_uri = format!("demo://resource/dynamic/text/{}", "7".repeat(20_000));
    let answer = modern_request(&seam.base, "/mcp", "resources/read", json!({ "uri": long_uri }), json!({}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer.to_string().len() < 400, "a prefix of the URI: {answer}");
    // At the bound (`MAX_URI_BYTES`, 8192) a URI is routed (a template of server-everything matches it); one byte past it, refused.
    let at_bound = |extra: usize| {
        let prefix = "demo://resource/dynamic/text/";
        format!("{prefix}{}", "7".repeat(8192 - prefix.len() + extra))
    };
    let answer = modern_request(&seam.base, "/mcp", "resources/read", json!({ "uri": at_bound(0) }), json!({}));
    assert!(!answer.to_string().contains("past the 8192"), "at the bound: {:.300}", answer.to_string());
    let answer = modern_request(&seam.base, "/mcp", "resources/read", json!({ "uri": at_bound(1) }), json!({}));
    assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains("past the 8192")), "{answer}");
    let huge_uri = format!("demo://resource/dynamic/text/{}", "7".repeat(2 << 20));
    let seen =
        listen(&seam.base, json!({ "toolsListChanged": true, "resourceSubscriptions": [huge_uri] }), |seen| seen.contains("acknowledged"));
    assert!(seen.contains("acknowledged") && seen.len() < 4096, "the acknowledgement leaves the URI out: {} bytes", seen.len());
    assert!(seam.terminate().success());
}

/// A server of both revisions, written with rmcp (the official Rust SDK), in this
/// process over Streamable HTTP: its `era` tool answers the revision each call came in,
/// and it counts the `initialize` handshakes it was asked for.
mod both_eras_server {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmcp::model::*;
    use rmcp::service::{RequestContext, RoleServer};
    use rmcp::{ErrorData, ServerHandler};

    #[derive(Clone, Default)]
    pub struct Server {
        pub initializes: Arc<AtomicUsize>,
        pub discovers: Arc<AtomicUsize>,
        /// `subscriptions/listen` streams opened; `end_listens` ends those open.
        pub listens: Arc<AtomicUsize>,
        pub end_listens: Arc<tokio::sync::Notify>,
        pub tool_lists: Arc<AtomicUsize>,
    }

    impl ServerHandler for Server {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_prompts().build())
        }

        fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
            Some(requested.clone())
        }

        async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
            self.listens.fetch_add(1, Ordering::SeqCst);
            tokio::select! {
                _ = context.cancelled() => {}
                _ = self.end_listens.notified() => {}
            }
            Ok(())
        }

        async fn list_prompts(
            &self,
            _: Option<PaginatedRequestParams>,
            _: RequestContext<RoleServer>,
        ) -> Result<ListPromptsResult, ErrorData> {
            Ok(ListPromptsResult::with_all_items(vec![Prompt::new("who", Some("Asks the client who is there, then greets them"), None)]))
        }

        async fn get_prompt(&self, request: GetPromptRequestParams, _: RequestContext<RoleServer>) -> Result<GetPromptResponse, ErrorData> {
            let answer =
                request.input_responses.as_ref().and_then(|r| r.get("q1")).filter(|_| request.request_state.as_deref() == Some("who-1"));
            match answer {
                Some(answer) => {
                    let name = answer["content"]["name"].as_str().unwrap_or("nobody");
                    let message = PromptMessage::new_text(Role::User, format!("greet {name}"));
                    Ok(GetPromptResponse::Complete(GetPromptResult::new(vec![message])))
                }
                None => Ok(GetPromptResponse::InputRequired(InputRequiredResult::new(Some(question()), Some("who-1".to_owned())))),
            }
        }

        async fn initialize(
            &self,
            request: InitializeRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<InitializeResult, ErrorData> {
            self.initializes.fetch_add(1, Ordering::SeqCst);
            context.peer.set_peer_info(request.clone());
            self.negotiate_initialize(&request)
        }

        async fn discover(&self, _: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
            self.discovers.fetch_add(1, Ordering::SeqCst);
            Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), self.get_info()))
        }

        async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
            self.tool_lists.fetch_add(1, Ordering::SeqCst);
            let schema: JsonObject = serde_json::from_value(serde_json::json!({ "type": "object" })).unwrap();
            let schema = Arc::new(schema);
            Ok(ListToolsResult::with_all_items(vec![
                Tool::new("era", "The protocol revision of this call", schema.clone()),
                Tool::new("who", "Asks the client who is there (a 2026-07-28 input_required), and says", schema.clone()),
                Tool::new("asks", "Asks the client `n` times over, then says so", schema.clone()),
                Tool::new("two", "Asks who is there and for a sampling in one round, then says both", schema.clone()),
                Tool::new("caps", "The capabilities the client declared in this call", schema.clone()),
                Tool::new("headers", "The MCP headers this call came with over HTTP", schema.clone()),
                Tool::new("needs-sampling", "Refuses (-32021) a client that did not declare sampling", schema),
            ]))
        }

        // Sampling is deprecated by SEP-2577, and still what this server asks in `two`.
        #[allow(deprecated)]
        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let text = |text: String| Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])));
            if request.name == "era" {
                return text(context.protocol_version().map(|v| v.as_str().to_owned()).unwrap_or_default());
            }
            let declared = context.client_capabilities().unwrap_or_default();
            if request.name == "headers" {
                let parts = context.extensions.get::<axum::http::request::Parts>();
                let header = |name: &str| parts.and_then(|p| p.headers.get(name)).and_then(|v| v.to_str().ok()).map(str::to_owned);
                let names = ["mcp-method", "mcp-name", "mcp-protocol-version", "mcp-session-id"];
                let heard: serde_json::Map<_, _> = names.iter().map(|n| (n.to_string(), serde_json::json!(header(n)))).collect();
                return text(serde_json::Value::Object(heard).to_string());
            }
            if request.name == "caps" {
                return text(serde_json::to_string(&declared).unwrap());
            }
            if request.name == "needs-sampling" {
                if declared.sampling.is_some() {
                    return text("sampling declared".to_owned());
                }
                let data = serde_json::json!({ "requiredCapabilities": { "sampling": {} } });
                return Err(ErrorData::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, "this tool samples", Some(data)));
            }
            if request.name == "two" {
                let responses = request.input_responses.unwrap_or_default();
                if let (Some(who), Some(sampled)) = (responses.get("who"), responses.get("say")) {
                    let said = format!("{} says {}", who["content"]["name"].as_str().unwrap_or("nobody"), sampled["content"]["text"]);
                    return text(said);
                }
                let mut questions = question();
                let who = questions.remove("q1").unwrap();
                let message = SamplingMessage::user_text("say something");
                let say = InputRequest::CreateMessage(CreateMessageRequest::new(CreateMessageRequestParams::new(vec![message], 5)));
                let questions = InputRequests::from([("who".to_owned(), who), ("say".to_owned(), say)]);
                return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(questions), Some("two-1".to_owned()))));
            }
            if request.name == "asks" {
                let n = request.arguments.as_ref().and_then(|a| a.get("n")).and_then(serde_json::Value::as_u64).unwrap_or(1);
                let asked = request
                    .request_state
                    .as_deref()
                    .and_then(|s| s.strip_prefix("round-"))
                    .and_then(|k| k.parse::<u64>().ok())
                    .unwrap_or(0);
                if asked == n {
                    return text(format!("asked {n} times"));
                }
                let state = format!("round-{}", asked + 1);
                return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(question()), Some(state))));
            }
            // `who`: asked until the answer comes back with the state this server gave.
            let answer =
                request.input_responses.as_ref().and_then(|r| r.get("q1")).filter(|_| request.request_state.as_deref() == Some("who-1"));
            match answer {
                Some(answer) => text(format!("there is {}", answer["content"]["name"].as_str().unwrap_or("nobody"))),
                None => Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(question()), Some("who-1".to_owned())))),
            }
        }
    }

    /// The one question this server asks: who is there (a form).
    fn question() -> InputRequests {
        let params = serde_json::json!({
            "mode": "form",
            "message": "Who is there?",
            "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] },
        });
        InputRequests::from([("q1".to_owned(), InputRequest::Elicitation(ElicitRequest::new(serde_json::from_value(params).unwrap())))])
    }
}

/// `protocol: modern` speaks 2026-07-28 to a mount's server: `server/discover`, no
/// `initialize`, every call a request of that revision (its `Mcp-Method` and `Mcp-Name`
/// headers, no session id), and `server/discover` again to
/// see that an idle server still answers (that revision has no `ping`); `legacy` (the
/// default) keeps the handshake. Either is served to a client of either era.
#[test]
fn a_mount_speaks_the_revision_its_protocol_names() {
    let server = both_eras_server::Server::default();
    let (_runtime, url) = rmcp_over_http(server.clone());
    let dir = scratch("eras-modern-mount");
    let file = dir.join("c.yaml");
    let mounts = [
        modern_mount(&url, "    reconnect: { initial_delay: 1s, max_delay: 1s }\n"),
        format!("  legacy:\n    kind: mcp.http\n    url: {url}\n"),
    ];
    compose(&file, &mounts, "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__modern__era", json!({})), "2026-07-28");
    assert_eq!(client.call_text("mcp__legacy__era", json!({})), "2025-11-25");
    let modern = modern_call(&seam.base, "/mcp", "mcp__modern__era", json!({}), None);
    assert_eq!(modern["result"]["content"][0]["text"], "2026-07-28", "{modern}");
    assert_eq!(server.initializes.load(std::sync::atomic::Ordering::SeqCst), 1, "only the legacy mount asked for `initialize`");
    // Each 2026-07-28 request says what it is in its headers, and belongs to no session.
    let heard: Value = serde_json::from_str(&client.call_text("mcp__modern__headers", json!({}))).unwrap();
    let expected =
        json!({ "mcp-method": "tools/call", "mcp-name": "headers", "mcp-protocol-version": "2026-07-28", "mcp-session-id": null });
    assert_eq!(heard, expected);
    let legacy: Value = serde_json::from_str(&client.call_text("mcp__legacy__headers", json!({}))).unwrap();
    assert!(legacy["mcp-session-id"].is_string(), "a session's requests carry its id: {legacy}");
    // An idle connection is probed each `max_delay` (1s here) with `server/discover`, and stays up.
    wait_until("a liveness probe", || server.discovers.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    assert_eq!(seam.status()["mounts"]["modern"]["state"], "ready");
    assert_eq!(client.call_text("mcp__modern__era", json!({})), "2026-07-28");
    client.close();
    assert!(seam.terminate().success());
}

/// A modern mount whose server ends its listen stream opens it again after a liveness
/// interval (1 s here), however often it pings meanwhile, and then lists everything
/// again: what changed while no stream was open is not lost.
#[test]
fn a_modern_mount_listens_again_after_its_stream_ends_and_lists_again() {
    let server = both_eras_server::Server::default();
    let (_runtime, url) = rmcp_over_http(server.clone());
    let dir = scratch("eras-listen-again");
    let file = dir.join("c.yaml");
    let reconnect = "    reconnect: { initial_delay: 1s, max_delay: 1s }\n";
    compose(&file, &[modern_mount(&url, reconnect)], "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let count = |n: &std::sync::Arc<std::sync::atomic::AtomicUsize>| n.load(std::sync::atomic::Ordering::SeqCst);
    wait_until("a stream to be open", || count(&server.listens) >= 1);
    let (listens, lists, probes) = (count(&server.listens), count(&server.tool_lists), count(&server.discovers));
    // While the stream is open, nothing is listed again: not at a liveness probe either.
    wait_until("two liveness probes", || count(&server.discovers) >= probes + 2);
    assert_eq!(count(&server.tool_lists), lists, "listed again with the stream open");
    server.end_listens.notify_waiters();
    wait_until("the stream to be opened again", || count(&server.listens) > listens);
    wait_until("every list to be read again", || count(&server.tool_lists) > lists);
    assert_eq!(seam.status()["mounts"]["modern"]["state"], "ready");
    assert!(seam.terminate().success());
}

/// `protocol: auto` speaks whichever revision the server does: 2026-07-28 to the rmcp
/// server, which discovers; the handshake to server-everything (a TS SDK 1.x server),
/// which answers `server/discover` as a legacy server does, over stdio and over HTTP.
/// `/status` says which each connection speaks.
#[test]
fn protocol_auto_speaks_the_revision_each_server_does() {
    let (_runtime, url) = rmcp_over_http(both_eras_server::Server::default());
    let auto = "    protocol: auto\n";
    let (_backend, everything_http) = everything_http_mount("http", auto);
    let dir = scratch("eras-auto");
    let file = dir.join("c.yaml");
    let mounts = [format!("  modern:\n    kind: mcp.http\n    url: {url}\n{auto}"), everything_mount("stdio", auto), everything_http];
    compose(&file, &mounts, "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__modern__era", json!({})), "2026-07-28");
    assert_eq!(client.call_text("mcp__stdio__echo", json!({ "message": "hi" })), "Echo: hi");
    assert_eq!(client.call_text("mcp__http__echo", json!({ "message": "hi" })), "Echo: hi");
    client.close();
    let mounts = &seam.status()["mounts"];
    let spoken = |id: &str| mounts[id]["protocol_version"].as_str().map(str::to_owned);
    assert_eq!(spoken("modern").as_deref(), Some("2026-07-28"), "{mounts}");
    for legacy in ["stdio", "http"] {
        assert!(spoken(legacy).is_some_and(|v| v.as_str() < "2026-07-28"), "{legacy}: {mounts}");
    }
    assert!(seam.terminate().success());
}

/// A 2026-07-28 server asks by answering `input_required`: seam answers it for the call's
/// client, a session's (asked by request) or a 2026-07-28 client's (asked in its own
/// `input_required`, then its retry), and sends the call again with the answers and the
/// server's state, never showing that state to the client.
#[test]
fn a_modern_server_s_questions_reach_clients_of_both_eras() {
    let (_runtime, url) = rmcp_over_http(both_eras_server::Server::default());
    let dir = scratch("eras-modern-asks");
    let file = dir.join("c.yaml");
    compose(&file, &[modern_mount(&url, "")], "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    // A session's client that does not declare elicitation is not asked, and the call says why.
    let mut silent = SdkClient::http(&format!("{}/mcp", seam.base));
    let refused = silent.call_text("mcp__modern__who", json!({}));
    assert!(refused.starts_with("MCP_INPUT_REQUIRED:") && refused.contains("did not declare elicitation"), "{refused}");
    silent.close();
    // One that does (the TS SDK's, answering a form with the name `seam`) is asked by request.
    let mut client = SdkClient::http_with_env(&format!("{}/mcp", seam.base), &[("SEAM_ANSWERS", "1")]);
    assert_eq!(client.call_text("mcp__modern__who", json!({})), "there is seam");
    // As many rounds as the server asks, up to `MAX_INPUT_ROUNDS` (10); one more gives the call up.
    assert_eq!(client.call_text("mcp__modern__asks", json!({ "n": 10 })), "asked 10 times");
    let past = client.call_text("mcp__modern__asks", json!({ "n": 11 }));
    assert!(past.starts_with("MCP_INPUT_ROUNDS_EXCEEDED:"), "{past}");
    // So is a question asked while the server answers `prompts/get`.
    let prompt = client.send(json!({ "op": "get_prompt", "name": "mcp__modern__who" }));
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "greet seam", "{prompt}");
    client.close();
    // A 2026-07-28 client: the question comes back in seam's own input_required.
    let elicitation = json!({ "elicitation": {} });
    let params = json!({ "name": "mcp__modern__who", "arguments": {} });
    let asked = modern_request(&seam.base, "/mcp", "tools/call", params.clone(), elicitation.clone());
    assert_eq!(asked["result"]["inputRequests"]["q1"]["params"]["message"], "Who is there?", "{asked}");
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(!state.contains("who-1"), "the server's state stays inside seam");
    let mut retry = params;
    retry["requestState"] = json!(state);
    retry["inputResponses"] = json!({ "q1": { "action": "accept", "content": { "name": "eve" } } });
    let answered = modern_request(&seam.base, "/mcp", "tools/call", retry, elicitation);
    assert_eq!(answered["result"]["content"][0]["text"], "there is eve", "{answered}");
    assert!(seam.terminate().success());
}

/// The parity probe in all four pairs of eras: the official Python SDK's client, in a
/// session (legacy) and as a 2026-07-28 client, calls through seam the tools of a
/// Python SDK server that ask it, mid-call, for a sampling, a form and a URL
/// elicitation and its roots; the server is mounted in each revision (`protocol:
/// legacy`, `protocol: modern`, both over stdio, `roots: client`). Every question
/// reaches the client and every answer the server, and progress the server reports
/// after an answer reaches the client (a 2026-07-28 client's on its retry's stream):
/// each pair sees what the client of that era sees calling the server directly.
#[test]
fn every_question_crosses_seam_in_all_four_pairs_of_eras() {
    let (python, server) = (python(), root().join("tests/peers/py-asks-server.py").display().to_string());
    let mount = |protocol: &str| super::py_asks_mount(protocol, &format!("    roots: client\n    protocol: {protocol}\n"));
    let dir = scratch("eras-four-pairs");
    let file = dir.join("c.yaml");
    compose(&file, &[mount("legacy"), mount("modern")], "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    for era in ["legacy", "2026-07-28"] {
        let direct = python_peer("py-asks-client.py", &[era, "", "stdio", &python, &server]);
        let answered = json!({
            "ask-sample": "sampled hello",
            "ask-form": "there is python",
            "ask-url": "url accept",
            "ask-roots": "roots file:///probe/root",
            "ask-then-progress": "python was told how far it came",
        });
        assert_eq!(direct["answered"], answered, "{era} directly: {direct}");
        let asked = json!(["sampling", "elicitation:form", "elicitation:url", "roots", "elicitation:form"]);
        assert_eq!(direct["asked"], asked, "{era} directly: {direct}");
        assert_eq!(direct["progress"], json!([[1.0, 2.0], [2.0, 2.0]]), "{era} directly: {direct}");
        for protocol in ["legacy", "modern"] {
            let through = python_peer("py-asks-client.py", &[era, &format!("mcp__{protocol}__"), &url]);
            assert_eq!(through, direct, "a {era} client through seam to the mount speaking {protocol}");
        }
    }
    assert!(seam.terminate().success());
}

/// A mount speaking 2026-07-28 follows its server's `subscriptions/listen` stream (that
/// revision has no session to notify) and honours its caching hints: a prompt-list
/// change lists the prompts again but not the tools, whose hint (`ttlMs` 300000) has not
/// lapsed, so a tool the server added without saying so stays unseen; a tool-list
/// change lists them again; a resource a client subscribes to through seam (by
/// `resources/subscribe`, or in its own listen stream) goes into the stream's filter,
/// and its update reaches the client.
#[test]
fn a_modern_mount_follows_its_server_s_listen_stream_and_caching_hints() {
    let dir = scratch("eras-modern-listen");
    let file = dir.join("c.yaml");
    compose(&file, &[super::py_asks_mount("modern", "    protocol: modern\n")], "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__modern__quietly", json!({})), "added quietly");
    client.wait_prompt_list_changed();
    let prompts = client.prompts();
    assert!(prompts.iter().any(|p| p["name"] == "mcp__modern__later"), "{prompts:?}");
    assert!(!client.tool_names().contains(&"mcp__modern__unsaid".to_owned()), "the tool list's hint has not lapsed");
    assert_eq!(client.call_text("mcp__modern__grow", json!({})), "grew");
    client.wait_list_changed();
    let tools = client.tool_names();
    assert!(["mcp__modern__grown", "mcp__modern__unsaid"].iter().all(|t| tools.contains(&(*t).to_owned())), "{tools:?}");
    let uri = "asks://note";
    assert_eq!(client.send(json!({ "op": "subscribe", "uri": uri }))["ok"], true);
    assert_eq!(client.call_text("mcp__modern__touch", json!({})), "touched");
    let updated = client.send(json!({ "op": "wait_resource_updated", "uri": uri, "timeout_ms": PATIENCE.as_millis() as u64 }));
    assert_eq!(updated["ok"], true, "{updated}");
    client.close();
    // A 2026-07-28 client's listen stream is fed by the mount's as well.
    let base = seam.base.clone();
    let mut touched = false;
    let seen = listen(&seam.base, json!({ "resourceSubscriptions": [uri] }), |seen| {
        if seen.contains("notifications/subscriptions/acknowledged") && !touched {
            touched = true;
            let base = base.clone();
            std::thread::spawn(move || modern_call(&base, "/mcp", "mcp__modern__touch", json!({}), None)).join().unwrap();
        }
        seen.contains("notifications/resources/updated")
    });
    assert!(seen.contains(&format!("\"uri\":\"{uri}\"")), "{seen}");
    assert!(seam.terminate().success());
}

/// What a 2026-07-28 mount's server is told of the calling client: the capabilities that
/// client declared (roots always: seam answers them when the client cannot), so that
/// the server asks nothing the client cannot answer, and its refusal (-32021) of a client
/// that lacks one reaches the client as that error. A round of two questions reaches a
/// client of either era whole: a 2026-07-28 client in one `input_required`, under the
/// server's keys; a retry that leaves one unanswered is asked it again, and answers
/// not asked for are ignored.
#[test]
fn a_modern_mount_s_server_sees_what_the_calling_client_declared_and_asks_it_whole_rounds() {
    let (_runtime, url) = rmcp_over_http(both_eras_server::Server::default());
    let dir = scratch("eras-modern-capabilities");
    let file = dir.join("c.yaml");
    compose(&file, &[modern_mount(&url, "")], "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let call = |tool: &str, capabilities: Value, retry: Option<(&Value, Value)>| {
        let mut params = json!({ "name": tool, "arguments": {} });
        if let Some((state, responses)) = retry {
            params["requestState"] = state.clone();
            params["inputResponses"] = responses;
        }
        modern_request(&seam.base, "/mcp", "tools/call", params, capabilities)
    };
    let caps = call("mcp__modern__caps", json!({ "elicitation": {} }), None);
    let caps: Value = serde_json::from_str(caps["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(caps.get("elicitation").is_some() && caps.get("roots").is_some(), "{caps}");
    assert!(caps.get("sampling").is_none(), "{caps}");
    let refused = call("mcp__modern__needs-sampling", json!({}), None);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }), "{refused}");
    let sampling = json!({ "sampling": {} });
    assert_eq!(call("mcp__modern__needs-sampling", sampling, None)["result"]["content"][0]["text"], "sampling declared");

    // A round the client cannot answer whole (this server asks regardless) fails, and says why.
    let unanswerable = call("mcp__modern__two", json!({ "elicitation": {} }), None);
    let why = unanswerable["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{unanswerable}"));
    assert!(why.starts_with("MCP_INPUT_REQUIRED:") && why.contains("did not declare sampling"), "{unanswerable}");
    assert_eq!(unanswerable["result"]["isError"], true, "{unanswerable}");
    let both = json!({ "sampling": {}, "elicitation": {} });
    let asked = call("mcp__modern__two", both.clone(), None);
    let questions = asked["result"]["inputRequests"].as_object().unwrap_or_else(|| panic!("{asked}"));
    let methods: std::collections::BTreeSet<_> = questions.values().map(|q| q["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["elicitation/create", "sampling/createMessage"].into(), "one round, both questions: {asked}");
    let keys: Vec<_> = questions.keys().map(String::as_str).collect();
    assert_eq!(keys, ["say", "who"], "under the keys the server gave them: {asked}");
    let answers: serde_json::Map<String, Value> = questions
        .iter()
        .map(|(key, q)| {
            let answer = match q["method"].as_str() {
                Some("sampling/createMessage") => {
                    json!({ "role": "assistant", "model": "probe", "content": { "type": "text", "text": "hi" } })
                }
                _ => json!({ "action": "accept", "content": { "name": "eve" } }),
            };
            (key.clone(), answer)
        })
        .collect();
    // An answer left out is asked again, alone, under a new state; one not asked for is ignored.
    let mut partial = answers.clone();
    partial.remove("say");
    partial.insert("extra".to_owned(), json!({ "action": "decline" }));
    let again = call("mcp__modern__two", both.clone(), Some((&asked["result"]["requestState"], Value::Object(partial))));
    let keys: Vec<_> = again["result"]["inputRequests"].as_object().unwrap_or_else(|| panic!("{again}")).keys().cloned().collect();
    assert_eq!(keys, ["say"], "{again}");
    assert_ne!(again["result"]["requestState"], asked["result"]["requestState"], "{again}");
    let last = json!({ "say": answers["say"] });
    let done = call("mcp__modern__two", both, Some((&again["result"]["requestState"], last)));
    assert_eq!(done["result"]["content"][0]["text"], "eve says \"hi\"", "{done}");
    let mut client = SdkClient::http_with_env(&format!("{}/mcp", seam.base), &[("SEAM_ANSWERS", "1")]);
    let said = client.call_text("mcp__modern__two", json!({}));
    assert!(said.starts_with("seam says"), "{said}");
    client.close();

    let unknown = modern_request(&seam.base, "/mcp", "resources/read", json!({ "uri": "nowhere://x" }), json!({}));
    assert_eq!(unknown["error"]["data"]["uri"], "nowhere://x", "SEP-2164: {unknown}");
    assert!(seam.terminate().success());
}

/// The time a person takes to answer a server's question is not the call's: a tool's
/// `timeout` and its mount's `call_timeout` (2s each here) count only the call's own work,
/// in either era. Each client takes 3s to answer, and the call still completes.
#[test]
fn the_time_a_question_waits_for_its_answer_does_not_count_against_a_call_s_budget() {
    let dir = scratch("eras-budget-clock");
    let file = dir.join("c.yaml");
    let budget = format!("tools:\n  \"{SAMPLING}\": {{ timeout: 2s }}\n");
    compose(&file, &[everything_mount("everything", "    call_timeout: 2s\n")], &budget);
    let seam = HttpSeam::start(&file, &[]);
    let arguments = json!({ "prompt": "hi", "maxTokens": 5 });
    let thinking = std::time::Duration::from_secs(3);

    // 2025-11-25: seam asks the client, which answers 3s later.
    let answers = [("SEAM_ANSWERS", "1"), ("SEAM_ANSWER_AFTER_MS", "3000")];
    let mut client = SdkClient::http_with_env(&format!("{}/mcp", seam.base), &answers);
    let started = std::time::Instant::now();
    let answered = client.call(SAMPLING, arguments.clone());
    assert!(started.elapsed() >= thinking, "the client took its time");
    assert_ne!(answered["isError"], true, "{answered}");
    assert!(answered["content"][0]["text"].as_str().is_some_and(|t| t.contains("\"sampled: ")), "{answered}");
    client.close();

    // 2026-07-28: the client's retry with its answer comes 3s after the question.
    let first = modern_call(&seam.base, "/mcp", SAMPLING, arguments.clone(), None);
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    // A person reading the question: the time passing is what is tested, not a wait for an event.
    std::thread::sleep(thinking);
    let done = modern_call(&seam.base, "/mcp", SAMPLING, arguments, Some((&state, sampled("a patient sample"))));
    assert_ne!(done["result"]["isError"], true, "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("a patient sample")), "{done}");
    assert!(seam.terminate().success());
}

/// `serve.input_timeout` bounds how long a 2025-11-25 client may take to answer a question:
/// one that answers after it (3s, past 1s) has the question withdrawn, and the server is
/// refused with `INPUT_TIMEOUT` (the same client answering within the bound is answered above).
#[test]
fn a_legacy_client_that_answers_past_input_timeout_has_its_question_refused_to_the_server() {
    let dir = scratch("eras-input-timeout");
    let file = dir.join("c.yaml");
    compose(&file, &[everything_mount("everything", "")], "serve:\n  input_timeout: 1s\n");
    let seam = HttpSeam::start(&file, &[]);
    let answers = [("SEAM_ANSWERS", "1"), ("SEAM_ANSWER_AFTER_MS", "3000")];
    let mut client = SdkClient::http_with_env(&format!("{}/mcp", seam.base), &answers);
    let answered = client.call(SAMPLING, json!({ "prompt": "hi", "maxTokens": 5 }));
    let told = answered["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answered}"));
    assert!(told.contains("INPUT_TIMEOUT"), "the server was told why: {answered}");
    let asked = client.send(json!({ "op": "asked" }));
    assert_eq!(asked["asked"][0]["method"], "sampling/createMessage", "the client was asked: {asked}");
    let asks = &seam.status()["mounts"]["everything"]["asks"];
    assert_eq!(asks["sampling"], json!({ "passed_on": 0, "refused": 1 }), "{asks}");
    client.close();
    assert!(seam.terminate().success());
}

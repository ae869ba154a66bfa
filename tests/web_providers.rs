//! The search providers against stand-ins on 127.0.0.1 that speak the real wire
//! formats: DeepSeek's Anthropic-compatible `/messages` (with
//! `web_search_tool_result` and citation blocks) and SearXNG's JSON API; and
//! `web_search` over them (several queries, merging, the first failure).

use std::sync::Arc;

use crate::support::stub_http::{Reply, Step, Stub};
use seam_engine::surface::{Provider, ToolCall};
use seam_web::search::{Deepseek, SearchProvider, Searxng};
use seam_web::service::{SearchMount, call_search};
use seam_web::{DeepseekSearch, SearxngSearch, WebSearchSettings};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What DeepSeek's endpoint answers for a query: one search, two results, a cited answer.
fn messages_answer(query: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "deepseek-v4-flash",
        "content": [
            { "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": { "query": query } },
            { "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                { "type": "web_search_result", "url": format!("https://{query}.test/a"), "title": "A", "encrypted_content": "e1", "page_age": "April 1, 2026" },
                { "type": "web_search_result", "url": format!("https://{query}.test/b"), "title": "B", "encrypted_content": "e2" }
            ]},
            { "type": "text", "text": format!("About {query}."), "citations": [
                { "type": "web_search_result_location", "url": format!("https://{query}.test/a"), "title": "A", "encrypted_index": "i", "cited_text": "cited words" }
            ]}
        ],
        "stop_reason": "end_turn",
        "usage": { "input_tokens": 10, "output_tokens": 5, "server_tool_use": { "web_search_requests": 1 } }
    })
}

fn deepseek(stub: &Stub, extra: Value) -> Deepseek {
    let mut c = json!({ "kind": "web.search.deepseek", "base_url": stub.url("/anthropic/v1"), "api_key_env": "SEAM_TEST_UNSET_KEY" });
    c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let config: DeepseekSearch = serde_json::from_value(c).unwrap();
    Deepseek::new(config).unwrap()
}

fn key_file(name: &str, key: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("seam-web-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("key");
    std::fs::write(&file, format!("{key}\n")).unwrap();
    file
}

#[tokio::test]
async fn deepseek_sends_the_anthropic_wire_format_and_maps_results_and_citations() {
    let stub = Stub::start(|r| Reply::json(200, &messages_answer(r.json()["messages"][0]["content"].as_str().unwrap())));
    let file = key_file("wire", "sk-one");
    let provider = deepseek(&stub, json!({ "api_key_file": file, "max_tokens": 1234, "max_uses": 3 }));
    let result = provider.prepare().unwrap().query("rust".into()).await.unwrap();
    assert_eq!(result.answer.as_deref(), Some("About rust."));
    assert_eq!(result.sources.len(), 2);
    assert_eq!(result.sources[0].snippet.as_deref(), Some("cited words"));
    assert_eq!(result.sources[0].published_at.as_deref(), Some("April 1, 2026"));

    let requests = stub.requests();
    let r = &requests[0];
    assert_eq!((r.method.as_str(), r.target.as_str()), ("POST", "/anthropic/v1/messages"));
    assert_eq!(r.header("x-api-key"), Some("sk-one"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-one"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(body["model"], "deepseek-v4-flash");
    assert_eq!(body["max_tokens"], 1234);
    assert_eq!(body["tools"], json!([{ "type": "web_search_20250305", "name": "web_search", "max_uses": 3 }]));
    assert_eq!(body["messages"], json!([{ "role": "user", "content": "rust" }]));
}

#[tokio::test]
async fn a_rotated_key_file_is_read_on_the_next_search_without_a_reload() {
    let stub = Stub::start(|r| Reply::json(200, &messages_answer(r.json()["messages"][0]["content"].as_str().unwrap())));
    let file = key_file("rotate", "sk-old");
    let provider = deepseek(&stub, json!({ "api_key_file": file }));
    provider.prepare().unwrap().query("a".into()).await.unwrap();
    std::fs::write(&file, "sk-new").unwrap();
    provider.prepare().unwrap().query("b".into()).await.unwrap();
    let keys: Vec<String> = stub.requests().iter().map(|r| r.header("x-api-key").unwrap().to_owned()).collect();
    assert_eq!(keys, ["sk-old", "sk-new"]);
}

#[tokio::test]
async fn a_missing_key_makes_the_provider_unavailable_before_any_request() {
    let stub = Stub::start(|_| Reply::json(200, &json!({})));
    let e = deepseek(&stub, json!({})).prepare().err().unwrap();
    assert_eq!(e.code, "WEB_PROVIDER_CREDENTIAL_MISSING");
    assert!(e.message.contains("SEAM_TEST_UNSET_KEY"), "{}", e.message);
    let empty = key_file("empty", "  ");
    let e = deepseek(&stub, json!({ "api_key_file": empty })).prepare().err().unwrap();
    assert_eq!(e.code, "WEB_PROVIDER_CREDENTIAL_MISSING");
    assert_eq!(stub.connections(), 0);
}

#[tokio::test]
async fn answers_without_search_blocks_upstream_errors_and_redirects_are_provider_errors() {
    let elsewhere = Stub::start(|_| Reply::json(200, &json!({})));
    let location = elsewhere.url("/messages");
    let stub = Stub::start(move |r| match r.json()["messages"][0]["content"].as_str().unwrap() {
        "plain" => Reply::json(200, &json!({ "content": [{ "type": "text", "text": "I know this one." }] })),
        "down" => Reply::json(503, &json!({ "error": { "type": "overloaded_error" } })),
        _ => Reply::redirect(307, &location),
    });
    let file = key_file("errors", "sk");
    let prepared = deepseek(&stub, json!({ "api_key_file": file })).prepare().unwrap();
    let e = prepared.clone().query("plain".into()).await.unwrap_err();
    assert_eq!(e.code, "WEB_PROVIDER_ERROR");
    assert!(e.message.contains("web_search_tool_result"), "{}", e.message);
    let e = prepared.clone().query("down".into()).await.unwrap_err();
    assert_eq!((e.code.code, e.detail["status"].as_u64()), ("WEB_PROVIDER_ERROR", Some(503)));
    let e = prepared.query("moved".into()).await.unwrap_err();
    assert_eq!(e.code, "WEB_PROVIDER_ERROR");
    assert!(e.message.contains("redirect"), "{}", e.message);
    assert_eq!(elsewhere.connections(), 0, "Location is never contacted");
}

#[tokio::test]
async fn a_transport_failure_is_a_provider_error() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let file = key_file("transport", "sk");
    let config: DeepseekSearch =
        serde_json::from_value(json!({ "kind": "web.search.deepseek", "base_url": url, "api_key_file": file })).unwrap();
    let e = Deepseek::new(config).unwrap().prepare().unwrap().query("x".into()).await.unwrap_err();
    assert_eq!(e.code, "WEB_PROVIDER_ERROR");
}

fn searxng_answer(query: &str) -> Value {
    json!({
        "query": query, "number_of_results": 3,
        "results": [
            { "url": format!("https://{query}.test/1"), "title": format!("{query} one"), "content": "first", "engine": "duckduckgo", "score": 3.0, "category": "general" },
            { "url": "https://shared.test/", "title": "shared", "content": "in every query", "engine": "bing", "score": 2.0, "category": "general" },
            { "url": format!("https://{query}.test/3"), "title": format!("{query} three"), "content": "", "engine": "bing", "score": 1.0, "publishedDate": "2026-05-01T00:00:00" }
        ],
        "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []
    })
}

fn searxng(stub: &Stub) -> Searxng {
    let config: SearxngSearch = serde_json::from_value(
        json!({ "kind": "web.search.searxng", "base_url": stub.url(""), "categories": ["general"], "language": "en" }),
    )
    .unwrap();
    Searxng::new(config).unwrap()
}

/// `?q=…` of a SearXNG request.
fn query_of(target: &str) -> String {
    url::Url::parse(&format!("http://x{target}")).unwrap().query_pairs().find(|(k, _)| k == "q").map(|(_, v)| v.into_owned()).unwrap()
}

#[tokio::test]
async fn searxng_is_asked_for_json_and_its_results_become_sources() {
    let stub = Stub::start(|r| Reply::json(200, &searxng_answer(&query_of(&r.target))));
    let result = searxng(&stub).prepare().unwrap().query("rust lang".into()).await.unwrap();
    assert_eq!(result.sources.len(), 3);
    assert_eq!(result.sources[2].published_at.as_deref(), Some("2026-05-01T00:00:00"));
    let target = &stub.requests()[0].target;
    assert!(target.starts_with("/search?"), "{target}");
    assert!(target.contains("q=rust+lang") && target.contains("format=json") && target.contains("categories=general"), "{target}");
}

fn tool_call(provider: Arc<dyn SearchProvider>, queries: Value) -> ToolCall {
    let running = Arc::new(SearchMount(provider, Default::default()));
    ToolCall {
        settings: json!({}),
        section: None,
        providers: vec![Provider { id: "searx".into(), registry: seam_web::SEARCH, config: Arc::new(()), running, layer: 0 }],
        arguments: json!({ "queries": queries }).as_object().unwrap().clone(),
        roots: Default::default(),
        cancel: CancellationToken::new(),
        client: Default::default(),
    }
}

fn settings(max_results: u32) -> WebSearchSettings {
    serde_json::from_value(json!({ "max_results": max_results })).unwrap()
}

#[tokio::test]
async fn web_search_runs_queries_together_and_merges_their_sources_by_rank() {
    let stub = Stub::start(|r| Reply::json(200, &searxng_answer(&query_of(&r.target))));
    let call = tool_call(Arc::new(searxng(&stub)), json!(["alpha", "beta", "alpha"]));
    let mount = call.providers[0].running.clone();
    let out = call_search(settings(4), call).await;
    assert!(!out.is_error, "{out:?}");
    let counts = mount.counts();
    assert_eq!((counts.selections, counts.failures.len()), (1, 0), "one call selected it, and it did not fail");
    let structured = out.structured_content.unwrap();
    let urls: Vec<&str> = structured["sources"].as_array().unwrap().iter().map(|s| s["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["https://alpha.test/1", "https://beta.test/1", "https://shared.test/", "https://alpha.test/3"]);
    assert_eq!(structured["truncated"], true, "five distinct sources, four shown");
    assert_eq!(structured["provider"], "searx");
    assert_eq!(stub.requests().len(), 2, "the duplicate query is asked once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_failing_query_fails_the_search_and_cancels_the_rest() {
    // The failure is answered only once the slow request is in: were it answered first, the
    // slow query could be cancelled before its connection opened, and no close would be seen.
    let (arrived, slow_in) = std::sync::mpsc::sync_channel::<()>(1);
    let slow_in = std::sync::Mutex::new(slow_in);
    let stub = Arc::new(Stub::start(move |r| match query_of(&r.target).as_str() {
        "broken" => {
            let _ = slow_in.lock().unwrap().recv_timeout(std::time::Duration::from_secs(30));
            Reply::json(500, &json!({ "error": "engine crashed" }))
        }
        _ => {
            let _ = arrived.try_send(());
            Reply(vec![Step::HoldUntilClosed])
        }
    }));
    let call = tool_call(Arc::new(searxng(&stub)), json!(["slow", "broken"]));
    let mount = call.providers[0].running.clone();
    let out = call_search(settings(8), call).await;
    assert!(out.is_error);
    assert_eq!(out.structured_content.unwrap()["error"]["code"], "WEB_PROVIDER_ERROR");
    let counts = mount.counts();
    assert_eq!(counts.selections, 1);
    assert_eq!(counts.failures, [("WEB_PROVIDER_ERROR", 1)].into(), "the provider's failure is counted by its code");
    let waiting = stub.clone();
    let event = tokio::task::spawn_blocking(move || waiting.next_event()).await.unwrap();
    assert!(matches!(event, crate::support::stub_http::Event::Closed(t) if t.contains("q=slow")), "the slow query's request was dropped");
}

#[tokio::test]
async fn a_provider_answer_holds_at_max_answer_bytes() {
    // `{"results": []}` padded with whitespace to exactly the cap, and to one byte past it.
    let padded = |size: usize| {
        let json = r#"{"results": []}"#;
        format!("{json}{}", " ".repeat(size - json.len()))
    };
    let stub = Stub::start(move |r| {
        let size = seam_web::search::MAX_ANSWER_BYTES + usize::from(query_of(&r.target) == "over");
        Reply::new(200, &[("content-type", "application/json")], padded(size))
    });
    let provider = searxng(&stub);
    assert!(provider.prepare().unwrap().query("at".into()).await.is_ok(), "exactly at the cap");
    let e = provider.prepare().unwrap().query("over".into()).await.unwrap_err();
    assert_eq!(e.code, "WEB_PROVIDER_ERROR", "one byte past it");
    assert!(e.message.contains("more than"), "{}", e.message);
}

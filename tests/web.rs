//! The Web surface end to end: `seam serve` over HTTP, driven by the official
//! MCP SDK client, with the search API and the fetched pages stood in for by
//! real HTTP servers on 127.0.0.1 (`support/stub_http.rs`).

use std::path::Path;

use crate::support::stub_http::{Reply, Stub};
use crate::support::*;
use serde_json::{Value, json};

/// The shipped base composition, from a scratch copy next to which nothing else lives.
fn shipped(name: &str) -> std::path::PathBuf {
    root().join("compositions").join(name)
}

fn error_code(result: &Value) -> &str {
    result["structuredContent"]["error"]["code"].as_str().unwrap_or_else(|| panic!("no error code: {result}"))
}

#[test]
fn base_lists_web_search_and_a_call_without_a_key_says_the_credential_is_missing() {
    let seam = HttpSeam::start_with_env(&shipped("base.yaml"), &[], &[], &["DEEPSEEK_API_KEY", "SEAM_WEB_SEARCH"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let names = client.tool_names();
    assert!(names.contains(&"web_search".to_owned()), "visible although its provider is down: {names:?}");
    assert!(!names.contains(&"web_fetch".to_owned()), "`web_fetch: false`: {names:?}");
    let result = client.call("web_search", json!({ "queries": ["rust"] }));
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("WEB_PROVIDER_CONFIGURED_UNAVAILABLE: "), "{text}");
    assert!(text.contains("WEB_PROVIDER_CREDENTIAL_MISSING") && text.contains("DEEPSEEK_API_KEY"), "{text}");
    assert_eq!(error_code(&result), "WEB_PROVIDER_CONFIGURED_UNAVAILABLE");
    assert_eq!(result["structuredContent"]["error"]["reason"]["code"], "WEB_PROVIDER_CREDENTIAL_MISSING");

    // The health view says the same without a call.
    let search = &seam.status()["services"]["web"]["search"];
    assert_eq!(search["pin"], "deepseek-official");
    assert_eq!(search["providers"][0]["id"], "deepseek-official");
    assert_eq!(search["providers"][0]["registered"], true);
    assert_eq!(search["providers"][0]["available"], false);
    assert!(search["providers"][0]["reason"].as_str().unwrap().starts_with("WEB_PROVIDER_CREDENTIAL_MISSING"), "{search}");
    client.close();
}

fn deepseek_answer(query: &str) -> Value {
    json!({
        "type": "message", "role": "assistant",
        "content": [
            { "type": "server_tool_use", "id": "s", "name": "web_search", "input": { "query": query } },
            { "type": "web_search_tool_result", "tool_use_id": "s", "content": [
                { "type": "web_search_result", "url": "https://www.rust-lang.org/", "title": "Rust", "encrypted_content": "x" }
            ]},
            { "type": "text", "text": "Rust is a language.", "citations": [
                { "type": "web_search_result_location", "url": "https://www.rust-lang.org/", "title": "Rust", "cited_text": "A language empowering everyone", "encrypted_index": "i" }
            ]}
        ]
    })
}

#[test]
fn web_search_answers_from_the_local_search_server_once_a_key_is_set() {
    let api = Stub::start(|r| Reply::json(200, &deepseek_answer(r.json()["messages"][0]["content"].as_str().unwrap())));
    let dir = scratch("web-search");
    let file = dir.join("c.yaml");
    std::fs::write(
        &file,
        format!(
            "seam: 1\nextends: [{}]\nmounts:\n  deepseek-official:\n    kind: web.search.deepseek\n    base_url: {}\n    api_key_env: SEAM_TEST_DEEPSEEK_KEY\n  skills: null\ntools:\n  skill: false\n",
            json!(shipped("base.yaml")),
            api.url("/anthropic/v1")
        ),
    )
    .unwrap();
    let seam = HttpSeam::start_with_env(&file, &[], &[("SEAM_TEST_DEEPSEEK_KEY", "sk-local")], &["SEAM_WEB_SEARCH"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let result = client.call("web_search", json!({ "queries": ["what is rust"] }));
    assert_ne!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Rust is a language."), "{text}");
    assert!(text.contains("[Rust](https://www.rust-lang.org/)") && text.contains("A language empowering everyone"), "{text}");
    assert_eq!(result["structuredContent"]["sources"][0]["url"], "https://www.rust-lang.org/");
    assert_eq!(api.requests()[0].header("x-api-key"), Some("sk-local"));
    assert_eq!(seam.status()["services"]["web"]["search"]["selected"], "deepseek-official");
    client.close();
}

/// `fetch-guarded.yaml`, extended so that its guard lets one more host through.
fn fetch_composition(dir: &Path, allow: &[&str]) -> std::path::PathBuf {
    let file = dir.join("c.yaml");
    std::fs::write(
        &file,
        format!(
            "seam: 1\nextends: [{}]\nmounts:\n  http:\n    allow_hosts: {}\n",
            json!(shipped("examples/fetch-guarded.yaml")),
            json!(allow)
        ),
    )
    .unwrap();
    file
}

#[test]
fn web_fetch_in_fetch_guarded_refuses_loopback_until_allow_hosts_names_it() {
    let page = Stub::start(|_| {
        Reply::new(
            200,
            &[("content-type", "text/html; charset=utf-8")],
            "<html><script>x()</script><h1>Hello</h1><p>A <a href=\"/b\">link</a>.</p></html>",
        )
    });
    // As shipped: web_fetch is on and the guard holds.
    let seam = HttpSeam::start_with_env(&shipped("examples/fetch-guarded.yaml"), &[], &[], &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert!(client.tool_names().contains(&"web_fetch".to_owned()));
    let refused = client.call("web_fetch", json!({ "url": page.url("/") }));
    assert_eq!(refused["isError"], true);
    assert_eq!(error_code(&refused), "WEB_BLOCKED_ADDRESS");
    assert_eq!(refused["structuredContent"]["error"]["range"], "loopback 127.0.0.0/8");
    assert_eq!(page.connections(), 0, "refused before any connection");
    client.close();
    drop(seam);

    let dir = scratch("web-fetch");
    let seam = HttpSeam::start_with_env(&fetch_composition(&dir, &["127.0.0.1"]), &[], &[], &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let fetched = client.call("web_fetch", json!({ "url": page.url("/") }));
    assert_ne!(fetched["isError"], true, "{fetched}");
    let text = fetched["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, format!("Fetched {} (HTTP 200)\n\n# Hello\n\nA [link](/b).", page.url("/")));
    assert_eq!(fetched["structuredContent"]["body"], "html");
    assert_eq!(seam.status()["services"]["web"]["fetch"]["selected"], "http");
    client.close();
}

#[test]
fn inventory_probe_shows_each_provider_registered_available_and_why_not() {
    let out = std::process::Command::new(seam_bin())
        .args(["inventory", "--probe", "--format", "json"])
        .arg(shipped("base.yaml"))
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("SEAM_WEB_SEARCH")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let inventory: Value = serde_json::from_slice(&out.stdout).unwrap();
    let provider = &inventory["services"]["web"]["search"]["providers"][0];
    assert_eq!(provider["id"], "deepseek-official");
    assert_eq!((provider["registered"].as_bool(), provider["available"].as_bool()), (Some(true), Some(false)));
    assert!(provider["reason"].as_str().unwrap().contains("DEEPSEEK_API_KEY"), "{provider}");

    let human = std::process::Command::new(seam_bin())
        .args(["inventory", "--probe"])
        .arg(shipped("base.yaml"))
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("SEAM_WEB_SEARCH")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("web.search: pin `deepseek-official`; calls fail: WEB_PROVIDER_CONFIGURED_UNAVAILABLE"), "{text}");
}

#[test]
fn the_fetcher_ignores_ambient_proxies() {
    let page = Stub::start(|_| Reply::new(200, &[("content-type", "text/plain")], "direct"));
    let proxy = Stub::start(|_| Reply::new(200, &[("content-type", "text/plain")], "via the proxy"));
    let dir = scratch("web-proxy");
    let file = fetch_composition(&dir, &["127.0.0.1"]);
    let out = std::process::Command::new(seam_bin())
        .args(["call", &file.display().to_string(), "web_fetch", "--args", &json!({ "url": page.url("/") }).to_string()])
        .env("HTTP_PROXY", proxy.url(""))
        .env("http_proxy", proxy.url(""))
        .env("ALL_PROXY", proxy.url(""))
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert!(result["content"][0]["text"].as_str().unwrap().ends_with("direct"), "{result}");
    assert_eq!(proxy.connections(), 0, "the proxy was never contacted");
}

//! `quota` (issue 40): what an agent's requests may use, counted per agent whatever its
//! clients' era or session, checked before the request goes anywhere. Past a rule, a
//! call gets `QUOTA_EXCEEDED` saying when to retry and another request a -32600 error
//! whose `data` says the same; the server never hears of it (`FLAKY_HEARD`). The bucket
//! itself is tested on a paused clock in `engine/src/quota.rs`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

/// The flaky server as `f` (its calls recorded in `heard`), server-everything as
/// `everything`, and the default agent's `quota` rules.
fn with_quota(dir: &Path, quota: &str, more: &str) -> (PathBuf, PathBuf) {
    let (file, heard) = (dir.join("c.yaml"), dir.join("heard.log"));
    let f = flaky_mount("f", &[("FLAKY_TOOLS", "alpha"), ("FLAKY_HEARD", heard.to_str().unwrap())], "");
    let everything =
        format!("  everything:\n    kind: mcp.stdio\n    command: {}\n    args: [stdio]\n", json!(peer_bin("mcp-server-everything")));
    write_atomically(&file, &format!("seam: 1\nmounts:\n{f}{everything}quota:\n{quota}{more}"));
    (file, heard)
}

fn python_call(era: &str, url: &str) -> Value {
    python_peer("py-tools.py", &[era, "mcp__f__alpha", r#"{"message": "hi"}"#, url])["call"].clone()
}

/// At the limit every call is served; one past it is refused, in either era, since the
/// agent's count is one; `/status` shows the rule's use. A reload that keeps the rule
/// as written keeps its count; one that changes it starts afresh.
#[test]
fn calls_per_window_at_the_limit_and_one_past_in_both_eras_and_across_reloads() {
    let dir = scratch("quota-calls");
    let rule = "  - { tools: \"mcp__f__alpha\", calls: { max: 2, per: 1h } }\n";
    let (file, heard) = with_quota(&dir, rule, "");
    let mut seam = HttpSeam::start(&file, &[]);
    let url = format!("{}/mcp", seam.base);
    assert_eq!(python_call("legacy", &url), json!({ "text": "alpha: hi", "error": false }));
    assert_eq!(python_call("2026-07-28", &url), json!({ "text": "alpha: hi", "error": false }), "at the limit");
    let usage = &seam.status()["quotas"]["default"][0];
    assert_eq!((usage["rule"].as_str(), usage["calls_left"].as_i64()), (Some("/quota/0"), Some(0)), "{usage}");
    let (code, page) = seam.get("/ui");
    assert!(code == 200 && page.contains(r#"data-key="quota-default-/quota/0""#), "the status page shows the rule's use: {page}");
    for era in ["legacy", "2026-07-28"] {
        let past = python_call(era, &url);
        let text = past["text"].as_str().unwrap();
        assert!(past["error"] == true && text.starts_with("QUOTA_EXCEEDED: ") && text.contains("retry in"), "{era}: {past}");
    }
    assert_eq!(calls_heard(&heard), 2, "nothing past the quota reached the server");
    // Not counted by a rule that names other tools: `pid` is served.
    let pid = python_peer("py-tools.py", &["legacy", "mcp__f__pid", "{}", &url]);
    assert_eq!(pid["call"]["error"], false, "{pid}");

    // A reload that keeps the rule as written (it adds an agent) keeps its count.
    with_quota(&dir, rule, "agents:\n  other: {}\n");
    seam.stderr.wait_outcome(1, "applied");
    assert_eq!(python_call("legacy", &url)["error"], true, "still past it");
    // A changed rule, and nothing else, is a change of the agent: it counts afresh.
    with_quota(&dir, "  - { tools: \"mcp__f__alpha\", calls: { max: 3, per: 1h } }\n", "agents:\n  other: {}\n");
    seam.stderr.wait_outcome(2, "applied");
    assert_eq!(python_call("legacy", &url)["error"], false);
    assert!(seam.terminate().success());
}

/// A rule over a mount covers its reads too: past it, `resources/read` gets -32600 with
/// the code and when to retry in `data`.
#[test]
fn a_read_past_a_mount_s_quota_gets_an_error_that_says_when_to_retry() {
    let dir = scratch("quota-reads");
    let (file, _) = with_quota(&dir, "  - { mount: everything, calls: { max: 2, per: 1h } }\n", "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let read = json!({ "op": "read", "uri": "demo://resource/static/document/architecture.md" });
    assert_eq!(client.send(read.clone())["ok"], true);
    assert_eq!(client.send(read.clone())["ok"], true, "at the limit");
    let past = client.send(read);
    assert_eq!((past["ok"].as_bool(), past["code"].as_i64()), (Some(false), Some(-32600)), "{past}");
    assert_eq!(past["data"]["code"], "QUOTA_EXCEEDED", "{past}");
    assert!(past["data"]["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0), "{past}");
    client.close();
    assert!(seam.terminate().success());
}

/// `concurrent: 1` with two calls at once: while the first runs (it hangs until its
/// session ends) the second is refused at once, and once the first has ended another is
/// served. The hanging call's session is opened by hand, so that ending it ends the call.
#[test]
fn calls_at_once_past_the_limit_are_refused_while_one_runs() {
    use crate::access::{borrowed, initialized_session, raw, tool_call};
    let dir = scratch("quota-concurrent");
    let (file, heard) = with_quota(&dir, "  - { tools: \"mcp__f__*\", concurrent: 1 }\n", "");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let headers = initialized_session(&seam);
    let hanging = {
        let (base, headers) = (seam.base.clone(), headers.clone());
        std::thread::spawn(move || {
            raw(&base, "POST", "/mcp", &borrowed(&headers), tool_call(1, "mcp__f__hang", json!({})).as_bytes(), false)
        })
    };
    seam.wait_status("the hanging call holding its place", |s| s["quotas"]["default"][0]["running"] == 1);
    let mut other = SdkClient::http(&format!("{}/mcp", seam.base));
    let refused = other.call("mcp__f__alpha", json!({ "message": "hi" }));
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(refused["isError"] == true && text.starts_with("QUOTA_EXCEEDED: ") && text.contains("one of its calls has ended"), "{refused}");
    assert_eq!(calls_heard(&heard), 1, "only the hanging call reached the server");

    assert_eq!(raw(&seam.base, "DELETE", "/mcp", &borrowed(&headers), b"", false).0, 200);
    hanging.join().unwrap();
    seam.wait_status("the hanging call's place given back", |s| s["quotas"]["default"][0]["running"] == 0);
    assert_eq!(other.call_text("mcp__f__alpha", json!({ "message": "hi" })), "alpha: hi");
    other.close();
    assert!(seam.terminate().success());
}

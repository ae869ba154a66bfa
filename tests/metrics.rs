//! `/metrics` (issue 41): what passes through the HTTP front end, in the OpenMetrics
//! text a real Prometheus (Debian's) scrapes from seam on loopback; PromQL's answers
//! are checked against the calls made. `/metrics` is the default agent's, like
//! `/status`, unless `serve.metrics_public`.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

const TOKEN: &str = "metrics-token-5b1e";

/// PromQL's answer to `query`, as `(label value, value)` pairs.
fn promql(prometheus: &str, query: &str) -> Vec<(String, f64)> {
    let url =
        format!("{prometheus}/api/v1/query?query={}", percent_encoding::utf8_percent_encode(query, percent_encoding::NON_ALPHANUMERIC));
    let (code, body) = http_get(&url);
    assert_eq!(code, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let mut found: Vec<(String, f64)> = answer["data"]["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|r| {
            let label = r["metric"].as_object().and_then(|m| m.values().next()).and_then(Value::as_str).unwrap_or_default().to_owned();
            (label, r["value"][1].as_str().unwrap().parse().unwrap())
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[test]
fn prometheus_scrapes_what_seam_served() {
    let dir = scratch("metrics");
    let file = dir.join("c.yaml");
    let mount = flaky_mount("f", &[("FLAKY_TOOLS", "alpha")], "");
    // A pinned server that adds a tool when asked: the new one is held.
    let rug = format!(
        "  rug:\n    kind: mcp.stdio\n    command: {}\n    args: [{}]\n    protocol: modern\n    pin: locked\n",
        json!(python()),
        json!(root().join("tests/peers/py-rug-pull-server.py").display().to_string())
    );
    let quota = "quota:\n  - { tools: mcp__f__pid, calls: { max: 1, per: 1h } }\n";
    let composition =
        |public: bool| format!("seam: 1\nmounts:\n{mount}{rug}{quota}serve:\n  bearer_token_env: SEAM_TOKEN\n  metrics_public: {public}\n");
    write_atomically(&file, &composition(false));
    let locked = Command::new(seam_bin()).arg("lock").arg(&file).output().unwrap();
    assert!(locked.status.success(), "{}", String::from_utf8_lossy(&locked.stderr));
    let mut seam = HttpSeam::start_with_env(&file, &[], &[("SEAM_TOKEN", TOKEN)], &[]);
    assert_eq!(seam.get("/metrics").0, 401, "the default agent's, like /status");
    seam.token = Some(TOKEN.to_owned());

    let mut client = SdkClient::http_with_token(&format!("{}/mcp", seam.base), TOKEN);
    for _ in 0..3 {
        client.call("mcp__f__alpha", json!({ "message": "hi" }));
    }
    for _ in 0..2 {
        client.call("mcp__f__pid", json!({}));
    }
    assert_eq!(client.call("mcp__f__nope", json!({}))["isError"], true);
    assert_eq!(client.call_text("mcp__rug__grow", json!({})), "grew");
    let (code, text) = seam.get("/metrics");
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("# TYPE mcp_server_operation_duration_seconds histogram") && text.ends_with("# EOF\n"), "{text}");
    assert!(!text.contains(TOKEN), "no secret in a label");

    let port = seam.base.rsplit(':').next().unwrap().to_owned();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{ scrape_interval: 1s }}\nscrape_configs:\n  - job_name: seam\n    authorization: {{ credentials: {TOKEN} }}\n    static_configs: [{{ targets: ['127.0.0.1:{port}'] }}]\n"
        ),
    )
    .unwrap();
    let mut command = Command::new("prometheus");
    command.args([
        &format!("--config.file={}", config.display()),
        &format!("--storage.tsdb.path={}", dir.join("tsdb").display()),
        "--web.listen-address=127.0.0.1:0",
    ]);
    let (_prometheus, prometheus_port) = Peer::listening(command);
    let prometheus = format!("http://127.0.0.1:{prometheus_port}");
    let calls = "sum by (gen_ai_tool_name) (mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"})";
    let expected = vec![
        ("_other".to_owned(), 1.0),
        ("mcp__f__alpha".to_owned(), 3.0),
        ("mcp__f__pid".to_owned(), 2.0),
        ("mcp__rug__grow".to_owned(), 1.0),
    ];
    let mut seen = Vec::new();
    wait_until("Prometheus to have scraped the calls", || {
        seen = promql(&prometheus, calls);
        seen == expected
    });
    let errors = promql(&prometheus, "sum by (error_type) (mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"})");
    assert_eq!(errors, vec![(String::new(), 5.0), ("tool_error".to_owned(), 2.0)], "succeeded; past the quota, and the unknown tool");
    let decided = promql(&prometheus, "sum by (decision) (seam_decisions_total) > 0");
    let decided_expected = vec![("denied".to_owned(), 1.0), ("over_quota".to_owned(), 1.0), ("served".to_owned(), 5.0)];
    assert_eq!(decided, decided_expected, "what the call stage made of each call");
    assert_eq!(promql(&prometheus, "max(seam_generation)"), vec![(String::new(), 1.0)]);
    assert_eq!(promql(&prometheus, "sum by (agent) (seam_sessions_open)"), vec![("default".to_owned(), 1.0)], "the client's session");
    let reloads = promql(&prometheus, "sum by (outcome) (seam_reloads_total)");
    assert_eq!(reloads, vec![("applied".to_owned(), 1.0), ("rejected".to_owned(), 0.0), ("unchanged".to_owned(), 0.0)]);
    // seam as its mounts' client: only what reached a mount.
    let sent = promql(&prometheus, "sum by (mount) (mcp_client_operation_duration_seconds_count{mcp_method_name=\"tools/call\"})");
    assert_eq!(sent, vec![("f".to_owned(), 4.0), ("rug".to_owned(), 1.0)], "the refused calls never reached `f`");
    wait_until("Prometheus to see the tool `grow` added, held by the pin", || {
        promql(&prometheus, "sum by (mount) (seam_held_definitions)") == vec![("rug".to_owned(), 1.0)]
    });
    assert_eq!(client.send(json!({ "op": "end_session" }))["ok"], true, "DELETE, as a client done with its session");
    client.close();
    wait_until("Prometheus to see the session's end", || {
        promql(&prometheus, "sum by (agent) (mcp_server_session_duration_seconds_count)") == vec![("default".to_owned(), 1.0)]
    });

    // Public, for a scraper that sends no token: a reload makes it so.
    write_atomically(&file, &composition(true));
    seam.stderr.wait_outcome(1, "applied");
    seam.token = None;
    assert_eq!(seam.get("/metrics").0, 200);
    assert_eq!(seam.get("/status").0, 401, "only /metrics is opened");
    assert!(seam.terminate().success());
}

/// `--no-metrics`: nothing is measured, `/metrics` is not served, calls go on.
#[test]
fn no_metrics_turns_the_endpoint_off() {
    let dir = scratch("metrics-off");
    let file = dir.join("c.yaml");
    write_atomically(&file, &format!("seam: 1\nmounts:\n{}", flaky_mount("f", &[("FLAKY_TOOLS", "alpha")], "")));
    let seam = HttpSeam::start(&file, &["--no-metrics"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(client.call_text("mcp__f__alpha", json!({ "message": "hi" })), "alpha: hi");
    assert_eq!(seam.get("/metrics").0, 404);
    client.close();
    assert!(seam.terminate().success());
}

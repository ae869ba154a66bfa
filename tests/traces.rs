//! Traces (issue 41): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, seam exports its spans over
//! OTLP/HTTP, and one trace spans client → seam → server. Every side is real: the
//! official Python SDK's client and server, each tracing with the OpenTelemetry SDK
//! (`tests/peers/py-traced.py`), and a loopback receiver that decodes each export with
//! the official protobuf definitions (`tests/peers/otlp-receiver.py`).

use std::collections::HashMap;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::*;

/// The receiver, and each span it decoded, as it arrives.
struct Receiver {
    _peer: Peer,
    spans: Lines,
    url: String,
}

fn receiver() -> Receiver {
    let mut child = Command::new(python())
        .arg(root().join("tests/peers/otlp-receiver.py"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut spans = Lines::spawn(child.stdout.take().unwrap(), "");
    let first: Value = serde_json::from_str(&spans.next(PATIENCE).expect("the receiver says its port")).unwrap();
    let url = format!("http://127.0.0.1:{}", first["port"]);
    Receiver { _peer: Peer(child), spans, url }
}

impl Receiver {
    /// The spans of trace `trace_id` once `enough` holds for them, by span id.
    fn trace(&mut self, trace_id: &str, enough: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let spans: Vec<Value> = self
                .spans
                .seen
                .iter()
                .skip(1)
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|s| s["trace_id"] == trace_id)
                .collect();
            if enough(&spans) {
                return spans;
            }
            assert!(std::time::Instant::now() < deadline, "the trace never held what was waited for: {spans:#?}");
            self.spans.next(std::time::Duration::from_millis(200));
        }
    }
}

impl Receiver {
    /// Every span received once `enough` holds for them.
    fn all(&mut self, enough: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let spans: Vec<Value> = self.spans.seen.iter().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()).collect();
            if enough(&spans) {
                return spans;
            }
            assert!(std::time::Instant::now() < deadline, "never received what was waited for: {spans:#?}");
            self.spans.next(std::time::Duration::from_millis(200));
        }
    }
}

fn one<'a>(spans: &'a [Value], service: &str, kind: &str) -> &'a Value {
    let found: Vec<&Value> = spans
        .iter()
        .filter(|s| s["service"] == service && s["kind"] == kind && s["name"].as_str().unwrap().contains("tools/call"))
        .collect();
    assert_eq!(found.len(), 1, "one {kind} `tools/call` span of {service}: {spans:#?}");
    found[0]
}

/// A call, in each era, is one trace: the client's span, seam's SERVER span under it,
/// seam's CLIENT span under that, and the server's span under seam's; seam's spans carry
/// the conventions' names and attributes.
#[test]
fn one_trace_spans_client_seam_and_server_in_both_eras() {
    let mut receiver = receiver();
    let dir = scratch("traces");
    let file = dir.join("c.yaml");
    let server = root().join("tests/peers/py-traced.py");
    write_atomically(
        &file,
        &format!(
            "seam: 1\nmounts:\n  traced:\n    kind: mcp.stdio\n    command: {}\n    args: [{}, server]\n    env: {{ OTEL_EXPORTER_OTLP_ENDPOINT: {} }}\n  \
             everything:\n    kind: mcp.stdio\n    command: {}\n    args: [stdio]\n",
            json!(python()),
            json!(server.display().to_string()),
            json!(receiver.url),
            json!(peer_bin("mcp-server-everything"))
        ),
    );
    let endpoint = receiver.url.clone();
    let otel = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()), ("OTEL_BSP_SCHEDULE_DELAY", "50")];
    let seam = HttpSeam::start_with_env(&file, &[], &otel, &[]);
    let url = format!("{}/mcp", seam.base);
    for era in ["legacy", "2026-07-28"] {
        let called = python_peer_with_env("py-traced.py", &["client", era, &url, "mcp__traced__echo"], &otel);
        assert_eq!(called["text"], "echo: traced", "{era}: {called}");
        let trace_id = called["trace_id"].as_str().unwrap();
        let complete = |spans: &[Value]| {
            ["py-traced-client", "seam", "py-traced-server"]
                .iter()
                .all(|service| spans.iter().any(|s| s["service"] == *service && s["name"].as_str().unwrap().contains("tools/call")))
                && spans.iter().filter(|s| s["service"] == "seam" && s["name"].as_str().unwrap().contains("tools/call")).count() == 2
                && spans.iter().any(|s| s["name"] == "agent turn")
        };
        let spans = receiver.trace(trace_id, complete);
        let by_id: HashMap<&str, &Value> = spans.iter().map(|s| (s["span_id"].as_str().unwrap(), s)).collect();
        let client = one(&spans, "py-traced-client", "client");
        let seam_server = one(&spans, "seam", "server");
        let seam_client = one(&spans, "seam", "client");
        let server = one(&spans, "py-traced-server", "server");
        assert_eq!(seam_server["parent_span_id"], client["span_id"], "{era}: seam continues the client's trace from _meta");
        assert_eq!(seam_client["parent_span_id"], seam_server["span_id"], "{era}: seam's request to the server is under its answer");
        assert_eq!(server["parent_span_id"], seam_client["span_id"], "{era}: the server continues seam's trace from _meta");
        assert!(by_id.contains_key(client["parent_span_id"].as_str().unwrap()), "the client's own turn is in the trace");

        assert_eq!(seam_server["name"], "tools/call mcp__traced__echo");
        assert_eq!(seam_server["attributes"]["mcp.method.name"], "tools/call");
        assert_eq!(seam_server["attributes"]["gen_ai.tool.name"], "mcp__traced__echo");
        assert_eq!(seam_server["attributes"]["network.transport"], "tcp");
        assert!(seam_server["attributes"]["jsonrpc.request.id"].is_string(), "{seam_server}");
        // A 2025-11-25 client's requests are in its session; a 2026-07-28 client has none.
        assert_eq!(seam_server["attributes"]["mcp.session.id"].is_string(), era == "legacy", "{era}: {seam_server}");
        assert_eq!(seam_client["name"], "tools/call echo", "the server's own name for its tool");
        assert_eq!(seam_client["attributes"]["seam.mount"], "traced");
    }
    // A 2026-07-28 call whose server asks the client a question: two rounds, each the
    // client's request, each a SERVER span of seam's in the client's trace; the request
    // to the server is one CLIENT span, under the round that started it.
    let sampling = "mcp__everything__trigger-sampling-request";
    let asked =
        python_peer_with_env("py-traced.py", &["client", "2026-07-28", &url, sampling, r#"{"prompt": "hi", "maxTokens": 5}"#], &otel);
    assert!(asked["text"].as_str().is_some_and(|t| t.contains("sampled")), "{asked}");
    let trace_id = asked["trace_id"].as_str().unwrap();
    // Until both rounds, seam's request to the server, and the client's spans each round is under are in (each process exports in its own time).
    let rounds = receiver.trace(trace_id, |spans| {
        let rounds: Vec<&Value> = spans
            .iter()
            .filter(|s| s["service"] == "seam" && s["kind"] == "server" && s["name"] == format!("tools/call {sampling}"))
            .collect();
        rounds.len() == 2
            && spans.iter().any(|s| s["service"] == "seam" && s["kind"] == "client")
            && rounds.iter().all(|round| spans.iter().any(|s| s["span_id"] == round["parent_span_id"]))
    });
    let servers: Vec<&Value> = rounds
        .iter()
        .filter(|s| s["service"] == "seam" && s["kind"] == "server" && s["name"] == format!("tools/call {sampling}"))
        .collect();
    let upstream = one(&rounds, "seam", "client");
    assert!(servers.iter().any(|s| s["span_id"] == upstream["parent_span_id"]), "the server's request is under a round: {rounds:#?}");
    let by_id: HashMap<&str, &Value> = rounds.iter().map(|s| (s["span_id"].as_str().unwrap(), s)).collect();
    for round in &servers {
        let parent = by_id.get(round["parent_span_id"].as_str().unwrap()).unwrap_or_else(|| panic!("{round}"));
        assert_eq!(parent["service"], "py-traced-client", "each round continues the client's own span: {parent}");
    }

    // seam's own work: the start's reload, and the mount's start within it.
    let own = receiver.all(|spans| {
        spans.iter().any(|s| s["name"] == "seam.reload") && spans.iter().filter(|s| s["name"] == "seam.mount.start").count() == 2
    });
    let reload = own.iter().find(|s| s["name"] == "seam.reload").unwrap();
    let start = own.iter().find(|s| s["name"] == "seam.mount.start" && s["attributes"]["seam.mount"] == "traced").unwrap();
    assert_eq!((&reload["service"], &reload["attributes"]["seam.outcome"]), (&json!("seam"), &json!("applied")), "{reload}");
    assert_eq!(start["attributes"]["seam.mount"], "traced", "{start}");
    assert_eq!(start["parent_span_id"], reload["span_id"], "a mount starts within its reload");
    assert!(seam.terminate().success());
}

//! `serve.audit` (issue 40): every request that reaches the call stage is a record of a
//! chained, HMAC-sealed trail: served, refused past a quota, not approved, or with no
//! route. No secret reaches it (the token is named, the arguments hashed), and `seam
//! audit verify` passes the trail as written and names the record where it was changed
//! or where its tail was cut. The chain itself is tested record by record in
//! `engine/src/audit.rs`.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

const TOKEN: &str = "tok-3f9a1c7e55d24b8e";
const KEY: &str = "audit-key-91c2";

fn verify(args: &[&str]) -> (i32, String) {
    let out = Command::new(seam_bin()).args(["audit", "verify"]).args(args).env("SEAM_AUDIT_KEY", KEY).output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn every_request_is_a_record_of_a_sealed_chain_that_holds_no_secret() {
    let dir = scratch("audit");
    let file = dir.join("c.yaml");
    let mount = flaky_mount("f", &[("FLAKY_TOOLS", "alpha")], "");
    let serve = "serve:\n  bearer_token_env: SEAM_TOKEN\n  audit: { path: trail/audit.jsonl, key_env: SEAM_AUDIT_KEY }\n";
    let rules = "quota:\n  - { tools: mcp__f__alpha, calls: { max: 2, per: 1h } }\ntools:\n  mcp__f__pid: { approve: ask }\n";
    write_atomically(&file, &format!("seam: 1\nmounts:\n{mount}{serve}{rules}"));
    let mut seam = HttpSeam::start_with_env(&file, &["--no-watch"], &[("SEAM_TOKEN", TOKEN), ("SEAM_AUDIT_KEY", KEY)], &[]);
    seam.token = Some(TOKEN.to_owned());
    let mut client = SdkClient::http_with_token(&format!("{}/mcp", seam.base), TOKEN);
    let secret_message = json!({ "message": format!("the token is {TOKEN}") });
    assert_eq!(client.call("mcp__f__alpha", secret_message.clone())["isError"], false);
    assert_eq!(client.call("mcp__f__alpha", json!({ "message": "two" }))["isError"], false);
    assert_eq!(client.call("mcp__f__alpha", json!({ "message": "three" }))["isError"], true, "past the quota");
    assert_eq!(client.call("mcp__f__pid", json!({}))["isError"], true, "no person to approve it");
    assert_eq!(client.call("mcp__f__nope", json!({}))["isError"], true, "no such tool");
    assert!(client.tool_names().contains(&"mcp__f__alpha".to_owned()), "a list is not recorded");
    let head = seam.status()["audit"]["head"].as_str().unwrap().to_owned();
    client.close();
    assert!(seam.terminate().success());

    let trail = dir.join("trail/audit.jsonl");
    let text = std::fs::read_to_string(&trail).unwrap();
    assert!(!text.contains(TOKEN) && !text.contains(KEY), "no secret in the trail: {text}");
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seen: Vec<(&str, &str, &str)> =
        records.iter().map(|r| (r["target"].as_str().unwrap(), r["decision"].as_str().unwrap(), r["result"].as_str().unwrap())).collect();
    assert_eq!(
        seen,
        [
            ("mcp__f__alpha", "served", "ok"),
            ("mcp__f__alpha", "served", "ok"),
            ("mcp__f__alpha", "over_quota", "QUOTA_EXCEEDED"),
            ("mcp__f__pid", "declined", "APPROVAL_UNAVAILABLE"),
            ("mcp__f__nope", "denied", "TOOL_UNKNOWN"),
        ]
    );
    let first = &records[0];
    assert_eq!(
        (first["agent"].as_str(), first["token"].as_str(), first["mount"].as_str()),
        (Some("default"), Some("env:SEAM_TOKEN"), Some("f"))
    );
    let digest = seam_engine::chain::arguments_digest(secret_message.as_object().unwrap());
    assert_eq!(first["arguments_sha256"], digest.as_str(), "the arguments are named by their digest");
    assert!(first["hmac"].is_string() && first["prev"].is_null() && records[1]["prev"].is_string(), "{first}");

    let at = trail.to_str().unwrap();
    let (code, said) = verify(&[at, "--head", &head, "--key-env", "SEAM_AUDIT_KEY"]);
    assert_eq!(code, 0, "{said}");
    assert!(said.starts_with("5 records, chain and HMACs intact"), "{said}");

    // A record's result changed: the key catches it at that record.
    let edited = text.replacen("\"result\":\"QUOTA_EXCEEDED\"", "\"result\":\"ok\"", 1);
    std::fs::write(&trail, &edited).unwrap();
    let (code, said) = verify(&[at, "--key-env", "SEAM_AUDIT_KEY"]);
    assert_eq!(code, 1, "{said}");
    assert!(said.starts_with(&format!("{at}:3: the trail is broken")), "{said}");
    // The last record cut: the chain still holds; the head does not.
    let cut: String = text.lines().take(4).map(|l| format!("{l}\n")).collect();
    std::fs::write(&trail, cut).unwrap();
    assert_eq!(verify(&[at]).0, 0);
    let (code, said) = verify(&[at, "--head", &head]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("records after it are missing"), "{said}");
}

/// A trail that cannot be kept refuses the start, so that no request goes unrecorded.
#[test]
fn a_trail_whose_key_is_unset_refuses_the_start() {
    let dir = scratch("audit-no-key");
    let file = dir.join("c.yaml");
    let mount = flaky_mount("f", &[("FLAKY_TOOLS", "alpha")], "");
    write_atomically(&file, &format!("seam: 1\nmounts:\n{mount}serve:\n  audit: {{ path: a.jsonl, key_env: SEAM_AUDIT_KEY_UNSET }}\n"));
    let out = Command::new(seam_bin())
        .args(["serve", file.to_str().unwrap(), "--no-watch"])
        .env_remove("SEAM_AUDIT_KEY_UNSET")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    // The diagnostic as every refused start shows it: located at the key, with its code.
    assert!(log.contains("c.yaml:10:36: error[AUDIT_UNWRITABLE]"), "{log}");
    assert!(!dir.join("a.jsonl").exists(), "nothing was written");
}

/// A request given up before its answer is still a record, `cancelled`, since it may
/// have reached its server: here a 2026-07-28 call waiting for its client's approval,
/// which never retries, so that the call expires at `serve.input_timeout`.
#[test]
fn a_call_given_up_before_its_answer_is_recorded_as_cancelled() {
    let dir = scratch("audit-cancelled");
    let file = dir.join("c.yaml");
    let mount = flaky_mount("f", &[("FLAKY_TOOLS", "alpha")], "");
    let rest = "serve:\n  input_timeout: 1s\n  audit: { path: a.jsonl }\ntools:\n  mcp__f__alpha: { approve: ask }\n";
    write_atomically(&file, &format!("seam: 1\nmounts:\n{mount}{rest}"));
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let params = json!({ "name": "mcp__f__alpha", "arguments": { "message": "hi" } });
    let asked = modern_request(&seam.base, "/mcp", "tools/call", params, json!({ "elicitation": { "form": {} } }));
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let trail = dir.join("a.jsonl");
    let mut records = Vec::new();
    wait_until("the expired call's record", || {
        records = std::fs::read_to_string(&trail).unwrap_or_default().lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect();
        !records.is_empty()
    });
    assert_eq!((records[0]["target"].as_str(), records[0]["decision"].as_str()), (Some("mcp__f__alpha"), Some("cancelled")), "{records:?}");
    assert!(seam.terminate().success());
}

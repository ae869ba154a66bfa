//! `approve` (issue 40): a call whose tool needs a person's yes goes on only with it,
//! asked of the calling client in its era (a 2025-11-25 client's `elicitation/create`,
//! a 2026-07-28 client's `input_required`). A no, a silence past `serve.input_timeout`,
//! or a client that cannot be asked each give the call a tool error with a code, and
//! the server never hears of the call (the flaky server's own record, `FLAKY_HEARD`).

use serde_json::{Value, json};

use crate::support::*;

/// A composition whose `mcp__f__*` tools are asked about, but `mcp__f__pid`; the
/// server records what it hears in `heard`.
fn approving(name: &str, input_timeout: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(name);
    let (file, heard) = (dir.join("c.yaml"), dir.join("heard.log"));
    let _ = std::fs::remove_file(&heard);
    let mount = flaky_mount("f", &[("FLAKY_TOOLS", "alpha"), ("FLAKY_HEARD", heard.to_str().unwrap())], "");
    let tools = "tools:\n  \"mcp__f__*\": { approve: ask }\n  mcp__f__pid: { approve: never }\n";
    write_atomically(&file, &format!("seam: 1\nserve:\n  input_timeout: {input_timeout}\nmounts:\n{mount}{tools}"));
    (file, heard)
}

/// The Python SDK client's call of `mcp__f__alpha`, answering as `answer` says.
fn python_call(era: &str, answer: &str, url: &str, message: &str) -> Value {
    let arguments = json!({ "message": message }).to_string();
    python_peer("py-approve.py", &[era, answer, "mcp__f__alpha", &arguments, url])
}

fn refused_with(seen: &Value, code: &str) {
    assert_eq!(seen["call"]["error"], true, "{seen}");
    let text = seen["call"]["text"].as_str().unwrap();
    assert!(text.starts_with(&format!("{code}: ")), "{code}: {seen}");
}

#[test]
fn a_call_that_needs_approval_goes_on_only_with_a_yes_in_both_eras() {
    let (file, heard) = approving("approval-eras", "1m");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    for era in ["legacy", "2026-07-28"] {
        let before = calls_heard(&heard);
        let yes = python_call(era, "yes", &url, "hi");
        assert_eq!(yes["call"], json!({ "text": "alpha: hi", "error": false }), "{era}: {yes}");
        let question = yes["asked"][0].as_str().unwrap_or_else(|| panic!("{era}: asked nothing: {yes}"));
        for shown in ["Agent `default`", "`mcp__f__alpha`", "mount `f`", "\"message\": \"hi\"", "sha256:"] {
            assert!(question.contains(shown), "{era}: the question shows {shown}: {question}");
        }
        assert_eq!(calls_heard(&heard), before + 1, "{era}: approved, the call reached the server");

        refused_with(&python_call(era, "no", &url, "hi"), "APPROVAL_DECLINED");
        refused_with(&python_call(era, "decline", &url, "hi"), "APPROVAL_DECLINED");
        let unasked = python_call(era, "none", &url, "hi");
        refused_with(&unasked, "APPROVAL_UNAVAILABLE");
        assert_eq!(unasked["asked"], json!([]), "{era}: {unasked}");
        assert_eq!(calls_heard(&heard), before + 1, "{era}: nothing unapproved reached the server");

        // `approve: never` on a narrower rule: not asked.
        let pid = crate::support::python_peer("py-approve.py", &[era, "none", "mcp__f__pid", "{}", &url]);
        assert_eq!(pid["call"]["error"], false, "{era}: {pid}");
        assert_eq!(calls_heard(&heard), before + 2);
    }
    // On `/metrics`, by answer: per era one yes, two noes, one that could not be asked.
    let answered = |answer: &str| seam.metric(&format!("seam_approvals_total{{answer=\"{answer}\"}}"));
    assert_eq!(
        [answered("yes"), answered("no"), answered("timeout"), answered("unavailable")],
        [Some(2.0), Some(4.0), Some(0.0), Some(2.0)]
    );
    assert!(seam.terminate().success());
}

/// A 2025-11-25 client that never answers: the question is withdrawn at
/// `serve.input_timeout`, the call refused, the server never called. (A 2026-07-28
/// client's unanswered call expires with its `requestState`, as every waiting call
/// does: `tests/serve/eras.rs`.)
#[test]
fn an_unanswered_approval_times_out_and_the_server_never_hears_of_the_call() {
    let (file, heard) = approving("approval-timeout", "2s");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    refused_with(&python_call("legacy", "silent", &format!("{}/mcp", seam.base), "hi"), "APPROVAL_TIMEOUT");
    let record = std::fs::read_to_string(&heard).unwrap();
    assert!(record.contains(" initialize") && calls_heard(&heard) == 0, "the server's record is kept, and has no call: {record}");
    assert!(seam.terminate().success());
}

/// A 2026-07-28 client's yes is an answer to one waiting call: replayed for other
/// arguments it opens nothing, given once it approves that call, and given again it is
/// unknown; a call left waiting past `serve.input_timeout` expires. Raw requests, to
/// send what a well-behaved client would not.
#[test]
fn a_2026_yes_approves_one_call_with_its_arguments_once() {
    let (file, heard) = approving("approval-replay", "1m");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let call = |message: &str, retry: Option<(&str, bool)>| {
        let mut params = json!({ "name": "mcp__f__alpha", "arguments": { "message": message } });
        if let Some((state, approve)) = retry {
            params["requestState"] = json!(state);
            params["inputResponses"] = json!({ "q1": { "action": "accept", "content": { "approve": approve } } });
        }
        modern_request(&seam.base, "/mcp", "tools/call", params, json!({ "elicitation": { "form": {} } }))
    };
    let code_of = |answer: &Value| answer["error"]["data"]["code"].as_str().map(str::to_owned).unwrap_or_else(|| panic!("{answer}"));

    let first = call("a", None);
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let asked = &first["result"]["inputRequests"]["q1"];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert!(asked["params"]["message"].as_str().unwrap().contains("\"message\": \"a\""), "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();

    assert_eq!(code_of(&call("b", Some((&state, true)))), "INPUT_STATE_WRONG_REQUEST", "a yes for other arguments");
    assert_eq!(calls_heard(&heard), 0);
    let done = call("a", Some((&state, true)));
    assert_eq!(done["result"]["content"][0]["text"], "alpha: a", "{done}");
    assert_eq!(calls_heard(&heard), 1);
    assert_eq!(code_of(&call("a", Some((&state, true)))), "INPUT_STATE_UNKNOWN", "the same yes twice");
    assert_eq!(calls_heard(&heard), 1, "approved once, called once");
    assert!(seam.terminate().success());
}

/// A client with no person behind it cannot approve: the MCP Inspector's CLI, which
/// declares no elicitation, is refused with a code the model can read; so is `seam
/// call`, which has no client at all.
#[test]
fn a_headless_client_cannot_approve() {
    let (file, heard) = approving("approval-headless", "1m");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let home = scratch("approval-headless-home");
    let url = format!("{}/mcp", seam.base);
    let call = ["--method", "tools/call", "--tool-name", "mcp__f__alpha", "--tool-arg", "message=hi"];
    for era in ["legacy", "modern"] {
        let (_, answer) = crate::serve::inspector::inspector(&home, &[&url], era, &call);
        let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{era}: {answer}"));
        assert!(text.starts_with("APPROVAL_UNAVAILABLE: ") && text.contains("cannot approve"), "{era}: {answer}");
    }
    let out = std::process::Command::new(seam_bin())
        .args(["call", file.to_str().unwrap(), "mcp__f__alpha", "--args", r#"{"message": "hi"}"#])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("APPROVAL_UNAVAILABLE"), "{printed}{}", String::from_utf8_lossy(&out.stderr));
    let record = std::fs::read_to_string(&heard).unwrap();
    assert!(record.contains(" initialize") && calls_heard(&heard) == 0, "the server's record is kept, and has no call: {record}");
    assert!(seam.terminate().success());
}

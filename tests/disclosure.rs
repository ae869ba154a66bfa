//! `disclosure` (issue 42): an agent whose tools are deferred is listed seam's fixed
//! tools, those `always` keeps, and `tool_search` and `tool_call`; a search finds the
//! rest, and they are called through `tool_call` or by name, through the call stage
//! like any call. Real peers: server-everything and server-filesystem behind seam, the
//! official Python SDK client in both eras, the TypeScript SDK client over HTTP. The
//! ranking itself is tested in `engine/src/disclosure.rs` and scored in `bench/tool-search`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::access::{borrowed, initialized_session, raw};
use crate::support::*;

/// server-everything as `everything` and server-filesystem (over `dir`) as `fs`, listed
/// whole (`disclosure: all` on the mount), with `top` written at the top.
fn composition(dir: &Path, top: &str) -> PathBuf {
    let file = dir.join("c.yaml");
    let everything = json!(peer_bin("mcp-server-everything"));
    let fs = json!(peer_bin("mcp-server-filesystem"));
    let text = format!(
        "seam: 1\nmounts:\n  everything:\n    kind: mcp.stdio\n    command: {everything}\n    args: [stdio]\n  \
         fs:\n    kind: mcp.stdio\n    command: {fs}\n    args: [{}]\n    disclosure: all\n{top}",
        json!(dir.to_str().unwrap())
    );
    write_atomically(&file, &text);
    file
}

/// One call with the Python SDK client in `era`: the tools it was listed and the call's text.
fn python(era: &str, url: &str, tool: &str, arguments: Value) -> (Vec<String>, String, bool) {
    let out = python_peer("py-tools.py", &[era, tool, &arguments.to_string(), url]);
    let tools = out["tools"].as_object().unwrap().keys().cloned().collect();
    (tools, out["call"]["text"].as_str().unwrap_or_default().to_owned(), out["call"]["error"] == true)
}

/// The names of the definitions a `tool_search` answered with, best first.
fn found(text: &str) -> Vec<String> {
    let result: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("a search answers JSON: {text}"));
    result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// In either era the list holds the fixed part, `always`'s tool and seam's two; a search
/// finds a deferred tool with its whole definition; it is called through `tool_call` and
/// by its name; a tool the agent's rules hide is neither found nor called; a `tool_call`
/// that names no tool is told why.
#[test]
fn search_lists_a_few_tools_and_finds_and_calls_the_rest_in_both_eras() {
    let dir = scratch("disclosure-eras");
    let top = "disclosure: { mode: search, always: [\"mcp__everything__echo\"] }\ntools:\n  mcp__everything__get-env: false\n";
    let file = composition(&dir, top);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    for era in ["legacy", "2026-07-28"] {
        let (listed, text, error) = python(era, &url, "tool_search", json!({ "query": "add two numbers" }));
        for kept in ["tool_search", "tool_call", "mcp__everything__echo", "mcp__fs__read_text_file"] {
            assert!(listed.contains(&kept.to_owned()), "{era}: {kept} is listed: {listed:?}");
        }
        assert!(!listed.iter().any(|t| t == "mcp__everything__get-sum"), "{era}: deferred, not listed: {listed:?}");
        assert!(!error, "{era}: {text}");
        assert_eq!(found(&text).first().map(String::as_str), Some("mcp__everything__get-sum"), "{era}: {text}");
        let definition: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(definition["tools"][0]["inputSchema"]["required"], json!(["a", "b"]), "the whole definition: {text}");

        let sum = json!({ "a": 2, "b": 3 });
        let through = python(era, &url, "tool_call", json!({ "name": "mcp__everything__get-sum", "arguments": sum }));
        assert_eq!((through.1.as_str(), through.2), ("The sum of 2 and 3 is 5.", false), "{era}: through tool_call");
        let by_name = python(era, &url, "mcp__everything__get-sum", sum.clone());
        assert_eq!((by_name.1.as_str(), by_name.2), ("The sum of 2 and 3 is 5.", false), "{era}: by its name");

        // Visibility first: what the rules hide is not in the index, nor callable.
        let (_, text, _) = python(era, &url, "tool_search", json!({ "query": "environment variables get env", "max_results": 5 }));
        let names = found(&text);
        assert!(!names.is_empty() && !names.iter().any(|n| n.contains("get-env")), "{era}: a hidden tool is never found: {text}");
        let hidden = python(era, &url, "tool_call", json!({ "name": "mcp__everything__get-env" }));
        assert!(hidden.2 && hidden.1.starts_with("TOOL_UNKNOWN: "), "{era}: {hidden:?}");

        let invalid = python(era, &url, "tool_call", json!({ "arguments": {} }));
        assert!(invalid.2 && invalid.1.starts_with("TOOL_SEARCH_INVALID: "), "{era}: {invalid:?}");
        let past = python(era, &url, "tool_search", json!({ "query": "sum", "max_results": 6 }));
        assert!(past.2 && past.1.starts_with("TOOL_SEARCH_INVALID: "), "{era}: one past `max_results`: {past:?}");
    }
    let cost = &seam.status()["catalogs"]["default"];
    let (tokens, all) = (cost["tokens"].as_u64().unwrap(), cost["tokens_all"].as_u64().unwrap());
    assert!(cost["deferred"].as_u64() > Some(10) && tokens < all, "{cost}");
    let (code, page) = seam.get("/ui");
    let shown = format!(r#"data-tokens="{}" data-tokens-all="{}""#, cost["tokens"], cost["tokens_all"]);
    assert!(code == 200 && page.contains(&shown), "the status page shows the list's cost both ways: {page}");
    assert!(page.contains(r#"data-tool="mcp__everything__get-sum" data-deferred"#), "and marks what is deferred");
    assert!(seam.terminate().success());
}

/// Two sessions of the agent are sent the same bytes for `tools/list`: a prompt cache
/// keeps the catalog from one session to the next.
#[test]
fn the_listed_catalog_is_byte_identical_across_sessions() {
    let dir = scratch("disclosure-stable");
    let file = composition(&dir, "disclosure: search\n");
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    let lists: Vec<String> = (0..2)
        .map(|_| {
            let headers = initialized_session(&seam);
            let (code, body) = raw(&seam.base, "POST", "/mcp", &borrowed(&headers), list.as_bytes(), false);
            assert_eq!(code, 200, "{body}");
            body.split_once("\r\n\r\n").map_or(body.clone(), |(_, b)| b.to_owned())
        })
        .collect();
    assert!(lists[0].contains("\"tool_search\""), "{}", lists[0]);
    assert_eq!(lists[0], lists[1]);
    assert!(seam.terminate().success());
}

/// A deferred tool's calls pass the call stage as that tool's, whichever way they come:
/// its quota counts both ways, its approval is asked (and, with nobody to ask, refused),
/// and the audit trail records the tool, not `tool_call`.
#[test]
fn calls_of_deferred_tools_are_counted_approved_and_recorded_as_theirs() {
    let dir = scratch("disclosure-chain");
    let top = "disclosure: search\n\
               tools:\n  mcp__everything__get-tiny-image: { approve: ask }\n\
               quota:\n  - { tools: \"mcp__everything__get-sum\", calls: { max: 1, per: 1h } }\n\
               serve:\n  audit: { path: audit.jsonl }\n";
    let file = composition(&dir, top);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    let sum = json!({ "name": "mcp__everything__get-sum", "arguments": { "a": 1, "b": 1 } });
    assert_eq!(python("legacy", &url, "tool_call", sum.clone()).1, "The sum of 1 and 1 is 2.");
    let by_name = python("2026-07-28", &url, "mcp__everything__get-sum", json!({ "a": 1, "b": 1 }));
    assert!(by_name.2 && by_name.1.starts_with("QUOTA_EXCEEDED: "), "one quota, either way: {by_name:?}");
    let again = python("legacy", &url, "tool_call", sum);
    assert!(again.2 && again.1.starts_with("QUOTA_EXCEEDED: "), "{again:?}");
    let image = python("legacy", &url, "tool_call", json!({ "name": "mcp__everything__get-tiny-image" }));
    assert!(image.2 && image.1.starts_with("APPROVAL_UNAVAILABLE: "), "{image:?}");
    assert!(seam.terminate().success());

    let records: Vec<Value> =
        std::fs::read_to_string(dir.join("audit.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let calls: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["method"] == "tools/call")
        .map(|r| (r["target"].as_str().unwrap(), r["decision"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("mcp__everything__get-sum", "served"),
            ("mcp__everything__get-sum", "over_quota"),
            ("mcp__everything__get-sum", "over_quota"),
            ("mcp__everything__get-tiny-image", "declined"),
        ]
    );
}

/// A reload that turns search on tells an open session its list changed and restarts no
/// server; `auto` lists a catalog of exactly `above.tools` tools and defers one past it.
#[test]
fn a_reload_switches_disclosure_and_auto_defers_one_past_its_size() {
    let dir = scratch("disclosure-reload");
    let file = composition(&dir, "");
    let seam = HttpSeam::start(&file, &[]);
    let pid = seam.status()["mounts"]["everything"]["pid"].clone();
    let whole = seam.status()["catalogs"]["default"].clone();
    assert_eq!((whole["deferred"].as_u64(), whole["tokens"].clone()), (Some(0), whole["tokens_all"].clone()), "{whole}");
    let tools = whole["tools_all"].as_u64().unwrap();
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert!(client.tool_names().contains(&"mcp__everything__get-sum".to_owned()));

    composition(&dir, "disclosure: search\n");
    seam.wait_reload(2);
    client.wait_list_changed();
    let listed = client.tool_names();
    assert!(listed.contains(&"tool_search".to_owned()) && !listed.contains(&"mcp__everything__get-sum".to_owned()), "{listed:?}");
    assert_eq!(seam.status()["mounts"]["everything"]["pid"], pid, "the server was not restarted");
    client.close();

    // The filesystem mount is listed whole whatever the agent's mode: `auto` counts the catalog, all of it.
    composition(&dir, &format!("disclosure: {{ mode: auto, above: {{ tools: {tools} }} }}\n"));
    let at = seam.wait_reload(3);
    assert_eq!(at["outcome"], "applied", "{at}");
    assert_eq!(seam.status()["catalogs"]["default"]["deferred"], 0, "at its size, listed");
    composition(&dir, &format!("disclosure: {{ mode: auto, above: {{ tools: {} }} }}\n", tools - 1));
    seam.wait_reload(4);
    let past = seam.status()["catalogs"]["default"].clone();
    assert!(past["deferred"].as_u64() > Some(10), "one past its size, the everything mount's are deferred: {past}");
    assert!(seam.terminate().success());
}

/// What a pin holds back is not in the index either: a server changed since its lock
/// (a rug pull) has its changed tool neither found nor called, by name or through
/// `tool_call`; its unchanged tools are found.
#[test]
fn a_tool_a_pin_holds_is_never_found() {
    let dir = scratch("disclosure-pin");
    let file = dir.join("rug.yaml");
    let write = |pulled: bool| {
        let server = root().join("tests/peers/py-rug-pull-server.py");
        let text = format!(
            "seam: 1\ndisclosure: search\nmounts:\n  rug:\n    kind: mcp.stdio\n    command: {}\n    args: [{}]\n    \
             env: {{ RUG_PULLED: \"{}\" }}\n    protocol: modern\n    pin: locked\n",
            json!(crate::support::python()),
            json!(server.display().to_string()),
            u8::from(pulled)
        );
        write_atomically(&file, &text);
    };
    // `seam call` exits 1 on an error result; its stdout is the result either way.
    let seam = |args: &[&str]| {
        let out = std::process::Command::new(seam_bin()).args(args).output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
    };
    let f = file.display().to_string();
    let text = |v: &Value| v["content"][0]["text"].as_str().unwrap().to_owned();
    let weather = r#"{"query": "weather of a city", "max_results": 5}"#;
    // Unpinned and honest, it is found.
    write(false);
    let honest = std::fs::read_to_string(&file).unwrap().replace("    pin: locked\n", "");
    let unpinned = dir.join("unpinned.yaml");
    std::fs::write(&unpinned, honest).unwrap();
    let found_before = text(&seam(&["call", &unpinned.display().to_string(), "tool_search", "--args", weather]));
    assert_eq!(self::found(&found_before).first().map(String::as_str), Some("mcp__rug__weather"), "{found_before}");
    let locked = std::process::Command::new(seam_bin()).args(["lock", &f]).status().unwrap();
    assert!(locked.success());
    write(true);
    let found = text(&seam(&["call", &f, "tool_search", "--args", weather]));
    assert!(!found.contains("mcp__rug__weather"), "{found}");
    let grow = text(&seam(&["call", &f, "tool_search", "--args", r#"{"query": "grow"}"#]));
    assert_eq!(self::found(&grow), ["mcp__rug__grow"], "{grow}");
    for (tool, args) in
        [("tool_call", r#"{"name": "mcp__rug__weather", "arguments": {"city": "Oslo"}}"#), ("mcp__rug__weather", r#"{"city": "Oslo"}"#)]
    {
        let refused = text(&seam(&["call", &f, tool, "--args", args]));
        assert!(refused.starts_with("TOOL_UNKNOWN: "), "{tool}: {refused}");
    }
}

/// A raw-named mount's tool called `tool_call` is left out while the agent's tools are
/// deferred, and said so in the mount's warnings; `tool_call` is seam's.
#[test]
fn a_mount_s_tool_named_like_seam_s_is_left_out_while_tools_are_deferred() {
    let dir = scratch("disclosure-raw");
    let file = dir.join("raw.yaml");
    let text = format!(
        "seam: 1\ndisclosure: search\nmounts:\n  everything:\n    kind: mcp.stdio\n    command: {}\n    args: [stdio]\n    \
         naming: raw\n    rewrite:\n      echo: {{ name: tool_call }}\n",
        json!(peer_bin("mcp-server-everything"))
    );
    write_atomically(&file, &text);
    let f = file.display().to_string();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(seam_bin()).args(args).output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)))
    };
    let inventory = run(&["inventory", "--probe", "--format", "json", &f]);
    let warnings = inventory["mounts"].as_array().unwrap().iter().find(|m| m["id"] == "everything").unwrap()["warnings"].to_string();
    assert!(warnings.contains("tool `tool_call` is seam's own while agent `default`'s tools are deferred"), "{inventory}");
    let sum = run(&["call", &f, "tool_call", "--args", r#"{"name": "get-sum", "arguments": {"a": 1, "b": 2}}"#]);
    assert_eq!(sum["content"][0]["text"], "The sum of 1 and 2 is 3.", "seam's tool_call: {sum}");
}

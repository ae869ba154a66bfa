//! Secret hygiene: with every secret the shipped compositions name (and the
//! `serve` tokens) set to a known random value, nothing seam prints, logs or
//! answers contains it: `validate`, `graph`, `diff`, `inventory --probe`,
//! and `seam serve` with calls through a failing provider that echoes its
//! request, `/status` and the status page, all at `RUST_LOG=trace`.

use std::process::Command;

use crate::support::stub_http::{Reply, Stub};
use crate::support::*;
use serde_json::json;

/// A value no code path could produce by chance.
fn secret(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{}-{name}-{nanos:08x}-{}", "s3cr3t", std::process::id())
}

/// The environment variables the shipped compositions name as secrets (`*_env` fields).
fn secret_variables() -> Vec<String> {
    let mut names = Vec::new();
    for file in files_under(&root().join("compositions")) {
        if file.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let line = line.trim();
            if let Some((key, value)) = line.split_once(':')
                && key.ends_with("_env")
            {
                names.push(value.trim().to_owned());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

fn assert_clean(what: &str, text: &str, secrets: &[(String, String)]) {
    for (name, value) in secrets {
        assert!(!text.contains(value.as_str()), "{what} shows the value of {name}:\n{text}");
    }
}

#[test]
fn no_output_log_or_answer_contains_a_secret() {
    let names = secret_variables();
    assert!(names.contains(&"DEEPSEEK_API_KEY".to_owned()), "the shipped compositions name their secrets: {names:?}");
    let dir = scratch("secrets");
    let token_file = dir.join("serve-token");
    let mut secrets: Vec<(String, String)> = names.iter().map(|n| (n.clone(), secret(n))).collect();
    secrets.push(("SEAM_SERVE_TOKEN".into(), secret("serve")));
    secrets.push(("serve token file".into(), secret("file")));
    std::fs::write(&token_file, format!("{}\n", secrets.last().unwrap().1)).unwrap();
    let env: Vec<(&str, &str)> = secrets.iter().filter(|(n, _)| !n.contains(' ')).map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let run = |args: &[&str]| {
        let out = Command::new(seam_bin()).args(args).envs(env.iter().copied()).env("RUST_LOG", "trace").output().unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };

    let compositions = root().join("compositions");
    let (base, coding) = (compositions.join("base.yaml"), compositions.join("coding.yaml"));
    for args in [
        vec!["validate".to_owned(), "--environment".to_owned(), compositions.display().to_string()],
        vec!["validate".to_owned(), "--format".to_owned(), "json".to_owned(), compositions.display().to_string()],
        vec!["graph".to_owned(), base.display().to_string(), "--format".to_owned(), "json".to_owned()],
        vec!["diff".to_owned(), base.display().to_string(), coding.display().to_string()],
        vec!["inventory".to_owned(), "--probe".to_owned(), "--format".to_owned(), "json".to_owned(), base.display().to_string()],
        vec!["schema".to_owned()],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_clean(&format!("seam {}", args.join(" ")), &run(&args), &secrets);
    }

    // A provider that fails, echoing every request header (the key among them) in its error body.
    let api = Stub::start(|r| {
        let headers: Vec<String> = r.headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        Reply::new(500, &[("content-type", "text/plain")], format!("upstream failed; you sent {}", headers.join("; ")))
    });
    let file = dir.join("seam.yaml");
    std::fs::write(
        &file,
        format!(
            "seam: 1\nextends: [{}]\nserve:\n  bearer_token_env: SEAM_SERVE_TOKEN\nmounts:\n  deepseek-official:\n    kind: web.search.deepseek\n    \
             base_url: {}\nagents:\n  ops:\n    serve: {{ bearer_token_file: {} }}\n",
            json!(base),
            json!(api.url("")),
            json!(token_file)
        ),
    )
    .unwrap();
    let serve_token = secrets.iter().find(|(n, _)| n == "SEAM_SERVE_TOKEN").unwrap().1.clone();
    let mut env_for_serve = env.clone();
    env_for_serve.push(("RUST_LOG", "trace"));
    let mut seam = HttpSeam::start_with_env(&file, &[], &env_for_serve, &[]);
    let mut client = SdkClient::http_with_token(&format!("{}/mcp", seam.base), &serve_token);
    let failed = client.call("web_search", json!({ "queries": ["where is the key"] }));
    assert_eq!(failed["isError"], true, "{failed}");
    assert!(api.requests().iter().any(|r| r.header("x-api-key").is_some()), "the key went to the provider");
    assert!(failed.to_string().contains("[redacted]"), "the echoed key is blanked out: {failed}");
    assert_clean("the tool result", &failed.to_string(), &secrets);
    client.close();
    let client = reqwest::blocking_get(&format!("{}/status", seam.base), &serve_token);
    assert_clean("/status", &client, &secrets);
    let page = reqwest::blocking_get(&format!("{}/ui", seam.base), &serve_token);
    assert!(page.contains("data-mount=\"deepseek-official\""), "{page}");
    assert_clean("the status page", &page, &secrets);
    // Everything seam logged so far, at trace.
    seam.child.kill().unwrap();
    let _ = seam.child.wait();
    while seam.stderr.next(std::time::Duration::from_millis(500)).is_some() {}
    let logged = seam.stderr.seen.join("\n");
    assert!(logged.contains("TRACE") || logged.contains("DEBUG"), "the log ran at trace: {logged}");
    assert_clean("seam's log", &logged, &secrets);
}

/// A blocking GET with a bearer token, for the checks above.
mod reqwest {
    pub fn blocking_get(url: &str, token: &str) -> String {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let client = ::reqwest::Client::builder().no_proxy().build().unwrap();
            let response = client.get(url).bearer_auth(token).send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200, "{url}");
            response.text().await.unwrap()
        })
    }
}

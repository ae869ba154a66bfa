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

/// The first event of the status page's `/events` stream (the whole page's sections).
fn first_event(base: &str) -> String {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let client = ::reqwest::Client::builder().no_proxy().build().unwrap();
        let mut stream = client.get(format!("{base}/events")).send().await.unwrap();
        let mut seen = String::new();
        let read = async {
            while !seen.contains("\n\n") {
                let Some(chunk) = stream.chunk().await.unwrap() else { break };
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        };
        tokio::time::timeout(PATIENCE, read).await.expect("the first event");
        assert!(seen.contains("event: update"), "{seen}");
        seen
    })
}

/// A rejected edit publishes no secret that made it fail, nor one on a line it quotes:
/// a secret written inline (`bearer_token: sk-…`, an `Authorization` header, a password
/// or a secret-named query parameter in a URL), and a YAML syntax error on a line that
/// holds one. Each is rejected with its code, and its secret is in none of `/status`,
/// the status page, its `/events`, the log, or `seam validate` in any format.
#[test]
fn a_rejected_edit_quotes_no_secret() {
    let dir = scratch("secrets-rejected");
    let file = dir.join("seam.yaml");
    std::fs::write(&file, "seam: 1\n").unwrap();
    let mut seam = HttpSeam::start_with_env(&file, &[], &[("RUST_LOG", "debug")], &[]);
    let mount = |extra: &str| format!("seam: 1\nmounts:\n  remote:\n    kind: mcp.http\n{extra}");
    let edits: Vec<(&str, String, String)> = vec![
        ("SECRET_INLINE", secret("sk-live"), String::new()),
        ("SECRET_INLINE", secret("header"), String::new()),
        ("YAML_SYNTAX", secret("syntax"), String::new()),
        ("SECRET_INLINE", secret("password"), String::new()),
        ("SECRET_INLINE", secret("query"), String::new()),
    ]
    .into_iter()
    .enumerate()
    .map(|(n, (code, secret, _))| {
        let text = match n {
            0 => format!("seam: 1\nserve:\n  bearer_token: sk-{secret}\n"),
            1 => mount(&format!("    url: http://127.0.0.1:9/mcp\n    headers: {{ Authorization: \"Bearer {secret}\" }}\n")),
            2 => format!("seam: 1\nmounts:\n  remote: {{ kind: mcp.http, url: \"http://127.0.0.1:9/mcp\", api_key: {secret} ]\n"),
            3 => mount(&format!("    url: \"http://alice:{secret}@127.0.0.1:9/mcp\"\n")),
            _ => mount(&format!("    url: \"http://127.0.0.1:9/mcp?v=1&api_key={secret}\"\n")),
        };
        (code, secret, text)
    })
    .collect();
    let all: Vec<(String, String)> = edits.iter().map(|(code, secret, _)| (code.to_string(), secret.clone())).collect();
    for (code, secret, text) in &edits {
        let before = seam.status()["last_reload"]["at"].clone();
        std::fs::write(&file, text).unwrap();
        wait_until("the edit's reload", || seam.status()["last_reload"]["at"] != before);
        let status = seam.status();
        assert_eq!(status["last_reload"]["outcome"], "rejected", "{status}");
        assert_eq!(status["last_reload"]["diagnostics"][0]["code"], *code, "{status}");
        let rendered = status["last_reload"]["diagnostics"][0]["rendered"].as_str().unwrap().to_owned();
        assert!(rendered.contains("***"), "the quoted line shows where the secret was: {rendered}");
        assert_clean("/status", &status.to_string(), &all);
        assert_clean("the status page", &seam.get("/ui").1, &all);
        assert_clean("/events", &first_event(&seam.base), &all);
        for format in ["human", "github", "json"] {
            let out = Command::new(seam_bin()).args(["validate", "--format", format]).arg(&file).output().unwrap();
            assert_eq!(out.status.code(), Some(1), "{format}");
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(said.contains(code), "{format}: {said}");
            assert_clean(&format!("validate --format {format}"), &said, &[("the edit".into(), secret.clone())]);
        }
    }
    seam.child.kill().unwrap();
    let _ = seam.child.wait();
    while seam.stderr.next(std::time::Duration::from_millis(500)).is_some() {}
    let logged = seam.stderr.seen.join("\n");
    assert!(logged.contains("reload rejected"), "{logged}");
    assert_clean("seam's log", &logged, &all);
}

/// A URL from `${VAR}` is not written in the file, so it may carry a password or a key;
/// wherever seam shows it (the log, `/status`, the status page, `inventory`), its userinfo
/// and query values are masked, and a failed connection says what happened in words,
/// with no Rust type names.
#[test]
fn a_url_from_the_environment_is_shown_without_its_secrets() {
    let dir = scratch("secrets-url-env");
    let file = dir.join("seam.yaml");
    std::fs::write(&file, "seam: 1\nmounts:\n  remote:\n    kind: mcp.http\n    url: ${MCP_URL}\n    startup_timeout: 5s\n").unwrap();
    let (password, key) = (secret("password"), secret("key"));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://alice:{password}@127.0.0.1:{closed}/mcp?api_key={key}");
    let all = [("password".to_owned(), password.clone()), ("key".to_owned(), key.clone())];
    let out = Command::new(seam_bin()).args(["validate"]).arg(&file).env("MCP_URL", &url).output().unwrap();
    assert!(out.status.success(), "from `${{VAR}}`, not written in the file: {}", String::from_utf8_lossy(&out.stderr));
    let probe =
        Command::new(seam_bin()).args(["inventory", "--probe", "--format", "json"]).arg(&file).env("MCP_URL", &url).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&probe.stdout), String::from_utf8_lossy(&probe.stderr));
    assert_clean("inventory --probe", &said, &all);
    let mut seam = HttpSeam::start_with_env(&file, &[], &[("MCP_URL", &url), ("RUST_LOG", "debug")], &[]);
    wait_until("the mount to fail", || seam.status()["mounts"]["remote"]["detail"].is_string());
    let status = seam.status();
    let mount = &status["mounts"]["remote"];
    assert_eq!(mount["url"], format!("http://***@127.0.0.1:{closed}/mcp?api_key=***"), "{status}");
    let detail = mount["detail"].as_str().unwrap();
    assert!(detail.contains("connection refused"), "in words: {detail}");
    assert!(!detail.contains("seam_mcp::") && !detail.contains("Transport ["), "no Rust type names: {detail}");
    assert_clean("/status", &status.to_string(), &all);
    assert_clean("the status page", &seam.get("/ui").1, &all);
    seam.child.kill().unwrap();
    let _ = seam.child.wait();
    while seam.stderr.next(std::time::Duration::from_millis(500)).is_some() {}
    assert_clean("seam's log", &seam.stderr.seen.join("\n"), &all);
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

/// OAuth's secrets (issue 43): a registered client's secret, the authorization code, and
/// every access and refresh token a login and its refreshes got are in the state file
/// only: in none of what `seam login` says, `serve`'s log, its answers (calls, a
/// step-up, a refused token), `/status`, the status page or the audit trail, nor what
/// `validate --environment` and `inventory --probe` print, all at `RUST_LOG=trace`.
#[test]
fn no_oauth_client_secret_code_or_token_is_shown() {
    let dir = scratch("secrets-oauth");
    // Tokens of 4 s: rmcp refreshes one with 2 s left.
    let (_server, url) = crate::oauth::oauth_server(4);
    let client_secret = "docs-secret"; // the registered client's, in tests/peers/oauth-server.mjs
    let file = crate::oauth::docs_composition(&dir, &url, "", "", "serve:\n  audit: { path: audit.jsonl, key_env: SEAM_AUDIT_KEY }\n");
    let trace = [("RUST_LOG", "trace"), ("SEAM_AUDIT_KEY", "audit-key-oauth-5e1f")];
    let login = crate::oauth::log_in_as("person", &file, "docs", &[], &trace);
    let code = login.callback.split(['?', '&']).find_map(|p| p.strip_prefix("code=")).expect("a code in the callback").to_owned();
    let mut secrets = vec![("the client secret".to_owned(), client_secret.to_owned()), ("the authorization code".to_owned(), code)];
    let kept = || {
        let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
        let token = &state[&format!("docs {url}")]["token_response"];
        [("an access token", &token["access_token"]), ("a refresh token", &token["refresh_token"])]
            .map(|(what, value)| (what.to_owned(), value.as_str().unwrap_or_else(|| panic!("{what}: {state}")).to_owned()))
    };
    secrets.extend(kept());

    let mut seam = HttpSeam::start_with_env(&file, &[], &trace, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let mut answers = vec![client.call("mcp__docs__whoami", json!({}))];
    answers.push(client.call("mcp__docs__admin", json!({})));
    assert!(answers[1].to_string().contains("MCP_OAUTH_LOGIN_NEEDED"), "a step-up: {}", answers[1]);
    // The token's life is what is tested: it must pass, and the token be refreshed.
    std::thread::sleep(std::time::Duration::from_secs(3));
    answers.push(client.call("mcp__docs__whoami", json!({})));
    let refreshed = kept();
    assert_ne!(refreshed[1], secrets[3], "refreshed, the refresh token rotated");
    secrets.extend(refreshed);
    answers.push(client.call("mcp__docs__revoke", json!({})));
    answers.push(client.call("mcp__docs__whoami", json!({})));
    assert_eq!(answers[4]["isError"], true, "a revoked grant's token is refused: {}", answers[4]);
    assert_clean("the answers", &serde_json::to_string(&answers).unwrap(), &secrets);
    client.close();
    assert_clean("/status", &seam.get("/status").1, &secrets);
    assert_clean("the status page", &seam.get("/ui").1, &secrets);
    seam.child.kill().unwrap();
    let _ = seam.child.wait();
    while seam.stderr.next(std::time::Duration::from_millis(500)).is_some() {}
    let logged = seam.stderr.seen.join("\n");
    assert!(logged.contains("TRACE"), "the log ran at trace: {logged}");
    assert_clean("seam's log", &logged, &secrets);
    assert_clean("seam login", &login.said, &secrets);
    let trail = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    assert!(trail.contains("mcp__docs__whoami"), "the calls are recorded: {trail}");
    assert_clean("the audit trail", &trail, &secrets);
    for args in [vec!["validate", "--environment"], vec!["inventory", "--probe", "--format", "json"]] {
        let out = Command::new(seam_bin()).args(&args).arg(&file).envs(trace).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_clean(&format!("seam {}", args.join(" ")), &said, &secrets);
    }
}

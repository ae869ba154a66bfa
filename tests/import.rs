//! `seam import`: real MCP client configs of each format (tests/fixtures/import/) become
//! compositions. The odd ones (comments, `${…}` references, disabled servers, Windows
//! commands, inline secrets) are checked by the composition written and the located
//! diagnostics, and no secret they hold is ever printed; the runnable ones
//! (`runnable/`) are imported, validated and served, and seam serves exactly the tools
//! of the servers they name.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

const FIXTURES: &str = "tests/fixtures/import";

/// What one `seam import` printed.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `seam import ARGS…` from the repository's root, with `env` set.
fn seam(args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(seam_bin()).args(args).envs(env.iter().copied()).current_dir(root()).output().expect("seam runs");
    Run {
        code: out.status.code().expect("seam exits"),
        stdout: String::from_utf8(out.stdout).expect("utf-8"),
        stderr: String::from_utf8(out.stderr).expect("utf-8"),
    }
}

/// `seam import` of a fixture to stdout; it succeeds, as the format named.
fn import(fixture: &str, format: &str) -> Run {
    let file = format!("{FIXTURES}/{fixture}");
    let run = seam(&["import", &file], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains(&format!("from {file} ({format}); ")), "not read as {format}: {}", run.stderr);
    run
}

/// The place and code of each diagnostic on stderr about `fixture`, in order.
fn located(run: &Run, fixture: &str) -> Vec<(u32, u32, String)> {
    let prefix = format!("{FIXTURES}/{fixture}:");
    run.stderr
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .map(|rest| {
            let mut parts = rest.splitn(3, ':');
            let line = parts.next().unwrap().parse().unwrap();
            let column = parts.next().unwrap().parse().unwrap();
            let code = rest.split('[').nth(1).unwrap().split(']').next().unwrap().to_owned();
            (line, column, code)
        })
        .collect()
}

fn expect(list: &[(u32, u32, &str)]) -> Vec<(u32, u32, String)> {
    list.iter().map(|(l, c, code)| (*l, *c, (*code).to_owned())).collect()
}

/// The lines of mount `id` in a composition, from its key to the blank line after it
/// (commented out, when the mount is).
fn mount<'a>(composition: &'a str, id: &str) -> &'a str {
    let start = [format!("\n  {id}:\n"), format!("\n  # {id}:\n")]
        .iter()
        .find_map(|key| composition.find(key.as_str()))
        .unwrap_or_else(|| panic!("no mount `{id}` in:\n{composition}"));
    let rest = &composition[start + 1..];
    &rest[..rest.find("\n\n").map_or(rest.len(), |end| end + 1)]
}

/// No secret of the fixture is in anything seam printed or wrote.
fn assert_no_secret(texts: &[&str], secrets: &[&str]) {
    for secret in secrets {
        for text in texts {
            assert!(!text.contains(secret), "the secret `{secret}` was shown:\n{text}");
        }
    }
}

/// The composition, written to a scratch folder, validates as `seam validate` checks it.
fn assert_validates(name: &str, composition: &str, env: &[(&str, &str)]) {
    let file = scratch(&format!("import-{name}")).join("imported.yaml");
    std::fs::write(&file, composition).unwrap();
    let run = seam(&["validate", file.to_str().unwrap()], env);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn claude_desktop_unwraps_cmd_keeps_windows_paths_and_copies_no_secret() {
    let fixture = "claude-desktop/claude_desktop_config.json";
    let run = import(fixture, "claude-desktop");
    assert_eq!(
        located(&run, fixture),
        expect(&[
            (4, 18, "IMPORT_WINDOWS"),
            (10, 9, "IMPORT_WINDOWS"),
            (18, 41, "IMPORT_SECRET_NOT_COPIED"),
            (23, 63, "IMPORT_SECRET_NOT_COPIED"),
            (25, 5, "IMPORT_MOUNT_RENAMED"),
            (26, 18, "IMPORT_WINDOWS"),
            (27, 16, "IMPORT_WINDOWS"),
            (29, 26, "IMPORT_SECRET_NOT_COPIED"),
            (30, 22, "IMPORT_SECRET_NOT_COPIED"),
            (36, 7, "IMPORT_SERVER_DISABLED"),
        ])
    );
    let out = &run.stdout;
    assert!(out.starts_with("# yaml-language-server: $schema=schemas/composition.schema.json\n"), "{out}");
    assert!(out.contains(&format!("  # from {FIXTURES}/{fixture}, mcpServers.filesystem (line 3)\n")), "{out}");
    assert_eq!(
        mount(out, "filesystem"),
        "  filesystem:\n    kind: mcp.stdio\n    command: npx\n    \
         args: [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"C:\\\\Users\\\\ada\\\\Desktop\", \"C:\\\\Users\\\\ada\\\\Downloads\"]\n"
    );
    assert!(mount(out, "github").contains("    env_passthrough: [GITHUB_PERSONAL_ACCESS_TOKEN]\n"), "{out}");
    assert!(mount(out, "postgres").contains("    args: [\"-y\", \"@modelcontextprotocol/server-postgres\", \"***\"]\n"), "{out}");
    let brave = mount(out, "Brave-Search");
    assert!(brave.contains("    command: \"C:\\\\Program Files\\\\nodejs\\\\node.exe\"\n"), "{brave}");
    assert!(brave.contains("    env_passthrough: [BRAVE_API_KEY, LOG_LEVEL]\n"), "{brave}");
    assert!(!brave.contains("env:"), "no inline value is copied: {brave}");
    assert!(mount(out, "memory").starts_with("  # memory:\n  #   kind: mcp.stdio\n"), "{out}");
    assert!(run.stderr.contains("set `GITHUB_PERSONAL_ACCESS_TOKEN` in seam's environment"), "{}", run.stderr);
    assert!(run.stderr.contains("imported 5 servers (1 written commented out)"), "{}", run.stderr);
    assert_no_secret(&[out, &run.stderr], &["ghp_FAKEfake0123456789abcdefABCDEF012345", "hunter2-fake-pw", "BSAfake-brave-key-000111222"]);
    assert_validates("claude-desktop", out, &[]);
}

#[test]
fn claude_code_maps_references_names_bearer_tokens_and_comments_out_sse() {
    let fixture = "claude-code/.mcp.json";
    let run = import(fixture, "claude-code");
    assert_eq!(
        located(&run, fixture),
        expect(&[
            (9, 24, "IMPORT_SECRET_NOT_COPIED"),
            (11, 25, "IMPORT_SECRET_NOT_COPIED"),
            (25, 26, "IMPORT_SECRET_NOT_COPIED"),
            (26, 24, "IMPORT_SECRET_NOT_COPIED"),
            (28, 7, "IMPORT_UNSUPPORTED"),
            (31, 15, "IMPORT_UNSUPPORTED"),
            (36, 55, "IMPORT_SECRET_NOT_COPIED"),
        ])
    );
    let out = &run.stdout;
    let everything = mount(out, "everything");
    // Same name: passed through; another name, neither a secret's: mapped; a secret's: passed through under its own name.
    assert!(everything.contains("    env: { API_BASE: \"${ACME_API_BASE:-}\" }\n"), "{everything}");
    assert!(everything.contains("    env_passthrough: [NODE_OPTIONS, DEBUG_LEVEL, ACME_API_KEY]\n"), "{everything}");
    assert!(run.stderr.contains("set `ACME_API_KEY` in seam's environment (to what `ACME_KEY` holds)"), "{}", run.stderr);
    assert!(mount(out, "sentry").contains("    bearer_token_env: SENTRY_AUTH_TOKEN\n"), "{out}");
    let linear = mount(out, "linear");
    assert!(linear.contains("    headers_env: { X-Workspace: LINEAR_X_WORKSPACE }\n    bearer_token_env: LINEAR_TOKEN\n"), "{linear}");
    assert!(mount(out, "legacy").starts_with("  # legacy:\n  #   kind: mcp.http\n"), "{out}");
    assert!(out.contains("mcpServers.legacy (line 30): an SSE server, so written commented out"), "{out}");
    assert!(mount(out, "scripts").contains("    args: [\"${HOME:-}/mcp/scripts.js\", \"--api-key\", \"***\"]\n"), "{out}");
    assert_no_secret(&[out, &run.stderr], &["lin_api_FAKEfakeFAKEfake0123456789", "sk-ant-fake-0000000000000000"]);
    assert_validates("claude-code", out, &[]);
}

#[test]
fn vscode_jsonc_with_inputs_env_files_and_workspace_folders() {
    let fixture = "vscode/.vscode/mcp.json";
    let run = import(fixture, "vscode");
    assert_eq!(
        located(&run, fixture),
        expect(&[
            (6, 13, "IMPORT_UNSUPPORTED"),
            (12, 13, "IMPORT_UNSUPPORTED"),
            (23, 26, "IMPORT_SECRET_NOT_COPIED"),
            (31, 31, "IMPORT_SECRET_NOT_COPIED"),
            (35, 7, "IMPORT_UNSUPPORTED"),
            (41, 7, "IMPORT_UNSUPPORTED"),
            (43, 5, "IMPORT_MOUNT_RENAMED"),
            (46, 7, "IMPORT_UNSUPPORTED"),
        ])
    );
    let out = &run.stdout;
    let workspace = root().join(FIXTURES).join("vscode").display().to_string();
    assert!(mount(out, "github").contains("    bearer_token_env: GITHUB_TOKEN\n"), "{out}");
    assert!(
        run.stderr.contains("comes from VS Code's input `github_token`, which seam does not ask for: set `GITHUB_TOKEN`"),
        "{}",
        run.stderr
    );
    let perplexity = mount(out, "perplexity");
    assert!(perplexity.contains("    env: { PROJECT_ROOT: "), "{perplexity}");
    assert!(perplexity.contains(&workspace), "`${{workspaceFolder}}` is the folder that holds .vscode/: {perplexity}");
    assert!(perplexity.contains("    env_passthrough: [PERPLEXITY_API_KEY, LOG_LEVEL]\n"), "{perplexity}");
    let fs = mount(out, "fs");
    assert!(fs.contains(&format!("    args: [{workspace}, \"${{HOME}}/notes\"]\n")), "{fs}");
    assert!(fs.contains(&format!("    cwd: {workspace}\n")), "{fs}");
    assert!(mount(out, "playwright-browser").contains("    args: [\"@playwright/mcp@latest\"]\n"), "{out}");
    assert_validates("vscode", out, &[]);
}

#[test]
fn cursor_headers_and_a_url_with_a_secret_become_variables() {
    let fixture = "cursor/.cursor/mcp.json";
    let run = import(fixture, "cursor");
    assert_eq!(
        located(&run, fixture),
        expect(&[(6, 29, "IMPORT_SECRET_NOT_COPIED"), (10, 14, "IMPORT_SECRET_NOT_COPIED"), (20, 7, "IMPORT_UNSUPPORTED")])
    );
    let out = &run.stdout;
    assert!(mount(out, "context7").contains("    headers_env: { CONTEXT7_API_KEY: CONTEXT7_API_KEY }\n"), "{out}");
    assert!(mount(out, "notion").contains("    url: \"${NOTION_URL}\"\n"), "{out}");
    let shell = mount(out, "shell");
    assert!(shell.contains("    args: [\"-y\", mcp-shell, \"--root\", \"${HOME}/code\"]\n"), "{shell}");
    assert!(shell.contains("    env: { PATH_EXTRA: \"${CURSOR_EXTRA_PATH:-}\" }\n    env_passthrough: [SHELL_TOKEN]\n"), "{shell}");
    assert_no_secret(&[out, &run.stderr], &["ctx7sk-fake-0000-1111-2222", "ntn_fake_secret_value_123"]);
    // The URL comes from the variable the warning names.
    assert_validates("cursor", out, &[("NOTION_URL", "https://mcp.notion.com/mcp")]);
}

#[test]
fn codex_toml_maps_tool_lists_timeouts_and_tokens() {
    let fixture = "codex/config.toml";
    let run = import(fixture, "codex");
    assert_eq!(
        located(&run, fixture),
        expect(&[
            (18, 20, "IMPORT_SECRET_NOT_COPIED"),
            (18, 67, "IMPORT_SECRET_NOT_COPIED"),
            (24, 29, "IMPORT_SECRET_NOT_COPIED"),
            (29, 1, "IMPORT_SERVER_DISABLED"),
            (30, 1, "IMPORT_UNSUPPORTED"),
            (34, 16, "IMPORT_SECRET_NOT_COPIED"),
        ])
    );
    let out = &run.stdout;
    assert_eq!(
        mount(out, "docs"),
        "  docs:\n    kind: mcp.stdio\n    command: npx\n    args: [\"-y\", mcp-docs-server, \"--root\", /srv/docs]\n    \
         env_passthrough: [DOCS_INDEX]\n    cwd: /srv/docs\n    required: true\n    startup_timeout: 20s\n    call_timeout: 7500ms\n    \
         tools: { allow: [search, read_page] }\n"
    );
    let jira = mount(out, "jira");
    assert!(jira.contains("    env_passthrough: [JIRA_URL, JIRA_API_TOKEN]\n    tools: { deny: [delete_issue] }\n"), "{jira}");
    let remote = mount(out, "remote");
    assert!(
        remote.contains("    headers_env: { X-Api-Key: ACME_API_KEY, X-Team: REMOTE_X_TEAM }\n    bearer_token_env: ACME_MCP_TOKEN\n"),
        "{remote}"
    );
    assert!(mount(out, "old_tool").starts_with("  # old_tool:\n"), "{out}");
    assert!(mount(out, "legacy").contains("    bearer_token_env: LEGACY_TOKEN\n    startup_timeout: 15s\n"), "{out}");
    assert!(!out.contains("gpt-5-codex"), "Codex's other settings are not MCP servers");
    assert_no_secret(
        &[out, &run.stderr],
        &["ATATT3xFAKEfakeFAKEfake0123", "sk-legacy-FAKE-000000000000", "acme.atlassian.net", "platform"],
    );
    assert_validates("codex", out, &[]);
}

/// A config seam cannot read is located, and nothing is written: exit 1. A file that is not there is exit 2.
#[test]
fn an_invalid_config_is_located_and_writes_nothing() {
    let dir = scratch("import-invalid");
    let cases = [
        ("mcp.json", "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" }\n    \"b\": {}\n  }\n}\n", "4:5: error[IMPORT_SYNTAX]"),
        (
            "mcp.json",
            "{ \"mcpServers\": { \"a\": { \"args\": [\"x\"] } } }\n",
            "1:19: error[IMPORT_INVALID]: server `a` has neither `command` nor `url`",
        ),
        (
            "mcp.json",
            "{ \"mcpServers\": { \"a\": { \"command\": 7 } } }\n",
            "1:37: error[IMPORT_INVALID]: `command` is a number, not a string",
        ),
        (
            "config.toml",
            "[mcp_servers.a]\ncommand = \"x\"\nargs = \"y\"\n",
            "3:8: error[IMPORT_INVALID]: `args` is a string, not a list of strings",
        ),
        ("settings.json", "{ \"editor.fontSize\": 14 }\n", "1:1: error[IMPORT_INVALID]: the config has no MCP servers"),
    ];
    for (name, text, wanted) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let out = dir.join("out.yaml");
        let _ = std::fs::remove_file(&out);
        let run = seam(&["import", file.to_str().unwrap(), "-o", out.to_str().unwrap()], &[]);
        assert_eq!(run.code, 1, "{text}: {}", run.stderr);
        assert!(run.stderr.contains(&format!("{}:{wanted}", file.display())), "{text}: {}", run.stderr);
        assert!(run.stdout.is_empty() && !out.exists(), "{text}: nothing is written");
    }
    let run = seam(&["import", dir.join("absent.json").to_str().unwrap()], &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = seam(&["import", dir.to_str().unwrap()], &[]);
    assert_eq!(run.code, 2, "a folder is no config: {}", run.stderr);
    let good = format!("{FIXTURES}/runnable/cursor/.cursor/mcp.json");
    let run = seam(&["import", &good, "-o", dir.join("no/such/folder.yaml").to_str().unwrap()], &[]);
    assert_eq!(run.code, 2, "an output that cannot be written: {}", run.stderr);
    assert!(run.stderr.contains("cannot write"), "{}", run.stderr);
}

/// `--format` names what detection would not guess: a `mcp.json` outside `.cursor/` is read as
/// Claude Code's unless told, and Cursor's `${env:VAR}` is a reference only in Cursor's.
#[test]
fn the_format_is_detected_and_can_be_named() {
    let dir = scratch("import-format");
    let file = dir.join("mcp.json");
    std::fs::write(&file, "{ \"mcpServers\": { \"a\": { \"command\": \"x\", \"env\": { \"MODE\": \"${env:MODE}\" } } } }\n").unwrap();
    let guessed = seam(&["import", file.to_str().unwrap()], &[]);
    assert!(guessed.stderr.contains("(claude-code)"), "{}", guessed.stderr);
    assert!(guessed.stderr.contains("warning[IMPORT_SECRET_NOT_COPIED]: `MODE` has a value written in the config"), "{}", guessed.stderr);
    let named = seam(&["import", "--format", "cursor", file.to_str().unwrap()], &[]);
    assert_eq!(named.code, 0, "{}", named.stderr);
    assert!(named.stderr.contains("(cursor)"), "{}", named.stderr);
    assert!(named.stdout.contains("    env_passthrough: [MODE]\n"), "{}", named.stdout);
    assert!(!named.stderr.contains("warning["), "a reference is no secret: {}", named.stderr);
    let toml = dir.join("servers");
    std::fs::write(&toml, "[mcp_servers.a]\ncommand = \"x\"\n").unwrap();
    let codex = seam(&["import", toml.to_str().unwrap()], &[]);
    assert!(codex.stderr.contains("(codex)"), "TOML without the name is Codex's: {}", codex.stderr);
}

/// Values attached to secret-named keys inside arguments (`--api-key=…`, `--api-key …`, docker's
/// `-e NAME=…`, mcp-remote's `--header "X-Api-Key: …"`) and secret defaults of references
/// (`${API_KEY:-…}`) are never copied, in arguments or URLs, nor shown.
#[test]
fn secrets_inside_arguments_and_reference_defaults_are_not_copied() {
    let dir = scratch("import-arg-secrets");
    let file = dir.join(".mcp.json");
    let config = r#"{
  "mcpServers": {
    "flags": { "command": "x", "args": ["--api-key=hunterEQ", "--token", "hunterSPACE", "--mode=fast", "--api-key=${ACME_API_KEY}"] },
    "docker": { "command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=hunterGHP", "-e", "LOG_LEVEL=debug", "ghcr.io/github/github-mcp-server"] },
    "remote": { "command": "npx", "args": ["mcp-remote", "https://mcp.example.com/mcp", "--header", "X-Api-Key: hunterXAPI", "--header", "Authorization:${AUTH_HEADER}", "--header", "X-Team: blue"] },
    "defaults": { "command": "x", "args": ["${API_KEY:-hunter2default}", "--mode=${MODE:-ghp_hunterDefault0123456789}", "${LEVEL:-info}"] },
    "web": { "type": "http", "url": "https://mcp.example.com/${API_KEY:-hunter2default}/mcp" }
  }
}
"#;
    std::fs::write(&file, config).unwrap();
    let run = seam(&["import", file.to_str().unwrap()], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    assert_no_secret(&[out, &run.stderr], &["hunterEQ", "hunterSPACE", "hunterGHP", "hunterXAPI", "hunter2default", "hunterDefault"]);
    let flags = mount(out, "flags");
    assert!(
        flags.contains("    args: [\"--api-key=***\", \"--token\", \"***\", \"--mode=fast\", \"--api-key=$${ACME_API_KEY}\"]\n"),
        "{flags}"
    );
    let docker = mount(out, "docker");
    assert!(docker.contains("\"-e\", \"GITHUB_PERSONAL_ACCESS_TOKEN=***\", \"-e\", \"LOG_LEVEL=debug\","), "{docker}");
    let remote = mount(out, "remote");
    assert!(
        remote.contains(
            "\"--header\", \"X-Api-Key: ***\", \"--header\", \"Authorization:${AUTH_HEADER:-}\", \"--header\", \"X-Team: blue\"]"
        ),
        "{remote}"
    );
    let defaults = mount(out, "defaults");
    assert!(defaults.contains("    args: [\"$${API_KEY}\", \"--mode=${MODE:-}\", \"${LEVEL:-info}\"]\n"), "{defaults}");
    assert!(defaults.contains("    env_passthrough: [API_KEY]\n"), "{defaults}");
    let web = mount(out, "web");
    assert!(web.contains("    url: \"${WEB_URL}\"\n") && !web.contains("env_passthrough"), "{web}");
    assert_validates("arg-secrets", out, &[("WEB_URL", "https://mcp.example.com/mcp")]);
}

/// A URL that reads a secret (`${API_KEY}`) is a URL the composition reads from a variable
/// named for the server: an HTTP mount passes no environment on.
#[test]
fn a_url_reading_a_secret_is_read_from_a_variable() {
    let dir = scratch("import-url-reference");
    let file = dir.join(".mcp.json");
    std::fs::write(
        &file,
        "{\n  \"mcpServers\": {\n    \"acme\": { \"type\": \"http\", \"url\": \"https://mcp.example.com/${API_KEY}/mcp\" },\n    \"plain\": { \"url\": \"https://mcp.example.com:${ACME_PORT}/mcp\" }\n  }\n}\n",
    )
    .unwrap();
    let run = seam(&["import", file.to_str().unwrap()], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let acme = mount(&run.stdout, "acme");
    assert!(acme.contains("    url: \"${ACME_URL}\"\n") && !acme.contains("env_passthrough"), "{acme}");
    assert!(mount(&run.stdout, "plain").contains("    url: \"https://mcp.example.com:${ACME_PORT:-}/mcp\"\n"), "{}", run.stdout);
    let prefix = format!("{}:3:38: warning[IMPORT_SECRET_NOT_COPIED]", file.display());
    assert!(run.stderr.contains(&prefix) && run.stderr.contains("set `ACME_URL` in seam's environment"), "{}", run.stderr);
    assert_validates("url-reference", &run.stdout, &[("ACME_URL", "https://mcp.example.com/mcp"), ("ACME_PORT", "443")]);
}

/// When the import stops early (a server twice, a field of the wrong kind, a key twice, a
/// syntax error), what it quotes holds no value that could be a secret, however the config is laid out.
#[test]
fn an_early_stop_quotes_no_secret() {
    let dir = scratch("import-early-stop");
    let cases = [
        (
            "mcp.json",
            r#"{"mcpServers":{"a":{"command":"x","env":{"MODE":"HUNTER_env_a"},"args":["HUNTER_arg_a"]},"a":{"command":"y","env":{"MODE":"HUNTER_env_dup"},"headers":{"X-Team":"HUNTER_h"},"url":"https://HUNTER_url@x.example/"}}}"#,
            "server `a` is defined twice",
        ),
        (
            "mcp.json",
            r#"{"mcpServers":{"a":{"command":"x","env":{"MODE":"HUNTER_env"},"args":"HUNTER_notalist"}}}"#,
            "not a list of strings",
        ),
        (
            "mcp.json",
            r#"{"mcpServers":{"a":{"command":"x","env":{"MODE":"HUNTER_one"},"env":{"MODE":"HUNTER_two"}}}}"#,
            "`env` is written twice",
        ),
        (
            "mcp.json",
            r#"{"mcpServers":{"a":{"command":"x","env":{"MODE":"HUNTER_env","MODE":"HUNTER_again"}}}}"#,
            "`MODE` is written twice",
        ),
        (
            "mcp.json",
            r#"{"mcpServers":{"a":{"type":"weird","headers":{"X-Team":"HUNTER_h"},"url":"https://x.example/HUNTER_path"}}}"#,
            "`type` is `weird`",
        ),
        ("mcp.json", r#"{"mcpServers":{"a":{"command":"x","env":{"MODE":"HUNTER_env"}} "b":{"command":"HUNTER_cmd"}}}"#, "IMPORT_SYNTAX"),
        ("mcp.json", r#"{"mcpServers":{"a":{"command":"x","env":{"MODE":"HUNTER_env","LEVEL":HUNTER_bare}}}}"#, "IMPORT_SYNTAX"),
        (
            "config.toml",
            "[mcp_servers.a]\ncommand = \"x\"\nenv = { MODE = \"HUNTER_env\", LEVEL = 'HUNTER_lit' } HUNTER_junk\n",
            "IMPORT_SYNTAX",
        ),
    ];
    for (name, text, wanted) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let run = seam(&["import", file.to_str().unwrap()], &[]);
        assert_eq!(run.code, 1, "{text}: {}", run.stderr);
        assert!(run.stderr.contains(wanted) && run.stderr.contains(" | "), "{text}: {}", run.stderr);
        assert!(!run.stdout.contains("HUNTER_") && !run.stderr.contains("HUNTER_"), "{text}: a secret was shown:\n{}", run.stderr);
    }
}

/// A key the format defines, written twice (two `mcpServers` objects), is an error where the second is.
#[test]
fn a_key_written_twice_is_located() {
    let dir = scratch("import-duplicate-keys");
    let file = dir.join(".mcp.json");
    std::fs::write(
        &file,
        "{\n  \"mcpServers\": { \"a\": { \"command\": \"x\" } },\n  \"mcpServers\": { \"b\": { \"command\": \"y\" } }\n}\n",
    )
    .unwrap();
    let run = seam(&["import", file.to_str().unwrap()], &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let wanted = format!("{}:3:3: error[IMPORT_INVALID]: `mcpServers` is written twice", file.display());
    assert!(run.stderr.contains(&wanted), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

/// `-o` never writes over the config it reads; over another file, it says it did.
#[test]
fn the_output_is_not_the_input_and_an_overwrite_is_said() {
    let dir = scratch("import-output");
    let file = dir.join("mcp.json");
    let config = "{ \"mcpServers\": { \"a\": { \"command\": \"x\" } } }\n";
    std::fs::write(&file, config).unwrap();
    let same = dir.join("sub/../mcp.json");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    for out in [file.clone(), same] {
        let run = seam(&["import", file.to_str().unwrap(), "-o", out.to_str().unwrap()], &[]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains("is the config imported"), "{}", run.stderr);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), config, "the config is untouched");
    }
    let out = dir.join("out.yaml");
    let run = seam(&["import", file.to_str().unwrap(), "-o", out.to_str().unwrap()], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("overwr"), "{}", run.stderr);
    let run = seam(&["import", file.to_str().unwrap(), "-o", out.to_str().unwrap()], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains(&format!("overwrote {}", out.display())), "{}", run.stderr);
}

/// A direct client declares what seam declares to its mounts (it answers questions, it offers
/// roots): server-everything lists some tools only to such a client.
const ASKS: &[(&str, &str)] = &[("SEAM_ANSWERS", "1"), ("SEAM_ROOTS", "/")];

/// How a runnable fixture's servers are reached without seam.
enum Direct {
    Stdio(&'static str, Vec<String>),
    Http(String),
}

/// Imports `fixture` to a file, validates it, serves it, and checks that seam serves
/// exactly the tools of the servers, each as `mcp__<mount>__<tool>`.
fn round_trip(fixture: &str, servers: &[(&str, Direct)], env: &[(&str, &str)]) {
    let name = fixture.split('/').next().unwrap();
    let dir = scratch(&format!("import-round-trip-{name}"));
    let file = dir.join("imported.yaml");
    let path = format!("{}:{}", root().join(".cache/peers/node_modules/.bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut env: Vec<(&str, &str)> = env.to_vec();
    env.push(("PATH", &path));
    let run = seam(&["import", &format!("{FIXTURES}/runnable/{fixture}"), "-o", file.to_str().unwrap()], &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.is_empty(), "with -o, the composition goes to the file");
    let composition = std::fs::read_to_string(&file).unwrap();
    let schema = composition.lines().next().unwrap().strip_prefix("# yaml-language-server: $schema=").expect("the modeline");
    assert!(dir.join(schema).is_file(), "the modeline names the schema: {schema}");
    let validated = seam(&["validate", file.to_str().unwrap()], &env);
    assert_eq!(validated.code, 0, "{}{}", validated.stdout, validated.stderr);
    let mut wanted = Vec::new();
    for (mount, direct) in servers {
        let mut client = match direct {
            Direct::Stdio(bin, args) => {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                SdkClient::direct(&peer_bin(bin), &args, ASKS)
            }
            Direct::Http(url) => SdkClient::http_with_env(url, ASKS),
        };
        let tools = client.tool_names();
        assert!(!tools.is_empty(), "{mount} lists tools");
        wanted.extend(tools.iter().map(|t| format!("mcp__{mount}__{t}")));
        client.close();
    }
    wanted.sort();
    let mut served = SdkClient::stdio_with_env(&file, &env);
    assert_eq!(served.tool_names(), wanted, "{composition}");
    served.close();
}

fn here() -> Vec<String> {
    vec![".".to_owned()]
}

fn everything() -> Direct {
    Direct::Stdio("mcp-server-everything", vec!["stdio".to_owned()])
}

#[test]
fn round_trip_claude_desktop() {
    round_trip(
        "claude-desktop/claude_desktop_config.json",
        &[("everything", everything()), ("filesystem", Direct::Stdio("mcp-server-filesystem", here()))],
        &[],
    );
}

/// Claude Code's HTTP server: server-everything over Streamable HTTP on loopback, its URL's
/// port and its bearer token read from the environment as Claude Code reads them.
#[test]
fn round_trip_claude_code_over_http() {
    let mut command = Command::new(peer_bin("mcp-server-everything"));
    command.arg("streamableHttp").env("PORT", "0");
    let (_backend, port) = Peer::listening(command);
    let port = port.to_string();
    round_trip(
        "claude-code/.mcp.json",
        &[("everything", Direct::Http(format!("http://127.0.0.1:{port}/mcp"))), ("files", Direct::Stdio("mcp-server-filesystem", here()))],
        &[("IMPORT_EVERYTHING_PORT", &port), ("IMPORT_EVERYTHING_TOKEN", "not-checked-by-the-server")],
    );
}

#[test]
fn round_trip_vscode() {
    let workspace: PathBuf = root().join(FIXTURES).join("runnable/vscode");
    round_trip(
        "vscode/.vscode/mcp.json",
        &[("everything", everything()), ("workspace-files", Direct::Stdio("mcp-server-filesystem", vec![path(&workspace)]))],
        &[],
    );
}

#[test]
fn round_trip_cursor() {
    round_trip("cursor/.cursor/mcp.json", &[("everything", everything())], &[]);
}

/// Codex's disabled server is written commented out, so seam serves the other two.
#[test]
fn round_trip_codex() {
    round_trip("codex/config.toml", &[("everything", everything()), ("fs", Direct::Stdio("mcp-server-filesystem", here()))], &[]);
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

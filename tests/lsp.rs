//! The `lsp` tool end to end against real language servers
//! (typescript-language-server with TypeScript, pyright), through `seam call`
//! — one cold process per question, so every answer here is a cold first query.

use std::path::Path;
use std::process::Command;

use crate::support::*;
use serde_json::{Value, json};

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A small TypeScript project: an interface and its implementation, a function used across files, a `.d.ts`.
fn ts_project(dir: &Path) {
    write(
        dir,
        &[
            ("tsconfig.json", r#"{ "compilerOptions": { "strict": true, "target": "es2022", "module": "nodenext" }, "include": ["src"] }"#),
            (
                "src/greet.ts",
                "export interface Greeter {\n  greet(name: string): string;\n}\n\nexport function shout(text: string): string {\n  return text.toUpperCase();\n}\n",
            ),
            (
                "src/english.ts",
                "import { Greeter, shout } from \"./greet.js\";\n\nexport class English implements Greeter {\n  greet(name: string): string {\n    return shout(`hello ${name}`);\n  }\n}\n",
            ),
            (
                "src/main.ts",
                "import { shout } from \"./greet.js\";\nimport { English } from \"./english.js\";\n\nconst g: import(\"./greet.js\").Greeter = new English();\nconsole.log(shout(g.greet(\"😀 日本\")), VERSION);\n",
            ),
            ("src/globals.d.ts", "declare const VERSION: string;\n"),
        ],
    );
}

fn composition(dir: &Path, mounts: &str) -> std::path::PathBuf {
    let file = dir.join("seam.yaml");
    std::fs::write(&file, format!("seam: 1\nservices:\n  workspace: {{ root: . }}\nmounts:\n{mounts}tools:\n  lsp: true\n")).unwrap();
    file
}

fn typescript_mount() -> String {
    format!(
        "  typescript:\n    kind: lsp.stdio\n    command: {}\n    args: [--stdio]\n    extensions: {{ .ts: typescript }}\n    initialization_options: {{ tsserver: {{ useSyntaxServer: never }} }}\n",
        json!(peer_bin("typescript-language-server"))
    )
}

fn lsp(file: &Path, operation: &str, path: &str, line: u32, character: u32) -> Value {
    let args = json!({ "operation": operation, "file_path": path, "line": line, "character": character });
    let out = Command::new(seam_bin()).args(["call", &file.display().to_string(), "lsp", "--args", &args.to_string()]).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("no result; stderr:\n{}", String::from_utf8_lossy(&out.stderr)))
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}"))
}

#[test]
fn typescript_answers_definition_references_implementation_and_hover_cold() {
    let dir = scratch("lsp-ts");
    ts_project(&dir);
    let file = composition(&dir, &typescript_mount());

    // `shout` used in main.ts (line 5, column 13) is defined in greet.ts, not at the import.
    let def = lsp(&file, "goToDefinition", "src/main.ts", 5, 13);
    assert_eq!(text(&def), "src/greet.ts:5:17  export function shout(text: string): string {", "{def}");

    let refs = lsp(&file, "findReferences", "src/greet.ts", 5, 17);
    let lines: Vec<&str> = text(&refs).lines().collect();
    assert!(lines.contains(&"src/greet.ts:5:17  export function shout(text: string): string {"), "declaration included: {lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("src/english.ts:5:12")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("src/main.ts:5:13")), "{lines:?}");

    // The interface method's implementation.
    let imp = lsp(&file, "goToImplementation", "src/greet.ts", 2, 3);
    assert!(text(&imp).starts_with("src/english.ts:4:3  greet(name: string): string {"), "{imp}");

    // Hover on `g.greet` after the emoji and CJK on the same line is the method's type: columns count UTF-16 units.
    let hover = lsp(&file, "hover", "src/main.ts", 5, 23);
    assert!(text(&hover).contains("greet(name: string): string"), "{hover}");

    // A `.d.ts` file is routed as `.ts`.
    let dts = lsp(&file, "hover", "src/globals.d.ts", 1, 15);
    assert!(text(&dts).contains("VERSION: string"), "{dts}");
}

#[test]
fn pyright_answers_definition_and_hover_in_a_package() {
    let dir = scratch("lsp-py");
    write(
        &dir,
        &[
            ("pkg/__init__.py", ""),
            (
                "pkg/shapes.py",
                "class Square:\n    def __init__(self, side: float) -> None:\n        self.side = side\n\n    def area(self) -> float:\n        return self.side * self.side\n",
            ),
            ("pkg/main.py", "from pkg.shapes import Square\n\nprint(Square(2).area())\n"),
        ],
    );
    let mount = format!(
        "  python:\n    kind: lsp.stdio\n    command: {}\n    args: [--stdio]\n    extensions: {{ .py: python }}\n",
        json!(peer_bin("pyright-langserver"))
    );
    let file = composition(&dir, &mount);
    let def = lsp(&file, "goToDefinition", "pkg/main.py", 3, 17);
    assert_eq!(text(&def), "pkg/shapes.py:5:9  def area(self) -> float:", "{def}");
    let hover = lsp(&file, "hover", "pkg/main.py", 3, 17);
    assert!(text(&hover).contains("def area() -> float"), "{hover}");
}

#[test]
fn files_outside_or_unfit_for_the_workspace_are_refused_with_their_codes() {
    let dir = scratch("lsp-files");
    ts_project(&dir);
    let outside = dir.parent().unwrap().join("lsp-files-outside.ts");
    std::fs::write(&outside, "export const x = 1;\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("src/link.ts")).unwrap();
    std::fs::write(dir.join("src/latin1.ts"), b"const s = \"caf\xe9\";\n").unwrap();
    let fifo = dir.join("src/pipe.ts");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let file = composition(&dir, &typescript_mount().replace("extensions:", "max_document_bytes: 64B\n    extensions:"));
    std::fs::write(dir.join("src/at.ts"), "x".repeat(64)).unwrap();
    std::fs::write(dir.join("src/over.ts"), "x".repeat(65)).unwrap();
    let code = |path: &str| {
        let r = lsp(&file, "hover", path, 1, 1);
        r["structuredContent"]["error"]["code"].as_str().map(str::to_owned).unwrap_or_else(|| "ok".into())
    };
    assert_eq!(code("../lsp-files-outside.ts"), "LSP_OUTSIDE_WORKSPACE");
    assert_eq!(code(&outside.display().to_string()), "LSP_OUTSIDE_WORKSPACE");
    assert_eq!(code("src/link.ts"), "LSP_OUTSIDE_WORKSPACE", "a symlink out of the workspace");
    assert_eq!(code("src/pipe.ts"), "LSP_NOT_A_FILE", "a FIFO does not block");
    assert_eq!(code("src/latin1.ts"), "LSP_INVALID_UTF8");
    assert_eq!(code("src/at.ts"), "ok", "exactly max_document_bytes");
    assert_eq!(code("src/over.ts"), "LSP_FILE_TOO_LARGE", "one byte over");
    assert_eq!(code("src/missing.ts"), "LSP_NOT_A_FILE");
    assert_eq!(code(".bashrc"), "LSP_UNAVAILABLE");
    assert_eq!(code("src/x.rs"), "LSP_UNAVAILABLE");

    // A mount whose executable cannot be found takes no route: its extensions answer with why.
    let missing = composition(
        &dir,
        "  ghost:\n    kind: lsp.stdio\n    command: seam-no-such-language-server\n    extensions: { .ts: typescript }\n",
    );
    let r = lsp(&missing, "hover", "src/main.ts", 1, 1);
    assert_eq!(r["structuredContent"]["error"]["code"], "LSP_UNAVAILABLE", "{r}");
    assert!(r["structuredContent"]["error"]["message"].as_str().unwrap().contains("seam-no-such-language-server"), "{r}");
}

#[test]
fn clangd_answers_a_definition_in_c() {
    let dir = scratch("lsp-c");
    write(&dir, &[("add.c", "int add(int a, int b) { return a + b; }\n\nint main(void) { return add(1, 2); }\n")]);
    let file = composition(&dir, "  c:\n    kind: lsp.stdio\n    command: clangd\n    extensions: { .c: c }\n");
    let def = lsp(&file, "goToDefinition", "add.c", 3, 26);
    assert_eq!(text(&def), "add.c:1:5  int add(int a, int b) { return a + b; }", "{def}");
}

/// A workspace with one file and a mount of our fake server; `env` is the
/// rest of the mount's `env` map after `FAKE_LSP` and `FAKE_LSP_STATE`.
fn fake(name: &str, env: &str, extra: &str, tools: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(name);
    write(&dir, &[("a.fake", "one line\n")]);
    let state = dir.join("crashes");
    let mount = format!(
        "  fake:\n    kind: lsp.stdio\n    command: node\n    args: [{}]\n    env: {{ {env}, FAKE_LSP_STATE: {} }}\n    extensions: {{ .fake: fake }}\n{extra}",
        json!(root().join("tests/peers/fake-lsp-server.mjs")),
        json!(state),
    );
    let file = dir.join("seam.yaml");
    std::fs::write(&file, format!("seam: 1\nservices:\n  workspace: {{ root: . }}\nmounts:\n{mount}tools:\n  lsp: {tools}\n")).unwrap();
    (file, state)
}

fn error(result: &Value) -> (&str, &str) {
    let e = &result["structuredContent"]["error"];
    (e["code"].as_str().unwrap_or("ok"), e["message"].as_str().unwrap_or_default())
}

/// There is no implicit workspace: without `services.workspace.root` (no
/// `workspace`, `workspace: {}`, an empty root, or `${VAR:-}` of an unset
/// variable) a call answers `LSP_WORKSPACE_REQUIRED`, not the composition's
/// folder (where the TypeScript project is); with it, typescript-language-server
/// answers the same question, with paths relative to the root.
#[test]
fn without_a_workspace_root_lsp_answers_workspace_required() {
    let dir = scratch("lsp-no-root");
    ts_project(&dir);
    let with_root = composition(&dir, &typescript_mount());
    let text_with_root = std::fs::read_to_string(&with_root).unwrap();
    let without_root = dir.join("no-root.yaml");
    for workspace in [
        "",
        "services:\n  workspace: {}\n",
        "services:\n  workspace: { root: \"\" }\n",
        "services:\n  workspace:\n    root: ${SEAM_TEST_UNSET_ROOT:-}\n",
    ] {
        std::fs::write(&without_root, text_with_root.replace("services:\n  workspace: { root: . }\n", workspace)).unwrap();
        let result = lsp(&without_root, "goToDefinition", "src/main.ts", 5, 13);
        assert_eq!(error(&result).0, "LSP_WORKSPACE_REQUIRED", "{workspace:?}: {result}");
    }
    let def = lsp(&with_root, "goToDefinition", "src/main.ts", 5, 13);
    assert_eq!(text(&def), "src/greet.ts:5:17  export function shout(text: string): string {", "{def}");
}

#[test]
fn a_server_that_crashes_once_is_replaced_and_the_query_replayed() {
    let (file, state) = fake("lsp-crash-once", "FAKE_LSP: crash-on-open", "", "true");
    let hover = lsp(&file, "hover", "a.fake", 1, 3);
    assert_eq!(text(&hover), "fake hover at 0:2", "{hover}");
    assert_eq!(std::fs::read_to_string(state).unwrap(), "2", "two processes: the crashed one and its replacement");
}

#[test]
fn a_second_crash_is_an_error_with_the_servers_stderr() {
    let (file, state) = fake("lsp-crash-twice", "FAKE_LSP: crash-on-open, FAKE_LSP_CRASHES: \"2\"", "", "true");
    let result = lsp(&file, "hover", "a.fake", 1, 1);
    let (code, message) = error(&result);
    assert_eq!(code, "LSP_UNAVAILABLE", "{result}");
    assert!(message.contains("failed twice") && message.contains("opened file://"), "the stderr tail is in the message: {message}");
    assert_eq!(std::fs::read_to_string(state).unwrap(), "2");
}

#[test]
fn hangs_malformed_answers_wrong_encodings_and_oversized_frames_are_typed_errors() {
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        ("hang", "", "{ timeout: 500ms }", "LSP_TIMEOUT", "no answer within 500ms"),
        ("malformed", "", "true", "LSP_MALFORMED_RESPONSE", ""),
        ("utf8", "", "true", "LSP_UNAVAILABLE", "utf-8"),
        ("big-message", "    max_message_bytes: 1KiB\n", "true", "LSP_UNAVAILABLE", "max_message_bytes is 1024"),
        ("big-header", "", "true", "LSP_UNAVAILABLE", "header block over 65536 bytes"),
        ("no-hover", "", "true", "LSP_UNSUPPORTED_OPERATION", "hoverProvider"),
    ];
    for (mode, extra, tools, expected, needle) in cases {
        let (file, _) = fake(&format!("lsp-{mode}"), &format!("FAKE_LSP: {mode}"), extra, tools);
        let operation = if *mode == "malformed" { "goToDefinition" } else { "hover" };
        let result = lsp(&file, operation, "a.fake", 1, 1);
        let (code, message) = error(&result);
        assert_eq!(code, *expected, "{mode}: {result}");
        assert!(message.contains(needle), "{mode}: {message}");
    }
}

#[test]
fn coding_yaml_serves_lsp_to_the_default_agent_through_seam_serve() {
    let dir = scratch("lsp-serve");
    for name in ["coding.yaml", "base.yaml"] {
        std::fs::copy(root().join("compositions").join(name), dir.join(name)).unwrap();
    }
    ts_project(&dir);
    let path = format!("{}:{}", root().join(".cache/peers/node_modules/.bin").display(), std::env::var("PATH").unwrap_or_default());
    let seam = HttpSeam::start_with_env(&dir.join("coding.yaml"), &[], &[("PATH", &path)], &["DEEPSEEK_API_KEY"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert!(client.tool_names().contains(&"lsp".to_owned()));
    let def = client.call("lsp", json!({ "operation": "goToDefinition", "file_path": "src/main.ts", "line": 5, "character": 13 }));
    assert_eq!(text(&def), "src/greet.ts:5:17  export function shout(text: string): string {", "{def}");
    // The server started for this workspace stays up for the next question.
    let status = seam.status();
    let server = &status["mounts"]["typescript"]["servers"][0];
    assert_eq!(server["alive"], true, "{server}");
    // One that dies while idle is replaced on the next question.
    let pid = server["pid"].as_u64().unwrap() as u32;
    signal(pid, "KILL");
    wait_dead(&[pid]);
    let again = client.call("lsp", json!({ "operation": "goToDefinition", "file_path": "src/main.ts", "line": 5, "character": 13 }));
    assert_eq!(text(&again), "src/greet.ts:5:17  export function shout(text: string): string {", "{again}");
    let replaced = seam.status()["mounts"]["typescript"]["servers"][0]["pid"].as_u64().unwrap() as u32;
    assert_ne!(replaced, pid);
    client.close();
    let mut reviewer = SdkClient::http(&format!("{}/agents/reviewer/mcp", seam.base));
    assert!(!reviewer.tool_names().contains(&"lsp".to_owned()), "`lsp: false` for the reviewer");
    reviewer.close();
    // Stopping seam stops the language server (shutdown → exit, then signals).
    assert!(seam.terminate().success());
    wait_dead(&[replaced]);
}

#[test]
fn the_clients_root_inside_the_configured_root_is_the_workspace() {
    let dir = scratch("lsp-roots");
    let (a, b) = (dir.join("a"), dir.join("b"));
    ts_project(&a);
    ts_project(&b);
    let file = composition(&dir, &typescript_mount());
    let seam = HttpSeam::start(&file, &[]);
    let question = json!({ "operation": "goToDefinition", "file_path": "src/main.ts", "line": 5, "character": 13 });

    let mut client = SdkClient::http_with_roots(&format!("{}/mcp", seam.base), &[&b]);
    let def = client.call("lsp", question.clone());
    assert_eq!(text(&def), "src/greet.ts:5:17  export function shout(text: string): string {", "relative to the root: {def}");
    let status = seam.status();
    let workspace = status["mounts"]["typescript"]["servers"][0]["workspace"].as_str().unwrap().to_owned();
    assert_eq!(Path::new(&workspace), std::fs::canonicalize(&b).unwrap(), "one server for that workspace");
    client.close();

    // A root outside the configured root is not taken: the configured root is, where src/main.ts does not exist.
    let outside = scratch("lsp-roots-outside");
    ts_project(&outside);
    let mut stranger = SdkClient::http_with_roots(&format!("{}/mcp", seam.base), &[&outside]);
    let refused = stranger.call("lsp", question);
    assert_eq!(refused["structuredContent"]["error"]["code"], "LSP_NOT_A_FILE", "{refused}");
    stranger.close();
}

#[test]
fn the_servers_requests_get_the_mounts_configuration_and_edits_are_refused() {
    let (file, _) = fake("lsp-ask", "FAKE_LSP: ask", "    configuration: { fake: { depth: 3 } }\n", "true");
    let answers: Value = serde_json::from_str(text(&lsp(&file, "hover", "a.fake", 1, 1))).unwrap();
    assert_eq!(answers["cfg"], json!([{ "depth": 3 }, 3]), "by key, and by dotted path");
    assert_eq!(answers["edit"]["applied"], false);
    assert_eq!(answers["other"]["code"], -32601, "an unknown request is answered, not left hanging");
    assert_eq!(answers["deep"], "echoed", "an id nested 200 deep is answered as sent, and the connection lives");
}

/// Questions on one document wait in its workspace's queue from `didOpen` to `didClose`: asked all at
/// once, none opens the document while another holds it open (the fake server answers any lifecycle
/// violation with an error), and each finds every earlier question's document closed.
#[test]
fn questions_at_once_on_one_document_each_open_and_close_it_in_turn() {
    let (file, _) = fake("lsp-lifecycle", "FAKE_LSP: lifecycle", "", "true");
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let question = json!({ "name": "lsp", "args": { "operation": "hover", "file_path": "a.fake", "line": 1, "character": 1 } });
    let answers = client.send(json!({ "op": "call_all", "calls": vec![question.clone(); 20] }));
    let mut texts: Vec<String> = answers["results"].as_array().unwrap().iter().map(|r| text(r).to_owned()).collect();
    texts.sort_by_key(|t| t.split(' ').nth(1).and_then(|n| n.parse::<u32>().ok()));
    let expected: Vec<String> = (0..20).map(|n| format!("opened {n} closed {n}")).collect();
    assert_eq!(texts, expected);
    let last = client.send(json!({ "op": "call_all", "calls": [question] }));
    assert_eq!(text(&last["results"][0]), "opened 20 closed 20", "the last question's didClose was sent too");
    client.close();
}

#[test]
fn a_question_waiting_on_a_retired_mount_ends_with_lsp_disposed() {
    let (file, _) = fake("lsp-disposed", "FAKE_LSP: hang", "    shutdown_timeout: 200ms\n", "true");
    let seam = HttpSeam::start(&file, &["--debounce", "50ms", "--drain-timeout", "200ms"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let question = json!({ "operation": "hover", "file_path": "a.fake", "line": 1, "character": 1 });
    client.send_only(json!({ "op": "call", "name": "lsp", "args": question }));
    wait_until("the fake server is up", || seam.status()["mounts"]["fake"]["servers"].as_array().is_some_and(|s| !s.is_empty()));
    // The next generation has no such mount: after the drain timeout the retired one ends its server under the waiting question.
    std::fs::write(&file, "seam: 1\nservices:\n  workspace: { root: . }\ntools:\n  lsp: true\n").unwrap();
    let answer = client.answer();
    assert_eq!(answer["result"]["structuredContent"]["error"]["code"], "LSP_DISPOSED", "{answer}");
    client.close();
}

/// A server that let a question time out is ended at once: it is not asked to
/// shut down (it would not answer that either) and waited on for
/// `shutdown_timeout`, here far longer than the test's patience.
#[test]
fn a_server_that_timed_out_is_ended_at_once() {
    let dir = scratch("lsp-timed-out");
    let log = dir.join("lifecycle.log");
    let (file, _) = fake(
        "lsp-timed-out",
        &format!("FAKE_LSP: hang-all, FAKE_LSP_LOG: {}", json!(log)),
        "    shutdown_timeout: 10m\n",
        "{ timeout: 3s }",
    );
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let result = client.call("lsp", json!({ "operation": "hover", "file_path": "a.fake", "line": 1, "character": 1 }));
    assert_eq!(error(&result).0, "LSP_TIMEOUT", "{result}");
    let lifecycle = std::fs::read_to_string(&log).unwrap();
    let pid: u32 = lifecycle.split(' ').next().unwrap().parse().unwrap();
    wait_dead(&[pid]);
}

/// A question that times out while it waits in the workspace's queue, behind
/// another agent's slower question, never reached the server: the server is
/// not ended, and the other question gets its answer from it.
#[test]
fn a_question_timed_out_in_the_queue_leaves_a_busy_server_alone() {
    let dir = scratch("lsp-queued-timeout");
    let log = dir.join("lifecycle.log");
    let env = format!("FAKE_LSP: slow, FAKE_LSP_DELAY_MS: \"1500\", FAKE_LSP_LOG: {}", json!(log));
    let (file, _) = fake("lsp-queued-timeout", &env, "agents:\n  hasty:\n    tools: { lsp: { timeout: 300ms } }\n", "{ timeout: 30s }");
    let seam = HttpSeam::start(&file, &[]);
    let mut patient = SdkClient::http(&format!("{}/mcp", seam.base));
    let mut hasty = SdkClient::http(&format!("{}/agents/hasty/mcp", seam.base));
    let hover = json!({ "operation": "hover", "file_path": "a.fake", "line": 1, "character": 1 });
    patient.send_only(json!({ "op": "call", "name": "lsp", "args": hover }));
    let lifecycle = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("the patient question is at the server", || lifecycle().contains(" opened "));
    let result = hasty.call("lsp", hover.clone());
    assert_eq!(error(&result).0, "LSP_TIMEOUT", "{result}");
    let answer = patient.answer();
    assert_eq!(text(&answer["result"]), "fake hover at 0:0", "{answer}");
    let pids: std::collections::BTreeSet<String> = lifecycle().lines().map(|l| l.split(' ').next().unwrap().to_owned()).collect();
    assert_eq!(pids.len(), 1, "one server throughout: {}", lifecycle());
}

/// A question the client cancels after it reached its language server: the document is closed as
/// after an answer, inside the workspace's queue, and the server is kept. The next question opens the
/// document afresh on the same server (which would answer an error had it been opened twice).
#[test]
fn a_question_cancelled_at_its_server_closes_its_document_and_the_server_answers_the_next() {
    use std::io::Write as _;
    let dir = scratch("lsp-cancelled");
    let log = dir.join("lifecycle.log");
    let (file, _) = fake("lsp-cancelled", &format!("FAKE_LSP: hang-once, FAKE_LSP_LOG: {}", json!(log)), "", "true");
    let mut seam = serve_stdio_raw(&file);
    let mut answers = Lines::spawn(seam.stdout.take().unwrap(), "");
    let mut stdin = seam.stdin.take().unwrap();
    write!(stdin, "{}", mcp_handshake_lines()).unwrap();
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let hover = json!({ "name": "lsp", "arguments": { "operation": "hover", "file_path": "a.fake", "line": 1, "character": 1 } });
    send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": hover }));
    let lifecycle = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("the server has the document open", || lifecycle().contains(" opened "));
    send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }));
    wait_until("the cancelled question's document is closed", || lifecycle().contains(" closed "));

    send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": hover }));
    let answer = loop {
        let line = answers.next(PATIENCE).expect("an answer to the second question");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_ne!(answer["id"], 1, "a cancelled question is not answered: {answer}");
        if answer["id"] == 2 {
            break answer;
        }
    };
    assert_eq!(text(&answer["result"]), "fake hover at 0:0", "{answer}");
    let events: Vec<(String, String)> =
        lifecycle().lines().map(|l| (l.split(' ').next().unwrap().to_owned(), l.split(' ').nth(1).unwrap().to_owned())).collect();
    let pid = &events[0].0;
    assert!(events.iter().all(|(p, _)| p == pid), "one server throughout: {events:?}");
    let kinds: Vec<&str> = events.iter().map(|(_, e)| e.as_str()).collect();
    assert_eq!(kinds[..3], ["opened", "closed", "opened"], "{events:?}");
    drop(stdin);
    assert!(seam.wait().unwrap().success());
}

/// seam's own long tools report progress too: a client that asks for it is
/// told when a question has to start its language server, and only then.
#[test]
fn a_question_that_starts_its_language_server_reports_progress() {
    let dir = scratch("lsp-progress");
    ts_project(&dir);
    let file = composition(&dir, &typescript_mount());
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let ask = |operation: &str, path: &str, line: u32, character: u32| {
        let args = json!({ "operation": operation, "file_path": path, "line": line, "character": character });
        json!({ "op": "call", "name": "lsp", "progress": true, "args": args })
    };
    // `shout` where greet.ts declares it: its hover is the function's signature.
    let cold = client.send(ask("hover", "src/greet.ts", 5, 17));
    assert_eq!(cold["ok"], true, "{cold}");
    assert_eq!(cold["progress"][0]["message"], "starting the language server of mount `typescript`", "{cold}");
    assert!(text(&cold["result"]).contains("function shout(text: string): string"), "{cold}");
    // Its references, from its use in another file: the same server answers, started already.
    let warm = client.send(ask("findReferences", "src/main.ts", 5, 13));
    assert_eq!(warm["ok"], true, "{warm}");
    assert_eq!(warm["progress"], json!([]), "a running server is not started again: {warm}");
    let lines: Vec<&str> = text(&warm["result"]).lines().collect();
    assert!(lines.contains(&"src/greet.ts:5:17  export function shout(text: string): string {"), "declaration included: {lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("src/english.ts:5:12")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("src/main.ts:5:13")), "{lines:?}");
    client.close();
}

//! Shared pieces of the end-to-end tests that run `seam serve` against real peers:
//! the official MCP SDK client (through `tests/peers/sdk-client.mjs`), the MCP
//! reference servers and our own controllable server, all installed by
//! `scripts/install-peers` under `.cache/peers`.
#![allow(dead_code)]

pub mod stub_http;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// An upper bound for things that normally take milliseconds; reaching it means a hang, not slowness.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn seam_bin() -> &'static str {
    env!("CARGO_BIN_EXE_seam")
}

pub fn peer_bin(name: &str) -> String {
    let path = root().join(".cache/peers/node_modules/.bin").join(name);
    assert!(path.exists(), "{} is missing: run scripts/install-peers", path.display());
    path.display().to_string()
}

/// The Python that has the official Python SDK (`scripts/install-peers`).
pub fn python() -> String {
    root().join(".cache/peers/venv/bin/python").display().to_string()
}

/// What one of our Python peers (`tests/peers/<script>`, on the official Python SDK)
/// printed: one JSON object.
pub fn python_peer(script: &str, args: &[&str]) -> Value {
    python_peer_with_env(script, args, &[])
}

/// [`python_peer`] with variables set for the peer (`SEAM_ROOTS`, `SEAM_CLIENT_NAME`).
pub fn python_peer_with_env(script: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let out = Command::new(python()).arg(root().join("tests/peers").join(script)).args(args).envs(env.iter().copied()).output().unwrap();
    assert!(out.status.success(), "{script} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{script} {args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// How many calls a flaky server run with `FLAKY_HEARD=heard` has heard of: its own record.
pub fn calls_heard(heard: &Path) -> usize {
    std::fs::read_to_string(heard).unwrap_or_default().lines().filter(|line| line.ends_with(" tools/call")).count()
}

pub fn flaky_server() -> String {
    root().join("tests/peers/flaky-mcp-server.mjs").display().to_string()
}

/// Every file below `dir`, in any depth.
/// Every `.rs` file beneath `dir`, with its text.
pub fn rust_files(dir: &Path) -> Vec<(PathBuf, String)> {
    files_under(dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            (path, text)
        })
        .collect()
}

pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(files_under(&path)) } else { out.push(path) }
    }
    out
}

/// A fresh folder for one test's files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The YAML of an `mcp.stdio` mount running our flaky server with `env`.
pub fn flaky_mount(id: &str, env: &[(&str, &str)], extra: &str) -> String {
    let env: String = env.iter().map(|(k, v)| format!("      {k}: {}\n", json!(v))).collect();
    let env = if env.is_empty() { String::new() } else { format!("    env:\n{env}") };
    format!("  {id}:\n    kind: mcp.stdio\n    command: node\n    args: [{}]\n{env}{extra}", json!(flaky_server()))
}

/// Lines of a child's pipe, read on a thread so waits can be bounded.
pub struct Lines {
    rx: Receiver<String>,
    pub seen: Vec<String>,
}

impl Lines {
    pub fn spawn(pipe: impl std::io::Read + Send + 'static, echo: &'static str) -> Lines {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if !echo.is_empty() {
                    eprintln!("[{echo}] {line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines { rx, seen: Vec::new() }
    }

    pub fn next(&mut self, within: Duration) -> Option<String> {
        match self.rx.recv_timeout(within) {
            Ok(line) => {
                self.seen.push(line.clone());
                Some(line)
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Waits for a line containing `needle` (lines already seen count), for a log line
    /// that is itself what the test checks; an outcome is read from [`Lines::wait_event`].
    pub fn wait_for(&mut self, needle: &str) -> String {
        self.wait_line(&format!("a line containing {needle:?}"), |line| line.contains(needle))
    }

    /// Waits for an event of seam's JSON log (`--log-format json`) that `wanted` accepts
    /// (events already seen count): what seam did, read from its fields, not its wording.
    pub fn wait_event(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let line = self.wait_line(what, |line| serde_json::from_str::<Value>(line).is_ok_and(|event| wanted(&event)));
        serde_json::from_str(&line).unwrap()
    }

    /// The events already seen (JSON lines) that `wanted` accepts.
    pub fn events_seen(&self, wanted: impl Fn(&Value) -> bool) -> Vec<Value> {
        self.seen.iter().filter_map(|line| serde_json::from_str::<Value>(line).ok()).filter(|event| wanted(event)).collect()
    }

    /// Waits for a line `wanted` accepts (lines already seen count, and the one taken is seen no more).
    fn wait_line(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        if let Some(at) = self.seen.iter().position(|l| wanted(l)) {
            return self.seen.remove(at);
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no {what}; saw:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Waits for the first reload after reload number `after` (the start is 1) whose
    /// `outcome` is this one (`applied`, `rejected`, `unchanged`) in seam's JSON log; the event.
    pub fn wait_outcome(&mut self, after: u64, outcome: &str) -> Value {
        self.wait_event(&format!("a reload after {after} {outcome}"), |e| e["outcome"] == outcome && e["reload"].as_u64() > Some(after))
    }
}

/// The number of the reload a log event ([`Lines::wait_outcome`]) tells of.
pub fn reload_number(event: &Value) -> u64 {
    event["reload"].as_u64().unwrap_or_else(|| panic!("not a reload's outcome: {event}"))
}

/// The codes that rejected a reload, as its log event lists them.
pub fn rejected_codes(event: &Value) -> Vec<String> {
    event["codes"].as_str().unwrap_or_else(|| panic!("not a rejection: {event}")).split(',').map(str::to_owned).collect()
}

/// Writes a composition as an editor's atomic save does (a new file renamed over the
/// old), so that a watching seam never reads it half written.
pub fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Runs `seam` with its log as JSON lines, which the tests read by field ([`Lines::wait_event`]).
pub const JSON_LOG: (&str, &str) = ("SEAM_LOG_FORMAT", "json");

/// The official SDK client, connected to `seam serve` (stdio) or to a URL (http).
pub struct SdkClient {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines,
    /// The client's stderr, which over stdio carries seam's own stderr too.
    pub stderr: Lines,
}

impl SdkClient {
    fn start(mut command: Command) -> SdkClient {
        let mut child =
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("node runs the SDK client");
        let stdin = child.stdin.take().unwrap();
        let stdout = Lines::spawn(child.stdout.take().unwrap(), "");
        let stderr = Lines::spawn(child.stderr.take().unwrap(), "seam");
        let mut client = SdkClient { child, stdin, stdout, stderr };
        let connected = client.read();
        assert_eq!(connected["ok"], true, "the SDK client did not connect: {connected}");
        client
    }

    /// A server spawned by the SDK's stdio transport, with no seam between; `env` for the client (`SEAM_ANSWERS`, `SEAM_ROOTS`).
    pub fn direct(command: &str, args: &[&str], env: &[(&str, &str)]) -> SdkClient {
        let mut command_line = Command::new("node");
        command_line.arg(root().join("tests/peers/sdk-client.mjs")).arg("stdio").arg(command).args(args).envs(env.iter().copied());
        SdkClient::start(command_line)
    }

    /// `seam serve FILE` over stdio, the client run with `env` (`SEAM_ANSWERS`, `SEAM_ROOTS`).
    pub fn stdio_with_env(file: &Path, env: &[(&str, &str)]) -> SdkClient {
        let mut command = Command::new("node");
        command.arg(root().join("tests/peers/sdk-client.mjs")).arg("stdio").arg(seam_bin()).arg("serve").arg(file);
        command.env("RUST_LOG", "info,rmcp=warn").envs([JSON_LOG]).envs(env.iter().copied());
        SdkClient::start(command)
    }

    /// A client over HTTP run with `env` (`SEAM_ANSWERS`, `SEAM_ROOTS`).
    pub fn http_with_env(url: &str, env: &[(&str, &str)]) -> SdkClient {
        let mut command = Command::new("node");
        command.arg(root().join("tests/peers/sdk-client.mjs")).arg("http").arg(url).envs(env.iter().copied());
        SdkClient::start(command)
    }

    /// `seam serve FILE ARGS…` over stdio, spawned by the SDK's stdio transport.
    pub fn stdio(file: &Path, args: &[&str]) -> SdkClient {
        let mut command = Command::new("node");
        command.arg(root().join("tests/peers/sdk-client.mjs")).arg("stdio").arg(seam_bin()).arg("serve").arg(file).args(args);
        command.env("RUST_LOG", "info,rmcp=warn").envs([JSON_LOG]);
        SdkClient::start(command)
    }

    pub fn http(url: &str) -> SdkClient {
        SdkClient::http_with_roots(url, &[])
    }

    /// A client over HTTP that offers these folders as its roots (none: it offers no roots).
    pub fn http_with_roots(url: &str, roots: &[&Path]) -> SdkClient {
        let mut command = Command::new("node");
        command.arg(root().join("tests/peers/sdk-client.mjs")).arg("http").arg(url);
        if !roots.is_empty() {
            let joined: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            command.env("SEAM_ROOTS", joined.join(":"));
        }
        SdkClient::start(command)
    }

    /// A client over HTTP that sends `Authorization: Bearer <token>`.
    pub fn http_with_token(url: &str, token: &str) -> SdkClient {
        let mut command = Command::new("node");
        command.arg(root().join("tests/peers/sdk-client.mjs")).arg("http").arg(url).env("SEAM_TOKEN", token);
        SdkClient::start(command)
    }

    fn read(&mut self) -> Value {
        let line =
            self.stdout.next(PATIENCE).unwrap_or_else(|| panic!("the SDK client went quiet; stderr:\n{}", self.stderr.seen.join("\n")));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    pub fn send(&mut self, command: Value) -> Value {
        self.send_only(command);
        self.read()
    }

    /// Sends a command without waiting for its answer; [`SdkClient::answer`] reads it later.
    pub fn send_only(&mut self, command: Value) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn answer(&mut self) -> Value {
        self.read()
    }

    /// Tool names the client is served, sorted.
    pub fn tool_names(&mut self) -> Vec<String> {
        let answer = self.send(json!({ "op": "list" }));
        assert_eq!(answer["ok"], true, "{answer}");
        let mut names: Vec<String> = answer["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
        names.sort();
        names
    }

    pub fn call(&mut self, name: &str, args: Value) -> Value {
        let answer = self.send(json!({ "op": "call", "name": name, "args": args }));
        assert_eq!(answer["ok"], true, "{answer}");
        answer["result"].clone()
    }

    /// The text of the first content block of a call's result.
    pub fn call_text(&mut self, name: &str, args: Value) -> String {
        self.call(name, args)["content"][0]["text"].as_str().unwrap_or_default().to_owned()
    }

    pub fn wait_list_changed(&mut self) {
        let answer = self.send(json!({ "op": "wait_list_changed", "timeout_ms": PATIENCE.as_millis() as u64 }));
        assert_eq!(answer["ok"], true, "no tools/list_changed arrived: {answer}");
    }

    pub fn list_changed_count(&mut self) -> u64 {
        self.send(json!({ "op": "count_list_changed" }))["count"].as_u64().unwrap()
    }

    pub fn wait_prompt_list_changed(&mut self) {
        let answer = self.send(json!({ "op": "wait_prompt_list_changed", "timeout_ms": PATIENCE.as_millis() as u64 }));
        assert_eq!(answer["ok"], true, "no prompts/list_changed arrived: {answer}");
    }

    pub fn prompt_list_changed_count(&mut self) -> u64 {
        self.send(json!({ "op": "count_prompt_list_changed" }))["count"].as_u64().unwrap()
    }

    pub fn wait_resource_list_changed(&mut self) {
        let answer = self.send(json!({ "op": "wait_resource_list_changed", "timeout_ms": PATIENCE.as_millis() as u64 }));
        assert_eq!(answer["ok"], true, "no resources/list_changed arrived: {answer}");
    }

    /// The prompts the client is served (`prompts/list`), as the server ordered them.
    pub fn prompts(&mut self) -> Vec<Value> {
        let answer = self.send(json!({ "op": "prompts" }));
        assert_eq!(answer["ok"], true, "{answer}");
        answer["prompts"].as_array().unwrap().clone()
    }

    /// The whole `tools/list` answer's tool of this name.
    pub fn tool(&mut self, name: &str) -> Value {
        let answer = self.send(json!({ "op": "list" }));
        assert_eq!(answer["ok"], true, "{answer}");
        answer["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no tool `{name}`: {answer}"))
    }

    /// Closes the client, which closes seam's stdin over stdio; waits for both to end.
    pub fn close(mut self) {
        let _ = self.send(json!({ "op": "close" }));
        let _ = self.child.wait();
    }
}

impl Drop for SdkClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `seam serve FILE --no-watch` over stdio for a client of the test's own, writing JSON lines (for what
/// the SDK client cannot do: flood, cancel at a chosen moment, close its input early). stdin and stdout
/// are piped, stderr dropped.
pub fn serve_stdio_raw(file: &Path) -> Child {
    Command::new(seam_bin())
        .args(["serve", file.to_str().unwrap(), "--no-watch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("seam runs")
}

/// The lines that open an MCP session (`initialize`, id `"init"`, then `notifications/initialized`), each
/// ending with a newline.
pub fn mcp_handshake_lines() -> String {
    let initialize = json!({ "jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } } });
    format!("{initialize}\n{}\n", json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
}

/// `seam serve --transport http` on a free loopback port.
pub struct HttpSeam {
    pub child: Child,
    pub base: String,
    pub stderr: Lines,
    /// The bearer token [`HttpSeam::get`] sends, for a composition whose `serve` names one.
    pub token: Option<String>,
}

impl HttpSeam {
    pub fn start(file: &Path, args: &[&str]) -> HttpSeam {
        HttpSeam::start_with_env(file, args, &[], &[])
    }

    /// As [`HttpSeam::start`], with variables set and others removed from seam's environment.
    pub fn start_with_env(file: &Path, args: &[&str], set: &[(&str, &str)], remove: &[&str]) -> HttpSeam {
        let mut command = Command::new(seam_bin());
        for name in remove {
            command.env_remove(name);
        }
        let mut child = command
            .env("RUST_LOG", "info,rmcp=warn")
            .envs([JSON_LOG])
            .envs(set.iter().copied())
            .arg("serve")
            .arg(file)
            .args(["--transport", "http"])
            .args(args)
            // Loopback unless the test names its own address.
            .args(if args.contains(&"--listen") { &[][..] } else { &["--listen", "127.0.0.1:0"][..] })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("seam runs");
        let mut stderr = Lines::spawn(child.stderr.take().unwrap(), "seam-http");
        let serving = stderr.wait_event("serving event", |e| e["target"] == "seam" && e["url"].is_string());
        // Listening on every address, seam is reached through loopback.
        let base = serving["url"].as_str().unwrap().trim_end_matches("/mcp").replace("0.0.0.0", "127.0.0.1");
        HttpSeam { child, base, stderr, token: None }
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        http_get_as(&format!("{}{path}", self.base), self.token.as_deref())
    }

    /// The value of one series of `/metrics` (`name{label="value",…}`, labels as seam
    /// writes them), `None` when it has none.
    pub fn metric(&self, series: &str) -> Option<f64> {
        let (code, text) = self.get("/metrics");
        assert_eq!(code, 200, "{text}");
        text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    pub fn status(&self) -> Value {
        let (code, body) = self.get("/status");
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Waits until `/status` shows what `wanted` accepts; that status.
    pub fn wait_status(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let mut status = Value::Null;
        wait_until(what, || {
            status = self.status();
            wanted(&status)
        });
        status
    }

    /// Waits until `/status` shows the outcome of reload number `number` (the start is 1); that outcome.
    pub fn wait_reload(&self, number: u64) -> Value {
        let status = self.wait_status(&format!("the outcome of reload {number}"), |s| s["last_reload"]["number"].as_u64() >= Some(number));
        assert_eq!(status["last_reload"]["number"], number, "a reload this test did not make: {status}");
        status["last_reload"].clone()
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        signal(self.child.id(), "TERM");
        self.child.wait().unwrap()
    }
}

impl Drop for HttpSeam {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A peer process the test started itself; killed when the test ends, however it ends.
pub struct Peer(pub Child);

impl Peer {
    /// Starts `command`, a server told its port (0: one the kernel gives it), its output
    /// dropped; it, and the port it listens on once it does.
    pub fn listening(mut command: Command) -> (Peer, u16) {
        let peer = Peer(command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("the peer runs"));
        let port = wait_listening(peer.0.id());
        (peer, port)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One JSON-RPC message POSTed to a Streamable HTTP endpoint as a client that
/// speaks MCP by hand would: JSON or SSE accepted, in `session` if given.
pub fn mcp_post(client: &reqwest::Client, url: &str, version: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .body(body.to_string());
    match session {
        Some(session) => request.header("mcp-session-id", session),
        None => request,
    }
}

/// A request of `method` with `params` as a 2026-07-28 client sends it, at `path`: no
/// session, the version and the `capabilities` it declares in `_meta`.
pub fn modern_request(base: &str, path: &str, method: &str, params: Value, capabilities: Value) -> Value {
    modern_request_with(base, path, None, method, params, capabilities)
}

/// [`modern_request`] with an agent's bearer token.
pub fn modern_request_as(base: &str, path: &str, token: &str, method: &str, params: Value, capabilities: Value) -> Value {
    modern_request_with(base, path, Some(token), method, params, capabilities)
}

fn modern_request_with(base: &str, path: &str, token: Option<&str>, method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).unwrap_or_default().to_owned();
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut sent = mcp_post(&client, &format!("{base}{path}"), "2026-07-28", None, &body).header("mcp-method", method);
        if !name.is_empty() {
            sent = sent.header("mcp-name", name);
        }
        if let Some(token) = token {
            sent = sent.bearer_auth(token);
        }
        sent.send().await.unwrap().json::<Value>().await.unwrap()
    })
}

pub fn signal(pid: u32, name: &str) {
    let status = Command::new("kill").arg(format!("-{name}")).arg(pid.to_string()).status().unwrap();
    assert!(status.success());
}

pub fn http_get(url: &str) -> (u16, String) {
    http_get_as(url, None)
}

/// A GET of `url`, sending `Authorization: Bearer <token>` when given; its status and body.
pub fn http_get_as(url: &str, token: Option<&str>) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut request = client.get(url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    })
}

/// Whether a process with this pid exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or_default().trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// Pids written (one per line) by our flaky server into its `FLAKY_PID_FILE`.
pub fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Waits until process `pid` (a peer told to listen on port 0) listens on a TCP port; that
/// port, as the kernel has it: no port is picked for a peer that another process could take first.
pub fn wait_listening(pid: u32) -> u16 {
    let mut port = None;
    wait_until(&format!("process {pid} to listen"), || {
        port = listening_ports(pid).into_iter().next();
        port.is_some()
    });
    port.unwrap()
}

/// The TCP ports process `pid` listens on: its sockets (`/proc/PID/fd`) that
/// `/proc/net/tcp` and `tcp6` list in state LISTEN.
pub fn listening_ports(pid: u32) -> Vec<u16> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    let sockets: Vec<String> = fds
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| target.to_str()?.strip_prefix("socket:[")?.strip_suffix(']').map(str::to_owned))
        .collect();
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for row in std::fs::read_to_string(table).unwrap_or_default().lines().skip(1) {
            // `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …`
            let columns: Vec<&str> = row.split_whitespace().collect();
            if columns.len() > 9 && columns[3] == "0A" && sockets.iter().any(|inode| inode == columns[9]) {
                let port = columns[1].rsplit(':').next().and_then(|hex| u16::from_str_radix(hex, 16).ok());
                ports.extend(port);
            }
        }
    }
    ports
}

/// A loopback port free now, below the kernel's ephemeral range, for a peer that must
/// come back on the port it had: neither a `bind` to port 0 nor an outgoing connection
/// of any other test can be given it in between.
pub fn port_outside_ephemeral_range() -> u16 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let low: u16 = range.split_whitespace().next().and_then(|p| p.parse().ok()).unwrap_or(32768);
    let (first, span) = (10_000u16, low.saturating_sub(10_000).max(1));
    let start = (std::process::id() % u32::from(span)) as u16;
    (0..span)
        .map(|i| first + (start + i) % span)
        .find(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok())
        .expect("a free loopback port below the ephemeral range")
}

/// Polls `fact` (something outside this process, with no event to await) until it holds, bounded by `PATIENCE`.
pub fn wait_until(what: &str, mut fact: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !fact() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until no pid in the list is alive, bounded by `PATIENCE`.
pub fn wait_dead(pids: &[u32]) {
    let deadline = Instant::now() + PATIENCE;
    while pids.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < deadline, "processes still alive: {:?}", pids.iter().filter(|p| alive(**p)).collect::<Vec<_>>());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Debian's Chromium, headless, driven through `tests/peers/browser.mjs` (playwright-core).
pub struct Browser {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines,
    stderr: Lines,
}

impl Browser {
    pub fn start() -> Browser {
        let mut child = Command::new("node")
            .arg(root().join("tests/peers/browser.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs the browser driver");
        let stdin = child.stdin.take().unwrap();
        let stdout = Lines::spawn(child.stdout.take().unwrap(), "");
        let stderr = Lines::spawn(child.stderr.take().unwrap(), "browser");
        Browser { child, stdin, stdout, stderr }
    }

    /// Sends one command and returns its answer, which must be `ok`.
    pub fn send(&mut self, command: Value) -> Value {
        writeln!(self.stdin, "{command}").expect("the browser driver reads commands");
        let line = self
            .stdout
            .next(PATIENCE * 2)
            .unwrap_or_else(|| panic!("the browser driver went quiet on {command}; stderr:\n{}", self.stderr.seen.join("\n")));
        let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(answer["ok"], true, "{command} failed: {answer}; stderr:\n{}", self.stderr.seen.join("\n"));
        answer
    }

    pub fn goto(&mut self, url: &str) -> u64 {
        self.send(json!({ "op": "goto", "url": url }))["status"].as_u64().unwrap_or_default()
    }

    /// Waits until `selector` matches an element (whose text contains `text`, if given); the wait's milliseconds.
    pub fn wait(&mut self, selector: &str, text: Option<&str>) -> u64 {
        let mut command = json!({ "op": "wait", "selector": selector, "timeout_ms": PATIENCE.as_millis() as u64 });
        if let Some(text) = text {
            command["text"] = json!(text);
        }
        self.send(command)["ms"].as_u64().unwrap()
    }

    /// Waits until `selector` matches nothing; the wait's milliseconds.
    pub fn wait_gone(&mut self, selector: &str) -> u64 {
        self.send(json!({ "op": "wait", "selector": selector, "gone": true, "timeout_ms": PATIENCE.as_millis() as u64 }))["ms"]
            .as_u64()
            .unwrap()
    }

    pub fn text(&mut self, selector: &str) -> String {
        self.send(json!({ "op": "text", "selector": selector }))["text"].as_str().unwrap_or_default().to_owned()
    }

    pub fn count(&mut self, selector: &str) -> u64 {
        self.send(json!({ "op": "count", "selector": selector }))["count"].as_u64().unwrap()
    }

    /// Saves the whole page as a PNG under the test artifacts folder (`target/tmp/ui-screenshots/`).
    pub fn screenshot(&mut self, name: &str) -> PathBuf {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        self.send(json!({ "op": "screenshot", "path": path }));
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({ "op": "close" }));
        let _ = self.child.wait();
    }
}

/// An rmcp server (the official Rust SDK's `ServerHandler`, one clone per session or
/// stateless request) served over Streamable HTTP on 127.0.0.1 in this process, on a
/// runtime of its own that serves it while it lives; and its URL.
pub fn rmcp_over_http<S: rmcp::ServerHandler + Clone + Send + Sync + 'static>(server: S) -> (tokio::runtime::Runtime, String) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        std::sync::Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    runtime.spawn(async move { axum::serve(listener, router).await });
    (runtime, url)
}

/// What a hammer of `tests/peers/sdk-client.mjs` counted: every call it made,
/// and each failure under its kind (`tool error: CODE: what failed`, `wrong
/// answer`, `thrown: …`), with a few whole messages of each kind.
#[derive(Debug)]
pub struct Hammered {
    pub calls: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub kinds: std::collections::BTreeMap<String, u64>,
    #[allow(dead_code, reason = "read in failure messages, through Debug")]
    pub samples: Value,
}

/// Starts `c` calling `name` with `args` over and over, one call at a time;
/// with `expect`, an answer must start with it.
pub fn hammer_start(c: &mut SdkClient, name: &str, args: Value, expect: Option<&str>) {
    let mut command = json!({ "op": "hammer_start", "name": name, "args": args });
    if let Some(expect) = expect {
        command["expect"] = json!(expect);
    }
    let started = c.send(command);
    assert_eq!(started["ok"], true, "hammer_start: {started}");
}

/// The hammer's counts after `op`: `hammer_tally` (now), `hammer_next` (once
/// a call that ends after it has succeeded) or `hammer_stop`.
pub fn hammer(c: &mut SdkClient, op: &str) -> Hammered {
    // `hammer_next` gives up a little before this client's own read does, so that a timeout says what was counted.
    let answer = c.send(json!({ "op": op, "timeout_ms": (PATIENCE * 9 / 10).as_millis() as u64 }));
    assert_eq!(answer["ok"], true, "{op}: {answer}");
    let count = |key: &str| answer[key].as_u64().unwrap_or_else(|| panic!("{op}: no {key}: {answer}"));
    let tally = Hammered {
        calls: count("calls"),
        succeeded: count("succeeded"),
        failed: count("failed"),
        kinds: serde_json::from_value(answer["kinds"].clone()).unwrap_or_else(|e| panic!("{op}: kinds: {e}: {answer}")),
        samples: answer["samples"].clone(),
    };
    assert_eq!(tally.calls, tally.succeeded + tally.failed, "{op}: {answer}");
    assert_eq!(tally.kinds.values().sum::<u64>(), tally.failed, "{op}: every failure has its kind: {answer}");
    tally
}

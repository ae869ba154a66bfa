//! One language server process and the JSON-RPC connection to it: started
//! through the `subprocess` service, initialized asking for UTF-16 positions,
//! its requests to us answered (configuration from the mount, edits refused),
//! its notifications consumed, its stderr kept as a bounded tail.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seam_engine::subprocess::{Child, SubprocessService};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value as Json, json};
use tokio::io::BufReader;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::StdioServer;
use crate::framing::{frame, read_message, write_frames};

/// How a request failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The process or its pipes failed: the query may be replayed on a new process.
    Transport(String),
    /// The server answered with a JSON-RPC error.
    Rpc { code: i64, message: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport(why) => write!(f, "{why}"),
            Failure::Rpc { code, message } => write!(f, "the server answered error {code}: {message}"),
        }
    }
}

impl std::error::Error for Failure {}

/// Why a language server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The process could not be spawned.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// The process started but the handshake failed (it was then ended); `stderr` is the
    /// tail of what it wrote there, empty when it wrote nothing.
    #[error("{source}{}", stderr_suffix(stderr))]
    Initialize {
        #[source]
        source: InitializeError,
        stderr: String,
    },
}

/// `; its stderr ends: …` after a failure, when the server wrote to stderr.
fn stderr_suffix(tail: &str) -> String {
    if tail.is_empty() { String::new() } else { format!("; its stderr ends: {tail}") }
}

/// How the `initialize` handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum InitializeError {
    /// The `initialize` request failed (transport, or an error answer).
    #[error("`initialize` failed: {source}")]
    Request {
        #[source]
        source: Failure,
    },
    /// The answer to `initialize` is not JSON.
    #[error("`initialize` answered malformed JSON: {source}")]
    MalformedJson {
        #[source]
        source: serde_json::Error,
    },
    /// The answer to `initialize` has no `capabilities`.
    #[error("`initialize` answered without `capabilities`")]
    NoCapabilities,
    /// The server chose a position encoding other than UTF-16.
    #[error("the server insists on `{encoding}` positions; seam asks for and converts only utf-16")]
    PositionEncoding { encoding: String },
    /// A notification that follows the answer (`initialized`, the configuration) could not be sent.
    #[error("`{method}` could not be sent: {source}")]
    Notify {
        method: &'static str,
        #[source]
        source: Failure,
    },
    /// The handshake did not finish within `startup_timeout`.
    #[error("the server did not finish `initialize` within startup_timeout {timeout}")]
    TimedOut { timeout: seam_engine::units::Duration },
}

/// The last bytes a server wrote to stderr, cut at a character boundary.
#[derive(Debug, Default)]
pub struct Tail {
    bytes: Vec<u8>,
    limit: usize,
}

impl Tail {
    pub fn new(limit: usize) -> Tail {
        Tail { bytes: Vec::new(), limit }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > self.limit {
            let cut = self.bytes.len() - self.limit;
            self.bytes.drain(..cut);
        }
    }

    /// The tail as text; a multibyte character cut at the front is dropped, not garbled.
    pub fn text(&self) -> String {
        let start = self.bytes.iter().position(|b| (*b as i8) >= -0x40).unwrap_or(self.bytes.len());
        String::from_utf8_lossy(&self.bytes[start..]).into_owned()
    }
}

/// A server's answer: its `result` as it was sent (`null` when it sent none), parsed by whoever asked.
pub type Answer = Box<RawValue>;

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Answer, Failure>>>>>;

/// A request or notification as it goes out, built from borrowed parts (no `Json` tree, no copy of a document).
#[derive(Serialize)]
struct Outgoing<'a, P: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<i64>,
    method: &'a str,
    params: &'a P,
}

/// A message as it comes in: its parts stay raw JSON until something needs them.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct RpcError {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

pub struct Connection {
    writer: Arc<tokio::sync::Mutex<tokio::process::ChildStdin>>,
    pending: Pending,
    next_id: AtomicI64,
    /// Cancelled when the reader ends: the process is gone or its output broke.
    closed: CancellationToken,
    closed_why: Arc<Mutex<Option<String>>>,
    pub stderr: Arc<Mutex<Tail>>,
    child: tokio::sync::Mutex<Child>,
    /// Set once the server is being ended (`shutdown` on its way, or a signal for a hung one): after
    /// it, nothing but `exit` is sent (a late `didClose` is dropped).
    ending: AtomicBool,
    pub pid: u32,
    pub capabilities: Json,
    pub workspace: PathBuf,
}

pub fn file_uri(path: &Path) -> String {
    url::Url::from_file_path(path).map(String::from).unwrap_or_else(|_| format!("file://{}", path.display()))
}

impl Connection {
    /// Starts the server for `workspace` and runs the handshake within `startup_timeout`.
    pub async fn start(config: &StdioServer, subprocess: &SubprocessService, workspace: &Path) -> Result<Arc<Connection>, StartError> {
        let mut child = subprocess
            .spawn(&config.spawn, &[], Some(workspace))
            .map_err(|source| StartError::Spawn { command: config.spawn.command.clone(), source })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let tail = Arc::new(Mutex::new(Tail::new(config.max_stderr_bytes.bytes() as usize)));
        {
            let tail = tail.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt;
                let mut stderr = stderr;
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    tail.lock().expect("tail lock").push(&buf[..n]);
                }
            });
        }
        let pid = child.pid;
        let writer = Arc::new(tokio::sync::Mutex::new(stdin));
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let closed = CancellationToken::new();
        let closed_why = Arc::new(Mutex::new(None));
        let replies = Replies {
            writer: writer.clone(),
            configuration: config.configuration.clone().unwrap_or(Json::Null),
            workspace: workspace.to_owned(),
        };
        tokio::spawn(read_loop(
            BufReader::new(stdout),
            config.max_message_bytes.bytes(),
            pending.clone(),
            replies,
            closed.clone(),
            closed_why.clone(),
        ));
        let mut connection = Connection {
            writer,
            pending,
            next_id: AtomicI64::new(1),
            closed,
            closed_why,
            stderr: tail,
            child: tokio::sync::Mutex::new(child),
            ending: AtomicBool::new(false),
            pid,
            capabilities: Json::Null,
            workspace: workspace.to_owned(),
        };
        let init = tokio::time::timeout(config.startup_timeout.to_std(), connection.initialize(config)).await;
        let failure = match init {
            Ok(Ok(capabilities)) => {
                connection.capabilities = capabilities;
                return Ok(Arc::new(connection));
            }
            Ok(Err(e)) => e,
            Err(_) => InitializeError::TimedOut { timeout: config.startup_timeout },
        };
        let stderr = connection.stderr_tail();
        connection.child.get_mut().terminate(config.kill_grace.to_std()).await;
        Err(StartError::Initialize { source: failure, stderr })
    }

    async fn initialize(&self, config: &StdioServer) -> Result<Json, InitializeError> {
        let root = file_uri(&self.workspace);
        let name = self.workspace.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "workspace".into());
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": { "name": "seam", "version": env!("CARGO_PKG_VERSION") },
            "rootUri": root,
            "rootPath": self.workspace,
            "workspaceFolders": [{ "uri": root, "name": name }],
            "initializationOptions": config.initialization_options,
            "capabilities": {
                "general": { "positionEncodings": ["utf-16"] },
                "workspace": { "configuration": true, "workspaceFolders": true, "applyEdit": false },
                "textDocument": {
                    "synchronization": { "dynamicRegistration": false, "didSave": false },
                    "definition": { "linkSupport": true },
                    "implementation": { "linkSupport": true },
                    "references": {},
                    "hover": { "contentFormat": ["markdown", "plaintext"] }
                },
                "window": { "workDoneProgress": false }
            }
        });
        let result = self.request("initialize", &params).await.map_err(|source| InitializeError::Request { source })?;
        let result: Json = serde_json::from_str(result.get()).map_err(|source| InitializeError::MalformedJson { source })?;
        let capabilities = result.get("capabilities").cloned().ok_or(InitializeError::NoCapabilities)?;
        // UTF-16 is what seam speaks and what LSP requires every server to support; a server that picks another is refused.
        if let Some(encoding) = capabilities.get("positionEncoding").and_then(Json::as_str).filter(|e| *e != "utf-16") {
            return Err(InitializeError::PositionEncoding { encoding: encoding.to_owned() });
        }
        let notify_failed = |method| move |source| InitializeError::Notify { method, source };
        self.notify("initialized", &json!({})).await.map_err(notify_failed("initialized"))?;
        if let Some(settings) = &config.configuration {
            let method = "workspace/didChangeConfiguration";
            self.notify(method, &json!({ "settings": settings })).await.map_err(notify_failed(method))?;
        }
        Ok(capabilities)
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    pub fn stderr_tail(&self) -> String {
        self.stderr.lock().expect("tail lock").text().trim().to_owned()
    }

    fn closed_reason(&self) -> String {
        let why = self.closed_why.lock().expect("reason lock").clone().unwrap_or_else(|| "the server's output ended".into());
        let tail = self.stderr_tail();
        if tail.is_empty() { why } else { format!("{why}; its stderr ends: {tail}") }
    }

    pub async fn request<P: Serialize>(&self, method: &str, params: &P) -> Result<Answer, Failure> {
        self.request_after(Vec::new(), method, params, &AtomicBool::new(false)).await
    }

    /// Sends `frames` (notifications framed by [`Connection::notification`]) and then the request, in one
    /// write, and waits for the request's answer. `written` is set once the write has gone out whole, so
    /// a caller that stops waiting knows whether the server got the messages.
    pub async fn request_after<P: Serialize>(
        &self,
        mut frames: Vec<u8>,
        method: &str,
        params: &P,
        written: &AtomicBool,
    ) -> Result<Answer, Failure> {
        if self.is_closed() {
            return Err(Failure::Transport(self.closed_reason()));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending lock").insert(id, tx);
        /// Forgets the request however the caller stops waiting (a timeout drops this future).
        struct Forget<'a>(&'a Pending, i64);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0.lock().expect("pending lock").remove(&self.1);
            }
        }
        let _forget = Forget(&self.pending, id);
        let body = serde_json::to_vec(&Outgoing { jsonrpc: "2.0", id: Some(id), method, params }).expect("serializable");
        frame(&mut frames, &body);
        // Once `shutdown` is on its way, only it goes out: no `didOpen` or question follows it.
        if !self.write(&frames, method == "shutdown").await? {
            return Err(Failure::Transport("the server is shutting down".into()));
        }
        written.store(true, Ordering::SeqCst);
        tokio::select! {
            answer = rx => answer.unwrap_or_else(|_| Err(Failure::Transport(self.closed_reason()))),
            _ = self.closed.cancelled() => Err(Failure::Transport(self.closed_reason())),
        }
    }

    /// Appends a framed notification to `frames`, to be sent with what follows it.
    pub fn notification<P: Serialize>(frames: &mut Vec<u8>, method: &str, params: &P) {
        let body = serde_json::to_vec(&Outgoing { jsonrpc: "2.0", id: None, method, params }).expect("serializable");
        frame(frames, &body);
    }

    /// Sends a notification; once `shutdown` is on its way, only `exit` still goes out (a late `didClose`
    /// is dropped, not an error).
    pub async fn notify<P: Serialize>(&self, method: &str, params: &P) -> Result<(), Failure> {
        let mut frames = Vec::new();
        Connection::notification(&mut frames, method, params);
        self.write(&frames, method == "exit").await.map(drop)
    }

    /// Writes `frames` at once; `false` when `shutdown` is on its way and they are not `after_shutdown`
    /// (`ending` is read under the writer's lock, which `shutdown` is written under).
    async fn write(&self, frames: &[u8], after_shutdown: bool) -> Result<bool, Failure> {
        let mut writer = self.writer.lock().await;
        if self.ending.load(Ordering::SeqCst) && !after_shutdown {
            return Ok(false);
        }
        write_frames(&mut *writer, frames).await.map_err(|e| Failure::Transport(format!("writing to the server failed: {e}")))?;
        Ok(true)
    }

    /// `shutdown` → `exit`, then SIGTERM once `shutdown_timeout` passes and SIGKILL after `kill_grace`;
    /// with a zero `shutdown_timeout`, SIGTERM at once, without a `shutdown` request.
    pub async fn shut_down(&self, shutdown_timeout: Duration, kill_grace: Duration) {
        self.ending.store(true, Ordering::SeqCst);
        if !self.is_closed() && !shutdown_timeout.is_zero() {
            let polite = async {
                if self.request("shutdown", &Json::Null).await.is_ok() {
                    let _ = self.notify("exit", &Json::Null).await;
                }
                self.child.lock().await.wait().await
            };
            if let Ok(Ok(_)) = tokio::time::timeout(shutdown_timeout, polite).await {
                return;
            }
        }
        self.child.lock().await.terminate(kill_grace).await;
    }
}

/// Answers the server's requests to us.
struct Replies {
    writer: Arc<tokio::sync::Mutex<tokio::process::ChildStdin>>,
    configuration: Json,
    workspace: PathBuf,
}

impl Replies {
    fn answer(&self, method: &str, params: &Json) -> Result<Json, (i64, String)> {
        match method {
            // One answer per item, looked up by section (`python.analysis` as a dotted path or a key).
            "workspace/configuration" => Ok(Json::Array(
                params["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|item| match item["section"].as_str() {
                        Some(section) => section_of(&self.configuration, section),
                        None => self.configuration.clone(),
                    })
                    .collect(),
            )),
            "workspace/applyEdit" => Ok(json!({ "applied": false, "failureReason": "seam is read-only: edits are refused" })),
            "workspace/workspaceFolders" => {
                let uri = file_uri(&self.workspace);
                Ok(json!([{ "uri": uri, "name": self.workspace.file_name().map(|n| n.to_string_lossy()) }]))
            }
            "client/registerCapability" | "client/unregisterCapability" | "window/workDoneProgress/create" => Ok(Json::Null),
            "window/showMessageRequest" | "window/showDocument" => Ok(Json::Null),
            _ => Err((-32601, format!("seam does not handle `{method}`"))),
        }
    }
}

/// A configuration section: the key as written, else the dotted path.
fn section_of(configuration: &Json, section: &str) -> Json {
    if let Some(v) = configuration.get(section) {
        return v.clone();
    }
    let mut at = configuration;
    for part in section.split('.') {
        match at.get(part) {
            Some(v) => at = v,
            None => return Json::Null,
        }
    }
    at.clone()
}

/// seam's answer to a request of the server's.
#[derive(Serialize)]
struct Reply<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Json>,
}

async fn read_loop(
    mut stdout: BufReader<tokio::process::ChildStdout>,
    max_message: u64,
    pending: Pending,
    replies: Replies,
    closed: CancellationToken,
    closed_why: Arc<Mutex<Option<String>>>,
) {
    // However this task ends, a panic included, waiting questions learn that the connection is gone.
    let _closes = closed.clone().drop_guard();
    let why = loop {
        let body = match read_message(&mut stdout, max_message).await {
            Ok(Some(body)) => body,
            Ok(None) => break "the server exited".to_owned(),
            Err(e) => break e.to_string(),
        };
        let message = match serde_json::from_slice::<Incoming>(&body) {
            Ok(message) => message,
            Err(e) => break format!("the server sent a message that is not JSON-RPC: {e}"),
        };
        match (message.method, message.id) {
            // A request from the server.
            (Some(method), Some(id)) => {
                let method: String = serde_json::from_str(method.get()).unwrap_or_default();
                let params = message.params.and_then(|p| serde_json::from_str(p.get()).ok()).unwrap_or(Json::Null);
                // The id goes back as the server wrote it, never parsed (any JSON is echoed, however deep).
                let reply = match replies.answer(&method, &params) {
                    Ok(result) => Reply { jsonrpc: "2.0", id, result: Some(result), error: None },
                    Err((code, text)) => Reply { jsonrpc: "2.0", id, result: None, error: Some(json!({ "code": code, "message": text })) },
                };
                let mut frames = Vec::new();
                frame(&mut frames, &serde_json::to_vec(&reply).expect("serializable"));
                let mut writer = replies.writer.lock().await;
                if write_frames(&mut *writer, &frames).await.is_err() {
                    break "writing to the server failed".to_owned();
                }
            }
            // Notifications (`window/*`, `$/…`, diagnostics, telemetry) are consumed.
            (Some(_), None) => {}
            (None, Some(id)) => {
                let Ok(id) = serde_json::from_str::<i64>(id.get()) else { continue };
                let Some(tx) = pending.lock().expect("pending lock").remove(&id) else { continue };
                let answer = match message.error {
                    Some(e) => {
                        let e: RpcError = serde_json::from_str(e.get()).unwrap_or_default();
                        Err(Failure::Rpc { code: e.code, message: e.message })
                    }
                    None => {
                        Ok(message.result.map_or_else(|| RawValue::from_string("null".into()).expect("null is JSON"), ToOwned::to_owned))
                    }
                };
                let _ = tx.send(answer);
            }
            (None, None) => {}
        }
    };
    *closed_why.lock().expect("reason lock") = Some(why);
    closed.cancel();
    pending.lock().expect("pending lock").clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_errors_read_as_before_with_the_stderr_tail_only_when_there_is_one() {
        let spawn = StartError::Spawn { command: "pyright".into(), source: std::io::Error::from(std::io::ErrorKind::NotFound) };
        assert_eq!(spawn.to_string(), format!("cannot start `pyright`: {}", std::io::Error::from(std::io::ErrorKind::NotFound)));
        let initialize = |source, stderr: &str| StartError::Initialize { source, stderr: stderr.into() }.to_string();
        let timeout = seam_engine::units::Duration::from_millis(20_000);
        assert_eq!(
            initialize(InitializeError::TimedOut { timeout }, ""),
            "the server did not finish `initialize` within startup_timeout 20s"
        );
        assert_eq!(
            initialize(InitializeError::NoCapabilities, "boom"),
            "`initialize` answered without `capabilities`; its stderr ends: boom"
        );
        let rpc = Failure::Rpc { code: -32600, message: "no".into() };
        assert_eq!(initialize(InitializeError::Request { source: rpc }, ""), "`initialize` failed: the server answered error -32600: no");
        assert_eq!(
            initialize(InitializeError::PositionEncoding { encoding: "utf-8".into() }, ""),
            "the server insists on `utf-8` positions; seam asks for and converts only utf-16"
        );
        let gone = Failure::Transport("writing to the server failed: broken pipe".into());
        assert_eq!(
            initialize(InitializeError::Notify { method: "initialized", source: gone }, ""),
            "`initialized` could not be sent: writing to the server failed: broken pipe"
        );
        let json = serde_json::from_str::<Json>("{").unwrap_err();
        let expected = format!("`initialize` answered malformed JSON: {json}");
        assert_eq!(initialize(InitializeError::MalformedJson { source: json }, ""), expected);
    }

    #[test]
    fn the_stderr_tail_is_bounded_and_cut_at_a_character() {
        let mut t = Tail::new(5);
        t.push("ab".as_bytes());
        t.push("日本".as_bytes());
        // 8 bytes, last 5 kept: the second byte of 日 onwards; the broken character is dropped.
        assert_eq!(t.text(), "本");
        let mut exact = Tail::new(8);
        exact.push("ab日本".as_bytes());
        assert_eq!(exact.text(), "ab日本", "exactly at the limit");
    }

    #[test]
    fn configuration_sections_are_found_by_key_or_dotted_path() {
        let c = json!({ "python.analysis": { "typeCheckingMode": "basic" }, "python": { "pythonPath": "/usr/bin/python3" } });
        assert_eq!(section_of(&c, "python.analysis"), json!({ "typeCheckingMode": "basic" }));
        assert_eq!(section_of(&c, "python.pythonPath"), json!("/usr/bin/python3"));
        assert_eq!(section_of(&c, "missing"), Json::Null);
    }
}

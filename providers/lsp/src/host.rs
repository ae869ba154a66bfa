//! The stdio host: one running `lsp.stdio` mount. Servers start lazily on the
//! first query, one process per canonical workspace, each behind its own queue
//! (a lock held from reading the file to `didClose`), so distinct workspaces
//! run in parallel and one workspace's queries run in order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seam_engine::runtime::{BoxFuture, BuildCx, ProviderError, Running, State, Status, ToolOutput};
use seam_engine::subprocess::SubprocessService;
use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use tokio::sync::OwnedMutexGuard;

use crate::StdioServer;
use crate::client::{Answer, Connection, Failure, file_uri};

/// A typed failure of the LSP surface.
#[derive(Clone, Debug, PartialEq)]
pub struct LspError {
    pub code: seam_engine::codes::Code,
    pub message: String,
}

impl LspError {
    pub fn new(code: seam_engine::codes::Code, message: impl Into<String>) -> LspError {
        LspError { code, message: message.into() }
    }

    pub fn into_output(self) -> ToolOutput {
        ToolOutput::typed_error(self.code, self.message, Map::new())
    }
}

/// The four questions, as LSP methods with the capability each needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    GoToDefinition,
    FindReferences,
    GoToImplementation,
    Hover,
}

impl Operation {
    pub const ALL: [&'static str; 4] = ["goToDefinition", "findReferences", "goToImplementation", "hover"];

    pub fn parse(name: &str) -> Option<Operation> {
        Some(match name {
            "goToDefinition" => Operation::GoToDefinition,
            "findReferences" => Operation::FindReferences,
            "goToImplementation" => Operation::GoToImplementation,
            "hover" => Operation::Hover,
            _ => return None,
        })
    }

    fn method(self) -> &'static str {
        match self {
            Operation::GoToDefinition => "textDocument/definition",
            Operation::FindReferences => "textDocument/references",
            Operation::GoToImplementation => "textDocument/implementation",
            Operation::Hover => "textDocument/hover",
        }
    }

    fn capability(self) -> &'static str {
        match self {
            Operation::GoToDefinition => "definitionProvider",
            Operation::FindReferences => "referencesProvider",
            Operation::GoToImplementation => "implementationProvider",
            Operation::Hover => "hoverProvider",
        }
    }
}

/// One question about one open document.
pub struct Query {
    pub operation: Operation,
    /// The file's real path, inside the workspace.
    pub path: PathBuf,
    pub language: String,
    pub text: String,
    /// 0-based line and UTF-16 character, as LSP counts.
    pub line: u32,
    pub character: u32,
}

type ServerSlot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

pub struct LspMount {
    pub id: String,
    pub config: StdioServer,
    subprocess: Arc<SubprocessService>,
    /// `services.workspace.root`, resolved to its real path at build.
    pub workspace: Option<PathBuf>,
    servers: Mutex<HashMap<PathBuf, ServerSlot>>,
    /// The running server of each workspace, reachable without waiting for its
    /// queue: dispose ends a server even while a query holds the queue.
    live: Mutex<HashMap<PathBuf, Arc<Connection>>>,
    disposed: AtomicBool,
    /// Told when a server starts or ends: the mount's facts (its servers) changed.
    status: seam_engine::runtime::Changes,
    /// The servers it started, for `/metrics`.
    counters: seam_engine::runtime::MountCounters,
}

/// Why an `lsp.stdio` mount could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The server's program is not found on `PATH`.
    #[error("`{program}` is not an executable on PATH: {source}")]
    NotOnPath {
        program: String,
        #[source]
        source: which::Error,
    },
    /// `services.workspace.root` cannot be resolved to its real path.
    #[error("workspace root {}: {source}", root.display())]
    WorkspaceRoot {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Builds a mount: the executable is resolved now, before any route exists, so
/// a mount that cannot run never takes a route.
pub fn build(config: StdioServer, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    Box::pin(async move { Ok(Arc::new(LspMount::new(config, cx)?) as Arc<dyn Running>) })
}

impl LspMount {
    fn new(config: StdioServer, cx: BuildCx) -> Result<LspMount, BuildError> {
        let argv = cx.subprocess.argv(&config.spawn);
        let program = &argv[0];
        which::which(program).map_err(|source| BuildError::NotOnPath { program: program.clone(), source })?;
        let workspace = match &cx.workspace {
            Some(root) => Some(std::fs::canonicalize(root).map_err(|source| BuildError::WorkspaceRoot { root: root.clone(), source })?),
            None => None,
        };
        Ok(LspMount {
            id: cx.id,
            config,
            subprocess: cx.subprocess,
            workspace,
            servers: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            disposed: AtomicBool::new(false),
            status: cx.status,
            counters: Default::default(),
        })
    }

    fn slot(&self, workspace: &Path) -> ServerSlot {
        self.servers.lock().expect("servers lock").entry(workspace.to_owned()).or_default().clone()
    }

    /// Runs a query in the workspace's queue. `read` runs inside the queue (the
    /// file is read where the server will see it). A transport failure replaces
    /// the process once and replays the query (it only reads); a second one is an error.
    /// The queue is released once `didClose` is written, which is after the answer is returned.
    /// `turn` is set once the query has the queue: a query dropped before that never reached the server.
    pub async fn query(
        &self,
        workspace: &Path,
        turn: &AtomicBool,
        read: impl FnOnce() -> Result<Query, LspError>,
        starting: &(dyn Fn() + Sync),
    ) -> Result<Answer, LspError> {
        if self.disposed.load(Ordering::SeqCst) {
            return Err(LspError::new(crate::codes::LSP_DISPOSED, format!("mount `{}` was retired", self.id)));
        }
        let slot = self.slot(workspace);
        // Taken out of `held` by whatever releases the queue: the `didClose` task, or an abandonment.
        let mut held = Some(slot.lock_owned().await);
        turn.store(true, Ordering::SeqCst);
        let query = read()?;
        let uri = file_uri(&query.path);
        let mut replaced = false;
        loop {
            // Checked before a (re)start: a retired mount starts nothing.
            if self.disposed.load(Ordering::SeqCst) {
                return Err(LspError::new(crate::codes::LSP_DISPOSED, format!("mount `{}` was retired", self.id)));
            }
            let server = held.as_mut().expect("the queue is held until the question ends");
            let connection = match server.as_ref().filter(|c| !c.is_closed()) {
                Some(c) => c.clone(),
                // Not started yet, or died while idle: (re)start.
                None => {
                    starting();
                    let started = Connection::start(&self.config, &self.subprocess, workspace).await.map_err(|e| {
                        LspError::new(crate::codes::LSP_UNAVAILABLE, format!("language server of mount `{}`: {e}", self.id))
                    })?;
                    self.counters.server_started();
                    **server = Some(started.clone());
                    self.live.lock().expect("live lock").insert(workspace.to_owned(), started.clone());
                    self.status.notify();
                    started
                }
            };
            let capability = &connection.capabilities[query.operation.capability()];
            if capability.is_null() || *capability == Json::Bool(false) {
                return Err(LspError::new(
                    crate::codes::LSP_UNSUPPORTED_OPERATION,
                    format!("the language server of mount `{}` does not offer {}", self.id, query.operation.capability()),
                ));
            }
            let written = AtomicBool::new(false);
            let mut abandoned =
                Abandoned { mount: self, workspace, connection: &connection, uri: &uri, written: &written, queue: &mut held, armed: true };
            let asked = ask(&connection, &query, &uri, &written).await;
            abandoned.armed = false;
            drop(abandoned);
            let server = held.as_mut().expect("the queue is held until the question ends");
            match asked {
                Ok(answer) => {
                    self.close_later(held.take().expect("held"), connection, uri);
                    return Ok(answer);
                }
                Err(Failure::Transport(why)) if !replaced => {
                    tracing::warn!(mount = %self.id, "language server failed during a query ({why}); replacing it and replaying the query");
                    replaced = true;
                    **server = None;
                    self.shut_down_later(connection, false);
                }
                Err(Failure::Transport(why)) => {
                    **server = None;
                    return Err(LspError::new(
                        crate::codes::LSP_UNAVAILABLE,
                        format!("language server of mount `{}` failed twice: {why}", self.id),
                    ));
                }
                Err(Failure::Rpc { code, message }) => {
                    self.close_later(held.take().expect("held"), connection, uri);
                    return Err(LspError::new(
                        crate::codes::LSP_MALFORMED_RESPONSE,
                        format!("the server answered error {code}: {message}"),
                    ));
                }
            }
        }
    }

    /// Writes `didClose` for the question just answered, still inside the workspace's queue (`queue` is
    /// held until it is written), but after the runtime has run what the answer made ready: the answer's
    /// own write to the MCP client goes first, and the server's work on `didClose` no longer delays it.
    /// A failed write means the server is gone: it is replaced on the next query.
    fn close_later(&self, mut queue: OwnedMutexGuard<Option<Arc<Connection>>>, connection: Arc<Connection>, uri: String) {
        let (grace, kill) = self.stop_times();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            let closed = connection.notify("textDocument/didClose", &DocumentParams { text_document: Document { uri: &uri } }).await;
            if closed.is_err() {
                *queue = None;
                drop(queue);
                connection.shut_down(grace, kill).await;
            }
        });
    }

    /// Ends `connection`, the server of `workspace`, while its slot is held: questions waiting in the
    /// queue find it ending and start a replacement in the same slot. A server that stopped answering
    /// (`hung`) is not asked to shut down (it would not answer that either): it is signalled at once.
    fn end_server(&self, workspace: &Path, connection: &Arc<Connection>, hung: bool) {
        {
            let mut live = self.live.lock().expect("live lock");
            if live.get(workspace).is_some_and(|c| Arc::ptr_eq(c, connection)) {
                live.remove(workspace);
            }
        }
        self.status.notify();
        self.shut_down_later(connection.clone(), hung);
    }

    /// Ends the server of a workspace whose query timed out at once: a hung server is not kept, nor
    /// waited on for `shutdown_timeout`.
    pub fn evict(&self, workspace: &Path) {
        self.servers.lock().expect("servers lock").remove(workspace);
        let Some(connection) = self.live.lock().expect("live lock").get(workspace).cloned() else { return };
        self.end_server(workspace, &connection, true);
    }

    /// Shuts `connection` down in the background; a `hung` one is signalled at once.
    fn shut_down_later(&self, connection: Arc<Connection>, hung: bool) {
        let (grace, kill) = self.stop_times();
        let grace = if hung { Duration::ZERO } else { grace };
        tokio::spawn(async move { connection.shut_down(grace, kill).await });
    }

    /// `shutdown_timeout` and `kill_grace`, for [`Connection::shut_down`].
    fn stop_times(&self) -> (Duration, Duration) {
        (self.config.shutdown_timeout.to_std(), self.config.kill_grace.to_std())
    }
}

/// A question dropped while it is at the server (the client cancelled the call, or it timed out). When
/// `didOpen` and the question went out whole, the document is closed as after an answer (which the
/// server may still send; it is ignored), still inside the queue. When the write may have been cut
/// short, the server is ended: half a message would garble everything after it. (A question that
/// times out ends its server anyway, through [`LspMount::evict`]: a hung server is not kept.)
struct Abandoned<'a> {
    mount: &'a LspMount,
    workspace: &'a Path,
    connection: &'a Arc<Connection>,
    uri: &'a str,
    written: &'a AtomicBool,
    queue: &'a mut Option<OwnedMutexGuard<Option<Arc<Connection>>>>,
    armed: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match self.queue.take() {
            Some(queue) if self.written.load(Ordering::SeqCst) => {
                tracing::debug!(mount = %self.mount.id, "a question was abandoned at its language server; closing its document");
                self.mount.close_later(queue, self.connection.clone(), self.uri.to_owned());
            }
            _ => {
                tracing::info!(mount = %self.mount.id, "a question was abandoned while being written; ending its language server");
                self.mount.end_server(self.workspace, self.connection, false);
            }
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DocumentParams<D: Serialize> {
    text_document: D,
}

#[derive(Serialize)]
struct Document<'a> {
    uri: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OpenDocument<'a> {
    uri: &'a str,
    language_id: &'a str,
    version: i32,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Question<'a> {
    text_document: Document<'a>,
    position: lsp_types::Position,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<lsp_types::ReferenceContext>,
}

/// `didOpen` and the question, in one write (the server reads both at once); `didClose` follows the answer.
async fn ask(connection: &Connection, q: &Query, uri: &str, written: &AtomicBool) -> Result<Answer, Failure> {
    let mut frames = Vec::with_capacity(q.text.len() + 512);
    let open = OpenDocument { uri, language_id: &q.language, version: 1, text: &q.text };
    Connection::notification(&mut frames, "textDocument/didOpen", &DocumentParams { text_document: open });
    let question = Question {
        text_document: Document { uri },
        position: lsp_types::Position::new(q.line, q.character),
        context: (q.operation == Operation::FindReferences).then_some(lsp_types::ReferenceContext { include_declaration: true }),
    };
    connection.request_after(frames, q.operation.method(), &question, written).await
}

impl Running for LspMount {
    fn counts(&self) -> seam_engine::runtime::MountCounts {
        self.counters.read()
    }
    fn status(&self) -> Status {
        if self.disposed.load(Ordering::SeqCst) {
            return Status::new(State::Retired, None);
        }
        // Servers start on the first query; a built mount is ready to take one.
        Status::new(State::Ready, None)
    }
    fn dispose(&self, within: Duration) -> BoxFuture<'static, ()> {
        self.disposed.store(true, Ordering::SeqCst);
        self.servers.lock().expect("servers lock").clear();
        let live: Vec<Arc<Connection>> = self.live.lock().expect("live lock").drain().map(|(_, c)| c).collect();
        let (grace, kill) = self.stop_times();
        let grace = grace.min(within);
        Box::pin(async move {
            futures::future::join_all(live.iter().map(|c| c.shut_down(grace, kill))).await;
        })
    }
    fn facts(&self) -> Map<String, Json> {
        let mut facts = Map::new();
        facts.insert("extensions".into(), json!(self.config.extensions.keys().collect::<Vec<_>>()));
        let servers: Vec<Json> = self
            .live
            .lock()
            .expect("live lock")
            .iter()
            .map(|(ws, c)| json!({ "workspace": ws, "pid": c.pid, "alive": !c.is_closed() }))
            .collect();
        facts.insert("servers".into(), Json::Array(servers));
        facts
    }
}

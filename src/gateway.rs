//! The MCP server side: one agent's catalog of a running deployment, served over
//! rmcp (stdio or Streamable HTTP). Lists and calls always read the live
//! generation; each session is told `tools/list_changed` (`prompts/list_changed`)
//! when, and only when, its agent's tools (prompts) differ from those it was
//! last shown. A live tool (the skill catalog) lists by the session's roots.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    ListPromptsResult, ListToolsResult, PaginatedRequestParams, Prompt, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, Peer, ServerHandler};
use seam_engine::deploy::{CallContext, Deployment, View};
use seam_engine::runtime::{ToolOutput, ToolSpec};
use seam_engine::surface::{PromptSpec, Roots};
use seam_mcp::lane::{Divert, LineWriter, Peek, line_of};
use serde_json::value::RawValue;
use serde_json::{Map, Value as Json};
use tokio_util::sync::CancellationToken;

/// How often a session's notifier checks whether its session has ended.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone)]
pub struct Gateway {
    pub deployment: Arc<Deployment>,
    pub agent: String,
    /// This session's client roots, asked once and again after `roots/list_changed`.
    roots: Arc<tokio::sync::Mutex<Option<Vec<PathBuf>>>>,
    /// Rung when the roots change, so that the session's view is checked again.
    roots_changed: Arc<tokio::sync::Notify>,
    /// What this session was last sent (`tools/list`, `prompts/list`) or told
    /// had changed: the notifier compares against it, so that a change between
    /// the client's listing and the notifier's first look is still announced.
    shown: Arc<std::sync::Mutex<Shown>>,
    /// Counts this session among the open ones while the session's own
    /// handler lives (not the notifier's copy).
    _counted: Option<Arc<OpenSession>>,
}

/// One open session in a shared count; the count goes down when it is dropped.
pub struct OpenSession(Arc<std::sync::atomic::AtomicUsize>);

impl OpenSession {
    pub fn new(count: Arc<std::sync::atomic::AtomicUsize>) -> OpenSession {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        OpenSession(count)
    }
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Shown {
    tools: Option<Vec<ToolSpec>>,
    prompts: Option<Arc<Vec<PromptSpec>>>,
}

/// How long a client may take to answer `roots/list`; past it the call goes on without roots.
const ROOTS_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

impl Gateway {
    /// A gateway for one session (each session keeps its own roots).
    pub fn new(deployment: Arc<Deployment>, agent: String) -> Gateway {
        Gateway { deployment, agent, roots: Arc::default(), roots_changed: Arc::default(), shown: Arc::default(), _counted: None }
    }

    /// This gateway counted among the open sessions for as long as it lives.
    pub fn counted(self, session: OpenSession) -> Gateway {
        Gateway { _counted: Some(Arc::new(session)), ..self }
    }

    /// The client's roots as local folders, when it offers roots. Roots are
    /// deprecated by SEP-2577, but clients still send them and they are how a
    /// client says which project it works in; seam uses them while they exist.
    #[allow(deprecated)]
    async fn roots(&self, peer: &rmcp::Peer<RoleServer>) -> Vec<PathBuf> {
        let offers = peer.peer_info().is_some_and(|info| info.capabilities.roots.is_some());
        if !offers {
            return Vec::new();
        }
        let mut cached = self.roots.lock().await;
        if let Some(roots) = &*cached {
            return roots.clone();
        }
        let roots = match tokio::time::timeout(ROOTS_PATIENCE, peer.list_roots()).await {
            Ok(Ok(result)) => result
                .roots
                .iter()
                .filter_map(|r| url::Url::parse(&r.uri).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok()))
                .collect(),
            Ok(Err(e)) => {
                tracing::warn!(agent = %self.agent, "roots/list failed: {e}");
                Vec::new()
            }
            Err(_) => {
                tracing::warn!(agent = %self.agent, "the client did not answer roots/list within {ROOTS_PATIENCE:?}");
                Vec::new()
            }
        };
        *cached = Some(roots.clone());
        roots
    }

    /// One tool call of this session's agent; the session's roots are asked only if the tool needs them.
    async fn call(&self, tool: &str, arguments: Map<String, Json>, cancel: CancellationToken, peer: Peer<RoleServer>) -> ToolOutput {
        let gateway = self.clone();
        let roots = Roots::new(move || {
            let (gateway, peer) = (gateway.clone(), peer.clone());
            Box::pin(async move { gateway.roots(&peer).await })
        });
        self.deployment.call(&self.agent, tool, arguments, CallContext { roots, cancel }).await
    }

    /// What this session is shown now: the roots are asked only when a live tool lists by them.
    async fn view(&self, peer: &rmcp::Peer<RoleServer>) -> View {
        let Some(live) = self.deployment.live() else { return View::default() };
        let roots = if live.lists_by_roots(&self.agent) { self.roots(peer).await } else { Vec::new() };
        live.view(&self.agent, &roots).await.unwrap_or_default()
    }
}

fn prompt(spec: &PromptSpec) -> Prompt {
    Prompt::new(&*spec.name, Some(&*spec.description), None)
}

fn tool(spec: &ToolSpec) -> Option<Tool> {
    match serde_json::from_value(serde_json::Value::Object((*spec.definition).clone())) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(tool = %spec.name, "definition is not an MCP tool, not listed: {e}");
            None
        }
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let capabilities =
            ServerCapabilities::builder().enable_prompts().enable_prompts_list_changed().enable_tools().enable_tool_list_changed().build();
        let name = format!("seam ({})", self.agent);
        ServerConfig::new(capabilities).with_server_info(Implementation::new(name, env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.view(&context.peer).await.tools;
        let listed = tools.iter().filter_map(tool).collect();
        self.shown.lock().expect("shown lock").tools = Some(tools);
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts = self.view(&context.peer).await.prompts;
        let listed = prompts.iter().map(prompt).collect();
        self.shown.lock().expect("shown lock").prompts = Some(prompts);
        Ok(ListPromptsResult::with_all_items(listed))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let Some(live) = self.deployment.live() else {
            return Err(McpError::internal_error("no generation is live", None));
        };
        let roots = if live.lists_by_roots(&self.agent) { self.roots(&context.peer).await } else { Vec::new() };
        let arguments = request.arguments.unwrap_or_default();
        match live.get_prompt(&self.agent, &request.name, arguments, &roots).await {
            Ok(json) => {
                let result: GetPromptResult = serde_json::from_value(json)
                    .map_err(|e| McpError::internal_error(format!("prompt `{}` is not an MCP prompt result: {e}", request.name), None))?;
                Ok(GetPromptResponse::Complete(result))
            }
            Err(e) => Err(McpError::invalid_params(format!("{}: {}", e.code, e.message), Some(serde_json::json!({ "code": e.code })))),
        }
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        let output = self.call(&request.name, arguments, context.ct.clone(), context.peer.clone()).await;
        let result: CallToolResult = serde_json::from_value(output.into_json())
            .map_err(|e| McpError::internal_error(format!("the result of `{}` is not an MCP result: {e}", request.name), None))?;
        Ok(CallToolResponse::Complete(result))
    }

    async fn on_roots_list_changed(&self, _: NotificationContext<RoleServer>) {
        *self.roots.lock().await = None;
        self.roots_changed.notify_one();
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.deployment.subscribe();
        // The notifier's copy does not keep the session counted: it may outlive the session a little.
        let this = Gateway { _counted: None, ..self.clone() };
        let peer = context.peer;
        tokio::spawn(async move {
            // What a session that has not listed yet would have been sent.
            let mut first = this.view(&peer).await;
            // rmcp offers no event for a session's end; a slow check lets an idle closed session's task go.
            let mut check = tokio::time::interval(SESSION_CHECK);
            check.reset();
            loop {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { break },
                    _ = this.roots_changed.notified() => {}
                    _ = check.tick() => {
                        if peer.is_transport_closed() { break }
                        continue;
                    }
                }
                let now = this.view(&peer).await;
                let (tools, prompts) = {
                    let mut shown = this.shown.lock().expect("shown lock");
                    let tools = *shown.tools.as_ref().unwrap_or(&first.tools) != now.tools;
                    let prompts = *shown.prompts.as_ref().unwrap_or(&first.prompts) != now.prompts;
                    if tools {
                        shown.tools = Some(now.tools.clone());
                    }
                    if prompts {
                        shown.prompts = Some(now.prompts.clone());
                    }
                    (tools, prompts)
                };
                first = now;
                if tools && peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
                if prompts && peer.notify_prompt_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }
}

/// `seam serve` over stdio: `tools/call` requests taken off the client's stream
/// (`seam_mcp::lane`) and answered here, on the session's gateway, once the
/// session is initialized; rmcp serves everything else, and whatever seam cannot
/// read as a call (rmcp then answers it as it would).
pub struct StdioCalls {
    gateway: Gateway,
    writer: LineWriter,
    /// The session's peer, for its roots; set when rmcp has finished the handshake.
    peer: Arc<std::sync::OnceLock<Peer<RoleServer>>>,
    /// The client said `notifications/initialized`.
    initialized: bool,
    /// Calls running, by their request id as JSON text; the client may cancel them.
    running: Arc<std::sync::Mutex<std::collections::HashMap<String, CancellationToken>>>,
    /// Rung when a call has been answered and left `running`.
    answered: Arc<tokio::sync::Notify>,
    /// One permit per call that may run at once; a call holds one until it is answered.
    room: Arc<tokio::sync::Semaphore>,
}

/// Calls one stdio client may have running at once. A call past it is
/// answered `TOOL_CALLS_EXCEEDED` at once, so a client that sends calls and
/// never reads their answers cannot make seam hold unbounded work, while its
/// other messages (cancellations, pings, answers to seam's requests) are
/// still read.
pub const MAX_CALLS_IN_FLIGHT: usize = 1024;

impl StdioCalls {
    pub fn new(gateway: Gateway, writer: LineWriter, peer: Arc<std::sync::OnceLock<Peer<RoleServer>>>) -> StdioCalls {
        StdioCalls {
            gateway,
            writer,
            peer,
            initialized: false,
            running: Arc::default(),
            answered: Arc::default(),
            room: Arc::new(tokio::sync::Semaphore::new(MAX_CALLS_IN_FLIGHT)),
        }
    }

    /// `notifications/cancelled` of a call running here. (rmcp is told too, and finds nothing of its own.)
    fn cancel(&self, params: &RawValue) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cancelled<'a> {
            #[serde(borrow)]
            request_id: &'a RawValue,
        }
        let Ok(cancelled) = serde_json::from_str::<Cancelled>(params.get()) else { return };
        if let Some(token) = self.running.lock().expect("running lock").get(cancelled.request_id.get()) {
            token.cancel();
        }
    }
}

/// A request id seam answers itself: a string or an integer, as rmcp reads them.
/// (Anything else is left to rmcp, which answers it `Invalid Request`.)
fn plain_id(id: &RawValue) -> bool {
    let text = id.get();
    let digits = text.strip_prefix('-').unwrap_or(text);
    text.starts_with('"') || (!digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()))
}

impl Divert for StdioCalls {
    fn take(&mut self, line: &[u8]) -> bool {
        let Some(peek) = Peek::of(line) else { return false };
        match peek.method.as_deref() {
            Some("tools/call") if self.initialized => {}
            Some("notifications/initialized") => {
                self.initialized = true;
                return false;
            }
            Some("notifications/cancelled") => {
                if let Some(params) = peek.params {
                    self.cancel(params);
                }
                return false;
            }
            _ => return false,
        }
        let (Some(id), Some(params), Some(peer)) = (peek.id.filter(|id| plain_id(id)), peek.params, self.peer.get()) else { return false };
        #[derive(serde::Deserialize)]
        struct Params {
            name: String,
            #[serde(default)]
            arguments: Option<Map<String, Json>>,
        }
        let Ok(params) = serde_json::from_str::<Params>(params.get()) else { return false };
        let Ok(permit) = self.room.clone().try_acquire_owned() else {
            let refused = ToolOutput::error(
                "TOOL_CALLS_EXCEEDED",
                format!("{MAX_CALLS_IN_FLIGHT} calls are already running; `{}` was not started", params.name),
            );
            self.writer.send_line(line_of(&Answer { jsonrpc: "2.0", id, result: &refused }));
            return true;
        };
        let (id, token) = (id.to_owned(), CancellationToken::new());
        self.running.lock().expect("running lock").insert(id.get().to_owned(), token.clone());
        let (gateway, writer, running, peer) = (self.gateway.clone(), self.writer.clone(), self.running.clone(), peer.clone());
        let answered = self.answered.clone();
        tokio::spawn(async move {
            // The call gets a child: the engine cancels it on a timeout, which is answered; only the client cancels `token`.
            let output = gateway.call(&params.name, params.arguments.unwrap_or_default(), token.child_token(), peer).await;
            // A request the client cancelled is not answered (as rmcp does).
            if !token.is_cancelled() {
                let answer = Answer { jsonrpc: "2.0", id: &id, result: &output };
                if let Err(e) = writer.write_line(line_of(&answer)).await {
                    tracing::warn!("the answer to a call could not be written: {e}");
                }
            }
            // Out of `running` only once answered: closing the stream waits for that.
            running.lock().expect("running lock").remove(id.get());
            answered.notify_waiters();
            drop(permit);
        });
        true
    }

    /// The client closed its input: the calls it sent before are still answered (for up to 5 s), as rmcp does its own.
    fn drain(&mut self) -> Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>> {
        let (running, answered) = (self.running.clone(), self.answered.clone());
        Some(Box::pin(async move {
            loop {
                let notified = answered.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if running.lock().expect("running lock").is_empty() {
                    return;
                }
                notified.await;
            }
        }))
    }
}

#[derive(serde::Serialize)]
struct Answer<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: &'a ToolOutput,
}

//! The MCP server side: one agent's catalog of a running deployment, served over
//! rmcp (stdio or Streamable HTTP). Lists and calls always read the live
//! generation; each session is told `tools/list_changed` (`prompts/list_changed`)
//! when, and only when, its agent's tools (prompts) differ from those it was
//! last shown. A live tool (the skill catalog) lists by the session's roots.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    Implementation, ListPromptsResult, ListToolsResult, PaginatedRequestParams, Prompt, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, Peer, ServerHandler};
use seam_engine::deploy::{CallContext, Deployment, View};
use seam_engine::runtime::{ToolOutput, ToolSpec};
use seam_engine::surface::{PromptSpec, Roots};
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
    /// One permit per call of this session that may run at once
    /// ([`MAX_CALLS_IN_FLIGHT`]); a call holds one until it is answered.
    room: Arc<tokio::sync::Semaphore>,
    /// Set by the session's first `notifications/initialized`: a client that
    /// repeats it gets no second notifier (each lived as long as the session).
    initialized: Arc<std::sync::atomic::AtomicBool>,
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
        Gateway {
            deployment,
            agent,
            roots: Arc::default(),
            roots_changed: Arc::default(),
            shown: Arc::default(),
            _counted: None,
            room: Arc::new(tokio::sync::Semaphore::new(MAX_CALLS_IN_FLIGHT)),
            initialized: Arc::default(),
        }
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

/// A tool's output as rmcp's result.
fn tool_result(output: ToolOutput, tool: &str) -> Result<CallToolResult, McpError> {
    serde_json::from_value(output.into_json())
        .map_err(|e| McpError::internal_error(format!("the result of `{tool}` is not an MCP result: {e}"), None))
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
        // Taken before anything else: over stdio, calls start on one thread in the order they were read.
        let Ok(_permit) = self.room.clone().try_acquire_owned() else {
            let refused = ToolOutput::error(
                "TOOL_CALLS_EXCEEDED",
                format!("{MAX_CALLS_IN_FLIGHT} calls are already running; `{}` was not started", request.name),
            );
            return tool_result(refused, &request.name).map(CallToolResponse::Complete);
        };
        let arguments = request.arguments.unwrap_or_default();
        let output = self.call(&request.name, arguments, context.ct.clone(), context.peer.clone()).await;
        tool_result(output, &request.name).map(CallToolResponse::Complete)
    }

    async fn on_roots_list_changed(&self, _: NotificationContext<RoleServer>) {
        *self.roots.lock().await = None;
        self.roots_changed.notify_one();
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.initialized.swap(true, std::sync::atomic::Ordering::SeqCst) {
            tracing::debug!(agent = %self.agent, "a repeated notifications/initialized is ignored");
            return;
        }
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

/// Calls one session may have running at once (a stdio client is one
/// session). A call past it is answered `TOOL_CALLS_EXCEEDED` at once, so a
/// client that sends calls and never reads their answers cannot make seam
/// hold unbounded work, while its other messages (cancellations, pings,
/// answers to seam's requests) are still read.
pub const MAX_CALLS_IN_FLIGHT: usize = 1024;

/// The requests [`MAX_CALLS_IN_FLIGHT`] bounds, which the stdio backlog
/// (`seam_mcp::lane::Backlog`) owes apart from the others: reckoned in bytes
/// like them, 1,024 calls running would reach [`MAX_BYTES_OWED`], and the
/// backlog would stop reading before the call past the cap could be refused.
pub fn capped(request: &ClientRequest) -> bool {
    matches!(request, ClientRequest::CallToolRequest(_))
}

/// Bytes seam may owe one stdio client (answers waiting for it to read them,
/// and answers rmcp has yet to give to requests other than calls,
/// `seam_mcp::lane::Backlog`) before it
/// takes no more of its requests. One answer past it still goes out whole, so
/// a catalog of any size is listed; the bound only lowers how many requests a
/// client that does not read can have seam answer ahead of it. As large as
/// the longest line seam reads.
pub const MAX_BYTES_OWED: usize = seam_mcp::lane::MAX_LINE;

#[cfg(test)]
mod tests {
    use super::Gateway;

    /// A client that repeats `notifications/initialized` starts one notifier,
    /// not one each: every notifier lived as long as the session, so a client
    /// repeating it grew seam without bound.
    #[tokio::test]
    async fn a_session_has_one_notifier_however_often_it_says_initialized() {
        use rmcp::ServiceExt as _;
        let dir = std::env::temp_dir().join(format!("seam-initialized-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.yaml");
        std::fs::write(&file, "seam: 1\n").unwrap();
        let engine = std::sync::Arc::new(crate::engine());
        let env = std::sync::Arc::new(seam_engine::load::ProcessEnv);
        let deployment = seam_engine::deploy::Deployment::new(engine, &file, env, seam_engine::deploy::Options::default());
        deployment.reload().await;
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        let gateway = Gateway::new(deployment, "default".to_owned());
        let server = tokio::spawn(async move { gateway.serve(server_io).await });
        // The client's handshake sends the first `initialized`.
        let client = ().serve(client_io).await.unwrap();
        let server = server.await.unwrap().unwrap();
        let settled = || async {
            // A request answered after the notifications sent before it: they have been handled.
            client.peer().list_tools(None).await.unwrap();
            tokio::runtime::Handle::current().metrics().num_alive_tasks()
        };
        let before = settled().await;
        for _ in 0..100 {
            client.peer().notify_initialized().await.unwrap();
        }
        let after = settled().await;
        assert!(after < before + 10, "{before} tasks before 100 repeats, {after} after");
        server.cancellation_token().cancel();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

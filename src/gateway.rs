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
use seam_engine::deploy::{CallContext, Deployment, Source, View};
use seam_engine::runtime::{ToolOutput, ToolSpec};
use seam_engine::surface::{PromptSpec, Roots};
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
    /// Over HTTP, the table of seam's sessions: once initialized, the session
    /// enters its gateway and peer there, so that its plain calls are answered
    /// by seam (`crate::sessions`).
    sessions: Option<Arc<crate::sessions::Sessions>>,
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
            sessions: None,
            room: Arc::new(tokio::sync::Semaphore::new(MAX_CALLS_IN_FLIGHT)),
            initialized: Arc::default(),
        }
    }

    /// This gateway entered in `sessions` once its session is initialized.
    pub fn listed_in(self, sessions: Arc<crate::sessions::Sessions>) -> Gateway {
        Gateway { sessions: Some(sessions), ..self }
    }

    /// The roots a call of `tool` can have without asking the client: none when
    /// the client offers none; those seam already has, as they are now (a later
    /// `roots/list_changed` does not make the call ask); none for a mount's tool,
    /// which never asks. `None` when the call could need to ask: roots are asked
    /// on the stream of the request that needs them, which only rmcp has.
    pub fn roots_at_hand(&self, peer: &Peer<RoleServer>, tool: &str) -> Option<Roots> {
        if peer.peer_info().is_none_or(|info| info.capabilities.roots.is_none()) {
            return Some(Roots::default());
        }
        if let Ok(cached) = self.roots.try_lock()
            && let Some(roots) = &*cached
        {
            let roots = roots.clone();
            return Some(Roots::new(move || Box::pin(std::future::ready(roots.clone()))));
        }
        let asks = self
            .deployment
            .live()
            .and_then(|g| g.lookup(&self.agent, tool))
            .flatten()
            .is_some_and(|e| !matches!(e.source, Source::Mount(_)));
        (!asks).then(Roots::default)
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
        self.call_with_roots(tool, arguments, cancel, roots).await
    }

    /// One tool call of this session's agent, with the roots given.
    pub async fn call_with_roots(&self, tool: &str, arguments: Map<String, Json>, cancel: CancellationToken, roots: Roots) -> ToolOutput {
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
        let this = Gateway { _counted: None, sessions: None, ..self.clone() };
        let peer = context.peer;
        if let Some(sessions) = &self.sessions
            && let Some(id) =
                context.extensions.get::<axum::http::request::Parts>().and_then(|parts| crate::sessions::session_id(&parts.headers))
        {
            sessions.initialized(id, this.clone(), peer.clone());
        }
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

/// The calls of one session that seam answers itself (over stdio, every call
/// once the session is initialized; over HTTP, the plain ones), by request id
/// as JSON text, so that the client may cancel them.
///
/// A client must not reuse the id of a request in flight; one that does gets
/// both calls answered, and its cancellation of that id cancels both (the id
/// names them both). Each id's entry counts the calls under it, so it leaves
/// with the last of them.
#[derive(Clone, Default)]
pub struct Running {
    calls: Arc<std::sync::Mutex<std::collections::HashMap<String, (CancellationToken, usize)>>>,
    /// Rung when a call has been answered and left.
    answered: Arc<tokio::sync::Notify>,
    /// Cancelled when the session ends: every call's token is its child.
    session: CancellationToken,
}

impl Running {
    /// The calls of a session that `session` ends.
    pub fn within(session: CancellationToken) -> Running {
        Running { session, ..Running::default() }
    }

    /// A call begins; it leaves when what this returns is dropped, once it
    /// has been answered (or will not be), however it ended.
    pub fn start(&self, id: &RawValue) -> RunningCall {
        let key = id_key(id);
        let token = {
            let mut calls = self.calls.lock().expect("running lock");
            let (token, count) = calls.entry(key.clone()).or_insert_with(|| (self.session.child_token(), 0));
            // An id reused after its cancellation starts afresh: the cancelled call is on its way out.
            if token.is_cancelled() && !self.session.is_cancelled() {
                *token = self.session.child_token();
            }
            *count += 1;
            token.clone()
        };
        RunningCall { token, key, running: self.clone() }
    }

    /// The session has ended: every call of it is cancelled.
    pub fn end(&self) {
        self.session.cancel();
    }

    /// Resolves once the session has ended.
    pub async fn session_ended(&self) {
        self.session.cancelled().await
    }

    /// `notifications/cancelled`'s params: the call it names is cancelled, if it runs here.
    pub fn cancel(&self, params: &RawValue) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cancelled<'a> {
            #[serde(borrow)]
            request_id: &'a RawValue,
        }
        let Ok(cancelled) = serde_json::from_str::<Cancelled>(params.get()) else { return };
        if let Some((token, _)) = self.calls.lock().expect("running lock").get(&id_key(cancelled.request_id)) {
            token.cancel();
        }
    }
}

/// A call in [`Running`], there until this is dropped.
pub struct RunningCall {
    /// Cancelled by the client's `notifications/cancelled`, or by the session's end.
    pub token: CancellationToken,
    key: String,
    running: Running,
}

impl Drop for RunningCall {
    fn drop(&mut self) {
        let mut calls = self.running.calls.lock().expect("running lock");
        if let Some((_, count)) = calls.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                calls.remove(&self.key);
            }
        }
        drop(calls);
        self.running.answered.notify_waiters();
    }
}

/// A request id as rmcp compares ids: a string by its value (escapes read), a
/// number by its integer value (`1`, `1.0` and `1e0` are one id); anything else
/// by its text.
fn id_key(id: &RawValue) -> String {
    let text = id.get();
    // The ids clients send, read without a parse: an integer as written (JSON has no leading zeros), a string without escapes.
    if !text.is_empty() && text != "-0" && text.strip_prefix('-').unwrap_or(text).bytes().all(|b| b.is_ascii_digit()) {
        return text.to_owned();
    }
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && !inner.contains('\\')
    {
        return format!("\"{inner}");
    }
    match serde_json::from_str::<Json>(text) {
        Ok(Json::String(s)) => format!("\"{s}"),
        // A float stands for an integer only where f64 holds every integer (to 2^53), as rmcp reads it.
        Ok(Json::Number(n)) => {
            match n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0).map(|f| f as i64)) {
                Some(i) => i.to_string(),
                None => id.get().to_owned(),
            }
        }
        _ => id.get().to_owned(),
    }
}

/// A `tools/call` request seam answers itself: read from the message as
/// written, with nothing seam would not act on. A message with anything more
/// (a task, `_meta` beyond a progress token, a field rmcp knows and seam does
/// not) or an id rmcp reads differently is left to rmcp, which serves it as it
/// would any request. (seam sends no progress, as over rmcp.)
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainCall<'a> {
    #[serde(borrow)]
    jsonrpc: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    pub id: &'a RawValue,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    pub params: CallParams,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallParams {
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Map<String, Json>>,
    #[serde(default, rename = "_meta")]
    meta: Option<Map<String, Json>>,
}

impl<'a> PlainCall<'a> {
    pub fn of(message: &'a [u8]) -> Option<PlainCall<'a>> {
        let call: PlainCall = serde_json::from_slice(message).ok()?;
        let plain_meta = call.params.meta.as_ref().is_none_or(|meta| meta.keys().all(|k| k == "progressToken"));
        (call.jsonrpc == "2.0" && call.method == "tools/call" && plain_id(call.id) && plain_meta).then_some(call)
    }
}

/// A request id seam answers itself: a string or an integer, as rmcp reads them.
/// (Anything else is left to rmcp, which answers it `Invalid Request`, or
/// refuses the body: a string with a lone surrogate escape.)
fn plain_id(id: &RawValue) -> bool {
    let text = id.get();
    let digits = text.strip_prefix('-').unwrap_or(text);
    match text.strip_prefix('"') {
        Some(inner) => !inner.contains('\\') || serde_json::from_str::<String>(text).is_ok(),
        None => !digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// The result as rmcp gives it to a peer of a protocol version before
/// 2026-07-28 (every peer of a session): `structuredContent` that is not an
/// object is dropped, and given as a text block first unless the first block
/// already says it.
pub fn for_session_peer(output: &mut ToolOutput) {
    let Some(value) = output.structured_content.take_if(|value| !value.is_object()) else { return };
    let said = output
        .content
        .first()
        .filter(|block| block["type"] == "text")
        .and_then(|block| block["text"].as_str())
        .is_some_and(|text| serde_json::from_str::<Json>(text).is_ok_and(|v| v == value));
    if !said {
        output.content.insert(0, serde_json::json!({ "type": "text", "text": value.to_string() }));
    }
}

/// Calls one session may have running at once (a stdio client is one
/// session). A call past it is answered `TOOL_CALLS_EXCEEDED` at once, so a
/// client that sends calls and never reads their answers cannot make seam
/// hold unbounded work, while its other messages (cancellations, pings,
/// answers to seam's requests) are still read: the stdio backlog leaves calls
/// to this cap ([`capped`]).
pub const MAX_CALLS_IN_FLIGHT: usize = 1024;

/// The requests [`MAX_CALLS_IN_FLIGHT`] bounds, which the stdio backlog
/// (`seam_mcp::lane::Backlog`) therefore does not reckon: were calls reckoned
/// there too, the backlog would stop reading before the call past the cap
/// could be refused.
pub fn capped(request: &ClientRequest) -> bool {
    matches!(request, ClientRequest::CallToolRequest(_))
}

/// Bytes seam may owe one stdio client (answers waiting for it to read them,
/// and answers rmcp has yet to give, `seam_mcp::lane::Backlog`) before it
/// takes no more of its requests. One answer past it still goes out whole, so
/// a catalog of any size is listed; the bound only lowers how many requests a
/// client that does not read can have seam answer ahead of it. As large as
/// the longest line seam reads.
pub const MAX_BYTES_OWED: usize = seam_mcp::lane::MAX_LINE;

/// The answer to a call seam answered itself.
#[derive(serde::Serialize)]
pub struct Answer<'a> {
    pub jsonrpc: &'static str,
    pub id: &'a RawValue,
    pub result: &'a ToolOutput,
}

#[cfg(test)]
mod tests {
    use super::{Gateway, PlainCall, Running, ToolOutput, for_session_peer, id_key};
    use serde_json::json;
    use serde_json::value::RawValue;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn ids_match_as_rmcp_reads_them() {
        assert_eq!(id_key(&raw("1")), id_key(&raw("1.0")));
        assert_eq!(id_key(&raw("1")), id_key(&raw("1e0")));
        assert_eq!(id_key(&raw("0")), id_key(&raw("-0")));
        assert_eq!(id_key(&raw(r#""a""#)), id_key(&raw(r#""\u0061""#)));
        assert_ne!(id_key(&raw("1")), id_key(&raw(r#""1""#)), "a number and a string are two ids");
        assert_eq!(id_key(&raw("9007199254740992")), id_key(&raw("9007199254740992.0")));
        assert_ne!(id_key(&raw("100000000000000000")), id_key(&raw("1e17")), "past 2^53 a float is no integer id");
    }

    /// A client that reuses the id of a call in flight: its cancellation reaches
    /// both calls, and the id stays cancellable until the last of them leaves.
    #[test]
    fn calls_sharing_an_id_are_cancelled_together_and_leave_one_by_one() {
        let running = Running::default();
        let (first, second) = (running.start(&raw("7")), running.start(&raw("7.0")));
        let other = running.start(&raw(r#""7""#));
        drop(first);
        running.cancel(&raw(r#"{"requestId":7}"#));
        assert!(second.token.is_cancelled(), "the call still running under the id is cancelled");
        assert!(!other.token.is_cancelled(), "the string id \"7\" is another id");
        let again = running.start(&raw("7"));
        assert!(!again.token.is_cancelled(), "an id reused after its cancellation starts afresh");
        drop((second, other));
        running.cancel(&raw(r#"{"requestId":7}"#));
        assert!(again.token.is_cancelled(), "the id's entry stayed while a call ran under it");
        drop(again);
        assert!(running.calls.lock().unwrap().is_empty(), "the last call under each id took its entry");
    }

    #[test]
    fn a_plain_call_has_nothing_seam_would_not_act_on() {
        let call = |params: serde_json::Value, id: &str| {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
            PlainCall::of(text.as_bytes()).is_some()
        };
        let ping = json!({ "name": "ping", "arguments": { "m": 1 } });
        assert!(call(ping.clone(), "7") && call(ping.clone(), r#""x""#) && call(json!({ "name": "ping" }), "-3"));
        assert!(call(json!({ "name": "ping", "_meta": { "progressToken": 5 } }), "1"), "a progress token (seam sends none)");
        assert!(!call(json!({ "name": "ping", "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }), "1"));
        assert!(!call(json!({ "name": "ping", "task": {} }), "1"), "a task");
        assert!(!call(ping.clone(), "1.5") && !call(ping.clone(), "null") && !call(ping.clone(), "{}"));
        assert!(!call(ping.clone(), r#""\ud800""#), "a lone surrogate: rmcp refuses the body");
        assert!(call(ping.clone(), r#""\u00e9""#));
        assert!(PlainCall::of(br#"{"id":1,"method":"tools/call","params":{"name":"ping"}}"#).is_none(), "no jsonrpc");
        assert!(PlainCall::of(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"p"}}"#).is_none());
    }

    /// seam's answers have the shape rmcp gives a session's peer, structured content included.
    #[test]
    fn results_are_shaped_as_rmcp_shapes_them_for_a_session_peer() {
        let text = |t: &str| json!({ "type": "text", "text": t });
        let outputs = [
            ToolOutput { content: vec![text("hi")], structured_content: Some(json!({ "a": 1 })), is_error: false },
            ToolOutput { content: vec![text("hi")], structured_content: Some(json!([1, 2])), is_error: false },
            ToolOutput { content: vec![text("[1,2]")], structured_content: Some(json!([1, 2])), is_error: false },
            ToolOutput { content: vec![], structured_content: Some(json!("s")), is_error: true },
            ToolOutput {
                content: vec![json!({ "type": "image", "data": "AA==", "mimeType": "image/png" })],
                structured_content: Some(json!(3)),
                is_error: false,
            },
        ];
        for output in outputs {
            let mut rmcp_shaped = rmcp::model::ServerResult::CallToolResult(serde_json::from_value(output.clone().into_json()).unwrap());
            rmcp_shaped.strip_non_object_output_for_legacy_peer();
            let mut seam_shaped = output.clone();
            for_session_peer(&mut seam_shaped);
            assert_eq!(serde_json::to_value(&seam_shaped).unwrap(), serde_json::to_value(&rmcp_shaped).unwrap(), "{output:?}");
        }
    }

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

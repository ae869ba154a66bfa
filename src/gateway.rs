//! The MCP server side: one agent's catalog of a running deployment, served over
//! rmcp (stdio or Streamable HTTP). Lists and calls always read the live
//! generation; each session is told `tools/list_changed` when, and only when,
//! its agent's catalog differs from the one it was last shown.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use seam_engine::deploy::{CallContext, Deployment};
use seam_engine::runtime::ToolSpec;
use seam_engine::surface::Roots;

/// How often a session's notifier checks whether its session has ended.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone)]
pub struct Gateway {
    pub deployment: Arc<Deployment>,
    pub agent: String,
    /// This session's client roots, asked once and again after `roots/list_changed`.
    roots: Arc<tokio::sync::Mutex<Option<Vec<PathBuf>>>>,
}

/// How long a client may take to answer `roots/list`; past it the call goes on without roots.
const ROOTS_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

impl Gateway {
    /// A gateway for one session (each session keeps its own roots).
    pub fn new(deployment: Arc<Deployment>, agent: String) -> Gateway {
        Gateway { deployment, agent, roots: Arc::default() }
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

    fn catalog(&self) -> Vec<ToolSpec> {
        let live = self.deployment.live();
        live.and_then(|g| g.catalog(&self.agent)).map(|c| c.into_iter().map(|e| e.spec).collect()).unwrap_or_default()
    }
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
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let name = format!("seam ({})", self.agent);
        ServerConfig::new(capabilities).with_server_info(Implementation::new(name, env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.catalog().iter().filter_map(tool).collect()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        let (gateway, peer) = (self.clone(), context.peer.clone());
        let roots = Roots::new(move || {
            let (gateway, peer) = (gateway.clone(), peer.clone());
            Box::pin(async move { gateway.roots(&peer).await })
        });
        let call = CallContext { roots, cancel: context.ct.clone() };
        let output = self.deployment.call(&self.agent, &request.name, arguments, call).await;
        let result: CallToolResult = serde_json::from_value(output.into_json())
            .map_err(|e| McpError::internal_error(format!("the result of `{}` is not an MCP result: {e}", request.name), None))?;
        Ok(CallToolResponse::Complete(result))
    }

    async fn on_roots_list_changed(&self, _: NotificationContext<RoleServer>) {
        *self.roots.lock().await = None;
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.deployment.subscribe();
        let this = self.clone();
        let peer = context.peer;
        tokio::spawn(async move {
            let mut shown = this.catalog();
            // rmcp offers no event for a session's end; a slow check lets an idle closed session's task go.
            let mut check = tokio::time::interval(SESSION_CHECK);
            check.reset();
            loop {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { break },
                    _ = check.tick() => {
                        if peer.is_transport_closed() { break }
                        continue;
                    }
                }
                let now = this.catalog();
                if now == shown {
                    continue;
                }
                shown = now;
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }
}

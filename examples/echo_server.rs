//! A fast MCP upstream for the added-latency benchmark (`scripts/bench-added-latency`):
//! one `echo` tool, written with rmcp (the official Rust SDK) and served over
//! Streamable HTTP on 127.0.0.1. It does as little as a server can, so that what a
//! client measures through `seam serve`, less what it measures calling this server
//! directly, is seam's own cost.
//!
//!   cargo run --release --example echo_server [PORT]
//!
//! Prints `listening at http://127.0.0.1:PORT/mcp` on stderr once it accepts.

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::model::*;
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};

#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params(format!("no tool `{}`", request.name), None));
        }
        let message = request.arguments.as_ref().and_then(|a| a.get("message")).and_then(|m| m.as_str()).unwrap_or_default();
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(format!("Echo: {message}"))])))
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args().nth(1).map_or(Ok(0), |p| p.parse()).map_err(std::io::Error::other)?;
    let schema = serde_json::json!({
        "type": "object",
        "properties": { "message": { "type": "string", "description": "What to echo back" } },
        "required": ["message"],
    });
    let schema: JsonObject = serde_json::from_value(schema).map_err(std::io::Error::other)?;
    let tools = Arc::new(vec![Tool::new("echo", "Echoes back the message", Arc::new(schema))]);
    let service = StreamableHttpService::new(
        move || Ok(Echo { tools: tools.clone() }),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("listening at http://{}/mcp", listener.local_addr()?);
    // Replies go out as they are written (no Nagle wait), as a server tuned for latency sends them.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await
}

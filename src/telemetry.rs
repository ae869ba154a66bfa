//! Traces, by the OpenTelemetry semantic conventions for MCP, exported over OTLP/HTTP
//! (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set; the other standard `OTEL_*` variables (headers, timeout, the batch's delay,
//! `OTEL_SERVICE_NAME`) are read by the SDK. Unset, nothing is built and every function
//! here returns at its first line.
//!
//! - A client's request is a SERVER span (`Observed`, around the gateway), named
//!   `{mcp.method.name}` or, for a call, `tools/call {gen_ai.tool.name}`, continuing the
//!   client's trace from `params._meta.traceparent` (SEP-414). Its context rides in the
//!   request's extensions (`ServerContext`) to the call's link to its client.
//! - seam's request to a mount's server is a CLIENT span, child of that one, started by
//!   the mount through its call's link (`ClientLink::upstream_span`); the request carries
//!   it in its own `_meta.traceparent`, so the server's spans are its children.
//!
//! - seam's own work, a reload (`seam.reload`) and a mount's start (`seam.mount.start`),
//!   are `tracing` spans of the engine's, exported through the log's subscriber
//!   (`crate::log::init_exporting`).
//!
//! One trace then spans client → seam → server; a 2026-07-28 client's retries each
//! continue it (each carries the client's `traceparent`), and the call's upstream span
//! stays the child of the round that started it.

use std::sync::OnceLock;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use rmcp::service::{RequestContext, RoleServer};

/// The tracer, when tracing is on (set once, at `start`).
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Tracing, on until dropped: the spans not yet exported are flushed then.
pub struct Tracing(SdkTracerProvider);

impl Tracing {
    /// The tracer seam's own spans (reloads, mount starts) are exported with, through the log.
    pub fn tracer(&self) -> SdkTracer {
        TRACER.get().expect("set at start").clone()
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        if let Err(e) = self.0.shutdown() {
            tracing::warn!("traces not exported at the stop: {e}");
        }
    }
}

/// Whether the environment asks for traces.
fn asked() -> bool {
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// Turns tracing on when the environment asks for it. Called outside any async runtime:
/// the exporter's HTTP client is a blocking one, used from the batch's own thread.
pub fn start() -> Result<Option<Tracing>, opentelemetry_otlp::ExporterBuildError> {
    if !asked() || TRACER.get().is_some() {
        return Ok(None);
    }
    use opentelemetry_otlp::WithExportConfig as _;
    let exporter =
        opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(opentelemetry_otlp::Protocol::HttpBinary).build()?;
    // "seam", unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names it (the builder reads both).
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some_and(|v| !v.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let resource = opentelemetry_sdk::Resource::builder();
    let resource = if named { resource } else { resource.with_service_name("seam") }.build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer =
        provider.tracer_with_scope(opentelemetry::InstrumentationScope::builder("seam").with_version(env!("CARGO_PKG_VERSION")).build());
    let _ = TRACER.set(tracer);
    Ok(Some(Tracing(provider)))
}

/// A SERVER span's context, carried in its request's extensions to what the request does.
#[derive(Clone)]
pub struct ServerContext(Context);

/// A client's request being answered: ended (with its outcome) by `end`, or when dropped.
pub struct ServerSpan(Context);

/// `_meta` read as W3C Trace Context's carrier.
struct MetaCarrier<'a>(&'a rmcp::model::RequestMetaObject);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(serde_json::Value::as_str)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// A request's id as its span carries it: the client's to choose, so at most
/// `MAX_REQUEST_ID_CHARS` characters of it.
fn request_id(id: &rmcp::model::RequestId) -> String {
    id.to_string().chars().take(MAX_REQUEST_ID_CHARS).collect()
}

const MAX_REQUEST_ID_CHARS: usize = 64;

/// Starts the SERVER span of a request of `method` (a call's `tool`: its name as the
/// agent's catalog has it, `_other` if none), continuing the client's trace, and puts its
/// context in the request's extensions. `None` when tracing is off.
pub fn server_span(method: &'static str, tool: Option<&str>, context: &mut RequestContext<RoleServer>) -> Option<ServerSpan> {
    let tracer = TRACER.get()?;
    let parent = TraceContextPropagator::new().extract(&MetaCarrier(&context.meta));
    let name = match tool {
        Some(tool) => format!("{method} {tool}"),
        None => method.to_owned(),
    };
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", method),
        KeyValue::new("jsonrpc.request.id", request_id(&context.id)),
        KeyValue::new("network.transport", "tcp"),
    ];
    if let Some(tool) = tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
    }
    let session = context.extensions.get::<axum::http::request::Parts>().and_then(|p| p.headers.get("mcp-session-id")?.to_str().ok());
    // Hashed: to an agent with no token, its session id is all it shows to be the session's.
    if let Some(session) = session {
        let hashed = blake3::hash(session.as_bytes()).to_hex();
        attributes.push(KeyValue::new("mcp.session.id", hashed[..32].to_owned()));
    }
    let span = tracer.span_builder(name).with_kind(SpanKind::Server).with_attributes(attributes).start_with_context(tracer, &parent);
    let cx = parent.with_span(span);
    context.extensions.insert(ServerContext(cx.clone()));
    Some(ServerSpan(cx))
}

impl ServerSpan {
    /// Ends it; `error_type` when it failed (a JSON-RPC error's code, `tool_error`).
    pub fn end(self, error_type: Option<&str>) {
        let span = self.0.span();
        if let Some(error_type) = error_type {
            span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
            span.set_status(Status::error(error_type.to_owned()));
        }
        span.end();
    }
}

/// seam's request to a mount's server, a CLIENT span, ended when dropped.
struct UpstreamSpan(Context);

impl seam_engine::runtime::UpstreamSpan for UpstreamSpan {
    fn trace_context(&self) -> (String, Option<String>) {
        struct Fields(Vec<(String, String)>);
        impl Injector for Fields {
            fn set(&mut self, key: &str, value: String) {
                self.0.push((key.to_owned(), value));
            }
        }
        let mut fields = Fields(Vec::new());
        TraceContextPropagator::new().inject_context(&self.0, &mut fields);
        let field = |name: &str| fields.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        (field("traceparent").unwrap_or_default(), field("tracestate").filter(|s| !s.is_empty()))
    }
    fn failed(&self, error_type: &str) {
        let span = self.0.span();
        span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
        span.set_status(Status::error(error_type.to_owned()));
    }
}

impl Drop for UpstreamSpan {
    fn drop(&mut self) {
        self.0.span().end();
    }
}

/// The CLIENT span of seam's request `method` (about `target`) to mount `mount`'s server,
/// child of the SERVER span `parent`. `None` when tracing is off.
pub fn upstream_span(
    parent: &ServerContext,
    mount: &str,
    method: &str,
    target: &str,
) -> Option<Box<dyn seam_engine::runtime::UpstreamSpan>> {
    let tracer = TRACER.get()?;
    let name = if target.is_empty() { method.to_owned() } else { format!("{method} {target}") };
    let mut attributes = vec![KeyValue::new("mcp.method.name", method.to_owned()), KeyValue::new("seam.mount", mount.to_owned())];
    if method == "tools/call" && !target.is_empty() {
        attributes.push(KeyValue::new("gen_ai.tool.name", target.to_owned()));
    }
    let span = tracer.span_builder(name).with_kind(SpanKind::Client).with_attributes(attributes).start_with_context(tracer, &parent.0);
    Some(Box::new(UpstreamSpan(parent.0.with_span(span))))
}

#[cfg(test)]
mod tests {
    /// A request id is carried whole up to `MAX_REQUEST_ID_CHARS` characters, and cut there past it.
    #[test]
    fn a_request_id_is_carried_up_to_its_bound() {
        use rmcp::model::NumberOrString;
        let id = |text: String| super::request_id(&NumberOrString::String(text.into()));
        let at_limit = "é".repeat(super::MAX_REQUEST_ID_CHARS);
        assert_eq!(id(at_limit.clone()), at_limit);
        assert_eq!(id(format!("{at_limit}x")), at_limit);
        assert_eq!(super::request_id(&NumberOrString::Number(7)), "7");
    }
}

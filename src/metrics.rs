//! `/metrics`: Prometheus's view of what passes through the HTTP front end, by the
//! OpenTelemetry semantic conventions for MCP where they name a metric, with
//! Prometheus's names and units. Every request a client sends is measured around the
//! gateway (`Observed`, a `ServerHandler` that forwards each method to `Gateway`: rmcp's
//! `StreamableHttpService` serves a `ServerHandler`), lists and `initialize` included.
//! What seam sends its mounts is measured by a hook of the call stage (`MountDurations`),
//! sessions when they end (`Tally::when_session_ends`). What the deployment is (its
//! generation, reloads, calls in flight, mounts' states and what they counted) is read at
//! each scrape (`DeploymentNow`).
//!
//! Every label's values are bounded: methods are the handler's own, tools are names the
//! agent's live catalog has (any other is `_other`), agents are the composition's. No
//! label carries an argument, a URL or a secret.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use seam_engine::chain::{Answer, Answered, Hook, Passed};
use seam_engine::deploy::{Deployment, Source};
use seam_engine::offers::RequestError;

use crate::gateway::Gateway;

/// The bucket bounds, in seconds, the conventions give `mcp.server.operation.duration`.
const DURATION_BUCKETS: [f64; 14] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The label of anything outside a bounded set.
const OTHER: &str = "_other";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerOperation {
    mcp_method_name: &'static str,
    /// The tool called (`tools/call`), empty for any other method.
    gen_ai_tool_name: String,
    agent: String,
    /// Empty when it succeeded; `tool_error` for a result with `isError`; else the JSON-RPC error code.
    error_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClientOperation {
    mcp_method_name: &'static str,
    mount: String,
    /// As `ServerOperation`'s; a failure seam made at the mount is its code.
    error_type: String,
}

/// seam as its mounts' client: how long each mount took to answer what seam sent it
/// (`mcp.client.operation.duration`, by mount). A hook of the call stage, outermost, so
/// that it sees every request that reached a mount, whichever hook let it through.
pub struct MountDurations(Family<ClientOperation, Histogram>);

impl Default for MountDurations {
    fn default() -> MountDurations {
        MountDurations(Family::new_with_constructor(|| Histogram::new(DURATION_BUCKETS)))
    }
}

impl Hook for MountDurations {
    fn after(&self, passed: &Passed<'_>, answer: &mut Answered) {
        let (Source::Mount(mount), Some(took)) = (passed.source, passed.served_in) else { return };
        let error_type = match answer {
            Err(e) => request_error_type(e),
            Ok(Answer::Tool(output)) if output.is_error => output.code.map_or("tool_error", |code| code.code).to_owned(),
            Ok(_) => String::new(),
        };
        let operation = ClientOperation { mcp_method_name: passed.request.method(), mount: mount.clone(), error_type };
        self.0.get_or_create(&operation).observe(took.as_secs_f64());
    }
}

/// A request's error as `error_type`: a server's JSON-RPC code, or what kept seam from an answer.
fn request_error_type(e: &RequestError) -> String {
    match e {
        // JSON-RPC's reserved codes, MCP's among them; any other a server makes up is one label.
        RequestError::Upstream { code, .. } if (-32768..=-32000).contains(code) => code.to_string(),
        RequestError::Upstream { .. } => OTHER.to_owned(),
        RequestError::Unknown(_) => "unknown".to_owned(),
        RequestError::Unavailable(_) => "unavailable".to_owned(),
        RequestError::Refused(_) | RequestError::Denied { .. } => "refused".to_owned(),
        RequestError::TimedOut(_) => "timed_out".to_owned(),
    }
}

/// One front end's metrics.
pub struct Metrics {
    registry: Registry,
    server: Family<ServerOperation, Histogram>,
}

impl Metrics {
    /// The metrics of a front end whose sessions share `clients`, on a deployment whose
    /// call stage has `mounts` among its hooks.
    pub fn new(deployment: Arc<Deployment>, clients: Arc<crate::gateway::Clients>, mounts: &MountDurations) -> Arc<Metrics> {
        let mut registry = Registry::default();
        let server = Family::<ServerOperation, Histogram>::new_with_constructor(|| Histogram::new(DURATION_BUCKETS));
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "How long seam took to answer an MCP request (mcp.server.operation.duration)",
            Unit::Seconds,
            server.clone(),
        );
        registry.register_with_unit(
            "mcp_client_operation_duration",
            "How long a mount took to answer what seam sent it (mcp.client.operation.duration)",
            Unit::Seconds,
            mounts.0.clone(),
        );
        let sessions = Family::<AgentLabel, Histogram>::new_with_constructor(|| Histogram::new(DURATION_BUCKETS));
        registry.register_with_unit(
            "mcp_server_session_duration",
            "How long the MCP sessions that ended lasted (mcp.server.session.duration)",
            Unit::Seconds,
            sessions.clone(),
        );
        let known = deployment.clone();
        clients.tally.when_session_ends(Box::new(move |agent, lasted| {
            sessions.get_or_create(&agent_label(&known, agent)).observe(lasted.as_secs_f64());
        }));
        registry.register_collector(Box::new(ClientsNow { deployment: deployment.clone(), clients }));
        registry.register_collector(Box::new(DeploymentNow(deployment)));
        Arc::new(Metrics { registry, server })
    }

    /// The text a scrape gets (OpenMetrics).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).expect("writing to a String does not fail");
        text
    }
}

/// What the deployment is at a scrape.
struct DeploymentNow(Arc<Deployment>);

impl std::fmt::Debug for DeploymentNow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeploymentNow")
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Decided {
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApprovalAnswer {
    answer: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MountState {
    mount: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MountLabel {
    mount: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MountFailure {
    mount: String,
    code: &'static str,
}

impl prometheus_client::collector::Collector for DeploymentNow {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let live = self.0.live();
        let generation = ConstGauge::new(live.as_ref().map_or(0, |g| g.number as i64));
        generation.encode(encoder.encode_descriptor(
            "seam_generation",
            "The live generation's number (0: none yet)",
            None,
            MetricType::Gauge,
        )?)?;
        let in_flight = ConstGauge::new(live.as_ref().map_or(0, |g| g.calls_in_flight() as i64));
        in_flight.encode(encoder.encode_descriptor(
            "seam_calls_in_flight",
            "Calls running on the live generation",
            None,
            MetricType::Gauge,
        )?)?;
        let reloads = self.0.reload_counts().map(|(kind, n)| (Outcome { outcome: kind.as_str() }, n));
        encode_counters(&mut encoder, "seam_reloads", "Reloads, the start included, by outcome", reloads)?;
        let decisions = self.0.decision_counts().map(|(decision, n)| (Decided { decision: decision.as_str() }, n));
        let help = "Requests to mounts and services' tools, by what the call stage made of them (as the audit trail names it)";
        encode_counters(&mut encoder, "seam_decisions", help, decisions)?;
        let approvals = self.0.approval_counts().map(|(answer, n)| (ApprovalAnswer { answer }, n));
        let help = "Calls a person was asked about (`approve`), by answer: yes, no, timeout, unavailable";
        encode_counters(&mut encoder, "seam_approvals", help, approvals)?;
        let mut states = encoder.encode_descriptor(
            "seam_mount_state",
            "1 for each mount of the live generation, labelled with its state",
            None,
            MetricType::Gauge,
        )?;
        for (id, slot) in live.iter().flat_map(|g| g.mounts.iter()) {
            let state =
                serde_json::to_value(slot.running.status().state).ok().and_then(|s| s.as_str().map(str::to_owned)).unwrap_or_default();
            ConstGauge::new(1i64).encode(states.encode_family(&MountState { mount: id.clone(), state })?)?;
        }
        encode_mount_counts(&mut encoder, live.iter().flat_map(|g| g.mounts.iter().map(|(id, slot)| (id, slot.running.counts()))))
    }
}

/// A counter family of `name`, a counter per label set of `counts`.
fn encode_counters<L: EncodeLabelSet + std::fmt::Debug>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    counts: impl IntoIterator<Item = (L, u64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, n) in counts {
        ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// What each mount counted (`Running::counts`). A mount appears in a family once it has
/// counted something of it, as a labelled counter does; a mount built again counts from 0.
fn encode_mount_counts<'a>(
    encoder: &mut DescriptorEncoder,
    mounts: impl Iterator<Item = (&'a String, seam_engine::runtime::MountCounts)>,
) -> Result<(), std::fmt::Error> {
    let mounts: Vec<_> = mounts.collect();
    type Count = fn(&seam_engine::runtime::MountCounts) -> u64;
    let counters: [(&str, &str, Count); 3] = [
        ("seam_upstream_reconnects", "Times an MCP mount set out to connect to its server again", |c| c.reconnects),
        ("seam_language_server_starts", "Language servers a language-server mount started", |c| c.server_starts),
        ("seam_web_provider_selections", "Web tool calls that selected the provider", |c| c.selections),
    ];
    for (name, help, count) in counters {
        let counted = mounts.iter().filter(|(_, c)| count(c) > 0).map(|(id, c)| (MountLabel { mount: (*id).clone() }, count(c)));
        encode_counters(encoder, name, help, counted)?;
    }
    let failures =
        mounts.iter().flat_map(|(id, c)| c.failures.iter().map(move |(code, n)| (MountFailure { mount: (*id).clone(), code }, *n)));
    encode_counters(encoder, "seam_web_provider_failures", "Web tool calls that failed on the provider they selected, by code", failures)?;
    let mut held = encoder.encode_descriptor(
        "seam_held_definitions",
        "Definitions a mount's pin holds back now (mounts that hold none are left out)",
        None,
        MetricType::Gauge,
    )?;
    for (id, counts) in mounts.iter().filter(|(_, c)| c.held > 0) {
        ConstGauge::new(counts.held as i64).encode(held.encode_family(&MountLabel { mount: (*id).clone() })?)?;
    }
    Ok(())
}

/// What this front end's clients hold at a scrape, per agent of the live composition
/// (any other, `_other`, together).
struct ClientsNow {
    deployment: Arc<Deployment>,
    clients: Arc<crate::gateway::Clients>,
}

impl std::fmt::Debug for ClientsNow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientsNow")
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct AgentLabel {
    agent: String,
}

/// `agent` as a label: itself when the live composition has it, else `_other`.
fn agent_label(deployment: &Deployment, agent: &str) -> AgentLabel {
    let known = deployment.live().is_some_and(|g| g.resolved.agents.contains_key(agent));
    AgentLabel { agent: if known { agent.to_owned() } else { OTHER.to_owned() } }
}

impl prometheus_client::collector::Collector for ClientsNow {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let label = |agent: &str| agent_label(&self.deployment, agent);
        let held = self.clients.tally.status();
        let mut by_agent: std::collections::BTreeMap<AgentLabel, [i64; 4]> = std::collections::BTreeMap::new();
        for (agent, holds) in &held.agents {
            let counts = by_agent.entry(label(agent)).or_default();
            counts[0] += holds.sessions as i64;
            counts[1] += holds.listen_streams as i64;
            counts[2] += holds.subscriptions as i64;
        }
        for (agent, waiting) in self.clients.waiting_now() {
            by_agent.entry(label(&agent)).or_default()[3] += waiting as i64;
        }
        let gauges = [
            ("seam_sessions_open", "MCP sessions open (2025-11-25 clients)"),
            ("seam_listen_streams_open", "subscriptions/listen streams open (2026-07-28 clients)"),
            ("seam_subscriptions", "Resource subscriptions held"),
            ("seam_mrtr_waiting", "Calls waiting for their 2026-07-28 clients' answers (input_required)"),
        ];
        for (n, (name, help)) in gauges.into_iter().enumerate() {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (agent, counts) in &by_agent {
                ConstGauge::new(counts[n]).encode(family.encode_family(agent)?)?;
            }
        }
        Ok(())
    }
}

/// The gateway of one session, each request measured (unless metrics are off, `None`).
#[derive(Clone)]
pub struct Observed {
    pub gateway: Gateway,
    pub metrics: Option<Arc<Metrics>>,
}

impl Observed {
    /// The agent's label: the session's agent when the live composition has it.
    fn agent(&self) -> String {
        agent_label(&self.gateway.deployment, &self.gateway.agent).agent
    }

    /// `answer`, its time and outcome recorded under `method` (and `tool`, for a call), and
    /// its SERVER span (`crate::telemetry`) ended with them; `failed` says whether an answer
    /// that is no JSON-RPC error is a tool error.
    fn timed<'a, T: 'a>(
        &'a self,
        method: &'static str,
        tool: String,
        failed: fn(&T) -> bool,
        span: Option<crate::telemetry::ServerSpan>,
        answer: impl Future<Output = Result<T, McpError>> + Send + 'a,
    ) -> impl Future<Output = Result<T, McpError>> + Send + 'a {
        let started = Instant::now();
        async move {
            let answered = answer.await;
            if self.metrics.is_none() && span.is_none() {
                return answered;
            }
            let error_type = match &answered {
                Err(e) => e.code.0.to_string(),
                Ok(result) if failed(result) => "tool_error".to_owned(),
                Ok(_) => String::new(),
            };
            if let Some(span) = span {
                span.end(Some(error_type.as_str()).filter(|e| !e.is_empty()));
            }
            let Some(metrics) = &self.metrics else { return answered };
            let operation = ServerOperation { mcp_method_name: method, gen_ai_tool_name: tool, agent: self.agent(), error_type };
            metrics.server.get_or_create(&operation).observe(started.elapsed().as_secs_f64());
            answered
        }
    }
}

fn never<T>(_: &T) -> bool {
    false
}

/// A request handler, forwarded and timed under its method's name.
macro_rules! timed {
    ($name:ident, $method:literal, $params:ty, $result:ty) => {
        fn $name(
            &self,
            request: $params,
            mut context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<$result, McpError>> + Send + '_ {
            let span = crate::telemetry::server_span($method, None, &mut context);
            self.timed($method, String::new(), never, span, self.gateway.$name(request, context))
        }
    };
}

// Logging and `resources/subscribe` are deprecated by SEP-2577, and still what 2025-11-25 clients send.
#[allow(deprecated)]
impl ServerHandler for Observed {
    fn ping(&self, mut context: RequestContext<RoleServer>) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        let span = crate::telemetry::server_span("ping", None, &mut context);
        self.timed("ping", String::new(), never, span, self.gateway.ping(context))
    }
    timed!(initialize, "initialize", InitializeRequestParams, InitializeResult);
    fn negotiate_initialize(&self, request: &InitializeRequestParams) -> Result<InitializeResult, McpError> {
        self.gateway.negotiate_initialize(request)
    }
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        self.gateway.supported_protocol_versions()
    }
    fn discover(&self, mut context: RequestContext<RoleServer>) -> impl Future<Output = Result<DiscoverResult, McpError>> + Send + '_ {
        let span = crate::telemetry::server_span("server/discover", None, &mut context);
        self.timed("server/discover", String::new(), never, span, self.gateway.discover(context))
    }
    timed!(complete, "completion/complete", CompleteRequestParams, CompleteResult);
    timed!(set_level, "logging/setLevel", SetLevelRequestParams, ());
    timed!(get_prompt, "prompts/get", GetPromptRequestParams, GetPromptResponse);
    timed!(list_prompts, "prompts/list", Option<PaginatedRequestParams>, ListPromptsResult);
    timed!(list_resources, "resources/list", Option<PaginatedRequestParams>, ListResourcesResult);
    timed!(list_resource_templates, "resources/templates/list", Option<PaginatedRequestParams>, ListResourceTemplatesResult);
    timed!(read_resource, "resources/read", ReadResourceRequestParams, ReadResourceResponse);
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.gateway.accepted_subscription_filter(requested)
    }
    fn listen(&self, context: rmcp::service::SubscriptionContext) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        self.gateway.listen(context)
    }
    timed!(subscribe, "resources/subscribe", SubscribeRequestParams, ());
    timed!(unsubscribe, "resources/unsubscribe", UnsubscribeRequestParams, ());
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + Send + '_ {
        let live = self.gateway.deployment.live();
        let known = live.and_then(|g| g.lookup(&self.gateway.agent, &request.name)).flatten().is_some();
        let tool = if known { request.name.to_string() } else { OTHER.to_owned() };
        let failed = |answer: &CallToolResponse| matches!(answer, CallToolResponse::Complete(result) if result.is_error == Some(true));
        let span = crate::telemetry::server_span("tools/call", Some(&tool), &mut context);
        self.timed("tools/call", tool, failed, span, self.gateway.call_tool(request, context))
    }
    timed!(list_tools, "tools/list", Option<PaginatedRequestParams>, ListToolsResult);
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.gateway.get_tool(name)
    }
    fn on_custom_request(
        &self,
        request: CustomRequest,
        mut context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CustomResult, McpError>> + Send + '_ {
        // Its method is the client's to name: counted, and traced, under one name.
        let span = crate::telemetry::server_span(OTHER, None, &mut context);
        self.timed(OTHER, String::new(), never, span, self.gateway.on_custom_request(request, context))
    }
    fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.gateway.on_cancelled(notification, context)
    }
    fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.gateway.on_progress(notification, context)
    }
    fn on_initialized(&self, context: NotificationContext<RoleServer>) -> impl Future<Output = ()> + Send + '_ {
        self.gateway.on_initialized(context)
    }
    fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) -> impl Future<Output = ()> + Send + '_ {
        self.gateway.on_roots_list_changed(context)
    }
    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.gateway.on_custom_notification(notification, context)
    }
    fn get_info(&self) -> ServerConfig {
        self.gateway.get_info()
    }
    timed!(get_task, "tasks/get", GetTaskParams, GetTaskResult);
    timed!(update_task, "tasks/update", UpdateTaskParams, ());
    timed!(cancel_task, "tasks/cancel", CancelTaskParams, ());
    timed!(list_skills, "skills/list", Option<PaginatedRequestParams>, ListSkillsResult);
    timed!(get_skill, "skills/get", GetSkillRequestParams, GetSkillResult);
    timed!(read_resource_directory, "resources/directory/read", ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult);
}

//! The runtime of `mcp.stdio` and `mcp.http`: one rmcp client per mount, owned by
//! a supervisor task that connects, syncs the tool list, re-syncs on
//! `notifications/tools/list_changed`, and reconnects with a bounded backoff.
//!
//! - Names: `mcp__<server>__<raw>`, see [`tool_name`]; prompts are named the same way.
//! - Prompts, resources and resource templates are listed in the same sync as
//!   the tools, when the server declares them, and filtered by the mount's
//!   `prompts` and `resources` filters; requests for them are relayed to the
//!   server as rmcp's typed requests, its JSON-RPC errors as they are.
//! - Sync is two-phase: every page is fetched (a repeated cursor is an error)
//!   and the whole next map is built aside; a failure or a raw name listed twice
//!   keeps the previous map; then the map is swapped whole. Tools that map to
//!   one name (`a.b` and the clean name it hashes to) are left out, and only
//!   they: logged, and in `/status` and `inventory --probe` as the mount's `warnings`. Initial,
//!   `list_changed` and reconnect syncs all run on the supervisor task, so they
//!   never interleave. Namespaces are unique (case-insensitively) at validation,
//!   so no other mount can register a name under this one's prefix.
//! - During an outage the last good tools stay listed and calls fail with
//!   `MCP_UNAVAILABLE`; when the reconnect budget is spent the tools are
//!   unregistered. A replacement child never starts before the old one is proven
//!   gone (reaped); when that cannot be proven in time, reconnection stops.
//! - stdio children are spawned through the engine's `subprocess` service.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use globset::{Glob, GlobMatcher};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ClientRequest, Implementation, PaginatedRequestParams,
    ServerNotification, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, ServiceError};

use crate::failure::{ConnectError, InWords, StderrTail, SyncError};
use seam_engine::offers::{ImportedFile, ImportedSkill, MountRequest, Offered, Offers, RequestError, TaskMethod};
use seam_engine::runtime::{
    BoxFuture, BuildCx, Client, MountEvent, MountEvents, ProviderError, Running, State, Status, StatusCell, ToolOutput, ToolSpec,
};
use seam_engine::subprocess::Child;
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::{Common, HttpServer, StdioServer, TOOL_PREFIX};

/// The longest tool name clients accept.
pub const MAX_TOOL_NAME: usize = 64;
/// How much of a stdio server's stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;
/// How long a child gets to end after its transport closes, before SIGKILL; and again after it.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// `mcp__<server>__<raw>`, with characters outside `[A-Za-z0-9_-]` turned into
/// `_`. When that changed the name or it is longer than 64, the name is its
/// first 51 characters, `_`, and 12 hex digits of sha256(server ‖ 0 ‖ raw): the
/// same raw name always gets the same tool name, whatever order tools arrive in.
pub fn tool_name(server: &str, raw: &str) -> String {
    let full = format!("{TOOL_PREFIX}{server}__{raw}");
    let clean: String = full.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if clean == full && full.len() <= MAX_TOOL_NAME {
        return full;
    }
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(raw.as_bytes());
    let hash: String = hasher.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{}_{hash}", &clean[..clean.len().min(MAX_TOOL_NAME - 13)])
}

pub(crate) fn build_stdio(config: StdioServer, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    let common = config.common.clone();
    start(Transport::Stdio(config), common, cx)
}

pub(crate) fn build_http(config: HttpServer, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    let common = config.common.clone();
    start(Transport::Http(config), common, cx)
}

enum Transport {
    Stdio(StdioServer),
    Http(HttpServer),
}

/// The imported tools: what clients see, and how to reach each on the server.
#[derive(Default)]
struct Imports {
    specs: Arc<Vec<ToolSpec>>,
    by_name: HashMap<String, Imported>,
    /// Names two or more of the server's tools (or prompts) map to, each with those raw names, sorted: left out.
    colliding: Vec<(String, Vec<String>)>,
    /// The server's prompts, resources and templates as clients see them.
    offers: Arc<Offers>,
    /// Each prompt's raw name, by its final name.
    prompts: HashMap<String, String>,
}

/// What the server listed beyond tools at its last complete sync, before the mount's filters.
#[derive(Default)]
struct Offerings {
    prompts: Vec<rmcp::model::Prompt>,
    resources: Vec<rmcp::model::Resource>,
    templates: Vec<rmcp::model::ResourceTemplate>,
    instructions: Option<Arc<str>>,
    /// The extensions the server declares that seam carries (`CARRIED_EXTENSIONS`), each with its settings.
    extensions: Map<String, Json>,
    /// The extensions the server declares that seam does not carry.
    withheld_extensions: Vec<String>,
    /// Its skills, for a mount that imports them (`import_skills`).
    skills: Arc<Vec<ImportedSkill>>,
    /// What of its skill list was not imported, and why; or why the list could not be read.
    skills_left_out: Vec<String>,
}

/// The most skills one server may list to a mount that imports them: a longer list
/// is not read further, and imports none.
pub const MAX_IMPORTED_SKILLS: usize = 1024;

/// The MCP extensions a mount's server may declare that seam declares on to its clients:
/// those whose requests seam carries. MCP Apps needs only tools' `_meta` and
/// `resources/read`; tasks (SEP-2663) go by the ids seam mints (`seam_engine::tasks`;
/// their `notifications/tasks` are not passed on, which the extension allows: clients
/// poll). A server's skills extension is not declared on either: seam serves its own
/// skills over it, and a mount with `skills: { import: true }` adds the server's to them
/// (`import_skills`).
const CARRIED_EXTENSIONS: &[&str] = &["io.modelcontextprotocol/ui", rmcp::model::TASKS_EXTENSION_ID];

/// A mount's `tools`, `prompts` and `resources` filters, compiled.
struct Filters {
    tools: Filter,
    prompts: Filter,
    resources: Filter,
}

impl Filters {
    fn new(common: &Common) -> Filters {
        Filters { tools: Filter::new(&common.tools), prompts: Filter::new(&common.prompts), resources: Filter::new(&common.resources) }
    }
}

/// The lists a server said changed: a re-sync asks for these again, and for any
/// other whose caching hint has lapsed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Changed {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Changed {
    const ALL: Changed = Changed { tools: true, prompts: true, resources: true };

    fn and(self, other: Changed) -> Changed {
        Changed { tools: self.tools || other.tools, prompts: self.prompts || other.prompts, resources: self.resources || other.resources }
    }
}

/// Until when each list the server last gave may be reused without asking again
/// (its `ttlMs`), unless the server says it changed; `None`: ask each time.
#[derive(Clone, Copy, Debug, Default)]
struct FreshUntil {
    tools: Option<Instant>,
    prompts: Option<Instant>,
    resources: Option<Instant>,
}

/// How long rmcp's `auto` lifecycle waits for an answer to `server/discover` before it
/// falls back to `initialize` (its `DEFAULT_AUTO_DISCOVER_TIMEOUT`, not public).
const AUTO_DISCOVER_PATIENCE: Duration = Duration::from_secs(10);

/// The longest a server's caching hint keeps one of its lists from being asked
/// again: past it a re-sync asks whatever the server said.
const MAX_LIST_TTL: Duration = Duration::from_secs(3600);

struct Imported {
    raw: String,
    /// The advertised output schema, when it compiles; unsupported vocabulary means unconstrained.
    output: Option<Arc<jsonschema::Validator>>,
}

struct McpMount {
    id: String,
    transport: Transport,
    common: Common,
    cx: BuildCx,
    /// `tools`, `prompts` and `resources` filters, replaceable while running.
    filter: Mutex<Filters>,
    /// The server's last complete listing, so a new filter applies without asking again.
    listed: Mutex<Arc<Vec<rmcp::model::Tool>>>,
    listed_offers: Mutex<Arc<Offerings>>,
    fresh_until: Mutex<FreshUntil>,
    /// Which URIs clients want updates of changed: a 2026-07-28 server is listened to
    /// again with them (`subscriptions/listen`; it has no `resources/subscribe`). Each
    /// ask is numbered; the supervisor says up to which one its stream holds.
    relisten: tokio::sync::Notify,
    listens_asked: std::sync::atomic::AtomicU64,
    listens_opened: tokio::sync::watch::Sender<u64>,
    status: StatusCell,
    imports: Mutex<Arc<Imports>>,
    /// How calls reach the server while it is connected and synced.
    link: Mutex<Option<Peer<RoleClient>>>,
    /// How many connections were made ready so far (`Running::connection`).
    connections: std::sync::atomic::AtomicU64,
    pid: Mutex<Option<u32>>,
    /// Calls sent and not answered, with their clients (`asks`).
    calls: Arc<crate::asks::InFlight>,
    stop: CancellationToken,
    /// A call or sync hit a transport error: the connection is treated as closed.
    /// Over Streamable HTTP a dead server does not close rmcp's transport, so
    /// without this the mount would stay `ready` and never reconnect.
    broken: tokio::sync::Notify,
    supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Turns `list_changed` notifications into re-sync requests for the supervisor.
struct Handler {
    resync: mpsc::UnboundedSender<Changed>,
    /// The mount's id and the deployment's events: log lines and resource updates go there.
    mount: String,
    events: MountEvents,
    /// The mount's calls in flight: whom the server's questions and progress are for.
    calls: Arc<crate::asks::InFlight>,
    /// The composition's workspace root: the roots the server is given, unless `roots: client` finds the caller's.
    workspace: WorkspaceRoot,
    roots: crate::RootsFrom,
}

/// The workspace root a mount gives its server: the one it was built with,
/// until a reload that keeps the mount moves it.
struct WorkspaceRoot {
    built: Option<std::path::PathBuf>,
    live: tokio::sync::watch::Receiver<Option<std::path::PathBuf>>,
}

impl WorkspaceRoot {
    fn root(&self) -> Option<std::path::PathBuf> {
        // Unchanged since the build: the generation that built this mount may not be live yet.
        if self.live.has_changed().unwrap_or(false) { self.live.borrow().clone() } else { self.built.clone() }
    }
}

/// The question's params as JSON, the client's answer as rmcp's result type.
async fn relayed<P: serde::Serialize, R: serde::de::DeserializeOwned>(
    handler: &Handler,
    kind: seam_engine::runtime::AskKind,
    params: P,
    context: &rmcp::service::RequestContext<RoleClient>,
) -> Result<R, rmcp::ErrorData> {
    let params = serde_json::to_value(params).map_err(|e| rmcp::ErrorData::invalid_params(e.to_string(), None))?;
    let origin = context.extensions.get::<rmcp::service::InboundStreamOrigin>();
    // The server may cancel its question: then the client is told too (dropping the ask cancels it there).
    let answer = tokio::select! {
        answer = crate::asks::relay(&handler.calls, &handler.mount, kind, params, origin) => answer?,
        _ = context.ct.cancelled() => return Err(rmcp::ErrorData::internal_error("the server cancelled its request", None)),
    };
    serde_json::from_value(answer)
        .map_err(|e| rmcp::ErrorData::internal_error(format!("the client's answer does not read as MCP: {e}"), None))
}

/// What seam declares to a mount's server: sampling, elicitation (form and URL) and roots,
/// which it asks the calling client for. Not tasks: a server may answer a call with a task
/// only when the calling client holds one (`for_tasks`).
// Sampling and roots are deprecated by SEP-2577, and still what 2025-11-25 servers ask.
#[allow(deprecated)]
fn declared() -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::builder().enable_roots().enable_sampling().build();
    capabilities.elicitation = Some(rmcp::model::ElicitationCapability::new().with_form(Default::default()).with_url(Default::default()));
    capabilities
}

/// The options of a request sent for `client`. To a 2026-07-28 server (`modern`) each
/// request declares what the calling client can answer, of `declared()`: a server asks
/// nothing the client cannot answer, and refuses (-32021) what needs it. Roots stay:
/// seam answers them itself when the client cannot. With `tasks`, the request declares
/// the tasks extension (SEP-2663) in its own `_meta`, as for a call whose client
/// declared it, and for the requests about its task. Otherwise (a legacy server's
/// session declared `declared()` at `initialize`) no options.
#[allow(deprecated)]
fn request_options(client: &Client, modern: bool, tasks: bool) -> rmcp::service::PeerRequestOptions {
    use seam_engine::runtime::AskKind;
    let mut options = rmcp::service::PeerRequestOptions::no_options();
    if !modern && !tasks {
        return options;
    }
    let mut capabilities = declared();
    if modern {
        let link = client.link();
        let declares = |kind: AskKind, params: Json| link.is_some_and(|link| link.declares(kind, &params));
        if !declares(AskKind::Sampling, Json::Null) {
            capabilities.sampling = None;
        }
        let form = declares(AskKind::Elicitation, serde_json::json!({ "mode": "form" }));
        let url = declares(AskKind::Elicitation, serde_json::json!({ "mode": "url" }));
        capabilities.elicitation = (form || url).then(|| {
            let elicitation = rmcp::model::ElicitationCapability::new();
            let elicitation = if form { elicitation.with_form(Default::default()) } else { elicitation };
            if url { elicitation.with_url(Default::default()) } else { elicitation }
        });
    }
    if tasks {
        capabilities.extensions.get_or_insert_with(Default::default).insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), Default::default());
    }
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.set_client_capabilities(capabilities);
    options.meta = Some(meta);
    options
}

// Sampling and roots are deprecated by SEP-2577, and still what 2025-11-25 servers ask.
#[allow(deprecated)]
impl rmcp::ClientHandler for Handler {
    /// seam declares what its clients may answer: it asks the calling client
    /// and refuses the server when that client did not declare it (`asks`).
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(declared(), Implementation::new("seam", env!("CARGO_PKG_VERSION")))
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        relayed(self, seam_engine::runtime::AskKind::Sampling, params, &context).await
    }

    async fn create_elicitation(
        &self,
        params: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        relayed(self, seam_engine::runtime::AskKind::Elicitation, params, &context).await
    }

    /// The server sees the composition's workspace root (none without one), or
    /// with `roots: client` the calling client's roots when they can be asked.
    async fn list_roots(
        &self,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        if self.roots == crate::RootsFrom::Client {
            let origin = context.extensions.get::<rmcp::service::InboundStreamOrigin>();
            let caller = self.calls.caller(origin).ok().filter(|c| c.declares(seam_engine::runtime::AskKind::Roots, &Json::Null));
            if caller.is_some() {
                return relayed(self, seam_engine::runtime::AskKind::Roots, Json::Null, &context).await;
            }
        }
        Ok(workspace_roots(self.workspace.root()))
    }

    /// A URL elicitation's completion goes to the client it was passed on to.
    async fn on_custom_notification(&self, notification: rmcp::model::CustomNotification, _: NotificationContext<RoleClient>) {
        if notification.method != crate::asks::ELICITATION_COMPLETE {
            return;
        }
        let params = notification.params.unwrap_or_default();
        match params.get("elicitationId").and_then(Json::as_str).and_then(|id| self.calls.elicited(id)) {
            Some(client) => client.notify(&notification.method, params),
            None => tracing::debug!(mount = %self.mount, "an elicitation completed that no client here was asked: {params}"),
        }
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.resync.send(Changed { tools: true, ..Changed::default() });
    }

    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.resync.send(Changed { prompts: true, ..Changed::default() });
    }

    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.resync.send(Changed { resources: true, ..Changed::default() });
    }

    #[allow(deprecated)]
    async fn on_logging_message(&self, params: rmcp::model::LoggingMessageNotificationParam, _: NotificationContext<RoleClient>) {
        let level = seam_wire::level_name(params.level);
        self.events.send(MountEvent::Log { mount: self.mount.clone(), level, logger: params.logger, data: params.data });
    }

    async fn on_resource_updated(&self, params: rmcp::model::ResourceUpdatedNotificationParam, _: NotificationContext<RoleClient>) {
        self.events.send(MountEvent::ResourceUpdated { mount: self.mount.clone(), uri: params.uri });
    }
}

/// The roots a server is given from the composition's workspace root (none without one).
#[allow(deprecated)]
fn workspace_roots(root: Option<std::path::PathBuf>) -> rmcp::model::ListRootsResult {
    let roots = root
        .iter()
        .filter_map(|root| url::Url::from_file_path(root).ok().map(|uri| (uri, root)))
        .map(|(uri, root)| {
            let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
            let mut root = rmcp::model::Root::new(uri.to_string());
            root.name = name;
            root
        })
        .collect();
    rmcp::model::ListRootsResult::new(roots)
}

/// `request` sent again with the client's answers to its server's questions and the
/// server's state (only a `tools/call`, `prompts/get` or `resources/read` is ever asked).
fn with_answers(request: ClientRequest, responses: rmcp::model::InputResponses, state: Option<String>) -> ClientRequest {
    match request {
        ClientRequest::CallToolRequest(mut r) => {
            r.params.input_responses = Some(responses);
            r.params.request_state = state;
            ClientRequest::CallToolRequest(r)
        }
        ClientRequest::GetPromptRequest(mut r) => {
            r.params.input_responses = Some(responses);
            r.params.request_state = state;
            ClientRequest::GetPromptRequest(r)
        }
        ClientRequest::ReadResourceRequest(mut r) => {
            r.params.input_responses = Some(responses);
            r.params.request_state = state;
            ClientRequest::ReadResourceRequest(r)
        }
        other => other,
    }
}

/// The most rounds of a 2026-07-28 server's `input_required` one call answers; past it
/// the call fails (`MCP_INPUT_ROUNDS_EXCEEDED`).
pub const MAX_INPUT_ROUNDS: usize = 10;

/// Why a call could not answer a round of its server's `input_required`.
#[derive(Debug, thiserror::Error)]
enum InputError {
    #[error("the server asked for input {MAX_INPUT_ROUNDS} times over; the call was given up")]
    Rounds,
    #[error("the client of agent `{agent}` did not declare {what} (or this kind of {what}), which the server asked for")]
    Undeclared { agent: String, what: &'static str },
    #[error("the server's `{key}` is no question a client can be asked")]
    Unknown { key: String },
    #[error("the call has no MCP client to answer the server's questions")]
    NoClient,
    #[error("the client did not answer `{key}`: {source}")]
    Unanswered { key: String, source: seam_engine::offers::RequestError },
}

/// Why a connection attempt failed, and whether its process is proven gone (no process counts as gone).
struct Failed {
    error: ConnectError,
    proven: bool,
}

impl Failed {
    fn proven(error: ConnectError) -> Failed {
        Failed { error, proven: true }
    }
}

/// One live connection.
struct McpConnection {
    service: rmcp::service::RunningService<RoleClient, Handler>,
    child: Option<Child>,
    stderr: Arc<Mutex<String>>,
}

struct Filter {
    allow: Vec<GlobMatcher>,
    deny: Vec<GlobMatcher>,
}

impl Filter {
    fn new(tools: &crate::NameFilter) -> Filter {
        // Validation has compiled every pattern already.
        let globs = |patterns: &[String]| patterns.iter().filter_map(|p| Glob::new(p).ok()).map(|g| g.compile_matcher()).collect();
        Filter { allow: globs(&tools.allow), deny: globs(&tools.deny) }
    }

    fn admits(&self, raw: &str) -> bool {
        self.allow.iter().any(|g| g.is_match(raw)) && !self.deny.iter().any(|g| g.is_match(raw))
    }
}

fn start(transport: Transport, common: Common, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    Box::pin(async move {
        let mount = Arc::new(McpMount {
            id: cx.id.clone(),
            filter: Mutex::new(Filters::new(&common)),
            listed: Mutex::new(Arc::default()),
            listed_offers: Mutex::new(Arc::default()),
            fresh_until: Mutex::default(),
            relisten: tokio::sync::Notify::new(),
            listens_asked: Default::default(),
            listens_opened: tokio::sync::watch::Sender::new(0),
            transport,
            common,
            status: StatusCell::notifying(State::Starting, cx.status.clone()),
            cx,
            imports: Mutex::new(Arc::default()),
            link: Mutex::new(None),
            connections: Default::default(),
            pid: Mutex::new(None),
            calls: Arc::default(),
            stop: CancellationToken::new(),
            broken: tokio::sync::Notify::new(),
            supervisor: Mutex::new(None),
        });
        let (activated_tx, activated_rx) = oneshot::channel();
        let task = tokio::spawn(mount.clone().supervise(activated_tx));
        *mount.supervisor.lock().expect("supervisor lock") = Some(task);
        // Activation: the first connection and complete discovery, or the first failure.
        let _ = activated_rx.await;
        Ok(Arc::new(Handle(mount)) as Arc<dyn Running>)
    })
}

/// The wait before reconnect attempt `attempt` (1 for the first): `min(max_delay,
/// initial_delay·2^(attempt−1))`, saturating rather than overflowing at any attempt.
fn backoff(initial_delay: seam_engine::units::Duration, max_delay: seam_engine::units::Duration, attempt: u32) -> Duration {
    let factor = 2u64.saturating_pow(attempt.saturating_sub(1));
    Duration::from_millis(initial_delay.as_millis().saturating_mul(factor).min(max_delay.as_millis()))
}

/// How often an idle Streamable HTTP connection is pinged: `max_delay`, within 1s..=30s.
fn ping_interval(max_delay: seam_engine::units::Duration) -> Duration {
    max_delay.to_std().clamp(Duration::from_secs(1), Duration::from_secs(30))
}

impl McpMount {
    fn delay(&self, attempt: u32) -> Duration {
        let r = &self.common.reconnect;
        backoff(r.initial_delay, r.max_delay, attempt)
    }

    async fn supervise(self: Arc<Self>, activated: oneshot::Sender<()>) {
        let mut activated = Some(activated);
        let mut failures: u32 = 0;
        loop {
            let (resync_tx, mut resync_rx) = mpsc::unbounded_channel();
            let attempt = tokio::select! {
                _ = self.stop.cancelled() => return,
                r = self.connect(resync_tx.clone()) => r,
            };
            let mut connection = match attempt {
                Ok(c) => Some(c),
                Err(Failed { error, proven: true }) => {
                    self.status.set(self.outage_state(), Some(error.to_string()));
                    None
                }
                Err(Failed { error, proven: false }) => {
                    self.give_up(&format!("{error}; the server process could not be proven to have exited, so no other is started"));
                    return;
                }
            };
            let mut up_since = None;
            // A 2026-07-28 server says what changed on a stream the mount opens (`subscriptions/listen`),
            // opened before the lists are read so that no change falls between.
            let (mut listening, mut listen_retry_at) = (None, None);
            if let Some(c) = &mut connection {
                self.listen_again(c.service.peer(), &mut listening, &mut listen_retry_at, &resync_tx).await;
                match self.sync(&c.service.peer().clone(), Changed::ALL).await {
                    Ok(()) => {
                        self.connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        *self.link.lock().expect("link lock") = Some(c.service.peer().clone());
                        self.status.set(State::Ready, None);
                        self.cx.changes.notify();
                        up_since = Some(Instant::now());
                        self.restore(&c.service.peer().clone()).await;
                    }
                    Err(e) => self.status.set(self.outage_state(), Some(format!("tool discovery failed: {e}"))),
                }
            }
            // The first attempt, and it did not come up.
            let failed_to_start = activated.is_some() && up_since.is_none();
            if let Some(tx) = activated.take() {
                let _ = tx.send(());
            }
            let mut proven = true;
            if let Some(McpConnection { service, child, stderr, .. }) = connection {
                let peer = service.peer().clone();
                let mut cancel = Some(service.cancellation_token());
                let mut serving = std::pin::pin!(service.waiting());
                let mut ended = false;
                // Over Streamable HTTP nothing closes when the server dies; a ping finds out without waiting for a call.
                let mut liveness = tokio::time::interval(self.liveness_interval());
                liveness.reset();
                let mut workspace = self.cx.live_workspace.clone();
                let mut root = self.cx.workspace.clone();
                if up_since.is_some() {
                    loop {
                        tokio::select! {
                            heard = next_heard(&mut listening) => match heard {
                                Some(notification) => self.hear(notification, &resync_tx),
                                None => {
                                    // Ended: opened again after a liveness interval, and then every list asked for again.
                                    let end = listening.take().and_then(|l| l.stream.end().cloned());
                                    tracing::info!(mount = %self.id, "subscriptions/listen ended ({end:?}); listening again shortly");
                                    listen_retry_at = Some(tokio::time::Instant::now() + self.liveness_interval());
                                }
                            },
                            // A deadline, not a sleep: the other branches must not push it back.
                            _ = tokio::time::sleep_until(listen_retry_at.unwrap_or_else(tokio::time::Instant::now)), if listen_retry_at.is_some() => {
                                self.listen_again(&peer, &mut listening, &mut listen_retry_at, &resync_tx).await;
                            }
                            _ = self.relisten.notified() => {
                                self.listen_again(&peer, &mut listening, &mut listen_retry_at, &resync_tx).await;
                            }
                            _ = liveness.tick(), if matches!(self.transport, Transport::Http(_)) => {
                                // 2026-07-28 has no `ping`: a `server/discover`, sent past rmcp's cache, asks the same.
                                let ping = if speaks_modern(&peer) {
                                    ClientRequest::DiscoverRequest(rmcp::model::DiscoverRequest::new(rmcp::model::DiscoverRequestParams {}))
                                } else {
                                    ClientRequest::PingRequest(rmcp::model::PingRequest { method: Default::default(), extensions: Default::default() })
                                };
                                match tokio::time::timeout(self.liveness_interval(), peer.send_request(ping)).await {
                                    // Any answer, an error included, is a server alive.
                                    Ok(Ok(_) | Err(ServiceError::McpError(_))) => {}
                                    Ok(Err(e)) => { tracing::warn!(mount = %self.id, "ping failed ({}); treating the connection as closed", InWords(&e)); break }
                                    Err(_) => { tracing::warn!(mount = %self.id, "ping unanswered; treating the connection as closed"); break }
                                }
                            }
                            _ = self.stop.cancelled() => break,
                            _ = &mut serving => { ended = true; break }
                            _ = self.broken.notified() => {
                                tracing::warn!(mount = %self.id, "transport error; treating the connection as closed");
                                break
                            }
                            // A reload moved the workspace root and kept this mount: the server is told its roots changed.
                            Ok(()) = workspace.changed() => {
                                let now = workspace.borrow_and_update().clone();
                                if now != root {
                                    root = now;
                                    if let Err(e) = peer.notify_roots_list_changed().await {
                                        tracing::warn!(mount = %self.id, "roots/list_changed could not be sent: {}", InWords(&e));
                                    }
                                }
                            }
                            Some(mut changed) = resync_rx.recv() => {
                                // One sync lists each changed list as it is now: the changes said while one ran ask for no more.
                                while let Ok(more) = resync_rx.try_recv() {
                                    changed = changed.and(more);
                                }
                                if let Err(e) = self.sync(&peer, changed).await {
                                    tracing::warn!(mount = %self.id, "re-sync failed, keeping the previous tools: {e}");
                                }
                            }
                        }
                    }
                }
                *self.link.lock().expect("link lock") = None;
                if let Some(cancel) = cancel.take() {
                    cancel.cancel();
                }
                if !ended {
                    let _ = tokio::time::timeout(EXIT_GRACE, &mut serving).await;
                }
                proven = self.reap(child, &stderr).await;
            }
            if self.stop.is_cancelled() {
                return;
            }
            if !proven {
                self.give_up("the previous server process could not be proven to have exited; not starting another");
                return;
            }
            if failed_to_start && self.common.required {
                // A required mount that did not come up rejects the reload that built it and is disposed
                // with it: there is no reconnect to plan, nor one to announce.
                return;
            }
            if up_since.is_some_and(|t| t.elapsed() >= self.common.reconnect.max_delay.to_std()) {
                failures = 0;
            }
            failures += 1;
            let r = &self.common.reconnect;
            if !r.enabled || failures > r.max_attempts {
                let why = if r.enabled {
                    format!("gave up after {} reconnect attempts", r.max_attempts)
                } else {
                    "reconnect is disabled".to_owned()
                };
                let detail = self.status.get().detail.map_or(why.clone(), |d| format!("{why}; last error: {d}"));
                self.give_up(&detail);
                return;
            }
            if up_since.is_some() {
                self.status.set(self.outage_state(), Some("connection closed; reconnecting".to_owned()));
                self.cx.changes.notify();
            }
            let delay = self.delay(failures);
            tracing::info!(
                mount = %self.id,
                attempt = failures,
                max_attempts = r.max_attempts,
                delay_ms = delay.as_millis() as u64,
                "reconnecting in {delay:?} (attempt {failures} of {})",
                r.max_attempts
            );
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// How often an idle Streamable HTTP connection is pinged: `reconnect.max_delay`, within 1s..=30s.
    fn liveness_interval(&self) -> Duration {
        ping_interval(self.common.reconnect.max_delay)
    }

    /// Degraded while the last good tools are still listed, failed when there are none.
    fn outage_state(&self) -> State {
        if self.imports.lock().expect("imports lock").specs.is_empty() { State::Failed } else { State::Degraded }
    }

    /// The budget is spent: unregister every tool and stop until the next reload.
    fn give_up(&self, detail: &str) {
        *self.imports.lock().expect("imports lock") = Arc::default();
        self.status.set(State::Failed, Some(detail.to_owned()));
        self.cx.changes.notify();
        tracing::error!(mount = %self.id, state = "failed", "{detail}");
    }

    /// Connects and completes the handshake within `startup_timeout`. A child whose
    /// handshake fails is ended here, and its exit proven, before the caller may start another.
    async fn connect(&self, resync: mpsc::UnboundedSender<Changed>) -> Result<McpConnection, Failed> {
        let handler = Handler {
            resync,
            mount: self.id.clone(),
            events: self.cx.events.clone(),
            calls: self.calls.clone(),
            workspace: WorkspaceRoot { built: self.cx.workspace.clone(), live: self.cx.live_workspace.clone() },
            roots: self.common.roots,
        };
        let startup = self.common.startup_timeout;
        // `auto` is given the time rmcp waits for an answer to `server/discover` on top.
        let auto = if self.common.protocol == crate::Protocol::Auto { AUTO_DISCOVER_PATIENCE } else { Duration::ZERO };
        let patience = startup.to_std() + auto;
        let stderr = Arc::new(Mutex::new(String::new()));
        match &self.transport {
            Transport::Stdio(config) => {
                let cwd = config.cwd.as_deref().map(std::path::Path::new);
                let mut child = self
                    .cx
                    .subprocess
                    .spawn(&config.spawn, &config.env_passthrough, cwd)
                    .map_err(|source| Failed::proven(ConnectError::Spawn { command: config.spawn.command.clone(), source }))?;
                *self.pid.lock().expect("pid lock") = Some(child.pid);
                if let Some(mut pipe) = child.stderr.take() {
                    let tail = stderr.clone();
                    let id = self.id.clone();
                    tokio::spawn(async move {
                        let mut buf = [0u8; 4096];
                        while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                            let text = String::from_utf8_lossy(&buf[..n]);
                            tracing::debug!(mount = %id, "stderr: {}", text.trim_end());
                            let mut t = tail.lock().expect("stderr lock");
                            t.push_str(&text);
                            if t.len() > STDERR_TAIL {
                                let cut = t.len() - STDERR_TAIL;
                                let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(t.len());
                                t.drain(..cut);
                            }
                        }
                    });
                }
                let writer = seam_wire::stdio::LineWriter::new(child.stdin.take().expect("piped stdin"));
                let stdout = child.stdout.take().expect("piped stdout");
                let transport = seam_wire::stdio::LineTransport::<RoleClient>::new(stdout, writer);
                // The handshake's error, or `None` when it timed out.
                let failed = match tokio::time::timeout(patience, self.handshake(handler, transport)).await {
                    Ok(Ok(service)) => return Ok(McpConnection { service, child: Some(child), stderr }),
                    Ok(Err(e)) => Some(Box::new(e)),
                    Err(_) => None,
                };
                let proven = self.reap(Some(child), &stderr).await;
                let stderr = StderrTail(stderr.lock().expect("stderr lock").trim().to_owned());
                let error = match failed {
                    Some(source) => ConnectError::Handshake { source, stderr },
                    None => ConnectError::StartupTimeout { startup, stderr },
                };
                Err(Failed { error, proven })
            }
            Transport::Http(config) => {
                use rmcp::transport::streamable_http_client::{StreamableHttpClientTransport, StreamableHttpClientTransportConfig};
                let mut headers = HashMap::new();
                let env =
                    |var: &str| std::env::var(var).map_err(|source| Failed::proven(ConnectError::EnvVar { var: var.to_owned(), source }));
                let named = config.headers.iter().map(|(k, v)| Ok((k.clone(), v.clone())));
                let from_env = config.headers_env.iter().map(|(k, var)| env(&var.0).map(|v| (k.clone(), v)));
                for pair in named.chain(from_env) {
                    let (k, v): (String, String) = pair?;
                    let name = reqwest::header::HeaderName::try_from(k.as_str())
                        .map_err(|source| Failed::proven(ConnectError::HeaderName { name: k.clone(), source }))?;
                    let value = reqwest::header::HeaderValue::try_from(v.as_str())
                        .map_err(|source| Failed::proven(ConnectError::HeaderValue { name: k.clone(), source }))?;
                    headers.insert(name, value);
                }
                let mut transport_config = StreamableHttpClientTransportConfig::with_uri(config.url.as_str()).custom_headers(headers);
                if let Some(var) = &config.bearer_token_env {
                    transport_config = transport_config.auth_header(env(&var.0)?);
                }
                let client =
                    reqwest::Client::builder().no_proxy().build().map_err(|source| Failed::proven(ConnectError::HttpClient { source }))?;
                let transport = StreamableHttpClientTransport::with_client(client, transport_config);
                match tokio::time::timeout(patience, self.handshake(handler, transport)).await {
                    Ok(Ok(service)) => Ok(McpConnection { service, child: None, stderr }),
                    Ok(Err(e)) => Err(Failed::proven(ConnectError::Connect { url: config.url.clone(), source: Box::new(e) })),
                    Err(_) => Err(Failed::proven(ConnectError::StartupTimeout { startup, stderr: StderrTail::default() })),
                }
            }
        }
    }

    /// The lifecycle the mount's `protocol` names: `initialize` (legacy), `server/discover`
    /// (2026-07-28, no session; rmcp then makes each request self-contained), or
    /// `server/discover` and then `initialize` if the server answers discovery as a legacy
    /// server does (`auto`).
    async fn handshake<T, E, A>(
        &self,
        handler: Handler,
        transport: T,
    ) -> Result<rmcp::service::RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        use rmcp::service::ClientServiceExt as _;
        let transport = crate::asks::ProgressInOrder { inner: transport.into_transport(), calls: self.calls.clone() };
        let preferred_versions = vec![rmcp::model::ProtocolVersion::V_2026_07_28];
        let mode = match self.common.protocol {
            crate::Protocol::Legacy => return handler.serve(transport).await,
            crate::Protocol::Modern => rmcp::service::ClientLifecycleMode::Discover { preferred_versions },
            crate::Protocol::Auto => rmcp::service::ClientLifecycleMode::Auto { preferred_versions, legacy_version: None },
        };
        handler.serve_with_lifecycle(transport, mode).await
    }

    /// Ends a connection's child and proves it exited; `false` when that could not be proven.
    async fn reap(&self, child: Option<Child>, stderr: &Mutex<String>) -> bool {
        let Some(mut child) = child else { return true };
        let status = child.terminate(EXIT_GRACE).await;
        *self.pid.lock().expect("pid lock") = None;
        let tail = stderr.lock().expect("stderr lock").trim().to_owned();
        if !tail.is_empty() && !self.stop.is_cancelled() {
            tracing::warn!(mount = %self.id, "server exited ({status:?}); its stderr ended with: {tail}");
        }
        status.is_some()
    }

    /// Fetches every page of every list the server declares and swaps the
    /// whole map in, or keeps the previous one. A list the server did not say
    /// `changed`, and gave with a caching hint not yet lapsed (`ttlMs`,
    /// 2026-07-28), is the one it last gave, not asked again.
    async fn sync(&self, peer: &Peer<RoleClient>, changed: Changed) -> Result<(), SyncError> {
        let info = peer.peer_info();
        let declares = |what: fn(&rmcp::model::ServerCapabilities) -> bool| info.as_ref().is_some_and(|i| what(&i.capabilities));
        let now = Instant::now();
        // A list said to change is stale from now on, whether or not this sync succeeds.
        let fresh = {
            let mut fresh = self.fresh_until.lock().expect("fresh lock");
            let FreshUntil { tools, prompts, resources } = &mut *fresh;
            for (changed, until) in [(changed.tools, tools), (changed.prompts, prompts), (changed.resources, resources)] {
                if changed {
                    *until = None;
                }
            }
            *fresh
        };
        let reused = |until: Option<Instant>| until.is_some_and(|until| until > now);
        let until = |ttl_ms: Option<u64>| fresh_until(now, ttl_ms);
        let mut next_fresh = FreshUntil::default();
        let last = self.listed_offers.lock().expect("listing lock").clone();
        // A server that declares no tools (one that serves only prompts, resources or skills) is not asked for them.
        let tools = if !declares(|c| c.tools.is_some()) {
            Vec::new()
        } else if reused(fresh.tools) {
            next_fresh.tools = fresh.tools;
            self.listed.lock().expect("listing lock").as_ref().clone()
        } else {
            let (tools, ttl_ms) = all_pages::<rmcp::model::ListToolsRequestMethod, _>(
                peer,
                |params| ClientRequest::ListToolsRequest(list_request(params)),
                |page| match page {
                    ServerResult::ListToolsResult(page) => Some((page.tools, page.next_cursor, page.ttl_ms)),
                    _ => None,
                },
                usize::MAX,
            )
            .await?;
            next_fresh.tools = until(ttl_ms);
            tools
        };
        let instructions = info.as_ref().and_then(|i| i.instructions.as_deref()).map(Arc::from);
        let mut offerings = Offerings { instructions, ..Offerings::default() };
        let mut serves_skills = false;
        for (name, settings) in info.as_ref().and_then(|i| i.capabilities.extensions.as_ref()).into_iter().flatten() {
            if CARRIED_EXTENSIONS.contains(&name.as_str()) {
                offerings.extensions.insert(name.clone(), Json::Object(settings.clone()));
            } else if name == rmcp::model::SKILLS_EXTENSION_ID {
                serves_skills = true;
            } else {
                offerings.withheld_extensions.push(name.clone());
            }
        }
        if serves_skills && !self.common.skills.import {
            offerings.skills_left_out.push("the server serves skills: `skills: { import: true }` adds them to the `skill` tool".into());
        }
        // A server says its skills changed as it says its resources did.
        if serves_skills && self.common.skills.import && !changed.resources {
            (offerings.skills, offerings.skills_left_out) = (last.skills.clone(), last.skills_left_out.clone());
        } else if serves_skills && self.common.skills.import {
            match import_skills(peer).await {
                Ok((skills, left_out)) => {
                    offerings.skills = Arc::new(skills);
                    offerings.skills_left_out = left_out;
                }
                Err(why) => {
                    // Nothing of an unreadable list is published: the last good one stays.
                    offerings.skills = last.skills.clone();
                    offerings.skills_left_out = vec![format!("skills not imported again ({why}): the last list stays")];
                }
            }
        }
        if declares(|c| c.prompts.is_some()) && reused(fresh.prompts) {
            next_fresh.prompts = fresh.prompts;
            offerings.prompts = last.prompts.clone();
        } else if declares(|c| c.prompts.is_some()) {
            let (prompts, ttl_ms) = all_pages::<rmcp::model::ListPromptsRequestMethod, _>(
                peer,
                |params| ClientRequest::ListPromptsRequest(list_request(params)),
                |page| match page {
                    ServerResult::ListPromptsResult(page) => Some((page.prompts, page.next_cursor, page.ttl_ms)),
                    _ => None,
                },
                usize::MAX,
            )
            .await?;
            (offerings.prompts, next_fresh.prompts) = (prompts, until(ttl_ms));
        }
        if declares(|c| c.resources.is_some()) && reused(fresh.resources) {
            next_fresh.resources = fresh.resources;
            (offerings.resources, offerings.templates) = (last.resources.clone(), last.templates.clone());
        } else if declares(|c| c.resources.is_some()) {
            let (resources, resources_ttl_ms) = all_pages::<rmcp::model::ListResourcesRequestMethod, _>(
                peer,
                |params| ClientRequest::ListResourcesRequest(list_request(params)),
                |page| match page {
                    ServerResult::ListResourcesResult(page) => Some((page.resources, page.next_cursor, page.ttl_ms)),
                    _ => None,
                },
                usize::MAX,
            )
            .await?;
            let templates = |params| ClientRequest::ListResourceTemplatesRequest(list_request(params));
            let (templates, templates_ttl_ms) = all_pages::<rmcp::model::ListResourceTemplatesRequestMethod, _>(
                peer,
                templates,
                |page| match page {
                    ServerResult::ListResourceTemplatesResult(page) => Some((page.resource_templates, page.next_cursor, page.ttl_ms)),
                    _ => None,
                },
                usize::MAX,
            )
            .await?;
            // The two lists are one: reused while both are fresh.
            let ttl_ms = resources_ttl_ms.zip(templates_ttl_ms).map(|(a, b)| a.min(b));
            (offerings.resources, offerings.templates, next_fresh.resources) = (resources, templates, until(ttl_ms));
        }
        let (tools, offerings) = (Arc::new(tools), Arc::new(offerings));
        let next = self.import(&tools, &offerings)?;
        *self.listed.lock().expect("listing lock") = tools;
        *self.listed_offers.lock().expect("listing lock") = offerings;
        *self.fresh_until.lock().expect("fresh lock") = next_fresh;
        self.publish(next);
        Ok(())
    }

    /// Swaps a new tool map in whole; tells the engine when clients would see a difference.
    fn publish(&self, next: Imports) {
        let changed = {
            let mut current = self.imports.lock().expect("imports lock");
            if current.colliding != next.colliding {
                for (name, raws) in &next.colliding {
                    tracing::warn!(mount = %self.id, "tools {raws:?} all map to the name `{name}`: they are left out, the server's other tools are served");
                }
                self.cx.status.notify();
            }
            let changed = current.specs != next.specs || current.offers != next.offers;
            *current = Arc::new(next);
            changed
        };
        if changed {
            self.cx.changes.notify();
        }
    }

    /// The server's tools as clients see them. A name two of them map to (`a.b`
    /// hashes to a clean name the server also lists) is left out, those tools
    /// only: a call could not tell which was meant, and the others are still
    /// good. (A raw name listed twice fails the sync: the server contradicts itself.)
    fn import(&self, tools: &[rmcp::model::Tool], offerings: &Offerings) -> Result<Imports, SyncError> {
        let filters = self.filter.lock().expect("filter lock");
        let filter = &filters.tools;
        let mut raw_seen = HashSet::new();
        let mut specs = Vec::new();
        let mut by_name: HashMap<String, Imported> = HashMap::new();
        let mut colliding: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
        for tool in tools {
            let raw = tool.name.to_string();
            if !raw_seen.insert(raw.clone()) {
                return Err(SyncError::ToolListedTwice { name: raw });
            }
            if !filter.admits(&raw) {
                continue;
            }
            let name = self.client_name(&raw);
            if let Some(kept) = colliding.get_mut(&name) {
                kept.push(raw);
                continue;
            }
            if let Some(first) = by_name.remove(&name) {
                colliding.insert(name, vec![first.raw, raw]);
                continue;
            }
            let output =
                tool.output_schema.as_ref().and_then(|s| jsonschema::validator_for(&Json::Object((**s).clone())).ok()).map(Arc::new);
            let mut definition = match serde_json::to_value(tool) {
                Ok(Json::Object(o)) => o,
                _ => return Err(SyncError::ToolWithoutJson { name: raw }),
            };
            definition.insert("name".into(), Json::String(name.clone()));
            by_name.insert(name.clone(), Imported { raw, output });
            specs.push(ToolSpec { name, definition: Arc::new(definition) });
        }
        specs.retain(|s| !colliding.contains_key(&s.name));
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let colliding: Vec<(String, Vec<String>)> = colliding
            .into_iter()
            .map(|(name, mut raws)| {
                raws.sort();
                (name, raws)
            })
            .collect();
        let (prompts, by_prompt_name, colliding_prompts) = self.import_prompts(&offerings.prompts, &filters.prompts)?;
        let mut colliding = colliding;
        colliding.extend(colliding_prompts);
        let resources = definitions(offerings.resources.iter().filter(|r| filters.resources.admits(&r.uri)), |r| r.uri.clone())?;
        let templates =
            definitions(offerings.templates.iter().filter(|t| filters.resources.admits(&t.uri_template)), |t| t.uri_template.clone())?;
        // An MCP Apps view a served tool names is readable through this mount, listed or not.
        let mut views: Vec<String> = specs
            .iter()
            .filter_map(|spec| spec.definition.get("_meta")?.get("ui")?.get("resourceUri")?.as_str().map(str::to_owned))
            .collect();
        views.sort();
        views.dedup();
        let offers = Offers {
            prompts,
            resources,
            templates,
            instructions: offerings.instructions.clone(),
            extensions: offerings.extensions.clone(),
            views,
            skills: offerings.skills.clone(),
        };
        Ok(Imports { specs: Arc::new(specs), by_name, colliding, offers: Arc::new(offers), prompts: by_prompt_name })
    }

    /// The name clients see for the server's tool or prompt `raw` (`naming`).
    fn client_name(&self, raw: &str) -> String {
        match self.common.naming {
            crate::Naming::Prefixed => tool_name(&self.id, raw),
            crate::Naming::Raw => raw.to_owned(),
        }
    }

    /// The server's prompts that pass the filter, named as tools are; a final
    /// name two prompts map to is left out, as for tools.
    #[allow(clippy::type_complexity)]
    fn import_prompts(
        &self,
        prompts: &[rmcp::model::Prompt],
        filter: &Filter,
    ) -> Result<(Vec<Offered>, HashMap<String, String>, Vec<(String, Vec<String>)>), SyncError> {
        let mut raws: std::collections::BTreeMap<String, Vec<&rmcp::model::Prompt>> = std::collections::BTreeMap::new();
        let mut raw_seen = HashSet::new();
        for prompt in prompts {
            if !raw_seen.insert(prompt.name.as_str()) {
                return Err(SyncError::PromptListedTwice { name: prompt.name.clone() });
            }
            if filter.admits(&prompt.name) {
                raws.entry(self.client_name(&prompt.name)).or_default().push(prompt);
            }
        }
        let (mut offered, mut by_name, mut colliding) = (Vec::new(), HashMap::new(), Vec::new());
        for (name, same) in raws {
            if let [prompt] = same[..] {
                let mut definition = match serde_json::to_value(prompt) {
                    Ok(Json::Object(o)) => o,
                    _ => return Err(SyncError::PromptWithoutJson { name: prompt.name.clone() }),
                };
                definition.insert("name".into(), Json::String(name.clone()));
                by_name.insert(name.clone(), prompt.name.clone());
                offered.push(Offered { key: name, definition: Arc::new(definition) });
            } else {
                let mut names: Vec<String> = same.iter().map(|p| p.name.clone()).collect();
                names.sort();
                colliding.push((name, names));
            }
        }
        Ok((offered, by_name, colliding))
    }

    /// A request for a prompt, a resource or a completion, relayed to the server.
    async fn request_inner(
        self: Arc<Self>,
        request: MountRequest,
        client: Client,
        cancel: CancellationToken,
    ) -> Result<Json, RequestError> {
        let imports = self.imports.lock().expect("imports lock").clone();
        let link = self.link.lock().expect("link lock").clone();
        let Some(link) = link else {
            let why = self.status.get().detail.unwrap_or_else(|| "not connected".to_owned());
            return Err(RequestError::Unavailable(format!("MCP server `{}` is unavailable: {why}", self.id)));
        };
        let unknown =
            |what: String| RequestError::Unknown(format!("MCP server `{}` has no {}", self.id, seam_engine::runtime::echoed(&what)));
        let (what, request) = match request {
            MountRequest::GetPrompt { name, arguments } => {
                let raw = imports.prompts.get(&name).ok_or_else(|| unknown(format!("prompt `{name}`")))?;
                let params = rmcp::model::GetPromptRequestParams::new(raw.clone()).with_arguments(arguments);
                (format!("prompt `{name}`"), ClientRequest::GetPromptRequest(rmcp::model::GetPromptRequest::new(params)))
            }
            MountRequest::ReadResource { uri } => {
                let params = rmcp::model::ReadResourceRequestParams::new(uri.clone());
                (format!("resource `{uri}`"), ClientRequest::ReadResourceRequest(rmcp::model::ReadResourceRequest::new(params)))
            }
            MountRequest::Complete { mut params } => {
                // A prompt is completed by the name the server gave it.
                if let Some(Json::Object(reference)) = params.get_mut("ref")
                    && reference.get("type").and_then(Json::as_str) == Some("ref/prompt")
                    && let Some(Json::String(name)) = reference.get_mut("name")
                {
                    *name = imports.prompts.get(name.as_str()).ok_or_else(|| unknown(format!("prompt `{name}`")))?.clone();
                }
                let params: rmcp::model::CompleteRequestParams =
                    serde_json::from_value(Json::Object(params)).map_err(|e| RequestError::Upstream {
                        code: rmcp::model::ErrorCode::INVALID_PARAMS.0,
                        message: format!("completion/complete: {e}"),
                        data: None,
                    })?;
                ("completions".to_owned(), ClientRequest::CompleteRequest(rmcp::model::CompleteRequest::new(params)))
            }
            MountRequest::Task { method, params } => {
                let unreadable = |e: serde_json::Error| RequestError::Upstream {
                    code: rmcp::model::ErrorCode::INVALID_PARAMS.0,
                    message: format!("{}: {e}", method.name()),
                    data: None,
                };
                let params = Json::Object(params);
                let request = match method {
                    TaskMethod::Get => {
                        ClientRequest::GetTaskRequest(rmcp::model::GetTaskRequest::new(serde_json::from_value(params).map_err(unreadable)?))
                    }
                    TaskMethod::Update => ClientRequest::UpdateTaskRequest(rmcp::model::UpdateTaskRequest::new(
                        serde_json::from_value(params).map_err(unreadable)?,
                    )),
                    TaskMethod::Cancel => ClientRequest::CancelTaskRequest(rmcp::model::CancelTaskRequest::new(
                        serde_json::from_value(params).map_err(unreadable)?,
                    )),
                };
                (method.name().to_owned(), request)
            }
        };
        // A request about a task declares tasks, as the call that made the task did.
        let about_task =
            matches!(request, ClientRequest::GetTaskRequest(_) | ClientRequest::UpdateTaskRequest(_) | ClientRequest::CancelTaskRequest(_));
        let mut request = request;
        // A 2026-07-28 server asks by answering `input_required`, as for a call (`call_inner`).
        for round in 0..=MAX_INPUT_ROUNDS {
            let options = request_options(&client, speaks_modern(&link), about_task);
            let handle = link
                .send_cancellable_request(request.clone(), options)
                .await
                .map_err(|e| RequestError::Unavailable(self.unreachable_request(e, &what)))?;
            // Entered as a call is: the server's questions and progress while it answers reach `client`.
            // Not a request about a task: a task's server asks through its `inputRequests`, and a poll
            // in flight must not make another session's call look like one of several.
            let _entered = (!about_task).then(|| self.calls.enter(handle.id.clone(), handle.progress_token.clone(), client.clone()));
            // Given up on (the client's cancellation, `call_timeout`), the request is abandoned at the server too.
            let mut abandoned = seam_wire::Abandoned(Some((link.clone(), handle.id.clone())));
            let answered = tokio::select! {
                r = tokio::time::timeout(self.common.call_timeout.to_std(), handle.await_response()) => r,
                _ = cancel.cancelled() => return Err(RequestError::Unavailable(format!("the request for {what} was cancelled"))),
            };
            let result = match answered {
                Err(_) => {
                    return Err(RequestError::Unavailable(format!(
                        "MCP server `{}` did not answer for {what} within call_timeout {}",
                        self.id, self.common.call_timeout
                    )));
                }
                Ok(answer) => {
                    abandoned.0 = None;
                    match answer {
                        Err(ServiceError::McpError(e)) => return Err(seam_wire::relayed(e)),
                        Err(e) => return Err(RequestError::Unavailable(self.unreachable_request(e, &what))),
                        Ok(result) => result,
                    }
                }
            };
            let ServerResult::InputRequiredResult(asked) = result else {
                return serde_json::to_value(result).map_err(|e| RequestError::Unavailable(format!("{what}: {e}")));
            };
            if round == MAX_INPUT_ROUNDS {
                return Err(RequestError::Unavailable(format!("{what}: {}", InputError::Rounds)));
            }
            let responses = self.answer_input(&asked, &client).await.map_err(|e| RequestError::Unavailable(format!("{what}: {e}")))?;
            request = with_answers(request, responses, asked.request_state);
        }
        unreachable!("the last round returns")
    }

    /// What seam follows on a 2026-07-28 server's `subscriptions/listen` stream: the lists
    /// the server says may change, and the resources clients want updates of (`Interest`);
    /// `None` when there is nothing (a legacy server notifies its session instead).
    fn listen_filter(&self, peer: &Peer<RoleClient>) -> Option<rmcp::model::SubscriptionFilter> {
        let capabilities = peer.peer_info().filter(|_| speaks_modern(peer)).map(|info| info.capabilities.clone())?;
        let mut filter = rmcp::model::SubscriptionFilter::builder();
        let mut wanted = false;
        if capabilities.tools.as_ref().is_some_and(|t| t.list_changed == Some(true)) {
            (filter, wanted) = (filter.tools_list_changed(), true);
        }
        if capabilities.prompts.as_ref().is_some_and(|p| p.list_changed == Some(true)) {
            (filter, wanted) = (filter.prompts_list_changed(), true);
        }
        let resources = capabilities.resources.as_ref();
        if resources.is_some_and(|r| r.list_changed == Some(true)) {
            (filter, wanted) = (filter.resources_list_changed(), true);
        }
        let mut uris = self.cx.interest.subscribed();
        uris.sort();
        if resources.is_some_and(|r| r.subscribe == Some(true)) && !uris.is_empty() {
            (filter, wanted) = (filter.resource_subscriptions(uris), true);
        }
        wanted.then(|| filter.build())
    }

    /// Listens (again) with what seam follows now, unless the open stream already asks for
    /// just that. A new stream replaces the old one once open, so no update falls between;
    /// if the old one was lost, what changed meanwhile is unknown and every list is asked
    /// for again. One that cannot be opened (within `startup_timeout`) is tried again after
    /// a liveness interval (`retry_at`), the old one kept meanwhile.
    async fn listen_again(
        &self,
        peer: &Peer<RoleClient>,
        listening: &mut Option<Listening>,
        retry_at: &mut Option<tokio::time::Instant>,
        resync: &mpsc::UnboundedSender<Changed>,
    ) {
        use futures::FutureExt as _;
        let asked = self.listens_asked.load(std::sync::atomic::Ordering::SeqCst);
        let Some(filter) = self.listen_filter(peer) else {
            (*listening, *retry_at) = (None, None);
            self.listens_opened.send_replace(asked);
            return;
        };
        if retry_at.is_none() && listening.as_ref().is_some_and(|open| open.filter == filter) {
            self.listens_opened.send_replace(asked);
            return;
        }
        let opened = match tokio::time::timeout(self.common.startup_timeout.to_std(), peer.listen(filter.clone())).await {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(e)) => {
                tracing::warn!(mount = %self.id, "subscriptions/listen could not be opened ({}); trying again shortly", InWords(&e));
                None
            }
            Err(_) => {
                tracing::warn!(mount = %self.id, "subscriptions/listen was not acknowledged within startup_timeout; trying again shortly");
                None
            }
        };
        let Some(opened) = opened else {
            *retry_at = Some(tokio::time::Instant::now() + self.liveness_interval());
            return;
        };
        let mut lost = listening.is_none() && retry_at.is_some();
        // What the old stream still holds is heard; if it had ended unnoticed, what changed
        // since is unknown too.
        if let Some(mut old) = listening.take() {
            while let Some(heard) = old.stream.next().now_or_never() {
                match heard {
                    Ok(Some(notification)) => self.hear(notification, resync),
                    Ok(None) | Err(_) => {
                        lost = true;
                        break;
                    }
                }
            }
        }
        if lost {
            let _ = resync.send(Changed::ALL);
        }
        (*listening, *retry_at) = (Some(Listening { filter, stream: opened }), None);
        self.listens_opened.send_replace(asked);
    }

    /// What a 2026-07-28 server said on the mount's listen stream: a list changed (it is
    /// listed again), a resource was updated (the clients following it are told).
    fn hear(&self, notification: ServerNotification, resync: &mpsc::UnboundedSender<Changed>) {
        let changed = match notification {
            ServerNotification::ToolListChangedNotification(_) => Changed { tools: true, ..Changed::default() },
            ServerNotification::PromptListChangedNotification(_) => Changed { prompts: true, ..Changed::default() },
            ServerNotification::ResourceListChangedNotification(_) => Changed { resources: true, ..Changed::default() },
            ServerNotification::ResourceUpdatedNotification(n) => {
                self.cx.events.send(MountEvent::ResourceUpdated { mount: self.id.clone(), uri: n.params.uri });
                return;
            }
            _ => return,
        };
        let _ = resync.send(changed);
    }

    /// Asks the supervisor to listen again with what seam follows now; the ask's number.
    fn ask_to_listen(&self) -> u64 {
        let asked = self.listens_asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        self.relisten.notify_one();
        asked
    }

    /// What clients want of this mount (`BuildCx::interest`), asked of a new connection: the
    /// log level, the subscriptions (for a 2026-07-28 server, in its listen stream's filter).
    /// A connection after a reconnect, or of a build that a reload made in place of another,
    /// serves the same clients as the one before.
    #[allow(deprecated)]
    async fn restore(&self, peer: &Peer<RoleClient>) {
        if speaks_modern(peer) {
            // 2026-07-28 has neither `logging/setLevel` nor `resources/subscribe`: the URIs
            // are in the filter of the stream the connection opened (`listen_again`).
            return;
        }
        let level = self.cx.interest.log_level.lock().expect("level lock").as_deref().and_then(seam_wire::level_named);
        if let Some(level) = level {
            self.send_log_level(peer, level).await;
        }
        for uri in self.cx.interest.subscribed() {
            if let Err(e) = peer.subscribe(rmcp::model::SubscribeRequestParams::new(uri.clone())).await {
                tracing::warn!(mount = %self.id, "resources/subscribe `{uri}` after reconnecting failed: {}", InWords(&e));
            }
        }
    }

    #[allow(deprecated)]
    async fn send_log_level(&self, peer: &Peer<RoleClient>, level: rmcp::model::LoggingLevel) {
        if speaks_modern(peer) || peer.peer_info().is_none_or(|i| i.capabilities.logging.is_none()) {
            return;
        }
        if let Err(e) = peer.set_level(rmcp::model::SetLevelRequestParams::new(level)).await {
            tracing::warn!(mount = %self.id, "logging/setLevel failed: {}", InWords(&e));
        }
    }

    /// Asks the server to subscribe to `uri` (or to stop); the deployment counted the
    /// sessions. A server that is gone, or offers no subscriptions, has nothing to be told
    /// of an end: the count is down, so no reconnect asks again.
    #[allow(deprecated)]
    async fn subscribe_inner(self: Arc<Self>, uri: String, on: bool) -> Result<(), RequestError> {
        let link = self.link.lock().expect("link lock").clone();
        let Some(link) = link else {
            return if on { Err(RequestError::Unavailable(format!("MCP server `{}` is unavailable", self.id))) } else { Ok(()) };
        };
        if link.peer_info().is_none_or(|i| i.capabilities.resources.as_ref().is_none_or(|r| r.subscribe != Some(true))) {
            if !on {
                return Ok(());
            }
            let message = format!("MCP server `{}` offers no resource subscriptions", self.id);
            return Err(RequestError::Upstream { code: rmcp::model::ErrorCode::METHOD_NOT_FOUND.0, message, data: None });
        }
        if speaks_modern(&link) {
            // The deployment counted the interest: the supervisor listens again with it, and the
            // client is answered once the server has the stream (or at `startup_timeout`).
            let asked = self.ask_to_listen();
            let mut opened = self.listens_opened.subscribe();
            let _ = tokio::time::timeout(self.common.startup_timeout.to_std(), opened.wait_for(|o| *o >= asked)).await;
            return Ok(());
        }
        let answer = if on {
            link.subscribe(rmcp::model::SubscribeRequestParams::new(uri.clone())).await
        } else {
            link.unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri.clone())).await
        };
        match answer {
            Ok(()) => Ok(()),
            Err(ServiceError::McpError(e)) => Err(seam_wire::relayed(e)),
            Err(e) => Err(RequestError::Unavailable(self.unreachable_request(e, &format!("subscription to `{uri}`")))),
        }
    }

    /// A request that could not reach the server: the connection is treated as closed when the transport failed.
    fn unreachable_request(&self, e: ServiceError, what: &str) -> String {
        if matches!(e, ServiceError::TransportClosed | ServiceError::TransportSend(_)) {
            self.broken.notify_waiters();
        }
        format!("MCP server `{}` is unreachable for {what}: {}", self.id, InWords(&e))
    }

    async fn call_inner(
        self: Arc<Self>,
        tool: String,
        arguments: Map<String, Json>,
        cancel: CancellationToken,
        client: Client,
    ) -> ToolOutput {
        let imports = self.imports.lock().expect("imports lock").clone();
        let Some(imported) = imports.by_name.get(&tool) else {
            return ToolOutput::error(seam_engine::codes::TOOL_UNKNOWN, format!("MCP server `{}` has no tool `{tool}`", self.id));
        };
        let peer = self.link.lock().expect("link lock").clone();
        let Some(peer) = peer else {
            let status = self.status.get();
            let why = status.detail.unwrap_or_else(|| "not connected".to_owned());
            return ToolOutput::error(crate::codes::MCP_UNAVAILABLE, format!("MCP server `{}` is unavailable: {why}", self.id));
        };
        // The call is entered under the id and progress token rmcp gives it, so that the server's
        // questions and progress reach `client`; dropping it (timeout, cancellation) tells the server.
        // A task is asked for only for a client that can hold one, of a server that makes them.
        let tasks =
            client.link().is_some_and(|link| link.takes_tasks()) && peer.peer_info().is_some_and(|info| info.capabilities.supports_tasks());
        let call = async {
            // A 2026-07-28 server asks by answering `input_required`: each round's questions go to the
            // client (by request, or in its own `input_required`), and the call is sent again with the answers.
            let params = CallToolRequestParams::new(imported.raw.clone()).with_arguments(arguments);
            let mut request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
            for round in 0..=MAX_INPUT_ROUNDS {
                let options = request_options(&client, speaks_modern(&peer), tasks);
                let handle = match peer.send_cancellable_request(request.clone(), options).await {
                    Ok(handle) => handle,
                    Err(e) => return Err(self.failure(e, &tool)),
                };
                let _entered = self.calls.enter(handle.id.clone(), handle.progress_token.clone(), client.clone());
                let mut abandoned = seam_wire::Abandoned(Some((peer.clone(), handle.id.clone())));
                // Boxed: rmcp's response future is large, and every call's state would be as large as it.
                let answered = Box::pin(handle.await_response()).await;
                abandoned.0 = None;
                return match answered {
                    Ok(ServerResult::CallToolResult(result)) => answer_of(CallToolResponse::Complete(result), &tool, tasks),
                    Ok(ServerResult::CreateTaskResult(task)) => answer_of(CallToolResponse::Task(task), &tool, tasks),
                    Ok(ServerResult::InputRequiredResult(asked)) => {
                        let failed = |e: InputError| ToolOutput::error(crate::codes::MCP_INPUT_REQUIRED, format!("`{tool}`: {e}"));
                        if round == MAX_INPUT_ROUNDS {
                            return Err(ToolOutput::error(
                                crate::codes::MCP_INPUT_ROUNDS_EXCEEDED,
                                format!("`{tool}`: {}", InputError::Rounds),
                            ));
                        }
                        let responses = self.answer_input(&asked, &client).await.map_err(failed)?;
                        request = with_answers(request, responses, asked.request_state);
                        continue;
                    }
                    Ok(ServerResult::EmptyResult(_)) => answer_of(CallToolResponse::Complete(Default::default()), &tool, tasks),
                    Ok(_) => Err(ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("`{tool}`: unexpected answer to tools/call"))),
                    Err(e) => Err(self.failure(e, &tool)),
                };
            }
            unreachable!("the last round returns")
        };
        let answered = tokio::select! {
            r = tokio::time::timeout(self.common.call_timeout.to_std(), call) => r,
            _ = cancel.cancelled() => return ToolOutput::error(seam_engine::codes::TOOL_CANCELLED, format!("the call to `{tool}` was cancelled")),
        };
        let output = match answered {
            Err(_) => {
                return ToolOutput::error(
                    seam_engine::codes::TOOL_TIMEOUT,
                    format!("MCP server `{}` did not answer `{tool}` within call_timeout {}", self.id, self.common.call_timeout),
                );
            }
            Ok(Err(failed)) => return failed,
            Ok(Ok(output)) => output,
        };
        if let (Some(schema), false) = (&imported.output, output.is_error) {
            let problem = match &output.structured_content {
                None => Some("it advertises an output schema but sent no structuredContent".to_owned()),
                Some(s) => schema.iter_errors(s).next().map(|e| format!("structuredContent does not match its output schema: {e}")),
            };
            if let Some(problem) = problem {
                return ToolOutput::error(crate::codes::MCP_OUTPUT_INVALID, format!("`{tool}`: {problem}"));
            }
        }
        output
    }

    /// The client's answers to one round of a 2026-07-28 server's questions (`inputRequests`),
    /// asked as a legacy server's questions are: each only if the client declared it, counted
    /// in `/status`; `roots/list` from the workspace root unless the mount says `roots: client`.
    async fn answer_input(
        &self,
        asked: &rmcp::model::InputRequiredResult,
        client: &Client,
    ) -> Result<rmcp::model::InputResponses, InputError> {
        use seam_engine::runtime::AskKind;
        let mut responses = rmcp::model::InputResponses::new();
        // Asked (and counted) only once the whole round can be: a round with a question the
        // client cannot answer asks none of them.
        let mut asking = Vec::new();
        for (key, question) in asked.input_requests.iter().flatten() {
            let (kind, params) = match question {
                rmcp::model::InputRequest::CreateMessage(request) => (AskKind::Sampling, serde_json::to_value(&request.params)),
                rmcp::model::InputRequest::Elicitation(request) => (AskKind::Elicitation, serde_json::to_value(&request.params)),
                rmcp::model::InputRequest::ListRoots(_) => (AskKind::Roots, Ok(Json::Null)),
                _ => return Err(InputError::Unknown { key: key.clone() }),
            };
            let params = params.map_err(|_| InputError::Unknown { key: key.clone() })?;
            let link = client.link();
            let declared = link.is_some_and(|link| link.declares(kind, &params));
            if kind == AskKind::Roots && (self.common.roots == crate::RootsFrom::Workspace || !declared) {
                let root = WorkspaceRoot { built: self.cx.workspace.clone(), live: self.cx.live_workspace.clone() }.root();
                responses.insert(key.clone(), serde_json::to_value(workspace_roots(root)).unwrap_or_default());
                continue;
            }
            let link = link.ok_or(InputError::NoClient)?;
            if !declared {
                self.calls.count(kind, false);
                return Err(InputError::Undeclared { agent: link.agent().to_owned(), what: kind.capability() });
            }
            let key = key.clone();
            asking.push(async move {
                let answer = self.calls.ask(link.as_ref(), kind, params, Some(key.clone())).await;
                answer.map(|answer| (key.clone(), answer)).map_err(|source| InputError::Unanswered { key, source })
            });
        }
        // Asked together: a client of 2026-07-28 gets a round's questions in one `input_required`.
        responses.extend(futures::future::try_join_all(asking).await?);
        Ok(responses)
    }

    /// An rmcp call that got no result.
    fn failure(&self, e: ServiceError, tool: &str) -> ToolOutput {
        match e {
            ServiceError::McpError(e) => match seam_wire::stdio::line_limit_of(&e) {
                // The answer was a line past the limit, which the transport discarded: it handed rmcp this error in its place.
                Some(limit) => ToolOutput::error(
                    crate::codes::MCP_FRAME_TOO_LARGE,
                    format!("`{tool}`: the server's answer is longer than the line limit of {limit} bytes and was discarded"),
                ),
                // The client acts on these errors itself (opens the URLs, or declares the capability,
                // and calls again): it gets the error as it is.
                // Without a client (`seam call`), the URLs to open are said in the result.
                None if e.code.0 == crate::asks::URL_ELICITATION_REQUIRED => {
                    let elicitations = e.data.as_ref().and_then(|d| d.get("elicitations")).and_then(Json::as_array);
                    let urls: Vec<&str> =
                        elicitations.into_iter().flatten().filter_map(|el| el.get("url").and_then(Json::as_str)).collect();
                    let open = if urls.is_empty() { String::new() } else { format!("; open {} and call again", urls.join(", ")) };
                    ToolOutput {
                        relayed_error: Some(Box::new(seam_wire::relayed(e.clone()))),
                        ..ToolOutput::error(crate::codes::MCP_URL_ELICITATION_REQUIRED, format!("`{tool}`: {}{open}", e.message))
                    }
                }
                None if e.code == rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => ToolOutput {
                    relayed_error: Some(Box::new(seam_wire::relayed(e.clone()))),
                    ..ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("`{tool}`: {}", e.message))
                },
                None => ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("`{tool}`: {}", e.message)),
            },
            e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)) => self.unreachable(e, tool),
            e => ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("`{tool}`: {}", InWords(&e))),
        }
    }

    fn unreachable(&self, why: impl std::fmt::Display, tool: &str) -> ToolOutput {
        // Wakes the supervisor only if it is serving now: no stale signal can break a later connection.
        self.broken.notify_waiters();
        ToolOutput::error(crate::codes::MCP_UNAVAILABLE, format!("MCP server `{}` is unreachable during `{tool}`: {why}", self.id))
    }
}

/// What a call's typed answer means: `Ok` a result (its output schema still to
/// check); `Err` what to give as it is: an error result, or a task when the call
/// declared tasks.
fn answer_of(response: CallToolResponse, tool: &str, tasks: bool) -> Result<ToolOutput, ToolOutput> {
    let result = match response {
        CallToolResponse::Complete(result) => result,
        // The client holds the task, by the id the deployment mints for it.
        CallToolResponse::Task(task) if tasks => {
            let task =
                serde_json::to_value(task).map_err(|e| ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("`{tool}`: {e}")))?;
            return Err(ToolOutput { task: Some(Box::new(task)), ..ToolOutput::default() });
        }
        // A task for a call that did not ask for one: the client could not hold it.
        CallToolResponse::Task(_) => {
            return Err(ToolOutput::error(
                crate::codes::MCP_TASK_REQUIRED,
                format!(
                    "`{tool}` answered with a task the call did not ask for: seam asks for one only when both the calling client and \
                     the server declare the tasks extension"
                ),
            ));
        }
        // `InputRequired` is answered by the call's rounds (`call_inner`): a kind of answer newer than this build.
        _ => return Err(ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("`{tool}`: unexpected answer to tools/call"))),
    };
    Ok(ToolOutput::from_json(serde_json::to_value(result).unwrap_or_default()))
}

/// Until when a list given `now` with caching hint `ttl_ms` may be reused: `ttlMs`
/// later, at most `MAX_LIST_TTL`; never for no hint or `0`.
fn fresh_until(now: Instant, ttl_ms: Option<u64>) -> Option<Instant> {
    ttl_ms.filter(|ms| *ms > 0).map(|ms| now + Duration::from_millis(ms).min(MAX_LIST_TTL))
}

/// A mount's open `subscriptions/listen` stream, and what it asked for.
struct Listening {
    filter: rmcp::model::SubscriptionFilter,
    stream: rmcp::service::Subscription,
}

/// The next notification on a mount's `subscriptions/listen` stream; `None` once it
/// ended (or failed). Without a stream, never.
async fn next_heard(listening: &mut Option<Listening>) -> Option<ServerNotification> {
    match listening {
        Some(open) => open.stream.next().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// Whether the connection speaks 2026-07-28 (discovered, no session): what the mount's
/// `protocol` asked for, or what `auto` found.
fn speaks_modern(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info().is_some_and(|info| !info.protocol_version.has_initialize())
}

/// A `tools/list`-shaped request for one page.
fn list_request<M: Default>(params: PaginatedRequestParams) -> rmcp::model::RequestOptionalParam<M, PaginatedRequestParams> {
    rmcp::model::RequestOptionalParam { method: M::default(), params: Some(params), extensions: Default::default() }
}

/// Every page of one list, sent as plain requests (rmcp's own `list_*` may
/// answer a failure from its cache), and how long the whole may be reused (the
/// shortest `ttlMs` of its pages, 2026-07-28; none from older servers); a
/// repeated cursor is an error. Of a list beside the tools, a server that
/// answers "method not found" lists nothing: servers that declare `resources`
/// without templates do.
async fn all_pages<M: rmcp::model::ConstString, T>(
    peer: &Peer<RoleClient>,
    request: impl Fn(PaginatedRequestParams) -> ClientRequest,
    page: impl Fn(ServerResult) -> Option<(Vec<T>, Option<String>, Option<u64>)>,
    most: usize,
) -> Result<(Vec<T>, Option<u64>), SyncError> {
    let method = M::VALUE;
    let mut items = Vec::new();
    let mut ttl_ms: Option<u64> = Some(u64::MAX);
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    loop {
        let answer = match peer.send_request(request(PaginatedRequestParams::default().with_cursor(cursor.clone()))).await {
            Err(ServiceError::McpError(e))
                if e.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND
                    && method != <rmcp::model::ListToolsRequestMethod as rmcp::model::ConstString>::VALUE =>
            {
                tracing::debug!("the server does not answer {method}: it lists nothing there");
                return Ok((items, None));
            }
            answer => answer.map_err(|source| SyncError::ListFailed { method, source })?,
        };
        let (listed, next, page_ttl_ms) = page(answer).ok_or(SyncError::UnexpectedAnswer { method })?;
        items.extend(listed);
        // A page without a hint makes the whole list one to ask for each time.
        ttl_ms = ttl_ms.zip(page_ttl_ms).map(|(a, b)| a.min(b));
        if items.len() > most {
            return Err(SyncError::PastBound { method, most });
        }
        match next {
            None => return Ok((items, ttl_ms)),
            Some(next) if !seen.insert(next.clone()) => return Err(SyncError::RepeatedCursor { method, cursor: next }),
            Some(next) => cursor = Some(next),
        }
    }
}

/// The skills a server lists over MCP's skills extension, by name, and what of its
/// list is left out, each with why: an entry the extension's rules refuse
/// (`Skill::validate`), one whose files are `dynamic` (no digest to check a body
/// against), a name listed twice (the first URI is kept). A list past
/// `MAX_IMPORTED_SKILLS` is an error.
async fn import_skills(peer: &Peer<RoleClient>) -> Result<(Vec<ImportedSkill>, Vec<String>), SyncError> {
    let listed = all_pages::<rmcp::model::ListSkillsRequestMethod, _>(
        peer,
        |params| ClientRequest::ListSkillsRequest(list_request(params)),
        |page| match page {
            ServerResult::ListSkillsResult(page) => Some((page.skills, page.next_cursor, page.ttl_ms)),
            _ => None,
        },
        MAX_IMPORTED_SKILLS,
    )
    .await?
    .0;
    let mut left_out = Vec::new();
    let mut skills = Vec::new();
    for skill in listed {
        if let Err(e) = skill.validate() {
            left_out.push(format!("skill `{}`: {e}", skill.uri));
            continue;
        }
        let rmcp::model::SkillResources::Files(files) = &skill.resources else {
            left_out.push(format!("skill `{}`: its files are `dynamic`, with no digest to check its body against", skill.uri));
            continue;
        };
        let Some(skill_md) = files.iter().find(|file| file.uri == skill.uri) else {
            left_out.push(format!("skill `{}`: its manifest does not list its SKILL.md", skill.uri));
            continue;
        };
        let Ok(Json::Object(frontmatter)) = serde_json::to_value(&skill.frontmatter) else {
            left_out.push(format!("skill `{}`: its frontmatter has no JSON form", skill.uri));
            continue;
        };
        skills.push(ImportedSkill {
            name: skill.name().to_owned(),
            uri: skill.uri.clone(),
            digest: skill_md.digest.clone(),
            size: skill_md.size,
            frontmatter,
            files: files.iter().map(|f| ImportedFile { uri: f.uri.clone(), digest: f.digest.clone(), size: f.size }).collect(),
        });
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.uri.cmp(&b.uri)));
    skills.dedup_by(|later, first| {
        let twice = later.name == first.name;
        if twice {
            left_out.push(format!("skill `{}`: the name `{}` is also `{}`'s, which is kept", later.uri, later.name, first.uri));
        }
        twice
    });
    Ok((skills, left_out))
}

/// Each item's MCP JSON, keyed and sorted; two items with one key are an error (the server contradicts itself).
fn definitions<'a, T: serde::Serialize + 'a>(
    items: impl Iterator<Item = &'a T>,
    key: impl Fn(&T) -> String,
) -> Result<Vec<Offered>, SyncError> {
    let mut out = Vec::new();
    for item in items {
        let Ok(Json::Object(definition)) = serde_json::to_value(item) else { return Err(SyncError::WithoutJson { key: key(item) }) };
        out.push(Offered { key: key(item), definition: Arc::new(definition) });
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    if let Some(twice) = out.windows(2).find(|w| w[0].key == w[1].key) {
        return Err(SyncError::ListedTwice { key: twice[0].key.clone() });
    }
    Ok(out)
}

/// `config` with `new`'s filters replaced by `old`'s: equal to the old config when only filters changed.
fn same_but_filters<T>(new: &Common, old: &Common, config: impl Fn(Common) -> T) -> T {
    config(Common { tools: old.tools.clone(), prompts: old.prompts.clone(), resources: old.resources.clone(), ..new.clone() })
}

/// What the engine holds: calls need an owned reference to the mount.
struct Handle(Arc<McpMount>);

impl Running for Handle {
    fn status(&self) -> Status {
        self.0.status.get()
    }

    fn tools(&self) -> Arc<Vec<ToolSpec>> {
        self.0.imports.lock().expect("imports lock").specs.clone()
    }

    fn call(&self, tool: &str, arguments: Map<String, Json>, cancel: CancellationToken, client: Client) -> BoxFuture<'static, ToolOutput> {
        Box::pin(self.0.clone().call_inner(tool.to_owned(), arguments, cancel, client))
    }

    fn offers(&self) -> Arc<Offers> {
        self.0.imports.lock().expect("imports lock").offers.clone()
    }

    fn request(&self, request: MountRequest, client: Client, cancel: CancellationToken) -> BoxFuture<'static, Result<Json, RequestError>> {
        Box::pin(self.0.clone().request_inner(request, client, cancel))
    }

    #[allow(deprecated)]
    fn raise_log_level(&self, level: &str) {
        let Some(level) = seam_wire::level_named(level) else { return };
        {
            let mut current = self.0.cx.interest.log_level.lock().expect("level lock");
            if current.as_deref().and_then(seam_wire::level_named).is_some_and(|c| seam_wire::verbosity(c) >= seam_wire::verbosity(level)) {
                return;
            }
            *current = Some(seam_wire::level_name(level));
        }
        let link = self.0.link.lock().expect("link lock").clone();
        if let Some(link) = link {
            let mount = self.0.clone();
            tokio::spawn(async move { mount.send_log_level(&link, level).await });
        }
    }

    fn subscribe(&self, uri: &str, on: bool) -> BoxFuture<'static, Result<(), RequestError>> {
        Box::pin(self.0.clone().subscribe_inner(uri.to_owned(), on))
    }

    fn connection(&self) -> u64 {
        self.0.connections.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn renew_interest(&self) {
        let link = self.0.link.lock().expect("link lock").clone();
        match link {
            Some(link) if speaks_modern(&link) => {
                self.0.ask_to_listen();
            }
            Some(link) => {
                let mount = self.0.clone();
                tokio::spawn(async move { mount.restore(&link).await });
            }
            None => {}
        }
    }

    fn dispose(&self, within: Duration) -> BoxFuture<'static, ()> {
        self.0.stop.cancel();
        let task = self.0.supervisor.lock().expect("supervisor lock").take();
        let id = self.0.id.clone();
        Box::pin(async move {
            let Some(mut task) = task else { return };
            if tokio::time::timeout(within, &mut task).await.is_err() {
                tracing::warn!(mount = %id, "did not stop within {within:?}; killed");
                task.abort();
            }
        })
    }

    /// A change of the `tools`, `prompts` or `resources` filters alone is applied
    /// to the running server: the last listing is filtered again, no process restarts.
    fn reconfigure(&self, new: &dyn seam_engine::surface::MountConfig) -> Option<Box<dyn FnOnce() + Send>> {
        let new_tools = match (&self.0.transport, new.as_any()) {
            (Transport::Stdio(old), n) => {
                let n = n.downcast_ref::<StdioServer>()?;
                (same_but_filters(&n.common, &old.common, |c| StdioServer { common: c, ..n.clone() }) == *old).then(|| n.common.clone())?
            }
            (Transport::Http(old), n) => {
                let n = n.downcast_ref::<HttpServer>()?;
                (same_but_filters(&n.common, &old.common, |c| HttpServer { common: c, ..n.clone() }) == *old).then(|| n.common.clone())?
            }
        };
        let mount = self.0.clone();
        Some(Box::new(move || {
            *mount.filter.lock().expect("filter lock") = Filters::new(&new_tools);
            let listed = mount.listed.lock().expect("listing lock").clone();
            let offerings = mount.listed_offers.lock().expect("listing lock").clone();
            match mount.import(&listed, &offerings) {
                Ok(next) => mount.publish(next),
                Err(e) => tracing::warn!(mount = %mount.id, "new tool filter not applied: {e}"),
            }
        }))
    }

    fn facts(&self) -> Map<String, Json> {
        let mut facts = Map::new();
        match &self.0.transport {
            Transport::Stdio(_) => {
                facts.insert("pid".into(), self.0.pid.lock().expect("pid lock").map_or(Json::Null, Json::from));
            }
            Transport::Http(config) => {
                facts.insert("url".into(), Json::from(seam_engine::redact::url(&config.url).into_owned()));
            }
        }
        // The revision the connection speaks (what `protocol: auto` found).
        let link = self.0.link.lock().expect("link lock").clone();
        if let Some(info) = link.and_then(|link| link.peer_info().map(|info| info.protocol_version.clone())) {
            facts.insert("protocol_version".into(), Json::from(info.as_str().to_owned()));
        }
        // What the server asked clients during calls: which capabilities it used.
        let asks = self.0.calls.counts();
        if !asks.is_empty() {
            facts.insert("asks".into(), Json::Object(asks));
        }
        // How many URIs clients are subscribed to through this mount.
        let subscribed = self.0.cx.interest.subscriptions.lock().expect("subscriptions lock").len();
        if subscribed > 0 {
            facts.insert("subscriptions".into(), Json::from(subscribed));
        }
        let colliding = self.0.imports.lock().expect("imports lock").colliding.clone();
        let mut warnings: Vec<Json> = colliding
            .iter()
            .map(|(name, raws)| {
                Json::from(format!(
                    "tools {} all map to `{name}`: left out",
                    raws.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
                ))
            })
            .collect();
        let offerings = self.0.listed_offers.lock().expect("listing lock").clone();
        warnings.extend(
            offerings
                .withheld_extensions
                .iter()
                .map(|name| Json::from(format!("extension `{name}` is not declared to clients: seam does not carry its messages"))),
        );
        warnings.extend(offerings.skills_left_out.iter().map(|why| Json::from(why.as_str())));
        // The skills it imports: where each comes from, and the digest its body must match.
        if self.0.common.skills.import {
            let skills = offerings.skills.iter().map(|s| serde_json::json!({ "name": s.name, "uri": s.uri, "digest": s.digest }));
            facts.insert("skills".into(), Json::Array(skills.collect()));
        }
        if !warnings.is_empty() {
            facts.insert("warnings".into(), Json::Array(warnings));
        }
        facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `min(max_delay, initial_delay·2^(n−1))`: doubling from `initial_delay` at the first
    /// attempt, `max_delay` from the attempt whose doubling first exceeds it, and no
    /// overflow at any attempt.
    #[test]
    fn the_reconnect_delay_doubles_up_to_max_delay_and_never_overflows() {
        let ms = seam_engine::units::Duration::from_millis;
        let at = |initial: u64, max: u64, attempt: u32| backoff(ms(initial), ms(max), attempt);
        // The defaults, 500ms and 30s: 500ms·2^5 = 16s is under it, 500ms·2^6 = 32s the first past it.
        let doubled: Vec<u64> = (1..=6).map(|n| at(500, 30_000, n).as_millis() as u64).collect();
        assert_eq!(doubled, [500, 1_000, 2_000, 4_000, 8_000, 16_000]);
        assert_eq!(at(500, 30_000, 7), Duration::from_secs(30));
        assert_eq!(at(500, 30_000, 8), Duration::from_secs(30));
        // A doubling that lands on max_delay exactly is max_delay; the next stays there.
        assert_eq!(at(1_000, 8_000, 4), Duration::from_secs(8));
        assert_eq!(at(1_000, 8_000, 5), Duration::from_secs(8));
        // 2^(n−1) past u64 (n = 65 and beyond), and the longest durations: max_delay, no panic.
        let longest = seam_engine::units::MAX_TIMER.as_millis();
        for attempt in [64, 65, 1_000, u32::MAX] {
            assert_eq!(at(500, 30_000, attempt), Duration::from_secs(30), "attempt {attempt}");
            assert_eq!(at(longest, longest, attempt), Duration::from_millis(longest), "attempt {attempt}");
        }
        // Equal delays: every attempt waits the same.
        assert_eq!(at(250, 250, 1), Duration::from_millis(250));
        assert_eq!(at(250, 250, 2), Duration::from_millis(250));
    }

    /// An `mcp.http` connection is pinged every `max_delay`, held to 1s..=30s: at each
    /// bound it is `max_delay`, one millisecond or one second past it the bound.
    #[test]
    fn the_ping_interval_is_max_delay_held_to_1s_through_30s() {
        let interval = |ms: u64| ping_interval(seam_engine::units::Duration::from_millis(ms));
        assert_eq!(interval(1), Duration::from_secs(1));
        assert_eq!(interval(999), Duration::from_secs(1));
        assert_eq!(interval(1_000), Duration::from_secs(1));
        assert_eq!(interval(1_001), Duration::from_millis(1_001));
        assert_eq!(interval(29_999), Duration::from_millis(29_999));
        assert_eq!(interval(30_000), Duration::from_secs(30));
        assert_eq!(interval(30_001), Duration::from_secs(30));
        assert_eq!(interval(31_000), Duration::from_secs(30));
        assert_eq!(interval(seam_engine::units::MAX_TIMER.as_millis()), Duration::from_secs(30));
    }

    /// A list's caching hint is honoured up to `MAX_LIST_TTL` (an hour), and capped past it;
    /// no hint, or `0`, asks each time.
    #[test]
    fn a_list_is_reused_for_its_ttl_up_to_an_hour() {
        let now = Instant::now();
        let hour = MAX_LIST_TTL.as_millis() as u64;
        assert_eq!(fresh_until(now, Some(hour)), Some(now + MAX_LIST_TTL));
        assert_eq!(fresh_until(now, Some(hour + 1)), Some(now + MAX_LIST_TTL));
        assert_eq!(fresh_until(now, Some(hour - 1)), Some(now + MAX_LIST_TTL - Duration::from_millis(1)));
        assert_eq!(fresh_until(now, Some(0)), None);
        assert_eq!(fresh_until(now, None), None);
    }

    #[test]
    fn clean_names_up_to_64_characters_are_kept_as_written() {
        assert_eq!(tool_name("everything", "get-tiny-image"), "mcp__everything__get-tiny-image");
        let at_limit = "x".repeat(MAX_TOOL_NAME - "mcp__s__".len());
        assert_eq!(tool_name("s", &at_limit).len(), MAX_TOOL_NAME);
        assert_eq!(tool_name("s", &at_limit), format!("mcp__s__{at_limit}"));
    }

    #[test]
    fn a_long_or_unclean_name_is_cut_to_51_characters_and_a_hash_of_the_identity() {
        let one_over = "x".repeat(MAX_TOOL_NAME - "mcp__s__".len() + 1);
        let name = tool_name("s", &one_over);
        assert_eq!(name.len(), MAX_TOOL_NAME);
        assert_eq!(name[..52], format!("{}_", &format!("mcp__s__{one_over}")[..51]));
        assert!(name[52..].chars().all(|c| c.is_ascii_hexdigit()));
        let dotted = tool_name("fs", "read.file");
        assert!(dotted.starts_with("mcp__fs__read_file_") && dotted.len() == "mcp__fs__read_file_".len() + 12, "{dotted}");
        assert!(dotted.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }

    #[test]
    fn names_that_clean_up_the_same_stay_apart_and_do_not_depend_on_order() {
        let (a, b) = (tool_name("fs", "read.file"), tool_name("fs", "read file"));
        assert_ne!(a, b);
        assert_eq!(a, tool_name("fs", "read.file"), "deterministic");
        // The hash covers the server too: the same raw name on two servers differs beyond the prefix.
        assert_ne!(tool_name("a", "x.y")[9..], tool_name("b", "x.y")[9..]);
    }
}

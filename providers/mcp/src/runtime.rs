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
//!
//! The mount's jobs, a file each below `runtime/`: `connect` (transports, the
//! handshake, the client handler), `supervise` (the supervisor and its backoff),
//! `sync` (list sync, imports, TTL), `listen` (the server's notifications and
//! listen stream, subscriptions, log level), `relay` (a call or request sent
//! upstream, its MRTR rounds and failures), `pin` (what a pinned mount holds back),
//! `isolation` (a connection per agent) and `stand_in` (a test's fixture in place of
//! a server). This file holds the mount's state,
//! its start, and `Running` for it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use globset::{Glob, GlobMatcher};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation, PaginatedRequestParams, ServerNotification,
    ServerResult,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, ServiceError};

use crate::failure::{ConnectError, InWords, StderrTail, SyncError};
use seam_engine::chain::{Answer, Answered};
use seam_engine::offers::{ImportedFile, ImportedSkill, MountRequest, Offered, Offers, RequestError, TaskMethod};
use seam_engine::runtime::{
    BoxFuture, BuildCx, Client, MountEvent, MountEvents, Origin, ProviderError, Running, State, Status, StatusCell, ToolOutput, ToolSpec,
    Upstream,
};
use seam_engine::subprocess::Child;
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::{Common, HttpServer, StdioServer, TOOL_PREFIX};

mod connect;
mod isolation;
mod listen;
mod pin;
mod relay;
mod stand_in;
mod supervise;
mod sync;
use connect::*;
use isolation::isolated;
use listen::*;
use pin::{Held, Pinning};
use relay::*;
pub(crate) use stand_in::stand_in;
use sync::{Names, rewritten_arguments};

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
    isolated(Transport::Stdio(config), common, cx)
}

pub(crate) fn stand_in_stdio(config: &StdioServer, id: &str, fixture: &Json) -> Result<Arc<dyn Running>, String> {
    stand_in(&config.common, id, fixture)
}

pub(crate) fn stand_in_http(config: &HttpServer, id: &str, fixture: &Json) -> Result<Arc<dyn Running>, String> {
    stand_in(&config.common, id, fixture)
}

pub(crate) fn build_http(config: HttpServer, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    let common = config.common.clone();
    isolated(Transport::Http(config), common, cx)
}

#[derive(Clone)]
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
    /// What the mount's pin holds back, in the order listed.
    held: Vec<Held>,
    /// Tools left out because their `rewrite` cannot apply, each with why.
    unrewritable: Vec<String>,
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

/// A mount's `tools`, `prompts` and `resources` filters, compiled, and its pin.
struct Filters {
    tools: Filter,
    prompts: Filter,
    resources: Filter,
    pin: Pinning,
    /// How the server's tools are shown (`rewrite`), by the server's name.
    rewrite: Arc<BTreeMap<String, crate::Rewrite>>,
}

impl Filters {
    fn new(common: &Common) -> Filters {
        Filters {
            tools: Filter::new(&common.tools),
            prompts: Filter::new(&common.prompts),
            resources: Filter::new(&common.resources),
            pin: Pinning { locked: common.locked.clone().map(Arc::new), serves_new: common.pin.serves_new() },
            rewrite: Arc::new(common.rewrite.clone()),
        }
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
    /// What seam does with a call's arguments on the way up (`rewrite`), if anything.
    arguments: Option<Arc<crate::ArgumentsRewrite>>,
    /// The advertised output schema, when it compiles; unsupported vocabulary means unconstrained.
    output: Option<Arc<jsonschema::Validator>>,
}

/// What the server last listed, and what of it the mount serves: written by a sync (on
/// the supervisor's task) and by `reconfigure` (a new filter, at a reload's swap).
struct Listing {
    /// `tools`, `prompts` and `resources` filters, replaceable while running.
    filters: Filters,
    /// The server's last complete listing, so a new filter applies without asking again.
    tools: Arc<Vec<rmcp::model::Tool>>,
    offerings: Arc<Offerings>,
    /// Until when each list may be reused without asking again.
    fresh_until: FreshUntil,
}

/// The connection as calls and `/status` see it.
#[derive(Default)]
struct Connection {
    /// How calls reach the server: set once it is connected and synced, cleared when it closes.
    peer: Option<Peer<RoleClient>>,
    /// The stdio child's process id, while it runs.
    pid: Option<u32>,
}

/// A mount's state is four cells: `listing` (written by a sync, and by `reconfigure`'s
/// new filters and pin), `imports` (published whole, read by calls: by a sync and by
/// `reconfigure`, each under the listing lock so that they publish in the order they
/// import, and emptied by the supervisor when it gives up), `connection` (the
/// supervisor's), `supervisor` (start and dispose).
struct McpMount {
    id: String,
    /// The roots of the client session this connection is for (`isolation: per-session`
    /// with `roots: client`): what the server is told when it asks outside a call.
    client_roots: Option<Vec<std::path::PathBuf>>,
    /// Whose connection this is (the mount's, an agent's, a client's): who is told what
    /// its server says to no one request, and, with `auth.oauth.per_agent`, whose own
    /// tokens it sends (`agent`).
    origin: Origin,
    transport: Transport,
    common: Common,
    cx: BuildCx,
    listing: Mutex<Listing>,
    /// Which URIs clients want updates of changed: a 2026-07-28 server is listened to
    /// again with them (`subscriptions/listen`; it has no `resources/subscribe`). Each
    /// ask is numbered; the supervisor says up to which one its stream holds.
    relisten: tokio::sync::Notify,
    listens_asked: std::sync::atomic::AtomicU64,
    listens_opened: tokio::sync::watch::Sender<u64>,
    status: StatusCell,
    imports: Mutex<Arc<Imports>>,
    connection: Mutex<Connection>,
    /// How many connections were made ready so far (`Running::connection`).
    connections: std::sync::atomic::AtomicU64,
    /// Its reconnects, for `/metrics`.
    counters: seam_engine::runtime::MountCounters,
    /// Calls sent and not answered, with their clients (`asks`).
    calls: Arc<crate::asks::InFlight>,
    stop: CancellationToken,
    /// A call or sync hit a transport error: the connection is treated as closed.
    /// Over Streamable HTTP a dead server does not close rmcp's transport, so
    /// without this the mount would stay `ready` and never reconnect.
    broken: tokio::sync::Notify,
    /// The server asked for more scope than the login gave: the mount is degraded until
    /// its entry in the state file holds a login granted it.
    step_up: tokio::sync::watch::Sender<Option<crate::oauth::ScopeAsked>>,
    supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl McpMount {
    /// The agent this connection is for (`isolation: per-agent`), if it is one agent's.
    fn agent(&self) -> Option<&str> {
        match &self.origin {
            Origin::Agent(agent) => Some(agent),
            Origin::Shared | Origin::Client(_) => None,
        }
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

/// Starts a connection to the server as the mount's config says, for every client of the
/// mount or for one (`client_roots`: the roots of the client session it is for, with
/// `roots: client`, given to its server when it asks outside a call), or for one agent.
fn start(
    transport: Transport,
    common: Common,
    cx: BuildCx,
    client_roots: Option<Vec<std::path::PathBuf>>,
    origin: Origin,
) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    Box::pin(async move {
        let mount = Arc::new(McpMount {
            id: cx.id.clone(),
            client_roots,
            origin,
            listing: Mutex::new(Listing {
                filters: Filters::new(&common),
                tools: Arc::default(),
                offerings: Arc::default(),
                fresh_until: FreshUntil::default(),
            }),
            relisten: tokio::sync::Notify::new(),
            listens_asked: Default::default(),
            listens_opened: tokio::sync::watch::Sender::new(0),
            transport,
            common,
            status: StatusCell::notifying(State::Starting, cx.status.clone()),
            cx,
            imports: Mutex::new(Arc::default()),
            connection: Mutex::default(),
            connections: Default::default(),
            counters: Default::default(),
            calls: Arc::default(),
            stop: CancellationToken::new(),
            broken: tokio::sync::Notify::new(),
            step_up: tokio::sync::watch::Sender::new(None),
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

/// Whether the connection speaks 2026-07-28 (discovered, no session): what the mount's
/// `protocol` asked for, or what `auto` found.
fn speaks_modern(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info().is_some_and(|info| !info.protocol_version.has_initialize())
}

/// `config` with `new`'s filters, pin (its lock entry included) and disclosure replaced by `old`'s:
/// equal to the old config when only those changed, which a running mount takes.
fn same_but_filters<T>(new: &Common, old: &Common, config: impl Fn(Common) -> T) -> T {
    config(Common {
        tools: old.tools.clone(),
        prompts: old.prompts.clone(),
        resources: old.resources.clone(),
        pin: old.pin,
        locked: old.locked.clone(),
        rewrite: old.rewrite.clone(),
        // Read by the deployment from the composition, never by the running mount.
        disclosure: old.disclosure,
        ..new.clone()
    })
}

/// What the engine holds: calls need an owned reference to the mount.
struct Handle(Arc<McpMount>);

impl Running for Handle {
    fn status(&self) -> Status {
        self.0.status.get()
    }

    /// Ready, or degraded only for a scope a person must give while the connection serves
    /// the rest: a call the login lacks the scope for takes no replica out of service.
    fn is_ready(&self) -> bool {
        let state = self.0.status.get().state;
        state == State::Ready || (state == State::Degraded && self.0.step_up.borrow().is_some() && self.0.peer().is_some())
    }

    fn tools(&self) -> Arc<Vec<ToolSpec>> {
        self.0.imports.lock().expect("imports lock").specs.clone()
    }

    fn relay(&self, request: MountRequest, client: Client, cancel: CancellationToken) -> BoxFuture<'static, Answered> {
        let mount = self.0.clone();
        match request {
            MountRequest::CallTool { name, arguments } => {
                Box::pin(async move { Ok(Answer::Tool(mount.call_inner(name, arguments, cancel, client).await)) })
            }
            request => Box::pin(async move { mount.request_inner(request, client, cancel).await.map(Answer::Result) }),
        }
    }

    fn offers(&self) -> Arc<Offers> {
        self.0.imports.lock().expect("imports lock").offers.clone()
    }

    fn upstream(&self) -> Option<&dyn Upstream> {
        Some(self)
    }

    fn holds_tool(&self, name: &str) -> bool {
        let imports = self.0.imports.lock().expect("imports lock");
        let named = |raw: &str| match self.0.common.naming {
            crate::Naming::Prefixed => tool_name(&self.0.id, raw) == name,
            crate::Naming::Raw => raw == name,
        };
        imports.held.iter().any(|held| held.kind == "tools" && named(&held.raw))
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
            let mut listing = mount.listing.lock().expect("listing lock");
            listing.filters = Filters::new(&new_tools);
            match Names::of(&mount).import(&listing.filters, &listing.tools, &listing.offerings) {
                Ok(next) => mount.publish(next),
                Err(e) => tracing::warn!(mount = %mount.id, "new tool filter not applied: {e}"),
            }
        }))
    }

    fn offered(&self) -> Option<seam_engine::lock::MountLock> {
        self.0.connection.lock().expect("connection lock").peer.as_ref()?;
        let listing = self.0.listing.lock().expect("listing lock");
        let f = &listing.filters;
        let entries = |items: Vec<(String, Json)>| items.into_iter().map(|(k, v)| (k, seam_engine::lock::Locked::of(v))).collect();
        fn json<T: serde::Serialize>(v: &T) -> Json {
            serde_json::to_value(v).unwrap_or(Json::Null)
        }
        Some(seam_engine::lock::MountLock {
            tools: entries(listing.tools.iter().filter(|t| f.tools.admits(&t.name)).map(|t| (t.name.to_string(), json(t))).collect()),
            prompts: entries(
                listing.offerings.prompts.iter().filter(|p| f.prompts.admits(&p.name)).map(|p| (p.name.clone(), json(p))).collect(),
            ),
            resource_templates: entries(
                listing
                    .offerings
                    .templates
                    .iter()
                    .filter(|t| f.resources.admits(&t.uri_template))
                    .map(|t| (t.uri_template.clone(), json(t)))
                    .collect(),
            ),
        })
    }

    fn counts(&self) -> seam_engine::runtime::MountCounts {
        let held = self.0.imports.lock().expect("imports lock").held.len() as u64;
        seam_engine::runtime::MountCounts { held, ..self.0.counters.read() }
    }
    fn facts(&self) -> Map<String, Json> {
        let mut facts = Map::new();
        match &self.0.transport {
            Transport::Stdio(_) => {
                facts.insert("pid".into(), self.0.connection.lock().expect("connection lock").pid.map_or(Json::Null, Json::from));
            }
            Transport::Http(config) => {
                facts.insert("url".into(), Json::from(seam_engine::redact::url(&config.url).into_owned()));
            }
        }
        // The revision the connection speaks (what `protocol: auto` found).
        let link = self.0.peer();
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
        let imports = self.0.imports.lock().expect("imports lock").clone();
        let mut warnings: Vec<Json> = imports
            .colliding
            .iter()
            .map(|(name, raws)| {
                Json::from(format!(
                    "tools {} all map to `{name}`: left out",
                    raws.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
                ))
            })
            .collect();
        warnings.extend(imports.unrewritable.iter().map(|why| Json::from(why.as_str())));
        // What the pin holds back, each with why (a changed one's diff).
        warnings.extend(imports.held.iter().map(|h| Json::from(format!("{} `{}` is held: {}", h.noun(), h.raw, h.why))));
        if !imports.held.is_empty() {
            let held = imports.held.iter().map(|h| serde_json::json!({ "kind": h.kind, "name": h.raw, "why": h.why }));
            facts.insert("held".into(), Json::Array(held.collect()));
        }
        let offerings = self.0.listing.lock().expect("listing lock").offerings.clone();
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

impl Upstream for Handle {
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
        let link = self.0.peer();
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
        let link = self.0.peer();
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
}

#[cfg(test)]
mod tests {
    use super::supervise::{backoff, ping_interval};
    use super::sync::fresh_until;
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

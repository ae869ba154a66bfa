//! The runtime half of a mount kind: what a built mount is to the engine.
//!
//! A kind builds a [`Running`] from its typed config and a [`BuildCx`] (the
//! services it needs and a way to say "my tools or state changed"). The engine
//! holds running mounts in generations, asks them for their tools, routes calls
//! to them and disposes them; it never looks inside. Tools travel as their MCP
//! JSON definitions and results as MCP `CallToolResult` JSON: that is the shape
//! every surface's catalog is served in, so no surface has to convert twice.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value as Json};
use tokio_util::sync::CancellationToken;

use crate::subprocess::SubprocessService;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Providers cut their results with these (`crate::text`).
pub use crate::text::{cap_with_footer, truncate_chars};

/// What a call or a request to a mount answers (`crate::output`).
pub use crate::output::{Answer, Answered, Payload, ToolOutput};

mod client;
pub use client::{AskKind, Client, ClientKey, ClientLink, Roots, UpstreamSpan};

/// One tool as a client sees it: its final name and its MCP definition (`name` included).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub definition: Arc<Map<String, Json>>,
    /// The name agents' rules know it by, when a mount shows it under another
    /// (a `rewrite` renamed it): seam's name for the server's own tool.
    pub ruled_as: Option<String>,
}

impl ToolSpec {
    /// Whether the tool says it changes nothing (`annotations.readOnlyHint: true`).
    pub fn is_read_only(&self) -> bool {
        self.hint("readOnlyHint") == Some(true)
    }

    /// Whether the tool may destroy what it changes: not read-only, and not saying
    /// `destructiveHint: false` (MCP's default is `true`).
    pub fn is_destructive(&self) -> bool {
        !self.is_read_only() && self.hint("destructiveHint") != Some(false)
    }

    fn hint(&self, name: &str) -> Option<bool> {
        self.definition.get("annotations").and_then(|a| a.get(name)).and_then(Json::as_bool)
    }
}

/// One more in `count` for as long as this lives, however what it counts ends (a
/// future dropped midway included).
pub(crate) struct CountedIn<'c>(&'c std::sync::atomic::AtomicUsize);

impl<'c> CountedIn<'c> {
    pub(crate) fn new(count: &'c std::sync::atomic::AtomicUsize) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        CountedIn(count)
    }
}

impl Drop for CountedIn<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The most characters of a value a client sent (an id, a URI, a name) that an error quotes back.
pub const MAX_ECHO_CHARS: usize = 80;

/// `value`, sent by a client, as an error quotes it: at most [`MAX_ECHO_CHARS`], `…`
/// marking a cut, so that a megabyte id is not sent back in its refusal.
pub fn echoed(value: &str) -> std::borrow::Cow<'_, str> {
    crate::diagnostic::cut_marked(value, MAX_ECHO_CHARS)
}

/// Why `arguments` hold one that the tool's `inputSchema` (in its `definition`) does not
/// name, when the schema allows no others (`additionalProperties: false`, as every fixed
/// tool's does): a misspelt optional argument is refused, naming it, instead of being
/// ignored without a word. The schema is the one list of what a tool takes.
pub(crate) fn unknown_argument(tool: &str, definition: &Map<String, Json>, arguments: &Map<String, Json>) -> Option<String> {
    let schema = definition.get("inputSchema")?;
    if schema.get("additionalProperties") != Some(&Json::Bool(false)) {
        return None;
    }
    let known = schema.get("properties").and_then(Json::as_object);
    let unknown = arguments.keys().find(|key| !known.is_some_and(|k| k.contains_key(*key)))?;
    let known: Vec<String> = known.into_iter().flat_map(|k| k.keys()).map(|k| format!("`{k}`")).collect();
    Some(format!("unknown argument `{}`: `{tool}` takes {}", echoed(unknown), known.join(", ")))
}

/// Runs a call until it finishes or the client cancels it (dropping the work stops what it was waiting on).
pub fn until_cancelled(
    cancel: CancellationToken,
    work: impl Future<Output = ToolOutput> + Send + 'static,
) -> BoxFuture<'static, ToolOutput> {
    Box::pin(async move {
        tokio::select! {
            out = work => out,
            _ = cancel.cancelled() => ToolOutput::error(crate::codes::TOOL_CANCELLED, "the call was cancelled"),
        }
    })
}

/// A mount's state, as `/status` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Starting,
    Ready,
    /// Serving what it last had while it reconnects.
    Degraded,
    Failed,
    Retired,
}

impl State {
    /// As `/status` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Degraded => "degraded",
            State::Failed => "failed",
            State::Retired => "retired",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Status {
    pub state: State,
    pub since: SystemTime,
    /// The code of what keeps it from being ready, when one names it (a login it waits for).
    pub code: Option<&'static str>,
    pub detail: Option<String>,
}

impl Status {
    pub fn new(state: State, detail: Option<String>) -> Status {
        Status { state, since: SystemTime::now(), code: None, detail }
    }
}

/// A status that changes over time, with `since` kept when the state stays
/// the same; a change of state or detail is told to its `Changes`, if any
/// (the status page's events).
#[derive(Debug)]
pub struct StatusCell(Mutex<Status>, Option<Changes>);

impl StatusCell {
    pub fn new(state: State) -> StatusCell {
        StatusCell(Mutex::new(Status::new(state, None)), None)
    }

    /// A cell that tells `changes` when it changes (`BuildCx::status`).
    pub fn notifying(state: State, changes: Changes) -> StatusCell {
        StatusCell(Mutex::new(Status::new(state, None)), Some(changes))
    }

    pub fn get(&self) -> Status {
        self.0.lock().expect("status lock").clone()
    }

    pub fn set(&self, state: State, detail: Option<String>) {
        self.set_coded(state, None, detail);
    }

    /// [`set`](Self::set), with the code of what keeps the mount from being ready.
    pub fn set_coded(&self, state: State, code: Option<&'static str>, detail: Option<String>) {
        let mut status = self.0.lock().expect("status lock");
        let changed = status.state != state || status.code != code || status.detail != detail;
        if status.state != state {
            status.since = SystemTime::now();
        }
        status.state = state;
        status.code = code;
        status.detail = detail;
        drop(status);
        if changed && let Some(changes) = &self.1 {
            changes.notify();
        }
    }
}

/// A mount's typed config, as the engine sees it: something that has a JSON form,
/// and that its own kind can take back as its type to build the mount.
pub trait MountConfig: std::fmt::Debug + Send + Sync {
    fn to_json(&self) -> Json;
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: serde::Serialize + std::fmt::Debug + Send + Sync + 'static> MountConfig for T {
    fn to_json(&self) -> Json {
        serde_json::to_value(self).expect("mount configs serialize")
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Lets the crate that built a mount take it back as its own type (the web
/// surface's tools reach their providers this way); the engine never does.
pub trait AsAny {
    fn as_any(&self) -> &dyn std::any::Any;
    /// The shared mount as `Any`, to keep a typed `Arc` of it (`Arc::downcast`).
    fn into_any_arc(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

impl<T: std::any::Any + Send + Sync> AsAny for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn into_any_arc(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// A provider's own typed error as the engine carries it: shown (a mount's state
/// detail, a diagnostic, a read's refusal), never inspected.
pub type ProviderError = Box<dyn std::error::Error + Send + Sync>;

/// A built mount.
pub trait Running: AsAny + Send + Sync {
    fn status(&self) -> Status;
    /// The readiness probe: the provider answers now.
    fn is_ready(&self) -> bool {
        self.status().state == State::Ready
    }
    /// Tools discovered at run time, with final names, sorted by name; none for a mount served through a fixed tool.
    fn tools(&self) -> Arc<Vec<ToolSpec>> {
        Arc::new(Vec::new())
    }
    /// What the mount offers beyond tools (prompts with final names, resources,
    /// templates, instructions); nothing for most kinds.
    fn offers(&self) -> Arc<crate::offers::Offers> {
        Arc::default()
    }
    /// A request for one of `tools` (a call: its result) or for something in `offers`
    /// (its MCP result JSON), for `client`: the server's questions and progress on the
    /// way go to `client`. The one way a request reaches a mount (`Deployment::relay`).
    fn relay(&self, request: crate::offers::MountRequest, _client: Client, _cancel: CancellationToken) -> BoxFuture<'static, Answered> {
        let answer = match request {
            crate::offers::MountRequest::CallTool { name, .. } => {
                let why = format!("this mount serves through a fixed tool and has no tool `{name}`");
                Ok(Answer::Tool(ToolOutput::error(crate::codes::TOOL_UNKNOWN, why)))
            }
            request => Err(crate::offers::RequestError::Unknown(format!("this mount offers no {}", request.method()))),
        };
        Box::pin(std::future::ready(answer))
    }
    /// `relay` for a request of agent `agent`, whose client has `roots`: a mount that keeps
    /// a connection per agent or per client session (`isolation`) sends it on the caller's
    /// own, started with the client's roots when it is the first.
    fn relay_as(
        &self,
        _agent: &str,
        _roots: &Roots,
        request: crate::offers::MountRequest,
        client: Client,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Answered> {
        self.relay(request, client, cancel)
    }
    /// The agents it keeps a connection for, in name order, for a mount that keeps one per
    /// agent (`BuildCx::agents`): a reload that changes them builds it again.
    fn agents(&self) -> Option<Vec<String>> {
        None
    }
    /// Its tools as agent `agent` is shown them: a mount with a connection per agent lists
    /// each agent's own; any other, the same for all (`tools`).
    fn tools_for(&self, _agent: &str) -> Arc<Vec<ToolSpec>> {
        self.tools()
    }
    /// What it offers agent `agent` beyond tools (`offers`, per agent as `tools_for` is).
    fn offers_for(&self, _agent: &str) -> Arc<crate::offers::Offers> {
        self.offers()
    }
    /// Whether it holds back a tool clients would call `name` (a pinned mount's, `pin`).
    fn holds_tool(&self, _name: &str) -> bool {
        false
    }
    /// Client session `session` (`ClientLink::session`) has ended: a mount that keeps a
    /// connection per session ends its.
    fn session_ended(&self, _session: u64) {}
    /// The mount's side towards a server it keeps a connection to (an MCP mount's):
    /// `None` for a mount that has none.
    fn upstream(&self) -> Option<&dyn Upstream> {
        None
    }
    /// Stops the mount within about `within`; afterwards nothing of it runs.
    fn dispose(&self, within: Duration) -> BoxFuture<'static, ()>;
    /// A config change this mount can take while it runs (a tool filter, say):
    /// the change, to be applied at the swap, or `None` when it needs a rebuild.
    /// Deciding must not change anything: a rejected reload applies nothing.
    fn reconfigure(&self, _new: &dyn MountConfig) -> Option<Box<dyn FnOnce() + Send>> {
        None
    }
    /// What its server offers now, as a lock holds it (`crate::lock`): every tool, prompt
    /// and resource template its filters pass, whatever its pin holds back. `None` for a
    /// mount with no server, or one that has not listed yet (`seam lock`).
    fn offered(&self) -> Option<crate::lock::MountLock> {
        None
    }
    /// Facts for `/status` (a child's `pid`, a URL).
    fn facts(&self) -> Map<String, Json> {
        Map::new()
    }
    /// What it has counted of its work since it was built (`MountCounters`), for `/metrics`.
    fn counts(&self) -> MountCounts {
        MountCounts::default()
    }
    /// How this mount hears of calls that may have written files, if it wants to.
    fn write_watcher(&self) -> Option<&dyn WriteWatcher> {
        None
    }
}

/// What a mount counts of its own work since it was built, for `/metrics`: each kind
/// counts what it does (an MCP mount its reconnects, a language-server mount the servers
/// it starts, a web provider the calls it was selected for and their failures by code).
/// A mount built again by a reload counts from 0, as a restarted process does.
#[derive(Debug, Default)]
pub struct MountCounters {
    reconnects: std::sync::atomic::AtomicU64,
    server_starts: std::sync::atomic::AtomicU64,
    selections: std::sync::atomic::AtomicU64,
    /// By code: codes are the catalog's (`crate::codes`), so the keys are bounded.
    failures: Mutex<std::collections::BTreeMap<&'static str, u64>>,
}

impl MountCounters {
    /// It set out to connect to its server again, after a connection was lost or failed.
    pub fn reconnecting(&self) {
        self.reconnects.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    /// It started a server process (a language server for a workspace).
    pub fn server_started(&self) {
        self.server_starts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    /// A call selected it (a web provider).
    pub fn selected(&self) {
        self.selections.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    /// A call it served failed with `code`.
    pub fn failed(&self, code: crate::codes::Code) {
        *self.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(code.code).or_default() += 1;
    }
    pub fn read(&self) -> MountCounts {
        use std::sync::atomic::Ordering::Relaxed;
        MountCounts {
            reconnects: self.reconnects.load(Relaxed),
            server_starts: self.server_starts.load(Relaxed),
            selections: self.selections.load(Relaxed),
            failures: self.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone(),
            held: 0,
        }
    }
}

/// [`MountCounters`] as read at one moment, and how many definitions the mount's pin
/// holds back now (`held`, a count of now, not a counter).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MountCounts {
    pub reconnects: u64,
    pub server_starts: u64,
    pub selections: u64,
    pub failures: std::collections::BTreeMap<&'static str, u64>,
    pub held: u64,
}

impl std::ops::AddAssign for MountCounts {
    /// The counts of a mount that keeps several connections (`isolation`) are their sum.
    fn add_assign(&mut self, other: MountCounts) {
        self.reconnects += other.reconnects;
        self.server_starts += other.server_starts;
        self.selections += other.selections;
        self.held += other.held;
        for (code, n) in other.failures {
            *self.failures.entry(code).or_default() += n;
        }
    }
}

/// A mount that hears of calls that may have written files (the skills mount, whose
/// roots a call through seam may write into).
pub trait WriteWatcher: Send + Sync {
    /// A call of a tool not marked read-only (`annotations.readOnlyHint`) has
    /// finished, on any agent: it may have written the files its arguments
    /// name. Told before the result goes back to the client, so that what the
    /// client lists next already follows the write.
    fn saw_write(&self, arguments: &Map<String, Json>);
}

/// What a mount that keeps a connection to a server does beyond [`Running`]: it carries
/// clients' interest (subscriptions, a log level) to the server, and says which
/// connection a task it made lives on.
pub trait Upstream: Send + Sync {
    /// A client asked for log lines at `level` (an MCP logging level) or above:
    /// the mount asks its server for at least as much, and never less again.
    fn raise_log_level(&self, level: &str);
    /// Asks the server for `resources/subscribe` (`on`) or `unsubscribe` of a URI this
    /// mount serves. The deployment counts sessions (`Interest`) and asks only on the
    /// first and after the last; an unsubscribe a server cannot be told (it is gone)
    /// is no error.
    fn subscribe(&self, uri: &str, on: bool) -> BoxFuture<'static, Result<(), crate::offers::RequestError>>;
    /// Which connection to its server the mount has now, counted from 0: a task a server
    /// made lives on the connection it was made on (`crate::tasks`).
    fn connection(&self) -> u64;
    /// Asks the server again for everything in the mount's `Interest`: the deployment
    /// calls it on a new build once it is live, since a session may have subscribed
    /// through the build it replaced after this one had connected.
    fn renew_interest(&self);
}

/// The connection a mount has now (`Upstream::connection`); 0 for one with no upstream.
pub fn connection_of(running: &dyn Running) -> u64 {
    running.upstream().map_or(0, Upstream::connection)
}

/// What a kind builds a mount with.
#[derive(Clone)]
pub struct BuildCx {
    pub id: String,
    pub subprocess: Arc<SubprocessService>,
    pub workspace: Option<PathBuf>,
    pub changes: Changes,
    /// Told when the mount's own state changes (not its tools): `/events`.
    pub status: Changes,
    /// What the mount's server says that no call asked for: log lines, resources that changed.
    pub events: MountEvents,
    /// The workspace root as the live generation has it: a reload may change it and keep
    /// this mount (`workspace` is the root the mount was built with).
    pub live_workspace: tokio::sync::watch::Receiver<Option<PathBuf>>,
    /// What clients want of this mount id, kept across the builds of it.
    pub interest: Arc<Interest>,
    /// The agents whose scope holds the mount when it is built, in name order (for a
    /// mount that keeps a connection per agent).
    pub agents: Vec<String>,
}

/// What clients want of a mount that no one call asks for: resource subscriptions and
/// a log level. It belongs to the mount's id, not to one build of it: a reload that
/// rebuilds the mount hands the new build the same record, and the new build asks its
/// server for all of it when it connects (as after a reconnect) and again once it is
/// live (`Running::renew_interest`). The deployment counts the subscriptions
/// (`Deployment::subscribe_resource`).
#[derive(Debug, Default)]
pub struct Interest {
    /// Subscriptions by URI, each counted once per session that holds it.
    pub subscriptions: Mutex<std::collections::HashMap<String, usize>>,
    /// The most verbose log level any client asked for, as MCP names it.
    pub log_level: Mutex<Option<String>>,
}

impl Interest {
    /// Counts one session's subscription to `uri`, or its end: whether the server must be
    /// asked now (the first subscription, or the end of the last).
    pub fn count(&self, uri: &str, on: bool) -> bool {
        let mut counts = self.subscriptions.lock().expect("subscriptions lock");
        if on {
            let count = counts.entry(uri.to_owned()).or_default();
            *count += 1;
            return *count == 1;
        }
        match counts.get_mut(uri) {
            Some(1) => {
                counts.remove(uri);
                true
            }
            Some(count) => {
                *count -= 1;
                false
            }
            None => false,
        }
    }

    /// The URIs some session is subscribed to.
    pub fn subscribed(&self) -> Vec<String> {
        self.subscriptions.lock().expect("subscriptions lock").keys().cloned().collect()
    }
}

/// Something a mount's server said that is not tied to a call, on the connection `origin` names.
#[derive(Clone, Debug, PartialEq)]
pub enum MountEvent {
    /// A log line (`notifications/message`): its level as MCP names it, the server's logger, its data.
    Log { mount: String, origin: Origin, level: String, logger: Option<String>, data: Json },
    /// A resource a client subscribed to changed (`notifications/resources/updated`).
    ResourceUpdated { mount: String, origin: Origin, uri: String },
}

/// Whose connection to a mount's server an event came on, and so who may be told it:
/// what a server says on an agent's or a client's own connection is about its calls.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// The mount's one connection: every session whose agent sees the mount.
    Shared,
    /// An agent's own (`isolation: per-agent`): that agent's sessions only.
    Agent(String),
    /// A client's own (`isolation: per-session`): that client only.
    Client(ClientKey),
}

/// How many mount events wait for the slowest listener; past it, that listener skips the oldest.
pub const MOUNT_EVENTS_KEPT: usize = 1024;

/// Every mount's events, to every session that listens (each keeps those its agent may see).
#[derive(Clone, Debug)]
pub struct MountEvents(tokio::sync::broadcast::Sender<MountEvent>);

impl Default for MountEvents {
    fn default() -> Self {
        MountEvents(tokio::sync::broadcast::channel(MOUNT_EVENTS_KEPT).0)
    }
}

impl MountEvents {
    /// Tells every listener now; with none, the event is dropped.
    pub fn send(&self, event: MountEvent) {
        let _ = self.0.send(event);
    }

    pub fn listen(&self) -> tokio::sync::broadcast::Receiver<MountEvent> {
        self.0.subscribe()
    }
}

/// A mount tells the engine its tools or state changed; the engine works out
/// whether any agent's catalog did.
#[derive(Clone, Debug)]
pub struct Changes(Arc<tokio::sync::watch::Sender<u64>>);

impl Default for Changes {
    fn default() -> Self {
        Changes(Arc::new(tokio::sync::watch::channel(0).0))
    }
}

impl Changes {
    pub fn notify(&self) {
        self.0.send_modify(|n| *n += 1);
    }

    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// A mount that serves nothing: its kind has no runtime in this build, or its build failed.
pub(crate) struct Inert {
    status: Status,
}

impl Inert {
    pub fn no_runtime(kind: &'static str) -> Inert {
        Inert { status: Status::new(State::Failed, Some(format!("kind `{kind}` has no runtime in this build of seam yet"))) }
    }

    pub fn failed(error: String) -> Inert {
        Inert { status: Status::new(State::Failed, Some(error)) }
    }
}

impl Running for Inert {
    fn status(&self) -> Status {
        self.status.clone()
    }
    fn tools(&self) -> Arc<Vec<ToolSpec>> {
        Arc::new(Vec::new())
    }
    fn relay(&self, request: crate::offers::MountRequest, _: Client, _: CancellationToken) -> BoxFuture<'static, Answered> {
        let why = format!("`{}`: {}", request.target(), self.status.detail.as_deref().unwrap_or("unavailable"));
        let answer = match request {
            crate::offers::MountRequest::CallTool { .. } => Ok(Answer::Tool(ToolOutput::error(crate::codes::TOOL_UNAVAILABLE, why))),
            _ => Err(crate::offers::RequestError::Unavailable(why)),
        };
        Box::pin(std::future::ready(answer))
    }
    fn dispose(&self, _: Duration) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// RFC 3339 with milliseconds, UTC.
pub fn timestamp(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A call whose client gives it up answers `TOOL_CANCELLED` at once, its work dropped.
    #[tokio::test]
    async fn a_cancelled_call_answers_tool_cancelled() {
        let cancel = CancellationToken::new();
        let call = until_cancelled(cancel.clone(), std::future::pending());
        cancel.cancel();
        let output = call.await;
        assert!(output.is_error);
        assert_eq!(output.content[0]["text"], "TOOL_CANCELLED: the call was cancelled");
    }

    /// An argument the schema does not name is refused only where the schema allows no others.
    #[test]
    fn unknown_arguments_follow_the_tool_s_schema() {
        let definition = |additional: Json| {
            json!({ "inputSchema": { "type": "object", "properties": { "url": {} }, "additionalProperties": additional } })
                .as_object()
                .cloned()
                .unwrap()
        };
        let args = |v: Json| v.as_object().cloned().unwrap();
        let closed = definition(json!(false));
        assert_eq!(unknown_argument("t", &closed, &args(json!({ "url": "u" }))), None);
        assert_eq!(
            unknown_argument("t", &closed, &args(json!({ "url": "u", "ur1": 1 }))).as_deref(),
            Some("unknown argument `ur1`: `t` takes `url`")
        );
        assert_eq!(unknown_argument("t", &definition(json!(true)), &args(json!({ "ur1": 1 }))), None, "open schemas take any");
    }

    /// A client's value is quoted whole up to `MAX_ECHO_CHARS` characters, cut one past it.
    #[test]
    fn an_echoed_value_is_cut_past_its_bound() {
        let at = "é".repeat(super::MAX_ECHO_CHARS);
        assert_eq!(super::echoed(&at), at.as_str());
        let past = format!("{at}x");
        assert_eq!(super::echoed(&past), format!("{at}…"));
    }

    use super::*;

    /// A session that does not read keeps the last `MOUNT_EVENTS_KEPT` events: at the limit
    /// it misses none; one past it, it is told it skipped the oldest one.
    #[test]
    fn a_listener_that_falls_behind_keeps_the_newest_mount_events() {
        let log =
            |n: usize| MountEvent::Log { mount: "m".into(), origin: Origin::Shared, level: "info".into(), logger: None, data: json!(n) };
        let events = MountEvents::default();
        let mut at_limit = events.listen();
        for n in 0..MOUNT_EVENTS_KEPT {
            events.send(log(n));
        }
        for n in 0..MOUNT_EVENTS_KEPT {
            assert_eq!(at_limit.try_recv(), Ok(log(n)), "at the limit it misses nothing");
        }
        let mut behind = events.listen();
        for n in 0..=MOUNT_EVENTS_KEPT {
            events.send(log(n));
        }
        assert_eq!(behind.try_recv(), Err(tokio::sync::broadcast::error::TryRecvError::Lagged(1)));
        assert_eq!(behind.try_recv(), Ok(log(1)), "the oldest was skipped, the rest kept");
    }

    /// Subscriptions are counted per session: the server is asked on the first and after the last.
    #[test]
    fn an_interest_asks_the_server_on_the_first_subscription_and_after_the_last() {
        let interest = Interest::default();
        assert!(interest.count("u", true));
        assert!(!interest.count("u", true));
        assert!(!interest.count("u", false));
        assert_eq!(interest.subscribed(), ["u"]);
        assert!(interest.count("u", false));
        assert!(interest.subscribed().is_empty());
        assert!(!interest.count("u", false), "an end with no subscription asks nothing");
    }
}

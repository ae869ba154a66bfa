//! Generations and the transactional reload.
//!
//! A [`Generation`] is immutable: a number, the composition's digest, the
//! resolved composition and its plan, and the running mounts. The live one sits
//! behind one atomic pointer; a call takes the pointer once and holds that
//! generation until it finishes. Start and reload are the same path, a diff from
//! the live generation (none at start): mounts whose node is kept are carried over
//! as the same running objects; added and restarted mounts are built beside the
//! live ones. Any error before the swap (validation, a required mount that does
//! not come up) disposes what was built and leaves the live generation as it
//! was. After the swap, retired mounts are disposed once the calls holding the
//! old generation finish, bounded by the drain timeout.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwapOption;
use indexmap::IndexMap;
use serde::Deserialize as _;
use serde_json::{Map, Value as Json, json};
use tokio_util::sync::CancellationToken;

use crate::diagnostic::Diagnostic;
use crate::diff::Diff;
use crate::env::Env;
use crate::offers::{MountRequest, Offered, RequestError, Routes};
use crate::outcome::{Outcome, OutcomeKind, diagnostic_json, log_outcome};
use crate::plan::Plan;
use crate::resolve::Resolved;
use crate::runtime::{BoxFuture, BuildCx, Changes, Inert, Running, State, ToolOutput, ToolSpec, echoed, timestamp};
use crate::subprocess::SubprocessService;
use crate::surface::{Exposure, FixedTool, Listing, PromptCall, PromptError, PromptSpec, Provider, StatusCx, ToolCall, locate};
use crate::{Checked, Engine};

mod build;
pub mod chain;
mod refusals;
mod relay;
mod status;
mod views;
pub use views::{OfferedView, View};

/// How many reload outcomes `/status` keeps.
pub const KEPT_OUTCOMES: usize = 50;

/// How long a reload may take to read and check the composition. The check
/// goes on past it on its blocking thread, but the reload is rejected and the
/// next one may start.
pub const CHECK_DEADLINE: Duration = Duration::from_secs(30);

/// The most checks that may be left running past `CHECK_DEADLINE` (each holds a
/// blocking thread, stuck on a file that never answers); with this many, a
/// reload is rejected at once instead of starting another.
pub const MAX_STUCK_CHECKS: usize = 4;

#[derive(Clone)]
pub struct Options {
    /// How long retired mounts wait for calls on the old generation before they are disposed anyway.
    pub drain_timeout: Duration,
    /// How long one mount may take to stop.
    pub dispose_timeout: Duration,
    /// Told each time a mount of a reload has activated (for a progress display).
    pub on_activated: Option<OnActivated>,
    /// How many mounts of one reload start at once. Starting a hundred servers
    /// together on a small machine makes every one of them miss its
    /// `startup_timeout`; a mount's timeout runs from its own start.
    pub max_concurrent_starts: usize,
    /// Refuse a composition whose `serve` tokens cannot be read (it is served
    /// over HTTP, where such a token would shut its clients out).
    pub check_serve_token: bool,
    /// Refuse a composition that leaves any agent's endpoint without a token
    /// (seam listens beyond loopback and was not told `--insecure-no-auth`).
    pub require_tokens: bool,
    /// Hooks this build adds to the call stage, outermost (`crate::chain::Chain::new`).
    pub hooks: Vec<Arc<dyn crate::chain::Hook>>,
    /// Keep the trail `serve.audit` names (`seam serve`); other commands write none. A
    /// trail that cannot be opened rejects the reload.
    pub audit: bool,
}

pub type OnActivated = Arc<dyn Fn(Activated<'_>) + Send + Sync>;

/// One mount of a reload has activated, ready or not.
pub struct Activated<'a> {
    pub id: &'a str,
    pub state: State,
    pub done: usize,
    pub total: usize,
}

impl Default for Options {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Options {
            drain_timeout: Duration::from_secs(30),
            dispose_timeout: Duration::from_secs(5),
            on_activated: None,
            max_concurrent_starts: 4 * cores,
            check_serve_token: false,
            require_tokens: false,
            hooks: Vec::new(),
            audit: false,
        }
    }
}

/// One running mount in a generation; shared by every generation that keeps it.
pub struct Slot {
    pub id: String,
    pub kind: &'static str,
    /// The registry its kind registers into.
    pub registry: &'static str,
    pub required: bool,
    pub exposure: Exposure,
    pub running: Arc<dyn Running>,
}

/// A required mount that did not start, and why: it rejects the reload (`MOUNT_START_FAILED`).
struct StartFailure {
    id: String,
    problem: String,
}

/// The mounts of a generation being built, before the swap.
#[derive(Default)]
struct NextMounts {
    mounts: IndexMap<String, Arc<Slot>>,
    /// The ids of the mounts built anew.
    built: Vec<String>,
    /// The ids of the mounts that take their change while they run.
    reconfigured: Vec<String>,
    /// Their changes, applied at the swap, once nothing can reject the reload.
    live_changes: Vec<Box<dyn FnOnce() + Send>>,
}

pub struct Generation {
    pub number: u64,
    pub digest: String,
    pub loaded_at: SystemTime,
    pub resolved: Resolved,
    pub plan: Plan,
    pub mounts: IndexMap<String, Arc<Slot>>,
    /// `serve`'s limits (defaults without a `serve` section), read once per generation: every HTTP request checks them.
    serve: crate::model::ServeLimits,
    /// Per agent, the fixed tools it sees (`web_search`…), settled once per generation.
    fixed: BTreeMap<String, Vec<FixedEntry>>,
    /// Mounts told of calls that may have written files (`Running::write_watcher`).
    pub(crate) write_watchers: Vec<Arc<dyn Running>>,
    /// What the deployment keeps for each agent of this composition (`Deployment::caller`),
    /// handed on from generation to generation for the agents that stay.
    callers: BTreeMap<String, Arc<crate::chain::CallerState>>,
    /// Calls running on this generation now.
    in_flight: AtomicUsize,
    /// Fired when the last holder lets the generation go: its calls have finished.
    drained: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// Per agent of the composition, what its `disclosure` made of its catalog last
    /// (`views::Disclosed`): the search index, built again only when the catalog changes.
    disclosed: Mutex<BTreeMap<String, Arc<views::Disclosed>>>,
}

impl Generation {
    /// Generation `number` of `resolved` over `mounts`, with the states of the agents
    /// that stay handed on from `previous`.
    fn assemble(
        number: u64,
        digest: String,
        resolved: Resolved,
        plan: Plan,
        mounts: IndexMap<String, Arc<Slot>>,
        previous: Option<&Generation>,
    ) -> Generation {
        let fixed = fixed_tools(&resolved, &mounts);
        let write_watchers = mounts.values().filter(|s| s.running.write_watcher().is_some()).map(|s| s.running.clone()).collect();
        let serve = resolved.services.get("serve").and_then(|s| crate::model::ServeLimits::deserialize(s).ok()).unwrap_or_default();
        let callers = resolved
            .agents
            .keys()
            .map(|agent| (agent.clone(), previous.and_then(|old| old.callers.get(agent).cloned()).unwrap_or_default()))
            .collect();
        Generation {
            number,
            digest,
            loaded_at: SystemTime::now(),
            resolved,
            plan,
            mounts,
            serve,
            fixed,
            write_watchers,
            callers,
            in_flight: AtomicUsize::new(0),
            disclosed: Mutex::default(),
            drained: Mutex::new(None),
        }
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        if let Some(tx) = self.drained.get_mut().expect("drain lock").take() {
            let _ = tx.send(());
        }
    }
}

/// A tool in an agent's catalog: where calls go and the budgets that bound them.
#[derive(Clone, Debug)]
pub struct CatalogEntry {
    pub spec: ToolSpec,
    pub source: Source,
    pub timeout: Option<crate::units::Duration>,
    pub max_output_chars: Option<u64>,
    /// A person is asked before each call (`approve`, as it applies to this tool).
    pub approve: bool,
    /// Whether it is listed, or deferred (found with `tool_search`). In an agent's
    /// catalog (`Generation::catalog`), `auto` is decided: `Never` or `Search`.
    pub deferral: crate::disclosure::Deferral,
}

/// What a call knows of its caller.
#[derive(Clone, Debug, Default)]
pub struct CallContext {
    /// The MCP client's roots, fetched if a tool asks.
    pub roots: crate::runtime::Roots,
    /// Cancelled when the client gives up on the call.
    pub cancel: CancellationToken,
    /// The client, for what a mount's server asks it during the call and the progress it reports.
    pub client: crate::runtime::Client,
}

/// What serves a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A mount's discovered tool (`mcp__…`), by mount id.
    Mount(String),
    /// A fixed tool of a service (`web_search` of `web`), which picks its provider per call.
    Service(&'static str),
    /// seam's own `tool_search`, over the agent's deferred tools (`crate::disclosure`).
    Seam,
}

/// A fixed tool as one agent sees it in one generation.
struct FixedEntry {
    entry: CatalogEntry,
    tool: &'static dyn FixedTool,
    settings: Json,
    section: Option<Json>,
    providers: Vec<Provider>,
}

impl FixedEntry {
    /// What a live tool lists from for a session with these roots.
    fn listing(&self, roots: &[PathBuf]) -> Listing {
        Listing {
            definition: (*self.entry.spec.definition).clone(),
            providers: self.providers.clone(),
            section: self.section.clone(),
            roots: roots.to_vec(),
        }
    }
}

/// The fixed tools each agent sees: those it enables that this build serves,
/// each with the agent's providers in the registries the tool exposes.
fn fixed_tools(resolved: &Resolved, mounts: &IndexMap<String, Arc<Slot>>) -> BTreeMap<String, Vec<FixedEntry>> {
    let mut out = BTreeMap::new();
    for (name, agent) in &resolved.agents {
        let mut entries = Vec::new();
        for surface in &resolved.surfaces {
            for tool in surface.tools() {
                let Some(Some(settings)) = agent.tools.fixed.get(tool.name()) else { continue };
                let Some(definition) = tool.definition(settings) else { continue };
                let providers = mounts
                    .iter()
                    .filter(|(id, _)| agent.scope.contains(id) && tool.exposes().iter().any(|r| resolved.mounts[id.as_str()].provides(r)))
                    .map(|(id, slot)| Provider { layer: agent.layer(id), ..provider(resolved, slot) })
                    .collect();
                let entry = CatalogEntry {
                    spec: ToolSpec { name: tool.name().to_owned(), definition: Arc::new(definition), ruled_as: None },
                    source: Source::Service(surface.service()),
                    timeout: settings
                        .get("timeout")
                        .filter(|_| !tool.owns_timeout())
                        .and_then(|t| crate::units::Duration::deserialize(t).ok()),
                    max_output_chars: settings.get("max_output_chars").and_then(Json::as_u64),
                    approve: false,
                    deferral: crate::disclosure::Deferral::Never,
                };
                let section = resolved.services.get(surface.service()).cloned();
                entries.push(FixedEntry { entry, tool: *tool, settings: settings.clone(), section, providers });
            }
        }
        out.insert(name.clone(), entries);
    }
    out
}

/// Tasks agent `agent`'s table no longer remembers are cancelled at their servers, as far
/// as they can be (nobody can ask for them any more), on the agent's own connection to a
/// mount that keeps one per agent (`Running::relay_as`).
pub(crate) fn cancel_pushed_out(agent: &str, pushed_out: Vec<crate::tasks::Held>) {
    for held in pushed_out {
        let Some(running) = held.running.upgrade() else { continue };
        let params = Map::from_iter([("taskId".to_owned(), Json::from(held.upstream))]);
        // The agent's own: its tasks are its own table's, made on its connection.
        let cancel = running.relay_as(
            agent,
            &crate::runtime::Roots::default(),
            MountRequest::Task { method: crate::offers::TaskMethod::Cancel, params },
            crate::runtime::Client::default(),
            CancellationToken::new(),
        );
        tokio::spawn(async move {
            if let Err(e) = cancel.await {
                tracing::debug!(mount = %held.mount, "a forgotten task could not be cancelled: {e:?}");
            }
        });
    }
}

/// Asks mount `running`'s server to subscribe to `uri` (`on`) or to stop; a mount with no
/// server offers no subscriptions.
fn subscribe(running: &dyn Running, uri: &str, on: bool) -> BoxFuture<'static, Result<(), RequestError>> {
    match running.upstream() {
        Some(upstream) => upstream.subscribe(uri, on),
        None => {
            let message = format!("this mount offers no subscription to `{uri}`");
            Box::pin(std::future::ready(Err(RequestError::Unknown(message))))
        }
    }
}

fn provider(resolved: &Resolved, slot: &Slot) -> Provider {
    let config = resolved.mounts[&slot.id].resolved.as_ref().expect("a planned composition has every mount resolved").config.clone();
    Provider { id: slot.id.clone(), registry: slot.registry, config, running: slot.running.clone(), layer: 0 }
}

/// A running composition.
pub struct Deployment {
    engine: Arc<Engine>,
    path: PathBuf,
    env: Arc<dyn Env + Send + Sync>,
    options: Options,
    live: ArcSwapOption<Generation>,
    /// The trail `serve.audit` names, as the live generation has it (`Options::audit`).
    audit: ArcSwapOption<crate::audit::Trail>,
    /// Reloads run one at a time.
    reloading: tokio::sync::Mutex<()>,
    /// Wakes the reload worker; triggers while a reload runs coalesce into one more.
    trigger: tokio::sync::Notify,
    outcomes: Mutex<VecDeque<Outcome>>,
    /// How many reloads ended each way (`OutcomeKind::ALL`'s order), since the start.
    reloads: [AtomicU64; 3],
    /// How many requests `relay` was given, by what became of them (`Decision::ALL`'s order).
    decisions: [AtomicU64; 8],
    /// Calls a person was asked about (`approve`), by answer (`APPROVAL_ANSWERS`).
    approvals: [AtomicU64; 4],
    /// When the reload running now started, for `/status`: until its outcome, the last one is not the news.
    reloading_since: Mutex<Option<SystemTime>>,
    /// Checks on the blocking pool, the ones left past `CHECK_DEADLINE` included.
    checks_running: Arc<AtomicUsize>,
    /// Every file the last check read (the composition and what it extends).
    files: Mutex<Vec<PathBuf>>,
    changes: Changes,
    /// Ticks when a reload has an outcome or a mount's state changes (the status page's events).
    status_changes: Changes,
    next_number: AtomicU64,
    /// The number the next client session gets (`Deployment::next_session`).
    next_session: AtomicU64,
    retiring: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// What mounts' servers say that no call asked for, to the sessions.
    events: crate::runtime::MountEvents,
    /// The live generation's workspace root, for mounts kept across a reload that changes it.
    workspace: tokio::sync::watch::Sender<Option<PathBuf>>,
    /// What clients want of each mount id (`BuildCx::interest`), for the builds of it to come.
    interests: Mutex<BTreeMap<String, Arc<crate::runtime::Interest>>>,
    /// What it keeps for each agent of the live composition (`Deployment::caller`).
    /// The call stage: the hooks every request passes (`crate::chain`).
    chain: crate::chain::Chain,
    /// The bytes of resource reads in flight, every client's together.
    reads: crate::reads::ReadBudget,
}

impl Deployment {
    pub fn new(engine: Arc<Engine>, path: &Path, env: Arc<dyn Env + Send + Sync>, options: Options) -> Arc<Deployment> {
        let chain = crate::chain::Chain::new(&options.hooks);
        Arc::new(Deployment {
            engine,
            path: path.to_owned(),
            env,
            options,
            live: ArcSwapOption::empty(),
            audit: ArcSwapOption::empty(),
            reloading: tokio::sync::Mutex::new(()),
            trigger: tokio::sync::Notify::new(),
            outcomes: Mutex::new(VecDeque::new()),
            reloads: Default::default(),
            decisions: Default::default(),
            approvals: Default::default(),
            reloading_since: Mutex::new(None),
            checks_running: Arc::default(),
            files: Mutex::new(vec![path.to_owned()]),
            changes: Changes::default(),
            status_changes: Changes::default(),
            next_number: AtomicU64::new(1),
            next_session: AtomicU64::new(0),
            retiring: Mutex::new(Vec::new()),
            events: Default::default(),
            workspace: tokio::sync::watch::channel(None).0,
            interests: Mutex::default(),
            chain,
            reads: Default::default(),
        })
    }

    /// A hold on the read budget for one request's read (`crate::reads`).
    pub fn read_hold(&self) -> crate::reads::ReadHold {
        self.reads.hold()
    }

    /// The bytes of reads in flight now, and how many reads wait for their turn, for `/status`.
    pub fn reads_in_flight(&self) -> (u64, usize) {
        (self.reads.taken(), self.reads.waiting())
    }

    /// Every mount's log lines and resource updates from now on.
    pub fn mount_events(&self) -> tokio::sync::broadcast::Receiver<crate::runtime::MountEvent> {
        self.events.listen()
    }

    /// A number for a new client session, unique among the sessions of every front end
    /// that serves this deployment: its mounts tell one session's questions from
    /// another's by it (`ClientLink::session`).
    pub fn next_session(&self) -> u64 {
        self.next_session.fetch_add(1, Ordering::Relaxed)
    }

    /// Client session `session` has ended (the front end's handler of it went): the live
    /// generation's mounts that keep a connection per session end its (a mount the live
    /// generation no longer has is disposed whole as it retires).
    pub fn session_ended(&self, session: u64) {
        if let Some(live) = self.live() {
            for slot in live.mounts.values() {
                slot.running.session_ended(session);
            }
        }
    }

    /// The caller `agent` with token `token`, and the state the deployment keeps for
    /// the agent. Each generation holds one per agent of its composition (so the states
    /// are bounded by it), handed on to the next for the agents that stay: a reload that
    /// removes an agent lets its state go. Another agent gets a state of its own, which no
    /// other request shares (its requests fail to route).
    pub fn caller(&self, agent: &str, token: Option<String>) -> crate::chain::Caller {
        let state = self.live().and_then(|live| live.callers.get(agent).cloned()).unwrap_or_default();
        crate::chain::Caller { agent: agent.to_owned(), token, state }
    }

    pub fn live(&self) -> Option<Arc<Generation>> {
        self.live.load_full()
    }

    /// The live generation's `serve` limits (the defaults before the first).
    pub fn serve_limits(&self) -> crate::model::ServeLimits {
        self.live().map(|g| g.serve().clone()).unwrap_or_default()
    }

    /// Ticks whenever a swap or a mount's re-sync may have changed a catalog.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Ticks whenever a reload has an outcome (applied, rejected or unchanged)
    /// or a mount's state changes; with `subscribe`, everything `/status` shows.
    pub fn subscribe_status(&self) -> tokio::sync::watch::Receiver<u64> {
        self.status_changes.subscribe()
    }

    pub fn outcomes(&self) -> Vec<Outcome> {
        self.outcomes.lock().expect("outcomes lock").iter().cloned().collect()
    }

    pub fn last_outcome(&self) -> Option<Outcome> {
        self.outcomes.lock().expect("outcomes lock").back().cloned()
    }

    /// The composition file this deployment runs.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn files(&self) -> Vec<PathBuf> {
        self.files.lock().expect("files lock").clone()
    }

    /// Asks for a reload; several requests while one runs give one more reload, not several.
    pub fn request_reload(&self) {
        self.trigger.notify_one();
    }

    /// Runs requested reloads until `stop` fires.
    pub async fn reload_worker(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.trigger.notified() => {}
            }
            let outcome = self.reload().await;
            log_outcome(&outcome);
        }
    }

    /// Loads the file and, when it differs from the live generation, builds the next
    /// generation and swaps it in; or rejects it and leaves the live one serving.
    pub async fn reload(&self) -> Outcome {
        let _serial = self.reloading.lock().await;
        /// Clears `reloading_since` however the reload ends.
        struct Reloading<'d>(&'d Mutex<Option<SystemTime>>);
        impl Drop for Reloading<'_> {
            fn drop(&mut self) {
                *self.0.lock().expect("reloading lock") = None;
            }
        }
        *self.reloading_since.lock().expect("reloading lock") = Some(SystemTime::now());
        let reloading = Reloading(&self.reloading_since);
        self.status_changes.notify();
        // A span of seam's own work, for a front end that exports spans (traces).
        let span = tracing::info_span!("seam.reload", seam.outcome = tracing::field::Empty, seam.generation = tracing::field::Empty);
        let mut outcome = tracing::Instrument::instrument(self.reload_locked(), span.clone()).await;
        span.record("seam.outcome", outcome.outcome.as_str());
        if let Some(generation) = outcome.generation {
            span.record("seam.generation", generation);
        }
        drop(span);
        drop(reloading);
        let mut outcomes = self.outcomes.lock().expect("outcomes lock");
        outcome.number = outcomes.back().map_or(1, |last| last.number + 1);
        if outcomes.len() == KEPT_OUTCOMES {
            outcomes.pop_front();
        }
        outcomes.push_back(outcome.clone());
        drop(outcomes);
        let kind = OutcomeKind::ALL.iter().position(|k| *k == outcome.outcome).expect("every kind is listed");
        self.reloads[kind].fetch_add(1, Ordering::Relaxed);
        self.status_changes.notify();
        outcome
    }

    async fn reload_locked(&self) -> Outcome {
        let live = self.live();
        let rejected = |diagnostics: Vec<Json>| Outcome::new(OutcomeKind::Rejected, live.as_ref().map(|g| g.number), diagnostics);
        let checked = match self.check().await {
            Ok(checked) => checked,
            Err(unreadable) => return rejected(vec![unreadable]),
        };
        *self.files.lock().expect("files lock") = checked.sources.files().map(|(_, f)| f.path.clone()).collect();
        let mut diagnostics: Vec<Json> = checked.diagnostics.iter().map(|d| diagnostic_json(d, &checked.sources)).collect();
        let Some(plan) = checked.plan() else { return rejected(diagnostics) };
        let diff = Diff::between(live.as_ref().map(|g| &g.plan), &plan);
        let digest = plan.digest();
        // The name is not in the plan's digest (it changes no node); a rename alone still applies, so
        // that /status and the status page show it.
        if let Some(g) = &live
            && g.digest == digest
            && g.resolved.name == checked.resolved.as_ref().and_then(|r| r.name.clone())
        {
            return Outcome::new(OutcomeKind::Unchanged, Some(g.number), diagnostics);
        }
        let Checked { resolved, tree, sources, .. } = checked;
        let resolved = resolved.expect("a plan comes from a resolved composition");
        let tree = tree.expect("a resolved composition has a tree");
        if self.options.check_serve_token {
            let refused = self.token_refusals(&resolved, &tree);
            if !refused.is_empty() {
                diagnostics.extend(refused.iter().map(|d| diagnostic_json(d, &sources)));
                return rejected(diagnostics);
            }
            let open = resolved.open_agents();
            let was_guarded = live.as_ref().is_some_and(|g| g.resolved.open_agents().len() < g.resolved.agents.len());
            if was_guarded && !open.is_empty() {
                tracing::warn!(agents = ?open, "after this reload no token guards these agents' endpoints");
            }
        }
        let trail = match self.trail_for(&resolved, &tree) {
            Ok(trail) => trail,
            Err(refused) => {
                diagnostics.push(diagnostic_json(&refused, &sources));
                return rejected(diagnostics);
            }
        };
        let next = match self.build_mounts(&resolved, &diff, live.as_deref()).await {
            Ok(next) => next,
            Err(failures) => {
                diagnostics.extend(failures.into_iter().map(|StartFailure { id, problem }| {
                    let at = crate::diagnostic::pointer(["mounts", id.as_str()]);
                    let message = format!("required mount `{id}` did not start: {problem}");
                    diagnostic_json(
                        &Diagnostic::new(crate::codes::MOUNT_START_FAILED, locate(&tree, &format!("{at}/kind")), at, message),
                        &sources,
                    )
                }));
                return rejected(diagnostics);
            }
        };
        let (built, reconfigured) = (next.built.clone(), next.reconfigured.clone());
        if self.options.audit {
            self.audit.store(trail);
        }
        let (number, retired) = self.swap(live, resolved, plan, digest, next);
        Outcome { built, retired, reconfigured, ..Outcome::new(OutcomeKind::Applied, Some(number), diagnostics) }
    }

    /// A diagnostic for the composition as a whole, which could not be read or checked.
    fn unreadable(&self, code: crate::codes::Code, message: String) -> Json {
        let code = code.code;
        json!({
            "severity": "error", "code": code, "message": message,
            "path": self.path.display().to_string(), "pointer": "", "line": 0, "column": 0,
            "rendered": format!("{}: error[{code}]: {message}\n", self.path.display()),
        })
    }

    /// Reads and checks the composition: on the blocking pool, since a large one takes
    /// milliseconds of CPU and over stdio the runtime has one thread, which must keep
    /// serving calls meanwhile; within `CHECK_DEADLINE`, since a file that never answers
    /// (a hung network mount) must not hold the reload lock, or every later edit and
    /// SIGHUP would wait behind it unseen. `Err` is the diagnostic that says why not.
    async fn check(&self) -> Result<Checked, Json> {
        // Reloads are serialized, so every check running now but this one's was left past its deadline.
        let stuck = self.checks_running.load(Ordering::SeqCst);
        if stuck >= MAX_STUCK_CHECKS {
            let message = format!("{stuck} earlier checks are still stuck reading the composition; no other starts until one ends");
            return Err(self.unreadable(crate::codes::COMPOSITION_READ_TIMEOUT, message));
        }
        /// Counts a check from its start to its end, however long that takes.
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.checks_running.fetch_add(1, Ordering::SeqCst);
        let counted = Counted(self.checks_running.clone());
        let (engine, path, env) = (self.engine.clone(), self.path.clone(), self.env.clone());
        let check = tokio::task::spawn_blocking(move || {
            let _counted = counted;
            engine.check_file(&path, &*env)
        });
        match tokio::time::timeout(CHECK_DEADLINE, check).await {
            Err(_) => {
                let message = format!(
                    "reading and checking the composition did not finish within {}s; the live generation keeps serving",
                    CHECK_DEADLINE.as_secs()
                );
                Err(self.unreadable(crate::codes::COMPOSITION_READ_TIMEOUT, message))
            }
            Ok(joined) => joined
                .expect("the check does not panic")
                .map_err(|e| self.unreadable(crate::codes::COMPOSITION_UNREADABLE, e.error.to_string())),
        }
    }

    /// Swaps the next generation in: the changes mounts take while they run are applied
    /// (nothing can reject the reload any more), the generation is stored, and the mounts
    /// it no longer has are retired once the old generation's calls are done. Its number,
    /// and the retired mounts' ids.
    fn swap(&self, live: Option<Arc<Generation>>, resolved: Resolved, plan: Plan, digest: String, next: NextMounts) -> (u64, Vec<String>) {
        let NextMounts { mounts, built, live_changes, .. } = next;
        let retired: Vec<String> = live
            .as_ref()
            .map(|g| {
                g.mounts
                    .iter()
                    .filter(|(id, old)| mounts.get(*id).is_none_or(|new| !Arc::ptr_eq(&old.running, &new.running)))
                    .map(|(id, _)| id.clone())
                    .collect()
            })
            .unwrap_or_default();
        for apply in live_changes {
            apply();
        }
        let number = self.next_number.fetch_add(1, Ordering::Relaxed);
        let next = Arc::new(Generation::assemble(number, digest, resolved, plan, mounts, live.as_deref()));
        // Arm the old generation's drain signal before it can be let go.
        let drained = live.as_ref().map(|old| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            *old.drained.lock().expect("drain lock") = Some(tx);
            rx
        });
        let root = next.resolved.workspace_root().map(PathBuf::from);
        self.live.store(Some(next));
        // A mount id the composition no longer has: what clients wanted of it goes with it.
        let kept = self.live();
        self.interests.lock().expect("interests lock").retain(|id, _| kept.as_ref().is_some_and(|g| g.mounts.contains_key(id)));
        // A new build asks again for what sessions asked of the build it replaced while it was being built.
        if let Some(live) = &kept {
            for id in &built {
                if let Some(upstream) = live.mounts[id].running.upstream() {
                    upstream.renew_interest();
                }
            }
        }
        self.workspace.send_if_modified(|now| {
            let changed = *now != root;
            *now = root;
            changed
        });
        self.changes.notify();
        if let (Some(old), Some(drained)) = (live, drained) {
            let slots: Vec<Arc<Slot>> = retired.iter().map(|id| old.mounts[id].clone()).collect();
            drop(old);
            self.retire(slots, drained);
        }
        (number, retired)
    }

    /// Disposes retired mounts once the old generation's calls are done (or the drain timeout passes), dependents first.
    fn retire(&self, retired: Vec<Arc<Slot>>, drained: tokio::sync::oneshot::Receiver<()>) {
        if retired.is_empty() {
            return;
        }
        let (drain, dispose) = (self.options.drain_timeout, self.options.dispose_timeout);
        let task = tokio::spawn(async move {
            if tokio::time::timeout(drain, drained).await.is_err() {
                tracing::warn!(
                    mounts = ?retired.iter().map(|s| &s.id).collect::<Vec<_>>(),
                    "calls on the old generation outlived drain_timeout ({drain:?}); disposing its retired mounts anyway"
                );
            }
            for slot in retired.iter().rev() {
                slot.running.dispose(dispose).await;
                tracing::info!(mount = %slot.id, "retired");
            }
        });
        let mut retiring = self.retiring.lock().expect("retiring lock");
        retiring.retain(|t| !t.is_finished());
        retiring.push(task);
    }

    /// The build of mount `id` that is live now.
    pub fn running(&self, id: &str) -> Option<Arc<dyn Running>> {
        self.live()?.mounts.get(id).map(|slot| slot.running.clone())
    }

    /// One session's subscription to `uri` at mount `id`, counted in the id's `Interest`
    /// (its server is asked on the first): the `Interest` it was counted in, where the
    /// session gives it back (`unsubscribe_resource`).
    pub async fn subscribe_resource(&self, id: &str, uri: &str) -> Result<Arc<crate::runtime::Interest>, RequestError> {
        let interest = self.interests.lock().expect("interests lock").get(id).cloned();
        let (Some(interest), Some(running)) = (interest, self.running(id)) else {
            return Err(RequestError::Unknown(format!("the composition has no mount `{id}`")));
        };
        if interest.count(uri, true)
            && let Err(e) = subscribe(running.as_ref(), uri, true).await
        {
            // The server did not take it: the count goes back, or the next session would never ask.
            interest.count(uri, false);
            return Err(e);
        }
        Ok(interest)
    }

    /// Gives back one session's subscription to `uri` at mount `id`, counted in
    /// `interest`; its server is told after the last. Nothing when `interest` is no longer
    /// the id's (the mount id was removed, perhaps added back: it counts afresh).
    pub async fn unsubscribe_resource(&self, id: &str, interest: &std::sync::Weak<crate::runtime::Interest>, uri: &str) {
        let Some(interest) = interest.upgrade() else { return };
        let current = self.interests.lock().expect("interests lock").get(id).is_some_and(|now| Arc::ptr_eq(now, &interest));
        if !current || !interest.count(uri, false) {
            return;
        }
        if let Some(running) = self.running(id)
            && let Err(e) = subscribe(running.as_ref(), uri, false).await
        {
            tracing::debug!(mount = %id, "resources/unsubscribe `{uri}` was not taken: {e:?}");
        }
    }

    /// Stops serving: disposes every mount of the live generation in reverse order and waits for retirements.
    pub async fn shutdown(&self) {
        let _serial = self.reloading.lock().await;
        if let Some(g) = self.live.swap(None) {
            for slot in g.mounts.values().rev() {
                slot.running.dispose(self.options.dispose_timeout).await;
            }
        }
        let tasks: Vec<_> = std::mem::take(&mut *self.retiring.lock().expect("retiring lock"));
        for t in tasks {
            let _ = t.await;
        }
    }
}

#[cfg(test)]
mod tests;

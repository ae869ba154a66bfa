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
use crate::offers::{Links, MountRequest, Offered, RequestError, Routes};
use crate::outcome::{Outcome, OutcomeKind, diagnostic_json, log_outcome};
use crate::plan::Plan;
use crate::resolve::Resolved;
use crate::runtime::{BoxFuture, BuildCx, Changes, Inert, Running, State, ToolOutput, ToolSpec, echoed, timestamp};
use crate::subprocess::SubprocessService;
use crate::surface::{Exposure, FixedTool, Listing, PromptCall, PromptError, PromptSpec, Provider, StatusCx, ToolCall, locate};
use crate::{Checked, Engine};

pub mod chain;
mod relay;

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
    /// Calls running on this generation now.
    in_flight: AtomicUsize,
    /// URIs that mounts' tool results carried: where a read of one goes when no mount lists it.
    /// Handed on from generation to generation: a link a client holds outlives a reload.
    pub(crate) links: Arc<Links>,
    /// Fired when the last holder lets the generation go: its calls have finished.
    drained: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
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
}

/// What a call knows of its caller.
#[derive(Clone, Debug, Default)]
pub struct CallContext {
    /// The MCP client's roots, fetched if a tool asks.
    pub roots: crate::surface::Roots,
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
                    spec: ToolSpec { name: tool.name().to_owned(), definition: Arc::new(definition) },
                    source: Source::Service(surface.service()),
                    timeout: settings
                        .get("timeout")
                        .filter(|_| !tool.owns_timeout())
                        .and_then(|t| crate::units::Duration::deserialize(t).ok()),
                    max_output_chars: settings.get("max_output_chars").and_then(Json::as_u64),
                };
                let section = resolved.services.get(surface.service()).cloned();
                entries.push(FixedEntry { entry, tool: *tool, settings: settings.clone(), section, providers });
            }
        }
        out.insert(name.clone(), entries);
    }
    out
}

/// Tasks a deployment no longer remembers are cancelled at their servers, as far as they
/// can be: nobody can ask for them any more.
pub(crate) fn cancel_pushed_out(pushed_out: Vec<crate::tasks::Held>) {
    for held in pushed_out {
        let Some(running) = held.running.upgrade() else { continue };
        let params = Map::from_iter([("taskId".to_owned(), Json::from(held.upstream))]);
        let cancel = running.relay(
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

/// A live mount the next generation keeps: as it is when the diff leaves it, or
/// reconfigured when it changed and can take its change while it runs (its kind and the
/// services it needs unchanged); `None` when it must be built again.
fn carried_over(
    id: &str,
    mount: &crate::resolve::Mount,
    r: &crate::surface::ResolvedMount,
    slot: &Arc<Slot>,
    diff: &Diff,
    next: &mut NextMounts,
) -> Option<Arc<Slot>> {
    let node = format!("mount:{id}");
    if !diff.add.contains(&node) && !diff.restart.contains(&node) {
        return Some(slot.clone());
    }
    let services_changed = r.needs.iter().any(|s| {
        let node = format!("service:{s}");
        diff.change.contains(&node) || diff.add.contains(&node)
    });
    if !diff.change.contains(&node) || slot.kind != mount.kind.name() || services_changed {
        return None;
    }
    let apply = slot.running.reconfigure(&*r.config)?;
    next.live_changes.push(apply);
    next.reconfigured.push(id.to_owned());
    let reconfigured = Slot {
        id: id.to_owned(),
        kind: slot.kind,
        registry: slot.registry,
        required: r.required,
        exposure: r.exposure.clone(),
        running: slot.running.clone(),
    };
    Some(Arc::new(reconfigured))
}

/// Builds mount `id` of `kind`: its slot, and why the build failed (the slot is then inert).
fn build_slot(
    id: String,
    kind: &'static dyn crate::surface::MountKind,
    r: &crate::surface::ResolvedMount,
    cx: BuildCx,
) -> impl Future<Output = (Slot, Option<String>)> + use<> {
    let (config, exposure, required) = (r.config.clone(), r.exposure.clone(), r.required);
    async move {
        let (running, error): (Arc<dyn Running>, _) = match kind.build(&*config, cx) {
            Some(build) => match build.await {
                Ok(running) => (running, None),
                Err(e) => {
                    let why = e.to_string();
                    (Arc::new(Inert::failed(why.clone())), Some(why))
                }
            },
            None => (Arc::new(Inert::no_runtime(kind.name())), None),
        };
        (Slot { id, kind: kind.name(), registry: kind.registry(), required, exposure, running }, error)
    }
}

/// Takes the built mounts into `next`: each required one that failed or is not ready is
/// a failure of the reload; one not required activates as failed, logged.
fn settle(next: &mut NextMounts, built: Vec<(Slot, Option<String>)>) -> Vec<StartFailure> {
    let mut failures = Vec::new();
    for (slot, error) in built {
        let problem = error.or_else(|| {
            (slot.required && !slot.running.is_ready())
                .then(|| slot.running.status().detail.unwrap_or_else(|| "it is not ready".to_owned()))
        });
        match problem {
            Some(problem) if slot.required => failures.push(StartFailure { id: slot.id.clone(), problem }),
            Some(problem) => tracing::warn!(mount = %slot.id, "mount activates as failed: {problem}"),
            None => {}
        }
        next.built.push(slot.id.clone());
        next.mounts.insert(slot.id.clone(), Arc::new(slot));
    }
    failures
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

/// What one session of an agent is shown: its tools, prompts and resources.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct View {
    /// Sorted by name.
    pub tools: Vec<ToolSpec>,
    /// The live tools' prompts (skills), sorted by name.
    pub prompts: Arc<Vec<PromptSpec>>,
    /// The visible mounts' prompts, resources and templates (`Routes::listed`).
    pub offered: OfferedView,
}

/// The visible mounts' prompts, resources and resource templates, each sorted by key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OfferedView {
    pub prompts: Vec<Offered>,
    pub resources: Vec<Offered>,
    pub templates: Vec<Offered>,
}

impl Generation {
    /// `serve`'s limits for this generation.
    pub fn serve(&self) -> &crate::model::ServeLimits {
        &self.serve
    }

    /// The agent's tools, sorted by name; `None` for an agent the composition
    /// does not have. A live tool is shown with its definition for the
    /// generation (`view` gives the one it lists now).
    pub fn catalog(&self, agent: &str) -> Option<Vec<CatalogEntry>> {
        Some(self.catalog_and_collisions(agent)?.0)
    }

    /// The agent's tools, and the names two of the things it sees would serve
    /// (a mount of raw names beside another, or beside a fixed tool): those
    /// are served by neither, so that no call goes where its client did not mean.
    fn catalog_and_collisions(&self, agent: &str) -> Option<(Vec<CatalogEntry>, Vec<CatalogEntry>)> {
        let a = self.resolved.agents.get(agent)?;
        let mut out: Vec<CatalogEntry> = self.fixed[agent].iter().map(|f| f.entry.clone()).collect();
        let mut raw = false;
        for (id, slot) in &self.mounts {
            let Some(prefix) = self.visible_prefix(agent, id, slot) else { continue };
            raw |= matches!(slot.exposure, Exposure::Dynamic { raw: true, .. });
            out.extend(slot.running.tools().iter().filter_map(|spec| self.entry(a, id, prefix, &slot.exposure, spec)));
        }
        out.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        let mut collisions = Vec::new();
        // Prefixed names cannot collide: namespaces are unique, and no fixed tool has the prefix.
        if raw {
            let twice: BTreeSet<String> =
                out.windows(2).filter(|w| w[0].spec.name == w[1].spec.name).map(|w| w[0].spec.name.clone()).collect();
            let (left_out, kept): (Vec<CatalogEntry>, Vec<CatalogEntry>) = out.into_iter().partition(|e| twice.contains(&e.spec.name));
            out = kept;
            collisions = left_out;
        }
        Some((out, collisions))
    }

    /// Per mount, the names of its tools left out for an agent because another thing that agent sees serves the same name.
    pub fn collisions(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for agent in self.resolved.agents.keys() {
            let Some((_, collisions)) = self.catalog_and_collisions(agent) else { continue };
            for entry in &collisions {
                let Source::Mount(id) = &entry.source else { continue };
                let others: Vec<String> = collisions
                    .iter()
                    .filter(|other| other.spec.name == entry.spec.name && other.source != entry.source)
                    .map(|other| match &other.source {
                        Source::Mount(other) => format!("mount `{other}`"),
                        Source::Service(_) => "a fixed tool".to_owned(),
                    })
                    .collect();
                out.entry(id.clone()).or_default().push(format!(
                    "tool `{}` is also served by {} to agent `{agent}`: neither is served to it",
                    entry.spec.name,
                    others.join(" and ")
                ));
            }
        }
        out
    }

    /// Whether what the agent is shown depends on the session's roots (it has a live tool).
    pub fn lists_by_roots(&self, agent: &str) -> bool {
        self.fixed.get(agent).is_some_and(|f| f.iter().any(|f| f.tool.is_live()))
    }

    /// What a session of the agent is shown now, given its roots: the catalog
    /// with live tools' definitions as they list now, and their prompts.
    pub async fn view(&self, agent: &str, roots: &[PathBuf]) -> Option<View> {
        let catalog = self.catalog(agent)?;
        let mut view = View::default();
        let mut prompts: Vec<Arc<Vec<PromptSpec>>> = Vec::new();
        for entry in catalog {
            let live = match entry.source {
                Source::Service(_) => self.fixed[agent].iter().find(|f| f.tool.is_live() && f.entry.spec.name == entry.spec.name),
                Source::Mount(_) => None,
            };
            let Some(f) = live else {
                view.tools.push(entry.spec);
                continue;
            };
            let listed = f.tool.list(&f.settings, f.listing(roots)).await;
            view.tools.push(ToolSpec { name: entry.spec.name, definition: listed.definition });
            if !listed.prompts.is_empty() {
                prompts.push(listed.prompts);
            }
        }
        if let Some(routes) = self.routes(agent) {
            view.offered = OfferedView {
                prompts: routes.prompts(),
                resources: routes.listed(|o| &o.resources),
                templates: routes.listed(|o| &o.templates),
            };
        }
        // One tool's prompts are shared as they are; several are merged in name order.
        view.prompts = match prompts.len() {
            0 => Arc::default(),
            1 => prompts.pop().expect("one"),
            _ => {
                let mut all: Vec<PromptSpec> = prompts.iter().flat_map(|p| p.iter().cloned()).collect();
                all.sort_by(|a, b| a.name.cmp(&b.name));
                Arc::new(all)
            }
        };
        Some(view)
    }

    /// Whether the agent is served skills over MCP's skills extension (one of its fixed
    /// tools serves them).
    pub fn serves_skills(&self, agent: &str) -> bool {
        self.fixed.get(agent).is_some_and(|f| f.iter().any(|f| f.tool.skill_server().is_some()))
    }

    /// `skills/list` for a session of the agent with these roots: every entry its tools
    /// serve (only the one at URI `only`, when given: `skills/get`).
    pub async fn skills(&self, agent: &str, roots: &[PathBuf], only: Option<&str>) -> Vec<Json> {
        let mut all = Vec::new();
        for f in self.fixed.get(agent).into_iter().flatten() {
            if let Some(server) = f.tool.skill_server() {
                all.extend(server.skills(&f.settings, f.listing(roots), only.map(str::to_owned)).await);
            }
        }
        all
    }

    /// `resources/read` of a served skill's file (with `directory`,
    /// `resources/directory/read` of a folder), by the first of the agent's tools whose
    /// skill it is; `None` when it is none's.
    pub async fn read_skill(
        &self,
        agent: &str,
        roots: &[PathBuf],
        uri: &str,
        directory: bool,
        hold: &crate::reads::ReadHold,
    ) -> crate::surface::SkillRead {
        for f in self.fixed.get(agent).into_iter().flatten() {
            let Some(server) = f.tool.skill_server() else { continue };
            if let Some(read) = server.read_skill(&f.settings, f.listing(roots), uri.to_owned(), directory, hold.clone()).await {
                return Some(read);
            }
        }
        None
    }

    /// `prompts/get`: the first of the agent's live tools that lists the prompt gives it.
    pub async fn get_prompt(&self, agent: &str, name: &str, arguments: Map<String, Json>, roots: &[PathBuf]) -> Result<Json, PromptError> {
        let Some(fixed) = self.fixed.get(agent) else {
            return Err(PromptError::new(crate::codes::AGENT_UNKNOWN, format!("the composition has no agent `{agent}`")));
        };
        for f in fixed.iter().filter(|f| f.tool.is_live()) {
            let call = PromptCall {
                name: name.to_owned(),
                arguments: arguments.clone(),
                providers: f.providers.clone(),
                section: f.section.clone(),
                roots: roots.to_vec(),
            };
            match f.tool.get_prompt(&f.settings, call).await {
                Err(e) if e.code == crate::codes::PROMPT_UNKNOWN => continue,
                answer => return answer,
            }
        }
        Err(PromptError::unknown(name))
    }

    /// The mounts agent `agent` sees, in mount order, with what each offers; `None` for an unknown agent.
    pub fn routes(&self, agent: &str) -> Option<Routes<'_>> {
        let a = self.resolved.agents.get(agent)?;
        let mounts = self
            .mounts
            .iter()
            .filter(|(id, slot)| self.visible_prefix(agent, id, slot).is_some())
            .map(|(id, slot)| (id.as_str(), self.offers_for(a, id, slot)))
            .collect();
        Some(Routes { mounts })
    }

    /// What mount `id` offers agent `a`: its prompts and resources as the agent's rules leave them.
    fn offers_for(&self, a: &crate::resolve::Agent, id: &str, slot: &Slot) -> Arc<crate::offers::Offers> {
        let offers = slot.running.offers();
        if a.offers.is_empty() {
            return offers;
        }
        let mut shown = (*offers).clone();
        // Rules name prompts `<prefix><prompt>` however clients see them.
        shown.prompts.retain(|p| match &slot.exposure {
            Exposure::Dynamic { prefix, raw: true } => a.offers.shows_prompt(&format!("{prefix}{}", p.key)),
            _ => a.offers.shows_prompt(&p.key),
        });
        if !a.offers.shows_resources(id) {
            shown.resources.clear();
            shown.templates.clear();
            shown.views.clear();
        }
        Arc::new(shown)
    }

    /// The agent's instructions (`offers::instructions`): first, under `seam's tools`, a
    /// line for each of seam's own tools it is served; then each visible mount's.
    pub fn instructions(&self, agent: &str) -> Option<String> {
        let routes = self.routes(agent)?;
        // Not a fixed tool the agent is not served for its name's collision with a raw-named mount's.
        let colliding: Vec<String> =
            self.catalog_and_collisions(agent).map(|(_, c)| c.into_iter().map(|e| e.spec.name).collect()).unwrap_or_default();
        let own: Vec<&str> = self
            .fixed
            .get(agent)
            .into_iter()
            .flatten()
            .filter(|entry| !colliding.contains(&entry.entry.spec.name))
            .filter_map(|entry| entry.tool.guidance())
            .collect();
        let own = own.join("\n");
        let mounts = routes.mounts.iter().filter_map(|(id, offers)| Some((*id, offers.instructions.as_deref()?)));
        // A heading no mount id can take.
        crate::offers::instructions(std::iter::once(("seam's tools", own.as_str())).chain(mounts))
    }

    /// The mount that serves prompt `name` for agent `agent`, if a visible mount lists it.
    fn prompt_mount(&self, agent: &str, name: &str) -> Option<&Arc<Slot>> {
        let a = self.resolved.agents.get(agent)?;
        let lists = |id: &str, slot: &Slot| self.offers_for(a, id, slot).prompts.binary_search_by(|p| p.key.as_str().cmp(name)).is_ok();
        let mut serving = self.mounts.iter().filter(|(id, slot)| {
            let named = match &slot.exposure {
                Exposure::Dynamic { raw: true, .. } => true,
                _ => self.visible_prefix(agent, id, slot).is_some_and(|p| name.starts_with(p)),
            };
            named && self.visible_prefix(agent, id, slot).is_some() && lists(id, slot)
        });
        // A name two mounts serve is served by neither (`Routes::prompts`).
        match (serving.next(), serving.next()) {
            (Some((_, slot)), None) => Some(slot),
            _ => None,
        }
    }

    /// Whether agent `agent` sees mount `id`'s tools, prompts and resources.
    pub fn sees(&self, agent: &str, id: &str) -> bool {
        self.mounts.get(id).is_some_and(|slot| self.visible_prefix(agent, id, slot).is_some())
    }

    /// The mounts agent `agent` sees, in mount order.
    pub fn seen_mounts(&self, agent: &str) -> Vec<Arc<dyn Running>> {
        self.mounts.iter().filter(|(id, slot)| self.visible_prefix(agent, id, slot).is_some()).map(|(_, s)| s.running.clone()).collect()
    }

    /// The id of the mount that serves `uri` for agent `agent` (`Routes::resource`).
    pub fn resource_mount(&self, agent: &str, uri: &str) -> Option<String> {
        self.routes(agent)?.resource(uri, agent, &self.links).map(str::to_owned)
    }

    /// Whether `name` is a prompt of a mount the agent sees (not a live tool's).
    pub fn is_mount_prompt(&self, agent: &str, name: &str) -> bool {
        self.prompt_mount(agent, name).is_some()
    }

    /// The name prefix of a mount whose discovered tools the agent can see.
    fn visible_prefix<'s>(&self, agent: &str, id: &str, slot: &'s Slot) -> Option<&'s str> {
        let Exposure::Dynamic { prefix, .. } = &slot.exposure else { return None };
        self.resolved.is_visible(agent, id).then_some(prefix.as_str())
    }

    fn entry(&self, agent: &crate::resolve::Agent, id: &str, prefix: &str, exposure: &Exposure, spec: &ToolSpec) -> Option<CatalogEntry> {
        // Rules name a mount's tools `<prefix><tool>` however clients see them.
        let tool = match exposure {
            Exposure::Dynamic { raw: true, .. } => spec.name.as_str(),
            _ => spec.name.strip_prefix(prefix)?,
        };
        let settings = agent.tools.dynamic_settings(id, tool, &self.resolved.budgets)?;
        Some(CatalogEntry {
            spec: spec.clone(),
            source: Source::Mount(id.to_owned()),
            timeout: settings.timeout,
            max_output_chars: settings.max_output_chars,
        })
    }

    pub fn calls_in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Whether every required mount answers now.
    pub fn ready(&self) -> bool {
        self.mounts.values().all(|s| !s.required || s.running.is_ready())
    }
}

/// A running composition.
pub struct Deployment {
    engine: Arc<Engine>,
    path: PathBuf,
    env: Arc<dyn Env + Send + Sync>,
    options: Options,
    live: ArcSwapOption<Generation>,
    /// Reloads run one at a time.
    reloading: tokio::sync::Mutex<()>,
    /// Wakes the reload worker; triggers while a reload runs coalesce into one more.
    trigger: tokio::sync::Notify,
    outcomes: Mutex<VecDeque<Outcome>>,
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
    retiring: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// What mounts' servers say that no call asked for, to the sessions.
    events: crate::runtime::MountEvents,
    /// The live generation's workspace root, for mounts kept across a reload that changes it.
    workspace: tokio::sync::watch::Sender<Option<PathBuf>>,
    /// What clients want of each mount id (`BuildCx::interest`), for the builds of it to come.
    interests: Mutex<BTreeMap<String, Arc<crate::runtime::Interest>>>,
    /// The tasks mounts' servers made for calls, under the ids seam minted for them.
    tasks: Arc<crate::tasks::Tasks>,
    /// The call stage: the hooks every request passes (`crate::chain`).
    chain: crate::chain::Chain,
    /// The bytes of resource reads in flight, every client's together.
    reads: crate::reads::ReadBudget,
}

impl Deployment {
    pub fn new(engine: Arc<Engine>, path: &Path, env: Arc<dyn Env + Send + Sync>, options: Options) -> Arc<Deployment> {
        let tasks = Arc::new(crate::tasks::Tasks::default());
        let chain = crate::chain::Chain::new(tasks.clone(), &options.hooks);
        Arc::new(Deployment {
            engine,
            path: path.to_owned(),
            env,
            options,
            live: ArcSwapOption::empty(),
            reloading: tokio::sync::Mutex::new(()),
            trigger: tokio::sync::Notify::new(),
            outcomes: Mutex::new(VecDeque::new()),
            reloading_since: Mutex::new(None),
            checks_running: Arc::default(),
            files: Mutex::new(vec![path.to_owned()]),
            changes: Changes::default(),
            status_changes: Changes::default(),
            next_number: AtomicU64::new(1),
            retiring: Mutex::new(Vec::new()),
            events: Default::default(),
            workspace: tokio::sync::watch::channel(None).0,
            interests: Mutex::default(),
            tasks,
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
        let mut outcome = self.reload_locked().await;
        drop(reloading);
        let mut outcomes = self.outcomes.lock().expect("outcomes lock");
        outcome.number = outcomes.back().map_or(1, |last| last.number + 1);
        if outcomes.len() == KEPT_OUTCOMES {
            outcomes.pop_front();
        }
        outcomes.push_back(outcome.clone());
        drop(outcomes);
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

    /// Served over HTTP: a token nobody can read would shut its clients out (the page
    /// that says why included), and past loopback no agent may be left open.
    fn token_refusals(&self, resolved: &Resolved, tree: &crate::yaml::Node) -> Vec<Diagnostic> {
        let mut refused = Vec::new();
        let mut checked = BTreeSet::new();
        for agent in resolved.agents.keys() {
            let Some((source, at)) = resolved.token_for(agent) else { continue };
            if !checked.insert(at.clone()) {
                continue;
            }
            if let Err(e) = source.read() {
                let pointer = source.pointer(&at);
                refused.push(Diagnostic::new(crate::codes::SERVE_TOKEN_UNREADABLE, locate(tree, &pointer), &pointer, e.to_string()));
            }
        }
        let open = resolved.open_agents();
        if self.options.require_tokens && !open.is_empty() {
            let at = if open.contains(&crate::resolve::DEFAULT_AGENT) {
                "/serve".to_owned()
            } else {
                crate::diagnostic::pointer(["agents", open[0]])
            };
            let message = format!(
                "seam listens beyond loopback, and no token guards agent{} {}: set `serve.bearer_token_env` (or `_file`), or start with `--insecure-no-auth`",
                if open.len() > 1 { "s" } else { "" },
                open.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
            );
            refused.push(Diagnostic::new(crate::codes::SERVE_TOKEN_REQUIRED, locate(tree, &at), &at, message));
        }
        refused
    }

    /// The next generation's mounts: the live ones the diff keeps, carried over; changed
    /// ones that can take their change while they run, reconfigured (applied at the swap);
    /// the rest built beside the live generation, at most `max_concurrent_starts` at once.
    /// A required mount that does not start rejects the reload (`Err`: each such mount),
    /// and what was built is disposed.
    async fn build_mounts(&self, resolved: &Resolved, diff: &Diff, live: Option<&Generation>) -> Result<NextMounts, Vec<StartFailure>> {
        let subprocess = Arc::new(SubprocessService::new(
            resolved.services.get("subprocess").and_then(|s| serde_json::from_value(s.clone()).ok()).unwrap_or_default(),
        ));
        let workspace = resolved.workspace_root().map(PathBuf::from);
        let mut next = NextMounts::default();
        let mut builds = Vec::new();
        for (id, mount) in &resolved.mounts {
            let r = mount.resolved.as_ref().expect("a planned composition has every mount resolved");
            if let Some(slot) = live.and_then(|g| g.mounts.get(id))
                && let Some(kept) = carried_over(id, mount, r, slot, diff, &mut next)
            {
                next.mounts.insert(id.clone(), kept);
                continue;
            }
            let cx = BuildCx {
                id: id.clone(),
                subprocess: subprocess.clone(),
                workspace: workspace.clone(),
                changes: self.changes.clone(),
                status: self.status_changes.clone(),
                events: self.events.clone(),
                live_workspace: self.workspace.subscribe(),
                interest: self.interests.lock().expect("interests lock").entry(id.clone()).or_default().clone(),
            };
            builds.push(build_slot(id.clone(), mount.kind, r, cx));
        }
        let failures = settle(&mut next, self.start_all(builds).await);
        // Keep the composition's own order.
        next.mounts.sort_by_cached_key(|id, _| resolved.mounts.get_index_of(id));
        if failures.is_empty() {
            return Ok(next);
        }
        for id in &next.built {
            next.mounts[id].running.dispose(self.options.dispose_timeout).await;
        }
        Err(failures)
    }

    /// Runs the builds, at most `max_concurrent_starts` at once, telling `on_activated` of each.
    async fn start_all(&self, builds: Vec<impl Future<Output = (Slot, Option<String>)>>) -> Vec<(Slot, Option<String>)> {
        let total = builds.len();
        let done = AtomicUsize::new(0);
        let on_activated = self.options.on_activated.clone();
        let starts = tokio::sync::Semaphore::new(self.options.max_concurrent_starts.max(1));
        futures::future::join_all(builds.into_iter().map(|build| async {
            let permit = starts.acquire().await.expect("the semaphore is never closed");
            let (slot, error) = build.await;
            drop(permit);
            if let Some(report) = &on_activated {
                let done = done.fetch_add(1, Ordering::Relaxed) + 1;
                report(Activated { id: &slot.id, state: slot.running.status().state, done, total });
            }
            (slot, error)
        }))
        .await
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
        let fixed = fixed_tools(&resolved, &mounts);
        let write_watchers = mounts.values().filter(|s| s.running.write_watcher().is_some()).map(|s| s.running.clone()).collect();
        let serve = resolved.services.get("serve").and_then(|s| crate::model::ServeLimits::deserialize(s).ok()).unwrap_or_default();
        let next = Arc::new(Generation {
            number,
            digest,
            loaded_at: SystemTime::now(),
            resolved,
            plan,
            mounts,
            serve,
            fixed,
            write_watchers,
            in_flight: AtomicUsize::new(0),
            links: live.as_ref().map(|g| g.links.clone()).unwrap_or_default(),
            drained: Mutex::new(None),
        });
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

    /// `/status`.
    pub fn status(&self) -> crate::status::DeploymentStatus {
        let live = self.live();
        let mut mounts = IndexMap::new();
        if let Some(g) = &live {
            for (id, slot) in &g.mounts {
                let status = slot.running.status();
                let offers = slot.running.offers();
                let offers = (!offers.prompts.is_empty() || !offers.resources.is_empty() || !offers.templates.is_empty()).then(|| {
                    crate::status::OfferCounts {
                        prompts: offers.prompts.len(),
                        resources: offers.resources.len(),
                        templates: offers.templates.len(),
                    }
                });
                let mut facts = slot.running.facts();
                let own = facts.remove("warnings").and_then(|w| serde_json::from_value::<Vec<String>>(w).ok());
                let mount = crate::status::MountStatus {
                    kind: slot.kind,
                    state: status.state,
                    since: timestamp(status.since),
                    detail: status.detail,
                    tools: slot.running.tools().len(),
                    required: slot.required,
                    offers,
                    facts,
                    warnings: own.unwrap_or_default(),
                };
                mounts.insert(id.clone(), mount);
            }
            // A tool name two things serve to an agent is served by neither: each mount is told so.
            for (id, warnings) in g.collisions() {
                mounts[&id].warnings.extend(warnings);
            }
            // A URI or template two mounts list is read from the first, in mount order: the others are told so.
            let all = Routes { mounts: g.mounts.iter().map(|(id, slot)| (id.as_str(), slot.running.offers())).collect() };
            for (id, key, first) in all.shadowed() {
                mounts[&id].warnings.push(format!("`{key}` is also listed by mount `{first}`, which comes first: reads of it go there"));
            }
        }
        let mut services = Map::new();
        if let Some(g) = &live {
            for surface in &g.resolved.surfaces {
                let mounts = g
                    .mounts
                    .values()
                    .filter(|slot| surface.kinds().iter().any(|k| k.name() == slot.kind))
                    .map(|slot| provider(&g.resolved, slot))
                    .collect();
                let cx = StatusCx { section: g.resolved.services.get(surface.service()), mounts };
                if let Some(view) = surface.status(&cx) {
                    services.insert(surface.service().to_owned(), view);
                }
            }
        }
        crate::status::DeploymentStatus {
            generation: live.as_ref().map(|g| g.number),
            digest: live.as_ref().map(|g| g.digest.clone()),
            loaded_at: live.as_ref().map(|g| timestamp(g.loaded_at)),
            calls_in_flight: live.as_ref().map(|g| g.calls_in_flight()),
            last_reload: self.last_outcome(),
            reloading_since: self.reloading_since.lock().expect("reloading lock").map(timestamp),
            mounts,
            services,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::{Kind, MountCx, MountKind, ResolvedMount, Surface};

    /// A kind whose build records how many builds run at once, yielding so that others could start.
    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Probe {
        #[serde(default)]
        #[schemars(skip)]
        kind: String,
    }
    static RUNNING: AtomicUsize = AtomicUsize::new(0);
    static MOST: AtomicUsize = AtomicUsize::new(0);
    fn resolve_probe(_: &mut MountCx<'_>, config: Probe) -> Option<ResolvedMount> {
        Some(ResolvedMount::new(config, Exposure::Dynamic { prefix: "probe__".into(), raw: false }))
    }
    fn build_probe(_: Probe, _: BuildCx) -> crate::runtime::BoxFuture<'static, Result<Arc<dyn Running>, crate::runtime::ProviderError>> {
        Box::pin(async {
            let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
            MOST.fetch_max(now, Ordering::SeqCst);
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            RUNNING.fetch_sub(1, Ordering::SeqCst);
            Ok(Arc::new(Inert::no_runtime("probe")) as Arc<dyn Running>)
        })
    }
    static PROBE: Kind<Probe> = Kind { name: "probe", registry: "probe", resolve: resolve_probe, build: Some(build_probe) };
    struct ProbeSurface;
    impl Surface for ProbeSurface {
        fn service(&self) -> &'static str {
            "probe"
        }
        fn kinds(&self) -> &'static [&'static dyn MountKind] {
            static KINDS: [&dyn MountKind; 1] = [&PROBE];
            &KINDS
        }
    }
    static SURFACE: ProbeSurface = ProbeSurface;

    /// A call before any generation is live (the first reload still building) answers
    /// `TOOL_UNAVAILABLE`, not a hang or a panic.
    #[tokio::test]
    async fn a_call_before_any_generation_answers_tool_unavailable() {
        let engine = Arc::new(Engine::new(vec![&SURFACE]));
        let deployment = Deployment::new(engine, Path::new("/nonexistent/c.yaml"), Arc::new(crate::env::ProcessEnv), Options::default());
        let context = CallContext { roots: Default::default(), cancel: CancellationToken::new(), client: Default::default() };
        let caller = crate::chain::Caller { agent: "default".to_owned(), token: None };
        let output = deployment.call(&caller, "probe__x", Map::new(), context).await;
        assert!(output.is_error);
        assert_eq!(output.content[0]["text"], "TOOL_UNAVAILABLE: no generation is live");
    }

    /// Builds are polled together, so without the bound all five would run at once.
    #[tokio::test]
    async fn no_more_mounts_start_at_once_than_max_concurrent_starts() {
        let dir = std::env::temp_dir().join(format!("seam-starts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.yaml");
        let mounts: String = (0..5).map(|i| format!("  m{i}: {{ kind: probe }}\n")).collect();
        std::fs::write(&file, format!("seam: 1\nmounts:\n{mounts}")).unwrap();
        let engine = Arc::new(Engine::new(vec![&SURFACE]));
        for (limit, most) in [(2, 2), (5, 5)] {
            MOST.store(0, Ordering::SeqCst);
            let options = Options { max_concurrent_starts: limit, ..Options::default() };
            let deployment = Deployment::new(engine.clone(), &file, Arc::new(crate::env::ProcessEnv), options);
            let outcome = deployment.reload().await;
            assert_eq!((outcome.outcome, outcome.built.len()), (OutcomeKind::Applied, 5), "{:?}", outcome.diagnostics);
            assert_eq!(MOST.load(Ordering::SeqCst), most, "limit {limit}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// At most `KEPT_OUTCOMES` are kept: at the limit nothing is dropped, one past it the oldest goes.
    #[tokio::test]
    async fn the_last_fifty_outcomes_are_kept() {
        let dir = std::env::temp_dir().join(format!("seam-outcomes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.yaml");
        std::fs::write(&file, "seam: 1\n").unwrap();
        let engine = Arc::new(Engine::new(Vec::new()));
        let deployment = Deployment::new(engine, &file, Arc::new(crate::env::ProcessEnv), Options::default());
        assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied);
        for _ in 1..KEPT_OUTCOMES {
            assert_eq!(deployment.reload().await.outcome, OutcomeKind::Unchanged);
        }
        let kept = deployment.outcomes();
        assert_eq!(kept.len(), KEPT_OUTCOMES);
        assert_eq!(kept[0].outcome, OutcomeKind::Applied);
        deployment.reload().await;
        let kept = deployment.outcomes();
        assert_eq!(kept.len(), KEPT_OUTCOMES);
        assert_eq!(kept[0].outcome, OutcomeKind::Unchanged, "one past the limit, the oldest is dropped");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An environment whose `GATED` variable is read only when the test says so:
    /// a composition that names it takes as long to check as the test likes.
    struct GatedEnv {
        entered: tokio::sync::mpsc::UnboundedSender<()>,
        release: Mutex<std::sync::mpsc::Receiver<()>>,
    }

    impl crate::env::Env for GatedEnv {
        fn var(&self, name: &str) -> Option<String> {
            if name == "GATED" {
                let _ = self.entered.send(());
                let _ = self.release.lock().unwrap().recv();
            }
            Some("x".to_owned())
        }
    }

    /// A check that finishes just inside `CHECK_DEADLINE` applies; one that
    /// reaches it is rejected (`COMPOSITION_READ_TIMEOUT`) and frees the reload
    /// lock, so the next reload runs while the stuck check is still going on.
    #[tokio::test(start_paused = true)]
    async fn a_check_gets_check_deadline_and_no_longer() {
        let dir = std::env::temp_dir().join(format!("seam-deadline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.yaml");
        let (entered, mut entering) = tokio::sync::mpsc::unbounded_channel();
        let (release, released) = std::sync::mpsc::channel();
        let env = Arc::new(GatedEnv { entered, release: Mutex::new(released) });
        let engine = Arc::new(Engine::new(Vec::new()));
        let deployment = Deployment::new(engine, &file, env, Options::default());
        for (step, (took, expected)) in
            [(CHECK_DEADLINE - Duration::from_millis(1), OutcomeKind::Applied), (CHECK_DEADLINE, OutcomeKind::Rejected)]
                .into_iter()
                .enumerate()
        {
            std::fs::write(&file, format!("seam: 1\nname: gated-{step}-${{GATED}}\n")).unwrap();
            let reload = tokio::spawn({
                let deployment = deployment.clone();
                async move { deployment.reload().await }
            });
            entering.recv().await.unwrap();
            assert!(deployment.status().reloading_since.is_some(), "/status says a reload is under way");
            tokio::time::advance(took).await;
            if expected == OutcomeKind::Rejected {
                // The check is still held: only the deadline can end the reload now.
                for _ in 0..100 {
                    if reload.is_finished() {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                assert!(reload.is_finished(), "the reload ends at the deadline");
                let outcome = reload.await.unwrap();
                assert_eq!(outcome.outcome, expected);
                assert_eq!(outcome.diagnostics[0]["code"], "COMPOSITION_READ_TIMEOUT");
                // The lock is free: a composition that checks at once applies, the stuck check still running.
                std::fs::write(&file, "seam: 1\nname: quick\n").unwrap();
                assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied);
                release.send(()).unwrap();
            } else {
                release.send(()).unwrap();
                assert_eq!(reload.await.unwrap().outcome, expected, "{took:?}");
            }
            assert!(deployment.status().reloading_since.is_none(), "and that it is over");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Checks left past their deadline are counted: with one short of
    /// `MAX_STUCK_CHECKS` stuck a reload still runs its check, with that many
    /// it is rejected at once, and once they end reloads run again.
    #[tokio::test(start_paused = true)]
    async fn no_more_than_max_stuck_checks_are_left_running() {
        let dir = std::env::temp_dir().join(format!("seam-stuck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.yaml");
        let (entered, mut entering) = tokio::sync::mpsc::unbounded_channel();
        let (release, released) = std::sync::mpsc::channel();
        let env = Arc::new(GatedEnv { entered, release: Mutex::new(released) });
        let deployment = Deployment::new(Arc::new(Engine::new(Vec::new())), &file, env, Options::default());
        let quick = |n: usize| std::fs::write(&file, format!("seam: 1\nname: quick-{n}\n")).unwrap();
        for stuck in 0..MAX_STUCK_CHECKS {
            quick(stuck);
            assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied, "{stuck} stuck: the check runs");
            std::fs::write(&file, "seam: 1\nname: gated-${GATED}\n").unwrap();
            let reload = tokio::spawn({
                let deployment = deployment.clone();
                async move { deployment.reload().await }
            });
            entering.recv().await.unwrap();
            tokio::time::advance(CHECK_DEADLINE).await;
            assert_eq!(reload.await.unwrap().outcome, OutcomeKind::Rejected);
        }
        quick(MAX_STUCK_CHECKS);
        let refused = deployment.reload().await;
        assert_eq!((refused.outcome, refused.diagnostics[0]["code"].as_str()), (OutcomeKind::Rejected, Some("COMPOSITION_READ_TIMEOUT")));
        for _ in 0..MAX_STUCK_CHECKS {
            release.send(()).unwrap();
        }
        // The released checks end on their own threads.
        while deployment.checks_running.load(Ordering::SeqCst) > 0 {
            tokio::task::yield_now().await;
            std::thread::yield_now();
        }
        assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied, "once they end, checks run again");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

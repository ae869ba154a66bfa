//! `isolation: per-agent` and `per-session`: a connection to the server for each agent
//! that sees the mount, or for each client session, each a whole `McpMount` of its own;
//! what an agent is shown and where its requests go are its own connection's.
//!
//! A per-session mount lists from a connection of its own that no session's request
//! goes on (its `lister`), started with the mount: what it lists, its status and its
//! lock are the mount's, before any session and between them. A session's connection
//! is started by its first request, told that client's roots, and ended when the
//! session ends or has carried no request for `idle_timeout`.

use super::*;
use crate::SessionConnections;
use seam_engine::runtime::{ClientKey, Roots};

/// The mount as its `isolation` says: one connection for every agent, one started for
/// each agent that sees the mount (`PerAgent`), or one for each client session (`PerSession`).
pub(super) fn isolated(transport: Transport, common: Common, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    if let Some(limits) = common.isolation.per_session() {
        return Box::pin(async move {
            let lister = start(transport.clone(), common.clone(), cx.clone(), None, Origin::Shared).await?;
            Ok(PerSession::new(lister, transport, common, cx, limits) as Arc<dyn Running>)
        });
    }
    if common.isolation != crate::Isolation::Mode(crate::IsolationMode::PerAgent) {
        return start(transport, common, cx, None, Origin::Shared);
    }
    Box::pin(async move {
        let starts = cx.agents.iter().map(|agent| {
            let started = start(transport.clone(), common.clone(), cx.clone(), None, Origin::Agent(agent.clone()));
            async move { (agent.clone(), started.await) }
        });
        let mut by_agent = BTreeMap::new();
        for (agent, started) in futures::future::join_all(starts).await {
            match started {
                Ok(running) => {
                    by_agent.insert(agent, running);
                }
                Err(e) => {
                    for running in by_agent.values() {
                        running.dispose(EXIT_GRACE).await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(Arc::new(PerAgent { by_agent }) as Arc<dyn Running>)
    })
}

/// A mount with a connection per agent (`isolation: per-agent`), each a whole mount of
/// its own; requests go to the calling agent's.
pub(super) struct PerAgent {
    by_agent: BTreeMap<String, Arc<dyn Running>>,
}

impl PerAgent {
    /// Why a request cannot be sent: the agent has no connection of its own.
    fn unconnected(agent: Option<&str>, request: &MountRequest) -> Answered {
        let why = match agent {
            Some(agent) => {
                format!("`{}`: agent `{agent}` has no connection to this mount's server (`isolation: per-agent`)", request.target())
            }
            None => format!("`{}`: this mount keeps a connection per agent, and the request names none", request.target()),
        };
        match request {
            MountRequest::CallTool { .. } => Ok(Answer::Tool(ToolOutput::error(seam_engine::codes::TOOL_UNAVAILABLE, why))),
            _ => Err(RequestError::Unavailable(why)),
        }
    }
}

impl Running for PerAgent {
    fn status(&self) -> Status {
        let statuses: Vec<Status> = self.by_agent.values().map(|r| r.status()).collect();
        statuses.iter().find(|s| s.state != State::Ready).cloned().unwrap_or_else(|| Status::new(State::Ready, None))
    }
    fn is_ready(&self) -> bool {
        self.by_agent.values().all(|r| r.is_ready())
    }
    fn tools(&self) -> Arc<Vec<ToolSpec>> {
        self.by_agent.values().next().map(|r| r.tools()).unwrap_or_default()
    }
    fn tools_for(&self, agent: &str) -> Arc<Vec<ToolSpec>> {
        self.by_agent.get(agent).map(|r| r.tools()).unwrap_or_default()
    }
    fn agents(&self) -> Option<Vec<String>> {
        Some(self.by_agent.keys().cloned().collect())
    }
    fn offers(&self) -> Arc<Offers> {
        self.by_agent.values().next().map(|r| r.offers()).unwrap_or_default()
    }
    fn offers_for(&self, agent: &str) -> Arc<Offers> {
        self.by_agent.get(agent).map(|r| r.offers()).unwrap_or_default()
    }
    fn relay(&self, request: MountRequest, _: Client, _: CancellationToken) -> BoxFuture<'static, Answered> {
        Box::pin(std::future::ready(PerAgent::unconnected(None, &request)))
    }
    fn relay_as(
        &self,
        agent: &str,
        _: &Roots,
        request: MountRequest,
        client: Client,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Answered> {
        match self.by_agent.get(agent) {
            Some(running) => running.relay(request, client, cancel),
            None => Box::pin(std::future::ready(PerAgent::unconnected(Some(agent), &request))),
        }
    }
    fn dispose(&self, within: Duration) -> BoxFuture<'static, ()> {
        let all: Vec<BoxFuture<'static, ()>> = self.by_agent.values().map(|r| r.dispose(within)).collect();
        Box::pin(async move {
            futures::future::join_all(all).await;
        })
    }
    fn reconfigure(&self, new: &dyn seam_engine::surface::MountConfig) -> Option<Box<dyn FnOnce() + Send>> {
        let applies: Option<Vec<Box<dyn FnOnce() + Send>>> = self.by_agent.values().map(|r| r.reconfigure(new)).collect();
        let applies = applies?;
        Some(Box::new(move || applies.into_iter().for_each(|apply| apply())))
    }
    fn offered(&self) -> Option<seam_engine::lock::MountLock> {
        self.by_agent.values().next().and_then(|r| r.offered())
    }
    fn holds_tool(&self, name: &str) -> bool {
        self.by_agent.values().any(|r| r.holds_tool(name))
    }
    fn counts(&self) -> seam_engine::runtime::MountCounts {
        let mut counts = seam_engine::runtime::MountCounts::default();
        let mut held = 0;
        for running in self.by_agent.values() {
            let own = running.counts();
            // Each connection's pin holds back the same definitions: the most any holds.
            held = held.max(own.held);
            counts += own;
        }
        seam_engine::runtime::MountCounts { held, ..counts }
    }
    fn facts(&self) -> Map<String, Json> {
        let mut facts = Map::new();
        facts.insert("connections".into(), Json::from(self.by_agent.len()));
        let mut warnings = Vec::new();
        let mut per_agent = Map::new();
        for (agent, running) in &self.by_agent {
            let mut own = running.facts();
            // Each connection's warnings are the mount's, said of the agent's connection.
            if let Some(Json::Array(said)) = own.remove("warnings") {
                warnings.extend(said.iter().filter_map(Json::as_str).map(|w| Json::from(format!("agent `{agent}`'s connection: {w}"))));
            }
            per_agent.insert(agent.clone(), Json::Object(own));
        }
        facts.insert("per_agent".into(), Json::Object(per_agent));
        if !warnings.is_empty() {
            facts.insert("warnings".into(), Json::Array(warnings));
        }
        facts
    }
}

/// The most 2026-07-28 client identities one agent may hold connections for on one
/// per-session mount. Such an identity is what the client says it is, so this bounds
/// what one agent's token can make a mount keep; a 2025-11-25 session's connection is
/// bounded by the agent's sessions.
pub const MAX_STATELESS_CLIENTS_PER_AGENT: usize = 8;

/// The most 2026-07-28 client identities one agent may hold on a mount of
/// `max_connections`: `MAX_STATELESS_CLIENTS_PER_AGENT`, and never more than half the
/// mount's connections (one at the least), so that names one agent makes up cannot
/// take every connection from the others.
fn stateless_per_agent(max_connections: u32) -> usize {
    (max_connections as usize / 2).clamp(1, MAX_STATELESS_CLIENTS_PER_AGENT)
}

/// A mount with a connection per client session (`isolation: per-session`).
pub(super) struct PerSession {
    /// The connection the mount lists from (and that a request with no client behind it,
    /// `seam call`'s, goes on): no session's.
    lister: Arc<dyn Running>,
    starter: Arc<Starter>,
    limits: SessionConnections,
    sessions: Arc<Mutex<HashMap<ClientKey, Arc<SessionSlot>>>>,
    /// What the sessions' connections that ended had counted: the mount's counts
    /// (`Running::counts`) never go back when one ends.
    retired: Arc<Mutex<seam_engine::runtime::MountCounts>>,
    /// Stops the task that ends idle connections.
    stop: CancellationToken,
}

/// What a session's connection is started with.
struct Starter {
    transport: Transport,
    /// A reload that changes only what a running mount takes (`reconfigure`) changes it too.
    common: Mutex<Common>,
    cx: BuildCx,
}

/// One client session's connection, started by its first request; the requests that
/// come meanwhile wait for that start.
struct SessionSlot {
    key: ClientKey,
    /// `None` until its start has finished.
    connection: tokio::sync::watch::Sender<Option<Started>>,
    started: std::sync::atomic::AtomicBool,
    /// Set when the session ended or idled out: a start that finishes after it ends what it started.
    ended: std::sync::atomic::AtomicBool,
    /// When it last carried a request, and how many it carries now.
    usage: Mutex<(Instant, usize)>,
}

/// A session's connection as its start left it: the mount, or why it did not start.
type Started = Result<Arc<dyn Running>, Arc<str>>;

/// A request a session's connection carries: counted from before it waits for the
/// connection to after its answer (or its drop), so that idleness never ends it mid-way.
struct InUse(Arc<SessionSlot>);

impl InUse {
    fn of(slot: Arc<SessionSlot>) -> InUse {
        slot.usage.lock().expect("usage lock").1 += 1;
        InUse(slot)
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut usage = self.0.usage.lock().expect("usage lock");
        *usage = (Instant::now(), usage.1 - 1);
    }
}

impl SessionSlot {
    fn new(key: ClientKey) -> SessionSlot {
        SessionSlot {
            key,
            connection: tokio::sync::watch::Sender::new(None),
            started: Default::default(),
            ended: Default::default(),
            usage: Mutex::new((Instant::now(), 0)),
        }
    }

    /// Whether it has carried no request for `idle`.
    fn idle_for(&self, idle: Duration) -> bool {
        let (last, running) = *self.usage.lock().expect("usage lock");
        running == 0 && last.elapsed() >= idle
    }

    /// Ends its connection (now, or when its start finishes), saying why; what it counted
    /// is kept in `retired`.
    fn end(&self, mount: &str, why: &str, retired: &Mutex<seam_engine::runtime::MountCounts>) {
        self.ended.store(true, std::sync::atomic::Ordering::SeqCst);
        tracing::info!(mount = %mount, "the connection for {} ends: {why}", self.key);
        if let Some(Ok(connection)) = &*self.connection.borrow() {
            // What it holds goes with it; what it counted stays.
            *retired.lock().expect("retired lock") += seam_engine::runtime::MountCounts { held: 0, ..connection.counts() };
            tokio::spawn(connection.dispose(EXIT_GRACE));
        }
    }
}

impl PerSession {
    fn new(lister: Arc<dyn Running>, transport: Transport, common: Common, cx: BuildCx, limits: SessionConnections) -> Arc<PerSession> {
        let sessions: Arc<Mutex<HashMap<ClientKey, Arc<SessionSlot>>>> = Arc::default();
        let stop = CancellationToken::new();
        let retired: Arc<Mutex<seam_engine::runtime::MountCounts>> = Arc::default();
        tokio::spawn(end_idle(cx.id.clone(), sessions.clone(), retired.clone(), limits.idle_timeout.to_std(), stop.clone()));
        let starter = Arc::new(Starter { transport, common: Mutex::new(common), cx });
        Arc::new(PerSession { lister, starter, limits, sessions, retired, stop })
    }

    /// The slot of `key`'s session, made if it has none and the limits leave room, with
    /// the request counted in it: under the lock `end_idle` holds, so that an idle slot is
    /// never ended between being found and being used.
    fn slot(&self, key: &ClientKey) -> Result<InUse, String> {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        if let Some(slot) = sessions.get(key) {
            return Ok(InUse::of(slot.clone()));
        }
        let max = self.limits.max_connections as usize;
        if sessions.len() >= max {
            return Err(format!(
                "this mount keeps a connection for at most {max} client sessions at once (`isolation: per-session`, \
                 `max_connections`), and each is in use: {key} may try again when a session ends or has been idle for {}",
                self.limits.idle_timeout
            ));
        }
        let most = stateless_per_agent(self.limits.max_connections);
        if let Some(agent) = key.stateless_agent()
            && sessions.keys().filter(|k| k.stateless_agent() == Some(agent)).count() >= most
        {
            return Err(format!(
                "agent `{agent}` has connections for {most} 2026-07-28 clients on this mount, \
                 the most one agent may: {key} may try again when one has been idle for {}",
                self.limits.idle_timeout
            ));
        }
        let slot = Arc::new(SessionSlot::new(key.clone()));
        sessions.insert(key.clone(), slot.clone());
        Ok(InUse::of(slot))
    }

    /// Why a request was not sent, as its answer.
    fn refused(request: &MountRequest, code: seam_engine::codes::Code, why: String) -> Answered {
        match request {
            MountRequest::CallTool { .. } => Ok(Answer::Tool(ToolOutput::error(code, why))),
            _ => Err(RequestError::Unavailable(why)),
        }
    }
}

impl Starter {
    /// The session's connection, started now if this is its first request: with the
    /// client's roots, when the server is to be given them (`roots: client`). The start
    /// runs on a task of its own, so that a request dropped while it waits leaves no
    /// connection half made.
    async fn connection(&self, slot: &Arc<SessionSlot>, roots: Roots) -> Started {
        if !slot.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let (transport, cx, slot) = (self.transport.clone(), self.cx.clone(), slot.clone());
            let common = self.common.lock().expect("common lock").clone();
            tokio::spawn(async move {
                let client_roots = if common.roots == crate::RootsFrom::Client { Some(roots.get().await) } else { None };
                // Held no longer than the start: the roots reach the client's session.
                drop(roots);
                let origin = Origin::Client(slot.key.clone());
                let started = start(transport, common, cx, client_roots, origin).await.map_err(|e| Arc::from(e.to_string()));
                slot.connection.send_replace(Some(started));
                // Ended while it started: ended here, as `end` found nothing to end.
                if slot.ended.load(std::sync::atomic::Ordering::SeqCst)
                    && let Some(Ok(connection)) = &*slot.connection.borrow()
                {
                    tokio::spawn(connection.dispose(EXIT_GRACE));
                }
            });
        }
        let mut started = slot.connection.subscribe();
        let connection = started.wait_for(Option::is_some).await.map_err(|_| Arc::<str>::from("the connection's start was lost"))?;
        connection.clone().expect("waited for")
    }
}

/// Ends the connections of `sessions` that have carried no request for `idle`, looking
/// a few times per `idle`, until `stop`.
async fn end_idle(
    mount: String,
    sessions: Arc<Mutex<HashMap<ClientKey, Arc<SessionSlot>>>>,
    retired: Arc<Mutex<seam_engine::runtime::MountCounts>>,
    idle: Duration,
    stop: CancellationToken,
) {
    let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        // Ended under the lock, so that its counts move to `retired` as it leaves the table.
        sessions.lock().expect("sessions lock").retain(|_, slot| {
            let keep = !slot.idle_for(idle);
            if !keep {
                slot.end(&mount, "idle past `idle_timeout`", &retired);
            }
            keep
        });
    }
}

impl Running for PerSession {
    fn status(&self) -> Status {
        self.lister.status()
    }
    fn is_ready(&self) -> bool {
        self.lister.is_ready()
    }
    fn tools(&self) -> Arc<Vec<ToolSpec>> {
        self.lister.tools()
    }
    fn offers(&self) -> Arc<Offers> {
        self.lister.offers()
    }
    fn relay(&self, request: MountRequest, client: Client, cancel: CancellationToken) -> BoxFuture<'static, Answered> {
        self.relay_as("", &Roots::default(), request, client, cancel)
    }
    /// On the calling session's connection; a request with no client behind it (`seam
    /// call`'s) on the listing connection.
    fn relay_as(
        &self,
        _: &str,
        roots: &Roots,
        request: MountRequest,
        client: Client,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Answered> {
        let Some(key) = client.link().map(|link| link.key()) else {
            return self.lister.relay(request, client, cancel);
        };
        let in_use = match self.slot(&key) {
            Ok(in_use) => in_use,
            Err(why) => {
                return Box::pin(std::future::ready(PerSession::refused(&request, crate::codes::MCP_SESSION_CONNECTIONS_FULL, why)));
            }
        };
        let slot = in_use.0.clone();
        let (starter, roots) = (self.starter.clone(), roots.clone());
        Box::pin(async move {
            let _in_use = in_use;
            match starter.connection(&slot, roots).await {
                Ok(connection) => connection.relay(request, client, cancel).await,
                Err(why) => {
                    let why = format!("`{}`: the connection for {key} did not start: {why}", request.target());
                    PerSession::refused(&request, seam_engine::codes::TOOL_UNAVAILABLE, why)
                }
            }
        })
    }
    fn session_ended(&self, session: u64) {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        if let Some(slot) = sessions.remove(&ClientKey::Session(session)) {
            slot.end(&self.starter.cx.id, "its session ended", &self.retired);
        }
    }
    fn dispose(&self, within: Duration) -> BoxFuture<'static, ()> {
        self.stop.cancel();
        let slots: Vec<Arc<SessionSlot>> = self.sessions.lock().expect("sessions lock").drain().map(|(_, slot)| slot).collect();
        let mut all = vec![self.lister.dispose(within)];
        for slot in slots {
            slot.ended.store(true, std::sync::atomic::Ordering::SeqCst);
            if let Some(Ok(connection)) = &*slot.connection.borrow() {
                all.push(connection.dispose(within));
            }
        }
        Box::pin(async move {
            futures::future::join_all(all).await;
        })
    }
    fn reconfigure(&self, new: &dyn seam_engine::surface::MountConfig) -> Option<Box<dyn FnOnce() + Send>> {
        let common = match new.as_any() {
            n if n.is::<StdioServer>() => n.downcast_ref::<StdioServer>()?.common.clone(),
            n => n.downcast_ref::<HttpServer>()?.common.clone(),
        };
        let connections: Vec<Arc<dyn Running>> = self
            .sessions
            .lock()
            .expect("sessions lock")
            .values()
            .filter_map(|slot| slot.connection.borrow().as_ref().and_then(|c| c.as_ref().ok()).cloned())
            .collect();
        let applies: Option<Vec<Box<dyn FnOnce() + Send>>> =
            std::iter::once(&self.lister).chain(&connections).map(|r| r.reconfigure(new)).collect();
        let applies = applies?;
        let starter = self.starter.clone();
        Some(Box::new(move || {
            *starter.common.lock().expect("common lock") = common;
            applies.into_iter().for_each(|apply| apply());
        }))
    }
    fn offered(&self) -> Option<seam_engine::lock::MountLock> {
        self.lister.offered()
    }
    fn holds_tool(&self, name: &str) -> bool {
        self.lister.holds_tool(name)
    }
    fn counts(&self) -> seam_engine::runtime::MountCounts {
        let mut counts = self.lister.counts();
        // Under the sessions lock, as a slot's end moves its counts to `retired`: none is seen twice or not at all.
        let sessions = self.sessions.lock().expect("sessions lock");
        counts += self.retired.lock().expect("retired lock").clone();
        for slot in sessions.values() {
            if let Some(Ok(connection)) = &*slot.connection.borrow() {
                // What the pin holds is the lister's to say: every connection holds the same.
                counts += seam_engine::runtime::MountCounts { held: 0, ..connection.counts() };
            }
        }
        counts
    }
    fn facts(&self) -> Map<String, Json> {
        let mut facts = self.lister.facts();
        facts.insert("connections".into(), Json::from(self.sessions.lock().expect("sessions lock").len()));
        facts.insert("max_connections".into(), Json::from(self.limits.max_connections));
        facts
    }
}

//! `isolation: per-agent`: a connection to the server for each agent that sees the
//! mount, each a whole `McpMount` of its own; what an agent is shown and where its
//! requests go are its own connection's.

use super::*;

/// The mount as its `isolation` says: one connection for every agent, or one started for
/// each agent that sees the mount (`PerAgent`).
pub(super) fn isolated(transport: Transport, common: Common, cx: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
    if common.isolation == crate::Isolation::Shared {
        return start(transport, common, cx);
    }
    Box::pin(async move {
        let starts = cx.agents.iter().map(|agent| {
            let transport = match &transport {
                Transport::Stdio(c) => Transport::Stdio(c.clone()),
                Transport::Http(c) => Transport::Http(c.clone()),
            };
            let started = start(transport, common.clone(), cx.clone());
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
    fn relay_as(&self, agent: &str, request: MountRequest, client: Client, cancel: CancellationToken) -> BoxFuture<'static, Answered> {
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

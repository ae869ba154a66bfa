//! The one place a request passes: [`Deployment::relay`] routes it by what the agent
//! is offered, takes it through the call stage's hooks (`crate::chain`), and sends it
//! to the mount or the service's tool that serves it, on the generation live when it
//! arrived.

use super::*;
use crate::chain::{Answer, Answered, Caller, Passed, Passing};

/// Where a request goes, found in what its agent is offered: a request for anything
/// the agent is not offered has no route.
struct Route {
    source: Source,
    /// A call's catalog entry (its budgets).
    entry: Option<CatalogEntry>,
    /// A request about a task: the id seam minted for it, and the task.
    task: Option<(String, crate::tasks::Held)>,
}

/// A request the audit trail owes a record: written once it is answered, or, when it is
/// given up first (its future dropped), as `cancelled`.
struct Pending<'a> {
    deployment: &'a Deployment,
    trail: Arc<crate::audit::Trail>,
    caller: &'a Caller,
    method: &'static str,
    target: String,
    arguments: Map<String, Json>,
    generation: u64,
    started: std::time::Instant,
    recorded: bool,
}

impl Pending<'_> {
    fn record(&mut self, mount: Option<&str>, decision: crate::audit::Decision, result: &str, generation: u64) {
        self.recorded = true;
        self.deployment.decided(decision);
        self.trail.record(crate::audit::Record {
            agent: &self.caller.agent,
            token: self.caller.token.as_deref(),
            mount,
            method: self.method,
            target: &self.target,
            arguments: &self.arguments,
            decision,
            result,
            took: self.started.elapsed(),
            generation,
        });
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.recorded {
            self.record(None, crate::audit::Decision::Cancelled, "cancelled", self.generation);
        }
    }
}

/// What became of a request, as the audit trail records it: the generation it was
/// routed on, the mount that served it, the decision, and the code seam answered with.
struct Seen {
    generation: u64,
    mount: Option<String>,
    decision: crate::audit::Decision,
    code: Option<crate::codes::Code>,
}

/// A request that cannot be answered by anything, as its caller is given it: a call's
/// error result under `code`, another request's error.
fn unanswerable(request: &MountRequest, code: crate::codes::Code, error: RequestError) -> Answered {
    match request {
        MountRequest::CallTool { .. } => Ok(Answer::Tool(ToolOutput::error(code, error))),
        _ => Err(error),
    }
}

impl Deployment {
    /// One request of `caller`'s agent to what serves it, on the generation live when
    /// it arrives, through the call stage's hooks. A call runs under its tool's budgets
    /// and counts on its generation while it runs. With an audit trail, each is recorded
    /// once answered (`crate::audit`).
    pub async fn relay(&self, caller: &Caller, request: MountRequest, context: CallContext) -> Answered {
        // One generation, taken once: the request is unwrapped, routed and recorded on it.
        let live = self.live();
        // A `tool_call` is the call it stands for, from here on: routed, decided,
        // approved, counted and recorded as that tool's. One that stands for none goes
        // on as itself, to be answered why.
        let request = match request {
            MountRequest::CallTool { name, arguments }
                if name == crate::disclosure::TOOL_CALL
                    && live.as_ref().and_then(|g| g.lookup(&caller.agent, &name)).flatten().is_some_and(|e| e.source == Source::Seam) =>
            {
                match crate::disclosure::unwrap_call(&arguments) {
                    Ok((name, arguments)) => MountRequest::CallTool { name, arguments },
                    Err(_) => MountRequest::CallTool { name, arguments },
                }
            }
            request => request,
        };
        let Some(trail) = self.audit() else {
            let (answer, seen) = self.relay_seen(live, caller, request, context).await;
            self.decided(seen.decision);
            return answer;
        };
        let mut pending = Pending {
            deployment: self,
            trail,
            caller,
            method: request.method(),
            target: request.target().to_owned(),
            arguments: request.arguments().clone(),
            generation: live.as_ref().map_or(0, |g| g.number),
            started: std::time::Instant::now(),
            recorded: false,
        };
        let (answer, seen) = self.relay_seen(live, caller, request, context).await;
        let result = match (&answer, seen.code) {
            (_, Some(code)) => code.code,
            // A failure seam made past the hooks (a mount's `MCP_CALL_FAILED`) by its code.
            (Ok(Answer::Tool(output)), None) if output.is_error => output.code.map_or("tool_error", |code| code.code),
            (Ok(_), None) => "ok",
            (Err(_), None) => "error",
        };
        pending.record(seen.mount.as_deref(), seen.decision, result, seen.generation);
        answer
    }

    /// `relay` on generation `live`, and what became of the request, as the audit trail
    /// records it.
    async fn relay_seen(
        &self,
        live: Option<Arc<Generation>>,
        caller: &Caller,
        mut request: MountRequest,
        context: CallContext,
    ) -> (Answered, Seen) {
        use crate::audit::Decision;
        let started = std::time::Instant::now();
        let Some(generation) = live else {
            let none = RequestError::Unavailable("no generation is live".to_owned());
            let seen = Seen { generation: 0, mount: None, decision: Decision::Refused, code: Some(crate::codes::TOOL_UNAVAILABLE) };
            return (unanswerable(&request, crate::codes::TOOL_UNAVAILABLE, none), seen);
        };
        let route = match self.route(&generation, caller, &mut request) {
            Ok(route) => route,
            Err((code, error)) => {
                // A call of a tool a pin holds back has no route either: the trail says which.
                let held = matches!(&request, MountRequest::CallTool { name, .. } if generation.mounts.iter().any(|(id, slot)| generation.sees(&caller.agent, id) && slot.running.holds_tool(name)));
                let decision = if held { Decision::Held } else { Decision::Denied };
                let seen = Seen { generation: generation.number, mount: None, decision, code: Some(code) };
                return (unanswerable(&request, code, error), seen);
            }
        };
        let is_call = matches!(request, MountRequest::CallTool { .. });
        // A call counts on its generation for as long as it runs, however it ends.
        let counted = is_call.then(|| crate::runtime::CountedIn::new(&generation.in_flight));
        let mut passing = Passing {
            caller,
            generation: &generation,
            source: &route.source,
            request: &mut request,
            client: &context.client,
            entry: route.entry.as_ref(),
            holds: Vec::new(),
            approved: false,
        };
        let (passed, refusal) = self.chain.before(&mut passing).await;
        // Held until the answer has been back through the hooks.
        let holds = std::mem::take(&mut passing.holds);
        let approved = passing.approved;
        let mount = match &route.source {
            Source::Mount(id) => Some(id.clone()),
            Source::Service(_) | Source::Seam => None,
        };
        let answer = match refusal.as_ref().map(|r| r.code) {
            None if approved => Some("yes"),
            Some(code) if code == crate::codes::APPROVAL_DECLINED => Some("no"),
            Some(code) if code == crate::codes::APPROVAL_TIMEOUT => Some("timeout"),
            Some(code) if code == crate::codes::APPROVAL_UNAVAILABLE => Some("unavailable"),
            _ => None,
        };
        if let Some(answer) = answer {
            self.approval_answered(answer);
        }
        let seen = match &refusal {
            None => Seen {
                generation: generation.number,
                mount,
                decision: if approved { Decision::Approved } else { Decision::Served },
                code: None,
            },
            Some(refusal) => {
                let decision = match refusal.code {
                    code if code == crate::codes::QUOTA_EXCEEDED => Decision::OverQuota,
                    code if [crate::codes::APPROVAL_DECLINED, crate::codes::APPROVAL_TIMEOUT, crate::codes::APPROVAL_UNAVAILABLE]
                        .contains(&code) =>
                    {
                        Decision::Declined
                    }
                    _ => Decision::Refused,
                };
                Seen { generation: generation.number, mount, decision, code: Some(refusal.code) }
            }
        };
        let sent = std::time::Instant::now();
        let (mut answer, served_in) = match refusal {
            Some(refusal) => (refusal.answer(&request), None),
            None => {
                let answer = generation.dispatch(&caller.agent, &route, request.clone(), context).await;
                (answer, Some(sent.elapsed()))
            }
        };
        let entry = route.entry.as_ref();
        let done = Passed {
            caller,
            generation: &generation,
            source: &route.source,
            request: &request,
            max_output_chars: entry.and_then(|entry| entry.max_output_chars),
            may_write: entry.is_some_and(|entry| !entry.spec.is_read_only()),
            took: started.elapsed(),
            served_in,
            ruled_as: entry.and_then(|entry| entry.spec.ruled_as.clone()),
            task_result: false,
        };
        self.chain.after(passed, &done, &mut answer);
        drop(holds);
        if let Some((id, held)) = &route.task {
            self.task_answered(&generation, caller, id, held, &mut answer, started);
        }
        drop(counted);
        (answer, seen)
    }

    /// One tool call (`relay`), its result as a tool's: for a caller that is no MCP client (`seam call`).
    pub async fn call(&self, caller: &Caller, tool: &str, arguments: Map<String, Json>, context: CallContext) -> ToolOutput {
        let request = MountRequest::CallTool { name: tool.to_owned(), arguments };
        crate::chain::output_of(self.relay(caller, request, context).await)
    }

    /// Where `request` of `caller` goes in `generation`. A request about a task goes by
    /// the id seam minted for it, to the mount whose server made it, under the server's
    /// own id: another agent's task, one forgotten, or one whose mount the agent no
    /// longer sees is unknown.
    fn route(
        &self,
        generation: &Generation,
        caller: &Caller,
        request: &mut MountRequest,
    ) -> Result<Route, (crate::codes::Code, RequestError)> {
        let agent = caller.agent.as_str();
        let unknown = |message: String| (crate::codes::TOOL_UNKNOWN, RequestError::Unknown(message));
        let mount = |id: String| Route { source: Source::Mount(id), entry: None, task: None };
        if !generation.resolved.agents.contains_key(agent) {
            let message = format!("the composition has no agent `{}`", echoed(agent));
            return Err((crate::codes::AGENT_UNKNOWN, RequestError::Unknown(message)));
        }
        // Routes (each mount's offers under the agent's rules) are made only for a URI to route.
        let by_uri = |uri: &str, templates_first: bool| {
            let routes = generation.routes(agent)?;
            let templated = if templates_first { routes.template(uri) } else { None };
            templated.or_else(|| routes.resource(uri, &caller.state.links)).map(str::to_owned)
        };
        match request {
            MountRequest::CallTool { name, .. } => {
                let entry = generation.lookup(agent, name).flatten();
                let entry = entry.ok_or_else(|| unknown(format!("agent `{agent}` has no tool `{}`", echoed(name))))?;
                Ok(Route { source: entry.source.clone(), entry: Some(entry), task: None })
            }
            MountRequest::GetPrompt { name, .. } => {
                let slot = generation.prompt_mount(agent, name);
                let found = slot.map(|slot| mount(slot.id.clone()));
                found.ok_or_else(|| unknown(format!("no prompt `{}` is listed for agent `{agent}`", echoed(name))))
            }
            MountRequest::ReadResource { uri } => {
                let found = by_uri(uri, false).map(mount);
                found.ok_or_else(|| unknown(format!("no mount that agent `{agent}` sees serves resource `{}`", echoed(uri))))
            }
            MountRequest::Complete { params } => {
                let reference = params.get("ref");
                let field = |key: &str| reference.and_then(|r| r.get(key)).and_then(Json::as_str);
                let found = match field("type") {
                    Some("ref/prompt") => field("name").and_then(|name| generation.prompt_mount(agent, name)).map(|slot| slot.id.clone()),
                    Some("ref/resource") => field("uri").and_then(|uri| by_uri(uri, true)),
                    _ => None,
                };
                found.map(mount).ok_or_else(|| unknown(format!("no mount that agent `{agent}` sees serves the reference to complete")))
            }
            MountRequest::Task { params, .. } => {
                let id = params.get("taskId").and_then(Json::as_str).unwrap_or_default().to_owned();
                let no_task = || unknown(format!("agent `{agent}` has no task `{}`", echoed(&id)));
                let held = caller.state.tasks.find(&id).ok_or_else(no_task)?;
                if !generation.sees(agent, &held.mount) {
                    return Err(no_task());
                }
                let running = &generation.mounts[&held.mount].running;
                let made_here = held.running.upgrade().is_some_and(|made| Arc::ptr_eq(&made, running))
                    && crate::runtime::connection_of(running.as_ref()) == held.connection;
                if !made_here {
                    let (mount, id) = (&held.mount, echoed(&id));
                    let gone = format!("task `{id}` ended with its server's connection: mount `{mount}` restarted since");
                    return Err(unknown(gone));
                }
                params.insert("taskId".into(), Json::from(held.upstream.clone()));
                Ok(Route { source: Source::Mount(held.mount.clone()), entry: None, task: Some((id, held)) })
            }
        }
    }

    /// A server's answer about a task, given under the id seam minted; a result it
    /// carries is finished by the call stage as the call's own would have been (once:
    /// the writes it may have made are told once).
    fn task_answered(
        &self,
        generation: &Generation,
        caller: &Caller,
        id: &str,
        held: &crate::tasks::Held,
        answer: &mut Answered,
        started: std::time::Instant,
    ) {
        let Ok(Answer::Result(Json::Object(fields))) = answer else { return };
        if fields.contains_key("taskId") {
            fields.insert("taskId".into(), Json::from(id.to_owned()));
        }
        if let Some(result) = fields.get_mut("result") {
            let call = MountRequest::CallTool { name: held.finish.tool.clone(), arguments: held.finish.arguments.clone() };
            let done = Passed {
                caller,
                generation,
                source: &Source::Mount(held.mount.clone()),
                request: &call,
                max_output_chars: held.finish.max_output_chars,
                may_write: held.finish.may_write,
                took: started.elapsed(),
                // Counted as the `tasks/get` that brought it.
                served_in: None,
                ruled_as: None,
                task_result: true,
            };
            let mut finished = Ok(Answer::Tool(ToolOutput::from_json(std::mem::take(result))));
            self.chain.after(self.chain.len(), &done, &mut finished);
            if let Ok(Answer::Tool(output)) = finished {
                *result = output.into_json();
            }
        }
        caller.state.tasks.answered(id, fields);
    }
}

impl Generation {
    /// A call of seam's own `tool_search`, or of a `tool_call` that stands for no call.
    fn seam_tool(&self, agent: &str, name: &str, arguments: &Map<String, Json>) -> ToolOutput {
        let invalid = |why: String| ToolOutput::error(crate::codes::TOOL_SEARCH_INVALID, why);
        if name == crate::disclosure::TOOL_CALL {
            return invalid(crate::disclosure::unwrap_call(arguments).err().unwrap_or_default());
        }
        let Some((_, _, disclosed)) = self.catalog_disclosed(agent) else {
            return invalid(format!("agent `{agent}` has no tools to search"));
        };
        match crate::disclosure::search_request(arguments, disclosed.max_results) {
            Ok((query, limit)) => crate::disclosure::search_result(&disclosed.index.search(&query, limit)),
            Err(why) => invalid(why),
        }
    }

    /// One tool of the agent's catalog, found without building the catalog (but for
    /// seam's two tools, offered by what the whole catalog defers): the name's prefix
    /// picks the mount. Outer `None`: no such agent.
    pub fn lookup(&self, agent: &str, tool: &str) -> Option<Option<CatalogEntry>> {
        let a = self.resolved.agents.get(agent)?;
        if crate::disclosure::is_seam_tool(tool) && self.may_defer(agent) {
            // Offered only with tools deferred, which the whole catalog decides.
            return Some(self.catalog(agent)?.into_iter().find(|e| e.spec.name == tool));
        }
        let mut found: Vec<CatalogEntry> =
            self.fixed[agent].iter().filter(|f| f.entry.spec.name == tool).map(|f| f.entry.clone()).collect();
        for (id, slot) in &self.mounts {
            let Some(prefix) = self.visible_prefix(agent, id, slot) else { continue };
            let raw = matches!(slot.exposure, Exposure::Dynamic { raw: true, .. });
            if !raw && !tool.starts_with(prefix) {
                continue;
            }
            let tools = slot.running.tools_for(agent);
            let spec = tools.binary_search_by(|spec| spec.name.as_str().cmp(tool)).ok().map(|at| &tools[at]);
            found.extend(spec.and_then(|spec| self.entry(a, id, prefix, &slot.exposure, spec)));
        }
        // A name two things serve is served by neither (`catalog`).
        Some(if found.len() == 1 { found.pop() } else { None })
    }

    /// Sends a routed request to what serves it; a call under its tool's `timeout`, on
    /// the call's clock (the time its questions wait for the client is not counted).
    async fn dispatch(&self, agent: &str, route: &Route, request: MountRequest, context: CallContext) -> Answered {
        let CallContext { roots, cancel, client } = context;
        let limit = route.entry.as_ref().and_then(|entry| entry.timeout);
        let clock = client.clock().clone();
        let call_cancel = cancel.child_token();
        let sent = match (&route.source, request) {
            (Source::Mount(id), request) => self.mounts[id].running.relay_as(agent, &roots, request, client, call_cancel),
            (Source::Service(_), MountRequest::CallTool { name, arguments }) => {
                let f = self.fixed[agent].iter().find(|f| f.entry.spec.name == name).expect("routed in this generation");
                let tool: &'static dyn FixedTool = f.tool;
                let invalid = tool
                    .invalid_arguments()
                    .and_then(|code| crate::runtime::unknown_argument(&name, &f.entry.spec.definition, &arguments).map(|why| (code, why)));
                let call = ToolCall {
                    settings: f.settings.clone(),
                    section: f.section.clone(),
                    providers: f.providers.clone(),
                    arguments,
                    roots,
                    cancel: call_cancel,
                    client,
                };
                let output = match invalid {
                    Some((code, why)) => Box::pin(std::future::ready(ToolOutput::error(code, why))),
                    None => tool.call(call),
                };
                Box::pin(async move { Ok(Answer::Tool(output.await)) })
            }
            (Source::Seam, MountRequest::CallTool { name, arguments }) => {
                let output = self.seam_tool(agent, &name, &arguments);
                Box::pin(std::future::ready(Ok(Answer::Tool(output))))
            }
            (Source::Service(_) | Source::Seam, request) => unreachable!("a service serves only calls, not {request:?}"),
        };
        let Some(limit) = limit else { return sent.await };
        tokio::select! {
            answer = sent => answer,
            _ = clock.spent(limit.to_std()) => {
                cancel.cancel();
                let tool = route.entry.as_ref().map_or("", |entry| entry.spec.name.as_str());
                Ok(Answer::Tool(ToolOutput::error(crate::codes::TOOL_TIMEOUT, format!("`{tool}` did not finish within its timeout of {limit}"))))
            }
        }
    }
}

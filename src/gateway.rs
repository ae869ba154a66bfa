//! The MCP server side: one agent's catalog of a running deployment, served over
//! rmcp (stdio or Streamable HTTP). Lists, calls and requests always read the
//! live generation; each session is told `tools/list_changed`
//! (`prompts/list_changed`, `resources/list_changed`) when, and only when, its
//! agent's tools (prompts, resources and templates) differ from those it was
//! last shown. A live tool (the skill catalog) lists by the session's roots.
//! The visible mounts' prompts, resources, templates and completions are
//! relayed to the mount that serves them (`seam_engine::offers`).

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientRequest, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams, GetTaskResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceTemplate, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, Peer, ServerHandler};
use seam_engine::chain::{Answered, Caller};
use seam_engine::deploy::{CallContext, Deployment, View};
use seam_engine::offers::{MountRequest, Offered, RequestError, TaskMethod};
use seam_engine::runtime::Roots;
use seam_engine::runtime::ToolOutput;
use seam_engine::surface::PromptSpec;
use serde_json::{Map, Value as Json};
use tokio_util::sync::CancellationToken;

mod notifier;
use notifier::{Listener, Shown, shown_prompts, shown_resources, skills_hash};
mod subscriptions;
use subscriptions::{Release, Subscription, Subscriptions};
mod eras;
use crate::waiting::{Asked, Parked, Waiting, WaitingCalls};
use eras::{Retry, Round};

/// How many resources one session may be subscribed to at once.
pub const MAX_SUBSCRIPTIONS: usize = 1024;

/// What the sessions of one front end (the HTTP app, or the stdio session) share. None of
/// it is a process global: two front ends in one process share nothing.
#[derive(Default)]
pub struct Clients {
    /// What clients hold, per agent: sessions, listen streams, subscriptions.
    pub tally: Arc<crate::tally::Tally>,
    /// The calls waiting for their 2026-07-28 clients' answers (MRTR), a table per agent,
    /// made at the agent's first waiting call (one whose request routed: an agent of the
    /// composition).
    waiting: std::sync::Mutex<std::collections::HashMap<String, Arc<WaitingCalls>>>,
}

impl Clients {
    /// Per agent, how many of its calls wait for their 2026-07-28 clients' answers now.
    pub fn waiting_now(&self) -> Vec<(String, usize)> {
        self.waiting().iter().map(|(agent, calls)| (agent.clone(), calls.waiting_now())).collect()
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Arc<WaitingCalls>>> {
        self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds agent `agent`'s call `waiting` for its client's retry (`WaitingCalls::hold`).
    fn hold_waiting(&self, agent: &str, waiting: Waiting, patience: std::time::Duration) -> Result<String, Box<Waiting>> {
        let calls = self.waiting().entry(agent.to_owned()).or_default().clone();
        calls.hold(waiting, patience)
    }

    /// Agent `agent`'s call waiting under `state` for this retry (`WaitingCalls::take`); a
    /// state another agent's call waits on is named so (`INPUT_STATE_WRONG_AGENT`), and
    /// that call keeps waiting.
    fn take_waiting(
        &self,
        agent: &str,
        state: &str,
        asked: &Asked,
        arguments: &Map<String, Json>,
        check: impl FnOnce(&Parked) -> Result<(), String>,
    ) -> Result<Waiting, (seam_engine::codes::Code, String)> {
        let mine = self.waiting().get(agent).cloned();
        let taken = mine.map_or_else(|| Err(crate::waiting::unknown_state()), |calls| calls.take(state, asked, arguments, check));
        match taken {
            Err((code, _)) if code == seam_engine::codes::INPUT_STATE_UNKNOWN && self.waits_elsewhere(agent, state) => {
                Err((seam_engine::codes::INPUT_STATE_WRONG_AGENT, format!("this requestState is not agent `{agent}`'s")))
            }
            taken => taken,
        }
    }

    /// Whether another agent than `agent` has a call waiting, or that waited, under `state`.
    fn waits_elsewhere(&self, agent: &str, state: &str) -> bool {
        self.waiting().iter().any(|(other, calls)| other != agent && calls.holds(state))
    }
}

/// How often a session's notifier checks whether its session has ended.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone)]
pub struct Gateway {
    pub deployment: Arc<Deployment>,
    pub agent: String,
    /// This session's client roots, asked once and again after `roots/list_changed`.
    roots: Arc<tokio::sync::Mutex<Option<Vec<PathBuf>>>>,
    /// Rung when the roots change, so that the session's view is checked again.
    roots_changed: Arc<tokio::sync::Notify>,
    /// What this session was last sent (`tools/list`, `prompts/list`) or told
    /// had changed: the notifier compares against it, so that a change between
    /// the client's listing and the notifier's first look is still announced.
    shown: Arc<std::sync::Mutex<Shown>>,
    /// What the front end's sessions share: this session's or stream's subscriptions and
    /// listen streams are counted there, its 2026-07-28 calls wait there.
    clients: Arc<Clients>,
    /// One permit per call of this session that may run at once
    /// ([`MAX_CALLS_IN_FLIGHT`]); a call holds one until it is answered.
    room: Arc<tokio::sync::Semaphore>,
    /// Set when seam stops: the calls running finish, no other starts ([`Gateway::calls_finished`]).
    stopping: Arc<std::sync::atomic::AtomicBool>,
    /// This session among all of this process's: a server's question during a call is for one session.
    session: u64,
    /// Set by the session's first `notifications/initialized`: a client that
    /// repeats it gets no second notifier (each lived as long as the session).
    initialized: Arc<std::sync::atomic::AtomicBool>,
    /// The least severe log level this session wants (`logging/setLevel`); all until it says.
    #[allow(deprecated)]
    log_level: Arc<std::sync::Mutex<Option<rmcp::model::LoggingLevel>>>,
    /// The URIs this session subscribed to, each with the id of the mount that serves it.
    subscribed: Arc<Subscriptions>,
    /// Gives the subscriptions back when the session's own handler goes (not the notifier's copy).
    _release: Option<Arc<Release>>,
}

/// Whether a request is of the 2026-07-28 revision (or later): stateless, no session.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// How long a client may take to answer `roots/list`; past it the call goes on without roots.
const ROOTS_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

impl Gateway {
    /// A gateway for one session (each session keeps its own roots) of a front end whose
    /// sessions share `clients`.
    pub fn new(deployment: Arc<Deployment>, agent: String, clients: Arc<Clients>) -> Gateway {
        let subscribed = Arc::new(Subscriptions::default());
        let session = deployment.next_session();
        let release = Release { deployment: deployment.clone(), subscribed: subscribed.clone(), session };
        Gateway {
            deployment,
            agent,
            roots: Arc::default(),
            roots_changed: Arc::default(),
            shown: Arc::default(),
            session,
            clients,
            room: Arc::new(tokio::sync::Semaphore::new(MAX_CALLS_IN_FLIGHT)),
            stopping: Arc::default(),
            initialized: Arc::default(),
            log_level: Arc::default(),
            subscribed,
            _release: Some(Arc::new(release)),
        }
    }

    /// Returns once none of this session's calls is running, and from now on refuses
    /// any other (as seam stopping): a stop lets the calls running finish. Holding
    /// what it returns keeps it so.
    pub async fn calls_finished(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        self.room.clone().acquire_many_owned(MAX_CALLS_IN_FLIGHT as u32).await.ok()
    }

    /// The client's roots as local folders, when it offers roots. Roots are
    /// deprecated by SEP-2577, but clients still send them and they are how a
    /// client says which project it works in; seam uses them while they exist.
    #[allow(deprecated)]
    async fn roots(&self, peer: &rmcp::Peer<RoleServer>) -> Vec<PathBuf> {
        let offers = peer.peer_info().is_some_and(|info| info.capabilities.roots.is_some());
        if !offers {
            return Vec::new();
        }
        let mut cached = self.roots.lock().await;
        if let Some(roots) = &*cached {
            return roots.clone();
        }
        // Boxed, as every large future a handler awaits: rmcp spawns each request's handler
        // as a task, and moves it whole, so its size is paid in copies on every request.
        let roots = match tokio::time::timeout(ROOTS_PATIENCE, Box::pin(peer.list_roots())).await {
            Ok(Ok(result)) => result
                .roots
                .iter()
                .filter_map(|r| url::Url::parse(&r.uri).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok()))
                .collect(),
            Ok(Err(e)) => {
                tracing::warn!(agent = %self.agent, "roots/list failed: {e}");
                Vec::new()
            }
            Err(_) => {
                tracing::warn!(agent = %self.agent, "the client did not answer roots/list within {ROOTS_PATIENCE:?}");
                Vec::new()
            }
        };
        *cached = Some(roots.clone());
        roots
    }

    /// The client of a request as a mount with a connection per client session keys it:
    /// this session, or a 2026-07-28 client's agent, token name and `clientInfo` (it has
    /// no session; each of its requests is served by a handler of its own).
    fn client_key(&self, context: &RequestContext<RoleServer>) -> seam_engine::runtime::ClientKey {
        if !is_modern(context) {
            return seam_engine::runtime::ClientKey::Session(self.session);
        }
        let client = context.client_info().map(|info| format!("{} {}", info.name, info.version)).unwrap_or_default();
        seam_engine::runtime::ClientKey::Stateless { agent: self.agent.clone(), token: self.caller(context).token, client }
    }

    /// Who sends this request: the session's agent, and the name of the token it presented
    /// (the HTTP front end puts it on the request, `seam_engine::chain::TokenName`).
    fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let token = parts.and_then(|parts| parts.extensions.get::<seam_engine::chain::TokenName>());
        self.deployment.caller(&self.agent, token.map(|token| token.0.clone()))
    }

    /// One request of this session's agent, relayed to what serves it (`Deployment::relay`);
    /// the session's roots are asked only if a tool needs them.
    fn relay(
        &self,
        caller: Caller,
        request: MountRequest,
        cancel: CancellationToken,
        peer: Peer<RoleServer>,
        client: seam_engine::runtime::Client,
    ) -> seam_engine::runtime::BoxFuture<'static, Answered> {
        let gateway = self.clone();
        let roots = Roots::new(move || {
            let (gateway, peer) = (gateway.clone(), peer.clone());
            Box::pin(async move { gateway.roots(&peer).await })
        });
        let deployment = self.deployment.clone();
        Box::pin(async move { deployment.relay(&caller, request, CallContext { roots, cancel, client }).await })
    }

    /// A request of a 2025-11-25 session: the questions its mounts ask go to the client on
    /// the request's own stream.
    async fn request(&self, request: MountRequest, context: &RequestContext<RoleServer>) -> Answered {
        let (client, asks) = self.client_of(context);
        let relayed = self.relay(self.caller(context), request, context.ct.clone(), context.peer.clone(), client);
        asks.serve(&context.peer, relayed).await
    }

    /// This request's share of the read budget: over HTTP the gate's, which it keeps until
    /// the answer's body is written (rmcp passes it on in the request's HTTP parts); over
    /// stdio one that goes with the handler, and the stdio backlog bounds the answers owed.
    fn read_hold(&self, context: &RequestContext<RoleServer>) -> seam_engine::reads::ReadHold {
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let gates = parts.and_then(|parts| parts.extensions.get::<seam_engine::reads::ReadHold>());
        gates.cloned().unwrap_or_else(|| self.deployment.read_hold())
    }

    /// The client of one request of this session as its mounts reach it, and the
    /// questions they will ask it, sent from the request's handler (`CallAsks::serve`).
    fn client_of(&self, context: &RequestContext<RoleServer>) -> (seam_engine::runtime::Client, crate::client_link::CallAsks) {
        let token = context.meta.get_progress_token();
        let patience = self.deployment.serve_limits().input_timeout;
        let key = self.client_key(context);
        let (link, asks) = crate::client_link::for_call(
            self.session,
            key,
            &self.agent,
            context.client_capabilities(),
            token,
            context.peer.clone(),
            patience,
            context.extensions.get::<crate::telemetry::ServerContext>().cloned(),
        );
        (seam_engine::runtime::Client::new(link), asks)
    }

    /// A request about a task the agent holds (rmcp has checked that both sides declared
    /// tasks); the client's `_meta` stays here, as for every request seam passes on.
    async fn task(
        &self,
        method: TaskMethod,
        params: &impl serde::Serialize,
        context: RequestContext<RoleServer>,
    ) -> Result<Json, McpError> {
        let Ok(Json::Object(mut params)) = serde_json::to_value(params) else {
            return Err(McpError::invalid_params(format!("{} has no JSON form", method.name()), None));
        };
        params.remove("_meta");
        let answered = Box::pin(self.request(MountRequest::Task { method, params }, &context)).await;
        seam_engine::chain::result_of(answered).map_err(|e| seam_wire::answer(e, None))
    }

    /// The skills this session is served over MCP's skills extension now (only the one at
    /// URI `only`, when given), read once as rmcp's type. An entry that is not a valid skill
    /// as rmcp reads the extension is left out (and logged), so that one odd file cannot
    /// fail the whole list.
    async fn served_skills(&self, peer: &Peer<RoleServer>, only: Option<&str>) -> Vec<rmcp::model::Skill> {
        let Some(live) = self.deployment.live() else { return Vec::new() };
        let roots = self.roots_for(&live, peer).await;
        let entries = live.skills(&self.agent, &roots, only).await;
        entries
            .into_iter()
            .filter_map(|entry| match serde_json::from_value::<rmcp::model::Skill>(entry) {
                Ok(skill) => match skill.validate() {
                    Ok(()) => Some(skill),
                    Err(e) => {
                        tracing::debug!(uri = %skill.uri, "not served over MCP's skills extension: {e}");
                        None
                    }
                },
                Err(e) => {
                    tracing::debug!("a skill entry that does not read as MCP's: {e}");
                    None
                }
            })
            .collect()
    }

    /// What this session is shown now.
    async fn view(&self, peer: &rmcp::Peer<RoleServer>) -> View {
        let Some(live) = self.deployment.live() else { return View::default() };
        let roots = self.roots_for(&live, peer).await;
        live.view(&self.agent, &roots).await.unwrap_or_default()
    }

    /// The session's roots for what `live` serves it: asked only when a live tool lists by them.
    async fn roots_for(&self, live: &seam_engine::deploy::Generation, peer: &rmcp::Peer<RoleServer>) -> Vec<PathBuf> {
        if live.lists_by_roots(&self.agent) { self.roots(peer).await } else { Vec::new() }
    }
}

/// The bytes of a `resources/read` result's contents: its texts and blobs.
fn contents_bytes(result: &Json) -> u64 {
    let contents = result.get("contents").and_then(Json::as_array).map(Vec::as_slice).unwrap_or_default();
    let field = |c: &Json, key: &str| c.get(key).and_then(Json::as_str).map_or(0, str::len);
    contents.iter().map(|c| (field(c, "text") + field(c, "blob")) as u64).sum()
}

fn prompt(spec: &PromptSpec) -> Prompt {
    Prompt::new(&*spec.name, Some(&*spec.description), None)
}

/// A tool, prompt, resource or template definition as rmcp's type, or `None`
/// (logged) when its JSON is not one: it is not listed.
fn typed<T: serde::de::DeserializeOwned>(name: &str, definition: &Map<String, Json>) -> Option<T> {
    match serde_json::from_value(Json::Object(definition.clone())) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(item = %name, "not listed, its definition does not read as MCP: {e}");
            None
        }
    }
}

fn offered<T: serde::de::DeserializeOwned>(item: &Offered) -> Option<T> {
    typed(&item.key, &item.definition)
}

/// An answer, read as the result rmcp gives the client. A result is complete
/// unless it says otherwise: a 2026-07-28 client is told so (`resultType`),
/// and rmcp takes the word out for an older one.
/// `what` names the answer in an error only, so a call pays for no text.
fn result_of<T: serde::de::DeserializeOwned>(mut json: Json, what: impl FnOnce() -> String) -> Result<T, McpError> {
    if let Json::Object(result) = &mut json {
        result.entry("resultType").or_insert_with(|| Json::from(rmcp::model::ResultType::COMPLETE.as_str()));
    }
    serde_json::from_value(json).map_err(|e| McpError::internal_error(format!("the answer for {} is not an MCP result: {e}", what()), None))
}

/// A tool's output as rmcp's result.
fn tool_result(mut output: ToolOutput, tool: &str) -> Result<CallToolResult, McpError> {
    if let Some(relayed) = output.relayed_error.take() {
        return Err(seam_wire::answer(*relayed, None));
    }
    // A mount's result carried unread is given back as it came (`Payload`).
    if let Some(result) = output.payload.take().and_then(|payload| payload.take::<CallToolResult>()) {
        return Ok(result);
    }
    result_of(output.into_json(), || format!("`{tool}`"))
}

impl ServerHandler for Gateway {
    /// Every capability seam can serve is declared, whatever the agent sees
    /// now: a reload may add mounts to a session that is already open.
    /// (Logging is deprecated by SEP-2577 but still the 2025-11-25 clients' way.)
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_logging()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut capabilities = capabilities;
        let live = self.deployment.live();
        // Extensions (MCP Apps' `io.modelcontextprotocol/ui`) as the agent's mounts declare them now.
        let extensions = live.as_ref().and_then(|live| live.routes(&self.agent)).map(|routes| routes.extensions()).unwrap_or_default();
        let mut extensions: std::collections::BTreeMap<String, rmcp::model::JsonObject> =
            extensions.into_iter().filter_map(|(name, settings)| Some((name, settings.as_object()?.clone()))).collect();
        // seam's own skills, over MCP's skills extension, when the agent is served them.
        if live.as_ref().is_some_and(|live| live.serves_skills(&self.agent)) {
            let settings = serde_json::json!({ "directoryRead": true });
            extensions.insert(rmcp::model::SKILLS_EXTENSION_ID.to_owned(), settings.as_object().cloned().unwrap_or_default());
        }
        if !extensions.is_empty() {
            capabilities.extensions = Some(extensions);
        }
        let name = format!("seam ({})", self.agent);
        let config = ServerConfig::new(capabilities).with_server_info(Implementation::new(name, env!("CARGO_PKG_VERSION")));
        match live.and_then(|live| live.instructions(&self.agent)) {
            Some(instructions) => config.with_instructions(instructions),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.view(&context.peer).await.tools;
        let listed = tools.iter().filter_map(|spec| typed::<Tool>(&spec.name, &spec.definition)).collect();
        self.shown.lock().expect("shown lock").tools = Some(tools);
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let view = self.view(&context.peer).await;
        let listed = view.prompts.iter().map(prompt).chain(view.offered.prompts.iter().filter_map(offered)).collect();
        self.shown.lock().expect("shown lock").prompts = Some(shown_prompts(&view));
        Ok(ListPromptsResult::with_all_items(listed))
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let view = self.view(&context.peer).await;
        let listed: Vec<Resource> = view.offered.resources.iter().filter_map(offered).collect();
        self.shown.lock().expect("shown lock").resources = Some(shown_resources(&view));
        Ok(ListResourcesResult::with_all_items(listed))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let view = self.view(&context.peer).await;
        let listed: Vec<ResourceTemplate> = view.offered.templates.iter().filter_map(offered).collect();
        self.shown.lock().expect("shown lock").resources = Some(shown_resources(&view));
        Ok(ListResourceTemplatesResult::with_all_items(listed))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let retry = Retry::of(&request.request_state, &request.input_responses);
        let uri = request.uri;
        if let Some(refused) = crate::refusal::uri_too_long(&uri) {
            return Err(refused);
        }
        // The answer's bytes are taken from the read budget, and given back once it is sent.
        let hold = self.read_hold(&context);
        // A file of one of seam's own skills, before any mount's resource.
        if let Some(live) = self.deployment.live().filter(|live| live.serves_skills(&self.agent)) {
            let roots = self.roots_for(&live, &context.peer).await;
            if let Some(read) = live.read_skill(&self.agent, &roots, &uri, false, &hold).await {
                let json = read.map_err(|why| McpError::invalid_params(why.to_string(), None))?;
                return Ok(ReadResourceResponse::Complete(result_of::<ReadResourceResult>(json, || format!("resource `{uri}`"))?));
            }
        }
        let answered = match Box::pin(self.relay_in_era(MountRequest::ReadResource { uri: uri.clone() }, retry, &context)).await? {
            Round::Asked(questions) => return Ok(ReadResourceResponse::InputRequired(questions)),
            Round::Done(answered) => answered,
        };
        let json = match seam_engine::chain::result_of(answered) {
            Ok(json) => json,
            // A skill's file no one serves, for an agent served skills: the skills extension answers that with invalid params.
            Err(RequestError::Unknown(message)) if self.deployment.live().is_some_and(|live| live.names_skill(&self.agent, &uri)) => {
                return Err(McpError::invalid_params(message, None));
            }
            Err(e) => return Err(seam_wire::answer(e, Some(&uri))),
        };
        // A mount's answer is only sized once it has come: it waits here, already read, for its turn to be sent.
        hold.take(contents_bytes(&json)).await;
        Ok(ReadResourceResponse::Complete(result_of::<ReadResourceResult>(json, || format!("resource `{uri}`"))?))
    }

    /// seam's own skills the agent is served, over MCP's skills extension (SEP-2640): one
    /// page, in name order, each with its frontmatter and the digests of its files.
    async fn list_skills(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, McpError> {
        // Marked as listing before the list is made: an edit that the notifier sees while it is
        // made is then announced (compared with the mark) rather than lost.
        self.shown.lock().expect("shown lock").skills.get_or_insert([0; 32]);
        let skills = self.served_skills(&context.peer, None).await;
        self.shown.lock().expect("shown lock").skills = Some(skills_hash(&skills));
        Ok(rmcp::model::ListSkillsResult::with_all_items(skills))
    }

    /// A folder of one of seam's own skills: its direct children (`skill://<name>` is the skill's folder).
    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, McpError> {
        let uri = request.uri;
        let read = match self.deployment.live() {
            Some(live) => {
                let roots = self.roots_for(&live, &context.peer).await;
                live.read_skill(&self.agent, &roots, &uri, true, &self.read_hold(&context)).await
            }
            None => None,
        };
        let Some(read) = read else {
            return Err(McpError::invalid_params(format!("`{uri}` is no folder of a skill agent `{}` is served", self.agent), None));
        };
        let json = read.map_err(|why| McpError::invalid_params(why.to_string(), None))?;
        result_of(json, || format!("folder `{uri}`"))
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, McpError> {
        // A session that gets skills one by one is told when they change, as one that lists them.
        self.shown.lock().expect("shown lock").skills.get_or_insert([0; 32]);
        let skills = self.served_skills(&context.peer, Some(&request.uri)).await;
        let Some(skill) = skills.into_iter().find(|s| s.uri == request.uri) else {
            return Err(McpError::invalid_params(format!("agent `{}` is served no skill `{}`", self.agent, request.uri), None));
        };
        Ok(rmcp::model::GetSkillResult::new(skill))
    }

    /// The session's own level filters what it is sent; each mount its agent sees is asked
    /// for at least as much. 2026-07-28 has no sessions and no such method (a request
    /// carries its own level), so a client of that revision is told so.
    #[allow(deprecated)]
    async fn set_level(&self, request: rmcp::model::SetLevelRequestParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        if is_modern(&context) {
            return Err(McpError::method_not_found::<rmcp::model::SetLevelRequestMethod>());
        }
        *self.log_level.lock().expect("level lock") = Some(request.level);
        let level = seam_wire::level_name(request.level);
        for mount in self.deployment.live().map(|live| live.seen_mounts(&self.agent)).unwrap_or_default() {
            if let Some(upstream) = mount.upstream() {
                upstream.raise_log_level(&level);
            }
        }
        Ok(())
    }

    /// A session subscribes to a URI once, however often it asks; the deployment counts
    /// sessions. A session holds at most `MAX_SUBSCRIPTIONS` (a template matches without end).
    async fn subscribe(&self, request: rmcp::model::SubscribeRequestParams, _: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.subscribe_resource(request.uri).await
    }

    async fn unsubscribe(&self, request: rmcp::model::UnsubscribeRequestParams, _: RequestContext<RoleServer>) -> Result<(), McpError> {
        let removed = self.subscribed.lock().remove(&request.uri);
        // One still being asked is given back by its subscribe.
        if let Some(Subscription { mount, counted: Some(counted), .. }) = removed {
            self.deployment.unsubscribe_resource(&mount, &counted, &request.uri).await;
        }
        Ok(())
    }

    async fn complete(&self, request: CompleteRequestParams, context: RequestContext<RoleServer>) -> Result<CompleteResult, McpError> {
        let Ok(Json::Object(params)) = serde_json::to_value(&request) else {
            return Err(McpError::invalid_params("completion/complete has no JSON form", None));
        };
        match seam_engine::chain::result_of(Box::pin(self.request(MountRequest::Complete { params }, &context)).await) {
            Ok(json) => result_of(json, || "completion/complete".to_owned()),
            // Nothing to complete from: no values, as a server without suggestions answers.
            Err(RequestError::Unknown(_)) => Ok(CompleteResult::default()),
            Err(e) => Err(seam_wire::answer(e, None)),
        }
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let Some(live) = self.deployment.live() else {
            return Err(McpError::internal_error("no generation is live", None));
        };
        let retry = Retry::of(&request.request_state, &request.input_responses);
        let arguments = request.arguments.unwrap_or_default();
        if live.is_mount_prompt(&self.agent, &request.name) {
            let name = request.name;
            let asked = MountRequest::GetPrompt { name: name.clone(), arguments };
            let answered = match Box::pin(self.relay_in_era(asked, retry, &context)).await? {
                Round::Asked(questions) => return Ok(GetPromptResponse::InputRequired(questions)),
                Round::Done(answered) => answered,
            };
            let json = seam_engine::chain::result_of(answered).map_err(|e| seam_wire::answer(e, None))?;
            return Ok(GetPromptResponse::Complete(result_of::<GetPromptResult>(json, || format!("prompt `{name}`"))?));
        }
        let roots = self.roots_for(&live, &context.peer).await;
        match live.get_prompt(&self.agent, &request.name, arguments, &roots).await {
            Ok(json) => {
                let result: GetPromptResult = serde_json::from_value(json)
                    .map_err(|e| McpError::internal_error(format!("prompt `{}` is not an MCP prompt result: {e}", request.name), None))?;
                Ok(GetPromptResponse::Complete(result))
            }
            Err(e) => Err(McpError::invalid_params(format!("{}: {}", e.code, e.message), Some(serde_json::json!({ "code": e.code })))),
        }
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        // Taken before anything else: over stdio, calls start on one thread in the order they were read.
        let Ok(_permit) = self.room.clone().try_acquire_owned() else {
            let refused = if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                ToolOutput::error(seam_engine::codes::TOOL_UNAVAILABLE, format!("seam is stopping; `{}` was not started", request.name))
            } else {
                ToolOutput::error(
                    seam_engine::codes::TOOL_CALLS_EXCEEDED,
                    format!("{MAX_CALLS_IN_FLIGHT} calls are already running; `{}` was not started", request.name),
                )
            };
            return tool_result(refused, &request.name).map(CallToolResponse::Complete);
        };
        let retry = Retry::of(&request.request_state, &request.input_responses);
        let call = MountRequest::CallTool { name: request.name.to_string(), arguments: request.arguments.unwrap_or_default() };
        let mut output = match Box::pin(self.relay_in_era(call, retry, &context)).await? {
            Round::Asked(questions) => return Ok(CallToolResponse::InputRequired(questions)),
            Round::Done(answered) => seam_engine::chain::output_of(answered),
        };
        if let Some(task) = output.task.take() {
            return result_of(*task, || format!("`{}`", request.name)).map(CallToolResponse::Task);
        }
        tool_result(output, &request.name).map(CallToolResponse::Complete)
    }

    async fn get_task(&self, request: GetTaskParams, context: RequestContext<RoleServer>) -> Result<GetTaskResult, McpError> {
        let answer = self.task(TaskMethod::Get, &request, context).await?;
        result_of(answer, || "tasks/get".to_owned())
    }

    async fn update_task(&self, request: UpdateTaskParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.task(TaskMethod::Update, &request, context).await.map(drop)
    }

    async fn cancel_task(&self, request: CancelTaskParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.task(TaskMethod::Cancel, &request, context).await.map(drop)
    }

    async fn on_roots_list_changed(&self, _: NotificationContext<RoleServer>) {
        *self.roots.lock().await = None;
        self.roots_changed.notify_one();
    }

    /// A 2026-07-28 client's `subscriptions/listen` is taken as asked; rmcp keeps of it only
    /// what seam declares (list changes of tools, prompts and resources; resource updates).
    /// URIs past [`crate::refusal::MAX_URI_BYTES`] are not accepted (nor echoed in the acknowledgement).
    fn accepted_subscription_filter(&self, requested: &rmcp::model::SubscriptionFilter) -> Option<rmcp::model::SubscriptionFilter> {
        let mut accepted = requested.clone();
        if let Some(uris) = &mut accepted.resource_subscriptions {
            uris.retain(|uri| uri.len() <= crate::refusal::MAX_URI_BYTES);
        }
        Some(accepted)
    }

    /// A request rmcp could not read as one of its own (`crate::refusal::unreadable`).
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(crate::refusal::unreadable(&request))
    }

    /// One `subscriptions/listen` stream (a 2026-07-28 client has no session and no GET
    /// stream): each change of what the agent is shown, and each update of a resource it
    /// named, while the stream is open. Its resources are subscribed at their mounts as a
    /// session's are, and given back when the stream ends (this request's handler goes).
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        let _stream = self.hold(crate::tally::Holding::ListenStream)?;
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            self.subscribe_resource(uri.clone()).await?;
        }
        Box::pin(self.follow(Listener::Stream(&context))).await;
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.initialized.swap(true, std::sync::atomic::Ordering::SeqCst) {
            tracing::debug!(agent = %self.agent, "a repeated notifications/initialized is ignored");
            return;
        }
        // The notifier's copy does not hold the session's subscriptions: it may outlive the session a little.
        let this = Gateway { _release: None, ..self.clone() };
        tokio::spawn(async move { this.follow(Listener::Session(&context.peer)).await });
    }
}

/// Calls one session may have running at once (a stdio client is one
/// session). A call past it is answered `TOOL_CALLS_EXCEEDED` at once, so a
/// client that sends calls and never reads their answers cannot make seam
/// hold unbounded work, while its other messages (cancellations, pings,
/// answers to seam's requests) are still read.
pub const MAX_CALLS_IN_FLIGHT: usize = 1024;

/// The requests [`MAX_CALLS_IN_FLIGHT`] bounds, which the stdio backlog
/// (`seam_wire::stdio::Backlog`) owes apart from the others: reckoned in bytes
/// like them, 1,024 calls running would reach [`MAX_BYTES_OWED`], and the
/// backlog would stop reading before the call past the cap could be refused.
pub fn capped(request: &ClientRequest) -> bool {
    matches!(request, ClientRequest::CallToolRequest(_))
}

/// Bytes seam may owe one stdio client (answers waiting for it to read them,
/// and answers rmcp has yet to give to requests other than calls,
/// `seam_wire::stdio::Backlog`) before it
/// takes no more of its requests. One answer past it still goes out whole, so
/// a catalog of any size is listed; the bound only lowers how many requests a
/// client that does not read can have seam answer ahead of it. As large as
/// the longest line seam reads.
pub const MAX_BYTES_OWED: usize = seam_wire::stdio::MAX_LINE;

/// What seam may owe a stdio client before it reads none of its further
/// requests: as many lines waiting for it as calls may run, [`MAX_BYTES_OWED`],
/// or twice as many unanswered calls as may run (the gateway refuses those past
/// its cap at once: only calls read faster than it refuses them are owed past it).
pub fn stdio_backlog() -> seam_wire::stdio::Backlog {
    seam_wire::stdio::Backlog { lines: MAX_CALLS_IN_FLIGHT, bytes: MAX_BYTES_OWED, capped: 2 * MAX_CALLS_IN_FLIGHT }
}

#[cfg(test)]
mod tests;

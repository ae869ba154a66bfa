//! The upstream side of every request seam sends a mount's server: one round loop
//! ([`McpMount::relay`]) for calls, prompts, resources, completions, subscriptions and
//! tasks. It owns the rounds of input the server asks the client for (MRTR), one budget
//! (`call_timeout`, on the call's clock: the time a question waits for the client does
//! not count), the client's cancellation, abandonment at the server, and one error type
//! ([`Unanswered`]) whose codes come from the table.

use super::*;

/// Why a request relayed to the server got no answer from it.
pub(super) enum Unanswered {
    /// Not connected now (starting, reconnecting, or out of attempts): why.
    Disconnected(String),
    /// The client gave the request up.
    Cancelled,
    /// The request worked past `call_timeout`.
    TimedOut,
    /// It could not be sent, or the connection failed while it waited.
    Unreachable(ServiceError),
    /// The server answered with a JSON-RPC error.
    Refused(rmcp::ErrorData),
    /// The server asked for input the request could not give (boxed: the rest are small).
    Input(Box<InputError>),
}

impl Unanswered {
    /// How it failed, as a span's `error.type` says: the server's JSON-RPC code, or a word.
    fn error_type(&self) -> String {
        match self {
            Unanswered::Refused(e) => e.code.0.to_string(),
            Unanswered::Disconnected(_) => "disconnected".to_owned(),
            Unanswered::Cancelled => "cancelled".to_owned(),
            Unanswered::TimedOut => "timeout".to_owned(),
            Unanswered::Unreachable(_) => "unreachable".to_owned(),
            Unanswered::Input(_) => "input".to_owned(),
        }
    }
}

impl McpMount {
    /// The connection requests go on now, if it is up.
    pub(super) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.connection.lock().expect("connection lock").peer.clone()
    }

    /// The connection requests go on now; why there is none.
    pub(super) fn connected(&self) -> Result<Peer<RoleClient>, Unanswered> {
        self.peer().ok_or_else(|| Unanswered::Disconnected(self.status.get().detail.unwrap_or_else(|| "not connected".to_owned())))
    }

    /// `request` relayed to the server for `client`, in as many rounds as the server's
    /// questions take (a 2026-07-28 server asks by answering `input_required`; each round's
    /// questions go to the client, and the request is sent again with the answers). While
    /// it waits, it is entered under the id and progress token rmcp gave it, so that the
    /// server's questions and progress reach `client`; given up (cancelled, timed out), it
    /// is abandoned at the server too. `tasks`: it declares the tasks extension.
    pub(super) async fn relay(
        &self,
        peer: &Peer<RoleClient>,
        mut request: ClientRequest,
        client: &Client,
        cancel: &CancellationToken,
        tasks: bool,
    ) -> Result<ServerResult, Unanswered> {
        // A request about a task is not entered: its server asks through the task's
        // `inputRequests`, and a poll in flight must not make another session's call look
        // like one of several.
        let about_task = is_about_task(&request);
        // The request's span, when the front end traces: each round carries it (SEP-414).
        let span = client.link().and_then(|link| link.upstream_span(&self.id, request.method(), &target_of(&request)));
        let rounds = async {
            // A token the server refused is sent again at most once, exchanged anew.
            let mut sent_again = false;
            let mut round = 0;
            loop {
                let mut options = request_options(client, speaks_modern(peer), tasks);
                if let Some(span) = &span {
                    let (traceparent, tracestate) = span.trace_context();
                    let meta = options.meta.get_or_insert_with(rmcp::model::RequestMetaObject::new);
                    meta.set_traceparent(traceparent);
                    if let Some(tracestate) = tracestate {
                        meta.set_tracestate(tracestate);
                    }
                }
                let handle = match peer.send_cancellable_request(request.clone(), options).await {
                    Ok(handle) => handle,
                    Err(e) if self.send_again(&e, &mut sent_again) => continue,
                    Err(e) => return Err(self.unreachable(e)),
                };
                let _entered = (!about_task).then(|| self.calls.enter(handle.id.clone(), handle.progress_token.clone(), client.clone()));
                let mut abandoned = seam_wire::Abandoned(Some((peer.clone(), handle.id.clone())));
                // Boxed: rmcp's response future is large, and every request's state would be as large as it.
                let answered = Box::pin(handle.await_response()).await;
                abandoned.0 = None;
                let asked = match answered {
                    Ok(ServerResult::InputRequiredResult(asked)) => asked,
                    Ok(result) => return Ok(result),
                    Err(ServiceError::McpError(e)) => return Err(Unanswered::Refused(e)),
                    Err(e) if self.send_again(&e, &mut sent_again) => continue,
                    Err(e) => return Err(self.unreachable(e)),
                };
                if round == MAX_INPUT_ROUNDS {
                    return Err(Unanswered::Input(Box::new(InputError::Rounds)));
                }
                let responses = self.answer_input(&asked, client).await.map_err(|e| Unanswered::Input(Box::new(e)))?;
                request = with_answers(request, responses, asked.request_state);
                round += 1;
            }
        };
        let answered = tokio::select! {
            answered = rounds => answered,
            _ = client.clock().spent(self.common.call_timeout.to_std()) => Err(Unanswered::TimedOut),
            _ = cancel.cancelled() => Err(Unanswered::Cancelled),
        };
        if let Some(span) = &span {
            match &answered {
                Err(e) => span.failed(&e.error_type()),
                Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => span.failed("tool_error"),
                Ok(_) => {}
            }
        }
        answered
    }

    /// Whether a request the server refused for its token goes once more: a
    /// `client_credentials` mount's token refused before it was due (revoked) was
    /// exchanged anew when rmcp set out to refresh it, and the server, which refused the
    /// request, did nothing with it. Once per request, and the connection stays up.
    fn send_again(&self, e: &ServiceError, sent_again: &mut bool) -> bool {
        let again = !*sent_again && self.exchanges_credentials() && crate::failure::login_asked(e);
        *sent_again |= again;
        again
    }

    /// A request that could not reach the server: the connection is treated as closed when
    /// the transport failed (this wakes the supervisor only if it is serving now, so no
    /// stale signal can break a later connection), not when the server refused the
    /// request for want of scope, which other requests may have.
    fn unreachable(&self, e: ServiceError) -> Unanswered {
        let transport_failed = matches!(e, ServiceError::TransportClosed | ServiceError::TransportSend(_));
        if transport_failed && crate::failure::scope_needed(&e).is_none() {
            self.broken.notify_waiters();
        }
        Unanswered::Unreachable(e)
    }

    /// The mount's `auth.oauth` and its server's URL, if it has them.
    fn oauth(&self) -> Option<(&crate::OAuth, &str)> {
        match &self.transport {
            Transport::Http(config) => config.auth.as_ref().map(|auth| (&auth.oauth, config.url.as_str())),
            Transport::Stdio(_) => None,
        }
    }

    /// Whether a person logs in for this mount's tokens (`auth.oauth`, `authorization_code`).
    pub(super) fn logs_in(&self) -> bool {
        self.oauth().is_some_and(|(oauth, _)| oauth.grant == crate::Grant::AuthorizationCode)
    }

    /// The `seam login` a person runs for this connection's tokens.
    pub(super) fn login_command(&self) -> String {
        self.oauth().map(|(oauth, _)| crate::oauth::login_command(&self.id, self.agent(), oauth)).unwrap_or_default()
    }

    /// Whether the mount gets its tokens by `client_credentials`: one the server refused
    /// is exchanged again (`oauth::Renewing`), with no person.
    pub(super) fn exchanges_credentials(&self) -> bool {
        self.oauth().is_some_and(|(oauth, _)| oauth.grant == crate::Grant::ClientCredentials)
    }

    /// The scope a person must give, when `e` is the server asking for more than the
    /// login gave, in words a command can show.
    pub(super) fn step_up_asked(&self, e: &ServiceError) -> Option<String> {
        crate::failure::scope_needed(e).filter(|scope| self.logs_in() && printable_scope(scope))
    }

    /// The server asks for `scope` for `what`, which a person must give: the mount is
    /// degraded, with the login to run, until its entry in the state file holds a login
    /// granted the scope (`watch` sees it, or the supervisor, when the server asked to
    /// list). What the request is answered.
    pub(super) fn wait_for_scope(&self, scope: &str, what: &str) -> String {
        let run = format!("run `{} --scope \"{scope}\"`", self.login_command());
        let asked = self.oauth().map(|(oauth, url)| crate::oauth::scope_asked(&self.id, self.agent(), url, oauth, scope));
        self.step_up.send_replace(asked);
        let detail = format!("the server asks for more scope than the login gave, for {what}: {run}");
        self.status.set_coded(State::Degraded, Some(crate::codes::MCP_OAUTH_LOGIN_NEEDED.code), Some(detail));
        format!("MCP server `{}` asks for more scope for {what}: {run}", self.id)
    }

    /// What a request for `what` (`` `tool` ``, ``prompt `name` ``) that got no answer
    /// says: its code and message. A server's own error is the caller's to pass on.
    pub(super) fn unanswered(&self, e: &Unanswered, what: &str) -> (seam_engine::codes::Code, String) {
        let id = &self.id;
        match e {
            Unanswered::Disconnected(why) => (crate::codes::MCP_UNAVAILABLE, format!("MCP server `{id}` is unavailable: {why}")),
            Unanswered::Cancelled => (seam_engine::codes::TOOL_CANCELLED, format!("{what} was cancelled")),
            Unanswered::TimedOut => (
                seam_engine::codes::TOOL_TIMEOUT,
                format!("MCP server `{id}` did not answer {what} within call_timeout {}", self.common.call_timeout),
            ),
            // A step-up a person must give: they log in again with the scope the server named.
            Unanswered::Unreachable(e) if let Some(scope) = self.step_up_asked(e) => {
                (crate::codes::MCP_OAUTH_LOGIN_NEEDED, self.wait_for_scope(&scope, what))
            }
            // The server refused the tokens and they could not be refreshed: a person logs in again.
            Unanswered::Unreachable(e) if self.logs_in() && crate::failure::login_asked(e) => {
                let login = self.login_command();
                (crate::codes::MCP_OAUTH_LOGIN_NEEDED, format!("MCP server `{id}` asks for a login again for {what}: run `{login}`"))
            }
            Unanswered::Unreachable(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                (crate::codes::MCP_UNAVAILABLE, format!("MCP server `{id}` is unreachable during {what}: {}", InWords(e)))
            }
            Unanswered::Unreachable(e) => (crate::codes::MCP_CALL_FAILED, format!("{what}: {}", InWords(e))),
            Unanswered::Refused(e) => (crate::codes::MCP_CALL_FAILED, format!("{what}: {}", e.message)),
            Unanswered::Input(e) if matches!(**e, InputError::Rounds) => (crate::codes::MCP_INPUT_ROUNDS_EXCEEDED, format!("{what}: {e}")),
            Unanswered::Input(e) => (crate::codes::MCP_INPUT_REQUIRED, format!("{what}: {e}")),
        }
    }

    /// A request that got no answer, as the front end is given it: a server's own error as it is.
    pub(super) fn request_error(&self, e: Unanswered, what: &str) -> RequestError {
        match e {
            Unanswered::Refused(e) => seam_wire::relayed(e),
            e => {
                let (code, message) = self.unanswered(&e, what);
                RequestError::Unavailable(format!("{code}: {message}"))
            }
        }
    }

    /// A request for a prompt, a resource, a completion or a task, relayed to the server.
    pub(super) async fn request_inner(
        self: Arc<Self>,
        request: MountRequest,
        client: Client,
        cancel: CancellationToken,
    ) -> Result<Json, RequestError> {
        let imports = self.imports.lock().expect("imports lock").clone();
        let unknown =
            |what: String| RequestError::Unknown(format!("MCP server `{}` has no {}", self.id, seam_engine::runtime::echoed(&what)));
        let (what, request) = match request {
            // A call is answered with a tool's result (`call_inner`), not an MCP result JSON.
            MountRequest::CallTool { name, .. } => return Err(unknown(format!("request for tool `{name}`"))),
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
        let tasks = is_about_task(&request);
        let answered = match self.connected() {
            Ok(peer) => self.relay(&peer, request, &client, &cancel, tasks).await,
            Err(e) => Err(e),
        };
        let result = answered.map_err(|e| self.request_error(e, &what))?;
        serde_json::to_value(result).map_err(|e| RequestError::Unavailable(format!("{what}: {e}")))
    }

    pub(super) async fn call_inner(
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
        let what = format!("`{tool}`");
        let peer = match self.connected() {
            Ok(peer) => peer,
            Err(e) => return self.call_failure(e, &what),
        };
        // A task is asked for only for a client that can hold one, of a server that makes them.
        let tasks =
            client.link().is_some_and(|link| link.takes_tasks()) && peer.peer_info().is_some_and(|info| info.capabilities.supports_tasks());
        let arguments = match &imported.arguments {
            Some(rewrite) => rewritten_arguments(&self.id, &tool, rewrite, arguments),
            None => arguments,
        };
        let params = CallToolRequestParams::new(imported.raw.clone()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        let result = match self.relay(&peer, request, &client, &cancel, tasks).await {
            Ok(ServerResult::CallToolResult(result)) => result,
            Ok(ServerResult::EmptyResult(_)) => Default::default(),
            Ok(ServerResult::CreateTaskResult(task)) => return task_answer(task, &tool, tasks),
            // `InputRequired` is answered by the rounds (`relay`): a kind of answer newer than this build.
            Ok(_) => return ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("{what}: unexpected answer to tools/call")),
            Err(e) => return self.call_failure(e, &what),
        };
        match output_problem(&result, imported.output.as_deref()) {
            Some(problem) => ToolOutput::error(crate::codes::MCP_OUTPUT_INVALID, format!("{what}: {problem}")),
            None => carried(result),
        }
    }

    /// The client's answers to one round of a 2026-07-28 server's questions (`inputRequests`),
    /// asked as a legacy server's questions are: each only if the client declared it, counted
    /// in `/status`; `roots/list` from the workspace root unless the mount says `roots: client`.
    pub(super) async fn answer_input(
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
                let answer = self.calls.ask(client, kind, params, Some(key.clone())).await;
                answer.map(|answer| (key.clone(), answer)).map_err(|source| InputError::Unanswered { key, source })
            });
        }
        // Asked together: a client of 2026-07-28 gets a round's questions in one `input_required`.
        responses.extend(futures::future::try_join_all(asking).await?);
        Ok(responses)
    }

    /// A call that got no answer, as its result. Some of a server's errors the client acts
    /// on itself (it opens the URLs, or declares the capability, and calls again): it gets
    /// those as they are, and without a client (`seam call`) the result says what to open.
    pub(super) fn call_failure(&self, e: Unanswered, what: &str) -> ToolOutput {
        let Unanswered::Refused(e) = e else {
            let (code, message) = self.unanswered(&e, what);
            return ToolOutput::error(code, message);
        };
        match seam_wire::stdio::line_limit_of(&e) {
            // The answer was a line past the limit, which the transport discarded: it handed rmcp this error in its place.
            Some(limit) => ToolOutput::error(
                crate::codes::MCP_FRAME_TOO_LARGE,
                format!("{what}: the server's answer is longer than the line limit of {limit} bytes and was discarded"),
            ),
            None if e.code.0 == crate::asks::URL_ELICITATION_REQUIRED => {
                let elicitations = e.data.as_ref().and_then(|d| d.get("elicitations")).and_then(Json::as_array);
                let urls: Vec<&str> = elicitations.into_iter().flatten().filter_map(|el| el.get("url").and_then(Json::as_str)).collect();
                let open = if urls.is_empty() { String::new() } else { format!("; open {} and call again", urls.join(", ")) };
                ToolOutput {
                    relayed_error: Some(Box::new(seam_wire::relayed(e.clone()))),
                    ..ToolOutput::error(crate::codes::MCP_URL_ELICITATION_REQUIRED, format!("{what}: {}{open}", e.message))
                }
            }
            None if e.code == rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => ToolOutput {
                relayed_error: Some(Box::new(seam_wire::relayed(e.clone()))),
                ..ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("{what}: {}", e.message))
            },
            None => ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("{what}: {}", e.message)),
        }
    }
}

/// What a request to a server is about, as its span names it: a tool's or a prompt's
/// name (the server's own); nothing for the rest (a URI is no span name).
fn target_of(request: &ClientRequest) -> String {
    match request {
        ClientRequest::CallToolRequest(r) => r.params.name.to_string(),
        ClientRequest::GetPromptRequest(r) => r.params.name.to_string(),
        _ => String::new(),
    }
}

/// Whether `request` is about a task a server made (`tasks/get`, `update`, `cancel`).
fn is_about_task(request: &ClientRequest) -> bool {
    matches!(request, ClientRequest::GetTaskRequest(_) | ClientRequest::UpdateTaskRequest(_) | ClientRequest::CancelTaskRequest(_))
}

/// The question's params as JSON, the client's answer as rmcp's result type.
pub(super) async fn relayed<P: serde::Serialize, R: serde::de::DeserializeOwned>(
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

/// The options of a request sent for `client`. To a 2026-07-28 server (`modern`) each
/// request declares what the calling client can answer, of `declared()`: a server asks
/// nothing the client cannot answer, and refuses (-32021) what needs it. Roots stay:
/// seam answers them itself when the client cannot. With `tasks`, the request declares
/// the tasks extension (SEP-2663) in its own `_meta`, as for a call whose client
/// declared it, and for the requests about its task. Otherwise (a legacy server's
/// session declared `declared()` at `initialize`) no options.
#[allow(deprecated)]
pub(super) fn request_options(client: &Client, modern: bool, tasks: bool) -> rmcp::service::PeerRequestOptions {
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

/// `request` sent again with the client's answers to its server's questions and the
/// server's state (only a `tools/call`, `prompts/get` or `resources/read` is ever asked).
pub(super) fn with_answers(request: ClientRequest, responses: rmcp::model::InputResponses, state: Option<String>) -> ClientRequest {
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

/// A call answered with a task: the client holds it, by the id the deployment mints
/// for it, when the call declared tasks; otherwise the client could not hold it.
fn task_answer(task: rmcp::model::CreateTaskResult, tool: &str, tasks: bool) -> ToolOutput {
    if !tasks {
        return ToolOutput::error(
            crate::codes::MCP_TASK_REQUIRED,
            format!(
                "`{tool}` answered with a task the call did not ask for: seam asks for one only when both the calling client and the \
                 server declare the tasks extension"
            ),
        );
    }
    match serde_json::to_value(task) {
        Ok(task) => ToolOutput { task: Some(Box::new(task)), ..ToolOutput::default() },
        Err(e) => ToolOutput::error(crate::codes::MCP_CALL_FAILED, format!("`{tool}`: {e}")),
    }
}

/// Why a result does not keep the output schema its tool advertises, if it does not
/// (an error result need not).
fn output_problem(result: &rmcp::model::CallToolResult, schema: Option<&jsonschema::Validator>) -> Option<String> {
    let schema = schema.filter(|_| result.is_error != Some(true))?;
    match &result.structured_content {
        None => Some("it advertises an output schema but sent no structuredContent".to_owned()),
        Some(s) => schema.iter_errors(s).next().map(|e| format!("structuredContent does not match its output schema: {e}")),
    }
}

/// A server's result as the engine carries it to the front end, unread, as rmcp's type
/// (`seam_engine::runtime::Payload`). As the JSON it replaced: its `_meta` is the
/// server's own and stays here, it is complete, and it says whether it is an error.
fn carried(mut result: rmcp::model::CallToolResult) -> ToolOutput {
    result.meta = None;
    result.result_type = Some(rmcp::model::ResultType::COMPLETE);
    let is_error = result.is_error.unwrap_or(false);
    result.is_error = Some(is_error);
    ToolOutput::carrying(seam_engine::runtime::Payload::new(result, result_json, result_links), is_error)
}

fn result_json(result: &(dyn std::any::Any + Send + Sync)) -> Json {
    let result = result.downcast_ref::<rmcp::model::CallToolResult>();
    result.and_then(|result| serde_json::to_value(result).ok()).unwrap_or_default()
}

fn result_links(result: &(dyn std::any::Any + Send + Sync)) -> Vec<String> {
    let Some(result) = result.downcast_ref::<rmcp::model::CallToolResult>() else { return Vec::new() };
    result
        .content
        .iter()
        .filter_map(|block| match block {
            rmcp::model::ContentBlock::ResourceLink(link) => Some(link.uri.clone()),
            rmcp::model::ContentBlock::Resource(embedded) => match &embedded.resource {
                rmcp::model::ResourceContents::TextResourceContents { uri, .. }
                | rmcp::model::ResourceContents::BlobResourceContents { uri, .. } => Some(uri.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Whether a scope the server asks for can be shown in a command to run: OAuth scope
/// tokens, space-separated, of characters no shell reads as its own (a server's scope
/// could be `$(…)` otherwise).
fn printable_scope(scope: &str) -> bool {
    !scope.is_empty() && scope.len() <= 1024 && scope.chars().all(|c| c.is_ascii_alphanumeric() || " ._:/-".contains(c))
}

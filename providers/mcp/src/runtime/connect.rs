//! Transports and the handshake: a stdio child or a Streamable HTTP connection,
//! connected within `startup_timeout`, and the client handler that answers the server.

use super::*;

impl McpMount {
    /// Connects and completes the handshake within `startup_timeout`. A child whose
    /// handshake fails is ended here, and its exit proven, before the caller may start another.
    pub(super) async fn connect(&self, resync: mpsc::UnboundedSender<Changed>) -> Result<McpConnection, Failed> {
        let handler = Handler {
            resync,
            mount: self.id.clone(),
            origin: self.origin.clone(),
            events: self.cx.events.clone(),
            calls: self.calls.clone(),
            workspace: WorkspaceRoot { built: self.cx.workspace.clone(), live: self.cx.live_workspace.clone() },
            roots: self.common.roots,
            client_roots: self.client_roots.clone(),
        };
        // `auto` is given the time rmcp waits for an answer to `server/discover` on top.
        let auto = if self.common.protocol == crate::Protocol::Auto { AUTO_DISCOVER_PATIENCE } else { Duration::ZERO };
        let patience = self.common.startup_timeout.to_std() + auto;
        match &self.transport {
            Transport::Stdio(config) => self.connect_stdio(config, handler, patience).await,
            Transport::Http(config) => self.connect_http(config, handler, patience).await,
        }
    }

    /// Spawns the server and completes the handshake over its stdio within `patience`;
    /// the child's stderr is kept (its tail) for the errors that quote it.
    async fn connect_stdio(&self, config: &StdioServer, handler: Handler, patience: Duration) -> Result<McpConnection, Failed> {
        let stderr = Arc::new(Mutex::new(String::new()));
        let cwd = config.cwd.as_deref().map(std::path::Path::new);
        let mut child = self
            .cx
            .subprocess
            .spawn(&config.spawn, &config.env_passthrough, cwd)
            .map_err(|source| Failed::proven(ConnectError::Spawn { command: config.spawn.command.clone(), source }))?;
        self.connection.lock().expect("connection lock").pid = Some(child.pid);
        if let Some(pipe) = child.stderr.take() {
            tokio::spawn(keep_tail(pipe, stderr.clone(), self.id.clone()));
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
            None => ConnectError::StartupTimeout { startup: self.common.startup_timeout, stderr },
        };
        Err(Failed { error, proven })
    }

    /// Opens a Streamable HTTP connection with the mount's headers and token, and
    /// completes the handshake within `patience`.
    async fn connect_http(&self, config: &HttpServer, handler: Handler, patience: Duration) -> Result<McpConnection, Failed> {
        use rmcp::transport::streamable_http_client::{StreamableHttpClientTransport, StreamableHttpClientTransportConfig};
        let mut headers = HashMap::new();
        let env = |var: &str| std::env::var(var).map_err(|source| Failed::proven(ConnectError::EnvVar { var: var.to_owned(), source }));
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
        let client = reqwest::Client::builder().no_proxy().build().map_err(|source| Failed::proven(ConnectError::HttpClient { source }))?;
        // Getting a token counts in the mount's startup time, as the handshake does.
        let connected = async {
            match config.auth.as_ref().map(|auth| &auth.oauth) {
                None => Ok(self.handshake(handler, StreamableHttpClientTransport::with_client(client, transport_config)).await),
                Some(oauth) => {
                    let manager = crate::oauth::authorize(&self.id, self.agent(), &config.url, oauth).await?;
                    let client = rmcp::transport::auth::AuthClient::new(client, manager);
                    Ok(self.handshake(handler, StreamableHttpClientTransport::with_client(client, transport_config)).await)
                }
            }
        };
        match tokio::time::timeout(patience, connected).await {
            Ok(Ok(Ok(service))) => Ok(McpConnection { service, child: None, stderr: Arc::default() }),
            // The login's tokens refused at the handshake, past refreshing: the mount waits for another login.
            Ok(Ok(Err(e))) if self.logs_in() && crate::failure::login_asked(&e) => {
                let login = self.login_command();
                // As the attempt left it (a refresh in it may have rewritten it): a login since is new.
                let oauth = &config.auth.as_ref().expect("a mount a person logs in for has `auth`").oauth;
                let seen = Box::new(crate::oauth::seen(&self.id, self.agent(), &config.url, oauth));
                let source = crate::oauth::OAuthError::LoginRefused { login, seen };
                Err(Failed::proven(ConnectError::OAuth { url: config.url.clone(), source }))
            }
            Ok(Ok(Err(e))) => Err(Failed::proven(ConnectError::Connect { url: config.url.clone(), source: Box::new(e) })),
            Ok(Err(source)) => Err(Failed::proven(ConnectError::OAuth { url: config.url.clone(), source })),
            Err(_) => {
                Err(Failed::proven(ConnectError::StartupTimeout { startup: self.common.startup_timeout, stderr: StderrTail::default() }))
            }
        }
    }

    /// The lifecycle the mount's `protocol` names: `initialize` (legacy), `server/discover`
    /// (2026-07-28, no session; rmcp then makes each request self-contained), or
    /// `server/discover` and then `initialize` if the server answers discovery as a legacy
    /// server does (`auto`).
    pub(super) async fn handshake<T, E, A>(
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
    pub(super) async fn reap(&self, child: Option<Child>, stderr: &Mutex<String>) -> bool {
        let Some(mut child) = child else { return true };
        let status = child.terminate(EXIT_GRACE).await;
        self.connection.lock().expect("connection lock").pid = None;
        let tail = stderr.lock().expect("stderr lock").trim().to_owned();
        if !tail.is_empty() && !self.stop.is_cancelled() {
            tracing::warn!(mount = %self.id, "server exited ({status:?}); its stderr ended with: {tail}");
        }
        status.is_some()
    }
}

/// Turns `list_changed` notifications into re-sync requests for the supervisor.
pub(super) struct Handler {
    pub(super) resync: mpsc::UnboundedSender<Changed>,
    /// The mount's id, whose connection this is, and the deployment's events: log lines
    /// and resource updates go there.
    pub(super) mount: String,
    pub(super) origin: Origin,
    pub(super) events: MountEvents,
    /// The mount's calls in flight: whom the server's questions and progress are for.
    pub(super) calls: Arc<crate::asks::InFlight>,
    /// The composition's workspace root: the roots the server is given, unless `roots: client` finds the caller's.
    pub(super) workspace: WorkspaceRoot,
    pub(super) roots: crate::RootsFrom,
    /// The roots of the one client session the connection is for, if it is for one.
    pub(super) client_roots: Option<Vec<std::path::PathBuf>>,
}

/// The workspace root a mount gives its server: the one it was built with,
/// until a reload that keeps the mount moves it.
pub(super) struct WorkspaceRoot {
    pub(super) built: Option<std::path::PathBuf>,
    pub(super) live: tokio::sync::watch::Receiver<Option<std::path::PathBuf>>,
}

impl WorkspaceRoot {
    pub(super) fn root(&self) -> Option<std::path::PathBuf> {
        // Unchanged since the build: the generation that built this mount may not be live yet.
        if self.live.has_changed().unwrap_or(false) { self.live.borrow().clone() } else { self.built.clone() }
    }
}

/// What seam declares to a mount's server: sampling, elicitation (form and URL) and roots,
/// which it asks the calling client for. Not tasks: a server may answer a call with a task
/// only when the calling client holds one (`for_tasks`).
// Sampling and roots are deprecated by SEP-2577, and still what 2025-11-25 servers ask.
#[allow(deprecated)]
pub(super) fn declared() -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::builder().enable_roots().enable_sampling().build();
    capabilities.elicitation = Some(rmcp::model::ElicitationCapability::new().with_form(Default::default()).with_url(Default::default()));
    capabilities
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
    /// with `roots: client` the calling client's roots when they can be asked: those
    /// of the call the question is part of, else those of the one session the
    /// connection is for (`isolation: per-session`).
    async fn list_roots(
        &self,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        if self.roots == crate::RootsFrom::Client {
            let origin = context.extensions.get::<rmcp::service::InboundStreamOrigin>();
            let caller = self.calls.caller(origin).ok();
            if caller.is_some_and(|c| c.link().is_some_and(|link| link.declares(seam_engine::runtime::AskKind::Roots, &Json::Null))) {
                return relayed(self, seam_engine::runtime::AskKind::Roots, Json::Null, &context).await;
            }
            if let Some(roots) = &self.client_roots {
                return Ok(folders_as_roots(roots));
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
        let (mount, origin) = (self.mount.clone(), self.origin.clone());
        self.events.send(MountEvent::Log { mount, origin, level, logger: params.logger, data: params.data });
    }

    async fn on_resource_updated(&self, params: rmcp::model::ResourceUpdatedNotificationParam, _: NotificationContext<RoleClient>) {
        self.events.send(MountEvent::ResourceUpdated { mount: self.mount.clone(), origin: self.origin.clone(), uri: params.uri });
    }
}

/// The roots a server is given from the composition's workspace root (none without one).
#[allow(deprecated)]
pub(super) fn workspace_roots(root: Option<std::path::PathBuf>) -> rmcp::model::ListRootsResult {
    folders_as_roots(root.as_slice())
}

/// Folders as the roots a server is given: each a `file:` URI named by its last segment.
#[allow(deprecated)]
fn folders_as_roots(folders: &[std::path::PathBuf]) -> rmcp::model::ListRootsResult {
    let roots = folders
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

/// Reads a child's stderr to its end, logging it and keeping its last `STDERR_TAIL`
/// bytes in `tail` (cut at a character boundary) for the errors that quote it.
async fn keep_tail(mut pipe: tokio::process::ChildStderr, tail: Arc<Mutex<String>>, mount: String) {
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
        let text = String::from_utf8_lossy(&buf[..n]);
        tracing::debug!(mount = %mount, "stderr: {}", text.trim_end());
        let mut t = tail.lock().expect("stderr lock");
        t.push_str(&text);
        if t.len() > STDERR_TAIL {
            let cut = t.len() - STDERR_TAIL;
            let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(t.len());
            t.drain(..cut);
        }
    }
}

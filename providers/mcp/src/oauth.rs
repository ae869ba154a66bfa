//! OAuth for `mcp.http` mounts (`auth.oauth`): rmcp's authorization manager does the
//! protocol (protected-resource metadata, then the authorization server's, the resource
//! indicator, the token request); seam gives it the mount's client and grant, and hands
//! the manager to the connection (`rmcp`'s `AuthClient`), which sends the token and
//! reacts to the server's challenges.
//!
//! `client_credentials` with a client secret or a signed assertion (`private_key_jwt`,
//! RFC 7523): the grant has no refresh token, so the
//! token is exchanged again before it expires (`Renewing`), and kept in memory only: a
//! machine's credentials get a new one at every start. `authorization_code`: a person
//! logs in once (`seam login`, `begin_login` and `finish_login` here), and the tokens
//! are kept in the state file (`StateFile`), which the connection reads and rmcp's
//! manager refreshes and rotates in (replicas sharing the file take turns, under its
//! lock). Discovery starts from the server's own challenge to a request without a token
//! (`challenge`), which may name its metadata and the scopes it wants. With `per_agent`
//! each agent's connection (`isolation: per-agent`) keeps and sends its own tokens only.

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, ClientCredentialsConfig, CredentialStore, StoredCredentials,
};

use crate::{Grant, OAuth};

/// Why a mount could not get a token.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("the client secret cannot be read: {0}")]
    Secret(String),
    #[error("{0}")]
    Protocol(String),
    #[error("{0} is not built yet: the mount cannot authorize")]
    NotBuilt(&'static str),
    #[error("{}: the server's authorization server is `{found}`, not the `issuer` pinned, `{pinned}`: nothing is sent to it", crate::codes::MCP_OAUTH_ISSUER_MISMATCH.code)]
    IssuerMismatch { pinned: String, found: String },
    #[error("{}: no one has logged in for it: run `{login}`", crate::codes::MCP_OAUTH_LOGIN_NEEDED.code)]
    LoginNeeded { login: String, seen: Box<Seen> },
    #[error("{}: the server refused the login's tokens, and they could not be refreshed: run `{login}`", crate::codes::MCP_OAUTH_LOGIN_NEEDED.code)]
    LoginRefused { login: String, seen: Box<Seen> },
}

/// An authorization manager holding a token for the server at `url`, got as `oauth` says.
pub(crate) async fn authorize(mount: &str, agent: Option<&str>, url: &str, oauth: &OAuth) -> Result<AuthorizationManager, OAuthError> {
    let protocol = |e: rmcp::transport::auth::AuthError| OAuthError::Protocol(e.to_string());
    // Each agent's own tokens, on its own connection: never another's, never a shared one.
    let agent = match (oauth.per_agent, agent) {
        (false, _) => None,
        (true, Some(agent)) => Some(agent),
        (true, None) => return Err(OAuthError::Protocol("`per_agent` tokens need a connection per agent".to_owned())),
    };
    match oauth.grant {
        Grant::AuthorizationCode => {
            let mut manager = AuthorizationManager::new(url).await.map_err(protocol)?;
            discover(&mut manager, url, oauth).await?;
            let state = StateFile::of(mount, agent, url, oauth);
            let seen = Box::new(Seen::of(&state));
            manager.set_credential_store(state);
            if !manager.initialize_from_store().await.map_err(protocol)? {
                return Err(OAuthError::LoginNeeded { login: login_command(mount, agent, oauth), seen });
            }
            // A registered client with a secret proves itself when it refreshes, too: the
            // store gave the manager the client's id alone.
            if let (Some(id), true) = (&oauth.client_id, oauth.client_secret_env.is_some() || oauth.client_secret_file.is_some()) {
                let client = rmcp::transport::auth::OAuthClientConfig::new(id.clone(), "http://127.0.0.1/callback")
                    .with_client_secret(secret(oauth)?);
                manager.configure_client(client).map_err(protocol)?;
            }
            Ok(manager)
        }
        Grant::ClientCredentials => {
            let client_id = oauth.client_id.clone().expect("resolve checked: client_credentials has a client id");
            let (scopes, resource) = (oauth.scopes.clone(), Some(url.to_owned()));
            let config = match &oauth.private_key_file {
                Some(file) => {
                    let signing_key = std::fs::read(file).map_err(|e| OAuthError::Secret(format!("{file}: {e}")))?;
                    let signing_algorithm = signing_algorithm(oauth.signing_algorithm, &signing_key);
                    ClientCredentialsConfig::PrivateKeyJwt {
                        client_id,
                        signing_key,
                        signing_algorithm,
                        token_endpoint_audience: None,
                        scopes,
                        resource,
                    }
                }
                None => ClientCredentialsConfig::ClientSecret { client_id, client_secret: secret(oauth)?, scopes, resource },
            };
            // One manager exchanges the credentials; the connection's reads its token
            // from the store that has the first exchange it when due.
            let mut exchanger = AuthorizationManager::new(url).await.map_err(protocol)?;
            let metadata = discover(&mut exchanger, url, oauth).await?.0;
            exchanger.validate_client_credentials_metadata(&config).map_err(protocol)?;
            exchanger.configure_client_credentials(&config).map_err(protocol)?;
            let client_id = oauth.client_id.clone().unwrap_or_default();
            let exchanger = std::sync::Arc::new(exchanger);
            let store = Renewing { exchanger, config: config.clone(), client_id, current: Default::default(), refused: Default::default() };
            store.load().await.map_err(protocol)?;
            let mut manager = AuthorizationManager::new(url).await.map_err(protocol)?;
            manager.set_metadata(metadata);
            manager.configure_client_credentials(&config).map_err(protocol)?;
            manager.set_credential_store(store);
            Ok(manager)
        }
    }
}

/// Discovery for the server at `url`, from its challenge to a request without a token:
/// its authorization server's metadata, given to `manager` (and returned, with the
/// challenge). With an `issuer` pinned, the server must name that one, and its metadata
/// is then read from the pinned issuer's own well-known address: a document the server
/// points to may say it is the pinned issuer and name other endpoints.
async fn discover(
    manager: &mut AuthorizationManager,
    url: &str,
    oauth: &OAuth,
) -> Result<(AuthorizationMetadata, Option<String>), OAuthError> {
    let protocol = |e: AuthError| OAuthError::Protocol(e.to_string());
    let challenge = challenge(url).await;
    let mut metadata = manager.resolve_metadata_from_challenge(challenge.as_deref()).await.map_err(protocol)?.metadata;
    if let Some(pinned) = &oauth.issuer {
        let mismatch = |found: Option<&str>| {
            // The server chose it: shown masked, and not at any length.
            let found: String = seam_engine::redact::url(found.unwrap_or("(none named)")).chars().take(200).collect();
            OAuthError::IssuerMismatch { pinned: seam_engine::redact::url(pinned).into_owned(), found }
        };
        if !metadata.issuer.as_deref().is_some_and(|found| same_issuer(found, pinned)) {
            return Err(mismatch(metadata.issuer.as_deref()));
        }
        let own = AuthorizationManager::new(pinned.as_str()).await.map_err(protocol)?.resolve_metadata().await.map_err(protocol)?;
        // Endpoints made up from the address (no metadata found there) are no server's word.
        if !own.source.is_discovered() || !own.metadata.issuer.as_deref().is_some_and(|found| same_issuer(found, pinned)) {
            return Err(mismatch(own.metadata.issuer.as_deref()));
        }
        metadata = own.metadata;
    }
    manager.set_metadata(metadata.clone());
    Ok((metadata, challenge))
}

/// Whether two issuer identifiers name one authorization server: the same scheme, host
/// (in any case) and port (a default one written or not), and path, but for a lone `/`.
fn same_issuer(found: &str, pinned: &str) -> bool {
    let (Ok(found), Ok(pinned)) = (url::Url::parse(found), url::Url::parse(pinned)) else { return false };
    let path = |u: &url::Url| if u.path() == "/" { String::new() } else { u.path().to_owned() };
    (found.scheme(), found.host_str(), found.port_or_known_default(), path(&found), found.query())
        == (pinned.scheme(), pinned.host_str(), pinned.port_or_known_default(), path(&pinned), pinned.query())
}

/// The algorithm a client's key signs with: the one written, else RS256 for a PEM
/// labelled `RSA PRIVATE KEY`, else ES256.
fn signing_algorithm(written: Option<crate::SigningAlgorithm>, pem: &[u8]) -> rmcp::transport::auth::JwtSigningAlgorithm {
    use crate::SigningAlgorithm as Written;
    use rmcp::transport::auth::JwtSigningAlgorithm as Signing;
    match written {
        Some(Written::RS256) => Signing::RS256,
        Some(Written::RS384) => Signing::RS384,
        Some(Written::RS512) => Signing::RS512,
        Some(Written::ES256) => Signing::ES256,
        Some(Written::ES384) => Signing::ES384,
        None if pem.windows(15).any(|w| w == b"RSA PRIVATE KEY") => Signing::RS256,
        None => Signing::ES256,
    }
}

/// The client's secret, from its variable or its file (surrounding whitespace dropped).
fn secret(oauth: &OAuth) -> Result<String, OAuthError> {
    let secret = match (&oauth.client_secret_env, &oauth.client_secret_file) {
        (Some(var), _) => std::env::var(&var.0).map_err(|_| OAuthError::Secret(format!("the variable `{}` is not set", var.0)))?,
        (None, Some(file)) => std::fs::read_to_string(file).map_err(|e| OAuthError::Secret(format!("{file}: {e}")))?,
        (None, None) => return Err(OAuthError::Secret("no `client_secret_env` or `client_secret_file` is given".to_owned())),
    };
    let secret = secret.trim();
    if secret.is_empty() {
        return Err(OAuthError::Secret("it is empty".to_owned()));
    }
    Ok(secret.to_owned())
}

/// `client_credentials`' token, exchanged again once it is within the time of its end
/// where rmcp's manager would try to refresh it (`due`), which this grant cannot; and
/// once the server refused it, whenever that is (revoked, or never said to expire).
struct Renewing {
    exchanger: std::sync::Arc<AuthorizationManager>,
    config: ClientCredentialsConfig,
    client_id: String,
    current: tokio::sync::Mutex<Option<StoredCredentials>>,
    /// The manager set out to refresh: the server refused the token (or it is due).
    refused: std::sync::atomic::AtomicBool,
}

/// How long before a token's end rmcp's manager stops using it: `min(30 s, half its
/// life)`, at least a second. `Renewing` renews a second before that.
fn due(credentials: &StoredCredentials, now: u64) -> bool {
    use oauth2::TokenResponse as _;
    let Some(token) = &credentials.token_response else { return true };
    let (Some(life), Some(received)) = (token.expires_in(), credentials.token_received_at) else { return false };
    let remaining = life.as_secs().saturating_sub(now.saturating_sub(received));
    remaining <= (life.as_secs() / 2).clamp(1, 30) + 1
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs()
}

#[async_trait::async_trait]
impl CredentialStore for Renewing {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let mut current = self.current.lock().await;
        let refused = self.refused.swap(false, std::sync::atomic::Ordering::SeqCst);
        if refused || current.as_ref().is_none_or(|c| due(c, now())) {
            // rmcp's signed-assertion exchange holds what is not `Send` across an await:
            // it runs on a blocking thread of its own, which waits for it.
            let (exchanger, config) = (self.exchanger.clone(), self.config.clone());
            let runtime = tokio::runtime::Handle::current();
            let exchanged = tokio::task::spawn_blocking(move || runtime.block_on(exchanger.exchange_client_credentials(&config)));
            let token = exchanged.await.map_err(|e| AuthError::InternalError(e.to_string()))??;
            *current = Some(StoredCredentials::new(self.client_id.clone(), Some(token), Vec::new(), Some(now())));
        }
        Ok(current.clone())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        *self.current.lock().await = Some(credentials);
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        *self.current.lock().await = None;
        Ok(())
    }

    /// rmcp's manager refreshes only a token the server refused (or one past `due`,
    /// which `load` never gives): the load that follows exchanges the credentials again,
    /// and the caller sends its request once more (`McpMount::relay`).
    async fn acquire_refresh_guard(&self) -> Result<Option<rmcp::transport::auth::CredentialRefreshGuard>, AuthError> {
        self.refused.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(None)
    }
}

/// A person's login begun: the session that waits for the authorization server's
/// answer, and the URL the person opens.
pub struct Login {
    session: rmcp::transport::auth::AuthorizationSession,
    pub url: String,
}

/// Begins a person's login at the server `url` for mount `mount`, the answer to come to
/// `redirect_uri` (seam's loopback): discovery, then the client as `oauth` says (a
/// pre-registered one, seam's metadata document, or one registered now), PKCE.
pub async fn begin_login(mount: &str, agent: Option<&str>, url: &str, oauth: &OAuth, redirect_uri: &str) -> Result<Login, OAuthError> {
    let protocol = |e: rmcp::transport::auth::AuthError| OAuthError::Protocol(e.to_string());
    let mut manager = AuthorizationManager::new(url).await.map_err(protocol)?;
    manager.set_credential_store(StateFile::of(mount, agent, url, oauth));
    let challenge = discover(&mut manager, url, oauth).await?.1;
    let mut request = rmcp::transport::auth::AuthorizationRequest::new(redirect_uri).with_client_name("seam");
    // The scopes the server asked for in its challenge come first (MCP's scope selection).
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    if !oauth.scopes.is_empty() {
        request = request.with_scopes(oauth.scopes.clone());
    }
    if let Some(id) = &oauth.client_id {
        request = request.with_preregistered_client(id.clone());
        if oauth.client_secret_env.is_some() || oauth.client_secret_file.is_some() {
            request = request.with_client_secret(secret(oauth)?);
        }
    }
    if let Some(document) = &oauth.client_metadata_url {
        request = request.with_client_metadata_url(document.clone());
    }
    let session = rmcp::transport::auth::AuthorizationSession::new(manager, request).await.map_err(|(_, e)| protocol(e))?;
    let url = session.get_authorization_url().to_owned();
    Ok(Login { session, url })
}

/// Ends a login with the URL the authorization server sent the person's browser back
/// to: the code is exchanged (with the PKCE verifier), and the tokens kept in the state file.
pub async fn finish_login(login: Login, callback_url: &str) -> Result<(), OAuthError> {
    login.session.handle_callback_url(callback_url).await.map(drop).map_err(|e| OAuthError::Protocol(e.to_string()))
}

/// What the server at `url` answers requests without a token: its `WWW-Authenticate`
/// challenge, which may name its protected-resource metadata and the scopes it wants;
/// `None` when it asks nothing or cannot be reached (discovery then goes by the
/// well-known places). A server may let `initialize` in and guard what follows: then
/// `tools/list` is asked too.
async fn challenge(url: &str) -> Option<String> {
    let request = |method: &str| {
        let mut request = serde_json::json!({ "jsonrpc": "2.0", "id": 0, "method": method });
        if method == "initialize" {
            request["params"] = serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "seam", "version": env!("CARGO_PKG_VERSION") },
            });
        }
        request
    };
    // Only the server's own answer: a redirect elsewhere would name another's metadata.
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .ok()?;
    let mut session = None;
    let mut challenge = None;
    for method in ["initialize", "tools/list"] {
        let mut asked = client.post(url).header("Accept", "application/json, text/event-stream").json(&request(method));
        if let Some(session) = &session {
            asked = asked.header("Mcp-Session-Id", session);
        }
        let Ok(answer) = asked.send().await else { break };
        if answer.status() == reqwest::StatusCode::UNAUTHORIZED {
            challenge = answer.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|c| c.to_str().ok()).map(str::to_owned);
            break;
        }
        session = session.or_else(|| answer.headers().get("Mcp-Session-Id").cloned());
    }
    // A session the probe's `initialize` opened is ended, not left to the server to expire.
    if let Some(session) = session {
        let _ = client.delete(url).header("Mcp-Session-Id", session).send().await;
    }
    challenge
}

/// A mount's entry in its state file (an agent's, with `per_agent`) as a connection
/// attempt found it, by its digest (it holds tokens, which are kept nowhere else): a
/// login since, or a refresh by another replica, changes it; what other mounts' entries
/// do does not.
#[derive(Debug, Clone)]
pub struct Seen {
    state: StateFile,
    digest: Option<[u8; 32]>,
}

impl Seen {
    fn of(state: &StateFile) -> Seen {
        Seen { state: state.clone(), digest: Seen::digest(state) }
    }

    fn digest(state: &StateFile) -> Option<[u8; 32]> {
        use sha2::Digest as _;
        state.entry().map(|entry| sha2::Sha256::digest(entry.to_string()).into())
    }
}

/// The entry of mount `mount` (for `agent`, with `per_agent`) as it is now.
pub(crate) fn seen(mount: &str, agent: Option<&str>, url: &str, oauth: &OAuth) -> Seen {
    Seen::of(&StateFile::of(mount, agent, url, oauth))
}

/// Resolves once the mount's entry is no longer as it was `seen`: the login a mount
/// waits for. Looked at once a second.
pub(crate) async fn changed(seen: &Seen) {
    while Seen::digest(&seen.state) == seen.digest {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Scopes the server asked for that the mount's login lacks (a step-up a person gives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeAsked {
    state: StateFile,
    scopes: Vec<String>,
}

/// `scope` (space-separated) asked of mount `mount`'s login (`agent`'s, with `per_agent`).
pub(crate) fn scope_asked(mount: &str, agent: Option<&str>, url: &str, oauth: &OAuth, scope: &str) -> ScopeAsked {
    let state = StateFile::of(mount, agent, url, oauth);
    ScopeAsked { state, scopes: scope.split_whitespace().map(str::to_owned).collect() }
}

/// Resolves once the mount's entry holds a login granted every scope `asked` names
/// (a refresh of the old login changes the entry, not its scopes). Looked at once a second.
pub(crate) async fn scope_given(asked: &ScopeAsked) {
    loop {
        let granted = entry_scopes(asked.state.entry());
        if asked.scopes.iter().all(|scope| granted.contains(scope)) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Whether the state file holds tokens for mount `mount` (what `validate --environment` checks).
pub fn logged_in(mount: &str, url: &str, oauth: &OAuth) -> bool {
    StateFile::of(mount, None, url, oauth).entry().is_some_and(|e| !e["token_response"].is_null())
}

/// The scopes the last login for mount `mount` (`agent`'s, with `per_agent`) was
/// granted, as its entry in the state file says; none when it has none.
pub fn granted_scopes(mount: &str, agent: Option<&str>, url: &str, oauth: &OAuth) -> Vec<String> {
    entry_scopes(StateFile::of(mount, agent, url, oauth).entry())
}

/// The scopes an entry's login was granted: the token response's, else those asked for.
fn entry_scopes(entry: Option<serde_json::Value>) -> Vec<String> {
    use oauth2::TokenResponse as _;
    let Some(entry) = entry else { return Vec::new() };
    let Ok(credentials) = serde_json::from_value::<StoredCredentials>(entry) else { return Vec::new() };
    match credentials.token_response.as_ref().and_then(|t| t.scopes().cloned()) {
        Some(scopes) => scopes.iter().map(|s| s.to_string()).collect(),
        None => credentials.granted_scopes,
    }
}

/// Forgets the tokens a login kept for mount `mount` (`agent`'s own, with `per_agent`).
pub async fn logout(mount: &str, agent: Option<&str>, url: &str, oauth: &OAuth) -> Result<(), OAuthError> {
    StateFile::of(mount, agent, url, oauth).clear().await.map_err(|e| OAuthError::Protocol(e.to_string()))
}

/// What a mount that cannot serve without a person waits for, instead of reconnecting.
#[derive(Debug, Clone)]
pub(crate) enum Awaited {
    /// A login: its entry no longer as `seen`. Tokens the server `refused` it may take
    /// again, so they are tried again now and then too.
    Login { seen: Seen, refused: bool },
    /// A login granted the scopes the server asked for.
    Scope(ScopeAsked),
}

impl Awaited {
    /// Resolves once what is awaited has come, or, for refused tokens, after `retry`.
    pub(crate) async fn come(&self, retry: std::time::Duration) {
        match self {
            Awaited::Login { seen, refused: false } => changed(seen).await,
            Awaited::Login { seen, refused: true } => {
                let _ = tokio::time::timeout(retry, changed(seen)).await;
            }
            Awaited::Scope(asked) => scope_given(asked).await,
        }
    }
}

impl OAuthError {
    /// The login the mount waits for, when that is what it lacks: a change to its entry
    /// as it was before the tokens were looked for.
    pub(crate) fn awaits_login(&self) -> Option<Awaited> {
        match self {
            OAuthError::LoginNeeded { seen, .. } => Some(Awaited::Login { seen: (**seen).clone(), refused: false }),
            OAuthError::LoginRefused { seen, .. } => Some(Awaited::Login { seen: (**seen).clone(), refused: true }),
            _ => None,
        }
    }
}

/// The command that logs in for mount `mount`: for agent `agent` when the mount keeps
/// each agent's own tokens (`per_agent`); one a connection per agent shares otherwise
/// (`seam login` refuses `--agent` there).
pub(crate) fn login_command(mount: &str, agent: Option<&str>, oauth: &OAuth) -> String {
    match agent.filter(|_| oauth.per_agent) {
        Some(agent) => format!("seam login FILE {mount} --agent {agent}"),
        None => format!("seam login FILE {mount}"),
    }
}

/// Where a mount's tokens are kept: its `state_file`, else `seam/oauth.json` under the
/// user's state folder (`$XDG_STATE_HOME`, else `~/.local/state`).
pub fn state_path(oauth: &OAuth) -> std::path::PathBuf {
    if let Some(file) = &oauth.state_file {
        return file.into();
    }
    // No shared folder (`/tmp`) stands in for a user's own: without one, a relative path
    // that fails to open says so.
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|home| std::path::Path::new(&home).join(".local/state")))
        .unwrap_or_else(|| std::path::PathBuf::from("no-HOME-for-the-seam-state-folder"));
    state.join("seam/oauth.json")
}

/// A path beside `path` with `suffix` added to its name (`oauth.json.lock`).
fn beside(path: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(suffix);
    path.with_file_name(name)
}

/// One mount's tokens (one agent's, with `per_agent`) in a state file of tokens by mount, server and agent: created 0600,
/// written whole to a temporary file beside it and renamed over it, so a reader never
/// sees half a file and a crash never loses the last good one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StateFile {
    path: std::path::PathBuf,
    /// The mount's entry: its id, its server's URL, and the agent with `per_agent`.
    key: String,
}

impl StateFile {
    /// The entry of mount `mount`, `agent`'s own when the mount keeps each agent's
    /// (`per_agent`), else the one the mount's agents share.
    fn of(mount: &str, agent: Option<&str>, url: &str, oauth: &OAuth) -> StateFile {
        let key = match agent.filter(|_| oauth.per_agent) {
            Some(agent) => format!("{mount} {url} agent {agent}"),
            None => format!("{mount} {url}"),
        };
        StateFile { path: state_path(oauth), key }
    }

    /// The mount's entry now, if it has one (and the file can be read).
    fn entry(&self) -> Option<serde_json::Value> {
        self.read().ok()?.remove(&self.key)
    }

    fn read(&self) -> Result<serde_json::Map<String, serde_json::Value>, AuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| AuthError::CredentialStoreError(format!("{}: {e}", self.path.display())))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::Map::new()),
            Err(e) => Err(AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()))),
        }
    }

    /// Writes the whole file anew: a temporary file made only now (never one found there,
    /// nor through a link), 0600, synced, renamed over the state file, the folder synced.
    fn write(&self, entries: &serde_json::Map<String, serde_json::Value>) -> Result<(), AuthError> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let failed = |e: std::io::Error| AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()));
        let folder = self.folder().map_err(failed)?;
        let temporary = beside(&self.path, &format!(".tmp-{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()));
        let written = (|| {
            let mut file =
                std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(&temporary)?;
            file.write_all(&serde_json::to_vec_pretty(entries).expect("JSON"))?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.path)?;
            std::fs::File::open(&folder)?.sync_all()
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.map_err(failed)
    }

    /// The file's folder, made (0700) if it is not there.
    fn folder(&self) -> std::io::Result<std::path::PathBuf> {
        use std::os::unix::fs::DirBuilderExt as _;
        let folder = self.path.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(std::path::Path::new(".")).to_owned();
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&folder)?;
        Ok(folder)
    }

    /// Holds `FILE.write` exclusively while `change` reads and writes the file whole, so
    /// that two writers (a login and a refresh, two replicas) never drop each other's entry.
    fn rewrite(&self, change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> bool) -> Result<(), AuthError> {
        let failed = |e: std::io::Error| AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()));
        self.folder().map_err(failed)?;
        let lock =
            std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(beside(&self.path, ".write")).map_err(failed)?;
        lock.lock().map_err(failed)?;
        let mut entries = self.read()?;
        if change(&mut entries) {
            self.write(&entries)?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl CredentialStore for StateFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let entries = self.read()?;
        let Some(entry) = entries.get(&self.key) else { return Ok(None) };
        serde_json::from_value(entry.clone())
            .map(Some)
            .map_err(|e| AuthError::CredentialStoreError(format!("{}: {e}", self.path.display())))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let entry = serde_json::to_value(&credentials).expect("credentials serialize");
        self.rewrite(|entries| {
            entries.insert(self.key.clone(), entry);
            true
        })
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.rewrite(|entries| entries.remove(&self.key).is_some())
    }

    /// A refresh token the authorization server refused (revoked, expired) is forgotten,
    /// unless another login has replaced it since: the mount then waits for a login.
    async fn on_refresh_token_rejected(&self, rejected: &StoredCredentials) -> Result<(), AuthError> {
        use oauth2::TokenResponse as _;
        let refresh = |c: &StoredCredentials| c.token_response.as_ref().and_then(|t| t.refresh_token().map(|r| r.secret().clone()));
        match self.load().await? {
            Some(current) if refresh(&current) == refresh(rejected) => self.clear().await,
            _ => Ok(()),
        }
    }

    /// Replicas sharing the file take turns refreshing, so that a rotated refresh token
    /// is never lost to a race: an exclusive lock on `FILE.lock`, held through the
    /// refresh and its save (which takes `FILE.write` within).
    async fn acquire_refresh_guard(&self) -> Result<Option<rmcp::transport::auth::CredentialRefreshGuard>, AuthError> {
        let failed = |e: std::io::Error| AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()));
        self.folder().map_err(failed)?;
        let lock = beside(&self.path, ".lock");
        let file = tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(lock)?;
            file.lock()?;
            Ok::<_, std::io::Error>(file)
        })
        .await
        .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
        .map_err(failed)?;
        Ok(Some(rmcp::transport::auth::CredentialRefreshGuard::new(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(life: Option<u64>, received: u64) -> StoredCredentials {
        let mut response = rmcp::transport::auth::OAuthTokenResponse::new(
            oauth2::AccessToken::new("t".into()),
            oauth2::basic::BasicTokenType::Bearer,
            Default::default(),
        );
        response.set_expires_in(life.map(std::time::Duration::from_secs).as_ref());
        StoredCredentials::new("c".into(), Some(response), Vec::new(), Some(received))
    }

    /// A token is renewed a second before rmcp's manager would stop using it: with 30 s
    /// left of an hour's, or half of a short life left; one without a life never is.
    #[test]
    fn a_token_is_due_a_second_before_the_manager_gives_up_on_it() {
        let hour = token(Some(3600), 1000);
        assert!(!due(&hour, 1000 + 3600 - 32));
        assert!(due(&hour, 1000 + 3600 - 31));
        let short = token(Some(10), 1000);
        assert!(!due(&short, 1000 + 3));
        assert!(due(&short, 1000 + 4));
        assert!(!due(&token(None, 0), u64::MAX));
    }

    /// Issuer identifiers compare as one server's whatever the host's case, a default
    /// port written out, or a root path's slash; another path or host is another server.
    #[test]
    fn issuers_compare_as_identifiers() {
        assert!(same_issuer("https://login.example.com", "https://Login.Example.com:443/"));
        assert!(same_issuer("https://login.example.com/tenant/v2.0", "https://login.example.com/tenant/v2.0"));
        assert!(!same_issuer("https://login.example.com/tenant/v2.0/", "https://login.example.com/tenant/v2.0"));
        assert!(!same_issuer("https://login.example.com/other", "https://login.example.com/tenant"));
        assert!(!same_issuer("https://login.example.com.evil", "https://login.example.com"));
        assert!(!same_issuer("http://login.example.com", "https://login.example.com"));
        assert!(!same_issuer("not a url", "https://login.example.com"));
    }

    /// The login a mount names is an agent's own only where `per_agent` says so: a
    /// connection per agent (`isolation: per-agent`) may share one login.
    #[test]
    fn a_login_names_an_agent_only_for_its_own_tokens() {
        let shared = OAuth::default();
        let own = OAuth { per_agent: true, ..OAuth::default() };
        assert_eq!(login_command("m", Some("a"), &shared), "seam login FILE m");
        assert_eq!(login_command("m", Some("a"), &own), "seam login FILE m --agent a");
        assert_eq!(login_command("m", None, &shared), "seam login FILE m");
    }

    /// A mount waiting for a login wakes when its own entry changes (a login, a refresh
    /// by another replica), not when another mount's in the same file does.
    #[tokio::test(start_paused = true)]
    async fn a_waiting_mount_wakes_on_its_own_entry_only() {
        let dir = std::env::temp_dir().join(format!("seam-oauth-seen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let oauth = OAuth { state_file: Some(dir.join("state.json").display().to_string()), ..OAuth::default() };
        let (mine, other) =
            (StateFile::of("a", None, "https://a.example/mcp", &oauth), StateFile::of("b", None, "https://a.example/mcp", &oauth));
        let seen = Seen::of(&mine);
        other.save(token(Some(60), 1)).await.unwrap();
        let ten_seconds = std::time::Duration::from_secs(10);
        assert!(tokio::time::timeout(ten_seconds, changed(&seen)).await.is_err(), "another mount's login wakes no one else");
        mine.save(token(Some(60), 2)).await.unwrap();
        tokio::time::timeout(ten_seconds, changed(&seen)).await.expect("its own login wakes it");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A step-up is given by a login granted the scope asked for, not by the old login's
    /// refresh, which rewrites the entry with the same scopes.
    #[tokio::test(start_paused = true)]
    async fn a_step_up_is_given_by_a_login_with_the_scope_not_by_a_refresh() {
        let dir = std::env::temp_dir().join(format!("seam-oauth-scope-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let oauth = OAuth { state_file: Some(dir.join("state.json").display().to_string()), ..OAuth::default() };
        let state = StateFile::of("a", None, "https://a.example/mcp", &oauth);
        let granted = |scopes: &[&str], received: u64| {
            let token = token(Some(60), received).token_response;
            StoredCredentials::new("c".into(), token, scopes.iter().map(|s| s.to_string()).collect(), Some(received))
        };
        state.save(granted(&["mcp"], 1)).await.unwrap();
        let asked = scope_asked("a", None, "https://a.example/mcp", &oauth, "admin");
        state.save(granted(&["mcp"], 2)).await.unwrap();
        let ten_seconds = std::time::Duration::from_secs(10);
        assert!(tokio::time::timeout(ten_seconds, scope_given(&asked)).await.is_err(), "a refresh gives no scope");
        state.save(granted(&["admin", "mcp"], 3)).await.unwrap();
        tokio::time::timeout(ten_seconds, scope_given(&asked)).await.expect("the login with the scope gives it");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The state file is made 0600 in a folder made for it, written whole (nothing
    /// half-written is left beside it), holds each mount's entry apart, and forgets one
    /// mount's without touching another's.
    #[test]
    fn the_state_file_is_private_whole_and_per_mount() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("seam-oauth-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let oauth = OAuth { state_file: Some(dir.join("deep/state.json").display().to_string()), ..OAuth::default() };
        let per_agent = OAuth { per_agent: true, ..oauth.clone() };
        let (a, b) =
            (StateFile::of("a", None, "https://a.example/mcp", &oauth), StateFile::of("b", Some("x"), "https://b.example/mcp", &per_agent));
        // An agent's own entry only where the mount keeps each agent's.
        assert_eq!(b.key, "b https://b.example/mcp agent x");
        assert_eq!(StateFile::of("a", Some("x"), "https://a.example/mcp", &oauth).key, a.key);
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            assert!(a.load().await.unwrap().is_none());
            a.save(token(Some(3600), 1)).await.unwrap();
            b.save(token(Some(60), 2)).await.unwrap();
            let mode = std::fs::metadata(&a.path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            // Nothing half-written beside it: the file, and the lock its writers take turns on.
            let mut files: Vec<_> = std::fs::read_dir(a.path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
            files.sort();
            assert_eq!(files, ["state.json", "state.json.write"]);
            let folder_mode = std::fs::metadata(a.path.parent().unwrap()).unwrap().permissions().mode() & 0o777;
            assert_eq!(folder_mode, 0o700);
            assert_eq!(a.load().await.unwrap().unwrap().token_received_at, Some(1));
            a.clear().await.unwrap();
            assert!(a.load().await.unwrap().is_none());
            assert_eq!(b.load().await.unwrap().unwrap().token_received_at, Some(2));
            // A refresh holds the lock: another holder (another replica) cannot take it until it ends.
            let guard = a.acquire_refresh_guard().await.unwrap().expect("a lock");
            let other = std::fs::OpenOptions::new().write(true).open(beside(&a.path, ".lock")).unwrap();
            assert!(matches!(other.try_lock(), Err(std::fs::TryLockError::WouldBlock)));
            drop(guard);
            other.try_lock().expect("free once the refresh is done");
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
}

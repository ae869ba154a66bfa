//! `seam serve --transport http`: Streamable HTTP for each agent (`/mcp`,
//! `/agents/<name>/mcp`), `/healthz`, `/readyz`, `/status`, the status page
//! (`/ui`, `/events`), and the gate in front of them all: Host names, the
//! agents' tokens, the request limits of `serve`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::header::{
    AUTHORIZATION, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE, WWW_AUTHENTICATE,
};
use axum::http::{HeaderMap, Method, StatusCode, Version};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use rmcp::transport::common::http_header::{EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID};
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use seam_engine::deploy::Deployment;
use seam_engine::model::{ServeLimits, TokenError, TokenSource};
use seam_engine::resolve::DEFAULT_AGENT;
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;
use crate::sessions::{Sessions, session_id};

type AgentService = StreamableHttpService<crate::metrics::Observed, LocalSessionManager>;
/// Each agent's MCP service, with its session manager.
type Agents = HashMap<String, (AgentService, Arc<LocalSessionManager>)>;

/// The cookie the status page gets for the `default` agent's token.
const SESSION_COOKIE: &str = "seam_session";

#[derive(Clone)]
struct App {
    deployment: Arc<Deployment>,
    config: StreamableHttpServerConfig,
    agents: Arc<Mutex<Agents>>,
    /// What the sessions share: sessions are counted here, listen streams and subscriptions by the gateways.
    clients: Arc<crate::gateway::Clients>,
    /// The status page's drawings of the graph.
    drawings: Arc<crate::ui::Drawings>,
    /// The sessions as seam sees them: their use, for closing idle ones.
    sessions: Arc<Sessions>,
    /// Ends the status page's event streams, so that a graceful shutdown does not wait on them.
    stop: CancellationToken,
    token_files: Arc<TokenFiles>,
    /// The names a request's Host may give: loopback names and the address seam listens on.
    hosts: Arc<Vec<String>>,
    /// The port seam listens on: its own origins are `http://` each of `hosts` at it.
    port: u16,
    /// The call stage's traffic, for the status page.
    traffic: Arc<crate::traffic::Traffic>,
    /// What `/metrics` shows: this front end's requests and the deployment now; `None`
    /// with `--no-metrics`.
    metrics: Option<Arc<crate::metrics::Metrics>>,
    /// The bytes of request bodies the gate holds, against `max_buffered_request_bytes`.
    budget: Arc<crate::body::Budget>,
}

/// Token files, read again when their modification time moves.
#[derive(Default)]
struct TokenFiles {
    cached: Mutex<HashMap<PathBuf, (std::time::SystemTime, String)>>,
}

impl TokenFiles {
    fn read(&self, path: &Path) -> Result<String, TokenError> {
        let modified = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .map_err(|source| TokenError::Unreadable { path: path.to_owned(), source })?;
        let mut cached = self.cached.lock().expect("token lock");
        if let Some((m, token)) = cached.get(path)
            && *m == modified
        {
            return Ok(token.clone());
        }
        let token = TokenSource::File(path.to_owned()).read()?;
        cached.insert(path.to_owned(), (modified, token.clone()));
        Ok(token)
    }
}

impl App {
    /// The token that opens `agent`'s endpoint now (its own or inherited); `None` when none does.
    fn token(&self, agent: &str) -> Result<Option<String>, TokenError> {
        let Some(live) = self.deployment.live() else { return Ok(None) };
        match live.resolved.token_for(agent) {
            None => Ok(None),
            Some((TokenSource::File(path), _)) => self.token_files.read(&path).map(Some),
            Some((env, _)) => env.read().map(Some),
        }
    }

    /// Whether a browser's request from `origin` may go on: one of seam's own origins (`http://`
    /// a name it answers to, at its port) or one `serve.allowed_origins` names; compared as URLs
    /// parse them (case, default ports). `null` and anything that is not an origin are refused.
    fn origin_allowed(&self, origin: &str, allowed: &[seam_engine::model::Origin]) -> bool {
        let Ok(origin) = url::Url::parse(origin) else { return false };
        let Some(host) = origin.host_str() else { return false };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let own = origin.scheme() == "http"
            && origin.port_or_known_default() == Some(self.port)
            && self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host));
        own || allowed.iter().any(|allowed| url::Url::parse(&allowed.0).is_ok_and(|a| a.origin() == origin.origin()))
    }

    /// The live composition's `serve` limits (defaults when it has no `serve`).
    fn limits(&self) -> ServeLimits {
        self.deployment.serve_limits()
    }

    /// Whether `agent`'s endpoint has the session open: in seam's table, or in
    /// rmcp's (a session rmcp has just opened enters seam's table only once its
    /// answer is back). An agent not served yet has none.
    async fn knows_session(&self, agent: &str, id: &str) -> bool {
        if self.sessions.holds(id, agent) {
            return true;
        }
        let manager = self.agents.lock().expect("agents lock").get(agent).map(|(_, manager)| manager.clone());
        match manager {
            // Unsure (the local manager never errs), rmcp answers as it would.
            Some(manager) => manager.has_session(&Arc::from(id)).await.unwrap_or(true),
            None => false,
        }
    }

    /// The agent's MCP service and its session manager, made at its first
    /// request. rmcp's own idle timer is off: seam closes idle sessions
    /// (`Sessions::close_idle`), with the timeout of the live generation.
    fn service(&self, agent: &str) -> (AgentService, Arc<LocalSessionManager>) {
        let mut agents = self.agents.lock().expect("agents lock");
        agents
            .entry(agent.to_owned())
            .or_insert_with(|| {
                let (deployment, agent, clients, metrics) =
                    (self.deployment.clone(), agent.to_owned(), self.clients.clone(), self.metrics.clone());
                let mut manager = LocalSessionManager::default();
                manager.session_config.keep_alive = None;
                let manager = Arc::new(manager);
                let service = StreamableHttpService::new(
                    move || {
                        let gateway = Gateway::new(deployment.clone(), agent.clone(), clients.clone());
                        Ok(crate::metrics::Observed { gateway, metrics: metrics.clone() })
                    },
                    manager.clone(),
                    self.config.clone(),
                );
                (service, manager)
            })
            .clone()
    }
}

/// The cookie a browser gets for the token: derived from it, so the page's
/// cookie is not the token itself, and it changes when the token does.
fn session_value(token: &str) -> String {
    blake3::Hasher::new_derive_key("seam status page session 2026-12").update(token.as_bytes()).finalize().to_hex().to_string()
}

/// Whether two secrets are equal, in time that depends on neither (not even
/// their lengths: what is compared is a hash of each).
fn same(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    bool::from(blake3::hash(a.as_bytes()).as_bytes().ct_eq(blake3::hash(b.as_bytes()).as_bytes()))
}

/// The routes the page's cookie opens: reading the page and its events, nothing that runs a tool.
fn page_route(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/") || path == "/events"
}

/// The agent whose MCP endpoint a path is: `/mcp` `default`'s,
/// `/agents/<name>/mcp` its agent's, the name percent-decoded as the router
/// decodes it; `None` for any other path.
fn mcp_route(path: &str) -> Option<std::borrow::Cow<'_, str>> {
    if path == "/mcp" {
        return Some(DEFAULT_AGENT.into());
    }
    let name = path.strip_prefix("/agents/").and_then(|rest| rest.strip_suffix("/mcp")).filter(|name| !name.contains('/'))?;
    Some(percent_encoding::percent_decode_str(name).decode_utf8_lossy())
}

/// The name in a Host header, without its port (`[::1]:8931` → `::1`).
fn host_name(host: &str) -> &str {
    match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

/// What is wrong with a request's Host, as HTTP/1.1 has it (RFC 9112, 3.2):
/// exactly one, and text; none only before HTTP/1.1. Such a request is
/// malformed (400); two Hosts could let the one seam checks and the one a
/// handler reads differ.
fn host_problem(request: &Request) -> Option<&'static str> {
    let mut hosts = request.headers().get_all(HOST).iter();
    match (hosts.next(), hosts.next()) {
        (Some(_), Some(_)) => Some("more than one Host header\n"),
        (Some(host), None) if host.to_str().is_err() => Some("the Host header is not text\n"),
        (None, _) if request.version() >= Version::HTTP_11 => Some("no Host header\n"),
        _ => None,
    }
}

/// rmcp answers a body it cannot read as a message 415, as it does a body
/// whose type is not JSON; JSON-RPC calls it a parse error (not JSON) or an
/// invalid request (JSON, not a message), and Streamable HTTP answers it 400
/// with that error as the body. Only a body rmcp refused is parsed again.
fn unreadable_message(body: &[u8]) -> Response {
    let (code, message) =
        if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() { (-32700, "Parse error") } else { (-32600, "Invalid Request") };
    let error = serde_json::json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    (StatusCode::BAD_REQUEST, axum::Json(error)).into_response()
}

/// In front of every route (`/healthz` checks only that the request has one Host):
/// - the Host must be one of seam's own names (DNS rebinding);
/// - when the route's agent has a token (its own, inherited, or `serve`'s for
///   `default`, `/status`, `/readyz` and the page), the request must bring it:
///   `Authorization: Bearer <token>`, or on the page's GET routes the cookie
///   `/ui?token=<token>` sets; a token that cannot be read closes (503);
/// - a DELETE of a session the agent's endpoint does not have is answered 404, one it has 200
///   (rmcp would say 202);
/// - a body is read whole under `max_request_bytes` (413), `max_buffered_request_bytes` (503)
///   and `body_timeout` (408), and held until its answer begins;
/// - a request that opens an MCP session (what its body is decides: `Exchange::opens`)
///   past `max_sessions` or `max_sessions_per_agent` is refused (503).
///
/// Its checks (`host_or_origin_answer`, `token_answer`, `ended_session_answer`) each give the
/// answer to send in the route's place, if any.
async fn gate(State(app): State<App>, mut request: Request, next: axum::middleware::Next) -> Response {
    if let Some(problem) = host_problem(&request) {
        return plain(StatusCode::BAD_REQUEST, problem);
    }
    let path = request.uri().path().to_owned();
    if path == "/healthz" {
        return next.run(request).await;
    }
    // Read once per request: every check below is against the same generation's limits.
    let limits = app.limits();
    if let Some(refused) = host_or_origin_answer(&app, &request, &limits) {
        return refused;
    }
    // Any route but an agent's MCP endpoint is `default`'s to open.
    let route = mcp_route(&path).map(std::borrow::Cow::into_owned);
    let agent = route.as_deref().unwrap_or(DEFAULT_AGENT).to_owned();
    if let Some(refused) = token_answer(&app, &request, &path, &agent) {
        return refused;
    }
    // Checked: the call stage's hooks know the caller by the token's name (never the token).
    if let Some((source, _)) = app.deployment.live().and_then(|live| live.resolved.token_for(&agent)) {
        request.extensions_mut().insert(seam_engine::chain::TokenName::of(&source));
    }
    if route.is_some()
        && let Some(refused) = ended_session_answer(&app, request.method(), request.headers(), &agent).await
    {
        return refused;
    }
    let declared = request.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let (parts, body) = request.into_parts();
    // The bytes, and their share of the budget: both are let go of once nothing here reads the bytes any more.
    let (bytes, share) = match crate::body::read(body, declared, &limits, &app.budget).await {
        Ok(read) => read,
        Err(refusal) => return refusal.response(),
    };
    let exchange = Exchange::of(&app, &parts, &bytes, route.is_some(), agent);
    // The session's place is taken before rmcp is asked to open it, so that no two requests can both take the last one.
    let place = match exchange.opens.then(|| app.clients.tally.hold(&exchange.agent, crate::tally::Holding::Session, &limits)) {
        Some(Err(full)) => {
            return (StatusCode::SERVICE_UNAVAILABLE, format!("{}\n", full.why(&exchange.agent, crate::tally::Holding::Session)))
                .into_response();
        }
        Some(Ok(place)) => Some(place),
        None => None,
    };
    let mut request = Request::from_parts(parts, Body::from(bytes.clone()));
    if let Some(hold) = &exchange.read_hold {
        request.extensions_mut().insert(hold.clone());
    }
    let response = forward(&app, &exchange, place, request, next).await;
    finish(&app, exchange, response, (bytes, share)).await
}

/// The Host must be one of seam's own names or one `allowed_hosts` names (DNS
/// rebinding), and a browser's `Origin` seam's own or one `allowed_origins` names.
/// This is the one Host check: rmcp's own is off, since it cannot follow reloads.
fn host_or_origin_answer(app: &App, request: &Request, limits: &ServeLimits) -> Option<Response> {
    let host = request.headers().get(HOST).and_then(|h| h.to_str().ok()).map(host_name);
    let known = |h: &str| app.hosts.iter().any(|own| own.eq_ignore_ascii_case(h)) || limits.allowed_hosts.iter().any(|a| a.matches(h));
    // No Host (HTTP/1.0) names nothing seam knows: refused, as rmcp's own check did.
    if host.is_none_or(|h| !known(h)) {
        return Some(plain(StatusCode::FORBIDDEN, "forbidden host\n"));
    }
    if let Some(origin) = request.headers().get(ORIGIN)
        && !origin.to_str().is_ok_and(|o| app.origin_allowed(o, &limits.allowed_origins))
    {
        return Some(plain(StatusCode::FORBIDDEN, "forbidden origin\n"));
    }
    None
}

/// The route's agent's token, when it has one: a bearer header, or on the page's GET
/// routes the cookie that `/ui?token=<token>` sets (that request is answered with the
/// cookie and a clean address). A token that cannot be read closes the route (503).
fn token_answer(app: &App, request: &Request, path: &str, agent: &str) -> Option<Response> {
    let expected = match app.token(agent) {
        Ok(token) => token,
        Err(e) => {
            tracing::error!(agent, "refusing requests: {e}");
            return Some(plain(StatusCode::SERVICE_UNAVAILABLE, "the access token cannot be read\n"));
        }
    };
    let expected = expected.as_ref()?;
    if path == "/metrics" && app.limits().metrics_public {
        return None;
    }
    let denied = || (StatusCode::UNAUTHORIZED, [(WWW_AUTHENTICATE, "Bearer")], "unauthorized\n").into_response();
    // A browser's way in: the token once in the address, then a cookie and a clean address.
    if path == "/ui"
        && let Some(given) = request
            .uri()
            .query()
            .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned()))
    {
        if !same(&given, expected) {
            return Some(denied());
        }
        let cookie = format!("{SESSION_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", session_value(expected));
        return Some((StatusCode::SEE_OTHER, [(LOCATION, "/ui".to_owned()), (SET_COOKIE, cookie)]).into_response());
    }
    let headers = request.headers();
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, t)| scheme.eq_ignore_ascii_case("bearer") && same(t.trim(), expected));
    let cookie = request.method() == Method::GET && page_route(path) && {
        let session = session_value(expected);
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().strip_prefix(SESSION_COOKIE)?.strip_prefix('='))
            .any(|v| same(v, &session))
    };
    (!(bearer || cookie)).then(denied)
}

/// On an agent's MCP endpoint, a DELETE of a session the endpoint does not have
/// is answered 404, as Streamable HTTP says (rmcp answers any DELETE 202).
async fn ended_session_answer(app: &App, method: &Method, headers: &HeaderMap, agent: &str) -> Option<Response> {
    if method == Method::DELETE
        && let Some(id) = session_id(headers)
        && !app.knows_session(agent, id).await
    {
        return Some(plain(StatusCode::NOT_FOUND, "Not Found: Session not found\n"));
    }
    None
}

/// Whether a request to an MCP endpoint opens a session, as rmcp decides it by what the
/// request is: a POST naming no session whose message is `initialize`. (`initialize` opens
/// a session whatever revision its headers or params name: the handshake exists only before
/// 2026-07-28, and rmcp answers it with a revision that has sessions.) Any other request
/// without a session is stateless or refused by rmcp, and opens none.
fn opens_session(method: &Method, headers: &HeaderMap, body: &[u8]) -> bool {
    method == Method::POST
        && session_id(headers).is_none()
        && seam_wire::stdio::Peek::of(body).is_some_and(|message| message.id.is_some() && message.method.as_deref() == Some("initialize"))
}

/// What the gate knows of one request once its body is read: what kind of MCP
/// exchange it is, and the session it is in (held in use while it runs).
struct Exchange {
    agent: String,
    /// A POST to an agent's MCP endpoint.
    post: bool,
    /// A DELETE (of a session, on an agent's MCP endpoint: elsewhere it has no `session`).
    delete: bool,
    /// Its session, on an agent's MCP endpoint (elsewhere the router answers 404).
    session: Option<String>,
    /// A POST with no session whose message is `initialize`: it opens one ([`opens_session`]).
    opens: bool,
    /// Its body was declared JSON.
    json_body: bool,
    /// A GET naming the last event it read resumes a request's stream (rmcp replays it).
    resumes: bool,
    /// A stream open for as long as its client wants: a session's GET stream, a
    /// `subscriptions/listen`. It ends when seam stops ([`ended_at_stop`]).
    standing: bool,
    in_use: Option<crate::sessions::InUse>,
    /// A POST's share of the read budget (`seam_engine::reads`): put in the request's
    /// extensions, which rmcp passes on to the handler (`Gateway::read_hold`), that takes
    /// from it what a read's answer needs; kept here until that answer has been sent.
    read_hold: Option<seam_engine::reads::ReadHold>,
}

impl Exchange {
    fn of(app: &App, parts: &axum::http::request::Parts, body: &[u8], is_mcp: bool, agent: String) -> Exchange {
        let post = parts.method == Method::POST && is_mcp;
        let session = if is_mcp { session_id(&parts.headers).map(str::to_owned) } else { None };
        let in_use = session.as_deref().and_then(|id| app.sessions.enter(id));
        Exchange {
            agent,
            post,
            delete: parts.method == Method::DELETE,
            opens: is_mcp && opens_session(&parts.method, &parts.headers, body),
            session,
            json_body: crate::sessions::json_body(&parts.headers),
            resumes: is_mcp && parts.method == Method::GET && parts.headers.contains_key(HEADER_LAST_EVENT_ID),
            standing: is_mcp
                && match parts.method {
                    Method::GET => !parts.headers.contains_key(HEADER_LAST_EVENT_ID),
                    Method::POST => seam_wire::stdio::Peek::of(body).is_some_and(|m| m.method.as_deref() == Some("subscriptions/listen")),
                    _ => false,
                },
            in_use,
            read_hold: post.then(|| app.deployment.read_hold()),
        }
    }
}

/// The request on to its route. One that opens a session is run on a task of its
/// own, so that the session rmcp opens enters seam's table, with its `place`, even if
/// this request's client goes away meanwhile: only seam closes idle sessions. A place
/// no session took is given back.
async fn forward(
    app: &App,
    exchange: &Exchange,
    place: Option<crate::tally::Held>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let Some(place) = place else {
        return next.run(request).await;
    };
    let (app, agent) = (app.clone(), exchange.agent.clone());
    let opening = tokio::spawn(async move {
        let response = next.run(request).await;
        if let Some(id) = session_id(response.headers()) {
            app.sessions.opened(id, &agent, app.service(&agent).1, place);
        }
        response
    });
    match opening.await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!("opening a session failed: {e}");
            plain(StatusCode::INTERNAL_SERVER_ERROR, "the session could not be opened\n")
        }
    }
}

/// The route's answer as the client gets it: an ended session is 200 (rmcp says 202),
/// a body rmcp could not read as a message is JSON-RPC's 400, a POST's answer is JSON
/// when it can be (`crate::answer::answer_as_json`), and a streamed answer keeps its session in use
/// until the stream ends. The body and its share of the budget are let go of once the
/// 400 check no longer needs them, before the answer is rewritten or streamed.
async fn finish(app: &App, exchange: Exchange, response: Response, (bytes, share): (axum::body::Bytes, crate::body::Share)) -> Response {
    if let Some(id) = &exchange.session
        && response.status().is_success()
        && exchange.delete
    {
        app.sessions.ended(id, &exchange.agent);
        // The session has ended, not been accepted for later: 200, as the official SDKs'
        // servers answer and their clients expect (the Python SDK warns on rmcp's 202).
        if response.status() == StatusCode::ACCEPTED {
            return StatusCode::OK.into_response();
        }
    }
    if exchange.post && exchange.json_body && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return unreadable_message(&bytes);
    }
    drop((bytes, share));
    let response = match (exchange.post, exchange.resumes) {
        (true, _) => crate::answer::answer_as_json(response).await,
        (false, true) => response,
        (false, false) => return ended_at_stop(app, &exchange, response),
    };
    // A request rmcp streams the answer of, or a resumed stream, keeps its session in use until the stream ends;
    // the read budget a read's answer took is kept until the body is sent.
    let streamed = response.headers().get(CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(EVENT_STREAM_MIME_TYPE.as_bytes()));
    let response = ended_at_stop(app, &exchange, response);
    let in_use = exchange.in_use.filter(|_| streamed);
    let read_hold = exchange.read_hold.filter(|hold| hold.held() > 0);
    if in_use.is_none() && read_hold.is_none() {
        return response;
    }
    // The body is passed on as a stream that holds them: its length, when known, is kept in its header.
    let length = axum::body::HttpBody::size_hint(response.body()).exact();
    let mut response = response.map(|body| {
        use futures::StreamExt as _;
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _ = (&in_use, &read_hold);
            chunk
        }))
    });
    if let Some(length) = length {
        response.headers_mut().insert(CONTENT_LENGTH, length.into());
    }
    response
}

/// A standing stream's body ends when seam stops: a stop waits for the answers
/// still being made (a call's), not for streams that would stay open for good.
fn ended_at_stop(app: &App, exchange: &Exchange, response: Response) -> Response {
    use futures::StreamExt as _;
    let sse = response.headers().get(CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(EVENT_STREAM_MIME_TYPE.as_bytes()));
    if !exchange.standing || !sse {
        return response;
    }
    let stop = app.stop.clone();
    response.map(|body| Body::from_stream(body.into_data_stream().take_until(stop.cancelled_owned())))
}

/// Serves until `stop`, then lets the open connections finish what they are
/// answering (the calls running included) before the MCP sessions end.
/// `listen` is where; `hosts` gain its address. `traffic` and `mount_durations` are hooks
/// of the deployment's call stage, read by the status page and `/metrics`; without
/// `mount_durations` nothing is measured and `/metrics` is not served (`--no-metrics`).
pub async fn serve(
    deployment: Arc<Deployment>,
    listen: SocketAddr,
    stop: CancellationToken,
    traffic: Arc<crate::traffic::Traffic>,
    mount_durations: Option<&crate::metrics::MountDurations>,
) -> Result<(), crate::error::Error> {
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|source| crate::error::Error::Listen { listen, source })?;
    let local = listener.local_addr().map_err(crate::error::Error::Socket)?;
    // DNS-rebinding defence stays on: loopback names, the address we listen on and the live
    // `serve.allowed_hosts` are accepted as Host, by the gate (`host_or_origin_answer`).
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    hosts.push(local.ip().to_string());
    // The body limit is the gate's (`max_request_bytes`, read per request), not rmcp's own; so is the Host check.
    let mut config = StreamableHttpServerConfig::default().disable_allowed_hosts().with_max_request_body_bytes(usize::MAX);
    // The sessions end after the connections have drained, not at `stop`: ending them would cancel
    // the calls running and cut the streams their answers come on.
    let sessions_end = CancellationToken::new();
    let _sessions_end = sessions_end.clone().drop_guard();
    config.cancellation_token = sessions_end;
    // `session_idle_timeout` follows reloads: each swap sets it from the live generation.
    // (Subscribed first, so that no swap after the first reading goes unseen.)
    let mut swaps = deployment.subscribe();
    let sessions = Sessions::new(deployment.serve_limits().session_idle_timeout.to_std());
    tokio::spawn(sessions.clone().close_idle(stop.clone()));
    let (following, swapped, stopped) = (sessions.clone(), deployment.clone(), stop.clone());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stopped.cancelled() => return,
                changed = swaps.changed() => if changed.is_err() { return },
            }
            following.set_idle_timeout(swapped.serve_limits().session_idle_timeout.to_std());
        }
    });
    let clients: Arc<crate::gateway::Clients> = Arc::default();
    let app = App {
        deployment: deployment.clone(),
        config,
        agents: Arc::default(),
        clients: clients.clone(),
        drawings: Arc::default(),
        sessions,
        stop: stop.clone(),
        token_files: Arc::default(),
        hosts: Arc::new(hosts),
        port: local.port(),
        budget: Arc::default(),
        traffic,
        metrics: mount_durations.map(|mounts| crate::metrics::Metrics::new(deployment.clone(), clients.clone(), mounts)),
    };
    let (default_service, _) = app.service(DEFAULT_AGENT);
    let router = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .route("/ui", get(ui_page))
        .route("/ui/page.css", get(|| async { ([(CONTENT_TYPE, "text/css; charset=utf-8")], crate::ui::CSS) }))
        .route("/ui/page.js", get(|| async { ([(CONTENT_TYPE, "text/javascript; charset=utf-8")], crate::ui::JS) }))
        .route("/events", get(events))
        .route("/agents/{name}/mcp", any(agent_mcp))
        .route_service("/mcp", default_service)
        .layer(axum::middleware::from_fn_with_state(app.clone(), gate))
        .with_state(app);
    if crate::log::json() {
        // One event whose fields a script reads (the port `--listen …:0` was given, above all).
        let (url, status) = (format!("http://{local}/mcp"), format!("http://{local}/status"));
        tracing::info!(target: "seam", agent = DEFAULT_AGENT, url, status, "serving");
    } else {
        say!("seam: serving agent `{}` at http://{local}/mcp", DEFAULT_AGENT);
        say!(
            "seam: other agents at http://{local}/agents/<name>/mcp; status at http://{local}/status, the status page at http://{local}/ui"
        );
    }
    crate::listen::serve(listener, router, deployment, stop).await;
    Ok(())
}

async fn readyz(State(app): State<App>) -> Response {
    match app.deployment.live() {
        Some(g) if g.ready() => (StatusCode::OK, "ready\n").into_response(),
        _ => (StatusCode::SERVICE_UNAVAILABLE, "not ready\n").into_response(),
    }
}

/// `/status`: the deployment's, what clients hold of this process, and the resource reads in flight.
#[derive(serde::Serialize)]
struct Status {
    #[serde(flatten)]
    deployment: seam_engine::status::DeploymentStatus,
    clients: crate::tally::ClientsStatus,
    reads: Reads,
}

/// The resource reads in flight: their bytes, and how many wait for their turn.
#[derive(serde::Serialize)]
struct Reads {
    bytes_in_flight: u64,
    waiting: usize,
}

async fn status(State(app): State<App>) -> Response {
    let (bytes_in_flight, waiting) = app.deployment.reads_in_flight();
    let status =
        Status { deployment: app.deployment.status(), clients: app.clients.tally.status(), reads: Reads { bytes_in_flight, waiting } };
    axum::Json(status).into_response()
}

/// `/metrics`, in the OpenMetrics text Prometheus scrapes.
async fn metrics(State(app): State<App>) -> Response {
    let Some(metrics) = &app.metrics else { return plain(StatusCode::NOT_FOUND, "metrics are off (--no-metrics)\n") };
    ([(CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], metrics.encode()).into_response()
}

async fn ui_page(State(app): State<App>) -> Response {
    // A new generation's graph is laid out on a thread of its own; the page waits for it a little.
    app.drawings.wait(&app.deployment, Duration::from_secs(2)).await;
    (
        [(CONTENT_TYPE, "text/html; charset=utf-8"), (CACHE_CONTROL, "no-store")],
        crate::ui::page(&app.deployment, &app.drawings, &app.traffic),
    )
        .into_response()
}

/// The status page's live updates: at once the sections as they are, then
/// the sections that changed, each time a reload has an outcome, a mount's
/// state changes, a catalog may have changed or a drawing is ready. Ends
/// when seam stops.
async fn events(State(app): State<App>) -> Sse<impl futures::Stream<Item = Result<Event, std::convert::Infallible>>> {
    struct Stream {
        app: App,
        catalogs: tokio::sync::watch::Receiver<u64>,
        statuses: tokio::sync::watch::Receiver<u64>,
        drawings: tokio::sync::watch::Receiver<u64>,
        traffic_beat: tokio::time::Interval,
        shown: crate::ui::Fragments,
    }
    let deployment = app.deployment.clone();
    let start = Stream {
        catalogs: deployment.subscribe(),
        statuses: deployment.subscribe_status(),
        drawings: app.drawings.subscribe(),
        traffic_beat: tokio::time::interval(crate::ui::TRAFFIC_BEAT),
        shown: crate::ui::Fragments::new(),
        app,
    };
    let stream = futures::stream::unfold(start, |mut s| async move {
        let mut first = s.shown.is_empty();
        loop {
            if !first {
                tokio::select! {
                    changed = s.catalogs.changed() => changed.ok()?,
                    changed = s.statuses.changed() => changed.ok()?,
                    changed = s.drawings.changed() => changed.ok()?,
                    // Traffic changes with every call: it is drawn again on a beat, and sent when it differs.
                    _ = s.traffic_beat.tick() => {}
                    _ = s.app.stop.cancelled() => return None,
                }
            }
            first = false;
            let now = crate::ui::fragments(&s.app.deployment, &s.app.drawings, &s.app.traffic);
            let initial = s.shown.is_empty();
            let Some(mut update) = crate::ui::changed(&s.shown, &now) else { continue };
            s.shown = now;
            // The first event brings a page rendered moments ago up to date; later ones are news.
            update["initial"] = initial.into();
            // The page announces an outcome it has not seen (it knows the one it was rendered with).
            if let Some(last) = s.app.deployment.last_outcome() {
                update["outcome_at"] = seam_engine::runtime::timestamp(last.at).into();
                update["announce"] = crate::ui::announcement(&last).into();
            }
            return Some((Ok(Event::default().event("update").data(update.to_string())), s));
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn agent_mcp(State(app): State<App>, UrlPath(name): UrlPath<String>, request: Request) -> Response {
    let known = app.deployment.live().is_some_and(|g| g.resolved.agents.contains_key(&name));
    if !known {
        return (StatusCode::NOT_FOUND, format!("no agent `{name}`\n")).into_response();
    }
    app.service(&name).0.handle(request).await.into_response()
}

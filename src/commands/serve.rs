//! `seam serve FILE`: run the composition and serve an agent's catalog over MCP
//! (stdio, or Streamable HTTP with `/healthz`, `/readyz` and `/status`), hot
//! reloading on file changes and SIGHUP; SIGINT/SIGTERM drain and dispose every
//! mount, so no child outlives seam.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use seam_engine::Engine;
use seam_engine::deploy::{Deployment, Generation, OutcomeKind};
use seam_engine::resolve::DEFAULT_AGENT;
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;
use crate::{Outcome, Transport};

pub struct Args {
    pub file: PathBuf,
    pub agent: String,
    pub transport: Transport,
    pub listen: SocketAddr,
    pub watch: bool,
    pub debounce: Duration,
    pub drain_timeout: Duration,
}

/// Starts the composition; `Err(outcome)` when it was rejected (its
/// diagnostics are printed). `http`: it is served over HTTP, so a `serve`
/// token that cannot be read rejects it.
pub async fn start(engine: Engine, file: &Path, drain_timeout: Duration, http: bool) -> Result<Arc<Deployment>, Outcome> {
    use std::io::IsTerminal as _;
    // On a terminal, start-up shows live progress; elsewhere the per-mount lines after it are enough.
    let progress = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(indicatif::ProgressStyle::with_template("{spinner} starting mounts {pos}/{len} {msg}").expect("a valid template"));
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    });
    let on_activated = progress.clone().map(|bar| {
        Arc::new(move |a: seam_engine::deploy::Activated<'_>| {
            bar.set_length(a.total as u64);
            bar.set_position(a.done as u64);
            bar.set_message(format!("({} {:?})", a.id, a.state).to_lowercase());
        }) as seam_engine::deploy::OnActivated
    });
    let options = seam_engine::deploy::Options { drain_timeout, on_activated, check_serve_token: http, ..Default::default() };
    let deployment = Deployment::new(Arc::new(engine), file, Arc::new(seam_engine::load::ProcessEnv), options);
    let outcome = deployment.reload().await;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    if outcome.outcome == OutcomeKind::Rejected {
        eprint!("{}", outcome.human());
        eprintln!("seam: {} was not started", file.display());
        deployment.shutdown().await;
        return Err(Outcome::Invalid);
    }
    Ok(deployment)
}

/// One line per mount: its state, tool count and detail.
pub fn print_mounts(g: &Generation) {
    for (id, slot) in &g.mounts {
        let status = slot.running.status();
        let state = serde_json::to_value(status.state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let detail = status.detail.map(|d| format!(" ({d})")).unwrap_or_default();
        eprintln!("seam: mount {id} [{}]: {state}, {} tools{detail}", slot.kind, slot.running.tools().len());
    }
}

pub fn run(engine: Engine, args: Args) -> Result<Outcome, String> {
    let runtime = super::runtime()?;
    runtime.block_on(serve(engine, args))
}

async fn serve(engine: Engine, args: Args) -> Result<Outcome, String> {
    // Installed first: a signal during start-up waits for it to finish (so its children are stopped,
    // not orphaned), and a SIGHUP sent as soon as seam says it serves reloads instead of killing it.
    let signals = Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let deployment = match start(engine, &args.file, args.drain_timeout, args.transport == Transport::Http).await {
        Ok(d) => d,
        Err(outcome) => return Ok(outcome),
    };
    let live = deployment.live().expect("a started deployment has a generation");
    if !live.resolved.agents.contains_key(&args.agent) {
        deployment.shutdown().await;
        return Err(format!("no agent `{}` in {}", args.agent, args.file.display()));
    }
    print_mounts(&live);
    drop(live);

    let stop = CancellationToken::new();
    tokio::spawn(signals.run(deployment.clone(), stop.clone()));
    tokio::spawn(deployment.clone().reload_worker(stop.clone()));
    if args.watch {
        let (d, s, debounce) = (deployment.clone(), stop.clone(), args.debounce);
        tokio::spawn(async move {
            if let Err(e) = crate::watch::run(d, debounce, s).await {
                tracing::error!("{e}");
            }
        });
    }
    let served = match args.transport {
        Transport::Stdio => serve_stdio(deployment.clone(), args.agent.clone(), stop.clone()).await,
        Transport::Http => serve_http(deployment.clone(), &args, stop.clone()).await,
    };
    stop.cancel();
    deployment.shutdown().await;
    served.map(|()| Outcome::Valid)
}

struct Signals {
    hup: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals { hup: signal(SignalKind::hangup())?, int: signal(SignalKind::interrupt())?, term: signal(SignalKind::terminate())? })
    }

    async fn run(mut self, deployment: Arc<Deployment>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = self.hup.recv() => { tracing::info!("SIGHUP: reloading"); deployment.request_reload() }
                _ = self.int.recv() => break,
                _ = self.term.recv() => break,
            }
        }
        tracing::info!("stopping: draining calls and disposing mounts");
        stop.cancel();
    }
}

async fn serve_stdio(deployment: Arc<Deployment>, agent: String, stop: CancellationToken) -> Result<(), String> {
    eprintln!("seam: serving agent `{agent}` over stdio");
    let gateway = Gateway::new(deployment, agent);
    let service = match socket_stdio() {
        Some(io) => gateway.serve(io).await,
        None => gateway.serve(rmcp::transport::stdio_pipes()).await,
    }
    .map_err(|e| format!("MCP handshake: {e}"))?;
    let cancel = service.cancellation_token();
    tokio::select! {
        _ = service.waiting() => {}
        _ = stop.cancelled() => cancel.cancel(),
    }
    Ok(())
}

/// stdin and stdout as non-blocking sockets, when they are sockets: Node's
/// `child_process` (so the official SDK's stdio transport) hands a child the ends
/// of socket pairs, not pipes. Tokio's own stdin/stdout run every read and write
/// on the blocking thread pool, a thread hand-off per message; rmcp's
/// `stdio_pipes` avoids that for FIFOs only.
fn socket_stdio() -> Option<(tokio::net::UnixStream, tokio::net::UnixStream)> {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::FileTypeExt as _;
    let open = |fd: std::os::fd::BorrowedFd<'_>| -> Option<tokio::net::UnixStream> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = std::fs::File::from(owned);
        if !file.metadata().ok()?.file_type().is_socket() {
            return None;
        }
        let stream = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    };
    Some((open(std::io::stdin().as_fd())?, open(std::io::stdout().as_fd())?))
}

type AgentService = StreamableHttpService<Gateway, LocalSessionManager>;

/// The token a `serve` section names, read at a request: a variable each
/// time, a file again when its modification time moves.
#[derive(Default)]
struct TokenFile {
    cached: Mutex<Option<(PathBuf, std::time::SystemTime, String)>>,
}

impl TokenFile {
    fn read(&self, path: &Path) -> Result<String, String> {
        let modified = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .map_err(|e| format!("the token file {} cannot be read: {e}", path.display()))?;
        let mut cached = self.cached.lock().expect("token lock");
        if let Some((p, m, token)) = &*cached
            && p == path
            && *m == modified
        {
            return Ok(token.clone());
        }
        let token = seam_engine::model::TokenSource::File(path.to_owned()).read()?;
        *cached = Some((path.to_owned(), modified, token.clone()));
        Ok(token)
    }
}

/// The cookie a browser gets for the token: derived from it, so the page's
/// cookie is not the token itself, and it changes when the token does.
fn session_value(token: &str) -> String {
    blake3::Hasher::new_derive_key("seam status page session 2026-12").update(token.as_bytes()).finalize().to_hex().to_string()
}

const SESSION_COOKIE: &str = "seam_session";

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

impl App {
    /// The token the live composition's `serve` section names; `None` when it names none.
    fn token(&self) -> Result<Option<String>, String> {
        use seam_engine::model::TokenSource;
        let Some(live) = self.deployment.live() else { return Ok(None) };
        match TokenSource::of(&live.resolved.services) {
            None => Ok(None),
            Some(TokenSource::File(path)) => self.token_file.read(&path).map(Some),
            Some(env) => env.read().map(Some),
        }
    }
}

/// Every endpoint but `/healthz` answers only a request whose Host is one of
/// seam's own names (DNS rebinding), and, when `serve` names a token, only
/// with it: `Authorization: Bearer <token>` anywhere, or the cookie
/// `/ui?token=<token>` sets, on the page's own read-only routes. A token
/// that cannot be read shuts everything (503), never opens it.
async fn gate(State(app): State<App>, request: Request, next: axum::middleware::Next) -> Response {
    if request.uri().path() == "/healthz" {
        return next.run(request).await;
    }
    let host = request.headers().get(axum::http::header::HOST).and_then(|h| h.to_str().ok()).map(host_name);
    if host.is_some_and(|h| !app.hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(h))) {
        return (StatusCode::FORBIDDEN, "forbidden host\n").into_response();
    }
    let expected = match app.token() {
        Ok(None) => return next.run(request).await,
        Ok(Some(token)) => token,
        Err(e) => {
            tracing::error!("refusing requests: {e}");
            return (StatusCode::SERVICE_UNAVAILABLE, "the access token cannot be read\n").into_response();
        }
    };
    let denied = || (StatusCode::UNAUTHORIZED, [(axum::http::header::WWW_AUTHENTICATE, "Bearer")], "unauthorized\n").into_response();
    // A browser's way in: the token once in the address, then a cookie and a clean address.
    if request.uri().path() == "/ui"
        && let Some(given) = request
            .uri()
            .query()
            .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned()))
    {
        if !same(&given, &expected) {
            return denied();
        }
        let cookie = format!("{SESSION_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", session_value(&expected));
        return (StatusCode::SEE_OTHER, [(axum::http::header::LOCATION, "/ui".to_owned()), (axum::http::header::SET_COOKIE, cookie)])
            .into_response();
    }
    let headers = request.headers();
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, t)| scheme.eq_ignore_ascii_case("bearer") && same(t.trim(), &expected));
    let cookie = request.method() == axum::http::Method::GET && page_route(request.uri().path()) && {
        let session = session_value(&expected);
        headers
            .get_all(axum::http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().strip_prefix(SESSION_COOKIE)?.strip_prefix('='))
            .any(|v| same(v, &session))
    };
    if bearer || cookie { next.run(request).await } else { denied() }
}

/// The name in a Host header, without its port (`[::1]:8931` → `::1`).
fn host_name(host: &str) -> &str {
    match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    }
}

#[derive(Clone)]
struct App {
    deployment: Arc<Deployment>,
    config: StreamableHttpServerConfig,
    agents: Arc<Mutex<HashMap<String, AgentService>>>,
    /// Ends the status page's event streams, so that a graceful shutdown does not wait on them.
    stop: CancellationToken,
    token_file: Arc<TokenFile>,
    /// The names a request's Host may give: loopback names and the address seam listens on.
    hosts: Arc<Vec<String>>,
}

impl App {
    fn service(&self, agent: &str) -> AgentService {
        let mut agents = self.agents.lock().expect("agents lock");
        agents
            .entry(agent.to_owned())
            .or_insert_with(|| {
                let (deployment, agent) = (self.deployment.clone(), agent.to_owned());
                let sessions = Arc::new(LocalSessionManager::default());
                StreamableHttpService::new(move || Ok(Gateway::new(deployment.clone(), agent.clone())), sessions, self.config.clone())
            })
            .clone()
    }
}

async fn serve_http(deployment: Arc<Deployment>, args: &Args, stop: CancellationToken) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(args.listen).await.map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    if !local.ip().is_loopback() {
        eprintln!("seam: warning: listening on {local}, which is not a loopback address: anyone who can reach it can call these tools");
    }
    // DNS-rebinding defence stays on: only loopback names and the address we listen on are accepted as Host.
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    hosts.push(local.ip().to_string());
    let mut config = StreamableHttpServerConfig::default().with_allowed_hosts(hosts.clone());
    config.cancellation_token = stop.child_token();
    let app = App {
        deployment: deployment.clone(),
        config,
        agents: Arc::default(),
        stop: stop.clone(),
        token_file: Arc::default(),
        hosts: Arc::new(hosts),
    };
    if let Err(e) = app.token() {
        return Err(format!("`serve` names a token seam cannot read: {e}"));
    }
    let default_service = app.service(DEFAULT_AGENT);
    let router = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/status", get(status))
        .route("/ui", get(ui_page))
        .route("/ui/page.css", get(|| async { ([(CONTENT_TYPE, "text/css; charset=utf-8")], crate::ui::CSS) }))
        .route("/ui/page.js", get(|| async { ([(CONTENT_TYPE, "text/javascript; charset=utf-8")], crate::ui::JS) }))
        .route("/events", get(events))
        .route("/agents/{name}/mcp", any(agent_mcp))
        .route_service("/mcp", default_service)
        .layer(axum::middleware::from_fn_with_state(app.clone(), gate))
        .with_state(app);
    eprintln!("seam: serving agent `{}` at http://{local}/mcp", DEFAULT_AGENT);
    eprintln!(
        "seam: other agents at http://{local}/agents/<name>/mcp; status at http://{local}/status, the status page at http://{local}/ui"
    );
    // Small JSON-RPC messages must not wait for Nagle's algorithm: without NODELAY a round trip costs ~40ms of delayed ACKs.
    use axum::serve::ListenerExt as _;
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!("cannot set TCP_NODELAY: {e}");
        }
    });
    axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned()).await.map_err(|e| e.to_string())
}

async fn readyz(State(app): State<App>) -> Response {
    match app.deployment.live() {
        Some(g) if g.ready() => (StatusCode::OK, "ready\n").into_response(),
        _ => (StatusCode::SERVICE_UNAVAILABLE, "not ready\n").into_response(),
    }
}

async fn status(State(app): State<App>) -> Response {
    axum::Json(app.deployment.status()).into_response()
}

async fn ui_page(State(app): State<App>) -> Response {
    // A new generation's graph is laid out on a thread of its own; the page waits for it a little.
    crate::ui::wait_for_drawing(&app.deployment, Duration::from_secs(2)).await;
    ([(CONTENT_TYPE, "text/html; charset=utf-8"), (CACHE_CONTROL, "no-store")], crate::ui::page(&app.deployment)).into_response()
}

/// The status page's live updates: at once the sections as they are, then
/// the sections that changed, each time a reload has an outcome, a mount's
/// state changes or a catalog may have changed. Ends when seam stops.
async fn events(State(app): State<App>) -> Sse<impl futures::Stream<Item = Result<Event, std::convert::Infallible>>> {
    struct Stream {
        app: App,
        catalogs: tokio::sync::watch::Receiver<u64>,
        statuses: tokio::sync::watch::Receiver<u64>,
        drawings: tokio::sync::watch::Receiver<u64>,
        shown: crate::ui::Fragments,
    }
    let deployment = app.deployment.clone();
    let start = Stream {
        catalogs: deployment.subscribe(),
        statuses: deployment.subscribe_status(),
        drawings: crate::ui::subscribe_drawings(),
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
                    _ = s.app.stop.cancelled() => return None,
                }
            }
            first = false;
            let now = crate::ui::fragments(&s.app.deployment);
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
    app.service(&name).handle(request).await.into_response()
}

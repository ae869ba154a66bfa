//! seam's own view of the MCP sessions it serves over HTTP (rmcp runs them):
//! when each was last used, so that seam closes a session left idle past
//! `session_idle_timeout`; and, once the client has said
//! `notifications/initialized`, the session's gateway and peer, so that a plain
//! `tools/call` in the session is answered here (`InUse::answer`) without
//! passing through rmcp's session worker, whose tasks, channels and message
//! parsing cost several times the call itself. Whatever the fast path is not
//! sure it would answer exactly as rmcp does is left to rmcp.
//!
//! Idleness is seam's, not rmcp's: rmcp's own keep-alive counts only what
//! passes through its worker, so it would close a session that the fast path
//! keeps busy. A session is idle while no request of it is in progress and
//! none has ended for `session_idle_timeout` (the live generation's: it
//! follows reloads).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{ACCEPT, CONTENT_TYPE, HOST};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse as _, Response};
use futures::StreamExt as _;
use rmcp::Peer;
use rmcp::service::RoleServer;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::gateway::{Answer, Gateway, PlainCall, Running, for_session_peer};
use seam_engine::surface::Roots;

/// The header that names a request's session.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The session a request names, if its header reads as text.
pub fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
}

pub struct Sessions {
    open: Mutex<HashMap<Arc<str>, Session>>,
    /// `session_idle_timeout` in milliseconds, as the live generation has it.
    idle_timeout: AtomicU64,
    epoch: Instant,
    /// Rung when a session opens or the timeout changes, so that the reaper looks again.
    wake: tokio::sync::Notify,
    /// seam stops: the calls answered here end, as rmcp's handlers do.
    stop: CancellationToken,
}

struct Session {
    /// The agent's session manager, which closes it.
    manager: Arc<LocalSessionManager>,
    agent: String,
    used: Arc<Use>,
    /// Set once the client has said `notifications/initialized`.
    link: Option<Arc<Link>>,
}

/// A session's use: when a request of it last began or ended (milliseconds
/// since the table's epoch), and how many are in progress.
struct Use {
    last: AtomicU64,
    busy: AtomicUsize,
}

/// What answering a call of a session takes.
struct Link {
    gateway: Gateway,
    peer: Peer<RoleServer>,
    /// The calls answered here; cancelled together when the session ends.
    running: Running,
    /// The streams of long calls answered here, by number (event id `seam-<n>`),
    /// kept so that a client whose connection drops can resume one.
    streams: Mutex<HashMap<u64, Arc<LongCall>>>,
    next_stream: AtomicU64,
}

/// A long call's answer, for the newest stream of it (the POST's, or a GET
/// resuming it): one message goes to one stream, and the newest is the one a
/// client is reading (an older one may be a dead connection not yet noticed).
struct LongCall {
    /// `None` while the call runs; then the answer, or `None` in it for a call cancelled (not answered).
    answer: tokio::sync::watch::Receiver<Option<Option<axum::body::Bytes>>>,
    /// How many streams of it have opened; the newest sends the answer.
    streams_opened: AtomicU64,
}

impl Session {
    /// The session is gone from the table: calls answered here for it end.
    fn ended(self) -> Arc<LocalSessionManager> {
        if let Some(link) = &self.link {
            link.running.end();
        }
        self.manager
    }
}

/// One request of a session, in progress for as long as this lives.
pub struct InUse {
    used: Arc<Use>,
    epoch: Instant,
    agent: String,
    link: Option<Arc<Link>>,
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.used.last.store(millis_since(self.epoch), Ordering::Relaxed);
        // Release: a reaper that sees the request ended sees when it ended.
        self.used.busy.fetch_sub(1, Ordering::Release);
    }
}

fn millis_since(epoch: Instant) -> u64 {
    millis(epoch.elapsed())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The protocol versions whose requests rmcp serves in a session without
/// checking anything against the body (no SEP-2243 headers, no `_meta`
/// protocol version): the versions before 2026-07-28.
const SESSION_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

impl Sessions {
    pub fn new(idle_timeout: Duration, stop: CancellationToken) -> Arc<Sessions> {
        Arc::new(Sessions {
            open: Mutex::default(),
            idle_timeout: AtomicU64::new(millis(idle_timeout)),
            epoch: Instant::now(),
            wake: tokio::sync::Notify::new(),
            stop,
        })
    }

    /// A reload changed `session_idle_timeout`: it applies to the sessions open
    /// as to new ones, each measured from its last request.
    pub fn set_idle_timeout(&self, idle_timeout: Duration) {
        let ms = millis(idle_timeout);
        if self.idle_timeout.swap(ms, Ordering::Relaxed) != ms {
            self.wake.notify_one();
        }
    }

    /// rmcp has opened a session for `agent` (its `initialize` was answered with this id).
    pub fn opened(&self, id: &str, agent: &str, manager: Arc<LocalSessionManager>) {
        let used = Arc::new(Use { last: AtomicU64::new(millis_since(self.epoch)), busy: AtomicUsize::new(0) });
        let session = Session { manager, agent: agent.to_owned(), used, link: None };
        self.open.lock().expect("sessions lock").insert(Arc::from(id), session);
        self.wake.notify_one();
    }

    /// The session's client said `notifications/initialized`: its calls may be
    /// answered here from now on. (Said again, it changes nothing: the calls
    /// running stay cancellable.)
    pub fn initialized(&self, id: &str, gateway: Gateway, peer: Peer<RoleServer>) {
        if let Some(session) = self.open.lock().expect("sessions lock").get_mut(id)
            && session.agent == gateway.agent
            && session.link.is_none()
        {
            tracing::debug!(session = id, "initialized: its plain calls are answered by seam");
            let running = Running::within(self.stop.child_token());
            session.link = Some(Arc::new(Link { gateway, peer, running, streams: Mutex::default(), next_stream: AtomicU64::new(0) }));
        }
    }

    /// The client ended the session of `agent` (rmcp answered its `DELETE`):
    /// no call of it is answered here any more, and those running end.
    pub fn ended(&self, id: &str, agent: &str) {
        let mut open = self.open.lock().expect("sessions lock");
        if open.get(id).is_some_and(|s| s.agent == agent)
            && let Some(session) = open.remove(id)
        {
            session.ended();
        }
    }

    /// Whether `agent` has the session open in this table.
    pub fn holds(&self, id: &str, agent: &str) -> bool {
        self.open.lock().expect("sessions lock").get(id).is_some_and(|s| s.agent == agent)
    }

    /// A request of the session begins; `None` for a session seam does not know.
    pub fn enter(&self, id: &str) -> Option<InUse> {
        let open = self.open.lock().expect("sessions lock");
        let session = open.get(id)?;
        session.used.busy.fetch_add(1, Ordering::Relaxed);
        session.used.last.store(millis_since(self.epoch), Ordering::Relaxed);
        Some(InUse { used: session.used.clone(), epoch: self.epoch, agent: session.agent.clone(), link: session.link.clone() })
    }

    /// Closes each session idle past the timeout, as they come due, until `stop`.
    pub async fn close_idle(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let timeout = self.idle_timeout.load(Ordering::Relaxed);
            let now = millis_since(self.epoch);
            let mut next: Option<u64> = None;
            let gone: Vec<(Arc<str>, Session)> = {
                let mut open = self.open.lock().expect("sessions lock");
                let ids: Vec<Arc<str>> = open
                    .iter()
                    .filter(|(_, session)| {
                        // A session whose handler has stopped has ended already (rmcp closed it).
                        let closed = session.link.as_ref().is_some_and(|link| link.peer.is_transport_closed());
                        // A busy session is looked at again once a timeout (at least a second) from now.
                        let due = if session.used.busy.load(Ordering::Acquire) > 0 {
                            now.saturating_add(timeout.max(1000))
                        } else {
                            session.used.last.load(Ordering::Relaxed).saturating_add(timeout)
                        };
                        if !closed && due > now {
                            next = Some(next.map_or(due, |n| n.min(due)));
                        }
                        closed || due <= now
                    })
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.into_iter().filter_map(|id| open.remove_entry(&id)).collect()
            };
            for (id, session) in gone {
                let manager = session.ended();
                // Each on its own: one session's worker slow to close holds up no other.
                tokio::spawn(async move {
                    match manager.close_session(&id).await {
                        Ok(()) => tracing::debug!(session = %id, "closed an idle session"),
                        Err(e) => tracing::warn!(session = %id, "closing an idle session: {e}"),
                    }
                });
            }
            // A deadline past what the clock can hold never comes due.
            let wake = next.and_then(|at| self.epoch.checked_add(Duration::from_millis(at)));
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.wake.notified() => {}
                _ = async { tokio::time::sleep_until(wake.expect("guarded")).await }, if wake.is_some() => {}
            }
        }
    }
}

impl InUse {
    /// Answers the request here when it is a plain `tools/call` of an
    /// initialized session of `agent` that rmcp would take as it is (the
    /// session stays in use until the call ends, and, for an answer given as
    /// JSON, until it is sent); `Err` gives the request back for rmcp.
    pub fn answer(
        self,
        agent: &str,
        headers: &HeaderMap,
        body: &[u8],
        hosts: &[String],
    ) -> Result<impl Future<Output = Response> + use<>, InUse> {
        let Some((link, call, roots)) = self.plain_call(agent, headers, body, hosts) else { return Err(self) };
        let (id, params) = (call.id.to_owned(), call.params);
        tracing::debug!(tool = %params.name, "a call answered by seam, not rmcp's session worker");
        let in_use = self;
        let session_link = link.clone();
        let mut call = Box::pin(async move {
            let _in_use = in_use;
            // Leaves `running` however the call ends, the client's connection dropping this future included.
            let running = link.running.start(&id);
            // The engine cancels its child on a timeout, which is answered; only the client (or the session's end) cancels `running.token`.
            let arguments = params.arguments.unwrap_or_default();
            let mut output = link.gateway.call_with_roots(&params.name, arguments, running.token.child_token(), roots).await;
            // A cancelled request is not answered.
            if running.token.is_cancelled() {
                return None;
            }
            for_session_peer(&mut output);
            Some(serde_json::to_vec(&Answer { jsonrpc: "2.0", id: &id, result: &output }).expect("an answer serializes"))
        });
        Ok(async move {
            match tokio::time::timeout(crate::http::JSON_PATIENCE, &mut call).await {
                Ok(Some(answer)) => {
                    let mut response = Response::new(Body::from(answer));
                    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(JSON_TYPE));
                    *response.status_mut() = StatusCode::OK;
                    response
                }
                // The stream of a cancelled request ends without an event.
                Ok(None) => empty_stream(),
                // A long call goes on by itself, so that a client whose connection drops may resume its stream.
                Err(_) => {
                    let link = session_link;
                    let number = link.next_stream.fetch_add(1, Ordering::Relaxed);
                    let (answered, answer) = tokio::sync::watch::channel(None);
                    let long = Arc::new(LongCall { answer, streams_opened: AtomicU64::new(0) });
                    link.streams.lock().expect("streams lock").insert(number, long.clone());
                    tokio::spawn(async move {
                        let answer = call.await.map(axum::body::Bytes::from);
                        let cancelled = answer.is_none();
                        answered.send_replace(Some(answer));
                        // An answer is kept for a client to resume until the session ends or the window
                        // passes: that a stream sent it does not say the client read it.
                        if !cancelled {
                            tracing::debug!(stream = number, "a long call answered: its answer is kept for a resume");
                            tokio::select! {
                                _ = link.running.session_ended() => {}
                                _ = tokio::time::sleep(RESUME_WINDOW) => {}
                            }
                        }
                        link.streams.lock().expect("streams lock").remove(&number);
                    });
                    stream_of(number, long, ())
                }
            }
        })
    }

    /// A GET resuming the stream of a long call answered here (`Last-Event-ID:
    /// seam-<n>`, in this session of `agent`, accepting SSE, at a session
    /// protocol version) gets a stream that sends the answer when it comes
    /// (it is kept for [`RESUME_WINDOW`] from then). A stream no longer kept
    /// (a cancelled call's, or one past the window) gets an empty stream
    /// without an id, as rmcp answers a resume it cannot serve: a 404 would
    /// tell the client its session is gone. `Err` gives any other request back
    /// for rmcp (an ended session's included: rmcp answers 404).
    pub fn resume(self, agent: &str, headers: &HeaderMap) -> Result<Response, InUse> {
        let Some(number) = resumed_stream(headers).filter(|_| session_version(headers)) else { return Err(self) };
        let accepts_sse = headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|e| e.split(';').next().unwrap_or(e).trim().eq_ignore_ascii_case("text/event-stream")));
        let Some(link) = self.link.clone().filter(|_| self.agent == agent && accepts_sse) else { return Err(self) };
        let long = link.streams.lock().expect("streams lock").get(&number).cloned();
        tracing::debug!(stream = number, kept = long.is_some(), "a client resumes a long call's stream");
        match long {
            Some(long) => Ok(stream_of(number, long, self)),
            None => Ok(empty_stream()),
        }
    }

    /// The link, the call and its roots when the request is one seam answers.
    fn plain_call<'b>(
        &self,
        agent: &str,
        headers: &HeaderMap,
        body: &'b [u8],
        hosts: &[String],
    ) -> Option<(Arc<Link>, PlainCall<'b>, Roots)> {
        let link = self.link.clone().filter(|_| self.agent == agent)?;
        if !plain_headers(headers, hosts) {
            return None;
        }
        let call = PlainCall::of(body)?;
        // An agent a reload removed has no endpoint any more (rmcp's route answers 404).
        let agent_known = link.gateway.deployment.live().is_some_and(|g| g.resolved.agents.contains_key(agent));
        if !agent_known || link.peer.is_transport_closed() {
            return None;
        }
        let roots = link.gateway.roots_at_hand(&link.peer, &call.params.name)?;
        Some((link, call, roots))
    }

    /// rmcp accepted (202) a notification in this session of `agent`: a
    /// `notifications/cancelled` of a call answered here cancels it. (rmcp
    /// finds nothing of its own.) Only when the request named a session's
    /// protocol version, or none: at a later one rmcp takes the notification
    /// outside any session.
    pub fn accepted(&self, agent: &str, session_era: bool, body: &[u8]) {
        let Some(link) = self.link.as_ref().filter(|_| self.agent == agent && session_era) else { return };
        if let Some(peek) = seam_mcp::lane::Peek::of(body)
            && peek.id.is_none()
            && peek.method.as_deref() == Some("notifications/cancelled")
            && let Some(params) = peek.params
        {
            link.running.cancel(params);
        }
    }
}

const JSON_TYPE: &str = "application/json";
/// How often a long call's stream says it is alive (rmcp's default).
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How long a client is told to wait before resuming a dropped stream (rmcp's default).
const SSE_RETRY: Duration = Duration::from_secs(3);
/// How long a long call's answer waits for a client to resume its stream.
const RESUME_WINDOW: Duration = Duration::from_secs(300);

/// An SSE stream that ends without an event: a cancelled call's, or a resume of nothing kept.
fn empty_stream() -> Response {
    Sse::new(futures::stream::empty::<Result<Event, std::convert::Infallible>>()).into_response()
}

/// The number of the stream a request resumes, when its `Last-Event-ID` is
/// one seam gave (`seam-<n>`; rmcp's own ids are digits and `/`).
fn resumed_stream(headers: &HeaderMap) -> Option<u64> {
    let id = headers.get("last-event-id")?.to_str().ok()?;
    // Digits only: `parse` alone would take a sign.
    id.strip_prefix("seam-").filter(|d| d.bytes().all(|b| b.is_ascii_digit()))?.parse().ok()
}

/// A long call's stream, from the start or resumed: first a priming event
/// (the stream's id, and when to retry), so that the client may resume it if
/// it drops; keep-alives; then the answer when it comes, unless a newer
/// stream of the call has opened meanwhile (nothing more for a call
/// cancelled). `held` lives as long as the stream (the request's use of its
/// session).
fn stream_of(number: u64, long: Arc<LongCall>, held: impl Send + 'static) -> Response {
    // Written by hand: axum's `Event` writes no `data:` line for empty data, and a client
    // (the SDK's parser, as a browser's) reads the id of an event only when it has one.
    let priming = format!("id: seam-{number}\nretry: {}\ndata:\n\n", SSE_RETRY.as_millis());
    let this = long.streams_opened.fetch_add(1, Ordering::AcqRel) + 1;
    let answer = async move {
        let _held = held;
        let mut answer = long.answer.clone();
        let answer = answer.wait_for(Option::is_some).await.ok().and_then(|a| a.clone().flatten());
        let newest = long.streams_opened.load(Ordering::Acquire) == this;
        answer.filter(|_| newest).map(|a| Ok::<_, std::convert::Infallible>(Event::default().data(String::from_utf8_lossy(&a))))
    };
    let events = futures::stream::once(answer).filter_map(std::future::ready);
    Sse::new(events).keep_alive(KeepAlive::new().interval(SSE_KEEP_ALIVE)).into_response().map(|body| {
        let priming = futures::stream::once(std::future::ready(Ok::<_, axum::Error>(axum::body::Bytes::from(priming))));
        Body::from_stream(priming.chain(body.into_data_stream()))
    })
}

/// Whether the headers are ones rmcp takes a request in a session with, checked
/// no more loosely than rmcp checks them: a Host that parses and is allowed;
/// `Accept` naming both JSON and SSE, without parameters; a JSON body; a
/// protocol version of the session era, or none.
fn plain_headers(headers: &HeaderMap, hosts: &[String]) -> bool {
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).and_then(|h| axum::http::uri::Authority::try_from(h).ok());
    let host_allowed = host.is_some_and(|a| {
        let name = a.host().trim_start_matches('[').trim_end_matches(']');
        hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(name))
    });
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else { return false };
        for entry in value.split(',') {
            let entry = entry.trim();
            if entry.contains([';', '"']) {
                return false;
            }
            json |= entry.eq_ignore_ascii_case(JSON_TYPE);
            sse |= entry.eq_ignore_ascii_case("text/event-stream");
        }
    }
    host_allowed && json && sse && json_body(headers) && session_version(headers)
}

/// Whether the request says its body is JSON, as rmcp reads `Content-Type`.
pub fn json_body(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or(v).trim().eq_ignore_ascii_case(JSON_TYPE))
}

/// Whether the request's protocol version, if it names one, is of the session era.
pub fn session_version(headers: &HeaderMap) -> bool {
    let mut versions = headers.get_all("mcp-protocol-version").iter();
    match (versions.next(), versions.next()) {
        (None, _) => true,
        (Some(v), None) => SESSION_VERSIONS.iter().any(|known| v.as_bytes() == known.as_bytes()),
        (Some(_), Some(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{SESSION_VERSIONS, Sessions, plain_headers, resumed_stream};
    use axum::http::HeaderMap;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use std::sync::Arc;
    use std::time::Duration;
    use tokio_util::sync::CancellationToken;

    /// Paused time moves `ms` on; then yields, so that a reaper due at that
    /// instant has run by the time of the check.
    async fn after(ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    /// A table with `idle_timeout` and its reaper running (until the token is
    /// cancelled); a manager to open sessions with.
    fn reaped(idle_timeout: Duration) -> (Arc<Sessions>, Arc<LocalSessionManager>, CancellationToken) {
        let stop = CancellationToken::new();
        let sessions = Sessions::new(idle_timeout, stop.child_token());
        tokio::spawn(sessions.clone().close_idle(stop.clone()));
        (sessions, Arc::new(LocalSessionManager::default()), stop)
    }

    fn is_open(sessions: &Sessions, id: &str) -> bool {
        sessions.open.lock().unwrap().contains_key(id)
    }

    /// `session_idle_timeout` at its boundary, in paused time: a session is
    /// closed once it has had no request for the timeout, not a millisecond
    /// sooner; a request in progress keeps it open however long it takes,
    /// and the timeout runs again from the request's end.
    #[tokio::test(start_paused = true)]
    async fn a_session_is_closed_at_its_idle_timeout_and_never_while_a_request_is_in_progress() {
        let (sessions, manager, stop) = reaped(Duration::from_secs(1));
        sessions.opened("idle", "default", manager.clone());
        sessions.opened("busy", "default", manager);
        let request = sessions.enter("busy").expect("a session seam knows");
        let open = |id: &str| is_open(&sessions, id);

        after(999).await;
        assert!(open("idle"), "at 999 ms of 1000");
        after(1).await;
        assert!(!open("idle"), "closed at 1000 ms");
        after(5_000).await;
        assert!(open("busy"), "a request in progress for 6 s keeps its session open");
        drop(request);
        after(999).await;
        assert!(open("busy"), "999 ms after its request ended");
        after(1).await;
        assert!(!open("busy"), "closed 1000 ms after its request ended");
        stop.cancel();
    }

    /// A reload's `session_idle_timeout` applies to the sessions already open,
    /// each measured from its last request: shortened, a session idle past the
    /// new timeout closes at once; lengthened, one closes at the new timeout.
    #[tokio::test(start_paused = true)]
    async fn a_changed_idle_timeout_applies_to_the_sessions_already_open() {
        let (sessions, manager, stop) = reaped(Duration::from_secs(300));
        sessions.opened("early", "default", manager.clone());
        let open = |id: &str| is_open(&sessions, id);

        after(2_000).await;
        assert!(open("early"), "idle 2 s of 300");
        sessions.set_idle_timeout(Duration::from_secs(1));
        after(0).await;
        assert!(!open("early"), "idle 2 s past a new timeout of 1 s: closed at once");
        sessions.opened("late", "default", manager);
        sessions.set_idle_timeout(Duration::from_secs(10));
        after(9_999).await;
        assert!(open("late"));
        after(1).await;
        assert!(!open("late"), "closed at the new timeout");
        stop.cancel();
    }

    /// Only `seam-` and digits name a stream seam resumes; anything else is rmcp's.
    #[test]
    fn only_seams_own_event_ids_name_a_stream_it_resumes() {
        let of = |id: &'static str| resumed_stream(&headers(&[("last-event-id", id)]));
        assert_eq!(of("seam-0"), Some(0));
        assert_eq!(of("seam-18446744073709551615"), Some(u64::MAX));
        for other in ["seam-", "seam-+5", "seam--1", "seam-1a", "seam-18446744073709551616", "0/1", "5", "SEAM-1"] {
            assert_eq!(of(other), None, "{other}");
        }
        assert_eq!(resumed_stream(&HeaderMap::new()), None);
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, v.parse().unwrap());
        }
        map
    }

    const PLAIN: [(&str, &str); 4] = [
        ("host", "127.0.0.1:8931"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2025-11-25"),
    ];

    #[test]
    fn only_headers_rmcp_would_take_as_they_are_are_plain() {
        let hosts = ["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
        assert!(plain_headers(&headers(&PLAIN), &hosts));
        assert!(plain_headers(&headers(&PLAIN[..3]), &hosts), "no version header: the session's");
        for version in SESSION_VERSIONS {
            let mut h = headers(&PLAIN[..3]);
            h.insert("mcp-protocol-version", version.parse().unwrap());
            assert!(plain_headers(&h, &hosts), "{version}");
        }
        let mut ipv6 = headers(&PLAIN[1..]);
        ipv6.insert("host", "[::1]:8931".parse().unwrap());
        assert!(plain_headers(&ipv6, &hosts));
        let split_accept = headers(&[PLAIN[0], ("accept", "application/json"), ("accept", "text/event-stream"), PLAIN[2]]);
        assert!(plain_headers(&split_accept, &hosts), "Accept in two headers");

        let changed = |name: &'static str, value: &'static str| {
            let mut h = headers(&PLAIN);
            h.insert(name, value.parse().unwrap());
            plain_headers(&h, &hosts)
        };
        assert!(!changed("mcp-protocol-version", "2026-07-28"), "a version with standard headers");
        assert!(!changed("mcp-protocol-version", "1999-01-01"), "an unknown version");
        assert!(!changed("accept", "application/json"), "no SSE");
        assert!(!changed("accept", "*/*"), "a wildcard");
        assert!(!changed("accept", "application/json, text/event-stream;q=0"), "a parameter");
        assert!(!changed("content-type", "text/plain"));
        assert!(!changed("host", "evil.example"));
        assert!(!changed("host", "[::1:8931"), "a Host that does not parse");
        assert!(!plain_headers(&headers(&PLAIN[1..]), &hosts), "no Host");
        let mut two_versions = headers(&PLAIN);
        two_versions.append("mcp-protocol-version", "2025-11-25".parse().unwrap());
        assert!(!plain_headers(&two_versions, &hosts));
    }
}

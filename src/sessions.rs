//! seam's own view of the MCP sessions it serves over HTTP (rmcp runs them):
//! when each was last used, so that seam closes a session left idle past
//! `session_idle_timeout`.
//!
//! Idleness is seam's, not rmcp's: rmcp reads its own keep-alive only when a
//! session's worker starts, so a reload's new timeout would reach new sessions
//! only. A session is idle while no request of it is in progress and none has
//! ended for `session_idle_timeout` (the live generation's: it follows
//! reloads).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use rmcp::transport::common::http_header::{HEADER_SESSION_ID, JSON_MIME_TYPE};
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The session a request names, if its header reads as text.
pub fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers.get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok())
}

pub struct Sessions {
    open: Mutex<HashMap<Arc<str>, Session>>,
    /// `session_idle_timeout` in milliseconds, as the live generation has it.
    idle_timeout: AtomicU64,
    epoch: Instant,
    /// Rung when a session opens or the timeout changes, so that the reaper looks again.
    wake: tokio::sync::Notify,
}

struct Session {
    /// The agent's session manager, which closes it.
    manager: Arc<LocalSessionManager>,
    agent: String,
    used: Arc<Use>,
    /// Its place among the open sessions (`crate::tally`), given back when it leaves this table.
    _place: crate::tally::Held,
}

/// A session's use: when a request of it last began or ended (milliseconds
/// since the table's epoch), and how many are in progress.
struct Use {
    last: AtomicU64,
    busy: AtomicUsize,
}

/// One request of a session, in progress for as long as this lives.
pub struct InUse {
    used: Arc<Use>,
    epoch: Instant,
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

impl Sessions {
    pub fn new(idle_timeout: Duration) -> Arc<Sessions> {
        Arc::new(Sessions {
            open: Mutex::default(),
            idle_timeout: AtomicU64::new(millis(idle_timeout)),
            epoch: Instant::now(),
            wake: tokio::sync::Notify::new(),
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

    /// rmcp has opened a session for `agent` (its `initialize` was answered with this id), in
    /// the `place` the gate took for it: the session is counted until it leaves this table
    /// (ended by its client, or closed idle).
    pub fn opened(&self, id: &str, agent: &str, manager: Arc<LocalSessionManager>, mut place: crate::tally::Held) {
        let used = Arc::new(Use { last: AtomicU64::new(millis_since(self.epoch)), busy: AtomicUsize::new(0) });
        place.opened();
        let session = Session { manager, agent: agent.to_owned(), used, _place: place };
        self.open.lock().expect("sessions lock").insert(Arc::from(id), session);
        self.wake.notify_one();
    }

    /// The client ended the session of `agent` (rmcp answered its `DELETE`).
    pub fn ended(&self, id: &str, agent: &str) {
        let mut open = self.open.lock().expect("sessions lock");
        if open.get(id).is_some_and(|s| s.agent == agent) {
            open.remove(id);
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
        Some(InUse { used: session.used.clone(), epoch: self.epoch })
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
                        // A busy session is looked at again once a timeout (at least a second) from now.
                        let due = if session.used.busy.load(Ordering::Acquire) > 0 {
                            now.saturating_add(timeout.max(1000))
                        } else {
                            session.used.last.load(Ordering::Relaxed).saturating_add(timeout)
                        };
                        if due > now {
                            next = Some(next.map_or(due, |n| n.min(due)));
                        }
                        due <= now
                    })
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.into_iter().filter_map(|id| open.remove_entry(&id)).collect()
            };
            for (id, Session { manager, .. }) in gone {
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

/// Whether the request says its body is JSON, as rmcp reads `Content-Type`.
pub fn json_body(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or(v).trim().eq_ignore_ascii_case(JSON_MIME_TYPE))
}

#[cfg(test)]
mod tests {
    use super::Sessions;
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
        let sessions = Sessions::new(idle_timeout);
        tokio::spawn(sessions.clone().close_idle(stop.clone()));
        (sessions, Arc::new(LocalSessionManager::default()), stop)
    }

    /// A place among the open sessions, from a tally of its own.
    fn place() -> crate::tally::Held {
        let tally = Arc::new(crate::tally::Tally::default());
        tally.hold("default", crate::tally::Holding::Session, &seam_engine::model::ServeLimits::default()).unwrap()
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
        sessions.opened("idle", "default", manager.clone(), place());
        sessions.opened("busy", "default", manager, place());
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
        sessions.opened("early", "default", manager.clone(), place());
        let open = |id: &str| is_open(&sessions, id);

        after(2_000).await;
        assert!(open("early"), "idle 2 s of 300");
        sessions.set_idle_timeout(Duration::from_secs(1));
        after(0).await;
        assert!(!open("early"), "idle 2 s past a new timeout of 1 s: closed at once");
        sessions.opened("late", "default", manager, place());
        sessions.set_idle_timeout(Duration::from_secs(10));
        after(9_999).await;
        assert!(open("late"));
        after(1).await;
        assert!(!open("late"), "closed at the new timeout");
        stop.cancel();
    }
}

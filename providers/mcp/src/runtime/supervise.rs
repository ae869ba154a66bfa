//! How a mount stays connected: one supervisor task per mount that connects, brings the
//! connection up (listen, sync, restore), watches it until it closes, and plans the
//! next attempt with a bounded backoff. While a connection is up, each event the
//! supervisor waits on has a function of its own (`watch`).

use super::*;

/// A connection's `subscriptions/listen` stream (a 2026-07-28 server's), when to open it
/// again after it ended, and where what the server says sends the lists to re-sync.
struct Listen {
    stream: Option<Listening>,
    retry_at: Option<tokio::time::Instant>,
    resync: mpsc::UnboundedSender<Changed>,
}

/// Why the watch over an up connection ended.
enum Closed {
    /// The service ended by itself (the transport closed).
    Ended,
    /// The mount stops, or the connection is treated as closed (a failed ping, a transport error).
    Dropped,
}

impl McpMount {
    pub(super) fn delay(&self, attempt: u32) -> Duration {
        let r = &self.common.reconnect;
        backoff(r.initial_delay, r.max_delay, attempt)
    }

    pub(super) async fn supervise(self: Arc<Self>, activated: oneshot::Sender<()>) {
        let mut activated = Some(activated);
        let mut failures: u32 = 0;
        loop {
            // A scope asked of an earlier connection is asked again of this one, if at all.
            self.step_up.send_replace(None);
            let (resync, resyncs) = mpsc::unbounded_channel();
            let attempt = tokio::select! {
                _ = self.stop.cancelled() => return,
                r = self.connect(resync.clone()) => r,
            };
            // A mount that lacks only a person's login waits for it, however long: not a failure to count.
            let mut awaited = None;
            let mut connection = match attempt {
                Ok(c) => Some(c),
                Err(Failed { error, proven: true }) => {
                    if let ConnectError::OAuth { source, .. } = &error {
                        awaited = source.awaits_login();
                    }
                    match awaited {
                        // Degraded, not failed: all it lacks is a person's login, which it takes when it comes.
                        Some(_) => {
                            self.status.set_coded(State::Degraded, Some(crate::codes::MCP_OAUTH_LOGIN_NEEDED.code), Some(error.to_string()))
                        }
                        None => self.status.set(self.outage_state(), Some(error.to_string())),
                    }
                    None
                }
                Err(Failed { error, proven: false }) => {
                    self.give_up(&format!("{error}; the server process could not be proven to have exited, so no other is started"));
                    return;
                }
            };
            let mut listen = Listen { stream: None, retry_at: None, resync };
            let up_since = match &mut connection {
                Some(c) => self.bring_up(c.service.peer(), &mut listen).await,
                None => None,
            };
            // A server that asked for more scope to list: the mount waits for a person's login with it.
            if up_since.is_none() && awaited.is_none() {
                awaited = self.step_up.borrow().clone().map(crate::oauth::Awaited::Scope);
            }
            // The first attempt, and it did not come up.
            let failed_to_start = activated.is_some() && up_since.is_none();
            if let Some(tx) = activated.take() {
                let _ = tx.send(());
            }
            let proven = match connection {
                Some(connection) => self.serve_until_closed(connection, up_since.is_some(), listen, resyncs).await,
                None => true,
            };
            if self.stop.is_cancelled() {
                return;
            }
            if !proven {
                self.give_up("the previous server process could not be proven to have exited; not starting another");
                return;
            }
            if failed_to_start && self.common.required {
                // A required mount that did not come up rejects the reload that built it and is disposed
                // with it: there is no reconnect to plan, nor one to announce.
                return;
            }
            if let Some(awaited) = awaited {
                tokio::select! {
                    _ = self.stop.cancelled() => return,
                    _ = awaited.come(self.common.reconnect.max_delay.to_std()) => continue,
                }
            }
            let Some(delay) = self.plan_reconnect(&mut failures, up_since) else { return };
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
            self.counters.reconnecting();
        }
    }

    /// A new connection made ready: a 2026-07-28 server's listen stream opened before the
    /// lists are read (so that no change falls between), every list synced, calls let
    /// through, and what clients want asked again. When it came up, if it did.
    async fn bring_up(&self, peer: &Peer<RoleClient>, listen: &mut Listen) -> Option<Instant> {
        self.listen_again(peer, &mut listen.stream, &mut listen.retry_at, &listen.resync).await;
        if let Err(e) = self.sync(peer, Changed::ALL).await {
            match &e {
                SyncError::ListFailed { source, method } if let Some(scope) = self.step_up_asked(source) => {
                    self.wait_for_scope(&scope, &format!("`{method}`"));
                }
                _ => self.status.set(self.outage_state(), Some(format!("tool discovery failed: {e}"))),
            }
            return None;
        }
        self.connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.connection.lock().expect("connection lock").peer = Some(peer.clone());
        self.status.set(State::Ready, None);
        self.cx.changes.notify();
        self.restore(peer).await;
        Some(Instant::now())
    }

    /// Watches a connection that came `up` until it closes, then closes it and reaps its
    /// process: whether that process is proven gone.
    async fn serve_until_closed(
        &self,
        connection: McpConnection,
        up: bool,
        listen: Listen,
        resyncs: mpsc::UnboundedReceiver<Changed>,
    ) -> bool {
        let McpConnection { service, child, stderr } = connection;
        let peer = service.peer().clone();
        let cancel = service.cancellation_token();
        let mut serving = std::pin::pin!(service.waiting());
        let closed = if up { self.watch(&peer, serving.as_mut(), listen, resyncs).await } else { Closed::Dropped };
        self.connection.lock().expect("connection lock").peer = None;
        cancel.cancel();
        if matches!(closed, Closed::Dropped) {
            let _ = tokio::time::timeout(EXIT_GRACE, &mut serving).await;
        }
        self.reap(child, &stderr).await
    }

    /// Waits on everything an up connection may meet, each in a function of its own,
    /// until it closes.
    async fn watch<S: Future>(
        &self,
        peer: &Peer<RoleClient>,
        mut serving: std::pin::Pin<&mut S>,
        mut listen: Listen,
        mut resyncs: mpsc::UnboundedReceiver<Changed>,
    ) -> Closed {
        // Over Streamable HTTP nothing closes when the server dies; a ping finds out without waiting for a call.
        let mut liveness = tokio::time::interval(self.liveness_interval());
        liveness.reset();
        let mut workspace = self.cx.live_workspace.clone();
        let mut root = self.cx.workspace.clone();
        let mut step_up = self.step_up.subscribe();
        loop {
            let asked = step_up.borrow_and_update().clone();
            tokio::select! {
                heard = next_heard(&mut listen.stream) => self.on_heard(heard, &mut listen),
                // A deadline, not a sleep: the other branches must not push it back.
                _ = tokio::time::sleep_until(listen.retry_at.unwrap_or_else(tokio::time::Instant::now)), if listen.retry_at.is_some() => {
                    self.listen_again(peer, &mut listen.stream, &mut listen.retry_at, &listen.resync).await;
                }
                _ = self.relisten.notified() => self.listen_again(peer, &mut listen.stream, &mut listen.retry_at, &listen.resync).await,
                _ = liveness.tick(), if matches!(self.transport, Transport::Http(_)) => if !self.answers_ping(peer).await {
                    return Closed::Dropped;
                },
                _ = self.stop.cancelled() => return Closed::Dropped,
                _ = serving.as_mut() => return Closed::Ended,
                _ = self.broken.notified() => {
                    tracing::warn!(mount = %self.id, "transport error; treating the connection as closed");
                    return Closed::Dropped;
                }
                Ok(()) = workspace.changed() => {
                    let now = workspace.borrow_and_update().clone();
                    self.on_workspace_moved(peer, &mut root, now).await;
                }
                Some(changed) = resyncs.recv() => self.on_resync(peer, changed, &mut resyncs).await,
                // A scope asked for since the wait below began: wait for its login instead.
                Ok(()) = step_up.changed() => {}
                given = scope_given(asked) => {
                    // The login's tokens are the connection's on its next request (rmcp reads the
                    // store); a scope asked for meanwhile is still asked.
                    let cleared = self.step_up.send_if_modified(|now| {
                        let done = now.as_ref() == Some(&given);
                        if done {
                            *now = None;
                        }
                        done
                    });
                    if cleared {
                        self.status.set(State::Ready, None);
                    }
                }
            }
        }
    }

    /// What the server said on its listen stream; when the stream ended, it is opened
    /// again after a liveness interval (and then every list is asked for again).
    fn on_heard(&self, heard: Option<ServerNotification>, listen: &mut Listen) {
        match heard {
            Some(notification) => self.hear(notification, &listen.resync),
            None => {
                let end = listen.stream.take().and_then(|l| l.stream.end().cloned());
                tracing::info!(mount = %self.id, "subscriptions/listen ended ({end:?}); listening again shortly");
                listen.retry_at = Some(tokio::time::Instant::now() + self.liveness_interval());
            }
        }
    }

    /// Whether the server answers a ping (any answer, an error included, is a server
    /// alive). 2026-07-28 has no `ping`: a `server/discover`, sent past rmcp's cache, asks the same.
    async fn answers_ping(&self, peer: &Peer<RoleClient>) -> bool {
        let ping = if speaks_modern(peer) {
            ClientRequest::DiscoverRequest(rmcp::model::DiscoverRequest::new(rmcp::model::DiscoverRequestParams {}))
        } else {
            ClientRequest::PingRequest(rmcp::model::PingRequest { method: Default::default(), extensions: Default::default() })
        };
        match tokio::time::timeout(self.liveness_interval(), peer.send_request(ping)).await {
            Ok(Ok(_) | Err(ServiceError::McpError(_))) => true,
            // A client-credentials token refused (revoked) is exchanged again for the next request.
            Ok(Err(e)) if self.exchanges_credentials() && crate::failure::login_asked(&e) => true,
            Ok(Err(e)) => {
                tracing::warn!(mount = %self.id, "ping failed ({}); treating the connection as closed", InWords(&e));
                false
            }
            Err(_) => {
                tracing::warn!(mount = %self.id, "ping unanswered; treating the connection as closed");
                false
            }
        }
    }

    /// A reload moved the workspace root and kept this mount: the server is told its roots changed.
    async fn on_workspace_moved(&self, peer: &Peer<RoleClient>, root: &mut Option<std::path::PathBuf>, now: Option<std::path::PathBuf>) {
        if now == *root {
            return;
        }
        *root = now;
        if let Err(e) = peer.notify_roots_list_changed().await {
            tracing::warn!(mount = %self.id, "roots/list_changed could not be sent: {}", InWords(&e));
        }
    }

    /// The server said lists changed: one sync lists each changed list as it is now, so
    /// the changes said while one ran ask for no more.
    async fn on_resync(&self, peer: &Peer<RoleClient>, mut changed: Changed, resyncs: &mut mpsc::UnboundedReceiver<Changed>) {
        while let Ok(more) = resyncs.try_recv() {
            changed = changed.and(more);
        }
        if let Err(e) = self.sync(peer, changed).await {
            tracing::warn!(mount = %self.id, "re-sync failed, keeping the previous tools: {e}");
        }
    }

    /// After a connection closed (up since `up_since`, if it came up): the wait before
    /// the next attempt, or `None` when the budget is spent (the mount gives up). A
    /// connection that stayed up for `max_delay` resets the budget.
    fn plan_reconnect(&self, failures: &mut u32, up_since: Option<Instant>) -> Option<Duration> {
        if up_since.is_some_and(|t| t.elapsed() >= self.common.reconnect.max_delay.to_std()) {
            *failures = 0;
        }
        *failures += 1;
        let r = &self.common.reconnect;
        if !r.enabled || *failures > r.max_attempts {
            let why =
                if r.enabled { format!("gave up after {} reconnect attempts", r.max_attempts) } else { "reconnect is disabled".to_owned() };
            let detail = self.status.get().detail.map_or(why.clone(), |d| format!("{why}; last error: {d}"));
            self.give_up(&detail);
            return None;
        }
        if up_since.is_some() {
            self.status.set(self.outage_state(), Some("connection closed; reconnecting".to_owned()));
            self.cx.changes.notify();
        }
        let delay = self.delay(*failures);
        tracing::info!(
            mount = %self.id,
            attempt = *failures,
            max_attempts = r.max_attempts,
            delay_ms = delay.as_millis() as u64,
            "reconnecting in {delay:?} (attempt {failures} of {})",
            r.max_attempts
        );
        Some(delay)
    }

    /// How often an idle Streamable HTTP connection is pinged: `reconnect.max_delay`, within 1s..=30s.
    pub(super) fn liveness_interval(&self) -> Duration {
        ping_interval(self.common.reconnect.max_delay)
    }

    /// Degraded while the last good tools are still listed, failed when there are none.
    pub(super) fn outage_state(&self) -> State {
        if self.imports.lock().expect("imports lock").specs.is_empty() { State::Failed } else { State::Degraded }
    }

    /// The budget is spent: unregister every tool and stop until the next reload.
    pub(super) fn give_up(&self, detail: &str) {
        *self.imports.lock().expect("imports lock") = Arc::default();
        self.status.set(State::Failed, Some(detail.to_owned()));
        self.cx.changes.notify();
        tracing::error!(mount = %self.id, state = "failed", "{detail}");
    }
}

/// The wait before reconnect attempt `attempt` (1 for the first): `min(max_delay,
/// initial_delay·2^(attempt−1))`, saturating rather than overflowing at any attempt.
pub(super) fn backoff(initial_delay: seam_engine::units::Duration, max_delay: seam_engine::units::Duration, attempt: u32) -> Duration {
    let factor = 2u64.saturating_pow(attempt.saturating_sub(1));
    Duration::from_millis(initial_delay.as_millis().saturating_mul(factor).min(max_delay.as_millis()))
}

/// How often an idle Streamable HTTP connection is pinged: `max_delay`, within 1s..=30s.
pub(super) fn ping_interval(max_delay: seam_engine::units::Duration) -> Duration {
    max_delay.to_std().clamp(Duration::from_secs(1), Duration::from_secs(30))
}

/// Resolves, with what was asked, once a person logged in with the scope the server asked
/// for; never when none is asked for.
async fn scope_given(asked: Option<crate::oauth::ScopeAsked>) -> crate::oauth::ScopeAsked {
    match asked {
        Some(asked) => {
            crate::oauth::scope_given(&asked).await;
            asked
        }
        None => std::future::pending().await,
    }
}

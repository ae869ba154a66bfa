//! How a mount stays connected: one supervisor task per mount that connects, waits on the
//! connection, a resync or the stop, and reconnects with a bounded backoff.

use super::*;

impl McpMount {
    pub(super) fn delay(&self, attempt: u32) -> Duration {
        let r = &self.common.reconnect;
        backoff(r.initial_delay, r.max_delay, attempt)
    }

    pub(super) async fn supervise(self: Arc<Self>, activated: oneshot::Sender<()>) {
        let mut activated = Some(activated);
        let mut failures: u32 = 0;
        loop {
            let (resync_tx, mut resync_rx) = mpsc::unbounded_channel();
            let attempt = tokio::select! {
                _ = self.stop.cancelled() => return,
                r = self.connect(resync_tx.clone()) => r,
            };
            let mut connection = match attempt {
                Ok(c) => Some(c),
                Err(Failed { error, proven: true }) => {
                    self.status.set(self.outage_state(), Some(error.to_string()));
                    None
                }
                Err(Failed { error, proven: false }) => {
                    self.give_up(&format!("{error}; the server process could not be proven to have exited, so no other is started"));
                    return;
                }
            };
            let mut up_since = None;
            // A 2026-07-28 server says what changed on a stream the mount opens (`subscriptions/listen`),
            // opened before the lists are read so that no change falls between.
            let (mut listening, mut listen_retry_at) = (None, None);
            if let Some(c) = &mut connection {
                self.listen_again(c.service.peer(), &mut listening, &mut listen_retry_at, &resync_tx).await;
                match self.sync(&c.service.peer().clone(), Changed::ALL).await {
                    Ok(()) => {
                        self.connections.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        *self.link.lock().expect("link lock") = Some(c.service.peer().clone());
                        self.status.set(State::Ready, None);
                        self.cx.changes.notify();
                        up_since = Some(Instant::now());
                        self.restore(&c.service.peer().clone()).await;
                    }
                    Err(e) => self.status.set(self.outage_state(), Some(format!("tool discovery failed: {e}"))),
                }
            }
            // The first attempt, and it did not come up.
            let failed_to_start = activated.is_some() && up_since.is_none();
            if let Some(tx) = activated.take() {
                let _ = tx.send(());
            }
            let mut proven = true;
            if let Some(McpConnection { service, child, stderr, .. }) = connection {
                let peer = service.peer().clone();
                let mut cancel = Some(service.cancellation_token());
                let mut serving = std::pin::pin!(service.waiting());
                let mut ended = false;
                // Over Streamable HTTP nothing closes when the server dies; a ping finds out without waiting for a call.
                let mut liveness = tokio::time::interval(self.liveness_interval());
                liveness.reset();
                let mut workspace = self.cx.live_workspace.clone();
                let mut root = self.cx.workspace.clone();
                if up_since.is_some() {
                    loop {
                        tokio::select! {
                            heard = next_heard(&mut listening) => match heard {
                                Some(notification) => self.hear(notification, &resync_tx),
                                None => {
                                    // Ended: opened again after a liveness interval, and then every list asked for again.
                                    let end = listening.take().and_then(|l| l.stream.end().cloned());
                                    tracing::info!(mount = %self.id, "subscriptions/listen ended ({end:?}); listening again shortly");
                                    listen_retry_at = Some(tokio::time::Instant::now() + self.liveness_interval());
                                }
                            },
                            // A deadline, not a sleep: the other branches must not push it back.
                            _ = tokio::time::sleep_until(listen_retry_at.unwrap_or_else(tokio::time::Instant::now)), if listen_retry_at.is_some() => {
                                self.listen_again(&peer, &mut listening, &mut listen_retry_at, &resync_tx).await;
                            }
                            _ = self.relisten.notified() => {
                                self.listen_again(&peer, &mut listening, &mut listen_retry_at, &resync_tx).await;
                            }
                            _ = liveness.tick(), if matches!(self.transport, Transport::Http(_)) => {
                                // 2026-07-28 has no `ping`: a `server/discover`, sent past rmcp's cache, asks the same.
                                let ping = if speaks_modern(&peer) {
                                    ClientRequest::DiscoverRequest(rmcp::model::DiscoverRequest::new(rmcp::model::DiscoverRequestParams {}))
                                } else {
                                    ClientRequest::PingRequest(rmcp::model::PingRequest { method: Default::default(), extensions: Default::default() })
                                };
                                match tokio::time::timeout(self.liveness_interval(), peer.send_request(ping)).await {
                                    // Any answer, an error included, is a server alive.
                                    Ok(Ok(_) | Err(ServiceError::McpError(_))) => {}
                                    Ok(Err(e)) => { tracing::warn!(mount = %self.id, "ping failed ({}); treating the connection as closed", InWords(&e)); break }
                                    Err(_) => { tracing::warn!(mount = %self.id, "ping unanswered; treating the connection as closed"); break }
                                }
                            }
                            _ = self.stop.cancelled() => break,
                            _ = &mut serving => { ended = true; break }
                            _ = self.broken.notified() => {
                                tracing::warn!(mount = %self.id, "transport error; treating the connection as closed");
                                break
                            }
                            // A reload moved the workspace root and kept this mount: the server is told its roots changed.
                            Ok(()) = workspace.changed() => {
                                let now = workspace.borrow_and_update().clone();
                                if now != root {
                                    root = now;
                                    if let Err(e) = peer.notify_roots_list_changed().await {
                                        tracing::warn!(mount = %self.id, "roots/list_changed could not be sent: {}", InWords(&e));
                                    }
                                }
                            }
                            Some(mut changed) = resync_rx.recv() => {
                                // One sync lists each changed list as it is now: the changes said while one ran ask for no more.
                                while let Ok(more) = resync_rx.try_recv() {
                                    changed = changed.and(more);
                                }
                                if let Err(e) = self.sync(&peer, changed).await {
                                    tracing::warn!(mount = %self.id, "re-sync failed, keeping the previous tools: {e}");
                                }
                            }
                        }
                    }
                }
                *self.link.lock().expect("link lock") = None;
                if let Some(cancel) = cancel.take() {
                    cancel.cancel();
                }
                if !ended {
                    let _ = tokio::time::timeout(EXIT_GRACE, &mut serving).await;
                }
                proven = self.reap(child, &stderr).await;
            }
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
            if up_since.is_some_and(|t| t.elapsed() >= self.common.reconnect.max_delay.to_std()) {
                failures = 0;
            }
            failures += 1;
            let r = &self.common.reconnect;
            if !r.enabled || failures > r.max_attempts {
                let why = if r.enabled {
                    format!("gave up after {} reconnect attempts", r.max_attempts)
                } else {
                    "reconnect is disabled".to_owned()
                };
                let detail = self.status.get().detail.map_or(why.clone(), |d| format!("{why}; last error: {d}"));
                self.give_up(&detail);
                return;
            }
            if up_since.is_some() {
                self.status.set(self.outage_state(), Some("connection closed; reconnecting".to_owned()));
                self.cx.changes.notify();
            }
            let delay = self.delay(failures);
            tracing::info!(
                mount = %self.id,
                attempt = failures,
                max_attempts = r.max_attempts,
                delay_ms = delay.as_millis() as u64,
                "reconnecting in {delay:?} (attempt {failures} of {})",
                r.max_attempts
            );
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
        }
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

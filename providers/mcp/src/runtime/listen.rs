//! What the server tells the mount: its `subscriptions/listen` stream (2026-07-28) or
//! notifications, the resources subscribed at it, and the log level asked of it.

use super::*;

impl McpMount {
    /// What seam follows on a 2026-07-28 server's `subscriptions/listen` stream: the lists
    /// the server says may change, and the resources clients want updates of (`Interest`);
    /// `None` when there is nothing (a legacy server notifies its session instead).
    pub(super) fn listen_filter(&self, peer: &Peer<RoleClient>) -> Option<rmcp::model::SubscriptionFilter> {
        let capabilities = peer.peer_info().filter(|_| speaks_modern(peer)).map(|info| info.capabilities.clone())?;
        let mut filter = rmcp::model::SubscriptionFilter::builder();
        let mut wanted = false;
        if capabilities.tools.as_ref().is_some_and(|t| t.list_changed == Some(true)) {
            (filter, wanted) = (filter.tools_list_changed(), true);
        }
        if capabilities.prompts.as_ref().is_some_and(|p| p.list_changed == Some(true)) {
            (filter, wanted) = (filter.prompts_list_changed(), true);
        }
        let resources = capabilities.resources.as_ref();
        if resources.is_some_and(|r| r.list_changed == Some(true)) {
            (filter, wanted) = (filter.resources_list_changed(), true);
        }
        let mut uris = self.cx.interest.subscribed();
        uris.sort();
        if resources.is_some_and(|r| r.subscribe == Some(true)) && !uris.is_empty() {
            (filter, wanted) = (filter.resource_subscriptions(uris), true);
        }
        wanted.then(|| filter.build())
    }

    /// Listens (again) with what seam follows now, unless the open stream already asks for
    /// just that. A new stream replaces the old one once open, so no update falls between;
    /// if the old one was lost, what changed meanwhile is unknown and every list is asked
    /// for again. One that cannot be opened (within `startup_timeout`) is tried again after
    /// a liveness interval (`retry_at`), the old one kept meanwhile.
    pub(super) async fn listen_again(
        &self,
        peer: &Peer<RoleClient>,
        listening: &mut Option<Listening>,
        retry_at: &mut Option<tokio::time::Instant>,
        resync: &mpsc::UnboundedSender<Changed>,
    ) {
        use futures::FutureExt as _;
        let asked = self.listens_asked.load(std::sync::atomic::Ordering::SeqCst);
        let Some(filter) = self.listen_filter(peer) else {
            (*listening, *retry_at) = (None, None);
            self.listens_opened.send_replace(asked);
            return;
        };
        if retry_at.is_none() && listening.as_ref().is_some_and(|open| open.filter == filter) {
            self.listens_opened.send_replace(asked);
            return;
        }
        let opened = match tokio::time::timeout(self.common.startup_timeout.to_std(), peer.listen(filter.clone())).await {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(e)) => {
                tracing::warn!(mount = %self.id, "subscriptions/listen could not be opened ({}); trying again shortly", InWords(&e));
                None
            }
            Err(_) => {
                tracing::warn!(mount = %self.id, "subscriptions/listen was not acknowledged within startup_timeout; trying again shortly");
                None
            }
        };
        let Some(opened) = opened else {
            *retry_at = Some(tokio::time::Instant::now() + self.liveness_interval());
            return;
        };
        let mut lost = listening.is_none() && retry_at.is_some();
        // What the old stream still holds is heard; if it had ended unnoticed, what changed
        // since is unknown too.
        if let Some(mut old) = listening.take() {
            while let Some(heard) = old.stream.next().now_or_never() {
                match heard {
                    Ok(Some(notification)) => self.hear(notification, resync),
                    Ok(None) | Err(_) => {
                        lost = true;
                        break;
                    }
                }
            }
        }
        if lost {
            let _ = resync.send(Changed::ALL);
        }
        (*listening, *retry_at) = (Some(Listening { filter, stream: opened }), None);
        self.listens_opened.send_replace(asked);
    }

    /// What a 2026-07-28 server said on the mount's listen stream: a list changed (it is
    /// listed again), a resource was updated (the clients following it are told).
    pub(super) fn hear(&self, notification: ServerNotification, resync: &mpsc::UnboundedSender<Changed>) {
        let changed = match notification {
            ServerNotification::ToolListChangedNotification(_) => Changed { tools: true, ..Changed::default() },
            ServerNotification::PromptListChangedNotification(_) => Changed { prompts: true, ..Changed::default() },
            ServerNotification::ResourceListChangedNotification(_) => Changed { resources: true, ..Changed::default() },
            ServerNotification::ResourceUpdatedNotification(n) => {
                self.cx.events.send(MountEvent::ResourceUpdated { mount: self.id.clone(), origin: self.origin.clone(), uri: n.params.uri });
                return;
            }
            _ => return,
        };
        let _ = resync.send(changed);
    }

    /// Asks the supervisor to listen again with what seam follows now; the ask's number.
    pub(super) fn ask_to_listen(&self) -> u64 {
        let asked = self.listens_asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        self.relisten.notify_one();
        asked
    }

    /// What clients want of this mount (`BuildCx::interest`), asked of a new connection: the
    /// log level, the subscriptions (for a 2026-07-28 server, in its listen stream's filter).
    /// A connection after a reconnect, or of a build that a reload made in place of another,
    /// serves the same clients as the one before.
    #[allow(deprecated)]
    pub(super) async fn restore(&self, peer: &Peer<RoleClient>) {
        if speaks_modern(peer) {
            // 2026-07-28 has neither `logging/setLevel` nor `resources/subscribe`: the URIs
            // are in the filter of the stream the connection opened (`listen_again`).
            return;
        }
        let level = self.cx.interest.log_level.lock().expect("level lock").as_deref().and_then(seam_wire::level_named);
        if let Some(level) = level {
            self.send_log_level(peer, level).await;
        }
        for uri in self.cx.interest.subscribed() {
            if let Err(e) = peer.subscribe(rmcp::model::SubscribeRequestParams::new(uri.clone())).await {
                tracing::warn!(mount = %self.id, "resources/subscribe `{uri}` after reconnecting failed: {}", InWords(&e));
            }
        }
    }

    #[allow(deprecated)]
    pub(super) async fn send_log_level(&self, peer: &Peer<RoleClient>, level: rmcp::model::LoggingLevel) {
        if speaks_modern(peer) || peer.peer_info().is_none_or(|i| i.capabilities.logging.is_none()) {
            return;
        }
        if let Err(e) = peer.set_level(rmcp::model::SetLevelRequestParams::new(level)).await {
            tracing::warn!(mount = %self.id, "logging/setLevel failed: {}", InWords(&e));
        }
    }

    /// Asks the server to subscribe to `uri` (or to stop); the deployment counted the
    /// sessions. A server that is gone, or offers no subscriptions, has nothing to be told
    /// of an end: the count is down, so no reconnect asks again.
    #[allow(deprecated)]
    pub(super) async fn subscribe_inner(self: Arc<Self>, uri: String, on: bool) -> Result<(), RequestError> {
        let link = self.peer();
        let Some(link) = link else {
            return if on { Err(RequestError::Unavailable(format!("MCP server `{}` is unavailable", self.id))) } else { Ok(()) };
        };
        if link.peer_info().is_none_or(|i| i.capabilities.resources.as_ref().is_none_or(|r| r.subscribe != Some(true))) {
            if !on {
                return Ok(());
            }
            let message = format!("MCP server `{}` offers no resource subscriptions", self.id);
            return Err(RequestError::Upstream { code: rmcp::model::ErrorCode::METHOD_NOT_FOUND.0, message, data: None });
        }
        if speaks_modern(&link) {
            // The deployment counted the interest: the supervisor listens again with it, and the
            // client is answered once the server has the stream (or at `startup_timeout`).
            let asked = self.ask_to_listen();
            let mut opened = self.listens_opened.subscribe();
            let _ = tokio::time::timeout(self.common.startup_timeout.to_std(), opened.wait_for(|o| *o >= asked)).await;
            return Ok(());
        }
        let request = if on {
            ClientRequest::SubscribeRequest(rmcp::model::SubscribeRequest::new(rmcp::model::SubscribeRequestParams::new(uri.clone())))
        } else {
            ClientRequest::UnsubscribeRequest(rmcp::model::UnsubscribeRequest::new(rmcp::model::UnsubscribeRequestParams::new(uri.clone())))
        };
        // No client's request: the deployment asks on behalf of every session that holds it.
        let answered = self.relay(&link, request, &Client::default(), &CancellationToken::new(), false).await;
        answered.map(drop).map_err(|e| self.request_error(e, &format!("the subscription to `{uri}`")))
    }
}

/// A mount's open `subscriptions/listen` stream, and what it asked for.
pub(super) struct Listening {
    pub(super) filter: rmcp::model::SubscriptionFilter,
    pub(super) stream: rmcp::service::Subscription,
}

/// The next notification on a mount's `subscriptions/listen` stream; `None` once it
/// ended (or failed). Without a stream, never.
pub(super) async fn next_heard(listening: &mut Option<Listening>) -> Option<ServerNotification> {
    match listening {
        Some(open) => open.stream.next().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

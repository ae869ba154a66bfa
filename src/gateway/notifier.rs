//! The one notifier of a session or a `subscriptions/listen` stream ([`Gateway::follow`]):
//! what it was shown ([`Shown`]), the one rule of what changed since
//! ([`Gateway::what_changed`]), and where its notifications go ([`Listener`]).

use std::sync::Arc;

use rmcp::Peer;
use rmcp::service::RoleServer;
use seam_engine::offers::Offered;
use seam_engine::runtime::ToolSpec;
use seam_engine::surface::PromptSpec;

use super::{Gateway, SESSION_CHECK, View};

#[derive(Default)]
pub(super) struct Shown {
    pub(super) tools: Option<Vec<ToolSpec>>,
    /// The live tools' prompts, then the mounts'.
    pub(super) prompts: Option<(Arc<Vec<PromptSpec>>, Vec<Offered>)>,
    /// Resources, then templates.
    pub(super) resources: Option<(Vec<Offered>, Vec<Offered>)>,
    /// A hash of seam's own skills as `skills/list` last gave them (frontmatter and
    /// digests); only a session that listed them is told when they change.
    pub(super) skills: Option<[u8; 32]>,
}

impl Shown {
    /// All that `view` shows, and seam's own skills as hashed (`skills_hash`; `None`:
    /// not followed): what a `subscriptions/listen` stream is shown at its start.
    pub(super) fn all(view: &View, skills: Option<[u8; 32]>) -> Shown {
        Shown { tools: Some(view.tools.clone()), prompts: Some(shown_prompts(view)), resources: Some(shown_resources(view)), skills }
    }

    /// Which lists of `now` differ from those shown (a list never shown is compared
    /// with `before`, what the listener would have been shown), marking them shown.
    /// Skills are [`Gateway::what_changed`]'s: hashing them reads their files.
    pub(super) fn changes(&mut self, before: &View, now: &View) -> Changed {
        let tools = *self.tools.as_ref().unwrap_or(&before.tools) != now.tools;
        let prompts = *self.prompts.as_ref().unwrap_or(&shown_prompts(before)) != shown_prompts(now);
        let resources = *self.resources.as_ref().unwrap_or(&shown_resources(before)) != shown_resources(now);
        if tools {
            self.tools = Some(now.tools.clone());
        }
        if prompts {
            self.prompts = Some(shown_prompts(now));
        }
        if resources {
            self.resources = Some(shown_resources(now));
        }
        Changed { tools, prompts, resources }
    }
}

/// The lists whose `list_changed` a listener is sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Changed {
    tools: bool,
    prompts: bool,
    /// Resources or templates, or seam's own skills (their files are resources).
    resources: bool,
}

/// What `Shown` keeps of a skills listing: its hash.
pub(super) fn skills_hash(skills: &[rmcp::model::Skill]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    for skill in skills {
        hasher.update(&serde_json::to_vec(skill).unwrap_or_default());
        hasher.update(&[0]);
    }
    *hasher.finalize().as_bytes()
}

/// The prompts a view shows, as `Shown` keeps them.
pub(super) fn shown_prompts(view: &View) -> (Arc<Vec<PromptSpec>>, Vec<Offered>) {
    (view.prompts.clone(), view.offered.prompts.clone())
}

/// The resources and templates a view shows, as `Shown` keeps them.
pub(super) fn shown_resources(view: &View) -> (Vec<Offered>, Vec<Offered>) {
    (view.offered.resources.clone(), view.offered.templates.clone())
}

impl Gateway {
    /// What changed for one listener (a session's notifier, or a `subscriptions/listen`
    /// stream: the one rule for both) since `shown`, `now` being what the agent is shown.
    /// A skill's files changed (its digests moved): the extension names no notification
    /// of its own, and its files are resources, so a listener shown the skills is told so.
    pub(super) async fn what_changed(
        &self,
        peer: &Peer<RoleServer>,
        shown: &std::sync::Mutex<Shown>,
        before: &View,
        now: &View,
    ) -> Changed {
        let (mut changed, listed) = {
            let mut shown = shown.lock().expect("shown lock");
            (shown.changes(before, now), shown.skills)
        };
        if let Some(listed) = listed {
            let served = skills_hash(&self.served_skills(peer, None).await);
            if served != listed {
                shown.lock().expect("shown lock").skills = Some(served);
                changed.resources = true;
            }
        }
        changed
    }
}

/// Where one listener's notifications go: the one notifier ([`Gateway::follow`]) serves both eras.
pub(super) enum Listener<'a> {
    /// A session (2025-11-25): its list changes, mount log lines at its level, and
    /// updates of the resources it subscribed to, until its transport closes.
    Session(&'a Peer<RoleServer>),
    /// A `subscriptions/listen` stream (2026-07-28): what it asked for, until it ends.
    Stream(&'a rmcp::service::SubscriptionContext),
}

impl Listener<'_> {
    fn peer(&self) -> &Peer<RoleServer> {
        match self {
            Listener::Session(peer) => peer,
            Listener::Stream(context) => &context.request_context().peer,
        }
    }

    /// Tells the listener which lists changed (a stream only those it asked for); `Err` once it is gone.
    async fn lists_changed(&self, changed: Changed) -> Result<(), ()> {
        match self {
            Listener::Session(peer) => {
                if changed.tools {
                    peer.notify_tool_list_changed().await.map_err(drop)?;
                }
                if changed.prompts {
                    peer.notify_prompt_list_changed().await.map_err(drop)?;
                }
                if changed.resources {
                    peer.notify_resource_list_changed().await.map_err(drop)?;
                }
            }
            Listener::Stream(context) => {
                let (asked, sink) = (context.accepted(), context.sink());
                if changed.tools && asked.tools_list_changed == Some(true) {
                    sink.notify_tool_list_changed().await.map_err(drop)?;
                }
                if changed.prompts && asked.prompts_list_changed == Some(true) {
                    sink.notify_prompt_list_changed().await.map_err(drop)?;
                }
                if changed.resources && asked.resources_list_changed == Some(true) {
                    sink.notify_resource_list_changed().await.map_err(drop)?;
                }
            }
        }
        Ok(())
    }
}

impl Gateway {
    /// The one notifier, for a session or a listen stream: each change of what the
    /// agent is shown (by [`Gateway::what_changed`]), and each mount event it may see
    /// ([`Gateway::pass_on`]), until the listener is gone or seam stops.
    pub(super) async fn follow(&self, listener: Listener<'_>) {
        let peer = listener.peer();
        let mut changes = self.deployment.subscribe();
        let mut events = self.deployment.mount_events();
        // What a session that has not listed yet would have been sent; a stream is shown all at its start.
        let mut before = self.view(peer).await;
        let stream_shown;
        let shown = match listener {
            Listener::Session(_) => &*self.shown,
            Listener::Stream(context) => {
                // Skills are hashed again at each change only for a stream told of resource list changes.
                let skills = match context.accepted().resources_list_changed {
                    Some(true) => Some(skills_hash(&self.served_skills(peer, None).await)),
                    _ => None,
                };
                stream_shown = std::sync::Mutex::new(Shown::all(&before, skills));
                &stream_shown
            }
        };
        let ended = async {
            match listener {
                Listener::Stream(context) => context.cancelled().await,
                Listener::Session(_) => std::future::pending().await,
            }
        };
        let mut ended = std::pin::pin!(ended);
        // rmcp offers no event for a session's end; a slow check lets an idle closed session's task go.
        let mut check = tokio::time::interval(SESSION_CHECK);
        check.reset();
        loop {
            tokio::select! {
                _ = &mut ended => return,
                changed = changes.changed() => if changed.is_err() { return },
                _ = self.roots_changed.notified() => {}
                event = events.recv() => {
                    match event {
                        Ok(event) => if self.pass_on(&listener, event).await.is_err() { return },
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(skipped)) => {
                            tracing::warn!(agent = %self.agent, "{skipped} mount log lines or resource updates were not sent: the listener fell behind");
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    }
                    continue;
                }
                _ = check.tick() => {
                    if peer.is_transport_closed() { return }
                    continue;
                }
            }
            let now = self.view(peer).await;
            let changed = self.what_changed(peer, shown, &before, &now).await;
            before = now;
            if listener.lists_changed(changed).await.is_err() {
                return;
            }
        }
    }

    /// Whether what a server said on a connection of `origin` is this listener's to hear:
    /// the mount's shared connection's, its agent's own, or its own session's. A
    /// 2026-07-28 client's own connection (no session) is heard by no stream: a stream
    /// cannot be told apart from the same agent's other clients'.
    fn hears(&self, origin: &seam_engine::runtime::Origin, listener: &Listener<'_>) -> bool {
        use seam_engine::runtime::{ClientKey, Origin};
        match (origin, listener) {
            (Origin::Shared, _) => true,
            (Origin::Agent(agent), _) => *agent == self.agent,
            (Origin::Client(ClientKey::Session(session)), Listener::Session(_)) => *session == self.session,
            (Origin::Client(_), _) => false,
        }
    }

    /// A mount's log line or resource update, sent on if this listener may see it: a
    /// session's log line of a mount its agent sees, at or above the session's level,
    /// with the mount's id as `logger` (`<mount>/<logger>` when the server named one;
    /// a stream has no level, and no log lines); an update of a URI it subscribed to.
    /// Either only if it came on a connection the listener may hear (`hears`). `Err`
    /// once the listener is gone.
    #[allow(deprecated)]
    async fn pass_on(&self, listener: &Listener<'_>, event: seam_engine::runtime::MountEvent) -> Result<(), ()> {
        use seam_engine::runtime::MountEvent;
        match (event, listener) {
            (MountEvent::Log { origin, .. } | MountEvent::ResourceUpdated { origin, .. }, _) if !self.hears(&origin, listener) => Ok(()),
            (MountEvent::Log { mount, level, logger, data, .. }, Listener::Session(peer)) => {
                let Some(level) = seam_wire::level_named(&level) else { return Ok(()) };
                let wanted = *self.log_level.lock().expect("level lock");
                let seen = self.deployment.live().is_some_and(|live| live.sees(&self.agent, &mount));
                if !seen || wanted.is_some_and(|w| seam_wire::verbosity(level) > seam_wire::verbosity(w)) {
                    return Ok(());
                }
                let logger = match logger {
                    Some(logger) => format!("{mount}/{logger}"),
                    None => mount,
                };
                let message = rmcp::model::LoggingMessageNotificationParam::new(level, data).with_logger(logger);
                peer.notify_logging_message(message).await.map_err(drop)
            }
            (MountEvent::Log { .. }, Listener::Stream(_)) => Ok(()),
            (MountEvent::ResourceUpdated { mount, uri, .. }, listener) => {
                // Only the mount this listener's subscription went to (another may serve the same URI
                // to other agents), and only while its agent sees it.
                let subscribed = self.subscribed.lock().get(&uri).is_some_and(|s| s.mount == mount);
                if !subscribed || !self.deployment.live().is_some_and(|live| live.sees(&self.agent, &mount)) {
                    return Ok(());
                }
                match listener {
                    Listener::Session(peer) => {
                        peer.notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri)).await.map_err(drop)
                    }
                    Listener::Stream(context) => context.sink().notify_resource_updated(uri).await.map_err(drop),
                }
            }
        }
    }
}

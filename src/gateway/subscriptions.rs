//! A session's (or listen stream's) resource subscriptions: each counted at its mount's
//! `Interest` and among its agent's (`crate::tally`), and given back when the session's
//! handler goes.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use seam_engine::deploy::Deployment;
use seam_engine::offers::RequestError;

use super::{Gateway, MAX_SUBSCRIPTIONS};

/// A session's subscriptions, by URI. The mount's id, not the mount: a reload may build
/// the mount anew, and the new build serves them (`Interest`).
#[derive(Default)]
pub(super) struct Subscriptions(std::sync::Mutex<std::collections::HashMap<String, Subscription>>);

/// One subscription of a session: the id of the mount that serves the URI, the
/// `Interest` it is counted in (none while the server is being asked), and its
/// place among its agent's subscriptions.
pub(super) struct Subscription {
    pub(super) mount: String,
    pub(super) counted: Option<std::sync::Weak<seam_engine::runtime::Interest>>,
    _place: crate::tally::Held,
}

impl Subscriptions {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Subscription>> {
        self.0.lock().expect("subscriptions lock")
    }
}

/// Gives a session's subscriptions back to the deployment, and tells it the session ended
/// (its mounts end the connections they keep for it), when dropped: when the session
/// ended and its last request finished (none is being asked then), whether or not it ever
/// said `initialized`.
pub(super) struct Release {
    pub(super) deployment: Arc<Deployment>,
    pub(super) subscribed: Arc<Subscriptions>,
    /// The session's number: the mounts that keep a connection for it end it.
    pub(super) session: u64,
}

impl Drop for Release {
    fn drop(&mut self) {
        let subscribed: Vec<_> = self.subscribed.lock().drain().collect();
        // Outside the runtime (at its end) nothing is left to end or give back.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        self.deployment.session_ended(self.session);
        if subscribed.is_empty() {
            return;
        }
        let deployment = self.deployment.clone();
        runtime.spawn(async move {
            for (uri, subscription) in subscribed {
                if let Some(counted) = &subscription.counted {
                    deployment.unsubscribe_resource(&subscription.mount, counted, &uri).await;
                }
            }
        });
    }
}

impl Gateway {
    /// Subscribes this session (or listen stream) to `uri` at the mount that serves it: the
    /// deployment counts it in the mount's `Interest`, and it is given back when the
    /// session's handler goes. At most `MAX_SUBSCRIPTIONS` for the session, and
    /// `serve.max_subscriptions_per_agent` for its agent (`SUBSCRIPTIONS_EXCEEDED`).
    pub(super) async fn subscribe_resource(&self, uri: String) -> Result<(), McpError> {
        if let Some(refused) = crate::refusal::uri_too_long(&uri) {
            return Err(refused);
        }
        let unknown = || {
            let uri = seam_engine::runtime::echoed(&uri);
            RequestError::Unknown(format!("no mount that agent `{}` sees serves resource `{uri}`", self.agent))
        };
        let caller = self.deployment.caller(&self.agent, None);
        let mount = self.deployment.live().and_then(|live| live.resource_mount(&caller, &uri)).ok_or_else(unknown);
        let id = mount.map_err(|e| seam_wire::answer(e, Some(&uri)))?;
        {
            // Taken before the server is asked, so that subscriptions asked at once cannot pass the cap together.
            let mut subscribed = self.subscribed.lock();
            if subscribed.contains_key(&uri) {
                return Ok(());
            }
            if subscribed.len() >= MAX_SUBSCRIPTIONS {
                return Err(crate::refusal::subscriptions_exceeded(format!(
                    "this session holds {MAX_SUBSCRIPTIONS} subscriptions, the most it may; unsubscribe from one first"
                )));
            }
            let place = self.hold(crate::tally::Holding::Subscription)?;
            subscribed.insert(uri.clone(), Subscription { mount: id.clone(), counted: None, _place: place });
        }
        let counted = match self.deployment.subscribe_resource(&id, &uri).await {
            Ok(interest) => Arc::downgrade(&interest),
            Err(e) => {
                self.subscribed.lock().remove(&uri);
                return Err(seam_wire::answer(e, Some(&uri)));
            }
        };
        let kept = match self.subscribed.lock().get_mut(&uri) {
            Some(subscription) if subscription.counted.is_none() => {
                subscription.counted = Some(counted.clone());
                true
            }
            _ => false,
        };
        // Unsubscribed while the server was asked: given back at once.
        if !kept {
            self.deployment.unsubscribe_resource(&id, &counted, &uri).await;
        }
        Ok(())
    }

    /// One more listen stream or subscription for this gateway's agent, counted until the
    /// place is dropped; `SUBSCRIPTIONS_EXCEEDED` past the live bound.
    pub(super) fn hold(&self, what: crate::tally::Holding) -> Result<crate::tally::Held, McpError> {
        let limits = self.deployment.serve_limits();
        self.clients
            .tally
            .hold(&self.agent, what, &limits)
            .map_err(|full| crate::refusal::subscriptions_exceeded(full.why(&self.agent, what)))
    }
}

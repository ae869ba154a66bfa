//! One client session as a call's mounts reach it (`seam_engine::runtime::ClientLink`):
//! a server's question during a call goes to the client on that call's own
//! stream, and the server's progress comes back under the client's token.
//!
//! rmcp puts a request seam sends its client on the response stream of the
//! request whose handler sends it, and knows that handler only inside its own
//! future (a task-local that no `tokio::spawn` crosses). A mount's question
//! arrives on the mount's own rmcp task, so it is handed over a channel to the
//! `tools/call` handler's future, which sends it ([`CallAsks::serve`]).

use std::sync::Arc;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use rmcp::Peer;
use rmcp::model::{ClientCapabilities, ProgressNotificationParam, ProgressToken, ServerRequest};
use rmcp::service::{PeerRequestOptions, RoleServer, ServiceError};
use seam_engine::offers::RequestError;
use seam_engine::runtime::{AskKind, BoxFuture, ClientLink};
use serde_json::Value as Json;
use tokio::sync::{mpsc, oneshot};

/// Questions one call may have waiting for the handler to send them; a server asking more waits.
const WAITING_ASKS: usize = 16;

/// A question for the client, and where its answer goes.
struct Ask {
    kind: AskKind,
    params: Json,
    answer: oneshot::Sender<Result<Json, RequestError>>,
}

/// The client session of one `tools/call`, as its mounts see it.
pub struct CallLink {
    session: u64,
    agent: String,
    capabilities: Option<ClientCapabilities>,
    progress_token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
    asks: mpsc::Sender<Ask>,
}

/// The questions of one call, to be sent from its handler's future.
pub struct CallAsks(mpsc::Receiver<Ask>);

/// A link for one call of a session, and the questions its mounts will ask through it.
pub fn for_call(
    session: u64,
    agent: &str,
    capabilities: Option<ClientCapabilities>,
    progress_token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
) -> (Arc<CallLink>, CallAsks) {
    let (asks, waiting) = mpsc::channel(WAITING_ASKS);
    let link = CallLink { session, agent: agent.to_owned(), capabilities, progress_token, peer, asks };
    (Arc::new(link), CallAsks(waiting))
}

impl ClientLink for CallLink {
    fn session(&self) -> u64 {
        self.session
    }

    fn agent(&self) -> &str {
        &self.agent
    }

    #[allow(deprecated)]
    fn declares(&self, kind: AskKind, params: &Json) -> bool {
        let Some(capabilities) = &self.capabilities else { return false };
        match kind {
            AskKind::Sampling => capabilities.sampling.is_some(),
            AskKind::Roots => capabilities.roots.is_some(),
            // `elicitation: {}` declares form mode only (2025-11-25).
            AskKind::Elicitation => capabilities.elicitation.as_ref().is_some_and(|e| match params.get("mode").and_then(Json::as_str) {
                Some("url") => e.url.is_some(),
                _ => e.form.is_some() || e.url.is_none(),
            }),
        }
    }

    fn ask(&self, kind: AskKind, params: Json) -> BoxFuture<'static, Result<Json, RequestError>> {
        let asks = self.asks.clone();
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            let ended = || RequestError::Unavailable("the call that asked has ended".to_owned());
            asks.send(Ask { kind, params, answer }).await.map_err(|_| ended())?;
            answered.await.map_err(|_| ended())?
        })
    }

    fn notify(&self, method: &str, params: Json) {
        let notification = rmcp::model::CustomNotification::new(method, Some(params));
        let peer = self.peer.clone();
        tokio::spawn(async move {
            let _ = peer.send_notification(rmcp::model::ServerNotification::CustomNotification(notification)).await;
        });
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = self.progress_token.clone() else { return };
        let mut notification = ProgressNotificationParam::new(token, progress);
        notification.total = total;
        notification.message = message;
        let peer = self.peer.clone();
        tokio::spawn(async move {
            let _ = peer.notify_progress(notification).await;
        });
    }
}

impl CallAsks {
    /// Runs `call` to its end, sending the questions its mounts ask on the
    /// way, each from this future and so on the call's own stream. A question
    /// whose asker gave up (the server cancelled it, the call ended) is
    /// cancelled at the client.
    pub async fn serve<T>(mut self, peer: &Peer<RoleServer>, call: impl Future<Output = T>) -> T {
        let mut call = std::pin::pin!(call);
        let mut sending = FuturesUnordered::new();
        loop {
            tokio::select! {
                output = &mut call => return output,
                // At most WAITING_ASKS questions open at the client: a server asking more waits.
                Some(ask) = self.0.recv(), if sending.len() < WAITING_ASKS => sending.push(send(peer, ask)),
                Some(()) = sending.next(), if !sending.is_empty() => {}
            }
        }
    }
}

/// Sends one question and hands its answer back; cancels it if the asker stops waiting.
#[allow(deprecated)]
async fn send(peer: &Peer<RoleServer>, ask: Ask) {
    let Ask { kind, params, mut answer } = ask;
    let request = match request_of(kind, params) {
        Ok(request) => request,
        Err(e) => {
            let _ = answer.send(Err(e));
            return;
        }
    };
    let handle = match peer.send_cancellable_request(request, PeerRequestOptions::no_options()).await {
        Ok(handle) => handle,
        Err(e) => {
            let _ = answer.send(Err(RequestError::Unavailable(format!("the client could not be asked: {e}"))));
            return;
        }
    };
    // Dropped unanswered (the asker gave up, or the call ended and took this with it): the client is told.
    let mut open = seam_wire::Abandoned(Some((peer.clone(), handle.id.clone())));
    let answered = tokio::select! {
        answered = handle.await_response() => answered,
        _ = answer.closed() => return,
    };
    open.0 = None;
    let result = match answered {
        Ok(result) => serde_json::to_value(result).map_err(|e| RequestError::Unavailable(e.to_string())),
        Err(ServiceError::McpError(e)) => Err(seam_wire::relayed(e)),
        Err(e) => Err(RequestError::Unavailable(format!("the client did not answer: {e}"))),
    };
    let _ = answer.send(result);
}

/// The request rmcp sends for a question, its params read as rmcp's types.
#[allow(deprecated)]
fn request_of(kind: AskKind, params: Json) -> Result<ServerRequest, RequestError> {
    let unreadable = |e: serde_json::Error| RequestError::Upstream {
        code: rmcp::model::ErrorCode::INVALID_PARAMS.0,
        message: format!("the server's {} request does not read as MCP: {e}", kind.capability()),
        data: None,
    };
    Ok(match kind {
        AskKind::Sampling => {
            ServerRequest::CreateMessageRequest(rmcp::model::CreateMessageRequest::new(serde_json::from_value(params).map_err(unreadable)?))
        }
        AskKind::Elicitation => {
            ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(serde_json::from_value(params).map_err(unreadable)?))
        }
        AskKind::Roots => ServerRequest::ListRootsRequest(rmcp::model::ListRootsRequest::default()),
    })
}

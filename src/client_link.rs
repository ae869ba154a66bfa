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
use seam_engine::chain::Answered;
use seam_engine::offers::RequestError;
use seam_engine::runtime::{AskKind, BoxFuture, ClientLink};
use serde_json::Value as Json;
use tokio::sync::{mpsc, oneshot};

/// Questions one call may have waiting for the handler to send them; a server asking more waits.
const WAITING_ASKS: usize = 16;

/// Progress reports one call may have waiting to be sent; past it, a new report is dropped
/// (progress is advice, and a client that reads slowly must not make seam hold more).
const QUEUED_PROGRESS: usize = 64;

/// What a call's progress queue carries: a report, or a mark that says when all before it went.
enum Report {
    Progress(ProgressNotificationParam),
    Sent(oneshot::Sender<()>),
}

/// A question for the client, and where its answer goes.
struct Ask {
    kind: AskKind,
    params: Json,
    /// The key its server gave it, if a 2026-07-28 server asked.
    key: Option<String>,
    answer: oneshot::Sender<Result<Json, RequestError>>,
}

/// The client session of one `tools/call`, as its mounts see it.
pub struct CallLink {
    session: u64,
    key: seam_engine::runtime::ClientKey,
    agent: String,
    capabilities: Option<ClientCapabilities>,
    progress: ProgressSlot,
    peer: Peer<RoleServer>,
    asks: mpsc::Sender<Ask>,
    /// The span of the request the call came in, when seam traces (`crate::telemetry`).
    trace: Option<crate::telemetry::ServerContext>,
}

/// The client's token and the call's progress queue to its stream, when the client asked
/// for progress. A 2026-07-28 client's call moves to each retry's (`ParkedCall::rebind`).
type ProgressSlot = Arc<std::sync::Mutex<Option<(ProgressToken, mpsc::Sender<Report>)>>>;

/// The questions of one call, to be sent from its handler's future; and its progress
/// queue, emptied before the call's result goes.
pub struct CallAsks {
    asks: mpsc::Receiver<Ask>,
    progress: ProgressSlot,
    /// How long the client may take to answer one question (`serve.input_timeout`).
    patience: seam_engine::units::Duration,
}

/// A link for one call of a session, and the questions its mounts will ask through it,
/// each answered within `patience` (`serve.input_timeout`) or withdrawn.
#[allow(clippy::too_many_arguments, reason = "each is one thing the call's link keeps; two call sites")]
pub fn for_call(
    session: u64,
    key: seam_engine::runtime::ClientKey,
    agent: &str,
    capabilities: Option<ClientCapabilities>,
    progress_token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
    patience: seam_engine::units::Duration,
    trace: Option<crate::telemetry::ServerContext>,
) -> (Arc<CallLink>, CallAsks) {
    let (asks, waiting) = mpsc::channel(WAITING_ASKS);
    let progress = ProgressSlot::new(std::sync::Mutex::new(progress_token.map(|token| progress_to(&peer, token))));
    let link = CallLink { session, key, agent: agent.to_owned(), capabilities, progress: progress.clone(), peer, asks, trace };
    (Arc::new(link), CallAsks { asks: waiting, progress, patience })
}

/// A progress queue to `peer` under `token`, drained by its own task (`send_progress`)
/// until every sender is gone.
fn progress_to(peer: &Peer<RoleServer>, token: ProgressToken) -> (ProgressToken, mpsc::Sender<Report>) {
    let (queue, queued) = mpsc::channel(QUEUED_PROGRESS);
    tokio::spawn(send_progress(peer.clone(), queued));
    (token, queue)
}

/// Waits until the progress reported so far through `slot` is sent.
async fn flush(slot: &ProgressSlot) {
    let queue = slot.lock().expect("progress lock").as_ref().map(|(_, queue)| queue.clone());
    if let Some(queue) = queue {
        let (told, sent) = oneshot::channel();
        if queue.send(Report::Sent(told)).await.is_ok() {
            let _ = sent.await;
        }
    }
}

/// Sends a call's progress reports, one task for all of them, by increasing
/// `progress` (MCP requires it to increase). A mount's reports come in the order
/// its server sent them (`seam_mcp::asks::ProgressInOrder`), but a call may have
/// several mounts' or a server's own disorder: the reports already on their way
/// are let in before a batch is sent in order, and a report not past the last one
/// sent came too late and is dropped.
async fn send_progress(peer: Peer<RoleServer>, mut queued: mpsc::Receiver<Report>) {
    let mut last: Option<f64> = None;
    while let Some(first) = queued.recv().await {
        tokio::task::yield_now().await;
        let mut batch = vec![first];
        while let Ok(next) = queued.try_recv() {
            batch.push(next);
        }
        let mut told = Vec::new();
        let mut reports = Vec::new();
        for report in batch {
            match report {
                Report::Progress(notification) => reports.push(notification),
                Report::Sent(sent) => told.push(sent),
            }
        }
        reports.sort_by(|a, b| a.progress.total_cmp(&b.progress));
        for notification in reports {
            if last.is_some_and(|last| notification.progress <= last) {
                continue;
            }
            last = Some(notification.progress);
            let _ = peer.notify_progress(notification).await;
        }
        for sent in told {
            let _ = sent.send(());
        }
    }
}

impl ClientLink for CallLink {
    fn session(&self) -> u64 {
        self.session
    }
    fn upstream_span(&self, mount: &str, method: &str, target: &str) -> Option<Box<dyn seam_engine::runtime::UpstreamSpan>> {
        crate::telemetry::upstream_span(self.trace.as_ref()?, mount, method, target)
    }

    fn key(&self) -> seam_engine::runtime::ClientKey {
        self.key.clone()
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

    fn takes_tasks(&self) -> bool {
        self.capabilities.as_ref().is_some_and(ClientCapabilities::supports_tasks)
    }

    fn ask(&self, kind: AskKind, params: Json, key: Option<String>) -> BoxFuture<'static, Result<Json, RequestError>> {
        let asks = self.asks.clone();
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            let ended = || RequestError::Unavailable("the call that asked has ended".to_owned());
            asks.send(Ask { kind, params, key, answer }).await.map_err(|_| ended())?;
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
        let progress_slot = self.progress.lock().expect("progress lock");
        let Some((token, queue)) = &*progress_slot else { return };
        let mut notification = ProgressNotificationParam::new(token.clone(), progress);
        notification.total = total;
        notification.message = message;
        let _ = queue.try_send(Report::Progress(notification));
    }
}

impl CallAsks {
    /// Runs `call` to its end, sending the questions its mounts ask on the
    /// way, each from this future and so on the call's own stream. A question
    /// whose asker gave up (the server cancelled it, the call ended) is
    /// cancelled at the client. The progress reported before the call ended is
    /// sent before its result.
    pub async fn serve<T>(mut self, peer: &Peer<RoleServer>, call: impl Future<Output = T>) -> T {
        let mut call = std::pin::pin!(call);
        let mut sending = FuturesUnordered::new();
        let output = loop {
            tokio::select! {
                output = &mut call => break output,
                // At most WAITING_ASKS questions open at the client: a server asking more waits.
                Some(ask) = self.asks.recv(), if sending.len() < WAITING_ASKS => sending.push(send(peer, ask, self.patience)),
                Some(()) = sending.next(), if !sending.is_empty() => {}
            }
        };
        flush(&self.progress).await;
        output
    }
}

/// The call of a 2026-07-28 client, which seam cannot send requests: it runs on a task
/// of its own, and a question its mounts ask is handed to the client inside the call's
/// `input_required` result, under the key its server gave it (a 2026-07-28 server's) or
/// `q1`, `q2`, …, to be answered by the client's retry.
pub struct ParkedCall {
    call: tokio::task::JoinHandle<Answered>,
    asks: mpsc::Receiver<Ask>,
    /// Where the call's progress goes, emptied before its output is given.
    progress: ProgressSlot,
    /// The questions handed to the client and not answered yet, by key, each as it is put to the client.
    open: Vec<(String, rmcp::model::InputRequest, Ask)>,
    /// `q<n>` keys given so far: none is given twice in one call (a server's own key may
    /// repeat one of an earlier round; only open questions' keys are matched).
    keys: u32,
    cancel: tokio_util::sync::CancellationToken,
}

impl CallAsks {
    /// `call` (already running, cancelled by `cancel`) as a 2026-07-28 client's: its
    /// questions wait for the client's retry rather than being sent.
    pub fn park(self, call: tokio::task::JoinHandle<Answered>, cancel: tokio_util::sync::CancellationToken) -> ParkedCall {
        ParkedCall { call, asks: self.asks, progress: self.progress, open: Vec::new(), keys: 0, cancel }
    }
}

/// A parked call nobody holds any more is ended: no one is left to answer it.
impl Drop for ParkedCall {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.call.abort();
    }
}

impl ParkedCall {
    /// Runs the call until it ends (its output, the progress reported before it sent
    /// first) or asks (`None`: the questions are open; those already on their way are
    /// taken too, so one round carries them all). A question its server no longer
    /// waits for is dropped, and one that cannot be put to a client is refused to its
    /// server at once.
    pub async fn run(&mut self) -> Option<Answered> {
        loop {
            self.open.retain(|(_, _, ask)| !ask.answer.is_closed());
            if !self.open.is_empty() && !self.call.is_finished() {
                return None;
            }
            tokio::select! {
                output = &mut self.call => {
                    let output = output.unwrap_or_else(|e| Err(RequestError::Unavailable(format!("the call ended: {e}"))));
                    flush(&self.progress).await;
                    return Some(output);
                }
                Some(ask) = self.asks.recv() => {
                    self.hold(ask);
                    tokio::task::yield_now().await;
                    while let Ok(ask) = self.asks.try_recv() {
                        self.hold(ask);
                    }
                }
            }
        }
    }

    fn hold(&mut self, ask: Ask) {
        let question = match request_of(ask.kind, ask.params.clone()) {
            Ok(ServerRequest::CreateMessageRequest(r)) => rmcp::model::InputRequest::CreateMessage(r),
            Ok(ServerRequest::ElicitRequest(r)) => rmcp::model::InputRequest::Elicitation(r),
            Ok(ServerRequest::ListRootsRequest(r)) => rmcp::model::InputRequest::ListRoots(r),
            Ok(_) => unreachable!("`request_of` makes only questions"),
            Err(e) => {
                let _ = ask.answer.send(Err(e));
                return;
            }
        };
        // The server's own key, unless an open question has it; else `q<n>`, never given twice in a call.
        let taken = |key: &str| self.open.iter().any(|(open, _, _)| open == key);
        let key = match ask.key.clone().filter(|key| !taken(key)) {
            Some(key) => key,
            None => loop {
                self.keys += 1;
                let key = format!("q{}", self.keys);
                if !taken(&key) {
                    break key;
                }
            },
        };
        self.open.push((key, question, ask));
    }

    /// The open questions as the client is to be sent them.
    pub fn questions(&self) -> rmcp::model::InputRequests {
        self.open.iter().map(|(key, question, _)| (key.clone(), question.clone())).collect()
    }

    /// Whether the client's answers read as the results their questions ask for; `Err`
    /// names one that does not. (Checked before anything is taken or given back.)
    #[allow(deprecated)]
    pub fn check(&self, responses: &rmcp::model::InputResponses) -> Result<(), String> {
        for (key, _, ask) in &self.open {
            let Some(response) = responses.get(key) else { continue };
            let reads = match ask.kind {
                AskKind::Sampling => serde_json::from_value::<rmcp::model::CreateMessageResult>(response.clone()).map(drop),
                AskKind::Elicitation => serde_json::from_value::<rmcp::model::ElicitResult>(response.clone()).map(drop),
                AskKind::Roots => serde_json::from_value::<rmcp::model::ListRootsResult>(response.clone()).map(drop),
            };
            reads.map_err(|e| format!("the answer to `{key}` is not a {} result: {e}", ask.kind.capability()))?;
        }
        Ok(())
    }

    /// The client's answers (`check`ed): each open question it answered goes back to the
    /// server that asked; one it did not answer stays open, to be asked again.
    pub fn answer(&mut self, responses: &rmcp::model::InputResponses) {
        let open = std::mem::take(&mut self.open);
        for (key, question, ask) in open {
            match responses.get(&key) {
                Some(response) => {
                    let _ = ask.answer.send(Ok(response.clone()));
                }
                None => self.open.push((key, question, ask)),
            }
        }
    }

    /// Refuses every open question to the server that asked, with `why`.
    pub fn refuse(&mut self, why: String) {
        for (_, _, ask) in self.open.drain(..) {
            let _ = ask.answer.send(Err(RequestError::Refused(why.clone())));
        }
    }

    /// The retry that resumes the call: what the call reports from now on goes to its
    /// stream, under its token (nowhere when it gave none).
    pub fn rebind(&mut self, token: Option<ProgressToken>, peer: &Peer<RoleServer>) {
        *self.progress.lock().expect("progress lock") = token.map(|token| progress_to(peer, token));
    }

    /// Ends the call: nobody will answer it.
    pub fn cancel(&self) {
        self.cancel.cancel();
        self.call.abort();
    }
}

/// Sends one question and hands its answer back; cancels it if the asker stops waiting
/// or the client has not answered within `patience` (then the asker is refused, `INPUT_TIMEOUT`).
#[allow(deprecated)]
async fn send(peer: &Peer<RoleServer>, ask: Ask, patience: seam_engine::units::Duration) {
    let Ask { kind, params, mut answer, .. } = ask;
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
        _ = tokio::time::sleep(patience.to_std()) => {
            let why = format!("{}: the client did not answer within serve.input_timeout {patience}", seam_engine::codes::INPUT_TIMEOUT);
            let _ = answer.send(Err(RequestError::TimedOut(why)));
            return;
        }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmcp::ServiceExt as _;
    use rmcp::model::NumberOrString;
    use tokio::sync::{Semaphore, watch};

    use super::*;

    /// A client that answers `roots/list` only once let go, and counts the questions it holds.
    struct Slow {
        open: Arc<watch::Sender<usize>>,
        most: Arc<AtomicUsize>,
        go: Arc<Semaphore>,
    }

    impl rmcp::ClientHandler for Slow {
        #[allow(deprecated)]
        async fn list_roots(
            &self,
            _: rmcp::service::RequestContext<rmcp::RoleClient>,
        ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
            self.open.send_modify(|n| *n += 1);
            self.most.fetch_max(*self.open.borrow(), Ordering::SeqCst);
            self.go.acquire().await.expect("never closed").forget();
            self.open.send_modify(|n| *n -= 1);
            Ok(rmcp::model::ListRootsResult::new(Vec::new()))
        }
    }

    struct Quiet;
    impl rmcp::ServerHandler for Quiet {}

    /// One question past `WAITING_ASKS` waits until the client answers one: the
    /// client never holds more, and every question is answered.
    #[tokio::test]
    async fn a_call_has_at_most_waiting_asks_questions_open_at_its_client() {
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(async move { Quiet.serve(server_io).await });
        let (open, mut opened) = watch::channel(0);
        let (most, go) = (Arc::new(AtomicUsize::new(0)), Arc::new(Semaphore::new(0)));
        let slow = Slow { open: Arc::new(open), most: most.clone(), go: go.clone() };
        let _client = slow.serve(client_io).await.unwrap();
        let server = server.await.unwrap().unwrap();
        let peer = server.peer().clone();
        let (link, asks) = for_call(
            1,
            seam_engine::runtime::ClientKey::Session(1),
            "agent",
            None,
            None,
            peer.clone(),
            seam_engine::units::Duration::from_secs(60),
            None,
        );
        let questions = futures::future::join_all((0..=WAITING_ASKS).map(|_| link.ask(AskKind::Roots, Json::Null, None)));
        let let_go = async {
            opened.wait_for(|n| *n >= WAITING_ASKS).await.unwrap();
            go.add_permits(WAITING_ASKS + 1);
        };
        let (answers, ()) = asks.serve(&peer, futures::future::join(questions, let_go)).await;
        assert_eq!(answers.iter().filter(|a| a.is_ok()).count(), WAITING_ASKS + 1, "{answers:?}");
        assert_eq!(most.load(Ordering::SeqCst), WAITING_ASKS);
    }

    /// A client that keeps the progress values it is sent, in order.
    struct Watching(Arc<watch::Sender<Vec<f64>>>);

    impl rmcp::ClientHandler for Watching {
        async fn on_progress(&self, params: ProgressNotificationParam, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
            self.0.send_modify(|seen| seen.push(params.progress));
        }
    }

    /// A call queues at most `QUEUED_PROGRESS` reports for its client: reported all at
    /// once, the reports up to the limit reach it, in order, and the one past it is dropped.
    #[tokio::test]
    async fn a_call_queues_at_most_queued_progress_reports() {
        let (server_io, client_io) = tokio::io::duplex(1 << 20);
        let server = tokio::spawn(async move { Quiet.serve(server_io).await });
        let (seen, mut watched) = watch::channel(Vec::new());
        let _client = Watching(Arc::new(seen)).serve(client_io).await.unwrap();
        let server = server.await.unwrap().unwrap();
        let peer = server.peer().clone();
        let token = ProgressToken(NumberOrString::Number(1));
        let (link, asks) = for_call(
            1,
            seam_engine::runtime::ClientKey::Session(1),
            "agent",
            None,
            Some(token.clone()),
            peer.clone(),
            seam_engine::units::Duration::from_secs(60),
            None,
        );
        // One runtime thread and no await between them: the queue's task sends none before the last is reported.
        for n in 1..=QUEUED_PROGRESS + 1 {
            link.progress(n as f64, None, None);
        }
        asks.serve(&peer, async {}).await;
        // A report sent past the queue marks the end of what the queue sent.
        peer.notify_progress(ProgressNotificationParam::new(token, 1e6)).await.unwrap();
        let seen = watched.wait_for(|seen| seen.last() == Some(&1e6)).await.unwrap().clone();
        let queued: Vec<f64> = (1..=QUEUED_PROGRESS).map(|n| n as f64).collect();
        assert_eq!(seen[..seen.len() - 1], queued[..]);
    }
}

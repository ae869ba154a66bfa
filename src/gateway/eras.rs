//! The one place a request's era is chosen ([`Gateway::relay_in_era`]). A 2025-11-25
//! client is sent its mounts' questions as requests on the request's own stream; a
//! 2026-07-28 client cannot be sent requests, so its request runs a round at a time
//! (`modern_round`): the questions come back as `input_required`, and the request
//! waits, running, for the client's retry with its answers (`crate::waiting`).

use rmcp::ErrorData as McpError;
use rmcp::model::{InputRequiredResult, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use seam_engine::chain::{Answer, Answered};
use seam_engine::offers::{MountRequest, RequestError};
use serde_json::{Map, Value as Json};

use super::{Gateway, is_modern};
use crate::client_link::ParkedCall;
use crate::waiting::{self, Asked, Parked, Waiting};

/// A 2026-07-28 client's retry: the waiting call's `requestState` and the client's
/// answers (none on a first try, and for a 2025-11-25 client).
pub(super) struct Retry {
    pub state: Option<String>,
    pub responses: InputResponses,
}

impl Retry {
    pub fn of(state: &Option<String>, responses: &Option<InputResponses>) -> Retry {
        Retry { state: state.clone(), responses: responses.clone().unwrap_or_default() }
    }
}

/// What a request ended with, in its era.
pub(super) enum Round {
    /// It is answered.
    Done(Answered),
    /// A mount's server asked a 2026-07-28 client: the questions, and the waiting call's state.
    Asked(InputRequiredResult),
}

impl Gateway {
    /// A request of this session's agent to what serves it (`Gateway::relay`), in the
    /// request's era, chosen here once.
    pub(super) async fn relay_in_era(
        &self,
        request: MountRequest,
        retry: Retry,
        context: &RequestContext<RoleServer>,
    ) -> Result<Round, McpError> {
        if !is_modern(context) {
            return Ok(Round::Done(self.request(request, context).await));
        }
        let asked = Asked { method: request.method(), name: request.target().to_owned() };
        let arguments = request.arguments().clone();
        let (this, caller, peer) = (self.clone(), self.caller(context), context.peer.clone());
        let start = move |client, cancel| this.relay(caller, request, cancel, peer, client);
        let round = self.modern_round(asked.clone(), arguments.clone(), retry, context, start).await?;
        // A 2026-07-28 client has no -32042: the URLs are its questions, and its retry calls afresh.
        if let Round::Done(Ok(Answer::Tool(output))) = &round
            && let Some(questions) = url_elicitations(output)
        {
            let waiting = Waiting { asked, arguments, call: Parked::Afresh };
            if let Ok(state) = self.clients.hold_waiting(&self.agent, waiting, self.deployment.serve_limits().input_timeout.to_std()) {
                return Ok(Round::Asked(InputRequiredResult::new(Some(questions), Some(state))));
            }
        }
        Ok(round)
    }

    /// One round of a 2026-07-28 client's request: the request runs (`start`, on a task
    /// of its own, with its own cancellation: this round's ends with its answer) until it
    /// is answered or a mount's server asks; then the questions go back as
    /// `input_required`, and the request waits, running, for the client's retry.
    async fn modern_round(
        &self,
        asked: Asked,
        arguments: Map<String, Json>,
        retry: Retry,
        context: &RequestContext<RoleServer>,
        start: impl FnOnce(
            seam_engine::runtime::Client,
            tokio_util::sync::CancellationToken,
        ) -> seam_engine::runtime::BoxFuture<'static, Answered>,
    ) -> Result<Round, McpError> {
        let refused = |(code, message): (seam_engine::codes::Code, String)| {
            McpError::invalid_params(format!("{code}: {message}"), Some(serde_json::json!({ "code": code.code })))
        };
        let cancelled = || McpError::invalid_request("the request was cancelled", None);
        let Retry { state, responses } = retry;
        let resumed = match &state {
            None => None,
            Some(state) => {
                let waiting = self.clients.take_waiting(&self.agent, state, &asked, &arguments, |call| call.check(&responses));
                match waiting.map_err(refused)?.call {
                    Parked::Running(mut call) => {
                        call.rebind(context.meta.get_progress_token(), &context.peer);
                        call.answer(&responses);
                        Some(call)
                    }
                    // None running (the server wanted URLs opened first): called afresh.
                    Parked::Afresh => None,
                }
            }
        };
        let mut call = match resumed {
            Some(call) => call,
            None => {
                let (client, asks) = self.client_of(context);
                let cancel = tokio_util::sync::CancellationToken::new();
                asks.park(tokio::spawn(start(client, cancel.clone())), cancel)
            }
        };
        let ran = tokio::select! {
            ran = call.run() => ran,
            // The client gave this round up: nobody is left to answer the request.
            _ = context.ct.cancelled() => {
                call.cancel();
                return Err(cancelled());
            }
        };
        if let Some(answered) = ran {
            return Ok(Round::Done(answered));
        }
        if context.ct.is_cancelled() {
            // Gone between the question and its round's answer: nobody will answer it.
            call.cancel();
            return Err(cancelled());
        }
        let questions = call.questions();
        let patience = self.deployment.serve_limits().input_timeout.to_std();
        let waiting = Waiting { asked, arguments, call: Parked::Running(call) };
        let waiting = match self.clients.hold_waiting(&self.agent, waiting, patience) {
            Ok(state) => return Ok(Round::Asked(InputRequiredResult::new(Some(questions), Some(state)))),
            Err(waiting) => waiting,
        };
        let Parked::Running(call) = waiting.call else { unreachable!("held as running just above") };
        self.without_answers(call, context).await
    }

    /// A call past the agent's `MAX_WAITING_CALLS`: each question it asks is refused to
    /// its server, and it goes on without answers to its end (or its client's cancellation).
    async fn without_answers(&self, mut call: ParkedCall, context: &RequestContext<RoleServer>) -> Result<Round, McpError> {
        let why = format!(
            "{}: agent `{}` already has {} calls waiting for their clients' answers",
            seam_engine::codes::INPUT_CALLS_EXCEEDED,
            self.agent,
            waiting::MAX_WAITING_CALLS
        );
        loop {
            call.refuse(why.clone());
            tokio::select! {
                ran = call.run() => if let Some(answered) = ran {
                    return Ok(Round::Done(answered));
                },
                _ = context.ct.cancelled() => {
                    call.cancel();
                    return Err(McpError::invalid_request("the request was cancelled", None));
                }
            }
        }
    }
}

/// The URL elicitations of a server's "URL elicitation required" (-32042) a call's
/// output carries, as a 2026-07-28 client's questions (`q1`, `q2`, …); none for any other output.
fn url_elicitations(output: &seam_engine::runtime::ToolOutput) -> Option<rmcp::model::InputRequests> {
    let Some(RequestError::Upstream { code: -32042, data: Some(data), .. }) = output.relayed_error.as_deref() else { return None };
    let mut questions = rmcp::model::InputRequests::new();
    for (n, elicitation) in data.get("elicitations")?.as_array()?.iter().enumerate() {
        let params = serde_json::from_value(elicitation.clone()).ok()?;
        let request = rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(params));
        questions.insert(format!("q{}", n + 1), request);
    }
    (!questions.is_empty()).then_some(questions)
}

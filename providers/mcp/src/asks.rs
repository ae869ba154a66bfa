//! What a mount's server asks while a call runs (sampling, elicitation,
//! roots) and the progress it reports, routed to the client session whose
//! call caused it.
//!
//! Each call seam sends a server is entered in [`InFlight`] under the request
//! id and progress token rmcp gave it, with the calling client. A question is
//! for the call whose response stream it came on (Streamable HTTP says which);
//! where the transport cannot say (stdio, the standalone GET stream), it is
//! for the one client session that has calls in flight, and refused when
//! there are several. A client that did not declare what the question needs
//! is never asked: the server gets an error, and seam's log says why.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData as McpError;
use rmcp::model::{ErrorCode, ProgressToken, RequestId};
use rmcp::service::InboundStreamOrigin;
use seam_engine::runtime::{AskKind, Client, ClientLink};
use serde_json::Value as Json;

/// The calls a mount has sent its server and not had answered, by request id;
/// and how many questions of each kind it passed on and refused, for `/status`.
#[derive(Default)]
pub struct InFlight(
    Mutex<HashMap<RequestId, Caller>>,
    Mutex<std::collections::BTreeMap<&'static str, (u64, u64)>>,
    /// URL elicitations passed on, by `elicitationId`, newest last: whom their completion is for.
    Mutex<std::collections::VecDeque<(String, Arc<dyn ClientLink>)>>,
);

/// How many URL elicitations a mount remembers, for their `notifications/elicitation/complete`.
pub const REMEMBERED_ELICITATIONS: usize = 1024;

/// The error a server answers a call with when the client must first open URLs
/// (URL mode elicitation, 2025-11-25); rmcp does not model it.
pub const URL_ELICITATION_REQUIRED: i32 = -32042;

/// The notification a server sends when a URL elicitation is done (rmcp does not model it).
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// Why a server's question has no client to go to (`InFlight::caller`).
#[derive(Debug, thiserror::Error)]
pub enum CallerError {
    /// The stream it came on is a call's that has been answered or given up.
    #[error("it came on the stream of a call that has ended")]
    CallEnded,
    /// The call is `seam call`'s, not an MCP client's.
    #[error("the call has no MCP client behind it (`seam call`)")]
    NoClient,
    /// No call is in flight, and the transport does not say which one it is for.
    #[error("no call is running, so no client can be asked")]
    NoCall,
    /// Calls of more than one session are in flight, and the transport does not say which one it is for.
    #[error("calls of several client sessions are running and the transport does not say which one asks")]
    SeveralSessions,
}

struct Caller {
    client: Client,
    token: ProgressToken,
}

/// A call's place in [`InFlight`], given back when the call ends however it ends.
pub struct Entered {
    calls: Arc<InFlight>,
    id: RequestId,
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.calls.0.lock().expect("in-flight lock").remove(&self.id);
    }
}

impl InFlight {
    pub fn enter(self: &Arc<Self>, id: RequestId, token: ProgressToken, client: Client) -> Entered {
        self.0.lock().expect("in-flight lock").insert(id.clone(), Caller { client, token });
        Entered { calls: self.clone(), id }
    }

    /// The client a question is for (with a link): by the stream it came on, else the one
    /// session with calls in flight.
    pub fn caller(&self, origin: Option<&InboundStreamOrigin>) -> Result<Client, CallerError> {
        let calls = self.0.lock().expect("in-flight lock");
        let linked = |client: &Client| client.link().is_some().then(|| client.clone()).ok_or(CallerError::NoClient);
        if let Some(InboundStreamOrigin::OutboundRequest(id)) = origin {
            let caller = calls.get(id).ok_or(CallerError::CallEnded)?;
            return linked(&caller.client);
        }
        let mut callers = calls.values().map(|c| &c.client);
        let first = linked(callers.next().ok_or(CallerError::NoCall)?)?;
        let session = first.link().map(|link| link.session());
        if callers.any(|other| other.link().map(|link| link.session()) != session) {
            return Err(CallerError::SeveralSessions);
        }
        Ok(first)
    }

    /// The client of the call that `token` tracks.
    pub fn by_token(&self, token: &ProgressToken) -> Option<Arc<dyn ClientLink>> {
        self.0.lock().expect("in-flight lock").values().find(|c| c.token == *token).and_then(|c| c.client.link().cloned())
    }

    /// The client a URL elicitation `id` was passed on to, forgotten once asked for.
    pub fn elicited(&self, id: &str) -> Option<Arc<dyn ClientLink>> {
        let mut elicitations = self.2.lock().expect("elicitations lock");
        let at = elicitations.iter().position(|(e, _)| e == id)?;
        elicitations.remove(at).map(|(_, client)| client)
    }

    fn remember_elicitation(&self, id: &str, client: Arc<dyn ClientLink>) {
        let mut elicitations = self.2.lock().expect("elicitations lock");
        elicitations.push_back((id.to_owned(), client));
        if elicitations.len() > REMEMBERED_ELICITATIONS {
            elicitations.pop_front();
        }
    }

    pub(crate) fn count(&self, kind: AskKind, passed_on: bool) {
        let mut counts = self.1.lock().expect("ask counts lock");
        let (passed, refused) = counts.entry(kind.capability()).or_default();
        *(if passed_on { passed } else { refused }) += 1;
    }

    /// Puts a server's question to `client` (it declared what the question needs), counted
    /// as passed on; as refused instead when seam refused it on the way
    /// (`RequestError::Refused`, a bound it keeps) or withdrew it unanswered
    /// (`RequestError::TimedOut`). `key` is the one a 2026-07-28 server gave it.
    pub(crate) async fn ask(
        &self,
        client: &Client,
        kind: AskKind,
        params: Json,
        key: Option<String>,
    ) -> Result<Json, seam_engine::offers::RequestError> {
        self.count(kind, true);
        let answer = client.ask(kind, params, key).await;
        if matches!(answer, Err(seam_engine::offers::RequestError::Refused(_) | seam_engine::offers::RequestError::TimedOut(_))) {
            let mut counts = self.1.lock().expect("ask counts lock");
            let (passed, refused) = counts.entry(kind.capability()).or_default();
            *passed = passed.saturating_sub(1);
            *refused += 1;
        }
        answer
    }

    /// Per kind of question the server asked, how many were passed on to a client and how many refused.
    pub fn counts(&self) -> serde_json::Map<String, Json> {
        let counts = self.1.lock().expect("ask counts lock");
        counts
            .iter()
            .map(|(kind, (passed, refused))| ((*kind).to_owned(), serde_json::json!({ "passed_on": passed, "refused": refused })))
            .collect()
    }
}

/// A mount's transport that hands each progress report of its server to the call it
/// is for as the report is read, in the order the server sent it. rmcp runs each
/// notification's handler on a task of its own, which may run after the call's
/// result was handed over: the client would be told of progress after the result,
/// that is, not at all. A report no call in flight tracks goes on to rmcp.
pub struct ProgressInOrder<T> {
    pub inner: T,
    pub calls: Arc<InFlight>,
}

impl<T: rmcp::transport::Transport<rmcp::RoleClient>> rmcp::transport::Transport<rmcp::RoleClient> for ProgressInOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<rmcp::RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<rmcp::service::RxJsonRpcMessage<rmcp::RoleClient>> {
        use rmcp::model::{JsonRpcMessage, JsonRpcNotification, ServerNotification};
        loop {
            let message = self.inner.receive().await?;
            if let JsonRpcMessage::Notification(JsonRpcNotification { notification: ServerNotification::ProgressNotification(n), .. }) =
                &message
                && let Some(client) = self.calls.by_token(&n.params.progress_token)
            {
                client.progress(n.params.progress, n.params.total, n.params.message.clone());
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Asks the calling client what mount `mount`'s server asked, as JSON both ways.
pub async fn relay(
    calls: &InFlight,
    mount: &str,
    kind: AskKind,
    params: Json,
    origin: Option<&InboundStreamOrigin>,
) -> Result<Json, McpError> {
    let what = kind.capability();
    let caller = calls.caller(origin).map_err(|why| {
        calls.count(kind, false);
        tracing::warn!(mount, "a {what} request from the server was refused: {why}");
        McpError::new(ErrorCode::METHOD_NOT_FOUND, format!("seam cannot pass this {what} request to a client: {why}"), None)
    })?;
    let client = caller.link().expect("a caller has a link");
    if !client.declares(kind, &params) {
        calls.count(kind, false);
        let agent = client.agent();
        tracing::warn!(mount, agent, "a {what} request from the server was refused: the client did not declare {what}");
        let message = format!("the client of agent `{agent}` did not declare {what} (or this kind of {what})");
        return Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, message, None));
    }
    if kind == AskKind::Elicitation
        && params.get("mode").and_then(Json::as_str) == Some("url")
        && let Some(id) = params.get("elicitationId").and_then(Json::as_str)
    {
        calls.remember_elicitation(id, client.clone());
    }
    calls.ask(&caller, kind, params, None).await.map_err(|e| seam_wire::answer(e, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use seam_engine::offers::RequestError;
    use seam_engine::runtime::BoxFuture;

    struct Session(u64);

    impl ClientLink for Session {
        fn session(&self) -> u64 {
            self.0
        }
        fn agent(&self) -> &str {
            "a"
        }
        fn declares(&self, kind: AskKind, _: &Json) -> bool {
            kind == AskKind::Sampling
        }
        fn ask(&self, _: AskKind, params: Json, _: Option<String>) -> BoxFuture<'static, Result<Json, RequestError>> {
            Box::pin(async move { Ok(params) })
        }
        fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) {}
        fn notify(&self, _: &str, _: Json) {}
    }

    fn session(n: u64) -> Client {
        Client::new(Arc::new(Session(n)))
    }

    #[test]
    fn a_question_goes_to_the_call_whose_stream_it_came_on_else_to_the_only_session_calling() {
        let calls = Arc::new(InFlight::default());
        let (one, two) = (RequestId::Number(1), RequestId::Number(2));
        let token = |n: i64| ProgressToken(RequestId::Number(n));
        assert!(calls.caller(None).is_err(), "no call: nobody to ask");
        let first = calls.enter(one.clone(), token(1), session(7));
        let also_seven = calls.enter(two.clone(), token(2), session(7));
        let session_of = |client: Client| client.link().unwrap().session();
        assert_eq!(session_of(calls.caller(None).unwrap()), 7, "every call is session 7's");
        let other = calls.enter(RequestId::Number(3), token(3), session(8));
        assert!(calls.caller(None).is_err(), "two sessions calling, and no stream to tell them apart");
        assert_eq!(session_of(calls.caller(Some(&InboundStreamOrigin::OutboundRequest(RequestId::Number(3)))).unwrap()), 8);
        assert_eq!(calls.by_token(&token(2)).unwrap().session(), 7);
        drop((first, also_seven));
        assert!(calls.caller(Some(&InboundStreamOrigin::OutboundRequest(one))).is_err(), "that call has ended");
        assert_eq!(session_of(calls.caller(None).unwrap()), 8);
        drop(other);
        let local = calls.enter(two, token(2), Client::default());
        assert!(calls.caller(None).is_err(), "`seam call` has no client to ask");
        drop(local);
    }

    #[test]
    fn why_no_client_can_be_asked_reads_as_it_always_has() {
        let calls = Arc::new(InFlight::default());
        assert_eq!(calls.caller(None).err().unwrap().to_string(), "no call is running, so no client can be asked");
        let ended = InboundStreamOrigin::OutboundRequest(RequestId::Number(9));
        assert_eq!(calls.caller(Some(&ended)).err().unwrap().to_string(), "it came on the stream of a call that has ended");
        let local = calls.enter(RequestId::Number(1), ProgressToken(RequestId::Number(1)), Client::default());
        assert_eq!(calls.caller(None).err().unwrap().to_string(), "the call has no MCP client behind it (`seam call`)");
        drop(local);
        let _one = calls.enter(RequestId::Number(1), ProgressToken(RequestId::Number(1)), session(1));
        let _two = calls.enter(RequestId::Number(2), ProgressToken(RequestId::Number(2)), session(2));
        assert_eq!(
            calls.caller(None).err().unwrap().to_string(),
            "calls of several client sessions are running and the transport does not say which one asks"
        );
    }

    #[test]
    fn url_elicitations_are_remembered_up_to_their_bound_the_oldest_forgotten_first() {
        let calls = InFlight::default();
        for i in 0..REMEMBERED_ELICITATIONS {
            calls.remember_elicitation(&format!("e{i}"), Arc::new(Session(1)));
        }
        assert!(calls.elicited("e0").is_some(), "at the bound every one is remembered");
        calls.remember_elicitation("e0", Arc::new(Session(1)));
        calls.remember_elicitation("past", Arc::new(Session(2)));
        assert!(calls.elicited("e1").is_none(), "one past it, the oldest is forgotten");
        assert_eq!(calls.elicited("past").map(|c| c.session()), Some(2));
        assert!(calls.elicited("past").is_none(), "a completion is passed on once");
    }

    #[tokio::test]
    async fn a_client_that_did_not_declare_what_is_asked_is_not_asked() {
        let calls = Arc::new(InFlight::default());
        let _call = calls.enter(RequestId::Number(1), ProgressToken(RequestId::Number(1)), session(1));
        let asked = relay(&calls, "m", AskKind::Sampling, serde_json::json!({ "x": 1 }), None).await;
        assert_eq!(asked.unwrap(), serde_json::json!({ "x": 1 }));
        let refused = relay(&calls, "m", AskKind::Elicitation, serde_json::json!({}), None).await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(refused.message.contains("did not declare elicitation"), "{}", refused.message);
        let counts = serde_json::Value::Object(calls.counts());
        assert_eq!(
            counts,
            serde_json::json!({ "sampling": { "passed_on": 1, "refused": 0 }, "elicitation": { "passed_on": 0, "refused": 1 } })
        );
    }
}

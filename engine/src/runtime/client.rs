//! The client of a call, as the mounts that serve it reach it: what a server may ask
//! it ([`AskKind`]), the link to it ([`ClientLink`], [`Client`]), how a mount that keeps a
//! connection per client keys it ([`ClientKey`]), its roots ([`Roots`]), and the span of a
//! request a mount sends on its behalf ([`UpstreamSpan`]).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value as Json;

use super::BoxFuture;

/// What a server may ask the client during a call (a server→client request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskKind {
    /// `sampling/createMessage`.
    Sampling,
    /// `elicitation/create`, in form or URL mode (its params say which).
    Elicitation,
    /// `roots/list`.
    Roots,
}

impl AskKind {
    /// The capability a client declares for it, as MCP names it.
    pub fn capability(self) -> &'static str {
        match self {
            AskKind::Sampling => "sampling",
            AskKind::Elicitation => "elicitation",
            AskKind::Roots => "roots",
        }
    }
}

/// The client a call came from, as a mount reaches it during that call: to
/// ask it something, or to tell it how far the call has come. No link for a
/// call with no MCP client behind it (`seam call`): every ask is refused.
/// It carries the call's budget clock, which stands still while the client is asked.
#[derive(Clone, Default)]
pub struct Client {
    link: Option<Arc<dyn ClientLink>>,
    clock: crate::clock::CallClock,
}

impl Client {
    pub fn new(link: Arc<dyn ClientLink>) -> Client {
        Client { link: Some(link), clock: Default::default() }
    }

    pub fn link(&self) -> Option<&Arc<dyn ClientLink>> {
        self.link.as_ref()
    }

    /// The call's budget clock (`crate::clock`).
    pub fn clock(&self) -> &crate::clock::CallClock {
        &self.clock
    }

    /// Asks the client ([`ClientLink::ask`]), the call's clock stopped until it answers:
    /// the time a person takes is not the call's (`serve.input_timeout` bounds it).
    pub async fn ask(&self, kind: AskKind, params: Json, key: Option<String>) -> Result<Json, crate::offers::RequestError> {
        let Some(link) = &self.link else {
            return Err(crate::offers::RequestError::Refused("the call has no MCP client behind it (`seam call`)".to_owned()));
        };
        let _stopped = self.clock.stop();
        link.ask(kind, params, key).await
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.link.is_some() { "Client(linked)" } else { "Client(none)" })
    }
}

/// Which client a request comes from, as a mount that keeps a connection per client
/// session tells them apart (`isolation: per-session`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClientKey {
    /// A 2025-11-25 session, HTTP or stdio ([`ClientLink::session`]): it ends when the
    /// session does (`Running::session_ended`).
    Session(u64),
    /// A 2026-07-28 client, which has no session: its agent, the name of the token it
    /// presented, and the name and version it gives itself in each request's `_meta`
    /// (`io.modelcontextprotocol/clientInfo`, empty when it gives none). Nothing says it
    /// has ended: only idleness ends it.
    Stateless { agent: String, token: Option<String>, client: String },
}

impl ClientKey {
    /// The agent a stateless client says it is of; `None` for a session (seam numbered it).
    pub fn stateless_agent(&self) -> Option<&str> {
        match self {
            ClientKey::Session(_) => None,
            ClientKey::Stateless { agent, .. } => Some(agent),
        }
    }
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientKey::Session(n) => write!(f, "session {n}"),
            ClientKey::Stateless { agent, client, .. } if client.is_empty() => write!(f, "agent `{agent}`'s unnamed 2026-07-28 client"),
            ClientKey::Stateless { agent, client, .. } => write!(f, "agent `{agent}`'s 2026-07-28 client `{client}`"),
        }
    }
}

/// One client session, as the calls it makes see it.
pub trait ClientLink: Send + Sync {
    /// Equal for every call of one client session, different between sessions.
    fn session(&self) -> u64;
    /// The client as a mount with a connection per client session keys it: its session,
    /// or a 2026-07-28 client's identity.
    fn key(&self) -> ClientKey {
        ClientKey::Session(self.session())
    }
    /// The agent the session is served.
    fn agent(&self) -> &str;
    /// Whether the client declared what an ask of `kind` with `params` needs
    /// (for elicitation, the mode its params name).
    fn declares(&self, kind: AskKind, params: &Json) -> bool;
    /// Asks the client, on the stream of the call that asks: its result JSON, or its error.
    /// `key` is the one a 2026-07-28 server gave the question in its `inputRequests`: a
    /// 2026-07-28 client is asked under it when no other open question of the call has it.
    fn ask(&self, kind: AskKind, params: Json, key: Option<String>) -> BoxFuture<'static, Result<Json, crate::offers::RequestError>>;
    /// Tells the client how far the call has come; nothing when it gave no progress token.
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);
    /// Tells the client something about a question it was asked (`method`, `params` as
    /// the server sent them: `notifications/elicitation/complete`), even after the call.
    fn notify(&self, method: &str, params: Json);
    /// Whether the client declared the tasks extension (SEP-2663) for this call: only
    /// then may a call be answered with a task.
    fn takes_tasks(&self) -> bool {
        false
    }
    /// The span of a request the call sends mount `mount`'s server (`method` about
    /// `target`), for tracing: `None` when the front end traces nothing.
    fn upstream_span(&self, _mount: &str, _method: &str, _target: &str) -> Option<Box<dyn UpstreamSpan>> {
        None
    }
}

/// A span of seam's request to a mount's server (the front end's tracing), ended when
/// dropped: the mount holds it for as long as the request runs.
pub trait UpstreamSpan: Send + Sync {
    /// The W3C Trace Context the request carries in its `_meta` (SEP-414): `traceparent`,
    /// and `tracestate` when there is one.
    fn trace_context(&self) -> (String, Option<String>);
    /// The request failed, as `error_type` says.
    fn failed(&self, error_type: &str);
}

/// The MCP client's roots (`roots/list`) as local paths, fetched when a tool
/// asks, so that a call of a tool that does not need them never waits for the client.
#[derive(Clone, Default)]
pub struct Roots(Option<Arc<dyn Fn() -> BoxFuture<'static, Vec<PathBuf>> + Send + Sync>>);

impl Roots {
    pub fn new(fetch: impl Fn() -> BoxFuture<'static, Vec<PathBuf>> + Send + Sync + 'static) -> Roots {
        Roots(Some(Arc::new(fetch)))
    }

    /// The roots; empty when the client offers none.
    pub async fn get(&self) -> Vec<PathBuf> {
        match &self.0 {
            Some(fetch) => fetch().await,
            None => Vec::new(),
        }
    }
}

impl std::fmt::Debug for Roots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Roots(from the client)" } else { "Roots(none)" })
    }
}

//! Why a connection to an MCP server or a sync of its lists failed (`ConnectError`,
//! `SyncError`), in words a user reads. rmcp's own text for a transport's failure
//! names the transport's Rust type (`Transport [seam_mcp::asks::ProgressInOrder<…>]
//! error: …`), and reqwest's quotes the URL (which may carry a secret from `${…}`);
//! what seam shows (`/status`, the status page, the log, tool results) says what
//! happened instead: connection refused, timed out, TLS failed, HTTP status N.

use std::error::Error;
use std::fmt;

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{HttpStatusError, StreamableHttpError};

/// Why a connection attempt failed: the mount's status detail until the next attempt.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The stdio server's process could not be started.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// The stdio server answered the initialize handshake with an error, or closed.
    #[error("handshake failed: {}{stderr}", InWords(&**source))]
    Handshake {
        #[source]
        source: Box<rmcp::service::ClientInitializeError>,
        stderr: StderrTail,
    },
    /// The server did not complete the handshake within `startup_timeout`.
    #[error("no answer within startup_timeout {startup}{stderr}")]
    StartupTimeout { startup: seam_engine::units::Duration, stderr: StderrTail },
    /// A variable `headers_env` or `bearer_token_env` names is not set (or not Unicode).
    #[error("environment variable `{var}` is not set")]
    EnvVar {
        var: String,
        #[source]
        source: std::env::VarError,
    },
    /// A header's name is not a valid HTTP header name.
    #[error("header `{name}`: {source}")]
    HeaderName {
        name: String,
        #[source]
        source: reqwest::header::InvalidHeaderName,
    },
    /// A header's value is not a valid HTTP header value.
    #[error("header `{name}`: {source}")]
    HeaderValue {
        name: String,
        #[source]
        source: reqwest::header::InvalidHeaderValue,
    },
    /// The HTTP client could not be built.
    #[error("{source}")]
    HttpClient {
        #[source]
        source: reqwest::Error,
    },
    /// No token could be got for the server (`auth.oauth`).
    #[error("cannot authorize at {}: {source}", seam_engine::redact::url(url))]
    OAuth {
        url: String,
        #[source]
        source: crate::oauth::OAuthError,
    },
    /// The Streamable HTTP server could not be reached, or failed the handshake.
    #[error("cannot connect to {}: {}", seam_engine::redact::url(url), InWords(&**source))]
    Connect {
        url: String,
        #[source]
        source: Box<rmcp::service::ClientInitializeError>,
    },
}

/// The end of a stdio server's stderr when a handshake failed, shown after the error
/// as `; stderr: …`; empty (and not shown) when it wrote nothing, or for HTTP.
#[derive(Debug, Default)]
pub struct StderrTail(pub String);

impl std::fmt::Display for StderrTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() { Ok(()) } else { write!(f, "; stderr: {}", self.0) }
    }
}

/// Why a sync did not publish the server's lists (the previous listing stays), or
/// why a listing could not be filtered again.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A list request failed (other than "method not found" for a list beside the tools).
    #[error("{method}: {}", InWords(source))]
    ListFailed {
        method: &'static str,
        #[source]
        source: ServiceError,
    },
    /// A list request was answered with another kind of result.
    #[error("unexpected answer to {method}")]
    UnexpectedAnswer { method: &'static str },
    /// The list is longer than its bound (`MAX_IMPORTED_SKILLS` for skills).
    #[error("{method}: the server lists more than {most}")]
    PastBound { method: &'static str, most: usize },
    /// A page's `nextCursor` is one the list already gave.
    #[error("{method}: the server repeated cursor `{cursor}`")]
    RepeatedCursor { method: &'static str, cursor: String },
    /// Two of the server's tools have one raw name.
    #[error("the server listed tool `{name}` twice")]
    ToolListedTwice { name: String },
    /// Two of the server's prompts have one raw name.
    #[error("the server listed prompt `{name}` twice")]
    PromptListedTwice { name: String },
    /// Two of the server's resources (by URI) or templates (by `uriTemplate`) have one key.
    #[error("the server listed `{key}` twice")]
    ListedTwice { key: String },
    /// A tool does not serialize as a JSON object.
    #[error("tool `{name}` has no JSON form")]
    ToolWithoutJson { name: String },
    /// A prompt does not serialize as a JSON object.
    #[error("prompt `{name}` has no JSON form")]
    PromptWithoutJson { name: String },
    /// A resource or template does not serialize as a JSON object.
    #[error("`{key}` has no JSON form")]
    WithoutJson { key: String },
}

/// An error of rmcp's, shown in words (`{}`).
pub struct InWords<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for InWords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&in_words(self.0))
    }
}

/// What `error` says happened, without Rust type names or URLs.
pub fn in_words(error: &(dyn Error + 'static)) -> String {
    let error = beneath_wrappers(error);
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(words) = plainly(e) {
            return words;
        }
        cause = e.source();
    }
    // No cause that says it plainly: the errors' own words, each cause after its error.
    let mut words = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        words.push_str(": ");
        words.push_str(&e.to_string());
        cause = e.source();
    }
    words
}

/// The scope a server's refusal asks for (`403`, `insufficient_scope`), if that is what
/// `error` is.
pub fn scope_needed(error: &(dyn Error + 'static)) -> Option<String> {
    match beneath_wrappers(error).downcast_ref::<StreamableHttpError<reqwest::Error>>()? {
        StreamableHttpError::InsufficientScope(refusal) => refusal.get_required_scope().map(str::to_owned),
        _ => None,
    }
}

/// Whether `error` is the server asking for authorization again (`401`) after what
/// the connection holds was refused and could not be refreshed.
pub fn login_asked(error: &(dyn Error + 'static)) -> bool {
    matches!(beneath_wrappers(error).downcast_ref::<StreamableHttpError<reqwest::Error>>(), Some(StreamableHttpError::AuthRequired(_)))
}

/// The transport's own error beneath rmcp's wrappers, whose text names types.
fn beneath_wrappers<'a>(mut error: &'a (dyn Error + 'static)) -> &'a (dyn Error + 'static) {
    loop {
        let transport: Option<&DynamicTransportError> = match error.downcast_ref::<ClientInitializeError>() {
            Some(ClientInitializeError::TransportError { error, .. }) => Some(error),
            _ => match error.downcast_ref::<ServiceError>() {
                Some(ServiceError::TransportSend(error)) => Some(error),
                _ => error.downcast_ref::<DynamicTransportError>(),
            },
        };
        match transport {
            Some(transport) => error = &*transport.error,
            None => return error,
        }
    }
}

/// What an error says plainly, if it is one that can: HTTP's, the network's.
fn plainly(error: &(dyn Error + 'static)) -> Option<String> {
    if let Some(http) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return match http {
            StreamableHttpError::Client(e) => Some(request_failure(e)),
            StreamableHttpError::HttpStatus(status) => Some(status_words(status)),
            StreamableHttpError::Io(e) => Some(io_words(e)),
            _ => None,
        };
    }
    if let Some(e) = error.downcast_ref::<reqwest::Error>() {
        return Some(request_failure(e));
    }
    if let Some(status) = error.downcast_ref::<HttpStatusError>() {
        return Some(status_words(status));
    }
    error.downcast_ref::<std::io::Error>().map(io_words)
}

fn status_words(status: &HttpStatusError) -> String {
    format!("HTTP status {}", status.status)
}

fn io_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        ErrorKind::TimedOut => "timed out".to_owned(),
        ErrorKind::ConnectionReset => "connection reset".to_owned(),
        ErrorKind::ConnectionAborted => "connection aborted".to_owned(),
        ErrorKind::UnexpectedEof => "the connection closed early".to_owned(),
        _ => e.to_string(),
    }
}

/// A request reqwest could not complete, by its deepest cause (which names no URL).
fn request_failure(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".to_owned();
    }
    if let Some(status) = e.status() {
        return format!("HTTP status {}", status.as_u16());
    }
    let mut deepest: Option<&(dyn Error + 'static)> = None;
    let mut cause = e.source();
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && io.get_ref().is_none()
        {
            return io_words(io);
        }
        deepest = Some(c);
        cause = c.source();
    }
    let detail = deepest.map(|c| c.to_string()).unwrap_or_else(|| e.to_string());
    let lower = detail.to_ascii_lowercase();
    if ["certificate", "tls", "ssl", "handshake"].iter().any(|w| lower.contains(w)) {
        format!("TLS failed: {detail}")
    } else if e.is_connect() {
        format!("could not connect: {detail}")
    } else {
        format!("the request failed: {detail}")
    }
}

#[cfg(test)]
mod tests {
    use super::{ConnectError, StderrTail, SyncError, in_words};
    use rmcp::service::ServiceError;

    #[test]
    fn sync_and_connection_errors_read_as_they_always_have() {
        let method = <rmcp::model::ListToolsRequestMethod as rmcp::model::ConstString>::VALUE;
        let said = |e: SyncError| e.to_string();
        assert_eq!(
            said(SyncError::ListFailed { method, source: ServiceError::TransportClosed }),
            format!("tools/list: {}", ServiceError::TransportClosed)
        );
        assert_eq!(said(SyncError::UnexpectedAnswer { method }), "unexpected answer to tools/list");
        assert_eq!(said(SyncError::PastBound { method, most: 3 }), "tools/list: the server lists more than 3");
        assert_eq!(said(SyncError::RepeatedCursor { method, cursor: "c".into() }), "tools/list: the server repeated cursor `c`");
        assert_eq!(said(SyncError::ToolListedTwice { name: "t".into() }), "the server listed tool `t` twice");
        assert_eq!(said(SyncError::PromptListedTwice { name: "p".into() }), "the server listed prompt `p` twice");
        assert_eq!(said(SyncError::ListedTwice { key: "file:///x".into() }), "the server listed `file:///x` twice");
        assert_eq!(said(SyncError::ToolWithoutJson { name: "t".into() }), "tool `t` has no JSON form");
        assert_eq!(said(SyncError::PromptWithoutJson { name: "p".into() }), "prompt `p` has no JSON form");
        assert_eq!(said(SyncError::WithoutJson { key: "k".into() }), "`k` has no JSON form");
        let startup = seam_engine::units::Duration::from_millis(300);
        let timed_out = |tail: &str| ConnectError::StartupTimeout { startup, stderr: StderrTail(tail.into()) }.to_string();
        assert_eq!(timed_out(""), "no answer within startup_timeout 300ms");
        assert_eq!(timed_out("boom"), "no answer within startup_timeout 300ms; stderr: boom");
        let closed = || Box::new(rmcp::service::ClientInitializeError::ConnectionClosed("eof".into()));
        let handshake = ConnectError::Handshake { source: closed(), stderr: StderrTail("boom".into()) };
        assert_eq!(handshake.to_string(), format!("handshake failed: {}; stderr: boom", closed()));
        let secret = ConnectError::Connect { url: "http://alice:hunter2@h/mcp?key=k".into(), source: closed() };
        assert_eq!(secret.to_string(), format!("cannot connect to http://***@h/mcp?key=***: {}", closed()));
        let connect = ConnectError::Connect { url: "http://h/mcp".into(), source: closed() };
        assert_eq!(connect.to_string(), format!("cannot connect to http://h/mcp: {}", closed()));
        let spawn = ConnectError::Spawn { command: "x".into(), source: std::io::Error::from(std::io::ErrorKind::NotFound) };
        assert_eq!(spawn.to_string(), format!("cannot start `x`: {}", std::io::Error::from(std::io::ErrorKind::NotFound)));
        let unset = ConnectError::EnvVar { var: "TOKEN".into(), source: std::env::VarError::NotPresent };
        assert_eq!(unset.to_string(), "environment variable `TOKEN` is not set");
        let name = reqwest::header::HeaderName::try_from("a b").unwrap_err();
        let expected = format!("header `a b`: {name}");
        assert_eq!(ConnectError::HeaderName { name: "a b".into(), source: name }.to_string(), expected);
    }

    /// A refused connection through every wrapper rmcp puts around it reads as one:
    /// no type names, no URL.
    #[tokio::test]
    async fn a_refused_connection_reads_as_connection_refused() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let e = client.get(format!("http://alice:hunter2@127.0.0.1:{port}/mcp")).send().await.unwrap_err();
        assert_eq!(in_words(&e), "connection refused");
        let wrapped = rmcp::transport::streamable_http_client::StreamableHttpError::Client(e);
        let dynamic = rmcp::transport::DynamicTransportError::from_parts(
            "ProgressInOrder<WorkerTransport<…>>",
            std::any::TypeId::of::<()>(),
            Box::new(wrapped),
        );
        let initialize = rmcp::service::ClientInitializeError::TransportError { error: dynamic, context: "send initialize".into() };
        assert_eq!(in_words(&initialize), "connection refused");
    }

    #[test]
    fn an_error_without_a_plain_cause_keeps_its_own_words() {
        let closed = rmcp::service::ClientInitializeError::ConnectionClosed("eof".into());
        assert_eq!(in_words(&closed), closed.to_string());
        let status = rmcp::transport::streamable_http_client::HttpStatusError::new(503, None);
        let dynamic = rmcp::transport::DynamicTransportError::from_parts(
            "T",
            std::any::TypeId::of::<()>(),
            Box::new(rmcp::transport::streamable_http_client::StreamableHttpError::<reqwest::Error>::HttpStatus(status)),
        );
        assert_eq!(in_words(&rmcp::service::ServiceError::TransportSend(dynamic)), "HTTP status 503");
    }
}

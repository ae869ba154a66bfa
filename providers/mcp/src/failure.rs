//! Why a connection to an MCP server failed, in words a user reads. rmcp's own
//! text for a transport's failure names the transport's Rust type
//! (`Transport [seam_mcp::asks::ProgressInOrder<…>] error: …`), and reqwest's
//! quotes the URL (which may carry a secret from `${…}`); what seam shows
//! (`/status`, the status page, the log, tool results) says what happened
//! instead: connection refused, timed out, TLS failed, HTTP status N.

use std::error::Error;
use std::fmt;

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{HttpStatusError, StreamableHttpError};

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
    use super::in_words;

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

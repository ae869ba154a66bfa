//! The MCP wire pieces both sides of seam use: the stdio line transport
//! (a mount's child, and `seam serve` over stdio), MCP's log levels as the
//! engine carries them (by name) and their order (a mount asks its server for
//! the most verbose level any session asked for; a session is sent what is at
//! or above its own), and the JSON-RPC errors between rmcp's type and the
//! engine's `RequestError`. Protocol types and constants are rmcp's; this
//! crate holds only what rmcp does not.

pub mod stdio;

use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use seam_engine::offers::RequestError;

/// A request sent to a peer and not yet answered: dropped while set (its
/// sender gave up, or was dropped with what it was part of), it tells the peer
/// the request is abandoned, which is also how rmcp lets go of its pending
/// entry. Clear it once the answer is in.
pub struct Abandoned<R: rmcp::service::ServiceRole>(pub Option<(rmcp::Peer<R>, rmcp::model::RequestId)>)
where
    R::Not: From<rmcp::model::CancelledNotification>;

impl<R: rmcp::service::ServiceRole> Drop for Abandoned<R>
where
    R::Not: From<rmcp::model::CancelledNotification>,
{
    fn drop(&mut self) {
        if let Some((peer, id)) = self.0.take() {
            let reason = Some("the request was given up on".to_owned());
            let cancelled = rmcp::model::CancelledNotification::new(rmcp::model::CancelledNotificationParam::new(Some(id), reason));
            tokio::spawn(async move {
                let _ = peer.send_notification(cancelled.into()).await;
            });
        }
    }
}

/// A peer's JSON-RPC error, to be relayed as it is.
pub fn relayed(e: ErrorData) -> RequestError {
    RequestError::Upstream { code: e.code.0, message: e.message.into_owned(), data: e.data }
}

/// What a peer is told for a request that got no result: a relayed error as
/// it came; nothing to answer to as `resource_not_found` for a request about
/// the resource `resource`, with its URI in `data` (SEP-2164), else as invalid
/// params; anything else as an internal error.
pub fn answer(e: RequestError, resource: Option<&str>) -> ErrorData {
    match e {
        RequestError::Unknown(message) if let Some(uri) = resource => {
            ErrorData::resource_not_found(message, Some(serde_json::json!({ "uri": uri })))
        }
        RequestError::Unknown(message) => ErrorData::invalid_params(message, None),
        RequestError::Unavailable(message) | RequestError::Refused(message) | RequestError::TimedOut(message) => {
            ErrorData::internal_error(message, None)
        }
        RequestError::Upstream { code, message, data } => ErrorData::new(ErrorCode(code), message, data),
        RequestError::Denied { message, data } => ErrorData::invalid_request(message, Some(data)),
    }
}

/// A log level's MCP name (`info`), as the engine carries it.
#[allow(deprecated)]
pub fn level_name(level: rmcp::model::LoggingLevel) -> String {
    serde_json::to_value(level).ok().and_then(|l| l.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The log level an MCP name (`info`) names.
#[allow(deprecated)]
pub fn level_named(name: &str) -> Option<rmcp::model::LoggingLevel> {
    serde_json::from_value(serde_json::Value::from(name)).ok()
}

/// How much a log level lets through: the more verbose, the larger.
/// (Logging is deprecated by SEP-2577, and still the 2025-11-25 clients' way.)
#[allow(deprecated)]
pub fn verbosity(level: rmcp::model::LoggingLevel) -> u8 {
    use rmcp::model::LoggingLevel::*;
    match level {
        Emergency => 0,
        Alert => 1,
        Critical => 2,
        Error => 3,
        Warning => 4,
        Notice => 5,
        Info => 6,
        Debug => 7,
    }
}

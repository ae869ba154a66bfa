//! The MCP wire pieces both sides of seam use: the stdio line transport
//! (a mount's child, and `seam serve` over stdio) and the order of MCP's log
//! levels (a mount asks its server for the most verbose level any session
//! asked for; a session is sent what is at or above its own). Protocol types
//! and constants are rmcp's; this crate holds only what rmcp does not.

pub mod stdio;

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

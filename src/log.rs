//! seam's log on stderr (stdout may be the MCP protocol): for people by default,
//! or one JSON object per line (`--log-format json`) whose keys are the event's
//! fields, for log shippers and for scripts that wait on what seam did (a
//! reload's `outcome`, the `url` it serves at) without reading its prose.

use std::sync::atomic::{AtomicBool, Ordering};

use clap::ValueEnum;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// Set once the JSON format is installed: the operator's own lines ([`say`]) become events too.
static JSON: AtomicBool = AtomicBool::new(false);

/// Whether the log is written as JSON lines.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Writes a line for the operator on stderr. Unlike `eprintln!`, it loses the
/// line when stderr is closed (the process that read it has gone) instead of
/// panicking: a running `serve` must still stop on SIGTERM and dispose its children.
/// In the JSON format it is an event of its own, so that every line stays one object.
pub fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    if json() {
        tracing::info!(target: "seam", "{line}");
    } else {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// Installs the log for a command that runs mounts; `RUST_LOG` filters it.
pub fn init(format: Format) {
    init_exporting(format, None);
}

/// [`init`], and with `spans` (tracing on, `crate::telemetry`) seam's own spans (a
/// reload, a mount's start: targets `seam…`) are exported as traces. The log shows
/// events only: a span's name never prefixes a line.
pub fn init_exporting(format: Format, spans: Option<opentelemetry_sdk::trace::SdkTracer>) {
    use std::io::IsTerminal as _;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::FilterExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // rmcp logs every handshake and notification at `info`; seam's own lines are what an operator wants.
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let events = tracing_subscriber::filter::filter_fn(|meta| !meta.is_span() && !quotes_secrets(meta)).and(filter);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(|| RedactedLine(Vec::new()))
        // By default a failed write is reported with `eprintln!`, which panics on a closed stderr.
        .log_internal_errors(false);
    let log = match format {
        Format::Human => layer.with_ansi(std::io::stderr().is_terminal()).with_filter(events).boxed(),
        Format::Json => layer.json().flatten_event(true).with_current_span(false).with_span_list(false).with_filter(events).boxed(),
    };
    let exported = spans.map(|tracer| {
        let seams = tracing_subscriber::filter::filter_fn(|meta| meta.is_span() && meta.target().starts_with("seam"));
        // The span's own fields only: no source location, thread or busy/idle timings.
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(seams)
    });
    let installed = tracing_subscriber::registry().with(log).with(exported).try_init();
    JSON.store(installed.is_ok() && format == Format::Json, Ordering::Relaxed);
}

/// Whether an event is one a library writes with a secret in it, which no `RUST_LOG`
/// lets through: rmcp's OAuth, below `info`, quotes the authorization code it exchanges
/// (the code and its PKCE verifier make a token).
fn quotes_secrets(meta: &tracing::Metadata<'_>) -> bool {
    meta.target().starts_with("rmcp::transport::auth") && *meta.level() > tracing::Level::INFO
}

/// One log event on its way to stderr, written there whole when dropped, with any secret
/// it quotes masked (`seam_engine::redact::text`): seam shows URLs masked itself, but a
/// library may log a request (rmcp logs reqwest's errors, URL and all).
struct RedactedLine(Vec<u8>);

impl std::io::Write for RedactedLine {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactedLine {
    fn drop(&mut self) {
        let line = String::from_utf8_lossy(&self.0);
        let masked = match seam_engine::redact::text(&line) {
            // A JSON line is masked string by string, so a mask cannot swallow an escape and end the object's text.
            std::borrow::Cow::Owned(_) if json() => masked_json(&line),
            masked => masked.into_owned(),
        };
        let _ = std::io::Write::write_all(&mut std::io::stderr(), masked.as_bytes());
    }
}

/// A JSON log line with the secrets in each of its strings masked; a line that is not JSON, masked as text.
fn masked_json(line: &str) -> String {
    fn mask(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) => {
                if let std::borrow::Cow::Owned(masked) = seam_engine::redact::text(text) {
                    *text = masked;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(mask),
            serde_json::Value::Object(fields) => fields.values_mut().for_each(mask),
            _ => {}
        }
    }
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(mut value) => {
            mask(&mut value);
            format!("{value}\n")
        }
        Err(_) => seam_engine::redact::text(line).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    /// A secret just before an escaped quote: masking the JSON text would swallow the escape.
    #[test]
    fn a_json_line_stays_json_when_a_secret_in_it_is_masked() {
        let event = serde_json::json!({ "message": "GET https://h/?api_key=abc\"then", "level": "INFO" });
        let line = format!("{event}\n");
        assert!(serde_json::from_str::<serde_json::Value>(&seam_engine::redact::text(&line)).is_err(), "the case this guards");
        let masked: serde_json::Value = serde_json::from_str(&super::masked_json(&line)).unwrap();
        assert_eq!(masked["message"], "GET https://h/?api_key=***\"then");
        assert_eq!(masked["level"], "INFO");
    }
}

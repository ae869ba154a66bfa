//! One file per CLI verb.

pub mod audit;
pub mod call;
pub mod diff;
pub mod export;
pub mod graph;
pub mod import;
pub mod inventory;
pub mod lock;
pub mod login;
pub mod schema;
pub mod serve;
pub mod test;
pub mod validate;

use std::io::Write as _;
use std::path::Path;

use seam_engine::env::ProcessEnv;
use seam_engine::{Checked, Engine};

use crate::error::Error;

/// Checks one composition; an unreadable file is an I/O error (exit 2).
pub fn check(engine: &Engine, path: &Path) -> Result<Checked, Error> {
    Ok(engine.check_file(path, &ProcessEnv)?)
}

/// Prints a composition's diagnostics (human form) to stderr; true when it has errors.
pub fn report_errors(checked: &Checked) -> bool {
    let mut err = std::io::stderr().lock();
    for d in &checked.diagnostics {
        let _ = write!(err, "{}", seam_engine::render::human(d, &checked.sources));
    }
    checked.errors() > 0
}

/// The runtime every command that starts a composition runs on.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Error::Runtime)
}

/// The runtime of `seam serve --transport http`: one worker per core but
/// one, at least one. A call through seam is a chain of hand-offs between
/// tasks (the connection, rmcp's session worker and service loop, the
/// handler, the mount's client and back); on one worker a hand-off is a
/// queue push, across workers a wake-up of another thread, and seam's
/// stdio servers (and often its clients) want the other core. On 2 cores
/// one worker took a tenth off the CPU time of a call and a fifth off the
/// p50 at 16 clients (BENCHMARKS.md Part 1, "One path (issue 24) landed").
/// CPU-heavy work goes to the blocking pool as on any runtime.
pub fn http_runtime() -> Result<tokio::runtime::Runtime, Error> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    tokio::runtime::Builder::new_multi_thread().worker_threads(cores.saturating_sub(1).max(1)).enable_all().build().map_err(Error::Runtime)
}

/// The runtime of a deployment that serves one client (over stdio): one
/// thread. Each call is a chain of hand-offs between tasks (client pipe,
/// gateway, the mount's pipe and back); on one thread a hand-off is a queue
/// push, where across workers it is a futex wake and a context switch. What
/// could hold the thread runs on the blocking pool: HTML conversion, skill
/// scans, a reload's check, and the `lsp` tool's reading of the files its
/// locations name when there are several. Left inline: the one file a question
/// is about and the file of a single location (capped at `max_document_bytes`,
/// opened non-blocking).
pub fn single_client_runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(Error::Runtime)
}

pub fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
}

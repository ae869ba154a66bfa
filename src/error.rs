//! Why a command could not do its job: `main` prints it as `seam: <error>` and
//! exits 2 (usage or I/O). What a composition says is not an error here: it is
//! diagnostics, and exit 1.

use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("--args must be a JSON object")]
    ArgsNotAnObject,
    /// `login`/`logout` of a mount that is no `mcp.http` mount with `auth.oauth`.
    #[error("mount `{mount}` in {} is no `mcp.http` mount with `auth.oauth`", file.display())]
    NoOAuth { mount: String, file: PathBuf },
    /// A login that could not be made (the message never holds a token or a secret).
    #[error("cannot log in: {0}")]
    Login(String),
    #[error("--args is not JSON: {0}")]
    ArgsNotJson(#[source] serde_json::Error),
    #[error("no agent `{agent}` in {}", file.display())]
    UnknownAgent { agent: String, file: PathBuf },
    /// `export --transport http` for an agent whose token a client cannot name.
    #[error("{}, {pointer}: agent `{agent}`'s token is read from {}: a client can take it only from an environment variable (`serve.bearer_token_env`); export stdio instead", file.display(), path.display())]
    TokenFromFile { agent: String, path: PathBuf, file: PathBuf, pointer: String },
    /// `inventory --probe` could not start the composition.
    #[error("{} could not be started", .0.display())]
    NotStarted(PathBuf),
    /// A composition could not be read at all.
    #[error(transparent)]
    Unreadable(#[from] seam_engine::load::ReadError),
    #[error("{}: {source}", path.display())]
    Walk { path: PathBuf, source: std::io::Error },
    #[error("{}: no such file or directory", .0.display())]
    NoSuchPath(PathBuf),
    /// A file seam reads whole (a client's config for `import`, a test file) could not be read.
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{} is {what}: seam reads it from a regular file only", path.display())]
    NotAFile { path: PathBuf, what: &'static str },
    #[error("{} is larger than {limit} bytes (--max-composition-bytes)", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    /// The async runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot install signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    #[error("cannot export traces as OTEL_EXPORTER_OTLP_* asks: {0}")]
    Telemetry(#[source] opentelemetry_otlp::ExporterBuildError),
    #[error("cannot listen on {listen}: {source}")]
    Listen { listen: SocketAddr, source: std::io::Error },
    #[error("cannot read the address seam listens on: {0}")]
    Socket(#[source] std::io::Error),
    #[error("cannot watch: {0}")]
    Watch(#[source] notify_debouncer_full::notify::Error),
    #[error("MCP handshake: {0}")]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
}

/// A command-line value clap could not take (its value parsers say why).
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    #[error("`{0}` is not a duration such as 100ms or 30s")]
    NotADuration(String),
    #[error("`{0}` is not a size such as 4MiB or 500KB")]
    NotASize(String),
}

impl Error {
    /// Why file `path` was not read as a composition is read (`load::read_bounded`, at most `limit` bytes).
    pub fn unread(path: &std::path::Path, limit: u64, unread: seam_engine::load::Unread) -> Error {
        use seam_engine::load::Unread;
        match unread {
            Unread::Io(source) => Error::Read { path: path.to_owned(), source },
            Unread::NotRegular(what) => Error::NotAFile { path: path.to_owned(), what },
            Unread::TooLarge => Error::TooLarge { path: path.to_owned(), limit },
        }
    }
}

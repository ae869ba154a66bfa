//! The `seam` binary's front-end: CLI flags and output formats. Only this crate
//! knows the command line; the engine and the surfaces know nothing of it.

/// A line for the operator on stderr, as `eprintln!` takes it: [`say`].
macro_rules! say {
    ($($line:tt)*) => {
        $crate::log::say(format_args!($($line)*))
    };
}

mod answer;
mod body;
mod client_link;
mod commands;
pub mod error;
mod gateway;
mod http;
mod listen;
pub mod log;
mod metrics;
mod refusal;
mod sessions;
mod tally;
mod telemetry;
mod traffic;
mod ui;
mod waiting;
mod watch;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use seam_engine::Engine;
use seam_engine::resolve::DEFAULT_AGENT;
use seam_engine::surface::Surface;

/// The surfaces compiled into this binary.
pub fn surfaces() -> Vec<&'static dyn Surface> {
    vec![&seam_web::SURFACE, &seam_lsp::SURFACE, &seam_mcp::SURFACE, &seam_skills::SURFACE]
}

pub fn engine() -> Engine {
    Engine::new(surfaces())
}

/// What a command found; the process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Valid = 0,
    Invalid = 1,
    UsageOrIo = 2,
}

#[derive(Parser, Debug)]
#[command(name = "seam", version, about = "Compose AI-agent tool surfaces: validate, graph, diff and serve seam compositions")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// The most bytes seam reads for one composition, the files it extends included (a file past it
    /// is an error, read no further).
    #[arg(long, global = true, env = "SEAM_MAX_COMPOSITION_BYTES", default_value_t = seam_engine::units::Size::from_bytes(seam_engine::load::DEFAULT_MAX_COMPOSITION_BYTES), value_parser = parse_size)]
    pub max_composition_bytes: seam_engine::units::Size,
    /// How `serve`, `call` and `inventory --probe` write their log on stderr: for people, or one JSON
    /// object per line, with the event's fields as keys, for log shippers and scripts.
    #[arg(long, global = true, value_enum, env = "SEAM_LOG_FORMAT", default_value_t = log::Format::Human)]
    pub log_format: log::Format,
}

/// Where `serve --transport http` listens unless told, and where `export` says it does.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8931";

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check a trail's chain, oldest file first (`audit.jsonl.2 audit.jsonl.1 audit.jsonl`),
    /// and with `--key-env` each record's HMAC; exit 1 naming the first broken record.
    Verify {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The head the trail must end at (`/status`'s `audit.head`, or the last one logged): catches a cut tail.
        #[arg(long)]
        head: Option<String>,
        /// The environment variable holding the HMAC key.
        #[arg(long)]
        key_env: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Validate compositions (files, or folders searched for *.yaml / *.yml).
    Validate {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
        format: ReportFormat,
        /// Treat warnings as errors.
        #[arg(long)]
        deny_warnings: bool,
        /// Also check this machine: executables on PATH, readable secret files, skill folders.
        #[arg(long)]
        environment: bool,
    },
    /// Check what compositions mean: the cases of test files (files, or folders searched for *.test.yaml).
    Test {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = commands::test::TestFormat::Human)]
        format: commands::test::TestFormat,
        /// Start each composition and check its servers' own tools too (by default nothing starts).
        #[arg(long)]
        live: bool,
    },
    /// Write the lock of what the composition's servers offer (`NAME.lock.json`), check it, or approve changes.
    Lock {
        file: PathBuf,
        /// Compare with the lock and exit 1 when the servers offer something else; write nothing.
        #[arg(long, conflicts_with = "update")]
        check: bool,
        /// Approve what the servers offer now: rewrite the lock's entries (only these mounts' and tools', when named).
        #[arg(long)]
        update: bool,
        /// With `--update`: only this mount (repeatable).
        #[arg(long = "mount", requires = "update")]
        mounts: Vec<String>,
        /// With `--update`: only this tool, prompt or resource template, by the server's name (repeatable).
        #[arg(long = "tool", requires = "update")]
        tools: Vec<String>,
    },
    /// The audit trail `serve.audit` writes.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Print the dependency graph of a composition.
    Graph {
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
        format: GraphFormat,
    },
    /// Show what a reload from OLD to NEW would add, change, remove, keep and restart.
    Diff {
        old: PathBuf,
        new: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Per kind and mount: compiled, configured, visible (per agent), ready.
    Inventory {
        file: PathBuf,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Start the composition to report `ready` per mount, then shut it down.
        #[arg(long)]
        probe: bool,
    },
    /// Print the JSON Schema of the composition format (with `--test`, of `seam test`'s files).
    Schema {
        #[arg(long)]
        test: bool,
    },
    /// Run a composition and serve an agent's tools over MCP, reloading when the file changes.
    Serve {
        file: PathBuf,
        #[arg(long, default_value = DEFAULT_AGENT)]
        agent: String,
        #[arg(long, value_enum, default_value_t = Transport::Stdio)]
        transport: Transport,
        /// Where `--transport http` listens.
        #[arg(long, default_value = DEFAULT_LISTEN)]
        listen: std::net::SocketAddr,
        /// Do not watch the files; reload only on SIGHUP.
        #[arg(long)]
        no_watch: bool,
        /// How long file events settle before a reload.
        #[arg(long, default_value = "100ms", value_parser = parse_duration)]
        debounce: std::time::Duration,
        /// How long retired mounts wait for calls on the old generation before they are disposed anyway.
        #[arg(long, default_value = "30s", value_parser = parse_duration)]
        drain_timeout: std::time::Duration,
        /// Listen beyond loopback although some agent has no token (`serve.bearer_token_env`): anyone who can reach seam can call its tools.
        #[arg(long)]
        insecure_no_auth: bool,
        /// Measure nothing for `/metrics` (over HTTP), which then answers 404.
        #[arg(long)]
        no_metrics: bool,
    },
    /// Print the snippet of an MCP client's config that connects it to `seam serve FILE`.
    Export {
        file: PathBuf,
        #[arg(long, value_enum)]
        client: commands::export::Client,
        /// stdio: the client starts `seam serve`; http: it calls a `seam serve --transport http` running on its own.
        #[arg(long, value_enum, default_value_t = Transport::Stdio)]
        transport: Transport,
        #[arg(long, default_value = DEFAULT_AGENT)]
        agent: String,
        /// Where that `seam serve --transport http` listens.
        #[arg(long, default_value = DEFAULT_LISTEN)]
        listen: std::net::SocketAddr,
    },
    /// Write a composition from an MCP client's config (Claude Desktop, Claude Code, VS Code, Cursor, Codex).
    Import {
        /// The client's config (`claude_desktop_config.json`, `.mcp.json`, `.vscode/mcp.json`, `.cursor/mcp.json`, `config.toml`).
        file: PathBuf,
        /// The client whose config FILE is; detected when not given.
        #[arg(long, value_enum)]
        format: Option<commands::import::Format>,
        /// Write the composition here instead of to stdout.
        #[arg(short, long)]
        out: Option<PathBuf>,
    },
    /// Log in for an `mcp.http` mount whose server asks for OAuth (`auth.oauth`): prints the
    /// URL to open and keeps the tokens in the mount's state file
    Login {
        file: PathBuf,
        mount: String,
        /// The agent whose own tokens these are (a mount with `per_agent: true`)
        #[arg(long)]
        agent: Option<String>,
        /// Do not open a browser (implied without a display)
        #[arg(long)]
        no_browser: bool,
        /// Scopes to ask for beyond the mount's `scopes` (space-separated; a step-up the server asked for)
        #[arg(long)]
        scope: Option<String>,
    },
    /// Forget the tokens `seam login` kept for a mount
    Logout {
        file: PathBuf,
        mount: String,
        /// The agent whose own tokens to forget (a mount with `per_agent: true`)
        #[arg(long)]
        agent: Option<String>,
    },
    /// Make one tool call through the composition and print the MCP result.
    Call {
        file: PathBuf,
        tool: String,
        /// The arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        #[arg(long, default_value = DEFAULT_AGENT)]
        agent: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Stdio,
    Http,
}

/// A duration as the composition writes one (`100ms`, `30s`).
fn parse_duration(text: &str) -> Result<std::time::Duration, error::ArgError> {
    seam_engine::units::Duration::parse(text).map(|d| d.to_std()).ok_or_else(|| error::ArgError::NotADuration(text.to_owned()))
}

/// A size as the composition writes one (`4MiB`, `500KB`).
fn parse_size(text: &str) -> Result<seam_engine::units::Size, error::ArgError> {
    seam_engine::units::Size::parse(text).ok_or_else(|| error::ArgError::NotASize(text.to_owned()))
}

/// Buffers of 1 MiB and more (a file's bytes, an answer read or written whole) are
/// mapped for themselves and given back to the system when freed. glibc raises that
/// threshold as large blocks are freed, up to 32 MiB, and then keeps them in its
/// per-thread arenas: after 80 concurrent reads of a 15 MiB file, seam held 500 MiB it
/// no longer used (734 MiB at peak); with the threshold fixed, 32 MiB (108 MiB at peak;
/// BENCHMARKS.md, "Issue 34's hostile inputs"). Other allocators (mimalloc) cost more
/// memory at rest.
fn return_large_buffers_at_once() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any thread is started.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Human,
    Json,
    Github,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Dot,
    Mermaid,
    Json,
    /// Laid out and drawn in process, the drawing the status page shows.
    Svg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// Runs one command, writing its output to stdout and diagnostics to stderr (human) or stdout (json, github).
pub fn run(cli: Cli) -> Result<Exit, error::Error> {
    return_large_buffers_at_once();
    let engine = engine().with_max_composition_bytes(cli.max_composition_bytes.bytes());
    match cli.command {
        Command::Validate { paths, format, deny_warnings, environment } => {
            commands::validate::run(&engine, &paths, format, deny_warnings, environment)
        }
        Command::Test { paths, format, live } => {
            if live {
                log::init(cli.log_format);
            }
            commands::test::run(&engine, &paths, format, live, cli.max_composition_bytes.bytes())
        }
        Command::Lock { file, check, update, mounts, tools } => {
            log::init(cli.log_format);
            commands::lock::run(&file, commands::lock::Args { check, update, mounts, tools }, cli.max_composition_bytes.bytes())
        }
        Command::Audit { command: AuditCommand::Verify { paths, head, key_env } } => {
            commands::audit::verify(commands::audit::Args { paths, head, key_env })
        }
        Command::Graph { file, format } => commands::graph::run(&engine, &file, format),
        Command::Diff { old, new, format } => commands::diff::run(&engine, &old, &new, format),
        Command::Inventory { file, agent, format, probe } => {
            if probe {
                log::init(cli.log_format);
            }
            commands::inventory::run(&engine, &file, agent.as_deref(), format, probe)
        }
        Command::Schema { test } => commands::schema::run(&engine, test),
        Command::Serve { file, agent, transport, listen, no_watch, debounce, drain_timeout, insecure_no_auth, no_metrics } => {
            // Before any async runtime (the exporter's client is a blocking one), and before the
            // log, which exports seam's own spans through it. Dropped after the run: it flushes.
            let tracing = telemetry::start().map_err(error::Error::Telemetry)?;
            log::init_exporting(cli.log_format, tracing.as_ref().map(telemetry::Tracing::tracer));
            let args = commands::serve::Args {
                file,
                agent,
                transport,
                listen,
                watch: !no_watch,
                debounce,
                drain_timeout,
                insecure_no_auth,
                metrics: !no_metrics,
            };
            let served = commands::serve::run(engine, args);
            drop(tracing);
            served
        }
        Command::Export { file, client, transport, agent, listen } => {
            commands::export::run(&engine, &file, client, transport, agent, listen)
        }
        Command::Import { file, format, out } => {
            commands::import::run(&engine, &file, format, out.as_deref(), cli.max_composition_bytes.bytes())
        }
        Command::Login { file, mount, agent, no_browser, scope } => {
            log::init(cli.log_format);
            let scopes = scope.iter().flat_map(|s| s.split_whitespace()).map(str::to_owned).collect();
            commands::login::login(&engine, file, mount, agent, no_browser, scopes)
        }
        Command::Logout { file, mount, agent } => commands::login::logout(&engine, file, mount, agent),
        Command::Call { file, tool, args, agent } => {
            log::init(cli.log_format);
            commands::call::run(engine, file, tool, args, agent)
        }
    }
}

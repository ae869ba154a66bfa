//! The `seam` binary's front-end: CLI flags and output formats. Only this crate
//! knows the command line; the engine and the surfaces know nothing of it.

mod commands;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use seam_engine::Engine;
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
pub enum Outcome {
    Valid = 0,
    Invalid = 1,
    UsageOrIo = 2,
}

#[derive(Parser, Debug)]
#[command(name = "seam", version, about = "Compose AI-agent tool surfaces: validate, graph and diff seam compositions")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
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
    },
    /// Print the JSON Schema of the composition format.
    Schema,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// Runs one command, writing its output to stdout and diagnostics to stderr (human) or stdout (json, github).
pub fn run(cli: Cli) -> Result<Outcome, String> {
    let engine = engine();
    match cli.command {
        Command::Validate { paths, format, deny_warnings, environment } => {
            commands::validate::run(&engine, &paths, format, deny_warnings, environment)
        }
        Command::Graph { file, format } => commands::graph::run(&engine, &file, format),
        Command::Diff { old, new, format } => commands::diff::run(&engine, &old, &new, format),
        Command::Inventory { file, agent, format } => commands::inventory::run(&engine, &file, agent.as_deref(), format),
        Command::Schema => commands::schema::run(&engine),
    }
}

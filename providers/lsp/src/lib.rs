//! The LSP surface: one `lsp` tool with four questions, routed by file
//! extension to `lsp.stdio` language servers. `lib.rs` holds the kind's
//! configuration and its exclusive extension claims; `host` the running mount
//! (a server per workspace, started lazily), `client` one server connection,
//! `framing` the base protocol, `tool` the `lsp` tool.

pub mod client;
pub mod framing;
pub mod host;
pub mod tool;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use seam_engine::codes::CodeDoc;
use seam_engine::diagnostic::escape_pointer_segment;
use seam_engine::model::Spawn;
use seam_engine::surface::{Claim, Exposure, FixedTool, Kind, MountCx, MountKind, ResolvedMount, Serving, Surface, SurfaceCx, Tool};
use seam_engine::units::{Duration, Size};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

pub struct LspSurface;

pub static SURFACE: LspSurface = LspSurface;

fn d(ms: u64) -> Duration {
    Duration::from_millis(ms)
}
fn startup_timeout() -> Duration {
    d(20_000)
}
fn max_message_bytes() -> Size {
    Size::mb(16)
}
fn max_stderr_bytes() -> Size {
    Size::mb(1)
}
fn max_document_bytes() -> Size {
    Size::mb(4)
}
fn shutdown_timeout() -> Duration {
    d(5_000)
}
fn kill_grace() -> Duration {
    d(2_000)
}

/// `lsp.stdio`: a language server spoken to over stdin/stdout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StdioServer {
    #[serde(default)]
    #[schemars(skip)]
    pub kind: String,
    #[serde(flatten)]
    pub spawn: Spawn,
    /// File extensions this server answers for (`.ts: typescript`); exclusive across mounts, lowercase after normalization.
    #[schemars(extend("propertyNames" = { "pattern": r"^\.[^./\\]+$" }), extend("minProperties" = 1))]
    pub extensions: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization_options: Option<Json>,
    /// Answers to `workspace/configuration`, by section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<Json>,
    #[serde(default = "startup_timeout")]
    pub startup_timeout: Duration,
    #[serde(default = "max_message_bytes")]
    pub max_message_bytes: Size,
    #[serde(default = "max_stderr_bytes")]
    pub max_stderr_bytes: Size,
    #[serde(default = "max_document_bytes")]
    pub max_document_bytes: Size,
    #[serde(default = "shutdown_timeout")]
    pub shutdown_timeout: Duration,
    #[serde(default = "kill_grace")]
    pub kill_grace: Duration,
}

fn lsp_timeout() -> Duration {
    d(60_000)
}
fn max_locations() -> u32 {
    100
}
fn max_result_chars() -> u64 {
    16_000
}

/// Settings of the `lsp` tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspSettings {
    #[serde(default = "lsp_timeout")]
    pub timeout: Duration,
    #[serde(default = "max_locations")]
    #[schemars(range(min = 1, max = 10_000))]
    pub max_locations: u32,
    #[serde(default = "max_result_chars")]
    #[schemars(range(min = 1, max = 10_000_000))]
    pub max_result_chars: u64,
}

static STDIO: Kind<StdioServer> =
    Kind { name: "lsp.stdio", registry: "lsp", resolve: resolve_stdio, build: Some(host::build), stand_in: None };
static LSP_TOOL: Tool<LspSettings> = Tool::new("lsp", &["lsp"])
    .served(Serving { definition: tool::definition, call: tool::call, owns_timeout: true, invalid_arguments: codes::LSP_INVALID_ARGUMENTS })
    .guided("`lsp`: for exact relations between symbols in the workspace (definitions, references, implementations, types).");

fn resolve_stdio(cx: &mut MountCx<'_>, mut config: StdioServer) -> Option<ResolvedMount> {
    let mut normalized: BTreeMap<String, String> = BTreeMap::new();
    let mut claims = Vec::new();
    // In the order written, so a duplicate is reported where it is written second.
    let written: Vec<&String> =
        cx.config.get("extensions").and_then(seam_engine::yaml::Node::as_map).map(|o| o.keys().collect()).unwrap_or_default();
    for ext in written {
        let Some(language) = config.extensions.get(ext) else { continue };
        let key = ext.to_lowercase();
        let at = format!("/extensions/{}", escape_pointer_segment(ext));
        if normalized.insert(key.clone(), language.clone()).is_some() {
            cx.report_at_key(
                crate::codes::LSP_EXTENSION_DUPLICATE,
                &at,
                format!("extension `{ext}` is listed twice in mount `{}` (extensions are case-insensitive)", cx.id),
            );
            continue;
        }
        claims.push(Claim {
            space: "lsp.extension",
            key: key.clone(),
            code: crate::codes::LSP_EXTENSION_CONFLICT,
            what: format!("extension `{key}`"),
            pointer: format!("{}{at}", cx.pointer),
        });
    }
    config.extensions = normalized;
    let spawn = cx.spawn(&mut config.spawn);
    let mut r = ResolvedMount::new(config, Exposure::Tool("lsp"));
    r.needs = vec!["subprocess", "workspace"];
    r.claims = claims;
    r.requirements.push(spawn);
    Some(r)
}

impl Surface for LspSurface {
    fn service(&self) -> &'static str {
        "lsp"
    }
    fn kinds(&self) -> &'static [&'static dyn MountKind] {
        static KINDS: [&dyn MountKind; 1] = [&STDIO];
        &KINDS
    }
    fn tools(&self) -> &'static [&'static dyn FixedTool] {
        static TOOLS: [&dyn FixedTool; 1] = [&LSP_TOOL];
        &TOOLS
    }
    /// A visible language server with no workspace to read could answer nothing: said at validate
    /// time, where the composition can still be fixed (there is no implicit workspace).
    fn check(&self, cx: &mut SurfaceCx<'_>) -> Option<Json> {
        if cx.workspace_root().is_none()
            && let Some(id) = cx.mounts_in(STDIO.registry()).into_iter().find(|id| cx.mount_visible(id)).map(str::to_owned)
        {
            let at = seam_engine::diagnostic::pointer(["mounts", id.as_str()]);
            cx.report(
                crate::codes::LSP_WORKSPACE_UNSET,
                &at,
                format!("`services.workspace.root` is not set: every `lsp` call, to `{id}` or any other server, would answer LSP_WORKSPACE_REQUIRED"),
            )
            .help = Some("set `services: { workspace: { root: . } }` (relative to this file), the folder the servers read".into());
        }
        None
    }
    fn codes(&self) -> &'static [CodeDoc] {
        codes::CODES
    }
}

/// The codes this surface emits, one constant each (`seam_engine::code_table!`).
pub mod codes {
    seam_engine::code_table! { CODES {
        LSP_WORKSPACE_UNSET Warning "An `lsp.stdio` mount is visible but `services.workspace.root` is not set: there is no implicit workspace, so every `lsp` call would answer `LSP_WORKSPACE_REQUIRED`.";
        LSP_EXTENSION_CONFLICT Error "Two `lsp.stdio` mounts claim the same file extension; both places are named.";
        LSP_EXTENSION_DUPLICATE Error "One mount lists an extension twice (extensions are case-insensitive).";
        LSP_UNAVAILABLE Error "(tool result) No server handles the file's extension (or it has none), or the server did not start or failed twice.";
        LSP_UNSUPPORTED_OPERATION Error "(tool result) The server does not offer the operation (no such capability).";
        LSP_MALFORMED_RESPONSE Error "(tool result) The server's answer is not the shape LSP gives it, or an error answer.";
        LSP_WORKSPACE_REQUIRED Error "(tool result) No workspace: `services.workspace.root` is not set.";
        LSP_OUTSIDE_WORKSPACE Error "(tool result) The file resolves (symlinks followed) outside the workspace's real path.";
        LSP_FILE_TOO_LARGE Error "(tool result) The file is over the mount's `max_document_bytes`.";
        LSP_NOT_A_FILE Error "(tool result) The path does not exist or is not a regular file (a FIFO, a folder).";
        LSP_INVALID_UTF8 Error "(tool result) The file is not valid UTF-8.";
        LSP_INVALID_ARGUMENTS Error "(tool result) Arguments outside the schema, or a position past the file or inside an astral character.";
        LSP_TIMEOUT Error "(tool result) The server did not answer within the tool's `timeout`; it is ended and restarts on the next query.";
        LSP_DISPOSED Error "(tool result) The mount was retired by a reload while the call waited.";
    } }
}

//! `seam import FILE`: an MCP client's config (Claude Desktop, Claude Code, VS Code,
//! Cursor, Codex) as a seam composition, one `mcp.stdio` or `mcp.http` mount per server,
//! with the schema modeline and, above each mount, where it came from.
//!
//! The choices, as README.md states them for users:
//! - **Secrets are never copied.** Every value the config writes inline in a server's
//!   `env` or HTTP headers is treated as a possible secret, since nothing tells a token
//!   from a setting: `env` becomes `env_passthrough` of the same name, `Authorization:
//!   Bearer …` (or Codex's `bearer_token`) becomes `bearer_token_env: <SERVER>_TOKEN`,
//!   any other header `headers_env: { Header: <SERVER>_<HEADER> }`, a URL that holds a
//!   secret or reads one (`${API_KEY}`) `url: ${<SERVER>_URL}`, and an argument that
//!   looks like a secret (a token, a URL's password, the value of `--token`) is written
//!   as `***`, one that gives a value under a secret's name (`--api-key=…`, docker's
//!   `-e GITHUB_TOKEN=…`, mcp-remote's `--header "X-Api-Key: …"`) as that name and `***`.
//!   Each gives a located warning (`IMPORT_SECRET_NOT_COPIED`) naming the variable to
//!   set, never the value. A value that only names a variable (`${VAR}`, `${env:VAR}`)
//!   is mapped to it: the same name is passed through, another name not named like a
//!   secret is mapped (`env: { NAME: "${OTHER:-}" }`), one named like a secret is passed
//!   through under the server's name for it, with a warning. A default (`${VAR:-…}`) is
//!   never copied where the variable is named like a secret or the default looks like one.
//! - What a diagnostic quotes of the config holds no value that could be a secret: every
//!   value under `env`, `headers`, `http_headers`, `bearer_token`, `args` and `url` is
//!   masked before anything is reported (in servers written twice too), and of a config
//!   that is not JSON or TOML, every string on the line quoted.
//! - What has no seam equivalent (an `envFile`, VS Code's input prompts, the older
//!   HTTP+SSE transport, a key the format does not have) is a located warning
//!   (`IMPORT_UNSUPPORTED`); a server seam cannot run (SSE) or the config disables
//!   (`enabled = false`, `"disabled": true`) is written commented out, so that nothing
//!   is dropped silently. Codex's `enabled_tools`/`disabled_tools` become the mount's
//!   `tools: { allow, deny }`, its timeouts `startup_timeout`/`call_timeout`.
//! - A server name that is not a valid mount id is sanitized (`IMPORT_MOUNT_RENAMED`);
//!   `cmd /c X …` is unwrapped to `X …` and Windows paths kept (`IMPORT_WINDOWS`).
//! - The config's other settings (a model, shortcuts) are not MCP servers and not read.
//!
//! Nothing is written when the config is invalid (exit 1), a key the format reads written
//! twice included; the composition written is checked as `seam validate` checks it before
//! it is written. `-o` never writes over the config read (exit 2), and says when it writes
//! over another file.

mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seam_engine::codes::{
    Code, IMPORT_INVALID, IMPORT_MOUNT_RENAMED, IMPORT_SECRET_NOT_COPIED, IMPORT_SERVER_DISABLED, IMPORT_SYNTAX, IMPORT_UNSUPPORTED,
    IMPORT_WINDOWS,
};
use seam_engine::diagnostic::{Diagnostic, FileId, Sources, Span, escape_pointer_segment, sort_diagnostics};
use seam_engine::redact::is_secret_name;
use tree::{Kind, Member, Val};

use crate::Exit;
use crate::error::Error;

/// The MCP clients whose config `import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Claude Desktop: `claude_desktop_config.json` (`mcpServers`; command servers, and a `url` read as an HTTP server; no `${…}`).
    ClaudeDesktop,
    /// Claude Code: `.mcp.json` (`mcpServers`; `type`, `url`, `headers`; `${VAR}`, `${VAR:-default}`).
    ClaudeCode,
    /// VS Code: `.vscode/mcp.json` (JSONC; `servers`, `inputs`; `${env:VAR}`, `${input:id}`).
    Vscode,
    /// Cursor: `.cursor/mcp.json` (`mcpServers`; `${env:VAR}`).
    Cursor,
    /// Codex: `config.toml` (`[mcp_servers.NAME]`).
    Codex,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::ClaudeDesktop => "claude-desktop",
            Format::ClaudeCode => "claude-code",
            Format::Vscode => "vscode",
            Format::Cursor => "cursor",
            Format::Codex => "codex",
        }
    }

    /// The keys a server entry of this format may have.
    fn keys(self) -> &'static [&'static str] {
        match self {
            // Claude Desktop runs command servers; a `url` written there is imported as the HTTP server it names.
            Format::ClaudeDesktop => &["command", "args", "env", "url", "disabled"],
            Format::ClaudeCode => &["type", "command", "args", "env", "url", "headers", "disabled"],
            Format::Cursor => &["type", "command", "args", "env", "envFile", "url", "headers", "disabled"],
            Format::Vscode => &["type", "command", "args", "env", "envFile", "cwd", "url", "headers", "disabled", "dev"],
            Format::Codex => &[
                "command",
                "args",
                "env",
                "env_vars",
                "cwd",
                "url",
                "bearer_token",
                "bearer_token_env_var",
                "http_headers",
                "env_http_headers",
                "enabled",
                "required",
                "enabled_tools",
                "disabled_tools",
                "startup_timeout_sec",
                "startup_timeout_ms",
                "tool_timeout_sec",
            ],
        }
    }

    /// Whether the format expands `${…}` in its values, and how.
    fn references(self) -> References {
        match self {
            Format::ClaudeDesktop | Format::Codex => References::None,
            Format::ClaudeCode => References::Shell,
            Format::Vscode | Format::Cursor => References::Editor,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum References {
    None,
    /// `${VAR}`, `${VAR:-default}` (Claude Code).
    Shell,
    /// `${env:VAR}`, `${input:id}`, `${workspaceFolder}`, `${userHome}` (VS Code, Cursor).
    Editor,
}

/// What `import` made of a config: the composition (none when the config is invalid),
/// the diagnostics, and the config's text with every value not copied masked, for
/// diagnostics to quote.
pub struct Imported {
    pub format: Option<Format>,
    pub composition: Option<String>,
    pub diagnostics: Vec<Diagnostic>,
    pub sources: Sources,
    /// Servers imported, and of them written commented out.
    pub servers: usize,
    pub commented: usize,
    /// Variables the composition reads at load (`url: ${X_URL}`), which its check is given a stand-in for.
    pub url_vars: BTreeSet<String>,
}

pub fn run(engine: &seam_engine::Engine, file: &Path, format: Option<Format>, out: Option<&Path>, limit: u64) -> Result<Exit, Error> {
    // The config is never written over: nothing is read, nothing written.
    if let Some(out) = out
        && same_file(file, out)
    {
        eprintln!("seam: {} is the config imported ({}); nothing written: name another file with `-o`", out.display(), file.display());
        return Ok(Exit::UsageOrIo);
    }
    // Read as seam reads a composition: a regular file only, opened without blocking, within the byte budget.
    let bytes = seam_engine::load::read_bounded(file, limit).map_err(|unread| Error::unread(file, limit, unread))?;
    let folder = match out {
        Some(out) => absolute(out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))),
        None => absolute(Path::new(".")),
    };
    let imported = import(file, bytes, format, &folder);
    let mut err = std::io::stderr().lock();
    for d in &imported.diagnostics {
        let _ = std::io::Write::write_all(&mut err, seam_engine::render::human(d, &imported.sources).as_bytes());
    }
    let Some(composition) = imported.composition else {
        let errors = imported.diagnostics.iter().filter(|d| d.is_error()).count();
        eprintln!("seam: {} not imported: {errors} error{}", file.display(), if errors == 1 { "" } else { "s" });
        return Ok(Exit::Invalid);
    };
    // The composition is checked as `seam validate` would check it where it is written.
    let shown = out.map_or_else(|| PathBuf::from("(imported composition)"), Path::to_owned);
    let checked = engine.check_bytes(&shown, composition.clone().into_bytes(), &CheckEnv { stand_ins: &imported.url_vars });
    for d in &checked.diagnostics {
        let _ = std::io::Write::write_all(&mut err, seam_engine::render::human(d, &checked.sources).as_bytes());
    }
    if checked.errors() > 0 {
        eprintln!("seam: the composition imported from {} does not validate; nothing written", file.display());
        return Ok(Exit::Invalid);
    }
    match out {
        Some(out) => {
            let existed = std::fs::symlink_metadata(out).is_ok();
            std::fs::write(out, &composition).map_err(|source| Error::Write { path: out.to_owned(), source })?;
            if existed {
                eprintln!("seam: overwrote {}", out.display());
            }
        }
        None => super::print(&composition),
    }
    let warnings = imported.diagnostics.len() + checked.diagnostics.len();
    let commented = if imported.commented > 0 { format!(" ({} written commented out)", imported.commented) } else { String::new() };
    eprintln!(
        "seam: imported {} server{}{commented} from {} ({}); {warnings} warning{}",
        imported.servers,
        if imported.servers == 1 { "" } else { "s" },
        file.display(),
        imported.format.map_or("", Format::name),
        if warnings == 1 { "" } else { "s" },
    );
    Ok(Exit::Valid)
}

/// The process environment, with a stand-in URL for each variable the import named for a URL
/// that held a secret, where it is unset: the check is of the composition, not of this machine.
struct CheckEnv<'a> {
    stand_ins: &'a BTreeSet<String>,
}

impl seam_engine::env::Env for CheckEnv<'_> {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().or_else(|| self.stand_ins.contains(name).then(|| "https://example.invalid/mcp".to_owned()))
    }
}

/// Whether `a` and `b` are the same file: the same path once links are followed, or (on Unix) the same inode.
fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ca), Ok(cb)) = (std::fs::canonicalize(a), std::fs::canonicalize(b)) else { return false };
    if ca == cb {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if let (Ok(ma), Ok(mb)) = (std::fs::metadata(&ca), std::fs::metadata(&cb)) {
            return ma.dev() == mb.dev() && ma.ino() == mb.ino();
        }
    }
    false
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Imports the config `bytes` read from `path`, as `format` or the format it is detected as;
/// `folder` is where the composition will be (for its modeline).
pub fn import(path: &Path, bytes: Vec<u8>, format: Option<Format>, folder: &Path) -> Imported {
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let mut sources = Sources::default();
            let file = sources.add(path.to_owned(), "".into());
            let span = Span { file, line: 1, column: 1 };
            let d = Diagnostic::new(IMPORT_SYNTAX, span, "", format!("not UTF-8 (at byte {})", e.utf8_error().valid_up_to()));
            return Imported {
                format,
                composition: None,
                diagnostics: vec![d],
                sources,
                servers: 0,
                commented: 0,
                url_vars: BTreeSet::new(),
            };
        }
    };
    let lines = tree::Lines::new(&text);
    let mut cx = Cx {
        path,
        format: format.unwrap_or(Format::ClaudeCode),
        lines: &lines,
        diagnostics: Vec::new(),
        masks: Vec::new(),
        workspace: workspace_of(path),
        url_vars: BTreeSet::new(),
    };
    let (mounts, format) = read(&mut cx, &text, format);
    let masked = mask(&text, &mut cx.masks);
    let mut sources = Sources::default();
    sources.add(path.to_owned(), Arc::from(masked));
    let mut diagnostics = cx.diagnostics;
    sort_diagnostics(&mut diagnostics);
    let failed = diagnostics.iter().any(Diagnostic::is_error);
    let composition = (!failed).then(|| {
        let format = format.expect("a config read without error has a format");
        write_composition(path, format, folder, &mounts)
    });
    Imported {
        format,
        composition,
        diagnostics,
        sources,
        servers: mounts.len(),
        commented: mounts.iter().filter(|m| m.commented.is_some()).count(),
        url_vars: cx.url_vars,
    }
}

/// The folder `${workspaceFolder}` names: the one that holds `.vscode/` or `.cursor/`, else the config's own.
fn workspace_of(path: &Path) -> PathBuf {
    let path = absolute(path);
    let folder = path.parent().unwrap_or(Path::new("/"));
    match folder.file_name().and_then(|n| n.to_str()) {
        Some(".vscode" | ".cursor") => folder.parent().unwrap_or(folder).to_owned(),
        _ => folder.to_owned(),
    }
}

/// `text` with the bytes of every range in `masks` (values not copied) as `*`, one per
/// character, so that lines and columns stay where they were.
fn mask(text: &str, masks: &mut [Range<usize>]) -> String {
    masks.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in masks.iter() {
        let (start, end) = (range.start.max(at), range.end.min(text.len()));
        if start >= end || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
            continue;
        }
        out.push_str(&text[at..start]);
        out.extend(text[start..end].chars().map(|c| if c == '\n' || c == '\r' { c } else { '*' }));
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// What the import knows while it reads one config.
struct Cx<'a> {
    path: &'a Path,
    format: Format,
    lines: &'a tree::Lines<'a>,
    diagnostics: Vec<Diagnostic>,
    masks: Vec<Range<usize>>,
    workspace: PathBuf,
    url_vars: BTreeSet<String>,
}

impl Cx<'_> {
    fn span(&self, at: usize) -> Span {
        let (line, column) = self.lines.position(at);
        Span { file: FileId(0), line, column }
    }

    fn report(&mut self, code: Code, at: usize, pointer: &str, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::new(code, self.span(at), pointer, message);
        self.diagnostics.push(d);
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Reports `code` on a server: in the diagnostics, and as a note above its mount.
    fn note(&mut self, mount: &mut Mount, code: Code, at: usize, pointer: &str, message: String) -> &mut Diagnostic {
        mount.notes.push(message.clone());
        self.report(code, at, pointer, message)
    }

    fn secret(&mut self, value: &Val) {
        self.masks.push(value.inner());
    }
}

/// Reads the config's servers; the format it was read as, if it could be told.
fn read(cx: &mut Cx<'_>, text: &str, format: Option<Format>) -> (Vec<Mount>, Option<Format>) {
    let toml_named = cx.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let root = match format {
        Some(Format::Codex) => tree::toml(text),
        Some(_) => tree::jsonc(text),
        None if toml_named => tree::toml(text),
        // A file that is not JSON but is TOML is Codex's, whatever its name.
        None => tree::jsonc(text).or_else(|json| tree::toml(text).ok().filter(|t| t.member("mcp_servers").is_some()).ok_or(json)),
    };
    let root = match root {
        Ok(root) => root,
        Err(e) => {
            let what = match format {
                Some(Format::Codex) => "TOML",
                Some(_) => "JSON",
                None if toml_named => "TOML",
                None => "JSON or TOML",
            };
            // No value of a config that could not be read is quoted: every string on the line, and all after the error there.
            cx.masks.extend(unread_values(text, e.at));
            cx.report(IMPORT_SYNTAX, e.at, "", format!("not {what}: {}", e.message));
            return (Vec::new(), format);
        }
    };
    // Before anything is reported, every value that could be a secret is masked where a diagnostic could quote it,
    // in every server, those written twice and those not read included.
    possible_secrets(&root, false, &mut cx.masks);
    if root.members().is_none() {
        cx.report(IMPORT_INVALID, root.at.start, "", format!("the config is {}, not an object of settings", root.kind_name()));
        return (Vec::new(), format);
    }
    // The keys the import reads, where JSON lets them be written twice: the last would win in a client, the first here.
    written_twice(cx, root.members().unwrap_or_default(), "", Some(&["mcpServers", "servers", "mcp", "inputs", "mcp_servers"]));
    if let Some(mcp) = root.member("mcp").and_then(|m| m.value.members()) {
        written_twice(cx, mcp, "/mcp", Some(&["servers", "inputs"]));
    }
    let vscode_settings = root.member("mcp").and_then(|m| m.value.member("servers").map(|s| (m, s)));
    let format = format.unwrap_or_else(|| {
        if toml_named || root.member("mcp_servers").is_some() {
            Format::Codex
        } else if root.member("servers").is_some() || vscode_settings.is_some() {
            Format::Vscode
        } else {
            let name = cx.path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let folder = cx.path.parent().and_then(Path::file_name).and_then(|n| n.to_str()).unwrap_or_default();
            if name.eq_ignore_ascii_case("claude_desktop_config.json") {
                Format::ClaudeDesktop
            } else if folder == ".cursor" {
                Format::Cursor
            } else {
                Format::ClaudeCode
            }
        }
    });
    cx.format = format;
    // Where the servers are: (their table, the label and pointer of that table).
    let (servers, label, pointer) = match format {
        Format::Codex => (root.member("mcp_servers"), "mcp_servers", "/mcp_servers".to_owned()),
        Format::Vscode => match (root.member("servers"), vscode_settings) {
            (None, Some((_, servers))) => (Some(servers), "mcp.servers", "/mcp/servers".to_owned()),
            (servers, _) => (servers, "servers", "/servers".to_owned()),
        },
        _ => (root.member("mcpServers"), "mcpServers", "/mcpServers".to_owned()),
    };
    let Some(servers) = servers else {
        let wanted = match format {
            Format::Codex => "an `[mcp_servers.NAME]` table",
            Format::Vscode => "a `servers` object",
            _ => "an `mcpServers` object",
        };
        cx.report(IMPORT_INVALID, root.at.start, "", format!("the config has no MCP servers: {} config holds {wanted}", format.name()));
        return (Vec::new(), Some(format));
    };
    if format == Format::Vscode {
        let inputs =
            if label == "mcp.servers" { vscode_settings.and_then(|(mcp, _)| mcp.value.member("inputs")) } else { root.member("inputs") };
        if let Some(inputs) = inputs {
            report_inputs(cx, inputs, &pointer.replace("/servers", "/inputs"));
        }
    }
    let Some(entries) = servers.value.members() else {
        cx.report(
            IMPORT_INVALID,
            servers.value.at.start,
            &pointer,
            format!("`{label}` is {}, not an object of servers", servers.value.kind_name()),
        );
        return (Vec::new(), Some(format));
    };
    // A name that is a valid mount id keeps it: each is taken (the first of those equal without case) before
    // any other name is sanitized, so that `!!!` becomes `server-2`, not `Server` `Server-2`.
    let mut ids = Ids::default();
    for entry in entries {
        if mount_id(&entry.key, &BTreeSet::new()) == entry.key {
            ids.reserved.entry(entry.key.to_ascii_lowercase()).or_insert_with(|| entry.key.clone());
        }
    }
    let mut mounts = Vec::new();
    let mut seen = BTreeSet::new();
    for entry in entries {
        let at = format!("{pointer}/{}", escape_pointer_segment(&entry.key));
        if !seen.insert(entry.key.as_str()) {
            cx.report(IMPORT_INVALID, entry.key_at.start, &at, format!("server `{}` is defined twice", entry.key));
            continue;
        }
        if let Some(mount) = server(cx, entry, label, &at, &mut ids) {
            mounts.push(mount);
        }
    }
    (mounts, Some(format))
}

/// VS Code's `inputs`: prompts seam does not show. Each `${input:id}` that uses one is reported where it is.
fn report_inputs(cx: &mut Cx<'_>, inputs: &Member, pointer: &str) {
    let Kind::Arr(items) = &inputs.value.kind else { return };
    for (i, input) in items.iter().enumerate() {
        let id = input.member("id").and_then(|m| m.value.as_str()).unwrap_or("?");
        let at = input.member("id").map_or(input.at.start, |m| m.value.at.start);
        cx.report(
            IMPORT_UNSUPPORTED,
            at,
            &format!("{pointer}/{i}"),
            format!("VS Code asks the user for input `{id}`; seam asks no one: where a server uses `${{input:{id}}}`, the composition reads a variable instead"),
        );
    }
}

/// One mount of the composition, as it will be written.
struct Mount {
    id: String,
    /// `servers.github (line 12)`.
    origin: String,
    /// Why it is written commented out, if it is.
    commented: Option<String>,
    notes: Vec<String>,
    kind: &'static str,
    command: Option<String>,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    passthrough: Vec<String>,
    cwd: Option<String>,
    url: Option<String>,
    headers_env: BTreeMap<String, String>,
    bearer_token_env: Option<String>,
    required: bool,
    startup_timeout: Option<String>,
    call_timeout: Option<String>,
    allow: Vec<String>,
    deny: Vec<String>,
}

impl Mount {
    fn pass(&mut self, name: &str) {
        if !self.passthrough.iter().any(|n| n == name) {
            self.passthrough.push(name.to_owned());
        }
    }

    /// `GITHUB` for mount `github`: the start of the names of the variables the import makes up for it.
    fn prefix(&self) -> String {
        let upper: String = self.id.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        if upper.starts_with(|c: char| c.is_ascii_digit()) { format!("MCP_{upper}") } else { upper }
    }
}

/// A string field of a server, or an error where it is something else.
fn string<'v>(cx: &mut Cx<'_>, member: &'v Member, pointer: &str) -> Option<&'v str> {
    let text = member.value.as_str();
    if text.is_none() {
        cx.report(
            IMPORT_INVALID,
            member.value.at.start,
            pointer,
            format!("`{}` is {}, not a string", member.key, member.value.kind_name()),
        );
    }
    text
}

/// A list of strings, or an error.
fn strings<'v>(cx: &mut Cx<'_>, member: &'v Member, pointer: &str) -> Option<Vec<&'v Val>> {
    match &member.value.kind {
        Kind::Arr(items) if items.iter().all(|v| v.as_str().is_some()) => Some(items.iter().collect()),
        _ => {
            let message = format!("`{}` is {}, not a list of strings", member.key, member.value.kind_name());
            cx.report(IMPORT_INVALID, member.value.at.start, pointer, message);
            None
        }
    }
}

/// A boolean, or an error.
fn boolean(cx: &mut Cx<'_>, member: &Member, pointer: &str) -> Option<bool> {
    match member.value.kind {
        Kind::Bool(b) => Some(b),
        _ => {
            cx.report(
                IMPORT_INVALID,
                member.value.at.start,
                pointer,
                format!("`{}` is {}, not true or false", member.key, member.value.kind_name()),
            );
            None
        }
    }
}

/// The mount ids given, and those kept for the servers whose names are valid ids (by their lowercase).
#[derive(Default)]
struct Ids {
    taken: BTreeSet<String>,
    reserved: BTreeMap<String, String>,
}

impl Ids {
    /// The id of server `name`: its name where it was kept for it, else one sanitized and unique among all, kept or given.
    fn take(&mut self, name: &str) -> String {
        let lower = name.to_ascii_lowercase();
        let id = if self.reserved.get(&lower).is_some_and(|n| n == name) && !self.taken.contains(&lower) {
            name.to_owned()
        } else {
            let all: BTreeSet<String> = self.taken.iter().chain(self.reserved.keys()).cloned().collect();
            mount_id(name, &all)
        };
        self.taken.insert(id.to_ascii_lowercase());
        id
    }
}

/// The mount id for server `name`: its name if it is a valid one, else a sanitized one, unique without case.
fn mount_id(name: &str, taken: &BTreeSet<String>) -> String {
    let mut id: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    while id.contains("__") {
        id = id.replace("__", "_");
    }
    let trim = |s: &str| s.trim_matches(|c| c == '_' || c == '-').to_owned();
    id = trim(&id);
    id.truncate(seam_mcp::MAX_NAMESPACE);
    id = trim(&id);
    if id.is_empty() {
        id = "server".into();
    }
    let mut unique = id.clone();
    let mut n = 2;
    while taken.contains(&unique.to_ascii_lowercase()) {
        let suffix = format!("-{n}");
        let mut base = id.clone();
        base.truncate(seam_mcp::MAX_NAMESPACE - suffix.len());
        unique = format!("{}{suffix}", trim(&base));
        n += 1;
    }
    unique
}

/// One server of the config as a mount; `None` (with an error) where it cannot be read.
fn server(cx: &mut Cx<'_>, entry: &Member, label: &str, pointer: &str, ids: &mut Ids) -> Option<Mount> {
    let name = &entry.key;
    let Some(fields) = entry.value.members() else {
        cx.report(IMPORT_INVALID, entry.value.at.start, pointer, format!("server `{name}` is {}, not an object", entry.value.kind_name()));
        return None;
    };
    let id = ids.take(name);
    let simple = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let path = if simple { format!("{label}.{name}") } else { format!("{label}[{}]", serde_json::Value::from(name.as_str())) };
    let line = cx.span(entry.key_at.start).line;
    let mut mount = Mount {
        id: id.clone(),
        origin: format!("{path} (line {line})"),
        commented: None,
        notes: Vec::new(),
        kind: "mcp.stdio",
        command: None,
        args: Vec::new(),
        env: BTreeMap::new(),
        passthrough: Vec::new(),
        cwd: None,
        url: None,
        headers_env: BTreeMap::new(),
        bearer_token_env: None,
        required: false,
        startup_timeout: None,
        call_timeout: None,
        allow: Vec::new(),
        deny: Vec::new(),
    };
    if id != *name {
        let message = format!(
            "server `{name}` is mounted as `{id}`: a mount id is 1 to {} letters, digits, `_` or `-`, without `__` or an edge `_`, and unique without case; its tools are `mcp__{id}__<tool>`",
            seam_mcp::MAX_NAMESPACE
        );
        cx.note(&mut mount, IMPORT_MOUNT_RENAMED, entry.key_at.start, pointer, message);
    }
    let field = |key: &str| fields.iter().find(|m| m.key == key);
    let at = |key: &str| format!("{pointer}/{}", escape_pointer_segment(key));
    let mut seen = BTreeSet::new();
    for member in fields {
        let here = at(&member.key);
        if !seen.insert(member.key.as_str()) {
            cx.report(IMPORT_INVALID, member.key_at.start, &here, format!("`{}` is written twice", member.key));
            return None;
        }
        if !cx.format.keys().contains(&member.key.as_str()) {
            let message = format!("`{}` is not a key of a {} server; not imported", member.key, cx.format.name());
            cx.note(&mut mount, IMPORT_UNSUPPORTED, member.key_at.start, &here, message);
        }
    }
    // The transport: `type`, else `command` or `url`.
    let kind = match field("type").filter(|_| cx.format.keys().contains(&"type")) {
        Some(member) => match string(cx, member, &at("type"))? {
            "stdio" => "stdio",
            "http" | "streamable-http" | "streamableHttp" => "http",
            "sse" => "sse",
            other => {
                let message = format!("`type` is `{other}`: {} knows `stdio`, `http` and `sse`", cx.format.name());
                cx.report(IMPORT_INVALID, member.value.at.start, &at("type"), message);
                return None;
            }
        },
        None if field("command").is_some() => "stdio",
        None if field("url").is_some() => "http",
        None => {
            cx.report(IMPORT_INVALID, entry.key_at.start, pointer, format!("server `{name}` has neither `command` nor `url`"));
            return None;
        }
    };
    // Whether the config turns it off.
    if let Some(member) = field("disabled").filter(|_| cx.format.keys().contains(&"disabled"))
        && boolean(cx, member, &at("disabled"))?
    {
        mount.commented = Some("disabled there".into());
        let message = format!("server `{name}` is disabled (`\"disabled\": true`): its mount is written commented out");
        cx.note(&mut mount, IMPORT_SERVER_DISABLED, member.key_at.start, &at("disabled"), message);
    }
    if let Some(member) = field("enabled").filter(|_| cx.format == Format::Codex)
        && !boolean(cx, member, &at("enabled"))?
    {
        mount.commented = Some("disabled there".into());
        let message = format!("server `{name}` is disabled (`enabled = false`): its mount is written commented out");
        cx.note(&mut mount, IMPORT_SERVER_DISABLED, member.key_at.start, &at("enabled"), message);
    }
    // The fields of the other transport.
    let other: &[&str] = if kind == "stdio" {
        &["url", "headers", "http_headers", "env_http_headers", "bearer_token", "bearer_token_env_var"]
    } else {
        &["command", "args", "env", "env_vars", "cwd", "envFile"]
    };
    for key in other {
        if let Some(member) = field(key).filter(|_| cx.format.keys().contains(key)) {
            let message = format!(
                "`{key}` belongs to a {} server, and this one is a {kind} server; not imported",
                if kind == "stdio" { "remote" } else { "command" }
            );
            cx.note(&mut mount, IMPORT_UNSUPPORTED, member.key_at.start, &at(key), message);
        }
    }
    match kind {
        "stdio" => stdio(cx, &mut mount, &field, &at)?,
        _ => {
            mount.kind = "mcp.http";
            http(cx, &mut mount, &field, &at, entry, pointer)?;
            if kind == "sse" {
                mount.commented.get_or_insert_with(|| "an SSE server".into());
                let member = field("type").expect("`type` said sse");
                let message = format!(
                    "server `{name}` speaks the older HTTP+SSE transport, and seam speaks Streamable HTTP: its mount is written commented out; if the server also serves Streamable HTTP (often at `/mcp`), put that URL and uncomment it"
                );
                cx.note(&mut mount, IMPORT_UNSUPPORTED, member.value.at.start, &at("type"), message);
            }
        }
    }
    if let Some(member) = field("envFile").filter(|_| cx.format.keys().contains(&"envFile")) {
        let message = "`envFile` is not read (it holds secrets, and seam names its secrets): set the variables it holds in seam's environment and list them in `env_passthrough`".to_owned();
        cx.note(&mut mount, IMPORT_UNSUPPORTED, member.key_at.start, &at("envFile"), message);
    }
    if let Some(member) = field("dev").filter(|_| cx.format == Format::Vscode) {
        let message =
            "`dev` (VS Code's watch-and-debug mode) has no seam equivalent; seam reloads when the composition changes, not the server"
                .to_owned();
        cx.note(&mut mount, IMPORT_UNSUPPORTED, member.key_at.start, &at("dev"), message);
    }
    if cx.format == Format::Codex {
        codex_settings(cx, &mut mount, &field, &at)?;
    }
    Some(mount)
}

type Field<'f> = dyn Fn(&str) -> Option<&'f Member> + 'f;

fn stdio<'f>(cx: &mut Cx<'_>, mount: &mut Mount, field: &Field<'f>, at: &dyn Fn(&str) -> String) -> Option<()> {
    let Some(command) = field("command") else {
        let member = field("type").expect("a server without `command` is stdio only by its `type`");
        cx.report(IMPORT_INVALID, member.key_at.start, &at("type"), "a `stdio` server needs a `command`");
        return None;
    };
    string(cx, command, &at("command"))?;
    let mut argv: Vec<(&Val, String)> = vec![(&command.value, at("command"))];
    if let Some(args) = field("args") {
        for (i, arg) in strings(cx, args, &at("args"))?.into_iter().enumerate() {
            argv.push((arg, format!("{}/{i}", at("args"))));
        }
    }
    // `cmd /c X …` (Windows's shell running X) is X.
    let shell = argv[0].0.as_str().is_some_and(|c| {
        let c = c.rsplit(['\\', '/']).next().unwrap_or(c).to_ascii_lowercase();
        c == "cmd" || c == "cmd.exe"
    });
    let slash_c = argv.iter().skip(1).position(|(a, _)| a.as_str().is_some_and(|a| a.eq_ignore_ascii_case("/c")));
    if let (true, Some(c)) = (shell, slash_c)
        && argv.iter().skip(1).take(c).all(|(a, _)| a.as_str().is_some_and(|a| a.starts_with('/')))
        && argv.len() > c + 2
    {
        let unwrapped = argv[c + 2].0.as_str().unwrap_or_default().to_owned();
        let message = format!("`cmd /c` runs a command through Windows's shell; seam runs `{unwrapped}` itself");
        cx.note(mount, IMPORT_WINDOWS, command.value.at.start, &at("command"), message);
        argv.drain(..c + 2);
    }
    let mut texts = Vec::new();
    let mut secret_flag = false;
    let references = cx.format.references();
    for (i, (arg, pointer)) in argv.iter().enumerate() {
        let raw = arg.as_str().unwrap_or_default();
        // The value of a secret's flag (`--token X`) unless it only names a variable; a token or a URL's password;
        // or a value given with a secret's name in the argument (`--api-key=X`, `NAME=X`, `X-Api-Key: X`).
        let after_flag = secret_flag && !reference_only(references, raw);
        secret_flag = raw.starts_with('-') && {
            let flag = raw.trim_start_matches('-');
            !flag.contains('=') && secret_key(flag)
        };
        if i == 0 {
            texts.push(text(cx, mount, arg, pointer, "`command`"));
            continue;
        }
        let keyed = keyed_secret(references, raw);
        if after_flag || keyed.is_some() || seam_engine::redact::text(raw) != raw {
            cx.secret(arg);
            let written = match keyed {
                Some(value) if !after_flag => format!("{}***", escape(&raw[..value])),
                _ => "***".to_owned(),
            };
            let message = format!(
                "argument {i} looks like it holds a secret (a token, a password in a URL, the value of a secret's flag, variable or header), which seam does not copy: it is written as `{written}`; give the server its secret through its environment (`env_passthrough`) instead"
            );
            cx.note(mount, IMPORT_SECRET_NOT_COPIED, arg.at.start, pointer, message).help =
                Some("if it is no secret, write it back in the composition".into());
            texts.push(written);
            continue;
        }
        texts.push(text(cx, mount, arg, pointer, "an argument"));
    }
    let windows = |s: &str| {
        let b = s.as_bytes();
        (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/')) || s.starts_with("\\\\")
    };
    let command_text = argv[0].0.as_str().unwrap_or_default();
    if windows(command_text) || [".exe", ".cmd", ".bat"].iter().any(|e| command_text.to_ascii_lowercase().ends_with(e)) {
        let message = format!("`{command_text}` is a Windows command; it is kept as written, so change it to this machine's");
        cx.note(mount, IMPORT_WINDOWS, argv[0].0.at.start, &argv[0].1, message);
    }
    if let Some((arg, pointer)) = argv.iter().skip(1).find(|(a, _)| a.as_str().is_some_and(windows)) {
        let message = "the arguments hold Windows paths (`C:\\…`), kept as written: change them to this machine's".to_owned();
        cx.note(mount, IMPORT_WINDOWS, arg.at.start, pointer, message);
    }
    let mut texts = texts.into_iter();
    mount.command = texts.next();
    mount.args = texts.collect();
    if let Some(env) = field("env") {
        let Some(entries) = env.value.members() else {
            cx.report(IMPORT_INVALID, env.value.at.start, &at("env"), format!("`env` is {}, not an object", env.value.kind_name()));
            return None;
        };
        written_twice(cx, entries, &at("env"), None);
        for entry in entries {
            env_entry(cx, mount, entry, &format!("{}/{}", at("env"), escape_pointer_segment(&entry.key)));
        }
    }
    if let Some(vars) = field("env_vars") {
        for var in strings(cx, vars, &at("env_vars"))? {
            let name = var.as_str().expect("strings");
            if env_name(name) {
                mount.pass(name);
            } else {
                cx.report(IMPORT_INVALID, var.at.start, &at("env_vars"), format!("`{name}` is not a variable name"));
            }
        }
    }
    if let Some(cwd) = field("cwd") {
        string(cx, cwd, &at("cwd"))?;
        let mut folder = text(cx, mount, &cwd.value, &at("cwd"), "`cwd`");
        let written = cwd.value.as_str().unwrap_or_default();
        if windows(written) {
            cx.note(mount, IMPORT_WINDOWS, cwd.value.at.start, &at("cwd"), "`cwd` is a Windows path, kept as written".to_owned());
        } else if Path::new(written).is_relative() && !written.starts_with('$') {
            // Relative to the config's folder, not to the composition's.
            let base = absolute(cx.path).parent().map(Path::to_owned).unwrap_or_default();
            folder = escape(&base.join(written).display().to_string());
        }
        mount.cwd = Some(folder);
    }
    Some(())
}

fn http<'f>(
    cx: &mut Cx<'_>,
    mount: &mut Mount,
    field: &Field<'f>,
    at: &dyn Fn(&str) -> String,
    entry: &Member,
    pointer: &str,
) -> Option<()> {
    let Some(url) = field("url") else {
        cx.report(IMPORT_INVALID, entry.key_at.start, pointer, format!("remote server `{}` needs a `url`", entry.key));
        return None;
    };
    let written = string(cx, url, &at("url"))?;
    // A variable named like a secret (`${API_KEY}`), or a default that looks like one, read into the URL.
    let reads_secret = pieces(cx.format.references(), written).into_iter().find_map(|p| match p {
        Piece::Env { name, default, .. } if is_secret_name(name) || default.is_some_and(|d| looks_secret(cx.format.references(), d)) => {
            Some(name)
        }
        _ => None,
    });
    if seam_engine::redact::secret_in_url(written).is_some() || seam_engine::redact::text(written) != written || reads_secret.is_some() {
        cx.secret(&url.value);
        let var = format!("{}_URL", mount.prefix());
        let message = match reads_secret {
            Some(name) => format!(
                "the URL reads `{name}`, named like a secret, and seam does not copy a secret into a composition: set `{var}` in seam's environment to the URL; the composition reads it from there"
            ),
            None => format!(
                "the URL holds a secret (a password, a token, or a query parameter named like one), which seam does not copy: set `{var}` in seam's environment to the URL; the composition reads it from there"
            ),
        };
        cx.note(mount, IMPORT_SECRET_NOT_COPIED, url.value.at.start, &at("url"), message);
        mount.url = Some(format!("${{{var}}}"));
        cx.url_vars.insert(var);
    } else {
        mount.url = Some(text(cx, mount, &url.value, &at("url"), "`url`"));
    }
    for key in ["headers", "http_headers"] {
        let Some(headers) = field(key).filter(|_| cx.format.keys().contains(&key)) else { continue };
        let Some(entries) = headers.value.members() else {
            cx.report(IMPORT_INVALID, headers.value.at.start, &at(key), format!("`{key}` is {}, not an object", headers.value.kind_name()));
            return None;
        };
        written_twice(cx, entries, &at(key), None);
        for header in entries {
            let here = format!("{}/{}", at(key), escape_pointer_segment(&header.key));
            string(cx, header, &here)?;
            header_entry(cx, mount, header, &here);
        }
    }
    if let Some(headers) = field("env_http_headers") {
        let Some(entries) = headers.value.members() else {
            let message = format!("`env_http_headers` is {}, not a table", headers.value.kind_name());
            cx.report(IMPORT_INVALID, headers.value.at.start, &at("env_http_headers"), message);
            return None;
        };
        written_twice(cx, entries, &at("env_http_headers"), None);
        for header in entries {
            let here = format!("{}/{}", at("env_http_headers"), escape_pointer_segment(&header.key));
            let var = string(cx, header, &here)?;
            if !env_name(var) {
                cx.report(IMPORT_INVALID, header.value.at.start, &here, format!("`{var}` is not a variable name"));
                return None;
            }
            mount.headers_env.insert(header.key.clone(), var.to_owned());
        }
    }
    if let Some(var) = field("bearer_token_env_var") {
        let name = string(cx, var, &at("bearer_token_env_var"))?;
        if !env_name(name) {
            cx.report(IMPORT_INVALID, var.value.at.start, &at("bearer_token_env_var"), format!("`{name}` is not a variable name"));
            return None;
        }
        mount.bearer_token_env = Some(name.to_owned());
    }
    if let Some(token) = field("bearer_token") {
        string(cx, token, &at("bearer_token"))?;
        cx.secret(&token.value);
        let var = format!("{}_TOKEN", mount.prefix());
        let message =
            format!("the bearer token is written in the config, and seam does not copy it: set `{var}` in seam's environment to the token");
        cx.note(mount, IMPORT_SECRET_NOT_COPIED, token.value.at.start, &at("bearer_token"), message);
        mount.bearer_token_env = Some(var);
    }
    Some(())
}

/// What `${…}` in a value is.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Env {
        name: &'a str,
        default: Option<&'a str>,
        raw: &'a str,
    },
    Input {
        id: &'a str,
        raw: &'a str,
    },
    /// VS Code's predefined variables (`workspaceFolder`, `userHome`).
    Editor {
        name: &'a str,
        raw: &'a str,
    },
    Unknown(&'a str),
}

fn env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` cut into literal text and the `${…}` references the format expands.
fn pieces(references: References, text: &str) -> Vec<Piece<'_>> {
    if references == References::None {
        return vec![Piece::Text(text)];
    }
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else { break };
        if start > 0 {
            out.push(Piece::Text(&rest[..start]));
        }
        let raw = &rest[start..start + len + 1];
        let inner = &raw[2..raw.len() - 1];
        out.push(match references {
            References::Shell => {
                let (name, default) = match inner.split_once(":-") {
                    Some((name, default)) => (name, Some(default)),
                    None => (inner, None),
                };
                if env_name(name) { Piece::Env { name, default, raw } } else { Piece::Unknown(raw) }
            }
            _ => match inner.split_once(':') {
                Some(("env", name)) if env_name(name) => Piece::Env { name, default: None, raw },
                Some(("input", id)) => Piece::Input { id, raw },
                None if matches!(inner, "workspaceFolder" | "workspaceFolderBasename" | "userHome" | "pathSeparator") => {
                    Piece::Editor { name: inner, raw }
                }
                _ => Piece::Unknown(raw),
            },
        });
        rest = &rest[start + len + 1..];
    }
    if !rest.is_empty() || out.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// Literal text as a composition writes it: `$` is `$$`.
fn escape(text: &str) -> String {
    text.replace('$', "$$")
}

/// A string of the config (a command, an argument, a URL, a folder) as the composition
/// writes it: references mapped where seam has them, the rest literal, and reported.
fn text(cx: &mut Cx<'_>, mount: &mut Mount, value: &Val, pointer: &str, what: &str) -> String {
    let written = value.as_str().unwrap_or_default();
    let mut out = String::new();
    for piece in pieces(cx.format.references(), written) {
        match piece {
            Piece::Text(t) => out.push_str(&escape(t)),
            Piece::Env { name, default, .. } if is_secret_name(name) => {
                // The default is never written: it would be the secret.
                let reference = format!("${{{name}}}");
                out.push_str(&escape(&reference));
                mount.pass(name);
                let default = if default.is_some_and(|d| !d.is_empty()) {
                    cx.secret(value);
                    " (its default, not copied)"
                } else {
                    ""
                };
                let message = format!(
                    "{what} reads `{name}` through `{reference}`{default}, and seam does not copy a secret into a composition: it is written as that text, and `{name}` is passed through (`env_passthrough`); change the server to read `{name}` from its environment"
                );
                cx.note(mount, IMPORT_UNSUPPORTED, value.at.start, pointer, message);
            }
            Piece::Env { name, default: Some(default), .. } if looks_secret(cx.format.references(), default) => {
                cx.secret(value);
                let _ = write!(out, "${{{name}:-}}");
                let message = format!(
                    "{what} reads `{name}` with a default that looks like a secret, which seam does not copy: it reads `{name}` with no default; set `{name}` in seam's environment"
                );
                cx.note(mount, IMPORT_SECRET_NOT_COPIED, value.at.start, pointer, message);
            }
            Piece::Env { name, default, .. } => {
                let _ = write!(out, "${{{name}:-{}}}", default.unwrap_or_default());
            }
            Piece::Input { id, raw } => {
                out.push_str(&escape(raw));
                let message = format!(
                    "{what} uses VS Code's input `{id}`, which seam does not ask for: it is written as the text `{raw}`; change it to the value"
                );
                cx.note(mount, IMPORT_UNSUPPORTED, value.at.start, pointer, message);
            }
            Piece::Editor { name, raw } => match name {
                "workspaceFolder" => out.push_str(&escape(&cx.workspace.display().to_string())),
                "workspaceFolderBasename" => {
                    out.push_str(&escape(&cx.workspace.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()));
                }
                "userHome" => out.push_str("${HOME}"),
                "pathSeparator" => out.push('/'),
                _ => out.push_str(&escape(raw)),
            },
            Piece::Unknown(raw) => {
                out.push_str(&escape(raw));
                let message = format!("{what} holds `{raw}`, which seam does not expand: it is written as that text");
                cx.note(mount, IMPORT_UNSUPPORTED, value.at.start, pointer, message);
            }
        }
    }
    out
}

/// The only reference a value is, if it is one and nothing else.
fn whole_reference<'a>(references: References, value: &'a Val) -> Option<Piece<'a>> {
    let mut pieces = pieces(references, value.as_str()?);
    match pieces.as_slice() {
        [Piece::Env { default: None, .. } | Piece::Input { .. }] => pieces.pop(),
        _ => None,
    }
}

/// Whether `value` only names a variable or an input (after an authorization scheme, `Bearer ${TOKEN}`):
/// what it holds is not written in the config.
fn reference_only(references: References, value: &str) -> bool {
    let value = value.trim();
    let value = ["bearer ", "basic "]
        .iter()
        .find_map(|scheme| value.get(..scheme.len()).filter(|s| s.eq_ignore_ascii_case(scheme)).map(|_| value[scheme.len()..].trim()))
        .unwrap_or(value);
    matches!(pieces(references, value).as_slice(), [Piece::Env { default: None, .. } | Piece::Input { .. }])
}

/// Whether a key (a flag without its dashes, a variable, a header) names a secret; one that names
/// where a secret is (`*_env`, `*-file`, `*_path`) holds none.
fn secret_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase().replace('-', "_");
    if lower.ends_with("_env") || lower.ends_with("_file") || lower.ends_with("_path") {
        return false;
    }
    matches!(lower.as_str(), "authorization" | "proxy_authorization") || is_secret_name(&lower)
}

/// Whether a header's name says its value is a secret: `Authorization`, `X-Api-Key`, any with a token, key, secret in it.
fn secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    secret_key(name)
        || ["auth", "token", "key", "secret", "password", "passwd", "credential", "cookie", "session"].iter().any(|w| lower.contains(w))
}

/// Where, in an argument, a value given under a secret's name starts: `--api-key=X`, `NAME=X` (docker's `-e`),
/// `X-Api-Key: X` (mcp-remote's `--header`); none where there is none, or the value only names a variable.
fn keyed_secret(references: References, arg: &str) -> Option<usize> {
    let name = |key: &str| !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    // `KEY=value`, each `=` in turn (`--env=TOKEN=value`).
    let mut start = 0;
    for (at, _) in arg.match_indices('=') {
        let key = arg[start..at].trim_start_matches('-');
        let value = &arg[at + 1..];
        if name(key) && secret_key(key) && !value.is_empty() && !reference_only(references, value) {
            return Some(at + 1);
        }
        start = at + 1;
    }
    // `Header: value`, after a flag's `=` (`--header=X-Api-Key: value`).
    let colon = arg.find(':')?;
    let header = arg[..colon].rsplit('=').next().unwrap_or_default().trim();
    let rest = &arg[colon + 1..];
    let value = rest.trim_start();
    let value_at = colon + 1 + (rest.len() - value.len());
    (name(header) && secret_header(header) && !value.is_empty() && !value.starts_with("//") && !reference_only(references, value))
        .then_some(value_at)
}

/// Whether a text (a reference's default) looks like a secret: a token, a URL's password, a value under a secret's name.
fn looks_secret(references: References, text: &str) -> bool {
    seam_engine::redact::text(text) != text || keyed_secret(references, text).is_some()
}

/// The keys under which every value is masked in what diagnostics quote, whatever else is wrong.
const MASKED_UNDER: [&str; 6] = ["env", "headers", "http_headers", "bearer_token", "args", "url"];

/// The bytes of each value of `value` that could be a secret: every scalar under [`MASKED_UNDER`] or a
/// secret-named key, at any depth, and any string that shows a secret.
fn possible_secrets(value: &Val, under: bool, masks: &mut Vec<Range<usize>>) {
    match &value.kind {
        Kind::Str(s) if under || seam_engine::redact::text(s) != s.as_str() => masks.push(value.inner()),
        Kind::Num(_) if under => masks.push(value.at.clone()),
        Kind::Arr(items) => items.iter().for_each(|v| possible_secrets(v, under, masks)),
        Kind::Obj(members) => {
            for m in members {
                let here = under || MASKED_UNDER.contains(&m.key.as_str()) || secret_key(&m.key);
                possible_secrets(&m.value, here, masks);
            }
        }
        _ => {}
    }
}

/// For a config that could not be read: the bytes of every string literal (JSON's or TOML's, keys
/// included), and on the line of the error, all from the error on but whitespace and punctuation.
fn unread_values(text: &str, error: usize) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let line_end = |from: usize| bytes[from..].iter().position(|b| *b == b'\n').map_or(bytes.len(), |n| from + n);
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.starts_with(br#"""""#) || rest.starts_with(b"'''") {
            // A multi-line string (TOML's), to its closing quotes.
            let close = if rest[0] == b'"' { r#"""""# } else { "'''" };
            let end = text[at + 3..].find(close).map_or(bytes.len(), |n| at + 3 + n);
            ranges.push(at + 3..end);
            at = end + 3;
        } else if rest[0] == b'"' || rest[0] == b'\'' {
            // A one-line string, to its quote or the line's end.
            let quote = rest[0];
            let mut end = at + 1;
            while end < bytes.len() && bytes[end] != quote && bytes[end] != b'\n' {
                end += if quote == b'"' && bytes[end] == b'\\' { 2 } else { 1 };
            }
            let end = end.min(bytes.len());
            ranges.push(at + 1..end);
            at = end + 1;
        } else if rest.starts_with(b"//") || rest[0] == b'#' {
            at = line_end(at);
        } else if rest.starts_with(b"/*") {
            at = text[at + 2..].find("*/").map_or(bytes.len(), |n| at + 4 + n);
        } else {
            at += 1;
        }
    }
    let error = error.min(bytes.len());
    for (i, b) in bytes[error..line_end(error)].iter().enumerate() {
        if !b.is_ascii_whitespace() && !b"{}[],:=\"'".contains(b) {
            ranges.push(error + i..error + i + 1);
        }
    }
    // Whole characters only: a range is widened to the characters it touches.
    for r in &mut ranges {
        r.end = r.end.min(bytes.len());
        while r.start > 0 && !text.is_char_boundary(r.start) {
            r.start -= 1;
        }
        while !text.is_char_boundary(r.end) {
            r.end += 1;
        }
    }
    ranges
}

/// Reports each key of `members` written again after its first (of `keys`, if given): an object's
/// keys are one each, and which of two a client takes is not the config's to say.
fn written_twice(cx: &mut Cx<'_>, members: &[Member], pointer: &str, keys: Option<&[&str]>) {
    let mut seen = BTreeSet::new();
    for m in members {
        if keys.is_some_and(|keys| !keys.contains(&m.key.as_str())) {
            continue;
        }
        if !seen.insert(m.key.as_str()) {
            let here = format!("{pointer}/{}", escape_pointer_segment(&m.key));
            cx.report(IMPORT_INVALID, m.key_at.start, &here, format!("`{}` is written twice", m.key));
        }
    }
}

/// One variable of a stdio server's `env`.
fn env_entry(cx: &mut Cx<'_>, mount: &mut Mount, entry: &Member, pointer: &str) {
    let name = entry.key.as_str();
    if !env_name(name) {
        cx.secret(&entry.value);
        let message = format!("`{name}` is not a variable name seam can pass on; not imported");
        cx.note(mount, IMPORT_UNSUPPORTED, entry.key_at.start, pointer, message);
        return;
    }
    let message = match whole_reference(cx.format.references(), &entry.value) {
        Some(Piece::Env { name: var, .. }) if var == name => {
            mount.pass(name);
            return;
        }
        Some(Piece::Env { name: var, .. }) if !is_secret_name(var) && !is_secret_name(name) => {
            mount.env.insert(name.to_owned(), format!("${{{var}:-}}"));
            return;
        }
        Some(Piece::Env { name: var, .. }) => format!(
            "`{name}` is read from `{var}` in the config, and seam passes a secret on under its own name only: set `{name}` in seam's environment (to what `{var}` holds)"
        ),
        Some(Piece::Input { id, .. }) => {
            format!("`{name}` comes from VS Code's input `{id}`, which seam does not ask for: set `{name}` in seam's environment")
        }
        // A value that is only a folder VS Code names (`${workspaceFolder}`) is that folder: no secret was written.
        _ if matches!(pieces(cx.format.references(), entry.value.as_str().unwrap_or_default()).as_slice(), [Piece::Editor { .. }]) => {
            let value = text(cx, mount, &entry.value, pointer, "a variable");
            mount.env.insert(name.to_owned(), value);
            return;
        }
        _ => {
            cx.secret(&entry.value);
            format!(
                "`{name}` has a value written in the config, which seam does not copy (it may be a secret): set `{name}` in seam's environment"
            )
        }
    };
    mount.pass(name);
    cx.note(mount, IMPORT_SECRET_NOT_COPIED, entry.value.at.start, pointer, message).help =
        Some(format!("the mount passes `{name}` through to the server (`env_passthrough`)"));
}

/// One header of an HTTP server.
fn header_entry(cx: &mut Cx<'_>, mount: &mut Mount, header: &Member, pointer: &str) {
    let name = header.key.as_str();
    let value = header.value.as_str().unwrap_or_default();
    let bearer = name.eq_ignore_ascii_case("authorization")
        && value.get(..7).is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer "))
        && mount.bearer_token_env.is_none();
    let token = || Val { kind: Kind::Str(value[7..].trim().to_owned()), at: header.value.at.clone() };
    let reference = if bearer {
        whole_reference(cx.format.references(), &token()).map(|p| match p {
            Piece::Env { name, .. } => Ok(name.to_owned()),
            Piece::Input { id, .. } => Err(id.to_owned()),
            _ => unreachable!("whole references are variables or inputs"),
        })
    } else {
        whole_reference(cx.format.references(), &header.value).map(|p| match p {
            Piece::Env { name, .. } => Ok(name.to_owned()),
            Piece::Input { id, .. } => Err(id.to_owned()),
            _ => unreachable!("whole references are variables or inputs"),
        })
    };
    let made_up = if bearer {
        format!("{}_TOKEN", mount.prefix())
    } else {
        let header: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        // A header already named after the server (`CONTEXT7_API_KEY` on `context7`) keeps its name.
        if header.starts_with(&mount.prefix()) && env_name(&header) { header } else { format!("{}_{header}", mount.prefix()) }
    };
    let (var, why) = match reference {
        Some(Ok(var)) => (var, None),
        Some(Err(id)) => (made_up, Some(format!("comes from VS Code's input `{id}`, which seam does not ask for"))),
        None => {
            cx.secret(&header.value);
            (made_up, Some("is written in the config, and seam does not copy it (it may be a secret)".to_owned()))
        }
    };
    let what = if bearer { "the bearer token of `Authorization`".to_owned() } else { format!("header `{name}`") };
    if let Some(why) = why {
        let message = format!("{what} {why}: set `{var}` in seam's environment to {}", if bearer { "the token" } else { "its value" });
        let help = if bearer {
            format!("the mount reads it with `bearer_token_env: {var}`")
        } else {
            format!("the mount reads it with `headers_env: {{ {name}: {var} }}`")
        };
        cx.note(mount, IMPORT_SECRET_NOT_COPIED, header.value.at.start, pointer, message).help = Some(help);
    }
    if bearer {
        mount.bearer_token_env = Some(var);
    } else {
        mount.headers_env.insert(name.to_owned(), var);
    }
}

/// Codex's settings beyond the transport: `required`, tool lists and timeouts.
fn codex_settings<'f>(cx: &mut Cx<'_>, mount: &mut Mount, field: &Field<'f>, at: &dyn Fn(&str) -> String) -> Option<()> {
    if let Some(required) = field("required") {
        mount.required = boolean(cx, required, &at("required"))?;
    }
    for (key, list) in [("enabled_tools", &mut mount.allow), ("disabled_tools", &mut mount.deny)] {
        if let Some(tools) = field(key) {
            for tool in strings(cx, tools, &at(key))? {
                let name = tool.as_str().expect("strings");
                // A name is matched as a glob: its metacharacters are escaped.
                let escaped: String = name.chars().flat_map(|c| if "*?[]{}\\".contains(c) { vec!['\\', c] } else { vec![c] }).collect();
                list.push(escaped);
            }
        }
    }
    for (key, unit) in [("startup_timeout_sec", 1000.0), ("startup_timeout_ms", 1.0), ("tool_timeout_sec", 1000.0)] {
        let slot = if key.starts_with("startup") { &mut mount.startup_timeout } else { &mut mount.call_timeout };
        let Some(member) = field(key) else { continue };
        let Kind::Num(n) = &member.value.kind else {
            cx.report(IMPORT_INVALID, member.value.at.start, &at(key), format!("`{key}` is {}, not a number", member.value.kind_name()));
            return None;
        };
        let millis = n.parse::<f64>().unwrap_or(f64::NAN) * unit;
        if !(1.0..=2_147_483_647.0).contains(&millis) || millis.fract() != 0.0 {
            let message = format!("`{key}` is {n}: seam's timeouts are whole milliseconds from 1ms to 2147483647ms; the default is kept");
            cx.report(IMPORT_UNSUPPORTED, member.value.at.start, &at(key), message);
            continue;
        }
        let millis = millis as u64;
        *slot = Some(if millis.is_multiple_of(1000) { format!("{}s", millis / 1000) } else { format!("{millis}ms") });
    }
    Some(())
}

/// The composition: modeline, a header, and the mounts, each under where it came from.
fn write_composition(path: &Path, format: Format, folder: &Path, mounts: &[Mount]) -> String {
    let mut out = String::new();
    let schema = schema_path(folder);
    let _ = writeln!(out, "# yaml-language-server: $schema={schema}");
    if schema == SCHEMA_BESIDE {
        let _ = writeln!(out, "# (`seam schema > {SCHEMA_BESIDE}` writes the schema this line names.)");
    }
    let _ = writeln!(out, "# Imported by `seam import` from {} ({}).", path.display(), format.name());
    let _ = writeln!(out, "# Secrets were not copied: where a mount names a variable, set it in seam's environment.");
    out.push_str("seam: 1\nname: imported\n");
    let _ = writeln!(out, "description: {}", scalar(&format!("MCP servers imported from {}", path.display())));
    if mounts.iter().all(|m| m.commented.is_some()) {
        out.push_str("mounts: {}\n");
    } else {
        out.push_str("mounts:\n");
    }
    for (i, mount) in mounts.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let why = mount.commented.as_deref().map_or(String::new(), |why| format!(": {why}, so written commented out"));
        let _ = writeln!(out, "  # from {}, {}{why}", path.display(), mount.origin);
        for note in &mount.notes {
            let _ = writeln!(out, "  # - {}", note.replace(['\n', '\r'], " "));
        }
        let body = mount_yaml(mount);
        for line in body.lines() {
            if mount.commented.is_some() {
                let _ = writeln!(out, "  # {line}");
            } else {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    out
}

/// The `$schema` of the modeline: the schema of the nearest `schemas/` folder above `folder`
/// (a checkout of seam), else `composition.schema.json` beside it, which `seam schema` writes.
fn schema_path(folder: &Path) -> String {
    for (up, dir) in folder.ancestors().enumerate() {
        if dir.join("schemas/composition.schema.json").is_file() {
            return format!("{}schemas/composition.schema.json", "../".repeat(up));
        }
    }
    SCHEMA_BESIDE.into()
}

/// The schema the modeline names where no checkout of seam is above the composition.
const SCHEMA_BESIDE: &str = "composition.schema.json";

/// One mount's YAML, unindented.
fn mount_yaml(m: &Mount) -> String {
    let mut out = format!("{}:\n", scalar(&m.id));
    let mut line = |key: &str, value: String| {
        let _ = writeln!(out, "  {key}: {value}");
    };
    line("kind", m.kind.to_owned());
    if let Some(command) = &m.command {
        line("command", scalar(command));
    }
    if !m.args.is_empty() {
        line("args", list(&m.args));
    }
    if !m.env.is_empty() {
        line("env", map(&m.env));
    }
    if !m.passthrough.is_empty() {
        line("env_passthrough", list(&m.passthrough));
    }
    if let Some(cwd) = &m.cwd {
        line("cwd", scalar(cwd));
    }
    if let Some(url) = &m.url {
        line("url", scalar(url));
    }
    if !m.headers_env.is_empty() {
        line("headers_env", map(&m.headers_env));
    }
    if let Some(var) = &m.bearer_token_env {
        line("bearer_token_env", scalar(var));
    }
    if m.required {
        line("required", "true".into());
    }
    if let Some(t) = &m.startup_timeout {
        line("startup_timeout", t.clone());
    }
    if let Some(t) = &m.call_timeout {
        line("call_timeout", t.clone());
    }
    if !m.allow.is_empty() || !m.deny.is_empty() {
        let mut parts = Vec::new();
        if !m.allow.is_empty() {
            parts.push(format!("allow: {}", list(&m.allow)));
        }
        if !m.deny.is_empty() {
            parts.push(format!("deny: {}", list(&m.deny)));
        }
        line("tools", format!("{{ {} }}", parts.join(", ")));
    }
    out
}

fn list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|i| scalar(i)).collect::<Vec<_>>().join(", "))
}

fn map(entries: &BTreeMap<String, String>) -> String {
    format!("{{ {} }}", entries.iter().map(|(k, v)| format!("{}: {}", scalar(k), scalar(v))).collect::<Vec<_>>().join(", "))
}

/// A string as a YAML scalar: plain where it reads back as the same string, else in double
/// quotes (JSON's escapes, which YAML reads the same).
fn scalar(text: &str) -> String {
    let plain = text.chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '/')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "_./@+-".contains(c))
        && text.parse::<f64>().is_err()
        && !text.starts_with("0x")
        && !text.starts_with("0o")
        && !matches!(text.to_ascii_lowercase().as_str(), "true" | "false" | "null" | "inf" | "nan" | "infinity");
    if plain { text.to_owned() } else { serde_json::Value::from(text).to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonc(text: &str) -> Val {
        tree::jsonc(text).unwrap_or_else(|e| panic!("{} at {}", e.message, e.at))
    }

    #[test]
    fn jsonc_takes_comments_trailing_commas_tabs_and_keeps_places() {
        let text = "// top\n{\n\t\"a\": [1, \"x\\u00e9\", /* mid */ true,],\n\t\"b\": {\"c\": null,},\n}\n";
        let root = jsonc(text);
        let a = root.member("a").unwrap();
        let lines = tree::Lines::new(text);
        assert_eq!(lines.position(a.key_at.start), (3, 2));
        let Kind::Arr(items) = &a.value.kind else { panic!("an array") };
        assert_eq!(items[1].as_str(), Some("xé"));
        assert_eq!(&text[items[1].inner()], "x\\u00e9");
        assert!(matches!(root.member("b").unwrap().value.member("c").unwrap().value.kind, Kind::Null));
    }

    #[test]
    fn jsonc_errors_say_where() {
        for (text, at) in [("{\"a\": }", 6), ("{\"a\": 1 \"b\": 2}", 8), ("{/* open", 1), ("[\"a\nb\"]", 3), ("{} x", 3)] {
            let e = tree::jsonc(text).err().unwrap_or_else(|| panic!("{text:?} parsed"));
            assert_eq!(e.at, at, "{text:?}: {}", e.message);
        }
    }

    #[test]
    fn jsonc_nests_64_levels_and_no_deeper() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(tree::jsonc(&nested(64)).is_ok());
        for n in [65, 513, 100_000] {
            let e = tree::jsonc(&nested(n)).err().unwrap_or_else(|| panic!("{n} levels parsed"));
            assert_eq!(e.at, 64, "{n} levels: {}", e.message);
        }
        // Brackets in strings and comments are not levels.
        assert!(tree::jsonc(&format!("[\"{}\", /* {} */ 1]", "[".repeat(100), "{".repeat(100))).is_ok());
    }

    #[test]
    fn jsonc_reads_past_a_byte_order_mark_keeping_places() {
        let text = "\u{feff}{\"a\": \"b\"}";
        let root = jsonc(text);
        let a = root.member("a").unwrap();
        assert_eq!(&text[a.key_at.clone()], "\"a\"");
        assert_eq!(&text[a.value.inner()], "b");
        assert_eq!(tree::jsonc("\u{feff}{\"a\" 1}").err().map(|e| e.at), Some(8));
    }

    #[test]
    fn references_are_read_as_each_format_writes_them() {
        let shell = pieces(References::Shell, "a ${X} ${Y:-d} ${env:Z}");
        assert_eq!(
            shell,
            vec![
                Piece::Text("a "),
                Piece::Env { name: "X", default: None, raw: "${X}" },
                Piece::Text(" "),
                Piece::Env { name: "Y", default: Some("d"), raw: "${Y:-d}" },
                Piece::Text(" "),
                Piece::Unknown("${env:Z}"),
            ]
        );
        let editor = pieces(References::Editor, "${env:X}/${input:tok}${workspaceFolder}${config:x}");
        assert_eq!(
            editor,
            vec![
                Piece::Env { name: "X", default: None, raw: "${env:X}" },
                Piece::Text("/"),
                Piece::Input { id: "tok", raw: "${input:tok}" },
                Piece::Editor { name: "workspaceFolder", raw: "${workspaceFolder}" },
                Piece::Unknown("${config:x}"),
            ]
        );
        assert_eq!(pieces(References::None, "${X}"), vec![Piece::Text("${X}")]);
    }

    #[test]
    fn mount_ids_are_valid_namespaces_and_unique_without_case() {
        let mut taken = BTreeSet::new();
        for (name, id) in [
            ("github", "github"),
            ("GitHub", "GitHub-2"),
            ("my.server name", "my-server-name"),
            ("__x__y_", "x_y"),
            ("@scope/pkg", "scope-pkg"),
            ("!!!", "server"),
            ("a-very-long-server-name-that-goes-on-and-on", "a-very-long-server-name-that-goe"),
        ] {
            let got = mount_id(name, &taken);
            assert_eq!(got, id, "{name}");
            assert_eq!(seam_mcp::namespace_problem(&got), None, "{got}");
            taken.insert(got.to_ascii_lowercase());
        }
    }

    #[test]
    fn scalars_read_back_as_the_same_string() {
        for (text, written) in [
            ("npx", "npx"),
            ("-y", "\"-y\""),
            ("@modelcontextprotocol/server-everything", "\"@modelcontextprotocol/server-everything\""),
            ("/usr/bin/node", "/usr/bin/node"),
            ("C:\\Users\\me", "\"C:\\\\Users\\\\me\""),
            ("true", "\"true\""),
            ("1.5", "\"1.5\""),
            ("${HOME}", "\"${HOME}\""),
        ] {
            assert_eq!(scalar(text), written);
        }
    }

    fn imported(name: &str, text: &str) -> Imported {
        import(Path::new(name), text.as_bytes().to_vec(), None, Path::new("/nonexistent/folder"))
    }

    #[test]
    fn valid_names_keep_their_ids_before_others_are_sanitized() {
        let got = imported(".mcp.json", r#"{"mcpServers":{"!!!":{"command":"x"},"Server":{"command":"y"},"server":{"command":"z"}}}"#);
        let composition = got.composition.expect("imported");
        for id in ["server-2", "Server", "server-3"] {
            assert!(composition.contains(&format!("\n  {id}:\n    kind: mcp.stdio\n")), "{id}: {composition}");
        }
        let renamed: Vec<u32> = got.diagnostics.iter().filter(|d| d.code == IMPORT_MOUNT_RENAMED).map(|d| d.span.column).collect();
        assert_eq!(renamed, [16, 63], "`!!!` and the second `server` are renamed, `Server` is not");
    }

    #[test]
    fn a_claude_desktop_url_is_imported_without_a_warning() {
        let got = imported("claude_desktop_config.json", r#"{"mcpServers":{"remote":{"url":"https://mcp.example.com/mcp"}}}"#);
        assert_eq!(got.format, Some(Format::ClaudeDesktop));
        assert!(got.diagnostics.is_empty(), "{:?}", got.diagnostics.iter().map(|d| &d.message).collect::<Vec<_>>());
        let composition = got.composition.expect("imported");
        assert!(composition.contains("  remote:\n    kind: mcp.http\n    url: \"https://mcp.example.com/mcp\"\n"), "{composition}");
    }

    #[test]
    fn values_under_secret_names_in_arguments_are_found() {
        for (arg, at) in [
            ("--api-key=hunter", Some(10)),
            ("--env=GITHUB_TOKEN=hunter", Some(19)),
            ("GITHUB_PERSONAL_ACCESS_TOKEN=hunter", Some(29)),
            ("X-Api-Key: hunter", Some(11)),
            ("--header=Authorization:Basic hunter", Some(23)),
            ("Cookie:hunter", Some(7)),
            ("--api-key=${API_KEY}", None),
            ("Authorization: Bearer ${TOKEN}", None),
            ("--token-file=/run/token", None),
            ("LOG_LEVEL=debug", None),
            ("X-Team: blue", None),
            ("https://mcp.example.com/mcp", None),
            ("--api-key", None),
        ] {
            assert_eq!(keyed_secret(References::Shell, arg), at, "{arg}");
        }
        // Claude Desktop expands nothing: `${X}` there is the text written.
        assert_eq!(keyed_secret(References::None, "--api-key=${API_KEY}"), Some(10));
    }

    #[test]
    fn an_unread_config_quotes_no_value() {
        let text = "{\"a\": \"s\\\"x\", 'b'} x\n# \"c\"\n\"\"\"\nd\n\"\"\" e f\n";
        let masked = mask(text, &mut unread_values(text, 19));
        assert_eq!(masked, "{\"*\": \"****\", '*'} *\n# \"c\"\n\"\"\"\n*\n\"\"\" e f\n");
        let masked = mask(text, &mut unread_values(text, 37));
        assert!(masked.ends_with("\"\"\" * *\n"), "{masked}");
    }

    #[test]
    fn masking_keeps_lines_and_columns() {
        let text = "{\"k\": \"sécret\", \"n\": 1}\nnext";
        let masked = mask(text, &mut [7..14, 2..3]);
        assert_eq!(masked, "{\"*\": \"******\", \"n\": 1}\nnext");
    }
}

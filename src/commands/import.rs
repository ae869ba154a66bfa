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

mod references;
mod secrets;
mod servers;
mod transports;
mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seam_engine::codes::{Code, IMPORT_SYNTAX};
use seam_engine::diagnostic::{Diagnostic, FileId, Sources, Span, sort_diagnostics};
use secrets::mask;
use servers::read;
use tree::Val;

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
    use references::{Piece, pieces};
    use seam_engine::codes::IMPORT_MOUNT_RENAMED;
    use secrets::{keyed_secret, unread_values};
    use servers::mount_id;
    use tree::Kind;

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

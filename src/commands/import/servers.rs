//! Reading a config's servers: the format, each server entry, its mount id and its fields.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use seam_engine::codes::{IMPORT_INVALID, IMPORT_MOUNT_RENAMED, IMPORT_SERVER_DISABLED, IMPORT_SYNTAX, IMPORT_UNSUPPORTED};
use seam_engine::diagnostic::escape_pointer_segment;

use super::secrets::{possible_secrets, unread_values};
use super::transports::{codex_settings, http, stdio};
use super::tree::{self, Kind, Member, Val};
use super::{Cx, Format, Mount};

/// Reads the config's servers; the format it was read as, if it could be told.
pub(super) fn read(cx: &mut Cx<'_>, text: &str, format: Option<Format>) -> (Vec<Mount>, Option<Format>) {
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
pub(super) fn report_inputs(cx: &mut Cx<'_>, inputs: &Member, pointer: &str) {
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

/// A string field of a server, or an error where it is something else.
pub(super) fn string<'v>(cx: &mut Cx<'_>, member: &'v Member, pointer: &str) -> Option<&'v str> {
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
pub(super) fn strings<'v>(cx: &mut Cx<'_>, member: &'v Member, pointer: &str) -> Option<Vec<&'v Val>> {
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
pub(super) fn boolean(cx: &mut Cx<'_>, member: &Member, pointer: &str) -> Option<bool> {
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
pub(super) struct Ids {
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
pub(super) fn mount_id(name: &str, taken: &BTreeSet<String>) -> String {
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
pub(super) fn server(cx: &mut Cx<'_>, entry: &Member, label: &str, pointer: &str, ids: &mut Ids) -> Option<Mount> {
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

/// Reports each key of `members` written again after its first (of `keys`, if given): an object's
/// keys are one each, and which of two a client takes is not the config's to say.
pub(super) fn written_twice(cx: &mut Cx<'_>, members: &[Member], pointer: &str, keys: Option<&[&str]>) {
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

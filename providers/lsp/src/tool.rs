//! The `lsp` tool: four questions about a position in a workspace file, routed
//! by the file's final extension to the mount that claims it.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use lsp_types::{Hover, HoverContents, Location, MarkedString, Range, Uri};
use seam_engine::runtime::Roots;
use seam_engine::runtime::{AsAny, ToolOutput, cap_with_footer, until_cancelled};
use seam_engine::surface::{Provider, ToolCall};
use serde::Deserialize;
use serde_json::{Map, Value as Json, json};

use crate::host::{LspError, LspMount, Operation, Query};
use crate::{LspSettings, StdioServer};

pub fn definition(s: &LspSettings) -> Map<String, Json> {
    let description = format!(
        "Ask the language server about a symbol at a position: goToDefinition, findReferences (declaration included), \
         goToImplementation, or hover (type and docs). Prefer reading and searching files; use lsp when you need \
         precise symbol relations. line and character are 1-based; character counts UTF-16 units. Locations come \
         back as path:line:character with the source line; at most {} of them.",
        s.max_locations
    );
    let definition = json!({
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {
                "operation": { "type": "string", "enum": Operation::ALL },
                "file_path": { "type": "string", "description": "A file in the workspace, relative to its root or absolute." },
                "line": { "type": "integer", "minimum": 1, "description": "1-based line." },
                "character": { "type": "integer", "minimum": 1, "description": "1-based column in UTF-16 units." }
            },
            "required": ["operation", "file_path", "line", "character"],
            "additionalProperties": false
        },
        "annotations": { "readOnlyHint": true }
    });
    match definition {
        Json::Object(m) => m,
        _ => unreachable!("a definition is an object"),
    }
}

struct Args {
    operation: Operation,
    file_path: String,
    line: u64,
    character: u64,
}

fn args(arguments: &Map<String, Json>) -> Result<Args, LspError> {
    let invalid = |m: String| LspError::new(crate::codes::LSP_INVALID_ARGUMENTS, m);
    let operation = arguments.get("operation").and_then(Json::as_str).unwrap_or_default();
    let operation =
        Operation::parse(operation).ok_or_else(|| invalid(format!("`operation` must be one of {}", Operation::ALL.join(", "))))?;
    let file_path = arguments.get("file_path").and_then(Json::as_str).ok_or_else(|| invalid("`file_path` must be a string".into()))?;
    let number = |k: &str| arguments.get(k).and_then(Json::as_u64).filter(|n| *n >= 1);
    let line = number("line").ok_or_else(|| invalid("`line` must be an integer ≥ 1".into()))?;
    let character = number("character").ok_or_else(|| invalid("`character` must be an integer ≥ 1".into()))?;
    Ok(Args { operation, file_path: file_path.to_owned(), line, character })
}

/// A file's routing key: its final extension, lowercased, with the dot (`foo.d.ts` → `.ts`); a dotfile has none.
pub fn extension_of(path: &str) -> Option<String> {
    Path::new(path).extension().map(|e| format!(".{}", e.to_string_lossy().to_lowercase()))
}

/// The mount that claims `extension` among the agent's lsp mounts.
fn route<'p>(providers: &'p [Provider], file_path: &str) -> Result<(&'p LspMount, String), LspError> {
    let Some(extension) = extension_of(file_path) else {
        return Err(LspError::new(
            crate::codes::LSP_UNAVAILABLE,
            format!("`{file_path}` has no file extension, so no language server is routed for it"),
        ));
    };
    let mut known = Vec::new();
    for p in providers {
        let Some(config) = seam_engine::surface::MountConfig::as_any(&*p.config).downcast_ref::<StdioServer>() else { continue };
        known.extend(config.extensions.keys().cloned());
        let Some(language) = config.extensions.get(&extension) else { continue };
        return match AsAny::as_any(&*p.running).downcast_ref::<LspMount>() {
            Some(mount) => Ok((mount, language.clone())),
            None => Err(LspError::new(
                crate::codes::LSP_UNAVAILABLE,
                format!("mount `{}` handles `{extension}` but did not start: {}", p.id, p.running.status().detail.unwrap_or_default()),
            )),
        };
    }
    known.sort();
    let have = if known.is_empty() { "no language server is mounted".to_owned() } else { format!("mounted: {}", known.join(", ")) };
    Err(LspError::new(crate::codes::LSP_UNAVAILABLE, format!("no language server handles `{extension}` files ({have})")))
}

#[cfg(target_os = "linux")]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(target_os = "macos")]
const O_NONBLOCK: i32 = 0x0004;

/// Reads a workspace file: resolved (symlinks followed) inside the workspace's
/// real path, a regular file (opened non-blocking, so a FIFO cannot hang the
/// queue), at most `max_bytes`, valid UTF-8.
pub fn read_workspace_file(workspace: &Path, file_path: &str, max_bytes: u64) -> Result<(PathBuf, String), LspError> {
    let resolved = ResolvedFile::of(&workspace.join(file_path))
        .map_err(|e| LspError::new(crate::codes::LSP_NOT_A_FILE, format!("`{file_path}`: {e}")))?;
    if !resolved.real.starts_with(workspace) {
        return Err(LspError::new(
            crate::codes::LSP_OUTSIDE_WORKSPACE,
            format!("`{file_path}` resolves to {}, outside the workspace {}", resolved.real.display(), workspace.display()),
        ));
    }
    let text = read_regular_file(&resolved.open_by, max_bytes, file_path, resolved.identity)?;
    Ok((resolved.real, text))
}

/// A path resolved to its real path, and the path to open it by. On Linux the
/// file is opened once with `O_PATH` (which opens no device and cannot block on
/// a FIFO), its real path is read from that handle, and it is read through the
/// same handle (`/proc/self/fd/N`): a symlink swapped between the check and the
/// read cannot lead outside the workspace, and one `readlink` replaces one per
/// path component. Without `/proc` the path is canonicalized and reopened, and
/// the file read must be the one the handle holds (device and inode).
/// Elsewhere the path is canonicalized.
struct ResolvedFile {
    real: PathBuf,
    open_by: PathBuf,
    /// Keeps `open_by` naming the file that `real` was read from.
    _handle: Option<std::fs::File>,
    /// Device and inode the file read must have.
    identity: Option<(u64, u64)>,
}

impl ResolvedFile {
    #[cfg(target_os = "linux")]
    fn of(path: &Path) -> std::io::Result<ResolvedFile> {
        use std::os::fd::AsRawFd as _;
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
        const O_PATH: i32 = 0o10000000;
        let handle = std::fs::OpenOptions::new().read(true).custom_flags(O_PATH).open(path)?;
        let by_handle = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
        match std::fs::read_link(&by_handle) {
            // Read through the handle: the same file by construction.
            Ok(real) if real.is_absolute() => Ok(ResolvedFile { real, open_by: by_handle, _handle: Some(handle), identity: None }),
            _ => {
                let held = handle.metadata()?;
                let real = std::fs::canonicalize(path)?;
                Ok(ResolvedFile { real, open_by: path.to_owned(), _handle: Some(handle), identity: Some((held.dev(), held.ino())) })
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn of(path: &Path) -> std::io::Result<ResolvedFile> {
        Ok(ResolvedFile { real: std::fs::canonicalize(path)?, open_by: path.to_owned(), _handle: None, identity: None })
    }
}

/// Reads a regular file of at most `max_bytes` as UTF-8, opened non-blocking so
/// that a FIFO cannot hang the one thread a stdio `serve` runs on. `shown` is
/// how messages name it; `identity`, when given, the device and inode it must have.
fn read_regular_file(path: &Path, max_bytes: u64, shown: &str, identity: Option<(u64, u64)>) -> Result<String, LspError> {
    use std::os::unix::fs::MetadataExt as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(|e| LspError::new(crate::codes::LSP_NOT_A_FILE, format!("`{shown}`: {e}")))?;
    let meta = file.metadata().map_err(|e| LspError::new(crate::codes::LSP_NOT_A_FILE, format!("`{shown}`: {e}")))?;
    if !meta.is_file() {
        return Err(LspError::new(crate::codes::LSP_NOT_A_FILE, format!("`{shown}` is not a regular file")));
    }
    if identity.is_some_and(|id| id != (meta.dev(), meta.ino())) {
        return Err(LspError::new(crate::codes::LSP_NOT_A_FILE, format!("`{shown}` was replaced while it was being opened")));
    }
    if meta.len() > max_bytes {
        return Err(LspError::new(
            crate::codes::LSP_FILE_TOO_LARGE,
            format!("`{shown}` is {} bytes; max_document_bytes is {max_bytes}", meta.len()),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte past the cap tells a file that grew since the check.
    (&mut file)
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LspError::new(crate::codes::LSP_NOT_A_FILE, format!("`{shown}`: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(LspError::new(crate::codes::LSP_FILE_TOO_LARGE, format!("`{shown}` is over max_document_bytes {max_bytes}")));
    }
    String::from_utf8(bytes).map_err(|e| LspError::new(crate::codes::LSP_INVALID_UTF8, format!("`{shown}` is not UTF-8: {e}")))
}

/// 1-based line and UTF-16 character → LSP's 0-based line and UTF-16 character,
/// checked against the text: the line exists, the column is within it (or just
/// past its end) and does not fall between the two units of an astral character.
pub fn to_lsp_position(text: &str, line: u64, character: u64) -> Result<(u32, u32), LspError> {
    let invalid = |m: String| LspError::new(crate::codes::LSP_INVALID_ARGUMENTS, m);
    let Some(source) = text.split('\n').nth((line - 1) as usize) else {
        return Err(invalid(format!("line {line} is past the end of the file ({} lines)", text.split('\n').count())));
    };
    let source = source.strip_suffix('\r').unwrap_or(source);
    let mut units = 0u64;
    for c in source.chars() {
        if units + 1 == character {
            break;
        }
        units += c.len_utf16() as u64;
        if units + 1 > character {
            return Err(invalid(format!("character {character} of line {line} falls inside a character that takes two UTF-16 units")));
        }
    }
    let length: u64 = source.chars().map(|c| c.len_utf16() as u64).sum();
    if character > length + 1 {
        return Err(invalid(format!("character {character} is past the end of line {line} ({length} UTF-16 units)")));
    }
    Ok(((line - 1) as u32, (character - 1) as u32))
}

pub fn call(settings: LspSettings, call: ToolCall) -> BoxFuture<'static, ToolOutput> {
    let ToolCall { providers, arguments, roots, cancel, client, .. } = call;
    until_cancelled(
        cancel,
        async move { answer(settings, providers, arguments, roots, client).await.unwrap_or_else(LspError::into_output) },
    )
}

/// The workspace of a call: the client's root that holds the file (the first
/// one, for a relative path) among those inside the configured root, else the
/// configured root itself. Without a configured root there is none.
pub fn workspace_of(configured: Option<&Path>, roots: &[PathBuf], file_path: &str) -> Option<PathBuf> {
    let configured = configured?;
    let inside: Vec<PathBuf> = roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()).filter(|r| r.starts_with(configured)).collect();
    let file = Path::new(file_path);
    let chosen = if file.is_absolute() {
        inside.into_iter().filter(|r| file.starts_with(r)).max_by_key(|r| r.components().count())
    } else {
        inside.into_iter().next()
    };
    Some(chosen.unwrap_or_else(|| configured.to_owned()))
}

async fn answer(
    settings: LspSettings,
    providers: Vec<Provider>,
    arguments: Map<String, Json>,
    roots: Roots,
    client: seam_engine::runtime::Client,
) -> Result<ToolOutput, LspError> {
    let a = args(&arguments)?;
    let (mount, language) = route(&providers, &a.file_path)?;
    // One deadline over asking the client for its roots and asking the server.
    let limit = settings.timeout;
    let deadline = tokio::time::Instant::now() + limit.to_std();
    let timed_out =
        || LspError::new(crate::codes::LSP_TIMEOUT, format!("no answer within {limit}; the server is restarted on the next query"));
    let roots = tokio::time::timeout_at(deadline, roots.get()).await.map_err(|_| timed_out())?;
    let Some(workspace) = workspace_of(mount.workspace.as_deref(), &roots, &a.file_path) else {
        return Err(LspError::new(crate::codes::LSP_WORKSPACE_REQUIRED, "no workspace: set `services.workspace.root`"));
    };
    let max_bytes = mount.config.max_document_bytes.bytes();
    let read = || {
        let (path, text) = read_workspace_file(&workspace, &a.file_path, max_bytes)?;
        let (line, character) = to_lsp_position(&text, a.line, a.character)?;
        Ok(Query { operation: a.operation, path, language, text, line, character })
    };
    let turn = std::sync::atomic::AtomicBool::new(false);
    // A language server's start takes seconds: a client that asked for progress is told of it.
    let starting = || {
        if let Some(link) = client.link() {
            link.progress(0.0, Some(1.0), Some(format!("starting the language server of mount `{}`", mount.id)));
        }
    };
    let answer = match tokio::time::timeout_at(deadline, mount.query(&workspace, &turn, read, &starting)).await {
        Ok(result) => result?,
        Err(_) => {
            // Only a server that had the question is judged hung; one still busy with another
            // agent's question (which has its own timeout) is left to answer it.
            if turn.load(std::sync::atomic::Ordering::SeqCst) {
                mount.evict(&workspace);
            }
            return Err(timed_out());
        }
    };
    let answer = answer.get();
    let (locations, what) = match a.operation {
        Operation::Hover => return Ok(text_output(hover_text(answer)?, &settings)),
        Operation::FindReferences => {
            let locations: Option<Vec<Location>> = serde_json::from_str(answer).map_err(malformed)?;
            (locations.unwrap_or_default(), "references")
        }
        Operation::GoToDefinition => (goto_locations(answer)?, "definition"),
        Operation::GoToImplementation => (goto_locations(answer)?, "implementation"),
    };
    // A file is read per location, up to `max_locations`: several go off the runtime thread (a stdio
    // `serve` has only one). One is read here, like the question's own file: handing one capped read
    // to the blocking pool costs two thread wake-ups, more than the read (BENCHMARKS.md Part 4).
    let text = if locations.len() <= 1 {
        locations_text(&workspace, locations, &settings, max_bytes, what)
    } else {
        let settings = settings.clone();
        let format = move || locations_text(&workspace, locations, &settings, max_bytes, what);
        tokio::task::spawn_blocking(format).await.expect("formatting does not panic")
    };
    Ok(text_output(text, &settings))
}

/// The tool's answer: `text` within `max_result_chars`.
fn text_output(text: String, settings: &LspSettings) -> ToolOutput {
    ToolOutput { content: vec![json!({ "type": "text", "text": cap_chars(text, settings.max_result_chars) })], ..Default::default() }
}

fn malformed(e: serde_json::Error) -> LspError {
    LspError::new(crate::codes::LSP_MALFORMED_RESPONSE, format!("the server's answer does not have the shape LSP gives it: {e}"))
}

/// A definition or implementation answer, `Location | Location[] | LocationLink[] | null`, read in one
/// pass by its first character (lsp-types' untagged enum tries each shape in turn, formatting an error
/// for every miss); a link becomes the location of its target's name.
fn goto_locations(answer: &str) -> Result<Vec<Location>, LspError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct LocationOrLink {
        uri: Option<Uri>,
        range: Option<Range>,
        target_uri: Option<Uri>,
        target_selection_range: Option<Range>,
    }
    let found: Vec<LocationOrLink> = match answer.trim_start().as_bytes().first() {
        Some(b'[') => serde_json::from_str(answer).map_err(malformed)?,
        Some(b'{') => vec![serde_json::from_str(answer).map_err(malformed)?],
        _ => {
            serde_json::from_str::<()>(answer).map_err(malformed)?;
            Vec::new()
        }
    };
    found
        .into_iter()
        .map(|l| match l {
            LocationOrLink { uri: Some(uri), range: Some(range), .. } => Ok(Location { uri, range }),
            LocationOrLink { target_uri: Some(uri), target_selection_range: Some(range), .. } => Ok(Location { uri, range }),
            _ => Err(LspError::new(
                crate::codes::LSP_MALFORMED_RESPONSE,
                "the server answered a location with neither `uri` and `range` nor `targetUri` and `targetSelectionRange`",
            )),
        })
        .collect()
}

fn hover_text(answer: &str) -> Result<String, LspError> {
    let hover: Option<Hover> = serde_json::from_str(answer).map_err(malformed)?;
    let Some(hover) = hover else { return Ok("No hover information.".into()) };
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    };
    let text = match hover.contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(ms) => ms.into_iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(m) => m.value,
    };
    Ok(if text.trim().is_empty() { "No hover information.".into() } else { text.trim().to_owned() })
}

/// One line per location, `path:line:character  source`, with the footer when capped.
/// Source lines are read from files of at most `max_bytes` (the mount's `max_document_bytes`).
fn locations_text(workspace: &Path, locations: Vec<Location>, settings: &LspSettings, max_bytes: u64, what: &str) -> String {
    // Each location once, in the server's order (a hash set: a symbol can have thousands of references).
    let mut firsts = std::collections::HashSet::with_capacity(locations.len());
    let seen: Vec<&Location> = locations.iter().filter(|l| firsts.insert((l.uri.as_str(), l.range))).collect();
    if seen.is_empty() {
        return format!("No {what} found.");
    }
    let mut files: HashMap<PathBuf, Option<String>> = HashMap::new();
    let max = settings.max_locations as usize;
    let mut lines = Vec::new();
    for l in seen.iter().take(max) {
        let path = url::Url::parse(l.uri.as_str()).ok().and_then(|u| u.to_file_path().ok());
        let (shown, source) = match &path {
            Some(p) => {
                // The source line comes from the same kind of read as a question's file: a
                // regular file within `max_document_bytes`, or no line.
                // A file that cannot be read gives no line; its error is not shown, so it needs no name.
                let text = files.entry(p.clone()).or_insert_with(|| read_regular_file(p, max_bytes, "", None).ok());
                let source = text.as_deref().and_then(|t| t.split('\n').nth(l.range.start.line as usize)).map(|s| s.trim().to_owned());
                let shown = p.strip_prefix(workspace).map_or_else(|_| p.display().to_string(), |r| r.display().to_string());
                (shown, source)
            }
            None => (l.uri.as_str().to_owned(), None),
        };
        let at = format!("{shown}:{}:{}", l.range.start.line + 1, l.range.start.character + 1);
        lines.push(match source.filter(|s| !s.is_empty()) {
            Some(s) => format!("{at}  {s}"),
            None => at,
        });
    }
    let omitted = seen.len().saturating_sub(max);
    if omitted > 0 {
        lines.push(format!("… {omitted} more locations omitted (limit {max})."));
    }
    lines.join("\n")
}

/// The result cut to `max_result_chars`, footer included.
fn cap_chars(mut text: String, max: u64) -> String {
    cap_with_footer(&mut text, max, &format!("\n… cut at max_result_chars ({max})."));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_uses_the_final_extension_lowercased() {
        assert_eq!(extension_of("src/foo.d.ts").as_deref(), Some(".ts"));
        assert_eq!(extension_of("Foo.TS").as_deref(), Some(".ts"));
        assert_eq!(extension_of(".bashrc"), None);
        assert_eq!(extension_of("dir.v2/Makefile"), None);
    }

    #[test]
    fn positions_count_utf16_units_exactly() {
        // 😀 is two UTF-16 units, 日 one.
        let text = "let s = \"😀日\"; go();\nsecond";
        assert_eq!(to_lsp_position(text, 1, 1), Ok((0, 0)));
        // `g` of go: l e t _ s _ = _ " (9 units) 😀 (2) 日 (1) " ; _ → g is unit 15 (0-based), character 16.
        assert_eq!(to_lsp_position(text, 1, 16), Ok((0, 15)));
        assert_eq!(to_lsp_position(text, 1, 10), Ok((0, 9)), "at the emoji");
        assert_eq!(to_lsp_position(text, 1, 11).unwrap_err().code, "LSP_INVALID_ARGUMENTS", "inside the emoji");
        assert_eq!(to_lsp_position(text, 1, 12), Ok((0, 11)), "at 日");
        assert_eq!(to_lsp_position(text, 2, 7), Ok((1, 6)), "just past the end of the line");
        assert_eq!(to_lsp_position(text, 2, 8).unwrap_err().code, "LSP_INVALID_ARGUMENTS");
        assert_eq!(to_lsp_position(text, 3, 1).unwrap_err().code, "LSP_INVALID_ARGUMENTS");
    }

    #[test]
    fn locations_hold_at_max_locations_with_the_footer() {
        let dir = std::env::temp_dir().join(format!("seam-lsp-locations-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.ts"), "one\n  two  \nthree\n").unwrap();
        let uri: lsp_types::Uri = crate::client::file_uri(&dir.join("a.ts")).parse().unwrap();
        let at = |line: u32| Location {
            uri: uri.clone(),
            range: lsp_types::Range::new(lsp_types::Position::new(line, 2), lsp_types::Position::new(line, 3)),
        };
        let settings =
            |max: u32| LspSettings { timeout: seam_engine::units::Duration::from_secs(1), max_locations: max, max_result_chars: 1000 };
        let three = vec![at(0), at(1), at(2), at(1)];
        assert_eq!(
            locations_text(&dir, three.clone(), &settings(3), 1000, "references"),
            "a.ts:1:3  one\na.ts:2:3  two\na.ts:3:3  three",
            "at the limit (a duplicate dropped)"
        );
        assert_eq!(
            locations_text(&dir, three, &settings(2), 1000, "references"),
            "a.ts:1:3  one\na.ts:2:3  two\n… 1 more locations omitted (limit 2).",
            "one past it"
        );
        assert_eq!(locations_text(&dir, Vec::new(), &settings(2), 1000, "references"), "No references found.");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A location's source line is read like a question's file: within
    /// `max_document_bytes` (the file is 18 bytes), and never from a FIFO, which
    /// would hang the one thread a stdio `serve` runs on.
    #[test]
    fn source_lines_come_only_from_regular_files_within_the_cap() {
        let dir = std::env::temp_dir().join(format!("seam-lsp-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.ts"), "one\n  two  \nthree\n").unwrap();
        let fifo = dir.join("pipe.ts");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let location = |file: &str| Location {
            uri: crate::client::file_uri(&dir.join(file)).parse().unwrap(),
            range: lsp_types::Range::new(lsp_types::Position::new(1, 2), lsp_types::Position::new(1, 3)),
        };
        let settings = LspSettings { timeout: seam_engine::units::Duration::from_secs(1), max_locations: 5, max_result_chars: 1000 };
        assert_eq!(locations_text(&dir, vec![location("a.ts")], &settings, 18, "references"), "a.ts:2:3  two", "at the cap");
        assert_eq!(locations_text(&dir, vec![location("a.ts")], &settings, 17, "references"), "a.ts:2:3", "one byte under it");
        assert_eq!(locations_text(&dir, vec![location("pipe.ts")], &settings, 1000, "references"), "pipe.ts:2:3", "a FIFO");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The file that passed the containment check is the file that is read: a
    /// symlink retargeted outside the workspace between the two changes nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_symlink_swapped_after_the_check_still_reads_the_checked_file() {
        let dir = std::env::temp_dir().join(format!("seam-lsp-swap-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("workspace")).unwrap();
        let dir = std::fs::canonicalize(dir).unwrap();
        let workspace = dir.join("workspace");
        std::fs::write(workspace.join("inside.ts"), "inside\n").unwrap();
        std::fs::write(dir.join("outside.ts"), "outside\n").unwrap();
        let link = workspace.join("link.ts");
        std::os::unix::fs::symlink(workspace.join("inside.ts"), &link).unwrap();
        let resolved = ResolvedFile::of(&link).unwrap();
        assert_eq!(resolved.real, workspace.join("inside.ts"));
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(dir.join("outside.ts"), &link).unwrap();
        assert_eq!(read_regular_file(&resolved.open_by, 100, "link.ts", resolved.identity).unwrap(), "inside\n");
        // Read by path (no /proc), the swapped link now names another file: refused, not read.
        let held = std::fs::metadata(workspace.join("inside.ts")).unwrap();
        let identity = Some((std::os::unix::fs::MetadataExt::dev(&held), std::os::unix::fs::MetadataExt::ino(&held)));
        let by_path = read_regular_file(&link, 100, "link.ts", identity).unwrap_err();
        assert_eq!((by_path.code.code, by_path.message.contains("replaced")), ("LSP_NOT_A_FILE", true), "{}", by_path.message);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_hover_shape_becomes_markdown() {
        assert_eq!(hover_text(r#"{ "contents": "plain" }"#).unwrap(), "plain");
        assert_eq!(hover_text(r#"{ "contents": { "language": "ts", "value": "x: number" } }"#).unwrap(), "```ts\nx: number\n```");
        assert_eq!(hover_text(r#"{ "contents": ["a", { "language": "py", "value": "b" }] }"#).unwrap(), "a\n\n```py\nb\n```");
        assert_eq!(hover_text(r#"{ "contents": { "kind": "markdown", "value": "**b**" } }"#).unwrap(), "**b**");
        assert_eq!(hover_text("null").unwrap(), "No hover information.");
        assert_eq!(hover_text(r#"{ "contents": 5 }"#).unwrap_err().code, "LSP_MALFORMED_RESPONSE");
    }

    #[test]
    fn every_definition_shape_becomes_locations() {
        let range = r#"{ "start": { "line": 4, "character": 16 }, "end": { "line": 4, "character": 21 } }"#;
        let whole = r#"{ "start": { "line": 4, "character": 0 }, "end": { "line": 6, "character": 1 } }"#;
        let location = format!(r#"{{ "uri": "file:///w/a.ts", "range": {range} }}"#);
        let link = format!(r#"{{ "targetUri": "file:///w/b.ts", "targetRange": {whole}, "targetSelectionRange": {range} }}"#);
        let at = |ls: Vec<Location>| ls.iter().map(|l| format!("{}:{}", l.uri.as_str(), l.range.start.line)).collect::<Vec<_>>();
        assert_eq!(at(goto_locations(&location).unwrap()), ["file:///w/a.ts:4"], "one Location");
        assert_eq!(at(goto_locations(&format!(" [{location}, {location}]")).unwrap()), ["file:///w/a.ts:4"; 2], "Location[]");
        assert_eq!(at(goto_locations(&format!("[{link}]")).unwrap()), ["file:///w/b.ts:4"], "LocationLink[]: the target's name");
        assert_eq!(goto_locations("null").unwrap(), Vec::new());
        assert_eq!(goto_locations("[]").unwrap(), Vec::new());
        for malformed in [r#"{ "uri": 5, "range": "nowhere" }"#, r#"[{ "uri": "file:///w/a.ts" }]"#, "7", r#""x""#, "[1]"] {
            assert_eq!(goto_locations(malformed).unwrap_err().code, "LSP_MALFORMED_RESPONSE", "{malformed}");
        }
    }

    #[test]
    fn results_are_capped_at_max_result_chars() {
        assert_eq!(cap_chars("abc".into(), 3), "abc");
        let cut = cap_chars("x".repeat(100), 40);
        assert_eq!(cut.chars().count(), 40);
        assert!(cut.ends_with("… cut at max_result_chars (40)."));
    }
}

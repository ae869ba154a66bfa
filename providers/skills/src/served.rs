//! A skill as MCP's skills extension (SEP-2640) serves it: at
//! `skill://<name>/SKILL.md`, its frontmatter as written (as JSON), and a
//! manifest of every file of its folder with its size and sha256 digest; each
//! file readable at `skill://<name>/<path>`.
//!
//! What a skill's folder serves: SKILL.md (read where discovery read it: a
//! link to it was judged by the trust checks), and every other regular file
//! beneath the folder, found without following links: a link inside the folder
//! is not served, so nothing outside the folder is. Hidden entries (`.git`…)
//! are not served. A skill of more than [`MAX_FILES`] files or [`MAX_BYTES`]
//! bytes is not served over the extension (the `skill` tool still loads it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use serde_json::{Value as Json, json};
use sha2::Digest as _;

use crate::discover::{self, Candidate};

/// The most files one served skill may have (the extension's limit).
pub const MAX_FILES: usize = 512;
/// The most bytes one served skill's files may total (the extension's limit).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The URI scheme of served skills.
const SCHEME: &str = "skill://";

/// One file of a served skill: its path under the folder (`/`-separated), size and digest.
#[derive(Clone, Debug, PartialEq, Eq)]
struct File {
    path: String,
    size: u64,
    digest: String,
}

/// What a file was when it was last hashed.
type Stamp = (u64, Option<SystemTime>);

/// How many files' digests are kept; past it they are all forgotten (and hashed again).
const KEPT_DIGESTS: usize = 1 << 16;

/// Digests kept by file, while the file's size and time stay: a listing hashes only what changed.
fn digests() -> &'static Mutex<HashMap<PathBuf, (Stamp, String)>> {
    static DIGESTS: OnceLock<Mutex<HashMap<PathBuf, (Stamp, String)>>> = OnceLock::new();
    DIGESTS.get_or_init(Mutex::default)
}

/// A skill's URI for the file at `path` under its folder.
pub fn uri(name: &str, path: &str) -> String {
    format!("{SCHEME}{name}/{path}")
}

/// The skill name and file path a URI names, when it is a served skill's.
pub fn parse_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (name, path) = rest.split_once('/')?;
    (!name.is_empty() && !path.is_empty()).then_some((name, path))
}

/// The skill name and folder a directory URI names (`skill://<name>` is the skill's
/// folder, `skill://<name>/<path>` a folder beneath it), when it is a served skill's.
pub fn parse_directory_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
    (!name.is_empty() && !path.ends_with('/')).then_some((name, path))
}

/// `resources/directory/read` of a folder of a served skill (`path` empty: the skill's
/// own): its direct children as resources, folders with MIME type `inode/directory`.
pub fn directory(candidate: &Candidate, path: &str) -> Result<Json, String> {
    let files = manifest(candidate)?;
    let name = &candidate.summary.name;
    let prefix = if path.is_empty() { String::new() } else { format!("{path}/") };
    let mut folders = std::collections::BTreeSet::new();
    let mut resources = Vec::new();
    for file in files.iter().filter(|f| f.path.starts_with(&prefix)) {
        match file.path[prefix.len()..].split_once('/') {
            Some((folder, _)) => {
                folders.insert(folder.to_owned());
            }
            None => {
                let child = &file.path[prefix.len()..];
                resources.push(json!({ "uri": uri(name, &file.path), "name": child, "mimeType": mime_of(child), "size": file.size }));
            }
        }
    }
    if resources.is_empty() && folders.is_empty() {
        return Err(format!("skill `{name}` serves no folder `{path}`"));
    }
    for folder in folders {
        resources.push(json!({ "uri": uri(name, &format!("{prefix}{folder}")), "name": folder, "mimeType": "inode/directory" }));
    }
    Ok(json!({ "resources": resources }))
}

/// The skill's entry for `skills/list` (`{uri, frontmatter, resources}`), or why it is not served.
pub fn entry(candidate: &Candidate) -> Result<Json, String> {
    let files = manifest(candidate)?;
    let text = discover::read_skill_file(&candidate.file)?;
    let frontmatter =
        crate::skill::frontmatter_json(&text).map_err(|r| format!("{}:{}: {}", candidate.file.display(), r.line, r.reason))?;
    let name = &candidate.summary.name;
    let resources: Vec<Json> = files.iter().map(|f| json!({ "uri": uri(name, &f.path), "digest": f.digest, "size": f.size })).collect();
    Ok(json!({ "uri": uri(name, "SKILL.md"), "frontmatter": frontmatter, "resources": resources }))
}

/// The `resources/read` contents of the file at `path` of a served skill: text when it is UTF-8, else a blob.
pub fn read(candidate: &Candidate, path: &str) -> Result<Json, String> {
    let files = manifest(candidate)?;
    let Some(file) = files.iter().find(|f| f.path == path) else {
        return Err(format!("skill `{}` serves no file `{path}`", candidate.summary.name));
    };
    let on_disk = if file.path == "SKILL.md" { candidate.file.clone() } else { candidate.dir.join(&file.path) };
    let bytes = std::fs::read(&on_disk).map_err(|e| format!("cannot read {}: {e}", on_disk.display()))?;
    let uri = uri(&candidate.summary.name, path);
    let mime = mime_of(path);
    Ok(match String::from_utf8(bytes) {
        Ok(text) => json!({ "contents": [{ "uri": uri, "mimeType": mime, "text": text }] }),
        Err(e) => {
            use base64::Engine as _;
            let blob = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
            json!({ "contents": [{ "uri": uri, "mimeType": mime, "blob": blob }] })
        }
    })
}

/// Every file the skill serves, SKILL.md first, the rest by path; bounded by `MAX_FILES` and `MAX_BYTES`.
fn manifest(candidate: &Candidate) -> Result<Vec<File>, String> {
    let mut found = vec![("SKILL.md".to_owned(), candidate.file.clone())];
    walk(&candidate.dir, "", &mut found)?;
    found[1..].sort();
    let mut total = 0u64;
    let mut files = Vec::with_capacity(found.len());
    for (path, on_disk) in found {
        let meta = std::fs::metadata(&on_disk).map_err(|e| format!("cannot read {}: {e}", on_disk.display()))?;
        total += meta.len();
        if total > MAX_BYTES {
            return Err(format!("skill `{}` holds more than {MAX_BYTES} bytes, the most a served skill may", candidate.summary.name));
        }
        let stamp = (meta.len(), meta.modified().ok());
        let kept = digests().lock().expect("digests lock").get(&on_disk).filter(|(s, _)| *s == stamp).map(|(_, d)| d.clone());
        let digest = match kept {
            Some(digest) => digest,
            None => {
                let bytes = std::fs::read(&on_disk).map_err(|e| format!("cannot read {}: {e}", on_disk.display()))?;
                let hex: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
                let digest = format!("sha256:{hex}");
                let mut kept = digests().lock().expect("digests lock");
                if kept.len() >= KEPT_DIGESTS {
                    kept.clear();
                }
                kept.insert(on_disk.clone(), (stamp, digest.clone()));
                digest
            }
        };
        files.push(File { path, size: meta.len(), digest });
    }
    Ok(files)
}

/// The regular files beneath `dir` (not SKILL.md at its top), found without following
/// links; hidden entries skipped. Past `MAX_FILES` it stops with an error.
fn walk(dir: &Path, prefix: &str, found: &mut Vec<(String, PathBuf)>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') || (prefix.is_empty() && name == "SKILL.md") {
            continue;
        }
        let kind = entry.file_type().map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
        let path = format!("{prefix}{name}");
        if kind.is_dir() {
            walk(&entry.path(), &format!("{path}/"), found)?;
        } else if kind.is_file() {
            found.push((path, entry.path()));
            if found.len() > MAX_FILES {
                return Err(format!("a skill folder holds more than {MAX_FILES} files, the most a served skill may"));
            }
        }
    }
    Ok(())
}

/// A file's MIME type by its extension, as far as skills' files go.
fn mime_of(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).as_deref() {
        Some("md") => "text/markdown",
        Some("txt") => "text/plain",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("html") => "text/html",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_names_a_skill_and_a_path_under_it() {
        assert_eq!(parse_uri("skill://pdf/SKILL.md"), Some(("pdf", "SKILL.md")));
        assert_eq!(parse_uri("skill://pdf/scripts/fill.py"), Some(("pdf", "scripts/fill.py")));
        assert_eq!(parse_uri("skill://pdf"), None);
        assert_eq!(parse_uri("skill:///SKILL.md"), None);
        assert_eq!(parse_uri("file:///x"), None);
        assert_eq!(uri("pdf", "SKILL.md"), "skill://pdf/SKILL.md");
        assert_eq!(parse_directory_uri("skill://pdf"), Some(("pdf", "")));
        assert_eq!(parse_directory_uri("skill://pdf/scripts"), Some(("pdf", "scripts")));
        assert_eq!(parse_directory_uri("skill://pdf/scripts/"), None);
        assert_eq!(parse_directory_uri("skill://"), None);
    }
}

//! A skill as MCP's skills extension (SEP-2640) serves it: at
//! `skill://<name>/SKILL.md`, its frontmatter as written (as JSON), and a
//! manifest of every file of its folder with its size and sha256 digest; each
//! file readable at `skill://<name>/<path>` (each segment percent-encoded).
//!
//! What a skill's folder serves: SKILL.md (read where discovery read it: a
//! link to it was judged by the trust checks), and every other regular file
//! beneath the folder. Beneath the folder nothing is followed: every file is
//! opened one path component at a time, none of them a link (`O_NOFOLLOW`), so
//! a link put in place after the walk is refused as surely as one found by it,
//! and a file that is not regular (a FIFO) is never waited on. Hidden entries
//! (`.git`…) are not served. A skill of more than [`MAX_FILES`] files or
//! [`MAX_BYTES`] bytes, or whose folder holds more than [`MAX_WALKED`]
//! entries or nests deeper than [`MAX_DEPTH`], is not served over the
//! extension (the `skill` tool still loads it).

use std::collections::HashMap;
use std::ffi::CString;
use std::io::Read as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::{Value as Json, json};
use sha2::Digest as _;

use crate::discover::{DiscoverError, Folder};

/// The most files one served skill may have (the extension's limit).
pub const MAX_FILES: usize = 512;
/// The most bytes one served skill's files may total (the extension's limit).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The most entries (files, folders, hidden ones, links) a skill's folder walk looks at.
pub const MAX_WALKED: usize = 8 * MAX_FILES;
/// The deepest folder a skill's folder walk enters.
pub const MAX_DEPTH: usize = 16;

/// The URI scheme of served skills.
pub const SCHEME: &str = "skill://";

/// What a path segment keeps unencoded in a URI: RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Why a skill is not served over the extension, or a file or folder of it not read.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Its SKILL.md starts with a byte-order mark: a host would find no frontmatter in it.
    #[error("{} starts with a byte-order mark, which hosts do not read past", file.display())]
    ByteOrderMark { file: PathBuf },
    /// Its SKILL.md's frontmatter does not parse.
    #[error("{}:{line}: {reason}", file.display())]
    Frontmatter { file: PathBuf, line: u32, reason: String },
    #[error("skill `{name}` serves no file `{path}`")]
    NoFile { name: String, path: String },
    #[error("skill `{name}` serves no folder `{path}`")]
    NoFolder { name: String, path: String },
    /// A folder of the skill could not be listed, or a file (SKILL.md, one being served)
    /// or a folder entry could not be read: as discovery says it.
    #[error(transparent)]
    Fs(#[from] crate::discover::DiscoverError),
    /// A file of the skill (at `path` under its folder) could not be read while making its manifest.
    #[error("cannot read `{path}` of skill `{name}`: {source}")]
    ReadFile {
        name: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// One file past `MAX_BYTES`.
    #[error("{} is longer than {MAX_BYTES} bytes, the most a served skill may hold", path.display())]
    FileTooLong { path: PathBuf },
    /// The skill's files together past `MAX_BYTES`.
    #[error("skill `{name}` holds more than {MAX_BYTES} bytes, the most a served skill may")]
    TooManyBytes { name: String },
    #[error("a skill folder nests deeper than {MAX_DEPTH} folders, the most a served skill may")]
    TooDeep,
    #[error("a skill folder holds more than {MAX_WALKED} entries, the most a served skill's walk looks at")]
    TooManyEntries,
    #[error("a skill folder holds more than {MAX_FILES} files, the most a served skill may")]
    TooManyFiles,
}

/// One file of a served skill: its path under the folder (`/`-separated), size and digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct File {
    /// `/`-separated, decoded, under the skill's folder.
    pub(crate) path: String,
    pub(crate) size: u64,
    pub(crate) digest: String,
}

/// What a file was when it was hashed: device, inode, size, mtime and ctime (ns).
type DigestKey = (u64, u64, u64, i128, i128);

/// How many files' digests are kept; past it they are all forgotten (and hashed again).
const KEPT_DIGESTS: usize = 1 << 16;

/// How recent a change may be for its digest not to be kept: a file written again within
/// one timestamp tick of the hash would otherwise keep a stale digest (git's "racily clean").
const RACY: i128 = 2_000_000_000;

/// Files' digests kept by `DigestKey`, so that a listing hashes only what changed: at
/// most `KEPT_DIGESTS`, past it all forgotten; a file changed within `RACY` of its hash
/// is not kept. Each skills mount keeps one for the chains it is the first of
/// (`SkillsMount::digests`), not the mount whose folder is read: the served paths reach
/// a file through the chain's catalog, whose candidates do not record which mount read
/// them. A digest follows from the file's stamp alone, so whichever mount keeps it, it
/// is right; kept on a mount, it goes when the mount goes, and two deployments, which
/// build their own mounts, share none of it.
#[derive(Default)]
pub struct Digests(Mutex<HashMap<DigestKey, String>>);

impl Digests {
    fn get(&self, stamp: &DigestKey) -> Option<String> {
        self.0.lock().expect("digests lock").get(stamp).cloned()
    }

    /// Keeps the digest of the file of `stamp` hashed at `now` (ns since the epoch),
    /// unless its mtime or ctime is within `RACY` of `now`; past `KEPT_DIGESTS`, the
    /// others are all forgotten first.
    fn keep(&self, stamp: DigestKey, digest: &str, now: i128) {
        if now - stamp.3 > RACY && now - stamp.4 > RACY {
            let mut kept = self.0.lock().expect("digests lock");
            if kept.len() >= KEPT_DIGESTS {
                kept.clear();
            }
            kept.insert(stamp, digest.to_owned());
        }
    }

    /// How many digests are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().expect("digests lock").len()
    }
}

/// A skill's URI for the file at `path` (`/`-separated) under its folder.
pub fn uri(name: &str, path: &str) -> String {
    let segments: Vec<String> = path.split('/').map(|s| utf8_percent_encode(s, SEGMENT).to_string()).collect();
    format!("{SCHEME}{name}/{}", segments.join("/"))
}

/// The path (`/`-separated, decoded) a URI's segments name; none when a segment decodes
/// to something no served file has (`/`, NUL, `.`, `..`, an empty one, not UTF-8).
pub(crate) fn decoded(path: &str) -> Option<String> {
    let mut out = Vec::new();
    for segment in path.split('/') {
        let segment = percent_decode_str(segment).decode_utf8().ok()?;
        if segment.is_empty() || segment == "." || segment == ".." || segment.contains(['/', '\0']) {
            return None;
        }
        out.push(segment.into_owned());
    }
    Some(out.join("/"))
}

/// The skill name and file path a URI names, when it is a served skill's.
pub fn parse_uri(uri: &str) -> Option<(&str, String)> {
    let (name, path) = uri.strip_prefix(SCHEME)?.split_once('/')?;
    (!name.is_empty()).then_some(())?;
    Some((name, decoded(path)?))
}

/// The skill name and folder a directory URI names (`skill://<name>` is the skill's
/// folder, `skill://<name>/<path>` a folder beneath it), when it is a served skill's.
pub fn parse_directory_uri(uri: &str) -> Option<(&str, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    match rest.split_once('/') {
        None if !rest.is_empty() => Some((rest, String::new())),
        Some((name, path)) if !name.is_empty() => Some((name, decoded(path)?)),
        _ => None,
    }
}

/// The skill's entry for `skills/list` (`{uri, frontmatter, resources}`), or why it is
/// not served; its files' digests kept in `digests`.
pub fn entry(name: &str, folder: &Folder, digests: &Digests) -> Result<Json, ServeError> {
    let (files, skill_md) = manifest(name, folder, digests)?;
    // A host finds the frontmatter at the file's first byte (`---`); after a byte-order mark
    // it finds none, and the skill fails its check. The `skill` tool reads past the mark.
    if skill_md.starts_with("\u{feff}".as_bytes()) {
        return Err(ServeError::ByteOrderMark { file: folder.file.clone() });
    }
    let text = String::from_utf8(skill_md).map_err(|_| DiscoverError::NotUtf8 { path: folder.file.clone() })?;
    let frontmatter = crate::skill::frontmatter_json(&text).map_err(|r| ServeError::Frontmatter {
        file: folder.file.clone(),
        line: r.line,
        reason: r.reason,
    })?;
    Ok(entry_of(name, frontmatter, &files))
}

/// A `skills/list` entry of skill `name` with these files (SKILL.md first).
pub(crate) fn entry_of(name: &str, frontmatter: Json, files: &[File]) -> Json {
    let resources: Vec<Json> = files.iter().map(|f| json!({ "uri": uri(name, &f.path), "digest": f.digest, "size": f.size })).collect();
    json!({ "uri": uri(name, "SKILL.md"), "frontmatter": frontmatter, "resources": resources })
}

/// The `resources/read` contents of the file at `path` of a served skill: text when it is UTF-8, else a blob.
pub fn read(name: &str, folder: &Folder, path: &str, digests: &Digests) -> Result<Json, ServeError> {
    let (files, skill_md) = manifest(name, folder, digests)?;
    if !files.iter().any(|f| f.path == path) {
        return Err(ServeError::NoFile { name: name.to_owned(), path: path.to_owned() });
    }
    let bytes = if path == "SKILL.md" { skill_md } else { read_beneath(&folder.dir, path)? };
    Ok(contents(name, path, bytes))
}

/// The `resources/read` result of the file at `path` of skill `name`: text when it is UTF-8, else a blob.
pub(crate) fn contents(name: &str, path: &str, bytes: Vec<u8>) -> Json {
    let uri = uri(name, path);
    let mime = mime_of(path);
    match String::from_utf8(bytes) {
        Ok(text) => json!({ "contents": [{ "uri": uri, "mimeType": mime, "text": text }] }),
        Err(e) => {
            use base64::Engine as _;
            let blob = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
            json!({ "contents": [{ "uri": uri, "mimeType": mime, "blob": blob }] })
        }
    }
}

/// The size of the file at `path` of a skill in `folder`, as the read budget takes it
/// (`seam_engine::reads`) before the file is read; 0 for one that is not there (its
/// read fails as it would).
pub fn file_size(folder: &Folder, path: &str) -> u64 {
    let file = if path == "SKILL.md" { std::fs::File::open(&folder.file) } else { open_beneath(&folder.dir, path) };
    file.and_then(|f| f.metadata()).map_or(0, |m| m.len())
}

/// `resources/directory/read` of a folder of a served skill (`path` empty: the skill's
/// own): its direct children as resources, folders with MIME type `inode/directory`.
pub fn directory(name: &str, folder: &Folder, path: &str, digests: &Digests) -> Result<Json, ServeError> {
    let (files, _) = manifest(name, folder, digests)?;
    // A folder that serves nothing (an empty one, one of hidden files) is listed empty; one that is not there is not served.
    directory_of(name, &files, path, || is_folder_beneath(&folder.dir, path))
}

/// `resources/directory/read` of folder `path` of skill `name` with these files; `exists`
/// says whether a folder that serves none of them is there at all.
pub(crate) fn directory_of(name: &str, files: &[File], path: &str, exists: impl FnOnce() -> bool) -> Result<Json, ServeError> {
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
    if resources.is_empty() && folders.is_empty() && !path.is_empty() && !exists() {
        return Err(ServeError::NoFolder { name: name.to_owned(), path: path.to_owned() });
    }
    for folder in folders {
        resources.push(json!({ "uri": uri(name, &format!("{prefix}{folder}")), "name": folder, "mimeType": "inode/directory" }));
    }
    Ok(json!({ "resources": resources }))
}

/// Every file the skill serves, SKILL.md first and the rest by path, and SKILL.md's
/// bytes; bounded by `MAX_FILES`, `MAX_BYTES`, `MAX_WALKED` and `MAX_DEPTH`. A file
/// whose stamp is in `digests` is not read again.
fn manifest(name: &str, folder: &Folder, digests: &Digests) -> Result<(Vec<File>, Vec<u8>), ServeError> {
    let skill_md = read_capped(std::fs::File::open(&folder.file), &folder.file)?;
    let mut total = skill_md.len() as u64;
    let mut files = vec![File { path: "SKILL.md".into(), size: total, digest: digest_of(&skill_md) }];
    let mut found = Vec::new();
    let mut walked = 0;
    walk(&folder.dir, "", 0, &mut found, &mut walked)?;
    found.sort();
    for path in found {
        let unread = |source| ServeError::ReadFile { name: name.to_owned(), path: path.clone(), source };
        let mut file = open_beneath(&folder.dir, &path).map_err(unread)?;
        let meta = file.metadata().map_err(unread)?;
        total += meta.len();
        if total > MAX_BYTES {
            return Err(ServeError::TooManyBytes { name: name.to_owned() });
        }
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        let stamp = (meta.dev(), meta.ino(), meta.len(), ns(meta.mtime(), meta.mtime_nsec()), ns(meta.ctime(), meta.ctime_nsec()));
        let digest = match digests.get(&stamp) {
            Some(digest) => digest,
            None => {
                let mut bytes = Vec::with_capacity(meta.len() as usize);
                (&mut file).take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(unread)?;
                let digest = digest_of(&bytes);
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
                digests.keep(stamp, &digest, now);
                digest
            }
        };
        files.push(File { path, size: meta.len(), digest });
    }
    Ok((files, skill_md))
}

/// The `sha256:` digest of `bytes`, as the skills extension writes it.
pub(crate) fn digest_of(bytes: &[u8]) -> String {
    let hex: String = sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The regular files beneath `dir` (not SKILL.md at its top) by path, found without
/// following links; hidden entries skipped. Bounded by `MAX_FILES`, `MAX_WALKED` and `MAX_DEPTH`.
fn walk(dir: &Path, prefix: &str, depth: usize, found: &mut Vec<String>, walked: &mut usize) -> Result<(), ServeError> {
    if depth > MAX_DEPTH {
        return Err(ServeError::TooDeep);
    }
    let unlisted = |source| ServeError::Fs(DiscoverError::List { path: dir.to_owned(), source });
    let entries = std::fs::read_dir(dir).map_err(unlisted)?;
    for entry in entries {
        *walked += 1;
        if *walked > MAX_WALKED {
            return Err(ServeError::TooManyEntries);
        }
        let entry = entry.map_err(unlisted)?;
        let name = entry.file_name();
        // A name that is not UTF-8 cannot be in a URI: not served.
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') || (prefix.is_empty() && name == "SKILL.md") {
            continue;
        }
        let kind = entry.file_type().map_err(|source| DiscoverError::Read { path: entry.path(), source })?;
        let path = format!("{prefix}{name}");
        if kind.is_dir() {
            walk(&entry.path(), &format!("{path}/"), depth + 1, found, walked)?;
        } else if kind.is_file() {
            found.push(path);
            if found.len() >= MAX_FILES {
                return Err(ServeError::TooManyFiles);
            }
        }
    }
    Ok(())
}

/// Opens the regular file at `path` (`/`-separated) beneath `dir`, one component at a
/// time with `O_NOFOLLOW`: no link on the way is followed, and a file that is not
/// regular is refused without being waited on (`O_NONBLOCK`). `dir` itself is followed,
/// as discovery followed it.
fn open_beneath(dir: &Path, path: &str) -> std::io::Result<std::fs::File> {
    let mut at: OwnedFd = std::fs::File::open(dir)?.into();
    let mut components = path.split('/').peekable();
    while let Some(component) = components.next() {
        let component = CString::new(component).map_err(std::io::Error::other)?;
        let last = components.peek().is_none();
        let kind = if last { libc::O_NONBLOCK } else { libc::O_DIRECTORY };
        // SAFETY: `at` is an open descriptor and `component` a NUL-terminated string, both alive for the call.
        let fd = unsafe { libc::openat(at.as_raw_fd(), component.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW | kind) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `openat` returned a new descriptor that nothing else owns.
        at = unsafe { OwnedFd::from_raw_fd(fd) };
    }
    let file = std::fs::File::from(at);
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// The bytes of the file at `path` beneath `dir` (`open_beneath`), at most `MAX_BYTES`.
fn read_beneath(dir: &Path, path: &str) -> Result<Vec<u8>, ServeError> {
    read_capped(open_beneath(dir, path), Path::new(path))
}

/// A file's bytes, at most `MAX_BYTES` (one more is an error, not a cut); `what` names
/// it in an error (SKILL.md's path, or a file's path under the skill's folder).
fn read_capped(file: std::io::Result<std::fs::File>, what: &Path) -> Result<Vec<u8>, ServeError> {
    let mut bytes = Vec::new();
    file.and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|source| DiscoverError::Read { path: what.to_owned(), source })?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(ServeError::FileTooLong { path: what.to_owned() });
    }
    Ok(bytes)
}

/// Whether `path` beneath `dir` is a folder, reached without following a link.
fn is_folder_beneath(dir: &Path, path: &str) -> bool {
    let mut at = dir.to_path_buf();
    path.split('/').all(|component| {
        at.push(component);
        !component.starts_with('.') && std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir())
    })
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
    fn a_uri_names_a_skill_and_a_path_under_it_each_segment_encoded() {
        assert_eq!(parse_uri("skill://pdf/SKILL.md"), Some(("pdf", "SKILL.md".to_owned())));
        assert_eq!(parse_uri("skill://pdf/scripts/fill.py"), Some(("pdf", "scripts/fill.py".to_owned())));
        assert_eq!(uri("pdf", "a b/50%#1?.md"), "skill://pdf/a%20b/50%25%231%3F.md");
        assert_eq!(parse_uri(&uri("pdf", "a b/50%#1?.md")), Some(("pdf", "a b/50%#1?.md".to_owned())));
        for refused in ["skill://pdf", "skill:///SKILL.md", "file:///x", "skill://pdf/%2e%2e/x", "skill://pdf/a%2Fb", "skill://pdf/a//b"] {
            assert_eq!(parse_uri(refused), None, "{refused}");
        }
        assert_eq!(parse_directory_uri("skill://pdf"), Some(("pdf", String::new())));
        assert_eq!(parse_directory_uri("skill://pdf/scripts"), Some(("pdf", "scripts".to_owned())));
        for refused in ["skill://pdf/", "skill://pdf/scripts/", "skill://", "skill://pdf/.."] {
            assert_eq!(parse_directory_uri(refused), None, "{refused}");
        }
    }

    /// A SKILL.md that starts with a byte-order mark is not served over the extension: a
    /// host would find no frontmatter in it.
    #[test]
    fn a_skill_md_after_a_byte_order_mark_is_not_served() {
        let dir = std::env::temp_dir().join(format!("seam-served-bom-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let folder = Folder { dir: dir.clone(), file: dir.join("SKILL.md"), guard: None };
        let text = "---\nname: a\ndescription: d\n---\nbody\n";
        std::fs::write(&folder.file, text).unwrap();
        assert_eq!(entry("a", &folder, &Digests::default()).unwrap()["frontmatter"]["name"], "a");
        std::fs::write(&folder.file, format!("\u{feff}{text}")).unwrap();
        assert!(entry("a", &folder, &Digests::default()).unwrap_err().to_string().contains("byte-order mark"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A stamp of file `ino` whose mtime and ctime are both `at`.
    fn stamp(ino: u64, at: i128) -> DigestKey {
        (1, ino, 10, at, at)
    }

    /// Up to `KEPT_DIGESTS` digests are all kept; one more forgets them all, then is kept.
    #[test]
    fn digests_are_kept_up_to_the_limit_and_all_forgotten_past_it() {
        let digests = Digests::default();
        let now = 100 * RACY;
        let old = now - RACY - 1;
        let limit = KEPT_DIGESTS as u64;
        for ino in 0..limit {
            digests.keep(stamp(ino, old), "sha256:a", now);
        }
        assert_eq!(digests.len(), KEPT_DIGESTS, "at the limit every digest is kept");
        assert_eq!(digests.get(&stamp(0, old)).as_deref(), Some("sha256:a"), "the first one too");
        assert_eq!(digests.get(&stamp(limit - 1, old)).as_deref(), Some("sha256:a"));
        digests.keep(stamp(limit, old), "sha256:b", now);
        assert_eq!(digests.len(), 1, "past the limit the others are forgotten");
        assert_eq!(digests.get(&stamp(0, old)), None);
        assert_eq!(digests.get(&stamp(limit, old)).as_deref(), Some("sha256:b"));
    }

    /// A file whose mtime or ctime is within `RACY` of its hash is not kept: it may have
    /// been written again within the same timestamp tick (git's "racily clean").
    #[test]
    fn a_digest_of_a_file_changed_within_racy_of_its_hash_is_not_kept() {
        let digests = Digests::default();
        let now = 100 * RACY;
        digests.keep((1, 1, 10, now - RACY, now - 2 * RACY), "sha256:a", now);
        digests.keep((1, 2, 10, now - 2 * RACY, now - RACY), "sha256:a", now);
        digests.keep((1, 3, 10, now, now), "sha256:a", now);
        assert_eq!(digests.len(), 0, "a change RACY ago or later, by mtime or by ctime");
        digests.keep((1, 4, 10, now - RACY - 1, now - RACY - 1), "sha256:a", now);
        assert_eq!(digests.get(&(1, 4, 10, now - RACY - 1, now - RACY - 1)).as_deref(), Some("sha256:a"));
    }

    /// A file is opened beneath its folder without following a link anywhere on the way,
    /// and a FIFO is refused, not waited on.
    #[test]
    fn a_file_is_opened_beneath_its_folder_through_no_link() {
        let dir = std::env::temp_dir().join(format!("seam-served-beneath-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let skill = dir.join("skill");
        std::fs::create_dir_all(skill.join("real")).unwrap();
        std::fs::write(skill.join("real/a.txt"), "a").unwrap();
        std::fs::write(dir.join("outside.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(dir.join("outside.txt"), skill.join("file-link")).unwrap();
        std::os::unix::fs::symlink(&dir, skill.join("folder-link")).unwrap();
        assert_eq!(read_beneath(&skill, "real/a.txt").unwrap(), b"a");
        assert!(read_beneath(&skill, "file-link").is_err(), "a link to a file");
        assert!(read_beneath(&skill, "folder-link/outside.txt").is_err(), "a link to a folder on the way");
        let fifo = CString::new(skill.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(read_beneath(&skill, "fifo").is_err(), "a FIFO");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

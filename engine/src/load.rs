//! Loading: read a composition and the files it `extends`, interpolate `${VAR}`,
//! and deep-merge them into one spanned tree.
//!
//! Merge rules: maps merge by key, everything else (lists included) is
//! replaced; a `null` or `!reset` value removes the key; `!reset` on a map or
//! list replaces the inherited value instead of merging into it. Bases apply in
//! the order listed, the extending file last. Each node keeps the file that
//! wrote it, so diagnostics point at the file that wrote the offending value.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diagnostic::{Diagnostic, Sources, Span};
use crate::env::Env;
use crate::yaml::{self, Node, Value};

/// Most files one composition may pull in through `extends`.
pub const MAX_EXTENDS_FILES: usize = 64;

/// The most bytes read for one composition, the files it `extends` included,
/// unless the command line says otherwise (`--max-composition-bytes`). A
/// composition of a thousand mounts is half a MiB; a validated tree takes
/// tens of times its text in memory, so the budget also bounds that.
pub const DEFAULT_MAX_COMPOSITION_BYTES: u64 = 4 * 1024 * 1024;

/// A loaded composition: the merged tree (absent when the top file could not be
/// parsed), every file read, and what went wrong on the way.
pub struct Loaded {
    pub root: Option<Node>,
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
}

/// Why a composition could not even be read: the CLI maps this to exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", path.display())]
pub struct ReadError {
    pub path: PathBuf,
    #[source]
    pub error: std::io::Error,
}

/// Why a file was not read (`read_bounded`).
#[derive(Debug)]
pub enum Unread {
    Io(std::io::Error),
    /// A FIFO, a device, a socket or a folder: reading it could block or never end.
    NotRegular(&'static str),
    /// Longer than what is left of the composition's byte budget.
    TooLarge,
}

/// Reads a composition file of at most `limit` bytes, never reading more
/// than one byte past it, and only a regular file. Its type is judged before it
/// is opened (opening a device can itself do something, and a socket cannot be
/// opened at all) and again on what was opened, so a file swapped in between
/// cannot slip past; it is opened without blocking (a FIFO would wait for a
/// writer) and never as a controlling terminal.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, Unread> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    regular(&std::fs::metadata(path).map_err(Unread::Io)?)?;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path).map_err(Unread::Io)?;
    let meta = file.metadata().map_err(Unread::Io)?;
    regular(&meta)?;
    if meta.len() > limit {
        return Err(Unread::TooLarge);
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The length read may differ from the one stated (a file still being written): the bound is on what is read.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(Unread::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Unread::TooLarge);
    }
    Ok(bytes)
}

/// `Ok` for a regular file; otherwise what it is.
fn regular(meta: &std::fs::Metadata) -> Result<(), Unread> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    Err(Unread::NotRegular(if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }))
}

/// Loads the composition at `path`, reading at most `limit` bytes for it and
/// the files it extends together. A missing or unreadable file is a
/// [`ReadError`]; a file that is not a regular file, or too large, is a
/// diagnostic located at the file.
pub fn load_file(path: &Path, env: &dyn Env, limit: u64) -> Result<Loaded, ReadError> {
    match read_bounded(path, limit) {
        Ok(bytes) => Ok(Loader::new(env, limit).start(path, bytes)),
        Err(Unread::Io(error)) => Err(ReadError { path: path.to_owned(), error }),
        Err(unread) => Ok(Loader::new(env, limit).refuse_top(path, unread)),
    }
}

/// Loads a composition from bytes already read (its `extends` are read from
/// disk, relative to `path`), within `limit` bytes for it and its bases.
pub fn load_bytes(path: &Path, bytes: Vec<u8>, env: &dyn Env, limit: u64) -> Loaded {
    let loader = Loader::new(env, limit);
    if bytes.len() as u64 > limit {
        return loader.refuse_top(path, Unread::TooLarge);
    }
    loader.start(path, bytes)
}

/// `COMPOSITION_TOO_LARGE` for the composition (`base` `None`) or the base it names.
fn too_large(span: Span, pointer: &str, base: Option<&str>, limit: u64) -> Diagnostic {
    let limit = crate::units::Size::from_bytes(limit);
    let message = match base {
        None => format!("the composition is larger than {limit}, the most seam reads for one composition and its bases"),
        Some(entry) => format!("`{entry}` takes the composition and its bases past {limit}, the most seam reads for one composition"),
    };
    Diagnostic::new(crate::codes::COMPOSITION_TOO_LARGE, span, pointer, message)
        .with_help("a composition is rarely over a MiB; if this one is meant to be larger, raise `--max-composition-bytes`")
}

struct Loader<'e> {
    env: &'e dyn Env,
    sources: Sources,
    diagnostics: Vec<Diagnostic>,
    /// Canonical paths of the files being loaded, outermost first, for cycle detection.
    chain: Vec<PathBuf>,
    /// The byte budget of the whole composition, and what is left of it.
    limit: u64,
    left: u64,
}

impl<'e> Loader<'e> {
    fn new(env: &'e dyn Env, limit: u64) -> Loader<'e> {
        Loader { env, sources: Sources::default(), diagnostics: Vec::new(), chain: Vec::new(), limit, left: limit }
    }

    /// Loads the top file from its bytes, already counted within the budget.
    fn start(mut self, path: &Path, bytes: Vec<u8>) -> Loaded {
        self.left = self.limit.saturating_sub(bytes.len() as u64);
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        let root = self.load(path, canonical, bytes).map(remove_nulls);
        self.finish(root)
    }

    /// The top file, not read: a diagnostic at its start, nothing of it quoted.
    fn refuse_top(mut self, path: &Path, unread: Unread) -> Loaded {
        let file = self.sources.add(path.to_owned(), "".into());
        let span = Span { file, line: 1, column: 1 };
        self.diagnostics.push(match unread {
            Unread::NotRegular(what) => Diagnostic::new(
                crate::codes::COMPOSITION_NOT_A_FILE,
                span,
                "",
                format!("the composition is {what}, not a regular file; nothing was read"),
            ),
            _ => too_large(span, "", None, self.limit),
        });
        self.finish(None)
    }

    fn finish(self, root: Option<Node>) -> Loaded {
        Loaded { root, sources: self.sources, diagnostics: self.diagnostics }
    }
}

impl Loader<'_> {
    /// Loads one file; `canonical` is its canonical path, for cycle detection.
    fn load(&mut self, path: &Path, canonical: PathBuf, bytes: Vec<u8>) -> Option<Node> {
        // Only a file that is a YAML file by its real name is quoted under a diagnostic: one a
        // symlink or `extends` leads to elsewhere (`/etc/shadow`) may be located, never shown.
        let quotable = canonical.extension().is_some_and(|e| e == "yaml" || e == "yml");
        let text: Arc<str> = match String::from_utf8(bytes) {
            Ok(t) => t.into(),
            Err(e) => {
                // Everything before the first bad byte is valid UTF-8: count its lines and characters.
                let valid = std::str::from_utf8(&e.as_bytes()[..e.utf8_error().valid_up_to()]).expect("valid up to here");
                let line = valid.matches('\n').count() as u32 + 1;
                let column = valid.rsplit('\n').next().unwrap_or_default().chars().count() as u32 + 1;
                let lossy: Arc<str> = if quotable { String::from_utf8_lossy(e.as_bytes()).into() } else { "".into() };
                let file = self.sources.add(path.to_owned(), lossy);
                self.diagnostics.push(Diagnostic::new(
                    crate::codes::YAML_NOT_UTF8,
                    Span { file, line, column },
                    "",
                    "the file is not valid UTF-8",
                ));
                return None;
            }
        };
        let text = text.strip_prefix('\u{feff}').map(Arc::from).unwrap_or(text);
        let file = self.sources.add(path.to_owned(), if quotable { text.clone() } else { "".into() });
        let root = match yaml::parse_interpolated(&text, file, self.env) {
            Ok((root, env_diagnostics)) => {
                self.diagnostics.extend(env_diagnostics);
                root
            }
            Err(d) => {
                self.diagnostics.push(d);
                return None;
            }
        };
        if !matches!(root.value, Value::Map(_)) {
            // Not a composition (a symlink to some other file, say): its text is not kept, so
            // no diagnostic quotes it into `/status`, the status page or the log.
            self.sources.withhold(file);
            return Some(root);
        }
        self.chain.push(canonical);
        let merged = self.apply_extends(path, root);
        self.chain.pop();
        Some(merged)
    }

    /// Merges the bases `root`'s `extends` names under it, in order; `extends`
    /// itself is dropped when it is malformed, so the schema does not report it again.
    fn apply_extends(&mut self, path: &Path, mut root: Node) -> Node {
        let Value::Map(map) = &mut root.value else { return root };
        let Some(extends) = map.get("extends") else { return root };
        let before = self.diagnostics.len();
        let Some(entries) = self.extends_entries(&extends.node) else {
            map.shift_remove("extends");
            return root;
        };
        if self.diagnostics.len() > before {
            map.shift_remove("extends");
        }
        let folder = path.parent().unwrap_or(Path::new("."));
        let mut merged: Option<Node> = None;
        for (i, entry, span) in entries {
            let base = match self.base(folder, &entry, span, format!("/extends/{i}")) {
                Base::Map(base) => base,
                Base::Skipped => continue,
                Base::Stop => break,
            };
            merged = Some(match merged {
                None => base,
                Some(acc) => merge(acc, base),
            });
        }
        match merged {
            Some(base) => merge(base, root),
            None => root,
        }
    }

    /// The paths `extends` lists, each with its index and place; an entry that is
    /// not a string is reported and left out. `None` (reported) when `extends` is
    /// not a list at all.
    fn extends_entries(&mut self, extends: &Node) -> Option<Vec<(usize, String, Span)>> {
        match &extends.value {
            Value::Seq(items) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match &item.value {
                        Value::Str(s) => out.push((i, s.clone(), item.span)),
                        _ => self.diagnostics.push(Diagnostic::new(
                            crate::codes::EXTENDS_INVALID,
                            item.span,
                            format!("/extends/{i}"),
                            "an `extends` entry is a path to a composition file",
                        )),
                    }
                }
                Some(out)
            }
            Value::Null => Some(Vec::new()),
            _ => {
                self.diagnostics.push(
                    Diagnostic::new(crate::codes::EXTENDS_INVALID, extends.span, "/extends", "`extends` is a list of paths")
                        .with_help("write `extends: [base.yaml]`"),
                );
                None
            }
        }
    }

    /// The base one `extends` entry names (written `entry`, at `pointer`), loaded
    /// with its own bases merged; or why there is nothing to merge from it.
    fn base(&mut self, folder: &Path, entry: &str, span: Span, pointer: String) -> Base {
        let target = folder.join(entry);
        let canonical = target.canonicalize().unwrap_or_else(|_| target.clone());
        if let Some(start) = self.chain.iter().position(|p| *p == canonical) {
            let mut names: Vec<String> = self.chain[start..].iter().map(|p| display_name(p)).collect();
            names.push(display_name(&canonical));
            let message = format!("`extends` forms a cycle: {}", names.join(" → "));
            self.diagnostics.push(Diagnostic::new(crate::codes::EXTENDS_CYCLE, span, pointer, message));
            return Base::Skipped;
        }
        // The top file is not counted: it may pull in MAX_EXTENDS_FILES others.
        if self.sources.files().count() > MAX_EXTENDS_FILES {
            self.diagnostics.push(Diagnostic::new(
                crate::codes::EXTENDS_LIMIT,
                span,
                pointer,
                format!("a composition may pull in at most {MAX_EXTENDS_FILES} files through `extends`"),
            ));
            return Base::Stop;
        }
        let bytes = match read_bounded(&target, self.left) {
            Ok(bytes) => bytes,
            Err(unread) => return self.unread_base(unread, &target, entry, span, pointer),
        };
        self.left -= bytes.len() as u64;
        let Some(mut base) = self.load(&target, canonical, bytes) else { return Base::Skipped };
        match &mut base.value {
            Value::Map(m) => {
                m.shift_remove("extends");
            }
            // An empty base adds nothing (merged, its null would replace what came before it).
            Value::Null => return Base::Skipped,
            other => {
                self.diagnostics.push(Diagnostic::new(
                    crate::codes::EXTENDS_NOT_MAPPING,
                    span,
                    pointer,
                    format!("`{entry}` is not a composition: its document is {}, not a map", other.kind_name()),
                ));
                return Base::Skipped;
            }
        }
        Base::Map(base)
    }

    /// Reports a base that was not read. A file too large for what is left of
    /// the budget stops the reading: every later base would be refused too.
    fn unread_base(&mut self, unread: Unread, target: &Path, entry: &str, span: Span, pointer: String) -> Base {
        let (d, next) = match unread {
            Unread::Io(e) => (
                Diagnostic::new(
                    crate::codes::EXTENDS_NOT_FOUND,
                    span,
                    pointer,
                    format!("cannot read `{entry}` ({}): {e}", target.display()),
                ),
                Base::Skipped,
            ),
            Unread::NotRegular(what) => (
                Diagnostic::new(
                    crate::codes::EXTENDS_NOT_A_FILE,
                    span,
                    pointer,
                    format!("`{entry}` ({}) is {what}, not a regular file; nothing was read", target.display()),
                ),
                Base::Skipped,
            ),
            Unread::TooLarge => (too_large(span, &pointer, Some(entry), self.limit), Base::Stop),
        };
        self.diagnostics.push(d);
        next
    }
}

/// What became of one `extends` entry.
enum Base {
    /// A composition, to merge under the entries after it.
    Map(Node),
    /// Nothing to merge (reported, or an empty file): on to the next entry.
    Skipped,
    /// A limit was reached (reported): no later entry is read.
    Stop,
}

fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// `null` (and `!reset` with no value) removes a key everywhere, not only where
/// it overrides a base: `budgets: null` means the same with or without `extends`.
fn remove_nulls(mut node: Node) -> Node {
    let mut stack = vec![&mut node];
    while let Some(n) = stack.pop() {
        match &mut n.value {
            Value::Map(m) => {
                // Nulls are rare: a map without one is left as it is (retain would still walk and shift it).
                if m.values().any(|e| e.node.value == Value::Null) {
                    m.retain(|_, e| e.node.value != Value::Null);
                }
                stack.extend(m.values_mut().map(|e| &mut e.node));
            }
            Value::Seq(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    node
}

/// Deep-merges `over` onto `base`: maps by key, everything else replaced.
pub fn merge(base: Node, over: Node) -> Node {
    if over.reset {
        return Node { reset: false, ..over };
    }
    match (base.value, over.value) {
        (Value::Map(mut b), Value::Map(o)) => {
            for (key, entry) in o {
                if entry.node.value == Value::Null {
                    b.shift_remove(&key);
                    continue;
                }
                match b.get_mut(&key) {
                    Some(prev) => {
                        let inherited = std::mem::replace(&mut prev.node, Node::new(Value::Null, entry.node.span));
                        prev.node = merge(inherited, entry.node);
                        prev.key_span = entry.key_span;
                    }
                    None => {
                        let node = Node { reset: false, ..entry.node };
                        b.insert(key, crate::yaml::Entry { key_span: entry.key_span, node });
                    }
                }
            }
            Node { value: Value::Map(b), ..over }
        }
        (_, value) => Node { value, ..over },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::interpolate;
    use crate::redact::is_secret_name;
    use std::collections::HashMap;

    fn env() -> HashMap<String, String> {
        [("HOME", "/home/u"), ("EMPTY", "")].into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }

    #[test]
    fn interpolation_forms() {
        let e = env();
        assert_eq!(interpolate("${HOME}/x", &e), Ok(Some("/home/u/x".into())));
        assert_eq!(interpolate("${NOPE:-d}", &e), Ok(Some("d".into())));
        assert_eq!(interpolate("${EMPTY:-d}", &e), Ok(Some("d".into())));
        assert_eq!(interpolate("a$$b", &e), Ok(Some("a$b".into())));
        assert_eq!(interpolate("cost $5", &e), Ok(None));
        assert_eq!(interpolate("${NOPE}", &e).unwrap_err().0, "ENV_UNSET");
        assert_eq!(
            interpolate("${NOPE:?set it}", &e).unwrap_err(),
            (crate::codes::ENV_REQUIRED, "environment variable `NOPE`: set it".into())
        );
        assert_eq!(interpolate("${HOME", &e).unwrap_err().0, "ENV_SYNTAX");
        assert_eq!(interpolate("${1X}", &e).unwrap_err().0, "ENV_SYNTAX");
        assert_eq!(interpolate("--token=${GITHUB_TOKEN}", &e).unwrap_err().0, "SECRET_INTERPOLATED");
        assert_eq!(interpolate("${TOKENIZER_PATH:-x}", &e), Ok(Some("x".into())));
    }

    /// Each form the rule must catch, and names it must leave alone.
    #[test]
    fn secret_names() {
        // One string, so the scan for codes in tests/generated.rs does not take the names for codes.
        let secrets = "GITHUB_TOKEN OPENAI_API_KEY DEEPSEEKAPIKEY deepseekApiKey GITHUBTOKEN DB_PASSWORD DBPASSWORD BASIC_AUTH PROXY_AUTH SIGNING_KEYS AWS_SECRETKEY GH_PAT SESSION_COOKIE GPG_PASSPHRASE GOOGLE_CREDENTIALS".split(' ');
        for name in secrets {
            assert!(is_secret_name(name), "{name}");
            assert_eq!(interpolate(&format!("${{{name}:-x}}"), &env()).unwrap_err().0, "SECRET_INTERPOLATED", "{name}");
        }
        for name in
            "AUTH_URL AUTH_DOMAIN COOKIE_NAME TOKENIZER_PATH MAX_TOKENS MONKEY HOTKEY_MAP KEYBOARD AUTHOR HOME PWD SEAM_WEB_SEARCH PATH"
                .split(' ')
        {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    /// A scratch folder of this test's own.
    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("seam-load-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn codes(loaded: &Loaded) -> Vec<&'static str> {
        loaded.diagnostics.iter().map(|d| d.code.code).collect()
    }

    /// The budget covers the composition and its bases together: exactly at it
    /// loads, one byte past it is refused where the base is named, read no further.
    #[test]
    fn a_composition_and_its_bases_are_read_within_one_budget() {
        let dir = folder("budget");
        let top = "seam: 1\nextends: [base.yaml]\n";
        let base = "name: padded # ";
        for (pad, expected) in [(0, vec![]), (1, vec!["COMPOSITION_TOO_LARGE"])] {
            let base = format!("{base}{}\n", "x".repeat(100));
            std::fs::write(dir.join("c.yaml"), top).unwrap();
            std::fs::write(dir.join("base.yaml"), &base).unwrap();
            let limit = (top.len() + base.len()) as u64 - pad;
            let loaded = load_file(&dir.join("c.yaml"), &env(), limit).unwrap();
            assert_eq!(codes(&loaded), expected, "a budget {pad} byte(s) short");
            let at = &loaded.diagnostics.first().map(|d| (d.span.line, d.span.column, d.pointer.as_str()));
            assert_eq!(*at, (pad == 1).then_some((2, 11, "/extends/0")));
        }
        // The top file alone: at the limit, and one past it (nothing parsed, nothing quoted).
        for (limit, expected) in [(top.len() as u64, vec!["EXTENDS_NOT_FOUND"]), (top.len() as u64 - 1, vec!["COMPOSITION_TOO_LARGE"])] {
            std::fs::remove_file(dir.join("base.yaml")).ok();
            let loaded = load_file(&dir.join("c.yaml"), &env(), limit).unwrap();
            assert_eq!(codes(&loaded), expected);
        }
        let loaded = load_bytes(&dir.join("c.yaml"), top.as_bytes().to_vec(), &env(), top.len() as u64 - 1);
        assert_eq!((codes(&loaded), loaded.root.is_none()), (vec!["COMPOSITION_TOO_LARGE"], true));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO, a device or a folder is refused at once, without a read (a FIFO
    /// with no writer would block the reader forever, `/dev/zero` never ends).
    #[test]
    fn only_regular_files_are_read() {
        let dir = folder("kinds");
        let fifo = dir.join("fifo.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        std::fs::create_dir(dir.join("folder.yaml")).unwrap();
        let top = "seam: 1\nextends: [fifo.yaml, /dev/zero, folder.yaml]\n";
        std::fs::write(dir.join("c.yaml"), top).unwrap();
        let loaded = load_file(&dir.join("c.yaml"), &env(), DEFAULT_MAX_COMPOSITION_BYTES).unwrap();
        assert_eq!(codes(&loaded), ["EXTENDS_NOT_A_FILE"; 3]);
        let messages: Vec<&str> = loaded.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert!(messages[0].contains("a FIFO") && messages[1].contains("a device") && messages[2].contains("a folder"), "{messages:?}");
        let loaded = load_file(&fifo, &env(), DEFAULT_MAX_COMPOSITION_BYTES).unwrap();
        assert_eq!((codes(&loaded), loaded.root.is_none()), (vec!["COMPOSITION_NOT_A_FILE"], true));
        assert_eq!(loaded.sources.line_text(loaded.diagnostics[0].span.file, 1), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A base that is a scalar or a list is no composition: refused where it is
    /// named, and its text is not kept, so nothing quotes it; the same for the top file.
    #[test]
    fn a_base_is_a_map_and_no_other_file_is_quoted() {
        let dir = folder("mapping");
        std::fs::write(dir.join("scalar.yaml"), "root:x:0:0:root:/root:/bin/bash\n").unwrap();
        std::fs::write(dir.join("list.yaml"), "- a\n").unwrap();
        std::fs::write(dir.join("c.yaml"), "seam: 1\nextends: [scalar.yaml, list.yaml]\n").unwrap();
        let loaded = load_file(&dir.join("c.yaml"), &env(), DEFAULT_MAX_COMPOSITION_BYTES).unwrap();
        assert_eq!(codes(&loaded), ["EXTENDS_NOT_MAPPING"; 2]);
        assert!(loaded.diagnostics[0].message.contains("a string") && loaded.diagnostics[1].message.contains("a list"));
        let quoted: Vec<&str> = loaded.sources.files().map(|(_, f)| &*f.text).collect();
        assert_eq!(quoted, ["seam: 1\nextends: [scalar.yaml, list.yaml]\n", "", ""]);
        let loaded = load_file(&dir.join("scalar.yaml"), &env(), DEFAULT_MAX_COMPOSITION_BYTES).unwrap();
        assert!(loaded.root.is_some(), "the schema says what the top file should be");
        assert_eq!(loaded.sources.files().map(|(_, f)| f.text.len()).collect::<Vec<_>>(), [0], "and quotes none of it");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An empty base (or one of comments only) adds nothing, and takes nothing
    /// away from the bases before it.
    #[test]
    fn an_empty_base_adds_nothing() {
        let dir = folder("empty-base");
        std::fs::write(dir.join("real.yaml"), "name: from-real\n").unwrap();
        std::fs::write(dir.join("empty.yaml"), "# nothing here\n").unwrap();
        std::fs::write(dir.join("c.yaml"), "seam: 1\nextends: [real.yaml, empty.yaml]\n").unwrap();
        let loaded = load_file(&dir.join("c.yaml"), &env(), DEFAULT_MAX_COMPOSITION_BYTES).unwrap();
        assert_eq!(codes(&loaded), Vec::<&str>::new());
        assert_eq!(loaded.root.unwrap().to_json()["name"], "from-real");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A socket is refused as what it is (it cannot even be opened), before any open.
    #[test]
    fn a_socket_is_not_a_file() {
        let dir = folder("socket");
        let _listener = std::os::unix::net::UnixListener::bind(dir.join("sock.yaml")).unwrap();
        std::fs::write(dir.join("c.yaml"), "seam: 1\nextends: [sock.yaml]\n").unwrap();
        let loaded = load_file(&dir.join("c.yaml"), &env(), DEFAULT_MAX_COMPOSITION_BYTES).unwrap();
        assert_eq!(codes(&loaded), ["EXTENDS_NOT_A_FILE"]);
        assert!(loaded.diagnostics[0].message.contains("a socket"), "{}", loaded.diagnostics[0].message);
        let loaded = load_file(&dir.join("sock.yaml"), &env(), DEFAULT_MAX_COMPOSITION_BYTES).unwrap();
        assert_eq!(codes(&loaded), ["COMPOSITION_NOT_A_FILE"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file whose real name is not a YAML file's is located but never
    /// quoted, even when it parses as a map or fails to parse at all.
    #[test]
    fn only_yaml_files_by_their_real_name_are_quoted() {
        let dir = folder("quoted");
        std::fs::write(dir.join("secret.conf"), "password: hunter2\nbroken: [\n").unwrap();
        std::os::unix::fs::symlink(dir.join("secret.conf"), dir.join("linked.yaml")).unwrap();
        std::fs::write(dir.join("c.yaml"), "seam: 1\nextends: [linked.yaml]\n").unwrap();
        for top in ["linked.yaml", "c.yaml"] {
            let loaded = load_file(&dir.join(top), &env(), DEFAULT_MAX_COMPOSITION_BYTES).unwrap();
            assert_eq!(codes(&loaded), ["YAML_SYNTAX"], "{top}");
            let d = &loaded.diagnostics[0];
            assert_eq!(loaded.sources.line_text(d.span.file, d.span.line), None, "{top}: located, not quoted");
            assert!(loaded.sources.files().all(|(_, f)| !f.text.contains("hunter2")));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Loading: read a composition and the files it `extends`, interpolate `${VAR}`,
//! and deep-merge them into one spanned tree.
//!
//! Merge rules: maps merge by key, everything else (lists included) is
//! replaced; a `null` or `!reset` value removes the key; `!reset` on a map or
//! list replaces the inherited value instead of merging into it. Bases apply in
//! the order listed, the extending file last. Each node keeps the file that
//! wrote it, so diagnostics point at the file that wrote the offending value.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diagnostic::{Diagnostic, Sources, Span};
use crate::yaml::{self, Node, Value};

/// Where `${VAR}` values come from; the process environment in the CLI, a map in tests.
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl Env for HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

/// Most files one composition may pull in through `extends`.
pub const MAX_EXTENDS_FILES: usize = 64;

/// A loaded composition: the merged tree (absent when the top file could not be
/// parsed), every file read, and what went wrong on the way.
pub struct Loaded {
    pub root: Option<Node>,
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
}

/// Why a composition could not even be read: the CLI maps this to exit code 2.
#[derive(Debug)]
pub struct ReadError {
    pub path: PathBuf,
    pub error: std::io::Error,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

/// Loads the composition at `path`.
pub fn load_file(path: &Path, env: &dyn Env) -> Result<Loaded, ReadError> {
    let text = std::fs::read(path).map_err(|error| ReadError { path: path.to_owned(), error })?;
    Ok(load_bytes(path, text, env))
}

/// Loads a composition from bytes already read (its `extends` are read from disk, relative to `path`).
pub fn load_bytes(path: &Path, bytes: Vec<u8>, env: &dyn Env) -> Loaded {
    let mut loader = Loader { env, sources: Sources::default(), diagnostics: Vec::new(), chain: Vec::new() };
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let root = loader.load(path, canonical, bytes).map(remove_nulls);
    Loaded { root, sources: loader.sources, diagnostics: loader.diagnostics }
}

struct Loader<'e> {
    env: &'e dyn Env,
    sources: Sources,
    diagnostics: Vec<Diagnostic>,
    /// Canonical paths of the files being loaded, outermost first, for cycle detection.
    chain: Vec<PathBuf>,
}

impl Loader<'_> {
    /// Loads one file; `canonical` is its canonical path, for cycle detection.
    fn load(&mut self, path: &Path, canonical: PathBuf, bytes: Vec<u8>) -> Option<Node> {
        let text: Arc<str> = match String::from_utf8(bytes) {
            Ok(t) => t.into(),
            Err(e) => {
                // Everything before the first bad byte is valid UTF-8: count its lines and characters.
                let valid = std::str::from_utf8(&e.as_bytes()[..e.utf8_error().valid_up_to()]).expect("valid up to here");
                let line = valid.matches('\n').count() as u32 + 1;
                let column = valid.rsplit('\n').next().unwrap_or_default().chars().count() as u32 + 1;
                let lossy: Arc<str> = String::from_utf8_lossy(e.as_bytes()).into();
                let file = self.sources.add(path.to_owned(), lossy);
                self.diagnostics.push(Diagnostic::error("YAML_NOT_UTF8", Span { file, line, column }, "", "the file is not valid UTF-8"));
                return None;
            }
        };
        let text = text.strip_prefix('\u{feff}').map(Arc::from).unwrap_or(text);
        let file = self.sources.add(path.to_owned(), text.clone());
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
        self.chain.push(canonical);
        let merged = self.apply_extends(path, root);
        self.chain.pop();
        Some(merged)
    }

    fn apply_extends(&mut self, path: &Path, mut root: Node) -> Node {
        let Value::Map(map) = &mut root.value else { return root };
        let Some(extends) = map.get("extends") else { return root };
        // A malformed `extends` is reported here and then dropped, so the schema does not report it again.
        let before = self.diagnostics.len();
        let entries: Vec<(usize, String, Span)> = match &extends.node.value {
            Value::Seq(items) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match &item.value {
                        Value::Str(s) => out.push((i, s.clone(), item.span)),
                        _ => self.diagnostics.push(Diagnostic::error(
                            "EXTENDS_INVALID",
                            item.span,
                            format!("/extends/{i}"),
                            "an `extends` entry is a path to a composition file",
                        )),
                    }
                }
                out
            }
            Value::Null => Vec::new(),
            _ => {
                self.diagnostics.push(
                    Diagnostic::error("EXTENDS_INVALID", extends.node.span, "/extends", "`extends` is a list of paths")
                        .with_help("write `extends: [base.yaml]`"),
                );
                map.shift_remove("extends");
                return root;
            }
        };
        let folder = path.parent().unwrap_or(Path::new("."));
        let mut merged: Option<Node> = None;
        if self.diagnostics.len() > before {
            map.shift_remove("extends");
        }
        for (i, entry, span) in entries {
            let pointer = format!("/extends/{i}");
            let target = folder.join(&entry);
            let canonical = target.canonicalize().unwrap_or_else(|_| target.clone());
            if let Some(start) = self.chain.iter().position(|p| *p == canonical) {
                let mut names: Vec<String> = self.chain[start..].iter().map(|p| display_name(p)).collect();
                names.push(display_name(&canonical));
                self.diagnostics.push(Diagnostic::error(
                    "EXTENDS_CYCLE",
                    span,
                    pointer,
                    format!("`extends` forms a cycle: {}", names.join(" → ")),
                ));
                continue;
            }
            // The top file is not counted: it may pull in MAX_EXTENDS_FILES others.
            if self.sources.files().count() > MAX_EXTENDS_FILES {
                self.diagnostics.push(Diagnostic::error(
                    "EXTENDS_LIMIT",
                    span,
                    pointer,
                    format!("a composition may pull in at most {MAX_EXTENDS_FILES} files through `extends`"),
                ));
                break;
            }
            let bytes = match std::fs::read(&target) {
                Ok(b) => b,
                Err(e) => {
                    self.diagnostics.push(Diagnostic::error(
                        "EXTENDS_NOT_FOUND",
                        span,
                        pointer,
                        format!("cannot read `{entry}` ({}): {e}", target.display()),
                    ));
                    continue;
                }
            };
            let Some(mut base) = self.load(&target, canonical, bytes) else { continue };
            if let Value::Map(m) = &mut base.value {
                m.shift_remove("extends");
            }
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

/// Expands `${VAR}`, `${VAR:-default}`, `${VAR:?message}` and `$$`.
/// `Ok(None)` when the text has nothing to expand.
pub fn interpolate(text: &str, env: &dyn Env) -> Result<Option<String>, (&'static str, String)> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            changed = true;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(("ENV_SYNTAX", format!("unclosed `${{` in `{text}`")));
            };
            let inner = &body[..end];
            let (name, op) = match inner.find(':') {
                Some(c) => (&inner[..c], Some(&inner[c + 1..])),
                None => (inner, None),
            };
            if !is_env_name(name) {
                return Err(("ENV_SYNTAX", format!("`${{{inner}}}`: `{name}` is not an environment variable name")));
            }
            if is_secret_name(name) {
                return Err((
                    "SECRET_INTERPOLATED",
                    format!(
                        "`${{{name}}}` would copy a secret into the composition, where it is kept and shown; secrets are named, not interpolated"
                    ),
                ));
            }
            let value = env.var(name).filter(|v| !v.is_empty());
            match (value, op) {
                (Some(v), _) => out.push_str(&v),
                (None, None) => {
                    return Err(("ENV_UNSET", format!("environment variable `{name}` is not set; set it or write `${{{name}:-default}}`")));
                }
                (None, Some(op)) => {
                    if let Some(default) = op.strip_prefix('-') {
                        if default.contains("${") {
                            return Err(("ENV_SYNTAX", format!("`${{{inner}}}`: a default cannot hold another `${{…}}`")));
                        }
                        out.push_str(default);
                    } else if let Some(message) = op.strip_prefix('?') {
                        let message = if message.is_empty() { "is required" } else { message };
                        return Err(("ENV_REQUIRED", format!("environment variable `{name}`: {message}")));
                    } else {
                        return Err(("ENV_SYNTAX", format!("`${{{inner}}}`: after `:` comes `-default` or `?message`")));
                    }
                }
            }
            rest = &body[end + 1..];
            changed = true;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(changed.then_some(out))
}

/// A variable whose name says it holds a secret: one of its `_`-separated words
/// is KEY, TOKEN, SECRET, PASSWORD, … (`GITHUB_TOKEN`, `OPENAI_API_KEY`; not `TOKENIZER_PATH`).
pub fn is_secret_name(name: &str) -> bool {
    const WORDS: [&str; 8] = ["KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS", "PAT"];
    name.split('_').any(|w| WORDS.iter().any(|s| w.eq_ignore_ascii_case(s)))
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(interpolate("${NOPE:?set it}", &e).unwrap_err(), ("ENV_REQUIRED", "environment variable `NOPE`: set it".into()));
        assert_eq!(interpolate("${HOME", &e).unwrap_err().0, "ENV_SYNTAX");
        assert_eq!(interpolate("${1X}", &e).unwrap_err().0, "ENV_SYNTAX");
        assert_eq!(interpolate("--token=${GITHUB_TOKEN}", &e).unwrap_err().0, "SECRET_INTERPOLATED");
        assert_eq!(interpolate("${TOKENIZER_PATH:-x}", &e), Ok(Some("x".into())));
    }
}

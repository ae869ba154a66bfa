//! Diagnostics: every problem seam finds in a composition, with its place.
//!
//! A diagnostic always carries a stable code (see [`crate::codes`]), the file
//! and the 1-based line and column (in characters) of the value that caused
//! it, and the JSON pointer of that value in the merged composition.

use crate::codes::{Code, Severity};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The most characters of a diagnostic's message, help or pointer kept: a message may
/// quote a value of the file (an unknown key, say), and a file may hold
/// anything; what `/status`, the status page and the log show stays small.
pub const MAX_MESSAGE_CHARS: usize = 500;

/// A position in one source file: 1-based line and column, column counted in characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub file: FileId,
    pub line: u32,
    pub column: u32,
}

/// Index of a file in a [`Sources`] table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u32);

/// The files a load read, kept so that diagnostics can quote their lines.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    files: Vec<SourceFile>,
}

#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: Arc<str>,
    /// Where each line starts, found at the first quote: a file with thousands of
    /// diagnostics would otherwise be scanned from its start for each of them.
    line_starts: OnceLock<Vec<usize>>,
}

impl Sources {
    pub fn add(&mut self, path: PathBuf, text: Arc<str>) -> FileId {
        self.files.push(SourceFile { path, text, line_starts: OnceLock::new() });
        FileId((self.files.len() - 1) as u32)
    }

    /// Forgets a file's text (it is not a composition, so no diagnostic may quote it); its path stays.
    pub fn withhold(&mut self, id: FileId) {
        self.files[id.0 as usize] = SourceFile { path: self.path(id).to_owned(), text: "".into(), line_starts: OnceLock::new() };
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn path(&self, id: FileId) -> &Path {
        &self.get(id).path
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }

    /// The text of the given 1-based line, without its line break.
    pub fn line_text(&self, id: FileId, line: u32) -> Option<&str> {
        let file = self.get(id);
        let text = &*file.text;
        // An empty text (an empty file, or one withheld) has no line worth quoting.
        if text.is_empty() {
            return None;
        }
        let starts = file.line_starts.get_or_init(|| std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect());
        let index = line.checked_sub(1)? as usize;
        let start = *starts.get(index)?;
        let end = starts.get(index + 1).map_or(text.len(), |next| next - 1);
        let line = &text[start..end];
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// `text` cut to `max` characters, `…` marking a cut: how seam quotes what may be long
/// (a message, an echoed id).
pub fn cut_marked(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]).into(),
        None => text.into(),
    }
}

/// `text` cut to [`MAX_MESSAGE_CHARS`], an ellipsis marking the cut, with no secret
/// it quotes shown (`crate::redact::text`).
fn capped(text: String) -> String {
    // Only what is kept is looked at for secrets, and a little past it, so that one cut at the edge is still seen whole.
    let looked_at = cut_marked(&text, MAX_MESSAGE_CHARS + 256);
    cut_marked(&crate::redact::text(&looked_at), MAX_MESSAGE_CHARS).into_owned()
}

/// One problem found in a composition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Its stable code (documented in `docs/codes.md`), whose table row gives its
    /// severity: a code is emitted at that severity and no other.
    pub code: Code,
    pub message: String,
    /// JSON pointer of the offending value in the merged composition ("" = the whole document).
    pub pointer: String,
    pub span: Span,
    pub help: Option<String>,
}

impl Diagnostic {
    /// A finding of `code`, at the severity its table row gives.
    pub fn new(code: Code, span: Span, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        // The pointer is capped too: it names keys of the file, and a key may be megabytes long.
        Diagnostic { code, message: capped(message.into()), pointer: capped(pointer.into()), span, help: None }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(capped(help.into()));
        self
    }

    pub fn severity(&self) -> Severity {
        self.code.severity
    }

    pub fn is_error(&self) -> bool {
        self.severity() == Severity::Error
    }

    /// Sort key: file, line, column, then severity and code, so output is stable.
    fn sort_key(&self) -> (FileId, u32, u32, Severity, &'static str, &str, &str) {
        (self.span.file, self.span.line, self.span.column, self.severity(), self.code.code, &self.pointer, &self.message)
    }
}

/// Sorts diagnostics by place and removes exact duplicates.
pub fn sort_diagnostics(diagnostics: &mut Vec<Diagnostic>) {
    diagnostics.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    diagnostics.dedup();
}

/// Escapes one JSON pointer segment (RFC 6901).
pub fn escape_pointer_segment(segment: &str) -> std::borrow::Cow<'_, str> {
    if segment.contains(['~', '/']) { segment.replace('~', "~0").replace('/', "~1").into() } else { segment.into() }
}

/// Builds a JSON pointer from segments.
pub fn pointer<'a>(segments: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for segment in segments {
        out.push('/');
        out.push_str(&escape_pointer_segment(segment));
    }
    out
}

/// Splits a JSON pointer into unescaped segments.
pub fn pointer_segments(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    let unescape = |s: &str| if s.contains('~') { s.replace("~1", "/").replace("~0", "~") } else { s.to_owned() };
    pointer.split('/').skip(1).map(unescape).collect()
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]: {}", self.severity().as_str(), self.code, self.message)
    }
}

//! Diagnostics as people and CI read them: `human` (path:line:col, the source
//! line and a caret), `github` (workflow commands) and `json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use crate::Checked;
use crate::codes::Severity;
use crate::diagnostic::{Diagnostic, Sources};

/// The most characters of a source line quoted under a diagnostic; a longer
/// line is quoted around the column the diagnostic points at.
pub const EXCERPT_CHARS: usize = 120;

/// One diagnostic in the human form. Control characters from the file (an
/// escape sequence in a key, say) are shown as their Unicode pictures (`␛`),
/// never sent to the terminal as they are.
pub fn human(d: &Diagnostic, sources: &Sources) -> String {
    let path = sources.path(d.span.file).display().to_string();
    let mut out =
        format!("{}:{}:{}: {}[{}]: {}\n", visible(&path), d.span.line, d.span.column, d.severity().as_str(), d.code, visible(&d.message));
    if let Some(line) = sources.line_text(d.span.file, d.span.line) {
        let number = d.span.line.to_string();
        let gutter = " ".repeat(number.len());
        let (line, column) = quotable(d, line);
        let (excerpt, caret) = excerpt(&line, column);
        // Keep tabs so the caret lines up under the same characters.
        let pad: String = excerpt.chars().take(caret).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
        let _ = writeln!(out, "{gutter} |\n{number} | {excerpt}\n{gutter} | {pad}^");
        if let Some(help) = &d.help {
            let _ = writeln!(out, "{gutter} = help: {}", visible(help));
        }
    } else if let Some(help) = &d.help {
        let _ = writeln!(out, "  = help: {}", visible(help));
    }
    out
}

/// The source line a diagnostic quotes, and its column (0-based, in characters) there,
/// with no secret in it (`crate::redact::line`). A diagnostic about a secret written
/// into the file quotes the line only up to the key it points at: whatever follows
/// is the secret, whether or not it looks like one.
fn quotable(d: &Diagnostic, line: &str) -> (String, usize) {
    // Only what can be quoted is looked at: a window around the column, wider than the
    // excerpt so that a secret at the excerpt's edge is still seen whole.
    let (line, column) = around(line, d.span.column.saturating_sub(1) as usize, 8 * EXCERPT_CHARS);
    if d.code == crate::codes::SECRET_INLINE {
        let at = line.char_indices().nth(column).map_or(line.len(), |(at, _)| at);
        let rest = &line[at..];
        // Pointed at a key (`bearer_token: …`): the key is kept; at a value (a URL), nothing from it is.
        let key = rest.find(':').filter(|&colon| {
            rest[colon + 1..].chars().next().is_none_or(char::is_whitespace) && !rest[..colon].contains(char::is_whitespace)
        });
        let kept = match key {
            Some(colon) => format!("{} {}", &line[..at + colon + 1], crate::redact::MASK),
            // A URL's secret is masked where it is, the rest of the URL shown (`crate::redact::line` does both).
            None if crate::redact::secret_in_url(rest.trim().trim_matches(['"', '\''])).is_some() => line.to_owned(),
            None => format!("{}{}", &line[..at], crate::redact::MASK),
        };
        return crate::redact::line(&kept, column);
    }
    crate::redact::line(line, column)
}

/// The part of `line` within `reach` characters of the character at `column`, and where
/// that character is in it.
fn around(line: &str, column: usize, reach: usize) -> (&str, usize) {
    let start = column.saturating_sub(reach);
    let byte = |n: usize| line.char_indices().nth(n).map_or(line.len(), |(at, _)| at);
    (&line[byte(start)..byte(column.saturating_add(reach))], column - start)
}

/// At most [`EXCERPT_CHARS`] of `line` around the character at `column`
/// (0-based), with `…` where it is cut, control characters made visible; and
/// the caret's column within the excerpt.
fn excerpt(line: &str, column: usize) -> (String, usize) {
    let length = line.chars().count();
    let (start, end) = if length <= EXCERPT_CHARS {
        (0, length)
    } else {
        let start = column.saturating_sub(EXCERPT_CHARS / 2).min(length - EXCERPT_CHARS);
        (start, start + EXCERPT_CHARS)
    };
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(line.chars().skip(start).take(end - start).map(|c| if c == '\t' { c } else { picture(c) }));
    if end < length {
        out.push('…');
    }
    (out, column.clamp(start, end) - start + usize::from(start > 0))
}

/// `text` with every control character as its Unicode picture.
fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().all(|c| picture(c) == c) { text.into() } else { text.chars().map(picture).collect::<String>().into() }
}

/// A control character's picture (`␛` for ESC, `␡` for DEL, `�` for the C1
/// controls, which have none); any other character itself.
fn picture(c: char) -> char {
    match c {
        '\0'..='\x1f' => char::from_u32(0x2400 + c as u32).expect("the control pictures block"),
        '\x7f' => '\u{2421}',
        '\u{80}'..='\u{9f}' => '\u{fffd}',
        _ => c,
    }
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One diagnostic as a GitHub Actions workflow command.
pub fn github(d: &Diagnostic, sources: &Sources) -> String {
    let level = match d.severity() {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let message = match &d.help {
        Some(h) => format!("{} ({h})", d.message),
        None => d.message.clone(),
    };
    format!(
        "::{level} file={},line={},col={},title={}::{}\n",
        escape_property(&sources.path(d.span.file).display().to_string()),
        d.span.line,
        d.span.column,
        d.code,
        escape_data(&message)
    )
}

/// One file of the JSON report: valid, its diagnostics, and their keys (for dedup).
type FileEntry = (bool, Vec<Json>, std::collections::HashSet<(String, &'static str, u32, u32, String)>);

/// The `--format json` report over several validated compositions. Each
/// diagnostic is listed under the file it points into (a base a composition
/// `extends` gets an entry of its own when it has diagnostics), so its line and
/// column always refer to the entry's `path`.
pub fn json_report(checked: &[(PathBuf, Checked)], deny_warnings: bool) -> Json {
    let mut order: Vec<PathBuf> = Vec::new();
    let mut entries: BTreeMap<PathBuf, FileEntry> = BTreeMap::new();
    for (path, c) in checked {
        if !entries.contains_key(path) {
            order.push(path.clone());
        }
        let entry = entries.entry(path.clone()).or_insert_with(|| (true, Vec::new(), Default::default()));
        entry.0 &= c.is_valid(deny_warnings);
        for d in &c.diagnostics {
            let file = c.sources.path(d.span.file).to_owned();
            if !entries.contains_key(&file) {
                order.push(file.clone());
            }
            let entry = entries.entry(file).or_insert_with(|| (true, Vec::new(), Default::default()));
            if d.is_error() || (deny_warnings && d.severity() == Severity::Warning) {
                entry.0 = false;
            }
            let key = (d.pointer.clone(), d.code.code, d.span.line, d.span.column, d.message.clone());
            if !entry.2.insert(key) {
                continue;
            }
            entry.1.push(json!({
                "severity": d.severity().as_str(),
                "code": d.code,
                "message": d.message,
                "pointer": d.pointer,
                "line": d.span.line,
                "column": d.span.column,
            }));
        }
    }
    let files: Vec<Json> = order
        .iter()
        .map(|p| {
            let (valid, diagnostics, _) = &entries[p];
            json!({ "path": display(p), "valid": valid, "diagnostics": diagnostics })
        })
        .collect();
    json!({ "files": files })
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// The closing line of the human report.
pub fn summary(files: usize, errors: usize, warnings: usize) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    if errors == 0 && warnings == 0 {
        format!("{} valid\n", plural(files, "composition"))
    } else {
        format!("{}, {} in {}\n", plural(errors, "error"), plural(warnings, "warning"), plural(files, "composition"))
    }
}

/// Escapes text for XML or HTML content and attribute values (the five
/// predefined entities; `&apos;` is one in HTML5 too). Used by the framing of
/// a loaded skill and by the plan's SVG drawing.
pub fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Span;

    fn rendered(text: &str, line: u32, column: u32, message: &str) -> String {
        let mut sources = Sources::default();
        let file = sources.add("c.yaml".into(), text.into());
        human(&Diagnostic::new(crate::codes::SCHEMA_TYPE, Span { file, line, column }, "/x", message), &sources)
    }

    /// What the file holds reaches the terminal as pictures: no escape
    /// sequence, bell or backspace from a key or value is sent as it is.
    #[test]
    fn control_characters_are_shown_not_sent() {
        let out = rendered("k\x1b[2J: \x07v\x7f\u{9b}\n", 1, 2, "unknown key `k\x1b[2J`");
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert!(out.contains("unknown key `k␛[2J`"), "{out}");
        assert!(out.contains("1 | k␛[2J: ␇v␡\u{fffd}"), "{out}");
    }

    /// A line up to `EXCERPT_CHARS` is quoted whole; a longer one around the
    /// column, cut with `…`, the caret still under the character it points at.
    #[test]
    fn a_long_line_is_quoted_around_its_column() {
        let whole = "a".repeat(EXCERPT_CHARS);
        let out = rendered(&whole, 1, 7, "m");
        assert!(out.contains(&format!("1 | {whole}\n")), "at the limit the line is whole");
        let out = rendered(&format!("{whole}b"), 1, 7, "m");
        assert!(out.contains(&format!("1 | {whole}…\n")), "one past it, cut: {out}");
        let long = format!("{}X{}", "a".repeat(5000), "b".repeat(5000));
        let out = rendered(&long, 1, 5001, "m");
        let lines: Vec<&str> = out.lines().collect();
        let quoted = lines[2].strip_prefix("1 | ").unwrap();
        assert_eq!(quoted.chars().count(), EXCERPT_CHARS + 2, "the window and two ellipses: {quoted}");
        assert!(quoted.starts_with('…') && quoted.ends_with('…'));
        let caret = lines[3].strip_prefix("  | ").unwrap().chars().count() - 1;
        assert_eq!(quoted.chars().nth(caret), Some('X'), "{out}");
        // Near the end of a long line, the window ends with the line.
        let out = rendered(&long, 1, 10_001, "m");
        let quoted = out.lines().nth(2).unwrap().strip_prefix("1 | ").unwrap();
        assert!(quoted.starts_with('…') && quoted.ends_with('b'), "{quoted}");
    }

    /// A message quoting a huge value is cut; lines are found by index, whatever the line.
    #[test]
    fn messages_are_capped_and_lines_indexed() {
        let at_limit = "m".repeat(crate::diagnostic::MAX_MESSAGE_CHARS);
        assert!(rendered("a", 1, 1, &at_limit).contains(&format!(": {at_limit}\n")), "at the limit, whole");
        let out = rendered("a\r\nb\nc", 3, 1, &"m".repeat(crate::diagnostic::MAX_MESSAGE_CHARS + 1));
        let message = out.lines().next().unwrap().rsplit(": ").next().unwrap();
        assert_eq!(message.chars().count(), crate::diagnostic::MAX_MESSAGE_CHARS + 1);
        let mut sources = Sources::default();
        let file = sources.add("c.yaml".into(), "a\r\nb\nc".into());
        let lines: Vec<Option<&str>> = (0..5).map(|l| sources.line_text(file, l)).collect();
        assert_eq!(lines, [None, Some("a"), Some("b"), Some("c"), None]);
    }
}

//! Diagnostics as people and CI read them: `human` (path:line:col, the source
//! line and a caret), `github` (workflow commands) and `json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use crate::Checked;
use crate::diagnostic::{Diagnostic, Severity, Sources};

/// One diagnostic in the human form.
pub fn human(d: &Diagnostic, sources: &Sources) -> String {
    let path = sources.path(d.span.file).display();
    let mut out = format!("{path}:{}:{}: {}[{}]: {}\n", d.span.line, d.span.column, d.severity.as_str(), d.code, d.message);
    if let Some(line) = sources.line_text(d.span.file, d.span.line) {
        let number = d.span.line.to_string();
        let gutter = " ".repeat(number.len());
        // Keep tabs so the caret lines up under the same characters.
        let pad: String = line.chars().take(d.span.column.saturating_sub(1) as usize).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
        let _ = writeln!(out, "{gutter} |\n{number} | {line}\n{gutter} | {pad}^");
        if let Some(help) = &d.help {
            let _ = writeln!(out, "{gutter} = help: {help}");
        }
    } else if let Some(help) = &d.help {
        let _ = writeln!(out, "  = help: {help}");
    }
    out
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One diagnostic as a GitHub Actions workflow command.
pub fn github(d: &Diagnostic, sources: &Sources) -> String {
    let level = match d.severity {
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
            if d.is_error() || (deny_warnings && d.severity == Severity::Warning) {
                entry.0 = false;
            }
            let key = (d.pointer.clone(), d.code, d.span.line, d.span.column, d.message.clone());
            if !entry.2.insert(key) {
                continue;
            }
            entry.1.push(json!({
                "severity": d.severity.as_str(),
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
/// predefined entities; `&apos;` is one in HTML5 too). Used by the status page
/// and by the framing of a loaded skill.
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

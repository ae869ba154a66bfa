//! Masking and secret detection: what of a config could be a secret, and its text with those values masked.

use std::ops::Range;

use seam_engine::redact::is_secret_name;

use super::References;
use super::references::reference_only;
use super::tree::{Kind, Val};

/// `text` with the bytes of every range in `masks` (values not copied) as `*`, one per
/// character, so that lines and columns stay where they were.
pub(super) fn mask(text: &str, masks: &mut [Range<usize>]) -> String {
    masks.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in masks.iter() {
        let (start, end) = (range.start.max(at), range.end.min(text.len()));
        if start >= end || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
            continue;
        }
        out.push_str(&text[at..start]);
        out.extend(text[start..end].chars().map(|c| if c == '\n' || c == '\r' { c } else { '*' }));
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// Whether a key (a flag without its dashes, a variable, a header) names a secret; one that names
/// where a secret is (`*_env`, `*-file`, `*_path`) holds none.
pub(super) fn secret_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase().replace('-', "_");
    if lower.ends_with("_env") || lower.ends_with("_file") || lower.ends_with("_path") {
        return false;
    }
    matches!(lower.as_str(), "authorization" | "proxy_authorization") || is_secret_name(&lower)
}

/// Whether a header's name says its value is a secret: `Authorization`, `X-Api-Key`, any with a token, key, secret in it.
pub(super) fn secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    secret_key(name)
        || ["auth", "token", "key", "secret", "password", "passwd", "credential", "cookie", "session"].iter().any(|w| lower.contains(w))
}

/// Where, in an argument, a value given under a secret's name starts: `--api-key=X`, `NAME=X` (docker's `-e`),
/// `X-Api-Key: X` (mcp-remote's `--header`); none where there is none, or the value only names a variable.
pub(super) fn keyed_secret(references: References, arg: &str) -> Option<usize> {
    let name = |key: &str| !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    // `KEY=value`, each `=` in turn (`--env=TOKEN=value`).
    let mut start = 0;
    for (at, _) in arg.match_indices('=') {
        let key = arg[start..at].trim_start_matches('-');
        let value = &arg[at + 1..];
        if name(key) && secret_key(key) && !value.is_empty() && !reference_only(references, value) {
            return Some(at + 1);
        }
        start = at + 1;
    }
    // `Header: value`, after a flag's `=` (`--header=X-Api-Key: value`).
    let colon = arg.find(':')?;
    let header = arg[..colon].rsplit('=').next().unwrap_or_default().trim();
    let rest = &arg[colon + 1..];
    let value = rest.trim_start();
    let value_at = colon + 1 + (rest.len() - value.len());
    (name(header) && secret_header(header) && !value.is_empty() && !value.starts_with("//") && !reference_only(references, value))
        .then_some(value_at)
}

/// Whether a text (a reference's default) looks like a secret: a token, a URL's password, a value under a secret's name.
pub(super) fn looks_secret(references: References, text: &str) -> bool {
    seam_engine::redact::text(text) != text || keyed_secret(references, text).is_some()
}

/// The keys under which every value is masked in what diagnostics quote, whatever else is wrong.
pub(super) const MASKED_UNDER: [&str; 6] = ["env", "headers", "http_headers", "bearer_token", "args", "url"];

/// The bytes of each value of `value` that could be a secret: every scalar under [`MASKED_UNDER`] or a
/// secret-named key, at any depth, and any string that shows a secret.
pub(super) fn possible_secrets(value: &Val, under: bool, masks: &mut Vec<Range<usize>>) {
    match &value.kind {
        Kind::Str(s) if under || seam_engine::redact::text(s) != s.as_str() => masks.push(value.inner()),
        Kind::Num(_) if under => masks.push(value.at.clone()),
        Kind::Arr(items) => items.iter().for_each(|v| possible_secrets(v, under, masks)),
        Kind::Obj(members) => {
            for m in members {
                let here = under || MASKED_UNDER.contains(&m.key.as_str()) || secret_key(&m.key);
                possible_secrets(&m.value, here, masks);
            }
        }
        _ => {}
    }
}

/// For a config that could not be read: the bytes of every string literal (JSON's or TOML's, keys
/// included), and on the line of the error, all from the error on but whitespace and punctuation.
pub(super) fn unread_values(text: &str, error: usize) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let line_end = |from: usize| bytes[from..].iter().position(|b| *b == b'\n').map_or(bytes.len(), |n| from + n);
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.starts_with(br#"""""#) || rest.starts_with(b"'''") {
            // A multi-line string (TOML's), to its closing quotes.
            let close = if rest[0] == b'"' { r#"""""# } else { "'''" };
            let end = text[at + 3..].find(close).map_or(bytes.len(), |n| at + 3 + n);
            ranges.push(at + 3..end);
            at = end + 3;
        } else if rest[0] == b'"' || rest[0] == b'\'' {
            // A one-line string, to its quote or the line's end.
            let quote = rest[0];
            let mut end = at + 1;
            while end < bytes.len() && bytes[end] != quote && bytes[end] != b'\n' {
                end += if quote == b'"' && bytes[end] == b'\\' { 2 } else { 1 };
            }
            let end = end.min(bytes.len());
            ranges.push(at + 1..end);
            at = end + 1;
        } else if rest.starts_with(b"//") || rest[0] == b'#' {
            at = line_end(at);
        } else if rest.starts_with(b"/*") {
            at = text[at + 2..].find("*/").map_or(bytes.len(), |n| at + 4 + n);
        } else {
            at += 1;
        }
    }
    let error = error.min(bytes.len());
    for (i, b) in bytes[error..line_end(error)].iter().enumerate() {
        if !b.is_ascii_whitespace() && !b"{}[],:=\"'".contains(b) {
            ranges.push(error + i..error + i + 1);
        }
    }
    // Whole characters only: a range is widened to the characters it touches.
    for r in &mut ranges {
        r.end = r.end.min(bytes.len());
        while r.start > 0 && !text.is_char_boundary(r.start) {
            r.start -= 1;
        }
        while !text.is_char_boundary(r.end) {
            r.end += 1;
        }
    }
    ranges
}

//! The `${…}` references a format expands in its values, and a value as the composition writes it.

use std::fmt::Write as _;

use seam_engine::codes::{IMPORT_SECRET_NOT_COPIED, IMPORT_UNSUPPORTED};
use seam_engine::redact::is_secret_name;

use super::secrets::looks_secret;
use super::tree::Val;
use super::{Cx, Mount, References};

/// What `${…}` in a value is.
#[derive(Debug, PartialEq)]
pub(super) enum Piece<'a> {
    Text(&'a str),
    Env {
        name: &'a str,
        default: Option<&'a str>,
        raw: &'a str,
    },
    Input {
        id: &'a str,
        raw: &'a str,
    },
    /// VS Code's predefined variables (`workspaceFolder`, `userHome`).
    Editor {
        name: &'a str,
        raw: &'a str,
    },
    Unknown(&'a str),
}

pub(super) fn env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` cut into literal text and the `${…}` references the format expands.
pub(super) fn pieces(references: References, text: &str) -> Vec<Piece<'_>> {
    if references == References::None {
        return vec![Piece::Text(text)];
    }
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else { break };
        if start > 0 {
            out.push(Piece::Text(&rest[..start]));
        }
        let raw = &rest[start..start + len + 1];
        let inner = &raw[2..raw.len() - 1];
        out.push(match references {
            References::Shell => {
                let (name, default) = match inner.split_once(":-") {
                    Some((name, default)) => (name, Some(default)),
                    None => (inner, None),
                };
                if env_name(name) { Piece::Env { name, default, raw } } else { Piece::Unknown(raw) }
            }
            _ => match inner.split_once(':') {
                Some(("env", name)) if env_name(name) => Piece::Env { name, default: None, raw },
                Some(("input", id)) => Piece::Input { id, raw },
                None if matches!(inner, "workspaceFolder" | "workspaceFolderBasename" | "userHome" | "pathSeparator") => {
                    Piece::Editor { name: inner, raw }
                }
                _ => Piece::Unknown(raw),
            },
        });
        rest = &rest[start + len + 1..];
    }
    if !rest.is_empty() || out.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// Literal text as a composition writes it: `$` is `$$`.
pub(super) fn escape(text: &str) -> String {
    text.replace('$', "$$")
}

/// A string of the config (a command, an argument, a URL, a folder) as the composition
/// writes it: references mapped where seam has them, the rest literal, and reported.
pub(super) fn text(cx: &mut Cx<'_>, mount: &mut Mount, value: &Val, pointer: &str, what: &str) -> String {
    let written = value.as_str().unwrap_or_default();
    let mut out = String::new();
    for piece in pieces(cx.format.references(), written) {
        match piece {
            Piece::Text(t) => out.push_str(&escape(t)),
            Piece::Env { name, default, .. } if is_secret_name(name) => {
                // The default is never written: it would be the secret.
                let reference = format!("${{{name}}}");
                out.push_str(&escape(&reference));
                mount.pass(name);
                let default = if default.is_some_and(|d| !d.is_empty()) {
                    cx.secret(value);
                    " (its default, not copied)"
                } else {
                    ""
                };
                let message = format!(
                    "{what} reads `{name}` through `{reference}`{default}, and seam does not copy a secret into a composition: it is written as that text, and `{name}` is passed through (`env_passthrough`); change the server to read `{name}` from its environment"
                );
                cx.note(mount, IMPORT_UNSUPPORTED, value.at.start, pointer, message);
            }
            Piece::Env { name, default: Some(default), .. } if looks_secret(cx.format.references(), default) => {
                cx.secret(value);
                let _ = write!(out, "${{{name}:-}}");
                let message = format!(
                    "{what} reads `{name}` with a default that looks like a secret, which seam does not copy: it reads `{name}` with no default; set `{name}` in seam's environment"
                );
                cx.note(mount, IMPORT_SECRET_NOT_COPIED, value.at.start, pointer, message);
            }
            Piece::Env { name, default, .. } => {
                let _ = write!(out, "${{{name}:-{}}}", default.unwrap_or_default());
            }
            Piece::Input { id, raw } => {
                out.push_str(&escape(raw));
                let message = format!(
                    "{what} uses VS Code's input `{id}`, which seam does not ask for: it is written as the text `{raw}`; change it to the value"
                );
                cx.note(mount, IMPORT_UNSUPPORTED, value.at.start, pointer, message);
            }
            Piece::Editor { name, raw } => match name {
                "workspaceFolder" => out.push_str(&escape(&cx.workspace.display().to_string())),
                "workspaceFolderBasename" => {
                    out.push_str(&escape(&cx.workspace.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()));
                }
                "userHome" => out.push_str("${HOME}"),
                "pathSeparator" => out.push('/'),
                _ => out.push_str(&escape(raw)),
            },
            Piece::Unknown(raw) => {
                out.push_str(&escape(raw));
                let message = format!("{what} holds `{raw}`, which seam does not expand: it is written as that text");
                cx.note(mount, IMPORT_UNSUPPORTED, value.at.start, pointer, message);
            }
        }
    }
    out
}

/// The only reference a value is, if it is one and nothing else.
pub(super) fn whole_reference<'a>(references: References, value: &'a Val) -> Option<Piece<'a>> {
    let mut pieces = pieces(references, value.as_str()?);
    match pieces.as_slice() {
        [Piece::Env { default: None, .. } | Piece::Input { .. }] => pieces.pop(),
        _ => None,
    }
}

/// Whether `value` only names a variable or an input (after an authorization scheme, `Bearer ${TOKEN}`):
/// what it holds is not written in the config.
pub(super) fn reference_only(references: References, value: &str) -> bool {
    let value = value.trim();
    let value = ["bearer ", "basic "]
        .iter()
        .find_map(|scheme| value.get(..scheme.len()).filter(|s| s.eq_ignore_ascii_case(scheme)).map(|_| value[scheme.len()..].trim()))
        .unwrap_or(value);
    matches!(pieces(references, value).as_slice(), [Piece::Env { default: None, .. } | Piece::Input { .. }])
}

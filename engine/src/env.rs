//! `${…}` in a composition's values: where variables come from ([`Env`]) and how a
//! value is expanded ([`interpolate`]). Beside the YAML reader, which expands each
//! scalar as it reads it; it needs nothing of loading.

use std::collections::HashMap;

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

/// Expands `${VAR}`, `${VAR:-default}`, `${VAR:?message}` and `$$`.
/// `Ok(None)` when the text has nothing to expand.
pub fn interpolate(text: &str, env: &dyn Env) -> Result<Option<String>, (crate::codes::Code, String)> {
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
                return Err((crate::codes::ENV_SYNTAX, format!("unclosed `${{` in `{text}`")));
            };
            let inner = &body[..end];
            let (name, op) = match inner.find(':') {
                Some(c) => (&inner[..c], Some(&inner[c + 1..])),
                None => (inner, None),
            };
            if !is_env_name(name) {
                return Err((crate::codes::ENV_SYNTAX, format!("`${{{inner}}}`: `{name}` is not an environment variable name")));
            }
            if crate::redact::is_secret_name(name) {
                return Err((
                    crate::codes::SECRET_INTERPOLATED,
                    format!(
                        "`${{{name}}}` would copy a secret into the composition, where it is kept and shown; secrets are named, not interpolated"
                    ),
                ));
            }
            let value = env.var(name).filter(|v| !v.is_empty());
            match (value, op) {
                (Some(v), _) => out.push_str(&v),
                (None, None) => {
                    return Err((
                        crate::codes::ENV_UNSET,
                        format!("environment variable `{name}` is not set; set it or write `${{{name}:-default}}`"),
                    ));
                }
                (None, Some(op)) => {
                    if let Some(default) = op.strip_prefix('-') {
                        if default.contains("${") {
                            return Err((crate::codes::ENV_SYNTAX, format!("`${{{inner}}}`: a default cannot hold another `${{…}}`")));
                        }
                        out.push_str(default);
                    } else if let Some(message) = op.strip_prefix('?') {
                        let message = if message.is_empty() { "is required" } else { message };
                        return Err((crate::codes::ENV_REQUIRED, format!("environment variable `{name}`: {message}")));
                    } else {
                        return Err((crate::codes::ENV_SYNTAX, format!("`${{{inner}}}`: after `:` comes `-default` or `?message`")));
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

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

//! A server's transport as a mount: a stdio command, an HTTP endpoint, their env and headers, and Codex's settings.

use std::path::Path;

use seam_engine::codes::{IMPORT_INVALID, IMPORT_SECRET_NOT_COPIED, IMPORT_UNSUPPORTED, IMPORT_WINDOWS};
use seam_engine::diagnostic::escape_pointer_segment;
use seam_engine::redact::is_secret_name;

use super::references::{Piece, env_name, escape, pieces, reference_only, text, whole_reference};
use super::secrets::{keyed_secret, looks_secret, secret_key};
use super::servers::{boolean, string, strings, written_twice};
use super::tree::{Kind, Member, Val};
use super::{Cx, Mount, absolute};

pub(super) type Field<'f> = dyn Fn(&str) -> Option<&'f Member> + 'f;

pub(super) fn stdio<'f>(cx: &mut Cx<'_>, mount: &mut Mount, field: &Field<'f>, at: &dyn Fn(&str) -> String) -> Option<()> {
    let Some(command) = field("command") else {
        let member = field("type").expect("a server without `command` is stdio only by its `type`");
        cx.report(IMPORT_INVALID, member.key_at.start, &at("type"), "a `stdio` server needs a `command`");
        return None;
    };
    string(cx, command, &at("command"))?;
    let mut argv: Vec<(&Val, String)> = vec![(&command.value, at("command"))];
    if let Some(args) = field("args") {
        for (i, arg) in strings(cx, args, &at("args"))?.into_iter().enumerate() {
            argv.push((arg, format!("{}/{i}", at("args"))));
        }
    }
    // `cmd /c X …` (Windows's shell running X) is X.
    let shell = argv[0].0.as_str().is_some_and(|c| {
        let c = c.rsplit(['\\', '/']).next().unwrap_or(c).to_ascii_lowercase();
        c == "cmd" || c == "cmd.exe"
    });
    let slash_c = argv.iter().skip(1).position(|(a, _)| a.as_str().is_some_and(|a| a.eq_ignore_ascii_case("/c")));
    if let (true, Some(c)) = (shell, slash_c)
        && argv.iter().skip(1).take(c).all(|(a, _)| a.as_str().is_some_and(|a| a.starts_with('/')))
        && argv.len() > c + 2
    {
        let unwrapped = argv[c + 2].0.as_str().unwrap_or_default().to_owned();
        let message = format!("`cmd /c` runs a command through Windows's shell; seam runs `{unwrapped}` itself");
        cx.note(mount, IMPORT_WINDOWS, command.value.at.start, &at("command"), message);
        argv.drain(..c + 2);
    }
    let mut texts = Vec::new();
    let mut secret_flag = false;
    let references = cx.format.references();
    for (i, (arg, pointer)) in argv.iter().enumerate() {
        let raw = arg.as_str().unwrap_or_default();
        // The value of a secret's flag (`--token X`) unless it only names a variable; a token or a URL's password;
        // or a value given with a secret's name in the argument (`--api-key=X`, `NAME=X`, `X-Api-Key: X`).
        let after_flag = secret_flag && !reference_only(references, raw);
        secret_flag = raw.starts_with('-') && {
            let flag = raw.trim_start_matches('-');
            !flag.contains('=') && secret_key(flag)
        };
        if i == 0 {
            texts.push(text(cx, mount, arg, pointer, "`command`"));
            continue;
        }
        let keyed = keyed_secret(references, raw);
        if after_flag || keyed.is_some() || seam_engine::redact::text(raw) != raw {
            cx.secret(arg);
            let written = match keyed {
                Some(value) if !after_flag => format!("{}***", escape(&raw[..value])),
                _ => "***".to_owned(),
            };
            let message = format!(
                "argument {i} looks like it holds a secret (a token, a password in a URL, the value of a secret's flag, variable or header), which seam does not copy: it is written as `{written}`; give the server its secret through its environment (`env_passthrough`) instead"
            );
            cx.note(mount, IMPORT_SECRET_NOT_COPIED, arg.at.start, pointer, message).help =
                Some("if it is no secret, write it back in the composition".into());
            texts.push(written);
            continue;
        }
        texts.push(text(cx, mount, arg, pointer, "an argument"));
    }
    let windows = |s: &str| {
        let b = s.as_bytes();
        (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/')) || s.starts_with("\\\\")
    };
    let command_text = argv[0].0.as_str().unwrap_or_default();
    if windows(command_text) || [".exe", ".cmd", ".bat"].iter().any(|e| command_text.to_ascii_lowercase().ends_with(e)) {
        let message = format!("`{command_text}` is a Windows command; it is kept as written, so change it to this machine's");
        cx.note(mount, IMPORT_WINDOWS, argv[0].0.at.start, &argv[0].1, message);
    }
    if let Some((arg, pointer)) = argv.iter().skip(1).find(|(a, _)| a.as_str().is_some_and(windows)) {
        let message = "the arguments hold Windows paths (`C:\\…`), kept as written: change them to this machine's".to_owned();
        cx.note(mount, IMPORT_WINDOWS, arg.at.start, pointer, message);
    }
    let mut texts = texts.into_iter();
    mount.command = texts.next();
    mount.args = texts.collect();
    if let Some(env) = field("env") {
        let Some(entries) = env.value.members() else {
            cx.report(IMPORT_INVALID, env.value.at.start, &at("env"), format!("`env` is {}, not an object", env.value.kind_name()));
            return None;
        };
        written_twice(cx, entries, &at("env"), None);
        for entry in entries {
            env_entry(cx, mount, entry, &format!("{}/{}", at("env"), escape_pointer_segment(&entry.key)));
        }
    }
    if let Some(vars) = field("env_vars") {
        for var in strings(cx, vars, &at("env_vars"))? {
            let name = var.as_str().expect("strings");
            if env_name(name) {
                mount.pass(name);
            } else {
                cx.report(IMPORT_INVALID, var.at.start, &at("env_vars"), format!("`{name}` is not a variable name"));
            }
        }
    }
    if let Some(cwd) = field("cwd") {
        string(cx, cwd, &at("cwd"))?;
        let mut folder = text(cx, mount, &cwd.value, &at("cwd"), "`cwd`");
        let written = cwd.value.as_str().unwrap_or_default();
        if windows(written) {
            cx.note(mount, IMPORT_WINDOWS, cwd.value.at.start, &at("cwd"), "`cwd` is a Windows path, kept as written".to_owned());
        } else if Path::new(written).is_relative() && !written.starts_with('$') {
            // Relative to the config's folder, not to the composition's.
            let base = absolute(cx.path).parent().map(Path::to_owned).unwrap_or_default();
            folder = escape(&base.join(written).display().to_string());
        }
        mount.cwd = Some(folder);
    }
    Some(())
}

pub(super) fn http<'f>(
    cx: &mut Cx<'_>,
    mount: &mut Mount,
    field: &Field<'f>,
    at: &dyn Fn(&str) -> String,
    entry: &Member,
    pointer: &str,
) -> Option<()> {
    let Some(url) = field("url") else {
        cx.report(IMPORT_INVALID, entry.key_at.start, pointer, format!("remote server `{}` needs a `url`", entry.key));
        return None;
    };
    let written = string(cx, url, &at("url"))?;
    // A variable named like a secret (`${API_KEY}`), or a default that looks like one, read into the URL.
    let reads_secret = pieces(cx.format.references(), written).into_iter().find_map(|p| match p {
        Piece::Env { name, default, .. } if is_secret_name(name) || default.is_some_and(|d| looks_secret(cx.format.references(), d)) => {
            Some(name)
        }
        _ => None,
    });
    if seam_engine::redact::secret_in_url(written).is_some() || seam_engine::redact::text(written) != written || reads_secret.is_some() {
        cx.secret(&url.value);
        let var = format!("{}_URL", mount.prefix());
        let message = match reads_secret {
            Some(name) => format!(
                "the URL reads `{name}`, named like a secret, and seam does not copy a secret into a composition: set `{var}` in seam's environment to the URL; the composition reads it from there"
            ),
            None => format!(
                "the URL holds a secret (a password, a token, or a query parameter named like one), which seam does not copy: set `{var}` in seam's environment to the URL; the composition reads it from there"
            ),
        };
        cx.note(mount, IMPORT_SECRET_NOT_COPIED, url.value.at.start, &at("url"), message);
        mount.url = Some(format!("${{{var}}}"));
        cx.url_vars.insert(var);
    } else {
        mount.url = Some(text(cx, mount, &url.value, &at("url"), "`url`"));
    }
    for key in ["headers", "http_headers"] {
        let Some(headers) = field(key).filter(|_| cx.format.keys().contains(&key)) else { continue };
        let Some(entries) = headers.value.members() else {
            cx.report(IMPORT_INVALID, headers.value.at.start, &at(key), format!("`{key}` is {}, not an object", headers.value.kind_name()));
            return None;
        };
        written_twice(cx, entries, &at(key), None);
        for header in entries {
            let here = format!("{}/{}", at(key), escape_pointer_segment(&header.key));
            string(cx, header, &here)?;
            header_entry(cx, mount, header, &here);
        }
    }
    if let Some(headers) = field("env_http_headers") {
        let Some(entries) = headers.value.members() else {
            let message = format!("`env_http_headers` is {}, not a table", headers.value.kind_name());
            cx.report(IMPORT_INVALID, headers.value.at.start, &at("env_http_headers"), message);
            return None;
        };
        written_twice(cx, entries, &at("env_http_headers"), None);
        for header in entries {
            let here = format!("{}/{}", at("env_http_headers"), escape_pointer_segment(&header.key));
            let var = string(cx, header, &here)?;
            if !env_name(var) {
                cx.report(IMPORT_INVALID, header.value.at.start, &here, format!("`{var}` is not a variable name"));
                return None;
            }
            mount.headers_env.insert(header.key.clone(), var.to_owned());
        }
    }
    if let Some(var) = field("bearer_token_env_var") {
        let name = string(cx, var, &at("bearer_token_env_var"))?;
        if !env_name(name) {
            cx.report(IMPORT_INVALID, var.value.at.start, &at("bearer_token_env_var"), format!("`{name}` is not a variable name"));
            return None;
        }
        mount.bearer_token_env = Some(name.to_owned());
    }
    if let Some(token) = field("bearer_token") {
        string(cx, token, &at("bearer_token"))?;
        cx.secret(&token.value);
        let var = format!("{}_TOKEN", mount.prefix());
        let message =
            format!("the bearer token is written in the config, and seam does not copy it: set `{var}` in seam's environment to the token");
        cx.note(mount, IMPORT_SECRET_NOT_COPIED, token.value.at.start, &at("bearer_token"), message);
        mount.bearer_token_env = Some(var);
    }
    Some(())
}

/// One variable of a stdio server's `env`.
pub(super) fn env_entry(cx: &mut Cx<'_>, mount: &mut Mount, entry: &Member, pointer: &str) {
    let name = entry.key.as_str();
    if !env_name(name) {
        cx.secret(&entry.value);
        let message = format!("`{name}` is not a variable name seam can pass on; not imported");
        cx.note(mount, IMPORT_UNSUPPORTED, entry.key_at.start, pointer, message);
        return;
    }
    let message = match whole_reference(cx.format.references(), &entry.value) {
        Some(Piece::Env { name: var, .. }) if var == name => {
            mount.pass(name);
            return;
        }
        Some(Piece::Env { name: var, .. }) if !is_secret_name(var) && !is_secret_name(name) => {
            mount.env.insert(name.to_owned(), format!("${{{var}:-}}"));
            return;
        }
        Some(Piece::Env { name: var, .. }) => format!(
            "`{name}` is read from `{var}` in the config, and seam passes a secret on under its own name only: set `{name}` in seam's environment (to what `{var}` holds)"
        ),
        Some(Piece::Input { id, .. }) => {
            format!("`{name}` comes from VS Code's input `{id}`, which seam does not ask for: set `{name}` in seam's environment")
        }
        // A value that is only a folder VS Code names (`${workspaceFolder}`) is that folder: no secret was written.
        _ if matches!(pieces(cx.format.references(), entry.value.as_str().unwrap_or_default()).as_slice(), [Piece::Editor { .. }]) => {
            let value = text(cx, mount, &entry.value, pointer, "a variable");
            mount.env.insert(name.to_owned(), value);
            return;
        }
        _ => {
            cx.secret(&entry.value);
            format!(
                "`{name}` has a value written in the config, which seam does not copy (it may be a secret): set `{name}` in seam's environment"
            )
        }
    };
    mount.pass(name);
    cx.note(mount, IMPORT_SECRET_NOT_COPIED, entry.value.at.start, pointer, message).help =
        Some(format!("the mount passes `{name}` through to the server (`env_passthrough`)"));
}

/// One header of an HTTP server.
pub(super) fn header_entry(cx: &mut Cx<'_>, mount: &mut Mount, header: &Member, pointer: &str) {
    let name = header.key.as_str();
    let value = header.value.as_str().unwrap_or_default();
    let bearer = name.eq_ignore_ascii_case("authorization")
        && value.get(..7).is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer "))
        && mount.bearer_token_env.is_none();
    let token = || Val { kind: Kind::Str(value[7..].trim().to_owned()), at: header.value.at.clone() };
    let reference = if bearer {
        whole_reference(cx.format.references(), &token()).map(|p| match p {
            Piece::Env { name, .. } => Ok(name.to_owned()),
            Piece::Input { id, .. } => Err(id.to_owned()),
            _ => unreachable!("whole references are variables or inputs"),
        })
    } else {
        whole_reference(cx.format.references(), &header.value).map(|p| match p {
            Piece::Env { name, .. } => Ok(name.to_owned()),
            Piece::Input { id, .. } => Err(id.to_owned()),
            _ => unreachable!("whole references are variables or inputs"),
        })
    };
    let made_up = if bearer {
        format!("{}_TOKEN", mount.prefix())
    } else {
        let header: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        // A header already named after the server (`CONTEXT7_API_KEY` on `context7`) keeps its name.
        if header.starts_with(&mount.prefix()) && env_name(&header) { header } else { format!("{}_{header}", mount.prefix()) }
    };
    let (var, why) = match reference {
        Some(Ok(var)) => (var, None),
        Some(Err(id)) => (made_up, Some(format!("comes from VS Code's input `{id}`, which seam does not ask for"))),
        None => {
            cx.secret(&header.value);
            (made_up, Some("is written in the config, and seam does not copy it (it may be a secret)".to_owned()))
        }
    };
    let what = if bearer { "the bearer token of `Authorization`".to_owned() } else { format!("header `{name}`") };
    if let Some(why) = why {
        let message = format!("{what} {why}: set `{var}` in seam's environment to {}", if bearer { "the token" } else { "its value" });
        let help = if bearer {
            format!("the mount reads it with `bearer_token_env: {var}`")
        } else {
            format!("the mount reads it with `headers_env: {{ {name}: {var} }}`")
        };
        cx.note(mount, IMPORT_SECRET_NOT_COPIED, header.value.at.start, pointer, message).help = Some(help);
    }
    if bearer {
        mount.bearer_token_env = Some(var);
    } else {
        mount.headers_env.insert(name.to_owned(), var);
    }
}

/// Codex's settings beyond the transport: `required`, tool lists and timeouts.
pub(super) fn codex_settings<'f>(cx: &mut Cx<'_>, mount: &mut Mount, field: &Field<'f>, at: &dyn Fn(&str) -> String) -> Option<()> {
    if let Some(required) = field("required") {
        mount.required = boolean(cx, required, &at("required"))?;
    }
    for (key, list) in [("enabled_tools", &mut mount.allow), ("disabled_tools", &mut mount.deny)] {
        if let Some(tools) = field(key) {
            for tool in strings(cx, tools, &at(key))? {
                let name = tool.as_str().expect("strings");
                // A name is matched as a glob: its metacharacters are escaped.
                let escaped: String = name.chars().flat_map(|c| if "*?[]{}\\".contains(c) { vec!['\\', c] } else { vec![c] }).collect();
                list.push(escaped);
            }
        }
    }
    for (key, unit) in [("startup_timeout_sec", 1000.0), ("startup_timeout_ms", 1.0), ("tool_timeout_sec", 1000.0)] {
        let slot = if key.starts_with("startup") { &mut mount.startup_timeout } else { &mut mount.call_timeout };
        let Some(member) = field(key) else { continue };
        let Kind::Num(n) = &member.value.kind else {
            cx.report(IMPORT_INVALID, member.value.at.start, &at(key), format!("`{key}` is {}, not a number", member.value.kind_name()));
            return None;
        };
        let millis = n.parse::<f64>().unwrap_or(f64::NAN) * unit;
        if !(1.0..=2_147_483_647.0).contains(&millis) || millis.fract() != 0.0 {
            let message = format!("`{key}` is {n}: seam's timeouts are whole milliseconds from 1ms to 2147483647ms; the default is kept");
            cx.report(IMPORT_UNSUPPORTED, member.value.at.start, &at(key), message);
            continue;
        }
        let millis = millis as u64;
        *slot = Some(if millis.is_multiple_of(1000) { format!("{}s", millis / 1000) } else { format!("{millis}ms") });
    }
    Some(())
}

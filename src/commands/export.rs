//! `seam export FILE --client C`: the snippet of client C's own MCP config that connects
//! it to `seam serve FILE` for one agent, over stdio (the client starts seam) or HTTP
//! (seam runs on its own and the client calls its endpoint).
//!
//! Over HTTP the agent's token is never written: the snippet names the variable it comes
//! from (`serve.bearer_token_env`), in the client's own syntax for the environment. A
//! client that cannot take an HTTP server with a header from the environment gets the
//! stdio snippet, and stderr says why. The paths written are absolute: a client starts
//! servers from a folder of its own.

use std::path::{Path, PathBuf};

use seam_engine::model::TokenSource;
use serde_json::{Value as Json, json};

use crate::{Exit, Transport};

/// The MCP clients whose config `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json` (`mcpServers`; `${VAR}` is read from the environment).
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json` (`mcpServers`; command servers only).
    ClaudeDesktop,
    /// Codex: `~/.codex/config.toml` (`[mcp_servers.NAME]`; `bearer_token_env_var`).
    Codex,
    /// VS Code: `.vscode/mcp.json` (`servers`; `${env:VAR}`).
    Vscode,
    /// Cursor: `.cursor/mcp.json` (`mcpServers`; `${env:VAR}`).
    Cursor,
}

/// What the snippet connects to.
pub struct Target {
    pub client: Client,
    pub transport: Transport,
    /// The name of the server entry in the client's config.
    pub name: String,
    pub agent: String,
    /// The absolute path of the composition.
    pub file: PathBuf,
    /// Where `seam serve --transport http` listens.
    pub listen: std::net::SocketAddr,
    /// The variable the agent's token comes from over HTTP, if it has one.
    pub token_env: Option<String>,
    /// The seam binary the client starts over stdio.
    pub seam: PathBuf,
}

pub fn run(
    engine: &seam_engine::Engine,
    file: &Path,
    client: Client,
    transport: Transport,
    agent: String,
    listen: std::net::SocketAddr,
) -> Result<Exit, crate::error::Error> {
    let checked = super::check(engine, file)?;
    if super::report_errors(&checked) {
        return Ok(Exit::Invalid);
    }
    let Some(resolved) = &checked.resolved else { return Ok(Exit::Invalid) };
    if !resolved.agents.contains_key(&agent) {
        return Err(crate::error::Error::UnknownAgent { agent, file: file.to_owned() });
    }
    let token_env = match resolved.token_for(&agent) {
        Some((TokenSource::Env(name), _)) => Some(name),
        Some((TokenSource::File(path), pointer)) if transport == Transport::Http && client != Client::ClaudeDesktop => {
            return Err(crate::error::Error::TokenFromFile { agent, path, file: file.to_owned(), pointer });
        }
        _ => None,
    };
    let file = file.canonicalize().map_err(|_| crate::error::Error::NoSuchPath(file.to_owned()))?;
    let seam = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("seam"));
    let name = format!("seam-{}", resolved.name.as_deref().unwrap_or("composition"));
    let target = Target { client, transport, name, agent, file, listen, token_env, seam };
    let (snippet, note) = snippet(&target);
    if let Some(note) = note {
        eprintln!("seam: {note}");
    }
    super::print(&snippet);
    Ok(Exit::Valid)
}

/// The snippet for `target`, and a note for stderr when it is not what was asked.
pub fn snippet(target: &Target) -> (String, Option<String>) {
    let mut note = None;
    let transport = if target.transport == Transport::Http && target.client == Client::ClaudeDesktop {
        note = Some("Claude Desktop's config takes command servers only: this is the stdio snippet".to_owned());
        Transport::Stdio
    } else {
        target.transport
    };
    let text = match (target.client, transport) {
        (Client::Codex, transport) => codex(target, transport),
        (client, Transport::Stdio) => json_config(client, &target.name, stdio_entry(client, target)),
        (client, Transport::Http) => json_config(client, &target.name, http_entry(client, target)),
    };
    (text, note)
}

/// The arguments of `seam serve` for the target over stdio.
fn serve_args(target: &Target) -> Vec<String> {
    let mut args = vec!["serve".to_owned(), target.file.display().to_string()];
    if target.agent != crate::DEFAULT_AGENT {
        args.extend(["--agent".to_owned(), target.agent.clone()]);
    }
    args
}

/// The endpoint of the target's agent on `seam serve --transport http`.
fn url(target: &Target) -> String {
    if target.agent == crate::DEFAULT_AGENT {
        format!("http://{}/mcp", target.listen)
    } else {
        format!("http://{}/agents/{}/mcp", target.listen, target.agent)
    }
}

fn stdio_entry(client: Client, target: &Target) -> Json {
    let mut entry = json!({ "command": target.seam.display().to_string(), "args": serve_args(target) });
    if client == Client::Vscode {
        entry["type"] = json!("stdio");
    }
    entry
}

fn http_entry(client: Client, target: &Target) -> Json {
    let mut entry = json!({ "url": url(target) });
    if matches!(client, Client::ClaudeCode | Client::Vscode) {
        entry["type"] = json!("http");
    }
    if let Some(var) = &target.token_env {
        // Each client's own syntax for a value of the environment.
        let value = match client {
            Client::ClaudeCode => format!("${{{var}}}"),
            _ => format!("${{env:{var}}}"),
        };
        entry["headers"] = json!({ "Authorization": format!("Bearer {value}") });
    }
    entry
}

fn json_config(client: Client, name: &str, entry: Json) -> String {
    let key = if client == Client::Vscode { "servers" } else { "mcpServers" };
    format!("{}\n", serde_json::to_string_pretty(&json!({ key: { name: entry } })).expect("serializable"))
}

/// Codex's TOML. Its strings are written as JSON strings, which TOML reads as basic
/// strings with the same escapes.
fn codex(target: &Target, transport: Transport) -> String {
    let quoted = |text: &str| Json::from(text).to_string();
    let mut lines = vec![format!("[mcp_servers.{}]", quoted(&target.name))];
    match transport {
        Transport::Stdio => {
            lines.push(format!("command = {}", quoted(&target.seam.display().to_string())));
            let args: Vec<String> = serve_args(target).iter().map(|a| quoted(a)).collect();
            lines.push(format!("args = [{}]", args.join(", ")));
        }
        Transport::Http => {
            lines.push(format!("url = {}", quoted(&url(target))));
            if let Some(var) = &target.token_env {
                lines.push(format!("bearer_token_env_var = {}", quoted(var)));
            }
        }
    }
    format!("{}\n", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(client: Client, transport: Transport, agent: &str, token_env: Option<&str>) -> Target {
        Target {
            client,
            transport,
            name: "seam-coding".into(),
            agent: agent.into(),
            file: "/work/c.yaml".into(),
            listen: crate::DEFAULT_LISTEN.parse().unwrap(),
            token_env: token_env.map(str::to_owned),
            seam: "/usr/local/bin/seam".into(),
        }
    }

    fn json_of(client: Client, transport: Transport, agent: &str, token_env: Option<&str>) -> Json {
        serde_json::from_str(&snippet(&target(client, transport, agent, token_env)).0).unwrap()
    }

    #[test]
    fn a_stdio_snippet_starts_seam_serve_for_the_agent() {
        let code = json_of(Client::ClaudeCode, Transport::Stdio, "reviewer", None);
        assert_eq!(
            code,
            json!({ "mcpServers": { "seam-coding": {
                "command": "/usr/local/bin/seam", "args": ["serve", "/work/c.yaml", "--agent", "reviewer"] } } })
        );
        let vscode = json_of(Client::Vscode, Transport::Stdio, "default", None);
        assert_eq!(
            vscode,
            json!({ "servers": { "seam-coding": { "type": "stdio", "command": "/usr/local/bin/seam", "args": ["serve", "/work/c.yaml"] } } })
        );
    }

    /// Over HTTP the token is named, never written, in each client's syntax for the environment.
    #[test]
    fn an_http_snippet_names_the_token_s_variable_in_the_client_s_syntax() {
        let entry = |client| json_of(client, Transport::Http, "reviewer", Some("SEAM_TOKEN"));
        let code = entry(Client::ClaudeCode);
        assert_eq!(
            code["mcpServers"]["seam-coding"],
            json!({ "type": "http", "url": "http://127.0.0.1:8931/agents/reviewer/mcp",
                    "headers": { "Authorization": "Bearer ${SEAM_TOKEN}" } })
        );
        assert_eq!(entry(Client::Cursor)["mcpServers"]["seam-coding"]["headers"]["Authorization"], "Bearer ${env:SEAM_TOKEN}");
        assert_eq!(entry(Client::Vscode)["servers"]["seam-coding"]["headers"]["Authorization"], "Bearer ${env:SEAM_TOKEN}");
        let open = json_of(Client::Cursor, Transport::Http, "default", None);
        assert_eq!(open["mcpServers"]["seam-coding"], json!({ "url": "http://127.0.0.1:8931/mcp" }), "no token: no header");
        let (codex, note) = snippet(&target(Client::Codex, Transport::Http, "reviewer", Some("SEAM_TOKEN")));
        assert_eq!(
            codex,
            "[mcp_servers.\"seam-coding\"]\nurl = \"http://127.0.0.1:8931/agents/reviewer/mcp\"\nbearer_token_env_var = \"SEAM_TOKEN\"\n"
        );
        assert_eq!(note, None);
    }

    /// Claude Desktop takes command servers only: asked for HTTP, it gets stdio, and is told.
    #[test]
    fn claude_desktop_gets_stdio_and_a_note() {
        let (text, note) = snippet(&target(Client::ClaudeDesktop, Transport::Http, "default", Some("SEAM_TOKEN")));
        let config: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(config["mcpServers"]["seam-coding"]["args"], json!(["serve", "/work/c.yaml"]));
        assert!(!text.contains("SEAM_TOKEN"), "over stdio no token travels");
        assert!(note.is_some_and(|n| n.contains("command servers only")));
        let (codex, _) = snippet(&target(Client::Codex, Transport::Stdio, "default", None));
        assert_eq!(codex, "[mcp_servers.\"seam-coding\"]\ncommand = \"/usr/local/bin/seam\"\nargs = [\"serve\", \"/work/c.yaml\"]\n");
    }
}

//! `seam login FILE MOUNT` and `seam logout FILE MOUNT`: a person's OAuth login for an
//! `mcp.http` mount with `auth.oauth` (`grant: authorization_code`). seam listens on a
//! loopback port for the authorization server's redirect, prints the URL to open, and
//! keeps the tokens in the mount's state file; where the browser cannot reach seam's
//! loopback (a remote machine), the URL the browser was sent back to can be pasted on
//! standard input instead. The protocol is rmcp's (`seam_mcp::oauth`).

use std::path::PathBuf;

use seam_engine::Engine;

use crate::Exit;
use crate::error::Error;

/// The mount's server URL and `auth.oauth`, from the checked composition, and the agents
/// that see the mount.
fn oauth_of(engine: &Engine, file: &std::path::Path, mount: &str) -> Result<Option<(String, seam_mcp::OAuth, Vec<String>)>, Error> {
    let checked = super::check(engine, file)?;
    if super::report_errors(&checked) {
        return Ok(None);
    }
    let resolved = checked.resolved.as_ref().expect("a composition without errors is resolved");
    let seeing: Vec<String> = resolved.visible_agents(mount).into_iter().map(str::to_owned).collect();
    let config = resolved.mounts.get(mount).and_then(|m| m.resolved.as_ref()).map(|r| r.config.clone());
    let http = config.as_ref().and_then(|c| c.as_any().downcast_ref::<seam_mcp::HttpServer>());
    match http.and_then(|h| Some((h.url.clone(), h.auth.as_ref()?.oauth.clone(), seeing))) {
        Some(found) => Ok(Some(found)),
        None => Err(Error::NoOAuth { mount: mount.to_owned(), file: file.to_owned() }),
    }
}

/// The agent whose tokens a login or logout is for: given exactly when the mount keeps
/// each agent's own (`per_agent`), and one that sees the mount.
fn agent_for(mount: &str, oauth: &seam_mcp::OAuth, seeing: &[String], agent: Option<String>) -> Result<Option<String>, Error> {
    match (oauth.per_agent, agent) {
        (true, None) => Err(Error::Login(format!("mount `{mount}` keeps each agent's own tokens (`per_agent`): say whose, `--agent A`"))),
        (false, Some(_)) => Err(Error::Login(format!("mount `{mount}`'s agents share one login: no `--agent`"))),
        (true, Some(agent)) if !seeing.contains(&agent) => {
            let seeing = if seeing.is_empty() { "none".to_owned() } else { seeing.join(", ") };
            Err(Error::Login(format!("agent `{agent}` does not see mount `{mount}` (agents that do: {seeing})")))
        }
        (_, agent) => Ok(agent),
    }
}

pub fn login(
    engine: &Engine,
    file: PathBuf,
    mount: String,
    agent: Option<String>,
    no_browser: bool,
    scopes: Vec<String>,
) -> Result<Exit, Error> {
    let Some((url, mut oauth, seeing)) = oauth_of(engine, &file, &mount)? else { return Ok(Exit::Invalid) };
    let agent = agent_for(&mount, &oauth, &seeing, agent)?;
    if oauth.grant != seam_mcp::Grant::AuthorizationCode {
        return Err(Error::Login(format!("mount `{mount}` gets its tokens by `client_credentials`: no one logs in")));
    }
    // A step-up (`--scope`) asks for the scopes the last login was granted too, so that
    // what the server asked for before is not lost to what it asks for now (SEP-2350).
    let granted = if scopes.is_empty() { Vec::new() } else { seam_mcp::oauth::granted_scopes(&mount, agent.as_deref(), &url, &oauth) };
    for scope in granted.into_iter().chain(scopes) {
        if !oauth.scopes.contains(&scope) {
            oauth.scopes.push(scope);
        }
    }
    super::runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(Error::Socket)?;
        let port = listener.local_addr().map_err(Error::Socket)?.port();
        let redirect = format!("http://127.0.0.1:{port}/callback");
        let begun = seam_mcp::oauth::begin_login(&mount, agent.as_deref(), &url, &oauth, &redirect).await.map_err(|e| Error::Login(e.to_string()))?;
        // The address comes from the authorization server's metadata: only a web page is opened or shown.
        if !(begun.url.starts_with("https://") || begun.url.starts_with("http://127.0.0.1") || begun.url.starts_with("http://localhost")) {
            return Err(Error::Login("the authorization server's address is neither https:// nor on loopback".to_owned()));
        }
        eprintln!(
            "To log in for mount `{mount}`, open:\n\n  {}\n\nOn another machine than seam's, paste here the address your browser was sent back to.",
            begun.url
        );
        // No browser on a headless machine, nor when asked for none.
        let graphical = std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
        if graphical && !no_browser {
            let _ = std::process::Command::new("xdg-open").arg(&begun.url).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn();
        }
        let callback = tokio::select! {
            url = redirected(listener, port) => url,
            Some(url) = pasted() => url,
        };
        seam_mcp::oauth::finish_login(begun, &callback).await.map_err(|e| Error::Login(e.to_string()))?;
        eprintln!("Logged in: the tokens are kept in {}", seam_mcp::oauth::state_path(&oauth).display());
        Ok(Exit::Valid)
    })
}

pub fn logout(engine: &Engine, file: PathBuf, mount: String, agent: Option<String>) -> Result<Exit, Error> {
    let Some((url, oauth, seeing)) = oauth_of(engine, &file, &mount)? else { return Ok(Exit::Invalid) };
    let agent = agent_for(&mount, &oauth, &seeing, agent)?;
    super::runtime()?.block_on(seam_mcp::oauth::logout(&mount, agent.as_deref(), &url, &oauth)).map_err(|e| Error::Login(e.to_string()))?;
    eprintln!("Logged out: mount `{mount}`'s tokens are gone from {}", seam_mcp::oauth::state_path(&oauth).display());
    Ok(Exit::Valid)
}

/// The address the authorization server sent the browser back to, as seam's loopback
/// heard it (the first request to `/callback`).
async fn redirected(listener: tokio::net::TcpListener, port: u16) -> String {
    let (heard, mut answer) = tokio::sync::mpsc::channel::<String>(1);
    let callback = move |uri: axum::http::Uri| {
        let heard = heard.clone();
        async move {
            let _ = heard.try_send(format!("http://127.0.0.1:{port}{uri}"));
            "seam has the answer; this page can be closed."
        }
    };
    let app = axum::Router::new().route("/callback", axum::routing::get(callback));
    let served = tokio::spawn(async move { axum::serve(listener, app).await });
    let url = answer.recv().await.unwrap_or_default();
    served.abort();
    url
}

/// An address pasted on standard input; `None` once it closes without one. Read on a
/// thread of its own, which nothing waits for: a terminal's read cannot be cancelled,
/// and the login must end when the redirect comes first.
async fn pasted() -> Option<String> {
    let (found, address) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let address = std::io::stdin()
            .lines()
            .map_while(Result::ok)
            .map(|line| line.trim().to_owned())
            .find(|line| line.starts_with("http://") || line.starts_with("https://"));
        let _ = found.send(address);
    });
    address.await.ok().flatten()
}

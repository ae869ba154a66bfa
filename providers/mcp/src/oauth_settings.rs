//! `mcp.http`'s `auth.oauth` as written: its settings, their check together (one way to
//! authorize, one proof of the client, what each grant reads), and what `inventory` and
//! `validate --environment` say of them. The protocol at run time is `oauth.rs`'s.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use seam_engine::model::EnvName;
use seam_engine::surface::MountCx;
use serde::{Deserialize, Serialize};

use crate::oauth;

/// `auth`: authorization beyond a header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// OAuth 2.1 as MCP's authorization spec describes it: the server's protected-resource
    /// metadata, then its authorization server's, PKCE (S256) and the resource indicator.
    pub oauth: OAuth,
}

/// `auth.oauth`: who seam is to the authorization server, how it gets tokens, and where
/// it keeps them. seam identifies itself, in the spec's order, by a pre-registered
/// `client_id`, else by its Client ID Metadata Document (`client_metadata_url`), else by
/// registering itself (dynamic client registration).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuth {
    /// `authorization_code`: a person logs in once (`seam login`) and seam refreshes the
    /// tokens; `client_credentials`: no person, the client's own secret or key.
    #[serde(default)]
    pub grant: Grant,
    /// The id the authorization server registered for seam.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub client_id: Option<String>,
    /// The variable holding the client's secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<EnvName>,
    /// A file holding the client's secret; relative to the file that names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_file: Option<String>,
    /// A PEM private key the client signs its assertions with (`private_key_jwt`), instead
    /// of a secret; relative to the file that names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_file: Option<String>,
    /// The algorithm `private_key_file`'s assertions are signed with; without it, RS256
    /// for a key labelled `RSA PRIVATE KEY`, else ES256 (give it for a PKCS#8 RSA key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_algorithm: Option<SigningAlgorithm>,
    /// The HTTPS URL of a Client ID Metadata Document that describes seam: its client id,
    /// where no client is registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^https://[^/?#]+/[^#]*$"))]
    pub client_metadata_url: Option<String>,
    /// The scopes asked for; without them, those the server says it needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The authorization server seam trusts for this mount, by its issuer identifier:
    /// one the MCP server's metadata names otherwise is refused before seam sends it a
    /// secret, a login or a token request. Without it, the one the server names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(https://[^/?#@\s]+|http://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]+)?)(/[^?#\s]*)?$"))]
    pub issuer: Option<String>,
    /// Each agent that sees the mount holds its own tokens (`seam login FILE MOUNT --agent
    /// A`), and its own connection: it implies `isolation: per-agent` (and refuses
    /// `per-session`, whose connections are no agent's).
    #[serde(default)]
    pub per_agent: bool,
    /// Where the tokens are kept (created 0600, outside the composition); relative to the
    /// file that names it. Without it, under the user's state folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_file: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SigningAlgorithm {
    RS256,
    RS384,
    RS512,
    ES256,
    ES384,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    #[default]
    AuthorizationCode,
    ClientCredentials,
}

/// How seam identifies itself to an authorization server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientIdentity {
    PreRegistered,
    MetadataDocument,
    DynamicRegistration,
}

impl ClientIdentity {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientIdentity::PreRegistered => "pre-registered",
            ClientIdentity::MetadataDocument => "metadata document",
            ClientIdentity::DynamicRegistration => "dynamic registration",
        }
    }
}

impl OAuth {
    /// Who seam is to the authorization server, in the spec's order of preference.
    pub fn client_identity(&self) -> ClientIdentity {
        match (&self.client_id, &self.client_metadata_url) {
            (Some(_), _) => ClientIdentity::PreRegistered,
            (None, Some(_)) => ClientIdentity::MetadataDocument,
            (None, None) => ClientIdentity::DynamicRegistration,
        }
    }
}

/// `auth.oauth`'s fields checked together: one way to authorize, one secret, a secret
/// only for a registered client, and `client_credentials` with a client that can prove
/// itself; files made absolute. Whether each is valid on its own is the schema's.
pub(crate) fn resolve_oauth(
    cx: &mut MountCx<'_>,
    oauth: &mut OAuth,
    bearer: &Option<EnvName>,
    headers_env: &BTreeMap<String, EnvName>,
    requirements: &mut Vec<seam_engine::surface::Requirement>,
) -> bool {
    let mut ok = true;
    let at = "/auth/oauth";
    let header = headers_env.keys().find(|h| h.eq_ignore_ascii_case("authorization"));
    if bearer.is_some() || header.is_some() {
        let message =
            "the mount authorizes with `auth.oauth`: a `bearer_token_env` or an `Authorization` header would send a second credential";
        cx.report(crate::codes::MCP_OAUTH_CONFLICT, at, message).help = Some("keep one of them".into());
        ok = false;
    }
    let secrets: Vec<&str> = [
        oauth.client_secret_env.as_ref().map(|_| "client_secret_env"),
        oauth.client_secret_file.as_ref().map(|_| "client_secret_file"),
        oauth.private_key_file.as_ref().map(|_| "private_key_file"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if secrets.len() > 1 {
        let message = format!("`{}` and `{}` both prove the client: give one", secrets[0], secrets[1]);
        cx.report(crate::codes::MCP_OAUTH_CONFLICT, &format!("{at}/{}", secrets[1]), message);
        ok = false;
    }
    if let (Some(secret), None) = (secrets.first(), &oauth.client_id) {
        let message = format!("`{secret}` proves a registered client, and no `client_id` is given");
        cx.report(crate::codes::MCP_OAUTH_INCOMPLETE, &format!("{at}/{secret}"), message).help =
            Some("add the `client_id` the authorization server registered".into());
        ok = false;
    }
    // What one grant reads and the other would leave unread.
    // (One proof of the client at a time: two are said above.)
    if oauth.grant == Grant::AuthorizationCode && oauth.private_key_file.is_some() && secrets.len() == 1 {
        let message = "a signed assertion (`private_key_file`) proves a `client_credentials` client; a person's login proves its client with a secret, or none";
        cx.report(crate::codes::MCP_OAUTH_CONFLICT, &format!("{at}/private_key_file"), message);
        ok = false;
    }
    if oauth.grant == Grant::ClientCredentials && oauth.client_metadata_url.is_some() {
        let message = "a metadata document names a client a person logs in through; `client_credentials` needs a registered `client_id`";
        cx.report(crate::codes::MCP_OAUTH_CONFLICT, &format!("{at}/client_metadata_url"), message);
        ok = false;
    }
    if oauth.grant == Grant::ClientCredentials && (oauth.client_id.is_none() || secrets.is_empty()) {
        let message = "`client_credentials` gets tokens with no person: it needs `client_id` and its `client_secret_env`, `client_secret_file` or `private_key_file`";
        cx.report(crate::codes::MCP_OAUTH_INCOMPLETE, &format!("{at}/grant"), message);
        ok = false;
    }
    for (field, file) in [("client_secret_file", &mut oauth.client_secret_file), ("private_key_file", &mut oauth.private_key_file)] {
        if let Some(file) = file {
            let path = cx.path(&format!("{at}/{field}"), file);
            *file = path.display().to_string();
            requirements.push(seam_engine::surface::Requirement::ReadableFile { path, pointer: format!("{}{at}/{field}", cx.pointer) });
        }
    }
    if let Some(file) = &mut oauth.state_file {
        *file = cx.path(&format!("{at}/state_file"), file).display().to_string();
    }
    ok
}

/// What `seam inventory` says of a mount's OAuth: who seam is to the authorization
/// server, how it gets its tokens, and the server it is pinned to, if any; and what `validate --environment` finds: a
/// mount a person logs in for that no one has logged in for yet.
pub(crate) fn oauth_environment(mount: &str, url: &str, oauth: &OAuth) -> seam_engine::surface::Environment {
    let identity = oauth.client_identity().as_str();
    let grant = match oauth.grant {
        Grant::AuthorizationCode => "authorization_code",
        Grant::ClientCredentials => "client_credentials",
    };
    let mut line = format!("oauth: {grant}; client: {identity}");
    if oauth.per_agent {
        line.push_str(", each agent its own tokens");
    }
    if let Some(issuer) = &oauth.issuer {
        line.push_str(&format!("; authorization server pinned: {issuer}"));
    }
    let mut findings = Vec::new();
    if oauth.grant == Grant::AuthorizationCode && !oauth.per_agent && !oauth::logged_in(mount, url, oauth) {
        findings.push(seam_engine::surface::Finding {
            code: crate::codes::MCP_OAUTH_LOGIN_NEEDED,
            pointer: "/auth/oauth".to_owned(),
            message: format!(
                "no one has logged in for mount `{mount}` (tokens in {}): run `seam login FILE {mount}`",
                oauth::state_path(oauth).display()
            ),
        });
    }
    seam_engine::surface::Environment {
        findings,
        facts: Some(
            serde_json::json!({ "oauth": { "grant": grant, "client": identity, "per_agent": oauth.per_agent, "issuer": oauth.issuer } }),
        ),
        lines: vec![line],
    }
}

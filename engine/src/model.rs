//! The engine-owned parts of format v1, as written (the raw phase). Surface
//! sections (`services.web`, mount kinds, fixed tools) come from the surfaces.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::Duration;

/// Defaults that every tool inherits unless its own entry says otherwise.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// How long one call of a tool may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// The most characters a tool result may carry to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100_000_000))]
    pub max_output_chars: Option<u64>,
    /// Whether a person is asked before a call goes on: `ask` (every call), `never`, or
    /// `{ when: destructive }` (a call of a tool that may destroy, by its annotations: one
    /// that says nothing may, as MCP's defaults say). Asked of the calling client
    /// (elicitation, or a 2026-07-28 client's `input_required`); a client that cannot be
    /// asked cannot approve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Approve>,
}

/// `approve`: `ask`, `never`, or `{ when: destructive }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Approve {
    Mode(ApproveMode),
    When(ApproveWhen),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApproveMode {
    /// Every call is asked about.
    Ask,
    /// None is (to undo an `approve` a wider rule or the defaults set).
    Never,
}

/// A call is asked about when its tool is of a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveWhen {
    pub when: ApproveCondition,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApproveCondition {
    /// The tool may destroy: not `readOnlyHint: true`, and not `destructiveHint: false`.
    Destructive,
}

impl Approve {
    /// Whether a call of `tool` is asked about.
    pub fn asks_for(self, tool: &crate::runtime::ToolSpec) -> bool {
        match self {
            Approve::Mode(ApproveMode::Ask) => true,
            Approve::Mode(ApproveMode::Never) => false,
            Approve::When(ApproveWhen { when: ApproveCondition::Destructive }) => tool.is_destructive(),
        }
    }
}

/// `disclosure`: how an agent's MCP tools reach its model. `all` lists every one;
/// `search` lists seam's fixed tools, the tools `always` names, and seam's `tool_search`
/// and `tool_call`, and defers the rest: a search returns their definitions, and a
/// deferred tool is called through `tool_call` or by its name. `auto` is `search` once
/// the agent's catalog, listed whole, is larger than `above` says. Written for an agent
/// (its children inherit it whole unless they write their own) or as a mount's mode,
/// which decides for that mount's tools over the agent's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Disclosure {
    Mode(DisclosureMode),
    Rules(DisclosureRules),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DisclosureMode {
    /// Every tool is listed.
    #[default]
    All,
    /// The tools are deferred: found with `tool_search`.
    Search,
    /// `search` once the catalog is larger than `above`, else `all`.
    Auto,
}

/// `disclosure` with its settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisclosureRules {
    pub mode: DisclosureMode,
    /// Tools kept listed, by the names agents' rules give them
    /// (`mcp__<server>__<tool>`, globs allowed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub always: Vec<String>,
    /// The most definitions one `tool_search` returns (a search may ask for fewer).
    #[serde(default = "DisclosureRules::default_max_results")]
    #[schemars(range(min = 1, max = 50))]
    pub max_results: u32,
    /// With `auto`: the size past which the catalog is searched, not listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above: Option<DisclosureAbove>,
}

impl DisclosureRules {
    pub const DEFAULT_MAX_RESULTS: u32 = 5;

    fn default_max_results() -> u32 {
        Self::DEFAULT_MAX_RESULTS
    }
}

/// `disclosure.above`: `auto` searches once the catalog, listed whole, has more tools
/// than `tools` or costs more estimated tokens than `tokens` (either, when both are
/// given; without `above`, `crate::disclosure::AUTO_ABOVE_TOKENS`). Read by an agent's
/// `auto` and by a mount's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
pub struct DisclosureAbove {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100_000))]
    pub tools: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100_000_000))]
    pub tokens: Option<u64>,
}

/// `serve`: who may use `seam serve --transport http`, and how much. The
/// token is the `default` agent's: its endpoint (`/mcp`), `/status`,
/// `/readyz` and the status page ask for it, and every agent without a token
/// of its own (`agents.<name>.serve`) inherits it through its parents. MCP
/// clients send `Authorization: Bearer <token>`; a browser opens
/// `/ui?token=<token>` once. `/healthz` stays open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Serve {
    /// The environment variable holding the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<EnvName>,
    /// A file holding the token (surrounding whitespace ignored), read again when it changes; relative to the file that names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_file: Option<String>,
    /// The largest request body accepted; past it, 413.
    #[serde(default = "Serve::default_max_request_bytes")]
    pub max_request_bytes: crate::units::Size,
    /// The most MCP sessions open at once, every agent's together; past it, a new session gets 503.
    #[serde(default = "Serve::default_max_sessions")]
    #[schemars(range(min = 1, max = 65536))]
    pub max_sessions: u32,
    /// The most MCP sessions one agent's endpoint may have open at once, so that one agent's token cannot take every session; past it, that agent's new session gets 503. `max_sessions` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65536))]
    pub max_sessions_per_agent: Option<u32>,
    /// The most `subscriptions/listen` streams (2026-07-28 clients) one agent may have open at once; past it, a new one is refused (`SUBSCRIPTIONS_EXCEEDED`).
    #[serde(default = "Serve::default_max_listen_streams_per_agent")]
    #[schemars(range(min = 1, max = 65536))]
    pub max_listen_streams_per_agent: u32,
    /// The most resource subscriptions one agent may hold at once, its sessions' and listen streams' together; past it, a new one is refused (`SUBSCRIPTIONS_EXCEEDED`).
    #[serde(default = "Serve::default_max_subscriptions_per_agent")]
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_subscriptions_per_agent: u32,
    /// A session without a request for this long is closed. Follows reloads: a change applies to the sessions already open.
    #[serde(default = "Serve::default_session_idle_timeout")]
    pub session_idle_timeout: Duration,
    /// The most TCP connections open at once (idle, sending or being answered), so that held connections cannot use up seam's file descriptors; past it a new connection is told 503 and closed at once, not left in the kernel's queue. Follows reloads (new connections).
    #[serde(default = "Serve::default_max_connections")]
    #[schemars(range(min = 1, max = 1_048_576))]
    pub max_connections: u32,
    /// How long a connection may take to send a request's head (request line and headers), counted from when it opens or its previous answer was sent: one bound on slow headers and on idle keep-alive connections, past which the connection is closed. Follows reloads (new connections).
    #[serde(default = "Serve::default_header_timeout")]
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive once its head has; past it, 408 and the connection closed, so that a slow sender cannot hold its share of `max_buffered_request_bytes`. Follows reloads.
    #[serde(default = "Serve::default_body_timeout")]
    pub body_timeout: Duration,
    /// The bytes of request bodies held at once, every connection's together, so that many large bodies cannot grow memory: a body's bytes are counted as they arrive (declared or chunked, so that heads whose bodies never come hold nothing) until its answer begins; past it, 503 with `Retry-After`. At least `max_request_bytes`. Follows reloads.
    #[serde(default = "Serve::default_max_buffered_request_bytes")]
    pub max_buffered_request_bytes: crate::units::Size,
    /// How long a 2026-07-28 client's call may wait for the client's answers to a server's
    /// question (`input_required`, then the client's retry): past it, the call is cancelled
    /// and its `requestState` answers `INPUT_STATE_EXPIRED`. Follows reloads (new questions).
    #[serde(default = "Serve::default_input_timeout")]
    pub input_timeout: Duration,
    /// Origins (`scheme://host[:port]`) a browser's request may come from besides seam's own
    /// (`http://` each name seam answers to, at the port it listens on): a request whose `Origin`
    /// header is present and none of these gets 403, as the Streamable HTTP transport requires
    /// against DNS rebinding. Follows reloads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<Origin>,
    /// Host names (no port) seam answers to besides loopback's and the address it listens
    /// on: the names clients reach it by through a load balancer or a Kubernetes Service
    /// (`seam`, `seam.tools.svc.cluster.local`). A request whose `Host` is none of them gets
    /// 403, against DNS rebinding. Follows reloads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<HostName>,
    /// Serve `/metrics` (Prometheus) without the default agent's token, for a scraper
    /// that cannot send one; it names tools, agents and mounts, never a secret.
    #[serde(default)]
    pub metrics_public: bool,
    /// A tamper-evident trail of every request that reaches the call stage (`crate::audit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<Audit>,
}

/// `serve.audit`: where the trail is written, how it rotates, and what it holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Audit {
    /// The trail's file (JSON Lines), relative to the file that names it; its folder is made.
    pub path: String,
    /// Past this size the file is rotated: it becomes `PATH.1`, and a new one goes on the chain.
    #[serde(default = "Audit::default_max_size")]
    pub max_size: crate::units::Size,
    /// How many rotated files are kept (`PATH.1` … `PATH.<keep>`).
    #[serde(default = "Audit::default_keep")]
    #[schemars(range(min = 1, max = 1000))]
    pub keep: u32,
    /// Writes each request's arguments too (else only their sha256): they may hold what
    /// the trail should not.
    #[serde(default)]
    pub include_arguments: bool,
    /// The environment variable holding the key each record's HMAC is made with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_env: Option<EnvName>,
}

impl Audit {
    fn default_max_size() -> crate::units::Size {
        crate::units::Size::mib(64)
    }
    fn default_keep() -> u32 {
        8
    }
}

/// `serve.audit` as a generation holds it: the path made absolute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditConfig {
    pub path: std::path::PathBuf,
    pub max_size: crate::units::Size,
    pub keep: u32,
    pub include_arguments: bool,
    pub key_env: Option<String>,
}

/// A host name as a `Host` header names it, without its port: a DNS name, an IPv4
/// address, or an IPv6 address in brackets (`[fd00::1]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostName(
    #[schemars(pattern(r"^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$"))]
    pub  String,
);

impl HostName {
    /// Whether a `Host` header's name (port and brackets taken off) is this one, as DNS
    /// compares names: case aside.
    pub fn matches(&self, name: &str) -> bool {
        self.0.trim_start_matches('[').trim_end_matches(']').eq_ignore_ascii_case(name)
    }
}

/// A web origin as a browser sends it: `https://app.example.com`, `http://localhost:3000`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Origin(
    #[schemars(pattern(r"^https?://[^/?#\s@]+$"))]
    pub String,
);

impl Serve {
    fn default_max_request_bytes() -> crate::units::Size {
        crate::units::Size::mib(4)
    }
    fn default_max_sessions() -> u32 {
        256
    }
    fn default_max_listen_streams_per_agent() -> u32 {
        64
    }
    fn default_max_subscriptions_per_agent() -> u32 {
        4096
    }
    fn default_session_idle_timeout() -> Duration {
        Duration::from_secs(300)
    }
    fn default_max_connections() -> u32 {
        1024
    }
    fn default_header_timeout() -> Duration {
        Duration::from_secs(30)
    }
    fn default_body_timeout() -> Duration {
        Duration::from_secs(60)
    }
    fn default_max_buffered_request_bytes() -> crate::units::Size {
        crate::units::Size::mib(64)
    }
    fn default_input_timeout() -> Duration {
        Duration::from_secs(300)
    }
}

impl Default for Serve {
    fn default() -> Self {
        Serve {
            bearer_token_env: None,
            bearer_token_file: None,
            max_request_bytes: Serve::default_max_request_bytes(),
            max_sessions: Serve::default_max_sessions(),
            max_sessions_per_agent: None,
            max_listen_streams_per_agent: Serve::default_max_listen_streams_per_agent(),
            max_subscriptions_per_agent: Serve::default_max_subscriptions_per_agent(),
            session_idle_timeout: Serve::default_session_idle_timeout(),
            max_connections: Serve::default_max_connections(),
            header_timeout: Serve::default_header_timeout(),
            body_timeout: Serve::default_body_timeout(),
            max_buffered_request_bytes: Serve::default_max_buffered_request_bytes(),
            input_timeout: Serve::default_input_timeout(),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            audit: None,
            metrics_public: false,
        }
    }
}

/// `serve`'s limits as a resolved composition holds them (`services.serve`,
/// beside the token sources resolve put there), read once per generation; a
/// limit it lacks is `Serve`'s default. Not `Serve` itself: that one refuses
/// the resolved layout's other keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServeLimits {
    pub max_request_bytes: crate::units::Size,
    pub max_sessions: u32,
    pub max_sessions_per_agent: Option<u32>,
    pub max_listen_streams_per_agent: u32,
    pub max_subscriptions_per_agent: u32,
    pub session_idle_timeout: Duration,
    pub max_connections: u32,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub max_buffered_request_bytes: crate::units::Size,
    pub input_timeout: Duration,
    pub allowed_origins: Vec<Origin>,
    pub allowed_hosts: Vec<HostName>,
    /// `serve.audit`, its path made absolute at resolve.
    pub audit: Option<AuditConfig>,
    pub metrics_public: bool,
}

impl From<&Serve> for ServeLimits {
    fn from(serve: &Serve) -> Self {
        ServeLimits {
            max_request_bytes: serve.max_request_bytes,
            max_sessions: serve.max_sessions,
            max_sessions_per_agent: serve.max_sessions_per_agent,
            max_listen_streams_per_agent: serve.max_listen_streams_per_agent,
            max_subscriptions_per_agent: serve.max_subscriptions_per_agent,
            session_idle_timeout: serve.session_idle_timeout,
            max_connections: serve.max_connections,
            header_timeout: serve.header_timeout,
            body_timeout: serve.body_timeout,
            max_buffered_request_bytes: serve.max_buffered_request_bytes,
            input_timeout: serve.input_timeout,
            allowed_origins: serve.allowed_origins.clone(),
            allowed_hosts: serve.allowed_hosts.clone(),
            metrics_public: serve.metrics_public,
            audit: serve.audit.as_ref().map(|a| AuditConfig {
                path: a.path.clone().into(),
                max_size: a.max_size,
                keep: a.keep,
                include_arguments: a.include_arguments,
                key_env: a.key_env.as_ref().map(|e| e.0.clone()),
            }),
        }
    }
}

impl ServeLimits {
    /// The most sessions one agent may have open: `max_sessions_per_agent`, else `max_sessions`.
    pub fn sessions_per_agent(&self) -> u32 {
        self.max_sessions_per_agent.unwrap_or(self.max_sessions)
    }
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits::from(&Serve::default())
    }
}

/// `agents.<name>.serve`: the agent's own token for its endpoint (`/agents/<name>/mcp`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentServe {
    /// The environment variable holding the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<EnvName>,
    /// A file holding the token, read again when it changes; relative to the file that names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_file: Option<String>,
}

/// Where the `serve` token comes from, as a resolved composition has it
/// (`services.serve.bearer_token`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenSource {
    Env(String),
    File(std::path::PathBuf),
}

impl TokenSource {
    /// A token source as the resolved `services.serve` holds one (`{"env": …}` or `{"file": …}`).
    pub fn from_json(source: &serde_json::Value) -> Option<TokenSource> {
        match (source["env"].as_str(), source["file"].as_str()) {
            (Some(name), _) => Some(TokenSource::Env(name.to_owned())),
            (None, Some(file)) => Some(TokenSource::File(file.into())),
            (None, None) => None,
        }
    }

    /// The `default` agent's token source (the top-level `serve`); `None` when it names none.
    pub fn of(services: &std::collections::BTreeMap<String, serde_json::Value>) -> Option<TokenSource> {
        TokenSource::from_json(&services.get("serve")?["bearer_token"])
    }

    /// Where the composition writes it under `at` (`/serve`, `/agents/x/serve`), for diagnostics.
    pub fn pointer(&self, at: &str) -> String {
        match self {
            TokenSource::Env(_) => format!("{at}/bearer_token_env"),
            TokenSource::File(_) => format!("{at}/bearer_token_file"),
        }
    }

    /// Reads the token: surrounding whitespace dropped, empty refused. The
    /// error names the variable or file, never the value.
    pub fn read(&self) -> Result<String, TokenError> {
        let token = match self {
            TokenSource::Env(name) => std::env::var(name).map_err(|_| TokenError::Unset(name.clone()))?,
            TokenSource::File(path) => {
                std::fs::read_to_string(path).map_err(|source| TokenError::Unreadable { path: path.clone(), source })?
            }
        };
        let token = token.trim();
        if token.is_empty() {
            return Err(match self {
                TokenSource::Env(name) => TokenError::EmptyVariable(name.clone()),
                TokenSource::File(path) => TokenError::EmptyFile(path.clone()),
            });
        }
        Ok(token.to_owned())
    }
}

/// Why a token could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("the token variable `{0}` is not set")]
    Unset(String),
    #[error("the token variable `{0}` is empty")]
    EmptyVariable(String),
    #[error("the token file {} cannot be read: {source}", path.display())]
    Unreadable { path: std::path::PathBuf, source: std::io::Error },
    #[error("the token file {} is empty", .0.display())]
    EmptyFile(std::path::PathBuf),
}

/// `services.workspace`: the folder file-based tools work in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workspace {
    /// The workspace root; relative paths resolve against the folder of the file that wrote them. There is no default: absent, null or empty, there is no workspace (not the composition's folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// `services.subprocess`: how every child process (LSP and MCP alike) is spawned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Subprocess {
    /// The only variables of seam's environment that reach a child, besides a mount's own `env`/`env_passthrough`.
    #[serde(default = "Subprocess::default_env_passthrough")]
    pub env_passthrough: Vec<EnvName>,
    /// An argv prefix (a sandbox) put before every spawned command.
    #[serde(default)]
    pub runner: Vec<String>,
}

impl Subprocess {
    pub const DEFAULT_ENV_PASSTHROUGH: [&str; 7] = ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR"];

    fn default_env_passthrough() -> Vec<EnvName> {
        Self::DEFAULT_ENV_PASSTHROUGH.iter().map(|s| EnvName((*s).to_owned())).collect()
    }
}

impl Default for Subprocess {
    fn default() -> Self {
        Subprocess { env_passthrough: Self::default_env_passthrough(), runner: Vec::new() }
    }
}

/// A command to spawn through `services.subprocess`: the part LSP and MCP stdio mounts share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spawn {
    /// The executable, looked up on PATH when it has no `/`.
    #[schemars(length(min = 1))]
    pub command: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment for the child, over `services.subprocess.env_passthrough`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
}

/// The name of an environment variable.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
pub struct EnvName(#[schemars(pattern(r"^[A-Za-z_][A-Za-z0-9_]*$"))] pub String);

/// One agent: a named scope with tool visibility and extra mounts over its parent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Agent")]
pub struct AgentDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent this one inherits tools and mounts from; `default` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Tool entries over the parent's, entry by entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tools_ref")]
    pub tools: Option<serde_json::Map<String, serde_json::Value>>,
    /// Scoped mounts: visible to this agent and its descendants only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<String>,
    /// MCP mounts' prompts by `mcp__<server>__<prompt>` (globs allowed): `false` hides,
    /// `true` shows again; over the parent's entries, the last match wins. Visible by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<std::collections::BTreeMap<String, bool>>,
    /// MCP mounts' resources and templates by mount id (globs allowed): `false` hides a
    /// mount's, `true` shows them again; over the parent's entries, the last match wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<std::collections::BTreeMap<String, bool>>,
    /// The agent's own token over HTTP; without one it inherits its parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve: Option<AgentServe>,
    /// Limits on what the agent's requests use, over its parent's; each agent counts on
    /// its own, whatever its clients' era or session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quota: Vec<crate::quota::QuotaDoc>,
    /// How its MCP tools reach its model (`all`, `search`, `auto`); its parent's when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disclosure: Option<Disclosure>,
}

fn tools_ref(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "$ref": "#/$defs/Tools" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(annotations: serde_json::Value) -> crate::runtime::ToolSpec {
        let definition = serde_json::json!({ "name": "t", "inputSchema": { "type": "object" }, "annotations": annotations });
        crate::runtime::ToolSpec {
            name: "t".into(),
            definition: std::sync::Arc::new(definition.as_object().unwrap().clone()),
            ruled_as: None,
        }
    }

    /// `{ when: destructive }` asks about a tool that may destroy as MCP's defaults read
    /// its annotations: one that says nothing may; a read-only one, or one that says
    /// `destructiveHint: false`, may not.
    #[test]
    fn approval_when_destructive_reads_the_annotations_with_mcp_s_defaults() {
        let destructive = Approve::When(ApproveWhen { when: ApproveCondition::Destructive });
        assert!(destructive.asks_for(&tool(serde_json::json!(null))));
        assert!(destructive.asks_for(&tool(serde_json::json!({}))));
        assert!(destructive.asks_for(&tool(serde_json::json!({ "readOnlyHint": false }))));
        assert!(!destructive.asks_for(&tool(serde_json::json!({ "readOnlyHint": true, "destructiveHint": true }))));
        assert!(!destructive.asks_for(&tool(serde_json::json!({ "destructiveHint": false }))));
        assert!(Approve::Mode(ApproveMode::Ask).asks_for(&tool(serde_json::json!({ "readOnlyHint": true }))));
        assert!(!Approve::Mode(ApproveMode::Never).asks_for(&tool(serde_json::json!({}))));
    }
}

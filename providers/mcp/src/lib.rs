//! The MCP surface: MCP servers whose discovered tools appear as
//! `mcp__<server>__<tool>`. This crate holds the `mcp.stdio` and `mcp.http`
//! kinds' configuration: namespaces, transports, filters and reconnect budgets.

use std::collections::BTreeMap;

pub mod asks;
pub mod failure;
pub mod oauth;
mod oauth_settings;
pub mod runtime;

pub use oauth_settings::{Auth, ClientIdentity, Grant, OAuth, SigningAlgorithm};
use oauth_settings::{oauth_environment, resolve_oauth};

use schemars::JsonSchema;
use seam_engine::codes::CodeDoc;
use seam_engine::diagnostic::escape_pointer_segment;
use seam_engine::model::{EnvName, Spawn};
use seam_engine::surface::{Claim, Exposure, FixedTool, Kind, MountCx, MountKind, Requirement, ResolvedMount, Surface};
use seam_engine::units::Duration;
use serde::{Deserialize, Serialize};

/// Every discovered tool is named `mcp__<server>__<tool>`.
pub const TOOL_PREFIX: &str = "mcp__";
/// The longest server namespace.
pub const MAX_NAMESPACE: usize = 32;

pub struct McpSurface;

pub static SURFACE: McpSurface = McpSurface;

fn startup_timeout() -> Duration {
    Duration::from_secs(10)
}
fn call_timeout() -> Duration {
    Duration::from_secs(60)
}
fn yes() -> bool {
    true
}
fn initial_delay() -> Duration {
    Duration::from_millis(500)
}
fn max_delay() -> Duration {
    Duration::from_secs(30)
}
fn max_attempts() -> u32 {
    10
}
fn allow_all() -> Vec<String> {
    vec!["*".into()]
}

/// Which discovered tools are imported: `allow` first, then `deny` (globs over raw tool names).
/// Which of a server's tools, prompts or resources a mount serves: globs over
/// raw names (tools, prompts) or over URIs and URI templates (resources).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameFilter {
    #[serde(default = "allow_all")]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

impl Default for NameFilter {
    fn default() -> Self {
        NameFilter { allow: allow_all(), deny: Vec::new() }
    }
}

/// Which roots a server is given when it asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RootsFrom {
    /// The composition's workspace root (`services.workspace.root`), or none.
    #[default]
    Workspace,
    /// The roots of the client whose call is running, when it offers roots and the
    /// question can be told apart; the workspace root otherwise.
    Client,
}

/// Which revision of MCP seam speaks to a mount's server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// 2025-11-25 and before: the `initialize` handshake, a session.
    #[default]
    Legacy,
    /// 2026-07-28: `server/discover`, no session, each request self-contained.
    Modern,
    /// Whichever the server speaks: `server/discover` first, and `initialize` when the
    /// server answers it as a legacy server does (a JSON-RPC error for that request) or
    /// not at all within 10 s, which the connection is given beyond `startup_timeout`.
    /// One more round trip per connection.
    Auto,
}

/// How clients see a server's tool and prompt names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Naming {
    /// `mcp__<server>__<name>`: no two mounts' names can meet.
    #[default]
    Prefixed,
    /// The server's own names. A name that something else an agent sees also
    /// serves (another mount of raw names, a fixed tool) is served to that agent
    /// by neither, and `/status` says so.
    Raw,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reconnect {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "initial_delay")]
    pub initial_delay: Duration,
    #[serde(default = "max_delay")]
    pub max_delay: Duration,
    #[serde(default = "max_attempts")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_attempts: u32,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect { enabled: true, initial_delay: initial_delay(), max_delay: max_delay(), max_attempts: max_attempts() }
    }
}

/// Fields both transports share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Common {
    /// A failure to start rejects the whole generation instead of activating the mount as `failed`.
    #[serde(default)]
    pub required: bool,
    #[serde(default = "startup_timeout")]
    pub startup_timeout: Duration,
    #[serde(default = "call_timeout")]
    pub call_timeout: Duration,
    #[serde(default)]
    pub tools: NameFilter,
    /// The server's prompts this mount serves, by raw name.
    #[serde(default)]
    pub prompts: NameFilter,
    /// The server's resources and resource templates this mount serves, by URI and by `uriTemplate`.
    #[serde(default)]
    pub resources: NameFilter,
    /// Which roots the server is given when it asks (`roots/list`).
    #[serde(default)]
    pub roots: RootsFrom,
    /// How clients see the server's tool and prompt names: `prefixed` (`mcp__<server>__<name>`)
    /// or `raw`, as the server wrote them. Agents' rules name the tools `mcp__<server>__<name>` either way.
    #[serde(default)]
    pub naming: Naming,
    /// The skills the server serves over MCP's skills extension (SEP-2640).
    #[serde(default)]
    pub skills: SkillsImport,
    /// The revision of MCP spoken to the server: `legacy` (`initialize`, a session) or
    /// `modern` (2026-07-28: `server/discover`, no session).
    #[serde(default)]
    pub protocol: Protocol,
    #[serde(default)]
    pub reconnect: Reconnect,
    /// Whether the mount serves only what the composition's lock holds for it
    /// (`NAME.lock.json`, written by `seam lock`): `off`, `locked` (a tool, prompt or
    /// resource template that is new or differs from the lock is held: not listed, not
    /// called), or `{ new: hold | serve }` (locked, and a new one held or served).
    #[serde(default)]
    pub pin: Pin,
    /// How the server's tools are shown to clients, by the server's name: another
    /// `name`, a `description` replaced or appended to, and `arguments` fixed, hidden or
    /// given defaults (seam fills them in on the way to the server). Agents' rules, and
    /// a pin's digests, still go by the server's own tool.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rewrite: BTreeMap<String, Rewrite>,
    /// Whether agents share one connection to the server (`shared`, the default) or each
    /// agent that sees the mount has its own (`per-agent`: its own child over stdio), so
    /// that what a server keeps per connection (session resources, the roots it was
    /// told) is never one agent's seen by another. A reload that changes which agents
    /// see the mount starts it again.
    #[serde(default)]
    pub isolation: Isolation,
    /// How the server's tools reach agents' models: `all` (listed), `search` (deferred:
    /// found with seam's `tool_search`) or `auto`; over each agent's `disclosure` for
    /// this mount's tools. Each agent's own when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disclosure: Option<seam_engine::model::DisclosureMode>,
    /// The lock's entry for this mount, put here at resolve when it pins; never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub locked: Option<seam_engine::lock::MountLock>,
}

/// How one of the server's tools is shown to clients (`rewrite`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rewrite {
    /// The name clients see, named as the mount names its tools (`mcp__<mount>__<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The description clients see: this text, or `{ append: TEXT }` after the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<DescriptionRewrite>,
    #[serde(default)]
    pub arguments: ArgumentsRewrite,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DescriptionRewrite {
    Replace(String),
    Append {
        /// Added after the server's description, on a line of its own.
        append: String,
    },
}

/// What seam does with a tool's arguments on the way to its server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgumentsRewrite {
    /// Always sent with these values; clients do not see them, and a value a client
    /// sends anyway is overridden (and the override logged).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub fixed: serde_json::Map<String, serde_json::Value>,
    /// Not shown to clients, and not sent unless fixed or defaulted: each must be
    /// optional to the server, or fixed, or given a default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// Sent with these values when a client sends none.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub defaults: serde_json::Map<String, serde_json::Value>,
}

/// `isolation`: whom one connection to the server serves: `shared`, `per-agent`,
/// `per-session`, or `{ per-session: { max_connections, idle_timeout } }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Isolation {
    Mode(IsolationMode),
    PerSession(PerSessionIsolation),
}

impl Default for Isolation {
    fn default() -> Self {
        Isolation::Mode(IsolationMode::Shared)
    }
}

impl Isolation {
    /// The limits of a mount with a connection per client session; `None` for any other.
    pub fn per_session(&self) -> Option<SessionConnections> {
        match self {
            Isolation::Mode(IsolationMode::PerSession) => Some(SessionConnections::default()),
            Isolation::PerSession(PerSessionIsolation { per_session }) => Some(*per_session),
            Isolation::Mode(_) => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IsolationMode {
    /// Every agent that sees the mount.
    Shared,
    /// One agent: each has its own.
    PerAgent,
    /// One client session (a 2026-07-28 client, which has none: one client identity),
    /// with the default limits.
    PerSession,
}

/// A connection per client session, with its limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PerSessionIsolation {
    #[serde(rename = "per-session")]
    pub per_session: SessionConnections,
}

/// How many connections a per-session mount keeps, and how long an idle one lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionConnections {
    /// The most client sessions the mount keeps a connection for at once: a request of
    /// another session, past it, is refused (`MCP_SESSION_CONNECTIONS_FULL`) until one ends.
    #[serde(default = "max_session_connections")]
    #[schemars(range(min = 1, max = 1024))]
    pub max_connections: u32,
    /// A session's connection that has carried no request for this long is ended (a
    /// 2026-07-28 client has no session whose end could end it).
    #[serde(default = "session_idle_timeout")]
    pub idle_timeout: Duration,
}

impl Default for SessionConnections {
    fn default() -> Self {
        SessionConnections { max_connections: max_session_connections(), idle_timeout: session_idle_timeout() }
    }
}

fn max_session_connections() -> u32 {
    16
}
fn session_idle_timeout() -> Duration {
    Duration::from_secs(600)
}

/// `pin`: `off`, `locked`, or `{ new: hold | serve }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Pin {
    Mode(PinMode),
    Locked(PinLocked),
}

impl Default for Pin {
    fn default() -> Self {
        Pin::Mode(PinMode::Off)
    }
}

impl Pin {
    /// Whether the mount is held to the lock.
    pub fn is_locked(&self) -> bool {
        *self != Pin::Mode(PinMode::Off)
    }

    /// Whether a definition the lock does not have is served (else it is held).
    pub fn serves_new(&self) -> bool {
        matches!(self, Pin::Mode(PinMode::Off) | Pin::Locked(PinLocked { new: NewDefinitions::Serve }))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PinMode {
    Off,
    /// Held to the lock; what is new is held too.
    Locked,
}

/// Held to the lock, saying what becomes of a definition the lock does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PinLocked {
    pub new: NewDefinitions,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NewDefinitions {
    Hold,
    Serve,
}

/// Whether a server's skills join the agents' skill catalog.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillsImport {
    /// Add the skills the server lists (`skills/list`) to the `skill` tool of the agents
    /// that see this mount, ranked below every skill on disk; a body is read when the
    /// skill is invoked and refused unless its digest matches the list. Off by default:
    /// a server's SKILL.md is instructions the model follows.
    #[serde(default)]
    pub import: bool,
}

/// `mcp.stdio`: an MCP server run as a child process (through `services.subprocess`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StdioServer {
    #[serde(default)]
    #[schemars(skip)]
    pub kind: String,
    #[serde(flatten)]
    pub spawn: Spawn,
    /// Variables of seam's environment passed on, beyond `services.subprocess.env_passthrough`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_passthrough: Vec<EnvName>,
    /// The working directory, relative to the file that names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(flatten)]
    pub common: Common,
}

/// `mcp.http`: an MCP server over Streamable HTTP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpServer {
    #[serde(default)]
    #[schemars(skip)]
    pub kind: String,
    #[schemars(pattern(r"^https?://"))]
    pub url: String,
    /// Literal headers; secrets go in `headers_env` or `bearer_token_env`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Headers whose value is read from an environment variable at connect time: header → variable.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers_env: BTreeMap<String, EnvName>,
    /// The variable holding a bearer token for `Authorization`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<EnvName>,
    /// How seam proves who it is to a server that authorizes with OAuth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
    #[serde(flatten)]
    pub common: Common,
}

static STDIO: Kind<StdioServer> = Kind {
    name: "mcp.stdio",
    registry: "mcp",
    resolve: resolve_stdio,
    build: Some(runtime::build_stdio),
    stand_in: Some(runtime::stand_in_stdio),
};
static HTTP: Kind<HttpServer> = Kind {
    name: "mcp.http",
    registry: "mcp",
    resolve: resolve_http,
    build: Some(runtime::build_http),
    stand_in: Some(runtime::stand_in_http),
};

/// A namespace must fit `^[A-Za-z0-9_-]{1,32}$`; seam also refuses `__` and a
/// leading or trailing `_`, which would make `mcp__<server>__<tool>` ambiguous.
pub fn namespace_problem(id: &str) -> Option<String> {
    let charset = !id.is_empty() && id.len() <= MAX_NAMESPACE && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
    if !charset {
        return Some(format!("MCP server namespace `{id}` must be 1 to {MAX_NAMESPACE} letters, digits, `_` or `-`"));
    }
    if id.contains("__") || id.starts_with('_') || id.ends_with('_') {
        return Some(format!(
            "MCP server namespace `{id}` may not contain `__` or start or end with `_`: tool names `{TOOL_PREFIX}<server>__<tool>` would be ambiguous"
        ));
    }
    None
}

fn resolve_common(cx: &mut MountCx<'_>, common: &mut Common) -> Option<()> {
    let mut ok = true;
    if common.pin.is_locked() {
        common.locked = cx.lock_entry("/pin");
    }
    if let Some(problem) = namespace_problem(cx.id) {
        cx.report_at_key(crate::codes::MCP_NAMESPACE_INVALID, "", problem);
        ok = false;
    }
    if common.reconnect.initial_delay > common.reconnect.max_delay {
        let message =
            format!("`initial_delay` ({}) is longer than `max_delay` ({})", common.reconnect.initial_delay, common.reconnect.max_delay);
        cx.report(crate::codes::RECONNECT_DELAY_ORDER, "/reconnect/initial_delay", message);
        ok = false;
    }
    ok &= check_rewrites(cx, common);
    let filters = [
        ("tools", &common.tools, crate::codes::MCP_TOOL_GLOB_INVALID),
        ("prompts", &common.prompts, crate::codes::MCP_FILTER_GLOB_INVALID),
        ("resources", &common.resources, crate::codes::MCP_FILTER_GLOB_INVALID),
    ];
    for (field, filter, code) in filters {
        for (list, globs) in [("allow", &filter.allow), ("deny", &filter.deny)] {
            for (i, g) in globs.iter().enumerate() {
                // `*` and plain names are valid globs; only other patterns need parsing.
                if let Err(e) = if g == "*" || !seam_engine::tool_rules::is_glob(g) { Ok(()) } else { globset::Glob::new(g).map(drop) } {
                    cx.report(code, &format!("/{field}/{list}/{i}"), format!("`{g}` is not a valid glob: {e}"));
                    ok = false;
                }
            }
        }
    }
    ok.then_some(())
}

fn resolved(cx: &MountCx<'_>, common: &Common, config: impl seam_engine::surface::MountConfig + 'static) -> ResolvedMount {
    let (required, raw) = (common.required, common.naming == Naming::Raw);
    let mut r = ResolvedMount::new(config, Exposure::Dynamic { prefix: format!("{TOOL_PREFIX}{}__", cx.id), raw });
    if raw {
        // A literal `allow` entry no `deny` glob covers is a name clients will see, if the server has it.
        let deny: Vec<globset::GlobMatcher> =
            common.tools.deny.iter().filter_map(|g| globset::Glob::new(g).ok()).map(|g| g.compile_matcher()).collect();
        r.names = common
            .tools
            .allow
            .iter()
            .enumerate()
            .filter(|(_, name)| !seam_engine::tool_rules::is_glob(name) && !deny.iter().any(|d| d.is_match(name.as_str())))
            .map(|(i, name)| (name.clone(), format!("{}/tools/allow/{i}", cx.pointer)))
            .collect();
    }
    r.required = required;
    r.disclosure = common.disclosure;
    if common.skills.import {
        r.contributes.push("skills");
    }
    r.claims.push(Claim {
        space: "mcp.namespace",
        key: cx.id.to_ascii_lowercase(),
        code: crate::codes::MCP_NAMESPACE_DUPLICATE,
        what: format!("MCP namespace `{}` (namespaces are compared without case)", cx.id.to_ascii_lowercase()),
        pointer: cx.pointer.clone(),
    });
    r
}

/// A mount's `rewrite`s: no two give one name, no argument is both fixed and defaulted,
/// and (when the lock has the server's definition) no hidden argument the server
/// requires is left without a value.
fn check_rewrites(cx: &mut MountCx<'_>, common: &Common) -> bool {
    let mut ok = true;
    let mut names: BTreeMap<&str, &str> = BTreeMap::new();
    for (raw, w) in &common.rewrite {
        let shown = w.name.as_deref().unwrap_or(raw);
        let at = |rest: &str| format!("/rewrite/{}{rest}", escape_pointer_segment(raw));
        if let Some(other) = names.insert(shown, raw) {
            cx.report(crate::codes::MCP_REWRITE_COLLISION, &at("/name"), format!("`{raw}` and `{other}` would both be shown as `{shown}`"));
            ok = false;
        }
        for key in w.arguments.fixed.keys().filter(|k| w.arguments.defaults.contains_key(*k)) {
            let message = format!("argument `{key}` of `{raw}` is both fixed and given a default");
            cx.report(
                crate::codes::MCP_REWRITE_ARGUMENT_CONFLICT,
                &at(&format!("/arguments/defaults/{}", escape_pointer_segment(key))),
                message,
            );
            ok = false;
        }
        let locked = common.locked.as_ref().and_then(|l| l.tools.get(raw));
        let required = locked.and_then(|l| l.definition["inputSchema"]["required"].as_array().cloned()).unwrap_or_default();
        for (i, key) in w.arguments.hidden.iter().enumerate() {
            let valued = w.arguments.fixed.contains_key(key) || w.arguments.defaults.contains_key(key);
            if !valued && required.iter().any(|r| r == key) {
                let message =
                    format!("`{raw}` requires argument `{key}` (so says its definition in the lock), and it is hidden with no value");
                cx.report(crate::codes::MCP_REWRITE_HIDDEN_REQUIRED, &at(&format!("/arguments/hidden/{i}")), message).help =
                    Some(format!("fix it (`fixed: {{ {key}: VALUE }}`) or give it a default"));
                ok = false;
            }
        }
    }
    // A rename onto a name another `rewrite` keeps for its own tool.
    for (raw, w) in &common.rewrite {
        let Some(name) = w.name.as_deref().filter(|n| *n != raw) else { continue };
        if common.rewrite.get(name).is_some_and(|other| other.name.is_none()) {
            let at = format!("/rewrite/{}/name", escape_pointer_segment(raw));
            cx.report(
                crate::codes::MCP_REWRITE_COLLISION,
                &at,
                format!("`{raw}` would be shown as `{name}`, the name of the server's tool `{name}`"),
            );
            ok = false;
        }
    }
    ok
}

fn resolve_stdio(cx: &mut MountCx<'_>, mut config: StdioServer) -> Option<ResolvedMount> {
    resolve_common(cx, &mut config.common)?;
    let mut requirements = vec![cx.spawn(&mut config.spawn)];
    if let Some(cwd) = &mut config.cwd {
        let path = cx.path("/cwd", cwd);
        *cwd = path.display().to_string();
        requirements.push(Requirement::Directory { path, pointer: format!("{}/cwd", cx.pointer) });
    }
    let common = config.common.clone();
    let mut r = resolved(cx, &common, config);
    r.needs = vec!["subprocess"];
    r.requirements = requirements;
    Some(r)
}

fn resolve_http(cx: &mut MountCx<'_>, mut config: HttpServer) -> Option<ResolvedMount> {
    resolve_common(cx, &mut config.common)?;
    let mut ok = true;
    for name in config.headers.keys() {
        let at = format!("/headers/{}", escape_pointer_segment(name));
        if name.eq_ignore_ascii_case("authorization") {
            cx.report(seam_engine::codes::SECRET_INLINE, &at, "an `Authorization` header would put a secret in the composition").help =
                Some("use `bearer_token_env: VAR`, or `headers_env: { Authorization: VAR }`".into());
            ok = false;
        } else if cx.is_interpolated(&at) {
            cx.report(
                seam_engine::codes::SECRET_INTERPOLATED,
                &at,
                format!("header `{name}` is filled from `${{…}}`: its value would be kept and shown with the composition"),
            )
            .help = Some(format!("read it at connect time instead: `headers_env: {{ {name}: VAR }}`"));
            ok = false;
        }
    }
    if cx.refuse_secret_in_url(
        "/url",
        &config.url,
        "`bearer_token_env: VAR`, `headers_env: { Header: VAR }`, or the whole URL from `${VAR}`",
    ) {
        ok = false;
    }
    let mut requirements = Vec::new();
    if let Some(auth) = &mut config.auth {
        ok &= resolve_oauth(cx, &mut auth.oauth, &config.bearer_token_env, &config.headers_env, &mut requirements);
        // Agents' identities never share a connection.
        if auth.oauth.per_agent && config.common.isolation == Isolation::default() {
            config.common.isolation = Isolation::Mode(IsolationMode::PerAgent);
        }
        if auth.oauth.per_agent && config.common.isolation.per_session().is_some() {
            let message = "`per_agent` tokens are sent on each agent's own connection: `isolation: per-session` keeps no agent's";
            cx.report(crate::codes::MCP_OAUTH_CONFLICT, "/auth/oauth/per_agent", message).help =
                Some("drop `isolation`, or make it `per-agent`".into());
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    if (config.auth.is_some() || config.bearer_token_env.is_some() || !config.headers_env.is_empty())
        && seam_engine::surface::in_clear_beyond_loopback(&config.url)
    {
        cx.report(
            seam_engine::codes::SECRET_SENT_IN_CLEAR,
            "/url",
            format!(
                "the token and headers from the environment go to `{}` over plain http://, readable by anyone on the way",
                seam_engine::redact::url(&config.url)
            ),
        )
        .help = Some("use https://".into());
    }
    let common = config.common.clone();
    let oauth = config.auth.as_ref().map(|a| a.oauth.clone());
    let url = config.url.clone();
    let mut r = resolved(cx, &common, config);
    r.requirements.extend(requirements);
    if let Some(oauth) = oauth {
        let (mount, url) = (cx.id.to_owned(), url);
        r.environment = Some(seam_engine::surface::EnvironmentProbe::new(move |_| oauth_environment(&mount, &url, &oauth)));
    }
    Some(r)
}

impl Surface for McpSurface {
    fn service(&self) -> &'static str {
        "mcp"
    }
    fn kinds(&self) -> &'static [&'static dyn MountKind] {
        static KINDS: [&dyn MountKind; 2] = [&STDIO, &HTTP];
        &KINDS
    }
    fn tools(&self) -> &'static [&'static dyn FixedTool] {
        &[]
    }
    fn dynamic_tool_prefix(&self) -> Option<&'static str> {
        Some(TOOL_PREFIX)
    }
    fn codes(&self) -> &'static [CodeDoc] {
        codes::CODES
    }
}

/// The codes this surface emits, one constant each (`seam_engine::code_table!`).
pub mod codes {
    seam_engine::code_table! { CODES {
        MCP_NAMESPACE_INVALID Error "An MCP mount id (its namespace) is not 1–32 of `[A-Za-z0-9_-]`, or has `__` or an edge `_`.";
        MCP_NAMESPACE_DUPLICATE Error "Two MCP mounts have namespaces equal but for case.";
        MCP_TOOL_GLOB_INVALID Error "A `tools.allow`/`tools.deny` glob does not parse.";
        MCP_REWRITE_COLLISION Error "Two of a mount's `rewrite`s give their tools one name, or a rename takes the name of a tool another `rewrite` keeps.";
        MCP_REWRITE_ARGUMENT_CONFLICT Error "A `rewrite` both fixes an argument and gives it a default.";
        MCP_REWRITE_HIDDEN_REQUIRED Error "A `rewrite` hides an argument the server requires (its definition in the lock says so) with no fixed value or default.";
        MCP_FILTER_GLOB_INVALID Error "A `prompts` or `resources` `allow`/`deny` glob does not parse.";
        MCP_UNAVAILABLE Error "(tool result) The MCP server is not connected now (starting, reconnecting, or out of reconnect attempts).";
        MCP_OAUTH_CONFLICT Error "`auth.oauth` beside another way to authorize (`bearer_token_env`, an `Authorization` header), two ways for the client to prove itself (`client_secret_env`, `client_secret_file`, `private_key_file`), a setting its `grant` would leave unread (`private_key_file` with `authorization_code`, `client_metadata_url` with `client_credentials`), or `per_agent` with `isolation: per-session`.";
        MCP_OAUTH_ISSUER_MISMATCH Error "(start, reload) As a mount's `detail` in `/status`, and `seam login`'s error: the MCP server's metadata names an authorization server other than the `issuer` its `auth.oauth` pins: seam sends it no secret, login or token request, and the mount does not come up. Check which server the URL reaches, or the pin.";
        MCP_OAUTH_LOGIN_NEEDED Warning "(`--environment`, a `degraded` mount's `code` in `/status`, and a tool result) A mount whose tokens a person gets (`grant: authorization_code`) has none in its state file, or none the server takes: run `seam login FILE MOUNT`, and the mount, which waits for it, comes up. As a call's result, and the mount's `code` until the login: the server asks for more scope than the person gave; the message names the `seam login … --scope` to run.";
        MCP_OAUTH_INCOMPLETE Error "`auth.oauth` lacks what it needs: a client secret or key without its `client_id`, or `grant: client_credentials` without a `client_id` and its secret or key.";
        MCP_SESSION_CONNECTIONS_FULL Error "(tool result) A mount with `isolation: per-session` has a connection for as many client sessions as its `max_connections` allows (or the calling agent for as many 2026-07-28 clients as one agent may), and another session's request was refused: it may try again when a session ends or idles out.";
        MCP_CALL_FAILED Error "(tool result) The MCP server answered the call with a JSON-RPC error.";
        MCP_URL_ELICITATION_REQUIRED Error "(tool result) The call's server wants the user to open URLs first (JSON-RPC -32042): an MCP client gets the server's error as it is; `seam call` shows this result.";
        MCP_FRAME_TOO_LARGE Error "(tool result) The MCP server answered the call with a line longer than seam reads from a stdio server (16 MiB); the line was discarded and the call failed at once.";
        MCP_TASK_REQUIRED Error "(tool result) The server answered the call with a task (SEP-2663), though the calling client did not declare the tasks extension and so cannot hold one.";
        MCP_INPUT_ROUNDS_EXCEEDED Error "(tool result) A 2026-07-28 server asked for input more than `MAX_INPUT_ROUNDS` (10) rounds over in one call; the call was given up.";
        MCP_INPUT_REQUIRED Error "(tool result) A 2026-07-28 server asked for input the call could not give: it has no MCP client behind it (`seam call`), or the client did not declare or did not answer a question, or the question is of no kind a client is asked.";
        MCP_OUTPUT_INVALID Error "(tool result) `structuredContent` is missing or does not match the tool's advertised output schema.";
        RECONNECT_DELAY_ORDER Error "`reconnect.initial_delay` is longer than `reconnect.max_delay`.";
    } }
}

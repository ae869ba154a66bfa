//! The Web surface: `web_search` and `web_fetch` over pinned, replaceable
//! providers. `lib.rs` holds the kinds' configuration (types, defaults, ranges)
//! and the pin checks; `service` the run time (selection at every call, the two
//! tools), `search` the search providers, `fetch` the fetcher and `guard` its
//! private-network defence.

pub mod fetch;
pub mod guard;
pub mod search;
pub mod service;

pub use service::WebError;

use schemars::Schema;
use schemars::{JsonSchema, SchemaGenerator};
use seam_engine::codes::CodeDoc;
use seam_engine::surface::{
    Exposure, FixedTool, Kind, MountCx, MountKind, Requirement, ResolvedMount, Serving, StatusCx, Surface, SurfaceCx, Tool,
};
use seam_engine::units::{Duration, Size};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// Why a provider could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The provider's HTTP client could not be built.
    #[error("cannot build the HTTP client: {source}")]
    HttpClient {
        #[source]
        source: reqwest::Error,
    },
}

pub const SEARCH: &str = "web.search";
pub const FETCH: &str = "web.fetch";

pub struct WebSurface;

pub static SURFACE: WebSurface = WebSurface;

/// `services.web`: which provider each tool uses. Absent = exactly one usable provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebService {
    /// The mount id of the search provider to use.
    #[serde(default)]
    pub search: Option<String>,
    /// The mount id of the fetch provider to use.
    #[serde(default)]
    pub fetch: Option<String>,
}

fn default_deepseek_key_env() -> String {
    "DEEPSEEK_API_KEY".into()
}
fn default_deepseek_url() -> String {
    "https://api.deepseek.com/anthropic/v1".into()
}
fn default_deepseek_model() -> String {
    "deepseek-v4-flash".into()
}
fn default_api_version() -> String {
    "2023-06-01".into()
}
fn default_max_tokens() -> u32 {
    4096
}
fn default_max_uses() -> u32 {
    5
}

/// `web.search.deepseek`: search as an auxiliary Anthropic-compatible model call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeepseekSearch {
    #[serde(default)]
    #[schemars(skip)]
    pub kind: String,
    /// The environment variable holding the API key (read at call time, never printed).
    #[serde(default = "default_deepseek_key_env")]
    pub api_key_env: String,
    /// A file holding the API key, re-read on every call; wins over `api_key_env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<String>,
    #[serde(default = "default_deepseek_url")]
    #[schemars(pattern(r"^https?://"))]
    pub base_url: String,
    #[serde(default = "default_deepseek_model")]
    pub model: String,
    #[serde(default = "default_api_version")]
    pub api_version: String,
    #[serde(default = "default_max_tokens")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_tokens: u32,
    /// The most searches the model may run for one query.
    #[serde(default = "default_max_uses")]
    #[schemars(range(min = 1, max = 100))]
    pub max_uses: u32,
}

/// `web.search.searxng`: a SearXNG instance's JSON API.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearxngSearch {
    #[serde(default)]
    #[schemars(skip)]
    pub kind: String,
    #[schemars(pattern(r"^https?://"))]
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Per-request timeout; the tool's budget applies when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
}

fn default_max_url_length() -> u32 {
    2048
}
fn default_max_response_bytes() -> Size {
    Size::mb(5)
}
fn default_max_body_chars() -> u64 {
    100_000
}
fn default_fetch_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_max_redirects() -> u32 {
    5
}
fn default_user_agent() -> String {
    concat!("seam/", env!("CARGO_PKG_VERSION")).into()
}

/// `web.fetch.http`: a fetcher with a private-network guard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpFetch {
    #[serde(default)]
    #[schemars(skip)]
    pub kind: String,
    #[serde(default = "default_max_url_length")]
    #[schemars(range(min = 16, max = 65_536))]
    pub max_url_length: u32,
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: Size,
    #[serde(default = "default_max_body_chars")]
    #[schemars(range(min = 1, max = 100_000_000))]
    pub max_body_chars: u64,
    #[serde(default = "default_fetch_timeout")]
    pub timeout: Duration,
    /// Redirects followed, each hop checked by the guard; 0 follows none.
    #[serde(default = "default_max_redirects")]
    #[schemars(range(min = 0, max = 20))]
    pub max_redirects: u32,
    #[serde(default = "default_user_agent")]
    pub user_agent: String,
    /// Let the model fetch loopback, private and link-local addresses. Off by default.
    #[serde(default)]
    pub allow_private_networks: bool,
    /// Hosts exempt from the private-network guard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
}

fn fetch_tool_timeout() -> Duration {
    Duration::from_secs(30)
}
fn search_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_max_results() -> u32 {
    8
}
fn default_max_queries() -> u32 {
    4
}

/// Settings of the `web_search` tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchSettings {
    #[serde(default = "search_timeout")]
    pub timeout: Duration,
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = 100))]
    pub max_results: u32,
    #[serde(default = "default_max_queries")]
    #[schemars(range(min = 1, max = 16))]
    pub max_queries: u32,
}

fn default_max_output_chars() -> u64 {
    200_000
}

/// Settings of the `web_fetch` tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchSettings {
    #[serde(default = "fetch_tool_timeout")]
    pub timeout: Duration,
    #[serde(default = "default_max_output_chars")]
    #[schemars(range(min = 1, max = 100_000_000))]
    pub max_output_chars: u64,
}

static DEEPSEEK: Kind<DeepseekSearch> =
    Kind { name: "web.search.deepseek", registry: SEARCH, resolve: resolve_deepseek, build: Some(service::build_deepseek), stand_in: None };
static SEARXNG: Kind<SearxngSearch> =
    Kind { name: "web.search.searxng", registry: SEARCH, resolve: resolve_searxng, build: Some(service::build_searxng), stand_in: None };
static FETCHER: Kind<HttpFetch> =
    Kind { name: "web.fetch.http", registry: FETCH, resolve: resolve_fetch, build: Some(service::build_fetch), stand_in: None };
static SEARCH_TOOL: Tool<WebSearchSettings> = Tool::new("web_search", &[SEARCH])
    .served(Serving {
        definition: service::search_definition,
        call: service::call_search,
        owns_timeout: false,
        invalid_arguments: codes::WEB_INVALID_ARGUMENTS,
    })
    .selecting(service::selects_search)
    .guided("`web_search`: for what may have changed since you learned it, or what you do not know; cite the sources you use.");
static FETCH_TOOL: Tool<WebFetchSettings> = Tool::new("web_fetch", &[FETCH])
    .served(Serving {
        definition: service::fetch_definition,
        call: service::call_fetch,
        // Its timeout gives WEB_FETCH_TIMEOUT (the mount's and the tool's, whichever is shorter), never TOOL_TIMEOUT.
        owns_timeout: true,
        invalid_arguments: codes::WEB_INVALID_ARGUMENTS,
    })
    .selecting(service::selects_fetch)
    .guided("`web_fetch`: to read a page whose URL you have, before you rely on more of it than a search result shows.");

fn resolve_deepseek(cx: &mut MountCx<'_>, mut config: DeepseekSearch) -> Option<ResolvedMount> {
    let mut requirements = Vec::new();
    if let Some(file) = &mut config.api_key_file {
        let path = cx.path("/api_key_file", file);
        *file = path.display().to_string();
        requirements.push(Requirement::ReadableFile { path, pointer: format!("{}/api_key_file", cx.pointer) });
    }
    if cx.refuse_secret_in_url("/base_url", &config.base_url, "`api_key_env: VAR` or `api_key_file: PATH`") {
        return None;
    }
    if seam_engine::surface::in_clear_beyond_loopback(&config.base_url) {
        cx.report(
            seam_engine::codes::SECRET_SENT_IN_CLEAR,
            "/base_url",
            format!(
                "the API key goes to `{}` over plain http://, readable by anyone on the way",
                seam_engine::redact::url(&config.base_url)
            ),
        )
        .help = Some("use https://".into());
    }
    let mut r = ResolvedMount::new(config, Exposure::Tool("web_search"));
    r.requirements = requirements;
    Some(r)
}

fn resolve_searxng(cx: &mut MountCx<'_>, config: SearxngSearch) -> Option<ResolvedMount> {
    if cx.refuse_secret_in_url("/base_url", &config.base_url, "the whole URL from `${VAR}`") {
        return None;
    }
    Some(ResolvedMount::new(config, Exposure::Tool("web_search")))
}

fn resolve_fetch(_: &mut MountCx<'_>, mut config: HttpFetch) -> Option<ResolvedMount> {
    for host in &mut config.allow_hosts {
        *host = host.to_ascii_lowercase();
    }
    config.allow_hosts.sort();
    config.allow_hosts.dedup();
    Some(ResolvedMount::new(config, Exposure::Tool("web_fetch")))
}

impl Surface for WebSurface {
    fn service(&self) -> &'static str {
        "web"
    }
    fn kinds(&self) -> &'static [&'static dyn MountKind] {
        static KINDS: [&dyn MountKind; 3] = [&DEEPSEEK, &SEARXNG, &FETCHER];
        &KINDS
    }
    fn tools(&self) -> &'static [&'static dyn FixedTool] {
        static TOOLS: [&dyn FixedTool; 2] = [&SEARCH_TOOL, &FETCH_TOOL];
        &TOOLS
    }
    fn service_schema(&self, g: &mut SchemaGenerator) -> Option<Schema> {
        Some(g.subschema_for::<WebService>())
    }
    fn check(&self, cx: &mut SurfaceCx<'_>) -> Option<Json> {
        let service: WebService = cx.section.and_then(|s| WebService::deserialize(s).ok()).unwrap_or_default();
        for (field, registry, pin) in [("search", SEARCH, &service.search), ("fetch", FETCH, &service.fetch)] {
            let Some(id) = pin else { continue };
            let at = format!("{}/{field}", cx.section_pointer);
            match cx.mount_kind(id) {
                // Its kind is unknown: that mount's own error says so.
                None if cx.mount_exists(id) => {}
                None => {
                    let candidates = cx.mounts_in(registry);
                    let help = if candidates.is_empty() {
                        format!("no `{registry}.*` mount is defined")
                    } else {
                        format!("{registry} mounts: {}", candidates.join(", "))
                    };
                    cx.report(crate::codes::PIN_UNKNOWN_MOUNT, &at, format!("`services.web.{field}` pins `{id}`, which is not a mount"))
                        .help = Some(help);
                }
                Some(kind) if kind.registry() != registry => {
                    let message = format!(
                        "`services.web.{field}` pins `{id}`, a `{}` mount; a {field} pin needs a `{registry}.*` mount",
                        kind.name()
                    );
                    cx.report(crate::codes::PIN_WRONG_KIND, &at, message);
                }
                Some(_) => {}
            }
        }
        let fetchers: Vec<String> = cx.mounts_in(FETCH).into_iter().map(str::to_owned).collect();
        for id in fetchers {
            let open = cx.mount_config(&id).and_then(|c| c.get("allow_private_networks").and_then(Json::as_bool)) == Some(true);
            if open && cx.mount_visible(&id) {
                let at = seam_engine::diagnostic::pointer(["mounts", id.as_str(), "allow_private_networks"]);
                cx.report(
                    crate::codes::FETCH_PRIVATE_NETWORKS_VISIBLE,
                    &at,
                    format!("mount `{id}` lets the model fetch private and loopback addresses, and `web_fetch` is visible"),
                )
                .help = Some("name the hosts it needs in `allow_hosts` instead".into());
            }
        }
        cx.section.map(|_| serde_json::to_value(&service).expect("serializable"))
    }
    fn status(&self, cx: &StatusCx<'_>) -> Option<Json> {
        Some(service::status(cx))
    }
    fn codes(&self) -> &'static [CodeDoc] {
        codes::CODES
    }
}

#[cfg(test)]
pub(crate) mod tests {
    /// A fetch mount's config with every default, as a composition would resolve it.
    pub fn fetch_config() -> super::HttpFetch {
        serde_json::from_value(serde_json::json!({ "kind": "web.fetch.http" })).unwrap()
    }
}

/// The codes this surface emits, one constant each (`seam_engine::code_table!`).
pub mod codes {
    seam_engine::code_table! { CODES {
        PIN_UNKNOWN_MOUNT Error "`services.web.search`/`fetch` pins a mount id that is not defined.";
        PIN_WRONG_KIND Error "A pin names a mount of the other registry (a fetch provider pinned for search).";
        FETCH_PRIVATE_NETWORKS_VISIBLE Warning "A fetch mount has `allow_private_networks: true` while `web_fetch` is visible.";
        WEB_PROVIDER_CONFIGURED_MISSING Error "(tool result) The pinned provider is not one this agent has (a scoped mount of another agent).";
        WEB_PROVIDER_CONFIGURED_UNAVAILABLE Error "(tool result) The pinned provider is unavailable now; `reason` says why (e.g. WEB_PROVIDER_CREDENTIAL_MISSING).";
        WEB_PROVIDER_AMBIGUOUS Error "(tool result) No pin, and several providers are usable; the error names them. Pin one in `services.web`.";
        WEB_PROVIDER_UNAVAILABLE Error "(tool result) No pin, and no provider is usable.";
        WEB_PROVIDER_CREDENTIAL_MISSING Error "(tool result) A provider's key is missing: `api_key_env` unset or empty, or `api_key_file` unreadable or empty.";
        WEB_PROVIDER_FAILED Error "(tool result) A provider mount did not build, so it is registered but not usable.";
        WEB_PROVIDER_ERROR Error "(tool result) The search provider failed: non-2xx, redirect, transport failure, or an answer without search results.";
        WEB_INVALID_ARGUMENTS Error "(tool result) The tool's arguments are not what its schema asks (an argument it does not name included).";
        WEB_INVALID_URL Error "(tool result) Not an http(s) URL with a host, or longer than `max_url_length`.";
        WEB_BLOCKED_URL Error "(tool result) The URL (or a redirect's) carries credentials.";
        WEB_BLOCKED_ADDRESS Error "(tool result) The host is, or resolves into, a private, loopback, link-local or reserved range; names the host and range.";
        WEB_REDIRECT_BLOCKED Error "(tool result) A redirect to another origin (scheme, host or port); only same-origin redirects are followed.";
        WEB_REDIRECT_INVALID Error "(tool result) A redirect without a `Location`, or with one that is not a URL.";
        WEB_TOO_MANY_REDIRECTS Error "(tool result) More redirects than `max_redirects`.";
        WEB_UNSUPPORTED_CONTENT_TYPE Error "(tool result) Not HTML, text, JSON or XML, no Content-Type, or a charset seam cannot decode.";
        WEB_FETCH_TOO_LARGE Error "(tool result) The declared Content-Length is over `max_response_bytes` (nothing is read).";
        WEB_FETCH_TIMEOUT Error "(tool result) The fetch (connect, headers and body together) outlasted the mount's `timeout`.";
        WEB_FETCH_FAILED Error "(tool result) The connection or the body failed.";
    } }
}

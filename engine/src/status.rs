//! `/status` as types: the JSON endpoint, `seam inventory --probe` and the status
//! page read the same struct (`Deployment::status`).

use indexmap::IndexMap;
use serde_json::{Map, Value as Json};

use crate::outcome::Outcome;
use crate::runtime::State;

/// What the deployment is serving now, and how its last reload went.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeploymentStatus {
    /// The live generation's number, digest and load time; `None` before the first is live.
    pub generation: Option<u64>,
    pub digest: Option<String>,
    pub loaded_at: Option<String>,
    /// Calls running on the live generation now.
    pub calls_in_flight: Option<usize>,
    pub last_reload: Option<Outcome>,
    /// When the reload running now started; until its outcome, `last_reload` is the one before.
    pub reloading_since: Option<String>,
    /// The live generation's mounts, in mount order.
    pub mounts: Mounts,
    /// Each surface's own view (`Surface::status`), by service.
    pub services: Map<String, Json>,
    /// The audit trail (`serve.audit`): where it is written and its head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<Json>,
    /// Per agent with `quota` rules, what its requests use of each now.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub quotas: std::collections::BTreeMap<String, Vec<Json>>,
    /// Per agent, what its tool list costs a model, as listed and listed whole.
    pub catalogs: std::collections::BTreeMap<String, CatalogCost>,
}

/// What an agent's tool list costs a model in every request: its tools and their
/// estimated tokens (`crate::tokens`) as listed under its `disclosure`, and as they
/// would be with every tool listed (`all`). Equal when it defers nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CatalogCost {
    pub tools: usize,
    pub tokens: usize,
    /// Deferred: found with `tool_search`, not listed.
    pub deferred: usize,
    pub tools_all: usize,
    pub tokens_all: usize,
}

/// Mounts by id, in mount order.
pub type Mounts = IndexMap<String, MountStatus>;

/// One mount of the live generation.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MountStatus {
    pub kind: &'static str,
    pub state: State,
    /// When it entered `state`.
    pub since: String,
    /// The code of what keeps it from being ready, when one names it (`MCP_OAUTH_LOGIN_NEEDED`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    pub detail: Option<String>,
    /// How many tools it discovered.
    pub tools: usize,
    pub required: bool,
    /// What it offers beyond tools, when it offers anything.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub offers: Option<OfferCounts>,
    /// What the mount reports of itself (`Running::facts`: a child's `pid`, a URL, its
    /// questions' counts), shown as they are.
    #[serde(flatten)]
    pub facts: Map<String, Json>,
    /// Its own warnings first, then the deployment's about it (names two things serve,
    /// URIs another mount lists first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// How many prompts, resources and templates a mount offers.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct OfferCounts {
    pub prompts: usize,
    pub resources: usize,
    pub templates: usize,
}

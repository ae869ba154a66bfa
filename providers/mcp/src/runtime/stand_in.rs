//! A mount that answers from a test's fixture instead of a server (`seam test`
//! without `--live`): the tools, prompts and resources a case says the server
//! offers, imported under the mount's filters and names as a running mount's
//! would be (`Names::import`). It starts nothing and answers no call.

use super::*;

/// What a case says one server offers. Each entry is the MCP object as the server
/// would list it, or only its name (a tool's or prompt's) or URI (a resource's).
#[derive(Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Fixture {
    tools: Vec<Json>,
    prompts: Vec<Json>,
    resources: Vec<Json>,
    resource_templates: Vec<Json>,
}

/// An entry given by name only becomes the smallest object of its kind.
fn entry<T: serde::de::DeserializeOwned>(item: &Json, key: &str, fill: impl Fn(&str) -> Json) -> Result<T, String> {
    let object = match item {
        Json::String(name) => fill(name),
        other => other.clone(),
    };
    serde_json::from_value(object).map_err(|e| format!("a fixture's {key} entry does not read as MCP's: {e}"))
}

/// The stand-in of a mount of server settings `common`, with mount id `id`, offering `fixture`.
pub(crate) fn stand_in(common: &Common, id: &str, fixture: &Json) -> Result<Arc<dyn Running>, String> {
    let fixture: Fixture = serde_json::from_value(fixture.clone()).map_err(|e| e.to_string())?;
    let tools: Vec<rmcp::model::Tool> = fixture
        .tools
        .iter()
        .map(|t| entry(t, "tools", |name| serde_json::json!({ "name": name, "inputSchema": { "type": "object" } })))
        .collect::<Result<_, _>>()?;
    let offerings = Offerings {
        prompts: fixture
            .prompts
            .iter()
            .map(|p| entry(p, "prompts", |name| serde_json::json!({ "name": name })))
            .collect::<Result<_, _>>()?,
        resources: fixture
            .resources
            .iter()
            .map(|r| entry(r, "resources", |uri| serde_json::json!({ "uri": uri, "name": uri })))
            .collect::<Result<_, _>>()?,
        templates: fixture
            .resource_templates
            .iter()
            .map(|r| entry(r, "resource_templates", |uri| serde_json::json!({ "uriTemplate": uri, "name": uri })))
            .collect::<Result<_, _>>()?,
        ..Offerings::default()
    };
    let names = Names { id, naming: common.naming };
    let imports = names.import(&Filters::new(common), &tools, &offerings).map_err(|e| e.to_string())?;
    Ok(Arc::new(StandIn { specs: imports.specs, offers: imports.offers }))
}

struct StandIn {
    specs: Arc<Vec<ToolSpec>>,
    offers: Arc<Offers>,
}

impl Running for StandIn {
    fn status(&self) -> Status {
        Status::new(State::Ready, None)
    }
    fn tools(&self) -> Arc<Vec<ToolSpec>> {
        self.specs.clone()
    }
    fn offers(&self) -> Arc<Offers> {
        self.offers.clone()
    }
    fn relay(&self, request: MountRequest, _: Client, _: CancellationToken) -> BoxFuture<'static, Answered> {
        let why = format!("`{}`: a test's stand-in answers no request", request.target());
        Box::pin(std::future::ready(Err(RequestError::Unavailable(why))))
    }
    fn dispose(&self, _: Duration) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

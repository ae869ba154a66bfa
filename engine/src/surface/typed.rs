//! The generic halves of a surface: a mount kind (`Kind<T>`) and a fixed tool
//! (`Tool<T>`) over a provider's typed config or settings, so that a provider writes
//! a type and functions, and the schema, the typing and the defaults come from `T`.

use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use super::{
    Build, FixedTool, Listed, Listing, MountConfig, MountCx, MountKind, PromptCall, PromptError, Provider, ResolvedMount, SkillRead,
    SkillServer, ToolCall, Unselected, unserved,
};
use crate::codes::Code;
use crate::runtime::{BoxFuture, BuildCx, Running, ToolOutput};

/// The schema of a mount kind whose config type is `T`: `T`'s object schema with
/// `kind` added as a required constant in front. `T` carries `kind` as a
/// `#[schemars(skip)]` field so that `deny_unknown_fields` accepts it.
pub fn kind_schema<T: JsonSchema>(generator: &mut SchemaGenerator, kind: &str) -> Schema {
    let mut schema = T::json_schema(generator);
    let object = schema.ensure_object();
    let mut properties = serde_json::Map::new();
    properties.insert("kind".into(), serde_json::json!({ "const": kind, "description": "The mount kind." }));
    if let Some(Json::Object(existing)) = object.remove("properties") {
        properties.extend(existing);
    }
    object.insert("properties".into(), Json::Object(properties));
    let mut required = vec![Json::from("kind")];
    if let Some(Json::Array(existing)) = object.remove("required") {
        required.extend(existing);
    }
    object.insert("required".into(), Json::Array(required));
    object.insert("title".into(), Json::from(kind));
    schema
}

/// A mount kind whose config is the type `T`: the schema comes from `T`, and
/// `resolve` gets the typed config.
pub struct Kind<T> {
    pub name: &'static str,
    pub registry: &'static str,
    pub resolve: fn(&mut MountCx<'_>, T) -> Option<ResolvedMount>,
    /// The runtime; `None` until the kind has one.
    pub build: Option<Build<T>>,
    /// A stand-in for a mount whose tools are discovered at run time, from a test's
    /// fixture (`MountKind::stand_in`); `None` for a kind a test builds for real.
    pub stand_in: Option<StandIn<T>>,
}

/// `MountKind::stand_in` over a kind's typed config: the config, the mount id, the fixture.
pub type StandIn<T> = fn(&T, &str, &Json) -> Result<Arc<dyn Running>, String>;

impl<T: JsonSchema + DeserializeOwned + Clone + 'static> MountKind for Kind<T> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn registry(&self) -> &'static str {
        self.registry
    }
    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        kind_schema::<T>(generator, self.name)
    }
    fn resolve(&self, cx: &mut MountCx<'_>) -> Option<ResolvedMount> {
        let config: T = cx.parse()?;
        (self.resolve)(cx, config)
    }
    fn build(
        &self,
        config: &dyn MountConfig,
        cx: BuildCx,
    ) -> Option<BoxFuture<'static, Result<Arc<dyn Running>, crate::runtime::ProviderError>>> {
        let build = self.build?;
        let config = config.as_any().downcast_ref::<T>().expect("a kind's resolve gives its own config type").clone();
        Some(build(config, cx))
    }
    fn stand_in(&self, config: &dyn MountConfig, id: &str, fixture: &Json) -> Option<Result<Arc<dyn Running>, String>> {
        let stand_in = self.stand_in?;
        let config = config.as_any().downcast_ref::<T>().expect("a kind's resolve gives its own config type");
        Some(stand_in(config, id, fixture))
    }
}

/// A fixed tool whose settings are the type `T`; every field of `T` has a default.
pub struct Tool<T> {
    pub name: &'static str,
    pub exposes: &'static [&'static str],
    /// The runtime; `None` until the tool has one.
    pub serve: Option<Serving<T>>,
    pub live: Option<Live<T>>,
    /// `FixedTool::guidance`.
    pub guidance: Option<&'static str>,
    /// `FixedTool::selects`, for a tool that picks one of its providers per call.
    pub selects: Option<Selects>,
}

/// `FixedTool::selects`: the agent's providers and the service's section.
pub type Selects = fn(&[Provider], Option<&Json>) -> Result<String, Unselected>;

/// The runtime half of a fixed tool, over its typed settings.
pub struct Serving<T> {
    /// The definition for a generation; a live tool refines it at each listing.
    pub definition: fn(&T) -> serde_json::Map<String, Json>,
    pub call: fn(T, ToolCall) -> BoxFuture<'static, ToolOutput>,
    /// The call enforces the settings' `timeout` itself, with its own typed
    /// error (`LSP_TIMEOUT`); the engine then applies no timeout of its own.
    pub owns_timeout: bool,
    /// The code of a call whose arguments its definition's schema does not take.
    pub invalid_arguments: Code,
}

/// The live half of a fixed tool: a definition and prompts that follow its
/// providers' state (the skill catalog), asked at each listing.
pub struct Live<T> {
    pub list: fn(&T, Listing) -> BoxFuture<'static, Listed>,
    pub get_prompt: fn(T, PromptCall) -> BoxFuture<'static, Result<Json, PromptError>>,
    /// `SkillServer::skills` and `read_skill`, for a tool that serves skills over MCP's
    /// skills extension (the `skill` tool): its catalog, served that way too.
    pub served: Option<ServedSkills<T>>,
}

/// How a live tool serves its skills over MCP's skills extension.
pub struct ServedSkills<T> {
    /// The start of every URI of the skills it serves (`skill://`).
    pub scheme: &'static str,
    pub skills: fn(&T, Listing, Option<String>) -> BoxFuture<'static, Vec<Json>>,
    pub read_skill: fn(&T, Listing, String, bool, crate::reads::ReadHold) -> BoxFuture<'static, SkillRead>,
}

impl<T> Tool<T> {
    pub const fn new(name: &'static str, exposes: &'static [&'static str]) -> Self {
        Tool { name, exposes, serve: None, live: None, guidance: None, selects: None }
    }

    pub const fn guided(self, guidance: &'static str) -> Self {
        Tool { guidance: Some(guidance), ..self }
    }

    pub const fn selecting(self, selects: Selects) -> Self {
        Tool { selects: Some(selects), ..self }
    }

    pub const fn served(self, serve: Serving<T>) -> Self {
        Tool { serve: Some(serve), ..self }
    }

    pub const fn live(self, live: Live<T>) -> Self {
        Tool { live: Some(live), ..self }
    }

    /// How it serves skills over MCP's skills extension, when this build serves it and it does.
    fn skills_served(&self) -> Option<&ServedSkills<T>> {
        self.serve.as_ref().and(self.live.as_ref()).and_then(|live| live.served.as_ref())
    }

    fn typed(&self, settings: &Json) -> T
    where
        T: DeserializeOwned,
    {
        T::deserialize(settings).expect("a fixed tool's resolved settings are schema-valid")
    }
}

impl<T: JsonSchema + DeserializeOwned + serde::Serialize> FixedTool for Tool<T> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn exposes(&self) -> &'static [&'static str] {
        self.exposes
    }
    fn settings_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
    fn defaults(&self) -> Json {
        let settings: T = serde_json::from_value(Json::Object(Default::default())).expect("every settings field has a default");
        serde_json::to_value(settings).expect("settings serialize")
    }
    fn definition(&self, settings: &Json) -> Option<serde_json::Map<String, Json>> {
        let serve = self.serve.as_ref()?;
        let mut definition = (serve.definition)(&self.typed(settings));
        definition.insert("name".into(), Json::from(self.name));
        Some(definition)
    }
    fn owns_timeout(&self) -> bool {
        self.serve.as_ref().is_some_and(|s| s.owns_timeout)
    }
    fn guidance(&self) -> Option<&'static str> {
        self.serve.as_ref().and(self.guidance)
    }
    fn call(&self, call: ToolCall) -> BoxFuture<'static, ToolOutput> {
        match &self.serve {
            Some(serve) => (serve.call)(self.typed(&call.settings), call),
            None => unserved(self.name),
        }
    }
    fn invalid_arguments(&self) -> Option<Code> {
        self.serve.as_ref().map(|s| s.invalid_arguments)
    }
    fn is_live(&self) -> bool {
        self.serve.is_some() && self.live.is_some()
    }
    fn list(&self, settings: &Json, listing: Listing) -> BoxFuture<'static, Listed> {
        match &self.live {
            Some(live) => (live.list)(&self.typed(settings), listing),
            None => Box::pin(async move { Listed { definition: Arc::new(listing.definition), prompts: Arc::default() } }),
        }
    }
    fn get_prompt(&self, settings: &Json, call: PromptCall) -> BoxFuture<'static, Result<Json, PromptError>> {
        match &self.live {
            Some(live) => (live.get_prompt)(self.typed(settings), call),
            None => Box::pin(async move { Err(PromptError::unknown(&call.name)) }),
        }
    }
    fn selects(&self, providers: &[Provider], section: Option<&Json>) -> Option<Result<String, Unselected>> {
        self.serve.as_ref().and(self.selects).map(|selects| selects(providers, section))
    }
    fn skill_server(&self) -> Option<&dyn SkillServer> {
        self.skills_served().is_some().then_some(self as &dyn SkillServer)
    }
}

/// Only a tool whose `skills_served` is some is given out as one (`skill_server`).
impl<T: JsonSchema + DeserializeOwned + serde::Serialize> SkillServer for Tool<T> {
    fn names_skill(&self, uri: &str) -> bool {
        self.skills_served().is_some_and(|served| uri.starts_with(served.scheme))
    }
    fn skills(&self, settings: &Json, listing: Listing, only: Option<String>) -> BoxFuture<'static, Vec<Json>> {
        match self.skills_served() {
            Some(served) => (served.skills)(&self.typed(settings), listing, only),
            None => Box::pin(async { Vec::new() }),
        }
    }
    fn read_skill(
        &self,
        settings: &Json,
        listing: Listing,
        uri: String,
        directory: bool,
        hold: crate::reads::ReadHold,
    ) -> BoxFuture<'static, SkillRead> {
        match self.skills_served() {
            Some(served) => (served.read_skill)(&self.typed(settings), listing, uri, directory, hold),
            None => Box::pin(async { None }),
        }
    }
}

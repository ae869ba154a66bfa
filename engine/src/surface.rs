//! What a provider crate gives the engine: its surface (a service), the mount
//! kinds it compiles in, and the fixed tools it serves. The engine knows no
//! surface by name; everything surface-specific comes through these traits.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::{Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use crate::codes::{Code, CodeDoc};
use crate::diagnostic::{Diagnostic, Span, pointer_segments};
use crate::runtime::{BoxFuture, BuildCx, Roots, Running, ToolOutput};
use crate::yaml::Node;

mod typed;
pub use typed::{Kind, Live, Selects, ServedSkills, Serving, StandIn, Tool, kind_schema};

/// One surface: a service (`web`, `lsp`, …), its kinds and its fixed tools.
pub trait Surface: Send + Sync {
    /// The service name, also the key of its section under `services:`.
    fn service(&self) -> &'static str;
    fn kinds(&self) -> &'static [&'static dyn MountKind];
    fn tools(&self) -> &'static [&'static dyn FixedTool] {
        &[]
    }
    /// A prefix such as `mcp__`: `tools` keys that start with it are globs over
    /// the tools this surface's mounts discover at run time.
    fn dynamic_tool_prefix(&self) -> Option<&'static str> {
        None
    }
    /// The schema of `services.<service>`, if the surface has one.
    fn service_schema(&self, _generator: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    /// Semantic checks over the whole composition (pins, warnings); the section
    /// is `services.<service>` as written (schema-valid) or `None`.
    fn check(&self, _cx: &mut SurfaceCx<'_>) -> Option<Json> {
        None
    }
    /// The codes this surface's checks use.
    fn codes(&self) -> &'static [CodeDoc] {
        &[]
    }
    /// The service's own health view for `/status` (the web surface: per
    /// provider `registered / available / reason`), over the live generation's
    /// mounts of this surface.
    fn status(&self, _cx: &StatusCx<'_>) -> Option<Json> {
        None
    }
}

/// What a surface's status view sees: its section and its running mounts.
pub struct StatusCx<'a> {
    /// `services.<service>` as resolved, if written.
    pub section: Option<&'a Json>,
    /// This surface's mounts in the live generation, in composition order.
    pub mounts: Vec<Provider>,
}

/// A running mount as a fixed tool or a status view sees it.
#[derive(Clone)]
pub struct Provider {
    pub id: String,
    /// The registry its kind registers into (`web.search`).
    pub registry: &'static str,
    /// Its resolved config, which its own crate can take back as its type with
    /// `MountConfig::as_any(&*provider.config)` (on the `Arc` itself, method
    /// syntax would pick the blanket impl for the `Arc`).
    pub config: Arc<dyn MountConfig>,
    pub running: Arc<dyn Running>,
    /// Its scope layer for the agent (`Agent::layer`): 0 for a global mount,
    /// larger for a mount listed by an agent nearer the one the call is for.
    pub layer: u32,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("id", &self.id).field("registry", &self.registry).finish_non_exhaustive()
    }
}

/// One call of a fixed tool, with everything it decides from: the call's
/// settings, the service section and the providers the agent can see, all taken
/// from the generation the call started on.
pub struct ToolCall {
    /// The tool's settings for this agent (defaults, budgets, `tools` entries).
    pub settings: Json,
    /// `services.<service>` as resolved, if written.
    pub section: Option<Json>,
    /// The agent's mounts in the registries the tool exposes, in composition order.
    pub providers: Vec<Provider>,
    pub arguments: serde_json::Map<String, Json>,
    /// The folders the MCP client offers as its roots, asked only by a tool that needs them.
    pub roots: Roots,
    pub cancel: tokio_util::sync::CancellationToken,
    /// The MCP client of the call, told of a long call's progress (`ClientLink::progress`).
    pub client: crate::runtime::Client,
}

/// A mount kind compiled into the binary, e.g. `lsp.stdio`.
pub trait MountKind: Send + Sync {
    fn name(&self) -> &'static str;
    /// The registry a mount of this kind registers into (`web.search`, `web.fetch`, `lsp`, `mcp`, `skills`);
    /// pins name mounts of one registry.
    fn registry(&self) -> &'static str;
    /// The schema of one mount, `kind` included, as an object with `additionalProperties: false`.
    fn schema(&self, generator: &mut SchemaGenerator) -> Schema;
    /// Semantic checks and the resolved config. Called only on a schema-valid mount.
    fn resolve(&self, cx: &mut MountCx<'_>) -> Option<ResolvedMount>;
    /// Builds a running mount from the config `resolve` gave; `None` when this
    /// build of seam has no runtime for the kind.
    fn build(
        &self,
        _config: &dyn MountConfig,
        _cx: BuildCx,
    ) -> Option<BoxFuture<'static, Result<Arc<dyn Running>, crate::runtime::ProviderError>>> {
        None
    }
    /// For a kind whose tools a server gives at run time (`Exposure::Dynamic`): a mount
    /// that starts nothing and offers what a test's `fixture` says, named and filtered
    /// as a running mount of `config` would be (or why the fixture does not read).
    /// `None` for a kind that a test builds for real, since building it starts nothing.
    fn stand_in(&self, _config: &dyn MountConfig, _id: &str, _fixture: &Json) -> Option<Result<Arc<dyn Running>, String>> {
        None
    }
}

/// A fixed, product-owned tool such as `web_search`.
pub trait FixedTool: Send + Sync {
    fn name(&self) -> &'static str;
    /// Mount registries whose mounts this tool makes visible.
    fn exposes(&self) -> &'static [&'static str];
    /// The schema of the tool's settings map (budgets included).
    fn settings_schema(&self, generator: &mut SchemaGenerator) -> Schema;
    /// The settings with every default filled in.
    fn defaults(&self) -> Json;
    /// The tool's MCP definition (`name`, `description`, `inputSchema`) under
    /// these settings, or `None` while this build of seam does not serve it.
    fn definition(&self, _settings: &Json) -> Option<serde_json::Map<String, Json>> {
        None
    }
    /// Whether the call enforces its `timeout` setting itself.
    fn owns_timeout(&self) -> bool {
        false
    }
    /// A line for the agent's instructions on when to reach for this tool (its
    /// definition says how to call it), given while this build serves the tool.
    fn guidance(&self) -> Option<&'static str> {
        None
    }
    /// One call; only made to a tool that gave a definition.
    fn call(&self, _call: ToolCall) -> BoxFuture<'static, ToolOutput> {
        unserved(self.name())
    }
    /// The code of its tool results for arguments its schema does not take
    /// (`LSP_INVALID_ARGUMENTS`); the engine checks a call's arguments against the
    /// schema before the call (`crate::runtime::unknown_argument`). `None` with no runtime.
    fn invalid_arguments(&self) -> Option<Code>;
    /// Whether the definition and prompts follow the providers' live state
    /// (`list`), rather than being fixed for the generation.
    fn is_live(&self) -> bool {
        false
    }
    /// The definition and the prompts as they are now; only asked of a live tool.
    fn list(&self, _settings: &Json, listing: Listing) -> BoxFuture<'static, Listed> {
        Box::pin(async move { Listed { definition: Arc::new(listing.definition), prompts: Arc::default() } })
    }
    /// One prompt of those `list` gave; `PROMPT_UNKNOWN` for a name it did not give.
    fn get_prompt(&self, _settings: &Json, call: PromptCall) -> BoxFuture<'static, Result<Json, PromptError>> {
        Box::pin(async move { Err(PromptError::unknown(&call.name)) })
    }
    /// How it serves skills over MCP's skills extension (SEP-2640), if it does (the `skill` tool).
    fn skill_server(&self) -> Option<&dyn SkillServer> {
        None
    }
    /// For a tool that picks one of the agent's `providers` per call (`web_search`):
    /// the mount id a call would use now, or why it would fail, given `services.<service>`
    /// as `section`. `None` for a tool that picks none.
    fn selects(&self, _providers: &[Provider], _section: Option<&Json>) -> Option<Result<String, Unselected>> {
        None
    }
}

/// Why a call of a fixed tool would find no provider (`FixedTool::selects`): the
/// code of its error, then the codes of the reasons that error gives, and its message.
#[derive(Clone, Debug, PartialEq)]
pub struct Unselected {
    pub codes: Vec<Code>,
    pub message: String,
}

/// A fixed tool that serves skills over MCP's skills extension (SEP-2640).
pub trait SkillServer: Send + Sync {
    /// The skills it serves to a session listing as `listing` says (only the one at URI
    /// `only`, when given): `skills/list` entries (`{uri, frontmatter, resources}`), in
    /// name order.
    fn skills(&self, settings: &Json, listing: Listing, only: Option<String>) -> BoxFuture<'static, Vec<Json>>;
    /// Whether `uri` is in the namespace of the skills it serves (its scheme), whether or
    /// not a skill of that name is served: a read of such a URI that nothing serves is the
    /// skills extension's invalid params, not a resource not found.
    fn names_skill(&self, uri: &str) -> bool;
    /// `resources/read` of a file of a skill it serves (with `directory`,
    /// `resources/directory/read` of one of its folders): the result JSON, or why it
    /// cannot be read; `None` when the URI is none of its skills'. A file's bytes are
    /// taken from the read budget through `hold` before they are read (`crate::reads`).
    fn read_skill(
        &self,
        settings: &Json,
        listing: Listing,
        uri: String,
        directory: bool,
        hold: crate::reads::ReadHold,
    ) -> BoxFuture<'static, SkillRead>;
}

/// A served skill's file read (`SkillServer::read_skill`): its `resources/read` result, or
/// why it cannot be read; `None` when the URI is none of the tool's skills'.
pub type SkillRead = Option<Result<Json, crate::runtime::ProviderError>>;

/// What a live tool lists from: its definition for the generation, the agent's
/// providers and the session's roots.
pub struct Listing {
    pub definition: serde_json::Map<String, Json>,
    pub providers: Vec<Provider>,
    pub section: Option<Json>,
    pub roots: Vec<PathBuf>,
}

/// A live tool as a session sees it now: its MCP definition and its prompts,
/// sorted by name. Shared, so that a tool may hand out what it rendered once
/// to every listing.
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub definition: Arc<serde_json::Map<String, Json>>,
    pub prompts: Arc<Vec<PromptSpec>>,
}

/// A prompt as MCP's `prompts/list` shows it (one that takes no arguments).
/// Shared text: a listing of thousands is copied by reference counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptSpec {
    pub name: Arc<str>,
    pub description: Arc<str>,
}

/// `prompts/get` of a prompt a live tool lists.
pub struct PromptCall {
    pub name: String,
    pub arguments: serde_json::Map<String, Json>,
    pub providers: Vec<Provider>,
    pub section: Option<Json>,
    pub roots: Vec<PathBuf>,
}

/// Why a prompt could not be given, with a code from the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptError {
    pub code: Code,
    pub message: String,
}

impl PromptError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        PromptError { code, message: message.into() }
    }
    pub fn unknown(name: &str) -> Self {
        PromptError::new(crate::codes::PROMPT_UNKNOWN, format!("no prompt `{name}` is listed for this agent"))
    }
}

fn unserved(tool: &'static str) -> BoxFuture<'static, ToolOutput> {
    Box::pin(async move { ToolOutput::error(crate::codes::TOOL_UNAVAILABLE, format!("`{tool}` has no runtime in this build of seam yet")) })
}

/// Which tools make a mount visible to an agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exposure {
    /// Through a fixed tool, e.g. `lsp`.
    Tool(&'static str),
    /// Through tools discovered at run time. `prefix` (`mcp__everything__`)
    /// keys the agents' tool rules, and names the tools unless `raw`: then
    /// clients see the server's own names (`naming: raw`), and a name two
    /// things an agent sees would serve is served by neither.
    Dynamic { prefix: String, raw: bool },
}

/// An exclusive resource a mount takes; two mounts claiming the same key in one space is an error.
#[derive(Clone, Debug)]
pub struct Claim {
    pub space: &'static str,
    pub key: String,
    /// Code for a conflict, e.g. `LSP_EXTENSION_CONFLICT`.
    pub code: Code,
    /// How to name the resource in a message, e.g. "extension `.ts`".
    pub what: String,
    /// Where the claim is written.
    pub pointer: String,
}

pub use crate::runtime::MountConfig;

/// The runtime half of a kind: builds a running mount from its typed config.
/// The future resolves once the mount has activated (for MCP: the first connection
/// and complete discovery, bounded by `startup_timeout`), ready or failed.
pub type Build<T> = fn(T, BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, crate::runtime::ProviderError>>;

/// Something `validate --environment` checks on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    Executable { name: String, pointer: String },
    ReadableFile { path: PathBuf, pointer: String },
    Directory { path: PathBuf, pointer: String },
}

/// A mount after its checks: what the graph and the runtime need to know.
#[derive(Clone, Debug)]
pub struct ResolvedMount {
    /// The typed config with defaults filled in; its canonical JSON is the node digest.
    /// Kept typed, and turned into JSON only when a plan needs it.
    pub config: Arc<dyn MountConfig>,
    /// Engine services it needs (`workspace`, `subprocess`).
    pub needs: Vec<&'static str>,
    pub claims: Vec<Claim>,
    pub requirements: Vec<Requirement>,
    /// The kind's own look at this machine, beyond `requirements`.
    pub environment: Option<EnvironmentProbe>,
    pub exposure: Exposure,
    pub required: bool,
    /// Tool names clients will see that are known before the mount runs, each
    /// with the pointer that names it (a mount of raw names' literal `allow`
    /// entries): checked against what else each agent sees.
    pub names: Vec<(String, String)>,
    /// Registries beyond its kind's that it also provides to, so a fixed tool exposing one
    /// of them is given the mount (an MCP mount that imports its server's skills: `skills`).
    pub contributes: Vec<&'static str>,
    /// How its discovered tools reach agents' models, over each agent's `disclosure`.
    pub disclosure: Option<crate::model::DisclosureMode>,
}

/// A kind's own look at this machine for one mount, given the workspace root:
/// findings for `validate --environment`, facts for `seam inventory`.
#[derive(Clone)]
pub struct EnvironmentProbe(Arc<ProbeFn>);

type ProbeFn = dyn Fn(Option<&Path>) -> Environment + Send + Sync;

impl EnvironmentProbe {
    pub fn new(probe: impl Fn(Option<&Path>) -> Environment + Send + Sync + 'static) -> Self {
        EnvironmentProbe(Arc::new(probe))
    }
    pub fn run(&self, workspace: Option<&Path>) -> Environment {
        (self.0)(workspace)
    }
}

impl std::fmt::Debug for EnvironmentProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EnvironmentProbe")
    }
}

/// What an `EnvironmentProbe` found.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    pub findings: Vec<Finding>,
    /// Shown under the mount by `seam inventory` (`environment.facts`).
    pub facts: Option<Json>,
    /// The same facts as lines for the human inventory.
    pub lines: Vec<String>,
}

/// One finding, located at the mount (`pointer` is under the mount's own, `""` for the mount itself).
#[derive(Clone, Debug)]
pub struct Finding {
    /// Its severity is the code's own (its table row).
    pub code: Code,
    pub pointer: String,
    pub message: String,
}

impl ResolvedMount {
    pub fn new(config: impl MountConfig + 'static, exposure: Exposure) -> Self {
        ResolvedMount {
            config: Arc::new(config),
            needs: Vec::new(),
            claims: Vec::new(),
            requirements: Vec::new(),
            environment: None,
            exposure,
            required: false,
            names: Vec::new(),
            contributes: Vec::new(),
            disclosure: None,
        }
    }
}

/// The context a kind resolves one mount in.
pub struct MountCx<'a> {
    pub id: &'a str,
    /// `/mounts/<id>`.
    pub pointer: String,
    /// The mount as written, read as JSON in place ([`crate::as_json`]).
    pub config: &'a Node,
    pub(crate) root: &'a Node,
    pub(crate) sources: &'a crate::diagnostic::Sources,
    pub(crate) lock: &'a crate::lock::LockRead,
    pub(crate) diagnostics: &'a mut Vec<Diagnostic>,
}

impl MountCx<'_> {
    /// Deserializes the mount into its typed config; a failure is reported (it means the schema and the type disagree).
    pub fn parse<T: DeserializeOwned>(&mut self) -> Option<T> {
        match T::deserialize(self.config) {
            Ok(t) => Some(t),
            Err(e) => {
                self.report(crate::codes::SCHEMA_INVALID, "", format!("invalid mount `{}`: {e}", self.id));
                None
            }
        }
    }

    /// This mount's entry in the composition's lock, for a mount that pins what its server
    /// offers (the setting at `relative`): the entry (empty when the lock has none for this
    /// mount), or `None` when pins are not enforced (`seam lock` reads the servers anew) or
    /// the lock is missing or broken, which is reported here.
    pub fn lock_entry(&mut self, relative: &str) -> Option<crate::lock::MountLock> {
        let help = |path: &Path| {
            let composition = path.with_file_name(
                path.file_name().map_or_else(String::new, |n| n.to_string_lossy().trim_end_matches(".lock.json").to_owned() + ".yaml"),
            );
            format!("`seam lock {}` writes it from what the servers offer now", composition.display())
        };
        match self.lock {
            crate::lock::LockRead::Ignored => None,
            crate::lock::LockRead::Read(_, lock) => Some(lock.mounts.get(self.id).cloned().unwrap_or_default()),
            crate::lock::LockRead::Absent(path) => {
                let (message, help) = (format!("mount `{}` is pinned, and there is no lock at {}", self.id, path.display()), help(path));
                self.report(crate::codes::PIN_LOCK_MISSING, relative, message).help = Some(help);
                None
            }
            crate::lock::LockRead::Broken(path, why) => {
                let message = format!("mount `{}` is pinned, and its lock {} cannot be used: {why}", self.id, path.display());
                let help = help(path);
                self.report(crate::codes::PIN_LOCK_INVALID, relative, message).help = Some(help);
                None
            }
        }
    }

    /// The place of the field at `relative` (a pointer below the mount, `""` for the mount itself).
    pub fn span(&self, relative: &str) -> Span {
        locate(self.root, &format!("{}{relative}", self.pointer))
    }

    /// Reports `code` about the field at `relative`, at the severity its table row gives.
    pub fn report(&mut self, code: Code, relative: &str, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::new(code, self.span(relative), format!("{}{relative}", self.pointer), message);
        push(self.diagnostics, d)
    }

    /// Reports `code` about a map key (a mount id, an extension), located at the key itself.
    pub fn report_at_key(&mut self, code: Code, relative: &str, message: impl Into<String>) -> &mut Diagnostic {
        let pointer = format!("{}{relative}", self.pointer);
        let d = Diagnostic::new(code, locate_key(self.root, &pointer), pointer, message);
        push(self.diagnostics, d)
    }

    /// Refuses a secret written into the URL at `relative` (a password, a secret-named query
    /// parameter: `SECRET_INLINE`); one that came from `${…}` is not written in the file,
    /// and is only masked wherever the URL is shown (`crate::redact::url`). Whether it refused.
    pub fn refuse_secret_in_url(&mut self, relative: &str, url: &str, instead: &str) -> bool {
        let Some(what) = crate::redact::secret_in_url(url) else { return false };
        if self.is_interpolated(relative) {
            return false;
        }
        let field = relative.rsplit('/').next().unwrap_or(relative);
        self.report(
            crate::codes::SECRET_INLINE,
            relative,
            format!("`{field}` holds {what}, which would put a secret in the composition"),
        )
        .help = Some(format!("name where it comes from instead: {instead}"));
        true
    }

    /// Whether the string at `relative` came out of `${…}` interpolation.
    pub fn is_interpolated(&self, relative: &str) -> bool {
        let segments = pointer_segments(relative);
        let (node, _, depth) = self.config.lookup(&segments);
        depth == segments.len() && node.interpolated
    }

    /// Settles a command to spawn: a command with a `/` in it is a path, relative
    /// to the file that wrote it (a bare name is looked up on PATH at spawn time);
    /// `--environment` then checks it is an executable.
    pub fn spawn(&self, spawn: &mut crate::model::Spawn) -> Requirement {
        if spawn.command.contains('/') {
            spawn.command = self.path("/command", &spawn.command).display().to_string();
        }
        Requirement::Executable { name: spawn.command.clone(), pointer: format!("{}/command", self.pointer) }
    }

    /// Resolves a path written at `relative` against the folder of the file that wrote it.
    pub fn path(&self, relative: &str, written: &str) -> PathBuf {
        let file = self.sources.path(self.span(relative).file);
        resolve_path(file, written)
    }
}

/// Adds a diagnostic and hands it back, so the caller can attach a help line.
fn push(diagnostics: &mut Vec<Diagnostic>, d: Diagnostic) -> &mut Diagnostic {
    diagnostics.push(d);
    diagnostics.last_mut().expect("just pushed")
}

/// Relative paths resolve against the folder of the file that wrote them; `~/` against `$HOME`.
pub fn resolve_path(file: &Path, written: &str) -> PathBuf {
    if let (Some(rest), Some(home)) = (written.strip_prefix("~/"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    let p = Path::new(written);
    if p.is_absolute() { p.to_owned() } else { file.parent().unwrap_or(Path::new(".")).join(p) }
}

/// The span of the node at `pointer`, or of its nearest ancestor that exists.
/// A map value is located at its value; a missing child at its parent's key.
pub(crate) fn locate(root: &Node, pointer: &str) -> Span {
    let segments = pointer_segments(pointer);
    let (node, key_span, depth) = root.lookup(&segments);
    if depth == segments.len() { node.span } else { key_span.unwrap_or(node.span) }
}

/// The span of the key that holds the node at `pointer` (its value's span for a list item).
pub(crate) fn locate_key(root: &Node, pointer: &str) -> Span {
    let segments = pointer_segments(pointer);
    let (node, key_span, _) = root.lookup(&segments);
    key_span.unwrap_or(node.span)
}

/// What a surface's whole-composition check sees.
pub struct SurfaceCx<'a> {
    /// `services.<service>` as written, if present.
    pub section: Option<&'a Node>,
    pub section_pointer: String,
    pub(crate) resolved: &'a dyn Composition,
    pub(crate) root: &'a Node,
    pub(crate) diagnostics: &'a mut Vec<Diagnostic>,
}

/// What a surface's whole-composition check may ask of the resolved composition
/// (`resolve::Resolved` answers it, so that resolving depends on surfaces and not
/// the other way round).
pub trait Composition {
    /// Whether a mount of this id is written, whatever its kind (known or not).
    fn mount_exists(&self, id: &str) -> bool;
    /// The kind of a mount, if the mount exists and its kind is known.
    fn mount_kind(&self, id: &str) -> Option<&'static dyn MountKind>;
    /// Mount ids of one registry, in file order.
    fn mounts_in(&self, registry: &str) -> Vec<&str>;
    /// A mount's resolved config as JSON.
    fn mount_config(&self, id: &str) -> Option<Json>;
    /// `services.workspace.root` as resolved (absolute); `None` when the composition sets none.
    fn workspace_dir(&self) -> Option<&Path>;
    /// Whether mount `id` is visible to some agent.
    fn mount_visible(&self, id: &str) -> bool;
}

impl SurfaceCx<'_> {
    /// Whether a mount of this id is written, whatever its kind (known or not).
    pub fn mount_exists(&self, id: &str) -> bool {
        self.resolved.mount_exists(id)
    }

    /// The kind name of a mount, if the mount exists.
    pub fn mount_kind(&self, id: &str) -> Option<&'static dyn MountKind> {
        self.resolved.mount_kind(id)
    }

    /// Mount ids of one registry, in file order.
    pub fn mounts_in(&self, registry: &str) -> Vec<&str> {
        self.resolved.mounts_in(registry)
    }

    pub fn mount_config(&self, id: &str) -> Option<Json> {
        self.resolved.mount_config(id)
    }

    /// `services.workspace.root` as resolved (absolute); `None` when the composition sets none.
    pub fn workspace_root(&self) -> Option<&str> {
        self.resolved.workspace_dir().and_then(|p| p.to_str())
    }

    /// Whether mount `id` is visible to some agent.
    pub fn mount_visible(&self, id: &str) -> bool {
        self.resolved.mount_visible(id)
    }

    pub fn span(&self, pointer: &str) -> Span {
        locate(self.root, pointer)
    }

    /// Reports `code` about the value at `pointer`, at the severity its table row gives.
    pub fn report(&mut self, code: Code, pointer: &str, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::new(code, self.span(pointer), pointer, message);
        push(self.diagnostics, d)
    }
}

/// Whether a secret sent to `url` would cross a network in clear: plain
/// `http://` to a host other than loopback (`localhost` and its subdomains,
/// 127.0.0.0/8, `::1`). A URL that does not parse is not judged here.
pub fn in_clear_beyond_loopback(url: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else { return false };
    if url.scheme() != "http" {
        return false;
    }
    match url.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.');
            !(name.eq_ignore_ascii_case("localhost") || name.to_ascii_lowercase().ends_with(".localhost"))
        }
        Some(url::Host::Ipv4(ip)) => !ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => !ip.is_loopback() && !ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::in_clear_beyond_loopback;

    #[test]
    fn a_secret_is_in_clear_over_plain_http_beyond_loopback() {
        for url in ["http://api.example.com/v1", "http://10.0.0.5:8080/", "http://[2001:db8::1]/", "http://user@example.com/"] {
            assert!(in_clear_beyond_loopback(url), "{url}");
        }
        for url in [
            "https://api.example.com/",
            "http://localhost:8080/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://127.0.0.1/",
            "http://127.1/",
            "http://127.255.0.9:1/",
            "http://[::1]:9/",
            "http://[::ffff:127.0.0.1]/",
            "not a url",
        ] {
            assert!(!in_clear_beyond_loopback(url), "{url}");
        }
    }
}

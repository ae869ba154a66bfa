//! The call stage: the ordered chain of hooks that every request to a mount, or to a
//! service's tool, passes on its way there and back (`Deployment::relay`). Each hook
//! sees the caller, the generation, what serves the request, the request itself (the
//! method, the target, the arguments) and the calling client; it may refuse the
//! request, rewrite it, ask the client a question (`Client::ask`, in either era), and
//! see or rewrite the answer and the time it took. `before` runs outermost first,
//! `after` innermost first, and only for the hooks whose `before` let the request on.
//! The order is [`Chain::new`]'s, and ARCHITECTURE.md says it in words. Why a list
//! of typed hooks and not tower layers: `docs/choices.md`.

use std::sync::Arc;
use std::time::Duration;

use super::{Generation, Source};
use crate::codes::Code;
use crate::offers::{MountRequest, RequestError};
pub use crate::runtime::{Answer, Answered};
use crate::runtime::{AskKind, BoxFuture, Client, ToolOutput};

/// Who a request comes from, and what the deployment keeps for them
/// (`Deployment::caller` makes one).
#[derive(Clone, Debug)]
pub struct Caller {
    pub agent: String,
    /// The name of the token the request presented ([`TokenName`]), never the token;
    /// `None` when it presented none (stdio, an endpoint no token guards).
    pub token: Option<String>,
    /// The agent's state: a hook reaches what belongs to the caller here, never in a
    /// table of every agent's.
    pub state: Arc<CallerState>,
}

/// What the deployment keeps for one agent across its generations: the resource links
/// its calls' results carried, and the tasks its calls made. Each agent has its own, so
/// that nothing one agent does reaches, or pushes out, another's. (Waiting MRTR calls
/// are the front end's, per agent too; subscriptions are per session.)
#[derive(Default)]
pub struct CallerState {
    pub links: crate::offers::Links,
    pub tasks: crate::tasks::Tasks,
    /// What its requests used of its `quota` rules.
    pub quotas: crate::quota::Quotas,
}

impl std::fmt::Debug for CallerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallerState").finish_non_exhaustive()
    }
}

/// Where the token a request presented comes from (`env:SEAM_TOKEN`, `file:/run/seam/token`):
/// the HTTP front end puts it on the request once the token is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenName(pub String);

impl TokenName {
    pub fn of(source: &crate::model::TokenSource) -> TokenName {
        TokenName(match source {
            crate::model::TokenSource::Env(name) => format!("env:{name}"),
            crate::model::TokenSource::File(path) => format!("file:{}", path.display()),
        })
    }
}

/// A request's answer as a request's result JSON (a call's result as its JSON).
pub fn result_of(answered: Answered) -> Result<serde_json::Value, RequestError> {
    answered.map(|answer| match answer {
        Answer::Result(result) => result,
        Answer::Tool(output) => output.into_json(),
    })
}

/// A request's answer as a tool's result: a call's as it is; a failure as an error result.
pub fn output_of(answered: Answered) -> ToolOutput {
    match answered {
        Ok(Answer::Tool(output)) => output,
        Ok(Answer::Result(result)) => ToolOutput::from_json(result),
        Err(e) => ToolOutput::error(crate::codes::TOOL_UNAVAILABLE, e),
    }
}

/// A request on its way, as `before` sees it.
pub struct Passing<'a> {
    pub caller: &'a Caller,
    pub generation: &'a Generation,
    /// What serves it.
    pub source: &'a Source,
    /// The request: a hook may rewrite it (`MountRequest::arguments_mut`).
    pub request: &'a mut MountRequest,
    /// The calling client, to ask it a question.
    pub client: &'a Client,
    /// A call's entry in the agent's catalog (its budgets, whether it is approved).
    pub entry: Option<&'a crate::deploy::CatalogEntry>,
    /// What a hook holds for as long as the request runs (a quota's place), let go once it is answered.
    pub holds: Vec<Box<dyn Send + Sync>>,
    /// A person approved the call (`approve`), as the audit trail records it.
    pub approved: bool,
}

/// A request answered, as `after` sees it.
pub struct Passed<'a> {
    pub caller: &'a Caller,
    pub generation: &'a Generation,
    pub source: &'a Source,
    /// The request as it went (after every `before`).
    pub request: &'a MountRequest,
    /// The tool's `max_output_chars`, for a call.
    pub max_output_chars: Option<u64>,
    /// The call may have written files (its tool is not marked read-only), and this is
    /// the first time its result is given (a task's result is given at a `tasks/get`).
    pub may_write: bool,
    /// From the request's arrival here to its answer.
    pub took: Duration,
    /// How long what serves it took to answer, when it was sent there (no hook refused
    /// it): the mount's or the service's part of `took`.
    pub served_in: Option<Duration>,
    /// The name agents' rules give a call's tool, when a rewrite shows it under another.
    pub ruled_as: Option<String>,
    /// This is a task's result, given at a `tasks/get` and finished as its call's would
    /// have been: the call itself passed when it made the task.
    pub task_result: bool,
}

/// A hook's refusal: the request is answered with it and goes no further.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
    /// What else the caller is told (a quota's `retry_after_ms`), beside the code.
    pub data: Option<serde_json::Value>,
}

impl Refusal {
    /// The refusal as the answer to `request`: a call's error result; another request's
    /// error, which with `data` (a quota's wait) is an invalid-request error whose `data`
    /// has the code and it.
    pub fn answer(self, request: &MountRequest) -> Answered {
        match request {
            MountRequest::CallTool { .. } => Ok(Answer::Tool(ToolOutput::error(self.code, self.message))),
            _ if self.data.is_none() => Err(RequestError::Refused(format!("{}: {}", self.code, self.message))),
            _ => {
                let mut data = serde_json::Map::from_iter([("code".to_owned(), serde_json::Value::from(self.code.code))]);
                if let Some(serde_json::Value::Object(more)) = self.data {
                    data.extend(more);
                }
                Err(RequestError::Denied { message: format!("{}: {}", self.code, self.message), data: serde_json::Value::Object(data) })
            }
        }
    }
}

/// One hook of the call stage.
pub trait Hook: Send + Sync {
    /// Before the request goes on: `Err` answers it with the refusal.
    fn before<'a>(&'a self, _passing: &'a mut Passing<'_>) -> BoxFuture<'a, Result<(), Refusal>> {
        Box::pin(std::future::ready(Ok(())))
    }
    /// Once it is answered: the answer may be rewritten.
    fn after(&self, _passed: &Passed<'_>, _answer: &mut Answered) {}
}

/// The call stage's hooks, in order.
#[derive(Clone)]
pub struct Chain(Arc<[Arc<dyn Hook>]>);

impl Chain {
    /// seam's own hooks, outermost first, after `added` (the hooks a build of seam adds,
    /// `deploy::Options::hooks`, outermost of all: they see every request and answer).
    pub fn new(added: &[Arc<dyn Hook>]) -> Chain {
        let own: [Arc<dyn Hook>; 6] =
            [Arc::new(Quota), Arc::new(Approval), Arc::new(WriteWatch), Arc::new(OutputCap), Arc::new(LinksLearnt), Arc::new(TaskBinding)];
        Chain(added.iter().cloned().chain(own).collect())
    }

    /// Runs each hook's `before` in order: how many let the request on, and the refusal that stopped it.
    pub(crate) async fn before(&self, passing: &mut Passing<'_>) -> (usize, Option<Refusal>) {
        for (passed, hook) in self.0.iter().enumerate() {
            if let Err(refusal) = hook.before(passing).await {
                return (passed, Some(refusal));
            }
        }
        (self.0.len(), None)
    }

    /// Runs the `after` of the first `passed` hooks, innermost first.
    pub(crate) fn after(&self, passed: usize, done: &Passed<'_>, answer: &mut Answered) {
        for hook in self.0[..passed].iter().rev() {
            hook.after(done, answer);
        }
    }

    /// How many hooks it has (every one runs `after` for a result given later, a task's).
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// The tool output of an answer that is a call's result (not a task, which is finished
/// when a `tasks/get` gives its result).
fn call_result(answer: &mut Answered) -> Option<&mut ToolOutput> {
    match answer {
        Ok(Answer::Tool(output)) if output.task.is_none() => Some(output),
        _ => None,
    }
}

/// A request past one of its agent's `quota` rules is refused before anything else is
/// done for it (no person is asked, no server sent it); one within them takes its place
/// in each (a call of the window, a place among those running, held until it is
/// answered), and its output's bytes are counted once it is.
struct Quota;

impl Quota {
    /// The agent's rules, and those that cover this request.
    fn rules<'g>(
        generation: &'g Generation,
        agent: &str,
        source: &Source,
        request: &MountRequest,
        ruled_as: Option<&str>,
    ) -> (&'g [Arc<crate::quota::QuotaRule>], Vec<&'g crate::quota::QuotaRule>) {
        let Some(rules) = generation.resolved.agents.get(agent).map(|a| &a.quota[..]) else { return (&[], Vec::new()) };
        let mount = match source {
            Source::Mount(id) => Some(id.as_str()),
            Source::Service(_) | Source::Seam => None,
        };
        let ruled_as = ruled_as.unwrap_or(request.target());
        let mut covering: Vec<&crate::quota::QuotaRule> = Vec::new();
        // A rule written twice (a child repeating its parent's) is one rule: counted once.
        for rule in rules.iter().filter(|rule| rule.covers(request, ruled_as, mount)) {
            if !covering.iter().any(|taken| taken.digest == rule.digest) {
                covering.push(rule);
            }
        }
        (rules, covering)
    }
}

impl Hook for Quota {
    fn before<'a>(&'a self, passing: &'a mut Passing<'_>) -> BoxFuture<'a, Result<(), Refusal>> {
        let ruled_as = passing.entry.and_then(|entry| entry.spec.ruled_as.as_deref());
        let (all, covering) = Quota::rules(passing.generation, &passing.caller.agent, passing.source, passing.request, ruled_as);
        let taken = crate::quota::Quotas::take(&passing.caller.state, &covering, all, tokio::time::Instant::now());
        let result = match taken {
            Ok(place) => {
                passing.holds.extend(place.map(|place| Box::new(place) as Box<dyn Send + Sync>));
                Ok(())
            }
            Err(exceeded) => Err(Refusal { code: crate::codes::QUOTA_EXCEEDED, data: Some(exceeded.data()), message: exceeded.message }),
        };
        Box::pin(std::future::ready(result))
    }

    fn after(&self, passed: &Passed<'_>, answer: &mut Answered) {
        let ruled_as = passed.ruled_as.as_deref();
        let (_, covering) = Quota::rules(passed.generation, &passed.caller.agent, passed.source, passed.request, ruled_as);
        if !covering.iter().any(|rule| rule.doc.output_bytes.is_some()) {
            return;
        }
        let bytes = match answer {
            Ok(Answer::Tool(output)) => output.json_bytes(),
            Ok(Answer::Result(result)) => serde_json::to_vec(result).map_or(0, |b| b.len() as u64),
            Err(_) => 0,
        };
        passed.caller.state.quotas.spent(&covering, bytes, tokio::time::Instant::now());
    }
}

/// The most characters of a call's arguments a person asked to approve it is shown.
pub const APPROVAL_ARGUMENTS_CHARS: u64 = 2000;

/// The digest of a call's arguments: sha256 of their canonical JSON (keys sorted, no
/// whitespace), as a person's approval and the audit trail name them.
pub fn arguments_digest(arguments: &serde_json::Map<String, serde_json::Value>) -> String {
    use sha2::Digest;
    let canonical = crate::plan::canonical_json(&serde_json::Value::Object(arguments.clone()));
    let digest = sha2::Sha256::digest(canonical.as_bytes());
    format!("sha256:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// A call whose tool needs a person's yes (`approve`) goes on only with it: the calling
/// client is asked (a 2025-11-25 client by `elicitation/create` on the call's stream, a
/// 2026-07-28 client in the call's `input_required`, which its retry answers under a
/// `requestState` that opens only this call, with these arguments, once). The time the
/// person takes is not the call's (`Client::ask` stops its clock); `serve.input_timeout`
/// bounds it.
struct Approval;

impl Approval {
    /// The question: who calls what, with which arguments, and their digest.
    fn question(passing: &Passing<'_>) -> serde_json::Value {
        let request = &*passing.request;
        let mut arguments = serde_json::to_string_pretty(request.arguments()).unwrap_or_default();
        if crate::text::truncate_chars(&mut arguments, APPROVAL_ARGUMENTS_CHARS) {
            arguments.push_str("\n[seam: arguments cut]");
        }
        let served_by = match passing.source {
            Source::Mount(id) => format!("mount `{id}`"),
            Source::Service(service) => format!("service `{service}`"),
            Source::Seam => "seam".to_owned(),
        };
        let message = format!(
            "Agent `{}` asks to call `{}` ({served_by}) with these arguments:\n{arguments}\n\nApprove this call? (arguments digest {})",
            passing.caller.agent,
            request.target(),
            arguments_digest(request.arguments())
        );
        serde_json::json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { "approve": { "type": "boolean", "title": "Approve this call", "default": false } },
                "required": ["approve"],
            },
        })
    }
}

impl Hook for Approval {
    fn before<'a>(&'a self, passing: &'a mut Passing<'_>) -> BoxFuture<'a, Result<(), Refusal>> {
        Box::pin(async move {
            if !matches!(passing.request, MountRequest::CallTool { .. }) || !passing.entry.is_some_and(|entry| entry.approve) {
                return Ok(());
            }
            let refusal = |code, message: String| Err(Refusal { code, message, data: None });
            let tool = passing.request.target().to_owned();
            let question = Approval::question(passing);
            let Some(link) = passing.client.link() else {
                let why = format!("`{tool}` needs a person's approval, and this call has no MCP client behind it to ask");
                return refusal(crate::codes::APPROVAL_UNAVAILABLE, why);
            };
            if !link.declares(AskKind::Elicitation, &question) {
                let why = format!(
                    "`{tool}` needs a person's approval, and agent `{}`'s client declared no form elicitation, so nobody can be asked; \
                     a client without a person behind it cannot approve calls",
                    passing.caller.agent
                );
                return refusal(crate::codes::APPROVAL_UNAVAILABLE, why);
            }
            match passing.client.ask(AskKind::Elicitation, question, None).await {
                Ok(answer) if answer["action"] == "accept" && answer["content"]["approve"] == true => {
                    passing.approved = true;
                    Ok(())
                }
                Ok(answer) => {
                    let action = answer["action"].as_str().unwrap_or("no answer");
                    refusal(
                        crate::codes::APPROVAL_DECLINED,
                        format!("the call of `{tool}` was not approved (the person's answer: {action})"),
                    )
                }
                Err(RequestError::TimedOut(why)) => {
                    refusal(crate::codes::APPROVAL_TIMEOUT, format!("the call of `{tool}` was not approved: {why}"))
                }
                Err(e) => refusal(crate::codes::APPROVAL_UNAVAILABLE, format!("the call of `{tool}` could not be approved: {e}")),
            }
        })
    }
}

/// A call answered with a task: the caller's state holds it under an id it mints, so the
/// client never sees the server's (`crate::tasks`).
struct TaskBinding;

impl Hook for TaskBinding {
    fn after(&self, passed: &Passed<'_>, answer: &mut Answered) {
        let (Source::Mount(id), Ok(Answer::Tool(output))) = (passed.source, answer) else { return };
        let Some(task) = output.task.as_deref_mut() else { return };
        let finish = crate::tasks::Finish {
            tool: passed.request.target().to_owned(),
            arguments: passed.request.arguments().clone(),
            max_output_chars: passed.max_output_chars,
            may_write: passed.may_write,
        };
        let pushed_out = passed.caller.state.tasks.hold(id, &passed.generation.mounts[id].running, finish, task);
        crate::deploy::cancel_pushed_out(&passed.caller.agent, pushed_out);
    }
}

/// The resource links a mount's result carries, learnt in the caller's state: a read of
/// one by the same agent goes to that mount though it does not list it (`crate::offers::Links`).
struct LinksLearnt;

impl Hook for LinksLearnt {
    fn after(&self, passed: &Passed<'_>, answer: &mut Answered) {
        if let (Source::Mount(id), Some(output)) = (passed.source, call_result(answer)) {
            passed.caller.state.links.learn(id, output.links());
        }
    }
}

/// A result's text cut at the tool's `max_output_chars`, the cut marked.
struct OutputCap;

impl Hook for OutputCap {
    fn after(&self, passed: &Passed<'_>, answer: &mut Answered) {
        if let (Some(max), Some(output)) = (passed.max_output_chars, call_result(answer)) {
            output.truncate_text(max);
        }
    }
}

/// The mounts that watch for writes told of a call that may have written, before its
/// result goes back, so that what the client lists next already follows the write.
struct WriteWatch;

impl Hook for WriteWatch {
    fn after(&self, passed: &Passed<'_>, answer: &mut Answered) {
        if !passed.may_write || call_result(answer).is_none() {
            return;
        }
        for watcher in passed.generation.write_watchers.iter().filter_map(|mount| mount.write_watcher()) {
            watcher.saw_write(passed.request.arguments());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::{Map, Value as Json, json};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::deploy::{CallContext, Deployment, Options};
    use crate::runtime::{BuildCx, ProviderError, Running, State, Status, ToolSpec};
    use crate::surface::{Exposure, Kind, MountCx, MountKind, ResolvedMount, Surface};

    /// A mount of one tool, `m__echo`, whose result is its `text` argument; it counts the calls it gets.
    struct Echo;
    static ECHOED: AtomicUsize = AtomicUsize::new(0);

    impl Running for Echo {
        fn status(&self) -> Status {
            Status::new(State::Ready, None)
        }
        fn tools(&self) -> Arc<Vec<ToolSpec>> {
            let definition = json!({ "name": "m__echo", "inputSchema": { "type": "object" } });
            Arc::new(vec![ToolSpec {
                name: "m__echo".into(),
                definition: Arc::new(definition.as_object().unwrap().clone()),
                ruled_as: None,
            }])
        }
        fn relay(&self, request: MountRequest, _: Client, _: CancellationToken) -> BoxFuture<'static, Answered> {
            ECHOED.fetch_add(1, Ordering::SeqCst);
            let text = request.arguments().get("text").cloned().unwrap_or_default();
            let output = ToolOutput { content: vec![json!({ "type": "text", "text": text })], ..ToolOutput::default() };
            Box::pin(std::future::ready(Ok(Answer::Tool(output))))
        }
        fn dispose(&self, _: Duration) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct EchoConfig {
        #[serde(default)]
        #[schemars(skip)]
        kind: String,
    }
    fn resolve_echo(_: &mut MountCx<'_>, config: EchoConfig) -> Option<ResolvedMount> {
        Some(ResolvedMount::new(config, Exposure::Dynamic { prefix: "m__".into(), raw: false }))
    }
    fn build_echo(_: EchoConfig, _: BuildCx) -> BoxFuture<'static, Result<Arc<dyn Running>, ProviderError>> {
        Box::pin(async { Ok(Arc::new(Echo) as Arc<dyn Running>) })
    }
    static ECHO: Kind<EchoConfig> = Kind { name: "echo", registry: "echo", resolve: resolve_echo, build: Some(build_echo), stand_in: None };
    struct EchoSurface;
    impl Surface for EchoSurface {
        fn service(&self) -> &'static str {
            "echo"
        }
        fn kinds(&self) -> &'static [&'static dyn MountKind] {
            static KINDS: [&dyn MountKind; 1] = [&ECHO];
            &KINDS
        }
    }
    static SURFACE: EchoSurface = EchoSurface;

    /// The test hook: a hook is one type. It writes what it sees to `seen`; it refuses a
    /// call that asks for `refuse`, shouts the `text` it lets on, and marks the result.
    struct Test {
        name: &'static str,
        seen: Arc<Mutex<Vec<String>>>,
    }

    impl Hook for Test {
        fn before<'a>(&'a self, passing: &'a mut Passing<'_>) -> BoxFuture<'a, Result<(), Refusal>> {
            let request = &passing.request;
            self.seen.lock().unwrap().push(format!(
                "{} before: {:?} {:?} gen {} {:?} {} {}",
                self.name,
                passing.caller.agent,
                passing.caller.token,
                passing.generation.number,
                passing.source,
                request.method(),
                request.target()
            ));
            if request.arguments().contains_key("refuse") {
                let refusal = Refusal { code: crate::codes::TOOL_UNAVAILABLE, message: format!("{} refused it", self.name), data: None };
                return Box::pin(std::future::ready(Err(refusal)));
            }
            if let Some(Json::String(text)) = passing.request.arguments_mut().and_then(|a| a.get_mut("text")) {
                *text = text.to_uppercase();
            }
            Box::pin(std::future::ready(Ok(())))
        }

        fn after(&self, passed: &Passed<'_>, answer: &mut Answered) {
            self.seen.lock().unwrap().push(format!("{} after: {}", self.name, passed.request.arguments()["text"]));
            if let Ok(Answer::Tool(output)) = answer {
                output.content.push(json!({ "type": "text", "text": format!("seen by {}", self.name) }));
            }
        }
    }

    fn texts(output: &ToolOutput) -> Vec<&str> {
        output.content.iter().filter_map(|block| block["text"].as_str()).collect()
    }

    /// Hooks run in their order on the way there (each sees the caller, the generation,
    /// the mount, the method, the target and the arguments as the hooks before it left
    /// them) and in the reverse order on the way back, where each may rewrite the answer;
    /// a refusal answers the request at once, and only the hooks it passed see it back.
    #[tokio::test]
    async fn a_request_passes_the_hooks_in_order_and_back_and_a_refusal_stops_it() {
        let (dir, file) = crate::deploy::tests::composition_file("chain", Some("seam: 1\nmounts:\n  m: { kind: echo }\n"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hook = |name| Arc::new(Test { name, seen: seen.clone() }) as Arc<dyn Hook>;
        let options = Options { hooks: vec![hook("outer"), hook("inner")], ..Options::default() };
        let engine = Arc::new(crate::Engine::new(vec![&SURFACE]));
        let deployment = Deployment::new(engine, &file, Arc::new(crate::env::ProcessEnv), options);
        assert_eq!(deployment.reload().await.outcome, crate::outcome::OutcomeKind::Applied);
        let caller = deployment.caller("default", Some("env:SEAM_TOKEN".into()));
        let call = |arguments: Json| {
            let arguments: Map<String, Json> = arguments.as_object().unwrap().clone();
            deployment.call(&caller, "m__echo", arguments, CallContext::default())
        };

        let output = call(json!({ "text": "hi" })).await;
        assert_eq!(texts(&output), ["HI", "seen by inner", "seen by outer"], "rewritten on the way there and back");
        let seen_now = std::mem::take(&mut *seen.lock().unwrap());
        let there = r#"before: "default" Some("env:SEAM_TOKEN") gen 1 Mount("m") tools/call m__echo"#;
        let back = ["inner after: \"HI\"".to_owned(), "outer after: \"HI\"".to_owned()];
        assert_eq!(seen_now, [format!("outer {there}"), format!("inner {there}"), back[0].clone(), back[1].clone()]);
        assert_eq!(ECHOED.load(Ordering::SeqCst), 1);

        let refused = call(json!({ "text": "no", "refuse": true })).await;
        assert!(refused.is_error);
        assert_eq!(texts(&refused), ["TOOL_UNAVAILABLE: outer refused it"], "the inner hook never saw it, nor did its after run");
        assert_eq!(ECHOED.load(Ordering::SeqCst), 1, "the mount never got it");
        assert_eq!(seen.lock().unwrap().len(), 1, "{:?}", seen.lock().unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

use super::*;
use crate::surface::{Kind, MountCx, MountKind, ResolvedMount, Surface};

/// A folder of this test run's own, `seam-<name>-<pid>` under the temp dir, and its
/// composition file `c.yaml` (written with `text` when given).
pub(crate) fn composition_file(name: &str, text: Option<&str>) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("seam-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("c.yaml");
    if let Some(text) = text {
        std::fs::write(&file, text).unwrap();
    }
    (dir, file)
}

/// A kind whose build records how many builds run at once, yielding so that others could start.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Probe {
    #[serde(default)]
    #[schemars(skip)]
    kind: String,
}
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);
fn resolve_probe(_: &mut MountCx<'_>, config: Probe) -> Option<ResolvedMount> {
    Some(ResolvedMount::new(config, Exposure::Dynamic { prefix: "probe__".into(), raw: false }))
}
fn build_probe(_: Probe, _: BuildCx) -> crate::runtime::BoxFuture<'static, Result<Arc<dyn Running>, crate::runtime::ProviderError>> {
    Box::pin(async {
        let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
        MOST.fetch_max(now, Ordering::SeqCst);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        RUNNING.fetch_sub(1, Ordering::SeqCst);
        Ok(Arc::new(Inert::no_runtime("probe")) as Arc<dyn Running>)
    })
}
static PROBE: Kind<Probe> = Kind { name: "probe", registry: "probe", resolve: resolve_probe, build: Some(build_probe), stand_in: None };
struct ProbeSurface;
impl Surface for ProbeSurface {
    fn service(&self) -> &'static str {
        "probe"
    }
    fn kinds(&self) -> &'static [&'static dyn MountKind] {
        static KINDS: [&dyn MountKind; 1] = [&PROBE];
        &KINDS
    }
}
static SURFACE: ProbeSurface = ProbeSurface;

/// A call before any generation is live (the first reload still building) answers
/// `TOOL_UNAVAILABLE`, not a hang or a panic.
#[tokio::test]
async fn a_call_before_any_generation_answers_tool_unavailable() {
    let engine = Arc::new(Engine::new(vec![&SURFACE]));
    let deployment = Deployment::new(engine, Path::new("/nonexistent/c.yaml"), Arc::new(crate::env::ProcessEnv), Options::default());
    let context = CallContext { roots: Default::default(), cancel: CancellationToken::new(), client: Default::default() };
    let caller = deployment.caller("default", None);
    let output = deployment.call(&caller, "probe__x", Map::new(), context).await;
    assert!(output.is_error);
    assert_eq!(output.content[0]["text"], "TOOL_UNAVAILABLE: no generation is live");
}

/// Builds are polled together, so without the bound all five would run at once.
#[tokio::test]
async fn no_more_mounts_start_at_once_than_max_concurrent_starts() {
    let mounts: String = (0..5).map(|i| format!("  m{i}: {{ kind: probe }}\n")).collect();
    let (dir, file) = composition_file("starts", Some(&format!("seam: 1\nmounts:\n{mounts}")));
    let engine = Arc::new(Engine::new(vec![&SURFACE]));
    for (limit, most) in [(2, 2), (5, 5)] {
        MOST.store(0, Ordering::SeqCst);
        let options = Options { max_concurrent_starts: limit, ..Options::default() };
        let deployment = Deployment::new(engine.clone(), &file, Arc::new(crate::env::ProcessEnv), options);
        let outcome = deployment.reload().await;
        assert_eq!((outcome.outcome, outcome.built.len()), (OutcomeKind::Applied, 5), "{:?}", outcome.diagnostics);
        assert_eq!(MOST.load(Ordering::SeqCst), most, "limit {limit}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// At most `KEPT_OUTCOMES` are kept: at the limit nothing is dropped, one past it the oldest goes.
#[tokio::test]
async fn the_last_fifty_outcomes_are_kept() {
    let (dir, file) = composition_file("outcomes", Some("seam: 1\n"));
    let engine = Arc::new(Engine::new(Vec::new()));
    let deployment = Deployment::new(engine, &file, Arc::new(crate::env::ProcessEnv), Options::default());
    assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied);
    for _ in 1..KEPT_OUTCOMES {
        assert_eq!(deployment.reload().await.outcome, OutcomeKind::Unchanged);
    }
    let kept = deployment.outcomes();
    assert_eq!(kept.len(), KEPT_OUTCOMES);
    assert_eq!(kept[0].outcome, OutcomeKind::Applied);
    deployment.reload().await;
    let kept = deployment.outcomes();
    assert_eq!(kept.len(), KEPT_OUTCOMES);
    assert_eq!(kept[0].outcome, OutcomeKind::Unchanged, "one past the limit, the oldest is dropped");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An environment whose `GATED` variable is read only when the test says so:
/// a composition that names it takes as long to check as the test likes.
struct GatedEnv {
    entered: tokio::sync::mpsc::UnboundedSender<()>,
    release: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl crate::env::Env for GatedEnv {
    fn var(&self, name: &str) -> Option<String> {
        if name == "GATED" {
            let _ = self.entered.send(());
            let _ = self.release.lock().unwrap().recv();
        }
        Some("x".to_owned())
    }
}

/// A check that finishes just inside `CHECK_DEADLINE` applies; one that
/// reaches it is rejected (`COMPOSITION_READ_TIMEOUT`) and frees the reload
/// lock, so the next reload runs while the stuck check is still going on.
#[tokio::test(start_paused = true)]
async fn a_check_gets_check_deadline_and_no_longer() {
    let (dir, file) = composition_file("deadline", None);
    let (entered, mut entering) = tokio::sync::mpsc::unbounded_channel();
    let (release, released) = std::sync::mpsc::channel();
    let env = Arc::new(GatedEnv { entered, release: Mutex::new(released) });
    let engine = Arc::new(Engine::new(Vec::new()));
    let deployment = Deployment::new(engine, &file, env, Options::default());
    for (step, (took, expected)) in
        [(CHECK_DEADLINE - Duration::from_millis(1), OutcomeKind::Applied), (CHECK_DEADLINE, OutcomeKind::Rejected)].into_iter().enumerate()
    {
        std::fs::write(&file, format!("seam: 1\nname: gated-{step}-${{GATED}}\n")).unwrap();
        let reload = tokio::spawn({
            let deployment = deployment.clone();
            async move { deployment.reload().await }
        });
        entering.recv().await.unwrap();
        assert!(deployment.status().reloading_since.is_some(), "/status says a reload is under way");
        tokio::time::advance(took).await;
        if expected == OutcomeKind::Rejected {
            // The check is still held: only the deadline can end the reload now.
            for _ in 0..100 {
                if reload.is_finished() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            assert!(reload.is_finished(), "the reload ends at the deadline");
            let outcome = reload.await.unwrap();
            assert_eq!(outcome.outcome, expected);
            assert_eq!(outcome.diagnostics[0]["code"], "COMPOSITION_READ_TIMEOUT");
            // The lock is free: a composition that checks at once applies, the stuck check still running.
            std::fs::write(&file, "seam: 1\nname: quick\n").unwrap();
            assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied);
            release.send(()).unwrap();
        } else {
            release.send(()).unwrap();
            assert_eq!(reload.await.unwrap().outcome, expected, "{took:?}");
        }
        assert!(deployment.status().reloading_since.is_none(), "and that it is over");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Checks left past their deadline are counted: with one short of
/// `MAX_STUCK_CHECKS` stuck a reload still runs its check, with that many
/// it is rejected at once, and once they end reloads run again.
#[tokio::test(start_paused = true)]
async fn no_more_than_max_stuck_checks_are_left_running() {
    let (dir, file) = composition_file("stuck", None);
    let (entered, mut entering) = tokio::sync::mpsc::unbounded_channel();
    let (release, released) = std::sync::mpsc::channel();
    let env = Arc::new(GatedEnv { entered, release: Mutex::new(released) });
    let deployment = Deployment::new(Arc::new(Engine::new(Vec::new())), &file, env, Options::default());
    let quick = |n: usize| std::fs::write(&file, format!("seam: 1\nname: quick-{n}\n")).unwrap();
    for stuck in 0..MAX_STUCK_CHECKS {
        quick(stuck);
        assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied, "{stuck} stuck: the check runs");
        std::fs::write(&file, "seam: 1\nname: gated-${GATED}\n").unwrap();
        let reload = tokio::spawn({
            let deployment = deployment.clone();
            async move { deployment.reload().await }
        });
        entering.recv().await.unwrap();
        tokio::time::advance(CHECK_DEADLINE).await;
        assert_eq!(reload.await.unwrap().outcome, OutcomeKind::Rejected);
    }
    quick(MAX_STUCK_CHECKS);
    let refused = deployment.reload().await;
    assert_eq!((refused.outcome, refused.diagnostics[0]["code"].as_str()), (OutcomeKind::Rejected, Some("COMPOSITION_READ_TIMEOUT")));
    for _ in 0..MAX_STUCK_CHECKS {
        release.send(()).unwrap();
    }
    // The released checks end on their own threads.
    while deployment.checks_running.load(Ordering::SeqCst) > 0 {
        tokio::task::yield_now().await;
        std::thread::yield_now();
    }
    assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied, "once they end, checks run again");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each agent's state is its own, reached through its caller: the same agent's callers
/// share it, another agent's never does, an agent the composition lacks gets a state
/// no table keeps, and a reload that removes an agent lets its state go.
#[tokio::test]
async fn each_agent_has_its_own_caller_state_while_the_composition_has_it() {
    let (dir, file) = composition_file("callers", Some("seam: 1\nagents:\n  reviewer: {}\n"));
    let engine = Arc::new(Engine::new(Vec::new()));
    let deployment = Deployment::new(engine, &file, Arc::new(crate::env::ProcessEnv), Options::default());
    assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied);
    let (default, reviewer) = (deployment.caller("default", None), deployment.caller("reviewer", Some("env:T".into())));
    default.state.links.learn("m", vec!["x://made".to_owned()]);
    assert_eq!(deployment.caller("default", None).state.links.mount_of("x://made").as_deref(), Some("m"), "the agent's own, kept");
    assert_eq!(reviewer.state.links.mount_of("x://made"), None, "never another agent's");
    let stranger = deployment.caller("stranger", None);
    stranger.state.links.learn("m", vec!["x://s".to_owned()]);
    assert_eq!(deployment.caller("stranger", None).state.links.mount_of("x://s"), None, "an unknown agent's is kept nowhere");

    std::fs::write(&file, "seam: 1\n").unwrap();
    assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied);
    std::fs::write(&file, "seam: 1\nagents:\n  reviewer: {}\n").unwrap();
    assert_eq!(deployment.reload().await.outcome, OutcomeKind::Applied);
    reviewer.state.links.learn("m", vec!["x://old".to_owned()]);
    assert_eq!(deployment.caller("reviewer", None).state.links.mount_of("x://old"), None, "removed, then added afresh");
    assert_eq!(deployment.caller("default", None).state.links.mount_of("x://made").as_deref(), Some("m"), "kept across reloads");
    std::fs::remove_dir_all(&dir).unwrap();
}

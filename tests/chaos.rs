//! Soak and chaos against `seam serve --transport http`, with real clients
//! (the official SDK) and real servers (`tests/peers/flaky-mcp-server.mjs`).
//! `SEAM_CHAOS=full` runs them at full size (`scripts/chaos`, minutes; the
//! figures go to BENCHMARKS.md); by default they run short, as CI does.
//! Each prints `CHAOS | test | measure | value` lines for the summary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::*;
use serde_json::{Value, json};

fn full() -> bool {
    std::env::var("SEAM_CHAOS").is_ok_and(|v| v == "full")
}

fn report(test: &str, measure: &str, value: impl std::fmt::Display) {
    eprintln!("CHAOS | {test} | {measure} | {value}");
}

/// The flaky server's tools beside its echo tools (`FLAKY_TOOLS`).
const CONTROL: [&str; 11] =
    ["set_tools", "crash", "hang", "sleep", "pid", "image", "structured", "fail", "bad_structured", "headers", "rpc_error"];

/// Processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        // `pid (comm) state ppid …`: the command may hold spaces, so read after its `)`.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) && !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')) {
            out.push(child);
        }
    }
    out
}

/// Every process below `pid`: children, their children, and so on.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for child in children(p) {
            out.push(child);
            frontier.push(child);
        }
    }
    out
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// What each descriptor is, for a failure's message.
fn fd_targets(pid: u32) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.flatten().filter_map(|e| std::fs::read_link(e.path()).ok()).map(|t| t.display().to_string()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The composition of the storm: a mount no edit touches (`stable`, which the
/// callers call), one whose tools every valid edit changes (`churn`), and one
/// that comes and goes (`extra`).
#[derive(Clone, PartialEq)]
struct Model {
    churn: String,
    extra: bool,
}

impl Model {
    fn mounts(&self) -> Vec<(&'static str, String)> {
        let mut m = vec![("stable", "ping".to_owned()), ("churn", self.churn.clone())];
        if self.extra {
            m.push(("extra", "more".to_owned()));
        }
        m
    }

    fn text(&self) -> String {
        let mounts: String = self.mounts().iter().map(|(id, tools)| flaky_mount(id, &[("FLAKY_TOOLS", tools)], "")).collect();
        format!("seam: 1\nname: storm\nmounts:\n{mounts}")
    }

    /// The tools a client of `default` should list for the composition `file` holds:
    /// the mounts `seam graph` plans, each with the tools this model gives it.
    fn predicted(&self, file: &Path) -> BTreeSet<String> {
        let out = Command::new(seam_bin()).args(["graph", &file.display().to_string(), "--format", "json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "seam graph: {}", String::from_utf8_lossy(&out.stderr));
        let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut tools = BTreeSet::new();
        for node in plan["nodes"].as_array().unwrap() {
            let Some(id) = node["id"].as_str().and_then(|n| n.strip_prefix("mount:")) else { continue };
            let echo = self.mounts().into_iter().find(|(m, _)| *m == id).map(|(_, t)| t).expect("a mount of the model");
            tools.extend(echo.split(',').chain(CONTROL).map(|t| format!("mcp__{id}__{t}")));
        }
        tools
    }
}

/// The kubelet's layout, so that every kind of write can be made to one file.
struct ConfigMap {
    dir: PathBuf,
    version: usize,
}

impl ConfigMap {
    fn new(dir: &Path, text: &str) -> ConfigMap {
        let mut cm = ConfigMap { dir: dir.to_owned(), version: 0 };
        cm.write_version(text);
        std::os::unix::fs::symlink(cm.version_name(), dir.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/seam.yaml", dir.join("seam.yaml")).unwrap();
        cm
    }
    fn version_name(&self) -> String {
        format!("..2026_12_03_10_00_00.{}", self.version)
    }
    fn write_version(&mut self, text: &str) {
        self.version += 1;
        let folder = self.dir.join(self.version_name());
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("seam.yaml"), text).unwrap();
    }
    fn file(&self) -> PathBuf {
        self.dir.join("seam.yaml")
    }
    /// An editor writing the file in place.
    fn write_in_place(&self, text: &str) {
        std::fs::write(self.file(), text).unwrap();
    }
    /// An editor's atomic save: a temporary file renamed over the real one.
    fn atomic_save(&self, text: &str) {
        let folder = self.dir.join(self.version_name());
        std::fs::write(folder.join(".seam.yaml.swp"), text).unwrap();
        std::fs::rename(folder.join(".seam.yaml.swp"), folder.join("seam.yaml")).unwrap();
    }
    /// The kubelet's update: a new folder, `..data` renamed over, the old folder removed.
    fn swap(&mut self, text: &str) {
        let old = self.version_name();
        self.write_version(text);
        std::os::unix::fs::symlink(self.version_name(), self.dir.join("..data_tmp")).unwrap();
        std::fs::rename(self.dir.join("..data_tmp"), self.dir.join("..data")).unwrap();
        std::fs::remove_dir_all(self.dir.join(old)).unwrap();
    }
}

/// Waits for the outcome an edit should have. One edit can cause more than
/// one reload (a swap touches `..data` and both version folders); the extra
/// ones re-read the same file, so they are `unchanged` after an applied edit
/// or `rejected` again after a rejected one, and are skipped. An edit that
/// should apply and is rejected is never followed by its `applied`, so the
/// wait fails with seam's log.
fn expect(seam: &mut HttpSeam, expected: &str, strays: &mut usize) {
    loop {
        match (outcome(seam).as_str(), expected) {
            (got, want) if got == want => return,
            ("unchanged", _) | ("rejected", "applied") => *strays += 1,
            (got, want) => panic!("expected {want}, got {got}"),
        }
    }
}

/// The next outcome seam logs: reload outcomes are read in the order they came.
fn outcome(seam: &mut HttpSeam) -> String {
    let event = seam.stderr.wait_event("a reload's outcome", |e| e["outcome"].is_string() && e["reload"].is_u64());
    event["outcome"].as_str().unwrap().to_owned()
}

/// Valid changes, invalid YAML, schema errors, half-written files, atomic
/// saves and ConfigMap swaps, while 8 clients call a tool every generation
/// has: no call fails; after every applied edit the catalog is the one
/// `seam graph` predicts; afterwards no child beyond the composition's is
/// alive and the descriptors are back to their count at the start.
#[test]
fn a_reload_storm_loses_no_call() {
    let edits = if full() { 1000 } else { 36 };
    let dir = scratch("chaos-storm");
    let mut model = Model { churn: "c0".into(), extra: false };
    let mut cm = ConfigMap::new(&dir, &model.text());
    let mut seam = HttpSeam::start(&cm.file(), &["--debounce", "20ms"]);
    let pid = seam.child.id();
    // The watcher holds descriptors of its own: counted once it says it watches.
    seam.stderr.wait_event("the watcher's start", |e| e["target"] == "seam::watch" && e["files"].is_string());
    let fds_at_start = open_fds(pid);
    let targets_at_start = fd_targets(pid);
    let mut checker = SdkClient::http(&format!("{}/mcp", seam.base));
    let names = |c: &mut SdkClient| c.tool_names().into_iter().collect::<BTreeSet<String>>();
    assert_eq!(names(&mut checker), model.predicted(&cm.file()));
    let mut callers: Vec<SdkClient> = (0..8).map(|_| SdkClient::http(&format!("{}/mcp", seam.base))).collect();
    for c in &mut callers {
        let started = c.send(json!({ "op": "hammer_start", "name": "mcp__stable__ping", "args": { "message": "storm" } }));
        assert_eq!(started["ok"], true, "{started}");
    }

    let started = Instant::now();
    let mut seed: u64 = 0x5eed;
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let mut strays = 0;
    for n in 1..=edits {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        // The last edit brings the start's composition back, so that descriptors can be compared.
        let kind = if n == edits { 0 } else { (seed >> 33) % 6 };
        // Every valid edit changes the model; the last one brings back the start's composition.
        let next = if n == edits {
            Model { churn: "c0".into(), extra: false }
        } else {
            Model { churn: format!("c{n}"), extra: if kind % 2 == 0 { !model.extra } else { model.extra } }
        };
        let text = next.text();
        let expected = match kind {
            0 => {
                cm.write_in_place(&text);
                "applied"
            }
            1 => {
                cm.write_in_place("seam: 1\nmounts: [\n");
                "rejected"
            }
            2 => {
                cm.write_in_place(&format!("{text}    startup_timeout: 10\n"));
                "rejected"
            }
            3 => {
                // Half a file (cut inside a flow sequence, so never valid), then the rest.
                let cut = text.find('[').unwrap() + 1;
                cm.write_in_place(&text[..cut]);
                expect(&mut seam, "rejected", &mut strays);
                cm.write_in_place(&text);
                "applied"
            }
            4 => {
                cm.atomic_save(&text);
                "applied"
            }
            _ => {
                cm.swap(&text);
                "applied"
            }
        };
        expect(&mut seam, expected, &mut strays);
        let got = expected;
        *counts
            .entry(["in place", "invalid YAML", "schema error", "half-written", "atomic save", "ConfigMap swap"][kind as usize])
            .or_default() += 1;
        if got == "applied" {
            model = next;
            assert_eq!(names(&mut checker), model.predicted(&cm.file()), "edit {n}: the served catalog");
        } else {
            assert_eq!(names(&mut checker), model.predicted_from_model(), "edit {n}: a rejected edit changes nothing");
        }
    }
    let elapsed = started.elapsed();
    let (mut calls, mut failed) = (0, 0);
    for mut c in callers {
        let stopped = hammer(&mut c, "hammer_stop");
        calls += stopped.calls;
        failed += stopped.failed;
        assert_eq!(stopped.failed, 0, "calls to a tool every generation has failed: {stopped:?}");
        assert!(stopped.succeeded > 0, "each caller was answered: {stopped:?}");
        c.close();
    }
    checker.close();
    report("storm", "edits", format!("{edits} ({counts:?})"));
    report("storm", "time", format!("{:.1} s", elapsed.as_secs_f64()));
    report("storm", "extra reloads (same file read again)", strays);
    report("storm", "calls by 8 clients / failed", format!("{calls} / {failed}"));

    // Nothing left behind: the composition's own children, and the descriptors of the start.
    let mounts = model.mounts().len();
    let kids = children(pid);
    assert_eq!(kids.len(), mounts, "children {kids:?} for {mounts} mounts");
    let deadline = Instant::now() + PATIENCE;
    let mut fds = open_fds(pid);
    while fds > fds_at_start && Instant::now() < deadline {
        // Closed sessions' sockets are released as their tasks end: look again shortly.
        std::thread::sleep(Duration::from_millis(100));
        fds = open_fds(pid);
    }
    report("storm", "descriptors at start / end", format!("{fds_at_start} / {fds}"));
    assert_eq!(fds, fds_at_start, "descriptors are back to their count at the start: {targets_at_start:?} then {:?}", fd_targets(pid));
}

impl Model {
    /// The catalog of this model without asking `seam graph` (the live one after a rejected edit).
    fn predicted_from_model(&self) -> BTreeSet<String> {
        self.mounts()
            .iter()
            .flat_map(|(id, echo)| echo.split(',').chain(CONTROL).map(move |t| format!("mcp__{id}__{t}")).collect::<Vec<_>>())
            .collect()
    }
}

/// Servers killed during calls, servers flooding their output, a server that
/// never answers, and seam itself killed and started again. A client calls the
/// victim's `sleep` throughout the kills: its calls succeed before the first
/// kill and again after each recovery, none fails while the server is up, and
/// each one that fails does so in a way a kill explains.
#[test]
fn faults_in_servers_and_in_seam_are_survived() {
    let dir = scratch("chaos-faults");
    let file = dir.join("seam.yaml");
    // Draining a flood takes seconds, more on a loaded machine (the 40 MB line about 1.5 s alone,
    // 10 s on two busy cores): the floods' start is bounded as a hang is, within HttpSeam::start's wait.
    let flood_start = format!("    startup_timeout: {}s\n", PATIENCE.as_secs() / 2);
    let text = format!(
        "seam: 1\nmounts:\n{}{}{}tools:\n  \"mcp__victim__hang\": {{ timeout: 1s }}\n",
        flaky_mount("victim", &[], "    reconnect: { initial_delay: 100ms, max_delay: 1s, max_attempts: 10 }\n"),
        flaky_mount("chatty", &[("FLAKY_FLOOD_STDERR_MB", "64")], &flood_start),
        flaky_mount("bigline", &[("FLAKY_FLOOD_STDOUT_MB", "40")], &flood_start),
    );
    std::fs::write(&file, &text).unwrap();
    let mut seam = HttpSeam::start(&file, &[]);
    let pid = seam.child.id();
    let status = seam.status();
    for id in ["victim", "chatty", "bigline"] {
        assert_eq!(status["mounts"][id]["state"], "ready", "{id} comes up despite its flood: {status}");
    }
    let (_, peak) = rss_kib(pid);
    report("faults", "seam's peak RSS with 64 MB of stderr and a 40 MB stdout line", format!("{:.1} MiB", peak as f64 / 1024.0));
    assert!(peak < 200 * 1024, "seam's memory is bounded by its caps: {peak} KiB");

    // kill -9 of a server while calls run: typed errors at most, then recovery, and no process left over.
    // No share of successes is bounded: calls are made one at a time, and while the server is down
    // each fails at once where a success takes its 20 ms, so failures can outnumber successes, by a
    // count that depends on the machine's speed. What is bounded is when calls fail, and how: only
    // between a kill and the first success after it, and only in the ways a kill explains.
    // The server died with the call in flight (or before seam saw it die), or is down while seam
    // connects a new one: either way the call is MCP_UNAVAILABLE, by its code, whatever its words.
    let explained = "tool error: MCP_UNAVAILABLE: ";
    let mut caller = SdkClient::http(&format!("{}/mcp", seam.base));
    hammer_start(&mut caller, "mcp__victim__sleep", json!({ "ms": 20 }), None);
    let mut up = hammer(&mut caller, "hammer_next");
    assert_eq!(up.failed, 0, "no fault yet, no failure: {up:?}");
    let kills = if full() { 20 } else { 3 };
    let mut killed = Vec::new();
    for _ in 0..kills {
        // Since the last success on the server that runs now, nothing was injected: nothing failed.
        let before = hammer(&mut caller, "hammer_tally");
        assert_eq!(before.failed, up.failed, "calls failed while the server was up: {before:?}");
        let victim = seam.status()["mounts"]["victim"]["pid"].as_u64().unwrap() as u32;
        signal(victim, "KILL");
        killed.push(victim);
        let deadline = Instant::now() + PATIENCE;
        // Back when it is ready with a new process (nothing announces it but /status).
        let back = |s: &Value| {
            s["mounts"]["victim"]["state"] == "ready" && s["mounts"]["victim"]["pid"].as_u64().is_some_and(|p| p as u32 != victim)
        };
        while !back(&seam.status()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(seam.status()["mounts"]["victim"]["state"], "ready");
        // Calls succeed again: the next to end after the new server is up is a success.
        up = hammer(&mut caller, "hammer_next");
        // A connection up for `max_delay` (1s) is stable and resets the reconnect budget; kills
        // closer together are a crash loop, which gives up after `max_attempts` (10) by design.
        // Holding the server up that long is the semantics under test, not a wait for an event:
        // 20 kills survive a budget of 10 only because each stable connection resets it.
        std::thread::sleep(Duration::from_millis(1100));
    }
    let stopped = hammer(&mut caller, "hammer_stop");
    report("faults", "calls during kills (ok / failed)", format!("{} / {}", stopped.succeeded, stopped.failed));
    report("faults", "failed calls by kind", format!("{:?}", stopped.kinds));
    assert_eq!(stopped.failed, up.failed, "calls failed after the last recovery: {stopped:?}");
    assert!(stopped.succeeded > kills, "a success before the first kill and after each recovery: {stopped:?}");
    for kind in stopped.kinds.keys() {
        assert!(kind.starts_with(explained), "a failure no kill explains, {kind}: {stopped:?}");
    }
    assert_eq!(caller.call_text("mcp__victim__sleep", json!({ "ms": 1 })), "slept", "it serves again");
    let reconnects = seam.metric("seam_upstream_reconnects_total{mount=\"victim\"}").unwrap_or_default();
    assert!(reconnects >= kills as f64, "each kill is a reconnect on /metrics: {reconnects}");
    for old in killed {
        assert!(!alive(old), "killed server {old} is gone");
    }

    // A server that never answers: the budget ends the call, the server serves the next one.
    let hung = caller.call("mcp__victim__hang", json!({}));
    assert!(hung["content"][0]["text"].as_str().unwrap().starts_with("TOOL_TIMEOUT"), "{hung}");
    assert_eq!(caller.call_text("mcp__victim__sleep", json!({ "ms": 1 })), "slept");
    caller.close();

    // seam killed outright: its children die with it; started again, it starts clean from the file.
    assert_eq!(children(pid).len(), 3, "{:?}", children(pid));
    kill_seam_and_expect_no_orphans(&mut seam);
    let again = HttpSeam::start(&file, &[]);
    let status = again.status();
    assert_eq!(status["generation"], 1);
    for id in ["victim", "chatty", "bigline"] {
        assert_eq!(status["mounts"][id]["state"], "ready");
    }
    report("faults", "seam restarted after kill -9", "clean: generation 1, all mounts ready, no orphans");
}

/// `kill -9` of seam: every process below it (children and theirs, such as
/// tsserver under typescript-language-server) is gone soon after.
fn kill_seam_and_expect_no_orphans(seam: &mut HttpSeam) -> usize {
    let pid = seam.child.id();
    let before = descendants(pid);
    signal(pid, "KILL");
    let _ = seam.child.wait();
    let deadline = Instant::now() + PATIENCE;
    while before.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let orphans: Vec<&u32> = before.iter().filter(|p| alive(**p)).collect();
    assert!(orphans.is_empty(), "processes outlived seam: {orphans:?} of {before:?}");
    before.len()
}

/// `kill -9` of a real language server (typescript-language-server, with its
/// tsserver children) while a client keeps asking `lsp` questions: the
/// question in flight is replayed on a new server, so no question fails (a
/// typed `LSP_UNAVAILABLE` would be allowed if a replay died too), the killed server's whole tree is gone, and after seam
/// itself is killed no process of the tree is left.
#[test]
fn a_language_server_killed_during_questions_is_replaced() {
    let dir = scratch("chaos-lsp");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("tsconfig.json"), r#"{ "compilerOptions": { "strict": true }, "include": ["src"] }"#).unwrap();
    std::fs::write(dir.join("src/greet.ts"), "export function shout(text: string): string {\n  return text.toUpperCase();\n}\n").unwrap();
    std::fs::write(dir.join("src/main.ts"), "import { shout } from \"./greet\";\nconsole.log(shout(\"hi\"));\n").unwrap();
    let file = dir.join("seam.yaml");
    std::fs::write(
        &file,
        format!(
            "seam: 1\nservices:\n  workspace: {{ root: . }}\nmounts:\n  typescript:\n    kind: lsp.stdio\n    command: {}\n    args: [--stdio]\n    extensions: {{ .ts: typescript }}\n    initialization_options: {{ tsserver: {{ useSyntaxServer: never }} }}\ntools:\n  lsp: true\n",
            json!(peer_bin("typescript-language-server"))
        ),
    )
    .unwrap();
    let mut seam = HttpSeam::start(&file, &[]);
    let question = json!({ "operation": "goToDefinition", "file_path": "src/main.ts", "line": 2, "character": 13 });
    let answer = "src/greet.ts:1:17  export function shout(text: string): string {";
    let mut asker = SdkClient::http(&format!("{}/mcp", seam.base));
    let first = asker.call("lsp", question.clone());
    assert_eq!(first["content"][0]["text"], answer, "{first}");
    hammer_start(&mut asker, "lsp", question.clone(), Some(answer));
    let mut probe = SdkClient::http(&format!("{}/mcp", seam.base));
    let server_pid = |seam: &HttpSeam| seam.status()["mounts"]["typescript"]["servers"][0]["pid"].as_u64().map(|p| p as u32);
    let kills = if full() { 10 } else { 2 };
    let mut killed = Vec::new();
    for _ in 0..kills {
        let victim = server_pid(&seam).expect("a server runs");
        let tree: Vec<u32> = std::iter::once(victim).chain(descendants(victim)).collect();
        signal(victim, "KILL");
        killed.extend(tree);
        // Back once questions are answered by a new server (nothing announces it but /status).
        wait_until("a new language server", || server_pid(&seam).is_some_and(|p| p != victim && alive(p)));
        // And answering, before the next kill: two kills within one question are two failures in a row.
        let answered = probe.call("lsp", question.clone());
        assert_eq!(answered["content"][0]["text"], answer, "{answered}");
    }
    let stopped = hammer(&mut asker, "hammer_stop");
    report("lsp", "questions during kills (ok / failed)", format!("{} / {}", stopped.succeeded, stopped.failed));
    for kind in stopped.kinds.keys() {
        assert!(kind.starts_with("tool error: LSP_UNAVAILABLE: "), "a typed error, not a wrong answer, {kind}: {stopped:?}");
    }
    assert!(stopped.succeeded > 0, "questions were answered between kills: {stopped:?}");
    let last = asker.call("lsp", question);
    assert_eq!(last["content"][0]["text"], answer, "it answers again: {last}");
    let starts = seam.metric("seam_language_server_starts_total{mount=\"typescript\"}");
    assert_eq!(starts, Some(kills as f64 + 1.0), "the first server and one after each kill, on /metrics");
    asker.close();
    probe.close();
    wait_dead(&killed);
    let tree = kill_seam_and_expect_no_orphans(&mut seam);
    assert!(tree >= 2, "the language server and its tsserver were below seam: {tree}");
    report("lsp", "seam killed: processes below it, all gone", tree);
}

/// Calls as fast as 4 clients make them (the issue asks for 1 call/ms) for a
/// while: seam's RSS grows no more than 10% (or 4 MiB) past what it was after the first fifth.
#[test]
fn memory_stays_flat_under_steady_calls() {
    let seconds = if full() { 600 } else { 15 };
    let dir = scratch("chaos-soak");
    let file = dir.join("seam.yaml");
    std::fs::write(&file, format!("seam: 1\nmounts:\n{}", flaky_mount("stable", &[], ""))).unwrap();
    let seam = HttpSeam::start(&file, &[]);
    let pid = seam.child.id();
    let mut callers: Vec<SdkClient> = (0..4).map(|_| SdkClient::http(&format!("{}/mcp", seam.base))).collect();
    for c in &mut callers {
        hammer_start(c, "mcp__stable__ping", json!({ "message": "soak" }), None);
    }
    let start = Instant::now();
    let mut samples = Vec::new();
    while start.elapsed() < Duration::from_secs(seconds) {
        // Sampling once a second is the measurement itself, not a wait for an event.
        std::thread::sleep(Duration::from_secs(1));
        samples.push(rss_kib(pid).0);
    }
    let (mut calls, mut failed) = (0, 0);
    for mut c in callers {
        let stopped = hammer(&mut c, "hammer_stop");
        calls += stopped.calls;
        failed += stopped.failed;
        assert_eq!(stopped.failed, 0, "{stopped:?}");
        assert!(stopped.succeeded > 0, "each caller was answered: {stopped:?}");
        c.close();
    }
    let warm = samples[samples.len() / 5];
    let after: Vec<u64> = samples[samples.len() / 5..].to_vec();
    let (low, high) = (*after.iter().min().unwrap(), *after.iter().max().unwrap());
    report(
        "soak",
        "duration / calls / calls per second / failed",
        format!("{seconds} s / {calls} / {:.0} / {failed}", calls as f64 / seconds as f64),
    );
    report(
        "soak",
        "RSS after warm-up, min–max",
        format!("{:.1} MiB, {:.1}–{:.1} MiB", warm as f64 / 1024.0, low as f64 / 1024.0, high as f64 / 1024.0),
    );
    assert_eq!(failed, 0);
    // A leak grows with the calls made; a slow machine makes fewer, so it can only lower the peak.
    // Memory given back is no fault: only growth past warm-up is bounded (10%, and 4 MiB of
    // allocator slack a small process would otherwise exceed by its noise alone).
    let bound = warm + (warm / 10).max(4 * 1024);
    assert!(high <= bound, "RSS grew past {bound} KiB from {warm} KiB after warm-up: {low}–{high}");
}

//! `seam test PATH...`: the cases of test files (`*.test.yaml`), checked against the
//! compositions they name (`seam_engine::expect`). By default nothing starts: MCP
//! mounts offer their case's fixtures; with `--live` the composition is started and
//! its servers' own tools are checked.
//!
//! A case's `env` is set in seam's own environment while the case is checked (and
//! put back after), since providers read their keys from it when a call selects
//! them. Cases run one after another on one thread for that reason.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seam_engine::diagnostic::{Diagnostic, Sources};
use seam_engine::expect::{self, CompositionRef, Served, TestFile};
use seam_engine::{Checked, Engine, render};
use serde_json::{Value as Json, json};

use crate::Exit;

/// How `seam test` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TestFormat {
    /// Like `cargo test`, each failure located with a caret.
    Human,
    /// GitHub Actions annotations.
    Github,
    /// JUnit XML, which CI systems read.
    Junit,
    Json,
}

/// The suffix of test files, which `seam validate` leaves out of a folder.
pub const TEST_SUFFIXES: [&str; 2] = [".test.yaml", ".test.yml"];

/// One case's outcome.
struct CaseRun {
    name: String,
    /// The diagnostics that fail it, with the sources they quote.
    failures: Vec<Diagnostic>,
    sources: Sources,
    agents: std::collections::BTreeMap<String, Served>,
}

/// One test file's outcome: its cases, or why it does not read.
struct FileRun {
    path: PathBuf,
    cases: Vec<CaseRun>,
    /// Diagnostics of the file itself (it does not read as cases).
    invalid: Vec<Diagnostic>,
    sources: Sources,
}

/// Runs the test files in `paths`, each read within `limit` bytes (`--max-composition-bytes`).
pub fn run(engine: &Engine, paths: &[PathBuf], format: TestFormat, live: bool, limit: u64) -> Result<Exit, crate::error::Error> {
    let files = super::validate::collect(paths, is_test_file)?;
    let mut runs = Vec::new();
    for file in files {
        runs.push(run_file(engine, &file, live, limit)?);
    }
    let failed = runs.iter().any(|f| !f.invalid.is_empty() || f.cases.iter().any(|c| !c.failures.is_empty()));
    super::print(&match format {
        TestFormat::Human => human(&runs),
        TestFormat::Github => github(&runs),
        TestFormat::Junit => junit(&runs),
        TestFormat::Json => format!("{}\n", serde_json::to_string_pretty(&json_report(&runs)).expect("serializable")),
    });
    Ok(if failed { Exit::Invalid } else { Exit::Valid })
}

pub fn is_test_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| TEST_SUFFIXES.iter().any(|s| n.ends_with(s)))
}

fn run_file(engine: &Engine, path: &Path, live: bool, limit: u64) -> Result<FileRun, crate::error::Error> {
    // Read as a composition is: a regular file, opened without blocking, within the byte
    // budget; one that is not is this file's failure, and the others still run.
    let text = match seam_engine::load::read_bounded(path, limit) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(seam_engine::load::Unread::Io(source)) => return Err(crate::error::Error::Read { path: path.to_owned(), source }),
        Err(unread) => {
            let mut sources = Sources::default();
            let file = sources.add(path.to_owned(), "".into());
            let span = seam_engine::diagnostic::Span { file, line: 1, column: 1 };
            let why = crate::error::Error::unread(path, limit, unread).to_string();
            let invalid = vec![Diagnostic::new(seam_engine::codes::TEST_FILE_INVALID, span, "", why)];
            return Ok(FileRun { path: path.to_owned(), cases: Vec::new(), invalid, sources });
        }
    };
    let mut sources = Sources::default();
    let id = sources.add(path.to_owned(), Arc::from(text.as_str()));
    let mut run = FileRun { path: path.to_owned(), cases: Vec::new(), invalid: Vec::new(), sources };
    let tree = match seam_engine::yaml::parse(&text, id) {
        Ok(tree) => tree,
        Err(d) => {
            run.invalid.push(d);
            return Ok(run);
        }
    };
    let cases: TestFile = match expect::read(&tree) {
        Ok(cases) => cases,
        Err(diagnostics) => {
            run.invalid = diagnostics;
            return Ok(run);
        }
    };
    for (name, case) in &cases.cases {
        let at = expect::case_pointer(name);
        let saved = set_env(&case.env);
        let outcome = run_case(engine, path, &text, &tree, &run.sources, case, &at, live);
        restore_env(saved);
        run.cases.push(CaseRun { name: name.clone(), ..outcome? });
    }
    Ok(run)
}

#[allow(clippy::too_many_arguments)]
fn run_case(
    engine: &Engine,
    path: &Path,
    text: &str,
    tree: &seam_engine::yaml::Node,
    test_sources: &Sources,
    case: &expect::Case,
    at: &str,
    live: bool,
) -> Result<CaseRun, crate::error::Error> {
    let env = seam_engine::env::ProcessEnv;
    // A composition written in the case is checked as the test file's own lines, so its diagnostics point into it.
    let (composition, checked, inline) = match &case.composition {
        CompositionRef::Path(written) => {
            let file = seam_engine::surface::resolve_path(path, written);
            match engine.check_file(&file, &env) {
                Ok(checked) => (file, checked, None),
                Err(e) => {
                    let pointer = format!("{at}/composition");
                    let d = Diagnostic::new(
                        seam_engine::codes::TEST_COMPOSITION_UNREADABLE,
                        locate_in(tree, &pointer),
                        pointer,
                        format!("{}: {}", file.display(), e.error),
                    );
                    return Ok(CaseRun {
                        name: String::new(),
                        failures: vec![d],
                        sources: test_sources.clone(),
                        agents: Default::default(),
                    });
                }
            }
        }
        CompositionRef::Inline(composition) => {
            let inline = serde_json::to_string(composition).expect("JSON prints");
            let checked = engine.check_bytes(path, inline.clone().into_bytes(), &env);
            (path.to_owned(), relocated(checked, &inline, text, tree, &format!("{at}/composition")), Some(inline))
        }
    };
    let failed =
        |failures: Vec<Diagnostic>, sources: Sources| Ok(CaseRun { name: String::new(), failures, sources, agents: Default::default() });
    if checked.errors() > 0 {
        let errors = checked.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
        return failed(errors, checked.sources);
    }
    let mounts: Vec<(String, seam_engine::surface::Exposure)> = checked
        .resolved
        .iter()
        .flat_map(|r| r.mounts.iter().filter_map(|(id, m)| Some((id.clone(), m.resolved.as_ref()?.exposure.clone()))))
        .collect();
    let fixtures = match expect::fixtures(case, &mounts, tree, at) {
        Ok(fixtures) => fixtures,
        Err(strays) => return failed(strays, test_sources.clone()),
    };
    if live && !case.env.is_empty() {
        let pointer = format!("{at}/env");
        let message = "with `--live` the composition's servers run in seam's own process, which a case cannot give variables \
                       of its own: set them around `seam test --live`";
        return failed(
            vec![Diagnostic::new(seam_engine::codes::TEST_FILE_INVALID, locate_in(tree, &pointer), pointer, message)],
            test_sources.clone(),
        );
    }
    // A runtime of the case's own, built after its variables are set and shut down before
    // they are put back (`set_env`; a `--live` case sets none).
    let runtime = if live { super::runtime()? } else { super::single_client_runtime()? };
    let verdict = runtime.block_on(async {
        if live {
            check_live(&composition, inline.as_deref(), case, tree, at).await
        } else {
            check_rehearsed(&composition, checked, &fixtures, case, tree, at).await
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match verdict {
        Ok(verdict) => {
            Ok(CaseRun { name: String::new(), failures: verdict.failures, sources: test_sources.clone(), agents: verdict.agents })
        }
        Err(failure) => failed(vec![failure], test_sources.clone()),
    }
}

/// The span of `pointer` in the test file.
fn locate_in(tree: &seam_engine::yaml::Node, pointer: &str) -> seam_engine::diagnostic::Span {
    let segments = seam_engine::diagnostic::pointer_segments(pointer);
    let (node, _, _) = tree.lookup(&segments);
    node.span
}

/// An inline composition's check (of `inline`, its JSON on one line), its diagnostics
/// in that text moved to where the test file (`text`, `tree`) writes what they point
/// at: to the key when they pointed at a key, else to the value.
fn relocated(mut checked: Checked, inline: &str, text: &str, tree: &seam_engine::yaml::Node, at: &str) -> Checked {
    use seam_engine::diagnostic::{FileId, pointer_segments};
    let file = FileId(0);
    let mut sources = Sources::default();
    for (id, source) in checked.sources.files() {
        sources.add(source.path.clone(), if id == file { Arc::from(text) } else { source.text.clone() });
    }
    let inline_tree = seam_engine::yaml::parse(inline, file).ok();
    for d in checked.diagnostics.iter_mut().filter(|d| d.span.file == file) {
        let at_key = inline_tree.as_ref().is_some_and(|t| t.lookup(&pointer_segments(&d.pointer)).1 == Some(d.span));
        let segments = pointer_segments(&format!("{at}{}", d.pointer));
        let (node, key, depth) = tree.lookup(&segments);
        d.span = if at_key || depth < segments.len() { key.unwrap_or(node.span) } else { node.span };
    }
    checked.sources = sources;
    checked
}

/// The case against the generation its composition would be, with no server started.
async fn check_rehearsed(
    composition: &Path,
    checked: Checked,
    fixtures: &expect::Fixtures,
    case: &expect::Case,
    tree: &seam_engine::yaml::Node,
    at: &str,
) -> Result<expect::Verdict, Diagnostic> {
    let deployment = seam_engine::deploy::Deployment::new(
        Arc::new(crate::engine()),
        composition,
        Arc::new(seam_engine::env::ProcessEnv),
        Default::default(),
    );
    let generation = match deployment.rehearse(checked, |id| fixtures.offered.get(id).cloned().unwrap_or(Json::Null)).await {
        Ok(Some(generation)) => generation,
        Ok(None) => {
            let pointer = format!("{at}/composition");
            let message = "the composition has errors, and no generation can be built of it";
            return Err(Diagnostic::new(seam_engine::codes::TEST_COMPOSITION_UNREADABLE, locate_in(tree, &pointer), pointer, message));
        }
        Err((id, why)) => {
            let given = [
                ("tools", &case.tools),
                ("prompts", &case.prompts),
                ("resources", &case.resources),
                ("resource_templates", &case.resource_templates),
            ];
            let pointer = given
                .into_iter()
                .find(|(_, lists)| lists.contains_key(&id))
                .map_or(format!("{at}/composition"), |(key, _)| format!("{at}/{key}/{id}"));
            let span = locate_in(tree, &pointer);
            return Err(Diagnostic::new(seam_engine::codes::TEST_FIXTURE_INVALID, span, pointer, format!("mount `{id}`'s fixture: {why}")));
        }
    };
    let verdict = expect::check(&generation, case, &fixtures.unfixtured, tree, at).await;
    for slot in generation.mounts.values() {
        slot.running.dispose(std::time::Duration::from_secs(5)).await;
    }
    Ok(verdict)
}

/// The case against the composition started, its servers' tools as they list them.
async fn check_live(
    composition: &Path,
    inline: Option<&str>,
    case: &expect::Case,
    tree: &seam_engine::yaml::Node,
    at: &str,
) -> Result<expect::Verdict, Diagnostic> {
    // A composition written in the case runs from a file beside the test file, so that what it extends is found.
    let written = inline.map(|text| {
        let dir = composition.parent().unwrap_or(Path::new("."));
        let file = dir.join(format!(".seam-test-{}.yaml", std::process::id()));
        std::fs::write(&file, text).map(|()| file)
    });
    let file = match &written {
        Some(Ok(file)) => file.as_path(),
        Some(Err(e)) => {
            let pointer = format!("{at}/composition");
            let message = format!("the case's composition could not be written beside the test file to start it: {e}");
            return Err(Diagnostic::new(seam_engine::codes::TEST_COMPOSITION_UNREADABLE, locate_in(tree, &pointer), pointer, message));
        }
        None => composition,
    };
    let started =
        super::serve::start(crate::engine(), file, std::time::Duration::from_secs(5), super::serve::Reach::Local, Vec::new()).await;
    if let Some(Ok(file)) = &written {
        let _ = std::fs::remove_file(file);
    }
    let deployment = match started {
        Ok(deployment) => deployment,
        Err(_) => {
            let pointer = format!("{at}/composition");
            let message = "the composition did not start (its diagnostics are above)".to_owned();
            return Err(Diagnostic::new(seam_engine::codes::TEST_EXPECTATION_FAILED, locate_in(tree, &pointer), pointer, message));
        }
    };
    let verdict = match deployment.live() {
        Some(generation) => expect::check(&generation, case, &[], tree, at).await,
        None => expect::Verdict::default(),
    };
    deployment.shutdown().await;
    Ok(verdict)
}

/// Sets the case's variables; what they were before, to put back.
fn set_env(vars: &std::collections::BTreeMap<String, String>) -> Vec<(String, Option<std::ffi::OsString>)> {
    let mut saved = Vec::new();
    for (name, value) in vars {
        saved.push((name.clone(), std::env::var_os(name)));
        // SAFETY: `seam test` sets variables only between cases, on its one thread: each case's
        // runtime is built after this and shut down before `restore_env` (`run_case`).
        unsafe { std::env::set_var(name, value) };
    }
    saved
}

fn restore_env(saved: Vec<(String, Option<std::ffi::OsString>)>) {
    for (name, value) in saved.into_iter().rev() {
        // SAFETY: as in `set_env`.
        unsafe {
            match value {
                Some(value) => std::env::set_var(&name, value),
                None => std::env::remove_var(&name),
            }
        }
    }
}

/// What an agent is served, as every report states it.
fn served_line(agent: &str, served: &Served) -> String {
    let deferred = match served.deferred {
        0 => String::new(),
        n => format!(" and {n} deferred, {} tokens with every tool listed", served.catalog_tokens_all),
    };
    format!(
        "agent `{agent}`: {} tool{}, about {} tokens{deferred} ({} estimate)",
        served.tools,
        if served.tools == 1 { "" } else { "s" },
        served.catalog_tokens,
        seam_engine::tokens::ENCODING
    )
}

fn human(runs: &[FileRun]) -> String {
    let mut out = String::new();
    let (mut passed, mut failed) = (0, 0);
    let mut failures = String::new();
    for file in runs {
        let shown = file.path.display();
        out.push_str(&format!("\nrunning {} cases from {shown}\n", file.cases.len()));
        // A file that does not read as cases is one failure, however many diagnostics say why.
        if !file.invalid.is_empty() {
            failed += 1;
        }
        for d in &file.invalid {
            failures.push_str(&render::human(d, &file.sources));
        }
        for case in &file.cases {
            let ok = case.failures.is_empty();
            out.push_str(&format!("case {} ... {}\n", case.name, if ok { "ok" } else { "FAILED" }));
            for (agent, served) in &case.agents {
                out.push_str(&format!("    {}\n", served_line(agent, served)));
            }
            if ok {
                passed += 1;
                continue;
            }
            failed += 1;
            failures.push_str(&format!("\n---- {shown}: {} ----\n", case.name));
            for d in &case.failures {
                failures.push_str(&render::human(d, &case.sources));
            }
        }
    }
    if !failures.is_empty() {
        out.push_str(&format!("\nfailures:\n{failures}"));
    }
    let result = if failed == 0 { "ok" } else { "FAILED" };
    out.push_str(&format!("\ntest result: {result}. {passed} passed; {failed} failed\n"));
    out
}

fn github(runs: &[FileRun]) -> String {
    let mut out = String::new();
    for file in runs {
        for d in &file.invalid {
            out.push_str(&render::github(d, &file.sources));
        }
        for case in &file.cases {
            for d in &case.failures {
                out.push_str(&render::github(d, &case.sources));
            }
            // Each agent's figure, passed or not, as a notice on the file.
            for (agent, served) in &case.agents {
                let line = served_line(agent, served).replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
                out.push_str(&format!(
                    "::notice file={},title={}::{line}\n",
                    file.path.display(),
                    case.name.replace(',', "%2C").replace(':', "%3A")
                ));
            }
        }
    }
    out
}

/// Text as XML takes it in an attribute or an element: XML 1.0 takes no control
/// character but a line break or a tab, even escaped.
fn xml(text: &str) -> String {
    render::escape_markup(&text.replace(|c: char| c.is_control() && !matches!(c, '\n' | '\t' | '\r'), "\u{FFFD}"))
}

fn junit(runs: &[FileRun]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"seam test\">\n");
    for file in runs {
        let name = xml(&file.path.display().to_string());
        let failures = file.cases.iter().filter(|c| !c.failures.is_empty()).count() + usize::from(!file.invalid.is_empty());
        let tests = file.cases.len() + usize::from(!file.invalid.is_empty());
        out.push_str(&format!("  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">\n"));
        if !file.invalid.is_empty() {
            let text: String = file.invalid.iter().map(|d| render::human(d, &file.sources)).collect();
            out.push_str(&format!(
                "    <testcase name=\"(the file)\" classname=\"{name}\">\n      <failure message=\"the file does not read as cases\">{}</failure>\n    </testcase>\n",
                xml(&text)
            ));
        }
        for case in &file.cases {
            out.push_str(&format!("    <testcase name=\"{}\" classname=\"{name}\">\n", xml(&case.name)));
            if let Some(first) = case.failures.first() {
                let text: String = case.failures.iter().map(|d| render::human(d, &case.sources)).collect();
                out.push_str(&format!("      <failure message=\"{}\">{}</failure>\n", xml(&first.message), xml(&text)));
            }
            let served: Vec<String> = case.agents.iter().map(|(agent, s)| served_line(agent, s)).collect();
            if !served.is_empty() {
                out.push_str(&format!("      <system-out>{}</system-out>\n", xml(&served.join("\n"))));
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn diagnostic_json(d: &Diagnostic, sources: &Sources) -> Json {
    json!({
        "file": sources.path(d.span.file),
        "line": d.span.line,
        "column": d.span.column,
        "pointer": d.pointer,
        "severity": d.severity().as_str(),
        "code": d.code,
        "message": d.message,
    })
}

fn json_report(runs: &[FileRun]) -> Json {
    let files: Vec<Json> = runs
        .iter()
        .map(|file| {
            let cases: Vec<Json> = file
                .cases
                .iter()
                .map(|case| {
                    json!({
                        "name": case.name,
                        "passed": case.failures.is_empty(),
                        "failures": case.failures.iter().map(|d| diagnostic_json(d, &case.sources)).collect::<Vec<_>>(),
                        "agents": case.agents,
                    })
                })
                .collect();
            json!({
                "file": file.path,
                "invalid": file.invalid.iter().map(|d| diagnostic_json(d, &file.sources)).collect::<Vec<_>>(),
                "cases": cases,
            })
        })
        .collect();
    let passed = runs.iter().flat_map(|f| &f.cases).filter(|c| c.failures.is_empty()).count();
    let failed =
        runs.iter().map(|f| f.cases.iter().filter(|c| !c.failures.is_empty()).count() + usize::from(!f.invalid.is_empty())).sum::<usize>();
    json!({ "files": files, "passed": passed, "failed": failed, "token_estimate": seam_engine::tokens::ENCODING })
}

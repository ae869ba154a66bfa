//! `seam test`: test files of what compositions mean, run by the binary as CI runs
//! it, with each failing expectation located in its file, in every output format.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{files_under, root, scratch, seam_bin};

/// `seam test ARGS` from the repository's root, with no provider key of this machine's
/// and the installed peers on PATH.
fn seam_test(args: &[&str]) -> Output {
    let path = format!("{}:{}", root().join(".cache/peers/node_modules/.bin").display(), std::env::var("PATH").unwrap_or_default());
    Command::new(seam_bin())
        .arg("test")
        .args(args)
        .current_dir(root())
        .env("PATH", path)
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("SEAM_WEB_SEARCH")
        .output()
        .expect("seam runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

/// A composition whose reviewer was meant to read only: its rule adds the read tools to
/// what it inherits, so it still sees the write tool. The case says so, and fails.
const REVIEWER_WRITES: &str = "\
seam_test: 1
cases:
  the reviewer cannot write:
    composition:
      seam: 1
      mounts:
        fs: { kind: mcp.stdio, command: mcp-server-filesystem, args: [/tmp] }
      agents:
        reviewer: { parent: default, tools: { \"mcp__fs__read*\": true } }
    tools:
      fs: [read_file, write_file, { name: list_directory, description: Lists a folder., inputSchema: { type: object } }]
    agents:
      reviewer:
        tools:
          includes: [\"mcp__fs__read*\", mcp__fs__list_directory]
          excludes: [\"mcp__fs__write*\"]
        tool:
          mcp__fs__read_file: { served_by: fs }
  no such agent:
    composition: missing.yaml
    agents: { nobody: {} }
";

/// Every shipped composition has a test file beside it, and its cases pass.
#[test]
fn every_shipped_composition_has_tests_that_pass() {
    let compositions = files_under(&root().join("compositions"));
    let is_test = |p: &Path| p.to_string_lossy().ends_with(".test.yaml");
    for composition in compositions.iter().filter(|p| p.extension().is_some_and(|e| e == "yaml") && !is_test(p)) {
        let tests = composition.with_extension("test.yaml");
        assert!(tests.is_file(), "{} has no {}", composition.display(), tests.display());
    }
    let o = seam_test(&["compositions/", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = json(&o);
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), compositions.iter().filter(|p| is_test(p)).count());
    assert_eq!(report["failed"], 0);
    for case in files.iter().flat_map(|f| f["cases"].as_array().unwrap()) {
        assert_eq!(case["passed"], true, "{case}");
        // The catalog's size is always reported, as an estimate.
        for (agent, served) in case["agents"].as_object().unwrap() {
            assert!(served["catalog_tokens"].as_u64().unwrap() > 0, "{agent}: {served}");
        }
    }
    assert_eq!(report["token_estimate"], "o200k_base");
}

/// Each failing expectation is reported at its own line and column, with a caret, like
/// `cargo test`; a case whose composition cannot be read fails alone; the exit code is 1.
#[test]
fn a_failing_expectation_is_located_in_its_file() {
    let dir = scratch("test-files-located");
    let file = write(&dir, "reviewer.test.yaml", REVIEWER_WRITES);
    let o = seam_test(&[&file]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("case the reviewer cannot write ... FAILED"), "{out}");
    let excluded = format!(
        "{file}:16:22: error[TEST_EXPECTATION_FAILED]: agent `reviewer` is served tool `mcp__fs__write_file`, which `mcp__fs__write*` excludes\n   |\n16 |           excludes: [\"mcp__fs__write*\"]\n   |                      ^\n"
    );
    assert!(out.contains(&excluded), "{out}");
    let missing = format!("{file}:20:18: error[TEST_COMPOSITION_UNREADABLE]: {}", dir.join("missing.yaml").display());
    assert!(out.contains(&missing), "{out}");
    assert!(out.contains("test result: FAILED. 0 passed; 2 failed"), "{out}");
    // What passed raised nothing: the includes (a glob and a tool given as an object), and who serves the read tool.
    assert_eq!(out.matches("TEST_EXPECTATION_FAILED").count(), 1, "{out}");
}

/// `--format github` gives one annotation per failure; `--format json` gives the same
/// failures with their pointers; `--format junit` is XML a JUnit reader takes.
#[test]
fn failures_in_every_format() {
    let dir = scratch("test-files-formats");
    let file = write(&dir, "reviewer.test.yaml", REVIEWER_WRITES);
    let github = seam_test(&[&file, "--format", "github"]);
    assert_eq!(github.status.code(), Some(1));
    let annotations = String::from_utf8(github.stdout).unwrap();
    assert!(annotations.contains(&format!("::error file={file},line=16,col=22,")), "{annotations}");
    assert_eq!(annotations.lines().filter(|l| l.starts_with("::error ")).count(), 2, "{annotations}");

    let report = json(&seam_test(&[&file, "--format", "json"]));
    let cases = report["files"][0]["cases"].as_array().unwrap();
    let failure = &cases[0]["failures"][0];
    assert_eq!(failure["pointer"], "/cases/the reviewer cannot write/agents/reviewer/tools/excludes/0");
    assert_eq!((failure["line"].as_u64(), failure["column"].as_u64()), (Some(16), Some(22)));
    assert_eq!(failure["code"], "TEST_EXPECTATION_FAILED");
    assert_eq!(cases[0]["agents"]["reviewer"]["tools"], 3);
    assert_eq!((report["passed"].as_u64(), report["failed"].as_u64()), (Some(0), Some(2)));

    // Python's own XML reader, as a JUnit consumer reads the report.
    let junit = seam_test(&[&file, "--format", "junit"]);
    let xml = dir.join("report.xml");
    std::fs::write(&xml, &junit.stdout).unwrap();
    let read = "import sys, xml.etree.ElementTree as E\n\
        s = E.parse(sys.argv[1]).getroot().find('testsuite')\n\
        print(s.get('tests'), s.get('failures'), [c.get('name') for c in s.iter('testcase') if c.find('failure') is not None])";
    let o = Command::new("python3").args(["-c", read]).arg(&xml).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "2 2 ['the reviewer cannot write', 'no such agent']", "{}", text(&o));
}

/// `max_catalog_tokens` at the agent's figure passes, and one below it fails.
#[test]
fn the_catalog_budget_at_its_figure_and_one_below() {
    let dir = scratch("test-files-budget");
    let case = |budget: &str| {
        format!(
            "seam_test: 1\ncases:\n  budget:\n    composition: {}\n    agents:\n      default: {{ {budget} }}\n",
            root().join("compositions/examples/fetch-guarded.yaml").display()
        )
    };
    let figure = json(&seam_test(&[&write(&dir, "figure.test.yaml", &case("")), "--format", "json"]))["files"][0]["cases"][0]["agents"]
        ["default"]["catalog_tokens"]
        .as_u64()
        .unwrap();
    let at = seam_test(&[&write(&dir, "at.test.yaml", &case(&format!("max_catalog_tokens: {figure}")))]);
    assert_eq!(at.status.code(), Some(0), "{}", text(&at));
    let over = seam_test(&[&write(&dir, "over.test.yaml", &case(&format!("max_catalog_tokens: {}", figure - 1)))]);
    assert_eq!(over.status.code(), Some(1), "{}", text(&over));
    assert!(text(&over).contains(&format!("costs about {figure} tokens (o200k_base estimate), over its budget of {}", figure - 1)));
}

/// A case's `env` holds for that case only: the next case sees the environment as it was.
#[test]
fn a_case_s_environment_is_its_own() {
    let dir = scratch("test-files-env");
    let base = root().join("compositions/base.yaml").display().to_string();
    let file = write(
        &dir,
        "env.test.yaml",
        &format!(
            "seam_test: 1\ncases:\n  with a key:\n    composition: {base}\n    env: {{ DEEPSEEK_API_KEY: not-a-real-key }}\n    agents:\n      default: {{ providers: {{ web_search: deepseek-official }} }}\n  \
             without:\n    composition: {base}\n    agents:\n      default: {{ providers: {{ web_search: {{ error: WEB_PROVIDER_CREDENTIAL_MISSING }} }} }}\n"
        ),
    );
    let o = seam_test(&[&file]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// A test file that does not read as cases, and a fixture that does not read as an MCP
/// server's list, are reported where they are written.
#[test]
fn a_bad_test_file_or_fixture_is_located() {
    let dir = scratch("test-files-bad");
    let file =
        write(&dir, "typo.test.yaml", "seam_test: 1\ncases:\n  one:\n    composition: x.yaml\n    agents: { default: { tols: {} } }\n");
    let o = seam_test(&[&file]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(&format!("{file}:5:24: error[TEST_FILE_INVALID]")), "{}", text(&o));

    let everything = root().join("compositions/examples/mcp-everything.yaml").display().to_string();
    let fixture = format!(
        "seam_test: 1\ncases:\n  one:\n    composition: {everything}\n    tools:\n      everything: [{{ title: no name }}]\n    agents: {{ default: {{}} }}\n"
    );
    let o = seam_test(&[&write(&dir, "fixture.test.yaml", &fixture)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains(&format!(
            "{}:6:19: error[TEST_FIXTURE_INVALID]: mount `everything`'s fixture",
            dir.join("fixture.test.yaml").display()
        )),
        "{}",
        text(&o)
    );
}

/// A composition written in the case is checked as the test file's own lines.
#[test]
fn an_inline_composition_s_diagnostics_point_into_the_test_file() {
    let dir = scratch("test-files-inline");
    let file = write(
        &dir,
        "inline.test.yaml",
        "seam_test: 1\ncases:\n  broken:\n    composition:\n      seam: 1\n      mounts:\n        fs: { kind: mcp.stdio, comand: x }\n    agents: {}\n",
    );
    let o = seam_test(&[&file]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(&format!("{file}:7:32: error[SCHEMA_UNKNOWN_KEY]: unknown key `comand`")), "{}", text(&o));
}

/// By default nothing starts, and a mount with no fixture is taken to offer the tools
/// the case names; `--live` starts server-everything and checks the tools it lists.
#[test]
fn live_checks_the_tools_the_server_lists() {
    let dir = scratch("test-files-live");
    let everything = root().join("compositions/examples/mcp-everything.yaml").display().to_string();
    let file = write(
        &dir,
        "live.test.yaml",
        &format!(
            "seam_test: 1\ncases:\n  named tools:\n    composition: {everything}\n    agents:\n      default:\n        tools: {{ includes: [mcp__everything__echo, mcp__everything__no-such-tool] }}\n"
        ),
    );
    let rehearsed = seam_test(&[&file]);
    assert_eq!(rehearsed.status.code(), Some(0), "{}", text(&rehearsed));
    let live = seam_test(&[&file, "--live"]);
    assert_eq!(live.status.code(), Some(1), "{}", text(&live));
    let out = text(&live);
    assert!(out.contains("is served no tool `mcp__everything__no-such-tool`"), "{out}");
    assert!(!out.contains("is served no tool `mcp__everything__echo`"), "{out}");
    // The shipped case holds against the real server too.
    let shipped = seam_test(&["compositions/examples/mcp-everything.test.yaml", "--live"]);
    assert_eq!(shipped.status.code(), Some(0), "{}", text(&shipped));
}

/// A glob over the tools of an MCP mount the case gives no fixture for cannot be
/// checked without its server: it fails, saying so, rather than pass on nothing.
#[test]
fn a_glob_over_a_server_s_unknown_tools_fails_until_they_are_given() {
    let dir = scratch("test-files-unfixtured");
    let case = |tools: &str| {
        format!(
            "seam_test: 1\ncases:\n  reviewer:\n    composition:\n      seam: 1\n      mounts:\n        fs: {{ kind: mcp.stdio, command: mcp-server-filesystem, args: [/tmp] }}\n      \
             agents:\n        reviewer: {{ parent: default, tools: {{ \"mcp__fs__*\": false, \"mcp__fs__read*\": true }} }}\n{tools}    agents:\n      \
             reviewer:\n        tools: {{ excludes: [\"mcp__fs__write*\"] }}\n"
        )
    };
    let unknown = seam_test(&[&write(&dir, "unknown.test.yaml", &case(""))]);
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown));
    assert!(
        text(&unknown).contains("`mcp__fs__write*` may match tools of mount `fs`, whose server's tools this case does not give"),
        "{}",
        text(&unknown)
    );
    let given = seam_test(&[&write(&dir, "given.test.yaml", &case("    tools:\n      fs: [read_file, write_file]\n"))]);
    assert_eq!(given.status.code(), Some(0), "{}", text(&given));
}

/// A fixture for a mount the composition does not have (a typo) is located, not ignored,
/// and so is an agent it does not have (at its name);
/// a variable a process cannot take is refused by the schema, before anything is set.
#[test]
fn a_stray_fixture_or_an_impossible_variable_is_located() {
    let dir = scratch("test-files-stray");
    let everything = root().join("compositions/examples/mcp-everything.yaml").display().to_string();
    let file = write(
        &dir,
        "stray.test.yaml",
        &format!(
            "seam_test: 1\ncases:\n  typo:\n    composition: {everything}\n    tools:\n      everythin: [echo]\n    agents: {{ default: {{}} }}\n"
        ),
    );
    let o = seam_test(&[&file]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(&format!("{file}:6:7: error[TEST_FIXTURE_INVALID]: `everythin` is no mount")), "{}", text(&o));
    let nobody = write(
        &dir,
        "nobody.test.yaml",
        &format!("seam_test: 1\ncases:\n  one:\n    composition: {everything}\n    agents:\n      nobody: {{}}\n"),
    );
    let o = seam_test(&[&nobody]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains(&format!("{nobody}:6:7: error[TEST_EXPECTATION_FAILED]: the composition has no agent `nobody`")),
        "{}",
        text(&o)
    );
    let env = write(
        &dir,
        "env.test.yaml",
        &format!("seam_test: 1\ncases:\n  bad:\n    composition: {everything}\n    env: {{ \"A=B\": x }}\n    agents: {{}}\n"),
    );
    let o = seam_test(&[&env]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains(&format!("{env}:5:")) && text(&o).contains("TEST_FILE_INVALID"), "{}", text(&o));
}

/// A composition written in flow style, inside a case written in flow style or over
/// several lines, is read as it is written; a URI (or a URI template) with glob
/// characters matches itself.
#[test]
fn flow_style_inline_compositions_and_literal_uris() {
    let dir = scratch("test-files-flow");
    let base = root().join("compositions/examples/mcp-everything.yaml").display().to_string();
    let file = write(
        &dir,
        "flow.test.yaml",
        &format!(
            "seam_test: 1\ncases:\n  one line: {{ composition: {{ seam: 1, extends: [{base}] }}, tools: {{ everything: [echo] }}, agents: {{ default: {{ tools: {{ exactly: [mcp__everything__echo] }} }} }} }}\n  \
             several lines:\n    composition: {{\n      seam: 1,\n      extends: [{base}] }}\n    resources:\n      everything: [\"file:///a[1]\"]\n    resource_templates:\n      everything: [\"file:///{{path}}\"]\n    agents:\n      \
             default: {{ resources: {{ exactly: [\"file:///a[1]\", \"file:///{{path}}\"] }} }}\n"
        ),
    );
    let o = seam_test(&[&file]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// `--live` runs the servers in seam's own process: a case cannot give it variables.
#[test]
fn live_refuses_a_case_s_environment() {
    let dir = scratch("test-files-live-env");
    let everything = root().join("compositions/examples/mcp-everything.yaml").display().to_string();
    let file = write(
        &dir,
        "env.test.yaml",
        &format!("seam_test: 1\ncases:\n  env:\n    composition: {everything}\n    env: {{ A: b }}\n    agents: {{}}\n"),
    );
    let o = seam_test(&[&file, "--live"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(&format!("{file}:5:10: error[TEST_FILE_INVALID]: with `--live`")), "{}", text(&o));
}

/// A case reports what its agent's list costs as disclosed and listed whole, and its
/// budget holds the list as listed: with a mount's tools deferred, the budget a whole
/// list would break is kept.
#[test]
fn a_case_reports_its_list_with_and_without_disclosure() {
    let dir = scratch("test-files-disclosure");
    // Five tools of about a hundred tokens each.
    let long = "Reads, writes or moves what the workspace holds, as its arguments say, and answers with what it did. ".repeat(5);
    let tools: Vec<String> = ["read_file", "write_file", "list_directory", "move_file", "search_files"]
        .iter()
        .map(|name| format!("{{ name: {name}, description: \"{long}\", inputSchema: {{ type: object }} }}"))
        .collect();
    let tools = tools.join(", ");
    let case = |disclosure: &str| {
        format!(
            "seam_test: 1\ncases:\n  lean:\n    composition:\n      seam: 1\n      mounts:\n        \
             fs: {{ kind: mcp.stdio, command: mcp-server-filesystem, args: [/tmp]{disclosure} }}\n    \
             tools:\n      fs: [{tools}]\n    \
             agents:\n      default: {{ max_catalog_tokens: 300, tools: {{ includes: [tool_search, tool_call, mcp__fs__move_file] }} }}\n"
        )
    };
    let deferred = seam_test(&[&write(&dir, "search.test.yaml", &case(", disclosure: search")), "--format", "json"]);
    assert_eq!(deferred.status.code(), Some(0), "{}", text(&deferred));
    let served = &json(&deferred)["files"][0]["cases"][0]["agents"]["default"];
    assert_eq!(served["deferred"], 5, "{served}");
    assert!(served["catalog_tokens"].as_u64() < served["catalog_tokens_all"].as_u64(), "{served}");
    let human = seam_test(&[&write(&dir, "search2.test.yaml", &case(", disclosure: search"))]);
    assert!(text(&human).contains("and 5 deferred, "), "{}", text(&human));
    let whole = seam_test(&[&write(&dir, "all.test.yaml", &case(""))]);
    assert_eq!(whole.status.code(), Some(1), "listed whole, the list is neither lean nor searched: {}", text(&whole));
}

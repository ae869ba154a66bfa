//! The fixture corpus: compositions as files, each declaring in its leading
//! comments what `validate` must report.
//!
//! - `tests/fixtures/invalid/`: each file has one or more
//!   `# expect: <severity> <CODE> [<file>] <line>:<column> <pointer>` lines; the
//!   diagnostics reported must be exactly these (none missing, none extra).
//!   `<file>` is given only when the diagnostic points into another file, relative
//!   to the fixture's folder; `<pointer>` is `""` for the whole document.
//! - `tests/fixtures/valid/`: no diagnostic at all; `# expect-json: <pointer> <json>`
//!   lines check values of the merged tree (`absent` for a removed key).
//! - `tests/fixtures/environment/`: like `invalid/`, checked with `--environment`.
//! - `# env: NAME=value` lines are the whole environment `${…}` sees.
//! - `# max-composition-bytes: N` sets the byte budget of the check.
//!
//! Folders named `bases/` hold files the fixtures extend; they are not fixtures.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use seam_engine::diagnostic::{Diagnostic, Sources};

#[derive(Default)]
struct Header {
    expect: Vec<String>,
    env: HashMap<String, String>,
    json: Vec<(String, String)>,
    /// `# max-composition-bytes: N`: the byte budget of the check (the default otherwise).
    max_composition_bytes: Option<u64>,
}

impl Header {
    fn read(path: &Path) -> Header {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        let mut header = Header::default();
        let text = text.trim_start_matches('\u{feff}');
        for line in text.lines().take_while(|l| l.starts_with('#') || l.trim().is_empty()) {
            if let Some(rest) = line.strip_prefix("# expect: ") {
                header.expect.push(rest.split_whitespace().collect::<Vec<_>>().join(" "));
            } else if let Some(rest) = line.strip_prefix("# env: ") {
                let (name, value) = rest.split_once('=').expect("`# env: NAME=value`");
                header.env.insert(name.to_owned(), value.to_owned());
            } else if let Some(rest) = line.strip_prefix("# max-composition-bytes: ") {
                header.max_composition_bytes = Some(rest.trim().parse().expect("`# max-composition-bytes: N`"));
            } else if let Some(rest) = line.strip_prefix("# expect-json: ") {
                let (pointer, value) = rest.split_once(' ').expect("`# expect-json: <pointer> <json>`");
                header.json.push((pointer.to_owned(), value.trim().to_owned()));
            }
        }
        header.expect.sort();
        header
    }

    /// The codes the expectations name.
    fn codes(&self) -> impl Iterator<Item = &str> {
        self.expect.iter().filter_map(|e| e.split(' ').nth(1))
    }
}

/// A diagnostic in the `# expect:` form.
fn describe(d: &Diagnostic, sources: &Sources, fixture: &Path) -> String {
    let file = canonical(sources.path(d.span.file));
    let place = if file == canonical(fixture) {
        String::new()
    } else {
        let folder = canonical(fixture.parent().unwrap());
        format!("{} ", file.strip_prefix(&folder).unwrap_or(&file).display())
    };
    let pointer = if d.pointer.is_empty() { "\"\"" } else { &d.pointer };
    format!("{} {} {place}{}:{} {pointer}", d.severity().as_str(), d.code, d.span.line, d.span.column)
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

/// Checks one fixture; `Err` holds a readable account of every difference.
fn check(path: &Path, environment: bool) -> Result<(), String> {
    let header = Header::read(path);
    let mut engine = seam::engine();
    if let Some(bytes) = header.max_composition_bytes {
        engine = engine.with_max_composition_bytes(bytes);
    }
    let mut checked = engine.check_file(path, &header.env).map_err(|e| e.to_string())?;
    if environment {
        checked.check_environment();
    }
    let mut actual: Vec<(String, &Diagnostic)> = checked.diagnostics.iter().map(|d| (describe(d, &checked.sources, path), d)).collect();
    actual.sort_by(|a, b| a.0.cmp(&b.0));
    let mut report = String::new();
    if actual.iter().map(|(e, _)| e).ne(header.expect.iter()) {
        let mut reported: Vec<&str> = actual.iter().map(|(e, _)| e.as_str()).collect();
        for want in &header.expect {
            match reported.iter().position(|r| r == want) {
                Some(i) => drop(reported.remove(i)),
                None => report.push_str(&format!("  - expected, not reported: {want}\n")),
            }
        }
        for (line, d) in &actual {
            let Some(i) = reported.iter().position(|r| r == line) else { continue };
            reported.remove(i);
            let human = seam_engine::render::human(d, &checked.sources).replace('\n', "\n      ");
            report.push_str(&format!("  + reported, not expected: {line}\n      {}\n", human.trim_end()));
        }
    }
    if !header.json.is_empty() {
        let root = seam_engine::load::load_file(path, &header.env, seam_engine::load::DEFAULT_MAX_COMPOSITION_BYTES)
            .unwrap()
            .root
            .expect("the fixture parses")
            .to_json();
        for (pointer, want) in &header.json {
            let found = root.pointer(pointer);
            let ok = match want.as_str() {
                "absent" => found.is_none(),
                json => found == Some(&serde_json::from_str(json).unwrap_or_else(|e| panic!("{}: bad expect-json: {e}", path.display()))),
            };
            if !ok {
                let found = found.map_or("absent".to_owned(), |v| v.to_string());
                report.push_str(&format!("  merged {pointer}: expected {want}, found {found}\n"));
            }
        }
    }
    if report.is_empty() { Ok(()) } else { Err(report) }
}

/// The fixtures of one folder, sorted; sub-folders (`bases/`) are helpers.
fn fixtures(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
}

#[test]
fn corpus() {
    // Git keeps no folder modes: the world-writable skill root is made so here.
    let open = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/environment/skills/open");
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let codes: BTreeSet<&str> = seam::engine().codes().iter().map(|c| c.code).collect();
    let mut covered = BTreeSet::new();
    let mut failures = Vec::new();
    for (folder, environment) in [("invalid", false), ("valid", false), ("environment", true)] {
        for path in fixtures(folder) {
            let name = format!("{folder}/{}", path.file_name().unwrap().to_string_lossy());
            let header = Header::read(&path);
            for code in header.codes() {
                if !codes.contains(code) {
                    failures.push(format!("{name}: expects `{code}`, which is not in the code table\n"));
                }
                covered.insert(code.to_owned());
            }
            match (folder, header.expect.is_empty()) {
                ("valid", false) => failures.push(format!("{name}: a valid fixture expects diagnostics\n")),
                ("invalid", true) => failures.push(format!("{name}: declares no `# expect:` line\n")),
                _ => {}
            }
            if let Err(report) = check(&path, environment) {
                failures.push(format!("{name}:\n{report}"));
            }
        }
    }
    // SCHEMA_INVALID is the fallback for schema rules the format does not use today;
    // a fixture is a file git keeps, never a FIFO or a device (engine/src/load.rs tests those).
    const FALLBACKS: &[&str] = &["SCHEMA_INVALID", "COMPOSITION_NOT_A_FILE"];
    // Codes a running deployment gives (rejected reloads, tool results), and those of
    // `seam test` (tests/test_files.rs) and `seam import`, are not `validate` findings; tests/serve.rs covers them against real servers (a 2026-07-28
    // client's retry, a server's refused question and a refused subscription: tests/serve/eras.rs).
    let runtime: std::collections::BTreeSet<&str> = seam::engine()
        .codes()
        .iter()
        .filter(|c| {
            [
                "(tool result)",
                "(reload)",
                "(start, reload)",
                "(prompts/get)",
                "(retry",
                "(question)",
                "(subscribe, listen",
                "(seam test)",
                "(seam import)",
            ]
            .iter()
            .any(|p| c.meaning.starts_with(p))
        })
        .map(|c| c.code)
        .collect();
    let uncovered: Vec<&str> =
        codes.iter().copied().filter(|c| !covered.contains(*c) && !FALLBACKS.contains(c) && !runtime.contains(c)).collect();
    if !uncovered.is_empty() {
        failures.push(format!("no fixture covers: {}\n", uncovered.join(", ")));
    }
    // The promise the exemption rests on: each runtime code is named in a test somewhere.
    let tested = test_texts();
    let unasserted: Vec<&str> = runtime.iter().copied().filter(|c| !tested.iter().any(|t| names_code(t, c))).collect();
    if !unasserted.is_empty() {
        failures.push(format!("no test asserts these runtime codes: {}\n", unasserted.join(", ")));
    }
    assert!(failures.is_empty(), "{} fixture problem(s):\n\n{}", failures.len(), failures.join("\n"));
}

/// The text of every test: the integration tests (but for this corpus and the generated
/// files' checks, which name every code), and each source file's unit-test modules (from
/// `#[cfg(test)]` on, or a whole `tests.rs`).
fn test_texts() -> Vec<String> {
    let tests = crate::support::rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"));
    let mut texts: Vec<String> = tests
        .into_iter()
        .filter(|(path, _)| !path.ends_with("tests/fixtures.rs") && !path.ends_with("tests/generated.rs"))
        .map(|(_, text)| text)
        .collect();
    let sources = crate::generated::sources();
    // A unit-test module in a file of its own (`mod tests;` → `tests.rs`) is test text whole.
    let test_part = |(path, text): (PathBuf, String)| match path.file_name().is_some_and(|name| name == "tests.rs") {
        true => Some(text),
        false => text.split_once("#[cfg(test)]").map(|(_, tests)| tests.to_owned()),
    };
    texts.extend(sources.into_iter().filter_map(test_part));
    texts
}

/// Whether `text` names `code` as a whole word (`TOOL_TIMEOUT` is not named by `TOOL_TIMEOUTS`).
fn names_code(text: &str, code: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(code)
        .any(|(at, _)| !text[..at].chars().next_back().is_some_and(word) && !text[at + code.len()..].chars().next().is_some_and(word))
}

/// Why a schema cannot say what these fixtures get wrong.
const GLOB: &str = "glob syntax, which no JSON Schema pattern parses";
const RELATION: &str = "a relation between entries of the file, or sections of it";
const UNIT_RANGE: &str = "the range of a duration or size with its unit (the schema checks its syntax)";
const ENVIRONMENT: &str = "`${…}` is a string to a schema; seam reads it against the environment it runs in";
const DISK: &str = "what another file, or the disk at a path, holds";
const READER: &str = "a limit of seam's YAML reader, before there is a document to check";
const MCP_ID: &str = "a rule on a mount id that holds for MCP kinds only: a key that depends on its value";

/// The invalid fixtures a third-party validator accepts, each with the reason it must
/// stay schema-valid: every other invalid fixture is refused by the published schema.
const SCHEMA_VALID_INVALID: &[(&str, &str)] = &[
    ("agent-default-parent.yaml", RELATION),
    ("agent-parent-cycle.yaml", RELATION),
    ("agent-parent-self.yaml", RELATION),
    ("agent-serve-token-conflict.yaml", RELATION),
    ("agent-unknown-mount.yaml", RELATION),
    ("agent-unknown-parent.yaml", RELATION),
    ("boundary-mcp-namespace-33-chars.yaml", MCP_ID),
    ("boundary-size-over-1gib.yaml", UNIT_RANGE),
    ("boundary-timeout-0ms.yaml", UNIT_RANGE),
    ("boundary-timeout-2147483648ms.yaml", UNIT_RANGE),
    ("composition-too-large.yaml", "the file's size in bytes, not its content"),
    ("duration-overflow.yaml", UNIT_RANGE),
    ("env-bad-name.yaml", ENVIRONMENT),
    ("env-bad-operator.yaml", ENVIRONMENT),
    ("env-bad-syntax.yaml", ENVIRONMENT),
    ("env-empty.yaml", ENVIRONMENT),
    ("env-required-in-pin.yaml", ENVIRONMENT),
    ("env-required.yaml", ENVIRONMENT),
    ("env-unset.yaml", ENVIRONMENT),
    ("extends-base-keys.yaml", DISK),
    ("extends-base-syntax-error.yaml", DISK),
    ("extends-cycle.yaml", DISK),
    ("extends-limit-65.yaml", DISK),
    ("extends-missing-file.yaml", DISK),
    ("extends-not-a-file.yaml", DISK),
    ("extends-not-a-mapping.yaml", DISK),
    ("extends-self.yaml", DISK),
    ("fetch-private-networks-visible.yaml", RELATION),
    ("lsp-extension-conflict.yaml", RELATION),
    ("lsp-extension-duplicate-file-order.yaml", "items equal but for case (`uniqueItems` is case-sensitive)"),
    ("lsp-extension-duplicate.yaml", "items equal but for case (`uniqueItems` is case-sensitive)"),
    ("lsp-workspace-unset.yaml", RELATION),
    ("mcp-filter-glob-invalid.yaml", GLOB),
    ("mcp-namespace-dot.yaml", MCP_ID),
    ("mcp-namespace-double-underscore.yaml", MCP_ID),
    ("mcp-namespace-duplicate.yaml", "two mount ids equal but for case"),
    ("mcp-namespace-trailing-underscore.yaml", MCP_ID),
    ("mcp-rewrite-argument-conflict.yaml", "two keys of two maps meeting, which a schema does not relate"),
    ("mcp-rewrite-collision.yaml", "values of two map entries meeting, which a schema does not compare"),
    ("mcp-rewrite-hidden-required.yaml", "the lock beside the file, which a schema does not read"),
    ("mcp-tool-glob-invalid.yaml", GLOB),
    ("mount-required-invisible.yaml", RELATION),
    ("mount-required-out-of-scope.yaml", RELATION),
    ("offer-rule-invalid-glob.yaml", GLOB),
    ("pin-lock-foreign.yaml", "the lock beside the file, which a schema does not read"),
    ("pin-lock-missing.yaml", "whether a lock is beside the file, which a schema does not see"),
    ("pin-unknown-mount.yaml", RELATION),
    ("pin-wrong-kind.yaml", RELATION),
    ("reconnect-delay-order.yaml", "an order between two durations"),
    ("secret-inline-authorization-header.yaml", "a secret written inline is a string like any other"),
    ("secret-inline-url-password.yaml", "a secret written inline is a string like any other"),
    ("secret-inline-url-query.yaml", "a secret written inline is a string like any other"),
    ("secret-interpolated-in-args.yaml", ENVIRONMENT),
    ("secret-interpolated.yaml", ENVIRONMENT),
    ("secret-sent-in-clear.yaml", RELATION),
    ("serve-buffered-below-request.yaml", "an order between two sizes"),
    ("serve-request-past-default-budget.yaml", "an order between two sizes"),
    ("serve-token-conflict.yaml", RELATION),
    ("tool-name-collision.yaml", RELATION),
    ("tool-unserved-skills-not-imported.yaml", RELATION),
    ("tool-unserved.yaml", RELATION),
    ("tools-invalid-glob.yaml", GLOB),
    ("tools-unknown-mcp-server.yaml", "an `mcp__` key whose server is no mount id of the file"),
    ("workspace-root-empty.yaml", RELATION),
    ("workspace-root-from-an-unset-variable.yaml", RELATION),
    ("workspace-without-root.yaml", RELATION),
    ("yaml-alias-key.yaml", READER),
    ("yaml-depth-65.yaml", READER),
];

/// Valid fixtures the published schema must reject, and why: the schema sees the file
/// alone, before `extends`, `${…}` and seam's own tags.
const VALID_BEYOND_A_SCHEMA: &[(&str, &str)] = &[
    ("env-interpolation.yaml", "`${…}` stands for an integer: a string until seam interpolates it"),
    ("extends-merge-lists-replace.yaml", "an overlay: its mounts are whole only once merged onto its base"),
    ("extends-merge-maps-by-key.yaml", "an overlay: its mounts are whole only once merged onto its base"),
    ("extends-merge-null-removes.yaml", "`!reset` is seam's tag, which other YAML readers refuse"),
    ("extends-merge-reset-map.yaml", "`!reset` is seam's tag, which other YAML readers refuse"),
];

/// Fixtures a third-party validator is not given, and why.
const NOT_GIVEN: &[(&str, &str)] = &[
    ("yaml-core-tag-mismatch.yaml", "check-jsonschema's YAML reader raises on `!!int many` and stops the whole run"),
    ("yaml-alias-bomb.yaml", "check-jsonschema's YAML reader expands the bomb for minutes (seam stops at YAML_ALIAS_LIMIT)"),
];

/// The published schema is as strict as a schema can be: check-jsonschema (a third-party
/// validator) refuses every invalid fixture but those named with their reason, and accepts
/// every valid fixture and shipped composition but those named with theirs. A reason no
/// fixture needs any more fails too.
#[test]
fn the_published_schema_rejects_what_a_schema_can_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let validator = root.join(".cache/peers/venv/bin/check-jsonschema");
    let given = |folder: &str| -> Vec<PathBuf> {
        fixtures(folder).into_iter().filter(|p| !NOT_GIVEN.iter().any(|(name, _)| p.ends_with(name))).collect()
    };
    let (invalid, mut valid) = (given("invalid"), given("valid"));
    for folder in ["compositions", "compositions/examples"] {
        let mut shipped: Vec<PathBuf> = std::fs::read_dir(root.join(folder))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml") && !is_test_file(p))
            .collect();
        shipped.sort();
        valid.extend(shipped);
    }
    let output = std::process::Command::new(&validator)
        .args(["--schemafile", "schemas/composition.schema.json", "--output-format", "json"])
        .args(invalid.iter().chain(&valid))
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/install-peers installs it)", validator.display()));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("check-jsonschema's report: {e}\n{}", String::from_utf8_lossy(&output.stderr)));
    let refused: BTreeSet<PathBuf> = ["errors", "parse_errors"]
        .iter()
        .flat_map(|kind| report[kind].as_array().into_iter().flatten())
        .map(|e| root.join(e["filename"].as_str().unwrap()))
        .collect();
    let mut failures = Vec::new();
    // Each set, the files it excepts (with their reasons), and what the schema should do with the others.
    for (files, excepted, refuse, seam_says) in
        [(&invalid, SCHEMA_VALID_INVALID, true, "invalid"), (&valid, VALID_BEYOND_A_SCHEMA, false, "valid")]
    {
        for path in files {
            let listed = excepted.iter().any(|(fixture, _)| path.ends_with(fixture));
            match (refused.contains(path) == refuse, listed) {
                (false, false) => failures.push(format!("{}: {seam_says} to seam, not to the published schema", path.display())),
                (true, true) => failures.push(format!("{}: the published schema agrees with seam now; its reason can go", path.display())),
                _ => {}
            }
        }
    }
    // A listed name that is no fixture any more (renamed, removed) is a stale reason.
    let named = |folder: &str, fixture: &str| root.join("tests/fixtures").join(folder).join(fixture).is_file();
    let listed = SCHEMA_VALID_INVALID.iter().map(|(f, _)| ("invalid", *f)).chain(VALID_BEYOND_A_SCHEMA.iter().map(|(f, _)| ("valid", *f)));
    let not_given = NOT_GIVEN.iter().map(|(f, _)| ("invalid", *f));
    for (folder, fixture) in listed.chain(not_given).filter(|(folder, fixture)| !named(folder, fixture)) {
        failures.push(format!("{folder}/{fixture} is listed with a reason, and is no fixture"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `seam test`'s files (`*.test.yaml`) sit beside the compositions and are not compositions.
fn is_test_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".test.yaml"))
}

/// The shipped test files read as the published test schema says, to a third-party validator too.
#[test]
fn the_shipped_test_files_are_valid_to_the_published_test_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tests: Vec<PathBuf> = crate::support::files_under(&root.join("compositions")).into_iter().filter(|p| is_test_file(p)).collect();
    assert!(!tests.is_empty());
    let output = std::process::Command::new(root.join(".cache/peers/venv/bin/check-jsonschema"))
        .args(["--schemafile", "schemas/composition-test.schema.json"])
        .args(&tests)
        .current_dir(root)
        .output()
        .expect("check-jsonschema runs (scripts/install-peers installs it)");
    assert!(output.status.success(), "{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
}

/// `auth.oauth` as resolved: `per_agent` gives the mount a connection per agent, and
/// the files it names are made absolute against the composition's folder. `inventory`
/// says how each mount gets its tokens, who seam is to the authorization server (the
/// spec's order: pre-registered, metadata document, dynamic registration), and a pin.
#[test]
fn oauth_per_agent_implies_a_connection_per_agent_and_its_files_resolve() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/mcp-oauth.yaml");
    let env: HashMap<String, String> = HashMap::new();
    let checked = seam::engine().check_file(&path, &env).unwrap();
    let resolved = checked.resolved.as_ref().expect("valid");
    let config = |id: &str| resolved.mounts[id].resolved.as_ref().unwrap().config.to_json();
    let (docs, jobs) = (config("docs"), config("jobs"));
    assert_eq!(docs["isolation"], "per-agent", "{docs}");
    assert_eq!(config("open")["isolation"], "shared");
    let folder = path.parent().unwrap();
    assert_eq!(docs["auth"]["oauth"]["state_file"], folder.join("state/docs.json").display().to_string());
    assert_eq!(jobs["auth"]["oauth"]["client_secret_file"], folder.join("secrets/jobs").display().to_string());

    let inventory =
        std::process::Command::new(crate::support::seam_bin()).args(["inventory", "--format", "json"]).arg(&path).output().unwrap();
    let inventory: serde_json::Value = serde_json::from_slice(&inventory.stdout).expect("inventory's JSON");
    let said: Vec<(&str, &serde_json::Value)> =
        inventory["mounts"].as_array().unwrap().iter().map(|m| (m["id"].as_str().unwrap(), &m["environment"]["facts"]["oauth"])).collect();
    let oauth = |grant: &str, client: &str, per_agent: bool, issuer: Option<&str>| serde_json::json!({ "grant": grant, "client": client, "per_agent": per_agent, "issuer": issuer });
    assert_eq!(
        said,
        [
            ("docs", &oauth("authorization_code", "metadata document", true, None)),
            ("jobs", &oauth("client_credentials", "pre-registered", false, Some("https://login.example.com"))),
            ("keyed", &oauth("client_credentials", "pre-registered", false, None)),
            ("open", &oauth("authorization_code", "dynamic registration", false, None)),
        ]
    );
}

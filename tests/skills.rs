//! The Skills surface end to end: `seam serve` over Streamable HTTP, driven by
//! the official MCP SDK client, reading real skill folders on disk: the
//! catalog in the `skill` tool's description, `skill` calls, `prompts/list`
//! and `prompts/get`, and both `list_changed` notifications after a skill is
//! added on disk.

use std::path::{Path, PathBuf};

use crate::support::*;
use serde_json::{Value, json};

fn skill(root: &Path, name: &str, frontmatter: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    // Written beside the root and renamed into place: a watching seam never reads it half written
    // (a truncated SKILL.md is an invalid skill for a moment, and two catalog changes).
    let tmp = root.with_extension(format!("{name}.tmp"));
    std::fs::write(&tmp, format!("---\nname: {name}\n{frontmatter}---\n{body}")).unwrap();
    std::fs::rename(&tmp, dir.join("SKILL.md")).unwrap();
}

/// A project (with `.git`), its own home folder, and a composition mounting
/// a project-wide skills mount plus one scoped to the `reviewer` agent.
fn project(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    skill(&dir.join(".seam/skills"), "pick", "description: from the project\n", "Project pick.\n");
    skill(&dir.join("custom"), "pick", "description: from custom\n", "Custom pick.\n");
    skill(&dir.join("bundled"), "helper", "description: Helps.\n", "Help body.\n");
    skill(
        &dir.join("custom"),
        "model-only",
        "description: A description long enough to be cut at forty characters.\nuser-invocable: off\n",
        "Model only.\n",
    );
    skill(&dir.join("home/.agents/skills"), "user-only", "description: Only by hand.\ndisable-model-invocation: yes\n", "By hand.\n");
    skill(&dir.join("review"), "pick", "description: the reviewer's own\n", "Reviewer pick.\n");
    let file = dir.join("seam.yaml");
    std::fs::write(
        &file,
        "seam: 1\nservices:\n  workspace: { root: . }\nmounts:\n  skills:\n    kind: skills.fs\n    custom_dirs: [./custom]\n    bundled_dir: ./bundled\n  \
         review-skills:\n    kind: skills.fs\n    include_default_roots: false\n    bundled_dir: ./review\n\
         tools:\n  skill: { catalog_description_max: 40 }\nagents:\n  reviewer:\n    mounts: [review-skills]\n",
    )
    .unwrap();
    (dir, file)
}

fn start(dir: &Path, file: &Path) -> HttpSeam {
    let home = dir.join("home").display().to_string();
    HttpSeam::start_with_env(file, &[], &[("HOME", home.as_str())], &[])
}

fn description(client: &mut SdkClient) -> String {
    client.tool("skill")["description"].as_str().unwrap().to_owned()
}

fn catalog_part(description: &str) -> &str {
    let start = description.find("<available_skills>").expect("a catalog");
    &description[start..]
}

#[test]
fn the_catalog_both_invocation_paths_and_list_changed_through_seam_serve() {
    let (dir, file) = project("skills-serve");
    let seam = start(&dir, &file);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));

    // Sorted model-invocable names, one line each, cut to 40 characters with `...`; the project's `pick` wins on rank.
    let d = description(&mut client);
    assert_eq!(
        catalog_part(&d),
        "<available_skills>\n- helper: Helps.\n- model-only: A description long enough to be cut a...\n- pick: from the project\n</available_skills>"
    );
    let names: Vec<Value> = client.prompts().iter().map(|p| p["name"].clone()).collect();
    assert_eq!(names, [json!("helper"), json!("pick"), json!("user-only")]);

    // The model path.
    let text = client.call_text("skill", json!({ "name": "pick" }));
    let base = dir.join(".seam/skills/pick");
    assert!(text.starts_with(&format!("<skill_content name=\"pick\" base=\"{}\">\n", base.display())), "{text}");
    assert!(text.ends_with("\n\nProject pick.\n\n</skill_content>"), "{text}");
    let refused = client.call("skill", json!({ "name": "user-only" }));
    assert_eq!(refused["isError"], true);
    assert_eq!(refused["structuredContent"]["error"]["code"], "SKILL_NOT_MODEL_INVOCABLE");

    // The user path: the only way to `user-only`.
    let got = client.send(json!({ "op": "get_prompt", "name": "user-only" }));
    assert_eq!(got["ok"], true, "{got}");
    let messages = got["result"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "user");
    assert!(messages[0]["content"]["text"].as_str().unwrap().contains("<skill_content name=\"user-only\""), "{got}");
    let unknown = client.send(json!({ "op": "get_prompt", "name": "model-only" }));
    assert_eq!(unknown["ok"], false, "not user-invocable, so not a prompt: {unknown}");
    assert!(unknown["error"].as_str().unwrap().contains("PROMPT_UNKNOWN"), "{unknown}");

    // A body-only edit leaves the catalog alone; adding a skill changes both lists.
    let (tools_before, prompts_before) = (client.list_changed_count(), client.prompt_list_changed_count());
    skill(
        &dir.join("custom"),
        "model-only",
        "description: A description long enough to be cut at forty characters.\nuser-invocable: off\n",
        "Edited body.\n",
    );
    skill(&dir.join("custom"), "added", "description: Just added.\n", "New.\n");
    client.wait_list_changed();
    client.wait_prompt_list_changed();
    assert_eq!(client.list_changed_count(), tools_before + 1, "one tools/list_changed for both edits");
    assert_eq!(client.prompt_list_changed_count(), prompts_before + 1);
    assert!(catalog_part(&description(&mut client)).starts_with("<available_skills>\n- added: Just added.\n- helper"));
    let names: Vec<Value> = client.prompts().iter().map(|p| p["name"].clone()).collect();
    assert_eq!(names, [json!("added"), json!("helper"), json!("pick"), json!("user-only")]);
    assert!(client.call_text("skill", json!({ "name": "model-only" })).contains("\n\nEdited body.\n"), "a load reads the file now");

    // /status shows every root with its trust facts.
    let status = seam.status();
    let roots = status["services"]["skills"]["mounts"]["skills"]["roots"].as_array().unwrap().clone();
    let origins: Vec<&str> = roots.iter().map(|r| r["origin"].as_str().unwrap()).collect();
    assert_eq!(
        origins,
        ["project .seam/skills", "project .agents/skills", "custom", "user ~/.seam/skills", "user ~/.agents/skills", "bundled"]
    );
    let custom = &roots[2];
    assert_eq!((custom["in_workspace"].as_bool(), custom["skills"].as_u64()), (Some(true), Some(3)));
    assert!(custom["warning"].as_str().unwrap().contains("inside the workspace"));
    client.close();
}

/// The reviewer's own scoped mount is a nearer layer than the composition's
/// global one: its bundled `pick` (rank 600) replaces the project's (rank 100).
#[test]
fn a_scoped_mount_shadows_the_global_skill_for_its_agent_only() {
    let (dir, file) = project("skills-layers");
    let seam = start(&dir, &file);
    let mut reviewer = SdkClient::http(&format!("{}/agents/reviewer/mcp", seam.base));
    assert!(catalog_part(&description(&mut reviewer)).contains("- pick: the reviewer's own\n"));
    assert!(reviewer.call_text("skill", json!({ "name": "pick" })).contains("\n\nReviewer pick.\n"));
    let mut default = SdkClient::http(&format!("{}/mcp", seam.base));
    assert!(catalog_part(&description(&mut default)).contains("- pick: from the project\n"));
    reviewer.close();
    default.close();
}

/// A client's root inside the workspace selects the project discovery reads.
#[test]
fn the_clients_root_picks_the_project() {
    let (dir, file) = project("skills-roots");
    let sub = dir.join("sub");
    std::fs::create_dir_all(sub.join(".git")).unwrap();
    skill(&sub.join(".agents/skills"), "sub-only", "description: In the subproject.\n", "Sub.\n");
    let seam = start(&dir, &file);
    let mut client = SdkClient::http_with_roots(&format!("{}/mcp", seam.base), &[&sub]);
    let d = description(&mut client);
    assert!(d.contains("- sub-only: In the subproject.\n"), "{d}");
    assert!(!d.contains("from the project"), "the outer project's roots are not the subproject's: {d}");
    client.close();
}

/// `validate --environment` and `inventory` report invalid skill files and
/// prompt-authority roots; the catalog still serves the valid skills.
#[test]
fn invalid_skills_and_writable_roots_are_reported_by_validate_and_inventory() {
    let (dir, file) = project("skills-env");
    skill(&dir.join("custom"), "broken", "description: d\nuserInvocable: true\n", "");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(seam_bin()).args(args).env("HOME", dir.join("home")).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let f = file.display().to_string();
    let (code, out) = run(&["validate", "--environment", "--format", "json", &f]);
    assert_eq!(code, Some(0), "warnings only: {out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let diagnostics: Vec<&Value> = report["files"].as_array().unwrap().iter().flat_map(|f| f["diagnostics"].as_array().unwrap()).collect();
    let codes: Vec<&str> = diagnostics.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"SKILL_INVALID") && codes.contains(&"SKILL_ROOT_IN_WORKSPACE"), "{out}");
    let invalid = diagnostics.iter().find(|d| d["code"] == "SKILL_INVALID").unwrap();
    assert!(invalid["message"].as_str().unwrap().contains(&format!("{}:4: `userInvocable`", dir.join("custom/broken/SKILL.md").display())));
    assert_eq!(
        (invalid["line"].as_u64(), invalid["pointer"].as_str()),
        (Some(7), Some("/mounts/skills/custom_dirs/0")),
        "located at the root that holds it: {invalid}"
    );

    let (code, out) = run(&["inventory", &f]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains(&format!("root 300 custom                   {}  2 skills, 1 invalid  owner uid", dir.join("custom").display())),
        "{out}"
    );
    assert!(out.contains("warning[SKILL_INVALID]"), "{out}");

    let mut seam = start(&dir, &file);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert!(catalog_part(&description(&mut client)).contains("- pick: from the project"), "the invalid skill empties nothing");
    let logged = seam.stderr.wait_for("skipped a skill file that is not a skill");
    assert!(logged.contains(&format!("{}:4:", dir.join("custom/broken/SKILL.md").display())), "path and line in the log: {logged}");
    client.close();
}

/// A skill written through seam, by an MCP filesystem server's tools, is in
/// the catalog the client lists next, with `tools/list_changed` sent, though
/// the mount does not watch its roots: seam saw the write go through.
#[test]
fn a_skill_written_through_seam_is_listed_next() {
    let dir = scratch("skills-written");
    let root = dir.join("skills");
    skill(&root, "first", "description: Was there.\n", "First.\n");
    let file = dir.join("seam.yaml");
    std::fs::write(
        &file,
        format!(
            "seam: 1\nservices:\n  workspace: {{ root: . }}\nmounts:\n  skills:\n    kind: skills.fs\n    include_default_roots: false\n    \
             watch: false\n    custom_dirs: [./skills]\n  fs:\n    kind: mcp.stdio\n    command: {}\n    args: [{}]\ntools:\n  skill: true\n",
            json!(peer_bin("mcp-server-filesystem")),
            json!(dir)
        ),
    )
    .unwrap();
    let seam = start(&dir, &file);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    assert_eq!(catalog_part(&description(&mut client)), "<available_skills>\n- first: Was there.\n</available_skills>");
    let before = client.list_changed_count();

    let made = client.call("mcp__fs__create_directory", json!({ "path": root.join("written") }));
    assert_ne!(made["isError"], true, "{made}");
    let wrote = client.call(
        "mcp__fs__write_file",
        json!({ "path": root.join("written/SKILL.md"), "content": "---\nname: written\ndescription: Written by a tool.\n---\nBody.\n" }),
    );
    assert_ne!(wrote["isError"], true, "{wrote}");
    assert_eq!(
        catalog_part(&description(&mut client)),
        "<available_skills>\n- first: Was there.\n- written: Written by a tool.\n</available_skills>",
        "the listing right after the call"
    );
    client.wait_list_changed();
    assert!(client.list_changed_count() > before);
    assert!(client.call_text("skill", json!({ "name": "written" })).contains("\n\nBody.\n"));
    client.close();
}

/// The skills seam ships are valid, and `base.yaml` serves them: both in the
/// catalog, and one loads through the `skill` tool.
#[test]
fn the_shipped_skills_are_served_by_base_yaml() {
    let dir = scratch("skills-shipped");
    let base = root().join("compositions/base.yaml");
    let out = std::process::Command::new(seam_bin())
        .args(["validate", "--environment", "--format", "json", &base.display().to_string()])
        .env("HOME", &dir)
        .current_dir(&dir)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes: Vec<&Value> = report["files"].as_array().unwrap().iter().flat_map(|f| f["diagnostics"].as_array().unwrap()).collect();
    assert!(!codes.iter().any(|d| d["code"] == "SKILL_INVALID"), "{report}");

    let seam = HttpSeam::start_with_env(&base, &[], &[("HOME", &dir.display().to_string())], &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let d = description(&mut client);
    let names: Vec<&str> = catalog_part(&d).lines().filter_map(|l| l.strip_prefix("- ")?.split(':').next()).collect();
    assert_eq!(names, ["authoring-compositions", "reviewing-mcp-servers"], "{d}");
    let text = client.call_text("skill", json!({ "name": "authoring-compositions" }));
    assert!(text.contains("# Authoring seam compositions") && text.contains("seam validate"), "{text}");
    let prompts: Vec<Value> = client.prompts().iter().map(|p| p["name"].clone()).collect();
    assert_eq!(prompts, [json!("authoring-compositions"), json!("reviewing-mcp-servers")]);
    client.close();
}

/// `seam call FILE skill {name}` started in `started_in` with `home` as HOME
/// (a client that gives no roots): `ok`, or the error's code.
fn skill_from(started_in: &Path, home: &Path, file: &Path, name: &str) -> String {
    let args = json!({ "name": name }).to_string();
    let out = std::process::Command::new(seam_bin())
        .current_dir(started_in)
        .env("HOME", home)
        .args(["call", &file.display().to_string(), "skill", "--args", &args])
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    result["structuredContent"]["error"]["code"].as_str().unwrap_or("ok").to_owned()
}

/// There is no implicit workspace: without `services.workspace.root`, the
/// project discovery reads is the folder seam was started in (a client gives
/// no roots through `seam call`), never the composition's own folder; with the
/// root set, it is that root.
#[test]
fn without_a_workspace_root_the_project_is_where_seam_started() {
    let dir = scratch("skills-no-root");
    let (here, there) = (dir.join("started-here"), dir.join("composition"));
    for (project, name) in [(&here, "from-here"), (&there, "from-there")] {
        std::fs::create_dir_all(project.join(".git")).unwrap();
        skill(&project.join(".seam/skills"), name, "description: d\n", "Body.\n");
    }
    let file = there.join("seam.yaml");
    let call = |name: &str| skill_from(&here, &dir.join("home"), &file, name);
    let compose = |services: &str| {
        std::fs::write(&file, format!("seam: 1\n{services}mounts:\n  skills: {{ kind: skills.fs }}\ntools:\n  skill: true\n")).unwrap()
    };
    compose("");
    assert_eq!((call("from-here").as_str(), call("from-there").as_str()), ("ok", "SKILL_UNKNOWN"), "no root: where seam started");
    compose("services:\n  workspace: { root: . }\n");
    assert_eq!((call("from-here").as_str(), call("from-there").as_str()), ("SKILL_UNKNOWN", "ok"), "the root, when set");
}

/// Without a configured root, trust is judged against the folder discovery
/// reads (where seam was started): a project root there lies inside the
/// workspace the served tools work in, so `read_only_roots` refuses it.
#[test]
fn without_a_workspace_root_read_only_roots_judges_the_folder_seam_started_in() {
    let dir = scratch("skills-no-root-trust");
    let here = dir.join("started-here");
    std::fs::create_dir_all(here.join(".git")).unwrap();
    skill(&here.join(".seam/skills"), "local", "description: d\n", "Body.\n");
    let file = dir.join("seam.yaml");
    let call = |read_only: bool| {
        let composition =
            format!("seam: 1\nmounts:\n  skills: {{ kind: skills.fs, read_only_roots: {read_only} }}\ntools:\n  skill: true\n");
        std::fs::write(&file, composition).unwrap();
        skill_from(&here, &dir.join("home"), &file, "local")
    };
    assert_eq!(call(false), "ok");
    assert_eq!(call(true), "SKILL_UNKNOWN", "a root inside the workspace is refused under read_only_roots");
}

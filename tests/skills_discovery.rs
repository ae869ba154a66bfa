//! Discovery, layers, the catalog and both invocation paths, on real folders
//! and real `SkillsMount`s (no MCP in between; `tests/skills.rs` at the
//! workspace root drives the same through `seam serve`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seam_engine::runtime::Roots;
use seam_engine::runtime::{Changes, Running, WriteWatcher};
use seam_engine::surface::{PromptCall, Provider, ToolCall};
use seam_skills::FsSkills;
use seam_skills::host::{Observation, SkillsMount};
use seam_skills::registry::{self, Catalog, Layered};
use serde_json::{Value, json};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("seam-skills-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `<root>/<name>/SKILL.md`.
fn skill(root: &Path, name: &str, description: &str, extra: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: {description}\n{extra}---\n{body}")).unwrap();
}

fn config(custom: &[&Path], bundled: Option<&Path>) -> FsSkills {
    FsSkills {
        kind: "skills.fs".into(),
        include_default_roots: true,
        custom_dirs: custom.iter().map(|p| p.display().to_string()).collect(),
        bundled_dir: bundled.map(|p| p.display().to_string()),
        watch: false,
        max_watched_projects: 128,
        read_only_roots: false,
    }
}

/// A config reading only the named roots (no project or user roots).
fn custom_only(custom: &[&Path], bundled: Option<&Path>) -> FsSkills {
    FsSkills { include_default_roots: false, ..config(custom, bundled) }
}

fn mount(id: &str, config: FsSkills, workspace: &Path) -> Arc<SkillsMount> {
    Arc::new(SkillsMount::new(id.into(), config, Some(workspace.to_owned()), Changes::default()))
}

fn winner(catalog: &Catalog, name: &str) -> PathBuf {
    catalog.skills[name].folder().expect("a folder").file.clone()
}

fn merged(observed: &[(u32, &Observation)]) -> Catalog {
    registry::merge(observed)
}

/// The project `.seam/skills` (100) beats custom (300), which beats bundled (600), inside one layer.
#[test]
fn rank_decides_inside_one_layer() {
    let dir = scratch("rank");
    std::fs::create_dir(dir.join(".git")).unwrap();
    let (custom, bundled) = (dir.join("custom"), dir.join("bundled"));
    skill(&dir.join(".seam/skills"), "x", "project x", "", "");
    skill(&dir.join(".agents/skills"), "x", "agents x", "", "");
    skill(&custom, "x", "custom x", "", "");
    skill(&custom, "y", "custom y", "", "");
    skill(&bundled, "y", "bundled y", "", "");
    skill(&bundled, "z", "bundled z", "", "");
    let m = mount("m", config(&[&custom], Some(&bundled)), &dir);
    let o = m.observe(&dir);
    assert!(o.incomplete.is_none(), "{o:?}");
    let c = merged(&[(0, &o)]);
    assert_eq!(winner(&c, "x"), dir.join(".seam/skills/x/SKILL.md"));
    assert_eq!(winner(&c, "y"), custom.join("y/SKILL.md"));
    assert_eq!(winner(&c, "z"), bundled.join("z/SKILL.md"));
    // Without the project root, `.agents/skills` (200) is next.
    std::fs::remove_dir_all(dir.join(".seam")).unwrap();
    let m = mount("m2", config(&[&custom], Some(&bundled)), &dir);
    assert_eq!(winner(&merged(&[(0, &m.observe(&dir))]), "x"), dir.join(".agents/skills/x/SKILL.md"));
}

/// A nearer layer replaces a same-name skill outright, whatever the ranks;
/// inside a layer, equal ranks fall to registration order.
#[test]
fn a_nearer_layer_beats_rank_and_registration_order_breaks_ties() {
    let dir = scratch("layers");
    let (a, b, near) = (dir.join("a"), dir.join("b"), dir.join("near"));
    skill(&a, "x", "from a", "", "");
    skill(&b, "x", "from b", "", "");
    skill(&near, "x", "from the agent's own bundled root", "", "");
    skill(&a, "only-global", "global", "", "");
    let mut no_defaults = config(&[&a], None);
    no_defaults.include_default_roots = false;
    let global_a = mount("a", no_defaults.clone(), &dir);
    let global_b = mount("b", FsSkills { custom_dirs: vec![b.display().to_string()], ..no_defaults.clone() }, &dir);
    let own =
        mount("own", FsSkills { custom_dirs: Vec::new(), bundled_dir: Some(near.display().to_string()), ..no_defaults.clone() }, &dir);
    let (oa, ob, on) = (global_a.observe(&dir), global_b.observe(&dir), own.observe(&dir));
    // Registration order inside layer 0: a then b, and b then a.
    assert_eq!(winner(&merged(&[(0, &oa), (0, &ob)]), "x"), a.join("x/SKILL.md"));
    assert_eq!(winner(&merged(&[(0, &ob), (0, &oa)]), "x"), b.join("x/SKILL.md"));
    // The agent's own layer (2) replaces it even from the lowest rank (bundled, 600 against custom, 300).
    for order in [[(0, &oa), (0, &ob), (2, &on)], [(2, &on), (0, &ob), (0, &oa)]] {
        let c = merged(&order);
        assert_eq!(winner(&c, "x"), near.join("x/SKILL.md"));
        assert_eq!(winner(&c, "only-global"), a.join("only-global/SKILL.md"), "other names stay");
    }
    // An ancestor's layer (1) is beaten by the agent's own (2), and beats the global one.
    let c = merged(&[(1, &ob), (0, &oa)]);
    assert_eq!(winner(&c, "x"), b.join("x/SKILL.md"));
}

#[test]
fn an_invalid_skill_is_reported_and_skipped_and_the_others_stay() {
    let dir = scratch("invalid");
    let root = dir.join("custom");
    skill(&root, "good", "fine", "", "");
    skill(&root, "bad", "fine", "userInvocable: true\n", "");
    std::fs::create_dir_all(root.join("notes")).unwrap(); // a folder without SKILL.md is not a skill
    std::fs::write(root.join("README.md"), "not a skill").unwrap();
    let c = custom_only(&[&root], None);
    let m = mount("m", c, &dir);
    let o = m.observe(&dir);
    let scan = &o.roots[0].1;
    assert_eq!(scan.skills().map(|c| c.summary.name.as_str()).collect::<Vec<_>>(), ["good"]);
    let invalid: Vec<String> = scan.invalid().map(|i| i.to_string()).collect();
    assert_eq!(invalid.len(), 1);
    assert!(invalid[0].starts_with(&format!("{}:4: `userInvocable`", root.join("bad/SKILL.md").display())), "{invalid:?}");
}

fn providers(chain: &[(&Arc<SkillsMount>, u32)]) -> Vec<Provider> {
    chain
        .iter()
        .map(|(m, layer)| Provider {
            id: m.id.clone(),
            registry: "skills",
            config: Arc::new(m.config.clone()),
            running: (*m).clone() as Arc<dyn Running>,
            layer: *layer,
        })
        .collect()
}

fn chain(mounts: &[&Arc<SkillsMount>]) -> Vec<Layered> {
    mounts.iter().map(|m| Layered { mount: (*m).clone(), layer: 0 }).collect()
}

/// An unreadable root makes discovery incomplete: the last good catalog stays
/// (marked stale), and the next complete observation replaces it.
#[tokio::test]
async fn incomplete_discovery_keeps_the_last_good_catalog() {
    let dir = scratch("incomplete");
    let root = dir.join("custom");
    skill(&root, "kept", "d", "", "");
    let c = custom_only(&[&root], None);
    let m = mount("m", c, &dir);
    let first = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert!(first.stale.is_none() && first.skills.contains_key("kept"));
    // A symlink loop in place of the root: listing it fails, as an unreadable root does (root can read any mode).
    std::fs::rename(&root, dir.join("moved")).unwrap();
    std::os::unix::fs::symlink(&root, &root).unwrap();
    assert!(m.invalidate(&root));
    let during = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert!(during.stale.as_deref().is_some_and(|r| r.contains("cannot list")), "{during:?}");
    assert_eq!(during.skills.keys().collect::<Vec<_>>(), ["kept"], "the last good catalog is still what is published");
    assert_eq!(during.digest, first.digest);
    // A regular file in place of the root is no more an emptied root than a loop is.
    std::fs::remove_file(&root).unwrap();
    std::fs::write(&root, "not a folder\n").unwrap();
    assert!(m.invalidate(&root));
    let during = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert!(during.stale.as_deref().is_some_and(|r| r.contains("cannot list")), "{during:?}");
    assert_eq!(during.skills.keys().collect::<Vec<_>>(), ["kept"], "a file in place of the root keeps the last good catalog");
    // The root comes back with another skill: the catalog follows.
    std::fs::remove_file(&root).unwrap();
    std::fs::rename(dir.join("moved"), &root).unwrap();
    skill(&root, "added", "d", "", "");
    assert!(m.invalidate(&root));
    let after = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert!(after.stale.is_none());
    assert_eq!(after.skills.keys().collect::<Vec<_>>(), ["added", "kept"]);
    // A mount that never completed has nothing to publish, and says so instead of listing nothing.
    let broken = dir.join("broken");
    std::os::unix::fs::symlink(&broken, &broken).unwrap();
    let c = custom_only(&[&broken], None);
    let never = mount("never", c, &dir);
    let none = registry::catalog(dir.clone(), chain(&[&never])).await;
    assert!(none.unavailable.is_some() && none.skills.is_empty(), "{none:?}");
}

/// The digest follows the summaries, not the bodies; a cached catalog is reused while no revision moves.
#[tokio::test]
async fn the_digest_changes_with_the_catalog_and_not_with_a_body() {
    let dir = scratch("digest");
    let root = dir.join("custom");
    skill(&root, "a", "first", "", "body one\n");
    let c = custom_only(&[&root], None);
    let m = mount("m", c, &dir);
    let first = registry::catalog(dir.clone(), chain(&[&m])).await;
    let again = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert!(Arc::ptr_eq(&first, &again), "unchanged revisions reuse the cached catalog");
    skill(&root, "a", "first", "", "body two, longer than the first\n");
    m.invalidate(&root.join("a/SKILL.md"));
    let body_edit = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert_eq!(body_edit.digest, first.digest, "a body-only edit leaves the catalog alone");
    skill(&root, "a", "second", "", "body two\n");
    m.invalidate(&root.join("a/SKILL.md"));
    let described = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert_ne!(described.digest, first.digest);
    skill(&root, "a", "second", "user-invocable: false\n", "body two\n");
    m.invalidate(&root.join("a/SKILL.md"));
    assert_ne!(registry::catalog(dir.clone(), chain(&[&m])).await.digest, described.digest, "permissions are in the digest");
    std::fs::remove_dir_all(root.join("a")).unwrap();
    m.invalidate(&root.join("a"));
    let empty = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert!(empty.skills.is_empty() && empty.unavailable.is_none() && empty.stale.is_none(), "{empty:?}");
    let def = seam_skills::tool::describe(&empty, 100);
    assert!(def.ends_with("</available_skills>\nNo skills are available now."), "{def}");
}

/// One edit rereads one file, not the root.
#[test]
fn an_event_rereads_only_its_folder() {
    let dir = scratch("incremental");
    let root = dir.join("custom");
    for i in 0..50 {
        skill(&root, &format!("s{i}"), "d", "", "");
    }
    let c = custom_only(&[&root], None);
    let m = mount("m", c, &dir);
    assert_eq!(m.observe(&dir).roots[0].1.files_read, 50);
    assert_eq!(m.observe(&dir).roots[0].1.files_read, 50, "a clean root is the same scan");
    skill(&root, "s7", "changed", "", "");
    m.invalidate(&root.join("s7/SKILL.md"));
    let o = m.observe(&dir);
    assert_eq!(o.roots[0].1.files_read, 1);
    assert_eq!(o.roots[0].1.skills().find(|c| c.summary.name == "s7").unwrap().summary.description, "changed");
    // An event on the root itself relists it, rereading only files whose stamp moved.
    skill(&root, "new", "d", "", "");
    m.invalidate(&root);
    let o = m.observe(&dir);
    assert_eq!(o.roots[0].1.files_read, 1);
    assert_eq!(o.roots[0].1.skills().count(), 51);
}

/// At most `max_watched_projects` projects are kept; the least recently used goes, with its watches.
#[tokio::test]
async fn projects_past_the_limit_drop_the_least_recently_used() {
    let dir = scratch("projects");
    let projects: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("p{i}"))).collect();
    for p in &projects {
        std::fs::create_dir_all(p.join(".git")).unwrap();
        skill(&p.join(".seam/skills"), "here", "d", "", "");
    }
    let mut c = config(&[], None);
    c.watch = true;
    c.max_watched_projects = 2;
    let m = Arc::new(SkillsMount::new("m".into(), c, Some(dir.clone()), Changes::default()));
    let built = seam_skills::host::start(m.clone()).unwrap();
    // At the limit: both kept and watched.
    built.observe(&projects[0].join("src"));
    built.observe(&projects[1]);
    assert_eq!(built.projects(), [projects[0].clone(), projects[1].clone()]);
    let watched = built.watched_roots();
    assert!(watched.contains(&projects[0].join(".seam/skills")) && watched.contains(&projects[1].join(".seam/skills")), "{watched:?}");
    // Using p0 again makes p1 the least recently used; one past the limit drops it.
    built.observe(&projects[0]);
    built.observe(&projects[2]);
    assert_eq!(built.projects(), [projects[0].clone(), projects[2].clone()]);
    let watched = built.watched_roots();
    assert!(!watched.iter().any(|r| r.starts_with(&projects[1])), "{watched:?}");
    assert!(watched.contains(&projects[2].join(".seam/skills")));
    built.dispose(std::time::Duration::from_secs(1)).await;
}

fn tool_call(providers: Vec<Provider>, name: &str) -> ToolCall {
    ToolCall {
        settings: json!({}),
        section: None,
        providers,
        arguments: json!({ "name": name }).as_object().unwrap().clone(),
        roots: Roots::default(),
        cancel: Default::default(),
        client: Default::default(),
    }
}

fn text(out: &seam_engine::runtime::ToolOutput) -> &str {
    out.content[0]["text"].as_str().unwrap()
}

/// The model path checks model-invocability when listed and when loaded; the
/// user path checks user-invocability likewise, and is the only way to a
/// model-disabled, user-enabled skill.
#[tokio::test]
async fn both_paths_check_their_permission_at_both_boundaries() {
    let dir = scratch("paths");
    let root = dir.join("custom");
    skill(&root, "both", "d", "", "Both.\n");
    skill(&root, "user-only", "d", "disable-model-invocation: true\nuser-invocable: true\n", "For the user.\n");
    skill(&root, "model-only", "d", "user-invocable: off\n", "For the model.\n");
    skill(&root, "sealed", "d", "disable-model-invocation: true\nuser-invocable: false\n", "For no one.\n");
    let c = custom_only(&[&root], None);
    let m = mount("m", c, &dir);
    let ps = providers(&[(&m, 0)]);
    let settings = seam_skills::SkillSettings { catalog_description_max: 500 };

    let listed = seam_skills::tool::list(
        &settings,
        seam_engine::surface::Listing {
            definition: seam_skills::tool::definition(&settings),
            providers: ps.clone(),
            section: None,
            roots: Vec::new(),
        },
    )
    .await;
    let description = listed.definition["description"].as_str().unwrap();
    assert!(description.contains("- both: d\n- model-only: d\n</available_skills>"), "{description}");
    assert!(!description.contains("user-only"));
    let prompts: Vec<&str> = listed.prompts.iter().map(|p| &*p.name).collect();
    assert_eq!(prompts, ["both", "user-only"]);

    let out = seam_skills::tool::call(settings.clone(), tool_call(ps.clone(), "both")).await;
    assert!(!out.is_error);
    assert_eq!(
        text(&out),
        format!(
            "<skill_content name=\"both\" base=\"{0}\">\nThis skill's resources (scripts, references, assets) are files under {0}; read one only when the instructions below call for it.\n\nBoth.\n\n</skill_content>",
            root.join("both").display()
        )
    );
    let out = seam_skills::tool::call(settings.clone(), tool_call(ps.clone(), "user-only")).await;
    assert!(text(&out).starts_with("SKILL_NOT_MODEL_INVOCABLE") && text(&out).contains("only by the user"), "{}", text(&out));
    // Neither the model nor the user: it is said so, not that the user may.
    let out = seam_skills::tool::call(settings.clone(), tool_call(ps.clone(), "sealed")).await;
    assert!(text(&out).starts_with("SKILL_NOT_MODEL_INVOCABLE") && text(&out).contains("cannot be invoked"), "{}", text(&out));
    assert!(!text(&out).contains("by the user"), "{}", text(&out));
    let out = seam_skills::tool::call(settings.clone(), tool_call(ps.clone(), "missing")).await;
    assert!(text(&out).starts_with("SKILL_UNKNOWN"));

    let prompt = |name: &str| PromptCall {
        name: name.into(),
        arguments: Default::default(),
        providers: ps.clone(),
        section: None,
        roots: Vec::new(),
    };
    let got = seam_skills::tool::get_prompt(settings.clone(), prompt("user-only")).await.unwrap();
    assert_eq!(got["messages"][0]["role"], "user");
    assert!(got["messages"][0]["content"]["text"].as_str().unwrap().contains("\n\nFor the user.\n"));
    assert_eq!(seam_skills::tool::get_prompt(settings.clone(), prompt("model-only")).await.unwrap_err().code, "PROMPT_UNKNOWN");

    // Changed on disk after listing, before loading (no event seen yet): the load gate catches it.
    skill(&root, "both", "d", "disable-model-invocation: yes\nuser-invocable: no\n", "Both.\n");
    let out = seam_skills::tool::call(settings.clone(), tool_call(ps.clone(), "both")).await;
    assert!(text(&out).starts_with("SKILL_NOT_MODEL_INVOCABLE") && text(&out).contains("changed on disk"), "{}", text(&out));
    assert!(text(&out).contains("cannot be invoked"), "now neither may: {}", text(&out));
    // No longer a skill at all (its frontmatter gone) between listing and loading: it could not be loaded.
    std::fs::write(root.join("model-only/SKILL.md"), "no frontmatter here\n").unwrap();
    let out = seam_skills::tool::call(settings.clone(), tool_call(ps.clone(), "model-only")).await;
    assert!(text(&out).starts_with("SKILL_LOAD_FAILED"), "{}", text(&out));
    let refused = seam_skills::tool::get_prompt(settings.clone(), prompt("both")).await.unwrap_err();
    assert_eq!(refused.code, "SKILL_NOT_USER_INVOCABLE");
    let _: Value = json!(null);
}

/// A world-writable root, or one inside the workspace, is a prompt-authority
/// root: flagged, and refused under `read_only_roots`. The bundled root is
/// the operator's own: only its mode counts.
#[test]
fn writable_roots_are_flagged_and_refused_under_read_only_roots() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = scratch("trust");
    let workspace = dir.join("ws");
    let (inside, outside, open, bundled) = (workspace.join("skills"), dir.join("outside"), dir.join("open"), workspace.join("bundled"));
    for root in [&inside, &outside, &open, &bundled] {
        skill(root, "s", "d", "", "");
    }
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let c = custom_only(&[&inside, &outside, &open], Some(&bundled));
    let roots = seam_skills::discover::roots(&c, &workspace, None);
    let trust: Vec<_> = roots.iter().map(|r| seam_skills::trust::of(r, Some(&workspace))).collect();
    assert!(trust[0].in_workspace && !trust[0].world_writable && trust[0].warning().unwrap().contains("inside the workspace"));
    assert_eq!(trust[1].warning(), None, "outside the workspace, not world-writable");
    assert!(trust[2].world_writable && trust[2].warning().unwrap().contains("world-writable"));
    assert_eq!(trust[3].warning(), None, "the bundled root may sit inside the workspace");
    assert_eq!(trust[2].mode.map(|m| m & 0o777), Some(0o777));

    let m = mount("m", FsSkills { read_only_roots: true, ..c.clone() }, &workspace);
    let o = m.observe(&workspace);
    let refused: Vec<&Path> = o.refused.iter().map(|(r, _)| r.path.as_path()).collect();
    assert_eq!(refused, [inside.as_path(), open.as_path()]);
    let read: Vec<&Path> = o.roots.iter().map(|(r, _)| r.path.as_path()).collect();
    assert_eq!(read, [outside.as_path(), bundled.as_path()]);
    // Without the option they are read (and only warned about).
    assert_eq!(mount("m2", c, &workspace).observe(&workspace).roots.len(), 4);

    // A root under a folder anyone may write (and that lacks the sticky bit) can be
    // replaced by anyone: flagged too, though the root's own mode is 0755.
    let shared = dir.join("shared");
    let under = shared.join("team/skills");
    skill(&under, "s", "d", "", "");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let root = |c: &FsSkills| seam_skills::discover::roots(c, &workspace, None).remove(0);
    let under_root = root(&custom_only(&[&under], None));
    let t = seam_skills::trust::of(&under_root, Some(&workspace));
    assert!(!t.world_writable && t.replaceable_via.as_deref() == Some(shared.as_path()), "{t:?}");
    assert!(t.warning().unwrap().contains("without the sticky bit"), "{:?}", t.warning());
    assert!(
        mount("m3", FsSkills { read_only_roots: true, ..custom_only(&[&under], None) }, &workspace).observe(&workspace).roots.is_empty()
    );
    // The sticky bit (as on /tmp) keeps others from renaming what is not theirs.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let t = seam_skills::trust::of(&under_root, Some(&workspace));
    assert_eq!((t.warning(), t.replaceable_via), (None, None));

    // Sticky protects only what the reader owns: a folder in it that another user
    // owns is theirs to change, and so is a root that another user owns.
    // (Giving a folder away takes root: as another user this part says so and is skipped.)
    let team = shared.join("team");
    match std::os::unix::fs::chown(&team, Some(4242), None) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => eprintln!("not root: the ownership checks are skipped ({e})"),
        r => {
            r.unwrap();
            let t = seam_skills::trust::of(&under_root, Some(&workspace));
            assert_eq!(t.foreign_owner, Some((team.clone(), 4242)), "{t:?}");
            assert!(t.warning().unwrap().contains("belongs to uid 4242"), "{:?}", t.warning());
            let me = std::fs::metadata(&dir).unwrap().uid();
            std::os::unix::fs::chown(&team, Some(me), None).unwrap();
            std::os::unix::fs::chown(&under, Some(4242), None).unwrap();
            assert_eq!(seam_skills::trust::of(&under_root, Some(&workspace)).foreign_owner, Some((under.clone(), 4242)));
            std::os::unix::fs::chown(&under, Some(me), None).unwrap();
        }
    }

    // A link to a safe folder, kept in a folder anyone may write, can be pointed elsewhere.
    let safe = dir.join("safe");
    skill(&safe, "s", "d", "", "");
    let drop_box = dir.join("dropbox");
    std::fs::create_dir_all(&drop_box).unwrap();
    std::fs::set_permissions(&drop_box, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::symlink(&safe, drop_box.join("skills")).unwrap();
    let linked = root(&custom_only(&[&drop_box.join("skills")], None));
    let t = seam_skills::trust::of(&linked, Some(&workspace));
    assert_eq!(t.replaceable_via.as_deref(), Some(drop_box.as_path()), "judged as written too: {t:?}");
    let t = seam_skills::trust::of(&root(&custom_only(&[&safe], None)), Some(&workspace));
    assert_eq!(t.warning(), None, "the folder itself is safe: {t:?}");
}

/// Real edits on disk: a burst of 100 writes to one skill file ends in a
/// republish that shows the last write, in far fewer republishes than events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_republishes_a_burst_of_edits_after_it_settles() {
    let dir = scratch("watch");
    let root = dir.join("custom");
    skill(&root, "w", "edit start", "", "");
    let c = FsSkills { watch: true, ..custom_only(&[&root], None) };
    let changes = Changes::default();
    let m = seam_skills::host::start(Arc::new(SkillsMount::new("m".into(), c, Some(dir.clone()), changes.clone()))).unwrap();
    let first = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert_eq!(first.skills["w"].summary.description, "edit start");
    let mut published = changes.subscribe();
    published.mark_unchanged();
    for i in 0..100 {
        skill(&root, "w", &format!("edit {i}"), "", "");
    }
    tokio::time::timeout(std::time::Duration::from_secs(30), published.changed()).await.expect("a republish").unwrap();
    let after = registry::catalog(dir.clone(), chain(&[&m])).await;
    let republishes = m.republishes();
    // The republish may come while the last writes are still landing; the settle after them republishes again.
    if after.skills["w"].summary.description != "edit 99" {
        tokio::time::timeout(std::time::Duration::from_secs(30), published.changed()).await.expect("a second republish").unwrap();
    }
    assert_eq!(registry::catalog(dir.clone(), chain(&[&m])).await.skills["w"].summary.description, "edit 99");
    assert!(m.republishes() < 100, "{republishes} republishes for 100 writes (each write is several events)");
    eprintln!("100 writes → {} republishes", m.republishes());
    m.dispose(std::time::Duration::from_secs(1)).await;
}

/// Waits, event by event, until the catalog satisfies `done`: each wait is for
/// a republish, bounded so that a missing one fails the test.
async fn until(
    published: &mut tokio::sync::watch::Receiver<u64>,
    dir: &Path,
    m: &Arc<SkillsMount>,
    what: &str,
    done: impl Fn(&Catalog) -> bool,
) -> Arc<Catalog> {
    loop {
        let c = registry::catalog(dir.to_owned(), chain(&[m])).await;
        if done(&c) {
            return c;
        }
        tokio::time::timeout(std::time::Duration::from_secs(30), published.changed())
            .await
            .unwrap_or_else(|_| panic!("no republish while waiting for {what}; last catalog {c:?}"))
            .unwrap();
    }
}

fn watching(dir: &Path, roots: &[&Path]) -> (Arc<SkillsMount>, Changes) {
    let c = FsSkills { watch: true, ..custom_only(roots, None) };
    let changes = Changes::default();
    let m = seam_skills::host::start(Arc::new(SkillsMount::new("m".into(), c, Some(dir.to_owned()), changes.clone()))).unwrap();
    (m, changes)
}

/// A root that does not exist yet is watched through its nearest existing
/// ancestor: making it is seen, its skills are read and watched, and removing
/// it again goes back to the ancestor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_made_while_seam_runs_is_seen_and_one_removed_is_let_go() {
    let dir = scratch("late-root");
    let root = dir.join("later/skills");
    let (m, changes) = watching(&dir, &[&root]);
    let mut published = changes.subscribe();
    assert!(registry::catalog(dir.clone(), chain(&[&m])).await.skills.is_empty());
    assert_eq!(m.watched_paths(), vec![dir.clone()], "the nearest existing ancestor stands in for the missing root");

    skill(&root, "x", "made later", "", "");
    until(&mut published, &dir, &m, "the new root's skill", |c| c.skills.contains_key("x")).await;
    assert_eq!(m.watched_paths(), vec![root.clone()], "the root (recursively), the ancestor let go");

    skill(&root, "x", "edited", "", "");
    until(&mut published, &dir, &m, "the edit", |c| c.skills.get("x").is_some_and(|x| x.summary.description == "edited")).await;

    std::fs::remove_dir_all(dir.join("later")).unwrap();
    until(&mut published, &dir, &m, "the root's removal", |c| c.skills.is_empty()).await;
    assert_eq!(m.watched_paths(), vec![dir.clone()]);
    m.dispose(std::time::Duration::from_secs(1)).await;
}

/// A skill folder removed and made again is watched again, whether or not a
/// read fell between: edits to the new folder are seen, though its old watch
/// went with the old folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_folder_removed_and_made_again_is_watched_again() {
    let dir = scratch("remade");
    let root = dir.join("custom");
    skill(&root, "y", "first", "", "");
    let (m, changes) = watching(&dir, &[&root]);
    let mut published = changes.subscribe();
    assert!(registry::catalog(dir.clone(), chain(&[&m])).await.skills.contains_key("y"));

    // Removed and made again before any read: the listing never misses the folder.
    std::fs::remove_dir_all(root.join("y")).unwrap();
    skill(&root, "y", "again", "", "");
    until(&mut published, &dir, &m, "the folder made again", |c| c.skills.get("y").is_some_and(|y| y.summary.description == "again")).await;
    skill(&root, "y", "edited", "", "");
    until(&mut published, &dir, &m, "an edit in it", |c| c.skills.get("y").is_some_and(|y| y.summary.description == "edited")).await;
    // Removed, read without it, then made again.
    std::fs::remove_dir_all(root.join("y")).unwrap();
    until(&mut published, &dir, &m, "the removal", |c| !c.skills.contains_key("y")).await;
    skill(&root, "y", "back", "", "");
    until(&mut published, &dir, &m, "the folder made again", |c| c.skills.get("y").is_some_and(|y| y.summary.description == "back")).await;
    skill(&root, "y", "edited again", "", "");
    until(&mut published, &dir, &m, "an edit in it", |c| c.skills.get("y").is_some_and(|y| y.summary.description == "edited again")).await;
    m.dispose(std::time::Duration::from_secs(1)).await;
}

#[test]
fn written_paths_are_read_from_every_string_of_the_arguments() {
    use seam_skills::host::written_paths;
    let dir = scratch("written");
    std::fs::create_dir_all(dir.join("real")).unwrap();
    std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
    let args = json!({
        "path": "/a/b/../c/./SKILL.md",
        "edits": [{ "file": "file:///u/v" }, { "file": "file://localhost/u/with%20space" }],
        "relative": "sub/x",
        "content": "---\nname: a\n",
        "count": 3,
        "through_link": dir.join("link/new/SKILL.md"),
    });
    let found = written_paths(args.as_object().unwrap(), Some(Path::new("/ws")));
    for expected in [
        PathBuf::from("/a/c/SKILL.md"),
        PathBuf::from("/u/v"),
        PathBuf::from("/u/with space"),
        PathBuf::from("/ws/sub/x"),
        dir.join("link/new/SKILL.md"),
        dir.join("real/new/SKILL.md"),
    ] {
        assert!(found.contains(&expected), "{} not in {found:?}", expected.display());
    }
    assert!(!found.iter().any(|p| p.to_string_lossy().contains("name: a")), "a file's content is not a path: {found:?}");
    assert!(written_paths(json!({ "q": "x" }).as_object().unwrap(), None).is_empty(), "no workspace, no relative paths");
    let many: Vec<String> = (0..100).map(|i| format!("/p/{i}")).collect();
    assert_eq!(written_paths(json!({ "paths": many }).as_object().unwrap(), None).len(), 64, "at most 64 strings are looked at");
}

/// A call through seam that writes into a root invalidates it and republishes
/// at once; with the watcher off, nothing else would have.
#[tokio::test]
async fn a_write_through_seam_republishes_at_once() {
    let dir = scratch("saw-write");
    let root = dir.join("custom");
    skill(&root, "a", "d", "", "");
    let c = custom_only(&[&root], None);
    let m = mount("m", c, &dir);
    assert!(m.write_watcher().is_some());
    assert_eq!(registry::catalog(dir.clone(), chain(&[&m])).await.skills.len(), 1);
    skill(&root, "b", "d", "", "");
    assert_eq!(registry::catalog(dir.clone(), chain(&[&m])).await.skills.len(), 1, "unwatched: the cached catalog stands");

    m.saw_write(json!({ "path": dir.join("elsewhere/SKILL.md") }).as_object().unwrap());
    assert_eq!(m.republishes(), 0, "a write outside the roots republishes nothing");
    m.saw_write(json!({ "path": "custom/b/SKILL.md" }).as_object().unwrap());
    assert_eq!(m.republishes(), 1);
    let c = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert_eq!(c.skills.keys().collect::<Vec<_>>(), ["a", "b"]);
}

/// After each edit the cached catalog is updated for the names read again
/// only; it must equal a catalog merged whole from a fresh read, digest
/// included: winners revealed by a removal, replaced by a higher rank,
/// permissions flipped, a skill turned invalid and back.
#[tokio::test]
async fn an_updated_catalog_equals_one_merged_whole() {
    let dir = scratch("updated-catalog");
    std::fs::create_dir(dir.join(".git")).unwrap();
    let (project, custom, bundled) = (dir.join(".seam/skills"), dir.join("custom"), dir.join("bundled"));
    for i in 0..20 {
        skill(&bundled, &format!("s{i}"), "bundled", "", "");
        if i % 2 == 0 {
            skill(&custom, &format!("s{i}"), "custom", "", "");
        }
    }
    let c = config(&[&custom], Some(&bundled));
    let m = mount("m", c.clone(), &dir);
    let whole = |n: usize| {
        let fresh = mount(&format!("fresh{n}"), c.clone(), &dir);
        registry::merge(&[(0, &fresh.observe(&dir))])
    };
    type Edit<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let edits: Vec<Edit> = vec![
        ("a custom skill removed: the bundled one wins again", Box::new(|| std::fs::remove_dir_all(custom.join("s0")).unwrap())),
        ("a project skill shadows both", Box::new(|| skill(&project, "s2", "project", "", ""))),
        ("a new name", Box::new(|| skill(&custom, "fresh", "new", "", ""))),
        ("a permission flipped", Box::new(|| skill(&custom, "s4", "custom", "disable-model-invocation: true\n", ""))),
        ("a winner turned invalid", Box::new(|| skill(&custom, "s6", "custom", "userInvocable: no\n", ""))),
        ("and fixed", Box::new(|| skill(&custom, "s6", "custom again", "", ""))),
        ("a body edit", Box::new(|| skill(&custom, "s8", "custom", "", "New body.\n"))),
    ];
    let mut last = registry::catalog(dir.clone(), chain(&[&m])).await;
    for (n, (what, edit)) in edits.iter().enumerate() {
        edit();
        for root in [&project, &custom] {
            m.invalidate(root);
        }
        let now = registry::catalog(dir.clone(), chain(&[&m])).await;
        let expected = whole(n);
        let files = |c: &Catalog| {
            c.skills.iter().map(|(k, v)| (k.clone(), v.folder().map(|f| f.file.clone()), v.summary.clone())).collect::<Vec<_>>()
        };
        assert_eq!(files(&now), files(&expected), "{what}");
        assert_eq!(now.digest, expected.digest, "{what}");
        assert_eq!(now.digest == last.digest, *what == "a body edit", "{what}: the digest moves with the summaries only");
        last = now;
    }
}

/// Sessions of two agents sharing a mount list at once after an edit: each
/// catalog shows the edit (reads of one root never interleave, so neither can
/// take the other's half-done read for a finished one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_listings_after_an_edit_all_see_it() {
    let dir = scratch("concurrent");
    let root = dir.join("custom");
    for i in 0..200 {
        skill(&root, &format!("s{i}"), "d", "", "");
    }
    let c = custom_only(&[&root], None);
    let m = mount("m", c, &dir);
    for round in 0..30 {
        let description = format!("edit {round}");
        skill(&root, &format!("s{}", round * 7 % 200), &description, "", "");
        m.invalidate(&root.join(format!("s{}", round * 7 % 200)));
        let tasks: Vec<_> =
            (0..4).map(|layer| tokio::spawn(registry::catalog(dir.clone(), vec![Layered { mount: m.clone(), layer }]))).collect();
        for task in tasks {
            let c = task.await.unwrap();
            let s = &c.skills[&format!("s{}", round * 7 % 200)];
            assert_eq!(s.summary.description, description, "round {round}");
        }
    }
}

/// A root removed and made again before any read is watched again: an edit
/// in the new folder is seen, though the old folder's watch went with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_removed_and_made_again_is_watched_again() {
    let dir = scratch("root-remade");
    let root = dir.join("custom");
    skill(&root, "a", "first", "", "");
    let (m, changes) = watching(&dir, &[&root]);
    let mut published = changes.subscribe();
    assert!(registry::catalog(dir.clone(), chain(&[&m])).await.skills.contains_key("a"));
    std::fs::remove_dir_all(&root).unwrap();
    skill(&root, "b", "second", "", "");
    until(&mut published, &dir, &m, "the root made again", |c| c.skills.contains_key("b") && !c.skills.contains_key("a")).await;
    skill(&root, "b", "edited", "", "");
    until(&mut published, &dir, &m, "an edit in the new root", |c| c.skills.get("b").is_some_and(|b| b.summary.description == "edited"))
        .await;
    m.dispose(std::time::Duration::from_secs(1)).await;
}

/// An incomplete observation is tried again after a backoff, without any
/// event or listing: the repaired root's skills are then published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incomplete_observation_is_retried_and_republished() {
    let dir = scratch("retry");
    let root = dir.join("custom");
    std::os::unix::fs::symlink(&root, &root).unwrap();
    let c = custom_only(&[&root], None);
    let changes = Changes::default();
    let m = seam_skills::host::start(Arc::new(SkillsMount::new("m".into(), c, Some(dir.clone()), changes.clone()))).unwrap();
    let mut published = changes.subscribe();
    let first = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert!(first.unavailable.is_some(), "{first:?}");
    std::fs::remove_file(&root).unwrap();
    skill(&root, "back", "d", "", "");
    let waited = std::time::Instant::now();
    tokio::time::timeout(seam_skills::host::RETRY_FIRST * 10, published.changed()).await.expect("a retry republishes").unwrap();
    assert!(waited.elapsed() < seam_skills::host::RETRY_FIRST * 10);
    let after = registry::catalog(dir.clone(), chain(&[&m])).await;
    assert!(after.unavailable.is_none() && after.skills.contains_key("back"), "{after:?}");
    m.dispose(std::time::Duration::from_secs(1)).await;
}

/// A body-only edit leaves the listed text as it was: the listing is not
/// rendered again, it is the very same one.
#[tokio::test]
async fn a_body_edit_keeps_the_rendered_listing() {
    let dir = scratch("body-edit");
    let root = dir.join("custom");
    for i in 0..10 {
        skill(&root, &format!("s{i}"), "d", "", "Body.\n");
    }
    let c = custom_only(&[&root], None);
    let m = mount("m", c, &dir);
    let listed = |m: &Arc<SkillsMount>| {
        let provider = Provider { id: "m".into(), registry: "skills", config: Arc::new(()), running: m.clone(), layer: 0 };
        let settings = seam_skills::SkillSettings { catalog_description_max: 100 };
        let listing = seam_engine::surface::Listing {
            definition: seam_skills::tool::definition(&settings),
            providers: vec![provider],
            section: None,
            roots: Vec::new(),
        };
        seam_skills::tool::list(&settings, listing)
    };
    let before = listed(&m).await;
    skill(&root, "s3", "d", "", "Another body.\n");
    m.invalidate(&root.join("s3/SKILL.md"));
    let after = listed(&m).await;
    assert!(Arc::ptr_eq(&before.definition, &after.definition) && Arc::ptr_eq(&before.prompts, &after.prompts));
    skill(&root, "s3", "new description", "", "");
    m.invalidate(&root.join("s3/SKILL.md"));
    let changed = listed(&m).await;
    assert!(!Arc::ptr_eq(&before.definition, &changed.definition));
    assert!(changed.definition["description"].as_str().unwrap().contains("- s3: new description\n"));
}

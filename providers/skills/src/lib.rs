//! The Skills surface: layered skill folders (`skills.fs`), served as the
//! `skill` tool (the model path, its description the catalog) and as one MCP
//! prompt per user-invocable skill (the user path).

pub mod discover;
pub mod host;
pub mod imported;
pub mod registry;
pub mod served;
pub mod skill;
pub mod tool;
pub mod trust;

use schemars::JsonSchema;
use seam_engine::codes::CodeDoc;
use seam_engine::surface::{
    Environment, EnvironmentProbe, Exposure, Finding, FixedTool, Kind, Live, MountCx, MountKind, Requirement, ResolvedMount, ServedSkills,
    Serving, StatusCx, Surface, Tool,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

pub struct SkillsSurface;

pub static SURFACE: SkillsSurface = SkillsSurface;

fn yes() -> bool {
    true
}
fn max_watched_projects() -> u32 {
    128
}

/// `skills.fs`: skills discovered in folders (`<dir>/<name>/SKILL.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsSkills {
    #[serde(default)]
    #[schemars(skip)]
    pub kind: String,
    /// Also read the project's `.seam/skills`, `.agents/skills` and the user's `~/.seam/skills`, `~/.agents/skills`.
    #[serde(default = "yes")]
    pub include_default_roots: bool,
    /// Operator-supplied roots (rank 300); relative to the file that names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_dirs: Vec<String>,
    /// A trusted bundled root (rank 600, the lowest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundled_dir: Option<String>,
    #[serde(default = "yes")]
    pub watch: bool,
    /// Projects (workspaces' nearest `.git` ancestors) whose roots are kept and watched; past it the least recently used is dropped.
    #[serde(default = "max_watched_projects")]
    #[schemars(range(min = 1, max = 4096))]
    pub max_watched_projects: u32,
    /// Refuse roots that are world-writable or inside the workspace (prompt-authority roots anyone or any tool can write).
    #[serde(default)]
    pub read_only_roots: bool,
}

fn catalog_description_max() -> u32 {
    500
}

/// Settings of the `skill` tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillSettings {
    /// Descriptions in the catalog are cut to this many characters, `...` included.
    #[serde(default = "catalog_description_max")]
    #[schemars(range(min = 3, max = 100_000))]
    pub catalog_description_max: u32,
}

static FS: Kind<FsSkills> = Kind { name: "skills.fs", registry: "skills", resolve: resolve_fs, build: Some(host::build), stand_in: None };
static SKILL_TOOL: Tool<SkillSettings> = Tool::new("skill", &["skills"])
    .served(Serving {
        definition: tool::definition,
        call: tool::call,
        owns_timeout: false,
        invalid_arguments: codes::SKILL_INVALID_ARGUMENTS,
    })
    .live(Live {
        list: tool::list,
        get_prompt: tool::get_prompt,
        served: Some(ServedSkills { scheme: served::SCHEME, skills: tool::skills, read_skill: tool::read_skill }),
    })
    .guided("`skill`: before a task, see whether a skill in its catalog covers it, and load that skill first.");

fn resolve_fs(cx: &mut MountCx<'_>, mut config: FsSkills) -> Option<ResolvedMount> {
    let mut requirements = Vec::new();
    for (i, dir) in config.custom_dirs.iter_mut().enumerate() {
        let at = format!("/custom_dirs/{i}");
        let path = cx.path(&at, dir);
        *dir = path.display().to_string();
        requirements.push(Requirement::Directory { path, pointer: format!("{}{at}", cx.pointer) });
    }
    if let Some(dir) = &mut config.bundled_dir {
        let path = cx.path("/bundled_dir", dir);
        *dir = path.display().to_string();
        requirements.push(Requirement::Directory { path, pointer: format!("{}/bundled_dir", cx.pointer) });
    }
    let probed = config.clone();
    let mut r = ResolvedMount::new(config, Exposure::Tool("skill"));
    r.needs = vec!["workspace"];
    r.requirements = requirements;
    r.environment = Some(EnvironmentProbe::new(move |workspace| environment(&probed, workspace)));
    Some(r)
}

/// What `validate --environment` and `seam inventory` say of a mount's roots
/// for the configured workspace: each root with owner and mode, every invalid
/// skill file (path, line, reason), and the trust warnings.
fn environment(config: &FsSkills, configured_root: Option<&std::path::Path>) -> Environment {
    let mut env = Environment::default();
    // Without a configured root, discovery reads the folder seam was started in: so does this look.
    let workspace = &registry::workspace_of(configured_root, &[]);
    let project = discover::project_of(workspace);
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(std::path::PathBuf::from);
    let mut facts = Vec::new();
    let mut custom = 0..;
    for root in discover::roots(config, &project, home.as_deref()) {
        // Findings point where the root is written; the default roots, at the mount.
        let pointer = match root.origin {
            "custom" => format!("/custom_dirs/{}", custom.next().unwrap_or_default()),
            "bundled" => "/bundled_dir".to_owned(),
            _ => String::new(),
        };
        let trust = trust::of(&root, Some(workspace));
        let mut line = format!("root {:>3} {:<24} {}", root.rank, root.origin, root.path.display());
        if let Some(e) = &trust.error {
            env.findings.push(Finding { code: crate::codes::SKILL_ROOT_UNREADABLE, pointer: pointer.clone(), message: e.clone() });
            line.push_str("  (unreadable)");
            env.lines.push(line);
            facts.push(host::root_json(&root, &trust));
            continue;
        }
        if !trust.exists {
            line.push_str("  (absent)");
            env.lines.push(line);
            facts.push(host::root_json(&root, &trust));
            continue;
        }
        let refused = config.read_only_roots && trust.refusal().is_some();
        let mut found = host::root_json(&root, &trust);
        if let Some(warning) = trust.warning() {
            let what = if refused { "refused" } else { "warning" };
            env.findings.push(Finding {
                code: if trust.others_can_write() { codes::SKILL_ROOT_WORLD_WRITABLE } else { codes::SKILL_ROOT_IN_WORKSPACE },
                pointer: pointer.clone(),
                message: format!("{} ({what}): {warning}", root.path.display()),
            });
        }
        if !refused {
            scan_findings(&root, &pointer, &mut env, &mut line, &mut found);
        }
        let mode = trust.mode.map(|m| format!("{:04o}", m & 0o7777)).unwrap_or_default();
        line.push_str(&format!("  owner uid {} mode {mode}", trust.owner_uid.unwrap_or_default()));
        if refused {
            line.push_str("  REFUSED (read_only_roots)");
        }
        env.lines.push(line);
        facts.push(found);
    }
    env.facts = Some(json!({ "roots": facts }));
    env
}

/// A readable root's scan, as `environment` reports it: its count of skills in `found`
/// and `line`, and a finding for each skill no one can invoke and each invalid one.
fn scan_findings(root: &discover::Root, pointer: &str, env: &mut Environment, line: &mut String, found: &mut serde_json::Value) {
    let finding = |code, message| Finding { code, pointer: pointer.to_owned(), message };
    let scan = match discover::scan(root, None, &discover::Dirty::All, None) {
        Ok(scan) => scan,
        Err(e) => return env.findings.push(finding(crate::codes::SKILL_ROOT_UNREADABLE, e.to_string())),
    };
    found["skills"] = json!(scan.skills().count());
    for skill in scan.skills().filter(|s| !s.summary.model_invocable && !s.summary.user_invocable) {
        // A root's scan finds folders only (a mount's skills are imported elsewhere).
        let discover::Place::Folder(folder) = &skill.place else { continue };
        let message = format!(
            "{}: skill `{}` can be invoked by no one (`disable-model-invocation: true` and `user-invocable: false`)",
            folder.file.display(),
            skill.summary.name
        );
        env.findings.push(finding(crate::codes::SKILL_NOT_INVOCABLE, message));
    }
    for invalid in scan.invalid() {
        env.findings.push(finding(crate::codes::SKILL_INVALID, format!("{invalid} (skipped)")));
    }
    let _ = write_counts(line, scan.skills().count(), scan.invalid().count());
}

fn write_counts(line: &mut String, skills: usize, invalid: usize) -> std::fmt::Result {
    use std::fmt::Write as _;
    write!(line, "  {skills} skills")?;
    if invalid > 0 {
        write!(line, ", {invalid} invalid")?;
    }
    Ok(())
}

impl Surface for SkillsSurface {
    fn service(&self) -> &'static str {
        "skills"
    }
    fn kinds(&self) -> &'static [&'static dyn MountKind] {
        static KINDS: [&dyn MountKind; 1] = [&FS];
        &KINDS
    }
    fn tools(&self) -> &'static [&'static dyn FixedTool] {
        static TOOLS: [&dyn FixedTool; 1] = [&SKILL_TOOL];
        &TOOLS
    }
    fn status(&self, cx: &StatusCx<'_>) -> Option<Json> {
        let mounts: serde_json::Map<String, Json> = cx
            .mounts
            .iter()
            .filter_map(|p| {
                let mount = seam_engine::runtime::AsAny::as_any(&*p.running).downcast_ref::<host::SkillsMount>()?;
                Some((p.id.clone(), mount.status_json()))
            })
            .collect();
        Some(json!({ "mounts": mounts }))
    }
    fn codes(&self) -> &'static [CodeDoc] {
        codes::CODES
    }
}

/// The codes this surface emits, one constant each (`seam_engine::code_table!`).
pub mod codes {
    seam_engine::code_table! { CODES {
        SKILL_INVALID Warning "(`--environment`) A skill file is not a skill (frontmatter, name, description); it is skipped, the others stay.";
        SKILL_ROOT_UNREADABLE Error "(`--environment`) A skill root exists but cannot be listed; discovery is incomplete and keeps its last good catalog.";
        SKILL_ROOT_WORLD_WRITABLE Warning "(`--environment`) A skill root someone else on the machine can write or replace: world-writable, under a world-writable folder without the sticky bit, or owned (it or a folder above it) by a user other than root and seam's own: a prompt-authority root.";
        SKILL_ROOT_IN_WORKSPACE Warning "(`--environment`) A skill root inside the workspace the served tools can write: a prompt-authority root.";
        SKILL_INVALID_ARGUMENTS Error "(tool result) `skill` was called without a `name` string, or with an argument its schema does not name.";
        SKILL_UNKNOWN Error "(tool result) No skill of that name is in the agent's catalog.";
        SKILL_NOT_INVOCABLE Warning "(`--environment`) A skill has both `disable-model-invocation: true` and `user-invocable: false`: neither the model nor the user can invoke it.";
        SKILL_NOT_MODEL_INVOCABLE Error "(tool result) The skill has `disable-model-invocation: true` (when listed, or when loaded): only the user can invoke it, as a prompt.";
        SKILL_NOT_USER_INVOCABLE Error "(prompts/get) The loaded skill file says `user-invocable: false`.";
        SKILL_LOAD_FAILED Error "(tool result) The skill's file could not be read or no longer parses (also from prompts/get).";
        SKILL_DIGEST_MISMATCH Error "(tool result) An imported skill's SKILL.md, read from its MCP server, is not the size and `sha256:` digest the server listed: it is not used (also from prompts/get).";
    } }
}

#[cfg(test)]
impl FsSkills {
    /// An unwatched mount's config that reads only `root`: the tests' set-up.
    pub(crate) fn only(root: &std::path::Path) -> FsSkills {
        FsSkills {
            kind: "skills.fs".into(),
            include_default_roots: false,
            custom_dirs: vec![root.display().to_string()],
            bundled_dir: None,
            watch: false,
            max_watched_projects: 1,
            read_only_roots: false,
        }
    }
}

//! The Skills surface: a `skill` tool over layered skill folders. This crate
//! holds the `skills.fs` kind's configuration.

use schemars::JsonSchema;
use seam_engine::surface::{Exposure, FixedTool, Kind, MountCx, MountKind, Requirement, ResolvedMount, Surface, Tool};
use serde::{Deserialize, Serialize};

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
    #[serde(default = "max_watched_projects")]
    #[schemars(range(min = 1, max = 4096))]
    pub max_watched_projects: u32,
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

static FS: Kind<FsSkills> = Kind { name: "skills.fs", registry: "skills", resolve: resolve_fs, build: None };
static SKILL_TOOL: Tool<SkillSettings> = Tool::new("skill", &["skills"]);

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
    let mut r = ResolvedMount::new(config, Exposure::Tool("skill"));
    r.needs = vec!["workspace"];
    r.requirements = requirements;
    Some(r)
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
}

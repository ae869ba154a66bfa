//! Skill roots are prompt-authority roots: whoever can write a `SKILL.md` in
//! one writes instructions the model follows. A root is flagged when anyone
//! on the machine can write it (world-writable), or when it lies inside the
//! workspace, which the served tools (an MCP filesystem server, say) can
//! write. The bundled root is the operator's own, declared trusted in the
//! composition, so only its mode is checked.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::discover::Root;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RootTrust {
    pub exists: bool,
    pub owner_uid: Option<u32>,
    pub mode: Option<u32>,
    pub world_writable: bool,
    /// A folder above the root that anyone may write and that lacks the sticky
    /// bit: anyone can rename the root away and put their own in its place.
    /// (`/tmp`, world-writable but sticky, protects what others own in it.)
    pub replaceable_via: Option<PathBuf>,
    pub in_workspace: bool,
    /// The path exists in some form but cannot be looked at (a symlink loop, no permission).
    pub error: Option<String>,
}

/// Looks at one root on this machine.
pub fn of(root: &Root, workspace: Option<&Path>) -> RootTrust {
    let meta = match std::fs::metadata(&root.path) {
        Ok(meta) => meta,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => return RootTrust::default(),
        Err(e) => return RootTrust { error: Some(format!("cannot look at {}: {e}", root.path.display())), ..RootTrust::default() },
    };
    let in_workspace = root.origin != "bundled"
        && workspace
            .and_then(|w| std::fs::canonicalize(w).ok())
            .zip(std::fs::canonicalize(&root.path).ok())
            .is_some_and(|(w, r)| r.starts_with(w));
    RootTrust {
        exists: meta.is_dir(),
        owner_uid: Some(meta.uid()),
        mode: Some(meta.mode()),
        world_writable: meta.mode() & 0o002 != 0,
        replaceable_via: replaceable_via(&root.path),
        in_workspace,
        error: None,
    }
}

/// The nearest folder above `path` (symlinks resolved) that anyone may write
/// without the sticky bit.
fn replaceable_via(path: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path).ok()?;
    real.ancestors()
        .skip(1)
        .find(|a| std::fs::metadata(a).is_ok_and(|m| m.mode() & 0o002 != 0 && m.mode() & 0o1000 == 0))
        .map(Path::to_owned)
}

impl RootTrust {
    /// Anyone on this machine can change what the root holds: it, or a folder above it, is world-writable.
    pub fn anyone_can_write(&self) -> bool {
        self.world_writable || self.replaceable_via.is_some()
    }

    /// Why `read_only_roots: true` refuses the root, if it does.
    pub fn refusal(&self) -> Option<String> {
        self.warning()
    }

    /// The warning `validate --environment` and `/status` give for the root.
    pub fn warning(&self) -> Option<String> {
        match (self.world_writable, self.in_workspace) {
            (true, _) => Some("the skill root is world-writable: anyone on this machine can write instructions the model follows".into()),
            (false, _) if self.replaceable_via.is_some() => Some(format!(
                "{} above the skill root is world-writable without the sticky bit: anyone on this machine can replace the root with their own instructions",
                self.replaceable_via.as_deref().unwrap_or(Path::new("?")).display()
            )),
            (false, true) => Some(
                "the skill root is inside the workspace, which the served tools can write: a tool call can write instructions the model follows"
                    .into(),
            ),
            (false, false) => None,
        }
    }
}

/// What a skill read under `read_only_roots: true` carries so that loading it
/// judges its root again: a root that became world-writable (or was moved
/// into the workspace) after the catalog was built is refused at load, not
/// only at the next observation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guard {
    pub root: Root,
    pub workspace: Option<PathBuf>,
}

impl Guard {
    /// Why the root is refused now, if it is.
    pub fn refusal(&self) -> Option<String> {
        of(&self.root, self.workspace.as_deref()).refusal()
    }
}

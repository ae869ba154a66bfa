//! Skill roots are prompt-authority roots: whoever can write a `SKILL.md` in
//! one writes instructions the model follows. A root is flagged when anyone
//! on the machine can write it (world-writable), or when it lies inside the
//! workspace, which the served tools (an MCP filesystem server, say) can
//! write. Anyone may also replace a root through a folder above it that is
//! world-writable without the sticky bit, and another user who owns the root
//! or a folder above it may write or replace it: both are flagged too, for the
//! path as written and as resolved. The bundled root is the operator's own,
//! declared trusted in the composition, so it is never flagged for lying in
//! the workspace; its mode, owner and ancestors are judged like any other's.

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
    /// The root, or a folder above it, owned by a user other than root and
    /// the one seam runs as: that user can write or replace it.
    pub foreign_owner: Option<(PathBuf, u32)>,
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
        foreign_owner: foreign_owner(&root.path),
        in_workspace,
        error: None,
    }
}

/// The folders that decide who can change what `path` holds: itself and
/// every folder above it, both as written and with symlinks resolved (a link
/// in a folder others can write can be pointed elsewhere).
fn chain(path: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let written = std::path::absolute(path).ok();
    let real = std::fs::canonicalize(path).ok();
    for start in [written, real].into_iter().flatten() {
        for a in start.ancestors() {
            if !out.iter().any(|o| o == a) {
                out.push(a.to_owned());
            }
        }
    }
    out
}

/// The nearest folder above `path` that anyone may write without the sticky bit.
fn replaceable_via(path: &Path) -> Option<PathBuf> {
    // The root's own mode is `world_writable`; only the folders above it count here.
    let itself = [std::path::absolute(path).ok(), std::fs::canonicalize(path).ok()];
    chain(path)
        .into_iter()
        .filter(|a| !itself.iter().flatten().any(|i| i == a))
        .find(|a| std::fs::metadata(a).is_ok_and(|m| m.mode() & 0o002 != 0 && m.mode() & 0o1000 == 0))
}

/// The first of `path` and the folders above it owned by neither root nor the user seam runs as.
fn foreign_owner(path: &Path) -> Option<(PathBuf, u32)> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    chain(path).into_iter().find_map(|a| {
        let uid = std::fs::metadata(&a).ok()?.uid();
        (uid != 0 && uid != me).then_some((a, uid))
    })
}

impl RootTrust {
    /// Someone else on this machine can change what the root holds: it is
    /// world-writable, replaceable through a folder above it, or another user's.
    pub fn others_can_write(&self) -> bool {
        self.world_writable || self.replaceable_via.is_some() || self.foreign_owner.is_some()
    }

    /// Why `read_only_roots: true` refuses the root, if it does.
    pub fn refusal(&self) -> Option<String> {
        self.warning()
    }

    /// The warning `validate --environment` and `/status` give for the root.
    pub fn warning(&self) -> Option<String> {
        match (self.world_writable, self.in_workspace) {
            (true, _) => Some("the skill root is world-writable: anyone on this machine can write instructions the model follows".into()),
            (false, _) if let Some(folder) = &self.replaceable_via => Some(format!(
                "{} above the skill root is world-writable without the sticky bit: anyone on this machine can replace the root with their own instructions",
                folder.display()
            )),
            (false, _) if let Some((path, uid)) = &self.foreign_owner => Some(format!(
                "{} (at or above the skill root) belongs to uid {uid}, another user: they can write or replace the instructions the model follows",
                path.display()
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

    /// Why a skill of this root is refused now: its root, or where its folder
    /// or its `SKILL.md` links to (judged as a root of its own would be).
    pub fn refusal_of(&self, dir: &Path, file: &Path) -> Option<String> {
        self.refusal().or_else(|| self.link_refusal(dir, file))
    }

    /// Why the places the skill's folder or file link to are refused, if they are.
    pub fn link_refusal(&self, dir: &Path, file: &Path) -> Option<String> {
        for (link, is_dir) in [(dir, true), (file, false)] {
            if !std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink()) {
                continue;
            }
            let Ok(target) = std::fs::canonicalize(link) else { continue };
            // A folder is judged itself; a file, by the folder it is in.
            let folder = if is_dir { target } else { target.parent().map(Path::to_owned).unwrap_or(target) };
            let place = Root { path: folder.clone(), rank: self.root.rank, origin: self.root.origin, project: None };
            if let Some(why) = of(&place, self.workspace.as_deref()).refusal() {
                return Some(format!("{} links to {}: {why}", link.display(), folder.display()));
            }
        }
        None
    }
}

//! A pinned mount (`pin`): what it serves is what its lock entry holds
//! (`seam_engine::lock`); a definition that differs, or is new, is held.

use super::*;

/// What a pinned mount serves: what its lock entry holds (`None`: it does not pin).
pub(super) struct Pinning {
    pub(super) locked: Option<Arc<seam_engine::lock::MountLock>>,
    pub(super) serves_new: bool,
}

/// A definition a pinned mount holds back: not listed, never called.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Held {
    /// `tools`, `prompts` or `resource_templates`, and the server's own name.
    pub(super) kind: &'static str,
    pub(super) raw: String,
    /// Why, with a readable diff for a changed one.
    pub(super) why: String,
}

impl Held {
    /// What it is, as a message names it: `tool`, `prompt`, `resource template`.
    pub(super) fn noun(&self) -> &'static str {
        match self.kind {
            "tools" => "tool",
            "prompts" => "prompt",
            _ => "resource template",
        }
    }
}

impl Pinning {
    /// Whether `definition`, the server's `kind` entry `raw`, is served; else why it is held.
    pub(super) fn admits(&self, kind: &'static str, raw: &str, definition: &Json) -> Result<(), Held> {
        let Some(lock) = &self.locked else { return Ok(()) };
        let entries = match kind {
            "tools" => &lock.tools,
            "prompts" => &lock.prompts,
            _ => &lock.resource_templates,
        };
        let why = match entries.get(raw) {
            Some(locked) if locked.digest == seam_engine::lock::digest(definition) => return Ok(()),
            Some(locked) => format!("it differs from the lock:\n{}", seam_engine::lock::diff(&locked.definition, definition)),
            None if self.serves_new => return Ok(()),
            None => "the lock does not have it (`pin: { new: serve }` serves what is new)".to_owned(),
        };
        Err(Held { kind, raw: raw.to_owned(), why })
    }
}

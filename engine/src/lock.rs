//! The lock of what a composition's servers offer (`seam lock`). Beside
//! `NAME.yaml` sits `NAME.lock.json`: per mount, each tool, prompt and resource
//! template its server offered when the lock was written, by the server's own name,
//! with a digest of its canonical form (so key order and whitespace do not count)
//! and the definition itself, so that a change can be shown as a readable diff.
//!
//! A mount that pins (`pin: locked` on an MCP mount) serves only what matches its
//! entry; the check reads the lock (`LockRead`) and hands each such mount its entry
//! through `MountCx::lock_entry`, so that an edit of the lock changes the mount's
//! node and a reload applies it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// The format version of lock files.
pub const LOCK_VERSION: u32 = 1;

/// A composition's lock.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The format version: [`LOCK_VERSION`].
    pub seam_lock: u32,
    /// The file name of the composition it locks, so that a lock copied beside another is refused.
    pub composition: String,
    /// Per mount id, what its server offered.
    pub mounts: BTreeMap<String, MountLock>,
}

/// What one mount's server offered, each by the server's own name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountLock {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, Locked>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prompts: BTreeMap<String, Locked>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_templates: BTreeMap<String, Locked>,
}

/// One definition as locked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// `blake3:` and the hex of the definition's canonical JSON ([`digest`]).
    pub digest: String,
    pub definition: Json,
}

impl Locked {
    pub fn of(definition: Json) -> Locked {
        Locked { digest: digest(&definition), definition }
    }
}

/// The digest of a definition: BLAKE3 of its canonical JSON (keys sorted, no whitespace).
pub fn digest(definition: &Json) -> String {
    format!("blake3:{}", blake3::hash(crate::plan::canonical_json(definition).as_bytes()).to_hex())
}

/// Where the lock of composition `composition` is: `NAME.lock.json` beside `NAME.yaml`.
pub fn path_for(composition: &Path) -> PathBuf {
    let stem = composition.file_stem().map_or_else(|| "composition".into(), |s| s.to_string_lossy().into_owned());
    composition.with_file_name(format!("{stem}.lock.json"))
}

/// The composition's file name as a lock records it.
pub fn composition_name(composition: &Path) -> String {
    composition.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The lock as a check found it.
#[derive(Clone, Debug, Default)]
pub enum LockRead {
    /// Pins are not enforced: `seam lock` reads what the servers offer now.
    #[default]
    Ignored,
    /// No lock beside the composition.
    Absent(PathBuf),
    Read(PathBuf, Arc<Lock>),
    /// It cannot be read, does not parse, or locks another composition; why.
    Broken(PathBuf, String),
}

impl LockRead {
    /// Reads the lock of `composition` (at most `limit` bytes).
    pub fn of(composition: &Path, limit: u64) -> LockRead {
        let path = path_for(composition);
        let bytes = match crate::load::read_bounded(&path, limit) {
            Ok(bytes) => bytes,
            Err(crate::load::Unread::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return LockRead::Absent(path),
            Err(crate::load::Unread::Io(e)) => return LockRead::Broken(path, e.to_string()),
            Err(crate::load::Unread::NotRegular(what)) => return LockRead::Broken(path, format!("it is {what}")),
            Err(crate::load::Unread::TooLarge) => return LockRead::Broken(path, format!("it is larger than {limit} bytes")),
        };
        let lock: Lock = match serde_json::from_slice(&bytes) {
            Ok(lock) => lock,
            Err(e) => return LockRead::Broken(path, format!("it is not a lock: {e}")),
        };
        let name = composition_name(composition);
        if lock.seam_lock != LOCK_VERSION {
            let why = format!("it is lock format {}, and this seam reads {LOCK_VERSION}", lock.seam_lock);
            return LockRead::Broken(path, why);
        }
        if lock.composition != name {
            let why = format!("it locks `{}`, not `{name}`", lock.composition);
            return LockRead::Broken(path, why);
        }
        LockRead::Read(path, Arc::new(lock))
    }

    /// The lock file's path, when there is one to watch.
    pub fn path(&self) -> Option<&Path> {
        match self {
            LockRead::Read(path, _) | LockRead::Broken(path, _) => Some(path),
            LockRead::Ignored | LockRead::Absent(_) => None,
        }
    }
}

/// What a pinning mount's server offers now beside its lock entry: per kind, the names
/// added, removed and changed (a changed one with a readable diff).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Drift {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<Changed>,
}

/// A definition that differs from its lock entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Changed {
    /// `tools`, `prompts` or `resource_templates`.
    pub kind: &'static str,
    pub name: String,
    /// Per field that differs, its locked and current values as lines (`-` and `+`).
    pub diff: String,
}

impl Drift {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// How `now` differs from `locked`, each kind in name order.
pub fn drift(locked: &MountLock, now: &MountLock) -> Drift {
    let mut drift = Drift::default();
    for (kind, was, is) in [
        ("tools", &locked.tools, &now.tools),
        ("prompts", &locked.prompts, &now.prompts),
        ("resource_templates", &locked.resource_templates, &now.resource_templates),
    ] {
        drift.added.extend(is.keys().filter(|k| !was.contains_key(*k)).map(|k| format!("{kind}/{k}")));
        drift.removed.extend(was.keys().filter(|k| !is.contains_key(*k)).map(|k| format!("{kind}/{k}")));
        for (name, entry) in is {
            if let Some(old) = was.get(name).filter(|old| old.digest != entry.digest) {
                drift.changed.push(Changed { kind, name: name.clone(), diff: diff(&old.definition, &entry.definition) });
            }
        }
    }
    drift
}

/// A readable diff of two definitions: per top-level field that differs, its locked
/// value's lines with `-` and its current one's with `+` (strings as text, the rest as
/// indented JSON with sorted keys).
pub fn diff(was: &Json, is: &Json) -> String {
    let mut keys: Vec<&String> = was.as_object().into_iter().chain(is.as_object()).flat_map(|o| o.keys()).collect();
    keys.sort();
    keys.dedup();
    let lines = |v: Option<&Json>| -> Vec<String> {
        match v {
            None => Vec::new(),
            Some(Json::String(s)) => s.lines().map(str::to_owned).collect(),
            Some(other) => {
                let sorted: Json = serde_json::from_str(&crate::plan::canonical_json(other)).expect("canonical JSON parses");
                serde_json::to_string_pretty(&sorted).expect("JSON prints").lines().map(str::to_owned).collect()
            }
        }
    };
    let mut out = String::new();
    for key in keys {
        let (old, new) = (was.get(key), is.get(key));
        if old == new {
            continue;
        }
        out.push_str(&format!("{key}:\n"));
        for line in lines(old) {
            out.push_str(&format!("- {line}\n"));
        }
        for line in lines(new) {
            out.push_str(&format!("+ {line}\n"));
        }
    }
    out
}

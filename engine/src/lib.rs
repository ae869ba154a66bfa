//! seam's engine: load, validate, plan and diff compositions.
//!
//! The pipeline is `load` (YAML with spans, `extends`, `${ENV}`) → `schema`
//! (JSON Schema generated from the types) → `resolve` (semantic checks, typed
//! ids) → `plan` (the dependency graph) → `diff`. The engine knows no surface by
//! name: surfaces come in through [`surface::Surface`].

pub mod as_json;
pub mod audit;
pub mod clock;
pub mod codes;
pub mod deploy;
/// The call stage's hooks (`deploy::chain`), by their short path.
pub use deploy::chain;
pub mod diagnostic;
pub mod diff;
pub mod disclosure;
pub mod env;
pub mod expect;
pub mod inventory;
pub mod load;
pub mod lock;
pub mod model;
pub mod offers;
pub mod outcome;
pub mod output;
pub mod plan;
pub mod quota;
pub mod reads;
pub mod redact;
pub mod render;
pub mod resolve;
pub mod runtime;
pub mod schema;
pub mod status;
pub mod subprocess;
pub mod surface;
pub mod tasks;
pub mod text;
pub mod tokens;
pub mod tool_rules;
pub mod units;
pub mod yaml;

use std::path::Path;

use codes::CodeDoc;
use codes::Severity;
use diagnostic::{Diagnostic, Sources};
use env::Env;
use load::ReadError;
use plan::Plan;
use resolve::Resolved;
use schema::Schemas;
use surface::{Requirement, Surface, locate};

/// The engine for one set of compiled-in surfaces.
pub struct Engine {
    surfaces: Vec<&'static dyn Surface>,
    schemas: Schemas,
    /// The most bytes read for one composition, its bases included.
    max_composition_bytes: u64,
    /// Whether mounts that pin are held to the composition's lock (`lock::LockRead`);
    /// `seam lock` reads the servers with pins not enforced.
    enforce_lock: bool,
}

/// One composition after validation: the files read, every diagnostic (sorted),
/// and the resolved composition when the document could be read at all.
pub struct Checked {
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
    pub resolved: Option<Resolved>,
    tree: Option<yaml::Node>,
}

impl Engine {
    pub fn new(surfaces: Vec<&'static dyn Surface>) -> Engine {
        let schemas = Schemas::build(&surfaces);
        Engine { surfaces, schemas, max_composition_bytes: load::DEFAULT_MAX_COMPOSITION_BYTES, enforce_lock: true }
    }

    /// The same engine reading at most `bytes` for one composition and its bases.
    pub fn with_max_composition_bytes(self, bytes: u64) -> Engine {
        Engine { max_composition_bytes: bytes, ..self }
    }

    /// The same engine with pins not enforced: every mount serves what its server offers,
    /// whatever the lock says (`seam lock`, which writes the lock from it).
    pub fn ignoring_lock(self) -> Engine {
        Engine { enforce_lock: false, ..self }
    }

    /// The published JSON Schema of format v1.
    pub fn schema(&self) -> &serde_json::Value {
        &self.schemas.published
    }

    pub fn surfaces(&self) -> &[&'static dyn Surface] {
        &self.surfaces
    }

    /// Every stable code: the engine's, then each surface's.
    pub fn codes(&self) -> Vec<CodeDoc> {
        let mut all: Vec<CodeDoc> = codes::ENGINE_CODES.to_vec();
        for s in &self.surfaces {
            all.extend_from_slice(s.codes());
        }
        all
    }

    pub fn check_file(&self, path: &Path, env: &dyn Env) -> Result<Checked, ReadError> {
        let loaded = load::load_file(path, env, self.max_composition_bytes)?;
        Ok(self.check_loaded(loaded))
    }

    pub fn check_bytes(&self, path: &Path, bytes: Vec<u8>, env: &dyn Env) -> Checked {
        self.check_loaded(load::load_bytes(path, bytes, env, self.max_composition_bytes))
    }

    fn check_loaded(&self, loaded: load::Loaded) -> Checked {
        let load::Loaded { root, mut sources, mut diagnostics } = loaded;
        let mut resolved = None;
        if let Some(tree) = &root {
            let kinds: Vec<_> = self.surfaces.iter().flat_map(|s| s.kinds().iter().copied()).collect();
            self.schemas.validate(tree, &kinds, &mut diagnostics);
            if tree.as_map().is_some() {
                let lock = self.read_lock(&mut sources);
                resolved = Some(resolve::resolve(tree, &sources, &lock, &self.surfaces, &mut diagnostics));
            }
        }
        suppress_follow_on(&mut diagnostics);
        diagnostic::sort_diagnostics(&mut diagnostics);
        Checked { sources, diagnostics, resolved, tree: root }
    }
}

impl Engine {
    /// The lock of the composition `sources` begins with, when pins are enforced; a lock
    /// there is one of the files the check read (so a reload follows its edits), though no
    /// diagnostic quotes it.
    fn read_lock(&self, sources: &mut Sources) -> lock::LockRead {
        let Some((_, top)) = sources.files().next() else { return lock::LockRead::Ignored };
        if !self.enforce_lock {
            return lock::LockRead::Ignored;
        }
        let read = lock::LockRead::of(&top.path.clone(), self.max_composition_bytes);
        if let Some(path) = read.path() {
            let id = sources.add(path.to_owned(), "".into());
            sources.withhold(id);
        }
        read
    }
}

/// A value whose `${…}` failed to expand keeps its raw text; other findings about
/// that same value would only repeat the failure, so they are dropped.
fn suppress_follow_on(diagnostics: &mut Vec<Diagnostic>) {
    // By the codes' identity, not their spelling: `ENV_EXECUTABLE_NOT_FOUND` is no failed `${…}`.
    let expanding = |d: &Diagnostic| [codes::ENV_UNSET, codes::ENV_REQUIRED, codes::ENV_SYNTAX].contains(&d.code);
    let failed: std::collections::HashSet<String> = diagnostics.iter().filter(|d| expanding(d)).map(|d| d.pointer.clone()).collect();
    if failed.is_empty() {
        return;
    }
    diagnostics.retain(|d| expanding(d) || !failed.contains(&d.pointer));
}

impl Checked {
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    pub fn warnings(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity() == Severity::Warning).count()
    }

    /// Valid: no errors, and no warnings either when they are denied.
    pub fn is_valid(&self, deny_warnings: bool) -> bool {
        self.errors() == 0 && (!deny_warnings || self.warnings() == 0)
    }

    /// The plan, for a composition without errors.
    pub fn plan(&self) -> Option<Plan> {
        if self.errors() > 0 {
            return None;
        }
        self.resolved.as_ref().map(Plan::build)
    }

    /// Checks this machine: executables on PATH, readable secret files, existing directories.
    pub fn check_environment(&mut self) {
        let (Some(resolved), Some(tree)) = (&self.resolved, &self.tree) else { return };
        let mut found = Vec::new();
        // The sandbox runner prefixes every spawn, so it must exist too.
        let runner = resolved.services.get("subprocess").and_then(|s| s.get("runner")).and_then(|r| r.get(0)).and_then(|c| c.as_str());
        let runner =
            runner.map(|name| Requirement::Executable { name: name.to_owned(), pointer: "/services/subprocess/runner/0".to_owned() });
        let mounts = resolved.mounts.values().flat_map(|m| m.resolved.iter().flat_map(|r| &r.requirements));
        {
            for req in runner.iter().chain(mounts) {
                let d = match req {
                    Requirement::Executable { name, pointer } => match which::which(name) {
                        Ok(_) => continue,
                        Err(_) => Diagnostic::new(
                            crate::codes::ENV_EXECUTABLE_NOT_FOUND,
                            locate(tree, pointer),
                            pointer,
                            if name.contains('/') {
                                format!("`{name}` is not an executable file")
                            } else {
                                format!("`{name}` is not an executable on PATH")
                            },
                        ),
                    },
                    Requirement::ReadableFile { path, pointer } => match std::fs::File::open(path) {
                        Ok(_) => continue,
                        Err(e) => Diagnostic::new(
                            crate::codes::ENV_FILE_UNREADABLE,
                            locate(tree, pointer),
                            pointer,
                            format!("cannot read `{}`: {e}", path.display()),
                        ),
                    },
                    Requirement::Directory { path, pointer } => {
                        if path.is_dir() {
                            continue;
                        }
                        Diagnostic::new(
                            crate::codes::ENV_DIR_MISSING,
                            locate(tree, pointer),
                            pointer,
                            format!("`{}` is not a directory", path.display()),
                        )
                    }
                };
                found.push(d);
            }
        }
        // The kinds' own looks (the skills roots: invalid skill files, writable roots).
        let workspace = resolved.workspace_root();
        for (id, mount) in &resolved.mounts {
            let Some(probe) = mount.resolved.as_ref().and_then(|r| r.environment.as_ref()) else { continue };
            for f in probe.run(workspace).findings {
                let pointer = format!("{}{}", diagnostic::pointer(["mounts", id.as_str()]), f.pointer);
                let span = locate(tree, &pointer);
                found.push(Diagnostic::new(f.code, span, pointer, f.message));
            }
        }
        self.diagnostics.extend(found);
        diagnostic::sort_diagnostics(&mut self.diagnostics);
    }
}

//! Skill roots and their scans: which folders a workspace's discovery reads,
//! at which rank, and what one read of a root found. A scan reuses what an
//! earlier scan read for every skill file whose stamp (inode, length, mtime)
//! is unchanged, and a scan of named folders touches only those, so that one
//! edit costs one file read.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use imbl::OrdMap;

use seam_engine::offers::ImportedSkill;

use crate::skill::{self, Summary};
use crate::trust::Guard;

pub const RANK_PROJECT_SEAM: u32 = 100;
pub const RANK_PROJECT_AGENTS: u32 = 200;
/// Reserved for skills registered at run time; seam has no such registration yet.
pub const RANK_RUNTIME: u32 = 250;
pub const RANK_CUSTOM: u32 = 300;
pub const RANK_USER_SEAM: u32 = 400;
pub const RANK_USER_AGENTS: u32 = 500;
pub const RANK_BUNDLED: u32 = 600;
/// The rank an MCP mount's imported skills carry, past every folder's. What keeps them
/// below every folder in any layer is `registry::with_imported`, which adds one only
/// where no folder has the name; the rank says so where candidates are shown.
pub const RANK_IMPORTED: u32 = 700;

/// The most of a skill file discovery reads: the frontmatter must end within it.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The most of a skill file a load reads.
pub const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;

/// One folder of skill folders.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Root {
    pub path: PathBuf,
    pub rank: u32,
    /// `project .seam/skills`, `custom`, `bundled`…
    pub origin: &'static str,
    /// The project the root belongs to, for a project root.
    pub project: Option<PathBuf>,
}

/// The project of a workspace: its nearest ancestor (itself included) holding
/// `.git`; the workspace itself when there is none.
pub fn project_of(workspace: &Path) -> PathBuf {
    let workspace = absolute(workspace);
    workspace.ancestors().find(|dir| dir.join(".git").exists()).unwrap_or(&workspace).to_owned()
}

/// A path made absolute against the current folder, `.` components dropped (no symlinks followed).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// The roots a mount reads for a project, in rank order.
pub fn roots(config: &crate::FsSkills, project: &Path, home: Option<&Path>) -> Vec<Root> {
    let mut out = Vec::new();
    let mut add = |path: PathBuf, rank, origin, project: Option<&Path>| {
        out.push(Root { path, rank, origin, project: project.map(Path::to_owned) });
    };
    if config.include_default_roots {
        add(project.join(".seam/skills"), RANK_PROJECT_SEAM, "project .seam/skills", Some(project));
        add(project.join(".agents/skills"), RANK_PROJECT_AGENTS, "project .agents/skills", Some(project));
    }
    for dir in &config.custom_dirs {
        add(absolute(Path::new(dir)), RANK_CUSTOM, "custom", None);
    }
    if config.include_default_roots
        && let Some(home) = home
    {
        add(home.join(".seam/skills"), RANK_USER_SEAM, "user ~/.seam/skills", None);
        add(home.join(".agents/skills"), RANK_USER_AGENTS, "user ~/.agents/skills", None);
    }
    if let Some(dir) = &config.bundled_dir {
        add(absolute(Path::new(dir)), RANK_BUNDLED, "bundled", None);
    }
    out
}

/// A skill as discovery found it.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub summary: Summary,
    /// Where its files are.
    pub place: Place,
    pub rank: u32,
    /// Its name and catalog text before any cut (`Summary::catalog_text`),
    /// made once and shared by every listing.
    pub name: Arc<str>,
    pub line: Arc<str>,
    /// A hash of its summary; the catalog digest sums its winners' hashes.
    pub hash: u128,
}

/// Where a skill's files are.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// A folder on disk.
    Folder(Folder),
    /// The server of an MCP mount that imports its skills, from the id of the mount.
    Mount { mount: String, skill: Arc<ImportedSkill> },
}

/// A skill's folder on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folder {
    /// The base of its resources.
    pub dir: PathBuf,
    /// Its SKILL.md.
    pub file: PathBuf,
    /// Set when its root was read under `read_only_roots`: loading judges the root again.
    pub guard: Option<Arc<Guard>>,
}

impl Candidate {
    pub fn new(summary: Summary, place: Place, rank: u32) -> Candidate {
        let (name, line, hash) = (summary.name.as_str().into(), summary.catalog_text().into(), summary.hash());
        Candidate { summary, place, rank, name, line, hash }
    }

    /// Its folder on disk; none for an imported skill.
    pub fn folder(&self) -> Option<&Folder> {
        match &self.place {
            Place::Folder(folder) => Some(folder),
            Place::Mount { .. } => None,
        }
    }
}

/// A skill file that is not a skill, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub file: PathBuf,
    pub line: u32,
    pub reason: String,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.reason)
    }
}

/// Why a skill's folder or file could not be read: a root by discovery (the read is
/// incomplete), a skill file at a load, a file or folder entry being served.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// A folder (a root, a skill's folder) exists but cannot be listed, or is not a folder.
    #[error("cannot list {}: {source}", path.display())]
    List {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file or folder entry could not be read, for now (a descriptor limit, an I/O error) or at all.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A skill file past `MAX_SKILL_FILE_BYTES`, at a load.
    #[error("{} is larger than {} MiB", path.display(), MAX_SKILL_FILE_BYTES / (1024 * 1024))]
    TooLarge { path: PathBuf },
    /// A SKILL.md that is not UTF-8.
    #[error("{} is not UTF-8", path.display())]
    NotUtf8 { path: PathBuf },
}

#[derive(Clone, Debug)]
pub enum Found {
    Skill(Arc<Candidate>),
    Invalid(Arc<Invalid>),
}

/// What identifies one version of a file without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    len: u64,
    modified_ns: i128,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp { inode: meta.ino(), len: meta.len(), modified_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128 }
    }
}

#[derive(Clone, Debug)]
struct ScanEntry {
    /// `None` for a file that could not be looked at.
    stamp: Option<Stamp>,
    found: Found,
}

/// The same entry: the same stamp and the very same finding (not an equal one read again).
impl PartialEq for ScanEntry {
    fn eq(&self, other: &ScanEntry) -> bool {
        self.stamp == other.stamp
            && match (&self.found, &other.found) {
                (Found::Skill(a), Found::Skill(b)) => Arc::ptr_eq(a, b),
                (Found::Invalid(a), Found::Invalid(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}

/// One complete read of a root.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    pub exists: bool,
    /// By folder name.
    entries: OrdMap<String, ScanEntry>,
    /// Files this scan read (not reused from the previous scan).
    pub files_read: usize,
}

impl Scan {
    pub fn found(&self) -> impl Iterator<Item = &Found> {
        self.entries.values().map(|e| &e.found)
    }
    pub fn skills(&self) -> impl Iterator<Item = &Arc<Candidate>> {
        self.found().filter_map(|f| match f {
            Found::Skill(c) => Some(c),
            Found::Invalid(_) => None,
        })
    }
    pub fn invalid(&self) -> impl Iterator<Item = &Arc<Invalid>> {
        self.found().filter_map(|f| match f {
            Found::Invalid(i) => Some(i),
            Found::Skill(_) => None,
        })
    }
    /// The skill folders this scan saw.
    pub fn folders(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The skill in folder `name` (a skill's name is its folder's).
    pub fn skill(&self, name: &str) -> Option<&Arc<Candidate>> {
        match self.entries.get(name).map(|e| &e.found) {
            Some(Found::Skill(c)) => Some(c),
            _ => None,
        }
    }

    /// The names whose skill differs between an earlier scan of the same root
    /// and this one: added, removed, or read again. A scan shares every entry
    /// it did not read again with the scan before it, so this walks only what
    /// was read again (plus a path down the map for each).
    pub fn changed_skills(&self, earlier: &Scan) -> Vec<String> {
        use imbl::ordmap::DiffItem;
        let skill = |e: &ScanEntry| match &e.found {
            Found::Skill(c) => Some(c.clone()),
            Found::Invalid(_) => None,
        };
        earlier
            .entries
            .diff(&self.entries)
            .filter_map(|d| match d {
                DiffItem::Add(name, e) | DiffItem::Remove(name, e) => skill(e).map(|_| name.clone()),
                DiffItem::Update { old: (name, a), new: (_, b) } => match (skill(a), skill(b)) {
                    (None, None) => None,
                    (Some(x), Some(y)) if Arc::ptr_eq(&x, &y) => None,
                    _ => Some(name.clone()),
                },
            })
            .collect()
    }

    /// The invalid skill files this scan found that `earlier` (a previous
    /// scan of the same root) did not: each is reported once, when it is read.
    pub fn new_invalid(&self, earlier: Option<&Scan>) -> Vec<Arc<Invalid>> {
        use imbl::ordmap::DiffItem;
        let Some(earlier) = earlier else { return self.invalid().cloned().collect() };
        earlier
            .entries
            .diff(&self.entries)
            .filter_map(|d| match d {
                DiffItem::Add(_, e) | DiffItem::Update { new: (_, e), .. } => match &e.found {
                    Found::Invalid(i) => Some(i.clone()),
                    Found::Skill(_) => None,
                },
                DiffItem::Remove(..) => None,
            })
            .collect()
    }
}

/// What must be read again in a root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Dirty {
    #[default]
    Clean,
    /// These skill folders (an event inside them).
    Folders(BTreeSet<String>),
    /// The whole listing (an event on the root itself, or no scan yet).
    All,
}

impl Dirty {
    pub fn add(&mut self, folder: Option<String>) {
        match (folder, &mut *self) {
            (_, Dirty::All) => {}
            (None, _) => *self = Dirty::All,
            (Some(f), Dirty::Folders(set)) => {
                set.insert(f);
            }
            (Some(f), Dirty::Clean) => *self = Dirty::Folders(BTreeSet::from([f])),
        }
    }
}

/// Reads a root: everything when `dirty` is `All` or there is no previous scan,
/// else only the named folders. An `Err` is an incomplete read (the root
/// exists but cannot be listed, or is not a folder); a missing root is a
/// complete, empty one.
pub fn scan(root: &Root, previous: Option<&Scan>, dirty: &Dirty, guard: Option<&Arc<Guard>>) -> Result<Scan, DiscoverError> {
    match (previous, dirty) {
        (Some(previous), Dirty::Clean) => Ok(Scan { files_read: 0, ..previous.clone() }),
        (Some(previous), Dirty::Folders(folders)) if previous.exists => {
            let mut next = Scan { files_read: 0, ..previous.clone() };
            // Hidden folders are not skill folders, as in a whole listing.
            for folder in folders.iter().filter(|f| !f.starts_with('.')) {
                let old = previous.entries.get(folder);
                match read_folder(root, folder, old, guard)? {
                    Some((entry, read)) => {
                        next.files_read += usize::from(read);
                        next.entries.insert(folder.clone(), entry);
                    }
                    None => {
                        next.entries.remove(folder);
                    }
                }
            }
            Ok(next)
        }
        _ => scan_all(root, previous, guard),
    }
}

fn scan_all(root: &Root, previous: Option<&Scan>, guard: Option<&Arc<Guard>>) -> Result<Scan, DiscoverError> {
    let listing = match std::fs::read_dir(&root.path) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Scan::default()),
        // A folder above the root is a file: the root cannot exist, as if missing. The root itself a
        // file (a folder replaced, say) is not a root that was emptied: the read is incomplete.
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory && !root.path.exists() => return Ok(Scan::default()),
        Err(source) => return Err(DiscoverError::List { path: root.path.clone(), source }),
    };
    let mut next = Scan { exists: true, ..Scan::default() };
    for item in listing {
        let item = item.map_err(|source| DiscoverError::List { path: root.path.clone(), source })?;
        let Ok(folder) = item.file_name().into_string() else { continue };
        if folder.starts_with('.') {
            continue;
        }
        let old = previous.and_then(|p| p.entries.get(&folder));
        if let Some((entry, read)) = read_folder(root, &folder, old, guard)? {
            next.files_read += usize::from(read);
            next.entries.insert(folder, entry);
        }
    }
    Ok(next)
}

/// One skill folder: `None` when it holds no `SKILL.md` (not a skill); the
/// flag says whether the file was read (not reused).
fn read_folder(
    root: &Root,
    folder: &str,
    old: Option<&ScanEntry>,
    guard: Option<&Arc<Guard>>,
) -> Result<Option<(ScanEntry, bool)>, DiscoverError> {
    let dir = root.path.join(folder);
    let file = dir.join("SKILL.md");
    let meta = match std::fs::metadata(&file) {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => return Ok(None),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => return Ok(None),
        Err(e) if lasting(&e) => {
            let invalid = Invalid { file, line: 1, reason: format!("cannot read: {e}") };
            return Ok(Some((ScanEntry { stamp: None, found: Found::Invalid(Arc::new(invalid)) }, true)));
        }
        Err(source) => return Err(DiscoverError::Read { path: file, source }),
    };
    // Under `read_only_roots`, a folder or file linking out of the root is judged where it leads
    // (never reused: the place a link leads to can change without the file changing).
    if let Some(why) = guard.and_then(|g| g.link_refusal(&dir, &file)) {
        let invalid = Invalid { file, line: 1, reason: format!("refused by `read_only_roots`: {why}") };
        return Ok(Some((ScanEntry { stamp: None, found: Found::Invalid(Arc::new(invalid)) }, true)));
    }
    let stamp = Stamp::of(&meta);
    if let Some(old) = old.filter(|o| o.stamp == Some(stamp)) {
        return Ok(Some((old.clone(), false)));
    }
    let found = match read_head(&file) {
        Err(Unread::Now(source)) => return Err(DiscoverError::Read { path: file, source }),
        Err(Unread::Lasting(e)) => Found::Invalid(Arc::new(Invalid { file, line: 1, reason: e })),
        Ok(head) => match skill::parse(&head, folder) {
            Ok(parsed) => {
                let folder = Folder { dir, file, guard: guard.cloned() };
                Found::Skill(Arc::new(Candidate::new(parsed.summary, Place::Folder(folder), root.rank)))
            }
            Err(r) => Found::Invalid(Arc::new(Invalid { file, line: r.line, reason: r.reason })),
        },
    };
    Ok(Some((ScanEntry { stamp: Some(stamp), found }, true)))
}

/// Whether an I/O error is about the file, and lasts (it is reported as the
/// reason the file is not a skill), or about this moment (a descriptor limit,
/// an I/O error: the read is incomplete and is tried again).
fn lasting(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::InvalidData | std::io::ErrorKind::IsADirectory)
}

/// Why a skill file could not be read.
enum Unread {
    Lasting(String),
    Now(std::io::Error),
}

fn unread(e: std::io::Error) -> Unread {
    match e.kind() {
        std::io::ErrorKind::InvalidData => Unread::Lasting("the file is not UTF-8".into()),
        _ if lasting(&e) => Unread::Lasting(format!("cannot read: {e}")),
        _ => Unread::Now(e),
    }
}

/// A skill file up to the end of its frontmatter: routing needs no body.
fn read_head(file: &Path) -> Result<String, Unread> {
    let handle = std::fs::File::open(file).map_err(unread)?;
    let mut reader = BufReader::new(handle.take(MAX_FRONTMATTER_BYTES as u64 + 1));
    let mut head = String::new();
    let mut lines = 0;
    loop {
        let before = head.len();
        match reader.read_line(&mut head) {
            Ok(0) => return Ok(head),
            Ok(_) => {}
            Err(e) => return Err(unread(e)),
        }
        lines += 1;
        let line = head[before..].trim_end();
        if lines > 1 && line == "---" {
            return Ok(head);
        }
        if lines == 1 && line.trim_start_matches('\u{feff}') != "---" {
            return Ok(head);
        }
        if head.len() > MAX_FRONTMATTER_BYTES {
            return Err(Unread::Lasting(format!("the frontmatter does not end within {} KiB", MAX_FRONTMATTER_BYTES / 1024)));
        }
    }
}

/// A whole skill file, for a load.
pub fn read_skill_file(file: &Path) -> Result<String, DiscoverError> {
    let unread = |source| DiscoverError::Read { path: file.to_owned(), source };
    let handle = std::fs::File::open(file).map_err(unread)?;
    let mut bytes = Vec::new();
    handle.take(MAX_SKILL_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(unread)?;
    if bytes.len() as u64 > MAX_SKILL_FILE_BYTES {
        return Err(DiscoverError::TooLarge { path: file.to_owned() });
    }
    String::from_utf8(bytes).map_err(|_| DiscoverError::NotUtf8 { path: file.to_owned() })
}

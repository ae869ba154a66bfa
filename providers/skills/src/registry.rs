//! The layered registry: the skills one agent sees in one workspace. Layers
//! are the composition's global mounts, then each ancestor agent's scoped
//! mounts, then the agent's own (`Provider::layer`). A nearer layer replaces
//! a same-name skill outright; only inside one layer do rank, then
//! registration order (the mount's place in the composition, then the root's
//! place in the mount) pick the winner.
//!
//! A catalog is cached by (workspace, scope chain) with the revisions of the
//! mounts it was read at; an incomplete observation is never cached and never
//! replaces the last good catalog, which stays what is published.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, Weak};

use imbl::OrdMap;
use seam_engine::runtime::AsAny;
use seam_engine::surface::Provider;

use seam_engine::offers::ImportedSkill;

use crate::discover::{Candidate, Place};
use crate::host::{Observation, SkillsMount};

/// The winners for one agent in one workspace.
#[derive(Debug, Default)]
pub struct Catalog {
    /// By name.
    pub skills: OrdMap<String, Arc<Candidate>>,
    /// The wrapping sum of the winners' summary hashes, as hex: it follows
    /// names, descriptions and permissions, not bodies, and moves by one
    /// addition per changed skill.
    pub digest: String,
    pub(crate) sum: u128,
    /// Set when the last observation was incomplete and this is the last good catalog.
    pub stale: Option<String>,
    /// Set when no observation has been complete yet: there is no catalog to publish.
    pub unavailable: Option<String>,
    /// What the `skill` tool rendered of it, kept for every later listing.
    pub(crate) rendered: OnceLock<Arc<crate::tool::Rendered>>,
}

impl Clone for Catalog {
    fn clone(&self) -> Self {
        Catalog {
            skills: self.skills.clone(),
            digest: self.digest.clone(),
            sum: self.sum,
            stale: self.stale.clone(),
            unavailable: self.unavailable.clone(),
            rendered: OnceLock::new(),
        }
    }
}

impl Catalog {
    fn from_skills(skills: OrdMap<String, Arc<Candidate>>) -> Catalog {
        let sum = skills.values().fold(0u128, |s, c| s.wrapping_add(c.hash));
        Catalog { skills, digest: hex(sum), sum, ..Catalog::default() }
    }

    /// A copy that shares this one's rendering: for a catalog whose text is
    /// the same (the same digest).
    fn same_text(&self) -> Catalog {
        let copy = self.clone();
        if let Some(r) = self.rendered.get() {
            let _ = copy.rendered.set(r.clone());
        }
        copy
    }

    /// This catalog with the winners of `names` decided again over `observed`.
    fn updated(&self, names: &[String], observed: &[(u32, &Observation)]) -> Catalog {
        let mut next = Catalog { skills: self.skills.clone(), sum: self.sum, ..Catalog::default() };
        for name in names {
            if let Some(old) = next.skills.remove(name) {
                next.sum = next.sum.wrapping_sub(old.hash);
            }
            if let Some(new) = winner(name, observed) {
                next.sum = next.sum.wrapping_add(new.hash);
                next.skills.insert(name.clone(), new);
            }
        }
        next.digest = hex(next.sum);
        // A body edit changes no summary: the text listed stays, rendered once.
        if next.sum == self.sum
            && let Some(r) = self.rendered.get()
        {
            let _ = next.rendered.set(r.clone());
        }
        next
    }
}

fn hex(sum: u128) -> String {
    format!("{sum:032x}")[..16].to_owned()
}

/// One mount of the chain with its layer and registration order.
pub struct Layered {
    pub mount: Arc<SkillsMount>,
    pub layer: u32,
}

/// The agent's skills mounts, in composition order, with their layers.
pub fn layered(providers: &[Provider]) -> Vec<Layered> {
    providers
        .iter()
        .filter_map(|p| {
            let mount = AsAny::into_any_arc(p.running.clone()).downcast::<SkillsMount>().ok()?;
            Some(Layered { mount, layer: p.layer })
        })
        .collect()
}

/// The skill named `name` that wins over `observed` (each observation with
/// its layer, in registration order): the nearest layer that has one; inside
/// it, the lowest rank, then the first registered.
pub fn winner(name: &str, observed: &[(u32, &Observation)]) -> Option<Arc<Candidate>> {
    /// Smaller wins: nearer layer, then lower rank, then earlier registration.
    type Precedence = (Reverse<u32>, u32, usize);
    let mut best: Option<(Precedence, &Arc<Candidate>)> = None;
    let mut order = 0;
    for (layer, o) in observed {
        for (_, scan) in &o.roots {
            if let Some(c) = scan.skill(name) {
                let key = (Reverse(*layer), c.rank, order);
                if best.as_ref().is_none_or(|(k, _)| key < *k) {
                    best = Some((key, c));
                }
            }
            order += 1;
        }
    }
    best.map(|(_, c)| c.clone())
}

/// Merges observations, each with its layer, in registration order.
pub fn merge(observed: &[(u32, &Observation)]) -> Catalog {
    let names: BTreeSet<&str> =
        observed.iter().flat_map(|(_, o)| o.roots.iter().flat_map(|(_, scan)| scan.skills().map(|c| c.summary.name.as_str()))).collect();
    Catalog::from_skills(names.into_iter().filter_map(|n| Some((n.to_owned(), winner(n, observed)?))).collect())
}

/// The names whose winner may differ between two observations of the same
/// chain: those of every root scan that is not the same scan. `None` when the
/// two did not read the same roots (another project, a root refused since).
fn changed_names(before: &[(u32, Observation)], after: &[(u32, Observation)]) -> Option<Vec<String>> {
    if before.len() != after.len() {
        return None;
    }
    let mut names = BTreeSet::new();
    for ((lb, b), (la, a)) in before.iter().zip(after) {
        if lb != la || b.roots.len() != a.roots.len() {
            return None;
        }
        for ((rb, sb), (ra, sa)) in b.roots.iter().zip(&a.roots) {
            if rb != ra {
                return None;
            }
            if !Arc::ptr_eq(sb, sa) {
                names.extend(sa.changed_skills(sb));
            }
        }
    }
    Some(names.into_iter().collect())
}

type Key = (PathBuf, Vec<(u64, u32)>);

struct Cached {
    /// The mounts' revisions the catalog is current at; `None` once an
    /// observation after it was incomplete (it stays, as the last good one).
    revisions: Option<Vec<u64>>,
    catalog: Arc<Catalog>,
    /// What the catalog was merged from, to merge only what changed next time.
    observed: Arc<Vec<(u32, Observation)>>,
    /// The chain's mounts: an entry whose mounts are all gone is dropped first.
    mounts: Vec<Weak<SkillsMount>>,
    /// When it was last used (a tick of `Cache::clock`).
    used: u64,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<Key, Cached>,
    clock: u64,
}

impl Cache {
    /// Makes room for one more entry: entries of mounts that are gone first, then the least recently used.
    fn make_room(&mut self) {
        self.entries.retain(|_, c| c.mounts.iter().any(|m| m.strong_count() > 0));
        while self.entries.len() >= CACHE_ENTRIES {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, c)| c.used).map(|(k, _)| k.clone()) else { return };
            self.entries.remove(&oldest);
        }
    }
}

/// Most (workspace, chain) catalogs kept.
const CACHE_ENTRIES: usize = 256;

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);

/// The skills MCP mounts import, with each mount's layer and id, in composition order.
type ImportedBy = Vec<(u32, String, Arc<Vec<ImportedSkill>>)>;

/// A catalog with imported skills added, and what it was made of.
struct Overlay {
    base: Arc<Catalog>,
    imported: ImportedBy,
    catalog: Arc<Catalog>,
}

/// Most overlays kept: one per (workspace, chain) a deployment serves, commonly.
const OVERLAYS: usize = 64;

static OVERLAID: LazyLock<Mutex<std::collections::VecDeque<Overlay>>> = LazyLock::new(Mutex::default);

/// `base` with the skills the agent's MCP mounts import from their servers added
/// (`Offers::skills`), ranked `RANK_IMPORTED`, as a layer below every folder: a name
/// a folder has, in any layer, stays the folder's, since a server's SKILL.md must not
/// replace one the operator put on disk. Between imported skills of one name, the
/// mount of the nearer layer wins, then the one first in the composition. A skill
/// whose listed frontmatter breaks the rules a file must keep is left out.
pub fn with_imported(base: Arc<Catalog>, providers: &[Provider]) -> Arc<Catalog> {
    let imported: ImportedBy = providers
        .iter()
        .filter_map(|p| {
            let skills = p.running.offers().skills.clone();
            (!skills.is_empty()).then(|| (p.layer, p.id.clone(), skills))
        })
        .collect();
    if imported.is_empty() {
        return base;
    }
    let same = |o: &Overlay| {
        Arc::ptr_eq(&o.base, &base)
            && o.imported.len() == imported.len()
            && o.imported.iter().zip(&imported).all(|(a, b)| a.0 == b.0 && a.1 == b.1 && Arc::ptr_eq(&a.2, &b.2))
    };
    if let Some(o) = OVERLAID.lock().expect("overlay lock").iter().find(|o| same(o)) {
        return o.catalog.clone();
    }
    let mut skills = base.skills.clone();
    let mut sum = base.sum;
    let mut nearest_first: Vec<&(u32, String, Arc<Vec<ImportedSkill>>)> = imported.iter().collect();
    nearest_first.sort_by_key(|(layer, _, _)| Reverse(*layer));
    for (_, mount, listed) in nearest_first {
        for skill in listed.iter() {
            if skills.contains_key(&skill.name) {
                continue;
            }
            match crate::skill::summary_of_listed(&skill.name, &skill.frontmatter) {
                Ok(summary) => {
                    let place = Place::Mount { mount: mount.clone(), skill: Arc::new(skill.clone()) };
                    let candidate = Arc::new(Candidate::new(summary, place, crate::discover::RANK_IMPORTED));
                    sum = sum.wrapping_add(candidate.hash);
                    skills.insert(skill.name.clone(), candidate);
                }
                Err(why) => tracing::debug!(%mount, skill = %skill.uri, "an imported skill is left out: {why}"),
            }
        }
    }
    let catalog = Arc::new(Catalog {
        skills,
        digest: hex(sum),
        sum,
        stale: base.stale.clone(),
        unavailable: base.unavailable.clone(),
        rendered: OnceLock::new(),
    });
    let mut overlaid = OVERLAID.lock().expect("overlay lock");
    if overlaid.len() >= OVERLAYS {
        overlaid.pop_front();
    }
    overlaid.push_back(Overlay { base, imported, catalog: catalog.clone() });
    catalog
}

/// The workspace of a session: its first root inside the configured
/// workspace, else the configured workspace (a client cannot point discovery
/// outside it); the process's folder when neither is known.
pub fn workspace_of(configured: Option<&Path>, roots: &[PathBuf]) -> PathBuf {
    let configured = configured.and_then(|c| std::fs::canonicalize(c).ok().or_else(|| Some(c.to_owned())));
    let inside = roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()).find(|r| configured.as_ref().is_none_or(|c| r.starts_with(c)));
    inside.or(configured).unwrap_or_else(|| std::env::current_dir().unwrap_or_default())
}

/// The agent's catalog in `workspace`: cached while no mount's revision moved
/// (and every root is watched), else observed again (blocking reads on the
/// blocking pool).
pub async fn catalog(workspace: PathBuf, chain: Vec<Layered>) -> Arc<Catalog> {
    let key: Key = (workspace.clone(), chain.iter().map(|l| (l.mount.serial, l.layer)).collect());
    let revisions: Vec<u64> = chain.iter().map(|l| l.mount.revision()).collect();
    let polling = chain.iter().any(|l| l.mount.polling());
    let mounts: Vec<Weak<SkillsMount>> = chain.iter().map(|l| Arc::downgrade(&l.mount)).collect();
    let last = {
        let mut cache = CACHE.lock().expect("catalog cache lock");
        cache.clock += 1;
        let now = cache.clock;
        match cache.entries.get_mut(&key) {
            Some(c) => {
                c.used = now;
                if !polling && c.revisions.as_ref() == Some(&revisions) {
                    return c.catalog.clone();
                }
                Some((c.catalog.clone(), c.observed.clone()))
            }
            None => None,
        }
    };
    let observe = tokio::task::spawn_blocking(move || {
        let observations: Vec<(u32, Observation)> = chain.iter().map(|l| (l.layer, l.mount.observe(&workspace))).collect();
        observations
    });
    let observations = match observe.await {
        Ok(o) => o,
        Err(e) => return Arc::new(Catalog { unavailable: Some(format!("discovery failed: {e}")), ..Catalog::default() }),
    };
    if let Some(reason) = observations.iter().find_map(|(_, o)| o.incomplete.clone()) {
        tracing::warn!(workspace = %key.0.display(), "skill discovery incomplete, the last good catalog stays: {reason}");
        let mut cache = CACHE.lock().expect("catalog cache lock");
        if let Some(c) = cache.entries.get_mut(&key) {
            // Kept as the last good catalog, no longer as a current one.
            c.revisions = None;
        }
        return Arc::new(match last {
            Some((last, _)) => Catalog { stale: Some(reason), ..last.same_text() },
            None => Catalog { unavailable: Some(reason), ..Catalog::default() },
        });
    }
    let refs: Vec<(u32, &Observation)> = observations.iter().map(|(l, o)| (*l, o)).collect();
    // After an edit, only the names of the scans read again are decided again.
    let catalog = match last.as_ref().and_then(|(catalog, before)| Some((catalog, changed_names(before, &observations)?))) {
        Some((last, names)) if names.is_empty() => last.clone(),
        Some((last, names)) => Arc::new(last.updated(&names, &refs)),
        None => Arc::new(merge(&refs)),
    };
    let revisions = Some(observations.iter().map(|(_, o)| o.revision).collect());
    let mut cache = CACHE.lock().expect("catalog cache lock");
    if !cache.entries.contains_key(&key) {
        cache.make_room();
    }
    let used = cache.clock;
    cache.entries.insert(key, Cached { revisions, catalog: catalog.clone(), observed: Arc::new(observations), mounts, used });
    catalog
}

//! The layered registry: the skills one agent sees in one workspace. Layers
//! are the composition's global mounts, then each ancestor agent's scoped
//! mounts, then the agent's own (`Provider::layer`). A nearer layer replaces
//! a same-name skill outright; only inside one layer do rank, then
//! registration order (the mount's place in the composition, then the root's
//! place in the mount) pick the winner.
//!
//! A catalog is cached by (workspace, scope chain) with the revisions of the
//! mounts it was read at; an incomplete observation is never cached and never
//! replaces the last good catalog, which stays what is published. The cache
//! lives on the chain's first mount (`Chains`), not in the process.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

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

/// What a skills mount keeps for the chains it is the first of (`SkillsMount::chains`):
/// their catalogs, by workspace and chain, and those catalogs with imported skills
/// added, bounded per mount by `CACHE_ENTRIES` and `OVERLAYS`. Not in the process:
/// kept on a mount the chain was read from, a chain's state goes when that mount goes
/// (a reload that rebuilds it starts afresh), and two deployments, which build their
/// own mounts, share none of it. The first mount, because every session of the chain
/// finds it at once (`registry::layered`), and the chain's other mounts are in the key.
#[derive(Default)]
pub struct Chains {
    catalogs: Mutex<Cache>,
    overlays: Mutex<VecDeque<Overlay>>,
}

impl Chains {
    /// How many catalogs are cached.
    #[cfg(test)]
    fn cached(&self) -> usize {
        self.catalogs.lock().expect("catalog cache lock").entries.len()
    }

    /// Whether the catalog of `chain` in `workspace` is cached.
    #[cfg(test)]
    fn caches(&self, workspace: &Path, chain: &[Layered]) -> bool {
        self.catalogs.lock().expect("catalog cache lock").entries.contains_key(&key_of(workspace, chain))
    }
}

/// A mount in a cache key, named by its allocation. The key holds a `Weak` to it,
/// which keeps the allocation (not the mount) while the key is kept: no other mount
/// can be made at that address meanwhile, so a key never names a mount made after it
/// (a mount a reload rebuilds is another key), and needs no serial number.
#[derive(Clone)]
struct MountId(Weak<SkillsMount>);

impl PartialEq for MountId {
    fn eq(&self, other: &Self) -> bool {
        Weak::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MountId {}

impl Hash for MountId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_ptr().hash(state);
    }
}

/// A workspace and the chain's mounts, each with its layer.
type Key = (PathBuf, Vec<(MountId, u32)>);

fn key_of(workspace: &Path, chain: &[Layered]) -> Key {
    (workspace.to_owned(), chain.iter().map(|l| (MountId(Arc::downgrade(&l.mount)), l.layer)).collect())
}

struct Cached {
    /// The mounts' revisions the catalog is current at; `None` once an
    /// observation after it was incomplete (it stays, as the last good one).
    revisions: Option<Vec<u64>>,
    catalog: Arc<Catalog>,
    /// What the catalog was merged from, to merge only what changed next time.
    observed: Arc<Vec<(u32, Observation)>>,
    /// When it was last used (a tick of `Cache::clock`).
    used: u64,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<Key, Cached>,
    clock: u64,
}

impl Cache {
    /// Makes room for one more entry: entries naming a mount that is gone first (no
    /// chain can name it again), then the least recently used.
    fn make_room(&mut self) {
        self.entries.retain(|(_, chain), _| chain.iter().all(|(m, _)| m.0.strong_count() > 0));
        while self.entries.len() >= CACHE_ENTRIES {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, c)| c.used).map(|(k, _)| k.clone()) else { return };
            self.entries.remove(&oldest);
        }
    }
}

/// Most (workspace, chain) catalogs one mount keeps for the chains it is the first of.
const CACHE_ENTRIES: usize = 256;

/// The skills MCP mounts import, with each mount's layer and id, in composition order.
type ImportedBy = Vec<(u32, String, Arc<Vec<ImportedSkill>>)>;

/// A catalog with imported skills added, and what it was made of.
struct Overlay {
    base: Arc<Catalog>,
    imported: ImportedBy,
    catalog: Arc<Catalog>,
}

/// Most overlays one mount keeps, the oldest made dropped first: one per (workspace,
/// chain) it is the first of, commonly.
const OVERLAYS: usize = 64;

/// `base` with the skills the agent's MCP mounts import from their servers added
/// (`Offers::skills`), ranked `RANK_IMPORTED`, as a layer below every folder: a name
/// a folder has, in any layer, stays the folder's, since a server's SKILL.md must not
/// replace one the operator put on disk. Between imported skills of one name, the
/// mount of the nearer layer wins, then the one first in the composition. A skill
/// whose listed frontmatter breaks the rules a file must keep is left out. Kept on
/// `owner`, the first mount of the chain `base` is the catalog of; without one (an
/// agent whose every skill is imported) made again at each call.
pub fn with_imported(base: Arc<Catalog>, owner: Option<&SkillsMount>, providers: &[Provider]) -> Arc<Catalog> {
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
    if let Some(o) = owner.and_then(|m| m.chains.overlays.lock().expect("overlay lock").iter().find(|o| same(o)).map(|o| o.catalog.clone()))
    {
        return o;
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
    if let Some(owner) = owner {
        let mut overlays = owner.chains.overlays.lock().expect("overlay lock");
        if overlays.len() >= OVERLAYS {
            overlays.pop_front();
        }
        overlays.push_back(Overlay { base, imported, catalog: catalog.clone() });
    }
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

/// The agent's catalog in `workspace`: cached on the chain's first mount while
/// no mount's revision moved (and every root is watched), else observed again
/// (blocking reads on the blocking pool). An empty chain reads nothing: its
/// catalog is empty.
pub async fn catalog(workspace: PathBuf, chain: Vec<Layered>) -> Arc<Catalog> {
    let Some(owner) = chain.first().map(|l| l.mount.clone()) else { return Arc::new(merge(&[])) };
    let key = key_of(&workspace, &chain);
    let revisions: Vec<u64> = chain.iter().map(|l| l.mount.revision()).collect();
    let polling = chain.iter().any(|l| l.mount.polling());
    let last = {
        let mut cache = owner.chains.catalogs.lock().expect("catalog cache lock");
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
        let mut cache = owner.chains.catalogs.lock().expect("catalog cache lock");
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
    let mut cache = owner.chains.catalogs.lock().expect("catalog cache lock");
    if !cache.entries.contains_key(&key) {
        cache.make_room();
    }
    let used = cache.clock;
    cache.entries.insert(key, Cached { revisions, catalog: catalog.clone(), observed: Arc::new(observations), used });
    catalog
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use seam_engine::offers::Offers;
    use seam_engine::runtime::{BoxFuture, Changes, Running, State, Status};
    use serde_json::{Value as Json, json};

    use super::*;
    use crate::FsSkills;

    /// A scratch folder that is a project of its own (`.git`): the workspaces made in
    /// it are all that one project, so observing them drops no project.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("seam-registry-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        dir
    }

    /// An unwatched mount reading only `<dir>/<root>`, where skill `skill` is written.
    fn mount(dir: &Path, root: &str, skill: &str) -> Arc<SkillsMount> {
        let root = dir.join(root);
        std::fs::create_dir_all(root.join(skill)).unwrap();
        std::fs::write(root.join(skill).join("SKILL.md"), format!("---\nname: {skill}\ndescription: d\n---\n")).unwrap();
        let config = FsSkills::only(&root);
        Arc::new(SkillsMount::new(skill.into(), config, Some(dir.to_owned()), Changes::default()))
    }

    fn chain(mounts: &[&Arc<SkillsMount>]) -> Vec<Layered> {
        mounts.iter().map(|m| Layered { mount: (*m).clone(), layer: 0 }).collect()
    }

    /// An MCP mount whose server lists one skill, `i<n>`.
    struct Importer(Arc<Offers>);

    impl Running for Importer {
        fn status(&self) -> Status {
            Status::new(State::Ready, None)
        }
        fn offers(&self) -> Arc<Offers> {
            self.0.clone()
        }
        fn dispose(&self, _within: Duration) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    fn importer(n: usize) -> Vec<Provider> {
        let name = format!("i{n}");
        let frontmatter = json!({ "name": name, "description": "d" }).as_object().unwrap().clone();
        let skill =
            ImportedSkill { uri: format!("skill://{name}/SKILL.md"), name, digest: String::new(), size: 0, frontmatter, files: Vec::new() };
        let offers = Offers { skills: Arc::new(vec![skill]), ..Offers::default() };
        vec![Provider {
            id: format!("mcp{n}"),
            registry: "mcp",
            config: Arc::new(Json::Null),
            running: Arc::new(Importer(Arc::new(offers))),
            layer: 0,
        }]
    }

    /// Two mounts keep apart what they keep for their chains: a chain's catalog, its
    /// overlays and its files' digests are its first mount's, never answered from
    /// another's, and they go when that mount goes.
    #[tokio::test]
    async fn two_mounts_share_nothing_they_keep() {
        let dir = scratch("apart");
        let (a, b) = (mount(&dir, "root", "x"), mount(&dir, "root", "x"));
        let of_a = catalog(dir.clone(), chain(&[&a])).await;
        assert!(of_a.skills.contains_key("x"));
        assert_eq!((a.chains.cached(), b.chains.cached()), (1, 0), "kept on the chain's first mount only");
        let of_b = catalog(dir.clone(), chain(&[&b])).await;
        assert!(!Arc::ptr_eq(&of_a, &of_b) && b.files_read() > 0, "b's chain is read by b");
        assert_eq!((a.chains.cached(), b.chains.cached()), (1, 1));
        assert!(Arc::ptr_eq(&of_a, &catalog(dir.clone(), chain(&[&a])).await), "a's stays cached");

        let imports = importer(0);
        let on_a = with_imported(of_a.clone(), Some(&a), &imports);
        assert!(on_a.skills.contains_key("i0"));
        assert!(Arc::ptr_eq(&on_a, &with_imported(of_a.clone(), Some(&a), &imports)), "kept on a");
        assert!(!Arc::ptr_eq(&on_a, &with_imported(of_a.clone(), None, &imports)), "without a mount, nothing is kept");
        let on_b = with_imported(of_b.clone(), Some(&b), &imports);
        assert!(!Arc::ptr_eq(&on_b, &with_imported(of_b.clone(), Some(&a), &imports)), "a makes its own of the same");
        assert!(Arc::ptr_eq(&on_b, &with_imported(of_b.clone(), Some(&b), &imports)), "kept on b");

        let (cached, overlaid) = (Arc::downgrade(&of_a), Arc::downgrade(&on_a));
        drop((of_a, on_a, a));
        assert!(cached.upgrade().is_none() && overlaid.upgrade().is_none(), "a's catalogs went with it");
        assert_eq!(b.chains.cached(), 1, "b's stay");
    }

    /// A key never names a mount made after it: a mount made in place of a dropped
    /// one (as a reload rebuilds one) is read, not answered from its predecessor's catalog.
    #[tokio::test]
    async fn a_rebuilt_mount_is_not_answered_from_its_predecessor_s_catalog() {
        let dir = scratch("rebuilt");
        let a = mount(&dir, "a", "x");
        let old = mount(&dir, "old", "y");
        assert!(catalog(dir.clone(), chain(&[&a, &old])).await.skills.contains_key("y"));
        let at = Arc::as_ptr(&old);
        drop(old);
        let new = mount(&dir, "new", "z");
        assert_ne!(Arc::as_ptr(&new), at, "the cached key keeps the old mount's allocation");
        let after = catalog(dir.clone(), chain(&[&a, &new])).await;
        assert!(after.skills.contains_key("z") && !after.skills.contains_key("y"), "{:?}", after.skills.keys().collect::<Vec<_>>());
    }

    /// A mount keeps `CACHE_ENTRIES` catalogs; one more drops the least recently used.
    #[tokio::test]
    async fn a_mount_keeps_its_bound_of_catalogs_and_drops_the_least_recently_used_past_it() {
        let dir = scratch("bound");
        let a = mount(&dir, "root", "x");
        let ws = |i: usize| dir.join(format!("ws{i}"));
        let first = catalog(ws(0), chain(&[&a])).await;
        for i in 1..CACHE_ENTRIES {
            catalog(ws(i), chain(&[&a])).await;
        }
        assert_eq!(a.chains.cached(), CACHE_ENTRIES, "at the limit every catalog is kept");
        assert!(Arc::ptr_eq(&first, &catalog(ws(0), chain(&[&a])).await), "the first one too (used again now)");
        catalog(ws(CACHE_ENTRIES), chain(&[&a])).await;
        assert_eq!(a.chains.cached(), CACHE_ENTRIES, "past it, one is dropped");
        assert!(!a.chains.caches(&ws(1), &chain(&[&a])), "the least recently used");
        assert!(a.chains.caches(&ws(0), &chain(&[&a])) && a.chains.caches(&ws(2), &chain(&[&a])));
    }

    /// Making room, an entry naming a mount that is gone goes before the least recently
    /// used one: no chain can name that mount again.
    #[tokio::test]
    async fn an_entry_naming_a_gone_mount_is_dropped_first() {
        let dir = scratch("gone");
        let (a, b) = (mount(&dir, "a", "x"), mount(&dir, "b", "y"));
        let ws = |i: usize| dir.join(format!("ws{i}"));
        for i in 0..CACHE_ENTRIES - 1 {
            catalog(ws(i), chain(&[&a])).await;
        }
        catalog(ws(0), chain(&[&a, &b])).await;
        assert_eq!(a.chains.cached(), CACHE_ENTRIES);
        drop(b);
        catalog(ws(CACHE_ENTRIES), chain(&[&a])).await;
        assert_eq!(a.chains.cached(), CACHE_ENTRIES);
        assert!(a.chains.caches(&ws(0), &chain(&[&a])), "the least recently used stays: b's entry went instead");
    }

    /// A mount keeps `OVERLAYS` catalogs with imported skills; one more drops the oldest made.
    #[tokio::test]
    async fn a_mount_keeps_its_bound_of_overlays_and_drops_the_oldest_past_it() {
        let dir = scratch("overlays");
        let a = mount(&dir, "root", "x");
        let base = catalog(dir.clone(), chain(&[&a])).await;
        let imports: Vec<Vec<Provider>> = (0..=OVERLAYS).map(importer).collect();
        let made: Vec<Arc<Catalog>> = imports[..OVERLAYS].iter().map(|p| with_imported(base.clone(), Some(&a), p)).collect();
        for (n, p) in imports[..OVERLAYS].iter().enumerate() {
            assert!(Arc::ptr_eq(&made[n], &with_imported(base.clone(), Some(&a), p)), "at the limit, overlay {n} is kept");
        }
        with_imported(base.clone(), Some(&a), &imports[OVERLAYS]);
        assert!(Arc::ptr_eq(&made[1], &with_imported(base.clone(), Some(&a), &imports[1])), "the second made stays");
        assert!(!Arc::ptr_eq(&made[0], &with_imported(base.clone(), Some(&a), &imports[0])), "the first made is made again");
    }
}

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

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use seam_engine::runtime::AsAny;
use seam_engine::surface::Provider;

use crate::discover::Candidate;
use crate::host::{Observation, SkillsMount};

/// The winners for one agent in one workspace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalog {
    /// By name.
    pub skills: BTreeMap<String, Arc<Candidate>>,
    /// BLAKE3 of the summaries (names, descriptions, permissions): bodies are not in it.
    pub digest: String,
    /// Set when the last observation was incomplete and this is the last good catalog.
    pub stale: Option<String>,
    /// Set when no observation has been complete yet: there is no catalog to publish.
    pub unavailable: Option<String>,
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

/// Merges observations, each with its layer, in registration order.
pub fn merge(observed: &[(u32, &Observation)]) -> Catalog {
    let mut layers: BTreeMap<u32, Vec<(u32, usize, Arc<Candidate>)>> = BTreeMap::new();
    let mut order = 0;
    for (layer, o) in observed {
        for (_, scan) in &o.roots {
            for c in scan.skills() {
                layers.entry(*layer).or_default().push((c.rank, order, c.clone()));
            }
            order += 1;
        }
    }
    let mut skills: BTreeMap<String, Arc<Candidate>> = BTreeMap::new();
    // Farthest layer first; each nearer layer replaces same-name skills outright.
    for (_, mut candidates) in layers {
        candidates.sort_by_key(|(rank, order, _)| (*rank, *order));
        let mut winners: BTreeMap<String, Arc<Candidate>> = BTreeMap::new();
        for (_, _, c) in candidates {
            winners.entry(c.summary.name.clone()).or_insert(c);
        }
        skills.extend(winners);
    }
    let digest = digest(&skills);
    Catalog { skills, digest, stale: None, unavailable: None }
}

fn digest(skills: &BTreeMap<String, Arc<Candidate>>) -> String {
    let mut hasher = blake3::Hasher::new();
    for c in skills.values() {
        let s = &c.summary;
        // Length-prefixed fields, so that no two catalogs hash alike by shifting text between fields.
        for field in [s.name.as_str(), s.description.as_str(), s.when_to_use.as_deref().unwrap_or("\u{0}")] {
            hasher.update(&(field.len() as u64).to_le_bytes());
            hasher.update(field.as_bytes());
        }
        hasher.update(&[u8::from(s.model_invocable), u8::from(s.user_invocable)]);
    }
    hasher.finalize().to_hex()[..16].to_owned()
}

type Key = (PathBuf, Vec<(u64, u32)>);

struct Cached {
    revisions: Vec<u64>,
    catalog: Arc<Catalog>,
}

/// Most (workspace, chain) catalogs kept.
const CACHE_ENTRIES: usize = 256;

static CACHE: LazyLock<Mutex<HashMap<Key, Cached>>> = LazyLock::new(Mutex::default);

/// The workspace of a session: its first root inside the configured
/// workspace, else the configured workspace (a client cannot point discovery
/// outside it); the process's folder when neither is known.
pub fn workspace_of(configured: Option<&Path>, roots: &[PathBuf]) -> PathBuf {
    let configured = configured.and_then(|c| std::fs::canonicalize(c).ok().or_else(|| Some(c.to_owned())));
    let inside = roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()).find(|r| configured.as_ref().is_none_or(|c| r.starts_with(c)));
    inside.or(configured).unwrap_or_else(|| std::env::current_dir().unwrap_or_default())
}

/// The agent's catalog in `workspace`: cached while no mount's revision moved,
/// else observed again (blocking reads on the blocking pool).
pub async fn catalog(workspace: PathBuf, chain: Vec<Layered>) -> Arc<Catalog> {
    let key: Key = (workspace.clone(), chain.iter().map(|l| (l.mount.serial, l.layer)).collect());
    let revisions: Vec<u64> = chain.iter().map(|l| l.mount.revision()).collect();
    let last = {
        let cache = CACHE.lock().expect("catalog cache lock");
        match cache.get(&key) {
            Some(c) if c.revisions == revisions => return c.catalog.clone(),
            Some(c) => Some(c.catalog.clone()),
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
        return Arc::new(match last {
            Some(last) => Catalog { stale: Some(reason), ..(*last).clone() },
            None => Catalog { unavailable: Some(reason), ..Catalog::default() },
        });
    }
    let refs: Vec<(u32, &Observation)> = observations.iter().map(|(l, o)| (*l, o)).collect();
    let catalog = Arc::new(merge(&refs));
    let revisions = observations.iter().map(|(_, o)| o.revision).collect();
    let mut cache = CACHE.lock().expect("catalog cache lock");
    if cache.len() >= CACHE_ENTRIES && !cache.contains_key(&key) {
        // Catalogs are cheap to rebuild from the mounts' own scans; drop any.
        if let Some(k) = cache.keys().next().cloned() {
            cache.remove(&k);
        }
    }
    cache.insert(key, Cached { revisions, catalog: catalog.clone() });
    catalog
}

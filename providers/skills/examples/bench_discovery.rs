//! The discovery benchmark (`scripts/bench-skills` runs it): N skills spread
//! over seven roots (project `.seam/skills` and `.agents/skills`, two custom
//! dirs, user `~/.seam/skills` and `~/.agents/skills`, bundled), one in ten
//! names shadowed by a higher-ranked root. It times, in one process:
//!
//! - cold: the first listing of the `skill` tool (discovery, merge, the
//!   catalog in the description, the prompts), and the memory it keeps;
//! - warm: a listing again, served from the cache;
//! - one edit: a skill file changed and its folder invalidated (what a
//!   watcher event does), then a listing: the files read and the time;
//! - with `--watch`, the edit end to end: the write on disk to the republish
//!   (the watcher, its settle time included) and the listing after it;
//! - the floor: reading every skill file whole once, nothing else.
//!
//! `bench_discovery --skills N --dir DIR [--watch] [--edits E] [--warm W]`
//! prints one JSON object. DIR is emptied and filled; HOME is set to a
//! folder inside it before anything else runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use seam_engine::runtime::{Changes, Running};
use seam_engine::surface::{Listing, Provider};
use seam_skills::host::SkillsMount;
use seam_skills::registry::{self, Layered};
use seam_skills::{FsSkills, SkillSettings, tool};
use serde_json::json;

struct Args {
    skills: usize,
    dir: PathBuf,
    watch: bool,
    edits: usize,
    warm: usize,
}

fn args() -> Args {
    let mut out = Args { skills: 10_000, dir: PathBuf::from("target/bench-data/skills"), watch: false, edits: 20, warm: 200 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--skills" => out.skills = value().parse().expect("--skills N"),
            "--dir" => out.dir = PathBuf::from(value()),
            "--edits" => out.edits = value().parse().expect("--edits N"),
            "--warm" => out.warm = value().parse().expect("--warm N"),
            "--watch" => out.watch = true,
            other => panic!("unknown flag {other}"),
        }
    }
    out
}

/// The seven roots, highest rank first: (folder, how the composition names it).
fn roots(dir: &Path) -> [PathBuf; 7] {
    let (project, home) = (dir.join("project"), dir.join("home"));
    [
        project.join(".seam/skills"),
        project.join(".agents/skills"),
        dir.join("custom-a"),
        dir.join("custom-b"),
        home.join(".seam/skills"),
        home.join(".agents/skills"),
        dir.join("bundled"),
    ]
}

/// A skill file of realistic size: a two-line description, a 2 KB body.
fn skill_text(name: &str, edit: usize) -> String {
    let body = "Step: read the input, check it against the rules, write the result.\n".repeat(30);
    format!(
        "---\nname: {name}\ndescription: Does the {name} task, edit {edit}. Reads the inputs it names, checks them against the\n  project's rules and writes what it found, with the reasons.\nmetadata:\n  owner: bench\n---\n# {name}\n\n{body}"
    )
}

fn generate(dir: &Path, skills: usize) -> Vec<PathBuf> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("project/.git")).unwrap();
    let roots = roots(dir);
    let distinct = (skills * 9 / 10).max(1);
    let mut files = Vec::with_capacity(skills);
    for i in 0..skills {
        let name = format!("skill-{}", i % distinct);
        let folder = roots[i % roots.len()].join(&name);
        // Shadowed names land in another root; a root holds a name once.
        if folder.exists() {
            continue;
        }
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("SKILL.md");
        std::fs::write(&file, skill_text(&name, 0)).unwrap();
        files.push(file);
    }
    files
}

/// VmRSS and VmHWM of this process, in KiB.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    ms(v[v.len() / 2])
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = args();
    let dir = std::path::absolute(&args.dir).unwrap();
    let files = generate(&dir, args.skills);
    // SAFETY: set before any other thread of this program reads the environment
    // (the runtime's workers are idle; nothing has asked for HOME yet).
    unsafe { std::env::set_var("HOME", dir.join("home")) };
    let [_, _, custom_a, custom_b, _, _, bundled] = roots(&dir);
    let config = FsSkills {
        kind: "skills.fs".into(),
        include_default_roots: true,
        custom_dirs: vec![custom_a.display().to_string(), custom_b.display().to_string()],
        bundled_dir: Some(bundled.display().to_string()),
        watch: args.watch,
        max_watched_projects: 128,
        read_only_roots: false,
    };
    let workspace = dir.join("project");
    let settings = SkillSettings { catalog_description_max: 500 };
    let floor = {
        let t = Instant::now();
        let bytes: usize = files.iter().map(|f| std::fs::read(f).unwrap().len()).sum();
        (t.elapsed(), bytes)
    };

    let (rss_before, _) = memory();
    let changes = Changes::default();
    let mount = SkillsMount::new("bench".into(), config, Some(workspace.clone()), changes.clone());
    let mount = seam_skills::host::start(Arc::new(mount)).unwrap();
    let provider =
        Provider { id: "bench".into(), registry: "skills", config: Arc::new(()), running: mount.clone() as Arc<dyn Running>, layer: 0 };
    let list = || {
        let listing =
            Listing { definition: tool::definition(&settings), providers: vec![provider.clone()], section: None, roots: Vec::new() };
        tool::list(&settings, listing)
    };

    let t = Instant::now();
    let listed = list().await;
    let cold = t.elapsed();
    let (rss_after, hwm) = memory();
    let description = listed.definition["description"].as_str().unwrap().len();
    let catalog = listed.definition["description"].as_str().unwrap().matches("\n- ").count();
    let prompts = listed.prompts.len();
    let cold_reads = mount.files_read();

    let mut warm = Vec::with_capacity(args.warm);
    for _ in 0..args.warm {
        let t = Instant::now();
        let listed = list().await;
        warm.push(t.elapsed());
        assert_eq!(listed.prompts.len(), prompts);
    }

    // The same catalog over MCP's skills extension (`skills/list`): every winner with its
    // frontmatter and its files' digests. Cold: every file hashed; warm: digests kept.
    let served = || {
        let listing =
            Listing { definition: tool::definition(&settings), providers: vec![provider.clone()], section: None, roots: Vec::new() };
        tool::skills(&settings, listing, None)
    };
    let t = Instant::now();
    let entries = served().await;
    let served_cold = t.elapsed();
    let served_bytes = serde_json::to_string(&entries).unwrap().len();
    let mut served_warm = Vec::with_capacity(args.warm.min(20));
    for _ in 0..args.warm.min(20) {
        let t = Instant::now();
        assert_eq!(served().await.len(), entries.len());
        served_warm.push(t.elapsed());
    }

    // One edit at a time, as one watcher event would report it.
    // Timed in two parts: the catalog brought up to date (the folder read
    // again, the winners of its name decided again), then the listing
    // rendered from it (the whole catalog text the client is sent).
    let (mut updates, mut renders) = (Vec::new(), Vec::new());
    let reads_before = mount.files_read();
    for e in 0..args.edits {
        let file = &files[(e * 7919) % files.len()];
        let name = file.parent().unwrap().file_name().unwrap().to_str().unwrap().to_owned();
        std::fs::write(file, skill_text(&name, e + 1)).unwrap();
        let t = Instant::now();
        assert!(mount.invalidate(file));
        let layered = vec![Layered { mount: mount.clone(), layer: 0 }];
        let catalog = registry::catalog(workspace.clone(), layered).await;
        updates.push(t.elapsed());
        let t = Instant::now();
        let listed = list().await;
        renders.push(t.elapsed());
        assert_eq!(listed.definition["_meta"]["seam/catalog"], catalog.digest.as_str());
    }
    let reads_per_edit = (mount.files_read() - reads_before) as f64 / args.edits as f64;

    // With the watcher: the write on disk to the republish, then the listing.
    let mut watched = Vec::new();
    if args.watch {
        let mut published = changes.subscribe();
        for e in 0..args.edits {
            let file = &files[(e * 104_729 + 13) % files.len()];
            let name = file.parent().unwrap().file_name().unwrap().to_str().unwrap().to_owned();
            published.mark_unchanged();
            let t = Instant::now();
            std::fs::write(file, skill_text(&name, 1000 + e)).unwrap();
            tokio::time::timeout(Duration::from_secs(30), published.changed()).await.expect("a republish").unwrap();
            let republished = t.elapsed();
            let t = Instant::now();
            list().await;
            watched.push((republished, t.elapsed()));
        }
    }

    let out = json!({
        "skills": files.len(),
        "roots": 7,
        "catalog": catalog,
        "prompts": prompts,
        "description_bytes": description,
        "watch": args.watch,
        "watched_paths": mount.watched_paths().len(),
        "floor_read_all_ms": ms(floor.0),
        "floor_bytes": floor.1,
        "cold_ms": ms(cold),
        "cold_files_read": cold_reads,
        "cold_rss_kib": rss_after.saturating_sub(rss_before),
        "peak_rss_kib": hwm,
        "warm_p50_ms": median(warm),
        "served_skills": entries.len(),
        "served_bytes": served_bytes,
        "served_cold_ms": ms(served_cold),
        "served_warm_p50_ms": median(served_warm),
        "edit_update_p50_ms": median(updates),
        "edit_render_p50_ms": median(renders),
        "edit_files_read": reads_per_edit,
        "watched_write_to_republish_p50_ms": (!watched.is_empty()).then(|| median(watched.iter().map(|w| w.0).collect())),
        "watched_listing_after_p50_ms": (!watched.is_empty()).then(|| median(watched.iter().map(|w| w.1).collect())),
    });
    println!("{out}");
    mount.dispose(Duration::from_secs(1)).await;
}

//! The ratio issue 2 sets: seam's whole validate of the large composition
//! against one bare YAML parse of the same text, target ≤ 2×.
//!
//! The two are timed in alternation, pair after pair, so that a slow spell of
//! the machine falls on both sides of a pair instead of on whichever benchmark
//! ran then (divan runs one benchmark after another; on a shared 2-core machine
//! its two medians drift apart by ±10% from run to run). Reported: each side's
//! median and the median of the per-pair ratios.
//!
//! The whole validate is `Engine::check_bytes` (load, schema, resolve, sorted
//! diagnostics) without dropping the result, as `seam validate` leaves its
//! trees to the OS; the bare parse pulls every event from saphyr and drops it.
//!
//! Run with `cargo bench -p seam-engine --bench validate_ratio` after
//! generating the large file (`scripts/bench-validate` does both);
//! `SEAM_BENCH_LARGE` names another file, `SEAM_BENCH_PAIRS` the pairs (default 300).

use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use seam_engine::Engine;

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_owned();
    let path = std::env::var_os("SEAM_BENCH_LARGE").map(PathBuf::from).unwrap_or_else(|| repo.join("target/bench-data/large.yaml"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("note: {} is missing: run scripts/gen-large-composition.py (or scripts/bench-validate)", path.display());
        return;
    };
    let pairs: usize = std::env::var("SEAM_BENCH_PAIRS").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
    let engine = Engine::new(vec![&seam_web::SURFACE, &seam_lsp::SURFACE, &seam_mcp::SURFACE, &seam_skills::SURFACE]);
    let env: HashMap<String, String> = HashMap::new();
    let checked = engine.check_bytes(&path, text.clone().into_bytes(), &env);
    assert!(checked.diagnostics.is_empty(), "{} is not clean: {} diagnostics", path.display(), checked.diagnostics.len());

    let bare = || {
        let started = Instant::now();
        let mut events = 0usize;
        for event in saphyr_parser::Parser::new_from_str(black_box(&text)) {
            let _ = black_box(event.expect("valid YAML"));
            events += 1;
        }
        black_box(events);
        started.elapsed()
    };
    // Kept, not dropped, inside the timing; dropped after it.
    let full = || {
        let bytes = text.clone().into_bytes();
        let started = Instant::now();
        let checked = engine.check_bytes(&path, bytes, &env);
        let took = started.elapsed();
        drop(black_box(checked));
        took
    };
    if let Ok(one) = std::env::var("SEAM_BENCH_ONE") {
        let took = if one == "bare" { bare() } else { full() };
        println!("{}", took.as_nanos());
        return;
    }
    for _ in 0..10 {
        bare();
        full();
    }
    let mut bare_times = Vec::with_capacity(pairs);
    let mut full_times = Vec::with_capacity(pairs);
    let mut ratios = Vec::with_capacity(pairs);
    for i in 0..pairs {
        // Alternate which side goes first, so neither always runs on a warm cache.
        let (b, f) = if i % 2 == 0 {
            let b = bare();
            (b, full())
        } else {
            let f = full();
            (bare(), f)
        };
        bare_times.push(b);
        full_times.push(f);
        ratios.push(f.as_secs_f64() / b.as_secs_f64());
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    ratios.sort_by(f64::total_cmp);
    println!("large composition: {} ({} bytes), {pairs} alternating pairs", path.display(), text.len());
    println!("bare YAML parse, median:       {:>8.3} ms", median(&mut bare_times).as_secs_f64() * 1e3);
    println!("whole validate, median:        {:>8.3} ms", median(&mut full_times).as_secs_f64() * 1e3);
    println!(
        "validate / bare parse, median of pair ratios: {:.2}× (quartiles {:.2}× – {:.2}×; target ≤ 2×)",
        ratios[pairs / 2],
        ratios[pairs / 4],
        ratios[3 * pairs / 4]
    );
}

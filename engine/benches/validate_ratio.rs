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

use std::hint::black_box;
use std::time::{Duration, Instant};

use seam_engine::Engine;

mod common;

fn main() {
    let engine = Engine::new(common::surfaces());
    let Some((path, text)) = common::read_large(&engine) else {
        eprintln!("note: {} is missing: run scripts/gen-large-composition.py (or scripts/bench-validate)", common::large_path().display());
        return;
    };
    let pairs: usize = std::env::var("SEAM_BENCH_PAIRS").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
    let env = common::env();

    let bare = || {
        let started = Instant::now();
        black_box(common::bare_parse(&text));
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

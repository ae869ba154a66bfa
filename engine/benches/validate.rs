//! The validate benchmark (issue 2): each shipped composition through the full
//! engine check, and the generated large composition (1,000 mounts, 5,000
//! `tools` entries) through the full check, stage by stage, next to one bare
//! YAML parse of the same text. The target: the whole validate ≤ 2× one bare parse.
//!
//! Run with `cargo bench -p seam-engine --bench validate`; `scripts/bench-validate`
//! generates the large file first (`target/bench-data/large.yaml`, or the path in
//! `SEAM_BENCH_LARGE`) and runs this next to the peers. Without the file the
//! large-file benchmarks are skipped with a note.

use std::path::PathBuf;
use std::sync::LazyLock;

use divan::{Bencher, black_box};
use seam_engine::diagnostic::{Diagnostic, FileId};
use seam_engine::schema::Schemas;
use seam_engine::surface::MountKind;
use seam_engine::{Engine, load, yaml};

mod common;

use common::{env, large_path, repo, surfaces};

fn main() {
    if large().is_none() {
        eprintln!(
            "note: {} is missing: run scripts/gen-large-composition.py (or scripts/bench-validate) for the large-file benchmarks",
            large_path().display()
        );
    }
    divan::main();
}

static ENGINE: LazyLock<Engine> = LazyLock::new(|| Engine::new(surfaces()));
static SCHEMAS: LazyLock<Schemas> = LazyLock::new(|| Schemas::build(&surfaces()));
static KINDS: LazyLock<Vec<&'static dyn MountKind>> = LazyLock::new(|| surfaces().iter().flat_map(|s| s.kinds().iter().copied()).collect());

/// The large composition: its path and text, read once.
fn large() -> Option<&'static (PathBuf, String)> {
    static LARGE: LazyLock<Option<(PathBuf, String)>> = LazyLock::new(|| common::read_large(&ENGINE));
    LARGE.as_ref()
}

const SHIPPED: &[&str] = &[
    "compositions/base.yaml",
    "compositions/coding.yaml",
    "compositions/examples/fetch-guarded.yaml",
    "compositions/examples/lsp-polyglot.yaml",
    "compositions/examples/mcp-everything.yaml",
];

/// (a) Each shipped composition, full check from bytes in memory (`coding.yaml`
/// also reads its `extends` base from disk, as `seam validate` does).
#[divan::bench(args = SHIPPED)]
fn shipped(bencher: Bencher, file: &str) {
    let path = repo().join(file);
    let bytes = std::fs::read(&path).expect("a shipped composition");
    let engine = &*ENGINE;
    let checked = engine.check_bytes(&path, bytes.clone(), &env());
    assert_eq!(checked.errors(), 0, "{file} has errors");
    bencher.with_inputs(|| bytes.clone()).bench_local_values(|bytes| black_box(engine.check_bytes(&path, bytes, &env())).diagnostics.len());
}

/// The cost of `Engine::new`: building the schemas from the surfaces (paid once per `seam validate`).
#[divan::bench]
fn engine_new() -> Engine {
    Engine::new(surfaces())
}

/// (b) The large composition, stage by stage.
mod large {
    use super::*;

    fn text() -> Option<&'static (PathBuf, String)> {
        super::large()
    }

    /// The baseline: one bare YAML parse, every event pulled from saphyr's parser.
    #[divan::bench]
    fn bare_yaml_parse(bencher: Bencher) {
        let Some((_, text)) = text() else { return };
        bencher.counter(divan::counter::BytesCount::of_str(text)).bench(|| common::bare_parse(text));
    }

    /// The engine's spanned parse only: events to the spanned tree.
    #[divan::bench]
    fn spanned_parse(bencher: Bencher) {
        let Some((_, text)) = text() else { return };
        bencher.counter(divan::counter::BytesCount::of_str(text)).bench(|| yaml::parse(black_box(text), FileId(0)).expect("valid YAML"));
    }

    /// Loading: the spanned parse plus `${…}` interpolation and the `extends` merge.
    #[divan::bench]
    fn load(bencher: Bencher) {
        let Some((path, text)) = text() else { return };
        bencher.with_inputs(|| text.clone().into_bytes()).bench_local_values(|bytes| load::load_bytes(path, bytes, &env(), u64::MAX));
    }

    /// The JSON Schema check alone, on a tree already built.
    #[divan::bench]
    fn schema(bencher: Bencher) {
        let Some((_, text)) = text() else { return };
        let tree = yaml::parse(text, FileId(0)).expect("valid YAML");
        let schemas = &*SCHEMAS;
        let kinds = &*KINDS;
        bencher.bench_local(|| {
            let mut out: Vec<Diagnostic> = Vec::new();
            schemas.validate(black_box(&tree), kinds, &mut out);
            out
        });
    }

    /// The whole validate: load, schema, resolve (semantic checks), sorted diagnostics.
    #[divan::bench]
    fn full_check(bencher: Bencher) {
        let Some((path, text)) = text() else { return };
        let engine = &*ENGINE;
        bencher
            .counter(divan::counter::BytesCount::of_str(text))
            .with_inputs(|| text.clone().into_bytes())
            .bench_local_values(|bytes| engine.check_bytes(path, bytes, &env()));
    }

    /// The whole validate with its result dropped inside the timing (divan otherwise
    /// drops outputs outside it): what freeing the result would cost. `seam
    /// validate` does not pay it; it leaves its trees to the OS.
    #[divan::bench]
    fn full_check_and_drop(bencher: Bencher) {
        let Some((path, text)) = text() else { return };
        let engine = &*ENGINE;
        bencher
            .with_inputs(|| text.clone().into_bytes())
            .bench_local_values(|bytes| engine.check_bytes(path, bytes, &env()).diagnostics.len());
    }

    /// The whole validate including `Engine::new` (what one `seam validate` process pays, less I/O and output).
    #[divan::bench]
    fn full_check_with_engine_new(bencher: Bencher) {
        let Some((path, text)) = text() else { return };
        bencher.with_inputs(|| text.clone().into_bytes()).bench_local_values(|bytes| {
            let engine = Engine::new(surfaces());
            engine.check_bytes(path, bytes, &env()).diagnostics.len()
        });
    }
}

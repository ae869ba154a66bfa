//! What the validate benchmarks share: the surfaces, the large composition,
//! and the baseline they are measured against.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use seam_engine::Engine;
use seam_engine::surface::Surface;

pub fn surfaces() -> Vec<&'static dyn Surface> {
    vec![&seam_web::SURFACE, &seam_lsp::SURFACE, &seam_mcp::SURFACE, &seam_skills::SURFACE]
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_owned()
}

/// `SEAM_BENCH_LARGE`, else the file `scripts/gen-large-composition.py` writes.
pub fn large_path() -> PathBuf {
    std::env::var_os("SEAM_BENCH_LARGE").map(PathBuf::from).unwrap_or_else(|| repo().join("target/bench-data/large.yaml"))
}

/// An empty environment: `${VAR:-default}` takes its default.
pub fn env() -> HashMap<String, String> {
    HashMap::new()
}

/// The large composition's path and text, checked clean once (a benchmark of an
/// invalid file would measure the error path); `None` when it was not generated.
pub fn read_large(engine: &Engine) -> Option<(PathBuf, String)> {
    let path = large_path();
    let text = std::fs::read_to_string(&path).ok()?;
    let checked = engine.check_bytes(&path, text.clone().into_bytes(), &env());
    assert!(checked.diagnostics.is_empty(), "{} is not clean: {} diagnostics", path.display(), checked.diagnostics.len());
    Some((path, text))
}

/// The baseline: one bare YAML parse, every event pulled from saphyr's parser.
pub fn bare_parse(text: &str) -> usize {
    let mut events = 0usize;
    for event in saphyr_parser::Parser::new_from_str(black_box(text)) {
        let _ = black_box(event.expect("valid YAML"));
        events += 1;
    }
    events
}

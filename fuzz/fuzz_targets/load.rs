//! Any bytes as a composition: diagnostics with a place, never a panic; a
//! composition without errors has a plan.
#![no_main]
use libfuzzer_sys::fuzz_target;

/// Built once: compiling the schema per input would leave little time to fuzz.
static ENGINE: std::sync::LazyLock<seam_engine::Engine> = std::sync::LazyLock::new(seam::engine);

fuzz_target!(|bytes: &[u8]| {
    let engine = &*ENGINE;
    let env: std::collections::HashMap<String, String> = [("SET".to_owned(), "value".to_owned())].into();
    let checked = engine.check_bytes(std::path::Path::new("/nonexistent/fuzz.yaml"), bytes.to_vec(), &env);
    for d in &checked.diagnostics {
        assert!(d.span.line >= 1 && d.span.column >= 1, "{d:?}");
        let _ = seam_engine::render::human(d, &checked.sources);
    }
    if checked.errors() == 0 {
        let _ = checked.plan().expect("a valid composition has a plan").to_json();
    }
});

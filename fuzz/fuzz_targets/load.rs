//! Any bytes as a composition: diagnostics with a place, never a panic; a
//! composition without errors has a plan (`holds::composition_holds`).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/properties/holds.rs"]
mod holds;

/// Built once: compiling the schema per input would leave little time to fuzz.
static ENGINE: std::sync::LazyLock<seam_engine::Engine> = std::sync::LazyLock::new(seam::engine);

fuzz_target!(|bytes: &[u8]| holds::composition_holds(&ENGINE, bytes.to_vec()));

//! `${…}` over any text: an answer or a typed error, never a panic
//! (`holds::interpolation_holds`).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/properties/holds.rs"]
mod holds;

fuzz_target!(|text: &str| holds::interpolation_holds(text));

//! The private-network guard over any URL: a refusal or a URL that names no
//! blocked address; never a panic (`holds::guard_holds`).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/properties/holds.rs"]
mod holds;

fuzz_target!(|raw: &str| holds::guard_holds(raw));

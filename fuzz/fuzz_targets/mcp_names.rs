//! Qualified MCP tool names fit and never collide (`holds::names_hold`).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/properties/holds.rs"]
mod holds;

fuzz_target!(|pairs: ((String, String), (String, String))| {
    let ((s1, r1), (s2, r2)) = pairs;
    holds::names_hold(&s1, &r1, &s2, &r2);
});

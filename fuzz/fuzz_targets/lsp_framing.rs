//! The LSP base protocol over any bytes: within the limit, a typed error, or
//! the end; never a panic (`holds::framing_holds`).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/properties/holds.rs"]
mod holds;

fuzz_target!(|bytes: &[u8]| holds::framing_holds(bytes));

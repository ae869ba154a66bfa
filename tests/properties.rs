//! The stable-toolchain equivalents of the cargo-fuzz targets (`fuzz/`,
//! `scripts/fuzz`), which CI runs: `${…}` interpolation, the LSP framer, MCP
//! tool-name qualification and the private-network guard, each over generated
//! input, with the same properties. (`tests/robust.rs` does the loader.)
//! Inputs a fuzzer once found are kept here as fixed cases. The properties
//! themselves are in `properties/holds.rs`, shared with the fuzz targets.

pub(crate) mod holds;

use holds::{framing_holds, guard_holds, interpolation_holds, names_hold};
use proptest::prelude::*;

/// Text made of the pieces interpolation reads, and anything else.
fn template() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("$".to_owned()),
        Just("$$".to_owned()),
        Just("${".to_owned()),
        Just("}".to_owned()),
        Just(":-".to_owned()),
        Just(":?".to_owned()),
        Just("SET".to_owned()),
        Just("EMPTY".to_owned()),
        Just("UNSET".to_owned()),
        Just("GITHUB_TOKEN".to_owned()),
        "[a-z _.:/-]{0,6}",
        ".{0,3}",
    ];
    prop::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

/// Bytes shaped like LSP headers and bodies, and noise.
fn frames() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"Content-Length: ".to_vec()),
        Just(b"content-length:".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"Content-Type: x\r\n".to_vec()),
        "[0-9]{1,6}".prop_map(String::into_bytes),
        Just(b"99999999999999999999".to_vec()),
        prop::collection::vec(any::<u8>(), 0..40),
    ];
    prop::collection::vec(piece, 0..16).prop_map(|pieces| pieces.concat())
}

/// URLs in the spellings the guard must see through, and noise.
fn urls() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![Just("http://"), Just("https://"), Just("HTTP://"), Just("ftp://"), Just("//")];
    let host = prop_oneof![
        Just("127.0.0.1".to_owned()),
        Just("0x7f.1".to_owned()),
        Just("2130706433".to_owned()),
        Just("017700000001".to_owned()),
        Just("[::1]".to_owned()),
        Just("[::ffff:127.0.0.1]".to_owned()),
        Just("[::ffff:0:a00:1]".to_owned()),
        Just("[64:ff9b::a9fe:a9fe]".to_owned()),
        Just("[2002:c0a8:101::]".to_owned()),
        Just("169.254.169.254".to_owned()),
        Just("10.0.0.1".to_owned()),
        Just("100.64.0.1".to_owned()),
        Just("localhost".to_owned()),
        Just("example.com".to_owned()),
        (0u8..=255, 0u8..=255, 0u8..=255, 0u8..=255).prop_map(|(a, b, c, d)| format!("{a}.{b}.{c}.{d}")),
        "[a-z0-9.%-]{0,12}",
    ];
    let tail = prop_oneof![Just(""), Just("/"), Just(":80/x"), Just("@evil"), Just("?q=1#f"), Just("\\x")];
    (scheme, prop_oneof![Just(""), Just("user:pass@")], host, tail).prop_map(|(s, c, h, t)| format!("{s}{c}{h}{t}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn interpolation_answers_or_refuses_and_keeps_dollars(text in template()) {
        interpolation_holds(&text);
    }

    #[test]
    fn any_text_interpolates_without_panicking(text in ".{0,40}") {
        interpolation_holds(&text);
    }

    #[test]
    fn the_lsp_framer_reads_within_its_limit_and_round_trips(bytes in frames()) {
        framing_holds(&bytes);
    }

    #[test]
    fn qualified_names_fit_and_never_collide(s1 in "[A-Za-z0-9_-]{1,36}", r1 in ".{0,80}", s2 in "[A-Za-z0-9_-]{1,36}", r2 in ".{0,80}") {
        names_hold(&s1, &r1, &s2, &r2);
        // The same server, tools a character apart.
        names_hold(&s1, &r1, &s1, &format!("{r1}x"));
    }

    #[test]
    fn the_guard_lets_through_no_blocked_address(raw in urls()) {
        guard_holds(&raw);
    }

    #[test]
    fn the_guard_survives_any_text(raw in ".{0,60}") {
        guard_holds(&raw);
    }
}

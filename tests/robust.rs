//! Property tests: whatever the bytes, `validate` returns diagnostics and never
//! panics. (cargo-fuzz targets come with the hardening issue; this is the
//! stable-toolchain equivalent that CI runs.)

use proptest::prelude::*;

use crate::properties::holds;

fn check(bytes: Vec<u8>) {
    holds::composition_holds(&seam::engine(), bytes);
}

/// Words of the format, so generated trees reach deep into validation.
const WORDS: &[&str] = &[
    "seam",
    "mounts",
    "kind",
    "lsp.stdio",
    "mcp.stdio",
    "mcp.http",
    "web.search.deepseek",
    "web.fetch.http",
    "skills.fs",
    "command",
    "extensions",
    ".ts",
    "tools",
    "agents",
    "parent",
    "default",
    "services",
    "web",
    "search",
    "fetch",
    "extends",
    "timeout",
    "30s",
    "reconnect",
    "initial_delay",
    "max_delay",
    "url",
    "headers",
    "allow",
    "deny",
    "mcp__x__*",
    "lsp",
    "web_search",
    "required",
    "${SET}",
    "${UNSET}",
    "${X:-1}",
    "$$",
    "!reset",
    "1",
    "true",
    "yes",
    "null",
    "~",
    "&a",
    "*a",
    "-1",
    "5MB",
];

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![prop::sample::select(WORDS).prop_map(str::to_owned), "[a-z0-9 .:_${}*-]{0,12}"]
}

fn tree() -> impl Strategy<Value = String> {
    let leaf = scalar();
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec((scalar(), inner), 0..6)
                .prop_map(|entries| format!("{{{}}}", entries.iter().map(|(k, v)| format!("{k:?}: {v}")).collect::<Vec<_>>().join(", "))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(bytes);
    }

    /// What seam shows of a composition's lines, messages and URLs is masked by scanners over
    /// text of any kind: they never panic, and the caret stays within the masked line.
    #[test]
    fn redaction_of_any_text_never_panics(text in any::<String>(), caret in 0usize..600) {
        let _ = seam_engine::redact::text(&text);
        let _ = seam_engine::redact::url(&text);
        let _ = seam_engine::redact::secret_in_url(&text);
        let (line, at) = seam_engine::redact::line(&text, caret);
        prop_assert!(at <= line.chars().count(), "{at} past {line:?}");
    }

    #[test]
    fn arbitrary_yaml_trees_never_panic(body in tree(), top in prop::collection::vec((prop::sample::select(WORDS), tree()), 0..6)) {
        let mut text = format!("seam: 1\nmounts: {body}\n");
        for (k, v) in top {
            text.push_str(&format!("{k:?}: {v}\n"));
        }
        check(text.into_bytes());
    }

    #[test]
    fn block_style_lines_never_panic(lines in prop::collection::vec((0usize..4, scalar(), prop::option::of(scalar())), 0..24)) {
        let mut text = String::from("seam: 1\n");
        for (indent, key, value) in lines {
            text.push_str(&"  ".repeat(indent));
            match value {
                Some(v) => text.push_str(&format!("{key}: {v}\n")),
                None => text.push_str(&format!("- {key}\n")),
            }
        }
        check(text.into_bytes());
    }
}

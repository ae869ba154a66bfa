//! Generated files are checked in; these tests regenerate them and fail when the
//! checked-in copy was stale (the run leaves the fresh copy behind, so a second
//! run passes once it is committed).

use std::path::Path;

fn ensure_file_contents(relative: &str, contents: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if old == contents {
        return;
    }
    std::fs::write(&path, contents).unwrap();
    panic!("{relative} was stale and has been regenerated: review and commit it");
}

#[test]
fn schema_is_fresh() {
    let engine = seam::engine();
    let text = format!("{}\n", serde_json::to_string_pretty(engine.schema()).unwrap());
    ensure_file_contents("schemas/composition.schema.json", &text);
}

#[test]
fn code_table_is_fresh() {
    let codes = seam::engine().codes();
    let mut seen = std::collections::BTreeSet::new();
    let mut text = String::from(
        "# Diagnostic codes\n\nGenerated from the code tables by `cargo test --test suite generated`; do not edit by hand.\n\
         Every diagnostic `seam validate` prints carries one of these stable codes; so does every rejected reload, \
         and every tool error result starts with one (`CODE: message`, marked \"tool result\").\n\n| code | severity | meaning |\n| --- | --- | --- |\n",
    );
    for c in &codes {
        assert!(seen.insert(c.code), "code {} is listed twice", c.code);
        text.push_str(&format!("| `{}` | {} | {} |\n", c.code, c.severity.as_str(), c.meaning.replace('|', "\\|")));
    }
    ensure_file_contents("docs/codes.md", &text);
}

/// Every code the sources emit is in the table: a code added without a row fails here.
#[test]
fn every_emitted_code_is_documented() {
    let documented: std::collections::BTreeSet<&str> = seam::engine().codes().iter().map(|c| c.code).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for dir in ["engine/src", "providers/web/src", "providers/lsp/src", "providers/mcp/src", "providers/skills/src"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices('"') {
                let rest = &text[i + 1..];
                let Some(end) = rest.find('"') else { continue };
                let word = &rest[..end];
                let looks_like_code = word.len() > 4
                    && word.contains('_')
                    && word.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                    && !word.starts_with('_')
                    && !matches!(
                        word,
                        "PATH" | "HOME" | "USER" | "LANG" | "LC_ALL" | "TERM" | "TMPDIR" | "DEEPSEEK_API_KEY" | "CARGO_PKG_VERSION"
                    );
                if looks_like_code && !documented.contains(word) {
                    missing.push(format!("{}: {word}", path.display()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "codes used but not in a code table: {missing:#?}");
}

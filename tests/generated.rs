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
fn test_schema_is_fresh() {
    let text = format!("{}\n", serde_json::to_string_pretty(&seam_engine::expect::schema()).unwrap());
    ensure_file_contents("schemas/composition-test.schema.json", &text);
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

/// The sources of the binary and its crates (`src/` of each; their unit-test modules included), each with its text.
pub fn sources() -> Vec<(std::path::PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["src", "wire/src", "engine/src", "providers/web/src", "providers/lsp/src", "providers/mcp/src", "providers/skills/src"] {
        out.extend(crate::support::rust_files(&root.join(dir)));
    }
    out
}

/// Every code the sources spell out as a string is in a table. (A code is emitted
/// through its table's constant, so one without a row does not compile; this catches
/// one written into JSON by hand.)
#[test]
fn every_emitted_code_is_documented() {
    let documented: std::collections::BTreeSet<&str> = seam::engine().codes().iter().map(|c| c.code).collect();
    let mut missing = Vec::new();
    for (path, text) in sources() {
        for (i, _) in text.match_indices('"') {
            let rest = &text[i + 1..];
            let Some(end) = rest.find('"') else { continue };
            let word = &rest[..end];
            let looks_like_code = word.len() > 4
                && word.contains('_')
                && word.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                && !word.starts_with('_')
                // seam's own environment variables (`SEAM_MAX_COMPOSITION_BYTES`), and OpenTelemetry's.
                && !word.starts_with("SEAM_")
                && !word.starts_with("OTEL_")
                && !matches!(
                    word,
                    "PATH"
                        | "HOME"
                        | "USER"
                        | "LANG"
                        | "LC_ALL"
                        | "TERM"
                        | "TMPDIR"
                        | "DEEPSEEK_API_KEY"
                        | "CARGO_PKG_VERSION"
                        | "XDG_STATE_HOME"
                        | "WAYLAND_DISPLAY"
                );
            if looks_like_code && !documented.contains(word) {
                missing.push(format!("{}: {word}", path.display()));
            }
        }
    }
    assert!(missing.is_empty(), "codes used but not in a code table: {missing:#?}");
}

/// Every row of every code table is emitted somewhere: its constant is named in code
/// outside the table (`code_table!`) that defines it, not in a comment or a test module.
/// A row nothing uses fails here.
#[test]
fn every_documented_code_is_emitted() {
    let sources = sources();
    // The sources' code: comments, test modules (from `#[cfg(test)]` on, where this
    // workspace keeps them) and each `code_table!` invocation cut out.
    let uses: Vec<String> = sources
        .iter()
        .map(|(_, text)| {
            let text = text.split("#[cfg(test)]").next().unwrap_or_default();
            let text: String = text.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n");
            let mut rest = text.as_str();
            let mut kept = String::new();
            while let Some(start) = rest.find("code_table! {") {
                kept.push_str(&rest[..start]);
                let end = rest[start..].find("} }").map_or(rest.len(), |e| start + e);
                rest = &rest[end..];
            }
            kept.push_str(rest);
            kept
        })
        .collect();
    let named = |name: &str| {
        uses.iter().any(|text| {
            text.match_indices(name).any(|(i, _)| {
                let before = text[..i].chars().next_back().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
                let after = text[i + name.len()..].chars().next().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
                before && after
            })
        })
    };
    let unused: Vec<&str> = seam::engine().codes().iter().map(|c| c.code).filter(|code| !named(code)).collect();
    assert!(unused.is_empty(), "code table rows no source emits: {unused:?}");
}

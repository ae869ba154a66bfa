//! The properties the cargo-fuzz targets (`fuzz/`, nightly, `scripts/fuzz`)
//! and their stable twins (`tests/properties.rs`, `tests/robust.rs`, run by
//! CI) check, written once: each target and each proptest calls the function
//! here with its input. Every function panics when its property fails.
// Each crate that includes this file uses only some of the properties.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

use seam_web::guard::{Policy, blocked_range, check_url};

/// Any bytes as a composition: diagnostics with a place, each renderable,
/// never a panic; a composition without errors has a plan.
pub fn composition_holds(engine: &seam_engine::Engine, bytes: Vec<u8>) {
    let env: HashMap<String, String> = [("SET".to_owned(), "value".to_owned())].into();
    let checked = engine.check_bytes(Path::new("/nonexistent/fuzz.yaml"), bytes, &env);
    for d in &checked.diagnostics {
        assert!(d.span.line >= 1 && d.span.column >= 1, "{d:?}");
        // Rendering quotes the source line; it must not panic either.
        let _ = seam_engine::render::human(d, &checked.sources);
    }
    if checked.errors() == 0 {
        let _ = checked.plan().expect("a valid composition has a plan").to_json();
    }
}

/// `${…}` over any text: an answer or a typed error. Text without `$` has
/// nothing to expand; `$$` alone is one `$`.
pub fn interpolation_holds(text: &str) {
    let env: HashMap<String, String> = [("SET".to_owned(), "value".to_owned()), ("EMPTY".to_owned(), String::new())].into();
    let out = seam_engine::env::interpolate(text, &env);
    if !text.contains('$') {
        assert_eq!(out, Ok(None), "{text:?}");
    }
    let doubled = text.replace('$', "$$");
    let back = seam_engine::env::interpolate(&doubled, &env).map(|o| o.unwrap_or(doubled.clone()));
    assert_eq!(back, Ok(text.to_owned()), "`$$` is one `$`: {doubled:?}");
}

/// The message limit the framing property reads with.
pub const FRAME_LIMIT: u64 = 64 * 1024;

/// The LSP base protocol over any bytes: a message no larger than the limit,
/// a typed error, or the end. A body written is read back.
pub fn framing_holds(bytes: &[u8]) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let mut reader = tokio::io::BufReader::new(bytes);
        for _ in 0..16 {
            match seam_lsp::framing::read_message(&mut reader, FRAME_LIMIT).await {
                Ok(Some(body)) => assert!(body.len() as u64 <= FRAME_LIMIT),
                Ok(None) | Err(_) => break,
            }
        }
        if bytes.len() as u64 <= FRAME_LIMIT {
            let mut framed = Vec::new();
            seam_lsp::framing::frame(&mut framed, bytes);
            let mut reader = tokio::io::BufReader::new(&framed[..]);
            assert_eq!(seam_lsp::framing::read_message(&mut reader, FRAME_LIMIT).await.unwrap().as_deref(), Some(bytes));
        }
    });
}

/// Qualified MCP tool names: at most 64 characters of `[A-Za-z0-9_-]`, and
/// two different (server, tool) pairs with valid namespaces never share one.
pub fn names_hold(s1: &str, r1: &str, s2: &str, r2: &str) {
    for (server, raw) in [(s1, r1), (s2, r2)] {
        let name = seam_mcp::runtime::tool_name(server, raw);
        if seam_mcp::namespace_problem(server).is_none() {
            assert!(name.len() <= seam_mcp::runtime::MAX_TOOL_NAME, "{name}");
            assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{name}");
        }
    }
    if seam_mcp::namespace_problem(s1).is_none() && seam_mcp::namespace_problem(s2).is_none() && (s1, r1) != (s2, r2) {
        assert_ne!(seam_mcp::runtime::tool_name(s1, r1), seam_mcp::runtime::tool_name(s2, r2), "{s1}/{r1} and {s2}/{r2}");
    }
}

/// The private-network guard over any URL: a refusal or a URL; a URL it lets
/// through has an http(s) scheme, no credentials, and no host that is an
/// address in a blocked range.
pub fn guard_holds(raw: &str) {
    let Ok(url) = check_url(raw, 2048, &Policy::default()) else { return };
    assert!(matches!(url.scheme(), "http" | "https"), "{url}");
    assert!(url.username().is_empty() && url.password().is_none(), "{url}");
    match url.host() {
        Some(url::Host::Ipv4(ip)) => assert!(blocked_range(ip.into()).is_none(), "{url}"),
        Some(url::Host::Ipv6(ip)) => assert!(blocked_range(ip.into()).is_none(), "{url}"),
        Some(url::Host::Domain(_)) => {}
        None => panic!("no host: {url}"),
    }
}

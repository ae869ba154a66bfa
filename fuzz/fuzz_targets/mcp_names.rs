//! Qualified MCP tool names: at most 64 characters of `[A-Za-z0-9_-]`, and
//! two different (server, tool) pairs with valid namespaces never share one.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|pairs: ((String, String), (String, String))| {
    let ((s1, r1), (s2, r2)) = pairs;
    for (server, raw) in [(&s1, &r1), (&s2, &r2)] {
        let name = seam_mcp::runtime::tool_name(server, raw);
        if seam_mcp::namespace_problem(server).is_none() {
            assert!(name.len() <= seam_mcp::runtime::MAX_TOOL_NAME, "{name}");
            assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{name}");
        }
    }
    if seam_mcp::namespace_problem(&s1).is_none()
        && seam_mcp::namespace_problem(&s2).is_none()
        && (s1 != s2 || r1 != r2)
    {
        assert_ne!(seam_mcp::runtime::tool_name(&s1, &r1), seam_mcp::runtime::tool_name(&s2, &r2), "{s1}/{r1} and {s2}/{r2}");
    }
});

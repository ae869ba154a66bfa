//! The inventory: per kind and per mount, four different facts: `compiled` (the
//! kind exists in this binary), `configured` (the mount's config is valid),
//! `visible` (its tools are in an agent's catalog) and `ready` (the provider
//! answers now; "not probed" unless `--probe` started the composition).

use std::fmt::Write as _;

use serde_json::{Value as Json, json};

use crate::resolve::Resolved;
use crate::surface::Surface;

pub const NOT_PROBED: &str = "not probed";

pub fn to_json(resolved: &Resolved, surfaces: &[&'static dyn Surface], agent: Option<&str>) -> Json {
    let workspace = resolved.workspace_root();
    let kinds: Vec<Json> = surfaces
        .iter()
        .flat_map(|s| s.kinds().iter().map(move |k| (s, k)))
        .map(|(s, k)| {
            let mounts: Vec<&str> = resolved.mounts.iter().filter(|(_, m)| m.kind.name() == k.name()).map(|(id, _)| id.as_str()).collect();
            json!({ "kind": k.name(), "service": s.service(), "compiled": true, "mounts": mounts })
        })
        .collect();
    let mut mounts: Vec<Json> = resolved
        .mounts
        .iter()
        .map(|(id, m)| {
            let visible: Vec<&str> = resolved.visible_agents(id).into_iter().filter(|a| agent.is_none_or(|x| x == *a)).collect();
            let mut mount = json!({
                "id": id,
                "kind": m.kind.name(),
                "compiled": true,
                "configured": m.resolved.is_some(),
                "visible": visible,
                "ready": NOT_PROBED,
            });
            if let Some(probe) = m.resolved.as_ref().and_then(|r| r.environment.as_ref()) {
                let found = probe.run(workspace);
                let findings: Vec<Json> = found
                    .findings
                    .iter()
                    .map(|f| json!({ "severity": f.code.severity.as_str(), "code": f.code.code, "message": f.message }))
                    .collect();
                mount["environment"] = json!({ "facts": found.facts, "lines": found.lines, "findings": findings });
            }
            mount
        })
        .collect();
    for (id, kind) in &resolved.unknown {
        mounts.push(json!({ "id": id, "kind": kind, "compiled": false, "configured": false, "visible": [], "ready": NOT_PROBED }));
    }
    mounts.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let agents: Vec<Json> = resolved
        .agents
        .iter()
        .filter(|(name, _)| agent.is_none_or(|a| a == name.as_str()))
        .map(|(name, a)| {
            let mut tools: Vec<String> = a.tools.fixed.iter().filter(|(_, s)| s.is_some()).map(|(t, _)| (*t).to_owned()).collect();
            for id in resolved.visible_dynamic_mounts(name) {
                match resolved.mounts[id].resolved.as_ref().map(|r| &r.exposure) {
                    Some(crate::surface::Exposure::Dynamic { raw: true, .. }) => tools.push(format!("{id}'s tools as it names them")),
                    Some(crate::surface::Exposure::Dynamic { prefix, .. }) => {
                        // The mount's tools, then each rule over them in the order they apply: `!` hides.
                        let all = format!("{prefix}*");
                        let rules = a.tools.rules().filter(|r| r.server_matches(id) && !(r.shows && r.pattern == all));
                        let rules: Vec<String> =
                            rules.map(|r| if r.shows { r.pattern.clone() } else { format!("!{}", r.pattern) }).collect();
                        tools.push(all);
                        tools.extend(rules);
                    }
                    _ => {}
                }
            }
            json!({ "name": name, "parent": a.parent, "mounts": a.scope.iter().collect::<Vec<_>>(), "tools": tools })
        })
        .collect();
    // `null` when the composition sets no `services.workspace.root` (there is no implicit one).
    json!({ "workspace": workspace, "kinds": kinds, "mounts": mounts, "agents": agents })
}

/// Fills in `ready` from a started deployment's `/status`: `yes`, or `no (state: detail)`.
pub fn add_probe(inventory: &mut Json, status: &Json) {
    for m in inventory["mounts"].as_array_mut().into_iter().flatten() {
        let Some(s) = m["id"].as_str().and_then(|id| status["mounts"].get(id)) else { continue };
        let state = s["state"].as_str().unwrap_or_default().to_owned();
        let ready = match (state.as_str(), s["detail"].as_str()) {
            ("ready", _) => "yes".to_owned(),
            (state, Some(detail)) => format!("no ({state}: {detail})"),
            (state, None) => format!("no ({state})"),
        };
        m["ready"] = Json::String(ready);
        m["state"] = Json::String(state);
        m["tools"] = s["tools"].clone();
        for offered in ["prompts", "resources", "templates"] {
            if let Some(count) = s.get(offered) {
                m[offered] = count.clone();
            }
        }
        if s["discovered"].as_array().is_some_and(|d| !d.is_empty()) {
            m["discovered"] = s["discovered"].clone();
        }
        // The skills an MCP mount imports from its server, each with its SKILL.md's digest.
        if let Some(skills) = s.get("skills") {
            m["skills"] = skills.clone();
        }
        // What a running mount warns of (an MCP server's tools left out for a name they share).
        if s["warnings"].as_array().is_some_and(|w| !w.is_empty()) {
            m["warnings"] = s["warnings"].clone();
        }
    }
    // Each agent's tools as the started composition served them, and what its rules removed of
    // the tools its mounts discovered.
    for a in inventory["agents"].as_array_mut().into_iter().flatten() {
        let name = a["name"].as_str().unwrap_or_default().to_owned();
        let Some(served) = status["agents"][&name]["resolved"].as_array() else { continue };
        let served: std::collections::BTreeSet<&str> = served.iter().filter_map(Json::as_str).collect();
        let deferred: std::collections::BTreeSet<&str> =
            status["agents"][&name]["deferred"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
        let mut removed = std::collections::BTreeSet::new();
        for m in discovered_by_mounts_of(status, &name) {
            removed.extend(m.iter().filter(|t| !served.contains(t.as_str()) && !deferred.contains(t.as_str())).cloned());
        }
        a["resolved"] = json!(served);
        a["deferred"] = json!(deferred);
        a["removed"] = json!(removed);
        // What its tool list costs a model in every request (an estimate, `crate::tokens`),
        // and what it would with every tool listed (`disclosure: all`).
        if let Some(tokens) = status["agents"][&name]["catalog_tokens"].as_u64() {
            a["catalog_tokens"] = json!(tokens);
        }
        if let Some(tokens) = status["catalogs"][&name]["tokens_all"].as_u64() {
            a["catalog_tokens_all"] = json!(tokens);
        }
    }
    // The services' own health views (the web providers' `registered / available / reason`).
    if let Some(services) = status.get("services").filter(|s| s.as_object().is_some_and(|o| !o.is_empty())) {
        inventory["services"] = services.clone();
    }
}

/// The names of the tools each mount visible to `agent` discovered, from a started composition's status.
fn discovered_by_mounts_of(status: &Json, agent: &str) -> Vec<Vec<String>> {
    let visible = status["agents"][agent]["mounts"].as_array().cloned().unwrap_or_default();
    visible
        .iter()
        .filter_map(Json::as_str)
        .map(|id| {
            let discovered = status["mounts"][id]["discovered"].as_array().cloned().unwrap_or_default();
            discovered.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
        })
        .collect()
}

/// An agent's tool rules as a line: `lsp, mcp__fs__* but not mcp__fs__write*`.
fn rules_line(tools: &[&str]) -> String {
    let mut line = String::new();
    for tool in tools {
        match tool.strip_prefix('!') {
            Some(hidden) => {
                let _ = write!(line, " but not {hidden}");
            }
            None => {
                if !line.is_empty() {
                    line.push_str(", ");
                }
                line.push_str(tool);
            }
        }
    }
    line
}

/// The inventory as text: the workspace, a table of mounts, what a probe saw
/// of each (warnings, tools, skills, environment), the agents' tools, the
/// services' registries and the kinds compiled in, in that order.
pub fn to_human(inventory: &Json) -> String {
    let mut out = String::new();
    let mounts: Vec<&Json> = inventory["mounts"].as_array().into_iter().flatten().collect();
    write_workspace(&mut out, inventory);
    write_mount_table(&mut out, &mounts);
    write_warnings(&mut out, &mounts);
    write_discovered_tools(&mut out, &mounts);
    write_imported_skills(&mut out, &mounts);
    write_environments(&mut out, &mounts);
    let _ = writeln!(out);
    write_agents(&mut out, inventory);
    let _ = writeln!(out);
    write_registries(&mut out, inventory);
    let _ = writeln!(out, "kinds compiled in:");
    for k in inventory["kinds"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "  {:<22} ({})", k["kind"].as_str().unwrap_or_default(), k["service"].as_str().unwrap_or_default());
    }
    out
}

/// `yes` for `true`, `no` for anything else.
fn yes(v: &Json) -> &'static str {
    if v.as_bool() == Some(true) { "yes" } else { "no" }
}

/// The workspace root, or that there is none.
fn write_workspace(out: &mut String, inventory: &Json) {
    match inventory["workspace"].as_str() {
        Some(root) => {
            let _ = writeln!(out, "workspace: {root}\n");
        }
        None => {
            let _ = writeln!(out, "workspace: none (`services.workspace.root` is not set, and there is no implicit one)\n");
        }
    }
}

/// A line per mount: its kind, the four facts, and the agents that see it.
fn write_mount_table(out: &mut String, mounts: &[&Json]) {
    let _ = writeln!(out, "{:<24} {:<22} {:<9} {:<11} {:<24} ready", "MOUNT", "KIND", "COMPILED", "CONFIGURED", "VISIBLE TO");
    for m in mounts {
        let visible: Vec<&str> = m["visible"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
        let _ = writeln!(
            out,
            "{:<24} {:<22} {:<9} {:<11} {:<24} {}",
            m["id"].as_str().unwrap_or_default(),
            m["kind"].as_str().unwrap_or_default(),
            yes(&m["compiled"]),
            yes(&m["configured"]),
            if visible.is_empty() { "-".to_owned() } else { visible.join(",") },
            m["ready"].as_str().unwrap_or_default()
        );
    }
}

/// What running mounts warn of.
fn write_warnings(out: &mut String, mounts: &[&Json]) {
    for m in mounts {
        for warning in m["warnings"].as_array().into_iter().flatten().filter_map(Json::as_str) {
            let _ = writeln!(out, "\nwarning: {}: {warning}", m["id"].as_str().unwrap_or_default());
        }
    }
}

/// The tools a probe saw each mount discover, with the hints their servers give.
fn write_discovered_tools(out: &mut String, mounts: &[&Json]) {
    for m in mounts {
        let Some(tools) = m["discovered"].as_array() else { continue };
        let _ = writeln!(out, "\n{} tools:", m["id"].as_str().unwrap_or_default());
        for t in tools {
            let a = &t["annotations"];
            let hints: Vec<&str> = [
                ("readOnlyHint", "read-only"),
                ("destructiveHint", "destructive"),
                ("idempotentHint", "idempotent"),
                ("openWorldHint", "open-world"),
            ]
            .into_iter()
            .filter(|(key, _)| a[*key].as_bool() == Some(true))
            .map(|(_, word)| word)
            .collect();
            let _ = writeln!(
                out,
                "  {}{}",
                t["name"].as_str().unwrap_or_default(),
                if hints.is_empty() { String::new() } else { format!("  ({})", hints.join(", ")) }
            );
        }
        if let (Some(prompts), Some(resources), Some(templates)) = (m["prompts"].as_u64(), m["resources"].as_u64(), m["templates"].as_u64())
        {
            let _ = writeln!(out, "  and {prompts} prompts, {resources} resources, {templates} resource templates");
        }
    }
}

/// The skills a probe saw each importing MCP mount take from its server.
fn write_imported_skills(out: &mut String, mounts: &[&Json]) {
    for m in mounts {
        let Some(skills) = m["skills"].as_array() else { continue };
        let _ = writeln!(out, "\n{} skills (imported from its server):", m["id"].as_str().unwrap_or_default());
        for skill in skills {
            let _ = writeln!(
                out,
                "  {}  {}  {}",
                skill["name"].as_str().unwrap_or_default(),
                skill["digest"].as_str().unwrap_or_default(),
                skill["uri"].as_str().unwrap_or_default()
            );
        }
    }
}

/// What kinds found on this machine for their mounts (a skills mount's roots, its invalid skill files).
fn write_environments(out: &mut String, mounts: &[&Json]) {
    for m in mounts {
        let Some(env) = m.get("environment") else { continue };
        let _ = writeln!(out, "\n{}:", m["id"].as_str().unwrap_or_default());
        for line in env["lines"].as_array().into_iter().flatten().filter_map(Json::as_str) {
            let _ = writeln!(out, "  {line}");
        }
        for f in env["findings"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "  {}[{}]: {}",
                f["severity"].as_str().unwrap_or_default(),
                f["code"].as_str().unwrap_or_default(),
                f["message"].as_str().unwrap_or_default()
            );
        }
    }
}

/// Each agent's tool rules as a line; after a probe, the tools it was served and those its rules removed.
fn write_agents(out: &mut String, inventory: &Json) {
    for a in inventory["agents"].as_array().into_iter().flatten() {
        let tools: Vec<&str> = a["tools"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
        let _ = writeln!(
            out,
            "agent {}: {}",
            a["name"].as_str().unwrap_or_default(),
            if tools.is_empty() { "(no tools)".to_owned() } else { rules_line(&tools) }
        );
        if let Some(resolved) = a["resolved"].as_array() {
            let names: Vec<&str> = resolved.iter().filter_map(Json::as_str).collect();
            let _ = writeln!(out, "  served {} tools: {}", names.len(), if names.is_empty() { "-".to_owned() } else { names.join(", ") });
            let deferred: Vec<&str> = a["deferred"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
            if !deferred.is_empty() {
                let _ = writeln!(out, "  deferred {} tools, found with tool_search: {}", deferred.len(), deferred.join(", "));
            }
            if let Some(tokens) = a["catalog_tokens"].as_u64() {
                let all = match a["catalog_tokens_all"].as_u64() {
                    Some(all) if !deferred.is_empty() => format!(", {all} with every tool listed"),
                    _ => String::new(),
                };
                let _ = writeln!(out, "  its tool list costs about {tokens} tokens a request{all} ({} estimate)", crate::tokens::ENCODING);
            }
            let removed: Vec<&str> = a["removed"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
            if !removed.is_empty() {
                let _ = writeln!(out, "  removed by its rules: {}", removed.join(", "));
            }
        }
    }
}

/// A service view's registries that list providers: `<service>.<registry>`, its pin and
/// choice, then a line per provider; a blank line after them when there are services.
fn write_registries(out: &mut String, inventory: &Json) {
    for (service, view) in inventory["services"].as_object().into_iter().flatten() {
        for (registry, r) in view.as_object().into_iter().flatten() {
            let Some(providers) = r["providers"].as_array() else { continue };
            let choice = match (r["selected"].as_str(), r["selection_error"].as_str()) {
                (Some(id), _) => format!("calls use `{id}`"),
                (None, Some(error)) => format!("calls fail: {error}"),
                (None, None) => "-".to_owned(),
            };
            let pin = r["pin"].as_str().map_or("no pin".to_owned(), |p| format!("pin `{p}`"));
            let _ = writeln!(out, "{service}.{registry}: {pin}; {choice}");
            for p in providers {
                let _ = writeln!(
                    out,
                    "  {:<22} registered {:<3}  available {:<3}  {}",
                    p["id"].as_str().unwrap_or_default(),
                    yes(&p["registered"]),
                    yes(&p["available"]),
                    p["reason"].as_str().unwrap_or_default()
                );
            }
        }
    }
    if inventory.get("services").is_some() {
        let _ = writeln!(out);
    }
}

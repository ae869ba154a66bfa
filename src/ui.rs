//! The status page: `/ui` renders the deployment as HTML on the server, so
//! it reads without JavaScript; `/events` (Server-Sent Events) sends the
//! sections that changed, rendered by the same functions, whenever a reload
//! has an outcome, a generation is swapped in, a mount's state changes or a
//! catalog changes. The page's script only puts them in place.
//!
//! The assets (`ui/page.css`, `ui/page.js`) are compiled into the binary.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use seam_engine::deploy::{Deployment, Generation, Source};
use serde_json::{Value as Json, json};

pub const CSS: &str = include_str!("ui/page.css");
pub const JS: &str = include_str!("ui/page.js");

/// The page's sections, in the order they are shown: (id, heading).
const SECTIONS: [(&str, &str); 7] = [
    ("generation", "Live generation"),
    ("outcome", "Last reload"),
    ("mounts", "Mounts"),
    ("graph", "Dependency graph"),
    ("agents", "Agents and their tools"),
    ("history", "Reload history"),
    ("services", "Services"),
];

/// Each section's inner HTML, by section id.
pub type Fragments = BTreeMap<&'static str, String>;

pub use seam_engine::render::escape_markup as escape;

/// Every section as it is now.
pub fn fragments(deployment: &Deployment) -> Fragments {
    let status = deployment.status();
    let live = deployment.live();
    let mut out = Fragments::new();
    out.insert("generation", generation(deployment, &status));
    out.insert("outcome", outcome(&status["last_reload"], &status));
    out.insert("mounts", mounts(&status["mounts"]));
    out.insert("graph", live.as_deref().map(|g| graph(g, &status["mounts"])).unwrap_or_else(|| none("No generation is live.")));
    out.insert("agents", live.as_deref().map(agents).unwrap_or_else(|| none("No generation is live.")));
    out.insert("history", history(&deployment.outcomes()));
    out.insert("services", services(&status["services"]));
    // Not a card: the composition's name in the header, swapped in like a section.
    out.insert("name", escape(&name(deployment)));
    out
}

/// A sentence for screen readers about a reload's outcome.
pub fn announcement(outcome: &seam_engine::deploy::Outcome) -> String {
    match outcome.outcome.as_str() {
        "applied" => format!("Reload applied: generation {} is live.", outcome.generation.unwrap_or_default()),
        "rejected" => format!(
            "Reload rejected with {} diagnostics; {}.",
            outcome.diagnostics.len() + outcome.diagnostics_omitted,
            match outcome.generation {
                Some(g) => format!("generation {g} keeps serving"),
                None => "nothing is serving".to_owned(),
            }
        ),
        _ => "Reload found nothing to change.".to_owned(),
    }
}

/// The composition's `name`, or "seam" when it has none.
fn name(deployment: &Deployment) -> String {
    deployment.live().and_then(|g| g.resolved.name.clone()).unwrap_or_else(|| "seam".to_owned())
}

/// The whole page, every section rendered now.
pub fn page(deployment: &Deployment) -> String {
    let fragments = fragments(deployment);
    let mut out = String::new();
    let _ = write!(
        out,
        r##"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · seam</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/page.css">
<script src="/ui/page.js" defer></script>
</head>
<body data-outcome-at="{outcome_at}">
<a class="skip" href="#main">Skip to the status</a>
<header class="top">
  <h1><span class="brand">seam</span> <span class="name" data-section="name">{title}</span></h1>
  <p class="path"><code>{path}</code></p>
  <p class="pill" id="live" role="status">static page</p>
</header>
<noscript><p class="note">This is a snapshot: reload the page to see changes. With JavaScript on, it updates itself.</p></noscript>
<p class="visually-hidden" id="announce" aria-live="polite"></p>
<main id="main">
"##,
        // Escaped already, and from the same generation as every section.
        title = fragments["name"],
        outcome_at = escape(&deployment.last_outcome().map(|o| seam_engine::runtime::timestamp(o.at)).unwrap_or_default()),
        path = escape(&std::path::absolute(deployment.path()).unwrap_or_else(|_| deployment.path().to_owned()).display().to_string()),
    );
    for (id, heading) in SECTIONS {
        let _ = write!(
            out,
            "<section class=\"card card-{id}\" id=\"{id}\" aria-labelledby=\"{id}-h\">\n<h2 id=\"{id}-h\">{heading}</h2>\n<div class=\"body\" data-section=\"{id}\">{}</div>\n</section>\n",
            fragments[id]
        );
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn none(text: &str) -> String {
    format!("<p class=\"empty\">{}</p>", escape(text))
}

/// An RFC 3339 timestamp as `2026-12-03 07:26:39 UTC`, the exact one in `datetime` and the tooltip.
fn time(value: &Json) -> String {
    let Some(t) = value.as_str() else { return "–".to_owned() };
    let shown = match t.split_once('T') {
        Some((date, rest)) => format!("{date} {} UTC", rest.split(['.', 'Z']).next().unwrap_or(rest)),
        None => t.to_owned(),
    };
    format!("<time datetime=\"{0}\" title=\"{0}\">{1}</time>", escape(t), escape(&shown))
}

fn badge(class: &str, text: &str) -> String {
    format!("<span class=\"badge {}\">{}</span>", escape(class), escape(text))
}

fn generation(deployment: &Deployment, status: &Json) -> String {
    let Some(number) = status["generation"].as_u64() else { return none("No generation is live.") };
    let files = deployment.files();
    let extends: Vec<String> = files.iter().skip(1).map(|f| format!("<code>{}</code>", escape(&f.display().to_string()))).collect();
    let mut out = format!(
        "<dl class=\"facts\">\n<div><dt>Generation</dt><dd class=\"big\" data-generation=\"{number}\">{number}</dd></div>\n\
         <div><dt>Digest</dt><dd><code>{}</code></dd></div>\n<div><dt>Loaded</dt><dd>{}</dd></div>\n",
        escape(status["digest"].as_str().unwrap_or_default()),
        time(&status["loaded_at"]),
    );
    if !extends.is_empty() {
        let _ = writeln!(out, "<div><dt>Extends</dt><dd>{}</dd></div>", extends.join(", "));
    }
    out.push_str("</dl>");
    out
}

fn outcome(last: &Json, status: &Json) -> String {
    // A reload under way is the news: the outcome below it is the one before.
    let reloading = if status["reloading_since"].is_null() {
        String::new()
    } else {
        format!("<p class=\"reloading\">A reload is under way since {}.</p>", time(&status["reloading_since"]))
    };
    let Some(kind) = last["outcome"].as_str() else { return reloading + &none("No reload yet.") };
    let mut out = format!("{reloading}<p>{} at {}", badge(&format!("outcome-{kind}"), kind), time(&last["at"]));
    match kind {
        "rejected" => {
            let _ = write!(
                out,
                "; {}.</p>",
                match status["generation"].as_u64() {
                    Some(g) => format!("generation {g} keeps serving"),
                    None => "nothing is serving".to_owned(),
                }
            );
        }
        _ => {
            let _ = write!(out, ": generation {}.</p>", last["generation"].as_u64().unwrap_or_default());
        }
    }
    let list = |key: &str, what: &str| {
        let ids: Vec<String> =
            last[key].as_array().into_iter().flatten().filter_map(Json::as_str).map(|s| format!("<code>{}</code>", escape(s))).collect();
        (!ids.is_empty()).then(|| format!("<li>{what}: {}</li>", ids.join(", ")))
    };
    let changes: Vec<String> =
        [list("built", "Built"), list("retired", "Retired"), list("reconfigured", "Changed in place")].into_iter().flatten().collect();
    if !changes.is_empty() {
        let _ = write!(out, "<ul class=\"changes\">{}</ul>", changes.join(""));
    }
    out.push_str(&diagnostics(&last["diagnostics"]));
    out
}

/// Diagnostics as `seam validate` prints them: `file:line:col: error[CODE]: message`, the line, the caret.
fn diagnostics(list: &Json) -> String {
    let items: Vec<&Json> = list.as_array().into_iter().flatten().collect();
    if items.is_empty() {
        return String::new();
    }
    let mut out = String::from("<div class=\"diagnostics\">");
    for d in items {
        let severity = d["severity"].as_str().unwrap_or("error");
        let _ = write!(
            out,
            "<pre class=\"diagnostic severity-{}\" data-code=\"{}\" data-line=\"{}\">{}</pre>",
            escape(severity),
            escape(d["code"].as_str().unwrap_or_default()),
            d["line"].as_u64().unwrap_or_default(),
            escape(d["rendered"].as_str().unwrap_or_else(|| d["message"].as_str().unwrap_or_default()).trim_end()),
        );
    }
    out.push_str("</div>");
    out
}

/// A mount's fact as a person reads it: `sampling 2, roots 1` for a map of counts, a list's items by `; `.
fn fact_text(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Object(map) => map.iter().map(|(k, v)| format!("{k} {}", fact_text(v))).collect::<Vec<_>>().join(", "),
        Json::Array(items) => items.iter().map(fact_text).collect::<Vec<_>>().join("; "),
        other => other.to_string(),
    }
}

fn mounts(mounts: &Json) -> String {
    let Some(map) = mounts.as_object().filter(|m| !m.is_empty()) else { return none("The composition mounts nothing.") };
    let mut out = String::from(
        "<div class=\"scroll\"><table class=\"mounts\">\n<thead><tr><th scope=\"col\">Mount</th><th scope=\"col\">Kind</th>\
         <th scope=\"col\">State</th><th scope=\"col\">Since</th><th scope=\"col\">Tools</th><th scope=\"col\">Detail</th>\
         <th scope=\"col\">Facts</th></tr></thead>\n<tbody>\n",
    );
    const SHOWN: [&str; 6] = ["kind", "state", "since", "detail", "tools", "required"];
    for (id, m) in map {
        let state = m["state"].as_str().unwrap_or("unknown");
        let facts: Vec<String> = m
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| !SHOWN.contains(&k.as_str()) && !v.is_null())
            .map(|(k, v)| format!("<span class=\"fact\"><span class=\"k\">{}</span> {}</span>", escape(k), escape(&fact_text(v))))
            .collect();
        let required = if m["required"].as_bool() == Some(true) { " <span class=\"tag\">required</span>" } else { "" };
        let _ = writeln!(
            out,
            "<tr data-mount=\"{id}\" data-state=\"{state}\"><th scope=\"row\"><code>{id}</code></th><td>{kind}</td>\
             <td class=\"state\">{badge}{required}</td><td>{since}</td><td class=\"num\">{tools}</td><td class=\"detail\">{detail}</td>\
             <td class=\"facts-cell\">{facts}</td></tr>",
            id = escape(id),
            state = escape(state),
            kind = escape(m["kind"].as_str().unwrap_or_default()),
            badge = badge(&format!("state-{state}"), state),
            since = time(&m["since"]),
            tools = m["tools"].as_u64().unwrap_or_default(),
            detail = escape(m["detail"].as_str().unwrap_or_default()),
            facts = facts.join(" "),
        );
    }
    out.push_str("</tbody></table></div>");
    out
}

/// The most nodes the page draws; past it, the page says how to draw the
/// graph instead. Laying out 464 nodes takes about half a second.
const DRAW_UP_TO: usize = 500;

/// The live generation's drawing, by plan digest: laid out once, on a thread
/// of its own (never on a request), then only recoloured as mounts change
/// state. `None` while it is being laid out.
static DRAWING: std::sync::Mutex<Option<(String, Option<Arc<str>>)>> = std::sync::Mutex::new(None);

/// Ticks when a drawing is ready: the page's events then send the graph.
static DRAWN: std::sync::LazyLock<tokio::sync::watch::Sender<u64>> = std::sync::LazyLock::new(|| tokio::sync::watch::channel(0).0);

pub fn subscribe_drawings() -> tokio::sync::watch::Receiver<u64> {
    DRAWN.subscribe()
}

/// The generation's drawing if it is ready; else starts laying it out (once) and returns `None`.
fn drawing(g: &Generation) -> Option<Arc<str>> {
    let mut current = DRAWING.lock().expect("drawing lock");
    if let Some((digest, svg)) = &*current
        && *digest == g.digest
    {
        return svg.clone();
    }
    *current = Some((g.digest.clone(), None));
    drop(current);
    let (plan, digest) = (g.plan.clone(), g.digest.clone());
    let spawned = std::thread::Builder::new().name("seam-graph-layout".into()).spawn(move || {
        let svg: Arc<str> = plan.to_svg(false).into();
        let mut current = DRAWING.lock().expect("drawing lock");
        if current.as_ref().is_some_and(|(d, _)| *d == digest) {
            *current = Some((digest, Some(svg)));
            drop(current);
            DRAWN.send_modify(|n| *n += 1);
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot start laying out the graph: {e}");
    }
    None
}

/// Waits, at most `patience`, for the live generation's drawing, so that a
/// page usually comes with its graph.
pub async fn wait_for_drawing(deployment: &Deployment, patience: std::time::Duration) {
    let Some(g) = deployment.live().filter(|g| g.plan.nodes().count() <= DRAW_UP_TO) else { return };
    let mut drawn = DRAWN.subscribe();
    let _ = tokio::time::timeout(patience, async {
        while drawing(&g).is_none() {
            if drawn.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
}

fn graph(g: &Generation, mounts: &Json) -> String {
    let nodes = g.plan.nodes().count();
    if nodes > DRAW_UP_TO {
        return none(&format!(
            "The graph has {nodes} nodes, more than this page draws ({DRAW_UP_TO}). `seam graph --format dot` gives it to Graphviz."
        ));
    }
    let Some(drawn) = drawing(g) else { return none("Laying out the graph…") };
    let state = |node: &str| mounts[node.strip_prefix("mount:")?]["state"].as_str().map(str::to_owned);
    let mut listed = String::new();
    for n in g.plan.nodes() {
        let state = state(&n.id).map(|s| format!(" ({})", escape(&s))).unwrap_or_default();
        let needs: Vec<String> = n.needs.iter().map(|t| format!("<code>{}</code>", escape(t))).collect();
        let needs = if needs.is_empty() { String::new() } else { format!(": needs {}", needs.join(", ")) };
        let _ = write!(listed, "<li><code>{}</code>{state}{needs}</li>", escape(&n.id));
    }
    format!(
        "<figure class=\"graph\"><div class=\"graph-scroll\" role=\"img\" aria-label=\"Dependency graph: {nodes} nodes; each points to what it needs. The same as a list follows.\">{}</div>\
         <figcaption>Each node points to what it needs. Mounts are coloured by state: \
         {} {} {} {} {}</figcaption></figure>\
         <details class=\"graph-list\" data-key=\"graph-list\"><summary>The graph as a list</summary><ul>{listed}</ul></details>",
        seam_engine::plan::with_states(&drawn, &state),
        badge("state-ready", "ready"),
        badge("state-starting", "starting"),
        badge("state-degraded", "degraded"),
        badge("state-failed", "failed"),
        badge("state-retired", "retired"),
    )
}

fn agents(g: &Generation) -> String {
    let mut out = String::new();
    for (name, agent) in &g.resolved.agents {
        let catalog = g.catalog(name).unwrap_or_default();
        let parent = agent
            .parent
            .as_deref()
            .map(|p| format!(" <span class=\"muted\">(under <code>{}</code>)</span>", escape(p)))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<details class=\"agent\" data-agent=\"{name}\" data-key=\"agent-{name}\"{open}><summary><code>{name}</code>{parent} · {count} tools</summary>",
            name = escape(name),
            open = if name == seam_engine::resolve::DEFAULT_AGENT { " open" } else { "" },
            count = catalog.len(),
        );
        if catalog.is_empty() {
            out.push_str(&none("This agent sees no tools."));
        } else {
            out.push_str(
                "<div class=\"scroll\"><table class=\"catalog\"><thead><tr><th scope=\"col\">Tool</th><th scope=\"col\">Provided by</th>\
                 <th scope=\"col\">Timeout</th><th scope=\"col\">Max output</th></tr></thead><tbody>",
            );
            for entry in &catalog {
                let source = match &entry.source {
                    Source::Mount(id) => format!("mount <code>{}</code>", escape(id)),
                    Source::Service(s) => format!("service <code>{}</code>", escape(s)),
                };
                let _ = write!(
                    out,
                    "<tr data-tool=\"{name}\"><th scope=\"row\"><code>{name}</code></th><td>{source}</td><td>{timeout}</td><td class=\"num\">{max}</td></tr>",
                    name = escape(&entry.spec.name),
                    timeout = entry.timeout.map(|t| t.to_string()).unwrap_or_else(|| "–".to_owned()),
                    max = entry.max_output_chars.map(|m| m.to_string()).unwrap_or_else(|| "–".to_owned()),
                );
            }
            out.push_str("</tbody></table></div>");
        }
        out.push_str("</details>");
    }
    out
}

fn history(outcomes: &[seam_engine::deploy::Outcome]) -> String {
    if outcomes.is_empty() {
        return none("No reload yet.");
    }
    let mut out = String::from(
        "<div class=\"scroll\"><table class=\"history\"><thead><tr><th scope=\"col\">At</th><th scope=\"col\">Outcome</th>\
         <th scope=\"col\">Generation</th><th scope=\"col\">Changes</th><th scope=\"col\">Diagnostics</th></tr></thead><tbody>",
    );
    for o in outcomes.iter().rev() {
        let j = o.to_json();
        let kind = o.outcome.as_str();
        let changes = [("built", &o.built), ("retired", &o.retired), ("changed", &o.reconfigured)]
            .iter()
            .filter(|(_, ids)| !ids.is_empty())
            .map(|(what, ids)| format!("{what} {}", ids.len()))
            .collect::<Vec<_>>()
            .join(", ");
        let diagnostics = match o.diagnostics.len() + o.diagnostics_omitted {
            0 => "–".to_owned(),
            n => format!(
                "<details data-key=\"history-{at}\"><summary>{n}</summary>{}</details>",
                self::diagnostics(&j["diagnostics"]),
                at = escape(j["at"].as_str().unwrap_or_default())
            ),
        };
        let _ = write!(
            out,
            "<tr data-outcome=\"{kind}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{diagnostics}</td></tr>",
            time(&j["at"]),
            badge(&format!("outcome-{kind}"), kind),
            o.generation.map(|g| g.to_string()).unwrap_or_else(|| "–".to_owned()),
            if changes.is_empty() { "–".to_owned() } else { escape(&changes) },
        );
    }
    out.push_str("</tbody></table></div>");
    out
}

fn services(services: &Json) -> String {
    let Some(map) = services.as_object().filter(|m| !m.is_empty()) else { return none("No service reports a view.") };
    let mut out = String::new();
    for (name, view) in map {
        let _ = write!(
            out,
            "<details class=\"service\" data-key=\"service-{name}\"><summary><code>{name}</code></summary><pre>{}</pre></details>",
            escape(&serde_json::to_string_pretty(view).unwrap_or_default()),
            name = escape(name),
        );
    }
    out
}

/// The sections of `now` that differ from `before`, as the `/events` payload.
pub fn changed(before: &Fragments, now: &Fragments) -> Option<Json> {
    let sections: serde_json::Map<String, Json> =
        now.iter().filter(|(k, v)| before.get(*k) != Some(*v)).map(|(k, v)| ((*k).to_owned(), Json::from(v.as_str()))).collect();
    (!sections.is_empty()).then(|| json!({ "sections": sections }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A reload under way is said first, above the outcome before it, and only while it runs.
    #[test]
    fn the_outcome_card_says_a_reload_is_under_way() {
        let last = json!({ "outcome": "applied", "at": "2026-12-05T13:00:00Z", "generation": 2 });
        let running = json!({ "reloading_since": "2026-12-05T13:01:02.5Z", "generation": 2 });
        let card = super::outcome(&last, &running);
        assert!(card.starts_with("<p class=\"reloading\">A reload is under way since <time"), "{card}");
        assert!(card.contains("2026-12-05 13:01:02 UTC"), "{card}");
        let idle = json!({ "reloading_since": null, "generation": 2 });
        assert!(!super::outcome(&last, &idle).contains("under way"));
        assert!(super::outcome(&json!({}), &running).contains("under way"), "before the first outcome too");
    }

    /// A mount's facts read as words, not JSON: counts by name, a list's items one after another.
    #[test]
    fn a_mount_s_facts_read_as_words() {
        let mounts =
            json!({ "m": { "kind": "mcp.stdio", "state": "ready", "asks": { "sampling": 2, "roots": 1 }, "warnings": ["a <b>", "c"] } });
        let table = super::mounts(&mounts);
        assert!(table.contains("<span class=\"k\">asks</span> sampling 2, roots 1</span>"), "{table}");
        assert!(table.contains("<span class=\"k\">warnings</span> a &lt;b&gt;; c</span>"), "{table}");
    }
}

//! The status page: `/ui` renders the deployment as HTML on the server, so
//! it reads without JavaScript; `/events` (Server-Sent Events) sends the
//! sections that changed, rendered by the same functions, whenever a reload
//! has an outcome, a generation is swapped in, a mount's state changes or a
//! catalog changes. The page's script only puts them in place.
//!
//! Sections are rendered with maud's `html!`: every text and attribute is
//! escaped by construction, and the one thing put in as it is, the plan's SVG
//! drawing, is seam's own (`plan::to_svg` escapes the ids it draws).
//!
//! The assets (`ui/page.css`, `ui/page.js`) are compiled into the binary.

use std::collections::BTreeMap;
use std::sync::Arc;

use maud::{DOCTYPE, Markup, PreEscaped, html};

use seam_engine::deploy::{Deployment, Generation, Source};
use seam_engine::status::{DeploymentStatus, Mounts};
use serde_json::{Value as Json, json};

pub const CSS: &str = include_str!("ui/page.css");
pub const JS: &str = include_str!("ui/page.js");

/// The page's sections, in the order they are shown: (id, heading).
const SECTIONS: [(&str, &str); 9] = [
    ("generation", "Live generation"),
    ("outcome", "Last reload"),
    ("mounts", "Mounts"),
    ("traffic", "Traffic, last 5 minutes"),
    ("graph", "Dependency graph"),
    ("agents", "Agents and their tools"),
    ("quotas", "Quotas"),
    ("history", "Reload history"),
    ("services", "Services"),
];

/// Each section's inner HTML, by section id.
pub type Fragments = BTreeMap<&'static str, String>;

/// How often an open page's traffic is drawn again (and sent when it changed).
pub const TRAFFIC_BEAT: std::time::Duration = std::time::Duration::from_secs(2);

/// Every section as it is now.
pub fn fragments(deployment: &Deployment, drawings: &Arc<Drawings>, traffic: &crate::traffic::Traffic) -> Fragments {
    let status = deployment.status();
    let live = deployment.live();
    let mut out = Fragments::new();
    let mut put = |id: &'static str, markup: Markup| out.insert(id, markup.into_string());
    put("generation", generation(deployment, &status));
    put("outcome", outcome(&status));
    put("mounts", mounts(&status.mounts));
    put("traffic", traffic_table(&traffic.shown()));
    put("graph", live.as_deref().map(|g| graph(g, &status.mounts, drawings)).unwrap_or_else(|| none("No generation is live.")));
    put("agents", live.as_deref().map(agents).unwrap_or_else(|| none("No generation is live.")));
    put("quotas", quotas(&status.quotas));
    put("history", history(&deployment.outcomes()));
    put("services", services(&status.services));
    // Not a card: the composition's name in the header, swapped in like a section.
    put("name", html! { (name(deployment)) });
    out
}

/// What serves after a rejected reload: the generation before it, or nothing.
fn keeps_serving(generation: Option<u64>) -> String {
    match generation {
        Some(g) => format!("generation {g} keeps serving"),
        None => "nothing is serving".to_owned(),
    }
}

/// A sentence for screen readers about a reload's outcome.
pub fn announcement(outcome: &seam_engine::outcome::Outcome) -> String {
    match outcome.outcome.as_str() {
        "applied" => format!("Reload applied: generation {} is live.", outcome.generation.unwrap_or_default()),
        "rejected" => format!(
            "Reload rejected with {} diagnostics; {}.",
            outcome.diagnostics.len() + outcome.diagnostics_omitted,
            keeps_serving(outcome.generation)
        ),
        _ => "Reload found nothing to change.".to_owned(),
    }
}

/// The composition's `name`, or "seam" when it has none.
fn name(deployment: &Deployment) -> String {
    deployment.live().and_then(|g| g.resolved.name.clone()).unwrap_or_else(|| "seam".to_owned())
}

/// The whole page, every section rendered now.
pub fn page(deployment: &Deployment, drawings: &Arc<Drawings>, traffic: &crate::traffic::Traffic) -> String {
    let fragments = fragments(deployment, drawings, traffic);
    let outcome_at = deployment.last_outcome().map(|o| seam_engine::runtime::timestamp(o.at)).unwrap_or_default();
    let path = std::path::absolute(deployment.path()).unwrap_or_else(|_| deployment.path().to_owned());
    // Rendered already, and from the same generation as every section.
    let title = PreEscaped(fragments["name"].as_str());
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · seam" }
                link rel="icon" href="data:,";
                link rel="stylesheet" href="/ui/page.css";
                script src="/ui/page.js" defer {}
            }
            body data-outcome-at=(outcome_at) {
                a.skip href="#main" { "Skip to the status" }
                header.top {
                    h1 { span.brand { "seam" } " " span.name data-section="name" { (title) } }
                    p.path { code { (path.display()) } }
                    p.pill #live role="status" { "static page" }
                }
                noscript { p.note { "This is a snapshot: reload the page to see changes. With JavaScript on, it updates itself." } }
                p.visually-hidden #announce aria-live="polite" {}
                main #main {
                    @for (id, heading) in SECTIONS {
                        section class={ "card card-" (id) } id=(id) aria-labelledby={ (id) "-h" } {
                            h2 id={ (id) "-h" } { (heading) }
                            div.body data-section=(id) { (PreEscaped(fragments[id].as_str())) }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

fn none(text: &str) -> Markup {
    html! { p.empty { (text) } }
}

/// `–` for what is not set.
fn or_dash(value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| v.to_string())
}

/// Items with `separator` between them.
fn joined<T>(items: impl IntoIterator<Item = T>, separator: &str, each: impl Fn(T) -> Markup) -> Markup {
    html! {
        @for (i, item) in items.into_iter().enumerate() {
            @if i > 0 { (separator) }
            (each(item))
        }
    }
}

fn code(text: &str) -> Markup {
    html! { code { (text) } }
}

/// An RFC 3339 timestamp as `2026-12-03 07:26:39 UTC`, the exact one in `datetime` and the tooltip.
fn time(value: Option<&str>) -> Markup {
    let Some(t) = value else { return html! { "–" } };
    let shown = match t.split_once('T') {
        Some((date, rest)) => format!("{date} {} UTC", rest.split(['.', 'Z']).next().unwrap_or(rest)),
        None => t.to_owned(),
    };
    html! { time datetime=(t) title=(t) { (shown) } }
}

fn badge(class: &str, text: &str) -> Markup {
    html! { span class={ "badge " (class) } { (text) } }
}

fn generation(deployment: &Deployment, status: &DeploymentStatus) -> Markup {
    let Some(number) = status.generation else { return none("No generation is live.") };
    let files = deployment.files();
    html! {
        dl.facts {
            div { dt { "Generation" } dd.big data-generation=(number) { (number) } }
            div { dt { "Digest" } dd { (code(status.digest.as_deref().unwrap_or_default())) } }
            div { dt { "Loaded" } dd { (time(status.loaded_at.as_deref())) } }
            @if files.len() > 1 {
                div { dt { "Extends" } dd { (joined(files.iter().skip(1), ", ", |f| code(&f.display().to_string()))) } }
            }
        }
    }
}

fn outcome(status: &DeploymentStatus) -> Markup {
    html! {
        // A reload under way is the news: the outcome below it is the one before.
        @if let Some(since) = &status.reloading_since {
            p.reloading { "A reload is under way since " (time(Some(since))) "." }
        }
        @if let Some(last) = &status.last_reload {
            @let kind = last.outcome.as_str();
            @let changes = [("Built", &last.built), ("Retired", &last.retired), ("Changed in place", &last.reconfigured)];
            @let at = seam_engine::runtime::timestamp(last.at);
            p {
                (badge(&format!("outcome-{kind}"), kind)) " at " (time(Some(&at)))
                @if kind == "rejected" { "; " (keeps_serving(status.generation)) "." }
                @else { ": generation " (last.generation.unwrap_or_default()) "." }
            }
            @if changes.iter().any(|(_, ids)| !ids.is_empty()) {
                ul.changes { @for (what, ids) in changes.iter().filter(|(_, ids)| !ids.is_empty()) {
                    li { (what) ": " (joined(ids.iter(), ", ", |id| code(id))) }
                } }
            }
            (diagnostics(&last.diagnostics))
        } @else {
            (none("No reload yet."))
        }
    }
}

/// Diagnostics as `seam validate` prints them: `file:line:col: error[CODE]: message`, the line, the caret.
fn diagnostics(items: &[Json]) -> Markup {
    html! {
        @if !items.is_empty() {
            div.diagnostics {
                @for d in items {
                    pre class={ "diagnostic severity-" (d["severity"].as_str().unwrap_or("error")) }
                        data-code=(d["code"].as_str().unwrap_or_default())
                        data-line=(d["line"].as_u64().unwrap_or_default()) {
                        (d["rendered"].as_str().unwrap_or_else(|| d["message"].as_str().unwrap_or_default()).trim_end())
                    }
                }
            }
        }
    }
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

fn mounts(mounts: &Mounts) -> Markup {
    if mounts.is_empty() {
        return none("The composition mounts nothing.");
    }
    html! {
        div.scroll { table.mounts {
            thead { tr {
                th scope="col" { "Mount" } th scope="col" { "Kind" } th scope="col" { "State" } th scope="col" { "Since" }
                th scope="col" { "Tools" } th scope="col" { "Detail" } th scope="col" { "Facts" }
            } }
            tbody {
                @for (id, m) in mounts {
                    @let state = m.state.as_str();
                    @let offers = m.offers.iter().flat_map(|o| [("prompts", o.prompts), ("resources", o.resources), ("templates", o.templates)]);
                    @let offers = offers.map(|(k, n)| (k.to_owned(), Json::from(n)));
                    @let facts = offers.chain(m.facts.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())));
                    @let warnings = (!m.warnings.is_empty()).then(|| ("warnings".to_owned(), Json::from(m.warnings.clone())));
                    tr data-mount=(id) data-state=(state) {
                        th scope="row" { (code(id)) }
                        td { (m.kind) }
                        td.state {
                            (badge(&format!("state-{state}"), state))
                            @if m.required { " " span.tag { "required" } }
                        }
                        td { (time(Some(&m.since))) }
                        td.num { (m.tools) }
                        td.detail {
                            @if let Some(c) = m.code { (code(c)) " " }
                            (m.detail.as_deref().unwrap_or_default())
                        }
                        td.facts-cell { (joined(facts.chain(warnings), " ", |(k, v)| html! { span.fact { span.k { (k) } " " (fact_text(&v)) } })) }
                    }
                }
            }
        } }
    }
}

/// The most nodes the page draws; past it, the page says how to draw the
/// graph instead. Laying out 464 nodes takes about half a second.
const DRAW_UP_TO: usize = 500;

/// The live generation's drawing, by plan digest: laid out once, on a thread
/// of its own (never on a request), then only recoloured as mounts change
/// state. One per served front end (the HTTP app's), shared by its pages.
#[derive(Default)]
pub struct Drawings {
    /// The digest drawn, and its drawing; `None` while it is being laid out.
    current: std::sync::Mutex<Option<(String, Option<Arc<str>>)>>,
    /// Ticks when a drawing is ready: the page's events then send the graph.
    drawn: tokio::sync::watch::Sender<u64>,
}

impl Drawings {
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.drawn.subscribe()
    }

    /// The generation's drawing if it is ready; else starts laying it out (once) and returns `None`.
    fn of(self: &Arc<Self>, g: &Generation) -> Option<Arc<str>> {
        let mut current = self.current.lock().expect("drawing lock");
        if let Some((digest, svg)) = &*current
            && *digest == g.digest
        {
            return svg.clone();
        }
        *current = Some((g.digest.clone(), None));
        drop(current);
        let (plan, digest) = (g.plan.clone(), g.digest.clone());
        let drawings = Arc::downgrade(self);
        let spawned = std::thread::Builder::new().name("seam-graph-layout".into()).spawn(move || {
            let svg: Arc<str> = plan.to_svg(false).into();
            let Some(drawings) = drawings.upgrade() else { return };
            let mut current = drawings.current.lock().expect("drawing lock");
            if current.as_ref().is_some_and(|(d, _)| *d == digest) {
                *current = Some((digest, Some(svg)));
                drop(current);
                drawings.drawn.send_modify(|n| *n += 1);
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start laying out the graph: {e}");
        }
        None
    }

    /// Waits, at most `patience`, for the live generation's drawing, so that a
    /// page usually comes with its graph.
    pub async fn wait(self: &Arc<Self>, deployment: &Deployment, patience: std::time::Duration) {
        let Some(g) = deployment.live().filter(|g| g.plan.nodes().count() <= DRAW_UP_TO) else { return };
        let mut drawn = self.drawn.subscribe();
        let _ = tokio::time::timeout(patience, async {
            while self.of(&g).is_none() {
                if drawn.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }
}

fn graph(g: &Generation, mounts: &Mounts, drawings: &Arc<Drawings>) -> Markup {
    let nodes = g.plan.nodes().count();
    if nodes > DRAW_UP_TO {
        return none(&format!(
            "The graph has {nodes} nodes, more than this page draws ({DRAW_UP_TO}). `seam graph --format dot` gives it to Graphviz."
        ));
    }
    let Some(drawn) = drawings.of(g) else { return none("Laying out the graph…") };
    let state = |node: &str| mounts.get(node.strip_prefix("mount:")?).map(|m| m.state.as_str().to_owned());
    html! {
        figure.graph {
            div.graph-scroll role="img"
                aria-label={ "Dependency graph: " (nodes) " nodes; each points to what it needs. The same as a list follows." } {
                // The plan's own SVG drawing, made by seam from escaped ids.
                (PreEscaped(seam_engine::plan::with_states(&drawn, &state)))
            }
            figcaption {
                "Each node points to what it needs. Mounts are coloured by state: "
                (badge("state-ready", "ready")) " " (badge("state-starting", "starting")) " " (badge("state-degraded", "degraded")) " "
                (badge("state-failed", "failed")) " " (badge("state-retired", "retired"))
            }
        }
        details.graph-list data-key="graph-list" {
            summary { "The graph as a list" }
            ul {
                @for n in g.plan.nodes() {
                    li {
                        (code(&n.id))
                        @if let Some(s) = state(&n.id) { " (" (s) ")" }
                        @if !n.needs.is_empty() { ": needs " (joined(n.needs.iter(), ", ", |t| code(t))) }
                    }
                }
            }
        }
    }
}

fn agents(g: &Generation) -> Markup {
    html! {
        @for (name, agent) in &g.resolved.agents {
            @let catalog = g.catalog(name).unwrap_or_default();
            @let cost = g.catalog_cost(name);
            details.agent data-agent=(name) data-key={ "agent-" (name) } open[name == seam_engine::resolve::DEFAULT_AGENT] {
                summary {
                    (code(name))
                    @if let Some(parent) = agent.parent.as_deref() { " " span.muted { "(under " (code(parent)) ")" } }
                    " · " (catalog.len()) " tools"
                    @if let Some(cost) = cost {
                        " · " span.catalog-cost data-tokens=(cost.tokens) data-tokens-all=(cost.tokens_all) {
                            "list ≈ " (cost.tokens) " tokens"
                            @if cost.deferred > 0 { " (" (cost.deferred) " deferred; " (cost.tokens_all) " listing all)" }
                        }
                    }
                }
                @if catalog.is_empty() {
                    (none("This agent sees no tools."))
                } @else {
                    div.scroll { table.catalog {
                        thead { tr {
                            th scope="col" { "Tool" } th scope="col" { "Provided by" } th scope="col" { "Timeout" } th scope="col" { "Max output" }
                        } }
                        tbody {
                            @for entry in &catalog {
                                tr data-tool=(entry.spec.name) data-deferred[entry.deferral != seam_engine::disclosure::Deferral::Never] {
                                    th scope="row" {
                                        (code(&entry.spec.name))
                                        @if entry.deferral != seam_engine::disclosure::Deferral::Never { " " span.muted { "deferred" } }
                                    }
                                    td {
                                        @match &entry.source {
                                            Source::Mount(id) => { "mount " (code(id)) }
                                            Source::Service(s) => { "service " (code(s)) }
                                            Source::Seam => { "seam" }
                                        }
                                    }
                                    td { (or_dash(entry.timeout)) }
                                    td.num { (or_dash(entry.max_output_chars)) }
                                }
                            }
                        }
                    } }
                }
            }
        }
    }
}

fn history(outcomes: &[seam_engine::outcome::Outcome]) -> Markup {
    if outcomes.is_empty() {
        return none("No reload yet.");
    }
    html! {
        div.scroll { table.history {
            thead { tr {
                th scope="col" { "At" } th scope="col" { "Outcome" } th scope="col" { "Generation" } th scope="col" { "Changes" }
                th scope="col" { "Diagnostics" }
            } }
            tbody {
                @for o in outcomes.iter().rev() {
                    @let at = seam_engine::runtime::timestamp(o.at);
                    @let kind = o.outcome.as_str();
                    @let changes = [("built", &o.built), ("retired", &o.retired), ("changed", &o.reconfigured)]
                        .iter()
                        .filter(|(_, ids)| !ids.is_empty())
                        .map(|(what, ids)| format!("{what} {}", ids.len()))
                        .collect::<Vec<_>>()
                        .join(", ");
                    @let count = o.diagnostics.len() + o.diagnostics_omitted;
                    tr data-outcome=(kind) {
                        td { (time(Some(&at))) }
                        td { (badge(&format!("outcome-{kind}"), kind)) }
                        td.num { (or_dash(o.generation)) }
                        td { @if changes.is_empty() { "–" } @else { (changes) } }
                        td {
                            @if count == 0 { "–" } @else {
                                details data-key={ "history-" (at) } {
                                    summary { (count) }
                                    (diagnostics(&o.diagnostics))
                                }
                            }
                        }
                    }
                }
            }
        } }
    }
}

/// A duration as the traffic table shows it: ms, with a decimal below 10 ms.
fn millis(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 { format!("{ms:.1} ms") } else { format!("{ms:.0} ms") }
}

/// Each agent's tool calls of the last five minutes, per mount (or service) and tool,
/// with their rate, errors, quantiles and last errors.
fn traffic_table(rows: &[crate::traffic::Shown]) -> Markup {
    if rows.is_empty() {
        return none("No tool was called in the last 5 minutes.");
    }
    html! {
        table {
            thead { tr {
                th { "Agent" } th { "Mount" } th { "Tool" } th.num { "Calls/s" } th.num { "Calls" } th.num { "Errors" }
                th.num { "p50" } th.num { "p99" } th { "Last errors" }
            } }
            tbody {
                @for row in rows {
                    tr data-key={ "traffic-" (row.agent) "-" (row.source) "-" (row.tool) } data-agent=(row.agent) data-tool=(row.tool)
                        data-calls=(row.calls) data-errors=(row.errors) {
                        td { (code(&row.agent)) }
                        td { (code(&row.source)) }
                        td { (code(&row.tool)) }
                        td.num { (format!("{:.2}", row.calls_per_second)) }
                        td.num { (row.calls) }
                        td.num { @if row.errors > 0 { span.bad { (row.errors) } } @else { "0" } }
                        td.num { (millis(row.p50)) }
                        td.num { (millis(row.p99)) }
                        td {
                            @if row.last_errors.is_empty() { "–" } @else {
                                details data-key={ "errors-" (row.agent) "-" (row.source) "-" (row.tool) } {
                                    summary { (code(&row.last_errors[0].code)) }
                                    ul.errors { @for e in &row.last_errors {
                                        li data-code=(e.code) {
                                            (time(Some(&seam_engine::runtime::timestamp(e.at)))) " " (code(&e.code)) " " (e.message)
                                        }
                                    } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What each agent's requests use of its `quota` rules now: a row per rule.
fn quotas(quotas: &BTreeMap<String, Vec<Json>>) -> Markup {
    if quotas.is_empty() {
        return none("No agent has quota rules.");
    }
    let left = |v: &Json| match v.as_i64() {
        Some(n) => html! { (n) },
        None => html! { "–" },
    };
    html! {
        table {
            thead { tr { th { "Agent" } th { "Rule" } th { "Calls left" } th { "Running" } th { "Output bytes left" } } }
            tbody {
                @for (agent, rules) in quotas {
                    @for rule in rules {
                        tr data-key={ "quota-" (agent) "-" (rule["rule"].as_str().unwrap_or_default()) } {
                            td { (code(agent)) }
                            td { (code(rule["rule"].as_str().unwrap_or_default())) }
                            td { (left(&rule["calls_left"])) }
                            td { (rule["running"]) @if let Some(max) = rule["concurrent"].as_u64() { " of " (max) } }
                            td { (left(&rule["output_bytes_left"])) }
                        }
                    }
                }
            }
        }
    }
}

fn services(services: &serde_json::Map<String, Json>) -> Markup {
    if services.is_empty() {
        return none("No service reports a view.");
    }
    html! {
        @for (name, view) in services {
            details.service data-key={ "service-" (name) } {
                summary { (code(name)) }
                pre { (serde_json::to_string_pretty(view).unwrap_or_default()) }
            }
        }
    }
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

    fn status(reloading_since: Option<&str>, last_reload: Option<seam_engine::outcome::Outcome>) -> super::DeploymentStatus {
        super::DeploymentStatus {
            generation: Some(2),
            digest: None,
            loaded_at: None,
            calls_in_flight: None,
            last_reload,
            reloading_since: reloading_since.map(str::to_owned),
            mounts: Default::default(),
            services: Default::default(),
            quotas: Default::default(),
            catalogs: Default::default(),
            audit: None,
        }
    }

    /// A reload under way is said first, above the outcome before it, and only while it runs.
    #[test]
    fn the_outcome_card_says_a_reload_is_under_way() {
        let last = seam_engine::outcome::Outcome::new(seam_engine::outcome::OutcomeKind::Applied, Some(2), Vec::new());
        let card = super::outcome(&status(Some("2026-12-05T13:01:02.5Z"), Some(last.clone()))).into_string();
        assert!(card.starts_with("<p class=\"reloading\">A reload is under way since <time"), "{card}");
        assert!(card.contains("2026-12-05 13:01:02 UTC"), "{card}");
        assert!(!super::outcome(&status(None, Some(last))).into_string().contains("under way"));
        assert!(
            super::outcome(&status(Some("2026-12-05T13:01:02.5Z"), None)).into_string().contains("under way"),
            "before the first outcome too"
        );
    }

    /// A mount's facts read as words, not JSON: counts by name, a list's items one after
    /// another; its code before its detail.
    #[test]
    fn a_mount_s_facts_read_as_words() {
        let mount = seam_engine::status::MountStatus {
            kind: "mcp.stdio",
            state: seam_engine::runtime::State::Ready,
            since: "2026-12-05T13:00:00Z".into(),
            code: Some("MCP_OAUTH_LOGIN_NEEDED"),
            detail: Some("run `seam login`".into()),
            tools: 1,
            required: false,
            offers: None,
            facts: json!({ "asks": { "sampling": 2, "roots": 1 } }).as_object().unwrap().clone(),
            warnings: vec!["a <b>".into(), "c".into()],
        };
        let table = super::mounts(&[("m".to_owned(), mount)].into_iter().collect()).into_string();
        assert!(table.contains("<span class=\"k\">asks</span> sampling 2, roots 1</span>"), "{table}");
        assert!(table.contains("<span class=\"k\">warnings</span> a &lt;b&gt;; c</span>"), "{table}");
        assert!(table.contains("<code>MCP_OAUTH_LOGIN_NEEDED</code> run `seam login`"), "the code, then the detail: {table}");
    }
}

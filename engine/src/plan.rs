//! The plan: a DAG of services, mounts, tools and agents, where an edge is
//! "needs". Each node carries a digest of its canonical resolved config and of
//! the ids it needs, so reordering keys or editing comments changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::{Value as Json, json};

use crate::quota::QuotaDoc;
use crate::resolve::Resolved;
use crate::surface::Exposure;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeKind {
    Service,
    Mount,
    Tool,
    Agent,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Service => "service",
            NodeKind::Mount => "mount",
            NodeKind::Tool => "tool",
            NodeKind::Agent => "agent",
        }
    }
}

#[derive(Clone, Debug)]
pub struct PlanNode {
    pub id: String,
    pub kind: NodeKind,
    /// The canonical config this node is built from.
    pub config: Json,
    /// Ids this node needs, sorted.
    pub needs: Vec<String>,
    pub digest: String,
}

/// The dependency graph of one composition.
#[derive(Clone)]
pub struct Plan {
    pub graph: DiGraph<PlanNode, ()>,
    index: BTreeMap<String, NodeIndex>,
    /// Build order: dependencies first, ties broken by id.
    pub order: Vec<String>,
}

/// JSON with object keys sorted, the form digests are taken over.
pub fn canonical_json(value: &Json) -> String {
    fn write(v: &Json, out: &mut String) {
        match v {
            Json::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Json::String(k.clone()).to_string());
                    out.push(':');
                    write(&o[k], out);
                }
                out.push('}');
            }
            Json::Array(a) => {
                out.push('[');
                for (i, item) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn digest(kind: NodeKind, config: &Json, needs: &[String]) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(kind.as_str().as_bytes());
    hasher.update(&[0]);
    hasher.update(canonical_json(config).as_bytes());
    for n in needs {
        hasher.update(&[0]);
        hasher.update(n.as_bytes());
    }
    hasher.finalize().to_hex()[..16].to_owned()
}

impl Plan {
    pub fn build(resolved: &Resolved) -> Plan {
        let mut nodes: BTreeMap<String, (NodeKind, Json, BTreeSet<String>)> = BTreeMap::new();
        for (name, config) in &resolved.services {
            nodes.insert(format!("service:{name}"), (NodeKind::Service, config.clone(), BTreeSet::new()));
        }
        for (id, mount) in &resolved.mounts {
            let Some(r) = &mount.resolved else { continue };
            let needs = r.needs.iter().map(|s| format!("service:{s}")).collect();
            nodes.insert(
                format!("mount:{id}"),
                (NodeKind::Mount, json!({ "kind": mount.kind.name(), "config": r.config.to_json() }), needs),
            );
        }
        for (agent_name, agent) in &resolved.agents {
            let mut needs: BTreeSet<String> = BTreeSet::new();
            if let Some(p) = &agent.parent {
                needs.insert(format!("agent:{p}"));
            }
            let mut fixed = serde_json::Map::new();
            for (tool, settings) in &agent.tools.fixed {
                fixed.insert((*tool).to_owned(), settings.clone().unwrap_or(Json::Null));
                if settings.is_none() {
                    continue;
                }
                let surface = resolved
                    .surfaces
                    .iter()
                    .find(|s| s.tools().iter().any(|t| t.name() == *tool))
                    .expect("a fixed tool belongs to a surface");
                let service = format!("service:{}", surface.service());
                let tool_id = format!("tool:{tool}");
                let entry = nodes.entry(tool_id.clone()).or_insert_with(|| (NodeKind::Tool, json!({ "tool": tool }), BTreeSet::new()));
                entry.2.insert(service.clone());
                let exposes = surface.tools().iter().find(|t| t.name() == *tool).map(|t| t.exposes()).unwrap_or_default();
                let providers: Vec<String> = resolved
                    .mounts
                    .iter()
                    .filter(|(_, m)| m.resolved.is_some() && exposes.iter().any(|r| m.provides(r)))
                    .map(|(id, _)| format!("mount:{id}"))
                    .collect();
                let service_entry = nodes.entry(service).or_insert_with(|| (NodeKind::Service, Json::Null, BTreeSet::new()));
                service_entry.2.extend(providers);
                needs.insert(tool_id);
            }
            for id in resolved.visible_dynamic_mounts(agent_name) {
                let prefix = match &resolved.mounts[id].resolved.as_ref().expect("visible mounts are resolved").exposure {
                    Exposure::Dynamic { prefix, .. } => prefix.clone(),
                    Exposure::Tool(_) => continue,
                };
                let tool_id = format!("tool:{prefix}*");
                nodes
                    .entry(tool_id.clone())
                    .or_insert_with(|| (NodeKind::Tool, json!({ "tools": format!("{prefix}*") }), [format!("mount:{id}")].into()));
                needs.insert(tool_id);
            }
            let dynamic: Vec<Json> = agent.tools.rules().map(|r| json!({ "pattern": r.pattern, "value": r.value() })).collect();
            // Scope is a set: the order mounts are written in is not part of the agent.
            let scope: BTreeSet<&String> = agent.scope.iter().collect();
            // Budgets are in every agent: MCP tools inherit them at call time.
            // Its quota rules as written (a changed rule counts afresh), and its disclosure.
            let quota: Vec<&QuotaDoc> = agent.quota.iter().map(|rule| &rule.doc).collect();
            let config = json!({
                "scope": scope,
                "tools": fixed,
                "dynamic": dynamic,
                "offers": agent.offers.to_json(),
                "budgets": resolved.budgets,
                "quota": quota,
                "disclosure": agent.disclosure.written(),
            });
            nodes.insert(format!("agent:{agent_name}"), (NodeKind::Agent, config, needs));
        }

        let mut graph = DiGraph::new();
        let mut index = BTreeMap::new();
        for (id, (kind, config, needs)) in &nodes {
            let needs: Vec<String> = needs.iter().filter(|n| nodes.contains_key(*n)).cloned().collect();
            let digest = digest(*kind, config, &needs);
            let i = graph.add_node(PlanNode { id: id.clone(), kind: *kind, config: config.clone(), needs, digest });
            index.insert(id.clone(), i);
        }
        for i in graph.node_indices().collect::<Vec<_>>() {
            for n in graph[i].needs.clone() {
                graph.add_edge(i, index[&n], ());
            }
        }
        let order = build_order(&graph);
        Plan { graph, index, order }
    }

    /// The composition's digest: over every node's id and digest, so it changes exactly when some node does.
    pub fn digest(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        for node in self.nodes() {
            hasher.update(node.id.as_bytes());
            hasher.update(&[0]);
            hasher.update(node.digest.as_bytes());
            hasher.update(&[0]);
        }
        hasher.finalize().to_hex()[..16].to_owned()
    }

    pub fn node(&self, id: &str) -> Option<&PlanNode> {
        self.index.get(id).map(|i| &self.graph[*i])
    }

    pub fn nodes(&self) -> impl Iterator<Item = &PlanNode> {
        self.index.values().map(|i| &self.graph[*i])
    }

    /// Ids of the nodes that need `id`, directly or through others.
    pub fn dependents(&self, id: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let Some(start) = self.index.get(id) else { return out };
        let mut stack = vec![*start];
        while let Some(i) = stack.pop() {
            for d in self.graph.neighbors_directed(i, petgraph::Direction::Incoming) {
                if out.insert(self.graph[d].id.clone()) {
                    stack.push(d);
                }
            }
        }
        out
    }

    pub fn to_json(&self) -> Json {
        let nodes: Vec<Json> = self.nodes().map(|n| json!({ "id": n.id, "kind": n.kind.as_str(), "digest": n.digest })).collect();
        let mut edges: Vec<(String, String)> = self.nodes().flat_map(|n| n.needs.iter().map(|t| (n.id.clone(), t.clone()))).collect();
        edges.sort();
        let edges: Vec<Json> = edges.into_iter().map(|(from, to)| json!({ "from": from, "to": to })).collect();
        json!({ "nodes": nodes, "edges": edges, "order": self.order })
    }

    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph seam {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n");
        for n in self.nodes() {
            let shape = match n.kind {
                NodeKind::Service => "box",
                NodeKind::Mount => "component",
                NodeKind::Tool => "ellipse",
                NodeKind::Agent => "house",
            };
            let _ = writeln!(out, "  {:?} [shape={shape}, label={:?}];", n.id, format!("{}\n{}", n.id, n.digest));
        }
        for n in self.nodes() {
            for t in &n.needs {
                let _ = writeln!(out, "  {:?} -> {:?};", n.id, t);
            }
        }
        out.push_str("}\n");
        out
    }

    /// The graph laid out and drawn as SVG, in process (layout-rs). Each node
    /// is a `<g class="node kind-…" data-node="…">` filled by its kind, so a
    /// page can restyle nodes (`with_states`) and a test can count them.
    /// Edges point from a node to what it needs. With `minimise_crossings`
    /// layout-rs also reorders nodes to cross fewer edges: a better drawing,
    /// but its time grows fast and unevenly with the graph (1.7 s for a
    /// 58-node plan with a chain of six agents, minutes past 150 nodes), so
    /// only a command a person waits for asks for it, and only for small
    /// plans (`MINIMISE_CROSSINGS_UP_TO`).
    pub fn to_svg(&self, minimise_crossings: bool) -> String {
        use layout::backends::svg::SVGWriter;
        use layout::core::base::Orientation;
        use layout::core::color::Color;
        use layout::core::geometry::Point;
        use layout::core::style::StyleAttr;
        use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
        use layout::topo::layout::VisualGraph;

        let mut graph = VisualGraph::new(Orientation::TopToBottom);
        let mut handles = BTreeMap::new();
        for n in self.nodes() {
            let fill = match n.kind {
                NodeKind::Service => 0xe7f5ff,
                NodeKind::Tool => 0xf3f0ff,
                NodeKind::Agent => 0xfff9db,
                NodeKind::Mount => 0xf8f9fa,
            };
            let look = StyleAttr::new(Color::fast("#495057"), 1, Some(Color::new((fill << 8) | 0xff)), 6, 13);
            let class = format!("class=\"node kind-{}\" data-node=\"{}\"", n.kind.as_str(), crate::render::escape_markup(&n.id));
            let size = Point::new(8.0 * n.id.chars().count() as f64 + 24.0, 30.0);
            let element = Element::create_with_properties(ShapeKind::new_box(&n.id), look, Orientation::TopToBottom, size, class);
            handles.insert(n.id.as_str(), graph.add_node(element));
        }
        for n in self.nodes() {
            for t in &n.needs {
                graph.add_edge(Arrow::simple(""), handles[n.id.as_str()], handles[t.as_str()]);
            }
        }
        let mut svg = SVGWriter::new();
        if !handles.is_empty() {
            graph.do_it(false, !minimise_crossings, false, &mut svg);
        }
        // Without the XML declaration, so that the drawing can sit inside a page as it is.
        let drawn = svg.finalize().trim_start_matches(|c| c != '>').trim_start_matches('>').trim_start().to_owned();
        fit_to_nodes(drawn)
    }

    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("flowchart LR\n");
        let name: BTreeMap<&str, String> = self.nodes().enumerate().map(|(i, n)| (n.id.as_str(), format!("n{i}"))).collect();
        for n in self.nodes() {
            let (open, close) = match n.kind {
                NodeKind::Service => ("[", "]"),
                NodeKind::Mount => ("[[", "]]"),
                NodeKind::Tool => ("([", "])"),
                NodeKind::Agent => ("{{", "}}"),
            };
            let _ = writeln!(out, "  {}{open}\"{}\"{close}", name[n.id.as_str()], n.id.replace('"', "#quot;"));
        }
        for n in self.nodes() {
            for t in &n.needs {
                let _ = writeln!(out, "  {} --> {}", name[n.id.as_str()], name[t.as_str()]);
            }
        }
        out
    }
}

/// Kahn's algorithm over "needs" edges, ready nodes taken in id order.
fn build_order(graph: &DiGraph<PlanNode, ()>) -> Vec<String> {
    let mut remaining: BTreeMap<NodeIndex, usize> =
        graph.node_indices().map(|i| (i, graph.neighbors_directed(i, petgraph::Direction::Outgoing).count())).collect();
    let mut ready: BTreeSet<(String, NodeIndex)> =
        remaining.iter().filter(|(_, c)| **c == 0).map(|(i, _)| (graph[*i].id.clone(), *i)).collect();
    let mut order = Vec::with_capacity(graph.node_count());
    while let Some((id, i)) = ready.pop_first() {
        order.push(id);
        for d in graph.neighbors_directed(i, petgraph::Direction::Incoming) {
            let c = remaining.get_mut(&d).expect("every node is counted");
            *c -= 1;
            if *c == 0 {
                ready.insert((graph[d].id.clone(), d));
            }
        }
    }
    debug_assert_eq!(order.len(), graph.node_count(), "the plan graph is acyclic by construction");
    order
}

/// The most nodes for which `seam graph --format svg` minimises edge crossings.
pub const MINIMISE_CROSSINGS_UP_TO: usize = 60;

/// A drawing of `Plan::to_svg` with each node's runtime state added as a
/// class (`state-ready`, `state-failed`…), for a page to colour; one pass
/// over the drawing, no new layout.
pub fn with_states(svg: &str, state: &dyn Fn(&str) -> Option<String>) -> String {
    const NODE: &str = "<g class=\"node kind-";
    let mut out = String::with_capacity(svg.len() + 256);
    let mut rest = svg;
    while let Some(at) = rest.find(NODE) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let tag = &tail[..tail.find('>').unwrap_or(tail.len())];
        let id = tag.split("data-node=\"").nth(1).and_then(|v| v.split('"').next());
        let state = id.and_then(state);
        match &state {
            Some(s) => out.push_str(&tag.replacen("\" data-node=", &format!(" state-{}\" data-node=", crate::render::escape_markup(s)), 1)),
            None => out.push_str(tag),
        }
        // A title names the node and its state, for a pointer's tooltip and for assistive technology.
        let after = &tail[tag.len()..];
        match (id, after.strip_prefix('>')) {
            (Some(id), Some(inside)) => {
                let state = state.map(|s| format!(": {}", crate::render::escape_markup(&s))).unwrap_or_default();
                let _ = write!(out, "><title>{id}{state}</title>");
                rest = inside;
            }
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// Sets an SVG's size to the extent of what it draws (plus a margin):
/// layout-rs reserves height for every label as if its text ran downwards,
/// which leaves the drawing mostly empty below the graph. The extent is that
/// of the boxes and of every point of every edge's path (a curve lies within
/// its control points).
fn fit_to_nodes(svg: String) -> String {
    let number = |s: &str, name: &str| -> Option<f64> {
        let start = s.find(&format!(" {name}=\""))? + name.len() + 3;
        s[start..].split('"').next()?.trim().parse().ok()
    };
    let (mut width, mut height) = (0f64, 0f64);
    for rect in svg.split("<rect").skip(1) {
        let rect = rect.split('>').next().unwrap_or_default();
        if let (Some(x), Some(y), Some(w), Some(h)) = (number(rect, "x"), number(rect, "y"), number(rect, "width"), number(rect, "height"))
        {
            width = width.max(x + w);
            height = height.max(y + h);
        }
    }
    for path in svg.split(" d=\"").skip(1) {
        let d = path.split('"').next().unwrap_or_default();
        let numbers: Vec<f64> = d.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).filter_map(|n| n.parse().ok()).collect();
        for point in numbers.chunks_exact(2) {
            width = width.max(point[0]);
            height = height.max(point[1]);
        }
    }
    let Some(end) = svg.find('>') else { return svg };
    if width <= 0.0 || height <= 0.0 || !svg.starts_with("<svg ") {
        return svg;
    }
    let (width, height) = ((width + 12.0).ceil(), (height + 12.0).ceil());
    format!(
        "<svg width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">{}",
        &svg[end + 1..]
    )
}

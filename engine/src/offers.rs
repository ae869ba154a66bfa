//! What a mount offers beyond tools, and how a request for it finds its mount.
//!
//! An MCP mount may offer prompts, resources, resource templates and
//! instructions. They travel as their MCP JSON definitions, like tools. The
//! engine decides which agent sees which, and routes a request to one mount:
//!
//! - a prompt by its final name (`mcp__<server>__<prompt>`), through the
//!   mount's name prefix, as a tool is;
//! - a resource by its URI, which seam never rewrites (links inside content
//!   and `ui://` resources must stay valid). The rules, in order: the first
//!   visible mount, in the composition's mount order, that lists the URI;
//!   else the visible template that matches it with the most literal
//!   characters (ties: mount order); else the mount one of whose tools names
//!   it as its MCP Apps view (`_meta.ui.resourceUri`); else the mount whose
//!   tool result carried the URI last (a `resource_link`, an embedded resource), if the agent
//!   sees it; else the resource is unknown. A URI or template two mounts list
//!   goes to the first: the others' are shadowed, never chosen by arrival.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value as Json};

/// A prompt, a resource or a resource template a mount offers: `key` is what
/// clients name it by (a prompt's final name, a resource's URI, a template's
/// `uriTemplate`), `definition` its MCP JSON as clients are shown it.
#[derive(Clone, Debug, PartialEq)]
pub struct Offered {
    pub key: String,
    pub definition: Arc<Map<String, Json>>,
}

/// Everything a mount offers beyond tools, each list sorted by key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offers {
    pub prompts: Vec<Offered>,
    pub resources: Vec<Offered>,
    pub templates: Vec<Offered>,
    /// The server's instructions, as it gave them.
    pub instructions: Option<Arc<str>>,
    /// The extensions the server declares (`capabilities.extensions`, e.g. MCP Apps'
    /// `io.modelcontextprotocol/ui`), each with its settings.
    pub extensions: Map<String, Json>,
    /// The views its tools name (`_meta.ui.resourceUri`), sorted: readable even when not listed.
    pub views: Vec<String>,
    /// The skills its server serves over MCP's skills extension, for a mount that
    /// imports them (`skills: { import: true }`), by name.
    pub skills: Arc<Vec<ImportedSkill>>,
}

/// A skill a mount's server serves over MCP's skills extension (SEP-2640), as the
/// server listed it. The Skills surface adds it to the `skill` tool's catalog and
/// loads its body only when it is invoked, checked against `digest` and `size`.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedSkill {
    /// Its name, which its URI's last folder spells too.
    pub name: String,
    /// The server's URI of its `SKILL.md`.
    pub uri: String,
    /// The `sha256:` digest and the size of `SKILL.md` in the server's manifest.
    pub digest: String,
    pub size: u64,
    /// Its frontmatter as the server listed it (`name`, `description`, and the rest).
    pub frontmatter: Map<String, Json>,
    /// Its manifest as the server listed it, SKILL.md included.
    pub files: Vec<ImportedFile>,
}

/// One file of an imported skill's manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedFile {
    /// The server's URI of it.
    pub uri: String,
    /// Its `sha256:` digest and size.
    pub digest: String,
    pub size: u64,
}

/// A request to a mount (or, a call, to a service's tool): what the front end relays.
#[derive(Clone, Debug)]
pub enum MountRequest {
    /// `tools/call`, by the tool's final name.
    CallTool { name: String, arguments: Map<String, Json> },
    /// `prompts/get`, by the prompt's final name.
    GetPrompt { name: String, arguments: Map<String, Json> },
    /// `resources/read`.
    ReadResource { uri: String },
    /// `completion/complete`, with its `ref` as the client wrote it (a prompt by
    /// its final name).
    Complete { params: Map<String, Json> },
    /// A request about a task the mount's server made (SEP-2663), its params as the
    /// client wrote them but for `taskId`, which is the server's own
    /// (`Deployment::task` looks it up).
    Task { method: TaskMethod, params: Map<String, Json> },
}

impl MountRequest {
    /// The MCP method it is.
    pub fn method(&self) -> &'static str {
        match self {
            MountRequest::CallTool { .. } => "tools/call",
            MountRequest::GetPrompt { .. } => "prompts/get",
            MountRequest::ReadResource { .. } => "resources/read",
            MountRequest::Complete { .. } => "completion/complete",
            MountRequest::Task { method, .. } => method.name(),
        }
    }

    /// What it names: the tool, the prompt, the URI, the reference completed (its name or
    /// URI), the task (its id as the client gave it, until it is routed).
    pub fn target(&self) -> &str {
        match self {
            MountRequest::CallTool { name, .. } | MountRequest::GetPrompt { name, .. } => name,
            MountRequest::ReadResource { uri } => uri,
            MountRequest::Complete { params } => {
                let reference = params.get("ref").and_then(Json::as_object);
                reference.and_then(|r| r.get("name").or_else(|| r.get("uri"))).and_then(Json::as_str).unwrap_or_default()
            }
            MountRequest::Task { params, .. } => params.get("taskId").and_then(Json::as_str).unwrap_or_default(),
        }
    }

    /// Its arguments: a tool's or a prompt's; a completion's or a task request's params; none for a read.
    pub fn arguments(&self) -> &Map<String, Json> {
        static NONE: std::sync::LazyLock<Map<String, Json>> = std::sync::LazyLock::new(Map::new);
        match self {
            MountRequest::CallTool { arguments, .. } | MountRequest::GetPrompt { arguments, .. } => arguments,
            MountRequest::Complete { params } | MountRequest::Task { params, .. } => params,
            MountRequest::ReadResource { .. } => &NONE,
        }
    }

    /// Its arguments, to rewrite (`arguments`); `None` for a read, which has none.
    pub fn arguments_mut(&mut self) -> Option<&mut Map<String, Json>> {
        match self {
            MountRequest::CallTool { arguments, .. } | MountRequest::GetPrompt { arguments, .. } => Some(arguments),
            MountRequest::Complete { params } | MountRequest::Task { params, .. } => Some(params),
            MountRequest::ReadResource { .. } => None,
        }
    }
}

/// The URIs of the resources a result's content blocks link to (`resource_link`) or embed (`resource`).
pub fn linked_uris(content: &[Json]) -> Vec<String> {
    content
        .iter()
        .filter_map(|block| match block.get("type").and_then(Json::as_str) {
            Some("resource_link") => block.get("uri").and_then(Json::as_str),
            Some("resource") => block.get("resource").and_then(|r| r.get("uri")).and_then(Json::as_str),
            _ => None,
        })
        .map(str::to_owned)
        .collect()
}

/// The requests about a task (SEP-2663) that seam passes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskMethod {
    /// `tasks/get`: the task's state, its result once it has one.
    Get,
    /// `tasks/update`: the client's answers to the task's input requests.
    Update,
    /// `tasks/cancel`.
    Cancel,
}

impl TaskMethod {
    pub fn name(self) -> &'static str {
        match self {
            TaskMethod::Get => "tasks/get",
            TaskMethod::Update => "tasks/update",
            TaskMethod::Cancel => "tasks/cancel",
        }
    }
}

/// Why a request for a prompt, a resource or a completion got no result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// Nothing the agent sees answers to that name or URI.
    #[error("{0}")]
    Unknown(String),
    /// The mount could not be asked (disconnected, timed out).
    #[error("{0}")]
    Unavailable(String),
    /// The mount's server answered with a JSON-RPC error: relayed as it is.
    #[error("{message}")]
    Upstream { code: i32, message: String, data: Option<Json> },
    /// seam did not put a server's question to its client, to keep a bound
    /// (`INPUT_CALLS_EXCEEDED`): the server is told why.
    #[error("{0}")]
    Refused(String),
    /// A rule of the composition refused it (a quota): an invalid-request error whose
    /// `data` carries the code and what the caller may do (when to retry).
    #[error("{message}")]
    Denied { message: String, data: Json },
    /// The client did not answer a question within `serve.input_timeout`; it was withdrawn.
    #[error("{0}")]
    TimedOut(String),
}

/// How much of one mount's instructions an agent's instructions quote, and how much in all (characters).
pub const MOUNT_INSTRUCTIONS_CHARS: u64 = 2048;
pub const INSTRUCTIONS_CHARS: u64 = 16 << 10;

/// An agent's instructions from its mounts' `(id, instructions)`, in mount
/// order: each under `## <id>`, at most [`MOUNT_INSTRUCTIONS_CHARS`] each and
/// [`INSTRUCTIONS_CHARS`] in all, a cut marked; `None` when none has any.
pub fn instructions<'a>(mounts: impl Iterator<Item = (&'a str, &'a str)>) -> Option<String> {
    const CUT: &str = "\n[seam: instructions cut]";
    let sections: Vec<String> = mounts
        .filter(|(_, text)| !text.trim().is_empty())
        .map(|(id, text)| {
            let mut text = text.trim().to_owned();
            crate::text::cap_with_footer(&mut text, MOUNT_INSTRUCTIONS_CHARS, CUT);
            format!("## {id}\n\n{text}")
        })
        .collect();
    if sections.is_empty() {
        return None;
    }
    let mut all = sections.join("\n\n");
    crate::text::cap_with_footer(&mut all, INSTRUCTIONS_CHARS, CUT);
    Some(all)
}

/// How many URIs seen in tool results a deployment remembers for one agent, newest kept.
pub const REMEMBERED_LINKS: usize = 4096;

/// URIs that mounts' tool results carried to one agent (a caller's state,
/// `crate::chain::CallerState`), each with the mount that gave it last; the oldest are
/// forgotten past [`REMEMBERED_LINKS`]. Each agent has its own: one agent's links never
/// route another's reads, and one agent's many links push out only its own.
#[derive(Default)]
pub struct Links(Mutex<AgentLinks>);

/// The mount of each URI, and the URIs oldest first.
#[derive(Default)]
struct AgentLinks {
    by_uri: HashMap<String, String>,
    order: VecDeque<String>,
}

impl Links {
    /// Remembers every URI a tool result of mount `mount` carries.
    pub fn learn(&self, mount: &str, uris: Vec<String>) {
        if uris.is_empty() {
            return;
        }
        let mut links = self.0.lock().expect("links lock");
        let AgentLinks { by_uri, order } = &mut *links;
        for uri in uris {
            if by_uri.insert(uri.clone(), mount.to_owned()).is_none() {
                order.push_back(uri);
            }
        }
        while order.len() > REMEMBERED_LINKS {
            if let Some(old) = order.pop_front() {
                by_uri.remove(&old);
            }
        }
    }

    /// The mount whose result carried `uri` last.
    pub fn mount_of(&self, uri: &str) -> Option<String> {
        self.0.lock().expect("links lock").by_uri.get(uri).cloned()
    }
}

/// Whether `uri` matches RFC 6570 template `template` (levels 1 to 3, the
/// forms MCP servers use), and if so how many of the template's characters
/// are literal: the more, the more specific the match.
pub fn template_match(template: &str, uri: &str) -> Option<usize> {
    let parts = parse_template(template)?;
    let literal = parts.iter().map(|p| if let Part::Literal(l) = p { l.len() } else { 0 }).sum();
    matches(&parts, uri).then_some(literal)
}

#[derive(Debug)]
enum Part<'t> {
    Literal(&'t str),
    /// An expression, by its operator (`\0` for none).
    Expression(char),
}

fn parse_template(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(0) => {
                let end = rest.find('}')?;
                let body = &rest[1..end];
                let operator = body.chars().next().filter(|c| "+#./;?&".contains(*c)).unwrap_or('\0');
                parts.push(Part::Expression(operator));
                rest = &rest[end + 1..];
            }
            Some(at) => {
                parts.push(Part::Literal(&rest[..at]));
                rest = &rest[at..];
            }
            None => {
                parts.push(Part::Literal(rest));
                rest = "";
            }
        }
    }
    Some(parts)
}

/// Matches `parts` against `uri` in one sweep per part: the set of positions
/// the parts so far can end at, carried forward. An expression may expand to
/// nothing (an undefined variable), or to its operator's first character and
/// then characters it may hold. Cost: parts × characters.
fn matches(parts: &[Part<'_>], uri: &str) -> bool {
    let chars: Vec<char> = uri.chars().collect();
    let mut ends = vec![false; chars.len() + 1];
    ends[0] = true;
    for part in parts {
        let mut next = vec![false; chars.len() + 1];
        match part {
            Part::Literal(l) => {
                let literal: Vec<char> = l.chars().collect();
                for (at, _) in ends.iter().enumerate().filter(|(_, e)| **e) {
                    if chars[at..].starts_with(&literal) {
                        next[at + literal.len()] = true;
                    }
                }
            }
            Part::Expression(op) => {
                // What one expansion may hold: simple strings stop at the reserved characters that separate parts.
                let allowed = |c: char| match op {
                    '+' | '#' => true,
                    '?' | '&' => c != '#',
                    '/' | '.' | ';' => c == *op || !matches!(c, '/' | '?' | '#' | '&'),
                    _ => !matches!(c, '/' | '?' | '#' | '&'),
                };
                let starts_with_operator = matches!(op, '#' | '.' | '/' | ';' | '?' | '&');
                // `inside[i]`: an expansion that has begun can end at `i`.
                let mut inside = false;
                for i in 0..=chars.len() {
                    if i > 0 {
                        let c = chars[i - 1];
                        let begins = if starts_with_operator { ends[i - 1] && c == *op } else { ends[i - 1] && allowed(c) };
                        inside = begins || (inside && allowed(c));
                    }
                    next[i] = ends[i] || inside;
                }
            }
        }
        ends = next;
    }
    ends[chars.len()]
}

/// Where a request of one agent goes: the mounts it sees, in the
/// composition's mount order, each with what it offers.
pub struct Routes<'g> {
    pub mounts: Vec<(&'g str, Arc<Offers>)>,
}

impl Routes<'_> {
    /// The mount that serves `uri` to the agent whose routes these are and whose `links`
    /// are given, by the rules at the top of this module: a link comes last, so that no
    /// link re-routes a URI a mount the agent sees lists, templates or names as a view.
    pub fn resource(&self, uri: &str, links: &Links) -> Option<&str> {
        if let Some((id, _)) = self.mounts.iter().find(|(_, o)| o.resources.binary_search_by(|r| r.key.as_str().cmp(uri)).is_ok()) {
            return Some(id);
        }
        let mut best: Option<(&str, usize)> = None;
        for (id, offers) in &self.mounts {
            for template in &offers.templates {
                if let Some(literal) = template_match(&template.key, uri)
                    && best.is_none_or(|(_, b)| literal > b)
                {
                    best = Some((id, literal));
                }
            }
        }
        if let Some((id, _)) = best {
            return Some(id);
        }
        if let Some((id, _)) = self.mounts.iter().find(|(_, o)| o.views.binary_search_by(|v| v.as_str().cmp(uri)).is_ok()) {
            return Some(id);
        }
        let learned = links.mount_of(uri)?;
        self.mounts.iter().map(|(id, _)| *id).find(|id| **id == learned)
    }

    /// The extensions the agent's mounts declare, the first mount's settings kept for each.
    pub fn extensions(&self) -> Map<String, Json> {
        let mut all = Map::new();
        for (_, offers) in &self.mounts {
            for (name, settings) in &offers.extensions {
                all.entry(name.clone()).or_insert_with(|| settings.clone());
            }
        }
        all
    }

    /// The mount that listed template `template` first.
    pub fn template(&self, template: &str) -> Option<&str> {
        self.mounts.iter().find(|(_, o)| o.templates.binary_search_by(|t| t.key.as_str().cmp(template)).is_ok()).map(|(id, _)| *id)
    }

    /// Every resource or template the agent sees, the first of each key kept (by mount order), sorted by key.
    pub fn listed(&self, kind: impl Fn(&Offers) -> &Vec<Offered>) -> Vec<Offered> {
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<Offered> =
            self.mounts.iter().flat_map(|(_, o)| kind(o).iter()).filter(|item| seen.insert(item.key.as_str())).cloned().collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    /// The prompts the agent sees, sorted by name. A name two mounts list
    /// (mounts of raw names: prefixed names cannot meet) is listed by neither,
    /// as a tool name is: a `prompts/get` could not tell which was meant.
    pub fn prompts(&self) -> Vec<Offered> {
        let mut all: Vec<Offered> = self.mounts.iter().flat_map(|(_, o)| o.prompts.iter().cloned()).collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        let twice: std::collections::HashSet<String> = all.windows(2).filter(|w| w[0].key == w[1].key).map(|w| w[0].key.clone()).collect();
        all.retain(|p| !twice.contains(&p.key));
        all
    }

    /// What each mount lists that an earlier mount lists too: `(mount, key, the mount it yields to)`.
    pub fn shadowed(&self) -> Vec<(String, String, String)> {
        let mut first: HashMap<&str, &str> = HashMap::new();
        let mut out = Vec::new();
        for (id, offers) in &self.mounts {
            for item in offers.resources.iter().chain(&offers.templates) {
                match first.get(item.key.as_str()) {
                    Some(owner) if owner != id => out.push((id.to_string(), item.key.clone(), owner.to_string())),
                    Some(_) => {}
                    None => {
                        first.insert(&item.key, id);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offered(key: &str) -> Offered {
        Offered { key: key.to_owned(), definition: Arc::default() }
    }

    fn offers(resources: &[&str], templates: &[&str]) -> Arc<Offers> {
        let mut o = Offers {
            resources: resources.iter().map(|k| offered(k)).collect(),
            templates: templates.iter().map(|k| offered(k)).collect(),
            ..Offers::default()
        };
        o.resources.sort_by(|a, b| a.key.cmp(&b.key));
        o.templates.sort_by(|a, b| a.key.cmp(&b.key));
        Arc::new(o)
    }

    #[test]
    fn templates_match_the_uris_they_expand_to_and_only_those() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert_eq!(template_match(t, "demo://resource/dynamic/text/12"), Some(t.len() - "{resourceId}".len()));
        assert_eq!(template_match(t, "demo://resource/dynamic/blob/12"), None);
        assert_eq!(template_match(t, "demo://resource/dynamic/text/1/2"), None, "a simple expansion holds no `/`");
        assert_eq!(template_match("file:///{+path}", "file:///a/b/c.txt"), Some("file:///".len()));
        assert!(template_match("repo://{owner}/{name}", "repo://me/seam").is_some());
        assert!(template_match("repo://{owner}/{name}", "repo://me").is_none());
        assert!(template_match("search://items{?q,page}", "search://items?q=x&page=2").is_some());
        assert!(template_match("search://items{?q,page}", "search://items").is_some());
        assert!(template_match("docs://{/path*}", "docs:///a/b").is_some());
        assert!(template_match("broken://{x", "broken://y").is_none(), "an unclosed expression matches nothing");
        let many = "m://".to_owned() + &"{a}".repeat(64) + "!";
        assert!(template_match(&many, &("m://".to_owned() + &"x".repeat(10_000))).is_none(), "no exponential search");
    }

    #[test]
    fn a_uri_goes_to_its_lister_then_the_most_literal_template_then_the_link_it_came_in() {
        let routes = Routes {
            mounts: vec![
                ("a", offers(&["x://one"], &["x://{anything}"])),
                ("b", offers(&["x://one", "y://two"], &["x://items/{id}"])),
                ("c", offers(&[], &[])),
                ("d", Arc::new(Offers { views: vec!["ui://app/view.html".to_owned()], ..Offers::default() })),
            ],
        };
        assert_eq!(routes.resource("ui://app/view.html", &Links::default()), Some("d"), "a view a tool names");
        let (links, others) = (Links::default(), Links::default());
        assert_eq!(routes.resource("x://one", &links), Some("a"), "listed by two: the first in mount order");
        assert_eq!(routes.resource("y://two", &links), Some("b"));
        assert_eq!(routes.resource("x://items/7", &links), Some("b"), "the template with more literal characters");
        assert_eq!(routes.resource("x://other", &links), Some("a"));
        assert_eq!(routes.resource("z://made-by-a-tool", &links), None);
        links.learn("c", linked_uris(&[json!({ "type": "resource_link", "uri": "z://made-by-a-tool", "name": "n" })]));
        assert_eq!(routes.resource("z://made-by-a-tool", &links), Some("c"));
        others.learn("b", linked_uris(&[json!({ "type": "resource_link", "uri": "x://one", "name": "n" })]));
        others.learn("b", linked_uris(&[json!({ "type": "resource_link", "uri": "z://made-by-a-tool", "name": "n" })]));
        assert_eq!(routes.resource("x://one", &others), Some("a"), "a link never re-routes a listed URI");
        assert_eq!(routes.resource("z://made-by-a-tool", &links), Some("c"), "nor another agent's link");
        links.learn("gone", linked_uris(&[json!({ "type": "resource", "resource": { "uri": "z://elsewhere", "text": "" } })]));
        assert_eq!(routes.resource("z://elsewhere", &links), None, "a link of a mount the agent does not see");
        assert_eq!(routes.shadowed(), vec![("b".to_owned(), "x://one".to_owned(), "a".to_owned())]);
        assert_eq!(routes.listed(|o| &o.resources).iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["x://one", "y://two"]);
        let prompts = |names: &[&str]| Arc::new(Offers { prompts: names.iter().map(|n| offered(n)).collect(), ..Offers::default() });
        let raw = Routes { mounts: vec![("a", prompts(&["review", "shared"])), ("b", prompts(&["shared", "summarize"]))] };
        let names: Vec<String> = raw.prompts().into_iter().map(|p| p.key).collect();
        assert_eq!(names, ["review", "summarize"], "a prompt name two mounts list is listed by neither");
    }

    #[test]
    fn instructions_are_bounded_per_mount_and_in_all() {
        assert_eq!(instructions([("a", "  "), ("b", "")].into_iter()), None);
        let at_limit = "x".repeat(MOUNT_INSTRUCTIONS_CHARS as usize);
        let one_over = "y".repeat(MOUNT_INSTRUCTIONS_CHARS as usize + 1);
        let both = instructions([("a", at_limit.as_str()), ("b", one_over.as_str())].into_iter()).unwrap();
        let (a, b) = both.split_once("\n\n## b\n\n").unwrap();
        assert_eq!(a, format!("## a\n\n{at_limit}"), "at the limit a mount's instructions are whole");
        assert_eq!(b.chars().count() as u64, MOUNT_INSTRUCTIONS_CHARS, "one past it they are cut to it");
        assert!(b.ends_with("[seam: instructions cut]"));
        let many: Vec<(String, String)> = (0..20).map(|i| (format!("m{i}"), "z".repeat(2000))).collect();
        let all = instructions(many.iter().map(|(id, text)| (id.as_str(), text.as_str()))).unwrap();
        assert_eq!(all.chars().count() as u64, INSTRUCTIONS_CHARS, "past the total, the whole is cut to it");
        assert!(all.starts_with("## m0\n\n") && all.ends_with("[seam: instructions cut]"));
        // Sections that come to the total exactly are whole; one character more, and the whole is cut.
        let total = |extra: usize| {
            let mut texts: Vec<(String, String)> = (0..7).map(|i| (format!("m{i}"), "w".repeat(2040))).collect();
            // Seven sections of `## mN\n\n` and 2,040 characters, seven `\n\n` joins (eight sections), the last section's head.
            let used = 7 * (7 + 2040) + 7 * 2 + 7;
            texts.push(("m7".into(), "v".repeat(INSTRUCTIONS_CHARS as usize - used + extra)));
            instructions(texts.iter().map(|(id, text)| (id.as_str(), text.as_str()))).unwrap()
        };
        let exact = total(0);
        assert_eq!(exact.chars().count() as u64, INSTRUCTIONS_CHARS);
        assert!(exact.ends_with('v'), "at the total nothing is cut");
        let over = total(1);
        assert_eq!(over.chars().count() as u64, INSTRUCTIONS_CHARS);
        assert!(over.ends_with("[seam: instructions cut]"), "one past it the whole is cut");
    }

    #[test]
    fn links_are_remembered_up_to_their_bound_and_the_oldest_go_first() {
        let links = Links::default();
        let link = |i: usize| json!({ "type": "resource_link", "uri": format!("u://{i}"), "name": "n" });
        let at_limit: Vec<Json> = (0..REMEMBERED_LINKS).map(link).collect();
        links.learn("m", linked_uris(&at_limit));
        assert_eq!(links.mount_of("u://0").as_deref(), Some("m"), "at the bound every link is kept");
        links.learn("m", linked_uris(&[link(REMEMBERED_LINKS)]));
        assert_eq!(links.mount_of("u://0"), None, "one past it, the oldest is forgotten");
        assert_eq!(links.mount_of("u://1").as_deref(), Some("m"));
        assert_eq!(links.mount_of(&format!("u://{REMEMBERED_LINKS}")).as_deref(), Some("m"));
    }
}

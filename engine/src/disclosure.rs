//! Progressive disclosure (`disclosure`): an agent's deferred tools are not listed but
//! found, by seam's `tool_search`, and called through `tool_call` or by their names.
//!
//! What is deferred is decided per catalog entry (`Deferral`), from the mount's mode or
//! else the agent's, and the agent's `always` globs. The search is BM25 (the `bm25`
//! crate's scorer, k1 1.2, b 0.75) over one document per deferred tool: its own name,
//! its server's id twice (requests name the server more often than the tool), its
//! title and description, and its parameters' names and descriptions. Words are
//! lower-cased, split at `_`, `-` and case changes, English stop words dropped, the
//! rest stemmed (Snowball's English), and the words of one group of [`SYNONYMS`] made
//! one. A query is read without the values it carries (quoted text, URLs, paths:
//! `intent`). Ties are broken by name, so a query always gets the same answer from
//! the same catalog. What each choice bought is measured in `bench/tool-search`.

use std::sync::Arc;

use globset::{GlobSet, GlobSetBuilder};
use serde_json::{Map, Value as Json, json};

use crate::model::{Disclosure, DisclosureAbove, DisclosureMode, DisclosureRules};

/// seam's search over an agent's deferred tools.
pub const TOOL_SEARCH: &str = "tool_search";
/// seam's call of a tool a search found, by name.
pub const TOOL_CALL: &str = "tool_call";

/// Whether `name` is one of seam's two tools.
pub fn is_seam_tool(name: &str) -> bool {
    name == TOOL_SEARCH || name == TOOL_CALL
}

/// `auto`'s size without `above`: past this many estimated tokens of tool definitions,
/// a catalog is searched rather than listed. A search costs a turn and leaves its
/// definitions in the conversation, so the longer the conversation the larger the
/// catalog it pays for: past this size it pays from the first request through a
/// twenty-request conversation, raw and with the catalog cached, as `bench/tool-search`
/// measures it (BENCHMARKS.md, Part 9). A composition whose conversations are short
/// gains from a lower `above`.
pub const AUTO_ABOVE_TOKENS: u64 = 24_000;

/// The longest query `tool_search` takes, in characters.
pub const MAX_QUERY_CHARS: usize = 1_000;

/// The most distinct words of a query that are scored, and the most characters of a
/// tool's definition that are indexed: scoring a document costs its words times the
/// query's, and definitions come from servers, so both are bounded.
const MAX_QUERY_WORDS: usize = 32;
const MAX_DOCUMENT_CHARS: usize = 4_000;

/// An agent's `disclosure`, resolved.
#[derive(Clone, Debug)]
pub struct Rules {
    /// As written, for the plan's digest (`None`: nothing written, `all`).
    written: Option<Disclosure>,
    pub mode: DisclosureMode,
    always: Option<GlobSet>,
    pub max_results: u32,
    above: Option<DisclosureAbove>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules { written: None, mode: DisclosureMode::All, always: None, max_results: DisclosureRules::DEFAULT_MAX_RESULTS, above: None }
    }
}

impl Rules {
    /// `disclosure` as written; a glob that does not parse is given back, by its place in `always`.
    pub fn new(written: &Disclosure) -> Result<Rules, (usize, String)> {
        let rules = match written {
            Disclosure::Mode(mode) => {
                let max_results = DisclosureRules::DEFAULT_MAX_RESULTS;
                return Ok(Rules { written: Some(written.clone()), mode: *mode, always: None, max_results, above: None });
            }
            Disclosure::Rules(rules) => rules,
        };
        let mut globs = GlobSetBuilder::new();
        for (i, glob) in rules.always.iter().enumerate() {
            globs.add(globset::Glob::new(glob).map_err(|e| (i, format!("`{glob}` is not a valid glob: {e}")))?);
        }
        // Each glob parsed; the set can still be too large to build.
        let always = match rules.always.is_empty() {
            true => None,
            false => Some(globs.build().map_err(|e| (0, format!("`always`'s globs cannot be matched together: {e}")))?),
        };
        Ok(Rules { written: Some(written.clone()), mode: rules.mode, always, max_results: rules.max_results, above: rules.above })
    }

    /// `disclosure` as written, `None` when nothing was.
    pub fn written(&self) -> Option<&Disclosure> {
        self.written.as_ref()
    }

    /// How a mount's tool, named `rule_name` by agents' rules, is listed under these
    /// rules, the mount's own mode (`mount`) deciding over the agent's.
    pub fn deferral(&self, mount: Option<DisclosureMode>, rule_name: &str) -> Deferral {
        if self.always.as_ref().is_some_and(|always| always.is_match(rule_name)) {
            return Deferral::Never;
        }
        match mount.unwrap_or(self.mode) {
            DisclosureMode::All => Deferral::Never,
            DisclosureMode::Search => Deferral::Search,
            DisclosureMode::Auto => Deferral::Auto,
        }
    }

    /// Whether `auto` searches a catalog of `tools` tools whose definitions cost `tokens`.
    pub fn auto_searches(&self, tools: usize, tokens: usize) -> bool {
        match self.above {
            None => tokens as u64 > AUTO_ABOVE_TOKENS,
            Some(DisclosureAbove { tools: above_tools, tokens: above_tokens }) => {
                above_tools.is_some_and(|n| tools > n as usize) || above_tokens.is_some_and(|n| tokens as u64 > n)
            }
        }
    }

    /// Whether `auto` needs the catalog's tokens counted to decide.
    pub fn auto_counts_tokens(&self) -> bool {
        self.above.is_none_or(|above| above.tokens.is_some())
    }
}

/// How one catalog entry is listed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Deferral {
    /// Listed: a fixed tool, a tool `always` names, a mount's under `all`.
    #[default]
    Never,
    /// Deferred.
    Search,
    /// Deferred when the agent's catalog is past `auto`'s size.
    Auto,
}

/// The two tools an agent with deferred tools is listed, for deferred tools of these
/// servers (mount ids, sorted): their definitions change only when the servers do.
pub fn tools(servers: &[&str], max_results: u32) -> [Map<String, Json>; 2] {
    let search = json!({
        "name": TOOL_SEARCH,
        "title": "Find tools",
        "description": format!(
            "Finds tools that are not listed here, by what they do, among those of these servers: {}. \
             Returns the best matches' full definitions. Call a found tool with `{TOOL_CALL}`, or by its name.",
            servers.join(", ")
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": { "type": "string", "description": "What the tool should do, in a few words.", "minLength": 1, "maxLength": MAX_QUERY_CHARS },
                "max_results": { "type": "integer", "description": "How many definitions to return at most.", "minimum": 1, "maximum": max_results },
            },
            "required": ["query"],
            "additionalProperties": false,
        },
        "annotations": { "readOnlyHint": true, "openWorldHint": false },
    });
    let call = json!({
        "name": TOOL_CALL,
        "title": "Call a found tool",
        "description": format!("Calls a tool that `{TOOL_SEARCH}` found: its name, and its arguments as its definition describes them."),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "The tool's name, as its definition gives it." },
                "arguments": { "type": "object", "description": "The tool's arguments." },
            },
            "required": ["name"],
            "additionalProperties": false,
        },
    });
    let object = |v: Json| match v {
        Json::Object(o) => o,
        _ => unreachable!("a literal object"),
    };
    [object(search), object(call)]
}

/// A `tool_call`'s arguments as the call they stand for: the tool's name and its
/// arguments, or why they are not one.
pub fn unwrap_call(arguments: &Map<String, Json>) -> Result<(String, Map<String, Json>), String> {
    let name = match arguments.get("name") {
        Some(Json::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(format!("`{TOOL_CALL}` needs `name`, the name of a tool `{TOOL_SEARCH}` found")),
    };
    if name == TOOL_CALL || name == TOOL_SEARCH {
        return Err(format!("`{TOOL_CALL}` calls a found tool, not `{name}`"));
    }
    if let Some(extra) = arguments.keys().find(|key| !matches!(key.as_str(), "name" | "arguments")) {
        return Err(format!("`{TOOL_CALL}` takes `name` and `arguments`, not `{}`", crate::runtime::echoed(extra)));
    }
    match arguments.get("arguments") {
        None | Some(Json::Null) => Ok((name, Map::new())),
        Some(Json::Object(inner)) => Ok((name, inner.clone())),
        Some(_) => Err(format!("`{TOOL_CALL}`'s `arguments` must be an object")),
    }
}

/// A `tool_search`'s arguments: the query and how many results, within `max_results`.
pub fn search_request(arguments: &Map<String, Json>, max_results: u32) -> Result<(String, usize), String> {
    let query = match arguments.get("query") {
        Some(Json::String(query)) if !query.trim().is_empty() => query,
        _ => return Err(format!("`{TOOL_SEARCH}` needs `query`: what the tool should do, in a few words")),
    };
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(format!("the query has {chars} characters; `{TOOL_SEARCH}` takes at most {MAX_QUERY_CHARS}"));
    }
    if let Some(extra) = arguments.keys().find(|key| !matches!(key.as_str(), "query" | "max_results")) {
        return Err(format!("`{TOOL_SEARCH}` takes `query` and `max_results`, not `{}`", crate::runtime::echoed(extra)));
    }
    let wanted = match arguments.get("max_results") {
        None | Some(Json::Null) => max_results as u64,
        Some(n) => match n.as_u64() {
            Some(n) if (1..=max_results as u64).contains(&n) => n,
            _ => return Err(format!("`max_results` must be a whole number from 1 to {max_results}")),
        },
    };
    Ok((query.clone(), wanted as usize))
}

/// Words requests and tools' descriptions use for one thing, each group read as its
/// first: general words of what tools do and what they act on (no tool's or server's
/// name), in their base forms; inflections meet through the stemmer.
const SYNONYMS: &[&[&str]] = &[
    &["navigate", "open", "visit", "go", "load", "browse"],
    &["fetch", "grab", "download", "retrieve"],
    &["read", "show", "display", "print", "view", "see", "content"],
    &["list", "enumerate"],
    &["create", "make", "new", "start"],
    &["delete", "remove", "erase", "drop", "discard"],
    &["edit", "change", "modify", "update", "alter"],
    &["search", "find", "lookup", "locate", "query", "grep"],
    &["directory", "folder", "dir"],
    &["write", "save", "store"],
    &["move", "rename", "relocate"],
    &["memory", "remember", "memorize", "recall", "knowledge"],
    &["screenshot", "picture", "capture"],
    &["click", "press", "tap"],
    &["type", "enter", "fill"],
    &["repository", "repo"],
    &["page", "site", "website", "webpage"],
];

/// Splits text into the words the index compares: lower-cased, split at anything not
/// a letter or digit and where lower case turns upper (`readFile`), stop words dropped,
/// stemmed, and each synonym read as its group's first word.
#[derive(Clone)]
struct Words {
    stemmer: Arc<rust_stemmers::Stemmer>,
    stop: &'static [&'static str],
    /// Each synonym's stem, with its group's first word's.
    synonyms: Arc<std::collections::HashMap<String, String>>,
}

impl Words {
    fn new() -> Words {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let mut synonyms = std::collections::HashMap::new();
        for group in SYNONYMS {
            let first = stemmer.stem(group[0]).into_owned();
            for word in *group {
                synonyms.insert(stemmer.stem(word).into_owned(), first.clone());
            }
        }
        Words { stemmer: Arc::new(stemmer), stop: stop_words::get("en"), synonyms: Arc::new(synonyms) }
    }
}

impl bm25::Tokenizer for Words {
    fn tokenize(&self, text: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut previous_lower = false;
        for c in text.chars() {
            let boundary = !c.is_alphanumeric() || (c.is_uppercase() && previous_lower);
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            if c.is_alphanumeric() {
                word.extend(c.to_lowercase());
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
        }
        if !word.is_empty() {
            words.push(word);
        }
        words
            .into_iter()
            .filter(|w| !self.stop.contains(&w.as_str()))
            .map(|w| {
                let stem = self.stemmer.stem(&w);
                self.synonyms.get(stem.as_ref()).cloned().unwrap_or_else(|| stem.into_owned())
            })
            .collect()
    }
}

/// What a query asks for, without the values it carries: text in quotes or backticks,
/// and words that are URLs or paths, are a call's arguments, not words for what a tool
/// does. An apostrophe within a word (`what's`) quotes nothing, nor does a quote never
/// closed; a query that is all values is read whole.
fn intent(query: &str) -> String {
    let mut unquoted = String::with_capacity(query.len());
    // The quote open, and what it holds so far (kept if it never closes).
    let mut quote: Option<(char, String)> = None;
    let mut previous = ' ';
    for c in query.chars() {
        match &mut quote {
            Some((q, _)) if c == *q => quote = None,
            Some((_, held)) => held.push(c),
            None if matches!(c, '\'' | '"' | '`') && !previous.is_alphanumeric() => quote = Some((c, String::new())),
            None => unquoted.push(c),
        }
        previous = c;
    }
    if let Some((_, held)) = quote {
        unquoted.push(' ');
        unquoted.push_str(&held);
    }
    let is_value = |word: &str| {
        let word = word.trim_end_matches(['.', ',', ';', ':', '?', '!', ')']);
        word.contains("://") || word.contains('/') || word.contains('.')
    };
    let words: Vec<&str> = unquoted.split_whitespace().filter(|word| !is_value(word)).collect();
    if words.iter().all(|w| !w.chars().any(char::is_alphanumeric)) {
        return query.to_owned();
    }
    words.join(" ")
}

/// One deferred tool as the index holds it.
#[derive(Clone, Debug)]
pub struct Found {
    pub name: String,
    pub definition: Arc<Map<String, Json>>,
}

/// The BM25 index over an agent's deferred tools.
pub struct Index {
    embedder: bm25::Embedder<u64, Words>,
    scorer: bm25::Scorer<usize, u64>,
    tools: Vec<Found>,
}

impl Index {
    /// The index over `tools` (name, server id, definition).
    pub fn new(tools: Vec<(Found, &str)>) -> Index {
        let documents: Vec<String> = tools.iter().map(|(found, server)| document(found, server)).collect();
        let corpus: Vec<&str> = documents.iter().map(String::as_str).collect();
        let embedder = bm25::EmbedderBuilder::<u64, Words>::with_tokenizer_and_fit_to_corpus(Words::new(), &corpus).build();
        let mut scorer = bm25::Scorer::new();
        for (i, text) in documents.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(text));
        }
        Index { embedder, scorer, tools: tools.into_iter().map(|(found, _)| found).collect() }
    }

    /// The `limit` best matches of `query`, best first, ties in name order; none when no
    /// word of the query is in any tool's document.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&Found> {
        let mut words: Vec<&str> = Vec::new();
        let intent = intent(query);
        for word in intent.split_whitespace() {
            if !words.contains(&word) && words.len() < MAX_QUERY_WORDS {
                words.push(word);
            }
        }
        let mut scored = self.scorer.matches(&self.embedder.embed(&words.join(" ")));
        scored.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| self.tools[a.id].name.cmp(&self.tools[b.id].name)));
        scored.into_iter().take(limit).map(|s| &self.tools[s.id]).collect()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// What the index reads of one tool.
fn document(found: &Found, server: &str) -> String {
    let definition = &found.definition;
    // The tool's own name, without the mount's `mcp__<server>__`.
    let own = found.name.rsplit("__").next().unwrap_or(&found.name);
    let mut text = format!("{own} {server} {server}");
    for key in ["title", "description"] {
        if let Some(s) = definition.get(key).and_then(Json::as_str) {
            text.push(' ');
            text.push_str(s);
        }
    }
    let properties = definition.get("inputSchema").and_then(|s| s.get("properties")).and_then(Json::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        text.push(' ');
        text.push_str(name);
        if let Some(s) = schema.get("description").and_then(Json::as_str) {
            text.push(' ');
            text.push_str(s);
        }
    }
    crate::text::truncate_chars(&mut text, MAX_DOCUMENT_CHARS as u64);
    text
}

/// `tool_search`'s result: one text block, `{"tools": [definitions]}` as a `tools/list`
/// result writes them, which a model reads and a client can add to its list. Not also
/// as `structuredContent`: a client that showed its model both would pay twice.
pub fn search_result(found: &[&Found]) -> crate::output::ToolOutput {
    let tools: Vec<&Map<String, Json>> = found.iter().map(|f| &*f.definition).collect();
    let text = if found.is_empty() { "No tool matches; try other words.".to_owned() } else { json!({ "tools": tools }).to_string() };
    crate::output::ToolOutput { content: vec![json!({ "type": "text", "text": text })], ..crate::output::ToolOutput::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(name: &str, description: &str) -> (Found, &'static str) {
        let definition = json!({ "name": name, "description": description, "inputSchema": { "type": "object" } });
        (Found { name: name.to_owned(), definition: Arc::new(definition.as_object().unwrap().clone()) }, "srv")
    }

    /// Names are split where a reader would split them, stop words go, and words are stemmed.
    #[test]
    fn words_split_names_and_stem() {
        let words = Words::new();
        use bm25::Tokenizer;
        assert_eq!(words.tokenize("readFile the list_directories"), ["read", "file", "list", "directori"]);
        assert_eq!(words.tokenize("mcp__git__git_status"), ["mcp", "git", "git", "status"]);
        // Synonyms meet, inflected or not.
        assert_eq!(words.tokenize("Opens the folder"), words.tokenize("navigate directories"));
    }

    /// Quoted text, URLs and paths are a query's values, not its intent.
    #[test]
    fn a_query_is_read_without_its_values() {
        assert_eq!(intent("Send 'ping from staging' back, what's new?"), "Send back, what's new?");
        assert_eq!(intent("Open https://example.com/login and config/settings.yaml."), "Open and");
        assert_eq!(intent("Search for `createMcpServer(` calls"), "Search for calls");
        // All quoted, or a quote never closed: the words stay.
        assert_eq!(intent("\"list directory contents\""), "\"list directory contents\"");
        assert_eq!(intent("list 'directory contents"), "list directory contents");
    }

    /// The best match comes first; equal scores come in name order; a query none of
    /// whose words is anywhere finds nothing.
    #[test]
    fn search_ranks_and_breaks_ties_by_name() {
        let index = Index::new(vec![
            found("mcp__a__zeta", "Reads a file from disk"),
            found("mcp__a__alpha", "Reads a file from disk"),
            found("mcp__a__weather", "Tells the weather"),
        ]);
        let names = |q: &str, k: usize| index.search(q, k).iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(names("weather today", 5), ["mcp__a__weather"]);
        assert_eq!(names("read files", 5), ["mcp__a__alpha", "mcp__a__zeta"]);
        assert_eq!(names("read files", 1), ["mcp__a__alpha"]);
        assert!(names("quantum chromodynamics", 5).is_empty());
    }

    /// A query is read up to `MAX_QUERY_WORDS` distinct words and a tool's document up
    /// to `MAX_DOCUMENT_CHARS` characters: a word just inside either bound counts, one
    /// just past it does not.
    #[test]
    fn queries_and_documents_are_read_up_to_their_bounds() {
        let filler = (1..MAX_QUERY_WORDS).map(|i| format!("filler{i}")).collect::<Vec<_>>().join(" ");
        let index = Index::new(vec![found("mcp__a__weather", "Tells the weather"), found("mcp__a__other", "Unrelated words")]);
        let names = |index: &Index, q: &str| index.search(q, 5).iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&index, &format!("{filler} weather")), ["mcp__a__weather"]);
        assert!(names(&index, &format!("{filler} beyond weather")).is_empty());

        let (bare, server) = found("mcp__a__tool", "");
        let room = MAX_DOCUMENT_CHARS - document(&bare, server).chars().count() - " zebra".len();
        let padded = |pad: usize| found("mcp__a__tool", &format!("{} zebra", "x".repeat(pad)));
        let at_limit = Index::new(vec![padded(room), found("mcp__a__other", "Unrelated words")]);
        assert_eq!(names(&at_limit, "zebra"), ["mcp__a__tool"]);
        let past = Index::new(vec![padded(room + 1), found("mcp__a__other", "Unrelated words")]);
        assert!(names(&past, "zebra").is_empty(), "the word's end is cut off");
    }

    #[test]
    fn tool_call_unwraps_to_the_call_it_stands_for() {
        let args = |v: Json| v.as_object().unwrap().clone();
        let (name, inner) = unwrap_call(&args(json!({ "name": "mcp__a__echo", "arguments": { "x": 1 } }))).unwrap();
        assert_eq!((name.as_str(), inner), ("mcp__a__echo", args(json!({ "x": 1 }))));
        assert!(unwrap_call(&args(json!({ "name": "mcp__a__echo" }))).unwrap().1.is_empty());
        for bad in [
            json!({}),
            json!({ "name": "" }),
            json!({ "name": TOOL_CALL }),
            json!({ "name": "x", "arguments": [1] }),
            json!({ "name": "x", "other": 1 }),
        ] {
            assert!(unwrap_call(&args(bad.clone())).is_err(), "{bad}");
        }
    }

    /// The query's length is bounded at `MAX_QUERY_CHARS` characters, `max_results` at the setting.
    #[test]
    fn search_requests_are_bounded() {
        let args = |v: Json| v.as_object().unwrap().clone();
        let at_limit = "é".repeat(MAX_QUERY_CHARS);
        assert_eq!(search_request(&args(json!({ "query": at_limit })), 5).unwrap().1, 5);
        assert!(search_request(&args(json!({ "query": format!("{at_limit}x") })), 5).is_err());
        assert_eq!(search_request(&args(json!({ "query": "q", "max_results": 5 })), 5).unwrap().1, 5);
        assert!(search_request(&args(json!({ "query": "q", "max_results": 6 })), 5).is_err());
        assert!(search_request(&args(json!({ "query": "q", "max_results": 0 })), 5).is_err());
        assert!(search_request(&args(json!({ "query": "  " })), 5).is_err());
    }

    #[test]
    fn auto_searches_past_its_size() {
        let auto = |above: Option<DisclosureAbove>| Rules { mode: DisclosureMode::Auto, above, ..Rules::default() };
        let none = auto(None);
        assert!(!none.auto_searches(1000, AUTO_ABOVE_TOKENS as usize));
        assert!(none.auto_searches(1, AUTO_ABOVE_TOKENS as usize + 1));
        let tools = auto(Some(DisclosureAbove { tools: Some(30), tokens: None }));
        assert!(!tools.auto_searches(30, 1_000_000));
        assert!(tools.auto_searches(31, 0));
        assert!(!tools.auto_counts_tokens());
    }
}

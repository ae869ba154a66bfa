//! YAML to a spanned tree, in one pass over saphyr's event stream.
//!
//! Every node keeps the place it was written at, so every later diagnostic can
//! point into the file. The tree follows the YAML 1.2 core schema with strict
//! booleans: `yes`, `on` and `NO` are strings. Duplicate keys, non-scalar keys,
//! unknown tags, alias expansion beyond a budget and nesting beyond a depth are
//! located errors; the builder never recurses, so no input can overflow the stack.

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span as YamlSpan, Tag};

use crate::diagnostic::{Diagnostic, FileId, Span};
use crate::env::Env;

mod mapping;

pub use mapping::{Iter, Mapping, ValuesMut};

/// Deepest nesting of mappings and sequences accepted.
pub const MAX_DEPTH: usize = 64;
/// Most nodes that alias expansion may add to one document (the "billion laughs" bound).
pub const MAX_ALIAS_NODES: usize = 100_000;

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub span: Span,
    /// The `!reset` tag: in `extends` merging, replace instead of merging (or remove, on null).
    pub reset: bool,
    /// The string came out of `${…}` interpolation (set by the loader).
    pub interpolated: bool,
    /// An untagged plain (unquoted) scalar: typed by the core schema.
    pub plain: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Mapping),
}

impl Value {
    /// How a message names the kind of value: `a string`, `a list`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a map",
        }
    }
}

/// A mapping entry: the key's place and the value.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key_span: Span,
    pub node: Node,
}

impl Node {
    pub fn new(value: Value, span: Span) -> Node {
        Node { value, span, reset: false, interpolated: false, plain: false }
    }

    pub fn as_map(&self) -> Option<&Mapping> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?.get(key).map(|e| &e.node)
    }

    /// Number of nodes in this subtree.
    pub fn size(&self) -> usize {
        let mut count = 0;
        let mut stack = vec![self];
        while let Some(n) = stack.pop() {
            count += 1;
            match &n.value {
                Value::Seq(items) => stack.extend(items),
                Value::Map(m) => stack.extend(m.values().map(|e| &e.node)),
                _ => {}
            }
        }
        count
    }

    /// The node at a JSON pointer, and the span of the key that holds it (if it is a map value).
    pub fn lookup(&self, segments: &[String]) -> (&Node, Option<Span>, usize) {
        let mut node = self;
        let mut key_span = None;
        for (depth, segment) in segments.iter().enumerate() {
            let next = match &node.value {
                Value::Map(m) => m.get(segment.as_str()).map(|e| (&e.node, Some(e.key_span))),
                Value::Seq(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)).map(|n| (n, None)),
                _ => None,
            };
            match next {
                Some((n, k)) => {
                    node = n;
                    key_span = k;
                }
                None => return (node, key_span, depth),
            }
        }
        (node, key_span, segments.len())
    }
}

/// Parses one YAML document into a spanned tree. An empty document is `Null`.
pub fn parse(text: &str, file: FileId) -> Result<Node, Diagnostic> {
    Builder::new(file, None).run(text).map(|(node, _)| node)
}

/// Parses and expands `${…}` in string values (not keys) in the same pass; a
/// failed expansion is a diagnostic and leaves the text as written.
pub fn parse_interpolated(text: &str, file: FileId, env: &dyn Env) -> Result<(Node, Vec<Diagnostic>), Diagnostic> {
    Builder::new(file, Some(env)).run(text)
}

enum Open {
    Seq {
        items: Vec<Node>,
        span: Span,
        anchor: usize,
        reset: bool,
    },
    /// A small map's list is a reused buffer while open; it closes at its exact size.
    Map {
        entries: Mapping,
        pending_key: Option<(String, Span)>,
        span: Span,
        anchor: usize,
        reset: bool,
    },
}

struct Builder<'e> {
    file: FileId,
    env: Option<&'e dyn Env>,
    env_diagnostics: Vec<Diagnostic>,
    stack: Vec<Open>,
    /// Emptied buffers of closed small maps, for the next ones.
    spare: Vec<Vec<(String, Entry)>>,
    anchors: std::collections::HashMap<usize, Node>,
    alias_nodes: usize,
    root: Option<Node>,
    documents: usize,
}

impl<'e> Builder<'e> {
    fn new(file: FileId, env: Option<&'e dyn Env>) -> Self {
        Builder {
            file,
            env,
            env_diagnostics: Vec::new(),
            stack: Vec::new(),
            spare: Vec::new(),
            anchors: std::collections::HashMap::new(),
            alias_nodes: 0,
            root: None,
            documents: 0,
        }
    }

    fn span(&self, s: &YamlSpan) -> Span {
        Span { file: self.file, line: s.start.line() as u32, column: s.start.col() as u32 + 1 }
    }

    fn err(&self, code: crate::codes::Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(code, span, self.pointer(), message)
    }

    /// JSON pointer of the node being built, for errors raised while parsing.
    fn pointer(&self) -> String {
        let mut segments = Vec::new();
        for open in &self.stack {
            match open {
                Open::Seq { items, .. } => segments.push(items.len().to_string()),
                Open::Map { pending_key: Some((k, _)), .. } => segments.push(k.clone()),
                Open::Map { .. } => {}
            }
        }
        crate::diagnostic::pointer(segments.iter().map(String::as_str))
    }

    fn run(mut self, text: &str) -> Result<(Node, Vec<Diagnostic>), Diagnostic> {
        let eof = Span { file: self.file, line: 1, column: 1 };
        for item in Parser::new_from_str(text) {
            let (event, yspan) = item.map_err(|e| self.syntax_error(&e))?;
            let span = self.span(&yspan);
            self.event(event, span)?;
        }
        let root = self.root.take().unwrap_or_else(|| Node::new(Value::Null, eof));
        Ok((root, self.env_diagnostics))
    }

    /// What the parser could not read, located where it stopped.
    fn syntax_error(&self, e: &ScanError) -> Diagnostic {
        let m = e.marker();
        let span = Span { file: self.file, line: m.line() as u32, column: m.col() as u32 + 1 };
        self.err(crate::codes::YAML_SYNTAX, span, format!("invalid YAML: {}", e.info()))
    }

    /// One event of the parser: a scalar or an alias is a node (or a key), a
    /// collection's start opens one and its end completes it.
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Diagnostic> {
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(self.err(
                        crate::codes::YAML_MULTIPLE_DOCUMENTS,
                        span,
                        "a composition is one YAML document; found a second one",
                    ));
                }
                Ok(())
            }
            Event::Scalar(value, style, anchor, tag) => self.scalar_event(value, style, anchor, tag.as_deref(), span),
            Event::SequenceStart(anchor, tag) => {
                self.reject_key_collection(span)?;
                let reset = self.collection_tag(tag.as_deref(), span)?;
                self.open(Open::Seq { items: Vec::new(), span, anchor, reset }, span)
            }
            Event::MappingStart(anchor, tag) => {
                self.reject_key_collection(span)?;
                let reset = self.collection_tag(tag.as_deref(), span)?;
                let entries = Mapping::Small(self.spare.pop().unwrap_or_default());
                self.open(Open::Map { entries, pending_key: None, span, anchor, reset }, span)
            }
            Event::SequenceEnd => self.close_seq(),
            Event::MappingEnd => self.close_map(),
            Event::Alias(id) => self.alias(id, span),
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => Ok(()),
        }
    }

    /// A scalar: the key a map waits for, or a value, its `${…}` expanded when the loader asks.
    fn scalar_event(
        &mut self,
        value: std::borrow::Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if self.expecting_key() {
            return self.push_key(value.into_owned(), span);
        }
        let mut node = self.scalar(value, style, tag, span)?;
        if let (Some(env), Value::Str(s)) = (self.env, &node.value)
            && s.contains('$')
        {
            self.expand(&mut node, env);
        }
        self.complete(node, anchor)
    }

    /// A sequence's end: its node completes the collection it is in.
    fn close_seq(&mut self) -> Result<(), Diagnostic> {
        let Some(Open::Seq { items, span, anchor, reset }) = self.stack.pop() else { unreachable!("parser balances sequences") };
        let mut node = Node::new(Value::Seq(items), span);
        node.reset = reset;
        self.complete(node, anchor)
    }

    /// A mapping's end: its node completes the collection it is in, and a small
    /// map's buffer goes back for the next one.
    fn close_map(&mut self) -> Result<(), Diagnostic> {
        let Some(Open::Map { entries, span, anchor, reset, .. }) = self.stack.pop() else { unreachable!("parser balances mappings") };
        let entries = match entries {
            Mapping::Small(mut list) => {
                // At its exact size, in one allocation; the buffer serves the next map.
                let mut exact = Vec::with_capacity(list.len());
                exact.append(&mut list);
                self.spare.push(list);
                Mapping::Small(exact)
            }
            large => large,
        };
        let mut node = Node::new(Value::Map(entries), span);
        node.reset = reset;
        self.complete(node, anchor)
    }

    /// An alias is a copy of its anchor's node, within the budget of [`MAX_ALIAS_NODES`].
    fn alias(&mut self, id: usize, span: Span) -> Result<(), Diagnostic> {
        let Some(target) = self.anchors.get(&id) else {
            return Err(self.err(crate::codes::YAML_SYNTAX, span, "alias to an unknown anchor"));
        };
        if self.expecting_key() {
            return Err(self.err(crate::codes::YAML_COMPLEX_KEY, span, "mapping keys must be plain strings, not aliases"));
        }
        self.alias_nodes += target.size();
        if self.alias_nodes > MAX_ALIAS_NODES {
            return Err(self.err(crate::codes::YAML_ALIAS_LIMIT, span, format!("aliases expand to more than {MAX_ALIAS_NODES} nodes")));
        }
        let node = target.clone();
        self.complete(node, 0)
    }

    fn expand(&mut self, node: &mut Node, env: &dyn Env) {
        let Value::Str(text) = &node.value else { return };
        match crate::env::interpolate(text, env) {
            Ok(Some(out)) => {
                node.interpolated = true;
                // Quoted strings stay strings; plain ones are typed again (`${N:-4096}` is a number).
                node.value = if node.plain { resolve_plain(&out, ScalarStyle::Plain) } else { Value::Str(out) };
            }
            Ok(None) => {}
            Err((code, message)) => {
                let d = Diagnostic::new(code, node.span, self.pointer(), message);
                self.env_diagnostics.push(d);
            }
        }
    }

    /// Whether the innermost open collection is a map waiting for a key.
    fn expecting_key(&self) -> bool {
        matches!(self.stack.last(), Some(Open::Map { pending_key: None, .. }))
    }

    fn reject_key_collection(&self, span: Span) -> Result<(), Diagnostic> {
        if self.expecting_key() {
            return Err(self.err(crate::codes::YAML_COMPLEX_KEY, span, "mapping keys must be plain strings, not collections"));
        }
        Ok(())
    }

    fn push_key(&mut self, key: String, span: Span) -> Result<(), Diagnostic> {
        let Some(Open::Map { pending_key, .. }) = self.stack.last_mut() else { unreachable!() };
        *pending_key = Some((key, span));
        Ok(())
    }

    fn open(&mut self, open: Open, span: Span) -> Result<(), Diagnostic> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.err(crate::codes::YAML_DEPTH_LIMIT, span, format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.stack.push(open);
        Ok(())
    }

    fn complete(&mut self, node: Node, anchor: usize) -> Result<(), Diagnostic> {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Open::Seq { items, .. }) => items.push(node),
            Some(Open::Map { entries, pending_key, .. }) => {
                let (key, key_span) = pending_key.take().expect("a value follows its key");
                if let Err((key, first)) = entries.add(key, Entry { key_span, node }) {
                    let message = format!("duplicate key `{key}` (first at line {}, column {})", first.line, first.column);
                    let pointer = format!("{}/{}", self.pointer(), crate::diagnostic::escape_pointer_segment(&key));
                    return Err(Diagnostic::new(crate::codes::YAML_DUPLICATE_KEY, key_span, pointer, message));
                }
            }
        }
        Ok(())
    }

    fn collection_tag(&self, tag: Option<&Tag>, span: Span) -> Result<bool, Diagnostic> {
        match tag {
            None => Ok(false),
            Some(t) if is_reset(t) => Ok(true),
            Some(t) if t.is_yaml_core_schema() && matches!(t.suffix.as_str(), "map" | "seq") => Ok(false),
            Some(t) => Err(self.err(
                crate::codes::YAML_UNKNOWN_TAG,
                span,
                format!("unknown tag `{}{}`; seam knows only `!reset`", t.handle, t.suffix),
            )),
        }
    }

    fn scalar(&self, text: std::borrow::Cow<'_, str>, style: ScalarStyle, tag: Option<&Tag>, span: Span) -> Result<Node, Diagnostic> {
        let mut reset = false;
        let value = match tag {
            Some(t) if is_reset(t) => {
                reset = true;
                resolve_plain_owned(text, style)
            }
            Some(t) if t.is_yaml_core_schema() => match t.suffix.as_str() {
                "str" => Value::Str(text.into_owned()),
                "null" => Value::Null,
                "bool" | "int" | "float" => {
                    let v = resolve_plain(&text, ScalarStyle::Plain);
                    let ok = matches!(
                        (t.suffix.as_str(), &v),
                        ("bool", Value::Bool(_)) | ("int", Value::Int(_)) | ("float", Value::Float(_) | Value::Int(_))
                    );
                    if !ok {
                        return Err(self.err(crate::codes::YAML_SYNTAX, span, format!("`{text}` is not a valid !!{}", t.suffix)));
                    }
                    match v {
                        Value::Int(i) if t.suffix == "float" => Value::Float(i as f64),
                        v => v,
                    }
                }
                other => return Err(self.err(crate::codes::YAML_UNKNOWN_TAG, span, format!("unsupported tag `!!{other}`"))),
            },
            Some(t) => {
                return Err(self.err(
                    crate::codes::YAML_UNKNOWN_TAG,
                    span,
                    format!("unknown tag `{}{}`; seam knows only `!reset`", t.handle, t.suffix),
                ));
            }
            None => resolve_plain_owned(text, style),
        };
        let mut node = Node::new(value, span);
        node.reset = reset;
        node.plain = tag.is_none() && style == ScalarStyle::Plain;
        Ok(node)
    }
}

fn is_reset(tag: &Tag) -> bool {
    tag.handle == "!" && tag.suffix == "reset"
}

/// The YAML 1.2 core schema for plain scalars, with booleans limited to true/false.
pub fn resolve_plain(text: &str, style: ScalarStyle) -> Value {
    typed_plain(text, style).unwrap_or_else(|| Value::Str(text.to_owned()))
}

/// As [`resolve_plain`], keeping the parser's string instead of copying it.
fn resolve_plain_owned(text: std::borrow::Cow<'_, str>, style: ScalarStyle) -> Value {
    typed_plain(&text, style).unwrap_or_else(|| Value::Str(text.into_owned()))
}

/// The non-string value a scalar stands for, if any.
fn typed_plain(text: &str, style: ScalarStyle) -> Option<Value> {
    if style != ScalarStyle::Plain {
        return None;
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(Value::Float(f64::INFINITY)),
        "-.inf" | "-.Inf" | "-.INF" => return Some(Value::Float(f64::NEG_INFINITY)),
        ".nan" | ".NaN" | ".NAN" => return Some(Value::Float(f64::NAN)),
        _ => {}
    }
    if let Some(v) = parse_int(text) {
        return Some(Value::Int(v));
    }
    is_float(text).then(|| text.parse::<f64>().ok()).flatten().map(Value::Float)
}

fn parse_int(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok();
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return i64::from_str_radix(oct, 8).ok();
    }
    let digits = match bytes.first()? {
        b'-' | b'+' => &bytes[1..],
        _ => bytes,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    text.parse().ok()
}

fn is_float(text: &str) -> bool {
    let t = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((a, b)) => (!a.is_empty() || !b.is_empty()) && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit()),
        None => !mantissa.is_empty() && mantissa.bytes().all(|c| c.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit())
    });
    mantissa_ok && exponent_ok && (mantissa.contains('.') || exponent.is_some())
}

#[cfg(test)]
mod tests {
    use super::mapping::SMALL_MAP;
    use super::*;

    fn value(text: &str) -> serde_json::Value {
        parse(text, FileId(0)).unwrap().to_json()
    }

    fn error(text: &str) -> (String, u32, u32) {
        let d = parse(text, FileId(0)).unwrap_err();
        (d.code.code.to_owned(), d.span.line, d.span.column)
    }

    #[test]
    fn core_schema_with_strict_booleans() {
        assert_eq!(
            value("a: yes\nb: on\nc: true\nd: 12\ne: 1.5\nf: ~\ng: '12'\nh: NO\ni: 0x1f"),
            serde_json::json!({"a": "yes", "b": "on", "c": true, "d": 12, "e": 1.5, "f": null, "g": "12", "h": "NO", "i": 31})
        );
    }

    #[test]
    fn spans_are_one_based_characters() {
        let root = parse("é: x\nkey:\n  inner: 'ü'\n", FileId(0)).unwrap();
        let inner = root.get("key").unwrap().as_map().unwrap().get("inner").unwrap();
        assert_eq!((inner.key_span.line, inner.key_span.column), (3, 3));
        assert_eq!((inner.node.span.line, inner.node.span.column), (3, 10));
    }

    #[test]
    fn located_loader_errors() {
        assert_eq!(error("a: 1\nb: 2\na: 3\n"), ("YAML_DUPLICATE_KEY".into(), 3, 1));
        assert_eq!(error("a: !include x\n"), ("YAML_UNKNOWN_TAG".into(), 1, 13));
        assert_eq!(error("? [a]\n: 1\n"), ("YAML_COMPLEX_KEY".into(), 1, 3));
        assert_eq!(error("a: 1\n---\nb: 2\n"), ("YAML_MULTIPLE_DOCUMENTS".into(), 2, 1));
        assert_eq!(error("a: [1, 2\n").0, "YAML_SYNTAX");
    }

    /// Maps switch from a searched list to an index at `SMALL_MAP` entries: a
    /// duplicate is found, and file order kept, on both sides of the switch.
    #[test]
    fn duplicate_keys_and_order_around_the_small_map_size() {
        for size in [SMALL_MAP - 1, SMALL_MAP, SMALL_MAP + 1, 3 * SMALL_MAP] {
            let keys: Vec<String> = (0..size).map(|i| format!("k{}", size - i)).collect();
            let text: String = keys.iter().map(|k| format!("  {k}: 1\n")).collect();
            let root = parse(&format!("m:\n{text}"), FileId(0)).unwrap();
            let parsed: Vec<&String> = root.get("m").unwrap().as_map().unwrap().keys().collect();
            assert_eq!(parsed, keys.iter().collect::<Vec<_>>(), "order of a map of {size}");
            // One more entry, repeating the first key or the last one.
            for (dup, line) in [(&keys[0], size + 2), (&keys[size - 1], size + 2)] {
                let d = parse(&format!("m:\n{text}  {dup}: 2\n"), FileId(0)).unwrap_err();
                assert_eq!(
                    (d.code.code, d.span.line, d.pointer.as_str()),
                    ("YAML_DUPLICATE_KEY", line as u32, format!("/m/{dup}").as_str())
                );
            }
        }
    }

    /// `insert` (the `extends` merge) keeps file order, replaces in place, and
    /// moves a list to an index at `SMALL_MAP` entries; removal keeps the order.
    #[test]
    fn a_mapping_keeps_order_through_insert_and_removal_across_the_switch() {
        let entry = |n: i64| Entry {
            key_span: Span { file: FileId(0), line: 1, column: 1 },
            node: Node::new(Value::Int(n), Span { file: FileId(0), line: 1, column: 1 }),
        };
        let mut map = Mapping::default();
        for i in 0..SMALL_MAP as i64 - 1 {
            map.insert(format!("k{i}"), entry(i));
        }
        assert!(matches!(map, Mapping::Small(_)), "{} entries are a list", SMALL_MAP - 1);
        map.insert("k3".into(), entry(33));
        assert!(matches!(map, Mapping::Small(_)), "replacing adds nothing");
        map.insert("last".into(), entry(99));
        assert!(matches!(map, Mapping::Large(_)), "{SMALL_MAP} entries are indexed");
        let keys: Vec<String> = map.keys().cloned().collect();
        let mut want: Vec<String> = (0..SMALL_MAP - 1).map(|i| format!("k{i}")).collect();
        want.push("last".into());
        assert_eq!(keys, want);
        assert_eq!(map.get("k3").map(|e| &e.node.value), Some(&Value::Int(33)));
        assert!(map.shift_remove("k0").is_some());
        map.retain(|k, _| k != "k1");
        assert_eq!(map.keys().take(2).collect::<Vec<_>>(), ["k2", "k3"]);
        assert_eq!(map.len(), SMALL_MAP - 2);
    }

    #[test]
    fn depth_at_the_limit_and_one_past() {
        let at = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&at, FileId(0)).is_ok());
        let past = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(parse(&past, FileId(0)).unwrap_err().code, "YAML_DEPTH_LIMIT");
    }

    #[test]
    fn alias_bomb_is_bounded() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..8 {
            let prev = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        assert_eq!(parse(&text, FileId(0)).unwrap_err().code, "YAML_ALIAS_LIMIT");
    }

    #[test]
    fn alias_budget_at_the_limit_and_one_past() {
        // An anchored list of 999 scalars is 1,000 nodes; 100 aliases expand to exactly the budget.
        let doc = |aliases: usize| format!("a: &a [{}]\nb: [{}]\n", vec!["x"; 999].join(", "), vec!["*a"; aliases].join(", "));
        assert!(parse(&doc(MAX_ALIAS_NODES / 1000), FileId(0)).is_ok());
        assert_eq!(parse(&doc(MAX_ALIAS_NODES / 1000 + 1), FileId(0)).unwrap_err().code, "YAML_ALIAS_LIMIT");
    }

    #[test]
    fn reset_tag_marks_the_node() {
        let root = parse("a: !reset\nb: !reset {x: 1}\n", FileId(0)).unwrap();
        assert!(root.get("a").unwrap().reset);
        assert_eq!(root.get("a").unwrap().value, Value::Null);
        assert!(root.get("b").unwrap().reset);
    }
}

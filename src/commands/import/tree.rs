//! A client's config as one spanned tree, whatever it was written in: JSON with
//! VS Code's comments and trailing commas (read by `jsonc-parser`, whose tree
//! keeps every value's bytes), or TOML (read by `toml_edit`, which keeps spans).

use std::ops::Range;

use jsonc_parser::common::Ranged;
use jsonc_parser::errors::{ParseError, ParseErrorKind};
use jsonc_parser::tokens::Token;
use jsonc_parser::{CollectOptions, ParseOptions, Scanner, ScannerOptions, ast, parse_to_ast};

/// The most levels of arrays and objects read; a client's config needs four or five.
const MAX_DEPTH: usize = 64;

/// A value of the config and the bytes it was written at.
#[derive(Clone, Debug)]
pub struct Val {
    pub kind: Kind,
    pub at: Range<usize>,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Null,
    Bool(bool),
    /// A number as written (`20`, `7.5`).
    Num(String),
    Str(String),
    Arr(Vec<Val>),
    Obj(Vec<Member>),
}

/// An object's entry: its key, where the key was written, and its value.
#[derive(Clone, Debug)]
pub struct Member {
    pub key: String,
    pub key_at: Range<usize>,
    pub value: Val,
}

impl Val {
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Obj(m) => Some(m),
            _ => None,
        }
    }

    pub fn member(&self, key: &str) -> Option<&Member> {
        self.members()?.iter().find(|m| m.key == key)
    }

    /// How a message names the kind of value.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            Kind::Null => "null",
            Kind::Bool(_) => "a boolean",
            Kind::Num(_) => "a number",
            Kind::Str(_) => "a string",
            Kind::Arr(_) => "an array",
            Kind::Obj(_) => "an object",
        }
    }

    /// The bytes of a string's text (inside its quotes), or of the whole value.
    pub fn inner(&self) -> Range<usize> {
        match self.kind {
            Kind::Str(_) if self.at.len() >= 2 => self.at.start + 1..self.at.end - 1,
            _ => self.at.clone(),
        }
    }
}

/// Why a file could not be read as its format: the message and the byte it is about.
pub struct SyntaxError {
    pub at: usize,
    pub message: String,
}

/// Reads JSON, with `//` and `/* */` comments and trailing commas (JSONC, as VS Code writes it), and
/// nothing looser: no JSON5 quotes, words, numbers or missing commas.
pub fn jsonc(text: &str) -> Result<Val, SyntaxError> {
    // A byte-order mark, as Windows editors write one, is not JSON: read it as the spaces of its
    // bytes, so that every byte stays where it was.
    let spaced;
    let text = match text.strip_prefix('\u{feff}') {
        Some(rest) => {
            spaced = format!("{}{rest}", " ".repeat('\u{feff}'.len_utf8()));
            &spaced
        }
        None => text,
    };
    let options = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let parsed = match parse_to_ast(text, &CollectOptions::default(), &options) {
        Ok(parsed) => parsed,
        // Arrays and objects nested too deep before the error are the first thing wrong.
        Err(e) => return Err(too_deep(text, e.range().start).map_or_else(|| parse_error(text, &e), depth_error)),
    };
    if let Some(at) = too_deep(text, text.len()) {
        return Err(depth_error(at));
    }
    let Some(value) = parsed.value else {
        return Err(SyntaxError { at: text.len(), message: "the document ends where a value was expected".to_owned() });
    };
    convert(text, value)
}

fn depth_error(at: usize) -> SyntaxError {
    SyntaxError { at, message: format!("arrays and objects nest deeper than {MAX_DEPTH} levels") }
}

/// Where `text` first opens an array or object deeper than [`MAX_DEPTH`], before byte `before`, by
/// the parser's own tokens (so brackets in strings and comments don't count). `parse_to_ast` recurses
/// (to a depth of its own, 512), so this bounds the tree's depth and the conversion's recursion.
fn too_deep(text: &str, before: usize) -> Option<usize> {
    let mut tokens = Scanner::new(text, &ScannerOptions::default());
    let mut depth = 0usize;
    while let Ok(Some(token)) = tokens.scan()
        && tokens.token_start() < before
    {
        match token {
            Token::OpenBrace | Token::OpenBracket => depth += 1,
            Token::CloseBrace | Token::CloseBracket => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_DEPTH {
            return Some(tokens.token_start());
        }
    }
    None
}

/// The parser's error, at the byte it is about: a missing comma is reported where the next value
/// starts, which is what the reader has to change.
fn parse_error(text: &str, e: &ParseError) -> SyntaxError {
    let mut at = e.range().start;
    if matches!(e.kind(), ParseErrorKind::ExpectedComma) {
        let mut tokens = Scanner::new(&text[at..], &ScannerOptions::default());
        while let Ok(Some(Token::CommentLine(_) | Token::CommentBlock(_))) = tokens.scan() {}
        at += tokens.token_start();
    }
    let message = e.kind().to_string();
    let mut chars = message.chars();
    let message = chars.next().map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect());
    SyntaxError { at, message }
}

/// The parser's tree as a [`Val`], with the same bytes; strings' bytes include their quotes.
fn convert(text: &str, value: ast::Value<'_>) -> Result<Val, SyntaxError> {
    let range = value.range();
    let at = range.start..range.end;
    let kind = match value {
        ast::Value::NullKeyword(_) => Kind::Null,
        ast::Value::BooleanLit(b) => Kind::Bool(b.value),
        ast::Value::NumberLit(n) => Kind::Num(n.value.to_owned()),
        ast::Value::StringLit(s) => Kind::Str(string(text, s)?),
        ast::Value::Array(a) => Kind::Arr(a.elements.into_iter().map(|v| convert(text, v)).collect::<Result<_, _>>()?),
        ast::Value::Object(o) => Kind::Obj(
            o.properties
                .into_iter()
                .map(|p| {
                    let ast::ObjectPropName::String(key) = p.name else { unreachable!("loose property names are refused") };
                    let key_at = key.range.start..key.range.end;
                    Ok(Member { key: string(text, key)?, key_at, value: convert(text, p.value)? })
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    Ok(Val { kind, at })
}

/// A string's value; JSON has no raw control characters (a line break, a tab) inside one.
fn string(text: &str, s: ast::StringLit<'_>) -> Result<String, SyntaxError> {
    let raw = &text.as_bytes()[s.range.start..s.range.end];
    if let Some(i) = raw.iter().position(|&b| b < 0x20) {
        let message = "a control character (a line break, a tab) inside a string: write it as `\\n`, `\\t`";
        return Err(SyntaxError { at: s.range.start + i, message: message.to_owned() });
    }
    Ok(s.value.into_owned())
}

/// Reads TOML into the same tree, with the spans `toml_edit` keeps.
pub fn toml(text: &str) -> Result<Val, SyntaxError> {
    let document = toml_edit::Document::parse(text)
        .map_err(|e| SyntaxError { at: e.span().map_or(0, |s| s.start), message: e.message().trim().to_owned() })?;
    Ok(toml_table(document.as_table(), 0..0))
}

fn toml_table(table: &toml_edit::Table, fallback: Range<usize>) -> Val {
    let at = table.span().unwrap_or(fallback);
    let members = table
        .iter()
        .filter_map(|(key, _)| table.get_key_value(key))
        .filter_map(|(key, item)| {
            let key_at = key.span().unwrap_or_else(|| at.clone());
            let value = toml_item(item, key_at.clone())?;
            Some(Member { key: key.get().to_owned(), key_at, value })
        })
        .collect();
    Val { kind: Kind::Obj(members), at }
}

fn toml_item(item: &toml_edit::Item, fallback: Range<usize>) -> Option<Val> {
    match item {
        toml_edit::Item::None => None,
        toml_edit::Item::Value(value) => Some(toml_value(value, fallback)),
        toml_edit::Item::Table(table) => Some(toml_table(table, fallback)),
        toml_edit::Item::ArrayOfTables(tables) => {
            let at = tables.span().unwrap_or(fallback);
            let items = tables.iter().map(|t| toml_table(t, at.clone())).collect();
            Some(Val { kind: Kind::Arr(items), at })
        }
    }
}

fn toml_value(value: &toml_edit::Value, fallback: Range<usize>) -> Val {
    use toml_edit::Value as V;
    let at = value.span().unwrap_or(fallback);
    let kind = match value {
        V::String(s) => Kind::Str(s.value().clone()),
        V::Integer(n) => Kind::Num(n.value().to_string()),
        V::Float(n) => Kind::Num(n.value().to_string()),
        V::Boolean(b) => Kind::Bool(*b.value()),
        V::Datetime(d) => Kind::Str(d.value().to_string()),
        V::Array(items) => Kind::Arr(items.iter().map(|v| toml_value(v, at.clone())).collect()),
        V::InlineTable(table) => Kind::Obj(
            table
                .iter()
                .filter_map(|(key, _)| table.get_key_value(key))
                .filter_map(|(key, item)| {
                    let key_at = key.span().unwrap_or_else(|| at.clone());
                    Some(Member { key: key.get().to_owned(), value: toml_value(item.as_value()?, key_at.clone()), key_at })
                })
                .collect(),
        ),
    };
    Val { kind, at }
}

/// Where each line of a text starts, to turn bytes into 1-based lines and columns (in characters).
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        Lines { text, starts: std::iter::once(0).chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1)).collect() }
    }

    /// The line and column of byte `at`.
    pub fn position(&self, at: usize) -> (u32, u32) {
        let at = at.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= at) - 1;
        let start = self.starts[line];
        let column = self.text.get(start..at).map_or(at - start, |s| s.chars().count()) + 1;
        (line as u32 + 1, column as u32)
    }
}

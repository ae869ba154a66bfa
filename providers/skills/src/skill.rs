//! One skill file: `SKILL.md`, YAML frontmatter between `---` lines, then the
//! body (the instructions). The Agent Skills layout, so that skills written
//! for other tools work here: keys this crate does not use (`license`,
//! `allowed-tools`, `compatibility`…) are accepted and left alone.

use seam_engine::diagnostic::FileId;
use seam_engine::yaml::{self, Node, Value};

/// Longest skill name (the Agent Skills limit).
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description (the Agent Skills limit).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// What routing needs of a skill; the body is loaded only when the skill is invoked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub name: String,
    pub description: String,
    pub when_to_use: Option<String>,
    pub model_invocable: bool,
    pub user_invocable: bool,
}

impl Summary {
    /// What the catalog says of the skill: the description with whitespace
    /// runs collapsed to one space, then `When to use: …` likewise.
    pub fn catalog_text(&self) -> String {
        let mut text = String::with_capacity(self.description.len());
        for word in self.description.split_whitespace() {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(word);
        }
        if let Some(when) = &self.when_to_use
            && when.split_whitespace().next().is_some()
        {
            text.push_str(" When to use:");
            for word in when.split_whitespace() {
                text.push(' ');
                text.push_str(word);
            }
        }
        text
    }

    /// A hash of everything a catalog shows of the skill (not its body).
    pub fn hash(&self) -> u128 {
        let mut hasher = blake3::Hasher::new();
        // Length-prefixed fields, so that no two summaries hash alike by shifting text between fields.
        for field in [self.name.as_str(), self.description.as_str(), self.when_to_use.as_deref().unwrap_or("\u{0}")] {
            hasher.update(&(field.len() as u64).to_le_bytes());
            hasher.update(field.as_bytes());
        }
        hasher.update(&[u8::from(self.model_invocable), u8::from(self.user_invocable)]);
        let bytes: [u8; 16] = hasher.finalize().as_bytes()[..16].try_into().expect("16 bytes");
        u128::from_le_bytes(bytes)
    }
}

/// A parsed skill file: its summary and where the body starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub summary: Summary,
    pub body: String,
}

/// Why a skill file is not a skill: the 1-based line and a reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub line: u32,
    pub reason: String,
}

fn reject(line: u32, reason: impl Into<String>) -> Rejection {
    Rejection { line, reason: reason.into() }
}

/// camelCase spellings earlier tools used; refused with the spelling to write
/// instead, because silently ignoring them would flip a permission.
const LEGACY_KEYS: [(&str, &str); 3] =
    [("disableModelInvocation", "disable-model-invocation"), ("userInvocable", "user-invocable"), ("whenToUse", "when_to_use")];

/// Whether `name` is a valid skill name: lowercase letters and digits in
/// groups joined by single hyphens (`^[a-z0-9]+(?:-[a-z0-9]+)*$`).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.split('-').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
}

/// A skill file's frontmatter as JSON, every key as written (MCP's skills extension
/// serves it so): checked no further than that it is YAML.
pub fn frontmatter_json(text: &str) -> Result<serde_json::Value, Rejection> {
    let (frontmatter, _) = split(text.strip_prefix('\u{feff}').unwrap_or(text))?;
    let node = yaml::parse(&frontmatter, FileId(0)).map_err(|d| reject(d.span.line + 1, d.message))?;
    verbatim(&node)
}

/// A frontmatter node as JSON with every value as YAML wrote it: a float stays a float
/// (`2.0`, which the engine's reading for settings makes `2`), since a host compares the
/// served frontmatter with the file's field by field; one JSON cannot hold (`.inf`)
/// cannot be served.
fn verbatim(node: &Node) -> Result<serde_json::Value, Rejection> {
    use serde_json::Value as Json;
    Ok(match &node.value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .ok_or_else(|| reject(node.span.line + 1, format!("the frontmatter holds `{f}`, which JSON cannot hold")))?,
        Value::Str(s) => Json::String(s.clone()),
        Value::Seq(items) => Json::Array(items.iter().map(verbatim).collect::<Result<_, _>>()?),
        Value::Map(map) => {
            Json::Object(map.iter().map(|(key, entry)| Ok((key.clone(), verbatim(&entry.node)?))).collect::<Result<_, _>>()?)
        }
    })
}

/// A skill file's frontmatter (LF line ends) and the byte where its body starts.
fn split(text: &str) -> Result<(String, usize), Rejection> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err(reject(1, "a skill file starts with a `---` line, then YAML frontmatter with `name` and `description`"));
    }
    let mut frontmatter = String::new();
    let mut offset = first.len();
    let mut closed = false;
    for line in lines {
        offset += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        // CRLF files: the frontmatter is read with LF line ends; the body is kept verbatim.
        frontmatter.push_str(line.strip_suffix('\n').map_or(line, |l| l.strip_suffix('\r').unwrap_or(l)));
        frontmatter.push('\n');
    }
    if !closed {
        return Err(reject(1, "the frontmatter is not closed: no `---` line after it"));
    }
    Ok((frontmatter, offset))
}

/// Parses a skill file found in folder `folder`. The name must be the folder's.
pub fn parse(text: &str, folder: &str) -> Result<Parsed, Rejection> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (frontmatter, offset) = split(text)?;
    // Lines in the frontmatter are one below the parser's (the opening `---`).
    let node = yaml::parse(&frontmatter, FileId(0)).map_err(|d| reject(d.span.line + 1, d.message))?;
    let at = |n: &Node| n.span.line + 1;
    let Some(map) = node.as_map() else {
        return Err(reject(2, "the frontmatter is not a mapping of keys to values"));
    };
    for (legacy, spelling) in LEGACY_KEYS {
        if let Some(e) = map.get(legacy) {
            return Err(reject(e.key_span.line + 1, format!("`{legacy}` is a legacy spelling; write `{spelling}`")));
        }
    }
    let text_of = |key: &str| -> Result<Option<(&str, u32)>, Rejection> {
        match map.get(key) {
            None => Ok(None),
            Some(e) => match &e.node.value {
                Value::Str(s) => Ok(Some((s.as_str(), at(&e.node)))),
                _ => Err(reject(at(&e.node), format!("`{key}` must be a string"))),
            },
        }
    };
    let Some((name, name_line)) = text_of("name")? else {
        return Err(reject(2, "`name` is required"));
    };
    if !valid_name(name) {
        return Err(reject(name_line, format!("`{name}` is not a skill name: lowercase letters and digits, joined by single hyphens")));
    }
    if name.len() > MAX_NAME_CHARS {
        return Err(reject(name_line, format!("the name has {} characters; at most {MAX_NAME_CHARS}", name.len())));
    }
    if name != folder {
        return Err(reject(name_line, format!("the name `{name}` is not its folder's (`{folder}`)")));
    }
    let Some((description, description_line)) = text_of("description")? else {
        return Err(reject(2, "`description` is required"));
    };
    if description.trim().is_empty() {
        return Err(reject(description_line, "`description` is empty"));
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(reject(description_line, format!("the description has {chars} characters; at most {MAX_DESCRIPTION_CHARS}")));
    }
    let when_to_use = text_of("when_to_use")?.map(|(s, _)| s.to_owned());
    if let Some(e) = map.get("metadata").filter(|e| !matches!(e.node.value, Value::Map(_))) {
        return Err(reject(at(&e.node), "`metadata` must be a mapping"));
    }
    let flag = |key: &str, default: bool| -> Result<bool, Rejection> {
        let Some(e) = map.get(key) else { return Ok(default) };
        boolean(&e.node.value).ok_or_else(|| reject(at(&e.node), format!("`{key}` must be true or false (or yes/no, on/off, 1/0)")))
    };
    let model_invocable = !flag("disable-model-invocation", false)?;
    let user_invocable = flag("user-invocable", true)?;
    Ok(Parsed {
        summary: Summary { name: name.to_owned(), description: description.to_owned(), when_to_use, model_invocable, user_invocable },
        body: text[offset..].to_owned(),
    })
}

/// Why a skill an MCP server listed is left out of the catalog.
#[derive(Debug, thiserror::Error)]
pub enum ListedError {
    #[error("`{name}` is not a skill name: lowercase letters and digits, joined by single hyphens, at most {MAX_NAME_CHARS}")]
    BadName { name: String },
    #[error("`{key}` must be a string")]
    NotAString { key: String },
    #[error("`description` is required")]
    NoDescription,
    #[error("the description has {chars} characters; at most {MAX_DESCRIPTION_CHARS}")]
    DescriptionTooLong { chars: usize },
    #[error("`{key}` must be true or false (or yes/no, on/off, 1/0)")]
    NotABoolean { key: String },
}

/// The summary of a skill an MCP server listed (its frontmatter as JSON), under the
/// rules `parse` applies to a file; the name is the one the server's URI spells.
pub fn summary_of_listed(name: &str, frontmatter: &serde_json::Map<String, serde_json::Value>) -> Result<Summary, ListedError> {
    use serde_json::Value as Json;
    if !valid_name(name) || name.len() > MAX_NAME_CHARS {
        return Err(ListedError::BadName { name: name.to_owned() });
    }
    let text_of = |key: &str| match frontmatter.get(key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(ListedError::NotAString { key: key.to_owned() }),
    };
    let description = text_of("description")?.filter(|d| !d.trim().is_empty()).ok_or(ListedError::NoDescription)?;
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(ListedError::DescriptionTooLong { chars });
    }
    let flag = |key: &str, default: bool| {
        let Some(value) = frontmatter.get(key) else { return Ok(default) };
        let value = match value {
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => n.as_i64().map_or(Value::Null, Value::Int),
            Json::String(s) => Value::Str(s.clone()),
            _ => Value::Null,
        };
        boolean(&value).ok_or_else(|| ListedError::NotABoolean { key: key.to_owned() })
    };
    Ok(Summary {
        name: name.to_owned(),
        description: description.to_owned(),
        when_to_use: text_of("when_to_use")?.map(str::to_owned),
        model_invocable: !flag("disable-model-invocation", false)?,
        user_invocable: flag("user-invocable", true)?,
    })
}

/// A frontmatter boolean in the spellings skill files use.
fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Int(1) => Some(true),
        Value::Int(0) => Some(false),
        Value::Str(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(frontmatter: &str, body: &str) -> String {
        format!("---\n{frontmatter}---\n{body}")
    }

    /// The frontmatter served over MCP's skills extension keeps every value as YAML wrote
    /// it, a float included; one JSON cannot hold is refused.
    #[test]
    fn the_served_frontmatter_keeps_floats_and_refuses_what_json_cannot_hold() {
        let text = file("name: pdf\ndescription: d\nversion: 2.0\nratio: 0.5\nn: 3\ntags: [a, 1]\nmetadata: { on: yes }\n", "");
        let json = frontmatter_json(&text).unwrap();
        assert_eq!(
            json.to_string(),
            r#"{"name":"pdf","description":"d","version":2.0,"ratio":0.5,"n":3,"tags":["a",1],"metadata":{"on":"yes"}}"#,
            "YAML 1.2: `yes` is a string"
        );
        assert!(frontmatter_json(&file("name: pdf\ndescription: d\nlimit: .inf\n", "")).is_err());
    }

    #[test]
    fn a_minimal_skill_parses_with_both_paths_open() {
        let p = parse(&file("name: pdf\ndescription: Fill PDF forms.\n", "Do this.\n"), "pdf").unwrap();
        assert_eq!(p.summary.name, "pdf");
        assert!(p.summary.model_invocable && p.summary.user_invocable);
        assert_eq!(p.body, "Do this.\n");
    }

    #[test]
    fn crlf_files_parse_and_keep_their_body_verbatim() {
        let text = "---\r\nname: pdf\r\ndescription: Fill forms.\r\nuser-invocable: no\r\n---\r\nLine one.\r\nLine two.\r\n";
        let p = parse(text, "pdf").unwrap();
        assert_eq!(p.summary.description, "Fill forms.");
        assert!(!p.summary.user_invocable);
        assert_eq!(p.body, "Line one.\r\nLine two.\r\n");
        // A byte-order mark is not part of the first line.
        assert!(parse(&format!("\u{feff}{text}"), "pdf").is_ok());
    }

    #[test]
    fn every_boolean_spelling_is_read_and_others_are_refused() {
        for (spelling, value) in [
            ("true", true),
            ("false", false),
            ("yes", true),
            ("no", false),
            ("on", true),
            ("off", false),
            ("1", true),
            ("0", false),
            ("Yes", true),
            ("OFF", false),
            ("\"1\"", true),
        ] {
            let p = parse(&file(&format!("name: a\ndescription: d\ndisable-model-invocation: {spelling}\n"), ""), "a").unwrap();
            assert_eq!(p.summary.model_invocable, !value, "disable-model-invocation: {spelling}");
            let p = parse(&file(&format!("name: a\ndescription: d\nuser-invocable: {spelling}\n"), ""), "a").unwrap();
            assert_eq!(p.summary.user_invocable, value, "user-invocable: {spelling}");
        }
        for bad in ["maybe", "2", "[]", "null"] {
            let e = parse(&file(&format!("name: a\ndescription: d\nuser-invocable: {bad}\n"), ""), "a").unwrap_err();
            assert_eq!(e.line, 4, "{bad}");
            assert!(e.reason.contains("true or false"), "{bad}: {}", e.reason);
        }
    }

    #[test]
    fn legacy_camel_case_keys_are_refused_where_written() {
        for (key, spelling) in LEGACY_KEYS {
            let e = parse(&file(&format!("name: a\ndescription: d\n{key}: true\n"), ""), "a").unwrap_err();
            assert_eq!(e.line, 4);
            assert!(e.reason.contains(spelling), "{}", e.reason);
        }
    }

    #[test]
    fn names_are_checked_against_the_pattern_the_length_and_the_folder() {
        for good in ["a", "pdf-forms", "v2", "a-1-b"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "pdf_forms", "pdf forms", "é"] {
            assert!(!valid_name(bad), "{bad}");
        }
        let e = parse(&file("name: Pdf\ndescription: d\n", ""), "Pdf").unwrap_err();
        assert_eq!(e.line, 2);
        let at_limit = "a".repeat(MAX_NAME_CHARS);
        assert!(parse(&file(&format!("name: {at_limit}\ndescription: d\n"), ""), &at_limit).is_ok());
        let past = "a".repeat(MAX_NAME_CHARS + 1);
        assert!(parse(&file(&format!("name: {past}\ndescription: d\n"), ""), &past).unwrap_err().reason.contains("at most 64"));
        let e = parse(&file("name: other\ndescription: d\n", ""), "pdf").unwrap_err();
        assert!(e.reason.contains("folder"), "{}", e.reason);
    }

    #[test]
    fn descriptions_are_required_and_bounded() {
        assert_eq!(parse(&file("name: a\n", ""), "a").unwrap_err().reason, "`description` is required");
        assert!(parse(&file("name: a\ndescription: \"  \"\n", ""), "a").is_err());
        let at_limit = "é".repeat(MAX_DESCRIPTION_CHARS);
        assert!(parse(&file(&format!("name: a\ndescription: {at_limit}\n"), ""), "a").is_ok());
        let past = "é".repeat(MAX_DESCRIPTION_CHARS + 1);
        assert!(parse(&file(&format!("name: a\ndescription: {past}\n"), ""), "a").is_err());
    }

    #[test]
    fn malformed_files_say_where() {
        assert_eq!(parse("name: a\n", "a").unwrap_err().line, 1);
        assert!(parse("---\nname: a\n", "a").unwrap_err().reason.contains("not closed"));
        let e = parse(&file("name: a\ndescription: x: y\n", ""), "a").unwrap_err();
        assert_eq!(e.line, 3, "the file's line, not the frontmatter's: {e:?}");
        assert!(parse(&file("- a\n", ""), "a").unwrap_err().reason.contains("mapping"));
        assert!(parse(&file("name: a\ndescription: d\nmetadata: 3\n", ""), "a").unwrap_err().reason.contains("metadata"));
        // Keys of other tools are accepted.
        assert!(
            parse(&file("name: a\ndescription: d\nlicense: MIT\nallowed-tools: Bash Read\nmetadata: { author: x }\n", ""), "a").is_ok()
        );
    }
}

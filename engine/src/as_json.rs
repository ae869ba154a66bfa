//! The spanned tree read as JSON, in place: the schema validator walks it
//! through jsonschema's `Json` representation trait, and typed configs
//! deserialize straight from it through a serde `Deserializer`. The document is
//! parsed once and never copied into a `serde_json::Value`.
//!
//! Both read a node as JSON the same way: YAML's null, booleans, strings,
//! sequences and mappings are JSON's; integers are integers; a float with no
//! fraction (`4096.0`) is an integer, as JSON Schema counts it; `.inf` and
//! `.nan`, which JSON cannot hold, read as strings.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use jsonschema::json::{Array, Json, JsonNumber, Node as JsonNode, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as JsonValue;

use crate::yaml::{Entry, Mapping, Node, Value};

/// A scalar's JSON reading.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    /// A float JSON cannot hold, read as its text.
    NonFinite(f64),
}

fn scalar(node: &Node) -> Option<Scalar<'_>> {
    Some(match &node.value {
        Value::Null => Scalar::Null,
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Int(i) => Scalar::Int(*i),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Scalar::Int(*f as i64),
        Value::Float(f) if f.is_finite() => Scalar::Float(*f),
        Value::Float(f) => Scalar::NonFinite(*f),
        Value::Str(s) => Scalar::Str(s),
        Value::Seq(_) | Value::Map(_) => return None,
    })
}

impl Node {
    /// This node as a `serde_json::Value` (a copy): for the few places that keep
    /// a piece of the document as JSON, such as a tool's settings.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::deserialize(self).expect("every node reads as JSON")
    }
}

// ---- serde -------------------------------------------------------------------

/// Why a node did not fit a type (the schema check runs first, so this means the
/// schema and the type disagree).
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

impl<'de> de::Deserializer<'de> for &'de Node {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.value {
            Value::Seq(items) => {
                let mut seq = Items(items.iter());
                let value = visitor.visit_seq(&mut seq)?;
                match seq.0.len() {
                    0 => Ok(value),
                    _ => Err(de::Error::invalid_length(items.len(), &"fewer elements")),
                }
            }
            Value::Map(map) => {
                let mut entries = Entries { iter: map.iter(), value: None };
                let value = visitor.visit_map(&mut entries)?;
                match entries.iter.len() {
                    0 => Ok(value),
                    _ => Err(de::Error::invalid_length(map.len(), &"fewer entries")),
                }
            }
            _ => match scalar(self).expect("not a collection") {
                Scalar::Null => visitor.visit_unit(),
                Scalar::Bool(b) => visitor.visit_bool(b),
                // As serde_json does: non-negative integers as u64, so unsigned fields take them.
                Scalar::Int(i) if i >= 0 => visitor.visit_u64(i as u64),
                Scalar::Int(i) => visitor.visit_i64(i),
                Scalar::Float(f) => visitor.visit_f64(f),
                Scalar::Str(s) => visitor.visit_borrowed_str(s),
                Scalar::NonFinite(f) => visitor.visit_string(f.to_string()),
            },
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match &self.value {
            // A unit variant: `strategy: first`.
            Value::Str(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            // A variant with data: `{ variant: data }`.
            Value::Map(map) if map.len() == 1 => {
                let (name, entry) = map.first().expect("one entry");
                visitor.visit_enum(Variant { name, value: &entry.node })
            }
            _ => Err(de::Error::invalid_type(unexpected(self), &"a variant name, or a map of one variant")),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

fn unexpected(node: &Node) -> de::Unexpected<'_> {
    match scalar(node) {
        Some(Scalar::Null) => de::Unexpected::Unit,
        Some(Scalar::Bool(b)) => de::Unexpected::Bool(b),
        Some(Scalar::Int(i)) => de::Unexpected::Signed(i),
        Some(Scalar::Float(f) | Scalar::NonFinite(f)) => de::Unexpected::Float(f),
        Some(Scalar::Str(s)) => de::Unexpected::Str(s),
        None if matches!(node.value, Value::Seq(_)) => de::Unexpected::Seq,
        None => de::Unexpected::Map,
    }
}

struct Items<'de>(std::slice::Iter<'de, Node>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|node| seed.deserialize(node)).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries<'de> {
    iter: crate::yaml::Iter<'de>,
    value: Option<&'de Node>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some((key, entry)) = self.iter.next() else { return Ok(None) };
        self.value = Some(&entry.node);
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        seed.deserialize(self.value.take().expect("a value follows its key"))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct Variant<'de> {
    name: &'de str,
    value: &'de Node,
}

impl<'de> de::EnumAccess<'de> for Variant<'de> {
    type Error = Error;
    type Variant = &'de Node;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, &'de Node), Error> {
        let name = seed.deserialize(de::value::BorrowedStrDeserializer::<Error>::new(self.name))?;
        Ok((name, self.value))
    }
}

impl<'de> de::VariantAccess<'de> for &'de Node {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        de::Deserialize::deserialize(self)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_seq(self, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(self, _fields: &'static [&'static str], visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_map(self, visitor)
    }
}

// ---- jsonschema ---------------------------------------------------------------

/// The spanned tree as a JSON representation for jsonschema.
pub struct Tree;

impl Json for Tree {
    type Node<'a> = &'a Node;
    type PreparedKey = String;
    type StringBuffer = ();

    // Alias expansion copies nodes: no node is its own descendant.
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(&Node) -> T) -> T {
        thread_local! {
            // Backs every property-name node on this thread, so names allocate only while it grows.
            static NAME: Cell<String> = const { Cell::new(String::new()) };
        }
        let mut name = NAME.take();
        name.clear();
        name.push_str(string);
        let nowhere = crate::diagnostic::Span { file: crate::diagnostic::FileId(0), line: 0, column: 0 };
        let node = Node::new(Value::Str(name), nowhere);
        let result = f(&node);
        if let Value::Str(name) = node.value {
            NAME.set(name);
        }
        result
    }
}

/// A number of the tree, as JSON Schema reads it.
#[derive(Clone, Copy, Debug)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl JsonNumber for Number {
    fn as_u64(&self) -> Option<u64> {
        match *self {
            Number::Int(i) => u64::try_from(i).ok(),
            Number::Float(_) => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match *self {
            Number::Int(i) => Some(i),
            Number::Float(_) => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        Some(match *self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        })
    }

    fn as_str(&self) -> Cow<'_, str> {
        Cow::Owned(match *self {
            Number::Int(i) => i.to_string(),
            Number::Float(f) => f.to_string(),
        })
    }

    fn to_number(&self) -> Cow<'_, serde_json::Number> {
        Cow::Owned(match *self {
            Number::Int(i) => i.into(),
            Number::Float(f) => serde_json::Number::from_f64(f).expect("finite"),
        })
    }

    /// As JSON Schema counts: a float without a fraction is an integer (the
    /// small ones are `Int` already; this holds for `1e16` too).
    fn is_integer(&self) -> bool {
        match *self {
            Number::Int(_) => true,
            Number::Float(f) => f.fract() == 0.0,
        }
    }

    fn is_written_as_integer(&self) -> bool {
        matches!(self, Number::Int(_))
    }
}

impl<'a> JsonNode<'a, Tree> for &'a Node {
    type Object = &'a Mapping;
    type Array = &'a [Node];
    type Number = Number;

    fn as_object(&self) -> Option<&'a Mapping> {
        match &self.value {
            Value::Map(map) => Some(map),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&'a [Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match scalar(self)? {
            Scalar::Str(s) => Some(Cow::Borrowed(s)),
            Scalar::NonFinite(f) => Some(Cow::Owned(f.to_string())),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<Number> {
        match scalar(self)? {
            Scalar::Int(i) => Some(Number::Int(i)),
            Scalar::Float(f) => Some(Number::Float(f)),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    fn json_type(&self) -> JsonType {
        match scalar(self) {
            Some(Scalar::Null) => JsonType::Null,
            Some(Scalar::Bool(_)) => JsonType::Boolean,
            Some(Scalar::Int(_) | Scalar::Float(_)) => JsonType::Number,
            Some(Scalar::Str(_) | Scalar::NonFinite(_)) => JsonType::String,
            None if matches!(self.value, Value::Seq(_)) => JsonType::Array,
            None => JsonType::Object,
        }
    }

    /// `const` and `enum` over scalars compare without building a JSON value;
    /// numbers compare as jsonschema compares them (exactly, not through `f64`).
    fn equals_value(&self, expected: &JsonValue) -> bool {
        match (scalar(self), expected) {
            (Some(Scalar::Null), JsonValue::Null) => true,
            (Some(Scalar::Bool(a)), JsonValue::Bool(b)) => a == *b,
            (Some(Scalar::Str(a)), JsonValue::String(b)) => a == b,
            (Some(Scalar::NonFinite(f)), JsonValue::String(b)) => f.to_string() == *b,
            (Some(Scalar::Int(a)), JsonValue::Number(b)) => jsonschema::json::cmp::equal_numbers(&Number::Int(a), b),
            (Some(Scalar::Float(a)), JsonValue::Number(b)) => jsonschema::json::cmp::equal_numbers(&Number::Float(a), b),
            (None, JsonValue::Array(_) | JsonValue::Object(_)) => jsonschema::json::cmp::equal(&self.to_json(), expected),
            _ => false,
        }
    }

    fn to_value(&self) -> Cow<'a, JsonValue> {
        Cow::Owned(self.to_json())
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(std::ptr::from_ref::<Node>(self) as usize))
    }
}

type Members<'a> = std::iter::Map<crate::yaml::Iter<'a>, fn((&'a String, &'a Entry)) -> (&'a str, &'a Node)>;

impl<'a> Object<'a, Tree> for &'a Mapping {
    type Node = &'a Node;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        Mapping::len(self)
    }

    fn get(&self, key: &String) -> Option<&'a Node> {
        Mapping::get(self, key.as_str()).map(|entry| &entry.node)
    }

    fn members(&self) -> Members<'a> {
        (*self).iter().map(|(key, entry)| (key.as_str(), &entry.node))
    }
}

impl<'a> Array<'a, Tree> for &'a [Node] {
    type Node = &'a Node;
    type ElementsIter = std::slice::Iter<'a, Node>;

    fn len(&self) -> usize {
        <[Node]>::len(self)
    }

    fn elements(&self) -> std::slice::Iter<'a, Node> {
        (*self).iter()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::diagnostic::FileId;

    fn read(text: &str) -> serde_json::Value {
        crate::yaml::parse(text, FileId(0)).unwrap().to_json()
    }

    #[test]
    fn nodes_read_as_json() {
        assert_eq!(
            read("a: [1, -2, 4096.0, 1.5, .inf, ~, true, 'x']\nb: { c: d }\n"),
            json!({ "a": [1, -2, 4096, 1.5, "inf", null, true, "x"], "b": { "c": "d" } })
        );
    }

    #[test]
    fn typed_reads_take_integers_options_and_enums() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        #[serde(rename_all = "snake_case")]
        enum Mode {
            First,
            Limit(u32),
        }
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Config {
            port: u16,
            ratio: f64,
            name: Option<String>,
            gone: Option<String>,
            modes: Vec<Mode>,
        }
        let node = crate::yaml::parse("port: 8080\nratio: 2\nname: x\ngone: null\nmodes: [first, { limit: 3 }]\n", FileId(0)).unwrap();
        let config = Config::deserialize(&node).unwrap();
        assert_eq!(config, Config { port: 8080, ratio: 2.0, name: Some("x".into()), gone: None, modes: vec![Mode::First, Mode::Limit(3)] });
        let wrong = crate::yaml::parse("port: 70000\nratio: 1\nmodes: []\n", FileId(0)).unwrap();
        assert!(Config::deserialize(&wrong).unwrap_err().to_string().contains("70000"));
    }

    /// The JSON copy validation used to read, written out independently of
    /// `scalar()` (as `yaml.rs` had it), so that the tests below compare the
    /// in-place reading against the rules, not against itself.
    fn reference_json(node: &crate::yaml::Node) -> serde_json::Value {
        use crate::yaml::Value;
        use serde_json::Value as J;
        match &node.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => J::from(*f as i64),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or_else(|| J::String(f.to_string()), J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(reference_json).collect()),
            Value::Map(m) => J::Object(m.iter().map(|(k, e)| (k.clone(), reference_json(&e.node))).collect()),
        }
    }

    #[test]
    fn to_json_follows_the_reference() {
        let text = "a: [1, -2, 4096.0, 1.0e16, -1.0e16, 1.5, .inf, -.inf, .nan, ~, true, 'x', 9007199254740993]\nb: { c: [d, {e: f}] }\n";
        let node = crate::yaml::parse(text, FileId(0)).unwrap();
        assert_eq!(node.to_json(), reference_json(&node));
    }

    /// The validator reading the tree in place and the validator reading the
    /// reference JSON copy give the same verdict and the same errors, over every
    /// keyword seam's schema uses and the numbers at the edges.
    #[test]
    fn the_schema_reads_the_tree_as_it_reads_a_json_copy() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "propertyNames": { "pattern": "^[a-z_]+$" },
            "properties": {
                "seam": { "const": 1 },
                "port": { "type": "integer", "minimum": 1, "maximum": 65535 },
                "ratio": { "type": "number", "exclusiveMaximum": 10 },
                "mode": { "enum": ["first", "last"] },
                "flag": { "type": "boolean" },
                "name": { "type": "string", "minLength": 2, "maxLength": 5 },
                "list": { "type": "array", "items": { "type": "string" }, "maxItems": 2, "uniqueItems": true },
                "either": { "anyOf": [{ "type": "boolean" }, { "type": "object", "required": ["a"] }] },
                "nothing": { "type": "null" },
                "pinned": { "const": { "a": [1, 2] } },
                "whole": { "type": "integer" },
                "mixed": { "enum": [9007199254740992_u64, 10000000000000001_u64, "inf", "x"] }
            }
        });
        let on_tree = jsonschema::options_for::<super::Tree>().build(&schema).unwrap();
        let on_json = jsonschema::validator_for(&schema).unwrap();
        let documents = [
            "seam: 1\nport: 8080\nratio: 2.5\nmode: first\nflag: true\nname: abc\nlist: [a, b]\neither: {a: 1}\nnothing: ~\npinned: {a: [1, 2.0]}\n",
            "seam: 1.0\nport: 4096.0\n",
            "seam: 2\n",
            "port: 0\n",
            "port: 70000\n",
            "port: 1.5\n",
            "port: '80'\n",
            "ratio: 10\n",
            "ratio: .inf\n",
            "mode: middle\n",
            "flag: yes\n",
            "name: a\n",
            "name: abcdef\n",
            "name: 12\n",
            "list: [a, a]\n",
            "list: [a, b, c]\n",
            "list: [1]\n",
            "either: {}\n",
            "either: true\n",
            "either: maybe\n",
            "nothing: 0\n",
            "pinned: {a: [2, 1]}\n",
            "Bad: 1\n",
            "other: 1\n",
            "[1, 2]\n",
            "whole: 1.0e16\n",
            "whole: -1.0e16\n",
            "whole: 1.5e16\n",
            "whole: 2.5\n",
            "mixed: .inf\n",
            "mixed: -.inf\n",
            "mixed: 9007199254740992\n",
            "mixed: 9007199254740993\n",
            "mixed: 1.0e16\n",
            "mixed: 10000000000000001\n",
            "mixed: x\n",
        ];
        for text in documents {
            let tree = crate::yaml::parse(text, FileId(0)).unwrap();
            let copy = reference_json(&tree);
            assert_eq!(on_tree.is_valid(&tree), on_json.is_valid(&copy), "is_valid of {text:?}");
            let paths = |errors: Vec<(String, String)>| {
                let mut errors = errors;
                errors.sort();
                errors
            };
            let from_tree =
                paths(on_tree.iter_errors(&tree).map(|e| (e.instance_path().to_string(), e.schema_path().to_string())).collect());
            let from_copy =
                paths(on_json.iter_errors(&copy).map(|e| (e.instance_path().to_string(), e.schema_path().to_string())).collect());
            assert_eq!(from_tree, from_copy, "errors of {text:?}");
        }
    }

    use serde::Deserialize;
}

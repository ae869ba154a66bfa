//! The JSON Schema of format v1, generated from the Rust types of the engine and
//! of every surface, and the mapping of schema errors to located diagnostics.
//!
//! Two schemas come out of one generator: the published one (mounts as a
//! `oneOf` over kinds, for editors) and the one seam validates with, where a
//! mount is checked by the schema of the kind its `kind` names, so a mistake is
//! reported inside that kind instead of as "not valid under any of the schemas".

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind as K;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value as Json, json};

use crate::as_json::Tree;
use crate::diagnostic::{Diagnostic, Span, pointer_segments};
use crate::model::{AgentDoc, Budgets, Serve, Subprocess, Workspace};
use crate::surface::{MountKind, Surface, locate};
use crate::units::{Duration, MAX_TIMER, Size};
use crate::yaml::Node;

/// The largest size any field accepts.
pub const MAX_SIZE: Size = Size::from_bytes(1 << 30);

pub struct Schemas {
    pub published: Json,
    /// The schema seam validates with; error schema paths point into it.
    checked: Json,
    root: jsonschema::Validator<Tree>,
    kinds: HashMap<&'static str, jsonschema::Validator<Tree>>,
    /// Every kind's property names, for "did you mean" and "belongs to another kind".
    kind_properties: Vec<(&'static str, Vec<String>)>,
}

fn def_name(kind: &str) -> String {
    kind.split(['.', '_'])
        .map(|p| {
            let mut c = p.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect::<String>()
        + "Mount"
}

/// What the generator makes of the engine's and the surfaces' types, before
/// they are put together as a composition's schema.
struct Generated {
    /// Every definition, each kind's (under its [`def_name`]), `Tools` and `Services` among them.
    defs: Map<String, Json>,
    /// A `$ref` to each kind's definition: the published schema's mount is one of them.
    mount_refs: Vec<Json>,
    /// Each kind with the name and the schema of its definition.
    kinds: Vec<(String, Json, &'static dyn MountKind)>,
    /// The schemas of an agent and of `serve`, written in place at the top.
    agent: Json,
    serve: Json,
    /// The default agent's `quota` (a list of rules), written at the top.
    quota: Json,
    /// The default agent's `disclosure`, written at the top.
    disclosure: Json,
    /// The patterns of a dynamic tool's `tools` key (`mcp__<server>__<tool>`), one per
    /// surface that has dynamic tools: the published `Tools` takes no other key.
    dynamic_keys: Vec<String>,
}

impl Generated {
    /// Runs the generator over the engine's types and every surface's services,
    /// fixed tools and mount kinds.
    fn new(surfaces: &[&'static dyn Surface]) -> Generated {
        let mut generator = SchemaSettings::draft2020_12().into_generator();
        let budgets = generator.subschema_for::<Budgets>();
        let workspace = generator.subschema_for::<Workspace>();
        let subprocess = generator.subschema_for::<Subprocess>();
        let agent = generator.subschema_for::<AgentDoc>();
        let serve = generator.subschema_for::<Serve>();
        let quota = generator.subschema_for::<Vec<crate::quota::QuotaDoc>>();
        let disclosure = generator.subschema_for::<crate::model::Disclosure>();
        let _ = generator.subschema_for::<Duration>();
        let _ = generator.subschema_for::<Size>();

        let mut services = Map::new();
        services.insert("workspace".into(), workspace.to_value());
        services.insert("subprocess".into(), subprocess.to_value());
        let mut tool_properties = Map::new();
        let mut mount_refs = Vec::new();
        let mut kinds = Vec::new();
        let mut dynamic_keys = Vec::new();
        for surface in surfaces {
            if let Some(prefix) = surface.dynamic_tool_prefix() {
                // As `tool_rules::dynamic_rule` reads a key: `<prefix><server>__<tool>`, or
                // `<prefix><server-glob>*` alone for every tool of the servers it matches.
                assert!(prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "a prefix a pattern takes as written");
                dynamic_keys.push(format!("^{prefix}(.+__.*|.*\\*)$"));
            }
            if let Some(s) = surface.service_schema(&mut generator) {
                services.insert(surface.service().into(), s.to_value());
            }
            for tool in surface.tools() {
                let settings = tool.settings_schema(&mut generator).to_value();
                tool_properties.insert(tool.name().into(), json!({ "anyOf": [{ "type": "boolean" }, settings] }));
            }
            for kind in surface.kinds() {
                let name = def_name(kind.name());
                let schema = kind.schema(&mut generator).to_value();
                mount_refs.push(json!({ "$ref": format!("#/$defs/{name}") }));
                kinds.push((name, schema, *kind));
            }
        }
        let mut defs = generator.take_definitions(true);

        for (name, schema, _) in &kinds {
            defs.insert(name.clone(), schema.clone());
        }
        defs.insert(
            "Tools".into(),
            json!({
                "description": "Tool visibility and budgets. Fixed tools are visible only where enabled; MCP tools (`mcp__<server>__<tool>`, globs allowed) are visible by default.",
                "type": "object",
                "properties": tool_properties,
                "additionalProperties": { "anyOf": [{ "type": "boolean" }, budgets.to_value()] },
            }),
        );
        defs.insert("Services".into(), json!({ "type": "object", "properties": services, "additionalProperties": false }));
        Generated {
            defs,
            mount_refs,
            kinds,
            agent: agent.to_value(),
            serve: serve.to_value(),
            quota: quota.to_value(),
            disclosure: disclosure.to_value(),
            dynamic_keys,
        }
    }

    /// The definitions an editor validates with: a `tools` key is a fixed tool or a
    /// dynamic tool's pattern, so `web_serch` is flagged as seam flags it. seam itself
    /// checks the looser `Tools` and reports an unknown key on its own, with a
    /// suggestion (`TOOLS_UNKNOWN_KEY`).
    fn published_defs(&self) -> Map<String, Json> {
        let mut defs = self.defs.clone();
        if let Some(Json::Object(tools)) = defs.get_mut("Tools") {
            let value = tools.remove("additionalProperties").unwrap_or(Json::Bool(true));
            let patterns: Map<String, Json> = self.dynamic_keys.iter().map(|pattern| (pattern.clone(), value.clone())).collect();
            tools.insert("patternProperties".into(), Json::Object(patterns));
            tools.insert("additionalProperties".into(), Json::Bool(false));
        }
        defs
    }

    /// The schema of a whole composition over `defs`, a mount being `mount`: the
    /// published schema and the checked one differ only there and in `defs`.
    fn composition(&self, mount: Json, defs: &Map<String, Json>) -> Json {
        let mut defs = defs.clone();
        defs.insert("Mount".into(), mount);
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "seam composition",
            "description": "A seam composition (format v1): mounts, tool visibility, provider pins and budgets.",
            "type": "object",
            "required": ["seam"],
            "additionalProperties": false,
            "properties": {
                "seam": { "description": "The format version.", "const": 1 },
                "name": { "type": "string" },
                "description": { "type": "string" },
                "extends": { "description": "Compositions this one is merged onto, in order; paths relative to this file.", "type": "array", "items": { "type": "string" } },
                "budgets": { "$ref": "#/$defs/Budgets" },
                "services": { "$ref": "#/$defs/Services" },
                "mounts": { "type": "object", "additionalProperties": { "$ref": "#/$defs/Mount" } },
                "tools": { "$ref": "#/$defs/Tools" },
                "prompts": { "description": "The default agent's rules over MCP mounts' prompts (`mcp__<server>__<prompt>`, globs allowed): `false` hides, the last match wins.", "type": "object", "additionalProperties": { "type": "boolean" } },
                "resources": { "description": "The default agent's rules over MCP mounts' resources, by mount id (globs allowed): `false` hides a mount's resources and templates.", "type": "object", "additionalProperties": { "type": "boolean" } },
                "quota": self.quota.clone(),
                "disclosure": self.disclosure.clone(),
                "agents": { "type": "object", "additionalProperties": self.agent.clone() },
                "serve": self.serve.clone(),
            },
            "$defs": defs,
        })
    }

    /// The definitions seam validates with: it also checks durations and sizes
    /// through a `format` (syntax and range in one place); the published schema
    /// keeps to `pattern`.
    fn checked_defs(&self) -> Map<String, Json> {
        let mut defs = self.defs.clone();
        for (def, format) in [("Duration", "duration"), ("Size", "size")] {
            if let Some(Json::Object(o)) = defs.get_mut(def) {
                o.insert("format".into(), format.into());
            }
        }
        defs
    }
}

/// A validator over the spanned tree that knows seam's own formats, `duration` and `size`.
fn compile(schema: &Json) -> jsonschema::Validator<Tree> {
    jsonschema::options_for::<Tree>()
        .should_validate_formats(true)
        .with_format("duration", |s: &str| Duration::parse(s).is_some_and(|d| (1..=MAX_TIMER.as_millis()).contains(&d.as_millis())))
        .with_format("size", |s: &str| Size::parse(s).is_some_and(|z| (1..=MAX_SIZE.bytes()).contains(&z.bytes())))
        .build(schema)
        .expect("the generated schema compiles")
}

/// The checked schema cut down to one kind's mount: its definitions, with the
/// root a `$ref` to the kind's, so an error's schema path still points into `checked`.
fn kind_schema(checked: &Json, def: &str) -> Json {
    let mut single = checked.clone();
    single["$ref"] = json!(format!("#/$defs/{def}"));
    for key in ["type", "required", "additionalProperties", "properties", "title", "description"] {
        single.as_object_mut().unwrap().remove(key);
    }
    single
}

impl Schemas {
    pub fn build(surfaces: &[&'static dyn Surface]) -> Schemas {
        let generated = Generated::new(surfaces);
        let mut published = generated.composition(json!({ "oneOf": &generated.mount_refs }), &generated.published_defs());
        strip_integer_formats(&mut published);
        // Names as seam takes them (`resolve::valid_id`, `resolve::agents`), for editors; seam
        // checks them itself, with its own codes (`MOUNT_ID_INVALID`, `AGENT_NAME_INVALID`).
        for (section, pattern) in [("mounts", "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"), ("agents", "^[A-Za-z0-9_-]{1,64}$")] {
            published["properties"][section]["propertyNames"] = json!({ "pattern": pattern });
        }
        // A mount is checked by the schema its `kind` names, not by the `oneOf`.
        let loose_mount = json!({ "type": "object", "required": ["kind"], "properties": { "kind": { "type": "string" } } });
        let loose = generated.composition(loose_mount, &generated.checked_defs());
        let root_validator = compile(&loose);
        let mut kinds = HashMap::new();
        let mut kind_properties = Vec::new();
        for (name, schema, kind) in &generated.kinds {
            kinds.insert(kind.name(), compile(&kind_schema(&loose, name)));
            let props = schema.get("properties").and_then(Json::as_object).map(|p| p.keys().cloned().collect()).unwrap_or_default();
            kind_properties.push((kind.name(), props));
        }
        Schemas { published, checked: loose, root: root_validator, kinds, kind_properties }
    }

    /// Validates the whole document; mounts with a known kind are validated by that kind's schema.
    /// Checks the spanned tree itself (read as JSON in place, see [`crate::as_json`]).
    pub fn validate(&self, tree: &Node, kinds: &[&'static dyn MountKind], out: &mut Vec<Diagnostic>) {
        let mapper = Mapper { tree, schema: &self.checked, schemas: self };
        mapper.report(&self.root, tree, String::new, None, out);
        let Some(mounts) = tree.get("mounts").and_then(Node::as_map) else { return };
        for (id, entry) in mounts {
            let mount = &entry.node;
            let Some(kind) = mount.get("kind").and_then(Node::as_str) else { continue };
            let base = || crate::diagnostic::pointer(["mounts", id.as_str()]);
            match self.kinds.get(kind) {
                Some(validator) => mapper.report(validator, mount, base, Some(kind), out),
                None => {
                    let pointer = format!("{}/kind", base());
                    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                    let mut d = Diagnostic::new(
                        crate::codes::MOUNT_UNKNOWN_KIND,
                        locate(tree, &pointer),
                        pointer,
                        format!("unknown mount kind `{kind}`"),
                    );
                    d.help = Some(match did_you_mean(kind, names.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`? kinds compiled in: {}", names.join(", ")),
                        None => format!("kinds compiled in: {}", names.join(", ")),
                    });
                    out.push(d);
                }
            }
        }
    }
}

/// schemars marks integers with `format: uint32` and the like, which are not
/// JSON Schema formats: strict validators (ajv) reject them. `minimum` says it.
pub(crate) fn strip_integer_formats(schema: &mut Json) {
    match schema {
        Json::Object(o) => {
            if o.get("format").and_then(Json::as_str).is_some_and(|f| f.starts_with("int") || f.starts_with("uint")) {
                o.remove("format");
            }
            o.values_mut().for_each(strip_integer_formats);
        }
        Json::Array(a) => a.iter_mut().for_each(strip_integer_formats),
        _ => {}
    }
}

/// The closest candidate, if one is close enough to be a likely typo.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c: &'a str| {
            // Transpositions and single slips count as close even in short words (`lps` → `lsp`).
            let close = strsim::osa_distance(word, c) <= (word.chars().count() / 4).max(1);
            let similarity = strsim::jaro_winkler(word, c);
            (if close { 1.0 + similarity } else { similarity }, c)
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

struct Mapper<'a> {
    tree: &'a Node,
    schema: &'a Json,
    schemas: &'a Schemas,
}

/// YAML 1.1 booleans are strings under YAML 1.2: say so where a boolean was meant.
fn yaml11_boolean_hint(d: Diagnostic, instance: &Json) -> Diagnostic {
    let yaml11 = ["yes", "no", "on", "off", "y", "n"];
    if instance.as_str().is_some_and(|v| yaml11.contains(&v.to_ascii_lowercase().as_str())) {
        d.with_help("YAML 1.2 reads `yes`, `no`, `on` and `off` as strings: write `true` or `false`")
    } else {
        d
    }
}

/// How a message names the value at a pointer: `timeout`, `args[2]`, or "the composition".
fn field_name(pointer: &str) -> String {
    let segments = pointer_segments(pointer);
    match segments.as_slice() {
        [] => "the composition".to_owned(),
        [.., parent, last] if last.parse::<usize>().is_ok() => format!("`{parent}[{last}]`"),
        [.., last] => format!("`{last}`"),
    }
}

fn type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a map",
    }
}

fn short(v: &Json) -> String {
    let s = match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > 60 { format!("{}…", s.chars().take(60).collect::<String>()) } else { s }
}

/// Where a schema error is, worked out once for whichever message it gets: its
/// JSON pointer, the span that pointer locates, and how a message names the value.
struct Place {
    pointer: String,
    span: Span,
    field: String,
}

/// A value written as a number and a unit (a duration, a size): whatever the
/// schema found wrong with it, the message says how to write one.
struct UnitField {
    code: crate::codes::Code,
    /// What the value is, as a message names it.
    what: &'static str,
    units: &'static str,
    example: &'static str,
    /// The unit a bare number most likely meant.
    likely_unit: &'static str,
}

const DURATION_FIELD: UnitField =
    UnitField { code: crate::codes::DURATION_INVALID, what: "duration", units: "ms, s, m, h", example: "30s", likely_unit: "s" };
const SIZE_FIELD: UnitField =
    UnitField { code: crate::codes::SIZE_INVALID, what: "size", units: "B, KB, KiB, MB, MiB, GB, GiB", example: "5MB", likely_unit: "MB" };

impl UnitField {
    /// The unit field an error's schema path is in, if any.
    fn of(schema_path: &str) -> Option<&'static UnitField> {
        if schema_path.starts_with("/$defs/Duration") {
            Some(&DURATION_FIELD)
        } else if schema_path.starts_with("/$defs/Size") {
            Some(&SIZE_FIELD)
        } else {
            None
        }
    }

    fn is_duration(&self) -> bool {
        self.what == "duration"
    }

    /// A bare number lacks its unit; a well-formed value is out of range; anything else is no such value.
    fn diagnostic(&self, instance: &Json, place: Place) -> Diagnostic {
        let Place { pointer, span, field } = place;
        let what = self.what;
        match instance {
            Json::Number(n) => {
                Diagnostic::new(self.code, span, &pointer, format!("{field} is a {what} and needs a unit: `{n}` alone is ambiguous"))
                    .with_help(format!("write it with one of {}, e.g. `{n}{}`", self.units, self.likely_unit))
            }
            Json::String(s) if crate::units::well_formed(s, self.is_duration()) => {
                let range = if self.is_duration() { format!("1ms to {}ms", MAX_TIMER.as_millis()) } else { format!("1B to {MAX_SIZE}") };
                Diagnostic::new(crate::codes::VALUE_OUT_OF_RANGE, span, &pointer, format!("{field} is `{s}`, outside the range {range}"))
            }
            other => Diagnostic::new(self.code, span, &pointer, format!("`{}` is not a {what}", short(other)))
                .with_help(format!("write a whole number and a unit ({}), e.g. `{}`", self.units, self.example)),
        }
    }
}

/// `token` where the kind takes `token_env`: a secret written into the composition.
fn secret_inline(key: &str, props: &[String], span: Span, pointer: &str) -> Option<Diagnostic> {
    let has = |suffix: &str| props.iter().any(|p| *p == format!("{key}_{suffix}"));
    if !has("env") {
        return None;
    }
    let or_file = if has("file") { format!(" or `{key}_file: PATH`") } else { String::new() };
    Some(
        Diagnostic::new(crate::codes::SECRET_INLINE, span, pointer, format!("`{key}` would put a secret in the composition"))
            .with_help(format!("name where it comes from instead: `{key}_env: VAR`{or_file}")),
    )
}

/// A string that is none of the names a field takes: they are listed, and the one it
/// likely misspells suggested.
fn not_one_of(found: &str, names: &[&Json], span: Span, pointer: String) -> Diagnostic {
    let names: Vec<&str> = names.iter().filter_map(|n| n.as_str()).collect();
    let listed = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    let d = Diagnostic::new(crate::codes::SCHEMA_INVALID, span, pointer, format!("`{}` is not one of {listed}", short(&Json::from(found))));
    match did_you_mean(found, names.iter().copied()) {
        Some(s) => d.with_help(format!("did you mean `{s}`?")),
        None => d,
    }
}

/// Whether a branch of an `anyOf`/`oneOf` is for a value of another type than the one at
/// `here` (a branch that is itself a choice, when each of its branches is). A duration or
/// size is written as a string or a number, so its type never rules a branch out.
fn wrong_type(branch: &[jsonschema::ValidationError<'static>], here: &str) -> bool {
    branch.iter().any(|e| {
        e.instance_path().as_str() == here
            && match e.kind() {
                K::Type { .. } => {
                    !e.schema_path().as_str().starts_with("/$defs/Duration") && !e.schema_path().as_str().starts_with("/$defs/Size")
                }
                K::AnyOf { context } | K::OneOfNotValid { context } => context.iter().all(|b| wrong_type(b, here)),
                _ => false,
            }
    })
}

/// A key no schema knows: likely a typo of one it does, else one of what is allowed.
fn unknown_key(key: &str, props: &[String], span: Span, pointer: String) -> Diagnostic {
    let d = Diagnostic::new(crate::codes::SCHEMA_UNKNOWN_KEY, span, pointer, format!("unknown key `{key}`"));
    if let Some(s) = did_you_mean(key, props.iter().map(String::as_str)) {
        d.with_help(format!("did you mean `{s}`?"))
    } else if !props.is_empty() {
        d.with_help(format!("expected one of: {}", props.join(", ")))
    } else {
        d
    }
}

/// A JSON Schema type as a message names what is expected.
fn type_word(t: &Json) -> &'static str {
    match t.as_str() {
        Some("object") => "a map",
        Some("array") => "a list",
        Some("string") => "a string",
        Some("integer") => "an integer",
        Some("number") => "a number",
        Some("boolean") => "a boolean (true or false)",
        Some("null") => "null",
        _ => "another type",
    }
}

impl Mapper<'_> {
    /// Every error of `validator` on `node` (at the pointer `base` gives), as
    /// diagnostics. `is_valid` stops at the first failure and builds no errors:
    /// the common, valid case pays only for it, and builds no pointer either.
    fn report(
        &self,
        validator: &jsonschema::Validator<Tree>,
        node: &Node,
        base: impl FnOnce() -> String,
        kind: Option<&str>,
        out: &mut Vec<Diagnostic>,
    ) {
        if validator.is_valid(node) {
            return;
        }
        let base = base();
        for error in validator.iter_errors(node) {
            self.map(&error, &base, kind, out);
        }
    }

    /// One schema error as diagnostics: a duration or size by its own rules, any
    /// other error by its kind, in words that name the field and what it needs.
    fn map(&self, error: &jsonschema::ValidationError<'_>, base: &str, kind: Option<&str>, out: &mut Vec<Diagnostic>) {
        let pointer = format!("{base}{}", error.instance_path().as_str());
        let schema_path = error.schema_path().as_str();
        let instance: &Json = error.instance();
        let place = Place { span: locate(self.tree, &pointer), field: field_name(&pointer), pointer };
        if let Some(unit) = UnitField::of(schema_path) {
            out.push(unit.diagnostic(instance, place));
            return;
        }
        let Place { pointer, span, field } = &place;
        match error.kind() {
            K::AdditionalProperties { unexpected } => self.unknown_keys(unexpected, schema_path, &place, kind, out),
            K::Required { property } => out.push(self.missing_field(property, place)),
            K::Constant { expected_value } if pointer == "/seam" => out.push(
                Diagnostic::new(
                    crate::codes::VERSION_UNSUPPORTED,
                    *span,
                    pointer,
                    format!("this seam reads format {expected_value}; found `seam: {instance}`"),
                )
                .with_help(format!("write `seam: {expected_value}`")),
            ),
            K::Constant { expected_value } => out.push(Diagnostic::new(
                crate::codes::SCHEMA_INVALID,
                *span,
                pointer,
                format!("{field} must be {expected_value}, found `{}`", short(instance)),
            )),
            K::Enum { options } => match (instance.as_str(), options.as_array()) {
                (Some(found), Some(options)) => out.push(not_one_of(found, &options.iter().collect::<Vec<_>>(), *span, pointer.clone())),
                _ => out.push(Diagnostic::new(
                    crate::codes::SCHEMA_INVALID,
                    *span,
                    pointer,
                    format!("`{}` is not one of {options}", short(instance)),
                )),
            },
            K::Type { kind: _ } => out.push(self.wrong_type(schema_path, instance, place)),
            K::Minimum { limit } | K::ExclusiveMinimum { limit } | K::Maximum { limit } | K::ExclusiveMaximum { limit } => {
                let op = match error.kind() {
                    K::Minimum { .. } => "≥",
                    K::ExclusiveMinimum { .. } => ">",
                    K::Maximum { .. } => "≤",
                    _ => "<",
                };
                let message = format!("{field} must be {op} {limit}, found {}", short(instance));
                out.push(Diagnostic::new(crate::codes::VALUE_OUT_OF_RANGE, *span, pointer, message));
            }
            K::Pattern { pattern } => {
                let d = Diagnostic::new(
                    crate::codes::SCHEMA_PATTERN,
                    *span,
                    pointer,
                    format!("`{}` does not match `{pattern}`", short(instance)),
                );
                // A pattern of a named type (a host name, an origin) says in words what it takes.
                out.push(match self.pattern_described(pattern) {
                    Some(what) => d.with_help(format!("it takes {what}")),
                    None => d,
                });
            }
            K::PropertyNames { error: inner } => out.push(self.invalid_key(inner, place)),
            K::AnyOf { context } | K::OneOfNotValid { context } => self.no_branch_fits(error, context, base, kind, place, out),
            K::MinLength { limit: 1 } => {
                out.push(Diagnostic::new(crate::codes::VALUE_OUT_OF_RANGE, *span, pointer, format!("{field} must not be empty")));
            }
            K::MinProperties { limit } => {
                let entries = if *limit == 1 { "one entry".to_owned() } else { format!("{limit} entries") };
                out.push(Diagnostic::new(crate::codes::VALUE_OUT_OF_RANGE, *span, pointer, format!("{field} needs at least {entries}")));
            }
            K::MinItems { .. } | K::MaxItems { .. } | K::MinLength { .. } | K::MaxLength { .. } | K::MaxProperties { .. } => {
                out.push(Diagnostic::new(crate::codes::VALUE_OUT_OF_RANGE, *span, pointer, format!("{field}: {}", error.masked())));
            }
            _ => out.push(Diagnostic::new(crate::codes::SCHEMA_INVALID, *span, pointer, format!("{field}: {}", error.masked()))),
        }
    }

    /// Each key `additionalProperties` refused, told apart by what it most likely
    /// is: a secret written in place, a field of a sibling kind, or a typo.
    fn unknown_keys(&self, unexpected: &[String], schema_path: &str, place: &Place, kind: Option<&str>, out: &mut Vec<Diagnostic>) {
        let props = self.properties_at(schema_path);
        for key in unexpected {
            let key_pointer = format!("{}/{}", place.pointer, crate::diagnostic::escape_pointer_segment(key));
            let key_span = self.key_span(&key_pointer).unwrap_or(place.span);
            let d = secret_inline(key, &props, key_span, &key_pointer)
                .or_else(|| kind.and_then(|kind| self.foreign_field(key, kind, key_span, &key_pointer)))
                .unwrap_or_else(|| unknown_key(key, &props, key_span, key_pointer));
            out.push(d);
        }
    }

    /// A key that another kind of the same family has (`lsp.rust`'s field under
    /// `lsp.python`): the mount was likely meant to be of that kind.
    fn foreign_field(&self, key: &str, kind: &str, span: Span, pointer: &str) -> Option<Diagnostic> {
        let family = kind.rsplit_once('.').map_or(kind, |(f, _)| f);
        let owners: Vec<&str> = self
            .schemas
            .kind_properties
            .iter()
            .filter(|(k, p)| *k != kind && k.starts_with(family) && p.iter().any(|p| p == key))
            .map(|(k, _)| *k)
            .collect();
        (!owners.is_empty()).then(|| {
            Diagnostic::new(
                crate::codes::MOUNT_FOREIGN_FIELD,
                span,
                pointer,
                format!("`{key}` is a field of `{}`, not of `{kind}`", owners.join("`, `")),
            )
        })
    }

    /// A missing field, located at the key of the map that lacks it; a missing
    /// `seam` at the top says what a composition starts with.
    fn missing_field(&self, property: &Json, place: Place) -> Diagnostic {
        let Place { pointer, span, .. } = place;
        let name = property.as_str().unwrap_or_default();
        let (code, message) = if pointer.is_empty() && name == "seam" {
            (crate::codes::VERSION_MISSING, "a composition starts with `seam: 1`".to_owned())
        } else {
            (crate::codes::SCHEMA_REQUIRED, format!("missing required field `{name}`"))
        };
        let at = if pointer.is_empty() { span } else { self.key_span(&pointer).unwrap_or(span) };
        Diagnostic::new(code, at, format!("{pointer}/{name}"), message)
    }

    /// A value of the wrong type, with the types the schema asked for in words.
    fn wrong_type(&self, schema_path: &str, instance: &Json, place: Place) -> Diagnostic {
        let expected = match self.schema.pointer(schema_path) {
            Some(Json::Array(types)) => types.iter().map(type_word).collect::<Vec<_>>().join(" or "),
            Some(t) => type_word(t).to_owned(),
            None => "another type".to_owned(),
        };
        let d = Diagnostic::new(
            crate::codes::SCHEMA_TYPE,
            place.span,
            place.pointer,
            format!("{} must be {expected}, found {}", place.field, type_name(instance)),
        );
        if expected.contains("boolean") { yaml11_boolean_hint(d, instance) } else { d }
    }

    /// A key that `propertyNames` refused, located at the key itself.
    fn invalid_key(&self, inner: &jsonschema::ValidationError<'_>, place: Place) -> Diagnostic {
        let key = inner.instance().as_str().unwrap_or_default().to_owned();
        let key_pointer = format!("{}/{}", place.pointer, crate::diagnostic::escape_pointer_segment(&key));
        let at = self.key_span(&key_pointer).unwrap_or(place.span);
        let why = match inner.kind() {
            K::Pattern { pattern } => format!("must match `{pattern}`"),
            other => format!("is invalid ({other:?})"),
        };
        Diagnostic::new(crate::codes::SCHEMA_KEY_INVALID, at, key_pointer, format!("key `{key}` {why}"))
    }

    /// An `anyOf` or `oneOf` no branch matched. The branches whose type fits the
    /// value are kept: if one is left, its errors are the real ones; otherwise the
    /// value has the wrong form, said once.
    fn no_branch_fits(
        &self,
        error: &jsonschema::ValidationError<'_>,
        context: &[Vec<jsonschema::ValidationError<'static>>],
        base: &str,
        kind: Option<&str>,
        place: Place,
        out: &mut Vec<Diagnostic>,
    ) {
        let here = error.instance_path().as_str();
        // An optional field is `anyOf [T, null]`: the null branch never explains a mistake.
        let null_branch = |branch: &Vec<jsonschema::ValidationError<'static>>| {
            branch
                .iter()
                .all(|e| matches!(e.kind(), K::Type { .. }) && self.schema.pointer(e.schema_path().as_str()) == Some(&json!("null")))
        };
        let fitting: Vec<&Vec<jsonschema::ValidationError<'static>>> =
            context.iter().filter(|branch| !null_branch(branch) && !wrong_type(branch, here)).collect();
        if let [branch] = fitting.as_slice() {
            for e in branch.iter() {
                self.map(e, base, kind, out);
            }
            return;
        }
        // Named values (an enum whose values are documented is a `oneOf` of constants).
        let constants: Option<Vec<&Json>> = fitting
            .iter()
            .flat_map(|branch| branch.iter())
            .map(|e| match e.kind() {
                K::Constant { expected_value } if e.instance_path().as_str() == here => Some(&**expected_value),
                _ => None,
            })
            .collect();
        let instance: &Json = error.instance();
        if let (Some(constants), Some(found)) = (constants.filter(|c| !c.is_empty()), instance.as_str()) {
            out.push(not_one_of(found, &constants, place.span, place.pointer));
            return;
        }
        // The common case: a tool entry, `true`, `false` or a map of settings.
        let expects = |t: &str| {
            context.iter().flatten().any(|e| {
                matches!(e.kind(), K::Type { .. })
                    && e.instance_path().as_str() == here
                    && self.schema.pointer(e.schema_path().as_str()) == Some(&json!(t))
            })
        };
        let message = if expects("boolean") && expects("object") {
            format!("{} must be true, false or a map, found {}", place.field, type_name(instance))
        } else {
            format!("{} has the wrong form: found {}", place.field, type_name(instance))
        };
        out.push(yaml11_boolean_hint(Diagnostic::new(crate::codes::SCHEMA_TYPE, place.span, place.pointer, message), instance));
    }

    fn key_span(&self, pointer: &str) -> Option<Span> {
        let segments = pointer_segments(pointer);
        let (_, key_span, depth) = self.tree.lookup(&segments);
        (depth == segments.len()).then_some(key_span).flatten()
    }

    /// Property names of the object schema an `additionalProperties` error came from.
    /// The description of the schema's named type whose pattern is `pattern`, on one
    /// line, its first letter lowered: what a value of it must be.
    fn pattern_described(&self, pattern: &str) -> Option<String> {
        let defs = self.schema.get("$defs")?.as_object()?;
        let described = defs.values().find(|d| d.get("pattern").and_then(Json::as_str) == Some(pattern))?.get("description")?.as_str()?;
        let sentence = described.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut chars = sentence.chars();
        let first = chars.next()?;
        Some(first.to_lowercase().chain(chars).collect::<String>().trim_end_matches('.').to_owned())
    }

    fn properties_at(&self, schema_path: &str) -> Vec<String> {
        let parent = schema_path.rsplit_once('/').map_or("", |(p, _)| p);
        self.schema
            .pointer(&format!("{parent}/properties"))
            .and_then(Json::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }
}

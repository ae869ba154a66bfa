//! The table of stable diagnostic codes the engine itself emits. Surfaces add
//! theirs through `Surface::codes`; `docs/codes.md` is generated from both and
//! a test fails when it drifts.

/// How bad a code is (and so every diagnostic of it). Ordered so that errors sort first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A code as emitted: a row of a code table (`code_table!`), never a bare string.
pub type Code = &'static CodeDoc;

/// A stable diagnostic code and what it means, for the code table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeDoc {
    pub code: &'static str,
    pub severity: Severity,
    pub meaning: &'static str,
}

/// A code equals its name, as clients and tests see it.
impl PartialEq<str> for CodeDoc {
    fn eq(&self, name: &str) -> bool {
        self.code == name
    }
}

/// A code is written as its name (`"SKILL_UNKNOWN"`), in every JSON seam gives.
impl serde::Serialize for CodeDoc {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code)
    }
}

/// A code reads as its name (`SKILL_UNKNOWN`).
impl std::fmt::Display for CodeDoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code)
    }
}

/// A table of codes: one constant per code (`&'static CodeDoc`, named as the code
/// is spelled), and `$table`, the table of them all. A code is emitted only
/// through its constant, so a code without a row does not compile, and
/// `tests/generated.rs` fails on a row no source uses.
#[macro_export]
macro_rules! code_table {
    ($table:ident { $($name:ident $severity:ident $meaning:literal;)* }) => {
        $(
            #[doc = $meaning]
            pub const $name: &$crate::codes::CodeDoc = &$crate::codes::CodeDoc {
                code: stringify!($name),
                severity: $crate::codes::Severity::$severity,
                meaning: $meaning,
            };
        )*
        /// Every code of this table.
        pub const $table: &[$crate::codes::CodeDoc] = &[$(*$name),*];
    };
}

code_table! { ENGINE_CODES {
    YAML_SYNTAX Error "The file is not well-formed YAML.";
    YAML_NOT_UTF8 Error "The file is not valid UTF-8.";
    YAML_DUPLICATE_KEY Error "A mapping has the same key twice.";
    YAML_COMPLEX_KEY Error "A mapping key is a list, a map or an alias; keys are plain strings.";
    YAML_UNKNOWN_TAG Error "A tag other than `!reset` (or a core `!!str`, `!!int`, …) is used.";
    YAML_ALIAS_LIMIT Error "Aliases expand to more nodes than the budget (100,000).";
    YAML_DEPTH_LIMIT Error "Mappings and lists nest deeper than 64 levels.";
    YAML_MULTIPLE_DOCUMENTS Error "The file holds more than one YAML document.";
    COMPOSITION_NOT_A_FILE Error "The composition is a FIFO, a device, a socket or a folder: seam reads compositions from regular files only, and reads nothing of this one.";
    COMPOSITION_TOO_LARGE Error "The composition and the files it extends hold more bytes than `--max-composition-bytes` (4 MiB by default); reading stops at the limit.";
    EXTENDS_INVALID Error "`extends` is not a list of paths.";
    EXTENDS_NOT_FOUND Error "A file named in `extends` cannot be read.";
    EXTENDS_NOT_A_FILE Error "A file named in `extends` is a FIFO, a device, a socket or a folder; nothing of it is read.";
    EXTENDS_NOT_MAPPING Error "A file named in `extends` holds a scalar or a list, not a composition (a map); its text is not quoted.";
    EXTENDS_CYCLE Error "`extends` leads back to a file already being loaded; the message names the chain.";
    EXTENDS_LIMIT Error "More than 64 files are pulled in through `extends`.";
    ENV_UNSET Error "`${VAR}` names an unset variable and gives no default.";
    ENV_REQUIRED Error "`${VAR:?message}` names an unset variable.";
    ENV_SYNTAX Error "A `${…}` is unclosed, names no valid variable, or has an unknown operator.";
    VERSION_MISSING Error "The document has no `seam:` version.";
    VERSION_UNSUPPORTED Error "`seam:` names a format version this binary does not read.";
    SCHEMA_UNKNOWN_KEY Error "A key the format does not have (with the closest known key).";
    SCHEMA_REQUIRED Error "A required field is missing.";
    SCHEMA_TYPE Error "A value has the wrong type.";
    SCHEMA_PATTERN Error "A string does not match its pattern.";
    SCHEMA_KEY_INVALID Error "A map key does not match its pattern.";
    SCHEMA_INVALID Error "Any other schema violation (a fallback: the format has no rule that reaches it today).";
    VALUE_OUT_OF_RANGE Error "A number, duration, size or length is outside its documented range.";
    DURATION_INVALID Error "A duration is not a whole number with a unit (`ms`, `s`, `m`, `h`); a bare number says which unit to add.";
    SIZE_INVALID Error "A size is not a whole number with a unit (`B`, `KB`, `KiB`, `MB`, `MiB`, `GB`, `GiB`).";
    SECRET_INLINE Error "A secret is written into the composition; name it with `*_env` or `*_file` instead.";
    SECRET_INTERPOLATED Error "`${…}` would copy a secret into the composition: a variable named like a secret (`GITHUB_TOKEN`, `OPENAI_API_KEY`) anywhere, or any `${…}` in an `mcp.http` header. Secrets are named (`*_env`, `*_file`, `env_passthrough`) and read at call time.";
    SECRET_SENT_IN_CLEAR Warning "A mount sends a secret (an API key, a bearer token, headers from the environment) over plain `http://` to a host other than loopback, where anyone on the way can read it.";
    WORKSPACE_WITHOUT_ROOT Warning "`services.workspace` has no `root` (absent, null, empty, or `${VAR:-}` of an unset variable): there is no implicit workspace (not the composition's folder), so it names none.";
    MOUNT_UNKNOWN_KIND Error "A mount's `kind` is not compiled into this binary.";
    MOUNT_FOREIGN_FIELD Error "A mount has a field of a sibling kind (`url` on `mcp.stdio`).";
    SERVE_TOKEN_CONFLICT Error "`serve` names both `bearer_token_env` and `bearer_token_file`; it takes one.";
    SERVE_TOKEN_UNREADABLE Error "(start, reload) A token `serve` names is unset, empty or unreadable; refused, so that no client is shut out.";
    SERVE_TOKEN_REQUIRED Error "(start, reload) seam listens beyond loopback and an agent's endpoint has no token; set one, or start with `--insecure-no-auth`.";
    SERVE_LIMIT_ORDER Error "`serve.max_request_bytes` is more than `serve.max_buffered_request_bytes`: a body that large could never be buffered.";
    MOUNT_ID_INVALID Error "A mount id is not 1–64 letters, digits, `_`, `-`, `.` starting with a letter or digit.";
    PIN_LOCK_MISSING Error "A mount pins what its server offers (`pin: locked`), and there is no lock beside the composition (`NAME.lock.json`); `seam lock` writes it.";
    PIN_LOCK_INVALID Error "The composition's lock cannot be used by a pinned mount: it cannot be read, is not a lock of this format, or locks another composition.";
    TOOL_UNSERVED Warning "A fixed tool (`web_search`, `web_fetch`, `lsp`, `skill`) is enabled for agents that see no mount serving it: every call would fail.";
    MOUNT_REQUIRED_INVISIBLE Warning "A `required: true` mount is visible to no agent.";
    AGENT_NAME_INVALID Error "An agent name is not 1–64 letters, digits, `_` or `-`.";
    AGENT_DEFAULT_PARENT Error "The `default` agent names a parent; it is the root.";
    AGENT_UNKNOWN_PARENT Error "An agent's `parent` is not an agent.";
    AGENT_PARENT_CYCLE Error "Agent parents form a cycle; the message names it.";
    AGENT_UNKNOWN_MOUNT Error "`agents.*.mounts` names a mount that is not defined.";
    TOOLS_UNKNOWN_KEY Error "A `tools` key names no fixed tool and no possible MCP glob.";
    TOOLS_INVALID_GLOB Error "A `tools` glob does not parse.";
    OFFER_RULE_INVALID_GLOB Error "A key of an agent's `prompts` or `resources` rules is not a valid glob.";
    TOOL_NAME_COLLISION Error "A mount that keeps its server's names (`naming: raw`) names a tool that something else an agent sees also serves (a fixed tool, another such mount): neither would be served to that agent.";
    ENV_EXECUTABLE_NOT_FOUND Error "(`--environment`) A command is not on PATH or not executable.";
    ENV_FILE_UNREADABLE Error "(`--environment`) A `*_file` secret cannot be read.";
    ENV_DIR_MISSING Error "(`--environment`) A directory the composition names does not exist.";
    IMPORT_SYNTAX Error "(seam import) The client's config is not JSON (comments and trailing commas allowed) or TOML, as its format is written; nothing is written.";
    IMPORT_INVALID Error "(seam import) The client's config is not what its format holds: no servers, a server that is not an object or has neither `command` nor `url`, a field of the wrong type; nothing is written.";
    IMPORT_SECRET_NOT_COPIED Warning "(seam import) A value the client's config writes inline (an `env` value, a header, a bearer token, a secret in an argument or a URL) was not copied; the composition names a variable instead (`env_passthrough`, `bearer_token_env`, `headers_env`, `url: ${VAR}`): set it in seam's environment. The value is never shown.";
    IMPORT_UNSUPPORTED Warning "(seam import) Part of the client's config has no seam equivalent and was not imported as it was (an `envFile`, an input prompt, an SSE server, a `${…}` seam does not expand, an unknown key); the message says what was written instead.";
    IMPORT_SERVER_DISABLED Warning "(seam import) The client's config disables a server (`enabled = false`, `\"disabled\": true`); its mount is written commented out.";
    IMPORT_MOUNT_RENAMED Warning "(seam import) A server's name is not a valid MCP mount id (1–32 letters, digits, `_` or `-`, no `__` or edge `_`), or equals another's but for case; its mount has another id, and its tools are named after it.";
    IMPORT_WINDOWS Warning "(seam import) A Windows-only command or path: `cmd /c X …` is unwrapped to `X …`; a Windows path (`C:\\…`, `.exe`) is kept as written.";
    COMPOSITION_UNREADABLE Error "(reload) The composition file cannot be read (deleted, unreadable); the live generation keeps serving.";
    COMPOSITION_READ_TIMEOUT Error "(reload) Reading and checking the composition took longer than 30 s (a file that never answers), or 4 earlier checks are still stuck that way; the reload is rejected, the live generation keeps serving and the next reload may start.";
    MOUNT_START_FAILED Error "(start, reload) A `required: true` mount did not come up; the whole reload is rejected.";
    AGENT_UNKNOWN Error "(tool result) The call names an agent the live generation does not have.";
    TOOL_UNKNOWN Error "(tool result) The agent's catalog has no tool of that name.";
    TOOL_UNAVAILABLE Error "(tool result) The mount behind the tool is not running (no runtime, or it failed to build).";
    TOOL_TIMEOUT Error "(tool result) The call outlived its budget (`timeout`) or its mount's `call_timeout`.";
    TOOL_CANCELLED Error "(tool result) The client cancelled the call.";
    TOOL_CALLS_EXCEEDED Error "(tool result) The client's session (a stdio client is one) already has `MAX_CALLS_IN_FLIGHT` (1,024) calls running; this one was refused at once.";
    PROMPT_UNKNOWN Error "(prompts/get) The agent lists no prompt of that name.";
    INPUT_STATE_UNKNOWN Error "(retry, -32602) A 2026-07-28 client's retry: the `requestState` is none seam is waiting on: never given, already answered (each is used once), given by another seam process, or its call has ended.";
    INPUT_STATE_EXPIRED Error "(retry, -32602) A 2026-07-28 client's retry: the call waited for the client's answers longer than `serve.input_timeout`; it was cancelled.";
    INPUT_STATE_WRONG_AGENT Error "(retry, -32602) A 2026-07-28 client's retry: the `requestState` was given to another agent's endpoint; the call keeps waiting for its own.";
    INPUT_STATE_WRONG_REQUEST Error "(retry, -32602) A 2026-07-28 client's retry: the retry names another tool or other arguments than the call that asked; the call keeps waiting.";
    INPUT_RESPONSE_INVALID Error "(retry, -32602) A 2026-07-28 client's retry: an answer in `inputResponses` does not read as the result its question asks for (`CreateMessageResult`, `ElicitResult`, `ListRootsResult`); the call keeps waiting.";
    SUBSCRIPTIONS_EXCEEDED Error "(subscribe, listen, -32600) The agent already holds `serve.max_subscriptions_per_agent` resource subscriptions (its sessions' and listen streams' together) or `serve.max_listen_streams_per_agent` listen streams, or the session `MAX_SUBSCRIPTIONS` (1,024); this one was refused.";
    INPUT_TIMEOUT Error "(question) A 2025-11-25 client did not answer a server's question (sampling, elicitation, roots) within `serve.input_timeout`; the question is withdrawn at the client and refused to the server.";
    TEST_FILE_INVALID Error "(seam test) A test file does not read as cases (`schemas/composition-test.schema.json`).";
    TEST_COMPOSITION_UNREADABLE Error "(seam test) The composition a case names cannot be read (or, with `--live`, written beside the test file to start it).";
    TEST_FIXTURE_INVALID Error "(seam test) A case's `tools`, `prompts` or `resources` fixture for a mount does not read as what an MCP server lists.";
    TEST_EXPECTATION_FAILED Error "(seam test) What an agent is served differs from what the case expects; the message says how.";
    AUDIT_UNWRITABLE Error "(start, reload) The trail `serve.audit` names cannot be kept: its folder or file cannot be made or opened for writing, or its `key_env` is unset or empty; refused, so that no request goes unrecorded.";
    QUOTA_EXCEEDED Error "(tool result) The request is past one of its agent's `quota` rules (calls per window, calls at once, or output bytes per window); the message says when to retry. A request other than a call gets -32600 with the code in `data.code` and the wait in `data.retry_after_ms` (null: when a running call ends). The server was not sent it.";
    QUOTA_RULE_INVALID Error "A `quota` rule limits nothing (no `calls`, `concurrent` or `output_bytes`), or its `tools` glob does not parse.";
    QUOTA_MOUNT_UNKNOWN Error "A `quota` rule names a `mount` the composition does not have.";
    APPROVAL_DECLINED Error "(tool result) The call needs a person's approval (`approve`), and the person asked declined it; the tool was not called.";
    APPROVAL_TIMEOUT Error "(tool result) The call needs a person's approval (`approve`), and none came within `serve.input_timeout`; the tool was not called.";
    APPROVAL_UNAVAILABLE Error "(tool result) The call needs a person's approval (`approve`), and nobody can be asked: the client declared no form elicitation, or there is no MCP client behind the call (`seam call`). A headless client cannot approve, by design; the tool was not called.";
    DISCLOSURE_GLOB_INVALID Error "A glob of `disclosure.always` does not parse.";
    DISCLOSURE_ABOVE_UNUSED Warning "`disclosure.above` is given with a `mode` other than `auto`, which alone reads it.";
    TOOL_SEARCH_INVALID Error "(tool result) `tool_search` or `tool_call` was called with arguments it does not take: no `query` or `name`, a query past 1,000 characters, `max_results` outside 1 to `disclosure.max_results`, `arguments` not an object, or `tool_call` naming seam's own `tool_search` or `tool_call`.";
    INPUT_CALLS_EXCEEDED Error "(question) The agent already has `MAX_WAITING_CALLS` calls waiting for their 2026-07-28 clients' answers; this question is refused to the server.";
} }

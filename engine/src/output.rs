//! What a tool call or a request to a mount answers: a tool's result (`ToolOutput`,
//! maybe carried unread as its mount's own type, `Payload`), or another request's
//! MCP result (`Answer`).

use std::sync::Arc;

use serde_json::{Map, Value as Json, json};

use crate::text::truncate_chars;

/// A tool call's result in MCP `CallToolResult` form (as it serializes, too).
#[derive(Clone, Debug, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// Content blocks, forwarded intact (text, image, audio, resource).
    pub content: Vec<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Json>,
    pub is_error: bool,
    /// The code of an error seam made (`error`, `typed_error`); `None` for a server's
    /// result, an error or not. What `/metrics` and the audit trail say of a failed call.
    #[serde(skip)]
    pub code: Option<crate::codes::Code>,
    /// A server's JSON-RPC error that the client must get as an error, not as
    /// this result: one it acts on itself (a URL elicitation required, -32042,
    /// which it answers by opening the URLs and calling again). The result
    /// still says it, for a caller that is not an MCP client (`seam call`).
    #[serde(skip)]
    pub relayed_error: Option<Box<crate::offers::RequestError>>,
    /// The call was answered with a task (SEP-2663), not a result: the server's
    /// `CreateTaskResult` as JSON, whose `taskId` the deployment replaces with
    /// one it minted (`crate::tasks`). Only for a client that declared tasks.
    #[serde(skip)]
    pub task: Option<Box<Json>>,
    /// The result as the mount's own type, carried unread (`Payload`): `content` and
    /// `structured_content` are then empty until something reads them (`read`).
    #[serde(skip)]
    pub payload: Option<Payload>,
}

/// A tool result as the mount's own type (an MCP mount's rmcp `CallToolResult`), which
/// the engine carries without reading: the front end takes it back as that type, so a
/// result goes from the server to the client with no JSON in between
/// (`docs/choices.md`). Only what must read it turns it into JSON.
#[derive(Clone)]
pub struct Payload {
    value: Arc<dyn std::any::Any + Send + Sync>,
    /// The result as MCP `CallToolResult` JSON (its content, `structuredContent`, `isError`).
    to_json: fn(&(dyn std::any::Any + Send + Sync)) -> Json,
    /// The URIs of the resources its content links to or embeds.
    links: fn(&(dyn std::any::Any + Send + Sync)) -> Vec<String>,
}

impl Payload {
    pub fn new<T: std::any::Any + Send + Sync>(
        value: T,
        to_json: fn(&(dyn std::any::Any + Send + Sync)) -> Json,
        links: fn(&(dyn std::any::Any + Send + Sync)) -> Vec<String>,
    ) -> Payload {
        Payload { value: Arc::new(value), to_json, links }
    }

    /// The value back as its own type, if it is one.
    pub fn take<T: std::any::Any + Send + Sync + Clone>(self) -> Option<T> {
        let value = self.value.downcast::<T>().ok()?;
        Some(Arc::try_unwrap(value).unwrap_or_else(|shared| (*shared).clone()))
    }

    /// The URIs of the resources its content links to or embeds.
    pub fn links(&self) -> Vec<String> {
        (self.links)(&*self.value)
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Payload")
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.value, &other.value)
    }
}

impl ToolOutput {
    /// The error result every surface uses: one text block `CODE: message`.
    pub fn error(code: crate::codes::Code, message: impl std::fmt::Display) -> ToolOutput {
        ToolOutput {
            content: vec![json!({ "type": "text", "text": format!("{}: {message}", code.code) })],
            structured_content: None,
            is_error: true,
            code: Some(code),
            relayed_error: None,
            task: None,
            payload: None,
        }
    }

    /// The result as its mount's own type, unread; `is_error` is read at once.
    pub fn carrying(payload: Payload, is_error: bool) -> ToolOutput {
        ToolOutput { is_error, payload: Some(payload), ..ToolOutput::default() }
    }

    /// Makes `content` and `structured_content` readable: a carried payload is turned
    /// into them (and no longer carried).
    pub fn read(&mut self) {
        if let Some(payload) = self.payload.take() {
            let read = ToolOutput::from_json((payload.to_json)(&*payload.value));
            (self.content, self.structured_content) = (read.content, read.structured_content);
        }
    }

    /// The URIs of the resources its content links to or embeds.
    pub fn links(&self) -> Vec<String> {
        match &self.payload {
            Some(payload) => payload.links(),
            None => crate::offers::linked_uris(&self.content),
        }
    }

    /// A surface's typed error: the `CODE: message` block, and `structuredContent.error`
    /// with the code, the message and the detail (the host, the provider, a reason).
    pub fn typed_error(code: crate::codes::Code, message: impl std::fmt::Display, detail: Map<String, Json>) -> ToolOutput {
        let message = message.to_string();
        let mut error = Map::new();
        error.insert("code".into(), Json::from(code.code));
        error.insert("message".into(), Json::from(message.clone()));
        error.extend(detail);
        ToolOutput { structured_content: Some(json!({ "error": error })), ..ToolOutput::error(code, message) }
    }

    /// The MCP `CallToolResult` JSON, as the output serializes; consumes the
    /// output, so content blocks (images) are not copied.
    pub fn into_json(mut self) -> Json {
        self.read();
        let mut out = Map::new();
        out.insert("content".into(), Json::Array(self.content));
        if let Some(s) = self.structured_content {
            out.insert("structuredContent".into(), s);
        }
        out.insert("isError".into(), Json::Bool(self.is_error));
        Json::Object(out)
    }

    /// An MCP `CallToolResult` JSON as an output: its content, `structuredContent` and
    /// `isError` (what `into_json` writes).
    pub fn from_json(result: Json) -> ToolOutput {
        let Json::Object(mut result) = result else { return ToolOutput::default() };
        let content = match result.remove("content") {
            Some(Json::Array(blocks)) => blocks,
            _ => Vec::new(),
        };
        let is_error = result.get("isError").and_then(Json::as_bool).unwrap_or(false);
        ToolOutput { content, structured_content: result.remove("structuredContent"), is_error, ..ToolOutput::default() }
    }

    /// The bytes of its content and `structuredContent` as JSON (a carried payload is read).
    pub fn json_bytes(&mut self) -> u64 {
        self.read();
        let size = |v: &Json| serde_json::to_vec(v).map_or(0, |b| b.len() as u64);
        self.content.iter().map(size).sum::<u64>() + self.structured_content.as_ref().map_or(0, size)
    }

    /// Cuts text blocks so their characters total at most `max`, marking the cut.
    pub fn truncate_text(&mut self, max: u64) {
        self.read();
        let mut left = max;
        let mut cut = 0u64;
        for block in &mut self.content {
            let Some(Json::String(text)) = block.get_mut("text") else { continue };
            let chars = text.chars().count() as u64;
            if chars <= left {
                left -= chars;
                continue;
            }
            truncate_chars(text, left);
            cut += chars - left;
            left = 0;
        }
        if cut > 0 {
            self.content.push(
                json!({ "type": "text", "text": format!("[seam: output truncated, {cut} more characters over max_output_chars {max}]") }),
            );
        }
    }
}

/// What a request was answered with: a tool's result, or another request's MCP result JSON.
#[derive(Debug)]
pub enum Answer {
    Tool(ToolOutput),
    Result(Json),
}

/// What a request ended with, as the front end is given it: a call always has a
/// result (seam's errors are results too), another request may fail.
pub type Answered = Result<Answer, crate::offers::RequestError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A result carried unread is read only by what must read it: its links are asked of
    /// it as they are, and the cut at `max_output_chars` or its JSON turn it into JSON once.
    #[test]
    fn a_carried_result_is_read_only_when_something_must() {
        #[derive(Clone)]
        struct Mine(&'static str);
        fn to_json(value: &(dyn std::any::Any + Send + Sync)) -> Json {
            let text = value.downcast_ref::<Mine>().map(|m| m.0).unwrap_or_default();
            json!({ "content": [{ "type": "text", "text": text }], "isError": false })
        }
        fn links(_: &(dyn std::any::Any + Send + Sync)) -> Vec<String> {
            vec!["x://linked".to_owned()]
        }
        let carried = ToolOutput::carrying(Payload::new(Mine("héllo world"), to_json, links), false);
        assert!(carried.content.is_empty(), "carried, not read");
        assert_eq!(carried.links(), ["x://linked"], "its links are asked of it, typed");
        assert_eq!(carried.clone().payload.unwrap().take::<Mine>().map(|m| m.0), Some("héllo world"), "taken back as its own type");
        let mut cut = carried.clone();
        cut.truncate_text(5);
        assert!(cut.payload.is_none(), "a cut reads it");
        assert_eq!(cut.content[0]["text"], "héllo");
        assert_eq!(carried.into_json(), json!({ "content": [{ "type": "text", "text": "héllo world" }], "isError": false }));
    }

    #[test]
    fn the_owned_json_of_an_output_is_what_it_serializes_to() {
        let plain = ToolOutput { content: vec![json!({ "type": "text", "text": "hi" })], ..ToolOutput::default() };
        let failed = ToolOutput::typed_error(crate::codes::TOOL_TIMEOUT, "slow", Map::new());
        for output in [plain, failed] {
            assert_eq!(serde_json::to_value(&output).unwrap(), output.clone().into_json());
        }
        assert!(serde_json::to_value(ToolOutput::default()).unwrap().get("structuredContent").is_none());
    }

    #[test]
    fn truncation_counts_characters_across_blocks_and_marks_the_cut() {
        let mut out = ToolOutput {
            content: vec![json!({"type":"text","text":"héllo"}), json!({"type":"image","data":"x"}), json!({"type":"text","text":"world"})],
            ..Default::default()
        };
        let mut at_limit = out.clone();
        at_limit.truncate_text(10);
        assert_eq!(at_limit, out, "exactly at the limit nothing is cut");
        out.truncate_text(9);
        assert_eq!(out.content[0]["text"], "héllo");
        assert_eq!(out.content[1]["type"], "image");
        assert_eq!(out.content[2]["text"], "worl");
        assert_eq!(out.content[3]["text"], "[seam: output truncated, 1 more characters over max_output_chars 9]");
    }
}

//! The search providers: `web.search.deepseek` (an auxiliary Anthropic-compatible
//! model call with the server-side `web_search` tool) and `web.search.searxng`
//! (a SearXNG instance's JSON API). Each gives per-query results; capping,
//! merging and presentation belong to the `web_search` tool.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value as Json, json};

use crate::{ConfigError, DeepseekSearch, SearxngSearch, WebError};

/// A citeable source.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Source {
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_at: Option<String>,
}

/// One query's result, sources in the provider's rank order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchResult {
    pub answer: Option<String>,
    pub sources: Vec<Source>,
}

/// A search provider.
pub trait SearchProvider: Send + Sync + 'static {
    /// Settings and credential for one `web_search` call, taken once; an error
    /// says why the provider is unavailable now.
    fn prepare(&self) -> Result<Arc<dyn PreparedSearch>, WebError>;
}

/// One call's snapshot, shared by its concurrent queries.
pub trait PreparedSearch: Send + Sync {
    fn query(self: Arc<Self>, query: String) -> BoxFuture<'static, Result<SearchResult, WebError>>;
}

/// A client that never follows a redirect: a provider's endpoint that redirects is an error, and `Location` is never contacted.
fn client(timeout: Option<std::time::Duration>) -> Result<reqwest::Client, ConfigError> {
    let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    if let Some(t) = timeout {
        builder = builder.timeout(t);
    }
    builder.build().map_err(|source| ConfigError::HttpClient { source })
}

fn provider_error(message: impl Into<String>) -> WebError {
    WebError::new(crate::codes::WEB_PROVIDER_ERROR, message)
}

/// The largest answer a search provider may send (a search answer is a few KiB).
pub const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// Sends a request and reads a JSON body: redirects, non-2xx statuses and
/// transport failures are provider errors (a short excerpt of an error body is kept).
/// The endpoint is shown as `seam_engine::redact::url` shows it, and reqwest's errors without
/// their URL (which would bring back what was masked).
async fn json_response(request: reqwest::RequestBuilder, endpoint: &str) -> Result<Json, WebError> {
    let endpoint = seam_engine::redact::url(endpoint);
    let response =
        request.send().await.map_err(|e| provider_error(format!("request to {endpoint} failed: {}", chain(&e.without_url()))))?;
    let status = response.status();
    if status.is_redirection() {
        return Err(provider_error(format!("{endpoint} answered HTTP {} (a redirect); redirects are refused", status.as_u16())));
    }
    let mut response = response;
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| provider_error(format!("reading the answer of {endpoint} failed: {}", chain(&e.without_url()))))?
    {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(provider_error(format!("{endpoint} answered with more than {MAX_ANSWER_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let excerpt: String = String::from_utf8_lossy(&body).chars().take(300).collect();
        return Err(provider_error(format!("{endpoint} answered HTTP {}: {excerpt}", status.as_u16())).with("status", status.as_u16()));
    }
    serde_json::from_slice(&body).map_err(|e| provider_error(format!("{endpoint} answered with invalid JSON: {e}")))
}

/// An error with its sources, which is where reqwest keeps the cause.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(&format!(": {s}"));
        source = s.source();
    }
    out
}

pub struct Deepseek {
    config: DeepseekSearch,
    client: reqwest::Client,
}

impl Deepseek {
    pub fn new(config: DeepseekSearch) -> Result<Deepseek, ConfigError> {
        Ok(Deepseek { config, client: client(None)? })
    }

    /// The key: from `api_key_file` when set (re-read now, so a rotated secret is
    /// picked up), else from `api_key_env`. Never printed.
    fn key(&self) -> Result<String, WebError> {
        let missing = |why: String| WebError::new(crate::codes::WEB_PROVIDER_CREDENTIAL_MISSING, why);
        let key = match &self.config.api_key_file {
            Some(file) => std::fs::read_to_string(file).map_err(|e| missing(format!("cannot read api_key_file {file}: {e}")))?,
            None => std::env::var(&self.config.api_key_env)
                .map_err(|_| missing(format!("environment variable {} is not set", self.config.api_key_env)))?,
        };
        let key = key.trim().to_owned();
        if key.is_empty() {
            let source = self.config.api_key_file.clone().unwrap_or_else(|| format!("environment variable {}", self.config.api_key_env));
            return Err(missing(format!("{source} is empty")));
        }
        Ok(key)
    }
}

struct DeepseekCall {
    client: reqwest::Client,
    settings: DeepseekSearch,
    key: String,
}

impl SearchProvider for Deepseek {
    fn prepare(&self) -> Result<Arc<dyn PreparedSearch>, WebError> {
        let key = self.key()?;
        Ok(Arc::new(DeepseekCall { client: self.client.clone(), settings: self.config.clone(), key }))
    }
}

impl PreparedSearch for DeepseekCall {
    fn query(self: Arc<Self>, query: String) -> BoxFuture<'static, Result<SearchResult, WebError>> {
        Box::pin(async move {
            let s = &self.settings;
            let endpoint = format!("{}/messages", s.base_url.trim_end_matches('/'));
            // The secret-free record of the auxiliary request, before it is sent.
            tracing::debug!(
                target: "web/deepseek-search-llm-request",
                endpoint = %endpoint, model = %s.model, max_tokens = s.max_tokens, max_uses = s.max_uses,
                "search request"
            );
            let body = json!({
                "model": s.model,
                "max_tokens": s.max_tokens,
                "messages": [{ "role": "user", "content": query }],
                "tools": [{ "type": "web_search_20250305", "name": "web_search", "max_uses": s.max_uses }],
            });
            let request = self
                .client
                .post(&endpoint)
                .header("x-api-key", &self.key)
                .bearer_auth(&self.key)
                .header("anthropic-version", &s.api_version)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
            let answer = json_response(request, &endpoint).await.map_err(|e| e.redacting(&self.key))?;
            map_messages(&answer).map_err(|e| e.redacting(&self.key))
        })
    }
}

/// An Anthropic `/messages` answer → a result: sources from the
/// `web_search_tool_result` blocks (deduplicated by URL, in order), snippets
/// from the citations of the text blocks, the answer from the text.
pub fn map_messages(answer: &Json) -> Result<SearchResult, WebError> {
    let blocks = answer["content"].as_array().ok_or_else(|| provider_error("the answer has no `content` blocks"))?;
    let mut result_blocks = 0;
    let mut upstream_errors = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let mut text = String::new();
    let mut cited: Vec<(String, String)> = Vec::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("web_search_tool_result") => {
                result_blocks += 1;
                match &block["content"] {
                    Json::Array(items) => {
                        for item in items {
                            let Some(url) = item["url"].as_str() else { continue };
                            if sources.iter().any(|s| s.url == url) {
                                continue;
                            }
                            sources.push(Source {
                                url: url.to_owned(),
                                title: item["title"].as_str().map(str::to_owned),
                                snippet: None,
                                published_at: item["page_age"].as_str().map(str::to_owned),
                            });
                        }
                    }
                    error => upstream_errors.push(error["error_code"].as_str().unwrap_or("unknown").to_owned()),
                }
            }
            Some("text") => {
                text.push_str(block["text"].as_str().unwrap_or_default());
                for c in block["citations"].as_array().into_iter().flatten() {
                    if let (Some(url), Some(cited_text)) = (c["url"].as_str(), c["cited_text"].as_str()) {
                        cited.push((url.to_owned(), cited_text.trim().to_owned()));
                    }
                }
            }
            _ => {}
        }
    }
    if result_blocks == 0 {
        return Err(provider_error("the answer has no `web_search_tool_result` blocks: the provider did not search"));
    }
    if sources.is_empty() && !upstream_errors.is_empty() {
        return Err(provider_error(format!("the provider's search failed: {}", upstream_errors.join(", "))));
    }
    for source in &mut sources {
        let mut snippets: Vec<&str> = Vec::new();
        for (url, t) in &cited {
            if *url == source.url && !t.is_empty() && !snippets.contains(&t.as_str()) {
                snippets.push(t);
            }
        }
        if !snippets.is_empty() {
            source.snippet = Some(snippets.join(" … "));
        }
    }
    let answer = Some(text.trim().to_owned()).filter(|t| !t.is_empty());
    Ok(SearchResult { answer, sources })
}

pub struct Searxng {
    config: SearxngSearch,
    client: reqwest::Client,
}

impl Searxng {
    pub fn new(config: SearxngSearch) -> Result<Searxng, ConfigError> {
        let client = client(config.timeout.map(|t| t.to_std()))?;
        Ok(Searxng { config, client })
    }
}

struct SearxngCall {
    client: reqwest::Client,
    settings: SearxngSearch,
}

impl SearchProvider for Searxng {
    fn prepare(&self) -> Result<Arc<dyn PreparedSearch>, WebError> {
        Ok(Arc::new(SearxngCall { client: self.client.clone(), settings: self.config.clone() }))
    }
}

impl PreparedSearch for SearxngCall {
    fn query(self: Arc<Self>, query: String) -> BoxFuture<'static, Result<SearchResult, WebError>> {
        Box::pin(async move {
            let s = &self.settings;
            let endpoint = format!("{}/search", s.base_url.trim_end_matches('/'));
            let mut params = vec![("q", query), ("format", "json".to_owned())];
            if !s.categories.is_empty() {
                params.push(("categories", s.categories.join(",")));
            }
            if let Some(language) = &s.language {
                params.push(("language", language.clone()));
            }
            let mut url = url::Url::parse(&endpoint)
                .map_err(|e| provider_error(format!("base_url `{}` is not a URL: {e}", seam_engine::redact::url(&s.base_url))))?;
            url.query_pairs_mut().extend_pairs(&params);
            Ok(map_searxng(&json_response(self.client.get(url), &endpoint).await?))
        })
    }
}

/// SearXNG's JSON: `results` → sources; `answers` and `infoboxes` → the answer text.
pub fn map_searxng(answer: &Json) -> SearchResult {
    let mut sources: Vec<Source> = Vec::new();
    for r in answer["results"].as_array().into_iter().flatten() {
        let Some(url) = r["url"].as_str() else { continue };
        if sources.iter().any(|s| s.url == url) {
            continue;
        }
        let text = |k: &str| r[k].as_str().map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
        sources.push(Source { url: url.to_owned(), title: text("title"), snippet: text("content"), published_at: text("publishedDate") });
    }
    let mut parts: Vec<String> = Vec::new();
    for a in answer["answers"].as_array().into_iter().flatten() {
        // Older instances give strings; newer ones objects with `answer`.
        if let Some(t) = a.as_str().or_else(|| a["answer"].as_str()) {
            parts.push(t.trim().to_owned());
        }
    }
    for i in answer["infoboxes"].as_array().into_iter().flatten() {
        let title = i["infobox"].as_str().unwrap_or_default().trim();
        let content = i["content"].as_str().unwrap_or_default().trim();
        match (title.is_empty(), content.is_empty()) {
            (false, false) => parts.push(format!("{title}: {content}")),
            (true, false) => parts.push(content.to_owned()),
            (false, true) => parts.push(title.to_owned()),
            (true, true) => {}
        }
    }
    parts.retain(|p| !p.is_empty());
    let answer = (!parts.is_empty()).then(|| parts.join("\n\n"));
    SearchResult { answer, sources }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_map_to_sources_with_cited_snippets() {
        let answer = json!({
            "content": [
                { "type": "server_tool_use", "id": "s1", "name": "web_search", "input": { "query": "rust" } },
                { "type": "web_search_tool_result", "tool_use_id": "s1", "content": [
                    { "type": "web_search_result", "url": "https://a.test/", "title": "A", "page_age": "2026-01-02", "encrypted_content": "x" },
                    { "type": "web_search_result", "url": "https://b.test/", "title": "B", "encrypted_content": "y" },
                    { "type": "web_search_result", "url": "https://a.test/", "title": "A again", "encrypted_content": "z" }
                ]},
                { "type": "text", "text": "Rust is ", "citations": [] },
                { "type": "text", "text": "a language.", "citations": [
                    { "type": "web_search_result_location", "url": "https://a.test/", "title": "A", "cited_text": "Rust is a language", "encrypted_index": "e" },
                    { "type": "web_search_result_location", "url": "https://a.test/", "title": "A", "cited_text": "Rust is a language", "encrypted_index": "e" }
                ]}
            ]
        });
        let r = map_messages(&answer).unwrap();
        assert_eq!(r.answer.as_deref(), Some("Rust is a language."));
        assert_eq!(r.sources.len(), 2);
        assert_eq!(r.sources[0].snippet.as_deref(), Some("Rust is a language"));
        assert_eq!(r.sources[0].published_at.as_deref(), Some("2026-01-02"));
        assert_eq!(r.sources[1], Source { url: "https://b.test/".into(), title: Some("B".into()), snippet: None, published_at: None });
    }

    #[test]
    fn an_answer_without_result_blocks_is_a_provider_error() {
        let e = map_messages(&json!({ "content": [{ "type": "text", "text": "I did not search." }] })).unwrap_err();
        assert_eq!(e.code, "WEB_PROVIDER_ERROR");
        let e = map_messages(&json!({ "content": [
            { "type": "web_search_tool_result", "content": { "type": "web_search_tool_result_error", "error_code": "max_uses_exceeded" } }
        ]}))
        .unwrap_err();
        assert!(e.message.contains("max_uses_exceeded"), "{}", e.message);
    }

    #[test]
    fn searxng_results_answers_and_infoboxes_map() {
        let r = map_searxng(&json!({
            "query": "q", "number_of_results": 2,
            "results": [
                { "url": "https://a.test/", "title": "A", "content": "about a", "engine": "e", "publishedDate": "2026-03-01T00:00:00" },
                { "url": "https://a.test/", "title": "dup" },
                { "url": "https://b.test/", "title": "B", "content": "" }
            ],
            "answers": ["forty-two", { "answer": "42", "url": "https://c.test/" }],
            "infoboxes": [{ "infobox": "Douglas Adams", "content": "Author.", "urls": [] }],
            "suggestions": [], "corrections": [], "unresponsive_engines": []
        }));
        assert_eq!(r.sources.len(), 2);
        assert_eq!(r.sources[1].snippet, None);
        assert_eq!(r.answer.as_deref(), Some("forty-two\n\n42\n\nDouglas Adams: Author."));
    }
}

//! `web.fetch.http`: the fetcher. reqwest with rustls, no cookies, no ambient
//! proxy, no redirects of its own: redirects are followed here, hop by hop, each
//! one checked like the first URL. Names are resolved by [`GuardedResolver`],
//! which checks every address before reqwest may connect to it and hands
//! reqwest only those addresses, so there is no second lookup to rebind.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::header::{CONTENT_TYPE, HeaderValue, LOCATION};
use url::Url;

use seam_engine::runtime::truncate_chars;

use crate::guard::{self, Policy, Refusal};
use crate::{ConfigError, HttpFetch, WebError};

/// The body of a fetched resource: the closed union the Web surface promises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Html(String),
    Text(String),
}

/// One fetch's result. A non-2xx status is a result too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    pub final_url: Url,
    pub status: u16,
    pub body: Body,
    /// The body was cut at `max_response_bytes` or `max_body_chars`.
    pub truncated: bool,
}

/// Looks names up; the system resolver by default, a fixed table in tests.
pub trait Lookup: Send + Sync + 'static {
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// `getaddrinfo`, through tokio.
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host.as_str(), 0)).await?.map(|a| a.ip()).collect()) })
    }
}

/// A name whose addresses the guard refused; found again in reqwest's error chain.
#[derive(Debug)]
struct BlockedAddress {
    host: String,
    range: &'static str,
}

impl std::fmt::Display for BlockedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` resolves into {}", self.host, self.range)
    }
}

impl std::error::Error for BlockedAddress {}

/// The resolver reqwest uses: every address a name resolves to is checked, and
/// the name is refused if any is blocked (a mixed answer is how rebinding is
/// staged). Only the checked addresses are returned.
pub struct GuardedResolver {
    policy: Policy,
    lookup: Arc<dyn Lookup>,
}

impl GuardedResolver {
    pub fn new(policy: Policy, lookup: Arc<dyn Lookup>) -> GuardedResolver {
        GuardedResolver { policy, lookup }
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        let exempt = self.policy.exempt(&host);
        let lookup = self.lookup.clone();
        Box::pin(async move {
            // Refused before any lookup (also checked on the URL; a resolver sees every name).
            if guard::is_loopback_name(&host) && !exempt {
                return Err(Box::new(BlockedAddress { host, range: "loopback (a `localhost` name)" }) as _);
            }
            let addresses = lookup.lookup(host.clone()).await?;
            if !exempt && let Some(range) = addresses.iter().find_map(|ip| guard::blocked_range(*ip)) {
                return Err(Box::new(BlockedAddress { host, range }) as _);
            }
            let checked: Vec<SocketAddr> = addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(Box::new(checked.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// What the fetcher may return as a body, by media type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Html,
    Text,
}

/// The accepted media types: HTML and XHTML as HTML; `text/*`, JSON, XML and
/// their `+json` / `+xml` kinds as text.
fn form_of(essence: &str) -> Option<Form> {
    match essence {
        "text/html" | "application/xhtml+xml" => Some(Form::Html),
        "application/json" | "application/xml" => Some(Form::Text),
        e if e.starts_with("text/") || e.ends_with("+json") || e.ends_with("+xml") => Some(Form::Text),
        _ => None,
    }
}

/// A `Content-Type` header: its form and its charset (UTF-8 when none is named).
fn content_type(header: Option<&HeaderValue>) -> Result<(Form, &'static encoding_rs::Encoding), WebError> {
    let unsupported = |what: String| WebError::new(crate::codes::WEB_UNSUPPORTED_CONTENT_TYPE, what);
    let Some(value) = header else { return Err(unsupported("the response names no Content-Type".into())) };
    let value = value.to_str().map_err(|_| unsupported("the Content-Type header is not text".into()))?;
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let form = form_of(&essence).ok_or_else(|| unsupported(format!("content type `{essence}` is not HTML, text, JSON or XML")))?;
    let mut encoding = encoding_rs::UTF_8;
    for param in parts {
        let Some((key, label)) = param.split_once('=') else { continue };
        if key.trim().eq_ignore_ascii_case("charset") {
            let label = label.trim().trim_matches('"');
            encoding = encoding_rs::Encoding::for_label(label.as_bytes())
                // Labels of the replacement decoder (iso-2022-kr…) would turn the page into one U+FFFD.
                .filter(|e| *e != encoding_rs::REPLACEMENT)
                .ok_or_else(|| unsupported(format!("charset `{label}` is not one seam can decode")))?;
        }
    }
    Ok((form, encoding))
}

pub struct Fetcher {
    client: reqwest::Client,
    config: HttpFetch,
    policy: Policy,
}

impl Fetcher {
    pub fn new(config: HttpFetch) -> Result<Fetcher, ConfigError> {
        Fetcher::with_lookup(config, Arc::new(SystemLookup))
    }

    pub fn with_lookup(config: HttpFetch, lookup: Arc<dyn Lookup>) -> Result<Fetcher, ConfigError> {
        let policy = Policy {
            allow_private_networks: config.allow_private_networks,
            allow_hosts: config.allow_hosts.iter().map(|h| guard::normalize_host(h)).collect(),
        };
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(config.user_agent.clone())
            .dns_resolver(Arc::new(GuardedResolver::new(policy.clone(), lookup)))
            .build()
            .map_err(|source| ConfigError::HttpClient { source })?;
        Ok(Fetcher { client, config, policy })
    }

    /// Fetches one URL under one timeout over connect, headers and body.
    pub async fn fetch(&self, raw: &str) -> Result<Fetched, WebError> {
        let limit = self.config.timeout;
        match tokio::time::timeout(limit.to_std(), self.fetch_untimed(raw)).await {
            Ok(result) => result,
            Err(_) => Err(WebError::new(crate::codes::WEB_FETCH_TIMEOUT, format!("`{raw}` did not finish within {limit}"))),
        }
    }

    async fn fetch_untimed(&self, raw: &str) -> Result<Fetched, WebError> {
        let mut url = guard::check_url(raw, self.config.max_url_length as usize, &self.policy).map_err(refusal)?;
        let mut hops = 0;
        loop {
            let mut response = self.client.get(url.clone()).send().await.map_err(|e| send_error(&url, e))?;
            let status = response.status().as_u16();
            if matches!(status, 301 | 302 | 303 | 307 | 308) {
                let next = self.redirect_target(&url, &response, hops)?;
                hops += 1;
                url = next;
                continue;
            }
            let (form, encoding) = content_type(response.headers().get(CONTENT_TYPE))?;
            let max_bytes = self.config.max_response_bytes.bytes();
            if let Some(declared) = response.content_length().filter(|n| *n > max_bytes) {
                return Err(WebError::new(
                    crate::codes::WEB_FETCH_TOO_LARGE,
                    format!("the response declares {declared} bytes; max_response_bytes is {max_bytes}"),
                ));
            }
            let (text, truncated) = self.read_body(&mut response, encoding, max_bytes).await.map_err(|e| send_error(&url, e))?;
            let body = match form {
                Form::Html => Body::Html(text),
                Form::Text => Body::Text(text),
            };
            return Ok(Fetched { final_url: url, status, body, truncated });
        }
    }

    /// The next hop of a redirect, checked: present, parseable, without
    /// credentials, same-origin, within `max_redirects`, and past the guard.
    fn redirect_target(&self, from: &Url, response: &reqwest::Response, hops: u32) -> Result<Url, WebError> {
        let status = response.status().as_u16();
        let invalid = |why: String| WebError::new(crate::codes::WEB_REDIRECT_INVALID, why).with("url", from.as_str());
        let location = response.headers().get(LOCATION).ok_or_else(|| invalid(format!("HTTP {status} without a Location header")))?;
        let location = location.to_str().map_err(|_| invalid("the Location header is not text".into()))?;
        let next = from.join(location).map_err(|e| invalid(format!("Location `{location}` is not a URL: {e}")))?;
        if hops >= self.config.max_redirects {
            return Err(WebError::new(
                crate::codes::WEB_TOO_MANY_REDIRECTS,
                format!("`{from}` redirects (HTTP {status}) past max_redirects {}", self.config.max_redirects),
            )
            .with("location", next.as_str()));
        }
        let limit = self.config.max_url_length as usize;
        if next.as_str().len() > limit {
            return Err(WebError::new(
                crate::codes::WEB_INVALID_URL,
                format!("a redirect's target is {} bytes long; the limit is {limit}", next.as_str().len()),
            ));
        }
        guard::check_parsed(&next, &self.policy).map_err(refusal)?;
        if !guard::same_origin(from, &next) {
            return Err(WebError::new(
                crate::codes::WEB_REDIRECT_BLOCKED,
                format!(
                    "`{from}` redirects to another origin (`{}`); only same-origin redirects are followed",
                    next.origin().ascii_serialization()
                ),
            )
            .with("location", next.as_str()));
        }
        Ok(next)
    }

    /// Streams the body through the decoder, stopping at `max_bytes` of body or
    /// `max_body_chars` of text, whichever comes first. Only the decoded text is
    /// kept. A body of exactly `max_bytes` is not flagged: the cut is known only
    /// when a byte past it arrives.
    async fn read_body(
        &self,
        response: &mut reqwest::Response,
        encoding: &'static encoding_rs::Encoding,
        max_bytes: u64,
    ) -> Result<(String, bool), reqwest::Error> {
        let max_chars = self.config.max_body_chars;
        let mut decoder = encoding.new_decoder_with_bom_removal();
        let mut text = String::new();
        let mut chars = 0u64;
        let mut read = 0u64;
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await? {
            let room = (max_bytes - read) as usize;
            let take = &chunk[..chunk.len().min(room)];
            read += take.len() as u64;
            chars += decode(&mut decoder, take, &mut text, false);
            if chars > max_chars {
                truncate_chars(&mut text, max_chars);
                return Ok((text, true));
            }
            if take.len() < chunk.len() {
                truncated = true;
                break;
            }
        }
        // At a byte cut, an incomplete sequence is dropped rather than turned into U+FFFD.
        if !truncated {
            chars += decode(&mut decoder, &[], &mut text, true);
        }
        if chars > max_chars {
            truncate_chars(&mut text, max_chars);
            truncated = true;
        }
        Ok((text, truncated))
    }
}

/// Decodes `bytes` onto `text`; how many characters it added.
fn decode(decoder: &mut encoding_rs::Decoder, bytes: &[u8], text: &mut String, last: bool) -> u64 {
    let start = text.len();
    let needed = decoder.max_utf8_buffer_length(bytes.len()).unwrap_or(bytes.len() * 3 + 16);
    text.reserve(needed);
    let (_, _, _) = decoder.decode_to_string(bytes, text, last);
    text[start..].chars().count() as u64
}

fn refusal(r: Refusal) -> WebError {
    match r {
        Refusal::Invalid(why) => WebError::new(crate::codes::WEB_INVALID_URL, why),
        Refusal::Credentials(what) => {
            WebError::new(crate::codes::WEB_BLOCKED_URL, format!("the URL carries {what} before its host; seam sends no credentials"))
        }
        Refusal::LoopbackName(host) => WebError::new(crate::codes::WEB_BLOCKED_ADDRESS, format!("`{host}` is a loopback name"))
            .with("host", host)
            .with("range", "loopback (a `localhost` name)"),
        Refusal::Address { host, range } => {
            WebError::new(crate::codes::WEB_BLOCKED_ADDRESS, format!("`{host}` is in {range}")).with("host", host).with("range", range)
        }
    }
}

/// A transport error: the guard's refusal when it was one, else a fetch failure.
fn send_error(url: &Url, e: reqwest::Error) -> WebError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(err) = source {
        if let Some(blocked) = err.downcast_ref::<BlockedAddress>() {
            return WebError::new(crate::codes::WEB_BLOCKED_ADDRESS, blocked.to_string())
                .with("host", blocked.host.clone())
                .with("range", blocked.range);
        }
        source = err.source();
    }
    WebError::new(crate::codes::WEB_FETCH_FAILED, format!("fetching `{url}` failed: {}", crate::search::chain(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_map_to_html_text_or_refusal() {
        let form = |v: &str| content_type(Some(&HeaderValue::from_str(v).unwrap())).map(|(f, e)| (f, e.name()));
        assert_eq!(form("text/html"), Ok((Form::Html, "UTF-8")));
        assert_eq!(form("Application/XHTML+XML; charset=ISO-8859-1"), Ok((Form::Html, "windows-1252")));
        assert_eq!(form("text/plain; charset=\"shift_jis\""), Ok((Form::Text, "Shift_JIS")));
        assert_eq!(form("application/json"), Ok((Form::Text, "UTF-8")));
        assert_eq!(form("application/problem+json"), Ok((Form::Text, "UTF-8")));
        assert_eq!(form("application/atom+xml"), Ok((Form::Text, "UTF-8")));
        assert_eq!(form("text/csv"), Ok((Form::Text, "UTF-8")));
        for refused in
            ["application/pdf", "image/png", "application/octet-stream", "text/html; charset=klingon", "text/plain; charset=iso-2022-kr"]
        {
            assert_eq!(form(refused).unwrap_err().code, "WEB_UNSUPPORTED_CONTENT_TYPE", "{refused}");
        }
        assert_eq!(content_type(None).unwrap_err().code, "WEB_UNSUPPORTED_CONTENT_TYPE");
    }

    #[test]
    fn characters_are_cut_at_the_limit_not_before() {
        let mut s = "héllo".to_owned();
        assert!(!truncate_chars(&mut s, 5));
        assert!(truncate_chars(&mut s, 4));
        assert_eq!(s, "héll");
    }
}

//! Secrets kept out of what seam shows. A composition may hold a secret by
//! mistake (seam refuses it, and says so), and a URL may carry one from the
//! environment; neither is quoted back, in diagnostics, `/status`, the status
//! page, the log or a command's output.
//!
//! What is masked (as [`MASK`]):
//! - in a URL seam shows ([`url`]): its userinfo, and every query value;
//! - in any text ([`text`]): the token after `Bearer` or `Basic`, a URL's
//!   password and the values of its secret-named query parameters, and words
//!   that start like well-known credentials (`sk-`, `ghp_`, `github_pat_`,
//!   `xox?-`, `AKIA`);
//! - in a line quoted from a composition ([`line`]): all that, and the values
//!   of secret-named keys (`api_key: …`, `password = …`, `X-Api-Key: …`).
//!
//! A name says a secret by `is_secret_name`, its words split at
//! `_` and `-`; a key that names where a secret is (`*_env`, `*_file`) holds none.

use std::borrow::Cow;
use std::ops::Range;

/// What a secret is shown as.
pub const MASK: &str = "***";

/// `url` as seam shows it: userinfo and query values masked. Text that is not a URL
/// is shown as [`text`] shows it.
pub fn url(url: &str) -> Cow<'_, str> {
    let Ok(mut parsed) = url::Url::parse(url) else { return text(url) };
    if parsed.cannot_be_a_base() || (parsed.username().is_empty() && parsed.password().is_none() && parsed.query().is_none()) {
        return Cow::Borrowed(url);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let _ = parsed.set_password(None);
        let _ = parsed.set_username(MASK);
    }
    if parsed.query().is_some() {
        let pairs: Vec<String> = parsed.query_pairs().map(|(name, _)| name.into_owned()).collect();
        let query: Vec<String> = pairs.iter().map(|name| format!("{name}={MASK}")).collect();
        parsed.set_query(Some(&query.join("&")));
    }
    Cow::Owned(parsed.to_string())
}

/// What in `url` is a secret written into it: a password, or the value of a query
/// parameter named like a secret (`?api_key=…`). A user name alone is none.
pub fn secret_in_url(url: &str) -> Option<&'static str> {
    let parsed = url::Url::parse(url).ok()?;
    if parsed.password().is_some_and(|p| !p.is_empty()) {
        return Some("a password");
    }
    parsed.query_pairs().any(|(name, value)| is_secret_key(&name) && !value.is_empty()).then_some("a secret-named query parameter")
}

/// `text` with every secret it shows masked (the rules at the top, but for keys).
pub fn text(text: &str) -> Cow<'_, str> {
    let ranges = secret_ranges(text, false);
    if ranges.is_empty() { Cow::Borrowed(text) } else { Cow::Owned(masked(text, &ranges, 0).0) }
}

/// A line of a composition as a diagnostic quotes it, secrets masked (values of
/// secret-named keys too); and where `caret` (a character index) is in the masked line.
pub fn line(line: &str, caret: usize) -> (String, usize) {
    let ranges = secret_ranges(line, true);
    masked(line, &ranges, caret)
}

/// `text` with each byte range in `ranges` (sorted, apart) as [`MASK`], and the
/// character `caret` moved to where it is then (to a mask's start, if inside one).
fn masked(text: &str, ranges: &[Range<usize>], caret: usize) -> (String, usize) {
    let caret_byte = text.char_indices().nth(caret).map_or(text.len(), |(at, _)| at);
    let mut out = String::with_capacity(text.len());
    let mut new_caret = None;
    let mut at = 0;
    for range in ranges {
        if new_caret.is_none() && caret_byte < range.end {
            let before = caret_byte.min(range.start);
            new_caret = Some(out.chars().count() + text[at..before.max(at)].chars().count());
        }
        out.push_str(&text[at..range.start]);
        out.push_str(MASK);
        at = range.end;
    }
    let new_caret = new_caret.unwrap_or_else(|| out.chars().count() + text[at..caret_byte.max(at)].chars().count());
    out.push_str(&text[at..]);
    (out, new_caret)
}

/// The byte ranges of `text` that hold secrets, sorted and merged.
fn secret_ranges(text: &str, keys: bool) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    schemes(text, &mut ranges);
    url_secrets(text, &mut ranges);
    prefixed(text, &mut ranges);
    if keys {
        key_values(text, &mut ranges);
    }
    ranges.retain(|r| !r.is_empty());
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    merged
}

/// Whether a byte ends a token: whitespace, quotes, and what closes or separates in YAML and JSON.
fn ends_token(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b',' | b'}' | b']' | b'`')
}

/// From `start`, the end of the token there.
fn token_end(text: &str, start: usize) -> usize {
    text.as_bytes()[start..].iter().position(|b| ends_token(*b)).map_or(text.len(), |n| start + n)
}

/// The credential after an authorization scheme: `Bearer <token>` (any case), `Basic <token>`;
/// a token is at least 6 characters, so that prose ("bearer of news") keeps its words.
fn schemes(text: &str, ranges: &mut Vec<Range<usize>>) {
    let lower = text.to_ascii_lowercase();
    let found =
        lower.match_indices("bearer").map(|(at, _)| (at, "bearer".len())).chain(text.match_indices("Basic").map(|(at, w)| (at, w.len())));
    for (at, length) in found {
        let word_start = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
        let after = at + length;
        let spaces = text.as_bytes()[after..].iter().take_while(|b| **b == b' ' || **b == b'\t').count();
        let start = after + spaces;
        if !word_start || spaces == 0 || start >= text.len() {
            continue;
        }
        let end = token_end(text, start);
        if end - start >= 6 {
            ranges.push(start..end);
        }
    }
}

/// A password in `scheme://user:password@host`, and the values of secret-named query
/// parameters (`?api_key=…`, `&token=…`).
fn url_secrets(text: &str, ranges: &mut Vec<Range<usize>>) {
    for (at, _) in text.match_indices("://") {
        let start = at + 3;
        let authority_end = text.as_bytes()[start..]
            .iter()
            .position(|b| matches!(b, b'/' | b'?' | b'#') || ends_token(*b))
            .map_or(text.len(), |n| start + n);
        if let Some(userinfo_end) = text[start..authority_end].rfind('@').map(|n| start + n)
            && let Some(colon) = text[start..userinfo_end].find(':').map(|n| start + n)
        {
            ranges.push(colon + 1..userinfo_end);
        }
    }
    // One pass: a parameter's name starts after `?`, `&` or `;` and ends at its `=`.
    let bytes = text.as_bytes();
    let mut name_start: Option<usize> = None;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'?' | b'&' | b';' => name_start = Some(at + 1),
            b'=' => {
                if let Some(start) = name_start.take()
                    && at > start
                    && is_secret_key(&text[start..at])
                {
                    let end =
                        bytes[at + 1..].iter().position(|b| *b == b'&' || *b == b'#' || ends_token(*b)).map_or(text.len(), |n| at + 1 + n);
                    ranges.push(at + 1..end);
                    at = end;
                    continue;
                }
            }
            b if ends_token(b) => name_start = None,
            _ => {}
        }
        at += 1;
    }
}

/// Words that start like well-known credentials, with at least a few characters after the prefix.
fn prefixed(text: &str, ranges: &mut Vec<Range<usize>>) {
    const PREFIXES: [&str; 5] = ["sk-", "ghp_", "github_pat_", "AKIA", "xox"];
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    for prefix in PREFIXES {
        for (at, _) in text.match_indices(prefix) {
            if at > 0 && word(bytes[at - 1]) {
                continue;
            }
            let mut rest = at + prefix.len();
            if prefix == "xox" {
                // Slack's tokens: `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`…
                if !(bytes.get(rest).is_some_and(u8::is_ascii_alphabetic) && bytes.get(rest + 1) == Some(&b'-')) {
                    continue;
                }
                rest += 2;
            }
            let end = bytes[rest..].iter().position(|b| !word(*b)).map_or(text.len(), |n| rest + n);
            let long_enough = if prefix == "AKIA" {
                end - rest >= 12 && bytes[rest..end].iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
            } else {
                end - rest >= 6
            };
            if long_enough {
                ranges.push(at..end);
            }
        }
    }
}

/// Whether a key (a field, a header, a query parameter) holds a secret by its name.
fn is_secret_key(key: &str) -> bool {
    let key = key.trim_matches(|c| c == '"' || c == '\'');
    let lower = key.to_ascii_lowercase();
    if lower.ends_with("_env") || lower.ends_with("_file") {
        return false;
    }
    matches!(lower.as_str(), "authorization" | "proxy-authorization") || is_secret_name(&key.replace('-', "_"))
}

/// The longest key whose value is masked: a key is a word, and the search for one goes back
/// no further, so that a line of separators is scanned in linear time.
const MAX_KEY_BYTES: usize = 128;

/// What a key starts after, besides whitespace and the line's start: a flow map's
/// or a flow list's opening, or the comma between flow entries.
const BEFORE_A_KEY: [char; 3] = ['{', ',', '['];

/// The values of secret-named keys: `key: value` as YAML writes it (block or flow), `key=value`.
/// Linear in the text: no separator inside a value already masked is looked at, a key is
/// looked for at most [`MAX_KEY_BYTES`] back, and whether a value is in a flow map is read
/// from the first `{` found once.
fn key_values(text: &str, ranges: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let first_brace = text.find('{');
    let mut masked_until = 0;
    for (at, separator) in text.match_indices([':', '=']) {
        if at < masked_until {
            continue;
        }
        // A `:` inside a URL (`https://`, `host:8080`) separates no key from its value.
        let next = bytes.get(at + 1).copied();
        if separator == ":" && next.is_some_and(|b| !b.is_ascii_whitespace()) {
            continue;
        }
        let key_end = at - bytes[..at].iter().rev().take(MAX_KEY_BYTES).take_while(|b| b.is_ascii_whitespace()).count();
        // The key: the word of key characters just before, itself after whitespace, `BEFORE_A_KEY` or the line's start.
        let key_char = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'"' | b'\'');
        let key_start = key_end - bytes[..key_end].iter().rev().take(MAX_KEY_BYTES).take_while(|b| key_char(b)).count();
        let after_a_delimiter = text[..key_start].chars().next_back().is_none_or(|c| c.is_whitespace() || BEFORE_A_KEY.contains(&c));
        let key = &text[key_start..key_end];
        if key.is_empty() || !after_a_delimiter || !is_secret_key(key) {
            continue;
        }
        let value_start = at + 1 + bytes[at + 1..].iter().take_while(|b| b.is_ascii_whitespace()).count();
        if value_start >= text.len() {
            continue;
        }
        let value_end = match bytes[value_start] {
            quote @ (b'"' | b'\'') => bytes[value_start + 1..].iter().position(|b| *b == quote).map_or(text.len(), |n| value_start + 2 + n),
            _ => {
                let flow = first_brace.is_some_and(|brace| brace < key_start);
                let stop = |i: usize| {
                    let b = bytes[i];
                    (flow && matches!(b, b',' | b'}' | b']')) || (b == b'#' && bytes[i - 1].is_ascii_whitespace())
                };
                (value_start + 1..text.len()).find(|i| stop(*i)).map_or(text.len(), |i| i)
            }
        };
        let value = text[value_start..value_end].trim_end();
        ranges.push(value_start..value_start + value.len());
        masked_until = value_end;
    }
}

/// A variable whose name says it holds a secret: one of its `_`-separated
/// words is a secret's word (`GITHUB_TOKEN`, `OPENAI_API_KEY`, `SIGNING_KEYS`;
/// `AUTH` and `COOKIE` only last: `BASIC_AUTH`), or a word ends with one that cannot end an innocent word
/// (`DEEPSEEKAPIKEY`, `GITHUBTOKEN`, `DBPASSWORD`). Not `TOKENIZER_PATH`, and
/// not `MONKEY`: a bare `KEY` ending is too common to mean a secret.
pub fn is_secret_name(name: &str) -> bool {
    // Not TOKENS: `MAX_TOKENS` is a model setting, not a secret.
    const WORDS: [&str; 14] = [
        "KEY",
        "KEYS",
        "APIKEY",
        "APIKEYS",
        "TOKEN",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "PAT",
    ];
    const ENDINGS: [&str; 8] = ["APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"];
    let ends_with = |word: &str, ending: &str| {
        word.len() >= ending.len() && word.as_bytes()[word.len() - ending.len()..].eq_ignore_ascii_case(ending.as_bytes())
    };
    // AUTH and COOKIE only as the last word: `BASIC_AUTH` holds one, `AUTH_URL` and `COOKIE_NAME` name one.
    const LAST_WORDS: [&str; 2] = ["AUTH", "COOKIE"];
    let words: Vec<&str> = name.split('_').collect();
    words.iter().any(|w| WORDS.iter().any(|s| w.eq_ignore_ascii_case(s)) || ENDINGS.iter().any(|e| ends_with(w, e)))
        || words.last().is_some_and(|w| LAST_WORDS.iter().any(|s| w.eq_ignore_ascii_case(s)))
}

#[cfg(test)]
mod tests {
    use super::{line, secret_in_url, text, url};

    fn masked(l: &str) -> String {
        line(l, 0).0
    }

    #[test]
    fn values_of_secret_named_keys_are_masked_and_their_names_kept() {
        assert_eq!(masked("    bearer_token: sk-live-0123456789"), "    bearer_token: ***");
        assert_eq!(masked("  api_key: \"abc def\"  # mine"), "  api_key: ***  # mine");
        assert_eq!(masked("headers: { X-Api-Key: abc123, Accept: json }"), "headers: { X-Api-Key: ***, Accept: json }");
        assert_eq!(masked("  password=hunter2"), "  password=***");
        assert_eq!(masked("  apiKey: zz"), "  apiKey: ***");
        // What names where a secret is holds none; other keys are quoted as written.
        assert_eq!(masked("    bearer_token_env: MY_TOKEN"), "    bearer_token_env: MY_TOKEN");
        assert_eq!(masked("    api_key_file: ./key"), "    api_key_file: ./key");
        assert_eq!(masked("  max_tokens: 4096"), "  max_tokens: 4096");
        assert_eq!(masked("  url: https://example.com:8443/mcp"), "  url: https://example.com:8443/mcp");
    }

    #[test]
    fn tokens_urls_and_well_known_credentials_are_masked_anywhere() {
        assert_eq!(masked("      Authorization: Bearer abc.def"), "      Authorization: ***");
        assert_eq!(text("sent `Bearer abc.def` and `Basic dXNlcjpw`"), "sent `Bearer ***` and `Basic ***`");
        assert_eq!(text("url: http://alice:hunter2@127.0.0.1:9/mcp"), "url: http://alice:***@127.0.0.1:9/mcp");
        assert_eq!(text("http://127.0.0.1:9/mcp?v=1&api_key=s3cret#x"), "http://127.0.0.1:9/mcp?v=1&api_key=***#x");
        for secret in ["sk-proj-abcdef", "ghp_abcdef123456", "github_pat_11ABCDEFG", "xoxb-123456-abc", "AKIAIOSFODNN7EXAMPLE"] {
            assert_eq!(text(&format!("found {secret}, here")), "found ***, here", "{secret}");
        }
        // Too short, or inside a word, to be one.
        for plain in ["sk-x", "task-runner", "disk-usage-report", "AKIAbc", "xoxo-", "the basic principle", "bearer", "bearer of news"] {
            assert_eq!(text(plain), plain, "{plain}");
        }
    }

    /// A key after a multi-byte whitespace (U+0085, NEL) is found at its character's end: the
    /// robustness test's arbitrary bytes once made the scanner cut inside that character.
    #[test]
    fn keys_after_multi_byte_whitespace_are_read_at_a_character_boundary() {
        assert_eq!(masked("\u{85}api_key: abcdef"), "\u{85}api_key: ***");
        assert_eq!(masked("\u{3000}x:\u{85}é= y"), "\u{3000}x:\u{85}é= y");
    }

    /// Text made of separators and keys is scanned in linear time: a line of a few hundred
    /// KiB of `=`, of `api_key: `, or of `?a&b=` took quadratic time to mask before (a
    /// line of a 4 MiB composition would not have been done within hours).
    #[test]
    fn pathological_text_is_masked_in_one_pass() {
        let n = 256 << 10;
        let long = |unit: &str| unit.repeat(n / unit.len());
        for plain in ["=", ":", "a=b="] {
            let text_of = long(plain);
            assert_eq!(text(&text_of), text_of.as_str(), "nothing secret in {plain:?}…");
            assert_eq!(line(&text_of, 1).0, text_of);
        }
        // The first key's value runs to the end of the line: one mask.
        assert_eq!(line(&long("api_key: "), 0).0, "api_key: *** ", "(its trailing space is no part of it)");
        // Each flow entry's value is masked: only keys, separators and masks are left.
        let (flow, _) = line(&long("{ token: x, "), 0);
        assert!(!flow.contains(": x") && flow.matches("***").count() == n / "{ token: x, ".len(), "{}", &flow[..60]);
        let (query, _) = line(&long("?api_key&x="), 0);
        assert_eq!(query, long("?api_key&x="), "`x` is no secret-named parameter");
    }

    /// The caret stays under the character it pointed at, however the masks change lengths before it.
    #[test]
    fn the_caret_follows_the_masks() {
        let quoted = "{ api_key: abcdefghij, bad: 1 }";
        let caret = quoted.find("bad").unwrap();
        let (out, moved) = line(quoted, caret);
        assert_eq!(out, "{ api_key: ***, bad: 1 }");
        assert_eq!(out.chars().nth(moved), Some('b'));
        let (out, moved) = line("  api_key: abcdefghij", 13);
        assert_eq!((out.as_str(), moved), ("  api_key: ***", 11), "inside a mask: at its start");
    }

    #[test]
    fn urls_are_shown_without_userinfo_or_query_values() {
        assert_eq!(url("http://alice:hunter2@127.0.0.1:9/mcp"), "http://***@127.0.0.1:9/mcp");
        assert_eq!(url("http://alice@127.0.0.1:9/mcp"), "http://***@127.0.0.1:9/mcp");
        assert_eq!(url("http://127.0.0.1:9/mcp?api_key=k&v=1"), "http://127.0.0.1:9/mcp?api_key=***&v=***");
        assert_eq!(url("http://127.0.0.1:9/mcp"), "http://127.0.0.1:9/mcp");
        assert_eq!(url("not a url Bearer abcdef"), "not a url Bearer ***");
    }

    #[test]
    fn a_secret_in_a_url_is_a_password_or_a_secret_named_query_value() {
        assert_eq!(secret_in_url("http://alice:hunter2@h/mcp"), Some("a password"));
        assert_eq!(secret_in_url("http://h/mcp?api_key=k"), Some("a secret-named query parameter"));
        assert_eq!(secret_in_url("http://h/mcp?access_token=k"), Some("a secret-named query parameter"));
        assert_eq!(secret_in_url("http://alice@h/mcp"), None, "a user name alone");
        assert_eq!(secret_in_url("http://h/mcp?page=2"), None);
    }
}

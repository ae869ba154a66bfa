//! A POST's answer as the client gets it: JSON when rmcp's SSE stream opens with the
//! answer, the stream as rmcp wrote it otherwise (`answer_as_json`). Framing only: rmcp
//! parses, dispatches and shapes every message.

use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::Response;
use rmcp::transport::common::http_header::{EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE};

/// How long a POST's answer may take before its SSE stream is passed on as it is.
const JSON_PATIENCE: Duration = Duration::from_secs(10);

/// A framing adapter, and nothing more: a POST whose SSE stream, as rmcp wrote
/// it, opens with its answer is answered with that answer as the body,
/// `application/json`, instead (Streamable HTTP lets a server choose either
/// for each request; rmcp streams every answer while sessions are on, until it
/// honours `json_response` there). It reads only where an event ends and
/// whether the first event with data is a response, the rule rmcp applies
/// itself where it answers JSON; rmcp has parsed, dispatched and shaped the
/// message, and nothing else of it is interpreted here. A client reading one
/// JSON body does much less work than one opening an SSE stream per call, and
/// on two cores the clients' work bounds the calls per second. An answer that
/// brings a server request or a notification first (a call asking the
/// client's roots), or that takes longer than [`JSON_PATIENCE`], is streamed
/// as rmcp wrote it.
pub async fn answer_as_json(response: Response) -> Response {
    use futures::StreamExt as _;
    let sse = response.headers().get(CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(EVENT_STREAM_MIME_TYPE.as_bytes()));
    if !sse || response.status() != StatusCode::OK {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    // What was read and not passed over yet. An answer is most often one chunk of its own
    // (rmcp writes an event at a time), whose data is then answered as it is, uncopied:
    // a large answer (a file read) is not held twice.
    let mut read = axum::body::Bytes::new();
    let mut passed_over: Vec<u8> = Vec::new();
    let deadline = tokio::time::Instant::now() + JSON_PATIENCE;
    loop {
        // Each whole event read so far: priming events and comments carry no data and are passed over.
        while let Some((end, next)) = event_end(&read) {
            let event = read.slice(..end);
            let data = match sse_data_range(&event) {
                Some(range) => event.slice(range),
                None => sse_data(&event).into(),
            };
            if !data.is_empty() {
                if is_answer(&data) {
                    parts.headers.insert(CONTENT_TYPE, axum::http::HeaderValue::from_static(JSON_MIME_TYPE));
                    parts.headers.remove(CACHE_CONTROL);
                    return Response::from_parts(parts, Body::from(data));
                }
                passed_over.extend_from_slice(&read);
                return restream(parts, passed_over, stream.boxed());
            }
            passed_over.extend_from_slice(&read[..next]);
            read = read.slice(next..);
        }
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(chunk))) if read.is_empty() => read = chunk,
            Ok(Some(Ok(chunk))) => read = [&read[..], &chunk[..]].concat().into(),
            // The error is passed on, so the client sees a broken stream rather than one that ended cleanly.
            Ok(Some(Err(e))) => {
                passed_over.extend_from_slice(&read);
                return restream(parts, passed_over, futures::stream::once(async move { Err(e) }).boxed());
            }
            Ok(None) | Err(_) => {
                passed_over.extend_from_slice(&read);
                return restream(parts, passed_over, stream.boxed());
            }
        }
    }
}

/// The SSE stream as rmcp wrote it: what was read, then the rest.
fn restream(
    parts: axum::http::response::Parts,
    read: Vec<u8>,
    rest: futures::stream::BoxStream<'static, Result<axum::body::Bytes, axum::Error>>,
) -> Response {
    use futures::StreamExt as _;
    let head = futures::stream::once(async move { Ok::<_, axum::Error>(axum::body::Bytes::from(read)) });
    Response::from_parts(parts, Body::from_stream(head.chain(rest)))
}

/// Where the first whole SSE event of `bytes` ends (a blank line, LF or CRLF), and where the next begins.
fn event_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let lf = memchr::memmem::find(bytes, b"\n\n").map(|i| (i, i + 2));
    let crlf = memchr::memmem::find(bytes, b"\n\r\n").map(|i| (i, i + 3));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Where the data of one SSE event is in it, when it has exactly one `data:` line (as
/// an event rmcp writes with a JSON message does): the data is then a slice of the event.
fn sse_data_range(event: &[u8]) -> Option<std::ops::Range<usize>> {
    let mut found = None;
    let mut at = 0;
    for line in event.split(|b| *b == b'\n') {
        let start = at;
        at += line.len() + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(value) = line.strip_prefix(b"data:") {
            if found.is_some() {
                return None;
            }
            let skip = usize::from(value.first() == Some(&b' '));
            found = Some(start + 5 + skip..start + line.len());
        }
    }
    found
}

/// The data of one SSE event: its `data:` lines joined by newlines.
fn sse_data(event: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    for line in event.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(value) = line.strip_prefix(b"data:") {
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
        }
    }
    data
}

/// A JSON-RPC response or error (not a request or notification of the server's).
fn is_answer(data: &[u8]) -> bool {
    seam_wire::stdio::Peek::of(data).is_some_and(|p| p.method.is_none())
}

#[cfg(test)]
mod tests {
    use super::{JSON_PATIENCE, answer_as_json, event_end, sse_data};
    use axum::body::{Body, Bytes};
    use axum::http::header::CONTENT_TYPE;
    use axum::response::Response;
    use futures::StreamExt as _;
    use std::time::Duration;

    fn sse_response(chunks: Vec<Result<&'static str, &'static str>>) -> Response {
        let body = futures::stream::iter(chunks.into_iter().map(|c| c.map(|s| Bytes::from_static(s.as_bytes())).map_err(axum::Error::new)));
        Response::builder().header(CONTENT_TYPE, "text/event-stream").body(Body::from_stream(body)).unwrap()
    }

    /// What a client reads of a body: the bytes, and whether the stream broke.
    async fn read_all(response: Response) -> (String, bool) {
        let mut stream = response.into_body().into_data_stream();
        let (mut text, mut broke) = (String::new(), false);
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(bytes) => text.push_str(std::str::from_utf8(&bytes).unwrap()),
                Err(_) => broke = true,
            }
        }
        (text, broke)
    }

    #[tokio::test]
    async fn an_answer_becomes_json_and_a_broken_stream_stays_broken() {
        let answer = sse_response(vec![Ok("id: 0\ndata:\n\n"), Ok("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")]);
        let answer = answer_as_json(answer).await;
        assert_eq!(answer.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(read_all(answer).await, (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned(), false));

        let broken = answer_as_json(sse_response(vec![Ok("id: 0\ndata:\n\n"), Err("the handler failed")])).await;
        assert_eq!(broken.headers()[CONTENT_TYPE], "text/event-stream");
        assert_eq!(read_all(broken).await, ("id: 0\ndata:\n\n".to_owned(), true), "the error reaches the client");
    }

    #[test]
    fn an_event_ends_at_a_blank_line_with_lf_or_crlf_and_its_data_lines_join() {
        assert_eq!(event_end(b"data: a\n\ndata: b\n\n"), Some((7, 9)));
        assert_eq!(event_end(b"data: a\r\n\r\nrest"), Some((8, 11)));
        assert_eq!(event_end(b"data: a\n"), None, "no blank line yet: the event is not whole");
        assert_eq!(sse_data(b"id: 0\nretry: 3000\ndata:"), b"", "a priming event has no data");
        assert_eq!(sse_data(b": keep-alive"), b"", "a comment has no data");
        assert_eq!(sse_data(b"event: message\r\ndata: {\"a\":\r\ndata:1}"), b"{\"a\":\n1}");
        // One data line: its data is a slice of the event, the same bytes `sse_data` copies.
        for event in [&b"id: 3\ndata: {\"a\":1}"[..], b"data:{}\r", b"event: message\r\ndata: x\r\nid: 4"] {
            let range = super::sse_data_range(event).expect("one data line");
            assert_eq!(&event[range], &sse_data(event)[..], "{}", String::from_utf8_lossy(event));
        }
        assert_eq!(super::sse_data_range(b"data: a\ndata: b"), None, "two lines are joined, not sliced");
        assert_eq!(super::sse_data_range(b": comment"), None);
    }

    /// An answer that comes within `JSON_PATIENCE` is JSON; one that comes later
    /// is streamed as SSE (headers cannot wait longer), and still arrives.
    #[tokio::test(start_paused = true)]
    async fn an_answer_is_awaited_for_json_patience_and_no_longer() {
        let late = |after: Duration| {
            let priming = futures::stream::iter([Ok::<_, axum::Error>(Bytes::from_static(b"id: 0\ndata:\n\n"))]);
            let answer = futures::stream::once(async move {
                tokio::time::sleep(after).await;
                Ok(Bytes::from_static(b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
            });
            Response::builder().header(CONTENT_TYPE, "text/event-stream").body(Body::from_stream(priming.chain(answer))).unwrap()
        };
        let tick = Duration::from_millis(1);
        let just_within = answer_as_json(late(JSON_PATIENCE - tick)).await;
        assert_eq!(just_within.headers()[CONTENT_TYPE], "application/json");
        let past_it = answer_as_json(late(JSON_PATIENCE + tick)).await;
        assert_eq!(past_it.headers()[CONTENT_TYPE], "text/event-stream");
        let (text, broke) = read_all(past_it).await;
        assert!(text.ends_with("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n") && !broke, "{text}");
    }
}

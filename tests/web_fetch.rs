//! The fetcher against real HTTP servers on 127.0.0.1: limits at their
//! boundaries, redirects, charsets, content types, the timeout, and the
//! private-network guard (a loopback URL is refused before any connection
//! unless `allow_hosts` names it). No request leaves 127.0.0.0/8.

use std::net::IpAddr;
use std::sync::Arc;

use crate::support::stub_http::{Reply, Step, Stub};
use futures::future::BoxFuture;
use seam_web::HttpFetch;
use seam_web::fetch::{Body, Fetched, Fetcher, Lookup};
use serde_json::{Value, json};

/// A fetch mount's config: defaults, the loopback address let through, and `extra`.
fn config(extra: Value) -> HttpFetch {
    let mut c = json!({ "kind": "web.fetch.http", "allow_hosts": ["127.0.0.1"] });
    c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    serde_json::from_value(c).unwrap()
}

/// Names resolved from a table, as a hostile or split-horizon DNS might answer.
struct Table(Vec<(&'static str, Vec<IpAddr>)>);

impl Lookup for Table {
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let found = self.0.iter().find(|(n, _)| *n == host).map(|(_, a)| a.clone());
        Box::pin(async move { found.ok_or_else(|| std::io::Error::other(format!("no such name {host}"))) })
    }
}

async fn fetch(config: HttpFetch, url: &str) -> Result<Fetched, seam_web::WebError> {
    Fetcher::new(config).unwrap().fetch(url).await
}

fn html(body: &str) -> Reply {
    Reply::new(200, &[("content-type", "text/html; charset=utf-8")], body.to_owned())
}

#[tokio::test]
async fn a_loopback_url_is_refused_before_any_connection_unless_allow_hosts_names_it() {
    let stub = Stub::start(|_| html("<p>hi</p>"));
    let refused = fetch(config(json!({ "allow_hosts": [] })), &stub.url("/")).await.unwrap_err();
    assert_eq!(refused.code, "WEB_BLOCKED_ADDRESS");
    assert_eq!(refused.detail["range"], "loopback 127.0.0.0/8");
    assert_eq!(stub.connections(), 0, "the server saw no connection");
    let allowed = fetch(config(json!({})), &stub.url("/")).await.unwrap();
    assert_eq!((allowed.status, allowed.body), (200, Body::Html("<p>hi</p>".into())));
    assert_eq!(stub.connections(), 1);
}

#[tokio::test]
async fn names_are_checked_on_every_address_they_resolve_to() {
    let stub = Stub::start(|_| html("ok"));
    let port = stub.addr.port();
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    let public: IpAddr = "93.184.215.14".parse().unwrap();
    let table = || // Loopback first: were the guard to let the name through, the connection would reach the stub, never the public address.
        Arc::new(Table(vec![("docs.test", vec![loopback]), ("mixed.test", vec![loopback, public])])) as Arc<dyn Lookup>;
    let guarded = Fetcher::with_lookup(config(json!({ "allow_hosts": [] })), table()).unwrap();
    let e = guarded.fetch(&format!("http://docs.test:{port}/")).await.unwrap_err();
    assert_eq!((e.code.code, e.detail["host"].as_str()), ("WEB_BLOCKED_ADDRESS", Some("docs.test")));
    assert!(e.message.contains("loopback 127.0.0.0/8"), "{}", e.message);
    // One private answer among public ones refuses the name: nothing is sent anywhere.
    let e = guarded.fetch(&format!("http://mixed.test:{port}/")).await.unwrap_err();
    assert_eq!(e.code, "WEB_BLOCKED_ADDRESS");
    assert_eq!(stub.connections(), 0);
    let e = guarded.fetch(&format!("http://localhost:{port}/")).await.unwrap_err();
    assert_eq!(e.code, "WEB_BLOCKED_ADDRESS", "localhost is refused before a lookup (the table has no such name)");
    let allowed = Fetcher::with_lookup(config(json!({ "allow_hosts": ["docs.test"] })), table()).unwrap();
    let page = allowed.fetch(&format!("http://docs.test:{port}/")).await.unwrap();
    assert_eq!(page.body, Body::Html("ok".into()));
    assert_eq!(stub.connections(), 1);
}

#[tokio::test]
async fn declared_and_streamed_sizes_hold_at_max_response_bytes() {
    let cap = 1000usize;
    let stub = Stub::start(move |r| {
        let n: usize = r.target.trim_start_matches("/declared/").trim_start_matches("/streamed/").parse().unwrap();
        let body = vec![b'a'; n];
        if r.target.starts_with("/declared/") {
            Reply::new(200, &[("content-type", "text/plain")], body)
        } else {
            let (first, rest) = body.split_at(n / 2);
            Reply::chunked(200, &[("content-type", "text/plain")], &[first, rest])
        }
    });
    let c = || config(json!({ "max_response_bytes": format!("{cap}B"), "max_body_chars": 100_000 }));
    let at = fetch(c(), &stub.url(&format!("/declared/{cap}"))).await.unwrap();
    assert_eq!((text(&at).len(), at.truncated), (cap, false), "declared exactly at the cap");
    let over = fetch(c(), &stub.url(&format!("/declared/{}", cap + 1))).await.unwrap_err();
    assert_eq!(over.code, "WEB_FETCH_TOO_LARGE");
    // Refused from the header alone: the server sends no body and holds the connection; the fetcher lets go.
    let holding = Stub::start(move |_| {
        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n", cap + 1);
        Reply(vec![Step::Write(head.into_bytes()), Step::HoldUntilClosed])
    });
    let c_long = config(json!({ "max_response_bytes": format!("{cap}B"), "timeout": "60s" }));
    let refused = tokio::time::timeout(std::time::Duration::from_secs(30), fetch(c_long, &holding.url("/held"))).await;
    assert_eq!(refused.expect("refused without waiting for a body").unwrap_err().code, "WEB_FETCH_TOO_LARGE");
    let at = fetch(c(), &stub.url(&format!("/streamed/{cap}"))).await.unwrap();
    assert_eq!((text(&at).len(), at.truncated), (cap, false), "a stream exactly at the cap is not flagged");
    let over = fetch(c(), &stub.url(&format!("/streamed/{}", cap + 1))).await.unwrap();
    assert_eq!((text(&over).len(), over.truncated), (cap, true), "one byte past it is cut and flagged");
}

fn text(f: &Fetched) -> &str {
    match &f.body {
        Body::Html(t) | Body::Text(t) => t,
    }
}

#[tokio::test]
async fn decoded_text_holds_at_max_body_chars() {
    let stub = Stub::start(|_| Reply::new(200, &[("content-type", "text/plain; charset=utf-8")], "é".repeat(50)));
    let at = fetch(config(json!({ "max_body_chars": 50 })), &stub.url("/")).await.unwrap();
    assert_eq!((text(&at).chars().count(), at.truncated), (50, false));
    let over = fetch(config(json!({ "max_body_chars": 49 })), &stub.url("/")).await.unwrap();
    assert_eq!((text(&over).chars().count(), over.truncated), (49, true));
}

/// `/hop/N` redirects to `/hop/N-1` (relative), `/hop/0` is the page.
fn hops() -> Stub {
    Stub::start(|r| match r.target.strip_prefix("/hop/").and_then(|n| n.parse::<u32>().ok()) {
        Some(0) => html("<p>arrived</p>"),
        Some(n) => Reply::redirect([301, 302, 303, 307, 308][n as usize % 5], &format!("{}", n - 1)),
        None => Reply::new(404, &[("content-type", "text/plain")], "no"),
    })
}

#[tokio::test]
async fn same_origin_redirects_are_followed_up_to_max_redirects() {
    let stub = hops();
    let c = |n: u32| config(json!({ "max_redirects": n }));
    let arrived = fetch(c(3), &stub.url("/hop/3")).await.unwrap();
    assert_eq!(arrived.final_url.as_str(), stub.url("/hop/0"), "a chain of exactly max_redirects hops");
    assert_eq!(arrived.body, Body::Html("<p>arrived</p>".into()));
    let e = fetch(c(3), &stub.url("/hop/4")).await.unwrap_err();
    assert_eq!(e.code, "WEB_TOO_MANY_REDIRECTS", "one hop past it");
    let e = fetch(c(0), &stub.url("/hop/1")).await.unwrap_err();
    assert_eq!(e.code, "WEB_TOO_MANY_REDIRECTS", "max_redirects 0 follows none");
    assert_eq!(fetch(c(0), &stub.url("/hop/0")).await.unwrap().status, 200);
    // No cookie set on a hop comes back, and no credentials are ever sent.
    for r in stub.requests() {
        assert_eq!((r.header("cookie"), r.header("authorization"), r.header("proxy-authorization")), (None, None, None));
    }
}

#[tokio::test]
async fn cross_origin_credentialed_and_broken_redirects_are_refused() {
    let other = Stub::start(|_| html("elsewhere"));
    let other_url = other.url("/");
    let stub = Stub::start(move |r| match r.target.as_str() {
        "/cross" => Reply::redirect(302, &other_url),
        "/creds" => Reply::redirect(302, "http://user:secret@127.0.0.1/"),
        "/missing" => Reply::new(302, &[], ""),
        _ => Reply::new(404, &[("content-type", "text/plain")], "no"),
    });
    let e = fetch(config(json!({})), &stub.url("/cross")).await.unwrap_err();
    assert_eq!(e.code, "WEB_REDIRECT_BLOCKED", "another port is another origin");
    assert_eq!(other.connections(), 0, "the other origin is never contacted");
    assert_eq!(fetch(config(json!({})), &stub.url("/creds")).await.unwrap_err().code, "WEB_BLOCKED_URL");
    assert_eq!(fetch(config(json!({})), &stub.url("/missing")).await.unwrap_err().code, "WEB_REDIRECT_INVALID");
}

#[tokio::test]
async fn a_non_2xx_response_is_a_result() {
    let stub = hops();
    let missing = fetch(config(json!({})), &stub.url("/nowhere")).await.unwrap();
    assert_eq!((missing.status, missing.body), (404, Body::Text("no".into())));
}

#[tokio::test]
async fn the_declared_charset_decodes_the_page_and_an_unknown_one_is_refused() {
    let stub = Stub::start(|r| match r.target.as_str() {
        // "café" in windows-1252, "日本" in Shift_JIS.
        "/latin" => Reply::new(200, &[("content-type", "text/plain; charset=windows-1252")], b"caf\xe9".to_vec()),
        "/sjis" => Reply::new(200, &[("content-type", "text/html; charset=Shift_JIS")], b"\x93\xfa\x96\x7b".to_vec()),
        _ => Reply::new(200, &[("content-type", "text/plain; charset=x-unheard-of")], "x"),
    });
    assert_eq!(fetch(config(json!({})), &stub.url("/latin")).await.unwrap().body, Body::Text("café".into()));
    assert_eq!(fetch(config(json!({})), &stub.url("/sjis")).await.unwrap().body, Body::Html("日本".into()));
    assert_eq!(fetch(config(json!({})), &stub.url("/other")).await.unwrap_err().code, "WEB_UNSUPPORTED_CONTENT_TYPE");
}

#[tokio::test]
async fn content_types_outside_html_text_json_and_xml_are_refused() {
    let stub = Stub::start(|r| {
        let kind = r.target.trim_start_matches('/').replace('~', "/");
        Reply::new(200, &[("content-type", kind.as_str())], "{}")
    });
    for (kind, ok) in
        [("application~json", true), ("application~ld+json", true), ("text~xml", true), ("image~png", false), ("application~pdf", false)]
    {
        let r = fetch(config(json!({})), &stub.url(&format!("/{kind}"))).await;
        assert_eq!(r.is_ok(), ok, "{kind}: {r:?}");
        if let Err(e) = r {
            assert_eq!(e.code, "WEB_UNSUPPORTED_CONTENT_TYPE");
        }
    }
}

// Multi-threaded: the wait below blocks its thread while the client's connection task runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_timeout_covers_the_body_too() {
    let stub = Stub::start(|_| {
        let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\nhalf of it".to_vec();
        Reply(vec![Step::Write(head), Step::HoldUntilClosed])
    });
    let url = stub.url("/slow");
    let bounded = tokio::time::timeout(std::time::Duration::from_secs(30), fetch(config(json!({ "timeout": "300ms" })), &url));
    let e = bounded.await.expect("the fetch's own timeout covers the body").unwrap_err();
    assert_eq!(e.code, "WEB_FETCH_TIMEOUT", "{e:?}");
    // The fetcher let go of the connection (the body is dropped with it).
    assert!(matches!(stub.next_event(), crate::support::stub_http::Event::Closed(t) if t == "/slow"));
}

#[tokio::test]
async fn urls_over_max_url_length_or_not_http_are_invalid() {
    let stub = Stub::start(|_| html("x"));
    let url = stub.url("/aaaa");
    assert!(fetch(config(json!({ "max_url_length": url.len() })), &url).await.is_ok(), "at the limit");
    let e = fetch(config(json!({ "max_url_length": url.len() - 1 })), &url).await.unwrap_err();
    assert_eq!(e.code, "WEB_INVALID_URL", "one past it");
    assert_eq!(fetch(config(json!({})), "file:///etc/passwd").await.unwrap_err().code, "WEB_INVALID_URL");
}

/// The resolver refuses loopback names itself, without asking the lookup (which here would answer a public address).
#[tokio::test]
async fn the_resolver_refuses_localhost_names_before_any_lookup() {
    use reqwest::dns::Resolve as _;
    let public: IpAddr = "93.184.215.14".parse().unwrap();
    let table = Arc::new(Table(vec![("localhost.", vec![public]), ("x.localhost", vec![public]), ("docs.test", vec![public])]));
    let resolver = seam_web::fetch::GuardedResolver::new(seam_web::guard::Policy::default(), table);
    for name in ["localhost.", "x.localhost"] {
        let refused = resolver.resolve(name.parse().unwrap()).await.err().unwrap_or_else(|| panic!("{name} resolved"));
        assert!(refused.to_string().contains("loopback"), "{name}: {refused}");
    }
    let answered: Vec<_> = resolver.resolve("docs.test".parse().unwrap()).await.unwrap().collect();
    assert_eq!(answered, [std::net::SocketAddr::new(public, 0)], "a public answer passes, and only what was checked is returned");
}

/// Counts lookups: a fetch resolves its host once and connects to what that lookup returned.
struct Counting(std::sync::atomic::AtomicUsize);

impl Lookup for Counting {
    fn lookup(&self, _: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { Ok(vec!["127.0.0.1".parse().unwrap()]) })
    }
}

#[tokio::test]
async fn a_fetch_looks_its_host_up_once() {
    let stub = Stub::start(|_| html("once"));
    let counting = Arc::new(Counting(std::sync::atomic::AtomicUsize::new(0)));
    let fetcher = Fetcher::with_lookup(config(json!({ "allow_hosts": ["docs.test"] })), counting.clone()).unwrap();
    fetcher.fetch(&format!("http://docs.test:{}/", stub.addr.port())).await.unwrap();
    assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 1, "no second lookup between the check and the connection");
}

//! Request bodies as the gate reads them: whole (JSON-RPC bodies are read
//! whole downstream anyway), each up to `max_request_bytes`, all of them
//! together up to `max_buffered_request_bytes`, and each within
//! `body_timeout`. Without the shared bound, many large bodies at once grew
//! memory without limit (and glibc kept what they had taken); without the
//! timeout, a body sent slowly held its share for as long as its sender liked.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::http::header::{CONNECTION, RETRY_AFTER};
use axum::response::{IntoResponse as _, Response};
use futures::StreamExt as _;
use seam_engine::model::ServeLimits;

/// The bytes of request bodies held now, every connection's together.
#[derive(Default)]
pub struct Budget {
    held: AtomicU64,
}

/// A body's share of the [`Budget`], given back when this is dropped.
pub struct Share {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Drop for Share {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl Budget {
    /// An empty share of the budget, to grow.
    pub fn share(self: &Arc<Self>) -> Share {
        Share { budget: self.clone(), bytes: 0 }
    }

    /// The bytes held now.
    #[cfg(test)]
    fn held(&self) -> u64 {
        self.held.load(Ordering::Acquire)
    }
}

impl Share {
    /// Takes `more` bytes of the budget into this share, unless the budget
    /// would then hold more than `limit` (the live `max_buffered_request_bytes`).
    fn grow(&mut self, more: u64, limit: u64) -> bool {
        let taken =
            self.budget.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| held.checked_add(more).filter(|n| *n <= limit));
        if taken.is_ok() {
            self.bytes += more;
        }
        taken.is_ok()
    }
}

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Past `max_request_bytes`, declared or as it came.
    TooLarge,
    /// Past what all bodies may hold together: the client may try again soon.
    Busy,
    /// Not whole within `body_timeout`.
    Slow,
    /// The body broke off (the client went away, or its chunked framing was wrong).
    Broken,
}

impl Refusal {
    pub fn response(&self) -> Response {
        match self {
            Refusal::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "request body too large\n").into_response(),
            Refusal::Busy => {
                (StatusCode::SERVICE_UNAVAILABLE, [(RETRY_AFTER, "1")], "too many request bodies at once; try again\n").into_response()
            }
            // The rest of a body that came too slowly is not waited for: the connection closes.
            Refusal::Slow => (StatusCode::REQUEST_TIMEOUT, [(CONNECTION, "close")], "the request body took too long\n").into_response(),
            Refusal::Broken => (StatusCode::BAD_REQUEST, "the request body could not be read\n").into_response(),
        }
    }
}

/// Reads `body` whole under the limits; the bytes and their share of the budget,
/// which the caller holds for as long as it holds the bytes. A body takes its
/// share as its bytes arrive, declared (`Content-Length`) or chunked: a share
/// taken for bytes not yet sent would let a few heads that never send their
/// bodies hold the whole budget, and every other body be refused, for
/// `body_timeout`. A declared size past `max_request_bytes` is refused before
/// any of it is read.
pub async fn read(body: Body, declared: Option<u64>, limits: &ServeLimits, budget: &Arc<Budget>) -> Result<(Bytes, Share), Refusal> {
    let mut share = budget.share();
    if axum::body::HttpBody::is_end_stream(&body) {
        return Ok((Bytes::new(), share));
    }
    let (max, limit) = (limits.max_request_bytes.bytes(), limits.max_buffered_request_bytes.bytes());
    if declared.is_some_and(|n| n > max) {
        return Err(Refusal::TooLarge);
    }
    let capacity = declared.and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    let whole = async {
        let mut chunks = body.into_data_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|_| (Refusal::Broken, None))?;
            let len = chunk.len() as u64;
            if bytes.len() as u64 + len > max {
                return Err((Refusal::TooLarge, None));
            }
            if !share.grow(len, limit) {
                // The rest is read and let go of, so that the client reads the 503 rather than a reset.
                return Err((Refusal::Busy, Some(chunks)));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(())
    };
    match tokio::time::timeout(limits.body_timeout.to_std(), whole).await {
        Err(_) => Err(Refusal::Slow),
        Ok(Err((refusal, rest))) => {
            if let Some(rest) = rest {
                tokio::spawn(discard(rest, limits.body_timeout.to_std()));
            }
            Err(refusal)
        }
        Ok(Ok(())) => Ok((Bytes::from(bytes), share)),
    }
}

/// Reads the rest of a refused body and lets go of it, chunk by chunk, within
/// `timeout`: the client reads its 503 instead of a reset (closing a socket
/// with unread bytes resets it), and the connection may serve again.
async fn discard(mut chunks: axum::body::BodyDataStream, timeout: std::time::Duration) {
    let _ = tokio::time::timeout(timeout, async { while let Some(Ok(_)) = chunks.next().await {} }).await;
}

#[cfg(test)]
mod tests {
    use super::{Budget, Refusal, read};
    use axum::body::{Body, Bytes};
    use futures::StreamExt as _;
    use seam_engine::model::ServeLimits;
    use seam_engine::units::{Duration, Size};
    use std::sync::Arc;

    fn limits(max: u64, buffered: u64) -> ServeLimits {
        ServeLimits {
            max_request_bytes: Size::from_bytes(max),
            max_buffered_request_bytes: Size::from_bytes(buffered),
            body_timeout: Duration::from_secs(1),
            ..ServeLimits::default()
        }
    }

    /// A chunked body: these chunks, then (if `more`) one that never comes.
    fn chunked(chunks: &[usize], more: bool) -> Body {
        let chunks: Vec<_> = chunks.iter().map(|n| Ok::<_, std::convert::Infallible>(Bytes::from(vec![b'x'; *n]))).collect();
        let sent = futures::stream::iter(chunks).boxed();
        let rest = if more { futures::stream::pending().boxed() } else { futures::stream::empty().boxed() };
        Body::from_stream(sent.chain(rest))
    }

    /// The budget held exactly full passes; one byte more is refused, declared
    /// or chunked, as it comes; a refused or finished body gives its share back.
    #[tokio::test]
    async fn the_budget_holds_exactly_its_bytes_and_not_one_more() {
        let budget = Arc::new(Budget::default());
        let limits = limits(100, 150);
        let (_, held) = read(Body::from(vec![b'x'; 100]), Some(100), &limits, &budget).await.unwrap();
        assert_eq!(budget.held(), 100, "held while the caller holds its bytes");
        let (bytes, exactly) = read(Body::from(vec![b'x'; 50]), Some(50), &limits, &budget).await.unwrap();
        assert_eq!((bytes.len(), budget.held()), (50, 150), "exactly full");
        drop(exactly);
        assert_eq!(read(Body::from(vec![b'x'; 51]), Some(51), &limits, &budget).await.err(), Some(Refusal::Busy));
        assert_eq!(read(chunked(&[30, 20], false), None, &limits, &budget).await.map(|(b, _)| b.len()).ok(), Some(50));
        assert_eq!(read(chunked(&[30, 21], false), None, &limits, &budget).await.err(), Some(Refusal::Busy));
        assert_eq!(budget.held(), 100, "refused bodies gave their shares back");
        drop(held);
        assert_eq!(budget.held(), 0);
        assert_eq!(read(chunked(&[30, 21], false), None, &limits, &budget).await.map(|(b, _)| b.len()).ok(), Some(51));
    }

    /// A body refused for want of budget is still read to its end (and let
    /// go of), so that its client reads the 503 rather than a reset.
    #[tokio::test]
    async fn a_body_refused_for_want_of_budget_is_read_to_its_end() {
        let budget = Arc::new(Budget::default());
        let limits = limits(100, 150);
        let (_, _held) = read(Body::from(vec![b'x'; 100]), Some(100), &limits, &budget).await.unwrap();
        let (ended, end) = tokio::sync::oneshot::channel::<()>();
        let chunks = futures::stream::iter((0..3).map(|_| Ok::<_, std::convert::Infallible>(Bytes::from_static(&[b'x'; 20]))));
        let last = futures::stream::once(async move {
            let _ = ended.send(());
            Ok(Bytes::new())
        });
        let refused = read(Body::from_stream(chunks.chain(last)), Some(60), &limits, &budget).await;
        assert_eq!(refused.err(), Some(Refusal::Busy));
        end.await.expect("the refused body was read to its end");
        assert_eq!(budget.held(), 100, "without taking a share");
        // A chunked body refused part way: its rest is read to its end too.
        let (ended, end) = tokio::sync::oneshot::channel::<()>();
        let chunks = futures::stream::iter((0..3).map(|_| Ok::<_, std::convert::Infallible>(Bytes::from_static(&[b'x'; 20]))));
        let last = futures::stream::once(async move {
            let _ = ended.send(());
            Ok(Bytes::new())
        });
        let refused = read(Body::from_stream(chunks.chain(last)), None, &limits, &budget).await;
        assert_eq!(refused.err(), Some(Refusal::Busy));
        end.await.expect("the refused chunked body was read to its end");
        assert_eq!(budget.held(), 100, "and gave back what it had taken");
    }

    /// `max_request_bytes` as before: at it passes, past it 413, declared or chunked.
    #[tokio::test]
    async fn a_body_is_held_to_max_request_bytes() {
        let budget = Arc::new(Budget::default());
        let limits = limits(100, 1000);
        assert!(read(Body::from(vec![b'x'; 100]), Some(100), &limits, &budget).await.is_ok());
        assert_eq!(read(Body::from(vec![b'x'; 101]), Some(101), &limits, &budget).await.err(), Some(Refusal::TooLarge));
        assert!(read(chunked(&[60, 40], false), None, &limits, &budget).await.is_ok());
        assert_eq!(read(chunked(&[60, 41], false), None, &limits, &budget).await.err(), Some(Refusal::TooLarge));
        assert_eq!(budget.held(), 0);
    }

    /// A body not whole within `body_timeout` is refused, and its share given
    /// back; one that ends just within it is read.
    #[tokio::test(start_paused = true)]
    async fn a_body_is_read_within_body_timeout_or_refused() {
        let budget = Arc::new(Budget::default());
        let limits = limits(100, 1000);
        let timeout = limits.body_timeout.to_std();
        let late = |after: std::time::Duration| {
            let last = futures::stream::once(async move {
                tokio::time::sleep(after).await;
                Ok::<_, std::convert::Infallible>(Bytes::from_static(b"end"))
            });
            Body::from_stream(futures::stream::iter([Ok(Bytes::from_static(b"start"))]).chain(last))
        };
        let tick = std::time::Duration::from_millis(1);
        assert_eq!(read(late(timeout - tick), Some(8), &limits, &budget).await.map(|(b, _)| b.len()).ok(), Some(8));
        assert_eq!(read(late(timeout + tick), Some(8), &limits, &budget).await.err(), Some(Refusal::Slow));
        assert_eq!(read(chunked(&[10], true), None, &limits, &budget).await.err(), Some(Refusal::Slow));
        assert_eq!(budget.held(), 0);
    }

    /// A declared body takes its share as its bytes arrive: heads whose bodies
    /// never come hold nothing, and the whole budget is still there for others.
    #[tokio::test]
    async fn a_declared_body_holds_only_the_bytes_that_came() {
        let budget = Arc::new(Budget::default());
        let limits = limits(100, 150);
        let waiting = {
            let (budget, limits) = (budget.clone(), limits.clone());
            tokio::spawn(async move { read(chunked(&[10], true), Some(100), &limits, &budget).await.map(|_| ()) })
        };
        while budget.held() < 10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(budget.held(), 10, "the ten bytes that came, not the hundred declared");
        let (bytes, _share) = read(Body::from(vec![b'x'; 100]), Some(100), &limits, &budget).await.unwrap();
        assert_eq!((bytes.len(), budget.held()), (100, 110));
        waiting.abort();
    }
}

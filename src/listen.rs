//! seam's accept loop for `serve --transport http`, in place of `axum::serve`,
//! which offers neither a cap on connections nor a bound on how long one may
//! sit without sending a request: held or slow connections used up the file
//! descriptors, and then nothing, not even `/healthz`, was answered. Each
//! connection is HTTP/1.1 (hyper) under axum's router, with the live
//! composition's `serve` limits as they are when it opens.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use seam_engine::deploy::Deployment;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The most bytes of a request's head (request line and headers) a connection
/// buffers, and the size of the chunks its body is read in. hyper's own bound
/// is about 400 KiB, which over every connection seam allows would be most of
/// the memory a probe may use; heads of MCP requests are well under 1 KiB.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How long accepting pauses after an error that is not one connection's
/// (out of file descriptors): short, so that `/healthz` is answered again soon
/// after descriptors are free.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// A burst of refused connections (or accept errors) is logged once: a new
/// burst is one that begins after this long without a refusal.
const BURST_GAP: Duration = Duration::from_secs(10);

/// What a connection past `max_connections` is told before it is closed: an
/// HTTP client reads an answer rather than only a closed connection.
/// How long the connections open when seam stops may take to finish what they
/// are answering: a client that stops reading a large answer would otherwise
/// hold the stop (and the disposal of every mount) for ever.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// The connections open now, and a wake-up when one closes (for a graceful stop).
#[derive(Default)]
struct Open {
    count: AtomicUsize,
    closed: tokio::sync::Notify,
}

/// One open connection, counted for as long as it lives.
struct Counted(Arc<Open>);

impl Counted {
    fn new(open: &Arc<Open>) -> Counted {
        open.count.fetch_add(1, Ordering::AcqRel);
        Counted(open.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
        self.0.closed.notify_waiters();
    }
}

/// Logs the first of a burst, not each one.
struct Burst(Option<Instant>);

impl Burst {
    /// Whether this one begins a burst (and is to be logged).
    fn begins(&mut self) -> bool {
        let now = Instant::now();
        let begins = self.0.is_none_or(|last| now.duration_since(last) >= BURST_GAP);
        self.0 = Some(now);
        begins
    }
}

/// Accepts connections and serves `router` on each until `stop`; then stops
/// listening and waits, at most [`SHUTDOWN_GRACE`], for the open ones to finish
/// what they are answering (idle ones close at once).
pub async fn serve(listener: TcpListener, router: Router, deployment: Arc<Deployment>, stop: CancellationToken) {
    let open = Arc::new(Open::default());
    let (mut refusals, mut errors) = (Burst(None), Burst(None));
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) if one_connections(&e) => continue,
            Err(e) => {
                if errors.begins() {
                    tracing::error!("cannot accept connections: {e}; trying again every {}ms", ACCEPT_PAUSE.as_millis());
                }
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        let limits = deployment.serve_limits();
        if open.count.load(Ordering::Acquire) >= limits.max_connections as usize {
            if refusals.begins() {
                tracing::warn!(max_connections = limits.max_connections, "connections at max_connections: new ones are closed at once");
            }
            refuse(tcp);
            continue;
        }
        let counted = Counted::new(&open);
        // Small JSON-RPC messages must not wait for Nagle's algorithm: without NODELAY a round trip costs ~40ms of delayed ACKs.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!("cannot set TCP_NODELAY: {e}");
        }
        let mut http = hyper::server::conn::http1::Builder::new();
        // hyper's head timer runs from when a connection starts waiting for a
        // request (opened, or its previous answer sent) until the head is read:
        // it bounds slow heads and idle keep-alive connections alike.
        http.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout.to_std()).max_buf_size(MAX_HEAD_BYTES);
        let service = TowerToHyperService::new(router.clone());
        let stop = stop.clone();
        tokio::spawn(async move {
            let _counted = counted;
            let connection = http.serve_connection(TokioIo::new(tcp), service);
            let mut connection = std::pin::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                _ = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = served {
                tracing::debug!("connection ended: {e}");
            }
        });
    }
    // New clients are refused by the system from here on, not left waiting on a listener no one accepts from.
    drop(listener);
    let drained = async {
        loop {
            let closed = open.closed.notified();
            if open.count.load(Ordering::Acquire) == 0 {
                return;
            }
            closed.await;
        }
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        tracing::warn!(
            connections = open.count.load(Ordering::Acquire),
            "connections still open {}s after the stop are left behind",
            SHUTDOWN_GRACE.as_secs()
        );
    }
}

/// An accept error that is one connection's (it went away before it was
/// accepted), not the listener's.
fn one_connections(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset, Interrupted};
    matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset | Interrupted)
}

/// A connection past the cap: told 503 if its socket takes the bytes now, and
/// closed at once, so that the kernel's queue does not fill and the client
/// does not hang.
fn refuse(tcp: TcpStream) {
    let _ = tcp.try_write(BUSY);
}

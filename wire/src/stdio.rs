//! MCP over stdio (newline-delimited JSON-RPC) as an rmcp transport, for both
//! ends of seam's stdio path: towards a `mcp.stdio` child, and towards the
//! client of `seam serve` over stdio. rmcp parses, dispatches and shapes every
//! message; this transport only frames lines and bounds what it reads.
//!
//! rmcp's own stdio transport reads ahead without bound. Here lines from
//! every writer go out whole ([`LineWriter`]), and reading follows rmcp's own
//! stdio transport (a line longer than `max_line` is dropped, JSON that is not
//! a message gets an `Invalid Request` error, a notification that rmcp cannot
//! read is ignored), except that a line dropped for its length, or one that
//! does not read as a message, is still read for its id ([`IdScanner`]), so
//! that the request it is, or the request it answers, is answered or failed at
//! once rather than waited on. Towards the client, what seam owes it is
//! bounded ([`Backlog`]).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::Value as Json;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line read: rmcp's own limit for stdio.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The answer to a JSON that is not a JSON-RPC message.
const INVALID_REQUEST: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid request\"}}\n";

type Write = Pin<Box<dyn AsyncWrite + Send>>;

/// The writing half, shared: each line is written whole under one lock.
#[derive(Clone)]
pub struct LineWriter {
    stream: Arc<tokio::sync::Mutex<Option<Write>>>,
    queued: Arc<Queued>,
}

/// The lines left to tasks of their own and not yet written: the stream was
/// busy, or would not take them (its reader is not reading). Counted in lines
/// and in bytes: lines differ in size, and each line is also a task.
#[derive(Default)]
struct Queued {
    lines: std::sync::atomic::AtomicUsize,
    bytes: std::sync::atomic::AtomicUsize,
    fewer: tokio::sync::Notify,
}

/// One queued line and its length, counted until its task ends however it ends.
struct QueuedLine(Arc<Queued>, usize);

impl Drop for QueuedLine {
    fn drop(&mut self) {
        self.0.lines.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.bytes.fetch_sub(self.1, std::sync::atomic::Ordering::SeqCst);
        self.0.fewer.notify_waiters();
    }
}

impl LineWriter {
    pub fn new(write: impl AsyncWrite + Send + 'static) -> LineWriter {
        LineWriter { stream: Arc::new(tokio::sync::Mutex::new(Some(Box::pin(write)))), queued: Arc::default() }
    }

    /// Whether fewer than `lines` lines, and fewer than `bytes` bytes, are queued.
    fn has_room(&self, lines: usize, bytes: usize) -> bool {
        self.queued.lines.load(std::sync::atomic::Ordering::SeqCst) < lines
            && self.queued.bytes.load(std::sync::atomic::Ordering::SeqCst) < bytes
    }

    /// Returns once fewer than `lines` lines, and fewer than `bytes` bytes, are queued.
    pub async fn room_for(&self, lines: usize, bytes: usize) {
        // Checked first without a waiter: the usual case.
        while !self.has_room(lines, bytes) {
            let fewer = self.queued.fewer.notified();
            tokio::pin!(fewer);
            fewer.as_mut().enable();
            if self.has_room(lines, bytes) {
                return;
            }
            fewer.await;
        }
    }

    /// Leaves the write of a line of `len` bytes to a task of its own, counted among the queued lines.
    fn queue(&self, len: usize, write: impl Future<Output = std::io::Result<()>> + Send + 'static) -> Written {
        self.queued.lines.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.queued.bytes.fetch_add(len, std::sync::atomic::Ordering::SeqCst);
        let queued = QueuedLine(self.queued.clone(), len);
        Written::Later(tokio::spawn(async move {
            let _queued = queued;
            write.await
        }))
    }

    /// Writes `line`, which ends with `\n`, whole, whatever the caller does next:
    /// a caller that stops waiting (a timeout, a cancellation), or does not wait
    /// at all, cannot leave half a line on the stream. The line goes out at once
    /// when the stream is free and takes all of it (the usual case: no task, no
    /// hop); otherwise a task of its own writes what is left.
    pub fn send_line(&self, line: Vec<u8>) -> Written {
        // Polled once without a waker: on `Pending` the task below polls again with its own.
        let mut now = std::task::Context::from_waker(std::task::Waker::noop());
        let Ok(mut write) = self.stream.clone().try_lock_owned() else {
            // In the stream's queue now, not when the task first runs: lines go out in the order they were sent.
            let mut turn = Box::pin(self.stream.clone().lock_owned());
            return match turn.as_mut().poll(&mut now) {
                std::task::Poll::Ready(write) => self.queue(line.len(), finish(write, line, 0)),
                std::task::Poll::Pending => self.queue(line.len(), async move { finish(turn.await, line, 0).await }),
            };
        };
        let Some(w) = write.as_mut() else { return Written::Now(Some(Err(closed()))) };
        let mut done = 0;
        match poll_line(w, &mut now, &line, &mut done) {
            std::task::Poll::Ready(outcome) => {
                if outcome.is_err() {
                    cut(&mut write, done, line.len());
                }
                Written::Now(Some(outcome))
            }
            std::task::Poll::Pending => self.queue(line.len(), finish(write, line, done)),
        }
    }

    /// [`LineWriter::send_line`], and waits for the write.
    pub async fn write_line(&self, line: Vec<u8>) -> std::io::Result<()> {
        self.send_line(line).await
    }

    /// Closes the writing half (a child reads end of input).
    pub async fn close(&self) {
        if let Some(mut w) = self.stream.lock().await.take() {
            let _ = w.shutdown().await;
        }
    }
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotConnected, "the stream is closed")
}

/// Writes what is left of `line` from `done` on (counting what goes out), then flushes.
fn poll_line(w: &mut Write, cx: &mut std::task::Context<'_>, line: &[u8], done: &mut usize) -> std::task::Poll<std::io::Result<()>> {
    while *done < line.len() {
        match std::task::ready!(w.as_mut().poll_write(cx, &line[*done..])) {
            Ok(0) => return std::task::Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => *done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return std::task::Poll::Ready(Err(e)),
        }
    }
    w.as_mut().poll_flush(cx)
}

/// [`poll_line`] to the end, holding the stream.
async fn finish(mut write: tokio::sync::OwnedMutexGuard<Option<Write>>, line: Vec<u8>, mut done: usize) -> std::io::Result<()> {
    let Some(w) = write.as_mut() else { return Err(closed()) };
    let outcome = std::future::poll_fn(|cx| poll_line(w, cx, &line, &mut done)).await;
    if outcome.is_err() {
        cut(&mut write, done, line.len());
    }
    outcome
}

/// After a line's write failed `done` of its `len` bytes in: if part of it went
/// out, the stream holds half a line, and nothing written after it could be
/// read; it is closed, so every later line fails as closed instead.
fn cut(write: &mut Option<Write>, done: usize, len: usize) {
    if 0 < done && done < len {
        *write = None;
    }
}

/// A line's write: done already, or left to its own task. Awaiting it is
/// optional; the line is written whole either way.
pub enum Written {
    /// The outcome, until it is taken.
    Now(Option<std::io::Result<()>>),
    Later(tokio::task::JoinHandle<std::io::Result<()>>),
}

impl Future for Written {
    type Output = std::io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        match &mut *self {
            Written::Now(outcome) => std::task::Poll::Ready(outcome.take().expect("a write's outcome is taken once")),
            Written::Later(task) => Pin::new(task).poll(cx).map(|joined| joined.unwrap_or_else(|e| Err(std::io::Error::other(e)))),
        }
    }
}

/// A non-blocking descriptor written without a standing readiness registration.
/// A registered socket wakes its writer each time the reader drains it (an
/// edge of `EPOLLOUT`): on the path of every answer to the client, that is one
/// wake-up of seam per call for nothing. Here a write goes straight to the
/// descriptor, and only a write that would block registers for writability,
/// until it goes through.
pub struct OnDemandWrite {
    file: std::fs::File,
    blocked: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
}

impl OnDemandWrite {
    /// `fd` must be in non-blocking mode.
    pub fn new(fd: std::os::fd::OwnedFd) -> OnDemandWrite {
        OnDemandWrite { file: std::fs::File::from(fd), blocked: None }
    }
}

impl AsyncWrite for OnDemandWrite {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        use std::io::Write as _;
        use std::task::Poll;
        loop {
            match (&self.file).write(buf) {
                Ok(n) => {
                    // Registered until a write goes through whole: a slow reader is not re-registered per chunk.
                    if n == buf.len() {
                        self.blocked = None;
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            if self.blocked.is_none() {
                let fd = std::os::fd::AsFd::as_fd(&self.file).try_clone_to_owned()?;
                // Registering reports the state it finds: no wake-up between the failed write and here is lost.
                // SAFETY: the registration owns `fd`, an open descriptor, for as long as it lives.
                let registered = unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::WRITABLE) };
                self.blocked = Some(registered?);
            }
            let blocked = self.blocked.as_ref().expect("registered above");
            match blocked.poll_write_ready(cx) {
                Poll::Ready(Ok(mut ready)) => ready.clear_ready(),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// One JSON value as a line: its text and `\n`.
pub fn line_of(message: &impl serde::Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).expect("a message of JSON values serializes");
    line.push(b'\n');
    line
}

enum LineRead {
    Line,
    /// A line longer than the limit, discarded; what its bytes said of its id.
    Oversized(Scanned),
    Eof,
    Io(std::io::Error),
}

/// Why seam did not read a line.
#[derive(Debug)]
enum Unread {
    /// It was longer than `limit` bytes (and discarded as it was read).
    TooLong { limit: usize },
    /// It is not JSON: the parser's complaint.
    NotJson(String),
    /// An answer that does not read as a JSON-RPC response (a key written twice, say): why.
    NotAResponse(String),
}

/// The key under which the error seam makes for a line past the line limit
/// carries that limit, in its `data`.
const LINE_LIMIT: &str = "lineLimit";

/// The line limit an error names when seam made it for an answer longer than
/// that limit, which it discarded: the error rmcp was handed in that answer's
/// place, so that its request fails at once and its caller can say why without
/// reading the error's wording.
pub fn line_limit_of(error: &rmcp::ErrorData) -> Option<usize> {
    let limit = error.data.as_ref()?.get(LINE_LIMIT)?.as_u64()?;
    usize::try_from(limit).ok()
}

impl Unread {
    /// A JSON-RPC error answer to `id` for such a line.
    fn answer(&self, id: &RawValue) -> Vec<u8> {
        #[derive(serde::Serialize)]
        struct ErrorAnswer<'a> {
            jsonrpc: &'static str,
            id: &'a RawValue,
            error: ErrorData<'a>,
        }
        #[derive(serde::Serialize)]
        struct ErrorData<'a> {
            code: i32,
            message: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            data: Option<Json>,
        }
        let (code, message, data) = match self {
            Unread::TooLong { limit } => (
                -32600,
                format!("Invalid Request: the message is longer than the line limit of {limit} bytes"),
                Some(serde_json::json!({ LINE_LIMIT: limit })),
            ),
            Unread::NotJson(e) => (-32700, format!("Parse error: {e}"), None),
            Unread::NotAResponse(e) => (-32600, format!("Invalid Request: the answer is not a JSON-RPC response: {e}"), None),
        };
        line_of(&ErrorAnswer { jsonrpc: "2.0", id, error: ErrorData { code, message: &message, data } })
    }
}

/// How much seam may owe a peer before it stops reading it: a peer that
/// writes requests and never reads their answers is held back instead of
/// growing what seam keeps for it. Owed are the lines waiting to be written
/// to the peer, and the answers rmcp has yet to give it ([`Owed`]).
#[derive(Clone, Copy, Debug)]
pub struct Backlog {
    /// Lines waiting to be written (each is a task and a buffer).
    pub lines: usize,
    /// Bytes of the lines waiting to be written, and of the answers rmcp owes
    /// to requests other than capped ones.
    pub bytes: usize,
    /// Capped requests read and not yet answered. The handler bounds how many
    /// of them run and refuses the rest at once, so this is reached only while
    /// seam reads them faster than the handler refuses them: it must be above
    /// the handler's own cap, so that the request past that cap is read and
    /// refused rather than left unread.
    pub capped: usize,
}

/// What an answer rmcp owes is reckoned at, at least: a request waiting in
/// rmcp holds its handler's task, context and parsed message before any answer
/// exists (≈16 KiB each in the debug build that reproduced issue 23: 100,000
/// `tools/list` read ahead of their answers took 1.6 GB).
pub const OWED_FLOOR: usize = 16 << 10;

/// The peer's requests handed to rmcp and not yet answered. rmcp answers an
/// id once (a second request under an id in flight is not answered) and drops
/// the answer to a request the peer cancelled: so an id leaves, with every
/// request under it, at its answer or its cancellation. An answer not given
/// yet has no size: each is reckoned at the largest answer given so far (no
/// less than [`OWED_FLOOR`]), so that a large catalog lowers how many list
/// requests seam takes at once rather than how much it holds.
///
/// Requests the handler bounds by number itself (`is_capped`: it refuses
/// one past its cap at once) are counted apart, against their own bound
/// ([`Backlog::capped`]), and their answers set no size: reckoned in bytes
/// like the others, 1,024 calls running would reach the byte bound, and the
/// backlog stop reading before the handler could refuse the call past them.
struct Owed<Role: ServiceRole> {
    /// Each id owed an answer: how many requests under it, and whether they are capped ones.
    ids: HashMap<rmcp::model::RequestId, (usize, bool)>,
    requests: usize,
    capped: usize,
    largest: usize,
    is_capped: fn(&Role::PeerReq) -> bool,
}

impl<Role: ServiceRole> Owed<Role> {
    fn new(is_capped: fn(&Role::PeerReq) -> bool) -> Owed<Role> {
        Owed { ids: HashMap::new(), requests: 0, capped: 0, largest: 0, is_capped }
    }

    fn bytes(&self) -> usize {
        self.requests.saturating_mul(self.largest.max(OWED_FLOOR))
    }

    /// A message from the peer, handed to rmcp (`text` as written).
    fn received(&mut self, message: &RxJsonRpcMessage<Role>, text: &[u8]) {
        match message {
            rmcp::model::JsonRpcMessage::Request(request) => {
                let capped = (self.is_capped)(&request.request);
                let (n, was_capped) = self.ids.entry(request.id.clone()).or_insert((0, capped));
                // A second request under an id in flight counts as the first did (it leaves with it).
                *n += 1;
                match was_capped {
                    true => self.capped += 1,
                    false => self.requests += 1,
                }
            }
            rmcp::model::JsonRpcMessage::Notification(_) => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Cancelled {
                    request_id: rmcp::model::RequestId,
                }
                let cancelled = Peek::of(text)
                    .filter(|peek| peek.method.as_deref() == Some("notifications/cancelled"))
                    .and_then(|peek| serde_json::from_str::<Cancelled>(peek.params?.get()).ok());
                if let Some(cancelled) = cancelled {
                    self.leave(&cancelled.request_id);
                }
            }
            _ => {}
        }
    }

    /// rmcp answers `id` with a line of `len` bytes.
    fn answered(&mut self, id: &rmcp::model::RequestId, len: usize) {
        if self.leave(id) == Some(false) {
            self.largest = self.largest.max(len);
        }
    }

    /// `id` is owed no more: whether its requests were capped ones, if it was owed.
    fn leave(&mut self, id: &rmcp::model::RequestId) -> Option<bool> {
        let (n, capped) = self.ids.remove(id)?;
        match capped {
            true => self.capped -= n,
            false => self.requests -= n,
        }
        Some(capped)
    }
}

/// The transport rmcp sends and receives through.
pub struct LineTransport<Role: ServiceRole> {
    read: BufReader<Pin<Box<dyn AsyncRead + Send>>>,
    line: Vec<u8>,
    /// Inside a line that was too long, until its end: what its bytes say of its id.
    discarding: Option<IdScanner>,
    max_line: usize,
    /// With a limit, no request is taken while seam owes the peer that much.
    backlog: Option<Backlog>,
    owed: Owed<Role>,
    /// `line` is a request read while seam owed the peer its limit, not yet taken.
    held: bool,
    writer: LineWriter,
}

impl<Role: ServiceRole> LineTransport<Role> {
    pub fn new(read: impl AsyncRead + Send + 'static, writer: LineWriter) -> Self {
        LineTransport {
            read: BufReader::new(Box::pin(read)),
            line: Vec::new(),
            discarding: None,
            max_line: MAX_LINE,
            backlog: None,
            owed: Owed::new(|_| false),
            held: false,
            writer,
        }
    }

    pub fn with_max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line;
        self
    }

    /// Takes no further request from the peer while seam owes it `backlog`
    /// (lines waiting to be written, or their bytes and those of the answers
    /// rmcp owes): a peer that writes but does not read is held back instead of
    /// growing what seam keeps for it. The request read last waits, whole, and
    /// nothing behind it is read; the peer's answers and notifications before it
    /// are still read, so that a request of rmcp's that waits on the peer's
    /// answer (`roots/list`) waits on the bound only when the peer wrote more
    /// requests ahead of that answer (and then until seam stops waiting for
    /// it). Requests for which `is_capped` holds are bounded by the handler
    /// (by number, refusing one past its cap at once): they are owed apart,
    /// against `backlog.capped`. (Not for a child's stream: seam's calls to a
    /// child wait on its answers, so reading them must never stop.)
    pub fn with_backlog(mut self, backlog: Backlog, is_capped: fn(&Role::PeerReq) -> bool) -> Self {
        self.backlog = Some(backlog);
        self.owed.is_capped = is_capped;
        self
    }

    /// Whether seam owes the peer less than `backlog`.
    fn has_room(&self, backlog: Backlog) -> bool {
        self.owed.capped < backlog.capped && self.writer.has_room(backlog.lines, backlog.bytes.saturating_sub(self.owed.bytes()))
    }

    /// Reads one line into `self.line`, never holding more than `max_line` bytes of it.
    /// Cancel-safe: bytes are consumed only as they are copied into `self.line`.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(b) => b,
                Err(e) => return LineRead::Io(e),
            };
            if available.is_empty() {
                return LineRead::Eof;
            }
            let (used, complete) = match memchr::memchr(b'\n', available) {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            if let Some(scanner) = &mut self.discarding {
                scanner.feed(&available[..used]);
                self.read.consume(used);
                if complete {
                    return LineRead::Oversized(self.discarding.take().expect("discarding").finish());
                }
                continue;
            }
            if self.line.len() + used > self.max_line.saturating_add(1) {
                // Read on to the line's end, keeping only what its id is.
                let mut scanner = IdScanner::default();
                scanner.feed(&self.line);
                self.line.clear();
                self.discarding = Some(scanner);
                continue;
            }
            self.line.extend_from_slice(&available[..used]);
            self.read.consume(used);
            if complete {
                return LineRead::Line;
            }
        }
    }

    /// A line seam did not read (`why`), by what its bytes said: a request is
    /// answered an error at once, and an answer fails the request of rmcp's it
    /// answers at once (rmcp is handed an error answer to it in its place),
    /// rather than leaving either side waiting for an answer that was lost. A
    /// line whose id cannot be read is logged.
    fn unreadable(&mut self, scanned: Scanned, why: Unread) -> Option<RxJsonRpcMessage<Role>> {
        match scanned {
            Scanned { id: Some(id), method: true } => {
                tracing::warn!(id = id.get(), "a request seam cannot read is answered an error: {why:?}");
                self.writer.send_line(why.answer(&id));
                None
            }
            Scanned { id: Some(id), method: false } => {
                tracing::warn!(id = id.get(), "an answer seam cannot read fails its request: {why:?}");
                serde_json::from_slice(&why.answer(&id)).ok()
            }
            Scanned { id: None, .. } => {
                match why {
                    Unread::TooLong { limit } => {
                        tracing::warn!(limit, "a message longer than the line limit, whose id cannot be read, was discarded")
                    }
                    Unread::NotJson(e) => tracing::warn!("a line that is not JSON, whose id cannot be read, was ignored: {e}"),
                    Unread::NotAResponse(e) => {
                        tracing::warn!("an answer that is not a response, whose id cannot be read, was ignored: {e}")
                    }
                }
                None
            }
        }
    }
}

/// A line without its end of line (`\n` or `\r\n`) and a leading byte order mark.
fn text_of(line: &[u8]) -> &[u8] {
    let mut text = line;
    text = text.strip_suffix(b"\n").unwrap_or(text);
    text = text.strip_suffix(b"\r").unwrap_or(text);
    text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text)
}

/// An answer or a notification (no request, which would be owed an answer, nor a line that is not a message).
fn is_answer_or_notification(line: &[u8]) -> bool {
    Peek::of(line).is_some_and(|peek| peek.id.is_some() != peek.method.is_some())
}

impl<Role: ServiceRole> Transport<Role> for LineTransport<Role> {
    type Error = std::io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<Role>) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let line = line_of(&item);
        if self.backlog.is_some() {
            match &item {
                rmcp::model::JsonRpcMessage::Response(response) => self.owed.answered(&response.id, line.len()),
                rmcp::model::JsonRpcMessage::Error(rmcp::model::JsonRpcError { id: Some(id), .. }) => self.owed.answered(id, line.len()),
                _ => {}
            }
        }
        // Sent now, not when rmcp's task first polls the write: from here on the line counts among those queued.
        self.writer.send_line(line)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<Role>> {
        loop {
            if !self.held {
                match self.read_line().await {
                    LineRead::Line => {}
                    LineRead::Oversized(scanned) => match self.unreadable(scanned, Unread::TooLong { limit: self.max_line }) {
                        Some(message) => return Some(message),
                        None => continue,
                    },
                    LineRead::Eof => return None,
                    LineRead::Io(e) => {
                        tracing::error!("reading the stream failed: {e}");
                        return None;
                    }
                }
            }
            if let Some(backlog) = self.backlog
                && !self.has_room(backlog)
                && !is_answer_or_notification(text_of(&self.line))
            {
                // Cancel-safe: the line stays held until there is room.
                self.held = true;
                if self.owed.capped >= backlog.capped {
                    // Only an answer rmcp sends makes room here, and to send it rmcp drops this
                    // future (its loop races receiving against sending) and asks again after.
                    std::future::pending::<()>().await;
                }
                self.writer.room_for(backlog.lines, backlog.bytes.saturating_sub(self.owed.bytes())).await;
            }
            self.held = false;
            let text = text_of(&self.line);
            if text.is_empty() {
                self.line.clear();
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<Role>>(text) {
                Ok(message) => {
                    if self.backlog.is_some() {
                        self.owed.received(&message, text);
                    }
                    self.line.clear();
                    return Some(message);
                }
                Err(e) if e.is_syntax() || e.is_eof() => {
                    let scanned = IdScanner::scan(text);
                    self.line.clear();
                    if let Some(message) = self.unreadable(scanned, Unread::NotJson(e.to_string())) {
                        return Some(message);
                    }
                }
                Err(e) if is_notification(text) => {
                    self.line.clear();
                    tracing::debug!("ignoring a notification rmcp cannot read: {e}");
                }
                Err(e) => {
                    let scanned = IdScanner::scan(text);
                    self.line.clear();
                    // An answer fails the request it answers now, rather than at its timeout.
                    if let Scanned { id: Some(_), method: false } = scanned {
                        if let Some(message) = self.unreadable(scanned, Unread::NotAResponse(e.to_string())) {
                            return Some(message);
                        }
                        continue;
                    }
                    tracing::debug!("answering Invalid Request to a message rmcp cannot read: {e}");
                    // Not awaited here: `receive` is raced against sends and may be dropped at any await.
                    self.writer.send_line(INVALID_REQUEST.to_vec());
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.close().await;
        Ok(())
    }
}

/// The fields of a JSON-RPC message that decide where it goes, and its params
/// as written, for the one that takes it; the rest is skipped.
#[derive(Deserialize)]
pub struct Peek<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
}

impl<'a> Peek<'a> {
    pub fn of(line: &'a [u8]) -> Option<Peek<'a>> {
        serde_json::from_slice(line).ok()
    }
}

fn is_notification(line: &[u8]) -> bool {
    Peek::of(line).is_some_and(|p| p.method.is_some() && p.id.is_none())
}

/// The longest top-level id [`IdScanner`] keeps: longer ones are not read.
const MAX_ID: usize = 1024;

/// Reads the top-level `"id"` of a JSON-RPC message, and whether it has a
/// top-level `"method"`, from its bytes as they go by (in pieces of any size),
/// keeping none of them but the id's own: for the lines seam does not parse
/// (longer than the line limit, so discarded as they are read, or not JSON),
/// so that the request or the call the line belongs to can still be answered.
/// It follows strings, escapes and nesting (an `"id"` inside the params, or
/// inside a string, is not the message's), and reads on past a syntax error
/// as best it can: the id is a hint for an answer, never a parse.
#[derive(Default)]
pub struct IdScanner {
    /// Open objects and arrays.
    depth: usize,
    /// The top-level value is an object (a message).
    object: bool,
    /// The top-level value has ended: nothing after it is looked at.
    done: bool,
    string: bool,
    escape: Escape,
    /// Where the scanner is in a member of the top-level object.
    member: Member,
    /// A top-level key being read, decoded (only as far as `method` is long).
    key: Option<Vec<u8>>,
    /// The text of a top-level `"id"` value being read.
    capture: Option<Vec<u8>>,
    /// The last id read, and how many were.
    id: Option<Vec<u8>>,
    ids: usize,
    /// An id that cannot be answered by (an object, an array, past [`MAX_ID`]).
    unusable: bool,
    method: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    /// After a backslash.
    Backslash,
    /// Inside `\uXXXX`: the hex digits still to come, and the code so far.
    Hex(u8, u32),
}

/// Which top-level key a member has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
    Other,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Member {
    /// After `{` or `,`: a key comes next.
    #[default]
    Key,
    /// After a key: its `:` comes next.
    Colon(Key),
    /// After the `:`: the value comes next.
    Value(Key),
    /// Inside a number or literal value.
    Scalar(Key),
    /// Inside a string, object or array value, or after a value.
    Rest,
}

/// What [`IdScanner`] found.
#[derive(Debug)]
pub struct Scanned {
    /// The top-level id, when there is exactly one and it is a string or a number.
    pub id: Option<Box<RawValue>>,
    /// A top-level `"method"` key was seen: the line was a request or a notification, not an answer.
    pub method: bool,
}

impl IdScanner {
    /// [`IdScanner`] over a whole line.
    pub fn scan(line: &[u8]) -> Scanned {
        let mut scanner = IdScanner::default();
        scanner.feed(line);
        scanner.finish()
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() && !self.done {
            // The bulk of a long line is inside strings seam does not keep: skipped to their next quote or backslash.
            if self.string && self.escape == Escape::None && self.key.is_none() && self.capture.is_none() {
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    Some(n) => i += n,
                    None => return,
                }
            }
            let b = bytes[i];
            i += 1;
            if self.string {
                self.in_string(b);
            } else {
                self.outside_string(b);
            }
        }
    }

    pub fn finish(mut self) -> Scanned {
        // A number at the very end of the line (the line cut after it) is whole.
        if let Member::Scalar(_) = self.member {
            self.end_value();
        }
        let usable = |text: &Vec<u8>| matches!(text.first(), Some(b'"' | b'-' | b'0'..=b'9'));
        let id = match self.id {
            Some(text) if self.ids == 1 && !self.unusable && usable(&text) => {
                String::from_utf8(text).ok().and_then(|text| RawValue::from_string(text).ok())
            }
            _ => None,
        };
        Scanned { id, method: self.method }
    }

    /// At a member of the top-level object (not inside a nested value).
    fn top(&self) -> bool {
        self.object && self.depth == 1
    }

    fn in_string(&mut self, b: u8) {
        if let Some(capture) = &mut self.capture {
            capture.push(b);
            if capture.len() > MAX_ID {
                self.capture = None;
                self.unusable = true;
            }
        }
        // The decoded byte of a key, where there is one: escapes are read so that `"\u0069d"` is `id`.
        let decoded = match self.escape {
            Escape::Backslash => {
                self.escape = if b == b'u' { Escape::Hex(4, 0) } else { Escape::None };
                match b {
                    b'u' => None,
                    b'"' | b'\\' | b'/' => Some(b),
                    // A control character: no key seam looks for has one.
                    _ => Some(0),
                }
            }
            Escape::Hex(left, code) => {
                let code = code * 16 + (b as char).to_digit(16).unwrap_or(0x10000);
                if left > 1 {
                    self.escape = Escape::Hex(left - 1, code);
                    None
                } else {
                    self.escape = Escape::None;
                    Some(u8::try_from(code).ok().filter(u8::is_ascii).unwrap_or(0))
                }
            }
            Escape::None => match b {
                b'\\' => {
                    self.escape = Escape::Backslash;
                    None
                }
                b'"' => {
                    self.string = false;
                    self.end_string();
                    None
                }
                _ => Some(b),
            },
        };
        if let (Some(key), Some(b)) = (&mut self.key, decoded)
            && key.len() <= "method".len()
        {
            key.push(b);
        }
    }

    fn end_string(&mut self) {
        if let Some(key) = self.key.take() {
            let key = match key.as_slice() {
                b"id" => Key::Id,
                b"method" => Key::Method,
                _ => Key::Other,
            };
            self.method |= key == Key::Method;
            self.member = Member::Colon(key);
        } else if self.capture.is_some() {
            self.end_value();
        }
    }

    /// The end of a top-level member's value: an id read is kept.
    fn end_value(&mut self) {
        self.member = Member::Rest;
        if let Some(id) = self.capture.take() {
            self.id = Some(id);
            self.ids += 1;
        }
    }

    fn outside_string(&mut self, b: u8) {
        if let Member::Scalar(_) = self.member
            && self.top()
        {
            if !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                if let Some(capture) = &mut self.capture {
                    capture.push(b);
                    if capture.len() > MAX_ID {
                        self.capture = None;
                        self.unusable = true;
                    }
                }
                return;
            }
            self.end_value();
        }
        match b {
            b'"' => {
                self.string = true;
                if self.top() {
                    match self.member {
                        Member::Key => self.key = Some(Vec::new()),
                        Member::Value(key) => {
                            self.capture = (key == Key::Id).then(|| vec![b'"']);
                            self.member = Member::Rest;
                        }
                        _ => {}
                    }
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 {
                    self.object = b == b'{';
                }
                if self.top() {
                    // An id is a string or a number: an object or an array is none.
                    self.unusable |= self.member == Member::Value(Key::Id);
                    self.member = Member::Rest;
                }
                self.depth += 1;
                if self.top() {
                    self.member = Member::Key;
                }
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                self.done = self.depth == 0;
            }
            b':' if self.top() => {
                if let Member::Colon(key) = self.member {
                    self.member = Member::Value(key);
                }
            }
            b',' if self.top() => self.member = Member::Key,
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if self.top() => {
                if let Member::Value(key) = self.member {
                    self.member = Member::Scalar(key);
                    self.capture = (key == Key::Id).then(|| vec![b]);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::RoleClient;
    use std::sync::Mutex;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, DuplexStream};

    /// A client-side transport over in-memory streams, and the server's ends of them.
    fn client_side(max_line: usize) -> (LineTransport<RoleClient>, DuplexStream, BufReader<DuplexStream>) {
        let (to_client, from_server) = tokio::io::duplex(1 << 20);
        let (to_server, from_client) = tokio::io::duplex(1 << 20);
        let transport = LineTransport::new(from_server, LineWriter::new(to_server)).with_max_line(max_line);
        (transport, to_client, BufReader::new(from_client))
    }

    /// A `ping` request with id `n`, padded with JSON whitespace to `len` bytes (before the `\n`).
    fn ping(n: u32, len: usize) -> Vec<u8> {
        let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"ping\"").into_bytes();
        assert!(line.len() < len, "a ping is longer than {len} bytes");
        line.resize(len - 1, b' ');
        line.extend_from_slice(b"}\n");
        line
    }

    fn id_of(message: &RxJsonRpcMessage<RoleClient>) -> Json {
        serde_json::to_value(message).unwrap()["id"].clone()
    }

    async fn read_line(from: &mut BufReader<DuplexStream>) -> Json {
        let mut line = String::new();
        from.read_line(&mut line).await.unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// Reads `count` lines, whole, whose ids are 1 to `count` in that order.
    async fn assert_ids_in_order(from_writer: DuplexStream, count: u32) {
        let mut from_writer = BufReader::new(from_writer);
        for n in 1..=count {
            assert_eq!(read_line(&mut from_writer).await["id"], n);
        }
    }

    #[tokio::test]
    async fn lines_go_out_whole_and_in_order_whether_written_in_place_or_finished_by_a_task() {
        // The stream holds 64 bytes: a short line goes out in place, a long one only in part.
        let (to_reader, from_writer) = tokio::io::duplex(64);
        let writer = LineWriter::new(to_reader);
        let short = ping(1, 40);
        assert!(matches!(writer.send_line(short.clone()), Written::Now(Some(Ok(())))), "a line the stream takes whole is written in place");
        let long = ping(2, 500);
        let rest = writer.send_line(long.clone());
        assert!(matches!(rest, Written::Later(_)), "a line the stream cannot take whole is finished by a task");
        drop(rest); // The caller stops waiting: the line still goes out whole.
        let queued = writer.send_line(ping(3, 40));
        assert!(matches!(queued, Written::Later(_)), "a line sent while another is being finished waits its turn");
        assert_ids_in_order(from_writer, 3).await;
        queued.await.unwrap();
        writer.close().await;
        assert_eq!(writer.write_line(ping(4, 40)).await.unwrap_err().kind(), std::io::ErrorKind::NotConnected);
    }

    #[tokio::test]
    async fn a_line_sent_while_the_stream_is_busy_goes_out_before_lines_sent_after_it() {
        let (to_reader, from_writer) = tokio::io::duplex(1024);
        let writer = LineWriter::new(to_reader);
        let busy = writer.stream.clone().lock_owned().await;
        let first = writer.send_line(ping(1, 40));
        assert!(matches!(first, Written::Later(_)));
        // Freed before the first line's task has run: the next line must still wait its turn.
        drop(busy);
        let second = writer.send_line(ping(2, 40));
        assert!(matches!(second, Written::Later(_)), "the second line went out ahead of the first");
        assert_ids_in_order(from_writer, 2).await;
        first.await.unwrap();
        second.await.unwrap();
    }

    /// What a [`Scripted`] stream does with its next write.
    enum Step {
        Take(usize),
        Fail,
        /// Would block (and is ready again at once).
        Wait,
    }

    /// A stream that takes bytes as its script says.
    struct Scripted {
        script: std::collections::VecDeque<Step>,
        taken: Arc<Mutex<Vec<u8>>>,
    }
    impl AsyncWrite for Scripted {
        fn poll_write(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
            let this = self.get_mut();
            match this.script.pop_front().unwrap_or(Step::Fail) {
                Step::Take(n) => {
                    let n = n.min(buf.len());
                    this.taken.lock().unwrap().extend_from_slice(&buf[..n]);
                    std::task::Poll::Ready(Ok(n))
                }
                Step::Fail => std::task::Poll::Ready(Err(std::io::Error::other("the stream failed"))),
                Step::Wait => {
                    cx.waker().wake_by_ref();
                    std::task::Poll::Pending
                }
            }
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_write_that_fails_inside_a_line_closes_the_stream_and_one_that_fails_before_it_does_not() {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let writer = |script: Vec<Step>| LineWriter::new(Scripted { script: script.into(), taken: taken.clone() });
        // In place: a failure before any byte of the first line; the second goes out whole; the third fails 5 bytes in.
        let in_place = writer(vec![Step::Fail, Step::Take(1000), Step::Take(5), Step::Fail, Step::Take(1000)]);
        in_place.write_line(ping(1, 40)).await.unwrap_err();
        in_place.write_line(ping(2, 40)).await.unwrap();
        assert_eq!(in_place.write_line(ping(3, 40)).await.unwrap_err().kind(), std::io::ErrorKind::Other);
        assert_eq!(in_place.write_line(ping(4, 40)).await.unwrap_err().kind(), std::io::ErrorKind::NotConnected, "glued onto half a line");
        // By a task: the stream would block, then takes 3 bytes and fails.
        let by_task = writer(vec![Step::Wait, Step::Take(3), Step::Fail, Step::Take(1000)]);
        assert_eq!(by_task.write_line(ping(5, 40)).await.unwrap_err().kind(), std::io::ErrorKind::Other);
        assert_eq!(by_task.write_line(ping(6, 40)).await.unwrap_err().kind(), std::io::ErrorKind::NotConnected, "glued onto half a line");
        let mut expected = ping(2, 40);
        expected.extend_from_slice(&ping(3, 40)[..5]);
        expected.extend_from_slice(&ping(5, 40)[..3]);
        assert_eq!(*taken.lock().unwrap(), expected);
    }

    /// A peer that writes lines and reads nothing, until seam stops reading it;
    /// then it reads. Every line is `{}`, JSON that is no message: each is
    /// answered `Invalid Request` by the transport, and none returns from
    /// `receive`. Returns how many lines seam answered before it stopped
    /// reading; asserts that, once the peer reads, every line is answered.
    async fn answered_before_seam_stops_reading(backlog: Backlog) -> usize {
        // The peer's lines reach seam through a stream that holds one line; seam's
        // answers go to a stream that holds one byte, so that each answer is queued whole.
        let (mut to_seam, from_peer) = tokio::io::duplex(3);
        let (to_peer, from_seam) = tokio::io::duplex(1);
        let mut transport = LineTransport::<rmcp::RoleServer>::new(from_peer, LineWriter::new(to_peer)).with_backlog(backlog, |_| false);
        let receiving = tokio::spawn(async move { transport.receive().await.is_none() });
        let mut sent = 0;
        // Paused time moves only when every task waits: a timeout here means seam reads no further.
        while tokio::time::timeout(std::time::Duration::from_secs(1), to_seam.write_all(b"{}\n")).await.is_ok() {
            sent += 1;
            assert!(sent <= 100, "seam kept reading a peer that reads nothing");
        }
        // Behind the lines answered: one read and held until there is room, one waiting in the stream.
        let answered = sent - 2;
        // The peer reads: seam reads on, and every line gets its answer.
        let reading = tokio::spawn(async move {
            let mut from_seam = BufReader::new(from_seam);
            let mut answers = 0;
            let mut line = String::new();
            while from_seam.read_line(&mut line).await.unwrap() > 0 {
                assert_eq!(line.as_bytes(), INVALID_REQUEST);
                answers += 1;
                line.clear();
            }
            answers
        });
        for _ in 0..10 {
            to_seam.write_all(b"{}\n").await.unwrap();
        }
        drop(to_seam);
        assert!(receiving.await.unwrap(), "the stream's end is read");
        assert_eq!(reading.await.unwrap(), sent + 10);
        answered
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_does_not_read_is_held_back_at_the_backlog_limit_and_nothing_is_lost() {
        let answer = INVALID_REQUEST.len();
        assert_eq!(
            answered_before_seam_stops_reading(Backlog { lines: 4, bytes: usize::MAX, capped: usize::MAX }).await,
            4,
            "4 lines queued"
        );
        assert_eq!(
            answered_before_seam_stops_reading(Backlog { lines: 100, bytes: 3 * answer, capped: usize::MAX }).await,
            3,
            "at the byte limit"
        );
        assert_eq!(
            answered_before_seam_stops_reading(Backlog { lines: 100, bytes: 3 * answer + 1, capped: usize::MAX }).await,
            4,
            "one byte under it"
        );
    }

    /// A server-side transport over in-memory streams, seam owing its client
    /// at most `bytes`; the client's ends of the streams.
    fn server_side(bytes: usize, capped: usize) -> (LineTransport<rmcp::RoleServer>, DuplexStream, BufReader<DuplexStream>) {
        let (to_seam, from_client) = tokio::io::duplex(1 << 20);
        let (to_client, from_seam) = tokio::io::duplex(1 << 20);
        let is_call = |request: &rmcp::model::ClientRequest| matches!(request, rmcp::model::ClientRequest::CallToolRequest(_));
        let backlog = Backlog { lines: 100, bytes, capped };
        let transport = LineTransport::new(from_client, LineWriter::new(to_client)).with_backlog(backlog, is_call);
        (transport, to_seam, BufReader::new(from_seam))
    }

    /// What the transport hands rmcp next, as JSON; `None` for a receive that waits on.
    async fn next(transport: &mut LineTransport<rmcp::RoleServer>) -> Option<Json> {
        // Paused time moves only when every task waits: a receive still waiting after 60 s waits for good.
        let received = tokio::time::timeout(std::time::Duration::from_secs(60), transport.receive()).await.ok().flatten();
        received.map(|message| serde_json::to_value(message).unwrap())
    }

    /// The answers rmcp owes count as [`OWED_FLOOR`] each, or as the largest
    /// answer given so far: a request past the limit waits for one of them;
    /// the client's answers and notifications before it are still read, and
    /// a cancellation frees its request's place, as rmcp drops that answer.
    #[tokio::test(start_paused = true)]
    async fn requests_rmcp_has_not_answered_count_until_answered_or_cancelled() {
        let (mut transport, mut client, _from_seam) = server_side(2 * OWED_FLOOR, usize::MAX);
        let request = |id: u32| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        let mut lines = request(1) + &request(2);
        lines += "{\"jsonrpc\":\"2.0\",\"id\":\"roots-1\",\"result\":{\"roots\":[]}}\n";
        lines += "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n";
        lines += &(request(3) + &request(4) + &request(5));
        client.write_all(lines.as_bytes()).await.unwrap();
        assert_eq!(next(&mut transport).await.unwrap()["id"], 1);
        assert_eq!(next(&mut transport).await.unwrap()["id"], 2);
        // Two answers owed: the limit. The client's answer and its cancellation are read all the same.
        assert_eq!(next(&mut transport).await.unwrap()["id"], "roots-1");
        assert_eq!(next(&mut transport).await.unwrap()["method"], "notifications/cancelled");
        assert_eq!(next(&mut transport).await.unwrap()["id"], 3, "the cancelled request's place is free");
        assert!(next(&mut transport).await.is_none(), "a third answer owed");
        let answer = |id: u32, len: usize| {
            let message = "x".repeat(len);
            serde_json::from_value(serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -1, "message": message } })).unwrap()
        };
        transport.send(answer(2, 10)).await.unwrap();
        assert_eq!(next(&mut transport).await.unwrap()["id"], 4, "request 2 answered");
        // An answer three times the floor: each owed answer now counts as much, and one is past the limit.
        transport.send(answer(3, 3 * OWED_FLOOR)).await.unwrap();
        assert!(next(&mut transport).await.is_none(), "one answer owed, reckoned at the largest given");
        transport.send(answer(4, 10)).await.unwrap();
        assert_eq!(serde_json::to_value(transport.receive().await.unwrap()).unwrap()["id"], 5);
    }

    /// Calls (the capped requests here) are owed apart, against their own
    /// bound, not the byte bound: ten calls owed leave room for other
    /// requests, and a call's answer, however large, does not raise what
    /// those are reckoned at. At the calls' bound seam reads nothing more
    /// until one of them is answered.
    #[tokio::test(start_paused = true)]
    async fn capped_requests_are_owed_apart_against_their_own_bound() {
        let (mut transport, mut client, _from_seam) = server_side(2 * OWED_FLOOR, 10);
        let call = |id: u32| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"t\"}}}}\n");
        let lines: String = (1..=11).map(call).collect();
        client.write_all(lines.as_bytes()).await.unwrap();
        for id in 1..=10 {
            assert_eq!(next(&mut transport).await.unwrap()["id"], id);
        }
        assert!(next(&mut transport).await.is_none(), "an eleventh call owed is past the calls' bound");
        let answer = |id: u32, len: usize| {
            let text = "x".repeat(len);
            let answer = serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": { "content": [{ "type": "text", "text": text }] } });
            serde_json::from_value(answer).unwrap()
        };
        transport.send(answer(1, 4 * OWED_FLOOR)).await.unwrap();
        assert_eq!(next(&mut transport).await.unwrap()["id"], 11, "a call answered makes room for the next");
        transport.send(answer(2, 10)).await.unwrap();
        let ping = |id: u32| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        client.write_all((ping(12) + &ping(13) + &ping(14)).as_bytes()).await.unwrap();
        assert_eq!(next(&mut transport).await.unwrap()["id"], 12, "nine calls owed leave room for a ping");
        assert_eq!(next(&mut transport).await.unwrap()["id"], 13, "two pings owed, each at the floor, not at a call's answer");
        assert!(next(&mut transport).await.is_none(), "a third ping owed is past the byte bound");
    }

    /// What [`IdScanner`] reads of `line`, the same whether the line comes whole, in two pieces split anywhere, or byte by byte.
    fn scan(line: &str) -> (Option<String>, bool) {
        let read = |pieces: &mut dyn Iterator<Item = &[u8]>| {
            let mut scanner = IdScanner::default();
            pieces.for_each(|piece| scanner.feed(piece));
            let Scanned { id, method } = scanner.finish();
            (id.map(|id| id.get().to_owned()), method)
        };
        let whole = read(&mut std::iter::once(line.as_bytes()));
        for at in 0..=line.len() {
            let (head, tail) = line.as_bytes().split_at(at);
            assert_eq!(read(&mut [head, tail].into_iter()), whole, "{line} split at {at}");
        }
        assert_eq!(read(&mut line.as_bytes().chunks(1)), whole, "{line} byte by byte");
        whole
    }

    fn id(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    #[test]
    fn the_scanner_reads_the_top_level_id_wherever_it_is() {
        assert_eq!(scan(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#), (id("7"), true), "first");
        // The SDK writes `result` first: the id is at the end, past nested ids and escaped quotes.
        let answer = r#"{"result":{"content":[{"id":"inner","text":"a \"id\": 1 } ] {"}]},"jsonrpc":"2.0","id":"seam-3"}"#;
        assert_eq!(scan(answer), (id(r#""seam-3""#), false), "last");
        assert_eq!(scan(r#"{"params":{"id":1,"method":"x"},"method":"y"}"#), (None, true), "nested only");
        assert_eq!(scan(r#"{"a":["id",{"id":2}],"b":"\\","id" : -1.5e3 }"#), (id("-1.5e3"), false), "a number, after a backslash");
        assert_eq!(scan(r#"{"id":"a\\b\"c\u00e9","method":"m"}"#), (id(r#""a\\b\"c\u00e9""#), true), "escapes kept as written");
        assert_eq!(scan(r#"{"\u0069d":5,"m\u0065thod":"x"}"#), (id("5"), true), "keys are read through their escapes");
        assert_eq!(scan(r#"{"i\"d":5,"identity":6,"methods":"x","idd":7}"#), (None, false), "keys that are not `id` or `method`");
        assert_eq!(scan("{\"jsonrpc\":\"2.0\",\"id\":12"), (id("12"), false), "cut after a number");
    }

    #[test]
    fn the_scanner_reads_past_a_syntax_error_and_gives_no_id_it_cannot_answer() {
        let broken = r#"{"method":"tools/call","params":{"arguments":{"x":}},"id":"after"}"#;
        assert_eq!(scan(broken), (id(r#""after""#), true), "an id past a syntax error");
        assert_eq!(scan(r#"{"id":null,"method":"m"}"#), (None, true), "null");
        assert_eq!(scan(r#"{"id":1,"id":2}"#), (None, false), "two ids");
        assert_eq!(scan(r#"{"id":{"n":1}}"#), (None, false), "an object");
        assert_eq!(scan(r#"{"id":[1]}"#), (None, false), "an array");
        assert_eq!(scan(r#"{"id":tru}"#), (None, false), "neither a string nor a number");
        assert_eq!(scan(r#"[{"id":1,"method":"m"}]"#), (None, false), "a batch");
        assert_eq!(scan(r#"{"id":"ab"#), (None, false), "cut inside the id");
        assert_eq!(scan(r#"{"a":1}{"id":2}"#), (None, false), "after the message");
        // An id is kept as written, quotes included: at MAX_ID bytes it is read, one past it is not.
        let at_limit = format!(r#""{}""#, "x".repeat(MAX_ID - 2));
        assert_eq!(scan(&format!(r#"{{"id":{at_limit}}}"#)), (id(&at_limit), false), "an id of MAX_ID bytes");
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(MAX_ID - 1));
        assert_eq!(scan(&long), (None, false), "one byte longer than an id seam keeps");
    }

    /// A line seam does not read that answers one of rmcp's requests is handed
    /// to rmcp as an error answer to that request, so that it fails at once:
    /// over the limit (its id after the bulk of it, as Node writes it; the
    /// error carries the limit), not JSON, or JSON that is no response (a key
    /// written twice). A line seam cannot tell anything of is passed over.
    #[tokio::test(start_paused = true)]
    async fn an_answer_seam_cannot_read_is_an_error_answer_to_its_request() {
        let (mut transport, mut server, _from_client) = client_side(100);
        let text = "y".repeat(200);
        let over = format!(r#"{{"result":{{"content":[{{"type":"text","text":"{text}"}}]}},"jsonrpc":"2.0","id":1}}"#);
        server.write_all(format!("{over}\n").as_bytes()).await.unwrap();
        server.write_all(b"{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},]},\"jsonrpc\":\"2.0\",\"id\":2}\n").await.unwrap();
        server.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{},\"result\":{}}\n").await.unwrap();
        server.write_all(format!("{{\"jsonrpc\":\"2.0\",\"result\":\"{text}\"}}\nnot json\n").as_bytes()).await.unwrap();
        server.write_all(&ping(9, 60)).await.unwrap();
        async fn error(transport: &mut LineTransport<RoleClient>, id: i64) -> rmcp::ErrorData {
            let Some(rmcp::model::JsonRpcMessage::Error(rmcp::model::JsonRpcError { id: Some(got), error, .. })) =
                transport.receive().await
            else {
                panic!("no error answer to {id}")
            };
            assert_eq!(got, rmcp::model::RequestId::Number(id));
            error
        }
        let too_long = error(&mut transport, 1).await;
        assert_eq!((too_long.code.0, line_limit_of(&too_long)), (-32600, Some(100)), "{too_long:?}");
        let not_json = error(&mut transport, 2).await;
        assert_eq!((not_json.code.0, line_limit_of(&not_json)), (-32700, None), "{not_json:?}");
        let no_response = error(&mut transport, 3).await;
        assert!(no_response.message.contains("not a JSON-RPC response") && line_limit_of(&no_response).is_none(), "{no_response:?}");
        assert_eq!(id_of(&transport.receive().await.unwrap()), 9, "lines without an id passed over");
    }

    /// A request seam does not read is answered at once with its id: a parse
    /// error for one that is not JSON, the limit for one over it. One whose id
    /// cannot be read is not answered (and is logged).
    #[tokio::test(start_paused = true)]
    async fn a_request_seam_cannot_read_is_answered_an_error_with_its_id() {
        let (mut transport, mut client, mut from_seam) = server_side(usize::MAX, usize::MAX);
        let mut lines = String::from("{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\",\"params\":{\"cursor\":},\"id\":\"x-1\"}\n");
        lines += &format!("{{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}},\"id\":2}}\n", "p".repeat(MAX_LINE));
        lines += "{\"jsonrpc\":\"2.0\",\"method\": oops\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n";
        let writing = tokio::spawn(async move { client.write_all(lines.as_bytes()).await.map(|()| client) });
        assert_eq!(serde_json::to_value(transport.receive().await.unwrap()).unwrap()["id"], 3);
        // Paused time moves only when every task waits: an answer never written elapses here.
        let patience = std::time::Duration::from_secs(60);
        let parse_error = tokio::time::timeout(patience, read_line(&mut from_seam)).await.expect("no answer to the line that is not JSON");
        assert_eq!((&parse_error["id"], &parse_error["error"]["code"]), (&Json::from("x-1"), &Json::from(-32700)), "{parse_error}");
        let too_long = tokio::time::timeout(patience, read_line(&mut from_seam)).await.expect("no answer to the line over the limit");
        assert_eq!((&too_long["id"], &too_long["error"]["code"]), (&Json::from(2), &Json::from(-32600)), "{too_long}");
        let message = too_long["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("line limit of {MAX_LINE} bytes")), "{message}");
        drop(writing.await.unwrap().unwrap());
        assert!(transport.receive().await.is_none());
        transport.close().await.unwrap();
        let mut rest = String::new();
        from_seam.read_line(&mut rest).await.unwrap();
        assert_eq!(rest, "", "the line without a readable id was answered");
    }

    /// rmcp's answer counts among the lines queued from the moment rmcp sends it,
    /// not from when its write task first runs (rmcp spawns one per answer).
    #[tokio::test]
    async fn an_answer_counts_as_queued_as_soon_as_rmcp_sends_it() {
        let (to_client, _from_seam) = tokio::io::duplex(1);
        let (_to_seam, from_client) = tokio::io::duplex(1);
        let writer = LineWriter::new(to_client);
        let mut transport = LineTransport::<rmcp::RoleServer>::new(from_client, writer.clone());
        let answer = serde_json::from_value(serde_json::json!({ "jsonrpc": "2.0", "id": 1, "result": {} })).unwrap();
        let _unpolled = transport.send(answer);
        assert_eq!(writer.queued.bytes.load(std::sync::atomic::Ordering::SeqCst), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n".len());
    }

    #[tokio::test]
    async fn a_line_at_the_limit_is_read_and_one_byte_over_is_dropped() {
        let (mut transport, mut server, _) = client_side(100);
        server.write_all(&ping(1, 100)).await.unwrap();
        server.write_all(&ping(2, 101)).await.unwrap();
        server.write_all(&ping(3, 60)).await.unwrap();
        assert_eq!(id_of(&transport.receive().await.unwrap()), 1);
        assert_eq!(id_of(&transport.receive().await.unwrap()), 3, "the line one byte over the limit is dropped, not the next");
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_is_ignored_and_json_that_is_no_message_gets_invalid_request() {
        let (mut transport, mut server, mut from_client) = client_side(MAX_LINE);
        server.write_all(b"not json\n\r\n{\"foo\":1}\n").await.unwrap();
        server.write_all(&ping(7, 60)).await.unwrap();
        assert_eq!(id_of(&transport.receive().await.unwrap()), 7);
        let answer = read_line(&mut from_client).await;
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], Json::Null);
    }
}

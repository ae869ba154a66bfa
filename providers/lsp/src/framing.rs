//! LSP base protocol framing: `Content-Length` headers, then the JSON body.
//! The header block is at most 64 KiB and a body at most the mount's
//! `max_message_bytes`; a peer past either is cut off rather than buffered.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest header block accepted.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The stream ended or failed.
    Closed(String),
    HeaderTooLarge,
    MessageTooLarge {
        length: u64,
        limit: u64,
    },
    /// No or unparseable `Content-Length`, or a header line that is not `Name: value`.
    BadHeader(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Closed(why) => write!(f, "the server's output ended ({why})"),
            FrameError::HeaderTooLarge => write!(f, "the server sent a header block over {MAX_HEADER_BYTES} bytes"),
            FrameError::MessageTooLarge { length, limit } => {
                write!(f, "the server sent a {length}-byte message; max_message_bytes is {limit}")
            }
            FrameError::BadHeader(h) => write!(f, "the server sent a malformed header: {h}"),
        }
    }
}

/// Reads one message body; `Ok(None)` at a clean end of stream between messages.
pub async fn read_message<R: AsyncBufRead + Unpin>(reader: &mut R, max_message: u64) -> Result<Option<Vec<u8>>, FrameError> {
    let mut length: Option<u64> = None;
    let mut header_bytes = 0usize;
    let mut first = true;
    loop {
        let mut line = Vec::new();
        let room = (MAX_HEADER_BYTES - header_bytes) as u64 + 1;
        let n = (&mut *reader).take(room).read_until(b'\n', &mut line).await.map_err(|e| FrameError::Closed(e.to_string()))?;
        if n == 0 {
            return if first && header_bytes == 0 { Ok(None) } else { Err(FrameError::Closed("end of stream inside a header".into())) };
        }
        first = false;
        header_bytes += n;
        if header_bytes > MAX_HEADER_BYTES {
            return Err(FrameError::HeaderTooLarge);
        }
        if !line.ends_with(b"\n") {
            return Err(FrameError::Closed("end of stream inside a header".into()));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let (name, value) = text.split_once(':').ok_or_else(|| FrameError::BadHeader(text.to_owned()))?;
        if name.trim().eq_ignore_ascii_case("content-length") {
            length = Some(value.trim().parse().map_err(|_| FrameError::BadHeader(text.to_owned()))?);
        }
    }
    let length = length.ok_or_else(|| FrameError::BadHeader("no Content-Length".into()))?;
    if length > max_message {
        return Err(FrameError::MessageTooLarge { length, limit: max_message });
    }
    let mut body = vec![0; length as usize];
    reader.read_exact(&mut body).await.map_err(|e| FrameError::Closed(e.to_string()))?;
    Ok(Some(body))
}

/// Appends one message to `out`, framed: a buffer of several is written at once.
pub fn frame(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
}

/// Writes framed messages in one write: a header written alone, or a notification written apart from
/// the request that follows it, wakes the server for a message it cannot act on yet.
pub async fn write_frames<W: AsyncWrite + Unpin>(writer: &mut W, frames: &[u8]) -> std::io::Result<()> {
    writer.write_all(frames).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: &[u8], max: u64) -> Result<Option<Vec<u8>>, FrameError> {
        let mut r = tokio::io::BufReader::new(bytes);
        read_message(&mut r, max).await
    }

    #[tokio::test]
    async fn messages_hold_at_max_message_bytes() {
        assert_eq!(read(b"Content-Length: 4\r\n\r\nabcd", 4).await, Ok(Some(b"abcd".to_vec())), "at the limit");
        assert_eq!(read(b"Content-Length: 5\r\n\r\nabcde", 4).await, Err(FrameError::MessageTooLarge { length: 5, limit: 4 }));
        assert_eq!(read(b"", 4).await, Ok(None));
        assert!(matches!(read(b"Content-Type: x\r\n\r\n{}", 4).await, Err(FrameError::BadHeader(_))));
        assert!(matches!(read(b"Content-Length: 9\r\n\r\nab", 9).await, Err(FrameError::Closed(_))));
    }

    #[tokio::test]
    async fn the_header_block_holds_at_64_kib() {
        let tail = "\r\nContent-Length: 2\r\n\r\n";
        let filler = |n: usize| format!("X: {}", "a".repeat(n - 3));
        // Header block = filler line + tail's header bytes (everything before the body).
        let at = format!("{}{tail}{{}}", filler(MAX_HEADER_BYTES - (tail.len())));
        assert_eq!(read(at.as_bytes(), 10).await, Ok(Some(b"{}".to_vec())), "exactly 64 KiB of headers");
        let over = format!("{}{tail}{{}}", filler(MAX_HEADER_BYTES - tail.len() + 1));
        assert_eq!(read(over.as_bytes(), 10).await, Err(FrameError::HeaderTooLarge), "one byte more");
    }
}

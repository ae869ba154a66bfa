//! A real HTTP/1.1 server on 127.0.0.1 for the stand-ins of remote APIs (a
//! search API, a web page): each connection gets one scripted reply, written
//! byte for byte, and the server records every connection and request. Shared
//! by the web crate's tests and the end-to-end tests (`#[path]`-included).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// One request as the server read it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Lowercased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// What the server does on a connection.
pub enum Step {
    Write(Vec<u8>),
    /// The server is slow here (what a timeout test needs).
    Pause(Duration),
    /// Keep the connection open until the client closes it, then report it.
    HoldUntilClosed,
}

pub struct Reply(pub Vec<Step>);

impl Reply {
    /// A whole response with `Content-Length`.
    pub fn new(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Reply {
        let body = body.into();
        let mut head = format!("HTTP/1.1 {status} X\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend(body);
        Reply(vec![Step::Write(bytes)])
    }

    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply::new(status, &[("content-type", "application/json")], body.to_string())
    }

    /// A response whose body is sent chunked (no declared length), in these pieces.
    pub fn chunked(status: u16, headers: &[(&str, &str)], pieces: &[&[u8]]) -> Reply {
        let mut head = format!("HTTP/1.1 {status} X\r\nconnection: close\r\ntransfer-encoding: chunked\r\n");
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        for piece in pieces {
            bytes.extend(format!("{:x}\r\n", piece.len()).into_bytes());
            bytes.extend_from_slice(piece);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"0\r\n\r\n");
        Reply(vec![Step::Write(bytes)])
    }

    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::new(status, &[("location", location), ("set-cookie", "session=1; Path=/")], "")
    }
}

pub enum Event {
    /// A held connection was closed by the client.
    Closed(String),
}

type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

pub struct Stub {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Request>>>,
    events: Mutex<mpsc::Receiver<Event>>,
}

impl Stub {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let handler: Handler = Arc::new(handler);
        let (c, r) = (connections.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                c.fetch_add(1, Ordering::SeqCst);
                let (handler, requests, tx) = (handler.clone(), r.clone(), tx.clone());
                std::thread::spawn(move || serve(stream, &*handler, &requests, &tx));
            }
        });
        Stub { addr, connections, requests, events: Mutex::new(rx) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Connections accepted so far, whether or not a request followed.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits for the next event, bounded so that a broken test fails instead of hanging.
    pub fn next_event(&self) -> Event {
        self.events.lock().unwrap().recv_timeout(Duration::from_secs(60)).expect("an event from the stub server")
    }
}

fn serve(stream: TcpStream, handler: &(dyn Fn(&Request) -> Reply + Send + Sync), requests: &Mutex<Vec<Request>>, tx: &mpsc::Sender<Event>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let request = Request { method, target: target.clone(), headers, body };
    requests.lock().unwrap().push(request.clone());
    let mut stream = stream;
    for step in handler(&request).0 {
        match step {
            Step::Write(bytes) => {
                if stream.write_all(&bytes).is_err() {
                    return;
                }
                let _ = stream.flush();
            }
            Step::Pause(d) => std::thread::sleep(d),
            Step::HoldUntilClosed => {
                let mut sink = [0u8; 64];
                while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                let _ = tx.send(Event::Closed(target.clone()));
                return;
            }
        }
    }
}

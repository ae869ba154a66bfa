use super::Gateway;

/// A client that repeats `notifications/initialized` starts one notifier,
/// not one each: every notifier lived as long as the session, so a client
/// repeating it grew seam without bound.
#[tokio::test]
async fn a_session_has_one_notifier_however_often_it_says_initialized() {
    use rmcp::ServiceExt as _;
    let dir = std::env::temp_dir().join(format!("seam-initialized-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("c.yaml");
    std::fs::write(&file, "seam: 1\n").unwrap();
    let engine = std::sync::Arc::new(crate::engine());
    let env = std::sync::Arc::new(seam_engine::env::ProcessEnv);
    let deployment = seam_engine::deploy::Deployment::new(engine, &file, env, seam_engine::deploy::Options::default());
    deployment.reload().await;
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let gateway = Gateway::new(deployment, "default".to_owned(), std::sync::Arc::default());
    let server = tokio::spawn(async move { gateway.serve(server_io).await });
    // The client's handshake sends the first `initialized`.
    let client = ().serve(client_io).await.unwrap();
    let server = server.await.unwrap().unwrap();
    let settled = || async {
        // A request answered after the notifications sent before it: they have been handled.
        client.peer().list_tools(None).await.unwrap();
        tokio::runtime::Handle::current().metrics().num_alive_tasks()
    };
    let before = settled().await;
    for _ in 0..100 {
        client.peer().notify_initialized().await.unwrap();
    }
    let after = settled().await;
    assert!(after < before + 10, "{before} tasks before 100 repeats, {after} after");
    server.cancellation_token().cancel();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The stdio client's side of the transport `seam serve` reads it through, with
/// the backlog it uses: what the client writes, and what seam writes to it (a
/// stream that holds one byte, which the client does not read: every answer
/// waits for it whole).
fn stdio_client() -> (seam_wire::stdio::LineTransport<rmcp::RoleServer>, tokio::io::DuplexStream, tokio::io::DuplexStream) {
    use seam_wire::stdio::{LineTransport, LineWriter};
    let (to_seam, from_client) = tokio::io::duplex(1 << 20);
    let (to_client, from_seam) = tokio::io::duplex(1);
    let transport = LineTransport::new(from_client, LineWriter::new(to_client)).with_backlog(super::stdio_backlog(), super::capped);
    (transport, to_seam, from_seam)
}

/// What seam reads next, as JSON; `None` while it reads nothing.
async fn next(transport: &mut seam_wire::stdio::LineTransport<rmcp::RoleServer>) -> Option<serde_json::Value> {
    use rmcp::transport::Transport as _;
    // Paused time moves only when every task waits: a read still waiting after 60 s waits for good.
    let received = tokio::time::timeout(std::time::Duration::from_secs(60), transport.receive()).await.ok().flatten();
    received.map(|message| serde_json::to_value(message).unwrap())
}

/// Answers request `id` with a line of `len` bytes, left waiting for the client.
fn answer(transport: &mut seam_wire::stdio::LineTransport<rmcp::RoleServer>, id: &str, len: usize) {
    use rmcp::transport::Transport as _;
    let shaped = |message: String| serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -1, "message": message } });
    let bare = seam_wire::stdio::line_of(&shaped(String::new())).len();
    let message: rmcp::service::TxJsonRpcMessage<rmcp::RoleServer> = serde_json::from_value(shaped("x".repeat(len - bare))).unwrap();
    assert_eq!(seam_wire::stdio::line_of(&message).len(), len);
    // Not awaited: the client does not read, so the line is written by a task of its own, later.
    drop(transport.send(message));
}

/// Whether seam, having answered one ping per entry of `answers` (a line of that
/// many bytes each) and none of them read by the client, reads the client's next ping.
async fn reads_on_after_answering(answers: &[usize]) -> bool {
    use tokio::io::AsyncWriteExt as _;
    let (mut transport, mut client, _unread) = stdio_client();
    let pings: String = (0..=answers.len()).map(|n| format!("{{\"jsonrpc\":\"2.0\",\"id\":\"p{n:05}\",\"method\":\"ping\"}}\n")).collect();
    client.write_all(pings.as_bytes()).await.unwrap();
    for (n, len) in answers.iter().enumerate() {
        let id = format!("p{n:05}");
        assert_eq!(next(&mut transport).await.unwrap()["id"], id.as_str(), "read before the backlog is reached");
        answer(&mut transport, &id, *len);
    }
    next(&mut transport).await.is_some()
}

/// A stdio client that does not read is held back once seam owes it 1,024
/// lines (`MAX_CALLS_IN_FLIGHT`): with 1,023 waiting its next request is read,
/// with 1,024 it is not, until the client reads.
#[tokio::test(start_paused = true)]
async fn over_stdio_seam_stops_reading_at_1024_lines_owed() {
    assert_eq!(super::stdio_backlog().lines, 1024);
    assert!(reads_on_after_answering(&[100; 1023]).await, "1,023 lines owed");
    assert!(!reads_on_after_answering(&[100; 1024]).await, "1,024 lines owed");
    // Once the client reads, seam reads on.
    use tokio::io::AsyncReadExt as _;
    let (mut transport, mut client, mut from_seam) = stdio_client();
    let pings: String = (0..=1024).map(|n| format!("{{\"jsonrpc\":\"2.0\",\"id\":\"p{n:05}\",\"method\":\"ping\"}}\n")).collect();
    tokio::io::AsyncWriteExt::write_all(&mut client, pings.as_bytes()).await.unwrap();
    for n in 0..1024 {
        assert!(next(&mut transport).await.is_some());
        answer(&mut transport, &format!("p{n:05}"), 100);
    }
    let reading = tokio::spawn(async move { while from_seam.read(&mut [0; 4096]).await.unwrap() > 0 {} });
    assert_eq!(next(&mut transport).await.unwrap()["id"], "p01024", "read once the client reads");
    reading.abort();
}

/// A stdio client that does not read is held back once seam owes it 16 MiB
/// (`MAX_BYTES_OWED`): one byte under it its next request is read, at it not.
#[tokio::test(start_paused = true)]
async fn over_stdio_seam_stops_reading_at_16_mib_owed() {
    let mib = 1 << 20;
    assert_eq!(super::stdio_backlog().bytes, 16 * mib);
    let mut under = vec![mib; 15];
    under.push(mib - 1);
    assert!(reads_on_after_answering(&under).await, "16 MiB − 1 byte owed");
    assert!(!reads_on_after_answering(&[mib; 16]).await, "16 MiB owed");
}

/// A stdio client that does not read is held back once 2,048 of its calls are
/// unanswered (twice `MAX_CALLS_IN_FLIGHT`, so the 1,025th is read and refused):
/// the 2,048th call is read, the 2,049th only once a call is answered.
#[tokio::test(start_paused = true)]
async fn over_stdio_seam_stops_reading_at_2048_calls_unanswered() {
    use tokio::io::AsyncWriteExt as _;
    assert_eq!(super::stdio_backlog().capped, 2048);
    let (mut transport, mut client, _unread) = stdio_client();
    let call = |n: usize| format!("{{\"jsonrpc\":\"2.0\",\"id\":\"c{n:05}\",\"method\":\"tools/call\",\"params\":{{\"name\":\"t\"}}}}\n");
    client.write_all((0..=2048).map(call).collect::<String>().as_bytes()).await.unwrap();
    for n in 0..2048 {
        let read = next(&mut transport).await.unwrap_or_else(|| panic!("call {n} read"));
        assert_eq!(read["id"], format!("c{n:05}"));
    }
    assert!(next(&mut transport).await.is_none(), "2,048 calls unanswered");
    answer(&mut transport, "c00000", 100);
    assert_eq!(next(&mut transport).await.unwrap()["id"], "c02048", "read once one is answered");
}

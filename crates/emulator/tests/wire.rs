//! The wire-level truth (`firsttoken_emulator::wire`): when the emulator's
//! only thread is stalled while a request arrives, its handler reads the
//! request late and its `ttft_ms` leaves the stall out, but the wire truth
//! starts at the kernel's receive time, so it matches what an idle client
//! on its own thread measures from its write to the first token's read.
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use firsttoken_emulator::stream::token_text;
use firsttoken_emulator::{Settings, TruthLog, TruthRecord, app, serve};
use tokio_util::sync::CancellationToken;

const STALL: Duration = Duration::from_millis(80);
const TTFT_MS: f64 = 100.0;

/// Write one streamed chat request when told to; return when it was written
/// and when the read holding the first content token returned.
fn client(addr: std::net::SocketAddr, go: mpsc::Receiver<()>) -> (Instant, Instant) {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    go.recv().expect("go");
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nx-emulator-ttft-ms: {TTFT_MS}\r\n\
         x-emulator-itl-ms: 5\r\nx-emulator-tokens: 3\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let needle = format!(
        "\"content\":{}",
        serde_json::to_string(token_text(0)).expect("json")
    );
    let sent = Instant::now();
    tcp.write_all(req.as_bytes()).expect("write");
    let (mut seen, mut chunk) = (Vec::new(), [0u8; 4096]);
    loop {
        let n = tcp.read(&mut chunk).expect("read");
        assert!(n > 0, "closed before the first token: {seen:?}");
        seen.extend_from_slice(&chunk[..n]);
        if String::from_utf8_lossy(&seen).contains(&needle) {
            return (sent, Instant::now());
        }
    }
}

#[tokio::test] // one thread: blocking it stalls the emulator
async fn a_stalled_server_reads_late_but_its_wire_truth_does_not() {
    let (log, truth) = TruthLog::in_memory();
    let settings = Settings {
        truth: log.clone(),
        ..Settings::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(listener, app(settings), None, shutdown.clone()));
    let (go, went) = mpsc::channel();
    let client = std::thread::spawn(move || client(addr, went));
    // The connection is accepted and the kernel's stamping is on.
    tokio::time::sleep(Duration::from_millis(50)).await;
    go.send(()).expect("go");
    std::thread::sleep(STALL);
    let (sent, first) = tokio::task::spawn_blocking(move || client.join().expect("client"))
        .await
        .expect("join");
    let rec = next_record(&truth).await;
    shutdown.cancel();

    let wire_read = rec.wire_read_ms.unwrap_or_else(|| panic!("{rec:?}"));
    let wire_first = rec.wire_first_token_ms.unwrap_or_else(|| panic!("{rec:?}"));
    let wire_ttft = rec.wire_ttft_ms.unwrap_or_else(|| panic!("{rec:?}"));
    let ttft = rec.ttft_ms.expect("ttft");
    // The handler read the request after the stall; the kernel stamped it
    // when the client wrote it.
    assert!(rec.read_ms - wire_read >= 60.0, "{rec:?}");
    assert!((wire_read - log.ms(sent)).abs() < 5.0, "{rec:?}");
    // The first token left right after it was handed (HTTP/1.1: the same poll).
    let handed = rec.first_token_ms.expect("first token");
    assert!(wire_first >= handed && wire_first - handed < 5.0, "{rec:?}");
    assert!((wire_ttft - (wire_first - wire_read)).abs() < 1e-9);
    // The client's TTFT is the wire truth's, and the stall longer than the
    // handler's.
    let seen = (first - sent).as_secs_f64() * 1000.0;
    assert!((seen - wire_ttft).abs() < 5.0, "client {seen} ms: {rec:?}");
    assert!(seen - ttft >= 60.0, "client {seen} ms: {rec:?}");
    assert!((ttft - TTFT_MS).abs() < 10.0, "{rec:?}");
}

async fn next_record(rx: &mpsc::Receiver<TruthRecord>) -> TruthRecord {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(r) = rx.try_recv() {
            return r;
        }
        assert!(Instant::now() < until, "no truth record");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

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

/// What the test asks of the client.
enum Ask {
    /// One short request on the connection, read to its end.
    WarmUp,
    /// The measured request.
    Measure,
}

/// A streamed chat request for `tokens` tokens after `ttft_ms`.
fn request(addr: std::net::SocketAddr, ttft_ms: f64, tokens: u32, close: bool) -> String {
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let connection = if close { "Connection: close\r\n" } else { "" };
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\n{connection}\
         Content-Type: application/json\r\nx-emulator-ttft-ms: {ttft_ms}\r\n\
         x-emulator-itl-ms: 5\r\nx-emulator-tokens: {tokens}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// On one connection: a warm-up request each time asked (each answered on
/// `answered` once read to its end), then, on [`Ask::Measure`], one
/// streamed chat request; returns when that was written and when the read
/// holding its first content token returned.
fn client(
    addr: std::net::SocketAddr,
    asks: mpsc::Receiver<Ask>,
    answered: tokio::sync::mpsc::UnboundedSender<()>,
) -> (Instant, Instant) {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut chunk = [0u8; 4096];
    while let Ask::WarmUp = asks.recv().expect("an ask") {
        tcp.write_all(request(addr, 1.0, 1, false).as_bytes())
            .expect("write a warm-up");
        let mut seen = Vec::new();
        // A chunked stream ends with the empty chunk; nothing follows it
        // on a kept-alive connection until the next request.
        while !seen.ends_with(b"0\r\n\r\n") {
            let n = tcp.read(&mut chunk).expect("read a warm-up");
            assert!(n > 0, "closed during a warm-up: {seen:?}");
            seen.extend_from_slice(&chunk[..n]);
        }
        answered.send(()).expect("the test waits for it");
    }
    let req = request(addr, TTFT_MS, 3, true);
    let needle = format!(
        "\"content\":{}",
        serde_json::to_string(token_text(0)).expect("json")
    );
    let sent = Instant::now();
    tcp.write_all(req.as_bytes()).expect("write");
    let mut seen = Vec::new();
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
    let (ask, asks) = mpsc::channel();
    let (answered, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let client = std::thread::spawn(move || client(addr, asks, answered));
    // Warm-ups on the connection until one carries the kernel's receive
    // time: then the connection is accepted and the kernel's stamping is
    // on (Linux turns it on lazily, a moment after the first socket asks).
    let mut stamped = false;
    for _ in 0..50 {
        ask.send(Ask::WarmUp).expect("ask");
        tokio::time::timeout(Duration::from_secs(10), answers.recv())
            .await
            .expect("a warm-up answered within 10 s")
            .expect("the client");
        if next_record(&truth).await.wire_read_ms.is_some() {
            stamped = true;
            break;
        }
    }
    assert!(stamped, "no warm-up carried a kernel receive time");
    ask.send(Ask::Measure).expect("ask");
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

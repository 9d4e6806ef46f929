//! Issue 29, item 7: the emulator closes sockets that stay silent or
//! trickle a request head, and holds no more connections than its cap
//! (it held 20 idle sockets for 200 s and accepted 2,000).

use std::time::Duration;

use firsttoken_emulator::{Limits, Settings, app, serve_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Bound on every wait below: far beyond the limits under test.
const DEADLINE: Duration = Duration::from_secs(20);

const REQUEST: &[u8] = b"POST /v1/chat/completions HTTP/1.1\r\nhost: e\r\ncontent-type: application/json\r\ncontent-length: 69\r\nconnection: close\r\n\r\n{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"\"}]}";

async fn emulator(limits: Limits) -> (std::net::SocketAddr, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let settings = Settings {
        ttft: Duration::from_millis(1),
        itl: Duration::from_millis(1),
        tokens: 2,
        ..Settings::default()
    };
    tokio::spawn(serve_with(
        listener,
        app(settings),
        None,
        limits,
        stop.clone(),
    ));
    (addr, stop)
}

/// Reads until the server closes the socket (or resets it); panics past
/// [`DEADLINE`]. Returns what was read.
async fn until_closed(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(DEADLINE, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return out,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the server kept the socket open past {DEADLINE:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_trickling_sockets_are_closed() {
    let (addr, stop) = emulator(Limits {
        max_connections: 64,
        header_read: Duration::from_millis(300),
        idle: Duration::from_millis(300),
    })
    .await;
    // Silent: not a byte sent.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    assert!(until_closed(&mut silent).await.is_empty());
    // Trickling a request head, a byte at a time, each within the idle
    // limit: the head's own deadline closes it.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let mut interval = tokio::time::interval(Duration::from_millis(50));
    let mut closed = false;
    for b in REQUEST.iter().take(100) {
        interval.tick().await;
        if slow.write_all(&[*b]).await.is_err() {
            closed = true;
            break;
        }
    }
    if !closed {
        let rest = until_closed(&mut slow).await;
        assert!(
            !String::from_utf8_lossy(&rest).contains("200 OK"),
            "a trickled head was served"
        );
    }
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_for_a_slot() {
    let (addr, stop) = emulator(Limits {
        max_connections: 2,
        header_read: Duration::from_secs(60),
        idle: Duration::from_secs(60),
    })
    .await;
    let first = TcpStream::connect(addr).await.unwrap();
    let _second = TcpStream::connect(addr).await.unwrap();
    // The third is in the listen backlog: its request is not served while
    // both slots are held (a bounded wait for something that must not
    // happen).
    let mut third = TcpStream::connect(addr).await.unwrap();
    third.write_all(REQUEST).await.unwrap();
    let mut buf = [0u8; 64];
    let early = tokio::time::timeout(Duration::from_millis(500), third.read(&mut buf)).await;
    assert!(early.is_err(), "served beyond the cap: {early:?}");
    // A slot frees: the third is served.
    drop(first);
    let answer = until_closed(&mut third).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("[DONE]"), "{answer}");
    stop.cancel();
}

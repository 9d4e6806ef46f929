//! Stale keep-alive (issue 9, part 5): a server that closes an idle
//! keep-alive connection shortly after answering, without `Connection:
//! close`. A request sent on that connection later finds it closed before
//! any response byte; like a browser, the client sends it once more on a new
//! connection, times that connection's phases and marks the sample.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use common::*;
use firsttoken_drive::Slot;
use firsttoken_record::{Connection, Sample};

/// A stream the decoders accept: one content token and the terminator.
fn body() -> Vec<u8> {
    let mut b = oa_content("Hi");
    b.extend(oa_done());
    b
}

/// How the server treats a connection after each answer.
#[derive(Clone, Copy)]
enum After {
    /// Close the socket this long after the response, with no
    /// `Connection: close`: an idle timeout shorter than the client's.
    CloseIdle(Duration),
    /// Answer the first request, then read the second and close without a
    /// byte of answer: the race where the idle timeout fires as the request
    /// arrives.
    DropSecond,
    /// Answer the first request, then send half a response to the second
    /// and close: a partial response must never be sent again.
    HalfSecond,
}

struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn read_head(tcp: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < i + 4 + len {
                match tcp.read(&mut tmp).await {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => buf.extend_from_slice(&tmp[..n]),
                }
            }
            return true;
        }
        match tcp.read(&mut tmp).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

async fn server(after: After) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let (c, r) = (connections.clone(), requests.clone());
    let task = tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            let r = r.clone();
            tokio::spawn(async move {
                let b = body();
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                    b.len()
                );
                let mut served = 0;
                while read_head(&mut tcp).await {
                    r.fetch_add(1, Ordering::SeqCst);
                    served += 1;
                    match after {
                        After::DropSecond if served == 2 => return,
                        After::HalfSecond if served == 2 => {
                            let _ = tcp.write_all(response.as_bytes()).await;
                            let _ = tcp.write_all(&b[..b.len() / 2]).await;
                            return;
                        }
                        _ => {}
                    }
                    let _ = tcp.write_all(response.as_bytes()).await;
                    let _ = tcp.write_all(&b).await;
                    if let After::CloseIdle(d) = after {
                        tokio::time::sleep(d).await;
                        return;
                    }
                }
            });
        }
    });
    Server {
        addr,
        connections,
        requests,
        task,
    }
}

/// Two requests on one slot, `gap` apart: the second may reuse the first's connection.
async fn twice(addr: SocketAddr, gap: Duration) -> (Sample, Sample) {
    let s = spec(&format!("http://{addr}/v1/chat/completions"));
    let mut slot = Slot::new(&s).expect("slot");
    let run = async {
        let first = slot.send(&s.request, false, 0, 0).await;
        tokio::time::sleep(gap).await;
        let second = slot.send(&s.request, false, 1, 0).await;
        (first, second)
    };
    tokio::time::timeout(PROBE_DEADLINE, run)
        .await
        .expect("two requests within the deadline")
}

/// Regression: the request on the connection the server had closed was a
/// `connect` failure ("no response: connection closed before message completed").
#[tokio::test]
async fn a_request_on_a_connection_closed_as_it_arrives_is_sent_again_on_a_new_one() {
    let srv = server(After::DropSecond).await;
    let (first, second) = twice(srv.addr, Duration::from_millis(20)).await;
    assert_ok(&first);
    assert_eq!(first.connection, Connection::Fresh);
    assert!(!first.retried_stale, "{first:#?}");
    assert_ok(&second);
    assert!(second.retried_stale, "{second:#?}");
    assert_eq!(second.connection, Connection::Fresh, "{second:#?}");
    assert!(
        second.connect_ms.is_some(),
        "the new connection's phases are stamped: {second:#?}"
    );
    assert!(second.ttft_ms.is_some(), "{second:#?}");
    assert_phase_order(&second);
    assert_eq!(srv.connections(), 2, "one new connection for the retry");
    assert_eq!(srv.requests(), 3, "the dropped request was sent once more");
}

/// Through the executor: a warm probe's counted request, on the connection
/// its warm-up opened, is retried and marked.
#[tokio::test]
async fn a_warm_probe_marks_its_stale_retry() {
    let srv = server(After::DropSecond).await;
    let mut s = spec(&format!("http://{}/v1/chat/completions", srv.addr));
    s.mode = firsttoken_plan::ConnectionMode::Warm;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 2, "{samples:#?}");
    let warmup = &samples[0];
    let counted = &samples[1];
    assert!(warmup.warmup && !warmup.retried_stale, "{warmup:#?}");
    assert_ok(counted);
    assert!(counted.retried_stale, "{counted:#?}");
    assert_eq!(counted.connection, Connection::Fresh);
    assert!(counted.connect_ms.is_some(), "{counted:#?}");
}

/// The brief's case: the server closes the idle connection 50 ms after its
/// answer; the client comes back after 200 ms. Either the client sees the
/// close while idle (a plain fresh connection) or it finds out on sending
/// (a stale retry); never a failure.
#[tokio::test]
async fn an_idle_connection_closed_by_the_server_costs_a_new_connection_not_a_failure() {
    let srv = server(After::CloseIdle(Duration::from_millis(50))).await;
    let (first, second) = twice(srv.addr, Duration::from_millis(200)).await;
    assert_ok(&first);
    assert_ok(&second);
    assert_eq!(second.connection, Connection::Fresh, "{second:#?}");
    assert!(second.connect_ms.is_some(), "{second:#?}");
    assert_phase_order(&second);
    assert_eq!(srv.connections(), 2);
}

/// A response that had started is never sent again: the break is `truncated`.
#[tokio::test]
async fn a_partial_response_is_not_retried() {
    let srv = server(After::HalfSecond).await;
    let (first, second) = twice(srv.addr, Duration::from_millis(20)).await;
    assert_ok(&first);
    assert_failed(&second, "truncated");
    assert!(!second.retried_stale, "{second:#?}");
    assert_eq!(second.connection, Connection::Reused);
    assert_eq!(srv.requests(), 2, "sent exactly once");
    assert_eq!(srv.connections(), 1);
}

impl Server {
    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

//! Issue 29, item 14: a response that is not readable HTTP after a
//! successful connect (1,000 headers, a malformed header, an HTTP/2
//! response carrying a connection-specific header) fails as `protocol`,
//! not `connect`, and is never retried as a stale keep-alive.

mod common;

use common::*;
use firsttoken_plan::HttpVersion;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SSE: &str = "text/event-stream";

async fn one(url: &str, http: HttpVersion) -> firsttoken_record::Sample {
    let mut s = spec(url);
    s.http = http;
    let mut samples = probe(s).await;
    assert_eq!(samples.len(), 1, "{samples:#?}");
    samples.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_headers_are_a_protocol_error() {
    let mut reply = Reply::ok(SSE, at_once([oa_content("A"), oa_done()]));
    for i in 0..1000 {
        reply = reply.header(&format!("x-h{i}"), "v");
    }
    let server = script_server(reply).await;
    let s = one(&server.url(), HttpVersion::Http1).await;
    assert_failed(&s, "protocol");
    assert!(s.connect_ms.is_some(), "it had connected: {s:#?}");
    assert!(!s.retried_stale, "{s:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_header_is_a_protocol_error() {
    let reply = Reply::ok(SSE, at_once([oa_content("A"), oa_done()])).header("bad name", "v");
    let server = script_server(reply).await;
    let s = one(&server.url(), HttpVersion::Http1).await;
    assert_failed(&s, "protocol");
}

/// One HTTP/2 frame: length, type, flags, stream id, payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A cleartext HTTP/2 server (prior knowledge) that answers the first
/// request with `:status 200` and `connection: close`, a header HTTP/2
/// forbids (RFC 9113, 8.2.2).
async fn h2_connection_header_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut preface = [0u8; 24];
                if tcp.read_exact(&mut preface).await.is_err() {
                    return;
                }
                let _ = tcp.write_all(&frame(0x4, 0, 0, &[])).await;
                loop {
                    let mut head = [0u8; 9];
                    if tcp.read_exact(&mut head).await.is_err() {
                        return;
                    }
                    let len = (usize::from(head[0]) << 16)
                        | (usize::from(head[1]) << 8)
                        | usize::from(head[2]);
                    let mut payload = vec![0u8; len];
                    if tcp.read_exact(&mut payload).await.is_err() {
                        return;
                    }
                    let stream =
                        u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
                    match (head[3], head[4]) {
                        // SETTINGS (not an ACK): acknowledge.
                        (0x4, f) if f & 0x1 == 0 => {
                            let _ = tcp.write_all(&frame(0x4, 0x1, 0, &[])).await;
                        }
                        // HEADERS: `:status 200` (static index 8), then
                        // `connection: close` as a literal with a new name.
                        (0x1, _) => {
                            let mut block = vec![0x88, 0x00, 10];
                            block.extend_from_slice(b"connection");
                            block.push(5);
                            block.extend_from_slice(b"close");
                            let _ = tcp.write_all(&frame(0x1, 0x4, stream, &block)).await;
                        }
                        _ => {}
                    }
                }
            });
        }
    });
    format!("http://{addr}/v1/chat/completions")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_http2_header_is_a_protocol_error() {
    let url = h2_connection_header_server().await;
    let s = one(&url, HttpVersion::Http2).await;
    let message = assert_failed(&s, "protocol");
    assert!(message.contains("no response"), "{message}");
}

//! A server that echoes the key it refused (in an error body or a stream
//! error event) never gets that key into a sample (issue 9: 8 copies of an
//! API key ended up in SQLite and in exports).

mod common;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use common::{assert_failed, probe, spec};

const KEY: &str = "sk-test-5f8e2c91d0a7";

/// A one-request HTTP/1.1 server answering `status` with a body that quotes
/// the request's Authorization header.
async fn echoing_server(status: &'static str, content_type: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move {
        let Ok((mut tcp, _)) = listener.accept().await else {
            return;
        };
        let mut buf = vec![0u8; 16 * 1024];
        let mut got = 0;
        while !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut buf[got..]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got += n,
            }
        }
        let head = String::from_utf8_lossy(&buf[..got]).to_string();
        let auth = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("authorization: ")
                    .or(l.strip_prefix("Authorization: "))
            })
            .unwrap_or("")
            .to_string();
        let body = if content_type == "text/event-stream" {
            format!(
                "data: {{\"error\":{{\"message\":\"Incorrect API key provided: {auth}\"}}}}\n\n"
            )
        } else {
            format!("{{\"error\":\"invalid key {auth} (key {KEY} revoked)\"}}")
        };
        let resp = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tcp.write_all(resp.as_bytes()).await;
    });
    url
}

#[tokio::test]
async fn an_echoed_key_is_masked_in_the_error() {
    for (status, ct, kind) in [
        ("401 Unauthorized", "application/json", "http_status"),
        ("200 OK", "text/event-stream", "stream_error"),
    ] {
        let url = echoing_server(status, ct).await;
        let mut s = spec(&url);
        s.request
            .add_header_line(&format!("Authorization: Bearer {KEY}"))
            .unwrap();
        let samples = probe(s).await;
        let message = assert_failed(&samples[0], kind);
        assert!(!message.contains(KEY), "the key leaked: {message}");
        assert!(message.contains("***"), "{message}");
    }
}

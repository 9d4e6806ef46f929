//! Issue 29, items 2 and 15: an upstream that quotes the app's key back in
//! its refusal never gets the key into the app's answer (nor its log, which
//! carries the same message); an upstream that gzips an answer the app did
//! not ask to be encoded is named as such, not as a stream cut short.
//!
//! The upstreams here are raw HTTP/1.1 servers on loopback that answer
//! every connection with one fixed response.

mod common;

use common::App;
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server on 127.0.0.1 answering every request with `response`; its
/// base URL (with `/v1`).
async fn fixed_upstream(response: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                // Read the request head (and whatever body came with it).
                let mut buf = vec![0u8; 64 * 1024];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(&response).await;
                let _ = s.shutdown().await;
            });
        }
    });
    format!("http://{addr}/v1")
}

const KEY: &str = "sk-relia/SEC+RET=123";

#[tokio::test]
async fn a_refused_key_quoted_back_never_reaches_the_client() {
    // The provider's refusal quotes the key as sent and JSON-escaped.
    let body = json!({"error": {"message": format!(
        "Incorrect API key provided: Bearer {KEY}; also {}",
        KEY.replace('/', "\\/")
    )}})
    .to_string();
    let response = format!(
        "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let upstream = fixed_upstream(response.into_bytes()).await;
    let app = App::sqlite(&upstream, |o| o.upstream_key = Some(KEY.into())).await;
    let (_, token) = app.user().await;
    let r = app
        .ask("/api/chat", &token, json!({"message": "hello"}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_GATEWAY, "{}", r.body);
    for echo in ["SEC+RET", "SEC%2BRET", "sk-relia"] {
        assert!(!r.body.contains(echo), "the key leaked: {}", r.body);
    }
    assert!(r.body.contains("Incorrect API key provided"), "{}", r.body);
    app.stop().await;
}

#[tokio::test]
async fn an_encoded_answer_the_app_did_not_ask_for_is_named() {
    let response = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\ncontent-length: 4\r\nconnection: close\r\n\r\n\x1f\x8b\x08\x00".to_vec();
    let upstream = fixed_upstream(response).await;
    let app = App::sqlite(&upstream, |_| {}).await;
    let (_, token) = app.user().await;
    let r = app
        .ask("/api/chat", &token, json!({"message": "hello"}))
        .await;
    assert!(
        r.body.contains("gzip-encoded response"),
        "the encoding is named: {} {}",
        r.status,
        r.body
    );
    assert!(!r.body.contains("before a finish reason"), "{}", r.body);
    app.stop().await;
}

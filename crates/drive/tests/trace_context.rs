//! W3C trace context (issue 12, part 1): with `trace_context` on, every
//! request — warm-ups included — carries one well-formed `traceparent`
//! with a fresh trace id, and its sample stores that id; off, none is sent.

mod common;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::post;

use common::{assert_ok, probe, spec};
use firsttoken_plan::{ConnectionMode, StreamFormat};

/// Every `traceparent` header value the server saw (`None`: the request had
/// none), in arrival order.
type Seen = Arc<Mutex<Vec<Vec<String>>>>;

/// A loopback SSE server that records the traceparent headers of each request.
async fn recording_server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |headers: HeaderMap| {
            let log = log.clone();
            async move {
                let values = headers
                    .get_all("traceparent")
                    .iter()
                    .map(|v| v.to_str().unwrap_or("<not text>").to_string())
                    .collect();
                log.lock().unwrap().push(values);
                (
                    [("content-type", "text/event-stream")],
                    "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// Splits `00-<trace>-<span>-01` into the ids, checking every part.
fn parse(tp: &str) -> (String, String) {
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "{tp}");
    assert_eq!(parts[0], "00", "version: {tp}");
    assert!(
        firsttoken_record::span::is_trace_id(parts[1]),
        "trace id: {tp}"
    );
    assert_eq!(parts[2].len(), 16, "span id: {tp}");
    assert!(
        parts[2]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "span id: {tp}"
    );
    assert_ne!(parts[2], "0000000000000000", "span id: {tp}");
    assert_eq!(parts[3], "01", "sampled flag: {tp}");
    (parts[1].to_string(), parts[2].to_string())
}

#[tokio::test]
async fn each_request_carries_its_own_traceparent_and_the_sample_stores_it() {
    let (url, seen) = recording_server().await;
    let mut s = spec(&url);
    s.format = StreamFormat::OpenAiChat;
    s.mode = ConnectionMode::Warm;
    s.requests = 6;
    s.concurrency = 2;
    s.trace_context = true;
    // A traceparent from the user's headers is replaced, never doubled.
    s.request
        .add_header_line("traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        .unwrap();
    let samples = probe(s).await;
    // Two workers, each with a warm-up: eight requests.
    assert_eq!(samples.len(), 8);
    assert_eq!(samples.iter().filter(|x| x.warmup).count(), 2);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 8);
    let mut sent = Vec::new();
    for values in &seen {
        assert_eq!(values.len(), 1, "one traceparent per request: {values:?}");
        sent.push(parse(&values[0]));
    }
    let mut trace_ids: Vec<&String> = sent.iter().map(|(t, _)| t).collect();
    trace_ids.sort();
    trace_ids.dedup();
    assert_eq!(trace_ids.len(), 8, "a fresh trace id per request: {sent:?}");
    let mut span_ids: Vec<&String> = sent.iter().map(|(_, s)| s).collect();
    span_ids.sort();
    span_ids.dedup();
    assert_eq!(span_ids.len(), 8, "a fresh span id per request");
    let mut stored: Vec<String> = samples
        .iter()
        .map(|x| {
            assert_ok(x);
            x.trace_id
                .clone()
                .expect("a traced request stores its trace id")
        })
        .collect();
    stored.sort();
    let mut expect: Vec<String> = sent.into_iter().map(|(t, _)| t).collect();
    expect.sort();
    assert_eq!(stored, expect, "each sample stores the trace id it sent");
}

#[tokio::test]
async fn off_sends_no_traceparent_and_stores_none() {
    let (url, seen) = recording_server().await;
    let mut s = spec(&url);
    s.format = StreamFormat::OpenAiChat;
    s.requests = 3;
    assert!(!s.trace_context, "off unless asked for");
    let samples = probe(s).await;
    assert_eq!(samples.len(), 3);
    for x in &samples {
        assert_ok(x);
        assert_eq!(x.trace_id, None);
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(Vec::is_empty), "{seen:?}");
}

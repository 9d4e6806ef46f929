//! Every error kind, produced by a real loopback server (or the lack of
//! one). A failed request is a sample, the probe goes on with the next
//! request, and nothing panics: `probe` fails the test if `run_probe`
//! panics, errs or outlives its deadline.

mod common;

use std::time::{Duration, Instant};

use common::*;
use firsttoken_plan::ConnectionMode;
use firsttoken_record::{Connection, Sample};

const SSE: &str = "text/event-stream";

/// Probe `url` three times on fresh connections; every sample must fail
/// with `kind`. Returns the samples.
async fn three_failures(url: &str, kind: &str) -> Vec<Sample> {
    let mut s = spec(url);
    s.requests = 3;
    s.timeouts.request = Duration::from_millis(500);
    let samples = probe(s).await;
    assert_eq!(samples.len(), 3, "n = 3 gives 3 samples: {samples:#?}");
    let mut seqs: Vec<u64> = samples.iter().map(|s| s.seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, [0, 1, 2]);
    for s in &samples {
        assert_failed(s, kind);
        assert!(s.e2e_ms.is_some(), "a failure has an end time: {s:#?}");
        assert_phase_order(s);
    }
    samples
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_failure() {
    let samples = three_failures("http://nonexistent.invalid/v1/chat/completions", "dns").await;
    for s in &samples {
        assert!(
            s.error
                .as_ref()
                .unwrap()
                .message
                .contains("nonexistent.invalid"),
            "{s:#?}"
        );
        assert_eq!(
            (s.dns_ms, s.connect_ms, s.status, s.http_version.as_deref()),
            (None, None, None, None)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connection() {
    let addr = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    }; // dropped: nothing listens there any more
    let samples = three_failures(&format!("http://{addr}/v1/chat/completions"), "connect").await;
    for s in &samples {
        assert!(
            s.error
                .as_ref()
                .unwrap()
                .message
                .contains(&addr.to_string()),
            "{s:#?}"
        );
        assert_eq!((s.connect_ms, s.status), (None, None), "{s:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_response_times_out() {
    let server = silent_server().await;
    let started = Instant::now();
    let samples = three_failures(
        &format!("http://{}/v1/chat/completions", server.addr),
        "timeout",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "3 × 500 ms, not the default 120 s"
    );
    for s in &samples {
        let m = &s.error.as_ref().unwrap().message;
        assert!(m.contains("no response headers"), "{m}");
        assert!(s.connect_ms.is_some(), "TCP connected: {s:#?}");
        let e2e = s.e2e_ms.unwrap();
        assert!(
            (450.0..3000.0).contains(&e2e),
            "the deadline is 500 ms: {s:#?}"
        );
        assert_eq!(s.status, None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_times_out_keeping_its_stamps() {
    // Headers and a role chunk, then silence: no first token.
    let server = script_server(Reply::ok(SSE, at_once([oa_role()])).ending(Ending::Hang)).await;
    let samples = three_failures(&server.url(), "timeout").await;
    for s in &samples {
        let m = &s.error.as_ref().unwrap().message;
        assert!(m.contains("no first token"), "{m}");
        assert_eq!(s.status, Some(200));
        assert!(s.headers_ms.is_some() && s.ttfe_ms.is_some(), "{s:#?}");
        assert_eq!(s.ttft_ms, None);
    }
    // A token, then silence: the stream did not end.
    let server =
        script_server(Reply::ok(SSE, at_once([oa_role(), oa_content("A")])).ending(Ending::Hang))
            .await;
    let samples = three_failures(&server.url(), "timeout").await;
    for s in &samples {
        let m = &s.error.as_ref().unwrap().message;
        assert!(m.contains("did not end"), "{m}");
        assert!(s.ttft_ms.is_some(), "{s:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_tls_handshake_is_a_connect_timeout() {
    // On loopback a TCP connect cannot be made to hang, but a TLS handshake
    // with a server that never answers can: the connect deadline covers it.
    let server = silent_server().await;
    let mut s = spec(&format!(
        "https://localhost:{}/v1/chat/completions",
        server.addr.port()
    ));
    s.resolve = vec![
        format!("localhost:{}:127.0.0.1", server.addr.port())
            .parse()
            .unwrap(),
    ];
    s.timeouts.connect = Duration::from_millis(300);
    s.requests = 2;
    s.tls.insecure = true;
    let started = Instant::now();
    let samples = probe(s).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(samples.len(), 2);
    for s in &samples {
        let m = assert_failed(s, "timeout");
        assert!(
            m.contains("connect timed out") && m.contains("handshake"),
            "{m}"
        );
        assert!(s.connect_ms.is_some() && s.tls_ms.is_none(), "{s:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_status_carries_the_code_and_the_body() {
    let body = r#"{"error":{"message":"Rate limit exceeded: free-models-per-day","code":429}}"#;
    let reply = Reply::ok("application/json", at_once([body])).status(429);
    let server = script_server(reply).await;
    let samples = three_failures(&server.url(), "http_status").await;
    for s in &samples {
        let m = &s.error.as_ref().unwrap().message;
        assert!(m.contains("429"), "{m}");
        assert!(
            m.contains("Rate limit exceeded: free-models-per-day"),
            "{m}"
        );
        assert_eq!(s.status, Some(429));
        assert_eq!(
            (s.ttfe_ms, s.ttft_ms),
            (None, None),
            "an error body is not a stream: {s:#?}"
        );
    }
    // A 10 KB error body: the message keeps its start, bounded.
    let big = format!(
        r#"{{"error":{{"message":"START {} END"}}}}"#,
        "x".repeat(10_000)
    );
    let reply = Reply::ok(
        "application/json",
        vec![
            (Duration::ZERO, big[..5000].into()),
            (Duration::ZERO, big[5000..].into()),
        ],
    )
    .status(429);
    let server = script_server(reply).await;
    let samples = three_failures(&server.url(), "http_status").await;
    for s in &samples {
        let m = &s.error.as_ref().unwrap().message;
        assert!(m.contains("429") && m.contains("START"), "{m}");
        assert!(!m.contains("END"), "the tail of a 10 KB body is cut");
        assert!(
            m.chars().count() <= 1000,
            "{} characters is not a sane message",
            m.chars().count()
        );
    }
    // An empty body still says which status.
    let server = script_server(Reply::ok("text/plain", vec![]).status(500)).await;
    for s in three_failures(&server.url(), "http_status").await {
        assert!(s.error.unwrap().message.contains("500"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_status_whose_body_never_ends_is_still_http_status() {
    // The status line already says what went wrong; a body that stalls
    // must not turn a 503 into a "timeout".
    let reply = Reply::ok("application/json", at_once([r#"{"error":"overloaded"}"#]))
        .status(503)
        .ending(Ending::Hang);
    let server = script_server(reply).await;
    for s in three_failures(&server.url(), "http_status").await {
        assert_eq!(s.status, Some(503));
        assert!(s.error.unwrap().message.contains("503"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_error_inside_a_200() {
    let reply = Reply::ok(
        SSE,
        at_once([
            oa_role(),
            sse(r#"{"error":{"message":"Upstream idle timeout","code":504}}"#),
        ]),
    );
    let server = script_server(reply).await;
    for s in three_failures(&server.url(), "stream_error").await {
        assert!(
            s.error
                .as_ref()
                .unwrap()
                .message
                .contains("Upstream idle timeout"),
            "{s:#?}"
        );
        assert_eq!(s.status, Some(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_closed_mid_stream_is_truncated() {
    let reply = Reply::ok(SSE, at_once([oa_role(), oa_content("A")])).ending(Ending::Abort);
    let server = script_server(reply).await;
    for s in three_failures(&server.url(), "truncated").await {
        assert!(
            s.ttft_ms.is_some(),
            "the token before the cut counts: {s:#?}"
        );
        assert_eq!(s.content_chunks, 1);
    }
    // A clean HTTP end without the stream's terminator is truncated too.
    let server = script_server(Reply::ok(SSE, at_once([oa_role(), oa_content("A")]))).await;
    three_failures(&server.url(), "truncated").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_payload_is_a_decode_error() {
    let reply = Reply::ok(
        SSE,
        at_once([
            oa_role().as_slice(),
            b"data: {\"choices\":[\n\n",
            &oa_done(),
        ]),
    );
    let server = script_server(reply).await;
    for s in three_failures(&server.url(), "decode").await {
        let m = &s.error.as_ref().unwrap().message;
        assert!(
            m.contains(&format!("byte offset {}", oa_role().len())),
            "{m}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_mode_reconnects_after_each_failure() {
    // A failed exchange leaves the connection in an unknown state, so the
    // next request opens a new one: warm-up + 3 requests = 4 connections.
    let reply = Reply::ok(SSE, at_once([oa_role(), oa_content("A")])).ending(Ending::Abort);
    let server = script_server(reply).await;
    let mut s = spec(&server.url());
    s.mode = ConnectionMode::Warm;
    s.requests = 3;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 4, "{samples:#?}");
    assert_eq!(counted(&samples).len(), 3);
    for s in &samples {
        assert_failed(s, "truncated");
        assert_eq!(s.connection, Connection::Fresh, "{s:#?}");
        assert!(s.connect_ms.is_some());
    }
    assert_eq!(server.connections(), 4);
    assert_eq!(server.requests(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_recovers_when_the_server_comes_back() {
    // Failures do not poison later requests: a 429 server, then a good one
    // on the same worker count, each run complete and independent.
    let bad = script_server(
        Reply::ok("application/json", at_once([r#"{"error":"slow down"}"#])).status(429),
    )
    .await;
    let good = script_server(Reply::ok(
        SSE,
        at_once([oa_role(), oa_content("A"), oa_done()]),
    ))
    .await;
    for (url, ok) in [(bad.url(), false), (good.url(), true), (bad.url(), false)] {
        let mut s = spec(&url);
        s.mode = ConnectionMode::Warm;
        s.concurrency = 2;
        s.requests = 4;
        let samples = probe(s).await;
        assert_eq!(samples.len(), 6, "{samples:#?}");
        assert!(samples.iter().all(|s| s.is_ok() == ok), "{samples:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_the_run_and_keeps_what_was_measured() {
    let settings = firsttoken_emulator::Settings {
        ttft: Duration::from_millis(100),
        itl: Duration::from_millis(1),
        tokens: 2,
        ..Default::default()
    };
    let emu = emulator(settings, None).await;
    let mut s = spec(&format!("http://{}/v1/chat/completions", emu.addr));
    s.mode = ConnectionMode::Warm;
    s.concurrency = 2;
    s.requests = 1000;
    let (tx, mut rx) = tokio::sync::mpsc::channel(256);
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = tokio::spawn(firsttoken_drive::run_probe(s, tx, cancel.clone()));
    // Cancel mid-run, once 4 samples are in: both workers have requests
    // in flight then (each ~100 ms long, 1000 to go).
    const BEFORE_CANCEL: usize = 4;
    let collect = async {
        let mut out = Vec::new();
        while let Some(s) = rx.recv().await {
            out.push(s);
            if out.len() == BEFORE_CANCEL {
                cancel.cancel();
            }
        }
        out
    };
    let samples = tokio::time::timeout(Duration::from_secs(30), collect)
        .await
        .expect("the channel closes soon after cancelling");
    let cancelled_at = Instant::now();
    tokio::time::timeout(Duration::from_secs(2), run)
        .await
        .expect("run_probe returns promptly")
        .expect("no panic")
        .expect("no setup error");
    assert!(cancelled_at.elapsed() < Duration::from_secs(2));
    assert!(
        cancel.is_cancelled(),
        "{} samples, never cancelled",
        samples.len()
    );
    // Stopped: what was stored before the cancel, and at most what had
    // finished on its way; far from the 1000 asked for.
    assert!(
        (BEFORE_CANCEL..100).contains(&samples.len()),
        "cancelled after {BEFORE_CANCEL} samples: got {}",
        samples.len()
    );
    // An interrupted request is not a measurement: no half-done sample.
    for s in &samples {
        assert_ok(s);
        assert!(s.e2e_ms.is_some());
    }
}

/// Issue 29: a redirect is never followed (the measured path is the one
/// asked for), and its error names where it pointed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed_and_names_its_location() {
    let reply = Reply::ok(SSE, at_once([b"moved".to_vec()]))
        .status(302)
        .header("location", "https://127.0.0.1:9/v2/chat");
    let server = script_server(reply).await;
    for s in three_failures(&server.url(), "http_status").await {
        let e = s.error.as_ref().expect("an error");
        assert!(
            e.message.contains("302") && e.message.contains("to https://127.0.0.1:9/v2/chat"),
            "{e:?}"
        );
        assert_eq!(server.requests(), 3, "followed: {}", server.requests());
    }
}

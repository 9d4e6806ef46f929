//! Span collection in a session (issue 12, part 4): an app on loopback that
//! exports one span per request to the session's OTLP/HTTP receiver — half
//! a second after answering, so only the grace period keeps them — plus one
//! span of a trace that is not the session's. The session stores its own
//! spans next to the samples, counts the rest, and says when the span cap
//! was reached.

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, header};
use axum::routing::{get, post};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use tokio_util::sync::CancellationToken;

use firsttoken_plan::config::Config;
use firsttoken_record::Store;
use firsttoken_record::session::SessionStatus;
use firsttoken_record::span::SpanKind;
use firsttoken_session::{Overrides, Quiet, SessionSpec, run_session};

const FOREIGN: [u8; 16] = [7; 16];

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// One export: a server span in the request's trace (parent: the span id
/// it was sent), and a span of another trace.
fn export(traceparent: &str, start: u64) -> Vec<u8> {
    let parts: Vec<&str> = traceparent.split('-').collect();
    let span = |trace: Vec<u8>, id: u8, parent: Vec<u8>| Span {
        trace_id: trace,
        span_id: vec![id; 8],
        parent_span_id: parent,
        name: "POST /api/chat".into(),
        kind: 2,
        start_time_unix_nano: start,
        end_time_unix_nano: now_ns(),
        attributes: vec![KeyValue {
            key: "http.request.method".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue("POST".into())),
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut own_id = unhex(parts[1]);
    own_id.truncate(8);
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue("test-app".into())),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: vec![
                    Span {
                        span_id: own_id,
                        ..span(unhex(parts[1]), 0, unhex(parts[2]))
                    },
                    span(FOREIGN.to_vec(), 9, vec![]),
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// The app: answers a short stream, then exports its spans to `collector`
/// half a second later.
async fn app(collector: String) -> String {
    let chat = move |headers: HeaderMap| {
        let collector = collector.clone();
        async move {
            let start = now_ns();
            if let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
                let body = export(tp, start);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    let _ = reqwest::Client::new()
                        .post(&collector)
                        .header("content-type", "application/x-protobuf")
                        .body(body)
                        .timeout(Duration::from_secs(5))
                        .send()
                        .await;
                });
            }
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n",
            )
        }
    };
    let router = Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/api/chat", post(chat));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, router).await });
    base
}

/// A loopback port free a moment ago.
async fn free_port() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

fn config(base: &str, listen: &str, extra: &str) -> Config {
    let text = format!(
        r#"
[session]
timeout = "10s"

[app]
base_url = "{base}"
version_path = "/health"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'
format = "openai-chat"

[prompts]
list = ["one"]

[phases]
warm = 4

[traces]
listen = "{listen}"
{extra}
"#
    );
    Config::parse(&text, "test.toml").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stores_its_own_late_spans_and_counts_the_rest() {
    let port = free_port().await;
    let listen = format!("127.0.0.1:{port}");
    let base = app(format!("http://{listen}/v1/traces")).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db").display().to_string())
        .await
        .unwrap();
    let spec = SessionSpec::new(config(&base, &listen, ""), Overrides::default()).unwrap();
    let outcome = run_session(&spec, &store, &mut Quiet, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.meta.status, SessionStatus::Complete);
    let rows = store.samples(&outcome.meta.id).await.unwrap();
    assert!(rows.len() >= 4, "four requests and their warm-up");
    let t = outcome.traces.expect("span collection ran");
    let n = rows.len() as u64;
    assert_eq!(t.listen.unwrap().port(), port);
    assert_eq!((t.stored, t.not_ours, t.refused_by_cap), (n, n, 0), "{t:?}");
    assert!(t.store_error.is_none());
    let spans = store.spans(&outcome.meta.id).await.unwrap();
    assert_eq!(spans.len() as u64, n);
    for r in &rows {
        let trace = r
            .sample
            .trace_id
            .as_deref()
            .expect("every request is traced");
        let s: Vec<_> = spans.iter().filter(|s| s.trace_id == trace).collect();
        assert_eq!(s.len(), 1, "one server span per request");
        assert_eq!(s[0].kind, SpanKind::Server);
        assert_eq!(s[0].service.as_deref(), Some("test-app"));
        assert_eq!(s[0].parent_span_id.as_ref().map(String::len), Some(16));
        assert!(s[0].start_unix_nano <= s[0].end_unix_nano);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_span_cap_is_kept_and_reported() {
    let port = free_port().await;
    let listen = format!("127.0.0.1:{port}");
    let base = app(format!("http://{listen}/v1/traces")).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db").display().to_string())
        .await
        .unwrap();
    let spec = SessionSpec::new(
        config(&base, &listen, "max_spans = 2\ngrace = \"1500ms\""),
        Overrides::default(),
    )
    .unwrap();
    let outcome = run_session(&spec, &store, &mut Quiet, CancellationToken::new())
        .await
        .unwrap();
    let n = store.samples(&outcome.meta.id).await.unwrap().len() as u64;
    let t = outcome.traces.unwrap();
    assert!(t.cap_hit());
    assert_eq!(t.cap, 2);
    assert_eq!((t.stored, t.refused_by_cap), (2, n - 2), "{t:?}");
    assert_eq!(store.span_count(&outcome.meta.id).await.unwrap(), 2);
}

#[tokio::test]
async fn collecting_without_trace_context_is_a_config_error() {
    let text = config("http://127.0.0.1:9", "127.0.0.1:4318", "");
    let mut cfg = text;
    cfg.session.trace_context = Some(false);
    let e = SessionSpec::new(cfg.clone(), Overrides::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("trace_context"), "{e}");
    // The flag turns it back on.
    let o = Overrides {
        trace_context: Some(true),
        ..Overrides::default()
    };
    assert!(SessionSpec::new(cfg.clone(), o).is_ok());
    cfg.session.trace_context = None;
    cfg.traces.listen = Some("not an address".into());
    let e = SessionSpec::new(cfg, Overrides::default()).err().unwrap();
    assert!(e.to_string().contains("traces.listen"), "{e}");
}

/// Ctrl-C: the receiver still waits the grace period and keeps what
/// arrived, so every stored request's span is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_session_keeps_the_spans_that_arrived() {
    let port = free_port().await;
    let listen = format!("127.0.0.1:{port}");
    let base = app(format!("http://{listen}/v1/traces")).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db").display().to_string())
        .await
        .unwrap();
    let mut cfg = config(&base, &listen, "");
    cfg.phases = Config::parse(
        &format!(
            "[app]\nbase_url = \"{base}\"\n[[app.paths]]\nname = \"chat\"\npath = \"/api/chat\"\nbody = '{{}}'\n[prompts]\nlist = [\"one\"]\n[phases]\ncold = {{ count = 3, idle_gap = \"1s\" }}\n"
        ),
        "phases.toml",
    )
    .unwrap()
    .phases;
    let spec = SessionSpec::new(cfg, Overrides::default()).unwrap();
    let cancel = CancellationToken::new();
    // Ctrl-C the moment the first sample is stored, during the next idle gap.
    let mut first = CancelOnFirst(cancel.clone());
    let outcome = run_session(&spec, &store, &mut first, cancel)
        .await
        .unwrap();
    assert!(matches!(outcome.meta.status, SessionStatus::Partial { .. }));
    let rows = store.samples(&outcome.meta.id).await.unwrap();
    assert_eq!(rows.len(), 1, "cancelled after the first");
    let t = outcome.traces.unwrap();
    assert_eq!(t.stored, rows.len() as u64, "{t:?}");
    let spans = store.spans(&outcome.meta.id).await.unwrap();
    for r in &rows {
        let trace = r.sample.trace_id.as_deref().unwrap();
        assert!(
            spans.iter().any(|s| s.trace_id == trace),
            "the span of {trace} was kept"
        );
    }
}

/// Cancels the session when its first sample is stored.
struct CancelOnFirst(CancellationToken);

impl firsttoken_session::Observer for CancelOnFirst {
    fn recorded(&mut self, _row: &firsttoken_record::session::SampleRow, _spent: f64) {
        self.0.cancel();
    }
}

/// An exporter that starts an upload and never finishes it does not keep
/// the session from ending: the receiver stops a bounded time after the
/// grace period, and the spans already handed on are stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_exporter_does_not_hold_the_session() {
    use tokio::io::AsyncWriteExt;
    let port = free_port().await;
    let listen = format!("127.0.0.1:{port}");
    let base = app(format!("http://{listen}/v1/traces")).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db").display().to_string())
        .await
        .unwrap();
    let spec = SessionSpec::new(
        config(&base, &listen, "grace = \"1s\""),
        Overrides::default(),
    )
    .unwrap();
    let stuck = tokio::spawn(async move {
        // Wait for the receiver, then send half a request and hold it.
        let mut s = loop {
            if let Ok(s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                break s;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        s.write_all(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\nabc")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(s);
    });
    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        run_session(&spec, &store, &mut Quiet, CancellationToken::new()),
    )
    .await
    .expect("the session ends although an upload never finishes")
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    stuck.abort();
    let n = store.samples(&outcome.meta.id).await.unwrap().len() as u64;
    let t = outcome.traces.unwrap();
    assert_eq!(t.stored, n, "{t:?}");
}

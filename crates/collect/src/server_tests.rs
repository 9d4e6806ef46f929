use std::io::Write;
use std::time::Duration;

use super::*;

const FILE_LINE: &[u8] = include_bytes!("../tests/data/collector-file-line.json");
const OURS: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

struct Running {
    url: String,
    collector: Collector,
    rx: mpsc::Receiver<Vec<SpanRow>>,
    stop: CancellationToken,
}

async fn start(registry: TraceRegistry, config: CollectorConfig) -> Running {
    let (tx, rx) = mpsc::channel(16);
    let collector = Collector::new("sess", registry, tx, config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn(run(listener, collector.clone(), stop.clone()));
    Running {
        url,
        collector,
        rx,
        stop,
    }
}

fn ours() -> TraceRegistry {
    let r = TraceRegistry::new();
    r.insert_hex(OURS);
    r
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

async fn post(url: &str, ct: &str, ce: Option<&str>, body: Vec<u8>) -> reqwest::Response {
    let client = reqwest::Client::new();
    let mut rb = client.post(url).header("content-type", ct).body(body);
    if let Some(ce) = ce {
        rb = rb.header("content-encoding", ce);
    }
    tokio::time::timeout(Duration::from_secs(10), rb.send())
        .await
        .expect("answered in time")
        .expect("a response")
}

#[tokio::test]
async fn protobuf_spans_of_our_traces_are_kept_and_the_rest_counted() {
    let mut r = start(ours(), CollectorConfig::default()).await;
    let body = decode_json(FILE_LINE).unwrap().encode_to_vec();
    let resp = post(&r.url, "application/x-protobuf", None, body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/x-protobuf");
    let answer = ExportTraceServiceResponse::decode(resp.bytes().await.unwrap()).unwrap();
    assert_eq!(answer.partial_success.unwrap().rejected_spans, 2);
    let kept = r.rx.recv().await.unwrap();
    assert_eq!(kept.len(), 2);
    assert!(
        kept.iter()
            .all(|s| s.trace_id == OURS && s.session_id == "sess")
    );
    assert_eq!(
        r.collector.counts(),
        ReceiverCounts {
            requests: 1,
            received: 4,
            kept: 2,
            malformed: 2,
            ..Default::default()
        }
    );
    r.stop.cancel();
}

#[tokio::test]
async fn gzip_json_is_accepted_and_answered_in_json_and_other_traces_are_not_kept() {
    let mut r = start(TraceRegistry::new(), CollectorConfig::default()).await;
    let resp = post(
        &r.url,
        "application/json; charset=utf-8",
        Some("gzip"),
        gzip(FILE_LINE),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let answer: serde_json::Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    // opentelemetry-proto writes this int64 as a JSON number; OTLP/JSON readers take both.
    assert_eq!(answer["partialSuccess"]["rejectedSpans"], 2);
    let c = r.collector.counts();
    assert_eq!((c.received, c.kept, c.not_ours, c.malformed), (4, 0, 2, 2));
    r.stop.cancel();
    assert!(
        r.rx.try_recv().is_err(),
        "nothing of another trace was handed on"
    );
}

#[tokio::test]
async fn wrong_types_encodings_sizes_and_bodies_are_refused() {
    let config = CollectorConfig {
        max_body_bytes: 4096,
    };
    let r = start(ours(), config).await;
    let resp = post(&r.url, "text/plain", None, FILE_LINE.to_vec()).await;
    assert_eq!(resp.status(), 415);
    let resp = post(&r.url, "application/json", Some("br"), FILE_LINE.to_vec()).await;
    assert_eq!(resp.status(), 415);
    let resp = post(&r.url, "application/json", None, vec![b' '; 5000]).await;
    assert_eq!(resp.status(), 413);
    // Small on the wire, too large inflated.
    let bomb = gzip(&vec![b' '; 100_000]);
    assert!(bomb.len() < 4096);
    let resp = post(&r.url, "application/json", Some("gzip"), bomb).await;
    assert_eq!(resp.status(), 413);
    let resp = post(
        &r.url,
        "application/json",
        Some("gzip"),
        b"not gzip".to_vec(),
    )
    .await;
    assert_eq!(resp.status(), 400);
    let resp = post(
        &r.url,
        "application/x-protobuf",
        None,
        b"\xff\xff\xff".to_vec(),
    )
    .await;
    assert_eq!(resp.status(), 400);
    let resp = post(
        &r.url,
        "application/json",
        None,
        b"{\"resourceSpans\":7}".to_vec(),
    )
    .await;
    assert_eq!(resp.status(), 400);
    let c = r.collector.counts();
    assert_eq!((c.requests, c.refused_requests, c.received), (7, 7, 0));
    r.stop.cancel();
}

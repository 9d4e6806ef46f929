use super::*;

use firsttoken_record::session::{Provenance, SampleRow, SessionStatus};
use firsttoken_record::{Connection, Destination, PhaseKind, Sample};

const OURS: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const OTHER: &str = "0af7651916cd43dd8448eb211c80319c";

fn span(trace: &str, span: &str) -> String {
    format!(
        r#"{{"traceId":"{trace}","spanId":"{span}","name":"POST /api/chat","kind":2,"startTimeUnixNano":"1764590400000000000","endTimeUnixNano":"1764590400250000000","status":{{}}}}"#
    )
}

fn line(spans: &[String]) -> String {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[]}},"scopeSpans":[{{"scope":{{"name":"x"}},"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    )
}

/// A SQLite store in `dir` with session `s` of one sample per trace id.
async fn store_with(dir: &tempfile::TempDir, traces: &[&str]) -> (Store, SessionMeta) {
    let store = Store::open(&dir.path().join("s.db").display().to_string())
        .await
        .unwrap();
    let started = "2026-12-01T00:00:00Z".parse().unwrap();
    let meta = SessionMeta {
        status: SessionStatus::Complete,
        ..SessionMeta::new("s", started, Provenance::Measured)
    };
    store.create_session(&meta).await.unwrap();
    for (seq, t) in traces.iter().enumerate() {
        let mut sample = Sample::empty(seq as u64, 0, Connection::Reused);
        sample.trace_id = Some(t.to_string());
        let app = Destination::App { path: None };
        let row = SampleRow::new("s", PhaseKind::Warm, app, started, sample);
        store.append_sample(&row).await.unwrap();
    }
    (store, meta)
}

#[tokio::test]
async fn the_session_s_spans_are_stored_others_counted_bad_lines_named() {
    let dir = tempfile::tempdir().unwrap();
    let (store, meta) = store_with(&dir, &[OURS]).await;
    let text = [
        line(&[
            span(OURS, "1111111111111111"),
            span(OTHER, "2222222222222222"),
        ]),
        String::new(),
        "this is not OTLP".into(),
        // Upper-case hex, as the OTLP examples write it; a zero span id is
        // malformed.
        line(&[
            span(&OURS.to_uppercase(), "AAAAAAAAAAAAAAAA"),
            span(OURS, "0000000000000000"),
        ]),
    ]
    .join("\n");
    let got = import_otlp_lines(&store, &meta, text.as_bytes(), SpanCap::MAX)
        .await
        .unwrap();
    assert_eq!(got.appended.stored, 2);
    assert_eq!(got.other_traces, 1);
    assert_eq!(got.malformed, 1);
    assert_eq!(got.lines, 4);
    let bad: Vec<u64> = got.bad_lines.iter().map(|(n, _)| *n).collect();
    assert_eq!(bad, [3]);
    assert!(matches!(got.bad_lines[0].1, CollectError::Decode(_)));
    assert_eq!(store.span_count("s").await.unwrap(), 2);
    // Again: nothing is stored twice.
    let again = import_otlp_lines(&store, &meta, text.as_bytes(), SpanCap::MAX)
        .await
        .unwrap();
    assert_eq!((again.appended.stored, again.appended.duplicate), (0, 2));
}

#[tokio::test]
async fn the_cap_bounds_the_session_s_spans() {
    let dir = tempfile::tempdir().unwrap();
    let (store, meta) = store_with(&dir, &[OURS]).await;
    let text = line(&[
        span(OURS, "1111111111111111"),
        span(OURS, "2222222222222222"),
        span(OURS, "3333333333333333"),
    ]);
    let got = import_otlp_lines(&store, &meta, text.as_bytes(), SpanCap::new(2).unwrap())
        .await
        .unwrap();
    assert_eq!((got.appended.stored, got.appended.refused), (2, 1));
    assert!(matches!(SpanCap::new(0), Err(ImportError::Cap)));
    assert!(SpanCap::new(MAX_SPANS_PER_SESSION).is_ok());
    let e = SpanCap::new(MAX_SPANS_PER_SESSION + 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("--max-spans must be from 1 to {MAX_SPANS_PER_SESSION}")
    );
}

#[tokio::test]
async fn a_session_without_trace_ids_joins_no_span() {
    let dir = tempfile::tempdir().unwrap();
    let (store, meta) = store_with(&dir, &[]).await;
    let text = line(&[span(OURS, "1111111111111111")]);
    let e = import_otlp_lines(&store, &meta, text.as_bytes(), SpanCap::MAX)
        .await
        .unwrap_err();
    assert!(matches!(e, ImportError::NoTraceIds { ref session } if session == "s"));
}

#[tokio::test]
async fn a_line_past_the_limit_stops_the_import_after_the_lines_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (store, meta) = store_with(&dir, &[OURS]).await;
    let first = line(&[span(OURS, "1111111111111111")]);
    let max = first.len() as u64 + 1;
    let long = line(&[
        span(OURS, "2222222222222222"),
        span(OURS, "3333333333333333"),
    ]);
    let text = format!("{first}\n{long}\n{first}\n");
    let e = import_lines(&store, &meta, text.as_bytes(), SpanCap::MAX, max)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("line 2 is longer than {max} bytes; nothing after it was read")
    );
    // The batch of the line before it was not stored: a batch is stored
    // when full or at the end, and the import did not reach the end.
    assert_eq!(store.span_count("s").await.unwrap(), 0);
}

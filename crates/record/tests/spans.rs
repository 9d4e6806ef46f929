//! Server-side spans in the store (schema version 5), the same tests on
//! SQLite and PostgreSQL (set `DATABASE_URL`): round trip, the per-session
//! cap, duplicates, redaction, and what is refused.

mod common;

use common::{TestDb, full_session};
use firsttoken_record::span::{MAX_SPANS_PER_SESSION, SpanEvent, SpanKind, SpanRow};
use firsttoken_record::store::{REDACTED, SpansAppended, StoreError};

both_backends!(
    spans_round_trip_in_start_order_with_secrets_redacted,
    the_cap_refuses_what_does_not_fit_and_says_so,
    a_span_sent_twice_is_stored_once,
    bad_batches_are_refused_whole,
    a_sample_keeps_its_trace_id,
);

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn span(session: &str, n: u64) -> SpanRow {
    let mut s = SpanRow::new(
        session,
        TRACE,
        &format!("{:016x}", n + 1),
        &format!("span {n}"),
    );
    s.start_unix_nano = 1_764_000_000_000_000_000 + n * 1_000;
    s.end_unix_nano = s.start_unix_nano + 500;
    s
}

async fn spans_round_trip_in_start_order_with_secrets_redacted(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261201T120000Z-span", "2026-12-01T12:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let mut server = span(&meta.id, 9);
    server.name = "POST /api/chat".into();
    server.kind = SpanKind::Server;
    server.service = Some("fixture-app".into());
    server.parent_span_id = Some("b7ad6b7169203331".into());
    server.error = true;
    // Near the largest time a signed 64-bit column holds (year 2262).
    server.end_unix_nano = i64::MAX as u64;
    server
        .attributes
        .insert("http.request.method".into(), "POST".into());
    server
        .attributes
        .insert("http.response.status_code".into(), 200.into());
    server
        .attributes
        .insert("db.duration_s".into(), 0.05.into());
    server.attributes.insert("flag".into(), true.into());
    server
        .attributes
        .insert("tags".into(), serde_json::json!(["a", "b"]));
    server.attributes.insert(
        "http.request.header.authorization".into(),
        serde_json::json!(["Bearer sk-live-9"]),
    );
    server.events.push(SpanEvent {
        name: "first token".into(),
        time_unix_nano: server.start_unix_nano + 100,
        attributes: [("x-api-key".to_string(), serde_json::Value::from("k-1"))].into(),
    });
    let db_span = {
        let mut s = span(&meta.id, 1);
        s.kind = SpanKind::Client;
        s.parent_span_id = Some(server.span_id.clone());
        s.attributes.insert("db.system".into(), "postgresql".into());
        s
    };
    let got = store
        .append_spans(
            &meta.id,
            &[server.clone(), db_span.clone()],
            MAX_SPANS_PER_SESSION,
        )
        .await
        .unwrap();
    assert_eq!(
        got,
        SpansAppended {
            stored: 2,
            refused: 0,
            duplicate: 0
        }
    );
    assert_eq!(store.span_count(&meta.id).await.unwrap(), 2);
    assert_eq!(store.span_count("no-such-session").await.unwrap(), 0);

    let back = store.spans(&meta.id).await.unwrap();
    let mut want = server.clone();
    want.attributes
        .insert("http.request.header.authorization".into(), REDACTED.into());
    want.events[0]
        .attributes
        .insert("x-api-key".into(), REDACTED.into());
    // Start order: the db span (n = 1) started before the server span (n = 9).
    assert_eq!(back, vec![db_span, want]);
    let all = format!("{back:?}");
    assert!(
        !all.contains("sk-live") && !all.contains("k-1\""),
        "a secret was stored: {all}"
    );
    assert!(store.spans("no-such-session").await.unwrap().is_empty());
}

async fn the_cap_refuses_what_does_not_fit_and_says_so(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261201T120000Z-capp", "2026-12-01T12:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let batch = |from: u64, n: u64| {
        (from..from + n)
            .map(|i| span(&meta.id, i))
            .collect::<Vec<_>>()
    };
    let first = store.append_spans(&meta.id, &batch(0, 3), 5).await.unwrap();
    assert_eq!(
        first,
        SpansAppended {
            stored: 3,
            refused: 0,
            duplicate: 0
        }
    );
    let second = store.append_spans(&meta.id, &batch(3, 4), 5).await.unwrap();
    assert_eq!(
        second,
        SpansAppended {
            stored: 2,
            refused: 2,
            duplicate: 0
        }
    );
    let third = store.append_spans(&meta.id, &batch(7, 1), 5).await.unwrap();
    assert_eq!(
        third,
        SpansAppended {
            stored: 0,
            refused: 1,
            duplicate: 0
        }
    );
    assert_eq!(store.span_count(&meta.id).await.unwrap(), 5);
    // The cap is per session: another session starts from zero.
    let other = full_session("20261201T120000Z-cap2", "2026-12-01T12:00:01.000Z");
    store.create_session(&other).await.unwrap();
    let spans: Vec<SpanRow> = (0..2).map(|i| span(&other.id, i)).collect();
    let got = store.append_spans(&other.id, &spans, 5).await.unwrap();
    assert_eq!(got.stored, 2);
    // A cap above the hard limit is the hard limit (nothing to see at this
    // size but that it is accepted).
    let got = store
        .append_spans(&other.id, &[span(&other.id, 2)], usize::MAX)
        .await
        .unwrap();
    assert_eq!(got.stored, 1);
}

async fn a_span_sent_twice_is_stored_once(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261201T120000Z-dupe", "2026-12-01T12:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let spans: Vec<SpanRow> = (0..3).map(|i| span(&meta.id, i)).collect();
    store.append_spans(&meta.id, &spans, 100).await.unwrap();
    let again = store
        .append_spans(&meta.id, &spans[1..], 100)
        .await
        .unwrap();
    assert_eq!(
        again,
        SpansAppended {
            stored: 0,
            refused: 0,
            duplicate: 2
        }
    );
    assert_eq!(store.span_count(&meta.id).await.unwrap(), 3);
}

async fn bad_batches_are_refused_whole(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261201T120000Z-badd", "2026-12-01T12:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let e = store
        .append_spans("no-such-session", &[span("no-such-session", 0)], 10)
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::NoSession { .. }), "{e}");
    let mut bad = span(&meta.id, 1);
    bad.trace_id = "00000000000000000000000000000000".into();
    let e = store
        .append_spans(&meta.id, &[span(&meta.id, 0), bad], 10)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("trace_id"), "{e}");
    let e = store
        .append_spans(&meta.id, &[span("another", 0)], 10)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("another"), "{e}");
    let mut late = span(&meta.id, 2);
    late.end_unix_nano = u64::MAX;
    assert!(store.append_spans(&meta.id, &[late], 10).await.is_err());
    assert_eq!(
        store.span_count(&meta.id).await.unwrap(),
        0,
        "nothing of a bad batch is stored"
    );
    // The database itself refuses a kind outside the vocabulary.
    let refused = db
        .raw_exec(&format!(
            "INSERT INTO spans (session_id, trace_id, span_id, name, kind, start_unix_nano, end_unix_nano)
             VALUES ('{}', '{TRACE}', '00f067aa0ba902b7', 'x', 'SERVER', 1, 2)",
            meta.id
        ))
        .await;
    assert!(refused.is_err(), "an unknown kind was stored");
}

async fn a_sample_keeps_its_trace_id(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261201T120000Z-samp", "2026-12-01T12:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let traced = common::full_row(&meta.id, 0, 10.0);
    let untraced = common::null_row(&meta.id, 1, 20.0);
    assert!(traced.sample.trace_id.is_some());
    assert!(untraced.sample.trace_id.is_none());
    store.append_sample(&traced).await.unwrap();
    store.append_sample(&untraced).await.unwrap();
    let back = store.samples(&meta.id).await.unwrap();
    assert_eq!(back, vec![traced.clone(), untraced]);
    let mut bad = traced;
    bad.sample.seq = 2;
    bad.sample.trace_id = Some("not-a-trace-id".into());
    assert!(store.append_sample(&bad).await.is_err());
}

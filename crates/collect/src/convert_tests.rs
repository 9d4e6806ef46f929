use super::*;

const EXAMPLE: &[u8] = include_bytes!("../tests/data/otlp-example-trace.json");
const FILE_LINE: &[u8] = include_bytes!("../tests/data/collector-file-line.json");

/// The OTLP repository's own example (upper-case hex ids, int64 times as
/// strings) decodes through the official definitions.
#[test]
fn the_official_json_example_converts() {
    let req = decode_json(EXAMPLE).unwrap();
    let c = convert(&req, "s1");
    assert_eq!(c.malformed, 0);
    assert_eq!(c.spans.len(), 1);
    let s = &c.spans[0];
    assert_eq!(s.session_id, "s1");
    assert_eq!(s.trace_id, "5b8efff798038103d269b633813fc60c");
    assert_eq!(s.span_id, "eee19b7ec3c1b174");
    assert_eq!(s.parent_span_id.as_deref(), Some("eee19b7ec3c1b173"));
    assert_eq!(s.name, "I'm a server span");
    assert_eq!(s.kind, SpanKind::Server);
    assert_eq!(s.service.as_deref(), Some("my.service"));
    assert_eq!(s.start_unix_nano, 1_544_712_660_000_000_000);
    assert_eq!(s.end_unix_nano, 1_544_712_661_000_000_000);
    assert_eq!(s.duration_ns(), 1_000_000_000);
    assert_eq!(s.attr_str("my.span.attr"), Some("some value"));
    assert!(!s.error);
}

/// A line as the Collector's file exporter writes it: every value type,
/// events out of order, an ERROR status, and two malformed spans.
#[test]
fn every_value_type_events_status_and_malformed_ids() {
    let req = decode_json(FILE_LINE).unwrap();
    let c = convert(&req, "s");
    assert_eq!(c.malformed, 2, "an all-zero trace id and an empty span id");
    assert_eq!(c.spans.len(), 2);
    let server = &c.spans[0];
    assert_eq!(server.kind, SpanKind::Server);
    assert_eq!(server.parent_span_id.as_deref(), Some("00f067aa0ba902b7"));
    assert_eq!(server.service.as_deref(), Some("chat-app"));
    assert_eq!(
        server.attributes["http.response.status_code"],
        Value::from(200)
    );
    assert_eq!(server.attributes["app.ratio"], Value::from(0.25));
    assert_eq!(server.attributes["app.cached"], Value::Bool(false));
    assert_eq!(server.attributes["app.blob"], Value::from("010203"));
    assert_eq!(
        server.attributes["http.request.header.authorization"],
        serde_json::json!(["Bearer sk-live-abc"]),
        "the receiver keeps values as sent: the store redacts"
    );
    assert!(
        !server.attributes.contains_key("service.name"),
        "resource attributes stay out"
    );
    let names: Vec<&str> = server.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["retrieved", "first token"], "events in time order");
    assert_eq!(
        server.events[1].attributes["gen_ai.response.model"],
        Value::from("m")
    );
    assert!(!server.error);
    let db = &c.spans[1];
    assert_eq!(db.kind, SpanKind::Client);
    assert!(db.error, "status code 2 is ERROR");
    assert_eq!(db.attr_str("db.system"), Some("postgresql"));
    assert_eq!(db.duration_ns(), 50_000_000);
}

/// The same request in OTLP/protobuf converts to the same rows.
#[test]
fn protobuf_and_json_agree() {
    let req = decode_json(FILE_LINE).unwrap();
    let bytes = req.encode_to_vec();
    let back = decode_protobuf(&bytes).unwrap();
    assert_eq!(back, req);
    assert_eq!(convert(&back, "s"), convert(&req, "s"));
    assert!(decode_protobuf(b"\xff\xff\xff").is_err());
    assert!(decode_json(b"{\"resourceSpans\": 3}").is_err());
}

#[test]
fn values_without_a_json_form_are_named() {
    let v = AnyValue {
        value: Some(any_value::Value::DoubleValue(f64::NAN)),
    };
    assert_eq!(any_value_json(Some(&v)), Value::from("NaN"));
    assert_eq!(any_value_json(None), Value::Null);
}

/// What the real Python SDK's OTLP/HTTP exporter sent (three batches,
/// captured from `tests/fixtures/traced_app.py` in crates/cli, run on
/// PostgreSQL, for one request with `traceparent:
/// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`): the FastAPI
/// server span is the child of the span firsttoken named, and the four
/// psycopg spans are its children.
#[test]
fn the_python_sdks_protobuf_export_converts() {
    let mut spans = Vec::new();
    for b in [
        &include_bytes!("../tests/data/python-sdk-export-0.pb")[..],
        &include_bytes!("../tests/data/python-sdk-export-1.pb")[..],
        &include_bytes!("../tests/data/python-sdk-export-2.pb")[..],
    ] {
        let c = convert(&decode_protobuf(b).unwrap(), "s");
        assert_eq!(c.malformed, 0);
        spans.extend(c.spans);
    }
    assert!(
        spans
            .iter()
            .all(|s| s.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736")
    );
    assert!(
        spans
            .iter()
            .all(|s| s.service.as_deref() == Some("traced-fixture"))
    );
    let server: Vec<_> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Server)
        .collect();
    assert_eq!(server.len(), 1);
    let server = server[0];
    assert_eq!(server.name, "POST /api/chat");
    assert_eq!(server.parent_span_id.as_deref(), Some("00f067aa0ba902b7"));
    assert_eq!(server.attributes["http.status_code"], Value::from(200));
    let db: Vec<_> = spans
        .iter()
        .filter(|s| s.attr_str("db.system") == Some("postgresql"))
        .collect();
    assert_eq!(db.len(), 4);
    for d in &db {
        assert_eq!(d.kind, SpanKind::Client);
        assert_eq!(d.parent_span_id.as_ref(), Some(&server.span_id));
        assert!(
            d.duration_ns() >= 50_000_000,
            "pg_sleep(0.05): {}",
            d.duration_ns()
        );
        assert!(
            d.start_unix_nano >= server.start_unix_nano && d.end_unix_nano <= server.end_unix_nano
        );
    }
    assert!(server.duration_ns() >= 200_000_000);
}

proptest::proptest! {
    /// Whatever bytes arrive, decoding returns an error or a request whose
    /// conversion keeps only well-formed ids: never a panic.
    #[test]
    fn arbitrary_bodies_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
        for req in [decode_protobuf(&body), decode_json(&body)].into_iter().flatten() {
            for s in convert(&req, "s").spans {
                proptest::prop_assert!(firsttoken_record::span::is_trace_id(&s.trace_id));
                proptest::prop_assert_eq!(s.span_id.len(), 16);
            }
        }
    }

    /// A valid export with one byte changed still never panics.
    #[test]
    fn mutated_real_exports_never_panic(at in 0usize..2617, byte in proptest::num::u8::ANY) {
        let mut body = include_bytes!("../tests/data/python-sdk-export-2.pb").to_vec();
        let i = at % body.len();
        body[i] = byte;
        if let Ok(req) = decode_protobuf(&body) {
            let c = convert(&req, "s");
            proptest::prop_assert!(c.spans.iter().all(|s| s.parent_span_id.as_ref().is_none_or(|p| p.len() == 16)));
        }
    }
}

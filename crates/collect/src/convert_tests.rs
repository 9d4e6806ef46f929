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

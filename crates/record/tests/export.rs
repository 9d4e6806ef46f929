//! Export shapes, without a store: JSON Lines against the checked-in
//! schemas, reading errors, grouping for import, marking imported.

mod common;

use common::{full_row, full_session, null_row};
use firsttoken_record::SAMPLE_SCHEMA;
use firsttoken_record::export::{
    self, EXPORT_SCHEMA, SAMPLE_ROW_LINE_SCHEMA, SESSION_LINE_SCHEMA, mark_imported,
};
use firsttoken_record::session::{Provenance, SessionStatus};
use firsttoken_record::store::StoreError;
use firsttoken_record::vocab::PhaseKind;

fn validator() -> jsonschema::Validator {
    let sample: serde_json::Value = serde_json::from_str(SAMPLE_SCHEMA).unwrap();
    let export: serde_json::Value = serde_json::from_str(EXPORT_SCHEMA).unwrap();
    let registry = jsonschema::Registry::new()
        .add(
            "https://firsttoken.invalid/schema/sample.v1.schema.json",
            sample,
        )
        .unwrap()
        .prepare()
        .unwrap();
    jsonschema::options()
        .with_registry(&registry)
        .build(&export)
        .expect("export schema compiles")
}

fn export_lines() -> Vec<serde_json::Value> {
    let mut meta = full_session("s-1", "2026-11-30T01:00:00.000Z");
    meta.pid = Some(42);
    meta.status = SessionStatus::Partial {
        reason: "Ctrl-C".into(),
    };
    meta.cleanup = Some(common::cleanup());
    meta.client_lag_p99_ms = Some(4.5);
    let rows = [full_row("s-1", 0, 1.0), null_row("s-1", 1, 2.0)];
    let mut buf = Vec::new();
    export::write_session_jsonl(&meta, &rows, &mut buf).unwrap();
    String::from_utf8(buf)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn jsonl_lines_validate_against_the_checked_in_schemas() {
    let v = validator();
    let lines = export_lines();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["schema"], SESSION_LINE_SCHEMA);
    assert_eq!(lines[1]["schema"], SAMPLE_ROW_LINE_SCHEMA);
    for line in &lines {
        let errors: Vec<String> = v.iter_errors(line).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{line}: {errors:?}");
    }
    // The schema has teeth: a row without provenance, or with an unknown one, fails.
    let mut bad = lines[1].clone();
    bad.as_object_mut().unwrap().remove("provenance");
    assert!(!v.is_valid(&bad));
    let mut bad = lines[1].clone();
    bad["provenance"] = "guessed".into();
    assert!(!v.is_valid(&bad));
    let mut bad = lines[1].clone();
    bad["phase"] = "lukewarm".into();
    assert!(!v.is_valid(&bad), "an unknown phase fails");
    let mut bad = lines[1].clone();
    bad["started_at"] = "half past two".into();
    assert!(!v.is_valid(&bad), "a time that is not RFC 3339 fails");
    let mut bad = lines[2].clone();
    bad["sample"]["ttft_ms"] = (-1.0).into();
    assert!(
        !v.is_valid(&bad),
        "the sample member is checked by sample.v1"
    );
}

#[test]
fn the_schema_lists_exactly_the_phase_vocabulary() {
    let export: serde_json::Value = serde_json::from_str(EXPORT_SCHEMA).unwrap();
    let listed = &export["$defs"]["phase"]["enum"];
    let names: Vec<&str> = PhaseKind::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(*listed, serde_json::json!(names));
}

#[test]
fn read_jsonl_round_trips_and_names_bad_lines() {
    let meta = full_session("s-1", "2026-11-30T01:00:00.000Z");
    let rows = vec![full_row("s-1", 0, 1.0), null_row("s-1", 1, 2.0)];
    let mut buf = Vec::new();
    export::write_session_jsonl(&meta, &rows, &mut buf).unwrap();
    let (sessions, read) = export::read_jsonl(buf.as_slice()).unwrap();
    assert_eq!(sessions, vec![meta.clone()]);
    assert_eq!(read, rows);

    let mut text = String::from_utf8(buf).unwrap();
    text.push_str("{\"schema\":\"firsttoken.sample_row.v1\",\"session_id\":\"s-1\"}\n");
    match export::read_jsonl(text.as_bytes()) {
        Err(StoreError::Malformed { line: 4, message }) => {
            assert!(message.contains("sample record"), "{message}")
        }
        other => panic!("expected line 4 to be named, got {other:?}"),
    }
}

#[test]
fn samples_without_their_session_record_cannot_be_imported() {
    let rows = vec![full_row("s-1", 0, 1.0)];
    let mut buf = Vec::new();
    export::write_jsonl(&rows, &mut buf).unwrap();
    let (sessions, read) = export::read_jsonl(buf.as_slice()).unwrap();
    assert!(sessions.is_empty());
    let err = export::group_for_import(sessions, read).unwrap_err();
    assert!(matches!(err, StoreError::NoSessionRecord { .. }), "{err}");
}

#[test]
fn mark_imported_keeps_numbers_and_marks_everything() {
    let mut meta = full_session("orig", "2026-11-30T01:00:00.000Z");
    meta.pid = Some(7);
    let rows = vec![full_row("orig", 0, 1.0), null_row("orig", 1, 2.0)];
    let (m, r) = mark_imported(&meta, &rows, "new");
    assert_eq!(m.id, "new");
    assert_eq!(m.provenance, Provenance::Imported);
    assert_eq!(m.labels.tags["imported_from"], "orig");
    assert_eq!(m.labels.tags["original_provenance"], "measured");
    assert_eq!(m.pid, None);
    assert!(
        matches!(m.status, SessionStatus::Partial { .. }),
        "running becomes partial"
    );
    assert_eq!((m.seed, &m.spec), (meta.seed, &meta.spec));
    for (a, b) in r.iter().zip(&rows) {
        assert_eq!(a.provenance, Provenance::Imported);
        assert_eq!(a.session_id, "new");
        assert_eq!(a.sample, b.sample);
        assert_eq!(a.actual_start_ms, b.actual_start_ms);
    }
}

/// Span lines (issue 12): they validate, read back equal, and a malformed
/// one is refused by the schema.
#[test]
fn span_lines_validate_and_round_trip() {
    use firsttoken_record::span::{SpanEvent, SpanKind, SpanRow};
    let mut full = SpanRow::new(
        "s-1",
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b7",
        "POST /chat",
    );
    full.parent_span_id = Some("b7ad6b7169203331".into());
    full.kind = SpanKind::Server;
    full.service = Some("app".into());
    full.start_unix_nano = 1_764_590_400_000_000_000;
    full.end_unix_nano = 1_764_590_400_250_000_000;
    full.error = true;
    full.attributes
        .insert("http.response.status_code".into(), 200.into());
    full.events.push(SpanEvent {
        name: "first token".into(),
        time_unix_nano: 1_764_590_400_100_000_000,
        attributes: Default::default(),
    });
    let bare = SpanRow::new(
        "s-1",
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "1111111111111111",
        "SELECT",
    );
    let meta = full_session("s-1", "2026-11-30T01:00:00.000Z");
    let rows = vec![full_row("s-1", 0, 1.0)];
    let mut buf = Vec::new();
    export::write_session_jsonl(&meta, &rows, &mut buf).unwrap();
    export::write_spans_jsonl(&[full.clone(), bare.clone()], &mut buf).unwrap();
    let v = validator();
    let text = String::from_utf8(buf.clone()).unwrap();
    for line in text.lines() {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = v.iter_errors(&line).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{line}: {errors:?}");
    }
    let back = export::read_export(buf.as_slice()).unwrap();
    assert_eq!(back.sessions, vec![meta]);
    assert_eq!(back.rows, rows);
    assert_eq!(back.spans, vec![full, bare.clone()]);
    // read_jsonl reads the same file and leaves the spans out.
    let (s, r) = export::read_jsonl(buf.as_slice()).unwrap();
    assert_eq!((s.len(), r.len()), (1, 1));
    let mut bad: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    bad["trace_id"] = "4BF92F3577B34DA6A3CE929D0E0E4736".into();
    assert!(
        !v.is_valid(&bad),
        "an upper-case trace id is not an export's"
    );
}

//! `firsttoken import-spans` (issue 12): OTLP JSON lines as the
//! OpenTelemetry Collector's file exporter writes them, joined to a stored
//! session by the trace ids its samples sent; spans of other traces are
//! counted, a line that is not OTLP is named, a re-import stores nothing twice;
//! the session's JSONL export carries the spans to another store.

mod common;

use common::{EmulatorProcess, assert_code, firsttoken, session_ids, text, write_config};
use firsttoken_record::Store;

fn span(trace: &str, span: &str, parent: &str, name: &str) -> String {
    format!(
        r#"{{"traceId":"{trace}","spanId":"{span}","parentSpanId":"{parent}","name":"{name}","kind":2,"startTimeUnixNano":"1764590400000000000","endTimeUnixNano":"1764590400250000000","attributes":[{{"key":"http.response.status_code","value":{{"intValue":"200"}}}}],"status":{{}}}}"#
    )
}

fn line(spans: &[String]) -> String {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"collector-app"}}}}]}},"scopeSpans":[{{"scope":{{"name":"x"}},"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    )
}

#[test]
fn spans_from_a_collector_file_join_their_session() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 2);
    let store = dir.path().join("s.db").display().to_string();
    assert_code(
        &firsttoken(&["run", "-c", &cfg, "--store", &store, "-q"], &[]),
        0,
    );
    let session = session_ids(&store).remove(0);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let traces: Vec<String> = rt.block_on(async {
        let s = Store::open(&store).await.unwrap();
        s.samples(&session)
            .await
            .unwrap()
            .into_iter()
            .map(|r| {
                r.sample
                    .trace_id
                    .expect("sessions send traceparent by default")
            })
            .collect()
    });
    assert!(traces.len() >= 2);
    let (a, b) = (&traces[0], &traces[1]);
    let file = dir.path().join("spans.jsonl");
    std::fs::write(
        &file,
        [
            line(&[
                span(a, "1111111111111111", "00f067aa0ba902b7", "POST /api/chat"),
                span(a, "2222222222222222", "1111111111111111", "SELECT"),
                span(
                    "0af7651916cd43dd8448eb211c80319c",
                    "3333333333333333",
                    "",
                    "elsewhere",
                ),
            ]),
            String::new(),
            "this is not OTLP".to_string(),
            // Upper-case hex, as the OTLP examples write it.
            line(&[span(
                &b.to_uppercase(),
                "AAAAAAAAAAAAAAAA",
                "",
                "GET /other",
            )]),
        ]
        .join("\n"),
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = firsttoken(
        &["import-spans", "--store", &store, "--session", &session, f],
        &[],
    );
    assert_code(&out, 1);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("imported 3 spans"), "{stdout}");
    assert!(stdout.contains("1 of other traces not stored"), "{stdout}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("line 3:"), "{stderr}");

    let spans = rt.block_on(async {
        Store::open(&store)
            .await
            .unwrap()
            .spans(&session)
            .await
            .unwrap()
    });
    assert_eq!(spans.len(), 3);
    assert_eq!(spans.iter().filter(|s| &s.trace_id == a).count(), 2);
    let other = spans.iter().find(|s| &s.trace_id == b).unwrap();
    assert_eq!(other.span_id, "aaaaaaaaaaaaaaaa");
    assert_eq!(other.service.as_deref(), Some("collector-app"));

    // Again: nothing is stored twice.
    let out = firsttoken(
        &["import-spans", "--store", &store, "--session", &session, f],
        &[],
    );
    assert!(
        text(&out.stdout).contains("imported 0 spans"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stdout).contains("3 already stored"),
        "{}",
        text(&out.stdout)
    );

    // The session's JSONL export carries its spans, and an import into
    // another store keeps them under the new session id.
    let out = firsttoken(&["export", "--store", &store, "--session", &session], &[]);
    assert_code(&out, 0);
    let export = text(&out.stdout);
    assert_eq!(
        export.matches("\"schema\":\"firsttoken.span.v1\"").count(),
        3
    );
    let exported = dir.path().join("export.jsonl");
    std::fs::write(&exported, &export).unwrap();
    let other = dir.path().join("other.db").display().to_string();
    let out = firsttoken(
        &["import", "--store", &other, exported.to_str().unwrap()],
        &[],
    );
    assert_code(&out, 0);
    assert!(
        text(&out.stdout).contains("3 spans"),
        "{}",
        text(&out.stdout)
    );
    let (new_id, copied) = rt.block_on(async {
        let s = Store::open(&other).await.unwrap();
        let id = s.sessions().await.unwrap().remove(0).id;
        let spans = s.spans(&id).await.unwrap();
        (id, spans)
    });
    assert_ne!(new_id, session);
    let mut want = spans.clone();
    for s in &mut want {
        s.session_id.clone_from(&new_id);
    }
    assert_eq!(copied, want);

    let out = firsttoken(
        &["import-spans", "--store", &store, "--session", "nope", f],
        &[],
    );
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("no session"),
        "{}",
        text(&out.stderr)
    );
}

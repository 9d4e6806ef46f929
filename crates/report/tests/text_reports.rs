//! Terminal, Markdown and JSON reports over a synthetic article-shaped
//! session: same sections in each, tables within 100 columns, JSON valid
//! against its checked-in schema.

use firsttoken_analyze::compare::compare_sessions;
use firsttoken_analyze::{Settings, analyze_rows};
use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::vocab::{Destination, PhaseKind};
use firsttoken_record::{Connection, Sample};
use firsttoken_report::{doc, json, markdown, terminal};

fn meta(id: &str, code_version: &str) -> SessionMeta {
    SessionMeta {
        id: id.into(),
        started_at: "2026-11-30T02:00:00.000Z".parse().unwrap(),
        ended_at: Some("2026-11-30T02:05:00.000Z".parse().unwrap()),
        status: SessionStatus::Complete,
        spec: serde_json::json!({}),
        seed: 7,
        tool_version: "0.1.0".into(),
        host: "test".into(),
        pid: None,
        labels: Labels {
            network: "loopback".into(),
            code_version: code_version.into(),
            vantage: "test".into(),
            tags: Default::default(),
        },
        provenance: Provenance::Synthetic,
        cleanup: None,
        client_lag_p99_ms: None,
    }
}

fn row(session: &str, i: u64, phase: &str, path: &str, ttft: f64) -> SampleRow {
    let phase: PhaseKind = phase.parse().unwrap();
    let mut s = Sample::empty(
        i,
        0,
        if phase == PhaseKind::Fresh {
            Connection::Fresh
        } else {
            Connection::Reused
        },
    );
    s.status = Some(200);
    s.ttfb_ms = Some(ttft * 0.2);
    if phase != PhaseKind::Ping {
        s.ttft_ms = Some(ttft);
        s.last_token_ms = Some(ttft + 300.0);
        s.output_tokens = Some(20);
        s.tokens_per_s = Some(19.0 / 0.3);
    }
    s.e2e_ms = Some(ttft + 310.0);
    if phase == PhaseKind::Fresh {
        s.connect_ms = Some(1.0);
    }
    SampleRow {
        session_id: session.into(),
        phase,
        dest: Destination::from_columns(
            phase,
            Some(path.into()),
            (phase == PhaseKind::Direct).then(|| "default".into()),
        )
        .unwrap(),
        concurrency: None,
        intended_start_ms: None,
        actual_start_ms: i as f64 * 10.0,
        started_at: "2026-11-30T02:00:01.000Z".parse().unwrap(),
        provenance: Provenance::Synthetic,
        sample: s,
    }
}

fn session_rows(id: &str, slow: f64) -> Vec<SampleRow> {
    let mut rows = Vec::new();
    let mut i = 0;
    let mut push = |phase: &str, path: &str, ttft: f64, c: Option<u32>| {
        let mut r = row(id, i, phase, path, ttft);
        r.concurrency = c;
        rows.push(r);
        i += 1;
    };
    for k in 0..10 {
        push("ping", "ping", 1.0 + f64::from(k) * 0.01, None);
    }
    for k in 0..60 {
        push(
            "warm",
            if k % 2 == 0 { "chat" } else { "docs" },
            slow + f64::from(k),
            None,
        );
        push("direct", "direct", 150.0 + f64::from(k), None);
    }
    for k in 0..20 {
        push("fresh", "chat", slow + 5.0 + f64::from(k), None);
    }
    for level in [1u32, 3, 5] {
        for k in 0..20 {
            push(
                "concurrency",
                "chat",
                slow * f64::from(level + 1) / 2.0 + f64::from(k),
                Some(level),
            );
        }
    }
    rows
}

#[test]
fn every_format_shows_the_same_sections() {
    let sessions = vec![meta("before", "before"), meta("after", "after")];
    let mut rows = session_rows("before", 900.0);
    rows.extend(session_rows("after", 300.0));
    let settings = Settings::new(7);
    let keys = firsttoken_analyze::GroupKey::parse_list("code_version,path").unwrap();
    let analysis = analyze_rows(&rows, &sessions, &keys, &settings).unwrap();
    let frame = firsttoken_analyze::Frame::from_rows(&rows, &sessions).unwrap();
    let cmp = compare_sessions(
        &frame,
        "after",
        "before",
        Some(firsttoken_analyze::PhaseKind::Warm),
        firsttoken_analyze::Metric::Ttft,
        &settings,
    )
    .unwrap();
    assert_eq!(format!("{:?}", cmp.verdict), "Faster", "{}", cmp.summary);
    let d = doc::build(&analysis, std::slice::from_ref(&cmp));

    let text = terminal::render(&d, 100);
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "too wide: {l}");
    }
    let md = markdown::render(&d, "firsttoken report");
    for s in &d.sections {
        assert!(text.contains(&s.title), "terminal misses {}", s.title);
        assert!(
            md.contains(&format!("## {}", s.title)),
            "markdown misses {}",
            s.title
        );
    }
    assert!(
        text.contains("code_version=after") && text.contains("Concurrency wall"),
        "{text}"
    );
    assert!(text.contains("faster"), "{text}");
    // Every Markdown table row has as many cells as its header.
    let mut cols = None;
    for l in md.lines() {
        if l.starts_with('|') {
            let n = l.matches(" | ").count();
            if l.starts_with("|---") {
                continue;
            }
            match cols {
                None => cols = Some(n),
                Some(c) => assert_eq!(c, n, "{l}"),
            }
        } else {
            cols = None;
        }
    }

    let out = json::render(&sessions, &analysis, &[cmp]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let schema: serde_json::Value = serde_json::from_str(json::REPORT_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["comparisons"][0]["verdict"], "faster");
}

#[test]
fn the_schema_rejects_a_wrong_document() {
    let schema: serde_json::Value = serde_json::from_str(json::REPORT_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(!validator.is_valid(&serde_json::json!({"schema": "firsttoken.report.v1"})));
    assert!(!validator.is_valid(
        &serde_json::json!({"schema": "other", "sessions": [], "analysis": {}, "comparisons": []})
    ));
}

//! Fixtures shared by the report tests: synthetic sessions built row by
//! row, deterministic (no randomness), so snapshots are stable.
#![allow(dead_code)]

use firsttoken_analyze::compare::compare_sessions;
use firsttoken_analyze::{
    Analysis, Comparison, Frame, GroupKey, Metric, PhaseKind, Settings, analyze,
};
use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::{Connection, Destination, Sample};

pub fn meta(id: &str, code_version: &str) -> SessionMeta {
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

pub fn row(session: &str, i: u64, phase: &str, path: &str, ttft: f64) -> SampleRow {
    let phase_kind: PhaseKind = phase.parse().unwrap();
    let mut s = Sample::empty(
        i,
        0,
        if phase == "fresh" {
            Connection::Fresh
        } else {
            Connection::Reused
        },
    );
    s.status = Some(200);
    s.ttfb_ms = Some(ttft * 0.2);
    if phase != "ping" {
        s.ttft_ms = Some(ttft);
        s.last_token_ms = Some(ttft + 300.0);
        s.output_tokens = Some(20);
        s.tokens_per_s = Some(19.0 / 0.3);
    }
    s.e2e_ms = Some(ttft + 310.0);
    if phase == "fresh" {
        s.connect_ms = Some(1.0);
    }
    SampleRow {
        session_id: session.into(),
        phase: phase_kind,
        dest: Destination::from_columns(
            phase_kind,
            Some(path.into()),
            (phase == "direct").then(|| "default".into()),
        )
        .unwrap(),
        concurrency: None,
        intended_start_ms: None,
        actual_start_ms: i as f64 * 10.0,
        started_at: "2026-11-30T02:00:01.000Z".parse().unwrap(),
        provenance: Provenance::Synthetic,
        prompt: None,
        sample: s,
    }
}

/// An article-shaped session whose app TTFT is about `slow` ms.
pub fn session_rows(id: &str, slow: f64) -> Vec<SampleRow> {
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

/// Before (≈ 900 ms) and after (≈ 300 ms), grouped by code version and path.
pub fn before_after() -> (Vec<SessionMeta>, Vec<SampleRow>, Analysis, Frame) {
    let sessions = vec![meta("before", "before"), meta("after", "after")];
    let mut rows = session_rows("before", 900.0);
    rows.extend(session_rows("after", 300.0));
    let keys = GroupKey::parse_list("code_version,path").unwrap();
    let frame = Frame::from_rows(&rows, &sessions).unwrap();
    let analysis = analyze(&frame, &sessions, &keys, &Settings::new(7));
    (sessions, rows, analysis, frame)
}

/// The before/after pair with `after` compared against `before` on warm TTFT.
pub fn before_after_compared() -> (Vec<SessionMeta>, Vec<SampleRow>, Analysis, Comparison) {
    let (sessions, rows, analysis, frame) = before_after();
    let cmp = compare_sessions(
        &frame,
        "after",
        "before",
        firsttoken_analyze::compare::Slice::phase(PhaseKind::Warm),
        Metric::Ttft,
        &Settings::new(7),
    )
    .expect("both sessions are measured alike");
    (sessions, rows, analysis, cmp)
}

/// `n` values spread evenly (golden-ratio sequence) over `center` ± `spread`.
pub fn spread(center: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| center + spread * (2.0 * (i as f64 * 0.618_033_988_7).fract() - 1.0))
        .collect()
}

/// One session in which nothing differs: app ≈ direct (the app a little
/// lower at the point, as in the demo), fresh ≈ warm, every concurrency
/// level ≈ c = 1, cold probes at the warm median, two strategies alike,
/// two paths alike, two days alike. Every diagnostic's interval spans its
/// null value. Values spread ±300 ms around 1 s, so every interval also
/// reaches past the 5 % material band: inconclusive at this n.
pub fn inconclusive() -> (Vec<SessionMeta>, Vec<SampleRow>, Analysis) {
    undecided(300.0)
}

/// The same session with values spread only ±10 ms: every interval spans
/// its null value and stays inside the material band (no detectable
/// difference).
pub fn no_difference() -> (Vec<SessionMeta>, Vec<SampleRow>, Analysis) {
    undecided(10.0)
}

/// The session of [`inconclusive`] with values spread `width` ms around 1 s.
fn undecided(width: f64) -> (Vec<SessionMeta>, Vec<SampleRow>, Analysis) {
    let id = "flat";
    let sessions = vec![meta(id, "v1")];
    let mut rows: Vec<SampleRow> = Vec::new();
    fn add<'a>(
        rows: &'a mut Vec<SampleRow>,
        phase: &str,
        path: &str,
        t: f64,
        day: u32,
    ) -> &'a mut SampleRow {
        let mut r = row("flat", rows.len() as u64, phase, path, t);
        r.started_at = format!("2026-11-{:02}T12:00:00.000Z", 28 + day)
            .parse()
            .unwrap();
        rows.push(r);
        rows.last_mut().expect("just pushed")
    }
    for (k, t) in spread(40.0, 4.0 * width / 300.0, 20)
        .into_iter()
        .enumerate()
    {
        add(&mut rows, "ping", "ping", t * 5.0, (k % 2) as u32);
    }
    for (k, t) in spread(1000.0, width, 80).into_iter().enumerate() {
        add(
            &mut rows,
            "warm",
            ["chat", "docs"][k % 2],
            t,
            ((k / 2) % 2) as u32,
        );
    }
    for (k, t) in spread(1000.0 + width / 6.0, width, 80)
        .into_iter()
        .enumerate()
    {
        add(&mut rows, "direct", "direct", t, 0).dest = Destination::Direct {
            strategy: Some(["default", "alt"][k % 2].into()),
        };
    }
    for t in spread(1000.0, width, 40) {
        let r = add(&mut rows, "fresh", "chat", t, 0);
        r.sample.dns_ms = Some(1.0);
        r.sample.connect_ms = Some(2.0);
        r.sample.tls_ms = Some(3.0);
    }
    for level in [1u32, 3, 5] {
        for t in spread(1000.0, width, 40) {
            add(&mut rows, "concurrency", "chat", t, 0).concurrency = Some(level);
        }
    }
    let warm: Vec<f64> = rows
        .iter()
        .filter(|r| r.phase == PhaseKind::Warm)
        .filter_map(|r| r.sample.ttft_ms)
        .collect();
    let median = firsttoken_analyze::percentile(&warm, 50.0).unwrap();
    for _ in 0..3 {
        add(&mut rows, "cold", "chat", median, 0);
    }
    let frame = Frame::from_rows(&rows, &sessions).unwrap();
    let analysis = analyze(&frame, &sessions, &[GroupKey::Path], &Settings::new(11));
    (sessions, rows, analysis)
}

/// `text` with every run of whitespace made one space (undoes wrapping).
pub fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` as the HTML template prints it (minijinja's escaping).
pub fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}

/// The report schema's validator.
pub fn report_validator() -> jsonschema::Validator {
    let schema: serde_json::Value =
        serde_json::from_str(firsttoken_report::json::REPORT_SCHEMA).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// A JSON report, parsed, after checking it against the report schema.
pub fn valid_report(out: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    let errors: Vec<String> = report_validator()
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    v
}

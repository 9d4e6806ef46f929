//! A synthetic two-session data set for the HTML report's tests (the unit
//! tests here and `tests/html_chromium.rs`, which includes this file):
//! every phase of the protocol, every stamp of a request, a failed and a
//! warm-up request, a label with markup in it, and a cell too small for
//! some percentiles.

use std::collections::BTreeMap;

use firsttoken_analyze::{Analysis, Frame, GroupKey, analyze};
use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::vocab::{Destination, PhaseKind};
use firsttoken_record::{Connection, ErrorKind, Sample, SampleError};

/// A network label that must come out escaped.
pub const EVIL: &str = "office <script>alert(1)</script>";

fn meta(id: &str, network: &str, code_version: &str, status: SessionStatus) -> SessionMeta {
    SessionMeta {
        id: id.to_string(),
        started_at: "2026-11-30T02:30:00Z".parse().expect("a valid time"),
        ended_at: Some("2026-11-30T02:40:00Z".parse().expect("a valid time")),
        status,
        spec: serde_json::Value::Null,
        seed: 7,
        tool_version: "0.1.0".into(),
        host: "bench-host".into(),
        pid: None,
        labels: Labels {
            network: network.to_string(),
            code_version: code_version.to_string(),
            vantage: "bench-host".into(),
            tags: BTreeMap::new(),
        },
        provenance: Provenance::Synthetic,
        cleanup: None,
        client_lag_p99_ms: None,
    }
}

/// `n` values spread evenly (golden-ratio sequence) over `center` ± `spread`.
fn spread(center: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| center + spread * (2.0 * (i as f64 * 0.618_033_988_7).fract() - 1.0))
        .collect()
}

struct Rows {
    session: &'static str,
    day: &'static str,
    seq: u64,
    out: Vec<SampleRow>,
}

impl Rows {
    /// A successful request of `phase` with every stamp up to `ttft`.
    fn push(&mut self, phase: &str, path: &str, ttft: Option<f64>, fresh: bool) -> &mut SampleRow {
        let mut s = Sample::empty(
            self.seq,
            0,
            if fresh {
                Connection::Fresh
            } else {
                Connection::Reused
            },
        );
        let base = if fresh {
            s.dns_ms = Some(20.0);
            s.connect_ms = Some(60.0);
            s.tls_ms = Some(150.0);
            150.0
        } else {
            0.0
        };
        s.sent_ms = Some(base + 1.5);
        match ttft {
            Some(t) => {
                s.ttfb_ms = Some(base + 0.35 * (t - base));
                s.headers_ms = s.ttfb_ms.map(|v| v + 0.5);
                s.ttfe_ms = s.ttfb_ms.map(|v| v + 3.0);
                s.ttft_ms = Some(t);
                s.last_token_ms = Some(t + 1400.0);
                s.e2e_ms = Some(t + 1420.0);
                s.content_chunks = 80;
                s.output_tokens = Some(120);
                s.tokens_per_s = Some(119.0 / 1.4);
            }
            None => {
                // A ping: the round trip is its first byte.
                s.ttfb_ms = Some(base + 40.0);
                s.e2e_ms = Some(base + 41.0);
            }
        }
        self.seq += 1;
        let phase: PhaseKind = phase.parse().expect("a stored phase name");
        self.out.push(SampleRow {
            session_id: self.session.to_string(),
            phase,
            dest: Destination::from_columns(phase, Some(path.to_string()), None)
                .expect("a path that fits the phase"),
            concurrency: None,
            intended_start_ms: None,
            actual_start_ms: self.seq as f64 * 100.0,
            started_at: format!("{}T02:31:{:02}Z", self.day, self.seq % 60)
                .parse()
                .expect("a valid time"),
            provenance: Provenance::Synthetic,
            prompt: None,
            sample: s,
        });
        self.out.last_mut().expect("just pushed")
    }
}

fn session_rows(session: &'static str, day: &'static str, slower: f64) -> Vec<SampleRow> {
    let mut r = Rows {
        session,
        day,
        seq: 0,
        out: Vec::new(),
    };
    for t in spread(40.0, 4.0, 10) {
        r.push("ping", "ping", None, false).sample.ttfb_ms = Some(t);
    }
    if session == "s1" {
        for t in [9000.0, 8000.0, 7000.0] {
            r.push("cold", "chat", Some(t), false);
        }
    }
    r.push("warm", "chat", Some(99_999.0), false).sample.warmup = true;
    for (i, t) in spread(2400.0 + slower, 300.0, 60).into_iter().enumerate() {
        let docs = i % 2 == 1;
        let row = r.push(
            "warm",
            if docs { "docs" } else { "chat" },
            Some(t + if docs { 600.0 } else { 0.0 }),
            false,
        );
        row.sample.route = Some(
            if docs && i % 6 != 1 {
                "chat"
            } else if docs {
                "docs"
            } else {
                "chat"
            }
            .into(),
        );
        row.sample.server_timing = Some(BTreeMap::from([
            ("auth".to_string(), 30.0 + (i % 5) as f64),
            ("retrieve".to_string(), if docs { 250.0 } else { 120.0 }),
            ("upstream".to_string(), t - 300.0),
        ]));
    }
    for _ in 0..2 {
        let row = r.push("warm", "chat", None, false);
        row.sample.ttfb_ms = None;
        row.sample.error = Some(SampleError {
            kind: ErrorKind::Timeout,
            message: "timed out after 30 s".into(),
        });
    }
    for t in spread(2650.0 + slower, 300.0, 20) {
        r.push("fresh", "chat", Some(t), true);
    }
    let strategies = ["latency", "throughput", "default"];
    for (i, t) in spread(500.0, 80.0, 45).into_iter().enumerate() {
        let strategy = strategies[i % 3];
        let (provider, offset, tps) = match (strategy, i % 5) {
            ("latency", _) => ("alpha", -60.0, 55.0),
            ("throughput", 0) => ("gamma", 40.0, 70.0),
            ("throughput", _) => ("beta", 120.0, 95.0),
            (_, 0 | 1) => ("beta", 120.0, 95.0),
            _ => ("alpha", -60.0, 55.0),
        };
        let row = r.push("direct", "direct", Some(t + offset), false);
        row.dest = Destination::Direct {
            strategy: Some(strategy.into()),
        };
        row.sample.provider = Some(provider.into());
        row.sample.tokens_per_s = Some(tps + (i % 7) as f64);
    }
    if session == "s1" {
        for (i, t) in spread(2400.0, 200.0, 60).into_iter().enumerate() {
            let k = [1u32, 3, 5][i / 20];
            let row = r.push(
                "concurrency",
                "chat",
                Some(t * (1.0 + 0.8 * (i % k as usize) as f64)),
                false,
            );
            row.concurrency = Some(k);
        }
    }
    r.out
}

/// The analysis (grouped by phase and path), its sessions and its rows.
pub fn fixture() -> (Analysis, Vec<SessionMeta>, Vec<SampleRow>) {
    let sessions = vec![
        meta("s1", EVIL, "v1.2", SessionStatus::Complete),
        meta(
            "s2",
            "home",
            "v1.3",
            SessionStatus::Partial {
                reason: "stopped by Ctrl-C".into(),
            },
        ),
    ];
    let mut rows = session_rows("s1", "2026-11-30", 0.0);
    rows.extend(session_rows("s2", "2026-12-01", 150.0));
    let frame = Frame::from_rows(&rows, &sessions).expect("the fixture's rows are valid");
    let analysis = analyze(
        &frame,
        &sessions,
        &[GroupKey::Phase, GroupKey::Path],
        &firsttoken_analyze::settings_for(&sessions),
    );
    (analysis, sessions, rows)
}

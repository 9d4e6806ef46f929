//! A traced session, simulated: one worker serves every request in turn
//! (auth 2 ms, then 4 × 50 ms sequential database calls on `chat` or one
//! 80 ms call on `docs`, then the model call, streamed); warm requests on
//! both paths, direct requests to the provider, and bursts at c = 1, 3, 5
//! on `chat`, where requests queue for the worker. The server's clock runs
//! 2 s ahead of the client's. Deterministic: no randomness.
#![allow(dead_code)]

use std::collections::BTreeMap;

use firsttoken_analyze::{Analysis, Frame, analyze, attach_traces};
use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::span::{SpanEvent, SpanKind, SpanRow};
use firsttoken_record::vocab::{Destination, PhaseKind, UtcTime};
use firsttoken_record::{Connection, Sample};
use serde_json::json;

/// The client's clock at the executor's origin, Unix ms.
const ORIGIN: f64 = 1_795_919_400_000.37;
/// Server clock − client clock, ms.
pub const THETA_MS: f64 = 2000.0;

struct Sim {
    rows: Vec<SampleRow>,
    spans: Vec<SpanRow>,
    worker_free: f64,
    seq: u64,
}

fn ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

fn jitter(seq: u64) -> f64 {
    2.0 * ((seq as f64 * 0.618_033_988_7).fract() - 0.5)
}

impl Sim {
    fn span(
        &mut self,
        trace: &str,
        id: u64,
        parent: u64,
        name: &str,
        kind: SpanKind,
        t: (f64, f64),
    ) -> &mut SpanRow {
        let mut s = SpanRow::new("traced", trace, &format!("{id:016x}"), name);
        s.parent_span_id = Some(format!("{parent:016x}"));
        s.kind = kind;
        s.service = Some("chat-app".into());
        s.start_unix_nano = ns(ORIGIN + t.0 + THETA_MS);
        s.end_unix_nano = ns(ORIGIN + t.1 + THETA_MS);
        self.spans.push(s);
        self.spans.last_mut().expect("just pushed")
    }

    fn row(&mut self, t: f64, phase: PhaseKind, dest: Destination, c: Option<u32>, s: Sample) {
        self.rows.push(SampleRow {
            session_id: "traced".into(),
            phase,
            dest,
            concurrency: c,
            intended_start_ms: None,
            actual_start_ms: t,
            started_at: UtcTime::from_unix_ms((ORIGIN + t).floor() as i64),
            provenance: Provenance::Synthetic,
            prompt: None,
            sample: s,
        });
    }

    /// One app request at `t`; returns when the client saw its end.
    fn app(&mut self, t: f64, phase: PhaseKind, path: &str, c: Option<u32>) -> f64 {
        let seq = self.seq;
        self.seq += 1;
        let j = jitter(seq);
        let trace = format!("{:032x}", 0xabc000 + seq);
        let arrive = t + 1.3;
        let start = arrive.max(self.worker_free) + 0.2;
        let base = (seq + 1) * 100;
        let (root, handler) = (base + 1, base + 2);
        let r = self.span(
            &trace,
            root,
            0xf00d,
            &format!("POST /{path}"),
            SpanKind::Server,
            (arrive, 0.0),
        );
        r.attributes
            .insert("http.request.method".into(), json!("POST"));
        let root_at = self.spans.len() - 1;
        self.span(
            &trace,
            handler,
            root,
            "handler",
            SpanKind::Internal,
            (start, 0.0),
        );
        let handler_at = self.spans.len() - 1;
        self.span(
            &trace,
            base + 3,
            handler,
            "verify auth",
            SpanKind::Internal,
            (start, start + 2.0),
        );
        let mut at = start + 2.0;
        let calls: Vec<f64> = if path == "chat" {
            vec![50.0 + j; 4]
        } else {
            vec![80.0 + j]
        };
        for (i, d) in calls.iter().enumerate() {
            let s = self.span(
                &trace,
                base + 4 + i as u64,
                handler,
                "SELECT",
                SpanKind::Client,
                (at, at + d),
            );
            s.attributes.insert("db.system".into(), json!("postgresql"));
            at += d;
        }
        let first = at + 200.0 + 5.0 * j;
        let end = first + 300.0;
        let s = self.span(
            &trace,
            base + 9,
            handler,
            "chat gpt-4o",
            SpanKind::Client,
            (at, end),
        );
        s.attributes.insert("gen_ai.system".into(), json!("openai"));
        s.attributes
            .insert("server.address".into(), json!("api.openai.com"));
        s.events.push(SpanEvent {
            name: "gen_ai.first_token".into(),
            time_unix_nano: ns(ORIGIN + first + THETA_MS),
            attributes: BTreeMap::new(),
        });
        self.spans[handler_at].end_unix_nano = ns(ORIGIN + end + THETA_MS);
        self.spans[root_at].end_unix_nano = ns(ORIGIN + end + 0.5 + THETA_MS);
        self.worker_free = end;
        let mut s = Sample::empty(seq, 0, Connection::Reused);
        s.status = Some(200);
        s.sent_ms = Some(0.3);
        s.ttfb_ms = Some(first + 1.0 - t);
        s.ttft_ms = Some(first + 1.2 - t);
        s.last_token_ms = Some(end + 1.0 - t);
        s.e2e_ms = Some(end + 1.5 - t);
        s.output_tokens = Some(60);
        s.tokens_per_s = Some(59.0 / 0.3);
        s.trace_id = Some(trace);
        self.row(
            t,
            phase,
            Destination::App {
                path: Some(path.into()),
            },
            c,
            s,
        );
        end + 1.5
    }

    /// One direct request to the provider (no spans: not the app's).
    fn direct(&mut self, t: f64) -> f64 {
        let seq = self.seq;
        self.seq += 1;
        let first = t + 1.0 + 200.0 + 5.0 * jitter(seq);
        let mut s = Sample::empty(seq, 0, Connection::Reused);
        s.status = Some(200);
        s.sent_ms = Some(0.3);
        s.ttfb_ms = Some(first - t);
        s.ttft_ms = Some(first + 0.2 - t);
        s.e2e_ms = Some(first + 300.0 - t);
        self.row(
            t,
            PhaseKind::Direct,
            Destination::Direct { strategy: None },
            None,
            s,
        );
        first + 300.0
    }
}

pub fn meta() -> SessionMeta {
    SessionMeta {
        id: "traced".into(),
        started_at: "2026-11-29T02:29:59.000Z".parse().unwrap(),
        ended_at: Some("2026-11-29T02:35:00.000Z".parse().unwrap()),
        status: SessionStatus::Complete,
        spec: json!({}),
        seed: 11,
        tool_version: "0.1.0".into(),
        host: "test".into(),
        pid: None,
        labels: Labels {
            network: "loopback".into(),
            code_version: "v1".into(),
            vantage: "test".into(),
            tags: Default::default(),
        },
        provenance: Provenance::Synthetic,
        cleanup: None,
        client_lag_p99_ms: None,
    }
}

/// The rows and spans of the traced session.
pub fn rows_and_spans() -> (Vec<SampleRow>, Vec<SpanRow>) {
    let mut sim = Sim {
        rows: Vec::new(),
        spans: Vec::new(),
        worker_free: 0.0,
        seq: 0,
    };
    let mut t = 100.0;
    for i in 0..90 {
        t = match i % 3 {
            0 => sim.app(t, PhaseKind::Warm, "chat", None),
            1 => sim.app(t, PhaseKind::Warm, "docs", None),
            _ => sim.direct(t),
        } + 10.0;
    }
    for c in [1u32, 3, 5] {
        for _ in 0..30 / c {
            let mut end: f64 = t;
            for _ in 0..c {
                end = end.max(sim.app(t, PhaseKind::Concurrency, "chat", Some(c)));
            }
            t = end + 10.0;
        }
    }
    // Two exports lost: their requests have no spans.
    let lost: Vec<String> = [3usize, 40]
        .iter()
        .filter_map(|&i| sim.rows[i].sample.trace_id.clone())
        .collect();
    sim.spans.retain(|s| !lost.contains(&s.trace_id));
    (sim.rows, sim.spans)
}

/// The analysis of the traced session, spans attached.
pub fn analysis() -> (Vec<SessionMeta>, Vec<SampleRow>, Analysis) {
    let sessions = vec![meta()];
    let (rows, spans) = rows_and_spans();
    let frame = Frame::from_rows(&rows, &sessions).unwrap();
    let mut a = analyze(
        &frame,
        &sessions,
        &[],
        &firsttoken_analyze::settings_for(&sessions),
    );
    let ids = vec![sessions[0].id.clone()];
    let input = firsttoken_analyze::SpanInput {
        sessions: &ids,
        rows: &rows,
        spans: &spans,
        groups: &BTreeMap::new(),
    };
    attach_traces(&mut a, &frame, &sessions, &input);
    (sessions, rows, a)
}

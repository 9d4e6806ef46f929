//! The join on a simulated one-worker app: each request waits for the one
//! worker, then does auth, N sequential 50 ms database calls and a model
//! call; the server's clock is shifted by θ.

use std::collections::BTreeMap;

use firsttoken_record::session::{Provenance, SampleRow};
use firsttoken_record::span::{SpanEvent, SpanKind, SpanRow};
use firsttoken_record::vocab::{Destination, PhaseKind, UtcTime};
use firsttoken_record::{Connection, Sample};
use serde_json::json;

use super::*;
use crate::testutil::meta;
use crate::{Direction, Frame, analyze};

/// The join of `rows` (every session of theirs in it) and `spans`, as
/// `report` makes it: the frame from the same rows.
fn join(
    rows: &[SampleRow],
    sessions: &[firsttoken_record::SessionMeta],
    spans: &[SpanRow],
    groups: &BTreeMap<String, String>,
) -> Traces {
    let frame = Frame::from_rows(rows, sessions).unwrap();
    let ids: Vec<String> = frame.session_ids().map(str::to_string).collect();
    let input = SpanInput {
        sessions: &ids,
        rows,
        spans,
        groups,
    };
    explain(&frame, sessions, &input, &Settings::new(5))
}

/// Session origin, Unix ms (with a sub-ms part, as a real clock has).
const ORIGIN: f64 = 1_795_919_400_000.37;

struct Sim {
    rows: Vec<SampleRow>,
    spans: Vec<SpanRow>,
    theta_ms: f64,
    worker_free: f64,
    seq: u64,
    traced: bool,
    /// Many workers, and a database that slows down with concurrency
    /// (each call takes 50 ms × c): a shared resource, not a queue.
    shared_db: bool,
}

fn ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

impl Sim {
    fn new(theta_ms: f64) -> Sim {
        Sim {
            rows: Vec::new(),
            spans: Vec::new(),
            theta_ms,
            worker_free: 0.0,
            seq: 0,
            traced: true,
            shared_db: false,
        }
    }

    #[allow(clippy::too_many_arguments)] // a span is its fields
    fn span(
        &mut self,
        trace: &str,
        id: u64,
        parent: u64,
        name: &str,
        kind: SpanKind,
        a: f64,
        b: f64,
    ) -> &mut SpanRow {
        let mut s = SpanRow::new("s1", trace, &format!("{id:016x}"), name);
        s.parent_span_id = Some(format!("{parent:016x}"));
        s.kind = kind;
        s.start_unix_nano = ns(ORIGIN + a + self.theta_ms);
        s.end_unix_nano = ns(ORIGIN + b + self.theta_ms);
        self.spans.push(s);
        self.spans.last_mut().expect("just pushed")
    }

    /// One request at `t` ms after the origin, on `path` with `db` calls.
    /// Returns when the client saw the stream end.
    fn request(&mut self, t: f64, phase: PhaseKind, path: &str, db: usize, c: Option<u32>) -> f64 {
        let seq = self.seq;
        self.seq += 1;
        let jitter = 2.0 * ((seq as f64 * 0.618_033_988_7).fract() - 0.5);
        let trace = format!("{:032x}", seq + 1);
        let arrive = t + 0.3 + 1.0; // written after 0.3 ms, one-way 1 ms
        let start = if self.shared_db {
            arrive + 0.2
        } else {
            arrive.max(self.worker_free) + 0.2
        };
        let slowdown = if self.shared_db {
            f64::from(c.unwrap_or(1))
        } else {
            1.0
        };
        let mut at = start;
        let mut ids = (seq + 1) * 100;
        let mut push_ids = || {
            ids += 1;
            ids
        };
        let (root, handler) = (push_ids(), push_ids());
        let auth = push_ids();
        let traced = self.traced;
        let shift = self.theta_ms;
        let mut inner = Vec::new();
        inner.push((
            auth,
            "verify auth".to_string(),
            SpanKind::Internal,
            at,
            at + 2.0,
            vec![],
        ));
        at += 2.0;
        for i in 0..db {
            let d = (50.0 + jitter + i as f64 * 0.1) * slowdown;
            inner.push((
                push_ids(),
                "SELECT messages".into(),
                SpanKind::Client,
                at,
                at + d,
                vec![("db.system", json!("postgresql"))],
            ));
            at += d;
        }
        let first = at + 200.0 + 5.0 * jitter;
        let end_call = first + 300.0;
        let call = push_ids();
        inner.push((
            call,
            "chat gpt-4o".into(),
            SpanKind::Client,
            at,
            end_call,
            vec![("gen_ai.system", json!("openai"))],
        ));
        let root_end = end_call + 0.5;
        self.worker_free = end_call;
        if traced {
            let r = self.span(
                &trace,
                root,
                0xfeed,
                &format!("POST /{path}"),
                SpanKind::Server,
                arrive,
                root_end,
            );
            r.attributes
                .insert("http.request.method".into(), json!("POST"));
            self.span(
                &trace,
                handler,
                root,
                "handler",
                SpanKind::Internal,
                start,
                end_call,
            );
            for (id, name, kind, a, b, attrs) in inner {
                let s = self.span(&trace, id, handler, &name, kind, a, b);
                for (k, v) in attrs {
                    s.attributes.insert(k.into(), v);
                }
                if id == call {
                    s.events.push(SpanEvent {
                        name: "gen_ai.first_token".into(),
                        time_unix_nano: ns(ORIGIN + first + shift),
                        attributes: BTreeMap::new(),
                    });
                }
            }
        }
        let mut s = Sample::empty(seq, 0, Connection::Reused);
        s.status = Some(200);
        s.sent_ms = Some(0.3);
        s.ttfb_ms = Some(first + 1.0 - t);
        s.ttft_ms = Some(first + 1.2 - t);
        s.last_token_ms = Some(end_call + 1.0 - t);
        s.e2e_ms = Some(root_end + 1.0 - t);
        s.trace_id = Some(trace);
        self.rows.push(SampleRow {
            session_id: "s1".into(),
            phase,
            dest: Destination::App {
                path: Some(path.into()),
            },
            concurrency: c,
            intended_start_ms: None,
            actual_start_ms: t,
            started_at: UtcTime::from_unix_ms((ORIGIN + t).floor() as i64),
            provenance: Provenance::Synthetic,
            prompt: None,
            sample: s,
        });
        root_end + 1.0
    }

    /// 30 sequential warm requests per path, then bursts at c = 1, 3, 5
    /// on chat (30 requests each).
    fn session(theta_ms: f64) -> Sim {
        Sim::session_with(Sim::new(theta_ms))
    }

    fn session_with(mut sim: Sim) -> Sim {
        let mut t = 100.0;
        for i in 0..60 {
            let (path, db) = if i % 2 == 0 { ("chat", 4) } else { ("docs", 1) };
            t = sim.request(t, PhaseKind::Warm, path, db, None) + 10.0;
        }
        for c in [1u32, 3, 5] {
            for _ in 0..30 / c {
                let mut end: f64 = t;
                for _ in 0..c {
                    end = end.max(sim.request(t, PhaseKind::Concurrency, "chat", 4, Some(c)));
                }
                t = end + 10.0;
            }
        }
        sim
    }

    fn explain(&self) -> Traces {
        join(
            &self.rows,
            &[meta("s1", Provenance::Synthetic)],
            &self.spans,
            &BTreeMap::new(),
        )
    }
}

#[test]
fn a_shifted_server_clock_is_estimated_and_joins_correctly() {
    for theta in [2000.0, -37.25, 0.0] {
        let sim = Sim::session(theta);
        let t = sim.explain();
        let e = t.sessions[0].offset.expect("an offset");
        assert!(e.consistent, "{e:?}");
        assert!(
            e.lower_ms <= theta && theta <= e.upper_ms,
            "θ = {theta}: {e:?}"
        );
        // Within 2 ms plus half the end bounds' 5 ms slack.
        assert!(e.uncertainty_ms < 4.5, "{e:?}");
        assert_eq!(t.sessions[0].traced, sim.rows.len());
        // The join lands each request's server receive 1 ms (one way)
        // after its write ended, whatever the shift.
        let chat = t
            .splits
            .iter()
            .find(|s| s.scope.path.as_deref() == Some("chat"))
            .unwrap();
        let gap = chat.receive_after_sent.point().unwrap();
        assert!(
            (gap - 1.0).abs() <= e.uncertainty_ms + 0.01,
            "{gap} vs {e:?}"
        );
    }
}

#[test]
fn database_time_is_the_sum_of_sequential_calls_before_the_first_token() {
    let t = Sim::session(2000.0).explain();
    let chat = t
        .splits
        .iter()
        .find(|s| s.scope.path.as_deref() == Some("chat"))
        .unwrap();
    assert_eq!(chat.phases, vec![PhaseKind::Warm]);
    assert_eq!(chat.traced, 30);
    // The provider (≈ 200 ms before the first token) and the database
    // (4 × 50 ms) lead; their order rests on a millisecond.
    let top: Vec<(&str, Category)> = chat.parts[..2]
        .iter()
        .map(|p| (p.group.as_str(), p.category))
        .collect();
    assert!(
        top.contains(&("model provider", Category::ModelProvider))
            && top.contains(&("database", Category::Database)),
        "{top:?}"
    );
    let db = chat.parts.iter().find(|p| p.group == "database").unwrap();
    let m = db.median.point().unwrap();
    assert!((199.0..=202.0).contains(&m), "4 × 50 ms: {m}");
    assert_eq!(db.median_calls, 4.0);
    assert_eq!(db.sequential, 30);
    let auth = chat.parts.iter().find(|p| p.group == "auth").unwrap();
    assert!((auth.median.point().unwrap() - 2.0).abs() < 1e-3);
    // Sequential warm requests never wait for the worker.
    assert!(chat.queue_wait.unwrap().point().unwrap() < 0.5);
    let pft = chat.provider_first_token.unwrap().point().unwrap();
    assert!((195.0..=205.0).contains(&pft), "{pft}");
    // Provider time before the first token: up to the client's first token.
    let docs = t
        .splits
        .iter()
        .find(|s| s.scope.path.as_deref() == Some("docs"))
        .unwrap();
    let d = docs.parts.iter().find(|p| p.group == "database").unwrap();
    assert_eq!(d.median_calls, 1.0);
    assert_eq!(d.sequential, 0);
    // chat − docs database time ≈ 150 ms, an increase.
    let c = &t.contrasts[0];
    assert_eq!(
        (c.a.as_deref(), c.b.as_deref()),
        (Some("chat"), Some("docs"))
    );
    let g = c.groups.iter().find(|g| g.group == "database").unwrap();
    assert_eq!(g.difference.direction, Direction::Increase);
    assert!((g.difference.estimate.point().unwrap() - 150.0).abs() < 3.0);
    assert_eq!(
        c.groups[0].group, "database",
        "the largest difference first"
    );
}

#[test]
fn a_one_worker_wall_shows_as_queue_wait_not_handler_time() {
    let t = Sim::session(2000.0).explain();
    let w = &t.walls[0];
    assert_eq!(w.baseline, "c=1");
    assert_eq!(
        w.levels.iter().map(|l| l.concurrency).collect::<Vec<_>>(),
        vec![3, 5]
    );
    for l in &w.levels {
        assert_eq!(
            l.wait_change.direction,
            Direction::Increase,
            "c={}",
            l.concurrency
        );
        assert_ne!(l.handler_ratio.direction, Direction::Increase);
    }
    let (w3, w5) = (
        w.levels[0].wait.point().unwrap(),
        w.levels[1].wait.point().unwrap(),
    );
    assert!(w5 > w3, "wait grows with c: {w3} → {w5}");
    assert_eq!(w.reason, WallReason::WaitedForWorker);
}

#[test]
fn untraced_requests_are_counted_per_phase_and_path() {
    let mut sim = Sim::new(0.0);
    let mut t = 0.0;
    for i in 0..20 {
        sim.traced = i % 4 != 0; // every fourth export dropped
        t = sim.request(t, PhaseKind::Warm, "chat", 2, None) + 5.0;
    }
    sim.traced = true;
    let before = sim.rows.len();
    t = sim.request(t, PhaseKind::Warm, "chat", 2, None);
    sim.rows[before].sample.trace_id = None; // a request sent without traceparent
    sim.request(t, PhaseKind::Warm, "docs", 1, None);
    let tr = sim.explain();
    let chat = tr
        .coverage
        .iter()
        .find(|c| c.scope.path.as_deref() == Some("chat"))
        .unwrap();
    assert_eq!(
        (chat.requests, chat.with_trace_id, chat.traced),
        (21, 20, 15)
    );
    assert_eq!(chat.untraced(), 6);
    let split = tr
        .splits
        .iter()
        .find(|s| s.scope.path.as_deref() == Some("chat"))
        .unwrap();
    assert_eq!((split.requests, split.traced), (21, 15));
    // The rest of the analysis still sees every row.
    let frame = Frame::from_rows(&sim.rows, &[]).unwrap();
    let mut a = analyze(&frame, &[], &[], &Settings::new(1));
    let ids = vec!["s1".to_string()];
    let input = SpanInput {
        sessions: &ids,
        rows: &sim.rows,
        spans: &sim.spans,
        groups: &BTreeMap::new(),
    };
    attach_traces(&mut a, &frame, &[], &input);
    assert_eq!(a.rows, 22);
    assert!(a.traces.is_some());
    assert!(serde_json::to_value(&a).unwrap()["traces"]["coverage"].is_array());
}

#[test]
fn waterfalls_put_spans_inside_the_clients_request() {
    let t = Sim::session(2000.0).explain();
    let chat: Vec<&Waterfall> = t
        .waterfalls
        .iter()
        .filter(|w| w.scope.path.as_deref() == Some("chat"))
        .collect();
    assert_eq!(chat.len(), 2);
    let slow = chat
        .iter()
        .find(|w| w.which == WaterfallKind::Slow)
        .unwrap();
    let typical = chat
        .iter()
        .find(|w| w.which == WaterfallKind::Typical)
        .unwrap();
    assert!(slow.client.e2e_ms > typical.client.e2e_ms);
    for w in chat {
        let root = &w.spans[0];
        assert_eq!(root.depth, 0);
        let tol = w.offset_uncertainty_ms + 0.01;
        assert!(root.start_ms >= w.client.sent_ms.unwrap() - tol, "{root:?}");
        assert!(root.end_ms <= w.client.e2e_ms.unwrap() + tol);
        assert_eq!(w.spans[1].name, "handler");
        assert_eq!(w.spans[2].group, "auth");
        assert_eq!(w.spans.len(), 8);
    }
}

#[test]
fn a_group_map_merges_groups() {
    let sim = Sim::session(0.0);
    let mut m = BTreeMap::new();
    m.insert("auth".to_string(), "database".to_string());
    let t = join(&sim.rows, &[], &sim.spans, &m);
    let chat = t
        .splits
        .iter()
        .find(|s| s.scope.path.as_deref() == Some("chat"))
        .unwrap();
    assert!(chat.parts.iter().all(|p| p.group != "auth"));
    let db = chat.parts.iter().find(|p| p.group == "database").unwrap();
    assert!((db.median.point().unwrap() - 202.0).abs() < 2.0);
    assert_eq!(db.median_calls, 5.0);
}

#[test]
fn a_database_that_slows_under_load_shows_as_handler_time() {
    let mut sim = Sim::new(-120.0);
    sim.shared_db = true;
    let t = Sim::session_with(sim).explain();
    let w = &t.walls[0];
    let top = w.levels.last().unwrap();
    assert_eq!(top.handler_ratio.direction, Direction::Increase);
    assert_ne!(top.wait_change.direction, Direction::Increase);
    assert_eq!(w.reason, WallReason::SharedResource);
}

#[test]
fn spans_without_a_root_and_a_drifting_clock_are_reported() {
    let mut sim = Sim::new(0.0);
    let mut t = 0.0;
    for _ in 0..10 {
        t = sim.request(t, PhaseKind::Warm, "chat", 1, None) + 5.0;
    }
    // The server's clock steps 50 ms ahead half-way through.
    let late: Vec<String> = sim.rows[5..]
        .iter()
        .filter_map(|r| r.sample.trace_id.clone())
        .collect();
    for s in &mut sim.spans {
        if late.contains(&s.trace_id) {
            s.start_unix_nano += 50_000_000;
            s.end_unix_nano += 50_000_000;
        }
    }
    // The first request's server span was lost; its children arrived.
    let first = sim.rows[0].sample.trace_id.clone().unwrap();
    sim.spans
        .retain(|s| !(s.trace_id == first && s.kind == SpanKind::Server));
    let tr = sim.explain();
    let c = &tr.coverage[0];
    assert_eq!((c.requests, c.traced, c.without_root), (10, 9, 1));
    let e = tr.sessions[0].offset.unwrap();
    assert!(!e.consistent, "{e:?}");
    // The interval touches both halves' bounds: 0 and +50 ms (the end
    // bounds loosened by their 5 ms slack).
    assert!(e.lower_ms <= 1.5 && e.upper_ms >= 43.5, "{e:?}");
}

//! A demo-like session of any size written as a JSONL export, made the
//! same way every time (a seeded generator): pings, cold probes, warm and
//! fresh requests on two paths, direct requests over three strategies,
//! bursts of 3 and 5, Server-Timing on app requests, TLS on fresh
//! connections, a trace id on every request and server spans for the
//! first [`TRACED`] app requests; with `conversations`, also turns of a
//! conversation and flow steps on some warm requests. The `read_store`
//! bench times commands over it; `tests/import_frames.rs` imports it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;

use firsttoken_analyze::bootstrap::SplitMix64;
use firsttoken_record::export::{write_jsonl, write_session_jsonl, write_spans_jsonl};
use firsttoken_record::session::{
    Labels, PromptRef, Provenance, SampleRow, SessionMeta, SessionStatus,
};
use firsttoken_record::span::{SpanKind, SpanRow};
use firsttoken_record::vocab::{Destination, PhaseKind, UtcTime};
use firsttoken_record::{
    Clock, Connection, ErrorKind, FlowStepTime, HandshakeKind, Sample, SampleError, TlsInfo,
};

/// App requests with server spans (the rest carry trace ids without spans,
/// as when the receiver's span cap is reached).
pub const TRACED: u64 = 200;

fn lognormal(rng: &mut SplitMix64, median: f64, sigma: f64) -> f64 {
    let (u1, u2) = (rng.next_open01(), rng.next_open01());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    median * (sigma * z).exp()
}

pub fn meta(n: usize) -> SessionMeta {
    let spec = serde_json::json!({"config": {
        "direct": {"url": "http://127.0.0.1:9/v1/chat/completions", "model": "m"},
        "app": {"base_url": "http://127.0.0.1:9", "paths": [{"name": "chat"}, {"name": "docs"}]},
    }});
    SessionMeta {
        id: format!("20261202T000000Z-b{n:x}"),
        started_at: "2026-12-02T00:00:00Z".parse().expect("a valid time"),
        ended_at: Some("2026-12-02T06:00:00Z".parse().expect("a valid time")),
        status: SessionStatus::Complete,
        spec,
        seed: 7,
        tool_version: "bench".into(),
        host: "bench".into(),
        pid: None,
        labels: Labels {
            network: "emulated:cable".into(),
            code_version: "v1".into(),
            vantage: "bench".into(),
            tags: BTreeMap::new(),
        },
        provenance: Provenance::Emulated,
        cleanup: None,
        client_lag_p99_ms: None,
    }
}

/// Sample `seq` of the session, and its spans when it is among the first
/// [`TRACED`] app requests.
fn row(
    rng: &mut SplitMix64,
    m: &SessionMeta,
    seq: u64,
    traced: &mut u64,
) -> (SampleRow, Vec<SpanRow>) {
    let u = rng.next_open01();
    let path = if seq.is_multiple_of(2) {
        "chat"
    } else {
        "docs"
    };
    let app = |p: &str| Destination::App {
        path: Some(p.to_string()),
    };
    let (phase, dest, concurrency) = match u {
        u if u < 0.06 => (PhaseKind::Ping, Destination::Ping, None),
        u if u < 0.08 => (PhaseKind::Cold, app(path), None),
        u if u < 0.43 => (PhaseKind::Warm, app(path), None),
        u if u < 0.55 => (PhaseKind::Fresh, app(path), None),
        u if u < 0.80 => {
            let s = ["latency", "throughput", "price"][(seq % 3) as usize];
            let dest = Destination::Direct {
                strategy: Some(s.to_string()),
            };
            (PhaseKind::Direct, dest, None)
        }
        _ => (
            PhaseKind::Concurrency,
            app("chat"),
            Some(if seq.is_multiple_of(2) { 3 } else { 5 }),
        ),
    };
    let fresh = matches!(phase, PhaseKind::Fresh | PhaseKind::Cold);
    let mut s = Sample::empty(
        seq,
        (seq % 5) as u32,
        if fresh {
            Connection::Fresh
        } else {
            Connection::Reused
        },
    );
    let rtt = lognormal(rng, 25.0, 0.1);
    let start = seq as f64 * 20.0;
    s.http_version = Some("HTTP/2".into());
    if phase == PhaseKind::Ping {
        s.ttfb_ms = Some(rtt);
        s.e2e_ms = Some(rtt + 0.3);
        s.status = Some(200);
    } else {
        let base = match phase {
            PhaseKind::Direct => 600.0,
            PhaseKind::Cold => 3000.0,
            PhaseKind::Concurrency => 900.0 * f64::from(concurrency.unwrap_or(1)),
            _ => 800.0,
        };
        let setup = if fresh {
            s.connect_ms = Some(rtt);
            s.tls_ms = Some(2.0 * rtt);
            s.tls = Some(TlsInfo {
                version: "TLSv1_3".into(),
                cipher: "TLS13_AES_256_GCM_SHA384".into(),
                kx_group: Some("X25519MLKEM768".into()),
                handshake: Some(HandshakeKind::Full),
            });
            2.0 * rtt
        } else {
            0.0
        };
        s.sent_ms = Some(setup + 0.2);
        let ttfb = setup + lognormal(rng, base, 0.3);
        let ttft = ttfb + lognormal(rng, 150.0, 0.2);
        s.ttfb_ms = Some(ttfb);
        s.headers_ms = Some(ttfb);
        s.ttfe_ms = Some(ttfb);
        s.status = Some(200);
        if rng.next_open01() < 0.01 {
            s.e2e_ms = Some(ttfb + 5.0);
            s.error = Some(SampleError {
                kind: ErrorKind::Truncated,
                message: "the stream ended before [DONE]".into(),
            });
        } else {
            s.ttft_ms = Some(ttft);
            s.last_token_ms = Some(ttft + 90.0);
            s.e2e_ms = Some(ttft + 130.0);
            s.content_chunks = 12;
            s.output_tokens = Some(12);
            s.input_tokens = Some(20);
            s.tokens_per_s = Some(11.0 / 0.09);
            s.itl_p50_ms = Some(8.0);
            s.itl_p99_ms = Some(9.5);
            s.clock = Some(Clock::Kernel);
            s.ttft_user_ms = Some(ttft + 0.05);
            s.client_lag_ms = Some(0.07);
            s.ttft_read_events = Some(1);
        }
        s.request_id = Some(format!("{:024x}", rng.next_u64()));
        s.trace_id = Some(format!(
            "{:016x}{:016x}",
            rng.next_u64() | 1,
            rng.next_u64()
        ));
        if phase == PhaseKind::Direct {
            s.provider = Some(["alpha", "beta", "gamma"][(seq % 3) as usize].into());
            s.cost_usd = Some(0.000068);
        } else {
            s.route = Some(path.into());
            let db = lognormal(rng, 160.0, 0.1);
            s.server_timing = Some(BTreeMap::from([
                ("auth".to_string(), 42.1),
                ("db".to_string(), db),
                ("store".to_string(), 40.4),
                ("stream".to_string(), 284.4),
                ("total".to_string(), ttft + 100.0),
                ("upstream_connect".to_string(), 1.7),
                ("upstream_ttft".to_string(), 155.2),
                ("queue".to_string(), 0.3),
            ]));
        }
    }
    let started_at = UtcTime::from_unix_ms(m.started_at.unix_ms() + start as i64);
    let r = SampleRow {
        session_id: m.id.clone(),
        phase,
        dest,
        concurrency,
        intended_start_ms: None,
        actual_start_ms: start,
        started_at,
        provenance: m.provenance,
        prompt: (phase != PhaseKind::Ping).then(|| PromptRef {
            index: (seq % 4) as u32,
            hash: format!("{:012x}", seq % 4 + 0xabc),
        }),
        sample: s,
    };
    let mut spans = Vec::new();
    if phase.is_app()
        && *traced < TRACED
        && let (Some(trace), Some(ttfb)) = (r.sample.trace_id.clone(), r.sample.ttfb_ms)
    {
        *traced += 1;
        let t0 = (m.started_at.unix_ms() as f64 + start) * 1e6;
        let ns = |ms: f64| (t0 + ms * 1e6) as u64;
        let root = format!("{:016x}", rng.next_u64() | 1);
        let mut server = SpanRow::new(&m.id, &trace, &root, "POST /chat");
        server.kind = SpanKind::Server;
        server.start_unix_nano = ns(1.0);
        server.end_unix_nano = ns(ttfb + 130.0);
        spans.push(server);
        for (k, (name, a, b)) in [
            ("auth", 1.5, 43.0),
            ("db.query", 43.5, 200.0),
            ("chat.completions", 201.0, ttfb),
        ]
        .into_iter()
        .enumerate()
        {
            let mut sp = SpanRow::new(&m.id, &trace, &format!("{:016x}", rng.next_u64() | 1), name);
            sp.parent_span_id = Some(root.clone());
            sp.kind = if k == 0 {
                SpanKind::Internal
            } else {
                SpanKind::Client
            };
            sp.start_unix_nano = ns(a);
            sp.end_unix_nano = ns(b.max(a));
            spans.push(sp);
        }
    }
    (r, spans)
}

/// Writes a session of `n` samples as a JSONL export at `path` (with
/// turns and flow steps when `conversations`).
pub fn generate(n: usize, path: &Path, conversations: bool) {
    let m = meta(n);
    let mut w = BufWriter::new(std::fs::File::create(path).expect("create the export"));
    write_session_jsonl(&m, &[], &mut w).expect("write the session line");
    let mut rng = SplitMix64::new(n as u64);
    let (mut chunk, mut spans, mut traced) = (Vec::with_capacity(10_000), Vec::new(), 0);
    for seq in 0..n as u64 {
        let (mut r, s) = row(&mut rng, &m, seq, &mut traced);
        if conversations {
            converse(&mut r);
        }
        chunk.push(r);
        spans.extend(s);
        if chunk.len() == 10_000 {
            write_jsonl(&chunk, &mut w).expect("write samples");
            chunk.clear();
        }
    }
    write_jsonl(&chunk, &mut w).expect("write samples");
    write_spans_jsonl(&spans, &mut w).expect("write spans");
    w.flush().expect("flush the export");
}

/// Every 7th warm request a turn of a conversation, every 11th one a flow
/// whose steps came first.
fn converse(r: &mut SampleRow) {
    if r.phase != PhaseKind::Warm {
        return;
    }
    let seq = r.sample.seq;
    if seq.is_multiple_of(7) {
        r.sample.turn = Some((seq / 7 % 4) as u32 + 1);
        r.sample.history_messages = Some((seq / 7 % 4) as u32 * 2);
        r.sample.request_bytes = Some(300 + seq % 97);
    }
    if seq.is_multiple_of(11) {
        r.sample.flow_wait_ms = Some(40.0 + (seq % 13) as f64);
        r.sample.flow_steps = Some(vec![
            FlowStepTime {
                name: "create".into(),
                ms: 30.0,
                status: Some(200),
            },
            FlowStepTime {
                name: "send".into(),
                ms: 10.0 + (seq % 13) as f64,
                status: Some(200),
            },
        ]);
    }
}

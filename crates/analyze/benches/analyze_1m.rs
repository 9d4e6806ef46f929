//! A report over 1,000,000 stored samples: rows stream (as from a store) into
//! a `Frame`, then every diagnostic and the grouped percentiles with all
//! bootstrap CIs run. Prints wall time and peak RSS (VmHWM).
//!
//! `cargo bench -p firsttoken-analyze --bench analyze_1m`
//! Target: under 2 s and under 500 MB.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use firsttoken_analyze::bootstrap::SplitMix64;
use firsttoken_analyze::{FrameBuilder, GroupKey, analyze};
use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::vocab::{Destination, PhaseKind, UtcTime};
use firsttoken_record::{Connection, ErrorKind, Sample, SampleError};

const ROWS: usize = 1_000_000;
const SESSIONS: usize = 50;
const CHUNK: usize = 10_000;

fn vm_hwm_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn lognormal(rng: &mut SplitMix64, median: f64, sigma: f64) -> f64 {
    let (u1, u2) = (rng.next_open01(), rng.next_open01());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    median * (sigma * z).exp()
}

fn session(i: usize) -> SessionMeta {
    let day = 24 + i % 7;
    SessionMeta {
        id: format!("202611{day:02}T0{}0000Z-{i:04x}", i % 10),
        started_at: format!("2026-11-{day:02}T0{}:00:00Z", i % 10)
            .parse()
            .expect("a valid time"),
        ended_at: None,
        status: SessionStatus::Complete,
        spec: serde_json::Value::Null,
        seed: 1000 + i as u64,
        tool_version: "0.1.0".into(),
        host: "bench".into(),
        pid: None,
        labels: Labels {
            network: if i.is_multiple_of(2) {
                "office-fibre"
            } else {
                "home-dsl"
            }
            .into(),
            code_version: if i < SESSIONS / 2 { "v1" } else { "v2" }.into(),
            vantage: "bench".into(),
            tags: BTreeMap::new(),
        },
        provenance: Provenance::Synthetic,
        cleanup: None,
        client_lag_p99_ms: None,
    }
}

/// Row `j` of session `s`, in the proportions of the article's session.
fn row(rng: &mut SplitMix64, meta: &SessionMeta, j: usize) -> SampleRow {
    let u = rng.next_open01();
    let (phase, path, strategy, concurrency): (PhaseKind, &str, Option<&str>, Option<u32>) = match u
    {
        u if u < 0.03 => (PhaseKind::Ping, "ping", None, None),
        u if u < 0.031 => (PhaseKind::Cold, "chat", None, None),
        u if u < 0.40 => (
            PhaseKind::Warm,
            if j.is_multiple_of(2) { "chat" } else { "docs" },
            None,
            None,
        ),
        u if u < 0.52 => (
            PhaseKind::Fresh,
            if j.is_multiple_of(2) { "chat" } else { "docs" },
            None,
            None,
        ),
        u if u < 0.80 => (
            PhaseKind::Direct,
            "direct",
            Some(["latency", "throughput", "balanced"][j % 3]),
            None,
        ),
        u if u < 0.99 => (PhaseKind::Concurrency, "chat", None, Some([1, 3, 5][j % 3])),
        _ => (PhaseKind::Rate, "chat", None, None),
    };
    let mut s = Sample::empty(j as u64, 0, Connection::Reused);
    s.warmup = rng.next_open01() < 0.005;
    let base = match phase {
        PhaseKind::Ping => lognormal(rng, 40.0, 0.2),
        PhaseKind::Direct => lognormal(rng, 500.0, 0.3),
        _ if path == "docs" => lognormal(rng, 3000.0, 0.3),
        _ => lognormal(rng, 2400.0, 0.3),
    };
    let ttft = match (phase, concurrency) {
        (PhaseKind::Concurrency, Some(k)) => base * (1.0 + (j / 3 % k as usize) as f64),
        (PhaseKind::Fresh, _) => {
            s.connection = Connection::Fresh;
            s.dns_ms = Some(lognormal(rng, 20.0, 0.3));
            s.connect_ms = Some(s.dns_ms.unwrap_or(0.0) + lognormal(rng, 45.0, 0.2));
            s.tls_ms = Some(s.connect_ms.unwrap_or(0.0) + lognormal(rng, 90.0, 0.2));
            base + 180.0
        }
        (PhaseKind::Cold, _) => base * 4.0,
        _ => base,
    };
    if phase == PhaseKind::Ping {
        s.ttfb_ms = Some(ttft);
        s.e2e_ms = Some(ttft + 1.0);
    } else {
        s.ttft_ms = Some(ttft);
        s.ttfb_ms = Some(ttft * 0.9);
        let tps = lognormal(rng, 60.0, 0.3);
        s.tokens_per_s = Some(tps);
        s.e2e_ms = Some(ttft + 200.0 / tps * 1000.0);
        s.output_tokens = Some(201);
    }
    if phase == PhaseKind::Direct {
        s.provider = Some(["a", "b", "c"][(j / 3) % 3].into());
    }
    if phase.is_app() {
        let wrong = path == "docs" && rng.next_open01() < 0.1;
        s.route = Some(if wrong { "chat" } else { path }.into());
        if phase == PhaseKind::Warm {
            s.server_timing = Some(BTreeMap::from([
                ("db".to_string(), lognormal(rng, 600.0, 0.2)),
                ("retrieve".to_string(), lognormal(rng, 200.0, 0.2)),
                ("upstream_ttft".to_string(), lognormal(rng, 500.0, 0.3)),
            ]));
        }
    }
    if rng.next_open01() < 0.01 {
        s.error = Some(SampleError {
            kind: ErrorKind::Timeout,
            message: "timeout".into(),
        });
    }
    let ms = j as u64 * 50;
    SampleRow {
        session_id: meta.id.clone(),
        phase,
        dest: Destination::from_columns(phase, Some(path.into()), strategy.map(str::to_string))
            .expect("a destination that fits the phase"),
        concurrency,
        intended_start_ms: None,
        actual_start_ms: ms as f64,
        started_at: UtcTime::from_unix_ms(meta.started_at.day().start().unix_ms() + ms as i64),
        provenance: Provenance::Synthetic,
        prompt: None,
        sample: s,
    }
}

fn main() {
    let rss_start = vm_hwm_mb();
    let sessions: Vec<SessionMeta> = (0..SESSIONS).map(session).collect();
    let mut rng = SplitMix64::new(2026);
    let mut builder = match FrameBuilder::new(&sessions) {
        Ok(b) => b,
        Err(e) => panic!("sessions: {e}"),
    };
    builder.reserve(ROWS);
    let per_session = ROWS / SESSIONS;
    let mut build = Duration::ZERO;
    let mut chunk = Vec::with_capacity(CHUNK);
    for meta in &sessions {
        for j in 0..per_session {
            chunk.push(row(&mut rng, meta, j));
            if chunk.len() == CHUNK {
                // Only validation and interning count; generating and
                // dropping rows is the store's cost.
                let t = Instant::now();
                for r in &chunk {
                    if let Err(e) = builder.push(r) {
                        panic!("row: {e}");
                    }
                }
                build += t.elapsed();
                chunk.clear();
            }
        }
    }
    drop(chunk);
    let frame = builder.finish();
    let settings = firsttoken_analyze::settings_for(&sessions);
    let keys = [
        GroupKey::Phase,
        GroupKey::Path,
        GroupKey::Strategy,
        GroupKey::Concurrency,
        GroupKey::Day,
    ];
    // Each part alone first (for the breakdown), then everything at once
    // (analyze() = pooled + the eight diagnostics).
    let time = |name: &str, f: &dyn Fn() -> usize| {
        let t = Instant::now();
        let n = f();
        println!(
            "  {name:<12} {:>7.1} ms ({n} results)",
            t.elapsed().as_secs_f64() * 1e3
        );
    };
    use firsttoken_analyze::diagnose::*;
    // group_summaries is the plain grouped table (analyze() reports the pooled form).
    time("groups", &|| {
        firsttoken_analyze::group::group_summaries(
            &frame,
            &keys,
            firsttoken_analyze::Metric::Ttft,
            &settings,
        )
        .len()
    });
    time("pooled", &|| {
        firsttoken_analyze::session::pooled(
            &frame,
            &keys,
            firsttoken_analyze::Metric::Ttft,
            &settings,
        )
        .len()
    });
    time("overhead", &|| overhead(&frame, &settings).len());
    time("connection", &|| connection_cost(&frame, &settings).len());
    time("concurrency", &|| concurrency_wall(&frame, &settings).len());
    time("cold", &|| cold_start(&frame, &settings).len());
    time("providers", &|| providers(&frame, &settings).len());
    time("routes", &|| routes(&frame, &settings).len());
    time("drift", &|| drift(&frame, &settings).len());
    time("limits", &|| limits(&frame, &sessions).items.len());
    let t = Instant::now();
    let analysis = analyze(&frame, &sessions, &keys, &settings);
    let run = t.elapsed();
    let rss_peak = vm_hwm_mb();

    let cis = count_cis(&serde_json::to_value(&analysis).unwrap_or_default());
    println!("analyze_1m: {} rows in {} sessions", frame.len(), SESSIONS);
    println!(
        "  frame build (validate + intern, streamed):  {:>7.1} ms",
        build.as_secs_f64() * 1e3
    );
    println!(
        "  analysis (groups, pooled, all diagnostics): {:>7.1} ms",
        run.as_secs_f64() * 1e3
    );
    println!(
        "  total:                                      {:>7.1} ms",
        (build + run).as_secs_f64() * 1e3
    );
    println!("  estimates with a CI:                        {cis:>7}");
    println!(
        "  groups: {}, limits: {}",
        analysis.groups.len(),
        analysis.limits.items.len()
    );
    if let (Some(a), Some(b)) = (rss_start, rss_peak) {
        println!("  peak RSS (VmHWM): {b:.1} MB (at start {a:.1} MB)");
    }
    println!(
        "  size_of SampleRow = {} B (a materialized Vec of 1M rows alone would take ≥ {:.0} MB before heap strings)",
        std::mem::size_of::<SampleRow>(),
        (std::mem::size_of::<SampleRow>() * ROWS) as f64 / 1048576.0
    );
    // Findings are data; the report stage words them.
    for o in &analysis.overhead {
        let f = &o.overhead_median;
        println!(
            "  overhead (median, ms): {:?} {:?}",
            f.direction,
            f.estimate.estimate()
        );
    }
    for c in &analysis.concurrency {
        println!("  concurrency: {:?}", c.verdict);
    }
    for c in &analysis.connection {
        let f = &c.cost_median;
        println!(
            "  connection (median, ms): {:?} {:?}",
            f.direction,
            f.estimate.estimate()
        );
    }
    for r in &analysis.routes {
        println!(
            "  routes: fastest {:?}, {} comparisons",
            r.fastest_path,
            r.comparisons.len()
        );
    }
}

/// Count `"status": "ok"` estimates in the JSON.
fn count_cis(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Object(m) => {
            usize::from(
                m.get("status").and_then(|s| s.as_str()) == Some("ok") && m.contains_key("ci"),
            ) + m.values().map(count_cis).sum::<usize>()
        }
        serde_json::Value::Array(a) => a.iter().map(count_cis).sum(),
        _ => 0,
    }
}

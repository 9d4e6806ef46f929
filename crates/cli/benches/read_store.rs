//! The reading side at 10,000, 100,000 and 1,000,000 samples: for each
//! size, one session is generated as a JSONL export (deterministic, a
//! demo-like mix: pings, cold probes, warm and fresh requests on two paths,
//! direct requests over three strategies, bursts of 3 and 5, Server-Timing
//! on app requests, TLS on fresh connections, a trace id on every request
//! and server spans for the first 200 app requests), then the release
//! binary runs, each as its own process:
//! `import`, `report` twice (the first stores the session's frame, the
//! second reads it), `report --format json` and `export`, on SQLite and,
//! with `DATABASE_URL` set, on PostgreSQL (a schema of its own, dropped
//! after). Wall time, CPU time (user + system, the command's own: a
//! figure that compares machines better than wall time) and peak RSS of
//! each command are printed as a Markdown table, with the targets
//! at 1M.
//!
//! `cargo bench -p firsttoken --bench read_store`
//! (`FT_BENCH_SIZES=10000,100000` for other sizes). To time commands by
//! hand, `read_store generate N PATH` (the bench binary under
//! `target/release/deps/`) writes the export of size N to PATH and exits.
//!
//! Peak RSS is the command's own: each runs under a fresh copy of this
//! bench (`child` mode) whose only child it is, so `getrusage(RUSAGE_CHILDREN)`
//! there reads exactly its `ru_maxrss`. Before each command the disk is
//! synced (`sync`), so none is timed while the kernel writes back the
//! previous one's files, and a store's files are deleted before the next
//! store's turn.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use firsttoken_analyze::bootstrap::SplitMix64;
use firsttoken_record::export::{write_jsonl, write_session_jsonl, write_spans_jsonl};
use firsttoken_record::session::{
    Labels, PromptRef, Provenance, SampleRow, SessionMeta, SessionStatus,
};
use firsttoken_record::span::{SpanKind, SpanRow};
use firsttoken_record::vocab::{Destination, PhaseKind, UtcTime};
use firsttoken_record::{
    Clock, Connection, ErrorKind, HandshakeKind, Sample, SampleError, TlsInfo,
};

const EXE: &str = env!("CARGO_BIN_EXE_firsttoken");
/// App requests with server spans (the rest carry trace ids without spans,
/// as when the receiver's span cap is reached).
const TRACED: u64 = 200;

fn lognormal(rng: &mut SplitMix64, median: f64, sigma: f64) -> f64 {
    let (u1, u2) = (rng.next_open01(), rng.next_open01());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    median * (sigma * z).exp()
}

fn meta(n: usize) -> SessionMeta {
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

/// Writes a session of `n` samples as a JSONL export at `path`.
fn generate(n: usize, path: &Path) {
    let m = meta(n);
    let mut w = BufWriter::new(std::fs::File::create(path).expect("create the export"));
    write_session_jsonl(&m, &[], &mut w).expect("write the session line");
    let mut rng = SplitMix64::new(n as u64);
    let (mut chunk, mut spans, mut traced) = (Vec::with_capacity(10_000), Vec::new(), 0);
    for seq in 0..n as u64 {
        let (r, s) = row(&mut rng, &m, seq, &mut traced);
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

/// Child mode: run `args` (the binary, then its arguments), print `wall_s
/// peak_rss_kb exit_code cpu_s` of it.
fn child(args: &[String]) {
    let t = Instant::now();
    let status = Command::new(&args[0])
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .expect("run the command");
    let wall = t.elapsed().as_secs_f64();
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN);
    let (rss, cpu) = usage.map_or((-1, -1.0), |u| {
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        (u.max_rss(), secs(u.user_time()) + secs(u.system_time()))
    });
    println!("{wall} {rss} {} {cpu}", status.code().unwrap_or(-1));
}

/// A command's figures.
#[derive(Clone, Copy)]
struct Figures {
    wall_s: f64,
    cpu_s: f64,
    rss_mb: f64,
}

/// `firsttoken ARGS` under a child copy of this bench.
fn measure(args: &[&str]) -> Figures {
    // The previous command's writes (a 1.4 GB export, a store) flushed
    // first: no command is timed while the kernel writes another's back.
    let _ = Command::new("sync").status();
    let me = std::env::current_exe().expect("this bench's path");
    let out = Command::new(me)
        .arg("child")
        .arg(EXE)
        .args(args)
        .output()
        .expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    assert!(
        v.len() == 4 && v[2] == 0.0,
        "firsttoken {args:?} failed: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Figures {
        wall_s: v[0],
        rss_mb: v[1] / 1024.0,
        cpu_s: v[3],
    }
}

/// A PostgreSQL schema of its own for `tag`, dropped on drop.
struct PgSchema {
    admin: String,
    name: String,
    url: String,
}

fn pg(admin: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(admin, tokio_postgres::NoTls)
            .await
            .expect("connect to DATABASE_URL");
        tokio::spawn(conn);
        c.batch_execute(sql).await.expect("run SQL");
    });
}

impl PgSchema {
    fn new(admin: &str, tag: &str) -> PgSchema {
        let name = format!("ft_bench_{tag}_{}", std::process::id());
        pg(
            admin,
            &format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"),
        );
        let sep = if admin.contains('?') { '&' } else { '?' };
        PgSchema {
            url: format!("{admin}{sep}options=-c%20search_path%3D{name}"),
            admin: admin.to_string(),
            name,
        }
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        pg(
            &self.admin,
            &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
    }
}

/// One store's figures at one size.
struct Row {
    store: &'static str,
    n: usize,
    cells: Vec<Figures>,
}

fn run_store(store: &'static str, url: &str, n: usize, export: &Path, out: &Path) -> Row {
    let e = export.to_str().expect("a UTF-8 path");
    let o = out.to_str().expect("a UTF-8 path");
    let import = measure(&["import", "--store", url, e]);
    // The first report reads the rows and stores the session's frame
    // (from `STORED_FRAME_MIN_ROWS` samples); the next ones read that.
    let first = measure(&["report", "--store", url]);
    let report = measure(&["report", "--store", url]);
    let json = measure(&["report", "--store", url, "--format", "json"]);
    // The imported session has a new id: export the only one there is.
    let session = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let store = firsttoken_record::Store::open_existing(url).await?;
            store.sessions().await
        })
        .expect("list the imported session")
        .first()
        .map(|m| m.id.clone())
        .expect("one session");
    assert_ne!(
        session,
        meta(n).id,
        "import keeps the original id in a tag only"
    );
    let exported = measure(&["export", "--store", url, "--session", &session, "--out", o]);
    Row {
        store,
        n,
        cells: vec![import, first, report, json, exported],
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        return child(&args[1..]);
    }
    if let [mode, n, path] = args.as_slice()
        && mode == "generate"
    {
        return generate(n.parse().expect("a sample count"), Path::new(path));
    }
    let sizes: Vec<usize> = std::env::var("FT_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    let dir = tempfile::tempdir().expect("a temp dir");
    let pg_admin = std::env::var("DATABASE_URL").ok();
    if pg_admin.is_none() {
        eprintln!("DATABASE_URL not set: SQLite only");
    }
    let mut rows = Vec::new();
    for &n in &sizes {
        let export: PathBuf = dir.path().join(format!("s{n}.jsonl"));
        let t = Instant::now();
        generate(n, &export);
        eprintln!(
            "{n} samples: export of {:.0} MB generated in {:.1} s",
            std::fs::metadata(&export).map_or(0.0, |m| m.len() as f64 / 1e6),
            t.elapsed().as_secs_f64()
        );
        let db = dir.path().join(format!("s{n}.db"));
        let out = dir.path().join(format!("out{n}.jsonl"));
        rows.push(run_store(
            "SQLite",
            db.to_str().expect("UTF-8"),
            n,
            &export,
            &out,
        ));
        // Gone before PostgreSQL's turn, their pages with them.
        for f in [&db, &out] {
            let _ = std::fs::remove_file(f);
        }
        if let Some(admin) = &pg_admin {
            let schema = PgSchema::new(admin, &n.to_string());
            rows.push(run_store("PostgreSQL", &schema.url, n, &export, &out));
        }
        for f in [&db, &out, &export] {
            let _ = std::fs::remove_file(f);
        }
    }
    println!(
        "| store | samples | import | first report (stores the frame) | report | report --format json | export |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let cells: Vec<String> = r
            .cells
            .iter()
            .map(|f| {
                format!(
                    "{:.2} s ({:.1} s CPU), {:.0} MB",
                    f.wall_s, f.cpu_s, f.rss_mb
                )
            })
            .collect();
        println!("| {} | {} | {} |", r.store, r.n, cells.join(" | "));
    }
    println!(
        "targets at 1,000,000: import ≤ 15 s and ≤ 200 MB; report (terminal, JSON) ≤ 2 s and ≤ 300 MB on SQLite, ≤ 4 s on PostgreSQL; export ≤ 10 s and ≤ 100 MB (the first report after an import also stores the frame: it is timed apart)"
    );
}

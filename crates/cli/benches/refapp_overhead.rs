//! Reference app overhead benchmark (issue: "at 64 concurrent streams its
//! median TTFT stays within 10% of one stream's over the emulator, and it
//! adds under 2 ms (p50) on loopback to the upstream's TTFT").
//!
//! It starts `firsttoken emulate` (fixed TTFT 200 ms, 10 ms between tokens,
//! 20 tokens) and the default `firsttoken refapp` (SQLite in a temporary
//! directory) as separate processes, so the client's CPU is its own, signs
//! up one `@bench.invalid` user, and measures with firsttoken's probe in
//! this process, warm connections throughout:
//! - (a) straight to the emulator, 1 stream, 30 requests;
//! - (b) `POST /api/chat` through the app, 1 stream, 30 requests;
//! - (c) through the app, 64 streams, 192 requests (each worker warms up first).
//!
//! Per round it reports the median and p90 TTFT of each, the app's overhead
//! (b − a at p50 and p90), the per-request overhead the app itself reports
//! (client TTFT minus the app's `upstream_ttft` from its final
//! `server-timing` event, p50), and the ratio c / b at p50 and p90.
//!
//! Run: `cargo bench -p firsttoken --bench refapp_overhead` (3 rounds;
//! `FT_BENCH_ROUNDS=N` to change). The Markdown table goes to stdout and to
//! `target/refapp-overhead.md`.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use firsttoken_drive::Slot;
use firsttoken_plan::{ProbeSpec, RequestTemplate, Target};
use firsttoken_record::Sample;

const TTFT_MS: u32 = 200;
const ITL_MS: u32 = 10;
const TOKENS: u32 = 20;
const SINGLE_REQUESTS: u64 = 30;
const STREAMS: u32 = 64;
const MANY_REQUESTS: u64 = 64 * 3;

/// A child server, killed when dropped.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`, from its first line on stdout.
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `firsttoken <args>` and wait for its `listening on URL` line.
fn server(args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_firsttoken"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start firsttoken {}: {e}", args[0]));
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("first line");
    let base = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("firsttoken {} said {first:?}", args[0]))
        .to_string();
    // Keep draining, so a later line can never block the server on a full pipe.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = out.read_to_end(&mut sink);
    });
    Server { child, base }
}

fn request(url: &str, body: &str) -> RequestTemplate {
    let target = Target::parse(url).expect("URL");
    RequestTemplate::new(target, None, Some(body.as_bytes().to_vec().into())).expect("request")
}

/// Sign up a user (untimed) and return its bearer token.
async fn sign_up(app: &Server) -> String {
    let body = serde_json::json!({
        "email": format!("overhead-{}@bench.invalid", std::process::id()),
        "password": "correct horse battery",
    });
    let req = request(&format!("{}/api/auth/signup", app.base), &body.to_string());
    let mut slot = Slot::new(&ProbeSpec::new(req.clone())).expect("slot");
    let (status, body) = slot.fetch(&req).await.expect("sign-up");
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 201, "sign-up: {text}");
    let v: serde_json::Value = serde_json::from_str(&text).expect("sign-up JSON");
    v["token"].as_str().expect("token").to_string()
}

/// Run a warm probe and return its counted samples (warm-ups left out).
async fn run(mut spec: ProbeSpec, requests: u64, concurrency: u32) -> Vec<Sample> {
    spec.requests = requests;
    spec.concurrency = concurrency;
    spec.timeouts.request = Duration::from_secs(60);
    let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
    let probe = tokio::spawn(firsttoken_drive::run_probe(spec, tx, Default::default()));
    let mut samples = Vec::new();
    while let Some(s) = rx.recv().await {
        if !s.warmup {
            samples.push(s);
        }
    }
    probe.await.expect("join").expect("probe");
    samples
}

/// Median and p90 (linear interpolation) of `v`, NaN when empty.
fn p50_p90(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let p = |q| firsttoken_analyze::percentile_sorted(&v, q).unwrap_or(f64::NAN);
    (p(50.0), p(90.0))
}

struct Level {
    ok: usize,
    failed: usize,
    ttft: (f64, f64),
}

fn level(samples: &[Sample]) -> Level {
    let failed = samples.iter().filter(|s| !s.is_ok()).count();
    Level {
        ok: samples.len() - failed,
        failed,
        ttft: p50_p90(samples.iter().filter_map(|s| s.ttft_ms).collect()),
    }
}

/// Client TTFT minus the app's own `upstream_ttft`, per request: what the
/// app adds before and after waiting for the model.
fn app_added(samples: &[Sample]) -> (f64, f64) {
    p50_p90(
        samples
            .iter()
            .filter_map(|s| Some(s.ttft_ms? - *s.server_timing.as_ref()?.get("upstream_ttft")?))
            .collect(),
    )
}

struct Round {
    direct: Level,
    single: Level,
    many: Level,
    added: (f64, f64),
    phases: String,
}

async fn round(emu: &Server, app: &Server, token: &str) -> Round {
    let chat_body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]}"#;
    let direct = ProbeSpec::new(request(
        &format!("{}/v1/chat/completions", emu.base),
        chat_body,
    ));
    let mut via = ProbeSpec::new(request(
        &format!("{}/api/chat", app.base),
        r#"{"message":"hello"}"#,
    ));
    via.request
        .add_header_line(&format!("Authorization: Bearer {token}"))
        .expect("header");
    let a = run(direct, SINGLE_REQUESTS, 1).await;
    let b = run(via.clone(), SINGLE_REQUESTS, 1).await;
    let c = run(via, MANY_REQUESTS, STREAMS).await;
    let phase = |k: &str| {
        p50_p90(
            c.iter()
                .filter_map(|s| s.server_timing.as_ref()?.get(k).copied())
                .collect(),
        )
        .0
    };
    Round {
        direct: level(&a),
        single: level(&b),
        many: level(&c),
        added: app_added(&b),
        phases: format!(
            "auth {:.2}, db {:.2}, upstream_connect {:.2}",
            phase("auth"),
            phase("db"),
            phase("upstream_connect")
        ),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is a filter we ignore.
    let rounds: u32 = std::env::var("FT_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let dir = std::env::temp_dir().join(format!("ft-refapp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("refapp.db");
    let md = {
        let emu = server(&[
            "emulate",
            "--listen",
            "127.0.0.1:0",
            "--ttft-ms",
            &TTFT_MS.to_string(),
            "--itl-ms",
            &ITL_MS.to_string(),
            "--tokens",
            &TOKENS.to_string(),
        ]);
        let upstream = format!("{}/v1", emu.base);
        let app = server(&[
            "refapp",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &db.display().to_string(),
            "--upstream-url",
            &upstream,
        ]);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let token = sign_up(&app).await;
            let mut rows = Vec::new();
            for r in 1..=rounds {
                let x = round(&emu, &app, &token).await;
                eprintln!(
                    "round {r}: ttft p50 direct {:.2}, via app {:.2}, {STREAMS} streams {:.2} ms",
                    x.direct.ttft.0, x.single.ttft.0, x.many.ttft.0
                );
                rows.push(x);
            }
            table(&rows)
        })
    };
    let _ = std::fs::remove_dir_all(&dir);
    println!("{md}");
    let _ = std::fs::write(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/refapp-overhead.md"),
        &md,
    );
}

fn table(rows: &[Round]) -> String {
    let mut md = format!(
        "Emulator: TTFT {TTFT_MS} ms, {ITL_MS} ms between tokens, {TOKENS} tokens. \
         Default refapp (SQLite), `POST /api/chat`. Warm connections. \
         (a) direct to the emulator, 1 stream, {SINGLE_REQUESTS} requests; \
         (b) through the app, 1 stream, {SINGLE_REQUESTS} requests; \
         (c) through the app, {STREAMS} streams, {MANY_REQUESTS} requests. TTFT in ms.\n\n"
    );
    md.push_str(
        "| round | (a) p50 | (a) p90 | (b) p50 | (b) p90 | (c) p50 | (c) p90 \
         | b − a p50 | b − a p90 | app-reported added p50 | c / b p50 | c / b p90 | failed |\n",
    );
    md.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (i, r) in rows.iter().enumerate() {
        md.push_str(&format!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {:.3} | {} |\n",
            i + 1,
            r.direct.ttft.0,
            r.direct.ttft.1,
            r.single.ttft.0,
            r.single.ttft.1,
            r.many.ttft.0,
            r.many.ttft.1,
            r.single.ttft.0 - r.direct.ttft.0,
            r.single.ttft.1 - r.direct.ttft.1,
            r.added.0,
            r.many.ttft.0 / r.single.ttft.0,
            r.many.ttft.1 / r.single.ttft.1,
            r.direct.failed + r.single.failed + r.many.failed,
        ));
    }
    md.push('\n');
    for (i, r) in rows.iter().enumerate() {
        md.push_str(&format!(
            "Round {}: {} + {} + {} requests ok; app-reported medians at {STREAMS} streams (ms): {}.\n",
            i + 1,
            r.direct.ok,
            r.single.ok,
            r.many.ok,
            r.phases
        ));
    }
    md
}

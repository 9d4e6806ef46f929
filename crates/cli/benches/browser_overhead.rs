//! The browser client's own cost (issue 27: "how many concurrent contexts
//! one machine holds and what its presence adds to the network-level
//! stamps").
//!
//! It starts `firsttoken emulate` (TTFT 150 ms, 60 ms between tokens, 8
//! tokens) and `firsttoken refapp` over it (its chat page, no render
//! delay) as separate processes, signs up one `@bench.invalid` user, and
//! for each level N of browser contexts:
//! - `firsttoken probe` of the app's `POST /api/chat` at `-c N`, 3·N
//!   requests, at least 12 (warm-ups left out): the HTTP client's TTFT at
//!   that load;
//! - `firsttoken browse --contexts N -n 3N` (at least 12) on the chat
//!   page: N users at once, round after round, in one headless Chromium; while it runs, the
//!   proportional set size (PSS, so shared pages count once) of the whole
//!   process tree under it is read every 100 ms, and its peak kept.
//!
//! Per level it reports the messages painted, the medians of the probe's
//! TTFT, the browser's network-level TTFT and painted TTFT, the browser's
//! network TTFT minus the probe's (what measuring through a browser adds
//! to the network stamp at that load), the render lag's median, the
//! browser's peak PSS and the wall time of the `browse` run.
//!
//! Run: `cargo bench -p firsttoken --bench browser_overhead`
//! (`FT_BENCH_LEVELS=1,2,4,8,16,32` by default; Chromium from
//! `FIRSTTOKEN_CHROMIUM`, else `chromium` on PATH — without it the bench
//! says so and does nothing). The Markdown table goes to stdout and to
//! `target/browser-overhead.md`. Everything stays on loopback.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

use common::EmulatorProcess;

const EXE: &str = env!("CARGO_BIN_EXE_firsttoken");

/// The JSON lines of a finished command's stdout.
fn lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    firsttoken_analyze::percentile_sorted(&v, 50.0).unwrap_or(f64::NAN)
}

fn num(v: &serde_json::Value, ptr: &str) -> Option<f64> {
    v.pointer(ptr).and_then(serde_json::Value::as_f64)
}

/// Every process under `root` (its descendants), from /proc.
fn tree(root: u32) -> Vec<u32> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The fields after the command name, which may hold spaces.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parent.push((pid, ppid));
        }
    }
    let mut out = vec![root];
    let mut k = 0;
    while k < out.len() {
        let p = out[k];
        out.extend(parent.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        k += 1;
    }
    out
}

/// PSS of `pid` in kB (0 when it is gone).
fn pss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Pss:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

struct Row {
    level: u32,
    painted: usize,
    messages: usize,
    probe_ttft: f64,
    network_ttft: f64,
    painted_ttft: f64,
    render_lag: f64,
    peak_pss_mb: f64,
    wall_s: f64,
}

fn level(app: &EmulatorProcess, chromium: &str, token: &str, n: u32) -> Row {
    // Three rounds, and at least twelve messages.
    let messages = (3 * n).max(12);
    let auth = format!("Authorization: Bearer {token}");
    let probe = Command::new(EXE)
        .args([
            "probe",
            &format!("{}/api/chat", app.base),
            "-H",
            &auth,
            "--body",
            r#"{"message":"Hello there"}"#,
            "-c",
            &n.to_string(),
            "-n",
            &messages.to_string(),
            "--json",
        ])
        .output()
        .expect("probe");
    let probe_ttft = median(
        lines(&probe.stdout)
            .iter()
            .filter(|s| s["warmup"] != true)
            .filter_map(|s| num(s, "/ttft_ms"))
            .collect(),
    );
    let began = Instant::now();
    let mut browse = Command::new(EXE)
        .args([
            "browse",
            &format!("{}/chat", app.base),
            "--input",
            "#message",
            "--answer",
            ".assistant",
            "--local-storage",
            "refapp_token=$FT_BENCH_TOKEN",
            "--chromium",
            chromium,
            "--message",
            "Hello there",
            "--contexts",
            &n.to_string(),
            "-n",
            &messages.to_string(),
            "--json",
        ])
        .env("FT_BENCH_TOKEN", token)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("browse");
    let mut stdout = browse.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let mut peak_kb = 0u64;
    while browse.try_wait().expect("wait").is_none() {
        let kb: u64 = tree(browse.id()).into_iter().map(pss_kb).sum();
        peak_kb = peak_kb.max(kb);
        std::thread::sleep(Duration::from_millis(100));
    }
    let wall_s = began.elapsed().as_secs_f64();
    let samples = lines(&reader.join().expect("reader"));
    let ok: Vec<&serde_json::Value> = samples.iter().filter(|s| s["error"].is_null()).collect();
    let of = |ptr: &str| median(ok.iter().filter_map(|s| num(s, ptr)).collect());
    let lags = ok
        .iter()
        .filter_map(|s| Some(num(s, "/painted/painted_ttft_ms")? - num(s, "/ttft_ms")?))
        .collect();
    Row {
        level: n,
        painted: ok.len(),
        messages: samples.len(),
        probe_ttft,
        network_ttft: of("/ttft_ms"),
        painted_ttft: of("/painted/painted_ttft_ms"),
        render_lag: median(lags),
        peak_pss_mb: peak_kb as f64 / 1024.0,
        wall_s,
    }
}

fn main() {
    let chromium = std::env::var("FIRSTTOKEN_CHROMIUM").ok().or_else(|| {
        let out = Command::new("sh")
            .args(["-c", "command -v chromium"])
            .output()
            .ok()?;
        let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!p.is_empty()).then_some(p)
    });
    let Some(chromium) = chromium else {
        println!(
            "browser_overhead: no Chromium (install Debian's chromium or set FIRSTTOKEN_CHROMIUM); nothing measured"
        );
        return;
    };
    let levels: Vec<u32> = std::env::var("FT_BENCH_LEVELS")
        .unwrap_or_else(|_| "1,2,4,8,16,32".into())
        .split(',')
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let world = common::chat_world(&[]);
    let (app, token) = (&world.app, &world.token);
    let mut md = String::from(
        "| contexts | painted / messages | probe TTFT p50 | browser network TTFT p50 | browser − probe | painted TTFT p50 | render lag p50 | browser peak PSS | wall |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for n in levels {
        let r = level(app, &chromium, token, n);
        let line = format!(
            "| {} | {} / {} | {:.1} ms | {:.1} ms | {:+.1} ms | {:.1} ms | {:.1} ms | {:.0} MB | {:.1} s |\n",
            r.level,
            r.painted,
            r.messages,
            r.probe_ttft,
            r.network_ttft,
            r.network_ttft - r.probe_ttft,
            r.painted_ttft,
            r.render_lag,
            r.peak_pss_mb,
            r.wall_s
        );
        eprint!("{line}");
        md.push_str(&line);
    }
    println!("{md}");
    let _ = std::fs::write(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-overhead.md"),
        &md,
    );
}

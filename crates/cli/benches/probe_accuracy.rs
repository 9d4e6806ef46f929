//! Probe accuracy and cost benchmark (issue: "Exact and cheap").
//!
//! For each concurrency level it starts `firsttoken emulate` as a separate
//! process (fixed TTFT, a truth log), runs the probe in a fresh child process
//! of this benchmark with `-c N -n N` warm requests (so N streams are open at
//! once), and reports:
//! - TTFT error: measured `ttft_ms` minus the emulator's own `ttft_ms` for the
//!   same request (matched by `x-request-id`), p50 / p99 / max;
//! - client CPU seconds per 1,000 content tokens (utime + stime of the probe
//!   process, which runs nothing but the client);
//! - peak RSS of the probe process (VmHWM).
//!
//! Run: `cargo bench -p firsttoken --bench probe_accuracy` (levels: 1, 64,
//! 256, 1024; override with `FT_BENCH_LEVELS=1,64`). The Markdown table goes
//! to stdout and to `target/probe-accuracy.md`.
//!
//! With `FT_BENCH_WATCH=N`, each level runs N times without and N times with
//! the live view (`--watch`'s own code, drawing into a pseudo-terminal made
//! by util-linux `script`), alternating, so the view's cost to the
//! measurement shows as a difference between rows of one run.
//!
//! Kernel receive timestamps (issue 13): every row shows the TTFT error on
//! the kernel clock (`ttft_ms`) and, for the same requests, on the user
//! clock (`ttft_user_ms`), the client lag (kernel receive → handled) and
//! how often the first token shared its socket read. Settings:
//! - `FT_BENCH_ITL_MS` (default 20): ms between tokens;
//! - `FT_BENCH_MODES` (default `h1`): any of `h1`, `h2`, `h1-tls`,
//!   `h2-tls` (TLS with a fresh self-signed certificate; HTTP/2 over
//!   plaintext is prior knowledge);
//! - `FT_BENCH_CLOCKS` (default `kernel`): `kernel` and/or `user` (kernel
//!   timestamps turned off: today's client, for the CPU comparison);
//! - `FT_BENCH_REPEATS` (default 1): runs of each combination, alternating;
//! - `FT_BENCH_PIN=1`: the emulator on CPU 0 and the probe on CPU 1
//!   (`taskset`, util-linux).
//! - `FT_BENCH_PEER_IB=/path/to/inference-benchmarker`: after each level's
//!   runs, the same level with Hugging Face's inference-benchmarker as the
//!   client (a binary the user built; see `peer/inference_benchmarker.rs`),
//!   pinned like the probe, in a second table; `FT_BENCH_PEER_SECS`
//!   (default 1) is its measured step.
//!
//! Two truths. The *handler truth* is the emulator's `ttft_ms`: from the
//! moment its handler had the request parsed to the moment it handed the
//! first token to the connection. Under a burst both moments lag the
//! socket (hundreds of requests parsed one after another on one core; an
//! HTTP/2 frame written by the connection task after the handing), and a
//! client sees that lag as TTFT, rightly. The *wire truth* is the
//! emulator's `wire_ttft_ms` (`firsttoken_emulator::wire`): from the
//! kernel's receive time of the request's last read to the start of the
//! write that carried the first token, the server's TTFT at its socket.
//! The wire-truth columns are the client's own error; `wire − handler
//! TTFT` is what the handler's truth leaves out.
//!
//! `start → sent` is the client's own send-side delay (request start to
//! the request written, user space): it is part of the TTFT error that
//! receive timestamps cannot remove. `error after sent` takes it out:
//! `ttft_ms − sent_ms` minus the emulator's own TTFT, the error of the
//! receive side alone (what remains is the loopback, the emulator's own
//! lateness in reading the request, and the client's stamps).

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use firsttoken_plan::{ProbeSpec, RequestTemplate, Target};
use firsttoken_record::Sample;

// The side-by-side peer, when `FT_BENCH_PEER_IB` names its binary.
#[path = "peer/inference_benchmarker.rs"]
mod peer;

// The live view's own code, as `run --watch` and `probe --watch` use it.
#[allow(dead_code)]
#[path = "../src/watch/mod.rs"]
mod watch;

const TTFT_MS: u32 = 200;
const TOKENS: u32 = 50;

fn itl_ms() -> u32 {
    std::env::var("FT_BENCH_ITL_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// One run's settings.
#[derive(Debug, Clone)]
struct Run {
    streams: u32,
    watched: bool,
    /// `h1`, `h2`, `h1-tls` or `h2-tls`.
    mode: String,
    /// Kernel receive timestamps on.
    kernel: bool,
}

struct Level {
    run: Run,
    ok: usize,
    failed: usize,
    err_p50: f64,
    err_p99: f64,
    err_max: f64,
    user_p50: f64,
    user_p99: f64,
    user_max: f64,
    /// The same errors against the emulator's wire-level truth.
    wire_p50: f64,
    wire_p99: f64,
    wire_max: f64,
    wire_user_p50: f64,
    wire_user_p99: f64,
    wire_user_max: f64,
    /// Wire TTFT minus handler TTFT: what the handler's truth leaves out.
    emu_lag_p50: f64,
    emu_lag_p99: f64,
    lag_p50: f64,
    lag_p99: f64,
    sent_p50: f64,
    sent_p99: f64,
    after_sent_p50: f64,
    after_sent_p99: f64,
    kernel_share: f64,
    /// Share of the ok requests with a wire-level truth.
    wire_share: f64,
    shared_share: f64,
    cpu_s_per_1k_tokens: f64,
    peak_rss_mb: f64,
    wall_s: f64,
}

/// CPU time, user + system, all threads, of this process (`RUSAGE_SELF`)
/// or of its waited-for children (`RUSAGE_CHILDREN`): `getrusage`, whose
/// total the kernel keeps to the nanosecond and reports in µs (the
/// clock-tick fields of `/proc/self/stat` are 10 ms steps, 4–8 % of a
/// 256-stream run).
fn cpu_seconds(who: nix::sys::resource::UsageWho) -> f64 {
    nix::sys::resource::getrusage(who).map_or(f64::NAN, |u| {
        let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        s(u.user_time()) + s(u.system_time())
    })
}

fn proc_cpu_seconds() -> f64 {
    cpu_seconds(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

/// Peak RSS (`VmHWM`, MB) in a `/proc/<pid>/status` text.
fn vm_hwm_mb(status: &str) -> Option<f64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    vm_hwm_mb(&status).unwrap_or(f64::NAN)
}

/// Child mode: run the probe against `url` at `streams` concurrency, print one JSON line of results
/// (to the file `FT_BENCH_OUT` names when the live view owns the terminal).
fn child(url: &str, streams: u32, watched: bool, mode: &str, kernel: bool) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let body = br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]}"#;
    let target = Target::parse(url).expect("url");
    let mut spec = ProbeSpec::new(
        RequestTemplate::new(target, None, Some(body.to_vec().into())).expect("request"),
    );
    // At least 20 requests, so one stream still gives a stable CPU figure (the clock ticks at 10 ms).
    spec.requests = u64::from(streams.max(20));
    spec.concurrency = streams;
    spec.timeouts.request = Duration::from_secs(60);
    spec.kernel_clock = kernel;
    spec.http = if mode.starts_with("h2") {
        firsttoken_plan::HttpVersion::Http2
    } else {
        firsttoken_plan::HttpVersion::Http1
    };
    // The certificate is a fresh self-signed one; verification is not timed
    // (warm connections) and not what this measures.
    spec.tls.insecure = true;
    let started = Instant::now();
    let cpu0 = proc_cpu_seconds();
    let samples: Vec<Sample> = rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
        let pause = firsttoken_session::Pause::new();
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut view = watched.then(|| {
            let protocol = firsttoken_plan::protocol::Protocol::probe(&spec);
            watch::Watch::start(&protocol, None, pause.clone(), false, cancel.clone())
                .expect("the live view starts (a terminal is needed)")
        });
        let gate = pause.gate(std::sync::Arc::new(firsttoken_drive::Unlimited));
        let run = tokio::spawn(firsttoken_drive::run_probe_gated(spec, tx, cancel, gate));
        let mut v = Vec::new();
        while let Some(s) = rx.recv().await {
            if let Some(w) = &view {
                w.sample("probe", &s);
            }
            v.push(s);
        }
        if let Some(w) = view.as_mut() {
            w.finish().expect("the live view ends");
        }
        run.await.expect("join").expect("probe");
        v
    });
    let cpu = proc_cpu_seconds() - cpu0;
    let tokens: u64 = samples.iter().map(|s| s.content_chunks).sum();
    let out = serde_json::json!({
        "cpu_s": cpu,
        "content_tokens": tokens,
        "peak_rss_mb": peak_rss_mb(),
        "wall_s": started.elapsed().as_secs_f64(),
        "samples": samples.iter().filter(|s| !s.warmup).map(|s| serde_json::json!({
            "request_id": s.request_id, "ttft_ms": s.ttft_ms, "ok": s.is_ok(),
            "ttft_user_ms": s.ttft_user_ms, "client_lag_ms": s.client_lag_ms,
            "ttft_read_events": s.ttft_read_events, "sent_ms": s.sent_ms,
            "kernel": s.clock == Some(firsttoken_record::Clock::Kernel),
            "error": s.error.as_ref().map(|e| e.message.clone()),
        })).collect::<Vec<_>>(),
    });
    match std::env::var("FT_BENCH_OUT") {
        Ok(path) => std::fs::write(path, out.to_string()).expect("write the child's results"),
        Err(_) => println!("{out}"),
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    firsttoken_analyze::percentile_sorted(sorted, p).unwrap_or(f64::NAN)
}

/// `taskset -c CPU` before `program` when pinning is asked for.
fn pinned(program: &str, cpu: &str) -> Command {
    if std::env::var("FT_BENCH_PIN").is_ok_and(|v| v == "1") {
        let mut c = Command::new("taskset");
        c.args(["-c", cpu, program]);
        c
    } else {
        Command::new(program)
    }
}

/// Start `firsttoken emulate` (pinned to CPU 0 when asked) with a truth log
/// at `truth_path`; returns the process and its base URL.
fn start_emulator(mode: &str, dir: &Path, truth_path: &Path) -> (Child, String) {
    let mut emu = pinned(env!("CARGO_BIN_EXE_firsttoken"), "0");
    if mode.ends_with("tls") {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .expect("a self-signed certificate");
        std::fs::write(dir.join("cert.pem"), ck.cert.pem()).expect("write cert");
        std::fs::write(dir.join("key.pem"), ck.signing_key.serialize_pem()).expect("write key");
        emu.arg("emulate")
            .arg("--tls-cert")
            .arg(dir.join("cert.pem"))
            .arg("--tls-key")
            .arg(dir.join("key.pem"));
    } else {
        emu.arg("emulate");
    }
    let mut emu = emu
        .args(["--listen", "127.0.0.1:0", "--truth-log"])
        .arg(truth_path)
        .args([
            "--ttft-ms",
            &TTFT_MS.to_string(),
            "--itl-ms",
            &itl_ms().to_string(),
            "--tokens",
            &TOKENS.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the emulator");
    let mut first = String::new();
    BufReader::new(emu.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("emulator address");
    let base = first
        .trim()
        .strip_prefix("listening on ")
        .expect("listening line")
        .to_string();
    (emu, base)
}

/// The `Run::mode` of a peer run.
const PEER: &str = "peer";

/// Seconds of the peer's measured step (`FT_BENCH_PEER_SECS`, default 1: at
/// 690 ms a request, about two requests per user).
fn peer_secs() -> u64 {
    std::env::var("FT_BENCH_PEER_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// Run the peer at `streams` users against a fresh plaintext emulator; one
/// Markdown row.
fn peer_row(exe: &Path, streams: u32) -> String {
    let dir = std::env::temp_dir().join(format!("ft-bench-{}-{streams}-peer", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let truth_path = dir.join("truth.jsonl");
    let (mut emu, base) = start_emulator("h1", &dir, &truth_path);
    let step = Duration::from_secs(peer_secs());
    let p = peer::run(exe, streams, &base, &truth_path, &dir, step, |e| {
        pinned(e, "1")
    });
    let _ = emu.kill();
    let _ = emu.wait();
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        "| {streams} | {} | {} | {} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.4} | {:.1} | {:.2} |\n",
        p.ok,
        p.failed,
        p.truth_matched,
        p.ttft_p50,
        p.ttft_p99,
        p.wire_p50,
        p.wire_p99,
        p.ttft_p50 - p.wire_p50,
        p.ttft_p99 - p.wire_p99,
        p.handler_p50,
        p.handler_p99,
        p.ttft_p50 - p.handler_p50,
        p.ttft_p99 - p.handler_p99,
        p.cpu_s_per_1k_tokens,
        p.peak_rss_mb,
        p.wall_s
    )
}

fn level(run: &Run) -> Level {
    let (streams, watched) = (run.streams, run.watched);
    let dir = std::env::temp_dir().join(format!("ft-bench-{}-{streams}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let truth_path = dir.join("truth.jsonl");
    let (mut emu, base) = start_emulator(&run.mode, &dir, &truth_path);
    let url = format!("{base}/v1/chat/completions");
    let exe = std::env::current_exe().expect("exe");
    let line = if watched {
        // A pseudo-terminal of 100 × 40 for the view; results to a file.
        let results = dir.join("child.json");
        let status = Command::new("script")
            .args(["-qfec"])
            .arg(format!("stty cols 100 rows 40; exec {}", exe.display()))
            .arg("/dev/null")
            .env(
                "FT_BENCH_CHILD",
                format!("{url} {streams} watch {} {}", run.mode, run.kernel),
            )
            .env("FT_BENCH_OUT", &results)
            .stdout(Stdio::null())
            .status()
            .expect("run the probe child under script (util-linux)");
        assert!(status.success(), "the watched child failed: {status}");
        std::fs::read_to_string(&results).expect("the child's results")
    } else {
        let out = pinned(&exe.to_string_lossy(), "1")
            .env(
                "FT_BENCH_CHILD",
                format!("{url} {streams} plain {} {}", run.mode, run.kernel),
            )
            .output()
            .expect("run the probe child");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let _ = emu.kill();
    let _ = emu.wait();
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("child output");
    // Request id → (handler TTFT, wire TTFT when stamped).
    let truth: HashMap<String, (f64, Option<f64>)> = std::fs::read_to_string(&truth_path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|t| {
            Some((
                t["request_id"].as_str()?.to_string(),
                (t["ttft_ms"].as_f64()?, t["wire_ttft_ms"].as_f64()),
            ))
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    let mut errors = Vec::new();
    let mut user_errors = Vec::new();
    let mut lags = Vec::new();
    let mut sents = Vec::new();
    let mut after_sent = Vec::new();
    let (mut wire, mut wire_user, mut emu_lag) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ok, mut failed, mut kernel, mut shared, mut counted) = (0, 0, 0, 0, 0);
    for s in v["samples"].as_array().into_iter().flatten() {
        if s["ok"].as_bool() != Some(true) {
            failed += 1;
            continue;
        }
        ok += 1;
        kernel += usize::from(s["kernel"].as_bool() == Some(true));
        if let Some(n) = s["ttft_read_events"].as_u64() {
            counted += 1;
            shared += usize::from(n > 1);
        }
        if let Some(l) = s["client_lag_ms"].as_f64() {
            lags.push(l);
        }
        if let Some(t) = s["sent_ms"].as_f64() {
            sents.push(t);
        }
        let id = s["request_id"].as_str().unwrap_or("");
        let Some(&(t, w)) = truth.get(id) else {
            continue;
        };
        if let Some(m) = s["ttft_ms"].as_f64() {
            errors.push(m - t);
            if let Some(sent) = s["sent_ms"].as_f64() {
                after_sent.push(m - sent - t);
            }
            if let Some(w) = w {
                wire.push(m - w);
            }
        }
        if let Some(m) = s["ttft_user_ms"].as_f64() {
            user_errors.push(m - t);
            if let Some(w) = w {
                wire_user.push(m - w);
            }
        }
        if let Some(w) = w {
            emu_lag.push(w - t);
        }
    }
    errors.sort_by(f64::total_cmp);
    user_errors.sort_by(f64::total_cmp);
    lags.sort_by(f64::total_cmp);
    sents.sort_by(f64::total_cmp);
    after_sent.sort_by(f64::total_cmp);
    for v in [&mut wire, &mut wire_user, &mut emu_lag] {
        v.sort_by(f64::total_cmp);
    }
    let tokens = v["content_tokens"].as_f64().unwrap_or(0.0);
    Level {
        run: run.clone(),
        ok,
        failed,
        err_p50: percentile(&errors, 50.0),
        err_p99: percentile(&errors, 99.0),
        err_max: errors.last().copied().unwrap_or(f64::NAN),
        user_p50: percentile(&user_errors, 50.0),
        user_p99: percentile(&user_errors, 99.0),
        user_max: user_errors.last().copied().unwrap_or(f64::NAN),
        wire_p50: percentile(&wire, 50.0),
        wire_p99: percentile(&wire, 99.0),
        wire_max: wire.last().copied().unwrap_or(f64::NAN),
        wire_user_p50: percentile(&wire_user, 50.0),
        wire_user_p99: percentile(&wire_user, 99.0),
        wire_user_max: wire_user.last().copied().unwrap_or(f64::NAN),
        emu_lag_p50: percentile(&emu_lag, 50.0),
        emu_lag_p99: percentile(&emu_lag, 99.0),
        lag_p50: percentile(&lags, 50.0),
        lag_p99: percentile(&lags, 99.0),
        sent_p50: percentile(&sents, 50.0),
        sent_p99: percentile(&sents, 99.0),
        after_sent_p50: percentile(&after_sent, 50.0),
        after_sent_p99: percentile(&after_sent, 99.0),
        kernel_share: kernel as f64 / ok.max(1) as f64,
        wire_share: emu_lag.len() as f64 / ok.max(1) as f64,
        shared_share: shared as f64 / counted.max(1) as f64,
        cpu_s_per_1k_tokens: v["cpu_s"].as_f64().unwrap_or(f64::NAN) / tokens * 1000.0,
        peak_rss_mb: v["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
        wall_s: v["wall_s"].as_f64().unwrap_or(f64::NAN),
    }
}

fn main() {
    if let Ok(args) = std::env::var("FT_BENCH_CHILD") {
        let mut it = args.split(' ');
        let (url, n) = (it.next().expect("url"), it.next().expect("streams"));
        let watched = it.next() == Some("watch");
        let mode = it.next().unwrap_or("h1");
        let kernel = it.next() != Some("false");
        child(url, n.parse().expect("streams"), watched, mode, kernel);
        return;
    }
    let list = |name: &str, default: &str| -> Vec<String> {
        std::env::var(name)
            .unwrap_or_else(|_| default.into())
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let modes = list("FT_BENCH_MODES", "h1");
    let clocks = list("FT_BENCH_CLOCKS", "kernel");
    let rounds: u32 = std::env::var("FT_BENCH_REPEATS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let repeats: u32 = std::env::var("FT_BENCH_WATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // `cargo bench` passes `--bench`; any other argument is a filter we ignore.
    let levels: Vec<u32> = std::env::var("FT_BENCH_LEVELS")
        .unwrap_or_else(|_| "1,64,256,1024".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let mut md = String::new();
    md.push_str(&format!(
        "Emulator: TTFT {TTFT_MS} ms, {} ms between tokens, {TOKENS} tokens; warm connections, one stream per worker{}.\n\n",
        itl_ms(),
        if std::env::var("FT_BENCH_PIN").is_ok_and(|v| v == "1") {
            "; emulator pinned to CPU 0, probe to CPU 1"
        } else {
            ""
        }
    ));
    md.push_str("| streams | mode | clock | live view | ok | failed | TTFT error vs wire truth p50 / p99 / max (ms) | user-clock error vs wire truth p50 / p99 / max (ms) | TTFT error vs handler truth p50 / p99 / max (ms) | user-clock error vs handler truth p50 / p99 / max (ms) | wire − handler TTFT p50 / p99 (ms) | client lag p50 / p99 (ms) | start → sent p50 / p99 (ms) | handler-truth error after sent p50 / p99 (ms) | kernel-stamped: client / emulator | first token shared its read | client CPU s / 1k tokens | peak RSS (MB) | wall (s) |\n");
    md.push_str("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let peer_exe = peer::binary();
    let mut runs: Vec<Run> = Vec::new();
    for &streams in &levels {
        for _ in 0..rounds {
            for mode in &modes {
                for clock in &clocks {
                    let base = Run {
                        streams,
                        watched: false,
                        mode: mode.clone(),
                        kernel: clock != "user",
                    };
                    if repeats == 0 {
                        runs.push(base);
                    } else {
                        for _ in 0..repeats {
                            runs.push(base.clone());
                            runs.push(Run {
                                watched: true,
                                ..base.clone()
                            });
                        }
                    }
                }
            }
            if peer_exe.is_some() {
                runs.push(Run {
                    streams,
                    watched: false,
                    mode: PEER.into(),
                    kernel: false,
                });
            }
        }
    }
    let mut peer_md = String::new();
    for run in runs {
        if run.mode == PEER {
            let exe = peer_exe.as_deref().expect("the peer binary");
            let row = peer_row(exe, run.streams);
            eprint!("{row}");
            peer_md.push_str(&row);
            continue;
        }
        let l = level(&run);
        let row = format!(
            "| {} | {} | {} | {} | {} | {} | {:.3} / {:.3} / {:.3} | {:.3} / {:.3} / {:.3} | {:.3} / {:.3} / {:.3} | {:.3} / {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.0} % / {:.0} % | {:.1} % | {:.4} | {:.1} | {:.2} |\n",
            l.run.streams,
            l.run.mode,
            if l.run.kernel { "kernel" } else { "user" },
            if l.run.watched { "on" } else { "off" },
            l.ok,
            l.failed,
            l.wire_p50,
            l.wire_p99,
            l.wire_max,
            l.wire_user_p50,
            l.wire_user_p99,
            l.wire_user_max,
            l.err_p50,
            l.err_p99,
            l.err_max,
            l.user_p50,
            l.user_p99,
            l.user_max,
            l.emu_lag_p50,
            l.emu_lag_p99,
            l.lag_p50,
            l.lag_p99,
            l.sent_p50,
            l.sent_p99,
            l.after_sent_p50,
            l.after_sent_p99,
            100.0 * l.kernel_share,
            100.0 * l.wire_share,
            100.0 * l.shared_share,
            l.cpu_s_per_1k_tokens,
            l.peak_rss_mb,
            l.wall_s
        );
        eprint!("{row}");
        md.push_str(&row);
    }
    if !peer_md.is_empty() {
        md.push_str(&format!(
            "\ninference-benchmarker (`FT_BENCH_PEER_IB`), HTTP/1.1 plaintext, against the same emulator{}: \
             `--benchmark-kind throughput --max-vus N --duration {}s --warmup {}s`. It sends no request id, so its error \
             is its TTFT percentile minus the emulator's TTFT percentile over the same step; CPU and RSS are its whole \
             process's (start-up and warm-up included).\n\n",
            if std::env::var("FT_BENCH_PIN").is_ok_and(|v| v == "1") {
                ", pinned to CPU 1"
            } else {
                ""
            },
            peer_secs(),
            peer::WARMUP_S
        ));
        md.push_str("| streams | ok | failed | with a wire truth | its TTFT p50 / p99 (ms) | emulator wire TTFT p50 / p99 (ms) | error vs wire truth p50 / p99 (ms) | emulator handler TTFT p50 / p99 (ms) | error vs handler truth p50 / p99 (ms) | CPU s / 1k tokens | peak RSS (MB) | wall (s) |\n");
        md.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        md.push_str(&peer_md);
    }
    println!("{md}");
    let _ = std::fs::write(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/probe-accuracy.md"
        ),
        &md,
    );
}

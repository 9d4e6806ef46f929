//! The side-by-side peer of issue 13: Hugging Face's inference-benchmarker
//! (Rust, reqwest + reqwest-eventsource), run against the same emulator with
//! the same pinning as the probe, so both clients are judged by one truth.
//!
//! Nothing of the peer is part of this project: `FT_BENCH_PEER_IB` names a
//! binary the user built from its own repository. It loads a tokenizer and a
//! prompt dataset through `hf_hub`, which looks in its cache before it asks the
//! Hub; this module writes both into a private `HF_HOME` (a word-level
//! tokenizer, one-turn "hello" conversations) and points `HF_ENDPOINT` at a
//! closed port on loopback, so the run never leaves the machine.
//!
//! The peer sends no request id, so its error is a difference of percentiles:
//! its own TTFT percentile minus the same percentile of the emulator's TTFTs
//! over the requests of its measured step (its one-user warm-up excluded).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One run of the peer at one concurrency.
pub struct PeerLevel {
    /// Requests of the measured ("throughput") step that succeeded.
    pub ok: u64,
    pub failed: u64,
    /// The peer's own TTFT p50 / p99 (ms), as its report gives them.
    pub ttft_p50: f64,
    pub ttft_p99: f64,
    /// The emulator's TTFT p50 / p99 over the same step (ms): wire and handler.
    pub wire_p50: f64,
    pub wire_p99: f64,
    pub handler_p50: f64,
    pub handler_p99: f64,
    /// Requests of the step with a wire truth (the truth's share of `ok + failed`).
    pub truth_matched: usize,
    /// CPU seconds (user + system) of the whole peer process per 1,000
    /// tokens the emulator sent it: start-up, its one-second warm-up, the
    /// step, and the requests it started within the step but left out of
    /// its report because they ended after it.
    pub cpu_s_per_1k_tokens: f64,
    pub peak_rss_mb: f64,
    pub wall_s: f64,
}

/// The peer binary, when `FT_BENCH_PEER_IB` names one.
pub fn binary() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("FT_BENCH_PEER_IB")?);
    assert!(
        path.is_file(),
        "FT_BENCH_PEER_IB={} is not a file: build inference-benchmarker and name its binary",
        path.display()
    );
    Some(path)
}

/// A tokenizer that `tokenizers` loads and that counts every non-empty
/// text as one token: no pre-tokenizer, one word-level vocabulary entry.
/// The peer counts the tokens of each streamed chunk, and panics on a chunk
/// of none (a whitespace-only token under a word splitter); one token a
/// chunk is what the emulator sends, and it costs the peer less CPU than a
/// real vocabulary would.
const TOKENIZER: &str = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0,"hello":1},"unk_token":"[UNK]"}}"#;
/// The peer's warm-up step: one user for this many seconds.
pub const WARMUP_S: u64 = 1;
const SNAPSHOT: &str = "0000000000000000000000000000000000000000";

/// Write one file into an `hf_hub` cache as its revision `main`.
fn cache_file(hf_home: &Path, folder: &str, name: &str, body: &str) {
    let repo = hf_home.join("hub").join(folder);
    std::fs::create_dir_all(repo.join("refs")).expect("cache refs");
    std::fs::create_dir_all(repo.join("snapshots").join(SNAPSHOT)).expect("cache snapshot");
    // `hf_hub` reads the ref as it is, without trimming.
    std::fs::write(repo.join("refs").join("main"), SNAPSHOT).expect("cache ref");
    std::fs::write(repo.join("snapshots").join(SNAPSHOT).join(name), body).expect("cache file");
}

/// Run the peer with `streams` users against `base` (the emulator's
/// `http://host:port`) for `step`, and judge it by the truth log.
pub fn run(
    exe: &Path,
    streams: u32,
    base: &str,
    truth_path: &Path,
    dir: &Path,
    step: Duration,
    pin: impl FnOnce(&str) -> Command,
) -> PeerLevel {
    let hf_home = dir.join("hf");
    cache_file(
        &hf_home,
        "models--local--wordlevel",
        "tokenizer.json",
        TOKENIZER,
    );
    let prompts: Vec<_> = (0..streams.max(16))
        .map(|i| {
            serde_json::json!({"id": i.to_string(),
                "conversations": [{"role": "user", "content": "hello"}]})
        })
        .collect();
    let prompts = serde_json::Value::Array(prompts).to_string();
    cache_file(
        &hf_home,
        "datasets--local--prompts",
        "prompts.json",
        &prompts,
    );
    let work = dir.join("peer");
    std::fs::create_dir_all(&work).expect("peer dir");
    // The children's CPU across the peer's run and wait is the peer's own
    // (the emulator is waited for only after).
    let children = || super::cpu_seconds(nix::sys::resource::UsageWho::RUSAGE_CHILDREN);
    let cpu0 = children();
    let started = Instant::now();
    let mut child = pin(&exe.to_string_lossy())
        .args(["--tokenizer-name", "local/wordlevel", "--model-name", "m"])
        .args(["--url", base, "--max-vus", &streams.to_string()])
        .args(["--duration", &format!("{}s", step.as_secs())])
        .args(["--warmup", &format!("{WARMUP_S}s")])
        .args(["--benchmark-kind", "throughput", "--no-console"])
        .args([
            "--dataset",
            "local/prompts",
            "--dataset-file",
            "prompts.json",
        ])
        .env("HF_HOME", &hf_home)
        // Never the Hub: a cache miss fails at once on a closed loopback port.
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env_remove("HF_TOKEN")
        .current_dir(&work)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start inference-benchmarker");
    // VmHWM of a running process; gone once it exits, so sampled while it runs.
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_mb = 0.0f64;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the peer") {
            break status;
        }
        if let Some(mb) = std::fs::read_to_string(&status_path)
            .ok()
            .and_then(|s| super::vm_hwm_mb(&s))
        {
            peak_mb = peak_mb.max(mb);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall_s = started.elapsed().as_secs_f64();
    let cpu = children() - cpu0;
    assert!(status.success(), "inference-benchmarker failed: {status}");
    let report = std::fs::read_dir(work.join("results"))
        .expect("the peer's results directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the peer's JSON report");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).expect("read the report"))
            .expect("the peer's report is JSON");
    let results = report["results"].as_array().expect("results");
    let step_of = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("the report has no {id} step"))
    };
    let measured = step_of("throughput");
    let count = |k: &str| measured[k].as_u64().unwrap_or(0);
    let reported = (count("successful_requests") + count("failed_requests")) as usize;
    // The truth log, in the order requests ended. The warm-up is one user
    // for one second: its requests are those the emulator read within a
    // second of the first (the step starts after the last of them ends).
    // The peer's report keeps only the requests that ended within its step,
    // the first `reported` of the rest; the others still cost it CPU.
    let truth: Vec<serde_json::Value> = std::fs::read_to_string(truth_path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let tokens: f64 = truth.iter().filter_map(|t| t["tokens_sent"].as_f64()).sum();
    let first_read = truth
        .iter()
        .filter_map(|t| t["read_ms"].as_f64())
        .fold(f64::INFINITY, f64::min);
    let (mut wire, mut handler) = (Vec::new(), Vec::new());
    for t in truth
        .iter()
        .filter(|t| {
            t["read_ms"]
                .as_f64()
                .is_some_and(|r| r >= first_read + WARMUP_S as f64 * 1000.0)
        })
        .take(reported)
    {
        handler.extend(t["ttft_ms"].as_f64());
        wire.extend(t["wire_ttft_ms"].as_f64());
    }
    wire.sort_by(f64::total_cmp);
    handler.sort_by(f64::total_cmp);
    let pct = |v: &[f64], p| firsttoken_analyze::percentile_sorted(v, p).unwrap_or(f64::NAN);
    let ttft = &measured["time_to_first_token_ms"];
    PeerLevel {
        ok: count("successful_requests"),
        failed: count("failed_requests"),
        truth_matched: wire.len(),
        ttft_p50: ttft["p50"].as_f64().unwrap_or(f64::NAN),
        ttft_p99: ttft["p99"].as_f64().unwrap_or(f64::NAN),
        wire_p50: pct(&wire, 50.0),
        wire_p99: pct(&wire, 99.0),
        handler_p50: pct(&handler, 50.0),
        handler_p99: pct(&handler, 99.0),
        cpu_s_per_1k_tokens: cpu / tokens * 1000.0,
        peak_rss_mb: peak_mb,
        wall_s,
    }
}

//! Accuracy against ground truth: the emulator logs, per request, how long
//! after reading it the first token was handed to the connection. The
//! client's TTFT includes that plus the request's way in and the token's
//! way out over loopback, so it must never be smaller, and only slightly
//! larger.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::*;
use firsttoken_emulator::{Settings, TruthLog};
use firsttoken_plan::{ConnectionMode, HttpVersion};
use serde_json::Value;

/// Largest overhead allowed over the emulator's own TTFT, in ms.
const MAX_OVERHEAD_MS: f64 = 5.0;
/// Bound for any single request: a scheduling hiccup on a busy 2-core machine.
const MAX_SINGLE_OVERHEAD_MS: f64 = 50.0;

/// Read the truth log until it holds `want` lines or 10 s pass (it is
/// written by a thread after each response ends, so it may lag the client).
async fn truth_lines(path: &std::path::Path, want: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("a truth line is JSON"))
            .collect();
        if lines.len() >= want || Instant::now() > deadline {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How the client reaches the emulator.
#[derive(Debug, Clone, Copy)]
enum Transport {
    Http1,
    H2c,
    H2Tls,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_matches_the_emulator_truth_within_5_ms() {
    check_accuracy(Transport::Http1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_matches_the_emulator_truth_over_h2c() {
    check_accuracy(Transport::H2c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_matches_the_emulator_truth_over_http2_and_tls() {
    check_accuracy(Transport::H2Tls).await;
}

/// c = 1, n = 10, warm, against an emulator with a 200 ms TTFT: every
/// counted sample's TTFT lies within [truth, truth + 5 ms].
async fn check_accuracy(transport: Transport) {
    // One at a time: on a 2-core machine, three concurrent runs would measure
    // each other's scheduling delays rather than the client's accuracy.
    let _serial = SERIAL.lock().await;
    let dir = tempfile_dir();
    let path = dir.join("truth.jsonl");
    let settings = Settings {
        ttft: Duration::from_millis(200),
        itl: Duration::from_millis(10),
        tokens: 5,
        truth: TruthLog::to_file(&path).expect("truth log"),
        ..Default::default()
    };
    let (_emu, mut s) = match transport {
        Transport::Http1 | Transport::H2c => {
            let emu = emulator(settings, None).await;
            let mut s = spec(&format!("http://{}/v1/chat/completions", emu.addr));
            if let Transport::H2c = transport {
                s.http = HttpVersion::Http2;
            }
            (emu, s)
        }
        Transport::H2Tls => {
            let (emu, pki) = tls_emulator(settings).await;
            let s = tls_spec(&emu, &pki);
            (emu, s)
        }
    };
    let want_version = match transport {
        Transport::Http1 => "HTTP/1.1",
        Transport::H2c | Transport::H2Tls => "HTTP/2",
    };
    s.mode = ConnectionMode::Warm;
    s.concurrency = 1;
    s.requests = 10;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 11, "1 warm-up + 10");

    let truth = truth_lines(&path, samples.len()).await;
    assert_eq!(
        truth.len(),
        samples.len(),
        "one truth line per request: {truth:#?}"
    );
    let by_id: HashMap<&str, &Value> = truth
        .iter()
        .map(|t| (t["request_id"].as_str().expect("request_id"), t))
        .collect();
    let counted = counted(&samples);
    assert_eq!(counted.len(), 10);
    let mut overheads = Vec::new();
    let mut spans = Vec::new();
    for s in counted {
        assert_ok(s);
        assert_eq!(
            s.http_version.as_deref(),
            Some(want_version),
            "{transport:?}"
        );
        let id = s
            .request_id
            .as_deref()
            .expect("the sample keeps x-request-id");
        let t = by_id
            .get(id)
            .unwrap_or_else(|| panic!("no truth line for {id}: {truth:#?}"));
        assert_eq!(t["completed"], true, "{t}");
        assert_eq!(t["tokens_sent"], 5, "{t}");
        assert_eq!(s.content_chunks, 5, "{s:#?}");
        let truth_ttft = t["ttft_ms"].as_f64().expect("ttft_ms in the truth line");
        assert!(truth_ttft >= 200.0, "the emulator never sends early: {t}");
        let overhead = s.ttft_ms.expect("ttft") - truth_ttft;
        assert!(
            (0.0..=MAX_SINGLE_OVERHEAD_MS).contains(&overhead),
            "{transport:?} {id}: client TTFT {:?} ms vs emulator {truth_ttft} ms: overhead {overhead:.3} ms",
            s.ttft_ms
        );
        overheads.push(overhead);
        // The span from first to last token, seen from both ends.
        let truth_span = t["last_token_ms"].as_f64().expect("last_token_ms")
            - t["first_token_ms"].as_f64().expect("first_token_ms");
        let span = s.last_token_ms.expect("last token") - s.ttft_ms.expect("ttft");
        spans.push((span - truth_span).abs());
        assert!(
            (span - truth_span).abs() <= MAX_SINGLE_OVERHEAD_MS,
            "{transport:?} {id}: tokens spanned {span:.3} ms at the client, {truth_span:.3} ms at the emulator"
        );
    }
    // The request ids are all different: every sample matched its own line.
    let mut ids: Vec<&str> = samples
        .iter()
        .filter_map(|s| s.request_id.as_deref())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), samples.len(), "{overheads:?}");
    eprintln!("{transport:?}: TTFT overhead over the emulator's truth, ms: {overheads:.3?}");
    // One request may lose the core to another process on a loaded machine;
    // the median of ten may not.
    let median = firsttoken_record::percentile(&overheads, 50.0).expect("ten overheads");
    assert!(
        median <= MAX_OVERHEAD_MS,
        "{transport:?}: median TTFT overhead {median:.3} ms over the emulator's truth: {overheads:.3?}"
    );
    let median_span = firsttoken_record::percentile(&spans, 50.0).expect("ten spans");
    assert!(
        median_span <= MAX_OVERHEAD_MS,
        "{transport:?}: token spans differ by {median_span:.3} ms (median): {spans:.3?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A private directory under the system temp dir, unique per process.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "firsttoken-accuracy-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

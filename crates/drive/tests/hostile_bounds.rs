//! Issue 9's bounds on hostile streams, measured in this process (alone in
//! its test binary): 200 MB of `data:` lines with no event boundary keep
//! the client under 50 MB of peak RSS growth, and 50 MB of whitespace
//! costs under a second of CPU. Both end in a named failure, never `ok`.

mod common;

use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Peak resident set of this process, in KiB (Linux `VmHWM`).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU seconds (user + system) this process has used.
fn cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// A server that answers one request with `content_type` (none if empty)
/// and then `total` bytes of `pattern` repeated, written 64 KiB at a time
/// (so the server itself holds no more than that), until the client goes.
async fn flood(content_type: &'static str, pattern: &'static [u8], total: usize) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/v1/chat/completions", l.local_addr().unwrap());
    tokio::spawn(async move {
        let Ok((mut s, _)) = l.accept().await else {
            return;
        };
        let mut head = Vec::new();
        let mut b = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut b).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&b[..n]),
            }
        }
        let ct = if content_type.is_empty() {
            String::new()
        } else {
            format!("content-type: {content_type}\r\n")
        };
        let resp = format!("HTTP/1.1 200 OK\r\n{ct}connection: close\r\n\r\n");
        if s.write_all(resp.as_bytes()).await.is_err() {
            return;
        }
        let block: Vec<u8> = pattern.iter().copied().cycle().take(64 * 1024).collect();
        let mut sent = 0;
        while sent < total {
            if s.write_all(&block).await.is_err() {
                return;
            }
            sent += block.len();
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_streams_stay_within_memory_and_cpu_bounds() {
    // 200 MB of data lines and no blank line: one event that never ends.
    let before = peak_rss_kib();
    let url = flood(
        "text/event-stream",
        b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
        200 << 20,
    )
    .await;
    let mut s = spec(&url);
    s.timeouts.request = Duration::from_secs(60);
    let sample = probe(s).await.remove(0);
    let m = assert_failed(&sample, "decode");
    assert!(m.contains("bytes"), "{m}");
    match (before, peak_rss_kib()) {
        (Some(b), Some(a)) => {
            let grew = a.saturating_sub(b) / 1024;
            assert!(
                grew < 50,
                "peak RSS grew by {grew} MiB on 200 MB without event boundaries"
            );
        }
        _ => eprintln!("SKIPPED the RSS check: no VmHWM in /proc/self/status"),
    }

    // 50 MB of whitespace, with and without a content type.
    for ct in ["", "text/event-stream", "application/x-ndjson"] {
        let url = flood(ct, b" \n  \n\t \n", 50 << 20).await;
        let before = cpu_s();
        let mut s = spec(&url);
        s.timeouts.request = Duration::from_secs(60);
        let sample = probe(s).await.remove(0);
        let used = cpu_s().zip(before).map(|(a, b)| a - b);
        let e = sample
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{ct:?}: 50 MB of whitespace is not a success: {sample:#?}"));
        assert!(sample.ttft_ms.is_none(), "{ct:?}: {sample:#?}");
        eprintln!(
            "{ct:?}: {} after {used:?} s of CPU (server included)",
            e.kind.as_str()
        );
        if let Some(used) = used {
            assert!(
                used < 1.0,
                "{ct:?}: 50 MB of whitespace took {used:.2} s of CPU"
            );
        }
    }
}

//! A decompression bomb (issue 9, part 4): about 1 MB of gzip that expands
//! to 1 GiB of spaces without a newline. Decoded in bounded pieces, the SSE
//! decoder's event bound stops it after about 1 MiB of output: `decode`,
//! quickly, with the client's memory bounded. Alone in its test binary so
//! the process's peak RSS is this test's.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;

/// Peak resident set of this process, in KiB (Linux `VmHWM`).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[tokio::test]
async fn a_gzip_bomb_ends_in_decode_quickly_with_bounded_memory() {
    // One gzip member of 1 MiB of spaces, repeated 1024 times: gzip allows
    // members back to back, so this is one 1 GiB body of about 1 MB.
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&vec![b' '; 1 << 20]).expect("compress");
    let member = e.finish().expect("gzip");
    let chunks: Vec<Chunk> = (0..1024)
        .map(|_| (Duration::ZERO, member.clone()))
        .collect();
    let sent: usize = chunks.iter().map(|(_, b)| b.len()).sum();
    assert!(sent < 4 << 20, "a small body: {sent} bytes");
    let srv =
        script_server(Reply::ok("text/event-stream", chunks).header("content-encoding", "gzip"))
            .await;
    let before = peak_rss_kib();
    let mut s = spec(&srv.url());
    s.compressed = true;
    let started = Instant::now();
    let sample = probe(s).await.remove(0);
    let took = started.elapsed();
    let m = assert_failed(&sample, "decode");
    assert!(m.contains("bytes"), "the message names the size: {m}");
    assert_eq!(sample.content_encoding.as_deref(), Some("gzip"));
    assert!(
        took < Duration::from_secs(10),
        "stopped early, not after decoding 1 GiB: {took:?}"
    );
    match (before, peak_rss_kib()) {
        (Some(b), Some(a)) => {
            let grew_mib = a.saturating_sub(b) / 1024;
            assert!(
                grew_mib < 48,
                "peak RSS grew by {grew_mib} MiB decoding a 1 GiB bomb ({b} → {a} KiB)"
            );
        }
        _ => eprintln!("SKIPPED the RSS check: /proc/self/status has no VmHWM here"),
    }
}

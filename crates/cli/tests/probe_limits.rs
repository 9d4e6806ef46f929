//! `firsttoken probe` at the edges of its ranges: out-of-range durations
//! are usage errors (exit 2) before anything is sent, and the requests
//! sent never exceed the requests asked for plus one warm-up per worker.

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;

use common::{EmulatorProcess, assert_code, firsttoken, text};

/// A loopback listener that only counts: the test checks nothing connected.
fn listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    let url = format!(
        "http://{}/v1/chat/completions",
        l.local_addr().expect("addr")
    );
    (l, url)
}

#[track_caller]
fn assert_nothing_connected(l: &TcpListener) {
    match l.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the probe connected although its arguments were refused: {other:?}"),
    }
}

#[test]
fn out_of_range_timeouts_are_usage_errors_before_anything_is_sent() {
    // Regression (issue 8, defect 4): `--timeout 18446744073709551615s`
    // overflowed a deadline inside a worker, printed `requests: 0` and exited 0.
    let (l, url) = listener();
    for args in [
        &["--timeout", "18446744073709551615s"][..],
        &["--connect-timeout", "18446744073709551615s"][..],
        &["--timeout", "25h"][..],
        &["--timeout", "0s"][..],
        &["--connect-timeout", "0ms"][..],
    ] {
        let mut argv = vec!["probe", url.as_str(), "-n", "1"];
        argv.extend_from_slice(args);
        let out = firsttoken(&argv, &[]);
        assert_code(&out, 2);
        let err = text(&out.stderr);
        assert!(err.contains("timeout"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(text(&out.stdout).is_empty(), "{args:?}");
        assert_nothing_connected(&l);
    }
    // The limit itself is accepted: a day. (Nothing listens: the request fails, exit 1.)
    drop(l);
    let out = firsttoken(&["probe", &url, "-n", "1", "--timeout", "24h"], &[]);
    assert_code(&out, 1);
}

#[test]
fn a_probe_sends_no_more_than_one_warmup_per_request() {
    // Regression (issue 8, defect 3): `-c 1000 -n 1` warmed up 1000 workers
    // and sent 1,001 requests.
    let emu = EmulatorProcess::start();
    let out = firsttoken(
        &[
            "probe",
            &emu.url(),
            "--body",
            r#"{"stream":true}"#,
            "-c",
            "1000",
            "-n",
            "1",
            "--json",
        ],
        &[],
    );
    assert_code(&out, 0);
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "one warm-up and one request: {lines:#?}");
    assert_eq!(lines[0]["warmup"], true);
    assert_eq!(lines[1]["warmup"], false);
}

/// A loopback server answering each of `n` connections with a 200 carrying
/// `body` (and `content_type`, if any), then closing it.
fn close_server(content_type: Option<&'static str>, body: Vec<u8>, n: usize) -> String {
    use std::io::{Read, Write};
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/v1/chat/completions",
        l.local_addr().expect("addr")
    );
    std::thread::spawn(move || {
        for _ in 0..n {
            let Ok((mut tcp, _)) = l.accept() else { return };
            let _ = tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let mut buf = Vec::new();
            let mut tmp = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match tcp.read(&mut tmp) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => buf.extend_from_slice(&tmp[..k]),
                }
            }
            let ct = content_type
                .map(|c| format!("content-type: {c}\r\n"))
                .unwrap_or_default();
            let head = format!(
                "HTTP/1.1 200 OK\r\n{ct}content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = tcp.write_all(head.as_bytes());
            let _ = tcp.write_all(&body);
        }
    });
    url
}

#[test]
fn a_2xx_stream_without_content_exits_1_with_its_named_outcome() {
    // Regression (issue 9): each of these gave ok, exit 0 and ttft_ms null.
    let vllm = b"data: {\"object\":\"error\",\"message\":\"The engine is overloaded\",\"type\":\"ServiceUnavailable\",\"code\":503}\n\ndata: [DONE]\n\n".to_vec();
    let cases = [
        (
            Some("text/event-stream"),
            vllm,
            "stream_error",
            "The engine is overloaded",
        ),
        (None, Vec::new(), "no_content", "without a content token"),
        (
            None,
            b" \n".repeat(50_000),
            "no_content",
            "without a content token",
        ),
    ];
    for (ct, body, kind, text_part) in cases {
        let url = close_server(ct, body, 1);
        let out = firsttoken(&["probe", &url, "-n", "1", "--fresh", "--json"], &[]);
        assert_code(&out, 1);
        let line: serde_json::Value =
            serde_json::from_str(text(&out.stdout).trim()).expect("one JSON line");
        assert_eq!(line["error"]["kind"], kind, "{line}");
        assert!(
            line["error"]["message"]
                .as_str()
                .unwrap()
                .contains(text_part),
            "{line}"
        );
        assert!(line["ttft_ms"].is_null());
    }
}

#[test]
fn max_event_bytes_bounds_an_event_and_is_range_checked() {
    let (l, url) = listener();
    let out = firsttoken(&["probe", &url, "-n", "1", "--max-event-bytes", "100"], &[]);
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("--max-event-bytes"));
    assert_nothing_connected(&l);
    let event = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\ndata: [DONE]\n\n",
        "y".repeat(5000)
    );
    let url = close_server(Some("text/event-stream"), event.clone().into_bytes(), 1);
    let out = firsttoken(
        &[
            "probe",
            &url,
            "-n",
            "1",
            "--fresh",
            "--max-event-bytes",
            "2048",
        ],
        &[],
    );
    assert_code(&out, 1);
    // The per-request line (stdout) names the size and the limit.
    assert!(
        text(&out.stdout).contains("reached 5044 bytes, over the 2048-byte limit"),
        "{}",
        text(&out.stdout)
    );
    let url = close_server(Some("text/event-stream"), event.into_bytes(), 1);
    assert_code(&firsttoken(&["probe", &url, "-n", "1", "--fresh"], &[]), 0);
}

/// Issue 16, defect 3: counts without limits. Each bound is a usage error
/// naming the key (or flag) and the bound, before anything is sent; a
/// session above the confirmation threshold needs `--yes`.
#[test]
fn counts_concurrency_and_rates_have_bounds_named_in_the_error() {
    let (l, url) = listener();
    for (args, needle) in [
        (vec!["-c", "20000", "-n", "20000"], "-c"),
        (vec!["-n", "2000000"], "-n"),
    ] {
        let mut a = vec!["probe", url.as_str()];
        a.extend(args.iter().copied());
        let out = common::firsttoken(&a, &[]);
        common::assert_code(&out, 2);
        let err = common::text(&out.stderr);
        assert!(err.contains(needle), "{a:?}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let store = dir.path().join("s.db");
    for (from, to, needle) in [
        ("warm = 2", "warm = 4000000000", "phases.warm"),
        (
            "levels = [1, 2]",
            "levels = [1, 20000]",
            "phases.concurrency.levels",
        ),
        (
            "warm = 2",
            "warm = 2\nrate = { per_second = 100000, requests = 10 }",
            "phases.rate.per_second",
        ),
        ("warm = 2", "warm = 100000\nfresh = 20", "--yes"),
        (
            "warm = 2",
            "warm = 2\nrate = { per_second = 5000, requests = 10 }",
            "--yes",
        ),
    ] {
        let cfg = common::write_config(dir.path(), &base, 2);
        let text = std::fs::read_to_string(&cfg).unwrap().replacen(from, to, 1);
        let text = if to.contains("fresh = 20") {
            text.replace("fresh = 2\n", "")
        } else {
            text
        };
        std::fs::write(&cfg, &text).unwrap();
        let out = common::firsttoken(
            &["run", "-c", &cfg, "--store", store.to_str().unwrap()],
            &[],
        );
        common::assert_code(&out, 2);
        let err = common::text(&out.stderr);
        assert!(err.contains(needle), "{to}: {err}");
    }
    assert!(!store.exists(), "no session was started");
    assert_nothing_connected(&l);
}

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

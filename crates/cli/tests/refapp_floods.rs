//! `firsttoken refapp` as a child process under login and sign-up floods
//! (issue 16, defect 1): every answer is a normal one or 503 with
//! `Retry-After`, and the process's peak RSS (`VmHWM`) stays under 300 MiB.
//! Before the fix, 300 logins took it to 9.7 GB and 200 sign-ups to 4 GB.
#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::EmulatorProcess;

/// The peak resident memory of `pid`, in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM");
    kib / 1024
}

/// POST `body` to `path` on a fresh connection: (status, has a whole-second
/// `Retry-After`).
fn post(addr: &str, path: &str, body: &str) -> (u16, bool) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("response");
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {out:?}"));
    let retry_after = out.lines().any(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("retry-after:")
            .is_some_and(|v| v.trim().parse::<u64>().is_ok_and(|s| s >= 1))
    });
    (status, retry_after)
}

/// `n` posts at once, each on its own thread.
fn flood(addr: &str, path: &str, n: usize, body: impl Fn(usize) -> String) -> Vec<(u16, bool)> {
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (addr, path, body) = (addr.to_string(), path.to_string(), body(i));
            std::thread::spawn(move || post(&addr, &path, &body))
        })
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().expect("client thread"))
        .collect()
}

fn start_refapp(dir: &tempfile::TempDir) -> EmulatorProcess {
    let db = dir.path().join("refapp.db");
    EmulatorProcess::start_with(&[
        "refapp",
        "--listen",
        "127.0.0.1:0",
        "--database-url",
        db.to_str().expect("utf-8 path"),
    ])
}

fn check(answers: &[(u16, bool)], normal: &[u16]) {
    for (status, retry_after) in answers {
        if *status == 503 {
            assert!(retry_after, "503 without Retry-After");
        } else {
            assert!(normal.contains(status), "unexpected status {status}");
        }
    }
}

#[test]
fn login_and_signup_floods_stay_under_300_mib() {
    let dir = tempfile::tempdir().unwrap();
    let app = start_refapp(&dir);
    let addr = app.base.trim_start_matches("http://").to_string();
    let pid = app.child.id();

    let logins = flood(&addr, "/api/auth/login", 300, |i| {
        format!(r#"{{"email":"nobody-{i}@bench.invalid","password":"correct horse battery"}}"#)
    });
    check(&logins, &[401]);
    assert!(
        logins.iter().any(|(s, _)| *s == 401),
        "no login was checked"
    );
    let after_logins = peak_rss_mib(pid);

    let signups = flood(&addr, "/api/auth/signup", 200, |_| {
        r#"{"email":"same@bench.invalid","password":"correct horse battery"}"#.to_string()
    });
    check(&signups, &[201, 409]);
    assert_eq!(signups.iter().filter(|(s, _)| *s == 201).count(), 1);
    let after_signups = peak_rss_mib(pid);

    eprintln!(
        "refapp peak RSS: {after_logins} MiB after 300 logins, {after_signups} MiB after 200 sign-ups; \
         503s: {} logins, {} sign-ups",
        logins.iter().filter(|(s, _)| *s == 503).count(),
        signups.iter().filter(|(s, _)| *s == 503).count()
    );
    assert!(
        after_logins < 300,
        "peak RSS {after_logins} MiB after the login flood"
    );
    assert!(
        after_signups < 300,
        "peak RSS {after_signups} MiB after the sign-up flood"
    );
}

#[test]
fn bad_bounds_exit_2_naming_the_setting() {
    for (args, needle) in [
        (&["--hash-concurrency", "0"][..], "hash_concurrency"),
        (&["--max-connections", "0"][..], "max_connections"),
        (
            &["--header-read-timeout-ms", "0"][..],
            "header_read_timeout",
        ),
        (
            &[
                "--upstream-timeout-ms",
                "200000",
                "--idle-timeout-ms",
                "100000",
            ][..],
            "idle_timeout",
        ),
    ] {
        let out = common::firsttoken(
            &[&["refapp", "--listen", "127.0.0.1:0"][..], args].concat(),
            &[],
        );
        common::assert_code(&out, 2);
        let err = common::text(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

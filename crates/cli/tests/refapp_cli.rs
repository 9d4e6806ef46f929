//! `firsttoken refapp` as a user runs it: the first stdout line names the
//! address, the app answers, SIGTERM stops it cleanly, bad settings exit 2.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("response");
    out
}

#[cfg(unix)]
#[test]
fn serves_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("refapp.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_firsttoken"))
        .args(["refapp", "--listen", "127.0.0.1:0", "--database-url"])
        .arg(&db)
        .args(["--version-label", "cli-test"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .expect("first line");
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .to_string();

    let health = get(&addr, "/health");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let version = get(&addr, "/version");
    assert!(version.contains("\"version\":\"cli-test\""), "{version}");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("refapp did not stop within 10 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "{code:?}");
    assert!(db.exists());
}

#[test]
fn bad_settings_exit_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--database-url".into(),
                file.join("x.db").display().to_string(),
            ],
            "cannot open the database",
        ),
        (
            vec![
                "--database-url".into(),
                "postgres://u@127.0.0.1:1/db".into(),
                "--blocking-db".into(),
            ],
            "blocking_db",
        ),
        (
            vec![
                "--upstream-key-env".into(),
                "FIRSTTOKEN_TEST_SURELY_UNSET".into(),
            ],
            "FIRSTTOKEN_TEST_SURELY_UNSET",
        ),
        (
            vec!["--upstream-url".into(), "not a url".into()],
            "upstream_url",
        ),
    ];
    for (args, needle) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_firsttoken"))
            .args(["refapp", "--listen", "127.0.0.1:0"])
            .args(&args)
            .env_remove("FIRSTTOKEN_TEST_SURELY_UNSET")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// The remote-database and TLS-edge settings reach the app from the command
/// line: it serves HTTPS with a CA it writes for clients, and names its
/// known-bad database modes.
#[test]
fn tls_edge_and_database_model_flags_reach_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let mut child = Command::new(env!("CARGO_BIN_EXE_firsttoken"))
        .args(["refapp", "--listen", "127.0.0.1:0", "--database-url"])
        .arg(dir.path().join("refapp.db"))
        .args(["--tls-self-signed", "--tls-ca-out"])
        .arg(&ca)
        .args([
            "--db-rtt-ms",
            "5",
            "--blocking-db",
            "--db-roundtrips",
            "3",
            "--db-faults",
            "chat",
            "--db-connect-per-call",
            "--worker-threads",
            "1",
            "--router",
            "corpus",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .expect("first line");
    let addr = first
        .trim()
        .strip_prefix("listening on https://")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .to_string();
    let port = addr.rsplit(':').next().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_firsttoken"))
        .args(["probe", &format!("https://localhost:{port}/health")])
        .args(["--resolve", &format!("localhost:{port}:127.0.0.1")])
        .arg("--cacert")
        .arg(&ca)
        .args(["--format", "text", "-n", "1", "--json", "--quiet"])
        .output()
        .expect("probe runs");
    let _ = child.kill();
    let err = {
        let mut e = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut e);
        e
    };
    let _ = child.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(s["http_version"], "HTTP/2", "{s}");
    assert_eq!(s["tls"]["handshake"], "full", "{s}");
    for mode in [
        "blocking-db",
        "db-roundtrips 3",
        "db-connect-per-call",
        "chat path only",
    ] {
        assert!(err.contains(mode), "{mode} missing from: {err}");
    }
}

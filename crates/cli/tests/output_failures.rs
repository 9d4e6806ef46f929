//! Issue 29, items 5, 16 and 17: output that cannot be written is a
//! failure (exit 1 with a message), never a silent success; `probe -q`
//! prints nothing per request; `shape` listens on loopback only unless told;
//! (item 11) no thread to spare is an error with a message, not a panic.
//!
//! A full disk is `/dev/full` (every write fails with ENOSPC), on Linux.

mod common;

use std::process::{Command, Stdio};

use common::{EmulatorProcess, assert_code, firsttoken, text, write_config};

/// `firsttoken args` with stdout writing to `/dev/full`: exit code and stderr.
fn to_full_disk(args: &[&str]) -> (Option<i32>, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full (Linux)");
    let out = Command::new(env!("CARGO_BIN_EXE_firsttoken"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn output_that_cannot_be_written_exits_1_and_says_so() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 4);
    let store = dir.path().join("s.db").display().to_string();
    assert_code(
        &firsttoken(&["run", "-c", &cfg, "--store", &store, "-q"], &[]),
        0,
    );
    let url = emu.url();
    for args in [
        vec![
            "probe",
            url.as_str(),
            "--body",
            r#"{"stream":true}"#,
            "-n",
            "3",
            "--json",
        ],
        vec!["report", "--store", store.as_str()],
        vec!["report", "--store", store.as_str(), "--format", "json"],
        vec!["sessions", "--store", store.as_str()],
    ] {
        let (code, err) = to_full_disk(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(
            err.contains("cannot write") && err.contains("No space left"),
            "{args:?} says what failed: {err}"
        );
    }
}

#[test]
fn probe_quiet_prints_no_line_per_request() {
    let emu = EmulatorProcess::start();
    let body = r#"{"stream":true}"#;
    let out = firsttoken(&["probe", &emu.url(), "--body", body, "-n", "3", "-q"], &[]);
    assert_code(&out, 0);
    assert_eq!(text(&out.stdout), "", "nothing on stdout");
    // --json's lines are the output, -q or not.
    let out = firsttoken(
        &[
            "probe",
            &emu.url(),
            "--body",
            body,
            "-n",
            "3",
            "-q",
            "--json",
        ],
        &[],
    );
    assert_code(&out, 0);
    // The three requests and the warm-up, one JSON line each.
    let lines = text(&out.stdout);
    assert!(lines.lines().count() >= 3, "{lines}");
    for l in lines.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
    }
}

#[test]
fn shape_listens_on_loopback_unless_told_otherwise() {
    let out = firsttoken(
        &[
            "shape",
            "--listen",
            "0.0.0.0:0",
            "--upstream",
            "127.0.0.1:9",
        ],
        &[],
    );
    assert_code(&out, 2);
    let err = text(&out.stderr);
    assert!(
        err.contains("not a loopback address") && err.contains("--allow-public"),
        "{err}"
    );
}

/// Issue 29, item 11: with `ulimit -u 1` the runtime's worker threads
/// cannot start; that is an error naming the limit, exit 1 (the client
/// broke), never tokio's panic (exit 101). Root ignores the limit, so as
/// root the command runs as `nobody`.
#[test]
fn no_thread_to_spare_is_an_error_not_a_panic() {
    let bin = env!("CARGO_BIN_EXE_firsttoken");
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| text(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let as_user = |script: &str| {
        let mut c = if is_root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            c.arg("bash");
            c
        } else {
            Command::new("bash")
        };
        c.args(["-c", script]).output().expect("run bash")
    };
    if !as_user(&format!("{bin} --version")).status.success() {
        eprintln!(
            "SKIPPED no_thread_to_spare_is_an_error_not_a_panic: cannot run firsttoken as nobody"
        );
        return;
    }
    let out = as_user(&format!(
        "ulimit -u 1; exec {bin} sessions --store /nonexistent/store.db"
    ));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot start the async runtime") && err.contains("ulimit -u"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

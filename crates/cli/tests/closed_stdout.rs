//! A reader that goes away (`firsttoken … | head`, `| true`) ends the command
//! quietly with its normal exit code; `println!` used to panic (exit 101).

use std::process::{Command, Stdio};

/// Run `firsttoken args` with its stdout a pipe whose read end is already
/// closed; returns the exit code and stderr.
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_firsttoken"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_is_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db").display().to_string();
    // `sessions` reads an existing store (it never creates one).
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(firsttoken_record::Store::open(&store))
        .unwrap();
    let cfg = dir.path().join("ft.toml").display().to_string();
    for args in [
        vec!["sessions", "--store", store.as_str()],
        vec!["init", cfg.as_str()],
        vec!["emulate", "--print-profile"],
    ] {
        let (code, err) = with_closed_stdout(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

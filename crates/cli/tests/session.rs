//! Sessions end to end: `firsttoken init`, `run`, `sessions`, `export`,
//! `import` against the emulator as a child process, on SQLite and (when
//! `DATABASE_URL` is set) PostgreSQL; Ctrl-C and kill -9 mid-session.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{EmulatorProcess, assert_code, firsttoken, session_ids, text, write_config};

fn export_lines(store: &str, session: &str) -> Vec<serde_json::Value> {
    let out = firsttoken(
        &[
            "export",
            "--store",
            store,
            "--session",
            session,
            "--format",
            "jsonl",
        ],
        &[],
    );
    assert_code(&out, 0);
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// The only session id in the store.
fn only_session(store: &str) -> String {
    let ids = session_ids(store);
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

#[test]
fn init_writes_a_config_that_parses_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("firsttoken.toml");
    let p = path.to_str().unwrap();
    assert_code(&firsttoken(&["init", p], &[]), 0);
    let again = firsttoken(&["init", p], &[]);
    assert_code(&again, 2);
    assert!(
        text(&again.stderr).contains("--force"),
        "{}",
        text(&again.stderr)
    );
    // The written config parses: `run` gets past it and stops at the unreachable app.
    let out = firsttoken(
        &[
            "run",
            "-c",
            p,
            "--store",
            dir.path().join("s.db").to_str().unwrap(),
        ],
        &[],
    );
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("cannot reach"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_session_runs_every_phase_and_is_stored_and_exported() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 4);
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &[
            "run",
            "-c",
            &cfg,
            "--store",
            &store,
            "--tag",
            "case=complete",
        ],
        &[],
    );
    assert_code(&out, 0);
    let summary = text(&out.stdout);
    assert!(
        summary.contains("complete")
            && summary.contains("direct")
            && summary.contains("c=2 · chat"),
        "{summary}"
    );
    let id = only_session(&store);
    let rows = export_lines(&store, &id);
    let session = &rows[0];
    assert_eq!(session["status"]["state"], "complete", "{session}");
    assert_eq!(session["labels"]["network"], "loopback-test");
    assert_eq!(session["labels"]["tags"]["case"], "complete");
    let samples: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["schema"] == "firsttoken.sample_row.v1")
        .collect();
    let counted = |phase: &str| {
        samples
            .iter()
            .filter(|r| r["phase"] == phase && r["sample"]["warmup"] == false)
            .count()
    };
    assert_eq!(
        (
            counted("ping"),
            counted("warm"),
            counted("fresh"),
            counted("direct"),
            counted("concurrency")
        ),
        (2, 4, 2, 2, 4)
    );
    assert!(samples.iter().all(|r| r["provenance"] == "emulated"));
    assert!(
        samples
            .iter()
            .filter(|r| r["phase"] == "fresh")
            .all(|r| r["sample"]["connection"] == "fresh")
    );
    let strategies: Vec<&str> = samples
        .iter()
        .filter_map(|r| r["strategy"].as_str())
        .collect();
    assert!(
        strategies.contains(&"default") && strategies.contains(&"ignore-one"),
        "{strategies:?}"
    );
    assert!(
        samples
            .iter()
            .filter(|r| r["phase"] == "direct")
            .all(|r| r["sample"]["cost_usd"].as_f64().is_some())
    );
    // CSV export has a header and one line per stored sample.
    let csv = firsttoken(
        &[
            "export",
            "--store",
            &store,
            "--session",
            &id,
            "--format",
            "csv",
        ],
        &[],
    );
    assert_code(&csv, 0);
    assert_eq!(text(&csv.stdout).lines().count(), samples.len() + 1);
    // Import into a second store: same numbers, provenance imported.
    let file = dir.path().join("export.jsonl");
    assert_code(
        &firsttoken(
            &[
                "export",
                "--store",
                &store,
                "--session",
                &id,
                "--out",
                file.to_str().unwrap(),
            ],
            &[],
        ),
        0,
    );
    let store2 = dir.path().join("s2.db").display().to_string();
    assert_code(
        &firsttoken(&["import", "--store", &store2, file.to_str().unwrap()], &[]),
        0,
    );
    let id2 = only_session(&store2);
    let imported = export_lines(&store2, &id2);
    let rows2: Vec<&serde_json::Value> = imported
        .iter()
        .filter(|r| r["schema"] == "firsttoken.sample_row.v1")
        .collect();
    assert_eq!(rows2.len(), samples.len());
    assert!(rows2.iter().all(|r| r["provenance"] == "imported"));
    assert_eq!(
        rows2[0]["sample"]["ttft_ms"],
        samples[0]["sample"]["ttft_ms"]
    );
}

#[test]
fn config_errors_name_the_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), "http://127.0.0.1:9", 4);
    let text_cfg = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("warm = 4", "warm = \"lots\"");
    std::fs::write(&cfg, &text_cfg).unwrap();
    let line = text_cfg
        .lines()
        .position(|l| l.starts_with("warm ="))
        .unwrap()
        + 1;
    let out = firsttoken(
        &[
            "run",
            "-c",
            &cfg,
            "--store",
            dir.path().join("s.db").to_str().unwrap(),
        ],
        &[],
    );
    assert_code(&out, 2);
    let err = text(&out.stderr);
    assert!(err.contains(&format!("ft.toml:{line}:")), "{err}");
    let missing = firsttoken(
        &["run", "-c", dir.path().join("nope.toml").to_str().unwrap()],
        &[],
    );
    assert_code(&missing, 2);
    assert!(
        text(&missing.stderr).contains("firsttoken init"),
        "{}",
        text(&missing.stderr)
    );
}

/// Regression (issue 8, defect 4): `rate = { per_second = 1e-300 }` panicked
/// mid-session and a timeout of u64::MAX seconds exited 101 leaving the
/// session `running`. Both are usage errors before anything is sent or stored.
#[test]
fn out_of_range_values_are_usage_errors_before_anything_is_sent() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db").display().to_string();
    for (from, to) in [
        (
            "warm = 2",
            "warm = 2\nrate = { per_second = 1e-300, requests = 3 }",
        ),
        (
            "emulated = true",
            "emulated = true\ntimeout = \"18446744073709551615s\"",
        ),
        ("emulated = true", "emulated = true\ntimeout = \"200000s\""),
    ] {
        let cfg = write_config(dir.path(), &emu.base, 2);
        let text_cfg = std::fs::read_to_string(&cfg).unwrap().replace(from, to);
        std::fs::write(&cfg, &text_cfg).unwrap();
        let out = firsttoken(&["run", "-c", &cfg, "--store", &store], &[]);
        assert_code(&out, 2);
        let err = text(&out.stderr);
        assert!(err.contains("rate") || err.contains("timeout"), "{err}");
    }
    assert!(
        !std::path::Path::new(&store).exists() || session_ids(&store).is_empty(),
        "no session was created for an invalid config"
    );
}

#[test]
fn an_unwritable_store_is_refused_before_any_request() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 2);
    let out = firsttoken(
        &["run", "-c", &cfg, "--store", "/nonexistent-dir/sub/s.db"],
        &[],
    );
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("nonexistent-dir"),
        "{}",
        text(&out.stderr)
    );
}

/// Start `firsttoken run` as a child, wait until it has stored samples, then signal it.
fn interrupt(signal: &str) -> (tempfile::TempDir, String, std::process::ExitStatus) {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 400);
    let store = dir.path().join("s.db").display().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_firsttoken"))
        .args(["run", "-c", &cfg, "--store", &store, "-q"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start firsttoken run");
    // Some stored and most not (400 warm requests of ~40 ms each to go).
    common::wait_for_samples(&mut child, &store, 5);
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "firsttoken run did not stop after {signal}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (dir, store, status)
}

#[test]
fn ctrl_c_stops_cleanly_keeps_samples_and_marks_the_session_partial() {
    let (_dir, store, status) = interrupt("-INT");
    assert_eq!(status.code(), Some(1), "an interrupted session exits 1");
    let id = only_session(&store);
    let rows = export_lines(&store, &id);
    assert_eq!(rows[0]["status"]["state"], "partial", "{}", rows[0]);
    assert!(
        rows[0]["status"]["reason"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    let stored = rows
        .iter()
        .filter(|r| r["schema"] == "firsttoken.sample_row.v1")
        .count();
    assert!((5..400).contains(&stored), "{stored} samples stored");
}

#[test]
fn kill_9_loses_nothing_committed_and_the_next_open_marks_it_partial() {
    let (_dir, store, status) = interrupt("-KILL");
    assert_eq!(status.code(), None, "killed by a signal");
    let id = only_session(&store);
    let rows = export_lines(&store, &id);
    assert_eq!(rows[0]["status"]["state"], "partial", "{}", rows[0]);
    let stored = rows
        .iter()
        .filter(|r| r["schema"] == "firsttoken.sample_row.v1")
        .count();
    assert!(stored >= 5, "{stored} samples survived");
    // Every stored sample is whole: it has its phase and its stamps.
    for r in rows
        .iter()
        .filter(|r| r["schema"] == "firsttoken.sample_row.v1")
    {
        assert!(
            r["phase"].is_string() && r["sample"]["e2e_ms"].is_number(),
            "{r}"
        );
    }
}

#[test]
fn a_budget_stops_the_session_before_it_is_exceeded() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 4);
    let store = dir.path().join("s.db").display().to_string();
    // Every request costs a few millionths of a dollar; one millionth stops it early.
    let out = firsttoken(
        &[
            "run",
            "-c",
            &cfg,
            "--store",
            &store,
            "--budget-usd",
            "0.000001",
        ],
        &[],
    );
    assert_code(&out, 1);
    let rows = export_lines(&store, &only_session(&store));
    assert!(
        rows[0]["status"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("budget"),
        "{}",
        rows[0]
    );
}

#[test]
fn postgres_store_holds_a_session() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("SKIPPED: DATABASE_URL not set (PostgreSQL session test)");
        return;
    };
    let schema = format!("ft_cli_{}", std::process::id());
    let psql = |sql: &str| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect to DATABASE_URL");
            tokio::spawn(conn);
            client.batch_execute(sql).await.expect("schema statement");
        });
    };
    psql(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"));
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 3);
    let out = firsttoken(&["run", "-c", &cfg, "--store", &store], &[]);
    let listed = firsttoken(&["sessions", "--store", &store], &[]);
    psql(&format!("DROP SCHEMA {schema} CASCADE"));
    assert_code(&out, 0);
    assert_code(&listed, 0);
    assert!(
        text(&listed.stdout).contains("complete"),
        "{}",
        text(&listed.stdout)
    );
}

/// Issue 15: `run --plan` says what the counts support before it starts,
/// then runs the session as usual.
#[test]
fn run_plan_prints_what_the_counts_support_then_runs() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 4);
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(&["run", "-c", &cfg, "--store", &store, "--plan"], &[]);
    assert_code(&out, 0);
    let t = text(&out.stdout);
    let plan_at = t.find("percentiles shown").expect("the claims table");
    let summary_at = t.find("complete").expect("the session's summary");
    assert!(plan_at < summary_at, "the plan comes first: {t}");
    // Four warm requests: the median is shown, the p90 is not.
    assert!(t.contains("p90 needs 10"), "{t}");
    // No pilot yet: no time or cost to estimate from.
    assert!(!t.contains("Estimated cost"), "{t}");
    // With the first session as the pilot, the priced direct requests give
    // a cost, and every row a time.
    let again = firsttoken(&["run", "-c", &cfg, "--store", &store, "--plan"], &[]);
    assert_code(&again, 0);
    let t = text(&again.stdout);
    assert!(t.contains("Estimated cost: $"), "{t}");
    assert!(t.contains("Estimated duration: "), "{t}");
    assert_eq!(session_ids(&store).len(), 2);
}

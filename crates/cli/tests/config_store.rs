//! Issue 25: `[session] store` is honoured by every command that takes
//! `-c` (`report`, `sessions`, `cleanup`, `plan`, as `run` honours it):
//! `--store` wins, else the config's store, else firsttoken.db; without
//! `-c`, ./firsttoken.toml is read when it exists. And `init` writes
//! `emulated = false` unless told the target is the emulator.

mod common;

use std::path::Path;
use std::process::Output;

use common::{EmulatorProcess, assert_code, config, text};

/// `firsttoken ARGS` in `dir`, with no store named by the environment.
fn in_dir(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = assert_cmd::Command::cargo_bin("firsttoken").unwrap();
    cmd.args(args)
        .current_dir(dir)
        .env_remove("FIRSTTOKEN_STORE")
        .timeout(common::COMMAND_TIMEOUT);
    cmd.output().unwrap()
}

#[test]
fn every_command_that_takes_c_reads_the_configs_store() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("from-config.db").display().to_string();
    let cfg = config(&emu.base, 12).replacen(
        "[session]\n",
        &format!("[session]\nstore = '{store}'\n"),
        1,
    );
    let cfg_path = d.join("ft.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();
    let c = cfg_path.to_str().unwrap();
    let run = in_dir(d, &["run", "-c", c]);
    assert_code(&run, 0);
    assert!(Path::new(&store).is_file(), "run wrote the config's store");
    assert!(!d.join("firsttoken.db").exists());

    // sessions: lists the session of the config's store.
    let listed = in_dir(d, &["sessions", "-c", c]);
    assert_code(&listed, 0);
    let out = text(&listed.stdout);
    let id = out
        .split(|ch: char| ch.is_whitespace() || ch == '│')
        .find(|w| w.len() > 16 && w.contains("Z-"))
        .unwrap_or_else(|| panic!("a session listed: {out}"))
        .to_string();
    // report: reads it.
    let report = in_dir(d, &["report", "-c", c, "--format", "json"]);
    assert_code(&report, 0);
    assert!(
        text(&report.stdout).contains(&id),
        "{}",
        text(&report.stdout)
    );
    // cleanup: finds the session there (it created no accounts).
    let cleanup = in_dir(d, &["cleanup", "--session", &id, "-c", c]);
    assert_code(&cleanup, 0);
    assert!(
        text(&cleanup.stdout).contains(&id),
        "{}",
        text(&cleanup.stdout)
    );
    // plan: plans from its warm requests.
    let plan = in_dir(d, &["plan", "-c", c, "--detect", "100ms"]);
    assert_code(&plan, 0);
    assert!(
        text(&plan.stdout).contains(&format!("from session {id}")),
        "{}",
        text(&plan.stdout)
    );
    assert!(!d.join("firsttoken.db").exists(), "no command fell back");

    // --store wins over the config.
    let other = d.join("other.db").display().to_string();
    for args in [
        vec!["sessions", "-c", c, "--store", &other],
        vec!["report", "-c", c, "--store", &other],
        vec!["plan", "-c", c, "--store", &other, "--detect", "100ms"],
    ] {
        let out = in_dir(d, &args);
        assert_code(&out, 2);
        assert!(
            text(&out.stderr).contains("other.db"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = in_dir(
        d,
        &["cleanup", "--session", &id, "-c", c, "--store", &other],
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains(&format!("no session {id:?} in")),
        "{}",
        text(&out.stderr)
    );

    // Without -c, ./firsttoken.toml is read as `run` reads it.
    std::fs::copy(&cfg_path, d.join("firsttoken.toml")).unwrap();
    let listed = in_dir(d, &["sessions"]);
    assert_code(&listed, 0);
    assert!(text(&listed.stdout).contains(&id));
    let report = in_dir(d, &["report", "--format", "json"]);
    assert_code(&report, 0);
    let cleanup = in_dir(d, &["cleanup", "--session", &id]);
    assert_code(&cleanup, 0);
    // A config named but unreadable is an error saying so.
    let out = in_dir(d, &["sessions", "-c", "missing.toml"]);
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("missing.toml"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn init_writes_emulated_false_unless_the_target_is_the_emulator() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let label = |args: &[&str], file: &str| {
        let out = in_dir(d, args);
        assert_code(&out, 0);
        let written = std::fs::read_to_string(d.join(file)).unwrap();
        // As `run` reads it.
        let cfg = firsttoken_plan::config::Config::parse(&written, file).unwrap();
        (written, cfg.session.emulated)
    };
    // No terminal to ask: a real app's samples are `measured`.
    let said = in_dir(d, &["init", "said.toml"]);
    assert!(
        text(&said.stdout).contains("samples are labelled measured"),
        "{}",
        text(&said.stdout)
    );
    let (written, emulated) = label(&["init", "real.toml"], "real.toml");
    assert!(written.contains("\nemulated = false\n"), "{written}");
    assert!(!written.contains("\nemulated = true\n"));
    assert!(!emulated);
    let (written, emulated) = label(&["init", "--emulated", "emu.toml"], "emu.toml");
    assert!(written.contains("\nemulated = true\n"), "{written}");
    assert!(emulated);
}

//! Counts that add up (issue 24, defect 6): `run` announced "planned: 362
//! requests, warm-ups included" and sent 211 — every warm request counted a
//! warm-up, though only the first request on each connection sends one.
//! Here the announced count is checked against what the emulator's wire
//! truth log received, request by request.

mod common;

use std::time::{Duration, Instant};

use common::{EmulatorProcess, assert_code, firsttoken, text};

fn config(base: &str) -> String {
    format!(
        r#"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "{base}"

[[app.paths]]
name = "chat"
path = "/v1/chat/completions"
body = '{{"model":"m","stream":true,"messages":[{{"role":"user","content":"{{prompt}}"}}]}}'

[[app.paths]]
name = "docs"
path = "/v1/chat/completions?docs"
body = '{{"model":"m","stream":true,"messages":[{{"role":"user","content":"{{prompt}}"}}]}}'

[direct]
url = "{base}/v1/chat/completions"
model = "emulated-model"
[[direct.strategies]]
name = "default"
[[direct.strategies]]
name = "other"
extra = {{ provider = {{ ignore = ["quickstart"] }} }}

[prompts]
list = ["hello", "why"]

[phases]
warm = 10
fresh = 3
direct = 4
cold = {{ count = 2, idle_gap = "50ms" }}
concurrency = {{ levels = [1, 3], requests = 6 }}
rate = {{ per_second = 100, requests = 4 }}
"#
    )
}

fn lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.lines().filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0)
}

#[test]
fn the_planned_count_is_what_the_provider_receives() {
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.jsonl");
    let emu = EmulatorProcess::start_with(&[
        "emulate",
        "--listen",
        "127.0.0.1:0",
        "--ttft-ms",
        "5",
        "--itl-ms",
        "1",
        "--tokens",
        "2",
        "--truth-log",
        truth.to_str().unwrap(),
    ]);
    let cfg = dir.path().join("ft.toml");
    std::fs::write(&cfg, config(&emu.base)).unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store],
        &[],
    );
    assert_code(&out, 0);
    let err = text(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("planned: "))
        .unwrap_or_else(|| panic!("{err}"));
    let planned: usize = line["planned: ".len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    // Every request the session sent is stored, warm-ups included.
    let id = common::session_ids(&store)[0].clone();
    let exp = firsttoken(&["export", "--store", &store, "--session", &id], &[]);
    assert_code(&exp, 0);
    let stored = text(&exp.stdout).lines().count() - 1;
    // The emulator logs each request as its stream ends, from its own
    // thread: wait (bounded) until it has logged what was stored.
    let deadline = Instant::now() + Duration::from_secs(20);
    while lines(&truth) < stored && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let received = lines(&truth);
    assert_eq!(
        received, stored,
        "the provider received every stored request"
    );
    assert_eq!(
        planned, received,
        "the announced count is what was sent: {line}\n{err}"
    );
    assert!(line.contains(" measured, "), "{line}");
}

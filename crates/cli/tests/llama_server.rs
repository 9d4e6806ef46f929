//! Issue 28 against a real inference engine: llama.cpp's `llama-server`
//! (built from the pinned PyPI sdist by `.ci/llama-server`) serving a tiny
//! randomly initialised Llama written on the spot
//! (`tests/fixtures/llama/make_model.py`), on loopback, with one slot
//! (`--parallel 1`). One session measures warm requests and bursts of 1
//! and 5; the report must
//!
//! - join the engine's own `timings` to every request (TTFT = prefill +
//!   the rest, the rest never negative and small when nothing queues);
//! - attribute the wall at c=5 to the time outside prefill (a queue for
//!   the one slot) while prefill stays flat;
//! - find that the warm requests were not warm: llama-server closes the
//!   connection after each streamed response while its `Keep-Alive` header
//!   says it keeps it, and leave them out of the warm figures;
//! - read the engine's own `/metrics` (`--metrics`) before and after the
//!   session (`[engine] metrics_url`): its counter of generated tokens
//!   gains exactly the tokens the session's streams said they generated.
//!
//! The binary and the model are found by `FIRSTTOKEN_TEST_LLAMA_SERVER`
//! and `FIRSTTOKEN_TEST_LLAMA_MODEL` (`.ci/run` sets both); outside CI the
//! test skips loudly without them, in CI it fails.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::edge::free_port;
use common::{assert_code, text};
use serde_json::Value;

/// `llama-server` as a child process, killed when dropped.
struct Llama {
    child: Child,
    port: u16,
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /health` on loopback: the status, or `None` while nothing answers.
fn health(port: u16) -> Option<u16> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

impl Llama {
    /// One slot, on 127.0.0.1, ready (its `/health` says 200: the model
    /// is loaded) within 60 s.
    fn start(bin: &Path, model: &Path) -> Llama {
        let port = free_port();
        let child = Command::new(bin)
            .args(["-m", model.to_str().expect("UTF-8 model path")])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args([
                "--parallel",
                "1",
                "--ctx-size",
                "2048",
                "--no-webui",
                "--metrics",
            ])
            // One compute thread: the other core is left to the HTTP
            // threads and firsttoken, so their work does not stretch the
            // prefill of a shared 2-core machine.
            .args(["--threads", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let mut server = Llama { child, port };
        let until = Instant::now() + Duration::from_secs(60);
        while health(port) != Some(200) {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("llama-server exited before it was ready: {status}");
            }
            assert!(Instant::now() < until, "llama-server not ready in 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

fn config(port: u16) -> String {
    format!(
        r#"
[session]
network = "loopback"
code_version = "llama-server-11434"
seed = 28
timeout = "30s"

[app]
base_url = "http://127.0.0.1:{port}"

[[app.paths]]
name = "chat"
path = "/v1/chat/completions"
# No prompt-cache reuse between identical prompts (every request prefills),
# and no early end: a random model may sample its end token first.
body = '{{"model": "tiny", "stream": true, "max_tokens": 96, "ignore_eos": true, "cache_prompt": false, "messages": [{{"role": "user", "content": "{{prompt}}"}}]}}'
format = "openai-chat"

# Prompts of about 80 tokens: a prefill long enough to read against the
# noise of a shared machine.
[prompts]
list = [
  "{long_a}",
  "{long_b}",
]

[phases]
warm = 12
concurrency = {{ levels = [1, 5], requests = 30 }}

[engine]
metrics_url = "http://127.0.0.1:{port}/metrics"
"#,
        long_a = "how long is the queue for the one slot when five users ask at once ".repeat(4),
        long_b = "where did the time go between the request and the first token today ".repeat(4),
    )
}

/// `firsttoken ARGS…` with a deadline long enough for a CPU engine.
fn firsttoken(args: &[&str]) -> std::process::Output {
    let mut cmd = assert_cmd::Command::cargo_bin("firsttoken").expect("the firsttoken binary");
    cmd.args(args).timeout(Duration::from_secs(300));
    cmd.output().expect("firsttoken ran")
}

fn num(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer} in {v}"))
}

#[test]
fn the_engines_clock_is_joined_the_queue_found_and_warm_connections_checked() {
    let Some((bin, model)) = common::llama_server("llama_server") else {
        return;
    };
    let llama = Llama::start(&bin, &model);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ft.toml");
    std::fs::write(&cfg, config(llama.port)).unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let run = firsttoken(&["run", "-c", cfg.to_str().unwrap(), "--store", &store]);
    assert_code(&run, 0);

    let report = firsttoken(&["report", "--store", &store, "--format", "json"]);
    assert_code(&report, 0);
    let j: Value = serde_json::from_slice(&report.stdout).unwrap();
    // Valid against the published schema, the engine's figures included.
    common::assert_report_schema(&j);
    let engine = &j["analysis"]["engine"];

    // Every successful request carried the engine's timing, and the rest
    // (TTFT − prefill) is never negative.
    let splits = engine["splits"].as_array().expect("engine splits");
    let by_level = |k: u64| {
        splits
            .iter()
            .find(|s| s["concurrency"].as_u64() == Some(k))
            .unwrap_or_else(|| panic!("no split at c={k}: {engine}"))
    };
    for s in splits {
        assert_eq!(s["timed_by_engine"], s["requests"], "{s}");
        assert!(num(s, "/rest/point") >= 0.0, "{s}");
    }
    let c1 = by_level(1);
    assert_eq!(c1["timed_by_engine"], 30);
    // Nothing queues at c=1: the rest is HTTP, templating and tokenization
    // on loopback, a few ms (generous bound: a busy CI machine).
    let rest_c1 = num(c1, "/rest/point");
    assert!(rest_c1 < 100.0, "rest at c=1: {rest_c1} ms");

    // The wall at c=5 is the queue for the one slot.
    let wall = &engine["walls"][0];
    assert_eq!(wall["baseline"], "c=1", "{wall}");
    let top = &wall["levels"][0];
    assert_eq!(top["concurrency"], 5);
    assert_eq!(top["rest_change"]["direction"], "increase", "{wall}");
    assert!(num(top, "/rest_change/estimate/ci/lower") > 0.0, "{wall}");
    assert_eq!(wall["reason"], "waited_for_worker", "{wall}");

    // Warm requests were not warm: llama-server closed each connection.
    let r = &engine["reconnections"][0];
    let (warm, fresh) = (
        r["warm"].as_u64().unwrap(),
        r["new_connections"].as_u64().unwrap(),
    );
    assert_eq!(warm, 12, "{r}");
    assert!(
        fresh * 2 >= warm,
        "most warm requests needed a new connection: {r}"
    );
    // …and no warm figure counts them.
    let warm_in_groups: u64 = j["analysis"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["label"]["phase"] == "warm")
        .map(|g| g["pooled"]["n"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(warm_in_groups, warm - fresh, "{}", j["analysis"]["groups"]);

    // Both open the report as findings: the queue ranked by the wait it
    // explains, the reconnections (a count) after it.
    let kinds: Vec<&str> = j["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"engine_queue"), "{kinds:?}");
    assert!(kinds.contains(&"reconnections"), "{kinds:?}");

    // The engine's own counters, read before and after the session: the
    // tokens it generated in between are the ones every stream's timings
    // said it generated (warm-ups included: the engine served them too).
    let m = &j["analysis"]["engine_metrics"]["sessions"][0];
    assert!(m["missing"].is_null(), "{m}");
    let gain = |name: &str| {
        m["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map_or(0.0, |c| num(c, "/delta"))
    };
    let session = j["sessions"][0]["id"].as_str().unwrap();
    let export = firsttoken(&["export", "--store", &store, "--session", session]);
    assert_code(&export, 0);
    let (mut predicted, mut streams) = (0.0, 0);
    for line in text(&export.stdout).lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        if let Some(n) = row
            .pointer("/sample/engine/predicted_n")
            .and_then(Value::as_f64)
        {
            predicted += n;
            streams += 1;
        }
    }
    assert!(streams >= 72, "{streams} streams carried timings");
    assert_eq!(gain("llamacpp:tokens_predicted_total"), predicted, "{m}");

    // The words every format shows.
    let out = firsttoken(&["report", "--store", &store]);
    assert_code(&out, 0);
    let t = text(&out.stdout);
    // The section, for the record (docs/SERVER-TIME.md quotes a run).
    let from = t
        .find("The engine's own clock")
        .expect("the engine section");
    eprintln!(
        "{}",
        &t[from..t[from..].find("\n\n\n").map_or(t.len(), |e| from + e)]
    );
    assert!(
        t.contains(&format!(
            "warm requests used new connections: {fresh} of {warm}"
        )),
        "{t}"
    );
    assert!(t.contains("requests queued for the engine (a slot)"), "{t}");
    assert!(t.contains("time outside prefill rose by +"), "{t}");
    assert!(t.contains("engine prefill"), "{t}");
    assert!(t.contains("The engine's own metrics"), "{t}");
    assert!(t.contains("llamacpp:tokens_predicted_total"), "{t}");
    drop(llama);
}

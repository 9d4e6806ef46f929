//! Issue 26 with real third-party components: the Responses API and tool
//! calls measured through LiteLLM's proxy (PyPI `litellm[proxy]`, pinned)
//! in front of firsttoken's emulator, both where LiteLLM forwards
//! `/v1/responses` to the emulator and where it bridges it onto chat
//! completions; and the official `openai` Python package reading the
//! emulator's `/v1/responses` stream as its typed events
//! (`tests/fixtures/openai_responses_check.py`).
//!
//! The Python environment is the venv `.ci/run` creates from
//! `tests/fixtures/wire.requirements.txt` and names in
//! `FIRSTTOKEN_TEST_WIRE_PYTHON`. Outside CI the tests skip loudly
//! without it; in CI (`CI` set) they fail. LiteLLM runs with its cost map
//! read locally and its telemetry vetoed (see `fixtures/WIRE-NOTES.md`), so
//! nothing leaves loopback.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::edge::free_port;
use common::{EmulatorProcess, assert_code, firsttoken, text};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
/// The key `litellm_proxy.yaml` sets as its master key.
const LITELLM_KEY: &str = "Authorization: Bearer sk-firsttoken-fixture";

/// The venv's python, or `None` (after saying why) when the test must skip.
fn python(test: &str) -> Option<PathBuf> {
    common::wire_python(test)
}

/// An emulator with a fixed schedule and a truth log.
fn emulator(ttft_ms: u32, truth: &Path) -> EmulatorProcess {
    EmulatorProcess::start_with(&[
        "emulate",
        "--listen",
        "127.0.0.1:0",
        "--ttft-ms",
        &ttft_ms.to_string(),
        "--itl-ms",
        "20",
        "--tokens",
        "6",
        "--truth-log",
        truth.to_str().expect("UTF-8 temp path"),
    ])
}

/// The truth log's records, waiting (polling) until there are `n`.
fn truth_records(path: &Path, n: usize) -> Vec<Value> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let records: Vec<Value> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if records.len() >= n || Instant::now() > until {
            return records;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// LiteLLM's proxy as a child process, killed when dropped.
struct Litellm {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Litellm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on loopback: the status, or `None` when nothing answers yet.
fn get_status(port: u16, path: &str) -> Option<u16> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

impl Litellm {
    fn start(python: &Path, emulator: &str) -> Litellm {
        let script = python.with_file_name("litellm");
        let port = free_port();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(&script)
            .args(["--config", &format!("{FIXTURES}/litellm_proxy.yaml")])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .current_dir(dir.path())
            .env("EMULATOR_API_BASE", format!("{emulator}/v1"))
            // No fetch of the model cost map, no usage telemetry.
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("LITELLM_TELEMETRY_DISABLED", "True")
            // With DATABASE_URL (the store tests' PostgreSQL, set by
            // .ci/run) LiteLLM would start its Prisma database layer, which
            // litellm[proxy] does not install, and exit.
            .env_remove("DATABASE_URL")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY")
            .env("NO_PROXY", "*")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
        // Keep its log, to show it if it never becomes ready.
        let stderr = child.stderr.take().expect("piped stderr");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut l) = sink.lock() {
                    l.push(line);
                }
            }
        });
        let mut proxy = Litellm {
            child,
            port,
            _dir: dir,
        };
        // About 12 s on a busy 2-core machine (WIRE-NOTES.md).
        let until = Instant::now() + Duration::from_secs(180);
        while get_status(port, "/health/liveliness") != Some(200) {
            let exited = proxy.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > until {
                if exited.is_some() {
                    // Its stderr is closed: read it to the end.
                    let _ = reader.join();
                }
                let log = log.lock().map(|l| l.join("\n")).unwrap_or_default();
                panic!("LiteLLM's proxy did not become ready ({exited:?}):\n{log}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        proxy
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/responses", self.port)
    }
}

/// `firsttoken probe` of the proxy's `/v1/responses` with `model`; the
/// counted samples.
fn probe(proxy: &Litellm, model: &str, format: &str, extra: &[&str]) -> Vec<Value> {
    let body = format!(r#"{{"model":"{model}","stream":true,"input":"Where did the time go?"}}"#);
    let url = proxy.url();
    let mut args = vec![
        "probe",
        &url,
        "-H",
        LITELLM_KEY,
        "--body",
        &body,
        "--format",
        format,
        "-n",
        "3",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = firsttoken(&args, &[]);
    assert_code(&out, 0);
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|s| s["warmup"] == false)
        .collect()
}

#[test]
fn litellm_forwards_and_bridges_the_responses_api_and_tool_calls() {
    let Some(python) = python("litellm_forwards_and_bridges_the_responses_api_and_tool_calls")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let truth = dir.path().join("truth.jsonl");
    let ttft = 250.0;
    let emu = emulator(250, &truth);
    let proxy = Litellm::start(&python, &emu.base);

    // `emulated` forwards /v1/responses to the emulator's; `emulated-bridge`
    // serves it from the emulator's chat completions.
    let mut sent = 0;
    for (model, upstream_path) in [
        ("emulated", "/v1/responses"),
        ("emulated-bridge", "/v1/chat/completions"),
    ] {
        for format in ["responses", "auto"] {
            let samples = probe(&proxy, model, format, &[]);
            assert_eq!(samples.len(), 3, "{model}/{format}");
            for s in &samples {
                assert!(s["error"].is_null(), "{model}/{format}: {s}");
                let t = s["ttft_ms"].as_f64().expect("ttft_ms");
                assert!(
                    t >= ttft,
                    "{model}/{format}: the first text delta cannot beat the emulator's {ttft} ms: {s}"
                );
                assert!(t < ttft + 5000.0, "{model}/{format}: {s}");
                assert_eq!(s["output_tokens"], 6, "{model}/{format}: {s}");
                assert_eq!(s["content_chunks"], 6, "{model}/{format}: {s}");
                assert!(s["ttftc_ms"].is_null(), "{model}/{format}: {s}");
                assert_eq!(s["first_output"], "text", "{model}/{format}: {s}");
            }
            sent += 4; // a warm-up and three measured
            let records = truth_records(&truth, sent);
            let last = &records[records.len() - 1];
            assert_eq!(last["path"], upstream_path, "{model}: {last}");
            assert!(
                last["ttft_ms"].as_f64().is_some_and(|t| t >= ttft),
                "{last}"
            );
        }

        // Answering with a tool call (the header reaches the emulator:
        // forward_client_headers_to_llm_api): first output, no TTFT.
        let samples = probe(
            &proxy,
            model,
            "auto",
            &["-H", "x-emulator-tool-call: get_weather"],
        );
        for s in &samples {
            assert!(s["error"].is_null(), "{model}: {s}");
            assert!(s["ttft_ms"].is_null(), "{model}: no text: {s}");
            let c = s["ttftc_ms"].as_f64().expect("ttftc_ms");
            assert!(c >= ttft, "{model}: {s}");
            assert_eq!(s["first_output"], "tool_call", "{model}: {s}");
            assert_eq!(s["first_output_ms"].as_f64(), Some(c), "{model}: {s}");
        }
        sent += 4;
    }
}

/// Run the SDK check script; its summary line.
fn sdk_check(python: &Path, base: &str, extra: &[&str]) -> Value {
    let out = Command::new(python)
        .arg(format!("{FIXTURES}/openai_responses_check.py"))
        .args(["--base-url", &format!("{base}/v1")])
        .args(extra)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("the venv's python runs the check");
    assert_code(&out, 0);
    let stdout = text(&out.stdout);
    let last = stdout.lines().last().expect("a summary line");
    serde_json::from_str::<Value>(last).expect("JSON")["summary"].clone()
}

#[test]
fn the_openai_sdk_reads_the_emulators_responses_stream_as_typed_events() {
    let Some(python) =
        python("the_openai_sdk_reads_the_emulators_responses_stream_as_typed_events")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let emu = emulator(30, &dir.path().join("truth.jsonl"));

    let s = sdk_check(&python, &emu.base, &[]);
    assert_eq!(s["openai"], "3.60.0", "the pinned SDK: {s}");
    assert_eq!(
        s["events"], s["validated"],
        "every raw event validates: {s}"
    );
    // created, in_progress, item added, part added, 6 deltas, text done,
    // part done, item done, completed.
    assert_eq!(s["events"], 14, "{s}");
    assert_eq!(s["output_types"], serde_json::json!(["message"]), "{s}");
    assert_eq!(s["text"], s["output_text"], "{s}");
    assert!(s["text"].as_str().is_some_and(|t| !t.is_empty()), "{s}");
    assert_eq!(s["output_tokens"], 6, "{s}");

    let s = sdk_check(&python, &emu.base, &["--tool-call", "get_weather"]);
    assert_eq!(s["events"], s["validated"], "{s}");
    assert_eq!(
        s["output_types"],
        serde_json::json!(["function_call"]),
        "{s}"
    );
    assert_eq!(s["call_name"], "get_weather", "{s}");
    assert_eq!(s["arguments"], s["final_arguments"], "{s}");
    let args: Value = serde_json::from_str(s["arguments"].as_str().expect("arguments"))
        .expect("the streamed arguments are JSON");
    assert!(args["text"].is_string(), "{args}");
    assert_eq!(s["text"], "", "no text output: {s}");
}

//! Issue 26, WebSocket: `firsttoken probe ws://…` against the emulator's
//! own WebSocket `/v1/responses` (TTFT held to the emulator's truth log),
//! and against a real third-party WebSocket server: `ws_responses.py`,
//! built on the pinned `websockets` package, serving the Responses API's
//! WebSocket mode in front of the emulator's chat completions
//! (`tests/fixtures/WIRE-NOTES.md` documents its bytes); and Socket.IO
//! against `socketio_chat.py` (pinned python-socketio), an Open WebUI-style
//! app that streams its tokens as `chat-events`.
//!
//! The Python environment is the venv `.ci/run` creates from
//! `tests/fixtures/wire.requirements.txt` and names in
//! `FIRSTTOKEN_TEST_WIRE_PYTHON`. Outside CI the fixture tests skip loudly
//! without it; in CI (`CI` set) they fail. The fixture connects to nothing
//! but the emulator on loopback.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{EmulatorProcess, PyFixture, assert_code, firsttoken, text};
use serde_json::Value;

const SCHEMA: &str = include_str!("../../../docs/schema/sample.v1.schema.json");
const CREATE: &str =
    r#"{"type":"response.create","model":"emulated-model","input":"Where did the time go?"}"#;

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

/// `firsttoken probe URL` over a WebSocket: every sample, warm-ups included.
fn probe_ws(url: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "probe",
        url,
        "--body",
        CREATE,
        "--format",
        "responses",
        "-n",
        "3",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = firsttoken(&args, &[]);
    assert_code(&out, 0);
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    text(&out.stdout)
        .lines()
        .map(|l| {
            let v = serde_json::from_str::<Value>(l).expect("a JSON line");
            // A WebSocket sample is a sample of the published schema.
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{errors:?}\n{l}");
            v
        })
        .collect()
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is a number: {v}"))
}

/// Sample `s` waited at least `upstream` ms (the upstream's own time to
/// its first token) for its first token: from the request's start,
/// stamped before the frame is written, always; from the frame written
/// (`sent_ms`, stamped once the write returned, which a busy machine can
/// make late by a scheduling delay: once 20 µs here) within the HTTP
/// path's 1 ms.
fn sent_bound(s: &Value, upstream: f64) -> bool {
    f(s, "ttft_ms") >= upstream && f(s, "ttft_ms") - f(s, "sent_ms") >= upstream - 1.0
}

#[test]
fn probe_over_the_emulators_websocket_agrees_with_its_truth_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let truth = dir.path().join("truth.jsonl");
    let emu = emulator(150, &truth);
    let url = format!("{}/v1/responses", emu.base.replacen("http://", "ws://", 1));
    let mut seen = 0;
    for mode in [&[][..], &["--fresh"][..]] {
        let samples = probe_ws(&url, mode);
        seen += samples.len();
        // One worker: requests and truth records in the same order.
        let records = truth_records(&truth, seen);
        let records = &records[seen - samples.len()..seen];
        for (s, t) in samples.iter().zip(records) {
            assert!(s["error"].is_null(), "{mode:?}: {s}");
            assert_eq!(s["http_version"], "WebSocket", "{s}");
            assert_eq!(s["status"], 101, "{s}");
            assert_eq!(s["output_tokens"], 6, "{s}");
            assert_eq!(t["path"], "/v1/responses", "{t}");
            // The truth counts from the frame's arrival; the client from
            // before it sent it: the same bound as the HTTP path's.
            let overhead = f(s, "ttft_ms") - f(s, "sent_ms") - f(t, "ttft_ms");
            assert!((-1.0..=50.0).contains(&overhead), "{mode:?}: {s}\n{t}");
            if mode.is_empty() && s["warmup"] == false {
                assert_eq!(s["connection"], "reused", "{s}");
            } else {
                assert_eq!(s["connection"], "fresh", "{s}");
                assert!(f(s, "headers_ms") <= f(s, "sent_ms"), "{s}");
            }
        }
    }
}

#[test]
fn probe_measures_the_responses_websocket_mode_of_a_websockets_server() {
    let Some(python) = python("probe_measures_the_responses_websocket_mode_of_a_websockets_server")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let truth = dir.path().join("truth.jsonl");
    let ttft = 200.0;
    let emu = emulator(200, &truth);
    let fixture = PyFixture::start(&python, "ws_responses.py", &emu.base, &[]);
    let url = format!("ws://127.0.0.1:{}/v1/responses", fixture.port);
    let mut seen = 0;
    for mode in [&[][..], &["--fresh"][..]] {
        let samples = probe_ws(&url, mode);
        seen += samples.len();
        let records = truth_records(&truth, seen);
        let records = &records[seen - samples.len()..seen];
        for (s, t) in samples.iter().zip(records) {
            assert!(s["error"].is_null(), "{mode:?}: {s}");
            assert_eq!(s["http_version"], "WebSocket", "{s}");
            assert_eq!(s["status"], 101, "{s}");
            // The fixture turns each upstream chunk into one delta frame.
            assert_eq!(s["content_chunks"], 6, "{s}");
            assert_eq!(s["output_tokens"], 6, "{s}");
            assert_eq!(s["first_output"], "text", "{s}");
            assert_eq!(t["path"], "/v1/chat/completions", "{t}");
            let upstream = f(t, "ttft_ms");
            assert!(upstream >= ttft, "{t}");
            // The fixture's own work (an upstream request per frame) sits
            // between the frame and the upstream's first token: never
            // less than the upstream's time, and not seconds more.
            let client = f(s, "ttft_ms") - f(s, "sent_ms");
            assert!(
                sent_bound(s, upstream) && client < upstream + 1000.0,
                "{mode:?}: client {client} ms vs upstream {upstream} ms: {s}"
            );
            // Inter-token gaps are the upstream's 20 ms, passed through.
            let itl = f(s, "itl_p50_ms");
            assert!((10.0..=60.0).contains(&itl), "{s}");
        }
    }
}

#[test]
fn probe_measures_a_python_socketio_app_over_socketio() {
    let Some(python) = python("probe_measures_a_python_socketio_app_over_socketio") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let truth = dir.path().join("truth.jsonl");
    let ttft = 200.0;
    let emu = emulator(200, &truth);
    let mut seen = 0;
    // The brief's flat payload with the text so far, and Open WebUI's own
    // nesting with deltas.
    for (shape, content, root) in [
        ("flat", "accumulated", "/data"),
        ("openwebui", "delta", "/data/data"),
    ] {
        // The app's own time to first token, per answer.
        let emit_log = dir.path().join(format!("emit-{shape}.jsonl"));
        let emit_log_arg = emit_log.display().to_string();
        let mut logged = 0;
        let fixture = PyFixture::start(
            &python,
            "socketio_chat.py",
            &emu.base,
            &[
                "--shape",
                shape,
                "--content",
                content,
                "--emit-log",
                &emit_log_arg,
            ],
        );
        let url = format!("ws://127.0.0.1:{}/socket.io/", fixture.port);
        let format = format!("sse-json:{root}/content");
        let done = format!("{root}/done");
        let error = format!("{root}/error");
        for mode in [&[][..], &["--fresh"][..]] {
            let mut args = vec![
                "probe",
                &url,
                "--body",
                r#"{"chat_id":"c1","prompt":"Where did the time go?"}"#,
                "--format",
                &format,
                "--sio-event",
                "chat",
                "--sio-reply",
                "chat-events",
                "--sio-done-pointer",
                &done,
                "--sio-error-pointer",
                &error,
                "-n",
                "3",
                "--json",
            ];
            args.extend_from_slice(mode);
            let out = firsttoken(&args, &[]);
            assert_code(&out, 0);
            let samples: Vec<Value> = text(&out.stdout)
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
                .collect();
            seen += samples.len();
            let records = truth_records(&truth, seen);
            let records = &records[seen - samples.len()..seen];
            logged += samples.len();
            let emits = truth_records(&emit_log, logged);
            let emits = &emits[logged - samples.len()..logged];
            for ((s, t), e) in samples.iter().zip(records).zip(emits) {
                let what = format!("{shape}/{content} {mode:?}");
                assert!(s["error"].is_null(), "{what}: {s}");
                assert_eq!(s["http_version"], "WebSocket", "{s}");
                // One event per upstream chunk; the done event is not content.
                assert_eq!(s["content_chunks"], 6, "{what}: {s}");
                assert_eq!(t["path"], "/v1/chat/completions", "{t}");
                let upstream = f(t, "ttft_ms");
                assert!(upstream >= ttft, "{t}");
                let client = f(s, "ttft_ms") - f(s, "sent_ms");
                assert!(
                    sent_bound(s, upstream) && client < upstream + 1000.0,
                    "{what}: client {client} ms vs upstream {upstream} ms: {s}"
                );
                // Against the app's own time (from the chat event's arrival
                // to its first content emit), on a reused socket, timed from
                // the request's start (taken before the frame is written, so
                // never late): within the HTTP path's bound.
                if s["connection"] == "reused" {
                    let app = f(e, "ttft_ms");
                    let client = f(s, "ttft_ms");
                    assert!(
                        client >= app && client - app < 50.0,
                        "{what}: client {client} ms vs the app's own {app} ms: {s}"
                    );
                }
                if mode.is_empty() && s["warmup"] == false {
                    assert_eq!(s["connection"], "reused", "{s}");
                } else {
                    assert_eq!(s["connection"], "fresh", "{s}");
                    // The upgrade, then the Engine.IO and Socket.IO handshake, then the emit.
                    assert!(f(s, "headers_ms") < f(s, "sent_ms"), "{s}");
                }
            }
        }
    }
}

#[test]
fn a_socketio_apps_error_event_is_a_stream_error() {
    let Some(python) = python("a_socketio_apps_error_event_is_a_stream_error") else {
        return;
    };
    // An upstream on a closed loopback port: the app reports `chat:error`.
    let closed = common::edge::free_port();
    let fixture = PyFixture::start(
        &python,
        "socketio_chat.py",
        &format!("http://127.0.0.1:{closed}"),
        &[],
    );
    let url = format!("ws://127.0.0.1:{}/socket.io/", fixture.port);
    let out = firsttoken(
        &[
            "probe",
            &url,
            "--body",
            r#"{"chat_id":"bad","prompt":"hi"}"#,
            "--format",
            "sse-json:/data/content",
            "--sio-event",
            "chat",
            "--sio-reply",
            "chat-events",
            "--sio-done-pointer",
            "/data/done",
            "--sio-error-pointer",
            "/data/error",
            "-n",
            "1",
            "--fresh",
            "--json",
        ],
        &[],
    );
    assert_code(&out, 1);
    let s: Value =
        serde_json::from_str(text(&out.stdout).lines().next().expect("a sample")).expect("JSON");
    assert_eq!(s["error"]["kind"], "stream_error", "{s}");
    assert!(s["ttft_ms"].is_null(), "{s}");
    assert!(s["ttfe_ms"].is_number(), "the error event is an event: {s}");
}

#[test]
fn websocket_options_that_cannot_apply_are_usage_errors() {
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "probe",
                "http://127.0.0.1:1/v1",
                "--ws-await",
                "session.created",
            ],
            "ws://",
        ),
        (
            &["probe", "ws://127.0.0.1:1/v1", "--http", "2"],
            "HTTP/1.1's upgrade",
        ),
        (
            &[
                "probe",
                "ws://127.0.0.1:1/socket.io/",
                "--sio-event",
                "chat",
            ],
            "--sio-reply",
        ),
        (
            &[
                "probe",
                "ws://127.0.0.1:1/socket.io/",
                "--sio-event",
                "chat",
                "--sio-reply",
                "r",
                "--sio-auth",
                "sk-not-json-secret",
            ],
            "auth payload",
        ),
    ];
    for (args, says) in cases {
        let out = firsttoken(args, &[]);
        assert_code(&out, 2);
        let err = text(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("sk-not-json-secret"), "never echoed: {err}");
    }
}

/// Open WebUI's path as a flow (issues 25 and 26): the browser's Socket.IO
/// connection is open first (its session id captured), the message goes as
/// an HTTP POST naming that session, and the tokens come back as events on
/// the socket. The answer is timed from the POST's start; the socket's
/// opening is the flow's first step.
#[test]
fn a_flow_answered_on_a_socketio_socket_is_timed_from_the_post() {
    let Some(python) = python("a_flow_answered_on_a_socketio_socket_is_timed_from_the_post") else {
        return;
    };
    let emu = EmulatorProcess::start_with(&[
        "emulate",
        "--listen",
        "127.0.0.1:0",
        "--ttft-ms",
        "250",
        "--itl-ms",
        "20",
        "--tokens",
        "6",
    ]);
    let fixture = PyFixture::start(&python, "socketio_chat.py", &emu.base, &[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ft.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "http://127.0.0.1:{}"

[[app.paths]]
name = "socket-chat"
path = "/api/chat"
body = '{{"session_id": "{{sid}}", "chat_id": "c1", "prompt": "{{prompt}}"}}'
format = "sse-json:/data/content"

[app.paths.answer_socket]
path = "/socket.io/"
sid = "sid"
reply_event = "chat-events"
done_pointer = "/data/done"
error_pointer = "/data/error"

[prompts]
list = ["hello socket"]

[phases]
warm = 4
fresh = 2
"#,
            fixture.port
        ),
    )
    .unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
        &[],
    );
    assert_code(&out, 0);
    let db = rusqlite::Connection::open(&store).unwrap();
    // phase, warmup, ttft_ms, flow_wait_ms, flow_steps, status, content_chunks
    type Row = (
        String,
        bool,
        Option<f64>,
        Option<f64>,
        String,
        Option<i64>,
        i64,
    );
    let rows: Vec<Row> = db
        .prepare(
            "SELECT phase, warmup, ttft_ms, flow_wait_ms, flow_steps, status, content_chunks
             FROM samples ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.iter().filter(|r| !r.1).count(), 6, "{rows:?}");
    for (phase, warmup, ttft, wait, steps, status, chunks) in &rows {
        let steps: Value = serde_json::from_str(steps).unwrap();
        // A fresh flow (and the warm phase's warm-up) opens the socket as
        // its first step; the warm flows after it reuse that socket.
        if phase == "fresh" || *warmup {
            assert_eq!(steps[0]["name"], "socket", "{steps}");
            assert_eq!(steps[0]["status"], 101, "{steps}");
        } else {
            assert_eq!(steps, serde_json::json!([]), "{phase}: {steps}");
        }
        // The job starts at the POST: its first token is the upstream's
        // 250 ms after it, at least.
        let ttft = ttft.expect("a first token on the socket");
        assert!(ttft >= 250.0, "{ttft}");
        assert!(wait.is_some());
        // The POST named the socket's session: an unknown one is a 404.
        assert_eq!(*status, Some(200), "the POST's own status");
        assert!(*chunks >= 6, "{chunks}");
    }
}

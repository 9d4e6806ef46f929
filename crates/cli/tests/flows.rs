//! Flows (issue 25): an app path that is several requests, the last one
//! measured. Against the reference app ("create a conversation, then send
//! in it") and against a real third-party app, Gradio's `ChatInterface`
//! measured through Gradio's own two-step HTTP API (`POST
//! /gradio_api/call/chat` returns an `event_id`, `GET
//! /gradio_api/call/chat/<event_id>` streams the answer), installed by
//! `.ci/run` from PyPI, pinned (`tests/fixtures/wire.requirements.txt`).

mod common;

use common::{EmulatorProcess, REFAPP_ACCOUNTS, assert_code, audit, firsttoken, report_json, text};
use serde_json::Value;

/// One stored sample of a flow.
#[derive(Debug)]
struct Row {
    phase: String,
    warmup: bool,
    ttft: Option<f64>,
    wait: Option<f64>,
    steps: Option<Value>,
    error: Option<String>,
}

fn rows(store: &str) -> Vec<Row> {
    let db = rusqlite::Connection::open(store).unwrap();
    let mut q = db
        .prepare(
            "SELECT phase, warmup, ttft_ms, flow_wait_ms, flow_steps, error_message
             FROM samples WHERE phase <> 'ping' AND path <> 'direct' ORDER BY id",
        )
        .unwrap();
    q.query_map([], |r| {
        Ok(Row {
            phase: r.get(0)?,
            warmup: r.get(1)?,
            ttft: r.get(2)?,
            wait: r.get(3)?,
            steps: r
                .get::<_, Option<String>>(4)?
                .map(|t| serde_json::from_str(&t).unwrap()),
            error: r.get(5)?,
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn refapp_config(app: &str, capture: &str) -> String {
    format!(
        r#"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "{app}"
version_path = "/version"

[[app.paths]]
name = "new-chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}", "conversation_id": {{conversation_id}}}}'

[[app.paths.steps]]
name = "create"
path = "/api/conversations"
body = '{{"title": "flow {{prompt}}"}}'
capture = {{ conversation_id = "{capture}" }}

{REFAPP_ACCOUNTS}

[prompts]
list = ["hello there"]

[phases]
warm = 4
fresh = 2
"#
    )
}

/// The emulator and the reference app, and a finished `firsttoken run`
/// of [`refapp_config`] capturing `capture`, in a directory of its own.
struct RefappRun {
    _emu: EmulatorProcess,
    _app: EmulatorProcess,
    _dir: tempfile::TempDir,
    store: String,
    app_db: String,
}

/// Run the flow against the reference app; the run exits with `code`.
fn refapp_run(capture: &str, code: i32) -> RefappRun {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let app_db = dir.path().join("app.db").display().to_string();
    let app = EmulatorProcess::refapp(&emu, &app_db, &[]);
    audit(&app_db);
    let cfg = dir.path().join("ft.toml");
    std::fs::write(&cfg, refapp_config(&app.base, capture)).unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
        &[("FT_TEST_APP_DB", &app_db)],
    );
    assert_code(&out, code);
    RefappRun {
        _emu: emu,
        _app: app,
        _dir: dir,
        store,
        app_db,
    }
}

/// The reference app's "create a conversation, then send" path: every
/// measured message lands in the conversation its own first step created
/// (the captured id was sent), the sample keeps the step and the wait, and
/// the report splits the user's wait by step.
#[test]
fn a_refapp_flow_sends_in_the_conversation_its_first_step_created() {
    let w = refapp_run("/conversation_id", 0);
    let (store, app_db) = (w.store.clone(), w.app_db.clone());

    let rows = rows(&store);
    let measured: Vec<&Row> = rows.iter().filter(|r| !r.warmup).collect();
    assert_eq!(measured.len(), 6, "{rows:?}");
    for r in &rows {
        assert!(r.error.is_none(), "{r:?}");
        let steps = r.steps.as_ref().expect("a flow sample keeps its steps");
        assert_eq!(steps.as_array().unwrap().len(), 1, "{steps}");
        assert_eq!(steps[0]["name"], "create");
        assert_eq!(steps[0]["status"], 201);
        let step_ms = steps[0]["ms"].as_f64().unwrap();
        let wait = r.wait.expect("the flow's wait");
        assert!(step_ms > 0.0 && wait >= step_ms, "{r:?}");
        assert!(r.ttft.unwrap() > 0.0, "{r:?}");
    }
    assert!(measured.iter().any(|r| r.phase == "fresh"));

    // Each flow created one conversation and sent its message there: one
    // question and one answer in every conversation titled by the flow,
    // and no message anywhere else.
    let app = rusqlite::Connection::open(&app_db).unwrap();
    let elsewhere: i64 = app
        .query_row(
            "SELECT count(*) FROM audit WHERE title <> 'flow hello there'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(elsewhere, 0);
    let per_conversation: Vec<i64> = app
        .prepare("SELECT count(*) FROM audit GROUP BY conversation_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(per_conversation.len(), rows.len(), "{per_conversation:?}");
    assert!(
        per_conversation.iter().all(|&n| n == 2),
        "{per_conversation:?}"
    );

    let json = report_json(&store, &[]);
    let flows = json["analysis"]["flows"]
        .as_array()
        .expect("a flows section");
    let warm = flows
        .iter()
        .find(|f| f["phase"] == "warm")
        .expect("the warm flow");
    assert_eq!(warm["path"], "new-chat");
    assert_eq!(warm["n"], 4);
    let parts = warm["parts"].as_array().unwrap();
    assert_eq!(parts[0]["kind"]["kind"], "step");
    assert_eq!(parts[0]["kind"]["name"], "create");
    assert_eq!(parts[2]["kind"]["kind"], "measured");
    let shares: f64 = parts.iter().map(|p| p["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{parts:?}");

    let report = firsttoken(&["report", "--store", &store], &[]);
    assert_code(&report, 0);
    let t = text(&report.stdout);
    assert!(
        t.contains("new-chat, warm (emulated): from the flow's start to the first token"),
        "{t}"
    );
    assert!(t.contains("step create"), "{t}");
}

/// A capture that finds nothing fails each sample with the step and the
/// pointer named, and the measured request is never sent.
#[test]
fn a_capture_that_finds_nothing_fails_the_sample_naming_the_step() {
    let w = refapp_run("/no_such_field", 1);
    let (store, app_db) = (w.store.clone(), w.app_db.clone());
    let rows = rows(&store);
    assert!(!rows.is_empty());
    for r in &rows {
        let e = r.error.as_deref().expect("failed");
        assert!(
            e.contains(r#"flow step "create": {conversation_id} not captured"#)
                && e.contains(r#""/no_such_field""#),
            "{e}"
        );
        assert!(r.ttft.is_none(), "{r:?}");
        assert_eq!(r.steps.as_ref().unwrap()[0]["status"], 201);
    }
    let app = rusqlite::Connection::open(&app_db).unwrap();
    let messages: i64 = app
        .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
        .unwrap();
    assert_eq!(messages, 0, "no message was sent");
}

/// Gradio's HTTP API is a two-step flow: the job starts at the POST, so the
/// user's wait is measured from it. TTFT from the flow's start covers the
/// emulator's 250 ms; the GET alone (the measured request) is shorter by
/// the POST's time and the gap between them.
#[test]
fn gradio_two_step_api_is_measured_from_the_post() {
    let Some(python) = common::wire_python("gradio_two_step_api_is_measured_from_the_post") else {
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
    let gradio = common::PyFixture::gradio(&python, &emu.base);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ft.toml");
    std::fs::write(&cfg, common::gradio_flow_config(&gradio.base, 5)).unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
        &[],
    );
    assert_code(&out, 0);
    let rows = rows(&store);
    let measured: Vec<&Row> = rows.iter().filter(|r| !r.warmup).collect();
    assert_eq!(measured.len(), 5, "{rows:?}");
    for r in &measured {
        assert!(r.error.is_none(), "{r:?}");
        let steps = r.steps.as_ref().unwrap();
        assert_eq!(steps[0]["name"], "call");
        assert_eq!(steps[0]["status"], 200);
        let from_start = r.wait.unwrap() + r.ttft.unwrap();
        assert!(from_start >= 250.0, "{r:?}");
        assert!(r.ttft.unwrap() < from_start, "{r:?}");
    }
    let json = report_json(&store, &[]);
    let flow = &json["analysis"]["flows"][0];
    assert_eq!(flow["path"], "gradio");
    assert_eq!(flow["n"], 5);
    assert_eq!(flow["parts"][0]["kind"]["name"], "call");
}

//! Conversations (issue 25): a path's turns sent in order, each a measured
//! request. With the history carried by the request (`messages`), each
//! turn sends every earlier question and answer — the answers as they
//! streamed — so an upstream whose time to first token grows with its
//! input (the emulator's `--ttft-per-input-token-ms`) makes later turns
//! slower, and one whose time does not keeps them flat. With the history
//! kept by the app (`app`), the reference app's first turn creates the
//! conversation and every later turn continues it.

mod common;

use common::{EmulatorProcess, REFAPP_ACCOUNTS, assert_code, audit, firsttoken, report_json, text};
use serde_json::Value;

/// Two conversations of four turns, three words a question.
const CONVERSATIONS: &str = r#"["one two three", "four five six", "seven eight nine", "ten eleven twelve"]
{"turns": ["alpha beta gamma", "delta epsilon zeta", "eta theta iota", "kappa lambda mu"]}
"#;

/// Words of the emulator's answer (`--tokens 6`: one word a token).
const ANSWER_WORDS: u32 = 6;

/// One stored turn.
#[derive(Debug)]
struct Turn {
    seq: i64,
    turn: Option<i64>,
    history: Option<i64>,
    bytes: Option<i64>,
    error: Option<String>,
}

fn turns(store: &str) -> Vec<Turn> {
    let db = rusqlite::Connection::open(store).unwrap();
    let mut q = db
        .prepare(
            "SELECT seq, turn, history_messages, request_bytes, error_message FROM samples
             WHERE phase = 'conversation' AND warmup = 0 ORDER BY seq",
        )
        .unwrap();
    q.query_map([], |r| {
        Ok(Turn {
            seq: r.get(0)?,
            turn: r.get(1)?,
            history: r.get(2)?,
            bytes: r.get(3)?,
            error: r.get(4)?,
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// The emulator: TTFT 30 ms plus `per_token_ms` per input word, a
/// six-word answer, with `extra` flags.
fn emulator(per_token_ms: &str, extra: &[&str]) -> EmulatorProcess {
    let mut args = vec![
        "emulate",
        "--listen",
        "127.0.0.1:0",
        "--ttft-ms",
        "30",
        "--itl-ms",
        "1",
        "--tokens",
        "6",
        "--ttft-per-input-token-ms",
        per_token_ms,
    ];
    args.extend_from_slice(extra);
    EmulatorProcess::start_with(&args)
}

/// Run 8 conversations (each file entry four times) of 4 turns against an
/// emulator whose TTFT grows by `per_token_ms` per input word; the store,
/// and the prompt sizes the emulator saw (from its truth log), in order.
fn run_messages(per_token_ms: &str) -> (tempfile::TempDir, String, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.jsonl");
    let emu = emulator(per_token_ms, &["--truth-log", truth.to_str().unwrap()]);
    let file = dir.path().join("conversations.jsonl");
    std::fs::write(&file, CONVERSATIONS).unwrap();
    let cfg = dir.path().join("ft.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "{}"

[[app.paths]]
name = "chat"
path = "/v1/chat/completions"
body = '{{"model": "m", "stream": true, "messages": []}}'

[app.paths.conversation]
file = "{}"

[prompts]
list = ["unused"]

[phases.conversations]
count = 8
"#,
            emu.base,
            file.display()
        ),
    )
    .unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
        &[],
    );
    assert_code(&out, 0);
    drop(emu);
    let seen: Vec<u64> = std::fs::read_to_string(&truth)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["prompt_tokens"]
                .as_u64()
                .unwrap()
        })
        .collect();
    (dir, store, seen)
}

/// Each turn's stored number and history, and the words the upstream
/// received: every earlier question and its answer as streamed.
fn assert_history_carried(store: &str, seen: &[u64]) {
    let t = turns(store);
    assert_eq!(t.len(), 32, "8 conversations of 4 turns: {t:?}");
    for (i, row) in t.iter().enumerate() {
        assert!(row.error.is_none(), "{row:?}");
        let k = (i % 4) as i64 + 1;
        assert_eq!(row.turn, Some(k), "{row:?}");
        assert_eq!(row.history, Some(2 * (k - 1)), "{row:?}");
        assert_eq!(row.seq, i as i64, "turns numbered in order");
    }
    for pair in t.chunks(4) {
        let b: Vec<i64> = pair.iter().map(|r| r.bytes.unwrap()).collect();
        assert!(b.windows(2).all(|w| w[1] > w[0]), "the body grows: {b:?}");
    }
    // The upstream saw, for turn k, k questions of 3 words and k - 1
    // answers of 6: the assembled answers went back word for word. (The
    // first request is the warm-up, turn 1's size.)
    let measured = &seen[seen.len() - 32..];
    for (i, &n) in measured.iter().enumerate() {
        let k = (i % 4) as u64 + 1;
        assert_eq!(
            n,
            3 * k + u64::from(ANSWER_WORDS) * (k - 1),
            "request {i}: {seen:?}"
        );
    }
}

fn conversation(json: &Value) -> &Value {
    let all = json["analysis"]["conversations"]
        .as_array()
        .expect("a conversations section");
    assert_eq!(all.len(), 1, "{all:?}");
    &all[0]
}

/// With a prefill that grows with the input, turn 4 waits longer than
/// turn 1 by about the added words times the per-word cost: 27 words ×
/// 4 ms = 108 ms, and the report says so with the interval.
#[test]
fn ttft_grows_by_turn_when_the_upstream_grows_with_the_history() {
    let (_dir, store, seen) = run_messages("4");
    assert_history_carried(&store, &seen);
    let json = report_json(&store, &[]);
    common::assert_report_schema(&json);
    let c = conversation(&json);
    assert_eq!(c["path"], "chat");
    let turns = c["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 4, "{turns:?}");
    assert_eq!(turns[3]["history_messages"], 6.0);
    let g = &c["growth"];
    assert_eq!(g["turn"], 4);
    assert_eq!(g["verdict"], "grows", "{g}");
    let point = g["over_first"]["point"].as_f64().unwrap();
    let lower = g["over_first"]["ci"]["lower"].as_f64().unwrap();
    assert!((90.0..=140.0).contains(&point), "{g}");
    assert!(lower > 50.0, "{g}");
    // Each turn is a row of its own; none pools into the TTFT table.
    assert!(
        json["analysis"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["label"]["phase"] != "conversation"),
        "{}",
        json["analysis"]["groups"]
    );
    let report = firsttoken(&["report", "--store", &store], &[]);
    assert_code(&report, 0);
    let t = text(&report.stdout);
    assert!(t.contains("chat (emulated): turn 4 is +"), "{t}");
    assert!(
        t.contains("the first token comes later as the conversation grows"),
        "{t}"
    );
}

/// With a fixed prefill, turn 4 is where turn 1 is: the same history
/// carried, no growth the data can show.
#[test]
fn ttft_stays_flat_by_turn_when_the_upstream_does_not_grow() {
    let (_dir, store, seen) = run_messages("0");
    assert_history_carried(&store, &seen);
    let json = report_json(&store, &[]);
    let g = &conversation(&json)["growth"];
    assert_eq!(g["turn"], 4);
    assert_eq!(g["verdict"], "flat", "{g}");
    let point = g["over_first"]["point"].as_f64().unwrap();
    assert!(point.abs() < 10.0, "{g}");
    let report = firsttoken(&["report", "--store", &store], &[]);
    let t = text(&report.stdout);
    assert!(t.contains("no growth with the turn beyond ±5 %"), "{t}");
}

/// The history kept by the reference app: the first turn's step creates
/// the conversation and captures its id, later turns send only their
/// question under that id. Every turn lands in its conversation, and the
/// app's own history (sent upstream) makes later turns slower.
#[test]
fn an_app_kept_conversation_continues_under_the_first_turns_id() {
    let dir = tempfile::tempdir().unwrap();
    let emu = emulator("4", &[]);
    let app_db = dir.path().join("app.db").display().to_string();
    let app = EmulatorProcess::refapp(&emu, &app_db, &[]);
    audit(&app_db);
    let file = dir.path().join("conversations.jsonl");
    std::fs::write(&file, CONVERSATIONS).unwrap();
    let cfg = dir.path().join("ft.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "{}"
version_path = "/version"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}", "conversation_id": {{conversation_id}}}}'

[[app.paths.steps]]
name = "create"
path = "/api/conversations"
body = '{{"title": "conversation {{prompt}}"}}'
capture = {{ conversation_id = "/conversation_id" }}

[app.paths.conversation]
file = "{}"
history = "app"

{REFAPP_ACCOUNTS}

[prompts]
list = ["unused"]

[phases.conversations]
count = 6
"#,
            app.base,
            file.display()
        ),
    )
    .unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
        &[("FT_TEST_APP_DB", &app_db)],
    );
    assert_code(&out, 0);
    let t = turns(&store);
    assert_eq!(t.len(), 24, "{t:?}");
    for (i, row) in t.iter().enumerate() {
        assert!(row.error.is_none(), "{row:?}");
        let k = (i % 4) as i64 + 1;
        assert_eq!(row.turn, Some(k));
        assert_eq!(row.history, Some(2 * (k - 1)));
    }
    // Only a first turn runs the step that creates the conversation.
    let db = rusqlite::Connection::open(&store).unwrap();
    let steps: Vec<(i64, Option<String>)> = db
        .prepare("SELECT turn, flow_steps FROM samples WHERE warmup = 0 ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (turn, s) in &steps {
        let s: Value = serde_json::from_str(s.as_deref().unwrap()).unwrap();
        let n = s.as_array().unwrap().len();
        assert_eq!(n, usize::from(*turn == 1), "turn {turn}: {s}");
    }
    // The app stored, per conversation the session made, its four turns:
    // 8 messages each (the warm-up's conversation has 2), every one in a
    // conversation its first turn created (the cleanup has deleted the
    // accounts since; the audit kept what was stored).
    let app_rows = rusqlite::Connection::open(&app_db).unwrap();
    let mut per: Vec<i64> = app_rows
        .prepare("SELECT count(*) FROM audit GROUP BY conversation_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    per.sort_unstable();
    assert_eq!(per, [2, 8, 8, 8, 8, 8, 8], "{per:?}");
    let json = report_json(&store, &[]);
    let g = &conversation(&json)["growth"];
    assert_eq!(g["turn"], 4);
    assert_eq!(g["verdict"], "grows", "{g}");
}

//! The reference app's own OpenTelemetry spans (issue 12), exported by the
//! Rust OpenTelemetry SDK over OTLP/HTTP to `run --otlp-listen`: every
//! request joined, the known-bad modes visible in the spans (`--serial` as
//! queue wait that rises with concurrency while the handler stays flat;
//! `--db-roundtrips 3` as three more database calls a request), and the chat
//! path's overhead split with the database's share of it.

mod common;

use common::edge::free_port;
use common::{EmulatorProcess, REFAPP_ACCOUNTS, report_json, run_collecting_spans};
use firsttoken_record::Store;
use firsttoken_record::span::SpanKind;

fn config(app: &str, emu: &str) -> String {
    format!(
        r#"
[session]
network = "loopback-test"
emulated = true
seed = 7

[app]
base_url = "{app}"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'

{REFAPP_ACCOUNTS}
accounts = 1

[direct]
url = "{emu}/v1/chat/completions"
model = "emulated-model"

[prompts]
list = ["Where did the time go?"]

[phases]
warm = 12
direct = 12
# 45 a level: at c = 3 a third of the requests wait for nobody, and the
# median's interval clears zero only past about 40 of them.
concurrency = {{ levels = [1, 3], requests = 45 }}

[traces]
grace = "3s"
"#
    )
}

#[test]
fn the_refapps_own_spans_explain_its_overhead_and_its_wall() {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let app_db = dir.path().join("app.db").display().to_string();
    let otlp = format!("http://{listen}");
    let app = EmulatorProcess::refapp(
        &emu,
        &app_db,
        &[
            "--serial",
            "--db-roundtrips",
            "3",
            "--db-rtt-ms",
            "20",
            "--otlp-endpoint",
            &otlp,
        ],
    );
    let (store, _) = run_collecting_spans(
        dir.path(),
        &config(&app.base, &emu.base),
        &listen,
        &[("FT_TEST_APP_DB", &app_db)],
    );
    drop(app);

    let j = report_json(&store, &[]);
    let traces = &j["analysis"]["traces"];
    for c in traces["coverage"].as_array().unwrap() {
        assert_eq!(c["requests"], c["traced"], "every request joined: {c}");
    }
    // The session was a run of one agent: `report --run` joins the same
    // spans to the same rows.
    let by_run = report_json(&store, &["--run", "spans"]);
    assert_eq!(by_run["run"]["state"]["state"], "complete");
    assert_eq!(
        by_run["analysis"]["traces"]["coverage"], traces["coverage"],
        "the run's report joins the spans as the session's does"
    );
    let offset = &traces["sessions"][0]["offset"];
    assert_eq!(offset["consistent"], true, "{offset}");

    // The chat path: six database calls (auth's lookup, the new
    // conversation, three extra round trips, the stored answer), the five
    // before the first token at least one 20 ms round trip each, most of
    // the overhead; the provider's own first token recorded.
    let split = traces["splits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["path"] == "chat")
        .unwrap_or_else(|| panic!("a chat split: {traces}"));
    let part = |g: &str| {
        split["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["group"] == g)
            .unwrap_or_else(|| panic!("a {g} part: {split}"))
            .clone()
    };
    let db = part("database");
    assert_eq!(db["median_calls"], 6.0, "{db}");
    assert!(db["median"]["point"].as_f64().unwrap() >= 100.0, "{db}");
    let share = db["share_of_overhead"]
        .as_f64()
        .unwrap_or_else(|| panic!("the database's share of the overhead: {split}"));
    assert!(
        share >= 0.8,
        "database share of the overhead {share}: {split}"
    );
    part("model provider");
    assert!(
        split["provider_first_token"]["point"].as_f64().unwrap() >= 25.0,
        "the provider's own first token (30 ms emulated): {split}"
    );

    // `--serial`: the wait before the handler rises with concurrency, the
    // handler does not slow down.
    let wall = &traces["walls"][0];
    let c3 = wall["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["concurrency"] == 3)
        .unwrap_or_else(|| panic!("level 3: {wall}"))
        .clone();
    assert_eq!(c3["wait_change"]["direction"], "increase", "{c3}");
    assert_eq!(wall["reason"], "waited_for_worker", "{wall}");

    // The spans themselves, as the SDK sent them.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = Store::open(&store).await.unwrap();
        let session = store.sessions().await.unwrap().remove(0);
        let rows = store.samples(&session.id).await.unwrap();
        let spans = store.spans(&session.id).await.unwrap();
        let chat = rows
            .iter()
            .find(|r| r.sample.error.is_none() && r.dest.path_column() == Some("chat"))
            .expect("a chat sample");
        let trace = chat.sample.trace_id.as_deref().expect("a trace id");
        let mine: Vec<_> = spans.iter().filter(|s| s.trace_id == trace).collect();
        let server = mine
            .iter()
            .find(|s| s.kind == SpanKind::Server)
            .unwrap_or_else(|| panic!("a server span: {mine:#?}"));
        assert_eq!(server.name, "POST /api/chat");
        assert_eq!(server.service.as_deref(), Some("firsttoken-refapp"));
        let handler = mine
            .iter()
            .find(|s| s.name == "answer")
            .unwrap_or_else(|| panic!("the handler span: {mine:#?}"));
        assert_eq!(handler.parent_span_id.as_ref(), Some(&server.span_id));
        let db: Vec<_> = mine
            .iter()
            .filter(|s| s.attr_str("db.system.name") == Some("sqlite"))
            .collect();
        // auth's lookup, the new conversation, three extra round trips and
        // the stored answer.
        assert_eq!(db.len(), 6, "{mine:#?}");
        let provider = mine
            .iter()
            .find(|s| s.attr_str("gen_ai.request.model") == Some("emulated-model"))
            .unwrap_or_else(|| panic!("the provider span: {mine:#?}"));
        assert_eq!(provider.kind, SpanKind::Client);
        assert!(
            provider
                .events
                .iter()
                .any(|e| e.name == "gen_ai.first_token"),
            "{provider:#?}"
        );
    });
}

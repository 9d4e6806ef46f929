//! Sessions through the library against a small loopback server: the budget
//! sees costs priced from the config's table, and an interrupted burst stops
//! within a second with every in-flight request accounted for.

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use firsttoken_plan::config::Config;
use firsttoken_record::Store;
use firsttoken_record::session::SessionStatus;
use firsttoken_session::{Overrides, Quiet, SessionSpec, run_session};

/// An OpenAI-style stream that reports tokens but no cost (as OpenAI does).
async fn completion() -> impl IntoResponse {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":1000,\"total_tokens\":2000}}\n\n",
        "data: [DONE]\n\n",
    );
    ([(header::CONTENT_TYPE, "text/event-stream")], body)
}

/// An app path that answers only after 30 s; `entered` counts the
/// requests that reached it.
async fn stalled(entered: Stalled) -> impl IntoResponse {
    entered.send_modify(|n| *n += 1);
    tokio::time::sleep(Duration::from_secs(30)).await;
    "late"
}

/// Bodies the echo path received, in order.
type Bodies = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// How many requests reached the stalled path.
type Stalled = std::sync::Arc<tokio::sync::watch::Sender<u64>>;

async fn server() -> String {
    server_watching(Bodies::default(), Stalled::default()).await
}

async fn server_logging(bodies: Bodies) -> String {
    server_watching(bodies, Stalled::default()).await
}

async fn server_watching(bodies: Bodies, entered: Stalled) -> String {
    let echo = move |body: String| {
        let bodies = bodies.clone();
        async move {
            bodies.lock().unwrap().push(body);
            completion().await
        }
    };
    let slow = move || stalled(entered.clone());
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/v1/chat/completions", post(completion))
        .route("/api/echo", post(echo))
        .route("/api/slow", post(slow));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    base
}

fn config(base: &str, phases: &str, extra: &str) -> Config {
    let text = format!(
        r#"
[session]
timeout = "60s"
{extra}

[app]
base_url = "{base}"

[[app.paths]]
name = "slow"
path = "/api/slow"
body = '{{"message": "{{prompt}}"}}'
format = "text"

[direct]
url = "{base}/v1/chat/completions"
model = "priced-model"

[prompts]
list = ["one", "two"]

[phases]
{phases}

[prices]
"priced-model" = {{ input = 100.0, output = 100.0 }}
"#
    );
    Config::parse(&text, "test.toml").unwrap()
}

async fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("s.db").display().to_string())
        .await
        .unwrap()
}

/// Regression (issue 8, defect 1): the budget was charged from
/// `sample.cost_usd` before the recorder priced the sample, so a stream with
/// tokens and no reported cost was never charged and the session ran all 20
/// requests past a $1 budget. Each request here costs 1000 × $100/M + 1000 ×
/// $100/M = $0.20, and the budget is exact: a direct request starts only once
/// the earlier ones are priced.
#[tokio::test]
async fn the_budget_stops_a_session_priced_only_from_the_table() {
    let base = server().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let spec = SessionSpec::new(
        config(&base, "direct = 20", "budget_usd = 1.0"),
        Overrides::default(),
    )
    .unwrap();
    let out = run_session(&spec, &store, &mut Quiet, CancellationToken::new())
        .await
        .unwrap();
    let costs: Vec<f64> = out.rows.iter().filter_map(|r| r.sample.cost_usd).collect();
    assert!(
        costs.iter().all(|c| (c - 0.2).abs() < 1e-9),
        "priced from the table: {costs:?}"
    );
    // The warm-up and four requests spend exactly $1.00; a fifth would cross it.
    assert_eq!(costs.len(), 5, "{costs:?}");
    assert_eq!(out.done, 4, "stopped at the limit, not after all 20");
    let spent: f64 = costs.iter().sum();
    assert!(spent <= 1.0 + 1e-9, "never over the budget: ${spent}");
    match &out.meta.status {
        SessionStatus::Partial { reason } => assert!(reason.contains("budget"), "{reason}"),
        other => panic!("expected a partial session, got {other:?}"),
    }
    let stored = store.samples(&out.meta.id).await.unwrap();
    assert_eq!(
        stored.len(),
        out.rows.len(),
        "everything counted was stored"
    );
}

/// Regression (issue 8, defect 2): bursts ran as detached tasks, so after
/// Ctrl-C the recorder waited for them (here 30 s) and their results were
/// dropped. Now the session ends within a second of the cancel and every
/// request that was in flight is counted.
#[tokio::test]
async fn cancelling_mid_burst_stops_within_a_second_and_counts_what_was_in_flight() {
    let entered = Stalled::default();
    let mut seen = entered.subscribe();
    let base = server_watching(Bodies::default(), entered).await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let spec = SessionSpec::new(
        config(&base, "concurrency = { levels = [4], requests = 4 }", ""),
        Overrides::default(),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    // Cancel once a request is in flight: it reached the stalled path.
    let cancelled = tokio::spawn(async move {
        let in_flight = *seen.wait_for(|n| *n >= 1).await.expect("the server lives");
        c.cancel();
        (Instant::now(), in_flight)
    });
    let out = tokio::time::timeout(
        Duration::from_secs(25),
        run_session(&spec, &store, &mut Quiet, cancel),
    )
    .await
    .expect("the session ends before the stalled requests would answer")
    .unwrap();
    let (cancelled_at, in_flight) = cancelled.await.unwrap();
    let took = cancelled_at.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "stopped {took:?} after the cancel"
    );
    assert!(
        out.cancelled_in_flight >= in_flight,
        "the {in_flight} stalled requests are counted, not dropped: {out:?}"
    );
    assert_eq!(out.done, 0, "nothing finished");
    match &out.meta.status {
        SessionStatus::Partial { reason } => {
            assert!(reason.contains("cancelled"), "{reason}")
        }
        other => panic!("expected a partial session, got {other:?}"),
    }
}

/// Out-of-range values are refused before anything is sent.
#[tokio::test]
async fn a_bad_budget_is_refused_before_anything_is_sent() {
    let cfg = config("http://127.0.0.1:9", "direct = 1", "");
    let e = SessionSpec::new(
        cfg,
        Overrides {
            budget_usd: Some(f64::NAN),
            ..Overrides::default()
        },
    )
    .err()
    .expect("a NaN budget is an error");
    assert!(e.to_string().contains("budget"), "{e}");
}

/// Regression (issue 10, item 1): with prompts given as a file, the protocol
/// was expanded for `prompts.list.len()` = 0 → 1 prompt, so every request
/// carried the file's first line.
#[tokio::test]
async fn prompts_from_a_file_rotate_over_every_line() {
    let bodies = Bodies::default();
    let base = server_logging(bodies.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompts.txt");
    std::fs::write(&file, "first question\nsecond question\n\nthird question\n").unwrap();
    let text = format!(
        r#"
[app]
base_url = "{base}"

[[app.paths]]
name = "echo"
path = "/api/echo"
body = '{{"message": "{{prompt}}"}}'

[prompts]
file = "{}"

[phases]
warm = 6
"#,
        file.display()
    );
    let spec = SessionSpec::new(
        Config::parse(&text, "t.toml").unwrap(),
        Overrides::default(),
    )
    .unwrap();
    let store = store(&dir).await;
    let out = run_session(&spec, &store, &mut Quiet, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.done, 6);
    // The warm phase keeps one connection and warms it once (issue 10,
    // "also seen": every warm request used to come after its own warm-up).
    let rows = store.samples(&out.meta.id).await.unwrap();
    let warmups = rows.iter().filter(|r| r.sample.warmup).count();
    assert_eq!(warmups, 1, "one warm-up for the whole warm phase");
    let reused = rows
        .iter()
        .filter(|r| {
            !r.sample.warmup && r.sample.connection == firsttoken_record::Connection::Reused
        })
        .count();
    assert_eq!(
        reused, 6,
        "every counted warm request rides the warmed connection"
    );
    let seen = bodies.lock().unwrap().clone();
    let distinct: std::collections::BTreeSet<&str> =
        seen.iter().filter_map(|b| b.split('"').nth(3)).collect();
    assert_eq!(
        distinct.into_iter().collect::<Vec<_>>(),
        vec!["first question", "second question", "third question"],
        "every line is sent: {seen:?}"
    );
}

/// Issue 10: a path with its own prompts file rotates over it, the other
/// path over the session's list; every stored sample names its prompt by
/// index and hash (never its text), as sent; a phase aimed at one path
/// sends nothing to the other.
#[tokio::test]
async fn per_path_prompts_rotate_and_each_sample_names_its_prompt() {
    let bodies = Bodies::default();
    let base = server_logging(bodies.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("docs.txt");
    std::fs::write(&file, "doc one\ndoc two\ndoc three\n").unwrap();
    let text = format!(
        r#"
[app]
base_url = "{base}"

[[app.paths]]
name = "chat"
path = "/api/echo"
body = '{{"message": "{{prompt}}"}}'

[[app.paths]]
name = "docs"
path = "/api/echo"
body = '{{"message": "{{prompt}}"}}'
prompts_file = "{}"

[prompts]
list = ["chat one", "chat two"]

[phases]
warm = 8
fresh = {{ count = 3, paths = ["docs"] }}
"#,
        file.display()
    );
    let spec = SessionSpec::new(
        Config::parse(&text, "t.toml").unwrap(),
        Overrides::default(),
    )
    .unwrap();
    let store = store(&dir).await;
    let out = run_session(&spec, &store, &mut Quiet, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.done, 11);
    let rows = store.samples(&out.meta.id).await.unwrap();
    let counted: Vec<_> = rows.iter().filter(|r| !r.sample.warmup).collect();
    assert_eq!(counted.len(), 11);
    let sent: Vec<String> = bodies.lock().unwrap().clone();
    let mut docs_prompts = std::collections::BTreeSet::new();
    for r in &counted {
        let path = r.dest.path_column().unwrap();
        let p = r
            .prompt
            .as_ref()
            .expect("every app sample names its prompt");
        let list: &[&str] = if path == "docs" {
            &["doc one", "doc two", "doc three"]
        } else {
            &["chat one", "chat two"]
        };
        let text = list[p.index as usize];
        assert_eq!(p, &firsttoken_session::prompt_ref(p.index as usize, text));
        assert_eq!(p.hash.len(), 12);
        if path == "docs" {
            docs_prompts.insert(p.index);
        }
        if r.phase == firsttoken_record::PhaseKind::Fresh {
            assert_eq!(path, "docs", "fresh is aimed at docs only");
        }
    }
    assert_eq!(docs_prompts.len(), 3, "docs rotates over its own file");
    let texts: std::collections::BTreeSet<&str> =
        sent.iter().filter_map(|b| b.split('"').nth(3)).collect();
    for t in ["doc one", "doc two", "doc three", "chat one", "chat two"] {
        assert!(texts.contains(t), "{t} never sent: {sent:?}");
    }
    // No stored column holds a prompt's text.
    let json = serde_json::to_string(&rows).unwrap();
    assert!(!json.contains("doc one") && !json.contains("chat one"));
}

/// What an agent of a run sends is its segment of the protocol; a session
/// on its own sends the whole.
#[tokio::test]
async fn an_agent_sends_its_segment() {
    let cfg = config("http://127.0.0.1:9", "direct = 6", "");
    let mut spec = SessionSpec::new(cfg, Overrides::default()).unwrap();
    assert_eq!(spec.share().requests(), 6);
    let segment = "1/3".parse().unwrap();
    spec.run = Some(
        firsttoken_session::RunPart::new(
            Some("r".into()),
            Some(segment),
            None,
            firsttoken_session::DEFAULT_HEARTBEAT,
            &spec.protocol,
        )
        .unwrap(),
    );
    assert_eq!(spec.share().requests(), 2);
    assert_eq!(spec.share(), segment.apply(&spec.protocol));
}

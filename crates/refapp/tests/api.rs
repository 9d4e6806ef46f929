//! The app over loopback with SQLite and the emulator as upstream: accounts,
//! both answer paths, the router, Server-Timing, and every bad-input case.

mod common;

use std::time::{Duration, Instant};

use common::{App, Emulator, WAIT, closed_port, email, ms};
use reqwest::StatusCode;
use serde_json::{Value, json};

const TTFT_MS: u64 = 50;
const ITL_MS: u64 = 5;
const TOKENS: u32 = 6;

#[tokio::test]
async fn accounts_signup_login_and_401s() {
    let emu = Emulator::start(TTFT_MS, ITL_MS, TOKENS).await;
    let app = App::sqlite(&emu.base_url(), |_| {}).await;
    let mail = email();
    assert!(mail.ends_with("@bench.invalid"));
    let creds = json!({"email": mail, "password": "correct horse battery"});

    let (s, v, _) = app.post_json("/api/auth/signup", None, &creds).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["email"], mail.as_str());
    assert_eq!(v["token_type"], "bearer");
    assert!(v["user_id"].as_i64().is_some_and(|id| id > 0));
    let signup_token = v["token"].as_str().unwrap().to_string();

    // The same address again, in another case: 409.
    let upper = json!({"email": mail.to_uppercase(), "password": "another password"});
    let (s, v, _) = app.post_json("/api/auth/signup", None, &upper).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["error"]["code"], 409);

    let (s, v, _) = app.post_json("/api/auth/login", None, &creds).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let login_token = v["token"].as_str().unwrap().to_string();
    assert_ne!(login_token, signup_token);

    let wrong = json!({"email": mail, "password": "wrong password!"});
    let (s, v, _) = app.post_json("/api/auth/login", None, &wrong).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
    let nobody = json!({"email": email(), "password": "correct horse battery"});
    let (s, _, _) = app.post_json("/api/auth/login", None, &nobody).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    for (email, password) in [("not-an-email", "long enough pw"), (mail.as_str(), "short")] {
        let body = json!({"email": email, "password": password});
        let (s, v, _) = app.post_json("/api/auth/signup", None, &body).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    }

    // Chat endpoints need a valid token.
    let ask = json!({"message": "hello"});
    for path in ["/api/chat", "/api/docs/ask", "/api/message"] {
        let (s, v, h) = app.post_json(path, None, &ask).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{path}: {v}");
        assert_eq!(v["error"]["type"], "authentication_error");
        assert_eq!(h.get("www-authenticate").unwrap(), "Bearer");
        let (s, _, _) = app.post_json(path, Some("ftr_bogus"), &ask).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{path}");
    }
    let (s, _) = app.get_json("/api/conversations/1/messages", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    // Both tokens work.
    for t in [&signup_token, &login_token] {
        let r = app.ask("/api/chat", t, ask.clone()).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    app.stop().await;
}

#[tokio::test]
async fn chat_streams_stores_and_reloads_history() {
    let emu = Emulator::start(TTFT_MS, ITL_MS, TOKENS).await;
    let app = App::sqlite(&emu.base_url(), |_| {}).await;
    let (_, token) = app.user().await;

    let r = app
        .ask(
            "/api/chat",
            &token,
            json!({"message": "Hi there, how are you?"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-route"), Some("chat"));
    assert!(r.header("x-request-id").is_some_and(|id| !id.is_empty()));
    let conversation: i64 = r.header("x-conversation-id").unwrap().parse().unwrap();

    // OpenAI chunks with content, then [DONE], then the timing event, last.
    let content = r.content();
    assert_eq!(
        content.split_whitespace().count(),
        TOKENS as usize,
        "{content}"
    );
    let chunks = r.chunks_json();
    assert!(
        chunks
            .iter()
            .all(|(v, _)| v["object"] == "chat.completion.chunk")
    );
    assert!(
        chunks
            .iter()
            .any(|(v, _)| v["choices"][0]["finish_reason"] == "stop")
    );
    let done = r.done().expect("[DONE]");
    let last = r.events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("server-timing"));
    assert!(done.at <= last.at);
    // Content streamed: the first token arrived before the last one.
    let first = r.first_content().unwrap();
    assert!(first.at < done.at);
    assert!(ms(first.at - r.sent) >= TTFT_MS as f64 * 0.9);

    let meta = r.meta();
    assert_eq!(meta["route"], "chat");
    assert_eq!(meta["conversation_id"], conversation);
    assert_eq!(meta["request_id"], r.header("x-request-id").unwrap());

    // Server-Timing: the phases before the stream in the header...
    let h = r.server_timing_header();
    for k in ["auth", "db", "upstream_connect"] {
        assert!(h.get(k).is_some_and(|d| *d >= 0.0), "{k} in {h:?}");
    }
    assert!(!h.contains_key("retrieve"), "{h:?}");
    // ...and the rest in the last event.
    let t = r.server_timing_event();
    for k in ["upstream_ttft", "stream", "store", "total"] {
        assert!(t.get(k).is_some_and(|d| *d >= 0.0), "{k} in {t:?}");
    }
    assert!(t["upstream_ttft"] >= TTFT_MS as f64 * 0.9, "{t:?}");
    assert!(t["total"] >= t["upstream_ttft"], "{t:?}");
    assert!(t["total"] <= ms(r.end - r.sent) + 1.0, "{t:?}");

    // Both messages are stored.
    let (s, v) = app
        .get_json(
            &format!("/api/conversations/{conversation}/messages"),
            Some(&token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{v}");
    assert_eq!(msgs[0]["role"], "user");
    assert_eq!(msgs[0]["content"], "Hi there, how are you?");
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"], content.as_str());
    assert_eq!(msgs[1]["status"], "complete");
    assert_eq!(msgs[1]["request_id"], r.header("x-request-id").unwrap());

    // A follow-up loads the history into the prompt: the emulator counts
    // prompt words, so the prompt grew by at least the first exchange.
    let first_prompt = r.usage().unwrap()["prompt_tokens"].as_u64().unwrap();
    let r2 = app
        .ask(
            "/api/chat",
            &token,
            json!({"conversation_id": conversation, "message": "Hi there, how are you?"}),
        )
        .await;
    assert_eq!(r2.status, StatusCode::OK, "{}", r2.body);
    assert_eq!(
        r2.header("x-conversation-id"),
        Some(conversation.to_string().as_str())
    );
    let second_prompt = r2.usage().unwrap()["prompt_tokens"].as_u64().unwrap();
    let grown = 5 + content.split_whitespace().count() as u64;
    assert!(
        second_prompt >= first_prompt + grown,
        "{first_prompt} → {second_prompt}"
    );
    let (_, v) = app
        .get_json(
            &format!("/api/conversations/{conversation}/messages"),
            Some(&token),
        )
        .await;
    assert_eq!(v["messages"].as_array().unwrap().len(), 4);

    // Someone else's conversation, or a missing one: 404, before streaming.
    let (_, other) = app.user().await;
    for t in [&other, &token] {
        let id = if t == &other { conversation } else { 999_999 };
        let (s, v, _) = app
            .post_json(
                "/api/chat",
                Some(t),
                &json!({"conversation_id": id, "message": "hi"}),
            )
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    }
    app.stop().await;
}

#[tokio::test]
async fn docs_path_retrieves_streams_and_stores_passage_ids() {
    let emu = Emulator::start(TTFT_MS, ITL_MS, TOKENS).await;
    let app = App::sqlite(&emu.base_url(), |o| o.passages = 3).await;
    let (_, token) = app.user().await;

    let q = "What overdraft fee does Harbor Street Bank charge per paid item?";
    let r = app
        .ask("/api/docs/ask", &token, json!({"message": q}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.header("x-route"), Some("docs"));
    let ids: Vec<String> = r
        .header("x-passage-ids")
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[0], "harbor-bank-deposit-account-policy#3");
    let meta = r.meta();
    assert_eq!(meta["route"], "docs");
    assert_eq!(meta["passage_ids"], json!(ids));
    assert!(!r.content().is_empty());
    assert!(r.done().is_some());

    let h = r.server_timing_header();
    for k in ["auth", "db", "retrieve", "upstream_connect"] {
        assert!(h.contains_key(k), "{k} in {h:?}");
    }

    let conversation = meta["conversation_id"].as_i64().unwrap();
    let (_, v) = app
        .get_json(
            &format!("/api/conversations/{conversation}/messages"),
            Some(&token),
        )
        .await;
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["passage_ids"], Value::Null);
    assert_eq!(msgs[1]["passage_ids"], json!(ids));
    app.stop().await;
}

#[tokio::test]
async fn router_picks_docs_or_chat_and_says_why() {
    let emu = Emulator::start(TTFT_MS, ITL_MS, TOKENS).await;
    let app = App::sqlite(&emu.base_url(), |_| {}).await;
    let (_, token) = app.user().await;

    let r = app
        .ask(
            "/api/message",
            &token,
            json!({"message": "According to the annual report, what was Northwind's net income?"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.header("x-route"), Some("docs"));
    assert_eq!(
        r.header("x-route-reason"),
        Some("mentions \"according to\"")
    );
    assert_eq!(r.meta()["route"], "docs");
    assert_eq!(r.meta()["route_reason"], "mentions \"according to\"");
    assert!(
        r.header("x-passage-ids")
            .unwrap()
            .contains("northwind-annual-report-2025")
    );
    assert!(r.server_timing_header().contains_key("retrieve"));

    let r = app
        .ask(
            "/api/message",
            &token,
            json!({"message": "Tell me a joke about budgets"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.header("x-route"), Some("chat"));
    assert_eq!(r.header("x-route-reason"), Some("no document keyword"));
    assert_eq!(r.meta()["passage_ids"], Value::Null);
    assert!(r.header("x-passage-ids").is_none());
    assert!(!r.server_timing_header().contains_key("retrieve"));
    app.stop().await;
}

#[tokio::test]
async fn health_version_request_id_and_unknown_routes() {
    let emu = Emulator::start(TTFT_MS, ITL_MS, TOKENS).await;
    let app = App::sqlite(&emu.base_url(), |_| {}).await;
    let (s, v) = app.get_json("/health", None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!({"status": "ok", "database": "sqlite"}));
    let (s, v) = app.get_json("/version", None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["source"], "git");
    assert!(v["version"].as_str().is_some_and(|x| !x.is_empty()));
    let (s, v) = app.get_json("/nope", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], 404);
    let (s, v) = app.get_json("/api/chat", None).await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(v["error"]["code"], 405);
    let (_, token) = app.user().await;
    let (s, v) = app
        .get_json("/api/conversations/abc/messages", Some(&token))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    assert_eq!(v["error"]["code"], 404);

    let resp = app
        .http
        .get(app.url("/health"))
        .header("x-request-id", "trace-42")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-request-id"], "trace-42");
    app.stop().await;

    let labelled = App::sqlite(&emu.base_url(), |o| o.version_label = Some("demo-1".into())).await;
    let (_, v) = labelled.get_json("/version", None).await;
    assert_eq!(v["version"], "demo-1");
    assert_eq!(v["source"], "label");
    labelled.stop().await;
}

#[tokio::test]
async fn malformed_json_oversize_and_empty_messages() {
    let emu = Emulator::start(TTFT_MS, ITL_MS, TOKENS).await;
    let app = App::sqlite(&emu.base_url(), |o| o.max_body_bytes = 1024).await;
    let (_, token) = app.user().await;

    for body in [
        &b"{not json"[..],
        b"",
        b"[1,2]",
        br#"{"conversation_id": 1}"#,
        br#"{"message": 42}"#,
    ] {
        let (s, v, _) = app.post_raw("/api/chat", Some(&token), body.to_vec()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
        assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
    }
    let (s, v, _) = app
        .post_raw("/api/auth/signup", None, b"{\"email\":".to_vec())
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, v, _) = app
        .post_json("/api/chat", Some(&token), &json!({"message": "   "}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");

    let big = json!({"message": "x".repeat(4096)});
    for path in ["/api/chat", "/api/auth/signup"] {
        let (s, v, _) = app.post_json(path, Some(&token), &big).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{path}: {v}");
        assert_eq!(v["error"]["code"], 413);
    }
    // The app still serves after all of that.
    let r = app
        .ask("/api/chat", &token, json!({"message": "ok?"}))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn unreachable_or_failing_upstream_is_502_before_the_stream() {
    let closed = closed_port().await;
    let app = App::sqlite(&format!("http://{closed}/v1"), |_| {}).await;
    let (_, token) = app.user().await;
    let t = Instant::now();
    let (s, v, h) = app
        .post_json("/api/chat", Some(&token), &json!({"message": "hello"}))
        .await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    assert_eq!(v["error"]["type"], "upstream_error");
    assert!(h.get("x-request-id").is_some());
    assert!(t.elapsed() < Duration::from_secs(5));
    app.stop().await;

    // An upstream answering 500 and one that never answers (read timeout).
    let bad = fake_upstream(Fake::Status500).await;
    let silent = fake_upstream(Fake::Silent).await;
    for (upstream, expect) in [(bad, "overloaded"), (silent, "timed out")] {
        let app = App::sqlite(&format!("http://{upstream}/v1"), |o| {
            o.upstream_read_timeout = Duration::from_millis(300)
        })
        .await;
        let (_, token) = app.user().await;
        let (s, v, _) = app
            .post_json("/api/chat", Some(&token), &json!({"message": "hello"}))
            .await;
        assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(expect),
            "{v}"
        );
        app.stop().await;
    }
}

#[tokio::test]
async fn upstream_failing_mid_stream_is_an_sse_error_event() {
    let upstream = fake_upstream(Fake::BreaksMidStream).await;
    let app = App::sqlite(&format!("http://{upstream}/v1"), |_| {}).await;
    let (_, token) = app.user().await;
    let r = app
        .ask("/api/chat", &token, json!({"message": "hello"}))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.content(), "partial ");
    assert!(r.done().is_none(), "no [DONE] after a failure");
    let errors = r.error_events();
    assert_eq!(errors.len(), 1, "{}", r.body);
    assert_eq!(errors[0]["error"]["type"], "upstream_error");
    assert!(r.server_timing_event().contains_key("total"));
    // The partial answer is stored and marked failed.
    let conversation = r.meta()["conversation_id"].as_i64().unwrap();
    let (_, v) = app
        .get_json(
            &format!("/api/conversations/{conversation}/messages"),
            Some(&token),
        )
        .await;
    assert_eq!(v["messages"][1]["status"], "failed", "{v}");
    assert_eq!(v["messages"][1]["content"], "partial ");
    app.stop().await;
}

#[tokio::test]
async fn upstream_gets_model_key_provider_order_and_the_prompt() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let upstream = fake_upstream(Fake::Records(tx)).await;
    let app = App::sqlite(&format!("http://{upstream}/v1/"), |o| {
        o.model = "vendor/model-x".into();
        o.upstream_key = Some("sk-test-123".into());
        o.provider_order = vec!["alpha".into(), "beta".into()];
    })
    .await;
    let (_, token) = app.user().await;
    let r = app
        .ask(
            "/api/docs/ask",
            &token,
            json!({"message": "What is the dividend policy?"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.content(), "ok");
    let raw = tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let head = head.to_lowercase();
    assert!(
        head.starts_with("post /v1/chat/completions http/1.1"),
        "{head}"
    );
    assert!(head.contains("authorization: bearer sk-test-123"), "{head}");
    assert!(
        head.contains(&format!(
            "x-request-id: {}",
            r.header("x-request-id").unwrap()
        )),
        "{head}"
    );
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["model"], "vendor/model-x");
    assert_eq!(v["stream"], true);
    assert_eq!(v["provider"], json!({"order": ["alpha", "beta"]}));
    let messages = v["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "What is the dividend policy?"
    );
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.contains("[fairway-dividend-policy#1]"), "{system}");
    app.stop().await;
}

#[tokio::test]
async fn a_client_leaving_mid_stream_stores_an_interrupted_answer() {
    let emu = Emulator::start(20, 40, 50).await;
    let app = App::sqlite(&emu.base_url(), |_| {}).await;
    let (_, token) = app.user().await;
    let mut resp = app
        .http
        .post(app.url("/api/chat"))
        .bearer_auth(&token)
        .body(json!({"message": "hello"}).to_string())
        .send()
        .await
        .unwrap();
    let conversation: i64 = resp.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut seen = String::new();
    while !seen.contains("\"content\":\"The \"") {
        let c = tokio::time::timeout(WAIT, resp.chunk())
            .await
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&c.expect("more body")));
    }
    drop(resp); // the client goes away ~2 s before the answer would end
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, v) = app
            .get_json(
                &format!("/api/conversations/{conversation}/messages"),
                Some(&token),
            )
            .await;
        if let Some(answer) = v["messages"].get(1) {
            assert_eq!(answer["status"], "interrupted", "{v}");
            let words = answer["content"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .count();
            assert!((1..50).contains(&words), "{v}");
            break;
        }
        assert!(Instant::now() < deadline, "nothing stored: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
}

#[tokio::test]
async fn sqlite_locked_is_503_and_recovers() {
    let emu = Emulator::start(TTFT_MS, ITL_MS, TOKENS).await;
    let (mut options, dir) = common::sqlite_options(&emu.base_url());
    options.db_timeout = Duration::from_millis(200);
    let path = dir.path().join("refapp.db");
    let app = App::start(options).await;
    let (_, token) = app.user().await;

    // Another process-like holder takes the write lock and keeps it: the
    // app's writes wait out their busy timeout, then fail as unavailable.
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let t = Instant::now();
    let (s, v, _) = app
        .post_json("/api/chat", Some(&token), &json!({"message": "hello"}))
        .await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    assert_eq!(v["error"]["type"], "database_unavailable");
    assert!(t.elapsed() < Duration::from_secs(5));
    let (s, v, _) = app
        .post_json(
            "/api/auth/signup",
            None,
            &json!({"email": email(), "password": "long enough pw"}),
        )
        .await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");

    holder.execute_batch("ROLLBACK").unwrap();
    let r = app
        .ask("/api/chat", &token, json!({"message": "hello"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    app.stop().await;
    drop(dir);
}

#[tokio::test]
async fn unopenable_sqlite_path_is_a_clear_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let config = firsttoken_refapp::Config::new(firsttoken_refapp::Options {
        database_url: file.join("refapp.db").display().to_string(),
        ..Default::default()
    })
    .unwrap();
    let r = tokio::time::timeout(WAIT, firsttoken_refapp::AppState::new(config))
        .await
        .unwrap();
    let e = r.err().expect("startup error").to_string();
    assert!(
        e.contains("cannot open the database sqlite:") && e.contains("a-file"),
        "{e}"
    );
}

#[tokio::test]
async fn deleting_a_user_removes_everything_it_owns() {
    let emu = Emulator::start(TTFT_MS, ITL_MS, TOKENS).await;
    let (options, dir) = common::sqlite_options(&emu.base_url());
    let path = dir.path().join("refapp.db");
    let app = App::start(options).await;
    let (user_id, token) = app.user().await;
    let (_, keep_token) = app.user().await;
    for t in [&token, &keep_token] {
        let r = app.ask("/api/chat", t, json!({"message": "hello"})).await;
        assert_eq!(r.status, StatusCode::OK);
    }
    assert!(app.state.store().delete_user(user_id).await.unwrap());
    assert!(!app.state.store().delete_user(user_id).await.unwrap());
    let db = rusqlite::Connection::open(&path).unwrap();
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        count(&format!(
            "SELECT count(*) FROM tokens WHERE user_id = {user_id}"
        )),
        0
    );
    assert_eq!(
        count(&format!(
            "SELECT count(*) FROM conversations WHERE user_id = {user_id}"
        )),
        0
    );
    assert_eq!(
        count("SELECT count(*) FROM messages"),
        2,
        "the other user's"
    );
    let (s, _, _) = app
        .post_json("/api/chat", Some(&token), &json!({"message": "hi"}))
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    app.stop().await;
}

#[tokio::test]
async fn graceful_shutdown_finishes_open_streams() {
    let emu = Emulator::start(200, 10, 5).await;
    let app = App::sqlite(&emu.base_url(), |_| {}).await;
    let (_, token) = app.user().await;
    let req = app
        .http
        .post(app.url("/api/chat"))
        .bearer_auth(&token)
        .body(json!({"message": "hello"}).to_string());
    // Stop once the stream is open: its headers are in, its tokens (after
    // the upstream's 200 ms) are not.
    let (opened, open) = tokio::sync::oneshot::channel();
    let streaming = tokio::spawn(common::read_stream_telling(req, Some(opened)));
    tokio::time::timeout(WAIT, open)
        .await
        .expect("the stream opens in time")
        .expect("the reader tells");
    let addr = app.addr;
    app.stop().await; // waits for the open stream
    let r = tokio::time::timeout(WAIT, streaming)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.done().is_some(), "{}", r.body);
    assert_eq!(r.content().split_whitespace().count(), 5);
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

enum Fake {
    Status500,
    Silent,
    BreaksMidStream,
    /// Answer a short good stream and hand over the raw request.
    Records(tokio::sync::mpsc::UnboundedSender<Vec<u8>>),
}

/// A misbehaving upstream on loopback.
async fn fake_upstream(kind: Fake) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let kind = std::sync::Arc::new(kind);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let kind = kind.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                // Read the request head and body (small JSON).
                while !request_complete(&got) {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                match &*kind {
                    Fake::Records(tx) => {
                        let _ = tx.send(got);
                        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = s.write_all(resp.as_bytes()).await;
                    }
                    Fake::Status500 => {
                        let body =
                            r#"{"error":{"message":"model overloaded","type":"server_error"}}"#;
                        let resp = format!(
                            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = s.write_all(resp.as_bytes()).await;
                    }
                    Fake::Silent => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    Fake::BreaksMidStream => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                        let _ = s.write_all(head.as_bytes()).await;
                        for ev in [
                            r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
                            r#"data: {"choices":[{"index":0,"delta":{"content":"partial "}}]}"#,
                        ] {
                            let payload = format!("{ev}\n\n");
                            let chunk = format!("{:x}\r\n{payload}\r\n", payload.len());
                            let _ = s.write_all(chunk.as_bytes()).await;
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        // Drop the connection mid-body.
                    }
                }
            });
        }
    });
    addr
}

fn request_complete(got: &[u8]) -> bool {
    let Some(head_end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    got.len() >= head_end + 4 + len
}

//! Timing headers (issue 25): the reference app sends `X-Process-Time` in
//! seconds as FastAPI apps do, and each sample stores exactly the value
//! the app sent for that request, converted to ms, as
//! `header:x-process-time`. What the app sent is seen by a layer around
//! the app's own router, keyed by the request id the sample also stores.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::Response;

use common::{assert_ok, emulator, probe};
use firsttoken_drive::Slot;
use firsttoken_plan::{ProbeSpec, RequestTemplate, Target, TimeUnit, TimingHeader};
use firsttoken_refapp::{AppState, Config, Options};

/// `x-process-time` values the app sent, by `x-request-id`.
type Sent = Arc<Mutex<HashMap<String, String>>>;

struct App {
    base: String,
    sent: Sent,
    _emu: common::Emulator,
    _dir: tempfile::TempDir,
}

async fn app() -> App {
    let emu = emulator(
        firsttoken_emulator::Settings {
            ttft: Duration::from_millis(20),
            itl: Duration::from_millis(1),
            tokens: 4,
            ..Default::default()
        },
        None,
    )
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = Config::new(Options {
        database_url: dir.path().join("refapp.db").display().to_string(),
        upstream_url: format!("http://{}/v1", emu.addr),
        process_time_header: true,
        // A modelled database round trip: every authenticated request
        // spends at least this long in the app before its head.
        db_rtt: Duration::from_millis(5),
        ..Options::default()
    })
    .expect("valid refapp options");
    let state = AppState::new(config).await.expect("the app opens");
    let sent = Sent::default();
    let seen = sent.clone();
    let router =
        firsttoken_refapp::app(state).layer(axum::middleware::map_response(move |r: Response| {
            let seen = seen.clone();
            async move {
                let h = |n: &str| r.headers().get(n)?.to_str().ok().map(str::to_string);
                if let (Some(id), Some(t)) = (h("x-request-id"), h("x-process-time")) {
                    seen.lock().unwrap().insert(id, t);
                }
                r
            }
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    App {
        base,
        sent,
        _emu: emu,
        _dir: dir,
    }
}

/// A bearer token of a new account (an untimed set-up call).
async fn token(app: &App) -> String {
    let body = r#"{"email": "timing@bench.invalid", "password": "correct horse battery"}"#;
    let target = Target::parse(&format!("{}/api/auth/signup", app.base)).expect("URL");
    let request =
        RequestTemplate::new(target, None, Some(body.as_bytes().to_vec().into())).expect("request");
    let mut slot = Slot::new(&ProbeSpec::new(request.clone())).expect("slot");
    let (status, body) = slot.fetch(&request).await.expect("sign-up");
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    v["token"].as_str().expect("a token").to_string()
}

fn chat(app: &App, token: &str, requests: u64) -> ProbeSpec {
    let target = Target::parse(&format!("{}/api/chat", app.base)).expect("URL");
    let body = r#"{"message": "hello"}"#;
    let mut request =
        RequestTemplate::new(target, None, Some(body.as_bytes().to_vec().into())).expect("request");
    request
        .add_secret_header_line(&format!("Authorization: Bearer {token}"))
        .expect("header");
    let mut spec = ProbeSpec::new(request);
    spec.requests = requests;
    spec
}

#[tokio::test]
async fn the_value_read_is_the_value_the_app_sent_in_seconds() {
    let app = app().await;
    let token = token(&app).await;
    let samples = probe(chat(&app, &token, 3)).await;
    let counted: Vec<_> = samples.iter().filter(|s| !s.warmup).collect();
    assert_eq!(counted.len(), 3);
    for s in counted {
        assert_ok(s);
        let id = s.request_id.as_deref().expect("the app's request id");
        let sent = app.sent.lock().unwrap().get(id).cloned();
        let sent: f64 = sent
            .expect("the app sent x-process-time for this request")
            .parse()
            .expect("a float of seconds");
        let read = s
            .server_timing
            .as_ref()
            .and_then(|t| t.get("header:x-process-time"));
        assert_eq!(read, Some(&(sent * 1000.0)), "seconds read as ms: {s:#?}");
        // The app's time to its head lies inside the client's own: the
        // unit is right (read as ms it would be 1000 times too small to
        // cover the 5 ms database round trip).
        let read = *read.unwrap();
        let head = s.headers_ms.expect("headers stamped");
        assert!((5.0..=head).contains(&read), "{read} ms vs head {head} ms");
        // Server-Timing is still read beside it.
        assert!(
            s.server_timing.as_ref().unwrap().contains_key("auth"),
            "{s:#?}"
        );
    }
}

#[tokio::test]
async fn only_the_configured_headers_are_read_in_the_configured_unit() {
    let app = app().await;
    let token = token(&app).await;
    let mut spec = chat(&app, &token, 1);
    spec.timing_headers = vec![];
    let none = probe(spec.clone()).await;
    assert!(
        none.iter().all(|s| s
            .server_timing
            .as_ref()
            .is_some_and(|t| !t.contains_key("header:x-process-time"))),
        "{none:#?}"
    );
    // Declared in ms, a bare number of seconds is taken as ms.
    spec.timing_headers = vec![TimingHeader {
        name: "x-process-time".into(),
        unit: TimeUnit::Millis,
    }];
    for s in probe(spec).await.iter().filter(|s| !s.warmup) {
        let id = s.request_id.as_deref().expect("request id");
        let sent: f64 = app.sent.lock().unwrap()[id].parse().unwrap();
        assert_eq!(
            s.server_timing
                .as_ref()
                .unwrap()
                .get("header:x-process-time"),
            Some(&sent)
        );
    }
}

//! A session path measured over a WebSocket (`[app.paths.websocket]`):
//! the emulator's Responses WebSocket mode, warm and fresh phases, every
//! sample stored with its WebSocket stamps.

use tokio_util::sync::CancellationToken;

use firsttoken_plan::config::Config;
use firsttoken_record::{Connection, PhaseKind, Store};
use firsttoken_session::{Overrides, Quiet, SessionSpec, run_session};

#[tokio::test]
async fn a_websocket_path_runs_warm_and_fresh_and_is_stored() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let settings = firsttoken_emulator::Settings {
        ttft: std::time::Duration::from_millis(30),
        itl: std::time::Duration::from_millis(5),
        tokens: 3,
        ..Default::default()
    };
    tokio::spawn(firsttoken_emulator::serve(
        listener,
        firsttoken_emulator::app(settings),
        None,
        shutdown.clone(),
    ));
    let text = format!(
        r#"
[app]
base_url = "{base}"

[[app.paths]]
name = "realtime"
path = "/v1/responses"
format = "responses"
body = '{{"type":"response.create","model":"m","input":"{{prompt}}"}}'
[app.paths.websocket]

[prompts]
list = ["one", "two"]

[phases]
warm = 4
fresh = 2
"#
    );
    let spec = SessionSpec::new(
        Config::parse(&text, "t.toml").unwrap(),
        Overrides::default(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db").display().to_string())
        .await
        .unwrap();
    let out = run_session(&spec, &store, &mut Quiet, CancellationToken::new())
        .await
        .unwrap();
    shutdown.cancel();
    assert_eq!(out.done, 6);
    let rows = store.samples(&out.meta.id).await.unwrap();
    let counted: Vec<_> = rows.iter().filter(|r| !r.sample.warmup).collect();
    assert_eq!(counted.len(), 6);
    for r in &counted {
        let s = &r.sample;
        assert!(s.is_ok(), "{s:#?}");
        assert_eq!(s.http_version.as_deref(), Some("WebSocket"), "{s:#?}");
        assert_eq!(s.status, Some(101), "{s:#?}");
        assert_eq!(s.output_tokens, Some(3), "{s:#?}");
        let want = match r.phase {
            PhaseKind::Warm => Connection::Reused,
            _ => Connection::Fresh,
        };
        assert_eq!(s.connection, want, "{:?}: {s:#?}", r.phase);
        if want == Connection::Fresh {
            assert!(s.headers_ms.is_some(), "the 101 is stamped: {s:#?}");
        }
    }
}

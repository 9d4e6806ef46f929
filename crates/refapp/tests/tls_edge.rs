//! TLS on the app's edge: with a throwaway CA generated at start, a client
//! that trusts the written CA file gets HTTPS over HTTP/2 and HTTP/1.1 (by
//! ALPN), and one that does not is refused.

mod common;

use common::{Emulator, WAIT, sqlite_options};
use firsttoken_refapp::{AppState, Config, TlsSource, serve};
use reqwest::{Certificate, StatusCode, Version};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

fn client(ca: Option<&[u8]>, http1: bool) -> reqwest::Client {
    let mut b = reqwest::Client::builder().no_proxy();
    if let Some(pem) = ca {
        b = b.tls_certs_only([Certificate::from_pem(pem).expect("CA PEM")]);
    }
    if http1 {
        b = b.http1_only();
    }
    b.build().expect("client")
}

#[tokio::test]
async fn https_with_the_written_ca_over_h2_and_http1() {
    let emu = Emulator::start(20, 1, 3).await;
    let (mut o, dir) = sqlite_options(&emu.base_url());
    let ca_path = dir.path().join("ca.pem");
    o.tls = Some(TlsSource::SelfSigned {
        ca_out: Some(ca_path.clone()),
    });
    let state = AppState::new(Config::new(o).expect("config"))
        .await
        .expect("app");
    let ca = std::fs::read(&ca_path).expect("the CA was written");
    assert_eq!(state.tls_ca_pem().map(str::as_bytes), Some(ca.as_slice()));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve(listener, state, shutdown.clone()));

    for (host, http1, want) in [
        ("localhost", false, Version::HTTP_2),
        ("127.0.0.1", true, Version::HTTP_11),
    ] {
        let c = client(Some(&ca), http1);
        let base = format!("https://{host}:{port}");
        let signup = tokio::time::timeout(
            WAIT,
            c.post(format!("{base}/api/auth/signup"))
                .header("content-type", "application/json")
                .body(
                    json!({"email": common::email(), "password": "correct horse battery"})
                        .to_string(),
                )
                .send(),
        )
        .await
        .expect("in time")
        .expect("signup over TLS");
        assert_eq!(signup.version(), want);
        assert_eq!(signup.status(), StatusCode::CREATED);
        let body: serde_json::Value =
            serde_json::from_str(&signup.text().await.expect("body")).expect("json");
        let token = body["token"].as_str().expect("token").to_string();
        let r = common::read_stream(
            c.post(format!("{base}/api/chat"))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(json!({"message": "hello"}).to_string()),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert!(r.done().is_some(), "{}", r.body);
        assert_eq!(r.content().split_whitespace().count(), 3);
    }

    // Without the CA, the certificate is refused.
    let r = tokio::time::timeout(
        WAIT,
        client(None, false)
            .get(format!("https://localhost:{port}/health"))
            .send(),
    )
    .await
    .expect("in time");
    assert!(r.is_err(), "{r:?}");
    // Plain HTTP to the TLS port gets no answer.
    let r = tokio::time::timeout(
        WAIT,
        client(None, true)
            .get(format!("http://127.0.0.1:{port}/health"))
            .send(),
    )
    .await
    .expect("in time");
    assert!(r.is_err(), "{r:?}");

    shutdown.cancel();
    let r = tokio::time::timeout(WAIT, server).await.expect("stops");
    assert!(matches!(r, Ok(Ok(()))), "{r:?}");
}

//! WebSocket as a transport (issue 26): the Responses API's WebSocket mode
//! against the emulator's `GET /v1/responses` upgrade, on drive's own
//! connection path. TTFT agrees with the emulator's truth log within the
//! bounds the HTTP path is held to (`tool_calls.rs`), warm sockets are
//! reused and fresh ones carry every phase, and failures are named samples.

mod common;

use std::time::Duration;

use common::*;
use firsttoken_emulator::{Settings, TruthLog};
use firsttoken_plan::{ConnectionMode, StreamFormat, Transport, WebSocketSpec};
use firsttoken_record::{Connection, Sample};
use http::{HeaderName, HeaderValue};

const CREATE: &str = r#"{"type":"response.create","model":"m","input":"hi there"}"#;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn ws_spec(url: &str, mode: ConnectionMode, requests: u64) -> firsttoken_plan::ProbeSpec {
    let mut s = spec(url);
    s.request.body = Some(CREATE.as_bytes().to_vec().into());
    s.format = StreamFormat::Responses;
    s.transport = Transport::WebSocket(WebSocketSpec::default());
    s.mode = mode;
    s.requests = requests;
    s
}

fn header(s: &mut firsttoken_plan::ProbeSpec, name: &'static str, value: &'static str) {
    s.request.headers.push((
        HeaderName::from_static(name),
        HeaderValue::from_static(value),
    ));
}

#[track_caller]
fn assert_ws_ok(s: &Sample) {
    assert!(s.is_ok(), "expected success: {s:#?}");
    assert_eq!(s.status, Some(101), "{s:#?}");
    assert_eq!(s.http_version.as_deref(), Some("WebSocket"), "{s:#?}");
}

#[tokio::test]
async fn websocket_ttft_agrees_with_the_emulators_truth_log_warm_and_fresh() {
    let (log, truth) = TruthLog::in_memory();
    let emu = emulator(
        Settings {
            ttft: ms(120),
            itl: ms(10),
            tokens: 4,
            truth: log,
            ..Settings::default()
        },
        None,
    )
    .await;
    let url = format!("http://{}/v1/responses", emu.addr);
    for mode in [ConnectionMode::Warm, ConnectionMode::Fresh] {
        let samples = probe(ws_spec(&url, mode, 3)).await;
        // One worker: requests (and their truth records) in order.
        let records: Vec<_> = samples
            .iter()
            .map(|_| truth.recv_timeout(ms(5000)).expect("a truth record"))
            .collect();
        for (s, t) in samples.iter().zip(&records) {
            assert_ws_ok(s);
            assert_eq!(t.path, "/v1/responses");
            let truth_ttft = t.ttft_ms.expect("a first token was sent");
            let ttft = s.ttft_ms.unwrap_or_else(|| panic!("{s:#?}"));
            let sent = s.sent_ms.expect("the request frame was sent");
            // The truth counts from the frame's arrival, the client from
            // before its send (and, fresh, before DNS): never less.
            let overhead = (ttft - sent) - truth_ttft;
            assert!(
                (-1.0..=50.0).contains(&overhead),
                "{mode:?}: client {ttft} ms (sent at {sent}) vs emulator {truth_ttft} ms: {s:#?}"
            );
            // The wire truth sees the upgraded socket: the frame's kernel
            // arrival and the first token's write.
            #[cfg(target_os = "linux")]
            if let Some(wire) = t.wire_ttft_ms {
                let wire_overhead = (ttft - sent) - wire;
                assert!(
                    (-1.0..=50.0).contains(&wire_overhead),
                    "{mode:?}: client {ttft} ms (sent at {sent}) vs wire {wire} ms: {s:#?}"
                );
            }
            assert!(t.wire_first_token_ms.is_some(), "{t:?}");
            assert_eq!(s.output_tokens, Some(4), "{s:#?}");
            assert_eq!(s.content_chunks, 4, "{s:#?}");
            let ttfb = s.ttfb_ms.expect("a first frame");
            let ttfe = s.ttfe_ms.expect("a first event");
            assert!(sent <= ttfb && ttfb <= ttfe && ttfe <= ttft, "{s:#?}");
            assert!(s.e2e_ms.expect("an end") >= s.last_token_ms.expect("a last token"));
        }
        // Linux stamps the frames' arrival in the kernel (once it has
        // turned stamping on, a moment after the first socket asks).
        #[cfg(target_os = "linux")]
        assert!(
            records.iter().any(|t| t.wire_ttft_ms.is_some()),
            "{records:?}"
        );
        let counted = counted(&samples);
        assert_eq!(counted.len(), 3);
        match mode {
            ConnectionMode::Warm => {
                for s in &counted {
                    assert_eq!(s.connection, Connection::Reused, "{s:#?}");
                    assert_eq!(s.connect_ms, None, "a reused socket has no set-up: {s:#?}");
                    assert_eq!(s.headers_ms, None, "no upgrade on a reused socket: {s:#?}");
                }
            }
            ConnectionMode::Fresh => {
                for s in &counted {
                    assert_eq!(s.connection, Connection::Fresh, "{s:#?}");
                    let connect = s.connect_ms.expect("TCP connect");
                    let upgraded = s.headers_ms.expect("the 101 arrived");
                    assert!(
                        connect <= upgraded && upgraded <= s.sent_ms.unwrap(),
                        "{s:#?}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn the_sessions_opening_is_sent_and_its_reply_awaited_before_the_request() {
    let emu = emulator(
        Settings {
            ttft: ms(30),
            itl: ms(5),
            tokens: 3,
            ..Settings::default()
        },
        None,
    )
    .await;
    let url = format!("http://{}/v1/responses", emu.addr);
    // The emulator answers an unknown client event with an `error` event:
    // awaited as the opening's reply, it shows the opening went out first.
    let mut s = ws_spec(&url, ConnectionMode::Fresh, 1);
    s.transport = Transport::WebSocket(WebSocketSpec {
        opening: Some(r#"{"type":"session.update"}"#.into()),
        await_type: Some("error".into()),
        socketio: None,
    });
    let samples = probe(s).await;
    assert_eq!(samples.len(), 1);
    let s = &samples[0];
    assert_ws_ok(s);
    assert!(s.headers_ms.unwrap() <= s.sent_ms.unwrap(), "{s:#?}");
    // A reply that never comes is a timeout named for the opening.
    let mut s = ws_spec(&url, ConnectionMode::Fresh, 1);
    s.transport = Transport::WebSocket(WebSocketSpec {
        opening: None,
        await_type: Some("session.created".into()),
        socketio: None,
    });
    s.timeouts.request = ms(400);
    let samples = probe(s).await;
    let m = assert_failed(&samples[0], "timeout");
    assert!(m.contains("opening"), "{m}");
}

#[tokio::test]
async fn websocket_failures_are_named_samples() {
    let emu = emulator(
        Settings {
            ttft: ms(20),
            itl: ms(5),
            tokens: 6,
            ..Settings::default()
        },
        None,
    )
    .await;
    // The upgrade refused: its status.
    let s = &probe(ws_spec(
        &format!("http://{}/v1/nope", emu.addr),
        ConnectionMode::Fresh,
        1,
    ))
    .await[0];
    let m = assert_failed(s, "http_status");
    assert!(m.contains("404"), "{m}");
    assert_eq!(s.status, Some(404), "{s:#?}");
    let url = format!("http://{}/v1/responses", emu.addr);
    // The socket dropped mid-stream, without a close frame.
    let mut spec = ws_spec(&url, ConnectionMode::Fresh, 1);
    header(&mut spec, "x-emulator-fault", "drop");
    header(&mut spec, "x-emulator-fault-after-tokens", "2");
    let s = &probe(spec).await[0];
    let m = assert_failed(s, "truncated");
    assert!(m.contains("closed"), "{m}");
    assert!(s.ttft_ms.is_some(), "two tokens came first: {s:#?}");
    // An error event in the stream.
    let mut spec = ws_spec(&url, ConnectionMode::Fresh, 1);
    header(&mut spec, "x-emulator-fault", "stream-error");
    assert_failed(&probe(spec).await[0], "stream_error");
    // An error status before the stream comes as an `error` event.
    let mut spec = ws_spec(&url, ConnectionMode::Fresh, 1);
    header(&mut spec, "x-emulator-fault", "429");
    assert_failed(&probe(spec).await[0], "stream_error");
    // A server that accepts and never answers the upgrade.
    let silent = silent_server().await;
    let mut spec = ws_spec(
        &format!("http://{}/v1/responses", silent.addr),
        ConnectionMode::Fresh,
        1,
    );
    spec.timeouts.request = ms(300);
    let s = &probe(spec).await[0];
    assert_failed(s, "timeout");
    assert!(s.connect_ms.is_some(), "{s:#?}");
}

#[tokio::test]
async fn wss_carries_the_tls_phase_and_the_same_stream() {
    let (emu, pki) = tls_emulator(Settings {
        ttft: ms(40),
        itl: ms(5),
        tokens: 3,
        ..Settings::default()
    })
    .await;
    let mut s = tls_spec(&emu, &pki);
    let port = emu.addr.port();
    s.request = ws_spec(
        &format!("https://localhost:{port}/v1/responses"),
        ConnectionMode::Fresh,
        1,
    )
    .request;
    s.format = StreamFormat::Responses;
    s.transport = Transport::WebSocket(WebSocketSpec::default());
    let samples = probe(s).await;
    let s = &samples[0];
    assert_ws_ok(s);
    let tls = s.tls_ms.expect("a TLS handshake");
    assert!(tls <= s.headers_ms.unwrap() && s.headers_ms.unwrap() <= s.ttft_ms.unwrap());
    assert_eq!(s.output_tokens, Some(3));
}

/// What the scripted WebSocket server sends for each request frame.
#[derive(Clone)]
enum Out {
    Text(String),
    Binary(Vec<u8>),
}

fn responses_answer() -> Vec<Out> {
    [
        r#"{"type":"response.created","sequence_number":0,"response":{}}"#,
        r#"{"type":"response.output_text.delta","sequence_number":1,"delta":"Hi"}"#,
        r#"{"type":"response.completed","sequence_number":2,"response":{"usage":{"input_tokens":1,"output_tokens":1}}}"#,
    ]
    .into_iter()
    .map(|f| Out::Text(f.into()))
    .collect()
}

/// A WebSocket server (tungstenite's accept) that answers the first
/// request frame on each socket with `frames`, then closes the socket:
/// the next request on it meets a stale socket.
async fn one_answer_per_socket(
    frames: Vec<Out>,
) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let frames = frames.clone();
            tokio::spawn(async move {
                let _ = tcp.set_nodelay(true);
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                if let Some(Ok(Message::Text(_))) = ws.next().await {
                    for frame in frames {
                        let m = match frame {
                            Out::Text(t) => Message::text(t),
                            Out::Binary(b) => Message::binary(b),
                        };
                        if ws.send(m).await.is_err() {
                            return;
                        }
                    }
                }
                let _ = ws.close(None).await;
            });
        }
    });
    (addr, task)
}

#[tokio::test]
async fn hostile_frames_are_named_failures_and_a_close_ends_a_stream_without_terminator() {
    let cases: [(Vec<Out>, &str, Option<&str>); 3] = [
        // Over the event bound: refused while reading, as decode.
        (
            vec![Out::Text(format!(r#"{{"delta":"{}"}}"#, "a".repeat(4096)))],
            "responses",
            Some("decode"),
        ),
        (
            vec![Out::Binary(vec![0, 1, 2])],
            "responses",
            Some("decode"),
        ),
        // A custom stream has no terminator: the close is its end.
        (
            vec![
                Out::Text(r#"{"t":"one"}"#.into()),
                Out::Text(r#"{"t":"two"}"#.into()),
            ],
            "sse-json:/t",
            None,
        ),
    ];
    for (frames, format, fails) in cases {
        let (addr, server) = one_answer_per_socket(frames).await;
        let mut s = ws_spec(&format!("http://{addr}/x"), ConnectionMode::Fresh, 1);
        s.format = format.parse().unwrap();
        s.max_event_bytes = 1024;
        let samples = probe(s).await;
        server.abort();
        let s = &samples[0];
        match fails {
            Some(kind) => {
                assert_failed(s, kind);
            }
            None => {
                assert_ws_ok(s);
                assert_eq!(s.content_chunks, 2, "{s:#?}");
            }
        }
    }
}

#[tokio::test]
async fn a_socket_the_server_closed_while_idle_is_retried_once_on_a_new_one() {
    let (addr, server) = one_answer_per_socket(responses_answer()).await;
    let mut s = ws_spec(
        &format!("http://{addr}/v1/responses"),
        ConnectionMode::Warm,
        2,
    );
    s.format = StreamFormat::Responses;
    let samples = probe(s).await;
    server.abort();
    for s in counted(&samples) {
        assert_ws_ok(s);
        // The warm-up's socket was closed after its answer: each counted
        // request found its socket stale and went again on a new one.
        assert!(s.retried_stale, "{s:#?}");
        assert_eq!(s.connection, Connection::Fresh, "{s:#?}");
        assert!(s.headers_ms.is_some(), "{s:#?}");
    }
}

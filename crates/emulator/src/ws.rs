//! `GET /v1/responses` upgraded to a WebSocket: the Responses API's
//! WebSocket mode. Each text frame `{"type":"response.create", …}` (the
//! `POST /v1/responses` body without `stream`) is answered with one text
//! frame per Responses event, the same events, providers, routing, faults
//! and truth log as the SSE endpoint: the request goes through the same
//! `respond` as a POST with `"stream": true`, and each SSE event of its
//! body leaves as a frame the moment the body yields it.
//!
//! The upgrade's `x-emulator-*` headers apply to every response on the
//! socket. A refused request (a 4xx or an injected 429/500/503) is an
//! `error` event `{"type":"error","status":…,"error":{…}}` and the socket
//! stays open; a `drop` fault closes the socket without a close frame. One
//! response at a time per socket: later frames wait.
//!
//! The truth log's `wire_read_ms` is the kernel receive time of the read
//! that carried the `response.create` frame, its `wire_first_token_ms` the
//! write that carried the first token's frame (the socket is the accepted
//! connection's own, upgraded, so [`crate::wire`] sees both).

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::stream::Endpoint;
use crate::wire::Wire;
use crate::{AppState, respond};

/// Largest error body read back into an `error` event.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// `GET /v1/responses` with a WebSocket upgrade.
pub(crate) async fn responses_ws(
    State(state): State<Arc<AppState>>,
    wire: Option<Extension<Arc<Wire>>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let wire = wire.map(|Extension(w)| w);
    upgrade.on_upgrade(move |socket| session(state, headers, wire, socket))
}

fn error_event(status: u16, code: &str, message: &str) -> String {
    json!({
        "type": "error",
        "status": status,
        "error": {"type": "invalid_request_error", "code": code, "message": message},
    })
    .to_string()
}

async fn session(
    state: Arc<AppState>,
    headers: HeaderMap,
    wire: Option<Arc<Wire>>,
    mut socket: WebSocket,
) {
    while let Some(Ok(msg)) = socket.recv().await {
        let text = match msg {
            Message::Text(t) => t,
            Message::Close(_) => return,
            _ => continue,
        };
        let mut req = match serde_json::from_str::<Value>(text.as_str()) {
            Ok(Value::Object(o)) => o,
            _ => {
                let e = error_event(400, "invalid_json", "a frame must be a JSON object");
                if socket.send(Message::Text(e.into())).await.is_err() {
                    return;
                }
                continue;
            }
        };
        if req.get("type").and_then(Value::as_str) != Some("response.create") {
            let e = error_event(
                400,
                "unknown_event_type",
                "the only client event is response.create",
            );
            if socket.send(Message::Text(e.into())).await.is_err() {
                return;
            }
            continue;
        }
        req.remove("type");
        req.insert("stream".into(), Value::Bool(true));
        let body = Bytes::from(Value::Object(req).to_string());
        let resp = respond(
            state.clone(),
            Endpoint::Responses,
            "/v1/responses",
            headers.clone(),
            body,
            wire.clone(),
        )
        .await;
        if !forward(resp, &mut socket).await {
            return;
        }
    }
}

/// Send `resp` on the socket: an error status as one `error` event, a
/// stream as one frame per SSE event. `false`: the socket is done (closed
/// by the peer, or a `drop` fault).
async fn forward(resp: Response, socket: &mut WebSocket) -> bool {
    let status = resp.status();
    let mut body = resp.into_body();
    if !status.is_success() {
        let mut buf = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(d) = frame.data_ref() {
                buf.extend_from_slice(&d[..d.len().min(ERROR_BODY_LIMIT - buf.len())]);
                if buf.len() >= ERROR_BODY_LIMIT {
                    break;
                }
            }
        }
        let error = serde_json::from_slice::<Value>(&buf)
            .ok()
            .and_then(|v| v.get("error").cloned())
            .unwrap_or_else(|| json!({"message": String::from_utf8_lossy(&buf)}));
        let e = json!({"type": "error", "status": status.as_u16(), "error": error});
        return socket
            .send(Message::Text(e.to_string().into()))
            .await
            .is_ok();
    }
    let mut pending: Vec<u8> = Vec::new();
    loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                let Some(d) = frame.data_ref() else { continue };
                pending.extend_from_slice(d);
                // Every whole SSE event in what arrived leaves as a frame now.
                while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                    let event: Vec<u8> = pending.drain(..end + 2).collect();
                    if let Some(data) = sse_data(&event)
                        && socket.send(Message::Text(data.into())).await.is_err()
                    {
                        return false;
                    }
                }
            }
            // An injected drop: the socket goes without a close frame.
            Some(Err(_)) => return false,
            None => return true,
        }
    }
}

/// The joined `data:` lines of one SSE event (the emulator writes LF
/// line ends); `None` for an event without data.
fn sse_data(event: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(event);
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_become_their_data() {
        assert_eq!(
            sse_data(b"event: response.created\ndata: {\"a\":1}\n\n").as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(sse_data(b": comment\n\n"), None);
        assert_eq!(sse_data(b"data: a\ndata:b\n\n").as_deref(), Some("a\nb"));
    }
}

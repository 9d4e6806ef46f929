//! `[app.paths.websocket]`: a path measured over a WebSocket instead of
//! HTTP requests. The path's URL (the base URL's `http`/`https` and the
//! path) is upgraded; its `body` (with `{prompt}` filled in) is sent as one
//! text frame per request, and every text frame back is one event of the
//! path's `format` (e.g. `responses` for the Responses API's WebSocket mode).
//!
//! ```toml
//! [[app.paths]]
//! name = "realtime"
//! path = "/v1/responses"
//! format = "responses"
//! body = '{"type":"response.create","model":"m","input":"{prompt}"}'
//! [app.paths.websocket]
//! await_type = "session.created"   # optional: wait for it on a new socket
//! opening = '{"type":"session.update","session":{}}'  # optional: sent first
//! ```
//!
//! A Socket.IO app (Open WebUI, Chainlit, Flask-SocketIO) adds
//! `[app.paths.websocket.socketio]`; the path is its Engine.IO endpoint
//! (`/socket.io/`, `EIO=4&transport=websocket` is added when missing):
//!
//! ```toml
//! [[app.paths]]
//! name = "chat"
//! path = "/socket.io/"
//! format = "sse-json:/data/content"
//! body = '{"chat_id":"c1","prompt":"{prompt}"}'
//! [app.paths.websocket.socketio]
//! event = "chat"
//! reply_event = "chat-events"
//! done_pointer = "/data/done"
//! error_pointer = "/data/error"
//! ```

use serde::{Deserialize, Serialize};

use crate::{SocketIoSpec, WebSocketSpec};

/// `[app.paths.websocket]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSocketSection {
    /// A text frame sent once on each new socket, right after the upgrade
    /// and before the first request (a session's own set-up message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<String>,
    /// On each new socket, wait for a text frame whose JSON `type` is this
    /// (e.g. `session.created`) before the first request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub await_type: Option<String>,
    /// Speak Socket.IO (Engine.IO v4) on the socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socketio: Option<SocketIoSection>,
}

/// `[app.paths.websocket.socketio]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SocketIoSection {
    /// The event the request body is emitted as (e.g. `chat`).
    pub event: String,
    /// The event that carries the answer's tokens (e.g. `chat-events`).
    pub reply_event: String,
    /// JSON pointer into a reply's payload whose `true` ends the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_pointer: Option<String>,
    /// An event whose arrival ends the answer (e.g. `stream_end`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_event: Option<String>,
    /// JSON pointer into a reply's payload where a value other than null
    /// or false is an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_pointer: Option<String>,
    /// The CONNECT packet's auth payload, a JSON object; a token in it is
    /// named as `$NAME`, read from the environment at run time (the config
    /// is stored with the session; the value never is), e.g.
    /// `'{"token": "$APP_TOKEN"}'`. Masked in any error that quotes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
}

impl WebSocketSection {
    /// The drive-side settings these keys ask for.
    pub fn spec(&self) -> WebSocketSpec {
        WebSocketSpec {
            opening: self.opening.clone(),
            await_type: self.await_type.clone(),
            socketio: self.socketio.as_ref().map(|s| SocketIoSpec {
                event: s.event.clone(),
                reply_event: s.reply_event.clone(),
                done_pointer: s.done_pointer.clone(),
                end_event: s.end_event.clone(),
                error_pointer: s.error_pointer.clone(),
                auth: s.auth.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, DEFAULT_CONFIG};

    fn with_chat_line(line: &str) -> String {
        DEFAULT_CONFIG.replacen(
            "name = \"chat\"\n",
            &format!("name = \"chat\"\n{line}\n"),
            1,
        )
    }

    #[test]
    fn a_path_over_a_websocket_parses_and_is_checked() {
        let text = with_chat_line(
            r#"websocket = { await_type = "session.created", opening = '{"type":"session.update"}' }"#,
        );
        let c = Config::parse(&text, "f.toml").unwrap();
        let w = c.app.paths[0].websocket.as_ref().unwrap().spec();
        assert_eq!(w.await_type.as_deref(), Some("session.created"));
        assert_eq!(w.opening.as_deref(), Some(r#"{"type":"session.update"}"#));
        assert!(c.app.paths[1].websocket.is_none());
        // No keys: a plain socket.
        let c = Config::parse(&with_chat_line("websocket = {}"), "f.toml").unwrap();
        assert_eq!(
            c.app.paths[0].websocket.as_ref().unwrap().spec(),
            Default::default()
        );
        let e = Config::parse(
            &with_chat_line(r#"websocket = { await_type = "" }"#),
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("app.paths[0].websocket") && e.contains("awaited"),
            "{e}"
        );
        let c = Config::parse(
            &with_chat_line(
                r#"websocket = { socketio = { event = "chat", reply_event = "chat-events", done_pointer = "/data/done" } }"#,
            ),
            "f.toml",
        )
        .unwrap();
        let sio = c.app.paths[0]
            .websocket
            .as_ref()
            .unwrap()
            .spec()
            .socketio
            .unwrap();
        assert_eq!(
            (sio.event.as_str(), sio.reply_event.as_str()),
            ("chat", "chat-events")
        );
        let e = Config::parse(
            &with_chat_line(
                r#"websocket = { socketio = { event = "chat", reply_event = "r", done_pointer = "done" } }"#,
            ),
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("JSON pointer"), "{e}");
        let e = Config::parse(&with_chat_line(r#"websocket = { wait = "x" }"#), "f.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("wait"), "{e}");
    }
}

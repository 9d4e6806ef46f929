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

use serde::{Deserialize, Serialize};

use crate::WebSocketSpec;

/// `[app.paths.websocket]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
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
}

impl WebSocketSection {
    /// The drive-side settings these keys ask for.
    pub fn spec(&self) -> WebSocketSpec {
        WebSocketSpec {
            opening: self.opening.clone(),
            await_type: self.await_type.clone(),
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
        let e = Config::parse(&with_chat_line(r#"websocket = { wait = "x" }"#), "f.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("wait"), "{e}");
    }
}

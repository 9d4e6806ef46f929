//! How a request reaches its target: an HTTP request, or a text frame on a
//! WebSocket (the Responses API's WebSocket mode, realtime-style sessions,
//! an app's own socket).

/// The transport of a destination's requests.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Transport {
    /// One HTTP request per measurement (HTTP/1.1 or HTTP/2).
    #[default]
    Http,
    /// A WebSocket (RFC 6455, over HTTP/1.1's upgrade): the request body is
    /// sent as one text frame and each text frame back is one stream event.
    WebSocket(WebSocketSpec),
}

impl Transport {
    /// The WebSocket settings, when the transport is a WebSocket.
    pub fn websocket(&self) -> Option<&WebSocketSpec> {
        match self {
            Transport::Http => None,
            Transport::WebSocket(w) => Some(w),
        }
    }
}

/// A WebSocket session's own opening, done once per new socket after the
/// upgrade and before its first request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WebSocketSpec {
    /// A text frame sent first on each new socket (e.g. a realtime
    /// session's `{"type":"session.update",…}`); `None`: nothing is sent.
    pub opening: Option<String>,
    /// Wait, on each new socket, for a text frame whose JSON `type` is this
    /// (e.g. `session.created`) before sending the request; `None`: no wait.
    pub await_type: Option<String>,
    /// Speak Socket.IO (Engine.IO v4) on the socket; `None`: plain frames.
    pub socketio: Option<SocketIoSpec>,
}

/// A Socket.IO conversation: the request is emitted as an event whose
/// payload is the request body, and the answer's tokens come back as
/// events of another name, read with the path's format (e.g.
/// `sse-json:/data/content` for Open WebUI's `chat-events`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SocketIoSpec {
    /// The event the request is emitted as (e.g. `chat`).
    pub event: String,
    /// The event that carries the answer (e.g. `chat-events`; Chainlit's `stream_token`).
    pub reply_event: String,
    /// A JSON pointer into a reply event's payload whose value `true`
    /// ends the answer (e.g. `/data/done`); that event is not content.
    pub done_pointer: Option<String>,
    /// An event whose arrival ends the answer (e.g. Chainlit's `stream_end`).
    pub end_event: Option<String>,
    /// A JSON pointer into a reply event's payload where a value other than
    /// `null` or `false` is an error (e.g. `/data/error`).
    pub error_pointer: Option<String>,
    /// The Socket.IO CONNECT packet's auth payload, a JSON object (e.g.
    /// `{"token":"…"}`); `None`: a bare `40`.
    pub auth: Option<String>,
}

impl WebSocketSpec {
    /// The secrets this socket's opening carries: the Socket.IO auth
    /// payload whole and each string in it (a token a server may echo
    /// back in an error).
    pub fn secrets(&self) -> Vec<String> {
        fn leaves(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::String(s) if !s.is_empty() => out.push(s.clone()),
                serde_json::Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
                serde_json::Value::Object(o) => o.values().for_each(|x| leaves(x, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        if let Some(a) = self.socketio.as_ref().and_then(|s| s.auth.as_ref()) {
            out.push(a.clone());
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(a) {
                leaves(&v, &mut out);
            }
        }
        // Longest first, so a secret inside another is masked whole.
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out
    }

    /// `text` with every secret of [`WebSocketSpec::secrets`] (as written
    /// and JSON-escaped) masked as `***`.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in self.secrets() {
            let escaped = crate::flow::json_escape(&s);
            out = out.replace(&s, "***").replace(&escaped, "***");
        }
        out
    }

    /// Check that the opening frame, when given, is not empty and that the
    /// awaited type, when given, names one.
    pub fn validate(&self) -> Result<(), crate::PlanError> {
        if let Some(sio) = &self.socketio {
            let bad = |m: String| Err(crate::PlanError::WebSocket(format!("Socket.IO: {m}")));
            if sio.event.is_empty() || sio.reply_event.is_empty() {
                return bad("name the event to emit and the reply event".into());
            }
            for p in [&sio.done_pointer, &sio.error_pointer]
                .into_iter()
                .flatten()
            {
                if !p.starts_with('/') {
                    return bad(format!("{p:?} is not a JSON pointer (e.g. \"/data/done\")"));
                }
            }
            if let Some(a) = &sio.auth
                && !serde_json::from_str::<serde_json::Value>(a).is_ok_and(|v| v.is_object())
            {
                // Not echoed: it may hold a token.
                return bad(
                    "the auth payload is not a JSON object (e.g. '{\"token\":\"…\"}')".into(),
                );
            }
        }
        if self.opening.as_deref().is_some_and(|o| o.trim().is_empty()) {
            return Err(crate::PlanError::WebSocket(
                "the opening message is empty: give the text frame to send, or leave it out".into(),
            ));
        }
        if self
            .await_type
            .as_deref()
            .is_some_and(|t| t.trim().is_empty())
        {
            return Err(crate::PlanError::WebSocket(
                "the awaited reply type is empty: name the event type (e.g. session.created), or leave it out".into(),
            ));
        }
        Ok(())
    }
}

/// `ws://…` and `wss://…` as the `http://…` and `https://…` URL of the
/// same upgrade request, or `None` for any other URL.
pub fn ws_url(url: &str) -> Option<String> {
    let lower = url.get(..6).map(str::to_ascii_lowercase)?;
    if lower.starts_with("ws://") {
        Some(format!("http://{}", &url[5..]))
    } else if lower == "wss://" {
        Some(format!("https://{}", &url[6..]))
    } else {
        None
    }
}

#[cfg(test)]
mod scrub_tests {
    use super::*;

    #[test]
    fn the_socketio_auth_payload_and_its_strings_are_masked() {
        let spec = WebSocketSpec {
            socketio: Some(SocketIoSpec {
                auth: Some(r#"{"token":"tok-\"secret\"-123","n":4}"#.into()),
                ..SocketIoSpec::default()
            }),
            ..WebSocketSpec::default()
        };
        let echoed = r#"refused {"token":"tok-\"secret\"-123","n":4} and tok-"secret"-123"#;
        let out = spec.scrub(echoed);
        assert!(!out.contains("secret"), "{out}");
        assert_eq!(out, "refused *** and ***");
        assert_eq!(WebSocketSpec::default().scrub("x tok y"), "x tok y");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_urls_map_to_their_upgrade_urls() {
        assert_eq!(
            ws_url("ws://127.0.0.1:9/v1/responses").as_deref(),
            Some("http://127.0.0.1:9/v1/responses")
        );
        assert_eq!(ws_url("WSS://h/x").as_deref(), Some("https://h/x"));
        assert_eq!(ws_url("http://h/x"), None);
        assert_eq!(ws_url("ws:"), None);
    }
}

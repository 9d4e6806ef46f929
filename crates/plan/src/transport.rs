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
}

impl WebSocketSpec {
    /// Check that the opening frame, when given, is not empty and that the
    /// awaited type, when given, names one.
    pub fn validate(&self) -> Result<(), crate::PlanError> {
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

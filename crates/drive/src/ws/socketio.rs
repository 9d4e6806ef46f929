//! Socket.IO (protocol 5) over Engine.IO v4, on drive's own WebSocket.
//!
//! Each WebSocket text frame is one Engine.IO packet, its type the first
//! character: `0` open (the session's parameters), `1` close, `2` ping (the
//! server pings in v4; the client answers `3` pong at once), `4` message,
//! `6` noop. A message carries a Socket.IO packet, again typed by its first
//! character: `0` CONNECT (`40` from the client, `40{"sid":…}` back), `1`
//! DISCONNECT, `2` EVENT (`42["name",payload]`), `3` ACK, `4` CONNECT_ERROR.
//! A namespace other than `/` (`42/admin,[…]`) and binary packets are not
//! spoken here, and neither is the long-polling transport: the client goes
//! straight to `?EIO=4&transport=websocket`, as a browser whose WebSocket
//! works ends up doing (python-socketio's server then opens with
//! `"upgrades":[]`).
//!
//! The handshake (upgrade 101, the open packet, CONNECT and its answer)
//! runs before the request and is timed with it on a new socket. The
//! request is one EVENT whose payload is the request body; the answer's
//! tokens are EVENTs of the reply name, each stamped when the read that
//! completed its frame happened, and its payload decoded with the path's
//! format (e.g. `sse-json:/data/content`). A `true` at the done pointer, or
//! the end event, ends the answer; a value at the error pointer fails it.
//!
//! Why not a Socket.IO crate: `rust_socketio` (the maintained Rust client)
//! opens its own connection (its own DNS, TCP and TLS through its own
//! tungstenite or reqwest stack, polling first by default), so none of
//! drive's phase stamps, kernel receive stamps or taps would see its bytes,
//! and it hands each event to a callback on its own task: the event's
//! arrival could only be stamped after a cross-task hop. The framing is a
//! character and a JSON array; written here over the WebSocket layer, every
//! event keeps the stamp of the socket read that brought it.

use serde_json::Value;

use firsttoken_plan::SocketIoSpec;

/// One Engine.IO packet as the client cares about it.
#[derive(Debug, PartialEq)]
pub(crate) enum Packet {
    /// Engine.IO open: the session started.
    Open,
    /// Engine.IO ping: answer with a pong.
    Ping,
    /// Socket.IO CONNECT accepted, with the session id the server gave
    /// (`40{"sid":…}`: the one an app's HTTP requests name it by).
    Connected(Option<String>),
    /// Socket.IO CONNECT refused, with the server's words.
    ConnectError(String),
    /// A Socket.IO EVENT on the default namespace: its name and first argument.
    Event { name: String, payload: Value },
    /// Engine.IO close or Socket.IO DISCONNECT.
    Closed,
    /// Anything else: pongs, noops, acks, other namespaces, binary packets.
    Other,
}

/// Read one text frame as an Engine.IO packet.
pub(crate) fn parse(frame: &str) -> Packet {
    let mut chars = frame.chars();
    match chars.next() {
        Some('0') => Packet::Open,
        Some('1') => Packet::Closed,
        Some('2') => Packet::Ping,
        Some('4') => message(chars.as_str()),
        _ => Packet::Other,
    }
}

/// A Socket.IO packet (inside an Engine.IO message).
fn message(p: &str) -> Packet {
    let (kind, rest) = match p.chars().next() {
        Some(c) => (c, &p[c.len_utf8()..]),
        None => return Packet::Other,
    };
    // Another namespace (`/admin,…`) is not ours.
    if rest.starts_with('/') && !rest.starts_with("/,") {
        return Packet::Other;
    }
    let rest = rest.strip_prefix("/,").unwrap_or(rest);
    match kind {
        '0' => Packet::Connected(
            serde_json::from_str::<Value>(rest)
                .ok()
                .and_then(|v| v.get("sid").and_then(Value::as_str).map(str::to_string)),
        ),
        '1' => Packet::Closed,
        '4' => Packet::ConnectError(crate::decode::bounded_text(rest)),
        '2' => {
            // An ack id (digits) may come before the array.
            let json = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            match serde_json::from_str::<Value>(json) {
                Ok(Value::Array(mut a)) if !a.is_empty() => {
                    let name = match a.remove(0) {
                        Value::String(s) => s,
                        _ => return Packet::Other,
                    };
                    let payload = if a.is_empty() {
                        Value::Null
                    } else {
                        a.remove(0)
                    };
                    Packet::Event { name, payload }
                }
                _ => Packet::Other,
            }
        }
        _ => Packet::Other,
    }
}

/// A Socket.IO EVENT on the default namespace carried by one Engine.IO
/// text frame (`42["name",payload]`, an ack id allowed): its name and first
/// argument; `None` for any other packet. For readers of frames another
/// client exchanged (a browser's WebSocket).
pub fn socketio_event(frame: &str) -> Option<(String, Value)> {
    match parse(frame) {
        Packet::Event { name, payload } => Some((name, payload)),
        _ => None,
    }
}

/// The CONNECT packet for `spec`: `40`, or `40{auth}`.
pub(crate) fn connect_frame(spec: &SocketIoSpec) -> String {
    match &spec.auth {
        Some(a) => format!("40{a}"),
        None => "40".into(),
    }
}

/// The request as an EVENT: `42["event",body]`, the body as JSON when it
/// is JSON, else as a string.
pub(crate) fn emit_frame(spec: &SocketIoSpec, body: &str) -> String {
    let payload =
        serde_json::from_str::<Value>(body).unwrap_or_else(|_| Value::String(body.into()));
    format!(
        "42{}",
        Value::Array(vec![Value::String(spec.event.clone()), payload])
    )
}

/// `path` with the Engine.IO query (`EIO=4&transport=websocket`) added when it has none.
pub(crate) fn endpoint_path(path: &str) -> String {
    if path.contains("EIO=") {
        return path.to_string();
    }
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}EIO=4&transport=websocket")
}

/// What a reply event says beyond its content.
#[derive(Debug, PartialEq)]
pub(crate) enum Reply {
    /// Content for the decoder.
    Content,
    /// The answer ended (the done pointer is `true`).
    Done,
    /// The answer failed, with the error's text.
    Error(String),
}

/// Classify a reply event's payload by the spec's pointers.
pub(crate) fn reply(spec: &SocketIoSpec, payload: &Value) -> Reply {
    if let Some(p) = &spec.error_pointer
        && let Some(e) = payload.pointer(p)
        && !matches!(e, Value::Null | Value::Bool(false))
    {
        let text = match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return Reply::Error(crate::decode::bounded_text(&text));
    }
    if let Some(p) = &spec.done_pointer
        && payload.pointer(p) == Some(&Value::Bool(true))
    {
        return Reply::Done;
    }
    Reply::Content
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        /// Any frame a hostile server sends is a packet, never a panic.
        #[test]
        fn any_frame_parses(frame in "\\PC{0,40}", tail in "[0-9/,\\[\\]\"a-z{}:]{0,20}") {
            let _ = parse(&frame);
            for prefix in ["4", "42", "40", "44", "42/", "421", "0"] {
                let _ = parse(&format!("{prefix}{tail}"));
            }
        }
    }

    fn spec() -> SocketIoSpec {
        SocketIoSpec {
            event: "chat".into(),
            reply_event: "chat-events".into(),
            done_pointer: Some("/data/done".into()),
            error_pointer: Some("/data/error".into()),
            ..SocketIoSpec::default()
        }
    }

    #[test]
    fn packets_as_python_socketio_sends_them() {
        assert_eq!(
            parse(r#"0{"sid":"x","upgrades":[],"pingTimeout":20000,"pingInterval":25000}"#),
            Packet::Open
        );
        assert_eq!(
            parse(r#"40{"sid":"T23G"}"#),
            Packet::Connected(Some("T23G".into()))
        );
        assert_eq!(parse("40"), Packet::Connected(None));
        assert_eq!(parse("2"), Packet::Ping);
        assert_eq!(parse("3"), Packet::Other);
        assert_eq!(
            parse(r#"42["chat-events",{"data":{"content":"The ","done":false}}]"#),
            Packet::Event {
                name: "chat-events".into(),
                payload: json!({"data":{"content":"The ","done":false}})
            }
        );
        assert_eq!(
            parse(r#"421["chat",{"a":1}]"#),
            Packet::Event {
                name: "chat".into(),
                payload: json!({"a":1})
            }
        );
        assert_eq!(parse(r#"42/admin,["x",1]"#), Packet::Other);
        assert_eq!(parse(r#"431[{"status":true}]"#), Packet::Other);
        assert_eq!(
            parse(r#"44{"message":"not allowed"}"#),
            Packet::ConnectError(r#"{"message":"not allowed"}"#.into())
        );
        assert_eq!(parse("41"), Packet::Closed);
        assert_eq!(parse("1"), Packet::Closed);
        assert_eq!(parse(""), Packet::Other);
        assert_eq!(parse("42not json"), Packet::Other);
    }

    #[test]
    fn frames_and_replies() {
        let s = spec();
        assert_eq!(
            emit_frame(&s, r#"{"prompt":"hi"}"#),
            r#"42["chat",{"prompt":"hi"}]"#
        );
        assert_eq!(emit_frame(&s, "plain"), r#"42["chat","plain"]"#);
        assert_eq!(connect_frame(&s), "40");
        assert_eq!(
            endpoint_path("/socket.io/"),
            "/socket.io/?EIO=4&transport=websocket"
        );
        assert_eq!(
            endpoint_path("/ws/socket.io/?x=1"),
            "/ws/socket.io/?x=1&EIO=4&transport=websocket"
        );
        assert_eq!(
            endpoint_path("/s/?EIO=4&transport=websocket"),
            "/s/?EIO=4&transport=websocket"
        );
        assert_eq!(
            reply(&s, &json!({"data":{"content":"a","done":false}})),
            Reply::Content
        );
        assert_eq!(
            reply(&s, &json!({"data":{"content":"a","done":true}})),
            Reply::Done
        );
        assert_eq!(
            reply(
                &s,
                &json!({"type":"chat:error","data":{"error":"upstream down"}})
            ),
            Reply::Error("upstream down".into())
        );
        assert_eq!(reply(&s, &json!({"data":{"error":null}})), Reply::Content);
    }
}

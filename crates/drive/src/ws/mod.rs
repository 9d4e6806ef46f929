//! WebSocket as a transport (RFC 6455): the request body goes out as one
//! text frame and every text frame back is one stream event, decoded by
//! the same decoders as HTTP bodies ([`Decoder::feed_event`]).
//!
//! The socket is opened by drive's own connection path ([`Connector`]:
//! DNS, TCP, TLS with kernel receive stamps below it and the [`Tap`] above
//! it), and only then handed to tungstenite for the HTTP/1.1 upgrade
//! (`client_async` over the already-open stream). So every byte tungstenite
//! reads came through the tap first, and the stamps are those of HTTP:
//!
//! - `dns_ms`, `connect_ms`, `proxy_ms`, `tls_ms`: as for HTTP (new socket only);
//! - `headers_ms`: the upgrade's `101 Switching Protocols` arrived (new
//!   socket only; `status` is 101 on every WebSocket sample);
//! - the session's own opening (an optional first text frame, and an
//!   optional awaited reply such as `session.created`) follows; it has no
//!   column of its own: it is the gap between `headers_ms` and `sent_ms`;
//! - `sent_ms`: the request frame was written (the tap's last write);
//! - `ttfb_ms`: the first frame of the answer arrived;
//! - `ttfe_ms`, `ttfr_ms`, `ttft_ms`, `ttftc_ms`, each token: the read that
//!   completed the frame carrying it, as HTTP/1.1 body chunks are stamped
//!   (tungstenite parses a frame in the poll whose read completed it, or
//!   from bytes a read left over, which keep that read's stamp);
//! - `e2e_ms`: the frame carrying the format's terminator (e.g.
//!   `response.completed`); the socket then stays open for the next
//!   request (warm), unless the run asks for fresh connections.
//!
//! Over Socket.IO ([`socketio`]) the handshake (the Engine.IO open packet,
//! CONNECT and its answer) is part of the session's opening, the request
//! is an EVENT, `ttfb_ms` is the answer's first event, and only events of
//! the reply name are decoded.
//!
//! A format without a terminator (`sse-json:…`, `text`) ends when the
//! server closes the socket. Failures are samples: an upgrade refused
//! (`http_status`, with its status), the socket closed before the
//! terminator (`truncated`, with the close code), a timeout, a binary
//! frame (`decode`).

pub(crate) mod socketio;

use std::sync::Arc;
use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use http::header::{
    CONNECTION, HOST, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE, USER_AGENT,
};
use http::{HeaderValue, Request};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use firsttoken_plan::{RequestTemplate, SocketIoSpec, WebSocketSpec};
use firsttoken_record::ErrorKind;

use crate::Failure;
use crate::connect::{BoxIo, Connector};
use crate::decode::{ChunkFacts, Decoder};
use crate::request::Stamps;
use crate::tap::{Arrival, Tap, TimedIo};

/// An open, upgraded WebSocket with its tap.
pub(crate) struct WsConn {
    ws: WebSocketStream<TimedIo<BoxIo>>,
    tap: Tap,
    /// The server closed the socket, or it broke: it carries no more requests.
    closed: bool,
    /// The Socket.IO conversation on it, if it speaks one.
    sio: Option<Arc<SocketIoSpec>>,
    /// The Socket.IO session id the server gave on CONNECT.
    sid: Option<String>,
}

impl WsConn {
    /// True while the socket can carry another request.
    pub(crate) fn open(&self) -> bool {
        !self.closed
    }

    /// The Socket.IO session id the server gave, if any.
    pub(crate) fn sid(&self) -> Option<&str> {
        self.sid.as_deref()
    }

    /// Start a request's stamps on this socket (see [`Tap::arm`]).
    pub(crate) fn arm(&self) {
        self.tap.arm();
    }

    /// The real-time clock stepped since the request's stamps began (see
    /// [`Tap::clock_stepped`]): its kernel stamps must not be used.
    pub(crate) fn clock_stepped(&self) -> bool {
        self.tap.clock_stepped()
    }
}

/// The upgrade request for `t`: `GET` of its path with the WebSocket
/// headers, and the template's own headers (authorization, cookies).
fn upgrade_request(t: &RequestTemplate, sio: bool) -> Result<Request<()>, Failure> {
    let scheme = if t.target.tls() { "wss" } else { "ws" };
    let authority = t.target.authority();
    let path = if sio {
        socketio::endpoint_path(&t.target.path_and_query)
    } else {
        t.target.path_and_query.clone()
    };
    let uri = format!("{scheme}://{authority}{path}");
    let bad = |e: &dyn std::fmt::Display| {
        Failure::new(
            ErrorKind::Connect,
            format!("cannot build the upgrade request: {e}"),
        )
    };
    let mut req = Request::builder()
        .method("GET")
        .uri(uri)
        .body(())
        .map_err(|e| bad(&e))?;
    let h = req.headers_mut();
    h.insert(
        HOST,
        HeaderValue::from_str(&authority).map_err(|e| bad(&e))?,
    );
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    let key = tungstenite::handshake::client::generate_key();
    h.insert(
        SEC_WEBSOCKET_KEY,
        HeaderValue::from_str(&key).map_err(|e| bad(&e))?,
    );
    if !t.headers.iter().any(|(n, _)| n == USER_AGENT) {
        h.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("firsttoken/", env!("CARGO_PKG_VERSION"))),
        );
    }
    for (n, v) in &t.headers {
        // The upgrade's own headers are tungstenite's to write.
        let ours = [
            HOST,
            CONNECTION,
            UPGRADE,
            SEC_WEBSOCKET_VERSION,
            SEC_WEBSOCKET_KEY,
        ];
        if !ours.contains(n) {
            h.append(n.clone(), v.clone());
        }
    }
    Ok(req)
}

/// tungstenite's error in words.
fn ws_error(e: &tungstenite::Error) -> (ErrorKind, String) {
    use tungstenite::Error as E;
    match e {
        E::Http(resp) => {
            let status = resp.status();
            let body = resp
                .body()
                .as_deref()
                .map(|b| crate::decode::bounded_text(&String::from_utf8_lossy(b)))
                .filter(|b| !b.is_empty())
                .map(|b| format!(": {b}"))
                .unwrap_or_default();
            (
                ErrorKind::HttpStatus,
                format!(
                    "the WebSocket upgrade was refused: HTTP {} {}{body}",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                ),
            )
        }
        E::Capacity(c) => (
            ErrorKind::Decode,
            format!("a WebSocket message over the event bound (--max-event-bytes): {c}"),
        ),
        E::Protocol(tungstenite::error::ProtocolError::ResetWithoutClosingHandshake) => (
            ErrorKind::Truncated,
            "the connection closed without a WebSocket close frame".into(),
        ),
        E::Protocol(p) => (
            ErrorKind::Protocol,
            format!("WebSocket protocol error: {p}"),
        ),
        E::Utf8(m) => (
            ErrorKind::Decode,
            format!("a WebSocket text frame is not UTF-8: {m}"),
        ),
        E::ConnectionClosed | E::AlreadyClosed => (
            ErrorKind::Connect,
            "the WebSocket was already closed".into(),
        ),
        E::Io(io) => (
            ErrorKind::Truncated,
            format!("the WebSocket connection broke: {io}"),
        ),
        other => (ErrorKind::Protocol, format!("WebSocket: {other}")),
    }
}

/// The socket's part after DNS, TCP and TLS: the upgrade (stamped as
/// `headers`, status 101), then the session's opening.
pub(crate) async fn upgrade(
    io: TimedIo<BoxIo>,
    tap: Tap,
    request: &RequestTemplate,
    spec: &WebSocketSpec,
    max_event_bytes: usize,
    st: &mut Stamps,
) -> Result<WsConn, Failure> {
    let req = upgrade_request(request, spec.socketio.is_some())?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_event_bytes))
        .max_frame_size(Some(max_event_bytes));
    let (ws, _resp) = tokio_tungstenite::client_async_with_config(req, io, Some(config))
        .await
        .map_err(|e| {
            let (kind, message) = ws_error(&e);
            let kind = if kind == ErrorKind::Truncated {
                ErrorKind::Connect
            } else {
                kind
            };
            if let tungstenite::Error::Http(r) = &e {
                st.status = Some(r.status().as_u16());
            }
            Failure::new(kind, message)
        })?;
    // The read that completed the 101 response.
    let now = Instant::now();
    st.headers = Some(st.arrived(tap.last_read().unwrap_or(Arrival {
        user: now,
        kernel: None,
        read: 0,
    })));
    st.status = Some(101);
    let mut conn = WsConn {
        ws,
        tap,
        closed: false,
        sio: spec.socketio.clone().map(Arc::new),
        sid: None,
    };
    opening(&mut conn, spec).await?;
    if let Some(sio) = &spec.socketio {
        sio_handshake(&mut conn, sio).await?;
    }
    Ok(conn)
}

/// The session's own opening: its first frame sent, its awaited reply read.
async fn opening(conn: &mut WsConn, spec: &WebSocketSpec) -> Result<(), Failure> {
    if let Some(o) = &spec.opening {
        conn.ws
            .send(Message::text(o.clone()))
            .await
            .map_err(|e| Failure::new(ErrorKind::Connect, ws_error(&e).1))?;
    }
    let Some(want) = &spec.await_type else {
        return Ok(());
    };
    loop {
        let fail = |m: String| Err(Failure::new(ErrorKind::Connect, m));
        match conn.ws.next().await {
            Some(Ok(Message::Text(t))) => {
                let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                match v.get("type").and_then(|t| t.as_str()) {
                    Some(t) if t == want => return Ok(()),
                    Some("error") => {
                        return Err(Failure::new(
                            ErrorKind::StreamError,
                            format!(
                                "the session's opening got an error instead of {want}: {}",
                                crate::decode::bounded_text(t.as_str())
                            ),
                        ));
                    }
                    // Anything else before the awaited reply is the session's business.
                    _ => {}
                }
            }
            Some(Ok(Message::Close(c))) => {
                conn.closed = true;
                return fail(format!(
                    "the WebSocket closed ({}) while waiting for {want}",
                    close_words(c.as_ref())
                ));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                conn.closed = true;
                return fail(format!("while waiting for {want}: {}", ws_error(&e).1));
            }
            None => {
                conn.closed = true;
                return fail(format!("the connection closed while waiting for {want}"));
            }
        }
    }
}

/// Socket.IO's own opening: the Engine.IO open packet, then CONNECT and
/// its answer. Pings on the way are answered.
async fn sio_handshake(conn: &mut WsConn, sio: &SocketIoSpec) -> Result<(), Failure> {
    use socketio::Packet;
    let fail = |m: String| Failure::new(ErrorKind::Connect, m);
    let mut opened = false;
    loop {
        let next = conn.ws.next().await;
        let text = match next {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(c))) => {
                conn.closed = true;
                return Err(fail(format!(
                    "the WebSocket closed ({}) during the Socket.IO handshake",
                    close_words(c.as_ref())
                )));
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                conn.closed = true;
                return Err(fail(format!(
                    "during the Socket.IO handshake: {}",
                    ws_error(&e).1
                )));
            }
            None => {
                conn.closed = true;
                return Err(fail(
                    "the connection closed during the Socket.IO handshake".into(),
                ));
            }
        };
        match socketio::parse(text.as_str()) {
            Packet::Open if !opened => {
                opened = true;
                conn.ws
                    .send(Message::text(socketio::connect_frame(sio)))
                    .await
                    .map_err(|e| fail(ws_error(&e).1))?;
            }
            Packet::Ping => pong(conn).await,
            Packet::Connected(sid) if opened => {
                conn.sid = sid;
                return Ok(());
            }
            Packet::ConnectError(m) => {
                return Err(fail(format!("the Socket.IO CONNECT was refused: {m}")));
            }
            Packet::Closed => {
                conn.closed = true;
                return Err(fail(
                    "the server closed the Socket.IO session during its handshake".into(),
                ));
            }
            _ => {}
        }
    }
}

/// Answer an Engine.IO ping; a failure shows at the next read.
async fn pong(conn: &mut WsConn) {
    let _ = conn.ws.send(Message::text("3")).await;
}

fn close_words(c: Option<&tungstenite::protocol::CloseFrame>) -> String {
    match c {
        None => "no close code".into(),
        Some(c) if c.reason.is_empty() => format!("code {}", u16::from(c.code)),
        Some(c) => format!(
            "code {}: {}",
            u16::from(c.code),
            crate::decode::bounded_text(c.reason.as_str())
        ),
    }
}

/// Send `frame` on `conn` and read the answer's frames into `st` until the
/// format's terminator, an error, or the socket's end. The caller bounds
/// it with the request deadline.
pub(crate) async fn exchange(
    conn: &mut WsConn,
    frame: String,
    decoder: &mut Decoder,
    st: &mut Stamps,
) {
    st.websocket = true;
    st.status = Some(101);
    let sio = conn.sio.clone();
    let frame = match &sio {
        Some(s) => socketio::emit_frame(s, &frame),
        None => frame,
    };
    conn.tap.arm();
    if let Err(e) = conn.ws.send(Message::text(frame)).await {
        conn.closed = true;
        // Nothing of the answer came: on a reused socket, a stale one.
        st.unanswered = true;
        let (_, m) = ws_error(&e);
        return st.fail(Failure::new(
            ErrorKind::Connect,
            format!("cannot send the request frame: {m}"),
        ));
    }
    st.sent = conn.tap.stamps().0.or_else(|| Some(Instant::now()));
    read_answer(conn, decoder, st).await;
}

/// Read the answer's frames on `conn` into `st` until the format's
/// terminator, an error, or the socket's end: after [`exchange`] sent the
/// request, or while another connection carries it (a flow whose measured
/// HTTP request is answered on this socket). The caller bounds it.
pub(crate) async fn read_answer(conn: &mut WsConn, decoder: &mut Decoder, st: &mut Stamps) {
    let sio = conn.sio.clone();
    loop {
        let next = conn.ws.next().await;
        // Stamp first: the read that completed this frame.
        let handled = Instant::now();
        let at = conn.tap.last_read().unwrap_or(Arrival {
            user: handled,
            kernel: None,
            read: 0,
        });
        match next {
            Some(Ok(Message::Text(t))) => {
                let reply: String;
                let payload = match &sio {
                    None => {
                        if st.ttfb.is_none() {
                            st.ttfb = Some(st.arrived(at));
                        }
                        t.as_str()
                    }
                    Some(sio) => {
                        use socketio::{Packet, Reply};
                        let (name, payload) = match socketio::parse(t.as_str()) {
                            Packet::Ping => {
                                pong(conn).await;
                                continue;
                            }
                            Packet::Closed => {
                                conn.closed = true;
                                st.end = Some(handled);
                                if st.ttfb.is_none() {
                                    st.unanswered = true;
                                }
                                return ended(
                                    decoder,
                                    st,
                                    "the server closed the Socket.IO session",
                                );
                            }
                            Packet::Event { name, payload } => (name, payload),
                            _ => continue,
                        };
                        // The answer's first packet: an event of any name.
                        if st.ttfb.is_none() {
                            st.ttfb = Some(st.arrived(at));
                        }
                        if sio.end_event.as_deref() == Some(name.as_str()) {
                            st.end = Some(at.user);
                            return ended(decoder, st, "the end event came");
                        }
                        if name != sio.reply_event {
                            continue;
                        }
                        let event = ChunkFacts {
                            events: 1,
                            ..ChunkFacts::default()
                        };
                        match socketio::reply(sio, &payload) {
                            Reply::Error(m) => {
                                st.on_chunk(at, handled, event);
                                st.end = Some(at.user);
                                return st.fail(Failure::new(ErrorKind::StreamError, m));
                            }
                            Reply::Done => {
                                st.on_chunk(at, handled, event);
                                st.end = Some(at.user);
                                return ended(decoder, st, "the answer's done event came");
                            }
                            Reply::Content => {
                                reply = payload.to_string();
                                reply.as_str()
                            }
                        }
                    }
                };
                let cf = decoder.feed_event(payload);
                st.on_chunk(at, handled, cf);
                if let Some((kind, message)) = decoder.facts().error.clone() {
                    st.end = Some(at.user);
                    return st.fail(Failure::new(kind, message));
                }
                if decoder.facts().done {
                    st.end = Some(at.user);
                    return;
                }
            }
            Some(Ok(Message::Binary(b))) => {
                if st.ttfb.is_none() {
                    st.ttfb = Some(st.arrived(at));
                }
                st.end = Some(at.user);
                return st.fail(Failure::new(
                    ErrorKind::Decode,
                    format!(
                        "a binary WebSocket frame ({} bytes): only text frames carry events",
                        b.len()
                    ),
                ));
            }
            // Control frames (tungstenite answers pings itself) are no events.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Ok(Message::Close(c))) => {
                conn.closed = true;
                st.end = Some(handled);
                // Closed before any answer: on a reused socket, a stale one.
                if st.ttfb.is_none() {
                    st.unanswered = true;
                }
                return ended(
                    decoder,
                    st,
                    &format!("the WebSocket closed ({})", close_words(c.as_ref())),
                );
            }
            Some(Err(e)) => {
                conn.closed = true;
                let (kind, message) = ws_error(&e);
                if st.ttfb.is_none() && kind == ErrorKind::Truncated {
                    st.unanswered = true;
                }
                return st.fail(Failure::new(kind, message));
            }
            None => {
                conn.closed = true;
                st.end = Some(handled);
                if st.ttfb.is_none() {
                    st.unanswered = true;
                }
                return ended(
                    decoder,
                    st,
                    "the connection closed without a WebSocket close frame",
                );
            }
        }
    }
}

/// The socket ended before the terminator: the decoder says whether that
/// is fine (a format without one) or what is missing.
fn ended(decoder: &mut Decoder, st: &mut Stamps, how: &str) {
    if let Err((kind, message)) = decoder.finish() {
        st.fail(Failure::new(kind, format!("{how}: {message}")));
    }
}

/// Open a new socket to `connector`'s target: DNS, TCP and TLS (bounded by
/// `connect_deadline`), then the upgrade and the session's opening.
pub(crate) async fn connect(
    connector: &Connector,
    request: &RequestTemplate,
    spec: &WebSocketSpec,
    max_event_bytes: usize,
    st: &mut Stamps,
    connect_deadline: tokio::time::Instant,
) -> Result<WsConn, Failure> {
    let opened = tokio::time::timeout_at(connect_deadline, connector.open_io(&mut st.setup))
        .await
        .map_err(|_| {
            Failure::new(
                ErrorKind::Timeout,
                "connect timed out before the WebSocket upgrade",
            )
        })??;
    let (io, tap) = opened;
    upgrade(io, tap, request, spec, max_event_bytes, st).await
}

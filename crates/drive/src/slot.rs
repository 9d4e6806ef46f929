//! A slot: one client that owns at most one connection to one target and
//! sends one request at a time on it. Every lane of the step executor runs
//! on a slot. The slots of one destination share one [`Endpoint`], so the
//! TLS client configuration (crypto provider, verifier, trust store) is
//! built once per destination, never per slot and never inside a request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;

use firsttoken_plan::{
    ProbeSpec, RequestTemplate, StreamFormat, Timeouts, TimingHeader, WebSocketSpec,
};
use firsttoken_record::{Connection, ErrorKind, Sample};

use crate::connect::{Conn, Connector, Sender};
use crate::decode::Decoder;
use crate::request::{Stamps, build_request, exchange, hyper_error, no_response_kind};
use crate::ws::{self, WsConn};
use crate::{DriveError, Failure};

/// Most bytes [`Slot::fetch`] keeps of a response body.
const FETCH_LIMIT: usize = 1 << 20;

/// What the slots of one destination share: how to connect (with the TLS
/// configuration built once), the deadlines and the stream format.
pub(crate) struct Endpoint {
    connector: Connector,
    timeouts: Timeouts,
    format: StreamFormat,
    max_event_bytes: usize,
    compressed: bool,
    /// The response header naming the app's route (lower case).
    route_header: String,
    /// JSON pointer to the route in the stream's events, if any.
    route_field: Option<String>,
    /// The WebSocket settings, when requests go as text frames on one.
    websocket: Option<WebSocketSpec>,
    /// Response headers read as the app's total server time.
    timing_headers: Arc<[TimingHeader]>,
}

impl Endpoint {
    /// The endpoint of `spec`'s target, TLS, HTTP version, timeouts and format.
    pub(crate) fn new(spec: &ProbeSpec) -> Result<Arc<Endpoint>, DriveError> {
        Ok(Arc::new(Endpoint {
            connector: Connector::new(spec)?,
            timeouts: spec.timeouts,
            format: spec.format.clone(),
            max_event_bytes: spec.max_event_bytes,
            compressed: spec.compressed,
            route_header: spec.route_header.to_ascii_lowercase(),
            route_field: spec.route_field.clone(),
            websocket: spec.transport.websocket().cloned(),
            timing_headers: spec.timing_headers.clone().into(),
        }))
    }

    /// Prime the client with one untimed TLS handshake (no request sent),
    /// bounded by the connect timeout.
    pub(crate) async fn prime(&self) {
        let _ = tokio::time::timeout(self.timeouts.connect, self.connector.prime()).await;
    }

    /// The TLS configuration its connections use, if the target is https.
    #[cfg(test)]
    pub(crate) fn tls(&self) -> Option<&Arc<rustls::ClientConfig>> {
        self.connector.tls()
    }
}

/// `at + d`; a duration past the clock's range (validated specs never have
/// one) waits about a century instead of panicking.
pub(crate) fn later(at: tokio::time::Instant, d: Duration) -> tokio::time::Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    at.checked_add(d)
        .or_else(|| at.checked_add(CENTURY))
        .unwrap_or(at)
}

/// The deadline `d` after `start`.
fn deadline(start: Instant, d: Duration) -> tokio::time::Instant {
    later(tokio::time::Instant::from_std(start), d)
}

/// One connection's worth of client: a shared endpoint plus the open connection.
pub struct Slot {
    endpoint: Arc<Endpoint>,
    conn: Option<Conn>,
    /// The open WebSocket, for an endpoint reached over one.
    ws: Option<WsConn>,
    /// A flow's answer socket kept open for the slot's next flow (a page
    /// that stays open keeps its socket), with its endpoint.
    answer: Option<(WsConn, Arc<Endpoint>)>,
    /// The conversation the slot's last turn left, for its next turn
    /// (kept when the connection closes: it is the user's, not the
    /// connection's).
    conversation: Option<crate::conversation::Conversation>,
}

impl Slot {
    /// A slot for the target, TLS, HTTP version, timeouts and format of `spec`
    /// (its request count and concurrency are not used). For one-off calls;
    /// the executor builds one endpoint per destination and shares it.
    pub fn new(spec: &ProbeSpec) -> Result<Slot, DriveError> {
        Ok(Slot::on(Endpoint::new(spec)?))
    }

    /// A slot on a shared endpoint, with no connection yet.
    pub(crate) fn on(endpoint: Arc<Endpoint>) -> Slot {
        Slot {
            endpoint,
            conn: None,
            ws: None,
            answer: None,
            conversation: None,
        }
    }

    /// The endpoint this slot connects to.
    #[cfg(test)]
    pub(crate) fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }

    /// True when the slot holds a connection that can take another request.
    pub async fn is_warm(&mut self) -> bool {
        if self.endpoint.websocket.is_some() {
            return self.ws.as_ref().is_some_and(WsConn::open);
        }
        match self.conn.as_mut() {
            Some(c) => c.ready().await,
            None => false,
        }
    }

    /// Close the slot's connection, if any.
    pub fn close(&mut self) {
        self.conn = None;
        self.ws = None;
        self.answer = None;
    }

    /// The answer socket a previous flow on this slot left open, if it
    /// still is.
    pub(crate) fn take_answer_socket(&mut self) -> Option<(WsConn, Arc<Endpoint>)> {
        self.answer.take().filter(|(c, _)| c.open())
    }

    /// The conversation the slot's last turn left, if any.
    pub(crate) fn take_conversation(&mut self) -> Option<crate::conversation::Conversation> {
        self.conversation.take()
    }

    /// Keep a conversation for the slot's next turn.
    pub(crate) fn keep_conversation(&mut self, c: crate::conversation::Conversation) {
        self.conversation = Some(c);
    }

    /// Keep a flow's answer socket for the slot's next flow.
    pub(crate) fn keep_answer_socket(&mut self, socket: (WsConn, Arc<Endpoint>)) {
        self.answer = Some(socket);
    }

    /// Send `request` and time it. With `fresh`, a new connection is opened
    /// (and closed afterwards); otherwise the open connection is reused when
    /// it can still carry a request, else a new one is opened and kept.
    ///
    /// A reused connection found closed before any response byte (a stale
    /// keep-alive: the server closed it while idle) gets the request once
    /// more on a new connection, as browsers do. The sample is then
    /// `fresh`, with `retried_stale` set and the new connection's phases,
    /// all still timed from the first attempt's start: the user waited
    /// through both. A request whose response had started is never resent.
    pub async fn send(
        &mut self,
        request: &RequestTemplate,
        fresh: bool,
        seq: u64,
        worker: u32,
    ) -> Sample {
        self.send_keeping(request, fresh, seq, worker, false)
            .await
            .0
    }

    /// As [`Slot::send`], and with `keep_answer` the answer's text as
    /// streamed (its content deltas in order, at most
    /// [`crate::decode::MAX_ANSWER_BYTES`]).
    pub(crate) async fn send_keeping(
        &mut self,
        request: &RequestTemplate,
        fresh: bool,
        seq: u64,
        worker: u32,
        keep_answer: bool,
    ) -> (Sample, Option<String>) {
        let mut reusable = !fresh && self.is_warm().await;
        let start = Instant::now();
        let until = deadline(start, self.endpoint.timeouts.request);
        let mut retried = false;
        let (mut st, connection) = loop {
            let (st, connection) = self
                .attempt(request, reusable, start, until, keep_answer)
                .await;
            let stale = connection == Connection::Reused
                && st.unanswered
                && st.ttfb.is_none()
                && st.headers.is_none();
            if stale && !retried {
                retried = true;
                reusable = false;
                continue;
            }
            break (st, connection);
        };
        // A failed exchange leaves the connection in an unknown state.
        if st.error.is_some() || fresh {
            self.conn = None;
            self.ws = None;
        }
        let answer = st.facts.answer.take();
        let mut sample = st.into_sample(seq, worker, connection);
        sample.retried_stale = retried;
        // A server may echo the key it refused: never keep it.
        if let Some(e) = sample.error.as_mut() {
            e.message = request.scrub(&e.message);
            // And a Socket.IO auth payload the server quotes back.
            if let Some(w) = &self.endpoint.websocket {
                e.message = w.scrub(&e.message);
            }
        }
        (sample, answer)
    }
}

impl Slot {
    /// One attempt at `request`: on the open connection when `reusable`,
    /// else on a new one (kept in the slot). Stamps count from `start`.
    async fn attempt(
        &mut self,
        request: &RequestTemplate,
        reusable: bool,
        start: Instant,
        until: tokio::time::Instant,
        keep_answer: bool,
    ) -> (Stamps, Connection) {
        let ep = &*self.endpoint;
        let mut st = Stamps::new(start);
        st.keep_answer = keep_answer;
        st.route_header = Some(ep.route_header.clone());
        st.route_field.clone_from(&ep.route_field);
        st.timing_headers = Some(ep.timing_headers.clone());
        if ep.websocket.is_some() {
            return self.attempt_ws(request, reusable, st, until).await;
        }
        if !reusable {
            self.conn = None;
            match open(&ep.connector, ep.timeouts, &mut st, start, until).await {
                Ok(c) => self.conn = Some(c),
                Err(f) => {
                    st.fail(f);
                    return (st, Connection::Fresh);
                }
            }
        }
        let connection = if reusable {
            Connection::Reused
        } else {
            Connection::Fresh
        };
        let Some(conn) = self.conn.as_mut() else {
            return (st, connection);
        };
        match build_request(request, conn.http2, ep.compressed)
            .map(|r| ep.connector.via_proxy(r, request))
        {
            Ok(req) => exchange(conn, req, &ep.format, ep.max_event_bytes, until, &mut st).await,
            Err(f) => st.fail(f),
        }
        (st, connection)
    }
}

impl Slot {
    /// One attempt at `request` as a text frame on a WebSocket: on the open
    /// socket when `reusable`, else on a new one (kept in the slot).
    async fn attempt_ws(
        &mut self,
        request: &RequestTemplate,
        reusable: bool,
        mut st: Stamps,
        until: tokio::time::Instant,
    ) -> (Stamps, Connection) {
        let ep = self.endpoint.clone();
        let default_spec = WebSocketSpec::default();
        let spec = ep.websocket.as_ref().unwrap_or(&default_spec);
        st.websocket = true;
        let connection = if reusable {
            Connection::Reused
        } else {
            Connection::Fresh
        };
        let frame = match request.body.as_deref().map(std::str::from_utf8) {
            Some(Ok(f)) => f.to_string(),
            Some(Err(e)) => {
                st.fail(Failure::new(
                    ErrorKind::Connect,
                    format!("the request body is not UTF-8, so it cannot go as a text frame: {e}"),
                ));
                return (st, connection);
            }
            None => {
                st.fail(Failure::new(
                    ErrorKind::Connect,
                    "a WebSocket request needs a body: the text frame to send",
                ));
                return (st, connection);
            }
        };
        let slot = &mut self.ws;
        let work = async {
            if !reusable {
                *slot = None;
                let connect_deadline = deadline(st.start, ep.timeouts.connect).min(until);
                match ws::connect(
                    &ep.connector,
                    request,
                    spec,
                    ep.max_event_bytes,
                    &mut st,
                    connect_deadline,
                )
                .await
                {
                    Ok(c) => *slot = Some(c),
                    Err(f) => return st.fail(f),
                }
            }
            let Some(conn) = slot.as_mut() else {
                return;
            };
            let mut decoder = Decoder::for_messages(&ep.format, ep.max_event_bytes)
                .with_route_field(st.route_field.clone())
                .keeping_answer(st.keep_answer);
            ws::exchange(conn, frame, &mut decoder, &mut st).await;
            st.facts = decoder.facts().clone();
            if let Some(r) = st.facts.route.take() {
                st.route = Some(r);
            }
        };
        if tokio::time::timeout_at(until, work).await.is_err() {
            let waited = until.into_std().saturating_duration_since(st.start);
            let what = if st.sent.is_none() {
                "the WebSocket upgrade and the session's opening did not finish"
            } else if st.ttft.is_none() {
                "no first token"
            } else {
                "the stream did not end"
            };
            st.fail(Failure::new(
                ErrorKind::Timeout,
                format!("{what} within {:.1} s", waited.as_secs_f64()),
            ));
        }
        if self.ws.as_ref().is_some_and(WsConn::clock_stepped) {
            st.user_only = true;
        }
        (st, connection)
    }
}

/// Open a connection within the connect timeout, stamping into `st`.
async fn open(
    connector: &Connector,
    timeouts: Timeouts,
    st: &mut Stamps,
    start: Instant,
    until: tokio::time::Instant,
) -> Result<Conn, Failure> {
    let connect_deadline = deadline(start, timeouts.connect);
    let opened =
        tokio::time::timeout_at(connect_deadline.min(until), connector.open(&mut st.setup)).await;
    opened.unwrap_or_else(|_| {
        let phase = if st.setup.connect.is_some() {
            "the TLS or HTTP handshake"
        } else if st.setup.dns.is_some() {
            "the TCP connect"
        } else {
            "DNS or the TCP connect"
        };
        Err(Failure::new(
            ErrorKind::Timeout,
            format!(
                "connect timed out after {:?} during {phase}",
                timeouts.connect
            ),
        ))
    })
}

impl Slot {
    /// Send `request` untimed and return the status and up to 1 MiB of the
    /// body: for set-up calls (sign-up, version, cleanup), not measurements.
    /// Uses the slot's connection when it is open.
    pub async fn fetch(&mut self, request: &RequestTemplate) -> Result<(u16, Bytes), String> {
        self.whole(request)
            .await
            .map(|(status, _, body)| (status, body))
            .map_err(|f| f.message)
    }

    /// Send `request` and read its whole response (status, headers, up to
    /// 1 MiB of body, no content coding) within the request timeout, on
    /// the open connection when it can take a request, else on a new one
    /// kept in the slot. A failure names its kind; the connection is then
    /// dropped.
    pub(crate) async fn whole(
        &mut self,
        request: &RequestTemplate,
    ) -> Result<(u16, http::HeaderMap, Bytes), Failure> {
        let timeout = self.endpoint.timeouts.request;
        let start = Instant::now();
        let until = deadline(start, timeout);
        if !self.is_warm().await {
            self.conn = None;
            let ep = &*self.endpoint;
            let mut st = Stamps::new(start);
            self.conn = Some(open(&ep.connector, ep.timeouts, &mut st, start, until).await?);
        }
        let Some(conn) = self.conn.as_mut() else {
            return Err(Failure::new(ErrorKind::Connect, "no connection"));
        };
        // Whole bodies are read as sent: no content coding.
        let req = build_request(request, conn.http2, false)
            .map(|r| self.endpoint.connector.via_proxy(r, request))?;
        let (sender, driver) = conn.parts();
        let work = Conn::drive(driver, async {
            let failed = |e: &hyper::Error| Failure::new(no_response_kind(e), hyper_error(e));
            let resp = match sender {
                Sender::H1(s) => s.send_request(req).await,
                Sender::H2(s) => s.send_request(req).await,
            }
            .map_err(|e| failed(&e))?;
            let status = resp.status().as_u16();
            let (parts, mut body) = resp.into_parts();
            let mut buf = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| {
                    Failure::new(
                        ErrorKind::Truncated,
                        format!("the body broke off: {}", hyper_error(&e)),
                    )
                })?;
                if let Some(d) = frame.data_ref() {
                    if buf.len() + d.len() > FETCH_LIMIT {
                        return Err(Failure::new(
                            ErrorKind::Decode,
                            format!("response body over {FETCH_LIMIT} bytes"),
                        ));
                    }
                    buf.extend_from_slice(d);
                }
            }
            Ok::<_, Failure>((status, parts.headers, Bytes::from(buf)))
        });
        let out = tokio::time::timeout_at(until, work)
            .await
            .unwrap_or_else(|_| {
                Err(Failure::new(
                    ErrorKind::Timeout,
                    format!("no complete response within {timeout:?}"),
                ))
            });
        if out.is_err() {
            self.conn = None;
        }
        out
    }
}

impl Endpoint {
    /// Open this endpoint's WebSocket (DNS, TCP, TLS, the upgrade and its
    /// Socket.IO handshake) for a flow's socket, within the connect and
    /// request deadlines from now. `Err` with the stamps' HTTP status, if
    /// the upgrade got an answer.
    pub(crate) async fn open_socket(
        &self,
        request: &RequestTemplate,
    ) -> Result<ws::WsConn, (Failure, Option<u16>)> {
        let Some(spec) = &self.websocket else {
            return Err((
                Failure::new(ErrorKind::Connect, "not a WebSocket endpoint"),
                None,
            ));
        };
        let start = Instant::now();
        let mut st = Stamps::new(start);
        let until = deadline(start, self.timeouts.request);
        let connect_deadline = deadline(start, self.timeouts.connect).min(until);
        let opened = tokio::time::timeout_at(
            until,
            ws::connect(
                &self.connector,
                request,
                spec,
                self.max_event_bytes,
                &mut st,
                connect_deadline,
            ),
        )
        .await
        .unwrap_or_else(|_| {
            Err(Failure::new(
                ErrorKind::Timeout,
                format!("the socket did not open within {:?}", self.timeouts.request),
            ))
        });
        opened.map_err(|f| (f, st.status))
    }

    /// A flow's measured request sent on `slot` while its answer is read
    /// from `conn`'s events with this endpoint's format: the stamps are the
    /// socket's, from the request's start; the request's own response is
    /// read whole and its status kept (outside 2xx fails the sample). Both
    /// within this endpoint's request deadline.
    pub(crate) async fn answer_on_socket(
        &self,
        slot: &mut Slot,
        request: &RequestTemplate,
        conn: &mut ws::WsConn,
        seq: u64,
        worker: u32,
    ) -> Sample {
        let start = Instant::now();
        let until = deadline(start, self.timeouts.request);
        let mut st = Stamps::new(start);
        let mut decoder = Decoder::for_messages(&self.format, self.max_event_bytes);
        conn.arm();
        let mut status = None;
        let outcome = {
            let post = slot.whole(request);
            let read = ws::read_answer(conn, &mut decoder, &mut st);
            tokio::pin!(post, read);
            let checked = |r: Result<(u16, http::HeaderMap, Bytes), Failure>| match r {
                Ok((code, _, _)) if (200..300).contains(&code) => Ok(code),
                Ok((code, _, body)) => Err(Failure::new(
                    ErrorKind::HttpStatus,
                    format!(
                        "HTTP {code}: {}",
                        String::from_utf8_lossy(&body[..body.len().min(200)]).trim()
                    ),
                )),
                Err(f) => Err(f),
            };
            let both = async {
                tokio::select! {
                    r = &mut post => {
                        let code = checked(r)?;
                        status = Some(code);
                        (&mut read).await;
                        Ok::<(), Failure>(())
                    }
                    () = &mut read => {
                        status = Some(checked(post.await)?);
                        Ok(())
                    }
                }
            };
            tokio::time::timeout_at(until, both).await
        };
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(f)) => st.fail(f),
            Err(_) => st.fail(Failure::new(
                ErrorKind::Timeout,
                format!(
                    "the answer on the socket did not end within {:?}",
                    self.timeouts.request
                ),
            )),
        }
        let mut sample = st.into_sample(seq, worker, Connection::Reused);
        if status.is_some() {
            sample.status = status;
        }
        if let Some(e) = sample.error.as_mut() {
            e.message = request.scrub(&e.message);
            if let Some(w) = &self.websocket {
                e.message = w.scrub(&e.message);
            }
        }
        sample
    }
}

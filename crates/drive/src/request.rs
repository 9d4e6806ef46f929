//! One request on an open connection: send it, stamp headers and every body
//! chunk as it arrives, then decode the chunk. The result is a [`Stamps`]
//! set turned into a [`Sample`].
//!
//! Arrival stamps are [`Arrival`]s (the kernel's receive time of the read
//! that delivered the bytes, and the user-space read time): a sample uses
//! the kernel clock when every arrival it stamps had a kernel time, and
//! the user clock otherwise, never a mix.

use std::time::Instant;

use bytes::Bytes;
use http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_TYPE, HOST, USER_AGENT};
use http::{HeaderValue, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use firsttoken_plan::{RequestTemplate, StreamFormat};
use firsttoken_record::{Clock, Connection, ErrorKind, FirstOutput, Sample, SampleError};

use crate::Failure;
use crate::connect::{Conn, Sender, Setup};
use crate::decode::coding::{self, BROWSER_ACCEPT_ENCODING, Inflater};
use crate::decode::{ChunkFacts, Decoder, StreamFacts};
use crate::itl::Gaps;
use crate::tap::Arrival;

/// Most bytes of an error response body kept for the message.
const ERROR_BODY_LIMIT: usize = 4096;
/// Longest wait for an error body after its status arrived.
const ERROR_BODY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Every instant a request passes, plus what its stream said.
#[derive(Debug)]
pub(crate) struct Stamps {
    pub start: Instant,
    pub setup: Setup,
    pub http2: Option<bool>,
    pub sent: Option<Instant>,
    pub ttfb: Option<Arrival>,
    pub headers: Option<Arrival>,
    pub ttfe: Option<Arrival>,
    pub ttfr: Option<Arrival>,
    pub ttft: Option<Arrival>,
    /// The first tool-call delta (not a content token).
    pub ttftc: Option<Arrival>,
    pub last_token: Option<Arrival>,
    pub end: Option<Instant>,
    pub content_chunks: u64,
    /// Gaps between content chunks on the kernel clock (while every
    /// arrival so far had a kernel time) …
    pub gaps: Gaps,
    /// … and on the user clock, kept only until the kernel clock is known
    /// to hold for the whole request (see [`Stamps::on_chunk`]).
    pub user_gaps: Gaps,
    /// An arrival without a kernel time was seen: the sample falls back to the user clock.
    pub user_only: bool,
    /// When the request's task handled the first content chunk.
    pub ttft_handled: Option<Instant>,
    /// Events in the read that carried the first content token (itself included).
    pub ttft_read_events: u64,
    /// The read the latest chunk came from, and the events it delivered so far.
    current_read: Option<(u64, u64)>,
    pub status: Option<u16>,
    pub request_id: Option<String>,
    pub route: Option<String>,
    /// The header the route is read from (`x-route` when `None`).
    pub route_header: Option<String>,
    /// JSON pointer to the route in the stream's events; when set and
    /// found, it names the route (the header is the fallback).
    pub route_field: Option<String>,
    /// Response headers read as the app's total server time.
    pub timing_headers: Option<std::sync::Arc<[firsttoken_plan::TimingHeader]>>,
    pub server_timing: Vec<(String, f64)>,
    pub facts: StreamFacts,
    /// The response's `Content-Encoding`, when not identity.
    pub content_encoding: Option<String>,
    /// The request got no response byte because the connection was found
    /// closed (not a timeout): on a reused connection, a stale keep-alive.
    pub unanswered: bool,
    /// The request went as a WebSocket text frame (`http_version` is then `WebSocket`).
    pub websocket: bool,
    /// Keep the answer's text in `facts.answer` (a conversation's history).
    pub keep_answer: bool,
    pub error: Option<Failure>,
}

impl Stamps {
    pub(crate) fn new(start: Instant) -> Stamps {
        Stamps {
            start,
            setup: Setup::default(),
            http2: None,
            sent: None,
            ttfb: None,
            headers: None,
            ttfe: None,
            ttfr: None,
            ttft: None,
            ttftc: None,
            last_token: None,
            end: None,
            content_chunks: 0,
            gaps: Gaps::default(),
            user_gaps: Gaps::default(),
            user_only: false,
            ttft_handled: None,
            ttft_read_events: 0,
            current_read: None,
            status: None,
            request_id: None,
            route: None,
            route_header: None,
            route_field: None,
            timing_headers: None,
            server_timing: Vec::new(),
            facts: StreamFacts::default(),
            content_encoding: None,
            unanswered: false,
            websocket: false,
            keep_answer: false,
            error: None,
        }
    }

    /// Note an arrival stamp the sample will use.
    pub(crate) fn arrived(&mut self, a: Arrival) -> Arrival {
        if a.kernel.is_none() {
            self.user_only = true;
        }
        a
    }

    /// A body chunk that arrived at `at` and was handled (decoded) at `handled`.
    pub(crate) fn on_chunk(&mut self, at: Arrival, handled: Instant, cf: ChunkFacts) {
        let at = self.arrived(at);
        let events = u64::from(cf.events.max(u32::from(cf.content)));
        let read_events = match self.current_read {
            Some((read, n)) if read == at.read => n.saturating_add(events),
            _ => events,
        };
        self.current_read = Some((at.read, read_events));
        if self.ttft.is_some_and(|t| t.read == at.read) {
            self.ttft_read_events = read_events;
        }
        if cf.events > 0 && self.ttfe.is_none() {
            self.ttfe = Some(at);
        }
        if cf.reasoning && self.ttfr.is_none() {
            self.ttfr = Some(at);
        }
        if cf.tool_call && self.ttftc.is_none() {
            self.ttftc = Some(at);
        }
        if cf.content {
            self.content_chunks += 1;
            if self.ttft.is_none() {
                self.ttft = Some(at);
                self.ttft_handled = Some(handled);
                self.ttft_read_events = read_events;
            }
            if let Some(prev) = self.last_token {
                self.gaps
                    .push(ms(at.at().saturating_duration_since(prev.at())));
                // The user-clock gaps are needed only if the kernel clock
                // fails somewhere in this request; a connection with kernel
                // stamps off never has one, so it keeps a single set.
                if prev.kernel.is_some() || at.kernel.is_some() {
                    self.user_gaps
                        .push(ms(at.user.saturating_duration_since(prev.user)));
                }
            }
            self.last_token = Some(at);
        }
    }

    /// Record a failure (the first one wins) and the moment it happened.
    pub(crate) fn fail(&mut self, f: Failure) {
        if self.error.is_none() {
            self.error = Some(f);
        }
        self.end.get_or_insert_with(Instant::now);
    }

    /// The sample, with times in milliseconds from `start`.
    pub(crate) fn into_sample(self, seq: u64, worker: u32, connection: Connection) -> Sample {
        let at = |t: Option<Instant>| t.map(|t| ms(t.saturating_duration_since(self.start)));
        let kernel = !self.user_only;
        let arrival = |a: Option<Arrival>| at(a.map(|a| if kernel { a.at() } else { a.user }));
        let mut s = Sample::empty(seq, worker, connection);
        let any_arrival = self.ttfb.is_some() || self.headers.is_some();
        s.clock = any_arrival.then_some(if kernel { Clock::Kernel } else { Clock::User });
        s.ttft_user_ms = at(self.ttft.map(|a| a.user));
        s.client_lag_ms = match (self.ttft.and_then(|a| a.kernel), self.ttft_handled) {
            (Some(k), Some(h)) if kernel => Some(ms(h.saturating_duration_since(k))),
            _ => None,
        };
        s.ttft_read_events = self.ttft.map(|_| self.ttft_read_events);
        s.http_version = if self.websocket {
            Some("WebSocket".to_string())
        } else {
            self.http2
                .map(|h2| if h2 { "HTTP/2" } else { "HTTP/1.1" }.to_string())
        };
        s.dns_ms = at(self.setup.dns);
        s.connect_ms = at(self.setup.connect);
        s.proxy_ms = at(self.setup.proxy);
        s.tls_ms = at(self.setup.tls);
        s.tls = self.setup.tls_info.clone();
        // `sent` is a user-space stamp taken after the write returned; when
        // the response's first byte has an earlier kernel time, the write
        // was done by then (the client was descheduled in between).
        let first = self.ttfb.map(|a| if kernel { a.at() } else { a.user });
        s.sent_ms = at(match (self.sent, first) {
            (Some(sent), Some(f)) => Some(sent.min(f)),
            (sent, _) => sent,
        });
        s.ttfb_ms = arrival(self.ttfb);
        s.headers_ms = arrival(self.headers);
        s.ttfe_ms = arrival(self.ttfe);
        s.ttfr_ms = arrival(self.ttfr);
        s.ttft_ms = arrival(self.ttft);
        s.ttftc_ms = arrival(self.ttftc);
        // The first output of either kind; a text token and a tool call in
        // the same chunk count as text.
        (s.first_output_ms, s.first_output) = match (s.ttft_ms, s.ttftc_ms) {
            (Some(t), Some(c)) if c < t => (Some(c), Some(FirstOutput::ToolCall)),
            (Some(t), _) => (Some(t), Some(FirstOutput::Text)),
            (None, Some(c)) => (Some(c), Some(FirstOutput::ToolCall)),
            (None, None) => (None, None),
        };
        s.incomplete_reason = self.facts.incomplete_reason.clone();
        s.last_token_ms = arrival(self.last_token);
        s.e2e_ms = at(self.end);
        s.content_chunks = self.content_chunks;
        s.output_tokens = self.facts.output_tokens;
        s.input_tokens = self.facts.input_tokens;
        s.cost_usd = self.facts.cost_usd;
        s.provider = self.facts.provider.clone();
        s.engine = self.facts.engine.clone();
        if let (Some(n), Some(first), Some(last)) = (s.output_tokens, s.ttft_ms, s.last_token_ms)
            && n >= 2
            && last > first
        {
            s.tokens_per_s = Some((n - 1) as f64 / ((last - first) / 1000.0));
        }
        let gaps = if kernel || self.user_gaps.is_empty() {
            &self.gaps
        } else {
            &self.user_gaps
        };
        s.itl_p50_ms = gaps.percentile(50.0);
        s.itl_p99_ms = gaps.percentile(99.0);
        s.status = self.status;
        s.request_id = self.request_id;
        s.route = self.route;
        let timing: std::collections::BTreeMap<String, f64> = self
            .server_timing
            .into_iter()
            .chain(self.facts.server_timing)
            .collect();
        s.server_timing = (!timing.is_empty()).then_some(timing);
        s.content_encoding = self.content_encoding;
        s.error = self.error.map(|f| SampleError {
            kind: f.kind,
            message: f.message,
        });
        s
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Build the HTTP request for a template. HTTP/2 needs the absolute URI
/// (it becomes `:scheme` and `:authority`); HTTP/1.1 sends the path and a Host header.
/// With `compressed`, a browser's `Accept-Encoding` is sent unless the
/// template sets its own; otherwise `identity`.
pub(crate) fn build_request(
    t: &RequestTemplate,
    http2: bool,
    compressed: bool,
) -> Result<Request<Full<Bytes>>, Failure> {
    let uri = if http2 {
        t.target.url()
    } else {
        t.target.path_and_query.clone()
    };
    let mut b = Request::builder().method(t.method.clone()).uri(uri);
    let has = |name: &http::HeaderName| t.headers.iter().any(|(n, _)| n == name);
    if let Some(h) = b.headers_mut() {
        if !http2 && let Ok(v) = HeaderValue::from_str(&t.target.authority()) {
            h.insert(HOST, v);
        }
        if !has(&USER_AGENT) {
            h.insert(
                USER_AGENT,
                HeaderValue::from_static(concat!("firsttoken/", env!("CARGO_PKG_VERSION"))),
            );
        }
        if !has(&ACCEPT) {
            h.insert(ACCEPT, HeaderValue::from_static("*/*"));
        }
        // By default no compression: a compressor may batch small chunks
        // and hide their arrival times. `--compressed` asks as a browser does.
        if !has(&ACCEPT_ENCODING) {
            let accept = if compressed {
                BROWSER_ACCEPT_ENCODING
            } else {
                "identity"
            };
            h.insert(ACCEPT_ENCODING, HeaderValue::from_static(accept));
        }
        if t.body
            .as_ref()
            .is_some_and(|b| b.first().is_some_and(|c| *c == b'{' || *c == b'['))
            && !has(&CONTENT_TYPE)
        {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        for (n, v) in &t.headers {
            h.append(n.clone(), v.clone());
        }
    }
    b.body(Full::new(t.body.clone().unwrap_or_default()))
        .map_err(|e| Failure::new(ErrorKind::Connect, format!("cannot build the request: {e}")))
}

/// Send `req` on `conn` and read the whole response into `st`. Stops at
/// `deadline`, keeping every stamp taken so far.
pub(crate) async fn exchange(
    conn: &mut Conn,
    req: Request<Full<Bytes>>,
    format: &StreamFormat,
    max_event_bytes: usize,
    deadline: tokio::time::Instant,
    st: &mut Stamps,
) {
    st.http2 = Some(conn.http2);
    // What was asked decides which codings the response may use.
    let accept = req
        .headers()
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ");
    let accept = (!accept.is_empty()).then_some(accept);
    conn.tap.arm();
    let tap = conn.tap.clone();
    let http2 = conn.http2;
    let (sender, driver) = conn.parts();
    let work = Conn::drive(driver, async {
        let sent = match sender {
            Sender::H1(s) => s.send_request(req).await,
            Sender::H2(s) => s.send_request(req).await,
        };
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                // Unreadable bytes are an answer: no stale keep-alive.
                let kind = no_response_kind(&e);
                st.unanswered = kind == ErrorKind::Connect;
                return st.fail(Failure::new(
                    kind,
                    format!("no response: {}", hyper_error(&e)),
                ));
            }
        };
        // HTTP/2: one read may carry frames of several streams; take the
        // instant this stream's HEADERS frame arrived, as for DATA frames.
        let now = Instant::now();
        let headers = if http2 {
            tap.headers_read()
        } else {
            tap.last_read()
        };
        st.headers = Some(st.arrived(headers.unwrap_or(Arrival {
            user: now,
            kernel: None,
            read: 0,
        })));
        let status = resp.status();
        st.status = Some(status.as_u16());
        let header = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        st.request_id = header("x-request-id");
        st.route = header(st.route_header.as_deref().unwrap_or("x-route"));
        st.server_timing = resp
            .headers()
            .get_all("server-timing")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(crate::decode::parse_server_timing)
            .take(crate::decode::MAX_SERVER_TIMING)
            .collect();
        if let Some(timing) = st.timing_headers.clone() {
            st.server_timing
                .extend(crate::decode::timing_headers(resp.headers(), &timing));
        }
        let content_type = header("content-type");
        let encoding = resp
            .headers()
            .get_all("content-encoding")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(", ");
        let plan = coding::plan(
            (!encoding.is_empty()).then_some(encoding.as_str()),
            accept.as_deref(),
        );
        if !matches!(plan, Ok(None)) {
            st.content_encoding = Some(crate::decode::bounded_text(&encoding));
        }
        let vercel = resp.headers().contains_key("x-vercel-ai-ui-message-stream");
        // A redirect is never followed (the measured path is the one asked
        // for); its error names where it pointed, bounded and scrubbed later
        // as every message is.
        let location = status
            .is_redirection()
            .then(|| header("location"))
            .flatten()
            .map(|l| crate::decode::bounded_text(&l));
        let body = resp.into_body();
        if !status.is_success() {
            let text = match &plan {
                Ok(c) => read_error_body(body, deadline, *c).await,
                Err(_) => format!(
                    "(body in unrequested Content-Encoding {} not shown)",
                    st.content_encoding.as_deref().unwrap_or("")
                ),
            };
            let reason = status.canonical_reason().unwrap_or("");
            let mut msg = format!("HTTP {} {reason}", status.as_u16());
            if let Some(l) = &location {
                msg.push_str(&format!(
                    " to {l} (redirects are not followed: point the URL there)"
                ));
            }
            if !text.is_empty() {
                msg.push_str(&format!(": {text}"));
            }
            return st.fail(Failure::new(ErrorKind::HttpStatus, msg));
        }
        let inflater = match plan.and_then(|c| c.map(Inflater::new).transpose()) {
            Ok(i) => i,
            Err(m) => return st.fail(Failure::new(ErrorKind::Decode, m)),
        };
        let mut decoder =
            Decoder::with_max(format, content_type.as_deref(), vercel, max_event_bytes)
                .with_route_field(st.route_field.clone())
                .keeping_answer(st.keep_answer);
        read_stream(body, &tap, http2, &mut decoder, inflater, st).await;
        st.facts = decoder.facts().clone();
        if let Some(r) = st.facts.route.take() {
            st.route = Some(r);
        }
    });
    if tokio::time::timeout_at(deadline, work).await.is_err() {
        let waited = deadline.into_std().saturating_duration_since(st.start);
        let what = if st.headers.is_none() {
            "no response headers"
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
    let (sent, first) = tap.stamps();
    st.sent = sent;
    st.ttfb = first.map(|a| st.arrived(a));
    if tap.clock_stepped() {
        st.user_only = true;
    }
}

/// Feed one wire chunk to the stream decoder, through `inflater` when the
/// body is encoded: decoded output goes on in bounded pieces, and stops as
/// soon as the stream decoder has failed. `Err`: the compressed bytes are bad.
fn decode_chunk(
    data: &[u8],
    decoder: &mut Decoder,
    inflater: Option<&mut Inflater>,
) -> (ChunkFacts, Result<(), String>) {
    let Some(inflater) = inflater else {
        return (decoder.feed(data), Ok(()));
    };
    let mut cf = ChunkFacts::default();
    let r = inflater.feed(data, &mut |piece| {
        let c = decoder.feed(piece);
        cf.events = cf.events.saturating_add(c.events);
        cf.content |= c.content;
        cf.reasoning |= c.reasoning;
        cf.tool_call |= c.tool_call;
        decoder.facts().error.is_none()
    });
    (cf, r)
}

async fn read_stream(
    mut body: Incoming,
    tap: &crate::tap::Tap,
    http2: bool,
    decoder: &mut Decoder,
    mut inflater: Option<Inflater>,
    st: &mut Stamps,
) {
    loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                let Some(data) = frame.data_ref() else {
                    continue;
                };
                if data.is_empty() {
                    continue;
                }
                // Stamp before decoding. HTTP/2 frames are read by hyper's
                // connection task; the tap knows when each DATA frame arrived.
                // HTTP/1.1 bytes are read in this task's poll: the latest read.
                let handled = Instant::now();
                let at = if http2 {
                    tap.pop_data_time()
                } else {
                    tap.last_read()
                }
                .unwrap_or(Arrival {
                    user: handled,
                    kernel: None,
                    read: 0,
                });
                let (cf, inflated) = decode_chunk(data, decoder, inflater.as_mut());
                st.on_chunk(at, handled, cf);
                if let Err(m) = inflated {
                    st.end = Some(at.user);
                    return st.fail(Failure::new(ErrorKind::Decode, m));
                }
                if let Some((kind, message)) = decoder.facts().error.clone() {
                    st.end = Some(at.user);
                    return st.fail(Failure::new(kind, message));
                }
            }
            Some(Err(e)) => {
                return st.fail(Failure::new(
                    ErrorKind::Truncated,
                    format!("the connection broke mid-stream: {}", hyper_error(&e)),
                ));
            }
            None => {
                st.end = Some(Instant::now());
                // A compressed stream cut short is reported before what its
                // missing part would have said to the stream decoder.
                if let Some(Err(m)) = inflater.as_ref().map(Inflater::finish) {
                    return st.fail(Failure::new(ErrorKind::Truncated, m));
                }
                if let Err((kind, message)) = decoder.finish() {
                    st.fail(Failure::new(kind, message));
                }
                return;
            }
        }
    }
}

/// Up to [`ERROR_BODY_LIMIT`] bytes of an error body, waiting at most
/// [`ERROR_BODY_WAIT`] (and never past the request deadline): a status is
/// the answer, a body that stalls must not turn it into a timeout. An
/// encoded body is decoded as far as its first bytes allow.
async fn read_error_body(
    mut body: Incoming,
    deadline: tokio::time::Instant,
    coding: Option<coding::Coding>,
) -> String {
    let mut buf = Vec::new();
    // Stop a little before the request deadline so the status, not a timeout, is reported.
    let now = tokio::time::Instant::now();
    let until = (now + ERROR_BODY_WAIT).min(
        deadline
            .checked_sub(std::time::Duration::from_millis(20))
            .unwrap_or(now)
            .max(now),
    );
    let _ = tokio::time::timeout_at(until, async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(d) = frame.data_ref() {
                buf.extend_from_slice(&d[..d.len().min(ERROR_BODY_LIMIT - buf.len())]);
                if buf.len() >= ERROR_BODY_LIMIT {
                    break;
                }
            }
        }
    })
    .await;
    if let Some(c) = coding {
        let mut plain = Vec::new();
        if let Ok(mut inf) = Inflater::new(c) {
            let _ = inf.feed(&buf, &mut |p| {
                let room = ERROR_BODY_LIMIT - plain.len();
                plain.extend_from_slice(&p[..p.len().min(room)]);
                plain.len() < ERROR_BODY_LIMIT
            });
        }
        buf = plain;
    }
    crate::decode::bounded_text(&String::from_utf8_lossy(&buf))
}

/// hyper's error with its source chain, which holds the useful part.
/// Why a request got no response: `protocol` when the bytes that came
/// back were not readable HTTP (too many or malformed headers, a bad
/// status line, an HTTP/2 protocol, compression or frame-size error),
/// else `connect` (the connection closed or broke first).
pub(crate) fn no_response_kind(e: &hyper::Error) -> ErrorKind {
    if e.is_parse() || e.is_parse_status() || e.is_parse_too_large() {
        return ErrorKind::Protocol;
    }
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        if let Some(h2) = inner.downcast_ref::<h2::Error>()
            && matches!(
                h2.reason(),
                Some(
                    h2::Reason::PROTOCOL_ERROR
                        | h2::Reason::COMPRESSION_ERROR
                        | h2::Reason::FRAME_SIZE_ERROR
                )
            )
        {
            return ErrorKind::Protocol;
        }
        src = inner.source();
    }
    ErrorKind::Connect
}

pub(crate) fn hyper_error(e: &hyper::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

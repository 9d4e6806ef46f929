//! The schema of what firsttoken measures, and the stores that keep it.
//!
//! A [`Sample`] is one streamed request with every timing stamp it passed,
//! in milliseconds from the request's start on a monotonic clock, `None`
//! (JSON `null`) when a phase did not happen. It is what `firsttoken probe
//! --json` prints, one object per line, and what later stages store and
//! analyse. The JSON form is versioned and documented by the JSON Schema in
//! `docs/schema/sample.v1.schema.json` ([`SAMPLE_SCHEMA`]).
//!
//! A [`SessionMeta`] and its [`SampleRow`]s (a sample plus where it sat in
//! the session, and its [`Provenance`]) are kept by a [`Store`]: SQLite by
//! default, PostgreSQL for a `postgres://` URL, each sample committed as it
//! completes. [`export`] writes them as JSON Lines or CSV (straight from a
//! store, row by row) and reads them back; [`import`] stores an export file
//! of any size in bounded memory.
//!
//! [`vocab`] owns the stored vocabulary, typed once for every crate: the
//! protocol phase ([`PhaseKind`]), where a request went ([`Destination`])
//! and wall-clock time in UTC ([`UtcTime`], [`UtcDay`]). The stores refuse
//! a phase outside it (a `CHECK` constraint on both backends).
//!
//! ```
//! use firsttoken_record::{Connection, Sample};
//! let s = Sample::empty(0, 0, Connection::Fresh);
//! assert!(s.ttft_ms.is_none());
//! assert!(s.is_ok());
//! ```
#![deny(missing_docs)]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod engine;
pub mod export;
pub mod import;
pub mod run;
pub mod scrape;
pub mod session;
pub mod span;
pub mod store;
pub mod view;
pub mod vocab;

// The one percentile definition, which defines the stored `itl_p50_ms`
// and `itl_p99_ms`: the statistics kernel's.
pub use engine::{EngineSource, EngineTiming};
pub use firsttoken_stats::{percentile, percentile_sorted, sorted_finite};
pub use scrape::{EngineScrape, MAX_SCRAPE_BYTES, ScrapeMoment};
pub use session::{Cleanup, Labels, PromptRef, Provenance, SampleRow, SessionMeta, SessionStatus};
pub use store::{Store, StoreError};
pub use view::{SampleView, VIEW_SOURCE_HASH};
pub use vocab::{Destination, PhaseKind, UtcDay, UtcTime, VocabError};

/// The JSON Schema (draft 2020-12) of one [`Sample`] as JSON.
pub const SAMPLE_SCHEMA: &str = include_str!("../../../docs/schema/sample.v1.schema.json");

/// Version of the sample JSON shape; bumped on any incompatible change.
pub const SAMPLE_SCHEMA_VERSION: u32 = 1;

/// Whether a request opened its own connection or reused one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    /// DNS, TCP connect (and TLS) happened for this request.
    Fresh,
    /// The request went over an already open connection.
    Reused,
}

/// Which clock a sample's arrival stamps (`ttfb_ms` … `last_token_ms`) were
/// read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    /// The kernel's receive timestamp of the read that delivered the bytes
    /// (`SO_TIMESTAMPNS`), converted to the monotonic clock: independent of
    /// when the client got a core.
    Kernel,
    /// The moment the client's code saw the bytes (a monotonic clock read in
    /// user space): the fallback where kernel timestamps are unavailable.
    User,
}

impl Clock {
    /// The snake_case name used in JSON and the stores.
    pub fn as_str(self) -> &'static str {
        match self {
            Clock::Kernel => "kernel",
            Clock::User => "user",
        }
    }
}

impl std::str::FromStr for Clock {
    type Err = String;
    fn from_str(s: &str) -> Result<Clock, String> {
        match s {
            "kernel" => Ok(Clock::Kernel),
            "user" => Ok(Clock::User),
            other => Err(format!("unknown clock {other:?} (kernel or user)")),
        }
    }
}

/// What a stream's first output was: a text token or a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FirstOutput {
    /// A non-empty content (text) delta came first (or alone).
    Text,
    /// A tool call (a function named, or its arguments streamed) came
    /// before any text.
    ToolCall,
}

impl FirstOutput {
    /// The snake_case name used in JSON and the stores.
    pub fn as_str(self) -> &'static str {
        match self {
            FirstOutput::Text => "text",
            FirstOutput::ToolCall => "tool_call",
        }
    }
}

impl std::str::FromStr for FirstOutput {
    type Err = String;
    fn from_str(s: &str) -> Result<FirstOutput, String> {
        match s {
            "text" => Ok(FirstOutput::Text),
            "tool_call" => Ok(FirstOutput::ToolCall),
            other => Err(format!(
                "unknown first output {other:?} (text or tool_call)"
            )),
        }
    }
}

/// One earlier step of a flow (an app path of several requests, the last
/// one measured): its name, how long it took from its start to its whole
/// response, and its HTTP status (`None` when no response came).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowStepTime {
    /// The step's name in the config, e.g. `create`.
    pub name: String,
    /// From the step's start to its whole response (or its failure), ms.
    pub ms: f64,
    /// HTTP status, `None` when no response arrived.
    pub status: Option<u16>,
}

/// The prefix of a [`Sample::server_timing`] entry read from a timing
/// response header (`x-process-time`, `openai-processing-ms`…) rather than
/// from `Server-Timing`: `header:x-process-time`. A `:` is no token
/// character, so no `Server-Timing` name can take this shape.
pub const HEADER_TIMING_PREFIX: &str = "header:";

/// The [`Sample::server_timing`] name of the total server time an app
/// reported in the response header `header` (lower case).
pub fn header_timing_name(header: &str) -> String {
    format!("{HEADER_TIMING_PREFIX}{header}")
}

/// The header a [`Sample::server_timing`] name was read from, when it is
/// a header entry ([`header_timing_name`]); `None` for `Server-Timing`.
pub fn timing_header(name: &str) -> Option<&str> {
    name.strip_prefix(HEADER_TIMING_PREFIX)
}

/// A number as an error message shows it: plain when it reads well, else
/// in scientific notation (never the 309 digits of `-1e308`).
pub fn short_number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-3..1e9).contains(&v.abs()) {
        v.to_string()
    } else {
        format!("{v:e}")
    }
}

/// Why a request failed. Each kind names the phase or the way it went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The host name did not resolve.
    Dns,
    /// The TCP connection could not be opened (refused, unreachable) or broke before a response.
    Connect,
    /// The TLS handshake failed (bad certificate, name mismatch, protocol).
    Tls,
    /// A connect or request deadline passed.
    Timeout,
    /// The response status was not 2xx.
    HttpStatus,
    /// A 2xx stream carried an error payload.
    StreamError,
    /// The stream ended before its format's terminator.
    Truncated,
    /// A 2xx stream ended cleanly without a single content token or tool call.
    NoContent,
    /// A payload could not be decoded (the message names the byte offset).
    Decode,
    /// The response was not readable HTTP once connected: too many or
    /// malformed headers, an HTTP/2 protocol error.
    Protocol,
    /// A browser-measured page threw or logged an error (or its tab
    /// crashed) and painted no answer; the message is the page's error.
    PageError,
}

impl ErrorKind {
    /// Every kind, in the order the documentation lists them.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::Dns,
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::Timeout,
        ErrorKind::HttpStatus,
        ErrorKind::StreamError,
        ErrorKind::Truncated,
        ErrorKind::NoContent,
        ErrorKind::Decode,
        ErrorKind::Protocol,
        ErrorKind::PageError,
    ];

    /// The snake_case name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Dns => "dns",
            ErrorKind::Connect => "connect",
            ErrorKind::Tls => "tls",
            ErrorKind::Timeout => "timeout",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::StreamError => "stream_error",
            ErrorKind::Truncated => "truncated",
            ErrorKind::NoContent => "no_content",
            ErrorKind::Decode => "decode",
            ErrorKind::Protocol => "protocol",
            ErrorKind::PageError => "page_error",
        }
    }
}

/// A failed request's error: a kind and a human message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Details for a person, bounded in length.
    pub message: String,
}

/// How a TLS handshake went: a first visit's full handshake, or a
/// returning visitor's resumption of an earlier session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandshakeKind {
    /// Certificates exchanged and verified, keys agreed from scratch.
    Full,
    /// An earlier session's ticket was accepted (TLS 1.3 PSK or TLS 1.2 resumption).
    Resumed,
}

impl HandshakeKind {
    /// The snake_case name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            HandshakeKind::Full => "full",
            HandshakeKind::Resumed => "resumed",
        }
    }
}

/// The negotiated TLS parameters of a fresh TLS connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsInfo {
    /// Protocol version, e.g. `TLSv1_3`.
    pub version: String,
    /// Cipher suite, e.g. `TLS13_AES_256_GCM_SHA384`.
    pub cipher: String,
    /// Key-exchange group, e.g. `X25519MLKEM768`; `None` if not reported.
    pub kx_group: Option<String>,
    /// Full or resumed; `None` in samples stored before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake: Option<HandshakeKind>,
}

/// What a browser-measured message showed on screen. Times are ms from
/// the start of the request that carried the message (the browser's
/// `Network.requestWillBeSent`), on the clock of the sample's network
/// stamps, so `painted_ttft_ms − ttft_ms` is the render lag.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Painted {
    /// The user's action (the input event that sent the message) before
    /// the request's start, ms (≥ 0 when the page sends at once).
    pub input_lead_ms: Option<f64>,
    /// The answer element first showed text (the DOM change).
    pub first_dom_ms: Option<f64>,
    /// The animation frame after that change: the first token painted.
    pub painted_ttft_ms: Option<f64>,
    /// The frame after the answer's last change: the last token painted.
    pub painted_last_ms: Option<f64>,
    /// Content chunks that had arrived when the first text was painted
    /// (1 for a page that shows each token as it comes).
    pub chunks_before_first_paint: Option<u64>,
}

impl Painted {
    /// Painted minus network TTFT of `s`: what the front end added.
    pub fn render_lag_ms(&self, s: &Sample) -> Option<f64> {
        Some(self.painted_ttft_ms? - s.ttft_ms?)
    }
}

/// One measured request. Times are milliseconds from the request's start
/// (before DNS for a fresh connection, before the request is handed to the
/// connection when reused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Position in the run, from 0, in order of start. Warm-up requests have their own sequence.
    pub seq: u64,
    /// Which worker (concurrent slot) sent it.
    pub worker: u32,
    /// True for a warm-up request, shown but not counted.
    pub warmup: bool,
    /// Fresh or reused connection.
    pub connection: Connection,
    /// `HTTP/1.1` or `HTTP/2`, `None` when no connection was made.
    pub http_version: Option<String>,
    /// DNS resolution done.
    pub dns_ms: Option<f64>,
    /// TCP connection established (to the proxy, when one is used).
    pub connect_ms: Option<f64>,
    /// Proxy tunnel open: the proxy answered the `CONNECT` with 2xx. `None`
    /// without a proxy or on a reused connection.
    #[serde(default)]
    pub proxy_ms: Option<f64>,
    /// TLS handshake done.
    pub tls_ms: Option<f64>,
    /// Request fully written.
    pub sent_ms: Option<f64>,
    /// First response byte read (for HTTP/2: first frame of this stream).
    pub ttfb_ms: Option<f64>,
    /// Response headers parsed.
    pub headers_ms: Option<f64>,
    /// First stream event (any SSE event, NDJSON line or text chunk; not a comment).
    pub ttfe_ms: Option<f64>,
    /// First reasoning token.
    pub ttfr_ms: Option<f64>,
    /// First non-empty content token: the time to first token.
    pub ttft_ms: Option<f64>,
    /// First tool call: the first delta that opened a tool call (named the
    /// function) or streamed its arguments. Not a content token.
    #[serde(default)]
    pub ttftc_ms: Option<f64>,
    /// First output of either kind: the earlier of `ttft_ms` and `ttftc_ms`.
    #[serde(default)]
    pub first_output_ms: Option<f64>,
    /// What the first output was (`text` or `tool_call`); `None` when there
    /// was none.
    #[serde(default)]
    pub first_output: Option<FirstOutput>,
    /// Why the answer stopped early when the stream said so (the Responses
    /// API's `response.incomplete`, e.g. `max_output_tokens`); `None` otherwise.
    #[serde(default)]
    pub incomplete_reason: Option<String>,
    /// Last content token.
    pub last_token_ms: Option<f64>,
    /// Stream end (or the failure).
    pub e2e_ms: Option<f64>,
    /// Number of body chunks that carried content.
    pub content_chunks: u64,
    /// Output tokens as reported by the stream's own usage data; never estimated.
    pub output_tokens: Option<u64>,
    /// Input tokens as reported by the stream's usage data.
    pub input_tokens: Option<u64>,
    /// Output tokens per second after the first token: (output_tokens − 1) / (last_token − ttft).
    pub tokens_per_s: Option<f64>,
    /// Median gap between consecutive content chunks.
    pub itl_p50_ms: Option<f64>,
    /// 99th-percentile gap between consecutive content chunks.
    pub itl_p99_ms: Option<f64>,
    /// HTTP status code, `None` when no response arrived.
    pub status: Option<u16>,
    /// The request id the server reported (`x-request-id` header), if any.
    pub request_id: Option<String>,
    /// The upstream provider that served it, if the stream says (`provider` field).
    pub provider: Option<String>,
    /// Cost in USD as reported by the stream's usage data (`usage.cost`).
    pub cost_usd: Option<f64>,
    /// Negotiated TLS parameters, on fresh TLS connections.
    pub tls: Option<TlsInfo>,
    /// The route the app reports it took (`X-Route` header), if any.
    pub route: Option<String>,
    /// The app's own phase durations in ms, from its `Server-Timing` header and
    /// a final `event: server-timing` SSE event, and the total server time
    /// of each configured timing header it sent (`x-process-time`…, named
    /// `header:<name>`, see [`header_timing_name`]); `None` when it sent none.
    pub server_timing: Option<BTreeMap<String, f64>>,
    /// The response's `Content-Encoding` (e.g. `gzip`), `None` when identity.
    #[serde(default)]
    pub content_encoding: Option<String>,
    /// True when the reused connection this request was given turned out
    /// closed before the response started, and the request was sent again
    /// on a new connection (whose phases are the ones stamped).
    #[serde(default)]
    pub retried_stale: bool,
    /// The W3C trace id firsttoken sent in this request's `traceparent`
    /// header (32 lowercase hex digits), `None` when it sent none. The
    /// app's spans for this request carry the same id ([`span::SpanRow`]).
    #[serde(default)]
    pub trace_id: Option<String>,
    /// The clock the arrival stamps (`ttfb_ms`, `headers_ms`, `ttfe_ms`,
    /// `ttfr_ms`, `ttft_ms`, every token, `last_token_ms`) come from;
    /// `None` when nothing arrived (or the sample predates the field).
    #[serde(default)]
    pub clock: Option<Clock>,
    /// The user-space stamp of the first content token (when the client's
    /// code read it), kept beside a kernel-stamped `ttft_ms`; equal to
    /// `ttft_ms` when the clock is `user`.
    #[serde(default)]
    pub ttft_user_ms: Option<f64>,
    /// Client lag at the first content token: from the kernel's receive
    /// time to the moment the request's task handled the chunk. `None`
    /// without a kernel stamp.
    #[serde(default)]
    pub client_lag_ms: Option<f64>,
    /// How many stream events arrived in the same read as the first content
    /// token, itself included (1: it came alone). With several, the
    /// kernel stamp is the latest segment's (see docs/METHODOLOGY.md).
    #[serde(default)]
    pub ttft_read_events: Option<u64>,
    /// In a flow (an app path whose measured request follows earlier
    /// steps, e.g. create a chat, then send), the time from the flow's
    /// start — the user's action, the first step's start — to the measured
    /// request's start, ms: every earlier step and the gaps between them.
    /// The TTFT the user waits is `flow_wait_ms + ttft_ms`
    /// ([`Sample::flow_ttft_ms`]). `None` for a single request.
    #[serde(default)]
    pub flow_wait_ms: Option<f64>,
    /// In a flow, each earlier step in order (a failed step is the last
    /// listed); `None` for a single request.
    #[serde(default)]
    pub flow_steps: Option<Vec<FlowStepTime>>,
    /// In a conversation, this turn's number: 1 for the first message of
    /// a new conversation. `None` outside conversations.
    #[serde(default)]
    pub turn: Option<u32>,
    /// In a conversation, the messages it held before this turn's user
    /// message (each earlier turn's question and answer): sent as the
    /// request's history, or kept by the app under its conversation id.
    #[serde(default)]
    pub history_messages: Option<u32>,
    /// In a conversation, the measured request's body size in bytes (the
    /// history it carries included).
    #[serde(default)]
    pub request_bytes: Option<u64>,
    /// The inference engine's own timing of the request, when its stream
    /// carried one (llama.cpp's `timings`); `None` otherwise.
    #[serde(default)]
    pub engine: Option<EngineTiming>,
    /// What a real browser showed (`firsttoken browse`): the user's
    /// action and the answer's paints, on the network stamps' clock;
    /// `None` for a request an HTTP client sent.
    #[serde(default)]
    pub painted: Option<Painted>,
    /// `None` for success.
    pub error: Option<SampleError>,
}

impl Sample {
    /// A sample with no stamps yet.
    pub fn empty(seq: u64, worker: u32, connection: Connection) -> Sample {
        Sample {
            seq,
            worker,
            warmup: false,
            connection,
            http_version: None,
            dns_ms: None,
            connect_ms: None,
            proxy_ms: None,
            tls_ms: None,
            sent_ms: None,
            ttfb_ms: None,
            headers_ms: None,
            ttfe_ms: None,
            ttfr_ms: None,
            ttft_ms: None,
            ttftc_ms: None,
            first_output_ms: None,
            first_output: None,
            incomplete_reason: None,
            last_token_ms: None,
            e2e_ms: None,
            content_chunks: 0,
            output_tokens: None,
            input_tokens: None,
            tokens_per_s: None,
            itl_p50_ms: None,
            itl_p99_ms: None,
            status: None,
            request_id: None,
            provider: None,
            cost_usd: None,
            tls: None,
            route: None,
            server_timing: None,
            content_encoding: None,
            retried_stale: false,
            trace_id: None,
            clock: None,
            ttft_user_ms: None,
            client_lag_ms: None,
            ttft_read_events: None,
            flow_wait_ms: None,
            flow_steps: None,
            turn: None,
            history_messages: None,
            request_bytes: None,
            engine: None,
            painted: None,
            error: None,
        }
    }

    /// The time to first token from the flow's start (the user's action):
    /// `flow_wait_ms + ttft_ms` in a flow, `ttft_ms` for a single request.
    pub fn flow_ttft_ms(&self) -> Option<f64> {
        Some(self.flow_wait_ms.unwrap_or(0.0) + self.ttft_ms?)
    }

    /// True when the request succeeded.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// The sample as one line of JSON (no trailing newline).
    pub fn to_json_line(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A phase of a request, as named in tables and JSON (without `_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// DNS resolution.
    Dns,
    /// TCP connect.
    Connect,
    /// Proxy tunnel open (`CONNECT` answered).
    Proxy,
    /// TLS handshake.
    Tls,
    /// Request written.
    Sent,
    /// First response byte.
    Ttfb,
    /// First stream event.
    Ttfe,
    /// First reasoning token.
    Ttfr,
    /// First content token.
    Ttft,
    /// First tool call.
    Ttftc,
    /// First output: text or a tool call, whichever came first.
    FirstOutput,
    /// Last content token.
    LastToken,
    /// Stream end.
    E2e,
    /// Median inter-token gap.
    ItlP50,
    /// p99 inter-token gap.
    ItlP99,
    /// Tokens per second after the first.
    TokensPerS,
}

impl Phase {
    /// Every phase in the order a request passes them.
    pub const ALL: [Phase; 16] = [
        Phase::Dns,
        Phase::Connect,
        Phase::Proxy,
        Phase::Tls,
        Phase::Sent,
        Phase::Ttfb,
        Phase::Ttfe,
        Phase::Ttfr,
        Phase::Ttft,
        Phase::Ttftc,
        Phase::FirstOutput,
        Phase::LastToken,
        Phase::E2e,
        Phase::ItlP50,
        Phase::ItlP99,
        Phase::TokensPerS,
    ];

    /// Short name (`ttft`, `last_token`, …).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Dns => "dns",
            Phase::Connect => "connect",
            Phase::Proxy => "proxy",
            Phase::Tls => "tls",
            Phase::Sent => "sent",
            Phase::Ttfb => "ttfb",
            Phase::Ttfe => "ttfe",
            Phase::Ttfr => "ttfr",
            Phase::Ttft => "ttft",
            Phase::Ttftc => "ttftc",
            Phase::FirstOutput => "first_output",
            Phase::LastToken => "last_token",
            Phase::E2e => "e2e",
            Phase::ItlP50 => "itl_p50",
            Phase::ItlP99 => "itl_p99",
            Phase::TokensPerS => "tokens/s",
        }
    }

    /// This phase's value in a sample.
    pub fn of(self, s: &Sample) -> Option<f64> {
        match self {
            Phase::Dns => s.dns_ms,
            Phase::Connect => s.connect_ms,
            Phase::Proxy => s.proxy_ms,
            Phase::Tls => s.tls_ms,
            Phase::Sent => s.sent_ms,
            Phase::Ttfb => s.ttfb_ms,
            Phase::Ttfe => s.ttfe_ms,
            Phase::Ttfr => s.ttfr_ms,
            Phase::Ttft => s.ttft_ms,
            Phase::Ttftc => s.ttftc_ms,
            Phase::FirstOutput => s.first_output_ms,
            Phase::LastToken => s.last_token_ms,
            Phase::E2e => s.e2e_ms,
            Phase::ItlP50 => s.itl_p50_ms,
            Phase::ItlP99 => s.itl_p99_ms,
            Phase::TokensPerS => s.tokens_per_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_sample() -> Sample {
        let mut s = Sample::empty(3, 1, Connection::Fresh);
        s.painted = Some(Painted {
            input_lead_ms: Some(1.5),
            first_dom_ms: Some(220.0),
            painted_ttft_ms: Some(221.5),
            painted_last_ms: Some(900.0),
            chunks_before_first_paint: Some(1),
        });
        s.http_version = Some("HTTP/2".into());
        s.dns_ms = Some(0.2);
        s.connect_ms = Some(0.4);
        s.tls_ms = Some(1.5);
        s.sent_ms = Some(1.6);
        s.ttfb_ms = Some(2.0);
        s.headers_ms = Some(2.1);
        s.ttfe_ms = Some(2.2);
        s.ttft_ms = Some(200.5);
        s.ttftc_ms = Some(150.0);
        s.first_output_ms = Some(150.0);
        s.first_output = Some(FirstOutput::ToolCall);
        s.incomplete_reason = Some("max_output_tokens".into());
        s.last_token_ms = Some(400.0);
        s.e2e_ms = Some(401.0);
        s.content_chunks = 10;
        s.output_tokens = Some(10);
        s.status = Some(200);
        s.tls = Some(TlsInfo {
            version: "TLSv1_3".into(),
            cipher: "TLS13_AES_128_GCM_SHA256".into(),
            kx_group: Some("X25519MLKEM768".into()),
            handshake: Some(HandshakeKind::Full),
        });
        s
    }

    fn validator() -> jsonschema::Validator {
        let schema: serde_json::Value =
            serde_json::from_str(SAMPLE_SCHEMA).expect("schema is JSON");
        jsonschema::validator_for(&schema).expect("schema compiles")
    }

    #[test]
    fn samples_validate_against_the_checked_in_schema() {
        let v = validator();
        let ok = serde_json::to_value(full_sample()).unwrap();
        assert!(
            v.is_valid(&ok),
            "{:?}",
            v.iter_errors(&ok)
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        );
        let mut failed = Sample::empty(0, 0, Connection::Reused);
        failed.error = Some(SampleError {
            kind: ErrorKind::Truncated,
            message: "ended early".into(),
        });
        let failed = serde_json::to_value(failed).unwrap();
        assert!(v.is_valid(&failed));
    }

    #[test]
    fn schema_rejects_what_it_should() {
        let v = validator();
        let mut bad = serde_json::to_value(full_sample()).unwrap();
        bad["connection"] = "pooled".into();
        assert!(!v.is_valid(&bad), "unknown connection kind must fail");
        let mut bad = serde_json::to_value(full_sample()).unwrap();
        bad["ttft_ms"] = (-1.0).into();
        assert!(!v.is_valid(&bad), "negative time must fail");
        let mut bad = serde_json::to_value(full_sample()).unwrap();
        bad["first_output"] = "image".into();
        assert!(!v.is_valid(&bad), "unknown first output must fail");
        let mut bad = serde_json::to_value(full_sample()).unwrap();
        bad.as_object_mut().unwrap().remove("ttft_ms");
        assert!(!v.is_valid(&bad), "missing key must fail");
        let mut bad = serde_json::to_value(full_sample()).unwrap();
        bad["error"] = serde_json::json!({"kind": "oops", "message": "x"});
        assert!(!v.is_valid(&bad), "unknown error kind must fail");
    }

    #[test]
    fn json_round_trips_and_uses_null_for_missing_phases() {
        let s = Sample::empty(0, 0, Connection::Reused);
        let line = s.to_json_line();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(v["dns_ms"].is_null());
        assert_eq!(v["connection"], "reused");
        let back: Sample = serde_json::from_str(&line).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn the_sample_schema_lists_every_error_kind() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/schema/sample.v1.schema.json"))
                .unwrap();
        let mut kinds = Vec::new();
        fn find(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(o) => {
                    if let Some(serde_json::Value::Array(e)) =
                        o.get("kind").and_then(|k| k.get("enum"))
                    {
                        out.extend(e.iter().filter_map(|x| x.as_str().map(str::to_string)));
                    }
                    o.values().for_each(|x| find(x, out));
                }
                serde_json::Value::Array(a) => a.iter().for_each(|x| find(x, out)),
                _ => {}
            }
        }
        find(&schema, &mut kinds);
        let names: Vec<String> = ErrorKind::ALL
            .iter()
            .map(|k| k.as_str().to_string())
            .collect();
        assert_eq!(kinds, names);
        for k in ErrorKind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
        }
    }
}

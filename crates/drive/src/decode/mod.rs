//! Stream decoders: from body bytes to "this chunk carried an event /
//! reasoning / content", plus usage, the terminator and in-stream errors.
//!
//! The caller stamps each body chunk when it arrives and only then feeds it
//! here, so decoding never sits between the bytes and their timestamp.
//!
//! ```
//! use firsttoken_drive::decode::Decoder;
//! use firsttoken_plan::StreamFormat;
//! let mut d = Decoder::new(&StreamFormat::Auto, Some("text/event-stream"), false);
//! let role = d.feed(b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n");
//! assert!(role.events == 1 && !role.content);
//! let tok = d.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n");
//! assert!(tok.content);
//! assert!(d.finish().is_ok());
//! ```

pub mod coding;
mod engine;
mod event;
mod formats;
mod gradio;
#[cfg(test)]
mod hostile;
pub(crate) use formats::bounded as bounded_text;
pub mod lines;
mod responses;
pub mod sse;
mod timing;

use firsttoken_plan::StreamFormat;
use firsttoken_record::ErrorKind;

use event::on_sse_event;
use lines::{LineSplitter, Utf8Check};
use sse::SseParser;

/// What one body chunk carried.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ChunkFacts {
    /// Complete stream events (SSE events, NDJSON lines, text chunks); comments excluded.
    pub events: u32,
    /// At least one non-empty content delta.
    pub content: bool,
    /// At least one non-empty reasoning delta.
    pub reasoning: bool,
    /// At least one tool-call delta (a call opened or its arguments
    /// streamed): output, but not a content token.
    pub tool_call: bool,
}

/// What the stream has said so far.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StreamFacts {
    /// The format's terminator was seen.
    pub done: bool,
    /// The first error: in-stream error payload or malformed bytes.
    pub error: Option<(ErrorKind, String)>,
    /// Output tokens from the stream's usage data.
    pub output_tokens: Option<u64>,
    /// Input tokens from the stream's usage data.
    pub input_tokens: Option<u64>,
    /// Cost in USD from the stream's usage data.
    pub cost_usd: Option<f64>,
    /// Serving provider named in the stream.
    pub provider: Option<String>,
    /// Durations from a `server-timing` SSE event, in ms.
    pub server_timing: Vec<(String, f64)>,
    /// The route the app named in the stream, at the JSON pointer given by
    /// [`Decoder::with_route_field`] (the first event that has it).
    pub route: Option<String>,
    /// Why the answer stopped early, when the stream said so
    /// (`response.incomplete`'s `incomplete_details.reason`).
    pub incomplete_reason: Option<String>,
    /// The answer's text as streamed (its content deltas in order), when
    /// the decoder keeps it ([`Decoder::keeping_answer`]); at most
    /// [`MAX_ANSWER_BYTES`].
    pub answer: Option<String>,
    /// The engine's own timing, when the stream carried it (llama.cpp's
    /// `timings`).
    pub engine: Option<firsttoken_record::EngineTiming>,
}

/// The most answer text a decoder keeps (a conversation's history carries
/// each answer back to the app): 1 MiB; the rest is dropped.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

impl StreamFacts {
    /// A non-empty content delta: the chunk carried content, and its text
    /// goes into the kept answer, if one is kept.
    pub(crate) fn content(&mut self, cf: &mut ChunkFacts, text: &str) {
        cf.content = true;
        if let Some(a) = self.answer.as_mut()
            && a.len() + text.len() <= MAX_ANSWER_BYTES
        {
            a.push_str(text);
        }
    }

    fn fail(&mut self, kind: ErrorKind, message: String) {
        if self.error.is_none() {
            self.error = Some((kind, message));
        }
    }
}

pub use timing::{
    MAX_SERVER_TIMING, MAX_TIMING_MS, MAX_TIMING_NAME, parse_server_timing, timing_headers,
};

/// SSE dialects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseKind {
    OpenAi,
    Anthropic,
    Responses,
    VercelUi,
    Gradio,
    Pointer(String),
}

#[derive(Debug)]
enum Framing {
    /// SSE; `None` until an `auto` stream's first event shows the dialect.
    Sse(SseParser, Option<SseKind>),
    Lines(LineSplitter),
    /// Plain text. With `any_byte` (an explicit `--format text`, as pings
    /// use) every byte is content and a body may be empty; otherwise (text
    /// found by `auto`) content is the first non-whitespace byte.
    Text {
        check: Utf8Check,
        any_byte: bool,
        /// An `application/json` body that opens with `{`: kept (up to the
        /// event bound) so its end can tell an error object (`{"error":
        /// …}`) from an answer. `None` for other text, or once too long.
        json: Option<Vec<u8>>,
    },
    /// `auto` with a Content-Type that does not say (none, JSON, octet-stream):
    /// the first non-whitespace bytes decide. Leading whitespace is counted
    /// (`skipped`), not kept, so a body of whitespace costs no memory.
    Sniff {
        pending: Vec<u8>,
        skipped: u64,
        json_type: bool,
    },
}

/// Line starts that mark an SSE body.
const SSE_MARKERS: [&[u8]; 5] = [b"data:", b"event:", b":", b"id:", b"retry:"];

/// True while `t` (no leading whitespace) could still become an SSE marker
/// or `{`, so more bytes are needed to decide.
fn undecided(t: &[u8]) -> bool {
    !t.contains(&b'\n')
        && SSE_MARKERS
            .iter()
            .any(|m| m.len() > t.len() && m.starts_with(t))
}

/// What the first bytes of an unlabelled body look like; `skipped` bytes of
/// leading whitespace came before `first`.
fn sniff(first: &[u8], json_type: bool, skipped: u64, max: usize) -> Framing {
    let t = first.trim_ascii_start();
    let sse = SSE_MARKERS.iter().any(|p| t.starts_with(p));
    if sse {
        let mut p = SseParser::with_max(max);
        p.skip(skipped);
        Framing::Sse(p, None)
    } else if t.starts_with(b"{") && !json_type {
        let mut l = LineSplitter::with_max(max);
        l.skip(skipped);
        Framing::Lines(l)
    } else {
        let mut check = Utf8Check::default();
        check.skip(skipped);
        Framing::Text {
            check,
            any_byte: false,
            json: (json_type && t.starts_with(b"{")).then(Vec::new),
        }
    }
}

/// An incremental decoder for one response body. It holds at most one
/// line or event (bounded by the maximum event size) and looks at each byte
/// once.
#[derive(Debug)]
pub struct Decoder {
    framing: Framing,
    facts: StreamFacts,
    max: usize,
    /// Output was seen: a content token or a tool call.
    output: bool,
    /// Body bytes fed.
    received: u64,
    /// Events seen (as [`ChunkFacts::events`] counts them).
    events: u64,
    /// JSON pointer to the route's name in the stream's events, if the app
    /// reports its route there rather than in a header.
    route_field: Option<String>,
}

impl Decoder {
    /// A decoder for `format`; with `auto`, the response Content-Type (and,
    /// for SSE, the first event) decides. `vercel_header` is true when the
    /// response carried `x-vercel-ai-ui-message-stream`.
    pub fn new(format: &StreamFormat, content_type: Option<&str>, vercel_header: bool) -> Decoder {
        Decoder::with_max(
            format,
            content_type,
            vercel_header,
            firsttoken_plan::DEFAULT_MAX_EVENT_BYTES,
        )
    }

    /// As [`Decoder::new`], refusing (as `decode`) any line or event over
    /// `max_event_bytes`.
    pub fn with_max(
        format: &StreamFormat,
        content_type: Option<&str>,
        vercel_header: bool,
        max_event_bytes: usize,
    ) -> Decoder {
        let max = max_event_bytes;
        let sse = |k: Option<SseKind>| Framing::Sse(SseParser::with_max(max), k);
        let lines = || Framing::Lines(LineSplitter::with_max(max));
        let text = |any_byte| Framing::Text {
            check: Utf8Check::default(),
            any_byte,
            json: None,
        };
        let framing = match format {
            StreamFormat::OpenAiChat | StreamFormat::OpenAiCompletions => {
                sse(Some(SseKind::OpenAi))
            }
            StreamFormat::Anthropic => sse(Some(SseKind::Anthropic)),
            StreamFormat::Responses => sse(Some(SseKind::Responses)),
            StreamFormat::VercelUi => sse(Some(SseKind::VercelUi)),
            StreamFormat::Gradio => sse(Some(SseKind::Gradio)),
            StreamFormat::SseJson(p) => sse(Some(SseKind::Pointer(p.clone()))),
            StreamFormat::Ollama => lines(),
            StreamFormat::Text => text(true),
            StreamFormat::Auto => {
                let ct = content_type.unwrap_or("").to_ascii_lowercase();
                let mime = ct.split(';').next().unwrap_or("").trim();
                match mime {
                    "text/event-stream" if vercel_header => sse(Some(SseKind::VercelUi)),
                    "text/event-stream" => sse(None),
                    "application/x-ndjson"
                    | "application/ndjson"
                    | "application/jsonl"
                    | "application/json-lines"
                    | "application/jsonlines" => lines(),
                    "" | "application/json" | "application/octet-stream" => Framing::Sniff {
                        pending: Vec::new(),
                        skipped: 0,
                        json_type: mime == "application/json",
                    },
                    _ => text(false),
                }
            }
        };
        Decoder {
            framing,
            facts: StreamFacts::default(),
            max,
            output: false,
            received: 0,
            events: 0,
            route_field: None,
        }
    }

    /// Read the route's name from the stream: the first JSON event (SSE
    /// data or NDJSON line) with a string or number at `pointer` names it.
    /// Events are parsed for it only until it is found.
    pub fn with_route_field(mut self, pointer: Option<String>) -> Decoder {
        self.route_field = pointer;
        self
    }

    /// Bytes the decoder holds for unfinished lines and events; never more
    /// than about the maximum event size (plus a few bytes while sniffing).
    pub fn buffered(&self) -> usize {
        match &self.framing {
            Framing::Sse(p, _) => p.buffered(),
            Framing::Lines(l) => l.buffered(),
            Framing::Text { json, .. } => json.as_ref().map_or(0, Vec::len),
            Framing::Sniff { pending, .. } => pending.len(),
        }
    }

    /// The format in use, as `--format` names it (`auto` while undecided).
    pub fn format_name(&self) -> &'static str {
        match &self.framing {
            Framing::Sse(_, None) => "auto",
            Framing::Sse(_, Some(SseKind::OpenAi)) => "openai",
            Framing::Sse(_, Some(SseKind::Anthropic)) => "anthropic",
            Framing::Sse(_, Some(SseKind::Responses)) => "responses",
            Framing::Sse(_, Some(SseKind::VercelUi)) => "vercel-ui",
            Framing::Sse(_, Some(SseKind::Gradio)) => "gradio",
            Framing::Sse(_, Some(SseKind::Pointer(_))) => "sse-json",
            Framing::Lines(_) => "ollama",
            Framing::Text { .. } => "text",
            Framing::Sniff { .. } => "auto",
        }
    }

    /// Keep the answer's text ([`StreamFacts::answer`]) when `keep`.
    pub fn keeping_answer(mut self, keep: bool) -> Decoder {
        if keep {
            self.facts.answer = Some(String::new());
        }
        self
    }

    /// What the stream has said so far.
    pub fn facts(&self) -> &StreamFacts {
        &self.facts
    }

    /// Decode the next body chunk. After an error is recorded, further input is ignored.
    pub fn feed(&mut self, bytes: &[u8]) -> ChunkFacts {
        self.received += bytes.len() as u64;
        let cf = self.decode(bytes);
        self.output |= cf.content || cf.tool_call;
        self.events += u64::from(cf.events);
        cf
    }

    /// A decoder for a message-framed transport (WebSocket text frames,
    /// Socket.IO events), where each message is one whole event: `auto`
    /// reads the messages as JSON events whose first one names the dialect
    /// (as the first event of an SSE stream does).
    pub fn for_messages(format: &StreamFormat, max_event_bytes: usize) -> Decoder {
        Decoder::with_max(format, Some("text/event-stream"), false, max_event_bytes)
    }

    /// Decode one whole message (a WebSocket text frame's payload) as one
    /// event: an SSE dialect's `data`, an NDJSON line, or a text chunk.
    /// After an error is recorded, further input is ignored.
    pub fn feed_event(&mut self, payload: &str) -> ChunkFacts {
        if matches!(self.framing, Framing::Sniff { .. }) {
            // `for_messages` never sniffs; a sniffing decoder given a
            // message decides on it as on a body's first bytes.
            return self.feed(payload.as_bytes());
        }
        let offset = self.received;
        self.received += payload.len() as u64;
        let mut cf = ChunkFacts::default();
        if self.facts.error.is_some() {
            return cf;
        }
        if payload.len() > self.max {
            self.facts.fail(
                ErrorKind::Decode,
                format!(
                    "a {}-byte message at byte offset {offset} is over the {}-byte event bound (--max-event-bytes)",
                    payload.len(),
                    self.max
                ),
            );
            return cf;
        }
        let route_field = self.route_field.as_deref();
        let facts = &mut self.facts;
        match &mut self.framing {
            Framing::Sse(_, kind) => on_sse_event(
                kind,
                facts,
                route_field,
                "message",
                payload,
                offset,
                &mut cf,
            ),
            Framing::Lines(_) => {
                if let Some(p) = route_field
                    && facts.route.is_none()
                {
                    facts.route = formats::route_at(p, payload.as_bytes());
                }
                formats::ollama(payload.as_bytes(), offset, facts, &mut cf);
            }
            Framing::Text { any_byte, .. } => {
                if !payload.is_empty() {
                    cf.events = 1;
                    cf.content = *any_byte
                        || self.output
                        || payload.bytes().any(|b| !b.is_ascii_whitespace());
                }
            }
            Framing::Sniff { .. } => {}
        }
        self.output |= cf.content || cf.tool_call;
        self.events += u64::from(cf.events);
        cf
    }

    fn decode(&mut self, mut bytes: &[u8]) -> ChunkFacts {
        if let Framing::Sniff {
            pending,
            skipped,
            json_type,
        } = &mut self.framing
        {
            if pending.is_empty() {
                // Leading whitespace is counted, never stored or rescanned.
                let ws = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
                *skipped += ws as u64;
                bytes = &bytes[ws..];
            }
            pending.extend_from_slice(bytes);
            // `pending` starts at a non-whitespace byte and stays under six
            // bytes while undecided, so this check never rescans much.
            if pending.is_empty() || undecided(pending) {
                return ChunkFacts::default();
            }
            let first = std::mem::take(pending);
            self.framing = sniff(&first, *json_type, *skipped, self.max);
            return self.decode(&first);
        }
        let mut cf = ChunkFacts::default();
        if self.facts.error.is_some() {
            return cf;
        }
        let facts = &mut self.facts;
        let route_field = self.route_field.as_deref();
        match &mut self.framing {
            Framing::Sse(parser, kind) => {
                parser.feed(bytes, &mut |ev| {
                    on_sse_event(
                        kind,
                        facts,
                        route_field,
                        ev.event,
                        &ev.data,
                        ev.offset,
                        &mut cf,
                    );
                });
                if let Some(o) = parser.oversize() {
                    facts.fail(ErrorKind::Decode, o.to_string());
                }
            }
            Framing::Lines(split) => {
                split.feed(bytes, &mut |line, offset| {
                    if facts.error.is_none() {
                        if let Some(p) = route_field
                            && facts.route.is_none()
                        {
                            facts.route = formats::route_at(p, line);
                        }
                        formats::ollama(line, offset, facts, &mut cf);
                    }
                });
                if let Some(o) = split.oversize() {
                    facts.fail(ErrorKind::Decode, o.to_string());
                }
            }
            Framing::Sniff { .. } => {}
            Framing::Text {
                check,
                any_byte,
                json,
            } => {
                if let Some(doc) = json {
                    if doc.len() + bytes.len() <= self.max {
                        doc.extend_from_slice(bytes);
                    } else {
                        *json = None;
                    }
                }
                if let Err(offset) = check.feed(bytes) {
                    facts.fail(
                        ErrorKind::Decode,
                        format!("invalid UTF-8 in text stream at byte offset {offset}"),
                    );
                } else if !bytes.is_empty() {
                    cf.events = 1;
                    // Once content was seen the scan is skipped: one pass at most.
                    cf.content =
                        *any_byte || self.output || bytes.iter().any(|b| !b.is_ascii_whitespace());
                    if cf.content {
                        facts.content(&mut cf, &String::from_utf8_lossy(bytes));
                    }
                }
            }
        }
        cf
    }

    /// The body ended cleanly: check the terminator. Returns the error to
    /// record, if any (an earlier in-stream error is returned again).
    ///
    /// A stream that ended cleanly without a content token or a tool call
    /// fails as `no_content`, except an explicit `text` body (a ping or a health
    /// check, where the status is the answer). An earlier error or a missing
    /// terminator (`truncated`) is reported first.
    pub fn finish(&mut self) -> Result<(), (ErrorKind, String)> {
        self.end()?;
        if self.output || matches!(self.framing, Framing::Text { any_byte: true, .. }) {
            return Ok(());
        }
        let hint = match &self.framing {
            Framing::Sse(_, Some(SseKind::Pointer(p))) => {
                format!("; does the JSON pointer {p} match the events?")
            }
            _ => String::new(),
        };
        Err((
            ErrorKind::NoContent,
            format!(
                "the 2xx response ended without a content token or tool call ({} body bytes, {} events, format {}){hint}",
                self.received,
                self.events,
                self.format_name()
            ),
        ))
    }

    fn end(&mut self) -> Result<(), (ErrorKind, String)> {
        if let Framing::Sniff {
            pending,
            skipped,
            json_type,
        } = &mut self.framing
        {
            let first = std::mem::take(pending);
            self.framing = sniff(&first, *json_type, *skipped, self.max);
            let cf = self.decode(&first);
            self.output |= cf.content || cf.tool_call;
            self.events += u64::from(cf.events);
        }
        if let Some(e) = &self.facts.error {
            return Err(e.clone());
        }
        let truncated = |what: &str| {
            Err((
                ErrorKind::Truncated,
                format!("the stream ended without {what}"),
            ))
        };
        match &mut self.framing {
            Framing::Text { check, json, .. } => {
                check.finish().map_err(|o| {
                    (
                        ErrorKind::Decode,
                        format!("incomplete UTF-8 sequence at byte offset {o}"),
                    )
                })?;
                // A whole JSON body that is an error object: no answer.
                match json
                    .as_deref()
                    .and_then(|d| std::str::from_utf8(d).ok())
                    .and_then(|d| formats::error_shape("message", d))
                {
                    Some(m) => Err((ErrorKind::StreamError, m)),
                    None => Ok(()),
                }
            }
            Framing::Lines(split) => {
                if let Some((rest, offset)) = split.rest() {
                    // A last line without its newline still counts.
                    let mut cf = ChunkFacts::default();
                    formats::ollama(rest, offset, &mut self.facts, &mut cf);
                    self.output |= cf.content || cf.tool_call;
                    if let Some(e) = &self.facts.error {
                        return Err(e.clone());
                    }
                }
                if self.facts.done {
                    Ok(())
                } else {
                    truncated("a final {\"done\": true} line")
                }
            }
            Framing::Sse(_, kind) => match kind {
                _ if self.facts.done => Ok(()),
                // A custom SSE stream may simply end; its end is the body's end.
                Some(SseKind::Pointer(_)) => Ok(()),
                Some(SseKind::Anthropic) => truncated("message_stop"),
                Some(SseKind::Responses) => {
                    truncated("response.completed, response.incomplete or response.failed")
                }
                Some(SseKind::VercelUi) => truncated("a finish part or [DONE]"),
                Some(SseKind::Gradio) => truncated("process_completed or close_stream"),
                Some(SseKind::OpenAi) | None => truncated("data: [DONE]"),
            },
            Framing::Sniff { .. } => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(
        format: &str,
        ct: Option<&str>,
        body: &[u8],
    ) -> (
        Vec<ChunkFacts>,
        Result<(), (ErrorKind, String)>,
        StreamFacts,
    ) {
        let mut d = Decoder::new(&format.parse().unwrap(), ct, false);
        let facts: Vec<ChunkFacts> = body
            .split_inclusive(|&b| b == b'\n')
            .map(|c| d.feed(c))
            .collect();
        let end = d.finish();
        (facts, end, d.facts().clone())
    }

    /// Issue 29, item 9: a garbage Server-Timing header was stored as sent.
    #[test]
    fn garbage_server_timing_is_bounded_and_refused() {
        assert_eq!(
            parse_server_timing("y;dur=-5, x;dur=1e305, z;dur=NaN, ok;dur=3"),
            vec![("ok".into(), 3.0)]
        );
        let long = format!("{};dur=1", "n".repeat(MAX_TIMING_NAME + 1));
        assert!(parse_server_timing(&long).is_empty());
        let many: Vec<String> = (0..3000).map(|i| format!("m{i};dur=1")).collect();
        assert_eq!(
            parse_server_timing(&many.join(", ")).len(),
            MAX_SERVER_TIMING
        );
    }

    #[test]
    fn timing_headers_are_read_in_their_unit_and_garbage_skipped() {
        let mut h = http::HeaderMap::new();
        h.insert("x-process-time", "0.0125".parse().unwrap());
        h.insert("x-response-time", "3.5ms".parse().unwrap());
        h.insert("openai-processing-ms", "-4".parse().unwrap());
        h.append("x-envoy-upstream-service-time", "1".parse().unwrap());
        h.append("x-envoy-upstream-service-time", "2".parse().unwrap());
        h.insert("x-other", "7".parse().unwrap());
        let mut wanted = firsttoken_plan::timing::default_timing_headers();
        wanted.push(firsttoken_plan::TimingHeader {
            name: "x-huge".into(),
            unit: firsttoken_plan::TimeUnit::Seconds,
        });
        h.insert("x-huge", "1e9".parse().unwrap());
        assert_eq!(
            timing_headers(&h, &wanted),
            vec![
                ("header:x-process-time".into(), 12.5),
                ("header:x-response-time".into(), 3.5),
            ],
            "sent twice, negative, over a day or not asked for: skipped"
        );
    }

    #[test]
    fn server_timing_parses_and_its_event_is_not_content() {
        assert_eq!(
            parse_server_timing(
                r#"auth;dur=0.4, db;dur=12;desc="4 queries", retrieve, upstream_connect;dur=1.5"#
            ),
            vec![
                ("auth".into(), 0.4),
                ("db".into(), 12.0),
                ("upstream_connect".into(), 1.5)
            ]
        );
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"A\"}}]}\n\nevent: server-timing\ndata: upstream_ttft;dur=50, total;dur=80\n\ndata: [DONE]\n\n";
        let (_, end, facts) = decode_all("openai-chat", None, body);
        assert!(end.is_ok(), "{end:?}");
        assert_eq!(
            facts.server_timing,
            vec![("upstream_ttft".into(), 50.0), ("total".into(), 80.0)]
        );
    }

    #[test]
    fn keepalive_comments_are_not_events() {
        let body = b": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"A\"}}]}\n\ndata: [DONE]\n\n";
        let (facts, end, _) = decode_all("auto", Some("text/event-stream; charset=utf-8"), body);
        assert!(end.is_ok());
        let first_event = facts.iter().position(|f| f.events > 0).unwrap();
        let first_content = facts.iter().position(|f| f.content).unwrap();
        assert_eq!(
            first_event, first_content,
            "comments must not count as the first event"
        );
    }

    #[test]
    fn missing_terminator_is_truncated() {
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"A\"}}]}\n\n";
        let (_, end, _) = decode_all("openai-chat", None, body);
        assert_eq!(end.unwrap_err().0, ErrorKind::Truncated);
        let (_, end, _) = decode_all(
            "anthropic",
            None,
            b"event: message_start\ndata: {\"type\":\"message_start\"}\n\n",
        );
        assert!(end.unwrap_err().1.contains("message_stop"));
        let (_, end, _) = decode_all("ollama", None, b"{\"response\":\"a\",\"done\":false}\n");
        assert_eq!(end.unwrap_err().0, ErrorKind::Truncated);
        let (_, end, _) = decode_all(
            "ollama",
            None,
            b"{\"response\":\"a\",\"done\":false}\n{\"done\":true}",
        );
        assert!(
            end.is_ok(),
            "a final line without newline still ends the stream"
        );
        let (_, end, _) = decode_all("sse-json:/t", None, b"data: {\"t\":\"x\"}\n\n");
        assert!(end.is_ok());
    }

    #[test]
    fn auto_picks_by_content_type() {
        let (facts, end, _) = decode_all("auto", Some("application/x-ndjson"), b"{\"message\":{\"content\":\"hi\"},\"done\":false}\n{\"done\":true,\"eval_count\":1}\n");
        assert!(end.is_ok() && facts[0].content);
        let (facts, end, _) = decode_all("auto", Some("text/plain"), b"hello");
        assert!(end.is_ok() && facts[0].content);
        let (_, end, _) = decode_all(
            "auto",
            Some("text/event-stream"),
            b"data: {\"weird\":1}\n\n",
        );
        assert!(end.unwrap_err().1.contains("--format"));
        let (_, end, _) = decode_all("auto", Some("text/event-stream"), b"");
        assert_eq!(end.unwrap_err().0, ErrorKind::Truncated);
    }

    #[test]
    fn unlabelled_bodies_are_sniffed() {
        let sse = b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"A\"}}]}\n\ndata: [DONE]\n\n";
        for ct in [None, Some("application/json")] {
            let (facts, end, _) = decode_all("auto", ct, sse);
            assert!(end.is_ok(), "{ct:?}: {end:?}");
            // Chunks are split at each LF: the role-only event completes at 1, the content at 3.
            assert!(
                facts[1].events == 1 && !facts[1].content,
                "{ct:?}: the role-only chunk is not content"
            );
            assert_eq!(facts.iter().position(|f| f.content), Some(3), "{ct:?}");
        }
        let (facts, end, _) = decode_all(
            "auto",
            None,
            b"{\"response\":\"a\",\"done\":false}\n{\"done\":true}\n",
        );
        assert!(end.is_ok() && facts[0].content);
        let (facts, end, _) = decode_all("auto", Some("application/json"), b"{\"id\": 1}");
        assert!(
            end.is_ok() && facts[0].content,
            "a plain JSON document is read as text: all content"
        );
        let (facts, end, _) = decode_all("auto", None, b"ok");
        assert!(
            end.is_ok() && facts[0].content,
            "a first byte that starts no SSE marker decides at once: the token is stamped on arrival"
        );
        // "id" could still become "id:": decided at the end, and still content.
        let (_, end, _) = decode_all("auto", None, b"id");
        assert!(end.is_ok(), "{end:?}");
    }

    #[test]
    fn errors_stop_decoding_and_text_checks_utf8() {
        let body = b"data: {\"error\":{\"message\":\"upstream died\"}}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"A\"}}]}\n\n";
        let (facts, end, _) = decode_all("openai-chat", None, body);
        assert!(facts.iter().all(|f| !f.content));
        assert_eq!(
            end.unwrap_err(),
            (ErrorKind::StreamError, "upstream died".into())
        );
        let (_, end, _) = decode_all("text", None, b"ok\n\xff\xfe");
        let (k, m) = end.unwrap_err();
        assert_eq!(k, ErrorKind::Decode);
        assert!(m.contains("offset 3"), "{m}");
    }
}

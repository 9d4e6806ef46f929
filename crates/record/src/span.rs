//! Server-side spans, as the app's OpenTelemetry exporter reported them.
//!
//! A [`SpanRow`] is one span of one trace, flattened from OTLP: the ids in
//! lowercase hex, the times in nanoseconds since the Unix epoch **on the
//! server's clock** (never corrected here: the join in analyze estimates the
//! offset between the two clocks per session), the attributes as JSON
//! scalars. A span belongs to a sample when its `trace_id` equals the
//! sample's [`crate::Sample::trace_id`], the id firsttoken sent in the
//! request's W3C `traceparent` header.
//!
//! ```
//! use firsttoken_record::span::{SpanKind, SpanRow};
//! let s = SpanRow::new("s1", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "GET /chat");
//! assert_eq!(s.kind, SpanKind::Unspecified);
//! assert_eq!(s.duration_ns(), 0);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The most spans one session keeps; spans past it are counted, not stored.
pub const MAX_SPANS_PER_SESSION: usize = 200_000;

/// What a span stands for, as OTLP's `SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// Not given by the instrumentation.
    Unspecified,
    /// An operation inside the app.
    Internal,
    /// The server side of a request the app received.
    Server,
    /// A request the app made (database, model provider, any HTTP call).
    Client,
    /// A message sent to a queue.
    Producer,
    /// A message taken from a queue.
    Consumer,
}

impl SpanKind {
    /// The stored text form.
    pub fn as_str(self) -> &'static str {
        match self {
            SpanKind::Unspecified => "unspecified",
            SpanKind::Internal => "internal",
            SpanKind::Server => "server",
            SpanKind::Client => "client",
            SpanKind::Producer => "producer",
            SpanKind::Consumer => "consumer",
        }
    }

    /// Parses the stored text form; unknown text is `Unspecified`.
    pub fn parse(s: &str) -> SpanKind {
        match s {
            "internal" => SpanKind::Internal,
            "server" => SpanKind::Server,
            "client" => SpanKind::Client,
            "producer" => SpanKind::Producer,
            "consumer" => SpanKind::Consumer,
            _ => SpanKind::Unspecified,
        }
    }
}

/// A timestamped event inside a span (e.g. an instrumentation's
/// "first token received" event on a model-provider call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanEvent {
    /// The event's name.
    pub name: String,
    /// When it happened, ns since the Unix epoch on the server's clock.
    pub time_unix_nano: u64,
    /// Its attributes, as JSON scalars (arrays kept as JSON arrays).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, serde_json::Value>,
}

/// One server-side span, stored next to the samples of its session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanRow {
    /// Session the span was collected in (or imported into).
    pub session_id: String,
    /// 32 lowercase hex digits: the trace id.
    pub trace_id: String,
    /// 16 lowercase hex digits: the span id.
    pub span_id: String,
    /// The parent span's id, `None` for a root span (or when the parent is
    /// the remote span firsttoken named in `traceparent`, it is that id).
    pub parent_span_id: Option<String>,
    /// The span's name as the instrumentation gave it.
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// The resource's `service.name`, when given.
    pub service: Option<String>,
    /// Start, ns since the Unix epoch, server clock.
    pub start_unix_nano: u64,
    /// End, ns since the Unix epoch, server clock.
    pub end_unix_nano: u64,
    /// True when the span's status is ERROR.
    pub error: bool,
    /// Span attributes (resource attributes are not copied here), as JSON
    /// scalars; values under secret-looking keys are redacted before storing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, serde_json::Value>,
    /// Span events, in time order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<SpanEvent>,
}

impl SpanRow {
    /// A span with the given identity and name, kind unspecified, zero times.
    pub fn new(session_id: &str, trace_id: &str, span_id: &str, name: &str) -> SpanRow {
        SpanRow {
            session_id: session_id.to_string(),
            trace_id: trace_id.to_string(),
            span_id: span_id.to_string(),
            parent_span_id: None,
            name: name.to_string(),
            kind: SpanKind::Unspecified,
            service: None,
            start_unix_nano: 0,
            end_unix_nano: 0,
            error: false,
            attributes: BTreeMap::new(),
            events: Vec::new(),
        }
    }

    /// Its length in ns (0 when the end is before the start).
    pub fn duration_ns(&self) -> u64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano)
    }

    /// A string attribute, when present and a string.
    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(|v| v.as_str())
    }
}

/// True when `s` is a valid W3C trace id: 32 lowercase hex digits, not all zero.
pub fn is_trace_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && s.bytes().any(|b| b != b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_text() {
        for k in [
            SpanKind::Unspecified,
            SpanKind::Internal,
            SpanKind::Server,
            SpanKind::Client,
            SpanKind::Producer,
            SpanKind::Consumer,
        ] {
            assert_eq!(SpanKind::parse(k.as_str()), k);
        }
        assert_eq!(SpanKind::parse("SERVER"), SpanKind::Unspecified);
    }

    #[test]
    fn trace_ids_are_checked() {
        assert!(is_trace_id("4bf92f3577b34da6a3ce929d0e0e4736"));
        assert!(!is_trace_id("00000000000000000000000000000000"));
        assert!(!is_trace_id("4BF92F3577B34DA6A3CE929D0E0E4736"));
        assert!(!is_trace_id("4bf92f3577b34da6"));
    }

    #[test]
    fn a_span_ending_before_it_starts_has_no_length() {
        let mut s = SpanRow::new(
            "s",
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "00f067aa0ba902b7",
            "x",
        );
        s.start_unix_nano = 10;
        s.end_unix_nano = 5;
        assert_eq!(s.duration_ns(), 0);
        s.end_unix_nano = 25;
        assert_eq!(s.duration_ns(), 15);
    }
}

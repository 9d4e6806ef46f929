//! W3C Trace Context for outgoing requests: a fresh `traceparent` per
//! request (<https://www.w3.org/TR/trace-context/#traceparent-header>), so
//! the app's OpenTelemetry spans for the request carry a trace id the
//! sample stores.
//!
//! The ids are drawn from the operating system's random source before the
//! request starts: nothing of this runs inside a timed phase, and the
//! request differs from one without trace context by one header.

use http::{HeaderName, HeaderValue};

/// The header's name.
pub const TRACEPARENT: &str = "traceparent";

/// One request's trace context: the trace id it stores, the header it sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// 32 lowercase hex digits, never all zero.
    pub trace_id: String,
    /// 16 lowercase hex digits, never all zero: the parent span id the
    /// app's server span names.
    pub span_id: String,
}

impl TraceContext {
    /// A fresh random context; `None` when the system's random source
    /// fails (the request is then sent without one).
    pub fn random() -> Option<TraceContext> {
        let mut b = [0u8; 24];
        getrandom::fill(&mut b).ok()?;
        // An all-zero id is invalid: the chance is 2^-128 (2^-64 for the
        // span id), but a receiver would drop the span, so it is redrawn.
        while b[..16].iter().all(|&x| x == 0) || b[16..].iter().all(|&x| x == 0) {
            getrandom::fill(&mut b).ok()?;
        }
        Some(TraceContext {
            trace_id: hex(&b[..16]),
            span_id: hex(&b[16..]),
        })
    }

    /// The header value: version 00, the ids, flags 01 (sampled).
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.trace_id, self.span_id)
    }

    /// The header, ready to add to a request.
    pub fn header(&self) -> (HeaderName, HeaderValue) {
        let value = HeaderValue::from_str(&self.traceparent())
            .unwrap_or_else(|_| HeaderValue::from_static("")); // hex digits and dashes only: always valid
        (HeaderName::from_static(TRACEPARENT), value)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_is_well_formed_and_fresh() {
        let a = TraceContext::random().unwrap();
        let b = TraceContext::random().unwrap();
        assert_ne!(a.trace_id, b.trace_id);
        assert!(firsttoken_record::span::is_trace_id(&a.trace_id));
        assert_eq!(a.span_id.len(), 16);
        let tp = a.traceparent();
        assert_eq!(tp.len(), 55);
        assert_eq!(tp, format!("00-{}-{}-01", a.trace_id, a.span_id));
        assert_eq!(a.header().1.to_str().unwrap(), tp);
    }
}

//! [`Metric`]: what is measured, and its value in a row.

use std::str::FromStr;

use serde::Serialize;

use crate::AnalyzeError;
use crate::frame::Obs;

/// What is measured. Durations in ms except `tokens_per_s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Time to first content token.
    Ttft,
    /// Time to first response byte.
    Ttfb,
    /// Request start to stream end (completion time).
    E2e,
    /// Output tokens per second after the first token.
    TokensPerS,
    /// DNS lookup duration (fresh connections).
    Dns,
    /// TCP handshake duration after DNS.
    Connect,
    /// TLS handshake duration after TCP.
    Tls,
    /// Round trip of a ping: its ttfb, or its e2e when it has no ttfb.
    Rtt,
    /// First output: a text token or a tool call, whichever came first.
    FirstOutput,
    /// Time to first content token from a flow's start (the user's
    /// action, before its earlier steps); a single request's is its TTFT.
    FlowTtft,
}

impl Metric {
    /// Every metric.
    pub const ALL: [Metric; 10] = [
        Metric::Ttft,
        Metric::Ttfb,
        Metric::E2e,
        Metric::TokensPerS,
        Metric::Dns,
        Metric::Connect,
        Metric::Tls,
        Metric::Rtt,
        Metric::FirstOutput,
        Metric::FlowTtft,
    ];

    /// snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Ttfb => "ttfb",
            Metric::E2e => "e2e",
            Metric::TokensPerS => "tokens_per_s",
            Metric::Dns => "dns",
            Metric::Connect => "connect",
            Metric::Tls => "tls",
            Metric::Rtt => "rtt",
            Metric::FirstOutput => "first_output",
            Metric::FlowTtft => "flow_ttft",
        }
    }

    /// Unit of its values: `ms` or `tokens/s`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::TokensPerS => "tokens/s",
            _ => "ms",
        }
    }

    /// True when a larger value is better (throughput).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::TokensPerS)
    }

    /// This metric of an observation; NaN when it did not happen.
    pub(crate) fn of(self, o: &Obs) -> f64 {
        match self {
            Metric::Ttft => o.ttft,
            Metric::Ttfb => o.ttfb,
            Metric::E2e => o.e2e,
            Metric::TokensPerS => o.tps,
            Metric::Dns => o.dns,
            Metric::Connect => o.connect,
            Metric::Tls => o.tls,
            Metric::FirstOutput => o.first_output,
            // A single request's flow is itself: its wait is 0.
            Metric::FlowTtft => {
                o.ttft
                    + if o.flow_wait.is_nan() {
                        0.0
                    } else {
                        f64::from(o.flow_wait)
                    }
            }
            Metric::Rtt => {
                if o.ttfb.is_nan() {
                    o.e2e
                } else {
                    o.ttfb
                }
            }
        }
    }
}

impl FromStr for Metric {
    type Err = AnalyzeError;
    fn from_str(s: &str) -> Result<Metric, AnalyzeError> {
        let s = s.strip_suffix("_ms").unwrap_or(s);
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| AnalyzeError::UnknownMetric {
                name: s.to_string(),
            })
    }
}

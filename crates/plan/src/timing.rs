//! Response headers in which apps and proxies report their own total
//! server time, besides `Server-Timing`: FastAPI's and Open WebUI's
//! `x-process-time` (seconds, a float), Express's `x-response-time`,
//! Envoy's `x-envoy-upstream-service-time` and OpenAI's
//! `openai-processing-ms` (milliseconds). Each is read with its unit and
//! stored in ms beside the `Server-Timing` entries, under
//! `header:<name>` (`firsttoken_record::header_timing_name`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The unit a timing header's bare number is in. A value that names its
/// unit (`12.5ms`, `0.2s`, `800us`) is read in that unit instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum TimeUnit {
    /// Seconds (`x-process-time` as FastAPI's example middleware sends it).
    #[serde(rename = "s")]
    Seconds,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Millis,
    /// Microseconds.
    #[serde(rename = "us")]
    Micros,
}

impl TimeUnit {
    /// Milliseconds in one of this unit.
    pub fn ms(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1000.0,
            TimeUnit::Millis => 1.0,
            TimeUnit::Micros => 0.001,
        }
    }

    /// Read a header value as a duration in ms: a number in this unit, or
    /// a number followed by its own unit (`ms`, `s`, `us` or `µs`, spaces
    /// allowed). `None` for anything else, or a negative or non-finite
    /// number.
    pub fn parse_ms(self, value: &str) -> Option<f64> {
        let v = value.trim();
        let (number, unit) = [
            ("ms", TimeUnit::Millis),
            ("us", TimeUnit::Micros),
            ("µs", TimeUnit::Micros),
            ("s", TimeUnit::Seconds),
        ]
        .iter()
        .find_map(|(suffix, unit)| v.strip_suffix(suffix).map(|n| (n.trim_end(), *unit)))
        .unwrap_or((v, self));
        let n: f64 = number.parse().ok()?;
        let ms = n * unit.ms();
        (ms.is_finite() && ms >= 0.0).then_some(ms)
    }
}

/// One response header read as the app's total server time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimingHeader {
    /// The header's name, lower case.
    pub name: String,
    /// The unit of a bare number in it.
    pub unit: TimeUnit,
}

/// The timing headers read unless the config says otherwise
/// (`[app] timing_headers`), each with the unit its usual sender writes.
pub const DEFAULT_TIMING_HEADERS: [(&str, TimeUnit); 4] = [
    ("x-process-time", TimeUnit::Seconds),
    ("x-response-time", TimeUnit::Millis),
    ("x-envoy-upstream-service-time", TimeUnit::Millis),
    ("openai-processing-ms", TimeUnit::Millis),
];

/// [`DEFAULT_TIMING_HEADERS`] as a list.
pub fn default_timing_headers() -> Vec<TimingHeader> {
    DEFAULT_TIMING_HEADERS
        .iter()
        .map(|(name, unit)| TimingHeader {
            name: (*name).to_string(),
            unit: *unit,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_in_their_unit() {
        let s = TimeUnit::Seconds;
        assert_eq!(s.parse_ms("0.25"), Some(250.0));
        assert_eq!(s.parse_ms(" 2 "), Some(2000.0));
        // A value naming its unit wins over the configured one.
        assert_eq!(s.parse_ms("12.5ms"), Some(12.5));
        assert_eq!(TimeUnit::Millis.parse_ms("0.5 s"), Some(500.0));
        assert_eq!(TimeUnit::Millis.parse_ms("800us"), Some(0.8));
        assert_eq!(TimeUnit::Millis.parse_ms("800µs"), Some(0.8));
        assert_eq!(TimeUnit::Micros.parse_ms("1500"), Some(1.5));
        for bad in ["", "-1", "abc", "NaN", "inf", "1e400", "1 2", "ms"] {
            assert_eq!(TimeUnit::Millis.parse_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_four_usual_headers_are_read_by_default() {
        let d = default_timing_headers();
        assert_eq!(d.len(), 4);
        assert_eq!(d[0].unit, TimeUnit::Seconds);
        assert!(d.iter().all(|h| h.name == h.name.to_ascii_lowercase()));
    }
}

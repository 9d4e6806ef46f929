//! The words of `firsttoken check`: one line per threshold, and the gate
//! against a baseline.

use firsttoken_analyze::check::{Found, Threshold, Verdict};

use crate::format::{self as fmt, Unit};

/// The head line: `check of session ID (measured, code v2)`.
pub fn head(id: &str, provenance: &str, code_version: &str) -> String {
    format!("check of session {id} ({provenance}, code {code_version})")
}

/// A threshold's line: `  PASS ttft.p95        812 ms [790 ms, 840 ms]  (max 3.00 s)`.
pub fn threshold(v: &Verdict) -> String {
    let shown = match &v.found {
        Found::Percentile(s) => fmt::stat(Unit::Ms, s),
        Found::NoSuccess => "no successful app requests".to_string(),
        Found::ErrorRate { failed, counted } => {
            let rate = if *counted > 0 {
                *failed as f64 / *counted as f64
            } else {
                0.0
            };
            format!("{} ({failed} of {counted})", fmt::percent(Some(rate)))
        }
    };
    let limit = match v.threshold {
        Threshold::ErrorRate { limit } => fmt::percent(Some(limit)),
        Threshold::Percentile { limit_ms, .. } => fmt::ms(limit_ms),
    };
    format!(
        "  {} {:<14} {shown}  (max {limit})",
        if v.held { "PASS" } else { "FAIL" },
        v.threshold.name()
    )
}

/// A line of the gate against a baseline: `  FAIL against ID: …` with the
/// comparison's sentence; `verdict` is PASS, FAIL or NOTE.
pub fn against(verdict: &str, baseline: &str, c: &firsttoken_analyze::Comparison) -> String {
    format!("  {verdict} against {baseline}: {}", super::comparison(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_analyze::check::CheckMetric;
    use firsttoken_analyze::{Percentile, Stat};

    #[test]
    fn lines_say_the_verdict_the_value_and_the_limit() {
        let v = Verdict {
            threshold: Threshold::ErrorRate { limit: 0.01 },
            found: Found::ErrorRate {
                failed: 1,
                counted: 50,
            },
            held: false,
        };
        assert_eq!(
            threshold(&v),
            "  FAIL error_rate     2.0 % (1 of 50)  (max 1.0 %)"
        );
        let v = Verdict {
            threshold: Threshold::Percentile {
                metric: CheckMetric::Ttft,
                percentile: Percentile::P99,
                limit_ms: 3000.0,
            },
            found: Found::Percentile(Stat::TooSmall { n: 40, needed: 100 }),
            held: false,
        };
        assert_eq!(
            threshold(&v),
            format!(
                "  FAIL ttft.p99       {}  (max {})",
                fmt::stat(Unit::Ms, &Stat::TooSmall { n: 40, needed: 100 }),
                fmt::ms(3000.0)
            )
        );
    }
}

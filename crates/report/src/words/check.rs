//! The words of `firsttoken check`: one line per threshold, and the gate
//! against a baseline.

use firsttoken_analyze::check::{Found, Threshold, Verdict};
use firsttoken_analyze::compare::Gate;

use crate::format::{self as fmt, Unit};

/// The head line: `check of session ID (measured, code v2)`.
pub fn head(id: &str, provenance: &str, code_version: &str) -> String {
    format!("check of session {id} ({provenance}, code {code_version})")
}

/// A threshold's line: `  PASS ttft.p95        812 ms [790 ms, 840 ms]  (max 3.00 s)`.
/// The verdict is the point's; when the interval reaches across the
/// limit the line says so (`… (max 800 ms; its interval reaches past it)`).
pub fn threshold(v: &Verdict) -> String {
    let shown = match &v.found {
        Found::Percentile(s) => fmt::stat(Unit::Ms, s),
        Found::NoSuccess => "no successful app requests".to_string(),
        Found::ErrorRate { counted: 0, .. } => "no app requests counted".to_string(),
        Found::ErrorRate { failed, counted } => {
            let rate = *failed as f64 / *counted as f64;
            format!("{} ({failed} of {counted})", fmt::percent(Some(rate)))
        }
    };
    let (limit, straddles) = match v.threshold {
        Threshold::ErrorRate { limit } => (fmt::percent(Some(limit)), None),
        Threshold::Percentile { limit_ms, .. } => (
            fmt::ms(limit_ms),
            match &v.found {
                Found::Percentile(s) => s
                    .ci()
                    .filter(|ci| ci.lower <= limit_ms && ci.upper > limit_ms)
                    .map(|_| {
                        if v.held {
                            "; its interval reaches past it"
                        } else {
                            "; its interval reaches below it"
                        }
                    }),
                _ => None,
            },
        ),
    };
    format!(
        "  {} {:<14} {shown}  (max {limit}{})",
        if v.held { "PASS" } else { "FAIL" },
        v.threshold.name(),
        straddles.unwrap_or("")
    )
}

/// A gate's word: `PASS`, `FAIL` or `NOTE`.
pub fn gate(g: Gate) -> &'static str {
    match g {
        Gate::Pass => "PASS",
        Gate::Fail => "FAIL",
        Gate::Note => "NOTE",
    }
}

/// A line of the gate against a baseline: `  FAIL against ID: …` with the
/// comparison's sentence.
pub fn against(g: Gate, baseline: &str, c: &firsttoken_analyze::Comparison) -> String {
    format!("  {} against {baseline}: {}", gate(g), super::comparison(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_analyze::check::CheckMetric;
    use firsttoken_analyze::{Ci, Estimate, Percentile, Stat};

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
        // Nothing counted: no rate, and the limit does not hold.
        let none = Verdict {
            threshold: Threshold::ErrorRate { limit: 0.01 },
            found: Found::ErrorRate {
                failed: 0,
                counted: 0,
            },
            held: false,
        };
        assert_eq!(
            threshold(&none),
            "  FAIL error_rate     no app requests counted  (max 1.0 %)"
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

    /// A PASS whose interval reaches past the limit says so: the verdict
    /// is the point's, and the words say what the interval says.
    #[test]
    fn a_limit_inside_the_interval_is_named() {
        let p95 = |point, lower, upper| {
            Found::Percentile(Stat::Ok(Estimate {
                point,
                standard_error: 5.0,
                ci: Ci {
                    level: 0.95,
                    lower,
                    upper,
                },
            }))
        };
        let t = Threshold::Percentile {
            metric: CheckMetric::Ttft,
            percentile: Percentile::P95,
            limit_ms: 800.0,
        };
        let line = |found, held| {
            threshold(&Verdict {
                threshold: t,
                found,
                held,
            })
        };
        assert!(
            line(p95(790.0, 770.0, 815.0), true)
                .ends_with("(max 800 ms; its interval reaches past it)"),
            "{}",
            line(p95(790.0, 770.0, 815.0), true)
        );
        assert!(
            line(p95(812.0, 795.0, 840.0), false)
                .ends_with("(max 800 ms; its interval reaches below it)")
        );
        assert!(line(p95(700.0, 680.0, 720.0), true).ends_with("(max 800 ms)"));
    }
}

//! The one number formatter: every duration, ratio, percentage, interval
//! and "too few samples" note in every output (terminal, Markdown, HTML,
//! the JSON text fields, the probe's line and table, the run summary) is
//! printed here, so the same value reads the same everywhere.
//!
//! | value | printed |
//! |---|---|
//! | duration under 10 ms | `0.4 ms` |
//! | duration under 1 s | `38 ms` |
//! | duration from 1 s | `1.90 s` |
//! | tokens per second | `41 tok/s` |
//! | ratio | `2.93×` |
//! | share | `12.5 %` |
//! | relative change | `+12 %` |
//! | estimate | `2.40 s [2.35 s, 2.47 s]` (more decimals when the bounds would print alike) |
//! | withheld estimate | `too few samples (n = 12, needs 20)` |

use firsttoken_analyze::{Metric, Stat};
use serde::Serialize;

/// The unit a value is printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds, printed as `38 ms` or `1.90 s`.
    Ms,
    /// Tokens per second.
    TokS,
    /// A ratio, `2.93×`.
    Ratio,
}

impl Unit {
    /// The unit of a metric's values.
    pub fn of(metric: Metric) -> Unit {
        match metric {
            Metric::TokensPerS => Unit::TokS,
            _ => Unit::Ms,
        }
    }
}

/// A value with `extra` more decimals than usual.
fn value_with(unit: Unit, v: f64, extra: usize) -> String {
    value_at(unit, v, v.abs(), extra)
}

/// A value printed at the scale of `magnitude` (the largest of an
/// estimate's point and bounds), so an interval keeps one unit:
/// `1.00 s [0.93 s, 1.07 s]`, not `1.00 s [931 ms, 1.07 s]`.
fn value_at(unit: Unit, v: f64, magnitude: f64, extra: usize) -> String {
    match unit {
        Unit::Ms => {
            let a = magnitude;
            if a >= 1000.0 {
                format!("{:.*} s", 2 + extra, v / 1000.0)
            } else if a >= 10.0 {
                format!("{v:.extra$} ms")
            } else {
                format!("{:.*} ms", 1 + extra, v)
            }
        }
        Unit::TokS => format!("{v:.extra$} tok/s"),
        Unit::Ratio => format!("{:.*}×", 2 + extra, v),
    }
}

/// A value in its unit.
pub fn value(unit: Unit, v: f64) -> String {
    value_with(unit, v, 0)
}

/// A duration: `0.4 ms`, `38 ms`, `1.90 s`.
pub fn ms(v: f64) -> String {
    value(Unit::Ms, v)
}

/// A signed duration to a tenth of a millisecond, for a clock offset
/// whose interval is narrower than the usual three digits: `+2000.2 ms`.
pub fn precise_ms(v: f64) -> String {
    if v < 0.0 {
        format!("−{:.1} ms", -v)
    } else {
        format!("+{v:.1} ms")
    }
}

/// A value with its sign: `+411 ms`, `-12 ms` (a single value's excess,
/// which has no interval).
pub fn signed(unit: Unit, v: f64) -> String {
    if v >= 0.0 {
        format!("+{}", value(unit, v))
    } else {
        value(unit, v)
    }
}

/// A count that may be a median of counts: `3`, `2.5`.
pub fn count(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A ratio: `2.93×`.
pub fn ratio(r: f64) -> String {
    value(Unit::Ratio, r)
}

/// A value or `–`.
pub fn opt(unit: Unit, v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_string(), |v| value(unit, v))
}

/// Just the point of a statistic, or `–`.
pub fn point(unit: Unit, s: &Stat) -> String {
    opt(unit, s.point())
}

/// What stands in for a missing value.
pub const DASH: &str = "–";

/// Extra decimals (up to 2) that keep an interval's bounds apart; none
/// when even two more would not (an interval of one repeated value).
fn precision(unit: Unit, lo: f64, hi: f64, magnitude: f64) -> usize {
    (0..=2)
        .find(|&x| value_at(unit, lo, magnitude, x) != value_at(unit, hi, magnitude, x))
        .unwrap_or(0)
}

/// Why an estimate is withheld: `too few samples (n = 12, needs 20)`.
pub fn too_few(n: usize, needed: usize) -> String {
    format!("too few samples {}", too_few_counts(n, needed))
}

/// Samples too few for the rank test to ever be significant:
/// `too few samples for a rank test (n = 3 and 3)`.
pub fn too_few_for_test(n_a: usize, n_b: usize) -> String {
    format!("too few samples for a rank test (n = {n_a} and {n_b})")
}

/// The counts of [`too_few`]: `(n = 12, needs 20)`.
pub fn too_few_counts(n: usize, needed: usize) -> String {
    format!("(n = {n}, needs {needed})")
}

/// A statistic as a point and an interval, or the reason it is withheld.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The point (`2.40 s`), or `too few samples`.
    pub v: String,
    /// Its interval (`[2.35 s, 2.47 s]`), the counts behind a withheld
    /// value (`(n = 12, needs 20)`), or nothing.
    pub sub: Option<String>,
}

impl Cell {
    /// A cell with no interval.
    pub fn plain(v: impl Into<String>) -> Cell {
        Cell {
            v: v.into(),
            sub: None,
        }
    }

    /// A cell printed on one line, split back into its point and what
    /// follows it (its interval, or the counts behind a withheld value):
    /// the inverse of [`Cell::line`]. Words with neither stay whole.
    pub fn split(line: &str) -> Cell {
        let at = [" [", " (n = ", " (n < "]
            .iter()
            .filter_map(|sep| line.find(sep))
            .min();
        match at {
            Some(i) => Cell {
                v: line[..i].to_string(),
                sub: Some(line[i + 1..].to_string()),
            },
            None => Cell::plain(line),
        }
    }

    /// The cell on one line: `2.40 s [2.35 s, 2.47 s]`.
    pub fn line(&self) -> String {
        match &self.sub {
            Some(s) => format!("{} {s}", self.v),
            None => self.v.clone(),
        }
    }
}

/// A statistic as a [`Cell`]; `sign` puts `+` on a non-negative point.
pub fn cell(unit: Unit, s: &Stat, sign: bool) -> Cell {
    match s {
        Stat::Ok(e) => {
            let m = e.point.abs().max(e.ci.lower.abs()).max(e.ci.upper.abs());
            let x = precision(unit, e.ci.lower, e.ci.upper, m);
            let p = value_at(unit, e.point, m, x);
            Cell {
                v: if sign && e.point >= 0.0 {
                    format!("+{p}")
                } else {
                    p
                },
                sub: Some(format!(
                    "[{}, {}]",
                    value_at(unit, e.ci.lower, m, x),
                    value_at(unit, e.ci.upper, m, x)
                )),
            }
        }
        Stat::TooSmall { n, needed } => Cell {
            v: "too few samples".into(),
            sub: Some(too_few_counts(*n, *needed)),
        },
    }
}

/// A summary's median with its interval; a group of one is its value
/// (`812 ms (one value)`), never a withheld median nor an interval.
pub fn median_of(unit: Unit, m: &firsttoken_analyze::MetricSummary) -> String {
    match (m.n, m.mean) {
        (1, Some(v)) => format!("{} ({ONE_VALUE})", value(unit, v)),
        _ => pct_cell(unit, &m.p50),
    }
}

/// A percentile in a table cell: [`stat`], or `– (n < 100)` when too few
/// samples withhold it (one rule everywhere: p50 needs 2, p90 10, p95 20,
/// p99 100; the table's note says so once).
pub fn pct_cell(unit: Unit, s: &Stat) -> String {
    match s {
        Stat::TooSmall { needed, .. } => format!("{DASH} (n < {needed})"),
        ok => stat(unit, ok),
    }
}

/// What a single value is called where a statistic would stand.
pub const ONE_VALUE: &str = "one value";

/// An estimate with its interval (`2.40 s [2.35 s, 2.47 s]`), or
/// `too few samples (n = 12, needs 20)`.
pub fn stat(unit: Unit, s: &Stat) -> String {
    cell(unit, s, false).line()
}

/// Like [`stat`], with a sign on the point (`+1.90 s [...]`).
pub fn signed_stat(unit: Unit, s: &Stat) -> String {
    cell(unit, s, true).line()
}

/// A share as a percentage: `12.5 %`, or `–`.
pub fn percent(r: Option<f64>) -> String {
    r.map_or_else(|| DASH.to_string(), |r| format!("{:.1} %", 100.0 * r))
}

/// A band around no change, relative: `±5 %` (`±2.5 %`).
pub fn band(r: f64) -> String {
    let p = 100.0 * r;
    if (p - p.round()).abs() < 1e-9 {
        format!("±{p:.0} %")
    } else {
        format!("±{p:.1} %")
    }
}

/// A relative change: `+12 %`, or `–`.
pub fn relative(r: Option<f64>) -> String {
    r.map_or_else(|| DASH.to_string(), |r| format!("{:+.0} %", 100.0 * r))
}

/// A p-value: `p = 0.012`, `p < 0.001`.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {p:.3}")
    }
}

/// A signed coefficient such as Cliff's δ: `+0.42`.
pub fn coefficient(x: f64) -> String {
    format!("{x:+.2}")
}

/// An amount of money: `$0.0123`.
pub fn usd(x: f64) -> String {
    // `+ 0.0` turns the -0.0 of an empty f64 sum into 0.0.
    format!("${:.4}", x + 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_analyze::{Ci, Estimate};

    #[test]
    fn an_empty_sum_costs_zero_not_minus_zero() {
        let nothing: f64 = std::iter::empty::<f64>().sum();
        assert_eq!(usd(nothing), "$0.0000");
        assert_eq!(usd(0.0125), "$0.0125");
    }

    fn est(point: f64, lower: f64, upper: f64) -> Stat {
        Stat::Ok(Estimate {
            point,
            standard_error: 1.0,
            ci: Ci {
                level: 0.95,
                lower,
                upper,
            },
        })
    }

    #[test]
    fn formats() {
        assert_eq!(ms(0.42), "0.4 ms");
        assert_eq!(ms(420.4), "420 ms");
        assert_eq!(ms(1900.0), "1.90 s");
        assert_eq!(ms(-1200.0), "-1.20 s");
        assert_eq!(ratio(2.934), "2.93×");
        assert_eq!(value(Unit::TokS, 38.2), "38 tok/s");
        let e = est(2403.0, 2401.0, 2404.0);
        assert_eq!(stat(Unit::Ms, &e), "2.403 s [2.401 s, 2.404 s]");
        assert_eq!(signed_stat(Unit::Ms, &e), "+2.403 s [2.401 s, 2.404 s]");
        assert_eq!(
            stat(Unit::Ms, &Stat::TooSmall { n: 12, needed: 20 }),
            "too few samples (n = 12, needs 20)"
        );
        assert_eq!(too_few(12, 20), "too few samples (n = 12, needs 20)");
        assert_eq!(
            stat(Unit::Ms, &est(32.0, 32.0, 32.0)),
            "32 ms [32 ms, 32 ms]"
        );
        assert_eq!(
            cell(Unit::Ms, &Stat::TooSmall { n: 3, needed: 10 }, false),
            Cell {
                v: "too few samples".into(),
                sub: Some("(n = 3, needs 10)".into())
            }
        );
        assert_eq!(
            stat(Unit::Ratio, &est(2.93, 2.92, 2.94)),
            "2.93× [2.92×, 2.94×]"
        );
        // One unit per interval, chosen by its largest figure.
        assert_eq!(
            stat(Unit::Ms, &est(1000.0, 931.0, 1070.0)),
            "1.00 s [0.93 s, 1.07 s]"
        );
        assert_eq!(
            signed_stat(Unit::Ms, &est(-6.0, -24.0, 12.0)),
            "-6 ms [-24 ms, 12 ms]"
        );
        // A printed cell splits back into its parts.
        for c in [
            cell(Unit::Ms, &e, true),
            cell(Unit::Ms, &Stat::TooSmall { n: 3, needed: 10 }, false),
            Cell::plain("329 ms – 340 ms"),
        ] {
            assert_eq!(Cell::split(&c.line()), c);
        }
        assert_eq!(percent(Some(0.125)), "12.5 %");
        assert_eq!(relative(Some(-0.2)), "-20 %");
        assert_eq!(p_value(0.0004), "p < 0.001");
        assert_eq!(p_value(0.0122), "p = 0.012");
        assert_eq!(coefficient(0.5), "+0.50");
        assert_eq!(usd(0.01234), "$0.0123");
    }
}

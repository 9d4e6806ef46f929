//! Numbers as the page prints them: durations with their unit, estimates
//! with their interval, or why there is none.

use firsttoken_analyze::{Metric, Stat};
use serde::Serialize;

/// The unit a value is printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Milliseconds, printed as `38 ms` or `1.90 s`.
    Ms,
    /// Tokens per second.
    TokS,
    /// A ratio, `2.9×`.
    Ratio,
}

impl Unit {
    pub fn of(metric: Metric) -> Unit {
        match metric {
            Metric::TokensPerS => Unit::TokS,
            _ => Unit::Ms,
        }
    }
}

/// A value with `extra` more decimals than usual.
fn value_with(unit: Unit, v: f64, extra: usize) -> String {
    match unit {
        Unit::Ms => {
            let a = v.abs();
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
pub(crate) fn value(unit: Unit, v: f64) -> String {
    value_with(unit, v, 0)
}

/// A duration: `0.4 ms`, `38 ms`, `1.90 s`.
pub(crate) fn ms(v: f64) -> String {
    value(Unit::Ms, v)
}

/// A ratio: `2.93×`.
pub(crate) fn ratio(r: f64) -> String {
    value(Unit::Ratio, r)
}

/// Extra decimals (up to 2) that keep an interval's bounds apart; none
/// when even two more would not (an interval of one repeated value).
fn precision(unit: Unit, lo: f64, hi: f64) -> usize {
    (0..=2)
        .find(|&x| value_with(unit, lo, x) != value_with(unit, hi, x))
        .unwrap_or(0)
}

/// An estimate with its interval (`2.41 s [2.35 s, 2.47 s]`), or
/// `n too small (n = 12, needs 20)`.
pub(crate) fn stat(unit: Unit, s: &Stat) -> String {
    signed(unit, s, false)
}

/// Like [`stat`], with a sign on the point (`+1.90 s [...]`).
pub(crate) fn signed_stat(unit: Unit, s: &Stat) -> String {
    signed(unit, s, true)
}

fn signed(unit: Unit, s: &Stat, sign: bool) -> String {
    match s {
        Stat::Ok(e) => {
            let x = precision(unit, e.ci.lower, e.ci.upper);
            let p = value_with(unit, e.point, x);
            let p = if sign && e.point >= 0.0 {
                format!("+{p}")
            } else {
                p
            };
            format!(
                "{p} [{}, {}]",
                value_with(unit, e.ci.lower, x),
                value_with(unit, e.ci.upper, x)
            )
        }
        Stat::TooSmall { n, needed } => format!("n too small (n = {n}, needs {needed})"),
    }
}

/// A table cell: the value, and beneath it in smaller type its interval
/// (or why the value is withheld).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Cell {
    /// The value.
    pub v: String,
    /// Its interval, `[lo, hi]`, or the reason it is withheld.
    pub sub: Option<String>,
}

/// A plain cell.
pub(crate) fn c(v: impl Into<String>) -> Cell {
    Cell {
        v: v.into(),
        sub: None,
    }
}

/// A statistic as a cell: the point over its interval, or "n too small"
/// over `(n = 12, needs 20)`.
pub(crate) fn cell(unit: Unit, s: &Stat) -> Cell {
    cell_signed(unit, s, false)
}

/// Like [`cell`], with a sign on the point.
pub(crate) fn signed_cell(unit: Unit, s: &Stat) -> Cell {
    cell_signed(unit, s, true)
}

fn cell_signed(unit: Unit, s: &Stat, sign: bool) -> Cell {
    match s {
        Stat::Ok(e) => {
            let x = precision(unit, e.ci.lower, e.ci.upper);
            let p = value_with(unit, e.point, x);
            Cell {
                v: if sign && e.point >= 0.0 {
                    format!("+{p}")
                } else {
                    p
                },
                sub: Some(format!(
                    "[{}, {}]",
                    value_with(unit, e.ci.lower, x),
                    value_with(unit, e.ci.upper, x)
                )),
            }
        }
        Stat::TooSmall { n, needed } => Cell {
            v: "n too small".into(),
            sub: Some(format!("(n = {n}, needs {needed})")),
        },
    }
}

/// Just the point of a statistic, or `–`.
pub(crate) fn point(unit: Unit, s: &Stat) -> String {
    s.point()
        .map_or_else(|| "–".to_string(), |v| value(unit, v))
}

/// A value or `–`.
pub(crate) fn opt(unit: Unit, v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| value(unit, v))
}

/// A share as a percentage: `12.5 %`, or `–`.
pub(crate) fn percent(r: Option<f64>) -> String {
    r.map_or_else(|| "–".to_string(), |r| format!("{:.1} %", 100.0 * r))
}

/// A relative change: `+12 %`.
pub(crate) fn relative(r: Option<f64>) -> String {
    r.map_or_else(|| "–".to_string(), |r| format!("{:+.0} %", 100.0 * r))
}

/// A p-value: `p = 0.012`, `p < 0.001`.
pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_analyze::{Ci, Estimate};

    #[test]
    fn formats() {
        assert_eq!(ms(0.42), "0.4 ms");
        assert_eq!(ms(420.4), "420 ms");
        assert_eq!(ms(1900.0), "1.90 s");
        assert_eq!(ratio(2.934), "2.93×");
        let e = Stat::Ok(Estimate {
            point: 2403.0,
            standard_error: 1.0,
            ci: Ci {
                level: 0.95,
                lower: 2401.0,
                upper: 2404.0,
            },
        });
        assert_eq!(stat(Unit::Ms, &e), "2.403 s [2.401 s, 2.404 s]");
        assert_eq!(signed_stat(Unit::Ms, &e), "+2.403 s [2.401 s, 2.404 s]");
        assert_eq!(
            stat(Unit::Ms, &Stat::TooSmall { n: 12, needed: 20 }),
            "n too small (n = 12, needs 20)"
        );
        let same = Stat::Ok(Estimate {
            point: 32.0,
            standard_error: 0.0,
            ci: Ci {
                level: 0.95,
                lower: 32.0,
                upper: 32.0,
            },
        });
        assert_eq!(stat(Unit::Ms, &same), "32 ms [32 ms, 32 ms]");
        assert_eq!(
            cell(Unit::Ms, &Stat::TooSmall { n: 3, needed: 10 }),
            Cell {
                v: "n too small".into(),
                sub: Some("(n = 3, needs 10)".into())
            }
        );
        assert_eq!(
            cell(Unit::Ms, &e).sub.as_deref(),
            Some("[2.401 s, 2.404 s]")
        );
        assert_eq!(percent(Some(0.125)), "12.5 %");
        assert_eq!(relative(Some(-0.2)), "-20 %");
        assert_eq!(p_value(0.0004), "p < 0.001");
    }
}

//! Number formatting for the one-line human summaries.

use crate::estimate::{Ci, Stat};
use crate::frame::Metric;

/// A duration: `0.4 ms`, `38 ms`, `1.9 s`.
pub(crate) fn ms(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{:.1} s", v / 1000.0)
    } else if a >= 10.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.1} ms")
    }
}

/// A value of `metric` in its unit.
pub(crate) fn value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::TokensPerS => format!("{v:.0} tok/s"),
        _ => ms(v),
    }
}

/// A duration with `extra` more decimals than [`ms`] uses.
fn ms_with(v: f64, extra: usize) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{:.*} s", 1 + extra, v / 1000.0)
    } else if a >= 10.0 {
        format!("{v:.extra$} ms")
    } else {
        format!("{:.*} ms", 1 + extra, v)
    }
}

/// A value of `metric` with `extra` more decimals than usual.
fn value_with(metric: Metric, v: f64, extra: usize) -> String {
    match metric {
        Metric::TokensPerS => format!("{v:.extra$} tok/s"),
        _ => ms_with(v, extra),
    }
}

/// Extra decimals (up to 2) that keep a narrow interval's bounds apart.
fn precision(metric: Metric, ci: &Ci) -> usize {
    (0..2)
        .find(|&x| value_with(metric, ci.lower, x) != value_with(metric, ci.upper, x))
        .unwrap_or(2)
}

/// `[1.7 s, 2.1 s]`; more decimals when the bounds would print the same.
pub(crate) fn ci(metric: Metric, ci: &Ci) -> String {
    let x = precision(metric, ci);
    format!(
        "[{}, {}]",
        value_with(metric, ci.lower, x),
        value_with(metric, ci.upper, x)
    )
}

/// A statistic with its interval, or why it is withheld.
pub(crate) fn stat(metric: Metric, s: &Stat) -> String {
    match s {
        Stat::Ok(e) => {
            let x = precision(metric, &e.ci);
            format!("{} {}", value_with(metric, e.point, x), ci(metric, &e.ci))
        }
        Stat::TooSmall { n, needed } => format!("n too small (n = {n}, needs {needed})"),
    }
}

/// A signed statistic with its interval.
pub(crate) fn signed_stat(metric: Metric, s: &Stat) -> String {
    match s {
        Stat::Ok(e) => {
            let x = precision(metric, &e.ci);
            let v = value_with(metric, e.point, x);
            let v = if e.point >= 0.0 { format!("+{v}") } else { v };
            format!("{v} {}", ci(metric, &e.ci))
        }
        Stat::TooSmall { n, needed } => format!("n too small (n = {n}, needs {needed})"),
    }
}

/// A ratio: `3.1×`.
pub(crate) fn ratio(r: f64) -> String {
    format!("{r:.1}×")
}

/// A ratio with its interval: `3.1× [2.8×, 3.4×]`, more decimals when narrow.
pub(crate) fn ratio_ci(point: f64, lower: f64, upper: f64) -> String {
    let d = (1..3)
        .find(|&d| format!("{lower:.d$}") != format!("{upper:.d$}"))
        .unwrap_or(3);
    format!("{point:.d$}× [{lower:.d$}×, {upper:.d$}×]")
}

/// A relative change: `+12 %`.
pub(crate) fn relative(r: f64) -> String {
    format!("{:+.0} %", 100.0 * r)
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

    #[test]
    fn formats() {
        assert_eq!(ms(0.42), "0.4 ms");
        assert_eq!(ms(420.4), "420 ms");
        assert_eq!(ms(1900.0), "1.9 s");
        assert_eq!(ms(-1200.0), "-1.2 s");
        assert_eq!(ratio(3.06), "3.1×");
        assert_eq!(relative(0.123), "+12 %");
        assert_eq!(p_value(0.0004), "p < 0.001");
        assert_eq!(p_value(0.0122), "p = 0.012");
        assert_eq!(value(Metric::TokensPerS, 38.2), "38 tok/s");
        let narrow = Ci {
            level: 0.95,
            lower: 2204.0,
            upper: 2231.0,
        };
        assert_eq!(ci(Metric::Ttft, &narrow), "[2.20 s, 2.23 s]");
        assert_eq!(ratio_ci(2.93, 2.92, 2.94), "2.93× [2.92×, 2.94×]");
        assert_eq!(ratio_ci(3.1, 2.8, 3.4), "3.1× [2.8×, 3.4×]");
    }
}

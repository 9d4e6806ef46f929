//! The one shape of an estimate with an interval, after criterion.rs
//! (`src/estimate.rs`): `Estimate { point, standard_error, ci: { level,
//! lower, upper } }`, plus [`Stat`], an estimate or the reason it is
//! withheld ("n too small").
//!
//! A percentile is only reported with enough samples behind it: the `p`-th
//! percentile needs `n ≥ ⌈100 / (100 − p)⌉` ([`min_n`]), so that at least one
//! observation lies at or above it (p50 → 2, p90 → 10, p95 → 20, p99 → 100).

use std::str::FromStr;

use serde::Serialize;

use crate::StatsError;

/// A confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ci {
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
}

impl Ci {
    /// True when `x` lies inside the closed interval.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }

    /// True when the interval lies entirely above or below zero.
    pub fn excludes_zero(&self) -> bool {
        self.lower > 0.0 || self.upper < 0.0
    }
}

/// A point estimate with its standard error and confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The statistic computed on the data.
    pub point: f64,
    /// Standard deviation of its bootstrap distribution.
    pub standard_error: f64,
    /// Its confidence interval.
    pub ci: Ci,
}

/// An estimate, or why there is none. Serialized with a `status` tag:
/// `{"status":"ok","point":…,"standard_error":…,"ci":{…}}` or
/// `{"status":"too_small","n":12,"needed":20}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Stat {
    /// Enough samples: the estimate.
    Ok(Estimate),
    /// Not enough samples behind it ("n too small").
    TooSmall {
        /// Samples available (the smaller side for a difference).
        n: usize,
        /// Samples needed.
        needed: usize,
    },
}

impl Stat {
    /// The estimate, if there is one.
    pub fn estimate(&self) -> Option<&Estimate> {
        match self {
            Stat::Ok(e) => Some(e),
            Stat::TooSmall { .. } => None,
        }
    }

    /// The point estimate, if there is one.
    pub fn point(&self) -> Option<f64> {
        self.estimate().map(|e| e.point)
    }

    /// The interval, if there is one.
    pub fn ci(&self) -> Option<Ci> {
        self.estimate().map(|e| e.ci)
    }
}

/// A percentile rank `p` in `[0, 100)`, validated.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
#[serde(transparent)]
pub struct Percentile(f64);

impl Percentile {
    /// The median.
    pub const P50: Percentile = Percentile(50.0);
    /// The 90th percentile.
    pub const P90: Percentile = Percentile(90.0);
    /// The 95th percentile.
    pub const P95: Percentile = Percentile(95.0);
    /// The 99th percentile.
    pub const P99: Percentile = Percentile(99.0);

    /// `p` must lie in `[0, 100)` (the maximum has no sampling distribution
    /// worth an interval).
    pub fn new(p: f64) -> Result<Percentile, StatsError> {
        if (0.0..100.0).contains(&p) {
            Ok(Percentile(p))
        } else {
            Err(StatsError::BadPercentile { p })
        }
    }

    /// The rank, 0–100.
    pub fn get(self) -> f64 {
        self.0
    }

    /// Samples needed to report it: [`min_n`].
    pub fn min_n(self) -> usize {
        min_n(self.0)
    }
}

/// Text that names no percentile (see [`Percentile`]'s [`FromStr`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected p50, p95 or another pNN below p100")]
pub struct PercentileParseError {
    /// The text given.
    pub given: String,
}

impl FromStr for Percentile {
    type Err = PercentileParseError;

    /// `p95`, `P99.9`, `median` (surrounding spaces ignored): a rank from 1
    /// to below 100, the ranks people ask about; `p0.5` or `p100` are
    /// refused, as is a bare `95`.
    fn from_str(s: &str) -> Result<Percentile, PercentileParseError> {
        let t = s.trim().to_ascii_lowercase();
        let p = if t == "median" {
            Some(50.0)
        } else {
            t.strip_prefix('p').and_then(|n| n.parse::<f64>().ok())
        };
        match p {
            Some(p) if (1.0..100.0).contains(&p) => Ok(Percentile(p)),
            _ => Err(PercentileParseError {
                given: s.to_string(),
            }),
        }
    }
}

/// The least n for which the `p`-th percentile is reported:
/// `⌈100 / (100 − p)⌉` (p50 → 2, p90 → 10, p95 → 20, p99 → 100);
/// `usize::MAX` for `p ≥ 100`.
pub fn min_n(p: f64) -> usize {
    if p >= 100.0 {
        return usize::MAX;
    }
    let x = 100.0 / (100.0 - p.max(0.0));
    // The small tolerance keeps 100/(100−99.9) = 1000.0000000000568 at 1000.
    (x - 1e-9).ceil().max(1.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_n_per_percentile() {
        assert_eq!(min_n(50.0), 2);
        assert_eq!(min_n(90.0), 10);
        assert_eq!(min_n(95.0), 20);
        assert_eq!(min_n(99.0), 100);
        assert_eq!(min_n(99.9), 1000);
        assert_eq!(min_n(0.0), 1);
        assert_eq!(min_n(100.0), usize::MAX);
        assert!(Percentile::new(100.0).is_err());
        assert!(Percentile::new(-1.0).is_err());
        assert_eq!(Percentile::new(95.0).unwrap(), Percentile::P95);
    }

    #[test]
    fn percentiles_parse_from_pnn_and_median() {
        assert_eq!("p95".parse::<Percentile>().unwrap(), Percentile::P95);
        assert_eq!(" P99 ".parse::<Percentile>().unwrap(), Percentile::P99);
        assert_eq!("median".parse::<Percentile>().unwrap(), Percentile::P50);
        assert_eq!("p99.9".parse::<Percentile>().unwrap().get(), 99.9);
        assert_eq!("p1".parse::<Percentile>().unwrap().get(), 1.0);
        for bad in ["p100", "p0.5", "95", "p", "pNaN", "mean", ""] {
            let e = bad.parse::<Percentile>().unwrap_err();
            assert_eq!(e.given, bad);
            assert_eq!(e.to_string(), "expected p50, p95 or another pNN below p100");
        }
    }

    #[test]
    fn stat_serializes_with_a_status_tag() {
        let ok = Stat::Ok(Estimate {
            point: 1.0,
            standard_error: 0.1,
            ci: Ci {
                level: 0.95,
                lower: 0.8,
                upper: 1.2,
            },
        });
        let v = serde_json::to_value(ok).unwrap();
        assert_eq!(v["status"], "ok");
        assert_eq!(v["ci"]["upper"], 1.2);
        let small = serde_json::to_value(Stat::TooSmall { n: 12, needed: 20 }).unwrap();
        assert_eq!(
            small,
            serde_json::json!({"status": "too_small", "n": 12, "needed": 20})
        );
    }
}

//! Findings as data: an estimate with its interval, the counts behind it,
//! and a [`Direction`] decided from the interval — never from the sign of
//! the point estimate.
//!
//! The rule ("words follow intervals"): a finding is an [`Direction::Increase`]
//! only when the whole interval lies above the null value (0 for a
//! difference, 1 for a ratio) — and, where a noise threshold applies,
//! above the null plus that threshold; a [`Direction::Decrease`] likewise
//! below. An interval that reaches the null (or the noise band) is
//! [`Direction::NoDetectableDifference`], whatever its point says; without
//! an estimate it is [`Direction::TooFewSamples`]. The report stage turns a
//! finding into words; analysis writes none.

use serde::Serialize;

use crate::estimate::Stat;

/// What an interval lets one say about a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The interval lies wholly above the null (beyond any noise band).
    Increase,
    /// The interval lies wholly below the null (beyond any noise band).
    Decrease,
    /// The interval reaches the null or the noise band.
    NoDetectableDifference,
    /// Too few samples for an interval.
    TooFewSamples,
}

impl Direction {
    /// The direction an interval supports: `stat` against the `null` value,
    /// with `band` (absolute, ≥ 0) of noise on either side.
    pub fn of(stat: &Stat, null: f64, band: f64) -> Direction {
        match stat.estimate() {
            None => Direction::TooFewSamples,
            Some(e) if e.ci.lower > null + band => Direction::Increase,
            Some(e) if e.ci.upper < null - band => Direction::Decrease,
            Some(_) => Direction::NoDetectableDifference,
        }
    }

    /// True for [`Direction::Increase`] and [`Direction::Decrease`].
    pub fn is_change(self) -> bool {
        matches!(self, Direction::Increase | Direction::Decrease)
    }
}

/// One change, as data: `a` against the baseline `b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Finding {
    /// The estimate (a − b, or a ÷ b) with its interval, or why it is
    /// withheld (`too_small` with n and needed).
    pub estimate: Stat,
    /// The value meaning "no change": 0 for a difference, 1 for a ratio.
    pub null: f64,
    /// Values on the compared side.
    pub n_a: usize,
    /// Values on the baseline side.
    pub n_b: usize,
    /// What the interval supports.
    pub direction: Direction,
}

impl Finding {
    /// A difference a − b, judged against 0 with no noise band.
    pub fn difference(estimate: Stat, n_a: usize, n_b: usize) -> Finding {
        Finding::with_band(estimate, 0.0, 0.0, n_a, n_b)
    }

    /// A ratio a ÷ b, judged against 1 with a relative noise `threshold`.
    pub fn ratio(estimate: Stat, threshold: f64, n_a: usize, n_b: usize) -> Finding {
        Finding::with_band(estimate, 1.0, threshold, n_a, n_b)
    }

    /// Any finding: `estimate` against `null` with `band` of noise.
    pub fn with_band(estimate: Stat, null: f64, band: f64, n_a: usize, n_b: usize) -> Finding {
        Finding {
            direction: Direction::of(&estimate, null, band),
            estimate,
            null,
            n_a,
            n_b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{Ci, Estimate};

    fn stat(point: f64, lower: f64, upper: f64) -> Stat {
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
    fn the_interval_decides_not_the_point() {
        // The demo's case: a negative point, an interval spanning zero.
        let f = Finding::difference(stat(-42.0, -87.0, 48.0), 60, 60);
        assert_eq!(f.direction, Direction::NoDetectableDifference);
        let f = Finding::difference(stat(42.0, -3.0, 88.0), 60, 60);
        assert_eq!(f.direction, Direction::NoDetectableDifference);
        assert_eq!(
            Finding::difference(stat(42.0, 3.0, 88.0), 60, 60).direction,
            Direction::Increase
        );
        assert_eq!(
            Finding::difference(stat(-42.0, -88.0, -3.0), 60, 60).direction,
            Direction::Decrease
        );
        let small = Stat::TooSmall { n: 1, needed: 2 };
        assert_eq!(
            Finding::difference(small, 1, 60).direction,
            Direction::TooFewSamples
        );
    }

    #[test]
    fn a_ratio_must_clear_the_noise_band() {
        assert_eq!(
            Finding::ratio(stat(1.08, 1.03, 1.12), 0.05, 20, 20).direction,
            Direction::NoDetectableDifference
        );
        assert_eq!(
            Finding::ratio(stat(1.2, 1.1, 1.3), 0.05, 20, 20).direction,
            Direction::Increase
        );
        assert_eq!(
            Finding::ratio(stat(0.5, 0.4, 0.6), 0.05, 20, 20).direction,
            Direction::Decrease
        );
    }
}

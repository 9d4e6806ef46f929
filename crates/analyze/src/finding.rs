//! Findings as data: an estimate with its interval, the counts behind it,
//! and a [`Direction`] decided from the interval — never from the sign of
//! the point estimate.
//!
//! The rule ("words follow intervals"): a finding is an [`Direction::Increase`]
//! only when the whole interval lies above the null value (0 for a
//! difference, 1 for a ratio) — and, where a noise threshold applies,
//! above the null plus that threshold; a [`Direction::Decrease`] likewise
//! below. An interval that reaches the null (or the noise band) is
//! [`Direction::NoDetectableDifference`] when it also stays inside the
//! *material* band around the null (a change that small is noise: the data
//! rule out anything larger), and [`Direction::Inconclusive`] when it
//! reaches past that band too (a material change is not ruled out: more
//! samples are needed), whatever its point says; without an estimate it is
//! [`Direction::TooFewSamples`]. The material band is the noise threshold
//! times the baseline's median (a relative 5 % by default), or the ratio's
//! noise band. The report stage turns a finding into words; analysis
//! writes none.

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
    /// The interval reaches the null and lies within the material band:
    /// no change is shown, and any change is smaller than that band.
    NoDetectableDifference,
    /// The interval excludes the null but lies within the material band:
    /// a change is shown, too small to matter (e.g. −4.2 ms [−7.5, −0.9]
    /// against a ±5 % band of 30 ms).
    TooSmallToMatter,
    /// The interval reaches the null and also past the material band: the
    /// data neither show a change nor rule out a material one at this n.
    Inconclusive,
    /// Too few samples for an interval.
    TooFewSamples,
}

impl Direction {
    /// The direction an interval supports: `stat` against the `null` value,
    /// with `band` (absolute, ≥ 0) of noise on either side.
    /// An interval that does not clear the band is judged against the
    /// `material` band (absolute, at least `band`): inside it, no
    /// detectable difference when it reaches the null, too small to matter
    /// when it excludes the null; reaching past it, inconclusive.
    pub fn of(stat: &Stat, null: f64, band: f64, material: f64) -> Direction {
        let material = material.max(band);
        match stat.estimate() {
            None => Direction::TooFewSamples,
            Some(e) if e.ci.lower > null + band => Direction::Increase,
            Some(e) if e.ci.upper < null - band => Direction::Decrease,
            Some(e) if e.ci.lower >= null - material && e.ci.upper <= null + material => {
                if e.ci.lower > null || e.ci.upper < null {
                    Direction::TooSmallToMatter
                } else {
                    Direction::NoDetectableDifference
                }
            }
            Some(_) => Direction::Inconclusive,
        }
    }

    /// True for [`Direction::Increase`] and [`Direction::Decrease`].
    pub fn is_change(self) -> bool {
        matches!(self, Direction::Increase | Direction::Decrease)
    }

    /// True for [`Direction::NoDetectableDifference`] and
    /// [`Direction::Inconclusive`]: an interval that reaches the null
    /// (never [`Direction::TooSmallToMatter`], whose interval excludes it).
    pub fn is_undecided(self) -> bool {
        matches!(
            self,
            Direction::NoDetectableDifference | Direction::Inconclusive
        )
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
    /// Half-width of the material band around the null (absolute, in the
    /// estimate's unit): an interval inside it is "no detectable
    /// difference" when it reaches the null and "too small to matter" when
    /// it excludes it; one reaching past it "inconclusive".
    pub material: f64,
    /// Values on the compared side.
    pub n_a: usize,
    /// Values on the baseline side.
    pub n_b: usize,
    /// What the interval supports.
    pub direction: Direction,
}

impl Finding {
    /// A difference a − b, judged against 0 with no noise band; `material`
    /// (absolute) separates "no detectable difference" from "inconclusive".
    pub fn difference(estimate: Stat, material: f64, n_a: usize, n_b: usize) -> Finding {
        Finding::with_band(estimate, 0.0, 0.0, material, n_a, n_b)
    }

    /// A ratio a ÷ b, judged against 1 with a relative noise `threshold`,
    /// which is also its material band.
    pub fn ratio(estimate: Stat, threshold: f64, n_a: usize, n_b: usize) -> Finding {
        Finding::with_band(estimate, 1.0, threshold, threshold, n_a, n_b)
    }

    /// Any finding: `estimate` against `null` with `band` of noise and
    /// `material` of relevance (see [`Direction::of`]).
    pub fn with_band(
        estimate: Stat,
        null: f64,
        band: f64,
        material: f64,
        n_a: usize,
        n_b: usize,
    ) -> Finding {
        let material = material.max(band);
        Finding {
            direction: Direction::of(&estimate, null, band, material),
            estimate,
            null,
            material,
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
        // The demo's case: a negative point, an interval spanning zero and
        // reaching past ±30 ms (5 % of a 600 ms baseline): inconclusive.
        let f = Finding::difference(stat(-42.0, -87.0, 48.0), 30.0, 60, 60);
        assert_eq!(f.direction, Direction::Inconclusive);
        let f = Finding::difference(stat(42.0, -3.0, 88.0), 30.0, 60, 60);
        assert_eq!(f.direction, Direction::Inconclusive);
        // The same spanning interval, inside the material band: no change
        // that matters, and the data say so.
        let f = Finding::difference(stat(2.0, -12.0, 14.0), 30.0, 60, 60);
        assert_eq!(f.direction, Direction::NoDetectableDifference);
        assert!(f.direction.is_undecided() && !f.direction.is_change());
        assert_eq!(
            Finding::difference(stat(42.0, 3.0, 88.0), 30.0, 60, 60).direction,
            Direction::Increase
        );
        assert_eq!(
            Finding::difference(stat(-42.0, -88.0, -3.0), 30.0, 60, 60).direction,
            Direction::Decrease
        );
        let small = Stat::TooSmall { n: 1, needed: 2 };
        assert_eq!(
            Finding::difference(small, 30.0, 1, 60).direction,
            Direction::TooFewSamples
        );
    }

    /// Issue 24, defect 5: an interval that excludes the null but stays
    /// inside the band was "no detectable difference".
    #[test]
    fn an_interval_clear_of_the_null_inside_the_band_is_too_small_to_matter() {
        let f = Finding::with_band(stat(-4.2, -7.5, -0.9), 0.0, 30.0, 30.0, 60, 60);
        assert_eq!(f.direction, Direction::TooSmallToMatter);
        assert!(!f.direction.is_change() && !f.direction.is_undecided());
        assert_eq!(
            Finding::ratio(stat(1.02, 1.01, 1.04), 0.05, 20, 20).direction,
            Direction::TooSmallToMatter
        );
        // Touching the null is not excluding it.
        assert_eq!(
            Finding::ratio(stat(1.02, 1.0, 1.04), 0.05, 20, 20).direction,
            Direction::NoDetectableDifference
        );
    }

    #[test]
    fn the_material_band_is_never_narrower_than_the_noise_band() {
        let f = Finding::with_band(stat(1.0, -4.0, 4.0), 0.0, 5.0, 1.0, 10, 10);
        assert_eq!(f.material, 5.0);
        assert_eq!(f.direction, Direction::NoDetectableDifference);
    }

    #[test]
    fn a_ratio_must_clear_the_noise_band() {
        // Above 1 but not clear of the band, and reaching past it.
        assert_eq!(
            Finding::ratio(stat(1.08, 1.03, 1.12), 0.05, 20, 20).direction,
            Direction::Inconclusive
        );
        assert_eq!(
            Finding::ratio(stat(1.01, 0.98, 1.04), 0.05, 20, 20).direction,
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

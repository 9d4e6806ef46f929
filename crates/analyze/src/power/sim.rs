//! The simulation itself: pilot groups as distributions, one simulated
//! experiment judged by the report's rule, power at an n, and the searches.

use crate::bootstrap::{SplitMix64, difference_stat};
use crate::estimate::Percentile;
use crate::finding::Direction;
use crate::rank::{self, mann_whitney};
use crate::samples::Samples;
use crate::{Settings, percentile_sorted};

use super::{
    Detectable, MIN_PILOT, Needed, PlanError, PlanSettings, Rule, rule_for, search_n, stream_seed,
};

/// The label [`crate::compare()`] seeds the median difference with, for
/// samples named `a` and `b` of TTFT.
pub(super) const MEDIAN_LABEL: &str = "compare/a/b/ttft/p50";

/// One pilot group: its name and its values, sorted once.
#[derive(Debug, Clone, PartialEq)]
pub struct Pilot {
    name: String,
    sorted: Vec<f64>,
}

impl Pilot {
    /// A pilot group named `name` (for messages) from its values.
    pub fn new(name: impl Into<String>, samples: &Samples) -> Pilot {
        Pilot {
            name: name.into(),
            sorted: samples.sorted().to_vec(),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Its values, ascending.
    pub fn sorted_values(&self) -> &[f64] {
        &self.sorted
    }

    /// True when it has no values.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Its `q`-th percentile (0 when empty).
    pub fn quantile(&self, q: Percentile) -> f64 {
        percentile_sorted(&self.sorted, q.get()).unwrap_or(0.0)
    }

    /// Enough values to plan `q` from: at least [`MIN_PILOT`] and the
    /// percentile's own minimum.
    pub(super) fn check(&self, q: Percentile) -> Result<(), PlanError> {
        let needed = MIN_PILOT.max(q.min_n());
        if self.len() < needed {
            return Err(PlanError::PilotTooSmall {
                group: self.name.clone(),
                n: self.len(),
                needed,
            });
        }
        Ok(())
    }

    /// One draw from the interpolated quantile function: the `100·u`-th
    /// percentile for a uniform `u` (the [`percentile_sorted`] formula,
    /// inlined for speed).
    fn draw(&self, rng: &mut SplitMix64) -> f64 {
        let s = &self.sorted;
        let h = (s.len() - 1) as f64 * rng.next_open01();
        let lo = h as usize;
        match s.get(lo + 1) {
            Some(&next) => s[lo] + (h - lo as f64) * (next - s[lo]),
            None => s[lo],
        }
    }

    /// `n` draws from stream `label`/`i`, plus `shift`, sorted.
    pub(super) fn sample(
        &self,
        settings: &Settings,
        label: &str,
        i: usize,
        n: usize,
        shift: f64,
    ) -> Vec<f64> {
        let mut rng = SplitMix64::new(stream_seed(settings, label, i));
        let mut v: Vec<f64> = (0..n).map(|_| self.draw(&mut rng) + shift).collect();
        v.sort_unstable_by(f64::total_cmp);
        v
    }
}

/// A simulation of `a` (shifted to sit on `b` at the quantile, plus the
/// difference) against the baseline `b`.
pub(super) struct Sim<'p> {
    a: &'p Pilot,
    b: &'p Pilot,
    q: Percentile,
    settings: Settings,
    plan: PlanSettings,
    /// `b`'s quantile minus `a`'s: the shift that makes them equal there.
    align: f64,
}

impl<'p> Sim<'p> {
    pub(super) fn new(
        a: &'p Pilot,
        b: &'p Pilot,
        q: Percentile,
        settings: &Settings,
        plan: &PlanSettings,
    ) -> Sim<'p> {
        Sim {
            a,
            b,
            q,
            settings: *settings,
            plan: *plan,
            align: b.quantile(q) - a.quantile(q),
        }
    }

    /// Does the report's rule call simulated experiment `i` an increase?
    pub(super) fn detects(&self, i: usize, a: &Samples, b: &Samples) -> bool {
        // Each experiment's bootstrap has its own seed, as each real
        // comparison would.
        let s = self
            .settings
            .with_seed(stream_seed(&self.settings, "boot", i));
        match rule_for(self.q) {
            Rule::MedianComparison => {
                // compare()'s verdict is a change only when all of these
                // hold; checking them first skips the bootstrap when any fails.
                if rank::smallest_p(a.len(), b.len()) >= s.alpha() {
                    return false;
                }
                let (Some(ma), Some(mb)) =
                    (a.percentile(Percentile::P50), b.percentile(Percentile::P50))
                else {
                    return false;
                };
                if mb == 0.0 || ((ma - mb) / mb.abs()).abs() <= s.noise_threshold() {
                    return false;
                }
                if mann_whitney(a, b).is_none_or(|m| m.p_value >= s.alpha()) {
                    return false;
                }
                // The rest of compare()'s rule: the interval of the median
                // difference, with compare()'s own seed label (tests check
                // this agrees with compare() itself).
                let d = difference_stat(a, b, Percentile::P50, &s, MEDIAN_LABEL);
                Direction::of(&d, 0.0, 0.0, 0.0) == Direction::Increase
            }
            Rule::QuantileInterval => {
                let d = difference_stat(a, b, self.q, &s, "plan/quantile");
                Direction::of(&d, 0.0, 0.0, 0.0) == Direction::Increase
            }
        }
    }

    /// Estimated power at `n_a`, `n_b` values for a difference `d`.
    pub(super) fn power_at(&self, n_a: usize, n_b: usize, d: f64) -> f64 {
        let sims = self.plan.simulations();
        let hits = (0..sims)
            .filter(|&i| {
                let a = Samples::from_finite(self.a.sample(
                    &self.settings,
                    "a",
                    i,
                    n_a,
                    self.align + d,
                ));
                let b = Samples::from_finite(self.b.sample(&self.settings, "b", i, n_b, 0.0));
                self.detects(i, &a, &b)
            })
            .count();
        hits as f64 / sims as f64
    }

    /// The n per group detecting `d` with the target power.
    pub(super) fn needed(&self, least: usize, d: f64) -> Needed {
        search_n(least, self.plan.max_n(), self.plan.power(), |n| {
            self.power_at(n, n, d)
        })
    }

    /// The smallest difference detected with the target power at `n_a`,
    /// `n_b`: the simulated samples are drawn and sorted once, then only
    /// shifted.
    pub(super) fn detectable(&self, n_a: usize, n_b: usize) -> Detectable {
        let median = rule_for(self.q) == Rule::MedianComparison;
        if n_a.min(n_b) < self.q.min_n()
            || (median && rank::smallest_p(n_a, n_b) >= self.settings.alpha())
        {
            return Detectable::TooFewSamples;
        }
        let sims = self.plan.simulations();
        let drawn: Vec<(Vec<f64>, Samples)> = (0..sims)
            .map(|i| {
                (
                    self.a.sample(&self.settings, "a", i, n_a, self.align),
                    Samples::from_finite(self.b.sample(&self.settings, "b", i, n_b, 0.0)),
                )
            })
            .collect();
        let power = |d: f64| {
            let hits = drawn
                .iter()
                .enumerate()
                .filter(|(i, (a0, b))| {
                    let a = Samples::from_finite(a0.iter().map(|x| x + d).collect());
                    self.detects(*i, &a, b)
                })
                .count();
            hits as f64 / sims as f64
        };
        let base_q = self.b.quantile(self.q).abs();
        let spread = {
            let s = &self.b.sorted;
            s[s.len() - 1] - s[0]
        };
        let scale = if base_q > 0.0 {
            base_q
        } else {
            spread.max(1.0)
        };
        let mut lo = 0.0;
        let mut hi = if median {
            // Below the noise threshold nothing is ever called.
            (self.settings.noise_threshold() * self.b.quantile(Percentile::P50).abs() * 1.01)
                .max(0.01 * scale)
        } else {
            0.01 * scale
        };
        let cap = 1000.0 * scale;
        let target = self.plan.power();
        while power(hi) < target {
            if hi >= cap {
                return Detectable::Beyond { difference: hi };
            }
            lo = hi;
            hi = (hi * 2.0).min(cap);
        }
        while hi - lo > 0.01 * hi {
            let mid = 0.5 * (lo + hi);
            if power(mid) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Detectable::Found {
            difference: hi,
            relative: (base_q > 0.0).then(|| hi / base_q),
        }
    }
}

//! Sample-size planning by simulation: how many requests per group a
//! comparison needs to detect a difference of a given size, which difference
//! the current counts can detect, and (in [`width`]) how many requests make
//! each reported percentile appear with an interval narrower than a target.
//!
//! # Method
//!
//! Latency distributions are skewed and heavy-tailed, so power comes from
//! simulation, not from a normal formula (the approach of e.g. Efron &
//! Tibshirani 1993, *An Introduction to the Bootstrap*, §25, and Collings &
//! Hamilton 1988, "Estimating the power of the two-sample Wilcoxon test for
//! location shift", Biometrics 44:847–860, who bootstrap the pilot samples).
//!
//! **The true distributions.** Each pilot group stands for its population
//! through its interpolated quantile function: a draw is the pilot's
//! `100·u`-th percentile (the crate's one percentile definition) for a
//! uniform `u`. That is the plain bootstrap smoothed between neighbouring
//! order statistics, so simulated samples have no artificial ties; like the
//! bootstrap it never draws beyond the pilot's minimum or maximum.
//!
//! **The difference to detect.** The compared group `a` keeps its own shape
//! and is shifted so that its chosen quantile lies exactly `d` above the
//! baseline's (`d` absolute, or a fraction of the baseline's quantile). With
//! one pilot group, both sides are that group and `a` is it shifted by `d`.
//!
//! **The decision rule simulated is the report's.** For the median,
//! [`crate::compare()`] itself judges each simulated experiment: a change is
//! detected only when its verdict is [`crate::Direction::Increase`] (rank test
//! p < α, the bootstrap interval of the median difference above 0, the
//! median moved by more than the noise threshold, enough samples for the
//! rank test). Its cheap necessary conditions (sample sizes, the noise
//! threshold, the rank test) are checked first, so the bootstrap runs only
//! when it can still decide. For another quantile (p95), the report states
//! the bootstrap interval of the difference and words a direction only when
//! that interval excludes 0 ([`crate::Direction::of`] with no band): detected when
//! it lies above 0. Both use the report's [`Settings`]: confidence level,
//! 2,000 bootstrap replicates, α and noise threshold.
//!
//! **Power** at `n` per group is the share of [`PlanSettings::simulations`]
//! (400 by default: a standard error of 0.02 at a power of 0.8) simulated
//! experiments in which the rule detects the change. Experiment `i` draws
//! each side from its own seeded stream, so a larger `n` extends the same
//! draws (common random numbers): the estimated power curve is smooth in `n`
//! and exactly monotone in `d` (shifting `a` shifts every bootstrap
//! replicate, the rank sum and the median by the same amount).
//!
//! **Searches.** The `n` needed: doubling from the smallest `n` the rule can
//! ever detect with, then bisection to within 2 % (at least 1 request) of
//! the answer, reporting the upper end; capped at [`PlanSettings::max_n`].
//! The detectable difference at the current counts: doubling then
//! bisection over `d` (to 1 %), reusing the sorted simulated samples, since
//! only the shift changes.
//!
//! Every random draw is seeded from [`Settings::seed`], never the clock: the
//! same pilot and settings always give the same plan.

pub mod doc;
mod sim;
pub mod support;
pub mod width;

use serde::Serialize;

use crate::bootstrap::derive_seed;
use crate::estimate::Percentile;
use crate::frame::{Frame, Metric};
use crate::rank;
use crate::samples::{Samples, gather};
use crate::{AnalyzeError, Settings};

pub use doc::{ClaimRow, Claims, PlanDoc, PowerRow, WidthRow};
pub use sim::Pilot;
pub use support::{Support, support};
pub use width::{WidthPlan, plan_width};

/// What can make a plan impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A pilot group has too few values to stand for its distribution.
    #[error("{group}: {n} values of the metric, at least {needed} are needed for a pilot")]
    PilotTooSmall {
        /// The group's name.
        group: String,
        /// Values it has.
        n: usize,
        /// Values needed.
        needed: usize,
    },
    /// A setting out of range.
    #[error(transparent)]
    Setting(#[from] AnalyzeError),
    /// The difference to detect is not a positive finite number.
    #[error("the difference to detect must be a positive number, not {value}")]
    BadDifference {
        /// The value given.
        value: f64,
    },
}

/// The fewest values a pilot group must have: below this the pilot says too
/// little about the shape of its distribution to plan from.
pub const MIN_PILOT: usize = 10;

/// How plans are searched: the power target, simulations per power
/// estimate and the largest n considered.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlanSettings {
    power: f64,
    simulations: usize,
    max_n: usize,
}

impl Default for PlanSettings {
    fn default() -> Self {
        PlanSettings {
            power: 0.8,
            simulations: 400,
            max_n: 100_000,
        }
    }
}

impl PlanSettings {
    /// With another power target, in (0, 1).
    pub fn with_power(mut self, power: f64) -> Result<PlanSettings, AnalyzeError> {
        if !(power > 0.0 && power < 1.0) {
            return Err(AnalyzeError::InvalidSetting {
                name: "power",
                value: power,
                reason: "must lie in (0, 1)",
            });
        }
        self.power = power;
        Ok(self)
    }

    /// With another number of simulated experiments per estimate (≥ 50).
    pub fn with_simulations(mut self, s: usize) -> Result<PlanSettings, AnalyzeError> {
        if s < 50 {
            return Err(AnalyzeError::InvalidSetting {
                name: "simulations",
                value: s as f64,
                reason: "must be at least 50",
            });
        }
        self.simulations = s;
        Ok(self)
    }

    /// With another cap on the n searched (≥ 20).
    pub fn with_max_n(mut self, max_n: usize) -> Result<PlanSettings, AnalyzeError> {
        if max_n < 20 {
            return Err(AnalyzeError::InvalidSetting {
                name: "max_n",
                value: max_n as f64,
                reason: "must be at least 20",
            });
        }
        self.max_n = max_n;
        Ok(self)
    }

    /// The power (or probability) target.
    pub fn power(&self) -> f64 {
        self.power
    }

    /// Simulated experiments per estimate.
    pub fn simulations(&self) -> usize {
        self.simulations
    }

    /// Largest n per group searched.
    pub fn max_n(&self) -> usize {
        self.max_n
    }
}

/// The difference to detect.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Effect {
    /// In the metric's unit (ms, tokens/s).
    Absolute(f64),
    /// A fraction of the baseline's quantile (0.1 = 10 %).
    Relative(f64),
}

/// Which rule judges a simulated experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The comparison's verdict on the median (rank test, interval, noise threshold).
    MedianComparison,
    /// The bootstrap interval of the quantile's difference excludes 0.
    QuantileInterval,
}

/// How many per group, or why no number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Needed {
    /// `n` per group reaches the target; `power` is its estimate there.
    Reached {
        /// Values per group.
        n: usize,
        /// Estimated power (or probability) at `n`.
        power: f64,
    },
    /// Even `max_n` per group falls short.
    Beyond {
        /// The cap searched.
        max_n: usize,
        /// Estimated power at the cap.
        power: f64,
    },
    /// The report never calls a median change this small: it is within the
    /// noise threshold.
    BelowNoise {
        /// The relative median change asked for.
        relative: f64,
        /// The noise threshold.
        threshold: f64,
    },
}

/// The smallest difference the current counts detect with the target power.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Detectable {
    /// This difference (absolute; and relative to the baseline's quantile).
    Found {
        /// In the metric's unit.
        difference: f64,
        /// As a fraction of the baseline's quantile; `None` when it is 0.
        relative: Option<f64>,
    },
    /// At these counts the rule can detect nothing (the rank test cannot
    /// reach α, or a percentile is withheld).
    TooFewSamples,
    /// Not even a difference of this size.
    Beyond {
        /// The largest difference tried.
        difference: f64,
    },
}

/// The answer to "how many requests to detect `effect`": see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerPlan {
    /// The quantile compared.
    pub quantile: Percentile,
    /// The decision rule simulated.
    pub rule: Rule,
    /// The difference asked for, as given.
    pub effect: Effect,
    /// The same in the metric's unit.
    pub difference: f64,
    /// The baseline's quantile in the pilot.
    pub baseline_quantile: f64,
    /// Pilot values of the compared group (the baseline's own when one group).
    pub n_a: usize,
    /// Pilot values of the baseline.
    pub n_b: usize,
    /// Estimated power to detect `difference` at the current counts.
    pub power_now: f64,
    /// What the current counts detect with the target power.
    pub detectable_now: Detectable,
    /// Values per group needed.
    pub needed: Needed,
    /// The power target.
    pub target_power: f64,
    /// Simulated experiments per power estimate.
    pub simulations: usize,
    /// Bootstrap replicates inside each simulated decision.
    pub replicates: usize,
    /// Confidence level of the intervals.
    pub level: f64,
}

/// The rule used for quantile `q`.
pub fn rule_for(q: Percentile) -> Rule {
    if q == Percentile::P50 {
        Rule::MedianComparison
    } else {
        Rule::QuantileInterval
    }
}

/// The least n per group with which `rule` can detect anything at all.
fn least_n(q: Percentile, settings: &Settings) -> usize {
    let mut n = q.min_n().max(2);
    if rule_for(q) == Rule::MedianComparison {
        while rank::smallest_p(n, n) >= settings.alpha() {
            n += 1;
        }
    }
    n
}

/// A power question, checked: pilots, quantile and the difference in the
/// metric's unit. [`plan_power`] asks it everything at once; each answer is
/// also available alone.
pub struct Question<'p> {
    sim: sim::Sim<'p>,
    baseline: &'p Pilot,
    compared: &'p Pilot,
    q: Percentile,
    effect: Effect,
    difference: f64,
    settings: Settings,
    plan: PlanSettings,
}

impl<'p> Question<'p> {
    /// Detect `effect` on quantile `q`: `baseline` is the reference group,
    /// `compared` the other one, or `None` to plan a comparison of two
    /// groups shaped like `baseline`.
    pub fn new(
        baseline: &'p Pilot,
        compared: Option<&'p Pilot>,
        q: Percentile,
        effect: Effect,
        settings: &Settings,
        plan: &PlanSettings,
    ) -> Result<Question<'p>, PlanError> {
        let b = baseline;
        let a = compared.unwrap_or(baseline);
        for p in [a, b] {
            p.check(q)?;
        }
        let difference = match effect {
            Effect::Absolute(d) => d,
            Effect::Relative(r) => r * b.quantile(q).abs(),
        };
        if !(difference.is_finite() && difference > 0.0) {
            return Err(PlanError::BadDifference { value: difference });
        }
        Ok(Question {
            sim: sim::Sim::new(a, b, q, settings, plan),
            baseline: b,
            compared: a,
            q,
            effect,
            difference,
            settings: *settings,
            plan: *plan,
        })
    }

    /// The difference to detect, in the metric's unit.
    pub fn difference(&self) -> f64 {
        self.difference
    }

    /// Estimated power with `n_a` compared and `n_b` baseline values.
    pub fn power_at(&self, n_a: usize, n_b: usize) -> f64 {
        self.sim.power_at(n_a, n_b, self.difference)
    }

    /// Values per group needed for the target power.
    pub fn needed(&self) -> Needed {
        below_noise(self.baseline, self.q, self.difference, &self.settings).unwrap_or_else(|| {
            self.sim
                .needed(least_n(self.q, &self.settings), self.difference)
        })
    }

    /// The smallest difference detected with the target power at `n_a`, `n_b`.
    pub fn detectable_at(&self, n_a: usize, n_b: usize) -> Detectable {
        self.sim.detectable(n_a, n_b)
    }

    /// Every answer at the pilot's own counts.
    pub fn plan(&self) -> PowerPlan {
        let (n_a, n_b) = (self.compared.len(), self.baseline.len());
        PowerPlan {
            quantile: self.q,
            rule: rule_for(self.q),
            effect: self.effect,
            difference: self.difference,
            baseline_quantile: self.baseline.quantile(self.q),
            n_a,
            n_b,
            power_now: self.power_at(n_a, n_b),
            detectable_now: self.detectable_at(n_a, n_b),
            needed: self.needed(),
            target_power: self.plan.power(),
            simulations: self.plan.simulations(),
            replicates: self.settings.replicates(),
            level: self.settings.level(),
        }
    }
}

/// How many values per group detect `effect` on quantile `q` with the target
/// power, what the current counts detect, and the power they have now (see
/// [`Question::new`] for the arguments).
pub fn plan_power(
    baseline: &Pilot,
    compared: Option<&Pilot>,
    q: Percentile,
    effect: Effect,
    settings: &Settings,
    plan: &PlanSettings,
) -> Result<PowerPlan, PlanError> {
    Ok(Question::new(baseline, compared, q, effect, settings, plan)?.plan())
}

/// The smallest difference on quantile `q` that `n_a` compared and `n_b`
/// baseline values detect with the target power, for groups shaped like the
/// pilots (`compared` `None`: like `baseline`).
pub fn detectable_at(
    baseline: &Pilot,
    compared: Option<&Pilot>,
    q: Percentile,
    n_a: usize,
    n_b: usize,
    settings: &Settings,
    plan: &PlanSettings,
) -> Result<Detectable, PlanError> {
    let a = compared.unwrap_or(baseline);
    for p in [a, baseline] {
        p.check(q)?;
    }
    Ok(sim::Sim::new(a, baseline, q, settings, plan).detectable(n_a, n_b))
}

/// For the median rule, a change within the noise threshold is never
/// called, whatever n: say so rather than search.
fn below_noise(b: &Pilot, q: Percentile, d: f64, settings: &Settings) -> Option<Needed> {
    if rule_for(q) != Rule::MedianComparison {
        return None;
    }
    let m = b.quantile(Percentile::P50).abs();
    let relative = if m > 0.0 { d / m } else { f64::INFINITY };
    (relative <= settings.noise_threshold()).then_some(Needed::BelowNoise {
        relative,
        threshold: settings.noise_threshold(),
    })
}

/// The smallest `n` in `[lo, max_n]` whose `power(n)` reaches `target`:
/// doubling, then bisection to within 2 % (at least 1).
fn search_n(lo: usize, max_n: usize, target: f64, mut power: impl FnMut(usize) -> f64) -> Needed {
    let lo = lo.min(max_n);
    let first = power(lo);
    if first >= target {
        return Needed::Reached {
            n: lo,
            power: first,
        };
    }
    let (mut below, mut above) = (lo, None);
    let mut n = lo;
    while above.is_none() {
        if n >= max_n {
            return Needed::Beyond {
                max_n,
                power: power(max_n),
            };
        }
        n = (n * 2).min(max_n);
        let p = power(n);
        if p >= target {
            above = Some((n, p));
        } else {
            below = n;
        }
    }
    let (mut hi, mut hi_power) = above.unwrap_or((max_n, 0.0));
    while hi - below > (hi / 50).max(1) {
        let mid = below + (hi - below) / 2;
        let p = power(mid);
        if p >= target {
            (hi, hi_power) = (mid, p);
        } else {
            below = mid;
        }
    }
    Needed::Reached {
        n: hi,
        power: hi_power,
    }
}

/// Counted requests, timed values and mean request duration of a group:
/// what turns an n into requests and time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pace {
    /// Requests counted (warm-ups excluded), failed ones included.
    pub requests: usize,
    /// Of which gave a value of the metric.
    pub values: usize,
    /// Mean request duration (e2e, failures included), ms; `None` when no
    /// request has one.
    pub mean_request_ms: Option<f64>,
}

impl Pace {
    /// Requests to send for `more` further values, at the pilot's share of
    /// requests that gave one.
    pub fn requests_for(&self, more: usize) -> usize {
        if more == 0 {
            return 0;
        }
        if self.values == 0 {
            return more;
        }
        let share = self.values as f64 / self.requests.max(self.values) as f64;
        (more as f64 / share).ceil() as usize
    }

    /// Time to send `requests` one at a time at the mean duration, ms.
    pub fn time_ms(&self, requests: usize) -> Option<f64> {
        self.mean_request_ms.map(|m| m * requests as f64)
    }
}

/// What is left to send to reach `n` values on every side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ToGo {
    /// Values per side still missing, summed over the sides.
    pub values: usize,
    /// Requests to send for them, at each side's share of requests that
    /// gave a value.
    pub requests: usize,
    /// Time to send them one at a time at each side's mean request
    /// duration, ms; `None` when a side has no duration to go by.
    pub time_ms: Option<f64>,
}

/// Requests and time still to send so that each side reaches `n` values:
/// `sides` pairs the values a side has now with the pace it gets them at
/// (a side still to be measured has 0 values, and borrows a pilot's pace).
pub fn to_go(n: usize, sides: &[(usize, Pace)]) -> ToGo {
    let mut out = ToGo {
        values: 0,
        requests: 0,
        time_ms: Some(0.0),
    };
    for (have, pace) in sides {
        let more = n.saturating_sub(*have);
        let requests = pace.requests_for(more);
        out.values += more;
        out.requests += requests;
        out.time_ms = match (out.time_ms, pace.time_ms(requests)) {
            (Some(t), Some(u)) => Some(t + u),
            _ if requests == 0 => out.time_ms,
            _ => None,
        };
    }
    out
}

/// The pilot values of `metric` in frame rows `idx` (counted and
/// successful only, as every statistic) and the group's [`Pace`].
pub fn pilot_of_rows(frame: &Frame, idx: &[u32], metric: Metric) -> (Samples, Pace) {
    let (samples, counts) = gather(frame, idx, metric);
    let (mut sum, mut k) = (0.0, 0usize);
    for &i in idx {
        let o = frame.obs(i);
        if o.counted() && !o.e2e.is_nan() {
            sum += o.e2e;
            k += 1;
        }
    }
    let pace = Pace {
        requests: counts.requests,
        values: samples.len(),
        mean_request_ms: (k > 0).then(|| sum / k as f64),
    };
    (samples, pace)
}

/// A seed for simulated experiment `i` of stream `label`.
fn stream_seed(settings: &Settings, label: &str, i: usize) -> u64 {
    derive_seed(settings.seed(), &format!("plan/{label}/{i}"))
}

#[cfg(test)]
mod tests;

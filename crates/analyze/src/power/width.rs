//! How many values make each percentile a report shows appear (not
//! withheld, [`Percentile::min_n`]) with an interval narrower than a target
//! share of its value.
//!
//! The report shows p50, p90, p95 and p99 ([`crate::MetricSummary`]), each
//! with the exact bootstrap interval of [`crate::bootstrap`] at the report's
//! confidence level. For a candidate n, [`PlanSettings::simulations`]
//! samples of n values are drawn from the pilot's interpolated quantile
//! function (as in the [module docs](super)); the probability is the share
//! whose interval is at most `target_width × point` wide (upper − lower).
//! The n needed is the least n at or above the percentile's minimum whose
//! probability reaches the plan's target (0.8 by default), found by the
//! same doubling and bisection as the power search. The interval itself
//! costs no resampling (exact, O(√n) after a sort), so each estimate is
//! one sort per simulated sample.
//!
//! A pilot smaller than a percentile's minimum (fewer than 100 values for
//! p99) has seen little of that tail: the plan still answers, and says so
//! ([`WidthPlan::pilot_shows`]).

use serde::Serialize;

use crate::Settings;
use crate::bootstrap::PercentileDist;
use crate::estimate::Percentile;
use crate::samples::Samples;

use super::{Needed, Pilot, PlanError, PlanSettings, search_n};

/// The percentiles a report shows for a metric.
pub const SHOWN: [Percentile; 4] = [
    Percentile::P50,
    Percentile::P90,
    Percentile::P95,
    Percentile::P99,
];

/// For one percentile: how many values make it shown with a narrow enough interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WidthPlan {
    /// The percentile.
    pub percentile: Percentile,
    /// Values in the pilot.
    pub n_now: usize,
    /// The report withholds it below this n.
    pub shown_from: usize,
    /// Whether the pilot itself has enough values to show it.
    pub pilot_shows: bool,
    /// Its interval's width now, as a share of its value (`None` when
    /// withheld or the value is 0).
    pub width_now: Option<f64>,
    /// The width asked for, as a share of the value.
    pub target_width: f64,
    /// Values needed.
    pub needed: Needed,
}

/// For each percentile a report shows ([`SHOWN`]), the values needed so it
/// is shown with an interval at most `target_width` (a share of its value,
/// 0.1 = 10 %) wide, with the plan's target probability.
pub fn plan_width(
    pilot: &Pilot,
    target_width: f64,
    settings: &Settings,
    plan: &PlanSettings,
) -> Result<Vec<WidthPlan>, PlanError> {
    if !(target_width.is_finite() && target_width > 0.0) {
        return Err(PlanError::Setting(crate::AnalyzeError::InvalidSetting {
            name: "width",
            value: target_width,
            reason: "must be a positive share of the value",
        }));
    }
    pilot.check(Percentile::P50)?;
    let now = Samples::from_finite(pilot.sorted_values().to_vec());
    Ok(SHOWN
        .iter()
        .map(|&p| {
            let width_now = PercentileDist::new(&now, p)
                .ok()
                .and_then(|d| relative_width(&d, settings.level()));
            let needed = search_n(p.min_n(), plan.max_n(), plan.power(), |n| {
                narrow_share(pilot, p, n, target_width, settings, plan)
            });
            WidthPlan {
                percentile: p,
                n_now: pilot.len(),
                shown_from: p.min_n(),
                pilot_shows: pilot.len() >= p.min_n(),
                width_now,
                target_width,
                needed,
            }
        })
        .collect())
}

/// (upper − lower) / |point|; `None` at a zero point.
fn relative_width(d: &PercentileDist<'_>, level: f64) -> Option<f64> {
    let e = d.estimate(level);
    (e.point != 0.0).then(|| (e.ci.upper - e.ci.lower) / e.point.abs())
}

/// Share of simulated samples of `n` whose interval of `p` is at most
/// `target` wide.
fn narrow_share(
    pilot: &Pilot,
    p: Percentile,
    n: usize,
    target: f64,
    settings: &Settings,
    plan: &PlanSettings,
) -> f64 {
    let sims = plan.simulations();
    let label = format!("width/{}", p.get());
    let hits = (0..sims)
        .filter(|&i| {
            let s = Samples::from_finite(pilot.sample(settings, &label, i, n, 0.0));
            PercentileDist::new(&s, p)
                .ok()
                .and_then(|d| relative_width(&d, settings.level()))
                .is_some_and(|w| w <= target)
        })
        .count();
    hits as f64 / sims as f64
}

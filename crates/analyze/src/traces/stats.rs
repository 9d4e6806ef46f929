//! Figures over the joined samples: the split per path, the wall's cause
//! per concurrency level, and paths contrasted part by part. Medians with
//! exact bootstrap CIs, differences and ratios with seeded bootstrap CIs
//! ([`crate::bootstrap`]), each change a [`Finding`].
//!
//! A part's median is taken over every traced request of the path (0 for
//! a request without that part), so medians of parts are comparable with
//! the median server time; like the Server-Timing split, it is a sum of
//! medians, not the median of sums: a breakdown, not an identity.

use std::collections::BTreeMap;

use firsttoken_record::session::{Provenance, SampleRow};
use firsttoken_record::vocab::PhaseKind;
use serde::Serialize;

use super::classify::Category;
use super::join::Breakdown;
use super::{Coverage, TraceScope};
use crate::Settings;
use crate::bootstrap::{difference_stat, ratio_stat};
use crate::diagnose::{Overhead, PathScope};
use crate::estimate::{Percentile, Stat};
use crate::finding::{Direction, Finding};
use crate::samples::Samples;

/// One group of spans on one path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartStat {
    /// The group's name (after renaming).
    pub group: String,
    /// Its category (the first of the spans merged into it).
    pub category: Category,
    /// Traced requests with at least one span of it.
    pub requests: usize,
    /// Median time it alone covers before the first token, ms, over every
    /// traced request of the path.
    pub median: Stat,
    /// Median number of its spans per request that has it.
    pub median_calls: f64,
    /// Requests with two or more of its spans, none overlapping another.
    pub sequential: usize,
    /// Its total time ÷ the total server time before the first token.
    pub share_of_server: Option<f64>,
    /// Its median ÷ the path's app overhead median, when the overhead is
    /// an increase (the interval lies above 0); never for the model
    /// provider, whose call the direct requests measure as well.
    pub share_of_overhead: Option<f64>,
    /// The upstream's stream after its client span ended (at the response
    /// headers) until the first token: the provider's own time to first
    /// token, not its spans ([`super::gaps`]).
    pub stream: bool,
}

/// The server time of one path's traced requests, split into parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpanSplit {
    /// Provenance, setup and path.
    #[serde(flatten)]
    pub scope: TraceScope,
    /// Phases whose requests it uses: `warm` when the path has traced warm
    /// requests (as the overhead does), else every app phase.
    pub phases: Vec<PhaseKind>,
    /// Measured requests of those phases (failures included).
    pub requests: usize,
    /// Successful traced requests behind the figures.
    pub traced: usize,
    /// Median server time (root span), ms.
    pub server: Stat,
    /// Median server time before the client's first token, ms.
    pub before_first_token: Stat,
    /// Median of server receive − client `sent`, ms (offset-corrected;
    /// includes the one-way network time and any accept queue).
    pub receive_after_sent: Stat,
    /// Median queue wait (server receive → handler start), ms, over the
    /// requests with a handler span; `None` when none has one.
    pub queue_wait: Option<Stat>,
    /// Requests with a handler span.
    pub queue_wait_n: usize,
    /// Groups, largest median first.
    pub parts: Vec<PartStat>,
    /// Median time no group covers, ms.
    pub rest: Stat,
    /// Where that time lies: its gaps, placed by the spans they border.
    pub uncovered: super::gaps::Uncovered,
    /// Median first token of the provider's own call, ms after it began,
    /// when spans record it.
    pub provider_first_token: Option<Stat>,
    /// The path's app overhead (app − direct TTFT), when the analysis has it.
    pub overhead_median: Option<Finding>,
}

fn median(v: Vec<f64>, settings: &Settings) -> Stat {
    Samples::new(v)
        .unwrap_or_default()
        .stat(Percentile::P50, settings)
}

fn samples(v: Vec<f64>) -> Samples {
    Samples::new(v).unwrap_or_default()
}

/// Successful breakdowns per scope, with their rows.
fn by_scope<'a>(
    rows: &'a [SampleRow],
    breakdowns: &'a [(TraceScope, Breakdown)],
) -> BTreeMap<&'a TraceScope, Vec<(&'a SampleRow, &'a Breakdown)>> {
    let mut m: BTreeMap<&TraceScope, Vec<(&SampleRow, &Breakdown)>> = BTreeMap::new();
    for (s, b) in breakdowns {
        let r = &rows[b.row];
        if r.sample.is_ok() {
            m.entry(s).or_default().push((r, b));
        }
    }
    m
}

/// The breakdowns a split uses: warm ones when there are any.
fn split_rows<'a>(all: &[(&'a SampleRow, &'a Breakdown)]) -> (Vec<PhaseKind>, Vec<&'a Breakdown>) {
    let warm: Vec<&Breakdown> = all
        .iter()
        .filter(|(r, _)| r.phase == PhaseKind::Warm)
        .map(|(_, b)| *b)
        .collect();
    if !warm.is_empty() {
        return (vec![PhaseKind::Warm], warm);
    }
    let mut phases: Vec<PhaseKind> = all.iter().map(|(r, _)| r.phase).collect();
    phases.sort_by_key(|p| p.index());
    phases.dedup();
    (phases, all.iter().map(|(_, b)| *b).collect())
}

/// A part's per-request values (0 where absent).
fn part_values(bs: &[&Breakdown], group: &str) -> Vec<f64> {
    bs.iter()
        .map(|b| b.parts.get(group).map_or(0.0, |p| p.ms))
        .collect()
}

/// Every group in `bs`, with its category.
fn groups_of(bs: &[&Breakdown]) -> BTreeMap<String, Category> {
    let mut g: BTreeMap<String, Category> = BTreeMap::new();
    for b in bs {
        for (name, p) in &b.parts {
            let c = g.entry(name.clone()).or_insert(p.category);
            *c = (*c).min(p.category);
        }
    }
    g
}

/// One split per scope with traced requests.
pub(super) fn splits(
    rows: &[SampleRow],
    breakdowns: &[(TraceScope, Breakdown)],
    coverage: &BTreeMap<(TraceScope, PhaseKind), Coverage>,
    settings: &Settings,
) -> Vec<SpanSplit> {
    let mut out = Vec::new();
    for (scope, all) in by_scope(rows, breakdowns) {
        let (phases, bs) = split_rows(&all);
        let requests = phases
            .iter()
            .filter_map(|p| coverage.get(&(scope.clone(), *p)))
            .map(|c| c.requests)
            .sum();
        let total_before: f64 = bs.iter().map(|b| b.before_first_token_ms).sum();
        let mut parts: Vec<PartStat> = groups_of(&bs)
            .into_iter()
            .map(|(group, category)| {
                let with: Vec<&&Breakdown> =
                    bs.iter().filter(|b| b.parts.contains_key(&group)).collect();
                let values = part_values(&bs, &group);
                let sum: f64 = values.iter().sum();
                let calls: Vec<f64> = with.iter().map(|b| b.parts[&group].calls as f64).collect();
                PartStat {
                    requests: with.len(),
                    median: median(values, settings),
                    median_calls: samples(calls).percentile(Percentile::P50).unwrap_or(0.0),
                    sequential: with
                        .iter()
                        .filter(|b| b.parts[&group].calls >= 2 && !b.parts[&group].overlapping)
                        .count(),
                    share_of_server: (total_before > 0.0).then(|| sum / total_before),
                    share_of_overhead: None,
                    stream: with.iter().any(|b| b.parts[&group].stream),
                    group,
                    category,
                }
            })
            .collect();
        parts.sort_by(|a, b| {
            let (x, y) = (
                a.median.point().unwrap_or(0.0),
                b.median.point().unwrap_or(0.0),
            );
            y.total_cmp(&x).then_with(|| a.group.cmp(&b.group))
        });
        let waits: Vec<f64> = bs.iter().filter_map(|b| b.queue_wait_ms).collect();
        let provider: Vec<f64> = bs
            .iter()
            .filter_map(|b| b.provider_first_token_ms)
            .collect();
        out.push(SpanSplit {
            scope: scope.clone(),
            phases,
            requests,
            traced: bs.len(),
            server: median(bs.iter().map(|b| b.server_ms).collect(), settings),
            before_first_token: median(
                bs.iter().map(|b| b.before_first_token_ms).collect(),
                settings,
            ),
            receive_after_sent: median(
                bs.iter().filter_map(|b| b.receive_after_sent_ms).collect(),
                settings,
            ),
            queue_wait_n: waits.len(),
            queue_wait: (!waits.is_empty()).then(|| median(waits, settings)),
            parts,
            rest: median(bs.iter().map(|b| b.rest_ms).collect(), settings),
            uncovered: super::gaps::uncovered(&bs, settings),
            provider_first_token: (!provider.is_empty()).then(|| median(provider, settings)),
            overhead_median: None,
        });
    }
    out
}

/// Link each split to the overhead of the same provenance, setup and path.
pub(super) fn link_overhead(splits: &mut [SpanSplit], overheads: &[Overhead]) {
    for s in splits {
        let o = overheads.iter().find(|o| {
            o.provenance == s.scope.provenance
                && o.scope == s.scope.scope
                && o.paths
                    == PathScope::One {
                        path: s.scope.path.clone(),
                    }
        });
        let Some(o) = o else { continue };
        s.overhead_median = Some(o.overhead_median);
        if o.overhead_median.direction != Direction::Increase {
            continue;
        }
        let Some(total) = o.overhead_median.estimate.point() else {
            continue;
        };
        // The model call is what the direct requests measure too: its time
        // is not overhead (as Server-Timing's model phases are not).
        // An upstream's stream is the provider's own time to first token.
        for p in s
            .parts
            .iter_mut()
            .filter(|p| p.category != Category::ModelProvider && !p.stream)
        {
            p.share_of_overhead = p.median.point().map(|m| m / total);
        }
    }
}

/// What the spans say about the concurrency wall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WallReason {
    /// The wait before the handler grows with concurrency, the handler's
    /// own time does not (its interval's upper end stays inside the noise
    /// band: no material rise, a fall allowed), or can have grown by at
    /// most [`WAIT_DOMINANCE`] of the wait's smallest rise: requests waited
    /// for the worker.
    WaitedForWorker,
    /// The handler's own time grows: a shared resource slows down.
    SharedResource,
    /// Both grow.
    Both,
    /// Neither rose: the wait shows no detectable difference (or fell)
    /// and the handler's own time did not rise materially (as for
    /// [`WallReason::WaitedForWorker`], its interval's upper end inside
    /// the noise band): no wall for the spans to explain.
    NoRise,
    /// Neither interval supports a change, the handler's interval leaves a
    /// material rise open, or too few traced requests.
    CannotTell,
}

/// One concurrency level, from its traced requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitLevel {
    /// Requests in flight together.
    pub concurrency: u32,
    /// Successful traced requests.
    pub traced: usize,
    /// Median wait, ms: server receive − client `sent` (offset-corrected)
    /// plus the queue wait before the handler.
    pub wait: Stat,
    /// Median handler time, ms.
    pub handler: Stat,
    /// Wait median − the baseline's (n: this level, baseline).
    pub wait_change: Finding,
    /// Handler median ÷ the baseline's, against 1 with the noise threshold.
    pub handler_ratio: Finding,
}

/// The concurrency wall of one path, explained by its spans.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WallCause {
    /// Provenance, setup and path.
    #[serde(flatten)]
    pub scope: TraceScope,
    /// `c=1` or `warm`: what each level is compared with.
    pub baseline: &'static str,
    /// Baseline wait median, ms.
    pub baseline_wait: Stat,
    /// Baseline handler median, ms.
    pub baseline_handler: Stat,
    /// Levels above the baseline, increasing.
    pub levels: Vec<WaitLevel>,
    /// The most the handler's median can have grown at the highest level,
    /// ms: (its ratio interval's upper end − 1) × the baseline handler
    /// median, at least 0; `None` without both.
    pub handler_growth_bound_ms: Option<f64>,
    /// Judged at the highest level.
    pub reason: WallReason,
}

/// The material band of a change in wait: the noise threshold times the
/// baseline *handler* median. A wait matters against the time a request
/// takes, not against the baseline wait, which is near zero on an idle
/// server (a band of a few microseconds would make every interval
/// "inconclusive").
fn material(baseline: &Samples, settings: &Settings) -> f64 {
    baseline
        .percentile(Percentile::P50)
        .map_or(0.0, |m| m.abs() * settings.noise_threshold())
}

/// The most the handler's median can have grown at `top`, ms, from its
/// ratio interval's upper end and the baseline handler median `base`.
fn growth_bound(top: &WaitLevel, base: f64) -> Option<f64> {
    let upper = top.handler_ratio.estimate.ci()?.upper;
    Some(((upper - 1.0) * base).max(0.0))
}

/// What the spans say about the wall at its highest level `top`, the
/// baseline handler median being `base` ms.
fn reason_of(top: &WaitLevel, base: f64) -> WallReason {
    judge_wall(&top.wait_change, &top.handler_ratio, base)
}

/// The wall's reason from a wait's change and a handler's ratio at the
/// highest level, the baseline handler median being `base` ms: the rule
/// of [`WallReason`], shared with the engine's split ([`crate::engine`],
/// where the engine's prefill is the handler and the rest the wait).
pub(crate) fn judge_wall(wait_change: &Finding, handler_ratio: &Finding, base: f64) -> WallReason {
    let waits = wait_change.direction == Direction::Increase;
    // The wait dominates when the handler's largest possible growth is at
    // most a tenth of the wait's smallest possible rise.
    let bound = handler_ratio
        .estimate
        .ci()
        .map(|ci| ((ci.upper - 1.0) * base).max(0.0));
    let dominated = match (bound, wait_change.estimate.ci()) {
        (Some(b), Some(ci)) => b <= WAIT_DOMINANCE * ci.lower,
        _ => false,
    };
    match handler_ratio.direction {
        Direction::Increase if waits => WallReason::Both,
        Direction::Increase => WallReason::SharedResource,
        _ if waits && (rules_out_growth(handler_ratio) || dominated) => WallReason::WaitedForWorker,
        _ if matches!(
            wait_change.direction,
            Direction::NoDetectableDifference | Direction::TooSmallToMatter | Direction::Decrease
        ) && rules_out_growth(handler_ratio) =>
        {
            WallReason::NoRise
        }
        _ => WallReason::CannotTell,
    }
}

/// The wall is "requests waited for the worker" also when the handler's
/// interval leaves a rise open, if the largest rise it allows (in ms) is
/// at most this fraction of the smallest rise the wait's interval allows:
/// the wait then explains at least 10/11 of the combined rise.
pub const WAIT_DOMINANCE: f64 = 0.1;

/// True when a ratio's interval excludes a material rise: its upper end
/// is inside the noise band (`1 + material`). The handler "stays flat"
/// when it cannot have grown by more than noise, whether or not the
/// interval also leaves room for a fall.
fn rules_out_growth(ratio: &Finding) -> bool {
    ratio
        .estimate
        .ci()
        .is_some_and(|ci| ci.upper <= ratio.null + ratio.material)
}

/// A request's wait: receive gap plus queue wait; `None` when neither is known.
fn wait_of(b: &Breakdown) -> Option<f64> {
    match (b.receive_after_sent_ms, b.queue_wait_ms) {
        (None, None) => None,
        (r, q) => Some(r.unwrap_or(0.0) + q.unwrap_or(0.0)),
    }
}

/// One explanation per scope with traced concurrency requests.
pub(super) fn walls(
    rows: &[SampleRow],
    breakdowns: &[(TraceScope, Breakdown)],
    settings: &Settings,
) -> Vec<WallCause> {
    let mut out = Vec::new();
    for (scope, all) in by_scope(rows, breakdowns) {
        let mut levels: BTreeMap<u32, Vec<&Breakdown>> = BTreeMap::new();
        for (r, b) in &all {
            if r.phase == PhaseKind::Concurrency
                && let Some(k) = r.concurrency
            {
                levels.entry(k).or_default().push(b);
            }
        }
        let (baseline, base): (&'static str, Vec<&Breakdown>) = match levels.remove(&1) {
            Some(b) => ("c=1", b),
            None => (
                "warm",
                all.iter()
                    .filter(|(r, _)| r.phase == PhaseKind::Warm)
                    .map(|(_, b)| *b)
                    .collect(),
            ),
        };
        if levels.is_empty() || base.is_empty() {
            continue;
        }
        let split = |bs: &[&Breakdown]| {
            (
                samples(bs.iter().filter_map(|b| wait_of(b)).collect()),
                samples(bs.iter().map(|b| b.handler_ms).collect()),
            )
        };
        let (bw, bh) = split(&base);
        let label = format!(
            "traces/wall/{}/{}/{}",
            scope.provenance.as_str(),
            scope.scope,
            scope.path.as_deref().unwrap_or("-")
        );
        let levels: Vec<WaitLevel> = levels
            .iter()
            .map(|(&k, bs)| {
                let (w, h) = split(bs);
                WaitLevel {
                    concurrency: k,
                    traced: bs.len(),
                    wait: w.stat(Percentile::P50, settings),
                    handler: h.stat(Percentile::P50, settings),
                    wait_change: Finding::difference(
                        difference_stat(
                            &w,
                            &bw,
                            Percentile::P50,
                            settings,
                            &format!("{label}/c{k}/wait"),
                        ),
                        material(&bh, settings),
                        w.len(),
                        bw.len(),
                    ),
                    handler_ratio: Finding::ratio(
                        ratio_stat(
                            &h,
                            &bh,
                            Percentile::P50,
                            settings,
                            &format!("{label}/c{k}/handler"),
                        ),
                        settings.noise_threshold(),
                        h.len(),
                        bh.len(),
                    ),
                }
            })
            .collect();
        let base = bh.percentile(Percentile::P50);
        let bound = levels.last().and_then(|top| growth_bound(top, base?));
        let reason = match (levels.last(), base) {
            (Some(top), Some(base)) => reason_of(top, base),
            _ => WallReason::CannotTell,
        };
        out.push(WallCause {
            scope: scope.clone(),
            baseline,
            baseline_wait: bw.stat(Percentile::P50, settings),
            baseline_handler: bh.stat(Percentile::P50, settings),
            levels,
            handler_growth_bound_ms: bound,
            reason,
        });
    }
    out
}

/// One group in two paths.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupContrast {
    /// The group.
    pub group: String,
    /// Median in `a` − median in `b`, ms (n: traced requests of each).
    pub difference: Finding,
}

/// Two paths of one setup, part by part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathContrast {
    /// Provenance of both.
    pub provenance: Provenance,
    /// The setup, when several.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// The first path (name order).
    pub a: Option<String>,
    /// The second.
    pub b: Option<String>,
    /// Server time before the first token: median a − median b.
    pub before_first_token: Finding,
    /// Each group, the largest |difference| first.
    pub groups: Vec<GroupContrast>,
}

/// Every pair of paths of one provenance and setup that both have splits.
pub(super) fn contrasts(
    rows: &[SampleRow],
    breakdowns: &[(TraceScope, Breakdown)],
    splits: &[SpanSplit],
    settings: &Settings,
) -> Vec<PathContrast> {
    let scoped = by_scope(rows, breakdowns);
    let used: BTreeMap<&TraceScope, Vec<&Breakdown>> = scoped
        .iter()
        .map(|(s, all)| (*s, split_rows(all).1))
        .collect();
    let mut out = Vec::new();
    for (i, sa) in splits.iter().enumerate() {
        for sb in &splits[i + 1..] {
            if (sa.scope.provenance, &sa.scope.scope) != (sb.scope.provenance, &sb.scope.scope) {
                continue;
            }
            let (Some(a), Some(b)) = (used.get(&sa.scope), used.get(&sb.scope)) else {
                continue;
            };
            let label = format!(
                "traces/paths/{}/{}/{}/{}",
                sa.scope.provenance.as_str(),
                sa.scope.scope,
                sa.scope.path.as_deref().unwrap_or("-"),
                sb.scope.path.as_deref().unwrap_or("-")
            );
            let diff = |x: Vec<f64>, y: Vec<f64>, what: &str| {
                let (x, y) = (samples(x), samples(y));
                Finding::difference(
                    difference_stat(
                        &x,
                        &y,
                        Percentile::P50,
                        settings,
                        &format!("{label}/{what}"),
                    ),
                    material(&y, settings),
                    x.len(),
                    y.len(),
                )
            };
            let mut names = groups_of(a);
            names.extend(groups_of(b));
            let mut groups: Vec<GroupContrast> = names
                .into_keys()
                .map(|g| GroupContrast {
                    difference: diff(part_values(a, &g), part_values(b, &g), &g),
                    group: g,
                })
                .collect();
            groups.sort_by(|x, y| {
                let m = |g: &GroupContrast| g.difference.estimate.point().map_or(0.0, f64::abs);
                m(y).total_cmp(&m(x)).then_with(|| x.group.cmp(&y.group))
            });
            out.push(PathContrast {
                provenance: sa.scope.provenance,
                scope: sa.scope.scope.clone(),
                a: sa.scope.path.clone(),
                b: sb.scope.path.clone(),
                before_first_token: diff(
                    a.iter().map(|b| b.before_first_token_ms).collect(),
                    b.iter().map(|b| b.before_first_token_ms).collect(),
                    "before_first_token",
                ),
                groups,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{Ci, Estimate};

    fn ratio(lower: f64, upper: f64) -> Finding {
        let ci = Ci {
            level: 0.95,
            lower,
            upper,
        };
        let stat = Stat::Ok(Estimate {
            point: (lower + upper) / 2.0,
            standard_error: 0.01,
            ci,
        });
        Finding::ratio(stat, 0.05, 45, 45)
    }

    #[test]
    fn a_handler_that_may_have_fallen_but_not_risen_stays_flat() {
        // The demo's "before": 0.96× [0.93×, 1.01×] rules out a rise.
        assert!(rules_out_growth(&ratio(0.93, 1.01)));
        assert!(rules_out_growth(&ratio(0.98, 1.04)));
        // A rise past the 5 % band is left open: cannot tell.
        assert!(!rules_out_growth(&ratio(0.97, 1.09)));
        assert!(!rules_out_growth(&ratio(1.2, 1.5)));
    }

    #[test]
    fn a_wait_rise_that_dwarfs_the_handlers_possible_growth_is_waiting() {
        let base = Stat::Ok(Estimate {
            point: 360.0,
            standard_error: 5.0,
            ci: Ci {
                level: 0.95,
                lower: 350.0,
                upper: 370.0,
            },
        });
        let level = |wait_lower: f64, handler: Finding| WaitLevel {
            concurrency: 5,
            traced: 15,
            wait: base,
            handler: base,
            wait_change: Finding::difference(
                Stat::Ok(Estimate {
                    point: wait_lower + 400.0,
                    standard_error: 100.0,
                    ci: Ci {
                        level: 0.95,
                        lower: wait_lower,
                        upper: wait_lower + 800.0,
                    },
                }),
                10.0,
                15,
                15,
            ),
            handler_ratio: handler,
        };
        // Seed 1 of the demo: the handler 1.00× [0.94×, 1.08×] (up to
        // +29 ms of 360), the wait up by at least 480 ms: waiting.
        let dominated = level(480.0, ratio(0.94, 1.08));
        assert_eq!(reason_of(&dominated, 360.0), WallReason::WaitedForWorker);
        // The same handler against a wait up by at least 100 ms: +29 ms
        // is more than a tenth of it.
        let close = level(100.0, ratio(0.94, 1.08));
        assert_eq!(reason_of(&close, 360.0), WallReason::CannotTell);
        // A scaling server: the wait inside its band, the handler flat.
        let flat = WaitLevel {
            wait_change: Finding::difference(
                Stat::Ok(Estimate {
                    point: -0.5,
                    standard_error: 0.3,
                    ci: Ci {
                        level: 0.95,
                        lower: -1.2,
                        upper: 0.3,
                    },
                }),
                18.0,
                30,
                30,
            ),
            ..level(0.0, ratio(0.96, 1.04))
        };
        assert_eq!(reason_of(&flat, 360.0), WallReason::NoRise);
        // …but with the handler's rise left open, the spans cannot tell.
        let open = WaitLevel {
            handler_ratio: ratio(0.96, 1.09),
            ..flat
        };
        assert_eq!(reason_of(&open, 360.0), WallReason::CannotTell);
    }
}

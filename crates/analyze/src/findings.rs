//! The findings a report opens with: the analysis's changes, ranked by how
//! much user wait time each explains, as data. The report words them.
//!
//! Candidates (each a [`Finding`] whose [`Direction`] comes from its
//! interval; entries for one app path, never the pooled summaries):
//!
//! | kind | stated estimate | wait explained (ms) |
//! |---|---|---|
//! | `comparison` (asked for, durations) | median a − b | \|median a − b\| |
//! | `overhead` | app − direct TTFT, median | \|point\| |
//! | `connection` | fresh − warm TTFT, median | \|point\| |
//! | `concurrency` | TTFT ÷ baseline at the highest level with an estimate | (ratio − 1) × baseline median |
//! | `cold_start` | each probe beyond the warm requests − warm median (values, no interval) | their median |
//! | `path_difference` | path − fastest path, median | \|point\| |
//! | `misrouting` | share sent astray × (astray route − intended route) | that product |
//! | `providers` | strategy − fastest strategy, median TTFT | \|point\| |
//! | `engine_queue` | TTFT − engine prefill at the level − at the baseline, median | \|point\| |
//! | `reconnections` | warm requests on new connections (a count, no interval) | none |
//!
//! The wait explained is the effect's point estimate in milliseconds of
//! TTFT for the requests it affects: the concurrency wall's extra wait at
//! the measured level (the baseline median taken as fixed); the router
//! funnel's per-request difference between the two routes times the share
//! of the path's requests that took the wrong one. Its interval is the
//! stated estimate's, transformed the same way.
//!
//! Only changes are candidates — an interval that reaches the null is never
//! ranked; a cold start only when it repeats (two or more probes beyond
//! the warm requests, more than half of them: [`crate::diagnose::ColdStart`]),
//! stated by its probes' values, never with an interval — except a misrouting whose routes show no detectable TTFT
//! difference: the routing itself is a count, not an interval, so it is
//! kept with no wait (`None`), ranked after every finding with one.
//! Order: wait explained, largest first; ties (and the unranked) by kind in
//! the table's order, then by group; at most [`MAX_FINDINGS`].

use serde::Serialize;

use crate::analysis::Analysis;
use crate::compare::Comparison;
use crate::diagnose::{PathScope, WallVerdict};
use crate::estimate::{Ci, Estimate, Stat};
use crate::finding::{Direction, Finding};
use crate::frame::Metric;

/// At most this many findings open a report.
pub const MAX_FINDINGS: usize = 8;

/// What a finding is about, with the figures its sentence needs beyond the
/// estimate. Serialized with a `kind` tag.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FindingKind {
    /// A comparison asked for (`compare`, the demo's before/after).
    Comparison {
        /// The compared side.
        a: String,
        /// The baseline.
        b: String,
        /// The metric compared (a duration).
        metric: Metric,
    },
    /// App TTFT − direct TTFT.
    Overhead,
    /// Fresh − warm TTFT.
    Connection,
    /// A new connection's own set-up (DNS + TCP + TLS), measured directly:
    /// stated when the fresh − warm TTFT difference is lost in the spread.
    ConnectionSetup,
    /// TTFT at `level` ÷ the baseline's.
    Concurrency {
        /// Requests in flight.
        level: u32,
        /// The wall's verdict.
        verdict: WallVerdict,
        /// Median TTFT of the baseline, ms.
        baseline_ms: f64,
    },
    /// The first request after an idle gap, repeated: stated by values
    /// (each probe is one request), with no interval.
    ColdStart {
        /// Probes judged.
        probes: usize,
        /// Of which beyond the warm requests.
        beyond: usize,
        /// What "beyond" means: the warm p99 or the warm maximum.
        threshold: crate::diagnose::ColdThreshold,
        /// Its value, ms.
        threshold_ms: f64,
        /// The warm median, ms (its point).
        warm_median_ms: f64,
        /// Each probe beyond: its excess over the warm median, ms, in
        /// probe order.
        excess_ms: Vec<f64>,
    },
    /// One path against the fastest.
    PathDifference {
        /// The slower (compared) path.
        path: String,
        /// The fastest path.
        fastest: String,
    },
    /// Requests of a path that reported another route.
    Misrouting {
        /// The path requests were sent to.
        path: String,
        /// The route they should have taken.
        expected: String,
        /// The route they took instead.
        route: String,
        /// Requests that took it.
        astray: usize,
        /// Requests that reported a route.
        reported: usize,
        /// The TTFT difference route − expected, as judged.
        route_difference: Finding,
    },
    /// From the server spans: the wait before the handler at `level`
    /// against the baseline (a difference, ms).
    QueueWait {
        /// Requests in flight.
        level: u32,
        /// What the spans say about the wall.
        reason: crate::traces::WallReason,
    },
    /// From the engine's own clock: the time outside its prefill at
    /// `level` against the baseline (a difference, ms).
    EngineQueue {
        /// Requests in flight.
        level: u32,
        /// What the engine's clock says about the wall.
        reason: crate::traces::WallReason,
    },
    /// Warm requests that had to open a new connection: a count, stated
    /// with no interval and ranked after every finding with a wait.
    Reconnections {
        /// Warm requests on a new connection.
        new_connections: usize,
        /// Successful counted warm requests.
        warm: usize,
        /// Of the new connections, those found closed after sending.
        stale_retries: usize,
    },
    /// One strategy against the fastest first token.
    Providers {
        /// The fastest strategy.
        fastest: String,
        /// The strategy compared.
        other: String,
    },
}

impl FindingKind {
    /// Order among ties (the table's order).
    fn order(&self) -> u8 {
        match self {
            FindingKind::Comparison { .. } => 0,
            FindingKind::Overhead => 1,
            FindingKind::Connection
            | FindingKind::ConnectionSetup
            | FindingKind::Reconnections { .. } => 2,
            FindingKind::Concurrency { .. }
            | FindingKind::QueueWait { .. }
            | FindingKind::EngineQueue { .. } => 3,
            FindingKind::ColdStart { .. } => 4,
            FindingKind::PathDifference { .. } => 5,
            FindingKind::Misrouting { .. } => 6,
            FindingKind::Providers { .. } => 7,
        }
    }

    /// The report section it belongs to (the HTML page's section id).
    pub fn section(&self) -> &'static str {
        match self {
            FindingKind::Comparison { .. } => "comparisons",
            FindingKind::Overhead => "overhead",
            FindingKind::Connection | FindingKind::ConnectionSetup => "connection",
            FindingKind::Concurrency { .. } => "concurrency",
            FindingKind::QueueWait { .. } => "spans",
            FindingKind::EngineQueue { .. } | FindingKind::Reconnections { .. } => "engine",
            FindingKind::ColdStart { .. } => "cold",
            FindingKind::PathDifference { .. } | FindingKind::Misrouting { .. } => "routes",
            FindingKind::Providers { .. } => "providers",
        }
    }

    /// The plot that shows it (the HTML page's `data-plot`).
    pub fn plot(&self) -> &'static str {
        match self {
            FindingKind::Concurrency { .. }
            | FindingKind::QueueWait { .. }
            | FindingKind::EngineQueue { .. } => "concurrency",
            FindingKind::Providers { .. } => "providers",
            FindingKind::Overhead | FindingKind::Connection | FindingKind::ConnectionSetup => {
                "waterfall"
            }
            FindingKind::ColdStart { .. } => "session-box",
            _ => "ttft-cdf",
        }
    }

    /// Whether the stated estimate is a ratio (else milliseconds).
    pub fn is_ratio(&self) -> bool {
        matches!(self, FindingKind::Concurrency { .. })
    }
}

/// One finding of the opening list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedFinding {
    /// 1 for the finding that explains the most wait.
    pub rank: usize,
    /// What it is about.
    #[serde(flatten)]
    pub kind: FindingKind,
    /// The groups it describes, short: the setup's values then the path
    /// (`before · chat`), or the two sides of a comparison.
    pub groups: Vec<String>,
    /// The stated estimate (ms, or a ratio for `concurrency`), its
    /// interval, n and direction; `None` for a cold start, stated by its
    /// probes' values ([`FindingKind::ColdStart`]).
    pub finding: Option<Finding>,
    /// User wait time it explains per affected request, ms; `None` when
    /// there is no interval that excludes zero to rank by.
    pub wait_ms: Option<f64>,
    /// The interval of [`RankedFinding::wait_ms`]; `None` for a wait that
    /// is a value (a cold start's median excess).
    pub wait_ci: Option<Ci>,
    /// The report section it points to.
    pub section: &'static str,
    /// The plot that shows it.
    pub plot: &'static str,
}

/// A short group label: a scope's values (`code_version=before` →
/// `before`) and the path, joined by ` · `.
pub fn short_label(scope: &str, path: Option<&str>) -> String {
    let mut parts: Vec<&str> = scope
        .split([',', '·'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').map_or(p, |(_, v)| v))
        .collect();
    parts.extend(path);
    parts.join(" · ")
}

/// The estimate `e` mapped by `f` (monotone increasing), standard error
/// scaled by `scale`.
fn mapped(e: &Estimate, scale: f64, f: impl Fn(f64) -> f64) -> Estimate {
    Estimate {
        point: f(e.point),
        standard_error: e.standard_error * scale.abs(),
        ci: Ci {
            level: e.ci.level,
            lower: f(e.ci.lower).min(f(e.ci.upper)),
            upper: f(e.ci.lower).max(f(e.ci.upper)),
        },
    }
}

/// |estimate| as a wait, for a difference in ms.
fn wait_of(f: &Finding) -> Option<Estimate> {
    let e = f.estimate.estimate()?;
    f.direction.is_change().then(|| {
        if e.point < 0.0 {
            mapped(e, 1.0, |x| -x)
        } else {
            *e
        }
    })
}

fn comparison_finding(c: &Comparison) -> Finding {
    Finding {
        estimate: c.median_difference,
        null: 0.0,
        material: c.material,
        n_a: c.n_a,
        n_b: c.n_b,
        direction: c.direction,
    }
}

fn one_path(p: &PathScope) -> Option<Option<&str>> {
    match p {
        PathScope::One { path } => Some(path.as_deref()),
        PathScope::Pooled { .. } => None,
    }
}

/// Every candidate, unranked.
fn candidates(a: &Analysis, comparisons: &[Comparison]) -> Vec<RankedFinding> {
    let mut out = Vec::new();
    let mut push = |kind: FindingKind, groups: Vec<String>, finding: Finding, wait| {
        let wait: Option<Estimate> = wait;
        out.push(RankedFinding {
            rank: 0,
            section: kind.section(),
            plot: kind.plot(),
            kind,
            groups,
            finding: Some(finding),
            wait_ms: wait.map(|w| w.point),
            wait_ci: wait.map(|w| w.ci),
        });
    };
    let mut cold_findings = Vec::new();
    // Durations only: a throughput difference explains no wait.
    for c in comparisons
        .iter()
        .filter(|c| c.metric != Metric::TokensPerS)
    {
        let f = comparison_finding(c);
        if f.direction.is_change() {
            let kind = FindingKind::Comparison {
                a: c.a.clone(),
                b: c.b.clone(),
                metric: c.metric,
            };
            push(kind, vec![c.a.clone(), c.b.clone()], f, wait_of(&f));
        }
    }
    for o in &a.overhead {
        if let Some(path) = one_path(&o.paths)
            && o.overhead_median.direction.is_change()
        {
            let f = o.overhead_median;
            push(
                FindingKind::Overhead,
                vec![short_label(&o.scope, path)],
                f,
                wait_of(&f),
            );
        }
    }
    for c in &a.connection {
        let Some(path) = one_path(&c.paths) else {
            continue;
        };
        if c.cost_median.direction.is_change() {
            let f = c.cost_median;
            push(
                FindingKind::Connection,
                vec![short_label(&c.scope, path)],
                f,
                wait_of(&f),
            );
        } else if c.setup.direction == Direction::Increase {
            let f = c.setup;
            push(
                FindingKind::ConnectionSetup,
                vec![short_label(&c.scope, path)],
                f,
                wait_of(&f),
            );
        }
    }
    for w in &a.concurrency {
        let Some(path) = one_path(&w.paths) else {
            continue;
        };
        let top = w
            .levels
            .iter()
            .rev()
            .find(|l| l.concurrency > 1 && l.ratio.estimate.estimate().is_some());
        let (Some(top), Some(base)) = (top, w.baseline_median.point()) else {
            continue;
        };
        if !top.ratio.direction.is_change() || w.verdict == WallVerdict::Insufficient {
            continue;
        }
        let wait = top
            .ratio
            .estimate
            .estimate()
            .map(|e| mapped(e, base, |r| (r - 1.0) * base))
            .map(|e| {
                if e.point < 0.0 {
                    mapped(&e, 1.0, |x| -x)
                } else {
                    e
                }
            });
        let kind = FindingKind::Concurrency {
            level: top.concurrency,
            verdict: w.verdict,
            baseline_ms: base,
        };
        push(kind, vec![short_label(&w.scope, path)], top.ratio, wait);
    }
    for w in a.traces.iter().flat_map(|t| &t.walls) {
        let top = w
            .levels
            .iter()
            .rev()
            .find(|l| l.wait_change.direction == Direction::Increase);
        if let Some(top) = top {
            let kind = FindingKind::QueueWait {
                level: top.concurrency,
                reason: w.reason,
            };
            let label = short_label(&w.scope.scope, w.scope.path.as_deref());
            push(
                kind,
                vec![label],
                top.wait_change,
                wait_of(&top.wait_change),
            );
        }
    }
    for c in &a.cold {
        let Some(path) = one_path(&c.paths) else {
            continue;
        };
        let (Some(threshold), Some(threshold_ms), Some(warm)) =
            (c.threshold, c.threshold_ms, c.warm_median.point())
        else {
            continue;
        };
        if !c.repeats {
            continue;
        }
        let excess_ms = c.excesses_beyond();
        let mut sorted = excess_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let kind = FindingKind::ColdStart {
            probes: c.judged,
            beyond: c.beyond,
            threshold,
            threshold_ms,
            warm_median_ms: warm,
            excess_ms,
        };
        cold_findings.push(RankedFinding {
            rank: 0,
            section: kind.section(),
            plot: kind.plot(),
            kind,
            groups: vec![short_label(&c.scope, path)],
            finding: None,
            wait_ms: crate::percentile_sorted(&sorted, 50.0),
            wait_ci: None,
        });
    }
    for r in &a.routes {
        for c in &r.comparisons {
            let f = comparison_finding(c);
            if f.direction.is_change() {
                let kind = FindingKind::PathDifference {
                    path: c.a.clone(),
                    fastest: c.b.clone(),
                };
                let groups = vec![
                    short_label(&r.scope, Some(&c.a)),
                    short_label(&r.scope, Some(&c.b)),
                ];
                push(kind, groups, f, wait_of(&f));
            }
        }
        for p in &r.paths {
            let fu = &p.funnel;
            for s in &fu.routes {
                if s.name == fu.expected || s.name == "unreported" || s.count == 0 {
                    continue;
                }
                let share = s.count as f64 / fu.reported.max(1) as f64;
                // route − expected, from the comparison of either against
                // the fastest path.
                let diff = r.comparisons.iter().find_map(|c| {
                    let f = comparison_finding(c);
                    if c.a == s.name && c.b == fu.expected {
                        Some(f)
                    } else if c.a == fu.expected && c.b == s.name {
                        let e = f.estimate.estimate().map(|e| mapped(e, 1.0, |x| -x));
                        Some(Finding {
                            estimate: e.map_or(f.estimate, Stat::Ok),
                            direction: match f.direction {
                                Direction::Increase => Direction::Decrease,
                                Direction::Decrease => Direction::Increase,
                                d => d,
                            },
                            n_a: f.n_b,
                            n_b: f.n_a,
                            ..f
                        })
                    } else {
                        None
                    }
                });
                let Some(diff) = diff else {
                    continue;
                };
                let scaled = match diff.estimate {
                    Stat::Ok(e) => Stat::Ok(mapped(&e, share, |x| x * share)),
                    small => small,
                };
                let finding = Finding {
                    estimate: scaled,
                    n_a: fu.reported,
                    n_b: diff.n_b,
                    ..diff
                };
                let kind = FindingKind::Misrouting {
                    path: p.path.clone(),
                    expected: fu.expected.clone(),
                    route: s.name.clone(),
                    astray: s.count,
                    reported: fu.reported,
                    route_difference: diff,
                };
                let wait = wait_of(&finding);
                push(
                    kind,
                    vec![short_label(&r.scope, Some(&p.path))],
                    finding,
                    wait,
                );
            }
        }
    }
    for p in &a.providers {
        if let Some(c) = &p.ttft_comparison {
            let f = comparison_finding(c);
            if f.direction.is_change() {
                let kind = FindingKind::Providers {
                    fastest: c.a.clone(),
                    other: c.b.clone(),
                };
                let groups = vec![
                    short_label(&p.scope, Some(&c.a)),
                    short_label(&p.scope, Some(&c.b)),
                ];
                push(kind, groups, f, wait_of(&f));
            }
        }
    }
    engine_candidates(a, &mut out);
    out.extend(cold_findings);
    out
}

/// The engine's wall (the time outside its prefill rising) and warm
/// requests on new connections.
fn engine_candidates(a: &Analysis, out: &mut Vec<RankedFinding>) {
    let found = |kind: FindingKind, label: String, finding: Option<Finding>| {
        let wait = finding.as_ref().and_then(wait_of);
        RankedFinding {
            rank: 0,
            section: kind.section(),
            plot: kind.plot(),
            kind,
            groups: vec![label],
            finding,
            wait_ms: wait.map(|w| w.point),
            wait_ci: wait.map(|w| w.ci),
        }
    };
    for w in &a.engine.walls {
        let top = w
            .levels
            .iter()
            .rev()
            .find(|l| l.rest_change.direction == Direction::Increase);
        if let Some(top) = top {
            let kind = FindingKind::EngineQueue {
                level: top.concurrency,
                reason: w.reason,
            };
            let label = short_label(&w.scope.scope, w.scope.path.as_deref());
            out.push(found(kind, label, Some(top.rest_change)));
        }
    }
    for r in &a.engine.reconnections {
        let kind = FindingKind::Reconnections {
            new_connections: r.new_connections,
            warm: r.warm,
            stale_retries: r.stale_retries,
        };
        let label = short_label(&r.scope.scope, r.scope.path.as_deref());
        out.push(found(kind, label, None));
    }
}

/// The findings a report opens with: every candidate ranked by the user
/// wait it explains (see the module doc), at most [`MAX_FINDINGS`].
pub fn rank_findings(a: &Analysis, comparisons: &[Comparison]) -> Vec<RankedFinding> {
    let mut all = candidates(a, comparisons);
    all.sort_by(|x, y| {
        let w = |f: &RankedFinding| f.wait_ms;
        match (w(x), w(y)) {
            (Some(p), Some(q)) => q.total_cmp(&p),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then(x.kind.order().cmp(&y.kind.order()))
        .then_with(|| x.groups.cmp(&y.groups))
    });
    all.truncate(MAX_FINDINGS);
    for (i, f) in all.iter_mut().enumerate() {
        f.rank = i + 1;
    }
    all
}

#[cfg(test)]
#[path = "findings_tests.rs"]
mod tests;

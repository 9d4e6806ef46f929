//! The concurrency wall: does the app slow down when k requests arrive
//! together?
//!
//! For each level k of the concurrency phase: the median TTFT and its ratio
//! to the median at c = 1 (bootstrap CI of the ratio, [`crate::bootstrap`]),
//! next to two references: the ideal 1.0 (k parallel slots) and the serial
//! model (k+1)/2 (one request at a time: the i-th of a burst waits for the
//! i−1 before it, so TTFTs are 1, 2, …, k service times, median (k+1)/2).
//! Without a c = 1 level the warm phase (sequential requests) is the baseline.
//!
//! Effective parallelism P: in the fluid model of P parallel slots a burst
//! of k waits (k−1)/(2P) service times at the median, so the ratio is
//! r(k) = 1 + (k−1)/(2P). P is fitted by least squares on r − 1 over the
//! levels k > 1: 1/(2P) = Σ(r−1)(k−1) / Σ(k−1)². P = 1 is the serial
//! server, P → ∞ an ideal one.
//!
//! Verdict: *scales* when the ratio at the highest level is not above
//! 1 + noise threshold (its CI reaches that low) or P ≥ that level;
//! *one at a time* when P < 1.5; *limited* between.

use firsttoken_record::session::Provenance;
use serde::Serialize;

use super::{PathScope, Scope, path_scopes, provenances_with, scoped_rows};
use crate::Settings;
use crate::bootstrap::ratio_stat;
use crate::estimate::{Percentile, Stat};
use crate::finding::Finding;
use crate::frame::{Frame, Metric, PhaseKind, partition};
use crate::samples::{MetricSummary, gather};

/// How the app copes with concurrent requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WallVerdict {
    /// TTFT grows like the serial model: one request at a time.
    OneAtATime,
    /// Some parallelism, less than the levels tried.
    Limited,
    /// TTFT stays flat across the levels tried.
    Scales,
    /// Not enough data (no baseline, or no level above 1).
    Insufficient,
}

/// One concurrency level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConcurrencyLevel {
    /// Requests in flight together.
    pub concurrency: u32,
    /// TTFT at this level.
    pub ttft: MetricSummary,
    /// Median TTFT ÷ baseline median, judged against 1 with the noise
    /// threshold (n: this level, baseline).
    pub ratio: Finding,
    /// (k+1)/2: the ratio of a one-at-a-time server.
    pub serial_model: f64,
    /// 1.0: the ratio of a server with k parallel slots.
    pub ideal: f64,
}

/// The concurrency wall for one provenance kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConcurrencyWall {
    /// Provenance of every row used.
    pub provenance: Provenance,
    /// The setup these numbers describe when a report covers several
    /// (e.g. `code_version=before`); empty when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// The app path it describes, or the labelled pooled summary.
    pub paths: PathScope,
    /// Where the baseline comes from: `c=1`, `warm`, or `none`.
    pub baseline: &'static str,
    /// Baseline median TTFT.
    pub baseline_median: Stat,
    /// Levels in increasing order.
    pub levels: Vec<ConcurrencyLevel>,
    /// Fitted effective parallelism; `None` when no slowdown was measured
    /// (unbounded) or there is too little data.
    pub effective_parallelism: Option<f64>,
    /// The verdict.
    pub verdict: WallVerdict,
}

/// The concurrency wall per provenance kind with concurrency rows and per
/// app path of those rows (then a pooled summary when there are several):
/// each path's levels against its own baseline.
pub fn concurrency_wall(frame: &Frame, settings: &Settings) -> Vec<ConcurrencyWall> {
    let mut out = Vec::new();
    for p in provenances_with(frame, &[PhaseKind::Concurrency]) {
        for scope in path_scopes(frame, p, &[PhaseKind::Concurrency]) {
            out.push(one(frame, p, &scope, settings));
        }
    }
    out
}

fn one(frame: &Frame, prov: Provenance, scope: &Scope, settings: &Settings) -> ConcurrencyWall {
    let rows = scoped_rows(frame, prov, &[PhaseKind::Concurrency], scope);
    let mut parts = partition(&rows, |i| u64::from(frame.obs(i).concurrency));
    parts.retain(|(k, _)| *k > 0);
    parts.sort_unstable_by_key(|(k, _)| *k);
    let by_level: Vec<(u32, &[u32])> = parts
        .iter()
        .map(|(k, r)| (*k as u32, r.as_slice()))
        .collect();
    let c1 = by_level.iter().find(|(k, _)| *k == 1).map(|(_, r)| *r);
    let (baseline, base) = match c1 {
        Some(r) => ("c=1", crate::samples::of_rows(frame, r, Metric::Ttft)),
        None => {
            let warm = scoped_rows(frame, prov, &[PhaseKind::Warm], scope);
            let s = crate::samples::of_rows(frame, &warm, Metric::Ttft);
            (if s.is_empty() { "none" } else { "warm" }, s)
        }
    };
    let baseline_median = base.stat(Percentile::P50, settings);
    let levels: Vec<ConcurrencyLevel> = by_level
        .iter()
        .map(|&(k, r)| {
            let (s, c) = gather(frame, r, Metric::Ttft);
            let label = format!("concurrency/{}/{}/c{k}", prov.as_str(), scope.key());
            ConcurrencyLevel {
                concurrency: k,
                ttft: MetricSummary::new(Metric::Ttft, &s, c, settings),
                ratio: Finding::ratio(
                    ratio_stat(&s, &base, Percentile::P50, settings, &label),
                    settings.noise_threshold(),
                    s.len(),
                    base.len(),
                ),
                serial_model: (f64::from(k) + 1.0) / 2.0,
                ideal: 1.0,
            }
        })
        .collect();

    let fit: Vec<(f64, f64)> = levels
        .iter()
        .filter(|l| l.concurrency > 1)
        .filter_map(|l| {
            l.ratio
                .estimate
                .point()
                .map(|r| (f64::from(l.concurrency), r))
        })
        .collect();
    let top = levels
        .iter()
        .rev()
        .find(|l| l.concurrency > 1 && l.ratio.estimate.estimate().is_some());
    let (num, den) = fit.iter().fold((0.0, 0.0), |(n, d), &(k, r)| {
        (n + (r - 1.0) * (k - 1.0), d + (k - 1.0) * (k - 1.0))
    });
    let effective_parallelism = (den > 0.0 && num > 0.0).then(|| den / (2.0 * num));
    let verdict = match top {
        None => WallVerdict::Insufficient,
        Some(top) => judge(top, effective_parallelism, settings),
    };
    ConcurrencyWall {
        provenance: prov,
        scope: String::new(),
        paths: scope.paths.clone(),
        baseline,
        baseline_median,
        levels,
        effective_parallelism,
        verdict,
    }
}

fn judge(top: &ConcurrencyLevel, p: Option<f64>, settings: &Settings) -> WallVerdict {
    // `top` has a ratio estimate (checked by the caller).
    let Some(e) = top.ratio.estimate.estimate() else {
        return WallVerdict::Insufficient;
    };
    let k = top.concurrency;
    let flat = e.ci.lower <= 1.0 + settings.noise_threshold();
    // An interval that holds both the ideal and the one-at-a-time model
    // cannot tell them apart, whatever the point estimate says.
    if flat && top.serial_model > 1.0 + settings.noise_threshold() && e.ci.upper >= top.serial_model
    {
        return WallVerdict::Insufficient;
    }
    match p {
        _ if flat || p.is_none_or(|p| p >= f64::from(k)) => WallVerdict::Scales,
        Some(p) if p < 1.5 => WallVerdict::OneAtATime,
        Some(_) => WallVerdict::Limited,
        None => WallVerdict::Insufficient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testutil::{frame, row, spread};
    use firsttoken_record::session::SampleRow;

    /// Bursts of k against a server with `slots` parallel slots and a
    /// service time of ~800 ms: the i-th request of a burst gets its first
    /// token after ⌊i/slots⌋ + 1 service times.
    fn server(slots: usize, levels: &[u32], per_level: usize) -> Vec<SampleRow> {
        server_on("chat", slots, 800.0, levels, per_level)
    }

    fn server_on(
        path: &str,
        slots: usize,
        service: f64,
        levels: &[u32],
        per_level: usize,
    ) -> Vec<SampleRow> {
        let mut rows = Vec::new();
        let jitter = spread(0.0, 40.0, 1000);
        let mut j = 0;
        for &k in levels {
            let mut sent = 0;
            while sent < per_level {
                for i in 0..k as usize {
                    let waves = (i / slots + 1) as f64;
                    let mut r = row(
                        "s",
                        "concurrency",
                        Some(path),
                        Some(service * waves + jitter[j % 1000] * service / 800.0),
                    );
                    r.concurrency = Some(k);
                    rows.push(r);
                    j += 1;
                    sent += 1;
                }
            }
        }
        rows
    }

    #[test]
    fn serial_server_hits_the_wall() {
        let rows = server(1, &[1, 3, 5], 60);
        let w = &concurrency_wall(&frame(&rows), &Settings::new(4))[0];
        assert_eq!(w.baseline, "c=1");
        assert_eq!(w.levels.len(), 3);
        let r5 = w.levels[2].ratio.estimate.point().unwrap();
        assert!((r5 - 3.0).abs() < 0.15, "{r5}");
        assert!((w.levels[1].ratio.estimate.point().unwrap() - 2.0).abs() < 0.15);
        let p = w.effective_parallelism.unwrap();
        assert!((p - 1.0).abs() < 0.1, "{p}");
        assert_eq!(w.verdict, WallVerdict::OneAtATime);
        assert_eq!(w.levels[2].ratio.direction, Direction::Increase);
    }

    #[test]
    fn two_paths_each_get_their_own_wall() {
        // chat: one slot, 800 ms; docs: eight slots, 100 ms. Pooled, the
        // c=1 baseline mixes both and the ratios describe neither.
        let mut rows = server_on("chat", 1, 800.0, &[1, 3, 5], 60);
        rows.extend(server_on("docs", 8, 100.0, &[1, 3, 5], 60));
        let walls = concurrency_wall(&frame(&rows), &Settings::new(4));
        assert_eq!(walls.len(), 3, "{walls:?}");
        let one = |p: &str| PathScope::One {
            path: Some(p.into()),
        };
        let (chat, docs, pooled) = (&walls[0], &walls[1], &walls[2]);
        assert_eq!((&chat.paths, &docs.paths), (&one("chat"), &one("docs")));
        assert_eq!(
            pooled.paths,
            PathScope::Pooled {
                paths: vec!["chat".into(), "docs".into()]
            }
        );
        assert_eq!(chat.verdict, WallVerdict::OneAtATime);
        assert_eq!(docs.verdict, WallVerdict::Scales, "{docs:?}");
        let r = |w: &ConcurrencyWall, i: usize| w.levels[i].ratio.estimate.point().unwrap();
        assert!((r(chat, 1) - 2.0).abs() < 0.15 && (r(chat, 2) - 3.0).abs() < 0.15);
        assert!((r(docs, 2) - 1.0).abs() < 0.1);
        assert_eq!(chat.levels[0].ttft.n, 60, "no docs row in chat's wall");
        assert!((chat.baseline_median.point().unwrap() - 800.0).abs() < 40.0);
        assert!((docs.baseline_median.point().unwrap() - 100.0).abs() < 10.0);
        assert_eq!(pooled.levels[0].ttft.n, 120);
    }

    #[test]
    fn parallel_server_scales() {
        let rows = server(8, &[1, 3, 5], 60);
        let w = &concurrency_wall(&frame(&rows), &Settings::new(4))[0];
        assert!((w.levels[2].ratio.estimate.point().unwrap() - 1.0).abs() < 0.1);
        assert_eq!(w.verdict, WallVerdict::Scales, "{w:?}");
        assert_eq!(
            w.levels[2].ratio.direction,
            Direction::NoDetectableDifference
        );
    }

    #[test]
    fn two_slots_are_limited_and_warm_is_the_fallback_baseline() {
        let mut rows = server(2, &[4, 8], 80);
        for t in spread(800.0, 40.0, 60) {
            rows.push(row("s", "warm", Some("chat"), Some(t)));
        }
        let w = &concurrency_wall(&frame(&rows), &Settings::new(4))[0];
        assert_eq!(w.baseline, "warm");
        assert_eq!(w.verdict, WallVerdict::Limited, "{w:?}");
        let p = w.effective_parallelism.unwrap();
        assert!((1.5..3.0).contains(&p), "{p}");
        // Nothing to compare against.
        let lone = server(1, &[3], 30);

        let w = &concurrency_wall(&frame(&lone), &Settings::new(4))[0];
        assert_eq!((w.baseline, w.verdict), ("none", WallVerdict::Insufficient));
    }

    #[test]
    fn an_interval_holding_both_models_is_not_a_verdict() {
        let mut rows = Vec::new();
        for (k, values) in [
            (1u32, [100.0, 150.0, 300.0, 500.0, 900.0]),
            (5, [150.0, 400.0, 1400.0, 2000.0, 3000.0]),
        ] {
            for v in values {
                let mut r = row("s", "concurrency", Some("chat"), Some(v));
                r.concurrency = Some(k);
                rows.push(r);
            }
        }
        let w = &concurrency_wall(&frame(&rows), &Settings::new(4))[0];
        assert_eq!(w.verdict, WallVerdict::Insufficient, "{w:?}");
        // Five values a level: the ratio's interval reaches 1 and far past
        // the noise band, so nothing is ruled out.
        assert_eq!(w.levels[1].ratio.direction, Direction::Inconclusive);
    }
}

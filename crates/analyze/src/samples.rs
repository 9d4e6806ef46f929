//! Samples of a frame's rows: [`of_rows`] and [`with_counts`] gather one
//! metric of the counted, successful rows into [`Samples`], and
//! [`MetricSummary`] gives counts, error rate, mean and p50/p90/p95/p99
//! with bootstrap CIs.

use serde::Serialize;

use crate::Settings;
use crate::estimate::{Percentile, Stat};
use crate::frame::{Frame, Metric};
pub use firsttoken_stats::samples::Samples;

/// The `metric` of the frame rows `idx` that are counted and succeeded
/// (warm-ups and failures never enter timing statistics).
pub fn of_rows(frame: &Frame, idx: &[u32], metric: Metric) -> Samples {
    gather(frame, idx, metric).0
}

/// [`of_rows`], with the counts of the rows: requests counted (not
/// warm-ups) and failed.
pub fn with_counts(frame: &Frame, idx: &[u32], metric: Metric) -> (Samples, Counts) {
    gather(frame, idx, metric)
}

/// The `metric` values of the timed rows among `idx`, and the counts of
/// all of them, in one pass over the rows.
pub(crate) fn gather(frame: &Frame, idx: &[u32], metric: Metric) -> (Samples, Counts) {
    let mut v = Vec::with_capacity(idx.len());
    let mut c = Counts::default();
    for &i in idx {
        let o = frame.obs(i);
        if o.warmup {
            continue;
        }
        c.requests += 1;
        if o.error.is_some() {
            c.failed += 1;
            continue;
        }
        let x = metric.of(o);
        if !x.is_nan() {
            v.push(x);
        }
    }
    (Samples::from_finite(v), c)
}

/// Requests counted for an error rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Requests, warm-ups excluded.
    pub requests: usize,
    /// Of which failed.
    pub failed: usize,
}

impl Counts {
    pub(crate) fn of_rows(frame: &Frame, idx: &[u32]) -> Counts {
        let mut c = Counts::default();
        for &i in idx {
            let o = frame.obs(i);
            if o.counted() {
                c.requests += 1;
                c.failed += usize::from(o.error.is_some());
            }
        }
        c
    }

    /// failed / requests; `None` without requests.
    pub fn error_rate(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.failed as f64 / self.requests as f64)
    }
}

/// One metric over a set of requests: counts, error rate, mean and the
/// standard percentiles with bootstrap CIs (each withheld when n is too small).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSummary {
    /// What is summarised.
    pub metric: Metric,
    /// Unit of the values (`ms`, `tokens/s`).
    pub unit: &'static str,
    /// Requests (warm-ups excluded).
    pub requests: usize,
    /// Failed requests.
    pub failed: usize,
    /// failed / requests.
    pub error_rate: Option<f64>,
    /// Successful requests that had the metric.
    pub n: usize,
    /// Mean of those.
    pub mean: Option<f64>,
    /// Median.
    pub p50: Stat,
    /// 90th percentile.
    pub p90: Stat,
    /// 95th percentile.
    pub p95: Stat,
    /// 99th percentile.
    pub p99: Stat,
}

impl MetricSummary {
    /// Summarise `samples` of `metric` drawn from requests with `counts`.
    pub fn new(
        metric: Metric,
        samples: &Samples,
        counts: Counts,
        settings: &Settings,
    ) -> MetricSummary {
        MetricSummary {
            metric,
            unit: metric.unit(),
            requests: counts.requests,
            failed: counts.failed,
            error_rate: counts.error_rate(),
            n: samples.len(),
            mean: samples.mean(),
            p50: samples.stat(Percentile::P50, settings),
            p90: samples.stat(Percentile::P90, settings),
            p95: samples.stat(Percentile::P95, settings),
            p99: samples.stat(Percentile::P99, settings),
        }
    }

    pub(crate) fn of_rows(
        frame: &Frame,
        idx: &[u32],
        metric: Metric,
        settings: &Settings,
    ) -> MetricSummary {
        let (s, c) = gather(frame, idx, metric);
        MetricSummary::new(metric, &s, c, settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_withholds_percentiles_below_their_minimum_n() {
        let s = Samples::new((1..=50).map(f64::from).collect()).unwrap();
        let m = MetricSummary::new(
            Metric::Ttft,
            &s,
            Counts {
                requests: 52,
                failed: 2,
            },
            &Settings::new(1),
        );
        assert!(m.p50.estimate().is_some() && m.p95.estimate().is_some());
        assert_eq!(m.p99, Stat::TooSmall { n: 50, needed: 100 });
        assert_eq!(m.n, 50);
        assert!((m.error_rate.unwrap() - 2.0 / 52.0).abs() < 1e-12);
        // numpy.percentile(range(1, 51), 95) = 47.55
        assert!((m.p95.point().unwrap() - 47.55).abs() < 1e-9);
    }
}

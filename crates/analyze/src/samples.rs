//! [`Samples`]: validated values of one metric, sorted once; and
//! [`MetricSummary`]: counts, error rate, mean and p50/p90/p95/p99 with
//! bootstrap CIs.

use serde::Serialize;

use crate::bootstrap::percentile_stat;
use crate::estimate::{Percentile, Stat};
use crate::frame::{Frame, Metric};
use crate::{AnalyzeError, Settings, percentile_sorted};

/// Finite values, sorted ascending. The constructor rejects NaN and
/// infinities, so every statistic downstream can assume clean data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    sorted: Vec<f64>,
}

impl Samples {
    /// Validate and sort `values`.
    pub fn new(mut values: Vec<f64>) -> Result<Samples, AnalyzeError> {
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(AnalyzeError::NonFinite { index, value });
        }
        sort_floats(&mut values);
        Ok(Samples { sorted: values })
    }

    /// From values the caller has already checked to be finite (the frame
    /// validates every timing; NaN there means "did not happen" and is
    /// filtered out before this).
    pub(crate) fn from_finite(mut values: Vec<f64>) -> Samples {
        debug_assert!(values.iter().all(|v| v.is_finite()));
        sort_floats(&mut values);
        Samples { sorted: values }
    }

    /// The `metric` of the frame rows `idx` that are counted and succeeded
    /// (warm-ups and failures never enter timing statistics).
    pub fn of_rows(frame: &Frame, idx: &[u32], metric: Metric) -> Samples {
        gather(frame, idx, metric).0
    }

    /// [`Samples::of_rows`], with the counts of the rows: requests counted
    /// (not warm-ups) and failed.
    pub fn with_counts(frame: &Frame, idx: &[u32], metric: Metric) -> (Samples, Counts) {
        gather(frame, idx, metric)
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The values, ascending.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// Arithmetic mean; `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (!self.sorted.is_empty())
            .then(|| self.sorted.iter().sum::<f64>() / self.sorted.len() as f64)
    }

    /// The `p`-th percentile (linear interpolation); `None` when empty.
    pub fn percentile(&self, p: Percentile) -> Option<f64> {
        percentile_sorted(&self.sorted, p.get())
    }

    /// The `p`-th percentile with its bootstrap CI, or "n too small".
    pub fn stat(&self, p: Percentile, settings: &Settings) -> Stat {
        percentile_stat(self, p, settings)
    }
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

/// Below this length a comparison sort beats the radix sort's fixed cost.
const RADIX_MIN: usize = 1 << 15;

/// Sort ascending in the IEEE total order: pattern-defeating quicksort for
/// small inputs, an LSD radix sort on 16-bit digits for large ones (timings
/// from a million rows are sorted many times over; radix is 3–5× faster).
pub(crate) fn sort_floats(v: &mut [f64]) {
    let n = v.len();
    if n < RADIX_MIN {
        v.sort_unstable_by(f64::total_cmp);
        return;
    }
    // Map to u64 keys that order like f64::total_cmp.
    let key = |x: f64| {
        let b = x.to_bits();
        if b >> 63 == 1 { !b } else { b | (1 << 63) }
    };
    let mut keys: Vec<u64> = v.iter().map(|&x| key(x)).collect();
    let mut tmp = vec![0u64; n];
    let mut hist = vec![0u32; 4 * 65_536];
    for &k in &keys {
        for d in 0..4 {
            hist[d * 65_536 + ((k >> (16 * d)) & 0xffff) as usize] += 1;
        }
    }
    for d in 0..4 {
        let h = &mut hist[d * 65_536..(d + 1) * 65_536];
        // A digit every key shares does not reorder anything.
        if h.iter().any(|&c| c as usize == n) {
            continue;
        }
        let mut sum = 0u32;
        for c in h.iter_mut() {
            let t = *c;
            *c = sum;
            sum += t;
        }
        for &k in &keys {
            let b = ((k >> (16 * d)) & 0xffff) as usize;
            tmp[h[b] as usize] = k;
            h[b] += 1;
        }
        std::mem::swap(&mut keys, &mut tmp);
    }
    for (x, k) in v.iter_mut().zip(keys) {
        *x = f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k });
    }
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
    fn samples_reject_non_finite_values() {
        assert!(matches!(
            Samples::new(vec![1.0, f64::NAN]),
            Err(AnalyzeError::NonFinite { index: 1, .. })
        ));
        assert!(Samples::new(vec![f64::INFINITY]).is_err());
        let s = Samples::new(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!(s.sorted(), &[1.0, 2.0, 3.0]);
        assert_eq!(s.mean(), Some(2.0));
        assert_eq!(s.percentile(Percentile::P50), Some(2.0));
    }

    #[test]
    fn radix_sort_matches_comparison_sort() {
        let mut rng = crate::bootstrap::SplitMix64::new(1);
        let mut v: Vec<f64> = (0..100_000)
            .map(|i| match i % 4 {
                0 => rng.next_open01() * 1e4,
                1 => -rng.next_open01() * 1e-3,
                2 => f64::from(i % 17),
                _ => (rng.next_u64() >> 11) as f64,
            })
            .collect();
        v.push(-0.0);
        v.push(0.0);
        let mut want = v.clone();
        want.sort_by(f64::total_cmp);
        sort_floats(&mut v);
        assert!(v.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

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

//! Pure statistics over firsttoken samples. No I/O.
//!
//! Percentiles use one definition everywhere: linear interpolation between
//! closest ranks, numpy's default (`method="linear"`, Hyndman & Fan type 7):
//! for sorted values `x[0..n]` and `p` in `[0, 100]`, the rank is
//! `h = (n − 1)·p/100` and the result `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`.
//!
//! ```
//! use firsttoken_analyze::{percentile, Summary};
//! let xs = [1.0, 2.0, 3.0, 4.0];
//! assert_eq!(percentile(&xs, 50.0), Some(2.5));
//! let s = Summary::of(&xs).unwrap();
//! assert_eq!((s.n, s.min, s.max), (4, 1.0, 4.0));
//! ```
#![deny(missing_docs)]

use firsttoken_record::{Phase, Sample};
use serde::Serialize;

/// The `p`-th percentile (0–100) of `sorted`, which must be sorted ascending
/// and free of NaN. `None` for an empty slice or `p` outside 0–100.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let frac = h - lo as f64;
    Some(sorted[lo] + frac * (sorted[hi] - sorted[lo]))
}

/// The `p`-th percentile of unsorted values; NaNs are ignored.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let sorted = sorted_finite(values);
    percentile_sorted(&sorted, p)
}

fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// n, min, p50, p90, p99 and max of a set of values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarise the non-NaN values; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let v = sorted_finite(values);
        Some(Summary {
            n: v.len(),
            min: *v.first()?,
            p50: percentile_sorted(&v, 50.0)?,
            p90: percentile_sorted(&v, 90.0)?,
            p99: percentile_sorted(&v, 99.0)?,
            max: *v.last()?,
        })
    }
}

/// The summary of one phase over a set of samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSummary {
    /// Phase name (`ttft`, …).
    pub phase: &'static str,
    /// Its summary, `None` when no sample had the phase.
    pub summary: Option<Summary>,
}

/// Counts and per-phase summaries of a run. Warm-up samples are left out;
/// failed samples count towards `failed` and their phases are left out too, so
/// a timeout never shortens a percentile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Counted requests (warm-ups excluded).
    pub requests: usize,
    /// Requests that failed.
    pub failed: usize,
    /// Failures per error kind, in first-seen order.
    pub errors: Vec<(String, usize)>,
    /// One entry per phase in [`Phase::ALL`] order.
    pub phases: Vec<PhaseSummary>,
    /// Sum of content chunks over successful requests.
    pub content_chunks: u64,
    /// Sum of reported output tokens, `None` if no request reported usage.
    pub output_tokens: Option<u64>,
}

impl RunSummary {
    /// Summarise samples.
    pub fn of(samples: &[Sample]) -> RunSummary {
        let counted: Vec<&Sample> = samples.iter().filter(|s| !s.warmup).collect();
        let ok: Vec<&Sample> = counted.iter().copied().filter(|s| s.is_ok()).collect();
        let mut errors: Vec<(String, usize)> = Vec::new();
        for e in counted.iter().filter_map(|s| s.error.as_ref()) {
            let k = e.kind.as_str();
            match errors.iter_mut().find(|(name, _)| name == k) {
                Some((_, n)) => *n += 1,
                None => errors.push((k.to_string(), 1)),
            }
        }
        let phases = Phase::ALL
            .iter()
            .map(|&p| {
                let vals: Vec<f64> = ok.iter().filter_map(|s| p.of(s)).collect();
                PhaseSummary {
                    phase: p.name(),
                    summary: Summary::of(&vals),
                }
            })
            .collect();
        let reported: Vec<u64> = ok.iter().filter_map(|s| s.output_tokens).collect();
        RunSummary {
            requests: counted.len(),
            failed: counted.len() - ok.len(),
            errors,
            phases,
            content_chunks: ok.iter().map(|s| s.content_chunks).sum(),
            output_tokens: if reported.is_empty() {
                None
            } else {
                Some(reported.iter().sum())
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_record::{Connection, ErrorKind, SampleError};
    use proptest::prelude::*;

    #[test]
    fn hand_computed_percentiles() {
        // numpy.percentile([15, 20, 35, 40, 50], [0, 25, 40, 50, 90, 100]) = 15, 20, 29, 35, 46, 50
        let xs = [50.0, 15.0, 40.0, 20.0, 35.0];
        assert_eq!(percentile(&xs, 0.0), Some(15.0));
        assert_eq!(percentile(&xs, 25.0), Some(20.0));
        assert!((percentile(&xs, 40.0).unwrap() - 29.0).abs() < 1e-12);
        assert_eq!(percentile(&xs, 50.0), Some(35.0));
        assert!((percentile(&xs, 90.0).unwrap() - 46.0).abs() < 1e-12);
        assert_eq!(percentile(&xs, 100.0), Some(50.0));
        // numpy.percentile(range(1, 101), 99) = 99.01
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert!((percentile(&hundred, 99.0).unwrap() - 99.01).abs() < 1e-9);
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[1.0], 101.0), None);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }

    #[test]
    fn run_summary_leaves_out_warmups_and_failures() {
        let mut samples = Vec::new();
        for i in 0..4 {
            let mut s = Sample::empty(i, 0, Connection::Reused);
            s.ttft_ms = Some(100.0 + i as f64);
            s.output_tokens = Some(5);
            samples.push(s);
        }
        let mut warm = Sample::empty(0, 0, Connection::Fresh);
        warm.warmup = true;
        warm.ttft_ms = Some(9999.0);
        samples.push(warm);
        let mut bad = Sample::empty(4, 0, Connection::Reused);
        bad.ttft_ms = Some(1.0);
        bad.error = Some(SampleError {
            kind: ErrorKind::Truncated,
            message: "x".into(),
        });
        samples.push(bad);
        let r = RunSummary::of(&samples);
        assert_eq!(r.requests, 5);
        assert_eq!(r.failed, 1);
        assert_eq!(r.errors, vec![("truncated".to_string(), 1)]);
        let ttft = r
            .phases
            .iter()
            .find(|p| p.phase == "ttft")
            .unwrap()
            .summary
            .unwrap();
        assert_eq!((ttft.n, ttft.min, ttft.max), (4, 100.0, 103.0));
        assert_eq!(r.output_tokens, Some(20));
        assert!(
            r.phases
                .iter()
                .find(|p| p.phase == "dns")
                .unwrap()
                .summary
                .is_none()
        );
    }

    proptest! {
        #[test]
        fn percentiles_are_monotone_and_bounded(mut xs in proptest::collection::vec(-1e6f64..1e6, 1..200), a in 0f64..100.0, b in 0f64..100.0) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let pa = percentile(&xs, lo).unwrap();
            let pb = percentile(&xs, hi).unwrap();
            prop_assert!(pa <= pb + 1e-9);
            xs.sort_by(f64::total_cmp);
            prop_assert!(pa >= xs[0] - 1e-9 && pb <= xs[xs.len() - 1] + 1e-9);
        }

        #[test]
        fn summary_order_holds(xs in proptest::collection::vec(0f64..1e4, 1..100)) {
            let s = Summary::of(&xs).unwrap();
            prop_assert!(s.min <= s.p50 && s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.max);
            prop_assert_eq!(s.n, xs.len());
        }
    }
}

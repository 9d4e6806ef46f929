//! The probe's run summary: counts, errors and per-phase n, min, p50, p90,
//! p99 and max over a run's samples (warm-ups and failures left out of the
//! timings).

use firsttoken_record::{Phase, Sample};
use serde::Serialize;

use crate::{percentile_sorted, sorted_finite};

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
    /// TLS handshakes of counted requests by kind (`full`, `resumed`), in
    /// first-seen order; empty without TLS or on reused connections only.
    pub handshakes: Vec<(String, usize)>,
    /// Counted requests whose reused connection was found closed and that
    /// went again on a new one (stale keep-alive).
    pub retried_stale: usize,
    /// Counted responses by `Content-Encoding`, in first-seen order;
    /// identity responses are not listed.
    pub encodings: Vec<(String, usize)>,
}

/// `(name, count)` pairs in first-seen order.
fn tally<'a>(names: impl Iterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for k in names {
        match out.iter_mut().find(|(name, _)| name == k) {
            Some((_, n)) => *n += 1,
            None => out.push((k.to_string(), 1)),
        }
    }
    out
}

impl RunSummary {
    /// Summarise samples.
    pub fn of(samples: &[Sample]) -> RunSummary {
        let counted: Vec<&Sample> = samples.iter().filter(|s| !s.warmup).collect();
        let ok: Vec<&Sample> = counted.iter().copied().filter(|s| s.is_ok()).collect();
        let errors = tally(
            counted
                .iter()
                .filter_map(|s| s.error.as_ref())
                .map(|e| e.kind.as_str()),
        );
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
            handshakes: tally(
                counted
                    .iter()
                    .filter_map(|s| s.tls.as_ref()?.handshake)
                    .map(|h| h.as_str()),
            ),
            retried_stale: counted.iter().filter(|s| s.retried_stale).count(),
            encodings: tally(counted.iter().filter_map(|s| s.content_encoding.as_deref())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_record::{Connection, ErrorKind, SampleError};
    use proptest::prelude::*;

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
        fn summary_order_holds(xs in proptest::collection::vec(0f64..1e4, 1..100)) {
            let s = Summary::of(&xs).unwrap();
            prop_assert!(s.min <= s.p50 && s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.max);
            prop_assert_eq!(s.n, xs.len());
        }
    }
}

//! The probe's and the run's summaries: counts, errors and per-phase n,
//! min, p50, p90, p99 and max over a run's samples (warm-ups and failures
//! left out of the timings), and a session's rows under the one pooling
//! rule ([`session_rows`]).
//!
//! Percentiles follow the one withholding rule of every output: the p-th
//! percentile is shown only with `n ≥ ⌈100 / (100 − p)⌉` values
//! ([`crate::Percentile::min_n`]: p50 2, p90 10, p95 20, p99 100), so a
//! summary of 10 requests has no p99 and one of 3 no p95.

use firsttoken_record::session::SampleRow;
use firsttoken_record::vocab::{Destination, PhaseKind};
use firsttoken_record::{Phase, Sample};
use serde::Serialize;

use crate::{percentile_sorted, sorted_finite};

/// n, min, p50, p90, p99 and max of a set of values; a percentile is
/// `None` (withheld) below its minimum n.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Smallest value.
    pub min: f64,
    /// Median (2 values or more).
    pub p50: Option<f64>,
    /// 90th percentile (10 values or more).
    pub p90: Option<f64>,
    /// 95th percentile (20 values or more).
    pub p95: Option<f64>,
    /// 99th percentile (100 values or more).
    pub p99: Option<f64>,
    /// Largest value.
    pub max: f64,
}

/// The `p`-th percentile of sorted values, withheld below its minimum n.
pub fn shown_percentile(sorted: &[f64], p: crate::Percentile) -> Option<f64> {
    (sorted.len() >= p.min_n())
        .then(|| percentile_sorted(sorted, p.get()))
        .flatten()
}

impl Summary {
    /// Summarise the non-NaN values; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        use crate::Percentile;
        let v = sorted_finite(values);
        Some(Summary {
            n: v.len(),
            min: *v.first()?,
            p50: shown_percentile(&v, Percentile::P50),
            p90: shown_percentile(&v, Percentile::P90),
            p95: shown_percentile(&v, Percentile::P95),
            p99: shown_percentile(&v, Percentile::P99),
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
        // Without a tool call the first output is the first token: its row
        // would repeat TTFT's, so it is left empty.
        let tool_calls = ok.iter().any(|s| s.ttftc_ms.is_some());
        let phases = Phase::ALL
            .iter()
            .map(|&p| {
                let vals: Vec<f64> = if p == Phase::FirstOutput && !tool_calls {
                    Vec::new()
                } else {
                    ok.iter().filter_map(|s| p.of(s)).collect()
                };
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

/// One row of a session's summary: the requests of one phase to one
/// destination at one concurrency level — the one pooling rule
/// ([`crate::group`]): phases, paths, levels and strategies never pool.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    /// The phase.
    pub phase: PhaseKind,
    /// Where the requests went (an app path, a direct strategy, the ping).
    pub dest: Destination,
    /// The concurrency level, for the concurrency phase.
    pub concurrency: Option<u32>,
    /// Counted requests (warm-ups excluded).
    pub requests: usize,
    /// Of which failed.
    pub failed: usize,
    /// Time to the first token of the successful ones (a ping's first
    /// response byte: pings carry no tokens).
    pub first: Option<Summary>,
    /// Their end-to-end time.
    pub e2e: Option<Summary>,
    /// Cost of every request of the row, warm-ups included, USD.
    pub cost_usd: f64,
}

/// A session's rows summarised one row per phase, destination and level,
/// in headline order (warm, fresh, concurrency, rate, cold, direct, ping),
/// then by path or strategy name and level.
pub fn session_rows(rows: &[SampleRow]) -> Vec<SessionRow> {
    let rank = |p: PhaseKind| {
        crate::group::HEADLINE_ORDER
            .iter()
            .position(|&q| q == p)
            .unwrap_or(0)
    };
    let mut keys: Vec<(usize, &Destination, Option<u32>)> = Vec::new();
    for r in rows {
        let k = (rank(r.phase), &r.dest, r.concurrency);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort_by(|a, b| {
        let name = |d: &Destination| d.strategy().or(d.path_column()).map(str::to_owned);
        (a.0, name(a.1), a.2).cmp(&(b.0, name(b.1), b.2))
    });
    keys.into_iter()
        .map(|(phase, dest, concurrency)| {
            let phase = crate::group::HEADLINE_ORDER[phase];
            let of_row = || {
                rows.iter().filter(move |r| {
                    r.phase == phase && &r.dest == dest && r.concurrency == concurrency
                })
            };
            let counted: Vec<&Sample> = of_row().map(|r| &r.sample).filter(|s| !s.warmup).collect();
            let ok: Vec<&Sample> = counted.iter().copied().filter(|s| s.is_ok()).collect();
            let first: Vec<f64> = ok
                .iter()
                .filter_map(|s| {
                    if phase == PhaseKind::Ping {
                        s.ttfb_ms
                    } else {
                        s.ttft_ms
                    }
                })
                .collect();
            let e2e: Vec<f64> = ok.iter().filter_map(|s| s.e2e_ms).collect();
            SessionRow {
                phase,
                dest: dest.clone(),
                concurrency,
                requests: counted.len(),
                failed: counted.len() - ok.len(),
                first: Summary::of(&first),
                e2e: Summary::of(&e2e),
                cost_usd: of_row().filter_map(|r| r.sample.cost_usd).sum(),
            }
        })
        .collect()
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

    /// Issue 24, defect 4: `probe` printed a p99 at n = 10 and `run` a
    /// p95 at n = 2 and 3. One withholding rule everywhere.
    #[test]
    fn percentiles_are_withheld_below_their_minimum_n() {
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Summary::of(&ten).unwrap();
        assert_eq!((s.p50, s.p90, s.p99), (Some(5.5), Some(9.1), None));
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!((one.n, one.min, one.max, one.p50), (1, 7.0, 7.0, None));
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert!(Summary::of(&hundred).unwrap().p99.is_some());
    }

    /// Issue 24, defect 4: the run summary pooled paths under "warm" and
    /// concurrency levels under "concurrency".
    #[test]
    fn session_rows_never_pool_paths_levels_or_strategies() {
        let row = |phase: PhaseKind, dest: Destination, level: Option<u32>, ttft: f64| {
            let mut sample = Sample::empty(0, 0, Connection::Reused);
            sample.ttft_ms = Some(ttft);
            sample.e2e_ms = Some(ttft + 10.0);
            sample.cost_usd = Some(0.001);
            SampleRow {
                session_id: "s".into(),
                phase,
                dest,
                concurrency: level,
                intended_start_ms: None,
                actual_start_ms: 0.0,
                started_at: "2026-12-04T00:00:00Z".parse().unwrap(),
                provenance: firsttoken_record::session::Provenance::Measured,
                prompt: None,
                sample,
            }
        };
        let app = |p: &str| Destination::App {
            path: Some(p.into()),
        };
        let mut rows = Vec::new();
        for t in [100.0, 110.0, 120.0] {
            rows.push(row(PhaseKind::Warm, app("docs"), None, t));
            rows.push(row(PhaseKind::Warm, app("chat"), None, t * 3.0));
        }
        for k in [3, 1] {
            rows.push(row(PhaseKind::Concurrency, app("chat"), Some(k), 500.0));
            rows.push(row(PhaseKind::Concurrency, app("chat"), Some(k), 700.0));
        }
        rows.push(row(PhaseKind::Cold, app("chat"), None, 900.0));
        rows.push(row(
            PhaseKind::Direct,
            Destination::Direct {
                strategy: Some("fast".into()),
            },
            None,
            80.0,
        ));
        let out = session_rows(&rows);
        let names: Vec<(PhaseKind, Option<&str>, Option<u32>, usize)> = out
            .iter()
            .map(|r| {
                let name = r.dest.strategy().or(r.dest.path_column());
                (r.phase, name, r.concurrency, r.requests)
            })
            .collect();
        assert_eq!(
            names,
            [
                (PhaseKind::Warm, Some("chat"), None, 3),
                (PhaseKind::Warm, Some("docs"), None, 3),
                (PhaseKind::Concurrency, Some("chat"), Some(1), 2),
                (PhaseKind::Concurrency, Some("chat"), Some(3), 2),
                (PhaseKind::Cold, Some("chat"), None, 1),
                (PhaseKind::Direct, Some("fast"), None, 1),
            ]
        );
        // The cold row is one value: no median withheld as a statistic,
        // none shown either (a value is its min and max).
        let cold = out[4].first.unwrap();
        assert_eq!((cold.n, cold.min, cold.p50), (1, 900.0, None));
        assert_eq!(out[1].first.unwrap().p50, Some(110.0));
    }

    proptest! {
        #[test]
        fn summary_order_holds(xs in proptest::collection::vec(0f64..1e4, 1..200)) {
            let s = Summary::of(&xs).unwrap();
            let shown: Vec<f64> = [Some(s.min), s.p50, s.p90, s.p95, s.p99, Some(s.max)]
                .into_iter()
                .flatten()
                .collect();
            prop_assert!(shown.windows(2).all(|w| w[0] <= w[1]));
            prop_assert_eq!(s.n, xs.len());
        }
    }
}

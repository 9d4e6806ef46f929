//! CI thresholds (`firsttoken check`): typed limits judged on a session's
//! app requests (warm, fresh, cold, concurrency, rate; warm-ups excluded).
//!
//! A percentile limit holds when the session's percentile of the metric,
//! over its successful app requests, is at most the limit; with no
//! successful app request it fails (there is nothing to hold). The error
//! rate is failed ÷ counted app requests; with no counted app request it
//! fails likewise (a rate of nothing is no 0 %).

use std::fmt;
use std::str::FromStr;

use crate::{Frame, Metric, Percentile, Settings, Stat};

/// A metric a threshold may limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckMetric {
    /// Time to first content token.
    Ttft,
    /// Time to first response byte.
    Ttfb,
    /// Request start to stream end.
    E2e,
}

impl CheckMetric {
    /// Every metric a threshold may limit.
    pub const ALL: [CheckMetric; 3] = [CheckMetric::Ttft, CheckMetric::Ttfb, CheckMetric::E2e];

    /// The analysis metric.
    pub fn metric(self) -> Metric {
        match self {
            CheckMetric::Ttft => Metric::Ttft,
            CheckMetric::Ttfb => Metric::Ttfb,
            CheckMetric::E2e => Metric::E2e,
        }
    }
}

/// The percentiles a threshold may limit.
pub const CHECK_PERCENTILES: [f64; 4] = [50.0, 90.0, 95.0, 99.0];

/// One `--max` limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A percentile of a metric at most `limit_ms`.
    Percentile {
        /// The metric.
        metric: CheckMetric,
        /// The percentile (one of [`CHECK_PERCENTILES`]).
        percentile: Percentile,
        /// The limit, ms.
        limit_ms: f64,
    },
    /// The share of failed requests at most `limit` (a fraction).
    ErrorRate {
        /// The limit, 0–1.
        limit: f64,
    },
}

impl Threshold {
    /// `ttft.p95`, `error_rate`.
    pub fn name(&self) -> String {
        match self {
            Threshold::Percentile {
                metric, percentile, ..
            } => format!("{}.p{}", metric.metric().name(), percentile.get()),
            Threshold::ErrorRate { .. } => "error_rate".into(),
        }
    }
}

/// A `--max` that does not parse; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--max {given:?}: {expected}")]
pub struct ThresholdError {
    /// What was given.
    pub given: String,
    /// What was expected instead.
    pub expected: &'static str,
}

impl FromStr for Threshold {
    type Err = ThresholdError;

    /// `ttft.p95=3s`, `e2e.p50=800ms` (or a bare number of ms: see
    /// [`crate::parse::duration_ms`]), `error_rate=1%` (or a fraction:
    /// [`crate::parse::share`]); the percentile as [`Percentile`] reads it,
    /// one of [`CHECK_PERCENTILES`].
    fn from_str(s: &str) -> Result<Threshold, ThresholdError> {
        let err = |expected| ThresholdError {
            given: s.to_string(),
            expected,
        };
        let (metric, value) = s
            .split_once('=')
            .ok_or_else(|| err("expected metric=value, e.g. ttft.p95=3s"))?;
        let (metric, value) = (metric.trim(), value.trim());
        if metric == "error_rate" {
            let limit = crate::parse::share(value)
                .filter(|v| *v >= 0.0)
                .ok_or_else(|| err("error_rate is a fraction or a percentage, e.g. 1%"))?;
            return Ok(Threshold::ErrorRate { limit });
        }
        let (m, p) = metric
            .split_once('.')
            .ok_or_else(|| err("expected METRIC.PERCENTILE, e.g. ttft.p95"))?;
        let shape = "metric must be ttft, ttfb or e2e and percentile p50, p90, p95 or p99";
        let metric = CheckMetric::ALL
            .into_iter()
            .find(|c| c.metric().name() == m)
            .ok_or_else(|| err(shape))?;
        let percentile = p
            .parse::<Percentile>()
            .ok()
            .filter(|p| CHECK_PERCENTILES.contains(&p.get()))
            .ok_or_else(|| err(shape))?;
        let limit_ms = crate::parse::duration_ms(value)
            .filter(|v| *v >= 0.0)
            .ok_or_else(|| err("the limit is a duration like 3s or 800ms"))?;
        Ok(Threshold::Percentile {
            metric,
            percentile,
            limit_ms,
        })
    }
}

/// What a threshold found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// The percentile, with its interval when n allows one.
    Percentile(Stat),
    /// No successful app request to take it from.
    NoSuccess,
    /// The error rate: failed of counted.
    ErrorRate {
        /// Failed app requests.
        failed: usize,
        /// Counted app requests.
        counted: usize,
    },
}

/// One threshold's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The threshold.
    pub threshold: Threshold,
    /// What was found.
    pub found: Found,
    /// Whether it held.
    pub held: bool,
}

impl fmt::Display for CheckMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.metric().name())
    }
}

/// Judge `thresholds` on the app requests of session `session_id` in
/// `frame`.
pub fn check(
    frame: &Frame,
    session_id: &str,
    thresholds: &[Threshold],
    settings: &Settings,
) -> Vec<Verdict> {
    let app = frame.app_rows(session_id);
    thresholds
        .iter()
        .map(|t| match *t {
            Threshold::ErrorRate { limit } => {
                let (_, c) = crate::samples::with_counts(frame, &app, Metric::Ttft);
                let (counted, failed) = (c.requests, c.failed);
                let rate = if counted == 0 {
                    0.0
                } else {
                    failed as f64 / counted as f64
                };
                Verdict {
                    threshold: *t,
                    found: Found::ErrorRate { failed, counted },
                    held: counted > 0 && rate <= limit,
                }
            }
            Threshold::Percentile {
                metric,
                percentile,
                limit_ms,
            } => match crate::samples::of_rows(frame, &app, metric.metric()) {
                s if s.is_empty() => Verdict {
                    threshold: *t,
                    found: Found::NoSuccess,
                    held: false,
                },
                s => {
                    let stat = s.stat(percentile, settings);
                    Verdict {
                        threshold: *t,
                        held: stat.point().is_some_and(|v| v <= limit_ms),
                        found: Found::Percentile(stat),
                    }
                }
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_typed() {
        assert_eq!(
            "ttft.p95=3s".parse::<Threshold>().unwrap(),
            Threshold::Percentile {
                metric: CheckMetric::Ttft,
                percentile: Percentile::P95,
                limit_ms: 3000.0
            }
        );
        let e2e = "e2e.p50=800ms".parse::<Threshold>().unwrap();
        assert_eq!(e2e.name(), "e2e.p50");
        assert!(matches!(e2e, Threshold::Percentile { limit_ms, .. } if limit_ms == 800.0));
        assert!(matches!(
            "ttfb.p99 = 250".parse::<Threshold>().unwrap(),
            Threshold::Percentile { limit_ms, .. } if limit_ms == 250.0
        ));
        assert_eq!(
            "error_rate=1%".parse::<Threshold>().unwrap(),
            Threshold::ErrorRate { limit: 0.01 }
        );
        assert_eq!(
            "error_rate=0.02".parse::<Threshold>().unwrap(),
            Threshold::ErrorRate { limit: 0.02 }
        );
        // The one reading of durations and percentiles (crate::parse).
        assert_eq!(
            "ttft.median=1.5s".parse::<Threshold>().unwrap(),
            Threshold::Percentile {
                metric: CheckMetric::Ttft,
                percentile: Percentile::P50,
                limit_ms: 1500.0
            }
        );
        for bad in [
            "ttft.p97=3s",
            "ttft.p95=-1s",
            "error_rate=-1%",
            "latency=3s",
            "ttft.p95",
            "ttft.p95=fast",
            "error_rate=x",
        ] {
            let e = bad.parse::<Threshold>().unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("--max {bad:?}: ")),
                "{e}"
            );
        }
    }
}

//! Analysis of firsttoken samples: the frame, the diagnostics, the span
//! join and sample-size planning, built on the statistics kernel
//! (`firsttoken-stats`, re-exported here: [`estimate`], [`bootstrap`],
//! [`rank`], [`Samples`], [`Settings`], the one percentile definition). No
//! I/O.
//!
//! Percentiles use one definition everywhere: linear interpolation between
//! closest ranks, numpy's default (`method="linear"`, Hyndman & Fan type 7):
//! for sorted values `x[0..n]` and `p` in `[0, 100]`, the rank is
//! `h = (n − 1)·p/100` and the result `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`.
//!
//! One entry point per computation, each over a [`Frame`]:
//!
//! - [`check`]: CI thresholds, typed, judged on a session's app requests.
//! - [`mod@compare`]: comparisons with a [`Direction`] (increase / decrease /
//!   no detectable difference / too small to matter / inconclusive / too
//!   few samples).
//! - [`finding`]: findings as data — estimate, interval, n and a
//!   [`Direction`] decided from the interval, never from the point's sign.
//!   Analysis writes no sentences; the report stage words every finding.
//! - [`findings`]: the findings a report opens with, ranked by the user
//!   wait time each explains ([`rank_findings`]).
//! - [`frame`]: rows validated into a compact table ([`Frame`]);
//!   [`mod@group`]: grouping by ten keys (provenance always one of them);
//!   [`session`]: per-session medians and pooled distributions.
//! - [`diagnose`]: app overhead, connection cost, concurrency wall, cold
//!   start, providers, paths and routes, drift, claims and limits.
//! - [`traces`]: the app's server-side spans joined to each sample (clock
//!   offset, queue wait, database / provider / HTTP / auth time), the
//!   overhead split and the wall's cause ([`attach_traces`]).
//! - [`engine`]: the engine's own prefill joined per request (TTFT split
//!   into engine prefill and the rest, the wall attributed), and warm
//!   requests that had to open a new connection.
//! - [`analyze()`]: all of it at once, as one serializable [`Analysis`].
//! - [`run_summary`]: the probe's per-phase run summary ([`RunSummary`]).
//! - [`power`]: sample-size planning by simulating the report's own rule
//!   on resampled pilot data.
//! - [`live`]: what a live view of a running session shows, folded from
//!   its stored samples per phase and destination.
//! - [`parse`]: the one reading of typed values (durations, shares, the
//!   difference to detect, a phase or `all`) for `plan`, `compare` and
//!   `check`.
//!
//! Warm-up samples and failed samples never enter timing statistics;
//! failures are counted as error rates. Every random draw comes from
//! [`Settings::seed`], the session's seed, never the clock.
//!
//! ```
//! use firsttoken_analyze::{percentile, Summary};
//! let xs = [1.0, 2.0, 3.0, 4.0];
//! assert_eq!(percentile(&xs, 50.0), Some(2.5));
//! let s = Summary::of(&xs).unwrap();
//! assert_eq!((s.n, s.min, s.max), (4, 1.0, 4.0));
//! ```
//!
//! ```
//! use firsttoken_analyze::{Percentile, Samples, Settings};
//! let ttft = Samples::new((1..=40).map(|i| 100.0 + f64::from(i)).collect()).unwrap();
//! let p95 = ttft.stat(Percentile::P95, &Settings::new(42));
//! let e = p95.estimate().unwrap();
//! assert!(e.ci.lower <= e.point && e.point <= e.ci.upper);
//! // p99 needs 100 samples.
//! assert!(ttft.stat(Percentile::P99, &Settings::new(42)).estimate().is_none());
//! ```
#![deny(missing_docs)]

pub mod check;
pub mod compare;
pub mod conversations;
pub mod diagnose;
pub mod engine;
pub mod engine_metrics;
pub mod finding;
pub mod findings;
pub mod flows;
pub mod frame;
pub mod group;
pub mod live;
mod metric;
pub mod parse;
pub mod power;
pub mod render;
pub mod run_summary;
pub mod samples;
pub mod session;
pub mod traces;

mod analysis;
#[cfg(test)]
mod testutil;

pub use analysis::{Analysis, analyze};
pub use compare::{Comparison, compare};
pub use finding::{Direction, Finding};
pub use findings::{FindingKind, MAX_FINDINGS, RankedFinding, rank_findings};
pub use firsttoken_stats::{
    Ci, Estimate, Percentile, PercentileParseError, Samples, Settings, Stat, StatsError, bootstrap,
    estimate, min_n, percentile, percentile_sorted, rank,
};
pub use frame::{
    Frame, FrameBuilder, FrameChunks, Metric, PhaseKind, STORED_FRAME_FORMAT, StoredFrame,
};
pub use group::{
    Group, GroupKey, GroupLabel, POOL_LABELLED, group, group_in_phase, group_in_slice,
    headline_keys,
};
pub use run_summary::{PhaseSummary, RunSummary, SessionRow, Summary, session_rows};
pub use samples::{Counts, MetricSummary};
pub use traces::{SpanInput, Traces, attach_traces};

/// What can go wrong in analysis: bad input, never a statistic that cannot
/// be computed (that is a [`Stat::TooSmall`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalyzeError {
    /// Input the statistics kernel refuses.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// A stored timing that is negative or not finite.
    #[error(
        "session {session_id} seq {seq}: {field} = {} is not a finite non-negative number",
        firsttoken_record::short_number(*value)
    )]
    InvalidValue {
        /// Session of the row.
        session_id: String,
        /// Sequence number of the row's sample.
        seq: u64,
        /// Field name.
        field: &'static str,
        /// The value.
        value: f64,
    },
    /// Bytes read as a stored frame that are not one (see [`StoredFrame`]).
    #[error("the stored frame cannot be read: {why}")]
    StoredFrame {
        /// What is wrong with it.
        why: String,
    },
    /// The same session given twice.
    #[error("session {id} is listed twice")]
    DuplicateSession {
        /// Its id.
        id: String,
    },
    /// A session id not in the data.
    #[error("no session {id} in the data")]
    UnknownSession {
        /// The id asked for.
        id: String,
    },
    /// A grouping key that does not exist.
    #[error(
        "unknown grouping key {key:?} (expected network, code_version, vantage, day, path, phase, strategy, concurrency, provider or provenance)"
    )]
    UnknownGroupKey {
        /// The key given.
        key: String,
    },
    /// A metric name that does not exist.
    #[error(
        "unknown metric {name:?} (expected ttft, ttfb, e2e, tokens_per_s, dns, connect, tls or rtt)"
    )]
    UnknownMetric {
        /// The name given.
        name: String,
    },
    /// A setting out of range.
    #[error("{name} = {value}: {reason}")]
    InvalidSetting {
        /// Setting name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What is allowed.
        reason: &'static str,
    },
    /// Two samples of different provenance kinds.
    #[error("cannot compare {a} with {b}: provenance kinds are never pooled or compared")]
    MixedProvenance {
        /// First side.
        a: String,
        /// Second side.
        b: String,
    },
}

/// The analysis settings of `sessions`: seeded from the one session's seed,
/// or from every (id, seed) pair ([`Settings::from_seeds`]), so the same
/// sessions always give the same draws.
pub fn settings_for(sessions: &[firsttoken_record::session::SessionMeta]) -> Settings {
    Settings::from_seeds(sessions.iter().map(|s| (s.id.as_str(), s.seed)))
}

pub(crate) use firsttoken_stats::sorted_finite;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    }
}

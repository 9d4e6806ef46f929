//! What a live view of a running session shows (`run --watch`, `probe
//! --watch`), folded from the stored samples as the recorder hands them
//! over — the same stream the store gets, no second measurement path: per
//! phase and destination ([`LiveKey`]) the requests done, warm-ups,
//! failures and TTFT values; errors by kind and the last ones; the
//! open-loop start lag; the spend. Percentiles use the report's estimator
//! ([`LiveGroup::ttft`]). No clock and no drawing: the view owns both.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use firsttoken_record::session::SampleRow;
use firsttoken_record::{Destination, ErrorKind, Sample};

use crate::{Percentile, PhaseKind, Samples, Settings, Stat, percentile_sorted};

/// Most recent errors kept with their messages.
pub const LAST_ERRORS: usize = 5;

/// Most TTFT values kept per group (the oldest are dropped past it, so a
/// long run's view stays cheap; the store keeps everything).
pub const KEPT_PER_GROUP: usize = 20_000;

/// A group of the live view: a phase and a destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LiveKey {
    /// The phase.
    pub phase: PhaseKind,
    /// Where the requests went.
    pub dest: Destination,
}

impl LiveKey {
    /// The group of a stored row.
    pub fn of(row: &SampleRow) -> LiveKey {
        LiveKey {
            phase: row.phase,
            dest: row.dest.clone(),
        }
    }
}

impl fmt::Display for LiveKey {
    /// `warm · chat`, `direct · default`, `ping` (the destination's
    /// strategy, else its stored path, else `-`; alone when it is the
    /// phase's own name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dest = self
            .dest
            .strategy()
            .or(self.dest.path_column())
            .unwrap_or("-");
        if dest == self.phase.as_str() {
            f.write_str(dest)
        } else {
            write!(f, "{} · {dest}", self.phase.as_str())
        }
    }
}

/// One group's requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveGroup {
    /// Counted (non-warm-up) requests stored.
    pub done: u64,
    /// Warm-ups stored.
    pub warmups: u64,
    /// Counted requests that failed.
    pub failed: u64,
    /// TTFT of the counted successes, ms (bounded: [`KEPT_PER_GROUP`]).
    pub ttft_ms: VecDeque<f64>,
}

impl LiveGroup {
    /// The group's TTFT percentile `p` with its interval (the report's
    /// estimator), or too few values.
    pub fn ttft(&self, p: Percentile, settings: &Settings) -> Stat {
        match Samples::new(self.ttft_ms.iter().copied().collect()) {
            Ok(s) => s.stat(p, settings),
            Err(_) => Stat::TooSmall {
                n: 0,
                needed: p.min_n(),
            },
        }
    }
}

/// One failed request, for the list of the last ones.
#[derive(Debug, Clone, PartialEq)]
pub struct LastError {
    /// Its group.
    pub group: LiveKey,
    /// Its error's kind.
    pub kind: ErrorKind,
    /// Its message (as stored: secrets already redacted by drive).
    pub message: String,
}

/// The open-loop start lag (actual − intended start) of the arrivals so
/// far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StartLag {
    /// The median, ms.
    pub p50_ms: f64,
    /// The 99th percentile, ms, once there are values enough to show it
    /// ([`Percentile::min_n`]).
    pub p99_ms: Option<f64>,
    /// Arrivals.
    pub n: usize,
}

/// Everything the live view draws.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveState {
    /// Session id, once the row exists.
    pub session: Option<String>,
    /// The seed of the intervals shown: the session's, once its row exists
    /// (0 until then, and for a probe, which has none).
    pub seed: u64,
    /// Requests planned, a warm-up per warm connection included (an app
    /// closing idle connections may cost a few more).
    pub announced: u64,
    /// Counted requests planned per phase, in protocol order.
    pub planned: Vec<(PhaseKind, u64)>,
    /// Per phase and destination, in first-seen order.
    pub groups: Vec<(LiveKey, LiveGroup)>,
    /// Stored requests (warm-ups too).
    pub stored: u64,
    /// Failed counted requests by their error kind's name.
    pub errors: BTreeMap<&'static str, u64>,
    /// The last failures, newest last.
    pub last_errors: VecDeque<LastError>,
    /// Open-loop start lag (actual − intended start), ms, of every arrival.
    pub start_lag_ms: Vec<f64>,
    /// USD spent so far.
    pub spent_usd: f64,
    /// The session's budget, if any.
    pub budget_usd: Option<f64>,
    /// The measured part is over.
    pub measured: bool,
}

impl LiveState {
    /// An empty view of a session that plans `announced` requests
    /// (warm-ups included), `planned` counted ones per phase, under
    /// `budget_usd`.
    pub fn new(
        announced: u64,
        planned: Vec<(PhaseKind, u64)>,
        budget_usd: Option<f64>,
    ) -> LiveState {
        LiveState {
            session: None,
            seed: 0,
            announced,
            planned,
            groups: Vec::new(),
            stored: 0,
            errors: BTreeMap::new(),
            last_errors: VecDeque::new(),
            start_lag_ms: Vec::new(),
            spent_usd: 0.0,
            budget_usd,
            measured: false,
        }
    }

    /// Take one stored session sample into the view, `spent_usd` spent so
    /// far.
    pub fn record(&mut self, row: &SampleRow, spent_usd: f64) {
        let lag = row
            .intended_start_ms
            .map(|intended| (row.actual_start_ms - intended).max(0.0));
        self.sample(LiveKey::of(row), &row.sample, lag, spent_usd);
    }

    /// Take one sample of group `key` into the view; `lag` is its
    /// open-loop start lag, ms, if it was an arrival.
    pub fn sample(&mut self, key: LiveKey, s: &Sample, lag: Option<f64>, spent_usd: f64) {
        self.stored += 1;
        self.spent_usd = spent_usd;
        let i = match self.groups.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.groups.push((key.clone(), LiveGroup::default()));
                self.groups.len() - 1
            }
        };
        let g = &mut self.groups[i].1;
        if s.warmup {
            g.warmups += 1;
            return;
        }
        g.done += 1;
        if let Some(lag) = lag {
            self.start_lag_ms.push(lag);
        }
        match &s.error {
            Some(e) => {
                g.failed += 1;
                *self.errors.entry(e.kind.as_str()).or_default() += 1;
                self.last_errors.push_back(LastError {
                    group: key,
                    kind: e.kind,
                    message: e.message.clone(),
                });
                while self.last_errors.len() > LAST_ERRORS {
                    self.last_errors.pop_front();
                }
            }
            None => {
                if let Some(t) = s.ttft_ms.filter(|t| t.is_finite()) {
                    g.ttft_ms.push_back(t);
                    while g.ttft_ms.len() > KEPT_PER_GROUP {
                        g.ttft_ms.pop_front();
                    }
                }
            }
        }
    }

    /// Counted requests stored in `phase`.
    pub fn done_in(&self, phase: PhaseKind) -> u64 {
        self.groups
            .iter()
            .filter(|(k, _)| k.phase == phase)
            .map(|(_, g)| g.done)
            .sum()
    }

    /// Counted requests stored in all.
    pub fn done(&self) -> u64 {
        self.groups.iter().map(|(_, g)| g.done).sum()
    }

    /// The open-loop start lag of the arrivals so far; `None` before the
    /// first.
    pub fn start_lag(&self) -> Option<StartLag> {
        let mut v = self.start_lag_ms.clone();
        v.sort_by(f64::total_cmp);
        let p50_ms = percentile_sorted(&v, 50.0)?;
        let p99_ms = if v.len() >= Percentile::P99.min_n() {
            percentile_sorted(&v, 99.0)
        } else {
            None
        };
        Some(StartLag {
            p50_ms,
            p99_ms,
            n: v.len(),
        })
    }

    /// The group with the most TTFT values, if any has one: the one the
    /// view's histogram shows (one group, never a pool of groups that may
    /// behave differently).
    pub fn fullest(&self) -> Option<&(LiveKey, LiveGroup)> {
        self.groups
            .iter()
            .filter(|(_, g)| !g.ttft_ms.is_empty())
            .max_by_key(|(_, g)| g.ttft_ms.len())
    }
}

/// Counts of `values` in `buckets` equal-width buckets between their
/// minimum and maximum (all in one bucket when they are equal).
pub fn histogram(values: &[f64], buckets: usize) -> Vec<u64> {
    let mut out = vec![0u64; buckets.max(1)];
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return out;
    }
    let width = (hi - lo) / out.len() as f64;
    for &v in values {
        let i = if width > 0.0 {
            (((v - lo) / width) as usize).min(out.len() - 1)
        } else {
            0
        };
        out[i] += 1;
    }
    out
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;

//! What the live view shows, gathered from the stored samples as the
//! recorder hands them over (the same stream the store gets: no second
//! measurement path).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use firsttoken_analyze::samples::Samples;
use firsttoken_analyze::{Percentile, Settings, Stat};
use firsttoken_plan::protocol::Protocol;
use firsttoken_record::session::SampleRow;
use firsttoken_record::{PhaseKind, Sample};

/// Most recent errors kept with their messages.
pub const LAST_ERRORS: usize = 5;

/// Most TTFT values kept per group (the oldest are dropped past it, so a
/// long run's view stays cheap; the store keeps everything).
pub const KEPT_PER_GROUP: usize = 20_000;

/// One phase · destination group.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// Counted (non-warm-up) requests stored.
    pub done: u64,
    /// Warm-ups stored.
    pub warmups: u64,
    /// Counted requests that failed.
    pub failed: u64,
    /// TTFT of the counted successes, ms (bounded: [`KEPT_PER_GROUP`]).
    pub ttft_ms: VecDeque<f64>,
}

/// One failed request, for the list of the last ones.
#[derive(Debug, Clone, PartialEq)]
pub struct LastError {
    /// `phase · destination`.
    pub group: String,
    /// The error kind's stored name.
    pub kind: String,
    /// Its message (as stored: secrets already redacted by drive).
    pub message: String,
}

/// Everything the live view draws.
#[derive(Debug, Clone)]
pub struct LiveState {
    /// Session id, once the row exists.
    pub session: Option<String>,
    /// Requests planned, a warm-up per warm connection included (an app
    /// closing idle connections may cost a few more).
    pub announced: u64,
    /// Counted requests planned per phase, in protocol order.
    pub planned: Vec<(PhaseKind, u64)>,
    /// Per `phase · destination`, in first-seen order.
    pub groups: Vec<(String, Group)>,
    /// Stored requests (warm-ups too).
    pub stored: u64,
    /// Failed counted requests by error kind.
    pub errors: BTreeMap<String, u64>,
    /// The last failures, newest last.
    pub last_errors: VecDeque<LastError>,
    /// Open-loop start lag (actual − intended start), ms, of every arrival.
    pub start_lag_ms: Vec<f64>,
    /// USD spent so far, and the budget.
    pub spent_usd: f64,
    /// The session's budget, if any.
    pub budget_usd: Option<f64>,
    /// When the view started.
    pub since: Instant,
    /// The measured part is over.
    pub measured: bool,
}

impl LiveState {
    /// An empty view of a session running `protocol` under `budget_usd`.
    pub fn new(protocol: &Protocol, budget_usd: Option<f64>) -> LiveState {
        LiveState {
            session: None,
            announced: protocol.planned() as u64,
            planned: protocol
                .counts()
                .into_iter()
                .map(|(k, n)| (k, n as u64))
                .collect(),
            groups: Vec::new(),
            stored: 0,
            errors: BTreeMap::new(),
            last_errors: VecDeque::new(),
            start_lag_ms: Vec::new(),
            spent_usd: 0.0,
            budget_usd,
            since: Instant::now(),
            measured: false,
        }
    }

    /// Take one stored session sample into the view.
    pub fn record(&mut self, row: &SampleRow, spent_usd: f64) {
        let lag = row
            .intended_start_ms
            .map(|intended| (row.actual_start_ms - intended).max(0.0));
        self.sample(group_name(row), &row.sample, lag, spent_usd);
    }

    /// Take one sample of group `name` into the view; `lag` is its
    /// open-loop start lag, ms, if it was an arrival.
    pub fn sample(&mut self, name: String, s: &Sample, lag: Option<f64>, spent_usd: f64) {
        self.stored += 1;
        self.spent_usd = spent_usd;
        let i = match self.groups.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                self.groups.push((name.clone(), Group::default()));
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
                let kind = e.kind.as_str().to_string();
                *self.errors.entry(kind.clone()).or_default() += 1;
                self.last_errors.push_back(LastError {
                    group: name,
                    kind,
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

    /// Counted requests stored per phase.
    pub fn done_in(&self, phase: PhaseKind) -> u64 {
        let (name, prefix) = (phase.as_str(), format!("{} · ", phase.as_str()));
        self.groups
            .iter()
            .filter(|(n, _)| n == name || n.starts_with(&prefix))
            .map(|(_, g)| g.done)
            .sum()
    }

    /// Counted requests stored in all.
    pub fn done(&self) -> u64 {
        self.groups.iter().map(|(_, g)| g.done).sum()
    }

    /// Time since the view started.
    pub fn elapsed(&self) -> Duration {
        self.since.elapsed()
    }
}

/// A group's TTFT percentile with its interval (the report's estimator).
pub fn ttft_stat(g: &Group, p: Percentile, settings: &Settings) -> Stat {
    match Samples::new(g.ttft_ms.iter().copied().collect()) {
        Ok(s) => s.stat(p, settings),
        Err(_) => Stat::TooSmall {
            n: 0,
            needed: p.min_n(),
        },
    }
}

/// `warm · chat`, `direct · default`, `ping`.
fn group_name(row: &SampleRow) -> String {
    let dest = row
        .dest
        .strategy()
        .or(row.dest.path_column())
        .unwrap_or("-");
    if dest == row.phase.as_str() {
        dest.to_string()
    } else {
        format!("{} · {dest}", row.phase.as_str())
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
mod tests {
    use super::*;
    use firsttoken_plan::protocol::{Dest, Planned, Step};
    use firsttoken_record::session::Provenance;
    use firsttoken_record::{Connection, Destination, ErrorKind, SampleError, UtcTime};

    fn row(phase: PhaseKind, path: &str, ttft: Option<f64>, warmup: bool) -> SampleRow {
        let mut s = Sample::empty(0, 0, Connection::Reused);
        s.warmup = warmup;
        s.ttft_ms = ttft;
        if ttft.is_none() {
            s.error = Some(SampleError {
                kind: ErrorKind::HttpStatus,
                message: "HTTP 503".into(),
            });
        }
        SampleRow {
            session_id: "s".into(),
            phase,
            dest: Destination::App {
                path: Some(path.into()),
            },
            concurrency: None,
            intended_start_ms: None,
            actual_start_ms: 0.0,
            started_at: UtcTime::from(std::time::SystemTime::UNIX_EPOCH),
            provenance: Provenance::Measured,
            prompt: None,
            sample: s,
        }
    }

    fn protocol() -> Protocol {
        let p = Planned {
            phase: PhaseKind::Warm,
            dest: Dest::App(0),
            fresh: false,
            concurrency: None,
            prompt: 0,
        };
        Protocol {
            steps: vec![Step::One(p); 4],
        }
    }

    #[test]
    fn samples_land_in_their_group_and_failures_are_kept_with_their_message() {
        let mut s = LiveState::new(&protocol(), Some(1.0));
        assert_eq!(s.planned, vec![(PhaseKind::Warm, 4)]);
        s.record(&row(PhaseKind::Warm, "chat", Some(100.0), true), 0.0);
        s.record(&row(PhaseKind::Warm, "chat", Some(120.0), false), 0.1);
        s.record(&row(PhaseKind::Warm, "chat", None, false), 0.2);
        s.record(&row(PhaseKind::Warm, "docs", Some(90.0), false), 0.3);
        assert_eq!(s.stored, 4);
        assert_eq!(s.done(), 3);
        assert_eq!(s.done_in(PhaseKind::Warm), 3);
        let mut ping = row(PhaseKind::Ping, "ping", Some(1.0), false);
        ping.dest = Destination::Ping;
        s.record(&ping, 0.3);
        assert_eq!(s.groups[2].0, "ping");
        assert_eq!(s.done_in(PhaseKind::Ping), 1);
        assert_eq!(s.groups[0].0, "warm · chat");
        let chat = &s.groups[0].1;
        assert_eq!((chat.done, chat.warmups, chat.failed), (2, 1, 1));
        assert_eq!(chat.ttft_ms, [120.0]);
        assert_eq!(s.errors["http_status"], 1);
        assert_eq!(s.last_errors[0].message, "HTTP 503");
        assert_eq!(s.spent_usd, 0.3);
    }

    #[test]
    fn the_last_errors_are_bounded() {
        let mut s = LiveState::new(&protocol(), None);
        for _ in 0..(LAST_ERRORS + 3) {
            s.record(&row(PhaseKind::Warm, "chat", None, false), 0.0);
        }
        assert_eq!(s.last_errors.len(), LAST_ERRORS);
        assert_eq!(s.errors["http_status"], (LAST_ERRORS + 3) as u64);
    }

    #[test]
    fn a_histogram_spreads_values_between_their_extremes() {
        assert_eq!(histogram(&[1.0, 2.0, 3.0, 4.0], 2), vec![2, 2]);
        assert_eq!(histogram(&[5.0, 5.0], 3), vec![2, 0, 0]);
        assert_eq!(histogram(&[], 3), vec![0, 0, 0]);
    }
}

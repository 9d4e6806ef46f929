//! The measuring client's own clock, per session: which clock stamped the
//! arrivals (kernel receive timestamps or user-space reads), how far behind
//! the kernel the client handled the first content token (*client lag*),
//! and how often that token shared its socket read with other events.
//!
//! Client lag is the time from the kernel's receive stamp to the moment
//! the request's task handled the chunk. A kernel-stamped TTFT does not
//! include it, so a lagging client's own numbers stay right; but a client
//! that is that far behind also sends its requests late, so the session is
//! flagged as overloaded when the 99th percentile of its lag lies above
//! [`CLIENT_LAG_THRESHOLD_MS`]. The verdict follows the interval: the
//! p99's exact bootstrap CI (as every percentile here, see
//! [`crate::bootstrap`]) is judged against the threshold with
//! [`Direction::of`]: `Increase` (overloaded) only when the whole interval
//! lies above it, `Decrease` when it lies below, and too few samples below
//! n = 100.

use firsttoken_record::Clock;
use firsttoken_record::session::SessionMeta;
use serde::Serialize;

use crate::Settings;
use crate::bootstrap::percentile_stat;
use crate::estimate::{Percentile, Stat};
use crate::finding::Direction;
use crate::frame::Frame;
use crate::samples::Samples;

/// Client lag (p99, ms) above which a session's client counts as
/// overloaded. A few milliseconds is what a busy but healthy client
/// shows at hundreds of streams on two cores (docs/PERFORMANCE.md).
pub const CLIENT_LAG_THRESHOLD_MS: f64 = 5.0;

/// One session's client clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionClock {
    /// The session.
    pub session: String,
    /// Counted, successful requests whose arrivals were kernel-stamped.
    pub kernel: usize,
    /// … and those stamped in user space.
    pub user: usize,
    /// Requests with a client lag.
    pub lag_n: usize,
    /// Client lag p50, ms.
    pub lag_p50: Stat,
    /// Client lag p99, ms.
    pub lag_p99: Stat,
    /// The p99 against [`CLIENT_LAG_THRESHOLD_MS`]: `Increase` = overloaded.
    pub verdict: Direction,
    /// Requests whose first content token shared its read with other events.
    pub shared_read: usize,
    /// Requests that recorded how many events their first token's read held.
    pub read_counted: usize,
    /// The session's open-loop start lag p99, ms, when recorded.
    pub start_lag_p99_ms: Option<f64>,
}

/// The client clock of every session with a recorded clock or start lag.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientClock {
    /// The threshold the verdicts use, ms.
    pub threshold_ms: f64,
    /// Sessions in first-seen order.
    pub sessions: Vec<SessionClock>,
}

impl ClientClock {
    /// The sessions judged overloaded.
    pub fn overloaded(&self) -> impl Iterator<Item = &SessionClock> {
        self.sessions
            .iter()
            .filter(|s| s.verdict == Direction::Increase)
    }
}

/// Per-session client clock over the frame's counted, successful rows.
pub fn client_clock(frame: &Frame, sessions: &[SessionMeta], settings: &Settings) -> ClientClock {
    let n = frame.sessions.len();
    let mut kernel = vec![0usize; n];
    let mut user = vec![0usize; n];
    let mut shared = vec![0usize; n];
    let mut counted = vec![0usize; n];
    let mut lags: Vec<Vec<f64>> = vec![Vec::new(); n];
    for o in frame.obs.iter() {
        if !o.timed() {
            continue;
        }
        let s = o.session as usize;
        match o.clock {
            Some(Clock::Kernel) => kernel[s] += 1,
            Some(Clock::User) => user[s] += 1,
            None => {}
        }
        if o.ttft_read_events > 0 {
            counted[s] += 1;
            if o.ttft_read_events > 1 {
                shared[s] += 1;
            }
        }
        if o.client_lag.is_finite() {
            lags[s].push(f64::from(o.client_lag));
        }
    }
    let mut out = Vec::new();
    for (i, fs) in frame.sessions.iter().enumerate() {
        let start_lag = sessions
            .iter()
            .find(|m| m.id == fs.id)
            .and_then(|m| m.client_lag_p99_ms);
        if kernel[i] + user[i] == 0 && start_lag.is_none() {
            continue;
        }
        let lag_n = lags[i].len();
        let samples = Samples::from_finite(std::mem::take(&mut lags[i]));
        let lag_p99 = percentile_stat(&samples, Percentile::P99, settings);
        out.push(SessionClock {
            session: fs.id.clone(),
            kernel: kernel[i],
            user: user[i],
            lag_n,
            lag_p50: percentile_stat(&samples, Percentile::P50, settings),
            lag_p99,
            verdict: Direction::of(&lag_p99, CLIENT_LAG_THRESHOLD_MS, 0.0, 0.0),
            shared_read: shared[i],
            read_counted: counted[i],
            start_lag_p99_ms: start_lag,
        });
    }
    ClientClock {
        threshold_ms: CLIENT_LAG_THRESHOLD_MS,
        sessions: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{meta, row};
    use firsttoken_record::session::Provenance;

    fn frame_with(lags: &[f64], clock: Clock) -> (Frame, Vec<SessionMeta>) {
        let meta = meta("s1", Provenance::Measured);
        let rows: Vec<_> = lags
            .iter()
            .enumerate()
            .map(|(i, &lag)| {
                let mut r = row("s1", "warm", None, Some(200.0));
                r.sample.seq = i as u64;
                r.sample.clock = Some(clock);
                r.sample.client_lag_ms = (clock == Clock::Kernel).then_some(lag);
                r.sample.ttft_read_events = Some(if i % 4 == 0 { 2 } else { 1 });
                r
            })
            .collect();
        let metas = vec![meta];
        (Frame::from_rows(&rows, &metas).unwrap(), metas)
    }

    #[test]
    fn a_lagging_client_is_flagged_and_a_quick_one_is_not() {
        let settings = Settings::new(7);
        let slow: Vec<f64> = (0..200).map(|i| 20.0 + f64::from(i % 10)).collect();
        let (f, m) = frame_with(&slow, Clock::Kernel);
        let c = client_clock(&f, &m, &settings);
        let s = &c.sessions[0];
        assert_eq!((s.kernel, s.user, s.lag_n), (200, 0, 200));
        assert_eq!(s.verdict, Direction::Increase);
        assert_eq!((s.shared_read, s.read_counted), (50, 200));
        assert_eq!(c.overloaded().count(), 1);

        let quick: Vec<f64> = (0..200).map(|i| 0.05 + f64::from(i % 10) * 0.01).collect();
        let (f, m) = frame_with(&quick, Clock::Kernel);
        let c = client_clock(&f, &m, &settings);
        assert_eq!(c.sessions[0].verdict, Direction::Decrease);
        assert_eq!(c.overloaded().count(), 0);
    }

    #[test]
    fn too_few_or_user_clock_samples_are_not_judged() {
        let settings = Settings::new(7);
        let (f, m) = frame_with(&[30.0; 20], Clock::Kernel);
        let c = client_clock(&f, &m, &settings);
        assert_eq!(c.sessions[0].verdict, Direction::TooFewSamples);
        let (f, m) = frame_with(&[30.0; 200], Clock::User);
        let c = client_clock(&f, &m, &settings);
        let s = &c.sessions[0];
        assert_eq!((s.kernel, s.user, s.lag_n), (0, 200, 0));
        assert_eq!(s.verdict, Direction::TooFewSamples);
    }
}

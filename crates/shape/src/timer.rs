//! Wake-ups at exact instants.
//!
//! Tokio's timer works in whole milliseconds and rounds every deadline up
//! to the next tick ("Sleep operates at millisecond granularity and should
//! not be used for tasks that require high-resolution timers", tokio's
//! `time::sleep` docs), so each delayed read would leave up to 1 ms late and
//! a round trip through the relay would gain up to 2 ms on top of the
//! setting. One thread per relay keeps the pending deadlines in a heap and
//! sleeps on the nearest with the OS's nanosecond timeout (a futex on
//! Linux), then completes a oneshot that wakes the waiting task.
//!
//! Even so a wake-up comes late: the OS's timer slack and the hand-over to
//! a tokio worker cost 0.1–0.4 ms on a loaded 2-core machine, and more
//! after longer idle spells. So the thread fires a little early, by an
//! offset that a feedback loop keeps at the observed lateness: every
//! waiter reports how late (or early) it woke and the offset moves an
//! eighth of the way, within 0–1 ms. Wake-ups are then centred on their
//! deadlines rather than always behind them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// A pending wake-up; ordered by deadline, then by arrival.
struct Entry {
    at: Instant,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// A handle on the timer thread; the thread ends when every handle is
/// dropped and no wake-up is pending.
#[derive(Clone)]
pub(crate) struct Timer {
    tx: mpsc::Sender<(Instant, oneshot::Sender<()>)>,
    /// How early the thread fires, in nanoseconds (0 to [`MAX_OFFSET_NS`]).
    offset_ns: Arc<AtomicI64>,
}

/// The most the thread fires ahead of a deadline.
const MAX_OFFSET_NS: i64 = 1_000_000;
/// The largest lateness one wake-up reports to the feedback loop.
const MAX_STEP_NS: i64 = 250_000;

impl Timer {
    /// Start the timer thread.
    pub(crate) fn start() -> std::io::Result<Timer> {
        let (tx, rx) = mpsc::channel();
        let offset_ns = Arc::new(AtomicI64::new(0));
        let offset = offset_ns.clone();
        std::thread::Builder::new()
            .name("firsttoken-shape-timer".into())
            .spawn(move || run(rx, &offset))?;
        Ok(Timer { tx, offset_ns })
    }

    /// Wait until `at` (returns at once when it has passed).
    pub(crate) async fn sleep_until(&self, at: Instant) {
        if at <= Instant::now() {
            return;
        }
        let (wake, woken) = oneshot::channel();
        if self.tx.send((at, wake)).is_err() {
            // The thread is gone (it only ends when every handle is
            // dropped, so this is unreachable while `self` lives); fall back
            // to tokio's coarser timer rather than not waiting.
            tokio::time::sleep_until(at.into()).await;
            return;
        }
        // The sender is dropped only after it fired, or when the thread
        // died; either way the deadline has passed or cannot be kept.
        let _ = woken.await;
        let now = Instant::now();
        let late_ns = if now >= at {
            i64::try_from((now - at).as_nanos()).unwrap_or(MAX_OFFSET_NS)
        } else {
            -i64::try_from((at - now).as_nanos()).unwrap_or(MAX_OFFSET_NS)
        };
        // One outlier (a stalled worker) moves the offset by at most 31 µs:
        // the loop tracks the typical lateness, not the worst.
        let step = late_ns.clamp(-MAX_STEP_NS, MAX_STEP_NS) / 8;
        let old = self.offset_ns.load(Ordering::Relaxed);
        let new = (old + step).clamp(0, MAX_OFFSET_NS);
        self.offset_ns.store(new, Ordering::Relaxed);
    }
}

fn run(rx: mpsc::Receiver<(Instant, oneshot::Sender<()>)>, offset_ns: &AtomicI64) {
    let mut heap: BinaryHeap<Reverse<Entry>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut open = true;
    loop {
        let offset = Duration::from_nanos(offset_ns.load(Ordering::Relaxed).unsigned_abs());
        // Everything due within the offset fires now.
        let now = Instant::now() + offset;
        while heap.peek().is_some_and(|Reverse(e)| e.at <= now) {
            if let Some(Reverse(e)) = heap.pop() {
                // The waiter may have gone (its connection closed): fine.
                let _ = e.wake.send(());
            }
        }
        let next = heap.peek().map(|Reverse(e)| e.at);
        let got = match (next, open) {
            (Some(at), true) => match rx.recv_timeout(at.saturating_duration_since(now)) {
                Ok(x) => Some(x),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    open = false;
                    None
                }
            },
            (Some(at), false) => {
                std::thread::sleep(at.saturating_duration_since(now));
                None
            }
            (None, true) => match rx.recv() {
                Ok(x) => Some(x),
                Err(_) => return,
            },
            (None, false) => return,
        };
        if let Some((at, wake)) = got {
            seq += 1;
            heap.push(Reverse(Entry { at, seq, wake }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_near_each_deadline_never_a_millisecond_early() {
        let timer = Timer::start().unwrap();
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for ms in [30u64, 10, 20, 0] {
            let t = timer.clone();
            let at = t0 + Duration::from_millis(ms);
            tasks.push(tokio::spawn(async move {
                t.sleep_until(at).await;
                Instant::now() + Duration::from_nanos(MAX_OFFSET_NS as u64) >= at
            }));
        }
        for task in tasks {
            assert!(task.await.unwrap(), "woken more than the offset early");
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn feedback_centres_wake_ups_on_their_deadlines() {
        let timer = Timer::start().unwrap();
        let mut late_us = Vec::new();
        for _ in 0..60 {
            let at = Instant::now() + Duration::from_millis(3);
            timer.sleep_until(at).await;
            let now = Instant::now();
            late_us.push(if now >= at {
                (now - at).as_secs_f64() * 1e6
            } else {
                -(at - now).as_secs_f64() * 1e6
            });
        }
        let mut tail = late_us[30..].to_vec();
        tail.sort_by(f64::total_cmp);
        let median = tail[tail.len() / 2];
        eprintln!(
            "median lateness after settling: {median:.0} us (first wake-up {:.0} us)",
            late_us[0]
        );
        assert!(median.abs() < 500.0, "median lateness {median:.0} us");
    }
}

//! Wake-ups at exact instants.
//!
//! Tokio's timer works in whole milliseconds and rounds every deadline up
//! to the next tick ("Sleep operates at millisecond granularity and should
//! not be used for tasks that require high-resolution timers", tokio's
//! `time::sleep` docs), so each delayed read would leave up to 1 ms late and
//! a round trip through the relay would gain up to 2 ms on top of the
//! setting. One thread per relay keeps the pending deadlines in a heap and
//! sleeps on the nearest with the OS's nanosecond timeout (a futex on
//! Linux, subject to the default 50 µs timer slack), then completes a
//! oneshot that wakes the waiting task.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc;
use std::time::Instant;

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
}

impl Timer {
    /// Start the timer thread.
    pub(crate) fn start() -> std::io::Result<Timer> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("firsttoken-shape-timer".into())
            .spawn(move || run(rx))?;
        Ok(Timer { tx })
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
    }
}

fn run(rx: mpsc::Receiver<(Instant, oneshot::Sender<()>)>) {
    let mut heap: BinaryHeap<Reverse<Entry>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut open = true;
    loop {
        let now = Instant::now();
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
    use std::time::Duration;

    #[tokio::test]
    async fn wakes_in_deadline_order_and_not_early() {
        let timer = Timer::start().unwrap();
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for ms in [30u64, 10, 20, 0] {
            let t = timer.clone();
            let at = t0 + Duration::from_millis(ms);
            tasks.push(tokio::spawn(async move {
                t.sleep_until(at).await;
                Instant::now() >= at
            }));
        }
        for task in tasks {
            assert!(task.await.unwrap(), "woken before its deadline");
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}

//! Run-time state of the emulated providers: serial-mode locks and
//! cold-start trackers.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::profile::Provider;

/// When something was last busy, to tell a cold start from a warm one.
#[derive(Debug, Default)]
pub(crate) struct Warmth {
    last: Mutex<Option<Instant>>,
}

impl Warmth {
    /// Whether a request starting `now` is cold (the very first one, or the
    /// first after an idle gap of at least `gap`); marks it busy now.
    pub fn begin(&self, now: Instant, gap: Duration) -> bool {
        // A poisoned lock only means another request panicked while holding
        // it; the instant inside is still meaningful.
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let cold = last.is_none_or(|t| now.saturating_duration_since(t) >= gap);
        *last = Some(last.map_or(now, |t| t.max(now)));
        cold
    }

    /// Marks it busy now (a response ended).
    pub fn touch(&self, now: Instant) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        *last = Some(last.map_or(now, |t| t.max(now)));
    }
}

/// A single-worker lock: one request at a time, the rest queue in order.
#[derive(Debug, Clone)]
pub(crate) struct Serial(Arc<Semaphore>);

impl Serial {
    pub fn new() -> Serial {
        Serial(Arc::new(Semaphore::new(1)))
    }

    /// Wait for the worker. `None` only if the lock was closed, which never
    /// happens: the emulator never closes it.
    pub async fn acquire(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().acquire_owned().await.ok()
    }
}

/// What a response holds until its body ends: serial-mode permits, and the
/// warmth trackers to mark busy when it ends.
#[derive(Debug, Default)]
pub(crate) struct Hold {
    pub permits: Vec<OwnedSemaphorePermit>,
    pub warmth: Vec<Arc<Warmth>>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let now = Instant::now();
        for w in &self.warmth {
            w.touch(now);
        }
    }
}

/// One provider with its run-time state.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub spec: Provider,
    pub serial: Option<Serial>,
    pub warmth: Arc<Warmth>,
}

impl Upstream {
    pub fn new(spec: Provider) -> Upstream {
        Upstream {
            serial: spec.serial.then(Serial::new),
            spec,
            warmth: Arc::new(Warmth::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_request_and_after_a_gap_are_cold() {
        let w = Warmth::default();
        let t0 = Instant::now();
        let gap = Duration::from_secs(10);
        assert!(w.begin(t0, gap));
        assert!(!w.begin(t0 + Duration::from_secs(5), gap));
        w.touch(t0 + Duration::from_secs(12));
        assert!(!w.begin(t0 + Duration::from_secs(20), gap));
        assert!(w.begin(t0 + Duration::from_secs(31), gap));
    }
}

//! Holding a session between steps: the switch a live view's `p` flips.
//!
//! A [`Pause`] wraps the session's budget gate ([`Paused`]): while it is
//! on, drive's executor waits before starting its next step (requests in
//! flight finish and are stored; a burst or an open-loop schedule is never
//! stretched, since each is timed from its own step's start). Cancellation
//! still ends a paused session at once.
//!
//! ```
//! let p = firsttoken_session::Pause::new();
//! assert!(!p.is_paused());
//! assert!(p.toggle());
//! assert!(p.is_paused());
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use firsttoken_drive::{Gate, GateAnswer, StepWait};
use firsttoken_plan::protocol::Dest;
use tokio::sync::watch;

/// A shared on/off switch; clones flip the same switch. It also counts the
/// requests its gate let start (warm-ups included), so a live view can show
/// how many are in flight (started − stored).
#[derive(Debug, Clone)]
pub struct Pause {
    tx: Arc<watch::Sender<bool>>,
    started: Arc<AtomicU64>,
}

impl Default for Pause {
    fn default() -> Pause {
        Pause::new()
    }
}

impl Pause {
    /// A switch, off.
    pub fn new() -> Pause {
        Pause {
            tx: Arc::new(watch::Sender::new(false)),
            started: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Turn it on or off.
    pub fn set(&self, paused: bool) {
        self.tx.send_replace(paused);
    }

    /// Flip it; returns the new state (`true`: paused).
    pub fn toggle(&self) -> bool {
        let mut now = false;
        self.tx.send_modify(|p| {
            *p = !*p;
            now = *p;
        });
        now
    }

    /// Requests let start so far, warm-ups included.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// `inner` wrapped so that it waits for this switch between steps and
    /// counts the requests it lets start ([`Pause::started`]).
    pub fn gate(&self, inner: Arc<dyn Gate>) -> Arc<dyn Gate> {
        Arc::new(Paused {
            inner,
            pause: self.clone(),
        })
    }

    /// True while on.
    pub fn is_paused(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once the switch is off.
    pub async fn resumed(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives in `self`, so the channel cannot close here.
        let _ = rx.wait_for(|paused| !*paused).await;
    }
}

/// A gate that asks `inner` about every launch and waits for `pause` to be
/// off before every step.
pub(crate) struct Paused {
    pub(crate) inner: Arc<dyn Gate>,
    pub(crate) pause: Pause,
}

impl Gate for Paused {
    fn allows<'a>(&'a self, requests: &'a [Dest]) -> GateAnswer<'a> {
        Box::pin(async move {
            let ok = self.inner.allows(requests).await;
            if ok {
                let n = u64::try_from(requests.len()).unwrap_or(u64::MAX);
                self.pause.started.fetch_add(n, Ordering::Relaxed);
            }
            ok
        })
    }

    fn between_steps(&self) -> StepWait<'_> {
        Box::pin(async move {
            self.inner.between_steps().await;
            self.pause.resumed().await;
        })
    }

    fn release(&self) -> StepWait<'_> {
        self.inner.release()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_paused_gate_waits_between_steps_until_resumed() {
        let pause = Pause::new();
        let gate = Paused {
            inner: Arc::new(firsttoken_drive::Unlimited),
            pause: pause.clone(),
        };
        // Off: no wait.
        tokio::time::timeout(Duration::from_secs(1), gate.between_steps())
            .await
            .expect("no wait while off");
        pause.set(true);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), gate.between_steps())
                .await
                .is_err(),
            "waits while on"
        );
        let p = pause.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!p.toggle());
        });
        tokio::time::timeout(Duration::from_secs(5), gate.between_steps())
            .await
            .expect("resumes once off");
        // Launches are the inner gate's business, paused or not.
        pause.set(true);
        assert!(gate.allows(&[Dest::App(0), Dest::App(0)]).await);
        assert_eq!(pause.started(), 2);
    }
}

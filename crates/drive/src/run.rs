//! The probe's workers: `-c N` tasks, each owning at most one connection,
//! taking request numbers from a shared counter until all are done or the
//! run is cancelled. Every finished request is sent as a [`Sample`] over a
//! bounded channel; the run ends when the channel closes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use firsttoken_plan::{ConnectionMode, ProbeSpec};
use firsttoken_record::Sample;

use crate::DriveError;
use crate::slot::Slot;

/// Run `spec` to completion (or until `cancel`), sending each sample to `tx`.
/// Warm-up samples (one per worker in warm mode) come first from each worker
/// and carry `warmup: true`.
///
/// Returns an error only for a spec that cannot run at all (e.g. an unusable
/// CA file); failed requests are samples.
pub async fn run_probe(
    spec: ProbeSpec,
    tx: mpsc::Sender<Sample>,
    cancel: CancellationToken,
) -> Result<(), DriveError> {
    let spec = Arc::new(spec);
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..spec.concurrency {
        let worker = Worker {
            id: w,
            spec: spec.clone(),
            slot: Slot::new(&spec)?,
            next: next.clone(),
            tx: tx.clone(),
            cancel: cancel.clone(),
        };
        workers.spawn(worker.run());
    }
    drop(tx);
    while workers.join_next().await.is_some() {}
    Ok(())
}

/// `f`'s sample, or `None` when the run is cancelled first (an interrupted
/// request is not a measurement).
async fn cancellable<F: std::future::Future<Output = Sample>>(
    cancel: &CancellationToken,
    f: F,
) -> Option<Sample> {
    tokio::select! {
        _ = cancel.cancelled() => None,
        s = f => Some(s),
    }
}

struct Worker {
    id: u32,
    spec: Arc<ProbeSpec>,
    slot: Slot,
    next: Arc<AtomicU64>,
    tx: mpsc::Sender<Sample>,
    cancel: CancellationToken,
}

impl Worker {
    async fn run(mut self) {
        if self.spec.mode == ConnectionMode::Warm {
            let cancel = self.cancel.clone();
            let Some(mut sample) = cancellable(&cancel, self.request(u64::from(self.id))).await
            else {
                return;
            };
            sample.warmup = true;
            if self.tx.send(sample).await.is_err() {
                return;
            }
        }
        loop {
            if self.cancel.is_cancelled() {
                return;
            }
            let seq = self.next.fetch_add(1, Ordering::Relaxed);
            if seq >= self.spec.requests {
                return;
            }
            let cancel = self.cancel.clone();
            let Some(sample) = cancellable(&cancel, self.request(seq)).await else {
                return;
            };
            if self.tx.send(sample).await.is_err() {
                return;
            }
        }
    }

    /// One request on the worker's slot: fresh mode opens a new connection
    /// every time; warm mode reuses it while the server keeps it open.
    async fn request(&mut self, seq: u64) -> Sample {
        let fresh = self.spec.mode == ConnectionMode::Fresh;
        self.slot
            .send(&self.spec.request, fresh, seq, self.id)
            .await
    }
}

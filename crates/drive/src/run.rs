//! The probe's workers: `-c N` tasks, each owning at most one connection,
//! taking request numbers from a shared counter until all are done or the
//! run is cancelled. Every finished request is sent as a [`Sample`] over a
//! bounded channel; the run ends when the channel closes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use firsttoken_plan::{ConnectionMode, ProbeSpec};
use firsttoken_record::{Connection, Sample};

use crate::DriveError;
use crate::connect::{Conn, Connector};
use crate::request::{Stamps, build_request, exchange};

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
    let connector = Connector::new(&spec)?;
    let spec = Arc::new(spec);
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..spec.concurrency {
        let worker = Worker {
            id: w,
            spec: spec.clone(),
            connector: connector.clone(),
            next: next.clone(),
            tx: tx.clone(),
            cancel: cancel.clone(),
            conn: None,
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
    connector: Connector,
    next: Arc<AtomicU64>,
    tx: mpsc::Sender<Sample>,
    cancel: CancellationToken,
    conn: Option<Conn>,
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

    /// One request: reuse the worker's connection when warm and still open,
    /// else open a new one (stamped as part of this request).
    async fn request(&mut self, seq: u64) -> Sample {
        let warm = self.spec.mode == ConnectionMode::Warm;
        let reusable = match self.conn.as_mut() {
            Some(c) if warm => c.ready().await,
            _ => false,
        };
        if !reusable {
            self.conn = None;
        }
        let start = Instant::now();
        let deadline = tokio::time::Instant::from_std(start + self.spec.timeouts.request);
        let mut st = Stamps::new(start);
        let connection = if reusable {
            Connection::Reused
        } else {
            Connection::Fresh
        };
        if !reusable {
            let connect_deadline =
                tokio::time::Instant::from_std(start + self.spec.timeouts.connect);
            let opened = tokio::time::timeout_at(
                connect_deadline.min(deadline),
                self.connector.open(&mut st.setup),
            )
            .await;
            match opened {
                Ok(Ok(c)) => self.conn = Some(c),
                Ok(Err(f)) => {
                    st.fail(f);
                    return st.into_sample(seq, self.id, connection);
                }
                Err(_) => {
                    let phase = if st.setup.connect.is_some() {
                        "the TLS or HTTP handshake"
                    } else if st.setup.dns.is_some() || self.spec.resolved_addr().is_some() {
                        "the TCP connect"
                    } else {
                        "DNS or the TCP connect"
                    };
                    st.fail(crate::Failure::new(
                        firsttoken_record::ErrorKind::Timeout,
                        format!(
                            "connect timed out after {:?} during {phase}",
                            self.spec.timeouts.connect
                        ),
                    ));
                    return st.into_sample(seq, self.id, connection);
                }
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            return st.into_sample(seq, self.id, connection);
        };
        match build_request(&self.spec.request, conn.http2) {
            Ok(req) => exchange(conn, req, &self.spec.format, deadline, &mut st).await,
            Err(f) => st.fail(f),
        }
        // A failed exchange leaves the connection in an unknown state.
        if st.error.is_some() || !warm {
            self.conn = None;
        }
        st.into_sample(seq, self.id, connection)
    }
}

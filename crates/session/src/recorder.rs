//! The one recorder loop: each finished request is priced, stored, and only
//! then charged to the budget and shown to the observer. A crash loses only
//! requests in flight.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use firsttoken_drive::SessionSample;
use firsttoken_plan::config::Config;
use firsttoken_plan::protocol::Dest;
use firsttoken_record::session::{Provenance, SampleRow};
use firsttoken_record::{Destination, Store, UtcTime};

use crate::{Budget, Observer, Source, price};

/// What the recorder kept and counted.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    /// Every stored row, warm-ups included.
    pub rows: Vec<SampleRow>,
    /// Counted (non-warm-up) requests stored.
    pub done: u64,
    /// Of those, failed ones.
    pub failed: u64,
    /// Scheduling lag of open-loop requests (actual − intended start), ms.
    pub lags_ms: Vec<f64>,
    /// The store failed; the run was cancelled.
    pub store_error: Option<String>,
}

/// Where the recorder writes and how it names destinations.
pub(crate) struct Recorder<'a> {
    pub store: &'a Store,
    pub session_id: &'a str,
    pub provenance: Provenance,
    pub config: &'a Config,
    pub paths: &'a [String],
    pub strategies: &'a [String],
    pub budget: &'a Budget,
    /// The session's requests, to name each sample's prompt.
    pub source: &'a Source,
}

impl Recorder<'_> {
    fn row(&self, s: SessionSample) -> SampleRow {
        let dest = match s.planned.dest {
            Dest::App(i) => Destination::App {
                path: self.paths.get(i).cloned(),
            },
            Dest::Direct(i) => Destination::Direct {
                strategy: self.strategies.get(i).cloned(),
            },
            Dest::Ping => Destination::Ping,
        };
        SampleRow {
            session_id: self.session_id.to_string(),
            phase: s.planned.phase,
            dest,
            concurrency: s.planned.concurrency,
            intended_start_ms: s.intended_start.map(ms),
            actual_start_ms: ms(s.actual_start),
            started_at: UtcTime::from(s.started_at),
            provenance: self.provenance,
            prompt: self.source.prompt_of(&s.planned),
            sample: s.sample,
        }
    }

    /// Take samples until the channel closes; on a store error cancel `run`
    /// (the executor) and stop.
    pub async fn run(
        &self,
        mut rx: mpsc::Receiver<SessionSample>,
        run: &CancellationToken,
        observer: &mut dyn Observer,
    ) -> Recorded {
        let mut out = Recorded::default();
        while let Some(mut s) = rx.recv().await {
            price(self.config, &s.planned, &mut s.sample);
            if let (Some(i), false) = (s.intended_start, s.sample.warmup) {
                out.lags_ms.push(ms(s.actual_start) - ms(i));
            }
            let (dest, cost) = (s.planned.dest, s.sample.cost_usd);
            let row = self.row(s);
            if let Err(e) = self.store.append_sample(&row).await {
                out.store_error = Some(format!("the store cannot be written: {e}"));
                run.cancel();
                break;
            }
            // Settled only once stored: what the budget counts is what was spent.
            self.budget.settle(dest, cost);
            if !row.sample.warmup {
                out.done += 1;
                out.failed += u64::from(!row.sample.is_ok());
            }
            observer.recorded(&row, self.budget.spent());
            out.rows.push(row);
        }
        out
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

//! The probe: a protocol of one closed-loop step (`-c` workers sharing `-n`
//! requests, never more workers than requests) run by the step executor.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use firsttoken_plan::protocol::{Dest, Planned, Protocol};
use firsttoken_plan::{ProbeSpec, RequestTemplate};
use firsttoken_record::Sample;

use crate::DriveError;
use crate::exec::{Finished, Gate, RequestSource, Unlimited, execute};

/// The probe's one request, whatever is planned.
struct Probe(ProbeSpec);

impl RequestSource for Probe {
    fn spec(&self, _dest: Dest) -> &ProbeSpec {
        &self.0
    }
    fn request(&self, _planned: &Planned) -> RequestTemplate {
        self.0.request.clone()
    }
}

/// Run `spec` to completion (or until `cancel`), sending each sample to `tx`.
/// In warm mode each worker first sends a warm-up request, `warmup: true`.
///
/// Returns an error for a spec that cannot run at all (e.g. an unusable
/// CA file) or when a worker panicked; failed requests are samples.
pub async fn run_probe(
    spec: ProbeSpec,
    tx: mpsc::Sender<Sample>,
    cancel: CancellationToken,
) -> Result<Finished, DriveError> {
    run_probe_gated(spec, tx, cancel, Arc::new(Unlimited)).await
}

/// [`run_probe`] asking `gate` before every launch (a live view counts the
/// requests it lets start, to show how many are in flight).
pub async fn run_probe_gated(
    spec: ProbeSpec,
    tx: mpsc::Sender<Sample>,
    cancel: CancellationToken,
    gate: Arc<dyn Gate>,
) -> Result<Finished, DriveError> {
    let protocol = Protocol::probe(&spec);
    execute(&protocol, Arc::new(Probe(spec)), gate, tx, cancel).await
}

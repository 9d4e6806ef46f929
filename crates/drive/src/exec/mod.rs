//! The step executor: one engine runs every kind of [`Step`] of a
//! [`Protocol`] — single requests, idle-gap probes, bursts that start
//! together, open-loop arrivals and closed-loop workers (the probe is a
//! protocol with one closed-loop step, see [`crate::run_probe`]).
//!
//! A step becomes a schedule of launches (`step.rs`); each launch is a
//! *lane*: one slot sending an optional warm-up and then one measured
//! request (`lane.rs`). One loop per step launches lanes when they are due
//! and joins them; a closed-loop worker is a lane launched again on the
//! same slot when its previous request ended. So warm-up, cancellation,
//! sample emission and the budget question each exist once:
//!
//! - **Warm-up**: a warm request whose slot has no open connection is
//!   preceded by a warm-up on that slot (`warmup: true`), except open-loop
//!   arrivals (it would delay their intended start) and closed-loop
//!   requests after a worker's first. [`Protocol::warmups`] counts them
//!   while connections stay open; [`Protocol::max_warmups`] bounds them.
//! - **Budget**: before a launch the executor asks the [`Gate`] whether its
//!   requests (warm-ups included) may start; a burst is asked as a whole.
//!   drive only asks; whoever prices the samples charges.
//! - **Cancellation**: every request races the cancellation token. After
//!   cancel, a request in flight is abandoned (not a measurement, not
//!   emitted) and counted in [`Finished::cancelled_in_flight`]; every lane
//!   is joined, so nothing keeps running or sending after the run returns.
//! - **Emission**: every finished request is sent as it completes over the
//!   bounded channel; the run ends when the channel closes.
//!
//! A panic in any lane cancels the others and is returned as
//! [`DriveError::Panicked`], never lost.
//!
//! The session clock is tokio's [`Instant`](tokio::time::Instant), so tests
//! can run the scheduler under a paused clock; request phases are stamped
//! on the monotonic clock inside the slot.

mod lane;
mod slots;
mod step;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use firsttoken_plan::protocol::{Dest, Planned, Protocol, Step};
use firsttoken_plan::{ProbeSpec, RequestTemplate};
use firsttoken_record::Sample;

use crate::DriveError;
use lane::Run;
use slots::Slots;

/// Builds the request for a planned request (prompt, auth token…).
pub trait RequestSource: Send + Sync {
    /// The connection spec of a destination: target, TLS, timeouts, format.
    fn spec(&self, dest: Dest) -> &ProbeSpec;
    /// The request to send for `planned`. For a flow, its `{name}`
    /// placeholders (the prompt's included) are still in it: the lane
    /// fills them, with the captured values, in one pass.
    fn request(&self, planned: &Planned) -> RequestTemplate;
    /// The earlier steps of `planned`'s flow and the variables known
    /// before them; `None` (the default) for a single request.
    fn flow(&self, _planned: &Planned) -> Option<firsttoken_plan::flow::Flow> {
        None
    }
    /// Called with the trace context of a request (warm-ups included)
    /// before it is sent, when its spec asks for trace context: a span
    /// receiver learns the trace ids that are the session's.
    fn traced(&self, _trace: &crate::trace::TraceContext) {}
}

/// Whether more requests may start: the budget. drive only asks, before
/// each launch; it never charges (the recorder prices each stored sample
/// and charges then). The answer may take time — a budget waits until the
/// costs of earlier requests are known — and drive races it against
/// cancellation.
pub trait Gate: Send + Sync {
    /// May these requests start? One destination per request, warm-ups included.
    fn allows<'a>(&'a self, requests: &'a [Dest]) -> GateAnswer<'a>;

    /// Resolves when the next step may begin: asked before every step, so a
    /// pause holds the run *between* steps and never stretches a burst or an
    /// open-loop schedule (both are timed from their own step's start).
    /// Raced against cancellation. The default never waits.
    fn between_steps(&self) -> StepWait<'_> {
        Box::pin(std::future::ready(()))
    }

    /// Resolves when a measured request may be sent: asked by every lane
    /// after its warm-up (and its burst's barrier), right before the
    /// request, so a common start (`run --start-at`) holds the first
    /// measured requests, not their warm-ups. Raced against cancellation.
    /// The default never waits.
    fn release(&self) -> StepWait<'_> {
        Box::pin(std::future::ready(()))
    }
}

/// What [`Gate::between_steps`] returns: resolves when the next step may begin.
pub type StepWait<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

/// A [`Gate`]'s answer, possibly after a wait.
pub type GateAnswer<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>>;

/// A [`Gate`] that always says yes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unlimited;

impl Gate for Unlimited {
    fn allows<'a>(&'a self, _requests: &'a [Dest]) -> GateAnswer<'a> {
        Box::pin(std::future::ready(true))
    }
}

/// One finished request of a session.
#[derive(Debug, Clone)]
pub struct SessionSample {
    /// What was planned.
    pub planned: Planned,
    /// The measurement.
    pub sample: Sample,
    /// Intended start, from the session start (open-loop arrivals only).
    pub intended_start: Option<Duration>,
    /// Actual start, from the session start.
    pub actual_start: Duration,
    /// Wall-clock start.
    pub started_at: SystemTime,
}

impl From<SessionSample> for Sample {
    fn from(s: SessionSample) -> Sample {
        s.sample
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stop {
    /// Every step ran.
    #[default]
    Complete,
    /// Cancelled (Ctrl-C, SIGTERM, a failed store…) or the receiver went away.
    Cancelled,
    /// The [`Gate`] said no.
    Budget,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Finished {
    /// Why it stopped.
    pub stop: Stop,
    /// Requests in flight when cancelled that were abandoned (not emitted,
    /// not stored): every started request is either emitted or counted here.
    pub cancelled_in_flight: u64,
}

/// Run `protocol`, sending each finished request to `tx` as it completes.
/// Stops early on `cancel` or when `gate` says no; what finished is sent.
///
/// Returns an error for a protocol that cannot run at all (an unusable CA
/// file) or when a task panicked; failed requests are samples.
pub async fn run_session<S: RequestSource + 'static>(
    protocol: &Protocol,
    source: Arc<S>,
    gate: Arc<dyn Gate>,
    tx: mpsc::Sender<SessionSample>,
    cancel: CancellationToken,
) -> Result<Finished, DriveError> {
    execute(protocol, source, gate, tx, cancel).await
}

/// The executor, for any output the samples convert into.
pub(crate) async fn execute<S, T>(
    protocol: &Protocol,
    source: Arc<S>,
    gate: Arc<dyn Gate>,
    tx: mpsc::Sender<T>,
    cancel: CancellationToken,
) -> Result<Finished, DriveError>
where
    S: RequestSource + 'static,
    T: From<SessionSample> + Send + 'static,
{
    // Every destination's endpoint (TLS configuration included) is built
    // before the first request, so a bad CA file fails before anything is sent.
    let mut slots = Slots::for_protocol(protocol, &*source)?;
    // The client's one-time TLS set-up happens here, outside every timed phase.
    tokio::select! {
        () = slots.prime() => {}
        () = cancel.cancelled() => return Ok(Finished { stop: Stop::Cancelled, cancelled_in_flight: 0 }),
    }
    let run = Arc::new(Run::new(source, gate, tx, cancel.child_token()));
    let mut base = 0u64;
    for step in &protocol.steps {
        if run.halted() || !run.between_steps().await {
            break;
        }
        step::drive(&run, &mut slots, step, base).await?;
        base = base.saturating_add(u64::try_from(step.len()).unwrap_or(u64::MAX));
    }
    Ok(run.finished(&cancel))
}

/// Every planned request of a step (a closed loop's template once).
fn planned(step: &Step) -> Box<dyn Iterator<Item = &Planned> + '_> {
    match step {
        Step::One(p) | Step::AfterIdle(_, p) => Box::new(std::iter::once(p)),
        Step::Closed { template, .. } => Box::new(std::iter::once(template)),
        Step::Burst(v) => Box::new(v.iter()),
        Step::Arrivals(v) => Box::new(v.iter().map(|(_, p)| p)),
        Step::Conversations(v) => Box::new(v.iter().flatten()),
    }
}

//! A lane: one slot sending an optional warm-up, then (after its burst's
//! barrier, if any) one measured request. Here, and only here, a request is
//! raced against cancellation, stamped on the session clock and emitted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use tokio::sync::{Barrier, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use firsttoken_plan::RequestTemplate;
use firsttoken_plan::flow::{Flow, TurnHistory};
use firsttoken_plan::protocol::{Dest, Planned};
use firsttoken_record::{Connection, ErrorKind, FlowStepTime, Sample, SampleError};

use super::slots::Home;
use super::{Finished, Gate, RequestSource, SessionSample, Stop};
use crate::conversation::Conversation;
use crate::flow::{StepFailed, run_steps};
use crate::slot::{Endpoint, Slot};
use crate::trace::{TRACEPARENT as TRACE_HEADER, TraceContext};

/// What every lane of a run shares.
pub(super) struct Run<S, T> {
    source: Arc<S>,
    gate: Arc<dyn Gate>,
    tx: mpsc::Sender<T>,
    /// Cancelled with the caller's token, after a panic or when the receiver
    /// is gone: requests in flight are abandoned.
    abandon: CancellationToken,
    /// Cancelled with `abandon` or by the gate: nothing new starts, requests
    /// in flight finish and are emitted.
    halt: CancellationToken,
    /// Why the run halted, when not by the caller's token.
    reason: OnceLock<Stop>,
    abandoned: AtomicU64,
    /// Session start on tokio's clock, and on the wall clock.
    origin: Instant,
    origin_wall: SystemTime,
}

/// One measured request's place: what, its numbers, where its slot lives.
#[derive(Debug, Clone)]
pub(super) struct Lane {
    pub planned: Planned,
    /// Sample sequence number (its warm-up shares it).
    pub seq: u64,
    /// Sample worker number: the slot's index.
    pub worker: u32,
    /// Intended start from the session start (open-loop arrivals).
    pub intended: Option<Duration>,
    /// Where its slot is kept between requests.
    pub home: Home,
}

impl<S, T> Run<S, T>
where
    S: RequestSource + 'static,
    T: From<SessionSample> + Send + 'static,
{
    pub(super) fn new(
        source: Arc<S>,
        gate: Arc<dyn Gate>,
        tx: mpsc::Sender<T>,
        abandon: CancellationToken,
    ) -> Run<S, T> {
        Run {
            source,
            gate,
            tx,
            halt: abandon.child_token(),
            abandon,
            reason: OnceLock::new(),
            abandoned: AtomicU64::new(0),
            origin: Instant::now(),
            origin_wall: SystemTime::now(),
        }
    }

    /// The session clock's start.
    pub(super) fn origin(&self) -> Instant {
        self.origin
    }

    /// True once nothing new may start.
    pub(super) fn halted(&self) -> bool {
        self.halt.is_cancelled()
    }

    /// Resolves when nothing new may start.
    pub(super) async fn halting(&self) {
        self.halt.cancelled().await;
    }

    /// Stop: `abandon` also drops the requests in flight.
    fn stop(&self, reason: Stop, abandon: bool) {
        let _ = self.reason.set(reason);
        if abandon {
            self.abandon.cancel();
        } else {
            self.halt.cancel();
        }
    }

    /// After a panic: abandon everything else.
    pub(super) fn abort(&self) {
        self.stop(Stop::Cancelled, true);
    }

    /// Wait until the gate lets the next step begin; `false` when the run
    /// halted meanwhile.
    pub(super) async fn between_steps(&self) -> bool {
        tokio::select! {
            () = self.halting() => false,
            () = self.gate.between_steps() => !self.halted(),
        }
    }

    /// The budget question, asked before every launch: may these requests
    /// (one destination each, warm-ups included) start? A halt while the
    /// gate deliberates is a no.
    pub(super) async fn admit(&self, requests: &[Dest]) -> bool {
        if self.halted() {
            return false;
        }
        let allowed = tokio::select! {
            () = self.halting() => return false,
            ok = self.gate.allows(requests) => ok,
        };
        if allowed {
            return true;
        }
        self.stop(Stop::Budget, false);
        false
    }

    /// How the run ended.
    pub(super) fn finished(&self, cancel: &CancellationToken) -> Finished {
        let stop = if cancel.is_cancelled() {
            Stop::Cancelled
        } else {
            self.reason.get().copied().unwrap_or(Stop::Complete)
        };
        Finished {
            stop,
            cancelled_in_flight: self.abandoned.load(Ordering::Relaxed),
        }
    }

    /// `f`'s output, or `None` once the run is abandoned.
    async fn unless_abandoned<F: Future>(&self, f: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            _ = self.abandon.cancelled() => None,
            out = f => Some(out),
        }
    }

    /// Send one request (a flow's steps first, when it has any) on
    /// `slot`, stamp it on the session clock and emit it. `None` when it
    /// was abandoned or nobody receives samples any more.
    async fn send(
        &self,
        slot: &mut Slot,
        lane: &Lane,
        request: &RequestTemplate,
        warmup: bool,
        trace: Option<&TraceContext>,
        flow: Option<&Flow>,
    ) -> Option<()> {
        let fresh = lane.planned.fresh && !warmup;
        let started = Instant::now();
        let sent = async {
            match flow {
                None => slot.send(request, fresh, lane.seq, lane.worker).await,
                Some(f) => send_flow(slot, lane, request, fresh, trace, f).await,
            }
        };
        let Some(mut sample) = self.unless_abandoned(sent).await else {
            self.abandoned.fetch_add(1, Ordering::Relaxed);
            // The exchange stopped half-way: its connection cannot be reused.
            slot.close();
            return None;
        };
        sample.warmup = warmup;
        sample.trace_id = trace.map(|t| t.trace_id.clone());
        let actual_start = started.saturating_duration_since(self.origin);
        let out = SessionSample {
            planned: lane.planned.clone(),
            sample,
            intended_start: lane.intended.filter(|_| !warmup),
            actual_start,
            started_at: self.origin_wall + actual_start,
        };
        if self.tx.send(T::from(out)).await.is_err() {
            self.stop(Stop::Cancelled, true);
            return None;
        }
        Some(())
    }
}

/// A flow (see [`send_steps`]); a conversation's turn continues the
/// conversation the slot's last turn left (a first turn starts a new one)
/// and leaves it for the next, whatever happened.
async fn send_flow(
    slot: &mut Slot,
    lane: &Lane,
    request: &RequestTemplate,
    fresh: bool,
    trace: Option<&TraceContext>,
    flow: &Flow,
) -> Sample {
    let Some(turn) = &flow.turn else {
        return send_steps(slot, lane, request, fresh, trace, flow, None).await;
    };
    let mut c = Conversation::continuing(turn, slot.take_conversation());
    let held = c.held();
    let mut sample = send_steps(slot, lane, request, fresh, trace, flow, Some(&mut c)).await;
    slot.keep_conversation(c);
    sample.turn = Some(turn.number);
    sample.history_messages = Some(held);
    sample
}

/// A flow: its steps on `slot` (a fresh flow's first step opens a new
/// connection, the rest of the flow reuses it, and it is closed after),
/// then the measured request with every variable filled. The sample is the
/// measured request's, with the flow's wait and steps; a failed step is a
/// failed sample that names it. In a conversation (`c`), a turn whose app
/// keeps the history and whose first turn captured its values runs no
/// steps, the history goes into the request when it carries it, and an
/// answered turn is added to `c`.
async fn send_steps(
    slot: &mut Slot,
    lane: &Lane,
    request: &RequestTemplate,
    fresh: bool,
    trace: Option<&TraceContext>,
    flow: &Flow,
    c: Option<&mut Conversation>,
) -> Sample {
    // A warm flow reuses the answer socket the slot's last flow left open,
    // as a page that stays open keeps its socket; a fresh flow opens its own.
    let kept = match &flow.socket {
        Some(_) if !fresh => slot.take_answer_socket(),
        _ => None,
    };
    // Else the socket's endpoint (its TLS set-up) is built before the
    // flow's clock starts: no part of the user's wait.
    let socket = match (&flow.socket, &kept) {
        (None, _) | (Some(_), Some(_)) => None,
        (Some(s), None) => match Endpoint::new(&s.spec) {
            Ok(ep) => Some((s, ep)),
            Err(e) => {
                let mut sample = Sample::empty(lane.seq, lane.worker, Connection::Fresh);
                sample.error = Some(SampleError {
                    kind: ErrorKind::Connect,
                    message: format!("flow step {:?}: {e}", s.name),
                });
                return sample;
            }
        },
    };
    let start = std::time::Instant::now();
    let wait_ms = || start.elapsed().as_secs_f64() * 1000.0;
    if fresh {
        slot.close();
    }
    let extra: Vec<_> = trace.map(TraceContext::header).into_iter().collect();
    let turn = flow.turn.as_ref();
    // A later turn of a conversation the app keeps: its steps ran on the
    // first turn, and their values are sent again.
    let captured = match (turn, c.as_deref()) {
        (Some(t), Some(c)) => c.captured(t, &flow.vars),
        _ => None,
    };
    let steps = if captured.is_some() {
        &[][..]
    } else {
        &flow.steps[..]
    };
    let mut vars = captured.unwrap_or_else(|| flow.vars.clone());
    let connection = if fresh {
        Connection::Fresh
    } else {
        Connection::Reused
    };
    let failed = |times, error| {
        let mut s = Sample::empty(lane.seq, lane.worker, connection);
        s.error = Some(error);
        s.flow_wait_ms = Some(wait_ms());
        s.flow_steps = Some(times);
        s
    };
    // A socket the answer will arrive on: opened first, its session id
    // captured.
    let mut opened = None;
    let mut socket_time = Vec::new();
    if let (Some(s), Some((conn, _))) = (&flow.socket, &kept)
        && let (Some(var), Some(sid)) = (&s.sid_var, conn.sid())
    {
        vars.push((var.clone(), sid.to_string()));
    }
    if kept.is_some() {
        opened = kept;
    }
    if let Some((s, ep)) = &socket {
        let t0 = std::time::Instant::now();
        let mut request = s.spec.request.clone();
        request.headers.extend(extra.iter().cloned());
        let result = ep.open_socket(&request).await;
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        let step = |status| FlowStepTime {
            name: s.name.clone(),
            ms,
            status,
        };
        let conn = match result {
            Ok(conn) => conn,
            Err((f, status)) => {
                let message = format!("flow step {:?}: {}", s.name, f.message);
                let message = s.spec.transport.websocket().map_or_else(
                    || request.scrub(&message),
                    |w| w.scrub(&request.scrub(&message)),
                );
                return failed(
                    vec![step(status)],
                    SampleError {
                        kind: f.kind,
                        message,
                    },
                );
            }
        };
        socket_time.push(step(Some(101)));
        if let Some(var) = &s.sid_var {
            let Some(sid) = conn.sid() else {
                let error = SampleError {
                    kind: ErrorKind::Decode,
                    message: format!(
                        "flow step {:?}: {{{var}}} not captured: the Socket.IO CONNECT answer carried no sid",
                        s.name
                    ),
                };
                return failed(socket_time, error);
            };
            vars.push((var.clone(), sid.to_string()));
        }
        opened = Some((conn, ep.clone()));
    }
    let times = match run_steps(slot, steps, &mut vars, &extra).await {
        Ok(times) => socket_time.into_iter().chain(times).collect(),
        Err(StepFailed { times, error }) => {
            if fresh {
                slot.close();
            }
            return failed(socket_time.into_iter().chain(times).collect(), error);
        }
    };
    let question = vars
        .iter()
        .find(|(k, _)| k == "prompt")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let measured = request.with_vars(&vars).map_err(|e| e.to_string());
    let measured = match (measured, turn, c.as_deref()) {
        (Ok(r), Some(t), Some(c)) => c.with_history(t, r, &question),
        (r, ..) => r,
    };
    let measured = match measured {
        Ok(r) => r,
        Err(e) => {
            let error = SampleError {
                kind: ErrorKind::Decode,
                message: request.scrub(&format!("the measured request: {e}")),
            };
            return failed(times, error);
        }
    };
    let keep_answer = turn.is_some_and(|t| matches!(t.history, TurnHistory::Messages { .. }));
    let wait = wait_ms();
    let (mut sample, answer) = match opened.as_mut() {
        Some((conn, ep)) => {
            let s = ep
                .answer_on_socket(slot, &measured, conn, lane.seq, lane.worker)
                .await;
            (s, None)
        }
        None => {
            slot.send_keeping(&measured, false, lane.seq, lane.worker, keep_answer)
                .await
        }
    };
    if let (Some(t), Some(c)) = (turn, c) {
        sample.request_bytes = Some(measured.body.as_ref().map_or(0, |b| b.len() as u64));
        if sample.error.is_none() {
            c.answered(t, &question, answer, Some(vars.clone()));
        }
    }
    if fresh {
        slot.close();
    } else if let Some(socket) = opened.filter(|(c, _)| c.open() && sample.error.is_none()) {
        slot.keep_answer_socket(socket);
    }
    sample.flow_wait_ms = Some(wait);
    sample.flow_steps = Some(times);
    sample
}

/// The request for `lane`, with a fresh `traceparent` when `traced`: drawn
/// here, before the request's clock starts.
fn build<S: RequestSource>(
    source: &S,
    lane: &Lane,
    traced: bool,
) -> (RequestTemplate, Option<TraceContext>) {
    let mut request = source.request(&lane.planned);
    let trace = traced.then(TraceContext::random).flatten();
    if let Some(t) = &trace {
        source.traced(t);
        // One traceparent: ours replaces any the config set, so the stored
        // trace id is the one the app sees.
        request.headers.retain(|(n, _)| n.as_str() != TRACE_HEADER);
        request.headers.push(t.header());
    }
    (request, trace)
}

/// Run one lane: warm-up when asked, the measured request (after every
/// lane of its burst is ready, when `together`), then hand the slot back.
pub(super) async fn run<S, T>(
    run: Arc<Run<S, T>>,
    lane: Lane,
    mut slot: Slot,
    warm_up: bool,
    together: Option<Arc<Barrier>>,
) -> (Lane, Slot)
where
    S: RequestSource + 'static,
    T: From<SessionSample> + Send + 'static,
{
    let _ = async {
        let traced = run.source.spec(lane.planned.dest).trace_context;
        let flow = run.source.flow(&lane.planned);
        if warm_up {
            let (request, trace) = build(&*run.source, &lane, traced);
            run.send(
                &mut slot,
                &lane,
                &request,
                true,
                trace.as_ref(),
                flow.as_ref(),
            )
            .await?;
        }
        // Built before the barrier, so a burst's requests start together.
        let (request, trace) = build(&*run.source, &lane, traced);
        if let Some(b) = together {
            run.unless_abandoned(b.wait()).await?;
        }
        run.unless_abandoned(run.gate.release()).await?;
        run.send(
            &mut slot,
            &lane,
            &request,
            false,
            trace.as_ref(),
            flow.as_ref(),
        )
        .await
    }
    .await;
    (lane, slot)
}

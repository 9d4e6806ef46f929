//! Running a session's protocol: steps in order, bursts that start together,
//! idle gaps before cold probes, open-loop arrivals measured from their
//! intended start. Every finished request becomes a [`SessionSample`] sent
//! over a bounded channel to one recorder; the run ends when the channel
//! closes.
//!
//! Connections: each destination (app path, direct strategy, ping) has its
//! own slots. Warm requests reuse slot 0 of their destination; a burst of k
//! uses slots 0..k; a warm slot with no open connection first sends a
//! warm-up request (stored with `warmup: true`, never counted).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use firsttoken_plan::protocol::{Dest, Planned, Protocol, Step};
use firsttoken_plan::{ProbeSpec, RequestTemplate};
use firsttoken_record::Sample;

use crate::DriveError;
use crate::slot::Slot;

/// Builds the request for a planned request (prompt, auth token…).
pub trait RequestSource: Send + Sync {
    /// The connection spec of a destination: target, TLS, timeouts, format.
    fn spec(&self, dest: Dest) -> &ProbeSpec;
    /// The request to send for `planned`.
    fn request(&self, planned: &Planned) -> RequestTemplate;
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

/// Spending so far and the limit; the session stops before a request whose
/// expected cost (the running mean) would cross the limit.
#[derive(Debug, Default)]
pub struct Budget {
    inner: Mutex<BudgetState>,
}

#[derive(Debug, Default)]
struct BudgetState {
    limit_usd: Option<f64>,
    spent_usd: f64,
    costed: u64,
}

impl Budget {
    /// A budget of `limit_usd` (no limit when `None`).
    pub fn new(limit_usd: Option<f64>) -> Budget {
        Budget {
            inner: Mutex::new(BudgetState {
                limit_usd,
                ..BudgetState::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        // Plain numbers: a poisoned lock is still consistent enough to read.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Add a request's cost.
    pub fn record(&self, cost_usd: f64) {
        let mut b = self.lock();
        b.spent_usd += cost_usd;
        b.costed += 1;
    }

    /// Spent so far.
    pub fn spent(&self) -> f64 {
        self.lock().spent_usd
    }

    /// True when `n` more requests are expected to stay within the limit.
    pub fn allows(&self, n: usize) -> bool {
        let b = self.lock();
        match b.limit_usd {
            None => true,
            Some(limit) => {
                let mean = if b.costed == 0 {
                    0.0
                } else {
                    b.spent_usd / b.costed as f64
                };
                b.spent_usd + mean * n as f64 <= limit
            }
        }
    }
}

/// Why a session stopped early, if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Every step ran.
    Complete,
    /// Cancelled (Ctrl-C, SIGTERM, a failed store…).
    Cancelled,
    /// The budget would have been exceeded.
    Budget,
}

type SlotKey = (u8, usize, usize);

fn dest_key(d: Dest) -> (u8, usize) {
    match d {
        Dest::App(i) => (0, i),
        Dest::Direct(i) => (1, i),
        Dest::Ping => (2, 0),
    }
}

/// What every request of a session shares: how to build it and the session clock.
struct Ctx<S> {
    source: Arc<S>,
    origin: Instant,
    origin_wall: SystemTime,
}

impl<S> Clone for Ctx<S> {
    fn clone(&self) -> Self {
        Ctx {
            source: self.source.clone(),
            origin: self.origin,
            origin_wall: self.origin_wall,
        }
    }
}

impl<S> Ctx<S> {
    fn stamp(
        &self,
        planned: Planned,
        sample: Sample,
        started: Instant,
        intended: Option<Duration>,
    ) -> SessionSample {
        SessionSample {
            planned,
            sample,
            intended_start: intended,
            actual_start: started - self.origin,
            started_at: self.origin_wall + (started - self.origin),
        }
    }
}

struct Runner<S: RequestSource> {
    ctx: Ctx<S>,
    slots: HashMap<SlotKey, Slot>,
    tx: mpsc::Sender<SessionSample>,
    seq: u64,
}

impl<S: RequestSource + 'static> Runner<S> {
    fn slot(&mut self, dest: Dest, idx: usize) -> Result<Slot, DriveError> {
        let (a, b) = dest_key(dest);
        match self.slots.remove(&(a, b, idx)) {
            Some(s) => Ok(s),
            None => Slot::new(self.ctx.source.spec(dest)),
        }
    }

    fn put(&mut self, dest: Dest, idx: usize, slot: Slot) {
        let (a, b) = dest_key(dest);
        self.slots.insert((a, b, idx), slot);
    }

    /// A warm request on a slot without an open connection first sends a
    /// warm-up request on the same destination (kept, marked `warmup`).
    async fn warm_up(
        ctx: Ctx<S>,
        slot: &mut Slot,
        planned: &Planned,
        (seq, worker): (u64, u32),
    ) -> Option<SessionSample> {
        if planned.fresh || slot.is_warm().await {
            return None;
        }
        let request = ctx.source.request(planned);
        let started = Instant::now();
        let mut s = slot.send(&request, false, seq, worker).await;
        s.warmup = true;
        Some(ctx.stamp(planned.clone(), s, started, None))
    }

    /// The measured request.
    async fn measure(
        ctx: Ctx<S>,
        slot: &mut Slot,
        planned: Planned,
        (seq, worker): (u64, u32),
        intended: Option<Duration>,
    ) -> SessionSample {
        let request = ctx.source.request(&planned);
        let started = Instant::now();
        let sample = slot.send(&request, planned.fresh, seq, worker).await;
        ctx.stamp(planned, sample, started, intended)
    }

    /// Warm-up (when needed) then the measured request.
    async fn one(
        ctx: Ctx<S>,
        slot: &mut Slot,
        planned: Planned,
        id: (u64, u32),
        intended: Option<Duration>,
    ) -> Vec<SessionSample> {
        let mut out: Vec<SessionSample> = Self::warm_up(ctx.clone(), slot, &planned, id)
            .await
            .into_iter()
            .collect();
        out.push(Self::measure(ctx, slot, planned, id, intended).await);
        out
    }

    /// Send samples to the recorder (a `&Runner` across an await would need
    /// `Runner: Sync`, which open connections are not; so only the sender is borrowed).
    async fn emit(
        tx: &mpsc::Sender<SessionSample>,
        samples: Vec<SessionSample>,
        budget: &Budget,
    ) -> bool {
        for s in samples {
            if let Some(c) = s.sample.cost_usd {
                budget.record(c);
            }
            if tx.send(s).await.is_err() {
                return false;
            }
        }
        true
    }

    async fn step(
        &mut self,
        step: Step,
        budget: &Budget,
        cancel: &CancellationToken,
    ) -> Result<bool, DriveError> {
        match step {
            Step::One(p) => {
                let mut slot = self.slot(p.dest, 0)?;
                self.seq += 1;
                let out =
                    Self::one(self.ctx.clone(), &mut slot, p.clone(), (self.seq, 0), None).await;
                self.put(p.dest, 0, slot);
                Ok(Self::emit(&self.tx, out, budget).await)
            }
            Step::AfterIdle(gap, p) => {
                tokio::select! {
                    _ = cancel.cancelled() => return Ok(false),
                    _ = tokio::time::sleep(gap) => {}
                }
                Box::pin(self.step(Step::One(p), budget, cancel)).await
            }
            Step::Burst(v) => {
                // Open every slot's connection first, so the burst's requests
                // then start together rather than behind their warm-ups.
                let mut slots = Vec::new();
                for (i, p) in v.iter().enumerate() {
                    slots.push((self.slot(p.dest, i)?, p.clone()));
                }
                let base = self.seq;
                self.seq += v.len() as u64;
                let warm = slots.into_iter().enumerate().map(|(i, (mut slot, p))| {
                    let ctx = self.ctx.clone();
                    tokio::spawn(async move {
                        let id = (base + 1 + i as u64, u32::try_from(i).unwrap_or(u32::MAX));
                        let w = Self::warm_up(ctx, &mut slot, &p, id).await;
                        (slot, p, w)
                    })
                });
                let mut ready = Vec::new();
                let mut warmups = Vec::new();
                for h in warm.collect::<Vec<_>>() {
                    if let Ok((slot, p, w)) = h.await {
                        warmups.extend(w);
                        ready.push((slot, p));
                    }
                }
                let mut ok = Self::emit(&self.tx, warmups, budget).await;
                let handles: Vec<_> = ready
                    .into_iter()
                    .enumerate()
                    .map(|(i, (mut slot, p))| {
                        let ctx = self.ctx.clone();
                        tokio::spawn(async move {
                            let id = (base + 1 + i as u64, u32::try_from(i).unwrap_or(u32::MAX));
                            let s = Self::measure(ctx, &mut slot, p.clone(), id, None).await;
                            (p.dest, i, slot, s)
                        })
                    })
                    .collect();
                for h in handles {
                    if let Ok((dest, i, slot, s)) = h.await {
                        self.put(dest, i, slot);
                        ok &= Self::emit(&self.tx, vec![s], budget).await;
                    }
                }
                Ok(ok)
            }
            Step::Arrivals(v) => self.arrivals(v, budget, cancel).await,
        }
    }

    /// Open loop: each request starts at its intended offset whatever the
    /// others are doing, on an idle slot from a pool (a new one when all are busy).
    async fn arrivals(
        &mut self,
        v: Vec<(Duration, Planned)>,
        budget: &Budget,
        cancel: &CancellationToken,
    ) -> Result<bool, DriveError> {
        let step_origin = Instant::now();
        let pool: Arc<tokio::sync::Mutex<Vec<(Dest, Slot)>>> = Arc::default();
        let mut handles = Vec::new();
        for (offset, p) in v {
            if cancel.is_cancelled() || !budget.allows(1) {
                break;
            }
            tokio::time::sleep_until((step_origin + offset).into()).await;
            let slot = {
                let mut free = pool.lock().await;
                match free.iter().position(|(d, _)| *d == p.dest) {
                    Some(i) => free.swap_remove(i).1,
                    None => Slot::new(self.ctx.source.spec(p.dest))?,
                }
            };
            self.seq += 1;
            let intended = (step_origin + offset) - self.ctx.origin;
            let (ctx, seq, pool) = (self.ctx.clone(), self.seq, pool.clone());
            let tx = self.tx.clone();
            handles.push(tokio::spawn(async move {
                let mut slot = slot;
                // No warm-up here: it would delay the start past the intended
                // time. An idle pooled connection is reused, else a new one opens.
                let out = Self::measure(ctx, &mut slot, p.clone(), (seq, 0), Some(intended)).await;
                pool.lock().await.push((p.dest, slot));
                let _ = tx.send(out).await;
            }));
        }
        for h in handles {
            let _ = h.await;
        }
        Ok(true)
    }
}

/// Run `protocol`, sending each finished request to `tx`. Stops early on
/// `cancel` or when `budget` would be exceeded; what ran is already sent.
pub async fn run_session<S: RequestSource + 'static>(
    protocol: &Protocol,
    source: Arc<S>,
    budget: &Budget,
    tx: mpsc::Sender<SessionSample>,
    cancel: CancellationToken,
) -> Result<Stop, DriveError> {
    let ctx = Ctx {
        source,
        origin: Instant::now(),
        origin_wall: SystemTime::now(),
    };
    let mut r = Runner {
        ctx,
        slots: HashMap::new(),
        tx,
        seq: 0,
    };
    for step in protocol.steps.iter().cloned() {
        if cancel.is_cancelled() {
            return Ok(Stop::Cancelled);
        }
        if !budget.allows(step.len()) {
            return Ok(Stop::Budget);
        }
        let keep_going = tokio::select! {
            _ = cancel.cancelled() => return Ok(Stop::Cancelled),
            r = r.step(step, budget, &cancel) => r?,
        };
        if !keep_going {
            return Ok(Stop::Cancelled);
        }
    }
    Ok(Stop::Complete)
}

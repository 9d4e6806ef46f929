//! A session as one agent of a run (issue 14): its segment of the
//! protocol, what earlier sessions of the segment already stored, its clock
//! offset to the store, and the common start.
//!
//! Every agent of a run expands the same protocol and keeps its segment
//! ([`Segment::apply`]). The first agent to join writes the run row; the
//! others must agree on the segment count and the protocol (its hash) and
//! adopt the stored start time when they were given none. A rerun of a
//! segment runs only the steps not yet fully stored by earlier sessions of
//! it ([`Segment::remaining`]); the report keeps the newest sample of each
//! segment request, so nothing counts twice.
//!
//! The common start is on the store's clock: each agent measures its
//! offset (`clock_timestamp()` round trips, the shortest kept) and holds
//! its first measured requests until `start_at − offset` on its own clock
//! ([`StartGate`], drive's `Gate::release`): warm-ups happen before.
//!
//! While its session runs, an agent writes a heartbeat every
//! [`RunPart::heartbeat`] ([`Heartbeat`]). An agent that dies where no one
//! can see its process (another host, another pod) leaves its session
//! `running`; after
//! [`firsttoken_record::run::SILENT_BEATS`] missed beats its run reads partial, and
//! the next agent to join the run marks the session so.

use std::ops::{Range, RangeInclusive};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use firsttoken_drive::{Gate, GateAnswer, StepWait};
use firsttoken_plan::protocol::{Dest, Protocol};
use firsttoken_plan::segment::Segment;
use firsttoken_record::run::{ClockOffset, RunInfo, RunMember};
use firsttoken_record::{Store, UtcTime};

use crate::SessionError;

/// Round trips to the store's clock; the shortest is kept.
pub const CLOCK_ROUNDS: u32 = 16;

/// How often an agent says it is alive, unless told otherwise.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(5);

/// The heartbeat intervals an agent may be given: from 100 ms (more
/// often only loads the store) to 10 minutes (past it a dead agent goes
/// unseen for most of an hour).
pub const HEARTBEATS: RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(600);

/// The longest run id.
pub const MAX_RUN_ID: usize = 64;

/// This session's part in a run (`run --run-id`, `--segment`, `--start-at`),
/// validated by [`RunPart::new`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunPart {
    /// The run id every agent is given.
    pub(crate) run_id: String,
    /// This agent's segment.
    pub(crate) segment: Segment,
    /// The common start, on the store's clock (else the run's stored one,
    /// else at once).
    pub(crate) start_at: Option<UtcTime>,
    /// How often this agent writes that it is alive ([`DEFAULT_HEARTBEAT`]).
    pub(crate) heartbeat: Duration,
}

impl RunPart {
    /// This agent's part of a run of the protocol `whole`: run `run_id`
    /// (none given: derived from `whole` and `start_at` by
    /// [`derived_run_id`], so agents given the same start find one
    /// another), segment `segment` (none: the whole protocol), starting at
    /// `start_at`, beating every `heartbeat`. Refused: no id and no start
    /// to derive one from; an id that is empty, longer than
    /// [`MAX_RUN_ID`] or holds other than letters, digits, `.`, `_` and
    /// `-`; a heartbeat outside [`HEARTBEATS`].
    pub fn new(
        run_id: Option<String>,
        segment: Option<Segment>,
        start_at: Option<UtcTime>,
        heartbeat: Duration,
        whole: &Protocol,
    ) -> Result<RunPart, SessionError> {
        let run_id = match (run_id, start_at) {
            (Some(id), _) => id,
            (None, Some(at)) => derived_run_id(whole, at),
            (None, None) => {
                return Err(SessionError::Invalid(
                    "--segment needs --run-id (or --start-at, from which the run id is derived) so the agents find one another".into(),
                ));
            }
        };
        let valid = !run_id.is_empty()
            && run_id.len() <= MAX_RUN_ID
            && run_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !valid {
            return Err(SessionError::Invalid(format!(
                "--run-id {run_id:?}: use letters, digits, '.', '_' and '-', at most {MAX_RUN_ID} characters"
            )));
        }
        if !HEARTBEATS.contains(&heartbeat) {
            return Err(SessionError::Invalid(format!(
                "a heartbeat every {heartbeat:?}: use {:?} to {:?}",
                HEARTBEATS.start(),
                HEARTBEATS.end()
            )));
        }
        Ok(RunPart {
            run_id,
            segment: segment.unwrap_or(Segment::WHOLE),
            start_at,
            heartbeat,
        })
    }

    /// The run id every agent is given.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// This agent's segment.
    pub fn segment(&self) -> Segment {
        self.segment
    }

    /// The common start, on the store's clock, if given.
    pub fn start_at(&self) -> Option<UtcTime> {
        self.start_at
    }

    /// How often this agent writes that it is alive.
    pub fn heartbeat(&self) -> Duration {
        self.heartbeat
    }
}

/// What joining a run decided, before the session row exists.
#[derive(Debug, Clone)]
pub(crate) struct Joined {
    /// The run as stored.
    pub run: RunInfo,
    /// The steps this session runs.
    pub protocol: Protocol,
    /// Its part, to store once the session row exists.
    pub member: RunMember,
}

/// The version of `Segment::apply`'s dealing rule (2: remainders carried
/// across steps, conversations to the agent with the fewest turns).
const DEALING: &str = "segment-dealing-2";

/// The hex SHA-256 of the whole protocol and the dealing rule: agents that
/// would send different requests cannot join the same run.
pub(crate) fn protocol_hash(p: &Protocol) -> String {
    let mut json = serde_json::to_vec(p).unwrap_or_default();
    // How the protocol is dealt to agents is part of what they must share:
    // agents dealing by different rules would double or drop requests.
    json.extend_from_slice(DEALING.as_bytes());
    Sha256::digest(&json)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The run id agents derive when given a start but no id: `run-` and 12
/// hex digits of the protocol's hash and the start, the same on every
/// agent that runs the same config and seed for the same start.
pub fn derived_run_id(whole: &Protocol, start_at: UtcTime) -> String {
    let h = Sha256::digest(format!("{} {start_at}", protocol_hash(whole)).as_bytes());
    let hex: String = h.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("run-{hex}")
}

/// Join `part`'s run with the whole protocol `whole`: store or check the
/// run row, find what earlier sessions of the segment stored, measure the
/// clock offset.
pub(crate) async fn join(
    part: &RunPart,
    whole: &Protocol,
    store: &Store,
) -> Result<Joined, SessionError> {
    let seg = part.segment;
    let wanted = RunInfo {
        run_id: part.run_id.clone(),
        created_at: UtcTime::now(),
        segments: seg.count,
        planned_requests: whole.requests() as u64,
        config_hash: protocol_hash(whole),
        start_at: part.start_at,
    };
    let run = store.join_run(&wanted).await?;
    if run.segments != wanted.segments {
        return Err(SessionError::Invalid(format!(
            "run {:?} has {} segments; this agent was given --segment {seg}: use the same n on every agent",
            run.run_id, run.segments
        )));
    }
    if run.config_hash != wanted.config_hash {
        return Err(SessionError::Invalid(format!(
            "run {:?} was started with a different protocol (config, preset or seed) or by a firsttoken that deals the protocol to agents differently: every agent of a run must run the same config with the same seed and a release of the same dealing",
            run.run_id
        )));
    }
    if let (Some(a), Some(b)) = (run.start_at, part.start_at)
        && a != b
    {
        return Err(SessionError::Invalid(format!(
            "run {:?} starts at {a}; this agent was given --start-at {b}",
            run.run_id
        )));
    }
    let members = store.run_members(&run.run_id).await?;
    mark_silent(store, &run, &members).await?;
    let segment = seg.apply(whole);
    let done = stored_indices(store, &members, seg.index).await?;
    let (protocol, ranges) = Segment::remaining(&segment, &|k| done.contains(&k));
    if protocol.steps.is_empty() {
        return Err(SessionError::Invalid(format!(
            "segment {seg} of run {:?} is already stored in full: nothing to rerun",
            run.run_id
        )));
    }
    let clock = store.clock_offset(CLOCK_ROUNDS).await?;
    let member = RunMember {
        session_id: String::new(),
        run_id: run.run_id.clone(),
        segment: seg.index,
        segments: seg.count,
        segment_requests: segment.requests() as u64,
        ranges,
        clock,
        began_at_ms: None,
        heartbeat_at_ms: None,
        heartbeat_every_ms: Some(part.heartbeat.as_secs_f64() * 1000.0),
    };
    Ok(Joined {
        run,
        protocol,
        member,
    })
}

/// Marks `partial` every session of `run` that still reads `running` but
/// whose agent fell silent ([`RunMember::silent_at`], on the store's clock).
async fn mark_silent(
    store: &Store,
    run: &RunInfo,
    members: &[RunMember],
) -> Result<(), SessionError> {
    let now = store.store_now_ms().await?;
    for m in members {
        if let Some(silent) = m.silent_at(now) {
            let reason = format!(
                "agent silent: no heartbeat for {:.1} s (it promised one every {:.1} s); marked by a later agent of run {}",
                silent / 1000.0,
                m.heartbeat_every_ms.unwrap_or(0.0) / 1000.0,
                run.run_id
            );
            store.mark_silent(&m.session_id, &reason).await?;
        }
    }
    Ok(())
}

/// The segment request indices that earlier sessions (`members`) of
/// segment `segment` stored (measured requests, not warm-ups).
async fn stored_indices(
    store: &Store,
    members: &[RunMember],
    segment: u32,
) -> Result<std::collections::BTreeSet<u64>, SessionError> {
    let mut done = std::collections::BTreeSet::new();
    for m in members {
        if m.segment != segment {
            continue;
        }
        for (seq, warmup) in store.sample_keys(&m.session_id).await? {
            if warmup {
                continue;
            }
            if let Some(k) = m.index_of(seq) {
                done.insert(k);
            }
        }
    }
    Ok(done)
}

/// This machine's wall clock on the store's clock, ms since the epoch.
pub(crate) fn store_now_ms(clock: Option<ClockOffset>) -> f64 {
    unix_ms(SystemTime::now()) + clock.map_or(0.0, |c| c.offset_ms)
}

/// The heartbeat of a run member's agent: a task that writes, every
/// `every`, that the agent is alive (store clock), until dropped. A write
/// that fails is tried again at the next beat (the session's own writes
/// report a store that is gone).
pub(crate) struct Heartbeat(tokio::task::JoinHandle<()>);

impl Heartbeat {
    pub(crate) fn start(
        store: Store,
        session_id: String,
        clock: Option<ClockOffset>,
        every: Duration,
    ) -> Heartbeat {
        Heartbeat(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let _ = store.run_heartbeat(&session_id, store_now_ms(clock)).await;
            }
        }))
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The JSON stored in the session's spec under `run`.
pub(crate) fn spec_json(part: &RunPart, j: &Joined) -> serde_json::Value {
    serde_json::json!({
        "run_id": part.run_id,
        "segment": part.segment.to_string(),
        "segment_requests": j.member.segment_requests,
        "run_requests": j.run.planned_requests,
        "ranges": j.member.ranges.iter().map(|r: &Range<u64>| [r.start, r.end]).collect::<Vec<_>>(),
        "start_at": j.run.start_at.map(|t| t.to_string()),
    })
}

fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// A gate that holds every measured request until the common start (on
/// this machine's clock: the start minus the clock offset), and notes when
/// the first one was released, on the store's clock.
pub(crate) struct StartGate {
    pub inner: Arc<dyn Gate>,
    /// Local wall-clock ms since the epoch to wait for; `None`: no wait.
    pub at_local_ms: Option<f64>,
    pub offset_ms: f64,
    pub began: Arc<OnceLock<f64>>,
}

impl StartGate {
    pub(crate) fn new(
        inner: Arc<dyn Gate>,
        start_at: Option<UtcTime>,
        clock: Option<ClockOffset>,
    ) -> StartGate {
        let offset_ms = clock.map_or(0.0, |c| c.offset_ms);
        StartGate {
            inner,
            at_local_ms: start_at.map(|t| t.unix_ms() as f64 - offset_ms),
            offset_ms,
            began: Arc::new(OnceLock::new()),
        }
    }
}

impl Gate for StartGate {
    fn allows<'a>(&'a self, requests: &'a [Dest]) -> GateAnswer<'a> {
        self.inner.allows(requests)
    }

    fn between_steps(&self) -> StepWait<'_> {
        self.inner.between_steps()
    }

    fn release(&self) -> StepWait<'_> {
        Box::pin(async move {
            self.inner.release().await;
            if self.began.get().is_none() {
                if let Some(at) = self.at_local_ms {
                    wait_until(at).await;
                }
                let _ = self.began.set(unix_ms(SystemTime::now()) + self.offset_ms);
            }
        })
    }
}

/// Wait until the wall clock reads `at` (ms since the epoch) on a blocking
/// thread's sleep, precise to a fraction of a millisecond (tokio's timer
/// rounds to whole ms), so agents start within their clock uncertainty.
async fn wait_until(at: f64) {
    let left = at - unix_ms(SystemTime::now());
    if left > 0.0 {
        let d = Duration::from_secs_f64(left / 1000.0);
        if tokio::task::spawn_blocking(move || std::thread::sleep(d))
            .await
            .is_err()
        {
            tokio::time::sleep(d).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_start_gate_holds_the_first_release_until_the_start() {
        let start = SystemTime::now() + Duration::from_millis(120);
        let gate = StartGate::new(
            Arc::new(firsttoken_drive::Unlimited),
            Some(UtcTime::from(start)),
            Some(ClockOffset {
                offset_ms: 0.0,
                uncertainty_ms: 0.0,
            }),
        );
        gate.release().await;
        let began = *gate.began.get().unwrap();
        // UtcTime keeps milliseconds: the start is the ms it names.
        let start_ms = UtcTime::from(start).unix_ms() as f64;
        assert!(began >= start_ms, "released at {began}, before {start_ms}");
        let before = SystemTime::now();
        gate.release().await;
        assert!(
            before.elapsed().unwrap() < Duration::from_millis(100),
            "later releases do not wait"
        );
    }

    #[test]
    fn a_run_part_is_validated() {
        let whole = Protocol { steps: vec![] };
        let beat = DEFAULT_HEARTBEAT;
        let part =
            |id: Option<&str>, at| RunPart::new(id.map(String::from), None, at, beat, &whole);
        let named = part(Some("eu-1.run_2"), None).unwrap();
        assert_eq!(named.run_id(), "eu-1.run_2");
        assert_eq!(named.segment(), Segment::WHOLE);
        assert_eq!(named.heartbeat(), beat);
        // No id: derived from the protocol and the start, the same on
        // every agent.
        let at: UtcTime = "2026-12-01T16:00:00Z".parse().unwrap();
        let derived = part(None, Some(at)).unwrap();
        assert_eq!(derived.run_id(), derived_run_id(&whole, at));
        assert_eq!(derived.start_at(), Some(at));
        let e = part(None, None).unwrap_err().to_string();
        assert!(e.starts_with("--segment needs --run-id"), "{e}");
        for bad in ["", "has space", "a/b", &"x".repeat(MAX_RUN_ID + 1)] {
            let e = part(Some(bad), None).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "--run-id {bad:?}: use letters, digits, '.', '_' and '-', at most 64 characters"
                )
            );
        }
        assert!(part(Some(&"x".repeat(MAX_RUN_ID)), None).is_ok());
        let seg = "1/4".parse::<Segment>().unwrap();
        let one = RunPart::new(Some("r".into()), Some(seg), None, beat, &whole).unwrap();
        assert_eq!(one.segment(), seg);
        for (beat, ok) in [
            (Duration::from_millis(99), false),
            (Duration::from_millis(100), true),
            (Duration::from_secs(600), true),
            (Duration::from_millis(600_001), false),
        ] {
            let r = RunPart::new(Some("r".into()), None, None, beat, &whole);
            assert_eq!(r.is_ok(), ok, "{beat:?}");
        }
    }

    #[test]
    fn the_hash_follows_the_protocol() {
        let a = Protocol { steps: vec![] };
        assert_eq!(protocol_hash(&a), protocol_hash(&a.clone()));
        assert_eq!(protocol_hash(&a).len(), 64);
    }
}

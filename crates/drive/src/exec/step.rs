//! One step: its schedule of launches, and the one loop that launches lanes
//! when they are due and joins them as they end.
//!
//! | step | launches |
//! |---|---|
//! | `One` | one lane now, on numbered slot 0 |
//! | `AfterIdle(gap, _)` | one lane after `gap` with no traffic |
//! | `Burst` | k lanes now on slots 0..k, measured requests released together |
//! | `Arrivals` | one lane at each intended offset, on a pooled slot |
//! | `Closed` | a lane per worker now; each ended lane launches the worker's next request on the same slot |
//! | `Conversations` | conversation w's first turn now on slot w; each ended turn launches the next turn of its conversation on the same slot |

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::Barrier;
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;

use firsttoken_plan::protocol::{Planned, Step};

use super::lane::{self, Lane, Run};
use super::slots::{Home, Slots, dest_key};
use super::{RequestSource, SessionSample};
use crate::DriveError;
use crate::slot::{Slot, later};

/// Lanes due at the same time, admitted (asked of the gate) as one.
struct Group {
    /// When; `None`: now.
    at: Option<Instant>,
    lanes: Vec<Lane>,
    /// The lanes may warm up first (not arrivals, not a closed loop's refills).
    may_warm_up: bool,
    /// The measured requests wait for each other (a burst).
    together: bool,
}

/// What is left of a step to launch.
struct Schedule {
    groups: VecDeque<Group>,
    /// A closed loop's next request number and total, and what it sends.
    refill: Option<(u64, u64, Planned)>,
    /// Each conversation's turns not yet launched, with the request
    /// number of the next (turns are numbered conversation by
    /// conversation), by worker.
    turns: Vec<(u64, VecDeque<Planned>)>,
    base: u64,
}

fn numbered(planned: &Planned, index: u32) -> Home {
    Home::Numbered {
        dest: dest_key(planned.dest),
        fresh: planned.fresh,
        index,
    }
}

fn lane(planned: &Planned, seq: u64, index: u32) -> Lane {
    Lane {
        planned: planned.clone(),
        seq,
        worker: index,
        intended: None,
        home: numbered(planned, index),
    }
}

fn now(lanes: Vec<Lane>, together: bool) -> Group {
    Group {
        at: None,
        lanes,
        may_warm_up: true,
        together,
    }
}

impl Schedule {
    /// The launches of `step`, whose first request is number `base`.
    fn new(step: &Step, base: u64, origin: Instant) -> Schedule {
        let start = Instant::now();
        let mut refill = None;
        let mut turns = Vec::new();
        let groups = match step {
            Step::One(p) => vec![now(vec![lane(p, base, 0)], false)],
            Step::AfterIdle(gap, p) => vec![Group {
                at: Some(later(start, *gap)),
                ..now(vec![lane(p, base, 0)], false)
            }],
            Step::Burst(v) => {
                let lanes = (0u32..)
                    .zip(v)
                    .map(|(i, p)| lane(p, base + u64::from(i), i));
                vec![now(lanes.collect(), true)]
            }
            Step::Arrivals(v) => (0u64..)
                .zip(v)
                .map(|(i, (offset, p))| {
                    let at = later(start, *offset);
                    let lane = Lane {
                        intended: Some(at.saturating_duration_since(origin)),
                        home: Home::Pool(dest_key(p.dest)),
                        ..lane(p, base + i, 0)
                    };
                    Group {
                        at: Some(at),
                        lanes: vec![lane],
                        may_warm_up: false,
                        together: false,
                    }
                })
                .collect(),
            Step::Closed {
                workers,
                requests,
                template,
            } => {
                let workers = u32::try_from(*requests).map_or(*workers, |n| n.min(*workers));
                refill = Some((u64::from(workers), *requests, template.clone()));
                let lanes = (0..workers).map(|w| lane(template, base + u64::from(w), w));
                vec![now(lanes.collect(), false)]
            }
            Step::Conversations(v) => {
                let mut seq = base;
                let mut lanes = Vec::with_capacity(v.len());
                for (w, conversation) in (0u32..).zip(v) {
                    let mut queue: VecDeque<Planned> = conversation.iter().cloned().collect();
                    if let Some(first) = queue.pop_front() {
                        lanes.push(lane(&first, seq, w));
                    }
                    turns.push((seq + 1, queue));
                    seq += conversation.len() as u64;
                }
                vec![now(lanes, false)]
            }
        };
        Schedule {
            groups: groups.into(),
            refill,
            turns,
            base,
        }
    }

    /// When the next launch is due: `None` when nothing is left,
    /// `Some(None)` for now.
    fn next(&self) -> Option<Option<Instant>> {
        self.groups.front().map(|g| g.at)
    }

    /// A lane ended: a closed-loop worker takes the next request, a
    /// conversation its next turn, if any, on the same slot.
    fn ended(&mut self, done: &Lane) {
        if let Some((seq, queue)) = self.turns.get_mut(done.worker as usize)
            && let Some(next) = queue.pop_front()
        {
            let mut l = lane(&next, *seq, done.worker);
            l.home = done.home;
            *seq += 1;
            self.groups.push_back(Group {
                may_warm_up: false,
                ..now(vec![l], false)
            });
            return;
        }
        let Some((next, total, template)) = &mut self.refill else {
            return;
        };
        if *next < *total {
            let mut l = lane(template, self.base + *next, done.worker);
            l.home = done.home;
            *next += 1;
            self.groups.push_back(Group {
                may_warm_up: false,
                ..now(vec![l], false)
            });
        }
    }
}

/// Wait until `at` (no wait for `None`).
async fn until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}

fn panic_message(e: JoinError) -> String {
    if !e.is_panic() {
        return e.to_string();
    }
    let payload = e.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a task panicked".into())
}

type Lanes = JoinSet<(Lane, Slot)>;

/// Run `step` to its end: every lane launched when due (unless the run
/// halted) and joined. A panicking lane abandons the others and is
/// returned as [`DriveError::Panicked`] once all are joined.
pub(super) async fn drive<S, T>(
    run: &Arc<Run<S, T>>,
    slots: &mut Slots,
    step: &Step,
    base: u64,
) -> Result<(), DriveError>
where
    S: RequestSource + 'static,
    T: From<SessionSample> + Send + 'static,
{
    let mut schedule = Schedule::new(step, base, run.origin());
    let mut lanes: Lanes = JoinSet::new();
    let mut panicked = None;
    loop {
        let next = if run.halted() { None } else { schedule.next() };
        if lanes.is_empty() && next.is_none() {
            break;
        }
        tokio::select! {
            biased;
            Some(joined) = lanes.join_next() => match joined {
                Ok((lane, slot)) => {
                    schedule.ended(&lane);
                    slots.put(lane.home, lane.worker, slot);
                }
                Err(e) => {
                    panicked.get_or_insert_with(|| panic_message(e));
                    run.abort();
                }
            },
            () = run.halting(), if next.is_some() => {}
            () = until(next.flatten()), if next.is_some() => {
                if let Some(group) = schedule.groups.pop_front() {
                    launch(run, slots, &mut lanes, group).await;
                }
            }
        }
    }
    panicked.map_or(Ok(()), |m| Err(DriveError::Panicked(m)))
}

/// Give each lane of `group` its slot, ask the gate for the group's
/// requests (warm-ups included) and start them, or put the slots back.
async fn launch<S, T>(run: &Arc<Run<S, T>>, slots: &mut Slots, lanes: &mut Lanes, group: Group)
where
    S: RequestSource + 'static,
    T: From<SessionSample> + Send + 'static,
{
    let mut ready = Vec::with_capacity(group.lanes.len());
    let mut requests = Vec::with_capacity(group.lanes.len());
    for mut lane in group.lanes {
        let (mut slot, worker) = slots.take(lane.home);
        lane.worker = worker;
        let warm_up = group.may_warm_up && !lane.planned.fresh && !slot.is_warm().await;
        requests.extend(std::iter::repeat_n(
            lane.planned.dest,
            1 + usize::from(warm_up),
        ));
        ready.push((lane, slot, warm_up));
    }
    if !run.admit(&requests).await {
        for (lane, slot, _) in ready {
            slots.put(lane.home, lane.worker, slot);
        }
        return;
    }
    let together = (group.together && ready.len() > 1).then(|| Arc::new(Barrier::new(ready.len())));
    for (lane, slot, warm_up) in ready {
        lanes.spawn(lane::run(
            run.clone(),
            lane,
            slot,
            warm_up,
            together.clone(),
        ));
    }
}

//! A run across agents (issue 14): the sessions several agents take part
//! in, each running one segment of the same protocol into one store.
//!
//! A [`RunInfo`] row is written by the first agent that joins a run id
//! (the others check they agree on the segment count, the config and the
//! start); each session of the run has a [`RunMember`] row: its segment,
//! the segment request indices it ran, its clock offset to the store and
//! when it released its first measured request, and its heartbeat: when
//! its agent last said it was alive. [`RunState`] is decided from those
//! rows, the sessions' states and the store's clock ([`run_state`]): a
//! session still `running` whose agent fell silent counts as stopped.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::session::{SessionMeta, SessionStatus};
use crate::vocab::UtcTime;

/// A run as stored (`runs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The run id every agent was given.
    pub run_id: String,
    /// When the first agent joined it.
    pub created_at: UtcTime,
    /// Agents (segments) sharing its load.
    pub segments: u32,
    /// Measured requests of the whole protocol, all segments together.
    pub planned_requests: u64,
    /// SHA-256 (hex) of the config every agent runs (seed included).
    pub config_hash: String,
    /// The common start, on the store's clock, when one was given.
    pub start_at: Option<UtcTime>,
}

/// An agent's clock offset to the store's clock: `store = local + offset_ms`,
/// known to within ± `uncertainty_ms` (half the best round trip).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// Store clock minus local clock, ms.
    pub offset_ms: f64,
    /// Half the round trip of the best of the rounds, ms.
    pub uncertainty_ms: f64,
}

impl ClockOffset {
    /// The best of several `(local_before_ms, store_ms, local_after_ms)`
    /// round trips: the one with the shortest round trip, its offset taken
    /// at the round trip's midpoint (NTP's estimate). `None` without rounds.
    pub fn best(rounds: &[(f64, f64, f64)]) -> Option<ClockOffset> {
        rounds
            .iter()
            .filter(|(a, s, b)| a.is_finite() && s.is_finite() && b.is_finite() && b >= a)
            .min_by(|x, y| (x.2 - x.0).total_cmp(&(y.2 - y.0)))
            .map(|&(a, s, b)| ClockOffset {
                offset_ms: s - (a + b) / 2.0,
                uncertainty_ms: (b - a) / 2.0,
            })
    }
}

/// One session's part in a run (`run_sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMember {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// Its segment index (0-based).
    pub segment: u32,
    /// Segments in the run.
    pub segments: u32,
    /// Measured requests of its whole segment.
    pub segment_requests: u64,
    /// The segment request indices this session ran, in the order of its
    /// samples' `seq` (a whole segment: `[0..segment_requests]`).
    pub ranges: Vec<Range<u64>>,
    /// Its clock offset to the store's clock, when measured.
    pub clock: Option<ClockOffset>,
    /// When its first measured request was released, ms since the Unix
    /// epoch on the store's clock.
    pub began_at_ms: Option<f64>,
    /// When its agent last said it was alive, ms since the Unix epoch on
    /// the store's clock.
    pub heartbeat_at_ms: Option<f64>,
    /// How often its agent promised to say so, ms (none: it made no
    /// promise, and is never taken as silent).
    pub heartbeat_every_ms: Option<f64>,
}

/// Heartbeats an agent may miss before its session is taken as stopped.
pub const SILENT_BEATS: f64 = 4.0;

impl RunMember {
    /// The segment request index of this session's sample `seq`.
    pub fn index_of(&self, seq: u64) -> Option<u64> {
        let mut k = seq;
        for r in &self.ranges {
            let len = r.end.saturating_sub(r.start);
            if k < len {
                return Some(r.start + k);
            }
            k -= len;
        }
        None
    }

    /// How long this member's agent has been silent at `now_ms` (store
    /// clock), when that is more than [`SILENT_BEATS`] of its promised
    /// intervals plus its clock uncertainty; `None` while it keeps its
    /// promise, or when it made none.
    pub fn silent_at(&self, now_ms: f64) -> Option<f64> {
        let (every, last) = (self.heartbeat_every_ms?, self.heartbeat_at_ms?);
        let slack = self.clock.map_or(0.0, |c| c.uncertainty_ms);
        let silent = now_ms - last;
        (silent > SILENT_BEATS * every + slack).then_some(silent)
    }
}

/// How a run stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunState {
    /// Some member session is still running (and its agent not silent).
    Running,
    /// Every segment has a complete session.
    Complete,
    /// Some segments have no complete session and nothing is running.
    Partial {
        /// Segments without a complete session, with the agents (vantage
        /// and host) whose sessions of it stopped, if any.
        missing: Vec<MissingSegment>,
    },
}

/// A segment of a run that has no complete session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingSegment {
    /// Its index.
    pub segment: u32,
    /// Every agent whose session of it stopped (none: no agent ever
    /// joined with it).
    pub agents: Vec<StoppedAgent>,
}

/// An agent whose session of a segment stopped before it was complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppedAgent {
    /// `vantage@host`.
    pub agent: String,
    /// Set when its session still reads `running` but the agent has not
    /// said it was alive for this long (ms): it died where no one could
    /// mark it, e.g. on another host.
    pub silent_for_ms: Option<f64>,
}

/// The state of `run` from its members and their sessions, at `now_ms` on
/// the store's clock (which decides whose agent fell silent).
pub fn run_state(run: &RunInfo, members: &[(RunMember, SessionMeta)], now_ms: f64) -> RunState {
    let live = |(m, s): &(RunMember, SessionMeta)| {
        s.status == SessionStatus::Running && m.silent_at(now_ms).is_none()
    };
    if members.iter().any(live) {
        return RunState::Running;
    }
    let mut missing = Vec::new();
    for seg in 0..run.segments {
        let of: Vec<&(RunMember, SessionMeta)> =
            members.iter().filter(|(m, _)| m.segment == seg).collect();
        if of.iter().any(|(_, s)| s.status == SessionStatus::Complete) {
            continue;
        }
        let mut agents: Vec<StoppedAgent> = of
            .iter()
            .map(|(m, s)| StoppedAgent {
                agent: format!("{}@{}", s.labels.vantage, s.host),
                silent_for_ms: (s.status == SessionStatus::Running)
                    .then(|| m.silent_at(now_ms))
                    .flatten(),
            })
            .collect();
        agents.dedup_by(|a, b| {
            a.agent == b.agent && a.silent_for_ms.is_none() == b.silent_for_ms.is_none()
        });
        missing.push(MissingSegment {
            segment: seg,
            agents,
        });
    }
    if missing.is_empty() {
        RunState::Complete
    } else {
        RunState::Partial { missing }
    }
}

// How closely the agents started together, and whether a concurrency
// verdict across agents can be given at all.
//
// Each agent's first measured request was released at a time on the
// store's clock (its own clock plus its measured offset). The start
// spread is the range of those times over segments (a segment's earliest
// session: a rerun starts late by design). Each offset is known only to
// ± half its best round trip to the store (the NTP midpoint estimate);
// when the largest of those exceeds [`CLOCK_UNCERTAINTY_LIMIT_MS`], the
// agents' requests cannot be said to have overlapped, so no concurrency
// verdict across agents is given ([`CrossAgent::Refused`]).

/// Above this clock uncertainty (ms) a run gets no cross-agent
/// concurrency verdict.
pub const CLOCK_UNCERTAINTY_LIMIT_MS: f64 = 20.0;

/// Whether the agents' bursts can be judged as one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum CrossAgent {
    /// The clocks are known well enough.
    Judged,
    /// Some agent's clock offset is known only to more than the limit.
    Refused {
        /// The largest uncertainty, ms.
        uncertainty_ms: f64,
        /// The limit, ms.
        limit_ms: f64,
    },
    /// Some agent measured no clock offset.
    Unknown,
}

/// How the agents of a run started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunStart {
    /// Segments with a recorded first release.
    pub segments_started: usize,
    /// Latest minus earliest first release over segments, ms (store clock).
    pub spread_ms: Option<f64>,
    /// The largest clock uncertainty of the agents, ms.
    pub uncertainty_ms: Option<f64>,
    /// Whether a cross-agent concurrency verdict may be given.
    pub cross_agent: CrossAgent,
}

/// The start of a run from its members.
pub fn run_start(members: &[RunMember]) -> RunStart {
    let mut first: std::collections::BTreeMap<u32, f64> = std::collections::BTreeMap::new();
    for m in members {
        if let Some(t) = m.began_at_ms.filter(|t| t.is_finite()) {
            let e = first.entry(m.segment).or_insert(t);
            *e = e.min(t);
        }
    }
    let lo = first.values().copied().reduce(f64::min);
    let hi = first.values().copied().reduce(f64::max);
    let spread_ms = lo.zip(hi).map(|(a, b)| b - a);
    let unknown = members.iter().any(|m| m.clock.is_none());
    let uncertainty_ms = members
        .iter()
        .filter_map(|m| m.clock.map(|c| c.uncertainty_ms))
        .reduce(f64::max);
    let cross_agent = match uncertainty_ms {
        _ if unknown => CrossAgent::Unknown,
        Some(u) if u > CLOCK_UNCERTAINTY_LIMIT_MS => CrossAgent::Refused {
            uncertainty_ms: u,
            limit_ms: CLOCK_UNCERTAINTY_LIMIT_MS,
        },
        Some(_) => CrossAgent::Judged,
        None => CrossAgent::Unknown,
    };
    RunStart {
        segments_started: first.len(),
        spread_ms,
        uncertainty_ms,
        cross_agent,
    }
}

/// A run as a report shows it: its row, its members with their sessions,
/// how it stands, how its agents started and how many measured requests
/// count (each planned request once).
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// The run row.
    pub info: RunInfo,
    /// Its sessions with their part, oldest first.
    pub members: Vec<(RunMember, SessionMeta)>,
    /// How it stands.
    pub state: RunState,
    /// How the agents started.
    pub start: RunStart,
    /// Measured requests counted once each (the newest session's sample of
    /// each segment request).
    pub counted: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_round_is_the_shortest_and_its_midpoint_is_the_offset() {
        let c = ClockOffset::best(&[
            (0.0, 1010.0, 30.0),
            (100.0, 1103.0, 104.0),
            (200.0, 1300.0, 260.0),
        ])
        .unwrap();
        assert_eq!(
            c,
            ClockOffset {
                offset_ms: 1001.0,
                uncertainty_ms: 2.0
            }
        );
        assert!(ClockOffset::best(&[]).is_none());
    }

    #[test]
    fn an_agent_is_silent_after_four_missed_beats_and_its_clock_slack() {
        let mut m = member();
        assert_eq!(m.silent_at(1e12), None, "no promise: never silent");
        m.heartbeat_every_ms = Some(1000.0);
        m.heartbeat_at_ms = Some(10_000.0);
        m.clock = Some(ClockOffset {
            offset_ms: 3.0,
            uncertainty_ms: 50.0,
        });
        assert_eq!(m.silent_at(14_050.0), None, "4 beats and the slack");
        assert_eq!(m.silent_at(14_051.0), Some(4_051.0));
    }

    fn member() -> RunMember {
        RunMember {
            session_id: "s".into(),
            run_id: "r".into(),
            segment: 0,
            segments: 1,
            segment_requests: 10,
            ranges: std::iter::once(0..10).collect(),
            clock: None,
            began_at_ms: None,
            heartbeat_at_ms: None,
            heartbeat_every_ms: None,
        }
    }

    #[test]
    fn seq_maps_through_the_ranges() {
        let m = RunMember {
            ranges: vec![2..4, 7..10],
            ..member()
        };
        let got: Vec<Option<u64>> = (0..6).map(|k| m.index_of(k)).collect();
        assert_eq!(got, vec![Some(2), Some(3), Some(7), Some(8), Some(9), None]);
    }

    fn starter(segment: u32, began: Option<f64>, u: Option<f64>) -> RunMember {
        RunMember {
            session_id: format!("s{segment}-{began:?}"),
            run_id: "r".into(),
            segment,
            segments: 3,
            segment_requests: 1,
            ranges: std::iter::once(0..1).collect(),
            clock: u.map(|u| ClockOffset {
                offset_ms: 0.0,
                uncertainty_ms: u,
            }),
            began_at_ms: began,
            heartbeat_at_ms: None,
            heartbeat_every_ms: None,
        }
    }

    #[test]
    fn spread_is_over_each_segments_first_start() {
        let s = run_start(&[
            starter(0, Some(1000.0), Some(0.2)),
            starter(1, Some(1003.5), Some(0.4)),
            starter(1, Some(9000.0), Some(0.1)),
            starter(2, Some(1001.0), Some(0.3)),
        ]);
        assert_eq!(s.spread_ms, Some(3.5));
        assert_eq!(s.uncertainty_ms, Some(0.4));
        assert_eq!(s.cross_agent, CrossAgent::Judged);
        assert_eq!(s.segments_started, 3);
    }

    #[test]
    fn a_coarse_clock_refuses_the_verdict() {
        let s = run_start(&[
            starter(0, Some(0.0), Some(0.5)),
            starter(1, Some(2.0), Some(25.0)),
        ]);
        assert_eq!(
            s.cross_agent,
            CrossAgent::Refused {
                uncertainty_ms: 25.0,
                limit_ms: 20.0
            }
        );
        let s = run_start(&[starter(0, Some(0.0), None)]);
        assert_eq!(s.cross_agent, CrossAgent::Unknown);
    }
}

//! A run across agents: how closely the agents started together, and
//! whether a concurrency verdict across agents can be given at all.
//!
//! Each agent's first measured request was released at a time on the
//! store's clock (its own clock plus its measured offset). The start
//! spread is the range of those times over segments (a segment's earliest
//! session: a rerun starts late by design). Each offset is known only to
//! ± half its best round trip to the store (the NTP midpoint estimate);
//! when the largest of those exceeds [`CLOCK_UNCERTAINTY_LIMIT_MS`], the
//! agents' requests cannot be said to have overlapped, so no concurrency
//! verdict across agents is given ([`CrossAgent::Refused`]).

use serde::Serialize;

use firsttoken_record::run::RunMember;

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

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_record::run::ClockOffset;

    fn member(segment: u32, began: Option<f64>, u: Option<f64>) -> RunMember {
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
            member(0, Some(1000.0), Some(0.2)),
            member(1, Some(1003.5), Some(0.4)),
            member(1, Some(9000.0), Some(0.1)),
            member(2, Some(1001.0), Some(0.3)),
        ]);
        assert_eq!(s.spread_ms, Some(3.5));
        assert_eq!(s.uncertainty_ms, Some(0.4));
        assert_eq!(s.cross_agent, CrossAgent::Judged);
        assert_eq!(s.segments_started, 3);
    }

    #[test]
    fn a_coarse_clock_refuses_the_verdict() {
        let s = run_start(&[
            member(0, Some(0.0), Some(0.5)),
            member(1, Some(2.0), Some(25.0)),
        ]);
        assert_eq!(
            s.cross_agent,
            CrossAgent::Refused {
                uncertainty_ms: 25.0,
                limit_ms: 20.0
            }
        );
        let s = run_start(&[member(0, Some(0.0), None)]);
        assert_eq!(s.cross_agent, CrossAgent::Unknown);
    }
}

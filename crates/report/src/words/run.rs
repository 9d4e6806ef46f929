//! The words of a run across agents: its state, its counts and how the
//! agents started (`firsttoken runs`, the head of `report --run`).

use firsttoken_record::run::{CrossAgent, RunStart};
use firsttoken_record::run::{RunInfo, RunMember, RunState, RunView};
use firsttoken_record::session::SessionMeta;

use crate::format as fmt;

/// A run's state in a few words: `complete`, `running`, `partial: segment
/// 2/4 missing (agent eu-west@pod-2)`, or, for an agent whose session still
/// reads running but who stopped writing heartbeats, `(agent eu-west@pod-2,
/// silent for 42 s)`.
pub fn state(run: &RunInfo, state: &RunState) -> String {
    match state {
        RunState::Running => "running".into(),
        RunState::Complete => "complete".into(),
        RunState::Partial { missing } => {
            let parts: Vec<String> = missing
                .iter()
                .map(|m| {
                    let who = if m.agents.is_empty() {
                        "no agent joined".to_string()
                    } else {
                        let who: Vec<String> = m
                            .agents
                            .iter()
                            .map(|a| match a.silent_for_ms {
                                Some(ms) => format!("{}, silent for {}", a.agent, fmt::ms(ms)),
                                None => a.agent.clone(),
                            })
                            .collect();
                        format!("agent {}", who.join("; "))
                    };
                    format!("segment {}/{} missing ({who})", m.segment, run.segments)
                })
                .collect();
            format!("partial: {}", parts.join("; "))
        }
    }
}

/// A run's state in one word, for a table column: `running`, `complete`,
/// `partial` (its missing segments are said by [`state`]).
pub fn state_word(state: &RunState) -> &'static str {
    match state {
        RunState::Running => "running",
        RunState::Complete => "complete",
        RunState::Partial { .. } => "partial",
    }
}

/// The head line of a run's report: `run four-agents · complete · 32 of
/// 32 planned requests stored · 4 segments`.
pub fn head(run: &RunView) -> String {
    format!(
        "run {} · {} · {} of {} planned requests stored · {} segments",
        run.info.run_id,
        state(&run.info, &run.state),
        run.counted,
        run.info.planned_requests,
        run.info.segments
    )
}

/// One segment's session: its agent's labels and clock offset to the store.
pub fn segment(m: &RunMember, s: &SessionMeta) -> String {
    let clock = m.clock.map_or("clock not measured".to_string(), |c| {
        format!(
            "clock {} ± {}",
            fmt::precise_ms(c.offset_ms),
            fmt::ms(c.uncertainty_ms)
        )
    });
    format!(
        "segment {}/{} · vantage {} · network {} · host {} · session {} · {clock}",
        m.segment, m.segments, s.labels.vantage, s.labels.network, s.host, s.id
    )
}

/// How the agents started, and whether concurrency is judged across them.
pub fn start(s: &RunStart) -> Vec<String> {
    let mut out = Vec::new();
    match (s.spread_ms, s.uncertainty_ms) {
        (Some(spread), Some(u)) => out.push(format!(
            "start spread across {} segments: {} (store clock; each agent's clock known to ± {})",
            s.segments_started,
            fmt::ms(spread),
            fmt::ms(u)
        )),
        (Some(spread), None) => out.push(format!(
            "start spread across {} segments: {} (clock offsets not measured)",
            s.segments_started,
            fmt::ms(spread)
        )),
        _ => out.push("start spread: no agent recorded its start".into()),
    }
    match s.cross_agent {
        CrossAgent::Judged => {}
        CrossAgent::Refused {
            uncertainty_ms,
            limit_ms,
        } => out.push(format!(
            "no concurrency verdict across agents: an agent's clock is known only to ± {}, above the {} limit, so its requests cannot be said to have overlapped the others'",
            fmt::ms(uncertainty_ms),
            fmt::ms(limit_ms)
        )),
        CrossAgent::Unknown => out.push(
            "no concurrency verdict across agents: an agent measured no clock offset to the store".into(),
        ),
    }
    out
}

//! Conversations: does the wait for the first token grow with the turn?
//! Each conversation path's turns are grouped by turn number (never
//! pooled across turns), per provenance, concurrency level and path; each
//! turn gets its TTFT from the user's action (the flow's start: a first
//! turn's steps, e.g. creating the conversation, included) with a CI, the
//! history it carried, and its difference from turn 1 with a CI.

use serde::Serialize;

use crate::Settings;
use crate::estimate::{Percentile, Stat};
use crate::frame::{Frame, PhaseKind};
use crate::samples::Samples;
use firsttoken_record::session::Provenance;

/// One turn number's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnFigures {
    /// The turn's number (1: a new conversation's first message).
    pub turn: u32,
    /// Turns behind the figures: counted and answered, with a first token.
    pub n: usize,
    /// TTFT from the user's action: median with a CI, ms.
    pub ttft: Stat,
    /// The median number of messages the conversation held before it.
    pub history_messages: f64,
    /// The median size of the measured request's body, bytes.
    pub request_bytes: f64,
    /// Its median TTFT minus turn 1's, with a CI, ms (`None` for turn 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_first: Option<Stat>,
}

/// A conversation path's turns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conversations {
    /// Where the numbers come from.
    pub provenance: Provenance,
    /// Conversations at once, when more than one.
    pub concurrency: Option<u32>,
    /// The app path.
    pub path: String,
    /// Each turn number seen, in order.
    pub turns: Vec<TurnFigures>,
    /// The last turn with an estimate of its difference from turn 1: the
    /// growth over the conversation (`None`: no such turn).
    pub growth: Option<Growth>,
}

/// How much later in a conversation the first token comes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Growth {
    /// The later turn.
    pub turn: u32,
    /// Its median TTFT minus turn 1's, with a CI, ms.
    pub over_first: Stat,
    /// That difference relative to turn 1's median.
    pub relative: f64,
    /// What the interval and the noise threshold allow to be said.
    pub verdict: GrowthVerdict,
}

/// Whether the first token comes later as a conversation goes on: the
/// difference's interval must exclude zero and its point lie beyond the
/// noise threshold (relative to turn 1's median), as comparisons decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrowthVerdict {
    /// Later turns wait longer.
    Grows,
    /// Later turns wait less (the first turn of a new conversation is the
    /// slower).
    Shrinks,
    /// No difference the data can show beyond the noise threshold.
    Flat,
}

/// TTFT by turn for every conversation path in `frame`; empty when no
/// sample is a turn. Warm-ups and failed turns are left out.
pub fn by_turn(frame: &Frame, settings: &Settings) -> Vec<Conversations> {
    type Key = (Provenance, u32, u32);
    // Per turn number: (ttft, history, bytes) of each of its rows.
    type Turns = Vec<(u32, Vec<[f64; 3]>)>;
    // Per (provenance, level, path).
    let mut groups: Vec<(Key, Turns)> = Vec::new();
    for prov in frame.provenances() {
        for &row in frame.rows(prov, PhaseKind::Conversation) {
            let o = frame.obs(row);
            let Some(t) = frame.turn(row) else { continue };
            if !o.timed() || o.ttft.is_nan() {
                continue;
            }
            let key = (prov, o.concurrency, o.path);
            let ix = match groups.iter().position(|g| g.0 == key) {
                Some(ix) => ix,
                None => {
                    groups.push((key, Vec::new()));
                    groups.len() - 1
                }
            };
            let turns = &mut groups[ix].1;
            let tix = match turns.iter().position(|(n, _)| *n == t.turn) {
                Some(i) => i,
                None => {
                    turns.push((t.turn, Vec::new()));
                    turns.len() - 1
                }
            };
            let wait = f64::from(o.flow_wait);
            let ttft = if wait.is_nan() { o.ttft } else { wait + o.ttft };
            turns[tix]
                .1
                .push([ttft, f64::from(t.history_messages), t.request_bytes as f64]);
        }
    }
    let name = |id: u32| frame.str(id).unwrap_or("").to_string();
    groups.sort_by_key(|g| (g.0.0, g.0.1, name(g.0.2)));
    groups
        .into_iter()
        .map(|((provenance, concurrency, path), mut turns)| {
            turns.sort_by_key(|t| t.0);
            let column = |rows: &[[f64; 3]], j: usize| {
                Samples::from_finite(rows.iter().map(|r| r[j]).collect())
            };
            let first = turns.iter().find(|t| t.0 == 1).map(|t| column(&t.1, 0));
            let label = format!("conversation turns {}", name(path));
            let figures: Vec<TurnFigures> = turns
                .iter()
                .map(|(turn, rows)| {
                    let ttft = column(rows, 0);
                    let over_first = match &first {
                        Some(f) if *turn > 1 => Some(crate::bootstrap::difference_stat(
                            &ttft,
                            f,
                            Percentile::P50,
                            settings,
                            &format!("{label} {turn}"),
                        )),
                        _ => None,
                    };
                    TurnFigures {
                        turn: *turn,
                        n: rows.len(),
                        ttft: ttft.stat(Percentile::P50, settings),
                        history_messages: column(rows, 1)
                            .percentile(Percentile::P50)
                            .unwrap_or(0.0),
                        request_bytes: column(rows, 2).percentile(Percentile::P50).unwrap_or(0.0),
                        over_first,
                    }
                })
                .collect();
            let first_median = first
                .as_ref()
                .and_then(|f| f.percentile(Percentile::P50))
                .unwrap_or(0.0);
            let growth = figures.iter().rev().find_map(|f| {
                let d = f.over_first?;
                let e = d.estimate()?;
                let relative = if first_median > 0.0 {
                    e.point / first_median
                } else {
                    0.0
                };
                let beyond = relative.abs() > settings.noise_threshold();
                let verdict = if e.ci.excludes_zero() && beyond && e.ci.lower > 0.0 {
                    GrowthVerdict::Grows
                } else if e.ci.excludes_zero() && beyond && e.ci.upper < 0.0 {
                    GrowthVerdict::Shrinks
                } else {
                    GrowthVerdict::Flat
                };
                Some(Growth {
                    turn: f.turn,
                    over_first: d,
                    relative,
                    verdict,
                })
            });
            Conversations {
                provenance,
                concurrency: (concurrency > 0).then_some(concurrency),
                path: name(path),
                turns: figures,
                growth,
            }
        })
        .collect()
}

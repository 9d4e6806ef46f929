//! Flows: where the wait before a flow's first token goes. A flow path's
//! user waits from the flow's start (the first step's start) to the first
//! token of its measured request; [`flow_shares`] splits that wait into
//! each earlier step, the time between steps (the client's own, and any
//! wait for a connection) and the measured request up to its first token,
//! per provenance, phase, concurrency level and path (never pooled).

use serde::Serialize;

use crate::Settings;
use crate::estimate::{Percentile, Stat};
use crate::frame::{Frame, PhaseKind};
use crate::samples::Samples;
use firsttoken_record::session::Provenance;

/// One part of a flow's wait before its first token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum FlowPartKind {
    /// An earlier step, by its name.
    Step(String),
    /// Between the steps: from one step's whole response to the next
    /// one's start (the client's own time).
    Between,
    /// The measured request, from its start to its first token.
    Measured,
}

/// One part's time across the flow's requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowPart {
    /// Which part.
    pub kind: FlowPartKind,
    /// Its median with a CI, ms.
    pub median: Stat,
    /// Its mean, ms.
    pub mean_ms: f64,
    /// Its share of the mean wait before the first token (mean part /
    /// mean flow TTFT, over the same requests): the parts' shares add up
    /// to 1.
    pub share: f64,
}

/// A flow path's wait before its first token, split by part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowShares {
    /// Where the numbers come from.
    pub provenance: Provenance,
    /// The protocol phase.
    pub phase: PhaseKind,
    /// Concurrency level, for the concurrency phase.
    pub concurrency: Option<u32>,
    /// The app path.
    pub path: String,
    /// Requests behind the figures: counted, succeeded, with a first
    /// token and every step of the flow.
    pub n: usize,
    /// TTFT from the flow's start (the user's wait): median with a CI, ms.
    pub flow_ttft: Stat,
    /// The parts in order: each step, between the steps, the measured
    /// request.
    pub parts: Vec<FlowPart>,
}

/// The wait before the first token of every flow path in `frame`, split
/// by part; empty when no sample is a flow. Warm-ups and failed requests
/// are left out; a request whose steps differ from its group's first (a
/// config changed between sessions) is left out of that group's figures
/// and counted in `n` of none.
pub fn flow_shares(frame: &Frame, settings: &Settings) -> Vec<FlowShares> {
    type Key = (Provenance, PhaseKind, u32, u32);
    // Per group: the step names, then per request (flow TTFT, step ms…,
    // between, measured).
    let mut groups: Vec<(Key, Vec<u32>, Vec<Vec<f64>>)> = Vec::new();
    for f in frame.flows.iter() {
        let o = frame.obs(f.row);
        // A conversation's turns are split by turn in `conversations`.
        if !o.timed() || o.ttft.is_nan() || o.phase == PhaseKind::Conversation {
            continue;
        }
        let key = (o.provenance, o.phase, o.concurrency, o.path);
        let names: Vec<u32> = f.steps.iter().map(|s| s.0).collect();
        let ix = match groups.iter().position(|g| g.0 == key) {
            Some(ix) => ix,
            None => {
                groups.push((key, names.clone(), Vec::new()));
                groups.len() - 1
            }
        };
        if groups[ix].1 != names {
            continue;
        }
        let wait = f64::from(o.flow_wait);
        let steps: f64 = f.steps.iter().map(|s| s.1).sum();
        let mut row = Vec::with_capacity(f.steps.len() + 3);
        row.push(wait + o.ttft);
        row.extend(f.steps.iter().map(|s| s.1));
        row.push((wait - steps).max(0.0));
        row.push(o.ttft);
        groups[ix].2.push(row);
    }
    groups.sort_by(|a, b| {
        let name = |k: &Key| frame.str(k.3).unwrap_or("").to_string();
        (a.0.0, a.0.1.index(), a.0.2, name(&a.0)).cmp(&(b.0.0, b.0.1.index(), b.0.2, name(&b.0)))
    });
    groups
        .into_iter()
        .filter(|g| !g.2.is_empty())
        .map(|((provenance, phase, concurrency, path), names, rows)| {
            let column = |j: usize| Samples::from_finite(rows.iter().map(|r| r[j]).collect());
            let total = column(0);
            let total_mean = total.mean().unwrap_or(0.0);
            let kinds = names
                .iter()
                .map(|&n| FlowPartKind::Step(frame.str(n).unwrap_or("").to_string()))
                .chain([FlowPartKind::Between, FlowPartKind::Measured]);
            let parts = kinds
                .enumerate()
                .map(|(j, kind)| {
                    let s = column(j + 1);
                    let mean_ms = s.mean().unwrap_or(0.0);
                    FlowPart {
                        kind,
                        median: s.stat(Percentile::P50, settings),
                        mean_ms,
                        share: if total_mean > 0.0 {
                            mean_ms / total_mean
                        } else {
                            0.0
                        },
                    }
                })
                .collect();
            FlowShares {
                provenance,
                phase,
                concurrency: (concurrency > 0).then_some(concurrency),
                path: frame.str(path).unwrap_or("").to_string(),
                n: rows.len(),
                flow_ttft: total.stat(Percentile::P50, settings),
                parts,
            }
        })
        .collect()
}

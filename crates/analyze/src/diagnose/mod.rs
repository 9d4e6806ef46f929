//! Diagnostics: what the numbers say about the app, each with its figures,
//! their CIs and a one-line human summary.
//!
//! Every diagnostic is a pure function of the rows (plus sessions where
//! labels or session state matter) and [`crate::Settings`] (which carries the
//! bootstrap seed). Each comes in two forms: over `&[SampleRow]` (validated
//! into a [`Frame`] first, hence the `Result`) and over a [`Frame`] (for a
//! report that builds the frame once, streaming rows from a store).
//! Results come one per provenance kind present, since kinds never pool.
//! Warm-ups and failed requests never enter timings; failures show as
//! error rates.
//!
//! | diagnostic | rows used |
//! |---|---|
//! | [`mod@overhead`] | warm (app) vs direct (the `default` strategy when present), ping beside, in sessions that have both |
//! | [`mod@connection`] | fresh vs warm, in sessions that have both |
//! | [`mod@concurrency`] | concurrency rows per level, against c = 1 (or warm) |
//! | [`mod@cold`] | each cold probe against the warm distribution |
//! | [`mod@providers`] | direct rows per strategy and per served provider |
//! | [`mod@routes`] | app rows per path: funnel of reported routes; warm TTFT per path |
//! | [`mod@drift`] | warm TTFT and ping RTT per UTC day |
//! | [`mod@limits`] | everything: what the data cannot support |

use firsttoken_record::session::Provenance;

use crate::frame::{Frame, PhaseKind};

pub mod cold;
pub mod concurrency;
pub mod connection;
pub mod drift;
pub mod limits;
pub mod overhead;
pub mod providers;
pub mod routes;

pub use cold::{ColdProbe, ColdStart, cold_start, cold_start_frame};
pub use concurrency::{
    ConcurrencyLevel, ConcurrencyWall, WallVerdict, concurrency_wall, concurrency_wall_frame,
};
pub use connection::{ConnectionCost, connection_cost, connection_cost_frame};
pub use drift::{DayChange, DayStats, Drift, drift, drift_frame};
pub use limits::{Limit, LimitKind, Limits, limits, limits_frame};
pub use overhead::{
    Overhead, PathOverhead, ServerTimingBreakdown, TimingPart, overhead, overhead_frame,
};
pub use providers::{ProviderStats, Providers, Share, providers, providers_frame};
pub use routes::{Funnel, PathStats, RouteStats, Routes, routes, routes_frame};

/// Rows of any of `phases` with provenance `prov`, ascending.
pub(crate) fn rows_of(frame: &Frame, prov: Provenance, phases: &[PhaseKind]) -> Vec<u32> {
    let mut v: Vec<u32> = phases
        .iter()
        .flat_map(|&p| frame.rows(prov, p).iter().copied())
        .collect();
    if phases.len() > 1 {
        v.sort_unstable();
    }
    v
}

/// Which sessions have at least one counted row among `rows`.
pub(crate) fn session_set(frame: &Frame, rows: &[u32]) -> Vec<bool> {
    let mut set = vec![false; frame.sessions.len()];
    for &i in rows {
        let o = frame.obs(i);
        if o.counted() {
            set[o.session as usize] = true;
        }
    }
    set
}

/// Intersection of two session sets.
pub(crate) fn both(a: &[bool], b: &[bool]) -> Vec<bool> {
    a.iter().zip(b).map(|(x, y)| *x && *y).collect()
}

/// `rows` restricted to the sessions in `set`.
pub(crate) fn within(frame: &Frame, rows: &[u32], set: &[bool]) -> Vec<u32> {
    rows.iter()
        .copied()
        .filter(|&i| set[frame.obs(i).session as usize])
        .collect()
}

/// Provenance kinds for which `phases` have rows.
pub(crate) fn provenances_with(frame: &Frame, phases: &[PhaseKind]) -> Vec<Provenance> {
    frame
        .provenances()
        .into_iter()
        .filter(|&p| phases.iter().any(|&ph| !frame.rows(p, ph).is_empty()))
        .collect()
}

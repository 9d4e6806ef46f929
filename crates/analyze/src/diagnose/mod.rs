//! Diagnostics: what the numbers say about the app, as data — each with
//! its figures, their CIs and, for every change it reports, a
//! [`crate::Finding`] whose [`crate::Direction`] is decided from the
//! interval. No diagnostic writes a sentence: the report stage does.
//!
//! Every diagnostic is a pure function of a [`Frame`] (plus sessions where
//! labels or session state matter) and [`crate::Settings`] (which carries
//! the bootstrap seed); build the frame once with [`Frame::from_rows`] or
//! [`crate::FrameBuilder`].
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

pub use cold::{ColdProbe, ColdStart, cold_start};
pub use concurrency::{ConcurrencyLevel, ConcurrencyWall, WallVerdict, concurrency_wall};
pub use connection::{ConnectionCost, connection_cost};
pub use drift::{DayChange, DayStats, Drift, drift};
pub use limits::{Limit, LimitKind, Limits, limits};
pub use overhead::{Overhead, PathOverhead, ServerTimingBreakdown, TimingPart, overhead};
pub use providers::{ProviderStats, Providers, Share, providers};
pub use routes::{Funnel, PathStats, RouteStats, Routes, routes};

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

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
//! Overhead, connection cost, concurrency wall and cold start come one per
//! app path as well ([`PathScope::One`]): paths that behave differently are
//! never pooled into one figure; where several paths have rows, one more
//! entry pools them, labelled [`PathScope::Pooled`], as a summary only.
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
//! | [`mod@clock`] | every counted, successful row: its clock, client lag and first-token read, per session |
//! | [`mod@limits`] | everything: what the data cannot support |

use firsttoken_record::session::Provenance;
use serde::Serialize;

use crate::frame::{Frame, NONE, PhaseKind};

pub mod clock;
pub mod cold;
pub mod concurrency;
pub mod connection;
pub mod drift;
pub mod limits;
pub mod overhead;
pub mod providers;
pub mod routes;

pub use clock::{CLIENT_LAG_THRESHOLD_MS, ClientClock, SessionClock, client_clock};
pub use cold::{ColdProbe, ColdStart, ColdThreshold, cold_start};
pub use concurrency::{ConcurrencyLevel, ConcurrencyWall, WallVerdict, concurrency_wall};
pub use connection::{ConnectionCost, HandshakeTls, PhaseTime, connection_cost};
pub use drift::{DayChange, DayStats, Drift, drift};
pub use limits::{Limit, LimitKind, Limits, limits};
pub use overhead::{
    Overhead, ServerTimingBreakdown, ServerTotal, TimingPart, TotalSource, overhead,
};
pub use providers::{ProviderStats, Providers, Share, providers};
pub use routes::{
    Astray, BUFFERED_SPREAD_MS, Buffering, Funnel, PathStats, PromptId, RouteStats, Routes, routes,
};

/// Which app paths a diagnostic's figures describe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PathScope {
    /// One app path; `None` when the config names no paths.
    One {
        /// The path's name.
        path: Option<String>,
    },
    /// Several paths pooled: a labelled summary, never a diagnosis of any
    /// one of them.
    Pooled {
        /// The paths pooled, in name order; empty when the diagnostic has
        /// no app rows at all.
        paths: Vec<String>,
    },
}

impl PathScope {
    /// True for the pooled summary.
    pub fn is_pooled(&self) -> bool {
        matches!(self, PathScope::Pooled { .. })
    }
}

/// One path scope with the row filter it stands for.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub paths: PathScope,
    /// `Some(path id)`: app rows of that path only (`NONE` for rows without
    /// a path); `None`: every app row (the pooled summary).
    filter: Option<u32>,
}

impl Scope {
    /// Every app row, for a diagnostic with no app rows at all (its app
    /// side is then empty, whatever the scope).
    pub fn everything() -> Scope {
        Scope {
            paths: PathScope::Pooled { paths: Vec::new() },
            filter: None,
        }
    }

    /// The scope in a bootstrap label (which seeds its resampling).
    pub fn key(&self) -> &str {
        match &self.paths {
            PathScope::One { path } => path.as_deref().unwrap_or("-"),
            PathScope::Pooled { .. } => "all-paths",
        }
    }
}

/// Does an app phase's row belong to the scope? Direct and ping rows are
/// not on an app path and always belong.
pub(crate) fn in_scope(frame: &Frame, scope: &Scope, i: u32) -> bool {
    let o = frame.obs(i);
    match scope.filter {
        None => true,
        Some(_) if matches!(o.phase, PhaseKind::Direct | PhaseKind::Ping) => true,
        Some(p) => o.path == p,
    }
}

/// The path scopes of the counted rows of `defining` (provenance `prov`):
/// one per app path in name order, then, when there are several, the
/// pooled summary. Empty when there are no such rows.
pub(crate) fn path_scopes(frame: &Frame, prov: Provenance, defining: &[PhaseKind]) -> Vec<Scope> {
    let mut ids: Vec<u32> = Vec::new();
    for i in rows_of(frame, prov, defining) {
        let o = frame.obs(i);
        if o.counted() && !ids.contains(&o.path) {
            ids.push(o.path);
        }
    }
    ids.sort_by(|a, b| frame.str(*a).cmp(&frame.str(*b)));
    let name = |id: u32| (id != NONE).then(|| frame.str(id).unwrap_or("-").to_string());
    let mut out: Vec<Scope> = ids
        .iter()
        .map(|&id| Scope {
            paths: PathScope::One { path: name(id) },
            filter: Some(id),
        })
        .collect();
    if ids.len() > 1 {
        out.push(Scope {
            paths: PathScope::Pooled {
                paths: ids
                    .iter()
                    .map(|&id| name(id).unwrap_or_else(|| "-".to_string()))
                    .collect(),
            },
            filter: None,
        });
    }
    out
}

/// Rows of any of `phases` with provenance `prov` within `scope`, ascending.
pub(crate) fn scoped_rows(
    frame: &Frame,
    prov: Provenance,
    phases: &[PhaseKind],
    scope: &Scope,
) -> Vec<u32> {
    let mut v = rows_of(frame, prov, phases);
    v.retain(|&i| in_scope(frame, scope, i));
    v
}

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

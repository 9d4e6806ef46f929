//! Before/after verdicts: two sessions path by path, two groups of a key,
//! the demo's per-phase comparison, and the one rule for "slower".
//!
//! A change on one path can vanish when paths are pooled, so sessions are
//! compared per path; the pooled summary is labelled as such and decides
//! nothing when the sessions share a path.

pub use firsttoken_analyze::compare::Gate;
use firsttoken_analyze::compare::{PathComparison, compare_groups, compare_sessions_per_path};
use firsttoken_analyze::{Comparison, Frame, GroupKey, Metric, PhaseKind, Settings};

use crate::pool::{self, PoolError};
use crate::{Loaded, ReadError};

/// Session `a` against session `b` on TTFT within `phase` (every phase:
/// `None`), per path, then the labelled pooled summary when there are
/// several paths.
pub fn sessions_per_path(
    frame: &Frame,
    a: &str,
    b: &str,
    phase: Option<PhaseKind>,
    settings: &Settings,
) -> Result<Vec<PathComparison>, ReadError> {
    Ok(compare_sessions_per_path(
        frame,
        a,
        b,
        phase,
        Metric::Ttft,
        settings,
    )?)
}

/// Slower on some path: judged per path, never on the pooled summary
/// (which decides only when the sessions share no path).
pub fn slower_somewhere(cs: &[PathComparison]) -> bool {
    let per_path = cs.iter().any(|c| c.path.is_some());
    cs.iter()
        .filter(|c| c.path.is_some() || !per_path)
        .any(|c| c.comparison.worse())
}

/// The gate of each comparison of `cs`, in order (see [`Gate`]).
pub fn gates(cs: &[PathComparison]) -> Vec<Gate> {
    cs.iter()
        .map(|c| match (&c.path, c.comparison.worse()) {
            (None, _) if cs.len() > 1 => Gate::Note,
            (_, true) => Gate::Fail,
            _ => Gate::Pass,
        })
        .collect()
}

/// The TTFT of the rows whose `key` is `a` against those whose `key` is
/// `b`, within `phase` when given, each side of one provenance kind.
pub fn groups_by_key(
    frame: &Frame,
    key: GroupKey,
    a: &str,
    b: &str,
    phase: Option<PhaseKind>,
    settings: &Settings,
) -> Result<Comparison, ReadError> {
    let ga = pool::the_group(frame, key, a, phase)?;
    let gb = pool::the_group(frame, key, b, phase)?;
    if ga.provenance != gb.provenance {
        return Err(PoolError::KindsDiffer {
            a: format!("{key}={a}"),
            a_kind: ga.provenance,
            b: format!("{key}={b}"),
            b_kind: gb.provenance,
        }
        .into());
    }
    Ok(compare_groups(frame, &ga, &gb, Metric::Ttft, settings)?)
}

/// The phases the demo compares, in its report's order.
pub const BEFORE_AFTER_PHASES: [PhaseKind; 3] =
    [PhaseKind::Warm, PhaseKind::Concurrency, PhaseKind::Cold];

/// The demo's verdicts: `after` against `before` per phase (warm,
/// concurrency, cold TTFT) and per path, each side named by its code
/// version, path and phase. Never pooled over paths that behave
/// differently, except the cold probes' labelled pooled summary (a handful
/// a path, too few for a rank test on their own; a cold start is the
/// app's, not a path's). A phase either session lacks is left out.
pub fn before_after(loaded: &Loaded, before: &str, after: &str) -> Vec<Comparison> {
    let settings = loaded.settings();
    let version = |id: &str| {
        loaded
            .sessions
            .iter()
            .find(|s| s.id == id)
            .map_or_else(|| id.to_string(), |s| s.labels.code_version.clone())
    };
    let (va, vb) = (version(after), version(before));
    let mut out = Vec::new();
    for phase in BEFORE_AFTER_PHASES {
        let Ok(per_path) = sessions_per_path(&loaded.frame, after, before, Some(phase), &settings)
        else {
            continue;
        };
        for pc in per_path {
            let path = match (&pc.path, phase) {
                (Some(p), _) => p.as_str(),
                (None, PhaseKind::Cold) => "all paths pooled",
                (None, _) => continue,
            };
            let mut c = pc.comparison;
            c.a = format!("{va} · {path} · {}", phase.as_str());
            c.b = vb.clone();
            out.push(c);
        }
    }
    out
}

//! Before/after verdicts: two sessions path by path, two groups of a key,
//! the demo's per-phase comparison, and the one rule for "slower".
//!
//! A change on one path can vanish when paths are pooled, so sessions are
//! compared per path; the pooled summary is labelled as such and decides
//! nothing when the sessions share a path. Phases and concurrency levels
//! are never pooled: sessions are compared one slice (a phase, or one
//! level of the concurrency phase) at a time.

pub use firsttoken_analyze::compare::Gate;
use firsttoken_analyze::compare::{
    PathComparison, Slice, common_slices, compare_groups, compare_sessions_per_path,
};
use firsttoken_analyze::{Comparison, Frame, GroupKey, Metric, PhaseKind, Settings};

use crate::pool::{self, PoolError};
use crate::{Loaded, ReadError};

/// Session `a` against session `b` on TTFT, per path (then the labelled
/// pooled summary when there are several paths), one slice at a time:
/// within `phase` (each of its levels for the concurrency phase), or every
/// app slice both sessions have when `None` — never phases pooled.
pub fn sessions_per_path(
    frame: &Frame,
    a: &str,
    b: &str,
    phase: Option<PhaseKind>,
    settings: &Settings,
) -> Result<Vec<PathComparison>, ReadError> {
    let slices: Vec<Slice> = common_slices(frame, a, b)
        .into_iter()
        .filter(|s| phase.is_none_or(|p| s.phase == p))
        .collect();
    // A phase neither has rows in is compared anyway, so the error says
    // which rows are missing.
    let slices = match (slices.is_empty(), phase) {
        (true, Some(p)) => vec![Slice::phase(p)],
        _ => slices,
    };
    let mut out = Vec::new();
    for slice in slices {
        out.extend(compare_sessions_per_path(
            frame,
            a,
            b,
            slice,
            Metric::Ttft,
            settings,
        )?);
    }
    Ok(out)
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
/// `b`, within `slice`, each side of one provenance kind.
pub fn groups_by_key(
    frame: &Frame,
    key: GroupKey,
    a: &str,
    b: &str,
    slice: Slice,
    settings: &Settings,
) -> Result<Comparison, ReadError> {
    let ga = pool::the_group(frame, key, a, slice)?;
    let gb = pool::the_group(frame, key, b, slice)?;
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

/// The demo's verdicts, and `compare --phase all`'s: `after` against
/// `before` in every app slice both have (warm, fresh, each concurrency
/// level, cold) and per path, each side named by its code version, path
/// and slice. Never pooled over paths that behave differently, except the
/// cold probes' labelled pooled summary (a handful a path, too few for a
/// rank test on their own; a cold start is the app's, not a path's).
pub fn before_after(loaded: &Loaded, before: &str, after: &str) -> Vec<PathComparison> {
    let settings = loaded.settings();
    let version = |id: &str| {
        loaded
            .sessions
            .iter()
            .find(|s| s.id == id)
            .map_or_else(|| id.to_string(), |s| s.labels.code_version.clone())
    };
    let (va, vb) = (version(after), version(before));
    let Ok(all) = sessions_per_path(&loaded.frame, after, before, None, &settings) else {
        return Vec::new();
    };
    all.into_iter()
        .filter_map(|mut pc| {
            let path = match (&pc.path, pc.slice.phase) {
                (Some(p), _) => p.clone(),
                (None, PhaseKind::Cold) => "all paths pooled".to_string(),
                (None, _) => return None,
            };
            pc.comparison.a = format!("{va} · {path} · {}", pc.slice.label());
            pc.comparison.b = vb.clone();
            Some(pc)
        })
        .collect()
}

/// The sessions' code versions differ: their comparison is named by them
/// (`after · chat · warm` against `before`, [`before_after`]).
pub fn versions_differ(loaded: &Loaded, a: &str, b: &str) -> bool {
    let version = |id: &str| {
        loaded
            .sessions
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.labels.code_version.as_str())
    };
    version(a) != version(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{frame, meta, rows, spread, warm};
    use firsttoken_record::session::Provenance::{Emulated, Measured};

    const WARM: PhaseKind = PhaseKind::Warm;

    /// Session `a` against `b` on warm TTFT, per path.
    fn per_path(frame: &Frame) -> Vec<PathComparison> {
        sessions_per_path(frame, "a", "b", Some(WARM), &Settings::new(1)).unwrap()
    }

    #[test]
    fn a_path_that_got_slower_fails_and_the_pooled_summary_is_a_note() {
        let sessions = [meta("a", "v2", Measured), meta("b", "v1", Measured)];
        let all = warm(&[
            ("a", "chat", 600.0, 30),
            ("a", "docs", 100.0, 30),
            ("b", "chat", 300.0, 30),
            ("b", "docs", 100.0, 30),
        ]);
        let cs = per_path(&frame(&sessions, &all));
        let paths: Vec<Option<&str>> = cs.iter().map(|c| c.path.as_deref()).collect();
        assert_eq!(paths, [Some("chat"), Some("docs"), None]);
        assert!(slower_somewhere(&cs));
        assert_eq!(gates(&cs), [Gate::Fail, Gate::Pass, Gate::Note]);
        // The other way round nothing got slower.
        let back = sessions_per_path(
            &frame(&sessions, &all),
            "b",
            "a",
            Some(WARM),
            &Settings::new(1),
        )
        .unwrap();
        assert!(!slower_somewhere(&back));
        assert_eq!(gates(&back), [Gate::Pass, Gate::Pass, Gate::Note]);
    }

    /// Simpson's paradox: the same paths, each as fast as before, but `a`
    /// sent most of its requests to the slow one. The pooled summary reads
    /// slower; per path nothing is, and that decides.
    #[test]
    fn the_pooled_summary_decides_nothing_beside_per_path_verdicts() {
        let sessions = [meta("a", "v2", Measured), meta("b", "v1", Measured)];
        let all = warm(&[
            ("a", "slow", 900.0, 60),
            ("a", "fast", 100.0, 20),
            ("b", "slow", 900.0, 20),
            ("b", "fast", 100.0, 60),
        ]);
        let cs = per_path(&frame(&sessions, &all));
        let pooled = cs.last().unwrap();
        assert_eq!(pooled.path, None);
        assert!(pooled.comparison.worse(), "pooled, a reads slower");
        assert!(!slower_somewhere(&cs));
        assert_eq!(gates(&cs), [Gate::Pass, Gate::Pass, Gate::Note]);
    }

    /// Sessions that share no path have only the pooled comparison: it
    /// decides, and is no note.
    #[test]
    fn without_a_common_path_the_pooled_summary_decides() {
        let sessions = [meta("a", "v2", Measured), meta("b", "v1", Measured)];
        let all = warm(&[("a", "chat", 600.0, 30), ("b", "docs", 300.0, 30)]);
        let cs = per_path(&frame(&sessions, &all));
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].path, None);
        assert!(slower_somewhere(&cs));
        assert_eq!(gates(&cs), [Gate::Fail]);
    }

    #[test]
    fn groups_of_a_key_compare_within_a_phase_and_one_kind() {
        let sessions = [
            meta("a", "v2", Measured),
            meta("b", "v1", Measured),
            meta("c", "v0", Emulated),
        ];
        let mut all = warm(&[("a", "chat", 600.0, 30), ("b", "chat", 300.0, 30)]);
        // Cold requests of v2 as fast as v1's warm ones: outside the phase.
        all.extend(rows(
            "a",
            Measured,
            (PhaseKind::Cold, "chat"),
            30,
            spread(300.0, 30),
        ));
        all.extend(rows("c", Emulated, (WARM, "chat"), 0, spread(300.0, 30)));
        let f = frame(&sessions, &all);
        let s = Settings::new(1);
        let key = GroupKey::CodeVersion;
        let warm = Slice::phase(WARM);
        let c = groups_by_key(&f, key, "v2", "v1", warm, &s).unwrap();
        assert_eq!((c.n_a, c.n_b), (30, 30));
        assert!(c.worse());
        // Phases never pool: v2's cold requests stay out of its warm group.
        let cold = groups_by_key(&f, key, "v2", "v1", Slice::phase(PhaseKind::Cold), &s);
        assert!(cold.is_err(), "v1 has no cold rows");
        let e = groups_by_key(&f, key, "v2", "v0", warm, &s).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot compare code_version=v2 (measured) with code_version=v0 (emulated): provenance kinds are never compared"
        );
        let e = groups_by_key(&f, key, "v1", "v2", Slice::phase(PhaseKind::Cold), &s).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no rows with code_version=v1 in the cold phase"
        );
    }
}

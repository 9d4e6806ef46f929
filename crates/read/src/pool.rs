//! The one pooling policy of the reading side.
//!
//! Rows of different provenance kinds (measured, emulated, imported,
//! synthetic) never pool: grouping always splits by provenance (analyze's
//! [`group`](firsttoken_analyze::group())), and where a command needs one
//! group out of rows of several kinds it is refused, naming the kinds —
//! never averaged, never silently narrowed. Groups are formed within one
//! phase when a phase is asked for, and compared path by path.

use firsttoken_analyze::compare::Slice;
use firsttoken_analyze::group::KeyValue;
use firsttoken_analyze::{Frame, Group, GroupKey, PhaseKind, group_in_slice};
use firsttoken_record::session::Provenance;

/// Groups that cannot be formed or compared as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PoolError {
    /// What was asked for holds rows of several provenance kinds.
    #[error(
        "{what} holds rows of several provenance kinds ({}); they are never pooled — select sessions of one kind",
        kinds_text(.kinds)
    )]
    SeveralKinds {
        /// What was asked for (`code_version=v2 in the warm phase`).
        what: String,
        /// The kinds found.
        kinds: Vec<Provenance>,
    },
    /// Two sides of different provenance kinds.
    #[error(
        "cannot compare {a} ({}) with {b} ({}): provenance kinds are never compared",
        .a_kind.as_str(),
        .b_kind.as_str()
    )]
    KindsDiffer {
        /// One side.
        a: String,
        /// Its kind.
        a_kind: Provenance,
        /// The other side.
        b: String,
        /// Its kind.
        b_kind: Provenance,
    },
    /// No rows for what was asked for.
    #[error("no rows with {what}")]
    NoRows {
        /// What was asked for.
        what: String,
    },
    /// A pilot or session without rows (in the phase asked for).
    #[error("{what}: no rows{}", in_phase(*.phase))]
    Empty {
        /// What has none.
        what: String,
        /// The phase asked for.
        phase: Option<PhaseKind>,
    },
    /// Two sides compared path by path share no path.
    #[error("{a} and {b} have no path in common")]
    NoCommonPath {
        /// One side.
        a: String,
        /// The other side.
        b: String,
    },
}

fn kinds_text(kinds: &[Provenance]) -> String {
    kinds
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` in the warm phase`, or nothing.
pub fn in_phase(phase: Option<PhaseKind>) -> String {
    phase
        .map(|p| format!(" in the {} phase", p.as_str()))
        .unwrap_or_default()
}

/// The one provenance kind of `groups`; `None` when there are none.
/// `what` names them in the refusal when they hold several.
pub fn one_kind(what: &str, groups: &[&Group]) -> Result<Option<Provenance>, PoolError> {
    let mut kinds: Vec<Provenance> = groups.iter().map(|g| g.provenance).collect();
    kinds.sort();
    kinds.dedup();
    match kinds.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        _ => Err(PoolError::SeveralKinds {
            what: what.to_string(),
            kinds,
        }),
    }
}

/// The one group of `frame` (within `slice`: a phase, or one level of the
/// concurrency phase) whose `key` has the value `value`: refused when no
/// row has it, or when its rows are of several provenance kinds.
pub fn the_group(
    frame: &Frame,
    key: GroupKey,
    value: &str,
    slice: Slice,
) -> Result<Group, PoolError> {
    let what = format!("{key}={value}{}", in_slice(slice));
    let mut found: Vec<Group> = group_in_slice(frame, &[key], slice)
        .into_iter()
        .filter(|g| g.label.get(key).is_some_and(|v| v.to_string() == value))
        .collect();
    one_kind(&what, &found.iter().collect::<Vec<_>>())?;
    found.pop().ok_or(PoolError::NoRows { what })
}

/// ` in the warm phase`, ` at c=3`.
pub fn in_slice(slice: Slice) -> String {
    match slice.concurrency {
        Some(k) => format!(" at c={k}"),
        None => in_phase(Some(slice.phase)),
    }
}

/// Of one item per provenance kind, the one with the largest `size`
/// (ties: the first): where a figure needs a single group and any one kind
/// will do (a pilot to plan from), it takes the best-supported kind
/// instead of pooling them.
pub fn largest<T>(items: Vec<T>, size: impl Fn(&T) -> usize) -> Option<T> {
    let mut best: Option<T> = None;
    for it in items {
        if best.as_ref().is_none_or(|b| size(&it) > size(b)) {
            best = Some(it);
        }
    }
    best
}

/// A group's value of `key` as text, `-` when missing.
pub fn value_text(g: &Group, key: GroupKey) -> String {
    g.label
        .get(key)
        .cloned()
        .unwrap_or(KeyValue::Missing)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{frame, meta};
    use firsttoken_analyze::group;
    use firsttoken_record::session::SampleRow;

    fn row(session: &str, provenance: Provenance, phase: PhaseKind, ttft: f64) -> SampleRow {
        crate::testutil::row(session, provenance, (phase, "chat"), 0, ttft)
    }

    #[test]
    fn one_group_of_one_kind_or_a_refusal_naming_the_kinds() {
        let sessions = [
            meta("a", "v2", Provenance::Measured),
            meta("b", "v2", Provenance::Emulated),
            meta("c", "v1", Provenance::Measured),
        ];
        let mut rows = vec![row("a", Provenance::Measured, PhaseKind::Warm, 100.0)];
        rows.push(row("b", Provenance::Emulated, PhaseKind::Warm, 90.0));
        rows.push(row("b", Provenance::Emulated, PhaseKind::Cold, 90.0));
        rows.push(row("c", Provenance::Measured, PhaseKind::Warm, 120.0));
        let frame = frame(&sessions, &rows);
        let g = the_group(
            &frame,
            GroupKey::CodeVersion,
            "v1",
            Slice::phase(PhaseKind::Warm),
        )
        .unwrap();
        assert_eq!(
            (g.rows.clone(), g.provenance),
            (vec![3], Provenance::Measured)
        );
        let e = the_group(
            &frame,
            GroupKey::CodeVersion,
            "v2",
            Slice::phase(PhaseKind::Warm),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "code_version=v2 in the warm phase holds rows of several provenance kinds (measured, emulated); they are never pooled — select sessions of one kind"
        );
        // Within the cold phase only the emulated rows remain.
        let g = the_group(
            &frame,
            GroupKey::CodeVersion,
            "v2",
            Slice::phase(PhaseKind::Cold),
        )
        .unwrap();
        assert_eq!(g.provenance, Provenance::Emulated);
        let e = the_group(
            &frame,
            GroupKey::CodeVersion,
            "v3",
            Slice::phase(PhaseKind::Warm),
        )
        .unwrap_err();
        assert_eq!(
            e,
            PoolError::NoRows {
                what: "code_version=v3 in the warm phase".into()
            }
        );
        // The largest kind, never a pool of both.
        let groups = group(&frame, &[GroupKey::CodeVersion])
            .into_iter()
            .filter(|g| value_text(g, GroupKey::CodeVersion) == "v2")
            .collect();
        let g = largest(groups, |g| g.rows.len()).unwrap();
        assert_eq!((g.provenance, g.rows.len()), (Provenance::Emulated, 2));
    }
}

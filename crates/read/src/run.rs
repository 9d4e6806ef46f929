//! A run across agents as the reading side sees it: its members, its state
//! (on the store's clock, which tells a silent agent), how its agents
//! started, and which stored sample counts for each planned request.
//!
//! Pooling never averages per-agent figures: the rows of every agent go
//! into one frame, so percentiles are computed from the union of rows.
//! Each planned request of a run counts once: a segment request index
//! stored by several sessions of its segment (a rerun repeats a step that
//! was cut short) is taken from the newest session. That is decided from
//! each session's sample keys (`seq`, warm-up) alone, before any row is
//! read.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use firsttoken_record::run::{RunMember, RunView, run_start, run_state};
use firsttoken_record::store::Store;

use crate::ReadError;

/// The samples that count, per session: `(seq, warm-up)` keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counted {
    kept: BTreeMap<String, HashSet<(u64, bool)>>,
}

impl Counted {
    /// The kept keys of a session (none for a session without any).
    pub fn of(&self, session_id: &str) -> &HashSet<(u64, bool)> {
        static NONE: std::sync::OnceLock<HashSet<(u64, bool)>> = std::sync::OnceLock::new();
        self.kept
            .get(session_id)
            .unwrap_or_else(|| NONE.get_or_init(HashSet::new))
    }
}

/// Which keys count: sessions newest first, the first to claim a
/// (segment, segment request index, warm-up) keeps it. Returns the kept
/// keys and how many measured requests they hold.
pub fn claim(
    members: &[(RunMember, Vec<(u64, bool)>)],
) -> (BTreeMap<String, HashSet<(u64, bool)>>, u64) {
    let mut claimed: BTreeSet<(u32, u64, bool)> = BTreeSet::new();
    let mut kept: BTreeMap<String, HashSet<(u64, bool)>> = BTreeMap::new();
    let mut counted = 0u64;
    for (m, keys) in members {
        let own = kept.entry(m.session_id.clone()).or_default();
        for &(seq, warmup) in keys {
            let fresh = m
                .index_of(seq)
                .is_some_and(|k| claimed.insert((m.segment, k, warmup)));
            if fresh {
                own.insert((seq, warmup));
                counted += u64::from(!warmup);
            }
        }
    }
    (kept, counted)
}

/// Run `run_id`: its view and the samples that count, from the run's rows,
/// its members' sessions and their sample keys (no sample row is read).
pub async fn load(store: &Store, run_id: &str) -> Result<(RunView, Counted), ReadError> {
    let info = store.run(run_id).await?.ok_or_else(|| ReadError::NoRun {
        id: run_id.to_owned(),
        store: store.arg(),
    })?;
    let mut members = Vec::new();
    for m in store.run_members(run_id).await? {
        let s = store
            .session(&m.session_id)
            .await?
            .ok_or_else(|| ReadError::RunSessionGone {
                run: run_id.to_owned(),
                session: m.session_id.clone(),
            })?;
        members.push((m, s));
    }
    members.sort_by(|a, b| (a.1.started_at, &a.1.id).cmp(&(b.1.started_at, &b.1.id)));
    let state = run_state(&info, &members, store.store_now_ms().await?);
    let start = run_start(&members.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>());
    // Newest session first: the first to claim an index keeps it.
    let mut keyed = Vec::with_capacity(members.len());
    for (m, s) in members.iter().rev() {
        keyed.push((m.clone(), store.sample_keys(&s.id).await?));
    }
    let (kept, counted) = claim(&keyed);
    Ok((
        RunView {
            info,
            members,
            state,
            start,
            counted,
        },
        Counted { kept },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(session: &str, segment: u32, range: std::ops::Range<u64>) -> RunMember {
        RunMember {
            session_id: session.into(),
            run_id: "r".into(),
            segment,
            segments: 2,
            segment_requests: range.end - range.start,
            ranges: std::iter::once(range).collect(),
            clock: None,
            began_at_ms: None,
            heartbeat_at_ms: None,
            heartbeat_every_ms: None,
        }
    }

    #[test]
    fn the_newest_session_of_a_segment_keeps_a_repeated_request() {
        // Segment 0 ran indices 0..4 once, then a rerun repeated 2..4;
        // segment 1 ran its own 0..2. Keys are (seq, warm-up).
        let rerun = member("s0-rerun", 0, 2..4);
        let first = member("s0", 0, 0..4);
        let other = member("s1", 1, 0..2);
        let (kept, counted) = claim(&[
            (rerun, vec![(0, true), (0, false), (1, false)]),
            (first, vec![(0, false), (1, false), (2, false), (3, false)]),
            (other, vec![(0, false), (1, false)]),
        ]);
        assert_eq!(counted, 6);
        let set = |v: &[(u64, bool)]| v.iter().copied().collect::<HashSet<_>>();
        assert_eq!(kept["s0-rerun"], set(&[(0, true), (0, false), (1, false)]));
        assert_eq!(kept["s0"], set(&[(0, false), (1, false)]));
        assert_eq!(kept["s1"], set(&[(0, false), (1, false)]));
    }
}

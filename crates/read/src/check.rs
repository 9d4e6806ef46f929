//! `firsttoken check` as one call: which session is checked (the newest
//! unless one is named), its thresholds judged with its own seed, and the
//! gate against a baseline, path by path ([`crate::compare`]).

use firsttoken_analyze::check::{Threshold, Verdict, check as judge};
use firsttoken_analyze::compare::{Gate, PathComparison};
use firsttoken_analyze::{PhaseKind, Settings};
use firsttoken_record::session::SessionMeta;
use firsttoken_record::store::Store;

use crate::compare::{gates, sessions_per_path, slower_somewhere};
use crate::{LoadOptions, ReadError, Selection, load, select_sessions};

/// The phase the gate against a baseline compares: warm requests, the
/// steady state the app's own work shows in.
pub const GATE_PHASE: PhaseKind = PhaseKind::Warm;

/// The gate against a baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Against {
    /// The baseline session.
    pub baseline: SessionMeta,
    /// Each comparison (per path, then the labelled pooled summary) with
    /// its gate, in order.
    pub lines: Vec<(PathComparison, Gate)>,
    /// Slower on some path ([`slower_somewhere`]).
    pub slower: bool,
}

/// What `check` found.
#[derive(Debug)]
pub struct Checked {
    /// The session checked.
    pub session: SessionMeta,
    /// One verdict per threshold, in the order given.
    pub verdicts: Vec<Verdict>,
    /// The gate against the baseline, when one was named, or why the two
    /// cannot be compared (sessions of different provenance kinds never
    /// are): the thresholds' verdicts stand either way.
    pub against: Option<Result<Against, ReadError>>,
}

impl Checked {
    /// A threshold failed, or the session is slower than the baseline.
    pub fn failed(&self) -> bool {
        self.verdicts.iter().any(|v| !v.held)
            || self
                .against
                .as_ref()
                .is_some_and(|a| a.as_ref().is_ok_and(|a| a.slower))
    }
}

/// Check session `session` of `store` (id or unique prefix; `None`: the
/// newest): `thresholds` on its app requests, judged with the session's
/// own seed (they judge it alone), and, with a `baseline`, its
/// [`GATE_PHASE`] TTFT against the baseline's, path by path, with the
/// seed of the two.
pub async fn check(
    store: &Store,
    session: Option<&str>,
    baseline: Option<&str>,
    thresholds: &[Threshold],
) -> Result<Checked, ReadError> {
    let checked = match session {
        Some(id) => id.to_string(),
        None => {
            // `select_sessions` refuses an empty store: there is a first.
            let newest = select_sessions(store, &[]).await?;
            newest.into_iter().next().ok_or(ReadError::NoSessions)?.id
        }
    };
    let mut ids = vec![checked];
    ids.extend(baseline.map(str::to_string));
    let loaded = load(store, &Selection::Sessions(ids), LoadOptions::default()).await?;
    let mut sessions = loaded.sessions.iter().cloned();
    let meta = sessions.next().ok_or(ReadError::NoSessions)?;
    let verdicts = judge(
        &loaded.frame,
        &meta.id,
        thresholds,
        &Settings::new(meta.seed),
    );
    let against = sessions.next().map(|base| {
        let cs = sessions_per_path(
            &loaded.frame,
            &meta.id,
            &base.id,
            Some(GATE_PHASE),
            &loaded.settings(),
        )?;
        let slower = slower_somewhere(&cs);
        let gates = gates(&cs);
        Ok(Against {
            baseline: base,
            lines: cs.into_iter().zip(gates).collect(),
            slower,
        })
    });
    Ok(Checked {
        session: meta,
        verdicts,
        against,
    })
}

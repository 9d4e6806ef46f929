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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{frame, meta, put, rows, spread, store};
    use firsttoken_record::session::Provenance::Measured;

    /// A session started `minute` minutes into the day, its warm chat
    /// TTFTs from `base` ms, seed `seed`.
    async fn session(s: &Store, id: &str, minute: u32, base: f64, seed: u64) -> SessionMeta {
        let m = SessionMeta {
            started_at: format!("2026-12-01T00:{minute:02}:00Z").parse().unwrap(),
            seed,
            ..meta(id, "v", Measured)
        };
        put(
            s,
            &m,
            &rows(id, Measured, (GATE_PHASE, "chat"), 0, spread(base, 30)),
        )
        .await;
        m
    }

    #[tokio::test]
    async fn the_newest_session_is_checked_and_gated_against_the_baseline() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir).await;
        let old = session(&s, "s1-old", 1, 100.0, 3).await;
        let new = session(&s, "s2-new", 2, 400.0, 5).await;
        let limits: Vec<Threshold> = ["ttft.p50=1s", "ttft.p95=200ms"]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        let checked = check(&s, None, Some("s1"), &limits).await.unwrap();
        assert_eq!(checked.session.id, new.id, "the newest unless named");
        let held: Vec<bool> = checked.verdicts.iter().map(|v| v.held).collect();
        assert_eq!(held, [true, false]);
        // Judged alone, with its own seed.
        let alone = frame(
            std::slice::from_ref(&new),
            &rows(
                &new.id,
                Measured,
                (GATE_PHASE, "chat"),
                0,
                spread(400.0, 30),
            ),
        );
        assert_eq!(
            checked.verdicts,
            judge(&alone, &new.id, &limits, &Settings::new(new.seed))
        );
        let against = checked.against.as_ref().unwrap().as_ref().unwrap();
        assert_eq!(against.baseline.id, old.id);
        assert_eq!(against.lines.len(), 1, "one common path, no pooled line");
        assert_eq!(against.lines[0].1, Gate::Fail);
        assert!(against.slower && checked.failed());
        // The old one, named, against nothing: its thresholds alone.
        let checked = check(&s, Some("s1"), None, &limits[..1]).await.unwrap();
        assert_eq!(checked.session.id, old.id);
        assert!(checked.against.is_none());
        assert!(!checked.failed());
        let e = check(&s, Some("s9"), None, &limits).await.unwrap_err();
        assert_eq!(e.to_string(), "no session \"s9\" in the store");
    }
}

//! The words of the session commands: what `run` announces before it
//! sends, and what `import`, `import-spans`, `cleanup` and `sessions
//! --delete` did.

use std::fmt::Display;
use std::time::Duration;

use firsttoken_record::UtcTime;
use firsttoken_record::session::{Cleanup, KeepReason, SessionMeta};
use firsttoken_record::store::DeletedSession;

/// What `run` announces before it sends ([`crate::run::planned`]), with
/// the time its idle gaps and open-loop schedule take at the least when
/// that is a second or more: `planned: …; its idle gaps and open-loop
/// schedule alone take 1m 30s`.
pub fn announce(measured: usize, warmups: usize, max_warmups: usize, fixed: Duration) -> String {
    let planned = crate::run::planned(measured, warmups, max_warmups);
    if fixed.as_secs() == 0 {
        return planned;
    }
    format!(
        "{planned}; its idle gaps and open-loop schedule alone take {}",
        humantime::format_duration(Duration::from_secs(fixed.as_secs()))
    )
}

/// An agent's part of a run: `run r1: segment 1/4 of the whole protocol's
/// 320 requests, starting at 2026-12-01T16:00:00.000Z (store clock)`.
pub fn run_part(
    run_id: &str,
    segment: impl Display,
    whole_requests: usize,
    start_at: Option<UtcTime>,
) -> String {
    format!(
        "run {run_id}: segment {segment} of the whole protocol's {whole_requests} requests{}",
        start_at
            .map(|t| format!(", starting at {t} (store clock)"))
            .unwrap_or_default()
    )
}

/// `import`'s check of a file under way: `checking FILE: 40%`.
pub fn import_checking(file: impl Display, percent: u64) -> String {
    format!("checking {file}: {percent}%")
}

/// `import` storing a session: `importing session ID: 40%`.
pub fn import_storing(session: &str, percent: u64) -> String {
    format!("importing session {session}: {percent}%")
}

/// A session `import` left out: `skipped session ID: the store already
/// holds it as ID2`.
pub fn import_skipped(session: &str, held_as: &str) -> String {
    format!("skipped session {session}: the store already holds it as {held_as}")
}

/// A session `import` stored: `imported session ID as ID2 (120 samples,
/// 0 spans)`.
pub fn imported(session: &str, stored_as: &str, samples: u64, spans: u64) -> String {
    format!("imported session {session} as {stored_as} ({samples} samples, {spans} spans)")
}

/// What `import-spans` stored: `imported 3 spans into session ID from
/// FILE; 0 already stored; 1 of other traces not stored; 0 malformed`.
pub fn spans_imported(
    session: &str,
    file: impl Display,
    stored: u64,
    duplicate: u64,
    other_traces: u64,
    malformed: u64,
) -> String {
    format!(
        "imported {stored} spans into session {session} from {file}; {duplicate} already stored; {other_traces} of other traces not stored; {malformed} malformed"
    )
}

/// `import-spans` reaching the session's span cap: `the session's span
/// cap of 200000 was reached: 12 more spans were not stored`.
pub fn span_cap_reached(cap: usize, refused: u64) -> String {
    format!("the session's span cap of {cap} was reached: {refused} more spans were not stored")
}

/// The lines `import-spans` could not read, at most this many named.
pub const BAD_LINES_NAMED: usize = 5;

/// The lines of `lines` that are not OTLP trace data, each with why, the
/// first [`BAD_LINES_NAMED`] named: `2 of 40 lines were not OTLP trace
/// data:` and `  line 3: …` below.
pub fn bad_lines<E: Display>(lines: u64, bad: &[(u64, E)]) -> String {
    let mut out = format!("{} of {lines} lines were not OTLP trace data:", bad.len());
    for (n, e) in bad.iter().take(BAD_LINES_NAMED) {
        out.push_str(&format!("\n  line {n}: {e}"));
    }
    out
}

/// `cleanup` of a session that created no test account.
pub fn nothing_to_clean(session: &str) -> String {
    format!("session {session} created no test accounts: nothing to clean up")
}

/// What a `cleanup` retry did: `cleanup of ID: 3 rows deleted, 0
/// residual` when clean ([`Cleanup::is_clean`]), else why not.
pub fn cleanup_retried(session: &str, c: &Cleanup) -> String {
    match (&c.error, c.residual) {
        (Some(e), _) => format!("cleanup of {session} failed: {e}"),
        (None, Some(0)) => format!(
            "cleanup of {session}: {} rows deleted, 0 residual",
            c.deleted
        ),
        (None, r) => format!("cleanup of {session}: residual {r:?} rows"),
    }
}

/// The question `sessions --delete` asks before it deletes.
pub fn delete_question(meta: &SessionMeta) -> String {
    format!(
        "delete session {} ({}, {}) and all its samples and spans? [y/N] ",
        meta.id,
        meta.provenance.as_str(),
        meta.labels.code_version
    )
}

/// What `sessions --delete` removed.
pub fn deleted(d: &DeletedSession) -> String {
    format!(
        "deleted session {}: {} samples, {} spans, {} test-account ids",
        d.id, d.samples, d.spans, d.test_accounts
    )
}

/// Why `sessions --delete` refused, and what to do instead; `retry` is
/// the cleanup command for the session ([`crate::cleanup_retry`]).
pub fn delete_refused(meta: &SessionMeta, why: &KeepReason, retry: &str) -> String {
    match why {
        KeepReason::Running => format!(
            "session {} is still running (host {}); wait until it ends (a session whose process died on this host is marked partial whenever the store is opened here)",
            meta.id, meta.host
        ),
        KeepReason::AccountsLeft { accounts } => format!(
            "session {} created {accounts} test accounts that its cleanup did not delete, and only the session knows their ids; delete them first ({retry}), or pass --forget-accounts to delete the session anyway",
            meta.id
        ),
    }
}

/// `sessions --delete` without a terminal to ask on and without `--yes`.
pub fn delete_unconfirmed(id: &str) -> String {
    format!(
        "not deleting session {id}: no terminal to confirm on; pass --yes to delete without asking"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_announcement_adds_the_fixed_wait_from_a_second() {
        let planned = crate::run::planned(10, 1, 1);
        assert_eq!(announce(10, 1, 1, Duration::from_millis(900)), planned);
        assert_eq!(
            announce(10, 1, 1, Duration::from_millis(90_500)),
            format!("{planned}; its idle gaps and open-loop schedule alone take 1m 30s")
        );
        let at: UtcTime = "2026-12-01T16:00:00Z".parse().unwrap();
        assert_eq!(
            run_part("r1", "1/4", 320, Some(at)),
            format!(
                "run r1: segment 1/4 of the whole protocol's 320 requests, starting at {at} (store clock)"
            )
        );
        assert_eq!(
            run_part("r1", "0/1", 8, None),
            "run r1: segment 0/1 of the whole protocol's 8 requests"
        );
    }

    #[test]
    fn at_most_five_bad_lines_are_named() {
        let bad: Vec<(u64, &str)> = (1..=7).map(|n| (n, "not OTLP")).collect();
        let text = bad_lines(9, &bad);
        assert!(text.starts_with("7 of 9 lines were not OTLP trace data:\n  line 1: not OTLP"));
        assert_eq!(text.lines().count(), 1 + BAD_LINES_NAMED);
    }

    #[test]
    fn a_retried_cleanup_says_what_it_left() {
        let mut c = Cleanup {
            deleted: 3,
            residual: Some(0),
            ..Cleanup::default()
        };
        assert!(c.is_clean());
        assert_eq!(
            cleanup_retried("s", &c),
            "cleanup of s: 3 rows deleted, 0 residual"
        );
        c.residual = Some(2);
        assert_eq!(
            cleanup_retried("s", &c),
            "cleanup of s: residual Some(2) rows"
        );
        c.residual = None;
        assert_eq!(cleanup_retried("s", &c), "cleanup of s: residual None rows");
        c.error = Some("HTTP 500".into());
        assert_eq!(cleanup_retried("s", &c), "cleanup of s failed: HTTP 500");
    }
}

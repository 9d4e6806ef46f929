//! Claims and limits, one line per kind of limit: a kind found once reads
//! as its own sentence ([`super::limit`]); a kind found for several groups
//! (cells too small, phases failing, sessions lagging or stopped early)
//! says what it means once and lists the groups it affects.

use firsttoken_analyze::diagnose::{Limit, LimitKind, Limits};

use crate::format::{self, ms};

use super::{limit, percentile_name};

/// The groups part of one limit, for a list under its kind.
fn affected(l: &Limit) -> String {
    match l {
        Limit::SmallCell { cell, n, withheld } => {
            let names: Vec<String> = withheld.iter().map(|p| percentile_name(p.get())).collect();
            format!("{} (n = {n}: {})", cell.join(" · "), names.join(", "))
        }
        Limit::HighErrorRate {
            phase,
            path,
            failed,
            requests,
        } => format!(
            "{}{} {} ({failed} of {requests})",
            phase.as_str(),
            path.as_ref().map_or(String::new(), |p| format!(" · {p}")),
            format::percent(Some(*failed as f64 / (*requests).max(1) as f64))
        ),
        Limit::ClientLag {
            session,
            lag_p99_ms,
        } => format!("{session} (p99 = {})", ms(*lag_p99_ms)),
        Limit::PartialSession { session, reason } => format!("{session} ({reason})"),
        other => limit(other),
    }
}

/// What a kind of limit means, said once before the groups it affects.
fn meaning(kind: LimitKind) -> &'static str {
    match kind {
        LimitKind::SmallCell => {
            "percentiles withheld for too few samples (p50 needs 2, p90 10, p95 20, p99 100) in"
        }
        LimitKind::HighErrorRate => {
            "over 5 % of requests failed, so timings describe only the successes, in"
        }
        LimitKind::ClientLag => {
            "the client's own scheduling lag may inflate the timings of sessions"
        }
        LimitKind::PartialSession => {
            "sessions stopped early, so their phases may be unevenly covered"
        }
        LimitKind::CleanupResidue => "test-account cleanup",
        _ => "limits",
    }
}

/// Each kind of limit once, in the order first found, with the groups it
/// affects listed.
pub fn limit_lines(l: &Limits) -> Vec<String> {
    let mut kinds: Vec<LimitKind> = Vec::new();
    for item in &l.items {
        if !kinds.contains(&item.kind()) {
            kinds.push(item.kind());
        }
    }
    kinds
        .into_iter()
        .map(|k| {
            let items: Vec<&Limit> = l.items.iter().filter(|i| i.kind() == k).collect();
            match items.as_slice() {
                [one] => limit(one),
                many => {
                    let listed: Vec<String> = many.iter().map(|i| affected(i)).collect();
                    format!("{}: {}", meaning(k), listed.join("; "))
                }
            }
        })
        .collect()
}

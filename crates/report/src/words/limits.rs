//! Claims and limits, one line per kind of limit: a kind found once reads
//! as its own sentence ([`super::limit`]); a kind found for several groups
//! (cells too small, phases failing, sessions lagging or stopped early)
//! says what it means once and lists the groups it affects.

use firsttoken_analyze::diagnose::{Limit, LimitKind, Limits};

use crate::format::{self, ms, too_few};

use super::{list, percentile_name};

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
        Limit::ClientOverloaded {
            session,
            lag_p99_ms,
            lag_p99_lower_ms,
            ..
        } => format!(
            "{session} (p99 = {}, at least {})",
            ms(*lag_p99_ms),
            ms(*lag_p99_lower_ms)
        ),
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
        LimitKind::ClientOverloaded => OVERLOADED_MEANING,
        LimitKind::CleanupResidue => "test-account cleanup",
        _ => "limits",
    }
}

/// What an overloaded client means, said once.
const OVERLOADED_MEANING: &str = "the measuring client was overloaded: its own numbers are still right \
     (arrivals carry the kernel's receive time), but requests were sent late, so the load the app saw \
     was lower than asked, in";

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

/// One limit as a sentence.
pub fn limit(l: &Limit) -> String {
    match l {
        Limit::OneVantage { vantage } => format!(
            "every session ran from one vantage point ({}): nothing here speaks for users elsewhere",
            if vantage.is_empty() {
                "an unnamed host"
            } else {
                vantage
            }
        ),
        Limit::OneNetwork { network } => format!(
            "every session ran on one network ({}): other networks may differ",
            if network.is_empty() {
                "unlabelled"
            } else {
                network
            }
        ),
        Limit::OneDay { day } => format!(
            "every request ran on one day ({day}): no claim about other days or times of day"
        ),
        Limit::NoServerTiming => {
            "the app sent no Server-Timing: its overhead cannot be broken down into its own phases"
                .to_string()
        }
        Limit::EmulatedUpstream { sessions } => format!(
            "{}: the upstream was the emulator: provider and overhead numbers are not a real provider's",
            list(sessions)
        ),
        Limit::SyntheticData { sessions } => {
            format!(
                "{}: synthetic data: generated, not measured",
                list(sessions)
            )
        }
        Limit::ImportedData { sessions } => format!(
            "{}: imported data: how it was measured is only as known as its export says",
            list(sessions)
        ),
        Limit::SmallCell { cell, n, withheld } => {
            let names: Vec<String> = withheld.iter().map(|p| percentile_name(p.get())).collect();
            let needed = withheld.iter().map(|p| p.min_n()).min().unwrap_or(0);
            format!(
                "{}: {} withheld: {}",
                cell.join(" · "),
                names.join(", "),
                too_few(*n, needed)
            )
        }
        Limit::ClientLag {
            session,
            lag_p99_ms,
        } => format!(
            "session {session}: the client's own scheduling lag reached p99 = {}, so its timings may be inflated",
            ms(*lag_p99_ms)
        ),
        Limit::ClientOverloaded {
            session,
            lag_p99_ms,
            lag_p99_lower_ms,
            threshold_ms,
        } => format!(
            "session {session}: the measuring client was overloaded (client lag p99 = {}, its interval \
             starts at {}, above {}): its own numbers are still right, since arrivals carry the kernel's \
             receive time, but requests were sent late, so the app saw less load than asked",
            ms(*lag_p99_ms),
            ms(*lag_p99_lower_ms),
            ms(*threshold_ms)
        ),
        Limit::CleanupResidue {
            session,
            created,
            residual,
            error,
        } => {
            let why = match (error, residual) {
                (Some(e), _) => format!("cleanup failed ({e})"),
                (None, Some(r)) => format!("{r} test account row(s) left behind"),
                (None, None) => "cleanup was not verified (no count query)".to_string(),
            };
            format!("session {session}: {why} of {created} created")
        }
        Limit::PartialSession { session, reason } => format!(
            "session {session} stopped early ({reason}): its phases may be unevenly covered"
        ),
        Limit::NoDirect => {
            "no direct requests: the app's overhead cannot be separated from the model's own time"
                .to_string()
        }
        Limit::NoPing => "no pings: no network baseline to tell network from app".to_string(),
        Limit::MissingSessionMeta { sessions } => format!(
            "rows of {} have no session metadata: their labels are unknown and they cannot be checked for lag or cleanup",
            list(sessions)
        ),
        Limit::HighErrorRate {
            phase,
            path,
            failed,
            requests,
        } => format!(
            "{}{}: {} of requests failed ({failed} of {requests}); its timings describe only the successes",
            phase.as_str(),
            path.as_ref()
                .map_or(String::new(), |p| format!(" on path {p}")),
            format::percent(Some(*failed as f64 / (*requests).max(1) as f64))
        ),
    }
}

/// The name of a limit's kind: `one vantage point`.
pub fn limit_kind(l: &Limit) -> &'static str {
    match l {
        Limit::OneVantage { .. } => "one vantage point",
        Limit::OneNetwork { .. } => "one network",
        Limit::OneDay { .. } => "one day",
        Limit::NoServerTiming => "no server timing",
        Limit::EmulatedUpstream { .. } => "emulated upstream",
        Limit::SyntheticData { .. } => "synthetic data",
        Limit::ImportedData { .. } => "imported data",
        Limit::SmallCell { .. } => "small n in some cells",
        Limit::ClientLag { .. } => "client lag",
        Limit::ClientOverloaded { .. } => "overloaded client",
        Limit::CleanupResidue { .. } => "cleanup residue",
        Limit::PartialSession { .. } => "partial session",
        Limit::NoDirect => "no direct baseline",
        Limit::NoPing => "no ping baseline",
        Limit::MissingSessionMeta { .. } => "missing session metadata",
        Limit::HighErrorRate { .. } => "high error rate",
    }
}

/// What the claims-and-limits section says when it has no limit to list.
pub const NO_LIMITS: &str = "no structural limits found";

/// The limits in one line: `4 limit(s): one vantage point, one day, …`.
pub fn limits(l: &Limits) -> String {
    if l.items.is_empty() {
        return NO_LIMITS.to_string();
    }
    let mut kinds: Vec<&str> = Vec::new();
    for item in &l.items {
        let name = limit_kind(item);
        if !kinds.contains(&name) {
            kinds.push(name);
        }
    }
    format!("{} limit(s): {}", l.items.len(), kinds.join(", "))
}

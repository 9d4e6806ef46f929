//! The opening findings, one short line each: what changed, for which
//! group, by how much (with the interval) and on how many requests. The
//! ranking is analysis's ([`firsttoken_analyze::rank_findings`]); every
//! word is here. A line states a direction only when its finding's
//! interval supports one.

use firsttoken_analyze::diagnose::WallVerdict;
use firsttoken_analyze::traces::WallReason;
use firsttoken_analyze::{Direction, Finding, FindingKind, RankedFinding};

use crate::format::{Unit, ms, signed_stat, stat};

use super::undecided;

/// The short name of the section a finding points to, a word of its
/// title: `concurrency` (section "Concurrency wall").
pub fn section_name(section: &str) -> &'static str {
    match section {
        "comparisons" => "comparison",
        "overhead" => "overhead",
        "connection" => "connection",
        "concurrency" => "concurrency",
        "cold" => "cold",
        "routes" => "routes",
        "providers" => "providers",
        "spans" => "spans",
        "engine" => "engine",
        _ => "report",
    }
}

/// `n = 15 vs 15`.
fn counts(f: &Finding) -> String {
    format!("n = {} vs {}", f.n_a, f.n_b)
}

/// The setup part of a group label (`before` of `before · chat`).
fn setup<'a>(label: &'a str, path: &str) -> &'a str {
    label
        .strip_suffix(path)
        .map_or("", |s| s.trim_end_matches(" · "))
}

fn group(f: &RankedFinding, i: usize) -> &str {
    f.groups.get(i).map_or("", String::as_str)
}

/// A finding's statement, without its pointer.
pub fn finding(f: &RankedFinding) -> String {
    let g = group(f, 0);
    // A finding stated by values (a repeated cold start) has no interval.
    let Some(x) = &f.finding else {
        if let FindingKind::Reconnections {
            new_connections,
            warm,
            stale_retries,
        } = &f.kind
        {
            return format!(
                "{g}: warm requests used new connections: {new_connections} of {warm} ({stale_retries} found the kept one closed after sending); warm figures leave them out"
            );
        }
        return match super::cold_finding(&f.kind) {
            Some(s) => format!("{g}: {s}"),
            None => g.to_string(),
        };
    };
    let d = x.direction;
    let up = d == Direction::Increase;
    let n = counts(x);
    let ms_stat = stat(Unit::Ms, &x.estimate);
    let signed = signed_stat(Unit::Ms, &x.estimate);
    if !d.is_change() {
        return match &f.kind {
            FindingKind::Misrouting {
                expected,
                route,
                astray,
                reported,
                ..
            } => format!(
                "{g}: {astray}/{reported} to {route}, not {expected}; \
                 TTFT {route} vs {expected}: {}",
                undecided(d)
            ),
            _ => format!("{g}: {}: {signed}, {n}", undecided(d)),
        };
    }
    match &f.kind {
        FindingKind::Comparison { a, b, metric } => format!(
            "{a} is {} than {b} ({}): {signed}, {n}",
            if up { "slower" } else { "faster" },
            metric.name()
        ),
        FindingKind::Overhead if up => {
            format!("{g}: app adds {ms_stat} over the bare model, {n}")
        }
        FindingKind::Overhead => {
            format!("{g}: app is faster than the bare model: {signed}, {n}")
        }
        FindingKind::Connection if up => format!("{g}: a new connection adds {ms_stat}, {n}"),
        FindingKind::Connection => format!("{g}: a new connection lowers TTFT: {signed}, {n}"),
        FindingKind::ConnectionSetup => format!(
            "{g}: a new connection spends {ms_stat} setting up, n = {}",
            x.n_a
        ),
        FindingKind::Concurrency { level, verdict, .. } => {
            let r = stat(Unit::Ratio, &x.estimate);
            let what = match (verdict, up) {
                (WallVerdict::OneAtATime, _) => "one at a time, TTFT",
                (WallVerdict::Limited, _) => "limited parallelism, TTFT",
                (_, true) => "TTFT rises to",
                (_, false) => "TTFT falls to",
            };
            format!("{g}: {what} {r} at c={level}, {n}")
        }
        FindingKind::ColdStart { .. } => {
            format!("{g}: {}", super::cold_finding(&f.kind).unwrap_or_default())
        }
        FindingKind::PathDifference { path, fastest } => {
            let s = setup(g, path);
            let s = if s.is_empty() {
                String::new()
            } else {
                format!("{s}: ")
            };
            format!(
                "{s}{path} is {} than {fastest}: {signed}, {n}",
                if up { "slower" } else { "faster" },
            )
        }
        FindingKind::Misrouting {
            expected,
            route,
            astray,
            reported,
            ..
        } => format!(
            "{g}: {astray}/{reported} to {route}, not {expected}: {signed} a request, n = {}",
            x.n_a
        ),
        FindingKind::QueueWait { level, reason } => {
            let why = match reason {
                WallReason::WaitedForWorker => "requests waited for the worker: ",
                WallReason::Both => "requests waited for the worker and the handler slowed: ",
                _ => "",
            };
            let verb = if up { "rose" } else { "fell" };
            format!("{g}: {why}the wait before the handler {verb} by {signed} at c={level}, {n}")
        }
        FindingKind::EngineQueue { level, reason } => {
            let why = match reason {
                WallReason::WaitedForWorker => "requests queued for the engine: ",
                WallReason::Both => "requests queued for the engine and its prefill slowed: ",
                _ => "",
            };
            let verb = if up { "rose" } else { "fell" };
            format!("{g}: {why}the time outside prefill {verb} by {signed} at c={level}, {n}")
        }
        // Stated above, by its count.
        FindingKind::Reconnections { .. } => g.to_string(),
        FindingKind::Providers { .. } => format!(
            "{g} has {} first token than {}: {signed}, {n}",
            if up { "a later" } else { "an earlier" },
            group(f, 1)
        ),
    }
}

/// The wait a finding explains, for a note: `explains 1.24 s per request`.
pub fn wait(f: &RankedFinding) -> String {
    match (f.wait_ms, f.wait_ci) {
        (Some(w), Some(ci)) => format!(
            "explains {} [{}, {}] of wait per affected request",
            ms(w),
            ms(ci.lower),
            ms(ci.upper)
        ),
        (Some(w), None) => format!(
            "explains {} of wait per affected request (the median of the values above: each is one request, with no interval)",
            ms(w)
        ),
        (None, _) => "no wait it explains can be told apart from zero".to_string(),
    }
}

/// The terminal and Markdown line: rank, statement and pointer
/// (`1. before · chat: … → §Concurrency wall`).
pub fn line(f: &RankedFinding) -> String {
    format!("{}. {} → §{}", f.rank, finding(f), section_name(f.section))
}

/// What the findings list says when it is empty.
pub const NO_FINDINGS: &str =
    "no change with an interval that excludes zero: nothing here explains user wait";

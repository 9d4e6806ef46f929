//! Sentences about the app's server spans ([`firsttoken_analyze::traces`]):
//! the clock offset, which requests have spans, the server time split into
//! parts, the concurrency wall's cause and two paths part by part. Words
//! follow intervals: "rose", "grew", "more" only when the finding's
//! direction says so.

use firsttoken_analyze::traces::gaps::{Border, Uncovered};
use firsttoken_analyze::traces::{
    Category, Coverage, PathContrast, SessionOffset, SpanSplit, WallCause, WallReason,
};
use firsttoken_analyze::{Direction, Stat};

use super::{undecided, withheld};
use crate::format::{Unit, ms, percent, precise_ms, signed_stat, stat};

/// `chat`, or `(no path)`; with the setup's values first when several.
pub fn scope_label(scope: &str, path: Option<&str>) -> String {
    firsttoken_analyze::findings::short_label(scope, Some(path.unwrap_or("(no path)")))
}

/// The clock offset of one session.
pub fn offset(s: &SessionOffset) -> String {
    let Some(e) = &s.offset else {
        return format!(
            "session {}: no request has both a server root span and a first response byte, so the server's clock offset is unknown and server times are not placed on the client's axis",
            s.session_id
        );
    };
    let side = if e.lower_ms > 0.0 {
        "ahead of"
    } else if e.upper_ms < 0.0 {
        "behind"
    } else {
        "indistinguishable from"
    };
    let mut out = format!(
        "session {}: the server's clock is {side} firsttoken's by {} ± {} ([{}, {}], from {} request/response pairs)",
        s.session_id,
        precise_ms(e.offset_ms),
        ms(e.uncertainty_ms),
        precise_ms(e.lower_ms),
        precise_ms(e.upper_ms),
        e.pairs,
    );
    if !e.consistent {
        out.push_str(
            "; the requests' bounds do not overlap (the clocks drifted, or the server stamps its span after it starts to answer), so this interval only spans them and offset-corrected times are less certain than stated",
        );
    }
    out
}

fn signed(v: f64) -> String {
    if v >= 0.0 {
        format!("+{}", ms(v))
    } else {
        format!("−{}", ms(-v))
    }
}

/// Requests with and without spans, for one phase and path.
pub fn coverage(c: &Coverage) -> String {
    let label = scope_label(&c.scope.scope, c.scope.path.as_deref());
    let mut s = format!(
        "{label} ({}): {} of {} requests have server spans",
        c.phase.as_str(),
        c.traced,
        c.requests
    );
    let untraced = c.untraced();
    if untraced > 0 {
        let no_id = c.requests - c.with_trace_id;
        let dropped = c.with_trace_id - c.traced - c.without_root;
        let mut why = Vec::new();
        if no_id > 0 {
            why.push(format!("{no_id} sent no trace id"));
        }
        if dropped > 0 {
            why.push(format!("{dropped} had none reported"));
        }
        if c.without_root > 0 {
            why.push(format!("{} lack the server's root span", c.without_root));
        }
        s.push_str(&format!(
            "; {untraced} without ({}) still count in every other figure",
            why.join(", ")
        ));
    }
    s
}

/// `4 sequential calls`, `1 call`, `2 calls, overlapping` (medians per
/// request).
fn calls(median_calls: f64, sequential: usize, requests: usize) -> String {
    let n = format!("{median_calls}");
    if median_calls == 1.0 {
        return "1 call".to_string();
    }
    if requests > 0 && sequential == requests {
        format!("{n} sequential calls")
    } else if sequential == 0 {
        format!("{n} calls, overlapping")
    } else {
        format!("{n} calls, sequential in {sequential} of {requests} requests")
    }
}

/// What a gap borders: `right before a database call`.
pub fn border(b: &Border) -> String {
    match b {
        Border::Before { group, .. } => format!("right before a {group} call"),
        Border::After { group, .. } => format!("right after a {group} call"),
        Border::None => "where no span begins or ends".to_string(),
    }
}

/// Where a path's uncovered time lies: `in a median of 4 gaps a request;
/// 92 % of it right before a database call (median gap 327 ms [310 ms,
/// 340 ms], 4 a request): time the spans do not cover, e.g. connection
/// setup`. `None` without gaps.
pub fn uncovered(u: &Uncovered) -> Option<String> {
    let top = u.places.first()?;
    let count = |x: f64| {
        if x == 1.0 {
            "1 gap".to_string()
        } else {
            format!("{x} gaps")
        }
    };
    let at = border(&top.border);
    let what = match &top.border {
        Border::Before {
            category: Category::Database | Category::OutgoingHttp | Category::ModelProvider,
            ..
        } => ": time the spans do not cover, e.g. opening a connection",
        _ => ": time the spans do not cover",
    };
    Some(format!(
        "in a median of {} a request; {:.0} % of it {at} (median gap {}, {} a request){what}",
        count(u.median_gaps),
        100.0 * top.share,
        stat(Unit::Ms, &top.median_gap),
        count(top.per_request)
    ))
}

/// The server time of one path, split into parts (the app overhead's
/// split when the overhead is known).
pub fn split(s: &SpanSplit) -> String {
    let label = scope_label(&s.scope.scope, s.scope.path.as_deref());
    let phases: Vec<&str> = s.phases.iter().map(|p| p.as_str()).collect();
    let mut out = format!(
        "{label}: server time before the first token {} (median over {} traced of {} {} requests)",
        stat(Unit::Ms, &s.before_first_token),
        s.traced,
        s.requests,
        phases.join("/")
    );
    let parts: Vec<String> = s
        .parts
        .iter()
        .filter(|p| p.median.point().is_some_and(|m| m > 0.0))
        .map(|p| {
            if p.stream {
                // The part's name is `<group> (stream)`: say what it is.
                let group = p.group.strip_suffix(" (stream)").unwrap_or(&p.group);
                return format!(
                    "{group}, streaming until the first token {} (the upstream's own time to first token: its client span ended at the response headers)",
                    stat(Unit::Ms, &p.median)
                );
            }
            let mut x = format!(
                "{} {} in {}",
                p.group,
                stat(Unit::Ms, &p.median),
                calls(p.median_calls, p.sequential, p.requests)
            );
            if let Some(o) = p.share_of_overhead {
                x.push_str(&format!(", {}", share_of_overhead(o)));
            }
            x
        })
        .collect();
    if !parts.is_empty() {
        out.push_str(&format!(": {}", parts.join("; ")));
    }
    if let Some(q) = &s.queue_wait {
        out.push_str(&format!(
            "; queue wait before the handler {}",
            stat(Unit::Ms, q)
        ));
    }
    out.push_str(&format!("; rest {}", stat(Unit::Ms, &s.rest)));
    if let Some(u) = uncovered(&s.uncovered) {
        out.push_str(&format!(" ({u})"));
    }
    if let Some(p) = s.receive_after_sent.point() {
        out.push_str(&format!(
            "; the server received each request {} after firsttoken sent it (median, offset-corrected: ± the clock offset's uncertainty)",
            signed(p)
        ));
    }
    if let Some(p) = &s.provider_first_token {
        out.push_str(&format!(
            "; the provider's own first token came {} into its call",
            stat(Unit::Ms, p)
        ));
    }
    out
}

/// A part's median as a share of the app overhead's median. Both are
/// medians (of different requests), so a part can exceed the overhead; it
/// is then said so, never as a share above 100 %.
pub fn share_of_overhead(share: f64) -> String {
    if share > 1.0 {
        "more than the app overhead's median".to_string()
    } else {
        format!("{} of the app overhead", percent(Some(share)))
    }
}

/// The app overhead's split by spans, to replace the Server-Timing one.
pub fn overhead_parts(s: &SpanSplit) -> String {
    let (model, app): (Vec<_>, Vec<_>) = s
        .parts
        .iter()
        .filter(|p| p.median.point().is_some_and(|m| m > 0.0))
        .partition(|p| p.category == Category::ModelProvider);
    let app: Vec<String> = app
        .iter()
        .map(|p| {
            let m = ms(p.median.point().unwrap_or(0.0));
            match p.share_of_overhead {
                Some(o) => format!("{} {m} ({})", p.group, share_of_overhead(o)),
                None => format!("{} {m}", p.group),
            }
        })
        .collect();
    let mut out = if app.is_empty() {
        "; its server spans name no database, HTTP or auth work".to_string()
    } else {
        format!(
            "; its server spans (median per request): {}",
            app.join(", ")
        )
    };
    for p in model {
        out.push_str(&format!(
            "; the {} call before the first token, {}, is the model's time, not overhead",
            p.group,
            ms(p.median.point().unwrap_or(0.0))
        ));
    }
    out
}

fn change(f: &firsttoken_analyze::Finding, up: &str) -> String {
    match f.direction {
        Direction::Increase => format!("{up} by {}", signed_stat(Unit::Ms, &f.estimate)),
        Direction::Decrease => format!("fell by {}", signed_stat(Unit::Ms, &f.estimate)),
        Direction::NoDetectableDifference
        | Direction::TooSmallToMatter
        | Direction::Inconclusive => {
            super::undecided_figure(f, Unit::Ms, &signed_stat(Unit::Ms, &f.estimate))
        }
        Direction::TooFewSamples => withheld(&f.estimate, f.n_a, f.n_b),
    }
}

/// The concurrency wall explained by the spans.
pub fn wall(w: &WallCause) -> String {
    let label = scope_label(&w.scope.scope, w.scope.path.as_deref());
    let Some(top) = w.levels.last() else {
        return format!("{label}: no concurrency level above the baseline has spans");
    };
    let k = top.concurrency;
    let wait = change(&top.wait_change, "rose");
    let handler = match top.handler_ratio.direction {
        Direction::Increase => format!(
            "grew to {} of the baseline's",
            stat(Unit::Ratio, &top.handler_ratio.estimate)
        ),
        Direction::Decrease => format!(
            "fell to {} of the baseline's",
            stat(Unit::Ratio, &top.handler_ratio.estimate)
        ),
        Direction::NoDetectableDifference
        | Direction::TooSmallToMatter
        | Direction::Inconclusive => super::undecided_figure(
            &top.handler_ratio,
            Unit::Ratio,
            &format!(
                "{} of the baseline's",
                stat(Unit::Ratio, &top.handler_ratio.estimate)
            ),
        ),
        Direction::TooFewSamples => withheld(
            &top.handler_ratio.estimate,
            top.handler_ratio.n_a,
            top.handler_ratio.n_b,
        ),
    };
    let figures = format!(
        "at c={k} against {}, the wait before the handler: {wait}; the handler's own time: {handler}",
        w.baseline
    );
    match w.reason {
        WallReason::WaitedForWorker => {
            let bound = match (w.handler_growth_bound_ms, top.handler_ratio.direction) {
                (Some(b), Direction::Inconclusive) if b > 0.0 => {
                    format!(" (at most {}, under a tenth of the wait's rise)", signed(b))
                }
                _ => String::new(),
            };
            format!("{label}: requests waited for the worker — {figures}{bound}")
        }
        WallReason::SharedResource => {
            format!("{label}: a shared resource slows down under load — {figures}")
        }
        WallReason::Both => format!(
            "{label}: requests waited for the worker and the handler itself slowed down — {figures}"
        ),
        WallReason::NoRise => {
            format!("{label}: no rise in the spans for a wall to come from — {figures}")
        }
        WallReason::CannotTell => format!("{label}: the spans cannot tell why — {figures}"),
    }
}

/// A part of a path, for the contrast: `200 ms in 4 sequential calls`.
fn part_of(split: Option<&SpanSplit>, group: &str) -> String {
    let Some(p) = split.and_then(|s| s.parts.iter().find(|p| p.group == group)) else {
        return "none".to_string();
    };
    let m = match p.median {
        Stat::Ok(e) => ms(e.point),
        Stat::TooSmall { .. } => "too few samples".into(),
    };
    format!("{m} ({})", calls(p.median_calls, p.sequential, p.requests))
}

/// Two paths, part by part: what makes one slower, when an interval says so.
pub fn contrast(c: &PathContrast, splits: &[SpanSplit]) -> String {
    let name = |p: &Option<String>| p.clone().unwrap_or_else(|| "(no path)".into());
    let (a, b) = (name(&c.a), name(&c.b));
    let find = |p: &Option<String>| {
        splits.iter().find(|s| {
            s.scope.provenance == c.provenance && s.scope.scope == c.scope && &s.scope.path == p
        })
    };
    let (sa, sb) = (find(&c.a), find(&c.b));
    let head = scope_label(&c.scope, Some(&format!("{a} vs {b}")));
    let total = match c.before_first_token.direction {
        Direction::Increase | Direction::Decrease => format!(
            "server time before the first token differs: {a} − {b} = {}",
            signed_stat(Unit::Ms, &c.before_first_token.estimate)
        ),
        d => format!(
            "server time before the first token: {} ({a} − {b} = {})",
            undecided(d),
            signed_stat(Unit::Ms, &c.before_first_token.estimate)
        ),
    };
    let changed: Vec<String> = c
        .groups
        .iter()
        .filter(|g| g.difference.direction.is_change())
        .take(3)
        .map(|g| {
            format!(
                "{a} spends {} in {}, {b} {}: {a} − {b} = {}",
                part_of(sa, &g.group),
                g.group,
                part_of(sb, &g.group),
                signed_stat(Unit::Ms, &g.difference.estimate)
            )
        })
        .collect();
    if changed.is_empty() {
        format!("{head}: {total}; no part's difference clears its interval")
    } else {
        format!("{head}: {total}; {}", changed.join("; "))
    }
}

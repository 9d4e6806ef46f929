//! The words and numbers of `firsttoken plan` ([`crate::plan`]): how many
//! requests a comparison needs to detect a difference, what the current
//! counts detect, what is left to send, and how many values make each
//! percentile appear with a narrow interval — one phrase per table cell,
//! and the sentences around the tables.
//!
//! A planned difference is hypothetical: it is printed as a size (`+100
//! ms`), never as "faster" or "slower".

use firsttoken_analyze::Percentile;
use firsttoken_analyze::power::{Detectable, Needed, PowerPlan, Rule, ToGo, WidthPlan};

use crate::format::{self, DASH, Unit, value};
use crate::plan::{ClaimRow, Claims, PlanDoc};

/// A share as a whole percentage: `80 %`.
pub fn pct(x: f64) -> String {
    format!("{:.0} %", 100.0 * x)
}

/// A long time in the largest sensible unit: `about 40 s`, `about 6 min`,
/// `about 2.5 h`.
pub fn span(ms: f64) -> String {
    let s = ms / 1000.0;
    if s < 90.0 {
        format!("about {s:.0} s")
    } else if s < 90.0 * 60.0 {
        format!("about {:.0} min", s / 60.0)
    } else {
        format!("about {:.1} h", s / 3600.0)
    }
}

/// `p50` → `median`, else `p95`.
pub fn quantile_name(q: Percentile) -> String {
    if q == Percentile::P50 {
        "median".to_string()
    } else {
        format!("p{}", q.get())
    }
}

/// A difference to detect: `+100 ms (+12 %)`.
fn difference(unit: Unit, d: f64, relative: Option<f64>) -> String {
    match relative {
        Some(r) => format!("+{} ({})", value(unit, d), format::relative(Some(r))),
        None => format!("+{}", value(unit, d)),
    }
}

/// What is left: `232 requests, about 6 min`, or `none`.
pub fn to_go(t: Option<&ToGo>) -> String {
    match t {
        None => DASH.to_string(),
        Some(t) if t.requests == 0 => "none".to_string(),
        Some(t) => match t.time_ms {
            Some(ms) => format!("{} requests, {}", t.requests, span(ms)),
            None => format!("{} requests", t.requests),
        },
    }
}

/// The cells of one power row after the metric and groups: n now, power
/// now, detectable now, n needed.
pub fn power_cells(unit: Unit, p: &PowerPlan) -> [String; 4] {
    let rel = |d: f64| (p.baseline_quantile != 0.0).then(|| d / p.baseline_quantile.abs());
    let asked = difference(unit, p.difference, rel(p.difference));
    let n_now = if p.n_a == p.n_b {
        format!("{} per group", p.n_a)
    } else {
        format!("{} and {}", p.n_a, p.n_b)
    };
    let detectable = match p.detectable_now {
        Detectable::Found {
            difference: d,
            relative,
        } => difference(unit, d, relative),
        Detectable::TooFewSamples => "nothing: too few samples".to_string(),
        Detectable::Beyond { difference: d } => {
            format!("more than {}", difference(unit, d, rel(d)))
        }
    };
    let needed = match p.needed {
        Needed::Reached { n, .. } => format!("{n} per group"),
        Needed::Beyond { max_n, power } => {
            format!("more than {max_n} per group ({} power there)", pct(power))
        }
        Needed::BelowNoise {
            relative,
            threshold,
        } => format!(
            "never: {} is within the {} noise threshold",
            format::relative(Some(relative)),
            pct(threshold)
        ),
    };
    [
        n_now,
        format!("{} for {asked}", pct(p.power_now)),
        detectable,
        needed,
    ]
}

/// The cells of one width row after the group and percentile: n now,
/// interval width now, n needed.
pub fn width_cells(w: &WidthPlan) -> [String; 3] {
    let now = match w.width_now {
        Some(x) => pct(x),
        None if w.n_now < w.shown_from => format::too_few(w.n_now, w.shown_from),
        None => DASH.to_string(),
    };
    let mut needed = match w.needed {
        Needed::Reached { n, .. } => n.to_string(),
        Needed::Beyond { max_n, power } => {
            format!("more than {max_n} ({} of the time there)", pct(power))
        }
        // Not produced for widths; kept total.
        Needed::BelowNoise { .. } => DASH.to_string(),
    };
    if !w.pilot_shows {
        needed.push_str(" (pilot has not seen this tail)");
    }
    [w.n_now.to_string(), now, needed]
}

/// The cells of one claims row after phase and destination: requests,
/// percentiles shown, comparison, detectable difference, time, cost.
pub fn claim_cells(unit: Unit, r: &ClaimRow) -> [String; 6] {
    let sup = &r.support;
    let mut shown: String = sup
        .shown
        .iter()
        .map(|p| format!("p{}", p.get()))
        .collect::<Vec<_>>()
        .join(", ");
    if shown.is_empty() {
        shown = "none".to_string();
    }
    for (p, needed) in &sup.withheld {
        shown.push_str(&format!("; p{} needs {needed}", p.get()));
    }
    let compare = if sup.rank_test {
        "possible".to_string()
    } else {
        format::too_few_for_test(sup.n, sup.n)
    };
    let detectable = match r.detectable {
        None if r.pilot_values == 0 => "no pilot rows".to_string(),
        None => format!(
            "pilot too small {}",
            format::too_few_counts(r.pilot_values, r.pilot_needed)
        ),
        Some(Detectable::Found {
            difference: d,
            relative,
        }) => difference(unit, d, relative),
        Some(Detectable::TooFewSamples) => "nothing: too few samples".to_string(),
        Some(Detectable::Beyond { difference: d }) => format!("more than {}", value(unit, d)),
    };
    [
        sup.n.to_string(),
        shown,
        compare,
        detectable,
        r.time_ms.map_or_else(|| DASH.to_string(), span),
        r.cost_usd
            .map_or_else(|| DASH.to_string(), crate::format::usd),
    ]
}

/// What the claims table shows, said before it.
pub fn claims_intro(c: &Claims) -> String {
    format!(
        "What the counts of {} support (each phase and destination against another group of the same count):",
        c.config
    )
}

/// The sentences after the claims table: the estimated cost and duration,
/// each when some row has one.
pub fn claims_notes(c: &Claims) -> Vec<String> {
    let mut out = Vec::new();
    let costed: Vec<f64> = c.rows.iter().filter_map(|r| r.cost_usd).collect();
    if !costed.is_empty() {
        let missing = c.rows.len() - costed.len();
        out.push(format!(
            "Estimated cost: {}, at the pilot's mean cost per request{}.",
            crate::format::usd(costed.iter().sum()),
            if missing > 0 {
                format!(" (not counting {missing} without a cost in the pilot)")
            } else {
                String::new()
            }
        ));
    }
    let timed: Vec<f64> = c.rows.iter().filter_map(|r| r.time_ms).collect();
    if !timed.is_empty() {
        let total = timed.iter().sum::<f64>() + c.fixed_wait_ms;
        let missing = c.rows.len() - timed.len();
        out.push(format!(
            "Estimated duration: {}, one request at a time at the pilot's mean durations{}{}.",
            span(total),
            if c.fixed_wait_ms > 0.0 {
                format!(
                    ", with {} of idle gaps and open-loop schedules",
                    span(c.fixed_wait_ms)
                )
            } else {
                String::new()
            },
            if missing > 0 {
                format!(" (not counting {missing} without pilot rows)")
            } else {
                String::new()
            }
        ));
    }
    out
}

/// The plan's title line: `Sample-size plan: ttft, warm phase, 80 % power
/// at 95 % confidence, from session abc123`.
pub fn heading(doc: &PlanDoc) -> String {
    let phase = doc.phase.map_or_else(
        || "every phase".to_string(),
        |p| format!("{} phase", p.as_str()),
    );
    format!(
        "Sample-size plan: {}, {phase}, {} power at {} confidence, from {}",
        doc.metric.name(),
        pct(doc.target_power),
        pct(doc.level),
        sessions(&doc.sessions),
    )
}

/// `a1b2c3` or `3 sessions`.
fn sessions(ids: &[String]) -> String {
    match ids {
        [one] => format!("session {one}"),
        _ => format!("{} sessions", ids.len()),
    }
}

/// How the numbers were found, in two sentences.
pub fn method(doc: &PlanDoc) -> String {
    let mut rules = Vec::new();
    if doc
        .power
        .iter()
        .any(|r| r.plan.rule == Rule::MedianComparison)
    {
        rules.push(format!(
            "a median difference counts when the report would state it (rank test p < {}, \
             the {} interval of the difference excluding 0, a change beyond the {} noise threshold)",
            doc.alpha,
            pct(doc.level),
            pct(doc.noise_threshold)
        ));
    }
    if doc
        .power
        .iter()
        .any(|r| r.plan.rule == Rule::QuantileInterval)
    {
        rules.push(format!(
            "a percentile difference counts when its {} interval excludes 0",
            pct(doc.level)
        ));
    }
    let mut s = format!(
        "Estimated from {} simulated experiments per figure, drawn from the pilot's own \
         distribution (docs/METHODOLOGY.md, \"Planning sample sizes\")",
        doc.simulations
    );
    if !rules.is_empty() {
        s.push_str(&format!("; {}", rules.join("; ")));
    }
    if doc.power.is_empty() && doc.width.is_empty() {
        s.push('.');
    } else {
        s.push_str(
            ". To go: requests still to send, one at a time at the pilot's mean request duration.",
        );
    }
    s
}

/// What `plan --pilot` says before its pilot: `pilot: 12 warm requests (6
/// per app path) against https://app.example`.
pub fn pilot_started(requests: u32, per_path: u32, base_url: &str) -> String {
    format!("pilot: {requests} warm requests ({per_path} per app path) against {base_url}")
}

/// What `plan --pilot` says after its pilot: `pilot: session ID stored, 0
/// of 12 requests failed`.
pub fn pilot_stored(session: &str, failed: u64, done: u64) -> String {
    format!("pilot: session {session} stored, {failed} of {done} requests failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_times_read_in_their_unit() {
        assert_eq!(span(40_000.0), "about 40 s");
        assert_eq!(span(6.0 * 60_000.0), "about 6 min");
        assert_eq!(span(2.5 * 3_600_000.0), "about 2.5 h");
    }
}

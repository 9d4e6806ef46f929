//! Sentences about the engine's own clock ([`firsttoken_analyze::engine`]):
//! each group's TTFT split into engine prefill and the rest, the
//! concurrency wall attributed to the time outside prefill, and warm
//! requests that had to open a new connection. Words follow intervals:
//! "rose" and "stayed flat" only when the finding's direction says so.

use firsttoken_analyze::Direction;
use firsttoken_analyze::engine::{EngineClock, EngineSplit, EngineWall, Reconnections};
use firsttoken_analyze::traces::WallReason;

use super::traces::scope_label;
use super::{undecided_figure, withheld};
use crate::format::{Unit, ms, signed_stat, stat};

/// A split's group: `chat, c=5`, `chat, warm on a new connection`.
pub fn group(s: &EngineSplit) -> String {
    let label = scope_label(&s.scope.scope, s.scope.path.as_deref());
    match (s.concurrency, s.reconnected) {
        (Some(k), _) => format!("{label}, c={k}"),
        (None, true) => format!("{label}, {} on a new connection", s.phase),
        (None, false) => format!("{label}, {}", s.phase),
    }
}

/// Whose clock: `llama.cpp's timings`, `vLLM's span`.
pub fn clock(c: EngineClock) -> &'static str {
    match c {
        EngineClock::LlamaCppStream => "llama.cpp's timings",
        EngineClock::VllmSpan => "vLLM's span",
    }
}

/// One group's TTFT split.
pub fn split(s: &EngineSplit) -> String {
    let spread = match s.rest_p10_p90 {
        Some((lo, hi)) => format!(" (p10 {}, p90 {})", ms(lo), ms(hi)),
        None => String::new(),
    };
    let coverage = if s.timed_by_engine < s.requests {
        format!(
            "; {} of {} requests carried the engine's timing",
            s.timed_by_engine, s.requests
        )
    } else {
        String::new()
    };
    let mut engine = String::new();
    if let Some(q) = &s.engine_queue {
        engine.push_str(&format!(
            "; of the rest, the engine's own queue wait {}",
            stat(Unit::Ms, q)
        ));
    }
    if let Some(o) = &s.outside_engine {
        engine.push_str(&format!(
            "; TTFT − the engine's own TTFT {}",
            stat(Unit::Ms, o)
        ));
    }
    format!(
        "{}: TTFT {}, engine prefill {} ({}), the rest (TTFT − prefill per request: HTTP, templating, tokenization, queue, network) {}{spread}; medians over {} requests, which need not add up{engine}{coverage}",
        group(s),
        stat(Unit::Ms, &s.ttft),
        stat(Unit::Ms, &s.prefill),
        clock(s.clock),
        stat(Unit::Ms, &s.rest),
        s.timed_by_engine,
    )
}

fn rest_change(f: &firsttoken_analyze::Finding) -> String {
    match f.direction {
        Direction::Increase => format!("rose by {}", signed_stat(Unit::Ms, &f.estimate)),
        Direction::Decrease => format!("fell by {}", signed_stat(Unit::Ms, &f.estimate)),
        Direction::NoDetectableDifference
        | Direction::TooSmallToMatter
        | Direction::Inconclusive => {
            undecided_figure(f, Unit::Ms, &signed_stat(Unit::Ms, &f.estimate))
        }
        Direction::TooFewSamples => withheld(&f.estimate, f.n_a, f.n_b),
    }
}

/// Whether a prefill ratio rules out a rise past the noise band.
fn flat(f: &firsttoken_analyze::Finding) -> bool {
    f.estimate
        .ci()
        .is_some_and(|ci| ci.upper <= f.null + f.material)
}

fn prefill_change(f: &firsttoken_analyze::Finding) -> String {
    let r = stat(Unit::Ratio, &f.estimate);
    match f.direction {
        Direction::Increase => format!("grew to {r} of the baseline's"),
        Direction::Decrease => format!("fell to {r} of the baseline's"),
        Direction::TooFewSamples => withheld(&f.estimate, f.n_a, f.n_b),
        _ if flat(f) => format!("stayed flat ({r} of the baseline's)"),
        _ => undecided_figure(f, Unit::Ratio, &format!("{r} of the baseline's")),
    }
}

/// The concurrency wall split by the engine's clock.
pub fn wall(w: &EngineWall) -> String {
    let label = scope_label(&w.scope.scope, w.scope.path.as_deref());
    let Some(top) = w.levels.last() else {
        return format!("{label}: no concurrency level above the baseline has the engine's timing");
    };
    // Where the rule let the rest's rise dwarf prefill's possible growth
    // (prefill rose, or may have), say how much that growth can be.
    let dwarfed = w.reason == WallReason::WaitedForWorker
        && !flat(&top.prefill_ratio)
        && matches!(
            top.prefill_ratio.direction,
            Direction::Increase | Direction::Inconclusive
        );
    let change = prefill_change(&top.prefill_ratio);
    let prefill = if dwarfed {
        let grew = top
            .prefill_ratio
            .estimate
            .ci()
            .zip(w.baseline_prefill.point());
        let bound = grew.map_or(String::new(), |(ci, base)| {
            format!(
                ", so prefill can have grown by at most {}, under a tenth of that rise",
                ms(((ci.upper - 1.0) * base).max(0.0))
            )
        });
        if top.prefill_ratio.direction == Direction::Increase {
            format!("while prefill {change}{bound}")
        } else {
            format!("while prefill's change is {change}{bound}")
        }
    } else {
        format!("while prefill {change}")
    };
    let figures = format!(
        "time outside prefill {} at c={} against {}, {prefill}",
        rest_change(&top.rest_change),
        top.concurrency,
        w.baseline,
    );
    match w.reason {
        WallReason::WaitedForWorker => format!(
            "{label}: requests queued for the engine (a slot) — {figures}; the engine's own report leaves this wait out"
        ),
        WallReason::SharedResource => {
            format!("{label}: the engine itself slowed down under load — {figures}")
        }
        WallReason::Both => format!(
            "{label}: requests queued for the engine and its prefill slowed down too — {figures}"
        ),
        WallReason::NoRise => {
            format!("{label}: no rise outside prefill for a wall to come from — {figures}")
        }
        WallReason::CannotTell => {
            format!("{label}: the engine's clock cannot tell why — {figures}")
        }
    }
}

/// Warm requests that had to open a new connection.
pub fn reconnections(r: &Reconnections) -> String {
    let label = scope_label(&r.scope.scope, r.scope.path.as_deref());
    let stale = if r.stale_retries > 0 {
        format!(
            " ({} of them sent on the kept connection first, found it closed and went again)",
            r.stale_retries
        )
    } else {
        String::new()
    };
    let against = if r.new_connections < r.warm {
        format!(
            " against {} on reused connections",
            stat(Unit::Ms, &r.reused_ttft)
        )
    } else {
        "; no warm request reused its connection".to_string()
    };
    format!(
        "{label}: warm requests used new connections: {} of {}{stale}; the server closed connections it was asked to keep. Warm figures leave these out; their median TTFT was {}{against}",
        r.new_connections,
        r.warm,
        stat(Unit::Ms, &r.new_connection_ttft),
    )
}

//! The words of a comparison of two samples: the full sentence, its
//! verdict in a word or two, and the phrase other sentences embed.

use firsttoken_analyze::{Comparison, Direction};

use super::{INCONCLUSIVE, NO_DIFFERENCE, TOO_SMALL_TO_MATTER, undecided, withheld};
use crate::format::{self, Unit, signed_stat};

/// The band a comparison's median difference lies inside: `inside the ±5 %
/// band (±30 ms)`.
pub(crate) fn comparison_band(c: &Comparison) -> String {
    format!(
        "inside the {} band (±{})",
        format::band(c.noise_threshold),
        format::value(Unit::of(c.metric), c.material)
    )
}

/// Whether one comparison's `a` differs from `b`, as a phrase:
/// `faster by …`, `slower by …`, `no detectable difference (…)`.
pub(crate) fn judged(c: &Comparison) -> String {
    let u = Unit::of(c.metric);
    let d = signed_stat(u, &c.median_difference);
    match c.direction {
        Direction::TooFewSamples => withheld_comparison(c),
        _ if c.better() => format!("faster: {d}"),
        _ if c.worse() => format!("slower: {d}"),
        Direction::TooSmallToMatter => {
            format!("{TOO_SMALL_TO_MATTER}: {d}, {}", comparison_band(c))
        }
        d_ => format!("{}: {d}", undecided(d_)),
    }
}

pub(crate) fn withheld_comparison(c: &Comparison) -> String {
    withheld(&c.median_difference, c.n_a, c.n_b)
}

/// A comparison of `a` against the baseline `b`, in full.
pub fn comparison(c: &Comparison) -> String {
    let u = Unit::of(c.metric);
    if c.direction == Direction::TooFewSamples {
        return format!(
            "cannot compare {} with {}: {}",
            c.a,
            c.b,
            withheld_comparison(c)
        );
    }
    let what = c.metric.name();
    let mut s = if c.direction.is_change() {
        format!(
            "{} is {} than {} ({what}): median {}",
            c.a,
            if c.worse() { "slower" } else { "faster" },
            c.b,
            signed_stat(u, &c.median_difference)
        )
    } else {
        match c.direction {
            Direction::Inconclusive => format!(
                "{} vs {} ({what}): {INCONCLUSIVE}: median {}{}",
                c.a,
                c.b,
                signed_stat(u, &c.median_difference),
                unconfirmed(c)
            ),
            Direction::TooSmallToMatter => format!(
                "{TOO_SMALL_TO_MATTER} between {} and {} ({what}): median {}, {}",
                c.a,
                c.b,
                signed_stat(u, &c.median_difference),
                comparison_band(c)
            ),
            _ => format!(
                "{NO_DIFFERENCE} between {} and {} ({what}): median {}",
                c.a,
                c.b,
                signed_stat(u, &c.median_difference)
            ),
        }
    };
    if c.relative_median_difference.is_some() {
        s.push_str(&format!(
            " ({})",
            format::relative(c.relative_median_difference)
        ));
    }
    if c.p95_difference.point().is_some() {
        s.push_str(&format!(", p95 {}", signed_stat(u, &c.p95_difference)));
    }
    if let Some(m) = c.mann_whitney {
        s.push_str(&format!("; Mann–Whitney {}", format::p_value(m.p_value)));
    }
    if let Some(d) = c.cliffs_delta {
        s.push_str(&format!(
            ", Cliff's δ = {} ({})",
            format::coefficient(d.delta),
            d.magnitude.as_str()
        ));
    }
    s
}

/// Why an inconclusive comparison whose interval excludes zero is no
/// change: ` (its interval excludes 0 but reaches past the ±5 % band, and
/// the rank test does not confirm it)`; empty when the interval reaches 0.
fn unconfirmed(c: &Comparison) -> String {
    let Some(ci) = c.median_difference.ci().filter(|ci| ci.excludes_zero()) else {
        return String::new();
    };
    let past = ci.lower < -c.material || ci.upper > c.material;
    let mut why = Vec::new();
    if past {
        why.push(format!(
            "reaches past the {} band",
            format::band(c.noise_threshold)
        ));
    }
    if c.mann_whitney.is_some_and(|m| m.p_value >= c.alpha) {
        why.push("the rank test does not confirm it".to_string());
    }
    if c.relative_median_difference
        .is_some_and(|r| r.abs() <= c.noise_threshold)
    {
        why.push(format!(
            "the median moved {} (within {})",
            format::relative(c.relative_median_difference),
            format::band(c.noise_threshold)
        ));
    }
    if why.is_empty() {
        String::new()
    } else {
        format!(" (its interval excludes 0, but {})", why.join(" and "))
    }
}

/// The verdict of a comparison in a word or two (a table cell).
pub fn verdict(c: &Comparison) -> &'static str {
    match c.direction {
        Direction::TooFewSamples => "too few samples",
        Direction::NoDetectableDifference => NO_DIFFERENCE,
        Direction::TooSmallToMatter => "too small to matter",
        Direction::Inconclusive => INCONCLUSIVE,
        _ if c.worse() => "slower",
        _ => "faster",
    }
}

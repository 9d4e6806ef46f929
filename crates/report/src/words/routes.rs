//! Sentences about where requests went: the route funnel, buffering.

use super::*;

/// A path's funnel: `of 20 requests sent to docs, 2 reached it (16 went to chat)`.
///
/// Against the intended route (`expect_route`, else the path's name); where
/// samples name their prompts, the questions that went astray are listed by
/// number (1-based: the line of a prompts file) and hash, at most
/// [`ASTRAY_LISTED`] per route.
pub fn funnel(path: &str, f: &Funnel) -> String {
    if f.reported == 0 {
        return format!(
            "the app reported no route for the {} requests sent to {path}",
            f.sent
        );
    }
    let target = if f.expected == path {
        "it".to_string()
    } else {
        f.expected.clone()
    };
    let mut notes: Vec<String> = f
        .routes
        .iter()
        .filter(|r| r.name != f.expected && r.name != "unreported")
        .map(|r| format!("{} went to {}", r.count, r.name))
        .collect();
    if f.reported < f.sent {
        notes.push(format!("{} unreported", f.sent - f.reported));
    }
    let mut s = format!(
        "of {} requests sent to {path}, {} reached {target}",
        f.sent, f.reached
    );
    if !notes.is_empty() {
        s.push_str(&format!(" ({})", notes.join(", ")));
    }
    if f.questions > 0 && !f.astray.is_empty() {
        s.push_str(&format!(
            "; of {} questions, {} reached {}",
            f.questions, f.questions_reached, f.expected
        ));
        for a in &f.astray {
            let listed: Vec<String> = a
                .prompts
                .iter()
                .take(ASTRAY_LISTED)
                .map(|p| format!("#{} ({})", u64::from(p.index) + 1, p.hash))
                .collect();
            let more = a.prompts.len().saturating_sub(ASTRAY_LISTED);
            let whither = if a.route == "unreported" {
                "reported no route".to_string()
            } else {
                format!("went to {}", a.route)
            };
            s.push_str(&format!(
                "; these {} {whither}: {}",
                a.prompts.len(),
                listed.join(", ")
            ));
            if more > 0 {
                s.push_str(&format!(" and {more} more"));
            }
        }
    }
    s
}

/// A path that buffers its answers, or `None` when it streams (or too
/// few requests show either).
pub fn buffering(path: &str, b: &firsttoken_analyze::diagnose::Buffering) -> Option<String> {
    b.likely().then(|| {
        format!(
            "{path} buffers its answers: {} of {} requests got the whole answer in one piece at the end of the stream, so their first token is their last and TTFT is the full answer time",
            b.buffered, b.requests
        )
    })
}

/// Most astray questions a funnel sentence lists per route.
pub const ASTRAY_LISTED: usize = 24;

/// Paths against the fastest one, and the funnels that leak.
pub fn routes(r: &Routes) -> String {
    let mut parts: Vec<String> = r
        .comparisons
        .iter()
        .map(|c| match c.direction {
            Direction::TooFewSamples => format!("{} vs {}: {}", c.a, c.b, withheld_comparison(c)),
            Direction::NoDetectableDifference => format!(
                "{NO_DIFFERENCE} between {} and {} at the median: {}",
                c.a,
                c.b,
                signed_stat(Unit::Ms, &c.median_difference)
            ),
            Direction::TooSmallToMatter => format!(
                "{TOO_SMALL_TO_MATTER} between {} and {} at the median: {}, {}",
                c.a,
                c.b,
                signed_stat(Unit::Ms, &c.median_difference),
                super::comparison_band(c)
            ),
            Direction::Inconclusive => format!(
                "{} vs {} at the median: {INCONCLUSIVE}: {}",
                c.a,
                c.b,
                signed_stat(Unit::Ms, &c.median_difference)
            ),
            _ => format!(
                "{} is {} than {} at the median: {} ({} vs {})",
                c.a,
                if c.worse() { "slower" } else { "faster" },
                c.b,
                signed_stat(Unit::Ms, &c.median_difference),
                format::point(Unit::Ms, &c.median_a),
                format::point(Unit::Ms, &c.median_b)
            ),
        })
        .collect();
    let misrouted: Vec<String> = r
        .paths
        .iter()
        .filter(|p| p.funnel.reached < p.funnel.reported)
        .map(|p| funnel(&p.path, &p.funnel))
        .collect();
    if misrouted.is_empty() {
        let reported: usize = r.paths.iter().map(|p| p.funnel.reported).sum();
        parts.push(if reported > 0 {
            format!("all {reported} reported routes matched the intended path")
        } else {
            "the app reports no route".to_string()
        });
    } else {
        parts.extend(misrouted);
    }
    if let [p] = r.paths.as_slice()
        && r.comparisons.is_empty()
    {
        parts.insert(
            0,
            format!("{}: warm TTFT {}", p.path, stat(Unit::Ms, &p.ttft.p50)),
        );
    }
    parts.join("; ")
}

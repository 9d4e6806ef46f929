//! Server time the spans do not cover, located.
//!
//! Within a request's server span, up to the moment its first token
//! reached the client, every instant no span covers (after the queue wait
//! and every group's spans) lies in a **gap**. Ordinary instrumentation
//! leaves such gaps where it opens no span: psycopg spans a query but not
//! the connection it opens first, an HTTP client spans a call but not the
//! pool's wait for a socket. A gap is placed by what borders it:
//!
//! - **right before** a span of some group (the span that starts where the
//!   gap ends): a database call whose connection setup is not spanned
//!   shows as gaps right before each database span;
//! - otherwise **right after** one (the span that ends where it begins);
//! - otherwise it borders no span (a request whose spans cover nothing).
//!
//! One gap is special: the tail after the last span when that span is a
//! client call to an upstream (the model provider, or any outgoing HTTP
//! call). An HTTP client span of a *streaming* call ends when the
//! response headers arrive, before the upstream's first token; the time
//! from its end to the first token is the upstream's stream — the
//! provider's own time to first token — and is counted as that group's
//! stream, not as unexplained.

use std::collections::BTreeSet;

use serde::Serialize;

use super::classify::Category;
use super::join::Breakdown;
use crate::Settings;
use crate::estimate::{Percentile, Stat};
use crate::samples::Samples;

/// The part name of a group's stream: `outgoing HTTP (stream)`.
pub(crate) fn stream_part(group: &str) -> String {
    format!("{group} (stream)")
}

/// Gaps shorter than this (ms) are the instrumentation's own seams (a
/// span ending a few microseconds before the next begins), not time spent.
pub(crate) const MIN_GAP_MS: f64 = 0.05;

/// What a gap borders.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "side", rename_all = "snake_case")]
pub enum Border {
    /// It ends where a span of this group starts.
    Before {
        /// The group (after renaming).
        group: String,
        /// Its category.
        category: Category,
    },
    /// It begins where a span of this group ends (and no span starts at
    /// its end).
    After {
        /// The group.
        group: String,
        /// Its category.
        category: Category,
    },
    /// No span starts at its end nor ends at its start.
    None,
}

impl Border {
    /// The bordering group, if any.
    pub fn group(&self) -> Option<&str> {
        match self {
            Border::Before { group, .. } | Border::After { group, .. } => Some(group),
            Border::None => None,
        }
    }
}

/// One uncovered stretch of one request, ms.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Gap {
    /// Its length.
    pub ms: f64,
    /// What it borders.
    pub border: Border,
}

/// A span's interval relative to the root's start, clipped to the time
/// before the first token, with its group.
#[derive(Debug, Clone)]
pub(crate) struct Placed {
    pub start: f64,
    pub end: f64,
    pub group: String,
    pub category: Category,
}

/// The gaps of one request, and the upstream's stream when the tail gap
/// follows a client call to an upstream: `(gaps, Some((group, ms)))`.
///
/// `covered`: the merged covered intervals (queue wait and every group),
/// within `[0, cut]`; `spans`: each grouped span's interval clipped to it.
pub(crate) fn locate(
    covered: &[(f64, f64)],
    spans: &[Placed],
    cut: f64,
) -> (Vec<Gap>, Option<(String, f64)>) {
    let mut holes: Vec<(f64, f64)> = Vec::new();
    let mut at = 0.0_f64;
    for &(a, b) in covered {
        if a - at > MIN_GAP_MS {
            holes.push((at, a));
        }
        at = at.max(b);
    }
    if cut - at > MIN_GAP_MS {
        holes.push((at, cut));
    }
    let near = |x: f64, y: f64| (x - y).abs() <= MIN_GAP_MS;
    let mut gaps = Vec::with_capacity(holes.len());
    let mut stream = None;
    for (a, b) in holes {
        let tail = near(b, cut);
        let next = (!tail)
            .then(|| spans.iter().find(|s| near(s.start, b)))
            .flatten();
        // The span ending where the gap begins; of several, the last to
        // start (the innermost call).
        let prev = spans
            .iter()
            .filter(|s| near(s.end, a))
            .max_by(|x, y| x.start.total_cmp(&y.start));
        if tail
            && let Some(p) = prev
            && matches!(p.category, Category::ModelProvider | Category::OutgoingHttp)
        {
            stream = Some((p.group.clone(), b - a));
            continue;
        }
        let border = match (next, prev) {
            (Some(s), _) => Border::Before {
                group: s.group.clone(),
                category: s.category,
            },
            (None, Some(s)) => Border::After {
                group: s.group.clone(),
                category: s.category,
            },
            (None, None) => Border::None,
        };
        gaps.push(Gap { ms: b - a, border });
    }
    (gaps, stream)
}

/// Where one path's uncovered server time lies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Uncovered {
    /// Median number of gaps per traced request.
    pub median_gaps: f64,
    /// Where the gaps lie, the largest share of the uncovered time first.
    pub places: Vec<GapPlace>,
}

/// The gaps of one border, over a path's traced requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapPlace {
    /// What they border.
    pub border: Border,
    /// How many there are.
    pub gaps: usize,
    /// Their share of all uncovered time (0–1).
    pub share: f64,
    /// Median number of them per traced request.
    pub per_request: f64,
    /// Median length of one, ms, with its interval.
    pub median_gap: Stat,
    /// Median of their sum per traced request (0 where none), ms.
    pub median_total: Stat,
}

fn median_of(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    crate::percentile_sorted(&v, 50.0).unwrap_or(0.0)
}

/// Where the uncovered time of `bs` (one path's traced requests) lies.
pub(crate) fn uncovered(bs: &[&Breakdown], settings: &Settings) -> Uncovered {
    let counts: Vec<f64> = bs.iter().map(|b| b.gaps.len() as f64).collect();
    let total: f64 = bs.iter().flat_map(|b| &b.gaps).map(|g| g.ms).sum();
    let borders: BTreeSet<&Border> = bs.iter().flat_map(|b| &b.gaps).map(|g| &g.border).collect();
    let stat = |v: Vec<f64>| {
        Samples::new(v)
            .unwrap_or_default()
            .stat(Percentile::P50, settings)
    };
    let mut places: Vec<GapPlace> = borders
        .into_iter()
        .map(|border| {
            let lengths: Vec<f64> = bs
                .iter()
                .flat_map(|b| &b.gaps)
                .filter(|g| &g.border == border)
                .map(|g| g.ms)
                .collect();
            let per: Vec<(f64, f64)> = bs
                .iter()
                .map(|b| {
                    let mine = b.gaps.iter().filter(|g| &g.border == border);
                    (mine.clone().count() as f64, mine.map(|g| g.ms).sum())
                })
                .collect();
            let sum: f64 = lengths.iter().sum();
            GapPlace {
                border: border.clone(),
                gaps: lengths.len(),
                share: if total > 0.0 { sum / total } else { 0.0 },
                per_request: median_of(&per.iter().map(|p| p.0).collect::<Vec<_>>()),
                median_gap: stat(lengths),
                median_total: stat(per.iter().map(|p| p.1).collect()),
            }
        })
        .collect();
    places.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then_with(|| a.border.cmp(&b.border))
    });
    Uncovered {
        median_gaps: median_of(&counts),
        places,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(start: f64, end: f64, group: &str, category: Category) -> Placed {
        Placed {
            start,
            end,
            group: group.into(),
            category,
        }
    }

    #[test]
    fn gaps_are_placed_by_the_span_that_follows_or_precedes_them() {
        // Four database calls, each after 80 ms no span covers (a new
        // connection each time), then an upstream call whose span ends at
        // its headers, 300 ms before the first token.
        let mut spans = Vec::new();
        let mut t = 0.0;
        for _ in 0..4 {
            t += 80.0;
            spans.push(placed(t, t + 10.0, "database", Category::Database));
            t += 10.0;
        }
        spans.push(placed(t, t + 5.0, "outgoing HTTP", Category::OutgoingHttp));
        let cut = t + 5.0 + 300.0;
        let covered: Vec<(f64, f64)> = spans.iter().map(|s| (s.start, s.end)).collect();
        let (gaps, stream) = locate(&covered, &spans, cut);
        assert_eq!(gaps.len(), 4);
        for g in &gaps {
            assert!((g.ms - 80.0).abs() < 1e-9);
            assert_eq!(g.border.group(), Some("database"));
            assert!(matches!(g.border, Border::Before { .. }));
        }
        let (group, ms) = stream.expect("the upstream's stream");
        assert_eq!(group, "outgoing HTTP");
        assert!((ms - 300.0).abs() < 1e-9);
    }

    #[test]
    fn a_tail_after_local_work_stays_a_gap_and_seams_are_not_gaps() {
        let spans = vec![
            placed(0.0, 10.0, "database", Category::Database),
            placed(10.02, 20.0, "auth", Category::Auth),
        ];
        let covered = vec![(0.0, 20.0)];
        let (gaps, stream) = locate(&covered, &spans, 50.0);
        assert!(stream.is_none(), "a database call is no upstream stream");
        assert_eq!(gaps.len(), 1, "the 0.02 ms seam is not a gap");
        assert_eq!(
            gaps[0].border,
            Border::After {
                group: "auth".into(),
                category: Category::Auth
            }
        );
        // No span at all: the whole time borders nothing.
        let (gaps, _) = locate(&[], &[], 40.0);
        assert_eq!(
            gaps,
            vec![Gap {
                ms: 40.0,
                border: Border::None
            }]
        );
    }
}

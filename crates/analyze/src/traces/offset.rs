//! The clock offset between the app's server and firsttoken, per session.
//!
//! Spans are stamped on the server's clock, samples on the client's. Let
//! θ = server clock − client clock. For one request, the server's root
//! span starts after the client began writing the request (`C_w`, the end
//! of its last connection phase, or the request start on a reused
//! connection) and before the client saw the first response byte
//! (`C_fb`); its start `S` on the server clock therefore bounds θ:
//! `S − C_fb ≤ θ ≤ S − C_w` (the NTP argument, with the request/response
//! pair as the exchange). Over a session the bounds are intersected — the
//! tightest lower and upper bound win — and θ is reported as the midpoint
//! ± the half-width, widened by the uncertainty of the client's wall-clock
//! anchor (its samples carry wall time to the millisecond).
//!
//! A streaming answer's first byte often leaves long after the request
//! arrived, so the lower bound above is loose. The root span's end gives a
//! tighter one: the server finished before the client saw the stream end
//! (`C_end`), so `θ ≥ E − C_end`. A server closes its span a little after
//! writing its last byte, so each end bound is loosened by its
//! bookkeeping time, [`END_SLACK_MS`]: `θ ≥ E − C_end − slack`. An end
//! bound still past the upper bound after that means the clocks moved (or
//! a wrong join) and makes the estimate inconsistent (`used_end_bounds`
//! says whether an end bound tightened the interval). Leaving a bound
//! that is just past the upper one out altogether, as an earlier version
//! did, threw the tight end bounds away with it: on a real one-worker app
//! the interval widened from ±0.6 ms to ±103 ms.
//!
//! When the bounds do not intersect (the clocks drifted during the
//! session, or the server stamped its span after it began to answer) the
//! estimate is marked inconsistent and the interval is the smallest one
//! that touches every request's bounds: `[min upper, max lower]`.
//!
//! The client's anchor: each row stores `started_at` (wall clock,
//! truncated to the ms) and `actual_start_ms` (monotonic, from the
//! executor's origin), so the origin's wall time lies in
//! `[started_at − actual_start, started_at − actual_start + 1 ms)` for
//! every row; intersecting over the rows gives it to well under a ms.

use serde::Serialize;

/// The client's wall-clock origin of a session's monotonic stamps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Anchor {
    /// Unix ms of `actual_start_ms = 0`, midpoint.
    pub origin_ms: f64,
    /// Half-width of its uncertainty, ms.
    pub half_ms: f64,
}

/// The anchor from each row's (`started_at` Unix ms, `actual_start_ms`).
/// `None` without rows.
pub(crate) fn anchor(rows: impl Iterator<Item = (i64, f64)>) -> Option<Anchor> {
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    for (wall, start) in rows {
        let o = wall as f64 - start;
        lo = lo.max(o);
        hi = hi.min(o + 1.0);
        min = min.min(o);
        max = max.max(o + 1.0);
    }
    if !lo.is_finite() {
        return None;
    }
    let (a, b) = if lo <= hi { (lo, hi) } else { (min, max) };
    Some(Anchor {
        origin_ms: (a + b) / 2.0,
        half_ms: (b - a) / 2.0,
    })
}

/// One request's bounds, all in Unix ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pair {
    /// Server root span start, server clock.
    pub server_start_ms: f64,
    /// Client began writing the request, client clock.
    pub client_write_ms: f64,
    /// Client saw the first response byte, client clock.
    pub client_first_byte_ms: f64,
    /// Server root span end, server clock.
    pub server_end_ms: f64,
    /// Client saw the stream end (successful requests), client clock.
    pub client_end_ms: Option<f64>,
}

/// θ = server clock − client clock for one session, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OffsetEstimate {
    /// Midpoint of the interval.
    pub offset_ms: f64,
    /// Half-width: the truth lies within `offset_ms ± uncertainty_ms`
    /// (when `consistent`).
    pub uncertainty_ms: f64,
    /// Lower end.
    pub lower_ms: f64,
    /// Upper end.
    pub upper_ms: f64,
    /// Request/response pairs behind it.
    pub pairs: usize,
    /// False when the per-request bounds do not intersect: the interval
    /// then only touches every request's bounds (drift, or spans stamped
    /// late), and offset-corrected times are less certain than stated.
    pub consistent: bool,
    /// Of the uncertainty, the part from the client's wall-clock anchor.
    pub anchor_uncertainty_ms: f64,
    /// True when the stream-end bounds tightened the lower end.
    pub used_end_bounds: bool,
}

/// How long after its last byte a server may close its span, ms: each end
/// bound is loosened by it. Python's ASGI instrumentation, on a busy
/// 2-core machine, closed its span up to about 2 ms after the last byte
/// (`crates/cli/tests/traced_fixture.rs`); 1 ms flagged a same-machine
/// session as inconsistent.
pub const END_SLACK_MS: f64 = 5.0;

/// The offset from the session's pairs; `None` without any.
pub(crate) fn estimate(pairs: &[Pair], anchor_half_ms: f64) -> Option<OffsetEstimate> {
    if pairs.is_empty() {
        return None;
    }
    // Each request: θ ∈ [S − C_fb, S − C_w].
    let lows = pairs
        .iter()
        .map(|p| p.server_start_ms - p.client_first_byte_ms);
    let highs = pairs.iter().map(|p| p.server_start_ms - p.client_write_ms);
    let mut max_low = lows.fold(f64::NEG_INFINITY, f64::max);
    let min_high = highs.fold(f64::INFINITY, f64::min);
    let end_low = pairs
        .iter()
        .filter_map(|p| p.client_end_ms.map(|c| p.server_end_ms - c))
        .fold(f64::NEG_INFINITY, f64::max);
    // An end bound past the upper bound by less than the slack is a span
    // closed a little after its last byte: left out. By more, it is a
    // clock that moved (or a wrong join): kept, and the estimate is then
    // inconsistent.
    let end_low = end_low - END_SLACK_MS;
    let used_end_bounds = end_low > max_low;
    if used_end_bounds {
        max_low = end_low;
    }
    let consistent = max_low <= min_high;
    let (a, b) = if consistent {
        (max_low, min_high)
    } else {
        (min_high, max_low)
    };
    let (lower, upper) = (a - anchor_half_ms, b + anchor_half_ms);
    Some(OffsetEstimate {
        offset_ms: (lower + upper) / 2.0,
        uncertainty_ms: (upper - lower) / 2.0,
        lower_ms: lower,
        upper_ms: upper,
        pairs: pairs.len(),
        consistent,
        anchor_uncertainty_ms: anchor_half_ms,
        used_end_bounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_anchor_is_the_intersection_of_every_rows_millisecond() {
        // True origin 1000.3: walls are floor(1000.3 + start).
        let rows = [(1000, 0.0), (1010, 10.5), (1020, 19.9), (1001, 0.8)];
        let a = anchor(rows.into_iter()).unwrap();
        assert!((a.origin_ms - 1000.3).abs() <= a.half_ms + 1e-9, "{a:?}");
        assert!(a.half_ms < 0.2, "tighter than one ms: {a:?}");
        assert!(anchor(std::iter::empty()).is_none());
    }

    #[test]
    fn bounds_intersect_around_the_true_offset() {
        let theta = 2000.0;
        // Server starts 3..8 ms after the client begins writing; first
        // byte 2..20 ms after that.
        let pairs: Vec<Pair> = (0..20)
            .map(|i| {
                let w = 1_000.0 * f64::from(i);
                let recv = w + 3.0 + f64::from(i % 5);
                Pair {
                    server_start_ms: recv + theta,
                    client_write_ms: w,
                    client_first_byte_ms: recv + 2.0 + f64::from(i % 9) * 2.0,
                    server_end_ms: recv + 400.0 + theta,
                    client_end_ms: Some(recv + 400.5 + f64::from(i % 3)),
                }
            })
            .collect();
        let e = estimate(&pairs, 0.1).unwrap();
        assert!(e.consistent, "{e:?}");
        assert!(e.lower_ms <= theta && theta <= e.upper_ms, "{e:?}");
        // Within 2 ms plus half the end bounds' 5 ms slack.
        assert!(e.uncertainty_ms < 4.5, "{e:?}");
        assert_eq!(e.pairs, 20);
    }

    #[test]
    fn disjoint_bounds_are_marked_and_still_bracket() {
        let pairs = [
            Pair {
                server_start_ms: 105.0,
                client_write_ms: 100.0,
                client_first_byte_ms: 110.0,
                server_end_ms: 106.0,
                client_end_ms: None,
            },
            // The server's clock jumped 30 ms later.
            Pair {
                server_start_ms: 235.0,
                client_write_ms: 200.0,
                client_first_byte_ms: 210.0,
                server_end_ms: 236.0,
                client_end_ms: None,
            },
        ];
        let e = estimate(&pairs, 0.0).unwrap();
        assert!(!e.consistent);
        // Per request: [-5, 5] and [25, 35]; the interval touching both.
        assert_eq!((e.lower_ms, e.upper_ms), (5.0, 25.0));
        assert!(estimate(&[], 0.0).is_none());
    }

    #[test]
    fn an_end_bound_just_past_the_upper_one_is_bookkeeping() {
        // The span closed 0.5 ms after the client saw the stream end.
        let p = Pair {
            server_start_ms: 105.0,
            client_write_ms: 100.0,
            client_first_byte_ms: 150.0,
            server_end_ms: 295.5,
            client_end_ms: Some(290.0),
        };
        // End bound 5.5 ms, loosened by the 5 ms slack: θ ∈ [0.5, 5], not
        // the start bounds' [-45, 5].
        let e = estimate(&[p], 0.0).unwrap();
        assert!(e.consistent && e.used_end_bounds);
        assert_eq!((e.lower_ms, e.upper_ms), (0.5, 5.0));
        // 20 ms past: the clock moved; kept, and flagged.
        let q = Pair {
            server_end_ms: 315.0,
            ..p
        };
        let e = estimate(&[q], 0.0).unwrap();
        assert!(!e.consistent && e.used_end_bounds);
        assert_eq!((e.lower_ms, e.upper_ms), (5.0, 20.0));
    }
}

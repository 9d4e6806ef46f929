//! The bounds a stored sample's numbers keep: a value outside them is no
//! measurement, and once stored it would make every later report over the
//! session fail (issue 29: `ttft_ms` of -50 or 1e308 imported).

use super::schema::{Cell, opt_real};
use crate::short_number as short;

/// The longest duration a sample may store, ms (a day): a request's
/// stamps, its inter-token gaps and its Server-Timing durations. Anything
/// longer (or negative) is no measurement, and once stored it would make
/// every later report over the session fail.
pub(crate) const MAX_DURATION_MS: f64 = 86_400_000.0;

/// The farthest a request's start may lie from its session's, ms (about
/// 31 years): a finite offset whose sums stay finite.
const MAX_OFFSET_MS: f64 = 1e12;

/// A duration: finite, not negative, at most [`MAX_DURATION_MS`].
pub(super) fn duration(name: &str, v: Option<f64>) -> Result<Cell, String> {
    match v {
        Some(x) if !(0.0..=MAX_DURATION_MS).contains(&x) => Err(format!(
            "{name} = {} ms is not a duration from 0 to a day (86,400,000 ms)",
            short(x)
        )),
        _ => opt_real(name, v),
    }
}

/// A rate, a price: finite and not negative.
pub(super) fn non_negative(name: &str, v: Option<f64>) -> Result<Cell, String> {
    match v {
        Some(x) if x.is_finite() && x < 0.0 => Err(format!("{name} = {} is negative", short(x))),
        _ => opt_real(name, v),
    }
}

/// A start offset from the session's start, finite and within
/// [`MAX_OFFSET_MS`].
pub(super) fn offset(name: &str, v: Option<f64>) -> Result<Cell, String> {
    match v {
        Some(x) if x.is_finite() && x.abs() > MAX_OFFSET_MS => Err(format!(
            "{name} = {} ms is farther from the session's start than {MAX_OFFSET_MS:e} ms",
            short(x)
        )),
        _ => opt_real(name, v),
    }
}

//! The one percentile definition of firsttoken: linear interpolation between
//! the closest ranks (numpy's default, Hyndman & Fan type 7).
//!
//! It also defines stored fields: a sample's `itl_p50_ms` and `itl_p99_ms`
//! are this percentile of the request's inter-token gaps, computed by the
//! measuring client (record re-exports it, so drive needs no analysis
//! crate); the analysis of stored samples uses the same function, so both
//! read the same way.

/// The `p`-th percentile (0–100) of `sorted`, which must be sorted ascending
/// and free of NaN. `None` for an empty slice or `p` outside 0–100.
///
/// ```
/// use firsttoken_stats::percentile_sorted;
/// assert_eq!(percentile_sorted(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.5));
/// ```
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let frac = h - lo as f64;
    Some(sorted[lo] + frac * (sorted[hi] - sorted[lo]))
}

/// The `p`-th percentile of unsorted values; NaNs are ignored.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    percentile_sorted(&sorted_finite(values), p)
}

/// The non-NaN values, sorted ascending.
pub fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_percentiles() {
        // numpy.percentile([15, 20, 35, 40, 50], [0, 25, 40, 50, 90, 100]) = 15, 20, 29, 35, 46, 50
        let xs = [50.0, 15.0, 40.0, 20.0, 35.0];
        assert_eq!(percentile(&xs, 0.0), Some(15.0));
        assert_eq!(percentile(&xs, 25.0), Some(20.0));
        assert!((percentile(&xs, 40.0).unwrap() - 29.0).abs() < 1e-12);
        assert_eq!(percentile(&xs, 50.0), Some(35.0));
        assert!((percentile(&xs, 90.0).unwrap() - 46.0).abs() < 1e-12);
        assert_eq!(percentile(&xs, 100.0), Some(50.0));
        // numpy.percentile(range(1, 101), 99) = 99.01
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert!((percentile(&hundred, 99.0).unwrap() - 99.01).abs() < 1e-9);
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[1.0], 101.0), None);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[f64::NAN, 3.0, 1.0], 50.0), Some(2.0));
    }
}

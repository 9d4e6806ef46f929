//! [`Samples`]: validated values of one metric, sorted once, and the
//! percentile of them with its bootstrap interval.

use crate::bootstrap::percentile_stat;
use crate::estimate::{Percentile, Stat};
use crate::{Settings, StatsError, percentile_sorted};

/// Finite values, sorted ascending. The constructor rejects NaN and
/// infinities, so every statistic downstream can assume clean data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    sorted: Vec<f64>,
}

impl Samples {
    /// Validate and sort `values`.
    pub fn new(mut values: Vec<f64>) -> Result<Samples, StatsError> {
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NonFinite { index, value });
        }
        sort_floats(&mut values);
        Ok(Samples { sorted: values })
    }

    /// From values the caller has already checked to be finite (analysis'
    /// frame validates every timing; NaN there means "did not happen" and
    /// is filtered out before this). A non-finite value is a caller's bug:
    /// checked in debug builds only.
    pub fn from_finite(mut values: Vec<f64>) -> Samples {
        debug_assert!(values.iter().all(|v| v.is_finite()));
        sort_floats(&mut values);
        Samples { sorted: values }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The values, ascending.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// Arithmetic mean; `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (!self.sorted.is_empty())
            .then(|| self.sorted.iter().sum::<f64>() / self.sorted.len() as f64)
    }

    /// The `p`-th percentile (linear interpolation); `None` when empty.
    pub fn percentile(&self, p: Percentile) -> Option<f64> {
        percentile_sorted(&self.sorted, p.get())
    }

    /// The `p`-th percentile with its bootstrap CI, or "n too small".
    pub fn stat(&self, p: Percentile, settings: &Settings) -> Stat {
        percentile_stat(self, p, settings)
    }
}

/// Below this length a comparison sort beats the radix sort's fixed cost.
const RADIX_MIN: usize = 1 << 15;

/// Sort ascending in the IEEE total order: pattern-defeating quicksort for
/// small inputs, an LSD radix sort on 16-bit digits for large ones (timings
/// from a million rows are sorted many times over; radix is 3–5× faster).
pub fn sort_floats(v: &mut [f64]) {
    let n = v.len();
    if n < RADIX_MIN {
        v.sort_unstable_by(f64::total_cmp);
        return;
    }
    // Map to u64 keys that order like f64::total_cmp, held in `v` itself
    // as bit patterns (moves of a float keep its bits), so the sort needs
    // one buffer beside the input, not two.
    let key = |x: f64| {
        let b = x.to_bits();
        if b >> 63 == 1 { !b } else { b | (1 << 63) }
    };
    for x in v.iter_mut() {
        *x = f64::from_bits(key(*x));
    }
    let mut tmp = vec![0u64; n];
    let mut hist = vec![0u32; 4 * 65_536];
    for x in v.iter() {
        let k = x.to_bits();
        for d in 0..4 {
            hist[d * 65_536 + ((k >> (16 * d)) & 0xffff) as usize] += 1;
        }
    }
    // Where the keys are: `v` (true) or `tmp`.
    let mut in_v = true;
    for d in 0..4 {
        let h = &mut hist[d * 65_536..(d + 1) * 65_536];
        // A digit every key shares does not reorder anything.
        if h.iter().any(|&c| c as usize == n) {
            continue;
        }
        let mut sum = 0u32;
        for c in h.iter_mut() {
            let t = *c;
            *c = sum;
            sum += t;
        }
        let digit = |k: u64| ((k >> (16 * d)) & 0xffff) as usize;
        if in_v {
            for x in v.iter() {
                let k = x.to_bits();
                let b = digit(k);
                tmp[h[b] as usize] = k;
                h[b] += 1;
            }
        } else {
            for &k in &tmp {
                let b = digit(k);
                v[h[b] as usize] = f64::from_bits(k);
                h[b] += 1;
            }
        }
        in_v = !in_v;
    }
    let unkey = |k: u64| f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k });
    if in_v {
        for x in v.iter_mut() {
            *x = unkey(x.to_bits());
        }
    } else {
        for (x, &k) in v.iter_mut().zip(&tmp) {
            *x = unkey(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_reject_non_finite_values() {
        assert!(matches!(
            Samples::new(vec![1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
        assert!(Samples::new(vec![f64::INFINITY]).is_err());
        let s = Samples::new(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!(s.sorted(), &[1.0, 2.0, 3.0]);
        assert_eq!(s.mean(), Some(2.0));
        assert_eq!(s.percentile(Percentile::P50), Some(2.0));
    }

    #[test]
    fn radix_sort_matches_comparison_sort() {
        let mut rng = crate::bootstrap::SplitMix64::new(1);
        let mut v: Vec<f64> = (0..100_000)
            .map(|i| match i % 4 {
                0 => rng.next_open01() * 1e4,
                1 => -rng.next_open01() * 1e-3,
                2 => f64::from(i % 17),
                _ => (rng.next_u64() >> 11) as f64,
            })
            .collect();
        v.push(-0.0);
        v.push(0.0);
        let mut want = v.clone();
        want.sort_by(f64::total_cmp);
        sort_floats(&mut v);
        assert!(v.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

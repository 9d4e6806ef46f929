//! Rank statistics for two independent samples: the Mann–Whitney U test and
//! Cliff's delta.
//!
//! # Method
//!
//! **Mann–Whitney U** (Mann & Whitney 1947; as in `scipy.stats.mannwhitneyu`
//! with `method="asymptotic", use_continuity=True`): pool both samples, give
//! tied values their average rank, `U_a = R_a − n_a(n_a+1)/2` where `R_a` is
//! the rank sum of `a`. Under the null hypothesis `U_a` has mean
//! `μ = n_a·n_b/2` and, with the tie correction, variance
//! `σ² = n_a·n_b/12 · ((N+1) − Σ(t³−t)/(N(N−1)))` over tie groups of size t.
//! The two-sided p-value is `2·(1 − Φ(z))` with the continuity-corrected
//! `z = (|U_a − μ| − ½)/σ`, capped at 1. The normal approximation is good
//! for n ≥ ~10 per side; for smaller samples it is conservative-ish and the
//! comparison's other conditions (CI of the median difference, noise
//! threshold) carry the verdict.
//!
//! **Cliff's delta** (Cliff 1993, "Dominance statistics", Psychological
//! Bulletin 114:494–509): `δ = (#(a > b) − #(a < b)) / (n_a·n_b)` over all
//! pairs, in [−1, 1]; ties count for neither side. Computed from the two
//! sorted samples by one merge in O(n_a + n_b) (O(n log n) with the sorts),
//! never pair by pair. Magnitudes follow Romano et al. (2006): |δ| < 0.147
//! negligible, < 0.33 small, < 0.474 medium, else large.
//!
//! Both come from the same merge of the sorted samples.

use serde::Serialize;

use crate::samples::Samples;
use crate::special::normal_sf;

/// Result of a two-sided Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the first sample (the number of pairs where it is larger, ties ½).
    pub u: f64,
    /// Continuity-corrected z score, signed like `u − n_a·n_b/2`.
    pub z: f64,
    /// Two-sided p-value (normal approximation with tie and continuity corrections).
    pub p_value: f64,
}

/// How large a Cliff's delta is (Romano et al. 2006).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Magnitude {
    /// |δ| < 0.147.
    Negligible,
    /// |δ| < 0.33.
    Small,
    /// |δ| < 0.474.
    Medium,
    /// |δ| ≥ 0.474.
    Large,
}

impl Magnitude {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Magnitude::Negligible => "negligible",
            Magnitude::Small => "small",
            Magnitude::Medium => "medium",
            Magnitude::Large => "large",
        }
    }
}

/// Cliff's delta with its magnitude label.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CliffsDelta {
    /// δ in [−1, 1]; positive when the first sample tends to be larger.
    pub delta: f64,
    /// Its size.
    pub magnitude: Magnitude,
}

/// What one merge of two sorted samples yields.
struct Merged {
    /// Rank sum of `a` (average ranks for ties).
    rank_sum_a: f64,
    /// Σ (t³ − t) over tie groups.
    tie_term: f64,
    /// #(a > b) − #(a < b).
    dominance: f64,
}

fn merge(a: &[f64], b: &[f64]) -> Merged {
    let (mut i, mut j) = (0usize, 0usize);
    let mut pos = 0.0f64;
    let mut m = Merged {
        rank_sum_a: 0.0,
        tie_term: 0.0,
        dominance: 0.0,
    };
    let nb = b.len() as f64;
    while i < a.len() || j < b.len() {
        let v = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => break,
        };
        let i0 = i;
        while i < a.len() && a[i] == v {
            i += 1;
        }
        let j0 = j;
        while j < b.len() && b[j] == v {
            j += 1;
        }
        let (ta, tb) = ((i - i0) as f64, (j - j0) as f64);
        let t = ta + tb;
        // Ranks pos+1 … pos+t share their average.
        m.rank_sum_a += ta * (pos + (t + 1.0) / 2.0);
        m.tie_term += t * t * t - t;
        // Each a equal to v beats the j0 b's below v and loses to those above.
        m.dominance += ta * (j0 as f64 - (nb - j as f64));
        pos += t;
    }
    m
}

/// Two-sided Mann–Whitney U test of `a` against `b`; `None` when either is empty.
pub fn mann_whitney(a: &Samples, b: &Samples) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let n = na + nb;
    let m = merge(a.sorted(), b.sorted());
    let u = m.rank_sum_a - na * (na + 1.0) / 2.0;
    let mu = na * nb / 2.0;
    let var = na * nb / 12.0 * ((n + 1.0) - m.tie_term / (n * (n - 1.0)).max(1.0));
    if var <= 0.0 {
        // Every value tied: no evidence either way.
        return Some(MannWhitney {
            u,
            z: 0.0,
            p_value: 1.0,
        });
    }
    let dev = u - mu;
    let z = dev.signum() * (dev.abs() - 0.5).max(0.0) / var.sqrt();
    Some(MannWhitney {
        u,
        z,
        p_value: (2.0 * normal_sf(z.abs())).min(1.0),
    })
}

/// The smallest two-sided p-value [`mann_whitney`] can give for samples of
/// `n_a` and `n_b` values: completely separated samples, no ties. When it is
/// not below α, no data of these sizes can be significant: the samples are
/// too few for the test, whatever they hold (3 against 3 gives 0.081).
pub fn smallest_p(n_a: usize, n_b: usize) -> f64 {
    if n_a == 0 || n_b == 0 {
        return 1.0;
    }
    let (na, nb) = (n_a as f64, n_b as f64);
    let mu = na * nb / 2.0;
    let var = na * nb / 12.0 * (na + nb + 1.0);
    let z = (mu - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// Cliff's delta of `a` against `b`; `None` when either is empty.
pub fn cliffs_delta(a: &Samples, b: &Samples) -> Option<CliffsDelta> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let m = merge(a.sorted(), b.sorted());
    let delta = (m.dominance / (a.len() as f64 * b.len() as f64)).clamp(-1.0, 1.0);
    let d = delta.abs();
    let magnitude = if d < 0.147 {
        Magnitude::Negligible
    } else if d < 0.33 {
        Magnitude::Small
    } else if d < 0.474 {
        Magnitude::Medium
    } else {
        Magnitude::Large
    };
    Some(CliffsDelta { delta, magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(v: &[f64]) -> Samples {
        Samples::new(v.to_vec()).unwrap()
    }

    #[test]
    fn mann_whitney_separated_samples() {
        // scipy.stats.mannwhitneyu([1,2,3,4,5], [6,7,8,9,10], method="asymptotic")
        // → statistic 0.0, pvalue 0.012185 (normal approximation with continuity
        // correction; the exact p, method="exact", is 2/252 = 0.0079).
        // By hand: μ = 12.5, σ² = 25/12·11 = 22.9167, z = (12.5 − 0.5)/4.7871 = 2.5067.
        let r = mann_whitney(&s(&[1., 2., 3., 4., 5.]), &s(&[6., 7., 8., 9., 10.])).unwrap();
        assert_eq!(r.u, 0.0);
        assert!((r.z + 2.506_7).abs() < 1e-4, "{r:?}");
        assert!((r.p_value - 0.012_185).abs() < 2e-6, "{r:?}");
        let back = mann_whitney(&s(&[6., 7., 8., 9., 10.]), &s(&[1., 2., 3., 4., 5.])).unwrap();
        assert_eq!(back.u, 25.0);
        assert!((back.p_value - r.p_value).abs() < 1e-15);
    }

    #[test]
    fn smallest_p_is_that_of_separated_samples() {
        let sep = mann_whitney(&s(&[1., 2., 3., 4., 5.]), &s(&[6., 7., 8., 9., 10.])).unwrap();
        assert!((smallest_p(5, 5) - sep.p_value).abs() < 1e-15);
        // 3 against 3: z = (4.5 − 0.5)/√5.25 = 1.7457, p = 0.0809 — never below 0.05.
        assert!(
            (smallest_p(3, 3) - 0.080_9).abs() < 1e-4,
            "{}",
            smallest_p(3, 3)
        );
        assert!(smallest_p(4, 4) < 0.05);
        assert_eq!(smallest_p(0, 9), 1.0);
    }

    #[test]
    fn mann_whitney_with_ties() {
        // a = [1,2,2,3], b = [2,3,3,4]. Pooled ranks: 1→1, 2 (×3)→3, 3 (×3)→6, 4→8.
        // R_a = 1 + 3 + 3 + 6 = 13, U_a = 13 − 10 = 3. μ = 8.
        // Ties: two groups of 3 → Σ(t³−t) = 48; σ² = 16/12·(9 − 48/56) = 10.857.
        // z = (5 − 0.5)/3.2950 = 1.3657, p = 0.17203
        // (scipy.stats.mannwhitneyu(a, b, method="asymptotic") → U 3.0, p 0.1720).
        let r = mann_whitney(&s(&[1., 2., 2., 3.]), &s(&[2., 3., 3., 4.])).unwrap();
        assert_eq!(r.u, 3.0);
        let sigma = (16.0f64 / 12.0 * (9.0 - 48.0 / 56.0)).sqrt();
        assert!((r.z + 4.5 / sigma).abs() < 1e-12);
        assert!((r.p_value - 0.172_03).abs() < 1e-4, "{r:?}");
        // All tied: p = 1.
        assert_eq!(
            mann_whitney(&s(&[1., 1.]), &s(&[1., 1., 1.]))
                .unwrap()
                .p_value,
            1.0
        );
        assert!(mann_whitney(&s(&[]), &s(&[1.0])).is_none());
    }

    #[test]
    fn cliffs_delta_by_hand() {
        // a=[1,2,3], b=[2,4]: pairs (1,2)<,(1,4)<,(2,2)=,(2,4)<,(3,2)>,(3,4)< → (1−4)/6 = −0.5.
        let d = cliffs_delta(&s(&[1., 2., 3.]), &s(&[2., 4.])).unwrap();
        assert!((d.delta + 0.5).abs() < 1e-15);
        assert_eq!(d.magnitude, Magnitude::Large);
        assert_eq!(
            cliffs_delta(&s(&[5., 6.]), &s(&[1., 2.])).unwrap().delta,
            1.0
        );
        assert_eq!(cliffs_delta(&s(&[1., 1.]), &s(&[1.])).unwrap().delta, 0.0);
        // a=[1,2,2,3], b=[2,3,3,4]: > pairs: (3,2)=1; < pairs: 1 vs all 4, each 2 vs 3,3,4 (6), 3 vs 4 (1) = 11.
        // δ = (1 − 11)/16 = −0.625.
        let d = cliffs_delta(&s(&[1., 2., 2., 3.]), &s(&[2., 3., 3., 4.])).unwrap();
        assert!((d.delta + 0.625).abs() < 1e-15);
        // δ = 2U/(n_a n_b) − 1 with U = 3: 6/16 − 1 = −0.625 as well.
        assert_eq!(
            cliffs_delta(&s(&[1., 2., 3., 4., 5.]), &s(&[1.5, 2.5, 3.5, 4.5, 5.5]))
                .unwrap()
                .magnitude,
            Magnitude::Small
        );
    }

    fn brute_delta(a: &[f64], b: &[f64]) -> f64 {
        let mut d = 0i64;
        for x in a {
            for y in b {
                d += i64::from(x > y) - i64::from(x < y);
            }
        }
        d as f64 / (a.len() * b.len()) as f64
    }

    proptest! {
        #[test]
        fn cliffs_delta_is_bounded_antisymmetric_and_matches_pairs(
            a in proptest::collection::vec(0u8..20, 1..60),
            b in proptest::collection::vec(0u8..20, 1..60),
        ) {
            let a: Vec<f64> = a.into_iter().map(f64::from).collect();
            let b: Vec<f64> = b.into_iter().map(f64::from).collect();
            let (sa, sb) = (s(&a), s(&b));
            let d = cliffs_delta(&sa, &sb).unwrap().delta;
            let back = cliffs_delta(&sb, &sa).unwrap().delta;
            prop_assert!((-1.0..=1.0).contains(&d));
            prop_assert!((d + back).abs() < 1e-12);
            prop_assert!((d - brute_delta(&a, &b)).abs() < 1e-12);
            // δ = 2U/(n_a n_b) − 1.
            let u = mann_whitney(&sa, &sb).unwrap().u;
            prop_assert!((d - (2.0 * u / (a.len() * b.len()) as f64 - 1.0)).abs() < 1e-9);
            let p = mann_whitney(&sa, &sb).unwrap().p_value;
            prop_assert!((0.0..=1.0).contains(&p));
        }
    }
}

//! Special functions the statistics need: log-gamma, the complementary error
//! function, the normal distribution and binomial tail probabilities.
//!
//! - `ln_gamma`: Lanczos approximation, g = 7, 9 coefficients (relative error
//!   about 1e-15 for x ≥ 0.5); Press et al., *Numerical Recipes* 3rd ed. §6.1.
//! - `erfc`: the Chebyshev-fitted rational approximation `erfcc` of
//!   *Numerical Recipes* 2nd ed. §6.2, fractional error below 1.2e-7 everywhere.
//! - `binomial_sf_exact`: the probability mass function summed outward from
//!   `k`, each term from the last by the ratio recurrence.
//! - `binomial_sf_normal`: normal approximation with continuity correction
//!   and a one-term Edgeworth (skewness) correction.

use std::f64::consts::PI;

const LANCZOS_G: f64 = 7.0;
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// ln Γ(x) for x > 0.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + LANCZOS_G + 0.5;
    let mut a = LANCZOS[0];
    for (i, c) in LANCZOS.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The complementary error function.
pub(crate) fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let ans = t * poly.exp();
    if x >= 0.0 { ans } else { 2.0 - ans }
}

/// P(Z > z) for a standard normal Z.
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// P(Z ≤ z) for a standard normal Z.
#[cfg(test)]
pub(crate) fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// The standard normal density.
pub(crate) fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
}

/// P(X ≥ k) for X ~ Binomial(n, q), exactly (to rounding).
///
/// The mass function falls away from the mode on both sides, so the sum
/// starts at the term next to the mode (the largest) and stops once a term no
/// longer changes the sum: P(X ≥ k) when k lies above the mean, 1 − P(X ≤ k−1)
/// otherwise. Costs O(standard deviation) terms.
pub(crate) fn binomial_sf_exact(n: u64, q: f64, k: u64) -> f64 {
    if k == 0 || q >= 1.0 {
        return 1.0;
    }
    if k > n || q <= 0.0 {
        return 0.0;
    }
    let nf = n as f64;
    let (ln_q, ln_p) = (q.ln(), (-q).ln_1p());
    let ln_n_fact = ln_gamma(nf + 1.0);
    let ln_pmf = |i: u64| {
        ln_n_fact - ln_gamma(i as f64 + 1.0) - ln_gamma((n - i) as f64 + 1.0)
            + i as f64 * ln_q
            + (n - i) as f64 * ln_p
    };
    let odds = q / (1.0 - q);
    if k as f64 > nf * q {
        let mut i = k;
        let mut term = ln_pmf(i).exp();
        let mut sum = term;
        while i < n && term > sum * 1e-17 {
            term *= (n - i) as f64 / (i + 1) as f64 * odds;
            i += 1;
            sum += term;
        }
        sum.min(1.0)
    } else {
        let mut i = k - 1;
        let mut term = ln_pmf(i).exp();
        let mut sum = term;
        while i > 0 && term > sum * 1e-17 {
            term *= i as f64 / (n - i + 1) as f64 / odds;
            i -= 1;
            sum += term;
        }
        (1.0 - sum).max(0.0)
    }
}

/// P(X ≥ k) for X ~ Binomial(n, q) by the normal approximation with
/// continuity correction plus the first Edgeworth term for skewness:
/// P(X ≥ k) ≈ 1 − Φ(z) + γ/6·(z² − 1)·φ(z), z = (k − ½ − nq)/σ,
/// σ² = nq(1−q), γ = (1 − 2q)/σ. Used only when σ² is large (see
/// `bootstrap`), where the error is far below what moves a CI bound.
pub(crate) fn binomial_sf_normal(n: u64, q: f64, k: u64) -> f64 {
    if k == 0 || q >= 1.0 {
        return 1.0;
    }
    if k > n || q <= 0.0 {
        return 0.0;
    }
    let nf = n as f64;
    let sd = (nf * q * (1.0 - q)).sqrt();
    let z = (k as f64 - 0.5 - nf * q) / sd;
    let skew = (1.0 - 2.0 * q) / sd;
    (normal_sf(z) + skew / 6.0 * (z * z - 1.0) * normal_pdf(z)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_matches_factorials() {
        // ln(n!) = ln Γ(n + 1).
        let mut fact = 1.0f64;
        for n in 1..30u32 {
            fact *= f64::from(n);
            let got = ln_gamma(f64::from(n) + 1.0);
            assert!((got - fact.ln()).abs() < 1e-10 * fact.ln().max(1.0), "{n}");
        }
        // Γ(1/2) = √π.
        assert!((ln_gamma(0.5) - PI.sqrt().ln()).abs() < 1e-12);
        // Stirling check at 1e6: ln Γ(1e6+1) = 12815518.3846582… (python math.lgamma).
        assert!((ln_gamma(1e6 + 1.0) - 12_815_518.384_658_169).abs() < 1e-6);
    }

    #[test]
    fn erfc_and_normal_match_known_values() {
        // python: math.erfc(1) = 0.157299207050285, math.erfc(-0.5) = 1.520499877813047
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207_050_285).abs() < 1e-7 * 0.16);
        assert!((erfc(-0.5) - 1.520_499_877_813_047).abs() < 1e-6);
        // Φ(1.959964) = 0.975
        assert!((normal_cdf(1.959_963_984_540_054) - 0.975).abs() < 1e-7);
        assert!((normal_sf(3.0) - 0.001_349_898_031_630_094_6).abs() < 1e-9);
    }

    fn brute_sf(n: u64, q: f64, k: u64) -> f64 {
        // Direct sum of C(n, i) q^i (1−q)^(n−i) in log space.
        (k..=n)
            .map(|i| {
                (ln_gamma(n as f64 + 1.0)
                    - ln_gamma(i as f64 + 1.0)
                    - ln_gamma((n - i) as f64 + 1.0)
                    + i as f64 * q.ln()
                    + (n - i) as f64 * (1.0 - q).ln())
                .exp()
            })
            .sum()
    }

    #[test]
    fn exact_binomial_tail_matches_direct_sums() {
        for &(n, q, k) in &[
            (10u64, 0.5, 0u64),
            (10, 0.5, 5),
            (10, 0.5, 6),
            (10, 0.3, 7),
            (20, 0.95, 19),
            (100, 0.99, 99),
            (100, 0.5, 50),
            (1000, 0.95, 950),
            (1000, 0.01, 1),
        ] {
            let got = binomial_sf_exact(n, q, k);
            let want = brute_sf(n, q, k).min(1.0);
            assert!(
                (got - want).abs() < 1e-12,
                "n={n} q={q} k={k}: {got} vs {want}"
            );
        }
        // Hand value: P(Bin(4, 1/2) ≥ 3) = 5/16.
        assert!((binomial_sf_exact(4, 0.5, 3) - 5.0 / 16.0).abs() < 1e-15);
        assert_eq!(binomial_sf_exact(5, 1.0, 5), 1.0);
        assert_eq!(binomial_sf_exact(5, 0.5, 6), 0.0);
    }

    #[test]
    fn normal_approximation_is_close_where_it_is_used() {
        // Used only for variance ≥ 400; check there, at the median and at p95.
        for &(n, k) in &[(1600u64, 800u64), (10_000, 9_500), (100_000, 99_000)] {
            for d in -60i64..=60 {
                let j = (k as i64 + d * ((n as f64).sqrt() as i64 / 10).max(1)) as u64;
                let q = j as f64 / n as f64;
                let e = binomial_sf_exact(n, q, k);
                let a = binomial_sf_normal(n, q, k);
                assert!((e - a).abs() < 1e-3, "n={n} k={k} j={j}: {e} vs {a}");
            }
        }
    }
}

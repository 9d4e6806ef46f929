//! Bootstrap confidence intervals for percentiles and their differences,
//! computed without resampling the data.
//!
//! # Method
//!
//! **One percentile.** The nonparametric bootstrap (Efron & Tibshirani 1993,
//! *An Introduction to the Bootstrap*, §6 for standard errors and §13.3 for
//! the percentile interval) resamples `n` values with replacement and
//! recomputes the statistic. For an order statistic that distribution is
//! known exactly (Maritz & Jarrett 1978, "A note on estimating the variance of
//! the sample median", JASA 73:194–196; Hutson 1999, "Calculating
//! nonparametric confidence intervals for quantiles using fractional order
//! statistics", J. Appl. Stat. 26:343–353): with the data sorted as
//! `x(1) ≤ … ≤ x(n)`, the `k`-th order statistic of a resample satisfies
//!
//! ```text
//! P(X*(k) ≤ x(j)) = P(Binomial(n, j/n) ≥ k)
//! ```
//!
//! (at most `k − 1` resampled values may exceed `x(j)`). So the whole
//! bootstrap distribution comes from one sort and binomial tails, with no
//! Monte Carlo error. Only the ranks within ±12 standard deviations of `k`
//! carry probability above ~1e-15, so the cost after the sort is
//! O(√n · min(√n, 20)). The tail is summed exactly while its variance
//! `k(n−k+1)/n` is below 400; above that a normal approximation with
//! continuity and skewness (Edgeworth) correction is used, whose error
//! (< 1e-3 in probability, checked in tests) moves a bound by well under one
//! rank.
//!
//! The reported percentile uses linear interpolation (see the crate docs):
//! `x(k) + f·(x(k+1) − x(k))`. Its bootstrap distribution is taken as the
//! quantile-wise interpolation of the exact distributions of the two
//! neighbouring order statistics, `Q(u) = (1−f)·Q_k(u) + f·Q_{k+1}(u)`,
//! i.e. the two are treated as comonotone (they are ordered, `X*(k) ≤
//! X*(k+1)`, and almost perfectly correlated for large n). This is the
//! fractional-order-statistic idea of Hutson (1999) applied to the bootstrap;
//! for `f = 0` it is exact. The CI is the percentile interval (the
//! `(1−level)/2` and `(1+level)/2` quantiles of that distribution) and the
//! standard error its standard deviation.
//!
//! **Differences and ratios** (median or p95 of A − B, A / B): `B` replicates
//! (2000 by default, [`Settings`]) each draw A's percentile and B's
//! percentile independently from their exact bootstrap distributions
//! (inverse CDF by binary search) and combine them; the CI is the percentile
//! interval of the replicates and the standard error their standard
//! deviation. The random stream is SplitMix64 (Steele, Lea & Flood 2014)
//! seeded from the session seed and a label naming the statistic
//! ([`derive_seed`]), never from the clock: a report is reproducible and one
//! statistic's draws do not depend on which others were computed.

use crate::estimate::{Ci, Estimate, Percentile, Stat};
use crate::samples::Samples;
use crate::special::{binomial_sf_exact, binomial_sf_normal};
use crate::{Settings, percentile_sorted};

/// Binomial variance from which the normal approximation replaces exact sums.
const EXACT_VARIANCE_LIMIT: f64 = 400.0;
/// Half-width of the rank window, in standard deviations.
const WINDOW_SDS: f64 = 12.0;

/// SplitMix64 (Steele, Lea & Flood 2014): small, fast, and enough for
/// bootstrap draws.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in the open interval (0, 1).
    pub fn next_open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// FNV-1a's starting value: [`fnv1a`]`(FNV_OFFSET, bytes)` is the hash of `bytes`.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `bytes` continuing from `h` ([`FNV_OFFSET`] to start); usable
/// in constants. Fast and stable, not made to resist chosen inputs.
pub const fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

/// A seed for one statistic: the session seed mixed with a FNV-1a hash of
/// `label` (e.g. `"overhead/median/measured"`).
pub fn derive_seed(seed: u64, label: &str) -> u64 {
    SplitMix64::new(seed ^ fnv1a(FNV_OFFSET, label.as_bytes())).next_u64()
}

/// The exact bootstrap CDF of one order statistic over a window of ranks:
/// `cdf[i] = P(X*(k) ≤ x[first + i])` (0-based data index), the last entry 1.
#[derive(Debug, Clone)]
struct Steps {
    first: usize,
    cdf: Vec<f64>,
}

impl Steps {
    /// For the `k`-th (1-based) order statistic of `n` values.
    fn new(n: usize, k: usize) -> Steps {
        let var = k as f64 * (n - k + 1) as f64 / n as f64;
        let reach = (WINDOW_SDS * (var.sqrt() + 1.0)).ceil() as usize + 2;
        let lo = k.saturating_sub(reach).max(1);
        let hi = (k + reach).min(n);
        let exact = var < EXACT_VARIANCE_LIMIT;
        let (n64, k64) = (n as u64, k as u64);
        let mut cdf = Vec::with_capacity(hi - lo + 1);
        let mut prev = 0.0f64;
        for j in lo..=hi {
            let q = j as f64 / n as f64;
            let f = if j == n {
                1.0
            } else if exact {
                binomial_sf_exact(n64, q, k64)
            } else {
                binomial_sf_normal(n64, q, k64)
            };
            // A CDF never falls; the approximation could by rounding.
            prev = f.clamp(prev, 1.0);
            cdf.push(prev);
        }
        if let Some(last) = cdf.last_mut() {
            // The mass beyond the window is below 1e-15: give it to the edge.
            *last = 1.0;
        }
        Steps { first: lo - 1, cdf }
    }

    /// Index into the data of the `u`-quantile.
    fn quantile_index(&self, u: f64) -> usize {
        let i = self.cdf.partition_point(|&c| c < u);
        self.first + i.min(self.cdf.len() - 1)
    }
}

/// `a + f·(b − a)`, the form [`percentile_sorted`] uses (exact when a = b).
fn lerp(a: f64, b: f64, f: f64) -> f64 {
    a + f * (b - a)
}

/// The exact bootstrap distribution of a linearly interpolated percentile of
/// a sample (see the module docs for the interpolation).
#[derive(Debug, Clone)]
pub struct PercentileDist<'a> {
    sorted: &'a [f64],
    point: f64,
    lower: Steps,
    upper: Option<(Steps, f64)>,
}

impl<'a> PercentileDist<'a> {
    /// The distribution of the `p`-th percentile of `samples`; `Err` with
    /// "n too small" below [`Percentile::min_n`].
    pub fn new(samples: &'a Samples, p: Percentile) -> Result<PercentileDist<'a>, Stat> {
        let sorted = samples.sorted();
        let n = sorted.len();
        let needed = p.min_n();
        let point = match samples.percentile(p) {
            Some(v) if n >= needed => v,
            _ => return Err(Stat::TooSmall { n, needed }),
        };
        let h = (n - 1) as f64 * p.get() / 100.0;
        let lo = h.floor() as usize;
        let frac = h - lo as f64;
        let lower = Steps::new(n, lo + 1);
        let upper = (frac > 0.0 && lo + 1 < n).then(|| (Steps::new(n, lo + 2), frac));
        Ok(PercentileDist {
            sorted,
            point,
            lower,
            upper,
        })
    }

    /// The percentile of the data itself.
    pub fn point(&self) -> f64 {
        self.point
    }

    /// The `u`-quantile (0 < u ≤ 1) of the bootstrap distribution.
    pub fn quantile(&self, u: f64) -> f64 {
        let a = self.sorted[self.lower.quantile_index(u)];
        match &self.upper {
            None => a,
            Some((steps, f)) => lerp(a, self.sorted[steps.quantile_index(u)], *f),
        }
    }

    /// One bootstrap replicate.
    pub fn draw(&self, rng: &mut SplitMix64) -> f64 {
        self.quantile(rng.next_open01())
    }

    /// Mean and standard deviation of the distribution, exactly: the two
    /// step functions are walked together over u ∈ (0, 1].
    pub fn moments(&self) -> (f64, f64) {
        let mut sum = 0.0;
        let mut sum_sq = 0.0;
        // Centre on the point to keep the variance free of cancellation.
        let c = self.point;
        let mut acc = |mass: f64, v: f64| {
            sum += mass * (v - c);
            sum_sq += mass * (v - c) * (v - c);
        };
        let a = &self.lower;
        match &self.upper {
            None => {
                let mut prev = 0.0;
                for (i, &f) in a.cdf.iter().enumerate() {
                    acc(f - prev, self.sorted[a.first + i]);
                    prev = f;
                }
            }
            Some((b, f)) => {
                let (mut i, mut j, mut prev) = (0usize, 0usize, 0.0f64);
                loop {
                    let (ca, cb) = (a.cdf[i], b.cdf[j]);
                    let u = ca.min(cb);
                    let v = lerp(self.sorted[a.first + i], self.sorted[b.first + j], *f);
                    acc(u - prev, v);
                    prev = u;
                    let last_a = i + 1 == a.cdf.len();
                    let last_b = j + 1 == b.cdf.len();
                    if last_a && last_b {
                        break;
                    }
                    // Advance whichever step ended at u (both when they tie);
                    // a step function at its last entry (cdf = 1) never ends first.
                    if ca <= cb && !last_a {
                        i += 1;
                    }
                    if cb <= ca && !last_b {
                        j += 1;
                    }
                }
            }
        }
        let mean = sum;
        let var = (sum_sq - sum * sum).max(0.0);
        (c + mean, var.sqrt())
    }

    /// Point, standard error and percentile interval at `level`.
    pub fn estimate(&self, level: f64) -> Estimate {
        let alpha = (1.0 - level) / 2.0;
        let (_, sd) = self.moments();
        // The point always lies inside (P(X*(k) ≤ x(k)) ≥ ½ > α); min/max
        // only guard against rounding.
        let lower = self.quantile(alpha).min(self.point);
        let upper = self.quantile(1.0 - alpha).max(self.point);
        Estimate {
            point: self.point,
            standard_error: sd,
            ci: Ci {
                level,
                lower,
                upper,
            },
        }
    }
}

/// The `p`-th percentile of `samples` with its exact bootstrap CI, or
/// "n too small".
pub fn percentile_stat(samples: &Samples, p: Percentile, settings: &Settings) -> Stat {
    match PercentileDist::new(samples, p) {
        Ok(d) => Stat::Ok(d.estimate(settings.level())),
        Err(s) => s,
    }
}

/// The `p`-th percentile of `a` minus that of `b`, with a bootstrap CI from
/// [`Settings::replicates`] replicates seeded by `label`.
pub fn difference_stat(
    a: &Samples,
    b: &Samples,
    p: Percentile,
    settings: &Settings,
    label: &str,
) -> Stat {
    combine(a, b, p, settings, label, |x, y| x - y)
}

/// The `p`-th percentile of `a` divided by that of `b`, with a bootstrap CI.
/// Meant for positive data (timings); a zero denominator gives an infinite
/// replicate.
pub fn ratio_stat(
    a: &Samples,
    b: &Samples,
    p: Percentile,
    settings: &Settings,
    label: &str,
) -> Stat {
    combine(a, b, p, settings, label, |x, y| x / y)
}

fn combine(
    a: &Samples,
    b: &Samples,
    p: Percentile,
    settings: &Settings,
    label: &str,
    f: impl Fn(f64, f64) -> f64,
) -> Stat {
    let (da, db) = match (PercentileDist::new(a, p), PercentileDist::new(b, p)) {
        (Ok(da), Ok(db)) => (da, db),
        _ => {
            return Stat::TooSmall {
                n: a.len().min(b.len()),
                needed: p.min_n(),
            };
        }
    };
    let mut rng = SplitMix64::new(derive_seed(settings.seed(), label));
    let mut reps: Vec<f64> = (0..settings.replicates())
        .map(|_| {
            let x = da.draw(&mut rng);
            f(x, db.draw(&mut rng))
        })
        .collect();
    reps.sort_by(f64::total_cmp);
    let m = reps.len() as f64;
    let mean = reps.iter().sum::<f64>() / m;
    let var = reps.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / (m - 1.0).max(1.0);
    let alpha = 100.0 * (1.0 - settings.level()) / 2.0;
    let point = f(da.point(), db.point());
    // Replicates are never empty (Settings keeps replicates ≥ 100).
    let lower = percentile_sorted(&reps, alpha).unwrap_or(point);
    let upper = percentile_sorted(&reps, 100.0 - alpha).unwrap_or(point);
    Stat::Ok(Estimate {
        point,
        standard_error: var.sqrt(),
        ci: Ci {
            level: settings.level(),
            lower,
            upper,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn settings() -> Settings {
        Settings::new(42)
    }

    /// Brute-force bootstrap: `reps` resamples of `xs`, the percentile of each.
    fn brute(xs: &[f64], p: f64, reps: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        let n = xs.len();
        let mut out = Vec::with_capacity(reps);
        let mut buf = vec![0.0; n];
        for _ in 0..reps {
            for b in buf.iter_mut() {
                *b = xs[(rng.next_u64() % n as u64) as usize];
            }
            buf.sort_by(f64::total_cmp);
            out.push(percentile_sorted(&buf, p).unwrap());
        }
        out.sort_by(f64::total_cmp);
        out
    }

    fn sample(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| (100.0 * (-rng.next_open01().ln())).round())
            .collect()
    }

    #[test]
    fn exact_median_distribution_matches_brute_force_resampling() {
        // Odd n: the median is one order statistic, so the exact distribution
        // is the true bootstrap distribution; 20,000 resamples must agree with
        // it to Monte Carlo error (CDF within 0.015 everywhere).
        let xs = sample(15, 7);
        let s = Samples::new(xs.clone()).unwrap();
        let d = PercentileDist::new(&s, Percentile::P50).unwrap();
        let reps = brute(&xs, 50.0, 20_000, 99);
        let sorted = s.sorted();
        for &v in sorted {
            let brute_cdf = reps.partition_point(|&r| r <= v) as f64 / reps.len() as f64;
            // Last data index at or below v, then the exact CDF there.
            let idx = sorted.partition_point(|&x| x <= v) - 1;
            let steps = &d.lower;
            let exact_cdf = if idx < steps.first {
                0.0
            } else {
                steps.cdf[(idx - steps.first).min(steps.cdf.len() - 1)]
            };
            assert!(
                (brute_cdf - exact_cdf).abs() < 0.015,
                "at {v}: brute {brute_cdf} exact {exact_cdf}"
            );
        }
        let e = d.estimate(0.95);
        // Brute quantiles by the same rule (first value whose CDF reaches u).
        let q = |u: f64| reps[((u * reps.len() as f64).ceil() as usize).max(1) - 1];
        assert!(q(0.02) <= e.ci.lower && e.ci.lower <= q(0.03), "{e:?}");
        assert!(q(0.97) <= e.ci.upper && e.ci.upper <= q(0.98), "{e:?}");
        let mean = reps.iter().sum::<f64>() / reps.len() as f64;
        let sd = (reps.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / reps.len() as f64).sqrt();
        assert!(
            (e.standard_error - sd).abs() < 0.05 * sd,
            "{} vs {sd}",
            e.standard_error
        );
    }

    #[test]
    fn interpolated_percentile_is_close_to_brute_force() {
        // Even n: the median interpolates two order statistics; the comonotone
        // approximation must stay close to real resampling.
        let xs = sample(40, 3);
        let s = Samples::new(xs.clone()).unwrap();
        for p in [50.0, 90.0] {
            let e = percentile_stat(&s, Percentile::new(p).unwrap(), &settings());
            let e = *e.estimate().unwrap();
            let reps = brute(&xs, p, 20_000, 5);
            let lo = percentile_sorted(&reps, 2.5).unwrap();
            let hi = percentile_sorted(&reps, 97.5).unwrap();
            let width = hi - lo;
            assert!(
                (e.ci.lower - lo).abs() <= 0.15 * width,
                "p{p}: {e:?} vs [{lo}, {hi}]"
            );
            assert!(
                (e.ci.upper - hi).abs() <= 0.15 * width,
                "p{p}: {e:?} vs [{lo}, {hi}]"
            );
        }
    }

    #[test]
    fn tiny_sample_has_the_hand_computed_distribution() {
        // Median of a resample of [0, 10]: {0,0} ¼ → 0, mixed ½ → 5, {10,10} ¼ → 10.
        let s = Samples::new(vec![10.0, 0.0]).unwrap();
        let d = PercentileDist::new(&s, Percentile::P50).unwrap();
        assert_eq!(d.quantile(0.2), 0.0);
        assert_eq!(d.quantile(0.5), 5.0);
        assert_eq!(d.quantile(0.8), 10.0);
        let (mean, sd) = d.moments();
        assert!((mean - 5.0).abs() < 1e-12);
        // Variance: ¼·25 + ¼·25 = 12.5.
        assert!((sd - 12.5f64.sqrt()).abs() < 1e-12);
        assert!(matches!(
            percentile_stat(
                &Samples::new(vec![1.0]).unwrap(),
                Percentile::P50,
                &settings()
            ),
            Stat::TooSmall { n: 1, needed: 2 }
        ));
        let s19 = Samples::new((0..19).map(f64::from).collect()).unwrap();
        assert_eq!(
            percentile_stat(&s19, Percentile::P95, &settings()),
            Stat::TooSmall { n: 19, needed: 20 }
        );
    }

    #[test]
    fn large_samples_use_the_normal_window_and_stay_sane() {
        let xs: Vec<f64> = (0..200_000).map(|i| f64::from(i) / 1000.0).collect();
        let s = Samples::new(xs).unwrap();
        let e = *percentile_stat(&s, Percentile::P50, &settings())
            .estimate()
            .unwrap();
        // Uniform on [0, 200): SE of the median ≈ 200 · 0.5/√n = 0.2236.
        assert!((e.standard_error - 0.2236).abs() < 0.01, "{e:?}");
        assert!(
            (e.ci.upper - e.ci.lower - 2.0 * 1.96 * 0.2236).abs() < 0.05,
            "{e:?}"
        );
    }

    #[test]
    fn differences_are_seeded_and_reproducible() {
        let a = Samples::new(sample(200, 1).iter().map(|x| x + 50.0).collect()).unwrap();
        let b = Samples::new(sample(200, 2)).unwrap();
        let d1 = difference_stat(&a, &b, Percentile::P50, &settings(), "x");
        let d2 = difference_stat(&a, &b, Percentile::P50, &settings(), "x");
        let d3 = difference_stat(&a, &b, Percentile::P50, &Settings::new(43), "x");
        assert_eq!(d1, d2);
        assert_ne!(d1, d3);
        let e = d1.estimate().unwrap();
        assert!(e.ci.lower > 0.0 && e.ci.contains(e.point), "{e:?}");
        let r = ratio_stat(&a, &b, Percentile::P50, &settings(), "r");
        assert!(r.point().unwrap() > 1.0);
    }

    fn lognormal(rng: &mut SplitMix64, mu: f64, sigma: f64) -> f64 {
        // Box–Muller.
        let (u1, u2) = (rng.next_open01(), rng.next_open01());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        (mu + sigma * z).exp()
    }

    #[test]
    fn p95_ci_covers_the_true_p95_of_a_lognormal() {
        // 2,000 repetitions of 1,000 draws from LogNormal(μ = 6, σ = 0.6); the
        // true p95 is exp(μ + σ·z₀.₉₅), z₀.₉₅ = 1.6448536269514722.
        // For n = 1000 the exact bootstrap interval is [x(935), x(962)], whose
        // coverage for any continuous distribution is
        // P(935 ≤ Binomial(1000, 0.95) ≤ 961) = 0.9417 (python, math.comb):
        // the bootstrap percentile interval runs a little short of 95 % for a
        // tail quantile. 2,000 repetitions put the Monte Carlo sd at 0.5 %.
        let (mu, sigma) = (6.0, 0.6);
        let truth = (mu + sigma * 1.644_853_626_951_472_2f64).exp();
        let mut rng = SplitMix64::new(20_261_130);
        let reps = 2000u32;
        let mut covered = 0;
        for _ in 0..reps {
            let xs: Vec<f64> = (0..1000).map(|_| lognormal(&mut rng, mu, sigma)).collect();
            let s = Samples::new(xs).unwrap();
            let e = *percentile_stat(&s, Percentile::P95, &settings())
                .estimate()
                .unwrap();
            if e.ci.contains(truth) {
                covered += 1;
            }
        }
        let coverage = f64::from(covered) / f64::from(reps);
        assert!(coverage >= 0.93, "coverage {coverage}");
    }

    proptest! {
        #[test]
        fn cis_contain_the_point_and_are_ordered(
            xs in proptest::collection::vec(0f64..1e4, 2..300),
            p in prop_oneof![Just(50.0), Just(90.0), Just(95.0), Just(99.0), 0f64..99.9],
        ) {
            let s = Samples::new(xs).unwrap();
            let p = Percentile::new(p).unwrap();
            match percentile_stat(&s, p, &settings()) {
                Stat::Ok(e) => {
                    prop_assert!(e.ci.lower <= e.point && e.point <= e.ci.upper, "{:?}", e);
                    prop_assert!(e.standard_error >= 0.0);
                    let (min, max) = (s.sorted()[0], s.sorted()[s.len() - 1]);
                    prop_assert!(e.ci.lower >= min - 1e-9 && e.ci.upper <= max + 1e-9);
                }
                Stat::TooSmall { n, needed } => prop_assert!(n < needed),
            }
        }

        #[test]
        fn difference_cis_are_ordered(
            a in proptest::collection::vec(0f64..1e3, 2..80),
            b in proptest::collection::vec(0f64..1e3, 2..80),
        ) {
            let (a, b) = (Samples::new(a).unwrap(), Samples::new(b).unwrap());
            let d = difference_stat(&a, &b, Percentile::P50, &settings(), "p");
            let e = d.estimate().unwrap();
            prop_assert!(e.ci.lower <= e.ci.upper);
            prop_assert!(e.standard_error >= 0.0);
        }

        #[test]
        fn bootstrap_quantiles_are_monotone(xs in proptest::collection::vec(-1e3f64..1e3, 20..200), u in 0.001f64..0.999, w in 0.001f64..0.999) {
            let s = Samples::new(xs).unwrap();
            let d = PercentileDist::new(&s, Percentile::P95).unwrap();
            let (lo, hi) = if u <= w { (u, w) } else { (w, u) };
            prop_assert!(d.quantile(lo) <= d.quantile(hi));
        }
    }
}

//! Seeded, reproducible randomness: SplitMix64 (Steele, Lea and Flood,
//! "Fast splittable pseudorandom number generators", OOPSLA 2014), the
//! Box–Muller transform for normal deviates, and a log-normal given by its
//! median and 90th percentile.
//!
//! Every request gets its own generator, derived from the emulator's seed,
//! the request's sequence number and the routing attempt, so what request
//! `n` draws does not depend on how many requests run at the same time.

use std::time::Duration;

/// The standard normal quantile at 0.9: `z` with Φ(z) = 0.9.
pub const Z90: f64 = 1.281_551_565_544_600_4;

/// A SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

/// SplitMix64's output function: a good 64-bit mixer on its own.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The generator for request `seq`, routing attempt `attempt`, under
    /// `seed`: independent of every other (seq, attempt) pair.
    pub fn for_request(seed: u64, seq: u64, attempt: u64) -> Rng {
        let a = mix(seed ^ GOLDEN);
        let b = mix(a ^ seq.wrapping_mul(GOLDEN));
        Rng::new(mix(b ^ attempt
            .wrapping_add(1)
            .wrapping_mul(0xd6e8_feb8_6659_fd93)))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix(self.state)
    }

    /// Uniform in [0, 1), with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal deviate (Box–Muller; one of the pair is dropped so
    /// every call consumes exactly two uniforms).
    pub fn normal(&mut self) -> f64 {
        // 1 − u is in (0, 1]: ln never sees 0.
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Uniform integer in `[lo, hi]` (`lo` when `hi < lo`).
    pub fn range_u32(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            // Still consume a draw so the stream stays aligned.
            let _ = self.next_u64();
            return lo;
        }
        let span = u64::from(hi - lo) + 1;
        lo + (self.next_u64() % span) as u32
    }
}

/// A log-normal distribution of durations, given by its median and its 90th
/// percentile: `mu = ln(median)`, `sigma = (ln(p90) − ln(median)) / z₀.₉`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogNormal {
    mu: f64,
    sigma: f64,
}

impl LogNormal {
    /// From the median and the 90th percentile in milliseconds; `None`
    /// unless `0 < median ≤ p90` and both are finite.
    pub fn from_median_p90(median_ms: f64, p90_ms: f64) -> Option<LogNormal> {
        if !(median_ms.is_finite() && p90_ms.is_finite() && median_ms > 0.0 && p90_ms >= median_ms)
        {
            return None;
        }
        Some(LogNormal {
            mu: median_ms.ln(),
            sigma: (p90_ms.ln() - median_ms.ln()) / Z90,
        })
    }

    /// The log-scale location `mu`.
    pub fn mu(&self) -> f64 {
        self.mu
    }

    /// The log-scale spread `sigma`.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// One draw (consumes one normal deviate).
    pub fn sample(&self, rng: &mut Rng) -> Duration {
        let ms = (self.mu + self.sigma * rng.normal()).exp();
        Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // First outputs of SplitMix64 seeded with 0 (the reference
        // implementation by Vigna).
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn request_streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4)
            .map(|s| Rng::for_request(7, s, 0).next_u64())
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|s| Rng::for_request(7, s, 0).next_u64())
            .collect();
        assert_eq!(a, b);
        assert_ne!(a[0], a[1]);
        assert_ne!(
            Rng::for_request(7, 0, 0).next_u64(),
            Rng::for_request(8, 0, 0).next_u64()
        );
        assert_ne!(
            Rng::for_request(7, 0, 0).next_u64(),
            Rng::for_request(7, 0, 1).next_u64()
        );
    }

    #[test]
    fn lognormal_median_and_p90_come_back() {
        let d = LogNormal::from_median_p90(150.0, 300.0).expect("valid");
        assert!((d.mu() - 150f64.ln()).abs() < 1e-12);
        assert!((d.sigma() - 2f64.ln() / Z90).abs() < 1e-12);
        let mut rng = Rng::new(42);
        let mut xs: Vec<f64> = (0..20_000)
            .map(|_| d.sample(&mut rng).as_secs_f64() * 1000.0)
            .collect();
        xs.sort_by(f64::total_cmp);
        let median = xs[xs.len() / 2];
        let p90 = xs[xs.len() * 9 / 10];
        assert!((median - 150.0).abs() < 6.0, "median {median}");
        assert!((p90 - 300.0).abs() < 15.0, "p90 {p90}");
    }

    #[test]
    fn lognormal_rejects_bad_parameters() {
        assert!(LogNormal::from_median_p90(0.0, 1.0).is_none());
        assert!(LogNormal::from_median_p90(200.0, 100.0).is_none());
        assert!(LogNormal::from_median_p90(f64::NAN, 100.0).is_none());
        let fixed = LogNormal::from_median_p90(100.0, 100.0).expect("sigma 0");
        assert_eq!(fixed.sigma(), 0.0);
    }

    #[test]
    fn uniform_range() {
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            let u = r.uniform();
            assert!((0.0..1.0).contains(&u));
            let k = r.range_u32(3, 5);
            assert!((3..=5).contains(&k));
        }
        assert_eq!(r.range_u32(9, 2), 9);
    }
}

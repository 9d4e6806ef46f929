//! The statistics kernel of firsttoken: pure functions over numbers, no
//! knowledge of samples, sessions or stores.
//!
//! - [`percentile`]: the one percentile definition (linear interpolation
//!   between closest ranks, numpy's default, Hyndman & Fan type 7), which
//!   also defines stored per-request fields (`itl_p50_ms`, `itl_p99_ms`);
//! - [`estimate`]: the one shape of an estimate, `Estimate { point,
//!   standard_error, ci }`, and [`Stat`], an estimate or "n too small";
//! - [`samples`]: [`Samples`], finite values sorted once (a radix sort for
//!   large inputs);
//! - [`bootstrap`]: exact bootstrap CIs of percentiles in O(n) after a sort,
//!   and seeded bootstrap CIs of differences and ratios;
//! - [`rank`]: the Mann–Whitney U test and Cliff's delta;
//! - special functions (log-gamma, the normal distribution, binomial tails)
//!   for them.
//!
//! Every random draw comes from [`Settings::seed`], never the clock.
//!
//! ```
//! use firsttoken_stats::{Percentile, Samples, Settings, percentile};
//! assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.5));
//! let ttft = Samples::new((1..=40).map(|i| 100.0 + f64::from(i)).collect()).unwrap();
//! let p95 = ttft.stat(Percentile::P95, &Settings::new(42));
//! let e = p95.estimate().unwrap();
//! assert!(e.ci.lower <= e.point && e.point <= e.ci.upper);
//! // p99 needs 100 samples.
//! assert!(ttft.stat(Percentile::P99, &Settings::new(42)).estimate().is_none());
//! ```
#![deny(missing_docs)]

pub mod bootstrap;
pub mod estimate;
mod percentile;
pub mod rank;
pub mod samples;
mod special;

pub use estimate::{Ci, Estimate, Percentile, PercentileParseError, Stat, min_n};
pub use percentile::{percentile, percentile_sorted, sorted_finite};
pub use samples::Samples;

use serde::Serialize;

/// Input the kernel refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// A percentile rank outside [0, 100).
    #[error("percentile {p} is outside [0, 100)")]
    BadPercentile {
        /// The rank given.
        p: f64,
    },
    /// A NaN or infinite value among samples.
    #[error("value {value} at position {index} is not finite")]
    NonFinite {
        /// Its position.
        index: usize,
        /// The value.
        value: f64,
    },
    /// A setting out of range.
    #[error("{name} = {value}: {reason}")]
    InvalidSetting {
        /// Setting name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What is allowed.
        reason: &'static str,
    },
}

/// How statistics are computed: the bootstrap seed (from the session spec),
/// confidence level, replicates for differences, and the comparison rule's
/// α and noise threshold. Recorded with every [`Analysis`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settings {
    seed: u64,
    level: f64,
    replicates: usize,
    alpha: f64,
    noise_threshold: f64,
}

impl Settings {
    /// Defaults with `seed`: 95 % intervals, 2000 replicates, α = 0.05,
    /// noise threshold 5 %.
    pub fn new(seed: u64) -> Settings {
        Settings {
            seed,
            level: 0.95,
            replicates: 2000,
            alpha: 0.05,
            noise_threshold: 0.05,
        }
    }

    /// Defaults seeded from several sources, each an (id, seed) pair: the
    /// seed of a single one, or a hash of every pair in id order, so the
    /// same sources always give the same draws.
    pub fn from_seeds<'a>(sources: impl IntoIterator<Item = (&'a str, u64)>) -> Settings {
        let mut ids: Vec<(&str, u64)> = sources.into_iter().collect();
        if let [(_, seed)] = ids.as_slice() {
            return Settings::new(*seed);
        }
        ids.sort_unstable();
        let seed = ids.iter().fold(0u64, |acc, (id, seed)| {
            bootstrap::derive_seed(acc ^ seed, id)
        });
        Settings::new(seed)
    }

    /// The same settings with another seed (a stream of its own).
    pub fn with_seed(mut self, seed: u64) -> Settings {
        self.seed = seed;
        self
    }

    /// With another confidence level, in (0, 1).
    pub fn with_level(mut self, level: f64) -> Result<Settings, StatsError> {
        if !(level > 0.0 && level < 1.0) {
            return Err(StatsError::InvalidSetting {
                name: "level",
                value: level,
                reason: "must lie in (0, 1)",
            });
        }
        self.level = level;
        Ok(self)
    }

    /// With another number of bootstrap replicates for differences (≥ 100).
    pub fn with_replicates(mut self, replicates: usize) -> Result<Settings, StatsError> {
        if replicates < 100 {
            return Err(StatsError::InvalidSetting {
                name: "replicates",
                value: replicates as f64,
                reason: "must be at least 100",
            });
        }
        self.replicates = replicates;
        Ok(self)
    }

    /// With another significance level, in (0, 1).
    pub fn with_alpha(mut self, alpha: f64) -> Result<Settings, StatsError> {
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(StatsError::InvalidSetting {
                name: "alpha",
                value: alpha,
                reason: "must lie in (0, 1)",
            });
        }
        self.alpha = alpha;
        Ok(self)
    }

    /// With another noise threshold (relative median change), in [0, 1).
    pub fn with_noise_threshold(mut self, t: f64) -> Result<Settings, StatsError> {
        if !(0.0..1.0).contains(&t) {
            return Err(StatsError::InvalidSetting {
                name: "noise_threshold",
                value: t,
                reason: "must lie in [0, 1)",
            });
        }
        self.noise_threshold = t;
        Ok(self)
    }

    /// The bootstrap seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Confidence level of every interval.
    pub fn level(&self) -> f64 {
        self.level
    }

    /// Bootstrap replicates for differences and ratios.
    pub fn replicates(&self) -> usize {
        self.replicates
    }

    /// Significance level of the rank test.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Relative median change that counts as noise.
    pub fn noise_threshold(&self) -> f64 {
        self.noise_threshold
    }
}

//! What a planned count supports before anything is sent: which of the
//! percentiles a report shows it would show ([`Percentile::min_n`]), and
//! whether two groups of that size could ever pass the comparison's rank
//! test ([`crate::rank::smallest_p`]). Pure arithmetic on the count, no
//! pilot needed.

use serde::Serialize;

use crate::Settings;
use crate::estimate::Percentile;
use crate::rank;

use super::width::SHOWN;

/// What `n` values support.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Support {
    /// The count.
    pub n: usize,
    /// Percentiles shown with n values.
    pub shown: Vec<Percentile>,
    /// Percentiles withheld, each with the n it needs.
    pub withheld: Vec<(Percentile, usize)>,
    /// Whether two groups of n could pass the rank test at α (else any
    /// comparison of them reads "too few samples for a rank test").
    pub rank_test: bool,
}

/// What `n` values per group support under `settings`.
pub fn support(n: usize, settings: &Settings) -> Support {
    let (shown, withheld): (Vec<Percentile>, Vec<Percentile>) =
        SHOWN.iter().partition(|p| n >= p.min_n());
    Support {
        n,
        shown,
        withheld: withheld.into_iter().map(|p| (p, p.min_n())).collect(),
        rank_test: rank::smallest_p(n, n) < settings.alpha(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_support_what_the_report_shows() {
        let s = Settings::new(1);
        let three = support(3, &s);
        assert_eq!(three.shown, vec![Percentile::P50]);
        assert_eq!(three.withheld.len(), 3);
        // 3 against 3 gives at best p = 0.081.
        assert!(!three.rank_test);
        let twenty = support(20, &s);
        assert_eq!(
            twenty.shown,
            vec![Percentile::P50, Percentile::P90, Percentile::P95]
        );
        assert_eq!(twenty.withheld, vec![(Percentile::P99, 100)]);
        assert!(twenty.rank_test);
        assert!(support(4, &s).rank_test);
        assert!(support(100, &s).withheld.is_empty());
    }
}

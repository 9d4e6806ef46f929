//! Inter-token gaps of one request, in bounded memory.
//!
//! Exact up to [`CAP`] gaps; past that a uniform reservoir sample
//! (Vitter's Algorithm R) of [`CAP`] gaps, so a stream of any length keeps
//! at most `CAP` floats while its percentiles stay unbiased estimates.

/// Most gaps kept per request.
pub(crate) const CAP: usize = 16_384;

/// Gaps between consecutive content chunks, in milliseconds.
#[derive(Debug, Default)]
pub(crate) struct Gaps {
    kept: Vec<f64>,
    seen: u64,
    rng: u64,
}

impl Gaps {
    pub(crate) fn push(&mut self, gap_ms: f64) {
        self.seen += 1;
        if self.kept.len() < CAP {
            self.kept.push(gap_ms);
            return;
        }
        // xorshift64*: a fixed seed keeps runs reproducible; quality is ample for sampling.
        if self.rng == 0 {
            self.rng = 0x9E37_79B9_7F4A_7C15;
        }
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let j = r % self.seen;
        if let Ok(j) = usize::try_from(j)
            && j < CAP
        {
            self.kept[j] = gap_ms;
        }
    }

    /// True before the first gap.
    pub(crate) fn is_empty(&self) -> bool {
        self.seen == 0
    }

    pub(crate) fn percentile(&self, p: f64) -> Option<f64> {
        firsttoken_record::percentile(&self.kept, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_cap_and_bounded_above() {
        let mut g = Gaps::default();
        for i in 1..=100 {
            g.push(f64::from(i));
        }
        assert_eq!(g.percentile(50.0), Some(50.5));
        for _ in 0..(CAP * 4) {
            g.push(10.0);
        }
        assert_eq!(g.kept.len(), CAP);
        assert_eq!(g.percentile(50.0), Some(10.0));
    }
}

//! When each read may leave the relay: pure time arithmetic, no I/O.
//!
//! A read of `n` bytes that arrives at `t` first passes the bottleneck (a
//! [`TokenBucket`] at the link's rate), then travels for the one-way delay
//! plus a jitter draw, and finally waits behind everything read before it
//! ([`Fifo`]): `release = max(passed(t, n) + delay ± jitter, previous release)`.
//! Jitter therefore spreads arrivals but never reorders bytes, as on a
//! single TCP path.

use std::time::{Duration, Instant};

use crate::profile::{Link, Rate};

/// A token bucket with debt: bytes pass when the bucket has paid them off.
///
/// The bucket fills at the rate up to `burst` bytes. A reservation of `n`
/// bytes takes `n` tokens at once, going negative if it must; the bytes
/// conform at the instant the balance is back at zero. This is the virtual
/// scheduling form of the generic cell rate algorithm, so a stream of any
/// read sizes leaves at exactly the rate once the burst is spent.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    bytes_per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    /// A full bucket at `rate` holding at most `burst` bytes.
    pub fn new(rate: Rate, burst: usize, now: Instant) -> TokenBucket {
        TokenBucket {
            bytes_per_second: rate.bytes_per_second(),
            burst: burst as f64,
            tokens: burst as f64,
            at: now,
        }
    }

    /// Take `n` bytes' worth of tokens at `now`; returns when those bytes
    /// have passed the bottleneck (`now` when the bucket had them).
    pub fn reserve(&mut self, n: usize, now: Instant) -> Instant {
        if now > self.at {
            let refill = (now - self.at).as_secs_f64() * self.bytes_per_second;
            self.tokens = (self.tokens + refill).min(self.burst);
            self.at = now;
        }
        self.tokens -= n as f64;
        if self.tokens >= 0.0 {
            self.at
        } else {
            self.at + Duration::from_secs_f64(-self.tokens / self.bytes_per_second)
        }
    }
}

/// First in, first out: a release is never earlier than the one before.
#[derive(Debug, Clone, Default)]
pub struct Fifo {
    last: Option<Instant>,
}

impl Fifo {
    /// The release instant for something wanted at `target`.
    pub fn release(&mut self, target: Instant) -> Instant {
        let at = match self.last {
            Some(last) if last > target => last,
            _ => target,
        };
        self.last = Some(at);
        at
    }
}

/// SplitMix64: a small seeded generator for jitter draws (reproducible per
/// seed; no statistical subtlety is needed here).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One direction of one connection: bucket, delay, jitter and FIFO.
#[derive(Debug, Clone)]
pub struct Schedule {
    bucket: Option<TokenBucket>,
    delay: Duration,
    jitter: Duration,
    fifo: Fifo,
    rng: SplitMix64,
}

impl Schedule {
    /// A fresh direction of `link` whose bucket holds `burst` bytes, with
    /// jitter drawn from `seed`.
    pub fn new(link: &Link, burst: usize, seed: u64, now: Instant) -> Schedule {
        Schedule {
            bucket: link.rate.map(|r| TokenBucket::new(r, burst, now)),
            delay: link.delay,
            jitter: link.jitter,
            fifo: Fifo::default(),
            rng: SplitMix64(seed),
        }
    }

    /// When `n` bytes read at `arrival` may be written out (`n = 0` is the
    /// end of the stream, which follows the bytes before it).
    pub fn release(&mut self, n: usize, arrival: Instant) -> Instant {
        let passed = match &mut self.bucket {
            Some(b) => b.reserve(n, arrival),
            None => arrival,
        };
        let mut target = passed + self.delay;
        if !self.jitter.is_zero() {
            // Uniform in [-jitter, +jitter], never before `passed`.
            let j = self.jitter.as_secs_f64() * (2.0 * self.rng.unit() - 1.0);
            target = if j >= 0.0 {
                target + Duration::from_secs_f64(j)
            } else {
                target
                    .checked_sub(Duration::from_secs_f64(-j))
                    .map_or(passed, |t| t.max(passed))
            };
        }
        self.fifo.release(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn close(a: Instant, b: Instant) -> bool {
        let d = if a > b { a - b } else { b - a };
        d < Duration::from_micros(1)
    }

    #[test]
    fn bucket_spends_its_burst_then_paces_at_the_rate() {
        let t0 = Instant::now();
        // 8 kbit/s = 1000 bytes/s, 100 bytes of burst.
        let mut b = TokenBucket::new(Rate::from_bits_per_second(8_000).unwrap(), 100, t0);
        assert!(close(b.reserve(100, t0), t0), "the burst passes at once");
        assert!(
            close(b.reserve(100, t0), t0 + 100 * MS),
            "then 100 bytes take 100 ms"
        );
        // 50 ms later 50 tokens came back, but the debt was 100: 50 bytes
        // more pass 150 ms after the start.
        assert!(close(b.reserve(50, t0 + 50 * MS), t0 + 150 * MS));
        // A long idle refills only up to the burst.
        let later = t0 + 10_000 * MS;
        assert!(close(b.reserve(100, later), later));
        assert!(close(b.reserve(10, later), later + 10 * MS));
    }

    #[test]
    fn bucket_total_time_is_bytes_over_rate_whatever_the_read_sizes() {
        let t0 = Instant::now();
        let rate = Rate::from_bits_per_second(8_000_000).unwrap(); // 1 MB/s
        let mut b = TokenBucket::new(rate, 0, t0);
        let mut last = t0;
        let mut total = 0;
        for n in [1, 7, 1500, 16_384, 3, 65_536, 999].iter().cycle().take(70) {
            last = b.reserve(*n, t0);
            total += n;
        }
        let want = total as f64 / 1e6;
        assert!(((last - t0).as_secs_f64() - want).abs() < 1e-6);
    }

    #[test]
    fn fifo_never_releases_before_the_previous_release() {
        let t0 = Instant::now();
        let mut f = Fifo::default();
        assert_eq!(f.release(t0 + 10 * MS), t0 + 10 * MS);
        assert_eq!(
            f.release(t0 + 5 * MS),
            t0 + 10 * MS,
            "held behind the earlier read"
        );
        assert_eq!(f.release(t0 + 20 * MS), t0 + 20 * MS);
        assert_eq!(f.release(t0), t0 + 20 * MS);
    }

    #[test]
    fn jitter_spreads_delays_within_bounds_and_keeps_order() {
        let t0 = Instant::now();
        let link = Link {
            delay: 10 * MS,
            jitter: 4 * MS,
            rate: None,
        };
        let mut s = Schedule::new(&link, 0, 7, t0);
        let mut prev = t0;
        let mut lo = Duration::MAX;
        let mut hi = Duration::ZERO;
        // Reads 10 ms apart: farther than the jitter's 8 ms spread, so the
        // FIFO rule never holds one back and the draws show as they are.
        for i in 0..2000u32 {
            let arrival = t0 + i * 10 * MS;
            let r = s.release(10, arrival);
            assert!(r >= prev, "reordered at read {i}");
            prev = r;
            let d = r - arrival;
            assert!(
                d + Duration::from_micros(1) >= 6 * MS,
                "read {i} left after {d:?}, below delay - jitter"
            );
            lo = lo.min(d);
            hi = hi.max(d);
        }
        assert!(lo < 7 * MS && hi > 13 * MS, "jitter drawn: {lo:?}..{hi:?}");
        assert!(hi <= 14 * MS + Duration::from_micros(100), "{hi:?}");
    }

    #[test]
    fn jitter_never_reorders_even_when_larger_than_the_delay() {
        let t0 = Instant::now();
        let link = Link {
            delay: MS,
            jitter: 20 * MS,
            rate: None,
        };
        let mut s = Schedule::new(&link, 0, 1, t0);
        let mut prev = t0;
        for i in 0..1000u64 {
            let arrival = t0 + Duration::from_micros(i * 37);
            let r = s.release(1, arrival);
            assert!(r >= prev && r >= arrival);
            prev = r;
        }
    }

    #[test]
    fn end_of_stream_follows_the_queued_bytes() {
        let t0 = Instant::now();
        let link = Link {
            delay: 5 * MS,
            jitter: Duration::ZERO,
            rate: Some(Rate::from_bits_per_second(8_000).unwrap()),
        };
        let mut s = Schedule::new(&link, 0, 0, t0);
        let data = s.release(1000, t0); // 1 s at 1000 bytes/s, then 5 ms
        assert!(close(data, t0 + 1005 * MS));
        let fin = s.release(0, t0 + MS);
        assert!(fin >= data, "the end of the stream overtook the data");
    }
}

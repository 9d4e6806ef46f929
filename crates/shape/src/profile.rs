//! What a link does to the bytes that cross it: [`Link`] (one-way delay,
//! jitter, rate), [`Rate`] (parsed from `20mbit`) and the named
//! [`Profile`]s.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::ShapeError;

/// A bandwidth limit in bits per second (decimal units, as `tc` writes them:
/// `1mbit` is 1,000,000 bit/s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate {
    bits_per_second: u64,
}

impl Rate {
    /// The slowest rate accepted: 8 kbit/s (1 kB/s).
    pub const MIN_BITS_PER_SECOND: u64 = 8_000;
    /// The fastest rate accepted: 100 Gbit/s.
    pub const MAX_BITS_PER_SECOND: u64 = 100_000_000_000;

    /// A rate of `bits_per_second`, checked against the accepted range.
    pub fn from_bits_per_second(bits_per_second: u64) -> Result<Rate, ShapeError> {
        if !(Self::MIN_BITS_PER_SECOND..=Self::MAX_BITS_PER_SECOND).contains(&bits_per_second) {
            return Err(ShapeError::InvalidRate {
                text: bits_per_second.to_string(),
                reason: "out of range: 8kbit to 100gbit",
            });
        }
        Ok(Rate { bits_per_second })
    }

    /// `bits_per_second` megabits per second (a constructor for profiles).
    const fn mbit(n: u64) -> Rate {
        Rate {
            bits_per_second: n * 1_000_000,
        }
    }

    /// Bits per second.
    pub fn bits_per_second(self) -> u64 {
        self.bits_per_second
    }

    /// Bytes per second.
    pub fn bytes_per_second(self) -> f64 {
        self.bits_per_second as f64 / 8.0
    }
}

impl FromStr for Rate {
    type Err = ShapeError;

    /// `NUMBER UNIT` with UNIT one of `bit`, `kbit`, `mbit`, `gbit`
    /// (case-insensitive, decimal multiples), e.g. `20mbit`, `1.5mbit`, `512kbit`.
    fn from_str(s: &str) -> Result<Rate, ShapeError> {
        let bad = |reason| ShapeError::InvalidRate {
            text: s.to_string(),
            reason,
        };
        let t = s.trim().to_ascii_lowercase();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| bad("a unit is needed: bit, kbit, mbit or gbit (e.g. 20mbit)"))?;
        let (num, unit) = t.split_at(split);
        let factor = match unit.trim() {
            "bit" => 1.0,
            "kbit" => 1e3,
            "mbit" => 1e6,
            "gbit" => 1e9,
            _ => {
                return Err(bad(
                    "the unit must be bit, kbit, mbit or gbit (e.g. 20mbit)",
                ));
            }
        };
        let n: f64 = num.parse().map_err(|_| bad("not a number"))?;
        let bits = n * factor;
        if !bits.is_finite() || bits < Self::MIN_BITS_PER_SECOND as f64 {
            return Err(bad("out of range: 8kbit to 100gbit"));
        }
        Rate::from_bits_per_second(bits.round() as u64)
            .map_err(|_| bad("out of range: 8kbit to 100gbit"))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bits_per_second;
        let (value, unit) = if b >= 1_000_000_000 {
            (b as f64 / 1e9, "gbit")
        } else if b >= 1_000_000 {
            (b as f64 / 1e6, "mbit")
        } else if b >= 1_000 {
            (b as f64 / 1e3, "kbit")
        } else {
            (b as f64, "bit")
        };
        // `20mbit`, `1.5mbit`: no trailing zeros.
        let text = format!("{value:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{text}{unit}")
    }
}

/// What the link does in each direction. Both directions get the same
/// settings and their own state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// One-way delay added to every byte (so the round trip gains twice this).
    pub delay: Duration,
    /// Each read's delay is drawn uniformly from `delay ± jitter` (never below
    /// zero), then held back behind earlier bytes so nothing is reordered.
    pub jitter: Duration,
    /// Bandwidth limit per direction (a token bucket); `None` is unlimited.
    pub rate: Option<Rate>,
}

impl Link {
    /// The longest delay or jitter accepted: 10 s.
    pub const MAX_DELAY: Duration = Duration::from_secs(10);

    /// A link that adds nothing.
    pub const NONE: Link = Link {
        delay: Duration::ZERO,
        jitter: Duration::ZERO,
        rate: None,
    };

    /// Check the ranges: delay and jitter at most [`Link::MAX_DELAY`].
    pub fn validate(&self) -> Result<(), ShapeError> {
        for (what, d) in [("delay", self.delay), ("jitter", self.jitter)] {
            if d > Self::MAX_DELAY {
                return Err(ShapeError::InvalidLink {
                    reason: format!("{what} {d:?} is above the maximum of 10 s"),
                });
            }
        }
        Ok(())
    }

    /// The round trip this link adds: twice the one-way delay (loopback's
    /// own round trip, tens of microseconds, comes on top).
    pub fn added_rtt(&self) -> Duration {
        self.delay * 2
    }

    /// The session label for measurements taken through this link (the
    /// `[session] network` value): `emulated:NAME` when it is exactly a
    /// profile, else `emulated:rtt=…ms,jitter=…ms,rate=…` with the numbers.
    pub fn network_label(&self) -> String {
        if let Some(p) = Profile::ALL.into_iter().find(|p| p.link() == *self) {
            return format!("emulated:{}", p.name());
        }
        let ms = |d: Duration| {
            let t = format!("{:.3}", d.as_secs_f64() * 1e3);
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        };
        let rate = self.rate.map_or("unlimited".to_string(), |r| r.to_string());
        format!(
            "emulated:rtt={}ms,jitter={}ms,rate={rate}",
            ms(self.added_rtt()),
            ms(self.jitter)
        )
    }
}

/// The named links of `firsttoken shape --profile NAME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Fibre to the home: RTT 10 ms, 100 Mbit/s, no jitter.
    Fibre,
    /// Cable (DOCSIS): RTT 25 ms, 50 Mbit/s, ±1 ms jitter.
    Cable,
    /// A good 4G/LTE cell: RTT 60 ms, 20 Mbit/s, ±5 ms jitter.
    FourG,
    /// A congested mobile link: RTT 150 ms, 2 Mbit/s, ±20 ms jitter.
    CongestedMobile,
}

impl Profile {
    /// Every profile, fastest first.
    pub const ALL: [Profile; 4] = [
        Profile::Fibre,
        Profile::Cable,
        Profile::FourG,
        Profile::CongestedMobile,
    ];

    /// The name used on the command line and in session labels.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Fibre => "fibre",
            Profile::Cable => "cable",
            Profile::FourG => "4g",
            Profile::CongestedMobile => "congested-mobile",
        }
    }

    /// The profile's link (one-way delay = RTT / 2).
    pub fn link(self) -> Link {
        let (delay_us, jitter_us, rate) = match self {
            Profile::Fibre => (5_000, 0, Rate::mbit(100)),
            Profile::Cable => (12_500, 1_000, Rate::mbit(50)),
            Profile::FourG => (30_000, 5_000, Rate::mbit(20)),
            Profile::CongestedMobile => (75_000, 20_000, Rate::mbit(2)),
        };
        Link {
            delay: Duration::from_micros(delay_us),
            jitter: Duration::from_micros(jitter_us),
            rate: Some(rate),
        }
    }
}

impl FromStr for Profile {
    type Err = ShapeError;

    fn from_str(s: &str) -> Result<Profile, ShapeError> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| ShapeError::UnknownProfile {
                name: s.to_string(),
            })
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_in_decimal_units() {
        assert_eq!(
            "20mbit".parse::<Rate>().unwrap().bits_per_second(),
            20_000_000
        );
        assert_eq!(
            "1.5Mbit".parse::<Rate>().unwrap().bits_per_second(),
            1_500_000
        );
        assert_eq!(
            "512kbit".parse::<Rate>().unwrap().bits_per_second(),
            512_000
        );
        assert_eq!(
            "1gbit".parse::<Rate>().unwrap().bits_per_second(),
            1_000_000_000
        );
        assert_eq!(
            "20mbit".parse::<Rate>().unwrap().bytes_per_second(),
            2_500_000.0
        );
        for bad in [
            "20", "mbit", "20mbps", "20 mb", "-1mbit", "1bit", "1000gbit", "1..2mbit",
        ] {
            assert!(bad.parse::<Rate>().is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn rates_print_as_they_parse() {
        for s in ["20mbit", "1.5mbit", "512kbit", "1gbit", "8kbit"] {
            assert_eq!(s.parse::<Rate>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn profiles_have_the_documented_round_trips() {
        let rtt = |p: Profile| p.link().added_rtt().as_secs_f64() * 1e3;
        assert_eq!(rtt(Profile::Fibre), 10.0);
        assert_eq!(rtt(Profile::Cable), 25.0);
        assert_eq!(rtt(Profile::FourG), 60.0);
        assert_eq!(rtt(Profile::CongestedMobile), 150.0);
        for p in Profile::ALL {
            assert_eq!(p.name().parse::<Profile>().unwrap(), p);
            p.link().validate().unwrap();
        }
        assert!("5g".parse::<Profile>().is_err());
    }

    #[test]
    fn network_labels_name_the_profile_or_the_numbers() {
        assert_eq!(Profile::FourG.link().network_label(), "emulated:4g");
        assert_eq!(
            Profile::CongestedMobile.link().network_label(),
            "emulated:congested-mobile"
        );
        let mut l = Profile::Cable.link();
        l.rate = None;
        assert_eq!(
            l.network_label(),
            "emulated:rtt=25ms,jitter=1ms,rate=unlimited"
        );
        l.delay = Duration::from_micros(2_250);
        l.rate = Some("1.5mbit".parse().unwrap());
        assert_eq!(
            l.network_label(),
            "emulated:rtt=4.5ms,jitter=1ms,rate=1.5mbit"
        );
    }

    #[test]
    fn links_longer_than_ten_seconds_are_refused() {
        let mut l = Link::NONE;
        l.delay = Duration::from_secs(11);
        assert!(l.validate().is_err());
        l.delay = Duration::ZERO;
        l.jitter = Duration::from_secs(11);
        assert!(l.validate().is_err());
    }
}

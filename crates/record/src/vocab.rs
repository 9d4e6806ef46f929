//! The stored vocabulary, typed once: the protocol phase of a request
//! ([`PhaseKind`]), where it went ([`Destination`]) and when, in UTC
//! ([`UtcTime`], and its calendar day [`UtcDay`]).
//!
//! Every other crate carries these types; none compares phase names as
//! strings or does calendar arithmetic of its own. The stored and exported
//! forms stay text:
//!
//! - a phase is its snake_case name (`ping`, `cold`, `warm`, `fresh`,
//!   `direct`, `concurrency`, `rate`, `conversation`); the stores `CHECK` the `phase` column
//!   against exactly these ([`PhaseKind::ALL`]);
//! - a destination is two nullable columns, `path` and `strategy`: an app
//!   request stores its path name (or `NULL`), a direct request `direct`
//!   and its routing strategy, a ping `ping`. The kind follows the phase
//!   (direct phase: direct; ping phase: ping; the rest: the app), so an app
//!   path may even be named `direct` without ambiguity;
//! - a time is RFC 3339 UTC with milliseconds, `2026-11-30T02:30:00.123Z`,
//!   so text order is time order. Reading accepts any RFC 3339 timestamp
//!   (fractional seconds beyond milliseconds are truncated, `±HH:MM`
//!   offsets are converted to UTC, a leap second `:60` reads as the last
//!   millisecond of its minute).
//!
//! ```
//! use firsttoken_record::vocab::{Destination, PhaseKind, UtcTime};
//! let t: UtcTime = "2026-12-01T01:30:00+02:00".parse().unwrap();
//! assert_eq!(t.to_string(), "2026-11-30T23:30:00.000Z");
//! assert_eq!(t.day().to_string(), "2026-11-30");
//! assert_eq!("warm".parse::<PhaseKind>().unwrap(), PhaseKind::Warm);
//! let d = Destination::from_columns(PhaseKind::Direct, Some("direct".into()), None).unwrap();
//! assert_eq!(d, Destination::Direct { strategy: None });
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A stored value outside the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VocabError {
    /// A phase name that is not one of the seven protocol phases.
    #[error(
        "unknown phase {text:?} (expected ping, cold, warm, fresh, direct, concurrency or rate)"
    )]
    UnknownPhase {
        /// The text found.
        text: String,
    },
    /// A timestamp that is not RFC 3339.
    #[error("{text:?} is not an RFC 3339 timestamp (e.g. 2026-11-30T02:30:00.000Z)")]
    BadTimestamp {
        /// The text found.
        text: String,
    },
    /// A `path`/`strategy` pair that does not fit the request's phase.
    #[error("a {phase} request cannot have path {path:?} and strategy {strategy:?}: {why}")]
    DestinationMismatch {
        /// The request's phase.
        phase: PhaseKind,
        /// The stored path.
        path: Option<String>,
        /// The stored strategy.
        strategy: Option<String>,
        /// What is wrong.
        why: &'static str,
    },
}

/// Protocol phase of a request, in protocol order (the derived order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// Network baseline ping.
    Ping,
    /// Probe after an idle gap.
    Cold,
    /// App request on a reused connection.
    Warm,
    /// App request on a new connection.
    Fresh,
    /// Provider request, bypassing the app.
    Direct,
    /// App request inside a burst of a concurrency level.
    Concurrency,
    /// App request at an open-loop arrival time.
    Rate,
    /// A turn of a multi-turn conversation on an app path: the turns of
    /// one conversation in order, each after the previous answer ended.
    Conversation,
}

impl PhaseKind {
    /// Every phase, in protocol order (`ALL[p.index()] == p`).
    pub const ALL: [PhaseKind; 8] = [
        PhaseKind::Ping,
        PhaseKind::Cold,
        PhaseKind::Warm,
        PhaseKind::Fresh,
        PhaseKind::Direct,
        PhaseKind::Concurrency,
        PhaseKind::Rate,
        PhaseKind::Conversation,
    ];

    /// The stored snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseKind::Ping => "ping",
            PhaseKind::Cold => "cold",
            PhaseKind::Warm => "warm",
            PhaseKind::Fresh => "fresh",
            PhaseKind::Direct => "direct",
            PhaseKind::Concurrency => "concurrency",
            PhaseKind::Rate => "rate",
            PhaseKind::Conversation => "conversation",
        }
    }

    /// Position in [`PhaseKind::ALL`] (protocol order), for dense tables.
    pub fn index(self) -> usize {
        self as usize
    }

    /// True for requests that went to the app (not direct, not ping).
    pub fn is_app(self) -> bool {
        !matches!(self, PhaseKind::Ping | PhaseKind::Direct)
    }

    /// The SQL list of every stored name, `'ping', 'cold', …`, for `CHECK`s.
    pub(crate) fn sql_list() -> String {
        PhaseKind::ALL
            .iter()
            .map(|p| format!("'{}'", p.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for PhaseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PhaseKind {
    type Err = VocabError;
    fn from_str(s: &str) -> Result<PhaseKind, VocabError> {
        PhaseKind::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| VocabError::UnknownPhase { text: s.to_owned() })
    }
}

/// Where a request went, with the names it is stored under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Destination {
    /// The app, on a named path (`None` when the config names no paths).
    App {
        /// The path's name, e.g. `chat`.
        path: Option<String>,
    },
    /// The provider directly, bypassing the app.
    Direct {
        /// The routing strategy's name, when strategies are configured.
        strategy: Option<String>,
    },
    /// The ping URL (network baseline).
    Ping,
}

impl Destination {
    /// The `path` stored for a direct request.
    pub const DIRECT_PATH: &'static str = "direct";
    /// The `path` stored for a ping.
    pub const PING_PATH: &'static str = "ping";

    /// The stored `path` column: the app path's name, `direct` or `ping`.
    /// Grouping by path uses it too.
    pub fn path_column(&self) -> Option<&str> {
        match self {
            Destination::App { path } => path.as_deref(),
            Destination::Direct { .. } => Some(Destination::DIRECT_PATH),
            Destination::Ping => Some(Destination::PING_PATH),
        }
    }

    /// The stored `strategy` column (direct requests only).
    pub fn strategy(&self) -> Option<&str> {
        match self {
            Destination::Direct { strategy } => strategy.as_deref(),
            _ => None,
        }
    }

    /// Whether a request of `phase` can go here: direct requests to the
    /// provider, pings to the ping URL, every other phase to the app.
    pub fn fits(&self, phase: PhaseKind) -> bool {
        matches!(
            (self, phase),
            (Destination::Direct { .. }, PhaseKind::Direct) | (Destination::Ping, PhaseKind::Ping)
        ) || (matches!(self, Destination::App { .. }) && phase.is_app())
    }

    /// The destination stored as `path` and `strategy` for a request of
    /// `phase`. A direct request's path must be `direct` (or missing), a
    /// ping's `ping` (or missing) and without a strategy; an app request
    /// has no strategy.
    pub fn from_columns(
        phase: PhaseKind,
        path: Option<String>,
        strategy: Option<String>,
    ) -> Result<Destination, VocabError> {
        let mismatch = |path, strategy, why| VocabError::DestinationMismatch {
            phase,
            path,
            strategy,
            why,
        };
        match phase {
            PhaseKind::Direct => match path.as_deref() {
                None | Some(Destination::DIRECT_PATH) => Ok(Destination::Direct { strategy }),
                Some(_) => Err(mismatch(path, strategy, "its path must be \"direct\"")),
            },
            PhaseKind::Ping => match (path.as_deref(), &strategy) {
                (None | Some(Destination::PING_PATH), None) => Ok(Destination::Ping),
                _ => Err(mismatch(
                    path,
                    strategy,
                    "its path must be \"ping\", with no strategy",
                )),
            },
            _ if strategy.is_some() => Err(mismatch(
                path,
                strategy,
                "only direct requests have a strategy",
            )),
            _ => Ok(Destination::App { path }),
        }
    }
}

const MS_PER_DAY: i64 = 86_400_000;

/// A wall-clock instant in UTC, to the millisecond. Displays (and
/// serializes) as RFC 3339, `2026-11-30T02:30:00.123Z`; parses any RFC
/// 3339 timestamp (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UtcTime {
    unix_ms: i64,
}

impl UtcTime {
    /// The Unix epoch, 1970-01-01T00:00:00.000Z.
    pub const EPOCH: UtcTime = UtcTime { unix_ms: 0 };

    /// Now, from the system clock.
    pub fn now() -> UtcTime {
        UtcTime::from(SystemTime::now())
    }

    /// The instant `ms` milliseconds after (negative: before) the Unix epoch.
    pub fn from_unix_ms(ms: i64) -> UtcTime {
        UtcTime { unix_ms: ms }
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_ms(self) -> i64 {
        self.unix_ms
    }

    /// The UTC calendar day it falls on.
    pub fn day(self) -> UtcDay {
        UtcDay(self.unix_ms.div_euclid(MS_PER_DAY) as i32)
    }

    /// Hour, minute, second and millisecond of the day.
    fn time_of_day(self) -> (i64, i64, i64, i64) {
        let rest = self.unix_ms.rem_euclid(MS_PER_DAY);
        (
            rest / 3_600_000,
            rest / 60_000 % 60,
            rest / 1000 % 60,
            rest % 1000,
        )
    }

    /// `YYYYMMDDTHHMMSSZ`: the compact form session ids start with.
    pub(crate) fn compact_seconds(self) -> String {
        let (y, m, d) = civil_from_days(i64::from(self.day().0));
        let (h, min, s, _) = self.time_of_day();
        format!("{y:04}{m:02}{d:02}T{h:02}{min:02}{s:02}Z")
    }
}

impl From<SystemTime> for UtcTime {
    fn from(t: SystemTime) -> UtcTime {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => UtcTime { unix_ms: ms(d) },
            Err(e) => UtcTime {
                unix_ms: -ms(e.duration()),
            },
        }
    }
}

impl fmt::Display for UtcTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (h, min, s, milli) = self.time_of_day();
        write!(f, "{}T{h:02}:{min:02}:{s:02}.{milli:03}Z", self.day())
    }
}

impl FromStr for UtcTime {
    type Err = VocabError;
    fn from_str(s: &str) -> Result<UtcTime, VocabError> {
        parse_rfc3339_ms(s)
            .map(UtcTime::from_unix_ms)
            .ok_or_else(|| VocabError::BadTimestamp { text: s.to_owned() })
    }
}

impl Serialize for UtcTime {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for UtcTime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<UtcTime, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A UTC calendar day (proleptic Gregorian). Displays as `YYYY-MM-DD`;
/// orders chronologically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UtcDay(i32);

impl UtcDay {
    /// The day `days` days after (negative: before) 1970-01-01.
    pub fn from_days_since_epoch(days: i32) -> UtcDay {
        UtcDay(days)
    }

    /// Days since 1970-01-01.
    pub fn days_since_epoch(self) -> i32 {
        self.0
    }

    /// Its first instant, 00:00:00.000Z.
    pub fn start(self) -> UtcTime {
        UtcTime::from_unix_ms(i64::from(self.0) * MS_PER_DAY)
    }
}

impl fmt::Display for UtcDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = civil_from_days(i64::from(self.0));
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

impl Serialize for UtcDay {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01 (Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Milliseconds since the epoch of an RFC 3339 timestamp
/// (`2026-11-30T02:30:00Z`, fractional seconds and `±HH:MM` offsets allowed).
fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let sep = |at: usize, c: &[u8]| b.get(at).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let feb = if leap { 29 } else { 28 };
    let days_in_month = [31, feb, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month[(mo - 1) as usize] {
        return None;
    }
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut milli = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 3 {
                milli = milli * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        let digits = i - start;
        if digits == 0 {
            return None;
        }
        for _ in digits..3 {
            milli *= 10;
        }
    }
    let offset_min = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        &c @ (b'+' | b'-') if i + 6 == b.len() && sep(i + 3, b":") => {
            let (oh, om) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let m = oh * 60 + om;
            if c == b'-' { -m } else { m }
        }
        _ => return None,
    };
    // A leap second (:60) counts as the last millisecond of its minute.
    let (sec, milli) = if sec == 60 { (59, 999) } else { (sec, milli) };
    let days = days_from_civil(y, mo, d);
    Some((((days * 24 + h) * 60 + mi) * 60 + sec) * 1000 + milli - offset_min * 60_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Option<i64> {
        s.parse::<UtcTime>().ok().map(UtcTime::unix_ms)
    }

    #[test]
    fn timestamps_parse_to_utc() {
        assert_eq!(t("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(t("1970-01-02T00:00:00.5Z"), Some(86_400_500));
        // python: datetime(2026,11,30,2,30,tzinfo=utc).timestamp() = 1796005800
        assert_eq!(t("2026-11-30T02:30:00Z"), Some(1_796_005_800_000));
        // 01:30 at +02:00 is the previous UTC day.
        let u: UtcTime = "2026-12-01T01:30:00.123456+02:00".parse().unwrap();
        assert_eq!(u.to_string(), "2026-11-30T23:30:00.123Z");
        assert_eq!(u.day().to_string(), "2026-11-30");
        assert_eq!(
            "2024-02-29T00:00:00Z"
                .parse::<UtcTime>()
                .unwrap()
                .to_string(),
            "2024-02-29T00:00:00.000Z"
        );
        assert_eq!(t("2026-11-30T23:59:60Z"), t("2026-11-30T23:59:59.999Z"));
        for bad in [
            "",
            "2026-11-30",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-11-30T02:30:00",
            "2026-11-30T02:30:00.Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T02:30:00+0200",
            "yesterday",
        ] {
            let e = bad.parse::<UtcTime>().unwrap_err();
            assert_eq!(e, VocabError::BadTimestamp { text: bad.into() });
        }
    }

    #[test]
    fn times_format_from_the_system_clock_and_round_trip() {
        let st = UNIX_EPOCH + Duration::from_millis(1_795_919_400_123);
        let u = UtcTime::from(st);
        assert_eq!(u.to_string(), "2026-11-29T02:30:00.123Z");
        assert_eq!(u.compact_seconds(), "20261129T023000Z");
        assert_eq!(UtcTime::EPOCH.to_string(), "1970-01-01T00:00:00.000Z");
        let leap = UtcTime::from(UNIX_EPOCH + Duration::from_secs(951_782_400));
        assert_eq!(leap.day().to_string(), "2000-02-29");
        let before = UtcTime::from(UNIX_EPOCH - Duration::from_millis(1));
        assert_eq!(before.to_string(), "1969-12-31T23:59:59.999Z");
        assert_eq!(before.day().days_since_epoch(), -1);
        // Every day of four centuries round-trips through text.
        for day in (-146_097..146_097).step_by(7) {
            let u = UtcTime::from_unix_ms(i64::from(day) * MS_PER_DAY + 45_296_789);
            assert_eq!(u.to_string().parse::<UtcTime>(), Ok(u));
            assert_eq!(u.day(), UtcDay::from_days_since_epoch(day));
            assert_eq!(u.day().start().unix_ms(), i64::from(day) * MS_PER_DAY);
        }
        let json = serde_json::to_string(&u).unwrap();
        assert_eq!(json, "\"2026-11-29T02:30:00.123Z\"");
        assert_eq!(serde_json::from_str::<UtcTime>(&json).unwrap(), u);
        let e = serde_json::from_str::<UtcTime>("\"soon\"").unwrap_err();
        assert!(e.to_string().contains("RFC 3339"), "{e}");
    }

    #[test]
    fn phases_have_one_name_each() {
        for (i, p) in PhaseKind::ALL.into_iter().enumerate() {
            assert_eq!(p.index(), i);
            assert_eq!(p.as_str().parse::<PhaseKind>(), Ok(p));
            let json = serde_json::to_value(p).unwrap();
            assert_eq!(json, serde_json::Value::String(p.to_string()));
        }
        assert_eq!(
            "lukewarm".parse::<PhaseKind>(),
            Err(VocabError::UnknownPhase {
                text: "lukewarm".into()
            })
        );
        assert!(PhaseKind::Ping < PhaseKind::Rate);
        assert_eq!(
            PhaseKind::sql_list(),
            "'ping', 'cold', 'warm', 'fresh', 'direct', 'concurrency', 'rate', 'conversation'"
        );
    }

    #[test]
    fn destinations_follow_the_phase() {
        let s = |x: &str| Some(x.to_owned());
        let d = Destination::from_columns(PhaseKind::Warm, s("direct"), None).unwrap();
        assert_eq!(d, Destination::App { path: s("direct") });
        assert_eq!(d.path_column(), Some("direct"));
        let d = Destination::from_columns(PhaseKind::Direct, s("direct"), s("latency")).unwrap();
        assert_eq!(d.strategy(), Some("latency"));
        assert_eq!(d.path_column(), Some("direct"));
        assert!(d.fits(PhaseKind::Direct) && !d.fits(PhaseKind::Warm));
        let d = Destination::from_columns(PhaseKind::Ping, None, None).unwrap();
        assert_eq!((d.path_column(), d.strategy()), (Some("ping"), None));
        assert!(d.fits(PhaseKind::Ping) && !d.fits(PhaseKind::Cold));
        assert!(Destination::App { path: None }.fits(PhaseKind::Rate));
        for (phase, path, strategy) in [
            (PhaseKind::Direct, s("chat"), None),
            (PhaseKind::Ping, s("chat"), None),
            (PhaseKind::Ping, s("ping"), s("latency")),
            (PhaseKind::Warm, s("chat"), s("latency")),
        ] {
            let e = Destination::from_columns(phase, path, strategy).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("a {phase} request")),
                "{e}"
            );
        }
    }
}

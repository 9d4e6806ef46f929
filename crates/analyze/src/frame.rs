//! [`Frame`]: stored rows validated once into a compact, columnar-ish table
//! that every statistic reads.
//!
//! A [`SampleRow`] carries a dozen strings and every stamp a request passed
//! (~700 bytes plus heap); analysis needs about 110 bytes of it. The frame
//! keeps those (timings as `f64` with NaN for "did not happen", strings
//! interned to ids, the wall-clock start as UTC milliseconds), so a report
//! over a million stored samples streams rows through a [`FrameBuilder`] and
//! never holds them all. Row `i` of the input is observation `i` of the
//! frame: group indices are valid for both.
//!
//! Validation happens here: a phase must be one of the seven protocol
//! phases, a timing finite and non-negative, `started_at` RFC 3339. A row
//! whose session is not among the given sessions is kept with unknown labels
//! (the limits diagnostic reports it).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::str::FromStr;

use firsttoken_record::ErrorKind;
use firsttoken_record::session::{Provenance, SampleRow, SessionMeta};
use serde::Serialize;

use crate::AnalyzeError;

/// Interned-string id meaning "none".
pub(crate) const NONE: u32 = u32::MAX;

/// Protocol phase of a row (the stored `phase` string, validated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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
}

impl PhaseKind {
    /// Every phase, in protocol order.
    pub const ALL: [PhaseKind; 7] = [
        PhaseKind::Ping,
        PhaseKind::Cold,
        PhaseKind::Warm,
        PhaseKind::Fresh,
        PhaseKind::Direct,
        PhaseKind::Concurrency,
        PhaseKind::Rate,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseKind::Ping => "ping",
            PhaseKind::Cold => "cold",
            PhaseKind::Warm => "warm",
            PhaseKind::Fresh => "fresh",
            PhaseKind::Direct => "direct",
            PhaseKind::Concurrency => "concurrency",
            PhaseKind::Rate => "rate",
        }
    }

    /// True for requests that went to the app (not direct, not ping).
    pub fn is_app(self) -> bool {
        !matches!(self, PhaseKind::Ping | PhaseKind::Direct)
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl FromStr for PhaseKind {
    type Err = ();
    fn from_str(s: &str) -> Result<PhaseKind, ()> {
        PhaseKind::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or(())
    }
}

/// What is measured. Durations in ms except `tokens_per_s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Time to first content token.
    Ttft,
    /// Time to first response byte.
    Ttfb,
    /// Request start to stream end (completion time).
    E2e,
    /// Output tokens per second after the first token.
    TokensPerS,
    /// DNS lookup duration (fresh connections).
    Dns,
    /// TCP handshake duration after DNS.
    Connect,
    /// TLS handshake duration after TCP.
    Tls,
    /// Round trip of a ping: its ttfb, or its e2e when it has no ttfb.
    Rtt,
}

impl Metric {
    /// Every metric.
    pub const ALL: [Metric; 8] = [
        Metric::Ttft,
        Metric::Ttfb,
        Metric::E2e,
        Metric::TokensPerS,
        Metric::Dns,
        Metric::Connect,
        Metric::Tls,
        Metric::Rtt,
    ];

    /// snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Ttfb => "ttfb",
            Metric::E2e => "e2e",
            Metric::TokensPerS => "tokens_per_s",
            Metric::Dns => "dns",
            Metric::Connect => "connect",
            Metric::Tls => "tls",
            Metric::Rtt => "rtt",
        }
    }

    /// Unit of its values: `ms` or `tokens/s`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::TokensPerS => "tokens/s",
            _ => "ms",
        }
    }

    /// True when a larger value is better (throughput).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::TokensPerS)
    }

    /// This metric of an observation; NaN when it did not happen.
    pub(crate) fn of(self, o: &Obs) -> f64 {
        match self {
            Metric::Ttft => o.ttft,
            Metric::Ttfb => o.ttfb,
            Metric::E2e => o.e2e,
            Metric::TokensPerS => o.tps,
            Metric::Dns => o.dns,
            Metric::Connect => o.connect,
            Metric::Tls => o.tls,
            Metric::Rtt => {
                if o.ttfb.is_nan() {
                    o.e2e
                } else {
                    o.ttfb
                }
            }
        }
    }
}

impl FromStr for Metric {
    type Err = AnalyzeError;
    fn from_str(s: &str) -> Result<Metric, AnalyzeError> {
        let s = s.strip_suffix("_ms").unwrap_or(s);
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| AnalyzeError::UnknownMetric {
                name: s.to_string(),
            })
    }
}

/// One row as analysis sees it.
#[derive(Debug, Clone)]
pub(crate) struct Obs {
    pub ttft: f64,
    pub ttfb: f64,
    pub e2e: f64,
    pub tps: f64,
    pub dns: f64,
    pub connect: f64,
    pub tls: f64,
    /// Wall-clock start, ms since the Unix epoch (UTC).
    pub started_ms: i64,
    pub seq: u64,
    pub session: u32,
    pub path: u32,
    pub strategy: u32,
    pub provider: u32,
    pub route: u32,
    /// 0 when the row has no concurrency level.
    pub concurrency: u32,
    pub timing_start: u32,
    /// Days since the Unix epoch of `started_ms`.
    pub day: i32,
    pub timing_len: u16,
    pub phase: PhaseKind,
    pub provenance: Provenance,
    pub warmup: bool,
    pub error: Option<ErrorKind>,
}

impl Obs {
    /// Counted in statistics: not a warm-up.
    pub fn counted(&self) -> bool {
        !self.warmup
    }

    /// A counted, successful request: its timings enter statistics.
    pub fn timed(&self) -> bool {
        !self.warmup && self.error.is_none()
    }
}

/// A session as the frame knows it.
#[derive(Debug, Clone)]
pub(crate) struct FrameSession {
    pub id: String,
    /// Interned network, code_version, vantage; `None` without metadata.
    pub labels: Option<[u32; 3]>,
}

/// Validated rows, ready for analysis. Build with [`Frame::from_rows`] or a
/// [`FrameBuilder`].
#[derive(Debug, Clone, Default)]
pub struct Frame {
    pub(crate) obs: Vec<Obs>,
    pub(crate) strings: Vec<String>,
    pub(crate) sessions: Vec<FrameSession>,
    pub(crate) timings: Vec<(u32, f64)>,
    /// Row indices per (provenance, phase): `index[prov * 7 + phase]`.
    pub(crate) index: Vec<Vec<u32>>,
}

fn prov_index(p: Provenance) -> usize {
    match p {
        Provenance::Measured => 0,
        Provenance::Emulated => 1,
        Provenance::Imported => 2,
        Provenance::Synthetic => 3,
    }
}

const PROVENANCES: [Provenance; 4] = [
    Provenance::Measured,
    Provenance::Emulated,
    Provenance::Imported,
    Provenance::Synthetic,
];

impl Frame {
    /// Validate `rows` (with `sessions` for their labels) into a frame.
    pub fn from_rows(rows: &[SampleRow], sessions: &[SessionMeta]) -> Result<Frame, AnalyzeError> {
        let mut b = FrameBuilder::new(sessions)?;
        b.reserve(rows.len());
        for r in rows {
            b.push(r)?;
        }
        Ok(b.finish())
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.obs.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.obs.is_empty()
    }

    /// Provenance kinds present, in a fixed order (measured, emulated,
    /// imported, synthetic).
    pub fn provenances(&self) -> Vec<Provenance> {
        PROVENANCES
            .into_iter()
            .filter(|&p| {
                let base = prov_index(p) * 7;
                self.index[base..base + 7].iter().any(|v| !v.is_empty())
            })
            .collect()
    }

    /// Ids of the sessions rows belong to or that were given, in first-seen order.
    pub fn session_ids(&self) -> impl Iterator<Item = &str> {
        self.sessions.iter().map(|s| s.id.as_str())
    }

    /// Row indices of one phase and provenance.
    pub(crate) fn rows(&self, prov: Provenance, phase: PhaseKind) -> &[u32] {
        self.index
            .get(prov_index(prov) * 7 + phase.index())
            .map_or(&[], Vec::as_slice)
    }

    pub(crate) fn obs(&self, i: u32) -> &Obs {
        &self.obs[i as usize]
    }

    /// An interned string; `None` for [`NONE`].
    pub(crate) fn str(&self, id: u32) -> Option<&str> {
        self.strings.get(id as usize).map(String::as_str)
    }

    pub(crate) fn session_id(&self, o: &Obs) -> &str {
        &self.sessions[o.session as usize].id
    }

    /// Label `which` (0 network, 1 code_version, 2 vantage) of a row's session.
    pub(crate) fn label(&self, o: &Obs, which: usize) -> u32 {
        self.sessions[o.session as usize]
            .labels
            .map_or(NONE, |l| l[which])
    }

    pub(crate) fn server_timing(&self, o: &Obs) -> &[(u32, f64)] {
        let s = o.timing_start as usize;
        &self.timings[s..s + usize::from(o.timing_len)]
    }
}

/// Builds a [`Frame`] one row at a time, so rows can stream from a store.
#[derive(Debug)]
pub struct FrameBuilder {
    frame: Frame,
    interned: HashMap<String, u32, FxBuild>,
    session_ix: HashMap<String, u32, FxBuild>,
    last_session: u32,
}

impl FrameBuilder {
    /// A builder knowing `sessions` (their labels group rows); `Err` when an
    /// id is listed twice.
    pub fn new(sessions: &[SessionMeta]) -> Result<FrameBuilder, AnalyzeError> {
        let mut b = FrameBuilder {
            frame: Frame {
                index: vec![Vec::new(); 4 * 7],
                ..Frame::default()
            },
            interned: HashMap::default(),
            session_ix: HashMap::default(),
            last_session: NONE,
        };
        for s in sessions {
            if b.session_ix.contains_key(&s.id) {
                return Err(AnalyzeError::DuplicateSession { id: s.id.clone() });
            }
            let labels = [
                b.intern(&s.labels.network),
                b.intern(&s.labels.code_version),
                b.intern(&s.labels.vantage),
            ];
            let ix = b.frame.sessions.len() as u32;
            b.frame.sessions.push(FrameSession {
                id: s.id.clone(),
                labels: Some(labels),
            });
            b.session_ix.insert(s.id.clone(), ix);
        }
        Ok(b)
    }

    /// Make room for `additional` rows.
    pub fn reserve(&mut self, additional: usize) {
        self.frame.obs.reserve(additional);
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = self.frame.strings.len() as u32;
        self.frame.strings.push(s.to_string());
        self.interned.insert(s.to_string(), id);
        id
    }

    fn intern_opt(&mut self, s: Option<&str>) -> u32 {
        s.map_or(NONE, |s| self.intern(s))
    }

    fn session(&mut self, id: &str) -> u32 {
        // Rows usually arrive session by session.
        if let Some(s) = self.frame.sessions.get(self.last_session as usize)
            && s.id == id
        {
            return self.last_session;
        }
        let ix = match self.session_ix.get(id) {
            Some(&ix) => ix,
            None => {
                let ix = self.frame.sessions.len() as u32;
                self.frame.sessions.push(FrameSession {
                    id: id.to_string(),
                    labels: None,
                });
                self.session_ix.insert(id.to_string(), ix);
                ix
            }
        };
        self.last_session = ix;
        ix
    }

    /// Validate and add one row.
    pub fn push(&mut self, row: &SampleRow) -> Result<(), AnalyzeError> {
        let s = &row.sample;
        let bad = |field: &'static str, value: f64| AnalyzeError::InvalidValue {
            session_id: row.session_id.clone(),
            seq: s.seq,
            field,
            value,
        };
        let val = |field: &'static str, v: Option<f64>| match v {
            None => Ok(f64::NAN),
            Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
            Some(v) => Err(bad(field, v)),
        };
        let phase = row
            .phase
            .parse::<PhaseKind>()
            .map_err(|()| AnalyzeError::UnknownPhase {
                session_id: row.session_id.clone(),
                seq: s.seq,
                phase: row.phase.clone(),
            })?;
        let started_ms =
            parse_rfc3339_ms(&row.started_at).ok_or_else(|| AnalyzeError::InvalidTimestamp {
                session_id: row.session_id.clone(),
                seq: s.seq,
                value: row.started_at.clone(),
            })?;
        let dns = val("dns_ms", s.dns_ms)?;
        let connect_at = val("connect_ms", s.connect_ms)?;
        let tls_at = val("tls_ms", s.tls_ms)?;
        // Stamps are cumulative from the request start; keep each phase's own duration.
        let zero_if_nan = |x: f64| if x.is_nan() { 0.0 } else { x };
        let connect = (connect_at - zero_if_nan(dns)).max(0.0);
        let tls = (tls_at - zero_if_nan(connect_at).max(zero_if_nan(dns))).max(0.0);
        let concurrency = match row.concurrency {
            None => 0,
            Some(0) => return Err(bad("concurrency", 0.0)),
            Some(k) => k,
        };
        let timing_start = self.frame.timings.len() as u32;
        let mut timing_len = 0u16;
        if let Some(st) = &s.server_timing {
            for (name, &dur) in st.iter().take(usize::from(u16::MAX)) {
                if !(dur.is_finite() && dur >= 0.0) {
                    return Err(bad("server_timing", dur));
                }
                let id = self.intern(name);
                self.frame.timings.push((id, dur));
                timing_len += 1;
            }
        }
        let obs = Obs {
            ttft: val("ttft_ms", s.ttft_ms)?,
            ttfb: val("ttfb_ms", s.ttfb_ms)?,
            e2e: val("e2e_ms", s.e2e_ms)?,
            tps: val("tokens_per_s", s.tokens_per_s)?,
            dns,
            connect,
            tls,
            started_ms,
            seq: s.seq,
            session: self.session(&row.session_id),
            path: self.intern_opt(row.path.as_deref()),
            strategy: self.intern_opt(row.strategy.as_deref()),
            provider: self.intern_opt(s.provider.as_deref()),
            route: self.intern_opt(s.route.as_deref()),
            concurrency,
            timing_start,
            day: started_ms.div_euclid(MS_PER_DAY) as i32,
            timing_len,
            phase,
            provenance: row.provenance,
            warmup: s.warmup,
            error: s.error.as_ref().map(|e| e.kind),
        };
        let i = self.frame.obs.len() as u32;
        self.frame.index[prov_index(row.provenance) * 7 + phase.index()].push(i);
        self.frame.obs.push(obs);
        Ok(())
    }

    /// The frame.
    pub fn finish(self) -> Frame {
        self.frame
    }
}

const MS_PER_DAY: i64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01 (Hinnant's `civil_from_days`).
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

/// `YYYY-MM-DD` of a day count since the epoch.
pub(crate) fn format_day(day: i32) -> String {
    let (y, m, d) = civil_from_days(i64::from(day));
    format!("{y:04}-{m:02}-{d:02}")
}

/// RFC 3339 UTC (`YYYY-MM-DDTHH:MM:SS.mmmZ`) of ms since the epoch.
pub(crate) fn format_rfc3339(ms: i64) -> String {
    let day = ms.div_euclid(MS_PER_DAY);
    let rest = ms.rem_euclid(MS_PER_DAY);
    let (y, m, d) = civil_from_days(day);
    let (h, rest) = (rest / 3_600_000, rest % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// Milliseconds since the epoch of an RFC 3339 timestamp
/// (`2026-11-30T02:30:00Z`, fractional seconds and `±HH:MM` offsets allowed).
pub(crate) fn parse_rfc3339_ms(s: &str) -> Option<i64> {
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
    let days_in_month = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
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

/// Split `rows` by `key`, keeping row order within each part; parts in
/// first-seen order. O(n) with one hash lookup per change of key.
pub(crate) fn partition(rows: &[u32], key: impl Fn(u32) -> u64) -> Vec<(u64, Vec<u32>)> {
    let mut slots: HashMap<u64, usize, FxBuild> = HashMap::default();
    let mut parts: Vec<(u64, Vec<u32>)> = Vec::new();
    let mut last: Option<(u64, usize)> = None;
    for &i in rows {
        let k = key(i);
        let slot = match last {
            Some((lk, ls)) if lk == k => ls,
            _ => *slots.entry(k).or_insert_with(|| {
                parts.push((k, Vec::new()));
                parts.len() - 1
            }),
        };
        last = Some((k, slot));
        parts[slot].1.push(i);
    }
    parts
}

/// FxHash (rustc's hasher): fast for the short keys interned here; no
/// HashDoS concern since keys come from our own store.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FxBuild = BuildHasherDefault<FxHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{meta, row};

    #[test]
    fn timestamps_parse_to_utc() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_ms("1970-01-02T00:00:00.5Z"), Some(86_400_500));
        // python: datetime(2026,11,30,2,30,tzinfo=utc).timestamp() = 1796005800
        assert_eq!(
            parse_rfc3339_ms("2026-11-30T02:30:00Z"),
            Some(1_796_005_800_000)
        );
        // 01:30 at +02:00 is the previous UTC day.
        let ms = parse_rfc3339_ms("2026-12-01T01:30:00.123456+02:00").unwrap();
        assert_eq!(format_rfc3339(ms), "2026-11-30T23:30:00.123Z");
        assert_eq!(format_day(ms.div_euclid(MS_PER_DAY) as i32), "2026-11-30");
        assert_eq!(
            parse_rfc3339_ms("2024-02-29T00:00:00Z").map(format_rfc3339),
            Some("2024-02-29T00:00:00.000Z".into())
        );
        for bad in [
            "",
            "2026-11-30",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-11-30T02:30:00",
            "2026-11-30T02:30:00.Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T02:30:00+0200",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn frame_validates_rows() {
        let sessions = [meta("s1", Provenance::Measured)];
        let mut r = row("s1", "warm", Some("chat"), Some(100.0));
        r.sample.dns_ms = Some(5.0);
        r.sample.connect_ms = Some(15.0);
        r.sample.tls_ms = Some(45.0);
        let f = Frame::from_rows(std::slice::from_ref(&r), &sessions).unwrap();
        let o = f.obs(0);
        assert_eq!((o.dns, o.connect, o.tls), (5.0, 10.0, 30.0));
        assert_eq!(f.rows(Provenance::Measured, PhaseKind::Warm), &[0]);
        assert_eq!(f.provenances(), vec![Provenance::Measured]);

        let mut bad = r.clone();
        bad.phase = "lukewarm".into();
        assert!(matches!(
            Frame::from_rows(&[bad], &sessions),
            Err(AnalyzeError::UnknownPhase { .. })
        ));
        let mut bad = r.clone();
        bad.sample.ttft_ms = Some(-1.0);
        assert!(matches!(
            Frame::from_rows(&[bad], &sessions),
            Err(AnalyzeError::InvalidValue {
                field: "ttft_ms",
                ..
            })
        ));
        let mut bad = r.clone();
        bad.started_at = "yesterday".into();
        assert!(Frame::from_rows(&[bad], &sessions).is_err());
        assert!(matches!(
            Frame::from_rows(&[], &[sessions[0].clone(), sessions[0].clone()]),
            Err(AnalyzeError::DuplicateSession { .. })
        ));
        assert_eq!("ttft_ms".parse::<Metric>().unwrap(), Metric::Ttft);
        assert!("speed".parse::<Metric>().is_err());
    }
}

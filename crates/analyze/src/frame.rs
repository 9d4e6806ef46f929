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
//! Validation happens here: a timing must be finite and non-negative (the
//! phase, destination and `started_at` arrive typed from record). A row
//! whose session is not among the given sessions is kept with unknown labels
//! (the limits diagnostic reports it).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::str::FromStr;

use firsttoken_record::session::{Provenance, SampleRow, SessionMeta};
use firsttoken_record::vocab::{UtcDay, UtcTime};
use firsttoken_record::{Clock, ErrorKind, HandshakeKind};
use serde::Serialize;

use crate::AnalyzeError;

/// Interned-string id meaning "none".
pub(crate) const NONE: u32 = u32::MAX;

/// Protocol phase of a row: record's stored vocabulary, re-exported.
pub use firsttoken_record::vocab::PhaseKind;

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
    /// Time of the last content token, ms (NaN when none).
    pub last_token: f64,
    /// Content chunks received.
    pub content_chunks: u32,
    /// Interned hash of the prompt sent (`NONE` when not stored).
    pub prompt: u32,
    /// Index of the prompt in its list (0 when not stored).
    pub prompt_index: u32,
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
    /// Full or resumed TLS handshake, on fresh TLS connections.
    pub handshake: Option<HandshakeKind>,
    /// The clock of the arrival stamps (`None`: not recorded).
    pub clock: Option<Clock>,
    /// Client lag at the first content token, ms (NaN when none).
    pub client_lag: f32,
    /// Stream events in the first content token's read (0: not recorded).
    pub ttft_read_events: u16,
}

impl Obs {
    /// The request's own connection set-up, DNS + connect + TLS (each as
    /// [`Metric::of`] gives it), ms; `None` without any of those stamps
    /// (a reused connection).
    pub(crate) fn setup_ms(&self) -> Option<f64> {
        let parts = [Metric::Dns, Metric::Connect, Metric::Tls].map(|m| m.of(self));
        parts
            .iter()
            .any(|x| !x.is_nan())
            .then(|| parts.iter().filter(|x| !x.is_nan()).sum())
    }

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
    /// (path, expected route), interned, for the paths whose config sets
    /// an `expect_route` other than their name.
    pub expect: Vec<(u32, u32)>,
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

    /// The interned route a row's app request should report: its path's
    /// `expect_route` in its session's config, else its path.
    pub(crate) fn expected_route(&self, o: &Obs) -> u32 {
        self.sessions[o.session as usize]
            .expect
            .iter()
            .find(|(p, _)| *p == o.path)
            .map_or(o.path, |(_, r)| *r)
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
            let expect = expectations(&s.spec)
                .into_iter()
                .map(|(p, r)| (b.intern(&p), b.intern(&r)))
                .collect();
            b.frame.sessions.push(FrameSession {
                id: s.id.clone(),
                labels: Some(labels),
                expect,
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
                    expect: Vec::new(),
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
        let phase = row.phase;
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
            started_ms: row.started_at.unix_ms(),
            seq: s.seq,
            session: self.session(&row.session_id),
            path: self.intern_opt(row.dest.path_column()),
            strategy: self.intern_opt(row.dest.strategy()),
            provider: self.intern_opt(s.provider.as_deref()),
            route: self.intern_opt(s.route.as_deref()),
            last_token: val("last_token_ms", s.last_token_ms)?,
            content_chunks: u32::try_from(s.content_chunks).unwrap_or(u32::MAX),
            prompt: self.intern_opt(row.prompt.as_ref().map(|p| p.hash.as_str())),
            prompt_index: row.prompt.as_ref().map_or(0, |p| p.index),
            concurrency,
            timing_start,
            day: row.started_at.day().days_since_epoch(),
            timing_len,
            phase,
            provenance: row.provenance,
            warmup: s.warmup,
            error: s.error.as_ref().map(|e| e.kind),
            handshake: s.tls.as_ref().and_then(|t| t.handshake),
            clock: s.clock,
            client_lag: val("client_lag_ms", s.client_lag_ms)? as f32,
            ttft_read_events: s
                .ttft_read_events
                .map_or(0, |n| u16::try_from(n).unwrap_or(u16::MAX)),
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

/// (path, expected route) of every app path whose stored config sets an
/// `expect_route` other than its name (`spec.config.app.paths`).
fn expectations(spec: &serde_json::Value) -> Vec<(String, String)> {
    spec.pointer("/config/app/paths")
        .and_then(|v| v.as_array())
        .map(|paths| {
            paths
                .iter()
                .filter_map(|p| {
                    let name = p.get("name")?.as_str()?;
                    let route = p.get("expect_route")?.as_str()?;
                    (route != name).then(|| (name.to_string(), route.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `YYYY-MM-DD` of a day count since the epoch (record's [`UtcDay`]).
pub(crate) fn format_day(day: i32) -> String {
    UtcDay::from_days_since_epoch(day).to_string()
}

/// RFC 3339 UTC of ms since the epoch (record's [`UtcTime`]).
pub(crate) fn format_rfc3339(ms: i64) -> String {
    UtcTime::from_unix_ms(ms).to_string()
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
    fn rows_keep_their_utc_start_and_day() {
        let sessions = [meta("s1", Provenance::Measured)];
        let mut r = row("s1", "warm", Some("chat"), Some(100.0));
        r.started_at = "2026-12-01T01:30:00.123+02:00".parse().unwrap();
        let f = Frame::from_rows(&[r], &sessions).unwrap();
        let o = f.obs(0);
        assert_eq!(format_rfc3339(o.started_ms), "2026-11-30T23:30:00.123Z");
        assert_eq!(format_day(o.day), "2026-11-30");
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
        bad.sample.ttft_ms = Some(-1.0);
        assert!(matches!(
            Frame::from_rows(&[bad], &sessions),
            Err(AnalyzeError::InvalidValue {
                field: "ttft_ms",
                ..
            })
        ));
        assert!(matches!(
            Frame::from_rows(&[], &[sessions[0].clone(), sessions[0].clone()]),
            Err(AnalyzeError::DuplicateSession { .. })
        ));
        assert_eq!("ttft_ms".parse::<Metric>().unwrap(), Metric::Ttft);
        assert!("speed".parse::<Metric>().is_err());
    }
}

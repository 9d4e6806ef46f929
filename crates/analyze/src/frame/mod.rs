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
use std::sync::Arc;

use firsttoken_record::session::{Provenance, SampleRow, SessionMeta};
use firsttoken_record::vocab::{UtcDay, UtcTime};
use firsttoken_record::{Clock, ErrorKind, HandshakeKind, SampleView};
use serde::{Deserialize, Serialize};

use crate::AnalyzeError;

/// Interned-string id meaning "none".
pub(crate) const NONE: u32 = u32::MAX;

/// Protocol phase of a row: record's stored vocabulary, re-exported.
pub use firsttoken_record::vocab::PhaseKind;

pub use crate::metric::Metric;

/// One row as analysis sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Obs {
    pub ttft: f64,
    /// First tool call, ms (NaN when the answer called no tool).
    pub ttftc: f64,
    /// First output of either kind, ms (NaN when none).
    pub first_output: f64,
    pub ttfb: f64,
    pub e2e: f64,
    pub tps: f64,
    pub dns: f64,
    pub connect: f64,
    pub tls: f64,
    /// When it actually started, ms from its session's start.
    pub actual_start: f64,
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
    /// First of its Server-Timing values in [`Frame::timings`].
    pub timing_start: u32,
    /// Its list of Server-Timing names (`NONE`: it sent none).
    pub timing_shape: u32,
    pub phase: PhaseKind,
    pub provenance: Provenance,
    pub warmup: bool,
    /// The request sent a trace id (its spans can be joined).
    pub traced: bool,
    pub error: Option<ErrorKind>,
    /// Full or resumed TLS handshake, on fresh TLS connections.
    pub handshake: Option<HandshakeKind>,
    /// The clock of the arrival stamps (`None`: not recorded).
    pub clock: Option<Clock>,
    /// Client lag at the first content token, ms (NaN when none).
    pub client_lag: f32,
    /// Stream events in the first content token's read (0: not recorded).
    pub ttft_read_events: u16,
    /// In a flow, from its start to the measured request's start, ms
    /// (NaN for a single request); its steps are in the frame's flow rows.
    pub flow_wait: f32,
    /// The engine's own prefill (llama.cpp's `prompt_ms`), ms (NaN when
    /// the stream carried none).
    pub prefill: f64,
    /// The request opened its own connection.
    pub fresh_connection: bool,
    /// Its reused connection was found closed and it went again on a new one.
    pub retried_stale: bool,
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

    /// Days since the Unix epoch of its start (`started_ms`'s UTC day).
    pub(crate) fn day(&self) -> i32 {
        firsttoken_record::UtcTime::from_unix_ms(self.started_ms)
            .day()
            .days_since_epoch()
    }

    /// Counted in statistics: not a warm-up.
    pub fn counted(&self) -> bool {
        !self.warmup
    }

    /// A counted, successful request: its timings enter statistics.
    pub fn timed(&self) -> bool {
        !self.warmup && self.error.is_none()
    }

    /// A counted, successful warm request that used a new connection (the
    /// one it was to reuse was closed): not warm, so left out of every
    /// warm figure and counted by the connection finding instead.
    pub fn reconnected_warm(&self) -> bool {
        self.phase == PhaseKind::Warm && self.timed() && self.fresh_connection
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
///
/// The rows, strings and Server-Timing values are shared between clones
/// (a frame scoped to some sessions is a clone with other index lists).
#[derive(Debug, Clone, Default)]
pub struct Frame {
    pub(crate) obs: Arc<Vec<Obs>>,
    pub(crate) strings: Arc<Vec<String>>,
    pub(crate) sessions: Vec<FrameSession>,
    /// Server-Timing durations, ms: a row's are `timing_start..` for as
    /// many as its shape has names.
    pub(crate) timings: Arc<Vec<f64>>,
    /// The distinct lists of Server-Timing names (interned) rows carry, in
    /// their order: a row stores its values and the index of its list.
    pub(crate) timing_shapes: Arc<Vec<Vec<u32>>>,
    /// Row indices per (provenance, phase): `index[prov * PHASES + phase]`.
    pub(crate) index: Vec<Vec<u32>>,
    /// The flow rows, in row order, with their steps (few rows have any,
    /// so they are kept apart from [`Obs`]).
    pub(crate) flows: Arc<Vec<FlowRow>>,
    /// The conversation turns, in row order (few rows are turns, so they
    /// are kept apart from [`Obs`]).
    pub(crate) turns: Arc<Vec<TurnRow>>,
}

/// Phases, for the dense (provenance, phase) index.
const PHASES: usize = PhaseKind::ALL.len();

/// A conversation turn's row: its number, the messages held before it
/// and the measured request's body size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct TurnRow {
    pub row: u32,
    pub turn: u32,
    pub history_messages: u32,
    pub request_bytes: u64,
}

impl Frame {
    /// The turn of row `row`, if it is one.
    pub(crate) fn turn(&self, row: u32) -> Option<&TurnRow> {
        self.turns
            .binary_search_by_key(&row, |t| t.row)
            .ok()
            .map(|i| &self.turns[i])
    }
}

/// A flow row's earlier steps: (interned name, ms), in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FlowRow {
    pub row: u32,
    pub steps: Vec<(u32, f64)>,
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
                let base = prov_index(p) * PHASES;
                self.index[base..base + PHASES]
                    .iter()
                    .any(|v| !v.is_empty())
            })
            .collect()
    }

    /// Ids of the sessions rows belong to or that were given, in first-seen order.
    pub fn session_ids(&self) -> impl Iterator<Item = &str> {
        self.sessions.iter().map(|s| s.id.as_str())
    }

    /// Row indices of a session's app requests (every app phase, warm-ups
    /// included), in frame order; none for a session the frame lacks.
    pub fn app_rows(&self, session_id: &str) -> Vec<u32> {
        let Some(six) = self.sessions.iter().position(|s| s.id == session_id) else {
            return Vec::new();
        };
        (0..self.obs.len() as u32)
            .filter(|&i| {
                let o = &self.obs[i as usize];
                o.session as usize == six && o.phase.is_app()
            })
            .collect()
    }

    /// Row indices of one phase and provenance.
    pub(crate) fn rows(&self, prov: Provenance, phase: PhaseKind) -> &[u32] {
        self.index
            .get(prov_index(prov) * PHASES + phase.index())
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
}

/// The first [`FrameBuilder::intern_at`] slot of Server-Timing names (one
/// slot per position in a row's list).
const SLOT_TIMING: usize = 5;

/// Builds a [`Frame`] one row at a time, so rows can stream from a store;
/// builders cloned from one another fill in parts at once and are joined
/// with [`FrameBuilder::append`].
#[derive(Debug, Clone)]
pub struct FrameBuilder {
    frame: Frame,
    obs: Vec<Obs>,
    strings: Vec<String>,
    timings: Vec<f64>,
    shapes: Vec<Vec<u32>>,
    shape_ix: HashMap<Vec<u32>, u32, FxBuild>,
    flows: Vec<FlowRow>,
    turns: Vec<TurnRow>,
    /// The names of the row being added, reused.
    names: Vec<u32>,
    /// The last id interned per field (see [`FrameBuilder::intern_at`]).
    recent: Vec<u32>,
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
                index: vec![Vec::new(); 4 * PHASES],
                ..Frame::default()
            },
            obs: Vec::new(),
            strings: Vec::new(),
            timings: Vec::new(),
            shapes: Vec::new(),
            shape_ix: HashMap::default(),
            flows: Vec::new(),
            turns: Vec::new(),
            names: Vec::new(),
            recent: Vec::new(),
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

    /// Rows added so far.
    pub fn len(&self) -> usize {
        self.obs.len()
    }

    /// True before any row is added.
    pub fn is_empty(&self) -> bool {
        self.obs.is_empty()
    }

    /// Make room for `additional` rows.
    pub fn reserve(&mut self, additional: usize) {
        self.obs.reserve(additional);
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.interned.insert(s.to_string(), id);
        id
    }

    /// [`FrameBuilder::intern`] through a one-entry cache per field
    /// (`slot`): consecutive rows mostly repeat a field's value, and a
    /// comparison is cheaper than a hash lookup.
    fn intern_at(&mut self, slot: usize, s: Option<&str>) -> u32 {
        let Some(s) = s else { return NONE };
        if let Some(&id) = self.recent.get(slot)
            && self.strings.get(id as usize).is_some_and(|t| t == s)
        {
            return id;
        }
        let id = self.intern(s);
        if slot >= self.recent.len() {
            self.recent.resize(slot + 1, NONE);
        }
        self.recent[slot] = id;
        id
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
        self.push_view(&SampleView::of(row))
    }

    /// Validate and add one row, as a store reads it
    /// ([`firsttoken_record::Store::scan_views`]).
    pub fn push_view(&mut self, v: &SampleView<'_>) -> Result<(), AnalyzeError> {
        let bad = |field: &'static str, value: f64| AnalyzeError::InvalidValue {
            session_id: v.session_id.to_string(),
            seq: v.seq,
            field,
            value,
        };
        let val = |field: &'static str, x: Option<f64>| match x {
            None => Ok(f64::NAN),
            Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
            Some(x) => Err(bad(field, x)),
        };
        let phase = v.phase;
        let dns = val("dns_ms", v.dns_ms)?;
        let connect_at = val("connect_ms", v.connect_ms)?;
        let tls_at = val("tls_ms", v.tls_ms)?;
        // Stamps are cumulative from the request start; keep each phase's own
        // duration. A phase without its stamp did not happen (no TCP connect
        // on a reused connection, no TLS over plain HTTP): NaN, never 0 (`max`
        // would turn a NaN into 0).
        let zero_if_nan = |x: f64| if x.is_nan() { 0.0 } else { x };
        let after = |at: f64, before: f64| {
            if at.is_nan() {
                f64::NAN
            } else {
                (at - before).max(0.0)
            }
        };
        let connect = after(connect_at, zero_if_nan(dns));
        let tls = after(tls_at, zero_if_nan(connect_at).max(zero_if_nan(dns)));
        let concurrency = match v.concurrency {
            None => 0,
            Some(0) => return Err(bad("concurrency", 0.0)),
            Some(k) => k,
        };
        if !v.actual_start_ms.is_finite() {
            return Err(bad("actual_start_ms", v.actual_start_ms));
        }
        let timing_start = self.timings.len() as u32;
        let mut names = std::mem::take(&mut self.names);
        names.clear();
        for (name, dur) in &v.server_timing {
            if !(dur.is_finite() && *dur >= 0.0) {
                self.timings.truncate(timing_start as usize);
                self.names = names;
                return Err(bad("server_timing", *dur));
            }
            names.push(self.intern_at(SLOT_TIMING + names.len(), Some(name)));
            self.timings.push(*dur);
        }
        let timing_shape = self.shape(&names);
        self.names = names;
        let flow_wait = val("flow_wait_ms", v.flow_wait_ms)?;
        let mut steps = Vec::with_capacity(v.flow_steps.len());
        for (name, ms) in &v.flow_steps {
            if !(ms.is_finite() && *ms >= 0.0) {
                return Err(bad("flow_steps", *ms));
            }
            steps.push((self.intern(name), *ms));
        }
        let obs = Obs {
            ttft: val("ttft_ms", v.ttft_ms)?,
            ttftc: val("ttftc_ms", v.ttftc_ms)?,
            first_output: val("first_output_ms", v.first_output_ms)?,
            ttfb: val("ttfb_ms", v.ttfb_ms)?,
            e2e: val("e2e_ms", v.e2e_ms)?,
            tps: val("tokens_per_s", v.tokens_per_s)?,
            dns,
            connect,
            tls,
            actual_start: v.actual_start_ms,
            started_ms: v.started_at.unix_ms(),
            seq: v.seq,
            session: self.session(v.session_id),
            path: self.intern_at(0, v.path),
            strategy: self.intern_at(1, v.strategy),
            provider: self.intern_at(2, v.provider),
            route: self.intern_at(3, v.route),
            last_token: val("last_token_ms", v.last_token_ms)?,
            content_chunks: u32::try_from(v.content_chunks).unwrap_or(u32::MAX),
            prompt: self.intern_at(4, v.prompt.map(|p| p.1)),
            prompt_index: v.prompt.map_or(0, |p| p.0),
            concurrency,
            timing_start,
            timing_shape,
            phase,
            provenance: v.provenance,
            warmup: v.warmup,
            traced: v.trace_id.is_some(),
            error: v.error,
            handshake: v.handshake,
            clock: v.clock,
            client_lag: val("client_lag_ms", v.client_lag_ms)? as f32,
            ttft_read_events: v
                .ttft_read_events
                .map_or(0, |n| u16::try_from(n).unwrap_or(u16::MAX)),
            flow_wait: flow_wait as f32,
            prefill: val(
                "engine.prompt_ms",
                v.engine.as_ref().and_then(|e| e.prompt_ms),
            )?,
            fresh_connection: v.connection == firsttoken_record::Connection::Fresh,
            retried_stale: v.retried_stale,
        };
        let i = self.obs.len() as u32;
        if !flow_wait.is_nan() {
            self.flows.push(FlowRow { row: i, steps });
        }
        if let Some(turn) = v.turn {
            self.turns.push(TurnRow {
                row: i,
                turn,
                history_messages: v.history_messages.unwrap_or(0),
                request_bytes: v.request_bytes.unwrap_or(0),
            });
        }
        self.index_row(&obs, i);
        self.obs.push(obs);
        Ok(())
    }

    /// Lists row `i` (`o`) in the (provenance, phase) index.
    fn index_row(&mut self, o: &Obs, i: u32) {
        // A warm request on a new connection is no warm request: left out
        // of the warm index, so warm figures describe warm connections
        // only; the connection finding counts it ([`crate::engine`]).
        if !o.reconnected_warm() {
            self.frame.index[prov_index(o.provenance) * PHASES + o.phase.index()].push(i);
        }
    }

    /// The index of the list of Server-Timing names `names` (`NONE` for
    /// none); rows of one app usually send the same list.
    fn shape(&mut self, names: &[u32]) -> u32 {
        if names.is_empty() {
            return NONE;
        }
        if let Some(&ix) = self.shape_ix.get(names) {
            return ix;
        }
        let ix = self.shapes.len() as u32;
        self.shapes.push(names.to_vec());
        self.shape_ix.insert(names.to_vec(), ix);
        ix
    }

    /// The frame.
    pub fn finish(self) -> Frame {
        Frame {
            obs: Arc::new(self.obs),
            strings: Arc::new(self.strings),
            timings: Arc::new(self.timings),
            timing_shapes: Arc::new(self.shapes),
            flows: Arc::new(self.flows),
            turns: Arc::new(self.turns),
            ..self.frame
        }
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

mod append;
mod stored;

pub use stored::{FrameChunks, STORED_FRAME_FORMAT, StoredFrame};

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
        assert_eq!(format_day(o.day()), "2026-11-30");
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
        // Issue 24, defect 5: plain HTTP to an IP address has no DNS and no
        // TLS stamp; those phases did not happen (NaN), they took no 0 ms.
        let mut plain = r.clone();
        (plain.sample.dns_ms, plain.sample.tls_ms) = (None, None);
        let f = Frame::from_rows(std::slice::from_ref(&plain), &sessions).unwrap();
        let o = f.obs(0);
        assert!(o.dns.is_nan() && o.tls.is_nan(), "{o:?}");
        assert_eq!(o.connect, 15.0);
        assert_eq!(o.setup_ms(), Some(15.0));
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

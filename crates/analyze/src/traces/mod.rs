//! Where the time went: the app's server-side spans joined to every sample.
//!
//! A span belongs to a sample when their trace ids are equal (firsttoken
//! sends a fresh W3C `traceparent` per request and stores its trace id on
//! the sample). Per session, [`offset`] estimates the offset between the
//! server's clock and the client's from the request/response pairs, with
//! its uncertainty; [`mod@join`] splits each traced request's server time
//! into queue wait, groups of spans named by semantic conventions
//! ([`classify`]) and the rest. On top of that:
//!
//! - [`SpanSplit`]: per app path, each part's median with its bootstrap CI
//!   (the app overhead split; preferred over Server-Timing when both
//!   exist);
//! - [`WallCause`]: per concurrency level, the wait before the handler
//!   against the handler's own time — did requests wait for the worker, or
//!   did a shared resource slow down?
//! - [`PathContrast`]: two paths' parts side by side, with the difference
//!   of each part's median;
//! - [`Waterfall`]: one typical and one slow request, client phases and
//!   server spans on one (offset-corrected) time axis;
//! - [`Coverage`]: requests without spans, counted per phase and path —
//!   never dropped from the other statistics (they are the same rows the
//!   rest of the analysis uses; only these figures need spans).
//!
//! Rows of different provenance kinds or code versions are never pooled.

pub mod classify;
pub mod gaps;
pub mod join;
pub mod offset;
mod stats;
mod waterfall;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use firsttoken_record::session::{Provenance, SampleRow, SessionMeta};
use firsttoken_record::span::SpanRow;
use firsttoken_record::vocab::{Destination, PhaseKind};
use serde::Serialize;

pub use classify::{Category, GroupMap};
pub use offset::OffsetEstimate;
pub use stats::{
    GroupContrast, PartStat, PathContrast, SpanSplit, WaitLevel, WallCause, WallReason,
};
pub(crate) use stats::{WAIT_DOMINANCE, judge_wall};
pub use waterfall::{ClientPhases, Waterfall, WaterfallKind, WaterfallSpan};

use crate::{Analysis, Frame, Settings};
use join::Breakdown;

/// Which rows a figure describes: provenance kind, setup (`code_version=…`
/// when several), app path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct TraceScope {
    /// Provenance of every row.
    pub provenance: Provenance,
    /// `code_version=…` when the sessions cover several; empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// The app path (`None` when the config names none).
    pub path: Option<String>,
}

/// The clock offset of one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionOffset {
    /// The session.
    pub session_id: String,
    /// Traced requests (with a root span).
    pub traced: usize,
    /// θ = server clock − client clock; `None` without a request that has
    /// both a root span and a first response byte.
    pub offset: Option<OffsetEstimate>,
}

/// Requests of one phase and path, and how many of them have spans.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Provenance, setup and path.
    #[serde(flatten)]
    pub scope: TraceScope,
    /// The protocol phase.
    pub phase: PhaseKind,
    /// Measured requests (warm-ups not counted; failures counted).
    pub requests: usize,
    /// Of which carried a trace id.
    pub with_trace_id: usize,
    /// Of which the server reported spans for, with a root span.
    pub traced: usize,
    /// Spans arrived but none is a root (the server's own span was lost).
    pub without_root: usize,
}

impl Coverage {
    /// Requests with no usable spans (untraced paths, dropped exports).
    pub fn untraced(&self) -> usize {
        self.requests - self.traced
    }
}

/// Everything the spans tell, for the sessions analysed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Traces {
    /// The group renames in force (`group → name`, `host:<h> → group`).
    pub group_map: BTreeMap<String, String>,
    /// Spans given.
    pub spans: usize,
    /// Spans whose trace id matched no sample.
    pub unmatched_spans: usize,
    /// Per session, the clock offset.
    pub sessions: Vec<SessionOffset>,
    /// Per phase and path, requests with and without spans.
    pub coverage: Vec<Coverage>,
    /// Per path: the server time split into parts.
    pub splits: Vec<SpanSplit>,
    /// Per path with concurrency levels: wait against handler time.
    pub walls: Vec<WallCause>,
    /// Pairs of paths, part by part.
    pub contrasts: Vec<PathContrast>,
    /// Per path: a typical and a slow request, drawn.
    pub waterfalls: Vec<Waterfall>,
}

impl Traces {
    /// True when no request has spans.
    pub fn is_empty(&self) -> bool {
        self.sessions.iter().all(|s| s.traced == 0)
    }
}

/// What the span join reads besides the frame.
#[derive(Debug, Clone, Copy)]
pub struct SpanInput<'a> {
    /// The sessions whose requests are joined: their counted app requests
    /// are counted with or without spans, and each one's clock anchor is
    /// taken from all its rows. `report` joins the
    /// sessions that have spans ("no span" elsewhere would be noise).
    pub sessions: &'a [String],
    /// Counted samples of those sessions, in frame order, including every
    /// one whose trace id some span carries (others are skipped): the only
    /// rows the join needs whole.
    pub rows: &'a [SampleRow],
    /// The spans.
    pub spans: &'a [SpanRow],
    /// The config's group map ([`GroupMap`]).
    pub groups: &'a BTreeMap<String, String>,
}

/// Join spans to their samples and put the result in `analysis.traces`
/// (seeded with the analysis's settings; `overhead` figures of the same
/// path are linked to their split). `frame` holds every row analysed and
/// `sessions` every session (their code versions label the scopes).
/// Without a session in the join, `traces` stays `None`.
pub fn attach_traces(
    analysis: &mut Analysis,
    frame: &Frame,
    sessions: &[SessionMeta],
    input: &SpanInput<'_>,
) {
    if input.sessions.is_empty() {
        analysis.traces = None;
        return;
    }
    let mut t = explain(frame, sessions, input, &analysis.settings);
    stats::link_overhead(&mut t.splits, &analysis.overhead);
    // An engine that reports its own times in a span (vLLM): its prefill
    // and queue join the engine's split.
    let engines = span_engines(frame, input);
    if !engines.is_empty() {
        analysis.engine = crate::engine::engine_times_with(frame, &engines, &analysis.settings);
    }
    // Spans break the overhead down where Server-Timing could not.
    if t.splits.iter().any(|s| s.traced > 0) {
        analysis
            .limits
            .items
            .retain(|l| *l != crate::diagnose::Limit::NoServerTiming);
    }
    analysis.traces = Some(t);
}

/// The engine times in the spans of each counted sample of `input`: the
/// first span of its trace carrying an engine's latency attributes
/// ([`crate::engine::SpanEngine`]), by (frame session index, seq).
fn span_engines(frame: &Frame, input: &SpanInput<'_>) -> crate::engine::SpanEngines {
    let mut by_trace: HashMap<&str, Vec<&SpanRow>> = HashMap::new();
    for s in input.spans {
        by_trace.entry(s.trace_id.as_str()).or_default().push(s);
    }
    let session_ix: HashMap<&str, u32> = frame
        .sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i as u32))
        .collect();
    let mut out = crate::engine::SpanEngines::new();
    for r in input.rows.iter().filter(|r| !r.sample.warmup) {
        let Some(trace) = r.sample.trace_id.as_deref().and_then(|t| by_trace.get(t)) else {
            continue;
        };
        let engine = trace
            .iter()
            .find_map(|s| crate::engine::SpanEngine::of(&s.attributes));
        if let (Some(e), Some(&ix)) = (engine, session_ix.get(r.session_id.as_str())) {
            out.insert((ix, r.sample.seq), e);
        }
    }
    out
}

/// The setup label of each session (`code_version=…`), empty when all
/// sessions share one version.
fn setups(sessions: &[SessionMeta]) -> HashMap<&str, String> {
    let mut versions: Vec<&str> = sessions
        .iter()
        .map(|s| s.labels.code_version.as_str())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    sessions
        .iter()
        .map(|s| {
            let label = if versions.len() > 1 {
                format!("code_version={}", s.labels.code_version)
            } else {
                String::new()
            };
            (s.id.as_str(), label)
        })
        .collect()
}

/// The scope of an app row.
fn scope_of(row: &SampleRow, setups: &HashMap<&str, String>) -> TraceScope {
    TraceScope {
        provenance: row.provenance,
        scope: setups
            .get(row.session_id.as_str())
            .cloned()
            .unwrap_or_default(),
        path: match &row.dest {
            Destination::App { path } => path.clone(),
            _ => None,
        },
    }
}

/// The coverage entry of `scope` and `phase`, made empty if missing.
fn coverage_of(
    coverage: &mut BTreeMap<(TraceScope, PhaseKind), Coverage>,
    scope: TraceScope,
    phase: PhaseKind,
) -> &mut Coverage {
    coverage
        .entry((scope.clone(), phase))
        .or_insert_with(|| Coverage {
            scope,
            phase,
            requests: 0,
            with_trace_id: 0,
            traced: 0,
            without_root: 0,
        })
}

/// The join and every figure built on it (see the module docs); the
/// inputs as [`attach_traces`] takes them.
pub fn explain(
    frame: &Frame,
    sessions: &[SessionMeta],
    input: &SpanInput<'_>,
    settings: &Settings,
) -> Traces {
    let SpanInput {
        rows,
        spans,
        groups,
        ..
    } = *input;
    let map = GroupMap::new(groups.clone());
    let setups = setups(sessions);
    let mut by_trace: HashMap<&str, Vec<&SpanRow>> = HashMap::new();
    for s in spans {
        by_trace.entry(s.trace_id.as_str()).or_default().push(s);
    }
    // The sessions in the join, by frame index.
    let in_join: Vec<bool> = frame
        .sessions
        .iter()
        .map(|s| input.sessions.contains(&s.id))
        .collect();

    // Pass 1: the counted app requests of those sessions, then each
    // sample's spans and root.
    // Counted per (session, path, phase) on interned ids first: a million
    // rows should not build a million scopes.
    type Key = (u32, u32, PhaseKind, Provenance);
    let mut counts: HashMap<Key, (usize, usize)> = HashMap::new();
    for o in frame.obs.iter() {
        if !in_join[o.session as usize] || !o.phase.is_app() || o.warmup {
            continue;
        }
        let c = counts
            .entry((o.session, o.path, o.phase, o.provenance))
            .or_default();
        c.0 += 1;
        c.1 += usize::from(o.traced);
    }
    let mut coverage: BTreeMap<(TraceScope, PhaseKind), Coverage> = BTreeMap::new();
    for ((session, path, phase, provenance), (requests, with_trace_id)) in counts {
        let fs = &frame.sessions[session as usize];
        let scope = TraceScope {
            provenance,
            scope: setups.get(fs.id.as_str()).cloned().unwrap_or_default(),
            path: frame.str(path).map(str::to_string),
        };
        let c = coverage_of(&mut coverage, scope, phase);
        c.requests += requests;
        c.with_trace_id += with_trace_id;
    }
    let mut joined: Vec<(usize, &SpanRow, &[&SpanRow])> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if !r.phase.is_app() || r.sample.warmup {
            continue;
        }
        let Some(trace) = r.sample.trace_id.as_deref().and_then(|t| by_trace.get(t)) else {
            continue;
        };
        let c = coverage_of(&mut coverage, scope_of(r, &setups), r.phase);
        match join::root_of(trace) {
            Some(root) => {
                c.traced += 1;
                joined.push((i, root, trace.as_slice()));
            }
            None => c.without_root += 1,
        }
    }

    // Pass 2: per session, the anchor (from every row of it: each row's
    // wall-clock start and its start on the session's clock were taken
    // together) and the offset.
    let mut anchors = HashMap::new();
    let mut own_starts: Vec<Vec<(i64, f64)>> = vec![Vec::new(); frame.sessions.len()];
    for o in frame.obs.iter() {
        if in_join[o.session as usize] {
            own_starts[o.session as usize].push((o.started_ms, o.actual_start));
        }
    }
    let mut own_joined: HashMap<&str, Vec<(usize, &SpanRow)>> = HashMap::new();
    for &(i, root, _) in &joined {
        own_joined
            .entry(rows[i].session_id.as_str())
            .or_default()
            .push((i, root));
    }
    let mut offsets = Vec::new();
    let mut theta: HashMap<&str, OffsetEstimate> = HashMap::new();
    for (ix, fs) in frame.sessions.iter().enumerate() {
        let id = fs.id.as_str();
        let Some(anchor) = offset::anchor(own_starts[ix].iter().copied()) else {
            continue;
        };
        anchors.insert(id, anchor);
        let mut pairs = Vec::new();
        let mut traced = 0;
        for &(i, root) in own_joined.get(id).map(Vec::as_slice).unwrap_or_default() {
            traced += 1;
            let r = &rows[i];
            let Some(fb) = r.sample.ttfb_ms else { continue };
            let base = anchor.origin_ms + r.actual_start_ms;
            pairs.push(offset::Pair {
                server_start_ms: root.start_unix_nano as f64 / 1e6,
                client_write_ms: base + join::client_write_ms(r),
                client_first_byte_ms: base + fb,
                server_end_ms: root.end_unix_nano as f64 / 1e6,
                client_end_ms: r
                    .sample
                    .is_ok()
                    .then_some(r.sample.e2e_ms)
                    .flatten()
                    .map(|e| base + e),
            });
        }
        let est = offset::estimate(&pairs, anchor.half_ms);
        if let Some(e) = est {
            theta.insert(id, e);
        }
        offsets.push(SessionOffset {
            session_id: id.to_string(),
            traced,
            offset: est,
        });
    }

    // Pass 3: each traced sample's breakdown.
    let mut breakdowns: Vec<(TraceScope, Breakdown)> = Vec::new();
    for &(i, root, trace) in &joined {
        let r = &rows[i];
        let Some(anchor) = anchors.get(r.session_id.as_str()) else {
            continue;
        };
        let th = theta.get(r.session_id.as_str()).map(|e| e.offset_ms);
        let b = join::breakdown(i, r, root, trace, anchor.origin_ms, th, &map);
        breakdowns.push((scope_of(r, &setups), b));
    }

    let waterfalls = waterfall::pick(rows, &breakdowns, &joined, &anchors, &theta, &map);
    let splits = stats::splits(rows, &breakdowns, &coverage, settings);
    let walls = stats::walls(rows, &breakdowns, settings);
    let contrasts = stats::contrasts(rows, &breakdowns, &splits, settings);
    Traces {
        group_map: groups.clone(),
        spans: spans.len(),
        unmatched_spans: spans
            .len()
            .saturating_sub(matched_traces_unique(rows, &by_trace)),
        sessions: offsets,
        coverage: coverage.into_values().collect(),
        splits,
        walls,
        contrasts,
        waterfalls,
    }
}

/// Spans whose trace id some sample carries (each trace counted once).
fn matched_traces_unique(rows: &[SampleRow], by_trace: &HashMap<&str, Vec<&SpanRow>>) -> usize {
    let mut seen: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.sample.trace_id.as_deref())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    seen.iter()
        .filter_map(|t| by_trace.get(t))
        .map(Vec::len)
        .sum()
}

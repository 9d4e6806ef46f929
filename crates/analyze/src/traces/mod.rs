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
pub use waterfall::{ClientPhases, Waterfall, WaterfallKind, WaterfallSpan};

use crate::{Analysis, Settings};
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

/// Join `spans` to `rows` and put the result in `analysis.traces`
/// (seeded with the analysis's settings; `overhead` figures of the same
/// path are linked to their split). `groups` is the config's group map
/// ([`GroupMap`]). With no spans and no trace ids, `traces` stays `None`.
pub fn attach_traces(
    analysis: &mut Analysis,
    rows: &[SampleRow],
    sessions: &[SessionMeta],
    spans: &[SpanRow],
    groups: &BTreeMap<String, String>,
) {
    if spans.is_empty() && rows.iter().all(|r| r.sample.trace_id.is_none()) {
        analysis.traces = None;
        return;
    }
    let mut t = explain(rows, sessions, spans, groups, &analysis.settings);
    stats::link_overhead(&mut t.splits, &analysis.overhead);
    // Spans break the overhead down where Server-Timing could not.
    if t.splits.iter().any(|s| s.traced > 0) {
        analysis
            .limits
            .items
            .retain(|l| *l != crate::diagnose::Limit::NoServerTiming);
    }
    analysis.traces = Some(t);
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

/// The join and every figure built on it (see the module docs).
pub fn explain(
    rows: &[SampleRow],
    sessions: &[SessionMeta],
    spans: &[SpanRow],
    groups: &BTreeMap<String, String>,
    settings: &Settings,
) -> Traces {
    let map = GroupMap::new(groups.clone());
    let setups = setups(sessions);
    let mut by_trace: HashMap<&str, Vec<&SpanRow>> = HashMap::new();
    for s in spans {
        by_trace.entry(s.trace_id.as_str()).or_default().push(s);
    }
    // Pass 1: find each sample's spans and root.
    let mut joined: Vec<(usize, &SpanRow, &[&SpanRow])> = Vec::new();
    let mut coverage: BTreeMap<(TraceScope, PhaseKind), Coverage> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let trace = r.sample.trace_id.as_deref().and_then(|t| by_trace.get(t));
        let root = trace.and_then(|s| join::root_of(s));
        if !r.phase.is_app() || r.sample.warmup {
            continue;
        }
        let scope = scope_of(r, &setups);
        let c = coverage
            .entry((scope.clone(), r.phase))
            .or_insert_with(|| Coverage {
                scope,
                phase: r.phase,
                requests: 0,
                with_trace_id: 0,
                traced: 0,
                without_root: 0,
            });
        c.requests += 1;
        c.with_trace_id += usize::from(r.sample.trace_id.is_some());
        match (trace, root) {
            (Some(s), Some(root)) => {
                c.traced += 1;
                joined.push((i, root, s.as_slice()));
            }
            (Some(_), None) => c.without_root += 1,
            _ => {}
        }
    }

    // Pass 2: per session, the anchor and the offset.
    let mut anchors = HashMap::new();
    let mut session_ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let mut seen: std::collections::HashSet<&str> = session_ids.iter().copied().collect();
    for r in rows {
        if seen.insert(r.session_id.as_str()) {
            session_ids.push(r.session_id.as_str());
        }
    }
    // Each session's rows and joined requests, gathered once.
    let mut own_rows: HashMap<&str, Vec<&SampleRow>> = HashMap::new();
    for r in rows {
        own_rows.entry(r.session_id.as_str()).or_default().push(r);
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
    for id in session_ids {
        let own = own_rows.get(id).map(Vec::as_slice).unwrap_or_default();
        let Some(anchor) = offset::anchor(
            own.iter()
                .map(|r| (r.started_at.unix_ms(), r.actual_start_ms)),
        ) else {
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

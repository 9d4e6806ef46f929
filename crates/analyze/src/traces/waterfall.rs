//! The requests a waterfall draws: per path, a typical one (the traced
//! request whose e2e is nearest the median) and a slow one (the request at
//! the 95th-percentile rank of e2e: one of the slowest decile once there
//! are ten), each with its client phases and its server spans on the
//! client's time axis (span times minus the session's clock offset).

use std::collections::{BTreeMap, HashMap};

use firsttoken_record::session::SampleRow;
use firsttoken_record::span::SpanRow;
use firsttoken_record::vocab::PhaseKind;
use serde::Serialize;

use super::TraceScope;
use super::classify::GroupMap;
use super::join::Breakdown;
use super::offset::{Anchor, OffsetEstimate};

/// Spans drawn per request at most (the rest are counted).
pub const MAX_WATERFALL_SPANS: usize = 40;

/// Which request a waterfall shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaterfallKind {
    /// e2e nearest the median.
    Typical,
    /// e2e at the 95th-percentile rank.
    Slow,
}

/// The client's stamps, ms from the request start (`None`: did not happen).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClientPhases {
    /// DNS done.
    pub dns_ms: Option<f64>,
    /// TCP connected.
    pub connect_ms: Option<f64>,
    /// TLS done.
    pub tls_ms: Option<f64>,
    /// Request written.
    pub sent_ms: Option<f64>,
    /// First response byte.
    pub ttfb_ms: Option<f64>,
    /// First token.
    pub ttft_ms: Option<f64>,
    /// Stream end.
    pub e2e_ms: Option<f64>,
}

/// One server span, on the client's axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaterfallSpan {
    /// Its name.
    pub name: String,
    /// Its group (after renaming).
    pub group: String,
    /// 0 for the root, 1 for its children, …
    pub depth: usize,
    /// Start, ms from the client's request start (offset-corrected).
    pub start_ms: f64,
    /// End, likewise.
    pub end_ms: f64,
    /// Its status was ERROR.
    pub error: bool,
}

/// One request, drawn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Waterfall {
    /// Provenance, setup and path.
    #[serde(flatten)]
    pub scope: TraceScope,
    /// Typical or slow.
    pub which: WaterfallKind,
    /// Traced requests it was chosen from.
    pub chosen_from: usize,
    /// Its session.
    pub session_id: String,
    /// Its sequence number.
    pub seq: u64,
    /// Its phase.
    pub phase: PhaseKind,
    /// Its concurrency level, if any.
    pub concurrency: Option<u32>,
    /// The client's stamps.
    pub client: ClientPhases,
    /// ± this much on every span time (the offset's uncertainty), ms.
    pub offset_uncertainty_ms: f64,
    /// Spans in tree order (parents first, siblings by start).
    pub spans: Vec<WaterfallSpan>,
    /// Spans the request had (more than drawn when over the cap).
    pub spans_total: usize,
}

/// Spans of one trace in tree order with their depth.
fn tree<'a>(root: &'a SpanRow, spans: &[&'a SpanRow]) -> Vec<(&'a SpanRow, usize)> {
    let mut children: HashMap<&str, Vec<&SpanRow>> = HashMap::new();
    for s in spans {
        if let Some(p) = &s.parent_span_id
            && s.span_id != root.span_id
        {
            children.entry(p.as_str()).or_default().push(s);
        }
    }
    for v in children.values_mut() {
        v.sort_by_key(|s| (s.start_unix_nano, s.span_id.clone()));
    }
    let mut out = Vec::new();
    let mut stack = vec![(root, 0usize)];
    while let Some((s, d)) = stack.pop() {
        if out.len() > spans.len() {
            break; // a cycle in the parent ids: stop rather than loop
        }
        out.push((s, d));
        if let Some(c) = children.get(s.span_id.as_str()) {
            stack.extend(c.iter().rev().map(|c| (*c, d + 1)));
        }
    }
    out
}

/// The waterfalls of every scope with traced, successful requests.
pub(super) fn pick(
    rows: &[SampleRow],
    breakdowns: &[(TraceScope, Breakdown)],
    joined: &[(usize, &SpanRow, &[&SpanRow])],
    anchors: &HashMap<&str, Anchor>,
    theta: &HashMap<&str, OffsetEstimate>,
    map: &GroupMap,
) -> Vec<Waterfall> {
    let traces: HashMap<usize, (&SpanRow, &[&SpanRow])> =
        joined.iter().map(|&(i, r, s)| (i, (r, s))).collect();
    let mut scopes: BTreeMap<&TraceScope, Vec<(f64, usize)>> = BTreeMap::new();
    for (s, b) in breakdowns {
        let r = &rows[b.row];
        if let (true, Some(e2e)) = (r.sample.is_ok(), r.sample.e2e_ms)
            && theta.contains_key(r.session_id.as_str())
        {
            scopes.entry(s).or_default().push((e2e, b.row));
        }
    }
    let mut out = Vec::new();
    for (scope, mut v) in scopes {
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let n = v.len();
        let med = crate::percentile_sorted(&v.iter().map(|x| x.0).collect::<Vec<_>>(), 50.0)
            .unwrap_or(0.0);
        let typical = v
            .iter()
            .min_by(|a, b| (a.0 - med).abs().total_cmp(&(b.0 - med).abs()))
            .map(|x| x.1);
        let slow_i = ((n - 1) as f64 * 0.95).round() as usize;
        let slow = v.get(slow_i).map(|x| x.1).filter(|s| Some(*s) != typical);
        for (which, row) in [
            (WaterfallKind::Typical, typical),
            (WaterfallKind::Slow, slow),
        ] {
            let Some(i) = row else { continue };
            let r = &rows[i];
            let (Some(&(root, spans)), Some(a), Some(t)) = (
                traces.get(&i),
                anchors.get(r.session_id.as_str()),
                theta.get(r.session_id.as_str()),
            ) else {
                continue;
            };
            let start = a.origin_ms + r.actual_start_ms;
            let on_client = |ns: u64| ns as f64 / 1e6 - t.offset_ms - start;
            let ordered = tree(root, spans);
            let s = &r.sample;
            out.push(Waterfall {
                scope: scope.clone(),
                which,
                chosen_from: n,
                session_id: r.session_id.clone(),
                seq: s.seq,
                phase: r.phase,
                concurrency: r.concurrency,
                client: ClientPhases {
                    dns_ms: s.dns_ms,
                    connect_ms: s.connect_ms,
                    tls_ms: s.tls_ms,
                    sent_ms: s.sent_ms,
                    ttfb_ms: s.ttfb_ms,
                    ttft_ms: s.ttft_ms,
                    e2e_ms: s.e2e_ms,
                },
                offset_uncertainty_ms: t.uncertainty_ms,
                spans_total: spans.len(),
                spans: ordered
                    .into_iter()
                    .take(MAX_WATERFALL_SPANS)
                    .map(|(sp, depth)| WaterfallSpan {
                        name: sp.name.clone(),
                        group: map.classify(sp).1,
                        depth,
                        start_ms: on_client(sp.start_unix_nano),
                        end_ms: on_client(sp.end_unix_nano),
                        error: sp.error,
                    })
                    .collect(),
            });
        }
    }
    out
}

//! One sample joined to its spans: the server's root, the handler, and the
//! server time split into groups.
//!
//! - **Root**: a span of kind `server` (or unspecified) whose parent is
//!   not in the trace (firsttoken's own id from `traceparent`, or none),
//!   preferring kind `server`, then the earliest; an orphaned internal or
//!   client span is not a root (the server's span was lost).
//! - **Handler**: the longest direct child of the root that is not a
//!   database, provider, HTTP or auth call and not an ASGI `http send` /
//!   `http receive` event span; **queue wait** is root start → handler
//!   start (the server accepted the request, its handler had not begun).
//! - **Parts**: each group's spans as a union of intervals (overlapping
//!   calls count once), clipped to the root and to the moment the client
//!   saw its first token (mapped to the server clock; work after it does
//!   not delay the first token); where two groups overlap, the time counts
//!   to the one listed first in [`super::classify::Category`]. Queue wait
//!   comes before every group. **Rest** is what no group covers, located
//!   in gaps ([`super::gaps`]); the tail after an upstream client call that
//!   ended at its headers is that call's stream (a part of its own,
//!   `<group> (stream)`), not rest.

use std::collections::{BTreeMap, HashSet};

use firsttoken_record::session::SampleRow;
use firsttoken_record::span::{SpanKind, SpanRow};

use super::classify::{Category, GroupMap};
use super::gaps::{self, Gap, Placed};

/// ns → ms.
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The root span among one trace's spans: its parent lies outside the
/// trace and its kind is `server` (or not given); kind `server` first, then
/// the earliest start. An internal or client span whose parent is missing
/// is not a root: the server's own span was lost, and the request counts
/// as without root.
pub(crate) fn root_of<'a>(spans: &[&'a SpanRow]) -> Option<&'a SpanRow> {
    let ids: HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    spans
        .iter()
        .filter(|s| matches!(s.kind, SpanKind::Server | SpanKind::Unspecified))
        .filter(|s| s.parent_span_id.as_deref().is_none_or(|p| !ids.contains(p)))
        .min_by_key(|s| (s.kind != SpanKind::Server, s.start_unix_nano))
        .copied()
}

/// When the client began writing the request, ms from the request start:
/// the end of its last connection phase, 0 on a reused connection.
pub(crate) fn client_write_ms(row: &SampleRow) -> f64 {
    let s = &row.sample;
    [s.dns_ms, s.connect_ms, s.proxy_ms, s.tls_ms]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max)
}

/// One group's share of one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Part {
    /// Its category (the precedence), after the host rule.
    pub category: Category,
    /// Time it alone covers before the first token, ms.
    pub ms: f64,
    /// Its spans.
    pub calls: usize,
    /// True when two of its spans overlap in time.
    pub overlapping: bool,
    /// The upstream's stream after its client span ended, until the first
    /// token ([`super::gaps`]), not its spans.
    pub stream: bool,
}

/// One traced sample, in ms.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Breakdown {
    /// Index of the row in the input.
    pub row: usize,
    /// Server root start − the client's `sent`, offset-corrected; `None`
    /// without an offset or a `sent` stamp.
    pub receive_after_sent_ms: Option<f64>,
    /// Root span duration.
    pub server_ms: f64,
    /// Root start → handler start, when a handler span exists.
    pub queue_wait_ms: Option<f64>,
    /// The handler's duration (the root's without a handler).
    pub handler_ms: f64,
    /// Server time before the client's first token (the root's end
    /// without an offset or a first token).
    pub before_first_token_ms: f64,
    /// Groups, by name.
    pub parts: BTreeMap<String, Part>,
    /// `before_first_token_ms` − queue wait − every part.
    pub rest_ms: f64,
    /// Where the rest lies: its gaps, in time order.
    pub gaps: Vec<Gap>,
    /// The provider's own first token after its call began, from a span
    /// event naming a first token.
    pub provider_first_token_ms: Option<f64>,
}

/// One group's spans while splitting: its category (the precedence), the
/// intervals relative to the root's start, and the sum of their lengths.
type Gathered = (Category, Vec<(f64, f64)>, f64);

/// Is this child the handler's candidate?
fn handler_like(s: &SpanRow, map: &GroupMap) -> bool {
    let asgi = s.attributes.contains_key("asgi.event.type")
        || s.name.ends_with("http send")
        || s.name.ends_with("http receive");
    !asgi
        && matches!(
            s.kind,
            SpanKind::Internal | SpanKind::Unspecified | SpanKind::Server
        )
        && map.classify(s).0 == Category::Other
}

/// Merge intervals in place; returns their total length.
fn union(iv: &mut Vec<(f64, f64)>) -> f64 {
    iv.retain(|(a, b)| b > a);
    iv.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(iv.len());
    for &(a, b) in iv.iter() {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    *iv = out;
    iv.iter().map(|(a, b)| b - a).sum()
}

/// Length of `iv` (merged) not covered by `covered` (merged).
fn uncovered(iv: &[(f64, f64)], covered: &[(f64, f64)]) -> f64 {
    let mut total = 0.0;
    for &(a, b) in iv {
        let mut len = b - a;
        for &(c, d) in covered {
            len -= (b.min(d) - a.max(c)).max(0.0);
        }
        total += len.max(0.0);
    }
    total
}

/// The breakdown of `row` (index `index`) from its trace's `spans` and
/// `root`. `client_origin_ms`: the session's anchor; `offset_ms`: θ.
pub(crate) fn breakdown(
    index: usize,
    row: &SampleRow,
    root: &SpanRow,
    spans: &[&SpanRow],
    client_origin_ms: f64,
    offset_ms: Option<f64>,
    map: &GroupMap,
) -> Breakdown {
    // Every span time is taken relative to the root's start, in ms.
    // Differences in integer ns first: an f64 of ns since 1970 keeps only
    // about a quarter of a microsecond.
    let rel = |ns: u64| (i128::from(ns) - i128::from(root.start_unix_nano)) as f64 / 1e6;
    let server_ms = ms(root.duration_ns());
    let to_server = |client_ms: f64| {
        offset_ms.map(|t| {
            client_origin_ms + row.actual_start_ms + client_ms + t - ms(root.start_unix_nano)
        })
    };
    let receive_after_sent_ms = row
        .sample
        .sent_ms
        .and_then(|sent| to_server(sent).map(|x| -x));
    let cut = row
        .sample
        .ttft_ms
        .and_then(to_server)
        .map_or(server_ms, |t| t.clamp(0.0, server_ms));

    let handler = spans
        .iter()
        .filter(|s| s.parent_span_id.as_deref() == Some(root.span_id.as_str()))
        .filter(|s| s.span_id != root.span_id && handler_like(s, map))
        .max_by_key(|s| (s.duration_ns(), std::cmp::Reverse(s.start_unix_nano)));
    let queue_wait_ms = handler.map(|h| rel(h.start_unix_nano).max(0.0));
    let handler_ms = handler.map_or(server_ms, |h| ms(h.duration_ns()));

    // Group the other spans.
    let mut groups: BTreeMap<String, Gathered> = BTreeMap::new();
    let mut provider_first_token_ms = None;
    for s in spans {
        if s.span_id == root.span_id || handler.is_some_and(|h| h.span_id == s.span_id) {
            continue;
        }
        let (cat, name) = map.classify(s);
        if cat == Category::Other {
            continue;
        }
        if cat == Category::ModelProvider && provider_first_token_ms.is_none() {
            provider_first_token_ms = s
                .events
                .iter()
                .find(|e| {
                    let n = e.name.to_ascii_lowercase();
                    n.contains("first") && (n.contains("token") || n.contains("chunk"))
                })
                .map(|e| ms(e.time_unix_nano.saturating_sub(s.start_unix_nano)));
        }
        let g = groups.entry(name).or_insert((cat, Vec::new(), 0.0));
        g.0 = g.0.min(cat);
        g.1.push((rel(s.start_unix_nano), rel(s.end_unix_nano)));
        g.2 += ms(s.duration_ns());
    }
    let mut order: Vec<(String, Gathered)> = groups.into_iter().collect();
    order.sort_by(|a, b| (a.1.0, &a.0).cmp(&(b.1.0, &b.0)));

    let mut covered: Vec<(f64, f64)> = Vec::new();
    if let Some(q) = queue_wait_ms {
        covered.push((0.0, q.min(cut)));
    }
    union(&mut covered);
    let mut parts = BTreeMap::new();
    let mut placed: Vec<Placed> = Vec::new();
    for (name, (category, mut iv, sum)) in order {
        let calls = iv.len();
        let whole = union(&mut iv.clone());
        let overlapping = sum > whole + 1e-6;
        let mut clipped: Vec<(f64, f64)> = iv
            .iter_mut()
            .map(|(a, b)| (a.max(0.0), b.min(cut)))
            .collect();
        placed.extend(clipped.iter().filter(|(a, b)| b > a).map(|&(a, b)| Placed {
            start: a,
            end: b,
            group: name.clone(),
            category,
        }));
        union(&mut clipped);
        let own = uncovered(&clipped, &covered);
        covered.extend(clipped);
        union(&mut covered);
        parts.insert(
            name,
            Part {
                category,
                ms: own,
                calls,
                overlapping,
                stream: false,
            },
        );
    }
    let covered_ms: f64 = covered.iter().map(|(a, b)| b - a).sum();
    let (gaps, stream) = gaps::locate(&covered, &placed, cut);
    let mut stream_ms = 0.0;
    if let Some((group, ms)) = stream {
        let category = parts
            .get(&group)
            .map_or(Category::OutgoingHttp, |p: &Part| p.category);
        stream_ms = ms;
        parts.insert(
            gaps::stream_part(&group),
            Part {
                category,
                ms,
                calls: 1,
                overlapping: false,
                stream: true,
            },
        );
    }
    Breakdown {
        row: index,
        receive_after_sent_ms,
        server_ms,
        queue_wait_ms,
        handler_ms,
        before_first_token_ms: cut,
        parts,
        rest_ms: (cut - covered_ms - stream_ms).max(0.0),
        gaps,
        provider_first_token_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_count_overlap_once() {
        let mut iv = vec![(0.0, 10.0), (5.0, 15.0), (20.0, 30.0), (3.0, 3.0)];
        assert_eq!(union(&mut iv), 25.0);
        assert_eq!(iv, vec![(0.0, 15.0), (20.0, 30.0)]);
        assert_eq!(uncovered(&iv, &[(10.0, 25.0)]), 15.0);
    }
}

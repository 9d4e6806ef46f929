//! Render lag: what a browser front end adds between the first token
//! arriving (the network-level TTFT, as the browser's network stack saw it)
//! and the first token painted, per message; its median with the exact
//! bootstrap interval of [`firsttoken_stats`] (the one percentile
//! definition); and whether the front end buffers, read from how many
//! content chunks had arrived when the first text was painted (one, for a
//! page that shows each token as it comes; all of them for a page that
//! shows nothing until the end).

use firsttoken_stats::{Percentile, Samples, Settings, Stat};
use serde::Serialize;

/// One browser-measured message, as analysis reads it. Times in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Painted {
    /// First content token at the network level.
    pub ttft_ms: Option<f64>,
    /// First token painted.
    pub painted_ttft_ms: Option<f64>,
    /// Content chunks in the answer.
    pub content_chunks: u64,
    /// Content chunks that had arrived when the first text was painted.
    pub chunks_before_first_paint: Option<u64>,
}

/// How the first paint relates to the tokens' arrival.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Buffering {
    /// The first paint came with the first chunk (median: one chunk had
    /// arrived).
    No,
    /// The median first paint came only after this many chunks had arrived.
    AfterChunks {
        /// Median chunks arrived at the first paint.
        median_chunks: f64,
    },
    /// Most first paints came only after the last chunk had arrived.
    AtEnd,
    /// No message both streamed more than one chunk and painted.
    Unknown,
}

/// The render lag of a group of messages.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderLag {
    /// Messages with both stamps.
    pub n: usize,
    /// Median render lag (painted − network TTFT), ms, with its interval.
    pub median_ms: Stat,
    /// What the first paints say about buffering.
    pub buffering: Buffering,
}

/// Render lag and buffering of `messages`.
pub fn render_lag(messages: &[Painted], settings: &Settings) -> RenderLag {
    let lags: Vec<f64> = messages
        .iter()
        .filter_map(|m| Some(m.painted_ttft_ms? - m.ttft_ms?))
        .filter(|v| v.is_finite())
        .collect();
    let n = lags.len();
    let samples = Samples::from_finite(lags);
    let median_ms = samples.stat(Percentile::P50, settings);
    RenderLag {
        n,
        median_ms,
        buffering: buffering(messages),
    }
}

/// Buffering from the messages that streamed more than one chunk and were
/// painted: at the end when most first paints came after the last chunk,
/// after N chunks when the median first paint came after two or more.
pub fn buffering(messages: &[Painted]) -> Buffering {
    let told: Vec<(u64, u64)> = messages
        .iter()
        .filter(|m| m.content_chunks > 1 && m.painted_ttft_ms.is_some())
        .filter_map(|m| Some((m.chunks_before_first_paint?, m.content_chunks)))
        .collect();
    if told.is_empty() {
        return Buffering::Unknown;
    }
    let at_end = told.iter().filter(|(b, total)| b >= total).count();
    if 2 * at_end > told.len() {
        return Buffering::AtEnd;
    }
    let before: Vec<f64> = told.iter().map(|(b, _)| *b as f64).collect();
    let median = firsttoken_stats::percentile(&before, 50.0).unwrap_or(1.0);
    if median >= 2.0 {
        Buffering::AfterChunks {
            median_chunks: median,
        }
    } else {
        Buffering::No
    }
}

/// The render lag of one group of stored browser messages: the messages of
/// one code version, phase, concurrency level and path (never pooled
/// across them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderGroup {
    /// The sessions' code version.
    pub code_version: String,
    /// `warm` (one page), `fresh` (a new browser context each message) or
    /// `concurrency` (several contexts at once).
    pub phase: firsttoken_record::PhaseKind,
    /// Contexts sending at once, for phase `concurrency`.
    pub concurrency: Option<u32>,
    /// The path (`browser` for `firsttoken browse --store`).
    pub path: String,
    /// Messages in the group, failed ones included.
    pub messages: usize,
    /// Their render lag and buffering (answered messages only).
    pub lag: RenderLag,
}

/// Render lag per group of the stored rows that carry paint stamps
/// (browser-measured messages; warm-ups left out), grouped by the code
/// version of their session in `sessions`, their phase, concurrency level
/// and path.
pub fn render_groups(
    rows: &[firsttoken_record::SampleRow],
    sessions: &[firsttoken_record::SessionMeta],
    settings: &Settings,
) -> Vec<RenderGroup> {
    use std::collections::BTreeMap;
    let version = |id: &str| {
        sessions
            .iter()
            .find(|s| s.id == id)
            .map_or_else(|| "unknown".to_string(), |s| s.labels.code_version.clone())
    };
    // (code version, phase, level, path) → (messages, answered ones).
    type Key = (String, firsttoken_record::PhaseKind, Option<u32>, String);
    let mut groups: BTreeMap<Key, (usize, Vec<Painted>)> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.sample.warmup) {
        let Some(p) = r.sample.painted else { continue };
        let path = r.dest.path_column().unwrap_or("").to_string();
        let g = groups
            .entry((version(&r.session_id), r.phase, r.concurrency, path))
            .or_default();
        g.0 += 1;
        if r.sample.error.is_none() {
            g.1.push(Painted {
                ttft_ms: r.sample.ttft_ms,
                painted_ttft_ms: p.painted_ttft_ms,
                content_chunks: r.sample.content_chunks,
                chunks_before_first_paint: p.chunks_before_first_paint,
            });
        }
    }
    groups
        .into_iter()
        .map(
            |((code_version, phase, concurrency, path), (messages, painted))| RenderGroup {
                code_version,
                phase,
                concurrency,
                path,
                messages,
                lag: render_lag(&painted, settings),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ttft: f64, painted: f64, before: u64, total: u64) -> Painted {
        Painted {
            ttft_ms: Some(ttft),
            painted_ttft_ms: Some(painted),
            content_chunks: total,
            chunks_before_first_paint: Some(before),
        }
    }

    #[test]
    fn lag_median_is_the_painted_minus_network_median() {
        let msgs: Vec<Painted> = (0..30)
            .map(|i| m(100.0, 120.0 + f64::from(i % 3), 1, 10))
            .collect();
        let r = render_lag(&msgs, &Settings::new(7));
        assert_eq!(r.n, 30);
        assert_eq!(r.median_ms.point(), Some(21.0));
        assert_eq!(r.buffering, Buffering::No);
    }

    #[test]
    fn buffering_at_the_end_and_after_n() {
        let end: Vec<Painted> = (0..5).map(|_| m(1.0, 90.0, 8, 8)).collect();
        assert_eq!(buffering(&end), Buffering::AtEnd);
        let five: Vec<Painted> = (0..5).map(|i| m(1.0, 50.0, 5 + (i % 2), 20)).collect();
        assert_eq!(
            buffering(&five),
            Buffering::AfterChunks { median_chunks: 5.0 }
        );
        // One-chunk answers say nothing about buffering.
        assert_eq!(buffering(&[m(1.0, 2.0, 1, 1)]), Buffering::Unknown);
    }

    #[test]
    fn too_few_messages_give_no_interval() {
        let r = render_lag(&[m(1.0, 3.0, 1, 4)], &Settings::new(1));
        assert_eq!(r.n, 1);
        assert!(r.median_ms.estimate().is_none());
    }
}

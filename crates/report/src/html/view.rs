//! The page's content as plain, preformatted data for the template: every
//! number already printed with its unit and interval, every table a list
//! of rows. The template only lays it out (and escapes every string).

use firsttoken_analyze::session::PooledGroup;
use firsttoken_analyze::{Analysis, Comparison, Direction};
use firsttoken_record::session::{Provenance, SessionMeta, SessionStatus};
use serde::Serialize;

use super::plots::Plot;
use crate::format::{self, Cell, Unit, cell, p_value, percent, relative, value};
use crate::words;

/// The whole page.
#[derive(Debug, Serialize)]
pub(crate) struct Page {
    pub title: String,
    pub tool_version: String,
    pub banners: Vec<Banner>,
    pub sessions: Vec<SessionView>,
    pub settings: String,
    pub rows: usize,
    pub keys: Vec<&'static str>,
    pub groups: Vec<GroupView>,
    pub comparisons: Vec<ComparisonView>,
    pub sections: Vec<Section>,
    pub limits: LimitsView,
    pub plots: PagePlots,
    pub findings: Vec<FindingView>,
    pub spans: Option<super::spans::SpansView>,
}

/// One of the findings the page opens with.
#[derive(Debug, Serialize)]
pub(crate) struct FindingView {
    pub rank: usize,
    pub text: String,
    pub wait: String,
    pub section: &'static str,
    pub section_name: &'static str,
    pub plot: &'static str,
}

/// The ranked findings, worded ([`crate::words::finding`]).
pub(crate) fn findings(a: &Analysis, comparisons: &[Comparison]) -> Vec<FindingView> {
    firsttoken_analyze::rank_findings(a, comparisons)
        .iter()
        .map(|f| FindingView {
            rank: f.rank,
            text: words::finding(f),
            wait: words::wait(f),
            section: f.section,
            section_name: words::section_name(f.section),
            plot: f.plot,
        })
        .collect()
}

/// The plots that sit outside the diagnostic sections.
#[derive(Debug, Serialize)]
pub(crate) struct PagePlots {
    pub ttft_cdf: Plot,
    pub session_box: Plot,
    pub waterfall: Plot,
}

/// A warning about where the numbers come from.
#[derive(Debug, Serialize)]
pub(crate) struct Banner {
    pub kind: &'static str,
    pub headline: &'static str,
    pub text: &'static str,
}

/// One session in the header.
#[derive(Debug, Serialize)]
pub(crate) struct SessionView {
    pub id: String,
    pub code_version: String,
    pub network: String,
    pub vantage: String,
    pub provenance: &'static str,
    pub status: String,
    pub complete: bool,
    pub started_at: String,
    pub ended_at: String,
    pub host: String,
    pub tool_version: String,
}

/// One TTFT group.
#[derive(Debug, Serialize)]
pub(crate) struct GroupView {
    pub keys: Vec<String>,
    pub sessions: usize,
    pub requests: usize,
    pub error_rate: String,
    pub n: usize,
    pub p50: Cell,
    pub p90: Cell,
    pub p95: Cell,
    pub p99: Cell,
    pub session_medians: Cell,
}

/// One comparison with its verdict.
#[derive(Debug, Serialize)]
pub(crate) struct ComparisonView {
    pub context: String,
    pub a: String,
    pub b: String,
    pub n: String,
    pub difference: Cell,
    pub relative: String,
    pub p95_difference: Cell,
    pub p: String,
    pub delta: String,
    pub verdict: &'static str,
    pub verdict_class: &'static str,
    pub summary: String,
}

/// A diagnostic: its plot (if it has one) and one entry per provenance kind.
#[derive(Debug, Serialize)]
pub(crate) struct Section {
    pub id: &'static str,
    pub title: &'static str,
    pub intro: &'static str,
    pub plot: Option<Plot>,
    pub entries: Vec<Entry>,
    pub empty: &'static str,
}

/// One diagnostic for one provenance kind.
#[derive(Debug, Serialize)]
pub(crate) struct Entry {
    pub provenance: &'static str,
    pub summary: String,
    pub facts: Vec<Fact>,
    pub tables: Vec<Table>,
}

/// A named number.
#[derive(Debug, Serialize)]
pub(crate) struct Fact {
    pub name: String,
    pub value: String,
}

pub(crate) fn fact(name: &str, value: String) -> Fact {
    Fact {
        name: name.to_string(),
        value,
    }
}

/// A table: caption, header, rows of cells; `numeric[i]` right-aligns column i.
#[derive(Debug, Serialize)]
pub(crate) struct Table {
    pub caption: String,
    pub head: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// The first column and those named in `text` hold text; the rest numbers.
    pub(crate) fn new(caption: &str, head: &[&str], text: &[usize]) -> Table {
        Table {
            caption: caption.to_string(),
            head: head.iter().map(|h| h.to_string()).collect(),
            numeric: (0..head.len())
                .map(|i| i > 0 && !text.contains(&i))
                .collect(),
            rows: Vec::new(),
        }
    }
}

/// The claims-and-limits list.
#[derive(Debug, Serialize)]
pub(crate) struct LimitsView {
    pub summary: String,
    pub items: Vec<LimitView>,
}

/// One limit.
#[derive(Debug, Serialize)]
pub(crate) struct LimitView {
    pub kind: String,
    pub message: String,
}

fn banner(p: Provenance) -> Option<Banner> {
    match p {
        Provenance::Measured => None,
        Provenance::Emulated => Some(Banner {
            kind: "emulated",
            headline: "Emulated upstream",
            text: "these numbers describe the emulator, not a real provider.",
        }),
        Provenance::Synthetic => Some(Banner {
            kind: "synthetic",
            headline: "Synthetic data",
            text: "generated, not measured: nothing here describes a real app or provider.",
        }),
        Provenance::Imported => Some(Banner {
            kind: "imported",
            headline: "Imported data",
            text: "read from an export; how it was measured is only as known as the export says.",
        }),
    }
}

/// Banners for every non-measured provenance kind among the sessions and
/// the analysed groups, in a fixed order.
pub(crate) fn banners(analysis: &Analysis, sessions: &[SessionMeta]) -> Vec<Banner> {
    [
        Provenance::Emulated,
        Provenance::Synthetic,
        Provenance::Imported,
    ]
    .into_iter()
    .filter(|p| {
        sessions.iter().any(|s| s.provenance == *p)
            || analysis.groups.iter().any(|g| g.provenance == *p)
    })
    .filter_map(banner)
    .collect()
}

pub(crate) fn session(s: &SessionMeta) -> SessionView {
    let (status, complete) = match &s.status {
        SessionStatus::Running => ("running (or stopped without a trace)".to_string(), false),
        SessionStatus::Complete => ("complete".to_string(), true),
        SessionStatus::Partial { reason } => (format!("partial: {reason}"), false),
    };
    let or_dash = |v: &str| {
        if v.is_empty() {
            format::DASH.to_string()
        } else {
            v.to_string()
        }
    };
    SessionView {
        id: s.id.clone(),
        code_version: or_dash(&s.labels.code_version),
        network: or_dash(&s.labels.network),
        vantage: or_dash(&s.labels.vantage),
        provenance: s.provenance.as_str(),
        status,
        complete,
        started_at: s.started_at.to_string(),
        ended_at: s
            .ended_at
            .map_or_else(|| format::DASH.into(), |t| t.to_string()),
        host: s.host.clone(),
        tool_version: s.tool_version.clone(),
    }
}

pub(crate) fn group(g: &PooledGroup) -> GroupView {
    let m = &g.pooled;
    let u = Unit::of(m.metric);
    let session_medians = match (g.min_session_median, g.max_session_median) {
        (Some(lo), Some(hi)) if g.sessions.len() > 1 => Cell {
            v: format!("{} – {}", value(u, lo), value(u, hi)),
            sub: Some(format!("{} sessions", g.sessions.len())),
        },
        (Some(lo), _) => Cell::plain(value(u, lo)),
        _ => Cell::plain(format::DASH),
    };
    GroupView {
        keys: g.label.parts.iter().map(|(_, v)| v.to_string()).collect(),
        sessions: g.sessions.len(),
        requests: m.requests,
        error_rate: percent(m.error_rate),
        n: m.n,
        p50: cell(u, &m.p50, false),
        p90: cell(u, &m.p90, false),
        p95: cell(u, &m.p95, false),
        p99: cell(u, &m.p99, false),
        session_medians,
    }
}

pub(crate) fn comparison(context: String, cmp: &Comparison) -> ComparisonView {
    let u = Unit::of(cmp.metric);
    ComparisonView {
        context,
        a: cmp.a.clone(),
        b: cmp.b.clone(),
        n: format!("{} vs {}", cmp.n_a, cmp.n_b),
        difference: cell(u, &cmp.median_difference, true),
        relative: relative(cmp.relative_median_difference),
        p95_difference: cell(u, &cmp.p95_difference, true),
        p: cmp
            .mann_whitney
            .map_or_else(|| format::DASH.to_string(), |m| p_value(m.p_value)),
        delta: cmp.cliffs_delta.map_or_else(
            || format::DASH.to_string(),
            |d| {
                format!(
                    "{} ({})",
                    format::coefficient(d.delta),
                    d.magnitude.as_str()
                )
            },
        ),
        verdict: words::verdict(cmp),
        verdict_class: match cmp.direction {
            Direction::Increase | Direction::Decrease if cmp.worse() => "slower",
            Direction::Increase | Direction::Decrease => "faster",
            _ => "same",
        },
        summary: words::comparison(cmp),
    }
}

/// `synthetic` or `synthetic, code_version=v2`: where a figure comes from.
fn label(p: Provenance, scope: &str) -> String {
    if scope.is_empty() {
        p.as_str().to_string()
    } else {
        format!("{}, {scope}", p.as_str())
    }
}

/// The comparisons asked for, then every comparison the analysis made,
/// each with where it comes from.
pub(crate) fn comparisons(a: &Analysis, requested: &[Comparison]) -> Vec<ComparisonView> {
    let mut out: Vec<ComparisonView> = requested
        .iter()
        .map(|c| comparison(format!("requested, {}", c.metric.name()), c))
        .collect();
    for p in &a.providers {
        if let Some(c) = &p.ttft_comparison {
            out.push(comparison(
                format!("strategies, TTFT ({})", label(p.provenance, &p.scope)),
                c,
            ));
        }
    }
    for r in &a.routes {
        for c in &r.comparisons {
            out.push(comparison(
                format!("paths, warm TTFT ({})", label(r.provenance, &r.scope)),
                c,
            ));
        }
    }
    for d in &a.drift {
        for ch in &d.changes {
            out.push(comparison(
                format!("days, warm TTFT ({})", label(d.provenance, &d.scope)),
                &ch.app,
            ));
        }
    }
    out
}

pub(crate) fn limits(a: &Analysis) -> LimitsView {
    LimitsView {
        summary: words::limits(&a.limits),
        // One line per kind, in the order first found (as limit_lines).
        items: {
            let mut kinds: Vec<&'static str> = Vec::new();
            for l in &a.limits.items {
                let k = words::limit_kind(l);
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            kinds
                .into_iter()
                .zip(words::limit_lines(&a.limits))
                .map(|(kind, message)| LimitView {
                    kind: kind.to_string(),
                    message,
                })
                .collect()
        },
    }
}

/// How the statistics were computed, in one line.
pub(crate) fn settings(a: &Analysis) -> String {
    let s = &a.settings;
    format!(
        "{:.0} % confidence intervals (exact bootstrap for percentiles, {} bootstrap replicates for differences and ratios, seed {}); comparisons need p < {} and a median change over {:.0} %.",
        100.0 * s.level(),
        s.replicates(),
        s.seed(),
        s.alpha(),
        100.0 * s.noise_threshold()
    )
}

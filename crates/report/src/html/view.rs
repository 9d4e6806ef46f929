//! The page's content as plain, preformatted data for the template: the
//! layout's sections ([`crate::doc`]) with their plots drawn, every number
//! already printed with its unit and interval, every table a list of rows
//! of cells whose classes say how to set them. The template only lays it
//! out (and escapes every string).

use firsttoken_analyze::Analysis;
use firsttoken_record::session::{Provenance, SessionMeta};
use serde::Serialize;

use super::plots::Plot;
use super::spans::SpanPlot;
use crate::doc::{ColumnKind, PlotSlot, Section, TableData};
use crate::format::Cell;

/// The whole page.
#[derive(Debug, Serialize)]
pub(crate) struct Page {
    pub title: String,
    pub tool_version: String,
    pub banners: Vec<Banner>,
    pub settings: String,
    pub rows: usize,
    pub keys: Vec<&'static str>,
    pub sections: Vec<SectionView>,
}

/// A drawn plot: one of the page's own or a span waterfall (the same fields).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum AnyPlot {
    Plot(Plot),
    Span(SpanPlot),
}

/// One section of the layout as the page shows it: its plots drawn, its
/// findings as links, its entries grouped, its tables set.
#[derive(Debug, Serialize)]
pub(crate) struct SectionView {
    pub id: &'static str,
    pub title: String,
    pub nav: &'static str,
    pub intro: Option<&'static str>,
    /// Plots before the entries.
    pub lead: Vec<AnyPlot>,
    /// Plots at the end.
    pub end: Vec<AnyPlot>,
    pub findings: Vec<FindingView>,
    pub entries: Vec<EntryView>,
    pub lines: Vec<LineView>,
    pub tables: Vec<Table>,
    pub empty: Option<String>,
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

/// One diagnostic item: its sentences, figures and tables.
#[derive(Debug, Serialize)]
pub(crate) struct EntryView {
    pub provenance: &'static str,
    pub lines: Vec<String>,
    pub facts: Vec<FactView>,
    pub tables: Vec<Table>,
}

/// A named figure.
#[derive(Debug, Serialize)]
pub(crate) struct FactView {
    pub name: String,
    pub value: String,
}

/// A line of the section's own.
#[derive(Debug, Serialize)]
pub(crate) struct LineView {
    pub text: String,
    pub depth: usize,
    pub tag: Option<&'static str>,
}

/// A column title and its class.
#[derive(Debug, Serialize)]
pub(crate) struct Head {
    pub title: String,
    pub class: &'static str,
}

/// A cell: its point and interval (or words), its class, whether it is a
/// provenance badge.
#[derive(Debug, Serialize)]
pub(crate) struct CellView {
    pub v: String,
    pub sub: Option<String>,
    pub class: String,
    pub badge: bool,
}

/// A table: caption, header, rows of cells.
#[derive(Debug, Serialize)]
pub(crate) struct Table {
    pub caption: String,
    pub head: Vec<Head>,
    pub rows: Vec<Vec<CellView>>,
}

/// The class of a verdict cell: coloured by the direction its word states.
fn verdict_class(word: &str) -> &'static str {
    match word {
        "faster" => "verdict faster",
        "slower" => "verdict slower",
        _ => "verdict same",
    }
}

fn cell(kind: ColumnKind, text: &str) -> CellView {
    let plain = |class: &str| CellView {
        v: text.to_string(),
        sub: None,
        class: class.to_string(),
        badge: false,
    };
    match kind {
        ColumnKind::Text => plain(""),
        ColumnKind::Number => {
            let Cell { v, sub } = Cell::split(text);
            CellView {
                v,
                sub,
                class: "num".into(),
                badge: false,
            }
        }
        ColumnKind::Verdict => plain(verdict_class(text)),
        ColumnKind::Provenance => CellView {
            badge: true,
            ..plain("")
        },
        ColumnKind::Status if text == "complete" => plain(""),
        ColumnKind::Status => plain("status-partial"),
        ColumnKind::Unbroken => plain("nowrap"),
    }
}

/// A laid-out table as the page sets it (every column: the page has the room).
pub(crate) fn table(t: &TableData) -> Table {
    let kind = |i: usize| t.columns.get(i).map_or(ColumnKind::Text, |c| c.kind);
    Table {
        caption: t.caption.clone(),
        head: t
            .header
            .iter()
            .enumerate()
            .map(|(i, h)| Head {
                title: h.clone(),
                class: if kind(i) == ColumnKind::Number {
                    "num"
                } else {
                    ""
                },
            })
            .collect(),
        rows: t
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(i, c)| cell(kind(i), c))
                    .collect()
            })
            .collect(),
    }
}

/// Section `s` as the page shows it, its plot slots drawn by `draw`.
pub(crate) fn section(s: &Section, draw: &dyn Fn(PlotSlot) -> Vec<AnyPlot>) -> SectionView {
    let plots: Vec<AnyPlot> = s.plots.iter().flat_map(|&p| draw(p)).collect();
    let (lead, end) = if s.plots_lead {
        (plots, Vec::new())
    } else {
        (Vec::new(), plots)
    };
    let mut entries: Vec<EntryView> = s
        .entries
        .iter()
        .map(|e| EntryView {
            provenance: e.provenance.as_str(),
            lines: Vec::new(),
            facts: e
                .facts
                .iter()
                .map(|f| FactView {
                    name: f.name.clone(),
                    value: f.value.clone(),
                })
                .collect(),
            tables: Vec::new(),
        })
        .collect();
    let mut findings = Vec::new();
    let mut lines = Vec::new();
    for (text, mark) in s.marked() {
        if let Some(f) = &mark.finding {
            findings.push(FindingView {
                rank: f.rank,
                text: f.statement.clone(),
                wait: f.wait.clone(),
                section: f.section,
                section_name: f.name,
                plot: f.plot,
            });
        } else if let Some(e) = mark.entry.and_then(|i| entries.get_mut(i)) {
            e.lines.push(text.to_string());
        } else {
            lines.push(LineView {
                text: text.to_string(),
                depth: mark.depth,
                tag: mark.tag,
            });
        }
    }
    let mut tables = Vec::new();
    for t in &s.tables {
        match t.entry.and_then(|i| entries.get_mut(i)) {
            Some(e) => e.tables.push(table(t)),
            None => tables.push(table(t)),
        }
    }
    SectionView {
        id: s.id.anchor(),
        title: s.title.clone(),
        nav: s.nav,
        intro: s.intro,
        lead,
        end,
        findings,
        entries,
        lines,
        tables,
        empty: s.is_empty().then(|| s.empty.clone()).flatten(),
    }
}

/// A warning about where the numbers come from.
#[derive(Debug, Serialize)]
pub(crate) struct Banner {
    pub kind: &'static str,
    pub headline: &'static str,
    pub text: &'static str,
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

//! The report laid out once, format-neutral: sections of sentences and
//! tables (and, for the page, named plot slots), in reading order. Every
//! format renders this one layout: the terminal ([`crate::terminal`]),
//! Markdown ([`crate::markdown`]), the JSON report's text
//! ([`crate::json`]) and the HTML page ([`crate::html`]), so all show the
//! same titles and sentences ([`crate::words`]) and numbers
//! ([`crate::format`]) in the same order, and none can drop a part.
//!
//! What a part is for is said here, once: a table or column marked
//! [`Reach::Page`] needs the page's width (per-row detail the text
//! formats state in their sentences); an [`Entry`]'s named figures
//! ([`Fact`]) likewise. Everything else is shown by every format.
//!
//! ```
//! use firsttoken_analyze::{Frame, Settings, analyze};
//! use firsttoken_report::ReportInput;
//! use firsttoken_report::doc::{SectionId, build};
//! let a = analyze(&Frame::from_rows(&[], &[]).unwrap(), &[], &[], &Settings::new(1));
//! let doc = build(&ReportInput::new(&[], &a, &[]));
//! assert_eq!(doc.sections[0].id, SectionId::Findings);
//! assert!(doc.sections.iter().any(|s| s.id == SectionId::Limits));
//! ```

mod diagnostics;
mod overview;

use firsttoken_analyze::GroupKey;
use firsttoken_analyze::group::{GroupLabel, KeyValue};
use firsttoken_record::run::RunView;
use firsttoken_record::session::Provenance;

use crate::ReportInput;
use crate::words::{self, sections::SectionWords};

pub use crate::words::sections::FINDINGS_TITLE;

/// A report section; its [`SectionId::anchor`] is the page's `id` for it
/// and the name a finding points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionId {
    /// The run across agents the sessions belong to (`report --run`).
    Run,
    /// The ranked findings.
    Findings,
    /// The sessions covered.
    Sessions,
    /// TTFT percentiles per group.
    Ttft,
    /// One typical request's phases (a plot).
    Typical,
    /// Comparisons and their verdicts.
    Comparisons,
    /// App overhead.
    Overhead,
    /// Connection cost.
    Connection,
    /// The concurrency wall.
    Concurrency,
    /// Where the time went, from the server's spans.
    Spans,
    /// The inference engine's own clock, and connections that were not
    /// kept.
    Engine,
    /// The engine's own metrics before and after each session.
    EngineMetrics,
    /// Render lag of messages measured in a real browser.
    Render,
    /// Cold start.
    Cold,
    /// Providers and routing strategies.
    Providers,
    /// App paths and routes.
    Routes,
    /// Day-to-day drift.
    Drift,
    /// The measuring client's clock.
    Clock,
    /// Claims and limits.
    Limits,
}

impl SectionId {
    /// Every section, in reading order.
    pub const ALL: [SectionId; 19] = [
        SectionId::Run,
        SectionId::Findings,
        SectionId::Sessions,
        SectionId::Ttft,
        SectionId::Typical,
        SectionId::Comparisons,
        SectionId::Overhead,
        SectionId::Connection,
        SectionId::Concurrency,
        SectionId::Spans,
        SectionId::Engine,
        SectionId::EngineMetrics,
        SectionId::Render,
        SectionId::Cold,
        SectionId::Providers,
        SectionId::Routes,
        SectionId::Drift,
        SectionId::Clock,
        SectionId::Limits,
    ];

    /// Its anchor: `concurrency` (a finding's `section`, the page's `id`).
    pub fn anchor(self) -> &'static str {
        match self {
            SectionId::Run => "run",
            SectionId::Findings => "findings",
            SectionId::Sessions => "sessions",
            SectionId::Ttft => "ttft",
            SectionId::Typical => "typical",
            SectionId::Comparisons => "comparisons",
            SectionId::Overhead => "overhead",
            SectionId::Connection => "connection",
            SectionId::Concurrency => "concurrency",
            SectionId::Spans => "spans",
            SectionId::Engine => "engine",
            SectionId::EngineMetrics => "engine_metrics",
            SectionId::Render => "render",
            SectionId::Cold => "cold",
            SectionId::Providers => "providers",
            SectionId::Routes => "routes",
            SectionId::Drift => "drift",
            SectionId::Clock => "clock",
            SectionId::Limits => "limits",
        }
    }
}

/// Which formats show a part of the layout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reach {
    /// Every format: terminal, Markdown, the JSON text and the page.
    #[default]
    Every,
    /// The page only: detail that needs its width, whose gist the
    /// section's sentences give every format.
    Page,
}

/// What a column holds, which decides how the page sets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColumnKind {
    /// Words (left-aligned).
    Text,
    /// Figures, an estimate's interval under its point (right-aligned).
    #[default]
    Number,
    /// A verdict word ([`crate::words::verdict`]), coloured by direction.
    Verdict,
    /// A provenance kind, as a badge.
    Provenance,
    /// A session's status, marked when not complete.
    Status,
    /// Words kept on one line (a timestamp, `after → before`).
    Unbroken,
}

/// A column's kind and reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Column {
    /// What it holds.
    pub kind: ColumnKind,
    /// Which formats show it.
    pub reach: Reach,
}

/// A table: header and rows of cells, each cell as every format prints
/// it (`329 ms [320 ms, 349 ms]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableData {
    /// What it shows, when its section holds several kinds of table
    /// (empty: none).
    pub caption: String,
    /// Column titles.
    pub header: Vec<String>,
    /// Each column's kind and reach, as long as the header.
    pub columns: Vec<Column>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
    /// Which formats show it.
    pub reach: Reach,
    /// The entry of its section it belongs to (`None`: the section's own).
    pub entry: Option<usize>,
    /// At most this many rows in the text formats (`None`: all); the rest
    /// are counted below the table, and kept by the JSON report's analysis
    /// and the page.
    pub text_rows: Option<usize>,
}

/// A table's part that a format shows: its caption, the columns it
/// reaches and their cells.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Shown {
    /// The caption (empty: none).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub caption: String,
    /// Column titles.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
    /// Rows left out of the text formats (see [`TableData::text_rows`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Shown {
    /// The line below a table whose rows the text formats cut short.
    pub fn more_line(&self) -> Option<String> {
        (self.more > 0).then(|| crate::words::more_rows(self.more))
    }
}

impl TableData {
    /// A table shown everywhere: the first column and those in `text` hold
    /// words, the rest figures.
    pub(crate) fn new(header: Vec<String>, text: &[usize]) -> TableData {
        let columns = (0..header.len())
            .map(|i| Column {
                kind: if i == 0 || text.contains(&i) {
                    ColumnKind::Text
                } else {
                    ColumnKind::Number
                },
                reach: Reach::Every,
            })
            .collect();
        TableData {
            header,
            columns,
            ..TableData::default()
        }
    }

    /// The same table, for the page only.
    pub(crate) fn page(mut self) -> TableData {
        self.reach = Reach::Page;
        self
    }

    /// The same table with at most `n` rows in the text formats.
    pub(crate) fn text_rows(mut self, n: usize) -> TableData {
        self.text_rows = Some(n);
        self
    }

    /// The same table, captioned.
    pub(crate) fn captioned(mut self, caption: &str) -> TableData {
        self.caption = caption.to_string();
        self
    }

    /// The same table with columns `cols` on the page only.
    pub(crate) fn page_columns(mut self, cols: &[usize]) -> TableData {
        for &i in cols {
            if let Some(c) = self.columns.get_mut(i) {
                c.reach = Reach::Page;
            }
        }
        self
    }

    /// The same table with column `i` of kind `kind`.
    pub(crate) fn kind(mut self, i: usize, kind: ColumnKind) -> TableData {
        if let Some(c) = self.columns.get_mut(i) {
            c.kind = kind;
        }
        self
    }

    /// What the text formats show of it: `None` for a page-only table.
    pub fn shown_in_text(&self) -> Option<Shown> {
        if self.reach == Reach::Page {
            return None;
        }
        let keep = |i: usize| self.columns.get(i).is_none_or(|c| c.reach == Reach::Every);
        let pick = |cells: &[String]| -> Vec<String> {
            cells
                .iter()
                .enumerate()
                .filter(|(i, _)| keep(*i))
                .map(|(_, c)| c.clone())
                .collect()
        };
        let shown = self
            .text_rows
            .unwrap_or(self.rows.len())
            .min(self.rows.len());
        Some(Shown {
            caption: self.caption.clone(),
            header: pick(&self.header),
            rows: self.rows[..shown].iter().map(|r| pick(r)).collect(),
            more: self.rows.len() - shown,
        })
    }
}

/// A finding as the page links it: its rank, statement, the wait it
/// explains and where its section and plot are.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Its rank, 1 first.
    pub rank: usize,
    /// The statement without rank or pointer ([`crate::words::finding`]).
    pub statement: String,
    /// The wait it explains ([`crate::words::wait`]).
    pub wait: String,
    /// The anchor of its section.
    pub section: &'static str,
    /// The section's short name (`→ §concurrency`).
    pub name: &'static str,
    /// The plot that shows it.
    pub plot: &'static str,
}

/// What the layout knows of a line beyond its words.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mark {
    /// The entry of its section it states (`None`: the section's own).
    pub entry: Option<usize>,
    /// How far it is indented under the line before (a run's segment
    /// under its head).
    pub depth: usize,
    /// The kind of thing it names (a limit's kind), for the page's label.
    pub tag: Option<&'static str>,
    /// The finding it states, in the findings section.
    pub finding: Option<Ranked>,
}

impl Mark {
    /// `line` indented two spaces for each level of its depth, as the
    /// text formats print it on a line of its own.
    pub fn indented(&self, line: &str) -> String {
        format!("{}{line}", "  ".repeat(self.depth))
    }
}

/// The mark of a line the layout knows nothing more of.
static PLAIN: Mark = Mark {
    entry: None,
    depth: 0,
    tag: None,
    finding: None,
};

/// A named figure of an entry, on the page beside its sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// What it is.
    pub name: String,
    /// The figure.
    pub value: String,
}

pub(crate) fn fact(name: &str, value: String) -> Fact {
    Fact {
        name: name.to_string(),
        value,
    }
}

/// One item of a diagnostic (one provenance kind, scope and path): its
/// lines and tables point to it by index.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The provenance kind of every row behind it.
    pub provenance: Provenance,
    /// Its named figures (the page lists them beside its sentence).
    pub facts: Vec<Fact>,
}

/// A plot the page draws in a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotSlot {
    /// TTFT CDF per group.
    TtftCdf,
    /// Per-session box plots.
    SessionBox,
    /// A typical request's phases.
    Waterfall,
    /// TTFT ratio per concurrency level.
    Concurrency,
    /// Providers' first token against throughput.
    Providers,
    /// Per path, a typical and a slow request's spans.
    SpanWaterfalls,
}

/// A titled part of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Which section it is.
    pub id: SectionId,
    /// Heading.
    pub title: String,
    /// Its name in the page's navigation.
    pub nav: &'static str,
    /// What it measures (under the page's heading).
    pub intro: Option<&'static str>,
    /// Sentences, one a line, shown before the tables.
    pub lines: Vec<String>,
    /// What the layout knows of each line, as long as `lines`.
    pub marks: Vec<Mark>,
    /// Tables.
    pub tables: Vec<TableData>,
    /// The diagnostic items its lines and tables describe.
    pub entries: Vec<Entry>,
    /// The plots the page draws in it.
    pub plots: Vec<PlotSlot>,
    /// Whether the plots lead the section (else they close it).
    pub plots_lead: bool,
    /// What it says when it has no lines and no tables.
    pub empty: Option<String>,
}

impl Section {
    /// An empty section `id`, titled from [`crate::words::sections`].
    pub fn new(id: SectionId) -> Section {
        let SectionWords {
            title,
            nav,
            intro,
            empty,
        } = words::sections::section(id);
        Section {
            id,
            title: title.to_string(),
            nav,
            intro,
            lines: Vec::new(),
            marks: Vec::new(),
            tables: Vec::new(),
            entries: Vec::new(),
            plots: Vec::new(),
            plots_lead: false,
            empty: empty.map(str::to_string),
        }
    }

    /// Add a line of the section's own.
    pub(crate) fn push(&mut self, line: String) {
        self.push_marked(line, Mark::default());
    }

    /// Add a line with what the layout knows of it.
    pub(crate) fn push_marked(&mut self, line: String, mark: Mark) {
        self.lines.push(line);
        self.marks.push(mark);
    }

    /// The lines with their marks.
    pub fn marked(&self) -> impl Iterator<Item = (&str, &Mark)> {
        self.lines
            .iter()
            .enumerate()
            .map(|(i, l)| (l.as_str(), self.marks.get(i).unwrap_or(&PLAIN)))
    }

    /// No lines and no tables.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.tables.is_empty()
    }

    /// The lines the text formats print, each with its mark: the
    /// section's lines, or its `empty` sentence.
    pub fn text_lines(&self) -> Vec<(&str, &Mark)> {
        if self.is_empty() {
            return self.empty.iter().map(|e| (e.as_str(), &PLAIN)).collect();
        }
        self.marked().collect()
    }

    /// The tables the text formats print.
    pub fn text_tables(&self) -> Vec<Shown> {
        self.tables
            .iter()
            .filter_map(TableData::shown_in_text)
            .collect()
    }

    /// Whether the text formats show it: it has something for them (a
    /// line, a table, or the sentence for nothing). A section whose parts
    /// are all the page's (a plot, a page-only table) is the page's.
    pub fn in_text(&self) -> bool {
        !self.text_lines().is_empty() || !self.text_tables().is_empty()
    }

    /// Add the entries of one diagnostic: `lay` gives each item's sentence,
    /// figures and tables; each sentence is labelled with the item's scope
    /// and, when the items hold several provenance kinds, its provenance:
    /// kinds and code versions are never read as one pooled figure.
    pub(crate) fn add_entries<T: words::Entry>(&mut self, items: &[T], lay: impl Fn(&T) -> Laid) {
        let first = items.first().map(words::Entry::provenance);
        let many = items.iter().any(|i| Some(i.provenance()) != first);
        for item in items {
            let i = self.entries.len();
            let laid = lay(item);
            let mut line = words::scoped(&item.label(), laid.sentence);
            if many {
                line = format!("[{}] {line}", item.provenance().as_str());
            }
            self.push_marked(
                line,
                Mark {
                    entry: Some(i),
                    ..Mark::default()
                },
            );
            self.entries.push(Entry {
                provenance: item.provenance(),
                facts: laid.facts,
            });
            self.tables.extend(laid.tables.into_iter().map(|mut t| {
                t.entry = Some(i);
                t
            }));
        }
    }
}

/// One diagnostic item laid out: its sentence (unlabelled), its named
/// figures and its tables.
pub(crate) struct Laid {
    pub sentence: String,
    pub facts: Vec<Fact>,
    pub tables: Vec<TableData>,
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    /// Sections in order.
    pub sections: Vec<Section>,
}

pub(crate) fn header(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|s| s.to_string()).collect()
}

/// A group's label, short: its values in key order (`before · chat ·
/// emulated`); the table's header names the keys.
pub fn group_label(l: &GroupLabel) -> String {
    let mut out: Vec<String> = Vec::with_capacity(l.parts.len());
    let level = l
        .get(GroupKey::Concurrency)
        .is_some_and(|v| *v != KeyValue::Missing);
    for (k, v) in &l.parts {
        // `c=3` names the concurrency phase already.
        if *k == GroupKey::Phase && level {
            continue;
        }
        if let Some(v) = key_value(*k, v)
            && out.last() != Some(&v)
        {
            // `direct · direct` (a direct request's path and phase) once.
            out.push(v);
        }
    }
    out.join(" · ")
}

/// One key's value in a label: `c=3` for a concurrency level; nothing for
/// a level or a strategy the row does not have (the phases without them).
fn key_value(k: GroupKey, v: &KeyValue) -> Option<String> {
    match (k, v) {
        (GroupKey::Concurrency | GroupKey::Strategy, KeyValue::Missing) => None,
        (GroupKey::Concurrency, KeyValue::Number(n)) => Some(format!("c={n}")),
        _ => Some(v.to_string()),
    }
}

/// A pooled group's label: [`group_label`], then what it pools
/// (`after · warm · emulated · paths pooled`).
pub fn pooled_group_label(g: &firsttoken_analyze::session::PooledGroup) -> String {
    let mut s = group_label(&g.label);
    if let Some(p) = words::pools(&g.pools) {
        s.push_str(" · ");
        s.push_str(&p);
    }
    s
}

/// The keys of a TTFT table's head, without the concurrency level, the
/// strategy and the provenance, whose values name themselves (`c=3`, a
/// strategy's name, `emulated`).
pub fn group_head(keys: &[GroupKey]) -> String {
    let shown: Vec<&str> = keys
        .iter()
        .filter(|k| {
            !matches!(
                k,
                GroupKey::Concurrency | GroupKey::Strategy | GroupKey::Provenance
            )
        })
        .map(|k| k.as_str())
        .collect();
    shown.join(" · ")
}

/// The head of a run's report, one line each: id, state and counts, each
/// segment's agent and clock (indented under it), how the agents started.
pub fn run_head(run: &RunView) -> Vec<String> {
    let s = overview::run(run);
    s.marked().map(|(l, m)| m.indented(l)).collect()
}

/// Lay out a report: the run (when the sessions are one), the findings,
/// then the sections in reading order.
pub fn build(input: &ReportInput<'_>) -> Doc {
    let a = input.analysis;
    let mut sections: Vec<Section> = input.run.map(overview::run).into_iter().collect();
    sections.extend([
        overview::findings(a, input.comparisons),
        overview::sessions(input.sessions),
        overview::ttft(a),
        overview::typical(),
        overview::comparisons(a, input.comparisons),
        diagnostics::overhead(a),
        diagnostics::connection(a),
        diagnostics::concurrency(a),
    ]);
    sections.extend(crate::doc_traces::section(a));
    sections.extend(crate::doc_engine::section(a));
    sections.extend(crate::doc_engine::metrics_section(a));
    sections.extend(crate::doc_render::section(a));
    sections.push(diagnostics::cold(a));
    sections.push(diagnostics::providers(a));
    sections.push(diagnostics::routes(a));
    sections.push(diagnostics::drift(a));
    // Only sessions that recorded their clock (or an open-loop start lag)
    // have this section.
    sections.extend(overview::clock(a));
    sections.push(overview::limits(a));
    Doc { sections }
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_analyze::FindingKind;
    use firsttoken_analyze::diagnose::WallVerdict;
    use firsttoken_analyze::traces::WallReason;

    #[test]
    fn every_finding_points_to_a_section_of_the_layout() {
        let anchors: Vec<&str> = SectionId::ALL.iter().map(|s| s.anchor()).collect();
        let mut unique = anchors.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), anchors.len(), "anchors are unique");
        let finding = firsttoken_analyze::Finding {
            estimate: firsttoken_analyze::Stat::TooSmall { n: 0, needed: 2 },
            null: 0.0,
            material: 0.0,
            n_a: 0,
            n_b: 0,
            direction: firsttoken_analyze::Direction::TooFewSamples,
        };
        let kinds = [
            FindingKind::Comparison {
                a: "a".into(),
                b: "b".into(),
                metric: firsttoken_analyze::Metric::Ttft,
            },
            FindingKind::Overhead,
            FindingKind::Connection,
            FindingKind::ConnectionSetup,
            FindingKind::Concurrency {
                level: 5,
                verdict: WallVerdict::Scales,
                baseline_ms: 1.0,
            },
            FindingKind::ColdStart {
                probes: 2,
                beyond: 2,
                threshold: firsttoken_analyze::diagnose::ColdThreshold::Maximum,
                threshold_ms: 1.0,
                warm_median_ms: 1.0,
                excess_ms: vec![1.0, 2.0],
            },
            FindingKind::PathDifference {
                path: "a".into(),
                fastest: "b".into(),
            },
            FindingKind::Misrouting {
                path: "a".into(),
                expected: "x".into(),
                route: "y".into(),
                astray: 1,
                reported: 1,
                route_difference: finding,
            },
            FindingKind::QueueWait {
                level: 5,
                reason: WallReason::WaitedForWorker,
            },
            FindingKind::EngineQueue {
                level: 5,
                reason: WallReason::WaitedForWorker,
            },
            FindingKind::Reconnections {
                new_connections: 9,
                warm: 20,
                stale_retries: 9,
            },
            FindingKind::Providers {
                fastest: "a".into(),
                other: "b".into(),
            },
        ];
        for k in kinds {
            assert!(anchors.contains(&k.section()), "{k:?} → {}", k.section());
            assert_ne!(words::section_name(k.section()), "report", "{k:?}");
        }
    }

    #[test]
    fn a_page_only_column_stays_off_the_text() {
        let mut t = TableData::new(header(&["a", "b", "c"]), &[]).page_columns(&[1]);
        t.rows.push(vec!["x".into(), "1".into(), "2".into()]);
        let shown = t.shown_in_text().unwrap();
        assert_eq!(shown.header, ["a", "c"]);
        assert_eq!(shown.rows, [vec!["x".to_string(), "2".into()]]);
        assert!(t.page().shown_in_text().is_none());
    }

    #[test]
    fn an_empty_section_says_so_and_a_drawn_one_is_the_pages() {
        let s = Section::new(SectionId::Cold);
        let lines: Vec<&str> = s.text_lines().into_iter().map(|(l, _)| l).collect();
        assert_eq!(
            lines,
            ["No cold probes in these sessions."],
            "its sentence for nothing"
        );
        assert!(s.in_text());
        let mut typical = Section::new(SectionId::Typical);
        typical.plots.push(PlotSlot::Waterfall);
        assert!(!typical.in_text());
    }

    #[test]
    fn a_table_cut_short_in_text_counts_the_rows_it_leaves_out() {
        let mut t = TableData::new(header(&["probe", "ms"]), &[]).text_rows(2);
        for i in 0..5 {
            t.rows.push(vec![i.to_string(), "1".into()]);
        }
        let shown = t.shown_in_text().unwrap();
        assert_eq!(shown.rows.len(), 2);
        assert_eq!(shown.more, 3);
        assert_eq!(
            shown.more_line().as_deref(),
            Some("… and 3 more rows (every row: --format json or html)")
        );
        // A table that fits says nothing more.
        t.text_rows = Some(5);
        assert_eq!(t.shown_in_text().unwrap().more_line(), None);
        assert_eq!(
            serde_json::to_value(t.shown_in_text().unwrap())
                .unwrap()
                .get("more"),
            None
        );
    }
}

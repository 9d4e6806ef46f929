//! Renders firsttoken results for people and machines. Analysis returns
//! data; this crate owns every word and number:
//!
//! - [`format`]: the one number formatter (durations, ratios, percents,
//!   intervals, "too few samples (n = X, needs Y)").
//! - [`words`]: one sentence builder per kind of finding; words follow
//!   intervals, never the sign of a point.
//! - [`ReportInput`]: sessions, analysis, comparisons and (for `report
//!   --run`) the run — the one input of every format, each an
//!   [`Exporter`]: [`terminal::Terminal`], [`markdown::Markdown`],
//!   [`json::Json`], [`html::Html`] (or [`render`] with a [`Format`]).
//!   Every format renders one layout ([`doc`]): the same sections,
//!   sentences and tables; the page adds its plots. [`run_head`] gives a
//!   run's head lines on their own.
//! - [`plan`]: what `firsttoken plan` prints, Markdown and JSON from one
//!   layout.
//! - [`probe`]: the probe's per-request line and summary table;
//!   [`run`]: the summary printed at the end of `firsttoken run`.
//!
//! ```
//! use firsttoken_analyze::{Frame, Settings, analyze};
//! use firsttoken_report::{Format, ReportInput, render};
//! let frame = Frame::from_rows(&[], &[]).unwrap();
//! let analysis = analyze(&frame, &[], &[], &Settings::new(1));
//! let input = ReportInput::new(&[], &analysis, &[]);
//! let text = render(Format::Markdown, &input).unwrap();
//! assert!(text.contains("## Claims and limits"));
//! ```
#![deny(missing_docs)]

pub mod browse;
pub mod doc;
pub mod doc_engine;
pub mod doc_render;
pub mod doc_traces;
pub mod format;
pub mod html;
pub mod json;
pub mod markdown;
pub mod plan;
pub mod probe;
pub mod run;
pub mod runs;
pub mod terminal;
pub mod words;

pub use doc::run_head;
pub use probe::{sample_line, summary_table};
pub use run::{Emphasis, cleanup_cell, cleanup_note, cleanup_retry, run_summary};
pub use runs::runs_table;

use firsttoken_analyze::{Analysis, Comparison};
use firsttoken_record::run::RunView;
use firsttoken_record::session::{SampleRow, SessionMeta};

/// Everything a report shows, the same for every format: the sessions, the
/// analysis of them, the comparisons asked for, (for plots of single
/// requests) the rows and, when the sessions are one run across agents,
/// the run.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// The sessions the analysis covers.
    pub sessions: &'a [SessionMeta],
    /// The analysis.
    pub analysis: &'a Analysis,
    /// Comparisons asked for (`compare`, the demo's before/after).
    pub comparisons: &'a [Comparison],
    /// The samples the analysis was computed from, when at hand: the HTML
    /// page plots single requests from them.
    pub rows: Option<&'a [SampleRow]>,
    /// The run across agents the sessions are (`report --run`): every
    /// format opens with it.
    pub run: Option<&'a RunView>,
}

impl<'a> ReportInput<'a> {
    /// An input without rows.
    pub fn new(
        sessions: &'a [SessionMeta],
        analysis: &'a Analysis,
        comparisons: &'a [Comparison],
    ) -> ReportInput<'a> {
        ReportInput {
            sessions,
            analysis,
            comparisons,
            rows: None,
            run: None,
        }
    }

    /// The same input with the samples for plots.
    pub fn with_rows(mut self, rows: &'a [SampleRow]) -> ReportInput<'a> {
        self.rows = Some(rows);
        self
    }

    /// The same input as the report of run `run` (its sessions are
    /// `sessions`).
    pub fn with_run(mut self, run: &'a RunView) -> ReportInput<'a> {
        self.run = Some(run);
        self
    }

    /// `session X` or `N sessions`.
    pub fn title(&self) -> String {
        match self.sessions {
            [one] => format!("firsttoken report: session {}", one.id),
            _ => format!("firsttoken report: {} sessions", self.sessions.len()),
        }
    }
}

/// What can go wrong rendering a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The HTML page failed.
    #[error(transparent)]
    Html(#[from] html::HtmlError),
    /// The report could not be written.
    #[error("cannot write the report: {0}")]
    Write(#[from] std::io::Error),
}

/// One output format: the whole [`ReportInput`] in, the document out.
pub trait Exporter {
    /// Render the report.
    fn export(&self, input: &ReportInput<'_>) -> Result<String, ReportError>;

    /// Write the report to `w` (by default, [`Exporter::export`]'s text).
    fn write(
        &self,
        input: &ReportInput<'_>,
        w: &mut dyn std::io::Write,
    ) -> Result<(), ReportError> {
        w.write_all(self.export(input)?.as_bytes())?;
        Ok(())
    }
}

/// The report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text for a terminal, 100 columns.
    Terminal,
    /// Markdown.
    Markdown,
    /// JSON (`docs/schema/report.v1.schema.json`).
    Json,
    /// A self-contained HTML page.
    Html,
}

/// Write `input` in `format` to `w`, then a newline (JSON is written as it
/// is serialized, never held whole as text).
pub fn render_to(
    format: Format,
    input: &ReportInput<'_>,
    w: &mut dyn std::io::Write,
) -> Result<(), ReportError> {
    match format {
        Format::Terminal => terminal::Terminal { width: 100 }.write(input, w),
        Format::Markdown => markdown::Markdown.write(input, w),
        Format::Json => json::Json.write(input, w),
        Format::Html => html::Html.write(input, w),
    }?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}

/// Render `input` in `format`.
pub fn render(format: Format, input: &ReportInput<'_>) -> Result<String, ReportError> {
    match format {
        Format::Terminal => terminal::Terminal { width: 100 }.export(input),
        Format::Markdown => markdown::Markdown.export(input),
        Format::Json => json::Json.export(input),
        Format::Html => html::Html.export(input),
    }
}

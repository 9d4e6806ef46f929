//! Rendering what the reading library returns: the report formats as a
//! clap value, and writing a report to stdout or a file. No command logic.

use std::path::Path;

use anyhow::Context;
use clap::ValueEnum;

use firsttoken_analyze::{Analysis, Comparison};
use firsttoken_read::Loaded;
use firsttoken_report::ReportInput;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables for a terminal (100 columns).
    Terminal,
    /// Markdown.
    Markdown,
    /// JSON (docs/schema/report.v1.schema.json).
    Json,
    /// A self-contained HTML page with plots.
    Html,
}

impl From<Format> for firsttoken_report::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Terminal => firsttoken_report::Format::Terminal,
            Format::Markdown => firsttoken_report::Format::Markdown,
            Format::Json => firsttoken_report::Format::Json,
            Format::Html => firsttoken_report::Format::Html,
        }
    }
}

/// `loaded` and its analysis in `format`: every format gets the same input
/// (sessions, analysis, comparisons, a run's view; the rows for HTML plots).
pub fn render(
    format: Format,
    loaded: &Loaded,
    analysis: &Analysis,
    comparisons: &[Comparison],
) -> anyhow::Result<String> {
    let mut input =
        ReportInput::new(&loaded.sessions, analysis, comparisons).with_rows(&loaded.rows);
    if let Some(run) = &loaded.run {
        input = input.with_run(run);
    }
    firsttoken_report::render(format.into(), &input)
        .with_context(|| format!("cannot render the {format:?} report"))
}

/// `text` to the file `out`, or to stdout.
pub fn write_out(out: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match out {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display())),
        None => {
            outln!("{text}");
            Ok(())
        }
    }
}

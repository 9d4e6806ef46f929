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

/// The one input of every format: sessions, analysis, comparisons, a run's
/// view, and the rows for HTML plots.
fn input<'a>(
    loaded: &'a Loaded,
    analysis: &'a Analysis,
    comparisons: &'a [Comparison],
) -> ReportInput<'a> {
    let input = ReportInput::new(&loaded.sessions, analysis, comparisons).with_rows(&loaded.rows);
    match &loaded.run {
        Some(run) => input.with_run(run),
        None => input,
    }
}

/// `loaded` and its analysis in `format`, as text.
pub fn render(
    format: Format,
    loaded: &Loaded,
    analysis: &Analysis,
    comparisons: &[Comparison],
) -> anyhow::Result<String> {
    firsttoken_report::render(format.into(), &input(loaded, analysis, comparisons))
        .with_context(|| format!("cannot render the {format:?} report"))
}

/// `loaded` and its analysis in `format`, written to the file `out` or to
/// stdout as it is rendered. A closed stdout (`| head`) ends quietly; any
/// other write error is an error.
pub fn render_out(
    format: Format,
    loaded: &Loaded,
    analysis: &Analysis,
    comparisons: &[Comparison],
    out: Option<&Path>,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let input = input(loaded, analysis, comparisons);
    match out {
        Some(p) => {
            let f = std::fs::File::create(p)
                .with_context(|| format!("cannot create {}", p.display()))?;
            let mut w = std::io::BufWriter::new(f);
            // The last bytes leave with the flush: its error is the
            // write's (a full disk), never dropped with the writer.
            firsttoken_report::render_to(format.into(), &input, &mut w)
                .map_err(|e| anyhow::anyhow!(e))
                .and_then(|()| w.flush().map_err(|e| anyhow::anyhow!(e)))
                .context(crate::Failed(format!("cannot write {}", p.display())))
        }
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            let written = firsttoken_report::render_to(format.into(), &input, &mut w)
                .map_err(|e| match e {
                    firsttoken_report::ReportError::Write(io) => io,
                    other => std::io::Error::other(other.to_string()),
                })
                .and_then(|()| w.flush());
            match written {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context(crate::Failed(
                    "cannot write the report to standard output".into(),
                )),
            }
        }
    }
}

/// Only the findings of `loaded`'s report, as terminal text (the demo's
/// first screen).
pub fn findings_only(loaded: &Loaded, analysis: &Analysis, comparisons: &[Comparison]) -> String {
    firsttoken_report::terminal::findings(&input(loaded, analysis, comparisons), 100)
}

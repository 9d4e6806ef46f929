//! Rendering what the reading library returns: the report formats as a
//! clap value, and writing a report to stdout or a file. No command logic.

use std::path::Path;

use anyhow::Context;
use clap::ValueEnum;

use firsttoken_analyze::{Analysis, Comparison};
use firsttoken_read::Loaded;
use firsttoken_record::run::{RunMember, RunView};
use firsttoken_record::session::SessionMeta;
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
/// (sessions, analysis, comparisons; the rows for HTML plots).
pub fn render(
    format: Format,
    loaded: &Loaded,
    analysis: &Analysis,
    comparisons: &[Comparison],
) -> anyhow::Result<String> {
    let input = ReportInput::new(&loaded.sessions, analysis, comparisons).with_rows(&loaded.rows);
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

/// The head of a run's report: id, state, counts, agents, start.
pub fn run_head(run: &RunView) -> Vec<String> {
    let words = firsttoken_report::words::run::state(&run.info, &run.state);
    let mut out = vec![format!(
        "run {} · {} · {} of {} planned requests stored · {} segments",
        run.info.run_id, words, run.counted, run.info.planned_requests, run.info.segments
    )];
    let mut by_segment: Vec<&(RunMember, SessionMeta)> = run.members.iter().collect();
    by_segment.sort_by_key(|(m, s)| (m.segment, s.started_at));
    for (m, s) in by_segment {
        let clock = m.clock.map_or("clock not measured".to_string(), |c| {
            format!(
                "clock {} ± {}",
                firsttoken_report::format::precise_ms(c.offset_ms),
                firsttoken_report::format::ms(c.uncertainty_ms)
            )
        });
        out.push(format!(
            "  segment {}/{} · vantage {} · network {} · host {} · session {} · {}",
            m.segment, m.segments, s.labels.vantage, s.labels.network, s.host, s.id, clock
        ));
    }
    out.extend(firsttoken_report::words::run::start(&run.start));
    out
}

/// The run as the JSON report's `run` object (docs/schema/report.v1.schema.json):
/// its row, state, counts, members with their clocks and heartbeats, how
/// the agents started, and the head's lines.
pub fn run_json(run: &RunView) -> serde_json::Value {
    let members: Vec<serde_json::Value> = run
        .members
        .iter()
        .map(|(m, s)| {
            serde_json::json!({
                "session_id": s.id,
                "segment": m.segment,
                "segment_requests": m.segment_requests,
                "vantage": s.labels.vantage,
                "network": s.labels.network,
                "host": s.host,
                "status": s.status,
                "clock": m.clock,
                "began_at_ms": m.began_at_ms,
                "heartbeat_at_ms": m.heartbeat_at_ms,
                "heartbeat_every_ms": m.heartbeat_every_ms,
            })
        })
        .collect();
    serde_json::json!({
        "run_id": run.info.run_id,
        "created_at": run.info.created_at.to_string(),
        "segments": run.info.segments,
        "planned_requests": run.info.planned_requests,
        "counted_requests": run.counted,
        "start_at": run.info.start_at.map(|t| t.to_string()),
        "state": run.state,
        "start": run.start,
        "members": members,
        "text": run_head(run),
    })
}

//! The report as JSON: `{"schema": "firsttoken.report.v1", "sessions",
//! "analysis", "comparisons", "findings", "text", "run"}` — the analysis as
//! data (findings with their estimates, intervals, n and direction), the
//! ranked findings the report opens with ([`rank_findings`]), in `text` the
//! same sentences and tables the terminal and Markdown reports show,
//! section by section, and with a run ([`crate::ReportInput::run`]) the
//! run across agents as data with its head's lines.
//! The shape is documented by `docs/schema/report.v1.schema.json` ([`REPORT_SCHEMA`]).

use firsttoken_analyze::{Analysis, Comparison, RankedFinding, rank_findings};
use firsttoken_record::run::RunView;
use serde::Serialize;

use crate::doc::{Shown, build, run_head};
use crate::{Exporter, ReportError, ReportInput};

/// The `schema` value of a report document.
pub const REPORT_SCHEMA_ID: &str = "firsttoken.report.v1";

/// The JSON Schema of a report document.
pub const REPORT_SCHEMA: &str = include_str!("../../../docs/schema/report.v1.schema.json");

#[derive(Serialize)]
struct SessionRef<'a> {
    id: &'a str,
    started_at: firsttoken_record::vocab::UtcTime,
    status: &'a firsttoken_record::session::SessionStatus,
    provenance: firsttoken_record::session::Provenance,
    labels: &'a firsttoken_record::session::Labels,
    seed: u64,
}

#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    sessions: Vec<SessionRef<'a>>,
    analysis: &'a Analysis,
    comparisons: &'a [Comparison],
    findings: Vec<RankedFinding>,
    text: Vec<Text>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<RunOut<'a>>,
}

/// One section's sentences and tables, as the text formats print them.
#[derive(Serialize)]
struct Text {
    section: String,
    lines: Vec<String>,
    tables: Vec<Shown>,
}

/// A member of a run as the report's `run.members` carries it.
#[derive(Serialize)]
struct RunMemberOut<'a> {
    session_id: &'a str,
    segment: u32,
    segment_requests: u64,
    vantage: &'a str,
    network: &'a str,
    host: &'a str,
    status: &'a firsttoken_record::session::SessionStatus,
    clock: Option<firsttoken_record::run::ClockOffset>,
    began_at_ms: Option<f64>,
    heartbeat_at_ms: Option<f64>,
    heartbeat_every_ms: Option<f64>,
}

/// The run as the report's `run` object: its row, state, counts, members
/// with their clocks and heartbeats, how the agents started, and the
/// head's lines ([`run_head`]).
#[derive(Serialize)]
struct RunOut<'a> {
    run_id: &'a str,
    created_at: String,
    segments: u32,
    planned_requests: u64,
    counted_requests: u64,
    start_at: Option<String>,
    state: &'a firsttoken_record::run::RunState,
    start: &'a firsttoken_record::run::RunStart,
    members: Vec<RunMemberOut<'a>>,
    text: Vec<String>,
}

fn run_object(run: &RunView) -> RunOut<'_> {
    RunOut {
        run_id: &run.info.run_id,
        created_at: run.info.created_at.to_string(),
        segments: run.info.segments,
        planned_requests: run.info.planned_requests,
        counted_requests: run.counted,
        start_at: run.info.start_at.map(|t| t.to_string()),
        state: &run.state,
        start: &run.start,
        members: run
            .members
            .iter()
            .map(|(m, s)| RunMemberOut {
                session_id: &s.id,
                segment: m.segment,
                segment_requests: m.segment_requests,
                vantage: &s.labels.vantage,
                network: &s.labels.network,
                host: &s.host,
                status: &s.status,
                clock: m.clock,
                began_at_ms: m.began_at_ms,
                heartbeat_at_ms: m.heartbeat_at_ms,
                heartbeat_every_ms: m.heartbeat_every_ms,
            })
            .collect(),
        text: run_head(run),
    }
}

/// The JSON format.
#[derive(Debug, Clone, Copy)]
pub struct Json;

impl Exporter for Json {
    fn export(&self, input: &ReportInput<'_>) -> Result<String, ReportError> {
        Ok(render(input))
    }

    /// Written as it is serialized: a large report is never held as text.
    fn write(
        &self,
        input: &ReportInput<'_>,
        w: &mut dyn std::io::Write,
    ) -> Result<(), ReportError> {
        serde_json::to_writer_pretty(&mut *w, &document(input)).map_err(std::io::Error::from)?;
        Ok(())
    }
}

/// Render the report document as pretty JSON.
pub fn render(input: &ReportInput<'_>) -> String {
    // Plain data with string keys: serialization cannot fail.
    serde_json::to_string_pretty(&document(input)).unwrap_or_default()
}

/// The report document.
fn document<'a>(input: &ReportInput<'a>) -> Report<'a> {
    let text = build(input)
        .sections
        .iter()
        .filter(|s| s.in_text())
        .map(|s| Text {
            section: s.title.clone(),
            lines: s
                .text_lines()
                .into_iter()
                .map(|(l, m)| m.indented(l))
                .collect(),
            tables: s.text_tables(),
        })
        .collect();
    Report {
        schema: REPORT_SCHEMA_ID,
        sessions: input
            .sessions
            .iter()
            .map(|s| SessionRef {
                id: &s.id,
                started_at: s.started_at,
                status: &s.status,
                provenance: s.provenance,
                labels: &s.labels,
                seed: s.seed,
            })
            .collect(),
        analysis: input.analysis,
        comparisons: input.comparisons,
        findings: rank_findings(input.analysis, input.comparisons),
        text,
        run: input.run.map(run_object),
    }
}

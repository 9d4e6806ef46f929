//! The report as JSON: `{"schema": "firsttoken.report.v1", "sessions", "analysis", "comparisons"}`.
//! The shape is documented by `docs/schema/report.v1.schema.json` ([`REPORT_SCHEMA`]).

use firsttoken_analyze::{Analysis, Comparison};
use firsttoken_record::session::SessionMeta;
use serde::Serialize;

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
}

/// Render the report document as pretty JSON.
pub fn render(sessions: &[SessionMeta], analysis: &Analysis, comparisons: &[Comparison]) -> String {
    let report = Report {
        schema: REPORT_SCHEMA_ID,
        sessions: sessions
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
        analysis,
        comparisons,
    };
    // Plain data with string keys: serialization cannot fail.
    serde_json::to_string_pretty(&report).unwrap_or_default()
}

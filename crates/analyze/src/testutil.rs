//! Builders for rows and sessions in tests.

use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::vocab::{Destination, PhaseKind, UtcTime};
use firsttoken_record::{Connection, ErrorKind, Sample, SampleError};

/// A complete session with default labels.
pub(crate) fn meta(id: &str, provenance: Provenance) -> SessionMeta {
    SessionMeta {
        id: id.to_string(),
        started_at: utc("2026-11-30T02:30:00Z"),
        ended_at: Some(utc("2026-11-30T02:40:00Z")),
        status: SessionStatus::Complete,
        spec: serde_json::Value::Null,
        seed: 7,
        tool_version: "0.1.0".into(),
        host: "bench-host".into(),
        pid: None,
        labels: Labels {
            network: String::new(),
            code_version: String::new(),
            vantage: "bench-host".into(),
            tags: Default::default(),
        },
        provenance,
        cleanup: None,
        client_lag_p99_ms: None,
    }
}

/// A time from its RFC 3339 text.
pub(crate) fn utc(text: &str) -> UtcTime {
    text.parse().expect("a valid test timestamp")
}

/// A successful measured row of `phase` (its stored name) on `path` (the
/// stored path: `direct` / `ping` for those phases) with a TTFT.
pub(crate) fn row(session: &str, phase: &str, path: Option<&str>, ttft: Option<f64>) -> SampleRow {
    let phase: PhaseKind = phase.parse().expect("a stored phase name");
    let dest = Destination::from_columns(phase, path.map(str::to_string), None)
        .expect("a path that fits the phase");
    let mut s = Sample::empty(0, 0, Connection::Reused);
    s.ttft_ms = ttft;
    s.e2e_ms = ttft.map(|t| t + 500.0);
    SampleRow {
        session_id: session.to_string(),
        phase,
        dest,
        concurrency: None,
        intended_start_ms: None,
        actual_start_ms: 0.0,
        started_at: utc("2026-11-30T02:31:00Z"),
        provenance: Provenance::Measured,
        prompt: None,
        sample: s,
    }
}

/// Mark a row failed.
pub(crate) fn failed(mut r: SampleRow) -> SampleRow {
    r.sample.error = Some(SampleError {
        kind: ErrorKind::Timeout,
        message: "timed out".into(),
    });
    r
}

/// `n` values spread evenly (golden-ratio sequence) over `center` ± `spread`.
pub(crate) fn spread(center: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| center + spread * (2.0 * (i as f64 * 0.618_033_988_7).fract() - 1.0))
        .collect()
}

/// Rows validated into a frame, without session metadata.
pub(crate) fn frame(rows: &[SampleRow]) -> crate::Frame {
    crate::Frame::from_rows(rows, &[]).expect("test rows are valid")
}

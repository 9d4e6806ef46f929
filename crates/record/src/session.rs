//! A session: one planned mix of request kinds, run against an app and its
//! provider, stored raw with everything needed to trust it later.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Sample;

/// Where a sample's numbers come from. Analysis never pools kinds silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// A real target.
    Measured,
    /// The built-in emulator, or an app whose upstream is the emulator.
    Emulated,
    /// Read from an export.
    Imported,
    /// Generated for tests and benchmarks; never produced by `run`.
    Synthetic,
}

impl Provenance {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Emulated => "emulated",
            Provenance::Imported => "imported",
            Provenance::Synthetic => "synthetic",
        }
    }
}

impl std::str::FromStr for Provenance {
    type Err = String;
    fn from_str(s: &str) -> Result<Provenance, String> {
        match s {
            "measured" => Ok(Provenance::Measured),
            "emulated" => Ok(Provenance::Emulated),
            "imported" => Ok(Provenance::Imported),
            "synthetic" => Ok(Provenance::Synthetic),
            other => Err(format!("unknown provenance {other:?}")),
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SessionStatus {
    /// Still running (or the process died: see [`SessionStatus::Partial`] on next open).
    Running,
    /// Every planned request ran.
    Complete,
    /// Stopped early; the reason says why (Ctrl-C, budget, store error, found running on open…).
    Partial {
        /// Why it stopped.
        reason: String,
    },
}

/// Labels that group sessions in analysis.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labels {
    /// Free text naming the network, e.g. "office-fibre".
    pub network: String,
    /// The app's code version (flag, or its `/version`).
    pub code_version: String,
    /// Where the measurement ran from (host name by default).
    pub vantage: String,
    /// Free `k=v` tags.
    pub tags: BTreeMap<String, String>,
}

/// The result of deleting a session's test accounts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cleanup {
    /// Ids of every account the session created.
    pub created_ids: Vec<String>,
    /// Rows the delete reported.
    pub deleted: u64,
    /// Rows left afterwards by the configured count query; `None` if it did not run.
    pub residual: Option<i64>,
    /// Why cleanup failed, if it did.
    pub error: Option<String>,
}

impl Cleanup {
    /// True when cleanup ran and left nothing behind.
    pub fn is_clean(&self) -> bool {
        self.error.is_none() && self.residual == Some(0)
    }
}

/// A session row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// Unique id (time-ordered, e.g. `20261130T023000Z-3f9a`).
    pub id: String,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC; `None` while running.
    pub ended_at: Option<String>,
    /// How it ended.
    pub status: SessionStatus,
    /// The full resolved protocol and config (secrets redacted), as JSON.
    pub spec: serde_json::Value,
    /// The seed every random choice of the session came from.
    pub seed: u64,
    /// firsttoken version that ran it.
    pub tool_version: String,
    /// Host name of the machine that ran it.
    pub host: String,
    /// Grouping labels.
    pub labels: Labels,
    /// Provenance of the session's samples.
    pub provenance: Provenance,
    /// Test-account cleanup, if the session created accounts.
    pub cleanup: Option<Cleanup>,
    /// Set when the client's own scheduling lag exceeded the bound (p99 ms).
    pub client_lag_p99_ms: Option<f64>,
}

/// One stored request: the probe's [`Sample`] plus where it sat in the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    /// Session it belongs to.
    pub session_id: String,
    /// Protocol phase: `ping`, `cold`, `warm`, `fresh`, `direct`, `concurrency`, `rate`.
    pub phase: String,
    /// Target path name (e.g. `chat`, `docs`), or `direct` / `ping`.
    pub path: Option<String>,
    /// Routing strategy name for direct requests.
    pub strategy: Option<String>,
    /// Concurrency level for concurrency-phase requests.
    pub concurrency: Option<u32>,
    /// When it was meant to start, ms from the session start (open-loop load).
    pub intended_start_ms: Option<f64>,
    /// When it actually started, ms from the session start.
    pub actual_start_ms: f64,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// Where the numbers come from.
    pub provenance: Provenance,
    /// The measurement.
    pub sample: Sample,
}

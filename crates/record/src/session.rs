//! A session: one planned mix of request kinds, run against an app and its
//! provider, stored raw with everything needed to trust it later.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

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
    /// Host name of the machine that ran it ([`crate::store::host_name`] on this one).
    pub host: String,
    /// Process id of the process that ran it. With `host`, it tells whether a
    /// session still `running` in the store has lost its process: the store
    /// marks such a session `partial` when it is next opened on that host.
    /// `None` asks the store to record the calling process; imported sessions
    /// have none.
    #[serde(default)]
    pub pid: Option<u32>,
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

/// `t` as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T02:30:00.123Z`
/// (the form every `*_at` field uses, so text order is time order).
pub fn utc_rfc3339(t: SystemTime) -> String {
    let (days, secs, millis) = split_unix(t);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A new time-ordered session id, e.g. `20261130T023000Z-3f9a`: the UTC
/// second `t` and four random hex digits (enough to keep two sessions
/// started in the same second on different machines apart).
pub fn new_session_id(t: SystemTime) -> String {
    use std::hash::{BuildHasher, Hasher};
    let (days, secs, _) = split_unix(t);
    let (y, m, d) = civil_from_days(days);
    // RandomState is seeded per process from the OS; mixing in the time and
    // the pid keeps ids apart across processes and calls.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        t.duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z-{:04x}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        h.finish() & 0xffff
    )
}

/// Days since 1970-01-01, seconds into the day, milliseconds into the second.
fn split_unix(t: SystemTime) -> (i64, u64, u32) {
    // A clock before 1970 is a misconfigured host; clamp to the epoch.
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let s = d.as_secs();
    ((s / 86_400) as i64, s % 86_400, d.subsec_millis())
}

/// Proleptic Gregorian (year, month, day) of a day count from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn formats_utc_times_and_ids() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_919_400_123); // 2026-11-29T02:30:00.123Z
        assert_eq!(utc_rfc3339(t), "2026-11-29T02:30:00.123Z");
        assert_eq!(utc_rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(&utc_rfc3339(leap)[..10], "2000-02-29");
        let id = new_session_id(t);
        assert!(id.starts_with("20261129T023000Z-"), "{id}");
        assert_eq!(id.len(), "20261129T023000Z-3f9a".len());
    }

    #[test]
    fn provenance_names_round_trip() {
        for p in [
            Provenance::Measured,
            Provenance::Emulated,
            Provenance::Imported,
            Provenance::Synthetic,
        ] {
            assert_eq!(p.as_str().parse::<Provenance>(), Ok(p));
        }
        assert!("guessed".parse::<Provenance>().is_err());
    }
}

//! A session: one planned mix of request kinds, run against an app and its
//! provider, stored raw with everything needed to trust it later.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::Sample;
use crate::vocab::{Destination, PhaseKind, UtcTime};

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

/// Client scheduling lag (p99 of actual − intended start, ms) above which a
/// session's open-loop start times are flagged as unreliable
/// ([`SessionMeta::client_lag_p99_ms`]).
pub const LAG_FLAG_MS: f64 = 5.0;

/// The result of deleting a session's test accounts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cleanup {
    /// Ids of every account the session created.
    pub created_ids: Vec<String>,
    /// Rows the delete reported.
    pub deleted: u64,
    /// Rows left afterwards by the configured count query (for an HTTP
    /// cleanup without one: the accounts it did not see gone); `None` if
    /// neither ran.
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

/// Why a session must be kept rather than deleted
/// ([`SessionMeta::keep_reason`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepReason {
    /// It is still running (or its process died and no command has marked
    /// it partial yet).
    Running,
    /// It created test accounts that its cleanup did not delete: the ids
    /// stored with it are the only way `cleanup` finds them again.
    AccountsLeft {
        /// Test accounts it created.
        accounts: usize,
    },
}

/// A session row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// Unique id (time-ordered, e.g. `20261130T023000Z-3f9a`).
    pub id: String,
    /// Start.
    pub started_at: UtcTime,
    /// End; `None` while running.
    pub ended_at: Option<UtcTime>,
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

impl SessionMeta {
    /// Why this session must be kept, if it must: it is running, or it
    /// holds test-account ids its cleanup did not delete. `None`: it may
    /// be deleted ([`crate::store::Store::delete_session`]).
    pub fn keep_reason(&self) -> Option<KeepReason> {
        if self.status == SessionStatus::Running {
            return Some(KeepReason::Running);
        }
        match &self.cleanup {
            Some(c) if !c.created_ids.is_empty() && !c.is_clean() => {
                Some(KeepReason::AccountsLeft {
                    accounts: c.created_ids.len(),
                })
            }
            _ => None,
        }
    }

    /// Session `id` started at `started_at`, its samples of `provenance`,
    /// with nothing else known yet: running, no spec, seed 0, this
    /// version, no host or pid, default labels, no cleanup or lag. The
    /// rest is set by struct update (`SessionMeta { seed, ..new }`).
    pub fn new(id: impl Into<String>, started_at: UtcTime, provenance: Provenance) -> SessionMeta {
        SessionMeta {
            id: id.into(),
            started_at,
            ended_at: None,
            status: SessionStatus::Running,
            spec: serde_json::Value::Null,
            seed: 0,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            host: String::new(),
            pid: None,
            labels: Labels::default(),
            provenance,
            cleanup: None,
            client_lag_p99_ms: None,
        }
    }
}

/// One stored request: the probe's [`Sample`] plus where it sat in the session.
///
/// Serialized (export lines) with the stored columns' names and text forms:
/// `phase` a name, `path` and `strategy` from [`Destination`], `started_at`
/// RFC 3339; reading refuses a phase outside the vocabulary or a
/// destination that does not fit the phase.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRow {
    /// Session it belongs to.
    pub session_id: String,
    /// Protocol phase.
    pub phase: PhaseKind,
    /// Where it went; must fit the phase ([`Destination::fits`]).
    pub dest: Destination,
    /// Concurrency level for concurrency-phase requests.
    pub concurrency: Option<u32>,
    /// When it was meant to start, ms from the session start (open-loop load).
    pub intended_start_ms: Option<f64>,
    /// When it actually started, ms from the session start.
    pub actual_start_ms: f64,
    /// Wall-clock start.
    pub started_at: UtcTime,
    /// Where the numbers come from.
    pub provenance: Provenance,
    /// Which prompt the request carried, when the protocol chose one.
    pub prompt: Option<PromptRef>,
    /// The measurement.
    pub sample: Sample,
}

impl SampleRow {
    /// `sample` of session `session_id`, a request of `phase` to `dest`
    /// started at `started_at`: measured, started at once (offset 0, no
    /// intended start), no concurrency level, no prompt. The rest is set by
    /// struct update.
    pub fn new(
        session_id: impl Into<String>,
        phase: PhaseKind,
        dest: Destination,
        started_at: UtcTime,
        sample: Sample,
    ) -> SampleRow {
        SampleRow {
            session_id: session_id.into(),
            phase,
            dest,
            concurrency: None,
            intended_start_ms: None,
            actual_start_ms: 0.0,
            started_at,
            provenance: Provenance::Measured,
            prompt: None,
            sample,
        }
    }
}

/// The identity of a prompt: its place in its list and a short hash of its
/// text, so a report can say which questions went where without storing
/// the text itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptRef {
    /// Index in the list the prompt came from (the path's own, or the session's).
    pub index: u32,
    /// First 12 hex digits of the SHA-256 of the prompt text.
    pub hash: String,
}

/// [`SampleRow`] as written: the destination as its two stored columns.
#[derive(Serialize)]
struct SampleRowOut<'a> {
    session_id: &'a str,
    phase: PhaseKind,
    path: Option<&'a str>,
    strategy: Option<&'a str>,
    concurrency: Option<u32>,
    intended_start_ms: Option<f64>,
    actual_start_ms: f64,
    started_at: UtcTime,
    provenance: Provenance,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a PromptRef>,
    sample: &'a Sample,
}

/// [`SampleRow`] as read.
#[derive(Deserialize)]
struct SampleRowIn {
    session_id: String,
    phase: PhaseKind,
    path: Option<String>,
    strategy: Option<String>,
    concurrency: Option<u32>,
    intended_start_ms: Option<f64>,
    actual_start_ms: f64,
    started_at: UtcTime,
    provenance: Provenance,
    #[serde(default)]
    prompt: Option<PromptRef>,
    sample: Sample,
}

impl Serialize for SampleRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SampleRowOut {
            session_id: &self.session_id,
            phase: self.phase,
            path: self.dest.path_column(),
            strategy: self.dest.strategy(),
            concurrency: self.concurrency,
            intended_start_ms: self.intended_start_ms,
            actual_start_ms: self.actual_start_ms,
            started_at: self.started_at,
            provenance: self.provenance,
            prompt: self.prompt.as_ref(),
            sample: &self.sample,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SampleRow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SampleRow, D::Error> {
        let r = SampleRowIn::deserialize(d)?;
        let dest = Destination::from_columns(r.phase, r.path, r.strategy)
            .map_err(serde::de::Error::custom)?;
        Ok(SampleRow {
            session_id: r.session_id,
            phase: r.phase,
            dest,
            concurrency: r.concurrency,
            intended_start_ms: r.intended_start_ms,
            actual_start_ms: r.actual_start_ms,
            started_at: r.started_at,
            provenance: r.provenance,
            prompt: r.prompt,
            sample: r.sample,
        })
    }
}

/// A new time-ordered session id, e.g. `20261130T023000Z-3f9a`: the UTC
/// second `t` and four random hex digits (enough to keep two sessions
/// started in the same second on different machines apart).
pub fn new_session_id(t: SystemTime) -> String {
    use std::hash::{BuildHasher, Hasher};
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
        "{}-{:04x}",
        UtcTime::from(t).compact_seconds(),
        h.finish() & 0xffff
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn session_ids_start_with_the_utc_second() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_919_400_123); // 2026-11-29T02:30:00.123Z
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

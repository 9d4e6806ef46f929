//! The result store: sessions and their samples, kept as they are measured.
//!
//! [`Store::open`] takes a path (SQLite, the default `./firsttoken.db`) or a
//! `postgres://` / `postgresql://` URL. Both backends hold the same logical
//! schema, applied at open by ordered migrations recorded in
//! `schema_migrations(version, applied_at)`:
//!
//! - `sessions`: id, started_at, ended_at, status (`running` / `complete` /
//!   `partial`) and status_reason, spec (JSON), seed, tool_version, host,
//!   pid, network, code_version, vantage, tags (JSON), provenance, cleanup
//!   (JSON), client_lag_p99_ms;
//! - `test_accounts`: session_id, account_id, one row per test account
//!   the session created, recorded as it is created
//!   ([`Store::add_test_account`]);
//! - `samples`: an autoincrement id, then [`SAMPLE_COLUMNS`]: the session,
//!   its place in it (seq, phase, path, strategy, concurrency, intended and
//!   actual start), provenance, every stamp of the probe, token counts, ITL
//!   summary, status, request id, provider, route, cost, Server-Timing and
//!   TLS (JSON) and the error, (version 5) the trace id it sent, and
//!   (version 6) the arrival clock, the user-space first-token stamp, the
//!   client lag at the first token and how many events shared its read;
//! - `spans`: the app's server-side spans of a session ([`SPAN_COLUMNS`]),
//!   stored in batches up to a per-session cap ([`Store::append_spans`]).
//!
//! Column decisions, the same in both backends: `*_at` times are
//! [`UtcTime`] as RFC 3339 UTC text (text order is time order); `phase` is
//! `CHECK`ed against the [`crate::vocab::PhaseKind`] names; stamps are
//! nullable floating-point milliseconds, `NULL` when the phase did not
//! happen, and non-finite values are refused, not stored as `NULL`; the
//! `u64` seed is decimal `TEXT` (an `i64` bit-cast would show large seeds
//! negative); counts are signed 64-bit (above `i64::MAX` is refused);
//! `provenance` is `NOT NULL` and `CHECK`ed against the four kinds in both
//! tables, so nothing is stored without one.
//!
//! Durability: [`Store::append_sample`] returns once the sample is
//! committed, so a crash, `kill -9` or Ctrl-C loses only the requests in
//! flight. SQLite runs in WAL mode with `synchronous=NORMAL`: a commit
//! survives the process dying; an OS crash or power loss may roll back the
//! last few (the file stays consistent). PostgreSQL commits per its
//! `synchronous_commit` (flushed, by default).
//!
//! A session left `running` by a process that died is found on the next
//! open on the same host and marked `partial` with [`ABANDONED_REASON`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), firsttoken_record::store::StoreError> {
//! use firsttoken_record::store::Store;
//! let store = Store::open("firsttoken.db").await?;
//! for s in store.sessions().await? {
//!     println!("{} {:?}", s.id, s.status);
//! }
//! # Ok(()) }
//! ```

mod error;
mod postgres;
mod redact;
mod runs;
mod schema;
mod select;
mod spans;
mod sqlite;
mod view;

use std::path::Path;
use std::time::SystemTime;

pub use error::{StoreError, mask_url};
pub use postgres::PgStore;
pub use redact::{REDACTED, redact_spec};
pub use schema::SAMPLE_COLUMNS;
pub(crate) use schema::{Cell, sample_cells};
pub use select::{MeanCost, SampleFilter};
pub use spans::{SPAN_COLUMNS, SpansAppended, is_span_id};
pub use sqlite::{BUSY_TIMEOUT, OpenMode, SqliteStore};
pub use view::VIEW_COLUMNS;

use crate::session::{Cleanup, SampleRow, SessionMeta, SessionStatus, new_session_id};
use crate::vocab::UtcTime;

/// The default SQLite file, in the working directory.
pub const DEFAULT_SQLITE_PATH: &str = "firsttoken.db";

/// The reason given to a session found `running` whose process is gone.
pub const ABANDONED_REASON: &str = "interrupted: found running when the store was next opened";

/// The cleanup error of a session whose test accounts were recorded
/// ([`Store::add_test_account`]) but that ended before deleting them.
pub const CLEANUP_NOT_RUN: &str = "cleanup did not run: the session stopped before deleting its test accounts (retry with `firsttoken cleanup --session ID`)";

/// A session [`Store::mark_abandoned`] marked `partial`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abandoned {
    /// The session.
    pub id: String,
    /// The process that had owned it.
    pub pid: u32,
}

/// A result store. Cheap to clone; clones share the connection(s).
#[derive(Debug, Clone)]
pub enum Store {
    /// An embedded SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL database.
    Postgres(PgStore),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            Store::Sqlite($s) => $call,
            Store::Postgres($s) => $call,
        }
    };
}

impl Store {
    /// True for a `postgres://` or `postgresql://` URL.
    pub fn is_postgres_url(url_or_path: &str) -> bool {
        let lower = url_or_path.trim_start().to_ascii_lowercase();
        lower.starts_with("postgres://") || lower.starts_with("postgresql://")
    }

    /// Opens the store: PostgreSQL for a `postgres://` or `postgresql://`
    /// URL, otherwise the SQLite file at that path (created if missing).
    /// Applies pending migrations, then marks this host's abandoned
    /// sessions `partial` (see [`Store::mark_abandoned`]).
    pub async fn open(url_or_path: &str) -> Result<Store, StoreError> {
        let store = if Store::is_postgres_url(url_or_path) {
            Store::Postgres(PgStore::open(url_or_path.trim()).await?)
        } else {
            Store::Sqlite(SqliteStore::open(url_or_path).await?)
        };
        store.mark_abandoned(&host_name(), ABANDONED_REASON).await?;
        Ok(store)
    }

    /// Opens an existing store for a command that reads: never creates a
    /// SQLite file (a missing one is [`StoreError::NoStore`]), and opens
    /// one this user may not write read-only (without marking abandoned
    /// sessions, which would be a write). PostgreSQL opens as [`Store::open`].
    pub async fn open_existing(url_or_path: &str) -> Result<Store, StoreError> {
        if Store::is_postgres_url(url_or_path) {
            return Store::open(url_or_path).await;
        }
        let (s, writable) = SqliteStore::open_as(url_or_path, sqlite::OpenMode::Existing).await?;
        let store = Store::Sqlite(s);
        if writable {
            store.mark_abandoned(&host_name(), ABANDONED_REASON).await?;
        }
        Ok(store)
    }

    /// The store for messages: `SQLite <path>` or `PostgreSQL <url>` (password masked).
    pub fn describe(&self) -> String {
        match self {
            Store::Sqlite(s) => format!("SQLite {}", s.path()),
            Store::Postgres(s) => format!("PostgreSQL {}", s.url()),
        }
    }

    /// How many operations were retried on a fresh PostgreSQL connection
    /// after the previous one dropped (always 0 for SQLite).
    pub fn reconnects(&self) -> u64 {
        match self {
            Store::Sqlite(_) => 0,
            Store::Postgres(s) => s.reconnects(),
        }
    }

    fn name(&self) -> String {
        match self {
            Store::Sqlite(s) => s.path().to_owned(),
            Store::Postgres(s) => s.url().to_owned(),
        }
    }

    fn invalid(&self, op: &'static str, message: String) -> StoreError {
        StoreError::Invalid {
            op,
            store: self.name(),
            message,
        }
    }

    /// Applies migrations not yet applied; returns how many (0 when the
    /// schema is current: running it again is a no-op). [`Store::open`]
    /// already does this.
    pub async fn migrate(&self) -> Result<usize, StoreError> {
        dispatch!(self, s => s.migrate().await)
    }

    /// The applied migration versions, ascending.
    pub async fn schema_versions(&self) -> Result<Vec<i64>, StoreError> {
        dispatch!(self, s => s.schema_versions().await)
    }

    /// Stores a new session. The spec goes through [`redact_spec`] (and tag
    /// values under secret-looking keys are redacted) on the way in; a
    /// `None` pid records the calling process as the owner.
    pub async fn create_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let meta = sanitized(meta);
        let cells = schema::session_cells(&meta).map_err(|m| self.invalid("create session", m))?;
        dispatch!(self, s => s.create_session(cells).await)
    }

    /// Stores one completed request. When this returns `Ok`, the sample is
    /// committed (one transaction per sample).
    pub async fn append_sample(&self, row: &SampleRow) -> Result<(), StoreError> {
        let cells = sample_cells(row).map_err(|m| self.invalid("append sample", m))?;
        dispatch!(self, s => s.append_sample(cells).await)
    }

    /// Records how a session ended. `cleanup: None` keeps any cleanup
    /// already stored with [`Store::set_cleanup`].
    pub async fn finish_session(
        &self,
        id: &str,
        status: &SessionStatus,
        ended_at: UtcTime,
        cleanup: Option<&Cleanup>,
        client_lag_p99_ms: Option<f64>,
    ) -> Result<(), StoreError> {
        let op = "finish session";
        let cleanup = cleanup
            .map(|c| json_cell(c).map_err(|m| self.invalid(op, m)))
            .transpose()?;
        let lag = match client_lag_p99_ms {
            Some(v) if !v.is_finite() => {
                return Err(self.invalid(op, format!("client_lag_p99_ms is {v}")));
            }
            Some(v) => Cell::Real(v),
            None => Cell::Null,
        };
        let (id, status, ended_at) = (id.to_owned(), status.clone(), ended_at.to_string());
        dispatch!(self, s => s.finish_session(id, status, ended_at, cleanup, lag).await)
    }

    /// Stores a session's test-account cleanup result.
    pub async fn set_cleanup(&self, id: &str, cleanup: &Cleanup) -> Result<(), StoreError> {
        let cell = json_cell(cleanup).map_err(|m| self.invalid("set cleanup", m))?;
        let id = id.to_owned();
        dispatch!(self, s => s.set_cleanup(id, cell).await)
    }

    /// Records that session `session_id` created the test account
    /// `account_id`: call it the moment the account exists. The id is
    /// committed when this returns, so a session that crashes (even `kill
    /// -9`) before its cleanup still lists it: [`Store::session`] and
    /// [`Store::sessions`] add every recorded id to the session's
    /// [`Cleanup::created_ids`] (a session with recorded ids and no stored
    /// cleanup reads as cleanup `error` [`CLEANUP_NOT_RUN`]). Recording
    /// the same id twice is a no-op; an unknown session is
    /// [`StoreError::NoSession`].
    pub async fn add_test_account(
        &self,
        session_id: &str,
        account_id: &str,
    ) -> Result<(), StoreError> {
        let (session, account) = (session_id.to_owned(), account_id.to_owned());
        dispatch!(self, s => s.add_test_account(session, account).await)
    }

    /// The test-account ids recorded for a session with
    /// [`Store::add_test_account`], in the order they were recorded.
    pub async fn test_accounts(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let id = Some(session_id.to_owned());
        let rows = dispatch!(self, s => s.test_accounts(id).await)?;
        Ok(rows.into_iter().map(|(_, a)| a).collect())
    }

    /// Adds each session's recorded test accounts to its cleanup.
    async fn with_accounts(
        &self,
        mut sessions: Vec<SessionMeta>,
        only: Option<String>,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        if sessions.is_empty() {
            return Ok(sessions);
        }
        let accounts = dispatch!(self, s => s.test_accounts(only).await)?;
        let index: std::collections::HashMap<String, usize> = sessions
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.clone(), i))
            .collect();
        for (session_id, account) in accounts {
            if let Some(m) = index.get(&session_id).map(|&i| &mut sessions[i]) {
                let c = m.cleanup.get_or_insert_with(|| Cleanup {
                    error: Some(CLEANUP_NOT_RUN.to_owned()),
                    ..Cleanup::default()
                });
                if !c.created_ids.contains(&account) {
                    c.created_ids.push(account);
                }
            }
        }
        Ok(sessions)
    }

    /// Every session, newest first.
    pub async fn sessions(&self) -> Result<Vec<SessionMeta>, StoreError> {
        let found = dispatch!(self, s => s.sessions().await)?;
        self.with_accounts(found, None).await
    }

    /// The session with this id, or else the one session whose id starts
    /// with it; `Ok(None)` when none does (or the prefix is empty),
    /// [`StoreError::AmbiguousSession`] when several do.
    pub async fn session(&self, id_or_prefix: &str) -> Result<Option<SessionMeta>, StoreError> {
        if id_or_prefix.is_empty() {
            return Ok(None);
        }
        let id = id_or_prefix.to_owned();
        let found = dispatch!(self, s => s.session(id).await)?;
        let only = (found.len() == 1).then(|| found[0].id.clone());
        let mut found = self.with_accounts(found, only).await?;
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.pop()),
            _ if found[0].id == id_or_prefix => Ok(Some(found.swap_remove(0))),
            _ => Err(StoreError::AmbiguousSession {
                store: self.name(),
                prefix: id_or_prefix.to_owned(),
                matches: found.into_iter().map(|m| m.id).collect(),
            }),
        }
    }

    /// Marks `partial` (with `reason`) every session of `host` still
    /// `running` whose owner process is gone (no `/proc/<pid>`, or a
    /// zombie). Sessions of other hosts are left alone: only their own host
    /// can tell. Where `/proc` is missing, nothing is marked. A recycled
    /// pid keeps a dead session `running` until that process ends too.
    pub async fn mark_abandoned(
        &self,
        host: &str,
        reason: &str,
    ) -> Result<Vec<Abandoned>, StoreError> {
        let (host, reason) = (host.to_owned(), reason.to_owned());
        dispatch!(self, s => s.mark_abandoned(host, reason).await)
    }

    /// Stores an imported session and its samples in one transaction, under
    /// a new id, everything marked [`Provenance::Imported`] (see
    /// [`crate::export::mark_imported`]); returns the session as stored.
    /// Every row must belong to `meta` (same `session_id`).
    ///
    /// [`Provenance::Imported`]: crate::session::Provenance::Imported
    pub async fn insert_imported(
        &self,
        meta: &SessionMeta,
        rows: &[SampleRow],
    ) -> Result<SessionMeta, StoreError> {
        let op = "import session";
        if let Some(r) = rows.iter().find(|r| r.session_id != meta.id) {
            return Err(self.invalid(
                op,
                format!(
                    "a sample of session {:?} was given with session {:?}",
                    r.session_id, meta.id
                ),
            ));
        }
        let new_id = new_session_id(SystemTime::now());
        let (meta, rows) = crate::export::mark_imported(meta, rows, &new_id);
        let meta = sanitized(&meta);
        let session = schema::session_cells(&meta).map_err(|m| self.invalid(op, m))?;
        let samples = rows
            .iter()
            .map(sample_cells)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| self.invalid(op, m))?;
        dispatch!(self, s => s.insert_imported(session, samples).await)?;
        Ok(meta)
    }
}

/// The spec redacted, secret-looking tags redacted, and the owner pid set.
fn sanitized(meta: &SessionMeta) -> SessionMeta {
    let mut meta = meta.clone();
    redact_spec(&mut meta.spec);
    for (k, v) in meta.labels.tags.iter_mut() {
        if redact::is_secret_key(k) {
            *v = REDACTED.to_owned();
        }
    }
    if meta.pid.is_none() && meta.provenance != crate::session::Provenance::Imported {
        meta.pid = Some(std::process::id());
    }
    meta
}

fn json_cell<T: serde::Serialize>(v: &T) -> Result<Cell, String> {
    serde_json::to_value(v)
        .map(Cell::Json)
        .map_err(|e| e.to_string())
}

/// This machine's host name, as sessions should record it (the kernel's
/// host name; `$HOSTNAME`; `/etc/hostname`; else `unknown`).
pub fn host_name() -> String {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    read("/proc/sys/kernel/hostname")
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| read("/etc/hostname"))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Whether process `pid` is alive on this machine: `/proc/<pid>` exists and
/// is not a zombie. Without `/proc` we cannot tell, and say alive (so
/// nothing is wrongly marked abandoned).
pub(crate) fn pid_alive(pid: u32) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the field after the parenthesised command name.
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next()),
            Some('Z') | Some('X')
        ),
        Err(_) => Path::new(&format!("/proc/{pid}")).exists(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_select_postgres_and_anything_else_is_a_path() {
        assert!(Store::is_postgres_url("postgres://u@h/db"));
        assert!(Store::is_postgres_url("postgresql://h/db"));
        assert!(Store::is_postgres_url("PostgreSQL://h/db"));
        assert!(!Store::is_postgres_url("./firsttoken.db"));
        assert!(!Store::is_postgres_url("postgres.db"));
    }

    #[test]
    fn own_pid_is_alive_and_a_reaped_child_is_not() {
        assert!(pid_alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(pid));
        assert!(!host_name().is_empty());
    }
}

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
//!   stored in batches up to a per-session cap ([`Store::append_spans`]);
//! - `session_frames` (version 19): a large session's frame as bytes,
//!   stamped with the samples it was made from ([`FrameStamp`]).
//!
//! Column decisions, the same in both backends: `*_at` times are
//! [`UtcTime`](crate::vocab::UtcTime) as RFC 3339 UTC text (text order is
//! time order); `phase` is `CHECK`ed against the [`crate::vocab::PhaseKind`] names; stamps are
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
//! Every operation's SQL is written once, over a few primitives each
//! backend supplies (a statement, a query, a scan, a transaction: see
//! `sql.rs`); what the two dialects genuinely differ in is named there.
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

mod bounds;
mod error;
mod flat_json;
mod frames;
mod imported;
mod migrate;
mod postgres;
mod redact;
mod runs;
mod schema;
mod scrapes;
mod select;
mod sessions;
mod spans;
mod spill;
mod sql;
mod sqlite;
mod view;

use std::path::Path;

pub use error::{StoreError, mask_url};
pub use frames::FrameStamp;
pub(crate) use imported::{IMPORT_BATCH_ROWS, SampleBatches};
pub use postgres::PgStore;
pub use redact::{REDACTED, is_secret_header, redact_spec};
pub use schema::SAMPLE_COLUMNS;
pub(crate) use schema::{Cell, sample_cells, session_cells};
pub(crate) use scrapes::scrape_cells;
pub use select::{MeanCost, SampleFilter};
pub use sessions::DeletedSession;
pub(crate) use spans::span_cells;
pub use spans::{SPAN_COLUMNS, SpansAppended, is_span_id};
pub(crate) use spill::{read_spilled, spill_sample};
pub use sqlite::{BUSY_TIMEOUT, OpenMode, SqliteStore};
pub(crate) use view::with_view_of_cells;
pub use view::{PARALLEL_MIN_ROWS, VIEW_COLUMNS};

use crate::session::SessionMeta;

/// The default SQLite file, in the working directory.
pub const DEFAULT_SQLITE_PATH: &str = "firsttoken.db";

/// The reason given to a session found `running` whose process is gone.
pub const ABANDONED_REASON: &str = "interrupted: found running when the store was next opened";

/// The cleanup error of a session whose test accounts were recorded
/// ([`Store::add_test_account`]) but that ended before deleting them
/// (`firsttoken sessions` and the run summary print the retry command).
pub const CLEANUP_NOT_RUN: &str =
    "cleanup did not run: the session stopped before deleting its test accounts";

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

    /// The store as `--store` takes it, for a command a message prints: the
    /// SQLite path or the PostgreSQL URL (password masked).
    pub fn arg(&self) -> String {
        match self {
            Store::Sqlite(s) => s.path().to_owned(),
            Store::Postgres(s) => s.url().to_owned(),
        }
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
}

/// The spec redacted, secret-looking tags redacted, and the owner pid set.
pub(crate) fn sanitized(meta: &SessionMeta) -> SessionMeta {
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

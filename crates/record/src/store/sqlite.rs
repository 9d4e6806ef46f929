//! The embedded SQLite store.
//!
//! rusqlite is synchronous, so the connection lives on its own thread and
//! every operation is a job sent to it over a channel; the async caller
//! awaits a oneshot reply and no runtime worker ever blocks on SQLite. A
//! transaction is one job that holds the thread from `BEGIN IMMEDIATE` to
//! `COMMIT`, its statements sent to it one at a time (`sqlite/tx.rs`).
//! The statements themselves are written once, for both backends, in the
//! shared store code (see `store/sql.rs`).
//!
//! Durability: the database runs in WAL mode with `synchronous=NORMAL`, and
//! every sample is its own committed transaction before
//! [`Store::append_sample`] returns. A committed transaction survives
//! the process crashing, being killed (`kill -9`) or interrupted: it is in
//! the WAL, and the next open replays it. With `NORMAL`, the last
//! transactions before an OS crash or power loss may be rolled back (the
//! database stays consistent); `synchronous=FULL` would fsync every sample
//! to cover that too, at a cost of one fsync per request.
//!
//! Several processes may write the same file: each connection waits up to
//! [`BUSY_TIMEOUT`] for another's write lock.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::OpenFlags;
use rusqlite::types::{ToSqlOutput, Value as SqlValue};
use tokio::sync::oneshot;

use super::Store;
use super::error::{self, StoreError};
use super::schema::{Cell, RowGet, SQLITE_MIGRATIONS};

/// How long a connection waits for another connection's write lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

type Job = Box<dyn FnOnce(&mut rusqlite::Connection) + Send>;

/// A SQLite store: a handle to its writer thread. Clones share the thread;
/// the thread closes the database when the last clone is dropped.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    jobs: mpsc::Sender<Job>,
    path: Arc<str>,
}

impl rusqlite::ToSql for Cell {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Cell::Null => ToSqlOutput::Owned(SqlValue::Null),
            Cell::Int(v) => ToSqlOutput::Owned(SqlValue::Integer(*v)),
            Cell::Real(v) => ToSqlOutput::Owned(SqlValue::Real(*v)),
            Cell::Text(s) => ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(s.as_bytes())),
            Cell::Bool(b) => ToSqlOutput::Owned(SqlValue::Integer(i64::from(*b))),
            Cell::Json(v) => ToSqlOutput::Owned(SqlValue::Text(v.to_string())),
            Cell::Bytes(b) => ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Blob(b)),
            Cell::JsonText(t) => {
                ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(t.as_bytes()))
            }
        })
    }
}

impl RowGet for rusqlite::Row<'_> {
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, String> {
        self.get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn opt_bytes(&self, col: &str) -> Result<Option<Vec<u8>>, String> {
        self.get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn opt_i64(&self, col: &str) -> Result<Option<i64>, String> {
        self.get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn opt_text(&self, col: &str) -> Result<Option<String>, String> {
        self.get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn bool(&self, col: &str) -> Result<bool, String> {
        self.get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn opt_json(&self, col: &str) -> Result<Option<serde_json::Value>, String> {
        let text: Option<String> = self.get(col).map_err(|e| format!("{col}: {e}"))?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| format!("{col}: {e}")))
            .transpose()
    }
}

/// How [`SqliteStore::open_as`] treats the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the file if missing; migrate.
    Create,
    /// The file must exist. Opened for writing (and migrated) when this
    /// user may write it; otherwise read-only, and then its schema must
    /// already be current.
    Existing,
}

/// An existing store the user may only read: opened read-only, its schema
/// checked (a read-only store cannot be migrated).
///
/// A WAL-mode database is read through its `-wal` and `-shm` files, which
/// SQLite creates if they are missing. A writer that closed cleanly leaves
/// neither, and in a directory this user may not write they cannot be
/// created: then, and only when no `-wal` file holds data the main file
/// lacks, the file is opened as immutable (no locks, no `-shm`), which reads
/// exactly what it holds.
fn open_read_only(path: &str) -> Result<rusqlite::Connection, StoreError> {
    let err = |e| error::sqlite("open read-only", path, e);
    let (conn, current) = match read_only_connection(path, false) {
        Ok(opened) => opened,
        Err(e) => {
            let wal = std::fs::metadata(format!("{path}-wal")).map_or(0, |m| m.len());
            if wal > 0 {
                return Err(err(e));
            }
            read_only_connection(path, true).map_err(|_| err(e))?
        }
    };
    let latest = SQLITE_MIGRATIONS.last().map_or(0, |m| m.0);
    match current.cmp(&latest) {
        std::cmp::Ordering::Equal => Ok(conn),
        std::cmp::Ordering::Greater => Err(StoreError::SchemaTooNew {
            store: path.to_owned(),
            found: current,
            supported: latest,
        }),
        std::cmp::Ordering::Less => Err(invalid(
            "open read-only",
            path,
            format!(
                "the store has schema version {current} and this firsttoken reads version {latest}; \
                 it is read-only, so it cannot be updated: make it writable once (any firsttoken command then updates it)"
            ),
        )),
    }
}

/// A read-only connection to `path` (as an immutable file when `immutable`)
/// and the store's schema version: the version is read here because SQLite
/// opens lazily, and a missing `-shm` only fails at the first read.
fn read_only_connection(
    path: &str,
    immutable: bool,
) -> Result<(rusqlite::Connection, i64), rusqlite::Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if immutable {
        // A URI path escapes `%`, `?` and `#`.
        let escaped = path
            .replace('%', "%25")
            .replace('?', "%3F")
            .replace('#', "%23");
        rusqlite::Connection::open_with_flags(
            format!("file:{escaped}?immutable=1"),
            flags | OpenFlags::SQLITE_OPEN_URI,
        )?
    } else {
        rusqlite::Connection::open_with_flags(Path::new(path), flags)?
    };
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let current = conn.query_row(
        "SELECT coalesce(max(version), 0) FROM schema_migrations",
        [],
        |r| r.get(0),
    )?;
    Ok((conn, current))
}

/// `PRAGMA journal_mode = WAL`, waiting up to [`BUSY_TIMEOUT`] while the
/// store is busy. SQLite answers this pragma's busy case at once, without
/// the busy handler: while another process writes a new store's first
/// transaction (its migrations), the file still looks empty and not yet
/// WAL, and switching it needs the lock that process holds.
fn wal_mode(conn: &rusqlite::Connection) -> rusqlite::Result<String> {
    let started = std::time::Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            done => return done,
        }
    }
}

fn open_connection(path: &str, mode: OpenMode) -> Result<rusqlite::Connection, StoreError> {
    let err = |e| error::sqlite("open", path, e);
    let create = match mode {
        OpenMode::Create => OpenFlags::SQLITE_OPEN_CREATE,
        OpenMode::Existing => OpenFlags::empty(),
    };
    let conn = rusqlite::Connection::open_with_flags(
        Path::new(path),
        OpenFlags::SQLITE_OPEN_READ_WRITE | create | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    let mode = wal_mode(&conn).map_err(err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Invalid {
            op: "open",
            store: path.to_owned(),
            message: format!(
                "SQLite refused WAL mode (journal_mode is {mode}); a store needs a local disk, not a network filesystem or memory"
            ),
        });
    }
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(err)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, switches it to
    /// WAL and applies pending migrations. Does not mark abandoned sessions;
    /// [`super::Store::open`] does.
    pub async fn open(path: &str) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_as(path, OpenMode::Create)
            .await
            .map(|(s, _)| s)
    }

    /// Opens the database at `path` as `mode` says. Returns the store and
    /// whether it is writable.
    pub async fn open_as(path: &str, mode: OpenMode) -> Result<(SqliteStore, bool), StoreError> {
        if mode == OpenMode::Existing && !Path::new(path).is_file() {
            return Err(StoreError::NoStore {
                path: path.to_owned(),
            });
        }
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = oneshot::channel();
        let owned = path.to_owned();
        std::thread::Builder::new()
            .name("firsttoken-sqlite".into())
            .spawn(move || {
                let opened = match (open_connection(&owned, mode), mode) {
                    (Ok(c), _) => Ok((c, true)),
                    (Err(e), OpenMode::Create) => Err(e),
                    (Err(_), OpenMode::Existing) => open_read_only(&owned).map(|c| (c, false)),
                };
                let mut conn = match opened {
                    Ok((c, writable)) => {
                        let _ = ready_tx.send(Ok(writable));
                        c
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                // Ends when every SqliteStore clone (every Sender) is dropped.
                while let Ok(job) = rx.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|source| StoreError::Thread {
                path: path.to_owned(),
                source,
            })?;
        let writable = ready_rx.await.map_err(|_| StoreError::WriterGone {
            op: "open",
            path: path.to_owned(),
        })??;
        let store = SqliteStore {
            jobs,
            path: path.into(),
        };
        if !writable {
            return Ok((store, false));
        }
        let migrated = match Store::Sqlite(store.clone()).migrate().await {
            Ok(_) => store.check_writable().await,
            Err(e) => Err(e),
        };
        match (migrated, mode) {
            (Ok(()), _) => Ok((store, true)),
            (Err(e), OpenMode::Create) => Err(e),
            (Err(_), OpenMode::Existing) => {
                store
                    .call("open read-only", |c, p| {
                        *c = open_read_only(p)?;
                        Ok(())
                    })
                    .await?;
                Ok((store, false))
            }
        }
    }

    /// A write-protected file opens "read-write" as read-only: refuse it.
    async fn check_writable(&self) -> Result<(), StoreError> {
        self.call("open", |c, p| {
            if c.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) {
                Err(invalid("open", p, "read-only".into()))
            } else {
                Ok(())
            }
        })
        .await
    }

    /// The database file.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Runs `f` on the writer thread and awaits its result.
    async fn call<R, F>(&self, op: &'static str, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection, &str) -> Result<R, StoreError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let path = self.path.clone();
        let job: Job = Box::new(move |conn| {
            let _ = tx.send(f(conn, &path));
        });
        let gone = || StoreError::WriterGone {
            op,
            path: self.path.to_string(),
        };
        self.jobs.send(job).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }
}

fn invalid(op: &'static str, path: &str, message: String) -> StoreError {
    StoreError::Invalid {
        op,
        store: path.to_owned(),
        message,
    }
}

mod scan;
mod sql;
mod tx;

pub(crate) use tx::SqliteTx;

//! The embedded SQLite store.
//!
//! rusqlite is synchronous, so the connection lives on its own thread and
//! every operation is a job sent to it over a channel; the async caller
//! awaits a oneshot reply and no runtime worker ever blocks on SQLite.
//!
//! Durability: the database runs in WAL mode with `synchronous=NORMAL`, and
//! every sample is its own committed transaction before
//! [`SqliteStore::append_sample`] returns. A committed transaction survives
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

use rusqlite::types::{ToSqlOutput, Value as SqlValue};
use rusqlite::{OpenFlags, TransactionBehavior, params_from_iter};
use tokio::sync::oneshot;

use super::error::{self, StoreError};
use super::schema::{
    self, Cell, PHASE_CHECK_VERSION, RowGet, SAMPLE_COLUMNS, SESSION_COLUMNS, SQLITE_MIGRATIONS,
    insert_sql,
};
use super::{Abandoned, pid_alive};
use crate::session::{SessionMeta, SessionStatus};

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
        })
    }
}

impl RowGet for rusqlite::Row<'_> {
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, String> {
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

/// Runs the migrations not yet applied, in one `IMMEDIATE` transaction (so
/// two processes opening a new file at once apply them once). Returns how
/// many it applied.
fn migrate(conn: &mut rusqlite::Connection, path: &str) -> Result<usize, StoreError> {
    let err = |e| error::sqlite("migrate", path, e);
    let latest = SQLITE_MIGRATIONS.last().map_or(0, |m| m.0);
    // The common case, an up-to-date store, needs no write lock (so opening
    // does not wait behind another process's writes).
    let up_to_date = conn
        .query_row(
            "SELECT coalesce(max(version), 0) = ?1 FROM schema_migrations",
            [latest],
            |r| r.get::<_, bool>(0),
        )
        .unwrap_or(false);
    if up_to_date {
        return Ok(0);
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY NOT NULL,
             applied_at TEXT NOT NULL
         ) STRICT",
    )
    .map_err(err)?;
    let current: i64 = tx
        .query_row(
            "SELECT coalesce(max(version), 0) FROM schema_migrations",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if current > latest {
        return Err(StoreError::SchemaTooNew {
            store: path.to_owned(),
            found: current,
            supported: latest,
        });
    }
    let mut applied = 0;
    for (version, sql) in SQLITE_MIGRATIONS.iter().filter(|m| m.0 > current) {
        if *version == PHASE_CHECK_VERSION {
            let unknown: Vec<String> = {
                let mut st = tx.prepare(&schema::unknown_phases_sql()).map_err(err)?;
                let rows = st.query_map([], |r| r.get(0)).map_err(err)?;
                rows.collect::<Result<_, _>>().map_err(err)?
            };
            if !unknown.is_empty() {
                return Err(invalid(
                    "migrate",
                    path,
                    schema::unknown_phases_message(&unknown),
                ));
            }
        }
        tx.execute_batch(sql).map_err(err)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at)
             VALUES (?1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            [version],
        )
        .map_err(err)?;
        applied += 1;
    }
    tx.commit().map_err(err)?;
    Ok(applied)
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
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(err)?;
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

fn select_sql(table: &str, cols: &[&str]) -> String {
    format!("SELECT {} FROM {table}", cols.join(", "))
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
                let writable = open_connection(&owned, mode)
                    .and_then(|mut c| migrate(&mut c, &owned).map(|_| c))
                    .and_then(|c| {
                        // A write-protected file opens "read-write" as read-only.
                        if c.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) {
                            Err(invalid("open", &owned, "read-only".into()))
                        } else {
                            Ok(c)
                        }
                    });
                let opened = match (writable, mode) {
                    (Ok(c), _) => Ok((c, true)),
                    (Err(e), OpenMode::Create) => Err(e),
                    (Err(_), OpenMode::Existing) => open_read_only(&owned).map(|c| (c, false)),
                };
                let (mut conn, writable) = match opened {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(writable));
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
        Ok((
            SqliteStore {
                jobs,
                path: path.into(),
            },
            writable,
        ))
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

    pub(crate) async fn migrate(&self) -> Result<usize, StoreError> {
        self.call("migrate", migrate).await
    }

    pub(crate) async fn schema_versions(&self) -> Result<Vec<i64>, StoreError> {
        self.call("read schema version", |c, p| {
            let err = |e| error::sqlite("read schema version", p, e);
            let mut st = c
                .prepare("SELECT version FROM schema_migrations ORDER BY version")
                .map_err(err)?;
            let rows = st.query_map([], |r| r.get(0)).map_err(err)?;
            rows.collect::<Result<Vec<i64>, _>>().map_err(err)
        })
        .await
    }

    pub(crate) async fn create_session(&self, cells: Vec<Cell>) -> Result<(), StoreError> {
        self.call("create session", move |c, p| {
            let sql = insert_sql("sessions", &SESSION_COLUMNS, false);
            c.prepare_cached(&sql)
                .and_then(|mut st| st.execute(params_from_iter(cells.iter())))
                .map_err(|e| error::sqlite("create session", p, e))?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn append_sample(&self, cells: Vec<Cell>) -> Result<(), StoreError> {
        self.call("append sample", move |c, p| {
            // One INSERT in autocommit mode is one committed transaction.
            let sql = insert_sql("samples", &SAMPLE_COLUMNS, false);
            c.prepare_cached(&sql)
                .and_then(|mut st| st.execute(params_from_iter(cells.iter())))
                .map_err(|e| error::sqlite("append sample", p, e))?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn finish_session(
        &self,
        id: String,
        status: SessionStatus,
        ended_at: String,
        cleanup: Option<Cell>,
        client_lag_p99_ms: Cell,
    ) -> Result<(), StoreError> {
        self.call("finish session", move |c, p| {
            let (status, reason) = schema::status_cells(&status);
            let cleanup_given = Cell::Bool(cleanup.is_some());
            let n = c
                .execute(
                    "UPDATE sessions SET status = ?2, status_reason = ?3, ended_at = ?4,
                         cleanup = CASE WHEN ?5 THEN ?6 ELSE cleanup END,
                         client_lag_p99_ms = ?7
                     WHERE id = ?1",
                    rusqlite::params![
                        id,
                        status,
                        reason,
                        ended_at,
                        cleanup_given,
                        cleanup.unwrap_or(Cell::Null),
                        client_lag_p99_ms
                    ],
                )
                .map_err(|e| error::sqlite("finish session", p, e))?;
            no_session_if_zero(n, "finish session", p, id)
        })
        .await
    }

    pub(crate) async fn set_cleanup(&self, id: String, cleanup: Cell) -> Result<(), StoreError> {
        self.call("set cleanup", move |c, p| {
            let n = c
                .execute(
                    "UPDATE sessions SET cleanup = ?2 WHERE id = ?1",
                    rusqlite::params![id, cleanup],
                )
                .map_err(|e| error::sqlite("set cleanup", p, e))?;
            no_session_if_zero(n, "set cleanup", p, id)
        })
        .await
    }

    pub(crate) async fn add_test_account(
        &self,
        session_id: String,
        account_id: String,
    ) -> Result<(), StoreError> {
        self.call("add test account", move |c, p| {
            let err = |e| error::sqlite("add test account", p, e);
            let known = c
                .prepare_cached("SELECT count(*) FROM sessions WHERE id = ?1")
                .and_then(|mut st| st.query_row([&session_id], |r| r.get::<_, i64>(0)))
                .map_err(err)?;
            no_session_if_zero(known as usize, "add test account", p, session_id.clone())?;
            // One INSERT in autocommit mode: committed when this returns.
            c.prepare_cached(
                "INSERT INTO test_accounts (session_id, account_id) VALUES (?1, ?2)
                 ON CONFLICT (session_id, account_id) DO NOTHING",
            )
            .and_then(|mut st| st.execute([&session_id, &account_id]))
            .map_err(err)?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn test_accounts(
        &self,
        session_id: Option<String>,
    ) -> Result<Vec<(String, String)>, StoreError> {
        self.call("read test accounts", move |c, p| {
            let err = |e| error::sqlite("read test accounts", p, e);
            let mut st = c
                .prepare_cached(
                    "SELECT session_id, account_id FROM test_accounts
                     WHERE ?1 IS NULL OR session_id = ?1 ORDER BY id",
                )
                .map_err(err)?;
            let rows = st
                .query_map([&session_id], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(err)?;
            rows.collect::<Result<_, _>>().map_err(err)
        })
        .await
    }

    pub(crate) async fn sessions(&self) -> Result<Vec<SessionMeta>, StoreError> {
        self.call("list sessions", |c, p| {
            let sql = format!(
                "{} ORDER BY started_at DESC, id DESC",
                select_sql("sessions", &SESSION_COLUMNS)
            );
            query_sessions(c, p, "list sessions", &sql, &[])
        })
        .await
    }

    pub(crate) async fn session(&self, id: String) -> Result<Vec<SessionMeta>, StoreError> {
        self.call("find session", move |c, p| {
            let base = select_sql("sessions", &SESSION_COLUMNS);
            let exact = query_sessions(c, p, "find session", &format!("{base} WHERE id = ?1"), &[
                &id,
            ])?;
            if !exact.is_empty() {
                return Ok(exact);
            }
            let sql = format!(
                "{base} WHERE substr(id, 1, length(?1)) = ?1 ORDER BY started_at DESC, id DESC LIMIT 10"
            );
            query_sessions(c, p, "find session", &sql, &[&id])
        })
        .await
    }

    pub(crate) async fn mark_abandoned(
        &self,
        host: String,
        reason: String,
    ) -> Result<Vec<Abandoned>, StoreError> {
        self.call("mark abandoned sessions", move |c, p| {
            let op = "mark abandoned sessions";
            let err = |e| error::sqlite(op, p, e);
            let running: Vec<(String, Option<i64>)> = {
                let mut st = c
                    .prepare("SELECT id, pid FROM sessions WHERE status = 'running' AND host = ?1")
                    .map_err(err)?;
                let rows = st
                    .query_map([&host], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(err)?;
                rows.collect::<Result<_, _>>().map_err(err)?
            };
            let mut marked = Vec::new();
            for (id, pid) in running {
                let Some(pid) = pid.and_then(|p| u32::try_from(p).ok()) else {
                    continue;
                };
                if pid_alive(pid) {
                    continue;
                }
                let n = c
                    .execute(
                        "UPDATE sessions SET status = 'partial', status_reason = ?2
                         WHERE id = ?1 AND status = 'running'",
                        rusqlite::params![id, reason],
                    )
                    .map_err(err)?;
                if n == 1 {
                    marked.push(Abandoned { id, pid });
                }
            }
            Ok(marked)
        })
        .await
    }

    pub(crate) async fn insert_imported(
        &self,
        session: Vec<Cell>,
        samples: Vec<Vec<Cell>>,
    ) -> Result<(), StoreError> {
        self.call("import session", move |c, p| {
            let err = |e| error::sqlite("import session", p, e);
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            tx.execute(
                &insert_sql("sessions", &SESSION_COLUMNS, false),
                params_from_iter(session.iter()),
            )
            .map_err(err)?;
            {
                let mut st = tx
                    .prepare_cached(&insert_sql("samples", &SAMPLE_COLUMNS, false))
                    .map_err(err)?;
                for cells in &samples {
                    st.execute(params_from_iter(cells.iter())).map_err(err)?;
                }
            }
            tx.commit().map_err(err)
        })
        .await
    }
}

fn invalid(op: &'static str, path: &str, message: String) -> StoreError {
    StoreError::Invalid {
        op,
        store: path.to_owned(),
        message,
    }
}

fn no_session_if_zero(
    n: usize,
    op: &'static str,
    path: &str,
    id: String,
) -> Result<(), StoreError> {
    if n == 0 {
        Err(StoreError::NoSession {
            op,
            store: path.to_owned(),
            id,
        })
    } else {
        Ok(())
    }
}

fn query_sessions(
    c: &rusqlite::Connection,
    p: &str,
    op: &'static str,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<Vec<SessionMeta>, StoreError> {
    let mut st = c.prepare_cached(sql).map_err(|e| error::sqlite(op, p, e))?;
    let mut rows = st.query(params).map_err(|e| error::sqlite(op, p, e))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(|e| error::sqlite(op, p, e))? {
        out.push(schema::session_from(row).map_err(|m| invalid(op, p, m))?);
    }
    Ok(out)
}

mod runs;
mod scan;
mod spans;

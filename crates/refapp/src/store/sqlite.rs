//! The SQLite store (rusqlite, bundled SQLite).
//!
//! rusqlite is synchronous, so every call runs on tokio's blocking pool
//! (`spawn_blocking`), never on an async worker, except in the `blocking`
//! known-bad mode, where it deliberately runs right on the caller's thread.
//!
//! One writer connection behind a mutex takes every write: SQLite allows a
//! single writer anyway, and queueing in-process avoids SQLite's busy
//! handler, which sleeps in 1–100 ms steps when connections contend. Reads
//! use a small pool of extra connections; WAL mode lets them run while the
//! writer commits.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};

use super::{
    MessageStatus, NewMessage, Role, StoreError, StoreOptions, StoredMessage, UserRecord,
    passage_ids_from_text, passage_ids_to_text,
};

/// Idle read connections kept for reuse.
const MAX_IDLE_READERS: usize = 32;

const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    r#"
CREATE TABLE IF NOT EXISTS users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS tokens (
    token_hash TEXT PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    expires_at INTEGER NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS tokens_user_id ON tokens(user_id);
CREATE TABLE IF NOT EXISTS conversations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title      TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS conversations_user_id ON conversations(user_id);
CREATE TABLE IF NOT EXISTS messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content         TEXT NOT NULL,
    passage_ids     TEXT,
    status          TEXT NOT NULL CHECK (status IN ('complete', 'interrupted', 'failed')),
    request_id      TEXT,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS messages_conversation_id ON messages(conversation_id, id);
"#,
)];

struct Inner {
    path: PathBuf,
    options: StoreOptions,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
}

/// The SQLite store. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
    /// Run calls on the caller's thread (the `blocking` known-bad mode).
    blocking: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves a connection that is still
    // usable (SQLite rolls back an unfinished statement); keep serving.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn classify(e: rusqlite::Error) -> StoreError {
    match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::SystemIoFailure
            | ErrorCode::DiskFull
            | ErrorCode::ReadOnly
            | ErrorCode::OutOfMemory
            | ErrorCode::PermissionDenied => StoreError::Unavailable(e.to_string()),
            ErrorCode::ConstraintViolation
                if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                    || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
            {
                StoreError::Conflict
            }
            _ => StoreError::Other(e.to_string()),
        },
        _ => StoreError::Other(e.to_string()),
    }
}

fn open_connection(path: &PathBuf, options: StoreOptions) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(options.timeout)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    // WAL + NORMAL: a commit is durable against a process crash, and an
    // fsync happens only at checkpoints.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_version (
            version    INTEGER PRIMARY KEY,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        );",
    )?;
    for (version, sql) in MIGRATIONS {
        let done: Option<i64> = tx
            .query_row(
                "SELECT version FROM schema_version WHERE version = ?1",
                [version],
                |r| r.get(0),
            )
            .optional()?;
        if done.is_none() {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_version (version) VALUES (?1)",
                [version],
            )?;
        }
    }
    tx.commit()
}

impl Inner {
    fn checkout(&self) -> rusqlite::Result<Connection> {
        match lock(&self.readers).pop() {
            Some(c) => Ok(c),
            None => open_connection(&self.path, self.options),
        }
    }

    fn checkin(&self, conn: Connection) {
        let mut idle = lock(&self.readers);
        if idle.len() < MAX_IDLE_READERS {
            idle.push(conn);
        }
    }
}

impl SqliteStore {
    /// Open or create the file, switch it to WAL and run the migrations.
    pub async fn open(path: PathBuf, options: StoreOptions) -> Result<SqliteStore, StoreError> {
        let opened = tokio::task::spawn_blocking(move || -> rusqlite::Result<Inner> {
            let mut writer = open_connection(&path, options)?;
            let _mode: String =
                writer.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
            migrate(&mut writer)?;
            Ok(Inner {
                path,
                options,
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
            })
        })
        .await
        .map_err(|e| StoreError::Other(format!("opening the SQLite store: {e}")))?;
        match opened {
            Ok(inner) => Ok(SqliteStore {
                blocking: inner.options.blocking,
                inner: Arc::new(inner),
            }),
            // Whatever stops the file from opening or migrating, the
            // database is not there for the app.
            Err(e) => Err(match classify(e) {
                StoreError::Unavailable(m) | StoreError::Other(m) => StoreError::Unavailable(m),
                StoreError::Conflict => StoreError::Other("migration conflict".into()),
            }),
        }
    }

    /// The same store, with its calls run on the caller's thread or not.
    pub fn with_blocking(&self, blocking: bool) -> SqliteStore {
        SqliteStore {
            inner: self.inner.clone(),
            blocking,
        }
    }

    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> rusqlite::Result<T> + Send + 'static,
    {
        if self.blocking {
            // The known-bad mode: SQLite runs on the async worker thread,
            // stalling every other task scheduled there meanwhile.
            return f(&self.inner).map_err(classify);
        }
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| StoreError::Other(format!("database task: {e}")))?
            .map_err(classify)
    }

    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.run(move |inner| {
            let conn = inner.checkout()?;
            let r = f(&conn);
            inner.checkin(conn);
            r
        })
        .await
    }

    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.run(move |inner| f(&mut lock(&inner.writer))).await
    }

    pub(super) async fn ping(&self) -> Result<(), StoreError> {
        self.read(|c| c.query_row("SELECT 1", [], |_| Ok(()))).await
    }

    pub(super) async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
    ) -> Result<i64, StoreError> {
        let (email, hash) = (email.to_string(), password_hash.to_string());
        self.write(move |c| {
            c.prepare_cached(
                "INSERT INTO users (email, password_hash) VALUES (?1, ?2) RETURNING id",
            )?
            .query_row(params![email, hash], |r| r.get(0))
        })
        .await
    }

    pub(super) async fn user_by_email(
        &self,
        email: &str,
    ) -> Result<Option<UserRecord>, StoreError> {
        let email = email.to_string();
        self.read(move |c| {
            c.prepare_cached("SELECT id, password_hash FROM users WHERE email = ?1")?
                .query_row([email], |r| {
                    Ok(UserRecord {
                        id: r.get(0)?,
                        password_hash: r.get(1)?,
                    })
                })
                .optional()
        })
        .await
    }

    pub(super) async fn delete_user(&self, user_id: i64) -> Result<bool, StoreError> {
        self.write(move |c| {
            c.prepare_cached("DELETE FROM users WHERE id = ?1")?
                .execute([user_id])
                .map(|n| n > 0)
        })
        .await
    }

    pub(super) async fn create_token(
        &self,
        user_id: i64,
        token_hash: &str,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        let hash = token_hash.to_string();
        self.write(move |c| {
            c.prepare_cached(
                "INSERT INTO tokens (token_hash, user_id, expires_at) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![hash, user_id, expires_at])
            .map(|_| ())
        })
        .await
    }

    pub(super) async fn user_for_token(
        &self,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        let hash = token_hash.to_string();
        self.read(move |c| {
            c.prepare_cached(
                "SELECT user_id FROM tokens WHERE token_hash = ?1 AND expires_at > ?2",
            )?
            .query_row(params![hash, now], |r| r.get(0))
            .optional()
        })
        .await
    }

    pub(super) async fn create_conversation(
        &self,
        user_id: i64,
        title: &str,
    ) -> Result<i64, StoreError> {
        let title = title.to_string();
        self.write(move |c| {
            c.prepare_cached(
                "INSERT INTO conversations (user_id, title) VALUES (?1, ?2) RETURNING id",
            )?
            .query_row(params![user_id, title], |r| r.get(0))
        })
        .await
    }

    pub(super) async fn history(
        &self,
        user_id: i64,
        conversation_id: i64,
        limit: u32,
    ) -> Result<Option<Vec<StoredMessage>>, StoreError> {
        type Row = (
            Option<i64>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        // One round trip: the LEFT JOIN yields one all-NULL row for an empty
        // conversation of this user and no row at all for someone else's.
        let rows: Vec<Row> = self
            .read(move |c| {
                let mut st = c.prepare_cached(
                    "SELECT m.id, m.role, m.content, m.passage_ids, m.status, m.request_id, m.created_at
                     FROM conversations c LEFT JOIN messages m ON m.conversation_id = c.id
                     WHERE c.id = ?1 AND c.user_id = ?2
                     ORDER BY m.id DESC LIMIT ?3",
                )?;
                let rows = st.query_map(
                    params![conversation_id, user_id, i64::from(limit.max(1))],
                    |r| {
                        Ok((
                            r.get(0)?,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            r.get(4)?,
                            r.get(5)?,
                            r.get(6)?,
                        ))
                    },
                )?;
                rows.collect()
            })
            .await?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(rows.len());
        for (id, role, content, passages, status, request_id, created_at) in rows {
            let (Some(id), Some(role), Some(content), Some(status), Some(created_at)) =
                (id, role, content, status, created_at)
            else {
                continue; // the empty conversation's NULL row
            };
            out.push(StoredMessage {
                id,
                role: Role::parse(&role)?,
                content,
                passage_ids: passage_ids_from_text(passages)?,
                status: MessageStatus::parse(&status)?,
                request_id,
                created_at,
            });
        }
        out.truncate(limit as usize);
        out.reverse();
        Ok(Some(out))
    }

    pub(super) async fn count_messages(&self, conversation_id: i64) -> Result<i64, StoreError> {
        self.read(move |c| {
            c.prepare_cached("SELECT count(*) FROM messages WHERE conversation_id = ?1")?
                .query_row([conversation_id], |r| r.get(0))
        })
        .await
    }

    pub(super) async fn append_exchange(
        &self,
        conversation_id: i64,
        question: NewMessage,
        answer: NewMessage,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            {
                let mut st = tx.prepare_cached(
                    "INSERT INTO messages (conversation_id, role, content, passage_ids, status, request_id)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for m in [&question, &answer] {
                    st.execute(params![
                        conversation_id,
                        m.role.as_str(),
                        m.content,
                        passage_ids_to_text(&m.passage_ids),
                        m.status.as_str(),
                        m.request_id
                    ])?;
                }
            }
            tx.commit()
        })
        .await
    }
}

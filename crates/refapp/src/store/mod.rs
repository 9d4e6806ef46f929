//! Users, tokens, conversations and messages, in SQLite (default) or
//! PostgreSQL. One enum with two implementations keeps the async methods
//! free of boxing; both run the same numbered migrations at open.
//!
//! Deleting a user deletes its tokens, conversations and messages
//! (`ON DELETE CASCADE`), so a test can clean up by user id alone.

mod postgres;
mod sqlite;

use std::time::Duration;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

use crate::config::Database;

/// A store operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached, is locked past the timeout, or is
    /// out of resources: the request gets 503.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A unique value (an email) is taken.
    #[error("already exists")]
    Conflict,
    /// Anything else (a bug or a broken schema): the request gets 500.
    #[error("database error: {0}")]
    Other(String),
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The app's user.
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }

    fn parse(s: &str) -> Result<Role, StoreError> {
        match s {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            other => Err(StoreError::Other(format!("unknown role {other:?}"))),
        }
    }
}

/// How a stored message ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// Written in full.
    Complete,
    /// The client went away mid-answer; the text is what had arrived.
    Interrupted,
    /// The upstream failed mid-answer; the text is what had arrived.
    Failed,
}

impl MessageStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Complete => "complete",
            MessageStatus::Interrupted => "interrupted",
            MessageStatus::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Result<MessageStatus, StoreError> {
        match s {
            "complete" => Ok(MessageStatus::Complete),
            "interrupted" => Ok(MessageStatus::Interrupted),
            "failed" => Ok(MessageStatus::Failed),
            other => Err(StoreError::Other(format!("unknown status {other:?}"))),
        }
    }
}

/// A message to store.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Passages the answer was grounded on (document path only).
    pub passage_ids: Option<Vec<String>>,
    /// How it ended.
    pub status: MessageStatus,
    /// The `X-Request-Id` of the request that produced it.
    pub request_id: String,
}

/// A stored message.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoredMessage {
    /// Row id.
    pub id: i64,
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Passages the answer was grounded on (document path only).
    pub passage_ids: Option<Vec<String>>,
    /// How it ended.
    pub status: MessageStatus,
    /// The request that produced it.
    pub request_id: Option<String>,
    /// When it was stored (UTC, RFC 3339).
    pub created_at: String,
}

/// A user row, for login.
#[derive(Debug, Clone)]
pub struct UserRecord {
    /// Row id.
    pub id: i64,
    /// The PHC-format argon2 hash.
    pub password_hash: String,
}

/// How the store behaves.
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions {
    /// How long an operation may wait for a lock or a connection.
    pub timeout: Duration,
    /// Run SQLite calls on the calling (async) thread: the `--blocking-db`
    /// known-bad mode. Ignored by PostgreSQL, which `Config` rejects it for.
    pub blocking: bool,
}

/// A store: SQLite or PostgreSQL. Cheap to clone.
#[derive(Clone)]
pub enum Store {
    /// A SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL pool.
    Postgres(PgStore),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Store::Sqlite($s) => $e,
            Store::Postgres($s) => $e,
        }
    };
}

impl Store {
    /// Open (or create) the database and run the migrations.
    pub async fn open(db: &Database, options: StoreOptions) -> Result<Store, StoreError> {
        match db {
            Database::Sqlite(path) => Ok(Store::Sqlite(
                SqliteStore::open(path.clone(), options).await?,
            )),
            Database::Postgres(url) => Ok(Store::Postgres(PgStore::open(url, options).await?)),
        }
    }

    /// The same store with SQLite calls run on the calling (async) thread
    /// or not (the `blocking` option, per caller). PostgreSQL is returned
    /// as it is: it has no synchronous driver here.
    pub fn with_blocking(&self, blocking: bool) -> Store {
        match self {
            Store::Sqlite(s) => Store::Sqlite(s.with_blocking(blocking)),
            Store::Postgres(p) => Store::Postgres(p.clone()),
        }
    }

    /// Which backend, for `/health`.
    pub fn backend(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }

    /// One trivial query.
    pub async fn ping(&self) -> Result<(), StoreError> {
        dispatch!(self, s => s.ping().await)
    }

    /// A new user; [`StoreError::Conflict`] when the email is taken.
    pub async fn create_user(&self, email: &str, password_hash: &str) -> Result<i64, StoreError> {
        dispatch!(self, s => s.create_user(email, password_hash).await)
    }

    /// The user with this (normalised) email.
    pub async fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>, StoreError> {
        dispatch!(self, s => s.user_by_email(email).await)
    }

    /// Delete a user and, by cascade, its tokens, conversations and messages.
    /// True when the user existed.
    pub async fn delete_user(&self, user_id: i64) -> Result<bool, StoreError> {
        dispatch!(self, s => s.delete_user(user_id).await)
    }

    /// Store a token hash for a user, valid until `expires_at` (Unix seconds).
    pub async fn create_token(
        &self,
        user_id: i64,
        token_hash: &str,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        dispatch!(self, s => s.create_token(user_id, token_hash, expires_at).await)
    }

    /// The user a token hash belongs to, if it has not expired by `now`
    /// (Unix seconds).
    pub async fn user_for_token(
        &self,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        dispatch!(self, s => s.user_for_token(token_hash, now).await)
    }

    /// A new conversation owned by `user_id`.
    pub async fn create_conversation(&self, user_id: i64, title: &str) -> Result<i64, StoreError> {
        dispatch!(self, s => s.create_conversation(user_id, title).await)
    }

    /// The last `limit` messages of a conversation, oldest first; `None`
    /// when the conversation does not exist or belongs to someone else.
    pub async fn history(
        &self,
        user_id: i64,
        conversation_id: i64,
        limit: u32,
    ) -> Result<Option<Vec<StoredMessage>>, StoreError> {
        dispatch!(self, s => s.history(user_id, conversation_id, limit).await)
    }

    /// One cheap query about a conversation: the unit of `--db-roundtrips`.
    pub async fn count_messages(&self, conversation_id: i64) -> Result<i64, StoreError> {
        dispatch!(self, s => s.count_messages(conversation_id).await)
    }

    /// Store a question and its answer in one transaction.
    pub async fn append_exchange(
        &self,
        conversation_id: i64,
        question: NewMessage,
        answer: NewMessage,
    ) -> Result<(), StoreError> {
        dispatch!(self, s => s.append_exchange(conversation_id, question, answer).await)
    }
}

fn passage_ids_to_text(ids: &Option<Vec<String>>) -> Option<String> {
    ids.as_ref()
        .map(|v| serde_json::Value::from(v.clone()).to_string())
}

fn passage_ids_from_text(s: Option<String>) -> Result<Option<Vec<String>>, StoreError> {
    s.map(|t| {
        serde_json::from_str::<Vec<String>>(&t)
            .map_err(|e| StoreError::Other(format!("bad passage_ids {t:?}: {e}")))
    })
    .transpose()
}

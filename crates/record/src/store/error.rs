//! [`StoreError`]: what failed, on which store, why, and what to check.

use std::error::Error as _;

/// An error from a store or from reading an export.
///
/// Every variant names the operation and the store (a SQLite path, or a
/// PostgreSQL URL with its password masked), keeps the source error, and
/// where the cause is recognisable carries a hint for the person at the
/// terminal ("disk full?", "is PostgreSQL running on 127.0.0.1:5432?").
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("{op} failed on SQLite store {path}: {source}{}", hint_suffix(.hint))]
    Sqlite {
        /// The store operation, e.g. "append sample".
        op: &'static str,
        /// The database file.
        path: String,
        /// What SQLite said (boxed: it is large, and errors are rare).
        #[source]
        source: Box<rusqlite::Error>,
        /// What to check.
        hint: Option<String>,
    },
    /// PostgreSQL reported an error, or the connection to it failed.
    #[error("{op} failed on PostgreSQL store {url}: {}{}", chain(.source), hint_suffix(.hint))]
    Postgres {
        /// The store operation.
        op: &'static str,
        /// The URL, password masked.
        url: String,
        /// What the driver said.
        #[source]
        source: tokio_postgres::Error,
        /// What to check.
        hint: Option<String>,
    },
    /// No PostgreSQL connection could be had from the pool.
    #[error("{op} failed on PostgreSQL store {url}: {}{}", chain(.source), hint_suffix(.hint))]
    Pool {
        /// The store operation.
        op: &'static str,
        /// The URL, password masked.
        url: String,
        /// What the pool said.
        #[source]
        source: deadpool_postgres::PoolError,
        /// What to check.
        hint: Option<String>,
    },
    /// The PostgreSQL URL, or its TLS settings (`sslmode`, `sslrootcert`), cannot be used.
    #[error("invalid PostgreSQL URL {url}: {}", chain(.source))]
    BadUrl {
        /// The URL, password masked.
        url: String,
        /// What is wrong with it.
        #[source]
        source: firsttoken_pgtls::PgTlsError,
    },
    /// A value cannot be stored (e.g. a non-finite time) or a stored value cannot be read back.
    #[error("{op} on {store}: {message}")]
    Invalid {
        /// The store operation.
        op: &'static str,
        /// The store (path or masked URL).
        store: String,
        /// Which field and what is wrong with it.
        message: String,
    },
    /// No session has this id.
    #[error("{op} on {store}: no session {id:?}")]
    NoSession {
        /// The store operation.
        op: &'static str,
        /// The store (path or masked URL).
        store: String,
        /// The id asked for.
        id: String,
    },
    /// A session id prefix matches more than one session.
    #[error("session id prefix {prefix:?} is ambiguous on {store}: it matches {}", .matches.join(", "))]
    AmbiguousSession {
        /// The store (path or masked URL).
        store: String,
        /// The prefix asked for.
        prefix: String,
        /// Some of the ids it matches.
        matches: Vec<String>,
    },
    /// A command that only reads was given a SQLite path with no file.
    #[error(
        "no such store: {path} (a store is created by `firsttoken run`, `demo` or `import`; give its path with --store)"
    )]
    NoStore {
        /// The path as given.
        path: String,
    },
    /// The store was written by a newer firsttoken.
    #[error(
        "{store} has schema version {found}, newer than this firsttoken knows ({supported}); upgrade firsttoken"
    )]
    SchemaTooNew {
        /// The store (path or masked URL).
        store: String,
        /// Highest migration applied to the store.
        found: i64,
        /// Highest migration this build knows.
        supported: i64,
    },
    /// The SQLite store's writer thread is gone (it could not start, or panicked).
    #[error("{op} failed on SQLite store {path}: the store's writer thread has stopped")]
    WriterGone {
        /// The store operation.
        op: &'static str,
        /// The database file.
        path: String,
    },
    /// The SQLite writer thread could not be started.
    #[error("starting the writer thread of SQLite store {path}: {source}")]
    Thread {
        /// The database file.
        path: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// Reading an export failed.
    #[error("reading the export, line {line}: {source}")]
    Read {
        /// 1-based line number.
        line: usize,
        /// What the reader said.
        #[source]
        source: std::io::Error,
    },
    /// A line of an export is not a record this version understands.
    #[error("reading the export, line {line}: {message}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// An export has samples of a session but no session record for it.
    #[error(
        "the export has samples of session {session_id:?} but no session record for it (firsttoken export --format jsonl writes one)"
    )]
    NoSessionRecord {
        /// The session the samples name.
        session_id: String,
    },
    /// An export has spans or engine scrapes of a session but no session
    /// record for it.
    #[error(
        "a span or engine scrape names session {session_id:?}, which has no session line; nothing was imported"
    )]
    NoSpanSession {
        /// The session the spans or scrapes name.
        session_id: String,
    },
    /// An export holds a session line and not one sample of it.
    #[error("session {session_id:?} has no samples; nothing was imported")]
    NoSamples {
        /// The session.
        session_id: String,
    },
    /// An export holds two session lines with one id.
    #[error(
        "reading the export, line {line}: a second session line for session {session_id:?}; nothing was imported"
    )]
    DuplicateSession {
        /// 1-based line number of the second line.
        line: usize,
        /// The session.
        session_id: String,
    },
    /// An export holds no session line.
    #[error(
        "the export holds no session line: nothing was imported (`firsttoken export --store STORE --session ID` writes one first)"
    )]
    NoSessions,
    /// An export changed between the check that read it whole and the
    /// pass that stores it.
    #[error(
        "reading the export, line {line}: the file changed after it was checked (it no longer holds what the check read there)"
    )]
    Changed {
        /// 1-based line number.
        line: usize,
    },
    /// Writing an export failed.
    #[error("writing the export: {source}")]
    Write {
        /// What the writer said.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// The hint, if the cause was recognised.
    pub fn hint(&self) -> Option<&str> {
        match self {
            StoreError::Sqlite { hint, .. }
            | StoreError::Postgres { hint, .. }
            | StoreError::Pool { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// True when the error is about reaching the store (connection refused,
    /// dropped, timed out) rather than about the data or the SQL.
    pub fn is_connection(&self) -> bool {
        match self {
            StoreError::Postgres { source, .. } => is_pg_connection_error(source),
            StoreError::Pool { source, .. } => is_pool_connection_error(source),
            StoreError::WriterGone { .. } => true,
            _ => false,
        }
    }
}

/// An error and its sources, joined with ": " (tokio-postgres and deadpool
/// keep the useful part, e.g. the server's message, in the source). A
/// server error shows its SQLSTATE, detail and hint.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let text = match err.downcast_ref::<tokio_postgres::error::DbError>() {
            Some(db) => {
                let mut t = format!(
                    "{}: {} (SQLSTATE {})",
                    db.severity(),
                    db.message(),
                    db.code().code()
                );
                if let Some(d) = db.detail() {
                    t.push_str(&format!("; detail: {d}"));
                }
                if let Some(h) = db.hint() {
                    t.push_str(&format!("; server hint: {h}"));
                }
                t
            }
            None => err.to_string(),
        };
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        cur = err.source();
    }
    out
}

fn hint_suffix(hint: &Option<String>) -> String {
    match hint {
        Some(h) => format!(" (hint: {h})"),
        None => String::new(),
    }
}

/// `url` with any password replaced by `***`, both in the user-info part
/// (`postgres://user:pw@host`) and in a `password=` query parameter.
pub fn mask_url(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let auth_start = scheme_end + 3;
        let auth_end = out[auth_start..]
            .find(['/', '?'])
            .map_or(out.len(), |i| auth_start + i);
        // The user-info ends at the last '@' of the authority (a password may contain '@').
        if let Some(at) = out[auth_start..auth_end].rfind('@') {
            let userinfo = &out[auth_start..auth_start + at];
            if let Some(colon) = userinfo.find(':') {
                let from = auth_start + colon + 1;
                out.replace_range(from..auth_start + at, "***");
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let masked: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_owned(),
            })
            .collect();
        out = format!("{head}{}", masked.join("&"));
    }
    out
}

/// Wraps a rusqlite error with the operation, the path and a hint.
pub(crate) fn sqlite(op: &'static str, path: &str, source: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode as C;
    let hint = match source.sqlite_error_code() {
        Some(C::DiskFull) => Some("disk full?"),
        Some(C::CannotOpen) => {
            Some("does the directory exist, and may this user create files in it?")
        }
        Some(C::ReadOnly) => Some("is the database file or its directory read-only?"),
        Some(C::PermissionDenied) => Some("permission denied: check the file's owner and mode"),
        Some(C::DatabaseBusy) | Some(C::DatabaseLocked) => {
            Some("another process held the database lock for too long")
        }
        Some(C::SystemIoFailure) => Some(
            "I/O error: disk full, file removed, or a network filesystem (SQLite WAL needs a local disk)?",
        ),
        Some(C::NotADatabase) | Some(C::DatabaseCorrupt) => {
            Some("this file is not a firsttoken SQLite database, or it is damaged")
        }
        _ => None,
    };
    StoreError::Sqlite {
        op,
        path: path.to_owned(),
        source: Box::new(source),
        hint: hint.map(str::to_owned),
    }
}

/// Wraps a tokio-postgres error with the operation, the masked URL and a hint.
pub(crate) fn postgres(
    op: &'static str,
    url: &str,
    server: &str,
    source: tokio_postgres::Error,
) -> StoreError {
    let hint = pg_hint(&source, server);
    StoreError::Postgres {
        op,
        url: url.to_owned(),
        source,
        hint,
    }
}

/// Wraps a pool error with the operation, the masked URL and a hint.
pub(crate) fn pool(
    op: &'static str,
    url: &str,
    server: &str,
    source: deadpool_postgres::PoolError,
) -> StoreError {
    use deadpool_postgres::PoolError as P;
    let hint = match &source {
        P::Backend(e) => pg_hint(e, server),
        P::Timeout(_) => Some(format!(
            "no connection to {server} became available in time: is PostgreSQL reachable?"
        )),
        _ => None,
    };
    StoreError::Pool {
        op,
        url: url.to_owned(),
        source,
        hint,
    }
}

fn pg_hint(e: &tokio_postgres::Error, server: &str) -> Option<String> {
    // Before the I/O check below: a failed TLS handshake is an io::Error too.
    if let Some(tls) = firsttoken_pgtls::hint(e) {
        return Some(tls);
    }
    if let Some(code) = e.code() {
        let hint = match code.code() {
            "28P01" | "28000" => "check the user and password in the URL (and pg_hba.conf)",
            "3D000" => "does the database exist? (create it with `createdb`)",
            "3F000" => "no schema to create tables in: does the search_path schema exist?",
            "42501" => "the user lacks a privilege (CREATE on the schema?)",
            "53100" => "disk full on the PostgreSQL server?",
            "53300" => "too many connections to the PostgreSQL server",
            "57P01" | "57P02" | "57P03" => "the server shut down or ended this connection",
            "23505" => "a row with this key already exists (a session id used twice?)",
            _ => return None,
        };
        return Some(hint.to_owned());
    }
    match io_source(e).map(std::io::Error::kind) {
        Some(std::io::ErrorKind::ConnectionRefused) => {
            Some(format!("is PostgreSQL running on {server}?"))
        }
        Some(_) => Some(format!("is {server} reachable?")),
        None => None,
    }
}

fn io_source(e: &tokio_postgres::Error) -> Option<&std::io::Error> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = e.source();
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        cur = err.source();
    }
    None
}

/// True for errors that mean "the connection is unusable", after which a
/// fresh connection may succeed: a closed or broken socket, a timeout, or
/// the server ending the session (SQLSTATE class 08 and 57P01-57P03).
pub(crate) fn is_pg_connection_error(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() || io_source(e).is_some() {
        return true;
    }
    match e.code() {
        Some(code) => {
            let c = code.code();
            c.starts_with("08") || matches!(c, "57P01" | "57P02" | "57P03")
        }
        None => e.to_string().contains("timeout"),
    }
}

pub(crate) fn is_pool_connection_error(e: &deadpool_postgres::PoolError) -> bool {
    use deadpool_postgres::PoolError as P;
    match e {
        P::Backend(e) => is_pg_connection_error(e),
        P::Timeout(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_passwords_in_urls() {
        assert_eq!(
            mask_url("postgres://ft:s3cr@t@db.example:5432/ft?sslmode=disable"),
            "postgres://ft:***@db.example:5432/ft?sslmode=disable"
        );
        assert_eq!(
            mask_url("postgresql://db/ft?user=ft&password=hunter2&application_name=x"),
            "postgresql://db/ft?user=ft&password=***&application_name=x"
        );
        assert_eq!(
            mask_url("postgres://postgres@127.0.0.1:5432/test"),
            "postgres://postgres@127.0.0.1:5432/test"
        );
        assert_eq!(mask_url("./firsttoken.db"), "./firsttoken.db");
    }

    #[test]
    fn sqlite_disk_full_gets_a_hint() {
        let e = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        let e = sqlite("append sample", "/tmp/x.db", e);
        assert_eq!(e.hint(), Some("disk full?"));
        let text = e.to_string();
        assert!(text.contains("append sample"), "{text}");
        assert!(text.contains("/tmp/x.db"), "{text}");
        assert!(text.contains("disk full?"), "{text}");
    }
}

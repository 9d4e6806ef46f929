//! SQL against the app's own database for test-account cleanup: PostgreSQL
//! for `postgres://` URLs, SQLite for a file path.

use crate::SessionError;

fn db_error(what: &str, e: impl std::fmt::Display) -> SessionError {
    SessionError::AppDatabase(format!("{what}: {e}"))
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Run a statement; returns the rows it changed.
pub async fn execute(url: &str, sql: &str) -> Result<u64, SessionError> {
    if is_postgres(url) {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .map_err(|e| db_error("cannot connect to the app database for cleanup", e))?;
        let task = tokio::spawn(conn);
        let n = client
            .execute(sql, &[])
            .await
            .map_err(|e| db_error("the cleanup delete failed", e))?;
        drop(client);
        let _ = task.await;
        Ok(n)
    } else {
        let (url, sql) = (url.to_string(), sql.to_string());
        tokio::task::spawn_blocking(move || -> Result<u64, SessionError> {
            let c = rusqlite::Connection::open(&url)
                .map_err(|e| db_error(&format!("cannot open the app database {url}"), e))?;
            c.execute_batch("PRAGMA foreign_keys = ON")
                .map_err(|e| db_error("cannot enable foreign keys", e))?;
            let n = c
                .execute(&sql, [])
                .map_err(|e| db_error("the cleanup delete failed", e))?;
            Ok(n as u64)
        })
        .await
        .map_err(|e| db_error("the cleanup task stopped", e))?
    }
}

/// Run a query returning one integer (the residual count).
pub async fn count(url: &str, sql: &str) -> Result<i64, SessionError> {
    if is_postgres(url) {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .map_err(|e| db_error("cannot connect to the app database for cleanup", e))?;
        let task = tokio::spawn(conn);
        let row = client
            .query_one(sql, &[])
            .await
            .map_err(|e| db_error("the cleanup count query failed", e))?;
        drop(client);
        let _ = task.await;
        row.try_get::<_, i64>(0)
            .map_err(|e| db_error("the count query must return one integer", e))
    } else {
        let (url, sql) = (url.to_string(), sql.to_string());
        tokio::task::spawn_blocking(move || -> Result<i64, SessionError> {
            let c = rusqlite::Connection::open(&url)
                .map_err(|e| db_error(&format!("cannot open the app database {url}"), e))?;
            c.query_row(&sql, [], |r| r.get::<_, i64>(0))
                .map_err(|e| db_error("the cleanup count query failed", e))
        })
        .await
        .map_err(|e| db_error("the cleanup task stopped", e))?
    }
}

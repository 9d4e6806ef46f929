//! SQL against the app's own database for test-account cleanup: PostgreSQL
//! for `postgres://` URLs, SQLite for a file path.

use anyhow::Context;

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Run a statement; returns the rows it changed.
pub async fn execute(url: &str, sql: &str) -> anyhow::Result<u64> {
    if is_postgres(url) {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .context("cannot connect to the app database for cleanup")?;
        let task = tokio::spawn(conn);
        let n = client
            .execute(sql, &[])
            .await
            .context("the cleanup delete failed")?;
        drop(client);
        let _ = task.await;
        Ok(n)
    } else {
        let (url, sql) = (url.to_string(), sql.to_string());
        tokio::task::spawn_blocking(move || -> anyhow::Result<u64> {
            let c = rusqlite::Connection::open(&url)
                .with_context(|| format!("cannot open the app database {url}"))?;
            c.execute_batch("PRAGMA foreign_keys = ON")?;
            Ok(c.execute(&sql, []).context("the cleanup delete failed")? as u64)
        })
        .await?
    }
}

/// Run a query returning one integer (the residual count).
pub async fn count(url: &str, sql: &str) -> anyhow::Result<i64> {
    if is_postgres(url) {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .context("cannot connect to the app database for cleanup")?;
        let task = tokio::spawn(conn);
        let row = client
            .query_one(sql, &[])
            .await
            .context("the cleanup count query failed")?;
        drop(client);
        let _ = task.await;
        row.try_get::<_, i64>(0)
            .context("the count query must return one integer")
    } else {
        let (url, sql) = (url.to_string(), sql.to_string());
        tokio::task::spawn_blocking(move || -> anyhow::Result<i64> {
            let c = rusqlite::Connection::open(&url)
                .with_context(|| format!("cannot open the app database {url}"))?;
            c.query_row(&sql, [], |r| r.get::<_, i64>(0))
                .context("the cleanup count query failed")
        })
        .await?
    }
}

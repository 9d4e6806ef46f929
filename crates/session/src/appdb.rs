//! SQL against the app's own database for test-account cleanup: PostgreSQL
//! for `postgres://` URLs (TLS as libpq: `sslmode`, `sslrootcert`; see
//! [`firsttoken_pgtls`]), SQLite for a file path.

use crate::SessionError;

fn db_error(what: &str, e: impl std::fmt::Display) -> SessionError {
    SessionError::AppDatabase(format!("{what}: {e}"))
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// One connection to the app's PostgreSQL and the task driving it.
async fn pg_connect(
    url: &str,
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), SessionError> {
    let target = firsttoken_pgtls::PgTarget::parse(url)
        .map_err(|e| db_error("the app database URL cannot be used for cleanup", e))?;
    let (client, conn) = target.connect().await.map_err(|e| {
        db_error(
            "cannot connect to the app database for cleanup",
            firsttoken_pgtls::describe(&e),
        )
    })?;
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok((client, task))
}

/// Run a statement; returns the rows it changed.
pub async fn execute(url: &str, sql: &str) -> Result<u64, SessionError> {
    if is_postgres(url) {
        let (client, task) = pg_connect(url).await?;
        let n = client
            .execute(sql, &[])
            .await
            .map_err(|e| db_error("the cleanup delete failed", firsttoken_pgtls::describe(&e)))?;
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
        let (client, task) = pg_connect(url).await?;
        let row = client.query_one(sql, &[]).await.map_err(|e| {
            db_error(
                "the cleanup count query failed",
                firsttoken_pgtls::describe(&e),
            )
        })?;
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

/// The cleanup tried before a session sends anything (issue 29, item 6):
/// one connection, each `deletes` then each `counts` statement run on no
/// id (`{ids}` already replaced by the caller with `NULL`) inside one
/// transaction that is rolled back, each count read as one integer. A
/// wrong URL, an unreachable database, bad SQL or a count that is no
/// integer fails here, naming the statement, instead of after the run.
pub async fn dry_run(url: &str, deletes: &[String], counts: &[String]) -> Result<(), SessionError> {
    let tried = |what: &str, sql: &str, e: &dyn std::fmt::Display| {
        db_error(
            &format!("app.cleanup's {what} {sql:?} failed when tried on no ids (rolled back)"),
            e,
        )
    };
    if is_postgres(url) {
        let (mut client, task) = pg_connect(url).await?;
        let tx = client.transaction().await.map_err(|e| {
            db_error(
                "cannot begin a transaction on the app database",
                firsttoken_pgtls::describe(&e),
            )
        })?;
        for sql in deletes {
            tx.execute(sql.as_str(), &[])
                .await
                .map_err(|e| tried("delete_sql", sql, &firsttoken_pgtls::describe(&e)))?;
        }
        for sql in counts {
            let row = tx
                .query_one(sql.as_str(), &[])
                .await
                .map_err(|e| tried("count_sql", sql, &firsttoken_pgtls::describe(&e)))?;
            row.try_get::<_, i64>(0).map_err(|e| {
                tried(
                    "count_sql",
                    sql,
                    &format!("it must return one integer: {e}"),
                )
            })?;
        }
        let _ = tx.rollback().await;
        drop(client);
        let _ = task.await;
        Ok(())
    } else {
        let (url, deletes, counts) = (url.to_string(), deletes.to_vec(), counts.to_vec());
        tokio::task::spawn_blocking(move || -> Result<(), SessionError> {
            if !std::path::Path::new(&url).is_file() {
                return Err(db_error(
                    "app.cleanup's database",
                    format!("{url} is no SQLite file here (a postgres:// URL, or the path of the app's SQLite file)"),
                ));
            }
            let mut c = rusqlite::Connection::open(&url)
                .map_err(|e| db_error(&format!("cannot open the app database {url}"), e))?;
            let tx = c
                .transaction()
                .map_err(|e| db_error("cannot begin a transaction on the app database", e))?;
            for sql in &deletes {
                tx.execute(sql, []).map_err(|e| tried("delete_sql", sql, &e))?;
            }
            for sql in &counts {
                tx.query_row(sql, [], |r| r.get::<_, i64>(0))
                    .map_err(|e| tried("count_sql", sql, &e))?;
            }
            // Dropped: rolled back.
            Ok(())
        })
        .await
        .map_err(|e| db_error("the cleanup task stopped", e))?
    }
}

#[cfg(test)]
mod tests {
    //! The cleanup connection over TLS. Needs `DATABASE_URL` and the server's
    //! CA in `FIRSTTOKEN_TEST_PG_CA` (`.ci/run` sets both); without them the
    //! tests say so loudly and pass.

    use super::*;

    fn tls_env() -> Option<(String, String)> {
        match (
            std::env::var("DATABASE_URL"),
            std::env::var("FIRSTTOKEN_TEST_PG_CA"),
        ) {
            (Ok(url), Ok(ca)) if !url.trim().is_empty() && !ca.trim().is_empty() => Some((url, ca)),
            _ => {
                eprintln!(
                    "SKIPPED: DATABASE_URL or FIRSTTOKEN_TEST_PG_CA not set (cleanup-over-TLS tests did not run)"
                );
                None
            }
        }
    }

    fn with_tls(url: &str, params: &str) -> String {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}{params}")
    }

    #[tokio::test]
    async fn cleanup_runs_over_verify_full_tls() {
        let Some((url, ca)) = tls_env() else { return };
        let url = with_tls(&url, &format!("sslmode=verify-full&sslrootcert={ca}"));
        let encrypted = count(
            &url,
            "SELECT count(*) FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl",
        )
        .await
        .expect("count over TLS");
        assert_eq!(encrypted, 1, "the cleanup connection is not encrypted");
        assert_eq!(
            execute(&url, "SET application_name = 'firsttoken-cleanup-test'")
                .await
                .expect("execute over TLS"),
            0
        );
    }

    #[tokio::test]
    async fn another_ca_is_refused_with_what_to_do() {
        let Some((url, _ca)) = tls_env() else { return };
        let dir = tempfile::tempdir().expect("temp dir");
        let wrong = dir.path().join("other-ca.crt");
        std::fs::write(&wrong, OTHER_CA).expect("write CA");
        let url = with_tls(
            &url,
            &format!("sslmode=verify-full&sslrootcert={}", wrong.display()),
        );
        let text = execute(&url, "SELECT 1").await.unwrap_err().to_string();
        assert!(text.contains("UnknownIssuer"), "{text}");
        assert!(text.contains("sslrootcert=/path/to/ca.crt"), "{text}");
    }

    /// A self-signed P-256 CA that signed nothing (public certificate only).
    const OTHER_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBqTCCAU+gAwIBAgIUTe/3K3qUAkLWHaWGeGrdTHOB8MgwCgYIKoZIzj0EAwIw
KTEnMCUGA1UEAwweZmlyc3R0b2tlbiB0ZXN0OiBzb21lIG90aGVyIENBMCAXDTI2
MTIwMTA1MzIyNloYDzIxMjYxMTA3MDUzMjI2WjApMScwJQYDVQQDDB5maXJzdHRv
a2VuIHRlc3Q6IHNvbWUgb3RoZXIgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC
AASrI2d+Uhct4IfCZzr2ekJ/E3vY2WoiwYNXBunMxU20/6X6sNXgM9rVbHeSplf0
De29e6T0IP69ERSdCNZZITiOo1MwUTAdBgNVHQ4EFgQU7MM1NDic7xkl3xvcLpG4
emTsbjEwHwYDVR0jBBgwFoAU7MM1NDic7xkl3xvcLpG4emTsbjEwDwYDVR0TAQH/
BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEAppm+cSogvPJnSR/ITyHRNuyC9RFT
DtEB3mK+6h0iaGMCIFqmGBRFbLWTHry6x7GiTBa49kHd1QZrx+ttZaO0Z+zy
-----END CERTIFICATE-----
";
}

//! Applying the ordered migrations, recorded in
//! `schema_migrations(version, applied_at)`: the bookkeeping written once;
//! each backend's migration files, the bookkeeping table's DDL, the clock
//! and PostgreSQL's advisory lock are its [`super::sql::Dialect`].

use super::schema::{self, Cell, PHASE_CHECK_VERSION, RowGet};
use super::sql::{RowAny, retry_once};
use super::{Store, StoreError};

const CURRENT_VERSION_SQL: &str =
    "SELECT coalesce(max(version), 0) AS version FROM schema_migrations";

fn version(r: &dyn RowAny) -> Result<i64, String> {
    r.opt_i64("version")?
        .ok_or_else(|| "version is NULL".to_string())
}

impl Store {
    /// Applies migrations not yet applied; returns how many (0 when the
    /// schema is current: running it again is a no-op). [`Store::open`]
    /// already does this. Migrations run in one transaction that excludes
    /// other migrators (SQLite's `IMMEDIATE`, a PostgreSQL advisory lock),
    /// so several processes opening a new store at once apply them once.
    pub async fn migrate(&self) -> Result<usize, StoreError> {
        let latest = self.dialect().migrations.last().map_or(0, |m| m.0);
        // The common case, an up-to-date store, takes no write lock (so
        // opening does not wait behind another process's writes). Before
        // the first migration the table is missing and this fails.
        let current = self
            .query("migrate", CURRENT_VERSION_SQL, vec![], version)
            .await;
        if matches!(current.as_deref(), Ok([v]) if *v == latest) {
            return Ok(0);
        }
        retry_once!(self, |_retry| self.migrate_once(latest).await)
    }

    async fn migrate_once(&self, latest: i64) -> Result<usize, StoreError> {
        let op = "migrate";
        let dialect = self.dialect();
        let mut tx = self.begin(op).await?;
        if let Some(lock) = dialect.migrate_lock {
            tx.batch(lock).await?;
        }
        tx.batch(dialect.schema_migrations_ddl).await?;
        let current = tx
            .query(CURRENT_VERSION_SQL, vec![], version)
            .await?
            .first()
            .copied()
            .unwrap_or(0);
        if current > latest {
            return Err(StoreError::SchemaTooNew {
                store: self.name(),
                found: current,
                supported: latest,
            });
        }
        let record = format!(
            "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, {})",
            dialect.now
        );
        let mut applied = 0;
        for (v, sql) in dialect.migrations.iter().filter(|m| m.0 > current) {
            if *v == PHASE_CHECK_VERSION {
                let unknown = tx
                    .query(&schema::unknown_phases_sql(), vec![], |r| r.text("phase"))
                    .await?;
                if !unknown.is_empty() {
                    return Err(self.invalid(op, schema::unknown_phases_message(&unknown)));
                }
            }
            tx.batch(sql).await?;
            tx.exec(&record, vec![Cell::Int(*v)]).await?;
            applied += 1;
        }
        tx.commit().await?;
        Ok(applied)
    }

    /// The applied migration versions, ascending.
    pub async fn schema_versions(&self) -> Result<Vec<i64>, StoreError> {
        self.query(
            "read schema version",
            "SELECT version FROM schema_migrations ORDER BY version",
            vec![],
            version,
        )
        .await
    }
}

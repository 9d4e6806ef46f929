//! The PostgreSQL store: a small deadpool pool of tokio-postgres connections.
//!
//! Several machines may write the same database at once (each session
//! records its host and vantage); rows only ever reference their own
//! session, so writers never contend for the same row.
//!
//! Durability: every sample is one `INSERT`, committed by the server before
//! [`PgStore::append_sample`] returns (PostgreSQL's own `synchronous_commit`
//! decides when that is on disk; its default `on` means flushed).
//!
//! A dropped connection (server restart, `pg_terminate_backend`, network
//! blip) is retried once on a fresh connection; if that fails too the error
//! is returned and the caller stops cleanly. A retried sample insert first
//! checks whether the first attempt committed after all, so a sample is
//! never stored twice.
//!
//! TLS follows libpq: `sslmode` (`disable`, `prefer` (the default),
//! `require`, `verify-ca`, `verify-full`) and `sslrootcert=/path/to/ca.crt`
//! in the URL's query (see [`firsttoken_pgtls`]). Prefix lookup needs
//! PostgreSQL ≥ 11.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::error::{self, StoreError, is_pg_connection_error, is_pool_connection_error, mask_url};
use super::schema::{
    self, Cell, PHASE_CHECK_VERSION, POSTGRES_MIGRATIONS, RowGet, SAMPLE_COLUMNS, SESSION_COLUMNS,
    insert_sql,
};
use super::{Abandoned, pid_alive};
use crate::session::{SessionMeta, SessionStatus};

/// A PostgreSQL store. Clones share the pool.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// The URL with its password masked, for messages.
    url: Arc<str>,
    /// `host:port` for hints.
    server: Arc<str>,
    reconnects: Arc<AtomicU64>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.url).finish()
    }
}

impl ToSql for Cell {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Cell::Null => Ok(IsNull::Yes),
            Cell::Int(v) => v.to_sql_checked(ty, out),
            Cell::Real(v) => v.to_sql_checked(ty, out),
            Cell::Text(s) => s.to_sql_checked(ty, out),
            Cell::Bool(b) => b.to_sql_checked(ty, out),
            Cell::Json(v) => v.to_sql_checked(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        // Each variant checks its own type in `to_sql`.
        true
    }

    to_sql_checked!();
}

impl RowGet for tokio_postgres::Row {
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, String> {
        self.try_get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn opt_i64(&self, col: &str) -> Result<Option<i64>, String> {
        self.try_get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn opt_text(&self, col: &str) -> Result<Option<String>, String> {
        self.try_get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn bool(&self, col: &str) -> Result<bool, String> {
        self.try_get(col).map_err(|e| format!("{col}: {e}"))
    }
    fn opt_json(&self, col: &str) -> Result<Option<serde_json::Value>, String> {
        self.try_get(col).map_err(|e| format!("{col}: {e}"))
    }
}

/// Why one attempt failed: the driver (maybe retryable) or anything else.
enum Fail {
    Pg(tokio_postgres::Error),
    Store(StoreError),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Fail {
        Fail::Pg(e)
    }
}

/// Runs `$body` with `$client: &mut Object` and `$retry: bool` (true on the
/// second attempt). A connection error on the first attempt discards that
/// connection and runs `$body` once more on a fresh one.
macro_rules! with_retry {
    ($self:ident, $op:expr, |$client:ident, $retry:ident| $body:block) => {{
        let op: &'static str = $op;
        let mut attempt = 0u32;
        loop {
            let $retry = attempt > 0;
            if $retry {
                $self.reconnects.fetch_add(1, Ordering::Relaxed);
            }
            let mut obj = match $self.pool.get().await {
                Ok(o) => o,
                Err(e) if attempt == 0 && is_pool_connection_error(&e) => {
                    attempt += 1;
                    continue;
                }
                Err(e) => break Err(error::pool(op, &$self.url, &$self.server, e)),
            };
            let result: Result<_, Fail> = {
                let $client: &mut Object = &mut obj;
                $body
            };
            match result {
                Ok(v) => break Ok(v),
                Err(Fail::Pg(e)) if attempt == 0 && is_pg_connection_error(&e) => {
                    // Keep the broken connection out of the pool.
                    drop(Object::take(obj));
                    attempt += 1;
                }
                Err(Fail::Pg(e)) => break Err(error::postgres(op, &$self.url, &$self.server, e)),
                Err(Fail::Store(e)) => break Err(e),
            }
        }
    }};
}

fn params(cells: &[Cell]) -> Vec<&(dyn ToSql + Sync)> {
    cells.iter().map(|c| c as &(dyn ToSql + Sync)).collect()
}

fn select_sql(table: &str, cols: &[&str]) -> String {
    format!("SELECT {} FROM {table}", cols.join(", "))
}

impl PgStore {
    /// Connects to `url`, applies pending migrations (under an advisory
    /// lock, so several processes may open a new database at once). Does
    /// not mark abandoned sessions; [`super::Store::open`] does.
    ///
    /// The URL may carry `options=-c search_path=…` (percent-encoded) to
    /// keep the tables in a schema of their own.
    pub async fn open(url: &str) -> Result<PgStore, StoreError> {
        let masked = mask_url(url);
        let target =
            firsttoken_pgtls::PgTarget::parse(url).map_err(|source| StoreError::BadUrl {
                url: masked.clone(),
                source,
            })?;
        let (mut cfg, tls) = target.into_parts();
        if cfg.get_application_name().is_none() {
            cfg.application_name("firsttoken");
        }
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(Duration::from_secs(10));
        }
        let server = describe_server(&cfg);
        let mgr = Manager::from_config(
            cfg,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(mgr)
            .max_size(4)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(30)))
            .create_timeout(Some(Duration::from_secs(15)))
            .recycle_timeout(Some(Duration::from_secs(5)))
            .build()
            .map_err(|e| StoreError::Invalid {
                op: "open",
                store: masked.clone(),
                message: e.to_string(),
            })?;
        let store = PgStore {
            pool,
            url: masked.into(),
            server: server.into(),
            reconnects: Arc::new(AtomicU64::new(0)),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The URL, password masked.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How many times an operation was retried on a fresh connection.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    fn invalid(&self, op: &'static str, message: String) -> Fail {
        Fail::Store(StoreError::Invalid {
            op,
            store: self.url.to_string(),
            message,
        })
    }

    pub(crate) async fn migrate(&self) -> Result<usize, StoreError> {
        let latest = POSTGRES_MIGRATIONS.last().map_or(0, |m| m.0);
        with_retry!(self, "migrate", |client, _retry| {
            async {
                let tx = client.transaction().await?;
                // Held until commit/rollback: concurrent openers of the same
                // schema wait here, then find the migrations applied.
                tx.batch_execute(
                    "SELECT pg_advisory_xact_lock(hashtext('firsttoken.migrate:' || coalesce(current_schema(), '')));
                     CREATE TABLE IF NOT EXISTS schema_migrations (
                         version    BIGINT PRIMARY KEY,
                         applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                     );",
                )
                .await?;
                let current: i64 = tx
                    .query_one("SELECT coalesce(max(version), 0) FROM schema_migrations", &[])
                    .await?
                    .get(0);
                if current > latest {
                    return Err(Fail::Store(StoreError::SchemaTooNew {
                        store: self.url.to_string(),
                        found: current,
                        supported: latest,
                    }));
                }
                let mut applied = 0usize;
                for (version, sql) in POSTGRES_MIGRATIONS.iter().filter(|m| m.0 > current) {
                    if *version == PHASE_CHECK_VERSION {
                        let unknown: Vec<String> = tx
                            .query(&schema::unknown_phases_sql(), &[])
                            .await?
                            .iter()
                            .map(|r| r.get(0))
                            .collect();
                        if !unknown.is_empty() {
                            return Err(self.invalid(
                                "migrate",
                                schema::unknown_phases_message(&unknown),
                            ));
                        }
                    }
                    tx.batch_execute(sql).await?;
                    tx.execute(
                        "INSERT INTO schema_migrations (version) VALUES ($1)",
                        &[version],
                    )
                    .await?;
                    applied += 1;
                }
                tx.commit().await?;
                Ok(applied)
            }
            .await
        })
    }

    pub(crate) async fn schema_versions(&self) -> Result<Vec<i64>, StoreError> {
        with_retry!(self, "read schema version", |client, _retry| {
            async {
                let rows = client
                    .query(
                        "SELECT version FROM schema_migrations ORDER BY version",
                        &[],
                    )
                    .await?;
                Ok(rows.iter().map(|r| r.get(0)).collect())
            }
            .await
        })
    }

    pub(crate) async fn create_session(&self, cells: Vec<Cell>) -> Result<(), StoreError> {
        let sql = insert_sql("sessions", &SESSION_COLUMNS, true);
        with_retry!(self, "create session", |client, retry| {
            async {
                // A retry may follow a commit whose reply was lost.
                let sql = if retry {
                    format!("{sql} ON CONFLICT (id) DO NOTHING")
                } else {
                    sql.clone()
                };
                client.execute(&sql, &params(&cells)).await?;
                Ok(())
            }
            .await
        })
    }

    pub(crate) async fn append_sample(&self, cells: Vec<Cell>) -> Result<(), StoreError> {
        let sql = insert_sql("samples", &SAMPLE_COLUMNS, true);
        with_retry!(self, "append sample", |client, retry| {
            async {
                if retry {
                    // The first attempt may have committed before the
                    // connection dropped: look for the very same sample.
                    let found = client
                        .query_opt(
                            "SELECT 1 FROM samples WHERE session_id = $1 AND seq = $2 AND phase = $3
                               AND actual_start_ms = $4 AND started_at = $5 AND warmup = $6 LIMIT 1",
                            &[&cells[0], &cells[1], &cells[2], &cells[7], &cells[8], &cells[11]],
                        )
                        .await?;
                    if found.is_some() {
                        return Ok(());
                    }
                }
                let st = client.prepare_cached(&sql).await?;
                client.execute(&st, &params(&cells)).await?;
                Ok(())
            }
            .await
        })
    }

    pub(crate) async fn finish_session(
        &self,
        id: String,
        status: SessionStatus,
        ended_at: String,
        cleanup: Option<Cell>,
        client_lag_p99_ms: Cell,
    ) -> Result<(), StoreError> {
        let (status, reason) = schema::status_cells(&status);
        let given = Cell::Bool(cleanup.is_some());
        let cleanup = cleanup.unwrap_or(Cell::Null);
        with_retry!(self, "finish session", |client, _retry| {
            async {
                let n = client
                    .execute(
                        "UPDATE sessions SET status = $2, status_reason = $3, ended_at = $4,
                             cleanup = CASE WHEN $5 THEN $6::jsonb ELSE cleanup END,
                             client_lag_p99_ms = $7
                         WHERE id = $1",
                        &[
                            &id,
                            &status,
                            &reason,
                            &ended_at,
                            &given,
                            &cleanup,
                            &client_lag_p99_ms,
                        ],
                    )
                    .await?;
                self.no_session_if_zero(n, "finish session", &id)
            }
            .await
        })
    }

    pub(crate) async fn set_cleanup(&self, id: String, cleanup: Cell) -> Result<(), StoreError> {
        with_retry!(self, "set cleanup", |client, _retry| {
            async {
                let n = client
                    .execute(
                        "UPDATE sessions SET cleanup = $2 WHERE id = $1",
                        &[&id, &cleanup],
                    )
                    .await?;
                self.no_session_if_zero(n, "set cleanup", &id)
            }
            .await
        })
    }

    pub(crate) async fn add_test_account(
        &self,
        session_id: String,
        account_id: String,
    ) -> Result<(), StoreError> {
        with_retry!(self, "add test account", |client, _retry| {
            async {
                // Idempotent, so a retry after a lost reply is harmless.
                let n = client
                    .execute(
                        "INSERT INTO test_accounts (session_id, account_id)
                         SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1)
                         ON CONFLICT (session_id, account_id) DO NOTHING",
                        &[&session_id, &account_id],
                    )
                    .await?;
                if n == 0 {
                    let known = client
                        .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&session_id])
                        .await?;
                    if known.is_none() {
                        return self.no_session_if_zero(0, "add test account", &session_id);
                    }
                }
                Ok(())
            }
            .await
        })
    }

    pub(crate) async fn test_accounts(
        &self,
        session_id: Option<String>,
    ) -> Result<Vec<(String, String)>, StoreError> {
        with_retry!(self, "read test accounts", |client, _retry| {
            async {
                let rows = client
                    .query(
                        "SELECT session_id, account_id FROM test_accounts
                         WHERE $1::text IS NULL OR session_id = $1 ORDER BY id",
                        &[&session_id],
                    )
                    .await?;
                rows.iter()
                    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                    .collect()
            }
            .await
        })
    }

    fn no_session_if_zero(&self, n: u64, op: &'static str, id: &str) -> Result<(), Fail> {
        if n == 0 {
            Err(Fail::Store(StoreError::NoSession {
                op,
                store: self.url.to_string(),
                id: id.to_owned(),
            }))
        } else {
            Ok(())
        }
    }

    fn sessions_from(
        &self,
        op: &'static str,
        rows: &[tokio_postgres::Row],
    ) -> Result<Vec<SessionMeta>, Fail> {
        rows.iter()
            .map(|r| schema::session_from(r).map_err(|m| self.invalid(op, m)))
            .collect()
    }

    pub(crate) async fn sessions(&self) -> Result<Vec<SessionMeta>, StoreError> {
        let sql = format!(
            "{} ORDER BY started_at DESC, id DESC",
            select_sql("sessions", &SESSION_COLUMNS)
        );
        with_retry!(self, "list sessions", |client, _retry| {
            async {
                let rows = client.query(&sql, &[]).await?;
                self.sessions_from("list sessions", &rows)
            }
            .await
        })
    }

    pub(crate) async fn session(&self, id: String) -> Result<Vec<SessionMeta>, StoreError> {
        let base = select_sql("sessions", &SESSION_COLUMNS);
        with_retry!(self, "find session", |client, _retry| {
            async {
                let rows = client
                    .query(&format!("{base} WHERE id = $1"), &[&id])
                    .await?;
                if !rows.is_empty() {
                    return self.sessions_from("find session", &rows);
                }
                let rows = client
                    .query(
                        &format!(
                            "{base} WHERE starts_with(id, $1) ORDER BY started_at DESC, id DESC LIMIT 10"
                        ),
                        &[&id],
                    )
                    .await?;
                self.sessions_from("find session", &rows)
            }
            .await
        })
    }

    pub(crate) async fn mark_abandoned(
        &self,
        host: String,
        reason: String,
    ) -> Result<Vec<Abandoned>, StoreError> {
        with_retry!(self, "mark abandoned sessions", |client, _retry| {
            async {
                let rows = client
                    .query(
                        "SELECT id, pid FROM sessions WHERE status = 'running' AND host = $1",
                        &[&host],
                    )
                    .await?;
                let mut marked = Vec::new();
                for row in rows {
                    let id: String = row.try_get(0)?;
                    let pid: Option<i64> = row.try_get(1)?;
                    let Some(pid) = pid.and_then(|p| u32::try_from(p).ok()) else {
                        continue;
                    };
                    if pid_alive(pid) {
                        continue;
                    }
                    let n = client
                        .execute(
                            "UPDATE sessions SET status = 'partial', status_reason = $2
                             WHERE id = $1 AND status = 'running'",
                            &[&id, &reason],
                        )
                        .await?;
                    if n == 1 {
                        marked.push(Abandoned { id, pid });
                    }
                }
                Ok(marked)
            }
            .await
        })
    }

    pub(crate) async fn insert_imported(
        &self,
        session: Vec<Cell>,
        samples: Vec<Vec<Cell>>,
    ) -> Result<(), StoreError> {
        let session_sql = insert_sql("sessions", &SESSION_COLUMNS, true);
        let sample_sql = insert_sql("samples", &SAMPLE_COLUMNS, true);
        with_retry!(self, "import session", |client, retry| {
            async {
                if retry
                    && client
                        .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&session[0]])
                        .await?
                        .is_some()
                {
                    // One transaction: the session exists only if it all committed.
                    return Ok(());
                }
                let tx = client.transaction().await?;
                tx.execute(&session_sql, &params(&session)).await?;
                let st = tx.prepare(&sample_sql).await?;
                for cells in &samples {
                    tx.execute(&st, &params(cells)).await?;
                }
                tx.commit().await?;
                Ok(())
            }
            .await
        })
    }
}

fn describe_server(cfg: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    match cfg.get_hosts().first() {
        Some(Host::Tcp(h)) => format!("{h}:{port}"),
        #[cfg(unix)]
        Some(Host::Unix(p)) => format!("{}/.s.PGSQL.{port}", p.display()),
        None => format!("localhost:{port}"),
    }
}

mod runs;
mod scan;
mod spans;

//! The PostgreSQL store: a small deadpool pool of tokio-postgres connections.
//!
//! Several machines may write the same database at once (each session
//! records its host and vantage); rows only ever reference their own
//! session, so writers never contend for the same row.
//!
//! Durability: every sample is one `INSERT`, committed by the server before
//! [`super::Store::append_sample`] returns (PostgreSQL's own `synchronous_commit`
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

use bytes::{BufMut, BytesMut};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::error::{StoreError, mask_url};
use super::schema::{Cell, RowGet};

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
            Cell::Bytes(b) => b.to_sql_checked(ty, out),
            // As `Json` writes it: JSONB's binary form is a version byte
            // (1) and the text; JSON's is the text.
            Cell::JsonText(t) if *ty == Type::JSONB => {
                out.put_u8(1);
                out.put_slice(t.as_bytes());
                Ok(IsNull::No)
            }
            Cell::JsonText(t) if *ty == Type::JSON => {
                out.put_slice(t.as_bytes());
                Ok(IsNull::No)
            }
            Cell::JsonText(t) => t.to_sql_checked(ty, out),
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
    fn opt_bytes(&self, col: &str) -> Result<Option<Vec<u8>>, String> {
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
        super::Store::Postgres(store.clone()).migrate().await?;
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

    pub(crate) fn count_reconnect(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    fn invalid(&self, op: &'static str, message: String) -> Fail {
        Fail::Store(StoreError::Invalid {
            op,
            store: self.url.to_string(),
            message,
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

mod copy;
mod scan;
mod sql;
mod tx;

pub(crate) use tx::PgTx;

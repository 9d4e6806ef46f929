//! The statement primitives on PostgreSQL, each retried once on a fresh
//! connection after a dropped one, and the round trips that read the
//! server's `clock_timestamp()`.

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use deadpool_postgres::Object;

use super::{Fail, PgStore, params};
use crate::store::error::{self, StoreError, is_pg_connection_error, is_pool_connection_error};
use crate::store::schema::Cell;
use crate::store::sql::RowAny;

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl PgStore {
    /// Runs `sql`; the rows it changed. With `found`, a retry first runs
    /// that query and, when it returns a row (the first attempt committed
    /// before the connection dropped), skips `sql` and reports one row.
    pub(crate) async fn exec(
        &self,
        op: &'static str,
        sql: &str,
        cells: Vec<Cell>,
        found: Option<(&str, Vec<Cell>)>,
    ) -> Result<u64, StoreError> {
        with_retry!(self, op, |client, retry| {
            async {
                if let (true, Some((found, found_cells))) = (retry, &found)
                    && client
                        .query_opt(*found, &params(found_cells))
                        .await?
                        .is_some()
                {
                    return Ok(1);
                }
                let st = client.prepare_cached(sql).await?;
                Ok(client.execute(&st, &params(&cells)).await?)
            }
            .await
        })
    }

    pub(crate) async fn query<T: Send + 'static>(
        &self,
        op: &'static str,
        sql: &str,
        cells: Vec<Cell>,
        f: fn(&dyn RowAny) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        with_retry!(self, op, |client, _retry| {
            async {
                let st = client.prepare_cached(sql).await?;
                let rows = client.query(&st, &params(&cells)).await?;
                rows.iter()
                    .map(|r| f(r).map_err(|m| self.invalid(op, m)))
                    .collect()
            }
            .await
        })
    }

    /// `rounds` × (local ms before, server ms, local ms after), on one
    /// connection (the first query warms it and is not counted).
    pub(crate) async fn clock_rounds(
        &self,
        rounds: u32,
    ) -> Result<Vec<(f64, f64, f64)>, StoreError> {
        let sql = "SELECT extract(epoch FROM clock_timestamp())::float8 * 1000.0";
        with_retry!(self, "read the store's clock", |client, _retry| {
            async {
                let st = client.prepare(sql).await?;
                client.query_one(&st, &[]).await?;
                let mut out = Vec::with_capacity(rounds as usize);
                for _ in 0..rounds {
                    let before = now_ms();
                    let row = client.query_one(&st, &[]).await?;
                    let after = now_ms();
                    out.push((before, row.try_get::<_, f64>(0)?, after));
                }
                Ok(out)
            }
            .await
        })
    }
}

//! Runs on PostgreSQL: plain statements for `runs` and `run_sessions`, and
//! the round trips that read the server's `clock_timestamp()`.

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use deadpool_postgres::Object;

use super::{Fail, PgStore, params};
use crate::store::error::{self, StoreError, is_pg_connection_error, is_pool_connection_error};
use crate::store::runs::RowAny;
use crate::store::schema::Cell;

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl PgStore {
    pub(crate) async fn run_exec(
        &self,
        op: &'static str,
        sql: String,
        cells: Vec<Cell>,
    ) -> Result<u64, StoreError> {
        with_retry!(self, op, |client, _retry| {
            async { Ok(client.execute(&sql, &params(&cells)).await?) }.await
        })
    }

    pub(crate) async fn run_query<T: Send + 'static>(
        &self,
        op: &'static str,
        sql: String,
        cells: Vec<Cell>,
        f: fn(&dyn RowAny) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        with_retry!(self, op, |client, _retry| {
            async {
                let rows = client.query(&sql, &params(&cells)).await?;
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

//! Scans on PostgreSQL: a query's rows folded into a state as they arrive
//! from the server, one row at a time (`query_raw`'s row stream).

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use deadpool_postgres::Object;
use futures_util::TryStreamExt;

use super::{Fail, PgStore};
use crate::store::error::{self, StoreError, is_pg_connection_error, is_pool_connection_error};
use crate::store::schema::Cell;
use crate::store::view::Part;
use crate::store::view::RowRef;

impl RowRef for tokio_postgres::Row {
    fn f64_at(&self, i: usize) -> Result<Option<f64>, String> {
        self.try_get(i).map_err(|e| e.to_string())
    }
    fn i64_at(&self, i: usize) -> Result<Option<i64>, String> {
        self.try_get(i).map_err(|e| e.to_string())
    }
    fn str_at(&self, i: usize) -> Result<Option<&str>, String> {
        self.try_get(i).map_err(|e| e.to_string())
    }
    fn bool_at(&self, i: usize) -> Result<bool, String> {
        self.try_get(i).map_err(|e| e.to_string())
    }
}

impl PgStore {
    /// `f` over the rows of each part at once, each part on a connection
    /// and a runtime task of its own; the parts' states in order.
    pub(crate) async fn scan_parts<S, F>(
        &self,
        op: &'static str,
        parts: Vec<Part<S>>,
        f: Arc<F>,
    ) -> Result<Vec<S>, StoreError>
    where
        S: Send + 'static,
        F: Fn(&mut S, &dyn RowRef) -> Result<(), String> + Send + Sync + 'static,
    {
        let running: Vec<_> = parts
            .into_iter()
            .map(|p| {
                let (store, f) = (self.clone(), f.clone());
                tokio::spawn(async move {
                    store
                        .scan(op, p.sql, p.cells, p.state, |s, r| f(s, r))
                        .await
                })
            })
            .collect();
        let mut states = Vec::with_capacity(running.len());
        for task in running {
            match task.await {
                Ok(state) => states.push(state?),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => {
                    return Err(StoreError::Invalid {
                        op,
                        store: self.url.to_string(),
                        message: "a part of the scan was cancelled".into(),
                    });
                }
            }
        }
        Ok(states)
    }

    /// `f` over every row of `sql` as the rows arrive. A dropped connection
    /// before the first row is retried once on a fresh one; after it, the
    /// state already holds rows, so the error is returned.
    pub(crate) async fn scan<S, F>(
        &self,
        op: &'static str,
        sql: String,
        cells: Vec<Cell>,
        mut state: S,
        mut f: F,
    ) -> Result<S, StoreError>
    where
        F: FnMut(&mut S, &dyn RowRef) -> Result<(), String>,
    {
        let mut attempt = 0u32;
        loop {
            if attempt > 0 {
                self.reconnects.fetch_add(1, Ordering::Relaxed);
            }
            let obj = match self.pool.get().await {
                Ok(o) => o,
                Err(e) if attempt == 0 && is_pool_connection_error(&e) => {
                    attempt += 1;
                    continue;
                }
                Err(e) => return Err(error::pool(op, &self.url, &self.server, e)),
            };
            let mut seen = false;
            let result: Result<(), Fail> = async {
                let st = obj.prepare_cached(&sql).await?;
                let params = cells
                    .iter()
                    .map(|c| c as &(dyn tokio_postgres::types::ToSql + Sync));
                let mut rows = pin!(obj.query_raw(&st, params).await?);
                while let Some(row) = rows.try_next().await? {
                    seen = true;
                    f(&mut state, &row).map_err(|m| self.invalid(op, m))?;
                }
                Ok(())
            }
            .await;
            match result {
                Ok(()) => return Ok(state),
                Err(Fail::Pg(e)) if attempt == 0 && !seen && is_pg_connection_error(&e) => {
                    drop(Object::take(obj));
                    attempt += 1;
                }
                Err(Fail::Pg(e)) => return Err(error::postgres(op, &self.url, &self.server, e)),
                Err(Fail::Store(e)) => return Err(e),
            }
        }
    }
}

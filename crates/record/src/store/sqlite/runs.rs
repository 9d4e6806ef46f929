//! Runs on SQLite: plain statements for `runs` and `run_sessions`.

use rusqlite::params_from_iter;

use super::{SqliteStore, invalid};
use crate::store::error::{self, StoreError};
use crate::store::runs::RowAny;
use crate::store::schema::Cell;

impl SqliteStore {
    pub(crate) async fn run_exec(
        &self,
        op: &'static str,
        sql: String,
        cells: Vec<Cell>,
    ) -> Result<u64, StoreError> {
        self.call(op, move |c, p| {
            let n = c
                .prepare_cached(&sql)
                .and_then(|mut st| st.execute(params_from_iter(cells.iter())))
                .map_err(|e| error::sqlite(op, p, e))?;
            Ok(n as u64)
        })
        .await
    }

    pub(crate) async fn run_query<T: Send + 'static>(
        &self,
        op: &'static str,
        sql: String,
        cells: Vec<Cell>,
        f: fn(&dyn RowAny) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        self.call(op, move |c, p| {
            let mut st = c
                .prepare_cached(&sql)
                .map_err(|e| error::sqlite(op, p, e))?;
            let mut rows = st
                .query(params_from_iter(cells.iter()))
                .map_err(|e| error::sqlite(op, p, e))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(|e| error::sqlite(op, p, e))? {
                out.push(f(row).map_err(|m| invalid(op, p, m))?);
            }
            Ok(out)
        })
        .await
    }
}

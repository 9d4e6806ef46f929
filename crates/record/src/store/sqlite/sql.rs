//! The statement primitives on SQLite: each a job on the store's thread,
//! in autocommit mode (one statement is one committed transaction), and
//! the same statements inside a transaction ([`super::tx`]).

use rusqlite::params_from_iter;

use super::{SqliteStore, invalid};
use crate::store::error::{self, StoreError};
use crate::store::schema::Cell;
use crate::store::sql::RowAny;

/// Runs `sql` on `c`; the rows it changed.
pub(super) fn exec_on(
    c: &rusqlite::Connection,
    op: &'static str,
    path: &str,
    sql: &str,
    cells: &[Cell],
) -> Result<u64, StoreError> {
    let n = c
        .prepare_cached(sql)
        .and_then(|mut st| st.execute(params_from_iter(cells.iter())))
        .map_err(|e| error::sqlite(op, path, e))?;
    Ok(n as u64)
}

/// The rows of `sql` on `c`, each through `f`.
pub(super) fn query_on<T>(
    c: &rusqlite::Connection,
    op: &'static str,
    path: &str,
    sql: &str,
    cells: &[Cell],
    f: fn(&dyn RowAny) -> Result<T, String>,
) -> Result<Vec<T>, StoreError> {
    let err = |e| error::sqlite(op, path, e);
    let mut st = c.prepare_cached(sql).map_err(err)?;
    let mut rows = st.query(params_from_iter(cells.iter())).map_err(err)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(err)? {
        out.push(f(row).map_err(|m| invalid(op, path, m))?);
    }
    Ok(out)
}

impl SqliteStore {
    pub(crate) async fn exec(
        &self,
        op: &'static str,
        sql: String,
        cells: Vec<Cell>,
    ) -> Result<u64, StoreError> {
        self.call(op, move |c, p| exec_on(c, op, p, &sql, &cells))
            .await
    }

    pub(crate) async fn query<T: Send + 'static>(
        &self,
        op: &'static str,
        sql: String,
        cells: Vec<Cell>,
        f: fn(&dyn RowAny) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        self.call(op, move |c, p| query_on(c, op, p, &sql, &cells, f))
            .await
    }
}

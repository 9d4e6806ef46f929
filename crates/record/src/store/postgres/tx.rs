//! Transactions on PostgreSQL: `BEGIN` … `COMMIT` on one pooled
//! connection. A transaction dropped without committing, or whose
//! connection broke, takes its connection out of the pool (closing it
//! rolls back whatever was open), so no pooled connection is ever left
//! inside a transaction. A bulk insert's `COPY` ([`super::copy`]) stays
//! open across batches; every other statement, and the commit, finishes
//! it first.

use deadpool_postgres::Object;

use super::copy::CopyIn;
use super::{PgStore, params};
use crate::store::error::{self, StoreError};
use crate::store::schema::Cell;
use crate::store::sql::RowAny;

/// An open transaction on one connection.
pub(crate) struct PgTx {
    /// `Some` until dropped.
    obj: Option<Object>,
    store: PgStore,
    op: &'static str,
    committed: bool,
    /// The open bulk insert, if any.
    pub(super) copy: Option<CopyIn>,
}

impl PgStore {
    pub(crate) async fn begin(&self, op: &'static str) -> Result<PgTx, StoreError> {
        let obj = self
            .pool
            .get()
            .await
            .map_err(|e| error::pool(op, &self.url, &self.server, e))?;
        let mut tx = PgTx {
            obj: Some(obj),
            store: self.clone(),
            op,
            committed: false,
            copy: None,
        };
        tx.batch("BEGIN").await?;
        Ok(tx)
    }
}

impl PgTx {
    pub(super) fn client(&self) -> Result<&Object, StoreError> {
        self.obj.as_ref().ok_or_else(|| StoreError::Invalid {
            op: self.op,
            store: self.store.url.to_string(),
            message: "the transaction has ended".into(),
        })
    }

    pub(super) fn fail(&self, e: tokio_postgres::Error) -> StoreError {
        error::postgres(self.op, &self.store.url, &self.store.server, e)
    }

    pub(crate) async fn exec(&mut self, sql: &str, cells: Vec<Cell>) -> Result<u64, StoreError> {
        self.end_copy().await?;
        let c = self.client()?;
        let done = async {
            let st = c.prepare_cached(sql).await?;
            c.execute(&st, &params(&cells)).await
        }
        .await;
        done.map_err(|e| self.fail(e))
    }

    pub(crate) async fn query<T: Send + 'static>(
        &mut self,
        sql: &str,
        cells: Vec<Cell>,
        f: fn(&dyn RowAny) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        self.end_copy().await?;
        let c = self.client()?;
        let rows = c
            .query(sql, &params(&cells))
            .await
            .map_err(|e| self.fail(e))?;
        rows.iter()
            .map(|r| {
                f(r).map_err(|message| StoreError::Invalid {
                    op: self.op,
                    store: self.store.url.to_string(),
                    message,
                })
            })
            .collect()
    }

    pub(crate) async fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.end_copy().await?;
        self.client()?
            .batch_execute(sql)
            .await
            .map_err(|e| self.fail(e))
    }

    pub(crate) async fn commit(mut self) -> Result<(), StoreError> {
        self.batch("COMMIT").await?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        if let Some(obj) = self.obj.take()
            && !self.committed
        {
            drop(Object::take(obj));
        }
    }
}

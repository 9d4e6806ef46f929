//! Bulk inserts on PostgreSQL: a transaction's batches of whole rows
//! streamed into one `COPY table (cols) FROM STDIN (FORMAT binary)`, kept
//! open across the batches and finished before the transaction's next
//! statement (or its commit). One row costs a few bytes of framing instead
//! of a multi-row `INSERT`'s parameters, each parsed and bound.
//!
//! The columns are those of the one-row `INSERT` ([`RowsInsert`]) and so
//! are their types: the server's own inference for that statement's
//! parameters, read from it prepared. The rows are the same cells the
//! `INSERT` would bind, so what refuses a row there refuses it here (the
//! server's constraints; the cells were validated when they were made).

use std::pin::Pin;

use tokio_postgres::binary_copy::BinaryCopyInWriter;

use super::PgTx;
use crate::store::error::StoreError;
use crate::store::schema::Cell;
use crate::store::sql::RowsInsert;

/// `COPY table (cols) FROM STDIN (FORMAT binary)`.
pub(crate) fn copy_in_sql(table: &str, cols: &[&str]) -> String {
    format!(
        "COPY {table} ({}) FROM STDIN (FORMAT binary)",
        cols.join(", ")
    )
}

/// A `COPY … FROM STDIN` open on a transaction's connection.
pub(crate) struct CopyIn {
    table: &'static str,
    writer: Pin<Box<BinaryCopyInWriter>>,
}

impl PgTx {
    /// Writes whole rows (a flat run of `insert`'s cells) into the
    /// transaction's open `COPY` into `insert`'s table, opening one first
    /// if none is; returns the rows written. The server has them all only
    /// once [`PgTx::end_copy`] returned, which every other statement of
    /// the transaction runs first.
    pub(crate) async fn copy_rows(
        &mut self,
        insert: &RowsInsert,
        cells: Vec<Cell>,
    ) -> Result<u64, StoreError> {
        if self
            .copy
            .as_ref()
            .is_some_and(|c| c.table != insert.table())
        {
            self.end_copy().await?;
        }
        let mut copy = match self.copy.take() {
            Some(c) => c,
            None => self.open_copy(insert).await?,
        };
        let width = insert.names().len().max(1);
        let mut rows = 0;
        for row in cells.chunks(width) {
            if let Err(e) = copy.writer.as_mut().write_raw(row).await {
                return Err(self.fail(e));
            }
            rows += 1;
        }
        self.copy = Some(copy);
        Ok(rows)
    }

    async fn open_copy(&self, insert: &RowsInsert) -> Result<CopyIn, StoreError> {
        let c = self.client()?;
        let opened = async {
            let types = c.prepare_cached(insert.one()).await?.params().to_vec();
            let sink = c
                .copy_in(&copy_in_sql(insert.table(), insert.names()))
                .await?;
            Ok(BinaryCopyInWriter::new(sink, &types))
        }
        .await;
        match opened {
            Ok(writer) => Ok(CopyIn {
                table: insert.table(),
                writer: Box::pin(writer),
            }),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Finishes the open `COPY`, if any: the server checks and stores
    /// what it has not yet, and reports a refused row here.
    pub(crate) async fn end_copy(&mut self) -> Result<(), StoreError> {
        match self.copy.take() {
            Some(mut c) => match c.writer.as_mut().finish().await {
                Ok(_) => Ok(()),
                Err(e) => Err(self.fail(e)),
            },
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_name_their_columns() {
        assert_eq!(
            copy_in_sql("t", &["a", "b"]),
            "COPY t (a, b) FROM STDIN (FORMAT binary)"
        );
    }
}

//! The `spans` table on SQLite: one `IMMEDIATE` transaction per batch, so
//! the cap check and the inserts see the same count.

use rusqlite::{TransactionBehavior, params_from_iter};

use super::{SqliteStore, invalid, no_session_if_zero};
use crate::span::SpanRow;
use crate::store::error::{self, StoreError};
use crate::store::schema::{Cell, insert_sql};
use crate::store::spans::{SPAN_COLUMNS, SpansAppended, span_from};

impl SqliteStore {
    pub(crate) async fn append_spans(
        &self,
        session_id: String,
        rows: Vec<Vec<Cell>>,
        cap: u64,
    ) -> Result<SpansAppended, StoreError> {
        self.call("append spans", move |c, p| {
            let op = "append spans";
            let err = |e| error::sqlite(op, p, e);
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            let known: i64 = tx
                .query_row(
                    "SELECT count(*) FROM sessions WHERE id = ?1",
                    [&session_id],
                    |r| r.get(0),
                )
                .map_err(err)?;
            no_session_if_zero(known as usize, op, p, session_id.clone())?;
            let have: i64 = tx
                .query_row(
                    "SELECT count(*) FROM spans WHERE session_id = ?1",
                    [&session_id],
                    |r| r.get(0),
                )
                .map_err(err)?;
            let mut room = cap.saturating_sub(u64::try_from(have).unwrap_or(0));
            let mut out = SpansAppended::default();
            {
                let sql = format!(
                    "{} ON CONFLICT (session_id, trace_id, span_id) DO NOTHING",
                    insert_sql("spans", &SPAN_COLUMNS, false)
                );
                let mut st = tx.prepare_cached(&sql).map_err(err)?;
                for cells in &rows {
                    if room == 0 {
                        out.refused += 1;
                        continue;
                    }
                    if st.execute(params_from_iter(cells.iter())).map_err(err)? == 1 {
                        out.stored += 1;
                        room -= 1;
                    } else {
                        out.duplicate += 1;
                    }
                }
            }
            tx.commit().map_err(err)?;
            Ok(out)
        })
        .await
    }

    pub(crate) async fn spans(&self, session_id: String) -> Result<Vec<SpanRow>, StoreError> {
        self.call("read spans", move |c, p| {
            let op = "read spans";
            let err = |e| error::sqlite(op, p, e);
            let sql = format!(
                "SELECT {} FROM spans WHERE session_id = ?1 ORDER BY start_unix_nano, id",
                SPAN_COLUMNS.join(", ")
            );
            let mut st = c.prepare_cached(&sql).map_err(err)?;
            let mut rows = st.query([&session_id]).map_err(err)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(err)? {
                out.push(span_from(row).map_err(|m| invalid(op, p, m))?);
            }
            Ok(out)
        })
        .await
    }

    pub(crate) async fn span_count(&self, session_id: String) -> Result<u64, StoreError> {
        self.call("count spans", move |c, p| {
            let n: i64 = c
                .prepare_cached("SELECT count(*) FROM spans WHERE session_id = ?1")
                .and_then(|mut st| st.query_row([&session_id], |r| r.get(0)))
                .map_err(|e| error::sqlite("count spans", p, e))?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
        .await
    }
}

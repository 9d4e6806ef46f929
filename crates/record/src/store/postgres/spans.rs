//! The `spans` table on PostgreSQL: one transaction per batch, serialised
//! per session by an advisory lock so the cap holds against concurrent
//! writers; a retried batch after a lost commit finds its spans already
//! there (counted as duplicates, never stored twice).

use std::sync::atomic::Ordering;

use deadpool_postgres::Object;

use super::{Fail, PgStore, params};
use crate::span::SpanRow;
use crate::store::error::{self, StoreError, is_pg_connection_error, is_pool_connection_error};
use crate::store::schema::{Cell, insert_sql};
use crate::store::spans::{SPAN_COLUMNS, SpansAppended, span_from};

impl PgStore {
    pub(crate) async fn append_spans(
        &self,
        session_id: String,
        rows: Vec<Vec<Cell>>,
        cap: u64,
    ) -> Result<SpansAppended, StoreError> {
        let op = "append spans";
        let sql = format!(
            "{} ON CONFLICT (session_id, trace_id, span_id) DO NOTHING",
            insert_sql("spans", &SPAN_COLUMNS, true)
        );
        with_retry!(self, op, |client, _retry| {
            async {
                let tx = client.transaction().await?;
                tx.execute(
                    "SELECT pg_advisory_xact_lock(hashtext('firsttoken spans ' || $1))",
                    &[&session_id],
                )
                .await?;
                let known = tx
                    .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&session_id])
                    .await?;
                if known.is_none() {
                    return self
                        .no_session_if_zero(0, op, &session_id)
                        .map(|()| SpansAppended::default());
                }
                let have: i64 = tx
                    .query_one(
                        "SELECT count(*) FROM spans WHERE session_id = $1",
                        &[&session_id],
                    )
                    .await?
                    .try_get(0)?;
                let mut room = cap.saturating_sub(u64::try_from(have).unwrap_or(0));
                let mut out = SpansAppended::default();
                let st = tx.prepare(&sql).await?;
                for cells in &rows {
                    if room == 0 {
                        out.refused += 1;
                        continue;
                    }
                    if tx.execute(&st, &params(cells)).await? == 1 {
                        out.stored += 1;
                        room -= 1;
                    } else {
                        out.duplicate += 1;
                    }
                }
                tx.commit().await?;
                Ok(out)
            }
            .await
        })
    }

    pub(crate) async fn spans(&self, session_id: String) -> Result<Vec<SpanRow>, StoreError> {
        let op = "read spans";
        let sql = format!(
            "SELECT {} FROM spans WHERE session_id = $1 ORDER BY start_unix_nano, id",
            SPAN_COLUMNS.join(", ")
        );
        with_retry!(self, op, |client, _retry| {
            async {
                let rows = client.query(&sql, &[&session_id]).await?;
                rows.iter()
                    .map(|r| span_from(r).map_err(|m| self.invalid(op, m)))
                    .collect()
            }
            .await
        })
    }

    pub(crate) async fn span_count(&self, session_id: String) -> Result<u64, StoreError> {
        with_retry!(self, "count spans", |client, _retry| {
            async {
                let n: i64 = client
                    .query_one(
                        "SELECT count(*) FROM spans WHERE session_id = $1",
                        &[&session_id],
                    )
                    .await?
                    .try_get(0)?;
                Ok(u64::try_from(n).unwrap_or(0))
            }
            .await
        })
    }
}

//! Transactions on SQLite: an `IMMEDIATE` transaction (the write lock
//! taken at `BEGIN`, so what it reads stays true until it commits) holds
//! the store's thread from `BEGIN` to `COMMIT`. Its statements come to the
//! thread one at a time, over a channel, from the task that began it; when
//! that task drops its [`SqliteTx`] without committing, the channel closes
//! and the transaction rolls back.

use std::sync::Arc;
use std::sync::mpsc;

use rusqlite::{TransactionBehavior, params_from_iter};
use tokio::sync::oneshot;

use super::sql::{exec_on, query_on};
use super::{Job, SqliteStore};
use crate::store::error::{self, StoreError};
use crate::store::schema::Cell;
use crate::store::sql::RowAny;

type Step = Box<dyn FnOnce(&rusqlite::Connection) + Send>;

enum Msg {
    Step(Step),
    Commit(oneshot::Sender<rusqlite::Result<()>>),
}

/// The reply to a batch of rows queued with [`SqliteTx::queue_rows`].
type Queued = oneshot::Receiver<Result<(u64, Vec<Cell>), StoreError>>;

/// An open transaction on the store's thread.
pub(crate) struct SqliteTx {
    msgs: mpsc::Sender<Msg>,
    path: Arc<str>,
    op: &'static str,
    /// A batch of rows sent and not yet answered.
    queued: Option<Queued>,
}

impl SqliteStore {
    /// Begins an `IMMEDIATE` transaction; with `cache_kib`, the page cache
    /// may grow to that size until it ends (then it is set back).
    pub(crate) async fn begin(
        &self,
        op: &'static str,
        cache_kib: Option<u32>,
    ) -> Result<SqliteTx, StoreError> {
        let (msgs, rx) = mpsc::channel::<Msg>();
        let (began_tx, began) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let before = cache_kib.and_then(|kib| {
                let before: i64 = conn.query_row("PRAGMA cache_size", [], |r| r.get(0)).ok()?;
                conn.pragma_update(None, "cache_size", -i64::from(kib))
                    .ok()?;
                Some(before)
            });
            serve(conn, &rx, began_tx);
            if let Some(before) = before {
                let _ = conn.pragma_update(None, "cache_size", before);
            }
        });
        let gone = || StoreError::WriterGone {
            op,
            path: self.path().to_owned(),
        };
        self.jobs.send(job).map_err(|_| gone())?;
        began
            .await
            .map_err(|_| gone())?
            .map_err(|e| error::sqlite(op, self.path(), e))?;
        Ok(SqliteTx {
            msgs,
            path: self.path.clone(),
            op,
            queued: None,
        })
    }
}

/// Runs the transaction's steps on the store's thread until it commits,
/// or until its holder is gone (then it rolls back as `tx` drops).
fn serve(
    conn: &mut rusqlite::Connection,
    rx: &mpsc::Receiver<Msg>,
    began: oneshot::Sender<rusqlite::Result<()>>,
) {
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            let _ = began.send(Err(e));
            return;
        }
    };
    if began.send(Ok(())).is_err() {
        return;
    }
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Step(step) => step(&tx),
            Msg::Commit(reply) => {
                let _ = reply.send(tx.commit());
                return;
            }
        }
    }
}

impl SqliteTx {
    fn gone(&self) -> StoreError {
        StoreError::WriterGone {
            op: self.op,
            path: self.path.to_string(),
        }
    }

    /// Sends `f` to run inside the transaction, after what was sent before.
    fn send<R, F>(&self, f: F) -> Result<oneshot::Receiver<Result<R, StoreError>>, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&rusqlite::Connection, &'static str, &str) -> Result<R, StoreError>
            + Send
            + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let (op, path) = (self.op, self.path.clone());
        let step: Step = Box::new(move |c| {
            let _ = tx.send(f(c, op, &path));
        });
        self.msgs.send(Msg::Step(step)).map_err(|_| self.gone())?;
        Ok(rx)
    }

    /// The queued batch's result, once it is done (0 rows when none was).
    async fn settle(&mut self) -> Result<u64, StoreError> {
        match self.queued.take() {
            Some(rx) => rx.await.map_err(|_| self.gone())?.map(|(n, _cells)| n),
            None => Ok(0),
        }
    }

    /// Runs `f` inside the transaction (after any queued batch) and awaits
    /// its result.
    async fn step<R, F>(&mut self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&rusqlite::Connection, &'static str, &str) -> Result<R, StoreError>
            + Send
            + 'static,
    {
        self.settle().await?;
        let rx = self.send(f)?;
        rx.await.map_err(|_| self.gone())?
    }

    pub(crate) async fn exec(&mut self, sql: String, cells: Vec<Cell>) -> Result<u64, StoreError> {
        self.step(move |c, op, p| exec_on(c, op, p, &sql, &cells))
            .await
    }

    /// Queues one prepared `sql` per row of `width` cells behind the batch
    /// queued before, then waits for that one: the store's thread always
    /// has the next batch at hand, and never waits for the caller. Returns
    /// the rows the earlier batch inserted. The cells come back with the
    /// reply, to be freed off the store's thread.
    pub(crate) async fn queue_rows(
        &mut self,
        sql: String,
        width: usize,
        cells: Vec<Cell>,
    ) -> Result<u64, StoreError> {
        let rx = self.send(move |c, op, p| {
            let err = |e| error::sqlite(op, p, e);
            let mut st = c.prepare_cached(&sql).map_err(err)?;
            let mut n = 0;
            for row in cells.chunks(width.max(1)) {
                n += st.execute(params_from_iter(row.iter())).map_err(err)? as u64;
            }
            Ok((n, cells))
        })?;
        let done = self.settle().await;
        self.queued = Some(rx);
        done
    }

    pub(crate) async fn query<T: Send + 'static>(
        &mut self,
        sql: String,
        cells: Vec<Cell>,
        f: fn(&dyn RowAny) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        self.step(move |c, op, p| query_on(c, op, p, &sql, &cells, f))
            .await
    }

    pub(crate) async fn batch(&mut self, sql: String) -> Result<(), StoreError> {
        self.step(move |c, op, p| c.execute_batch(&sql).map_err(|e| error::sqlite(op, p, e)))
            .await
    }

    /// Commits, once every queued batch is in.
    pub(crate) async fn commit(mut self) -> Result<(), StoreError> {
        self.settle().await?;
        let (tx, rx) = oneshot::channel();
        self.msgs.send(Msg::Commit(tx)).map_err(|_| self.gone())?;
        rx.await
            .map_err(|_| self.gone())?
            .map_err(|e| error::sqlite(self.op, &self.path, e))
    }
}

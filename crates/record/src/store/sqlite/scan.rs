//! Scans on SQLite: a query's rows folded into a state, in two stages on
//! two threads. The store's thread steps the query and copies each row's
//! cells into a batch (numbers as they are, text into one byte buffer);
//! the caller decodes the batches as they come. So the two halves of the
//! work — SQLite's and the caller's — overlap, and memory stays bounded: at
//! most [`IN_FLIGHT`] batches of [`BATCH_ROWS`] rows exist at once, their
//! buffers handed back and reused.

use std::sync::Arc;

use rusqlite::params_from_iter;
use rusqlite::types::ValueRef;
use tokio::sync::mpsc;

use super::{SqliteStore, invalid};
use crate::store::error::{self, StoreError};
use crate::store::schema::Cell;
use crate::store::sql::placeholders;
use crate::store::view::{Part, RowRef};

/// Rows per batch.
const BATCH_ROWS: usize = 2048;
/// Batches queued for the caller (more wait on the store's thread).
const IN_FLIGHT: usize = 3;

/// One cell as copied off the row.
#[derive(Debug, Clone, Copy)]
enum Raw {
    Null,
    Int(i64),
    Real(f64),
    /// Bytes `start..start + len` of the batch's text.
    Text {
        start: u32,
        len: u32,
    },
    Blob,
}

/// Rows of `width` cells, their text in one buffer.
#[derive(Debug, Default)]
struct Batch {
    width: usize,
    cells: Vec<Raw>,
    text: Vec<u8>,
}

impl Batch {
    fn rows(&self) -> usize {
        self.cells.len().checked_div(self.width).unwrap_or(0)
    }

    fn clear(&mut self) {
        self.cells.clear();
        self.text.clear();
    }

    /// Copies row `r`'s cells in.
    fn push(&mut self, r: &rusqlite::Row<'_>) -> rusqlite::Result<()> {
        for i in 0..self.width {
            let raw = match r.get_ref(i)? {
                ValueRef::Null => Raw::Null,
                ValueRef::Integer(v) => Raw::Int(v),
                ValueRef::Real(v) => Raw::Real(v),
                ValueRef::Text(t) => {
                    let (start, len) = (self.text.len(), t.len());
                    self.text.extend_from_slice(t);
                    // A batch's text stays far below 4 GiB: rows are
                    // bounded by the store's own limits, and the batch
                    // holds BATCH_ROWS of them.
                    Raw::Text {
                        start: u32::try_from(start).unwrap_or(u32::MAX),
                        len: u32::try_from(len).unwrap_or(0),
                    }
                }
                ValueRef::Blob(_) => Raw::Blob,
            };
            self.cells.push(raw);
        }
        Ok(())
    }
}

/// Row `row` of a batch.
struct BatchRow<'a> {
    batch: &'a Batch,
    row: usize,
}

fn kind(v: ValueRef<'_>) -> &'static str {
    match v {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    }
}

fn f64_of(v: ValueRef<'_>) -> Result<Option<f64>, String> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Real(v) => Ok(Some(v)),
        ValueRef::Integer(v) => Ok(Some(v as f64)),
        other => Err(format!("expected a number, found {}", kind(other))),
    }
}

fn i64_of(v: ValueRef<'_>) -> Result<Option<i64>, String> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(v) => Ok(Some(v)),
        other => Err(format!("expected an integer, found {}", kind(other))),
    }
}

fn str_of(v: ValueRef<'_>) -> Result<Option<&str>, String> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .map(Some)
            .map_err(|e| format!("not UTF-8: {e}")),
        other => Err(format!("expected text, found {}", kind(other))),
    }
}

fn bool_of(v: ValueRef<'_>) -> Result<bool, String> {
    Ok(i64_of(v)?.ok_or("is NULL")? != 0)
}

/// A row whose cells SQLite's values give: read by column, typed once for
/// both ways a row is read.
trait Cells {
    fn cell(&self, i: usize) -> Result<ValueRef<'_>, String>;
}

impl<T: Cells> RowRef for T {
    fn f64_at(&self, i: usize) -> Result<Option<f64>, String> {
        f64_of(self.cell(i)?)
    }
    fn i64_at(&self, i: usize) -> Result<Option<i64>, String> {
        i64_of(self.cell(i)?)
    }
    fn str_at(&self, i: usize) -> Result<Option<&str>, String> {
        str_of(self.cell(i)?)
    }
    fn bool_at(&self, i: usize) -> Result<bool, String> {
        bool_of(self.cell(i)?)
    }
}

impl Cells for BatchRow<'_> {
    fn cell(&self, i: usize) -> Result<ValueRef<'_>, String> {
        if i >= self.batch.width {
            return Err(format!("no column {i}"));
        }
        Ok(match self.batch.cells[self.row * self.batch.width + i] {
            Raw::Null => ValueRef::Null,
            Raw::Int(v) => ValueRef::Integer(v),
            Raw::Real(v) => ValueRef::Real(v),
            Raw::Text { start, len } => {
                let (a, b) = (start as usize, start as usize + len as usize);
                ValueRef::Text(self.batch.text.get(a..b).ok_or("text out of range")?)
            }
            Raw::Blob => ValueRef::Blob(&[]),
        })
    }
}

/// A row read where SQLite holds it (a part of [`SqliteStore::scan_parts`]).
struct Direct<'a, 'r>(&'a rusqlite::Row<'r>);

impl Cells for Direct<'_, '_> {
    fn cell(&self, i: usize) -> Result<ValueRef<'_>, String> {
        self.0.get_ref(i).map_err(|e| e.to_string())
    }
}

/// Folds `part`'s rows on `conn`, on this thread.
fn fold_part<S, F>(
    conn: &rusqlite::Connection,
    op: &'static str,
    path: &str,
    part: Part<S>,
    f: &F,
) -> Result<S, StoreError>
where
    F: Fn(&mut S, &dyn RowRef) -> Result<(), String>,
{
    let err = |e| error::sqlite(op, path, e);
    let mut st = conn.prepare(&placeholders(&part.sql, false)).map_err(err)?;
    let mut rows = st.query(params_from_iter(part.cells.iter())).map_err(err)?;
    let mut state = part.state;
    while let Some(row) = rows.next().map_err(err)? {
        f(&mut state, &Direct(row)).map_err(|m| invalid(op, path, m))?;
    }
    Ok(state)
}

impl SqliteStore {
    /// `f` over the rows of each part at once, each part on its own thread
    /// and its own read-only connection, the fold running where the rows
    /// are read; the parts' states in order. `Err(parts)` gives the parts
    /// back untouched when the store cannot be opened a second time (a
    /// read-only directory, say): the caller then reads them one by one.
    pub(crate) async fn scan_parts<S, F>(
        &self,
        op: &'static str,
        parts: Vec<Part<S>>,
        f: Arc<F>,
    ) -> Result<Result<Vec<S>, Vec<Part<S>>>, StoreError>
    where
        S: Send + 'static,
        F: Fn(&mut S, &dyn RowRef) -> Result<(), String> + Send + Sync + 'static,
    {
        let path = self.path().to_owned();
        let task = tokio::task::spawn_blocking(move || {
            let mut conns = Vec::with_capacity(parts.len());
            for _ in &parts {
                match super::read_only_connection(&path, false) {
                    Ok((c, _)) => conns.push(c),
                    Err(_) => return Ok(Err(parts)),
                }
            }
            std::thread::scope(|scope| {
                let running: Vec<_> = parts
                    .into_iter()
                    .zip(conns)
                    .map(|(part, conn)| {
                        let (path, f) = (&path, &*f);
                        scope.spawn(move || fold_part(&conn, op, path, part, f))
                    })
                    .collect();
                running
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect::<Result<Vec<S>, StoreError>>()
                    .map(Ok)
            })
        });
        match task.await {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(StoreError::WriterGone {
                op,
                path: self.path().to_owned(),
            }),
        }
    }

    /// `f` over every row of `sql`: the store's thread reads, the caller
    /// folds (see the module docs). An `Err` from `f` stops the scan.
    pub(crate) async fn scan<S, F>(
        &self,
        op: &'static str,
        sql: String,
        cells: Vec<Cell>,
        state: S,
        f: F,
    ) -> Result<S, StoreError>
    where
        F: FnMut(&mut S, &dyn RowRef) -> Result<(), String>,
    {
        let (full_tx, mut full_rx) = mpsc::channel::<Batch>(IN_FLIGHT);
        let (empty_tx, mut empty_rx) = mpsc::channel::<Batch>(IN_FLIGHT + 1);
        let reading = self.call(op, move |c, p| {
            let err = |e| error::sqlite(op, p, e);
            let mut st = c.prepare_cached(&sql).map_err(err)?;
            let width = st.column_count();
            let mut rows = st.query(params_from_iter(cells.iter())).map_err(err)?;
            let fresh = || Batch {
                width,
                cells: Vec::with_capacity(BATCH_ROWS * width),
                text: Vec::new(),
            };
            let mut batch = fresh();
            while let Some(row) = rows.next().map_err(err)? {
                batch.push(row).map_err(err)?;
                if batch.rows() == BATCH_ROWS {
                    let next = empty_rx.try_recv().unwrap_or_else(|_| fresh());
                    // The caller stopped (its fold failed): stop reading.
                    if full_tx
                        .blocking_send(std::mem::replace(&mut batch, next))
                        .is_err()
                    {
                        return Ok(());
                    }
                }
            }
            if batch.rows() > 0 {
                let _ = full_tx.blocking_send(batch);
            }
            Ok(())
        });
        // Owns the receiving end: when a fold fails, dropping it stops the
        // reader at its next batch.
        let path = self.path();
        let folding = async move {
            let (mut state, mut f) = (state, f);
            while let Some(mut batch) = full_rx.recv().await {
                for row in 0..batch.rows() {
                    f(&mut state, &BatchRow { batch: &batch, row })
                        .map_err(|m| invalid(op, path, m))?;
                }
                batch.clear();
                let _ = empty_tx.try_send(batch);
            }
            Ok::<S, StoreError>(state)
        };
        let (read, folded) = tokio::join!(reading, folding);
        // A fold error explains a reader that stopped early.
        let state = folded?;
        read?;
        Ok(state)
    }
}

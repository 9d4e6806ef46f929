//! Scans on SQLite: a query's rows folded into a state, in two stages on
//! two threads. The store's thread steps the query and copies each row's
//! cells into a batch (numbers as they are, text into one byte buffer);
//! the caller decodes the batches as they come. So the two halves of the
//! work — SQLite's and the caller's — overlap, and memory stays bounded: at
//! most [`IN_FLIGHT`] batches of [`BATCH_ROWS`] rows exist at once, their
//! buffers handed back and reused.

use rusqlite::params_from_iter;
use rusqlite::types::ValueRef;
use tokio::sync::mpsc;

use super::{SqliteStore, invalid};
use crate::store::error::{self, StoreError};
use crate::store::schema::Cell;
use crate::store::view::RowRef;

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

impl BatchRow<'_> {
    fn cell(&self, i: usize) -> Result<Raw, String> {
        if i >= self.batch.width {
            return Err(format!("no column {i}"));
        }
        Ok(self.batch.cells[self.row * self.batch.width + i])
    }
}

fn kind(r: Raw) -> &'static str {
    match r {
        Raw::Null => "NULL",
        Raw::Int(_) => "an integer",
        Raw::Real(_) => "a real",
        Raw::Text { .. } => "text",
        Raw::Blob => "a blob",
    }
}

impl RowRef for BatchRow<'_> {
    fn f64_at(&self, i: usize) -> Result<Option<f64>, String> {
        match self.cell(i)? {
            Raw::Null => Ok(None),
            Raw::Real(v) => Ok(Some(v)),
            Raw::Int(v) => Ok(Some(v as f64)),
            other => Err(format!("expected a number, found {}", kind(other))),
        }
    }
    fn i64_at(&self, i: usize) -> Result<Option<i64>, String> {
        match self.cell(i)? {
            Raw::Null => Ok(None),
            Raw::Int(v) => Ok(Some(v)),
            other => Err(format!("expected an integer, found {}", kind(other))),
        }
    }
    fn str_at(&self, i: usize) -> Result<Option<&str>, String> {
        match self.cell(i)? {
            Raw::Null => Ok(None),
            Raw::Text { start, len } => {
                let (a, b) = (start as usize, start as usize + len as usize);
                let bytes = self.batch.text.get(a..b).ok_or("text out of range")?;
                std::str::from_utf8(bytes)
                    .map(Some)
                    .map_err(|e| format!("not UTF-8: {e}"))
            }
            other => Err(format!("expected text, found {}", kind(other))),
        }
    }
    fn bool_at(&self, i: usize) -> Result<bool, String> {
        Ok(self.i64_at(i)?.ok_or("is NULL")? != 0)
    }
}

impl SqliteStore {
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

//! Imported sessions: each stored in one transaction under a new id, its
//! samples inserted in batches of rows as they come ([`super::sql::Tx::insert_rows`]),
//! so a session of any size passes through in bounded memory (see
//! [`crate::import`]).

use std::sync::LazyLock;
use std::time::SystemTime;

use tokio::sync::mpsc;

use super::schema::{Cell, SAMPLE_COLUMNS, sample_cells, session_cells};
use super::sessions::{SESSION_FOUND_SQL, SESSION_INSERT_SQL};
use super::sql::{RowsInsert, retry_once};
use super::{Store, StoreError, sanitized};
use crate::export::{imported_meta, imported_row};
use crate::session::{SampleRow, SessionMeta, new_session_id};

/// Rows per multi-row `INSERT` of imported samples: 256 rows of 50
/// columns are 12,800 parameters, well under SQLite's 32,766 and
/// PostgreSQL's 65,535.
pub(crate) const IMPORT_BATCH_ROWS: usize = 256;

/// Batches of one session's imported samples, each a flat run of whole
/// rows of [`SAMPLE_COLUMNS`] cells, at most [`IMPORT_BATCH_ROWS`] rows.
/// The end is the channel closing; an `Err` stops the import.
pub(crate) type SampleBatches = mpsc::Receiver<Result<Vec<Cell>, StoreError>>;

static SAMPLES_INSERT: LazyLock<RowsInsert> =
    LazyLock::new(|| RowsInsert::new("samples", &SAMPLE_COLUMNS, IMPORT_BATCH_ROWS));

impl Store {
    /// Stores an imported session and its samples in one transaction, under
    /// a new id, everything marked [`Provenance::Imported`] (see
    /// [`crate::export::mark_imported`]); returns the session as stored.
    /// Every row must belong to `meta` (same `session_id`). For an export
    /// file of any size, [`crate::import::Import`] streams it instead.
    ///
    /// [`Provenance::Imported`]: crate::session::Provenance::Imported
    pub async fn insert_imported(
        &self,
        meta: &SessionMeta,
        rows: &[SampleRow],
    ) -> Result<SessionMeta, StoreError> {
        let op = "import session";
        if let Some(r) = rows.iter().find(|r| r.session_id != meta.id) {
            return Err(self.invalid(
                op,
                format!(
                    "a sample of session {:?} was given with session {:?}",
                    r.session_id, meta.id
                ),
            ));
        }
        let store = self.clone();
        let mut open = |stored: &SessionMeta| -> SampleBatches {
            let new_id = stored.id.as_str();
            let batches: Vec<Result<Vec<Cell>, StoreError>> = rows
                .chunks(IMPORT_BATCH_ROWS)
                .map(|chunk| {
                    let mut flat = Vec::with_capacity(chunk.len() * SAMPLE_COLUMNS.len());
                    for r in chunk {
                        let cells = sample_cells(&imported_row(r.clone(), new_id))
                            .map_err(|m| store.invalid(op, m))?;
                        flat.extend(cells);
                    }
                    Ok(flat)
                })
                .collect();
            let (tx, rx) = mpsc::channel(batches.len().max(1));
            for b in batches {
                // The channel holds every batch: this cannot be full.
                let _ = tx.try_send(b);
            }
            rx
        };
        self.insert_imported_from(meta, &mut open, &mut |_| {})
            .await
    }

    /// Stores imported session `meta` in one transaction under a new id,
    /// its samples from `open(stored)`, `stored` the session as it is
    /// stored: batches already marked imported under its id. A PostgreSQL
    /// retry after a dropped connection first checks whether the first
    /// attempt committed, and otherwise calls `open` again for the samples
    /// from the start. `progress` hears the samples inserted so far.
    pub(crate) async fn insert_imported_from(
        &self,
        meta: &SessionMeta,
        open: &mut (dyn FnMut(&SessionMeta) -> SampleBatches + Send),
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<SessionMeta, StoreError> {
        let new_id = new_session_id(SystemTime::now());
        let stored = sanitized(&imported_meta(meta, &new_id));
        let cells = session_cells(&stored).map_err(|m| self.invalid("import session", m))?;
        retry_once!(self, |retry| self
            .import_once(&new_id, &cells, open(&stored), retry, progress)
            .await)?;
        Ok(stored)
    }

    async fn import_once(
        &self,
        id: &str,
        session: &[Cell],
        mut batches: SampleBatches,
        retry: bool,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<(), StoreError> {
        let op = "import session";
        // One transaction: the session exists only if all of it committed.
        if retry {
            let id = vec![Cell::Text(id.to_owned())];
            if !self
                .query(op, SESSION_FOUND_SQL, id, |_| Ok(()))
                .await?
                .is_empty()
            {
                return Ok(());
            }
        }
        let mut tx = self.begin_bulk(op).await?;
        tx.exec(&SESSION_INSERT_SQL, session.to_vec()).await?;
        let width = SAMPLE_COLUMNS.len();
        let mut stored = 0u64;
        while let Some(batch) = batches.recv().await {
            let batch = batch?;
            let rows = batch.len() / width;
            if rows == 0 || rows > SAMPLES_INSERT.rows() || batch.len() % width != 0 {
                return Err(self.invalid(
                    op,
                    format!("a batch of {} cells is not whole sample rows", batch.len()),
                ));
            }
            tx.insert_rows(&SAMPLES_INSERT, batch).await?;
            stored += rows as u64;
            progress(stored);
        }
        tx.commit().await
    }
}

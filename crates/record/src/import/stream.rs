//! Both passes at once for the file's first session: while the check
//! pass reads the file, the first session's samples, checked, are
//! written into that session's open transaction, which commits only once
//! the whole file passed. Nothing is stored from a file the check refuses
//! (the transaction rolls back); a file that passes stores what the two
//! passes one after the other store (see [`Import::check_and_store`]).
//!
//! The check pass hands the store [`Streamed`] messages over a bounded
//! channel: the session line when it is the file's first line, then that
//! session's samples' cells as the check made them (in the spill's
//! encoding, [`crate::store::spill_sample`]; they are not written to the
//! temporary file, so a one-session file needs none), then
//! [`Streamed::Passed`] after the last refusal that needs the whole file
//! was ruled out. A store that stops taking them (it failed, or holds the
//! session already) closes the channel and the check goes on alone.

use std::cell::RefCell;
use std::io::{Read, Seek};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::check::{Seen, Summary};
use super::frame::{ImportFrames, Making, keep};
use super::{IN_FLIGHT, Import, ImportEvent, read_error, spawn_reader, spilled_rows};
use crate::export::origin;
use crate::session::SessionMeta;
use crate::store::{Cell, IMPORT_BATCH_ROWS, SAMPLE_COLUMNS, SampleBatches, Store, StoreError};

/// Bytes of spilled cells per [`Streamed::Cells`] message.
const STREAM_BYTES: usize = 1 << 20;

/// What the check pass hands the store while it runs.
pub(super) enum Streamed {
    /// The file's first line, a session line: the session streamed.
    Session(Box<SessionMeta>),
    /// Some of that session's samples' cells, in file order, in the
    /// spill's encoding ([`crate::store::spill_sample`]).
    Cells(Vec<u8>),
    /// The whole file passed the check: the session may commit.
    Passed,
}

/// The check pass's side of the channel.
pub(super) struct Streamer {
    tx: mpsc::Sender<Streamed>,
    /// Whether a checked line was seen yet.
    started: bool,
    /// The session streamed: its samples are not spilled (see
    /// [`Streamer::takes`]).
    session: Option<String>,
    /// That session while the store takes it; `None` once it stopped.
    id: Option<String>,
    cells: Vec<u8>,
}

impl Streamer {
    pub(super) fn new(tx: mpsc::Sender<Streamed>) -> Streamer {
        Streamer {
            tx,
            started: false,
            session: None,
            id: None,
            cells: Vec::new(),
        }
    }

    /// Takes one checked line, in file order, and the cells it spilled
    /// (empty unless it is a sample). Blocks while the store is behind.
    pub(super) fn see(&mut self, line: &Summary, cells: &[u8]) {
        if !std::mem::replace(&mut self.started, true) {
            if let Seen::Session(meta) = &line.seen
                && self.send(Streamed::Session(meta.clone()))
            {
                self.session = Some(meta.id.clone());
                self.id = Some(meta.id.clone());
            }
            return;
        }
        if self.id.is_none() || !self.takes(line) {
            return;
        }
        self.cells.extend_from_slice(cells);
        if self.cells.len() >= STREAM_BYTES {
            let cells = std::mem::take(&mut self.cells);
            if !self.send(Streamed::Cells(cells)) {
                self.id = None;
            }
        }
    }

    /// Whether `line` is a sample of the session streamed (from its first
    /// line on, even once the store stopped taking it): such a sample's
    /// cells are not spilled, and when the streamed attempt failed, the
    /// session's lines are parsed again ([`Import::check_parsing_twice`]).
    pub(super) fn takes(&self, line: &Summary) -> bool {
        matches!((&line.seen, &self.session), (Seen::Sample(of, _), Some(id)) if of == id)
    }

    /// The whole file passed: the last cells, then [`Streamed::Passed`].
    pub(super) fn passed(mut self) {
        if self.id.is_some() {
            let cells = std::mem::take(&mut self.cells);
            if cells.is_empty() || self.send(Streamed::Cells(cells)) {
                self.send(Streamed::Passed);
            }
        }
    }

    fn send(&self, m: Streamed) -> bool {
        self.tx.blocking_send(m).is_ok()
    }
}

/// The streamed cells read on a thread of their own, each row's session
/// cell set to `new_id`, in batches of [`IMPORT_BATCH_ROWS`] rows (seen by
/// `making` first, when a frame is made of them); the batches end without
/// an error only after [`Streamed::Passed`].
fn streamed_batches(
    mut rx: mpsc::Receiver<Streamed>,
    new_id: String,
    making: Option<Making>,
) -> SampleBatches {
    spawn_reader(1, move |send| {
        let making = RefCell::new(making);
        let send = |batch: Vec<Cell>| {
            if let Some(m) = making.borrow_mut().as_mut() {
                m.rows(&batch);
            }
            send(batch)
        };
        let mut batch = Vec::with_capacity(IMPORT_BATCH_ROWS * SAMPLE_COLUMNS.len());
        loop {
            match rx.blocking_recv() {
                Some(Streamed::Cells(cells)) => {
                    let mut r = cells.as_slice();
                    if !spilled_rows(&mut r, &new_id, &mut batch, &send).map_err(read_error(1))? {
                        return Ok(());
                    }
                }
                Some(Streamed::Passed) => {
                    if !batch.is_empty() {
                        send(batch);
                    }
                    if let Some(m) = making.into_inner() {
                        m.passed();
                    }
                    return Ok(());
                }
                // The check stopped before the file passed.
                Some(Streamed::Session(_)) | None => {
                    return Err(read_error(1)(std::io::Error::other(
                        "the check of the file stopped before it passed",
                    )));
                }
            }
        }
    })
}

impl<R: Read + Seek + Send + 'static> Import<R> {
    /// [`Import::check`] and [`Import::store`] at once: while the file is
    /// checked, its first session (when its session line is the file's
    /// first line and the store does not hold it) is written into its
    /// transaction, which commits only once the whole file passed; then
    /// the rest is stored as [`Import::store`] does. What is stored, and
    /// what is refused, is what the two calls store and refuse: a file the
    /// check refuses stores nothing and its first problem is the error.
    /// `progress` hears the bytes checked; `on` hears what
    /// [`Import::store`] tells (no [`ImportEvent::Progress`] for the
    /// session stored while checking).
    ///
    /// When writing the first session fails (the store refused it, or
    /// lost its connection), it is stored again after the check, its
    /// lines parsed again as [`Import::check_parsing_twice`] does (the
    /// store tells again what it refuses).
    pub async fn check_and_store(
        source: R,
        store: &Store,
        progress: impl FnMut(u64) + Send + 'static,
        on: &mut (dyn FnMut(ImportEvent<'_>) + Send),
    ) -> Result<Import<R>, StoreError> {
        Import::check_and_store_framing(source, store, None, progress, on).await
    }

    /// [`Import::check_and_store`], and the first session's stored frame
    /// made from its rows as they are written, by `frames` (see
    /// [`ImportFrame`](super::ImportFrame)): stored once the session
    /// committed, when its rows were written in the order a scan reads
    /// them. A session stored after the check gets none (its first report
    /// makes it).
    pub async fn check_and_store_framing(
        source: R,
        store: &Store,
        frames: Option<ImportFrames>,
        mut progress: impl FnMut(u64) + Send + 'static,
        on: &mut (dyn FnMut(ImportEvent<'_>) + Send),
    ) -> Result<Import<R>, StoreError> {
        let held = store.sessions().await?;
        let (tx, mut rx) = mpsc::channel(IN_FLIGHT);
        let check = tokio::task::spawn_blocking(move || {
            Import::check_streaming(source, true, Some(Streamer::new(tx)), &mut progress)
        });
        let made = Arc::new(Mutex::new(None));
        let streamed = match rx.recv().await {
            Some(Streamed::Session(meta)) if !held.iter().any(|e| origin(e) == origin(&meta)) => {
                let mut rx = Some(rx);
                let mut frames = frames;
                // A second call is the store's retry: that attempt fails,
                // and the session is stored after the check instead.
                let stored = store
                    .insert_imported_from(
                        &meta,
                        &mut |stored| match rx.take() {
                            Some(rx) => {
                                let making = frames
                                    .take()
                                    .and_then(|make| make(stored))
                                    .map(|f| Making::new(f, store, Arc::clone(&made)));
                                streamed_batches(rx, stored.id.clone(), making)
                            }
                            None => spawn_reader(1, |_| {
                                Err(read_error(1)(std::io::Error::other(
                                    "the checked samples were streamed once",
                                )))
                            }),
                        },
                        &mut |_| {},
                    )
                    .await;
                stored.ok()
            }
            // Nothing streamed, or a session the store holds: the check
            // goes on alone once the channel is gone.
            _ => {
                drop(rx);
                None
            }
        };
        let import = check.await.map_err(|e| {
            read_error(1)(std::io::Error::other(format!("the check stopped: {e}")))
        })??;
        let frame = made.lock().ok().and_then(|mut m| m.take());
        if let (Some(stored), Some(frame)) = (&streamed, frame) {
            keep(store, stored, frame).await;
        }
        import.store_from(store, streamed, on).await?;
        Ok(import)
    }
}

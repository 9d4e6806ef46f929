//! The stored frame of the session an import streams, made from its rows
//! as they are written (see [`Import::check_and_store_framing`]): the
//! reading side keeps a large session's frame beside its samples
//! ([`Store::put_stored_frame`]) and otherwise makes it from the rows on
//! the first report; made here, the first report after an import reads
//! it like any later one.
//!
//! The frame must be the one a scan of the stored rows would make, so it
//! is made only from rows written in the order a scan reads them
//! (`actual_start_ms`, then id: an import's rows get rising ids in the
//! order written), each read as the scan will read it back
//! ([`with_view_of_cells`]), and kept only under the stamp of the rows as
//! committed.
//!
//! [`Import::check_and_store_framing`]: super::Import::check_and_store_framing

use std::sync::{Arc, Mutex};

use crate::session::SessionMeta;
use crate::store::{Cell, SAMPLE_COLUMNS, Store, with_view_of_cells};
use crate::view::SampleView;

/// The reading side's stored frame of one session, made from its rows as
/// an import stores them.
pub trait ImportFrame: Send {
    /// The format its chunks are stored under
    /// ([`crate::store::FrameStamp::format`]).
    fn format(&self) -> i64;
    /// The session's next row, as a scan will read it back; `false` when
    /// it gives up (no frame is stored).
    fn push(&mut self, v: &SampleView<'_>) -> bool;
    /// Its chunks, the head first, once the session committed with `rows`
    /// samples; `None` stores none.
    fn finish(self: Box<Self>, rows: u64) -> Option<FrameChunkIter>;
}

/// A frame's chunks as [`ImportFrame::finish`] gives them, read one at a
/// time as they are stored.
pub type FrameChunkIter = Box<dyn Iterator<Item = Vec<u8>> + Send>;

/// Makes the [`ImportFrame`] of a session as it is stored (`None`: no
/// frame for this one).
pub type ImportFrames = Box<dyn FnOnce(&SessionMeta) -> Option<Box<dyn ImportFrame>> + Send>;

/// A frame being made where the streamed rows are read, handed back
/// through `done` once they all passed.
pub(super) struct Making {
    frame: Option<Box<dyn ImportFrame>>,
    /// PostgreSQL: JSON comes back as `jsonb` gives it.
    jsonb: bool,
    /// The last row's `actual_start_ms`.
    last_start: f64,
    done: Arc<Mutex<Option<Box<dyn ImportFrame>>>>,
}

impl Making {
    pub(super) fn new(
        frame: Box<dyn ImportFrame>,
        store: &Store,
        done: Arc<Mutex<Option<Box<dyn ImportFrame>>>>,
    ) -> Making {
        Making {
            frame: Some(frame),
            jsonb: matches!(store, Store::Postgres(_)),
            last_start: f64::NEG_INFINITY,
            done,
        }
    }

    /// A batch of whole rows of [`SAMPLE_COLUMNS`] cells, in the order
    /// they are written.
    pub(super) fn rows(&mut self, batch: &[Cell]) {
        let Some(frame) = self.frame.as_mut() else {
            return;
        };
        for row in batch.chunks_exact(SAMPLE_COLUMNS.len()) {
            let last = &mut self.last_start;
            let taken = with_view_of_cells(row, self.jsonb, |v| {
                // Out of the scan's order: a scan would read these rows
                // in another order than the frame holds them.
                let in_order = v.actual_start_ms >= *last;
                *last = v.actual_start_ms;
                in_order && frame.push(v)
            });
            if taken != Ok(true) {
                self.frame = None;
                return;
            }
        }
    }

    /// Every row passed: the frame is handed back.
    pub(super) fn passed(self) {
        if let Ok(mut done) = self.done.lock() {
            *done = self.frame;
        }
    }
}

/// Stores `frame`, made from session `stored`'s rows, under the stamp of
/// its samples as committed. A store that cannot take it is left as it
/// was: the first report makes the frame from the rows instead.
pub(super) async fn keep(store: &Store, stored: &SessionMeta, frame: Box<dyn ImportFrame>) {
    let Ok(Some(stamp)) = store.frame_stamp(&stored.id, frame.format()).await else {
        return;
    };
    if let Some(chunks) = frame.finish(stamp.samples) {
        let _ = store.put_stored_frame(&stored.id, stamp, chunks).await;
    }
}

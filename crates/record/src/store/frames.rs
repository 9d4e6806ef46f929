//! Stored frames (schema version 19): a large session's frame kept as
//! bytes in `session_frames`, one row per chunk, so a report reads a few
//! blobs instead of every row. The store does not know what the bytes
//! are (analysis encodes them: `firsttoken_analyze::StoredFrame`); it
//! keeps, on every chunk, the [`FrameStamp`] the frame was made under, and
//! gives a chunk back only under the stamp asked for.
//!
//! A stamp names a session's samples by their count and highest id: a
//! session's samples are only ever added (ids never given twice) or deleted
//! with the session (its frames with them), so the same two numbers mean
//! the same rows. A frame stamped otherwise is stale and is never read.

use super::schema::{Cell, RowGet};
use super::{Store, StoreError};

/// What a stored frame was made from: the format of its bytes, and its
/// session's samples then (how many, the highest id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameStamp {
    /// The encoding (and the rules behind it) of the bytes.
    pub format: i64,
    /// How many samples the session held.
    pub samples: u64,
    /// The highest id among them.
    pub last_id: i64,
}

impl FrameStamp {
    fn cells(&self, session_id: &str) -> Vec<Cell> {
        vec![
            Cell::Text(session_id.to_owned()),
            Cell::Int(self.format),
            Cell::Int(i64::try_from(self.samples).unwrap_or(i64::MAX)),
            Cell::Int(self.last_id),
        ]
    }
}

impl Store {
    /// The stamp a frame in `format` made from `session_id`'s samples as
    /// they are now would carry; `None` when it has no samples.
    pub async fn frame_stamp(
        &self,
        session_id: &str,
        format: i64,
    ) -> Result<Option<FrameStamp>, StoreError> {
        let found = self
            .query(
                "stamp a frame",
                "SELECT count(*) AS n, max(id) AS last_id FROM samples WHERE session_id = $1",
                vec![Cell::Text(session_id.to_owned())],
                |r| Ok((r.u64("n")?, r.opt_i64("last_id")?)),
            )
            .await?;
        Ok(match found.first() {
            Some(&(samples, Some(last_id))) if samples > 0 => Some(FrameStamp {
                format,
                samples,
                last_id,
            }),
            _ => None,
        })
    }

    /// Chunk `chunk` of `session_id`'s stored frame, if one is stored under
    /// `stamp` exactly; `None` otherwise (none stored, stale, or replaced
    /// meanwhile).
    pub async fn stored_frame_chunk(
        &self,
        session_id: &str,
        stamp: FrameStamp,
        chunk: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let mut cells = stamp.cells(session_id);
        cells.push(Cell::Int(i64::try_from(chunk).unwrap_or(i64::MAX)));
        let found = self
            .query(
                "read a stored frame",
                "SELECT bytes FROM session_frames WHERE session_id = $1 AND format = $2 \
                 AND samples = $3 AND last_id = $4 AND chunk = $5",
                cells,
                |r| r.opt_bytes("bytes"),
            )
            .await?;
        Ok(found.into_iter().next().flatten())
    }

    /// Stores `session_id`'s frame as `chunks` (the head first) under
    /// `stamp`, replacing any frame stored for it, in one transaction.
    pub async fn put_stored_frame(
        &self,
        session_id: &str,
        stamp: FrameStamp,
        chunks: impl Iterator<Item = Vec<u8>> + Send,
    ) -> Result<(), StoreError> {
        let id = || vec![Cell::Text(session_id.to_owned())];
        let mut tx = self.begin("store a frame").await?;
        tx.exec("DELETE FROM session_frames WHERE session_id = $1", id())
            .await?;
        for (k, bytes) in chunks.enumerate() {
            let mut cells = stamp.cells(session_id);
            cells.extend([
                Cell::Int(i64::try_from(k).unwrap_or(i64::MAX)),
                Cell::Bytes(bytes),
            ]);
            tx.exec(
                "INSERT INTO session_frames (session_id, format, samples, last_id, chunk, bytes) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                cells,
            )
            .await?;
        }
        tx.commit().await
    }
}

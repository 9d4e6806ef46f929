//! The stored frame an import makes of the session it streams (see
//! [`firsttoken_record::import::ImportFrame`]): the frame a report of that
//! session would otherwise make from its rows and store on first reading
//! it ([`LoadOptions::stored_frames_from`]), so the first report after an
//! import reads a stored frame as every later one does.
//!
//! The chunks wait in a temporary file until the session is committed (a
//! million rows make ~60 MB of them), or in memory when no temporary file
//! can be written.
//!
//! [`LoadOptions::stored_frames_from`]: crate::LoadOptions::stored_frames_from

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

use firsttoken_analyze::{FrameChunks, STORED_FRAME_FORMAT};
use firsttoken_record::import::{FrameChunkIter, ImportFrame, ImportFrames};
use firsttoken_record::session::{SessionMeta, SessionStatus};
use firsttoken_record::view::SampleView;

/// Frames for [`firsttoken_record::import::Import::check_and_store_framing`]:
/// made for a finished session and stored when it has at least `min_rows`
/// samples, as a report stores one from
/// [`crate::STORED_FRAME_MIN_ROWS`] on (a running session's samples may
/// change: none is made).
pub fn import_frames(min_rows: u64) -> ImportFrames {
    Box::new(move |s: &SessionMeta| {
        if s.status == SessionStatus::Running {
            return None;
        }
        let chunks = FrameChunks::new(s).ok()?;
        Some(Box::new(Made {
            chunks,
            min_rows,
            waiting: Waiting::default(),
        }) as Box<dyn ImportFrame>)
    })
}

struct Made {
    chunks: FrameChunks,
    min_rows: u64,
    waiting: Waiting,
}

impl ImportFrame for Made {
    fn format(&self) -> i64 {
        STORED_FRAME_FORMAT
    }

    fn push(&mut self, v: &SampleView<'_>) -> bool {
        // A row analysis refuses: a report refuses the session too.
        match self.chunks.push_view(v) {
            Ok(Some(chunk)) => {
                self.waiting.put(chunk);
                true
            }
            Ok(None) => true,
            Err(_) => false,
        }
    }

    fn finish(self: Box<Self>, rows: u64) -> Option<FrameChunkIter> {
        if rows < self.min_rows || self.chunks.rows() != rows {
            return None;
        }
        let (head, last) = self.chunks.finish();
        let rest = self.waiting.read_back()?;
        Some(Box::new(std::iter::once(head).chain(rest).chain(last)))
    }
}

/// Chunks of rows until the head is made: in a temporary file (each a
/// length, then its bytes), then in memory once the file cannot be
/// written.
#[derive(Default)]
struct Waiting {
    file: Option<File>,
    in_file: usize,
    /// No file could be made, or writing one failed.
    no_file: bool,
    held: Vec<Vec<u8>>,
}

impl Waiting {
    fn put(&mut self, chunk: Vec<u8>) {
        if !self.no_file && self.file.is_none() {
            self.file = tempfile::tempfile().ok();
            self.no_file = self.file.is_none();
        }
        if let Some(f) = self.file.as_mut().filter(|_| !self.no_file) {
            let len = (chunk.len() as u64).to_le_bytes();
            if f.write_all(&len).and_then(|()| f.write_all(&chunk)).is_ok() {
                self.in_file += 1;
                return;
            }
            // What was written whole before is read back; the rest waits
            // here (a chunk cut short is never read: `in_file` counts).
            self.no_file = true;
        }
        self.held.push(chunk);
    }

    /// The chunks in order; `None` when the file cannot be read back. A
    /// read that fails part way ends the chunks early: the frame stored is
    /// then not whole, which a reader takes as no frame (it reads the rows
    /// and stores their frame instead).
    fn read_back(self) -> Option<impl Iterator<Item = Vec<u8>> + Send> {
        let mut file = match self.file {
            Some(mut f) => {
                f.seek(SeekFrom::Start(0)).ok()?;
                Some(BufReader::new(f))
            }
            None => None,
        };
        let from_file = (0..self.in_file).map_while(move |_| {
            let f = file.as_mut()?;
            let mut len = [0u8; 8];
            f.read_exact(&mut len).ok()?;
            let mut chunk = vec![0; usize::try_from(u64::from_le_bytes(len)).ok()?];
            f.read_exact(&mut chunk).ok()?;
            Some(chunk)
        });
        Some(from_file.chain(self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::Waiting;

    #[test]
    fn waiting_chunks_come_back_in_order_from_the_file_or_memory() {
        let chunks: Vec<Vec<u8>> = (0..5u8).map(|k| vec![k; 1000 * usize::from(k)]).collect();
        let mut w = Waiting::default();
        for c in &chunks[..3] {
            w.put(c.clone());
        }
        assert_eq!(w.in_file, 3, "in the temporary file");
        // Once the file cannot be written, the rest wait in memory.
        w.no_file = true;
        for c in &chunks[3..] {
            w.put(c.clone());
        }
        assert_eq!(w.held.len(), 2);
        assert_eq!(w.read_back().unwrap().collect::<Vec<_>>(), chunks);
    }
}

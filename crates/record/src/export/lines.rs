//! Sample rows made into an export's lines on a thread of their own
//! (see [`SampleLines`]).

use std::io::Write;

use super::{Format, SAMPLE_ROW_LINE_SCHEMA, write_csv_record, write_line};
use crate::session::SampleRow;

/// Rows per batch made into lines on the [`SampleLines`] thread.
const LINE_BATCH: usize = 512;

/// Sample rows made into lines (JSONL or CSV) on a thread of their own, a
/// batch at a time, while the caller reads the next rows; the caller
/// writes the lines, in order. Serialising is a fifth or more of an
/// export's CPU time (`perf`): on two cores it no longer waits for the
/// reading.
pub(super) struct SampleLines {
    format: Format,
    batch: Vec<SampleRow>,
    /// `None` without the thread: the caller makes the lines itself.
    jobs: Option<std::sync::mpsc::SyncSender<Vec<SampleRow>>>,
    done: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    /// Batches sent and not yet written.
    pending: usize,
}

impl SampleLines {
    pub(super) fn start(format: Format) -> SampleLines {
        let (jobs, rows) = std::sync::mpsc::sync_channel::<Vec<SampleRow>>(2);
        let (made, done) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("firsttoken-lines".into())
            .spawn(move || {
                for batch in rows {
                    if made.send(lines_of(format, &batch)).is_err() {
                        return;
                    }
                }
            });
        SampleLines {
            format,
            batch: Vec::with_capacity(LINE_BATCH),
            jobs: spawned.is_ok().then_some(jobs),
            done,
            pending: 0,
        }
    }

    /// Takes one row; writes to `w` the lines made so far.
    pub(super) fn push(&mut self, row: SampleRow, w: &mut impl Write) -> std::io::Result<()> {
        self.batch.push(row);
        if self.batch.len() < LINE_BATCH {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(LINE_BATCH));
        self.send(batch, w)?;
        while let Ok(lines) = self.done.try_recv() {
            self.pending -= 1;
            w.write_all(&lines?)?;
        }
        Ok(())
    }

    /// The rows not sent yet, then every line, written in order.
    pub(super) fn finish(mut self, w: &mut impl Write) -> std::io::Result<()> {
        let batch = std::mem::take(&mut self.batch);
        if !batch.is_empty() {
            self.send(batch, w)?;
        }
        self.written(w)
    }

    /// Hands `batch` to the thread, or, without one, writes its lines.
    fn send(&mut self, batch: Vec<SampleRow>, w: &mut impl Write) -> std::io::Result<()> {
        let batch = match &self.jobs {
            Some(jobs) => match jobs.send(batch) {
                Ok(()) => {
                    self.pending += 1;
                    return Ok(());
                }
                // The thread is gone: the lines it made first, then these.
                Err(std::sync::mpsc::SendError(batch)) => {
                    self.jobs = None;
                    self.written(w)?;
                    batch
                }
            },
            None => batch,
        };
        w.write_all(&lines_of(self.format, &batch)?)
    }

    /// Writes the lines of every batch sent; a batch the thread never
    /// made (it stopped) is an error, never a gap in the file.
    fn written(&mut self, w: &mut impl Write) -> std::io::Result<()> {
        while self.pending > 0 {
            let lines = self.done.recv().map_err(|_| {
                std::io::Error::other("the thread making the export's lines stopped")
            })?;
            self.pending -= 1;
            w.write_all(&lines?)?;
        }
        Ok(())
    }
}

/// `rows` as lines of `format`, one buffer.
fn lines_of(format: Format, rows: &[SampleRow]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(rows.len() * 1536);
    for r in rows {
        match format {
            Format::Jsonl => write_line(&mut out, SAMPLE_ROW_LINE_SCHEMA, r),
            Format::Csv => write_csv_record(&mut out, r),
        }?;
    }
    Ok(out)
}

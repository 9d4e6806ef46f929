//! An export file into a store, in bounded memory: two passes over it.
//!
//! [`Import::check`] reads the whole file line by line and checks all that
//! an import could refuse: every line is a record of a known schema, every
//! sample and span would be accepted by the store, every sample and span
//! names a session that has a session line, every session has samples and
//! one session line. It keeps only the session lines, the counts, and where
//! each session's lines are; nothing is stored unless the whole file
//! passes; the samples' cells it made, marked imported, go to a temporary
//! file. [`Import::store`] then stores each session in one transaction
//! under a new id, marked imported ([`crate::export::mark_imported`]'s
//! rules): a reader thread reads its samples' cells back from that file
//! (or, when none could be written, parses the session's lines again)
//! into batches and hands them over a bounded channel to the transaction
//! (on SQLite's thread, or on a PostgreSQL connection), so the next batch
//! is read while the store writes. The session's spans follow
//! under the new id once it is committed. A session the store already
//! holds by its original id ([`crate::export::origin`]) is skipped.
//!
//! [`Import::check_and_store`] runs the two at once for the file's first
//! session (`stream.rs`): its checked samples go into its transaction
//! while the check reads on, and it commits only once the whole file
//! passed, so the store's writes overlap the parsing (1M samples on a
//! 2-core machine: SQLite 14.4–15.4 s instead of 17.0–18.0 s, PostgreSQL
//! 19.7–21.5 s instead of 21.6–27.2 s; docs/PERFORMANCE.md).
//! [`Import::check_and_store_framing`] also hands that session's rows, as
//! a scan will read them back, to the reading side's frame
//! ([`ImportFrame`], `frame.rs`), stored beside them once they are
//! committed, so the first report reads a frame, not the rows.
//!
//! ```no_run
//! # async fn demo() -> Result<(), firsttoken_record::StoreError> {
//! use firsttoken_record::import::{Import, ImportEvent};
//! use firsttoken_record::Store;
//! let file = std::fs::File::open("export.jsonl").expect("the export");
//! let import = Import::check(file, &mut |_bytes| {})?;
//! let store = Store::open("firsttoken.db").await?;
//! import
//!     .store(&store, &mut |e| {
//!         if let ImportEvent::Stored { stored_as, .. } = e {
//!             println!("stored as {}", stored_as.id);
//!         }
//!     })
//!     .await?;
//! # Ok(()) }
//! ```

mod check;
mod frame;
mod stream;

pub use frame::{FrameChunkIter, ImportFrame, ImportFrames};

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::export::{Line, Record, for_each_line_from, imported_row, origin, parse_line};
use crate::scrape::EngineScrape;
use crate::session::SessionMeta;
use crate::span::{MAX_SPANS_PER_SESSION, SpanRow};
use crate::store::{
    Cell, IMPORT_BATCH_ROWS, SAMPLE_COLUMNS, SampleBatches, Store, StoreError, read_spilled,
    sample_cells,
};

/// Spans per [`Store::append_spans`] batch.
const SPAN_BATCH: usize = 1000;
/// Batches parsed ahead of the store.
const IN_FLIGHT: usize = 4;

/// Bytes `start..end` of the file, lines from `line` on, all of one
/// session and one kind (blank lines may stand between them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: u64,
    end: u64,
    line: usize,
}

/// Adds `line` to `runs`: to the last run when the previous non-blank
/// line of the file was of the same session and kind, else as a new run.
fn extend(runs: &mut Vec<Run>, line: &Line<'_>, follows: bool) {
    match runs.last_mut() {
        Some(run) if follows => run.end = line.end,
        _ => runs.push(Run {
            start: line.start,
            end: line.end,
            line: line.number,
        }),
    }
}

/// A session of an export, as [`Import::check`] found it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportSession {
    /// Its session line.
    pub meta: SessionMeta,
    /// How many sample lines it has.
    pub samples: u64,
    /// How many span lines it has.
    pub spans: u64,
    sample_runs: Vec<Run>,
    /// Where its samples' cells are in the spill (see [`Import::check`]);
    /// none for a session streamed while checking (its lines are parsed
    /// again if it must be stored after the check).
    spill_runs: Vec<Run>,
    span_runs: Vec<Run>,
    /// Its engine scrapes (`firsttoken.engine_scrape.v1` lines).
    scrapes: Vec<EngineScrape>,
}

/// What [`Import::store`] reports as it goes.
#[derive(Debug)]
pub enum ImportEvent<'a> {
    /// The store already holds this session, as `held_as`: skipped.
    Skipped {
        /// The session of the file.
        session: &'a ImportSession,
        /// The id the store holds it under.
        held_as: &'a str,
    },
    /// Samples of a session inserted so far, in its open transaction.
    Progress {
        /// The session of the file.
        session: &'a ImportSession,
        /// Samples inserted.
        stored: u64,
    },
    /// A session committed, then its spans stored.
    Stored {
        /// The session of the file.
        session: &'a ImportSession,
        /// The session as stored (its new id).
        stored_as: &'a SessionMeta,
        /// Spans stored.
        spans: u64,
    },
}

/// A checked export, ready to store (see the module docs).
#[derive(Debug)]
pub struct Import<R> {
    source: Arc<Mutex<R>>,
    sessions: Vec<ImportSession>,
    /// The samples' cells as the check pass made them (a temporary file,
    /// gone when the import is); `None`: the store pass parses again.
    spill: Option<Arc<Mutex<File>>>,
}

fn read_error(line: usize) -> impl Fn(std::io::Error) -> StoreError {
    move |source| StoreError::Read { line, source }
}

impl<R> Import<R> {
    /// The sessions of the file, in the order of their session lines.
    pub fn sessions(&self) -> &[ImportSession] {
        &self.sessions
    }
}

impl<R: Read + Seek + Send + 'static> Import<R> {
    /// Pass 2: stores every session the store does not hold yet (see the
    /// module docs), telling `on` what it does. A session that fails to
    /// store is rolled back and stops the import; the sessions stored
    /// before it stay.
    pub async fn store(
        &self,
        store: &Store,
        on: &mut (dyn FnMut(ImportEvent<'_>) + Send),
    ) -> Result<(), StoreError> {
        self.store_from(store, None, on).await
    }

    /// [`Import::store`], the first session's samples already committed
    /// as `streamed` when given ([`Import::check_and_store`]).
    async fn store_from(
        &self,
        store: &Store,
        mut streamed: Option<SessionMeta>,
        on: &mut (dyn FnMut(ImportEvent<'_>) + Send),
    ) -> Result<(), StoreError> {
        let mut held = store.sessions().await?;
        let mut stored_any = false;
        for s in &self.sessions {
            let stored = match streamed.take() {
                Some(stored) => stored,
                None => {
                    if let Some(e) = held.iter().find(|e| origin(e) == origin(&s.meta)) {
                        on(ImportEvent::Skipped {
                            session: s,
                            held_as: &e.id,
                        });
                        continue;
                    }
                    store
                        .insert_imported_from(
                            &s.meta,
                            &mut |stored| self.sample_batches(s, &stored.id),
                            &mut |n| {
                                on(ImportEvent::Progress {
                                    session: s,
                                    stored: n,
                                })
                            },
                        )
                        .await?
                }
            };
            // After the session is committed: an interrupted import keeps
            // the samples, and `firsttoken import-spans` adds spans alone.
            let mut batches = self.span_batches(s, &stored.id);
            let mut spans = 0;
            while let Some(batch) = batches.recv().await {
                spans += store
                    .append_spans(&stored.id, &batch?, MAX_SPANS_PER_SESSION)
                    .await?
                    .stored;
            }
            for scrape in &s.scrapes {
                let mut scrape = scrape.clone();
                scrape.session_id.clone_from(&stored.id);
                store.put_engine_scrape(&scrape).await?;
            }
            on(ImportEvent::Stored {
                session: s,
                stored_as: &stored,
                spans,
            });
            held.push(stored);
            stored_any = true;
        }
        if stored_any {
            store.refresh_stats().await?;
        }
        Ok(())
    }

    /// Session `s`'s samples, marked imported under `new_id`, in batches
    /// of whole rows of cells.
    fn sample_batches(&self, s: &ImportSession, new_id: &str) -> SampleBatches {
        // A session streamed while checking was not spilled.
        if let Some(spill) = &self.spill
            && !s.spill_runs.is_empty()
        {
            return spilled_batches(spill, s.spill_runs.clone(), new_id.to_owned());
        }
        let (id, new_id) = (s.meta.id.clone(), new_id.to_owned());
        let full = IMPORT_BATCH_ROWS * SAMPLE_COLUMNS.len();
        self.read_batches(
            s.sample_runs.clone(),
            full,
            Vec::len,
            move |batch: &mut Vec<Cell>, line| match parse_line(line.text) {
                Ok(Record::Sample(r)) if r.session_id == id => {
                    let cells =
                        sample_cells(&imported_row(*r, &new_id)).map_err(|m| line.malformed(m))?;
                    batch.extend(cells);
                    Ok(())
                }
                _ => Err(StoreError::Changed { line: line.number }),
            },
        )
    }

    /// Session `s`'s spans, under `new_id`, in batches.
    fn span_batches(
        &self,
        s: &ImportSession,
        new_id: &str,
    ) -> mpsc::Receiver<Result<Vec<SpanRow>, StoreError>> {
        let (id, new_id) = (s.meta.id.clone(), new_id.to_owned());
        self.read_batches(
            s.span_runs.clone(),
            SPAN_BATCH,
            Vec::len,
            move |batch: &mut Vec<SpanRow>, line| match parse_line(line.text) {
                Ok(Record::Span(mut span)) if span.session_id == id => {
                    span.session_id.clone_from(&new_id);
                    batch.push(*span);
                    Ok(())
                }
                _ => Err(StoreError::Changed { line: line.number }),
            },
        )
    }

    /// Reads the lines of `runs` on a thread of its own, `add`ing each to
    /// a batch and sending each batch of `full` (by `size`) over a bounded
    /// channel; the last batch may be smaller. The thread stops at the end,
    /// at an error (sent as the last item), or when the receiver is dropped.
    fn read_batches<B, F>(
        &self,
        runs: Vec<Run>,
        full: usize,
        size: fn(&B) -> usize,
        mut add: F,
    ) -> mpsc::Receiver<Result<B, StoreError>>
    where
        B: Default + Send + 'static,
        F: FnMut(&mut B, &Line<'_>) -> Result<(), StoreError> + Send + 'static,
    {
        let source = Arc::clone(&self.source);
        let first = runs.first().map_or(1, |r| r.line);
        spawn_reader(first, move |send| {
            let mut batch = B::default();
            read_runs(&source, &runs, |line| {
                add(&mut batch, &line)?;
                if size(&batch) < full {
                    return Ok(true);
                }
                Ok(send(std::mem::take(&mut batch)))
            })?;
            if size(&batch) > 0 {
                send(batch);
            }
            Ok(())
        })
    }
}

/// Runs `read` on a thread of its own, over a bounded channel: `read`
/// sends each batch it fills with the function it is given, which says
/// `false` once the receiver is gone (the import stopped); its error, if
/// any, is sent as the last item. A thread that cannot start is an error
/// at `first_line`.
fn spawn_reader<B, F>(first_line: usize, read: F) -> mpsc::Receiver<Result<B, StoreError>>
where
    B: Send + 'static,
    F: FnOnce(&dyn Fn(B) -> bool) -> Result<(), StoreError> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    let sender = tx.clone();
    let spawned = std::thread::Builder::new()
        .name("firsttoken-import".into())
        .spawn(move || {
            if let Err(e) = read(&|b| sender.blocking_send(Ok(b)).is_ok()) {
                let _ = sender.blocking_send(Err(e));
            }
        });
    if let Err(e) = spawned {
        let _ = tx.try_send(Err(read_error(first_line)(e)));
    }
    rx
}

/// The spilled cells of `runs` (one session's samples, in file order)
/// read back on a thread of their own, each row's session cell set to
/// `new_id`, sent in batches of [`IMPORT_BATCH_ROWS`] rows over a bounded
/// channel; an error is sent as the last item.
fn spilled_batches(spill: &Arc<Mutex<File>>, runs: Vec<Run>, new_id: String) -> SampleBatches {
    let spill = Arc::clone(spill);
    let first = runs.first().map_or(1, |r| r.line);
    // The spill is this process's own file: a failure to read it back is
    // named as such, at the first line of the run.
    let failed = |line: usize| {
        move |e: std::io::Error| {
            read_error(line)(std::io::Error::other(format!(
                "reading back the checked samples from a temporary file: {e}"
            )))
        }
    };
    spawn_reader(first, move |send| {
        let mut file = spill
            .lock()
            .map_err(|_| failed(first)(std::io::Error::other("a reader panicked")))?;
        let mut batch = Vec::with_capacity(IMPORT_BATCH_ROWS * SAMPLE_COLUMNS.len());
        for run in &runs {
            file.seek(SeekFrom::Start(run.start))
                .map_err(failed(run.line))?;
            let mut r = BufReader::with_capacity(1 << 20, (&mut *file).take(run.end - run.start));
            if !spilled_rows(&mut r, &new_id, &mut batch, send).map_err(failed(run.line))? {
                return Ok(());
            }
        }
        if !batch.is_empty() {
            send(batch);
        }
        Ok(())
    })
}

/// The spilled rows of `r` added to `batch`, each row's session cell set
/// to `new_id`, each batch of [`IMPORT_BATCH_ROWS`] rows `send`; `false`
/// once the receiver is gone (the import stopped).
fn spilled_rows(
    r: &mut impl Read,
    new_id: &str,
    batch: &mut Vec<Cell>,
    send: &dyn Fn(Vec<Cell>) -> bool,
) -> std::io::Result<bool> {
    let width = SAMPLE_COLUMNS.len();
    let full = IMPORT_BATCH_ROWS * width;
    loop {
        let at = batch.len();
        if !read_spilled(r, width, batch)? {
            return Ok(true);
        }
        batch[at] = Cell::Text(new_id.to_owned());
        if batch.len() >= full && !send(std::mem::replace(batch, Vec::with_capacity(full))) {
            return Ok(false);
        }
    }
}

/// `f` over the lines of `runs`, in order, until it returns `Ok(false)`.
fn read_runs<R: Read + Seek>(
    source: &Mutex<R>,
    runs: &[Run],
    mut f: impl FnMut(Line<'_>) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let first = runs.first().map_or(1, |r| r.line);
    let mut file = source.lock().map_err(|_| {
        read_error(first)(std::io::Error::other(
            "an earlier reader of the export panicked",
        ))
    })?;
    for run in runs {
        file.seek(SeekFrom::Start(run.start))
            .map_err(read_error(run.line))?;
        let len = run.end - run.start;
        let cap = usize::try_from(len).unwrap_or(usize::MAX).min(1 << 20);
        let reader = BufReader::with_capacity(cap.max(1), (&mut *file).take(len));
        let mut more = true;
        for_each_line_from(reader, run.line, run.start, |line| {
            more = f(line)?;
            Ok(more)
        })?;
        if !more {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(number: usize, start: u64, end: u64) -> Line<'static> {
        Line {
            number,
            start,
            end,
            text: "x",
        }
    }

    #[test]
    fn lines_that_follow_each_other_share_a_run() {
        let mut runs = Vec::new();
        extend(&mut runs, &line(1, 0, 10), false);
        extend(&mut runs, &line(3, 11, 20), true);
        extend(&mut runs, &line(5, 30, 40), false);
        assert_eq!(
            runs,
            [
                Run {
                    start: 0,
                    end: 20,
                    line: 1
                },
                Run {
                    start: 30,
                    end: 40,
                    line: 5
                }
            ]
        );
    }
}

//! Pass 1: the whole file checked, in bounded memory, on every core. The
//! calling thread reads the file in chunks of whole lines and hands them
//! to parser threads; each parses and checks its chunk's lines and
//! returns one small summary a line, and its samples' cells as bytes
//! ([`crate::store::spill_sample`]); the calling thread takes them in
//! file order, keeps the books (which session each line belongs to, where
//! its runs of lines and of spilled cells are) and appends the cells to a
//! temporary file, so the store pass reads them back instead of parsing
//! the JSON again. The first problem in file order is the one reported, as
//! a sequential reader would.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex, mpsc};

use super::stream::Streamer;
use super::{Import, ImportSession, Run, extend, read_error};
use crate::export::{Line, Record, for_each_line_from, imported_meta, imported_row, parse_line};
use crate::scrape::EngineScrape;
use crate::session::SessionMeta;
use crate::store::{StoreError, sanitized, scrape_cells, session_cells, span_cells, spill_sample};

/// Bytes of whole lines per chunk (a longer line makes a longer chunk).
const CHUNK_BYTES: usize = 1 << 20;
/// How often (in bytes read) [`Import::check`] reports.
const REPORT_BYTES: u64 = 16 << 20;

/// What a checked line is, for the books.
pub(super) enum Seen {
    Session(Box<SessionMeta>),
    /// Its session, and how many bytes its cells took in the spill.
    Sample(String, u64),
    Span(String),
    /// Scrapes are few and small: kept whole for the store pass.
    Scrape(Box<EngineScrape>),
}

/// One checked line.
pub(super) struct Summary {
    number: usize,
    start: u64,
    end: u64,
    pub(super) seen: Seen,
}

impl Summary {
    fn line(&self) -> Line<'static> {
        Line {
            number: self.number,
            start: self.start,
            end: self.end,
            text: "",
        }
    }
}

/// Lines `first_line…` of the file, from byte `start`.
struct Chunk {
    index: usize,
    first_line: usize,
    start: u64,
    bytes: Vec<u8>,
}

/// A chunk's summaries, its samples' cells spilled, and the problem that
/// stopped it (after them).
type Checked = (usize, Vec<Summary>, Vec<u8>, Option<StoreError>);

/// Parses and checks one line: it is a record, and the store would take
/// it; a sample's cells (marked imported, under its own session id) go to
/// `spill`.
fn summarize(line: &Line<'_>, spill: &mut Vec<u8>) -> Result<Summary, StoreError> {
    let refused =
        |what: &str, m: String| line.malformed(format!("the store would refuse this {what}: {m}"));
    let seen = match parse_line(line.text).map_err(|m| line.malformed(m))? {
        Record::Session(meta) => {
            session_cells(&sanitized(&imported_meta(&meta, &meta.id)))
                .map_err(|m| refused("session", m))?;
            Seen::Session(meta)
        }
        Record::Sample(row) => {
            let id = row.session_id.clone();
            let before = spill.len();
            spill_sample(&imported_row(*row, &id), spill).map_err(|m| refused("sample", m))?;
            Seen::Sample(id, (spill.len() - before) as u64)
        }
        Record::Span(span) => {
            span_cells(&span).map_err(|m| refused("span", m))?;
            Seen::Span(span.session_id)
        }
        Record::Scrape(scrape) => {
            scrape_cells(&scrape).map_err(|m| refused("engine scrape", m))?;
            Seen::Scrape(scrape)
        }
    };
    Ok(Summary {
        number: line.number,
        start: line.start,
        end: line.end,
        seen,
    })
}

fn check_chunk(c: Chunk) -> Checked {
    let mut out = Vec::new();
    let mut spill = Vec::new();
    let done = for_each_line_from(c.bytes.as_slice(), c.first_line, c.start, |line| {
        out.push(summarize(&line, &mut spill)?);
        Ok(true)
    });
    (c.index, out, spill, done.err())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Session,
    Sample,
    Span,
    Scrape,
}

/// What the books hold per session id, in the order ids appear.
#[derive(Default)]
struct Entry {
    id: String,
    meta: Option<SessionMeta>,
    samples: u64,
    spans: u64,
    sample_runs: Vec<Run>,
    spill_runs: Vec<Run>,
    span_runs: Vec<Run>,
    scrapes: Vec<EngineScrape>,
}

#[derive(Default)]
struct Books {
    /// Bytes of samples' cells spilled so far.
    spilled: u64,
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    /// Entries with a session line, in file order.
    order: Vec<usize>,
    /// The entry and kind of the last non-blank line.
    last: Option<(usize, Kind)>,
}

impl Books {
    /// Books one checked line; a sample's cells were spilled when
    /// `spilled` (all of a session's, or none: [`Streamer::takes`]).
    fn add(&mut self, s: Summary, spilled: bool) -> Result<(), StoreError> {
        let line = s.line();
        let id = match &s.seen {
            Seen::Session(m) => &m.id,
            Seen::Sample(id, _) | Seen::Span(id) => id,
            Seen::Scrape(s) => &s.session_id,
        };
        let at = match self.index.get(id.as_str()) {
            Some(&at) => at,
            None => {
                self.index.insert(id.clone(), self.entries.len());
                self.entries.push(Entry {
                    id: id.clone(),
                    ..Entry::default()
                });
                self.entries.len() - 1
            }
        };
        let follows = |kind| self.last == Some((at, kind));
        let (sample_follows, span_follows) = (follows(Kind::Sample), follows(Kind::Span));
        let e = &mut self.entries[at];
        let kind = match s.seen {
            Seen::Session(meta) => {
                if e.meta.is_some() {
                    return Err(StoreError::DuplicateSession {
                        line: line.number,
                        session_id: e.id.clone(),
                    });
                }
                e.meta = Some(*meta);
                self.order.push(at);
                Kind::Session
            }
            Seen::Sample(_, bytes) => {
                e.samples += 1;
                extend(&mut e.sample_runs, &line, sample_follows);
                if spilled {
                    let cells = Line {
                        start: self.spilled,
                        end: self.spilled + bytes,
                        ..line
                    };
                    extend(&mut e.spill_runs, &cells, sample_follows);
                    self.spilled += bytes;
                }
                Kind::Sample
            }
            Seen::Span(_) => {
                e.spans += 1;
                extend(&mut e.span_runs, &line, span_follows);
                Kind::Span
            }
            Seen::Scrape(scrape) => {
                e.scrapes.push(*scrape);
                Kind::Scrape
            }
        };
        self.last = Some((at, kind));
        Ok(())
    }

    /// The refusals that need the whole file, then the sessions in the
    /// order of their session lines.
    fn finish(mut self) -> Result<Vec<ImportSession>, StoreError> {
        let e = &self.entries;
        if let Some(e) = e
            .iter()
            .find(|e| e.meta.is_none() && (e.spans > 0 || !e.scrapes.is_empty()))
        {
            return Err(StoreError::NoSpanSession {
                session_id: e.id.clone(),
            });
        }
        if let Some(e) = e.iter().find(|e| e.meta.is_none()) {
            return Err(StoreError::NoSessionRecord {
                session_id: e.id.clone(),
            });
        }
        if self.order.is_empty() {
            return Err(StoreError::NoSessions);
        }
        if let Some(e) = e.iter().find(|e| e.samples == 0) {
            return Err(StoreError::NoSamples {
                session_id: e.id.clone(),
            });
        }
        let mut out = Vec::with_capacity(self.order.len());
        for at in std::mem::take(&mut self.order) {
            let e = std::mem::take(&mut self.entries[at]);
            if let Some(meta) = e.meta {
                out.push(ImportSession {
                    meta,
                    samples: e.samples,
                    spans: e.spans,
                    sample_runs: e.sample_runs,
                    spill_runs: e.spill_runs,
                    span_runs: e.span_runs,
                    scrapes: e.scrapes,
                });
            }
        }
        Ok(out)
    }
}

/// The next chunk of whole lines and how many lines it holds, or `None`
/// at the end.
fn next_chunk(
    r: &mut impl BufRead,
    index: usize,
    first_line: usize,
    start: u64,
) -> Result<Option<(Chunk, usize)>, StoreError> {
    let mut bytes = Vec::with_capacity(CHUNK_BYTES + (64 << 10));
    let mut lines = 0;
    while bytes.len() < CHUNK_BYTES {
        let n = r
            .read_until(b'\n', &mut bytes)
            .map_err(read_error(first_line + lines))?;
        if n == 0 {
            break;
        }
        lines += 1;
    }
    let chunk = Chunk {
        index,
        first_line,
        start,
        bytes,
    };
    Ok((lines > 0).then_some((chunk, lines)))
}

impl<R: Read + Seek> Import<R> {
    /// Pass 1: reads `source` from its start to its end and checks it all
    /// (see the module docs), parsing on every core; `progress` hears the
    /// bytes read so far, now and then. Blocking: run it where blocking is
    /// allowed (e.g. `tokio::task::spawn_blocking`). The first problem in
    /// file order is the error: a line's ([`StoreError::Malformed`] or
    /// [`StoreError::Read`], naming it; [`StoreError::DuplicateSession`]),
    /// else one that needs the whole file ([`StoreError::NoSpanSession`],
    /// [`StoreError::NoSessionRecord`], [`StoreError::NoSessions`],
    /// [`StoreError::NoSamples`], in that order).
    ///
    /// The samples' cells it makes are kept in a temporary file (in the
    /// system's temporary directory; 551 MB for a 1.44 GB export of a
    /// million samples), which the store pass reads back: what is stored
    /// is what was checked. Where no temporary file can be written,
    /// or one fills up, the store pass parses the samples' lines again.
    pub fn check(source: R, progress: &mut dyn FnMut(u64)) -> Result<Import<R>, StoreError> {
        Self::check_streaming(source, true, None, progress)
    }

    /// [`Import::check`] writing no temporary file: the store pass parses
    /// the samples' lines again (a sample line changed since the check is
    /// then refused, [`StoreError::Changed`]).
    pub fn check_parsing_twice(
        source: R,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Import<R>, StoreError> {
        Self::check_streaming(source, false, None, progress)
    }

    /// The check, the samples' cells kept when `keep`; with `stream`, the
    /// first session's are also handed to the store as they are checked
    /// (`stream.rs`).
    pub(super) fn check_streaming(
        mut source: R,
        keep: bool,
        mut stream: Option<Streamer>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Import<R>, StoreError> {
        source.seek(SeekFrom::Start(0)).map_err(read_error(1))?;
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4));
        let (work_tx, work_rx) = mpsc::sync_channel::<Chunk>(2 * workers);
        let (done_tx, done_rx) = mpsc::channel::<Checked>();
        let work_rx = Arc::new(Mutex::new(work_rx));
        let mut reader = BufReader::with_capacity(1 << 20, &mut source);
        // Without a temporary file (none can be made, or one fills up),
        // the store pass parses the samples again.
        let mut spill = keep
            .then(tempfile::tempfile)
            .and_then(Result::ok)
            .map(|f| BufWriter::with_capacity(1 << 20, f));
        let sessions = std::thread::scope(|scope| {
            for _ in 0..workers {
                let (work, done) = (Arc::clone(&work_rx), done_tx.clone());
                scope.spawn(move || {
                    // The lock is held only to take the next chunk.
                    while let Some(chunk) = work.lock().ok().and_then(|rx| rx.recv().ok()) {
                        if done.send(check_chunk(chunk)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(done_tx);
            let books = keep_books(
                &mut reader,
                work_tx,
                &done_rx,
                2 * workers,
                &mut spill,
                stream.as_mut(),
                progress,
            );
            books.and_then(Books::finish)
        })?;
        drop(reader);
        // Only now, nothing left to refuse: the streamed session commits.
        if let Some(stream) = stream {
            stream.passed();
        }
        let spill = spill
            .and_then(|w| w.into_inner().ok())
            .map(|f| Arc::new(Mutex::new(f)));
        Ok(Import {
            source: Arc::new(Mutex::new(source)),
            sessions,
            spill,
        })
    }
}

/// Feeds chunks to the parsers, at most `depth` at a time, and takes
/// their summaries in file order. Dropping `work` (on return) lets the
/// parsers finish.
fn keep_books(
    reader: &mut impl BufRead,
    work: mpsc::SyncSender<Chunk>,
    done: &mpsc::Receiver<Checked>,
    depth: usize,
    spill: &mut Option<BufWriter<File>>,
    mut stream: Option<&mut Streamer>,
    progress: &mut dyn FnMut(u64),
) -> Result<Books, StoreError> {
    let mut books = Books::default();
    let (mut sent, mut next) = (0usize, 0usize);
    let (mut line, mut offset, mut eof) = (1usize, 0u64, false);
    let mut waiting: BTreeMap<usize, Checked> = BTreeMap::new();
    let mut report_at = REPORT_BYTES;
    loop {
        while !eof && sent - next < depth {
            match next_chunk(reader, sent, line, offset)? {
                Some((chunk, lines)) => {
                    line += lines;
                    offset += chunk.bytes.len() as u64;
                    sent += 1;
                    if work.send(chunk).is_err() {
                        break;
                    }
                }
                None => eof = true,
            }
        }
        if next == sent {
            return Ok(books);
        }
        let checked = done.recv().map_err(|_| {
            read_error(line)(std::io::Error::other("a parser of the export stopped"))
        })?;
        waiting.insert(checked.0, checked);
        while let Some((_, summaries, spilled, problem)) = waiting.remove(&next) {
            next += 1;
            let mut at = 0;
            for s in summaries {
                let n = match &s.seen {
                    Seen::Sample(_, n) => *n as usize,
                    _ => 0,
                };
                let cells = spilled.get(at..at + n).unwrap_or(&[]);
                at += n;
                // Streaming, each line's cells are spilled unless streamed.
                let mut kept = true;
                if let Some(stream) = stream.as_deref_mut() {
                    stream.see(&s, cells);
                    kept = !stream.takes(&s);
                    if kept {
                        spill_out(spill, cells);
                    }
                }
                let end = s.end;
                books.add(s, kept)?;
                if end >= report_at {
                    progress(end);
                    report_at = end + REPORT_BYTES;
                }
            }
            if stream.is_none() {
                spill_out(spill, &spilled);
            }
            if let Some(e) = problem {
                return Err(e);
            }
        }
    }
}

/// Appends `cells` to the spill; one that cannot take them is gone (the
/// store pass then parses the lines again).
fn spill_out(spill: &mut Option<BufWriter<File>>, cells: &[u8]) {
    if spill.as_mut().is_some_and(|w| w.write_all(cells).is_err()) {
        *spill = None;
    }
}

//! A session's frame as bytes a store can keep, so a report reads a large
//! finished session as a few blobs instead of a million rows.
//!
//! [`FrameBuilder::stored_chunks`] gives a builder's rows (one session's,
//! read from the store) as a head — its strings, Server-Timing lists,
//! sessions, flow and turn rows, how many rows — followed by the rows
//! `STORED_CHUNK_ROWS` at a time with their Server-Timing values, each
//! chunk encoded with `postcard` and compressed with zstd. [`StoredFrame`]
//! reads them back, chunk by chunk, into a builder to
//! [`FrameBuilder::append`]; it checks every
//! reference the rows make (strings, sessions, lists, values, row
//! numbers), so bytes that are not a frame are refused, never read out of
//! range later.
//! [`FrameChunks`] makes the same chunks from rows as they come, one
//! chunk's rows held at a time: an import makes the frame of the session
//! it writes this way.
//!
//! The bytes say nothing about which rows they were made from: the store
//! keeps that beside them (its sample count and highest id), and
//! [`STORED_FRAME_FORMAT`] names this encoding *and* the rules that turn a
//! row into an [`Obs`] (a hash of their source): a build that changes
//! either reads no frame stored by another, it reads the rows again.

use serde::{Deserialize, Serialize};

use firsttoken_stats::bootstrap::fnv1a;

use firsttoken_record::session::SessionMeta;
use firsttoken_record::view::SampleView;

use super::{FlowRow, FrameBuilder, FrameSession, NONE, Obs, TurnRow};
use crate::AnalyzeError;

/// The version of the encoding: bump it when the bytes of a frame change
/// for a reason the sources hashed into [`STORED_FRAME_FORMAT`] do not
/// show (a new `postcard`, say); `the_stored_bytes_change_only_with_the_format`
/// says when.
const ENCODING: u64 = 1;

/// What a stored frame's bytes were made under (see the module docs): the
/// encoding's version and a hash, fixed at build time, of the source that
/// turns a stored row into an [`Obs`] (this crate's frame, record's
/// vocabulary and views: [`firsttoken_record::VIEW_SOURCE_HASH`]). A store
/// keeps it beside each frame; a build whose rules may differ does not
/// read another's frames, it makes its own.
pub const STORED_FRAME_FORMAT: i64 = {
    let mut h = firsttoken_record::VIEW_SOURCE_HASH ^ ENCODING;
    h = fnv1a(h, include_bytes!("mod.rs"));
    h = fnv1a(h, include_bytes!("stored.rs"));
    // Non-negative, as the stores' integers are signed.
    (h >> 1) as i64
};

/// Rows per chunk after the head (~3 MB of bytes a chunk: each is read
/// whole, so its size adds to a report's peak memory).
const STORED_CHUNK_ROWS: usize = 1 << 14;

/// The head, as written (borrowed from the builder).
#[derive(Serialize)]
struct HeadOut<'a> {
    rows: u64,
    timings: u64,
    strings: &'a [String],
    shapes: &'a [Vec<u32>],
    sessions: Vec<&'a str>,
    flows: &'a [FlowRow],
    turns: &'a [TurnRow],
}

/// The head, as read.
#[derive(Deserialize)]
struct HeadIn {
    rows: u64,
    timings: u64,
    strings: Vec<String>,
    shapes: Vec<Vec<u32>>,
    sessions: Vec<String>,
    flows: Vec<FlowRow>,
    turns: Vec<TurnRow>,
}

/// Rows and the Server-Timing values they point at, from `timings_from`.
#[derive(Serialize)]
struct RowsOut<'a> {
    timings_from: u32,
    obs: &'a [Obs],
    timings: &'a [f64],
}

#[derive(Deserialize)]
struct RowsIn {
    timings_from: u32,
    obs: Vec<Obs>,
    timings: Vec<f64>,
}

fn refused(why: impl Into<String>) -> AnalyzeError {
    AnalyzeError::StoredFrame { why: why.into() }
}

/// zstd's level for stored chunks: its fastest of the usual levels,
/// which still makes a frame's bytes about a third as long.
const ZSTD_LEVEL: i32 = 1;

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Encoding into a growing vector fails only if a value cannot be
    // written at all, which none of these types does; compressing bytes
    // in memory fails only if zstd cannot allocate.
    let plain = postcard::to_allocvec(value).unwrap_or_default();
    zstd::bulk::compress(&plain, ZSTD_LEVEL).unwrap_or_default()
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, AnalyzeError> {
    let plain = zstd::stream::decode_all(bytes).map_err(|e| refused(format!("{what}: {e}")))?;
    postcard::from_bytes(&plain).map_err(|e| refused(format!("{what}: {e}")))
}

impl FrameBuilder {
    /// This builder's rows as chunks of bytes, the head first (see the
    /// module docs); each chunk is encoded when it is asked for.
    pub fn stored_chunks(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        self.stored_chunks_of(STORED_CHUNK_ROWS)
    }

    /// [`FrameBuilder::stored_chunks`] with `per_chunk` rows a chunk.
    fn stored_chunks_of(&self, per_chunk: usize) -> impl Iterator<Item = Vec<u8>> + '_ {
        let head = std::iter::once_with(|| {
            self.stored_head(self.obs.len() as u64, self.timings.len() as u64)
        });
        let rows = self.obs.chunks(per_chunk).enumerate().map(move |(k, obs)| {
            let from = obs[0].timing_start as usize;
            let next = k * per_chunk + obs.len();
            let to = self
                .obs
                .get(next)
                .map_or(self.timings.len(), |o| o.timing_start as usize);
            encode(&RowsOut {
                timings_from: obs[0].timing_start,
                obs,
                timings: self.timings.get(from..to).unwrap_or(&[]),
            })
        });
        head.chain(rows)
    }

    /// The head chunk of a frame of `rows` rows and `timings` values whose
    /// strings, lists, sessions, flows and turns are this builder's.
    fn stored_head(&self, rows: u64, timings: u64) -> Vec<u8> {
        encode(&HeadOut {
            rows,
            timings,
            strings: &self.strings,
            shapes: &self.shapes,
            sessions: self.frame.sessions.iter().map(|s| s.id.as_str()).collect(),
            flows: &self.flows,
            turns: &self.turns,
        })
    }
}

/// One session's stored frame made as its rows come, one chunk's rows
/// held at a time: [`FrameChunks::push_view`] gives each chunk of rows as
/// it fills and [`FrameChunks::finish`] the head (which comes first) and
/// the last rows, so that head, chunks and last rows are the chunks
/// [`FrameBuilder::stored_chunks`] gives for a builder of that session fed
/// the same rows, byte for byte. An import makes the frame of a session
/// it stores this way, so its first report reads the frame instead of a
/// million rows.
#[derive(Debug)]
pub struct FrameChunks {
    /// The rows since the last chunk; its strings, lists, flows and turns
    /// are the whole frame's.
    builder: FrameBuilder,
    per_chunk: usize,
    /// Rows and Server-Timing values in the chunks given so far.
    rows: u64,
    timings: u64,
}

impl FrameChunks {
    /// The frame of `session`'s rows, none yet.
    pub fn new(session: &SessionMeta) -> Result<FrameChunks, AnalyzeError> {
        FrameChunks::with_chunk_rows(session, STORED_CHUNK_ROWS)
    }

    fn with_chunk_rows(
        session: &SessionMeta,
        per_chunk: usize,
    ) -> Result<FrameChunks, AnalyzeError> {
        Ok(FrameChunks {
            builder: FrameBuilder::new(std::slice::from_ref(session))?,
            per_chunk,
            rows: 0,
            timings: 0,
        })
    }

    /// Rows added so far.
    pub fn rows(&self) -> u64 {
        self.rows + self.builder.obs.len() as u64
    }

    /// Validates and adds the session's next row, as
    /// [`FrameBuilder::push_view`] does; a chunk of rows once one is full.
    pub fn push_view(&mut self, v: &SampleView<'_>) -> Result<Option<Vec<u8>>, AnalyzeError> {
        let b = &mut self.builder;
        let (flows, turns) = (b.flows.len(), b.turns.len());
        b.push_view(v)?;
        // The builder numbers rows and values from the last chunk on: the
        // frame's are from its start.
        let (rows, timings) = (self.rows as u32, self.timings as u32);
        if let Some(o) = b.obs.last_mut() {
            o.timing_start += timings;
        }
        b.flows[flows..].iter_mut().for_each(|f| f.row += rows);
        b.turns[turns..].iter_mut().for_each(|t| t.row += rows);
        Ok(if b.obs.len() >= self.per_chunk {
            self.encode_rows()
        } else {
            None
        })
    }

    /// The rows since the last chunk as a chunk (`None` when there are
    /// none).
    fn encode_rows(&mut self) -> Option<Vec<u8>> {
        let b = &mut self.builder;
        let first = b.obs.first()?;
        let chunk = encode(&RowsOut {
            timings_from: first.timing_start,
            obs: &b.obs,
            timings: &b.timings,
        });
        self.rows += b.obs.len() as u64;
        self.timings += b.timings.len() as u64;
        b.obs.clear();
        b.timings.clear();
        // The (provenance, phase) index is made again when the frame is
        // read back ([`StoredFrame::add`]).
        b.frame.index.iter_mut().for_each(Vec::clear);
        Some(chunk)
    }

    /// The head chunk, which is stored first, and the last rows' chunk
    /// (none when the last chunk given was full, or there are no rows).
    pub fn finish(mut self) -> (Vec<u8>, Option<Vec<u8>>) {
        let last = self.encode_rows();
        (self.builder.stored_head(self.rows, self.timings), last)
    }
}

/// A stored frame being read back: [`StoredFrame::new`] with the head,
/// [`StoredFrame::add`] with each later chunk in order, then
/// [`StoredFrame::finish`].
#[derive(Debug)]
pub struct StoredFrame {
    builder: FrameBuilder,
    rows: u64,
    timings: u64,
}

impl StoredFrame {
    /// Starts from the head chunk (the first of
    /// [`FrameBuilder::stored_chunks`]).
    pub fn new(head: &[u8]) -> Result<StoredFrame, AnalyzeError> {
        let h: HeadIn = decode("head", head)?;
        let strings = h.strings.len() as u32;
        if h.shapes.iter().flatten().any(|&n| n >= strings) {
            return Err(refused("a Server-Timing list names an unknown string"));
        }
        if h.flows
            .iter()
            .flat_map(|f| &f.steps)
            .any(|s| s.0 >= strings)
        {
            return Err(refused("a flow step names an unknown string"));
        }
        let rows_ok = |r: u32| u64::from(r) < h.rows;
        if !h.flows.iter().all(|f| rows_ok(f.row)) || !h.turns.iter().all(|t| rows_ok(t.row)) {
            return Err(refused("a flow or turn row is past the last row"));
        }
        let mut builder = FrameBuilder::new(&[])?;
        builder.frame.sessions = h
            .sessions
            .into_iter()
            .map(|id| FrameSession {
                id,
                labels: None,
                expect: Vec::new(),
            })
            .collect();
        builder.strings = h.strings;
        builder.shapes = h.shapes;
        builder.flows = h.flows;
        builder.turns = h.turns;
        // Both at their final length at once: grown as they come, they
        // would take up to twice that at a moment (a tenth of a report's
        // peak memory at a million rows).
        builder.obs.reserve(usize::try_from(h.rows).unwrap_or(0));
        builder
            .timings
            .reserve(usize::try_from(h.timings).unwrap_or(0));
        Ok(StoredFrame {
            builder,
            rows: h.rows,
            timings: h.timings,
        })
    }

    /// The rows it will hold once every chunk is added.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Every row has arrived.
    pub fn is_whole(&self) -> bool {
        self.builder.obs.len() as u64 == self.rows
    }

    /// Adds the next chunk of rows.
    pub fn add(&mut self, chunk: &[u8]) -> Result<(), AnalyzeError> {
        let c: RowsIn = decode("rows", chunk)?;
        let b = &mut self.builder;
        if c.timings_from as usize != b.timings.len() {
            return Err(refused("a chunk's Server-Timing values do not follow on"));
        }
        if b.obs.len() as u64 + c.obs.len() as u64 > self.rows {
            return Err(refused("more rows than the head says"));
        }
        if b.timings.len() as u64 + c.timings.len() as u64 > self.timings {
            return Err(refused("more Server-Timing values than the head says"));
        }
        b.timings.extend_from_slice(&c.timings);
        let (strings, sessions, shapes) = (
            b.strings.len() as u32,
            b.frame.sessions.len() as u32,
            b.shapes.len() as u32,
        );
        let string_ok = |id: u32| id == NONE || id < strings;
        for o in c.obs {
            let values = if o.timing_shape == NONE {
                0
            } else if o.timing_shape < shapes {
                b.shapes[o.timing_shape as usize].len()
            } else {
                return Err(refused("a row names an unknown Server-Timing list"));
            };
            let fits = [o.path, o.strategy, o.provider, o.route, o.prompt]
                .into_iter()
                .all(string_ok)
                && o.session < sessions
                && (o.timing_start as usize)
                    .checked_add(values)
                    .is_some_and(|end| end <= b.timings.len());
            if !fits {
                return Err(refused(format!(
                    "row {} points past the strings, sessions or values",
                    b.obs.len()
                )));
            }
            b.index_row(&o, b.obs.len() as u32);
            b.obs.push(o);
        }
        Ok(())
    }

    /// The builder holding the stored rows, ready to
    /// [`FrameBuilder::append`]; refused unless every row arrived.
    pub fn finish(self) -> Result<FrameBuilder, AnalyzeError> {
        if self.builder.obs.len() as u64 != self.rows {
            return Err(refused(format!(
                "{} of {} rows arrived",
                self.builder.obs.len(),
                self.rows
            )));
        }
        if self.builder.timings.len() as u64 != self.timings {
            return Err(refused(format!(
                "{} of {} Server-Timing values arrived",
                self.builder.timings.len(),
                self.timings
            )));
        }
        Ok(self.builder)
    }
}

#[cfg(test)]
mod tests {
    use firsttoken_record::session::Provenance::Measured;

    use super::*;
    use crate::frame::append::tests::{content, rows};
    use crate::testutil::meta;

    fn built(rows: &[firsttoken_record::session::SampleRow]) -> FrameBuilder {
        let sessions = [meta("a", Measured), meta("b", Measured)];
        let mut b = FrameBuilder::new(&sessions).unwrap();
        for r in rows {
            b.push(r).unwrap();
        }
        b
    }

    fn read_back(chunks: &[Vec<u8>]) -> Result<FrameBuilder, AnalyzeError> {
        let mut s = StoredFrame::new(&chunks[0])?;
        for c in &chunks[1..] {
            s.add(c)?;
        }
        s.finish()
    }

    #[test]
    fn a_stored_frame_reads_back_as_the_frame_it_was() {
        let rows = rows();
        let whole = built(&rows);
        let chunks: Vec<Vec<u8>> = whole.stored_chunks().collect();
        assert_eq!(chunks.len(), 2, "the head and one chunk of 12 rows");
        // Appended to an empty builder of the same sessions, as a report
        // does: the frame the rows make.
        let mut into = FrameBuilder::new(&[meta("a", Measured), meta("b", Measured)]).unwrap();
        into.append(read_back(&chunks).unwrap());
        assert_eq!(content(&into.finish()), content(&built(&rows).finish()));
        // No rows: the head alone.
        let empty = built(&[]);
        let chunks: Vec<Vec<u8>> = empty.stored_chunks().collect();
        assert_eq!(chunks.len(), 1);
        assert_eq!(read_back(&chunks).unwrap().obs.len(), 0);
    }

    #[test]
    fn a_frame_made_as_its_rows_come_is_the_frame_stored_whole() {
        let rows = rows();
        for per_chunk in [1, 5, 12, 100] {
            let mut made = FrameChunks::with_chunk_rows(&meta("a", Measured), per_chunk).unwrap();
            // Rows of a session not given first are added as they come.
            let mut chunks = Vec::new();
            for r in &rows {
                chunks.extend(made.push_view(&SampleView::of(r)).unwrap());
            }
            assert_eq!(made.rows(), 12);
            let (head, last) = made.finish();
            chunks.insert(0, head);
            chunks.extend(last);
            let mut only_a = FrameBuilder::new(&[meta("a", Measured)]).unwrap();
            for r in &rows {
                only_a.push(r).unwrap();
            }
            let expected: Vec<Vec<u8>> = only_a.stored_chunks_of(per_chunk).collect();
            assert_eq!(chunks, expected, "{per_chunk} rows a chunk");
            // And it reads back as the frame the rows make.
            let mut into = FrameBuilder::new(&[meta("a", Measured), meta("b", Measured)]).unwrap();
            into.append(read_back(&expected).unwrap());
            assert_eq!(content(&into.finish()), content(&built(&rows).finish()));
        }
        // A row analysis refuses is refused here too.
        let mut made = FrameChunks::new(&meta("a", Measured)).unwrap();
        let mut bad = rows[0].clone();
        bad.sample.ttft_ms = Some(-1.0);
        assert!(made.push_view(&SampleView::of(&bad)).is_err());
    }

    #[test]
    fn bytes_that_are_not_a_whole_frame_are_refused() {
        let chunks: Vec<Vec<u8>> = built(&rows()).stored_chunks().collect();
        // A chunk missing.
        let e = read_back(&chunks[..1]).unwrap_err();
        assert!(e.to_string().contains("0 of 12 rows arrived"), "{e}");
        // Cut short, or garbage.
        let mut cut = chunks.clone();
        let half = cut[1].len() / 2;
        cut[1].truncate(half);
        assert!(matches!(
            read_back(&cut),
            Err(AnalyzeError::StoredFrame { .. })
        ));
        assert!(StoredFrame::new(&[0xff; 3]).is_err());
        // A row naming a string the head does not have.
        let mut b = built(&rows());
        b.obs[3].path = 10_000;
        let bad: Vec<Vec<u8>> = b.stored_chunks().collect();
        let e = read_back(&bad).unwrap_err();
        assert!(e.to_string().contains("row 3 points past"), "{e}");
    }

    /// The bytes of a fixed frame, uncompressed. They change with the
    /// hashed sources (a new field of [`Obs`]: nothing more to do than
    /// update the length and sum here) or without them (a new `postcard`):
    /// then bump `ENCODING` too, so frames stored before are read again
    /// from their rows. (zstd's own bytes may change with its version; any
    /// version reads them.)
    #[test]
    fn the_stored_bytes_change_only_with_the_format() {
        let chunks: Vec<Vec<u8>> = built(&rows()).stored_chunks().collect();
        let bytes: Vec<u8> = chunks
            .iter()
            .flat_map(|c| zstd::stream::decode_all(c.as_slice()).unwrap())
            .collect();
        let sum = bytes
            .iter()
            .fold(0u64, |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        assert_eq!(
            (ENCODING, bytes.len(), sum),
            (1, 1991, 2704931158312290965),
            "the stored frame's bytes changed: if no hashed source did, bump ENCODING"
        );
    }
}

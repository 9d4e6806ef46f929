//! An app's spans after the fact (`firsttoken import-spans`): the OTLP
//! JSON lines the OpenTelemetry Collector's file exporter writes (one
//! `ExportTraceServiceRequest` per line), joined to a stored session by the
//! trace ids its samples sent, and stored in batches up to the session's
//! span cap. Spans of other traces are counted, not stored; a line that is
//! not OTLP trace data is counted with its reason and the rest still read.

use std::io::{BufRead, BufReader, Read};

use firsttoken_record::Store;
use firsttoken_record::session::SessionMeta;
use firsttoken_record::span::{MAX_SPANS_PER_SESSION, SpanRow};
use firsttoken_record::store::SpansAppended;

use crate::convert::{convert, decode_json};
use crate::{CollectError, TraceRegistry};

/// The longest line read, in bytes: a Collector batch is far smaller.
pub const MAX_LINE_BYTES: u64 = 64 << 20;

/// Spans stored per transaction.
pub const BATCH: usize = 1000;

/// The most spans an import lets a session keep: from 1 to
/// [`MAX_SPANS_PER_SESSION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanCap(usize);

impl SpanCap {
    /// The store's own cap, [`MAX_SPANS_PER_SESSION`].
    pub const MAX: SpanCap = SpanCap(MAX_SPANS_PER_SESSION);

    /// A cap of `n` spans; 0 and more than [`MAX_SPANS_PER_SESSION`] are
    /// refused.
    pub fn new(n: usize) -> Result<SpanCap, ImportError> {
        if (1..=MAX_SPANS_PER_SESSION).contains(&n) {
            Ok(SpanCap(n))
        } else {
            Err(ImportError::Cap)
        }
    }

    /// The number of spans.
    pub fn get(self) -> usize {
        self.0
    }
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A span cap outside 1 to [`MAX_SPANS_PER_SESSION`].
    #[error("--max-spans must be from 1 to {MAX_SPANS_PER_SESSION}")]
    Cap,
    /// The session sent no trace id: no span can join it.
    #[error(
        "session {session} sent no traceparent (its samples have no trace id): no span can be joined to it"
    )]
    NoTraceIds {
        /// The session.
        session: String,
    },
    /// A line longer than [`MAX_LINE_BYTES`]: nothing after it was read,
    /// and the spans of the batch under way (up to [`BATCH`] before it)
    /// were not stored.
    #[error("line {line} is longer than {max} bytes; nothing after it was read")]
    LineTooLong {
        /// Its number, from 1.
        line: u64,
        /// The longest line read, in bytes.
        max: u64,
    },
    /// The input could not be read.
    #[error(transparent)]
    Read(std::io::Error),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] firsttoken_record::StoreError),
}

/// What an import did.
#[derive(Debug, Default)]
pub struct Imported {
    /// Spans stored, already stored (duplicates) and refused by the cap.
    pub appended: SpansAppended,
    /// Spans of traces the session did not send: counted, not stored.
    pub other_traces: u64,
    /// Spans with a missing or malformed id.
    pub malformed: u64,
    /// Lines read.
    pub lines: u64,
    /// The lines that are not OTLP trace data: their numbers (from 1) and
    /// why.
    pub bad_lines: Vec<(u64, CollectError)>,
}

/// Import the OTLP JSON lines of `input` into `session` of `store`,
/// keeping at most `cap` spans in the session: the spans whose trace id
/// one of the session's samples sent, stored [`BATCH`] at a time (a span
/// already stored counts as a duplicate). Blank lines are skipped.
pub async fn import_otlp_lines(
    store: &Store,
    session: &SessionMeta,
    input: impl Read,
    cap: SpanCap,
) -> Result<Imported, ImportError> {
    import_lines(store, session, input, cap, MAX_LINE_BYTES).await
}

/// [`import_otlp_lines`] with lines of at most `max_line` bytes.
async fn import_lines(
    store: &Store,
    session: &SessionMeta,
    input: impl Read,
    cap: SpanCap,
    max_line: u64,
) -> Result<Imported, ImportError> {
    let registry = TraceRegistry::new();
    for r in store.samples(&session.id).await? {
        if let Some(t) = &r.sample.trace_id {
            registry.insert_hex(t);
        }
    }
    if registry.is_empty() {
        return Err(ImportError::NoTraceIds {
            session: session.id.clone(),
        });
    }
    let mut reader = BufReader::new(input);
    let mut out = Imported::default();
    let mut batch: Vec<SpanRow> = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(max_line + 1)
            .read_until(b'\n', &mut line)
            .map_err(ImportError::Read)?;
        if n == 0 {
            break;
        }
        out.lines += 1;
        if line.len() as u64 > max_line {
            return Err(ImportError::LineTooLong {
                line: out.lines,
                max: max_line,
            });
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let request = match decode_json(&line) {
            Ok(r) => r,
            Err(e) => {
                out.bad_lines.push((out.lines, e));
                continue;
            }
        };
        let c = convert(&request, &session.id);
        out.malformed += c.malformed;
        for s in c.spans {
            if registry.contains_hex(&s.trace_id) {
                batch.push(s);
            } else {
                out.other_traces += 1;
            }
        }
        if batch.len() >= BATCH {
            out.appended
                .add(store.append_spans(&session.id, &batch, cap.get()).await?);
            batch.clear();
        }
    }
    if !batch.is_empty() {
        out.appended
            .add(store.append_spans(&session.id, &batch, cap.get()).await?);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;

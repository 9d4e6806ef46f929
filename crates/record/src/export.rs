//! Raw exports of stored samples (JSON Lines, CSV) and reading them back for import.
//!
//! # JSON Lines shape (versioned)
//!
//! One JSON object per line, each with a `"schema"` member naming its kind
//! and version ([`EXPORT_SCHEMA`], `docs/schema/export.v1.schema.json`):
//!
//! - `{"schema": "firsttoken.session.v1", …}`: a [`SessionMeta`] (`id`,
//!   `started_at`, `ended_at`, `status: {"state": "running" | "complete" |
//!   "partial", "reason"?}`, `spec`, `seed`, `tool_version`, `host`, `pid`,
//!   `labels: {network, code_version, vantage, tags}`, `provenance`,
//!   `cleanup`, `client_lag_p99_ms`);
//! - `{"schema": "firsttoken.sample_row.v1", …}`: a [`SampleRow`]
//!   (`session_id`, `phase`, `path`, `strategy`, `concurrency`,
//!   `intended_start_ms`, `actual_start_ms`, `started_at`, `provenance`) with
//!   the measurement under `sample`, exactly the `firsttoken probe --json`
//!   object of `docs/schema/sample.v1.schema.json`;
//! - `{"schema": "firsttoken.span.v1", …}`: a server-side [`SpanRow`] of the
//!   session (`session_id`, `trace_id`, `span_id`, `parent_span_id`, `name`,
//!   `kind`, `service`, `start_unix_nano`, `end_unix_nano`, `error`,
//!   `attributes`, `events`), secrets already redacted by the store;
//! - `{"schema": "firsttoken.engine_scrape.v1", …}`: the engine's metrics
//!   read before or after the session, an [`EngineScrape`] (`session_id`,
//!   `moment`: `start` | `end`, `taken_at`, `url`, `status`, `body`,
//!   `error`), after the spans.
//!
//! [`write_session_jsonl`] writes a session line, then its samples, and
//! [`write_spans_jsonl`] its spans after them: the form `firsttoken import`
//! reads ([`read_export`] in memory, [`crate::import::Import`] in two
//! streaming passes). [`write_jsonl`] writes sample lines only.
//! [`write_session`] writes the same export straight from a store, each
//! row as it is read.
//! Readers ignore members they do not know; a new incompatible shape gets
//! a new `schema` version.
//!
//! # CSV shape
//!
//! A header row of [`SAMPLE_COLUMNS`] (the `samples` table's columns), then
//! one record per sample: empty for null, `true`/`false` for `warmup`,
//! `server_timing` and `tls` as JSON text. Fields are quoted per RFC 4180
//! when they hold a comma, quote, CR or LF (quotes doubled); records end
//! with CRLF.

use std::fmt;
use std::io::{BufRead, Write};

use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::scrape::EngineScrape;
use crate::session::{Provenance, SampleRow, SessionMeta, SessionStatus};
use crate::span::SpanRow;
use crate::store::{Cell, SAMPLE_COLUMNS, Store, StoreError, sample_cells};

mod lines;
use lines::SampleLines;

/// The JSON Schema (draft 2020-12) of one export line; its `sample` member
/// refers to [`crate::SAMPLE_SCHEMA`] by `$id`.
pub const EXPORT_SCHEMA: &str = include_str!("../../../docs/schema/export.v1.schema.json");

/// `schema` of a session line.
pub const SESSION_LINE_SCHEMA: &str = "firsttoken.session.v1";
/// `schema` of a sample line.
pub const SAMPLE_ROW_LINE_SCHEMA: &str = "firsttoken.sample_row.v1";
/// `schema` of a span line.
pub const SPAN_LINE_SCHEMA: &str = "firsttoken.span.v1";
/// `schema` of an engine-scrape line.
pub const SCRAPE_LINE_SCHEMA: &str = "firsttoken.engine_scrape.v1";
/// The tag an imported session keeps its original id in.
pub const IMPORTED_FROM_TAG: &str = "imported_from";
/// The tag an imported session keeps its original provenance in.
pub const ORIGINAL_PROVENANCE_TAG: &str = "original_provenance";

#[derive(Serialize)]
struct Tagged<'a, T> {
    schema: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

fn write_line<T: Serialize>(
    w: &mut impl Write,
    schema: &'static str,
    v: &T,
) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, &Tagged { schema, inner: v }).map_err(std::io::Error::from)?;
    w.write_all(b"\n")
}

/// Writes one `firsttoken.sample_row.v1` line per row.
pub fn write_jsonl(rows: &[SampleRow], mut w: impl Write) -> std::io::Result<()> {
    for r in rows {
        write_line(&mut w, SAMPLE_ROW_LINE_SCHEMA, r)?;
    }
    w.flush()
}

/// Writes the session line, then one line per row: a complete export.
pub fn write_session_jsonl(
    session: &SessionMeta,
    rows: &[SampleRow],
    mut w: impl Write,
) -> std::io::Result<()> {
    write_line(&mut w, SESSION_LINE_SCHEMA, session)?;
    write_jsonl(rows, w)
}

/// Writes one `firsttoken.span.v1` line per span.
pub fn write_spans_jsonl(spans: &[SpanRow], mut w: impl Write) -> std::io::Result<()> {
    for s in spans {
        write_line(&mut w, SPAN_LINE_SCHEMA, s)?;
    }
    w.flush()
}

/// Everything a JSON Lines export holds, in file order per kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportContents {
    /// Session lines.
    pub sessions: Vec<SessionMeta>,
    /// Sample lines.
    pub rows: Vec<SampleRow>,
    /// Span lines.
    pub spans: Vec<SpanRow>,
    /// Engine-scrape lines.
    pub scrapes: Vec<EngineScrape>,
}

/// Writes a header row and one CSV record per sample (see the module docs).
/// Fails with `InvalidData` on a value the store would refuse too (a
/// non-finite time).
pub fn write_csv(rows: &[SampleRow], mut w: impl Write) -> std::io::Result<()> {
    write_csv_header(&mut w)?;
    for r in rows {
        write_csv_record(&mut w, r)?;
    }
    w.flush()
}

fn write_csv_header(w: &mut impl Write) -> std::io::Result<()> {
    let header: Vec<String> = SAMPLE_COLUMNS.iter().map(|c| csv_field(c)).collect();
    w.write_all(header.join(",").as_bytes())?;
    w.write_all(b"\r\n")
}

fn write_csv_record(w: &mut impl Write, r: &SampleRow) -> std::io::Result<()> {
    let cells =
        sample_cells(r).map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidData, m))?;
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        // Each cell's text, written as it is made (no string a cell).
        match c {
            Cell::Null => {}
            Cell::Int(v) => write!(w, "{v}")?,
            Cell::Real(v) => write!(w, "{v}")?,
            Cell::Bool(b) => write!(w, "{b}")?,
            Cell::Text(s) => write_csv_field(w, s)?,
            Cell::Json(v) => write_csv_field(w, &v.to_string())?,
            Cell::JsonText(t) => write_csv_field(w, t)?,
            // No sample column is a blob.
            Cell::Bytes(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("sample column {} holds bytes", SAMPLE_COLUMNS[i]),
                ));
            }
        }
    }
    w.write_all(b"\r\n")
}

/// [`csv_field`], written.
fn write_csv_field(w: &mut impl Write, s: &str) -> std::io::Result<()> {
    if !s.contains([',', '"', '\r', '\n']) {
        return w.write_all(s.as_bytes());
    }
    w.write_all(b"\"")?;
    for (i, part) in s.split('"').enumerate() {
        if i > 0 {
            w.write_all(b"\"\"")?;
        }
        w.write_all(part.as_bytes())?;
    }
    w.write_all(b"\"")
}

/// One RFC 4180 field: quoted (with quotes doubled) when it holds a comma,
/// a quote, CR or LF.
pub fn csv_field(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    // Writing to memory cannot fail.
    let _ = write_csv_field(&mut out, s);
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads an export: every session line and every sample line, as written
/// (nothing is marked imported here; [`mark_imported`] and
/// [`crate::store::Store::insert_imported`] do that). Blank lines are
/// skipped. A line that is not JSON, has no or an unknown `schema`, or does
/// not fit its schema is an error naming its 1-based line number. Span
/// lines are read and left out ([`read_export`] keeps them).
pub fn read_jsonl(r: impl BufRead) -> Result<(Vec<SessionMeta>, Vec<SampleRow>), StoreError> {
    let c = read_export(r)?;
    Ok((c.sessions, c.rows))
}

/// Reads a JSON Lines export, span lines included (see [`read_jsonl`] for
/// what is refused).
pub fn read_export(r: impl BufRead) -> Result<ExportContents, StoreError> {
    let mut out = ExportContents::default();
    for_each_line(r, |line| {
        match parse_line(line.text).map_err(|m| line.malformed(m))? {
            Record::Session(m) => out.sessions.push(*m),
            Record::Sample(r) => out.rows.push(*r),
            Record::Span(s) => out.spans.push(*s),
            Record::Scrape(s) => out.scrapes.push(*s),
        }
        Ok(())
    })?;
    Ok(out)
}

/// One non-blank line of an export, as [`for_each_line`] gives it.
pub(crate) struct Line<'a> {
    /// 1-based.
    pub number: usize,
    /// Byte offset of its first byte.
    pub start: u64,
    /// Byte offset just past its newline.
    pub end: u64,
    /// Without the newline (`\n` or `\r\n`).
    pub text: &'a str,
}

impl Line<'_> {
    pub(crate) fn malformed(&self, message: String) -> StoreError {
        StoreError::Malformed {
            line: self.number,
            message,
        }
    }
}

/// Calls `f` with each non-blank line of `r`, numbered from `first` (the
/// number of the line at `r`'s start) and placed from byte `offset`, until
/// the end or `f` returns `Ok(false)`. A line that is not UTF-8 is
/// [`StoreError::Read`], as [`BufRead::lines`] would have it.
pub(crate) fn for_each_line_from(
    mut r: impl BufRead,
    first: usize,
    offset: u64,
    mut f: impl FnMut(Line<'_>) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let mut buf = Vec::with_capacity(4096);
    let (mut number, mut start) = (first, offset);
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .map_err(|source| StoreError::Read {
                line: number,
                source,
            })?;
        if n == 0 {
            return Ok(());
        }
        let end = start + n as u64;
        let mut bytes = buf.as_slice();
        if let Some(b) = bytes.strip_suffix(b"\n") {
            bytes = b.strip_suffix(b"\r").unwrap_or(b);
        }
        let text = std::str::from_utf8(bytes).map_err(|e| StoreError::Read {
            line: number,
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
        if !text.trim().is_empty() {
            let line = Line {
                number,
                start,
                end,
                text,
            };
            if !f(line)? {
                return Ok(());
            }
        }
        number += 1;
        start = end;
    }
}

fn for_each_line(
    r: impl BufRead,
    mut f: impl FnMut(Line<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    for_each_line_from(r, 1, 0, |line| f(line).map(|()| true))
}

/// What one line of an export holds.
pub(crate) enum Record {
    Session(Box<SessionMeta>),
    Sample(Box<SampleRow>),
    Span(Box<SpanRow>),
    Scrape(Box<EngineScrape>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Session,
    Sample,
    Span,
    Scrape,
}

impl Kind {
    fn of(schema: &str) -> Option<Kind> {
        match schema {
            SESSION_LINE_SCHEMA => Some(Kind::Session),
            SAMPLE_ROW_LINE_SCHEMA => Some(Kind::Sample),
            SPAN_LINE_SCHEMA => Some(Kind::Span),
            SCRAPE_LINE_SCHEMA => Some(Kind::Scrape),
            _ => None,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Session => "session",
            Kind::Sample => "sample",
            Kind::Span => "span",
            Kind::Scrape => "engine scrape",
        }
    }

    /// The rest of the line, typed.
    fn read<'de, D: Deserializer<'de>>(self, d: D) -> Result<Record, D::Error> {
        Ok(match self {
            Kind::Session => Record::Session(Box::new(SessionMeta::deserialize(d)?)),
            Kind::Sample => Record::Sample(Box::new(SampleRow::deserialize(d)?)),
            Kind::Span => Record::Span(Box::new(SpanRow::deserialize(d)?)),
            Kind::Scrape => Record::Scrape(Box::new(EngineScrape::deserialize(d)?)),
        })
    }
}

/// How far reading a line got: what its error message says.
enum Seen {
    Nothing,
    Object,
    NoSchema,
    Unknown(String),
    Kind(Kind),
}

/// Reads a line's object straight into its typed record: `schema` first
/// (as the writer puts it), then the other members into the type it names.
/// An object whose first member is not `schema` is read whole first.
struct LineSeed<'a>(&'a mut Seen);

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = Record;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Record, D::Error> {
        d.deserialize_map(self)
    }
}

impl LineSeed<'_> {
    fn kind<E: serde::de::Error>(&mut self, schema: Option<&str>) -> Result<Kind, E> {
        let Some(schema) = schema else {
            *self.0 = Seen::NoSchema;
            return Err(E::custom("no schema"));
        };
        match Kind::of(schema) {
            Some(k) => {
                *self.0 = Seen::Kind(k);
                Ok(k)
            }
            None => {
                *self.0 = Seen::Unknown(schema.to_owned());
                Err(E::custom("unknown schema"))
            }
        }
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = Record;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Record, A::Error> {
        *self.0 = Seen::Object;
        match map.next_key::<String>()? {
            Some(k) if k == "schema" => {
                let schema: serde_json::Value = map.next_value()?;
                let kind = self.kind(schema.as_str())?;
                kind.read(MapAccessDeserializer::new(map))
            }
            Some(k) => {
                let mut obj = serde_json::Map::new();
                obj.insert(k, map.next_value()?);
                while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
                    obj.insert(k, v);
                }
                let schema = obj.remove("schema");
                let kind = self.kind(schema.as_ref().and_then(|s| s.as_str()))?;
                kind.read(serde_json::Value::Object(obj))
                    .map_err(serde::de::Error::custom)
            }
            None => {
                *self.0 = Seen::NoSchema;
                Err(serde::de::Error::custom("no schema"))
            }
        }
    }
}

/// One export line, typed; the error is the message for
/// [`StoreError::Malformed`].
pub(crate) fn parse_line(text: &str) -> Result<Record, String> {
    use serde_json::error::Category;
    let mut seen = Seen::Nothing;
    let mut de = serde_json::Deserializer::from_str(text);
    let read = LineSeed(&mut seen)
        .deserialize(&mut de)
        .and_then(|r| de.end().map(|()| r));
    read.map_err(|e| match (e.classify(), seen) {
        (Category::Syntax | Category::Eof | Category::Io, _) => format!("not JSON: {e}"),
        (Category::Data, Seen::Nothing) => "not a JSON object".into(),
        (Category::Data, Seen::NoSchema) => "no \"schema\" member".into(),
        (Category::Data, Seen::Unknown(other)) => format!(
            "unknown record schema {other:?} (this firsttoken reads {SESSION_LINE_SCHEMA}, {SAMPLE_ROW_LINE_SCHEMA}, {SPAN_LINE_SCHEMA} and {SCRAPE_LINE_SCHEMA})"
        ),
        (Category::Data, Seen::Kind(k)) => format!("bad {} record: {e}", k.noun()),
        (Category::Data, Seen::Object) => e.to_string(),
    })
}

/// Pairs each session read from an export with its samples (in file
/// order). A sample whose session has no session line is an error: an
/// import needs the session's spec, seed and labels, which
/// [`write_session_jsonl`] writes.
pub fn group_for_import(
    sessions: Vec<SessionMeta>,
    rows: Vec<SampleRow>,
) -> Result<Vec<(SessionMeta, Vec<SampleRow>)>, StoreError> {
    let mut groups: Vec<(SessionMeta, Vec<SampleRow>)> =
        sessions.into_iter().map(|s| (s, Vec::new())).collect();
    for r in rows {
        match groups.iter_mut().find(|(s, _)| s.id == r.session_id) {
            Some((_, v)) => v.push(r),
            None => {
                return Err(StoreError::NoSessionRecord {
                    session_id: r.session_id,
                });
            }
        }
    }
    Ok(groups)
}

/// The session and rows as they are stored on import: the numbers as they
/// were, but the session gets `new_id` (the original goes into the
/// `imported_from` tag, its provenance into `original_provenance`), every
/// sample and the session become [`Provenance::Imported`], the owner pid is
/// dropped, and a session exported while still running becomes `partial`.
pub fn mark_imported(
    meta: &SessionMeta,
    rows: &[SampleRow],
    new_id: &str,
) -> (SessionMeta, Vec<SampleRow>) {
    let rows = rows
        .iter()
        .map(|r| imported_row(r.clone(), new_id))
        .collect();
    (imported_meta(meta, new_id), rows)
}

/// The session as [`mark_imported`] stores it.
pub(crate) fn imported_meta(meta: &SessionMeta, new_id: &str) -> SessionMeta {
    let mut m = meta.clone();
    m.id = new_id.to_owned();
    m.labels
        .tags
        .insert(IMPORTED_FROM_TAG.to_owned(), meta.id.clone());
    if meta.provenance != Provenance::Imported {
        m.labels.tags.insert(
            ORIGINAL_PROVENANCE_TAG.to_owned(),
            meta.provenance.as_str().to_owned(),
        );
    }
    m.provenance = Provenance::Imported;
    m.pid = None;
    if m.status == SessionStatus::Running {
        m.status = SessionStatus::Partial {
            reason: "imported: the session was still running when it was exported".into(),
        };
    }
    m
}

/// A sample as [`mark_imported`] stores it.
pub(crate) fn imported_row(mut r: SampleRow, new_id: &str) -> SampleRow {
    r.session_id = new_id.to_owned();
    r.provenance = Provenance::Imported;
    r
}

/// The session a session record stands for: the one it was first stored
/// as (an imported session keeps that id in its [`IMPORTED_FROM_TAG`]).
/// An import skips a session whose origin the store already holds.
pub fn origin(meta: &SessionMeta) -> &str {
    meta.labels
        .tags
        .get(IMPORTED_FROM_TAG)
        .map_or(&meta.id, |s| s)
}

/// The two shapes [`write_session`] writes (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON Lines: the session line, its samples, then its spans.
    Jsonl,
    /// CSV: a header row, then one record per sample.
    Csv,
}

/// What [`write_session`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Sample lines or records.
    pub samples: u64,
    /// Span lines (none in CSV).
    pub spans: u64,
    /// Engine-scrape lines (none in CSV).
    pub scrapes: u64,
}

/// Writes session `meta`'s export from `store` as `format`: each row as it
/// is read ([`Store::scan_samples`], [`Store::scan_spans`]), so memory
/// does not grow with the session. The same bytes as
/// [`write_session_jsonl`] and [`write_spans_jsonl`] (JSONL) or
/// [`write_csv`] over the rows [`Store::samples`] reads. `w` is flushed at
/// the end; an error writing is [`StoreError::Write`].
pub async fn write_session(
    store: &Store,
    meta: &SessionMeta,
    format: Format,
    mut w: impl Write,
) -> Result<Written, StoreError> {
    let io = |source| StoreError::Write { source };
    match format {
        Format::Jsonl => write_line(&mut w, SESSION_LINE_SCHEMA, meta),
        Format::Csv => write_csv_header(&mut w),
    }
    .map_err(io)?;
    // A write error stops the scan; it is kept here, whole, for the caller.
    let mut failed = None;
    let mut keep = |e: std::io::Error| {
        let m = e.to_string();
        failed = Some(e);
        m
    };
    let mut lines = SampleLines::start(format);
    let samples = store
        .scan_samples(&meta.id, 0u64, |n, row| {
            lines.push(row, &mut w).map_err(&mut keep)?;
            *n += 1;
            Ok(())
        })
        .await;
    // The last lines, when every row was read.
    let finished = match &samples {
        Ok(_) => lines.finish(&mut w),
        Err(_) => Ok(()),
    };
    let wrote_all = samples.is_ok() && finished.is_ok();
    if let Err(e) = finished {
        keep(e);
    }
    let spans = match (wrote_all, format) {
        (true, Format::Jsonl) => {
            store
                .scan_spans(&meta.id, 0u64, |n, span| {
                    write_line(&mut w, SPAN_LINE_SCHEMA, &span).map_err(&mut keep)?;
                    *n += 1;
                    Ok(())
                })
                .await
        }
        _ => Ok(0),
    };
    if let Some(e) = failed {
        return Err(io(e));
    }
    let (samples, spans) = (samples?, spans?);
    let mut scrapes = 0;
    if format == Format::Jsonl {
        for s in store.engine_scrapes(&meta.id).await? {
            write_line(&mut w, SCRAPE_LINE_SCHEMA, &s).map_err(io)?;
            scrapes += 1;
        }
    }
    let written = Written {
        samples,
        spans,
        scrapes,
    };
    w.flush().map_err(io)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field(""), "");
    }

    #[test]
    fn malformed_lines_name_their_line_number() {
        let input = "\n{\"schema\":\"firsttoken.sample_row.v1\",\"phase\":1}\n";
        let e = read_jsonl(input.as_bytes()).unwrap_err();
        assert!(matches!(e, StoreError::Malformed { line: 2, .. }), "{e}");
        let e = read_jsonl("{\"a\":1}\nnot json\n".as_bytes()).unwrap_err();
        assert!(matches!(e, StoreError::Malformed { line: 1, .. }), "{e}");
        let e = read_jsonl("{\"schema\":\"firsttoken.session.v9\"}\n".as_bytes()).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        assert!(e.to_string().contains("v9"), "{e}");
    }

    fn sample_line(phase: &str, path: &str, strategy: &str, started_at: &str) -> String {
        let sample =
            serde_json::to_string(&crate::Sample::empty(3, 0, crate::Connection::Fresh)).unwrap();
        format!(
            r#"{{"schema":"firsttoken.sample_row.v1","session_id":"s1","phase":"{phase}","path":{path},"strategy":{strategy},"concurrency":null,"intended_start_ms":null,"actual_start_ms":1.5,"started_at":"{started_at}","provenance":"measured","sample":{sample}}}"#
        )
    }

    #[test]
    fn sample_lines_are_typed_in_memory_and_text_on_the_wire() {
        use crate::vocab::{Destination, PhaseKind};
        let line = sample_line(
            "direct",
            "\"direct\"",
            "\"latency\"",
            "2026-11-30T02:30:00.250Z",
        );
        let (_, rows) = read_jsonl(format!("{line}\n").as_bytes()).unwrap();
        assert_eq!(rows[0].phase, PhaseKind::Direct);
        assert_eq!(
            rows[0].dest,
            Destination::Direct {
                strategy: Some("latency".into())
            }
        );
        assert_eq!(rows[0].started_at.to_string(), "2026-11-30T02:30:00.250Z");
        let mut out = Vec::new();
        write_jsonl(&rows, &mut out).unwrap();
        let written: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let read: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(written, read, "the same line comes back out");
    }

    #[test]
    fn unknown_phases_and_bad_times_are_refused_naming_the_line() {
        let good = sample_line("warm", "\"chat\"", "null", "2026-11-30T02:30:00Z");
        for (bad, needle) in [
            (
                sample_line("lukewarm", "\"chat\"", "null", "2026-11-30T02:30:00Z"),
                "lukewarm",
            ),
            (
                sample_line("warm", "\"chat\"", "null", "half past two"),
                "RFC 3339",
            ),
            (
                sample_line("ping", "\"chat\"", "null", "2026-11-30T02:30:00Z"),
                "path must be",
            ),
            (
                sample_line("warm", "\"chat\"", "\"latency\"", "2026-11-30T02:30:00Z"),
                "strategy",
            ),
        ] {
            let input = format!("{good}\n\n{bad}\n");
            let e = read_jsonl(input.as_bytes()).unwrap_err();
            assert!(matches!(e, StoreError::Malformed { line: 3, .. }), "{e}");
            assert!(e.to_string().contains(needle), "{e}");
        }
    }
}

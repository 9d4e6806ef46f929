//! Reading a session's samples as [`SampleView`]s, one row at a time: the
//! query selects only the columns a view holds ([`VIEW_COLUMNS`]), each
//! backend streams its rows ([`RowRef`]: SQLite on its own thread,
//! PostgreSQL from the wire as rows arrive), and the caller folds each view
//! into its own state, so nothing per row outlives the row.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};

use serde::de::{self, Deserializer, MapAccess, Visitor};

use super::schema::{Cell, RowGet, SAMPLE_COLUMNS};
use super::sql::select_as_text;
use super::{Store, StoreError};
use crate::view::{SampleView, checked_path};
use crate::{Clock, ErrorKind, HandshakeKind};

/// A row of a scan, read by column (its index in the query's select list,
/// which is built from the same names): text borrowed from the row.
pub(crate) trait RowRef {
    fn f64_at(&self, i: usize) -> Result<Option<f64>, String>;
    fn i64_at(&self, i: usize) -> Result<Option<i64>, String>;
    fn str_at(&self, i: usize) -> Result<Option<&str>, String>;
    fn bool_at(&self, i: usize) -> Result<bool, String>;
}

/// The view's columns, named once: the select list is built from
/// [`VIEW_COLUMNS`] and each value read by its `C` name, which is its
/// place in that list.
macro_rules! view_columns {
    ($($col:ident),* $(,)?) => {
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy)]
        enum C { $($col),* }
        /// The `samples` columns a [`SampleView`] reads.
        pub const VIEW_COLUMNS: &[&str] = &[$(stringify!($col)),*];
    };
}

view_columns!(
    session_id,
    seq,
    phase,
    path,
    strategy,
    concurrency,
    actual_start_ms,
    started_at,
    provenance,
    warmup,
    dns_ms,
    connect_ms,
    tls_ms,
    ttfb_ms,
    ttft_ms,
    last_token_ms,
    e2e_ms,
    tokens_per_s,
    content_chunks,
    provider,
    route,
    server_timing,
    tls,
    error_kind,
    prompt_index,
    prompt_hash,
    trace_id,
    clock,
    client_lag_ms,
    ttft_read_events,
    ttftc_ms,
    first_output_ms,
    flow_wait_ms,
    flow_steps,
    turn,
    history_messages,
    request_bytes,
    connection,
    retried_stale,
    engine,
);

/// The JSON columns of `samples`, read by a scan as their text
/// (PostgreSQL's `jsonb` cast to text).
pub(crate) const JSON_COLUMNS: [&str; 5] =
    ["server_timing", "tls", "flow_steps", "engine", "painted"];

/// `SELECT <view columns> FROM samples WHERE session_id = $1 ORDER BY
/// actual_start_ms, id`: the order [`Store::samples`] reads.
fn view_sql() -> String {
    view_sql_where("")
}

/// [`view_sql`] with `and` added to its `WHERE`.
fn view_sql_where(and: &str) -> String {
    format!(
        "{} WHERE session_id = $1{and} ORDER BY actual_start_ms, id",
        select_as_text("samples", VIEW_COLUMNS, &JSON_COLUMNS)
    )
}

/// One part of a scan read in parts at once: its query (`$N` placeholders),
/// parameters and state.
pub(crate) struct Part<S> {
    pub sql: String,
    pub cells: Vec<Cell>,
    pub state: S,
}

/// Samples a session needs before [`Store::scan_views_parts`] reads it in
/// two parts at once: below this, a second thread gains nothing.
pub const PARALLEL_MIN_ROWS: u64 = 50_000;

fn name(c: C) -> &'static str {
    VIEW_COLUMNS[c as usize]
}

fn f64_of(r: &dyn RowRef, c: C) -> Result<Option<f64>, String> {
    r.f64_at(c as usize)
        .map_err(|e| format!("{}: {e}", name(c)))
}

fn u64_of(r: &dyn RowRef, c: C) -> Result<Option<u64>, String> {
    r.i64_at(c as usize)
        .map_err(|e| format!("{}: {e}", name(c)))?
        .map(|v| u64::try_from(v).map_err(|_| format!("{} = {v} is negative", name(c))))
        .transpose()
}

fn u32_of(r: &dyn RowRef, c: C) -> Result<Option<u32>, String> {
    u64_of(r, c)?
        .map(|v| u32::try_from(v).map_err(|_| format!("{} = {v} is out of range", name(c))))
        .transpose()
}

fn str_of(r: &dyn RowRef, c: C) -> Result<Option<&str>, String> {
    r.str_at(c as usize)
        .map_err(|e| format!("{}: {e}", name(c)))
}

fn required<T>(c: C, v: Option<T>) -> Result<T, String> {
    v.ok_or_else(|| format!("{} is NULL", name(c)))
}

/// A name parsed by its serde form (the stored vocabulary's snake_case).
fn by_name<'de, T: serde::Deserialize<'de>>(c: C, s: &'de str) -> Result<T, String> {
    T::deserialize(de::value::BorrowedStrDeserializer::<de::value::Error>::new(
        s,
    ))
    .map_err(|e| format!("{}: {e}", name(c)))
}

/// A view of one row holding [`VIEW_COLUMNS`].
fn view_from<'r>(r: &'r dyn RowRef) -> Result<SampleView<'r>, String> {
    let phase = by_name(C::phase, required(C::phase, str_of(r, C::phase)?)?)?;
    let strategy = str_of(r, C::strategy)?;
    let path = checked_path(phase, str_of(r, C::path)?, strategy)?;
    let started_at = required(C::started_at, str_of(r, C::started_at)?)?;
    let server_timing = match str_of(r, C::server_timing)? {
        // The shape the store writes, read without a general parser (a
        // tenth of a million-sample report's reading time went here).
        Some(t) => match super::flat_json::numbers(t) {
            Some(pairs) => pairs,
            None => {
                serde_json::from_str::<Timings<'r>>(t)
                    .map_err(|e| format!("server_timing: {e}"))?
                    .0
            }
        },
        None => Vec::new(),
    };
    let handshake = match str_of(r, C::tls)? {
        Some(t) => {
            serde_json::from_str::<Handshake>(t)
                .map_err(|e| format!("tls: {e}"))?
                .handshake
        }
        None => None,
    };
    let flow_steps = match str_of(r, C::flow_steps)? {
        Some(t) => serde_json::from_str::<Vec<StepView<'r>>>(t)
            .map_err(|e| format!("flow_steps: {e}"))?
            .into_iter()
            .map(|s| (s.name, s.ms))
            .collect(),
        None => Vec::new(),
    };
    let prompt = match (u32_of(r, C::prompt_index)?, str_of(r, C::prompt_hash)?) {
        (Some(i), Some(h)) => Some((i, h)),
        (None, None) => None,
        _ => return Err("prompt_index and prompt_hash must both be set or both NULL".into()),
    };
    Ok(SampleView {
        session_id: required(C::session_id, str_of(r, C::session_id)?)?,
        seq: required(C::seq, u64_of(r, C::seq)?)?,
        phase,
        path,
        strategy,
        concurrency: u32_of(r, C::concurrency)?,
        actual_start_ms: required(C::actual_start_ms, f64_of(r, C::actual_start_ms)?)?,
        started_at: started_at.parse().map_err(|e| format!("started_at: {e}"))?,
        provenance: required(C::provenance, str_of(r, C::provenance)?)?.parse()?,
        warmup: r
            .bool_at(C::warmup as usize)
            .map_err(|e| format!("warmup: {e}"))?,
        dns_ms: f64_of(r, C::dns_ms)?,
        connect_ms: f64_of(r, C::connect_ms)?,
        tls_ms: f64_of(r, C::tls_ms)?,
        ttfb_ms: f64_of(r, C::ttfb_ms)?,
        ttft_ms: f64_of(r, C::ttft_ms)?,
        ttftc_ms: f64_of(r, C::ttftc_ms)?,
        first_output_ms: f64_of(r, C::first_output_ms)?,
        last_token_ms: f64_of(r, C::last_token_ms)?,
        e2e_ms: f64_of(r, C::e2e_ms)?,
        tokens_per_s: f64_of(r, C::tokens_per_s)?,
        content_chunks: required(C::content_chunks, u64_of(r, C::content_chunks)?)?,
        provider: str_of(r, C::provider)?,
        route: str_of(r, C::route)?,
        server_timing,
        handshake,
        error: str_of(r, C::error_kind)?
            .map(|k| by_name::<ErrorKind>(C::error_kind, k))
            .transpose()?,
        prompt,
        trace_id: str_of(r, C::trace_id)?,
        clock: str_of(r, C::clock)?
            .map(|c| c.parse::<Clock>().map_err(|e| format!("clock: {e}")))
            .transpose()?,
        client_lag_ms: f64_of(r, C::client_lag_ms)?,
        ttft_read_events: u64_of(r, C::ttft_read_events)?,
        flow_wait_ms: f64_of(r, C::flow_wait_ms)?,
        flow_steps,
        turn: u32_of(r, C::turn)?,
        history_messages: u32_of(r, C::history_messages)?,
        request_bytes: u64_of(r, C::request_bytes)?,
        connection: by_name(
            C::connection,
            required(C::connection, str_of(r, C::connection)?)?,
        )?,
        retried_stale: r
            .bool_at(C::retried_stale as usize)
            .map_err(|e| format!("retried_stale: {e}"))?,
        engine: str_of(r, C::engine)?
            .map(|t| serde_json::from_str(t).map_err(|e| format!("engine: {e}")))
            .transpose()?,
    })
}

/// Where each of [`VIEW_COLUMNS`] is among [`SAMPLE_COLUMNS`].
static VIEW_IN_SAMPLE: LazyLock<Vec<Option<usize>>> = LazyLock::new(|| {
    VIEW_COLUMNS
        .iter()
        .map(|c| SAMPLE_COLUMNS.iter().position(|s| s == c))
        .collect()
});

/// A row of [`SAMPLE_COLUMNS`] cells about to be stored, read by view
/// column as a scan reads the stored row.
struct CellsRow<'a>(&'a [Cell]);

impl CellsRow<'_> {
    fn cell(&self, i: usize) -> Result<&Cell, String> {
        VIEW_IN_SAMPLE
            .get(i)
            .copied()
            .flatten()
            .and_then(|at| self.0.get(at))
            .ok_or_else(|| format!("no column {i}"))
    }
}

impl RowRef for CellsRow<'_> {
    fn f64_at(&self, i: usize) -> Result<Option<f64>, String> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Real(v) => Ok(Some(*v)),
            Cell::Int(v) => Ok(Some(*v as f64)),
            _ => Err("expected a number".into()),
        }
    }
    fn i64_at(&self, i: usize) -> Result<Option<i64>, String> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Int(v) => Ok(Some(*v)),
            _ => Err("expected an integer".into()),
        }
    }
    fn str_at(&self, i: usize) -> Result<Option<&str>, String> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Text(t) | Cell::JsonText(t) => Ok(Some(t)),
            _ => Err("expected text".into()),
        }
    }
    fn bool_at(&self, i: usize) -> Result<bool, String> {
        match self.cell(i)? {
            Cell::Bool(b) => Ok(*b),
            Cell::Int(v) => Ok(*v != 0),
            _ => Err("expected a boolean".into()),
        }
    }
}

/// `f` over the [`SampleView`] a scan of the store will read for `cells`,
/// a row of [`SAMPLE_COLUMNS`] as an import stores it (JSON columns as
/// their text). `jsonb`: the store is PostgreSQL, whose `jsonb` gives an
/// object's members back shorter names first, then by their bytes, so
/// the Server-Timing names are put in that order (SQLite gives the text
/// back as it was written).
pub(crate) fn with_view_of_cells<T>(
    cells: &[Cell],
    jsonb: bool,
    f: impl FnOnce(&SampleView<'_>) -> T,
) -> Result<T, String> {
    let row = CellsRow(cells);
    let mut v = view_from(&row)?;
    if jsonb {
        v.server_timing.sort_by(|(a, _), (b, _)| {
            a.len()
                .cmp(&b.len())
                .then_with(|| a.as_bytes().cmp(b.as_bytes()))
        });
    }
    Ok(f(&v))
}

/// A flow step as a view reads it (its status is not read).
#[derive(serde::Deserialize)]
struct StepView<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    ms: f64,
}

/// The `tls` column's handshake (the other members are not read).
#[derive(serde::Deserialize)]
struct Handshake {
    #[serde(default)]
    handshake: Option<HandshakeKind>,
}

/// A Server-Timing object as (name, ms) pairs, names borrowed from the
/// text unless they hold an escape.
struct Timings<'a>(Vec<(Cow<'a, str>, f64)>);

impl<'de> serde::Deserialize<'de> for Timings<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Timings<'de>, D::Error> {
        struct Key<'a>(Cow<'a, str>);
        impl<'de> serde::Deserialize<'de> for Key<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Key<'de>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a Server-Timing name")
                    }
                    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                        Ok(Key(Cow::Borrowed(v)))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                        Ok(Key(Cow::Owned(v.to_owned())))
                    }
                }
                d.deserialize_str(V)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Timings<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of Server-Timing durations")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Timings<'de>, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(4));
                while let Some((k, v)) = m.next_entry::<Key<'de>, f64>()? {
                    out.push((k.0, v));
                }
                Ok(Timings(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl Store {
    /// Folds every sample of `session_id`, as a [`SampleView`], into
    /// `state`, in the order [`Store::samples`] reads them; returns the
    /// state. Only the view's columns are read, a bounded batch of rows at
    /// a time; `f` runs on the caller's task (for SQLite, while the store's
    /// thread reads the next rows). An `Err` from `f` stops the scan and
    /// comes back as [`StoreError::Invalid`] with its message.
    pub async fn scan_views<S, F>(&self, session_id: &str, state: S, f: F) -> Result<S, StoreError>
    where
        F: FnMut(&mut S, &SampleView<'_>) -> Result<(), String>,
    {
        let mut f = f;
        let each =
            move |st: &mut S, r: &dyn RowRef| -> Result<(), String> { f(st, &view_from(r)?) };
        let cells = vec![Cell::Text(session_id.to_owned())];
        self.scan("read samples", &view_sql(), cells, state, each)
            .await
    }

    /// As [`Store::scan_views`], with the session's samples split at their
    /// middle (in the order read) into two parts folded at once when it
    /// holds at least `min_rows` of them: `first` takes the earlier part, a
    /// state from `later` the rest; the states come back in order (one for
    /// a smaller session). Each part has its own connection: on SQLite a
    /// thread of its own, where `f` runs as rows are read (a file that
    /// cannot be opened a second time has its parts read one after the
    /// other on the store's thread); on PostgreSQL a task of its own, so
    /// two server processes produce the rows and two runtime threads fold
    /// them.
    pub async fn scan_views_parts<S, F>(
        &self,
        session_id: &str,
        min_rows: u64,
        first: S,
        later: impl FnOnce() -> S,
        f: F,
    ) -> Result<Vec<S>, StoreError>
    where
        S: Send + 'static,
        F: Fn(&mut S, &SampleView<'_>) -> Result<(), String> + Send + Sync + 'static,
    {
        let session = || vec![Cell::Text(session_id.to_owned())];
        let n = self
            .query(
                "count samples",
                "SELECT count(*) AS n FROM samples WHERE session_id = $1",
                session(),
                |r| r.opt_i64("n")?.ok_or_else(|| "n is NULL".to_string()),
            )
            .await?
            .first()
            .copied()
            .unwrap_or(0);
        let n = u64::try_from(n).unwrap_or(0);
        if n < min_rows.max(2) {
            return Ok(vec![self.scan_views(session_id, first, f).await?]);
        }
        // The first sample of the later part, in the order read.
        let mut cells = session();
        cells.push(Cell::Int(i64::try_from(n / 2).unwrap_or(i64::MAX)));
        let at = self
            .query(
                "split samples",
                "SELECT actual_start_ms, id FROM samples WHERE session_id = $1 \
                 ORDER BY actual_start_ms, id LIMIT 1 OFFSET $2",
                cells,
                |r| {
                    let id = r.opt_i64("id")?.ok_or("id is NULL")?;
                    Ok((r.f64("actual_start_ms")?, id))
                },
            )
            .await?;
        let Some(&(ms, id)) = at.first() else {
            return Ok(vec![self.scan_views(session_id, first, f).await?]);
        };
        let bounds = || {
            let mut c = session();
            c.extend([Cell::Real(ms), Cell::Int(id)]);
            c
        };
        let parts = vec![
            Part {
                sql: view_sql_where(
                    " AND actual_start_ms <= $2 AND (actual_start_ms < $2 OR id < $3)",
                ),
                cells: bounds(),
                state: first,
            },
            Part {
                sql: view_sql_where(
                    " AND actual_start_ms >= $2 AND (actual_start_ms > $2 OR id >= $3)",
                ),
                cells: bounds(),
                state: later(),
            },
        ];
        let each = Arc::new(move |st: &mut S, r: &dyn RowRef| -> Result<(), String> {
            f(st, &view_from(r)?)
        });
        let parts = match self {
            Store::Sqlite(sqlite) => {
                sqlite
                    .scan_parts("read samples", parts, each.clone())
                    .await?
            }
            Store::Postgres(pg) => return pg.scan_parts("read samples", parts, each).await,
        };
        match parts {
            Ok(states) => Ok(states),
            Err(parts) => {
                // Read one part after the other on the store's own thread.
                let mut states = Vec::with_capacity(parts.len());
                for p in parts {
                    let each = &each;
                    states.push(
                        self.scan("read samples", &p.sql, p.cells, p.state, |s, r| each(s, r))
                            .await?,
                    );
                }
                Ok(states)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_borrow_plain_names_and_own_escaped_ones() {
        let t: Timings<'_> = serde_json::from_str(r#"{"db": 42.5, "a\"b": 1}"#).unwrap();
        assert!(matches!(t.0[0].0, Cow::Borrowed("db")));
        assert_eq!(t.0[0].1, 42.5);
        assert_eq!(t.0[1].0, "a\"b");
        assert!(serde_json::from_str::<Timings<'_>>(r#"{"db": "x"}"#).is_err());
    }

    #[test]
    fn the_select_list_reads_json_as_text_in_view_order() {
        let sql = view_sql();
        assert!(sql.starts_with("SELECT session_id, seq, phase,"));
        assert!(sql.contains("CAST(server_timing AS TEXT) AS server_timing"));
        assert_eq!(name(C::ttft_read_events), "ttft_read_events");
        for c in VIEW_COLUMNS {
            assert!(super::super::SAMPLE_COLUMNS.contains(c), "{c}");
        }
    }
}

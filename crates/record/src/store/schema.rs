//! The stored schema: migrations for both backends, and the one mapping
//! between [`SessionMeta`]/[`SampleRow`] and table columns that both
//! backends (and the CSV export) share.
//!
//! Decisions, the same for SQLite and PostgreSQL:
//! - times are [`UtcTime`] as RFC 3339 UTC text with milliseconds
//!   (`started_at`, `ended_at`): text order is time order;
//! - `phase` is `NOT NULL` and `CHECK`ed against the [`PhaseKind`]
//!   names (since schema version 2); a [`Destination`] is stored as `path`
//!   and `strategy` (see [`crate::vocab`]);
//! - stamps are nullable floating point milliseconds (`REAL` / `DOUBLE
//!   PRECISION`), `NULL` when a phase did not happen; non-finite values
//!   are refused rather than stored as `NULL`;
//! - the `u64` seed is stored as decimal `TEXT`, so it reads the same in
//!   SQL as in the spec (an `i64` bit-cast would show large seeds negative);
//! - counts are 64-bit signed integers (a count above `i64::MAX` is refused);
//! - `spec`, `tags`, `cleanup`, `server_timing` and `tls` are JSON
//!   (`TEXT` checked by `json_valid` in SQLite, `JSONB` in PostgreSQL);
//! - `provenance` is `NOT NULL` and `CHECK`ed against the four kinds, in both tables;
//! - `test_accounts` (since version 3) lists each account a session
//!   created, recorded as it is created;
//! - version 4 adds, at the end of `samples`, `proxy_ms`,
//!   `content_encoding`, `retried_stale` and the prompt's identity
//!   (`prompt_index`, `prompt_hash`);
//! - version 5 adds `samples.trace_id` (the W3C trace id the request sent)
//!   and the `spans` table (see [`super::spans`]): ids as lowercase hex,
//!   times as 64-bit integer ns since the Unix epoch, `kind` `CHECK`ed
//!   against the [`crate::span::SpanKind`] text forms;
//! - version 6 adds the arrival clock (`clock`, `CHECK`ed against the
//!   [`crate::Clock`] names), the user-space first-token stamp
//!   (`ttft_user_ms`), the client lag at the first token (`client_lag_ms`)
//!   and how many stream events shared its read (`ttft_read_events`).
//! - version 7 adds `runs` and `run_sessions` (see [`crate::run`]): a run
//!   across agents, each agent's segment, its clock offset to the store.
//! - version 8 adds `run_sessions.heartbeat_at_ms` and `heartbeat_every_ms`:
//!   when each agent last said it was alive (store clock), and how often it
//!   promised to, so a run tells a dead agent on another host.
//! - version 9 indexes `samples` by (session, actual start, id), the order
//!   every reader takes a session's samples in, so a scan needs no sort.
//! - version 10 adds the first tool
//!   call (`ttftc_ms`), the first output (`first_output_ms`, and
//!   `first_output` `CHECK`ed against the [`crate::FirstOutput`] names) and
//!   the reason an answer stopped early (`incomplete_reason`).
//! - version 11 adds flows: the wait from the flow's start to the measured
//!   request's start (`flow_wait_ms`) and the earlier steps (`flow_steps`,
//!   JSON: name, ms, status).
//! - version 12 adds conversations: the phase `conversation` (SQLite
//!   rebuilds `samples` for the new `CHECK`), each turn's number (`turn`,
//!   1 for the first), the messages the conversation held before it
//!   (`history_messages`) and the measured request's body size
//!   (`request_bytes`).
//! - version 13 adds the engine's own timing (`engine`, JSON, its source
//!   `CHECK`ed against the [`crate::EngineSource`] names).
//! - version 14 adds what a real browser showed (`firsttoken browse`): the
//!   first token painted (`painted_ttft_ms`) and the rest of
//!   [`crate::Painted`] (`painted`, JSON).
//! - version 15 indexes samples by trace id alone (it was session and trace
//!   id): half the size, so a bulk import's page cache holds it.
//! - version 17 drops PostgreSQL's foreign key from samples to sessions
//!   (a trigger per inserted row; SQLite keeps its inline check): deleting
//!   a session deletes its samples explicitly.
//! - version 18 rewrites SQLite's `phase` and `provenance` `CHECK`s from
//!   `IN (…)` to chains of `=`, the same names (SQLite built a temporary
//!   b-tree of each list on every one-row `INSERT`: a sixth of a bulk
//!   import's CPU); `samples` is rebuilt, its rows, ids and counter kept.
//! - version 19 adds `session_frames`: a large finished session's frame as
//!   bytes, stamped with the samples it was made from (see
//!   [`super::frames`]). A later migration that changes stored sample
//!   values must empty it.
//!
//! The migrations are SQL files under `store/migrations/<backend>/`.

use super::bounds::{duration, non_negative, offset};
use std::collections::BTreeMap;

use crate::session::{
    Cleanup, Labels, PromptRef, Provenance, SampleRow, SessionMeta, SessionStatus,
};
use crate::vocab::{Destination, PhaseKind, UtcTime};
use crate::{Clock, Connection, ErrorKind, FirstOutput, Sample, SampleError, TlsInfo};

/// Ordered migrations for SQLite: `(version, SQL)`. Each file is applied
/// once and never edited; a change is a new version.
pub(crate) const SQLITE_MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("migrations/sqlite/0001_init.sql")),
    (2, include_str!("migrations/sqlite/0002_phase_check.sql")),
    (3, include_str!("migrations/sqlite/0003_test_accounts.sql")),
    (4, include_str!("migrations/sqlite/0004_wire_facts.sql")),
    (5, include_str!("migrations/sqlite/0005_spans.sql")),
    (6, include_str!("migrations/sqlite/0006_kernel_clock.sql")),
    (7, include_str!("migrations/sqlite/0007_runs.sql")),
    (8, include_str!("migrations/sqlite/0008_heartbeat.sql")),
    (9, include_str!("migrations/sqlite/0009_sample_order.sql")),
    (10, include_str!("migrations/sqlite/0010_tool_calls.sql")),
    (11, include_str!("migrations/sqlite/0011_flows.sql")),
    (12, include_str!("migrations/sqlite/0012_conversations.sql")),
    (13, include_str!("migrations/sqlite/0013_engine_timing.sql")),
    (14, include_str!("migrations/sqlite/0014_painted.sql")),
    (15, include_str!("migrations/sqlite/0015_trace_index.sql")),
    (
        16,
        include_str!("migrations/sqlite/0016_engine_scrapes.sql"),
    ),
    (17, include_str!("migrations/sqlite/0017_samples_no_fk.sql")),
    (18, include_str!("migrations/sqlite/0018_plain_checks.sql")),
    (
        19,
        include_str!("migrations/sqlite/0019_session_frames.sql"),
    ),
];

/// Ordered migrations for PostgreSQL: `(version, SQL)`, the same logical schema.
pub(crate) const POSTGRES_MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("migrations/postgres/0001_init.sql")),
    (2, include_str!("migrations/postgres/0002_phase_check.sql")),
    (
        3,
        include_str!("migrations/postgres/0003_test_accounts.sql"),
    ),
    (4, include_str!("migrations/postgres/0004_wire_facts.sql")),
    (5, include_str!("migrations/postgres/0005_spans.sql")),
    (6, include_str!("migrations/postgres/0006_kernel_clock.sql")),
    (7, include_str!("migrations/postgres/0007_runs.sql")),
    (8, include_str!("migrations/postgres/0008_heartbeat.sql")),
    (9, include_str!("migrations/postgres/0009_sample_order.sql")),
    (10, include_str!("migrations/postgres/0010_tool_calls.sql")),
    (11, include_str!("migrations/postgres/0011_flows.sql")),
    (
        12,
        include_str!("migrations/postgres/0012_conversations.sql"),
    ),
    (
        13,
        include_str!("migrations/postgres/0013_engine_timing.sql"),
    ),
    (14, include_str!("migrations/postgres/0014_painted.sql")),
    (15, include_str!("migrations/postgres/0015_trace_index.sql")),
    (
        16,
        include_str!("migrations/postgres/0016_engine_scrapes.sql"),
    ),
    (
        17,
        include_str!("migrations/postgres/0017_samples_no_fk.sql"),
    ),
    (
        18,
        include_str!("migrations/postgres/0018_plain_checks.sql"),
    ),
    (
        19,
        include_str!("migrations/postgres/0019_session_frames.sql"),
    ),
];

/// The version whose migration adds the `phase` `CHECK`; before applying
/// it, the store looks for rows it would refuse ([`UNKNOWN_PHASES_SQL`]).
pub(crate) const PHASE_CHECK_VERSION: i64 = 2;

/// The version whose migration last changed the `phase` `CHECK`'s list
/// (version 12 added `conversation`).
#[cfg(test)]
const PHASE_LIST_VERSION: i64 = 12;

/// The distinct stored phases outside the vocabulary (at most 10).
pub(crate) fn unknown_phases_sql() -> String {
    format!(
        "SELECT DISTINCT phase FROM samples WHERE phase NOT IN ({}) ORDER BY phase LIMIT 10",
        PhaseKind::sql_list()
    )
}

/// The refusal to migrate a store holding phases outside the vocabulary.
pub(crate) fn unknown_phases_message(found: &[String]) -> String {
    format!(
        "cannot add the phase CHECK (schema version {PHASE_CHECK_VERSION}): samples hold phases outside the vocabulary {found:?}; \
         the known phases are {}. Delete or correct those rows with an older firsttoken (or SQL), then open the store again",
        PhaseKind::sql_list()
    )
}
/// The `sessions` columns, in the order of [`session_cells`].
pub(crate) const SESSION_COLUMNS: [&str; 17] = [
    "id",
    "started_at",
    "ended_at",
    "status",
    "status_reason",
    "spec",
    "seed",
    "tool_version",
    "host",
    "pid",
    "network",
    "code_version",
    "vantage",
    "tags",
    "provenance",
    "cleanup",
    "client_lag_p99_ms",
];

/// The `samples` columns (all but the row id), in storage order. Also the
/// CSV export's header.
pub const SAMPLE_COLUMNS: [&str; 62] = [
    "session_id",
    "seq",
    "phase",
    "path",
    "strategy",
    "concurrency",
    "intended_start_ms",
    "actual_start_ms",
    "started_at",
    "provenance",
    "worker",
    "warmup",
    "connection",
    "http_version",
    "dns_ms",
    "connect_ms",
    "tls_ms",
    "sent_ms",
    "ttfb_ms",
    "headers_ms",
    "ttfe_ms",
    "ttfr_ms",
    "ttft_ms",
    "last_token_ms",
    "e2e_ms",
    "content_chunks",
    "output_tokens",
    "input_tokens",
    "tokens_per_s",
    "itl_p50_ms",
    "itl_p99_ms",
    "status",
    "request_id",
    "provider",
    "route",
    "cost_usd",
    "server_timing",
    "tls",
    "error_kind",
    "error_message",
    "proxy_ms",
    "content_encoding",
    "retried_stale",
    "prompt_index",
    "prompt_hash",
    "trace_id",
    "clock",
    "ttft_user_ms",
    "client_lag_ms",
    "ttft_read_events",
    "ttftc_ms",
    "first_output_ms",
    "first_output",
    "incomplete_reason",
    "flow_wait_ms",
    "flow_steps",
    "turn",
    "history_messages",
    "request_bytes",
    "engine",
    "painted_ttft_ms",
    "painted",
];

/// How many of [`SAMPLE_COLUMNS`] the first migration creates.
#[cfg(test)]
const V1_SAMPLE_COLUMNS: usize = 40;
/// The later migrations that add `samples` columns, with how many of
/// [`SAMPLE_COLUMNS`] each adds, in column order after the first 40.
#[cfg(test)]
const ADDED_SAMPLE_COLUMNS: [(i64, usize); 8] = [
    (4, 5),
    (5, 1),
    (6, 4),
    (10, 4),
    (11, 2),
    (12, 3),
    (13, 1),
    (14, 2),
];

/// One column value, typed so each backend can bind it natively.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
    Json(serde_json::Value),
    /// A `BLOB` (SQLite) or `BYTEA` (PostgreSQL).
    Bytes(Vec<u8>),
    /// A JSON column's value as its text (read back from an import's
    /// spill, [`super::spill`]), bound as that text.
    JsonText(String),
}

fn real(name: &str, v: f64) -> Result<Cell, String> {
    if v.is_finite() {
        Ok(Cell::Real(v))
    } else {
        Err(format!("{name} is {v}; only finite numbers can be stored"))
    }
}

pub(super) fn opt_real(name: &str, v: Option<f64>) -> Result<Cell, String> {
    v.map_or(Ok(Cell::Null), |v| real(name, v))
}

fn int(name: &str, v: u64) -> Result<Cell, String> {
    i64::try_from(v)
        .map(Cell::Int)
        .map_err(|_| format!("{name} = {v} does not fit a signed 64-bit column"))
}

fn opt_int(name: &str, v: Option<u64>) -> Result<Cell, String> {
    v.map_or(Ok(Cell::Null), |v| int(name, v))
}

fn json<T: serde::Serialize>(v: &T) -> Result<Cell, String> {
    serde_json::to_value(v)
        .map(Cell::Json)
        .map_err(|e| e.to_string())
}

/// A session's status as (`status`, `status_reason`).
pub(crate) fn status_cells(s: &SessionStatus) -> (Cell, Cell) {
    match s {
        SessionStatus::Running => (Cell::Text("running".into()), Cell::Null),
        SessionStatus::Complete => (Cell::Text("complete".into()), Cell::Null),
        SessionStatus::Partial { reason } => {
            (Cell::Text("partial".into()), Cell::Text(reason.clone()))
        }
    }
}

/// A session as cells in [`SESSION_COLUMNS`] order.
pub(crate) fn session_cells(m: &SessionMeta) -> Result<Vec<Cell>, String> {
    let (status, reason) = status_cells(&m.status);
    Ok(vec![
        Cell::Text(m.id.clone()),
        Cell::Text(m.started_at.to_string()),
        m.ended_at.map_or(Cell::Null, |t| Cell::Text(t.to_string())),
        status,
        reason,
        Cell::Json(m.spec.clone()),
        Cell::Text(m.seed.to_string()),
        Cell::Text(m.tool_version.clone()),
        Cell::Text(m.host.clone()),
        m.pid.map_or(Cell::Null, |p| Cell::Int(i64::from(p))),
        Cell::Text(m.labels.network.clone()),
        Cell::Text(m.labels.code_version.clone()),
        Cell::Text(m.labels.vantage.clone()),
        json(&m.labels.tags)?,
        Cell::Text(m.provenance.as_str().into()),
        match &m.cleanup {
            Some(c) => json(c)?,
            None => Cell::Null,
        },
        opt_real("client_lag_p99_ms", m.client_lag_p99_ms)?,
    ])
}

/// A sample row as cells in [`SAMPLE_COLUMNS`] order. Refuses values that
/// would not read back the same (non-finite numbers, counts above `i64::MAX`).
pub(crate) fn sample_cells(r: &SampleRow) -> Result<Vec<Cell>, String> {
    let mut out = Vec::with_capacity(SAMPLE_COLUMNS.len());
    sample_into(r, &mut out)?;
    Ok(out)
}

/// Where [`sample_into`] puts a row's cells.
pub(crate) trait CellOut {
    fn put(&mut self, c: Cell);
    fn text(&mut self, s: &str);
    fn shown(&mut self, v: &dyn std::fmt::Display);
    fn json<T: serde::Serialize>(&mut self, v: &T) -> Result<(), String>;

    fn opt_text(&mut self, v: &Option<String>) {
        match v {
            Some(s) => self.text(s),
            None => self.put(Cell::Null),
        }
    }
    fn opt_json<T: serde::Serialize>(&mut self, v: &Option<T>) -> Result<(), String> {
        match v {
            Some(v) => self.json(v),
            None => {
                self.put(Cell::Null);
                Ok(())
            }
        }
    }
}

impl CellOut for Vec<Cell> {
    fn put(&mut self, c: Cell) {
        self.push(c);
    }
    fn text(&mut self, s: &str) {
        self.push(Cell::Text(s.to_owned()));
    }
    fn shown(&mut self, v: &dyn std::fmt::Display) {
        self.push(Cell::Text(v.to_string()));
    }
    fn json<T: serde::Serialize>(&mut self, v: &T) -> Result<(), String> {
        self.push(json(v)?);
        Ok(())
    }
}

/// The one mapping of a sample row to its cells, in [`SAMPLE_COLUMNS`] order.
pub(crate) fn sample_into(r: &SampleRow, out: &mut impl CellOut) -> Result<(), String> {
    let s = &r.sample;
    if let Some((k, v)) = s
        .server_timing
        .iter()
        .flatten()
        .find(|(_, v)| !v.is_finite())
    {
        real(&format!("server_timing[{k:?}]"), *v)?;
    }
    for (k, v) in s.server_timing.iter().flatten() {
        duration(&format!("server_timing[{k:?}]"), Some(*v))?;
    }
    for step in s.flow_steps.iter().flatten() {
        duration(&format!("flow_steps[{:?}].ms", step.name), Some(step.ms))?;
    }
    if r.concurrency == Some(0) {
        return Err("concurrency = 0: a level is at least 1".to_owned());
    }
    if s.turn == Some(0) {
        return Err("turn = 0: a conversation's first turn is 1".to_owned());
    }
    if let Some(t) = s
        .trace_id
        .as_deref()
        .filter(|t| !crate::span::is_trace_id(t))
    {
        return Err(format!(
            "trace_id {t:?} is not 32 lowercase hex digits (not all zero)"
        ));
    }
    if !r.dest.fits(r.phase) {
        return Err(format!("a {} request cannot go to {:?}", r.phase, r.dest));
    }
    let connection = match s.connection {
        Connection::Fresh => "fresh",
        Connection::Reused => "reused",
    };
    out.text(&r.session_id);
    out.put(int("seq", s.seq)?);
    out.text(r.phase.as_str());
    match r.dest.path_column() {
        Some(p) => out.text(p),
        None => out.put(Cell::Null),
    }
    match r.dest.strategy() {
        Some(p) => out.text(p),
        None => out.put(Cell::Null),
    }
    out.put(
        r.concurrency
            .map_or(Cell::Null, |c| Cell::Int(i64::from(c))),
    );
    out.put(offset("intended_start_ms", r.intended_start_ms)?);
    out.put(offset("actual_start_ms", Some(r.actual_start_ms))?);
    out.shown(&r.started_at);
    out.text(r.provenance.as_str());
    out.put(Cell::Int(i64::from(s.worker)));
    out.put(Cell::Bool(s.warmup));
    out.text(connection);
    out.opt_text(&s.http_version);
    for (name, v) in [
        ("dns_ms", s.dns_ms),
        ("connect_ms", s.connect_ms),
        ("tls_ms", s.tls_ms),
        ("sent_ms", s.sent_ms),
        ("ttfb_ms", s.ttfb_ms),
        ("headers_ms", s.headers_ms),
        ("ttfe_ms", s.ttfe_ms),
        ("ttfr_ms", s.ttfr_ms),
        ("ttft_ms", s.ttft_ms),
        ("last_token_ms", s.last_token_ms),
        ("e2e_ms", s.e2e_ms),
    ] {
        out.put(duration(name, v)?);
    }
    out.put(int("content_chunks", s.content_chunks)?);
    out.put(opt_int("output_tokens", s.output_tokens)?);
    out.put(opt_int("input_tokens", s.input_tokens)?);
    out.put(non_negative("tokens_per_s", s.tokens_per_s)?);
    out.put(duration("itl_p50_ms", s.itl_p50_ms)?);
    out.put(duration("itl_p99_ms", s.itl_p99_ms)?);
    out.put(s.status.map_or(Cell::Null, |c| Cell::Int(i64::from(c))));
    out.opt_text(&s.request_id);
    out.opt_text(&s.provider);
    out.opt_text(&s.route);
    out.put(non_negative("cost_usd", s.cost_usd)?);
    out.opt_json(&s.server_timing)?;
    out.opt_json(&s.tls)?;
    match &s.error {
        Some(e) => {
            out.text(e.kind.as_str());
            out.text(&e.message);
        }
        None => {
            out.put(Cell::Null);
            out.put(Cell::Null);
        }
    }
    out.put(duration("proxy_ms", s.proxy_ms)?);
    out.opt_text(&s.content_encoding);
    out.put(Cell::Bool(s.retried_stale));
    match &r.prompt {
        Some(p) => {
            out.put(Cell::Int(i64::from(p.index)));
            out.text(&p.hash);
        }
        None => {
            out.put(Cell::Null);
            out.put(Cell::Null);
        }
    }
    out.opt_text(&s.trace_id);
    match s.clock {
        Some(c) => out.text(c.as_str()),
        None => out.put(Cell::Null),
    }
    out.put(duration("ttft_user_ms", s.ttft_user_ms)?);
    out.put(opt_real("client_lag_ms", s.client_lag_ms)?);
    out.put(opt_int("ttft_read_events", s.ttft_read_events)?);
    out.put(duration("ttftc_ms", s.ttftc_ms)?);
    out.put(duration("first_output_ms", s.first_output_ms)?);
    match s.first_output {
        Some(f) => out.text(f.as_str()),
        None => out.put(Cell::Null),
    }
    out.opt_text(&s.incomplete_reason);
    out.put(duration("flow_wait_ms", s.flow_wait_ms)?);
    out.opt_json(&s.flow_steps)?;
    out.put(opt_int("turn", s.turn.map(u64::from))?);
    out.put(opt_int(
        "history_messages",
        s.history_messages.map(u64::from),
    )?);
    out.put(opt_int("request_bytes", s.request_bytes)?);
    if let Some(e) = &s.engine {
        e.check()?;
    }
    out.opt_json(&s.engine)?;
    match &s.painted {
        Some(p) => {
            out.put(duration("painted_ttft_ms", p.painted_ttft_ms)?);
            for (name, v) in [
                ("painted.input_lead_ms", p.input_lead_ms),
                ("painted.first_dom_ms", p.first_dom_ms),
                ("painted.painted_last_ms", p.painted_last_ms),
            ] {
                opt_real(name, v)?;
            }
            out.opt_json(&s.painted)?;
        }
        None => {
            out.put(Cell::Null);
            out.put(Cell::Null);
        }
    }
    Ok(())
}

/// Typed column access by name, implemented by each backend's row type.
/// Errors are messages naming the column.
pub(crate) trait RowGet {
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, String>;
    fn opt_i64(&self, col: &str) -> Result<Option<i64>, String>;
    fn opt_text(&self, col: &str) -> Result<Option<String>, String>;
    fn bool(&self, col: &str) -> Result<bool, String>;
    fn opt_json(&self, col: &str) -> Result<Option<serde_json::Value>, String>;
    /// A `BLOB` / `BYTEA` column. Rows of a scan (read by name from copied
    /// cells) carry no bytes: there it is an error.
    fn opt_bytes(&self, col: &str) -> Result<Option<Vec<u8>>, String> {
        Err(format!("{col}: bytes are not read from this kind of row"))
    }

    fn f64(&self, col: &str) -> Result<f64, String> {
        self.opt_f64(col)?.ok_or_else(|| format!("{col} is NULL"))
    }
    fn text(&self, col: &str) -> Result<String, String> {
        self.opt_text(col)?.ok_or_else(|| format!("{col} is NULL"))
    }
    fn opt_u64(&self, col: &str) -> Result<Option<u64>, String> {
        self.opt_i64(col)?
            .map(|v| u64::try_from(v).map_err(|_| format!("{col} = {v} is negative")))
            .transpose()
    }
    fn opt_u32(&self, col: &str) -> Result<Option<u32>, String> {
        self.opt_i64(col)?
            .map(|v| u32::try_from(v).map_err(|_| format!("{col} = {v} is out of range")))
            .transpose()
    }
    fn u64(&self, col: &str) -> Result<u64, String> {
        self.opt_u64(col)?.ok_or_else(|| format!("{col} is NULL"))
    }
    fn utc(&self, col: &str) -> Result<UtcTime, String> {
        parse_utc(col, &self.text(col)?)
    }
    fn typed_json<T: serde::de::DeserializeOwned>(&self, col: &str) -> Result<Option<T>, String> {
        self.opt_json(col)?
            .map(|v| serde_json::from_value(v).map_err(|e| format!("{col}: {e}")))
            .transpose()
    }
}

fn parse_utc(col: &str, text: &str) -> Result<UtcTime, String> {
    text.parse().map_err(|e| format!("{col}: {e}"))
}

fn from_name<T: serde::de::DeserializeOwned>(col: &str, s: String) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(s)).map_err(|e| format!("{col}: {e}"))
}

/// A session from a row holding every [`SESSION_COLUMNS`] column.
pub(crate) fn session_from(r: &impl RowGet) -> Result<SessionMeta, String> {
    let status = match r.text("status")?.as_str() {
        "running" => SessionStatus::Running,
        "complete" => SessionStatus::Complete,
        "partial" => SessionStatus::Partial {
            reason: r.opt_text("status_reason")?.unwrap_or_default(),
        },
        other => return Err(format!("status: unknown value {other:?}")),
    };
    let seed = r.text("seed")?;
    Ok(SessionMeta {
        id: r.text("id")?,
        started_at: r.utc("started_at")?,
        ended_at: r
            .opt_text("ended_at")?
            .map(|t| parse_utc("ended_at", &t))
            .transpose()?,
        status,
        spec: r.opt_json("spec")?.unwrap_or(serde_json::Value::Null),
        seed: seed
            .parse()
            .map_err(|_| format!("seed: {seed:?} is not a u64"))?,
        tool_version: r.text("tool_version")?,
        host: r.text("host")?,
        pid: r.opt_u32("pid")?,
        labels: Labels {
            network: r.text("network")?,
            code_version: r.text("code_version")?,
            vantage: r.text("vantage")?,
            tags: r
                .typed_json::<BTreeMap<String, String>>("tags")?
                .unwrap_or_default(),
        },
        provenance: r.text("provenance")?.parse()?,
        cleanup: r.typed_json::<Cleanup>("cleanup")?,
        client_lag_p99_ms: r.opt_f64("client_lag_p99_ms")?,
    })
}

/// A sample row from a row holding every [`SAMPLE_COLUMNS`] column.
pub(crate) fn sample_from(r: &impl RowGet) -> Result<SampleRow, String> {
    let error = match (r.opt_text("error_kind")?, r.opt_text("error_message")?) {
        (Some(kind), message) => Some(SampleError {
            kind: from_name::<ErrorKind>("error_kind", kind)?,
            message: message.unwrap_or_default(),
        }),
        (None, _) => None,
    };
    let status = r
        .opt_i64("status")?
        .map(|v| u16::try_from(v).map_err(|_| format!("status = {v} is out of range")))
        .transpose()?;
    let sample = Sample {
        seq: r.u64("seq")?,
        worker: r.opt_u32("worker")?.ok_or("worker is NULL")?,
        warmup: r.bool("warmup")?,
        connection: from_name::<Connection>("connection", r.text("connection")?)?,
        http_version: r.opt_text("http_version")?,
        dns_ms: r.opt_f64("dns_ms")?,
        connect_ms: r.opt_f64("connect_ms")?,
        proxy_ms: r.opt_f64("proxy_ms")?,
        tls_ms: r.opt_f64("tls_ms")?,
        sent_ms: r.opt_f64("sent_ms")?,
        ttfb_ms: r.opt_f64("ttfb_ms")?,
        headers_ms: r.opt_f64("headers_ms")?,
        ttfe_ms: r.opt_f64("ttfe_ms")?,
        ttfr_ms: r.opt_f64("ttfr_ms")?,
        ttft_ms: r.opt_f64("ttft_ms")?,
        ttftc_ms: r.opt_f64("ttftc_ms")?,
        first_output_ms: r.opt_f64("first_output_ms")?,
        first_output: r
            .opt_text("first_output")?
            .map(|c| {
                c.parse::<FirstOutput>()
                    .map_err(|e| format!("first_output: {e}"))
            })
            .transpose()?,
        incomplete_reason: r.opt_text("incomplete_reason")?,
        last_token_ms: r.opt_f64("last_token_ms")?,
        e2e_ms: r.opt_f64("e2e_ms")?,
        content_chunks: r.u64("content_chunks")?,
        output_tokens: r.opt_u64("output_tokens")?,
        input_tokens: r.opt_u64("input_tokens")?,
        tokens_per_s: r.opt_f64("tokens_per_s")?,
        itl_p50_ms: r.opt_f64("itl_p50_ms")?,
        itl_p99_ms: r.opt_f64("itl_p99_ms")?,
        status,
        request_id: r.opt_text("request_id")?,
        provider: r.opt_text("provider")?,
        cost_usd: r.opt_f64("cost_usd")?,
        tls: r.typed_json::<TlsInfo>("tls")?,
        route: r.opt_text("route")?,
        server_timing: r.typed_json::<BTreeMap<String, f64>>("server_timing")?,
        content_encoding: r.opt_text("content_encoding")?,
        retried_stale: r.bool("retried_stale")?,
        trace_id: r.opt_text("trace_id")?,
        clock: r
            .opt_text("clock")?
            .map(|c| c.parse::<Clock>().map_err(|e| format!("clock: {e}")))
            .transpose()?,
        ttft_user_ms: r.opt_f64("ttft_user_ms")?,
        client_lag_ms: r.opt_f64("client_lag_ms")?,
        ttft_read_events: r.opt_u64("ttft_read_events")?,
        flow_wait_ms: r.opt_f64("flow_wait_ms")?,
        flow_steps: r.typed_json::<Vec<crate::FlowStepTime>>("flow_steps")?,
        turn: r.opt_u32("turn")?,
        history_messages: r.opt_u32("history_messages")?,
        request_bytes: r.opt_u64("request_bytes")?,
        engine: r.typed_json::<crate::EngineTiming>("engine")?,
        painted: r.typed_json::<crate::Painted>("painted")?,
        error,
    };
    let prompt = match (r.opt_u32("prompt_index")?, r.opt_text("prompt_hash")?) {
        (Some(index), Some(hash)) => Some(PromptRef { index, hash }),
        (None, None) => None,
        _ => return Err("prompt_index and prompt_hash must both be set or both NULL".into()),
    };
    let phase = r
        .text("phase")?
        .parse::<PhaseKind>()
        .map_err(|e| format!("phase: {e}"))?;
    let dest = Destination::from_columns(phase, r.opt_text("path")?, r.opt_text("strategy")?)
        .map_err(|e| e.to_string())?;
    Ok(SampleRow {
        session_id: r.text("session_id")?,
        phase,
        dest,
        concurrency: r.opt_u32("concurrency")?,
        intended_start_ms: r.opt_f64("intended_start_ms")?,
        actual_start_ms: r.f64("actual_start_ms")?,
        started_at: r.utc("started_at")?,
        provenance: r.text("provenance")?.parse::<Provenance>()?,
        prompt,
        sample,
    })
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;

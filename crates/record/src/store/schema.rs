//! The stored schema: migrations for both backends, and the one mapping
//! between [`SessionMeta`]/[`SampleRow`] and table columns that both
//! backends (and the CSV export) share.
//!
//! Decisions, the same for SQLite and PostgreSQL:
//! - times are RFC 3339 UTC text (`started_at`, `ended_at`): exact round
//!   trips, and text order is time order;
//! - stamps are nullable floating point milliseconds (`REAL` / `DOUBLE
//!   PRECISION`), `NULL` when a phase did not happen; non-finite values
//!   are refused rather than stored as `NULL`;
//! - the `u64` seed is stored as decimal `TEXT`, so it reads the same in
//!   SQL as in the spec (an `i64` bit-cast would show large seeds negative);
//! - counts are 64-bit signed integers (a count above `i64::MAX` is refused);
//! - `spec`, `tags`, `cleanup`, `server_timing` and `tls` are JSON
//!   (`TEXT` checked by `json_valid` in SQLite, `JSONB` in PostgreSQL);
//! - `provenance` is `NOT NULL` and `CHECK`ed against the four kinds, in both tables.

use std::collections::BTreeMap;

use crate::session::{Cleanup, Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use crate::{Connection, ErrorKind, Sample, SampleError, TlsInfo};

/// Ordered migrations for SQLite: `(version, SQL)`.
pub(crate) const SQLITE_MIGRATIONS: &[(i64, &str)] = &[(
    1,
    r#"
CREATE TABLE sessions (
    id                TEXT PRIMARY KEY NOT NULL,
    started_at        TEXT NOT NULL,
    ended_at          TEXT,
    status            TEXT NOT NULL CHECK (status IN ('running', 'complete', 'partial')),
    status_reason     TEXT,
    spec              TEXT NOT NULL CHECK (json_valid(spec)),
    seed              TEXT NOT NULL CHECK (seed <> '' AND seed NOT GLOB '*[^0-9]*'),
    tool_version      TEXT NOT NULL,
    host              TEXT NOT NULL,
    pid               INTEGER,
    network           TEXT NOT NULL DEFAULT '',
    code_version      TEXT NOT NULL DEFAULT '',
    vantage           TEXT NOT NULL DEFAULT '',
    tags              TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(tags)),
    provenance        TEXT NOT NULL CHECK (provenance IN ('measured', 'emulated', 'imported', 'synthetic')),
    cleanup           TEXT CHECK (cleanup IS NULL OR json_valid(cleanup)),
    client_lag_p99_ms REAL,
    CHECK ((status = 'partial') = (status_reason IS NOT NULL))
) STRICT;
CREATE INDEX sessions_started_at ON sessions (started_at);

CREATE TABLE samples (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq               INTEGER NOT NULL CHECK (seq >= 0),
    phase             TEXT NOT NULL,
    path              TEXT,
    strategy          TEXT,
    concurrency       INTEGER,
    intended_start_ms REAL,
    actual_start_ms   REAL NOT NULL,
    started_at        TEXT NOT NULL,
    provenance        TEXT NOT NULL CHECK (provenance IN ('measured', 'emulated', 'imported', 'synthetic')),
    worker            INTEGER NOT NULL,
    warmup            INTEGER NOT NULL CHECK (warmup IN (0, 1)),
    connection        TEXT NOT NULL CHECK (connection IN ('fresh', 'reused')),
    http_version      TEXT,
    dns_ms            REAL,
    connect_ms        REAL,
    tls_ms            REAL,
    sent_ms           REAL,
    ttfb_ms           REAL,
    headers_ms        REAL,
    ttfe_ms           REAL,
    ttfr_ms           REAL,
    ttft_ms           REAL,
    last_token_ms     REAL,
    e2e_ms            REAL,
    content_chunks    INTEGER NOT NULL,
    output_tokens     INTEGER,
    input_tokens      INTEGER,
    tokens_per_s      REAL,
    itl_p50_ms        REAL,
    itl_p99_ms        REAL,
    status            INTEGER,
    request_id        TEXT,
    provider          TEXT,
    route             TEXT,
    cost_usd          REAL,
    server_timing     TEXT CHECK (server_timing IS NULL OR json_valid(server_timing)),
    tls               TEXT CHECK (tls IS NULL OR json_valid(tls)),
    error_kind        TEXT,
    error_message     TEXT,
    CHECK ((error_kind IS NULL) = (error_message IS NULL))
) STRICT;
CREATE INDEX samples_session_id ON samples (session_id, actual_start_ms);
"#,
)];

/// Ordered migrations for PostgreSQL: `(version, SQL)`, the same logical schema.
pub(crate) const POSTGRES_MIGRATIONS: &[(i64, &str)] = &[(
    1,
    r#"
CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    started_at        TEXT NOT NULL,
    ended_at          TEXT,
    status            TEXT NOT NULL CHECK (status IN ('running', 'complete', 'partial')),
    status_reason     TEXT,
    spec              JSONB NOT NULL,
    seed              TEXT NOT NULL CHECK (seed ~ '^[0-9]{1,20}$'),
    tool_version      TEXT NOT NULL,
    host              TEXT NOT NULL,
    pid               BIGINT,
    network           TEXT NOT NULL DEFAULT '',
    code_version      TEXT NOT NULL DEFAULT '',
    vantage           TEXT NOT NULL DEFAULT '',
    tags              JSONB NOT NULL DEFAULT '{}',
    provenance        TEXT NOT NULL CHECK (provenance IN ('measured', 'emulated', 'imported', 'synthetic')),
    cleanup           JSONB,
    client_lag_p99_ms DOUBLE PRECISION,
    CHECK ((status = 'partial') = (status_reason IS NOT NULL))
);
CREATE INDEX sessions_started_at ON sessions (started_at);

CREATE TABLE samples (
    id                BIGSERIAL PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq               BIGINT NOT NULL CHECK (seq >= 0),
    phase             TEXT NOT NULL,
    path              TEXT,
    strategy          TEXT,
    concurrency       BIGINT,
    intended_start_ms DOUBLE PRECISION,
    actual_start_ms   DOUBLE PRECISION NOT NULL,
    started_at        TEXT NOT NULL,
    provenance        TEXT NOT NULL CHECK (provenance IN ('measured', 'emulated', 'imported', 'synthetic')),
    worker            BIGINT NOT NULL,
    warmup            BOOLEAN NOT NULL,
    connection        TEXT NOT NULL CHECK (connection IN ('fresh', 'reused')),
    http_version      TEXT,
    dns_ms            DOUBLE PRECISION,
    connect_ms        DOUBLE PRECISION,
    tls_ms            DOUBLE PRECISION,
    sent_ms           DOUBLE PRECISION,
    ttfb_ms           DOUBLE PRECISION,
    headers_ms        DOUBLE PRECISION,
    ttfe_ms           DOUBLE PRECISION,
    ttfr_ms           DOUBLE PRECISION,
    ttft_ms           DOUBLE PRECISION,
    last_token_ms     DOUBLE PRECISION,
    e2e_ms            DOUBLE PRECISION,
    content_chunks    BIGINT NOT NULL,
    output_tokens     BIGINT,
    input_tokens      BIGINT,
    tokens_per_s      DOUBLE PRECISION,
    itl_p50_ms        DOUBLE PRECISION,
    itl_p99_ms        DOUBLE PRECISION,
    status            BIGINT,
    request_id        TEXT,
    provider          TEXT,
    route             TEXT,
    cost_usd          DOUBLE PRECISION,
    server_timing     JSONB,
    tls               JSONB,
    error_kind        TEXT,
    error_message     TEXT,
    CHECK ((error_kind IS NULL) = (error_message IS NULL))
);
CREATE INDEX samples_session_id ON samples (session_id, actual_start_ms);
"#,
)];

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
pub const SAMPLE_COLUMNS: [&str; 40] = [
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
}

/// `INSERT INTO table (cols) VALUES (…)` with `?N` (SQLite) or `$N` (PostgreSQL) placeholders.
pub(crate) fn insert_sql(table: &str, cols: &[&str], dollar: bool) -> String {
    let marks: Vec<String> = (1..=cols.len())
        .map(|i| {
            if dollar {
                format!("${i}")
            } else {
                format!("?{i}")
            }
        })
        .collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        cols.join(", "),
        marks.join(", ")
    )
}

fn opt_text(v: &Option<String>) -> Cell {
    v.as_ref().map_or(Cell::Null, |s| Cell::Text(s.clone()))
}

fn real(name: &str, v: f64) -> Result<Cell, String> {
    if v.is_finite() {
        Ok(Cell::Real(v))
    } else {
        Err(format!("{name} is {v}; only finite numbers can be stored"))
    }
}

fn opt_real(name: &str, v: Option<f64>) -> Result<Cell, String> {
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
        Cell::Text(m.started_at.clone()),
        opt_text(&m.ended_at),
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
    let s = &r.sample;
    if let Some(st) = &s.server_timing {
        for (k, v) in st {
            real(&format!("server_timing[{k:?}]"), *v)?;
        }
    }
    let connection = match s.connection {
        Connection::Fresh => "fresh",
        Connection::Reused => "reused",
    };
    Ok(vec![
        Cell::Text(r.session_id.clone()),
        int("seq", s.seq)?,
        Cell::Text(r.phase.clone()),
        opt_text(&r.path),
        opt_text(&r.strategy),
        r.concurrency
            .map_or(Cell::Null, |c| Cell::Int(i64::from(c))),
        opt_real("intended_start_ms", r.intended_start_ms)?,
        real("actual_start_ms", r.actual_start_ms)?,
        Cell::Text(r.started_at.clone()),
        Cell::Text(r.provenance.as_str().into()),
        Cell::Int(i64::from(s.worker)),
        Cell::Bool(s.warmup),
        Cell::Text(connection.into()),
        opt_text(&s.http_version),
        opt_real("dns_ms", s.dns_ms)?,
        opt_real("connect_ms", s.connect_ms)?,
        opt_real("tls_ms", s.tls_ms)?,
        opt_real("sent_ms", s.sent_ms)?,
        opt_real("ttfb_ms", s.ttfb_ms)?,
        opt_real("headers_ms", s.headers_ms)?,
        opt_real("ttfe_ms", s.ttfe_ms)?,
        opt_real("ttfr_ms", s.ttfr_ms)?,
        opt_real("ttft_ms", s.ttft_ms)?,
        opt_real("last_token_ms", s.last_token_ms)?,
        opt_real("e2e_ms", s.e2e_ms)?,
        int("content_chunks", s.content_chunks)?,
        opt_int("output_tokens", s.output_tokens)?,
        opt_int("input_tokens", s.input_tokens)?,
        opt_real("tokens_per_s", s.tokens_per_s)?,
        opt_real("itl_p50_ms", s.itl_p50_ms)?,
        opt_real("itl_p99_ms", s.itl_p99_ms)?,
        s.status.map_or(Cell::Null, |c| Cell::Int(i64::from(c))),
        opt_text(&s.request_id),
        opt_text(&s.provider),
        opt_text(&s.route),
        opt_real("cost_usd", s.cost_usd)?,
        match &s.server_timing {
            Some(st) => json(st)?,
            None => Cell::Null,
        },
        match &s.tls {
            Some(t) => json(t)?,
            None => Cell::Null,
        },
        s.error
            .as_ref()
            .map_or(Cell::Null, |e| Cell::Text(e.kind.as_str().into())),
        s.error
            .as_ref()
            .map_or(Cell::Null, |e| Cell::Text(e.message.clone())),
    ])
}

/// Typed column access by name, implemented by each backend's row type.
/// Errors are messages naming the column.
pub(crate) trait RowGet {
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, String>;
    fn opt_i64(&self, col: &str) -> Result<Option<i64>, String>;
    fn opt_text(&self, col: &str) -> Result<Option<String>, String>;
    fn bool(&self, col: &str) -> Result<bool, String>;
    fn opt_json(&self, col: &str) -> Result<Option<serde_json::Value>, String>;

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
    fn typed_json<T: serde::de::DeserializeOwned>(&self, col: &str) -> Result<Option<T>, String> {
        self.opt_json(col)?
            .map(|v| serde_json::from_value(v).map_err(|e| format!("{col}: {e}")))
            .transpose()
    }
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
        started_at: r.text("started_at")?,
        ended_at: r.opt_text("ended_at")?,
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
        tls_ms: r.opt_f64("tls_ms")?,
        sent_ms: r.opt_f64("sent_ms")?,
        ttfb_ms: r.opt_f64("ttfb_ms")?,
        headers_ms: r.opt_f64("headers_ms")?,
        ttfe_ms: r.opt_f64("ttfe_ms")?,
        ttfr_ms: r.opt_f64("ttfr_ms")?,
        ttft_ms: r.opt_f64("ttft_ms")?,
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
        error,
    };
    Ok(SampleRow {
        session_id: r.text("session_id")?,
        phase: r.text("phase")?,
        path: r.opt_text("path")?,
        strategy: r.opt_text("strategy")?,
        concurrency: r.opt_u32("concurrency")?,
        intended_start_ms: r.opt_f64("intended_start_ms")?,
        actual_start_ms: r.f64("actual_start_ms")?,
        started_at: r.text("started_at")?,
        provenance: r.text("provenance")?.parse::<Provenance>()?,
        sample,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_column_appears_in_both_migrations() {
        for col in SAMPLE_COLUMNS.iter().chain(SESSION_COLUMNS.iter()) {
            let pat = format!("\n    {col} ");
            assert!(SQLITE_MIGRATIONS[0].1.contains(&pat), "sqlite lacks {col}");
            assert!(
                POSTGRES_MIGRATIONS[0].1.contains(&pat),
                "postgres lacks {col}"
            );
        }
        assert_eq!(SQLITE_MIGRATIONS.len(), POSTGRES_MIGRATIONS.len());
    }

    #[test]
    fn insert_sql_numbers_placeholders() {
        assert_eq!(
            insert_sql("t", &["a", "b"], true),
            "INSERT INTO t (a, b) VALUES ($1, $2)"
        );
        assert_eq!(
            insert_sql("t", &["a", "b"], false),
            "INSERT INTO t (a, b) VALUES (?1, ?2)"
        );
    }
}

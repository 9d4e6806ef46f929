//! The primitives every store operation is written with, so that each
//! statement's text exists once, with PostgreSQL's `$N` placeholders
//! ([`placeholders`] turns them into SQLite's `?N`):
//!
//! - [`Store::exec`]: one statement, autocommitted;
//! - [`Store::exec_once`]: an insert that must not happen twice: on
//!   PostgreSQL, a retry after a dropped connection first asks whether the
//!   first attempt committed;
//! - [`Store::query`]: the rows of a statement, each read by column name;
//! - [`Store::scan`]: the rows of a statement folded as they arrive, in
//!   bounded memory;
//! - [`Store::begin`]: a transaction ([`Tx`]): SQLite's `IMMEDIATE` (it
//!   holds the store's thread until it ends), PostgreSQL's on one pooled
//!   connection; [`retry_once!`] runs a transaction's attempt once more
//!   after a dropped PostgreSQL connection.
//!
//! Each backend implements them over its driver (`sqlite/sql.rs`,
//! `sqlite/tx.rs`, `sqlite/scan.rs`; `postgres/sql.rs`, `postgres/tx.rs`,
//! `postgres/scan.rs`). Where the backends genuinely differ, the
//! difference is a field of [`Dialect`], named where it is used.

use std::hash::{BuildHasherDefault, Hasher};

use firsttoken_stats::bootstrap::{FNV_OFFSET, fnv1a};

use super::schema::{Cell, POSTGRES_MIGRATIONS, RowGet, SQLITE_MIGRATIONS};
use super::view::RowRef;
use super::{Store, StoreError};

/// A statement in PostgreSQL's `$N` form, or SQLite's `?N`.
pub(crate) fn placeholders(sql: &str, dollar: bool) -> String {
    if dollar {
        sql.to_owned()
    } else {
        sql.replace('$', "?")
    }
}

/// `INSERT INTO table (cols) VALUES (…), (…)` for `rows` rows, numbered
/// `$1` on; `suffix` (e.g. an `ON CONFLICT` clause) follows.
pub(crate) fn insert_rows_sql(table: &str, cols: &[&str], rows: usize, suffix: &str) -> String {
    let mut sql = format!("INSERT INTO {table} ({}) VALUES ", cols.join(", "));
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..cols.len() {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${}", r * cols.len() + c + 1));
        }
        sql.push(')');
    }
    if !suffix.is_empty() {
        sql.push(' ');
        sql.push_str(suffix);
    }
    sql
}

/// A bulk insert of whole rows into `table`: SQLite runs its one-row
/// `INSERT` once a row; PostgreSQL streams the rows into a `COPY` of the
/// same columns (`postgres/copy.rs`), its types those of that `INSERT`.
pub(crate) struct RowsInsert {
    one: String,
    rows: usize,
    table: &'static str,
    names: &'static [&'static str],
}

impl RowsInsert {
    pub(crate) fn new(
        table: &'static str,
        names: &'static [&'static str],
        rows: usize,
    ) -> RowsInsert {
        RowsInsert {
            one: insert_rows_sql(table, names, 1, ""),
            rows,
            table,
            names,
        }
    }

    /// Rows per full batch.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// The table.
    pub(crate) fn table(&self) -> &'static str {
        self.table
    }

    /// The columns, in the order of a row's cells.
    pub(crate) fn names(&self) -> &'static [&'static str] {
        self.names
    }

    /// The one-row `INSERT`, `$N` numbered.
    pub(crate) fn one(&self) -> &str {
        &self.one
    }
}

/// `SELECT cols FROM table` with each JSON column (of `json`) read as its
/// text (PostgreSQL's `jsonb` cast), for a scan's [`RowRef`] rows.
pub(crate) fn select_as_text(table: &str, cols: &[&str], json: &[&str]) -> String {
    let list: Vec<String> = cols
        .iter()
        .map(|c| {
            if json.contains(c) {
                format!("CAST({c} AS TEXT) AS {c}")
            } else {
                (*c).to_owned()
            }
        })
        .collect();
    format!("SELECT {} FROM {table}", list.join(", "))
}

/// SQLite's page cache during [`Store::begin_bulk`].
pub(crate) const BULK_CACHE_KIB: u32 = 64 * 1024;

/// What the two backends' SQL genuinely differs in.
pub(crate) struct Dialect {
    /// The ordered migrations.
    pub migrations: &'static [(i64, &'static str)],
    /// Creates the bookkeeping table if it is missing.
    pub schema_migrations_ddl: &'static str,
    /// Run first in the migrating transaction: PostgreSQL takes an
    /// advisory lock (held to commit) so concurrent openers of one schema
    /// migrate once; SQLite's `IMMEDIATE` transaction already excludes
    /// other writers.
    pub migrate_lock: Option<&'static str>,
    /// The time a migration was applied, as an SQL expression.
    pub now: &'static str,
    /// `id` starts with `$1`: `starts_with` (PostgreSQL ≥ 11) or `substr`.
    pub id_prefix: &'static str,
    /// Run first in a span batch's transaction: PostgreSQL serialises the
    /// batches of one session (`$1`) so the cap holds against concurrent
    /// writers; SQLite's `IMMEDIATE` transaction already does.
    pub spans_lock: Option<&'static str>,
    /// Refreshes the planner's statistics after a bulk import, so reading
    /// a session takes the index instead of sorting a table the planner
    /// still thinks is small (PostgreSQL's autovacuum gets there later).
    pub refresh_stats: Option<&'static str>,
}

const SQLITE: Dialect = Dialect {
    migrations: SQLITE_MIGRATIONS,
    schema_migrations_ddl: "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY NOT NULL,
             applied_at TEXT NOT NULL
         ) STRICT",
    migrate_lock: None,
    now: "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
    id_prefix: "substr(id, 1, length($1)) = $1",
    spans_lock: None,
    refresh_stats: None,
};

const POSTGRES: Dialect = Dialect {
    migrations: POSTGRES_MIGRATIONS,
    schema_migrations_ddl: "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    BIGINT PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    migrate_lock: Some(
        "SELECT pg_advisory_xact_lock(hashtext('firsttoken.migrate:' || coalesce(current_schema(), '')))",
    ),
    now: "now()",
    id_prefix: "starts_with(id, $1)",
    spans_lock: Some("SELECT pg_advisory_xact_lock(hashtext('firsttoken spans ' || $1))"),
    refresh_stats: Some("ANALYZE samples, spans"),
};

/// Runs `$attempt` (an expression using `$retry: bool`, true on the
/// second run) and, on PostgreSQL, runs it once more after a dropped
/// connection. An attempt that may have committed before the connection
/// dropped checks for its own work first when `$retry` is true.
macro_rules! retry_once {
    ($store:expr, |$retry:ident| $attempt:expr) => {{
        let mut $retry = false;
        loop {
            match $attempt {
                Err(e) if $store.retry_after(&e, &mut $retry) => {}
                done => break done,
            }
        }
    }};
}
pub(crate) use retry_once;

/// A transaction, from [`Store::begin`]: commit it, or drop it to roll
/// back. While a SQLite transaction is open, the store's thread serves
/// only it: its holder must not await another operation on the same store.
pub(crate) enum Tx {
    Sqlite(super::sqlite::SqliteTx),
    Postgres(Box<super::postgres::PgTx>),
}

impl Tx {
    /// Runs one statement; returns the rows it changed.
    pub(crate) async fn exec(&mut self, sql: &str, cells: Vec<Cell>) -> Result<u64, StoreError> {
        match self {
            Tx::Sqlite(t) => t.exec(placeholders(sql, false), cells).await,
            Tx::Postgres(t) => t.exec(sql, cells).await,
        }
    }

    /// Inserts whole rows (a flat run of cells, at most a full batch);
    /// returns the rows handed over, which the store holds only once the
    /// transaction's next statement or its commit returned. SQLite runs its
    /// one-row `INSERT`, prepared, once a row, its batches queued one ahead
    /// (one statement writing many rows would keep a statement journal of
    /// every page it changes). PostgreSQL streams the rows into one `COPY
    /// … FROM STDIN (FORMAT binary)` left open across batches (see
    /// `postgres/copy.rs`).
    pub(crate) async fn insert_rows(
        &mut self,
        insert: &RowsInsert,
        cells: Vec<Cell>,
    ) -> Result<u64, StoreError> {
        match self {
            Tx::Sqlite(t) => {
                // The store's thread only binds and steps: JSON is made
                // text here, and the batch before comes back to be freed
                // here, while the thread inserts this one.
                let mut cells = cells;
                for c in &mut cells {
                    if let Cell::Json(v) = c {
                        *c = Cell::Text(v.to_string());
                    }
                }
                let sql = placeholders(insert.one(), false);
                t.queue_rows(sql, insert.names.len(), cells).await
            }
            Tx::Postgres(t) => t.copy_rows(insert, cells).await,
        }
    }

    /// The rows of one statement, each through `f`.
    pub(crate) async fn query<T: Send + 'static>(
        &mut self,
        sql: &str,
        cells: Vec<Cell>,
        f: fn(&dyn RowAny) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Tx::Sqlite(t) => t.query(placeholders(sql, false), cells, f).await,
            Tx::Postgres(t) => t.query(sql, cells, f).await,
        }
    }

    /// Runs several statements without parameters (a migration's file).
    pub(crate) async fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        match self {
            Tx::Sqlite(t) => t.batch(sql.to_owned()).await,
            Tx::Postgres(t) => t.batch(sql).await,
        }
    }

    /// Commits.
    pub(crate) async fn commit(self) -> Result<(), StoreError> {
        match self {
            Tx::Sqlite(t) => t.commit().await,
            Tx::Postgres(t) => (*t).commit().await,
        }
    }
}

impl Store {
    pub(crate) fn dialect(&self) -> &'static Dialect {
        match self {
            Store::Sqlite(_) => &SQLITE,
            Store::Postgres(_) => &POSTGRES,
        }
    }

    /// Refreshes the planner's statistics after a bulk write (see
    /// [`Dialect::refresh_stats`]); nothing to do on SQLite.
    pub(crate) async fn refresh_stats(&self) -> Result<(), StoreError> {
        match self.dialect().refresh_stats {
            Some(sql) => self
                .exec("refresh statistics", sql, Vec::new())
                .await
                .map(|_| ()),
            None => Ok(()),
        }
    }

    /// Runs one statement in its own transaction; returns the rows it
    /// changed. PostgreSQL runs it again after a dropped connection, so it
    /// must be one that may run twice (an update, an idempotent insert).
    pub(crate) async fn exec(
        &self,
        op: &'static str,
        sql: &str,
        cells: Vec<Cell>,
    ) -> Result<u64, StoreError> {
        match self {
            Store::Sqlite(s) => s.exec(op, placeholders(sql, false), cells).await,
            Store::Postgres(s) => s.exec(op, sql, cells, None).await,
        }
    }

    /// Runs an insert that must not happen twice. A PostgreSQL retry after
    /// a dropped connection first runs `found` (with `found_cells`), and
    /// skips the insert when it returns a row: the first attempt committed
    /// before its reply was lost.
    pub(crate) async fn exec_once(
        &self,
        op: &'static str,
        sql: &str,
        cells: Vec<Cell>,
        found: &str,
        found_cells: Vec<Cell>,
    ) -> Result<u64, StoreError> {
        match self {
            Store::Sqlite(s) => s.exec(op, placeholders(sql, false), cells).await,
            Store::Postgres(s) => s.exec(op, sql, cells, Some((found, found_cells))).await,
        }
    }

    /// The rows of one statement, each through `f`.
    pub(crate) async fn query<T: Send + 'static>(
        &self,
        op: &'static str,
        sql: &str,
        cells: Vec<Cell>,
        f: fn(&dyn RowAny) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Store::Sqlite(s) => s.query(op, placeholders(sql, false), cells, f).await,
            Store::Postgres(s) => s.query(op, sql, cells, f).await,
        }
    }

    /// `f` over every row of `sql` as the rows come, in bounded memory
    /// (see `sqlite/scan.rs`, `postgres/scan.rs`); an `Err` from `f` stops
    /// the scan.
    pub(crate) async fn scan<S, F>(
        &self,
        op: &'static str,
        sql: &str,
        cells: Vec<Cell>,
        state: S,
        f: F,
    ) -> Result<S, StoreError>
    where
        F: FnMut(&mut S, &dyn RowRef) -> Result<(), String>,
    {
        match self {
            Store::Sqlite(s) => s.scan(op, placeholders(sql, false), cells, state, f).await,
            Store::Postgres(s) => s.scan(op, sql.to_owned(), cells, state, f).await,
        }
    }

    /// Folds, as `op`, the rows of one session in `table` (its name, its
    /// columns, which of them are JSON), ordered by `order`, each read by
    /// column name, in bounded memory (see [`Store::scan`]).
    pub(crate) async fn scan_session<S, F>(
        &self,
        op: &'static str,
        session_id: &str,
        (table, cols, json): (&str, &'static [&'static str], &[&str]),
        order: &str,
        state: S,
        mut f: F,
    ) -> Result<S, StoreError>
    where
        F: FnMut(&mut S, &Named<'_>) -> Result<(), String>,
    {
        let sql = format!(
            "{} WHERE session_id = $1 ORDER BY {order}",
            select_as_text(table, cols, json)
        );
        let columns = Columns::new(cols);
        let each = |st: &mut S, row: &dyn RowRef| f(st, &Named::new(row, &columns));
        let cells = vec![Cell::Text(session_id.to_owned())];
        self.scan(op, &sql, cells, state, each).await
    }

    /// Begins a transaction (see [`Tx`]).
    pub(crate) async fn begin(&self, op: &'static str) -> Result<Tx, StoreError> {
        self.begin_with(op, None).await
    }

    /// Begins a transaction that writes many pages: SQLite's page cache
    /// may grow to [`BULK_CACHE_KIB`] while it is open, so the pages it
    /// keeps changing (an index filled in random order) stay in memory
    /// rather than being written out and read back.
    pub(crate) async fn begin_bulk(&self, op: &'static str) -> Result<Tx, StoreError> {
        self.begin_with(op, Some(BULK_CACHE_KIB)).await
    }

    async fn begin_with(&self, op: &'static str, cache_kib: Option<u32>) -> Result<Tx, StoreError> {
        match self {
            Store::Sqlite(s) => s.begin(op, cache_kib).await.map(Tx::Sqlite),
            Store::Postgres(s) => s.begin(op).await.map(|t| Tx::Postgres(Box::new(t))),
        }
    }

    /// Whether [`retry_once!`] runs its attempt again after `e`: once, on
    /// PostgreSQL, when `e` is a dropped connection (counted in
    /// [`Store::reconnects`]).
    pub(crate) fn retry_after(&self, e: &StoreError, retried: &mut bool) -> bool {
        match self {
            Store::Postgres(s) if !*retried && e.is_connection() => {
                *retried = true;
                s.count_reconnect();
                true
            }
            _ => false,
        }
    }
}

/// A row of either backend, read by column name.
pub(crate) trait RowAny {
    fn get_f64(&self, col: &str) -> Result<Option<f64>, String>;
    fn get_i64(&self, col: &str) -> Result<Option<i64>, String>;
    fn get_text(&self, col: &str) -> Result<Option<String>, String>;
    fn get_json(&self, col: &str) -> Result<Option<serde_json::Value>, String>;
    fn get_bool(&self, col: &str) -> Result<bool, String>;
    fn get_bytes(&self, col: &str) -> Result<Option<Vec<u8>>, String>;
}

impl<T: RowGet> RowAny for T {
    fn get_f64(&self, col: &str) -> Result<Option<f64>, String> {
        self.opt_f64(col)
    }
    fn get_i64(&self, col: &str) -> Result<Option<i64>, String> {
        self.opt_i64(col)
    }
    fn get_text(&self, col: &str) -> Result<Option<String>, String> {
        self.opt_text(col)
    }
    fn get_json(&self, col: &str) -> Result<Option<serde_json::Value>, String> {
        self.opt_json(col)
    }
    fn get_bool(&self, col: &str) -> Result<bool, String> {
        self.bool(col)
    }
    fn get_bytes(&self, col: &str) -> Result<Option<Vec<u8>>, String> {
        self.opt_bytes(col)
    }
}

// `(**self)`: the row itself, not this reference (which is a `RowAny` too).
impl RowGet for &dyn RowAny {
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, String> {
        (**self).get_f64(col)
    }
    fn opt_i64(&self, col: &str) -> Result<Option<i64>, String> {
        (**self).get_i64(col)
    }
    fn opt_text(&self, col: &str) -> Result<Option<String>, String> {
        (**self).get_text(col)
    }
    fn bool(&self, col: &str) -> Result<bool, String> {
        (**self).get_bool(col)
    }
    fn opt_json(&self, col: &str) -> Result<Option<serde_json::Value>, String> {
        (**self).get_json(col)
    }
    fn opt_bytes(&self, col: &str) -> Result<Option<Vec<u8>>, String> {
        (**self).get_bytes(col)
    }
}

/// A scan's row read by column name: `columns` is the statement's select
/// list in order (built from the same names), JSON columns selected as
/// text ([`select_as_text`]).
pub(crate) struct Named<'a> {
    row: &'a dyn RowRef,
    columns: &'a Columns,
    /// Columns looked up so far in this row.
    looked: std::cell::Cell<usize>,
}

impl<'a> Named<'a> {
    /// Row `row` of a scan selecting `columns`.
    pub(crate) fn new(row: &'a dyn RowRef, columns: &'a Columns) -> Named<'a> {
        Named {
            row,
            columns,
            looked: std::cell::Cell::new(0),
        }
    }
}

/// Column names and where each stands in a select list.
pub(crate) struct Columns {
    names: Vec<&'static str>,
    index: std::collections::HashMap<&'static str, usize, BuildHasherDefault<Fnv>>,
    /// For the k-th lookup of a row, the column the k-th lookup of the
    /// row before found: a reader asks for the same columns in the same
    /// order every row, so the guess, checked by name, is nearly always
    /// right and the hash is skipped.
    guess: Vec<std::sync::atomic::AtomicUsize>,
}

impl Columns {
    pub(crate) fn new(names: &[&'static str]) -> Columns {
        Columns {
            names: names.to_vec(),
            index: names.iter().enumerate().map(|(i, n)| (*n, i)).collect(),
            guess: (0..2 * names.len())
                .map(|_| std::sync::atomic::AtomicUsize::new(usize::MAX))
                .collect(),
        }
    }
}

/// FNV-1a for [`Columns`]: when its guess misses, a scan looks a column
/// up by name, and std's SipHash, made to resist chosen keys these fixed
/// names never are, was a tenth of a million-sample export's time when
/// every lookup hashed.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let h = if self.0 == 0 { FNV_OFFSET } else { self.0 };
        self.0 = fnv1a(h, bytes);
    }
}

impl Named<'_> {
    fn at(&self, col: &str) -> Result<usize, String> {
        use std::sync::atomic::Ordering::Relaxed;
        let c = self.columns;
        let k = self.looked.get();
        self.looked.set(k + 1);
        let guess = c.guess.get(k);
        if let Some(i) = guess.map(|g| g.load(Relaxed))
            && c.names.get(i) == Some(&col)
        {
            return Ok(i);
        }
        let i = c
            .index
            .get(col)
            .copied()
            .ok_or_else(|| format!("{col}: not selected"))?;
        if let Some(g) = guess {
            g.store(i, Relaxed);
        }
        Ok(i)
    }
}

impl RowGet for Named<'_> {
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, String> {
        self.row
            .f64_at(self.at(col)?)
            .map_err(|e| format!("{col}: {e}"))
    }
    fn opt_i64(&self, col: &str) -> Result<Option<i64>, String> {
        self.row
            .i64_at(self.at(col)?)
            .map_err(|e| format!("{col}: {e}"))
    }
    fn opt_text(&self, col: &str) -> Result<Option<String>, String> {
        self.row
            .str_at(self.at(col)?)
            .map(|s| s.map(str::to_owned))
            .map_err(|e| format!("{col}: {e}"))
    }
    fn bool(&self, col: &str) -> Result<bool, String> {
        self.row
            .bool_at(self.at(col)?)
            .map_err(|e| format!("{col}: {e}"))
    }
    fn opt_json(&self, col: &str) -> Result<Option<serde_json::Value>, String> {
        self.typed_json(col)
    }
    /// Parsed from the column's text straight into `T`, with no
    /// `serde_json::Value` between.
    fn typed_json<T: serde::de::DeserializeOwned>(&self, col: &str) -> Result<Option<T>, String> {
        match self
            .row
            .str_at(self.at(col)?)
            .map_err(|e| format!("{col}: {e}"))?
        {
            Some(t) => serde_json::from_str(t)
                .map(Some)
                .map_err(|e| format!("{col}: {e}")),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_row_inserts_number_every_cell() {
        assert_eq!(
            insert_rows_sql("t", &["a", "b"], 2, "ON CONFLICT DO NOTHING"),
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4) ON CONFLICT DO NOTHING"
        );
        assert_eq!(
            placeholders(&insert_rows_sql("t", &["a"], 1, ""), false),
            "INSERT INTO t (a) VALUES (?1)"
        );
    }

    #[test]
    fn json_columns_are_selected_as_text() {
        assert_eq!(
            select_as_text("t", &["a", "j"], &["j"]),
            "SELECT a, CAST(j AS TEXT) AS j FROM t"
        );
    }
}

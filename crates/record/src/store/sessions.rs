//! Sessions and their samples, written once for both backends over the
//! primitives of [`super::sql`].

use std::collections::HashMap;
use std::sync::LazyLock;

use super::schema::{self, Cell, RowGet, SAMPLE_COLUMNS, SESSION_COLUMNS, sample_cells};
use super::sql::{RowAny, insert_rows_sql, retry_once};
use super::{Abandoned, CLEANUP_NOT_RUN, Store, StoreError, json_cell, pid_alive, sanitized};
use crate::session::{Cleanup, SampleRow, SessionMeta, SessionStatus};
use crate::vocab::UtcTime;

/// Marks a session `partial` (`$2` the reason) if it still reads
/// `running` (`$1` its id). Running it twice changes nothing more.
pub(crate) const MARK_PARTIAL_SQL: &str =
    "UPDATE sessions SET status = 'partial', status_reason = $2
     WHERE id = $1 AND status = 'running'";

/// A row when session `$1` exists.
pub(crate) const SESSION_FOUND_SQL: &str = "SELECT 1 AS found FROM sessions WHERE id = $1";

/// What [`Store::delete_session`] removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedSession {
    /// The session's id.
    pub id: String,
    /// Its samples.
    pub samples: u64,
    /// Its stored spans.
    pub spans: u64,
    /// Its recorded test-account ids.
    pub test_accounts: u64,
}

/// The columns that tell a stored sample apart: a retried append looks
/// for a row holding the same values before it inserts.
const SAMPLE_KEY: [&str; 6] = [
    "session_id",
    "seq",
    "phase",
    "actual_start_ms",
    "started_at",
    "warmup",
];

/// `SELECT 1 … WHERE` each [`SAMPLE_KEY`] column equals its parameter.
static SAMPLE_FOUND_SQL: LazyLock<String> = LazyLock::new(|| {
    let cond: Vec<String> = SAMPLE_KEY
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} = ${}", i + 1))
        .collect();
    format!(
        "SELECT 1 AS found FROM samples WHERE {} LIMIT 1",
        cond.join(" AND ")
    )
});

pub(crate) static SESSION_INSERT_SQL: LazyLock<String> =
    LazyLock::new(|| insert_rows_sql("sessions", &SESSION_COLUMNS, 1, ""));
static SAMPLE_INSERT_SQL: LazyLock<String> =
    LazyLock::new(|| insert_rows_sql("samples", &SAMPLE_COLUMNS, 1, ""));

/// `SELECT <every session column> FROM sessions`.
fn select_sessions() -> String {
    format!("SELECT {} FROM sessions", SESSION_COLUMNS.join(", "))
}

/// The cells of `names`, looked up by name in a row of [`SAMPLE_COLUMNS`].
pub(crate) fn sample_cells_named(cells: &[Cell], names: &[&str]) -> Result<Vec<Cell>, String> {
    names
        .iter()
        .map(|name| {
            SAMPLE_COLUMNS
                .iter()
                .position(|c| c == name)
                .and_then(|i| cells.get(i))
                .cloned()
                .ok_or_else(|| format!("no sample column {name:?}"))
        })
        .collect()
}

fn session_row(r: &dyn RowAny) -> Result<SessionMeta, String> {
    schema::session_from(&r)
}

fn found(_: &dyn RowAny) -> Result<(), String> {
    Ok(())
}

impl Store {
    /// Stores a new session. The spec goes through [`super::redact_spec`]
    /// (and tag values under secret-looking keys are redacted) on the way
    /// in; a `None` pid records the calling process as the owner.
    pub async fn create_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let op = "create session";
        let meta = sanitized(meta);
        let cells = schema::session_cells(&meta).map_err(|m| self.invalid(op, m))?;
        let id = vec![Cell::Text(meta.id.clone())];
        self.exec_once(op, &SESSION_INSERT_SQL, cells, SESSION_FOUND_SQL, id)
            .await
            .map(|_| ())
    }

    /// Stores one completed request. When this returns `Ok`, the sample is
    /// committed (one transaction per sample).
    pub async fn append_sample(&self, row: &SampleRow) -> Result<(), StoreError> {
        let op = "append sample";
        let cells = sample_cells(row).map_err(|m| self.invalid(op, m))?;
        let key = sample_cells_named(&cells, &SAMPLE_KEY).map_err(|m| self.invalid(op, m))?;
        self.exec_once(op, &SAMPLE_INSERT_SQL, cells, &SAMPLE_FOUND_SQL, key)
            .await
            .map(|_| ())
    }

    /// Records how a session ended. `cleanup: None` keeps any cleanup
    /// already stored with [`Store::set_cleanup`].
    pub async fn finish_session(
        &self,
        id: &str,
        status: &SessionStatus,
        ended_at: UtcTime,
        cleanup: Option<&Cleanup>,
        client_lag_p99_ms: Option<f64>,
    ) -> Result<(), StoreError> {
        let op = "finish session";
        let lag = match client_lag_p99_ms {
            Some(v) if !v.is_finite() => {
                return Err(self.invalid(op, format!("client_lag_p99_ms is {v}")));
            }
            Some(v) => Cell::Real(v),
            None => Cell::Null,
        };
        let (status, reason) = schema::status_cells(status);
        let mut cells = vec![
            Cell::Text(id.to_owned()),
            status,
            reason,
            Cell::Text(ended_at.to_string()),
            lag,
        ];
        if let Some(c) = cleanup {
            cells.push(json_cell(c).map_err(|m| self.invalid(op, m))?);
        }
        let sql = format!(
            "UPDATE sessions SET status = $2, status_reason = $3, ended_at = $4,
                 client_lag_p99_ms = $5{}
             WHERE id = $1",
            if cleanup.is_some() {
                ", cleanup = $6"
            } else {
                ""
            }
        );
        let n = self.exec(op, &sql, cells).await?;
        self.no_session_if_zero(n, op, id)
    }

    /// Stores a session's test-account cleanup result.
    pub async fn set_cleanup(&self, id: &str, cleanup: &Cleanup) -> Result<(), StoreError> {
        let op = "set cleanup";
        let cell = json_cell(cleanup).map_err(|m| self.invalid(op, m))?;
        let n = self
            .exec(
                op,
                "UPDATE sessions SET cleanup = $2 WHERE id = $1",
                vec![Cell::Text(id.to_owned()), cell],
            )
            .await?;
        self.no_session_if_zero(n, op, id)
    }

    /// Records that session `session_id` created the test account
    /// `account_id`: call it the moment the account exists. The id is
    /// committed when this returns, so a session that crashes (even `kill
    /// -9`) before its cleanup still lists it: [`Store::session`] and
    /// [`Store::sessions`] add every recorded id to the session's
    /// [`Cleanup::created_ids`] (a session with recorded ids and no stored
    /// cleanup reads as cleanup `error` [`CLEANUP_NOT_RUN`]). Recording
    /// the same id twice is a no-op; an unknown session is
    /// [`StoreError::NoSession`].
    pub async fn add_test_account(
        &self,
        session_id: &str,
        account_id: &str,
    ) -> Result<(), StoreError> {
        let op = "add test account";
        let id = Cell::Text(session_id.to_owned());
        // Idempotent, so a retry after a lost reply is harmless.
        let n = self
            .exec(
                op,
                "INSERT INTO test_accounts (session_id, account_id)
                 SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1)
                 ON CONFLICT (session_id, account_id) DO NOTHING",
                vec![id.clone(), Cell::Text(account_id.to_owned())],
            )
            .await?;
        if n == 0
            && self
                .query(op, SESSION_FOUND_SQL, vec![id], found)
                .await?
                .is_empty()
        {
            return self.no_session_if_zero(0, op, session_id);
        }
        Ok(())
    }

    /// The test-account ids recorded for a session with
    /// [`Store::add_test_account`], in the order they were recorded.
    pub async fn test_accounts(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let rows = self.accounts(Some(session_id)).await?;
        Ok(rows.into_iter().map(|(_, a)| a).collect())
    }

    /// `(session, account)` for every recorded test account (of one
    /// session, or of all), in the order they were recorded.
    async fn accounts(&self, only: Option<&str>) -> Result<Vec<(String, String)>, StoreError> {
        self.query(
            "read test accounts",
            "SELECT session_id, account_id FROM test_accounts
             WHERE CAST($1 AS TEXT) IS NULL OR session_id = $1 ORDER BY id",
            vec![only.map_or(Cell::Null, |s| Cell::Text(s.to_owned()))],
            |r| Ok((r.text("session_id")?, r.text("account_id")?)),
        )
        .await
    }

    /// Adds each session's recorded test accounts to its cleanup.
    async fn with_accounts(
        &self,
        mut sessions: Vec<SessionMeta>,
        only: Option<&str>,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        if sessions.is_empty() {
            return Ok(sessions);
        }
        let accounts = self.accounts(only).await?;
        let index: HashMap<String, usize> = sessions
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.clone(), i))
            .collect();
        for (session_id, account) in accounts {
            if let Some(m) = index.get(&session_id).map(|&i| &mut sessions[i]) {
                let c = m.cleanup.get_or_insert_with(|| Cleanup {
                    error: Some(CLEANUP_NOT_RUN.to_owned()),
                    ..Cleanup::default()
                });
                if !c.created_ids.contains(&account) {
                    c.created_ids.push(account);
                }
            }
        }
        Ok(sessions)
    }

    /// Every session, newest first.
    pub async fn sessions(&self) -> Result<Vec<SessionMeta>, StoreError> {
        let sql = format!("{} ORDER BY started_at DESC, id DESC", select_sessions());
        let found = self
            .query("list sessions", &sql, vec![], session_row)
            .await?;
        self.with_accounts(found, None).await
    }

    /// The session with this id, or else the one session whose id starts
    /// with it; `Ok(None)` when none does (or the prefix is empty),
    /// [`StoreError::AmbiguousSession`] when several do.
    pub async fn session(&self, id_or_prefix: &str) -> Result<Option<SessionMeta>, StoreError> {
        let op = "find session";
        if id_or_prefix.is_empty() {
            return Ok(None);
        }
        let id = || vec![Cell::Text(id_or_prefix.to_owned())];
        let exact = format!("{} WHERE id = $1", select_sessions());
        let mut found = self.query(op, &exact, id(), session_row).await?;
        if found.is_empty() {
            let prefix = format!(
                "{} WHERE {} ORDER BY started_at DESC, id DESC LIMIT 10",
                select_sessions(),
                self.dialect().id_prefix
            );
            found = self.query(op, &prefix, id(), session_row).await?;
        }
        let only = (found.len() == 1).then(|| found[0].id.clone());
        let mut found = self.with_accounts(found, only.as_deref()).await?;
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.pop()),
            _ if found[0].id == id_or_prefix => Ok(Some(found.swap_remove(0))),
            _ => Err(StoreError::AmbiguousSession {
                store: self.name(),
                prefix: id_or_prefix.to_owned(),
                matches: found.into_iter().map(|m| m.id).collect(),
            }),
        }
    }

    /// Marks `partial` (with `reason`) every session of `host` still
    /// `running` whose owner process is gone (no `/proc/<pid>`, or a
    /// zombie). Sessions of other hosts are left alone: only their own host
    /// can tell. Where `/proc` is missing, nothing is marked. A recycled
    /// pid keeps a dead session `running` until that process ends too.
    pub async fn mark_abandoned(
        &self,
        host: &str,
        reason: &str,
    ) -> Result<Vec<Abandoned>, StoreError> {
        let op = "mark abandoned sessions";
        let running = self
            .query(
                op,
                "SELECT id, pid FROM sessions WHERE status = 'running' AND host = $1",
                vec![Cell::Text(host.to_owned())],
                |r| Ok((r.text("id")?, r.opt_i64("pid")?)),
            )
            .await?;
        let mut marked = Vec::new();
        for (id, pid) in running {
            let Some(pid) = pid.and_then(|p| u32::try_from(p).ok()) else {
                continue;
            };
            if pid_alive(pid) {
                continue;
            }
            let cells = vec![Cell::Text(id.clone()), Cell::Text(reason.to_owned())];
            if self.exec(op, MARK_PARTIAL_SQL, cells).await? == 1 {
                marked.push(Abandoned { id, pid });
            }
        }
        Ok(marked)
    }

    /// Deletes session `id` (the exact id) with everything stored for it:
    /// its samples, spans, recorded test-account ids and run membership,
    /// in one transaction. Returns what it removed;
    /// [`StoreError::NoSession`] when there is no such session. Whether a
    /// session may be deleted (its test accounts cleaned up, not running)
    /// is the caller's to decide: the ids recorded here are the only way
    /// `cleanup` finds its accounts again.
    pub async fn delete_session(&self, id: &str) -> Result<DeletedSession, StoreError> {
        retry_once!(self, |_retry| self.delete_session_once(id).await)
    }

    async fn delete_session_once(&self, id: &str) -> Result<DeletedSession, StoreError> {
        let op = "delete session";
        let cells = || vec![Cell::Text(id.to_owned())];
        let count = |r: &dyn RowAny| r.u64("n");
        let mut tx = self.begin(op).await?;
        let mut counted = Vec::new();
        for table in ["samples", "spans", "test_accounts"] {
            let sql = format!("SELECT COUNT(*) AS n FROM {table} WHERE session_id = $1");
            counted.push(
                tx.query(&sql, cells(), count)
                    .await?
                    .first()
                    .copied()
                    .unwrap_or(0),
            );
        }
        // Samples are deleted here (PostgreSQL's samples have no foreign
        // key since version 17); spans, test accounts, run membership and
        // engine scrapes go with the session (`ON DELETE CASCADE`).
        tx.exec("DELETE FROM samples WHERE session_id = $1", cells())
            .await?;
        let n = tx
            .exec("DELETE FROM sessions WHERE id = $1", cells())
            .await?;
        self.no_session_if_zero(n, op, id)?;
        tx.commit().await?;
        Ok(DeletedSession {
            id: id.to_owned(),
            samples: counted[0],
            spans: counted[1],
            test_accounts: counted[2],
        })
    }

    pub(crate) fn no_session_if_zero(
        &self,
        n: u64,
        op: &'static str,
        id: &str,
    ) -> Result<(), StoreError> {
        if n == 0 {
            Err(StoreError::NoSession {
                op,
                store: self.name(),
                id: id.to_owned(),
            })
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_check_reads_the_key_by_column_name() {
        let cells: Vec<Cell> = (0..SAMPLE_COLUMNS.len() as i64).map(Cell::Int).collect();
        let key = sample_cells_named(&cells, &SAMPLE_KEY).unwrap();
        let at = |name: &str| SAMPLE_COLUMNS.iter().position(|c| *c == name).unwrap() as i64;
        let want: Vec<Cell> = SAMPLE_KEY.iter().map(|n| Cell::Int(at(n))).collect();
        assert_eq!(key, want);
        assert!(
            SAMPLE_FOUND_SQL
                .starts_with("SELECT 1 AS found FROM samples WHERE session_id = $1 AND seq = $2")
        );
        assert!(sample_cells_named(&cells, &["no_such_column"]).is_err());
    }
}

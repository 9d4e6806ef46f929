//! Runs across agents in the store (schema version 7): `runs` and
//! `run_sessions` (see [`crate::run`]), and the store's clock for the
//! agents' clock offsets.

use super::schema::{Cell, RowGet};
use super::sessions::MARK_PARTIAL_SQL;
use super::{Store, StoreError};
use crate::run::{ClockOffset, RunInfo, RunMember};

const RUN_COLUMNS: [&str; 6] = [
    "run_id",
    "created_at",
    "segments",
    "planned_requests",
    "config_hash",
    "start_at",
];

const MEMBER_COLUMNS: [&str; 11] = [
    "session_id",
    "run_id",
    "segment_index",
    "segment_count",
    "segment_requests",
    "ranges",
    "clock_offset_ms",
    "clock_uncertainty_ms",
    "began_at_ms",
    "heartbeat_at_ms",
    "heartbeat_every_ms",
];

fn int(name: &str, v: u64) -> Result<Cell, String> {
    i64::try_from(v)
        .map(Cell::Int)
        .map_err(|_| format!("{name} = {v} does not fit a signed 64-bit column"))
}

fn real(v: Option<f64>) -> Cell {
    v.filter(|x| x.is_finite()).map_or(Cell::Null, Cell::Real)
}

fn run_from(r: &impl RowGet) -> Result<RunInfo, String> {
    Ok(RunInfo {
        run_id: r.text("run_id")?,
        created_at: r.utc("created_at")?,
        segments: r.opt_u32("segments")?.ok_or("segments is NULL")?,
        planned_requests: r.u64("planned_requests")?,
        config_hash: r.text("config_hash")?,
        start_at: r
            .opt_text("start_at")?
            .map(|t| t.parse().map_err(|e| format!("start_at: {e}")))
            .transpose()?,
    })
}

fn member_from(r: &impl RowGet) -> Result<RunMember, String> {
    let ranges: Vec<[u64; 2]> = r.typed_json("ranges")?.unwrap_or_default();
    let clock = match (
        r.opt_f64("clock_offset_ms")?,
        r.opt_f64("clock_uncertainty_ms")?,
    ) {
        (Some(offset_ms), Some(uncertainty_ms)) => Some(ClockOffset {
            offset_ms,
            uncertainty_ms,
        }),
        _ => None,
    };
    Ok(RunMember {
        session_id: r.text("session_id")?,
        run_id: r.text("run_id")?,
        segment: r.opt_u32("segment_index")?.ok_or("segment_index is NULL")?,
        segments: r.opt_u32("segment_count")?.ok_or("segment_count is NULL")?,
        segment_requests: r.u64("segment_requests")?,
        ranges: ranges.into_iter().map(|[a, b]| a..b).collect(),
        clock,
        began_at_ms: r.opt_f64("began_at_ms")?,
        heartbeat_at_ms: r.opt_f64("heartbeat_at_ms")?,
        heartbeat_every_ms: r.opt_f64("heartbeat_every_ms")?,
    })
}

impl Store {
    /// Joins run `run.run_id`: stores `run` unless the run exists, and
    /// returns the run as stored (the first agent's), for the caller to
    /// check that it agrees.
    pub async fn join_run(&self, run: &RunInfo) -> Result<RunInfo, StoreError> {
        let op = "join run";
        let cells = vec![
            Cell::Text(run.run_id.clone()),
            Cell::Text(run.created_at.to_string()),
            Cell::Int(i64::from(run.segments)),
            int("planned_requests", run.planned_requests).map_err(|m| self.invalid(op, m))?,
            Cell::Text(run.config_hash.clone()),
            run.start_at
                .map_or(Cell::Null, |t| Cell::Text(t.to_string())),
        ];
        let insert = format!(
            "INSERT INTO runs ({}) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id) DO NOTHING",
            RUN_COLUMNS.join(", ")
        );
        self.exec(op, &insert, cells).await?;
        self.run(&run.run_id).await?.ok_or_else(|| {
            self.invalid(
                op,
                format!("run {:?} vanished after it was stored", run.run_id),
            )
        })
    }

    /// The run with this id.
    pub async fn run(&self, run_id: &str) -> Result<Option<RunInfo>, StoreError> {
        let sql = format!(
            "SELECT {} FROM runs WHERE run_id = $1",
            RUN_COLUMNS.join(", ")
        );
        let mut v = self
            .query("read run", &sql, vec![Cell::Text(run_id.to_owned())], |r| {
                run_from(&r)
            })
            .await?;
        Ok(v.pop())
    }

    /// Every run, newest first.
    pub async fn runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        let sql = format!(
            "SELECT {} FROM runs ORDER BY created_at DESC, run_id",
            RUN_COLUMNS.join(", ")
        );
        self.query("list runs", &sql, vec![], |r| run_from(&r))
            .await
    }

    /// Records a session's part in a run (its session row must exist).
    pub async fn add_run_member(&self, m: &RunMember) -> Result<(), StoreError> {
        let op = "add run member";
        let bad = |m: String| self.invalid(op, m);
        let ranges: Vec<[u64; 2]> = m.ranges.iter().map(|r| [r.start, r.end]).collect();
        let cells = vec![
            Cell::Text(m.session_id.clone()),
            Cell::Text(m.run_id.clone()),
            Cell::Int(i64::from(m.segment)),
            Cell::Int(i64::from(m.segments)),
            int("segment_requests", m.segment_requests).map_err(bad)?,
            Cell::Json(serde_json::json!(ranges)),
            real(m.clock.map(|c| c.offset_ms)),
            real(m.clock.map(|c| c.uncertainty_ms)),
            real(m.began_at_ms),
            real(m.heartbeat_at_ms),
            real(m.heartbeat_every_ms.filter(|e| *e > 0.0)),
        ];
        let sql = format!(
            "INSERT INTO run_sessions ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
             ON CONFLICT (session_id) DO NOTHING",
            MEMBER_COLUMNS.join(", ")
        );
        self.exec(op, &sql, cells).await.map(|_| ())
    }

    /// Records when a run member released its first measured request (ms
    /// since the Unix epoch, store clock).
    pub async fn set_run_began(
        &self,
        session_id: &str,
        began_at_ms: f64,
    ) -> Result<(), StoreError> {
        self.set_member_ms(
            "set run start",
            "UPDATE run_sessions SET began_at_ms = $2 WHERE session_id = $1",
            session_id,
            began_at_ms,
        )
        .await
    }

    /// Records that the agent running `session_id` is alive at `at_ms` (ms
    /// since the Unix epoch, store clock).
    pub async fn run_heartbeat(&self, session_id: &str, at_ms: f64) -> Result<(), StoreError> {
        self.set_member_ms(
            "store a heartbeat",
            "UPDATE run_sessions SET heartbeat_at_ms = $2 WHERE session_id = $1",
            session_id,
            at_ms,
        )
        .await
    }

    /// `sql` (`$1` the session id, `$2` a time in ms) on a run member.
    async fn set_member_ms(
        &self,
        op: &'static str,
        sql: &str,
        session_id: &str,
        ms: f64,
    ) -> Result<(), StoreError> {
        self.exec(
            op,
            sql,
            vec![Cell::Text(session_id.to_owned()), real(Some(ms))],
        )
        .await
        .map(|_| ())
    }

    /// Marks session `session_id` `partial` with `reason` if it still reads
    /// `running`: its agent fell silent (see [`RunMember::silent_at`]).
    /// Whether it was marked.
    pub async fn mark_silent(&self, session_id: &str, reason: &str) -> Result<bool, StoreError> {
        let n = self
            .exec(
                "mark a silent agent's session",
                MARK_PARTIAL_SQL,
                vec![
                    Cell::Text(session_id.to_owned()),
                    Cell::Text(reason.to_owned()),
                ],
            )
            .await?;
        Ok(n == 1)
    }

    /// The store's clock now, ms since the Unix epoch: PostgreSQL's
    /// `clock_timestamp()`; for SQLite, a file on this machine, this
    /// machine's clock.
    pub async fn store_now_ms(&self) -> Result<f64, StoreError> {
        match self {
            Store::Sqlite(_) => Ok(std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)),
            Store::Postgres(_) => {
                let sql = "SELECT extract(epoch FROM clock_timestamp())::float8 * 1000.0 AS now_ms";
                let v = self
                    .query("read the store's clock", sql, vec![], |r| {
                        r.opt_f64("now_ms")?.ok_or_else(|| "no clock".to_string())
                    })
                    .await?;
                v.first()
                    .copied()
                    .ok_or_else(|| self.invalid("read the store's clock", "no row".into()))
            }
        }
    }

    /// `(seq, warm-up)` of every sample of a session: what counting a
    /// run's requests needs, without reading whole rows.
    pub async fn sample_keys(&self, session_id: &str) -> Result<Vec<(u64, bool)>, StoreError> {
        self.query(
            "read sample keys",
            "SELECT seq, CAST(CASE WHEN warmup THEN 1 ELSE 0 END AS BIGINT) AS warm
             FROM samples WHERE session_id = $1 ORDER BY seq",
            vec![Cell::Text(session_id.to_owned())],
            |r| {
                let seq = r.opt_i64("seq")?.ok_or("seq is NULL")?;
                let seq = u64::try_from(seq).map_err(|_| format!("seq {seq} is negative"))?;
                Ok((seq, r.opt_i64("warm")? == Some(1)))
            },
        )
        .await
    }

    /// The sessions of a run, by segment then session id.
    pub async fn run_members(&self, run_id: &str) -> Result<Vec<RunMember>, StoreError> {
        let sql = format!(
            "SELECT {} FROM run_sessions WHERE run_id = $1 ORDER BY segment_index, session_id",
            MEMBER_COLUMNS.join(", ")
        );
        self.query(
            "read run members",
            &sql,
            vec![Cell::Text(run_id.to_owned())],
            |r| member_from(&r),
        )
        .await
    }

    /// This agent's clock offset to the store's clock: `rounds` round trips
    /// reading PostgreSQL's `clock_timestamp()`, the shortest kept
    /// ([`ClockOffset::best`]). For SQLite, a file on this machine, the
    /// offset is zero. `None` when no round trip could be used.
    pub async fn clock_offset(&self, rounds: u32) -> Result<Option<ClockOffset>, StoreError> {
        match self {
            // A local file is on this machine's clock: no offset.
            Store::Sqlite(_) => Ok(Some(ClockOffset {
                offset_ms: 0.0,
                uncertainty_ms: 0.0,
            })),
            Store::Postgres(s) => {
                let samples = s.clock_rounds(rounds.max(1)).await?;
                Ok(ClockOffset::best(&samples))
            }
        }
    }
}

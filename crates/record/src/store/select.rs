//! Whole sample rows of a session, selected in SQL written once for both
//! backends: every row, or only the counted ones a report needs whole
//! (the successful ones it plots, the ones whose spans it joins).

use super::schema::{self, Cell, SAMPLE_COLUMNS};
use super::view::JSON_COLUMNS;
use super::{Store, StoreError};
use crate::session::SampleRow;

/// Which samples of a session [`Store::samples_where`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleFilter {
    /// Every sample, warm-ups included.
    All,
    /// Counted samples (not warm-ups) that succeeded.
    CountedOk,
    /// Counted samples whose trace id some stored span of the session
    /// carries: what the span join needs whole.
    CountedWithSpans,
}

impl SampleFilter {
    /// The `WHERE` of session `$1`'s samples this filter selects.
    fn condition(self) -> &'static str {
        match self {
            SampleFilter::All => "session_id = $1",
            SampleFilter::CountedOk => "session_id = $1 AND NOT warmup AND error_kind IS NULL",
            // Found through the (session, trace id) index from the spans'
            // trace ids: a session holds far fewer spans than samples.
            // (With `session_id = $1` beside it, SQLite walks every sample
            // of the session instead.)
            SampleFilter::CountedWithSpans => {
                "(session_id, trace_id) IN (SELECT session_id, trace_id FROM spans \
                 WHERE session_id = $1) AND NOT warmup"
            }
        }
    }
}

/// The mean stored cost of the counted, successful samples of one phase
/// and path that have a cost.
#[derive(Debug, Clone, PartialEq)]
pub struct MeanCost {
    /// The phase.
    pub phase: crate::vocab::PhaseKind,
    /// The stored `path` column (`direct` for direct requests).
    pub path: Option<String>,
    /// Mean cost per request, USD.
    pub mean_usd: f64,
    /// Samples it is the mean of.
    pub n: u64,
}

impl Store {
    /// The samples of a session that `filter` selects, in the order they
    /// started (`actual_start_ms`, then storage order), as whole rows.
    pub async fn samples_where(
        &self,
        session_id: &str,
        filter: SampleFilter,
    ) -> Result<Vec<SampleRow>, StoreError> {
        let sql = format!(
            "SELECT {} FROM samples WHERE {} ORDER BY actual_start_ms, id",
            SAMPLE_COLUMNS.join(", "),
            filter.condition()
        );
        self.query(
            "read samples",
            &sql,
            vec![Cell::Text(session_id.to_owned())],
            |r| schema::sample_from(&r),
        )
        .await
    }

    /// Folds every sample of a session, as a whole row, into `state` in
    /// the order [`Store::samples`] reads them, as the rows are read: a
    /// bounded batch at a time (SQLite: read on the store's thread while
    /// `f` runs on the caller's task; PostgreSQL: as rows arrive), so
    /// memory does not grow with the session. An `Err` from `f` stops the
    /// scan and comes back as [`StoreError::Invalid`] with its message.
    pub async fn scan_samples<S, F>(
        &self,
        session_id: &str,
        state: S,
        mut f: F,
    ) -> Result<S, StoreError>
    where
        F: FnMut(&mut S, SampleRow) -> Result<(), String>,
    {
        let table = ("samples", &SAMPLE_COLUMNS[..], &JSON_COLUMNS[..]);
        let order = "actual_start_ms, id";
        self.scan_session(
            "read samples",
            session_id,
            table,
            order,
            state,
            move |st, r| f(st, schema::sample_from(r)?),
        )
        .await
    }

    /// A session's samples in the order they started (`actual_start_ms`).
    pub async fn samples(&self, session_id: &str) -> Result<Vec<SampleRow>, StoreError> {
        self.samples_where(session_id, SampleFilter::All).await
    }

    /// Per phase and path, the mean cost of a session's counted, successful
    /// samples that carry one (ordered by phase, then path).
    pub async fn mean_costs(&self, session_id: &str) -> Result<Vec<MeanCost>, StoreError> {
        self.query(
            "read costs",
            "SELECT phase, path, avg(cost_usd) AS mean_usd, count(cost_usd) AS n
             FROM samples
             WHERE session_id = $1 AND NOT warmup AND error_kind IS NULL AND cost_usd IS NOT NULL
             GROUP BY phase, path ORDER BY phase, path",
            vec![Cell::Text(session_id.to_owned())],
            |r| {
                use super::schema::RowGet;
                Ok(MeanCost {
                    phase: r
                        .text("phase")?
                        .parse()
                        .map_err(|e| format!("phase: {e}"))?,
                    path: r.opt_text("path")?,
                    mean_usd: r.f64("mean_usd")?,
                    n: r.u64("n")?,
                })
            },
        )
        .await
    }
}

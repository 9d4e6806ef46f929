//! The reading side of firsttoken as a library, as `firsttoken-session` is
//! the writing side: what `report`, `compare`, `check`, `plan`, `runs` and
//! `demo` do between the store and the page.
//!
//! - [`load()`]: a [`Selection`] (sessions by id or prefix, every session,
//!   or a run across agents) read from either store into a [`Loaded`]:
//!   the sessions, the analysis [`Frame`](firsttoken_analyze::Frame)
//!   filled straight from the store one row at a time (only the columns
//!   analysis needs, never a row object per sample), the server spans with
//!   the few rows their join needs whole, the run's view, and whole rows
//!   only when asked for (the HTML page's plots).
//! - [`run`]: a run across agents — its members, state and start, and
//!   which stored sample counts for each planned request (the newest
//!   session's), decided from sample keys before any row is read.
//! - [`analyse`]: the one analysis of what was loaded, the span join and
//!   the cross-agent concurrency rule included.
//! - [`compare`]: before/after verdicts per path, the one rule for "slower"
//!   and comparisons of groups by a key.
//! - [`mod@check`]: `firsttoken check` as one call: the session checked
//!   (the newest unless named), its thresholds and the gate against a
//!   baseline.
//! - [`pilot`]: the pilot groups sample-size planning draws from, and
//!   what a config's counts support.
//! - [`pool`]: the one pooling policy: rows of different provenance kinds
//!   never pool.
//! - [`import_frames`]: the frame an import makes of the session it
//!   writes, stored beside its rows, so the first report after an import
//!   reads it as later reports do.
//!
//! ```no_run
//! # async fn demo() -> Result<(), firsttoken_read::ReadError> {
//! use firsttoken_analyze::GroupKey;
//! use firsttoken_read::{LoadOptions, Selection, analyse, load};
//! let store = firsttoken_record::Store::open_existing("firsttoken.db").await?;
//! let loaded = load(&store, &Selection::every_session(), LoadOptions::default()).await?;
//! let analysis = analyse(&loaded, &[GroupKey::CodeVersion, GroupKey::Path]);
//! println!("{} rows, {} groups", analysis.rows, analysis.groups.len());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod check;
pub mod compare;
mod frames;
mod load;
pub mod pilot;
pub mod pool;
pub mod run;
#[cfg(test)]
mod stored_tests;
mod study;
#[cfg(test)]
mod testutil;

pub use frames::import_frames;
pub use load::{
    LoadOptions, Loaded, STORED_FRAME_MIN_ROWS, Selection, SpanData, load, select_sessions,
};
pub use study::{analyse, span_groups};

use firsttoken_analyze::AnalyzeError;
use firsttoken_record::StoreError;

/// What can go wrong reading.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The store failed or holds a value it cannot read back.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored value analysis refuses, or bad analysis input.
    #[error(transparent)]
    Analyze(#[from] AnalyzeError),
    /// The store holds no session at all.
    #[error("the store has no sessions: run `firsttoken run` or `firsttoken demo` first")]
    NoSessions,
    /// No session has this id or prefix.
    #[error("no session {id:?} in the store")]
    NoSession {
        /// The id or prefix asked for.
        id: String,
    },
    /// No run has this id.
    #[error("no run {id:?} in the store (see `firsttoken runs --store {store}`)")]
    NoRun {
        /// The run id asked for.
        id: String,
        /// The store searched, as `--store` takes it (password masked).
        store: String,
    },
    /// A run names a session the store no longer holds.
    #[error("run {run:?} names session {session:?}, which is gone")]
    RunSessionGone {
        /// The run.
        run: String,
        /// The missing session.
        session: String,
    },
    /// A run no session has joined yet.
    #[error("run {run:?} has no sessions yet")]
    RunEmpty {
        /// The run.
        run: String,
    },
    /// Groups to compare or plan from that cannot be formed.
    #[error(transparent)]
    Pool(#[from] pool::PoolError),
    /// A plan that cannot be made from the pilot.
    #[error(transparent)]
    Plan(#[from] firsttoken_analyze::power::PlanError),
    /// A pilot of no requests (`plan --pilot 0`).
    #[error("--pilot 0: a pilot needs requests")]
    EmptyPilot,
}

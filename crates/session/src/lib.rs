//! One measurement session as a library call.
//!
//! A [`SessionSpec`] is validated from a config and its overrides before
//! anything is sent; [`run_session`] then checks the app answers, creates the
//! session row, signs up test accounts (each id stored the moment it exists)
//! or signs in to pre-provisioned ones (never deleted),
//! runs the protocol on drive's one executor, and records every sample: the
//! recorder prices it from the config's price table, stores it, and only then
//! charges the [`Budget`] that the executor asks before each request. At the
//! end — also after Ctrl-C, a store error, the budget or a crashed task — the
//! accounts are deleted by exact id, the residue counted, and the session row
//! finished as `complete` or `partial` with the reason. With `[traces]
//! listen`, an OTLP/HTTP receiver collects the app's spans of the session's
//! requests from before the first request until a grace period after the
//! last, and stores them next to the samples ([`TraceOutcome`]). With
//! `[engine] metrics_url`, the engine's Prometheus text metrics are read
//! just before the first request and just after the last, and stored as
//! they came ([`firsttoken_record::EngineScrape`]). With `[phases.browser]`,
//! the app's own page is then measured in a real headless Chromium
//! (`firsttoken-browse`), each context signed in as one of the session's
//! accounts, and its messages stored as path `browser` (not across agents).
//!
//! ```no_run
//! # async fn f() -> Result<(), firsttoken_session::SessionError> {
//! use firsttoken_session::{Overrides, SessionSpec, run_session, Quiet};
//! let cfg = firsttoken_plan::config::Config::load("firsttoken.toml".as_ref())
//!     .map_err(firsttoken_session::SessionError::Config)?;
//! let spec = SessionSpec::new(cfg, Overrides::default())?;
//! let store = firsttoken_record::Store::open("firsttoken.db").await?;
//! let outcome = run_session(&spec, &store, &mut Quiet,
//!     tokio_util::sync::CancellationToken::new()).await?;
//! println!("{} {:?}", outcome.meta.id, outcome.meta.status);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod accounts;
mod agent;
mod appdb;
mod browser;
mod budget;
mod conversations;
mod error;
mod observe;
mod pause;
mod recorder;
mod run;
mod scrape;
mod signin;
mod source;
mod spec;
mod traces;

pub use accounts::{check_cleanup, clean_up};
pub use agent::{CLOCK_ROUNDS, DEFAULT_HEARTBEAT, HEARTBEATS, MAX_RUN_ID, RunPart, derived_run_id};
pub use budget::{Budget, price};
pub use error::SessionError;
pub use observe::{Observer, Quiet};
pub use pause::Pause;
pub use run::{Outcome, run_session};
pub use scrape::SCRAPE_TIMEOUT;
pub use signin::{Credential, read_accounts};
pub use source::{Source, prompt_ref};
pub use spec::{DEFAULT_STORE, Overrides, SessionSpec};
pub use traces::{SpanReceiver, TraceOutcome};

//! Why a session could not start or be recorded.

use firsttoken_plan::PlanError;
use firsttoken_plan::config::ConfigError;
use firsttoken_plan::env::EnvError;

/// A session that cannot run, or a setup step that failed. Failed requests
/// are samples, never this.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The config (or a value that overrides it) is invalid.
    #[error(transparent)]
    Config(ConfigError),
    /// A URL, header or format in the config is invalid.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A header names an environment variable that is not set.
    #[error(transparent)]
    Env(#[from] EnvError),
    /// A setting cannot be used, with what to change.
    #[error("{0}")]
    Invalid(String),
    /// A file the config names cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The app does not answer; nothing was created or stored.
    #[error("cannot reach {url}: {message} — is the app running? Nothing was started or stored.")]
    Unreachable {
        /// The URL tried.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// Signing up or deleting test accounts failed.
    #[error("{0}")]
    Accounts(String),
    /// The app's own database (cleanup SQL) failed.
    #[error("{0}")]
    AppDatabase(String),
    /// The result store failed.
    #[error(transparent)]
    Store(#[from] firsttoken_record::StoreError),
    /// The session ran, but the store refused its end (a full disk, a
    /// database gone): a failure of the run, not of its settings.
    #[error(
        "session {session}: the store refused the session's end: {source}. Samples stored before stay stored; the session reads partial once the store is opened again on this host"
    )]
    Unfinished {
        /// The session's id.
        session: String,
        /// Why.
        source: firsttoken_record::StoreError,
    },
    /// The span receiver cannot listen on its address; nothing was started.
    #[error(
        "cannot listen for spans on {addr}: {source} — is another collector using it? Nothing was started or stored."
    )]
    Listen {
        /// The configured address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The measuring client cannot run at all (e.g. an unusable CA file).
    #[error(transparent)]
    Drive(#[from] firsttoken_drive::DriveError),
}

impl SessionError {
    /// True when the session had started: the run failed (exit 1), its
    /// settings did not (exit 2).
    pub fn after_start(&self) -> bool {
        matches!(self, SessionError::Unfinished { .. })
    }
}

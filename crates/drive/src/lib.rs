//! The measuring client of firsttoken.
//!
//! It opens connections itself, phase by phase (DNS, TCP, TLS, HTTP/1.1 or
//! HTTP/2 handshake over hyper's connection API), taps the plaintext stream
//! to stamp when a request was written and its first byte came back, stamps
//! every body chunk as it arrives and only then decodes it (SSE, NDJSON or
//! text) to find the first event, the first reasoning token, the first
//! content token and the end. Each request becomes a
//! [`firsttoken_record::Sample`]. A destination may instead be reached over
//! a WebSocket (and Socket.IO on it): the same connection path, upgraded,
//! with each text frame stamped on arrival and decoded as one event
//! (`ws`).
//!
//! One step executor ([`exec`]) runs every step of a protocol: single
//! requests, idle-gap probes, bursts that start together, open-loop
//! arrivals and closed-loop workers. [`run_session`] runs a session's
//! protocol; [`run_probe`] is the probe, a protocol of one closed-loop step.
//! Warm-up, cancellation, sample emission and the budget question
//! ([`Gate`]) each exist once, there. The TLS client configuration is built
//! once per destination. drive does no statistics of its own: a sample's
//! inter-token percentiles use the one definition in `firsttoken_record`.
//!
//! ```no_run
//! use firsttoken_plan::{ProbeSpec, RequestTemplate, Target};
//! # async fn demo() -> Result<(), firsttoken_drive::DriveError> {
//! let target = Target::parse("http://127.0.0.1:8080/v1/chat/completions").unwrap();
//! let body = br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
//! let spec = ProbeSpec::new(RequestTemplate::new(target, None, Some(body.to_vec().into())).unwrap());
//! let (tx, mut rx) = tokio::sync::mpsc::channel(64);
//! let run = tokio::spawn(firsttoken_drive::run_probe(spec, tx, Default::default()));
//! while let Some(sample) = rx.recv().await {
//!     println!("ttft {:?} ms", sample.ttft_ms);
//! }
//! run.await.unwrap()?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod connect;
mod conversation;
pub mod decode;
pub mod exec;
mod flow;
mod inline;
mod itl;
mod kstamp;
mod probe;
mod request;
mod slot;
mod tap;
pub mod trace;
mod tunnel;
mod ws;

pub use connect::tls_config;
pub use exec::{
    Finished, Gate, GateAnswer, RequestSource, SessionSample, StepWait, Stop, Unlimited,
    run_session,
};
pub use probe::{run_probe, run_probe_gated};
pub use slot::Slot;
pub use ws::socketio::socketio_event;

use firsttoken_record::ErrorKind;

/// A run that cannot start, or that broke.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The TLS configuration could not be built.
    #[error("TLS setup: {0}")]
    Tls(String),
    /// A measuring task panicked (a bug): the run was stopped, its other
    /// requests in flight abandoned.
    #[error("a measuring task panicked: {0}")]
    Panicked(String),
}

/// A failed request: its kind and message. Becomes the sample's `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub kind: ErrorKind,
    pub message: String,
}

impl Failure {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }
}

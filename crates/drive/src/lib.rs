//! The measuring client of firsttoken.
//!
//! It opens connections itself, phase by phase (DNS, TCP, TLS, HTTP/1.1 or
//! HTTP/2 handshake over hyper's connection API), taps the plaintext stream
//! to stamp when a request was written and its first byte came back, stamps
//! every body chunk as it arrives and only then decodes it (SSE, NDJSON or
//! text) to find the first event, the first reasoning token, the first
//! content token and the end. Each request becomes a
//! [`firsttoken_record::Sample`].
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
pub mod decode;
mod itl;
mod request;
mod run;
pub mod session;
mod slot;
mod tap;

pub use connect::tls_config;
pub use run::run_probe;
pub use slot::Slot;

use firsttoken_record::ErrorKind;

/// A probe that cannot start.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The TLS configuration could not be built.
    #[error("TLS setup: {0}")]
    Tls(String),
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

//! An OTLP/HTTP trace receiver for firsttoken sessions.
//!
//! An app instrumented with OpenTelemetry exports its spans to
//! `POST /v1/traces` on the address firsttoken listens on (the app's
//! `OTEL_EXPORTER_OTLP_ENDPOINT`); [`server`] accepts OTLP/protobuf and
//! OTLP/JSON, gzip or not, bounded in size, decodes them with the official
//! OTLP definitions (`opentelemetry-proto`), converts each span to a
//! [`firsttoken_record::span::SpanRow`] ([`convert`]) and keeps it only
//! when its trace id is one the session sent ([`TraceRegistry`]); the rest
//! are counted. Kept spans go, one export request's worth at a time, over a
//! bounded channel to whoever stores them (the session, in batches).
//! [`import`] does the same after the fact for the OTLP JSON lines of a
//! Collector's file exporter (`firsttoken import-spans`), straight into the
//! store.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use firsttoken_collect::{Collector, CollectorConfig, TraceRegistry};
//! let registry = TraceRegistry::new();
//! let (tx, mut rx) = tokio::sync::mpsc::channel(64);
//! let collector = Collector::new("session-1", registry.clone(), tx, CollectorConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:4318").await?;
//! let stop = tokio_util::sync::CancellationToken::new();
//! tokio::spawn(firsttoken_collect::run(listener, collector.clone(), stop.clone()));
//! // … send requests, registering each trace id …
//! while let Some(spans) = rx.recv().await {
//!     println!("{} spans", spans.len());
//! }
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod convert;
pub mod import;
mod registry;
pub mod server;

pub use registry::{MAX_TRACKED_TRACES, TraceRegistry};
pub use server::{Collector, CollectorConfig, ReceiverCounts, app, run};

/// Why OTLP data could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// The bytes are not a valid `ExportTraceServiceRequest`.
    #[error("not an OTLP trace export: {0}")]
    Decode(String),
    /// The gzip body does not inflate.
    #[error("the gzip body does not inflate: {0}")]
    Gzip(String),
    /// The body is larger than the configured bound (on the wire or inflated).
    #[error("the body is larger than {limit} bytes")]
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
}

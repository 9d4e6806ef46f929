//! `POST /v1/traces`, OTLP/HTTP (<https://opentelemetry.io/docs/specs/otlp/#otlphttp>):
//! `Content-Type: application/x-protobuf` or `application/json` (anything
//! else is 415), `Content-Encoding: gzip` or none (anything else is 415),
//! a body of at most [`CollectorConfig::max_body_bytes`] on the wire and
//! after inflating (else 413), a body that does not decode is 400. A
//! success answers an `ExportTraceServiceResponse` in the request's
//! encoding, with a partial success naming the spans whose ids were
//! malformed. Spans of traces the session did not send are accepted and
//! counted, not kept.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use firsttoken_record::span::SpanRow;

use crate::convert::{convert, decode_json, decode_protobuf};
use crate::{CollectError, TraceRegistry};

/// The receiver's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectorConfig {
    /// Largest request body accepted, in bytes, on the wire and after
    /// inflating gzip (default 8 MiB: an SDK's batch of 512 spans is a few
    /// hundred kilobytes).
    pub max_body_bytes: usize,
}

impl Default for CollectorConfig {
    fn default() -> CollectorConfig {
        CollectorConfig {
            max_body_bytes: 8 << 20,
        }
    }
}

/// What the receiver has seen so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverCounts {
    /// Export requests received on `/v1/traces`.
    pub requests: u64,
    /// Of those, refused (413, 415, 400).
    pub refused_requests: u64,
    /// Spans in the accepted requests.
    pub received: u64,
    /// Spans of the session's traces, handed on to be stored.
    pub kept: u64,
    /// Spans of traces the session did not send: counted, not kept.
    pub not_ours: u64,
    /// Spans with a missing or malformed id.
    pub malformed: u64,
    /// Kept spans nobody took any more (the session had stopped storing).
    pub unsent: u64,
}

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    refused_requests: AtomicU64,
    received: AtomicU64,
    kept: AtomicU64,
    not_ours: AtomicU64,
    malformed: AtomicU64,
    unsent: AtomicU64,
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// The receiver's state: the session, its trace ids, where kept spans go,
/// the counts. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Collector {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    session_id: String,
    registry: TraceRegistry,
    sink: mpsc::Sender<Vec<SpanRow>>,
    config: CollectorConfig,
    counts: Counters,
}

impl Collector {
    /// A receiver for session `session_id`: spans whose trace id is in
    /// `registry` are sent to `sink`, one export request's worth at a time.
    pub fn new(
        session_id: &str,
        registry: TraceRegistry,
        sink: mpsc::Sender<Vec<SpanRow>>,
        config: CollectorConfig,
    ) -> Collector {
        Collector {
            inner: Arc::new(Inner {
                session_id: session_id.to_string(),
                registry,
                sink,
                config,
                counts: Counters::default(),
            }),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> ReceiverCounts {
        let c = &self.inner.counts;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ReceiverCounts {
            requests: get(&c.requests),
            refused_requests: get(&c.refused_requests),
            received: get(&c.received),
            kept: get(&c.kept),
            not_ours: get(&c.not_ours),
            malformed: get(&c.malformed),
            unsent: get(&c.unsent),
        }
    }

    /// Keeps the session's spans of `req`, counting the rest. Returns how
    /// many spans were malformed. Used by the receiver and by imports.
    pub async fn accept(&self, req: &ExportTraceServiceRequest) -> u64 {
        let c = &self.inner.counts;
        let mut converted = convert(req, &self.inner.session_id);
        let received = converted.spans.len() as u64 + converted.malformed;
        add(&c.received, received);
        add(&c.malformed, converted.malformed);
        converted
            .spans
            .retain(|s| self.inner.registry.contains_hex(&s.trace_id));
        let kept = converted.spans.len() as u64;
        add(&c.not_ours, received - converted.malformed - kept);
        if kept > 0 {
            if self.inner.sink.send(converted.spans).await.is_ok() {
                add(&c.kept, kept);
            } else {
                add(&c.unsent, kept);
            }
        }
        converted.malformed
    }
}

/// The receiver's routes: `POST /v1/traces`.
pub fn app(collector: Collector) -> Router {
    Router::new()
        .route("/v1/traces", post(traces))
        .with_state(collector)
}

/// Serves [`app`] on `listener` until `shutdown`, then lets requests in
/// flight finish.
pub async fn run(
    listener: TcpListener,
    collector: Collector,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, app(collector))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

fn header(h: &HeaderMap, name: http::HeaderName) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(|v| {
        v.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    })
}

fn refuse(collector: &Collector, status: StatusCode, message: String) -> Response {
    add(&collector.inner.counts.refused_requests, 1);
    (status, message).into_response()
}

/// Inflates a gzip body, at most `limit` bytes of it.
fn gunzip(body: &[u8], limit: usize) -> Result<Vec<u8>, CollectError> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(body)
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| CollectError::Gzip(e.to_string()))?;
    if out.len() > limit {
        return Err(CollectError::TooLarge { limit });
    }
    Ok(out)
}

async fn traces(State(c): State<Collector>, req: Request) -> Response {
    add(&c.inner.counts.requests, 1);
    let limit = c.inner.config.max_body_bytes;
    let (parts, body): (_, Body) = req.into_parts();
    let encoding = match header(&parts.headers, CONTENT_TYPE).as_deref() {
        Some("application/x-protobuf") => Encoding::Protobuf,
        Some("application/json") => Encoding::Json,
        other => {
            return refuse(
                &c,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Content-Type {other:?} is not OTLP: use application/x-protobuf or application/json"
                ),
            );
        }
    };
    let gzip = match header(&parts.headers, CONTENT_ENCODING).as_deref() {
        None | Some("identity") => false,
        Some("gzip") => true,
        Some(other) => {
            return refuse(
                &c,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Content-Encoding {other:?} is not accepted: use gzip or none"),
            );
        }
    };
    let Ok(raw) = axum::body::to_bytes(body, limit).await else {
        return refuse(
            &c,
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {limit} bytes (or was cut short)"),
        );
    };
    let inflated;
    let bytes: &[u8] = if gzip {
        inflated = match gunzip(&raw, limit) {
            Ok(b) => b,
            Err(e @ CollectError::TooLarge { .. }) => {
                return refuse(&c, StatusCode::PAYLOAD_TOO_LARGE, e.to_string());
            }
            Err(e) => return refuse(&c, StatusCode::BAD_REQUEST, e.to_string()),
        };
        &inflated
    } else {
        &raw
    };
    let decoded = match encoding {
        Encoding::Protobuf => decode_protobuf(bytes),
        Encoding::Json => decode_json(bytes),
    };
    let request = match decoded {
        Ok(r) => r,
        Err(e) => return refuse(&c, StatusCode::BAD_REQUEST, e.to_string()),
    };
    let malformed = c.accept(&request).await;
    let response = ExportTraceServiceResponse {
        partial_success: (malformed > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(malformed).unwrap_or(i64::MAX),
            error_message: format!("{malformed} spans had a missing or malformed trace or span id"),
        }),
    };
    let body = match encoding {
        Encoding::Protobuf => response.encode_to_vec(),
        Encoding::Json => serde_json::to_vec(&response).unwrap_or_else(|_| b"{}".to_vec()), // a plain struct of an integer and a string always serializes
    };
    (
        StatusCode::OK,
        [(
            CONTENT_TYPE,
            HeaderValue::from_static(encoding.content_type()),
        )],
        body,
    )
        .into_response()
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;

//! The app's own OpenTelemetry traces, exported over OTLP/HTTP (protobuf)
//! by the OpenTelemetry SDK's batch processor — what an instrumented
//! production app sends its collector.
//!
//! Spans, named and attributed by the semantic conventions so a tool that
//! reads them needs no knowledge of this app:
//!
//! ```text
//! POST /api/chat            SERVER  from when the request is taken (after a
//!   │                               cold start) to the end of its stream;
//!   │                               parent: the client's `traceparent`
//!   └ answer chat           INTERNAL from when the handler runs (after the
//!       │                           `--serial` permit: the wait before it is
//!       │                           queue wait) to the end of the stream
//!       ├ auth              INTERNAL
//!       │  └ SELECT sessions CLIENT db.system.name, db.operation.name
//!       ├ SELECT conversations / INSERT conversations, SELECT messages (each
//!       │                   extra round trip)            CLIENT db.*
//!       ├ retrieve          INTERNAL (document path)
//!       ├ chat <model>      CLIENT  gen_ai.*, server.address; event
//!       │                           `gen_ai.first_token` at the provider's
//!       │                           first content; ends with its stream
//!       └ INSERT messages   CLIENT  db.* (after the answer)
//! ```
//!
//! A database span covers the modelled network wait (`db_rtt`) and the
//! query, as a driver's span covers both. The app sends the provider a
//! `traceparent` of its own provider span.
//!
//! Each [`AppState`](crate::AppState) owns its tracer provider, so two apps
//! in one process (the demo's before and after) export separately; spans
//! are made with the OpenTelemetry API directly rather than through a
//! process-wide `tracing` subscriber for that reason (the app still logs
//! through `tracing`).

use std::borrow::Cow;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider,
};

/// How often the batch processor exports when `OTEL_BSP_SCHEDULE_DELAY` is
/// not set: short, so a measuring session sees the spans of its last
/// requests soon after they end (the SDK's own default is 5 s).
pub const DEFAULT_EXPORT_DELAY: Duration = Duration::from_millis(200);

/// The service name when `OTEL_SERVICE_NAME` is not set.
pub const SERVICE_NAME: &str = "firsttoken-refapp";

/// The OTLP exporter cannot be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the OTLP trace exporter for {endpoint}: {cause}")]
pub struct TelemetryError {
    endpoint: String,
    cause: String,
}

/// Where the app's spans go and how they are made.
pub(crate) struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Telemetry {
    /// Export to the OTLP/HTTP base `endpoint` (as `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// gives it: `/v1/traces` is appended), with `version` as
    /// `service.version`.
    pub(crate) fn new(endpoint: &str, version: &str) -> Result<Telemetry, TelemetryError> {
        let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url.clone())
            .with_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| TelemetryError {
                endpoint: url,
                cause: e.to_string(),
            })?;
        let mut batch = BatchConfigBuilder::default();
        if std::env::var_os("OTEL_BSP_SCHEDULE_DELAY").is_none() {
            batch = batch.with_scheduled_delay(DEFAULT_EXPORT_DELAY);
        }
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch.build())
            .build();
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(SERVICE_NAME);
        }
        let resource = resource
            .with_attribute(KeyValue::new("service.version", version.to_string()))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("firsttoken-refapp");
        Ok(Telemetry { provider, tracer })
    }

    /// The server span of a request taken now: a child of the client's
    /// `traceparent` when it sent a valid one, else a new trace.
    pub(crate) fn server_span(&self, headers: &HeaderMap, method: &str, path: &str) -> Traced {
        let parent = TraceContextPropagator::new().extract(&Headers(headers));
        let route = route_of(path);
        let builder = self
            .tracer
            .span_builder(format!("{method} {route}"))
            .with_kind(SpanKind::Server)
            .with_attributes(vec![
                KeyValue::new("http.request.method", method.to_string()),
                KeyValue::new("http.route", route.to_string()),
                KeyValue::new("url.path", path.to_string()),
            ]);
        let span = self.tracer.build_with_context(builder, &parent);
        Traced {
            inner: Some((Context::new().with_span(span), self.tracer.clone())),
        }
    }

    /// Export what is queued and stop (blocks up to a few seconds).
    pub(crate) fn shutdown(&self) {
        let _ = self.provider.shutdown_with_timeout(Duration::from_secs(5));
    }
}

/// The route template of a path (ids replaced), the span's low-cardinality name.
fn route_of(path: &str) -> Cow<'static, str> {
    match path {
        "/api/chat" | "/api/docs/ask" | "/api/message" | "/api/auth/signup" | "/api/auth/login"
        | "/health" | "/version" => Cow::Owned(path.to_string()),
        p if p.starts_with("/api/conversations/") && p.ends_with("/messages") => {
            Cow::Borrowed("/api/conversations/{id}/messages")
        }
        _ => Cow::Borrowed("unmatched"),
    }
}

/// Reads `traceparent`/`tracestate` from request headers.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

impl std::fmt::Debug for Traced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Some((cx, _)) => write!(f, "Traced({:?})", cx.span().span_context().span_id()),
            None => f.write_str("Traced(off)"),
        }
    }
}

/// Writes `traceparent`/`tracestate` into request headers.
struct HeadersMut<'a>(&'a mut HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(k, v);
        }
    }
}

/// One span in progress, or nothing when tracing is off (every method is
/// then a no-op). Clones share the span; it ends at [`Traced::end`] or
/// when the last clone is dropped.
#[derive(Clone, Default)]
pub(crate) struct Traced {
    inner: Option<(Context, SdkTracer)>,
}

impl Traced {
    /// A child span starting now.
    pub(crate) fn child(
        &self,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Traced {
        let Some((cx, tracer)) = &self.inner else {
            return Traced::default();
        };
        let builder = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes);
        let span = tracer.build_with_context(builder, cx);
        Traced {
            inner: Some((Context::new().with_span(span), tracer.clone())),
        }
    }

    /// A database call starting now (CLIENT, `db.system.name`,
    /// `db.operation.name`, `db.collection.name`), named `OPERATION table`.
    pub(crate) fn db(
        &self,
        system: &'static str,
        operation: &'static str,
        table: &'static str,
    ) -> Traced {
        if self.inner.is_none() {
            return Traced::default();
        }
        self.child(
            format!("{operation} {table}"),
            SpanKind::Client,
            vec![
                KeyValue::new("db.system.name", system),
                KeyValue::new("db.operation.name", operation),
                KeyValue::new("db.collection.name", table),
            ],
        )
    }

    /// An event at this instant.
    pub(crate) fn event(&self, name: &'static str) {
        if let Some((cx, _)) = &self.inner {
            cx.span().add_event(name, Vec::new());
        }
    }

    /// Set an attribute.
    pub(crate) fn set(&self, attribute: KeyValue) {
        if let Some((cx, _)) = &self.inner {
            cx.span().set_attribute(attribute);
        }
    }

    /// Mark the span failed.
    pub(crate) fn fail(&self, message: impl Into<Cow<'static, str>>) {
        if let Some((cx, _)) = &self.inner {
            cx.span().set_status(Status::error(message));
        }
    }

    /// End the span now (later calls and drops do nothing more).
    pub(crate) fn end(&self) {
        if let Some((cx, _)) = &self.inner {
            cx.span().end();
        }
    }

    /// Put this span's `traceparent` on an outgoing request.
    pub(crate) fn inject(&self, headers: &mut HeaderMap) {
        if let Some((cx, _)) = &self.inner {
            TraceContextPropagator::new().inject_context(cx, &mut HeadersMut(headers));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_have_low_cardinality() {
        assert_eq!(route_of("/api/chat"), "/api/chat");
        assert_eq!(
            route_of("/api/conversations/17/messages"),
            "/api/conversations/{id}/messages"
        );
        assert_eq!(route_of("/etc/passwd"), "unmatched");
    }

    #[test]
    fn off_is_a_no_op() {
        let t = Traced::default();
        let c = t.db("sqlite", "SELECT", "messages");
        c.event("x");
        c.end();
        let mut h = HeaderMap::new();
        t.inject(&mut h);
        assert!(h.is_empty());
    }
}

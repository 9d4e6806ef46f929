//! HTTP plumbing: JSON errors, the request id and start instant, the body
//! extractor, `Server-Timing`.

use std::time::{Duration, Instant};

use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::AppState;
use crate::store::StoreError;

/// An error answered as `{"error": {"message", "type", "code"}}` (the
/// OpenAI error shape).
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    /// Sent as `Retry-After` (whole seconds, rounded up) when set.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
            retry_after: None,
        }
    }
    pub fn bad_request(m: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", m)
    }
    pub fn unauthorized(m: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "authentication_error", m)
    }
    pub fn not_found(m: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found_error", m)
    }
    pub fn internal(m: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", m)
    }
    pub fn bad_gateway(m: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_GATEWAY, "upstream_error", m)
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"message": self.message, "type": self.kind, "code": self.status.as_u16()}})
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(m) => {
                tracing::warn!("database unavailable: {m}");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database_unavailable",
                    "the database is unavailable; try again later",
                )
            }
            StoreError::Conflict => Self::new(StatusCode::CONFLICT, "conflict", "already exists"),
            StoreError::Other(m) => {
                tracing::error!("database error: {m}");
                Self::internal("internal database error")
            }
        }
    }
}

impl From<crate::auth::HashError> for ApiError {
    fn from(e: crate::auth::HashError) -> Self {
        match e {
            crate::auth::HashError::Busy { retry_after } => ApiError {
                retry_after: Some(retry_after),
                ..Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "overloaded",
                    "too many password checks in progress; try again later",
                )
            },
            crate::auth::HashError::Failed(m) => {
                tracing::error!("password hashing failed: {m}");
                Self::internal("password hashing failed")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        // A body that was not read whole leaves the connection unusable:
        // close it rather than wait for the rest.
        if matches!(
            self.status,
            StatusCode::REQUEST_TIMEOUT | StatusCode::PAYLOAD_TOO_LARGE
        ) {
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if let Some(after) = self.retry_after {
            let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        r
    }
}

/// Set by [`stamp`] on every request.
#[derive(Debug, Clone)]
pub(crate) struct RequestCtx {
    /// When the request reached the app (before its body was read).
    pub start: Instant,
    /// The request id (the client's `X-Request-Id` when it sent a sane one).
    pub id: String,
    /// The `--cold-start-ms` delay this request paid, if any.
    pub cold_start: Option<Duration>,
    /// The request's server span (starts after a cold start: a starting
    /// app has not taken the request yet).
    pub span: crate::telemetry::Traced,
}

fn sane_request_id(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    ok.then(|| s.to_string())
}

fn new_request_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static FALLBACK: AtomicU64 = AtomicU64::new(0);
    let mut b = [0u8; 12];
    match getrandom::fill(&mut b) {
        Ok(()) => crate::auth::hex(&b),
        Err(_) => format!("req-{}", FALLBACK.fetch_add(1, Ordering::Relaxed)),
    }
}

/// Middleware: stamp the start, pick the request id, pay a cold start if
/// one is owed, echo the id back.
pub(crate) async fn stamp(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let start = Instant::now();
    let cold_start = state.cold_start_delay();
    if let Some(d) = cold_start {
        tokio::time::sleep(d).await;
    }
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(sane_request_id)
        .unwrap_or_else(new_request_id);
    let span = state.server_span(req.headers(), req.method().as_str(), req.uri().path());
    span.set(opentelemetry::KeyValue::new(
        "http.request.header.x-request-id",
        id.clone(),
    ));
    req.extensions_mut().insert(RequestCtx {
        start,
        id: id.clone(),
        cold_start,
        span: span.clone(),
    });
    let mut resp = next.run(req).await;
    let status = resp.status();
    span.set(opentelemetry::KeyValue::new(
        "http.response.status_code",
        i64::from(status.as_u16()),
    ));
    if status.is_server_error() {
        span.fail(status.to_string());
    }
    // The span ends when its last holder lets go: here, or at the end of
    // the stream the answer's relay writes.
    drop(span);
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    if state.inner.config.options.process_time_header {
        // A float of seconds, as FastAPI's `str(time.perf_counter() - start)`.
        let secs = start.elapsed().as_secs_f64().to_string();
        if let Ok(v) = HeaderValue::from_str(&secs) {
            resp.headers_mut().insert("x-process-time", v);
        }
    }
    resp
}

/// The raw request body, within the `DefaultBodyLimit` (413 past it, and
/// at once for a `Content-Length` over it) and the app's body deadline
/// (408 past it: a body trickled byte by byte cannot hold a connection).
pub(crate) struct RawBody(pub Bytes);

impl FromRequest<crate::AppState> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &crate::AppState) -> Result<Self, Self::Rejection> {
        let o = &state.inner.config.options;
        let too_large = || {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request_too_large",
                "the request body is larger than the limit",
            )
        };
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > o.max_body_bytes as u64) {
            return Err(too_large());
        }
        let deadline = o.body_read_timeout;
        match tokio::time::timeout(deadline, Bytes::from_request(req, state)).await {
            Err(_) => Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!("the request body did not arrive within {deadline:?}"),
            )),
            Ok(Ok(b)) => Ok(RawBody(b)),
            Ok(Err(r)) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(too_large()),
            Ok(Err(r)) => Err(ApiError::bad_request(format!(
                "cannot read the request body: {}",
                r.body_text()
            ))),
        }
    }
}

impl RawBody {
    /// Parse as JSON: 400 with the parser's message when malformed.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))
    }
}

/// Named durations in `Server-Timing` syntax (`name;dur=ms`, with
/// `;desc="…"` when there is a description, e.g. a round-trip count).
#[derive(Debug, Default, Clone)]
pub(crate) struct Phases(Vec<(&'static str, Duration, Option<String>)>);

impl Phases {
    pub fn push(&mut self, name: &'static str, d: Duration) {
        self.0.push((name, d, None));
    }

    /// A phase that made `round_trips` database round trips.
    pub fn push_trips(&mut self, name: &'static str, d: Duration, round_trips: u32) {
        self.0.push((name, d, Some(format!("{round_trips} rt"))));
    }

    pub fn render(&self) -> String {
        self.0
            .iter()
            .map(|(n, d, desc)| {
                let ms = d.as_secs_f64() * 1000.0;
                match desc {
                    // Descriptions are ours (no quote or backslash inside).
                    Some(t) => format!("{n};dur={ms:.3};desc=\"{t}\""),
                    None => format!("{n};dur={ms:.3}"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Time an async step into `phases`.
pub(crate) async fn timed<T>(
    phases: &mut Phases,
    name: &'static str,
    f: impl Future<Output = T>,
) -> T {
    let t = Instant::now();
    let r = f.await;
    phases.push(name, t.elapsed());
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_timing_syntax() {
        let mut p = Phases::default();
        p.push("auth", Duration::from_micros(1234));
        p.push("db", Duration::from_millis(2));
        p.push_trips("store", Duration::from_millis(80), 2);
        assert_eq!(
            p.render(),
            "auth;dur=1.234, db;dur=2.000, store;dur=80.000;desc=\"2 rt\""
        );
    }

    #[test]
    fn request_ids() {
        assert_eq!(
            sane_request_id(&HeaderValue::from_static("abc-1.2")),
            Some("abc-1.2".into())
        );
        assert_eq!(sane_request_id(&HeaderValue::from_static("a b")), None);
        assert_eq!(new_request_id().len(), 24);
    }
}

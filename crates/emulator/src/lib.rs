//! An OpenAI-compatible LLM provider emulator whose timing is known: the
//! ground truth firsttoken is tested and benchmarked against.
//!
//! `POST /v1/chat/completions` and `POST /v1/completions` (streaming or not),
//! `GET /v1/models`, `GET /health`. Time to first token, inter-token interval
//! and token count come from [`Settings`] or per request from the headers
//! `x-emulator-ttft-ms`, `x-emulator-itl-ms` and `x-emulator-tokens`. A
//! stream starts with a role-only chunk and ends with a chunk carrying
//! `usage`, then `data: [DONE]`. With a [`TruthLog`], every request leaves a
//! JSON line saying when it was read and when its first token was handed to
//! the connection.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use firsttoken_emulator::{app, serve, Settings};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! serve(listener, app(Settings::default()), None, shutdown).await
//! # }
//! ```
#![deny(missing_docs)]

mod server;
pub mod stream;
pub mod truth;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::{Value, json};

pub use server::{serve, tls_server_config};
pub use stream::{Endpoint, Plan};
pub use truth::{TruthLog, TruthRecord};

/// The emulator cannot start.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// The truth log file cannot be written.
    #[error("cannot write the truth log {path}: {source}")]
    TruthLog {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS certificate or key is unusable.
    #[error("TLS: {0}")]
    Tls(String),
}

/// Default response behaviour.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Time from request read to first content token.
    pub ttft: Duration,
    /// Time between content tokens.
    pub itl: Duration,
    /// Content tokens per response (a request's `max_tokens` lowers it).
    pub tokens: u32,
    /// Model name reported when the request names none.
    pub model: String,
    /// Where truth records go.
    pub truth: TruthLog,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ttft: Duration::from_millis(200),
            itl: Duration::from_millis(20),
            tokens: 32,
            model: "emulated-model".into(),
            truth: TruthLog::disabled(),
        }
    }
}

struct AppState {
    settings: Settings,
    next_id: AtomicU64,
}

/// The emulator's routes.
pub fn app(settings: Settings) -> Router {
    let state = Arc::new(AppState {
        settings,
        next_id: AtomicU64::new(0),
    });
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/health", get(|| async { "ok" }))
        .with_state(state)
}

/// An OpenAI-shaped error response.
fn error(status: StatusCode, message: impl Into<String>, kind: &str) -> Response {
    let body = json!({"error": {"message": message.into(), "type": kind, "code": status.as_u16()}});
    (status, axum::Json(body)).into_response()
}

// The error is the ready-made 400 response, built at most once per request.
#[allow(clippy::result_large_err)]
fn header_number(headers: &HeaderMap, name: &str) -> Result<Option<f64>, Response> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|x| x.is_finite() && *x >= 0.0)
            .map(Some)
            .ok_or_else(|| {
                error(
                    StatusCode::BAD_REQUEST,
                    format!("header {name} must be a non-negative number"),
                    "invalid_request_error",
                )
            }),
    }
}

fn prompt_words(v: &Value) -> u32 {
    fn words(v: &Value) -> usize {
        match v {
            Value::String(s) => s.split_whitespace().count(),
            Value::Array(a) => a.iter().map(words).sum(),
            Value::Object(o) => o.get("content").map(words).unwrap_or(0),
            _ => 0,
        }
    }
    let n = v.get("messages").map(words).unwrap_or(0) + v.get("prompt").map(words).unwrap_or(0);
    u32::try_from(n).unwrap_or(u32::MAX)
}

async fn respond(
    state: Arc<AppState>,
    endpoint: Endpoint,
    path: &str,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // The body extractor has run: the request is fully read now.
    let read_at = Instant::now();
    let req: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "the request body must be a JSON object",
                "invalid_request_error",
            );
        }
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("invalid JSON body: {e}"),
                "invalid_request_error",
            );
        }
    };
    let s = &state.settings;
    let (ttft, itl, tokens) = match (
        header_number(&headers, "x-emulator-ttft-ms"),
        header_number(&headers, "x-emulator-itl-ms"),
        header_number(&headers, "x-emulator-tokens"),
    ) {
        (Ok(t), Ok(i), Ok(n)) => (
            t.map(|ms| Duration::from_secs_f64(ms / 1000.0))
                .unwrap_or(s.ttft),
            i.map(|ms| Duration::from_secs_f64(ms / 1000.0))
                .unwrap_or(s.itl),
            n.map(|n| n as u32).unwrap_or(s.tokens),
        ),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
    };
    let tokens = match req
        .get("max_tokens")
        .or_else(|| req.get("max_completion_tokens"))
        .and_then(Value::as_u64)
    {
        Some(m) => tokens.min(u32::try_from(m).unwrap_or(u32::MAX)),
        None => tokens,
    };
    let n = state.next_id.fetch_add(1, Ordering::Relaxed);
    let plan = Plan {
        id: format!("emu-{n}"),
        endpoint,
        model: req
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&s.model)
            .to_string(),
        ttft,
        itl,
        tokens,
        prompt_tokens: prompt_words(&req),
    };
    let id = HeaderValue::from_str(&plan.id).unwrap_or(HeaderValue::from_static("emu"));
    let streaming = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let mut resp = if streaming {
        let body = stream::sse_body(plan, s.truth.clone(), read_at, path);
        let mut r = Response::new(body);
        let h = r.headers_mut();
        h.insert(
            "content-type",
            HeaderValue::from_static("text/event-stream"),
        );
        h.insert("cache-control", HeaderValue::from_static("no-cache"));
        r
    } else {
        axum::Json(stream::json_response(plan, s.truth.clone(), read_at, path).await)
            .into_response()
    };
    resp.headers_mut().insert("x-request-id", id);
    resp
}

async fn chat(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    respond(state, Endpoint::Chat, "/v1/chat/completions", headers, body).await
}

async fn completions(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    respond(
        state,
        Endpoint::Completions,
        "/v1/completions",
        headers,
        body,
    )
    .await
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": state.settings.model, "object": "model", "created": 0, "owned_by": "firsttoken-emulator"}],
    }))
    .into_response()
}

//! An OpenAI-compatible LLM provider emulator whose timing is known: the
//! ground truth firsttoken is tested and benchmarked against.
//!
//! `POST /v1/chat/completions`, `POST /v1/completions` and `POST
//! /v1/responses` (the Responses API; streaming or not), `GET /v1/models`,
//! `GET /health`. A chat stream starts with a role-only chunk and ends with
//! a chunk carrying `usage` (with `cost` in USD), then `data: [DONE]`; a
//! Responses stream opens with `response.created` and ends with
//! `response.completed` (see [`shape`]); `GET /v1/responses` upgraded to a
//! WebSocket carries the same events as text frames (the Responses API's
//! WebSocket mode). All three share the providers,
//! routing, faults and truth log below. With a [`TruthLog`], every request leaves a JSON line
//! saying when it was read, how long it queued, which provider served it,
//! which fault it met, and when its first token was handed to the connection.
//!
//! # Without a profile: fixed timing
//! [`Settings`]' `ttft`, `itl` and `tokens` fix every response, served by a
//! single provider called `emulator` at no cost.
//!
//! # With a [`Profile`]: providers, routing and faults
//! Named upstream providers, each with a log-normal time to first token
//! (from a median and a 90th percentile), an output speed, prices per
//! million input/output tokens, fault rates, and optional serial mode and
//! cold start (see [`profile`] and its TOML format in
//! [`DEFAULT_PROFILE_TOML`]). Requests route like OpenRouter's: the body's
//! `provider` object takes `order`, `only`, `ignore` and `allow_fallbacks`
//! (see [`routing`]); an injected error (429, 500, 503) on one provider
//! falls back to the next when allowed. Every chunk carries a `provider`
//! field and the response an `x-provider` header. Random draws (TTFT,
//! answer length, faults) come from [`Settings::seed`] and the request's
//! sequence number, so request *n* draws the same under any concurrency.
//!
//! # Request headers
//! - `x-emulator-ttft-ms`, `x-emulator-itl-ms`, `x-emulator-tokens`: fix the
//!   timing and length of this response.
//! - `x-emulator-fault`: `429` | `500` | `503` (error response before the
//!   stream, OpenAI-shaped JSON; 429 carries `Retry-After`), `stream-error`
//!   (a `data: {"error": …}` event in a 200 stream, then the end without
//!   `[DONE]`), `drop` (connection closed mid-stream), `stall` (no bytes for
//!   a while mid-stream), `slow-headers` (status line held back), `cold`
//!   (cold-start delay before the first token).
//! - `x-emulator-fault-provider: NAME`: the provider the fault hits (default:
//!   the first one tried, so an error there falls back to the next).
//! - Parameters: `x-emulator-fault-after-tokens` (content tokens before a
//!   stream error, drop or stall; default 4), `x-emulator-stall-ms` (or
//!   `forever`; default 5000), `x-emulator-slow-headers-ms` (default 2000),
//!   `x-emulator-retry-after-s` (default 1), `x-emulator-cold-start-ms`
//!   (default: the provider's or profile's cold start, else 1000).
//!
//! - `x-emulator-tool-call: NAME`: answer with a call of function `NAME`
//!   instead of text (chat and Responses endpoints): each token is a
//!   fragment of its JSON arguments, the first naming the function. A
//!   request whose `tool_choice` is `"required"` (with `tools`) or names a
//!   function is answered the same way, with the named or first tool.
//!
//! Every response carries `x-request-id`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use firsttoken_emulator::{app, serve, Profile, Settings};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! let settings = Settings { profile: Some(Profile::builtin()), seed: 7, ..Settings::default() };
//! serve(listener, app(settings), None, shutdown).await
//! # }
//! ```
#![deny(missing_docs)]

pub mod faults;
pub mod profile;
pub mod rng;
pub mod routing;
mod server;
pub mod shape;
pub mod stream;
pub mod truth;
mod upstream;
pub mod wire;
mod ws;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::{Value, json};

pub use faults::Fault;
pub use firsttoken_serve::Limits;
pub use profile::{DEFAULT_PROFILE_TOML, Profile, Provider};
pub use server::{DEFAULT_LIMITS, SHUTDOWN_GRACE, serve, serve_with, tls_server_config};
pub use stream::{Endpoint, Plan};
pub use truth::{Attempt, TruthLog, TruthRecord};

use faults::{Applied, FaultParams};
use rng::Rng;
use routing::Routing;
use upstream::{Hold, Serial, Upstream, Warmth};
use wire::Wire;

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
    /// The profile is malformed or invalid.
    #[error("{origin}: line {line}, column {column}{}: {message}", key.as_deref().map(|k| format!(", key {k}")).unwrap_or_default())]
    Profile {
        /// Where the profile came from (usually its file name).
        origin: String,
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The dotted key (`provider.faults.drop_rate`), when known.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// Default response behaviour.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Time from request read to first content token (without a profile).
    pub ttft: Duration,
    /// Time between content tokens (without a profile).
    pub itl: Duration,
    /// Content tokens per response (without a profile; a request's
    /// `max_tokens` lowers it).
    pub tokens: u32,
    /// Model name reported when the request names none.
    pub model: String,
    /// Where truth records go.
    pub truth: TruthLog,
    /// Providers, routing, timing distributions and faults. `None`: one
    /// provider, `emulator`, with the fixed `ttft`, `itl` and `tokens` above.
    pub profile: Option<Profile>,
    /// Seed of every random draw.
    pub seed: u64,
    /// One request at a time across the emulator (on top of the profile's
    /// `serial`).
    pub serial: bool,
    /// Added to a request's drawn TTFT per input token (the words of its
    /// messages, prompt, input and instructions, as `prompt_tokens`
    /// reports them): a prefill that grows with the context, so a
    /// conversation's later turns, carrying their history, wait longer.
    /// Zero: TTFT does not depend on the input. A TTFT fixed by a request
    /// header stays fixed.
    pub ttft_per_input_token: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ttft: Duration::from_millis(200),
            itl: Duration::from_millis(20),
            tokens: 32,
            model: "emulated-model".into(),
            truth: TruthLog::disabled(),
            profile: None,
            seed: 0,
            serial: false,
            ttft_per_input_token: Duration::ZERO,
        }
    }
}

struct AppState {
    settings: Settings,
    profile: Profile,
    upstreams: Vec<Upstream>,
    serial: Option<Serial>,
    warmth: Arc<Warmth>,
    next_id: AtomicU64,
}

/// The emulator's routes.
pub fn app(settings: Settings) -> Router {
    let mut profile = settings
        .profile
        .clone()
        .unwrap_or_else(|| Profile::fixed(settings.ttft, settings.itl, settings.tokens));
    // A hand-built profile may list an order that is out of range or
    // incomplete: routing indexes `providers` by it, so make it whole.
    let n = profile.providers.len();
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for i in profile.order.iter().copied().chain(0..n) {
        if i < n && !order.contains(&i) {
            order.push(i);
        }
    }
    profile.order = order;
    let state = Arc::new(AppState {
        upstreams: profile
            .providers
            .iter()
            .cloned()
            .map(Upstream::new)
            .collect(),
        serial: (settings.serial || profile.serial).then(Serial::new),
        warmth: Arc::new(Warmth::default()),
        profile,
        settings,
        next_id: AtomicU64::new(0),
    });
    Router::new()
        .route("/v1/chat/completions", post(completion::<true>))
        .route("/v1/completions", post(completion::<false>))
        .route("/v1/responses", post(responses).get(ws::responses_ws))
        .route("/v1/models", get(models))
        .route("/health", get(|| async { "ok" }))
        .with_state(state)
}

/// An OpenAI-shaped error response.
pub(crate) fn error_response(
    status: StatusCode,
    message: impl Into<String>,
    kind: &str,
) -> Response {
    let body = json!({"error": {"message": message.into(), "type": kind, "code": status.as_u16()}});
    (status, axum::Json(body)).into_response()
}

fn bad_request(message: impl Into<String>) -> Response {
    error_response(StatusCode::BAD_REQUEST, message, "invalid_request_error")
}

fn header_number(headers: &HeaderMap, name: &str) -> Result<Option<f64>, String> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|x| x.is_finite() && *x >= 0.0)
            .map(Some)
            .ok_or_else(|| format!("header {name} must be a non-negative number")),
    }
}

fn prompt_words(v: &Value) -> u32 {
    fn words(v: &Value) -> usize {
        match v {
            Value::String(s) => s.split_whitespace().count(),
            Value::Array(a) => a.iter().map(words).sum(),
            Value::Object(o) => o
                .get("content")
                .or_else(|| o.get("text"))
                .map(words)
                .unwrap_or(0),
            _ => 0,
        }
    }
    let n = ["messages", "prompt", "input", "instructions"]
        .iter()
        .filter_map(|k| v.get(*k))
        .map(words)
        .sum::<usize>();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Timing fixed by request headers.
struct Overrides {
    ttft: Option<Duration>,
    itl: Option<Duration>,
    tokens: Option<u32>,
    tool_call: Option<String>,
}

fn overrides(headers: &HeaderMap) -> Result<Overrides, String> {
    let ms = |x: f64| Duration::from_secs_f64(x / 1000.0);
    Ok(Overrides {
        ttft: header_number(headers, "x-emulator-ttft-ms")?.map(ms),
        itl: header_number(headers, "x-emulator-itl-ms")?.map(ms),
        tokens: header_number(headers, "x-emulator-tokens")?.map(|n| n as u32),
        tool_call: match headers.get("x-emulator-tool-call") {
            None => None,
            Some(v) => Some(
                v.to_str()
                    .ok()
                    .map(str::trim)
                    .filter(|n| !n.is_empty() && n.len() <= 64)
                    .ok_or("header x-emulator-tool-call must name a function (1 to 64 characters)")?
                    .to_string(),
            ),
        },
    })
}

/// The function a request's `tool_choice` makes the model call: the named
/// one (`{"type":"function","function":{"name":…}}` in chat,
/// `{"type":"function","name":…}` in Responses), or the first of `tools`
/// when it is `"required"`.
fn chosen_tool(req: &Value) -> Option<String> {
    let name_of = |t: &Value| {
        t.get("function")
            .and_then(|f| f.get("name"))
            .or_else(|| t.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match req.get("tool_choice")? {
        Value::String(s) if s == "required" => {
            req.get("tools")?.as_array()?.first().and_then(name_of)
        }
        choice @ Value::Object(_) => name_of(choice),
        _ => None,
    }
}

fn with_headers(mut resp: Response, id: &str, provider: Option<&str>) -> Response {
    let h = resp.headers_mut();
    h.insert(
        "x-request-id",
        HeaderValue::from_str(id).unwrap_or(HeaderValue::from_static("emu")),
    );
    if let Some(p) = provider.and_then(|p| HeaderValue::from_str(p).ok()) {
        h.insert("x-provider", p);
    }
    resp
}

/// What the request asked for, once parsed.
struct Ask {
    id: String,
    seq: u64,
    endpoint: Endpoint,
    path: &'static str,
    model: String,
    stream: bool,
    max_tokens: Option<u32>,
    prompt_tokens: u32,
    read_at: Instant,
    /// Kernel receive time of the read that completed the request.
    wire_read: Option<Instant>,
}

impl AppState {
    /// The truth line of a request no provider served.
    fn refused(&self, ask: &Ask, status: u16, attempts: Vec<Attempt>, queued: Duration) {
        let log = &self.settings.truth;
        log.write(TruthRecord {
            request_id: ask.id.clone(),
            path: ask.path.to_string(),
            stream: ask.stream,
            read_ms: log.ms(ask.read_at),
            wire_read_ms: ask.wire_read.map(|at| log.ms(at)),
            wire_first_token_ms: None,
            wire_ttft_ms: None,
            first_token_ms: None,
            last_token_ms: None,
            ttft_ms: None,
            tokens_sent: 0,
            tokens_planned: 0,
            target_ttft_ms: 0.0,
            target_itl_ms: 0.0,
            completed: false,
            status,
            provider: None,
            fault: attempts.last().and_then(|a| a.fault.clone()),
            attempts,
            queue_wait_ms: queued.as_secs_f64() * 1000.0,
            cold_start_ms: 0.0,
            prompt_tokens: ask.prompt_tokens,
            cost_usd: None,
        });
    }

    /// Parameters for a fault on `up`: headers first, then the provider's
    /// table, then the global one; a forced cold start defaults to the
    /// provider's or the profile's cold start.
    fn params(&self, up: &Upstream, from_headers: &FaultParams) -> FaultParams {
        let cold = [up.spec.cold_start.delay, self.profile.cold_start.delay]
            .into_iter()
            .find(|d| !d.is_zero());
        from_headers
            .or(&up.spec.faults.params)
            .or(&self.profile.faults.params)
            .or(&FaultParams {
                cold_start: cold,
                ..FaultParams::default()
            })
    }
}

async fn respond(
    state: Arc<AppState>,
    endpoint: Endpoint,
    path: &'static str,
    headers: HeaderMap,
    body: Bytes,
    wire: Option<Arc<Wire>>,
) -> Response {
    // The body extractor has run: the request is fully read now.
    let read_at = Instant::now();
    let wire_read = wire.as_ref().and_then(|w| w.last_read());
    let req: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return bad_request("the request body must be a JSON object"),
        Err(e) => return bad_request(format!("invalid JSON body: {e}")),
    };
    let fixed = match overrides(&headers) {
        Ok(o) => o,
        Err(m) => return bad_request(m),
    };
    let asked_faults = match faults::from_headers(&headers) {
        Ok(f) => f,
        Err(m) => return bad_request(m),
    };
    let tool_call = fixed.tool_call.clone().or_else(|| chosen_tool(&req));
    if tool_call.is_some() && endpoint == Endpoint::Completions {
        return bad_request(
            "a tool call can be asked of /v1/chat/completions and /v1/responses only",
        );
    }
    let routing = match Routing::from_request(&req) {
        Ok(r) => r,
        Err(m) => return bad_request(m),
    };
    let s = &state.settings;
    let profile = &state.profile;
    let seq = state.next_id.fetch_add(1, Ordering::Relaxed);
    let ask = Ask {
        id: format!("emu-{seq}"),
        seq,
        endpoint,
        path,
        model: req
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&s.model)
            .to_string(),
        stream: req.get("stream").and_then(Value::as_bool).unwrap_or(false),
        max_tokens: req
            .get("max_tokens")
            .or_else(|| req.get("max_completion_tokens"))
            .or_else(|| req.get("max_output_tokens"))
            .and_then(Value::as_u64)
            .map(|m| u32::try_from(m).unwrap_or(u32::MAX)),
        prompt_tokens: prompt_words(&req),
        read_at,
        wire_read,
    };
    let names: Vec<&str> = state
        .upstreams
        .iter()
        .map(|u| u.spec.name.as_str())
        .collect();
    let candidates = match routing.candidates(&names, &profile.order) {
        Ok(c) => c,
        Err(why) => {
            state.refused(&ask, 503, Vec::new(), Duration::ZERO);
            let r = error_response(StatusCode::SERVICE_UNAVAILABLE, why, "no_provider");
            return with_headers(r, &ask.id, None);
        }
    };

    let mut hold = Hold::default();
    if let Some(permit) = match &state.serial {
        Some(lock) => lock.acquire().await,
        None => None,
    } {
        hold.permits.push(permit);
    }
    let queued_globally = read_at.elapsed();
    let mut attempts: Vec<Attempt> = Vec::new();
    for (i, &idx) in candidates.iter().enumerate() {
        let up = &state.upstreams[idx];
        let name = up.spec.name.as_str();
        // Always the same draws in the same order, whatever is then used.
        let mut rng = Rng::for_request(s.seed, ask.seq, i as u64);
        let drawn = faults::draw(&mut rng, &up.spec.faults, &profile.faults);
        let ttft = up.spec.ttft.sample(&mut rng);
        let tokens = rng.range_u32(profile.tokens_min, profile.tokens_max);
        let params = state.params(up, &asked_faults.params);
        let fault = asked_faults
            .hits(i, name)
            .or(drawn)
            .map(|f| Applied::new(f, &params));
        attempts.push(Attempt {
            provider: name.to_string(),
            fault: fault.map(|a| a.fault.name().to_string()),
        });

        if let Some(a) = fault
            && let Some(code) = a.fault.status()
        {
            if i + 1 < candidates.len() {
                continue;
            }
            state.refused(&ask, code, attempts.clone(), queued_globally);
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            let tried: Vec<String> = attempts
                .iter()
                .map(|t| format!("{} ({})", t.provider, t.fault.as_deref().unwrap_or("ok")))
                .collect();
            let (kind, what) = match a.fault {
                Fault::RateLimited => ("rate_limit_error", "rate limited"),
                Fault::ServerError => ("server_error", "internal error"),
                _ => ("service_unavailable", "unavailable"),
            };
            let msg = format!(
                "provider {name}: {what} (injected {code}); tried {}",
                tried.join(", ")
            );
            let mut r = error_response(status, msg, kind);
            if a.fault == Fault::RateLimited {
                r.headers_mut()
                    .insert("retry-after", HeaderValue::from(a.retry_after_s));
            }
            return with_headers(r, &ask.id, Some(name));
        }

        // This provider serves.
        if let Some(permit) = match &up.serial {
            Some(lock) => lock.acquire().await,
            None => None,
        } {
            hold.permits.push(permit);
        }
        let started_at = Instant::now();
        let mut cold = Duration::ZERO;
        if state.warmth.begin(started_at, profile.cold_start.idle_gap) {
            cold += profile.cold_start.delay;
        }
        if up.warmth.begin(started_at, up.spec.cold_start.idle_gap) {
            cold += up.spec.cold_start.delay;
        }
        if let Some(a) = fault.filter(|a| a.fault == Fault::Cold) {
            cold = cold.max(a.cold_start);
        }
        hold.warmth = vec![state.warmth.clone(), up.warmth.clone()];
        let tokens = fixed.tokens.unwrap_or(tokens);
        let plan = Plan {
            id: ask.id.clone(),
            endpoint: ask.endpoint,
            model: ask.model.clone(),
            ttft: fixed
                .ttft
                .unwrap_or_else(|| ttft + s.ttft_per_input_token * ask.prompt_tokens),
            itl: fixed.itl.unwrap_or(up.spec.itl),
            tokens: ask.max_tokens.map_or(tokens, |m| tokens.min(m)),
            prompt_tokens: ask.prompt_tokens,
            provider: name.to_string(),
            price_input_per_mtok: up.spec.price_input_per_mtok,
            price_output_per_mtok: up.spec.price_output_per_mtok,
            cold_start: cold,
            fault,
            tool_call: tool_call.clone(),
        };
        if let Some(a) = fault.filter(|a| a.fault == Fault::SlowHeaders) {
            tokio::time::sleep_until((started_at + a.slow_headers).into()).await;
        }
        let ctx = stream::Ctx {
            log: s.truth.clone(),
            read_at,
            started_at,
            path: path.to_string(),
            attempts,
            hold,
            wire,
            wire_read,
        };
        let resp = if ask.stream {
            let mut r = Response::new(stream::sse(plan, ctx));
            let h = r.headers_mut();
            h.insert(
                "content-type",
                HeaderValue::from_static("text/event-stream"),
            );
            h.insert("cache-control", HeaderValue::from_static("no-cache"));
            r
        } else {
            stream::json_reply(plan, ctx).await
        };
        return with_headers(resp, &ask.id, Some(name));
    }
    // Unreachable: `candidates` is never empty and its last attempt returns.
    with_headers(
        error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "no routing attempt was made",
            "server_error",
        ),
        &ask.id,
        None,
    )
}

/// `POST /v1/chat/completions` (`CHAT`) or `POST /v1/completions`.
async fn completion<const CHAT: bool>(
    State(state): State<Arc<AppState>>,
    wire: Option<Extension<Arc<Wire>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (endpoint, path) = if CHAT {
        (Endpoint::Chat, "/v1/chat/completions")
    } else {
        (Endpoint::Completions, "/v1/completions")
    };
    let wire = wire.map(|Extension(w)| w);
    respond(state, endpoint, path, headers, body, wire).await
}

/// `POST /v1/responses`: the Responses API.
async fn responses(
    State(state): State<Arc<AppState>>,
    wire: Option<Extension<Arc<Wire>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let wire = wire.map(|Extension(w)| w);
    respond(
        state,
        Endpoint::Responses,
        "/v1/responses",
        headers,
        body,
        wire,
    )
    .await
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    let providers: Vec<&str> = state
        .upstreams
        .iter()
        .map(|u| u.spec.name.as_str())
        .collect();
    axum::Json(json!({
        "object": "list",
        "data": [{"id": state.settings.model, "object": "model", "created": 0, "owned_by": "firsttoken-emulator", "providers": providers}],
    }))
    .into_response()
}

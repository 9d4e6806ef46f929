//! The two answer paths and the router, sharing one pipeline:
//!
//! ```text
//! [serial permit] [cold start] auth (1 db call) → db (conversation or
//!   history, extra round trips; each call pays the modelled network)
//!   → retrieve (docs only) → upstream_connect → response headers (Server-Timing)
//!   → relay: upstream deltas → OpenAI chat chunks → [DONE]
//!   → store both messages → event: server-timing (upstream_ttft, stream, store, total)
//! ```
//!
//! The relay runs in its own task and writes to the response body through a
//! bounded channel, so a slow client pushes back on the upstream read and a
//! client that leaves stops it (its partial answer is stored as
//! `interrupted`). Storing happens before the body ends: when a client sees
//! the end of the stream, a follow-up request sees the stored messages.

use std::convert::Infallible;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use crate::AppState;
use crate::http::{ApiError, Phases, RawBody, RequestCtx, timed};
use crate::remote::Access;
use crate::route::{Decision, Route, decide_with};
use crate::store::{MessageStatus, NewMessage, Role};
use crate::telemetry::Traced;
use crate::upstream::{Item, PromptMessage, UpstreamError, UpstreamStream, data_event};
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;

/// Longest conversation title, in characters.
const TITLE_CHARS: usize = 80;
/// Chunks buffered between the relay and a slow client.
const CHANNEL_CHUNKS: usize = 64;

const CHAT_SYSTEM: &str =
    "You are the assistant of a personal finance app. Answer briefly and plainly.";
const DOCS_SYSTEM: &str = "You answer questions about the finance documents below. Use only these \
passages and cite the ids of the ones you use in square brackets.";

/// The body of `/api/chat`, `/api/docs/ask` and `/api/message`.
#[derive(Debug, serde::Deserialize)]
struct AskRequest {
    /// Continue this conversation; a new one is created when absent.
    conversation_id: Option<i64>,
    /// The user's message.
    message: String,
}

/// `POST /api/chat`: the fast path.
pub(crate) async fn chat(
    State(state): State<AppState>,
    Extension(ctx): Extension<RequestCtx>,
    headers: HeaderMap,
    body: RawBody,
) -> Result<Response, ApiError> {
    let decision = Decision {
        route: Route::Chat,
        reason: "endpoint /api/chat".into(),
    };
    answer(state, ctx, headers, body, Some(decision)).await
}

/// `POST /api/docs/ask`: the document path.
pub(crate) async fn docs_ask(
    State(state): State<AppState>,
    Extension(ctx): Extension<RequestCtx>,
    headers: HeaderMap,
    body: RawBody,
) -> Result<Response, ApiError> {
    let decision = Decision {
        route: Route::Docs,
        reason: "endpoint /api/docs/ask".into(),
    };
    answer(state, ctx, headers, body, Some(decision)).await
}

/// `POST /api/message`: the router picks the path from the text.
pub(crate) async fn message(
    State(state): State<AppState>,
    Extension(ctx): Extension<RequestCtx>,
    headers: HeaderMap,
    body: RawBody,
) -> Result<Response, ApiError> {
    answer(state, ctx, headers, body, None).await
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The user id behind the request's bearer token, or 401. One database
/// call (with the shared access), its round trips added to `trips`; an
/// `auth` span under `parent`, its database call inside.
pub(crate) async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    trips: &mut u32,
    parent: &Traced,
) -> Result<i64, ApiError> {
    let span = parent.child("auth", SpanKind::Internal, Vec::new());
    let token = crate::auth::bearer(headers)
        .ok_or_else(|| ApiError::unauthorized("missing bearer token"))?;
    let db = &state.inner.db;
    let query = span.db(state.db_system(), "SELECT", "sessions");
    db.call(db.shared(), trips).await;
    let user = state
        .inner
        .store
        .user_for_token(&crate::auth::token_hash(token), unix_now())
        .await;
    query.end();
    span.end();
    user?.ok_or_else(|| ApiError::unauthorized("invalid or expired token"))
}

/// Everything the relay needs once the response has started.
struct Exchange {
    state: AppState,
    ctx: RequestCtx,
    model: String,
    conversation_id: i64,
    question: String,
    passage_ids: Option<Vec<String>>,
    buffered: bool,
    access: Access,
    /// The handler's span (ends with the stream).
    handler: Traced,
    /// The provider call's span (ends with the upstream stream).
    provider: Traced,
    _permit: Option<OwnedSemaphorePermit>,
}

async fn answer(
    state: AppState,
    ctx: RequestCtx,
    headers: HeaderMap,
    body: RawBody,
    fixed: Option<Decision>,
) -> Result<Response, ApiError> {
    let permit = state.serial_permit().await;
    // The handler starts once it holds the permit: with `--serial`, the
    // wait for it is the queue wait between the server span and this one.
    let handler = ctx.span.child("answer", SpanKind::Internal, Vec::new());
    let mut phases = Phases::default();
    if let Some(d) = ctx.cold_start {
        phases.push("cold_start", d);
    }
    let shared = &state.inner;
    let t = Instant::now();
    let mut trips = 0;
    let user_id = authenticate(&state, &headers, &mut trips, &handler).await?;
    phases.push_trips("auth", t.elapsed(), trips);
    let req: AskRequest = body.json()?;
    let question = req.message.trim().to_string();
    if question.is_empty() {
        return Err(ApiError::bad_request("message must not be empty"));
    }
    let decision = fixed
        .unwrap_or_else(|| decide_with(&question, shared.config.options.router, &shared.index));
    handler.set(KeyValue::new("app.route", decision.route.as_str()));
    let system = state.db_system();

    // The path's database access: pooled and async, or the known-bad one.
    let access = shared.db.path(decision.route);
    let store = shared.store.with_blocking(access.blocking);
    let mut trips = 0;
    let db_start = Instant::now();
    let (conversation_id, history) = match req.conversation_id {
        Some(id) => {
            let query = handler.db(system, "SELECT", "messages");
            shared.db.call(access, &mut trips).await;
            let h = store
                .history(user_id, id, shared.config.options.history_limit)
                .await;
            query.end();
            let h = h?.ok_or_else(|| ApiError::not_found(format!("no conversation {id}")))?;
            (id, h)
        }
        None => {
            let query = handler.db(system, "INSERT", "conversations");
            shared.db.call(access, &mut trips).await;
            let title: String = question.chars().take(TITLE_CHARS).collect();
            let id = store.create_conversation(user_id, &title).await;
            query.end();
            (id?, Vec::new())
        }
    };
    for _ in 0..access.extra_queries {
        let query = handler.db(system, "SELECT", "messages");
        shared.db.call(access, &mut trips).await;
        let counted = store.count_messages(conversation_id).await;
        query.end();
        counted?;
    }
    phases.push_trips("db", db_start.elapsed(), trips);

    let mut prompt = Vec::with_capacity(history.len() + 2);
    let mut passage_ids = None;
    match decision.route {
        Route::Chat => prompt.push(PromptMessage {
            role: "system",
            content: CHAT_SYSTEM.into(),
        }),
        Route::Docs => {
            let t = Instant::now();
            let span = handler.child("retrieve", SpanKind::Internal, Vec::new());
            let hits = shared
                .index
                .search(&question, shared.config.options.passages);
            let mut system = String::from(DOCS_SYSTEM);
            if hits.is_empty() {
                system.push_str("\n\nNo passage matched: say the documents do not cover it.");
            }
            for (p, _) in &hits {
                system.push_str(&format!("\n\n[{}] ({})\n{}", p.id, p.title, p.text));
            }
            passage_ids = Some(hits.iter().map(|(p, _)| p.id.clone()).collect::<Vec<_>>());
            span.set(KeyValue::new("app.passages", hits.len() as i64));
            span.end();
            phases.push("retrieve", t.elapsed());
            prompt.push(PromptMessage {
                role: "system",
                content: system,
            });
        }
    }
    for m in history.into_iter().filter(|m| !m.content.is_empty()) {
        prompt.push(PromptMessage {
            role: m.role.as_str(),
            content: m.content,
        });
    }
    prompt.push(PromptMessage {
        role: "user",
        content: question.clone(),
    });

    let provider = shared.upstream.span(&handler);
    let upstream = timed(
        &mut phases,
        "upstream_connect",
        shared.upstream.start(&prompt, &ctx.id, &provider),
    )
    .await
    .map_err(|e| {
        tracing::warn!(request_id = %ctx.id, "{e}");
        provider.fail(e.to_string());
        ApiError::bad_gateway(e.to_string())
    })?;

    let meta = json!({
        "request_id": ctx.id,
        "route": decision.route,
        "route_reason": decision.reason,
        "conversation_id": conversation_id,
        "passage_ids": passage_ids,
    });
    let ex = Exchange {
        model: shared.upstream.model().to_string(),
        state: state.clone(),
        ctx,
        conversation_id,
        question,
        passage_ids,
        buffered: shared.config.known_bad.buffered,
        access,
        handler,
        provider,
        _permit: permit,
    };
    let preamble = Bytes::from(format!(": firsttoken-refapp {meta}\n\n"));

    let body = if ex.buffered {
        let mut sink = Sink::Buffer(preamble.to_vec());
        relay(ex, upstream, &mut sink).await;
        match sink {
            Sink::Buffer(all) => Body::from(all),
            Sink::Live(_) => Body::empty(),
        }
    } else {
        let (tx, rx) = mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        // The channel is empty and ours: this cannot fail.
        let _ = tx.try_send(preamble);
        tokio::spawn(async move {
            let mut sink = Sink::Live(tx);
            relay(ex, upstream, &mut sink).await;
        });
        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
        });
        Body::from_stream(stream)
    };

    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    h.insert("x-route", HeaderValue::from_static(decision.route.as_str()));
    if let Ok(v) = HeaderValue::from_str(&decision.reason) {
        h.insert("x-route-reason", v);
    }
    if let Ok(v) = HeaderValue::from_str(&conversation_id.to_string()) {
        h.insert("x-conversation-id", v);
    }
    if let Some(ids) = meta.get("passage_ids").and_then(Value::as_array) {
        let joined = ids
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(",");
        if let Ok(v) = HeaderValue::from_str(&joined) {
            h.insert("x-passage-ids", v);
        }
    }
    if let Ok(v) = HeaderValue::from_str(&phases.render()) {
        h.insert("server-timing", v);
    }
    Ok(resp)
}

/// Where the relay writes: the live response body, or a buffer sent whole
/// at the end (the `--buffered` known-bad mode).
enum Sink {
    Live(mpsc::Sender<Bytes>),
    Buffer(Vec<u8>),
}

impl Sink {
    /// False when the client has gone.
    async fn send(&mut self, b: Bytes) -> bool {
        match self {
            Sink::Live(tx) => tx.send(b).await.is_ok(),
            Sink::Buffer(buf) => {
                buf.extend_from_slice(&b);
                true
            }
        }
    }

    /// Resolves when the client has gone (never for a buffer).
    async fn closed(&self) {
        match self {
            Sink::Live(tx) => tx.closed().await,
            Sink::Buffer(_) => std::future::pending().await,
        }
    }
}

fn chunk(id: &str, model: &str, created: i64, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": format!("chatcmpl-{id}"),
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn error_event(kind: &str, status: u16, message: &str) -> Bytes {
    let v = json!({"error": {"message": message, "type": kind, "code": status}});
    Bytes::from(format!("event: error\ndata: {v}\n\n"))
}

enum End {
    Complete,
    Interrupted,
    Failed(UpstreamError),
}

async fn relay(ex: Exchange, mut up: UpstreamStream, sink: &mut Sink) {
    let stream_start = Instant::now();
    let created = unix_now();
    let id = ex.ctx.id.clone();
    let mut model = ex.model.clone();
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut ttft: Option<Duration> = None;
    let mut finish: Option<String> = None;
    let mut usage: Option<Value> = None;

    let end = loop {
        let item = tokio::select! {
            biased;
            _ = sink.closed() => break End::Interrupted,
            r = up.next() => r,
        };
        let d = match item {
            Ok(Item::Done) => break End::Complete,
            Ok(Item::Delta(d)) => d,
            Err(e) => break End::Failed(e),
        };
        if let Some(m) = d.model.filter(|m| !m.is_empty()) {
            model = m;
        }
        let content = d.content.filter(|c| !c.is_empty());
        if content.is_some() && ttft.is_none() {
            ttft = Some(up.sent_at().elapsed());
            ex.provider.event("gen_ai.first_token");
        }
        if ex.buffered {
            text.push_str(content.as_deref().unwrap_or(""));
            reasoning.push_str(d.reasoning.as_deref().unwrap_or(""));
            finish = d.finish_reason.or(finish);
            usage = d.usage.or(usage);
            continue;
        }
        let mut delta = serde_json::Map::new();
        if let Some(r) = d.role {
            delta.insert("role".into(), r.into());
        }
        if let Some(c) = &content {
            text.push_str(c);
            delta.insert("content".into(), c.as_str().into());
        }
        if let Some(r) = d.reasoning.filter(|r| !r.is_empty()) {
            delta.insert("reasoning".into(), r.into());
        }
        if delta.is_empty() && d.finish_reason.is_none() && d.usage.is_none() {
            continue;
        }
        let mut v = chunk(
            &id,
            &model,
            created,
            Value::Object(delta),
            d.finish_reason.as_deref(),
        );
        if let Some(u) = d.usage {
            v["usage"] = u;
        }
        if !sink.send(data_event(&v)).await {
            break End::Interrupted;
        }
    };

    let mut out: Vec<Bytes> = Vec::new();
    let status = match &end {
        End::Complete => {
            if ex.buffered {
                let mut delta = json!({"role": "assistant", "content": text});
                if !reasoning.is_empty() {
                    delta["reasoning"] = reasoning.clone().into();
                }
                out.push(data_event(&chunk(&id, &model, created, delta, None)));
                let mut last = chunk(
                    &id,
                    &model,
                    created,
                    json!({}),
                    Some(finish.as_deref().unwrap_or("stop")),
                );
                if let Some(u) = usage.take() {
                    last["usage"] = u;
                }
                out.push(data_event(&last));
            }
            out.push(Bytes::from_static(b"data: [DONE]\n\n"));
            MessageStatus::Complete
        }
        End::Interrupted => MessageStatus::Interrupted,
        End::Failed(e) => {
            tracing::warn!(request_id = %id, "{e}");
            out.push(error_event("upstream_error", 502, &e.to_string()));
            MessageStatus::Failed
        }
    };
    drop(up); // an unfinished upstream response is cancelled here
    if let End::Failed(e) = &end {
        ex.provider.fail(e.to_string());
    }
    ex.provider.end();
    for b in out {
        if !sink.send(b).await {
            break;
        }
    }

    let shared = &ex.state.inner;
    let question = NewMessage {
        role: Role::User,
        content: ex.question,
        passage_ids: None,
        status: MessageStatus::Complete,
        request_id: id.clone(),
    };
    let answer = NewMessage {
        role: Role::Assistant,
        content: text,
        passage_ids: ex.passage_ids,
        status,
        request_id: id.clone(),
    };
    let t = Instant::now();
    let mut trips = 0;
    let query = ex.handler.db(ex.state.db_system(), "INSERT", "messages");
    shared.db.call(ex.access, &mut trips).await;
    let stored = shared
        .store
        .with_blocking(ex.access.blocking)
        .append_exchange(ex.conversation_id, question, answer)
        .await;
    query.end();
    let store_time = t.elapsed();
    if let Err(e) = stored {
        let api = ApiError::from(e);
        let _ = sink
            .send(error_event(
                api.kind,
                api.status.as_u16(),
                &format!("the answer was not stored: {}", api.message),
            ))
            .await;
    }

    let mut tail = Phases::default();
    if let Some(t) = ttft {
        tail.push("upstream_ttft", t);
    }
    tail.push("stream", stream_start.elapsed());
    tail.push_trips("store", store_time, trips);
    tail.push("total", ex.ctx.start.elapsed());
    let _ = sink
        .send(Bytes::from(format!(
            "event: server-timing\ndata: {}\n\n",
            tail.render()
        )))
        .await;
    ex.handler.end();
    ex.state.touch();
}

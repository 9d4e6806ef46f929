//! The response body: an OpenAI stream on an absolute schedule (the bytes
//! of each endpoint's frames are [`crate::shape`]'s).
//!
//! The opening frame (a role-only chunk; Responses' `response.created`)
//! goes out at once, the first token (text or a tool call's first
//! fragment) at
//! `start + cold_start + ttft` (`start` is when the request was read, or
//! when it left the serial-mode queue), token k at that plus `(k−1)·itl` (an
//! absolute schedule, so timer lateness never accumulates), then a final
//! chunk with `finish_reason` and `usage` (with `cost`), then
//! `data: [DONE]`. Every chunk names the serving `provider`. A mid-stream
//! fault (error event, drop, stall) strikes after `after_tokens` content
//! tokens. The moment each token is handed to the connection is recorded for
//! the truth log.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::faults::{Applied, Fault, Stall};
use crate::profile::cost_usd;
use crate::shape::Frames;
use crate::truth::{Attempt, TruthLog, TruthRecord};
use crate::upstream::Hold;
use crate::wire::{Departure, Wire};

/// Which OpenAI endpoint shape to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/chat/completions`: `choices[].delta.content`.
    Chat,
    /// `/v1/completions`: `choices[].text`.
    Completions,
    /// `/v1/responses`: Responses API events (`response.output_text.delta`).
    Responses,
}

/// What one response will do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Response id (`x-request-id` and the chunk `id`).
    pub id: String,
    /// Endpoint shape.
    pub endpoint: Endpoint,
    /// Model name echoed back.
    pub model: String,
    /// Time from the start of processing to the first content token.
    pub ttft: Duration,
    /// Time between content tokens.
    pub itl: Duration,
    /// Content tokens to send.
    pub tokens: u32,
    /// Prompt size reported in usage.
    pub prompt_tokens: u32,
    /// The serving provider, named in every chunk.
    pub provider: String,
    /// USD per million prompt tokens.
    pub price_input_per_mtok: f64,
    /// USD per million completion tokens.
    pub price_output_per_mtok: f64,
    /// Extra time before the first token (a cold start).
    pub cold_start: Duration,
    /// A fault to apply; the stream acts on stream errors, drops and stalls.
    pub fault: Option<Applied>,
    /// Answer with a call of this function instead of text: each token is
    /// a fragment of its JSON arguments (chat and Responses endpoints).
    pub tool_call: Option<String>,
}

impl Plan {
    /// USD for the prompt and `completion` tokens.
    pub fn cost_usd(&self, completion: u32) -> f64 {
        cost_usd(
            self.prompt_tokens,
            completion,
            self.price_input_per_mtok,
            self.price_output_per_mtok,
        )
    }

    /// Chat Completions `usage`.
    pub(crate) fn chat_usage(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.tokens,
            "total_tokens": self.prompt_tokens + self.tokens,
            "cost": self.cost_usd(self.tokens),
        })
    }

    /// Responses API `usage` (with LiteLLM's `cost`).
    pub(crate) fn responses_usage(&self) -> Value {
        json!({
            "input_tokens": self.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": self.tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.prompt_tokens + self.tokens,
            "cost": self.cost_usd(self.tokens),
        })
    }

    /// The mid-stream fault, if any: (fault, content tokens before it strikes).
    fn mid_stream(&self) -> Option<(Applied, u32)> {
        let a = self.fault?;
        matches!(a.fault, Fault::StreamError | Fault::Drop | Fault::Stall)
            .then(|| (a, a.after_tokens.min(self.tokens)))
    }

    /// When content token `k` (from 1) is due, before any stall.
    fn due(&self, start: Instant, k: u32) -> Instant {
        start + self.cold_start + self.ttft + self.itl * k.saturating_sub(1)
    }
}

const WORDS: [&str; 24] = [
    "The ",
    "answer ",
    "depends ",
    "on ",
    "the ",
    "latency ",
    "your ",
    "users ",
    "actually ",
    "see, ",
    "measured ",
    "end ",
    "to ",
    "end ",
    "from ",
    "their ",
    "side ",
    "of ",
    "the ",
    "network, ",
    "not ",
    "the ",
    "model's. ",
    "\n",
];

/// The text of content token `k` (from 0).
pub fn token_text(k: u32) -> &'static str {
    WORDS[k as usize % WORDS.len()]
}

/// Where a response came from and what it holds while it runs.
pub(crate) struct Ctx {
    /// The truth log.
    pub log: TruthLog,
    /// Request fully read.
    pub read_at: Instant,
    /// Processing started (after any serial-mode queue).
    pub started_at: Instant,
    /// Request path.
    pub path: String,
    /// Routing attempts, the serving one last.
    pub attempts: Vec<Attempt>,
    /// Serial-mode permits and warmth trackers, released when the body ends.
    pub hold: Hold,
    /// The connection's wire clock (`None`: not served through [`crate::serve`]).
    pub wire: Option<Arc<Wire>>,
    /// Kernel receive time of the read that completed the request.
    pub wire_read: Option<Instant>,
}

/// Records what was sent; writes the truth record when dropped, so a client
/// that goes away mid-stream still leaves its line.
struct Truth {
    log: TruthLog,
    rec: TruthRecord,
    /// The connection's wire clock.
    wire: Option<Arc<Wire>>,
    /// When the first content token's bytes left (set by the write).
    departure: Option<Departure>,
}

impl Drop for Truth {
    fn drop(&mut self) {
        if let Some(&left) = self.departure.as_ref().and_then(|d| d.get()) {
            let at = self.log.ms(left);
            self.rec.wire_first_token_ms = Some(at);
            self.rec.wire_ttft_ms = self.rec.wire_read_ms.map(|r| at - r);
        }
        self.log.write(self.rec.clone());
    }
}

impl Truth {
    fn new(plan: &Plan, ctx: &Ctx, stream: bool) -> Truth {
        Truth {
            rec: record(plan, ctx, stream),
            log: ctx.log.clone(),
            // A whole JSON reply's record is written before its body is:
            // only a stream's first token can be seen leaving.
            wire: ctx.wire.clone().filter(|_| stream),
            departure: None,
        }
    }

    fn token_sent(&mut self, k: u32) {
        let at = self.log.ms(Instant::now());
        let rec = &mut self.rec;
        if rec.first_token_ms.is_none() {
            rec.first_token_ms = Some(at);
            rec.ttft_ms = Some(at - rec.read_ms);
            self.departure = self.wire.as_ref().map(|w| w.departure());
        }
        rec.last_token_ms = Some(at);
        rec.tokens_sent = k;
    }
}

fn record(plan: &Plan, ctx: &Ctx, stream: bool) -> TruthRecord {
    TruthRecord {
        request_id: plan.id.clone(),
        path: ctx.path.clone(),
        stream,
        read_ms: ctx.log.ms(ctx.read_at),
        wire_read_ms: ctx.wire_read.map(|at| ctx.log.ms(at)),
        wire_first_token_ms: None,
        wire_ttft_ms: None,
        first_token_ms: None,
        last_token_ms: None,
        ttft_ms: None,
        tokens_sent: 0,
        tokens_planned: plan.tokens,
        target_ttft_ms: plan.ttft.as_secs_f64() * 1000.0,
        target_itl_ms: plan.itl.as_secs_f64() * 1000.0,
        completed: false,
        status: 200,
        provider: Some(plan.provider.clone()),
        attempts: ctx.attempts.clone(),
        fault: plan.fault.map(|a| a.fault.name().to_string()),
        queue_wait_ms: ctx
            .started_at
            .saturating_duration_since(ctx.read_at)
            .as_secs_f64()
            * 1000.0,
        cold_start_ms: plan.cold_start.as_secs_f64() * 1000.0,
        prompt_tokens: plan.prompt_tokens,
        cost_usd: None,
    }
}

struct Gen {
    plan: Plan,
    /// Responses events numbered so far.
    seq: u64,
    start: Instant,
    step: u32,
    done: bool,
    /// Added to the schedule of every token after a stall.
    shift: Duration,
    truth: Truth,
    created: u64,
    // Dropped after `truth`: the permits are held until the record is out.
    _hold: Hold,
}

/// A [`Frames`] view of a generator that carries its sequence number on.
struct FramesOf<'g> {
    frames: Frames<'g>,
    seq: &'g mut u64,
}

impl<'g> std::ops::Deref for FramesOf<'g> {
    type Target = Frames<'g>;
    fn deref(&self) -> &Frames<'g> {
        &self.frames
    }
}

impl std::ops::DerefMut for FramesOf<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.frames
    }
}

impl Drop for FramesOf<'_> {
    fn drop(&mut self) {
        *self.seq = self.frames.seq();
    }
}

impl Gen {
    fn frames(&mut self) -> FramesOf<'_> {
        FramesOf {
            frames: Frames::new(&self.plan, self.created).starting_at(self.seq),
            seq: &mut self.seq,
        }
    }

    async fn next(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.done {
            return None;
        }
        let n = self.plan.tokens;
        let step = self.step;
        self.step += 1;
        if step == 0 {
            return Some(Ok(self.frames().opening()));
        }
        if let Some((a, after)) = self.plan.mid_stream()
            && step == after + 1
        {
            match (a.fault, a.stall) {
                (Fault::StreamError, _) => {
                    self.done = true;
                    return Some(Ok(self.frames().error()));
                }
                (Fault::Drop, _) => {
                    self.done = true;
                    // The connection dies when the next token was due.
                    if step <= n {
                        tokio::time::sleep_until(self.plan.due(self.start, step).into()).await;
                    }
                    return Some(Err(dropped().await));
                }
                (_, Stall::Forever) => std::future::pending::<()>().await,
                (_, Stall::For(d)) => {
                    self.shift = d;
                    if step > n {
                        tokio::time::sleep(d).await;
                    }
                }
            }
        }
        match step {
            k if k <= n => {
                tokio::time::sleep_until((self.plan.due(self.start, k) + self.shift).into()).await;
                let bytes = self.frames().token(k);
                self.truth.token_sent(k);
                Some(Ok(bytes))
            }
            k if k == n + 1 => {
                self.truth.rec.cost_usd = Some(self.plan.cost_usd(n));
                let closing = self.frames().closing();
                if self.frames().terminator().is_none() {
                    // Responses: the stream ends with `response.completed`.
                    self.done = true;
                    self.truth.rec.completed = true;
                }
                Some(Ok(closing))
            }
            _ => {
                self.done = true;
                self.truth.rec.completed = true;
                self.frames().terminator().map(Ok)
            }
        }
    }
}

/// The error that makes hyper abort the connection (no terminating chunk),
/// returned only after one pending poll, so that hyper first flushes what
/// the body already gave it.
async fn dropped() -> std::io::Error {
    tokio::task::yield_now().await;
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "injected drop")
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The SSE body for `plan`, starting from `read_at`.
pub fn sse_body(plan: Plan, log: TruthLog, read_at: Instant, path: &str) -> axum::body::Body {
    let ctx = Ctx {
        log,
        read_at,
        started_at: read_at,
        path: path.to_string(),
        attempts: vec![Attempt {
            provider: plan.provider.clone(),
            fault: None,
        }],
        hold: Hold::default(),
        wire: None,
        wire_read: None,
    };
    sse(plan, ctx)
}

pub(crate) fn sse(plan: Plan, ctx: Ctx) -> axum::body::Body {
    let truth = Truth::new(&plan, &ctx, true);
    let gen_state = Gen {
        start: ctx.started_at,
        plan,
        seq: 0,
        step: 0,
        done: false,
        shift: Duration::ZERO,
        truth,
        created: unix_now(),
        _hold: ctx.hold,
    };
    let stream = futures_util::stream::unfold(gen_state, |mut g| async move {
        let item = g.next().await?;
        Some((item, g))
    });
    axum::body::Body::from_stream(stream)
}

fn answer(plan: &Plan) -> Value {
    crate::shape::answer(plan, unix_now())
}

/// The whole answer as one JSON document, after the same schedule as a stream.
pub async fn json_response(plan: Plan, log: TruthLog, read_at: Instant, path: &str) -> Value {
    let ctx = Ctx {
        log,
        read_at,
        started_at: read_at,
        path: path.to_string(),
        attempts: vec![Attempt {
            provider: plan.provider.clone(),
            fault: None,
        }],
        hold: Hold::default(),
        wire: None,
        wire_read: None,
    };
    let mut truth = Truth::new(&plan, &ctx, false);
    let done = plan.due(read_at, plan.tokens.max(1));
    tokio::time::sleep_until(done.into()).await;
    truth.token_sent(plan.tokens);
    truth.rec.completed = true;
    truth.rec.cost_usd = Some(plan.cost_usd(plan.tokens));
    answer(&plan)
}

/// The non-streaming reply, with mid-stream faults mapped onto one
/// document: a stream error becomes a 502, a drop a truncated body, a stall
/// a later answer.
pub(crate) async fn json_reply(plan: Plan, ctx: Ctx) -> Response {
    let mut truth = Truth::new(&plan, &ctx, false);
    let _hold = ctx.hold;
    let n = plan.tokens;
    let mut shift = Duration::ZERO;
    if let Some((a, after)) = plan.mid_stream() {
        let strike = plan.due(ctx.started_at, after.max(1));
        match (a.fault, a.stall) {
            (Fault::StreamError, _) | (Fault::Drop, _) => {
                tokio::time::sleep_until(strike.into()).await;
                if after > 0 {
                    truth.token_sent(after);
                }
                if a.fault == Fault::StreamError {
                    truth.rec.status = 502;
                    return crate::error_response(
                        StatusCode::BAD_GATEWAY,
                        format!(
                            "upstream provider {} failed mid-generation (injected)",
                            plan.provider
                        ),
                        "upstream_error",
                    );
                }
                let text = answer(&plan).to_string();
                let half = Bytes::from(text.into_bytes()).slice(..8);
                use futures_util::StreamExt;
                let body = futures_util::stream::iter([Ok(half)])
                    .chain(futures_util::stream::once(async { Err(dropped().await) }));
                let mut r = Response::new(axum::body::Body::from_stream(body));
                r.headers_mut().insert(
                    "content-type",
                    axum::http::HeaderValue::from_static("application/json"),
                );
                return r;
            }
            (_, Stall::Forever) => std::future::pending::<()>().await,
            (_, Stall::For(d)) => shift = d,
        }
    }
    let done = plan.due(ctx.started_at, n.max(1)) + shift;
    tokio::time::sleep_until(done.into()).await;
    truth.token_sent(n);
    truth.rec.completed = true;
    truth.rec.cost_usd = Some(plan.cost_usd(n));
    axum::Json(answer(&plan)).into_response()
}

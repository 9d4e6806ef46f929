//! The response body: an OpenAI chunk stream on an absolute schedule.
//!
//! A role-only chunk goes out at once, the first content token at
//! `read + ttft`, token k at `read + ttft + (k−1)·itl` (an absolute
//! schedule, so timer lateness never accumulates), then a final chunk with
//! `finish_reason` and `usage`, then `data: [DONE]`. The moment each token is
//! handed to the connection is recorded for the truth log.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;

use crate::truth::{TruthLog, TruthRecord};

/// Which OpenAI endpoint shape to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/chat/completions`: `choices[].delta.content`.
    Chat,
    /// `/v1/completions`: `choices[].text`.
    Completions,
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
    /// Time from request read to the first content token.
    pub ttft: Duration,
    /// Time between content tokens.
    pub itl: Duration,
    /// Content tokens to send.
    pub tokens: u32,
    /// Prompt size reported in usage.
    pub prompt_tokens: u32,
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

/// Records what was sent; writes the truth record when dropped, so a client
/// that goes away mid-stream still leaves its line.
struct Truth {
    log: TruthLog,
    rec: TruthRecord,
}

impl Drop for Truth {
    fn drop(&mut self) {
        self.log.write(self.rec.clone());
    }
}

struct Gen {
    plan: Plan,
    read_at: Instant,
    step: u32,
    truth: Truth,
    created: u64,
}

impl Gen {
    fn chunk(&self, delta: serde_json::Value, finish: Option<&str>, usage: bool) -> Bytes {
        let choice = match self.plan.endpoint {
            Endpoint::Chat => json!({"index": 0, "delta": delta, "finish_reason": finish}),
            Endpoint::Completions => {
                json!({"index": 0, "text": delta.get("content").cloned().unwrap_or(json!("")), "finish_reason": finish})
            }
        };
        let object = match self.plan.endpoint {
            Endpoint::Chat => "chat.completion.chunk",
            Endpoint::Completions => "text_completion",
        };
        let mut v = json!({
            "id": self.plan.id, "object": object, "created": self.created, "model": self.plan.model,
            "choices": [choice],
        });
        if usage {
            v["usage"] = json!({
                "prompt_tokens": self.plan.prompt_tokens,
                "completion_tokens": self.plan.tokens,
                "total_tokens": self.plan.prompt_tokens + self.plan.tokens,
            });
        }
        Bytes::from(format!("data: {v}\n\n"))
    }

    async fn next(&mut self) -> Option<Bytes> {
        let n = self.plan.tokens;
        let step = self.step;
        self.step += 1;
        match step {
            0 => Some(self.chunk(json!({"role": "assistant", "content": ""}), None, false)),
            k if k <= n => {
                let due = self.read_at + self.plan.ttft + self.plan.itl * (k - 1);
                tokio::time::sleep_until(due.into()).await;
                let bytes = self.chunk(json!({"content": token_text(k - 1)}), None, false);
                let at = self.truth.log.ms(Instant::now());
                let rec = &mut self.truth.rec;
                if rec.first_token_ms.is_none() {
                    rec.first_token_ms = Some(at);
                    rec.ttft_ms = Some(at - rec.read_ms);
                }
                rec.last_token_ms = Some(at);
                rec.tokens_sent = k;
                Some(bytes)
            }
            k if k == n + 1 => Some(self.chunk(json!({}), Some("stop"), true)),
            k if k == n + 2 => {
                self.truth.rec.completed = true;
                Some(Bytes::from_static(b"data: [DONE]\n\n"))
            }
            _ => None,
        }
    }
}

fn record(plan: &Plan, log: &TruthLog, read_at: Instant, path: &str, stream: bool) -> TruthRecord {
    TruthRecord {
        request_id: plan.id.clone(),
        path: path.to_string(),
        stream,
        read_ms: log.ms(read_at),
        first_token_ms: None,
        last_token_ms: None,
        ttft_ms: None,
        tokens_sent: 0,
        tokens_planned: plan.tokens,
        target_ttft_ms: plan.ttft.as_secs_f64() * 1000.0,
        target_itl_ms: plan.itl.as_secs_f64() * 1000.0,
        completed: false,
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The SSE body for `plan`, starting from `read_at`.
pub fn sse_body(plan: Plan, log: TruthLog, read_at: Instant, path: &str) -> axum::body::Body {
    let rec = record(&plan, &log, read_at, path, true);
    let gen_state = Gen {
        plan,
        read_at,
        step: 0,
        truth: Truth { log, rec },
        created: unix_now(),
    };
    let stream = futures_util::stream::unfold(gen_state, |mut g| async move {
        let item = g.next().await?;
        Some((Ok::<Bytes, Infallible>(item), g))
    });
    axum::body::Body::from_stream(stream)
}

/// The whole answer as one JSON document, after the same schedule as a stream.
pub async fn json_response(
    plan: Plan,
    log: TruthLog,
    read_at: Instant,
    path: &str,
) -> serde_json::Value {
    let mut truth = Truth {
        rec: record(&plan, &log, read_at, path, false),
        log,
    };
    let n = plan.tokens;
    let done = read_at + plan.ttft + plan.itl * n.saturating_sub(1);
    tokio::time::sleep_until(done.into()).await;
    let at = truth.log.ms(Instant::now());
    truth.rec.first_token_ms = Some(at);
    truth.rec.ttft_ms = Some(at - truth.rec.read_ms);
    truth.rec.last_token_ms = Some(at);
    truth.rec.tokens_sent = n;
    truth.rec.completed = true;
    let text: String = (0..n).map(token_text).collect();
    let usage = json!({"prompt_tokens": plan.prompt_tokens, "completion_tokens": n, "total_tokens": plan.prompt_tokens + n});
    match plan.endpoint {
        Endpoint::Chat => json!({
            "id": plan.id, "object": "chat.completion", "created": unix_now(), "model": plan.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage,
        }),
        Endpoint::Completions => json!({
            "id": plan.id, "object": "text_completion", "created": unix_now(), "model": plan.model,
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": usage,
        }),
    }
}

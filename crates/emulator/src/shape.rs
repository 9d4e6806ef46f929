//! What each response looks like on the wire, per endpoint: the opening
//! frame, one frame per token, the closing frame(s) and the terminator.
//! [`crate::stream`] owns the schedule; this module owns the bytes.
//!
//! - Chat Completions (`/v1/chat/completions`): a role-only chunk, one
//!   `choices[].delta.content` chunk per token (or, answering with a tool
//!   call, `delta.tool_calls` argument fragments, the first naming the
//!   function), a `finish_reason` chunk with `usage`, `data: [DONE]`.
//! - Legacy completions (`/v1/completions`): `choices[].text`.
//! - Responses (`/v1/responses`): `event:`-named SSE events as OpenAI sends
//!   them, each JSON with `type` and `sequence_number`:
//!   `response.created` and `response.in_progress` at once; then either a
//!   message item (`response.output_item.added`, `response.content_part.added`,
//!   one `response.output_text.delta` per token) or a function call
//!   (`response.output_item.added` with a `function_call` item and the
//!   first `response.function_call_arguments.delta`, then one delta per
//!   token); then the `.done` events and `response.completed` with
//!   `usage`. No `[DONE]`: the stream ends after `response.completed`. A
//!   mid-stream error is `response.failed`.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::stream::{Endpoint, Plan, token_text};

/// The fragment of a tool call's JSON arguments that token `k` (from 1 of
/// `n`) carries: together they spell `{"text":"<the answer>"}`.
pub(crate) fn argument_fragment(k: u32, n: u32) -> String {
    let word = json!(token_text(k - 1)).to_string();
    let word = &word[1..word.len() - 1];
    let open = if k == 1 { "{\"text\":\"" } else { "" };
    let close = if k == n { "\"}" } else { "" };
    format!("{open}{word}{close}")
}

/// The whole arguments string of a tool call of `n` tokens.
pub(crate) fn arguments(n: u32) -> String {
    if n == 0 {
        return "{}".into();
    }
    (1..=n).map(|k| argument_fragment(k, n)).collect()
}

/// The text answer of `n` tokens.
pub(crate) fn text(n: u32) -> String {
    (0..n).map(token_text).collect()
}

/// Frames of one streamed response, numbered as OpenAI numbers Responses events.
pub(crate) struct Frames<'p> {
    plan: &'p Plan,
    created: u64,
    seq: u64,
}

impl<'p> Frames<'p> {
    pub(crate) fn new(plan: &'p Plan, created: u64) -> Frames<'p> {
        Frames {
            plan,
            created,
            seq: 0,
        }
    }

    /// Number the next Responses event `seq` (a generator resuming).
    pub(crate) fn starting_at(mut self, seq: u64) -> Frames<'p> {
        self.seq = seq;
        self
    }

    /// The sequence number of the next Responses event.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    fn chunk(&self, delta: Value, finish: Option<&str>, usage: bool) -> String {
        let p = self.plan;
        let choice = match p.endpoint {
            Endpoint::Completions => {
                json!({"index": 0, "text": delta.get("content").cloned().unwrap_or(json!("")), "finish_reason": finish})
            }
            _ => json!({"index": 0, "delta": delta, "finish_reason": finish}),
        };
        let object = match p.endpoint {
            Endpoint::Completions => "text_completion",
            _ => "chat.completion.chunk",
        };
        let mut v = json!({
            "id": p.id, "object": object, "created": self.created, "model": p.model,
            "provider": p.provider, "choices": [choice],
        });
        if usage {
            v["usage"] = p.chat_usage();
        }
        format!("data: {v}\n\n")
    }

    /// One Responses event: `event: TYPE` and its JSON with the next sequence number.
    fn event(&mut self, kind: &str, mut v: Value) -> String {
        v["type"] = json!(kind);
        v["sequence_number"] = json!(self.seq);
        self.seq += 1;
        format!("event: {kind}\ndata: {v}\n\n")
    }

    fn item_id(&self) -> String {
        match self.plan.tool_call {
            Some(_) => format!("fc_{}", self.plan.id),
            None => format!("msg_{}", self.plan.id),
        }
    }

    /// The response object in `status`, with `output` and (when done) usage.
    fn response(&self, status: &str, output: Value, usage: bool) -> Value {
        let p = self.plan;
        let mut r = json!({
            "id": format!("resp_{}", p.id), "object": "response", "created_at": self.created,
            "status": status, "model": p.model, "output": output, "provider": p.provider,
            "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        });
        if usage {
            r["usage"] = p.responses_usage();
        }
        r
    }

    /// The output item once complete.
    fn item_done(&self) -> Value {
        let p = self.plan;
        match &p.tool_call {
            Some(name) => json!({
                "id": self.item_id(), "type": "function_call", "status": "completed",
                "call_id": format!("call_{}", p.id), "name": name, "arguments": arguments(p.tokens),
            }),
            None => json!({
                "id": self.item_id(), "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text(p.tokens), "annotations": []}],
            }),
        }
    }

    /// What goes out at once, before the first token.
    pub(crate) fn opening(&mut self) -> Bytes {
        let s = match self.plan.endpoint {
            Endpoint::Responses => {
                let created = self.response("in_progress", json!([]), false);
                let mut s = self.event("response.created", json!({"response": created}));
                s += &self.event("response.in_progress", json!({"response": created}));
                if self.plan.tool_call.is_none() {
                    let item = json!({"id": self.item_id(), "type": "message", "status": "in_progress", "role": "assistant", "content": []});
                    s += &self.event(
                        "response.output_item.added",
                        json!({"output_index": 0, "item": item}),
                    );
                    s += &self.event(
                        "response.content_part.added",
                        json!({"item_id": self.item_id(), "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
                    );
                }
                s
            }
            _ => self.chunk(json!({"role": "assistant", "content": ""}), None, false),
        };
        Bytes::from(s)
    }

    /// Token `k` (from 1).
    pub(crate) fn token(&mut self, k: u32) -> Bytes {
        let p = self.plan;
        let s = match (p.endpoint, &p.tool_call) {
            (Endpoint::Responses, None) => self.event(
                "response.output_text.delta",
                json!({"item_id": self.item_id(), "output_index": 0, "content_index": 0, "delta": token_text(k - 1), "logprobs": []}),
            ),
            (Endpoint::Responses, Some(name)) => {
                let mut s = String::new();
                if k == 1 {
                    let item = json!({"id": self.item_id(), "type": "function_call", "status": "in_progress", "call_id": format!("call_{}", p.id), "name": name, "arguments": ""});
                    s += &self.event(
                        "response.output_item.added",
                        json!({"output_index": 0, "item": item}),
                    );
                }
                s += &self.event(
                    "response.function_call_arguments.delta",
                    json!({"item_id": self.item_id(), "output_index": 0, "delta": argument_fragment(k, p.tokens)}),
                );
                s
            }
            (_, Some(name)) => {
                let mut call = json!({"index": 0, "function": {"arguments": argument_fragment(k, p.tokens)}});
                if k == 1 {
                    call["id"] = json!(format!("call_{}", p.id));
                    call["type"] = json!("function");
                    call["function"]["name"] = json!(name);
                }
                self.chunk(json!({"tool_calls": [call]}), None, false)
            }
            (_, None) => self.chunk(json!({"content": token_text(k - 1)}), None, false),
        };
        Bytes::from(s)
    }

    /// After the last token: the finish chunk with usage, or the Responses
    /// `.done` events and `response.completed`.
    pub(crate) fn closing(&mut self) -> Bytes {
        let p = self.plan;
        let s = match p.endpoint {
            Endpoint::Responses => {
                let mut s = String::new();
                let id = self.item_id();
                match &p.tool_call {
                    Some(_) => {
                        s += &self.event(
                            "response.function_call_arguments.done",
                            json!({"item_id": id, "output_index": 0, "arguments": arguments(p.tokens)}),
                        );
                    }
                    None => {
                        s += &self.event(
                            "response.output_text.done",
                            json!({"item_id": id, "output_index": 0, "content_index": 0, "text": text(p.tokens), "logprobs": []}),
                        );
                        s += &self.event(
                            "response.content_part.done",
                            json!({"item_id": id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": text(p.tokens), "annotations": []}}),
                        );
                    }
                }
                let item = self.item_done();
                s += &self.event(
                    "response.output_item.done",
                    json!({"output_index": 0, "item": item}),
                );
                let done = self.response("completed", json!([item]), true);
                s += &self.event("response.completed", json!({"response": done}));
                s
            }
            _ => {
                let finish = if p.tool_call.is_some() {
                    "tool_calls"
                } else {
                    "stop"
                };
                self.chunk(json!({}), Some(finish), true)
            }
        };
        Bytes::from(s)
    }

    /// The terminator after the closing frame: `data: [DONE]`, or nothing
    /// for Responses (whose stream ends after `response.completed`).
    pub(crate) fn terminator(&self) -> Option<Bytes> {
        (self.plan.endpoint != Endpoint::Responses).then(|| Bytes::from_static(b"data: [DONE]\n\n"))
    }

    /// An injected mid-stream failure.
    pub(crate) fn error(&mut self) -> Bytes {
        let p = self.plan;
        let message = format!(
            "upstream provider {} failed mid-stream (injected)",
            p.provider
        );
        let s = match p.endpoint {
            Endpoint::Responses => {
                let mut failed = self.response("failed", json!([]), false);
                failed["error"] = json!({"code": "server_error", "message": message});
                self.event("response.failed", json!({"response": failed}))
            }
            _ => {
                let v = json!({
                    "id": p.id, "object": "chat.completion.chunk", "created": self.created,
                    "model": p.model, "provider": p.provider,
                    "error": {"message": message, "type": "upstream_error", "code": 502},
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
                });
                format!("data: {v}\n\n")
            }
        };
        Bytes::from(s)
    }
}

/// The whole answer as one JSON document (a request without `stream`).
pub(crate) fn answer(plan: &Plan, created: u64) -> Value {
    let p = plan;
    match p.endpoint {
        Endpoint::Responses => {
            let f = Frames::new(p, created);
            f.response("completed", json!([f.item_done()]), true)
        }
        Endpoint::Chat => {
            let message = match &p.tool_call {
                Some(name) => json!({"role": "assistant", "content": null, "tool_calls": [{
                    "id": format!("call_{}", p.id), "type": "function",
                    "function": {"name": name, "arguments": arguments(p.tokens)},
                }]}),
                None => json!({"role": "assistant", "content": text(p.tokens)}),
            };
            let finish = if p.tool_call.is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            json!({
                "id": p.id, "object": "chat.completion", "created": created, "model": p.model,
                "provider": p.provider, "usage": p.chat_usage(),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            })
        }
        Endpoint::Completions => json!({
            "id": p.id, "object": "text_completion", "created": created, "model": p.model,
            "provider": p.provider, "usage": p.chat_usage(),
            "choices": [{"index": 0, "text": text(p.tokens), "finish_reason": "stop"}],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_fragments_spell_a_json_object() {
        for n in [1, 2, 5, 24, 30] {
            let v: Value = serde_json::from_str(&arguments(n)).unwrap();
            assert_eq!(v["text"], text(n), "{n}");
        }
        assert_eq!(arguments(0), "{}");
    }
}

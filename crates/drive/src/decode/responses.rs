//! The OpenAI Responses API stream (`POST /v1/responses` with `"stream":
//! true`): every SSE event's JSON names itself in `type`.
//!
//! - content: a non-empty `response.output_text.delta` (or
//!   `response.refusal.delta`, the text a refusing model shows instead);
//! - reasoning: a non-empty `response.reasoning_text.delta` or
//!   `response.reasoning_summary_text.delta`;
//! - a tool call: `response.output_item.added` with a `function_call` (or
//!   `custom_tool_call`) item, which names the function, or a non-empty
//!   `response.function_call_arguments.delta`;
//! - the end: `response.completed`, `response.incomplete` (its
//!   `incomplete_details.reason` kept) or `response.failed` (an error);
//!   OpenAI sends no `[DONE]`, LiteLLM's bridge does, and either is taken.
//! - errors: an `error` event or `response.failed`.
//!
//! Usage (`input_tokens`, `output_tokens`, LiteLLM's `cost`) comes from the
//! terminal event's `response.usage`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::formats::{Usage, bounded, error_text};
use super::{ChunkFacts, StreamFacts};
use firsttoken_record::ErrorKind;

/// Longest `incomplete_details.reason` kept.
const MAX_REASON: usize = 64;

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item: Option<Item<'a>>,
    #[serde(default)]
    response: Option<Response>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    provider: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    provider: Option<String>,
}

#[derive(Deserialize)]
struct Incomplete {
    #[serde(default)]
    reason: Option<String>,
}

fn non_empty(s: &Option<Cow<'_, str>>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

/// True when `t` is an event type of the Responses stream (for `auto`).
pub(crate) fn is_responses_type(t: &str) -> bool {
    t.starts_with("response.")
}

/// One Responses API event.
pub(crate) fn responses(data: &str, offset: u64, facts: &mut StreamFacts, cf: &mut ChunkFacts) {
    if data.trim() == "[DONE]" {
        facts.done = true;
        return;
    }
    let ev: Event<'_> = match serde_json::from_str(data) {
        Ok(e) => e,
        Err(e) => {
            return facts.fail(
                ErrorKind::Decode,
                format!("malformed JSON in SSE event at byte offset {offset}: {e}"),
            );
        }
    };
    if let Some(p) = &ev.provider {
        facts.provider = Some(p.to_string());
    }
    match ev.kind.as_ref() {
        "response.output_text.delta" | "response.refusal.delta" if non_empty(&ev.delta) => {
            facts.content(cf, ev.delta.as_deref().unwrap_or_default());
        }
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta"
            if non_empty(&ev.delta) =>
        {
            cf.reasoning = true;
        }
        "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta"
            if non_empty(&ev.delta) =>
        {
            cf.tool_call = true;
        }
        "response.output_item.added" => {
            let kind = ev.item.as_ref().and_then(|i| i.kind.as_deref());
            if matches!(kind, Some("function_call" | "custom_tool_call")) {
                cf.tool_call = true;
            }
        }
        "response.created" | "response.in_progress" => {
            if let Some(p) = ev.response.as_ref().and_then(|r| r.provider.as_ref()) {
                facts.provider = Some(p.clone());
            }
        }
        "response.completed" => {
            terminal(&ev, facts);
        }
        "response.incomplete" => {
            terminal(&ev, facts);
            let reason = ev
                .response
                .as_ref()
                .and_then(|r| r.incomplete_details.as_ref())
                .and_then(|d| d.reason.as_deref())
                .filter(|r| !r.is_empty())
                .unwrap_or("unknown");
            let reason: String = reason.chars().take(MAX_REASON).collect();
            facts.incomplete_reason = Some(reason);
        }
        "response.failed" => {
            terminal(&ev, facts);
            let msg = ev
                .response
                .as_ref()
                .and_then(|r| r.error.as_ref())
                .filter(|e| !e.is_null())
                .map(error_text)
                .unwrap_or_else(|| "response.failed without an error object".to_string());
            facts.fail(ErrorKind::StreamError, msg);
        }
        "error" => {
            let msg = match (&ev.error, &ev.message) {
                (Some(e), _) if !e.is_null() => error_text(e),
                (_, Some(m)) => match ev.code.as_ref().filter(|c| !c.is_null()) {
                    Some(Value::String(c)) => bounded(&format!("{m} ({c})")),
                    Some(c) => bounded(&format!("{m} ({c})")),
                    None => bounded(m),
                },
                _ => bounded(data),
            };
            facts.fail(ErrorKind::StreamError, msg);
        }
        _ => {}
    }
}

/// A terminal event: the stream is done, usage is final.
fn terminal(ev: &Event<'_>, facts: &mut StreamFacts) {
    facts.done = true;
    if let Some(u) = ev.response.as_ref().and_then(|r| r.usage.as_ref()) {
        u.apply(facts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> (StreamFacts, Vec<ChunkFacts>) {
        let mut facts = StreamFacts::default();
        let cfs = events
            .iter()
            .map(|e| {
                let mut cf = ChunkFacts::default();
                responses(e, 0, &mut facts, &mut cf);
                cf
            })
            .collect();
        (facts, cfs)
    }

    #[test]
    fn lifecycle_events_are_not_content_text_deltas_are() {
        let (f, cf) = run(&[
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress"}}"#,
            r#"{"type":"response.output_item.added","item":{"type":"message","content":[]}}"#,
            r#"{"type":"response.content_part.added","part":{"type":"output_text","text":""}}"#,
            r#"{"type":"response.output_text.delta","delta":""}"#,
            r#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            r#"{"type":"response.output_text.done","text":"Hi"}"#,
            r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":3,"output_tokens":7,"total_tokens":10}}}"#,
        ]);
        let content: Vec<bool> = cf.iter().map(|c| c.content).collect();
        assert_eq!(
            content,
            [false, false, false, false, true, false, false],
            "only a non-empty text delta is content"
        );
        assert!(cf.iter().all(|c| !c.reasoning && !c.tool_call));
        assert!(f.done && f.error.is_none() && f.incomplete_reason.is_none());
        assert_eq!((f.input_tokens, f.output_tokens), (Some(3), Some(7)));
    }

    #[test]
    fn reasoning_and_tool_calls_are_their_own_facts() {
        let (_, cf) = run(&[
            r#"{"type":"response.reasoning_summary_text.delta","delta":"thinking"}"#,
            r#"{"type":"response.reasoning_text.delta","delta":"more"}"#,
            r#"{"type":"response.reasoning_text.delta","delta":""}"#,
            r#"{"type":"response.output_item.added","item":{"type":"function_call","name":"get_weather","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","delta":"{\"city\""}"#,
            r#"{"type":"response.function_call_arguments.delta","delta":""}"#,
        ]);
        let facts: Vec<(bool, bool, bool)> = cf
            .iter()
            .map(|c| (c.content, c.reasoning, c.tool_call))
            .collect();
        assert_eq!(
            facts,
            [
                (false, true, false),
                (false, true, false),
                (false, false, false),
                (false, false, true),
                (false, false, true),
                (false, false, false),
            ]
        );
    }

    #[test]
    fn incomplete_keeps_its_reason_failed_and_error_are_stream_errors() {
        let (f, _) = run(&[
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1,"output_tokens":16}}}"#,
        ]);
        assert!(f.done && f.error.is_none());
        assert_eq!(f.incomplete_reason.as_deref(), Some("max_output_tokens"));
        assert_eq!(f.output_tokens, Some(16));
        let (f, _) = run(&[
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model crashed"}}}"#,
        ]);
        assert_eq!(
            f.error,
            Some((
                ErrorKind::StreamError,
                "The model crashed (server_error)".into()
            ))
        );
        let (f, _) = run(&[
            r#"{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":3}"#,
        ]);
        assert_eq!(
            f.error,
            Some((
                ErrorKind::StreamError,
                "Slow down (rate_limit_exceeded)".into()
            ))
        );
        let (f, _) = run(&["{oops"]);
        assert_eq!(f.error.map(|e| e.0), Some(ErrorKind::Decode));
        let (f, _) = run(&["[DONE]"]);
        assert!(f.done);
    }
}

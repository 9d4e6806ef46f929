//! What one event means in each stream format: content, reasoning, usage,
//! the terminator, or an error carried inside a 2xx stream.
//!
//! Typed `serde_json` structs borrow from the event text, so a common chunk
//! parses without copying its strings.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{ChunkFacts, StreamFacts};
use firsttoken_record::ErrorKind;

/// Longest error message kept from a stream's error payload.
const MAX_MESSAGE: usize = 300;

/// Bound a message to [`MAX_MESSAGE`] characters.
pub(crate) fn bounded(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(MAX_MESSAGE) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn non_empty(s: &Option<Cow<'_, str>>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

pub(crate) fn error_text(v: &Value) -> String {
    let msg = match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => match (o.get("message"), o.get("type").or_else(|| o.get("code"))) {
            (Some(Value::String(m)), Some(t)) => format!(
                "{m} ({})",
                t.as_str().map(str::to_string).unwrap_or(t.to_string())
            ),
            (Some(Value::String(m)), None) => m.clone(),
            _ => v.to_string(),
        },
        other => other.to_string(),
    };
    bounded(&msg)
}

/// Token counts and cost from a `usage` object (OpenAI, OpenRouter and Anthropic names).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cost: Option<f64>,
}

impl Usage {
    pub(crate) fn apply(&self, facts: &mut StreamFacts) {
        if let Some(n) = self.completion_tokens.or(self.output_tokens) {
            facts.output_tokens = Some(n);
        }
        if let Some(n) = self.prompt_tokens.or(self.input_tokens) {
            facts.input_tokens = Some(n);
        }
        if let Some(c) = self.cost {
            facts.cost_usd = Some(c);
        }
    }
}

fn decode_error(facts: &mut StreamFacts, offset: u64, what: &str, e: &dyn std::fmt::Display) {
    facts.fail(
        ErrorKind::Decode,
        format!("malformed {what} at byte offset {offset}: {e}"),
    );
}

#[derive(Deserialize)]
struct OaChunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<OaChoice<'a>>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    provider: Option<Cow<'a, str>>,
    /// llama.cpp's own timing, on its last chunk ([`super::engine`]).
    #[serde(default)]
    timings: Option<Value>,
}

#[derive(Deserialize)]
struct OaChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<OaDelta<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct OaDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
}

/// OpenAI chat (`delta.content`) or legacy completions (`text`) chunk.
pub(crate) fn openai(data: &str, offset: u64, facts: &mut StreamFacts, cf: &mut ChunkFacts) {
    if data.trim() == "[DONE]" {
        facts.done = true;
        return;
    }
    let chunk: OaChunk<'_> = match serde_json::from_str(data) {
        Ok(c) => c,
        Err(e) => return decode_error(facts, offset, "JSON in SSE event", &e),
    };
    if let Some(p) = &chunk.provider {
        facts.provider = Some(p.to_string());
    }
    if let Some(u) = &chunk.usage {
        u.apply(facts);
    }
    if let Some(t) = &chunk.timings {
        super::engine::llama_timings(t, facts);
    }
    if let Some(e) = chunk.error.as_ref().filter(|e| !e.is_null()) {
        return facts.fail(ErrorKind::StreamError, error_text(e));
    }
    if chunk.object.as_deref() == Some("error") {
        let m = chunk.message.as_deref().unwrap_or("error object in stream");
        return facts.fail(ErrorKind::StreamError, bounded(m));
    }
    for choice in chunk.choices.iter().flatten() {
        if let Some(t) = choice.text.as_deref().filter(|t| !t.is_empty()) {
            facts.content(cf, t);
        }
        if let Some(d) = &choice.delta {
            if let Some(t) = d.content.as_deref().filter(|t| !t.is_empty()) {
                facts.content(cf, t);
            }
            // A tool call is output, not a content token: it has its own stamp.
            if d.tool_calls.as_ref().is_some_and(|t| !t.is_empty()) {
                cf.tool_call = true;
            }
            if non_empty(&d.reasoning_content) || non_empty(&d.reasoning) {
                cf.reasoning = true;
            }
        }
    }
}

#[derive(Deserialize)]
struct AnEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<AnDelta<'a>>,
    #[serde(default)]
    message: Option<AnMessage>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    content_block: Option<AnDelta<'a>>,
}

#[derive(Deserialize)]
struct AnDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct AnMessage {
    #[serde(default)]
    usage: Option<Usage>,
}

/// Anthropic Messages stream event.
pub(crate) fn anthropic(
    event: &str,
    data: &str,
    offset: u64,
    facts: &mut StreamFacts,
    cf: &mut ChunkFacts,
) {
    let ev: AnEvent<'_> = match serde_json::from_str(data) {
        Ok(e) => e,
        Err(e) => return decode_error(facts, offset, "JSON in SSE event", &e),
    };
    if event == "error" || ev.kind == "error" {
        let msg = ev
            .error
            .as_ref()
            .map(error_text)
            .unwrap_or_else(|| bounded(data));
        return facts.fail(ErrorKind::StreamError, msg);
    }
    match ev.kind.as_ref() {
        "message_start" => {
            if let Some(u) = ev.message.as_ref().and_then(|m| m.usage.as_ref()) {
                u.apply(facts);
            }
        }
        "message_delta" => {
            if let Some(u) = &ev.usage {
                u.apply(facts);
            }
        }
        "message_stop" => facts.done = true,
        _ => {}
    }
    for d in [&ev.delta, &ev.content_block].into_iter().flatten() {
        if let Some(t) = d.text.as_deref().filter(|t| !t.is_empty()) {
            facts.content(cf, t);
        }
        // A `tool_use` block opening (it names the tool) or its input's
        // JSON streaming: a tool call, not a content token.
        if d.kind.as_deref() == Some("tool_use") || non_empty(&d.partial_json) {
            cf.tool_call = true;
        }
        if non_empty(&d.thinking) {
            cf.reasoning = true;
        }
    }
}

#[derive(Deserialize)]
struct VercelPart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, rename = "errorText", borrow)]
    error_text: Option<Cow<'a, str>>,
    #[serde(default, rename = "inputTextDelta", borrow)]
    input_text_delta: Option<Cow<'a, str>>,
}

/// Vercel AI SDK UI message stream part.
pub(crate) fn vercel_ui(data: &str, offset: u64, facts: &mut StreamFacts, cf: &mut ChunkFacts) {
    if data.trim() == "[DONE]" {
        facts.done = true;
        return;
    }
    let part: VercelPart<'_> = match serde_json::from_str(data) {
        Ok(p) => p,
        // Not a part, but perhaps a server's error object (OpenAI, vLLM, TGI shapes).
        Err(e) => match error_shape("message", data) {
            Some(m) => return facts.fail(ErrorKind::StreamError, m),
            None => return decode_error(facts, offset, "JSON in SSE event", &e),
        },
    };
    match part.kind.as_ref() {
        "text-delta" if non_empty(&part.delta) => {
            facts.content(cf, part.delta.as_deref().unwrap_or_default());
        }
        "reasoning-delta" if non_empty(&part.delta) => cf.reasoning = true,
        // A tool call's input starting or streaming (AI SDK 5 parts).
        "tool-input-start" | "tool-input-available" => cf.tool_call = true,
        "tool-input-delta" if non_empty(&part.input_text_delta) => cf.tool_call = true,
        "error" => facts.fail(
            ErrorKind::StreamError,
            bounded(part.error_text.as_deref().unwrap_or("error part")),
        ),
        "finish" => facts.done = true,
        // Not a known part: a server's error object (vLLM's carries a `type` too)?
        _ => {
            if let Some(m) = error_shape("message", data) {
                facts.fail(ErrorKind::StreamError, m);
            }
        }
    }
}

/// Custom SSE: JSON data with the content at a JSON pointer.
pub(crate) fn sse_json(
    pointer: &str,
    data: &str,
    offset: u64,
    facts: &mut StreamFacts,
    cf: &mut ChunkFacts,
) {
    if data.trim() == "[DONE]" {
        facts.done = true;
        return;
    }
    let v: Value = match serde_json::from_str(data) {
        Ok(v) => v,
        Err(e) => return decode_error(facts, offset, "JSON in SSE event", &e),
    };
    if let Some(m) = error_in("message", Some(&v), data) {
        return facts.fail(ErrorKind::StreamError, m);
    }
    if let Some(u) = v.get("usage").and_then(|u| Usage::deserialize(u).ok()) {
        u.apply(facts);
    }
    if let Some(t) = v.pointer(pointer).and_then(Value::as_str)
        && !t.is_empty()
    {
        facts.content(cf, t);
    }
}

#[derive(Deserialize)]
struct OllamaLine<'a> {
    #[serde(default, borrow)]
    message: Option<OllamaMessage<'a>>,
    #[serde(default, borrow)]
    response: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct OllamaMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
}

/// One Ollama NDJSON line (`/api/chat` or `/api/generate`).
pub(crate) fn ollama(line: &[u8], offset: u64, facts: &mut StreamFacts, cf: &mut ChunkFacts) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    cf.events += 1;
    // vLLM's `{"object": "error", …}` as a line: the server's refusal.
    if let Ok(text) = std::str::from_utf8(line)
        && text.contains("\"object\"")
        && let Some(m) = error_shape("message", text)
    {
        return facts.fail(ErrorKind::StreamError, m);
    }
    let l: OllamaLine<'_> = match serde_json::from_slice(line) {
        Ok(l) => l,
        Err(e) => return decode_error(facts, offset, "JSON line", &e),
    };
    if let Some(e) = l.error.as_ref().filter(|e| !e.is_null()) {
        return facts.fail(ErrorKind::StreamError, error_text(e));
    }
    for t in [
        l.response.as_deref(),
        l.message.as_ref().and_then(|m| m.content.as_deref()),
    ]
    .into_iter()
    .flatten()
    .filter(|t| !t.is_empty())
    {
        facts.content(cf, t);
    }
    if l.message
        .as_ref()
        .and_then(|m| m.tool_calls.as_ref())
        .is_some_and(|t| !t.is_empty())
    {
        cf.tool_call = true;
    }
    if non_empty(&l.thinking) || l.message.as_ref().is_some_and(|m| non_empty(&m.thinking)) {
        cf.reasoning = true;
    }
    if let Some(n) = l.eval_count {
        facts.output_tokens = Some(n);
    }
    if let Some(n) = l.prompt_eval_count {
        facts.input_tokens = Some(n);
    }
    if l.done {
        facts.done = true;
    }
}

/// The message of an error event in any of the shapes servers send, if
/// `data` (of an SSE event named `event`) is one: an `error` event
/// (Anthropic, and SSE generally), `{"error": {…}}` (OpenAI),
/// `{"object": "error", "message": …}` (vLLM) or
/// `{"error": "…", "error_type": …}` (TGI).
/// The string or number at JSON pointer `p` in one event's data, bounded
/// in length; `None` when the data is not JSON or has nothing there.
pub(crate) fn route_at(p: &str, data: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(data).ok()?;
    match v.pointer(p)? {
        Value::String(s) if !s.is_empty() => Some(bounded(s)),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub(crate) fn error_shape(event: &str, data: &str) -> Option<String> {
    let v: Option<Value> = serde_json::from_str(data).ok();
    error_in(event, v.as_ref(), data)
}

/// [`error_shape`] on an already parsed event (`None`: not JSON).
fn error_in(event: &str, v: Option<&Value>, data: &str) -> Option<String> {
    let inner = v.and_then(|v| v.get("error")).filter(|e| !e.is_null());
    if event == "error" {
        return Some(match (inner, v) {
            (Some(e), _) => error_text(e),
            (None, Some(v)) => error_text(v),
            (None, None) => bounded(data),
        });
    }
    let v = v?;
    if v.get("object").and_then(Value::as_str) == Some("error") {
        return Some(error_text(v));
    }
    let e = inner?;
    match (e, v.get("error_type").and_then(Value::as_str)) {
        (Value::String(m), Some(t)) => Some(bounded(&format!("{m} ({t})"))),
        _ => Some(error_text(e)),
    }
}

/// Which SSE format the first event of an `auto` stream shows, if it can tell.
pub(crate) fn detect_sse(event: &str, data: &str) -> Option<super::SseKind> {
    use super::SseKind;
    const ANTHROPIC: [&str; 7] = [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    ];
    if ANTHROPIC.contains(&event) {
        return Some(SseKind::Anthropic);
    }
    let v: Value = serde_json::from_str(data).ok()?;
    if let Some(t) = v.get("type").and_then(Value::as_str) {
        if ANTHROPIC.contains(&t) || (t == "error" && v.get("error").is_some()) {
            return Some(SseKind::Anthropic);
        }
        // Responses events are `response.*`; its `error` event carries a
        // `sequence_number` (and `message` at the top, not in `error`).
        if super::responses::is_responses_type(t)
            || (t == "error" && v.get("sequence_number").is_some())
        {
            return Some(SseKind::Responses);
        }
        return Some(SseKind::VercelUi);
    }
    match v.get("object").and_then(Value::as_str) {
        Some("chat.completion.chunk") => return Some(SseKind::OpenAi),
        Some("text_completion") => return Some(SseKind::OpenAi),
        _ => {}
    }
    if v.get("choices").is_some() || v.get("error").is_some() {
        return Some(SseKind::OpenAi);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: impl Fn(&mut StreamFacts, &mut ChunkFacts)) -> (StreamFacts, ChunkFacts) {
        let mut facts = StreamFacts::default();
        let mut cf = ChunkFacts::default();
        f(&mut facts, &mut cf);
        (facts, cf)
    }

    #[test]
    fn openai_role_only_and_empty_deltas_are_not_content() {
        let (_, cf) = run(|f, c| {
            openai(
                r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
                0,
                f,
                c,
            )
        });
        assert!(!cf.content && !cf.reasoning);
        let (_, cf) = run(|f, c| openai(r#"{"choices":[{"delta":{"content":null}}]}"#, 0, f, c));
        assert!(!cf.content);
        let (_, cf) = run(|f, c| {
            openai(
                r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.reasoning && !cf.content);
        let (_, cf) = run(|f, c| openai(r#"{"choices":[{"delta":{"reasoning":"hm"}}]}"#, 0, f, c));
        assert!(cf.reasoning && !cf.content);
        let (_, cf) =
            run(|f, c| openai(r#"{"choices":[{"delta":{"content":"Hi \"x\""}}]}"#, 0, f, c));
        assert!(cf.content);
        let (_, cf) = run(|f, c| openai(r#"{"choices":[{"text":"Hi","index":0}]}"#, 0, f, c));
        assert!(cf.content);
    }

    #[test]
    fn openai_usage_provider_errors_and_done() {
        let (f, _) = run(|f, c| {
            openai(
                r#"{"provider":"steady","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"cost":0.0012}}"#,
                0,
                f,
                c,
            )
        });
        assert_eq!(
            (f.output_tokens, f.input_tokens, f.cost_usd),
            (Some(9), Some(5), Some(0.0012))
        );
        assert_eq!(f.provider.as_deref(), Some("steady"));
        let (f, _) = run(|f, c| {
            openai(
                r#"{"error":{"message":"Rate limited","code":429}}"#,
                0,
                f,
                c,
            )
        });
        assert_eq!(f.error.as_ref().map(|e| e.0), Some(ErrorKind::StreamError));
        assert!(f.error.unwrap().1.contains("Rate limited"));
        let (f, _) = run(|f, c| openai(r#"{"object":"error","message":"boom"}"#, 0, f, c));
        assert_eq!(f.error.unwrap().1, "boom");
        let (f, _) = run(|f, c| openai("[DONE]", 0, f, c));
        assert!(f.done);
        let (f, _) = run(|f, c| openai("{not json", 42, f, c));
        let (k, m) = f.error.unwrap();
        assert_eq!(k, ErrorKind::Decode);
        assert!(m.contains("byte offset 42"), "{m}");
    }

    /// Before the fix a tool-call delta was a content token (Chat
    /// Completions `delta.tool_calls`, Anthropic `input_json_delta`), so
    /// a turn that called a tool had a TTFT and no tool-call stamp.
    #[test]
    fn tool_call_deltas_are_tool_calls_not_content() {
        let (_, cf) = run(|f, c| {
            openai(
                r#"{"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.tool_call && !cf.content, "{cf:?}");
        let (_, cf) = run(|f, c| openai(r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#, 0, f, c));
        assert!(!cf.tool_call && !cf.content);
        let (_, cf) = run(|f, c| {
            anthropic(
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.tool_call && !cf.content, "{cf:?}");
        let (_, cf) = run(|f, c| {
            anthropic(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.tool_call && !cf.content, "{cf:?}");
        let (_, cf) = run(|f, c| {
            anthropic(
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                0,
                f,
                c,
            )
        });
        assert!(!cf.tool_call && !cf.content);
        let (_, cf) = run(|f, c| {
            ollama(
                br#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{}}}]},"done":false}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.tool_call && !cf.content, "{cf:?}");
        let (_, cf) = run(|f, c| {
            vercel_ui(
                r#"{"type":"tool-input-start","toolCallId":"t","toolName":"f"}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.tool_call && !cf.content);
    }

    #[test]
    fn anthropic_events() {
        let (f, _) = run(|f, c| {
            anthropic(
                "message_start",
                r#"{"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}"#,
                0,
                f,
                c,
            )
        });
        assert_eq!(f.input_tokens, Some(12));
        let (_, cf) = run(|f, c| {
            anthropic(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"let me"}}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.reasoning && !cf.content);
        let (_, cf) = run(|f, c| {
            anthropic(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.content);
        let (f, _) = run(|f, c| {
            anthropic(
                "message_delta",
                r#"{"type":"message_delta","usage":{"output_tokens":30}}"#,
                0,
                f,
                c,
            )
        });
        assert_eq!(f.output_tokens, Some(30));
        let (f, _) = run(|f, c| anthropic("message_stop", r#"{"type":"message_stop"}"#, 0, f, c));
        assert!(f.done);
        let (f, _) = run(|f, c| {
            anthropic(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                0,
                f,
                c,
            )
        });
        assert_eq!(
            f.error.unwrap(),
            (
                ErrorKind::StreamError,
                "Overloaded (overloaded_error)".into()
            )
        );
    }

    #[test]
    fn vercel_ollama_and_pointer() {
        let (_, cf) =
            run(|f, c| vercel_ui(r#"{"type":"text-delta","id":"0","delta":"Hel"}"#, 0, f, c));
        assert!(cf.content);
        let (_, cf) = run(|f, c| vercel_ui(r#"{"type":"text-start","id":"0"}"#, 0, f, c));
        assert!(!cf.content);
        let (f, _) = run(|f, c| vercel_ui(r#"{"type":"error","errorText":"nope"}"#, 0, f, c));
        assert_eq!(f.error.unwrap().0, ErrorKind::StreamError);
        let (f, cf) = run(|f, c| {
            ollama(
                br#"{"message":{"role":"assistant","content":"Hi"},"done":false}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.content && !f.done && cf.events == 1);
        let (f, cf) = run(|f, c| {
            ollama(
                br#"{"message":{"content":"","thinking":"hmm"},"done":false}"#,
                0,
                f,
                c,
            )
        });
        assert!(cf.reasoning && !cf.content && !f.done);
        let (f, _) = run(|f, c| {
            ollama(
                br#"{"done":true,"eval_count":17,"prompt_eval_count":4}"#,
                0,
                f,
                c,
            )
        });
        assert!(f.done);
        assert_eq!(f.output_tokens, Some(17));
        let (f, _) = run(|f, c| ollama(br#"{"error":"model not found"}"#, 0, f, c));
        assert_eq!(f.error.unwrap().1, "model not found");
        let (_, cf) = run(|f, c| sse_json("/answer/text", r#"{"answer":{"text":"yes"}}"#, 0, f, c));
        assert!(cf.content);
        let (_, cf) = run(|f, c| sse_json("/answer/text", r#"{"answer":{"text":""}}"#, 0, f, c));
        assert!(!cf.content);
    }

    #[test]
    fn detection() {
        use super::super::SseKind;
        assert_eq!(detect_sse("message_start", "{}"), Some(SseKind::Anthropic));
        assert_eq!(
            detect_sse(
                "message",
                r#"{"object":"chat.completion.chunk","choices":[]}"#
            ),
            Some(SseKind::OpenAi)
        );
        assert_eq!(
            detect_sse("message", r#"{"type":"start"}"#),
            Some(SseKind::VercelUi)
        );
        assert_eq!(
            detect_sse("message", r#"{"type":"response.created","response":{}}"#),
            Some(SseKind::Responses)
        );
        assert_eq!(
            detect_sse("response.created", r#"{"type":"response.created"}"#),
            Some(SseKind::Responses)
        );
        assert_eq!(detect_sse("message", r#"{"hello":1}"#), None);
        assert_eq!(detect_sse("message", "plain"), None);
    }

    #[test]
    fn a_route_named_in_the_stream_is_read_once_from_the_first_event_that_has_it() {
        use crate::decode::Decoder;
        use firsttoken_plan::StreamFormat;
        let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
            "data: {\"meta\":{\"route\":\"docs\"},\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
            "data: {\"meta\":{\"route\":\"chat\"},\"choices\":[{\"delta\":{\"content\":\"!\"}}]}\n\n",
            "data: [DONE]\n\n",
        );
        let mut d = Decoder::new(&StreamFormat::Auto, Some("text/event-stream"), false)
            .with_route_field(Some("/meta/route".into()));
        // Split mid-event: the route still comes from the first event with it.
        let (a, b) = body.as_bytes().split_at(70);
        d.feed(a);
        d.feed(b);
        assert!(d.finish().is_ok());
        assert_eq!(d.facts().route.as_deref(), Some("docs"));

        let mut lines = Decoder::new(&StreamFormat::Ollama, None, false)
            .with_route_field(Some("/route".into()));
        lines.feed(
            b"{\"route\":7,\"message\":{\"content\":\"x\"},\"done\":false}\n{\"done\":true}\n",
        );
        assert_eq!(lines.facts().route.as_deref(), Some("7"));

        // Without a pointer nothing is parsed for it.
        let mut plain = Decoder::new(&StreamFormat::Auto, Some("text/event-stream"), false);
        plain.feed(body.as_bytes());
        assert_eq!(plain.facts().route, None);
        assert_eq!(route_at("/route", b"not json"), None);
        assert_eq!(route_at("/route", br#"{"route":""}"#), None);
        assert_eq!(route_at("/route", br#"{"route":{"a":1}}"#), None);
    }
}

//! `POST /v1/responses` and answers with a tool call, over real sockets on
//! loopback: the Responses event sequence, its schedule and truth record,
//! routing and faults shared with chat completions, and tool calls on both
//! endpoints.

mod common;

use std::time::Duration;

use common::{DEADLINE, Emu, Reply, chat_body, post, start, start_with};
use firsttoken_emulator::Settings;
use serde_json::{Value, json};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn settings(ttft: u64, itl: u64, tokens: u32) -> Settings {
    Settings {
        ttft: ms(ttft),
        itl: ms(itl),
        tokens,
        ..Settings::default()
    }
}

async fn responses(emu: &Emu, headers: &[(&str, &str)], body: Value) -> Reply {
    post(emu.addr, "/v1/responses", headers, &body, DEADLINE).await
}

fn body(stream: bool) -> Value {
    json!({"model": "m", "stream": stream, "input": "say something short"})
}

fn types(r: &Reply) -> Vec<String> {
    r.chunks()
        .iter()
        .map(|c| c["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// (time, event) of every event of type `t`.
fn of_type(r: &Reply, t: &str) -> Vec<(Duration, Value)> {
    r.events
        .iter()
        .filter_map(|(at, d)| {
            let v: Value = serde_json::from_str(d).ok()?;
            (v["type"] == t).then_some((*at, v))
        })
        .collect()
}

#[tokio::test]
async fn a_streamed_response_has_the_openai_event_sequence_schedule_and_truth() {
    let mut emu = start(settings(150, 30, 4)).await;
    let r = responses(&emu, &[], body(true)).await;
    assert_eq!(r.status, 200);
    assert!(r.complete, "the body ends after response.completed");
    assert!(!r.done(), "no [DONE] on the Responses API");
    assert_eq!(
        types(&r),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let seqs: Vec<u64> = r
        .chunks()
        .iter()
        .map(|c| c["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..12).collect::<Vec<u64>>());
    let created = of_type(&r, "response.created")[0].0;
    let deltas = of_type(&r, "response.output_text.delta");
    let first = deltas[0].0;
    assert!(
        created < ms(100),
        "response.created goes out at once: {created:?}"
    );
    assert!(
        first >= ms(150),
        "the first delta waits for the TTFT: {first:?}"
    );
    assert!(deltas[3].0 - first >= ms(85), "three gaps of 30 ms");
    let text: String = deltas
        .iter()
        .map(|(_, v)| v["delta"].as_str().unwrap())
        .collect();
    let done = &of_type(&r, "response.completed")[0].1;
    assert_eq!(done["response"]["output"][0]["content"][0]["text"], text);
    let usage = &done["response"]["usage"];
    assert_eq!(usage["output_tokens"], 4);
    assert_eq!(usage["input_tokens"], 3, "three words of input");
    let truth = emu.truth_of(&r.id()).await;
    assert_eq!(truth.path, "/v1/responses");
    assert!(truth.completed && truth.tokens_sent == 4);
    assert!(truth.ttft_ms.unwrap() >= 150.0);
}

#[tokio::test]
async fn routing_faults_and_limits_are_the_chat_endpoints() {
    let toml = r#"
tokens_min = 3
tokens_max = 3
[[provider]]
name = "a"
ttft_median_ms = 20
tokens_per_s = 500
[[provider]]
name = "b"
ttft_median_ms = 20
tokens_per_s = 500
"#;
    let mut emu = start_with(toml, 3).await;
    // An injected 429 on the first provider falls back to the second.
    let r = responses(&emu, &[("x-emulator-fault", "429")], body(true)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-provider"), Some("b"));
    let done = &of_type(&r, "response.completed")[0].1;
    assert_eq!(done["response"]["provider"], "b");
    let truth = emu.truth_of(&r.id()).await;
    assert_eq!(truth.attempts.len(), 2);

    // A mid-stream error is response.failed, and the stream ends there.
    let r = responses(
        &emu,
        &[
            ("x-emulator-fault", "stream-error"),
            ("x-emulator-fault-after-tokens", "1"),
        ],
        body(true),
    )
    .await;
    let t = types(&r);
    assert_eq!(
        t.last().map(String::as_str),
        Some("response.failed"),
        "{t:?}"
    );
    assert_eq!(of_type(&r, "response.output_text.delta").len(), 1);
    assert!(!t.iter().any(|t| t == "response.completed"));

    // max_output_tokens caps the answer.
    let mut b = body(true);
    b["max_output_tokens"] = json!(2);
    let r = responses(&emu, &[], b).await;
    assert_eq!(of_type(&r, "response.output_text.delta").len(), 2);

    // Without stream: one response object.
    let r = responses(&emu, &[], body(false)).await;
    let v = r.json();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["usage"]["output_tokens"], 3);
}

#[tokio::test]
async fn a_tool_call_answer_on_both_endpoints() {
    let emu = start(settings(60, 10, 5)).await;
    // Chat Completions, asked by header.
    let r = emu
        .chat(
            &[("x-emulator-tool-call", "get_weather")],
            chat_body("hi", true, None),
        )
        .await;
    assert!(r.done());
    assert!(r.ttft().is_none(), "no text content at all");
    let chunks = r.chunks();
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    assert_eq!(calls.len(), 5);
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert!(
        calls[0]["id"]
            .as_str()
            .is_some_and(|i| i.starts_with("call_"))
    );
    assert!(
        calls[1].get("id").is_none(),
        "only the first names the call"
    );
    let args: String = calls
        .iter()
        .map(|c| c["function"]["arguments"].as_str().unwrap())
        .collect();
    let parsed: Value = serde_json::from_str(&args).expect("arguments are JSON");
    assert!(parsed["text"].as_str().is_some_and(|t| !t.is_empty()));
    let finish = chunks
        .iter()
        .find_map(|c| c["choices"][0]["finish_reason"].as_str())
        .unwrap();
    assert_eq!(finish, "tool_calls");

    // Responses, asked by tool_choice "required": the first tool is called.
    let mut b = body(true);
    b["tools"] = json!([{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]);
    b["tool_choice"] = json!("required");
    let r = responses(&emu, &[], b).await;
    let t = types(&r);
    assert!(
        !t.iter().any(|t| t == "response.output_text.delta"),
        "{t:?}"
    );
    let added = &of_type(&r, "response.output_item.added")[0];
    assert_eq!(added.1["item"]["type"], "function_call");
    assert_eq!(added.1["item"]["name"], "lookup");
    let deltas = of_type(&r, "response.function_call_arguments.delta");
    assert_eq!(deltas.len(), 5);
    assert!(
        deltas[0].0 >= ms(60) && added.0 == deltas[0].0,
        "the call opens with its first fragment, at the TTFT"
    );
    let done = &of_type(&r, "response.completed")[0].1;
    let item = &done["response"]["output"][0];
    assert_eq!(item["type"], "function_call");
    let args: String = deltas
        .iter()
        .map(|(_, v)| v["delta"].as_str().unwrap())
        .collect();
    assert_eq!(item["arguments"], args);

    // The legacy completions endpoint has no tool calls: refused, not ignored.
    let r = post(
        emu.addr,
        "/v1/completions",
        &[("x-emulator-tool-call", "f")],
        &json!({"model": "m", "prompt": "hi", "stream": true}),
        DEADLINE,
    )
    .await;
    assert_eq!(r.status, 400);
}

//! The OpenAI Responses API stream end to end: a scripted HTTP/1.1 server
//! replays its events and `run_probe` must stamp the first reasoning and
//! text deltas, read usage from the terminal event, and tell a failed,
//! errored, incomplete or cut stream apart, with `--format responses` and
//! with `auto`.

mod common;

use std::time::Duration;

use common::*;

const SSE: &str = "text/event-stream; charset=utf-8";
fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One Responses event as OpenAI sends it: `event:` named as its `type`.
fn ev(kind: &str, rest: &str) -> Vec<u8> {
    let comma = if rest.is_empty() { "" } else { "," };
    sse_named(kind, &format!(r#"{{"type":"{kind}"{comma}{rest}}}"#))
}

fn created() -> Vec<u8> {
    ev(
        "response.created",
        r#""sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}"#,
    )
}

fn text_delta(t: &str) -> Vec<u8> {
    ev(
        "response.output_text.delta",
        &format!(
            r#""item_id":"msg_1","output_index":1,"content_index":0,"delta":{}"#,
            serde_json::json!(t)
        ),
    )
}

fn completed(input: u64, output: u64) -> Vec<u8> {
    ev(
        "response.completed",
        &format!(
            r#""response":{{"id":"resp_1","status":"completed","usage":{{"input_tokens":{input},"output_tokens":{output},"total_tokens":{}}}}}"#,
            input + output
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_then_text_stamps_ttfr_then_ttft_and_usage_from_completed() {
    let chunks = vec![
        (ms(0), created()),
        (
            ms(0),
            ev(
                "response.output_item.added",
                r#""output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}"#,
            ),
        ),
        (
            ms(30),
            ev(
                "response.reasoning_summary_text.delta",
                r#""item_id":"rs_1","delta":"Thinking""#,
            ),
        ),
        (
            ms(10),
            ev("response.reasoning_text.delta", r#""delta":" more""#),
        ),
        (
            ms(0),
            ev(
                "response.output_item.added",
                r#""output_index":1,"item":{"id":"msg_1","type":"message","content":[]}"#,
            ),
        ),
        (ms(0), text_delta("")),
        (ms(30), text_delta("Hel")),
        (ms(30), text_delta("lo")),
        (ms(0), ev("response.output_text.done", r#""text":"Hello""#)),
        (ms(0), completed(5, 2)),
    ];
    let server = script_server(Reply::ok(SSE, chunks)).await;
    for f in ["responses", "auto"] {
        let s = probe_one(&server.url(), f).await;
        assert_ok(&s);
        assert_phase_order(&s);
        let (ttfe, ttfr, ttft, last) = (
            s.ttfe_ms.unwrap(),
            s.ttfr_ms.unwrap(),
            s.ttft_ms.unwrap(),
            s.last_token_ms.unwrap(),
        );
        assert!(
            ttfe < ttfr,
            "{f}: response.created is the first event: {s:#?}"
        );
        assert!(
            ttft - ttfr >= 35.0,
            "{f}: the empty text delta is not the first token; the first text comes 40 ms after the first reasoning: {s:#?}"
        );
        assert!(last - ttft >= 25.0, "{f}: {s:#?}");
        assert_eq!(s.content_chunks, 2, "{f}: {s:#?}");
        assert_eq!((s.input_tokens, s.output_tokens), (Some(5), Some(2)), "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_bridge_shape_without_event_lines_and_with_done_is_read() {
    // LiteLLM's bridged stream: no `event:` lines, an extra `model`, and a
    // trailing `data: [DONE]` (WIRE-NOTES.md).
    let chunks = at_once([
        sse(
            r#"{"type":"response.created","response":{"id":"r","status":"in_progress"},"sequence_number":0,"model":"emulated-bridge"}"#,
        ),
        sse(
            r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"The ","sequence_number":4,"model":"emulated-bridge"}"#,
        ),
        sse(
            r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":1,"output_tokens":8,"total_tokens":9,"cost":0.000033}},"sequence_number":15,"model":"emulated-bridge"}"#,
        ),
        sse("[DONE]"),
    ]);
    let server = script_server(Reply::ok(SSE, chunks)).await;
    for f in ["responses", "auto"] {
        let s = probe_one(&server.url(), f).await;
        assert_ok(&s);
        assert_eq!(s.output_tokens, Some(8), "{f}");
        assert_eq!(s.cost_usd, Some(0.000033), "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_error_events_are_stream_errors_and_a_cut_is_truncated() {
    let cases = [
        (
            at_once([
                created(),
                text_delta("A"),
                ev(
                    "response.failed",
                    r#""response":{"status":"failed","error":{"code":"server_error","message":"engine fell over"}}"#,
                ),
            ]),
            "stream_error",
            "engine fell over",
        ),
        (
            at_once([
                created(),
                ev(
                    "error",
                    r#""code":"rate_limit_exceeded","message":"slow down","param":null,"sequence_number":1"#,
                ),
            ]),
            "stream_error",
            "slow down",
        ),
        (
            at_once([created(), text_delta("A")]),
            "truncated",
            "response.completed",
        ),
    ];
    for (chunks, kind, text) in cases {
        let server = script_server(Reply::ok(SSE, chunks)).await;
        for f in ["responses", "auto"] {
            let s = probe_one(&server.url(), f).await;
            let m = assert_failed(&s, kind);
            assert!(m.contains(text), "{f}: {m}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incomplete_response_ends_the_stream_cleanly() {
    let chunks = at_once([
        created(),
        text_delta("partial"),
        ev(
            "response.incomplete",
            r#""response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":2,"output_tokens":16}}"#,
        ),
    ]);
    let server = script_server(Reply::ok(SSE, chunks)).await;
    for f in ["responses", "auto"] {
        let s = probe_one(&server.url(), f).await;
        assert_ok(&s);
        assert_eq!(s.output_tokens, Some(16), "{f}");
        assert!(s.ttft_ms.is_some(), "{f}");
        assert_eq!(
            s.incomplete_reason.as_deref(),
            Some("max_output_tokens"),
            "{f}"
        );
    }
}

//! Tool calls in every format that has them, end to end: a tool-call delta
//! is stamped as the first tool call (`ttftc_ms`), never as a content
//! token; the first output is whichever came first; a turn that only calls
//! tools is not `no_content`.
//!
//! Before this change a Chat Completions `delta.tool_calls` or an
//! Anthropic `input_json_delta` was counted as content (a TTFT on a tool
//! call) and a Responses function call as nothing (`no_content`).

mod common;

use std::time::Duration;

use common::*;
use firsttoken_record::FirstOutput;

const SSE: &str = "text/event-stream; charset=utf-8";
fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn oa_tool_open() -> Vec<u8> {
    oa_delta(
        r#"{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}"#,
    )
}

fn oa_tool_args(a: &str) -> Vec<u8> {
    oa_delta(&format!(
        r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":{}}}}}]}}"#,
        serde_json::json!(a)
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_completions_turn_that_only_calls_a_tool_is_not_no_content() {
    let chunks = vec![
        (ms(0), oa_role()),
        (ms(40), oa_tool_open()),
        (ms(20), oa_tool_args("{\"city\":")),
        (ms(20), oa_tool_args("\"Oslo\"}")),
        (ms(0), oa_usage(9, 12)),
        (ms(0), oa_done()),
    ];
    let server = script_server(Reply::ok(SSE, chunks)).await;
    for f in ["openai-chat", "auto"] {
        let s = probe_one(&server.url(), f).await;
        assert_ok(&s);
        assert_phase_order(&s);
        assert!(s.ttft_ms.is_none(), "{f}: no text, no TTFT: {s:#?}");
        assert_eq!(s.content_chunks, 0, "{f}");
        let (ttfe, ttftc) = (s.ttfe_ms.unwrap(), s.ttftc_ms.unwrap());
        assert!(
            ttftc - ttfe >= 35.0,
            "{f}: the role chunk is not the tool call: {s:#?}"
        );
        assert_eq!(s.first_output, Some(FirstOutput::ToolCall), "{f}");
        assert_eq!(s.first_output_ms, Some(ttftc), "{f}");
        assert_eq!(s.output_tokens, Some(12), "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_tool_use_before_text_makes_the_tool_call_the_first_output() {
    let ev = |name: &str, data: &str| sse_named(name, data);
    let chunks = vec![
        (
            ms(0),
            ev(
                "message_start",
                r#"{"type":"message_start","message":{"usage":{"input_tokens":7,"output_tokens":1}}}"#,
            ),
        ),
        (
            ms(30),
            ev(
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}}"#,
            ),
        ),
        (
            ms(10),
            ev(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}"#,
            ),
        ),
        (
            ms(0),
            ev(
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
        ),
        (
            ms(40),
            ev(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Done"}}"#,
            ),
        ),
        (
            ms(0),
            ev(
                "message_delta",
                r#"{"type":"message_delta","usage":{"output_tokens":20}}"#,
            ),
        ),
        (ms(0), ev("message_stop", r#"{"type":"message_stop"}"#)),
    ];
    let server = script_server(Reply::ok(SSE, chunks)).await;
    for f in ["anthropic", "auto"] {
        let s = probe_one(&server.url(), f).await;
        assert_ok(&s);
        let (ttftc, ttft) = (s.ttftc_ms.unwrap(), s.ttft_ms.unwrap());
        assert!(
            ttft - ttftc >= 35.0,
            "{f}: TTFT is the text, 50 ms after the tool_use block: {s:#?}"
        );
        assert_eq!(s.content_chunks, 1, "{f}: only the text delta: {s:#?}");
        assert_eq!(s.first_output, Some(FirstOutput::ToolCall), "{f}");
        assert_eq!(s.first_output_ms, Some(ttftc), "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_text_before_a_function_call_makes_text_the_first_output() {
    let ev = |kind: &str, rest: &str| sse_named(kind, &format!(r#"{{"type":"{kind}",{rest}}}"#));
    let chunks = vec![
        (
            ms(0),
            ev(
                "response.created",
                r#""response":{"id":"r","status":"in_progress"}"#,
            ),
        ),
        (
            ms(30),
            ev("response.output_text.delta", r#""delta":"Let me check.""#),
        ),
        (
            ms(40),
            ev(
                "response.output_item.added",
                r#""output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"get_weather","arguments":""}"#,
            ),
        ),
        (
            ms(10),
            ev(
                "response.function_call_arguments.delta",
                r#""item_id":"fc_1","delta":"{\"city\":\"Oslo\"}""#,
            ),
        ),
        (
            ms(0),
            ev(
                "response.completed",
                r#""response":{"status":"completed","usage":{"input_tokens":4,"output_tokens":9}}"#,
            ),
        ),
    ];
    let server = script_server(Reply::ok(SSE, chunks)).await;
    for f in ["responses", "auto"] {
        let s = probe_one(&server.url(), f).await;
        assert_ok(&s);
        let (ttft, ttftc) = (s.ttft_ms.unwrap(), s.ttftc_ms.unwrap());
        assert!(ttftc - ttft >= 35.0, "{f}: {s:#?}");
        assert_eq!(s.first_output, Some(FirstOutput::Text), "{f}");
        assert_eq!(s.first_output_ms, Some(ttft), "{f}");
        assert_eq!(s.content_chunks, 1, "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_turn_with_only_a_function_call_succeeds_and_an_empty_one_does_not() {
    let ev = |kind: &str, rest: &str| sse_named(kind, &format!(r#"{{"type":"{kind}",{rest}}}"#));
    let only_tool = at_once([
        ev("response.created", r#""response":{"id":"r"}"#),
        ev(
            "response.output_item.added",
            r#""item":{"type":"function_call","name":"f","arguments":""}"#,
        ),
        ev("response.completed", r#""response":{"status":"completed"}"#),
    ]);
    let server = script_server(Reply::ok(SSE, only_tool)).await;
    let s = probe_one(&server.url(), "responses").await;
    assert_ok(&s);
    assert_eq!(s.first_output, Some(FirstOutput::ToolCall));
    assert!(s.ttft_ms.is_none());

    let empty = at_once([
        ev("response.created", r#""response":{"id":"r"}"#),
        ev("response.completed", r#""response":{"status":"completed"}"#),
    ]);
    let server = script_server(Reply::ok(SSE, empty)).await;
    let s = probe_one(&server.url(), "responses").await;
    assert_failed(&s, "no_content");
    assert!(s.first_output.is_none() && s.first_output_ms.is_none());
}

/// The emulator's `/v1/responses`, text and tool-call answers, against its
/// truth log: the client's first text token (or first tool call) comes no
/// earlier than the emulator handed it over, and within 50 ms of that
/// (the bound `accuracy.rs` uses for one sample under load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulators_responses_stream_against_its_truth() {
    use firsttoken_emulator::{Settings, TruthLog};
    use firsttoken_plan::{ConnectionMode, StreamFormat};
    use http::{HeaderName, HeaderValue};
    let (log, truth) = TruthLog::in_memory();
    let emu = emulator(
        Settings {
            ttft: ms(120),
            itl: ms(10),
            tokens: 4,
            truth: log,
            ..Settings::default()
        },
        None,
    )
    .await;
    let url = format!("http://{}/v1/responses", emu.addr);
    let body = r#"{"model":"m","stream":true,"input":"hi there"}"#;
    for tool in [None, Some("get_weather")] {
        let mut s = spec(&url);
        s.request.body = Some(body.as_bytes().to_vec().into());
        if let Some(name) = tool {
            s.request.headers.push((
                HeaderName::from_static("x-emulator-tool-call"),
                HeaderValue::from_static(name),
            ));
        }
        s.format = StreamFormat::Responses;
        s.mode = ConnectionMode::Warm;
        s.requests = 3;
        let samples = probe(s).await;
        let records: Vec<_> = samples
            .iter()
            .map(|_| truth.recv_timeout(ms(5000)).expect("a truth record"))
            .collect();
        for s in counted(&samples) {
            assert_ok(s);
            let id = s.request_id.as_deref().expect("x-request-id");
            let t = records
                .iter()
                .find(|r| r.request_id == id)
                .unwrap_or_else(|| panic!("no truth for {id}"));
            assert_eq!(t.path, "/v1/responses");
            let truth_ttft = t.ttft_ms.expect("a first token was sent");
            let (first, kind) = match tool {
                None => (s.ttft_ms, FirstOutput::Text),
                Some(_) => (s.ttftc_ms, FirstOutput::ToolCall),
            };
            let first = first.unwrap_or_else(|| panic!("{tool:?}: {s:#?}"));
            let overhead = first - truth_ttft;
            assert!(
                (0.0..=50.0).contains(&overhead),
                "{tool:?}: client {first} ms vs emulator {truth_ttft} ms"
            );
            assert_eq!(s.first_output, Some(kind), "{s:#?}");
            assert_eq!(s.output_tokens, Some(4), "{s:#?}");
            assert_eq!(tool.is_some(), s.ttft_ms.is_none(), "{s:#?}");
        }
    }
}

//! Stream formats end to end: a scripted HTTP/1.1 server replays a byte
//! script (chunks with delays) and `run_probe` must find the first event,
//! the first reasoning and content token, usage and the end in it, with the
//! format named explicitly and with `auto`.

mod common;

use std::time::Duration;

use common::*;
use firsttoken_record::Sample;

const SSE: &str = "text/event-stream; charset=utf-8";
fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Probe a server replaying `reply` once per format name and return the samples.
async fn each_format(formats: &[&str], reply: Reply) -> Vec<(String, Sample)> {
    let server = script_server(reply).await;
    let mut out = Vec::new();
    for f in formats {
        out.push((f.to_string(), probe_one(&server.url(), f).await));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_chat_counts_content_usage_and_done() {
    let chunks = vec![
        (ms(0), oa_role()),
        (ms(30), oa_content("Hel")),
        (ms(30), oa_content("lo")),
        (ms(30), oa_content(" there")),
        (ms(10), oa_usage(4, 3)),
        (ms(0), oa_done()),
    ];
    for (f, s) in each_format(&["openai-chat", "auto"], Reply::ok(SSE, chunks)).await {
        assert_ok(&s);
        assert_phase_order(&s);
        assert_eq!(s.http_version.as_deref(), Some("HTTP/1.1"), "{f}");
        assert_eq!(s.content_chunks, 3, "{f}: {s:#?}");
        assert_eq!((s.output_tokens, s.input_tokens), (Some(3), Some(4)), "{f}");
        let (ttfe, ttft, last) = (
            s.ttfe_ms.unwrap(),
            s.ttft_ms.unwrap(),
            s.last_token_ms.unwrap(),
        );
        assert!(
            ttfe < ttft,
            "{f}: the role chunk is the first event, not the first token: {s:#?}"
        );
        assert!(
            last - ttft >= 30.0,
            "{f}: three tokens 30 ms apart (60 ms): {s:#?}"
        );
        assert!(s.ttfr_ms.is_none(), "{f}");
        assert!(
            s.itl_p50_ms.is_some() && s.tokens_per_s.is_some(),
            "{f}: {s:#?}"
        );
        assert!(
            s.request_id
                .as_deref()
                .is_some_and(|r| r.starts_with("script-")),
            "{f}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_completions_text_is_content() {
    let chunk = |t: &str| {
        sse(&format!(
            r#"{{"id":"c","object":"text_completion","choices":[{{"index":0,"text":"{t}","finish_reason":null}}]}}"#
        ))
    };
    let usage = sse(
        r#"{"id":"c","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}"#,
    );
    let chunks = vec![
        (ms(0), chunk("")),
        (ms(10), chunk("Once")),
        (ms(10), chunk(" upon")),
        (ms(0), usage),
        (ms(0), oa_done()),
    ];
    for (f, s) in each_format(&["openai-completions", "auto"], Reply::ok(SSE, chunks)).await {
        assert_ok(&s);
        assert_phase_order(&s);
        assert_eq!(
            s.content_chunks, 2,
            "{f}: an empty text is not content: {s:#?}"
        );
        assert_eq!(s.output_tokens, Some(2), "{f}");
        assert!(s.ttfe_ms.unwrap() < s.ttft_ms.unwrap(), "{f}: {s:#?}");
    }
}

fn anthropic_events(stop: bool) -> Vec<Chunk> {
    let mut v = vec![
        (
            ms(0),
            sse_named(
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","usage":{"input_tokens":12,"output_tokens":1}}}"#,
            ),
        ),
        (
            ms(0),
            sse_named(
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            ),
        ),
        (ms(0), sse_named("ping", r#"{"type":"ping"}"#)),
        (
            ms(20),
            sse_named(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}"#,
            ),
        ),
        (
            ms(0),
            sse_named(
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
        ),
        (
            ms(0),
            sse_named(
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            ),
        ),
        (
            ms(60),
            sse_named(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}}"#,
            ),
        ),
        (
            ms(20),
            sse_named(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" world"}}"#,
            ),
        ),
        (
            ms(0),
            sse_named(
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
        ),
        (
            ms(0),
            sse_named(
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}"#,
            ),
        ),
    ];
    if stop {
        v.push((
            ms(0),
            sse_named("message_stop", r#"{"type":"message_stop"}"#),
        ));
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_thinking_text_and_usage() {
    let reply = Reply::ok(SSE, anthropic_events(true));
    for (f, s) in each_format(&["anthropic", "auto"], reply).await {
        assert_ok(&s);
        assert_phase_order(&s);
        assert_eq!(s.content_chunks, 2, "{f}: {s:#?}");
        assert_eq!(
            (s.input_tokens, s.output_tokens),
            (Some(12), Some(7)),
            "{f}: message_delta usage wins"
        );
        let (ttfe, ttfr, ttft) = (s.ttfe_ms.unwrap(), s.ttfr_ms.unwrap(), s.ttft_ms.unwrap());
        assert!(
            ttfe < ttfr && ttfr < ttft,
            "{f}: message_start, thinking, then text: {s:#?}"
        );
        assert!(
            ttft - ttfr >= 20.0,
            "{f}: text came 60 ms after thinking: {s:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_ndjson_chat_and_generate() {
    let chat = vec![
        (ms(0), br#"{"model":"llama3","message":{"role":"assistant","content":"","thinking":"hmm"},"done":false}"#.to_vec()),
        (ms(0), b"\n".to_vec()),
        (ms(50), b"{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"done\":false}\n".to_vec()),
        (ms(10), b"{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"lo\"},\"done\":false}\n".to_vec()),
        (ms(0), b"{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"eval_count\":5,\"prompt_eval_count\":9}\n".to_vec()),
    ];
    let reply = Reply::ok("application/x-ndjson", chat);
    for (f, s) in each_format(&["ollama", "auto"], reply).await {
        assert_ok(&s);
        assert_phase_order(&s);
        assert_eq!(s.content_chunks, 2, "{f}: {s:#?}");
        assert_eq!((s.output_tokens, s.input_tokens), (Some(5), Some(9)), "{f}");
        let (ttfr, ttft) = (s.ttfr_ms.unwrap(), s.ttft_ms.unwrap());
        assert!(
            ttft - ttfr >= 20.0,
            "{f}: thinking line 50 ms before content: {s:#?}"
        );
    }
    // /api/generate streams `response`, and the last line may lack its newline.
    let generate = at_once([
        "{\"response\":\"Hi\",\"done\":false}\n{\"response\":\" you\",\"done\":false}\n",
        "{\"response\":\"\",\"done\":true,\"eval_count\":2}",
    ]);
    let reply = Reply::ok("application/x-ndjson", generate);
    for (f, s) in each_format(&["ndjson", "auto"], reply).await {
        assert_ok(&s);
        assert_eq!(
            s.content_chunks, 1,
            "{f}: both lines came in one chunk: {s:#?}"
        );
        assert_eq!(s.output_tokens, Some(2), "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_stream_every_chunk_is_content_and_no_usage() {
    let reply = Reply::ok(
        "text/plain; charset=utf-8",
        vec![(ms(0), b"Hello".to_vec()), (ms(50), b", world".to_vec())],
    );
    for (f, s) in each_format(&["text", "auto"], reply).await {
        assert_ok(&s);
        assert_phase_order(&s);
        assert_eq!(s.content_chunks, 2, "{f}: {s:#?}");
        assert_eq!(s.output_tokens, None, "{f}: no usage, no token count");
        assert_eq!(s.tokens_per_s, None, "{f}: never estimated");
        assert!(
            s.last_token_ms.unwrap() - s.ttft_ms.unwrap() >= 20.0,
            "{f}: {s:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vercel_ui_text_deltas_finish_and_done() {
    let parts = vec![
        (ms(0), sse(r#"{"type":"start","messageId":"m1"}"#)),
        (ms(0), sse(r#"{"type":"start-step"}"#)),
        (ms(0), sse(r#"{"type":"reasoning-start","id":"r"}"#)),
        (
            ms(10),
            sse(r#"{"type":"reasoning-delta","id":"r","delta":"hmm"}"#),
        ),
        (ms(0), sse(r#"{"type":"text-start","id":"t"}"#)),
        (ms(0), sse(r#"{"type":"text-delta","id":"t","delta":""}"#)),
        (
            ms(50),
            sse(r#"{"type":"text-delta","id":"t","delta":"Hi"}"#),
        ),
        (
            ms(10),
            sse(r#"{"type":"text-delta","id":"t","delta":" there"}"#),
        ),
        (ms(0), sse(r#"{"type":"text-end","id":"t"}"#)),
        (ms(0), sse(r#"{"type":"finish-step"}"#)),
        (ms(0), sse(r#"{"type":"finish"}"#)),
        (ms(0), oa_done()),
    ];
    let reply = Reply::ok("text/event-stream", parts).header("x-vercel-ai-ui-message-stream", "v1");
    for (f, s) in each_format(&["vercel-ui", "auto"], reply).await {
        assert_ok(&s);
        assert_phase_order(&s);
        assert_eq!(
            s.content_chunks, 2,
            "{f}: an empty text-delta is not content: {s:#?}"
        );
        assert_eq!(s.output_tokens, None, "{f}");
        assert!(
            s.ttfr_ms.unwrap() + 20.0 <= s.ttft_ms.unwrap(),
            "{f}: {s:#?}"
        );
    }
    // The `finish` part alone ends the stream, without [DONE].
    let reply = Reply::ok(
        SSE,
        at_once([
            sse(r#"{"type":"start"}"#),
            sse(r#"{"type":"text-delta","id":"t","delta":"x"}"#),
            sse(r#"{"type":"finish"}"#),
        ]),
    );
    for (f, s) in each_format(&["vercel-ui", "auto"], reply).await {
        assert_ok(&s);
        assert_eq!(s.content_chunks, 1, "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_json_pointer_finds_content_and_may_end_without_terminator() {
    let reply = Reply::ok(
        SSE,
        vec![
            (ms(0), sse(r#"{"token":{"text":""}}"#)),
            (ms(20), sse(r#"{"token":{"text":"Hi"}}"#)),
            (ms(10), sse(r#"{"token":{"text":" there"},"other":1}"#)),
            (
                ms(0),
                sse(r#"{"token":{"text":""},"usage":{"output_tokens":2}}"#),
            ),
        ],
    );
    let server = script_server(reply).await;
    let s = probe_one(&server.url(), "sse-json:/token/text").await;
    assert_ok(&s);
    assert_phase_order(&s);
    assert_eq!(s.content_chunks, 2, "{s:#?}");
    assert_eq!(s.output_tokens, Some(2));
    assert!(s.ttfe_ms.unwrap() < s.ttft_ms.unwrap(), "{s:#?}");
    // A pointer to nothing finds no content: the stream ended without an
    // answer, a failure of its own kind that names the pointer as a suspect.
    let s = probe_one(&server.url(), "sse-json:/missing").await;
    let m = assert_failed(&s, "no_content");
    assert!(m.contains("JSON pointer"), "{m}");
    assert_eq!((s.content_chunks, s.ttft_ms), (0, None), "{s:#?}");
    // `auto` cannot guess a custom shape and says what to do.
    let s = probe_one(&server.url(), "auto").await;
    let m = assert_failed(&s, "decode");
    assert!(m.contains("--format"), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_is_the_first_non_empty_content_not_the_role_chunk() {
    let reply = Reply::ok(
        SSE,
        vec![
            (ms(0), oa_role()),
            (ms(0), oa_delta(r#"{"content":""}"#)),
            (ms(0), oa_delta(r#"{"content":null}"#)),
            (ms(100), oa_content("A")),
            (ms(0), oa_done()),
        ],
    );
    for (f, s) in each_format(&["openai-chat", "auto"], reply).await {
        assert_ok(&s);
        assert_phase_order(&s);
        let (ttfe, ttft) = (s.ttfe_ms.unwrap(), s.ttft_ms.unwrap());
        assert!(
            ttft >= 90.0,
            "{f}: content came ~100 ms after the role chunk: {s:#?}"
        );
        assert!(
            ttfe < 50.0,
            "{f}: the role chunk is an event at once: {s:#?}"
        );
        assert_eq!(s.content_chunks, 1, "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_comments_do_not_count_as_events() {
    let reply = Reply::ok(
        SSE,
        vec![
            (ms(0), b": OPENROUTER PROCESSING\n\n".to_vec()),
            (ms(50), b": OPENROUTER PROCESSING\n\n".to_vec()),
            (ms(50), oa_content("A")),
            (ms(0), oa_done()),
        ],
    );
    for (f, s) in each_format(&["openai-chat", "auto"], reply).await {
        assert_ok(&s);
        assert_phase_order(&s);
        let (ttfb, ttfe) = (s.ttfb_ms.unwrap(), s.ttfe_ms.unwrap());
        assert!(ttfb < 50.0, "{f}: headers came at once: {s:#?}");
        assert!(ttfe >= 90.0, "{f}: comments are not events: {s:#?}");
        assert_eq!(s.ttft_ms, s.ttfe_ms, "{f}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_deltas_set_ttfr_not_ttft() {
    let reply = Reply::ok(
        SSE,
        vec![
            (ms(0), oa_role()),
            (ms(0), oa_delta(r#"{"reasoning_content":"Let me"}"#)),
            (ms(20), oa_delta(r#"{"reasoning":" think"}"#)),
            (ms(80), oa_content("Answer")),
            (ms(0), oa_done()),
        ],
    );
    for (f, s) in each_format(&["openai-chat", "auto"], reply).await {
        assert_ok(&s);
        assert_phase_order(&s);
        let (ttfr, ttft) = (s.ttfr_ms.unwrap(), s.ttft_ms.unwrap());
        assert!(ttfr < 50.0, "{f}: first reasoning delta at once: {s:#?}");
        assert!(ttft >= 90.0, "{f}: content ~100 ms later: {s:#?}");
        assert_eq!(s.content_chunks, 1, "{f}: reasoning chunks are not content");
    }
    // Only reasoning: no first token at all. The stream is complete, but
    // there was no answer: `no_content`, with the reasoning stamp kept.
    let reply = Reply::ok(
        SSE,
        at_once([
            oa_role(),
            oa_delta(r#"{"reasoning_content":"hm"}"#),
            oa_done(),
        ]),
    );
    let server = script_server(reply).await;
    let s = probe_one(&server.url(), "auto").await;
    assert_failed(&s, "no_content");
    assert!(s.ttfr_ms.is_some(), "{s:#?}");
    assert_eq!(
        (s.ttft_ms, s.last_token_ms, s.content_chunks),
        (None, None, 0),
        "{s:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cr_lf_and_crlf_line_endings() {
    for eol in ["\n", "\r", "\r\n"] {
        let events = [
            ": keep-alive".to_string(),
            String::new(),
            format!(
                "event: message{eol}data: {}",
                r#"{"object":"chat.completion.chunk","choices":[{"delta":{"role":"assistant"}}]}"#
            ),
            String::new(),
            format!("data: {}", r#"{"choices":[{"delta":{"content":"A"}}]}"#),
            String::new(),
            format!("data: {}", r#"{"choices":[{"delta":{"content":"B"}}],"#),
            format!("data: {}", r#""usage":{"completion_tokens":2}}"#),
            String::new(),
            "data: [DONE]".to_string(),
            String::new(),
        ];
        let chunks: Vec<Chunk> = events
            .iter()
            .map(|l| (ms(2), format!("{l}{eol}").into_bytes()))
            .collect();
        let name = eol.escape_debug().to_string();
        for (f, s) in each_format(&["openai-chat", "auto"], Reply::ok(SSE, chunks)).await {
            assert!(s.is_ok(), "{name} {f}: {s:#?}");
            assert_eq!(s.content_chunks, 2, "{name} {f}: {s:#?}");
            assert_eq!(
                s.output_tokens,
                Some(2),
                "{name} {f}: multi-line data joins: {s:#?}"
            );
        }
    }
    // NDJSON with CRLF.
    let reply = Reply::ok(
        "application/x-ndjson",
        at_once(["{\"response\":\"a\",\"done\":false}\r\n{\"done\":true,\"eval_count\":1}\r\n"]),
    );
    let server = script_server(reply).await;
    let s = probe_one(&server.url(), "ollama").await;
    assert_ok(&s);
    assert_eq!(s.output_tokens, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_split_inside_a_utf8_character() {
    // The 4-byte 😀 is cut after its second byte; the halves arrive 40 ms apart.
    let event = oa_content("h\u{e9}llo \u{1F600}!");
    let cut = event.windows(2).position(|w| w == [0xF0, 0x9F]).unwrap() + 2;
    let reply = Reply::ok(
        SSE,
        vec![
            (ms(0), event[..cut].to_vec()),
            (ms(40), event[cut..].to_vec()),
            (ms(0), oa_done()),
        ],
    );
    for (f, s) in each_format(&["openai-chat", "auto"], reply).await {
        assert_ok(&s);
        assert_eq!(s.content_chunks, 1, "{f}: {s:#?}");
        assert!(
            s.ttfe_ms.unwrap() >= 30.0,
            "{f}: the event completes with the second half: {s:#?}"
        );
    }
    // NDJSON and plain text, cut the same way.
    let line = "{\"response\":\"\u{1F600}\",\"done\":false}\n{\"done\":true}\n".as_bytes();
    let cut = line.iter().position(|&b| b == 0xF0).unwrap() + 1;
    let reply = Reply::ok(
        "application/x-ndjson",
        vec![
            (ms(0), line[..cut].to_vec()),
            (ms(20), line[cut..].to_vec()),
        ],
    );
    let server = script_server(reply).await;
    assert_ok(&probe_one(&server.url(), "ollama").await);
    let text = "caf\u{e9} \u{1F600}".as_bytes();
    let cut = text.len() - 2;
    let reply = Reply::ok(
        "text/plain",
        vec![
            (ms(0), text[..cut].to_vec()),
            (ms(20), text[cut..].to_vec()),
        ],
    );
    let server = script_server(reply).await;
    let s = probe_one(&server.url(), "text").await;
    assert_ok(&s);
    assert_eq!(s.content_chunks, 2, "{s:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_payloads_inside_a_200_stream_are_stream_errors() {
    let cases: Vec<(&str, Reply, &str)> = vec![
        (
            "openai-chat",
            Reply::ok(
                SSE,
                at_once([
                    oa_role(),
                    oa_content("A"),
                    sse(r#"{"error":{"message":"Provider returned error","code":502}}"#),
                    oa_content("B"),
                    oa_done(),
                ]),
            ),
            "Provider returned error",
        ),
        (
            "anthropic",
            Reply::ok(
                SSE,
                at_once([sse_named(
                    "error",
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                )]),
            ),
            "Overloaded",
        ),
        (
            "ollama",
            Reply::ok(
                "application/x-ndjson",
                at_once([r#"{"error":"model 'x' not found"}"#.to_string() + "\n"]),
            ),
            "not found",
        ),
        (
            "vercel-ui",
            Reply::ok(
                SSE,
                at_once([sse(r#"{"type":"error","errorText":"tool exploded"}"#)]),
            ),
            "tool exploded",
        ),
    ];
    for (format, reply, text) in cases {
        let server = script_server(reply).await;
        for f in [format, "auto"] {
            let s = probe_one(&server.url(), f).await;
            let m = assert_failed(&s, "stream_error");
            assert!(m.contains(text), "{format}/{f}: {m}");
            assert_eq!(s.status, Some(200));
            assert!(s.e2e_ms.is_some(), "{s:#?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_terminator_is_truncated() {
    let cases: Vec<(&str, Reply)> = vec![
        (
            "openai-chat",
            Reply::ok(SSE, at_once([oa_role(), oa_content("A")])),
        ),
        ("anthropic", Reply::ok(SSE, anthropic_events(false))),
        (
            "ollama",
            Reply::ok(
                "application/x-ndjson",
                at_once(["{\"response\":\"a\",\"done\":false}\n"]),
            ),
        ),
        (
            "vercel-ui",
            Reply::ok(
                SSE,
                at_once([
                    sse(r#"{"type":"start"}"#),
                    sse(r#"{"type":"text-delta","id":"t","delta":"x"}"#),
                ]),
            ),
        ),
    ];
    for (format, reply) in cases {
        let server = script_server(reply).await;
        for f in [format, "auto"] {
            let s = probe_one(&server.url(), f).await;
            assert_failed(&s, "truncated");
            assert!(
                s.ttft_ms.is_some(),
                "{format}/{f}: the token before the cut is kept: {s:#?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_is_a_decode_error_with_its_byte_offset() {
    let first = oa_content("A");
    let reply = Reply::ok(
        SSE,
        at_once([first.clone(), b"data: {not json\n\n".to_vec(), oa_done()]),
    );
    let server = script_server(reply).await;
    for f in ["openai-chat", "auto"] {
        let s = probe_one(&server.url(), f).await;
        let m = assert_failed(&s, "decode");
        assert!(
            m.contains(&format!("byte offset {}", first.len())),
            "{f}: {m}"
        );
        assert!(s.ttft_ms.is_some(), "{f}: the token before is kept");
    }
    let line = "{\"response\":\"a\",\"done\":false}\n";
    let reply = Reply::ok(
        "application/x-ndjson",
        at_once([
            line.to_string(),
            "{\"response\": tru\n".into(),
            "{\"done\":true}\n".into(),
        ]),
    );
    let server = script_server(reply).await;
    let s = probe_one(&server.url(), "ollama").await;
    let m = assert_failed(&s, "decode");
    assert!(m.contains(&format!("byte offset {}", line.len())), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_in_a_text_stream_is_a_decode_error() {
    let reply = Reply::ok(
        "text/plain",
        at_once([b"ok\n".to_vec(), b"\xff\xfe".to_vec()]),
    );
    let server = script_server(reply).await;
    for f in ["text", "auto"] {
        let s = probe_one(&server.url(), f).await;
        let m = assert_failed(&s, "decode");
        assert!(m.contains("byte offset 3"), "{f}: {m}");
    }
    // A stream that ends inside a character is invalid too.
    let reply = Reply::ok("text/plain", at_once([b"ok \xe2\x82".to_vec()]));
    let server = script_server(reply).await;
    assert_failed(&probe_one(&server.url(), "text").await, "decode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_tokens_come_from_usage_or_stay_null() {
    let with = Reply::ok(
        SSE,
        at_once([
            oa_role(),
            oa_content("A"),
            oa_content("B"),
            oa_usage(1, 2),
            oa_done(),
        ]),
    );
    let without = Reply::ok(
        SSE,
        at_once([oa_role(), oa_content("A"), oa_content("B"), oa_done()]),
    );
    let server = script_server(with).await;
    let s = probe_one(&server.url(), "auto").await;
    assert_ok(&s);
    assert_eq!(s.output_tokens, Some(2));
    let server = script_server(without).await;
    let s = probe_one(&server.url(), "auto").await;
    assert_ok(&s);
    assert_eq!(s.content_chunks, 2);
    assert_eq!(
        (s.output_tokens, s.input_tokens, s.tokens_per_s),
        (None, None, None),
        "{s:#?}"
    );
    // OpenRouter-style extras: provider and cost.
    let routed = Reply::ok(
        SSE,
        at_once([
            oa_content("A"),
            sse(
                r#"{"provider":"Steady","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"cost":0.0004}}"#,
            ),
            oa_done(),
        ]),
    );
    let server = script_server(routed).await;
    let s = probe_one(&server.url(), "auto").await;
    assert_ok(&s);
    assert_eq!(
        (s.output_tokens, s.provider.as_deref(), s.cost_usd),
        (Some(1), Some("Steady"), Some(0.0004))
    );
}

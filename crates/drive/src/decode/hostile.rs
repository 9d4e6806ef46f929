//! Hostile bodies against the decoders: oversized lines and events, bodies
//! of whitespace, error shapes as the first event, 2xx bodies without
//! content. Memory is asserted on the decoders' buffered size after every
//! chunk, not by timing; bodies are generated chunk by chunk, never held.

use proptest::prelude::*;

use super::*;

const MIB: usize = 1 << 20;
const CHUNK: usize = 16 * 1024;

/// Feed `total` bytes made by repeating `pattern` (after `prefix`) in
/// [`CHUNK`]-byte pieces, asserting after each piece that the decoder holds
/// at most `cap` bytes. Stops early once an error is recorded, as the client
/// does. Returns the decoder's verdict and the bytes fed.
fn feed_generated(
    d: &mut Decoder,
    prefix: &[u8],
    pattern: &[u8],
    total: usize,
    cap: usize,
) -> (Result<(), (ErrorKind, String)>, usize) {
    d.feed(prefix);
    let mut chunk = Vec::with_capacity(CHUNK + pattern.len());
    let mut fed = prefix.len();
    while fed < total {
        chunk.clear();
        while chunk.len() < CHUNK {
            chunk.extend_from_slice(pattern);
        }
        d.feed(&chunk);
        fed += chunk.len();
        assert!(
            d.buffered() <= cap,
            "the decoder holds {} bytes after {fed} fed (cap {cap})",
            d.buffered()
        );
        if d.facts().error.is_some() {
            break;
        }
    }
    (d.finish(), fed)
}

fn auto(ct: Option<&str>) -> Decoder {
    Decoder::new(&StreamFormat::Auto, ct, false)
}

#[test]
fn one_50_mb_sse_line_fails_as_decode_with_the_size() {
    for ct in [Some("text/event-stream"), None] {
        let mut d = auto(ct);
        let (end, fed) = feed_generated(&mut d, b"data: ", b"x", 50 * MIB, MIB);
        let (kind, msg) = end.unwrap_err();
        assert_eq!(kind, ErrorKind::Decode, "{ct:?}: {msg}");
        assert!(
            msg.contains("1048576-byte limit") && msg.contains("byte offset 0"),
            "{msg}"
        );
        assert!(
            fed <= MIB + 2 * CHUNK,
            "refused as soon as the line passed the cap, after {fed} bytes"
        );
    }
}

#[test]
fn data_lines_without_a_blank_line_fail_as_decode() {
    // 200 MB of `data:` lines that never end an event: the joined data passes the cap.
    let mut d = auto(Some("text/event-stream"));
    let (end, fed) = feed_generated(
        &mut d,
        b"",
        b"data: 0123456789abcdef\n",
        200 * MIB,
        MIB + 64,
    );
    let (kind, msg) = end.unwrap_err();
    assert_eq!(kind, ErrorKind::Decode, "{msg}");
    assert!(msg.contains("over the 1048576-byte limit"), "{msg}");
    assert!(fed < 2 * MIB, "refused early, after {fed} bytes");
}

#[test]
fn one_long_ndjson_line_fails_as_decode() {
    let mut d = Decoder::with_max(&StreamFormat::Ollama, None, false, 4096);
    let (end, _) = feed_generated(&mut d, b"{\"response\":\"", b"a", MIB, 4096);
    let (kind, msg) = end.unwrap_err();
    assert_eq!(kind, ErrorKind::Decode);
    assert!(msg.contains("4096-byte limit"), "{msg}");
}

#[test]
fn the_cap_is_configurable_and_a_line_under_it_passes() {
    let line = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\ndata: [DONE]\n\n",
        "y".repeat(3000)
    );
    let mut d = Decoder::with_max(&StreamFormat::OpenAiChat, None, false, 4096);
    assert!(d.feed(line.as_bytes()).content);
    assert!(d.finish().is_ok());
    let mut d = Decoder::with_max(&StreamFormat::OpenAiChat, None, false, 2048);
    d.feed(line.as_bytes());
    let (kind, msg) = d.finish().unwrap_err();
    assert_eq!(kind, ErrorKind::Decode);
    assert!(msg.contains("2048-byte limit"), "{msg}");
}

#[test]
fn a_50_mb_body_of_whitespace_is_no_content_and_holds_nothing() {
    // Unlabelled (sniffed), labelled text and labelled JSON: nothing is kept.
    for ct in [None, Some("text/plain"), Some("application/json")] {
        let mut d = auto(ct);
        let (end, fed) = feed_generated(&mut d, b"", b" \r\n\t ", 50 * MIB, 0);
        assert_eq!(fed / MIB, 50);
        let (kind, msg) = end.unwrap_err();
        assert_eq!(kind, ErrorKind::NoContent, "{ct:?}: {msg}");
        assert!(msg.contains("without a content token"), "{msg}");
    }
    // Labelled SSE: blank and space-only lines; one line at most is held.
    let mut line = vec![b' '; 1023];
    line.push(b'\n');
    let mut d = auto(Some("text/event-stream"));
    let (end, _) = feed_generated(&mut d, b"", &line, 50 * MIB, 1024);
    assert!(end.is_err(), "a whitespace SSE body is a failure: {end:?}");
}

#[test]
fn leading_whitespace_keeps_offsets_and_sniffing() {
    let mut d = auto(None);
    d.feed(b"\n\n   \n");
    d.feed(b"data: {\"weird\":1}\n\n");
    let (_, msg) = d.finish().unwrap_err();
    assert!(msg.contains("byte offset 6"), "{msg}");
}

#[test]
fn error_shapes_as_the_first_event_are_stream_errors() {
    let cases: [(&str, &[u8], &str); 6] = [
        (
            "vLLM then [DONE]",
            b"data: {\"object\":\"error\",\"message\":\"The engine is overloaded\",\"type\":\"ServiceUnavailable\",\"code\":503}\n\ndata: [DONE]\n\n",
            "The engine is overloaded",
        ),
        (
            "OpenAI",
            b"data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\"}}\n\n",
            "Rate limit reached",
        ),
        (
            "TGI",
            b"data: {\"error\":\"Input validation error\",\"error_type\":\"validation\"}\n\n",
            "Input validation error (validation)",
        ),
        (
            "Anthropic",
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            "Overloaded",
        ),
        (
            "bare error event",
            b"event: error\ndata: upstream gone\n\n",
            "upstream gone",
        ),
        (
            "vLLM without [DONE]",
            b"data: {\"object\":\"error\",\"message\":\"boom\",\"type\":\"BadRequestError\",\"code\":400}\n\n",
            "boom",
        ),
    ];
    for (name, body, text) in cases {
        for ct in [Some("text/event-stream"), None] {
            let mut d = auto(ct);
            let cf = d.feed(body);
            assert!(!cf.content, "{name}");
            let (kind, msg) = d.finish().unwrap_err();
            assert_eq!(kind, ErrorKind::StreamError, "{name}/{ct:?}: {msg}");
            assert!(msg.contains(text), "{name}: {msg}");
        }
    }
    // The explicit dialects say the same where the shape applies.
    let vllm = b"data: {\"object\":\"error\",\"message\":\"The engine is overloaded\",\"type\":\"ServiceUnavailable\",\"code\":503}\n\ndata: [DONE]\n\n";
    for f in ["openai-chat", "vercel-ui", "sse-json:/t"] {
        let mut d = Decoder::new(&f.parse().unwrap(), None, false);
        d.feed(vllm);
        let (kind, msg) = d.finish().unwrap_err();
        assert_eq!(kind, ErrorKind::StreamError, "{f}: {msg}");
        assert!(msg.contains("overloaded"), "{f}: {msg}");
    }
    let mut d = Decoder::new(&StreamFormat::Anthropic, None, false);
    d.feed(b"event: error\ndata: not json\n\n");
    assert_eq!(d.finish().unwrap_err().0, ErrorKind::StreamError);
}

#[test]
fn a_clean_end_without_content_is_no_content() {
    let cases: [(&str, Option<&str>, &[u8]); 5] = [
        ("auto", None, b""),
        ("auto", Some("text/event-stream"), b"data: [DONE]\n\n"),
        (
            "openai-chat",
            None,
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: [DONE]\n\n",
        ),
        ("ollama", None, b"{\"done\":true}\n"),
        ("sse-json:/t", None, b"data: {\"t\":\"\"}\n\n"),
    ];
    for (f, ct, body) in cases {
        let mut d = Decoder::new(&f.parse().unwrap(), ct, false);
        d.feed(body);
        let (kind, msg) = d.finish().unwrap_err();
        assert_eq!(kind, ErrorKind::NoContent, "{f} {body:?}: {msg}");
    }
    // A missing terminator is still reported as such first.
    let mut d = Decoder::new(&StreamFormat::OpenAiChat, None, false);
    assert_eq!(d.finish().unwrap_err().0, ErrorKind::Truncated);
}

#[test]
fn explicit_text_as_pings_use_needs_no_content() {
    for body in [&b""[..], b"   \n", b"ok"] {
        let mut d = Decoder::new(&StreamFormat::Text, None, false);
        d.feed(body);
        assert!(d.finish().is_ok(), "{body:?}");
    }
    // Text found by `auto` needs a non-whitespace byte, and stamps it.
    let mut d = auto(Some("text/plain"));
    assert!(!d.feed(b"  \n").content);
    assert!(d.feed(b" ok").content);
    assert!(d.finish().is_ok());
}

fn outcome(body: &[u8], cuts: &[usize], max: usize) -> (Option<ErrorKind>, usize) {
    let mut d = Decoder::with_max(&StreamFormat::Auto, None, false, max);
    let mut start = 0;
    let mut held = 0;
    for &c in cuts.iter().chain([body.len()].iter()) {
        d.feed(&body[start..c]);
        held = held.max(d.buffered());
        start = c;
    }
    (d.finish().err().map(|e| e.0), held)
}

fn hostile_body() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: {\"choices\":[{\"delta\":{\"content\":\"A\"}}]}\n\n".to_vec()),
        Just(b"data: [DONE]\n\n".to_vec()),
        Just(b"data: xxxxxxxxxxxxxxxxxxxx\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"   \r\n".to_vec()),
        Just(b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx".to_vec()),
        Just(b"data: {\"object\":\"error\",\"message\":\"m\",\"type\":\"T\"}\n\n".to_vec()),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn any_split_gives_the_same_outcome_within_the_cap(
        body in hostile_body(),
        cuts in proptest::collection::vec(0usize..1000, 0..10),
    ) {
        const MAX: usize = 64;
        let (whole, _) = outcome(&body, &[], MAX);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (body.len() + 1)).collect();
        cuts.sort_unstable();
        let (split, held) = outcome(&body, &cuts, MAX);
        prop_assert_eq!(split, whole);
        // A line or event's data is refused past the cap; the line and the
        // data may each be near it at once, plus the event name.
        prop_assert!(held <= 2 * MAX + 8, "held {}", held);
    }
}

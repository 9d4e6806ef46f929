//! What one event of an SSE dialect means, shared by SSE bodies and by
//! message-framed transports (a WebSocket text frame is one event).

use firsttoken_record::ErrorKind;

use super::{
    ChunkFacts, MAX_SERVER_TIMING, SseKind, StreamFacts, formats, parse_server_timing, responses,
};

/// One SSE event (or one WebSocket text frame, carried as an event named
/// `message`) of an SSE dialect: its meaning goes into `facts` and `cf`.
/// In `auto` (`kind` is `None`) the first event decides the dialect.
pub(super) fn on_sse_event(
    kind: &mut Option<SseKind>,
    facts: &mut StreamFacts,
    route_field: Option<&str>,
    event: &str,
    data: &str,
    offset: u64,
    cf: &mut ChunkFacts,
) {
    if facts.error.is_some() {
        return;
    }
    if event == "server-timing" {
        // The app's own timing summary, sent after the answer: not content.
        let room = MAX_SERVER_TIMING.saturating_sub(facts.server_timing.len());
        facts
            .server_timing
            .extend(parse_server_timing(data).into_iter().take(room));
        return;
    }
    cf.events += 1;
    if let Some(p) = route_field
        && facts.route.is_none()
    {
        facts.route = formats::route_at(p, data.as_bytes());
    }
    // An `error` event is an error in every dialect; in `auto`, so is any
    // known error shape as the first event.
    if (event == "error" || kind.is_none())
        && let Some(m) = formats::error_shape(event, data)
    {
        return facts.fail(ErrorKind::StreamError, m);
    }
    if kind.is_none() {
        if data.trim() == "[DONE]" {
            facts.done = true;
            return;
        }
        match formats::detect_sse(event, data) {
            Some(k) => *kind = Some(k),
            None => {
                return facts.fail(
                    ErrorKind::Decode,
                    format!(
                        "cannot tell the stream format from the first event at byte offset {offset} ({}); pass --format",
                        formats::bounded(data)
                    ),
                );
            }
        }
    }
    match kind {
        Some(SseKind::OpenAi) => formats::openai(data, offset, facts, cf),
        Some(SseKind::Anthropic) => formats::anthropic(event, data, offset, facts, cf),
        Some(SseKind::Responses) => responses::responses(data, offset, facts, cf),
        Some(SseKind::VercelUi) => formats::vercel_ui(data, offset, facts, cf),
        Some(SseKind::Gradio) => super::gradio::gradio(data, offset, facts, cf),
        Some(SseKind::Pointer(p)) => formats::sse_json(p, data, offset, facts, cf),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::decode::Decoder;
    use firsttoken_plan::StreamFormat;
    use firsttoken_record::ErrorKind;

    #[test]
    fn each_message_is_one_event_of_its_format() {
        let mut d = Decoder::for_messages(&StreamFormat::Auto, 1 << 20);
        let created =
            d.feed_event(r#"{"type":"response.created","sequence_number":0,"response":{}}"#);
        assert_eq!((created.events, created.content), (1, false));
        assert_eq!(d.format_name(), "responses");
        let tok = d.feed_event(
            r#"{"type":"response.output_text.delta","sequence_number":1,"delta":"Hi"}"#,
        );
        assert!(tok.content);
        d.feed_event(r#"{"type":"response.completed","sequence_number":2,"response":{"usage":{"input_tokens":1,"output_tokens":1}}}"#);
        assert!(d.facts().done);
        assert_eq!(d.facts().output_tokens, Some(1));
        assert!(d.finish().is_ok());
        // NDJSON-style messages, and text.
        let mut d = Decoder::for_messages(&StreamFormat::Ollama, 1 << 20);
        assert!(d.feed_event(r#"{"response":"a","done":false}"#).content);
        d.feed_event(r#"{"done":true}"#);
        assert!(d.facts().done);
        let mut d = Decoder::for_messages(&StreamFormat::Text, 1 << 20);
        assert!(d.feed_event("x").content);
        // A message over the bound fails as decode; later ones are ignored.
        let mut d = Decoder::for_messages(&StreamFormat::Auto, 1024);
        let big = format!(r#"{{"delta":"{}"}}"#, "a".repeat(2000));
        assert_eq!(d.feed_event(&big).events, 0);
        assert_eq!(
            d.facts().error.as_ref().map(|e| e.0),
            Some(ErrorKind::Decode)
        );
    }
}

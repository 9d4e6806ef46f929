//! Gradio's queue stream (`GET /gradio_api/queue/data?session_hash=…`, the
//! `sse_v3` protocol its own page reads): `data:` lines of JSON messages,
//! no `event:` names. Of a job's messages, `estimation` and
//! `process_starts` come at once; the first `process_generating` carries
//! the whole output value (a chatbot's messages, the assistant's last one
//! holding the first text), later ones diff operations
//! (`["append", path, "text"]`) on it; `process_completed` ends the job
//! (`success: false` with the app's error), and `close_stream` the stream.
//! Content is the text a `process_generating` message adds: an `append`,
//! `replace` or `add` whose value is non-empty text, or, in the whole
//! value, the last assistant message's text.

use serde_json::Value;

use firsttoken_record::ErrorKind;

use super::formats::bounded;
use super::{ChunkFacts, StreamFacts};

/// One queue message.
pub(crate) fn gradio(data: &str, offset: u64, facts: &mut StreamFacts, cf: &mut ChunkFacts) {
    let v: Value = match serde_json::from_str(data) {
        Ok(v) => v,
        Err(e) => {
            return facts.fail(
                ErrorKind::Decode,
                format!("malformed JSON in a Gradio queue message at byte offset {offset}: {e}"),
            );
        }
    };
    match v.get("msg").and_then(Value::as_str) {
        Some("process_generating") => {
            let outputs = v.pointer("/output/data").and_then(Value::as_array);
            let text: String = outputs
                .into_iter()
                .flatten()
                .filter_map(added_text)
                .collect();
            if !text.is_empty() {
                facts.content(cf, &text);
            }
        }
        Some("process_completed") => {
            if v.get("success").and_then(Value::as_bool) == Some(false) {
                let why = v
                    .pointer("/output/error")
                    .and_then(Value::as_str)
                    .unwrap_or("the job failed (success: false)");
                facts.fail(ErrorKind::StreamError, bounded(why));
            } else {
                facts.done = true;
            }
        }
        Some("close_stream") => facts.done = true,
        Some("unexpected_error") => {
            let why = v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unexpected_error");
            facts.fail(ErrorKind::StreamError, bounded(why));
        }
        _ => {}
    }
}

/// The text one output's update adds: diff operations' text values, or a
/// whole chatbot value's last assistant message.
fn added_text(output: &Value) -> Option<String> {
    let items = output.as_array()?;
    let ops: Vec<&str> = items
        .iter()
        .filter_map(|op| {
            let op = op.as_array()?;
            match (op.first()?.as_str()?, op.get(2)?) {
                ("append" | "replace" | "add", Value::String(s)) => Some(s.as_str()),
                _ => None,
            }
        })
        .collect();
    if !ops.is_empty() {
        return Some(ops.concat());
    }
    let last = items
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))?;
    match last.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Decoder;
    use firsttoken_plan::StreamFormat;

    /// The queue stream of one ChatInterface answer as Gradio 5 sent it
    /// (docs: tests/fixtures/WIRE-NOTES.md, "What the page does in a
    /// browser"), ids shortened.
    const STREAM: &str = concat!(
        "data: {\"msg\":\"estimation\",\"event_id\":\"c6ab\",\"rank\":0,\"queue_size\":1,\"rank_eta\":null}\n\n",
        "data: {\"msg\":\"process_starts\",\"event_id\":\"c6ab\",\"eta\":null}\n\n",
        "data: {\"msg\":\"process_generating\",\"event_id\":\"c6ab\",\"output\":{\"data\":[null,[{\"role\":\"user\",\"metadata\":null,\"content\":[{\"text\":\"hi browser\",\"type\":\"text\"}],\"options\":null},{\"role\":\"assistant\",\"metadata\":null,\"content\":[{\"text\":\"The \",\"type\":\"text\"}],\"options\":null}]],\"is_generating\":true},\"success\":true,\"time_limit\":null}\n\n",
        "data: {\"msg\":\"process_generating\",\"event_id\":\"c6ab\",\"output\":{\"data\":[[],[[\"append\",[1,\"content\",0,\"text\"],\"answer \"]]],\"is_generating\":true},\"success\":true,\"time_limit\":null}\n\n",
        "data: {\"msg\":\"process_completed\",\"event_id\":\"c6ab\",\"output\":{\"data\":[null,[]],\"is_generating\":false},\"success\":true}\n\n",
        "data: {\"msg\":\"close_stream\",\"event_id\":null}\n\n",
    );

    fn decode(body: &str) -> Decoder {
        let mut d = Decoder::new(&StreamFormat::Gradio, Some("text/event-stream"), false);
        let mut contents = 0;
        for part in body.split_inclusive("\n\n") {
            contents += usize::from(d.feed(part.as_bytes()).content);
        }
        assert!(contents <= 2);
        d
    }

    #[test]
    fn the_first_text_is_in_the_first_generating_message() {
        let mut d = Decoder::new(&StreamFormat::Gradio, Some("text/event-stream"), false);
        let parts: Vec<&str> = STREAM.split_inclusive("\n\n").collect();
        let content: Vec<bool> = parts.iter().map(|p| d.feed(p.as_bytes()).content).collect();
        // estimation and process_starts are no answer; each generating
        // message adds text; completion and close add none.
        assert_eq!(content, [false, false, true, true, false, false]);
        assert!(d.finish().is_ok());
    }

    #[test]
    fn a_failed_job_and_a_malformed_message_are_named() {
        let failed = "data: {\"msg\":\"process_completed\",\"output\":{\"error\":\"upstream timed out\"},\"success\":false}\n\n";
        let mut d = decode(failed);
        let e = d.finish().unwrap_err();
        assert!(format!("{e:?}").contains("upstream timed out"), "{e:?}");
        let mut d = decode("data: {not json\n\n");
        let e = d.finish().unwrap_err();
        assert!(format!("{e:?}").contains("Gradio queue message"), "{e:?}");
    }

    #[test]
    fn a_stream_that_ends_before_its_job_is_truncated() {
        let cut = STREAM.split_inclusive("\n\n").take(3).collect::<String>();
        let mut d = decode(&cut);
        assert!(d.finish().is_err());
    }
}

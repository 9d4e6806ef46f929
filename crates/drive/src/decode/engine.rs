//! The inference engine's own timing carried in its stream: llama.cpp's
//! `llama-server` ends a streamed chat completion with a chunk holding
//! `timings` (`prompt_n`, `prompt_ms`, `predicted_n`, `predicted_ms`,
//! `cache_n`, and per-token rates that are not kept).
//!
//! A field of the wrong type, negative, not finite or over a day is
//! skipped (as garbage Server-Timing entries are), never a decode error:
//! the answer itself was fine. Only the first `timings` object counts.

use firsttoken_record::{EngineSource, EngineTiming, engine::MAX_ENGINE_MS};
use serde_json::Value;

use super::StreamFacts;

/// Keep `timings` (a chunk's `timings` member) as the engine's own timing,
/// unless the stream already gave one or it has no field firsttoken reads.
pub(crate) fn llama_timings(timings: &Value, facts: &mut StreamFacts) {
    if facts.engine.is_some() {
        return;
    }
    let count = |k: &str| {
        timings
            .get(k)
            .and_then(Value::as_u64)
            .filter(|&n| i64::try_from(n).is_ok())
    };
    let ms = |k: &str| {
        timings
            .get(k)
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite() && (0.0..=MAX_ENGINE_MS).contains(v))
    };
    let t = EngineTiming {
        source: EngineSource::LlamaCpp,
        prompt_n: count("prompt_n"),
        prompt_ms: ms("prompt_ms"),
        predicted_n: count("predicted_n"),
        predicted_ms: ms("predicted_ms"),
        cache_n: count("cache_n"),
    };
    let any = t.prompt_ms.is_some() || t.predicted_ms.is_some() || t.prompt_n.is_some();
    if any {
        facts.engine = Some(t);
    }
}

#[cfg(test)]
mod tests {
    use crate::decode::Decoder;
    use firsttoken_plan::StreamFormat;
    use firsttoken_record::EngineSource;

    /// A llama-server stream as it sends it (b11434, a tiny model): the
    /// role chunk, content, the finish chunk, then `timings` on the last
    /// chunk before `[DONE]`.
    const LLAMA: &str = concat!(
        "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}],\"created\":1,\"id\":\"chatcmpl-x\",\"model\":\"tiny\",\"object\":\"chat.completion.chunk\"}\n\n",
        "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" queue\"}}],\"object\":\"chat.completion.chunk\"}\n\n",
        "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],\"object\":\"chat.completion.chunk\",",
        "\"usage\":{\"completion_tokens\":8,\"prompt_tokens\":17,\"total_tokens\":25},",
        "\"timings\":{\"cache_n\":0,\"prompt_n\":17,\"prompt_ms\":98.431,\"prompt_per_token_ms\":5.79,\"prompt_per_second\":172.7,",
        "\"predicted_n\":8,\"predicted_ms\":41.2,\"predicted_per_token_ms\":5.15,\"predicted_per_second\":194.1}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn the_last_chunks_timings_are_the_engines_own() {
        let mut d = Decoder::new(&StreamFormat::Auto, Some("text/event-stream"), false);
        for line in LLAMA.split_inclusive('\n') {
            d.feed(line.as_bytes());
        }
        assert!(d.finish().is_ok());
        let e = d.facts().engine.clone().expect("timings kept");
        assert_eq!(e.source, EngineSource::LlamaCpp);
        assert_eq!(
            (e.prompt_n, e.predicted_n, e.cache_n),
            (Some(17), Some(8), Some(0))
        );
        assert_eq!((e.prompt_ms, e.predicted_ms), (Some(98.431), Some(41.2)));
        assert_eq!(d.facts().output_tokens, Some(8));
    }

    #[test]
    fn garbage_fields_are_skipped_and_a_stream_without_timings_has_none() {
        let mut d = Decoder::new(&StreamFormat::OpenAiChat, None, false);
        d.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"A\"}}],\"timings\":{\"prompt_ms\":-4,\"prompt_n\":17,\"predicted_n\":\"x\",\"predicted_ms\":1e300,\"cache_n\":3}}\n\ndata: [DONE]\n\n");
        assert!(d.finish().is_ok(), "the answer itself is fine");
        let e = d.facts().engine.clone().expect("prompt_n is kept");
        assert_eq!(
            (e.prompt_ms, e.predicted_n, e.predicted_ms),
            (None, None, None)
        );
        assert_eq!((e.prompt_n, e.cache_n), (Some(17), Some(3)));
        let mut d = Decoder::new(&StreamFormat::OpenAiChat, None, false);
        d.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"A\"}}],\"timings\":{\"cache_n\":3}}\n\ndata: [DONE]\n\n");
        assert!(d.facts().engine.is_none(), "no field read: no timing");
        let mut d = Decoder::new(&StreamFormat::OpenAiChat, None, false);
        d.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"A\"}}]}\n\ndata: [DONE]\n\n");
        assert!(d.facts().engine.is_none());
    }
}

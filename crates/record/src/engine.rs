//! The inference engine's own account of a request, read from its stream:
//! the stored vocabulary of engine timings (issue 28).
//!
//! llama.cpp's `llama-server` ends a streamed chat completion with a chunk
//! carrying `timings`: `prompt_n` tokens evaluated in `prompt_ms` (from the
//! slot starting the prompt to the first sampled token), `predicted_n`
//! tokens generated in `predicted_ms`, and `cache_n` prompt tokens reused
//! from the slot's cache. `prompt_ms` leaves out everything before the slot
//! took the request: HTTP parsing, chat templating, tokenization and any
//! wait for a free slot. firsttoken's TTFT minus `prompt_ms` is that time
//! plus the network and the client (docs/SERVER-TIME.md).

use serde::{Deserialize, Serialize};

/// Which engine's clock an [`EngineTiming`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineSource {
    /// llama.cpp's `llama-server`: the `timings` object of the last chunk.
    LlamaCpp,
}

impl EngineSource {
    /// Every source, in the order the stores' `CHECK` lists them.
    pub const ALL: [EngineSource; 1] = [EngineSource::LlamaCpp];

    /// The stored snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineSource::LlamaCpp => "llama_cpp",
        }
    }
}

/// Largest engine duration kept, ms (a day): a longer one is refused as
/// garbage, as the Server-Timing values are.
pub const MAX_ENGINE_MS: f64 = 86_400_000.0;

/// The engine's own timing of one request. Durations in ms on the engine's
/// clock; `None` when the engine did not send the field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineTiming {
    /// Whose clock.
    pub source: EngineSource,
    /// Prompt tokens the engine evaluated (not those reused from its cache).
    pub prompt_n: Option<u64>,
    /// Prefill: from the engine starting the prompt to its first sampled
    /// token, ms.
    pub prompt_ms: Option<f64>,
    /// Tokens generated.
    pub predicted_n: Option<u64>,
    /// Decode: generating them, ms.
    pub predicted_ms: Option<f64>,
    /// Prompt tokens reused from the engine's cache.
    pub cache_n: Option<u64>,
}

impl EngineTiming {
    /// Why the stores would refuse it: a duration that is negative, not
    /// finite or over [`MAX_ENGINE_MS`], or a count over `i64::MAX`.
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [
            ("engine.prompt_ms", self.prompt_ms),
            ("engine.predicted_ms", self.predicted_ms),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && (0.0..=MAX_ENGINE_MS).contains(&v))
            {
                return Err(format!(
                    "{name} = {} is not a duration from 0 to a day",
                    crate::short_number(v)
                ));
            }
        }
        for (name, v) in [
            ("engine.prompt_n", self.prompt_n),
            ("engine.predicted_n", self.predicted_n),
            ("engine.cache_n", self.cache_n),
        ] {
            if v.is_some_and(|v| i64::try_from(v).is_err()) {
                return Err(format!("{name} does not fit a signed 64-bit number"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_durations_are_refused_and_the_source_reads_as_stored() {
        let mut t = EngineTiming {
            source: EngineSource::LlamaCpp,
            prompt_n: Some(12),
            prompt_ms: Some(98.5),
            predicted_n: Some(8),
            predicted_ms: Some(40.0),
            cache_n: Some(0),
        };
        assert!(t.check().is_ok());
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["source"], EngineSource::LlamaCpp.as_str());
        t.prompt_ms = Some(-1.0);
        assert!(t.check().unwrap_err().contains("engine.prompt_ms"));
        t.prompt_ms = Some(f64::NAN);
        assert!(t.check().is_err());
        t.prompt_ms = None;
        t.cache_n = Some(u64::MAX);
        assert!(t.check().unwrap_err().contains("engine.cache_n"));
    }
}

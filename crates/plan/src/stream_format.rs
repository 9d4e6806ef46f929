//! The stream formats a response body is read as, by name.

use std::str::FromStr;

use crate::PlanError;

/// How to find content, reasoning, usage and the end in a response body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StreamFormat {
    /// Decide from Content-Type and the first event.
    #[default]
    Auto,
    /// OpenAI `chat.completion.chunk` SSE (`choices[].delta.content`).
    OpenAiChat,
    /// OpenAI legacy completions SSE (`choices[].text`).
    OpenAiCompletions,
    /// Anthropic Messages SSE (`content_block_delta`).
    Anthropic,
    /// OpenAI Responses API SSE (`response.output_text.delta`, ended by
    /// `response.completed`, `response.incomplete` or `response.failed`).
    Responses,
    /// Ollama NDJSON (`message.content` or `response`, `done: true`).
    Ollama,
    /// Any non-empty body bytes are content; valid UTF-8 required.
    Text,
    /// Vercel AI SDK UI message stream (`text-delta` parts).
    VercelUi,
    /// SSE whose `data` is JSON with the content at this JSON pointer.
    SseJson(String),
    /// Gradio's queue stream (`/gradio_api/queue/data`, what its page
    /// reads): `process_generating` messages carry the text.
    Gradio,
}

impl FromStr for StreamFormat {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<StreamFormat, PlanError> {
        Ok(match s {
            "auto" => StreamFormat::Auto,
            "openai-chat" | "openai" => StreamFormat::OpenAiChat,
            "openai-completions" => StreamFormat::OpenAiCompletions,
            "anthropic" => StreamFormat::Anthropic,
            "responses" => StreamFormat::Responses,
            "ollama" | "ndjson" => StreamFormat::Ollama,
            "text" => StreamFormat::Text,
            "vercel-ui" => StreamFormat::VercelUi,
            "gradio" => StreamFormat::Gradio,
            other => match other.strip_prefix("sse-json:") {
                Some(p) if p.is_empty() || p.starts_with('/') => {
                    StreamFormat::SseJson(p.to_string())
                }
                _ => return Err(PlanError::Format(other.to_string())),
            },
        })
    }
}

impl std::fmt::Display for StreamFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StreamFormat::Auto => "auto",
            StreamFormat::OpenAiChat => "openai-chat",
            StreamFormat::OpenAiCompletions => "openai-completions",
            StreamFormat::Anthropic => "anthropic",
            StreamFormat::Responses => "responses",
            StreamFormat::Ollama => "ollama",
            StreamFormat::Text => "text",
            StreamFormat::VercelUi => "vercel-ui",
            StreamFormat::Gradio => "gradio",
            StreamFormat::SseJson(p) => return write!(f, "sse-json:{p}"),
        })
    }
}

//! The words of conversations: TTFT by turn, and whether it grows.

use firsttoken_analyze::conversations::{Conversations, GrowthVerdict};

use crate::format::{self, Unit};

/// The caption of the conversations table.
pub const CAPTION: &str = "conversations: TTFT by turn, from the user's action (a first turn's steps, e.g. creating the conversation, included); each later turn against turn 1; history: the messages the conversation held before the turn; sent: the request body's size (medians); turns are never pooled, so they have no row in the TTFT table above";

/// A conversation path's label: path, level, provenance.
pub fn label(c: &Conversations) -> String {
    let level = c
        .concurrency
        .map_or_else(String::new, |k| format!(", {k} conversations at once"));
    format!("{}{level} ({})", c.path, c.provenance.as_str())
}

/// A request body's size: `812 B`, `2.1 KB`.
pub fn bytes(b: f64) -> String {
    if b < 1000.0 {
        format!("{b:.0} B")
    } else if b < 1_000_000.0 {
        format!("{:.1} KB", b / 1000.0)
    } else {
        format!("{:.1} MB", b / 1_000_000.0)
    }
}

/// One sentence a conversation path: how its last comparable turn's
/// first token compares with turn 1's, as its interval and the noise
/// band (`noise`, relative) allow.
pub fn sentence(c: &Conversations, noise: f64) -> String {
    let label = label(c);
    let Some(g) = &c.growth else {
        let counts = c
            .turns
            .iter()
            .map(|t| format!("turn {}: {}", t.turn, t.n))
            .collect::<Vec<_>>()
            .join(", ");
        return format!(
            "{label}: too few answered turns to compare a later turn with turn 1 ({counts})."
        );
    };
    let d = format::signed_stat(Unit::Ms, &g.over_first);
    let sent = c
        .turns
        .iter()
        .find(|t| t.turn == g.turn)
        .map(|t| {
            format!(
                " (with {:.0} messages of history, {} sent)",
                t.history_messages,
                bytes(t.request_bytes)
            )
        })
        .unwrap_or_default();
    match g.verdict {
        GrowthVerdict::Grows => format!(
            "{label}: turn {} is {d} over turn 1{sent}: the first token comes later as the conversation grows.",
            g.turn
        ),
        GrowthVerdict::Shrinks => format!(
            "{label}: turn {} is {d} against turn 1{sent}: the first token comes sooner later in the conversation (the first turn of a new conversation is the slower).",
            g.turn
        ),
        GrowthVerdict::Flat => format!(
            "{label}: turn {} is {d} against turn 1{sent}: no growth with the turn beyond {} that the data can show.",
            g.turn,
            format::band(noise)
        ),
    }
}

//! `[app.paths.conversation]` and `[phases.conversations]`: multi-turn
//! conversations (see [`crate::conversation`]), and their checks.

use serde::{Deserialize, Serialize};

use super::{PathSection, PhasePaths, PhasesSection};

/// How a conversation's history reaches the app.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMode {
    /// Each turn's request carries the whole conversation as a list of
    /// messages (`{"role": "user" | "assistant", "content": …}`): every
    /// earlier question, each earlier answer as it streamed (assembled from
    /// its content deltas), then the turn's question. The list replaces
    /// the value at `messages_pointer` in the path's body.
    #[default]
    Messages,
    /// The app keeps the history: the path's `steps` run on the first
    /// turn only (e.g. create a conversation and capture its id), and
    /// later turns reuse the values they captured; each turn sends only
    /// its question (`{prompt}`).
    App,
}

/// `[app.paths.conversation]`: the path can run conversations of several
/// turns (the `conversations` phase), each turn a measured request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationSection {
    /// A JSON Lines file, one conversation a line: a list of the user's
    /// turns (`["hi", "and then?"]`) or `{"turns": [...]}`.
    pub file: String,
    /// `messages` (default): the request carries the history; `app`: the
    /// app keeps it under the id the first turn's steps captured.
    #[serde(default)]
    pub history: HistoryMode,
    /// With `history = "messages"`: the JSON pointer of the messages list
    /// in the path's body (default `/messages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_pointer: Option<String>,
}

impl ConversationSection {
    /// Where the messages list goes in the body.
    pub fn pointer(&self) -> &str {
        self.messages_pointer.as_deref().unwrap_or("/messages")
    }
}

/// `phases.conversations`: conversations run from the paths'
/// conversations files.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationsSection {
    /// Conversations to run, over the phase's paths round-robin, each
    /// path's conversations taken in file order (starting again at the
    /// first when the file is used up).
    pub count: u32,
    /// At most this many turns of each conversation; unset: every turn
    /// in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Conversations at once (default 1), each on its own connection.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub concurrency: u32,
    /// The app paths; `None`: every path with a `[app.paths.conversation]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: PhasePaths,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Check path `i`'s conversation section. `Err((key, message))`.
pub(super) fn check_path(i: usize, p: &PathSection) -> Result<(), (String, String)> {
    let Some(c) = &p.conversation else {
        return Ok(());
    };
    let key = |k: &str| format!("app.paths[{i}].conversation.{k}");
    if c.file.trim().is_empty() {
        return Err((
            key("file"),
            "name a JSON Lines file of conversations".into(),
        ));
    }
    match c.history {
        HistoryMode::Messages => {
            let ptr = c.pointer();
            if !ptr.starts_with('/') {
                return Err((
                    key("messages_pointer"),
                    format!("{ptr:?} is not a JSON pointer (e.g. \"/messages\")"),
                ));
            }
            if !p.body.trim_start().starts_with('{') {
                return Err((
                    format!("app.paths[{i}].body"),
                    "history = \"messages\" puts the messages list into the body: the body must be a JSON object".into(),
                ));
            }
            if p.answer_socket.is_some() {
                return Err((
                    key("history"),
                    "an answer read from a Socket.IO socket is not kept as text: use history = \"app\" on this path".into(),
                ));
            }
        }
        HistoryMode::App => {
            if p.steps.is_empty() || p.steps.iter().all(|s| s.capture.is_empty()) {
                return Err((
                    key("history"),
                    "history = \"app\" needs a step that starts the conversation and captures its id (e.g. capture = { id = \"/conversation_id\" }), used in the path's body".into(),
                ));
            }
        }
    }
    Ok(())
}

/// Check `[phases.conversations]` against the paths. `Err((key, message))`.
pub(super) fn check_phase(
    phases: &PhasesSection,
    paths: &[PathSection],
) -> Result<(), (String, String)> {
    let Some(c) = &phases.conversations else {
        return Ok(());
    };
    let key = |k: &str| format!("phases.conversations.{k}");
    if c.concurrency == 0 {
        return Err((key("concurrency"), "at least 1".into()));
    }
    if c.turns == Some(0) {
        return Err((
            key("turns"),
            "at least 1, or leave it out for every turn".into(),
        ));
    }
    if c.concurrency > super::MAX_CONCURRENCY {
        return Err((
            key("concurrency"),
            format!("at most {}", super::MAX_CONCURRENCY),
        ));
    }
    if c.count == 0 {
        return Ok(());
    }
    match &c.paths {
        Some(names) => {
            for name in names {
                let Some(p) = paths.iter().find(|p| &p.name == name) else {
                    // Unknown names are the phase-paths check's to report.
                    continue;
                };
                if p.conversation.is_none() {
                    return Err((
                        key("paths"),
                        format!(
                            "path {name:?} has no [app.paths.conversation] (its conversations file)"
                        ),
                    ));
                }
            }
        }
        None => {
            if paths.iter().all(|p| p.conversation.is_none()) {
                return Err((
                    key("count"),
                    "no app path has a [app.paths.conversation]: give one its conversations file"
                        .into(),
                ));
            }
        }
    }
    Ok(())
}

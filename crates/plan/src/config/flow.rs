//! `[[app.paths.steps]]`: the earlier requests of a flow (see
//! [`crate::flow`]), and their checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::PathSection;
use crate::flow::{CaptureFrom, placeholders};

/// `[[app.paths.steps]]`: one request sent before the path's measured
/// request, in order, on the same connection (the user's action is the
/// whole flow: e.g. create a chat, then send). A failed step (no
/// response, a status outside 2xx, a capture not found) fails the sample,
/// the step named.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepSection {
    /// Name in reports, e.g. `create`.
    pub name: String,
    /// HTTP method (default: POST with a body, GET without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// URL path on the app's base URL, e.g. `/api/chats/new`; `{name}`
    /// placeholders are filled (percent-encoded).
    pub path: String,
    /// Request body template; `{prompt}` and captured `{name}`s are
    /// filled (JSON-escaped). Unset: no body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Extra headers for this step (besides `[app] headers` and the test
    /// account's token, which every step carries); `{name}` filled as is.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Values taken from this step's response for later steps and the
    /// measured request: variable name → a JSON pointer into the body
    /// (`"/id"`) or `"header:<name>"`. E.g. `capture = { chat_id = "/id" }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capture: BTreeMap<String, String>,
}

/// `[app.paths.answer_socket]`: a Socket.IO connection the flow opens
/// first (its first step), on which the answer to the path's measured HTTP
/// request arrives as events — Open WebUI's way: the browser's socket is
/// open, the POST returns a task id, the tokens come over the socket. The
/// measured request's stamps (TTFT and the rest) are the socket's events,
/// timed from that request's start; its HTTP response is read whole and
/// must be 2xx.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerSocketSection {
    /// The step's name in reports (default `socket`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The Socket.IO endpoint's path on the app's base URL, e.g.
    /// `/ws/socket.io/` (`EIO=4&transport=websocket` is added unless the
    /// path names `EIO=`).
    pub path: String,
    /// A variable the Socket.IO session id (`40{"sid":…}`) is captured
    /// into, for later steps and the measured request (e.g. `sid`, used as
    /// `"session_id": "{sid}"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<String>,
    /// The event that carries the answer (e.g. `chat-events`); its
    /// payload is read with the path's `format` (e.g. `sse-json:/data/content`).
    pub reply_event: String,
    /// JSON pointer into a reply's payload whose `true` ends the answer
    /// (e.g. `/data/done`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_pointer: Option<String>,
    /// An event whose arrival ends the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_event: Option<String>,
    /// JSON pointer into a reply's payload where a value other than null
    /// or false is an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_pointer: Option<String>,
    /// The CONNECT packet's auth payload, a JSON object; a token in it is
    /// named as `$NAME` and read from the environment at run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
}

impl AnswerSocketSection {
    /// The step's name in reports.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("socket")
    }

    /// The drive-side Socket.IO settings: nothing is emitted on this socket.
    pub fn spec(&self) -> crate::transport::WebSocketSpec {
        crate::transport::WebSocketSpec {
            opening: None,
            await_type: None,
            socketio: Some(crate::transport::SocketIoSpec {
                event: String::new(),
                reply_event: self.reply_event.clone(),
                done_pointer: self.done_pointer.clone(),
                end_event: self.end_event.clone(),
                error_pointer: self.error_pointer.clone(),
                auth: self.auth.clone(),
            }),
        }
    }
}

/// A variable name: a letter or `_`, then letters, digits or `_`.
fn is_var_name(s: &str) -> bool {
    placeholders(&format!("{{{s}}}")) == [s]
}

/// Check path `i`'s flow: names, methods, paths, captures, and that every
/// `{name}` a request uses is `prompt` or captured by an earlier step.
/// `Err((key, message))`.
pub(super) fn check(i: usize, p: &PathSection) -> Result<(), (String, String)> {
    let mut known: Vec<String> = vec!["prompt".into()];
    if let Some(sock) = &p.answer_socket {
        let key = |k: &str| format!("app.paths[{i}].answer_socket.{k}");
        if p.websocket.is_some() {
            return Err((
                key("path"),
                "a path is measured over its own WebSocket or answered on a flow's socket, not both"
                    .into(),
            ));
        }
        if !sock.path.starts_with('/') {
            return Err((key("path"), format!("{:?} must start with /", sock.path)));
        }
        if sock.reply_event.is_empty() {
            return Err((
                key("reply_event"),
                "name the event that carries the answer".into(),
            ));
        }
        for (k, ptr) in [
            ("done_pointer", &sock.done_pointer),
            ("error_pointer", &sock.error_pointer),
        ] {
            if let Some(ptr) = ptr
                && !ptr.starts_with('/')
            {
                return Err((
                    key(k),
                    format!("{ptr:?} is not a JSON pointer (e.g. \"/data/done\")"),
                ));
            }
        }
        if let Some(a) = &sock.auth
            && !serde_json::from_str::<serde_json::Value>(a).is_ok_and(|v| v.is_object())
        {
            return Err((
                key("auth"),
                "not a JSON object (e.g. '{\"token\": \"$TOKEN\"}')".into(),
            ));
        }
        if let Some(v) = &sock.sid {
            if !is_var_name(v) || v == "prompt" {
                return Err((key("sid"), format!("{v:?} cannot name a variable")));
            }
            known.push(v.clone());
        }
    }
    let uses = |key: String, text: &str, known: &[String]| -> Result<(), (String, String)> {
        for name in placeholders(text) {
            if !known.iter().any(|k| k == name) {
                return Err((
                    key,
                    format!(
                        "{{{name}}} is not captured by an earlier step (known: {})",
                        known
                            .iter()
                            .map(|k| format!("{{{k}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        Ok(())
    };
    for (j, s) in p.steps.iter().enumerate() {
        let key = |k: &str| format!("app.paths[{i}].steps[{j}].{k}");
        if s.name.trim().is_empty() {
            return Err((key("name"), "a step needs a name".into()));
        }
        if p.steps[..j].iter().any(|t| t.name == s.name) {
            return Err((key("name"), format!("{:?} names two steps", s.name)));
        }
        if let Some(m) = &s.method
            && http::Method::from_bytes(m.to_ascii_uppercase().as_bytes()).is_err()
        {
            return Err((key("method"), format!("{m:?} is not an HTTP method")));
        }
        if !s.path.starts_with('/') {
            return Err((key("path"), format!("{:?} must start with /", s.path)));
        }
        uses(key("path"), &s.path, &known)?;
        if let Some(b) = &s.body {
            uses(key("body"), b, &known)?;
            if let Some(m) = super::validate::json_template_error(b) {
                return Err((key("body"), m));
            }
        }
        for (h, v) in &s.headers {
            if http::HeaderName::from_bytes(h.as_bytes()).is_err() {
                return Err((key("headers"), format!("{h:?} is not a header name")));
            }
            uses(key("headers"), v, &known)?;
        }
        for (var, from) in &s.capture {
            if !is_var_name(var) || var == "prompt" {
                return Err((
                    key("capture"),
                    format!(
                        "{var:?} cannot name a variable (a letter or _, then letters, digits or _; not prompt)"
                    ),
                ));
            }
            from.parse::<CaptureFrom>()
                .map_err(|m| (key(&format!("capture.{var}")), m))?;
        }
        known.extend(s.capture.keys().cloned());
    }
    uses(format!("app.paths[{i}].path"), &p.path, &known)?;
    uses(format!("app.paths[{i}].body"), &p.body, &known)?;
    if let Some(m) = &p.method {
        let key = format!("app.paths[{i}].method");
        let method = http::Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| (key.clone(), format!("{m:?} is not an HTTP method")))?;
        if matches!(method, http::Method::GET | http::Method::HEAD) && !p.body.is_empty() {
            return Err((
                format!("app.paths[{i}].body"),
                format!("a {method} request sends no body: set body = \"\""),
            ));
        }
    }
    Ok(())
}

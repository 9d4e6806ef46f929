//! Flows: an app path that is several requests, as the user's action is
//! in many apps (create a chat, then send the message with its id; start
//! a job, then stream its events). The earlier steps are sent in order
//! on one connection; each may capture values from its response — a JSON
//! pointer into the body or a response header — into named variables
//! that later steps and the measured request use as `{name}`. The last
//! request, the path's own, is the measured stream.
//!
//! This module holds what is run: the steps as request templates with
//! their captures, and the one substitution of variables into a template
//! (percent-encoded in the URL, JSON-escaped in the body, as is in a
//! header). `firsttoken-drive` sends them.

use std::str::FromStr;

use bytes::Bytes;
use http::{HeaderName, HeaderValue};

use crate::{PlanError, RequestTemplate};

/// A turn of a conversation (see [`crate::config::ConversationSection`]),
/// as the lane that sends it needs it: the turn's question is the flow's
/// `prompt` variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// The turn's number, 1 for the first message of a new conversation.
    pub number: u32,
    /// How the history reaches the app.
    pub history: TurnHistory,
}

/// How a conversation's history reaches the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnHistory {
    /// The request carries it: the messages list at this JSON pointer of
    /// the body.
    Messages {
        /// Where the list goes, e.g. `/messages`.
        pointer: String,
    },
    /// The app keeps it: the flow's steps run on the first turn only and
    /// later turns reuse what they captured.
    App,
}

/// One earlier request of a flow.
#[derive(Debug, Clone)]
pub struct FlowStep {
    /// Its name in reports, e.g. `create`.
    pub name: String,
    /// The request, `{name}` placeholders still in it.
    pub request: RequestTemplate,
    /// Values taken from its response, for later requests.
    pub captures: Vec<Capture>,
}

/// A value taken from a step's response into a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// The variable, used as `{var}` later.
    pub var: String,
    /// Where in the response it is.
    pub from: CaptureFrom,
}

/// Where a captured value is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureFrom {
    /// A JSON pointer into the response body (RFC 6901, e.g. `/id` or
    /// `/data/0/chat_id`); a string is taken as is, a number or boolean
    /// as its JSON text.
    Json(String),
    /// A response header.
    Header(HeaderName),
}

impl FromStr for CaptureFrom {
    type Err = String;

    /// `/pointer` (or `""`, the whole body) or `header:<name>`.
    fn from_str(s: &str) -> Result<CaptureFrom, String> {
        if let Some(h) = s.strip_prefix("header:") {
            return HeaderName::from_str(h.trim())
                .map(CaptureFrom::Header)
                .map_err(|_| format!("{h:?} is not a header name"));
        }
        if s.is_empty() || s.starts_with('/') {
            return Ok(CaptureFrom::Json(s.to_string()));
        }
        Err(format!(
            "{s:?} is neither a JSON pointer (starting with /, e.g. /id) nor header:<name>"
        ))
    }
}

impl CaptureFrom {
    /// The captured value from a response's headers and body, or why not.
    pub fn take(&self, headers: &http::HeaderMap, body: &[u8]) -> Result<String, String> {
        match self {
            CaptureFrom::Header(h) => headers
                .get(h)
                .ok_or_else(|| format!("the response has no {h} header"))?
                .to_str()
                .map(str::to_string)
                .map_err(|_| format!("the {h} header is not text")),
            CaptureFrom::Json(p) => {
                let doc: serde_json::Value = serde_json::from_slice(body)
                    .map_err(|e| format!("the response body is not JSON ({e})"))?;
                match doc.pointer(p) {
                    None | Some(serde_json::Value::Null) => {
                        Err(format!("the response body has nothing at {p:?}"))
                    }
                    Some(serde_json::Value::String(s)) => Ok(s.clone()),
                    Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                        Ok(v.to_string())
                    }
                    Some(_) => Err(format!(
                        "the response body has an object or a list at {p:?}, not a value"
                    )),
                }
            }
        }
    }
}

/// The `{name}` placeholders of a template, in order (a name is a letter
/// or `_`, then letters, digits or `_`; JSON's own braces never match).
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let name_len = after
            .char_indices()
            .take_while(|&(i, c)| {
                c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
            })
            .count();
        if name_len > 0 && after[name_len..].starts_with('}') {
            out.push(&after[..name_len]);
            rest = &after[name_len + 1..];
        } else {
            rest = after;
        }
    }
    out
}

/// JSON-escape `s` for use inside a JSON string literal.
pub fn json_escape(s: &str) -> String {
    let quoted = serde_json::Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Fill `{name}` placeholders of a body template with JSON-escaped values;
/// other braces are left alone.
pub fn fill_json(template: &str, vars: &[(String, String)]) -> String {
    fill_with(template, vars, json_escape)
}

/// One pass over `template`: each `{name}` with a value becomes the value,
/// encoded; a value is never searched again (a prompt holding `{id}`
/// stays as written).
fn fill_with(template: &str, vars: &[(String, String)], enc: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    for name in placeholders(template) {
        let token = format!("{{{name}}}");
        let Some(at) = rest.find(&token) else {
            continue;
        };
        out.push_str(&rest[..at]);
        match vars.iter().find(|(k, _)| k == name) {
            Some((_, v)) => out.push_str(&enc(v)),
            None => out.push_str(&token),
        }
        rest = &rest[at + token.len()..];
    }
    out.push_str(rest);
    out
}

/// A flow as one request of it is sent: the earlier steps and the
/// variables known before the first (`prompt`).
#[derive(Debug, Clone)]
pub struct Flow {
    /// The earlier steps, in order.
    pub steps: Vec<FlowStep>,
    /// The starting variables, e.g. `("prompt", text)`.
    pub vars: Vec<(String, String)>,
    /// A Socket.IO connection opened before the steps, on which the
    /// measured request's answer arrives; `None`: the answer is the
    /// measured request's own response.
    pub socket: Option<FlowSocket>,
    /// In a conversation, the turn this request is; `None` otherwise.
    pub turn: Option<Turn>,
}

/// The socket a flow opens first (its first step): where, how, and the
/// variable its Socket.IO session id is captured into.
#[derive(Debug, Clone)]
pub struct FlowSocket {
    /// The step's name in reports.
    pub name: String,
    /// The socket's target, TLS, timeouts and transport (a WebSocket
    /// speaking Socket.IO); the measured request's format reads its events.
    pub spec: crate::ProbeSpec,
    /// The variable the session id goes into.
    pub sid_var: Option<String>,
}

/// Percent-encode everything but RFC 3986's unreserved characters: a
/// value is one path segment or query value, never a separator.
fn url_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl RequestTemplate {
    /// This template with `{name}` replaced by the variables' values:
    /// percent-encoded in the path and query, JSON-escaped in the body, as
    /// they are in header values (a header keeps its secrecy). A value a
    /// header cannot carry is an error naming the header.
    pub fn with_vars(&self, vars: &[(String, String)]) -> Result<RequestTemplate, PlanError> {
        if vars.is_empty() {
            return Ok(self.clone());
        }
        let mut out = self.clone();
        out.target.path_and_query = fill_with(&self.target.path_and_query, vars, url_escape);
        if let Some(b) = &self.body {
            let text = String::from_utf8_lossy(b);
            if !placeholders(&text).is_empty() {
                out.body = Some(Bytes::from(fill_json(&text, vars)));
            }
        }
        for (name, value) in &mut out.headers {
            let Ok(text) = value.to_str() else { continue };
            if placeholders(text).is_empty() {
                continue;
            }
            let filled = fill_with(text, vars, str::to_string);
            let mut v = HeaderValue::from_str(&filled).map_err(|_| PlanError::Header {
                header: name.to_string(),
                reason: "a captured value has characters a header cannot carry".into(),
            })?;
            v.set_sensitive(value.is_sensitive());
            *value = v;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;

    #[test]
    fn placeholders_are_names_in_braces_not_json() {
        assert_eq!(
            placeholders(r#"{"data": ["{prompt}"], "id": "{chat_id}", "n": {x1}, "e": {}}"#),
            vec!["prompt", "chat_id", "x1"]
        );
        assert!(placeholders("{1a} {a-b} {").is_empty());
    }

    #[test]
    fn values_are_escaped_for_where_they_go() {
        let target = Target::parse("http://127.0.0.1:9/api/chats/{id}/send?x={id}").unwrap();
        let mut t =
            RequestTemplate::new(target, None, Some(Bytes::from(r#"{"chat": "{id}"}"#))).unwrap();
        t.add_header_line("x-chat: {id}").unwrap();
        let vars = vec![("id".to_string(), "a/b \"c\"".to_string())];
        let r = t.with_vars(&vars).unwrap();
        assert_eq!(
            r.target.path_and_query,
            "/api/chats/a%2Fb%20%22c%22/send?x=a%2Fb%20%22c%22"
        );
        assert_eq!(r.body.unwrap(), Bytes::from(r#"{"chat": "a/b \"c\""}"#));
        assert_eq!(r.headers[0].1, "a/b \"c\"");
        let bad = vec![("id".to_string(), "a\nb".to_string())];
        assert!(matches!(t.with_vars(&bad), Err(PlanError::Header { .. })));
    }

    #[test]
    fn a_value_is_never_filled_again() {
        let vars = vec![
            ("prompt".to_string(), "say {id}".to_string()),
            ("id".to_string(), "7".to_string()),
        ];
        assert_eq!(
            fill_json(r#"{"m": "{prompt}", "id": {id}, "x": "{other}"}"#, &vars),
            r#"{"m": "say {id}", "id": 7, "x": "{other}"}"#
        );
    }

    #[test]
    fn captures_read_pointers_and_headers() {
        let mut h = http::HeaderMap::new();
        h.insert("x-chat-id", HeaderValue::from_static("c-7"));
        let body = br#"{"id": 42, "event_id": "e1", "meta": {"ok": true}, "list": [1]}"#;
        let take = |s: &str| s.parse::<CaptureFrom>().unwrap().take(&h, body);
        assert_eq!(take("/id").unwrap(), "42");
        assert_eq!(take("/event_id").unwrap(), "e1");
        assert_eq!(take("/meta/ok").unwrap(), "true");
        assert_eq!(take("header:X-Chat-Id").unwrap(), "c-7");
        assert!(
            take("/missing")
                .unwrap_err()
                .contains("nothing at \"/missing\"")
        );
        assert!(take("/list").unwrap_err().contains("not a value"));
        assert!(
            take("header:x-other")
                .unwrap_err()
                .contains("no x-other header")
        );
        assert!(
            "id".parse::<CaptureFrom>()
                .unwrap_err()
                .contains("JSON pointer")
        );
        assert!(
            CaptureFrom::Json("/id".into())
                .take(&h, b"not json")
                .unwrap_err()
                .contains("not JSON")
        );
    }
}

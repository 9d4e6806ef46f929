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

/// A variable name: a letter or `_`, then letters, digits or `_`.
fn is_var_name(s: &str) -> bool {
    placeholders(&format!("{{{s}}}")) == [s]
}

/// Check path `i`'s flow: names, methods, paths, captures, and that every
/// `{name}` a request uses is `prompt` or captured by an earlier step.
/// `Err((key, message))`.
pub(super) fn check(i: usize, p: &PathSection) -> Result<(), (String, String)> {
    let mut known: Vec<String> = vec!["prompt".into()];
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

//! Conversations: a path's turns sent in order on one slot, each turn a
//! measured request (see [`firsttoken_plan::flow::Turn`]). What a
//! conversation remembers between its turns lives in the slot: the
//! messages so far (when the request carries the history) or the values
//! the first turn's steps captured (when the app keeps it).

use firsttoken_plan::RequestTemplate;
use firsttoken_plan::flow::{Turn, TurnHistory};
use serde_json::{Value, json};

use crate::flow::Vars;

/// What a conversation holds after its turns so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Conversation {
    /// The messages sent and received, in order (history carried by the
    /// request): each turn's question, then its answer as streamed.
    messages: Vec<Value>,
    /// The variables the first turn's steps captured (history kept by
    /// the app), `None` until a first turn succeeded.
    vars: Option<Vars>,
    /// Messages the conversation holds (each answered turn adds its
    /// question and its answer).
    held: u32,
}

impl Conversation {
    /// The state `turn` continues: a first turn starts a new one, a later
    /// turn the one `kept` (the slot's previous turn left it).
    pub(crate) fn continuing(turn: &Turn, kept: Option<Conversation>) -> Conversation {
        if turn.number <= 1 {
            Conversation::default()
        } else {
            kept.unwrap_or_default()
        }
    }

    /// Messages held before this turn's question.
    pub(crate) fn held(&self) -> u32 {
        self.held
    }

    /// The values to send the turn with, when the app keeps the history
    /// and an earlier turn captured them: the flow's steps are then not
    /// run again (`prompt`, the turn's question, is the flow's own).
    pub(crate) fn captured(&self, turn: &Turn, flow_vars: &Vars) -> Option<Vars> {
        if turn.history != TurnHistory::App {
            return None;
        }
        let mut vars = self.vars.clone()?;
        for (k, v) in flow_vars {
            vars.retain(|(n, _)| n != k);
            vars.push((k.clone(), v.clone()));
        }
        Some(vars)
    }

    /// `request` with the history in its body, when the request carries
    /// it: the messages so far and then the question, at the turn's
    /// pointer. `Err` names what is wrong with the body.
    pub(crate) fn with_history(
        &self,
        turn: &Turn,
        request: RequestTemplate,
        question: &str,
    ) -> Result<RequestTemplate, String> {
        let TurnHistory::Messages { pointer } = &turn.history else {
            return Ok(request);
        };
        let body = request.body.as_deref().unwrap_or_default();
        let mut doc: Value = serde_json::from_slice(body)
            .map_err(|e| format!("the body is not JSON ({e}): the history cannot go in it"))?;
        let mut list = self.messages.clone();
        list.push(json!({"role": "user", "content": question}));
        set_pointer(&mut doc, pointer, Value::Array(list))?;
        let mut request = request;
        request.body = Some(bytes::Bytes::from(doc.to_string()));
        Ok(request)
    }

    /// After the turn: an answered turn adds its question and its answer
    /// (the text as streamed) and, the first time, the captured values;
    /// a failed turn adds nothing.
    pub(crate) fn answered(
        &mut self,
        turn: &Turn,
        question: &str,
        answer: Option<String>,
        vars: Option<Vars>,
    ) {
        if let TurnHistory::Messages { .. } = turn.history {
            self.messages
                .push(json!({"role": "user", "content": question}));
            self.messages
                .push(json!({"role": "assistant", "content": answer.unwrap_or_default()}));
        }
        if self.vars.is_none() {
            self.vars = vars;
        }
        self.held = self.held.saturating_add(2);
    }
}

/// Set the value at JSON pointer `pointer` in `doc`, making objects on
/// the way; `Err` when the way is blocked by something that is not an
/// object (or an array with that index).
fn set_pointer(doc: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    if pointer.is_empty() {
        *doc = value;
        return Ok(());
    }
    let tokens: Vec<String> = pointer
        .strip_prefix('/')
        .ok_or_else(|| format!("{pointer:?} is not a JSON pointer"))?
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut at = doc;
    for (i, t) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        at = match at {
            Value::Object(map) => {
                let slot = map.entry(t.clone()).or_insert_with(|| json!({}));
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            Value::Array(items) => {
                let slot = t
                    .parse::<usize>()
                    .ok()
                    .and_then(|k| items.get_mut(k))
                    .ok_or_else(|| {
                        format!("the body has no item {t:?} on the way to {pointer:?}")
                    })?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => {
                return Err(format!(
                    "the body has a value, not an object, on the way to {pointer:?}"
                ));
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(number: u32) -> Turn {
        Turn {
            number,
            history: TurnHistory::Messages {
                pointer: "/messages".into(),
            },
        }
    }

    fn template(body: &str) -> RequestTemplate {
        RequestTemplate::new(
            firsttoken_plan::Target::parse("http://127.0.0.1:9/v1/chat/completions").unwrap(),
            None,
            Some(bytes::Bytes::from(body.to_string())),
        )
        .unwrap()
    }

    fn messages(r: &RequestTemplate) -> Value {
        let doc: Value = serde_json::from_slice(r.body.as_deref().unwrap()).unwrap();
        doc["messages"].clone()
    }

    #[test]
    fn the_history_grows_by_each_answered_turn_and_a_failed_turn_adds_nothing() {
        let body = r#"{"model": "m", "stream": true, "messages": [{"role": "user", "content": "{prompt}"}]}"#;
        let mut c = Conversation::continuing(&turn(1), None);
        let first = c.with_history(&turn(1), template(body), "hi").unwrap();
        assert_eq!(messages(&first), json!([{"role": "user", "content": "hi"}]));
        assert_eq!(c.held(), 0);
        c.answered(&turn(1), "hi", Some("Hello there".into()), None);
        let second = c.with_history(&turn(2), template(body), "and?").unwrap();
        assert_eq!(
            messages(&second),
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello there"},
                {"role": "user", "content": "and?"},
            ])
        );
        assert_eq!(c.held(), 2);
        // A later turn continues what the slot kept; a first turn starts afresh.
        let kept = Conversation::continuing(&turn(2), Some(c.clone()));
        assert_eq!(kept, c);
        assert_eq!(Conversation::continuing(&turn(1), Some(c)).held(), 0);
    }

    #[test]
    fn the_pointer_is_made_where_missing_and_a_blocked_way_is_an_error() {
        let mut doc = json!({"input": {"model": "m"}});
        set_pointer(&mut doc, "/input/messages", json!([1])).unwrap();
        assert_eq!(doc, json!({"input": {"model": "m", "messages": [1]}}));
        let mut doc = json!({"input": "text"});
        let e = set_pointer(&mut doc, "/input/messages", json!([])).unwrap_err();
        assert!(e.contains("not an object"), "{e}");
        let c = Conversation::default();
        let e = c
            .with_history(&turn(1), template("not json"), "q")
            .unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
    }

    #[test]
    fn an_app_kept_history_reuses_the_first_turns_captures_with_the_new_question() {
        let app = |number| Turn {
            number,
            history: TurnHistory::App,
        };
        let mut c = Conversation::continuing(&app(1), None);
        let flow_vars: Vars = vec![("prompt".into(), "first".into())];
        assert_eq!(
            c.captured(&app(1), &flow_vars),
            None,
            "nothing captured yet"
        );
        let after: Vars = vec![("prompt".into(), "first".into()), ("id".into(), "7".into())];
        c.answered(&app(1), "first", None, Some(after));
        let next: Vars = vec![("prompt".into(), "second".into())];
        let vars = c.captured(&app(2), &next).unwrap();
        assert!(vars.contains(&("id".into(), "7".into())));
        assert!(vars.contains(&("prompt".into(), "second".into())));
        assert!(!vars.contains(&("prompt".into(), "first".into())));
        assert_eq!(c.held(), 2);
    }
}

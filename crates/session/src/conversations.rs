//! Reading a path's conversations file (`[app.paths.conversation] file`):
//! JSON Lines, one conversation a line, each a list of the user's turns
//! (`["hi", "and then?"]`) or an object with such a `turns` list.

use crate::SessionError;

/// The conversations of `file`, each its turns in order. Blank lines are
/// skipped; a line that is not a non-empty list of non-empty strings is
/// an error naming the file and the line; a file with no conversation
/// is an error.
pub(crate) fn read(file: &str) -> Result<Vec<Vec<String>>, SessionError> {
    let text = std::fs::read_to_string(file).map_err(|source| SessionError::Read {
        path: format!("the conversations file {file}"),
        source,
    })?;
    parse(&text).map_err(|(line, m)| {
        SessionError::Invalid(format!("the conversations file {file}, line {line}: {m}"))
    })
}

/// The conversations of a file's text; `Err((line, message))`.
fn parse(text: &str) -> Result<Vec<Vec<String>>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| (n, format!("not JSON ({e})")))?;
        let list = match &v {
            serde_json::Value::Array(a) => a,
            serde_json::Value::Object(o) => match o.get("turns") {
                Some(serde_json::Value::Array(a)) => a,
                _ => return Err((n, "an object needs a \"turns\" list".into())),
            },
            _ => {
                return Err((
                    n,
                    "a conversation is a list of turns, e.g. [\"hi\", \"and then?\"]".into(),
                ));
            }
        };
        let mut turns = Vec::with_capacity(list.len());
        for (j, t) in list.iter().enumerate() {
            match t.as_str() {
                Some(s) if !s.trim().is_empty() => turns.push(s.to_string()),
                _ => {
                    return Err((n, format!("turn {} is not a non-empty string", j + 1)));
                }
            }
        }
        if turns.is_empty() {
            return Err((n, "a conversation with no turn".into()));
        }
        out.push(turns);
    }
    if out.is_empty() {
        return Err((1, "no conversation in the file".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn lists_and_objects_are_read_and_bad_lines_are_named() {
        let text = "[\"hi\", \"and then?\"]\n\n{\"turns\": [\"one\"]}\n";
        assert_eq!(
            parse(text).unwrap(),
            vec![
                vec!["hi".to_string(), "and then?".into()],
                vec!["one".into()]
            ]
        );
        assert_eq!(parse("[\"a\"]\n[1]\n").unwrap_err().0, 2);
        assert!(parse("[]").unwrap_err().1.contains("no turn"));
        assert!(parse("{\"x\": 1}").unwrap_err().1.contains("turns"));
        assert!(parse("not json").unwrap_err().1.contains("not JSON"));
        assert!(parse("\n\n").unwrap_err().1.contains("no conversation"));
    }
}

//! `$NAME` and `${NAME}` in header values, read from the environment, so a
//! secret is named in a config or on a command line and never written there.

/// A header value names an environment variable that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// `${` without its `}`.
    #[error("unclosed ${{ in a header value")]
    Unclosed,
    /// The variable is not set (or not valid Unicode).
    #[error("the header refers to ${0}, which is not set in the environment")]
    Unset(String),
}

/// Expand `$NAME` and `${NAME}` from the environment; `$$` is a literal `$`,
/// and a `$` followed by no name stays as it is.
pub fn expand_env(value: &str) -> Result<String, EnvError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix('$') {
            out.push('$');
            rest = r;
            continue;
        }
        let (name, after) = if let Some(r) = rest.strip_prefix('{') {
            let end = r.find('}').ok_or(EnvError::Unclosed)?;
            (&r[..end], &r[end + 1..])
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        };
        if name.is_empty() {
            out.push('$');
            continue;
        }
        let v = std::env::var(name).map_err(|_| EnvError::Unset(name.to_string()))?;
        out.push_str(&v);
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_dollars_and_errors() {
        // PATH is set in every environment tests run in.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand_env("a $PATH b").unwrap(), format!("a {path} b"));
        assert_eq!(expand_env("x${PATH}y").unwrap(), format!("x{path}y"));
        assert_eq!(expand_env("$$5 and $ alone").unwrap(), "$5 and $ alone");
        assert_eq!(expand_env("${PATH"), Err(EnvError::Unclosed));
        assert_eq!(
            expand_env("Bearer $FIRSTTOKEN_SURELY_UNSET_VAR"),
            Err(EnvError::Unset("FIRSTTOKEN_SURELY_UNSET_VAR".into()))
        );
    }
}

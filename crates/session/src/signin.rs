//! Sign-in to pre-provisioned accounts (`[app.auth] signin_path`), for
//! apps whose sign-up is closed: each account listed in an env var or a
//! file, or the one account of `email` and `password_env`, is signed in
//! once and its token joins the rotation. These accounts are never
//! deleted, and their ids are never stored.
//!
//! Passwords are read at run time and kept only in memory: never stored
//! (the config names the env var or file, not the secret), logged or
//! printed. A [`Credential`] prints its password as `***`, and an error
//! quoting the app's answer has the password masked.

use bytes::Bytes;

use firsttoken_drive::Slot;
use firsttoken_plan::config::{AccountSource, AuthSection};
use firsttoken_plan::{ProbeSpec, RequestTemplate, Target};

use crate::SessionError;
use crate::source::fill;

/// An account's e-mail and password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The account's e-mail (not a secret: it is printed in errors).
    pub email: String,
    password: String,
}

impl Credential {
    /// An account's e-mail and password.
    pub fn new(email: &str, password: &str) -> Credential {
        Credential {
            email: email.to_string(),
            password: password.to_string(),
        }
    }

    /// `text` with the password (raw and JSON-escaped) masked as `***`.
    fn mask(&self, text: &str) -> String {
        let escaped = fill("{p}", &[("p", &self.password)]);
        text.replace(&self.password, "***").replace(&escaped, "***")
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("email", &self.email)
            .field("password", &"***")
            .finish()
    }
}

fn invalid(message: String) -> SessionError {
    SessionError::Invalid(message)
}

/// `email:password` entries of `text`, split at every character in `seps`
/// (blank entries and `#` comment lines skipped), for the error messages
/// named `origin`. An entry's position is named in an error, never its
/// text: it may hold a password.
fn parse_list(text: &str, seps: &[char], origin: &str) -> Result<Vec<Credential>, SessionError> {
    let mut out = Vec::new();
    for (i, entry) in text.split(seps).map(str::trim).enumerate() {
        if entry.is_empty() || entry.starts_with('#') {
            continue;
        }
        match entry.split_once(':') {
            Some((email, password)) if !email.trim().is_empty() && !password.is_empty() => {
                out.push(Credential::new(email.trim(), password));
            }
            _ => {
                return Err(invalid(format!(
                    "{origin}: entry {} is not email:password",
                    i + 1
                )));
            }
        }
    }
    if out.is_empty() {
        return Err(invalid(format!(
            "{origin} lists no account (email:password entries)"
        )));
    }
    Ok(out)
}

/// The accounts `source` names, read now. A missing env var or file, or
/// an entry that is not `email:password`, is an error naming where.
pub fn read_accounts(source: AccountSource<'_>) -> Result<Vec<Credential>, SessionError> {
    let var = |name: &str, key: &str| {
        std::env::var(name).map_err(|_| {
            invalid(format!(
                "app.auth.{key} names {name}, which is not set in the environment"
            ))
        })
    };
    match source {
        AccountSource::Env(name) => parse_list(
            &var(name, "accounts_env")?,
            &['\n', ','],
            &format!("app.auth.accounts_env ({name})"),
        ),
        AccountSource::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| SessionError::Read {
                path: format!("the accounts file {path} (app.auth.accounts_file)"),
                source,
            })?;
            parse_list(&text, &['\n'], &format!("app.auth.accounts_file ({path})"))
        }
        AccountSource::One {
            email,
            password_env,
        } => {
            let password = var(password_env, "password_env")?;
            if password.is_empty() {
                return Err(invalid(format!(
                    "app.auth.password_env names {password_env}, which is empty"
                )));
            }
            Ok(vec![Credential::new(email, &password)])
        }
    }
}

fn pointer_text(v: &serde_json::Value, pointer: &str) -> Option<String> {
    match v.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Sign in to each of `accounts` at `path` (no credential sent: the body
/// carries the e-mail and password), pushing each bearer token to
/// `tokens`. Ctrl-C stops it between accounts and during one.
pub async fn sign_in(
    app: &ProbeSpec,
    (base_url, path): (&str, &str),
    auth: &AuthSection,
    accounts: &[Credential],
    tokens: &mut Vec<String>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(), SessionError> {
    let fail = |m: String| SessionError::Accounts(m);
    let mut spec = app.clone();
    spec.request.target = Target::parse(&format!("{}{path}", base_url.trim_end_matches('/')))?;
    let mut slot = Slot::new(&spec)?;
    for account in accounts {
        let email = &account.email;
        let mut req = RequestTemplate::new(spec.request.target.clone(), Some("POST"), None)?;
        req.headers = spec.request.headers.clone();
        req.body = Some(Bytes::from(fill(
            &auth.body,
            &[("email", email), ("password", &account.password)],
        )));
        let interrupted = || {
            fail(format!(
                "interrupted (Ctrl-C or SIGTERM) after {} of {} accounts were signed in to",
                tokens.len(),
                accounts.len()
            ))
        };
        if cancel.is_cancelled() {
            return Err(interrupted());
        }
        let (status, body) = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(interrupted()),
            r = slot.fetch(&req) => r,
        }
        .map_err(|e| fail(format!("sign-in of {email} failed: {}", account.mask(&e))))?;
        if !(200..300).contains(&status) {
            let said: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(fail(format!(
                "sign-in of {email} answered HTTP {status}: {}",
                account.mask(&said)
            )));
        }
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        let token = pointer_text(&v, &auth.token_pointer).ok_or_else(|| {
            fail(format!(
                "the sign-in response for {email} has no token at {} (app.auth.token_pointer)",
                auth.token_pointer
            ))
        })?;
        tokens.push(token);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_errors_never_quote_an_entry() {
        let list = parse_list("a@x:p1, b@x:p:2\n\n# c\n", &['\n', ','], "env").unwrap();
        assert_eq!(
            list,
            vec![Credential::new("a@x", "p1"), Credential::new("b@x", "p:2")]
        );
        let e = parse_list("a@x:p1,secret-no-colon", &[','], "env").unwrap_err();
        let e = e.to_string();
        assert!(e.contains("entry 2 is not email:password"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        assert!(parse_list(" \n", &['\n'], "f").is_err());
        assert!(!format!("{:?}", list[0]).contains("p1"));
    }

    #[test]
    fn the_password_is_masked_raw_and_escaped() {
        let c = Credential::new("a@x", "p\"w");
        assert_eq!(c.mask(r#"bad p"w and p\"w"#), "bad *** and ***");
    }
}

//! Test hygiene: sign up the session's own test accounts
//! (`bench-<session>-<n>@bench.invalid`), and at the end delete exactly
//! those ids and count what is left; or sign in to pre-provisioned
//! accounts ([`sign_in`]), which are never deleted and whose passwords are
//! never stored, logged or printed.
//!
//! Credentials: sign-up and sign-in send none; the cleanup's HTTP request
//! sends the admin token of `admin_token_env` (else each account's own
//! token), its SQL the app database URL.

use bytes::Bytes;

use firsttoken_drive::Slot;
use firsttoken_plan::config::{AuthSection, CleanupSection};
use firsttoken_plan::{ProbeSpec, RequestTemplate, Target};
use firsttoken_record::Store;
use firsttoken_record::session::Cleanup;

use crate::SessionError;
use crate::source::fill;

fn accounts_error(message: String) -> SessionError {
    SessionError::Accounts(message)
}

/// Accounts created for a session.
#[derive(Debug, Default)]
pub struct Accounts {
    /// Account ids as the app reported them.
    pub ids: Vec<String>,
    /// Their bearer tokens.
    pub tokens: Vec<String>,
}

fn pointer_text(v: &serde_json::Value, pointer: &str) -> Option<String> {
    match v.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Sign up `auth.accounts` accounts. Each id is stored with the session the
/// moment the app reports it, so `firsttoken cleanup` finds the accounts even
/// after a crash; ids created before a failure are also kept in `created`.
pub async fn sign_up(
    app: &ProbeSpec,
    base_url: &str,
    auth: &AuthSection,
    (store, session_id): (&Store, &str),
    created: &mut Accounts,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(), SessionError> {
    let Ok(firsttoken_plan::config::AuthMode::SignUp {
        path,
        id_pointer,
        accounts,
    }) = auth.mode()
    else {
        return Err(SessionError::Invalid(
            "app.auth has no signup_path: it signs in (sign_in)".into(),
        ));
    };
    let mut spec = app.clone();
    spec.request.target = Target::parse(&format!("{}{path}", base_url.trim_end_matches('/')))?;
    let mut slot = Slot::new(&spec)?;
    let short: String = session_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    for n in 0..accounts {
        let email = format!("bench-{short}-{n}@bench.invalid");
        // A per-account password nobody needs to know again: the session keeps the token.
        let password = format!("ft-{short}-{n}-{}", std::process::id());
        let mut req = RequestTemplate::new(spec.request.target.clone(), Some("POST"), None)?;
        req.headers = spec.request.headers.clone();
        req.body = Some(Bytes::from(fill(
            &auth.body,
            &[("email", &email), ("password", &password)],
        )));
        // Ctrl-C stops the sign-up between accounts and during one; the
        // accounts created so far are deleted by the session's cleanup.
        let interrupted = || {
            accounts_error(format!(
                "interrupted (Ctrl-C or SIGTERM) after {} of {} test accounts were signed up",
                created.ids.len(),
                accounts
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
        .map_err(|e| accounts_error(format!("sign-up of {email} failed: {e}")))?;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        if !(200..300).contains(&status) {
            return Err(accounts_error(format!(
                "sign-up of {email} answered HTTP {status}: {}",
                String::from_utf8_lossy(&body)
                    .chars()
                    .take(300)
                    .collect::<String>()
            )));
        }
        let id = pointer_text(&v, id_pointer).ok_or_else(|| {
            accounts_error(format!(
                "the sign-up response has no id at {id_pointer} (app.auth.id_pointer)"
            ))
        })?;
        // Kept before it is stored: if the store refuses it (a full disk),
        // the session's cleanup still deletes the account at once.
        created.ids.push(id.clone());
        if let Err(e) = store.add_test_account(session_id, &id).await {
            return Err(accounts_error(format!(
                "the id of test account {id} cannot be stored ({e}); no more accounts are created, and this one is deleted by the session's cleanup"
            )));
        }
        let token = pointer_text(&v, &auth.token_pointer).ok_or_else(|| {
            accounts_error(format!(
                "the sign-up response has no token at {} (app.auth.token_pointer)",
                auth.token_pointer
            ))
        })?;
        created.tokens.push(token);
    }
    Ok(())
}

fn quoted_ids(ids: &[String]) -> String {
    ids.iter()
        .map(|id| format!("'{}'", id.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(",")
}

/// Delete exactly `ids` and count the residue, as configured. Never fails:
/// problems are recorded in the returned [`Cleanup`].
pub async fn clean_up(
    cfg: &CleanupSection,
    base_url: &str,
    app: &ProbeSpec,
    ids: &[String],
    tokens: &[String],
) -> Cleanup {
    let mut out = Cleanup {
        created_ids: ids.to_vec(),
        ..Cleanup::default()
    };
    if ids.is_empty() {
        out.residual = Some(0);
        return out;
    }
    if let Err(e) = run_cleanup(cfg, base_url, app, ids, tokens, &mut out).await {
        out.error = Some(e.to_string());
    }
    out
}

/// The app database's URL for cleanup, if the config names one.
fn cleanup_url(cfg: &CleanupSection) -> Result<Option<String>, SessionError> {
    Ok(match (&cfg.database_url_env, &cfg.database_url) {
        (Some(var), _) => Some(std::env::var(var).map_err(|_| {
            SessionError::Invalid(format!(
                "app.cleanup.database_url_env names {var}, which is not set"
            ))
        })?),
        (None, Some(url)) => Some(url.clone()),
        (None, None) => None,
    })
}

/// Checks a cleanup before the session sends anything: the URL's
/// variable is set, the `http_delete` path makes a URL, and the
/// statements run on no id against the app's database inside a
/// transaction that is rolled back ([`crate::appdb::dry_run`]). A cleanup
/// that would fail after the run fails here instead, with nothing sent
/// and no account created.
pub async fn check_cleanup(cfg: &CleanupSection, base_url: &str) -> Result<(), SessionError> {
    if let Some(path) = &cfg.http_delete {
        Target::parse(&format!(
            "{}{}",
            base_url.trim_end_matches('/'),
            path.replace("{id}", "0")
        ))?;
        admin_token(cfg)?;
    }
    let Some(url) = cleanup_url(cfg)? else {
        return Ok(());
    };
    let none = |l: &Option<firsttoken_plan::config::SqlList>| -> Vec<String> {
        l.iter()
            .flat_map(|l| l.statements())
            .map(|s| s.replace("{ids}", "NULL"))
            .collect()
    };
    crate::appdb::dry_run(&url, &none(&cfg.delete_sql), &none(&cfg.count_sql)).await
}

/// The admin token of `admin_token_env`, when the cleanup names one.
fn admin_token(cfg: &CleanupSection) -> Result<Option<(String, String)>, SessionError> {
    let Some(var) = &cfg.admin_token_env else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(t) if !t.trim().is_empty() => Ok(Some((var.clone(), t))),
        _ => Err(SessionError::Invalid(format!(
            "app.cleanup.admin_token_env names {var}, which is not set or empty"
        ))),
    }
}

/// One `http_delete` request per id, with the admin token (else each
/// account's own). A 2xx or 404 answer counts the account as gone; the
/// first other answer stops, naming the credential it carried. Returns
/// how many are gone, and why it stopped if it did.
async fn http_cleanup(
    cfg: &CleanupSection,
    path: &str,
    (base_url, app): (&str, &ProbeSpec),
    ids: &[String],
    tokens: &[String],
    out: &mut Cleanup,
) -> (u64, Option<SessionError>) {
    let mut gone = 0;
    let r: Result<(), SessionError> = async {
        let admin = admin_token(cfg)?;
        let method = cfg.http_method();
        let url = |id: &str| {
            Target::parse(&format!(
                "{}{}",
                base_url.trim_end_matches('/'),
                path.replace("{id}", id)
            ))
        };
        let mut spec = app.clone();
        spec.request.target = url("0")?;
        let mut slot = Slot::new(&spec)?;
        for (i, id) in ids.iter().enumerate() {
            let mut req = RequestTemplate::new(url(id)?, Some(method), None)?;
            let credential = match (&admin, tokens.get(i)) {
                (Some((var, t)), _) => {
                    req.add_secret_header_line(&format!("Authorization: Bearer {t}"))?;
                    format!("the admin token from {var}")
                }
                (None, Some(t)) => {
                    req.add_secret_header_line(&format!("Authorization: Bearer {t}"))?;
                    "the test account's own token".to_string()
                }
                (None, None) => "no token".to_string(),
            };
            let (status, _) = slot.fetch(&req).await.map_err(|e| {
                accounts_error(format!("{method} for id {id}: {}", req.scrub(&e)))
            })?;
            if (200..300).contains(&status) || status == 404 {
                gone += 1;
                out.deleted += u64::from(status != 404);
                continue;
            }
            let hint = match (status, &admin) {
                (401 | 403, None) => {
                    "; deleting an account usually needs an admin: set app.cleanup.admin_token_env to the env var holding an admin's token"
                }
                (401 | 403, Some(_)) => "; the app refused the admin token (expired, or not an admin's)",
                _ => "",
            };
            return Err(accounts_error(format!(
                "{method} for id {id} answered HTTP {status} with {credential}{hint}"
            )));
        }
        Ok(())
    }
    .await;
    (gone, r.err())
}

async fn run_cleanup(
    cfg: &CleanupSection,
    base_url: &str,
    app: &ProbeSpec,
    ids: &[String],
    tokens: &[String],
    out: &mut Cleanup,
) -> Result<(), SessionError> {
    if let Some(path) = &cfg.http_delete {
        let (gone, error) = http_cleanup(cfg, path, (base_url, app), ids, tokens, out).await;
        // Without a count query, the accounts not gone are the residue.
        if cfg.count_sql.is_none() {
            out.residual = Some(ids.len() as i64 - gone as i64);
        }
        if let Some(e) = error {
            return Err(e);
        }
    }
    let url = cleanup_url(cfg)?;
    let list = quoted_ids(ids);
    if let (Some(url), Some(sqls)) = (&url, &cfg.delete_sql) {
        for sql in sqls.statements() {
            out.deleted += crate::appdb::execute(url, &sql.replace("{ids}", &list)).await?;
        }
    }
    if let (Some(url), Some(sqls)) = (&url, &cfg.count_sql) {
        // Rows the accounts left, in every table the config names.
        let mut residual = 0;
        for sql in sqls.statements() {
            residual += crate::appdb::count(url, &sql.replace("{ids}", &list)).await?;
        }
        out.residual = Some(residual);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_quoted_safely() {
        assert_eq!(quoted_ids(&["1".into(), "a'b".into()]), "'1','a''b'");
    }
}

//! Test hygiene: sign up the session's own test accounts
//! (`bench-<session>-<n>@bench.invalid`), and at the end delete exactly
//! those ids and count what is left.

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
    let mut spec = app.clone();
    spec.request.target = Target::parse(&format!(
        "{}{}",
        base_url.trim_end_matches('/'),
        auth.signup_path
    ))?;
    let mut slot = Slot::new(&spec)?;
    let short: String = session_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    for n in 0..auth.accounts {
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
                auth.accounts
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
        let id = pointer_text(&v, &auth.id_pointer).ok_or_else(|| {
            accounts_error(format!(
                "the sign-up response has no id at {} (app.auth.id_pointer)",
                auth.id_pointer
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

async fn run_cleanup(
    cfg: &CleanupSection,
    base_url: &str,
    app: &ProbeSpec,
    ids: &[String],
    tokens: &[String],
    out: &mut Cleanup,
) -> Result<(), SessionError> {
    if let Some(path) = &cfg.http_delete {
        let mut spec = app.clone();
        spec.request.target = Target::parse(&format!(
            "{}{}",
            base_url.trim_end_matches('/'),
            path.replace("{id}", "0")
        ))?;
        let mut slot = Slot::new(&spec)?;
        for (i, id) in ids.iter().enumerate() {
            let target = Target::parse(&format!(
                "{}{}",
                base_url.trim_end_matches('/'),
                path.replace("{id}", id)
            ))?;
            let mut req = RequestTemplate::new(target, Some("DELETE"), None)?;
            if let Some(t) = tokens.get(i) {
                req.add_header_line(&format!("Authorization: Bearer {t}"))?;
            }
            let (status, _) = slot
                .fetch(&req)
                .await
                .map_err(|e| accounts_error(format!("DELETE for id {id}: {e}")))?;
            if (200..300).contains(&status) || status == 404 {
                out.deleted += u64::from(status != 404);
            } else {
                return Err(accounts_error(format!(
                    "DELETE for id {id} answered HTTP {status}"
                )));
            }
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

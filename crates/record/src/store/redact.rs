//! A last line of defence against secrets in stored specs.
//!
//! The caller redacts the spec before it builds a [`SessionMeta`]; the
//! store runs [`redact_spec`] again on the way in, because a leaked API key
//! in a results database (often shared, or committed) is worse than a
//! redacted value that was harmless.
//!
//! [`SessionMeta`]: crate::session::SessionMeta

use serde_json::Value;

use super::error::mask_url;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Replaces, anywhere in `spec`, the values of keys that name a secret
/// (authorization, api key, token, password, secret, cookie; any case,
/// snake, kebab or camel) with `"<redacted>"`, and masks the password of
/// any URL-like string (`scheme://user:password@host`). Header lists written
/// as `{"name": "Authorization", "value": "…"}` or `["Authorization", "…"]`
/// are covered too. Numbers and booleans under such keys are kept (a
/// `token_budget` of 500 is not a secret); `max_tokens` is not a secret key.
/// Returns how many values it changed.
pub fn redact_spec(spec: &mut Value) -> usize {
    redact_in(spec, false)
}

/// [`redact_spec`] of `spec`; `headers`: `spec` is a map of header names to
/// values (a `headers` table), whose keys are judged by the wider header
/// rule ([`is_secret_header`]).
fn redact_in(spec: &mut Value, headers: bool) -> usize {
    match spec {
        Value::Object(map) => {
            // {"name": "Authorization", "value": "Bearer …"}
            let named_secret = ["name", "key", "header"].iter().any(|k| {
                map.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(is_secret_key)
            });
            let mut n = 0;
            for (k, v) in map.iter_mut() {
                let secret = is_secret_key(k)
                    || (headers && is_secret_header(k))
                    || (named_secret && k == "value");
                if secret && redactable(v) {
                    if v.as_str() != Some(REDACTED) {
                        *v = Value::String(REDACTED.into());
                        n += 1;
                    }
                } else {
                    n += redact_in(v, k == "headers");
                }
            }
            n
        }
        Value::Array(items) => {
            // ["Authorization", "Bearer …"]
            if items.len() == 2
                && items[0].as_str().is_some_and(is_secret_key)
                && items[1].is_string()
                && items[1].as_str() != Some(REDACTED)
            {
                items[1] = Value::String(REDACTED.into());
                return 1;
            }
            items.iter_mut().map(|v| redact_in(v, false)).sum()
        }
        Value::String(s) => {
            let masked = mask_url(s);
            if masked != *s {
                *s = masked;
                1
            } else {
                0
            }
        }
        _ => 0,
    }
}

fn redactable(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Array(_) | Value::Object(_))
}

/// True when a key names a secret: after splitting camelCase and turning
/// `-` into `_`, one of its words is `authorization`, `token`, `password`,
/// `passwd`, `secret`, `cookie`, `apikey` or `credentials`, or it contains
/// `api_key`. (`tokens`, as in `max_tokens`, is not `token`.)
pub(crate) fn is_secret_key(key: &str) -> bool {
    let mut norm = String::with_capacity(key.len() + 4);
    let mut prev_lower = false;
    for c in key.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            norm.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        norm.push(if c == '-' || c == ' ' || c == '.' {
            '_'
        } else {
            c.to_ascii_lowercase()
        });
    }
    if norm.contains("api_key") {
        return true;
    }
    norm.split('_').any(|w| {
        matches!(
            w,
            "authorization"
                | "token"
                | "password"
                | "passwd"
                | "secret"
                | "cookie"
                | "apikey"
                | "credentials"
        )
    })
}

/// Words that make a header name a secret's beyond [`is_secret_key`]'s:
/// credentials sent as headers under other names.
const SECRET_HEADER_WORDS: [&str; 9] = [
    "auth",
    "jwt",
    "bearer",
    "credential",
    "pass",
    "session",
    "signature",
    "hmac",
    "key",
];

/// True when a header name carries a secret: [`is_secret_key`]'s words,
/// or one of `auth`, `jwt`, `bearer`, `credential`, `pass`, `session`,
/// `signature`, `hmac`, `key` as a word of it (`x-auth`, `x-user-pass`,
/// `x-hmac-signature`, `x-session`, `x-api-key`). Wider than the rule for
/// JSON keys, where `session` and `key` name ordinary settings.
pub fn is_secret_header(name: &str) -> bool {
    is_secret_key(name)
        || name
            .to_ascii_lowercase()
            .split(['-', '_', ' ', '.'])
            .any(|w| SECRET_HEADER_WORDS.contains(&w) || w == "cookie" || w.starts_with("auth"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Issue 29, item 10: these header names carried secrets that were
    /// stored and exported as written.
    #[test]
    fn secret_header_names_are_wider_than_secret_keys() {
        for name in [
            "x-auth",
            "x-jwt",
            "x-bearer",
            "x-credential",
            "x-user-pass",
            "x-session",
            "x-signature",
            "x-hmac",
            "Authorization",
            "X-Api-Key",
            "x-auth-token",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        for name in [
            "content-type",
            "accept",
            "x-request-id",
            "user-agent",
            "x-route",
        ] {
            assert!(!is_secret_header(name), "{name}");
        }
        let mut spec = json!({"config": {"session": {"network": "home"}, "app": {"headers": {
            "x-session": "abc", "x-hmac": "def", "accept": "text/event-stream"
        }}}});
        assert_eq!(redact_spec(&mut spec), 2);
        assert_eq!(spec["config"]["app"]["headers"]["x-session"], REDACTED);
        assert_eq!(
            spec["config"]["app"]["headers"]["accept"],
            "text/event-stream"
        );
        assert_eq!(
            spec["config"]["session"]["network"], "home",
            "a session section is no secret"
        );
    }

    #[test]
    fn secret_keys_are_recognised_and_token_counts_are_not() {
        for k in [
            "authorization",
            "Authorization",
            "api_key",
            "api-key",
            "apiKey",
            "OPENAI_API_KEY",
            "x-api-key",
            "token",
            "access_token",
            "accessToken",
            "password",
            "db_password",
            "client_secret",
            "cookie",
            "Set-Cookie",
        ] {
            assert!(is_secret_key(k), "{k} should be secret");
        }
        for k in [
            "max_tokens",
            "maxTokens",
            "output_tokens",
            "model",
            "path",
            "seed",
        ] {
            assert!(!is_secret_key(k), "{k} should not be secret");
        }
    }

    #[test]
    fn redacts_nested_values_header_lists_and_url_passwords() {
        let mut spec = json!({
            "target": {
                "url": "https://app.example/chat",
                "headers": {"Authorization": "Bearer sk-live-123", "x-trace": "on"},
                "header_list": [{"name": "Cookie", "value": "session=abc"}, ["X-Api-Key", "k-1"]],
            },
            "cleanup": {"db": "postgres://ft:hunter2@db/ft", "api_key": {"env": "SECRET"}},
            "max_tokens": 256,
            "token_budget": 500,
        });
        let n = redact_spec(&mut spec);
        assert_eq!(spec["target"]["headers"]["Authorization"], REDACTED);
        assert_eq!(spec["target"]["headers"]["x-trace"], "on");
        assert_eq!(spec["target"]["header_list"][0]["value"], REDACTED);
        assert_eq!(spec["target"]["header_list"][1][1], REDACTED);
        assert_eq!(spec["cleanup"]["db"], "postgres://ft:***@db/ft");
        assert_eq!(spec["cleanup"]["api_key"], REDACTED);
        assert_eq!(spec["max_tokens"], 256);
        assert_eq!(spec["token_budget"], 500);
        assert_eq!(spec["target"]["url"], "https://app.example/chat");
        assert_eq!(n, 5);
        assert_eq!(redact_spec(&mut spec), 0, "redaction is idempotent");
    }
}

//! Accounts: argon2id password hashes (OWASP default parameters), opaque
//! bearer tokens of which only the SHA-256 is stored.

use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use axum::http::HeaderMap;
use sha2::{Digest, Sha256};

/// Longest accepted email (RFC 5321 path limit).
const MAX_EMAIL: usize = 254;
/// Shortest and longest accepted password, in bytes.
const PASSWORD_BYTES: std::ops::RangeInclusive<usize> = 8..=1024;
/// Tokens start with this, so a leaked one is recognisable.
const TOKEN_PREFIX: &str = "ftr_";

/// Why an email or password was refused.
pub(crate) type Invalid = &'static str;

/// Trimmed and lower-cased, with one `@` between a non-empty local part and
/// a domain that has a dot. `@bench.invalid` addresses are ordinary ones.
pub(crate) fn normalize_email(raw: &str) -> Result<String, Invalid> {
    let email = raw.trim().to_lowercase();
    if email.is_empty() || email.len() > MAX_EMAIL {
        return Err("email must be 1 to 254 characters");
    }
    let Some((local, domain)) = email.split_once('@') else {
        return Err("email must contain @");
    };
    if local.is_empty()
        || domain.contains('@')
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
        || email.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("email is not a valid address");
    }
    Ok(email)
}

pub(crate) fn check_password(password: &str) -> Result<(), Invalid> {
    if PASSWORD_BYTES.contains(&password.len()) {
        Ok(())
    } else {
        Err("password must be 8 to 1024 bytes")
    }
}

/// Hash on the blocking pool: argon2 takes tens of milliseconds of CPU on
/// purpose and must not stall an async worker.
pub(crate) async fn hash_password(password: String) -> Result<String, String> {
    tokio::task::spawn_blocking(move || {
        let h: Result<PasswordHash, _> = Argon2::default().hash_password(password.as_bytes());
        h.map(|h| h.to_string()).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// True when `password` matches `hash`. An unparsable hash never matches.
pub(crate) async fn verify_password(password: String, hash: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || {
        // An unknown email is checked against a dummy hash, so it costs the
        // same time as a wrong password and does not reveal which emails exist.
        let (hash, known) = match hash {
            Some(h) => (h, true),
            None => (dummy_hash().to_string(), false),
        };
        let Ok(parsed) = PasswordHash::new(&hash) else {
            return false;
        };
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        ok && known
    })
    .await
    .unwrap_or(false)
}

fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let h: Result<PasswordHash, _> =
            Argon2::default().hash_password(b"firsttoken-refapp dummy password");
        h.map(|h| h.to_string()).unwrap_or_default()
    })
}

/// A new random token: the prefix and 32 random bytes in hex.
pub(crate) fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{TOKEN_PREFIX}{}", hex(&bytes)))
}

/// What is stored for a token: its SHA-256 in hex.
pub(crate) fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// The token of an `Authorization: Bearer …` header.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = v.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        assert_eq!(
            normalize_email(" Load.Test-1@Bench.Invalid "),
            Ok("load.test-1@bench.invalid".to_string())
        );
        for bad in [
            "",
            "no-at",
            "@x.com",
            "a@b",
            "a@@b.com",
            "a b@c.com",
            "a@.com",
        ] {
            assert!(normalize_email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bearer_header() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert("authorization", "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        h.insert("authorization", "bearer  abc ".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        h.insert("authorization", "Basic abc".parse().unwrap());
        assert_eq!(bearer(&h), None);
        h.insert("authorization", "Bearer ".parse().unwrap());
        assert_eq!(bearer(&h), None);
    }

    #[test]
    fn tokens_are_random_and_hashed() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert!(a.starts_with("ftr_") && a.len() == 4 + 64);
        assert_eq!(token_hash(&a).len(), 64);
        assert_eq!(
            token_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[tokio::test]
    async fn passwords() {
        let h = hash_password("correct horse".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse".into(), Some(h.clone())).await);
        assert!(!verify_password("wrong horse".into(), Some(h)).await);
        assert!(!verify_password("correct horse".into(), None).await);
        assert!(!verify_password("x".into(), Some("not a hash".into())).await);
    }
}

//! How a browser context arrives signed in: cookies set before the page
//! loads, and a storage-state file (Playwright's `storageState` JSON:
//! `cookies`, and `origins` with each origin's `localStorage`) saved once.

use std::path::Path;

use chromiumoxide::cdp::browser_protocol::network::{CookieParam, TimeSinceEpoch};
use serde::Deserialize;

use crate::{BrowseError, BrowseSpec, SecretValue};

/// A cookie set in the context before the page loads.
#[derive(Debug, Clone)]
pub struct Cookie {
    /// Its name.
    pub name: String,
    /// Its value (a secret: never shown).
    pub value: SecretValue,
    /// Its domain; `None`: the page's host.
    pub domain: Option<String>,
    /// Its path; `None`: `/`.
    pub path: Option<String>,
    /// Sent over HTTPS only.
    pub secure: bool,
    /// Hidden from the page's scripts.
    pub http_only: bool,
    /// Expiry, seconds since the epoch; `None`: a session cookie.
    pub expires: Option<f64>,
}

impl Cookie {
    /// A session cookie on the page's host.
    pub fn new(name: &str, value: SecretValue) -> Cookie {
        Cookie {
            name: name.to_string(),
            value,
            domain: None,
            path: None,
            secure: false,
            http_only: false,
            expires: None,
        }
    }

    pub(crate) fn param(&self, page_url: &str) -> CookieParam {
        let mut p = CookieParam::new(self.name.clone(), self.value.0.clone());
        match &self.domain {
            Some(d) => {
                p.domain = Some(d.clone());
                p.path = Some(self.path.clone().unwrap_or_else(|| "/".into()));
            }
            None => {
                p.url = Some(page_url.to_string());
                p.path = self.path.clone();
            }
        }
        p.secure = Some(self.secure);
        p.http_only = Some(self.http_only);
        p.expires = self.expires.map(TimeSinceEpoch::new);
        p
    }
}

#[derive(Deserialize)]
struct State {
    #[serde(default)]
    cookies: Vec<StateCookie>,
    #[serde(default)]
    origins: Vec<StateOrigin>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateCookie {
    name: String,
    value: String,
    domain: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    expires: Option<f64>,
    #[serde(default)]
    secure: bool,
    #[serde(default)]
    http_only: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateOrigin {
    origin: String,
    #[serde(default)]
    local_storage: Vec<StateItem>,
}

#[derive(Deserialize)]
struct StateItem {
    name: String,
    value: String,
}

/// The page's origin, `scheme://host[:port]`.
fn origin(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find(['/', '?', '#']) {
        Some(j) => &url[..after + j],
        None => url,
    }
}

impl BrowseSpec {
    /// Add the storage-state file at `path` to every context this spec
    /// opens: all its cookies, and the `localStorage` of the page's own
    /// origin (other origins' entries are not the page's and are left
    /// out). The error names the file and what is wrong, never a value.
    pub fn add_storage_state(&mut self, path: &Path) -> Result<(), BrowseError> {
        let bad = |m: String| BrowseError::Spec(format!("{}: {m}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let state: State = serde_json::from_str(&text).map_err(|e| {
            // A type error's message quotes the value: only a missing
            // key's is kept whole.
            let what = e.to_string();
            let what = match what.starts_with("missing field") {
                true => what,
                false => format!(
                    "line {}, column {}: wrong syntax or type",
                    e.line(),
                    e.column()
                ),
            };
            bad(format!("not a storage-state JSON file: {what}"))
        })?;
        for c in state.cookies {
            self.cookies.push(Cookie {
                name: c.name,
                value: SecretValue(c.value),
                domain: Some(c.domain),
                path: c.path,
                secure: c.secure,
                http_only: c.http_only,
                // Playwright writes -1 for a session cookie.
                expires: c.expires.filter(|e| *e > 0.0),
            });
        }
        let own = origin(&self.url).to_string();
        for o in state.origins.into_iter().filter(|o| o.origin == own) {
            for item in o.local_storage {
                self.local_storage
                    .push((item.name, SecretValue(item.value)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storage_state_file_gives_cookies_and_the_pages_own_local_storage() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("state.json");
        std::fs::write(
            &f,
            r#"{"cookies":[{"name":"sid","value":"c00kie","domain":"127.0.0.1","path":"/","expires":-1,"httpOnly":true,"secure":false,"sameSite":"Lax"}],
               "origins":[{"origin":"http://127.0.0.1:8090","localStorage":[{"name":"token","value":"t0ken"}]},
                          {"origin":"http://other.test","localStorage":[{"name":"x","value":"y"}]}]}"#,
        )
        .unwrap();
        let mut spec = crate::tests::spec("http://127.0.0.1:8090/chat");
        spec.local_storage.clear();
        spec.add_storage_state(&f).unwrap();
        assert_eq!(spec.cookies.len(), 1);
        let c = &spec.cookies[0];
        assert_eq!(
            (c.name.as_str(), c.http_only, c.expires),
            ("sid", true, None)
        );
        let keys: Vec<&str> = spec.local_storage.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["token"]);
        let shown = format!("{spec:?}");
        assert!(
            !shown.contains("c00kie") && !shown.contains("t0ken"),
            "{shown}"
        );
    }

    #[test]
    fn a_bad_storage_state_file_is_named_without_its_values() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("state.json");
        std::fs::write(&f, r#"{"cookies":[{"name":"sid","value":"s3cret"}]}"#).unwrap();
        let mut spec = crate::tests::spec("http://127.0.0.1:8090/chat");
        let e = spec.add_storage_state(&f).unwrap_err().to_string();
        assert!(e.contains("state.json") && e.contains("domain"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn the_origin_is_scheme_host_and_port() {
        assert_eq!(
            origin("http://127.0.0.1:8090/chat?x"),
            "http://127.0.0.1:8090"
        );
        assert_eq!(origin("https://app.test"), "https://app.test");
    }
}

//! Forward HTTP proxies, chosen as curl chooses them: `--proxy URL`, else
//! the environment (`https_proxy`/`HTTPS_PROXY` for https targets,
//! `http_proxy` for http ones — the upper-case form is ignored there, as
//! curl does, since CGI servers set `HTTP_PROXY` from a request header —
//! then `all_proxy`/`ALL_PROXY`), unless `no_proxy`/`NO_PROXY` names the
//! host.
//!
//! An https target is reached through a `CONNECT` tunnel; an http one by
//! sending the request in absolute form to the proxy. Credentials in the
//! proxy URL become `Proxy-Authorization: Basic …`; they are never printed
//! (`Debug` and [`Proxy::masked`] hide the password).

use std::fmt;

use base64::Engine;

use crate::{PlanError, Target};

/// Default port of a proxy URL without one (curl's).
pub const DEFAULT_PROXY_PORT: u16 = 1080;

/// A forward HTTP proxy.
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    /// Host name or IP literal, without brackets.
    pub host: String,
    /// Port.
    pub port: u16,
    user: Option<String>,
    password: Option<String>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl Proxy {
    /// Parse `http://[user[:password]@]host[:port][/]`. The user and
    /// password may be percent-encoded.
    pub fn parse(url: &str) -> Result<Proxy, PlanError> {
        let masked = mask(url);
        let err = |reason: &str| PlanError::Proxy {
            url: masked.clone(),
            reason: reason.to_string(),
        };
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err(err(
                "TLS to the proxy itself is not supported; use an http:// proxy (https targets still get end-to-end TLS through its CONNECT tunnel)",
            ));
        } else if url.contains("://") {
            return Err(err("the scheme must be http://"));
        } else {
            url
        };
        let authority = rest.split('/').next().unwrap_or_default();
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => {
                let (user, pass) = match u.split_once(':') {
                    Some((a, b)) => (a, Some(b)),
                    None => (u, None),
                };
                (
                    Some(percent_decode(user).map_err(|r| err(&r))?),
                    pass.map(percent_decode).transpose().map_err(|r| err(&r))?,
                )
            }
        };
        let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
            let (h, after) = h
                .split_once(']')
                .ok_or_else(|| err("an IPv6 host needs its closing ']'"))?;
            (h, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() {
            return Err(err("it has no host"));
        }
        let port = match port {
            None => DEFAULT_PROXY_PORT,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| err("the port is not a number from 1 to 65535"))?,
        };
        Ok(Proxy {
            host: host.to_string(),
            port,
            user,
            password,
        })
    }

    /// `http://host:port`, with `user:***@` when it carries credentials.
    pub fn masked(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match &self.user {
            Some(u) => format!("http://{u}:***@{host}:{}", self.port),
            None => format!("http://{host}:{}", self.port),
        }
    }

    /// `host:port` to connect to (brackets around an IPv6 literal).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The `Proxy-Authorization` value, when the URL carries a user.
    pub fn authorization(&self) -> Option<String> {
        let user = self.user.as_deref()?;
        let pair = format!("{user}:{}", self.password.as_deref().unwrap_or_default());
        Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        ))
    }

    /// What must never be printed or stored: the password and the
    /// encoded credentials.
    pub fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(p) = self.password.as_deref().filter(|p| !p.is_empty()) {
            out.push(p.to_string());
        }
        if let Some(a) = self.authorization() {
            out.push(a.trim_start_matches("Basic ").to_string());
        }
        out
    }
}

/// The proxy for `target`: `explicit` (`--proxy`; an empty string means
/// none) or else the environment read through `var`, unless the host is
/// in `no_proxy`.
pub fn choose(
    target: &Target,
    explicit: Option<&str>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, PlanError> {
    if let Some(url) = explicit {
        return if url.trim().is_empty() {
            Ok(None)
        } else {
            Proxy::parse(url.trim()).map(Some)
        };
    }
    let names: &[&str] = if target.tls() {
        &["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
    } else {
        &["http_proxy", "all_proxy", "ALL_PROXY"]
    };
    let Some(url) = names
        .iter()
        .find_map(|n| var(n).filter(|v| !v.trim().is_empty()))
    else {
        return Ok(None);
    };
    let no_proxy = var("no_proxy").or_else(|| var("NO_PROXY"));
    if no_proxy.is_some_and(|list| bypasses(&list, &target.host)) {
        return Ok(None);
    }
    Proxy::parse(url.trim()).map(Some)
}

/// True when the `no_proxy` list names `host`: `*`, the host itself, or a
/// domain it belongs to (`example.com` and `.example.com` both match
/// `api.example.com`). Entries may carry a port, which is ignored.
pub fn bypasses(list: &str, host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    list.split(',').map(str::trim).any(|entry| {
        if entry == "*" {
            return true;
        }
        let entry = entry
            .strip_prefix('[')
            .and_then(|e| e.split_once(']').map(|(h, _)| h))
            .unwrap_or_else(|| match entry.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
                _ => entry,
            });
        let entry = entry.trim_start_matches('.').to_ascii_lowercase();
        !entry.is_empty()
            && (host == entry
                || host
                    .strip_suffix(&entry)
                    .is_some_and(|head| head.ends_with('.')))
    })
}

/// The URL with its password, if any, replaced by `***`.
fn mask(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://").or(Some(("", url))) else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let masked = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_string(),
    };
    if scheme.is_empty() {
        format!("{masked}{path}")
    } else {
        format!("{scheme}://{masked}{path}")
    }
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a '%' in the credentials is not followed by two hex digits")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the credentials are not UTF-8 once decoded".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |n| {
            pairs
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn parses_credentials_and_hides_them() {
        let p = Proxy::parse("http://al%40ice:s3cr%3At@127.0.0.1:3128/").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("127.0.0.1", 3128));
        assert_eq!(p.masked(), "http://al@ice:***@127.0.0.1:3128");
        assert_eq!(format!("{p:?}"), p.masked());
        // base64("al@ice:s3cr:t")
        assert_eq!(p.authorization().unwrap(), "Basic YWxAaWNlOnMzY3I6dA==");
        assert!(p.secrets().contains(&"s3cr:t".to_string()));
        let bare = Proxy::parse("proxy.internal").unwrap();
        assert_eq!(bare.port, DEFAULT_PROXY_PORT);
        assert_eq!(bare.authorization(), None);
        assert_eq!(
            Proxy::parse("http://[::1]:8888").unwrap().authority(),
            "[::1]:8888"
        );
    }

    #[test]
    fn bad_proxy_urls_are_refused_without_their_password() {
        for url in [
            "https://u:hunter2@p:1",
            "socks5://u:hunter2@p:1",
            "http://u:hunter2@p:0",
            "http://u:hunter2@:8",
        ] {
            let e = Proxy::parse(url).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
            assert!(e.contains("***"), "{e}");
        }
    }

    #[test]
    fn the_environment_is_read_as_curl_reads_it() {
        let https = Target::parse("https://api.example.com/v1").unwrap();
        let http = Target::parse("http://api.example.com/v1").unwrap();
        let e = [
            ("HTTPS_PROXY", "http://127.0.0.11:3128"),
            ("HTTP_PROXY", "http://127.0.0.12:3128"),
        ];
        assert_eq!(
            choose(&https, None, env(&e)).unwrap().unwrap().host,
            "127.0.0.11"
        );
        // Upper-case HTTP_PROXY is ignored (httpoxy), as curl does.
        assert_eq!(choose(&http, None, env(&e)).unwrap(), None);
        let e = [
            ("http_proxy", "http://127.0.0.12:3128"),
            ("no_proxy", "localhost,.example.com"),
        ];
        assert_eq!(
            choose(&http, None, env(&e)).unwrap(),
            None,
            "no_proxy bypasses it"
        );
        let e = [
            ("ALL_PROXY", "http://127.0.0.13:1"),
            ("NO_PROXY", "other.org:443"),
        ];
        assert_eq!(
            choose(&http, None, env(&e)).unwrap().unwrap().host,
            "127.0.0.13"
        );
        // --proxy wins over the environment; --proxy "" turns proxies off.
        let e = [("https_proxy", "http://127.0.0.11:3128")];
        assert_eq!(
            choose(&https, Some("http://127.0.0.1:9"), env(&e))
                .unwrap()
                .unwrap()
                .port,
            9
        );
        assert_eq!(choose(&https, Some(""), env(&e)).unwrap(), None);
    }

    #[test]
    fn no_proxy_matches_hosts_domains_and_star() {
        assert!(bypasses("*", "anything"));
        assert!(bypasses("example.com", "api.example.com"));
        assert!(bypasses(".example.com", "api.example.com"));
        assert!(bypasses("example.com:443", "example.com"));
        assert!(bypasses(" 127.0.0.1 , localhost", "localhost"));
        assert!(bypasses("[::1]:8080", "::1"));
        assert!(!bypasses("example.com", "badexample.com"));
        assert!(!bypasses("", "example.com"));
    }
}

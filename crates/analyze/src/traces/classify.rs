//! Span groups by OpenTelemetry semantic conventions, so a report speaks of
//! "database", "model provider", "outgoing HTTP" and "auth" without
//! app-specific configuration:
//!
//! | group | rule (first that matches) |
//! |---|---|
//! | database | a `db.system` or `db.system.name` attribute |
//! | model provider | any `gen_ai.*` attribute; or an outgoing HTTP span to a host mapped to it |
//! | outgoing HTTP | a client span with `http.request.method`, `server.address`, `url.full` (or the older `http.method`, `http.url`, `net.peer.name`) |
//! | auth | a name containing `auth`, `login`, `jwt`, `oauth`, `signin` or `sign_in` (not `session`: a database or chat session is not auth) |
//! | other | the rest |
//!
//! A [`GroupMap`] renames or merges groups (`database → postgres`,
//! `auth → database`) and maps outgoing hosts to a group
//! (`host:api.openai.com → model provider`).

use std::collections::BTreeMap;

use firsttoken_record::span::{SpanKind, SpanRow};
use serde::Serialize;

/// The group names before any renaming.
pub const DATABASE: &str = "database";
/// Model-provider calls.
pub const MODEL_PROVIDER: &str = "model provider";
/// Other outgoing HTTP calls.
pub const OUTGOING_HTTP: &str = "outgoing HTTP";
/// Authentication work.
pub const AUTH: &str = "auth";
/// Everything else.
pub const OTHER: &str = "other";

/// What a span does, by semantic conventions, before renaming. The order
/// is the precedence when spans of two groups overlap in time: the time
/// counts once, to the first (a database call inside an auth span is
/// database time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// `db.system` / `db.system.name`.
    Database,
    /// `gen_ai.*`, or a configured provider host.
    ModelProvider,
    /// A client HTTP span.
    OutgoingHttp,
    /// An auth-like name.
    Auth,
    /// The rest.
    Other,
}

impl Category {
    /// The default group name.
    pub fn group(self) -> &'static str {
        match self {
            Category::Database => DATABASE,
            Category::ModelProvider => MODEL_PROVIDER,
            Category::OutgoingHttp => OUTGOING_HTTP,
            Category::Auth => AUTH,
            Category::Other => OTHER,
        }
    }
}

/// The configured renames: `group name → new name` (two groups given the
/// same new name merge) and `host:<server.address> → group name` (an
/// outgoing call to that host belongs to the group; `model provider` makes
/// it a provider call). A plain map, as the config file gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GroupMap {
    map: BTreeMap<String, String>,
}

impl GroupMap {
    /// From the config's map.
    pub fn new(map: BTreeMap<String, String>) -> GroupMap {
        GroupMap { map }
    }

    /// The entries, as given.
    pub fn entries(&self) -> &BTreeMap<String, String> {
        &self.map
    }

    /// The category of `span` (the host rule applied) and its group name
    /// after renaming.
    pub fn classify(&self, span: &SpanRow) -> (Category, String) {
        let base = category(span);
        if matches!(base, Category::OutgoingHttp | Category::ModelProvider)
            && let Some(h) = host(span)
            && let Some(g) = self.map.get(&format!("host:{h}"))
        {
            let cat = if g == MODEL_PROVIDER {
                Category::ModelProvider
            } else {
                base
            };
            return (cat, self.rename(g));
        }
        (base, self.rename(base.group()))
    }

    /// `name` after renaming (itself when not mapped).
    pub fn rename(&self, name: &str) -> String {
        self.map
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    }
}

/// The semantic-convention category of a span (no configuration).
pub fn category(span: &SpanRow) -> Category {
    let has = |k: &str| span.attributes.contains_key(k);
    if has("db.system") || has("db.system.name") {
        return Category::Database;
    }
    if span.attributes.keys().any(|k| k.starts_with("gen_ai.")) {
        return Category::ModelProvider;
    }
    let http = [
        "http.request.method",
        "http.method",
        "server.address",
        "net.peer.name",
        "url.full",
        "http.url",
    ];
    if span.kind == SpanKind::Client && http.iter().any(|k| has(k)) {
        return Category::OutgoingHttp;
    }
    let name = span.name.to_ascii_lowercase();
    if ["auth", "login", "jwt", "oauth", "signin", "sign_in"]
        .iter()
        .any(|w| name.contains(w))
    {
        return Category::Auth;
    }
    Category::Other
}

/// The host an outgoing span went to: `server.address`, `net.peer.name`,
/// or the host of `url.full` / `http.url`.
pub fn host(span: &SpanRow) -> Option<String> {
    if let Some(h) = span
        .attr_str("server.address")
        .or_else(|| span.attr_str("net.peer.name"))
    {
        return Some(h.to_ascii_lowercase());
    }
    let url = span
        .attr_str("url.full")
        .or_else(|| span.attr_str("http.url"))?;
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let h = if authority.starts_with('[') {
        authority.split_once(']').map(|(h, _)| &h[1..])?
    } else {
        authority.split(':').next()?
    };
    (!h.is_empty()).then(|| h.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn span(name: &str, kind: SpanKind, attrs: &[(&str, serde_json::Value)]) -> SpanRow {
        let mut s = SpanRow::new(
            "s",
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "00f067aa0ba902b7",
            name,
        );
        s.kind = kind;
        for (k, v) in attrs {
            s.attributes.insert(k.to_string(), v.clone());
        }
        s
    }

    #[test]
    fn semantic_conventions_decide_the_group() {
        let db = span(
            "SELECT",
            SpanKind::Client,
            &[("db.system", json!("postgresql"))],
        );
        let db_new = span(
            "q",
            SpanKind::Client,
            &[("db.system.name", json!("sqlite"))],
        );
        let ai = span(
            "chat gpt-4o",
            SpanKind::Client,
            &[("gen_ai.system", json!("openai"))],
        );
        let http = span(
            "GET",
            SpanKind::Client,
            &[("http.request.method", json!("GET"))],
        );
        let old = span("GET", SpanKind::Client, &[("http.method", json!("GET"))]);
        let server_http = span(
            "GET /chat",
            SpanKind::Server,
            &[("http.method", json!("GET"))],
        );
        let auth = span("verify_auth", SpanKind::Internal, &[]);
        let other = span("retrieve", SpanKind::Internal, &[]);
        let chat_session = span("load chat session", SpanKind::Internal, &[]);
        assert_eq!(category(&chat_session), Category::Other);
        assert_eq!(category(&db), Category::Database);
        assert_eq!(category(&db_new), Category::Database);
        assert_eq!(category(&ai), Category::ModelProvider);
        assert_eq!(category(&http), Category::OutgoingHttp);
        assert_eq!(category(&old), Category::OutgoingHttp);
        assert_eq!(
            category(&server_http),
            Category::Other,
            "a server span is not outgoing"
        );
        assert_eq!(category(&auth), Category::Auth);
        assert_eq!(category(&other), Category::Other);
    }

    #[test]
    fn the_map_renames_merges_and_names_provider_hosts() {
        let mut m = BTreeMap::new();
        m.insert("auth".to_string(), "database".to_string());
        m.insert("host:llm.internal".to_string(), MODEL_PROVIDER.to_string());
        let map = GroupMap::new(m);
        let auth = span("login", SpanKind::Internal, &[]);
        assert_eq!(
            map.classify(&auth),
            (Category::Auth, "database".to_string())
        );
        let call = span(
            "POST",
            SpanKind::Client,
            &[(
                "url.full",
                json!("https://user@LLM.internal:8443/v1/chat?x=1"),
            )],
        );
        assert_eq!(host(&call).as_deref(), Some("llm.internal"));
        assert_eq!(
            map.classify(&call),
            (Category::ModelProvider, MODEL_PROVIDER.to_string())
        );
        let other = span(
            "POST",
            SpanKind::Client,
            &[("server.address", json!("example.org"))],
        );
        assert_eq!(
            map.classify(&other),
            (Category::OutgoingHttp, OUTGOING_HTTP.to_string())
        );
        let v6 = span(
            "GET",
            SpanKind::Client,
            &[("http.url", json!("http://[::1]:80/x"))],
        );
        assert_eq!(host(&v6).as_deref(), Some("::1"));
    }
}

//! What the app is told to do: [`Options`] as given (every field public, with
//! defaults), validated once into a [`Config`].

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Where the app keeps users, tokens, conversations and messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file (created when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL connection string (`postgres://user@host:port/db`); a
    /// schema can be chosen with `?options=-c%20search_path%3Dmy_schema`, TLS
    /// with `sslmode=verify-full&sslrootcert=/path/to/ca.crt` (libpq's names).
    Postgres(String),
}

impl Database {
    /// `postgres://…` or `postgresql://…` selects PostgreSQL; `sqlite://PATH`,
    /// `sqlite:PATH` or a bare path selects a SQLite file.
    pub fn parse(url: &str) -> Result<Database, ConfigError> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Database::Postgres(url.to_string()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if path.is_empty() {
            return Err(ConfigError::new("database_url", "is empty"));
        }
        if path == ":memory:" || path.contains("mode=memory") {
            // The store opens several connections; each would get its own
            // empty in-memory database.
            return Err(ConfigError::new(
                "database_url",
                "in-memory SQLite is not supported; give a file path",
            ));
        }
        if let Some((scheme, _)) = path.split_once("://") {
            return Err(ConfigError::new(
                "database_url",
                format!("unknown scheme {scheme:?}: use postgres://… or a SQLite file path"),
            ));
        }
        Ok(Database::Sqlite(PathBuf::from(path)))
    }

    /// The URL with any password replaced by `***`, for logs and errors.
    pub fn redacted(&self) -> String {
        match self {
            Database::Sqlite(p) => format!("sqlite:{}", p.display()),
            Database::Postgres(url) => redact_password(url),
        }
    }
}

fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    // libpq also takes `password=` in the query string.
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let masked: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", masked.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The app's settings as given, before validation. Start from
/// `Options::default()` and change what you need.
#[derive(Clone)]
pub struct Options {
    /// `postgres://…` or a SQLite path (see [`Database::parse`]).
    pub database_url: String,
    /// Base URL of an OpenAI-compatible API; `/chat/completions` is appended.
    pub upstream_url: String,
    /// The upstream API key, sent as `Authorization: Bearer …` (never logged).
    pub upstream_key: Option<String>,
    /// Model name sent upstream.
    pub model: String,
    /// Provider preference sent as `"provider": {"order": [...]}` (OpenRouter
    /// style); nothing is sent when empty.
    pub provider_order: Vec<String>,
    /// What `GET /version` reports instead of the build's git revision.
    pub version_label: Option<String>,
    /// Largest accepted request body in bytes; larger ones get 413.
    pub max_body_bytes: usize,
    /// Recent messages of a conversation put in the prompt.
    pub history_limit: u32,
    /// Passages retrieved for a document question.
    pub passages: usize,
    /// How long a database operation may wait (SQLite busy timeout,
    /// PostgreSQL pool wait and connect timeout) before the request gets 503.
    pub db_timeout: Duration,
    /// Upstream TCP (and TLS) connect timeout.
    pub upstream_connect_timeout: Duration,
    /// Longest silence from upstream (before headers or between chunks).
    pub upstream_read_timeout: Duration,
    /// Lifetime of a bearer token.
    pub token_ttl: Duration,
    /// Password hashes (argon2, ~19 MiB and tens of ms of CPU each) computed
    /// at once; defaults to the number of cores.
    pub hash_concurrency: usize,
    /// Sign-ups and logins that may wait for a hashing slot; more get 503
    /// with `Retry-After`.
    pub hash_queue: usize,
    /// How long a sign-up or login waits for a hashing slot before 503.
    pub hash_queue_timeout: Duration,
    /// A connection must deliver a complete HTTP/1 request head within this
    /// long after it opens or after its previous response ended (so it is
    /// also how long an idle keep-alive connection stays open); otherwise
    /// the server closes it. Stops slowloris clients.
    pub header_read_timeout: Duration,
    /// A connection on which no byte moves in either direction for this
    /// long is closed (a stalled upload, a client that stopped reading, a
    /// silent HTTP/2 connection). Must exceed `upstream_read_timeout`, since
    /// a stream waiting on a silent upstream moves no bytes either.
    pub idle_timeout: Duration,
    /// A request's body must arrive whole within this long after its head,
    /// else 408 and the connection closes: a client trickling a body byte
    /// by byte (each byte resets `idle_timeout`) cannot hold a slot.
    pub body_read_timeout: Duration,
    /// Open connections at most; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Known-bad mode: one request at a time.
    pub serial: bool,
    /// Known-bad mode: SQLite work runs synchronously on the async worker.
    pub blocking_db: bool,
    /// Known-bad mode: this many extra sequential queries before streaming.
    pub db_roundtrips: u32,
    /// Known-bad mode: no streaming, the whole answer at once.
    pub buffered: bool,
    /// Known-bad mode: this delay before serving a request that comes after
    /// an idle gap (or is the first one).
    pub cold_start: Option<Duration>,
    /// How long without requests counts as idle for `cold_start`.
    pub cold_start_idle: Duration,
    /// The modelled network between the app and its database: every
    /// database call waits this round-trip time first (zero: no wait, the
    /// database is as close as the local file). See `docs/REFAPP.md`.
    pub db_rtt: Duration,
    /// Known-bad mode: a new database connection per call, as a driver
    /// without a pool opens one; each call then pays `db_handshake_rtts`
    /// extra round trips.
    pub db_connect_per_call: bool,
    /// Round trips of one new database connection (default 4: TCP 1, TLS
    /// 1.3 1, password authentication 2).
    pub db_handshake_rtts: u32,
    /// Which answer paths the known-bad database modes (`blocking_db`,
    /// `db_roundtrips`, `db_connect_per_call`) apply to.
    pub db_fault_scope: DbFaultScope,
    /// How `POST /api/message` picks a path.
    pub router: RouterRule,
    /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) instead of plain HTTP.
    pub tls: Option<TlsSource>,
    /// Run the app on a runtime of its own with this many worker threads
    /// (`None`: on the caller's runtime). One worker is a one-vCPU
    /// container: a worker held by `blocking_db` then holds the whole app.
    pub worker_threads: Option<usize>,
    /// Export the app's OpenTelemetry spans over OTLP/HTTP to this base
    /// URL (what `OTEL_EXPORTER_OTLP_ENDPOINT` holds; `/v1/traces` is
    /// appended); `None`: no spans are made.
    pub otlp_endpoint: Option<String>,
    /// Send `X-Process-Time` on every response: the seconds (a float) from
    /// the request's arrival to its response head, as FastAPI's example
    /// middleware (and Open WebUI) send it.
    pub process_time_header: bool,
    /// The bearer token `DELETE /api/admin/users/{id}` accepts (never
    /// logged); `None`: that endpoint refuses every request.
    pub admin_token: Option<String>,
    /// Sign-ups accepted while the app runs; past them sign-up answers 403
    /// (closed, as on apps that allow only the first account or an
    /// admin's invitations) while sign-in goes on. `None`: open.
    pub signup_limit: Option<u64>,
    /// Known-bad front end: the chat page (`GET /chat`) spends this long
    /// on the main thread per render (it re-renders the whole message on
    /// every token); zero: no delay.
    pub page_render_delay: Duration,
    /// Known-bad front end: the chat page shows nothing until this much
    /// of the answer has arrived.
    pub page_buffer: PageBuffer,
}

/// When the chat page first shows the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PageBuffer {
    /// Every token as it arrives.
    #[default]
    Off,
    /// Nothing until this many content tokens (or the end).
    Tokens(u32),
    /// Nothing until the answer ends.
    End,
}

/// Which answer paths the known-bad database modes apply to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DbFaultScope {
    /// Every database call of the app (sign-up, login, auth, both paths).
    #[default]
    AllPaths,
    /// Only the chat path's calls (its conversation query, extra round
    /// trips and final store); auth, the document path and the account
    /// endpoints use the pooled, async access.
    ChatPath,
}

pub use crate::route::RouterRule;

/// Where the app's TLS certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSource {
    /// A throwaway CA and a leaf for `localhost` and 127.0.0.1, generated at
    /// start; the CA certificate (PEM) is written to `ca_out` when given, so
    /// clients can trust it.
    SelfSigned {
        /// Where to write the CA certificate.
        ca_out: Option<PathBuf>,
    },
    /// A PEM certificate chain and its PEM private key.
    Files {
        /// The certificate chain, leaf first.
        cert: PathBuf,
        /// The private key (PKCS#8, PKCS#1 or SEC1).
        key: PathBuf,
    },
}

impl Default for Options {
    fn default() -> Self {
        Options {
            database_url: "./firsttoken-refapp.db".into(),
            upstream_url: "http://127.0.0.1:8089/v1".into(),
            upstream_key: None,
            model: "emulated-model".into(),
            provider_order: Vec::new(),
            version_label: None,
            max_body_bytes: 64 * 1024,
            history_limit: 20,
            passages: 3,
            db_timeout: Duration::from_secs(5),
            upstream_connect_timeout: Duration::from_secs(10),
            upstream_read_timeout: Duration::from_secs(120),
            token_ttl: Duration::from_secs(30 * 24 * 3600),
            hash_concurrency: std::thread::available_parallelism().map_or(2, |n| n.get()),
            hash_queue: 64,
            hash_queue_timeout: Duration::from_secs(2),
            header_read_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(180),
            body_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
            serial: false,
            blocking_db: false,
            db_roundtrips: 0,
            buffered: false,
            cold_start: None,
            cold_start_idle: Duration::from_secs(30),
            db_rtt: Duration::ZERO,
            db_connect_per_call: false,
            db_handshake_rtts: 4,
            db_fault_scope: DbFaultScope::AllPaths,
            router: RouterRule::Keywords,
            tls: None,
            worker_threads: None,
            otlp_endpoint: None,
            process_time_header: false,
            admin_token: None,
            signup_limit: None,
            page_render_delay: Duration::ZERO,
            page_buffer: PageBuffer::Off,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("database_url", &redact_password(&self.database_url))
            .field("upstream_url", &self.upstream_url)
            .field("upstream_key", &self.upstream_key.as_ref().map(|_| "***"))
            .field("model", &self.model)
            .field("provider_order", &self.provider_order)
            .field("version_label", &self.version_label)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("history_limit", &self.history_limit)
            .field("passages", &self.passages)
            .field("db_timeout", &self.db_timeout)
            .field("upstream_connect_timeout", &self.upstream_connect_timeout)
            .field("upstream_read_timeout", &self.upstream_read_timeout)
            .field("token_ttl", &self.token_ttl)
            .field("hash_concurrency", &self.hash_concurrency)
            .field("hash_queue", &self.hash_queue)
            .field("hash_queue_timeout", &self.hash_queue_timeout)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("max_connections", &self.max_connections)
            .field("known_bad", &KnownBad::from(self))
            .field("db_rtt", &self.db_rtt)
            .field("db_handshake_rtts", &self.db_handshake_rtts)
            .field("router", &self.router)
            .field("tls", &self.tls)
            .field("worker_threads", &self.worker_threads)
            .field("process_time_header", &self.process_time_header)
            .field("admin_token", &self.admin_token.as_ref().map(|_| "***"))
            .field("signup_limit", &self.signup_limit)
            .field("page_render_delay", &self.page_render_delay)
            .field("page_buffer", &self.page_buffer)
            .finish()
    }
}

/// The known-bad modes, all off by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KnownBad {
    /// One request at a time.
    pub serial: bool,
    /// SQLite work on the async worker threads.
    pub blocking_db: bool,
    /// Extra sequential queries before streaming.
    pub db_roundtrips: u32,
    /// The whole answer at once.
    pub buffered: bool,
    /// Delay after an idle gap, and the gap.
    pub cold_start: Option<(Duration, Duration)>,
    /// A new database connection per call.
    pub db_connect_per_call: bool,
    /// Where the database modes apply.
    pub db_fault_scope: DbFaultScope,
    /// The chat page's main-thread cost per render.
    pub page_render_delay: Duration,
    /// When the chat page first shows the answer.
    pub page_buffer: PageBuffer,
}

impl From<&Options> for KnownBad {
    fn from(o: &Options) -> Self {
        KnownBad {
            serial: o.serial,
            blocking_db: o.blocking_db,
            db_roundtrips: o.db_roundtrips,
            buffered: o.buffered,
            cold_start: o.cold_start.map(|d| (d, o.cold_start_idle)),
            db_connect_per_call: o.db_connect_per_call,
            db_fault_scope: o.db_fault_scope,
            page_render_delay: o.page_render_delay,
            page_buffer: o.page_buffer,
        }
    }
}

impl KnownBad {
    /// True when no known-bad mode is on (the scope alone is no mode).
    pub fn is_none(&self) -> bool {
        KnownBad {
            db_fault_scope: DbFaultScope::default(),
            ..*self
        } == KnownBad::default()
    }
}

/// A setting is unusable.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid {field}: {message}")]
pub struct ConfigError {
    /// Which setting.
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    fn new(field: &'static str, message: impl Into<String>) -> Self {
        ConfigError {
            field,
            message: message.into(),
        }
    }
}

/// Validated settings; build with [`Config::new`].
#[derive(Clone)]
pub struct Config {
    pub(crate) database: Database,
    pub(crate) chat_completions_url: reqwest::Url,
    pub(crate) upstream_key: Option<String>,
    pub(crate) options: Options,
    pub(crate) known_bad: KnownBad,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("database", &self.database.redacted())
            .field("chat_completions_url", &self.chat_completions_url.as_str())
            .field("options", &self.options)
            .finish()
    }
}

impl Config {
    /// Check `options` and build the configuration.
    pub fn new(options: Options) -> Result<Config, ConfigError> {
        let database = Database::parse(&options.database_url)?;
        let base = reqwest::Url::parse(options.upstream_url.trim())
            .map_err(|e| ConfigError::new("upstream_url", format!("{e}")))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(ConfigError::new(
                "upstream_url",
                "must be an http:// or https:// URL with a host",
            ));
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(ConfigError::new(
                "upstream_url",
                "must be a base URL without query or fragment, e.g. http://127.0.0.1:8089/v1",
            ));
        }
        let mut with_slash = base.clone();
        if !with_slash.path().ends_with('/') {
            let p = format!("{}/", with_slash.path());
            with_slash.set_path(&p);
        }
        let chat_completions_url = with_slash
            .join("chat/completions")
            .map_err(|e| ConfigError::new("upstream_url", format!("{e}")))?;
        let upstream_key = match &options.upstream_key {
            Some(k) if k.trim().is_empty() => {
                return Err(ConfigError::new("upstream_key", "is empty"));
            }
            Some(k) if reqwest::header::HeaderValue::from_str(&format!("Bearer {k}")).is_err() => {
                return Err(ConfigError::new(
                    "upstream_key",
                    "contains characters not allowed in an HTTP header",
                ));
            }
            k => k.clone(),
        };
        if let Some(t) = &options.admin_token
            && (t.trim().is_empty()
                || reqwest::header::HeaderValue::from_str(&format!("Bearer {t}")).is_err())
        {
            return Err(ConfigError::new(
                "admin_token",
                "is empty or has characters not allowed in an HTTP header",
            ));
        }
        if options.model.trim().is_empty() {
            return Err(ConfigError::new("model", "is empty"));
        }
        if options.provider_order.iter().any(|p| p.trim().is_empty()) {
            return Err(ConfigError::new(
                "provider_order",
                "has an empty provider name",
            ));
        }
        if let Some(l) = &options.version_label
            && l.trim().is_empty()
        {
            return Err(ConfigError::new("version_label", "is empty"));
        }
        if options.max_body_bytes < 256 {
            return Err(ConfigError::new(
                "max_body_bytes",
                "must be at least 256 bytes",
            ));
        }
        if options.passages == 0 || options.passages > 20 {
            return Err(ConfigError::new("passages", "must be between 1 and 20"));
        }
        if options.history_limit > 1000 {
            return Err(ConfigError::new("history_limit", "must be at most 1000"));
        }
        for (field, d) in [
            ("db_timeout", options.db_timeout),
            ("upstream_connect_timeout", options.upstream_connect_timeout),
            ("upstream_read_timeout", options.upstream_read_timeout),
            ("token_ttl", options.token_ttl),
            ("hash_queue_timeout", options.hash_queue_timeout),
            ("header_read_timeout", options.header_read_timeout),
            ("idle_timeout", options.idle_timeout),
            ("body_read_timeout", options.body_read_timeout),
        ] {
            if d.is_zero() {
                return Err(ConfigError::new(field, "must be greater than zero"));
            }
        }
        if !(1..=1024).contains(&options.hash_concurrency) {
            return Err(ConfigError::new(
                "hash_concurrency",
                "must be between 1 and 1024",
            ));
        }
        if options.hash_queue > 100_000 {
            return Err(ConfigError::new("hash_queue", "must be at most 100000"));
        }
        if options.idle_timeout <= options.upstream_read_timeout {
            return Err(ConfigError::new(
                "idle_timeout",
                format!(
                    "must be longer than upstream_read_timeout ({} ms), or a stream waiting on a silent upstream is cut",
                    options.upstream_read_timeout.as_millis()
                ),
            ));
        }
        if options.max_connections == 0 || options.max_connections > 1_000_000 {
            return Err(ConfigError::new(
                "max_connections",
                "must be between 1 and 1000000",
            ));
        }
        if options.db_roundtrips > 10_000 {
            return Err(ConfigError::new("db_roundtrips", "must be at most 10000"));
        }
        if options.blocking_db && matches!(database, Database::Postgres(_)) {
            // tokio-postgres has no synchronous API: blocking a worker on it
            // can deadlock the runtime instead of merely slowing it, and a
            // silent fallback would lie about the mode.
            return Err(ConfigError::new(
                "blocking_db",
                "applies to the SQLite store only",
            ));
        }
        if options.db_rtt > Duration::from_secs(10) {
            return Err(ConfigError::new("db_rtt", "must be at most 10 s"));
        }
        if options.db_handshake_rtts > 20 {
            return Err(ConfigError::new("db_handshake_rtts", "must be at most 20"));
        }
        if options
            .worker_threads
            .is_some_and(|n| !(1..=256).contains(&n))
        {
            return Err(ConfigError::new(
                "worker_threads",
                "must be between 1 and 256",
            ));
        }
        if let Some(TlsSource::Files { cert, key }) = &options.tls {
            for (field, p) in [("tls_cert", cert), ("tls_key", key)] {
                if p.as_os_str().is_empty() {
                    return Err(ConfigError::new(field, "is empty"));
                }
            }
        }
        if options.page_render_delay > Duration::from_secs(10) {
            return Err(ConfigError::new("page_render_delay", "is over 10 s"));
        }
        if options.page_buffer == PageBuffer::Tokens(0) {
            return Err(ConfigError::new(
                "page_buffer",
                "buffering 0 tokens is no buffering: leave it off",
            ));
        }
        if options.cold_start.is_some() && options.cold_start_idle.is_zero() {
            return Err(ConfigError::new(
                "cold_start_idle",
                "must be greater than zero",
            ));
        }
        Ok(Config {
            database,
            chat_completions_url,
            upstream_key,
            known_bad: KnownBad::from(&options),
            options,
        })
    }

    /// The database chosen.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The full upstream URL requests go to.
    pub fn chat_completions_url(&self) -> &str {
        self.chat_completions_url.as_str()
    }

    /// The settings as given.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The known-bad modes that are on.
    pub fn known_bad(&self) -> KnownBad {
        self.known_bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls() {
        assert_eq!(
            Database::parse("postgres://u@h/db").ok(),
            Some(Database::Postgres("postgres://u@h/db".into()))
        );
        assert_eq!(
            Database::parse("sqlite://a/b.db").ok(),
            Some(Database::Sqlite("a/b.db".into()))
        );
        assert_eq!(
            Database::parse("x.db").ok(),
            Some(Database::Sqlite("x.db".into()))
        );
        assert!(Database::parse("mysql://h/db").is_err());
        assert!(Database::parse(":memory:").is_err());
        assert!(Database::parse("").is_err());
    }

    #[test]
    fn password_is_redacted() {
        assert_eq!(
            redact_password("postgres://u:secret@h:5/db?x=1"),
            "postgres://u:***@h:5/db?x=1"
        );
        assert_eq!(redact_password("postgres://u@h/db"), "postgres://u@h/db");
        // libpq's password in the query string is masked too.
        assert_eq!(
            redact_password("postgres://u@h/db?sslmode=require&password=s3cret&PASSWORD=x"),
            "postgres://u@h/db?sslmode=require&password=***&PASSWORD=***"
        );
    }

    #[test]
    fn upstream_url_gets_the_endpoint() {
        for base in ["http://127.0.0.1:8089/v1", "http://127.0.0.1:8089/v1/"] {
            let c = Config::new(Options {
                upstream_url: base.into(),
                ..Options::default()
            })
            .map_err(|e| e.to_string());
            assert_eq!(
                c.map(|c| c.chat_completions_url().to_string()),
                Ok("http://127.0.0.1:8089/v1/chat/completions".to_string())
            );
        }
        assert!(
            Config::new(Options {
                upstream_url: "ftp://x/v1".into(),
                ..Options::default()
            })
            .is_err()
        );
    }

    #[test]
    fn blocking_db_needs_sqlite() {
        let e = Config::new(Options {
            database_url: "postgres://u@h/db".into(),
            blocking_db: true,
            ..Options::default()
        });
        assert!(e.is_err());
    }

    #[test]
    fn connection_and_hashing_bounds_are_checked() {
        let field = |tweak: fn(&mut Options)| {
            let mut o = Options::default();
            tweak(&mut o);
            Config::new(o).err().map(|e| e.field)
        };
        assert_eq!(field(|_| {}), None);
        assert_eq!(field(|o| o.hash_concurrency = 0), Some("hash_concurrency"));
        assert_eq!(
            field(|o| o.hash_queue_timeout = Duration::ZERO),
            Some("hash_queue_timeout")
        );
        assert_eq!(
            field(|o| o.header_read_timeout = Duration::ZERO),
            Some("header_read_timeout")
        );
        assert_eq!(field(|o| o.max_connections = 0), Some("max_connections"));
        // A stream waiting on a silent upstream moves no bytes: the idle
        // timeout must not cut it before the upstream timeout does.
        assert_eq!(
            field(|o| o.idle_timeout = o.upstream_read_timeout),
            Some("idle_timeout")
        );
        assert_eq!(field(|o| o.hash_queue = 0), None);
        assert_eq!(
            field(|o| o.worker_threads = Some(0)),
            Some("worker_threads")
        );
        assert_eq!(field(|o| o.worker_threads = Some(1)), None);
        assert_eq!(
            field(|o| o.db_rtt = Duration::from_secs(11)),
            Some("db_rtt")
        );
        assert_eq!(
            field(|o| o.db_handshake_rtts = 21),
            Some("db_handshake_rtts")
        );
        assert_eq!(
            field(|o| o.tls = Some(TlsSource::Files {
                cert: PathBuf::new(),
                key: "k.pem".into()
            })),
            Some("tls_cert")
        );
    }

    #[test]
    fn debug_hides_the_key() {
        let o = Options {
            upstream_key: Some("sk-very-secret".into()),
            ..Options::default()
        };
        assert!(!format!("{o:?}").contains("very-secret"));
        let a = Options {
            admin_token: Some("admin-very-secret".into()),
            ..Options::default()
        };
        assert!(!format!("{a:?}").contains("very-secret"));
        let c = Config::new(o).map(|c| format!("{c:?}")).unwrap_or_default();
        assert!(!c.is_empty() && !c.contains("very-secret"));
    }
}

//! The session config file (`firsttoken.toml`): targets, phases, prompts,
//! prices and labels. Parsed with `toml`; every error names the file, the
//! line and the key.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::PlanError;

/// The longest request deadline, idle gap or open-loop schedule a config may
/// ask for: a day. Longer values are mistakes (and overflow clock arithmetic).
pub const MAX_SPAN: Duration = Duration::from_secs(24 * 3600);
/// Slowest open-loop rate: one request every 1,000 s.
pub const MIN_RATE_PER_S: f64 = 0.001;
/// Fastest open-loop rate one client can honestly time.
pub const MAX_RATE_PER_S: f64 = 10_000.0;
/// Most requests one phase may plan (per strategy for `direct`, per level
/// for `concurrency`): the protocol is planned in memory before it runs.
pub const MAX_PHASE_REQUESTS: u32 = 100_000;
/// Most requests in flight at once (a concurrency level; probe's `-c`).
pub const MAX_CONCURRENCY: u32 = 10_000;
/// A session that plans more requests than this (warm-ups included) runs
/// only when confirmed: `run --yes` or `[session] confirm_large = true`.
pub const LARGE_SESSION_REQUESTS: usize = 100_000;
/// Open-loop arrivals faster than this need the same confirmation.
pub const LARGE_RATE_PER_S: f64 = 1_000.0;

/// The commented config `firsttoken init` writes.
pub const DEFAULT_CONFIG: &str = include_str!("../firsttoken.example.toml");

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML is malformed or has a wrong key or type.
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong, with the key.
        message: String,
    },
    /// A value is out of range or inconsistent.
    #[error("{path}: {key}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// The dotted key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A plan-level error (URL, format…).
    #[error("{path}: {source}")]
    Plan {
        /// The file.
        path: String,
        /// The error.
        source: PlanError,
    },
}

/// The whole file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Labels and session-wide settings.
    #[serde(default)]
    pub session: SessionSection,
    /// The app under test.
    pub app: AppSection,
    /// The provider, called directly.
    #[serde(default)]
    pub direct: Option<DirectSection>,
    /// A lightweight endpoint for network baseline pings.
    #[serde(default)]
    pub ping: Option<PingSection>,
    /// Prompts, rotated across requests.
    #[serde(default)]
    pub prompts: PromptsSection,
    /// How many requests of each kind.
    #[serde(default)]
    pub phases: PhasesSection,
    /// Prices per model in USD per million tokens, used when a stream reports no cost.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
}

/// `[session]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSection {
    /// Free text naming the network, e.g. "office-fibre".
    #[serde(default)]
    pub network: Option<String>,
    /// The app's code version; when unset, read from the app's version path.
    #[serde(default)]
    pub code_version: Option<String>,
    /// Seed for every random choice; a fresh one is drawn (and stored) when unset.
    #[serde(default)]
    pub seed: Option<u64>,
    /// `blocks` (phase after phase) or `interleaved` (shuffled with the seed).
    #[serde(default)]
    pub order: Order,
    /// Where results go: a SQLite path or a postgres:// URL.
    #[serde(default)]
    pub store: Option<String>,
    /// Request deadline.
    #[serde(default, with = "humantime_serde")]
    pub timeout: Option<Duration>,
    /// Ask for compressed responses as a browser does (`Accept-Encoding:
    /// gzip, deflate, br, zstd`) and decode them, like `probe --compressed`.
    #[serde(default)]
    pub compressed: bool,
    /// A returning visitor: new connections resume an earlier TLS session
    /// (like `probe --tls-resume`). Off: every new connection is a first
    /// visit with a full handshake.
    #[serde(default)]
    pub tls_resume: bool,
    /// A PEM file of CA certificates the app's certificate is checked
    /// against (like curl's `--cacert`), for an app with a private CA; only
    /// these are then trusted for the app's paths and ping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<String>,
    /// Largest stream event or line accepted, in bytes (like `probe
    /// --max-event-bytes`); default 1 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_event_bytes: Option<usize>,
    /// Run a session above [`LARGE_SESSION_REQUESTS`] requests or
    /// [`LARGE_RATE_PER_S`] arrivals per second without `run --yes`.
    #[serde(default)]
    pub confirm_large: bool,
    /// Stop before the session's estimated cost would exceed this (USD).
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// `emulated` when the target is the emulator or an app over it; `measured` otherwise.
    #[serde(default)]
    pub emulated: bool,
    /// Forward HTTP proxy for every request (`http://[user:password@]host:port`);
    /// unset: the `https_proxy`/`http_proxy`/`all_proxy` environment and
    /// `no_proxy`, as curl reads them; `""`: no proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
}

/// Phase order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Phase after phase.
    #[default]
    Blocks,
    /// Randomized with the session seed (cold probes stay first).
    Interleaved,
}

/// `[app]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AppSection {
    /// Base URL, e.g. `http://127.0.0.1:8090`.
    pub base_url: String,
    /// Extra headers for every app request; values may name env vars as `$NAME`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Path of the app's version endpoint, e.g. `/version`.
    #[serde(default)]
    pub version_path: Option<String>,
    /// Named request paths (at least one).
    pub paths: Vec<PathSection>,
    /// Test-account sign-up, if the app needs accounts.
    #[serde(default)]
    pub auth: Option<AuthSection>,
    /// How to delete the session's test accounts afterwards.
    #[serde(default)]
    pub cleanup: Option<CleanupSection>,
}

/// `[[app.paths]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PathSection {
    /// Name used in reports, e.g. `chat`.
    pub name: String,
    /// URL path, e.g. `/api/chat`.
    pub path: String,
    /// Request body template; `{prompt}` is replaced (JSON-escaped).
    pub body: String,
    /// Stream format (see `firsttoken probe --format`).
    #[serde(default = "default_format")]
    pub format: String,
    /// This path's own prompts, rotated over its requests (with
    /// `prompts_file`, the list comes first); unset: the session's `[prompts]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Vec<String>>,
    /// A file with this path's prompts, one per line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_file: Option<String>,
    /// The route the app should report for this path's requests (the
    /// funnel compares the reported route with it); unset: the path's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_route: Option<String>,
    /// The response header that reports the route this path took, for apps
    /// that do not send `X-Route` (e.g. `x-served-by`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_header: Option<String>,
    /// Requests on this path carry no test account's token (an anonymous
    /// endpoint, or one measured as a visitor who has not signed in).
    #[serde(default)]
    pub anonymous: bool,
}

impl PathSection {
    /// A path with the session's prompts, whose expected route is its name.
    pub fn new(name: &str, path: &str, body: &str, format: &str) -> PathSection {
        PathSection {
            name: name.into(),
            path: path.into(),
            body: body.into(),
            format: format.into(),
            prompts: None,
            prompts_file: None,
            expect_route: None,
            route_header: None,
            anonymous: false,
        }
    }

    /// The route this path's requests should report.
    pub fn expected_route(&self) -> &str {
        self.expect_route.as_deref().unwrap_or(&self.name)
    }
}

fn default_format() -> String {
    "auto".into()
}

/// `[app.auth]`: sign up `accounts` test users `bench-<session>-<n>@bench.invalid`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// Sign-up path, e.g. `/api/auth/signup`.
    pub signup_path: String,
    /// Body template; `{email}` and `{password}` are replaced.
    pub body: String,
    /// JSON pointer of the bearer token in the response.
    pub token_pointer: String,
    /// JSON pointer of the created account id in the response.
    pub id_pointer: String,
    /// Accounts to create (requests rotate over them).
    #[serde(default = "one")]
    pub accounts: u32,
}

fn one() -> u32 {
    1
}

/// `[app.cleanup]`: delete exactly the created ids, then count what is left.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CleanupSection {
    /// Env var holding the app database URL (postgres://… or a SQLite path).
    #[serde(default)]
    pub database_url_env: Option<String>,
    /// The app database URL itself, for local set-ups without secrets (a
    /// SQLite path); use `database_url_env` for anything with a password.
    #[serde(default)]
    pub database_url: Option<String>,
    /// Delete statement, or several run in order (e.g. child tables
    /// first); `{ids}` becomes the comma-separated quoted id list.
    #[serde(default)]
    pub delete_sql: Option<SqlList>,
    /// Count statement for residual rows, or several (one per table the
    /// accounts leave rows in): the residual is their sum. `{ids}` as above.
    #[serde(default)]
    pub count_sql: Option<SqlList>,
    /// Alternatively, an HTTP DELETE path per id, e.g. `/api/admin/users/{id}`.
    #[serde(default)]
    pub http_delete: Option<String>,
}

/// One SQL statement or a list of them: `"DELETE …"` or `["DELETE …", "DELETE …"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "an SQL statement (a string) or a list of statements"
)]
pub enum SqlList {
    /// One statement.
    One(String),
    /// Several, in order.
    Many(Vec<String>),
}

impl SqlList {
    /// The statements, in order.
    pub fn statements(&self) -> &[String] {
        match self {
            SqlList::One(s) => std::slice::from_ref(s),
            SqlList::Many(v) => v,
        }
    }
}

impl From<&str> for SqlList {
    fn from(s: &str) -> SqlList {
        SqlList::One(s.to_string())
    }
}

/// `[direct]`: the provider's OpenAI-compatible endpoint.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DirectSection {
    /// Full URL of the chat completions endpoint.
    pub url: String,
    /// Name of the env var holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Model name.
    pub model: String,
    /// Routing strategies: extra JSON merged into the request body.
    #[serde(default)]
    pub strategies: Vec<StrategySection>,
}

/// `[[direct.strategies]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StrategySection {
    /// Name used in reports.
    pub name: String,
    /// JSON object merged into the body, e.g. `{ provider = { ignore = ["bulk"] } }`.
    #[serde(default)]
    pub extra: toml::Table,
}

/// `[ping]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PingSection {
    /// URL answered quickly, e.g. the app's `/health`.
    pub url: String,
}

/// `[prompts]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PromptsSection {
    /// Prompts inline.
    #[serde(default)]
    pub list: Vec<String>,
    /// Or a file with one prompt per line.
    #[serde(default)]
    pub file: Option<String>,
}

/// `[phases]`: counts per phase; missing phases run zero requests.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PhasesSection {
    /// Network baseline pings.
    #[serde(default)]
    pub ping: u32,
    /// Cold-start probes.
    #[serde(default)]
    pub cold: Option<ColdSection>,
    /// Requests on reused connections: a count, or `{ count, paths }`.
    #[serde(default)]
    pub warm: PhaseCount,
    /// Requests on new connections: a count, or `{ count, paths }`.
    #[serde(default)]
    pub fresh: PhaseCount,
    /// Direct-to-provider requests, split evenly across strategies.
    #[serde(default)]
    pub direct: u32,
    /// Concurrency levels.
    #[serde(default)]
    pub concurrency: Option<ConcurrencySection>,
    /// Open-loop arrivals.
    #[serde(default)]
    pub rate: Option<RateSection>,
}

/// The app paths a phase is aimed at, by name; `None`: every app path.
pub type PhasePaths = Option<Vec<String>>;

/// `phases.warm` / `phases.fresh`: `120`, or `{ count = 120, paths = ["chat"] }`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(from = "CountRepr", into = "CountRepr")]
pub struct PhaseCount {
    /// Requests.
    pub count: u32,
    /// The app paths they go to, round-robin; `None`: every app path.
    pub paths: PhasePaths,
}

impl From<u32> for PhaseCount {
    fn from(count: u32) -> PhaseCount {
        PhaseCount { count, paths: None }
    }
}

/// How a [`PhaseCount`] is written: a bare count or a table.
#[derive(Deserialize, Serialize)]
#[serde(
    untagged,
    expecting = "a count of requests (e.g. 120) or a table { count = 120, paths = [\"chat\"] }"
)]
enum CountRepr {
    Count(u32),
    Table(CountTable),
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct CountTable {
    count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    paths: PhasePaths,
}

impl From<CountRepr> for PhaseCount {
    fn from(r: CountRepr) -> PhaseCount {
        match r {
            CountRepr::Count(count) => PhaseCount { count, paths: None },
            CountRepr::Table(t) => PhaseCount {
                count: t.count,
                paths: t.paths,
            },
        }
    }
}

impl From<PhaseCount> for CountRepr {
    fn from(c: PhaseCount) -> CountRepr {
        match c.paths {
            None => CountRepr::Count(c.count),
            paths => CountRepr::Table(CountTable {
                count: c.count,
                paths,
            }),
        }
    }
}

/// `phases.cold`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ColdSection {
    /// Probes, split equally over the phase's paths.
    pub count: u32,
    /// Idle time before each.
    #[serde(with = "humantime_serde")]
    pub idle_gap: Duration,
    /// The app paths probed; `None`: every app path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: PhasePaths,
}

/// `phases.concurrency`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencySection {
    /// Levels, e.g. `[1, 3, 5]`.
    pub levels: Vec<u32>,
    /// Requests per level, split equally over the phase's paths.
    pub requests: u32,
    /// The app paths; `None`: every app path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: PhasePaths,
    /// True: a burst may hold requests to several paths (round-robin);
    /// false (the default): each burst goes to one path.
    #[serde(default)]
    pub mixed: bool,
}

/// `phases.rate`: open-loop arrivals.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateSection {
    /// Requests per second.
    pub per_second: f64,
    /// Requests in total.
    pub requests: u32,
    /// `constant` or `poisson` gaps.
    #[serde(default)]
    pub arrival: Arrival,
    /// The app paths, round-robin; `None`: every app path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: PhasePaths,
}

/// Arrival process of the rate phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced.
    #[default]
    Constant,
    /// Exponential gaps (a Poisson process).
    Poisson,
}

/// Price per million tokens.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// USD per million input tokens.
    pub input: f64,
    /// USD per million output tokens.
    pub output: f64,
}

impl Config {
    /// Parse TOML text; `path` names the source in errors.
    pub fn parse(text: &str, path: &str) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| {
                    let before = &text[..s.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let column = before
                        .rsplit('\n')
                        .next()
                        .map(|l| l.chars().count() + 1)
                        .unwrap_or(1);
                    (line, column)
                })
                .unwrap_or((1, 1));
            let message = e.message().to_string();
            let key = e.span().and_then(|s| key_at(text, s.start));
            ConfigError::Parse {
                path: path.to_string(),
                line,
                column,
                message: match key {
                    Some(k) if !message.contains(&k) => format!("{k}: {message}"),
                    _ => message,
                },
            }
        })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Read and parse a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Check ranges and consistency; `path` names the source in errors (a
    /// file, or e.g. `demo` for a config built in memory). [`Config::parse`]
    /// calls it; a config built in code must call it before use.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.into(),
            key: key.into(),
            message,
        };
        let plan = |source: PlanError| ConfigError::Plan {
            path: path.into(),
            source,
        };
        crate::Target::parse(&self.app.base_url).map_err(plan)?;
        if let Some(p) = &self.session.proxy {
            crate::proxy::choose(
                &crate::Target::parse(&self.app.base_url).map_err(plan)?,
                Some(p),
                |_| None,
            )
            .map_err(plan)?;
        }
        if let Some(n) = self.session.max_event_bytes
            && n < crate::MIN_MAX_EVENT_BYTES
        {
            return Err(invalid(
                "session.max_event_bytes",
                format!(
                    "{n} is below the smallest allowed, {}",
                    crate::MIN_MAX_EVENT_BYTES
                ),
            ));
        }
        if self.app.paths.is_empty() {
            return Err(invalid(
                "app.paths",
                "at least one [[app.paths]] entry is needed".into(),
            ));
        }
        for (i, p) in self.app.paths.iter().enumerate() {
            if !p.path.starts_with('/') {
                return Err(invalid(
                    &format!("app.paths[{i}].path"),
                    format!("{:?} must start with /", p.path),
                ));
            }
            if let Err(e) = p.format.parse::<crate::StreamFormat>() {
                return Err(invalid(&format!("app.paths[{i}].format"), e.to_string()));
            }
            if let Some(h) = &p.route_header
                && http::HeaderName::from_bytes(h.as_bytes()).is_err()
            {
                return Err(invalid(
                    &format!("app.paths[{i}].route_header"),
                    format!("{h:?} is not a valid header name"),
                ));
            }
            if let Some(m) = json_template_error(&p.body) {
                return Err(invalid(&format!("app.paths[{i}].body"), m));
            }
            if p.prompts.as_ref().is_some_and(Vec::is_empty) && p.prompts_file.is_none() {
                return Err(invalid(
                    &format!("app.paths[{i}].prompts"),
                    "an empty list: give prompts, or leave it out for the session's".into(),
                ));
            }
            if p.expect_route.as_deref().is_some_and(str::is_empty) {
                return Err(invalid(
                    &format!("app.paths[{i}].expect_route"),
                    "must name a route".into(),
                ));
            }
        }
        if let Some(d) = &self.direct {
            crate::Target::parse(&d.url).map_err(plan)?;
        }
        if let Some(p) = &self.ping {
            crate::Target::parse(&p.url).map_err(plan)?;
        }
        if let Some(a) = &self.app.auth {
            for (key, p) in [
                ("app.auth.token_pointer", &a.token_pointer),
                ("app.auth.id_pointer", &a.id_pointer),
            ] {
                if !p.is_empty() && !p.starts_with('/') {
                    return Err(invalid(
                        key,
                        format!("{p:?} is not a JSON pointer: it starts with '/' (e.g. \"/{p}\")"),
                    ));
                }
            }
            if let Some(m) = json_template_error(&a.body) {
                return Err(invalid("app.auth.body", m));
            }
        }
        if self.phases.direct > 0 && self.direct.is_none() {
            return Err(invalid(
                "phases.direct",
                "direct requests need a [direct] section".into(),
            ));
        }
        if self.phases.ping > 0 && self.ping.is_none() {
            return Err(invalid("phases.ping", "pings need a [ping] section".into()));
        }
        let names: Vec<&str> = self.app.paths.iter().map(|p| p.name.as_str()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(invalid(
                    &format!("app.paths[{i}].name"),
                    format!("{n:?} names two paths"),
                ));
            }
        }
        let ph = &self.phases;
        for (key, paths) in [
            ("phases.warm.paths", &ph.warm.paths),
            ("phases.fresh.paths", &ph.fresh.paths),
            (
                "phases.cold.paths",
                &ph.cold.as_ref().and_then(|c| c.paths.clone()),
            ),
            (
                "phases.concurrency.paths",
                &ph.concurrency.as_ref().and_then(|c| c.paths.clone()),
            ),
            (
                "phases.rate.paths",
                &ph.rate.as_ref().and_then(|r| r.paths.clone()),
            ),
        ] {
            let Some(paths) = paths else { continue };
            if paths.is_empty() {
                return Err(invalid(
                    key,
                    "name at least one app path, or leave it out for all".into(),
                ));
            }
            for (i, p) in paths.iter().enumerate() {
                if !names.contains(&p.as_str()) {
                    return Err(invalid(
                        key,
                        format!("{p:?} is not an app path (paths: {})", names.join(", ")),
                    ));
                }
                if paths[..i].contains(p) {
                    return Err(invalid(key, format!("{p:?} is named twice")));
                }
            }
        }
        let ph = &self.phases;
        for (key, n) in [
            ("phases.ping", ph.ping),
            ("phases.cold.count", ph.cold.as_ref().map_or(0, |c| c.count)),
            ("phases.warm", ph.warm.count),
            ("phases.fresh", ph.fresh.count),
            ("phases.direct", ph.direct),
            (
                "phases.concurrency.requests",
                ph.concurrency.as_ref().map_or(0, |c| c.requests),
            ),
            (
                "phases.rate.requests",
                ph.rate.as_ref().map_or(0, |r| r.requests),
            ),
        ] {
            if n > MAX_PHASE_REQUESTS {
                return Err(invalid(
                    key,
                    format!("{n} requests is more than one phase may plan ({MAX_PHASE_REQUESTS})"),
                ));
            }
        }
        if let Some(c) = &self.phases.concurrency
            && let Some(&k) = c.levels.iter().find(|&&k| k > MAX_CONCURRENCY)
        {
            return Err(invalid(
                "phases.concurrency.levels",
                format!(
                    "level {k} is above the most requests in flight allowed ({MAX_CONCURRENCY})"
                ),
            ));
        }
        if let Some(c) = &self.phases.concurrency
            && (c.levels.is_empty() || c.levels.contains(&0))
        {
            return Err(invalid(
                "phases.concurrency.levels",
                "levels must be a non-empty list of numbers ≥ 1".into(),
            ));
        }
        if let Some(r) = &self.phases.rate {
            if !(r.per_second.is_finite()
                && (MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&r.per_second))
            {
                return Err(invalid(
                    "phases.rate.per_second",
                    format!(
                        "must be between {MIN_RATE_PER_S} and {MAX_RATE_PER_S} requests per second, got {}",
                        r.per_second
                    ),
                ));
            }
            // The last arrival of a constant rate; a Poisson schedule is
            // capped at the same span when it is expanded.
            let span = f64::from(r.requests) / r.per_second;
            if span > MAX_SPAN.as_secs_f64() {
                return Err(invalid(
                    "phases.rate",
                    format!(
                        "{} requests at {} per second take {span:.0} s; at most {} s are allowed",
                        r.requests,
                        r.per_second,
                        MAX_SPAN.as_secs()
                    ),
                ));
            }
        }
        if let Some(t) = self.session.timeout
            && (t.is_zero() || t > MAX_SPAN)
        {
            return Err(invalid(
                "session.timeout",
                format!(
                    "must be more than 0 and at most {} s, got {t:?}",
                    MAX_SPAN.as_secs()
                ),
            ));
        }
        if let Some(c) = &self.phases.cold
            && c.idle_gap > MAX_SPAN
        {
            return Err(invalid(
                "phases.cold.idle_gap",
                format!(
                    "must be at most {} s, got {:?}",
                    MAX_SPAN.as_secs(),
                    c.idle_gap
                ),
            ));
        }
        if let Some(b) = self.session.budget_usd
            && !(b.is_finite() && b > 0.0)
        {
            return Err(invalid(
                "session.budget_usd",
                "must be a positive number".into(),
            ));
        }
        if self.prompts.list.is_empty() && self.prompts.file.is_none() {
            return Err(invalid(
                "prompts",
                "give prompts.list or prompts.file".into(),
            ));
        }
        Ok(())
    }
}

/// The dotted key of the `key = value` line holding byte `offset` of
/// `text`, under its nearest `[section]` or `[[section]]` header (an array
/// of tables counted, e.g. `app.paths[1].format`); `None` when the line is
/// not such an assignment.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('#') || key.starts_with('[') {
        return None;
    }
    let mut section: Option<String> = None;
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    for l in text[..line_start].lines() {
        let t = l.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let n = counts.entry(name.clone()).or_insert(0);
            section = Some(format!("{name}[{n}]"));
            *n += 1;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            section = Some(name.trim().to_string());
        }
    }
    Some(match section {
        Some(sec) => format!("{sec}.{key}"),
        None => key.to_string(),
    })
}

/// Why a template that looks like JSON (it opens with `{` or `[`) is not
/// JSON once its placeholders are filled with sample values (a prompt with
/// a quote and a newline, an e-mail, a password), or `None`.
fn json_template_error(template: &str) -> Option<String> {
    let t = template.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    // Filled as the session fills it: the value JSON-escaped in place.
    let esc = |v: &str| {
        let q = serde_json::to_string(v).unwrap_or_default();
        q[1..q.len() - 1].to_string()
    };
    let filled = template
        .replace("{prompt}", &esc("a sample \"prompt\"\nwith a new line"))
        .replace("{email}", &esc("bench-0@bench.invalid"))
        .replace("{password}", &esc("p@ss\"word"));
    serde_json::from_str::<serde_json::Value>(&filled)
        .err()
        .map(|e| {
            format!(
                "not valid JSON once filled with a sample prompt, e-mail and password ({e}); \
             a placeholder goes inside quotes, e.g. \"content\": \"{{prompt}}\""
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_example_parses() {
        let c = Config::parse(DEFAULT_CONFIG, "firsttoken.toml").unwrap();
        assert_eq!(c.app.paths.len(), 2);
        assert_eq!(c.phases.warm, 120.into());
        assert!(c.direct.as_ref().unwrap().strategies.len() >= 3);
        // The commented per-path settings parse once uncommented.
        let aimed = DEFAULT_CONFIG
            .lines()
            .find_map(|l| l.strip_prefix("#   concurrency = "))
            .unwrap();
        let text: String = DEFAULT_CONFIG
            .lines()
            .map(|l| {
                for key in ["# prompts", "# prompts_file", "# expect_route"] {
                    if let Some(rest) = l.strip_prefix(key) {
                        return format!("{}{rest}\n", &key[2..]);
                    }
                }
                if l.starts_with("concurrency = ") {
                    format!("concurrency = {aimed}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let c = Config::parse(&text, "firsttoken.toml").unwrap();
        let docs = &c.app.paths[1];
        assert_eq!(docs.expected_route(), "docs");
        assert!(docs.prompts.is_some() && docs.prompts_file.is_some());
        let cc = c.phases.concurrency.unwrap();
        assert_eq!(cc.paths, Some(vec!["chat".to_string()]));
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let text = DEFAULT_CONFIG.replace("warm = 120", "warm = \"many\"");
        let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
        let line = DEFAULT_CONFIG
            .lines()
            .position(|l| l.starts_with("warm = 120"))
            .unwrap()
            + 1;
        assert!(e.starts_with(&format!("f.toml:{line}:")), "{e}");
        let text = DEFAULT_CONFIG.replace("warm = 120", "wram = 120");
        let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
        assert!(e.contains("wram"), "{e}");
        let text = DEFAULT_CONFIG.replace("levels = [1, 3, 5]", "levels = [0]");
        let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
        assert!(e.contains("phases.concurrency.levels"), "{e}");
    }

    /// Issue 16, defect 4: errors found before the session row exists, each
    /// naming the key (and, for a wrong type, the line).
    #[test]
    fn late_errors_are_found_at_load_naming_their_key() {
        let bad = |from: &str, to: &str| {
            assert!(DEFAULT_CONFIG.contains(from), "the example has {from:?}");
            Config::parse(&DEFAULT_CONFIG.replacen(from, to, 1), "f.toml")
                .unwrap_err()
                .to_string()
        };
        // A wrong type names the key and says what is expected.
        let e = bad("warm = 120", "warm = \"many\"");
        assert!(
            e.contains("phases.warm") && e.contains("a count of requests"),
            "{e}"
        );
        // An unknown format names the path's key.
        let e = bad("format = \"openai-chat\"", "format = \"bogus\"");
        assert!(
            e.contains("app.paths[0].format") && e.contains("bogus"),
            "{e}"
        );
        // A token pointer that is not a JSON pointer.
        let e = bad("token_pointer = \"/token\"", "token_pointer = \"token\"");
        assert!(
            e.contains("app.auth.token_pointer") && e.contains("JSON pointer"),
            "{e}"
        );
        // A body template that is not JSON once filled (placeholder unquoted).
        let e = bad("\"message\": \"{prompt}\"", "\"message\": {prompt}");
        assert!(
            e.contains("app.paths[0].body") && e.contains("not valid JSON"),
            "{e}"
        );
        // A session timeout of zero.
        let e = bad("timeout = \"60s\"", "timeout = \"0s\"");
        assert!(e.contains("session.timeout"), "{e}");
    }

    /// Issue 10: phases aimed at named paths; per-path prompts and intent.
    #[test]
    fn phase_paths_name_app_paths() {
        let with = |warm: &str| {
            let text = DEFAULT_CONFIG.replace("warm = 120", warm);
            Config::parse(&text, "f.toml")
        };
        let c = with(r#"warm = { count = 6, paths = ["docs"] }"#).unwrap();
        assert_eq!(c.phases.warm.count, 6);
        assert_eq!(c.phases.warm.paths, Some(vec!["docs".to_string()]));
        let e = with(r#"warm = { count = 6, paths = ["nope"] }"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("phases.warm.paths") && e.contains("\"nope\""),
            "{e}"
        );
        assert!(with(r#"warm = { count = 6, paths = [] }"#).is_err());
        assert!(
            with(r#"warm = { count = 6, path = ["docs"] }"#).is_err(),
            "unknown key"
        );
        let text = DEFAULT_CONFIG.replace(
            "concurrency = { levels = [1, 3, 5], requests = 20 }",
            r#"concurrency = { levels = [1, 3, 5], requests = 20, paths = ["chat"], mixed = true }"#,
        );
        let c = Config::parse(&text, "f.toml").unwrap();
        let cc = c.phases.concurrency.unwrap();
        assert!(cc.mixed && cc.paths == Some(vec!["chat".to_string()]));
        let text = DEFAULT_CONFIG.replace(
            "name = \"docs\"",
            "name = \"docs\"\nexpect_route = \"retrieval\"\nprompts = [\"q1\", \"q2\"]",
        );
        let c = Config::parse(&text, "f.toml").unwrap();
        assert_eq!(c.app.paths[1].expected_route(), "retrieval");
        assert_eq!(c.app.paths[0].expected_route(), "chat");
        assert_eq!(c.app.paths[1].prompts.as_ref().unwrap().len(), 2);
        // A resolved config stores and reads back the same.
        let back: Config = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(back.phases, c.phases);
    }

    /// Regression (issue 8, defect 4): `rate = { per_second = 1e-300 }` and a
    /// timeout of u64::MAX seconds were accepted and panicked mid-session.
    #[test]
    fn out_of_range_spans_are_config_errors() {
        let with = |extra: &str| {
            let text = DEFAULT_CONFIG.replace("[phases]", &format!("[phases]\n{extra}"));
            Config::parse(&text, "f.toml")
        };
        let e = with("rate = { per_second = 1e-300, requests = 3 }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("phases.rate.per_second"), "{e}");
        let e = with("rate = { per_second = 0.01, requests = 10000 }")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("phases.rate") && e.contains("at most 86400 s"),
            "{e}"
        );
        assert!(with("rate = { per_second = 5, requests = 10 }").is_ok());
        let text = DEFAULT_CONFIG.replace("timeout = \"60s\"", "timeout = \"100000s\"");
        let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
        assert!(e.contains("session.timeout"), "{e}");
    }
}

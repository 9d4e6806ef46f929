//! The session config file (`firsttoken.toml`): targets, phases, prompts,
//! prices and labels. Parsed with `toml`; every error names the file, the
//! line and the key.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::PlanError;

pub use accounts::{AccountSource, AuthMode, AuthSection, CleanupSection, SqlList};
pub use browser::{BROWSER_PATH, BrowserCold, BrowserPhases, BrowserSection, MAX_BROWSER_CONTEXTS};

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
pub const DEFAULT_CONFIG: &str = include_str!("../../firsttoken.example.toml");

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
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
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
    /// Collecting the app's OpenTelemetry spans while the session runs.
    #[serde(default, skip_serializing_if = "TracesSection::is_off")]
    pub traces: TracesSection,
    /// The inference engine behind the app, when it is self-hosted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineSection>,
}

/// `[engine]`: the self-hosted inference engine's own metrics.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EngineSection {
    /// The engine's Prometheus text endpoint (vLLM's `/metrics`;
    /// `llama-server` needs `--metrics`), read once before the first
    /// request and once after the last; the report shows what its counters
    /// and histograms gained in between. A failed read is stored and
    /// reported, and stops nothing. No credentials in the URL.
    pub metrics_url: String,
}

/// The grace period after the last request during which late spans are
/// still kept, unless `[traces] grace` says otherwise.
pub const DEFAULT_TRACES_GRACE: Duration = Duration::from_secs(2);

/// The longest `[traces] grace` accepted.
pub const MAX_TRACES_GRACE: Duration = Duration::from_secs(600);

/// `[traces]`: an OTLP/HTTP receiver for the app's spans.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TracesSection {
    /// Address to listen on for OTLP/HTTP (`POST /v1/traces`), e.g.
    /// `127.0.0.1:4318`. Absent: no receiver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// How long after the last request spans are still kept (default
    /// [`DEFAULT_TRACES_GRACE`]): an exporter sends its batch a moment
    /// after the request ended.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub grace: Option<Duration>,
    /// The most spans the session stores (default and upper bound
    /// `firsttoken_record::span::MAX_SPANS_PER_SESSION`); the rest are
    /// counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_spans: Option<usize>,
    /// Span groups renamed or merged in the report, e.g. `auth =
    /// "database"`, or a host named as the model provider:
    /// `"host:llm.internal" = "model provider"` (the direct endpoint's host
    /// is one already).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, String>,
}

impl TracesSection {
    /// True when no receiver is configured.
    pub fn is_off(&self) -> bool {
        self.listen.is_none() && self.grace.is_none() && self.max_spans.is_none()
    }

    /// The grace period.
    pub fn grace(&self) -> Duration {
        self.grace.unwrap_or(DEFAULT_TRACES_GRACE)
    }

    /// The span cap.
    pub fn max_spans(&self) -> usize {
        self.max_spans
            .unwrap_or(firsttoken_record::span::MAX_SPANS_PER_SESSION)
    }
}

/// `[session]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
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
    #[schemars(with = "Option<String>")]
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
    /// Send a W3C `traceparent` header with every request (a fresh trace id
    /// each, stored on the sample) so the app's OpenTelemetry spans join
    /// their samples. Unset: on ([`SessionSection::traced`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_context: Option<bool>,
}

impl SessionSection {
    /// Whether requests carry a `traceparent`: on unless set to false.
    pub fn traced(&self) -> bool {
        self.trace_context.unwrap_or(true)
    }
}

/// Phase order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Phase after phase.
    #[default]
    Blocks,
    /// Randomized with the session seed (cold probes stay first).
    Interleaved,
}

/// `[app]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
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
    /// The accounts requests are sent as, if the app needs accounts:
    /// test accounts signed up, or pre-provisioned ones signed in to.
    #[serde(default)]
    pub auth: Option<AuthSection>,
    /// How to delete the session's signed-up test accounts afterwards.
    #[serde(default)]
    pub cleanup: Option<CleanupSection>,
    /// Response headers read as the app's total server time, each with
    /// the unit of a bare number in it (`"s"`, `"ms"` or `"us"`; a value
    /// naming its unit, like `12ms`, is read in that unit), stored in ms
    /// as `header:<name>` beside the `Server-Timing` entries. Given, it
    /// replaces the default (`x-process-time` in s, `x-response-time`,
    /// `x-envoy-upstream-service-time` and `openai-processing-ms` in ms);
    /// `{}` reads none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_headers: Option<BTreeMap<String, crate::TimeUnit>>,
    /// The app's own chat page, measured in a real headless Chromium
    /// (`[phases.browser]` says how many messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<BrowserSection>,
}

impl AppSection {
    /// The timing headers to read: the config's, else the defaults.
    pub fn timing_headers(&self) -> Vec<crate::TimingHeader> {
        match &self.timing_headers {
            None => crate::timing::default_timing_headers(),
            Some(m) => m
                .iter()
                .map(|(name, unit)| crate::TimingHeader {
                    name: name.to_ascii_lowercase(),
                    unit: *unit,
                })
                .collect(),
        }
    }
}

/// `[[app.paths]]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
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
    /// A JSON pointer (e.g. `/route` or `/meta/route`) into the stream's
    /// events where the app names the route it took, for apps that report
    /// it in the body rather than a header; found, it wins over the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_field: Option<String>,
    /// Requests on this path carry no test account's token (an anonymous
    /// endpoint, or one measured as a visitor who has not signed in).
    #[serde(default)]
    pub anonymous: bool,
    /// Measure this path over a WebSocket (`[app.paths.websocket]`): the
    /// body is sent as a text frame and each frame back is one event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WebSocketSection>,
    /// HTTP method of the measured request (default: POST; with `GET`,
    /// `body` must be empty and none is sent), e.g. `GET` for a flow whose
    /// last step reads a stream by the id an earlier step returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A flow: requests sent, in order, before this path's measured
    /// request (see [`StepSection`]); their captured values fill `{name}`
    /// in later steps and in this path's `path` and `body`. The sample
    /// keeps each step's time and the wait from the flow's start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepSection>,
    /// A flow whose answer arrives on a Socket.IO connection it opens
    /// first (see [`AnswerSocketSection`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_socket: Option<AnswerSocketSection>,
    /// Conversations of several turns on this path (the
    /// `conversations` phase; see [`ConversationSection`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<ConversationSection>,
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
            route_field: None,
            anonymous: false,
            websocket: None,
            method: None,
            steps: Vec::new(),
            answer_socket: None,
            conversation: None,
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

/// `[direct]`: the provider's OpenAI-compatible endpoint.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
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
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrategySection {
    /// Name used in reports.
    pub name: String,
    /// JSON object merged into the body, e.g. `{ provider = { ignore = ["bulk"] } }`.
    #[serde(default)]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub extra: toml::Table,
}

/// `[ping]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PingSection {
    /// URL answered quickly, e.g. the app's `/health`.
    pub url: String,
}

/// `[prompts]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
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
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
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
    /// Multi-turn conversations from the paths' conversations files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<ConversationsSection>,
    /// Messages sent through the app's page (`[app.browser]`) in a real
    /// browser, after the HTTP phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<BrowserPhases>,
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

// Written as a count or a table: its schema is that of the two forms.
impl JsonSchema for PhaseCount {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PhaseCount".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        CountRepr::json_schema(g)
    }
}

impl From<u32> for PhaseCount {
    fn from(count: u32) -> PhaseCount {
        PhaseCount { count, paths: None }
    }
}

/// How a [`PhaseCount`] is written: a bare count or a table.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "a count of requests (e.g. 120) or a table { count = 120, paths = [\"chat\"] }"
)]
enum CountRepr {
    /// Requests, to every app path round-robin.
    Count(u32),
    /// Requests to chosen paths.
    Table(CountTable),
}

/// `{ count = 120, paths = ["chat"] }`.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountTable {
    /// Requests.
    count: u32,
    /// The app paths they go to, round-robin; unset: every app path.
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
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ColdSection {
    /// Probes, split equally over the phase's paths.
    pub count: u32,
    /// Idle time before each.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub idle_gap: Duration,
    /// The app paths probed; `None`: every app path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: PhasePaths,
}

/// `phases.concurrency`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
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
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced.
    #[default]
    Constant,
    /// Exponential gaps (a Poisson process).
    Poisson,
}

/// Price per million tokens.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, JsonSchema)]
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

mod accounts;
mod browser;
mod conversation;
mod flow;
pub mod reference;
mod validate;
mod websocket;

pub use websocket::WebSocketSection;

pub use conversation::{ConversationSection, ConversationsSection, HistoryMode};
pub use flow::{AnswerSocketSection, StepSection};

#[cfg(test)]
mod tests;

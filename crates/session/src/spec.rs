//! A session's spec, validated from the config and its overrides before
//! anything is sent.

use std::collections::BTreeMap;
use std::time::SystemTime;

use firsttoken_plan::config::{Config, LARGE_RATE_PER_S, LARGE_SESSION_REQUESTS};
use firsttoken_plan::protocol::{Layout, PRESETS, Protocol, preset};
use firsttoken_record::session::Provenance;

use crate::{SessionError, Source};

/// Values that override the config (command-line flags, or the demo).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// A built-in protocol instead of the config's `[phases]`.
    pub preset: Option<String>,
    /// Result store: a SQLite file or a postgres:// URL.
    pub store: Option<String>,
    /// Network label.
    pub network: Option<String>,
    /// The app's code version (else the config's, else the app's version endpoint).
    pub code_version: Option<String>,
    /// Vantage label (else this host's name).
    pub vantage: Option<String>,
    /// Free labels.
    pub tags: BTreeMap<String, String>,
    /// Seed for every random choice (else the config's, else drawn and stored).
    pub seed: Option<u64>,
    /// Stop before the estimated cost would exceed this many USD.
    pub budget_usd: Option<f64>,
    /// Label samples `emulated`.
    pub emulated: bool,
    /// Run a large session (see [`firsttoken_plan::config::LARGE_SESSION_REQUESTS`]).
    pub yes: bool,
    /// Send a `traceparent` with every request (`Some(false)`: none), over
    /// the config's `[session] trace_context`.
    pub trace_context: Option<bool>,
    /// Listen for the app's spans (OTLP/HTTP) on this address, over the
    /// config's `[traces] listen`.
    pub otlp_listen: Option<String>,
    /// The file the config was loaded from, as given (`None` for a config
    /// built in memory): stored with the session, so its cleanup retry
    /// command names it.
    pub config_path: Option<String>,
}

/// Everything a session needs, checked: the config with its overrides
/// applied, the expanded protocol, and the requests' source.
#[derive(Clone)]
pub struct SessionSpec {
    /// The config, overrides applied (stored with the session).
    pub config: Config,
    /// The preset used instead of the config's phases, if any.
    pub preset: Option<String>,
    /// The file the config was loaded from, if any ([`Overrides::config_path`]).
    pub config_path: Option<String>,
    /// Seed of the protocol's order and every random choice.
    pub seed: u64,
    /// Network label.
    pub network: String,
    /// Code version given by a flag or the config; `None`: ask the app.
    pub code_version: Option<String>,
    /// Vantage label, when given.
    pub vantage: Option<String>,
    /// Free labels.
    pub tags: BTreeMap<String, String>,
    /// Where the numbers come from.
    pub provenance: Provenance,
    /// The steps to run.
    pub protocol: Protocol,
    /// Builds every request (prompts read, secrets from the environment).
    pub source: Source,
    /// A switch that holds the session between steps while on (a live
    /// view's `p`); `None`: never paused.
    pub pause: Option<crate::Pause>,
    /// This session's part in a run across agents; `None`: a session on
    /// its own.
    pub run: Option<crate::RunPart>,
    /// The browser phases (`[phases.browser]`), checked; `None`: none.
    pub(crate) browser: Option<crate::browser::BrowserPart>,
}

/// The store a session writes to when neither a flag nor the config names one.
pub const DEFAULT_STORE: &str = "firsttoken.db";

impl SessionSpec {
    /// Apply `o` to `config`, validate the result and expand the protocol.
    /// Reads the prompts file and the API key's environment variable; sends nothing.
    pub fn new(mut config: Config, o: Overrides) -> Result<SessionSpec, SessionError> {
        if let Some(p) = &o.preset {
            config.phases = preset(p).ok_or_else(|| {
                SessionError::Invalid(format!(
                    "unknown preset {p:?}; expected one of {}",
                    PRESETS.join(", ")
                ))
            })?;
        }
        if let Some(b) = o.budget_usd {
            if !(b.is_finite() && b > 0.0) {
                return Err(SessionError::Invalid(format!(
                    "the budget must be a positive number of USD, got {b}"
                )));
            }
            config.session.budget_usd = Some(b);
        }
        if let Some(l) = &o.otlp_listen {
            config.traces.listen = Some(l.clone());
        }
        if let Some(t) = o.trace_context {
            config.session.trace_context = Some(t);
        }
        // Stored resolved, so the session row says whether it was traced.
        config.session.trace_context = Some(config.session.traced());
        if let Some(s) = &o.store {
            config.session.store = Some(s.clone());
        }
        let seed = o.seed.or(config.session.seed).unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(7)
        });
        config.session.seed = Some(seed);
        config
            .validate("the session config")
            .map_err(SessionError::Config)?;
        let source = Source::new(&config)?;
        let browser = crate::browser::BrowserPart::new(&config)?;
        let strategies = config.direct.as_ref().map_or(0, |d| d.strategies.len());
        let layout = Layout {
            paths: config.app.paths.iter().map(|p| p.name.clone()).collect(),
            path_prompts: source.path_prompts(),
            path_conversations: source.path_conversations(),
            strategies,
            prompts: source.prompts(),
        };
        let protocol = Protocol::expand(&config.phases, &layout, config.session.order, seed);
        let planned = protocol.announced();
        let rate = config.phases.rate.as_ref().map_or(0.0, |r| r.per_second);
        if (planned > LARGE_SESSION_REQUESTS || rate > LARGE_RATE_PER_S)
            && !(o.yes || config.session.confirm_large)
        {
            return Err(SessionError::Invalid(format!(
                "this session plans {planned} requests (warm-ups included){}; above {LARGE_SESSION_REQUESTS} requests or {LARGE_RATE_PER_S} per second a session runs only when confirmed: add --yes (or set [session] confirm_large = true)",
                if rate > 0.0 {
                    format!(", open-loop at {rate} per second")
                } else {
                    String::new()
                }
            )));
        }
        let provenance = if o.emulated || config.session.emulated {
            Provenance::Emulated
        } else {
            Provenance::Measured
        };
        Ok(SessionSpec {
            network: o
                .network
                .or(config.session.network.clone())
                .unwrap_or_else(|| "unknown".into()),
            code_version: o.code_version.or(config.session.code_version.clone()),
            vantage: o.vantage,
            tags: o.tags,
            preset: o.preset,
            config_path: o.config_path,
            seed,
            provenance,
            protocol,
            source,
            config,
            pause: None,
            run: None,
            browser,
        })
    }

    /// Browser messages planned (`[phases.browser]`), after the HTTP
    /// protocol's requests.
    pub fn browser_planned(&self) -> u64 {
        self.browser.as_ref().map_or(0, |b| b.planned())
    }

    /// The store URL or path.
    pub fn store(&self) -> &str {
        self.config
            .session
            .store
            .as_deref()
            .unwrap_or(DEFAULT_STORE)
    }

    /// What this agent sends: the protocol, or its segment of it when the
    /// session is part of a run (a rerun of a segment may send less: see
    /// [`crate::RunPart`]).
    pub fn share(&self) -> Protocol {
        match &self.run {
            Some(r) => r.segment.apply(&self.protocol),
            None => self.protocol.clone(),
        }
    }

    /// The path names and strategy names, in index order.
    pub(crate) fn names(&self) -> (Vec<String>, Vec<String>) {
        let paths = self
            .config
            .app
            .paths
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let strategies = self
            .config
            .direct
            .as_ref()
            .map(|d| d.strategies.iter().map(|s| s.name.clone()).collect())
            .unwrap_or_default();
        (paths, strategies)
    }
}

//! `firsttoken plan`: how many requests a comparison needs to detect a
//! difference, what the stored counts detect now, and how many values make
//! each percentile appear with a narrow interval — by simulation on pilot
//! data from the store (`firsttoken_read::pilot` forms the pilots, analyze's
//! `power` module simulates, report's plan exporter words it).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use firsttoken_analyze::parse;
use firsttoken_analyze::power::{Effect, PlanSettings};
use firsttoken_analyze::{GroupKey, Metric};
use firsttoken_plan::config::Config;
use firsttoken_read::pilot::{Ask, PilotRun, Pilots};
use firsttoken_record::store::Store;
use firsttoken_report::plan::{json, markdown};
use firsttoken_report::words;
use firsttoken_session::{Overrides, SessionSpec};

use crate::measure;

/// Output formats of `plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A Markdown table, to read or to paste into an issue.
    Table,
    /// JSON: the numbers, and the table's text beside them.
    Json,
}

/// `firsttoken plan`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  firsttoken plan --detect 100ms             the stored warm TTFT, per path, as the pilot
  firsttoken plan --detect 10% --quantile p95 --by code_version
  firsttoken plan --detect 150ms --between NEW_ID OLD_ID
  firsttoken plan --detect 100ms --by code_version --between v2 v1
  firsttoken plan --width 10%                p50/p90/p95/p99 intervals at most 10 % wide
  firsttoken plan --pilot 20 --detect 100ms  run a pilot of 20 per path first
  firsttoken plan --claims                   what firsttoken.toml's counts support

How: power is the share of simulated experiments, drawn from the pilot's own distribution,
in which the report's rule would state the difference (for the median: `compare`'s verdict;
for p95: the interval of the p95 difference excluding 0). See docs/METHODOLOGY.md.
EXIT STATUS: 0 plan printed; 2 usage error, or a pilot group with too few values.")]
pub struct PlanArgs {
    /// Result store: a SQLite file or a postgres:// URL (default: the config's session.store
    /// when the config exists, else firsttoken.db).
    #[arg(long, env = "FIRSTTOKEN_STORE")]
    store: Option<String>,
    /// Pilot session id or unique prefix (repeatable); default: every session in the store.
    #[arg(long = "session", value_name = "ID")]
    sessions: Vec<String>,
    /// Run a quick pilot first: N warm requests per app path of the config's app, stored in
    /// --store (tagged purpose=pilot), then plan from that session alone.
    #[arg(long, value_name = "N", conflicts_with_all = ["sessions", "between"])]
    pilot: Option<u32>,
    /// Say what the config's counts support, per phase and destination, before running it:
    /// percentiles shown, whether a comparison can pass the rank test, the difference each
    /// count detects (from stored pilot rows of the same phase and path) and the time.
    #[arg(long, conflicts_with_all = ["pilot", "between", "by", "width"])]
    claims: bool,
    /// Session config for --pilot and --claims (write one with `firsttoken init`); its
    /// [session] store is used when --store is not given.
    #[arg(long, short, default_value = "firsttoken.toml")]
    config: PathBuf,
    /// The difference to detect: `100ms`, `1.5s`, or `10%` of the baseline's quantile
    /// (for tokens_per_s: a number of tokens/s).
    #[arg(long, value_name = "DIFF", required_unless_present_any = ["width", "claims"])]
    detect: Option<String>,
    /// Metric: ttft, ttfb, e2e or tokens_per_s (any stored metric).
    #[arg(long, default_value = "ttft")]
    metric: String,
    /// Quantile compared: p50 (the comparison's verdict) or p95 (its interval).
    #[arg(long, default_value = "p50", value_name = "pNN")]
    quantile: String,
    /// Phase whose rows are the pilot: warm, fresh, cold, direct, concurrency, rate or all.
    #[arg(long, default_value = "warm")]
    phase: String,
    /// Plan for every group of this key (network, code_version, vantage, day, path, strategy,
    /// concurrency, provider); with --between, A and B are values of it.
    #[arg(long, value_name = "KEY")]
    by: Option<String>,
    /// Plan the comparison of A against the baseline B, each its own pilot: two sessions,
    /// or two values of --by KEY.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    between: Option<Vec<String>>,
    /// Power to aim for: 0.8 or 80%.
    #[arg(long, default_value = "0.8")]
    power: String,
    /// Also plan each percentile the report shows (p50, p90, p95, p99) so its interval is at
    /// most this wide, as a share of its value: 10%.
    #[arg(long, value_name = "SHARE")]
    width: Option<String>,
    /// Simulated experiments per estimate (more: steadier figures, slower).
    #[arg(long, default_value_t = 400)]
    simulations: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
    format: PlanFormat,
}

/// `--power`, `--width`: a positive share (`10%`, `0.1`).
fn share(flag: &str, s: &str) -> anyhow::Result<f64> {
    parse::positive_share(s).map_err(|e| anyhow::anyhow!("{flag} {s:?}: {e}"))
}

/// `firsttoken plan`.
pub async fn plan(a: PlanArgs) -> anyhow::Result<ExitCode> {
    let metric: Metric = a.metric.parse()?;
    let width = a
        .width
        .as_deref()
        .map(|w| share("--width", w))
        .transpose()?;
    let ask = Ask {
        metric,
        quantile: a
            .quantile
            .parse()
            .map_err(|e| anyhow::anyhow!("--quantile {:?}: {e}", a.quantile))?,
        phase: parse::phase_or_all(&a.phase, &parse::EVERY_PHASE)?,
        effect: a
            .detect
            .as_deref()
            .map(|d| Effect::parse(d, metric).map_err(|e| anyhow::anyhow!("--detect {d:?}: {e}")))
            .transpose()?,
        width,
        settings: PlanSettings::default()
            .with_power(share("--power", &a.power)?)?
            .with_simulations(a.simulations)?,
    };
    let key: Option<GroupKey> =
        a.by.as_deref()
            .map(|k| k.parse().map_err(|e| anyhow::anyhow!("--by {k:?}: {e}")))
            .transpose()?;
    let url = crate::store_arg::store_url(
        a.store.as_deref(),
        a.config.is_file().then_some(a.config.as_path()),
    )?;
    let doc = if a.claims {
        let cfg = Config::load(&a.config).map_err(|e| anyhow::anyhow!("{e}"))?;
        let spec = SessionSpec::new(cfg, Overrides::default())
            .with_context(|| format!("{}", a.config.display()))?;
        firsttoken_read::pilot::claims_at(
            &url,
            &a.sessions,
            (&spec.config, &a.config.display().to_string()),
            (&spec.protocol, spec.seed),
            &ask,
        )
        .await?
    } else {
        let (store, selected) = match a.pilot {
            Some(n) => {
                let store = Store::open(&url).await?;
                let id = run_pilot(&a.config, n, &url, &store).await?;
                (store, vec![id])
            }
            None => (Store::open_existing(&url).await?, a.sessions.clone()),
        };
        let pilots = match (&a.between, key) {
            (Some(ab), None) => Pilots::Sessions(ab[0].clone(), ab[1].clone()),
            (Some(ab), Some(k)) => Pilots::Values(k, ab[0].clone(), ab[1].clone()),
            (None, key) => Pilots::Each(key),
        };
        firsttoken_read::pilot::plan(&store, &selected, &pilots, &ask).await?
    };
    match a.format {
        PlanFormat::Table => out!("{}", markdown(&doc)),
        PlanFormat::Json => outln!("{}", serde_json::to_string_pretty(&json(&doc))?),
    }
    Ok(ExitCode::SUCCESS)
}

/// Run the pilot of `n` warm requests per app path of the config at
/// `config` ([`PilotRun`]) as a session in `store` (the flag's
/// `store_url`); returns its id.
async fn run_pilot(
    config: &std::path::Path,
    n: u32,
    store_url: &str,
    store: &Store,
) -> anyhow::Result<String> {
    let pilot = PilotRun::new(n)?;
    let cfg = Config::load(config).map_err(|e| {
        let hint = if config.exists() {
            ""
        } else {
            " (write a commented config with `firsttoken init`)"
        };
        anyhow::anyhow!("{e}{hint}")
    })?;
    let requests = pilot.requests(&cfg);
    let overrides = Overrides {
        store: Some(store_url.to_string()),
        tags: PilotRun::tags(),
        config_path: Some(config.display().to_string()),
        ..Overrides::default()
    };
    let spec = SessionSpec::new(pilot.config(cfg), overrides)
        .with_context(|| format!("{}", config.display()))?;
    eprintln!(
        "{}",
        words::plan::pilot_started(requests, n, &spec.config.app.base_url)
    );
    let outcome = measure::run_spec(&spec, store, true).await?;
    eprintln!(
        "{}",
        words::plan::pilot_stored(&outcome.meta.id, outcome.failed, outcome.done)
    );
    Ok(outcome.meta.id)
}

//! `firsttoken run`: flags → a validated [`SessionSpec`] → the session
//! library, run by [`crate::measure`] (a progress bar or the live view, the
//! summary at the end).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use firsttoken_plan::config::Config;
use firsttoken_plan::protocol::PRESETS;
use firsttoken_plan::segment::Segment;
use firsttoken_record::UtcTime;
use firsttoken_record::store::Store;
use firsttoken_report::words;
use firsttoken_session::{Overrides, RunPart, SessionError, SessionSpec};

use crate::EXIT_USAGE;
use crate::measure;

/// `firsttoken run`.
#[derive(Debug, Args)]
#[command(
    after_help = "Runs one session: the phases of the config (or a preset), every sample stored as it completes.
Ctrl-C stops cleanly: samples so far stay stored, test accounts are cleaned up, the session is marked partial.
EXIT STATUS: 0 all requests ok and cleanup clean, 1 failures/partial/cleanup residue, 2 usage or config error."
)]
pub struct RunArgs {
    /// Session config file (write one with `firsttoken init`).
    #[arg(long, short, default_value = "firsttoken.toml")]
    pub config: PathBuf,
    /// Use a built-in protocol instead of the config's [phases] (article: the story's 323 requests).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(PRESETS))]
    pub preset: Option<String>,
    /// Result store: a SQLite file or a postgres:// URL (default: session.store, else firsttoken.db).
    #[arg(long, env = "FIRSTTOKEN_STORE")]
    pub store: Option<String>,
    /// Network label, e.g. office-fibre.
    #[arg(long, env = "FIRSTTOKEN_NETWORK")]
    pub network: Option<String>,
    /// The app's code version (default: the config's, else the app's version endpoint).
    #[arg(long)]
    pub code_version: Option<String>,
    /// Vantage label (default: this host's name), e.g. a region.
    #[arg(long, env = "FIRSTTOKEN_VANTAGE")]
    pub vantage: Option<String>,
    /// Free label k=v (repeatable).
    #[arg(long = "tag", value_name = "K=V")]
    pub tags: Vec<String>,
    /// Seed for every random choice (default: the config's, else drawn and stored).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Stop cleanly before the estimated cost would exceed this many USD.
    #[arg(long)]
    pub budget_usd: Option<f64>,
    /// Label samples `emulated` (the target is the emulator or an app over it).
    #[arg(long)]
    pub emulated: bool,
    /// Send a W3C traceparent header (a fresh trace id per request, stored on the sample) so the app's OpenTelemetry spans join their requests; the default unless the config says `trace_context = false`.
    #[arg(long, overrides_with = "no_trace_context")]
    pub trace_context: bool,
    /// Send no traceparent header.
    #[arg(long, overrides_with = "trace_context")]
    pub no_trace_context: bool,
    /// Listen for the app's OpenTelemetry spans (OTLP/HTTP, POST /v1/traces) on this address while the session runs, e.g. 127.0.0.1:4318, and store those of the session's requests (over the config's [traces] listen).
    #[arg(long, value_name = "ADDR")]
    pub otlp_listen: Option<String>,
    /// No progress and no summary.
    #[arg(long, short, conflicts_with = "watch")]
    pub quiet: bool,
    /// A live view in the terminal while it runs: per phase and destination the requests done,
    /// errors by kind, TTFT p50/p95 with intervals, a TTFT histogram, requests in flight, the
    /// open-loop start lag, spend against the budget and the last errors. Keys: q stops cleanly
    /// (as Ctrl-C: samples kept, cleanup runs), p pauses between steps. Falls back to the
    /// progress bar when stdout is not a terminal.
    #[arg(long)]
    pub watch: bool,
    /// Before starting, print what the counts can support (per phase and destination: the
    /// percentiles shown, whether a comparison can pass the rank test, the TTFT difference it
    /// detects from the store's earlier sessions, the time), as `firsttoken plan --claims` does.
    #[arg(long)]
    pub plan: bool,
    /// Run a large session: more than 100,000 planned requests, or open-loop arrivals above 1,000 per second.
    #[arg(long)]
    pub yes: bool,
    /// Take part in a run across agents: every agent given this id (and the same config and
    /// seed) writes its session into the run; `firsttoken runs` lists runs and
    /// `report --run ID` pools them. Default with --segment or --start-at: derived from the
    /// protocol and the start time. Letters, digits, '.', '_' and '-', at most 64.
    #[arg(long, env = "FIRSTTOKEN_RUN_ID", value_name = "ID")]
    pub run_id: Option<String>,
    /// This agent's share of the run's load: segment I of N (0 ≤ I < N, as Kubernetes'
    /// JOB_COMPLETION_INDEX): counts and open-loop arrivals dealt round-robin, each burst's
    /// members split so the agents' in-flight requests add up to its level. Rerunning a
    /// segment of a run runs only what it has not stored.
    #[arg(long, env = "FIRSTTOKEN_SEGMENT", value_name = "I/N")]
    pub segment: Option<Segment>,
    /// Common start of a run, RFC 3339 (e.g. 2026-12-01T16:00:00Z), on the store's clock:
    /// each agent measures its clock offset to the store and holds its first measured requests
    /// (not their warm-ups) until then. Agents given none use the run's stored start.
    #[arg(long, env = "FIRSTTOKEN_START_AT", value_name = "RFC3339")]
    pub start_at: Option<UtcTime>,
    /// How often an agent of a run writes to the store that it is alive (100ms to 10m). An
    /// agent silent for 4 of its intervals is taken as dead, wherever it ran: its run reads
    /// partial, naming its segment, and the next agent to join the run marks its session
    /// partial.
    #[arg(long, value_name = "DURATION", default_value = HEARTBEAT_DEFAULT, value_parser = heartbeat)]
    pub heartbeat: Duration,
}

/// `--heartbeat`'s default, the session library's [`firsttoken_session::DEFAULT_HEARTBEAT`].
const HEARTBEAT_DEFAULT: &str = "5s";
const _: () = assert!(firsttoken_session::DEFAULT_HEARTBEAT.as_secs() == 5);

/// `--heartbeat`: a humantime duration within the session library's
/// [`firsttoken_session::HEARTBEATS`].
fn heartbeat(v: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(v).map_err(|e| format!("{v:?}: {e} (e.g. 5s, 500ms)"))?;
    let range = firsttoken_session::HEARTBEATS;
    if !range.contains(&d) {
        return Err(format!(
            "{v:?}: use {} to {}",
            humantime::format_duration(*range.start()),
            humantime::format_duration(*range.end())
        ));
    }
    Ok(d)
}

/// The run part of the flags, when the session takes part in a run.
fn run_part(a: &RunArgs, spec: &SessionSpec) -> Result<Option<RunPart>, SessionError> {
    if a.run_id.is_none() && a.segment.is_none() && a.start_at.is_none() {
        return Ok(None);
    }
    RunPart::new(
        a.run_id.clone(),
        a.segment,
        a.start_at,
        a.heartbeat,
        &spec.protocol,
    )
    .map(Some)
}

/// The flags as overrides of the config.
fn overrides(a: &RunArgs) -> anyhow::Result<Overrides> {
    let mut tags = BTreeMap::new();
    for t in &a.tags {
        let (k, v) = t
            .split_once('=')
            .with_context(|| format!("--tag {t:?} must be k=v"))?;
        tags.insert(k.to_string(), v.to_string());
    }
    Ok(Overrides {
        preset: a.preset.clone(),
        store: a.store.clone(),
        network: a.network.clone(),
        code_version: a.code_version.clone(),
        vantage: a.vantage.clone(),
        tags,
        seed: a.seed,
        budget_usd: a.budget_usd,
        emulated: a.emulated,
        yes: a.yes,
        trace_context: match (a.trace_context, a.no_trace_context) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        otlp_listen: a.otlp_listen.clone(),
        config_path: Some(a.config.display().to_string()),
    })
}

/// Run one session (`firsttoken run`).
pub async fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = match Config::load(&a.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            if !a.config.exists() {
                eprintln!("hint: write a commented config with `firsttoken init`");
            }
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let mut spec = match SessionSpec::new(cfg, overrides(&a)?) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}: {e}", a.config.display());
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    match run_part(&a, &spec) {
        Ok(part) => spec.run = part,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    }
    // What this agent sends: its segment (a rerun may send less).
    let share = spec.share();
    if !a.quiet {
        eprintln!(
            "{}",
            words::session::announce(
                share.requests(),
                share.warmups(),
                share.max_warmups(),
                share.min_duration()
            )
        );
        if let Some(r) = &spec.run {
            eprintln!(
                "{}",
                words::session::run_part(
                    r.run_id(),
                    r.segment(),
                    spec.protocol.requests(),
                    r.start_at()
                )
            );
        }
    }
    if a.plan {
        let name = a.config.display().to_string();
        let doc = firsttoken_read::pilot::claims_at(
            spec.store(),
            &[],
            (&spec.config, &name),
            (&spec.protocol, spec.seed),
            &firsttoken_read::pilot::Ask::default(),
        )
        .await?;
        outln!("{}", firsttoken_report::plan::markdown(&doc));
    }
    let store = Store::open(spec.store()).await?;
    let outcome = if a.watch && std::io::stdout().is_terminal() {
        measure::run_watched(spec, &store).await?
    } else {
        measure::run_spec(&spec, &store, a.quiet).await?
    };
    Ok(measure::exit_code(&outcome))
}

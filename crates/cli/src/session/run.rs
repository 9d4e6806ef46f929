//! `firsttoken run`: flags → a validated [`SessionSpec`] → the session
//! library, with a progress bar and the summary at the end.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use firsttoken_plan::config::Config;
use firsttoken_plan::protocol::PRESETS;
use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_record::store::Store;
use firsttoken_report::run::LAG_FLAG_MS;
use firsttoken_session::{Observer, Outcome, Overrides, SessionError, SessionSpec};

use crate::{EXIT_FAILED_REQUESTS, EXIT_USAGE};

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
    #[arg(long)]
    pub network: Option<String>,
    /// The app's code version (default: the config's, else the app's version endpoint).
    #[arg(long)]
    pub code_version: Option<String>,
    /// Vantage label (default: this host's name).
    #[arg(long)]
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
    /// No progress and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run a large session: more than 100,000 planned requests, or open-loop arrivals above 1,000 per second.
    #[arg(long)]
    pub yes: bool,
}

/// A progress bar on stderr that counts every stored request, warm-ups too.
/// Its estimate of the time left is the protocol's remaining idle gaps
/// (known in advance) plus the remaining requests at the median duration
/// of those done, so a cold probe's idle gap shows as a wait, not as a
/// sudden "3 h left"; the message names the last request's TTFT.
pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
    failed: u64,
    announced: u64,
    done: u64,
    /// Idle gaps before cold probes, in order; one is used up per cold sample.
    gaps: std::collections::VecDeque<Duration>,
    /// End-to-end durations of the requests done, ms (a bounded window).
    recent_ms: std::collections::VecDeque<f64>,
}

impl Progress {
    /// A bar, hidden when `quiet`, for a session with these idle gaps.
    pub fn new(quiet: bool, gaps: Vec<Duration>) -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
            quiet,
            failed: 0,
            announced: 0,
            done: 0,
            gaps: gaps.into(),
            recent_ms: Default::default(),
        }
    }

    /// Seconds left: the idle gaps still ahead plus the requests left at the
    /// median duration of the last ones done.
    fn eta(&self) -> Duration {
        let mut v: Vec<f64> = self.recent_ms.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        let median = v.get(v.len() / 2).copied().unwrap_or(0.0);
        let left = self.announced.saturating_sub(self.done) as f64;
        let gaps: Duration = self.gaps.iter().sum();
        gaps + Duration::from_secs_f64((left * median / 1000.0).max(0.0))
    }
}

impl Observer for Progress {
    fn started(&mut self, meta: &SessionMeta, announced: u64) {
        if self.quiet {
            return;
        }
        eprintln!(
            "session {} (up to {announced} requests with warm-ups, seed {}, {})",
            meta.id,
            meta.seed,
            meta.provenance.as_str()
        );
        self.announced = announced;
        self.bar =
            ProgressBar::with_draw_target(Some(announced), ProgressDrawTarget::stderr_with_hz(4));
        self.bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    }

    fn recorded(&mut self, row: &SampleRow, spent_usd: f64) {
        self.failed += u64::from(!row.sample.warmup && !row.sample.is_ok());
        self.done += 1;
        if row.phase == firsttoken_record::PhaseKind::Cold {
            self.gaps.pop_front();
        }
        if let Some(e) = row.sample.e2e_ms {
            if self.recent_ms.len() == 64 {
                self.recent_ms.pop_front();
            }
            self.recent_ms.push_back(e);
        }
        self.bar.inc(1);
        let ttft = row
            .sample
            .ttft_ms
            .map(|t| format!(" · TTFT {}", firsttoken_report::format::ms(t)))
            .unwrap_or_default();
        let eta = humantime::format_duration(Duration::from_secs(self.eta().as_secs()));
        self.bar.set_message(format!(
            "~{eta} left · {}{}{ttft} · {} failed · ${spent_usd:.4}",
            row.phase,
            if row.sample.warmup { " warm-up" } else { "" },
            self.failed
        ));
    }

    fn measured(&mut self) {
        self.bar.finish_and_clear();
    }
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
    let spec = match SessionSpec::new(cfg, overrides(&a)?) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}: {e}", a.config.display());
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if !a.quiet {
        let floor = spec.protocol.min_duration();
        let wait = if floor.is_zero() {
            String::new()
        } else {
            format!(
                "; its idle gaps and open-loop schedule alone take {}",
                humantime::format_duration(Duration::from_secs(floor.as_secs()))
            )
        };
        eprintln!(
            "planned: {} requests, warm-ups included{wait}",
            spec.protocol.announced()
        );
    }
    let store = Store::open(spec.store()).await?;
    let outcome = run_spec(&spec, &store, a.quiet).await?;
    Ok(exit_code(&outcome))
}

/// Run a validated spec with progress, print the summary, and return the outcome.
pub async fn run_spec(
    spec: &SessionSpec,
    store: &Store,
    quiet: bool,
) -> Result<Outcome, SessionError> {
    let gaps = spec
        .protocol
        .steps
        .iter()
        .filter_map(|s| match s {
            firsttoken_plan::protocol::Step::AfterIdle(gap, _) => Some(*gap),
            _ => None,
        })
        .collect();
    let mut progress = Progress::new(quiet, gaps);
    let outcome =
        firsttoken_session::run_session(spec, store, &mut progress, crate::shutdown_token())
            .await?;
    if !quiet {
        let lag = outcome.meta.client_lag_p99_ms.filter(|l| *l > LAG_FLAG_MS);
        outln!(
            "{}",
            super::summary::render(&outcome.meta, &outcome.rows, outcome.done, lag)
        );
    }
    Ok(outcome)
}

/// 0 when everything was clean, else 1.
pub fn exit_code(outcome: &Outcome) -> ExitCode {
    if outcome.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    }
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    #[test]
    fn the_estimate_counts_idle_gaps_ahead_and_the_median_request() {
        let mut p = Progress::new(true, vec![Duration::from_secs(30); 3]);
        p.announced = 100;
        p.done = 40;
        p.recent_ms = [100.0, 200.0, 5000.0].into();
        // 3 gaps of 30 s ahead + 60 requests × 200 ms.
        assert_eq!(p.eta(), Duration::from_secs(90 + 12));
        // A cold probe done uses up one gap.
        p.gaps.pop_front();
        assert_eq!(p.eta(), Duration::from_secs(60 + 12));
    }
}

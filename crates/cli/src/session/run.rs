//! `firsttoken run`: config → protocol → sign-up → measured steps, each
//! sample stored as it completes → cleanup → summary.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use firsttoken_drive::{Gate, SessionSample, Slot, Stop, run_session};
use firsttoken_plan::config::Config;
use firsttoken_plan::protocol::{Dest, PRESETS, Protocol, preset};
use firsttoken_plan::{RequestTemplate, Target};
use firsttoken_record::session::{
    Cleanup, Labels, Provenance, SampleRow, SessionMeta, SessionStatus,
};
use firsttoken_record::store::{Store, host_name};

use super::accounts::{Accounts, clean_up, sign_up};
use super::source::Source;
use crate::{EXIT_FAILED_REQUESTS, EXIT_USAGE};

/// Client scheduling lag (actual − intended start, p99) above which a session is flagged.
const LAG_BOUND_MS: f64 = 5.0;

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
}

fn session_id(now: SystemTime) -> String {
    firsttoken_record::session::new_session_id(now)
}

fn rfc3339(t: SystemTime) -> String {
    firsttoken_record::session::utc_rfc3339(t)
}

async fn app_version(source: &Source, base: &str, path: &str) -> Option<String> {
    let target = Target::parse(&format!("{}{path}", base.trim_end_matches('/'))).ok()?;
    let mut spec = source.app_spec().clone();
    spec.request = RequestTemplate::new(target, Some("GET"), None).ok()?;
    spec.timeouts.request = Duration::from_secs(5);
    let mut slot = Slot::new(&spec).ok()?;
    let (status, body) = slot.fetch(&spec.request).await.ok()?;
    if !(200..300).contains(&status) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let s = match &v {
        serde_json::Value::String(s) => s.clone(),
        other => ["version", "revision", "git", "code_version"]
            .iter()
            .find_map(|k| other.get(*k)?.as_str().map(str::to_string))?,
    };
    Some(s)
}

/// Check the app answers at all before anything is created.
async fn preflight(source: &Source, cfg: &Config) -> anyhow::Result<()> {
    let url = cfg
        .ping
        .as_ref()
        .map(|p| p.url.clone())
        .unwrap_or_else(|| cfg.app.base_url.clone());
    let mut spec = source.app_spec().clone();
    spec.request = RequestTemplate::new(Target::parse(&url)?, Some("GET"), None)?;
    spec.timeouts.request = Duration::from_secs(10);
    let mut slot = Slot::new(&spec)?;
    slot.fetch(&spec.request).await.map(|_| ()).map_err(|e| {
        anyhow::anyhow!(
            "cannot reach {url}: {e} — is the app running? Nothing was started or stored."
        )
    })
}

fn progress(total: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(4));
    pb.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} [{elapsed_precise} eta {eta}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

fn row(session_id: &str, provenance: Provenance, s: SessionSample, names: &Names) -> SampleRow {
    let (path, strategy) = match s.planned.dest {
        Dest::App(i) => (names.paths.get(i).cloned(), None),
        Dest::Direct(i) => (Some("direct".into()), names.strategies.get(i).cloned()),
        Dest::Ping => (Some("ping".into()), None),
    };
    SampleRow {
        session_id: session_id.to_string(),
        phase: s.planned.phase.as_str().to_string(),
        path,
        strategy,
        concurrency: s.planned.concurrency,
        intended_start_ms: s.intended_start.map(|d| d.as_secs_f64() * 1000.0),
        actual_start_ms: s.actual_start.as_secs_f64() * 1000.0,
        started_at: rfc3339(s.started_at),
        provenance,
        sample: s.sample,
    }
}

struct Names {
    paths: Vec<String>,
    strategies: Vec<String>,
}

/// Fill in a cost from the price table when the stream reported none.
fn price(cfg: &Config, s: &mut SessionSample) {
    if s.sample.cost_usd.is_some() {
        return;
    }
    let model = match s.planned.dest {
        Dest::Direct(_) => cfg.direct.as_ref().map(|d| d.model.as_str()),
        _ => None,
    };
    if let (Some(p), Some(out)) = (
        model.and_then(|m| cfg.prices.get(m)),
        s.sample.output_tokens,
    ) {
        let input = s.sample.input_tokens.unwrap_or(0);
        s.sample.cost_usd = Some((input as f64 * p.input + out as f64 * p.output) / 1e6);
    }
}

/// Spending so far and the limit. The recorder charges each sample after
/// pricing it; drive asks, before starting requests, whether `n` more are
/// expected (at the running mean cost) to stay within the limit.
#[derive(Debug, Default)]
struct Budget {
    limit_usd: Option<f64>,
    /// Spent so far and the number of costed samples.
    spent: std::sync::Mutex<(f64, u64)>,
}

impl Budget {
    fn lock(&self) -> std::sync::MutexGuard<'_, (f64, u64)> {
        // Plain numbers: a poisoned lock is still consistent enough to read.
        self.spent.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn charge(&self, cost_usd: f64) {
        let mut s = self.lock();
        s.0 += cost_usd;
        s.1 += 1;
    }

    fn spent(&self) -> f64 {
        self.lock().0
    }
}

impl Gate for Budget {
    fn allows(&self, n: usize) -> bool {
        let Some(limit) = self.limit_usd else {
            return true;
        };
        let (spent, costed) = *self.lock();
        let mean = if costed == 0 {
            0.0
        } else {
            spent / costed as f64
        };
        spent + mean * n as f64 <= limit
    }
}

/// How a `run` ended.
pub struct Outcome {
    /// The process exit code it asks for.
    pub code: ExitCode,
    /// The stored session, when one was created.
    pub session_id: Option<String>,
}

/// Run one session (`firsttoken run`).
pub async fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    Ok(run_session_cmd(a).await?.code)
}

/// Run one session and say which it was.
pub async fn run_session_cmd(a: RunArgs) -> anyhow::Result<Outcome> {
    let mut cfg = match Config::load(&a.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            if !a.config.exists() {
                eprintln!("hint: write a commented config with `firsttoken init`");
            }
            return Ok(Outcome {
                code: ExitCode::from(EXIT_USAGE),
                session_id: None,
            });
        }
    };
    if let Some(p) = &a.preset {
        cfg.phases = preset(p).with_context(|| format!("unknown preset {p}"))?;
    }
    if let Some(b) = a.budget_usd {
        if !(b.is_finite() && b > 0.0) {
            bail!("--budget-usd must be a positive number");
        }
        cfg.session.budget_usd = Some(b);
    }
    let seed = a.seed.or(cfg.session.seed).unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(7)
    });
    let mut tags = BTreeMap::new();
    for t in &a.tags {
        let (k, v) = t
            .split_once('=')
            .with_context(|| format!("--tag {t:?} must be k=v"))?;
        tags.insert(k.to_string(), v.to_string());
    }
    let mut source = Source::new(&cfg)?;
    preflight(&source, &cfg).await?;
    let code_version = match a.code_version.clone().or(cfg.session.code_version.clone()) {
        Some(v) => v,
        None => match &cfg.app.version_path {
            Some(p) => app_version(&source, &cfg.app.base_url, p)
                .await
                .unwrap_or_else(|| "unknown".into()),
            None => "unknown".into(),
        },
    };
    let labels = Labels {
        network: a
            .network
            .clone()
            .or(cfg.session.network.clone())
            .unwrap_or_else(|| "unknown".into()),
        code_version,
        vantage: a.vantage.clone().unwrap_or_else(host_name),
        tags,
    };
    let provenance = if a.emulated || cfg.session.emulated {
        Provenance::Emulated
    } else {
        Provenance::Measured
    };
    let store_url = a
        .store
        .clone()
        .or(cfg.session.store.clone())
        .unwrap_or_else(|| super::DEFAULT_STORE.into());
    let store = Store::open(&store_url).await?;
    let strategies = cfg.direct.as_ref().map(|d| d.strategies.len()).unwrap_or(0);
    let protocol = Protocol::expand(
        &cfg.phases,
        cfg.app.paths.len(),
        strategies,
        cfg.prompts.list.len().max(1),
        cfg.session.order,
        seed,
    );
    let names = Names {
        paths: cfg.app.paths.iter().map(|p| p.name.clone()).collect(),
        strategies: cfg
            .direct
            .as_ref()
            .map(|d| d.strategies.iter().map(|s| s.name.clone()).collect())
            .unwrap_or_default(),
    };
    let now = SystemTime::now();
    let mut meta = SessionMeta {
        id: session_id(now),
        started_at: rfc3339(now),
        ended_at: None,
        status: SessionStatus::Running,
        spec: serde_json::json!({
            "config": serde_json::to_value(&cfg)?,
            "preset": a.preset,
            "planned": protocol.counts().iter().map(|(k, n)| (k.as_str().to_string(), *n)).collect::<BTreeMap<_, _>>(),
            "requests": protocol.requests(),
        }),
        seed,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host_name(),
        pid: None,
        labels,
        provenance,
        cleanup: None,
        client_lag_p99_ms: None,
    };
    store.create_session(&meta).await?;
    if !a.quiet {
        eprintln!(
            "session {} ({} requests, seed {seed}, {} → {store_url})",
            meta.id,
            protocol.requests(),
            provenance.as_str()
        );
    }
    let cancel = crate::shutdown_token();
    let mut accounts = Accounts::default();
    let mut failure: Option<String> = None;
    if let Some(auth) = &cfg.app.auth {
        if let Err(e) = sign_up(
            source.app_spec(),
            &cfg.app.base_url,
            auth,
            &meta.id,
            &mut accounts,
        )
        .await
        {
            failure = Some(format!("test-account sign-up failed: {e:#}"));
        }
        source.set_tokens(accounts.tokens.clone());
    }
    let app_spec = source.app_spec().clone();
    let budget = Budget {
        limit_usd: cfg.session.budget_usd,
        ..Budget::default()
    };
    let mut stop = Stop::Cancelled;
    let (mut failed, mut done) = (0u64, 0u64);
    let mut lags: Vec<f64> = Vec::new();
    let mut stored: Vec<SampleRow> = Vec::new();
    if failure.is_none() {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<SessionSample>(256);
        let source = Arc::new(source);
        let run_cancel = cancel.child_token();
        let runner = {
            let (protocol, source, run_cancel) =
                (protocol.clone(), source.clone(), run_cancel.clone());
            let budget = Arc::new(budget);
            let gate: Arc<dyn Gate> = budget.clone();
            (
                tokio::spawn(
                    async move { run_session(&protocol, source, gate, tx, run_cancel).await },
                ),
                budget,
            )
        };
        let pb = progress(protocol.requests() as u64, a.quiet);
        while let Some(mut s) = rx.recv().await {
            price(&cfg, &mut s);
            if let Some(c) = s.sample.cost_usd {
                runner.1.charge(c);
            }
            if let (Some(i), false) = (s.intended_start, s.sample.warmup) {
                lags.push((s.actual_start.as_secs_f64() - i.as_secs_f64()) * 1000.0);
            }
            let phase = s.planned.phase;
            let warmup = s.sample.warmup;
            let ok = s.sample.is_ok();
            let r = row(&meta.id, provenance, s, &names);
            if let Err(e) = store.append_sample(&r).await {
                failure = Some(format!("the store cannot be written: {e}"));
                run_cancel.cancel();
                break;
            }
            stored.push(r);
            if !warmup {
                done += 1;
                failed += u64::from(!ok);
                pb.inc(1);
                pb.set_message(format!(
                    "{} · {failed} failed · ${:.4}",
                    phase.as_str(),
                    runner.1.spent()
                ));
            }
        }
        drop(rx);
        pb.finish_and_clear();
        stop = match runner.0.await {
            Ok(Ok(f)) => f.stop,
            Ok(Err(e)) => {
                failure.get_or_insert(format!("{e}"));
                Stop::Cancelled
            }
            Err(e) => {
                failure.get_or_insert(format!("the session task stopped: {e}"));
                Stop::Cancelled
            }
        };
    }
    let cleanup: Option<Cleanup> = match (&cfg.app.auth, &cfg.app.cleanup) {
        (Some(_), Some(c)) => Some(
            clean_up(
                c,
                &cfg.app.base_url,
                &app_spec,
                &accounts.ids,
                &accounts.tokens,
            )
            .await,
        ),
        (Some(_), None) => Some(Cleanup {
            created_ids: accounts.ids.clone(),
            error: (!accounts.ids.is_empty())
                .then(|| "no [app.cleanup] configured: test accounts were left in the app".into()),
            ..Cleanup::default()
        }),
        _ => None,
    };
    lags.sort_by(f64::total_cmp);
    let lag_p99 = firsttoken_analyze::percentile_sorted(&lags, 99.0);
    let status = match (&failure, &stop) {
        (Some(f), _) => SessionStatus::Partial { reason: f.clone() },
        (None, Stop::Complete) => SessionStatus::Complete,
        (None, Stop::Budget) => SessionStatus::Partial {
            reason: format!(
                "budget of ${:.4} reached",
                cfg.session.budget_usd.unwrap_or(0.0)
            ),
        },
        (None, Stop::Cancelled) => SessionStatus::Partial {
            reason: "interrupted (Ctrl-C or SIGTERM)".into(),
        },
    };
    meta.status = status.clone();
    meta.ended_at = Some(rfc3339(SystemTime::now()));
    meta.cleanup = cleanup.clone();
    meta.client_lag_p99_ms = lag_p99;
    if let Err(e) = store
        .finish_session(
            &meta.id,
            &status,
            meta.ended_at.as_deref().unwrap_or(""),
            cleanup.as_ref(),
            lag_p99,
        )
        .await
    {
        eprintln!("error: cannot record the end of session {}: {e}", meta.id);
    }
    if !a.quiet {
        println!(
            "{}",
            super::summary::render(&meta, &stored, done, lag_p99.filter(|l| *l > LAG_BOUND_MS))
        );
    }
    let clean = cleanup.as_ref().is_none_or(Cleanup::is_clean);
    let code = if failed == 0 && status == SessionStatus::Complete && clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    };
    Ok(Outcome {
        code,
        session_id: Some(meta.id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_costs_come_from_the_price_table_only_without_usage_cost() {
        let cfg = Config::parse(firsttoken_plan::config::DEFAULT_CONFIG, "t").unwrap();
        let planned = firsttoken_plan::protocol::Planned {
            phase: firsttoken_plan::protocol::PhaseKind::Direct,
            dest: Dest::Direct(0),
            fresh: false,
            concurrency: None,
            prompt: 0,
        };
        let mut sample =
            firsttoken_record::Sample::empty(0, 0, firsttoken_record::Connection::Reused);
        sample.input_tokens = Some(1_000_000);
        sample.output_tokens = Some(2_000_000);
        let mut s = SessionSample {
            planned,
            sample,
            intended_start: None,
            actual_start: Duration::ZERO,
            started_at: SystemTime::UNIX_EPOCH,
        };
        price(&cfg, &mut s);
        // 1 M input × $0.50 + 2 M output × $1.50 (the example config's prices).
        assert_eq!(s.sample.cost_usd, Some(3.5));
        s.sample.cost_usd = Some(0.01);
        price(&cfg, &mut s);
        assert_eq!(s.sample.cost_usd, Some(0.01), "a reported cost is kept");
    }
}

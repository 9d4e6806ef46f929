//! `firsttoken check`: CI thresholds on a session's app requests, and a
//! before/after gate against a baseline session.

use std::process::ExitCode;

use clap::Args;

use firsttoken_analyze::PhaseKind;
use firsttoken_analyze::check::{Threshold, check as judge};
use firsttoken_read::compare::{Gate, gates, sessions_per_path, slower_somewhere};
use firsttoken_read::{LoadOptions, Selection, load};
use firsttoken_record::store::Store;
use firsttoken_report::words;
use firsttoken_session::DEFAULT_STORE;

use crate::{EXIT_FAILED_REQUESTS, EXIT_USAGE};

/// `firsttoken check`.
#[derive(Debug, Args)]
#[command(
    after_help = "Thresholds apply to app requests (warm, fresh, cold, concurrency, rate; warm-ups excluded) of the selected
sessions (default: the newest). EXIT STATUS: 0 all thresholds met, 1 a threshold failed or the session is
significantly slower than --against, 2 usage error.
Example: firsttoken check --max ttft.p95=3s --max error_rate=1% --against 20261130T0210"
)]
pub struct CheckArgs {
    /// Result store.
    #[arg(long, env = "FIRSTTOKEN_STORE", default_value = DEFAULT_STORE)]
    store: String,
    /// Session to check (default: the newest).
    #[arg(long)]
    session: Option<String>,
    /// Threshold METRIC=LIMIT (repeatable): ttft.p95=3s, e2e.p50=800ms, error_rate=1%.
    #[arg(long = "max", value_name = "METRIC=LIMIT")]
    max: Vec<String>,
    /// Baseline session: fail when warm TTFT is significantly slower than it.
    #[arg(long)]
    against: Option<String>,
}

/// Check thresholds; the exit code says whether they held.
pub async fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let thresholds: Vec<Threshold> = match a.max.iter().map(|m| m.parse()).collect() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if thresholds.is_empty() && a.against.is_none() {
        eprintln!("error: nothing to check: give --max METRIC=LIMIT and/or --against BASELINE");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let store = Store::open_existing(&a.store).await?;
    // The newest session unless one is named; the baseline beside it.
    let newest = match &a.session {
        Some(id) => id.clone(),
        None => firsttoken_read::select_sessions(&store, &[]).await?[0]
            .id
            .clone(),
    };
    let mut ids = vec![newest];
    ids.extend(a.against.iter().cloned());
    let loaded = load(&store, &Selection::Sessions(ids), LoadOptions::default()).await?;
    let meta = &loaded.sessions[0];
    outln!(
        "{}",
        words::check::head(
            &meta.id,
            meta.provenance.as_str(),
            &meta.labels.code_version
        )
    );
    // The session's own seed: the thresholds judge it alone.
    let settings = firsttoken_analyze::Settings::new(meta.seed);
    let verdicts = judge(&loaded.frame, &meta.id, &thresholds, &settings);
    let mut failed = false;
    for v in &verdicts {
        failed |= !v.held;
        outln!("{}", words::check::threshold(v));
    }
    if let Some(base) = loaded.sessions.get(1) {
        let cs = sessions_per_path(
            &loaded.frame,
            &meta.id,
            &base.id,
            Some(PhaseKind::Warm),
            &loaded.settings(),
        )?;
        failed |= slower_somewhere(&cs);
        for (c, gate) in cs.iter().zip(gates(&cs)) {
            let verdict = match gate {
                Gate::Pass => "PASS",
                Gate::Fail => "FAIL",
                Gate::Note => "NOTE",
            };
            outln!(
                "{}",
                words::check::against(verdict, &base.id, &c.comparison)
            );
        }
    }
    Ok(if failed {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    } else {
        ExitCode::SUCCESS
    })
}

//! `firsttoken check`: CI thresholds on a session's app requests, and a
//! before/after gate against a baseline session.

use std::process::ExitCode;

use clap::Args;

use firsttoken_analyze::check::Threshold;
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
    let checked = firsttoken_read::check::check(
        &store,
        a.session.as_deref(),
        a.against.as_deref(),
        &thresholds,
    )
    .await?;
    let failed = checked.failed();
    let meta = &checked.session;
    outln!(
        "{}",
        words::check::head(
            &meta.id,
            meta.provenance.as_str(),
            &meta.labels.code_version
        )
    );
    for v in &checked.verdicts {
        outln!("{}", words::check::threshold(v));
    }
    // A baseline that cannot be compared is an error after the thresholds'
    // lines.
    if let Some(against) = checked.against.transpose()? {
        for (c, gate) in &against.lines {
            outln!(
                "{}",
                words::check::against(*gate, &against.baseline.id, &c.comparison)
            );
        }
    }
    Ok(if failed {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    } else {
        ExitCode::SUCCESS
    })
}

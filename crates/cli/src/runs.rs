//! `firsttoken runs`: the runs across agents in a store, with their agents,
//! state and counts (each planned request counted once, from sample keys:
//! no sample row is read).

use std::process::ExitCode;

use clap::Args;

use firsttoken_record::store::{Store, mask_url};
use firsttoken_session::DEFAULT_STORE;

/// `firsttoken runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Result store: a SQLite file or a postgres:// URL.
    #[arg(long, env = "FIRSTTOKEN_STORE", default_value = DEFAULT_STORE)]
    store: String,
}

/// List runs, newest first.
pub async fn runs(a: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open_existing(&a.store).await?;
    let list = store.runs().await?;
    if list.is_empty() {
        outln!("no runs in {}", mask_url(&a.store));
        return Ok(ExitCode::SUCCESS);
    }
    let mut views = Vec::with_capacity(list.len());
    for info in list {
        views.push(firsttoken_read::run::load(&store, &info.run_id).await?.0);
    }
    outln!("{}", firsttoken_report::runs_table(&views));
    Ok(ExitCode::SUCCESS)
}

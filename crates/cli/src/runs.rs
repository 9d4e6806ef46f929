//! `firsttoken runs`: the runs across agents in a store, with their agents,
//! state and counts (each planned request counted once, from sample keys:
//! no sample row is read).

use std::process::ExitCode;

use clap::Args;

use firsttoken_record::run::RunState;
use firsttoken_record::store::{Store, mask_url};
use firsttoken_report::words::run as words;

use crate::session::DEFAULT_STORE;

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
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(100);
    // What a partial run misses goes below the table, whole.
    let mut notes = Vec::new();
    t.set_header(vec![
        "run",
        "created (UTC)",
        "state",
        "agents (vantage)",
        "sessions",
        "requests",
    ]);
    for info in list {
        let (run, _) = firsttoken_read::run::load(&store, &info.run_id).await?;
        if matches!(run.state, RunState::Partial { .. }) {
            notes.push(format!(
                "run {}: {}",
                info.run_id,
                words::state(&info, &run.state)
            ));
        }
        let mut agents: Vec<String> = run
            .members
            .iter()
            .map(|(_, s)| s.labels.vantage.clone())
            .collect();
        agents.sort();
        agents.dedup();
        t.add_row(vec![
            info.run_id.clone(),
            info.created_at.to_string().chars().take(19).collect(),
            words::state_word(&run.state).to_string(),
            agents.join(", "),
            run.members.len().to_string(),
            format!("{} of {}", run.counted, info.planned_requests),
        ]);
    }
    outln!("{t}");
    for n in notes {
        outln!("{n}");
    }
    Ok(ExitCode::SUCCESS)
}

//! `firsttoken runs`: the runs of a store as one table (≤ 100 columns),
//! newest first, and below it what each partial run misses, whole.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};
use firsttoken_record::run::{RunState, RunView};

use crate::words::run as words;

/// The runs table, then one line per partial run saying what it misses.
pub fn runs_table(runs: &[RunView]) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100);
    t.set_header(vec![
        "run",
        "created (UTC)",
        "state",
        "agents (vantage)",
        "sessions",
        "requests",
    ]);
    let mut notes = Vec::new();
    for run in runs {
        let info = &run.info;
        if matches!(run.state, RunState::Partial { .. }) {
            notes.push(format!(
                "run {}: {}",
                info.run_id,
                words::state(info, &run.state)
            ));
        }
        let mut agents: Vec<&str> = run
            .members
            .iter()
            .map(|(_, s)| s.labels.vantage.as_str())
            .collect();
        agents.sort_unstable();
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
    let mut out = t.to_string();
    for n in notes {
        out.push('\n');
        out.push_str(&n);
    }
    out
}

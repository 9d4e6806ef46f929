//! The one-screen summary at the end of `firsttoken run`, rendered by the
//! report crate's one formatter; red only on a terminal.

use std::io::IsTerminal;

use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_report::Emphasis;

/// Render the summary: p50/p95 TTFT per phase, errors, cost, cleanup.
pub fn render(meta: &SessionMeta, rows: &[SampleRow], done: u64, lag_flag: Option<f64>) -> String {
    let emphasis = if std::io::stdout().is_terminal() {
        Emphasis::Ansi
    } else {
        Emphasis::Plain
    };
    firsttoken_report::run_summary(meta, rows, done, lag_flag, emphasis)
}

//! Running a validated session spec, shared by `run`, `plan --pilot` and
//! `demo`: the session library under a progress bar ([`progress`]) or the
//! live view ([`crate::watch`]), the summary at the end, and the exit code.
//! No command logic: each command builds its spec and calls these.

mod progress;
// The summary's file stays beside the `run` command for now; it is this
// module's (nothing else renders it).
#[path = "../session/summary.rs"]
mod summary;

use std::process::ExitCode;

use anyhow::Context;

use firsttoken_record::store::Store;
use firsttoken_session::{Outcome, Pause, SessionError, SessionSpec};

use crate::EXIT_FAILED_REQUESTS;
use crate::watch::Watch;
use progress::Progress;

/// Run a validated spec with progress, print the summary, and return the outcome.
pub async fn run_spec(
    spec: &SessionSpec,
    store: &Store,
    quiet: bool,
) -> Result<Outcome, SessionError> {
    let mut progress = Progress::new(quiet, &spec.share());
    let outcome =
        firsttoken_session::run_session(spec, store, &mut progress, crate::shutdown_token())
            .await?;
    if !quiet {
        print_summary(spec, &outcome);
    }
    if let Some(t) = &outcome.traces {
        for (warning, line) in summary::traces(t) {
            if warning {
                eprintln!("warning: {line}");
            } else if !quiet {
                outln!("{line}");
            }
        }
    }
    for line in outcome
        .scrapes
        .iter()
        .filter_map(firsttoken_report::words::engine_metrics::scrape_failed)
    {
        eprintln!("warning: {line}");
    }
    Ok(outcome)
}

/// Run several validated specs at once (the demo's before and after), each
/// under its own named bar in one group on stderr (none when `quiet`);
/// nothing is printed when they end. Outcomes in the order given.
pub async fn run_specs_together(
    specs: &[(String, SessionSpec)],
    store: &Store,
    quiet: bool,
) -> Vec<Result<Outcome, SessionError>> {
    let multi = indicatif::MultiProgress::with_draw_target(
        indicatif::ProgressDrawTarget::stderr_with_hz(4),
    );
    let runs = specs.iter().map(|(name, spec)| {
        let mut progress = if quiet {
            Progress::new(true, &spec.share())
        } else {
            Progress::in_group(&multi, name, &spec.share())
        };
        async move {
            firsttoken_session::run_session(spec, store, &mut progress, crate::shutdown_token())
                .await
        }
    });
    // All run on this task: each session's requests are spawned by its
    // executor, so polling the sessions together delays no measurement.
    let results = futures_util::future::join_all(runs).await;
    let _ = multi.clear();
    results
}

/// A finished session's summary, as `run` prints it (table, cost, cleanup,
/// the span lines): for a caller that prints it later (the demo).
pub fn summary_text(spec: &SessionSpec, outcome: &Outcome) -> String {
    let mut s = summary::render(
        &outcome.meta,
        &outcome.rows,
        outcome.done,
        outcome.flagged_lag_ms(),
        spec.store(),
    );
    if let Some(t) = &outcome.traces {
        for (warning, line) in summary::traces(t) {
            s.push('\n');
            if warning {
                s.push_str("warning: ");
            }
            s.push_str(&line);
        }
    }
    s
}

/// Run a validated spec under the live view, then print the summary.
pub async fn run_watched(mut spec: SessionSpec, store: &Store) -> anyhow::Result<Outcome> {
    let pause = Pause::new();
    spec.pause = Some(pause.clone());
    let cancel = crate::shutdown_token();
    let mut watch = Watch::start(
        &spec.protocol,
        spec.config.session.budget_usd,
        pause,
        true,
        cancel.clone(),
    )
    .context("cannot start the live view (run without --watch)")?;
    let outcome = firsttoken_session::run_session(&spec, store, &mut watch, cancel).await;
    watch
        .finish()
        .context("the live view failed; the session's samples are stored")?;
    let outcome = outcome?;
    print_summary(&spec, &outcome);
    Ok(outcome)
}

/// The summary of a finished session, its cleanup retry naming the spec's store.
fn print_summary(spec: &SessionSpec, outcome: &Outcome) {
    outln!(
        "{}",
        summary::render(
            &outcome.meta,
            &outcome.rows,
            outcome.done,
            outcome.flagged_lag_ms(),
            spec.store()
        )
    );
}

/// 0 when everything was clean, else 1.
pub fn exit_code(outcome: &Outcome) -> ExitCode {
    if outcome.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED_REQUESTS)
    }
}

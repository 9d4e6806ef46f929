//! The one-screen summary at the end of `firsttoken run`, rendered by the
//! report crate's one formatter; red only on a terminal.

use std::io::IsTerminal;

use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_report::Emphasis;
use firsttoken_session::TraceOutcome;

/// Render the summary: p50/p95 TTFT per phase, errors, cost, cleanup (its
/// retry command naming `store`).
pub fn render(
    meta: &SessionMeta,
    rows: &[SampleRow],
    done: u64,
    lag_flag: Option<f64>,
    store: &str,
) -> String {
    let emphasis = if std::io::stdout().is_terminal() {
        Emphasis::Ansi
    } else {
        Emphasis::Plain
    };
    firsttoken_report::run_summary(meta, rows, done, lag_flag, emphasis, store)
}

/// What span collection did, as lines: `(true, …)` for a warning (the cap
/// was reached, the store failed, nothing arrived), `(false, …)` otherwise.
pub fn traces(t: &TraceOutcome) -> Vec<(bool, String)> {
    let at = t
        .listen
        .map_or_else(|| "the configured address".to_string(), |a| a.to_string());
    let mut out = vec![(
        false,
        format!(
            "spans: {} stored (OTLP/HTTP on {at}); {} of other traces not stored; {} malformed; {} export requests refused",
            t.stored, t.not_ours, t.malformed, t.refused_requests
        ),
    )];
    if t.cap_hit() {
        out.push((
            true,
            format!(
                "the session's span cap of {} was reached: {} more spans of its requests were not stored (raise [traces] max_spans, at most {})",
                t.cap,
                t.refused_by_cap,
                firsttoken_record::span::MAX_SPANS_PER_SESSION
            ),
        ));
    }
    if let Some(e) = &t.store_error {
        out.push((
            true,
            format!("storing spans failed, {} spans lost: {e}", t.lost),
        ));
    }
    if t.stored == 0 && t.not_ours == 0 && t.malformed == 0 && t.store_error.is_none() {
        out.push((
            true,
            format!(
                "no span arrived on {at}: point the app's exporter at it (OTEL_EXPORTER_OTLP_ENDPOINT=http://{at}, OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)"
            ),
        ));
    }
    out
}

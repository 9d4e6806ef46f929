//! The one-screen summary at the end of `firsttoken run`: p50/p95 TTFT per
//! phase, path and level (analyze's `session_rows`: the one pooling rule),
//! errors, cost and cleanup, numbers from [`crate::format`].

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};
use firsttoken_analyze::{SessionRow, Summary, session_rows};
use firsttoken_record::PhaseKind;
use firsttoken_record::session::{SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::vocab::Destination;

use crate::format::{DASH, ms, usd};

/// What `run` announces before it sends: `planned: 211 requests (206
/// measured, 5 warm-ups, one per warm connection; up to 362 if the app
/// closes idle connections)`. The count is what will be sent while the
/// app keeps its connections open.
pub fn planned(measured: usize, warmups: usize, max_warmups: usize) -> String {
    let most = measured.saturating_add(max_warmups);
    let total = measured.saturating_add(warmups);
    if max_warmups == 0 {
        return format!("planned: {total} requests, no warm-ups");
    }
    let upto = if max_warmups > warmups {
        format!("; up to {most} if the app closes idle connections")
    } else {
        String::new()
    };
    format!(
        "planned: {total} requests ({measured} measured, {warmups} {}, one per warm connection{upto})",
        if warmups == 1 { "warm-up" } else { "warm-ups" }
    )
}

/// Client scheduling lag (p99, ms) above which open-loop start times are
/// flagged as unreliable (the stored vocabulary's, by which the session
/// library flags a run's lag).
pub use firsttoken_record::session::LAG_FLAG_MS;

/// How to show warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emphasis {
    /// Plain text.
    Plain,
    /// ANSI red (for a terminal).
    Ansi,
}

impl Emphasis {
    fn warn(self, text: &str) -> String {
        match self {
            Emphasis::Plain => text.to_string(),
            Emphasis::Ansi => format!("\x1b[31m{text}\x1b[0m"),
        }
    }
}

/// A row's name: `warm · chat`, `c=3 · chat`, `direct · fast`, `ping (ttfb)`.
fn row_label(r: &SessionRow) -> String {
    let dest = match &r.dest {
        Destination::App { path } => path.clone(),
        Destination::Direct { strategy } => strategy.clone(),
        Destination::Ping => return "ping (ttfb)".to_string(),
    };
    let phase = match r.concurrency {
        Some(k) if r.phase == PhaseKind::Concurrency => format!("c={k}"),
        _ => r.phase.to_string(),
    };
    match dest {
        Some(d) => format!("{phase} · {d}"),
        None => phase,
    }
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_string(), ms)
}

/// A median, a single value as itself, or `–`.
fn median(s: Option<Summary>) -> String {
    match s {
        Some(s) if s.n == 1 => format!("{} (one value)", ms(s.min)),
        Some(s) => s.p50.map_or_else(|| DASH.to_string(), ms),
        None => DASH.to_string(),
    }
}

/// A shell word as typed: bare when it needs no quoting, else in single
/// quotes.
pub(crate) fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command that retries session `id`'s cleanup, as it works when
/// printed: `firsttoken cleanup --session ID -c CONFIG --store STORE`, with
/// the config file the session ran with (stored as `config_path` in its
/// spec) and the store it was written to. A store URL's password is
/// masked (`***`) and the line says to put it back; a session whose config
/// was built in memory (the demo) names no file and says what `-c` needs.
pub fn cleanup_retry(meta: &SessionMeta, store: &str) -> String {
    let masked = firsttoken_record::store::mask_url(store);
    let mut cmd = format!(
        "firsttoken cleanup --session {} --store {}",
        shell_word(&meta.id),
        shell_word(&masked)
    );
    let config = meta.spec.get("config_path").and_then(|p| p.as_str());
    match config {
        Some(c) => cmd.push_str(&format!(" -c {}", shell_word(c))),
        None => cmd.push_str(" -c CONFIG (a config with the app's [app.cleanup] section)"),
    }
    if masked != store {
        cmd.push_str(" (with the store's password where *** stands)");
    }
    cmd
}

/// A session's cleanup in a word or two, for the `sessions` table: `–`
/// (no test accounts), `clean`, `FAILED`, `3 rows left`, `not verified`.
pub fn cleanup_cell(meta: &SessionMeta) -> String {
    match &meta.cleanup {
        None => DASH.to_string(),
        Some(c) => match (&c.error, c.residual) {
            (Some(_), _) => "FAILED".to_string(),
            (None, Some(0)) => "clean".to_string(),
            (None, Some(n)) => format!("{n} rows left"),
            (None, None) => "not verified".to_string(),
        },
    }
}

/// The line below the `sessions` table for a session whose cleanup left
/// its test accounts (failed, or rows left): `session ID: cleanup FAILED:
/// … (N test accounts; retry: firsttoken cleanup …)`; `None` when clean,
/// unverified or without accounts.
pub fn cleanup_note(meta: &SessionMeta, store: &str) -> Option<String> {
    let c = meta.cleanup.as_ref()?;
    let what = match (&c.error, c.residual) {
        (Some(e), _) => format!("cleanup FAILED: {e}"),
        (None, Some(n)) if n > 0 => format!("cleanup left {n} residual rows"),
        _ => return None,
    };
    Some(format!(
        "session {}: {what} ({} test accounts; retry: {})",
        meta.id,
        c.created_ids.len(),
        cleanup_retry(meta, store)
    ))
}

/// The run summary of session `meta` over its `rows`: `done` requests
/// sent, and `lag_p99_ms` when the client's scheduling lag was flagged;
/// `store` is where it was written (for the cleanup retry command).
pub fn run_summary(
    meta: &SessionMeta,
    rows: &[SampleRow],
    done: u64,
    lag_p99_ms: Option<f64>,
    emphasis: Emphasis,
    store: &str,
) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED).set_width(100);
    t.set_header(vec![
        "phase · path",
        "n",
        "failed",
        "ttft p50",
        "ttft p95",
        "e2e p50",
        "cost",
    ]);
    let mut total_cost = 0.0;
    let mut errors: Vec<(String, usize)> = Vec::new();
    for r in rows.iter().filter(|r| !r.sample.warmup) {
        if let Some(e) = &r.sample.error {
            let key = format!(
                "{}: {}",
                e.kind.as_str(),
                e.message.chars().take(60).collect::<String>()
            );
            match errors.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += 1,
                None => errors.push((key, 1)),
            }
        }
    }
    let mut withheld = false;
    for row in session_rows(rows) {
        total_cost += row.cost_usd;
        withheld |= row.first.is_some_and(|s| s.n >= 2 && s.n < 20);
        t.add_row(vec![
            row_label(&row),
            row.requests.to_string(),
            row.failed.to_string(),
            median(row.first),
            opt_ms(row.first.and_then(|s| s.p95)),
            median(row.e2e),
            usd(row.cost_usd),
        ]);
    }
    for i in 1..7 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = format!(
        "session {} · {} · {} · network {} · code {} · vantage {}\n{t}\n",
        meta.id,
        meta.provenance.as_str(),
        match &meta.status {
            SessionStatus::Complete => "complete".to_string(),
            SessionStatus::Running => "running".to_string(),
            SessionStatus::Partial { reason } => emphasis.warn(&format!("PARTIAL: {reason}")),
        },
        meta.labels.network,
        meta.labels.code_version,
        meta.labels.vantage
    );
    if withheld {
        out.push_str(crate::words::WITHHELD_NOTE);
        out.push('\n');
    }
    out.push_str(&format!(
        "requests: {done}  total cost: {}\n",
        usd(total_cost)
    ));
    for (k, n) in errors.iter().take(8) {
        out.push_str(&format!("  {n} × {k}\n"));
    }
    if let Some(c) = &meta.cleanup {
        let line = match (&c.error, c.residual) {
            (Some(e), _) => emphasis.warn(&format!(
                "cleanup FAILED: {e} (retry: {})",
                cleanup_retry(meta, store)
            )),
            (None, Some(0)) => format!(
                "cleanup: {} test accounts created, {} rows deleted, 0 residual rows",
                c.created_ids.len(),
                c.deleted
            ),
            (None, Some(n)) => emphasis.warn(&format!(
                "cleanup: {n} residual rows left after deleting {} test accounts (retry: {})",
                c.created_ids.len(),
                cleanup_retry(meta, store)
            )),
            (None, None) => format!(
                "cleanup: {} deleted; residual not verified (no count query configured)",
                c.deleted
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(lag) = lag_p99_ms {
        out.push_str(&emphasis.warn(&format!(
            "client lag p99 {} exceeds {}: open-loop start times are unreliable; latencies from the intended start are stored\n",
            ms(lag),
            ms(LAG_FLAG_MS)
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_record::session::{Labels, Provenance};
    use firsttoken_record::{Connection, Sample};

    #[test]
    fn the_run_summary_uses_the_one_formatter() {
        let meta = SessionMeta {
            id: "s1".into(),
            started_at: "2026-11-30T02:00:00.000Z".parse().unwrap(),
            ended_at: None,
            status: SessionStatus::Partial {
                reason: "ctrl-c".into(),
            },
            spec: serde_json::Value::Null,
            seed: 1,
            tool_version: "0.1.0".into(),
            host: "h".into(),
            pid: None,
            labels: Labels::default(),
            provenance: Provenance::Measured,
            cleanup: None,
            client_lag_p99_ms: None,
        };
        let rows: Vec<SampleRow> = (0..3)
            .map(|i| {
                let mut s = Sample::empty(i, 0, Connection::Reused);
                s.ttft_ms = Some(1900.0);
                s.e2e_ms = Some(2400.0);
                s.cost_usd = Some(0.001);
                SampleRow {
                    session_id: "s1".into(),
                    phase: firsttoken_record::PhaseKind::Warm,
                    dest: firsttoken_record::Destination::App {
                        path: Some("chat".into()),
                    },
                    concurrency: None,
                    intended_start_ms: None,
                    actual_start_ms: 0.0,
                    started_at: "2026-11-30T02:00:01.000Z".parse().unwrap(),
                    provenance: Provenance::Measured,
                    prompt: None,
                    sample: s,
                }
            })
            .collect();
        let out = run_summary(&meta, &rows, 3, Some(7.5), Emphasis::Plain, "s.db");
        assert!(out.contains("1.90 s") && out.contains("2.40 s"), "{out}");
        assert!(out.contains("PARTIAL: ctrl-c"));
        assert!(out.contains("total cost: $0.0030"), "{out}");
        assert!(
            out.contains("client lag p99 7.5 ms exceeds 5.0 ms"),
            "{out}"
        );
        assert!(!out.contains('\x1b'));
    }
}

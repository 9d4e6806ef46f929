//! The one-screen summary at the end of `firsttoken run`.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};

use firsttoken_analyze::percentile;
use firsttoken_record::session::{SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::vocab::PhaseKind;

const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

fn color(text: &str) -> String {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        format!("{RED}{text}{RESET}")
    } else {
        text.to_string()
    }
}

fn ms(v: Option<f64>) -> String {
    v.map(|x| {
        if x >= 100.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.1}")
        }
    })
    .unwrap_or_else(|| "-".into())
}

/// Render the summary: p50/p95 TTFT per phase, errors, cost, cleanup.
pub fn render(meta: &SessionMeta, rows: &[SampleRow], done: u64, lag_flag: Option<f64>) -> String {
    let mut phases: Vec<PhaseKind> = Vec::new();
    for r in rows {
        if !phases.contains(&r.phase) {
            phases.push(r.phase);
        }
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED).set_width(100);
    t.set_header(vec![
        "phase",
        "n",
        "failed",
        "ttft p50 ms",
        "ttft p95 ms",
        "e2e p50 ms",
        "cost USD",
    ]);
    let mut total_cost = 0.0;
    let mut errors: Vec<(String, usize)> = Vec::new();
    for phase in phases {
        let counted: Vec<&SampleRow> = rows
            .iter()
            .filter(|r| r.phase == phase && !r.sample.warmup)
            .collect();
        let ok: Vec<&SampleRow> = counted
            .iter()
            .copied()
            .filter(|r| r.sample.is_ok())
            .collect();
        // Pings carry no tokens: their round trip is the time to the first byte.
        let first: Vec<f64> = ok
            .iter()
            .filter_map(|r| {
                if phase == PhaseKind::Ping {
                    r.sample.ttfb_ms
                } else {
                    r.sample.ttft_ms
                }
            })
            .collect();
        let e2e: Vec<f64> = ok.iter().filter_map(|r| r.sample.e2e_ms).collect();
        let cost: f64 = rows
            .iter()
            .filter(|r| r.phase == phase)
            .filter_map(|r| r.sample.cost_usd)
            .fold(0.0, |a, b| a + b);
        total_cost += cost;
        for e in counted.iter().filter_map(|r| r.sample.error.as_ref()) {
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
        t.add_row(vec![
            if phase == PhaseKind::Ping {
                "ping (ttfb)".to_string()
            } else {
                phase.to_string()
            },
            counted.len().to_string(),
            (counted.len() - ok.len()).to_string(),
            ms(percentile(&first, 50.0)),
            ms(percentile(&first, 95.0)),
            ms(percentile(&e2e, 50.0)),
            format!("{cost:.4}"),
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
            SessionStatus::Partial { reason } => color(&format!("PARTIAL: {reason}")),
        },
        meta.labels.network,
        meta.labels.code_version,
        meta.labels.vantage
    );
    out.push_str(&format!("requests: {done}  total cost: ${total_cost:.4}\n"));
    for (k, n) in errors.iter().take(8) {
        out.push_str(&format!("  {n} × {k}\n"));
    }
    if let Some(c) = &meta.cleanup {
        let line = match (&c.error, c.residual) {
            (Some(e), _) => color(&format!(
                "cleanup FAILED: {e} (retry: firsttoken cleanup --session {})",
                meta.id
            )),
            (None, Some(0)) => format!(
                "cleanup: {} test accounts created, {} rows deleted, 0 residual rows",
                c.created_ids.len(),
                c.deleted
            ),
            (None, Some(n)) => color(&format!(
                "cleanup: {n} residual rows left after deleting {} test accounts",
                c.created_ids.len()
            )),
            (None, None) => format!(
                "cleanup: {} deleted; residual not verified (no count query configured)",
                c.deleted
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(lag) = lag_flag {
        out.push_str(&color(&format!(
            "client lag p99 {lag:.1} ms exceeds 5 ms: open-loop start times are unreliable; latencies from the intended start are stored\n"
        )));
    }
    out
}

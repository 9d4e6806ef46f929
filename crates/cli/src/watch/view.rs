//! The live view's layout: one frame drawn from analyze's [`LiveState`].
//! Numbers go through the report's formatter, so they read as in every
//! report.

use std::time::Duration;

use firsttoken_analyze::live::{LAST_ERRORS, LiveState, histogram};
use firsttoken_analyze::{Percentile, Settings, Stat};
use firsttoken_report::format::{self, Unit};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Sparkline, Table, Wrap};

/// What the view knows besides the samples: the pause switch's state and
/// how many requests were let start.
#[derive(Debug, Clone, Copy, Default)]
pub struct Status {
    /// Held between steps.
    pub paused: bool,
    /// Requests let start so far (warm-ups included).
    pub started: u64,
    /// `q` was pressed: stopping.
    pub stopping: bool,
    /// `p` is offered (a session; a probe is one step).
    pub can_pause: bool,
    /// Time since the view started.
    pub elapsed: Duration,
}

/// Draw the whole view.
pub fn draw(f: &mut Frame, s: &LiveState, status: Status, settings: &Settings) {
    let [head, phases, table, hist, errors, keys] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(2),
        Constraint::Min(5),
        Constraint::Length(5),
        Constraint::Length(4 + LAST_ERRORS as u16),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(
        Paragraph::new(header(s, status)).wrap(Wrap { trim: true }),
        head,
    );
    f.render_widget(
        Paragraph::new(phase_line(s)).wrap(Wrap { trim: true }),
        phases,
    );
    groups(f, table, s, settings);
    ttft_histogram(f, hist, s);
    f.render_widget(
        Paragraph::new(error_lines(s))
            .block(Block::default().borders(Borders::TOP).title(" errors "))
            .wrap(Wrap { trim: true }),
        errors,
    );
    let help = if status.stopping {
        "stopping: requests in flight are abandoned, samples kept, cleanup runs"
    } else if !status.can_pause {
        "q stop (requests in flight are abandoned, the summary follows)"
    } else if status.paused {
        "q stop (samples kept, cleanup runs) · p resume"
    } else {
        "q stop (samples kept, cleanup runs) · p pause between steps"
    };
    f.render_widget(
        Paragraph::new(help).style(Style::default().add_modifier(Modifier::DIM)),
        keys,
    );
}

fn header(s: &LiveState, status: Status) -> Vec<Line<'static>> {
    let id = s.session.as_deref().unwrap_or("starting");
    // Started by the executor and not yet stored: in flight, plus any
    // finished request whose sample is still on its way to the store.
    let in_flight = status.started.saturating_sub(s.stored);
    let mut first = format!(
        "session {id} · {} · {}/{} requests stored (warm-ups included) · {in_flight} started, not yet stored",
        humantime::format_duration(Duration::from_secs(status.elapsed.as_secs())),
        s.stored,
        s.announced
    );
    if status.paused {
        first.push_str(" · PAUSED between steps");
    }
    if s.measured {
        first.push_str(" · measured, cleaning up");
    }
    let spend = match s.budget_usd {
        Some(b) => format!(
            "spent {} of the {} budget",
            format::usd(s.spent_usd),
            format::usd(b)
        ),
        None => format!("spent {} (no budget)", format::usd(s.spent_usd)),
    };
    let lag = match s.start_lag() {
        None => "open-loop start lag: no arrivals yet".to_string(),
        Some(lag) => format!(
            "open-loop start lag p50 {} · p99 {} (n = {})",
            format::ms(lag.p50_ms),
            match lag.p99_ms {
                Some(p99) => format::ms(p99),
                None => format::too_few(lag.n, Percentile::P99.min_n()),
            },
            lag.n
        ),
    };
    vec![Line::from(first), Line::from(format!("{spend} · {lag}"))]
}

fn phase_line(s: &LiveState) -> Line<'static> {
    let parts: Vec<String> = s
        .planned
        .iter()
        .map(|(k, n)| format!("{} {}/{n}", k.as_str(), s.done_in(*k)))
        .collect();
    let planned: u64 = s.planned.iter().map(|(_, n)| n).sum();
    Line::from(format!(
        "counted requests {}/{planned} · {}",
        s.done(),
        parts.join(" · ")
    ))
}

fn groups(f: &mut Frame, area: Rect, s: &LiveState, settings: &Settings) {
    let rows: Vec<Row> = s
        .groups
        .iter()
        .map(|(key, g)| {
            Row::new(vec![
                key.to_string(),
                g.done.to_string(),
                if g.done == 0 {
                    format::DASH.to_string()
                } else {
                    format!(
                        "{} ({})",
                        g.failed,
                        format::percent(Some(g.failed as f64 / g.done as f64))
                    )
                },
                cell(&g.ttft(Percentile::P50, settings)),
                cell(&g.ttft(Percentile::P95, settings)),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(22),
            Constraint::Length(6),
            Constraint::Length(12),
            Constraint::Fill(1),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(vec![
            "phase · destination",
            "done",
            "errors",
            "TTFT p50 [95% CI]",
            "TTFT p95 [95% CI]",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    );
    f.render_widget(table, area);
}

/// A percentile with its interval, or the short reason it is withheld
/// (`too few (n = 12, needs 20)`), to fit a column.
fn cell(stat: &Stat) -> String {
    match *stat {
        Stat::TooSmall { n, needed } => format!("too few {}", format::too_few_counts(n, needed)),
        Stat::Ok(_) => format::stat(Unit::Ms, stat),
    }
}

fn ttft_histogram(f: &mut Frame, area: Rect, s: &LiveState) {
    // The group with the most TTFT values: one group, never a pool of
    // groups that may behave differently.
    let Some((key, g)) = s.fullest() else {
        f.render_widget(
            Paragraph::new("TTFT histogram: no first token yet")
                .block(Block::default().borders(Borders::TOP)),
            area,
        );
        return;
    };
    let values: Vec<f64> = g.ttft_ms.iter().copied().collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    // One bar a column; about two values a bar, so a few values do not
    // scatter into a comb.
    let width = area.width.saturating_sub(2).max(1) as usize;
    let counts = histogram(&values, (values.len() / 2).clamp(5, width.max(5)));
    let title = format!(
        " TTFT histogram · {key} · {} to {} · n = {} ",
        format::ms(lo),
        format::ms(hi),
        values.len()
    );
    f.render_widget(
        Sparkline::default()
            .block(Block::default().borders(Borders::TOP).title(title))
            .data(&counts),
        area,
    );
}

fn error_lines(s: &LiveState) -> Vec<Line<'static>> {
    if s.errors.is_empty() {
        return vec![Line::from("none")];
    }
    let kinds: Vec<String> = s.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let mut out = vec![Line::from(format!("by kind: {}", kinds.join(" · ")))];
    for e in &s.last_errors {
        out.push(Line::from(format!(
            "{} · {}: {}",
            e.group,
            e.kind.as_str(),
            e.message
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_plan::protocol::{Dest, Planned, Protocol, Step};
    use firsttoken_record::session::SampleRow;
    use firsttoken_record::{
        Connection, Destination, ErrorKind, PhaseKind, Sample, SampleError, UtcTime,
    };
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn row(phase: PhaseKind, path: &str, ttft: Option<f64>, seq: u64) -> SampleRow {
        let mut s = Sample::empty(seq, 0, Connection::Reused);
        s.ttft_ms = ttft;
        if ttft.is_none() {
            s.error = Some(SampleError {
                kind: ErrorKind::Timeout,
                message: "no first byte within 30 s".into(),
            });
        }
        let dest = Destination::App {
            path: Some(path.into()),
        };
        let at = UtcTime::from(std::time::SystemTime::UNIX_EPOCH);
        SampleRow::new("20261201T120000Z-abcd", phase, dest, at, s)
    }

    fn screen(status: Status) -> String {
        let p = |phase| Planned {
            phase,
            dest: Dest::App(0),
            fresh: false,
            concurrency: None,
            prompt: 0,
            turn: None,
        };
        let mut steps = vec![Step::One(p(PhaseKind::Warm)); 40];
        steps.extend(vec![Step::One(p(PhaseKind::Fresh)); 10]);
        let protocol = Protocol { steps };
        let mut s = super::super::live_state(&protocol, Some(0.5));
        s.session = Some("20261201T120000Z-abcd".into());
        for i in 0..30u32 {
            let path = if i % 2 == 0 { "chat" } else { "docs" };
            let base = if path == "chat" { 900.0 } else { 400.0 };
            s.record(
                &row(
                    PhaseKind::Warm,
                    path,
                    Some(base + f64::from(i * 7 % 50)),
                    u64::from(i),
                ),
                0.001 * f64::from(i),
            );
        }
        s.record(&row(PhaseKind::Fresh, "chat", None, 31), 0.03);
        let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
        terminal
            .draw(|f| draw(f, &s, status, &Settings::new(1)))
            .unwrap();
        let buf = terminal.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..buf.area.height {
            let line: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            out.push_str(line.trim_end());
            out.push('\n');
        }
        // The elapsed time is the one value that moves.
        out.replace(" · 0s · ", " · <elapsed> · ")
    }

    #[test]
    fn the_view_shows_groups_errors_and_keys() {
        let out = screen(Status {
            paused: false,
            started: 33,
            stopping: false,
            can_pause: true,
            elapsed: Duration::ZERO,
        });
        insta::assert_snapshot!(out);
        assert!(out.contains("warm · chat"), "{out}");
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("2 started, not yet stored"), "{out}");
        assert!(
            flat.contains("spent $0.0300 of the $0.5000 budget"),
            "{out}"
        );
        assert!(out.contains("timeout"), "{out}");
        assert!(out.contains("p pause between steps"), "{out}");
    }

    #[test]
    fn a_paused_view_says_so() {
        let out = screen(Status {
            paused: true,
            started: 31,
            stopping: false,
            can_pause: true,
            elapsed: Duration::ZERO,
        });
        assert!(out.contains("PAUSED between steps"), "{out}");
        assert!(out.contains("p resume"), "{out}");
    }
}

//! The sections around the diagnostics: the run, the findings, the
//! sessions, TTFT per group, the typical request, the comparisons, the
//! client's clock and the claims and limits.

use firsttoken_analyze::{Analysis, Comparison, MetricSummary, rank_findings};
use firsttoken_record::run::RunView;
use firsttoken_record::session::{Provenance, SessionMeta, SessionStatus};

use super::{ColumnKind, Entry, Mark, PlotSlot, Ranked, Section, SectionId, TableData, header};
use crate::format::{self, Unit, percent, stat};
use crate::words;

/// The run across agents: its head line, each segment's agent and clock
/// under it, then how the agents started.
pub(super) fn run(run: &RunView) -> Section {
    let mut s = Section::new(SectionId::Run);
    s.push(words::run::head(run));
    let mut by_segment: Vec<_> = run.members.iter().collect();
    by_segment.sort_by_key(|(m, s)| (m.segment, s.started_at));
    for (m, session) in by_segment {
        s.push_marked(
            words::run::segment(m, session),
            Mark {
                depth: 1,
                ..Mark::default()
            },
        );
    }
    for l in words::run::start(&run.start) {
        s.push(l);
    }
    s
}

/// The ranked findings, one line each: rank, statement and pointer.
pub(super) fn findings(a: &Analysis, comparisons: &[Comparison]) -> Section {
    let mut s = Section::new(SectionId::Findings);
    for f in rank_findings(a, comparisons) {
        let ranked = Ranked {
            rank: f.rank,
            statement: words::finding(&f),
            wait: words::wait(&f),
            section: f.section,
            name: words::section_name(f.section),
            plot: f.plot,
        };
        s.push_marked(
            words::finding_line(&f),
            Mark {
                finding: Some(ranked),
                ..Mark::default()
            },
        );
    }
    s
}

fn or_dash(v: &str) -> String {
    if v.is_empty() {
        format::DASH.to_string()
    } else {
        v.to_string()
    }
}

/// Each session in a line (its labels by name, so group labels can stay
/// short), and on the page its status, times, host and tool version.
pub(super) fn sessions(sessions: &[SessionMeta]) -> Section {
    let mut s = Section::new(SectionId::Sessions);
    for m in sessions {
        s.push(format!(
            "session {} · {} · code_version={} · network {} · vantage {}",
            m.id,
            m.provenance.as_str(),
            m.labels.code_version,
            m.labels.network,
            m.labels.vantage
        ));
    }
    if sessions.is_empty() {
        return s;
    }
    let mut t = TableData::new(
        header(&[
            "session",
            "code version",
            "network",
            "vantage",
            "provenance",
            "status",
            "started (UTC)",
            "ended (UTC)",
            "host",
            "tool",
        ]),
        &[1, 2, 3, 8, 9],
    )
    .kind(4, ColumnKind::Provenance)
    .kind(5, ColumnKind::Status)
    .kind(6, ColumnKind::Unbroken)
    .kind(7, ColumnKind::Unbroken)
    .page();
    for m in sessions {
        t.rows.push(vec![
            m.id.clone(),
            or_dash(&m.labels.code_version),
            or_dash(&m.labels.network),
            or_dash(&m.labels.vantage),
            m.provenance.as_str().to_string(),
            match &m.status {
                SessionStatus::Running => "running (or stopped without a trace)".to_string(),
                SessionStatus::Complete => "complete".to_string(),
                SessionStatus::Partial { reason } => format!("partial: {reason}"),
            },
            m.started_at.to_string(),
            m.ended_at
                .map_or_else(|| format::DASH.into(), |t| t.to_string()),
            m.host.clone(),
            m.tool_version.clone(),
        ]);
    }
    s.tables.push(t);
    s
}

fn summary_row(label: String, m: &MetricSummary) -> Vec<String> {
    let u = Unit::of(m.metric);
    vec![
        label,
        m.requests.to_string(),
        m.n.to_string(),
        percent(m.error_rate),
        format::median_of(u, m),
        format::pct_cell(u, &m.p90),
        format::pct_cell(u, &m.p95),
        format::pct_cell(u, &m.p99),
    ]
}

/// TTFT per group, pooled over sessions, and how far the sessions'
/// medians lie apart; the page draws the CDF and the per-session boxes.
pub(super) fn ttft(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Ttft);
    s.plots = vec![PlotSlot::TtftCdf, PlotSlot::SessionBox];
    let group_head = super::group_head(&a.keys);
    let mut t = summary_table(&group_head, "requests").page_columns(&[1]);
    let mut per_session = TableData::new(
        header(&[
            &group_head,
            "sessions",
            "median of session medians",
            "range",
        ]),
        &[],
    );
    for g in &a.groups {
        let u = Unit::of(g.pooled.metric);
        t.rows
            .push(summary_row(super::pooled_group_label(g), &g.pooled));
        let range = match (g.min_session_median, g.max_session_median) {
            (Some(lo), Some(hi)) => format!("{} – {}", format::value(u, lo), format::value(u, hi)),
            _ => format::DASH.into(),
        };
        per_session.rows.push(vec![
            super::pooled_group_label(g),
            g.sessions.len().to_string(),
            format::opt(u, g.median_of_session_medians),
            range,
        ]);
    }
    if !t.rows.is_empty() {
        s.tables.push(t.captioned(words::GROUPS_CAPTION));
        s.tables.push(per_session);
    }
    // Turns that called a tool: TTFT counts text only, so their first
    // output (text or tool call) gets its own rows.
    if !a.first_output.is_empty() {
        let mut fo = summary_table(&group_head, "tool-call turns");
        for g in &a.first_output {
            fo.rows
                .push(summary_row(super::pooled_group_label(g), &g.pooled));
        }
        s.tables.push(fo.captioned(words::FIRST_OUTPUT_CAPTION));
    }
    // Flow paths: the user's wait from the flow's start, split by step.
    if !a.flows.is_empty() {
        let mut t = TableData::new(
            header(&["flow", "part", "n", "median [95 % CI]", "mean", "share"]),
            &[],
        );
        for f in &a.flows {
            s.push(words::flow::sentence(f));
            let label = words::flow::label(f);
            for p in &f.parts {
                t.rows.push(vec![
                    label.clone(),
                    words::flow::part(&p.kind),
                    f.n.to_string(),
                    stat(Unit::Ms, &p.median),
                    format::ms(p.mean_ms),
                    percent(Some(p.share)),
                ]);
            }
            t.rows.push(vec![
                label,
                words::flow::WHOLE.into(),
                f.n.to_string(),
                stat(Unit::Ms, &f.flow_ttft),
                format::DASH.into(),
                percent(Some(1.0)),
            ]);
        }
        s.tables.push(t.captioned(words::flow::CAPTION));
    }
    // Conversation paths: TTFT by turn, each turn against the first.
    if !a.conversations.is_empty() {
        let mut t = TableData::new(
            header(&[
                "conversation",
                "turn",
                "n",
                "TTFT median [95 % CI]",
                "over turn 1 [95 % CI]",
                "history",
                "sent",
            ]),
            &[],
        );
        for c in &a.conversations {
            s.push(words::conversation::sentence(
                c,
                a.settings.noise_threshold(),
            ));
            let label = words::conversation::label(c);
            for turn in &c.turns {
                t.rows.push(vec![
                    label.clone(),
                    turn.turn.to_string(),
                    turn.n.to_string(),
                    stat(Unit::Ms, &turn.ttft),
                    turn.over_first
                        .as_ref()
                        .map_or_else(|| format::DASH.into(), |d| format::signed_stat(Unit::Ms, d)),
                    format!("{:.0}", turn.history_messages),
                    words::conversation::bytes(turn.request_bytes),
                ]);
            }
        }
        s.tables.push(t.captioned(words::conversation::CAPTION));
    }
    s
}

/// An empty table of [`summary_row`]s: the group, what its count counts,
/// then n, errors and the four percentiles.
fn summary_table(group_head: &str, counted: &str) -> TableData {
    TableData::new(
        header(&[
            group_head, counted, "n", "errors", "p50", "p90", "p95", "p99",
        ]),
        &[],
    )
}

/// One typical request's phases: a plot only.
pub(super) fn typical() -> Section {
    let mut s = Section::new(SectionId::Typical);
    s.plots = vec![PlotSlot::Waterfall];
    s
}

/// The comparisons table, each row led by where its comparison comes from
/// (`requested, ttft`; on the page, whose width has room for it).
fn comparison_table(rows: &[(String, &Comparison)]) -> TableData {
    let mut t = TableData::new(
        header(&[
            "what",
            "A → B",
            "n (A vs B)",
            "median A",
            "median B",
            "Δ median [CI]",
            "relative",
            "Δ p95 [CI]",
            "U test",
            "Cliff's δ",
            "verdict",
        ]),
        &[],
    )
    .kind(0, ColumnKind::Unbroken)
    .kind(1, ColumnKind::Unbroken)
    .kind(10, ColumnKind::Verdict)
    .page_columns(&[0, 2, 6]);
    for (what, c) in rows {
        let u = Unit::of(c.metric);
        t.rows.push(vec![
            what.clone(),
            format!("{} → {}", c.a, c.b),
            format!("{} vs {}", c.n_a, c.n_b),
            stat(u, &c.median_a),
            stat(u, &c.median_b),
            format::signed_stat(u, &c.median_difference),
            format::relative(c.relative_median_difference),
            format::signed_stat(u, &c.p95_difference),
            // Samples too few for the rank test to decide get no p-value:
            // the verdict says why.
            c.mann_whitney
                .filter(|_| c.direction != firsttoken_analyze::Direction::TooFewSamples)
                .map_or_else(|| format::DASH.into(), |m| format::p_value(m.p_value)),
            c.cliffs_delta
                .map_or_else(|| format::DASH.into(), |d| format::coefficient(d.delta)),
            words::verdict(c).to_string(),
        ]);
    }
    t
}

/// `synthetic` or `synthetic, code_version=v2`: where a figure comes from.
fn origin(p: Provenance, scope: &str) -> String {
    if scope.is_empty() {
        p.as_str().to_string()
    } else {
        format!("{}, {scope}", p.as_str())
    }
}

/// The comparisons asked for (`compare`, the demo's before/after): each in
/// a sentence and a row; then, on the page, every comparison the analysis
/// made itself, each with where it comes from (each is also stated in its
/// section).
pub(super) fn comparisons(a: &Analysis, requested: &[Comparison]) -> Section {
    let mut s = Section::new(SectionId::Comparisons);
    for c in requested {
        s.push(words::comparison(c));
    }
    if !requested.is_empty() {
        let rows: Vec<(String, &Comparison)> = requested
            .iter()
            .map(|c| (format!("requested, {}", c.metric.name()), c))
            .collect();
        s.tables.push(comparison_table(&rows));
    }
    let mut made: Vec<(String, &Comparison)> = Vec::new();
    for p in &a.providers {
        if let Some(c) = &p.ttft_comparison {
            made.push((
                format!("strategies, TTFT ({})", origin(p.provenance, &p.scope)),
                c,
            ));
        }
    }
    for r in &a.routes {
        for c in &r.comparisons {
            made.push((
                format!("paths, warm TTFT ({})", origin(r.provenance, &r.scope)),
                c,
            ));
        }
    }
    for d in &a.drift {
        for ch in &d.changes {
            made.push((
                format!("days, warm TTFT ({})", origin(d.provenance, &d.scope)),
                &ch.app,
            ));
        }
    }
    if !made.is_empty() {
        s.tables.push(
            comparison_table(&made)
                .captioned("Comparisons the analysis made (each also stated in its section)")
                .page(),
        );
    }
    s
}

/// The measuring client's clock, one entry per session that recorded it;
/// `None` when none did.
pub(super) fn clock(a: &Analysis) -> Option<Section> {
    let mut s = Section::new(SectionId::Clock);
    for c in &a.clock.sessions {
        let said = words::session_clock(c, a.clock.threshold_ms);
        if said.is_empty() {
            continue;
        }
        let i = s.entries.len();
        s.entries.push(Entry {
            provenance: Provenance::Measured,
            facts: Vec::new(),
        });
        for (_, line) in said {
            s.push_marked(
                line,
                Mark {
                    entry: Some(i),
                    ..Mark::default()
                },
            );
        }
    }
    (!s.lines.is_empty()).then_some(s)
}

/// Claims and limits, one line per kind, each tagged with its kind.
pub(super) fn limits(a: &Analysis) -> Section {
    let mut s = Section::new(SectionId::Limits);
    let mut kinds: Vec<&'static str> = Vec::new();
    for l in &a.limits.items {
        let k = words::limit_kind(l);
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    // One line per kind, in the order first found (as limit_lines).
    for (kind, line) in kinds.into_iter().zip(words::limit_lines(&a.limits)) {
        s.push_marked(
            line,
            Mark {
                tag: Some(kind),
                ..Mark::default()
            },
        );
    }
    s
}

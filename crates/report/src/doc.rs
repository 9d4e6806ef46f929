//! A report laid out once as sections of lines and tables, then rendered
//! for the terminal ([`crate::terminal`]), as Markdown ([`crate::markdown`])
//! or as the JSON report's text ([`crate::json`]): all show the same
//! sentences ([`crate::words`]) and numbers ([`crate::format`]) in the same
//! order.

use firsttoken_analyze::group::GroupLabel;
use firsttoken_analyze::{MetricSummary, rank_findings};
use firsttoken_record::session::Provenance;

use crate::ReportInput;
use crate::format::{self, Unit, percent, ratio, stat};
use crate::words::{self, Entry};

/// A table: header and rows of cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableData {
    /// Column titles.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

/// A titled part of the report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    /// Heading.
    pub title: String,
    /// Sentences shown before the tables.
    pub lines: Vec<String>,
    /// Tables.
    pub tables: Vec<TableData>,
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    /// Sections in order.
    pub sections: Vec<Section>,
}

fn header(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|s| s.to_string()).collect()
}

fn summary_row(label: String, m: &MetricSummary) -> Vec<String> {
    let u = Unit::of(m.metric);
    vec![
        label,
        m.n.to_string(),
        percent(m.error_rate),
        stat(u, &m.p50),
        stat(u, &m.p90),
        stat(u, &m.p95),
        stat(u, &m.p99),
    ]
}

/// A diagnostic's sentence, labelled with its scope and, when a section
/// holds several provenance kinds, its provenance: kinds and code versions
/// are never read as one pooled figure.
fn labelled(prov: Provenance, label: &str, many: bool, sentence: String) -> String {
    let s = words::scoped(label, sentence);
    if many {
        format!("[{}] {s}", prov.as_str())
    } else {
        s
    }
}

/// Lines for one diagnostic: each entry's sentence, labelled.
fn lines<T: Entry>(items: &[T], say: impl Fn(&T) -> String) -> Vec<String> {
    let first = items.first().map(Entry::provenance);
    let many = items.iter().any(|i| Some(i.provenance()) != first);
    items
        .iter()
        .map(|i| labelled(i.provenance(), &i.label(), many, say(i)))
        .collect()
}

fn section(title: &str, lines: Vec<String>) -> Section {
    Section {
        title: title.into(),
        lines,
        tables: Vec::new(),
    }
}

/// A group's label, short: its values in key order (`before · chat ·
/// emulated`); the table's header names the keys.
pub fn group_label(l: &GroupLabel) -> String {
    l.parts
        .iter()
        .map(|(_, v)| v.to_string())
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The title of the findings section.
pub const FINDINGS_TITLE: &str = "Findings, ranked by the user wait they explain";

/// Lay out a report: the findings first, then the sections.
pub fn build(input: &ReportInput<'_>) -> Doc {
    let analysis = input.analysis;
    let mut doc = Doc::default();
    let findings = rank_findings(analysis, input.comparisons);
    let mut opening: Vec<String> = findings.iter().map(words::finding_line).collect();
    if opening.is_empty() {
        opening.push(words::NO_FINDINGS.to_string());
    }
    doc.sections.push(section(FINDINGS_TITLE, opening));
    doc.sections.push(section(
        "Sessions",
        input
            .sessions
            .iter()
            .map(|s| {
                format!(
                    "session {} · {} · code_version={} · network {} · vantage {}",
                    s.id,
                    s.provenance.as_str(),
                    s.labels.code_version,
                    s.labels.network,
                    s.labels.vantage
                )
            })
            .collect(),
    ));

    let mut groups = section(
        "TTFT by group (pooled over sessions, 95% bootstrap CI)",
        Vec::new(),
    );
    let keys: Vec<&str> = analysis.keys.iter().map(|k| k.as_str()).collect();
    let group_head = format!("group: {}", keys.join(" · "));
    let mut t = TableData {
        header: header(&[&group_head, "n", "errors", "p50", "p90", "p95", "p99"]),
        rows: Vec::new(),
    };
    let mut per_session = TableData {
        header: header(&[
            &group_head,
            "sessions",
            "median of session medians",
            "range",
        ]),
        rows: Vec::new(),
    };
    for g in &analysis.groups {
        let u = Unit::of(g.pooled.metric);
        t.rows.push(summary_row(group_label(&g.label), &g.pooled));
        let range = match (g.min_session_median, g.max_session_median) {
            (Some(a), Some(b)) => format!("{} – {}", format::value(u, a), format::value(u, b)),
            _ => format::DASH.into(),
        };
        per_session.rows.push(vec![
            group_label(&g.label),
            g.sessions.len().to_string(),
            format::opt(u, g.median_of_session_medians),
            range,
        ]);
    }
    if t.rows.is_empty() {
        groups
            .lines
            .push("No successful requests with a first token.".into());
    } else {
        groups.tables.push(t);
        groups.tables.push(per_session);
    }
    doc.sections.push(groups);

    if !input.comparisons.is_empty() {
        let mut s = section(
            "Comparison",
            input.comparisons.iter().map(words::comparison).collect(),
        );
        let mut t = TableData {
            header: header(&[
                "A → B",
                "median A",
                "median B",
                "Δ median [CI]",
                "Δ p95 [CI]",
                "U test",
                "Cliff's δ",
                "verdict",
            ]),
            rows: Vec::new(),
        };
        for c in input.comparisons {
            let u = Unit::of(c.metric);
            t.rows.push(vec![
                format!("{} → {}", c.a, c.b),
                stat(u, &c.median_a),
                stat(u, &c.median_b),
                format::signed_stat(u, &c.median_difference),
                format::signed_stat(u, &c.p95_difference),
                c.mann_whitney
                    .map_or_else(|| format::DASH.into(), |m| format::p_value(m.p_value)),
                c.cliffs_delta
                    .map_or_else(|| format::DASH.into(), |d| format::coefficient(d.delta)),
                words::verdict(c).to_string(),
            ]);
        }
        s.tables.push(t);
        doc.sections.push(s);
    }

    doc.sections.push(section(
        "App overhead (app TTFT − direct TTFT)",
        lines(&analysis.overhead, |o| {
            words::overhead_with(o, crate::doc_traces::split_for(analysis, o))
        }),
    ));
    doc.sections.push(section(
        "Connection cost (fresh − warm TTFT)",
        lines(&analysis.connection, words::connection),
    ));

    let mut wall = section(
        "Concurrency wall",
        lines(&analysis.concurrency, words::concurrency),
    );
    // One table per wall, each led by the wall's label when there are
    // several (paths, code versions), so no row reads as another's.
    let several = analysis.concurrency.len() > 1;
    for w in &analysis.concurrency {
        let label = match w.label() {
            l if l.is_empty() => w.provenance.as_str().to_string(),
            l => l,
        };
        let lead = |head: &str, mut row: Vec<String>| {
            if several {
                row.insert(0, head.to_string());
            }
            row
        };
        let mut t = TableData {
            header: lead(
                "setup",
                header(&[
                    "k",
                    "n",
                    "TTFT p50",
                    "÷ baseline [CI]",
                    "serial (k+1)/2",
                    "ideal",
                ]),
            ),
            rows: Vec::new(),
        };
        for l in &w.levels {
            t.rows.push(lead(
                &label,
                vec![
                    l.concurrency.to_string(),
                    l.ttft.n.to_string(),
                    stat(Unit::Ms, &l.ttft.p50),
                    stat(Unit::Ratio, &l.ratio.estimate),
                    ratio(l.serial_model),
                    ratio(l.ideal),
                ],
            ));
        }
        if !t.rows.is_empty() {
            wall.tables.push(t);
        }
    }
    doc.sections.push(wall);
    doc.sections.extend(crate::doc_traces::section(analysis));

    doc.sections
        .push(section("Cold start", lines(&analysis.cold, words::cold)));

    let mut prov = section(
        "Providers (direct requests)",
        lines(&analysis.providers, words::providers),
    );
    for p in &analysis.providers {
        let mut t = TableData {
            header: header(&[
                "strategy / provider",
                "n",
                "TTFT p50",
                "tokens/s p50",
                "completion p50",
            ]),
            rows: Vec::new(),
        };
        for s in p.strategies.iter().chain(&p.providers) {
            t.rows.push(vec![
                s.name.clone(),
                s.ttft.n.to_string(),
                stat(Unit::Ms, &s.ttft.p50),
                stat(Unit::TokS, &s.tokens_per_s),
                stat(Unit::Ms, &s.e2e),
            ]);
        }
        if !t.rows.is_empty() {
            prov.tables.push(t);
        }
    }
    doc.sections.push(prov);

    let mut routes = section("Paths and routes", lines(&analysis.routes, words::routes));
    for r in &analysis.routes {
        routes.lines.extend(
            r.paths
                .iter()
                .map(|p| words::scoped(&r.scope, words::funnel(&p.path, &p.funnel))),
        );
        routes.lines.extend(r.paths.iter().filter_map(|p| {
            words::buffering(&p.path, &p.buffering).map(|s| words::scoped(&r.scope, s))
        }));
    }
    doc.sections.push(routes);

    doc.sections
        .push(section("Drift", lines(&analysis.drift, words::drift)));

    // Only sessions that recorded their clock (or an open-loop start lag)
    // have this section.
    let clock = words::client_clock(&analysis.clock);
    if !clock.is_empty() {
        doc.sections
            .push(section("The measuring client's clock", clock));
    }

    let mut limits = section(
        "Claims and limits: what this data cannot support",
        words::limit_lines(&analysis.limits),
    );
    if limits.lines.is_empty() {
        limits.lines.push(words::limits(&analysis.limits));
    }
    doc.sections.push(limits);
    for s in &mut doc.sections {
        if s.lines.is_empty() && s.tables.is_empty() {
            s.lines.push("No data for this part.".into());
        }
    }
    doc
}

//! An analysis laid out once as sections of lines and tables, then
//! rendered for the terminal ([`crate::terminal`]) or as Markdown
//! ([`crate::markdown`]): both show the same numbers in the same order.

use firsttoken_analyze::{Analysis, Comparison, MetricSummary, Stat};

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

/// A millisecond (or other) value with one decimal, none above 100.
pub fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// An estimate as `point [lower, upper]`, or why it is missing.
pub fn stat(s: &Stat) -> String {
    match s {
        Stat::Ok(e) => format!(
            "{} [{}, {}]",
            num(e.point),
            num(e.ci.lower),
            num(e.ci.upper)
        ),
        Stat::TooSmall { n, needed } => format!("n too small ({n}<{needed})"),
    }
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0))
        .unwrap_or_else(|| "-".into())
}

fn summary_row(label: String, m: &MetricSummary) -> Vec<String> {
    vec![
        label,
        m.n.to_string(),
        pct(m.error_rate),
        stat(&m.p50),
        stat(&m.p90),
        stat(&m.p95),
        stat(&m.p99),
    ]
}

fn percentile_header(first: &str) -> Vec<String> {
    [first, "n", "errors", "p50", "p90", "p95", "p99"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Lay out `analysis` (and comparisons, if any) as a document.
pub fn build(analysis: &Analysis, comparisons: &[Comparison]) -> Doc {
    let mut doc = Doc::default();
    let mut groups = Section {
        title: "TTFT by group (ms, pooled over sessions, 95% bootstrap CI)".into(),
        ..Section::default()
    };
    let mut t = TableData {
        header: percentile_header("group"),
        rows: Vec::new(),
    };
    let mut per_session = TableData {
        header: vec![
            "group".into(),
            "sessions".into(),
            "median of session medians".into(),
            "range".into(),
        ],
        rows: Vec::new(),
    };
    for g in &analysis.groups {
        t.rows.push(summary_row(g.label.to_string(), &g.pooled));
        let range = match (g.min_session_median, g.max_session_median) {
            (Some(a), Some(b)) => format!("{} – {}", num(a), num(b)),
            _ => "-".into(),
        };
        per_session.rows.push(vec![
            g.label.to_string(),
            g.sessions.len().to_string(),
            g.median_of_session_medians
                .map(num)
                .unwrap_or_else(|| "-".into()),
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

    if !comparisons.is_empty() {
        let mut s = Section {
            title: "Comparison".into(),
            ..Section::default()
        };
        let mut t = TableData {
            header: [
                "A → B",
                "median A",
                "median B",
                "Δ median [CI]",
                "Δ p95 [CI]",
                "p (U test)",
                "Cliff's δ",
                "verdict",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: Vec::new(),
        };
        for c in comparisons {
            s.lines.push(c.summary.clone());
            t.rows.push(vec![
                format!("{} → {}", c.a, c.b),
                stat(&c.median_a),
                stat(&c.median_b),
                stat(&c.median_difference),
                stat(&c.p95_difference),
                c.mann_whitney
                    .as_ref()
                    .map(|m| format!("{:.4}", m.p_value))
                    .unwrap_or_else(|| "-".into()),
                c.cliffs_delta
                    .as_ref()
                    .map(|d| format!("{:+.2}", d.delta))
                    .unwrap_or_else(|| "-".into()),
                match c.verdict {
                    firsttoken_analyze::Verdict::Faster => "faster",
                    firsttoken_analyze::Verdict::Slower => "slower",
                    firsttoken_analyze::Verdict::NoChange => "no change",
                }
                .to_string(),
            ]);
        }
        s.tables.push(t);
        doc.sections.push(s);
    }

    let mut overhead = Section {
        title: "App overhead (app TTFT − direct TTFT)".into(),
        ..Section::default()
    };
    overhead
        .lines
        .extend(analysis.overhead.iter().map(|o| o.summary.clone()));
    doc.sections.push(overhead);

    let mut conn = Section {
        title: "Connection cost (fresh − warm TTFT)".into(),
        ..Section::default()
    };
    conn.lines
        .extend(analysis.connection.iter().map(|c| c.summary.clone()));
    doc.sections.push(conn);

    let mut wall = Section {
        title: "Concurrency wall".into(),
        ..Section::default()
    };
    for w in &analysis.concurrency {
        wall.lines.push(w.summary.clone());
        let mut t = TableData {
            header: [
                "k",
                "n",
                "TTFT p50 ms",
                "÷ c=1 [CI]",
                "serial (k+1)/2",
                "ideal",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: Vec::new(),
        };
        for l in &w.levels {
            t.rows.push(vec![
                l.concurrency.to_string(),
                l.ttft.n.to_string(),
                stat(&l.ttft.p50),
                match &l.ratio {
                    Stat::Ok(e) => {
                        format!("{:.2}× [{:.2}, {:.2}]", e.point, e.ci.lower, e.ci.upper)
                    }
                    other => stat(other),
                },
                format!("{:.1}×", l.serial_model),
                format!("{:.1}×", l.ideal),
            ]);
        }
        if !t.rows.is_empty() {
            wall.tables.push(t);
        }
    }
    doc.sections.push(wall);

    let mut cold = Section {
        title: "Cold start".into(),
        ..Section::default()
    };
    cold.lines
        .extend(analysis.cold.iter().map(|c| c.summary.clone()));
    doc.sections.push(cold);

    let mut prov = Section {
        title: "Providers (direct requests)".into(),
        ..Section::default()
    };
    for p in &analysis.providers {
        prov.lines.push(p.summary.clone());
        let mut t = TableData {
            header: [
                "strategy / provider",
                "n",
                "TTFT p50 ms",
                "tokens/s p50",
                "completion p50 ms",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: Vec::new(),
        };
        for s in p.strategies.iter().chain(&p.providers) {
            t.rows.push(vec![
                s.name.clone(),
                s.ttft.n.to_string(),
                stat(&s.ttft.p50),
                stat(&s.tokens_per_s),
                stat(&s.e2e),
            ]);
        }
        if !t.rows.is_empty() {
            prov.tables.push(t);
        }
    }
    doc.sections.push(prov);

    let mut routes = Section {
        title: "Paths and routes".into(),
        ..Section::default()
    };
    for r in &analysis.routes {
        routes.lines.push(r.summary.clone());
        routes
            .lines
            .extend(r.paths.iter().map(|p| p.funnel.summary.clone()));
    }
    doc.sections.push(routes);

    let mut drift = Section {
        title: "Drift".into(),
        ..Section::default()
    };
    drift
        .lines
        .extend(analysis.drift.iter().map(|d| d.summary.clone()));
    doc.sections.push(drift);

    let mut limits = Section {
        title: "Claims and limits: what this data cannot support".into(),
        ..Section::default()
    };
    limits
        .lines
        .extend(analysis.limits.items.iter().map(|l| match &l.subject {
            Some(s) => format!("{} ({s})", l.message),
            None => l.message.clone(),
        }));
    if limits.lines.is_empty() {
        limits.lines.push("No limits found.".into());
    }
    doc.sections.push(limits);
    for s in &mut doc.sections {
        if s.lines.is_empty() && s.tables.is_empty() {
            s.lines.push("No data for this part.".into());
        }
    }
    doc
}

//! The report's "Where the time went" section: the app's server spans
//! joined to the samples ([`firsttoken_analyze::traces`]), laid out once
//! for every format (the page adds, per path, a typical and a slow
//! request's waterfall).

use firsttoken_analyze::Analysis;
use firsttoken_analyze::diagnose::{Overhead, PathScope};
use firsttoken_analyze::traces::SpanSplit;

use crate::doc::{PlotSlot, Section, SectionId, TableData, header};
use crate::format::{DASH, Unit, percent, signed_stat, stat};
use crate::words::traces as words;

/// The section title.
pub const TITLE: &str = crate::words::sections::SPANS_TITLE;

/// The split of the overhead's path, when spans cover it.
pub fn split_for<'a>(analysis: &'a Analysis, o: &Overhead) -> Option<&'a SpanSplit> {
    let PathScope::One { path } = &o.paths else {
        return None;
    };
    analysis.traces.as_ref()?.splits.iter().find(|s| {
        s.scope.provenance == o.provenance && s.scope.scope == o.scope && &s.scope.path == path
    })
}

/// The section; `None` when the analysis has no traces.
pub fn section(analysis: &Analysis) -> Option<Section> {
    let t = analysis.traces.as_ref()?;
    let mut s = Section::new(SectionId::Spans);
    s.plots = vec![PlotSlot::SpanWaterfalls];
    let mut lines = Vec::new();
    if t.is_empty() {
        lines.push(format!(
            "No request has server spans ({} spans received, {} of them for no request of these sessions): point the app's OpenTelemetry exporter at firsttoken to see where the time went.",
            t.spans, t.unmatched_spans
        ));
    }
    lines.extend(
        t.sessions
            .iter()
            .filter(|o| o.traced > 0)
            .map(words::offset),
    );
    lines.extend(t.coverage.iter().map(words::coverage));
    if t.unmatched_spans > 0 {
        lines.push(format!(
            "{} of {} spans belong to no request of these sessions (other traffic, or warm-ups' traces).",
            t.unmatched_spans, t.spans
        ));
    }
    lines.extend(t.splits.iter().map(words::split));
    lines.extend(t.walls.iter().map(words::wall));
    lines.extend(t.contrasts.iter().map(|c| words::contrast(c, &t.splits)));
    for l in lines {
        s.push(l);
    }

    for sp in &t.splits {
        let label = words::scope_label(&sp.scope.scope, sp.scope.path.as_deref());
        let mut tab = TableData::new(
            header(&[
                &format!("{label}: part"),
                "requests",
                "median [CI]",
                "calls",
                "of server time",
                "of overhead",
            ]),
            &[],
        );
        if let Some(q) = &sp.queue_wait {
            tab.rows.push(vec![
                "queue wait".into(),
                sp.queue_wait_n.to_string(),
                stat(Unit::Ms, q),
                DASH.into(),
                DASH.into(),
                DASH.into(),
            ]);
        }
        for p in &sp.parts {
            tab.rows.push(vec![
                p.group.clone(),
                p.requests.to_string(),
                stat(Unit::Ms, &p.median),
                if p.stream {
                    DASH.into()
                } else {
                    format!("{}", p.median_calls)
                },
                percent(p.share_of_server),
                match p.share_of_overhead {
                    Some(o) if o > 1.0 => "> 100 %".to_string(),
                    o => percent(o),
                },
            ]);
        }
        tab.rows.push(vec![
            "rest".into(),
            sp.traced.to_string(),
            stat(Unit::Ms, &sp.rest),
            DASH.into(),
            DASH.into(),
            DASH.into(),
        ]);
        // Where the rest lies: its gaps by what they border (a tenth of it
        // or more).
        for g in sp.uncovered.places.iter().filter(|g| g.share >= 0.1) {
            tab.rows.push(vec![
                format!("rest: {}", words::border(&g.border)),
                g.gaps.to_string(),
                stat(Unit::Ms, &g.median_total),
                format!("{} gaps", g.per_request),
                DASH.into(),
                DASH.into(),
            ]);
        }
        s.tables.push(tab);
    }
    for w in &t.walls {
        let label = words::scope_label(&w.scope.scope, w.scope.path.as_deref());
        let first_n = w.levels.first().map(|l| l.wait_change.n_b);
        let tab = wall_table(
            &label,
            ["wait", "handler"],
            (w.baseline, first_n, &w.baseline_wait, &w.baseline_handler),
            w.levels.iter().map(|l| WallRow {
                concurrency: l.concurrency.to_string(),
                n: l.traced,
                wait: &l.wait,
                change: &l.wait_change.estimate,
                part: &l.handler,
                ratio: &l.handler_ratio.estimate,
            }),
        );
        s.tables.push(tab);
    }
    Some(s)
}

/// One level's row of a concurrency wall's table: the wait and its change
/// over the baseline, and the part that explains it (or not) with its
/// ratio to the baseline's.
pub(crate) struct WallRow<'a> {
    pub concurrency: String,
    pub n: usize,
    pub wait: &'a firsttoken_analyze::estimate::Stat,
    pub change: &'a firsttoken_analyze::estimate::Stat,
    pub part: &'a firsttoken_analyze::estimate::Stat,
    pub ratio: &'a firsttoken_analyze::estimate::Stat,
}

/// A concurrency wall's table, laid out once for the span join and the
/// engine's clock: a row for the baseline level (`k`, n of the first
/// level's comparison, the wait and the part), then one a level. `names`
/// are the wait's and the part's column names (`wait`/`handler`,
/// `rest`/`prefill`).
pub(crate) fn wall_table<'a>(
    label: &str,
    names: [&str; 2],
    baseline: (
        &str,
        Option<usize>,
        &firsttoken_analyze::estimate::Stat,
        &firsttoken_analyze::estimate::Stat,
    ),
    levels: impl Iterator<Item = WallRow<'a>>,
) -> TableData {
    let [wait, part] = names;
    let mut tab = TableData::new(
        header(&[
            &format!("{label}: k"),
            "n",
            &format!("{wait} p50"),
            &format!("Δ {wait} [CI]"),
            &format!("{part} p50"),
            "÷ baseline [CI]",
        ]),
        &[],
    );
    let (k, n, base_wait, base_part) = baseline;
    tab.rows.push(vec![
        k.to_string(),
        n.map_or_else(|| DASH.into(), |n| n.to_string()),
        stat(Unit::Ms, base_wait),
        DASH.into(),
        stat(Unit::Ms, base_part),
        DASH.into(),
    ]);
    for l in levels {
        tab.rows.push(vec![
            l.concurrency,
            l.n.to_string(),
            stat(Unit::Ms, l.wait),
            signed_stat(Unit::Ms, l.change),
            stat(Unit::Ms, l.part),
            stat(Unit::Ratio, l.ratio),
        ]);
    }
    tab
}

//! The report's "The engine's own clock" section: each group's TTFT split
//! into the engine's prefill and the rest, the concurrency wall attributed
//! by that split, and warm requests that had to open a new connection
//! ([`firsttoken_analyze::engine`]), and "The engine's own metrics": its
//! Prometheus metrics differenced over each session
//! ([`firsttoken_analyze::engine_metrics`]); each laid out once for every
//! format.

use firsttoken_analyze::Analysis;

use crate::doc::{Section, SectionId, TableData, header};
use crate::format::{DASH, Unit, ms, stat};
use crate::words::engine as words;

/// The section; `None` when no stream carried the engine's timing and
/// every warm request reused its connection.
pub fn section(analysis: &Analysis) -> Option<Section> {
    let e = &analysis.engine;
    if e.is_empty() {
        return None;
    }
    let mut s = Section::new(SectionId::Engine);
    for r in &e.reconnections {
        s.push(words::reconnections(r));
    }
    for sp in &e.splits {
        s.push(words::split(sp));
    }
    for w in &e.walls {
        s.push(words::wall(w));
    }
    if !e.splits.is_empty() {
        let mut tab = TableData::new(
            header(&[
                "group",
                "n",
                "TTFT p50 [CI]",
                "prefill p50 [CI]",
                "rest p50 [CI]",
                "rest p10–p90",
            ]),
            &[],
        );
        for sp in &e.splits {
            tab.rows.push(vec![
                words::group(sp),
                sp.timed_by_engine.to_string(),
                stat(Unit::Ms, &sp.ttft),
                stat(Unit::Ms, &sp.prefill),
                stat(Unit::Ms, &sp.rest),
                sp.rest_p10_p90
                    .map_or_else(|| DASH.to_string(), |(a, b)| format!("{}–{}", ms(a), ms(b))),
            ]);
        }
        s.tables.push(tab);
    }
    for w in &e.walls {
        let label = crate::words::traces::scope_label(&w.scope.scope, w.scope.path.as_deref());
        let first_n = w.levels.first().map(|l| l.rest_change.n_b);
        let tab = crate::doc_traces::wall_table(
            &label,
            ["rest", "prefill"],
            (w.baseline, first_n, &w.baseline_rest, &w.baseline_prefill),
            w.levels.iter().map(|l| crate::doc_traces::WallRow {
                concurrency: l.concurrency.to_string(),
                n: l.n,
                wait: &l.rest,
                change: &l.rest_change.estimate,
                part: &l.prefill,
                ratio: &l.prefill_ratio.estimate,
            }),
        );
        s.tables.push(tab);
    }
    Some(s)
}

/// The "engine's own metrics" section: per session that read them, what
/// the engine's histograms observed and its counters gained between the
/// scrapes ([`firsttoken_analyze::engine_metrics`]); `None` when no
/// session has an `[engine] metrics_url`.
pub fn metrics_section(analysis: &Analysis) -> Option<Section> {
    use crate::words::engine_metrics as w;
    let m = &analysis.engine_metrics;
    if m.is_empty() {
        return None;
    }
    let mut s = Section::new(SectionId::EngineMetrics);
    // Several sessions: each row names its session first.
    let several = m.sessions.len() > 1;
    let columns = |cols: &[&'static str]| {
        let mut all = if several { vec!["session"] } else { Vec::new() };
        all.extend_from_slice(cols);
        header(&all)
    };
    let words_at = |cols: &[usize]| -> Vec<usize> {
        let shift = usize::from(several);
        let mut out: Vec<usize> = cols.iter().map(|c| c + shift).collect();
        out.extend((shift == 1).then_some(1));
        out
    };
    let mut hist = TableData::new(
        columns(&[
            "series",
            "n",
            "p50 in",
            "p90 in",
            "p99 in",
            "firsttoken n",
            "firsttoken p50 in",
            "firsttoken p90 in",
            "firsttoken p99 in",
        ]),
        &words_at(&[2, 3, 4, 6, 7, 8]),
    )
    .captioned("histograms: the bucket each quantile falls in");
    let mut counters = TableData::new(columns(&["series", "gain", "per second"]), &words_at(&[]))
        .captioned("counters that grew");
    for sm in &m.sessions {
        s.push(w::head(sm));
        for h in &sm.histograms {
            s.push(w::histogram(h));
        }
        if let Some(r) = w::reset(sm) {
            s.push(r);
        }
        for h in &sm.histograms {
            let at = |qs: &[firsttoken_analyze::engine_metrics::BucketQuantile], i: usize| {
                qs.get(i)
                    .map_or_else(|| DASH.to_string(), |b| w::bucket(b, h.seconds))
            };
            let ours = h.ours.as_ref();
            let mut row: Vec<String> = several.then(|| sm.session.clone()).into_iter().collect();
            row.extend([w::series(&h.name, &h.labels), h.count.to_string()]);
            row.extend((0..3).map(|i| at(&h.quantiles, i)));
            row.push(ours.map_or_else(|| DASH.to_string(), |o| o.n.to_string()));
            row.extend(
                (0..3).map(|i| ours.map_or_else(|| DASH.to_string(), |o| at(&o.quantiles, i))),
            );
            hist.rows.push(row);
        }
        for c in &sm.counters {
            let mut row: Vec<String> = several.then(|| sm.session.clone()).into_iter().collect();
            row.extend([
                w::series(&c.name, &c.labels),
                crate::format::count(c.delta),
                sm.seconds
                    .filter(|s| *s > 0.0)
                    .map_or_else(|| DASH.to_string(), |t| format!("{:.1}/s", c.delta / t)),
            ]);
            counters.rows.push(row);
        }
    }
    if !hist.rows.is_empty() {
        s.tables.push(hist);
    }
    if !counters.rows.is_empty() {
        s.tables.push(counters);
    }
    Some(s)
}

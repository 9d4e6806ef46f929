//! The report's "The engine's own clock" section: each group's TTFT split
//! into the engine's prefill and the rest, the concurrency wall attributed
//! by that split, and warm requests that had to open a new connection
//! ([`firsttoken_analyze::engine`]), laid out once for every format.

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

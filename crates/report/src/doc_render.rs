//! The report's "Render lag (browser)" section: messages measured in a
//! real browser and stored (`firsttoken browse --store`), per code
//! version, phase and path, the first token's paint against its arrival
//! at the browser's network stack ([`firsttoken_analyze::render`]), laid
//! out once for every format.

use firsttoken_analyze::Analysis;
use firsttoken_analyze::render::Buffering;

use crate::doc::{Section, SectionId, TableData, header};
use crate::format::{Unit, count, stat};
use crate::words::render as words;

/// The section; `None` when no stored message was measured in a browser.
pub fn section(analysis: &Analysis) -> Option<Section> {
    if analysis.render.is_empty() {
        return None;
    }
    let mut s = Section::new(SectionId::Render);
    let mut tab = TableData::new(
        header(&[
            "group",
            "messages",
            "painted",
            "render lag p50 [CI]",
            "first paint",
        ]),
        &[4],
    );
    for g in &analysis.render {
        let phase = match g.concurrency {
            Some(c) => format!("{} {c}", g.phase.as_str()),
            None => g.phase.as_str().to_string(),
        };
        let label = format!("{} · {phase} · {}", g.code_version, g.path);
        s.push(format!("{label}: {}", words::render_lag(&g.lag)));
        if let Some(b) = words::buffering(&g.lag.buffering) {
            s.push(format!("{label}: {b}"));
        }
        tab.rows.push(vec![
            label,
            g.messages.to_string(),
            g.lag.n.to_string(),
            stat(Unit::Ms, &g.lag.median_ms),
            match g.lag.buffering {
                Buffering::No => "with the first token".to_string(),
                Buffering::AfterChunks { median_chunks } => {
                    format!("after {} tokens", count(median_chunks))
                }
                Buffering::AtEnd => "at the end".to_string(),
                Buffering::Unknown => "–".to_string(),
            },
        ]);
    }
    s.tables.push(tab);
    Some(s)
}

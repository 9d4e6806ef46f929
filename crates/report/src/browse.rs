//! `firsttoken browse`'s output: one line per browser-measured message
//! (the network stamps, the paints, the render lag) and a summary (medians,
//! the render lag with its interval, the buffering finding). Numbers from
//! [`crate::format`], sentences from [`crate::words::render`].

use firsttoken_analyze::Settings;
use firsttoken_analyze::render::{Painted as PaintedView, render_lag};
use firsttoken_record::Sample;

use crate::format::{DASH, Unit, count, ms, opt};
use crate::words;

/// One message: `#3 lead 0.4 ms sent 1.2 ms head 802 ms ttft 803 ms painted 825 ms (lag 22 ms, 1 token) last 1.20 s`,
/// or the error.
pub fn line(s: &Sample) -> String {
    let p = s.painted.unwrap_or(firsttoken_record::Painted {
        input_lead_ms: None,
        first_dom_ms: None,
        painted_ttft_ms: None,
        painted_last_ms: None,
        chunks_before_first_paint: None,
    });
    let mut out = format!("#{:<4}", s.seq);
    for (name, v) in [
        ("lead", p.input_lead_ms),
        ("sent", s.sent_ms),
        ("head", s.headers_ms),
        ("ttft", s.ttft_ms),
        ("painted", p.painted_ttft_ms),
    ] {
        out.push_str(&format!(" {name} {}", opt(Unit::Ms, v)));
    }
    if let Some(lag) = p.render_lag_ms(s) {
        let chunks = p
            .chunks_before_first_paint
            .map_or_else(|| DASH.to_string(), |c| count(c as f64));
        out.push_str(&format!(
            " (lag {}, after {chunks} of {} chunks)",
            ms(lag),
            s.content_chunks
        ));
    }
    out.push_str(&format!(" last {}", opt(Unit::Ms, p.painted_last_ms)));
    if let Some(e) = &s.error {
        out.push_str(&format!("  {}: {}", e.kind.as_str(), e.message));
    }
    out.push('\n');
    out
}

/// The summary of `samples` (browser-measured), with bootstrap intervals
/// seeded by `settings`.
pub fn summary(samples: &[Sample], settings: &Settings) -> String {
    let failed = samples.iter().filter(|s| s.error.is_some()).count();
    let views: Vec<PaintedView> = samples
        .iter()
        .filter(|s| s.error.is_none())
        .map(|s| PaintedView {
            ttft_ms: s.ttft_ms,
            painted_ttft_ms: s.painted.and_then(|p| p.painted_ttft_ms),
            content_chunks: s.content_chunks,
            chunks_before_first_paint: s.painted.and_then(|p| p.chunks_before_first_paint),
        })
        .collect();
    // Medians as values (the interval is the render lag's alone).
    let median = |f: &dyn Fn(&PaintedView) -> Option<f64>| {
        let v: Vec<f64> = views.iter().filter_map(f).collect();
        opt(Unit::Ms, firsttoken_analyze::percentile(&v, 50.0))
    };
    let r = render_lag(&views, settings);
    let mut out = format!(
        "\n{} messages, {} painted, {} without an answer\nmedian network TTFT {}, median painted TTFT {}\n{}\n",
        samples.len(),
        samples.len() - failed,
        failed,
        median(&|v| v.ttft_ms),
        median(&|v| v.painted_ttft_ms),
        words::render::render_lag(&r),
    );
    if let Some(b) = words::render::buffering(&r.buffering) {
        out.push_str(&b);
        out.push('\n');
    }
    out
}

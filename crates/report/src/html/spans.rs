//! The page's plots of the "Where the time went" section
//! ([`crate::doc_traces`]): per path, a waterfall of a typical and of a slow request that
//! stacks the client's phases and the server's spans on one time axis
//! (the spans moved by the session's clock offset; its ± uncertainty is
//! drawn as a band around the server's receive and named in the caption).

use firsttoken_analyze::Analysis;
use firsttoken_analyze::traces::{Waterfall, WaterfallKind};
use serde::Serialize;

use super::svg::{
    Area, LegendItem, PALETTE, Scale, Svg, Swatch, legend, legend_layout, time_axis, truncate,
};
use crate::format::ms;
use crate::words::traces::scope_label;

const WIDTH: f64 = 760.0;
const ROW: f64 = 22.0;

/// One waterfall as the page shows it (the same fields as every plot).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SpanPlot {
    pub id: String,
    pub title: String,
    pub caption: String,
    pub svg: Option<String>,
    pub note: Option<String>,
}

/// Per path, a typical and a slow request's waterfall; none without traces.
pub(crate) fn plots(a: &Analysis) -> Vec<SpanPlot> {
    a.traces.as_ref().map_or_else(Vec::new, |t| {
        t.waterfalls
            .iter()
            .enumerate()
            .map(|(i, w)| waterfall(i, w))
            .collect()
    })
}

/// A group's colour: the five default groups fixed, others from the palette.
fn color(group: &str) -> &'static str {
    match group {
        "database" => "#009e73",
        "model provider" => "#0072b2",
        "outgoing HTTP" => "#cc79a7",
        "auth" => "#d55e00",
        "other" => "#7f7f7f",
        g => PALETTE[g.bytes().map(usize::from).sum::<usize>() % PALETTE.len()],
    }
}

const CLIENT: &str = "#e69f00";

/// One request's waterfall.
pub(crate) fn waterfall(i: usize, w: &Waterfall) -> SpanPlot {
    let label = scope_label(&w.scope.scope, w.scope.path.as_deref());
    let which = match w.which {
        WaterfallKind::Typical => "a typical request (e2e nearest the median)",
        WaterfallKind::Slow => "a slow request (e2e at the 95th-percentile rank)",
    };
    let title = format!("{label}: {which}");
    let c = &w.client;
    let client: Vec<(&str, Option<f64>)> = vec![
        ("DNS", c.dns_ms),
        ("TCP connect", c.connect_ms),
        ("TLS", c.tls_ms),
        ("request sent", c.sent_ms),
        ("first byte", c.ttfb_ms),
        ("first token", c.ttft_ms),
        ("end of stream", c.e2e_ms),
    ];
    let client: Vec<(&str, f64)> = client
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v)))
        .collect();
    let lo = w.spans.iter().map(|s| s.start_ms).fold(0.0f64, f64::min);
    let hi = w
        .spans
        .iter()
        .map(|s| s.end_ms)
        .chain(client.iter().map(|c| c.1))
        .fold(1.0f64, f64::max);
    let rows = client.len() + w.spans.len();
    let area = Area {
        left: 190.0,
        top: 34.0,
        width: WIDTH - 190.0 - 20.0,
        height: ROW * rows as f64,
    };
    let x = Scale::linear(lo, hi, area.left, area.right());
    let mut groups: Vec<&str> = Vec::new();
    for s in &w.spans {
        if !groups.contains(&s.group.as_str()) {
            groups.push(&s.group);
        }
    }
    let mut items = vec![LegendItem {
        label: "client phase".into(),
        color: CLIENT,
        swatch: Swatch::Box,
    }];
    items.extend(groups.iter().map(|g| LegendItem {
        label: format!("server: {g}"),
        color: color(g),
        swatch: Swatch::Box,
    }));
    let (pos, legend_h) = legend_layout(&items, area.width);
    let height = area.bottom() + 50.0 + legend_h + 6.0;
    let id = format!("span-waterfall-{i}");
    let mut svg = Svg::new(&id, WIDTH, height, &title);
    time_axis(
        &mut svg,
        area,
        &x,
        "ms since the request started (client clock; server spans offset-corrected)",
    );
    let mut prev = 0.0f64;
    for (r, (name, at)) in client.iter().enumerate() {
        let top = area.top + ROW * r as f64;
        svg.text(
            (area.left - 8.0, top + ROW / 2.0 + 4.0),
            "end",
            "tick",
            name,
        );
        let from = prev.min(*at);
        let (x0, x1) = (x.px(from), x.px(*at));
        let tip = format!("{name}: +{} → {}", ms(at - from), ms(*at));
        svg.rect(
            (x0, top + 4.0),
            ((x1 - x0).max(2.0), ROW - 8.0),
            "phase",
            Some(CLIENT),
            &tip,
        );
        prev = prev.max(*at);
    }
    if let Some(ft) = c.ttft_ms {
        svg.line_colored((x.px(ft), area.top), (x.px(ft), area.bottom()), CLIENT, 1.0);
    }
    for (r, s) in w.spans.iter().enumerate() {
        let top = area.top + ROW * (client.len() + r) as f64;
        // No-break spaces: SVG text collapses ordinary ones.
        let indent = "\u{a0}\u{a0}".repeat(s.depth.min(6));
        svg.text(
            (area.left - 8.0, top + ROW / 2.0 + 4.0),
            "end",
            "tick",
            &format!("{indent}{}", truncate(&s.name, 26)),
        );
        let (x0, x1) = (x.px(s.start_ms), x.px(s.end_ms));
        if s.depth == 0 && w.offset_uncertainty_ms > 0.0 {
            let u = w.offset_uncertainty_ms;
            let (b0, b1) = (x.px(s.start_ms - u), x.px(s.start_ms + u));
            let tip = format!("clock offset uncertainty ± {}", ms(u));
            svg.rect(
                (b0, top),
                ((b1 - b0).max(1.0), ROW),
                "band",
                Some("#dddddd"),
                &tip,
            );
        }
        let tip = format!(
            "{} ({}{}): {} → {} ({})",
            s.name,
            s.group,
            if s.error { ", error" } else { "" },
            ms(s.start_ms),
            ms(s.end_ms),
            ms(s.end_ms - s.start_ms)
        );
        svg.rect(
            (x0, top + 4.0),
            ((x1 - x0).max(2.0), ROW - 8.0),
            "phase",
            Some(color(&s.group)),
            &tip,
        );
    }
    legend(&mut svg, area.left, area.bottom() + 50.0, &items, &pos);
    let more = if w.spans_total > w.spans.len() {
        format!(
            " The first {} of its {} spans are drawn.",
            w.spans.len(),
            w.spans_total
        )
    } else {
        String::new()
    };
    let caption = format!(
        "Session {}, request #{} ({}{}), chosen from {} traced requests. Client phases (top) run from the stamp before each to its own; server spans below, indented by depth, moved onto the client's clock by the session's offset estimate (± {}, the grey band at the server's receive). The orange line marks the client's first token.{more}",
        w.session_id,
        w.seq,
        w.phase.as_str(),
        w.concurrency
            .map(|c| format!(", c={c}"))
            .unwrap_or_default(),
        w.chosen_from,
        ms(w.offset_uncertainty_ms),
    );
    SpanPlot {
        id,
        title,
        caption,
        svg: Some(svg.finish()),
        note: None,
    }
}

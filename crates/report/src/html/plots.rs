//! The report's five plots as inline SVG: TTFT CDF per group, per-session
//! box plots, the concurrency curve, a typical request's waterfall, and
//! providers' first token against throughput. Each is a [`Plot`]: an id,
//! a title, a caption saying how to read it, and the SVG, or a note when
//! there is nothing to draw.

use firsttoken_analyze::diagnose::{ConcurrencyWall, Providers};
use firsttoken_analyze::percentile_sorted;
use firsttoken_record::{Connection, SampleRow};
use serde::Serialize;

use super::svg::{
    Area, LegendItem, PALETTE, Scale, Svg, Swatch, axes, legend, legend_layout, series_style,
    text_width, time_axis, truncate,
};
use crate::format::{ms, ratio};
use crate::words::Entry as _;

/// Width of every plot, px (the SVG scales down with the page).
const WIDTH: f64 = 760.0;

/// One plot as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Plot {
    /// `data-plot` value and element id (`plot-…`).
    pub id: &'static str,
    /// Heading.
    pub title: String,
    /// How to read it.
    pub caption: String,
    /// The drawing, `None` when there is no data.
    pub svg: Option<String>,
    /// Why there is no drawing.
    pub note: Option<String>,
}

impl Plot {
    fn empty(id: &'static str, title: &str, caption: String, why: &str) -> Plot {
        Plot {
            id,
            title: title.to_string(),
            caption,
            svg: None,
            note: Some(format!("no data for this plot: {why}")),
        }
    }
}

/// A log axis when the values span more than a factor of 20.
fn scale_for(lo: f64, hi: f64, px0: f64, px1: f64) -> Scale {
    if lo > 0.0 && hi / lo >= 20.0 {
        Scale::log(lo, hi, px0, px1)
    } else {
        Scale::linear(lo.min(hi), hi, px0, px1)
    }
}

/// Ascending values of one CDF line.
pub(crate) struct CdfSeries {
    pub label: String,
    pub sorted: Vec<f64>,
}

/// Points of an empirical CDF: exact steps for up to 600 values, else 601
/// quantiles (enough for a 700 px line, bounded for a million requests).
fn cdf_points(v: &[f64]) -> Vec<(f64, f64)> {
    let n = v.len();
    if n <= 600 {
        let mut pts = Vec::with_capacity(2 * n);
        for (i, &x) in v.iter().enumerate() {
            pts.push((x, i as f64 / n as f64));
            pts.push((x, (i + 1) as f64 / n as f64));
        }
        pts
    } else {
        (0..=600)
            .filter_map(|j| {
                let p = j as f64 / 600.0;
                percentile_sorted(v, 100.0 * p).map(|x| (x, p))
            })
            .collect()
    }
}

/// (1) TTFT CDF, one line per group.
pub(crate) fn ttft_cdf(series: &[CdfSeries]) -> Plot {
    const ID: &str = "ttft-cdf";
    const TITLE: &str = "TTFT distribution per group (CDF)";
    let series: Vec<&CdfSeries> = series.iter().filter(|s| !s.sorted.is_empty()).collect();
    let lo = series
        .iter()
        .map(|s| s.sorted[0])
        .fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .filter_map(|s| s.sorted.last())
        .fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let mut caption = "Share of successful requests whose time to first token is at most x, one line per group (warm-ups and failures left out). Read the median where a line crosses 0.5 and the p90 at 0.9; a line further right is slower.".to_string();
    if series.is_empty() {
        return Plot::empty(
            ID,
            TITLE,
            caption,
            "no group has successful requests with a TTFT",
        );
    }
    let area = Area {
        left: 64.0,
        top: 34.0,
        width: WIDTH - 64.0 - 20.0,
        height: 300.0,
    };
    let x = scale_for(lo, hi, area.left, area.right());
    if x.log {
        caption.push_str(" The x axis is logarithmic.");
    }
    let y = Scale::fixed(0.0, 1.0, area.bottom(), area.top);
    let items: Vec<LegendItem> = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (color, dash) = series_style(i);
            LegendItem {
                label: format!("{} (n = {})", truncate(&s.label, 60), s.sorted.len()),
                color,
                swatch: Swatch::Line(dash),
            }
        })
        .collect();
    let (pos, legend_h) = legend_layout(&items, area.width);
    let height = area.bottom() + 50.0 + legend_h + 6.0;
    let mut svg = Svg::new(ID, WIDTH, height, TITLE);
    axes(
        &mut svg,
        area,
        &x,
        &y,
        if x.log {
            "TTFT (ms, log scale)"
        } else {
            "TTFT (ms)"
        },
        "fraction of requests ≤ x",
    );
    for q in [0.5, 0.9] {
        svg.line((area.left, y.px(q)), (area.right(), y.px(q)), "ref");
        svg.text(
            (area.right() - 4.0, y.px(q) - 4.0),
            "end",
            "note",
            if q == 0.5 { "p50" } else { "p90" },
        );
    }
    for (i, s) in series.iter().enumerate() {
        let (color, dash) = series_style(i);
        let pts: Vec<(f64, f64)> = cdf_points(&s.sorted)
            .into_iter()
            .map(|(vx, vy)| (x.px(vx), y.px(vy)))
            .collect();
        svg.polyline(&pts, color, dash, "series", &s.label);
    }
    legend(&mut svg, area.left, area.bottom() + 50.0, &items, &pos);
    Plot {
        id: ID,
        title: TITLE.to_string(),
        caption,
        svg: Some(svg.finish()),
        note: None,
    }
}

/// One session's box.
pub(crate) struct BoxSeries {
    pub label: String,
    pub provenance: &'static str,
    pub sorted: Vec<f64>,
}

/// (2) Per-session box plots of TTFT.
pub(crate) fn session_boxes(series: &[BoxSeries], what: &str) -> Plot {
    const ID: &str = "session-box";
    const TITLE: &str = "TTFT per session (box plots)";
    let caption = format!(
        "{what}, one row per session: the box spans the quartiles (p25–p75), the bar inside is the median, the whiskers reach p5 and p95, the dots mark the minimum and maximum. Sessions that disagree with each other show as boxes that do not overlap."
    );
    let series: Vec<&BoxSeries> = series.iter().filter(|s| !s.sorted.is_empty()).collect();
    if series.is_empty() {
        return Plot::empty(
            ID,
            TITLE,
            caption,
            "no session has successful requests with a TTFT",
        );
    }
    let labels: Vec<String> = series
        .iter()
        .map(|s| format!("{} (n = {})", truncate(&s.label, 30), s.sorted.len()))
        .collect();
    let label_w = labels.iter().map(|l| text_width(l)).fold(60.0, f64::max);
    const ROW: f64 = 30.0;
    let area = Area {
        left: 30.0 + label_w + 10.0,
        top: 34.0,
        width: WIDTH - (30.0 + label_w + 10.0) - 20.0,
        height: (ROW * series.len() as f64).max(64.0),
    };
    let lo = series
        .iter()
        .map(|s| s.sorted[0])
        .fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .filter_map(|s| s.sorted.last())
        .fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let x = scale_for(lo, hi, area.left, area.right());
    let mut provs: Vec<&'static str> = series.iter().map(|s| s.provenance).collect();
    provs.dedup();
    provs.sort_unstable();
    provs.dedup();
    let color_of =
        |p: &str| PALETTE[provs.iter().position(|q| *q == p).unwrap_or(0) % PALETTE.len()];
    let items: Vec<LegendItem> = if provs.len() > 1 {
        provs
            .iter()
            .map(|p| LegendItem {
                label: (*p).to_string(),
                color: color_of(p),
                swatch: Swatch::Box,
            })
            .collect()
    } else {
        Vec::new()
    };
    let (pos, legend_h) = legend_layout(&items, area.width);
    let height = area.bottom() + 66.0 + legend_h + 6.0;
    let mut svg = Svg::new(ID, WIDTH, height, TITLE);
    // The y axis is categorical: one row per session.
    let y = Scale::fixed(0.0, series.len() as f64, area.top, area.bottom());
    for (v, label) in x.ticks() {
        let px = x.px(v);
        svg.line((px, area.top), (px, area.bottom()), "grid");
        svg.text((px, area.bottom() + 16.0), "middle", "tick", &label);
    }
    svg.line(
        (area.left, area.bottom()),
        (area.right(), area.bottom()),
        "axis",
    );
    svg.line((area.left, area.top), (area.left, area.bottom()), "axis");
    svg.text(
        (area.left + area.width / 2.0, area.bottom() + 36.0),
        "middle",
        "label",
        if x.log {
            "TTFT (ms, log scale)"
        } else {
            "TTFT (ms)"
        },
    );
    svg.text_vertical((14.0, area.top + area.height / 2.0), "label", "session");
    svg.text(
        (area.left + area.width / 2.0, area.bottom() + 54.0),
        "middle",
        "note",
        "box p25–p75 · bar median · whiskers p5–p95 · dots min and max",
    );
    for (i, (s, label)) in series.iter().zip(&labels).enumerate() {
        let mid = y.px(i as f64 + 0.5);
        let q = |p: f64| percentile_sorted(&s.sorted, p).unwrap_or(f64::NAN);
        let (p5, q1, med, q3, p95) = (q(5.0), q(25.0), q(50.0), q(75.0), q(95.0));
        let (min, max) = (s.sorted[0], s.sorted[s.sorted.len() - 1]);
        let color = color_of(s.provenance);
        let tip = format!(
            "{}: n = {}, p5 {}, p25 {}, median {}, p75 {}, p95 {}, min {}, max {}",
            s.label,
            s.sorted.len(),
            ms(p5),
            ms(q1),
            ms(med),
            ms(q3),
            ms(p95),
            ms(min),
            ms(max)
        );
        svg.text((area.left - 8.0, mid + 4.0), "end", "tick", label);
        svg.line((x.px(p5), mid), (x.px(p95), mid), "whisker");
        for w in [p5, p95] {
            svg.line((x.px(w), mid - 6.0), (x.px(w), mid + 6.0), "whisker");
        }
        svg.rect(
            (x.px(q1), mid - 9.0),
            (x.px(q3) - x.px(q1), 18.0),
            "box",
            Some(color),
            &tip,
        );
        svg.line((x.px(med), mid - 9.0), (x.px(med), mid + 9.0), "median");
        for v in [min, max] {
            svg.marker(
                (x.px(v), mid),
                2.5,
                "#555555",
                false,
                &format!("{}: {}", s.label, ms(v)),
            );
        }
    }
    legend(&mut svg, area.left, area.bottom() + 66.0, &items, &pos);
    Plot {
        id: ID,
        title: TITLE.to_string(),
        caption,
        svg: Some(svg.finish()),
        note: None,
    }
}

/// The name of a diagnostic's setup in a legend: its scope
/// (`code_version=…`) when the report covers several, else its provenance.
fn scope_label<'a>(scope: &'a str, provenance: &'a str) -> &'a str {
    if scope.is_empty() { provenance } else { scope }
}

/// (3) The concurrency curve: median TTFT ratio against k, the serial
/// model (k+1)/2 and the ideal 1.0.
pub(crate) fn concurrency(walls: &[ConcurrencyWall]) -> Plot {
    const ID: &str = "concurrency";
    const TITLE: &str = "Concurrency: median TTFT ratio vs requests in flight";
    let mut caption = "Median TTFT at each concurrency level k divided by the baseline median (k = 1, or the warm phase), with its 95 % CI as error bars. The dashed line is a server that handles one request at a time ((k+1)/2); the dotted line at 1.0 is an ideal server with k parallel slots.".to_string();
    for w in walls {
        caption.push_str(&format!(
            " {}: baseline {}, effective parallelism {}, verdict {}.",
            scope_label(&w.label(), w.provenance.as_str()),
            w.baseline,
            crate::words::parallelism(w),
            serde_json::to_value(w.verdict)
                .ok()
                .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
                .unwrap_or_default()
        ));
    }
    // Per wall: (k, ratio, CI lower, CI upper) of each level with a ratio.
    type Levels = Vec<(f64, f64, f64, f64)>;
    // The pooled summary is no curve of its own when the paths have theirs.
    let per_path = walls.iter().any(|w| !w.paths.is_pooled());
    let series: Vec<(&ConcurrencyWall, Levels)> = walls
        .iter()
        .filter(|w| !(per_path && w.paths.is_pooled()))
        .map(|w| {
            let pts = w
                .levels
                .iter()
                .filter_map(|l| {
                    l.ratio
                        .estimate
                        .estimate()
                        .map(|e| (f64::from(l.concurrency), e.point, e.ci.lower, e.ci.upper))
                })
                .collect::<Vec<_>>();
            (w, pts)
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if series.is_empty() {
        let why = if walls.is_empty() {
            "no concurrency phase in these sessions"
        } else {
            "too few requests per level to estimate a ratio"
        };
        return Plot::empty(ID, TITLE, caption, why);
    }
    let kmax = walls
        .iter()
        .flat_map(|w| w.levels.iter().map(|l| f64::from(l.concurrency)))
        .fold(1.0, f64::max)
        .max(2.0);
    let ymax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|t| t.3))
        .fold((kmax + 1.0) / 2.0, f64::max)
        .max(1.2);
    let area = Area {
        left: 64.0,
        top: 34.0,
        width: WIDTH - 64.0 - 20.0,
        height: 300.0,
    };
    let x = Scale::linear(0.0, kmax, area.left, area.right());
    let y = Scale::linear(0.0, ymax, area.bottom(), area.top);
    let multi = series.len() > 1;
    let mut items: Vec<LegendItem> = series
        .iter()
        .enumerate()
        .map(|(i, (w, _))| LegendItem {
            label: if multi {
                format!(
                    "median TTFT ÷ baseline ({})",
                    scope_label(&w.label(), w.provenance.as_str())
                )
            } else {
                "median TTFT ÷ baseline, 95 % CI".to_string()
            },
            color: PALETTE[i % PALETTE.len()],
            swatch: Swatch::Marker(false),
        })
        .collect();
    items.push(LegendItem {
        label: "serial model (k+1)/2".into(),
        color: "#7f7f7f",
        swatch: Swatch::Line(Some("6 4")),
    });
    items.push(LegendItem {
        label: "ideal 1.0".into(),
        color: "#009e73",
        swatch: Swatch::Line(Some("2 3")),
    });
    let (pos, legend_h) = legend_layout(&items, area.width);
    let height = area.bottom() + 50.0 + legend_h + 6.0;
    let mut svg = Svg::new(ID, WIDTH, height, TITLE);
    axes(
        &mut svg,
        area,
        &x,
        &y,
        "requests in flight together (k)",
        "median TTFT ÷ baseline median (×)",
    );
    svg.polyline(
        &[
            (x.px(1.0), y.px(1.0)),
            (x.px(kmax), y.px((kmax + 1.0) / 2.0)),
        ],
        "#7f7f7f",
        Some("6 4"),
        "series",
        "serial model (k+1)/2",
    );
    svg.polyline(
        &[(x.px(1.0), y.px(1.0)), (x.px(kmax), y.px(1.0))],
        "#009e73",
        Some("2 3"),
        "series",
        "ideal 1.0",
    );
    for (i, (w, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let line: Vec<(f64, f64)> = pts.iter().map(|&(k, r, _, _)| (x.px(k), y.px(r))).collect();
        svg.polyline(&line, color, None, "series", w.provenance.as_str());
        for &(k, r, lo, hi) in pts {
            let px = x.px(k);
            svg.line_colored((px, y.px(lo)), (px, y.px(hi)), color, 1.5);
            svg.line_colored((px - 4.0, y.px(lo)), (px + 4.0, y.px(lo)), color, 1.5);
            svg.line_colored((px - 4.0, y.px(hi)), (px + 4.0, y.px(hi)), color, 1.5);
            svg.marker(
                (px, y.px(r)),
                4.5,
                color,
                false,
                &format!(
                    "k = {k}: {} [{}, {}] (serial model {})",
                    ratio(r),
                    ratio(lo),
                    ratio(hi),
                    ratio((k + 1.0) / 2.0)
                ),
            );
        }
    }
    legend(&mut svg, area.left, area.bottom() + 50.0, &items, &pos);
    Plot {
        id: ID,
        title: TITLE.to_string(),
        caption,
        svg: Some(svg.finish()),
        note: None,
    }
}

/// The request a waterfall shows, and why it was chosen.
#[derive(Clone, Copy)]
pub(crate) struct Typical<'a> {
    pub row: &'a SampleRow,
    /// Median TTFT of the requests it was chosen from.
    pub median: f64,
}

/// (4) The phases of one typical request.
pub(crate) fn waterfall(t: Option<Typical<'_>>) -> Plot {
    const ID: &str = "waterfall";
    const TITLE: &str = "A typical request, phase by phase";
    let Some(t) = t else {
        return Plot::empty(
            ID,
            TITLE,
            "Each bar is one phase of a single request, from the stamp before it to its own stamp (ms from the request's start).".into(),
            "no successful warm request with a TTFT (or the samples were not passed to the report)",
        );
    };
    let s = &t.row.sample;
    let caption = format!(
        "The successful warm request whose TTFT is closest to the warm median ({}): session {}, request #{} on a {} connection. Each bar is one phase, from the stamp before it to its own stamp, in ms from the request's start.",
        ms(t.median),
        t.row.session_id,
        s.seq,
        if s.connection == Connection::Fresh {
            "fresh"
        } else {
            "reused"
        }
    );
    let network = "#56b4e9";
    let request = "#e69f00";
    let stream = "#0072b2";
    let steps: [(&str, Option<f64>, &str); 8] = [
        ("DNS lookup", s.dns_ms, network),
        ("TCP connect", s.connect_ms, network),
        ("TLS handshake", s.tls_ms, network),
        ("request sent", s.sent_ms, request),
        ("first byte", s.ttfb_ms, request),
        ("first token", s.ttft_ms, stream),
        ("last token", s.last_token_ms, stream),
        ("end of stream", s.e2e_ms, stream),
    ];
    let end = steps
        .iter()
        .filter_map(|(_, v, _)| *v)
        .fold(0.0, f64::max)
        .max(1.0);
    const ROW: f64 = 26.0;
    let area = Area {
        left: 130.0,
        top: 34.0,
        width: WIDTH - 130.0 - 20.0,
        height: ROW * steps.len() as f64,
    };
    let x = Scale::linear(0.0, end, area.left, area.right());
    let items = [
        LegendItem {
            label: "connection setup".into(),
            color: network,
            swatch: Swatch::Box,
        },
        LegendItem {
            label: "request and wait for the first byte".into(),
            color: request,
            swatch: Swatch::Box,
        },
        LegendItem {
            label: "model: first token and streaming".into(),
            color: stream,
            swatch: Swatch::Box,
        },
    ];
    let (pos, legend_h) = legend_layout(&items, area.width);
    let height = area.bottom() + 50.0 + legend_h + 6.0;
    let mut svg = Svg::new(ID, WIDTH, height, TITLE);
    time_axis(&mut svg, area, &x, "time since the request started (ms)");
    let mut prev = 0.0f64;
    for (i, (name, stamp, color)) in steps.iter().enumerate() {
        let top = area.top + ROW * i as f64;
        let mid = top + ROW / 2.0;
        svg.text((area.left - 8.0, mid + 4.0), "end", "tick", name);
        match stamp {
            Some(at) => {
                let from = prev.min(*at);
                let (x0, x1) = (x.px(from), x.px(*at));
                let w = (x1 - x0).max(2.0);
                let tip = format!("{name}: {} (at {})", ms(at - from), ms(*at));
                svg.rect((x0, top + 5.0), (w, ROW - 10.0), "phase", Some(color), &tip);
                let label = format!("+{} → {}", ms(at - from), ms(*at));
                if x0 + w + 6.0 + text_width(&label) <= area.right() {
                    svg.text((x0 + w + 6.0, mid + 4.0), "start", "value", &label);
                } else {
                    svg.text((x0 - 6.0, mid + 4.0), "end", "value", &label);
                }
                prev = prev.max(*at);
            }
            None => {
                let why = if i < 3 && s.connection == Connection::Reused {
                    "— none: the connection was reused"
                } else {
                    "— not recorded on this request"
                };
                svg.text((x.px(prev) + 6.0, mid + 4.0), "start", "note", why);
            }
        }
    }
    if let Some(ttft) = s.ttft_ms {
        let px = x.px(ttft);
        svg.line((px, area.top), (px, area.bottom()), "marker-line");
        svg.text((px, area.top - 3.0), "middle", "note", "TTFT");
    }
    legend(&mut svg, area.left, area.bottom() + 50.0, &items, &pos);
    Plot {
        id: ID,
        title: TITLE.to_string(),
        caption,
        svg: Some(svg.finish()),
        note: None,
    }
}

/// (5) Providers and strategies: median TTFT against median tokens/s.
pub(crate) fn providers(all: &[Providers]) -> Plot {
    const ID: &str = "providers";
    const TITLE: &str = "Providers: first token vs throughput";
    let caption = "Direct requests (no app in between): each point is a served provider (circle) or a routing strategy (diamond) at its median TTFT and median output tokens/s after the first token, with 95 % CIs as error bars. Down-left is a fast first token, up is fast streaming; the best of both is top-left.".to_string();
    struct Pt {
        label: String,
        strategy: bool,
        x: (f64, f64, f64),
        y: (f64, f64, f64),
    }
    let multi = all.len() > 1;
    let mut pts: Vec<Pt> = Vec::new();
    for p in all {
        for (strategy, list) in [(false, &p.providers), (true, &p.strategies)] {
            for s in list {
                let (Some(tx), Some(ty)) = (s.ttft.p50.estimate(), s.tokens_per_s.estimate())
                else {
                    continue;
                };
                let label = if multi {
                    format!(
                        "{} ({})",
                        s.name,
                        scope_label(&p.scope, p.provenance.as_str())
                    )
                } else {
                    s.name.clone()
                };
                pts.push(Pt {
                    label,
                    strategy,
                    x: (tx.point, tx.ci.lower, tx.ci.upper),
                    y: (ty.point, ty.ci.lower, ty.ci.upper),
                });
            }
        }
    }
    if pts.is_empty() {
        let why = if all.is_empty() {
            "no direct-to-provider requests in these sessions"
        } else {
            "no provider or strategy has both a median TTFT and a median tokens/s"
        };
        return Plot::empty(ID, TITLE, caption, why);
    }
    let span = |f: &dyn Fn(&Pt) -> (f64, f64)| {
        let (lo, hi) = pts
            .iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (l, h)| {
                (a.min(l), b.max(h))
            });
        let pad = ((hi - lo) * 0.12).max(hi.abs() * 0.05).max(1e-6);
        ((lo - pad).max(0.0), hi + pad)
    };
    let (xlo, xhi) = span(&|p| (p.x.1, p.x.2));
    let (ylo, yhi) = span(&|p| (p.y.1, p.y.2));
    let area = Area {
        left: 64.0,
        top: 34.0,
        width: WIDTH - 64.0 - 20.0,
        height: 300.0,
    };
    let x = Scale::linear(xlo, xhi, area.left, area.right());
    let y = Scale::linear(ylo, yhi, area.bottom(), area.top);
    let (pcolor, scolor) = (PALETTE[0], PALETTE[1]);
    let mut items = Vec::new();
    if pts.iter().any(|p| !p.strategy) {
        items.push(LegendItem {
            label: "served provider".into(),
            color: pcolor,
            swatch: Swatch::Marker(false),
        });
    }
    if pts.iter().any(|p| p.strategy) {
        items.push(LegendItem {
            label: "routing strategy".into(),
            color: scolor,
            swatch: Swatch::Marker(true),
        });
    }
    let (pos, legend_h) = legend_layout(&items, area.width);
    let height = area.bottom() + 50.0 + legend_h + 6.0;
    let mut svg = Svg::new(ID, WIDTH, height, TITLE);
    axes(
        &mut svg,
        area,
        &x,
        &y,
        "median TTFT (ms)",
        "median output tokens/s",
    );
    let mut placed: Vec<(f64, f64, f64, f64)> = Vec::new();
    for p in &pts {
        let color = if p.strategy { scolor } else { pcolor };
        let (px, py) = (x.px(p.x.0), y.px(p.y.0));
        svg.line_colored((x.px(p.x.1), py), (x.px(p.x.2), py), color, 1.0);
        svg.line_colored((px, y.px(p.y.1)), (px, y.px(p.y.2)), color, 1.0);
        let tip = format!(
            "{} ({}): TTFT {} [{}, {}], {:.0} tokens/s [{:.0}, {:.0}]",
            p.label,
            if p.strategy { "strategy" } else { "provider" },
            ms(p.x.0),
            ms(p.x.1),
            ms(p.x.2),
            p.y.0,
            p.y.1,
            p.y.2
        );
        svg.marker((px, py), 5.0, color, p.strategy, &tip);
        // Place the label beside the point where it overlaps no other label.
        let label = truncate(&p.label, 28);
        let w = text_width(&label);
        let candidates = [
            (8.0, -7.0, false),
            (8.0, 15.0, false),
            (-8.0, -7.0, true),
            (-8.0, 15.0, true),
            (8.0, -21.0, false),
            (8.0, 29.0, false),
        ];
        let boxed = |&(dx, dy, left): &(f64, f64, bool)| {
            let x0 = if left { px + dx - w } else { px + dx };
            (x0, py + dy - 11.0, x0 + w, py + dy + 3.0)
        };
        let fits = |b: &(f64, f64, f64, f64)| {
            b.0 >= area.left
                && b.2 <= area.right()
                && b.1 >= area.top
                && b.3 <= area.bottom()
                && !placed
                    .iter()
                    .any(|q| b.0 < q.2 && q.0 < b.2 && b.1 < q.3 && q.1 < b.3)
        };
        let choice = candidates
            .iter()
            .find(|c| fits(&boxed(c)))
            .unwrap_or(&candidates[0]);
        let b = boxed(choice);
        placed.push(b);
        svg.text(
            (px + choice.0, py + choice.1),
            if choice.2 { "end" } else { "start" },
            "point-label",
            &label,
        );
    }
    legend(&mut svg, area.left, area.bottom() + 50.0, &items, &pos);
    Plot {
        id: ID,
        title: TITLE.to_string(),
        caption,
        svg: Some(svg.finish()),
        note: None,
    }
}

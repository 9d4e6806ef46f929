//! A small SVG writer for the report's plots: elements, axes with nice
//! ticks (linear or log), and a wrapping legend.
//!
//! Hand-written rather than drawn with plotters: the five plots need exact
//! control over what a reader sees (log axes with decade ticks, reference
//! lines, error bars, labelled points, a waterfall), every string from the
//! data must be escaped by us, and the output must be deterministic text
//! for tests; that is a few hundred lines here against a dependency whose
//! text layout guesses font metrics anyway. Styling (fonts, colours of
//! axes and grid) comes from the page's CSS through class names, so the
//! plots follow the page.

use std::fmt::Write as _;

/// Escape text for XML/HTML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Colour-blind-safe series colours (Okabe–Ito, yellow left out: it
/// vanishes on white), then a grey and black.
pub(crate) const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#7f7f7f", "#222222",
];

/// Colour and dash pattern of series `i`: colours cycle, and from the
/// second cycle on the line is dashed so series stay apart.
pub(crate) fn series_style(i: usize) -> (&'static str, Option<&'static str>) {
    let dash = match i / PALETTE.len() {
        0 => None,
        1 => Some("6 3"),
        _ => Some("2 3"),
    };
    (PALETTE[i % PALETTE.len()], dash)
}

/// Approximate width in px of `s` at the plots' 12 px sans-serif.
pub(crate) fn text_width(s: &str) -> f64 {
    s.chars().count() as f64 * 6.8
}

/// `s` cut to `max` characters with an ellipsis.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A number as an SVG coordinate.
fn n(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// An SVG document being written.
pub(crate) struct Svg {
    buf: String,
}

impl Svg {
    /// Start a `width` × `height` drawing titled `title` (shown as its
    /// heading and its accessible name).
    pub fn new(plot: &str, width: f64, height: f64, title: &str) -> Svg {
        let mut buf = String::new();
        let _ = writeln!(
            buf,
            r#"<svg class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-labelledby="{plot}-title" data-chart="{plot}"><title id="{plot}-title">{t}</title>"#,
            w = n(width),
            h = n(height),
            t = esc(title),
        );
        let _ = writeln!(
            buf,
            r#"<text class="title" x="{}" y="20" text-anchor="middle">{}</text>"#,
            n(width / 2.0),
            esc(title)
        );
        Svg { buf }
    }

    /// A line segment.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), class: &str) {
        let _ = writeln!(
            self.buf,
            r#"<line class="{class}" x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
            n(x1),
            n(y1),
            n(x2),
            n(y2)
        );
    }

    /// A coloured line segment.
    pub fn line_colored(&mut self, a: (f64, f64), b: (f64, f64), color: &str, width: f64) {
        let _ = writeln!(
            self.buf,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{color}" stroke-width="{}"/>"#,
            n(a.0),
            n(a.1),
            n(b.0),
            n(b.1),
            n(width)
        );
    }

    /// An open polyline in `color`, dashed when `dash` is given, with a
    /// tooltip.
    pub fn polyline(
        &mut self,
        points: &[(f64, f64)],
        color: &str,
        dash: Option<&str>,
        class: &str,
        tip: &str,
    ) {
        if points.is_empty() {
            return;
        }
        let mut pts = String::with_capacity(points.len() * 12);
        for (i, (x, y)) in points.iter().enumerate() {
            if i > 0 {
                pts.push(' ');
            }
            let _ = write!(pts, "{},{}", n(*x), n(*y));
        }
        let dash = dash
            .map(|d| format!(r#" stroke-dasharray="{d}""#))
            .unwrap_or_default();
        let _ = writeln!(
            self.buf,
            r#"<polyline class="{class}" fill="none" stroke="{color}"{dash} points="{pts}"><title>{}</title></polyline>"#,
            esc(tip)
        );
    }

    /// A rectangle filled with `fill` (or styled by `class`), with a tooltip.
    pub fn rect(
        &mut self,
        (x, y): (f64, f64),
        (w, h): (f64, f64),
        class: &str,
        fill: Option<&str>,
        tip: &str,
    ) {
        let fill = fill.map(|f| format!(r#" fill="{f}""#)).unwrap_or_default();
        let _ = writeln!(
            self.buf,
            r#"<rect class="{class}" x="{}" y="{}" width="{}" height="{}"{fill}><title>{}</title></rect>"#,
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            esc(tip)
        );
    }

    /// A point marker: a circle, or a diamond when `diamond`.
    pub fn marker(&mut self, (x, y): (f64, f64), r: f64, color: &str, diamond: bool, tip: &str) {
        if diamond {
            let r = r * 1.3;
            let _ = writeln!(
                self.buf,
                r#"<path class="marker" fill="{color}" d="M{} {}L{} {}L{} {}L{} {}Z"><title>{}</title></path>"#,
                n(x),
                n(y - r),
                n(x + r),
                n(y),
                n(x),
                n(y + r),
                n(x - r),
                n(y),
                esc(tip)
            );
        } else {
            let _ = writeln!(
                self.buf,
                r#"<circle class="marker" fill="{color}" cx="{}" cy="{}" r="{}"><title>{}</title></circle>"#,
                n(x),
                n(y),
                n(r),
                esc(tip)
            );
        }
    }

    /// Text at (x, y) anchored `start`, `middle` or `end`.
    pub fn text(&mut self, (x, y): (f64, f64), anchor: &str, class: &str, s: &str) {
        let _ = writeln!(
            self.buf,
            r#"<text class="{class}" x="{}" y="{}" text-anchor="{anchor}">{}</text>"#,
            n(x),
            n(y),
            esc(s)
        );
    }

    /// Text rotated a quarter turn counter-clockwise about (x, y) (a y-axis label).
    pub fn text_vertical(&mut self, (x, y): (f64, f64), class: &str, s: &str) {
        let _ = writeln!(
            self.buf,
            r#"<text class="{class}" x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
            n(x),
            n(y),
            n(x),
            n(y),
            esc(s)
        );
    }

    /// The document.
    pub fn finish(mut self) -> String {
        self.buf.push_str("</svg>");
        self.buf
    }
}

/// The plotting area inside the margins, in px.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Area {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

impl Area {
    pub fn right(&self) -> f64 {
        self.left + self.width
    }
    pub fn bottom(&self) -> f64 {
        self.top + self.height
    }
}

/// A data-to-pixel mapping along one axis.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    px0: f64,
    px1: f64,
}

impl Scale {
    /// A linear scale over a "nice" domain that covers [lo, hi].
    pub fn linear(lo: f64, hi: f64, px0: f64, px1: f64) -> Scale {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else {
            (lo - 1.0, hi + 1.0)
        };
        let step = nice_step((hi - lo) / 5.0);
        Scale {
            lo: (lo / step).floor() * step,
            hi: (hi / step).ceil() * step,
            log: false,
            px0,
            px1,
        }
    }

    /// A linear scale over exactly [lo, hi].
    pub fn fixed(lo: f64, hi: f64, px0: f64, px1: f64) -> Scale {
        Scale {
            lo,
            hi,
            log: false,
            px0,
            px1,
        }
    }

    /// A log₁₀ scale over [lo, hi] (lo > 0) with a little room either side.
    pub fn log(lo: f64, hi: f64, px0: f64, px1: f64) -> Scale {
        let lo = lo.max(1e-9);
        Scale {
            lo: lo / 1.15,
            hi: hi.max(lo * 10.0) * 1.15,
            log: true,
            px0,
            px1,
        }
    }

    /// Pixel position of `v`.
    pub fn px(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.px0 + t * (self.px1 - self.px0)
    }

    /// Tick positions and labels.
    pub fn ticks(&self) -> Vec<(f64, String)> {
        if self.log {
            // 1, 2 and 5 of each decade in range; decades alone when that
            // would crowd the axis.
            let first = 10f64.powf(self.lo.log10().floor());
            let within = |v: f64| v >= self.lo * 0.999_999 && v <= self.hi * 1.000_001;
            let mut all = Vec::new();
            let mut d = first;
            while d <= self.hi {
                for s in [1.0, 2.0, 5.0] {
                    if within(d * s) {
                        all.push(d * s);
                    }
                }
                d *= 10.0;
            }
            if all.len() > 9 {
                all.retain(|v| (v.log10() - v.log10().round()).abs() < 1e-9);
            }
            all.into_iter().map(|v| (v, tick_label(v))).collect()
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let mut out = Vec::new();
            let mut i = (self.lo / step).ceil() as i64;
            loop {
                let v = i as f64 * step;
                if v > self.hi + step * 1e-6 {
                    break;
                }
                out.push((v, tick_label(v)));
                i += 1;
            }
            out
        }
    }
}

/// A step of 1, 2, 2.5 or 5 × 10ᵏ near `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A tick label: `0`, `0.25`, `40`, `2500`.
fn tick_label(v: f64) -> String {
    if v.abs() < 1e-9 {
        return "0".to_string();
    }
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Draw a time axis alone along the bottom of `area`: grid lines and tick
/// labels for `x`, the axis line, its label (the waterfalls' rows are
/// categories, so they have no y axis).
pub(crate) fn time_axis(svg: &mut Svg, area: Area, x: &Scale, xlabel: &str) {
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
    svg.text(
        (area.left + area.width / 2.0, area.bottom() + 36.0),
        "middle",
        "label",
        xlabel,
    );
}

/// Draw grid lines, tick labels and axis labels for `x` and `y` on `area`.
pub(crate) fn axes(svg: &mut Svg, area: Area, x: &Scale, y: &Scale, xlabel: &str, ylabel: &str) {
    for (v, label) in y.ticks() {
        let py = y.px(v);
        svg.line((area.left, py), (area.right(), py), "grid");
        svg.text((area.left - 6.0, py + 4.0), "end", "tick", &label);
    }
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
        xlabel,
    );
    svg.text_vertical(
        (area.left - 46.0, area.top + area.height / 2.0),
        "label",
        ylabel,
    );
}

/// How a legend entry is drawn.
#[derive(Debug, Clone)]
pub(crate) enum Swatch {
    /// A line, dashed when given.
    Line(Option<&'static str>),
    /// A point marker (diamond when true).
    Marker(bool),
    /// A filled box.
    Box,
}

/// One legend entry.
#[derive(Debug, Clone)]
pub(crate) struct LegendItem {
    pub label: String,
    pub color: &'static str,
    pub swatch: Swatch,
}

/// Legend entries laid out in rows within `width` px: positions (relative
/// to the legend's top-left) and the total height.
pub(crate) fn legend_layout(items: &[LegendItem], width: f64) -> (Vec<(f64, f64)>, f64) {
    const ROW: f64 = 18.0;
    let mut pos = Vec::with_capacity(items.len());
    let (mut x, mut y) = (0.0, 0.0);
    for it in items {
        let w = 26.0 + text_width(&it.label) + 16.0;
        if x > 0.0 && x + w > width {
            x = 0.0;
            y += ROW;
        }
        pos.push((x, y));
        x += w;
    }
    let height = if items.is_empty() { 0.0 } else { y + ROW };
    (pos, height)
}

/// Draw a legend at (left, top) with the positions from [`legend_layout`].
pub(crate) fn legend(svg: &mut Svg, left: f64, top: f64, items: &[LegendItem], pos: &[(f64, f64)]) {
    for (it, (x, y)) in items.iter().zip(pos) {
        let (x, y) = (left + x, top + y);
        match it.swatch {
            Swatch::Line(dash) => {
                svg.polyline(
                    &[(x, y + 8.0), (x + 20.0, y + 8.0)],
                    it.color,
                    dash,
                    "series",
                    &it.label,
                );
            }
            Swatch::Marker(diamond) => {
                svg.marker((x + 10.0, y + 8.0), 4.0, it.color, diamond, &it.label)
            }
            Swatch::Box => svg.rect(
                (x + 3.0, y + 2.0),
                (14.0, 12.0),
                "swatch",
                Some(it.color),
                &it.label,
            ),
        }
        svg.text((x + 26.0, y + 12.0), "start", "legend", &it.label);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc(r#"<script>"a" & 'b'</script>"#),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn nice_ticks() {
        let s = Scale::linear(3.0, 97.0, 0.0, 100.0);
        assert_eq!((s.lo, s.hi), (0.0, 100.0));
        let t: Vec<String> = s.ticks().into_iter().map(|(_, l)| l).collect();
        assert_eq!(t, ["0", "20", "40", "60", "80", "100"]);
        let l = Scale::log(120.0, 9000.0, 0.0, 100.0);
        let t: Vec<String> = l.ticks().into_iter().map(|(_, l)| l).collect();
        assert_eq!(t, ["200", "500", "1000", "2000", "5000", "10000"]);
        assert!(l.px(120.0) > 0.0 && l.px(9000.0) < 100.0);
        assert!((l.px(1000.0) - 50.0).abs() < 5.0);
        let wide = Scale::log(1.0, 1e6, 0.0, 100.0);
        assert_eq!(wide.ticks().len(), 7, "decades only");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }

    #[test]
    fn legend_wraps() {
        let items: Vec<LegendItem> = (0..4)
            .map(|i| LegendItem {
                label: format!("series number {i}"),
                color: PALETTE[i],
                swatch: Swatch::Box,
            })
            .collect();
        let (pos, h) = legend_layout(&items, 300.0);
        assert_eq!(pos[0], (0.0, 0.0));
        assert!(pos[2].1 > 0.0, "wrapped: {pos:?}");
        assert!(h >= 36.0);
    }
}

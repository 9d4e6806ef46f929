//! A self-contained HTML report: one file that opens in any browser with no
//! network access (inline CSS, inline SVG plots, no external fonts, and a
//! Content-Security-Policy that forbids loading anything), made from the
//! page template `crates/report/templates/report.html`, embedded at compile
//! time and rendered with minijinja (auto-escaping: every string from the
//! data, session labels included, is escaped).
//!
//! The page shows the report's one layout ([`crate::doc`]): the same
//! sections, titles, sentences and tables as the text formats, in the same
//! order, with each section's intro, the detail the layout gives the page
//! (each diagnostic's named figures, page-only tables and columns) and the
//! plots in their slots. With a run (`report --run`) it opens with the
//! run; then the findings (`id="findings"`: at most eight, ranked by the
//! user wait each explains, each linking to its section and plot), the
//! sessions covered (with a banner when any data is emulated, synthetic or
//! imported), the grouped TTFT percentiles with their CIs, the comparisons
//! and their verdicts, each diagnostic, the claims-and-limits list, and
//! five plots, each a figure with `data-plot="…"` (and `id="plot-…"`):
//!
//! | `data-plot` | shows |
//! |---|---|
//! | `ttft-cdf` | TTFT CDF, one line per analysis group |
//! | `session-box` | per-session box plots of warm TTFT (quartiles, median, whiskers p5–p95, min/max dots) |
//! | `waterfall` | the phases of one typical warm request (dns → … → end) |
//! | `concurrency` | median TTFT ratio vs k, beside the serial model (k+1)/2 and the ideal 1.0 |
//! | `providers` | providers' and strategies' median TTFT vs median tokens/s |
//!
//! With server spans joined (`analysis.traces`), a section `id="spans"`
//! says where the time went and draws, per path, a typical and a slow
//! request's client phases and server spans on one axis
//! (`data-plot="span-waterfall-N"`).
//!
//! The CDF, the box plots and the waterfall need the samples themselves;
//! without them those plots say so and everything else is shown.
//!
//! ```
//! use firsttoken_analyze::{Frame, Settings, analyze};
//! use firsttoken_report::ReportInput;
//! let a = analyze(&Frame::from_rows(&[], &[]).unwrap(), &[], &[], &Settings::new(1));
//! let page = firsttoken_report::html::render(&ReportInput::new(&[], &a, &[])).unwrap();
//! assert!(page.starts_with("<!DOCTYPE html>"));
//! assert!(page.contains(r#"data-plot="ttft-cdf""#));
//! ```

mod plots;
mod spans;
mod svg;
mod view;

#[cfg(test)]
mod testdata;

use firsttoken_analyze::group::group;
use firsttoken_analyze::{Analysis, AnalyzeError, Frame, GroupKey, percentile_sorted};
use firsttoken_record::session::{Provenance, SampleRow, SessionMeta};
use firsttoken_record::vocab::PhaseKind;
use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior, Value};

use plots::{BoxSeries, CdfSeries, Typical};
use view::AnyPlot;

use crate::doc::{PlotSlot, build};
use crate::{Exporter, ReportError, ReportInput};

/// The page template.
const TEMPLATE: &str = include_str!("../../templates/report.html");

/// What can go wrong rendering the page.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    /// The samples could not be validated into a frame (to group them).
    #[error("cannot group the samples for the plots: {0}")]
    Rows(#[from] AnalyzeError),
    /// The template failed to compile or render (a bug in the template).
    #[error("the HTML report template failed: {0}")]
    Template(#[from] minijinja::Error),
}

/// The HTML format.
#[derive(Debug, Clone, Copy)]
pub struct Html;

impl Exporter for Html {
    fn export(&self, input: &ReportInput<'_>) -> Result<String, ReportError> {
        Ok(render(input)?)
    }
}

/// The report as one HTML document.
///
/// `input.rows`, when given, must be the samples `input.analysis` was
/// computed from (those of `input.sessions`, in any order): they give the
/// per-request plots (the TTFT CDF per group, the per-session box plots
/// and a typical request's waterfall), grouped by `analysis.keys` exactly
/// as the analysis grouped them. With `None` those three plots show a "no
/// data" note instead. `input.comparisons` head the comparisons table.
pub fn render(input: &ReportInput<'_>) -> Result<String, HtmlError> {
    let (analysis, sessions) = (input.analysis, input.sessions);
    let (cdf, boxes, what, typical) = match input.rows {
        Some(rows) => {
            let (boxes, what) = session_series(sessions, rows);
            (
                cdf_series(analysis, sessions, rows)?,
                boxes,
                what,
                typical_request(rows),
            )
        }
        None => (Vec::new(), Vec::new(), "TTFT", None),
    };
    let doc = build(input);
    let draw = |slot: PlotSlot| -> Vec<AnyPlot> {
        match slot {
            PlotSlot::TtftCdf => vec![AnyPlot::Plot(plots::ttft_cdf(&cdf))],
            PlotSlot::SessionBox => vec![AnyPlot::Plot(plots::session_boxes(&boxes, what))],
            PlotSlot::Waterfall => vec![AnyPlot::Plot(plots::waterfall(typical))],
            PlotSlot::Concurrency => vec![AnyPlot::Plot(plots::concurrency(&analysis.concurrency))],
            PlotSlot::Providers => vec![AnyPlot::Plot(plots::providers(&analysis.providers))],
            PlotSlot::SpanWaterfalls => spans::plots(analysis)
                .into_iter()
                .map(AnyPlot::Span)
                .collect(),
        }
    };
    let page = view::Page {
        title: input.title(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        banners: view::banners(analysis, sessions),
        settings: view::settings(analysis),
        rows: analysis.rows,
        keys: analysis.keys.iter().map(|k| k.as_str()).collect(),
        sections: doc
            .sections
            .iter()
            .map(|s| view::section(s, &draw))
            .collect(),
    };
    let mut env = Environment::new();
    // A name the template misspells is an error, not an empty cell.
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // `.html`: auto-escaping on for every value.
    env.add_template("report.html", TEMPLATE)?;
    let html = env
        .get_template("report.html")?
        .render(Value::from(Serde(&page)))?;
    Ok(html)
}

/// A successful, counted request with a TTFT: its TTFT.
fn timed_ttft(r: &SampleRow) -> Option<f64> {
    let s = &r.sample;
    (!s.warmup && s.error.is_none() && r.phase != PhaseKind::Ping)
        .then_some(s.ttft_ms)
        .flatten()
        .filter(|v| v.is_finite())
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// TTFT values per analysis group of the headline (warm) phase — every
/// group when none is warm — labelled by the keys whose values differ
/// between them (all keys when none do).
fn cdf_series(
    analysis: &Analysis,
    sessions: &[SessionMeta],
    rows: &[SampleRow],
) -> Result<Vec<CdfSeries>, AnalyzeError> {
    let frame = Frame::from_rows(rows, sessions)?;
    let groups = group(&frame, &analysis.keys);
    let warm = |g: &&firsttoken_analyze::session::PooledGroup| {
        g.label
            .get(GroupKey::Phase)
            .map(|v| v.to_string())
            .as_deref()
            == Some("warm")
    };
    let shown: Vec<&firsttoken_analyze::session::PooledGroup> =
        if analysis.groups.iter().any(|g| warm(&g)) {
            analysis.groups.iter().filter(warm).collect()
        } else {
            analysis.groups.iter().collect()
        };
    let labels: Vec<_> = shown.iter().map(|g| &g.label).collect();
    let varies: Vec<bool> = (0..analysis.keys.len())
        .map(|i| {
            labels
                .iter()
                .any(|l| l.parts.get(i) != labels[0].parts.get(i))
        })
        .collect();
    let any_varies = varies.iter().any(|&v| v);
    Ok(shown
        .into_iter()
        .map(|g| {
            let values = groups
                .iter()
                .find(|fg| fg.label == g.label)
                .map(|fg| {
                    fg.rows
                        .iter()
                        .filter_map(|&i| rows.get(i as usize).and_then(timed_ttft))
                        .collect()
                })
                .unwrap_or_default();
            let label = g
                .label
                .parts
                .iter()
                .enumerate()
                .filter(|(i, _)| !any_varies || varies[*i])
                .map(|(_, (k, v))| format!("{}={v}", k.as_str()))
                .collect::<Vec<_>>()
                .join(", ");
            CdfSeries {
                label,
                sorted: sorted(values),
            }
        })
        .collect())
}

/// Warm TTFT per session (every app request's TTFT when no session has
/// warm requests), sessions in the given order, then any others the rows
/// name; and what the values are.
fn session_series(sessions: &[SessionMeta], rows: &[SampleRow]) -> (Vec<BoxSeries>, &'static str) {
    let any_warm = rows
        .iter()
        .any(|r| r.phase == PhaseKind::Warm && timed_ttft(r).is_some());
    let what = if any_warm {
        "TTFT of the warm phase (sequential requests on a reused connection)"
    } else {
        "TTFT of every successful app request"
    };
    let keep = |r: &SampleRow| {
        if any_warm {
            r.phase == PhaseKind::Warm
        } else {
            r.phase != PhaseKind::Direct
        }
    };
    let mut order: Vec<(&str, Provenance)> = sessions
        .iter()
        .map(|s| (s.id.as_str(), s.provenance))
        .collect();
    for r in rows {
        if !order.iter().any(|(id, _)| *id == r.session_id) {
            order.push((&r.session_id, r.provenance));
        }
    }
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); order.len()];
    for r in rows.iter().filter(|r| keep(r)) {
        if let (Some(v), Some(i)) = (
            timed_ttft(r),
            order.iter().position(|(id, _)| *id == r.session_id),
        ) {
            values[i].push(v);
        }
    }
    let series = order
        .into_iter()
        .zip(values)
        .map(|((id, p), v)| BoxSeries {
            label: id.to_string(),
            provenance: p.as_str(),
            sorted: sorted(v),
        })
        .collect();
    (series, what)
}

/// The successful warm request whose TTFT is closest to the warm median,
/// from the first provenance kind (measured, emulated, imported, synthetic)
/// that has warm requests; ties go to the earlier row.
fn typical_request(rows: &[SampleRow]) -> Option<Typical<'_>> {
    [
        Provenance::Measured,
        Provenance::Emulated,
        Provenance::Imported,
        Provenance::Synthetic,
    ]
    .into_iter()
    .find_map(|p| {
        let warm: Vec<(&SampleRow, f64)> = rows
            .iter()
            .filter(|r| r.provenance == p && r.phase == PhaseKind::Warm)
            .filter_map(|r| timed_ttft(r).map(|t| (r, t)))
            .collect();
        let median = percentile_sorted(&sorted(warm.iter().map(|(_, t)| *t).collect()), 50.0)?;
        let (row, _) = warm
            .iter()
            .copied()
            .min_by(|a, b| (a.1 - median).abs().total_cmp(&(b.1 - median).abs()))?;
        Some(Typical { row, median })
    })
}

#[cfg(test)]
mod tests {
    use super::testdata::{EVIL, fixture};
    use super::*;

    const PLOTS: [&str; 5] = [
        "ttft-cdf",
        "session-box",
        "concurrency",
        "waterfall",
        "providers",
    ];

    #[test]
    fn the_page_has_every_plot_the_banner_and_no_network_references() {
        let (analysis, sessions, rows) = fixture();
        let input = ReportInput::new(&sessions, &analysis, &[]).with_rows(&rows);
        let html = render(&input).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        for id in PLOTS {
            let tag = format!(r#"data-plot="{id}""#);
            let at = html.find(&tag).unwrap_or_else(|| panic!("no {tag}"));
            let rest = &html[at..];
            let figure = &rest[..rest.find("</figure>").unwrap()];
            assert!(
                figure.contains("<svg") && figure.contains("</svg>"),
                "{id} has a drawing"
            );
            assert!(!figure.contains("no data for this plot"), "{id}");
        }
        assert!(html.contains(r#"class="banner synthetic""#));
        assert!(html.contains("Synthetic data"));
        for bad in ["http://", "https://", "src=", "url(", "@import"] {
            assert!(!html.contains(bad), "found {bad}");
        }
        // Every href is an in-page anchor.
        for (i, _) in html.match_indices("href=") {
            assert!(html[i..].starts_with("href=\"#"), "{}", &html[i..i + 40]);
        }
        assert!(
            html.contains(r#"–<span class="sub">(n &lt; 10)</span>"#),
            "small cells say so"
        );
        for s in ["s1", "s2"] {
            assert!(html.contains(s));
        }
    }

    #[test]
    fn labels_from_the_data_are_escaped() {
        let (analysis, sessions, rows) = fixture();
        let input = ReportInput::new(&sessions, &analysis, &[]).with_rows(&rows);
        let html = render(&input).unwrap();
        assert!(!html.contains(EVIL), "raw label leaked");
        assert!(!html.contains("<script>alert"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;"), "escaped");
        // The page's own script is the only one.
        assert_eq!(html.matches("<script").count(), 1);
    }

    #[test]
    fn without_samples_the_per_request_plots_say_so() {
        let (analysis, sessions, _) = fixture();
        let html = render(&ReportInput::new(&sessions, &analysis, &[])).unwrap();
        for id in ["ttft-cdf", "session-box", "waterfall"] {
            let at = html.find(&format!(r#"data-plot="{id}""#)).unwrap();
            let figure = &html[at..at + html[at..].find("</figure>").unwrap()];
            assert!(figure.contains("no data for this plot"), "{id}");
            assert!(!figure.contains("<svg"), "{id}");
        }
        assert!(html.contains(r#"data-plot="concurrency""#));
    }

    #[test]
    fn an_empty_analysis_renders_notes_not_empty_charts() {
        let frame = Frame::from_rows(&[], &[]).unwrap();
        let a =
            firsttoken_analyze::analyze(&frame, &[], &[], &firsttoken_analyze::Settings::new(1));
        let html = render(&ReportInput::new(&[], &a, &[]).with_rows(&[])).unwrap();
        assert_eq!(html.matches("no data for this plot").count(), 5);
        assert!(!html.contains("<svg"));
    }

    #[test]
    fn the_typical_request_is_the_warm_one_nearest_the_median() {
        let (_, _, rows) = fixture();
        let t = typical_request(&rows).unwrap();
        assert_eq!(t.row.phase, PhaseKind::Warm);
        let best = rows
            .iter()
            .filter(|r| r.phase == PhaseKind::Warm)
            .filter_map(timed_ttft)
            .map(|v| (v - t.median).abs())
            .fold(f64::INFINITY, f64::min);
        assert_eq!((t.row.sample.ttft_ms.unwrap() - t.median).abs(), best);
    }

    #[test]
    fn waterfall_snapshot() {
        let (_, _, rows) = fixture();
        let plot = plots::waterfall(typical_request(&rows));
        insta::assert_snapshot!(plot.svg.unwrap());
    }
}

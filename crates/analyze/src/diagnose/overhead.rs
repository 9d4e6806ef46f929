//! App overhead: how much later the first token arrives through the app
//! than straight from the provider.
//!
//! Overhead = app TTFT (warm phase: reused connection) − direct TTFT
//! (direct phase: the same prompts sent to the provider on a reused
//! connection), as differences of the medians and of the p95s with bootstrap
//! CIs ([`crate::bootstrap`]). Only sessions that have both kinds of request
//! count, so both sides come from the same time window (the protocol
//! interleaves them and rotates the same prompts through both). The ping
//! RTT of those sessions is shown beside it as the network floor.
//!
//! Where the app sends `Server-Timing`, its own phases explain part of the
//! overhead: each phase's median (with CI) over the app's requests, and
//! "unexplained" = overhead median − Σ phase medians (a sum of medians, not
//! the median of sums: a breakdown, not an identity). Phases naming the
//! model call itself, a total, or work after the first token (names
//! containing `upstream`, `llm`, `model`, `provider`, `inference`, `ttft`,
//! `total`, `stream` or `store`) are listed apart in `model_parts` and not
//! counted as overhead.
//!
//! The app's total server time ([`ServerTotal`]) is its Server-Timing
//! phase named like a total (`total`, `app_total`…) when it sends one,
//! else the total it reports in a timing header (`x-process-time`… stored
//! as `header:<name>`, [`firsttoken_record::timing_header`]); header
//! totals are listed with the model parts, never counted as overhead.

use firsttoken_record::session::Provenance;
use serde::Serialize;

use super::{
    PathScope, Scope, both, path_scopes, provenances_with, rows_of, scoped_rows, session_set,
    within,
};
use crate::Settings;
use crate::bootstrap::difference_stat;
use crate::estimate::{Percentile, Stat};
use crate::finding::Finding;
use crate::frame::{Frame, Metric, PhaseKind};
use crate::samples::{MetricSummary, Samples, gather};

/// Server-Timing names that describe the model call, a total, or work done
/// after the first token (streaming the answer, storing it): none of these
/// delays the first token, so none is overhead.
const MODEL_TIMING: [&str; 9] = [
    "upstream",
    "llm",
    "model",
    "provider",
    "inference",
    "ttft",
    "total",
    "stream",
    "store",
];

/// App TTFT above direct TTFT, for one provenance kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overhead {
    /// Provenance of every row used.
    pub provenance: Provenance,
    /// The setup these numbers describe when a report covers several
    /// (e.g. `code_version=before`); empty when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// The app path it describes (its warm requests against the same direct
    /// requests), or the labelled pooled summary.
    pub paths: PathScope,
    /// Sessions with both app and direct requests.
    pub sessions: usize,
    /// App TTFT (warm phase).
    pub app: MetricSummary,
    /// Direct-to-provider TTFT.
    pub direct: MetricSummary,
    /// Ping RTT in the same sessions, `None` without pings.
    pub ping: Option<MetricSummary>,
    /// App median − direct median, judged against 0 (n: app, direct).
    pub overhead_median: Finding,
    /// App p95 − direct p95.
    pub overhead_p95: Stat,
    /// Overhead median ÷ direct median.
    pub relative_overhead: Option<f64>,
    /// The app's own Server-Timing breakdown, where it sends one.
    pub server_timing: Option<ServerTimingBreakdown>,
    /// Median time to the app's first response byte (≈ its headers): with
    /// no Server-Timing, the part of the wait before the stream starts.
    pub app_ttfb: Stat,
    /// The same for the direct requests.
    pub direct_ttfb: Stat,
}

/// The app's Server-Timing phases over its successful warm requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerTimingBreakdown {
    /// Successful app requests.
    pub requests: usize,
    /// Of which sent Server-Timing.
    pub requests_with_timing: usize,
    /// App phases, largest median first.
    pub parts: Vec<TimingPart>,
    /// Phases naming the model call or a total, not counted as overhead.
    pub model_parts: Vec<TimingPart>,
    /// Σ medians of `parts`, ms.
    pub explained_ms: f64,
    /// Overhead median − `explained_ms`; `None` without an overhead estimate.
    pub unexplained_ms: Option<f64>,
    /// The app's own total server time, where it reports one.
    pub total: Option<ServerTotal>,
}

/// The app's own total server time: a Server-Timing phase named like a
/// total, else a timing header's (the one most requests sent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerTotal {
    /// Where it was read.
    pub source: TotalSource,
    /// Its name as sent: the Server-Timing phase's or the header's.
    pub name: String,
    /// Requests reporting it.
    pub n: usize,
    /// Its median, ms, with CI.
    pub median: Stat,
}

/// Where the app's total server time was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TotalSource {
    /// A `Server-Timing` phase (header or stream event).
    ServerTiming,
    /// A timing response header such as `x-process-time`.
    Header,
}

/// One Server-Timing phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingPart {
    /// Phase name as the app sent it.
    pub name: String,
    /// Requests reporting it.
    pub n: usize,
    /// Its median duration, ms, with CI.
    pub median: Stat,
}

/// App overhead per provenance kind that has app or direct requests, and
/// per app path of the warm requests (then a pooled summary when there
/// are several); with direct requests only, one entry for the app's
/// missing side.
pub fn overhead(frame: &Frame, settings: &Settings) -> Vec<Overhead> {
    let mut out = Vec::new();
    for p in provenances_with(frame, &[PhaseKind::Warm, PhaseKind::Direct]) {
        let mut scopes = path_scopes(frame, p, &[PhaseKind::Warm]);
        if scopes.is_empty() {
            scopes.push(Scope::everything());
        }
        for scope in scopes {
            out.push(one(frame, p, &scope, settings));
        }
    }
    out
}

fn one(frame: &Frame, prov: Provenance, scope: &Scope, settings: &Settings) -> Overhead {
    let warm_all = scoped_rows(frame, prov, &[PhaseKind::Warm], scope);
    let mut direct_all = rows_of(frame, prov, &[PhaseKind::Direct]);
    // The app calls its provider with the default routing, so the bare model
    // is the direct requests of the `default` strategy when there are some;
    // other strategies (ignoring providers) would compare unlike with unlike.
    let is_default = |i: &u32| frame.str(frame.obs(*i).strategy) == Some("default");
    if direct_all.iter().any(is_default) {
        direct_all.retain(is_default);
    }
    let set = both(
        &session_set(frame, &warm_all),
        &session_set(frame, &direct_all),
    );
    let sessions = set.iter().filter(|&&b| b).count();
    let app_rows = within(frame, &warm_all, &set);
    let direct_rows = within(frame, &direct_all, &set);
    let ping_rows = within(frame, &rows_of(frame, prov, &[PhaseKind::Ping]), &set);

    let (app_s, app_c) = gather(frame, &app_rows, Metric::Ttft);
    let (direct_s, direct_c) = gather(frame, &direct_rows, Metric::Ttft);
    let label = format!("overhead/{}/{}", prov.as_str(), scope.key());
    let material = direct_s
        .percentile(Percentile::P50)
        .map_or(0.0, |m| m.abs() * settings.noise_threshold());
    let overhead_median = Finding::difference(
        difference_stat(
            &app_s,
            &direct_s,
            Percentile::P50,
            settings,
            &format!("{label}/p50"),
        ),
        material,
        app_s.len(),
        direct_s.len(),
    );
    let overhead_p95 = difference_stat(
        &app_s,
        &direct_s,
        Percentile::P95,
        settings,
        &format!("{label}/p95"),
    );
    let app = MetricSummary::new(Metric::Ttft, &app_s, app_c, settings);
    let direct = MetricSummary::new(Metric::Ttft, &direct_s, direct_c, settings);
    let ping = (!ping_rows.is_empty())
        .then(|| MetricSummary::of_rows(frame, &ping_rows, Metric::Rtt, settings));
    let relative_overhead = match (overhead_median.estimate.point(), direct.p50.point()) {
        (Some(o), Some(d)) if d > 0.0 => Some(o / d),
        _ => None,
    };

    let server_timing = breakdown(frame, &app_rows, &overhead_median.estimate, settings);
    let ttfb = |rows: &[u32]| {
        crate::samples::of_rows(frame, rows, Metric::Ttfb).stat(Percentile::P50, settings)
    };
    let (app_ttfb, direct_ttfb) = (ttfb(&app_rows), ttfb(&direct_rows));
    Overhead {
        provenance: prov,
        scope: String::new(),
        paths: scope.paths.clone(),
        sessions,
        app,
        direct,
        ping,
        overhead_median,
        overhead_p95,
        relative_overhead,
        server_timing,
        app_ttfb,
        direct_ttfb,
    }
}

fn breakdown(
    frame: &Frame,
    app_rows: &[u32],
    overhead: &Stat,
    settings: &Settings,
) -> Option<ServerTimingBreakdown> {
    // The rows counted, how many of them had each list of names, and
    // where each one's durations are (8 bytes a row, read once per name).
    let mut requests = 0usize;
    let mut per_shape = vec![0usize; frame.timing_shapes.len()];
    let mut timed: Vec<(u32, u32)> = Vec::new();
    for &i in app_rows {
        let o = frame.obs(i);
        if !o.timed() {
            continue;
        }
        requests += 1;
        if let Some(n) = per_shape.get_mut(o.timing_shape as usize) {
            *n += 1;
            timed.push((o.timing_start, o.timing_shape));
        }
    }
    let with_timing: usize = per_shape
        .iter()
        .zip(frame.timing_shapes.iter())
        .filter(|(_, names)| !names.is_empty())
        .map(|(n, _)| n)
        .sum();
    if with_timing == 0 {
        return None;
    }
    // Each name's durations gathered and summarised one name at a time, at
    // their exact count: a million rows of eight names held at once were
    // 64 MB, most of a report's memory above its frame.
    let mut names: Vec<u32> = Vec::new();
    for (names_of, n) in frame.timing_shapes.iter().zip(&per_shape) {
        if *n > 0 {
            for id in names_of {
                if !names.contains(id) {
                    names.push(*id);
                }
            }
        }
    }
    let mut parts = Vec::new();
    let mut model_parts = Vec::new();
    for id in names {
        // Where the name stands in each list (a list may repeat it).
        let at: Vec<Vec<usize>> = frame
            .timing_shapes
            .iter()
            .map(|l| (0..l.len()).filter(|&k| l[k] == id).collect())
            .collect();
        let count: usize = at.iter().zip(&per_shape).map(|(a, n)| a.len() * n).sum();
        let mut durations = Vec::with_capacity(count);
        for &(start, shape) in &timed {
            for &k in &at[shape as usize] {
                durations.extend(frame.timings.get(start as usize + k).copied());
            }
        }
        let name = frame.str(id).unwrap_or("-").to_string();
        let s = Samples::from_finite(durations);
        let part = TimingPart {
            n: s.len(),
            median: s.stat(Percentile::P50, settings),
            name,
        };
        let lower = part.name.to_ascii_lowercase();
        let header = firsttoken_record::timing_header(&part.name).is_some();
        if header || MODEL_TIMING.iter().any(|m| lower.contains(m)) {
            model_parts.push(part);
        } else {
            parts.push(part);
        }
    }
    let key = |p: &TimingPart| p.median.point().unwrap_or(f64::NEG_INFINITY);
    parts.sort_by(|a, b| key(b).total_cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
    model_parts.sort_by(|a, b| a.name.cmp(&b.name));
    let explained_ms: f64 = parts.iter().filter_map(|p| p.median.point()).sum();
    Some(ServerTimingBreakdown {
        requests,
        requests_with_timing: with_timing,
        unexplained_ms: overhead.point().map(|o| o - explained_ms),
        total: server_total(&model_parts),
        parts,
        model_parts,
        explained_ms,
    })
}

/// The app's total server time among the parts not counted as overhead:
/// a Server-Timing phase named like a total, else a timing header; of
/// several, the one most requests reported (then the first by name).
fn server_total(model_parts: &[TimingPart]) -> Option<ServerTotal> {
    let pick = |source: TotalSource| {
        model_parts
            .iter()
            .filter_map(|p| {
                let name = match firsttoken_record::timing_header(&p.name) {
                    Some(h) if source == TotalSource::Header => h,
                    None if source == TotalSource::ServerTiming
                        && p.name.to_ascii_lowercase().contains("total") =>
                    {
                        &p.name
                    }
                    _ => return None,
                };
                Some((p, name))
            })
            .max_by(|(a, an), (b, bn)| a.n.cmp(&b.n).then_with(|| bn.cmp(an)))
            .map(|(p, name)| ServerTotal {
                source,
                name: name.to_string(),
                n: p.n,
                median: p.median,
            })
    };
    pick(TotalSource::ServerTiming).or_else(|| pick(TotalSource::Header))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testutil::{frame, row, spread};
    use firsttoken_record::session::SampleRow;

    fn rows_with_timing() -> Vec<SampleRow> {
        let mut rows = Vec::new();
        // App ≈ 2400 ms, direct ≈ 500 ms: 1.9 s above the model; Server-Timing
        // says db 600, retrieve 200, upstream_ttft ≈ 500 (the model call).
        for (i, t) in spread(2400.0, 100.0, 60).into_iter().enumerate() {
            let path = if i % 2 == 0 { "chat" } else { "docs" };
            let mut r = row("s1", "warm", Some(path), Some(t));
            r.sample.server_timing = Some(
                [
                    ("db".to_string(), 600.0 + (i % 7) as f64),
                    ("retrieve".to_string(), 200.0 + (i % 5) as f64),
                    ("upstream_ttft".to_string(), 500.0),
                ]
                .into_iter()
                .collect(),
            );
            rows.push(r);
        }
        for t in spread(500.0, 50.0, 60) {
            rows.push(row("s1", "direct", Some("direct"), Some(t)));
        }
        for t in spread(40.0, 5.0, 10) {
            let mut r = row("s1", "ping", Some("ping"), None);
            r.sample.ttfb_ms = Some(t);
            rows.push(r);
        }
        // Another session with only app requests: not the same time window.
        for _ in 0..10 {
            rows.push(row("s2", "warm", Some("chat"), Some(90_000.0)));
        }
        rows
    }

    #[test]
    fn overhead_with_server_timing() {
        let o = overhead(&frame(&rows_with_timing()), &Settings::new(5));
        assert_eq!(o.len(), 3, "chat, docs, and the pooled summary");
        let chat = PathScope::One {
            path: Some("chat".into()),
        };
        assert_eq!(o[0].paths, chat);
        assert_eq!(o[0].app.n, 30);
        assert!(o[2].paths.is_pooled());
        let o = &o[2];
        assert_eq!(o.sessions, 1);
        assert_eq!(o.app.n, 60, "s2 has no direct requests and is left out");
        let e = o.overhead_median.estimate.estimate().unwrap();
        assert_eq!(o.overhead_median.direction, Direction::Increase);
        assert_eq!((o.overhead_median.n_a, o.overhead_median.n_b), (60, 60));
        assert!((e.point - 1900.0).abs() < 40.0, "{e:?}");
        assert!(e.ci.contains(1900.0) && e.ci.lower > 1700.0);
        assert!((o.ping.as_ref().unwrap().p50.point().unwrap() - 40.0).abs() < 3.0);
        let st = o.server_timing.as_ref().unwrap();
        assert_eq!(st.requests_with_timing, 60);
        let names: Vec<&str> = st.parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["db", "retrieve"]);
        assert_eq!(st.model_parts[0].name, "upstream_ttft");
        assert!((st.explained_ms - 805.0).abs() < 5.0, "{}", st.explained_ms);
        assert!((st.unexplained_ms.unwrap() - 1095.0).abs() < 45.0);
        assert_eq!(st.total, None, "no phase named a total, no timing header");
    }

    /// Issue 25: a timing header (`x-process-time`) is the app's total
    /// server time where Server-Timing names no total, is never counted
    /// as overhead, and gives way to a Server-Timing total.
    #[test]
    fn a_timing_header_is_the_total_where_server_timing_has_none() {
        let with = |extra: &[(&str, f64)]| {
            let mut rows = rows_with_timing();
            for r in rows.iter_mut().filter(|r| r.sample.server_timing.is_some()) {
                let t = r.sample.server_timing.as_mut().unwrap();
                t.extend(extra.iter().map(|(k, v)| (k.to_string(), *v)));
            }
            let o = overhead(&frame(&rows), &Settings::new(5));
            o[2].server_timing.clone().unwrap()
        };
        let st = with(&[("header:x-process-time", 1200.0)]);
        let names: Vec<&str> = st.parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["db", "retrieve"],
            "a header total is no overhead part"
        );
        assert!((st.explained_ms - 805.0).abs() < 5.0);
        let total = st.total.expect("the header's total");
        assert_eq!(
            (total.source, total.name.as_str(), total.n),
            (TotalSource::Header, "x-process-time", 60)
        );
        assert_eq!(total.median.point(), Some(1200.0));
        let st = with(&[("header:x-process-time", 1200.0), ("total", 1500.0)]);
        let total = st.total.expect("the Server-Timing total");
        assert_eq!(
            (total.source, total.name.as_str()),
            (TotalSource::ServerTiming, "total")
        );
        assert_eq!(total.median.point(), Some(1500.0));
    }

    #[test]
    fn each_path_has_its_own_overhead() {
        // docs adds ~100 ms, chat ~1500 ms over the same direct requests.
        let mut rows = Vec::new();
        for (path, center) in [("chat", 2000.0), ("docs", 600.0)] {
            for t in spread(center, 20.0, 40) {
                rows.push(row("s", "warm", Some(path), Some(t)));
            }
        }
        for t in spread(500.0, 20.0, 40) {
            rows.push(row("s", "direct", Some("direct"), Some(t)));
        }
        let o = overhead(&frame(&rows), &Settings::new(5));
        assert_eq!(o.len(), 3);
        let e = |i: usize| o[i].overhead_median.estimate.estimate().copied().unwrap();
        assert!((e(0).point - 1500.0).abs() < 20.0, "{:?}", e(0));
        assert!((e(1).point - 100.0).abs() < 20.0, "{:?}", e(1));
        assert!(e(1).ci.upper < 200.0);
        assert_eq!((o[0].app.n, o[1].app.n, o[1].direct.n), (40, 40, 40));
        assert_eq!(
            o[2].paths,
            PathScope::Pooled {
                paths: vec!["chat".into(), "docs".into()]
            }
        );
        assert_eq!(o[2].app.n, 80);
    }

    #[test]
    fn overhead_without_direct_or_timing() {
        let rows: Vec<SampleRow> = (0..20)
            .map(|i| row("s", "warm", Some("chat"), Some(100.0 + f64::from(i))))
            .collect();
        let o = overhead(&frame(&rows), &Settings::new(1));
        assert_eq!(o[0].sessions, 0);
        assert!(o[0].overhead_median.estimate.estimate().is_none());
        assert_eq!(o[0].overhead_median.direction, Direction::TooFewSamples);
        let mut rows = rows;
        rows.extend((0..20).map(|i| row("s", "direct", Some("direct"), Some(50.0 + f64::from(i)))));
        let o = overhead(&frame(&rows), &Settings::new(1));
        assert!(o[0].server_timing.is_none());
    }
}

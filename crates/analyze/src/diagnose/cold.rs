//! Cold start: each probe sent after an idle gap, against the warm
//! distribution.
//!
//! A cold probe is one request: a value, never an interval. Each probe is
//! stated as its value, its excess over the warm median and its ratio to
//! it, and where it falls in the warm distribution (the share of warm
//! values below it). A probe counts as *beyond the warm requests* when it
//! lies above the warm p99 (with at least 100 warm values) or above the
//! warm maximum (with fewer): one draw from the warm distribution lands
//! there about one time in a hundred (above the maximum of n values, one
//! time in n + 1).
//!
//! A cold start is a finding only when it **repeats**: at least two probes
//! beyond the warm requests, and more than half of the probes judged. One
//! probe beyond, or two of four (probes that ran while the machine was
//! busy with something else), is reported as what it is and not ranked.
//!
//! A probe on a new connection (a visitor back after a while gets one) is
//! judged by its TTFT less what a new connection costs, so a handshake is
//! not taken for a cold start: the warm requests it is compared with had
//! none, and connection cost has its own diagnostic. That cost is the
//! probe's own set-up — DNS, TCP connect and TLS, as stamped — or, when
//! the path's fresh requests (new connections, no idle gap) show a larger
//! one, their median TTFT less the warm median: a first request on a new
//! connection also pays TCP slow start, HTTP/2 settings and the server's
//! per-connection work (five seeds of the demo's fixed app put three of
//! four probes 3–13 ms past the warm maximum on that cost alone).

use firsttoken_record::session::Provenance;
use serde::Serialize;

use super::{PathScope, Scope, path_scopes, provenances_with, scoped_rows, session_set, within};
use crate::Settings;
use crate::estimate::{Percentile, Stat};
use crate::frame::{Frame, Metric, PhaseKind, format_rfc3339};

/// What a probe must pass to count as beyond the warm requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColdThreshold {
    /// The warm p99 (at least 100 warm values).
    P99,
    /// The warm maximum (fewer than 100 warm values).
    Maximum,
}

/// One cold probe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColdProbe {
    /// Session it belongs to.
    pub session_id: String,
    /// Its sequence number.
    pub seq: u64,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// App path it went to.
    pub path: Option<String>,
    /// Its TTFT; `None` when it failed.
    pub ttft_ms: Option<f64>,
    /// Its own connection set-up (DNS + connect + TLS), left out of the
    /// judgement; `None` on a reused connection or without stamps.
    pub setup_ms: Option<f64>,
    /// Error kind when it failed.
    pub error: Option<String>,
    /// TTFT less set-up − the warm median's point, ms: a value (one
    /// request has no interval); `None` when the probe failed or the warm
    /// median is withheld.
    pub excess_ms: Option<f64>,
    /// TTFT less set-up ÷ warm median.
    pub ratio: Option<f64>,
    /// Share of the warm values below TTFT less set-up (0–1): where the
    /// probe falls in the warm distribution.
    pub warm_rank: Option<f64>,
    /// Above the threshold ([`ColdStart::threshold`]).
    pub beyond_warm: Option<bool>,
}

/// Cold probes for one provenance kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColdStart {
    /// Provenance of every row used.
    pub provenance: Provenance,
    /// The setup these numbers describe when a report covers several
    /// (e.g. `code_version=before`); empty when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// The app path it describes (its probes against its own warm
    /// requests), or the labelled pooled summary.
    pub paths: PathScope,
    /// Warm TTFT median of the probes' sessions.
    pub warm_median: Stat,
    /// Warm values behind the warm median.
    pub warm_n: usize,
    /// A new connection's cost from the path's fresh requests (their
    /// median TTFT − the warm median, ms), left out of a probe on a new
    /// connection when larger than its own set-up; `None` with fewer than
    /// two fresh values or no positive cost.
    pub new_connection_ms: Option<f64>,
    /// What a probe must pass; `None` without warm values.
    pub threshold: Option<ColdThreshold>,
    /// Its value, ms.
    pub threshold_ms: Option<f64>,
    /// Each probe in order.
    pub probes: Vec<ColdProbe>,
    /// Probes judged against the threshold (successful ones, with warm
    /// values to judge them by).
    pub judged: usize,
    /// Of those, the probes beyond it.
    pub beyond: usize,
    /// Whether the cold start repeats: at least two probes beyond, more
    /// than half of those judged. Only then is it a finding.
    pub repeats: bool,
}

impl ColdStart {
    /// The excesses over the warm median of the probes beyond the
    /// threshold, in probe order.
    pub fn excesses_beyond(&self) -> Vec<f64> {
        self.probes
            .iter()
            .filter(|p| p.beyond_warm == Some(true))
            .filter_map(|p| p.excess_ms)
            .collect()
    }
}

/// Cold probes per provenance kind that has them and per app path of the
/// probes (then a pooled summary when there are several): each path's
/// probes against the warm requests of the same path.
pub fn cold_start(frame: &Frame, settings: &Settings) -> Vec<ColdStart> {
    let mut out = Vec::new();
    for p in provenances_with(frame, &[PhaseKind::Cold]) {
        for scope in path_scopes(frame, p, &[PhaseKind::Cold]) {
            out.push(one(frame, p, &scope, settings));
        }
    }
    out
}

fn one(frame: &Frame, prov: Provenance, scope: &Scope, settings: &Settings) -> ColdStart {
    let cold: Vec<u32> = scoped_rows(frame, prov, &[PhaseKind::Cold], scope)
        .into_iter()
        .filter(|&i| frame.obs(i).counted())
        .collect();
    let warm = within(
        frame,
        &scoped_rows(frame, prov, &[PhaseKind::Warm], scope),
        &session_set(frame, &cold),
    );
    let ws = crate::samples::of_rows(frame, &warm, Metric::Ttft);
    let warm_median = ws.stat(Percentile::P50, settings);
    let sorted = ws.sorted();
    let (threshold, threshold_ms) = match ws.stat(Percentile::P99, settings).point() {
        Some(p99) => (Some(ColdThreshold::P99), Some(p99)),
        None => match sorted.last() {
            Some(&max) => (Some(ColdThreshold::Maximum), Some(max)),
            None => (None, None),
        },
    };
    let fresh = within(
        frame,
        &scoped_rows(frame, prov, &[PhaseKind::Fresh], scope),
        &session_set(frame, &cold),
    );
    let fs = crate::samples::of_rows(frame, &fresh, Metric::Ttft);
    let new_connection_ms = (fs.len() >= 2)
        .then(|| fs.percentile(Percentile::P50).zip(warm_median.point()))
        .flatten()
        .map(|(f, w)| f - w)
        .filter(|c| *c > 0.0);
    let probes: Vec<ColdProbe> = cold
        .iter()
        .map(|&i| {
            let o = frame.obs(i);
            let raw = (o.error.is_none() && !o.ttft.is_nan()).then_some(o.ttft);
            let setup_ms = o.setup_ms();
            let cost = setup_ms.map(|s| s.max(new_connection_ms.unwrap_or(0.0)));
            let ttft = raw.map(|t| t - cost.unwrap_or(0.0));
            let median = warm_median.point();
            ColdProbe {
                session_id: frame.session_id(o).to_string(),
                seq: o.seq,
                started_at: format_rfc3339(o.started_ms),
                path: frame.str(o.path).map(str::to_string),
                ttft_ms: raw,
                setup_ms,
                error: o.error.map(|e| e.as_str().to_string()),
                excess_ms: ttft.zip(median).map(|(t, m)| t - m),
                ratio: ttft
                    .zip(median)
                    .filter(|(_, m)| *m > 0.0)
                    .map(|(t, m)| t / m),
                warm_rank: ttft
                    .filter(|_| !sorted.is_empty())
                    .map(|t| sorted.partition_point(|&w| w < t) as f64 / sorted.len() as f64),
                beyond_warm: ttft.zip(threshold_ms).map(|(t, th)| t > th),
            }
        })
        .collect();
    let judged = probes.iter().filter(|p| p.beyond_warm.is_some()).count();
    let beyond = probes
        .iter()
        .filter(|p| p.beyond_warm == Some(true))
        .count();
    ColdStart {
        provenance: prov,
        scope: String::new(),
        paths: scope.paths.clone(),
        warm_median,
        warm_n: ws.len(),
        new_connection_ms,
        threshold,
        threshold_ms,
        probes,
        judged,
        beyond,
        repeats: beyond >= 2 && 2 * beyond > judged,
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{failed, frame, row, spread};
    use firsttoken_record::session::SampleRow;

    #[test]
    fn each_path_probes_against_its_own_warm_median() {
        // chat is slow when warm (2000 ms), docs fast (100 ms); a probe of
        // 4000 ms on chat is 2×, one of 300 ms on docs is 3×. Against a
        // pooled warm median the docs probe would look fast.
        let mut rows = Vec::new();
        for (path, center) in [("chat", 2000.0), ("docs", 100.0)] {
            for t in spread(center, center / 20.0, 60) {
                rows.push(row("s", "warm", Some(path), Some(t)));
            }
        }
        rows.push(row("s", "cold", Some("chat"), Some(4000.0)));
        rows.push(row("s", "cold", Some("docs"), Some(300.0)));
        let c = cold_start(&frame(&rows), &Settings::new(2));
        assert_eq!(c.len(), 3);
        let ratio = |i: usize| c[i].probes[0].ratio.unwrap();
        assert_eq!(c[0].probes.len(), 1);
        assert_eq!(c[0].probes[0].path.as_deref(), Some("chat"));
        assert_eq!((c[0].warm_n, c[1].warm_n), (60, 60));
        assert!((ratio(0) - 2.0).abs() < 0.05, "{}", ratio(0));
        assert!((ratio(1) - 3.0).abs() < 0.1, "{}", ratio(1));
        for path in &c[..2] {
            assert_eq!(path.threshold, Some(ColdThreshold::Maximum));
            assert_eq!(path.probes[0].beyond_warm, Some(true));
            assert_eq!(path.probes[0].warm_rank, Some(1.0));
            // One probe beyond: a value, not a repeated cold start.
            assert_eq!((path.judged, path.beyond, path.repeats), (1, 1, false));
        }
        assert!(c[2].paths.is_pooled());
        assert_eq!((c[2].probes.len(), c[2].warm_n), (2, 120));
    }

    #[test]
    fn a_warm_draw_above_the_median_is_not_beyond_the_warm_requests() {
        // The fixed app: no cold start, its probe lands a little above the
        // warm median (as half of warm requests do) and under the warm
        // maximum. Only a probe past the maximum counts.
        let warm: Vec<f64> = spread(260.0, 40.0, 40);
        let mut rows: Vec<SampleRow> = warm
            .iter()
            .map(|&t| row("s", "warm", Some("chat"), Some(t)))
            .collect();
        rows.push(row("s", "cold", Some("chat"), Some(276.0)));
        rows.push(row("s", "cold", Some("chat"), Some(660.0)));
        let c = &cold_start(&frame(&rows), &Settings::new(3))[0];
        let (near, far) = (&c.probes[0], &c.probes[1]);
        assert_eq!(near.beyond_warm, Some(false));
        let rank = near.warm_rank.unwrap();
        assert!(rank > 0.5 && rank < 1.0, "{rank}");
        assert_eq!(far.beyond_warm, Some(true));
        assert_eq!((c.judged, c.beyond, c.repeats), (2, 1, false));
    }

    #[test]
    fn a_path_without_warm_requests_says_so_itself() {
        let mut rows: Vec<SampleRow> = spread(100.0, 5.0, 60)
            .into_iter()
            .map(|t| row("s", "warm", Some("docs"), Some(t)))
            .collect();
        rows.push(row("s", "cold", Some("router"), Some(900.0)));
        rows.push(row("s", "cold", Some("docs"), Some(300.0)));
        let c = cold_start(&frame(&rows), &Settings::new(2));
        let router = c
            .iter()
            .find(|c| {
                c.paths
                    == PathScope::One {
                        path: Some("router".into()),
                    }
            })
            .unwrap();
        assert_eq!(router.warm_n, 0, "docs' warm requests are not borrowed");
        assert!(router.warm_median.point().is_none());
        assert_eq!((router.threshold, router.judged), (None, 0));
        let p = &router.probes[0];
        assert_eq!(
            (p.excess_ms, p.beyond_warm, p.warm_rank),
            (None, None, None)
        );
        assert_eq!(p.ttft_ms, Some(900.0), "the value itself is kept");
    }

    #[test]
    fn each_probe_against_the_warm_distribution() {
        let mut rows: Vec<SampleRow> = spread(1000.0, 100.0, 100)
            .into_iter()
            .map(|t| row("s", "warm", Some("chat"), Some(t)))
            .collect();
        for (i, t) in [4200.0, 3900.0, 1050.0].into_iter().enumerate() {
            let mut r = row("s", "cold", Some("chat"), Some(t));
            r.sample.seq = i as u64;
            rows.push(r);
        }
        rows.push(failed(row("s", "cold", Some("chat"), None)));
        let c = &cold_start(&frame(&rows), &Settings::new(2))[0];
        assert_eq!(c.threshold, Some(ColdThreshold::P99), "100 warm values");
        assert_eq!(c.probes.len(), 4);
        let p = &c.probes[0];
        assert!((p.ratio.unwrap() - 4.2).abs() < 0.05);
        let median = c.warm_median.point().unwrap();
        assert_eq!(p.excess_ms, Some(4200.0 - median), "a value");
        assert_eq!(p.beyond_warm, Some(true));
        assert_eq!(c.probes[2].beyond_warm, Some(false));
        assert_eq!(c.probes[3].error.as_deref(), Some("timeout"));
        assert_eq!(p.started_at, "2026-11-30T02:31:00.000Z");
        assert!(
            c.probes[3].excess_ms.is_none(),
            "a failed probe has no excess"
        );
        // Two of three beyond the warm p99: a cold start that repeats.
        assert_eq!((c.judged, c.beyond, c.repeats), (3, 2, true));
        assert_eq!(c.excesses_beyond(), vec![4200.0 - median, 3900.0 - median]);
    }

    /// Issue 24, defect 1: "chat: 2/4 cold starts, median +75 ms [74 ms,
    /// 76 ms] over warm, n = 1 vs 60" — two probes that ran while the
    /// machine was busy, the interval the warm median's, the excess the
    /// smaller of two. Two of four beyond is not a repeated cold start, and
    /// no probe carries an interval.
    #[test]
    fn two_of_four_probes_beyond_do_not_repeat_and_carry_no_interval() {
        let mut rows: Vec<SampleRow> = spread(400.0, 20.0, 60)
            .into_iter()
            .map(|t| row("s", "warm", Some("chat"), Some(t)))
            .collect();
        for t in [480.0, 720.0, 405.0, 398.0] {
            rows.push(row("s", "cold", Some("chat"), Some(t)));
        }
        let c = &cold_start(&frame(&rows), &Settings::new(2))[0];
        assert_eq!((c.judged, c.beyond, c.repeats), (4, 2, false));
        let json = serde_json::to_value(c).unwrap();
        assert!(json["probes"][0]["excess_ms"].is_number(), "{json:#}");
        assert!(json["probes"][0].get("excess").is_none());
        // Both excesses are there to state.
        assert_eq!(c.excesses_beyond().len(), 2);
    }

    /// Five demo seeds: the fixed app's probes, on new connections, lay
    /// 3–13 ms past the warm maximum — a new connection's cost (slow start,
    /// per-connection work), which the fresh requests show, not a cold
    /// start.
    #[test]
    fn a_new_connections_whole_cost_from_the_fresh_requests_is_left_out() {
        let mut rows: Vec<_> = spread(258.0, 20.0, 12)
            .into_iter()
            .map(|t| row("s", "warm", Some("chat"), Some(t)))
            .collect();
        for t in [300.0, 305.0, 298.0] {
            let mut r = row("s", "fresh", Some("chat"), Some(t));
            r.sample.connect_ms = Some(1.0);
            r.sample.tls_ms = Some(27.0);
            rows.push(r);
        }
        for t in [303.0, 293.0, 295.0, 270.0] {
            let mut r = row("s", "cold", Some("chat"), Some(t));
            r.sample.connect_ms = Some(1.0);
            r.sample.tls_ms = Some(27.0);
            rows.push(r);
        }
        let c = &cold_start(&frame(&rows), &Settings::new(2))[0];
        let cost = c.new_connection_ms.unwrap();
        assert!((40.0..50.0).contains(&cost), "{cost}");
        assert_eq!((c.beyond, c.repeats), (0, false), "{c:#?}");
        // A real cold start stays one.
        for r in rows.iter_mut().filter(|r| r.phase == PhaseKind::Cold) {
            r.sample.ttft_ms = r.sample.ttft_ms.map(|t| t + 400.0);
        }
        let c = &cold_start(&frame(&rows), &Settings::new(2))[0];
        assert!(c.repeats, "{c:#?}");
    }

    #[test]
    fn a_new_connections_set_up_is_not_taken_for_a_cold_start() {
        // Warm 250 ms ± 5; a probe on a new connection at 280 ms paid 28 ms
        // of TLS and 1 ms of connect: 251 ms of its own, no cold start. One
        // at 700 ms with the same set-up is one.
        let mut rows: Vec<_> = spread(250.0, 5.0, 30)
            .into_iter()
            .map(|t| row("s", "warm", Some("chat"), Some(t)))
            .collect();
        for t in [280.0, 700.0] {
            let mut r = row("s", "cold", Some("chat"), Some(t));
            // Stamps are cumulative from the start: connect ends at 1 ms,
            // TLS at 29 ms.
            r.sample.connect_ms = Some(1.0);
            r.sample.tls_ms = Some(29.0);
            rows.push(r);
        }
        let c = &cold_start(&frame(&rows), &Settings::new(2))[0];
        let (warmish, cold) = (&c.probes[0], &c.probes[1]);
        assert_eq!(warmish.ttft_ms, Some(280.0), "the stored TTFT is kept");
        assert_eq!(warmish.setup_ms, Some(29.0));
        assert_eq!(warmish.beyond_warm, Some(false));
        assert_eq!(cold.beyond_warm, Some(true));
    }
}

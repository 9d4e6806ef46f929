//! Cold start: each probe sent after an idle gap, against the warm
//! distribution.
//!
//! A cold probe is one request, so it gets no interval of its own; its
//! excess over the warm median carries the warm median's CI (excess =
//! probe − median, bounds probe − upper … probe − lower). A probe counts as
//! *cold* when it lies above the warm p95 (or, with fewer than 20 warm
//! values, above the warm maximum). Each excess is a [`Finding`] whose
//! noise band reaches from the warm median's upper bound to that threshold:
//! an increase only when the probe lies above it, since one draw from the
//! warm distribution lands above the median's interval about half the time
//! and above the p95 one time in twenty (above the maximum of n values, one
//! time in n + 1). A probe inside that band is undecided: "no detectable
//! difference" within it and the 5 % material band, else "inconclusive".
//!
//! A probe on a new connection (a visitor back after a while gets one) is
//! judged by its TTFT less its own set-up — DNS, TCP connect and TLS, as
//! stamped — so a handshake is not taken for a cold start: the warm
//! requests it is compared with had none, and connection cost has its own
//! diagnostic.

use firsttoken_record::session::Provenance;
use serde::Serialize;

use super::{PathScope, Scope, path_scopes, provenances_with, scoped_rows, session_set, within};
use crate::Settings;
use crate::estimate::{Ci, Estimate, Percentile, Stat};
use crate::finding::Finding;
use crate::frame::{Frame, Metric, PhaseKind, format_rfc3339};

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
    /// TTFT less set-up − warm median, with the warm median's CI carried
    /// over (n: 1 probe, warm values); `None` when the probe failed.
    pub excess: Option<Finding>,
    /// TTFT less set-up ÷ warm median.
    pub ratio: Option<f64>,
    /// Above the warm p95 (above the warm maximum with under 20 warm values).
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
    /// Warm TTFT p95 of the probes' sessions.
    pub warm_p95: Stat,
    /// Each probe in order.
    pub probes: Vec<ColdProbe>,
    /// Warm values behind the warm median.
    pub warm_n: usize,
    /// Median ratio over successful probes.
    pub median_ratio: Option<f64>,
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
    let warm_p95 = ws.stat(Percentile::P95, settings);
    let threshold = warm_p95.point().or_else(|| ws.sorted().last().copied());
    let probes: Vec<ColdProbe> = cold
        .iter()
        .map(|&i| {
            let o = frame.obs(i);
            let raw = (o.error.is_none() && !o.ttft.is_nan()).then_some(o.ttft);
            let setup_ms = o.setup_ms();
            let ttft = raw.map(|t| t - setup_ms.unwrap_or(0.0));
            let excess = ttft.map(|t| {
                let stat = match warm_median {
                    Stat::Ok(m) => Stat::Ok(Estimate {
                        point: t - m.point,
                        standard_error: m.standard_error,
                        ci: Ci {
                            level: m.ci.level,
                            lower: t - m.ci.upper,
                            upper: t - m.ci.lower,
                        },
                    }),
                    too_small => too_small,
                };
                // The band from the median's interval up to the threshold a
                // warm draw rarely passes (see the module's comment).
                let band = match (&stat, threshold, warm_median.ci()) {
                    (Stat::Ok(_), Some(th), Some(ci)) => (th - ci.upper).max(0.0),
                    _ => 0.0,
                };
                let material = warm_median
                    .point()
                    .map_or(0.0, |m| m.abs() * settings.noise_threshold());
                Finding::with_band(stat, 0.0, band, material, 1, ws.len())
            });
            ColdProbe {
                session_id: frame.session_id(o).to_string(),
                seq: o.seq,
                started_at: format_rfc3339(o.started_ms),
                path: frame.str(o.path).map(str::to_string),
                ttft_ms: raw,
                setup_ms,
                error: o.error.map(|e| e.as_str().to_string()),
                excess,
                ratio: ttft
                    .zip(warm_median.point())
                    .filter(|(_, m)| *m > 0.0)
                    .map(|(t, m)| t / m),
                beyond_warm: ttft.zip(threshold).map(|(t, th)| t > th),
            }
        })
        .collect();
    let mut ratios: Vec<f64> = probes.iter().filter_map(|p| p.ratio).collect();
    ratios.sort_by(f64::total_cmp);
    let median_ratio = crate::percentile_sorted(&ratios, 50.0);
    ColdStart {
        provenance: prov,
        scope: String::new(),
        paths: scope.paths.clone(),
        warm_median,
        warm_p95,
        warm_n: ws.len(),
        probes,
        median_ratio,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
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
        assert_eq!(c[1].probes[0].beyond_warm, Some(true));
        for path in &c[..2] {
            let f = path.probes[0].excess.unwrap();
            assert_eq!(f.direction, Direction::Increase);
        }
        assert!(c[2].paths.is_pooled());
        assert_eq!((c[2].probes.len(), c[2].warm_n), (2, 120));
    }

    #[test]
    fn a_warm_draw_above_the_median_is_not_a_cold_start() {
        // The fixed app: no cold start, its probe lands a little above the
        // warm median's interval (as half of warm requests do) and under
        // the warm p95. Only a probe past the p95 is an increase.
        let warm: Vec<f64> = spread(260.0, 40.0, 40);
        let mut rows: Vec<SampleRow> = warm
            .iter()
            .map(|&t| row("s", "warm", Some("chat"), Some(t)))
            .collect();
        rows.push(row("s", "cold", Some("chat"), Some(276.0)));
        rows.push(row("s", "cold", Some("chat"), Some(660.0)));
        let c = &cold_start(&frame(&rows), &Settings::new(3))[0];
        let ci = c.warm_median.ci().unwrap();
        assert!(
            276.0 > ci.upper,
            "the probe is above the median's interval: {ci:?}"
        );
        let (near, far) = (&c.probes[0], &c.probes[1]);
        assert_eq!(near.beyond_warm, Some(false));
        let f = near.excess.unwrap();
        assert!(f.direction.is_undecided(), "{f:?}");
        assert_eq!(far.beyond_warm, Some(true));
        assert_eq!(far.excess.unwrap().direction, Direction::Increase);
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
        assert!(router.probes[0].excess.unwrap().direction == Direction::TooFewSamples);
    }

    #[test]
    fn each_probe_against_the_warm_median() {
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
        assert_eq!(c.probes.len(), 4);
        let p = &c.probes[0];
        assert!((p.ratio.unwrap() - 4.2).abs() < 0.05);
        let f = p.excess.unwrap();
        assert_eq!(f.direction, Direction::Increase);
        let e = f.estimate.estimate().copied().unwrap();
        assert!((e.point - 3200.0).abs() < 10.0 && e.ci.contains(e.point));
        assert_eq!(p.beyond_warm, Some(true));
        assert_eq!(c.probes[2].beyond_warm, Some(false));
        assert_eq!(c.probes[3].error.as_deref(), Some("timeout"));
        assert_eq!(p.started_at, "2026-11-30T02:31:00.000Z");
        assert!(c.probes[3].excess.is_none(), "a failed probe has no excess");
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
        assert_ne!(warmish.excess.unwrap().direction, Direction::Increase);
        assert_eq!(cold.beyond_warm, Some(true));
        assert_eq!(cold.excess.unwrap().direction, Direction::Increase);
    }
}

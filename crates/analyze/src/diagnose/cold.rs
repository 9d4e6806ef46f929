//! Cold start: each probe sent after an idle gap, against the warm
//! distribution.
//!
//! A cold probe is one request, so it gets no interval of its own; its
//! excess over the warm median carries the warm median's CI (excess =
//! probe − median, bounds probe − upper … probe − lower). A probe counts as
//! *cold* when it lies above the warm p95 (or, with fewer than 20 warm
//! values, above the warm maximum). Each excess is a [`Finding`]: an
//! increase only when the probe lies above the warm median's whole interval.

use firsttoken_record::session::Provenance;
use serde::Serialize;

use super::{provenances_with, rows_of, session_set, within};
use crate::Settings;
use crate::estimate::{Ci, Estimate, Percentile, Stat};
use crate::finding::Finding;
use crate::frame::{Frame, Metric, PhaseKind, format_rfc3339};
use crate::samples::Samples;

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
    /// Error kind when it failed.
    pub error: Option<String>,
    /// TTFT − warm median, with the warm median's CI carried over
    /// (n: 1 probe, warm values); `None` when the probe failed.
    pub excess: Option<Finding>,
    /// TTFT ÷ warm median.
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

/// Cold probes per provenance kind that has them.
pub fn cold_start(frame: &Frame, settings: &Settings) -> Vec<ColdStart> {
    provenances_with(frame, &[PhaseKind::Cold])
        .into_iter()
        .map(|p| one(frame, p, settings))
        .collect()
}

fn one(frame: &Frame, prov: Provenance, settings: &Settings) -> ColdStart {
    let cold: Vec<u32> = rows_of(frame, prov, &[PhaseKind::Cold])
        .into_iter()
        .filter(|&i| frame.obs(i).counted())
        .collect();
    let warm = within(
        frame,
        &rows_of(frame, prov, &[PhaseKind::Warm]),
        &session_set(frame, &cold),
    );
    let ws = Samples::of_rows(frame, &warm, Metric::Ttft);
    let warm_median = ws.stat(Percentile::P50, settings);
    let warm_p95 = ws.stat(Percentile::P95, settings);
    let threshold = warm_p95.point().or_else(|| ws.sorted().last().copied());
    let probes: Vec<ColdProbe> = cold
        .iter()
        .map(|&i| {
            let o = frame.obs(i);
            let ttft = (o.error.is_none() && !o.ttft.is_nan()).then_some(o.ttft);
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
                Finding::difference(stat, 1, ws.len())
            });
            ColdProbe {
                session_id: frame.session_id(o).to_string(),
                seq: o.seq,
                started_at: format_rfc3339(o.started_ms),
                path: frame.str(o.path).map(str::to_string),
                ttft_ms: ttft,
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
}

//! Cold start: each probe sent after an idle gap, against the warm
//! distribution.
//!
//! A cold probe is one request, so it gets no interval of its own; its
//! excess over the warm median carries the warm median's CI (excess =
//! probe − median, bounds probe − upper … probe − lower). A probe counts as
//! *cold* when it lies above the warm p95 (or, with fewer than 20 warm
//! values, above the warm maximum).

use firsttoken_record::session::{Provenance, SampleRow};
use serde::Serialize;

use super::{provenances_with, rows_of, session_set, within};
use crate::estimate::{Ci, Estimate, Percentile, Stat};
use crate::frame::{Frame, Metric, PhaseKind, format_rfc3339};
use crate::samples::Samples;
use crate::{AnalyzeError, Settings, fmt};

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
    /// TTFT − warm median, with the warm median's CI carried over.
    pub excess: Option<Estimate>,
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
    /// Median ratio over successful probes.
    pub median_ratio: Option<f64>,
    /// One line for a person.
    pub summary: String,
}

/// [`cold_start_frame`] over rows.
pub fn cold_start(rows: &[SampleRow], settings: &Settings) -> Result<Vec<ColdStart>, AnalyzeError> {
    Ok(cold_start_frame(&Frame::from_rows(rows, &[])?, settings))
}

/// Cold probes per provenance kind that has them.
pub fn cold_start_frame(frame: &Frame, settings: &Settings) -> Vec<ColdStart> {
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
            let excess = match (ttft, warm_median.estimate()) {
                (Some(t), Some(m)) => Some(Estimate {
                    point: t - m.point,
                    standard_error: m.standard_error,
                    ci: Ci {
                        level: m.ci.level,
                        lower: t - m.ci.upper,
                        upper: t - m.ci.lower,
                    },
                }),
                _ => None,
            };
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
    let summary = summarize(&probes, &warm_median, median_ratio);
    ColdStart {
        provenance: prov,
        scope: String::new(),
        warm_median,
        warm_p95,
        probes,
        median_ratio,
        summary,
    }
}

fn summarize(probes: &[ColdProbe], warm: &Stat, median_ratio: Option<f64>) -> String {
    let failed = probes.iter().filter(|p| p.error.is_some()).count();
    let Some(m) = warm.point() else {
        return format!(
            "{} cold probes, but too few warm requests to compare them with",
            probes.len()
        );
    };
    let ratios: Vec<String> = probes
        .iter()
        .filter_map(|p| p.ratio.map(fmt::ratio))
        .collect();
    let beyond = probes
        .iter()
        .filter(|p| p.beyond_warm == Some(true))
        .count();
    let judged = probes.iter().filter(|p| p.beyond_warm.is_some()).count();
    let mut s = if beyond == 0 {
        format!(
            "no cold-start penalty: {} probe(s) at {} the warm median ({}), all within the warm range",
            judged,
            ratios.join(", "),
            fmt::ms(m)
        )
    } else {
        format!(
            "cold start: {} probe(s) at {} the warm median ({}); {beyond} of {judged} beyond the warm p95",
            judged,
            ratios.join(", "),
            fmt::ms(m)
        )
    };
    if let Some(r) = median_ratio.filter(|_| ratios.len() > 1) {
        s.push_str(&format!(", median {}", fmt::ratio(r)));
    }
    if failed > 0 {
        s.push_str(&format!("; {failed} probe(s) failed"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{failed, row, spread};

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
        let c = &cold_start(&rows, &Settings::new(2)).unwrap()[0];
        assert_eq!(c.probes.len(), 4);
        let p = &c.probes[0];
        assert!((p.ratio.unwrap() - 4.2).abs() < 0.05);
        let e = p.excess.unwrap();
        assert!((e.point - 3200.0).abs() < 10.0 && e.ci.contains(e.point));
        assert_eq!(p.beyond_warm, Some(true));
        assert_eq!(c.probes[2].beyond_warm, Some(false));
        assert_eq!(c.probes[3].error.as_deref(), Some("timeout"));
        assert_eq!(p.started_at, "2026-11-30T02:31:00.000Z");
        assert!(
            c.summary.starts_with("cold start: 3 probe(s) at 4.2×, 3.9×, 1.1× the warm median (998 ms); 2 of 3 beyond the warm p95, median 3.9×"),
            "{}",
            c.summary
        );
        assert!(c.summary.ends_with("1 probe(s) failed"));
    }
}

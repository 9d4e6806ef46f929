//! Connection cost: what a new connection adds to the time to first token.
//!
//! Cost = TTFT on a fresh connection (fresh phase: DNS, TCP and TLS before
//! the request) − TTFT on a reused one (warm phase), as differences of the
//! medians and p95s with bootstrap CIs, over sessions that have both. The
//! fresh requests' own stamps split it: the median DNS lookup, TCP connect
//! (after DNS) and TLS handshake (after TCP) durations, each with its CI;
//! "other" = cost − their sum (request setup on a cold connection: TCP slow
//! start, HTTP/2 settings, per-connection work in the app).
//! A phase no successful fresh request went through (DNS for an IP
//! address, TLS over plain HTTP) is [`PhaseTime::NotDone`], never a 0 ms
//! median nor "too few samples".

use firsttoken_record::HandshakeKind;
use firsttoken_record::session::Provenance;
use serde::{Serialize, Serializer};

use super::{
    PathScope, Scope, both, path_scopes, provenances_with, scoped_rows, session_set, within,
};
use crate::Settings;
use crate::bootstrap::difference_stat;
use crate::estimate::{Percentile, Stat};
use crate::finding::Finding;
use crate::frame::{Frame, Metric, PhaseKind};
use crate::samples::{MetricSummary, Samples, gather};

/// Fresh − warm TTFT and its split, for one provenance kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionCost {
    /// Provenance of every row used.
    pub provenance: Provenance,
    /// The setup these numbers describe when a report covers several
    /// (e.g. `code_version=before`); empty when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// The app path it describes (fresh and warm rows of that path), or the
    /// labelled pooled summary.
    pub paths: PathScope,
    /// Sessions with both fresh and warm requests.
    pub sessions: usize,
    /// TTFT on fresh connections.
    pub fresh: MetricSummary,
    /// TTFT on reused connections.
    pub warm: MetricSummary,
    /// Fresh median − warm median, judged against 0 (n: fresh, warm).
    pub cost_median: Finding,
    /// Fresh p95 − warm p95.
    pub cost_p95: Stat,
    /// Median DNS lookup of the fresh requests, or not done (an IP address).
    pub dns: PhaseTime,
    /// Median TCP connect (after DNS).
    pub connect: PhaseTime,
    /// Median TLS handshake (after TCP), or not done (plain HTTP).
    pub tls: PhaseTime,
    /// Cost median − (dns + connect + tls medians), ms.
    pub other_ms: Option<f64>,
    /// The median of each fresh request's own set-up (DNS + TCP connect +
    /// TLS handshake), judged against 0 with a noise band of the settings'
    /// noise threshold × the warm median TTFT, so a set-up too small to
    /// matter to a user's wait is no finding (n: fresh requests with stamps).
    /// Measured directly, it is not blurred by the spread of the answer's
    /// first token, which the TTFT difference above carries twice.
    pub setup: Finding,
    /// The TLS handshake apart by kind (full, then resumed), only when the
    /// fresh requests had both: a first visit and a returning one pay
    /// different handshakes, and one median over both describes neither.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tls_by_handshake: Vec<HandshakeTls>,
}

/// A connection phase's median over the fresh requests that went through
/// it, or that none did. Serialized as the [`Stat`] itself or
/// `{"status":"not_done"}`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PhaseTime {
    /// No successful fresh request went through this phase: DNS for an IP
    /// address, TLS over plain HTTP.
    NotDone,
    /// The median over the fresh requests that went through it.
    Done(Stat),
}

impl PhaseTime {
    /// The median's point, if the phase was done and has one.
    pub fn point(&self) -> Option<f64> {
        match self {
            PhaseTime::NotDone => None,
            PhaseTime::Done(s) => s.point(),
        }
    }
}

impl Serialize for PhaseTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            PhaseTime::Done(stat) => stat.serialize(s),
            PhaseTime::NotDone => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("status", "not_done")?;
                m.end()
            }
        }
    }
}

/// The median TLS handshake of the fresh requests of one kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandshakeTls {
    /// Full or resumed.
    pub handshake: HandshakeKind,
    /// Fresh requests with this kind (counted, successful or not).
    pub n: usize,
    /// Their median TLS handshake (after TCP).
    pub tls: Stat,
}

/// Connection cost per provenance kind that has fresh requests and per
/// app path of those requests (then a pooled summary when there are
/// several): each path's fresh requests against its own warm ones.
pub fn connection_cost(frame: &Frame, settings: &Settings) -> Vec<ConnectionCost> {
    let mut out = Vec::new();
    for p in provenances_with(frame, &[PhaseKind::Fresh]) {
        for scope in path_scopes(frame, p, &[PhaseKind::Fresh]) {
            out.push(one(frame, p, &scope, settings));
        }
    }
    out
}

fn one(frame: &Frame, prov: Provenance, scope: &Scope, settings: &Settings) -> ConnectionCost {
    let fresh_all = scoped_rows(frame, prov, &[PhaseKind::Fresh], scope);
    let warm_all = scoped_rows(frame, prov, &[PhaseKind::Warm], scope);
    let set = both(
        &session_set(frame, &fresh_all),
        &session_set(frame, &warm_all),
    );
    let sessions = set.iter().filter(|&&b| b).count();
    let fresh_rows = within(frame, &fresh_all, &set);
    let warm_rows = within(frame, &warm_all, &set);
    let (fs, fc) = gather(frame, &fresh_rows, Metric::Ttft);
    let (ws, wc) = gather(frame, &warm_rows, Metric::Ttft);
    let label = format!("connection/{}/{}", prov.as_str(), scope.key());
    let material = ws
        .percentile(Percentile::P50)
        .map_or(0.0, |m| m.abs() * settings.noise_threshold());
    let cost_median = Finding::difference(
        difference_stat(&fs, &ws, Percentile::P50, settings, &format!("{label}/p50")),
        material,
        fs.len(),
        ws.len(),
    );
    let cost_p95 = difference_stat(&fs, &ws, Percentile::P95, settings, &format!("{label}/p95"));
    // Successful fresh requests none of which has a phase's stamp did not
    // need it; without any successful one, nothing is known.
    let succeeded = fresh_rows.iter().any(|&i| {
        let o = frame.obs(i);
        !o.warmup && o.error.is_none()
    });
    let phase = |m: Metric| {
        let s = crate::samples::of_rows(frame, &fresh_rows, m);
        if s.is_empty() && succeeded {
            PhaseTime::NotDone
        } else {
            PhaseTime::Done(s.stat(Percentile::P50, settings))
        }
    };
    let (dns, connect, tls) = (
        phase(Metric::Dns),
        phase(Metric::Connect),
        phase(Metric::Tls),
    );
    let split: f64 = [&dns, &connect, &tls]
        .iter()
        .filter_map(|s| s.point())
        .sum();
    let other_ms = cost_median.estimate.point().map(|c| c - split);
    let setup = {
        let mut v = Vec::new();
        for &i in &fresh_rows {
            let o = frame.obs(i);
            if o.warmup || o.error.is_some() {
                continue;
            }
            v.extend(o.setup_ms());
        }
        let samples = Samples::from_finite(v);
        let n = samples.len();
        let band = ws
            .percentile(Percentile::P50)
            .map_or(0.0, |m| m * settings.noise_threshold());
        Finding::with_band(
            samples.stat(Percentile::P50, settings),
            0.0,
            band,
            band,
            n,
            0,
        )
    };
    let tls_by_handshake = {
        let of = |k: HandshakeKind| -> Vec<u32> {
            fresh_rows
                .iter()
                .copied()
                .filter(|&i| frame.obs(i).handshake == Some(k))
                .collect()
        };
        let (full, resumed) = (of(HandshakeKind::Full), of(HandshakeKind::Resumed));
        if full.is_empty() || resumed.is_empty() {
            Vec::new()
        } else {
            [
                (HandshakeKind::Full, full),
                (HandshakeKind::Resumed, resumed),
            ]
            .into_iter()
            .map(|(handshake, rows)| HandshakeTls {
                handshake,
                n: rows.len(),
                tls: crate::samples::of_rows(frame, &rows, Metric::Tls)
                    .stat(Percentile::P50, settings),
            })
            .collect()
        }
    };
    let fresh = MetricSummary::new(Metric::Ttft, &fs, fc, settings);
    let warm = MetricSummary::new(Metric::Ttft, &ws, wc, settings);
    ConnectionCost {
        provenance: prov,
        scope: String::new(),
        paths: scope.paths.clone(),
        sessions,
        fresh,
        warm,
        cost_median,
        cost_p95,
        dns,
        connect,
        tls,
        other_ms,
        setup,
        tls_by_handshake,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testutil::{frame, row, spread};

    #[test]
    fn each_path_pays_its_own_connection_cost() {
        // chat: warm 2000, fresh +300; docs: warm 100, fresh +40.
        let mut rows = Vec::new();
        for (path, warm, cost) in [("chat", 2000.0, 300.0), ("docs", 100.0, 40.0)] {
            for t in spread(warm, warm / 50.0, 80) {
                rows.push(row("s", "warm", Some(path), Some(t)));
            }
            for t in spread(warm + cost, warm / 50.0, 40) {
                let mut r = row("s", "fresh", Some(path), Some(t));
                r.sample.dns_ms = Some(5.0);
                r.sample.connect_ms = Some(10.0);
                r.sample.tls_ms = Some(20.0);
                rows.push(r);
            }
        }
        let c = connection_cost(&frame(&rows), &Settings::new(9));
        assert_eq!(c.len(), 3);
        let cost = |i: usize| c[i].cost_median.estimate.estimate().copied().unwrap();
        assert_eq!(
            c[1].paths,
            PathScope::One {
                path: Some("docs".into())
            }
        );
        assert!((cost(0).point - 300.0).abs() < 40.0, "{:?}", cost(0));
        assert!((cost(1).point - 40.0).abs() < 5.0, "{:?}", cost(1));
        assert!(cost(1).ci.upper < 60.0, "no chat value in docs' interval");
        assert_eq!((c[0].fresh.n, c[0].warm.n), (40, 80));
        assert!(c[2].paths.is_pooled());
        assert_eq!(c[2].fresh.n, 80);
        for path in &c[..2] {
            assert_eq!(path.cost_median.direction, Direction::Increase);
        }
    }

    /// Issue 24, defect 5: plain HTTP to an IP address printed "tls 0.0 ms"
    /// and "DNS … too few samples (n = 0)": phases that did not happen.
    #[test]
    fn phases_no_request_went_through_are_not_done() {
        let mut rows = Vec::new();
        for t in spread(500.0, 10.0, 40) {
            rows.push(row("s", "warm", Some("chat"), Some(t)));
        }
        for t in spread(540.0, 10.0, 20) {
            let mut r = row("s", "fresh", Some("chat"), Some(t));
            r.sample.connect_ms = Some(1.5);
            rows.push(r);
        }
        let c = &connection_cost(&frame(&rows), &Settings::new(3))[0];
        assert_eq!((c.dns, c.tls), (PhaseTime::NotDone, PhaseTime::NotDone));
        assert_eq!(c.connect.point(), Some(1.5));
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(json["tls"], serde_json::json!({"status": "not_done"}));
        assert_eq!(json["connect"]["status"], "ok");
        // Fresh requests that all failed say nothing about their phases.
        let rows: Vec<_> = rows
            .into_iter()
            .map(|r| {
                if r.phase == PhaseKind::Fresh {
                    crate::testutil::failed(r)
                } else {
                    r
                }
            })
            .collect();
        let c = &connection_cost(&frame(&rows), &Settings::new(3))[0];
        assert!(
            matches!(c.tls, PhaseTime::Done(Stat::TooSmall { n: 0, .. })),
            "{c:?}"
        );
    }

    #[test]
    fn connection_cost_is_split_into_dns_connect_tls() {
        let mut rows = Vec::new();
        // Fresh: dns 20, connect +45 (stamp 65), tls +90 (stamp 155), TTFT 500 + 180.
        for (i, t) in spread(680.0, 30.0, 40).into_iter().enumerate() {
            let mut r = row("s", "fresh", Some("chat"), Some(t));
            let j = (i % 5) as f64 - 2.0;
            r.sample.dns_ms = Some(20.0 + j);
            r.sample.connect_ms = Some(65.0 + j);
            r.sample.tls_ms = Some(155.0 + 2.0 * j);
            rows.push(r);
        }
        for t in spread(500.0, 30.0, 120) {
            rows.push(row("s", "warm", Some("chat"), Some(t)));
        }
        let c = connection_cost(&frame(&rows), &Settings::new(9));
        assert_eq!(c.len(), 1);
        let c = &c[0];
        let e = c.cost_median.estimate.estimate().unwrap();
        assert_eq!(c.cost_median.direction, Direction::Increase);
        assert!((e.point - 180.0).abs() < 12.0, "{e:?}");
        assert!(e.ci.lower > 100.0);
        assert_eq!(c.dns.point(), Some(20.0));
        assert_eq!(c.connect.point(), Some(45.0));
        assert_eq!(c.tls.point(), Some(90.0));
        assert!((c.other_ms.unwrap() - 25.0).abs() < 12.0);
        assert!(c.tls_by_handshake.is_empty(), "no kinds recorded");
    }

    #[test]
    fn full_and_resumed_handshakes_are_shown_apart() {
        // 10 full handshakes of 9 ms, 30 resumed of 3 ms: one median (3 ms)
        // would describe the returning visitors only.
        let mut rows = Vec::new();
        for (i, t) in spread(600.0, 20.0, 40).into_iter().enumerate() {
            let mut r = row("s", "fresh", Some("chat"), Some(t));
            let full = i % 4 == 0;
            r.sample.connect_ms = Some(1.0);
            r.sample.tls_ms = Some(if full { 10.0 } else { 4.0 });
            r.sample.tls = Some(firsttoken_record::TlsInfo {
                version: "TLSv1_3".into(),
                cipher: "TLS13_AES_128_GCM_SHA256".into(),
                kx_group: None,
                handshake: Some(if full {
                    HandshakeKind::Full
                } else {
                    HandshakeKind::Resumed
                }),
            });
            rows.push(r);
        }
        for t in spread(500.0, 20.0, 60) {
            rows.push(row("s", "warm", Some("chat"), Some(t)));
        }
        let c = connection_cost(&frame(&rows), &Settings::new(9));
        let by = &c[0].tls_by_handshake;
        assert_eq!(by.len(), 2, "{by:?}");
        assert_eq!((by[0].handshake, by[0].n), (HandshakeKind::Full, 10));
        assert_eq!((by[1].handshake, by[1].n), (HandshakeKind::Resumed, 30));
        assert_eq!(by[0].tls.point(), Some(9.0));
        assert_eq!(by[1].tls.point(), Some(3.0));
    }
}

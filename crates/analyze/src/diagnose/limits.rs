//! Claims and limits: a generated list of what this data cannot support.
//!
//! Each limit is data: its kind and the figures behind it (the sessions,
//! the cell and its n, the error counts); the report words it. Checked: one vantage point or one network; one day; no
//! Server-Timing from the app; emulated, synthetic or imported data; cells
//! (phase × path × strategy × concurrency × provenance) too small for some
//! percentiles (see [`crate::min_n`]); sessions flagged for client
//! scheduling lag; test accounts left behind by cleanup; sessions that
//! stopped early; no direct requests or no pings; rows without session
//! metadata; phases with a high error rate (over 5 %).

use firsttoken_record::session::{Provenance, SessionMeta, SessionStatus};
use serde::Serialize;

use crate::estimate::Percentile;
use crate::frame::{Frame, Metric, PhaseKind, partition};
use crate::group::{GroupKey, group};
use crate::samples::Counts;

/// Error rate above which a phase gets a limit.
const HIGH_ERROR_RATE: f64 = 0.05;

/// What kind of limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// Every session ran from the same vantage point.
    OneVantage,
    /// Every session ran on the same network.
    OneNetwork,
    /// Every request ran on one UTC day.
    OneDay,
    /// The app sent no Server-Timing.
    NoServerTiming,
    /// The upstream (or the whole target) was the emulator.
    EmulatedUpstream,
    /// Generated data.
    SyntheticData,
    /// Data read from an export.
    ImportedData,
    /// A cell with too few samples for some percentiles.
    SmallCell,
    /// A session whose client lagged.
    ClientLag,
    /// A session whose client handled received data late (kernel stamps).
    ClientOverloaded,
    /// Test accounts not (verifiably) deleted.
    CleanupResidue,
    /// A session that stopped early.
    PartialSession,
    /// No direct-to-provider requests.
    NoDirect,
    /// No ping baseline.
    NoPing,
    /// Rows whose session metadata is missing.
    MissingSessionMeta,
    /// A phase with many failures.
    HighErrorRate,
}

/// One limit, with the figures behind it. Serialized with a `kind` tag.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Limit {
    /// Every session ran from the same vantage point.
    OneVantage {
        /// Its name (empty when unnamed).
        vantage: String,
    },
    /// Every session ran on the same network.
    OneNetwork {
        /// Its label (empty when unlabelled).
        network: String,
    },
    /// Every request ran on one UTC day.
    OneDay {
        /// `YYYY-MM-DD`.
        day: String,
    },
    /// The app sent no Server-Timing.
    NoServerTiming,
    /// The upstream (or the whole target) was the emulator.
    EmulatedUpstream {
        /// Sessions concerned (empty: rows without session metadata).
        sessions: Vec<String>,
    },
    /// Generated data.
    SyntheticData {
        /// Sessions concerned (empty: rows without session metadata).
        sessions: Vec<String>,
    },
    /// Data read from an export.
    ImportedData {
        /// Sessions concerned (empty: rows without session metadata).
        sessions: Vec<String>,
    },
    /// A cell with too few samples for some percentiles.
    SmallCell {
        /// The cell's key values, in key order.
        cell: Vec<String>,
        /// Timed values in it.
        n: usize,
        /// Percentiles withheld for it.
        withheld: Vec<Percentile>,
    },
    /// A session whose client lagged.
    ClientLag {
        /// The session.
        session: String,
        /// p99 of its scheduling lag, ms.
        lag_p99_ms: f64,
    },
    /// A session whose client lag (kernel receive stamp → handled) had a
    /// p99 whose whole interval lies above the threshold.
    ClientOverloaded {
        /// The session.
        session: String,
        /// p99 of its client lag, ms.
        lag_p99_ms: f64,
        /// The lower bound of that p99's interval, ms.
        lag_p99_lower_ms: f64,
        /// The threshold, ms.
        threshold_ms: f64,
    },
    /// Test accounts not (verifiably) deleted.
    CleanupResidue {
        /// The session.
        session: String,
        /// Accounts it created.
        created: usize,
        /// Rows left (`None`: not verified).
        residual: Option<i64>,
        /// Why cleanup failed, if it did.
        error: Option<String>,
    },
    /// A session that stopped early.
    PartialSession {
        /// The session.
        session: String,
        /// Why it stopped.
        reason: String,
    },
    /// No direct-to-provider requests.
    NoDirect,
    /// No ping baseline.
    NoPing,
    /// Rows whose session metadata is missing.
    MissingSessionMeta {
        /// Session ids of those rows.
        sessions: Vec<String>,
    },
    /// A phase with many failures, on one app path (a path that fails
    /// is never hidden among paths that do not).
    HighErrorRate {
        /// The phase.
        phase: PhaseKind,
        /// The app path; `None` for direct requests, pings, or an app
        /// without named paths.
        path: Option<String>,
        /// Failed requests.
        failed: usize,
        /// Counted requests.
        requests: usize,
    },
}

impl Limit {
    /// Its kind.
    pub fn kind(&self) -> LimitKind {
        match self {
            Limit::OneVantage { .. } => LimitKind::OneVantage,
            Limit::OneNetwork { .. } => LimitKind::OneNetwork,
            Limit::OneDay { .. } => LimitKind::OneDay,
            Limit::NoServerTiming => LimitKind::NoServerTiming,
            Limit::EmulatedUpstream { .. } => LimitKind::EmulatedUpstream,
            Limit::SyntheticData { .. } => LimitKind::SyntheticData,
            Limit::ImportedData { .. } => LimitKind::ImportedData,
            Limit::SmallCell { .. } => LimitKind::SmallCell,
            Limit::ClientLag { .. } => LimitKind::ClientLag,
            Limit::ClientOverloaded { .. } => LimitKind::ClientOverloaded,
            Limit::CleanupResidue { .. } => LimitKind::CleanupResidue,
            Limit::PartialSession { .. } => LimitKind::PartialSession,
            Limit::NoDirect => LimitKind::NoDirect,
            Limit::NoPing => LimitKind::NoPing,
            Limit::MissingSessionMeta { .. } => LimitKind::MissingSessionMeta,
            Limit::HighErrorRate { .. } => LimitKind::HighErrorRate,
        }
    }
}

/// Everything the data cannot support.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limits {
    /// The limits, in the order checked.
    pub items: Vec<Limit>,
}

impl Limits {
    /// Add a [`Limit::ClientOverloaded`] for each session `clock` judges
    /// overloaded, right after the scheduling-lag limits (the same claim:
    /// the client's own load).
    pub fn add_overloaded(&mut self, clock: &super::ClientClock) {
        let at = self
            .items
            .iter()
            .rposition(|l| l.kind() == LimitKind::ClientLag)
            .map_or_else(
                || {
                    self.items
                        .iter()
                        .position(|l| {
                            matches!(
                                l.kind(),
                                LimitKind::CleanupResidue
                                    | LimitKind::PartialSession
                                    | LimitKind::NoDirect
                                    | LimitKind::NoPing
                                    | LimitKind::MissingSessionMeta
                                    | LimitKind::HighErrorRate
                            )
                        })
                        .unwrap_or(self.items.len())
                },
                |i| i + 1,
            );
        let new: Vec<Limit> = clock
            .overloaded()
            .filter_map(|s| {
                let e = s.lag_p99.estimate()?;
                Some(Limit::ClientOverloaded {
                    session: s.session.clone(),
                    lag_p99_ms: e.point,
                    lag_p99_lower_ms: e.ci.lower,
                    threshold_ms: clock.threshold_ms,
                })
            })
            .collect();
        self.items.splice(at..at, new);
    }
}

impl Limits {
    /// True when a limit of `kind` is present.
    pub fn has(&self, kind: LimitKind) -> bool {
        self.items.iter().any(|l| l.kind() == kind)
    }
}

/// The limits of the data in `frame`, described by `sessions`.
pub fn limits(frame: &Frame, sessions: &[SessionMeta]) -> Limits {
    let mut items = Vec::new();

    let distinct = |f: &dyn Fn(&SessionMeta) -> &str| {
        let mut v: Vec<&str> = sessions.iter().map(f).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    if !sessions.is_empty() {
        let vantages = distinct(&|s| s.labels.vantage.as_str());
        if let [v] = vantages.as_slice() {
            items.push(Limit::OneVantage {
                vantage: v.to_string(),
            });
        }
        let networks = distinct(&|s| s.labels.network.as_str());
        if let [n] = networks.as_slice() {
            items.push(Limit::OneNetwork {
                network: n.to_string(),
            });
        }
    }

    let mut days: Vec<i32> = Vec::new();
    for o in frame.obs.iter().filter(|o| o.counted()) {
        if !days.contains(&o.day()) {
            days.push(o.day());
        }
    }
    if let [day] = days.as_slice() {
        items.push(Limit::OneDay {
            day: crate::frame::format_day(*day),
        });
    }

    let app_rows = frame.obs.iter().filter(|o| o.phase.is_app() && o.counted());
    let (mut app, mut timed_app) = (0usize, 0usize);
    for o in app_rows {
        app += 1;
        timed_app += usize::from(o.timing_shape != crate::frame::NONE);
    }
    if app > 0 && timed_app == 0 {
        items.push(Limit::NoServerTiming);
    }

    type Make = fn(Vec<String>) -> Limit;
    let kinds: [(Provenance, Make); 3] = [
        (Provenance::Emulated, |sessions| Limit::EmulatedUpstream {
            sessions,
        }),
        (Provenance::Synthetic, |sessions| Limit::SyntheticData {
            sessions,
        }),
        (Provenance::Imported, |sessions| Limit::ImportedData {
            sessions,
        }),
    ];
    for (prov, make) in kinds {
        let ids: Vec<String> = sessions
            .iter()
            .filter(|s| s.provenance == prov)
            .map(|s| s.id.clone())
            .collect();
        if !ids.is_empty() || frame.provenances().contains(&prov) {
            items.push(make(ids));
        }
    }

    for g in group(
        frame,
        &[
            GroupKey::Phase,
            GroupKey::Path,
            GroupKey::Strategy,
            GroupKey::Concurrency,
        ],
    ) {
        let Some(o) = g.rows.first().map(|&i| frame.obs(i)) else {
            continue;
        };
        if o.phase == PhaseKind::Cold {
            continue; // Cold probes are reported one by one, never as percentiles.
        }
        let metric = if o.phase == PhaseKind::Ping {
            Metric::Rtt
        } else {
            Metric::Ttft
        };
        let n = g
            .rows
            .iter()
            .map(|&i| frame.obs(i))
            .filter(|o| o.timed() && !metric.of(o).is_nan())
            .count();
        let withheld: Vec<Percentile> = [
            Percentile::P50,
            Percentile::P90,
            Percentile::P95,
            Percentile::P99,
        ]
        .into_iter()
        .filter(|p| n < p.min_n())
        .collect();
        if !withheld.is_empty() {
            let cell = g
                .label
                .parts
                .iter()
                .filter(|(_, v)| *v != crate::group::KeyValue::Missing)
                .map(|(_, v)| v.to_string())
                .collect();
            items.push(Limit::SmallCell { cell, n, withheld });
        }
    }

    for s in sessions {
        if let Some(lag) = s.client_lag_p99_ms {
            items.push(Limit::ClientLag {
                session: s.id.clone(),
                lag_p99_ms: lag,
            });
        }
    }
    for s in sessions {
        let Some(c) = &s.cleanup else { continue };
        if c.is_clean() {
            continue;
        }
        items.push(Limit::CleanupResidue {
            session: s.id.clone(),
            created: c.created_ids.len(),
            residual: c.residual,
            error: c.error.clone(),
        });
    }
    for s in sessions {
        if let SessionStatus::Partial { reason } = &s.status {
            items.push(Limit::PartialSession {
                session: s.id.clone(),
                reason: reason.clone(),
            });
        }
    }

    let has_phase = |p: PhaseKind| {
        frame
            .provenances()
            .iter()
            .any(|&pr| !frame.rows(pr, p).is_empty())
    };
    if app > 0 && !has_phase(PhaseKind::Direct) {
        items.push(Limit::NoDirect);
    }
    if !frame.is_empty() && !has_phase(PhaseKind::Ping) {
        items.push(Limit::NoPing);
    }
    let orphans: Vec<String> = frame
        .sessions
        .iter()
        .filter(|s| s.labels.is_none())
        .map(|s| s.id.clone())
        .collect();
    if !orphans.is_empty() {
        items.push(Limit::MissingSessionMeta { sessions: orphans });
    }
    for phase in PhaseKind::ALL {
        let rows: Vec<u32> = frame
            .provenances()
            .into_iter()
            .flat_map(|p| frame.rows(p, phase).iter().copied())
            .collect();
        let app = !matches!(phase, PhaseKind::Direct | PhaseKind::Ping);
        let mut parts = partition(
            &rows,
            |i| {
                if app { u64::from(frame.obs(i).path) } else { 0 }
            },
        );
        parts.sort_by(|a, b| frame.str(a.0 as u32).cmp(&frame.str(b.0 as u32)));
        for (pid, rows) in parts {
            let c = Counts::of_rows(frame, &rows);
            if c.error_rate().is_some_and(|r| r > HIGH_ERROR_RATE) {
                items.push(Limit::HighErrorRate {
                    phase,
                    path: app
                        .then(|| frame.str(pid as u32).map(str::to_string))
                        .flatten(),
                    failed: c.failed,
                    requests: c.requests,
                });
            }
        }
    }
    Limits { items }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{failed, meta, row};
    use firsttoken_record::session::Cleanup;
    use firsttoken_record::session::SampleRow;

    #[test]
    fn limits_name_what_the_data_cannot_support() {
        let mut a = meta("a", Provenance::Measured);
        a.client_lag_p99_ms = Some(25.0);
        a.cleanup = Some(Cleanup {
            created_ids: vec!["u1".into(), "u2".into()],
            deleted: 1,
            residual: Some(1),
            error: None,
        });
        let mut b = meta("b", Provenance::Emulated);
        b.status = SessionStatus::Partial {
            reason: "ctrl-c".into(),
        };
        let mut rows: Vec<SampleRow> = (0..30)
            .map(|i| row("a", "warm", Some("chat"), Some(100.0 + f64::from(i))))
            .collect();
        for i in 0..12 {
            let mut r = row("b", "warm", Some("docs"), Some(200.0 + f64::from(i)));
            r.provenance = Provenance::Emulated;
            rows.push(r);
        }
        rows.extend((0..4).map(|_| failed(row("a", "fresh", Some("chat"), None))));
        rows.push(row("x", "warm", Some("chat"), Some(1.0)));
        let sessions = [a, b];
        let l = limits(
            &crate::Frame::from_rows(&rows, &sessions).unwrap(),
            &sessions,
        );
        for k in [
            LimitKind::OneVantage,
            LimitKind::OneNetwork,
            LimitKind::OneDay,
            LimitKind::NoServerTiming,
            LimitKind::EmulatedUpstream,
            LimitKind::SmallCell,
            LimitKind::ClientLag,
            LimitKind::CleanupResidue,
            LimitKind::PartialSession,
            LimitKind::NoDirect,
            LimitKind::NoPing,
            LimitKind::MissingSessionMeta,
            LimitKind::HighErrorRate,
        ] {
            assert!(l.has(k), "{k:?} missing from {:#?}", l.items);
        }
        assert!(!l.has(LimitKind::SyntheticData));
        let small: Vec<(String, usize, Vec<f64>)> = l
            .items
            .iter()
            .filter_map(|i| match i {
                Limit::SmallCell { cell, n, withheld } => Some((
                    cell.join(" · "),
                    *n,
                    withheld.iter().map(|p| p.get()).collect(),
                )),
                _ => None,
            })
            .collect();
        assert!(
            small.contains(&("warm · docs · emulated".into(), 12, vec![95.0, 99.0])),
            "{small:?}"
        );
        assert!(
            small.contains(&("warm · chat · measured".into(), 31, vec![99.0])),
            "{small:?}"
        );
        assert!(l.items.contains(&Limit::CleanupResidue {
            session: "a".into(),
            created: 2,
            residual: Some(1),
            error: None,
        }));
        let json = serde_json::to_value(&l).unwrap();
        assert_eq!(json["items"][0]["kind"], "one_vantage");
    }

    /// Issue 10: a path that mostly fails is named, not averaged away
    /// among a healthy path's requests (pooled: 10 of 50, 20 %).
    #[test]
    fn a_failing_path_is_not_hidden_among_healthy_ones() {
        let mut rows: Vec<SampleRow> = (0..40)
            .map(|_| row("a", "warm", Some("chat"), Some(100.0)))
            .collect();
        rows.extend((0..10).map(|_| failed(row("a", "warm", Some("router"), None))));
        let m = [meta("a", Provenance::Measured)];
        let l = limits(&Frame::from_rows(&rows, &m).unwrap(), &m);
        let high: Vec<&Limit> = l
            .items
            .iter()
            .filter(|i| i.kind() == LimitKind::HighErrorRate)
            .collect();
        assert_eq!(
            high,
            [&Limit::HighErrorRate {
                phase: PhaseKind::Warm,
                path: Some("router".into()),
                failed: 10,
                requests: 10
            }]
        );
    }

    #[test]
    fn a_broad_data_set_has_fewer_limits() {
        let mut a = meta("a", Provenance::Measured);
        a.labels.vantage = "berlin".into();
        let mut b = meta("b", Provenance::Measured);
        b.labels.vantage = "tokyo".into();
        b.labels.network = "mobile".into();
        let sessions = [a, b];
        let l = limits(&crate::Frame::from_rows(&[], &sessions).unwrap(), &sessions);
        assert!(!l.has(LimitKind::OneVantage) && !l.has(LimitKind::OneNetwork));
        assert!(
            !l.has(LimitKind::NoPing),
            "no rows, nothing to say about pings"
        );
    }
}

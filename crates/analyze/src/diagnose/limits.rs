//! Claims and limits: a generated list of what this data cannot support.
//!
//! Each limit names its kind, what it concerns (a session, a cell) and one
//! sentence. Checked: one vantage point or one network; one day; no
//! Server-Timing from the app; emulated, synthetic or imported data; cells
//! (phase × path × strategy × concurrency × provenance) too small for some
//! percentiles (see [`crate::min_n`]); sessions flagged for client
//! scheduling lag; test accounts left behind by cleanup; sessions that
//! stopped early; no direct requests or no pings; rows without session
//! metadata; phases with a high error rate (over 5 %).

use firsttoken_record::session::{Provenance, SampleRow, SessionMeta, SessionStatus};
use serde::Serialize;

use crate::AnalyzeError;
use crate::estimate::Percentile;
use crate::frame::{Frame, Metric, PhaseKind};
use crate::group::{GroupKey, group_frame};
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

/// One limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limit {
    /// Its kind.
    pub kind: LimitKind,
    /// What it concerns (session ids, a cell, a phase), if not everything.
    pub subject: Option<String>,
    /// One sentence.
    pub message: String,
}

/// Everything the data cannot support.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limits {
    /// The limits, in the order checked.
    pub items: Vec<Limit>,
    /// One line for a person.
    pub summary: String,
}

impl Limits {
    /// True when a limit of `kind` is present.
    pub fn has(&self, kind: LimitKind) -> bool {
        self.items.iter().any(|l| l.kind == kind)
    }
}

/// [`limits_frame`] over rows.
pub fn limits(rows: &[SampleRow], sessions: &[SessionMeta]) -> Result<Limits, AnalyzeError> {
    Ok(limits_frame(&Frame::from_rows(rows, sessions)?, sessions))
}

fn list(ids: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut s = ids
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    s
}

/// The limits of the data in `frame`, described by `sessions`.
pub fn limits_frame(frame: &Frame, sessions: &[SessionMeta]) -> Limits {
    let mut items = Vec::new();
    let mut push = |kind, subject: Option<String>, message: String| {
        items.push(Limit {
            kind,
            subject,
            message,
        })
    };

    let distinct = |f: &dyn Fn(&SessionMeta) -> &str| {
        let mut v: Vec<&str> = sessions.iter().map(f).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    if !sessions.is_empty() {
        let vantages = distinct(&|s| s.labels.vantage.as_str());
        if vantages.len() == 1 {
            let v = if vantages[0].is_empty() {
                "an unnamed host"
            } else {
                vantages[0]
            };
            push(
                LimitKind::OneVantage,
                None,
                format!(
                    "every session ran from one vantage point ({v}): nothing here speaks for users elsewhere"
                ),
            );
        }
        let networks = distinct(&|s| s.labels.network.as_str());
        if networks.len() == 1 {
            let n = if networks[0].is_empty() {
                "unlabelled"
            } else {
                networks[0]
            };
            push(
                LimitKind::OneNetwork,
                None,
                format!("every session ran on one network ({n}): other networks may differ"),
            );
        }
    }

    let mut days: Vec<i32> = Vec::new();
    for o in frame.obs.iter().filter(|o| o.counted()) {
        if !days.contains(&o.day) {
            days.push(o.day);
        }
    }
    if days.len() == 1 {
        push(
            LimitKind::OneDay,
            None,
            format!(
                "every request ran on one day ({}): no claim about other days or times of day",
                crate::frame::format_day(days[0])
            ),
        );
    }

    let app_rows = frame.obs.iter().filter(|o| o.phase.is_app() && o.counted());
    let (mut app, mut timed_app) = (0usize, 0usize);
    for o in app_rows {
        app += 1;
        timed_app += usize::from(o.timing_len > 0);
    }
    if app > 0 && timed_app == 0 {
        push(
            LimitKind::NoServerTiming,
            None,
            "the app sent no Server-Timing: its overhead cannot be broken down into its own phases"
                .to_string(),
        );
    }

    for (prov, kind, msg) in [
        (
            Provenance::Emulated,
            LimitKind::EmulatedUpstream,
            "the upstream was the emulator: provider and overhead numbers are not a real provider's",
        ),
        (
            Provenance::Synthetic,
            LimitKind::SyntheticData,
            "synthetic data: generated, not measured",
        ),
        (
            Provenance::Imported,
            LimitKind::ImportedData,
            "imported data: how it was measured is only as known as its export says",
        ),
    ] {
        let mut ids: Vec<&str> = sessions
            .iter()
            .filter(|s| s.provenance == prov)
            .map(|s| s.id.as_str())
            .collect();
        if ids.is_empty() && frame.provenances().contains(&prov) {
            ids.push("rows without session");
        }
        if !ids.is_empty() {
            push(kind, Some(list(&ids)), format!("{}: {msg}", list(&ids)));
        }
    }

    for g in group_frame(
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
        let withheld: Vec<&str> = [
            (Percentile::P50, "median"),
            (Percentile::P90, "p90"),
            (Percentile::P95, "p95"),
            (Percentile::P99, "p99"),
        ]
        .into_iter()
        .filter(|(p, _)| n < p.min_n())
        .map(|(_, name)| name)
        .collect();
        if !withheld.is_empty() {
            let cell = g
                .label
                .parts
                .iter()
                .filter(|(_, v)| *v != crate::group::KeyValue::Missing)
                .map(|(_, v)| v.to_string())
                .collect::<Vec<_>>()
                .join(" · ");
            push(
                LimitKind::SmallCell,
                Some(cell.clone()),
                format!(
                    "{cell}: n = {n}, so {} withheld (n too small)",
                    withheld.join(", ")
                ),
            );
        }
    }

    for s in sessions {
        if let Some(lag) = s.client_lag_p99_ms {
            push(
                LimitKind::ClientLag,
                Some(s.id.clone()),
                format!(
                    "session {}: the client's own scheduling lag reached p99 = {lag:.1} ms, so its timings may be inflated",
                    s.id
                ),
            );
        }
    }
    for s in sessions {
        let Some(c) = &s.cleanup else { continue };
        if c.is_clean() {
            continue;
        }
        let why = match (&c.error, c.residual) {
            (Some(e), _) => format!("cleanup failed ({e})"),
            (None, Some(r)) => format!("{r} test account row(s) left behind"),
            (None, None) => "cleanup was not verified (no count query)".to_string(),
        };
        push(
            LimitKind::CleanupResidue,
            Some(s.id.clone()),
            format!("session {}: {why} of {} created", s.id, c.created_ids.len()),
        );
    }
    for s in sessions {
        if let SessionStatus::Partial { reason } = &s.status {
            push(
                LimitKind::PartialSession,
                Some(s.id.clone()),
                format!(
                    "session {} stopped early ({reason}): its phases may be unevenly covered",
                    s.id
                ),
            );
        }
    }

    let has_phase = |p: PhaseKind| {
        frame
            .provenances()
            .iter()
            .any(|&pr| !frame.rows(pr, p).is_empty())
    };
    if app > 0 && !has_phase(PhaseKind::Direct) {
        push(
            LimitKind::NoDirect,
            None,
            "no direct requests: the app's overhead cannot be separated from the model's own time"
                .to_string(),
        );
    }
    if !frame.is_empty() && !has_phase(PhaseKind::Ping) {
        push(
            LimitKind::NoPing,
            None,
            "no pings: no network baseline to tell network from app".to_string(),
        );
    }
    let orphans: Vec<&str> = frame
        .sessions
        .iter()
        .filter(|s| s.labels.is_none())
        .map(|s| s.id.as_str())
        .collect();
    if !orphans.is_empty() {
        push(
            LimitKind::MissingSessionMeta,
            Some(list(&orphans)),
            format!(
                "rows of {} have no session metadata: their labels are unknown and they cannot be checked for lag or cleanup",
                list(&orphans)
            ),
        );
    }
    for phase in PhaseKind::ALL {
        let rows: Vec<u32> = frame
            .provenances()
            .into_iter()
            .flat_map(|p| frame.rows(p, phase).iter().copied())
            .collect();
        let c = Counts::of_rows(frame, &rows);
        if let Some(rate) = c.error_rate().filter(|&r| r > HIGH_ERROR_RATE) {
            push(
                LimitKind::HighErrorRate,
                Some(phase.as_str().to_string()),
                format!(
                    "{}: {:.0} % of requests failed ({} of {}); its timings describe only the successes",
                    phase.as_str(),
                    100.0 * rate,
                    c.failed,
                    c.requests
                ),
            );
        }
    }

    let summary = if items.is_empty() {
        "no structural limits found".to_string()
    } else {
        let mut kinds: Vec<&str> = Vec::new();
        for l in &items {
            let name = kind_words(l.kind);
            if !kinds.contains(&name) {
                kinds.push(name);
            }
        }
        format!("{} limit(s): {}", items.len(), kinds.join(", "))
    };
    Limits { items, summary }
}

fn kind_words(k: LimitKind) -> &'static str {
    match k {
        LimitKind::OneVantage => "one vantage point",
        LimitKind::OneNetwork => "one network",
        LimitKind::OneDay => "one day",
        LimitKind::NoServerTiming => "no server timing",
        LimitKind::EmulatedUpstream => "emulated upstream",
        LimitKind::SyntheticData => "synthetic data",
        LimitKind::ImportedData => "imported data",
        LimitKind::SmallCell => "small n in some cells",
        LimitKind::ClientLag => "client lag",
        LimitKind::CleanupResidue => "cleanup residue",
        LimitKind::PartialSession => "partial session",
        LimitKind::NoDirect => "no direct baseline",
        LimitKind::NoPing => "no ping baseline",
        LimitKind::MissingSessionMeta => "missing session metadata",
        LimitKind::HighErrorRate => "high error rate",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{failed, meta, row};
    use firsttoken_record::session::Cleanup;

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
        let l = limits(&rows, &[a, b]).unwrap();
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
        let small: Vec<&str> = l
            .items
            .iter()
            .filter(|i| i.kind == LimitKind::SmallCell)
            .map(|i| i.message.as_str())
            .collect();
        assert!(
            small.contains(&"warm · docs · emulated: n = 12, so p95, p99 withheld (n too small)"),
            "{small:?}"
        );
        assert!(
            small.contains(&"warm · chat · measured: n = 31, so p99 withheld (n too small)"),
            "{small:?}"
        );
        let cleanup = l
            .items
            .iter()
            .find(|i| i.kind == LimitKind::CleanupResidue)
            .unwrap();
        assert_eq!(
            cleanup.message,
            "session a: 1 test account row(s) left behind of 2 created"
        );
        assert!(
            l.summary.contains("one vantage point") && l.summary.contains("emulated upstream"),
            "{}",
            l.summary
        );
    }

    #[test]
    fn a_broad_data_set_has_fewer_limits() {
        let mut a = meta("a", Provenance::Measured);
        a.labels.vantage = "berlin".into();
        let mut b = meta("b", Provenance::Measured);
        b.labels.vantage = "tokyo".into();
        b.labels.network = "mobile".into();
        let l = limits(&[], &[a, b]).unwrap();
        assert!(!l.has(LimitKind::OneVantage) && !l.has(LimitKind::OneNetwork));
        assert!(
            !l.has(LimitKind::NoPing),
            "no rows, nothing to say about pings"
        );
    }
}

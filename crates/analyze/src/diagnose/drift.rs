//! Drift: day-to-day change in the app's TTFT, next to the change in ping
//! RTT, so a slower day can be told apart from a slower network.
//!
//! Days are UTC dates of each request's start. For consecutive days with
//! data, the app's warm TTFT of the later day is compared with the earlier
//! ([`mod@crate::compare`]: median difference with CI, rank test, verdict) and
//! the ping median difference (with CI) is set beside it. A significant app
//! change is attributed to the network when the ping change is itself
//! significant (CI excludes 0) and at least half as large; otherwise "not
//! the network".

use firsttoken_record::session::Provenance;
use serde::Serialize;

use super::{PathScope, Scope, path_scopes, provenances_with, scoped_rows};
use crate::Settings;
use crate::bootstrap::difference_stat;
use crate::compare::{Comparison, compare};
use crate::estimate::Percentile;
use crate::finding::Finding;
use crate::frame::{Frame, Metric, PhaseKind, format_day, partition};
use crate::group::distinct_sessions;
use crate::samples::{Counts, MetricSummary, Samples, gather};

/// One UTC day.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DayStats {
    /// `YYYY-MM-DD`.
    pub day: String,
    /// Sessions with requests that day.
    pub sessions: usize,
    /// App TTFT (warm phase).
    pub app: MetricSummary,
    /// Ping RTT, `None` without pings that day.
    pub ping: Option<MetricSummary>,
}

/// From one day to the next.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DayChange {
    /// Earlier day.
    pub from: String,
    /// Later day.
    pub to: String,
    /// Later day's app TTFT against the earlier's.
    pub app: Comparison,
    /// Later ping median − earlier ping median, judged against 0.
    pub ping_change: Finding,
    /// True when a significant app change is mostly the network's.
    pub network_explained: bool,
}

/// Day-to-day drift for one provenance kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    /// Provenance of every row used.
    pub provenance: Provenance,
    /// The setup these numbers describe when a report covers several
    /// (e.g. `code_version=before`); empty when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// The app path whose warm requests it follows, or the labelled pooled
    /// summary (a day with another mix of paths would look like drift).
    pub paths: PathScope,
    /// Days in order.
    pub days: Vec<DayStats>,
    /// Consecutive days with app data.
    pub changes: Vec<DayChange>,
}

/// Drift per provenance kind with warm requests and per app path of those
/// requests (then a pooled summary when there are several).
pub fn drift(frame: &Frame, settings: &Settings) -> Vec<Drift> {
    let mut out = Vec::new();
    for p in provenances_with(frame, &[PhaseKind::Warm]) {
        for scope in path_scopes(frame, p, &[PhaseKind::Warm]) {
            out.push(one(frame, p, &scope, settings));
        }
    }
    out
}

/// Rows per UTC day, in day order.
fn by_day(frame: &Frame, rows: &[u32]) -> Vec<(i32, Vec<u32>)> {
    let mut parts = partition(rows, |i| frame.obs(i).day() as u32 as u64);
    parts.sort_unstable_by_key(|(d, _)| *d as u32 as i32);
    parts
        .into_iter()
        .map(|(d, r)| (d as u32 as i32, r))
        .collect()
}

fn one(frame: &Frame, prov: Provenance, scope: &Scope, settings: &Settings) -> Drift {
    let warm = by_day(frame, &scoped_rows(frame, prov, &[PhaseKind::Warm], scope));
    let ping = by_day(frame, &scoped_rows(frame, prov, &[PhaseKind::Ping], scope));
    // Each day's values, sorted once.
    let (app, app_counts): (Vec<Samples>, Vec<Counts>) = warm
        .iter()
        .map(|(_, r)| gather(frame, r, Metric::Ttft))
        .unzip();
    let ping_of = |d: i32| {
        ping.iter()
            .find(|(x, _)| *x == d)
            .map(|(_, r)| r.as_slice())
    };
    let pings: Vec<Option<(Samples, Counts)>> = warm
        .iter()
        .map(|(d, _)| ping_of(*d).map(|r| gather(frame, r, Metric::Rtt)))
        .collect();
    let days: Vec<DayStats> = warm
        .iter()
        .enumerate()
        .map(|(k, (d, rows))| {
            let mut all = rows.clone();
            all.extend_from_slice(ping_of(*d).unwrap_or(&[]));
            DayStats {
                day: format_day(*d),
                sessions: distinct_sessions(frame, &all),
                app: MetricSummary::new(Metric::Ttft, &app[k], app_counts[k], settings),
                ping: pings[k]
                    .as_ref()
                    .map(|(s, c)| MetricSummary::new(Metric::Rtt, s, *c, settings)),
            }
        })
        .collect();
    let label = format!("drift/{}/{}", prov.as_str(), scope.key());
    let none = Samples::default();
    let changes: Vec<DayChange> = (1..warm.len())
        .map(|k| {
            let (from, to) = (format_day(warm[k - 1].0), format_day(warm[k].0));
            let app = compare(&app[k], &app[k - 1], (&to, &from), Metric::Ttft, settings);
            let (later, earlier) = (
                pings[k].as_ref().map_or(&none, |p| &p.0),
                pings[k - 1].as_ref().map_or(&none, |p| &p.0),
            );
            let ping_change = Finding::difference(
                difference_stat(
                    later,
                    earlier,
                    Percentile::P50,
                    settings,
                    &format!("{label}/{from}/{to}/ping"),
                ),
                earlier
                    .percentile(Percentile::P50)
                    .map_or(0.0, |m| m.abs() * settings.noise_threshold()),
                later.len(),
                earlier.len(),
            );
            let network_explained = match (
                app.direction.is_change(),
                app.median_difference.point(),
                ping_change.estimate.estimate(),
            ) {
                (true, Some(a), Some(p)) => {
                    p.ci.excludes_zero()
                        && p.point.abs() >= 0.5 * a.abs()
                        && p.point.signum() == a.signum()
                }
                _ => false,
            };
            DayChange {
                from,
                to,
                app,
                ping_change,
                network_explained,
            }
        })
        .collect();
    Drift {
        provenance: prov,
        scope: String::new(),
        paths: scope.paths.clone(),
        days,
        changes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testutil::{frame, row, spread};
    use firsttoken_record::session::SampleRow;

    fn day(rows: &mut Vec<SampleRow>, date: &str, app: f64, ping: f64) {
        day_on(rows, "chat", date, app, ping);
    }

    fn day_on(rows: &mut Vec<SampleRow>, path: &str, date: &str, app: f64, ping: f64) {
        for t in spread(app, app * 0.05, 60) {
            let mut r = row("s", "warm", Some(path), Some(t));
            r.started_at = crate::testutil::utc(&format!("{date}T12:00:00Z"));
            rows.push(r);
        }
        for t in spread(ping, 2.0, 20) {
            let mut r = row("s", "ping", Some("ping"), None);
            r.sample.ttfb_ms = Some(t);
            r.started_at = crate::testutil::utc(&format!("{date}T12:00:00Z"));
            rows.push(r);
        }
    }

    #[test]
    fn a_different_mix_of_paths_is_not_drift() {
        // Day 1: only fast docs requests; day 2: fast docs and slow chat.
        // Pooled, day 2 looks far slower; per path nothing changed.
        let mut rows = Vec::new();
        day_on(&mut rows, "docs", "2026-11-29", 100.0, 40.0);
        day_on(&mut rows, "docs", "2026-11-30", 100.0, 40.0);
        day_on(&mut rows, "chat", "2026-11-30", 3000.0, 40.0);
        day_on(&mut rows, "chat", "2026-12-01", 3000.0, 40.0);
        let d = drift(&frame(&rows), &Settings::new(6));
        assert_eq!(d.len(), 3);
        for p in &d[..2] {
            assert_eq!(p.days.len(), 2, "{:?}", p.paths);
            assert_eq!(p.days[0].app.n, 60);
            assert_eq!(
                p.changes[0].app.direction,
                Direction::NoDetectableDifference
            );
        }
        assert_eq!(d[0].days[0].day, "2026-11-30", "chat's own days");
        assert!(d[2].paths.is_pooled());
        assert_eq!(d[2].changes[0].app.direction, Direction::Increase);
    }

    #[test]
    fn app_drift_next_to_ping() {
        let mut rows = Vec::new();
        day(&mut rows, "2026-11-29", 1000.0, 40.0);
        day(&mut rows, "2026-11-30", 1400.0, 41.0);
        day(&mut rows, "2026-12-01", 1400.0, 41.0);
        day(&mut rows, "2026-12-02", 2000.0, 640.0);
        let d = &drift(&frame(&rows), &Settings::new(6))[0];
        assert_eq!(d.days.len(), 4);
        assert_eq!(d.days[0].day, "2026-11-29");
        assert_eq!(d.changes.len(), 3);
        let c = &d.changes[0];
        assert_eq!(c.app.direction, Direction::Increase);
        assert!(!c.network_explained);
        // A 1 ms ping shift under 2 ms of spread, 20 pings a day: undecided.
        assert!(c.ping_change.direction.is_undecided(), "{c:?}");
        assert!(
            !d.changes[1].app.direction.is_change(),
            "{:?}",
            d.changes[1]
        );
        assert!(d.changes[2].network_explained, "{:?}", d.changes[2]);
        assert_eq!(d.changes[2].ping_change.direction, Direction::Increase);
        let one = drift(&frame(&rows[..80]), &Settings::new(6));
        assert_eq!(one[0].days.len(), 1);
        assert!(one[0].changes.is_empty());
    }
}

//! Per-session medians and pooled distributions across the sessions that
//! share the same grouping keys.
//!
//! Pooling puts every session's requests into one distribution: its
//! percentiles describe "a request of this kind", weighting sessions by
//! their size. The per-session medians beside it show whether the sessions
//! agree: a pooled median with session medians far apart means the
//! grouping hides a difference (another network, another day). Provenance
//! is always a key, so kinds never pool.

use firsttoken_record::session::Provenance;
use serde::Serialize;

use crate::estimate::{Percentile, Stat};
use crate::frame::{Frame, Metric, Obs, partition};
use crate::group::{GroupKey, GroupLabel, group_where};
use crate::samples::{Counts, MetricSummary, Samples, gather};
use crate::{Settings, percentile_sorted};

/// One session's median within a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionMedian {
    /// Session id.
    pub session_id: String,
    /// Requests (warm-ups excluded).
    pub requests: usize,
    /// Failed requests.
    pub failed: usize,
    /// Values behind the median.
    pub n: usize,
    /// The session's median with its bootstrap CI.
    pub median: Stat,
}

/// A group pooled across its sessions, with each session's median.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PooledGroup {
    /// Key values.
    pub label: GroupLabel,
    /// Provenance of every row.
    pub provenance: Provenance,
    /// Each session's median, in session order.
    pub sessions: Vec<SessionMedian>,
    /// The pooled distribution.
    pub pooled: MetricSummary,
    /// Median of the session medians that could be computed.
    pub median_of_session_medians: Option<f64>,
    /// Smallest session median.
    pub min_session_median: Option<f64>,
    /// Largest session median.
    pub max_session_median: Option<f64>,
    /// Keys of groups that behave differently whose values this group
    /// pools (`path`, `code_version`), because the grouping left them
    /// out: its label must say so. Empty when it pools none.
    pub pools: Vec<GroupKey>,
}

/// Pool `metric` over the sessions of each group of `keys`.
pub fn pooled(
    frame: &Frame,
    keys: &[GroupKey],
    metric: Metric,
    settings: &Settings,
) -> Vec<PooledGroup> {
    pooled_where(frame, keys, metric, settings, |_| true)
}

/// [`pooled`] over the rows that satisfy `keep`.
pub(crate) fn pooled_where(
    frame: &Frame,
    keys: &[GroupKey],
    metric: Metric,
    settings: &Settings,
    keep: impl Fn(&Obs) -> bool,
) -> Vec<PooledGroup> {
    group_where(frame, keys, keep)
        .into_iter()
        .map(|g| {
            let mut by_session = partition(&g.rows, |i| u64::from(frame.obs(i).session));
            by_session.sort_unstable_by_key(|(s, _)| *s);
            // Each session's values are gathered once; the pool is their union.
            let mut pool: Vec<f64> = Vec::new();
            let mut total = Counts::default();
            let sessions: Vec<SessionMedian> = by_session
                .iter()
                .map(|(session, rows)| {
                    let (s, c) = gather(frame, rows, metric);
                    pool.extend_from_slice(s.sorted());
                    total.requests += c.requests;
                    total.failed += c.failed;
                    SessionMedian {
                        session_id: frame.sessions[*session as usize].id.clone(),
                        requests: c.requests,
                        failed: c.failed,
                        n: s.len(),
                        median: s.stat(Percentile::P50, settings),
                    }
                })
                .collect();
            let mut medians: Vec<f64> = sessions.iter().filter_map(|s| s.median.point()).collect();
            medians.sort_by(f64::total_cmp);
            PooledGroup {
                pools: crate::group::pooled_keys(frame, &g.rows),
                pooled: MetricSummary::new(metric, &Samples::from_finite(pool), total, settings),
                median_of_session_medians: percentile_sorted(&medians, 50.0),
                min_session_median: medians.first().copied(),
                max_session_median: medians.last().copied(),
                sessions,
                label: g.label,
                provenance: g.provenance,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{meta, row};

    #[test]
    fn sessions_pool_within_their_group() {
        let mut a = meta("a", Provenance::Measured);
        a.labels.network = "office".into();
        let mut b = meta("b", Provenance::Measured);
        b.labels.network = "office".into();
        let mut rows = Vec::new();
        for i in 0..10 {
            rows.push(row("a", "warm", Some("chat"), Some(100.0 + f64::from(i))));
            rows.push(row("b", "warm", Some("chat"), Some(200.0 + f64::from(i))));
        }
        rows.push(row("b", "warm", Some("chat"), Some(999.0)));
        let frame = Frame::from_rows(&rows, &[a, b]).unwrap();
        let p = pooled(
            &frame,
            &[GroupKey::Network],
            Metric::Ttft,
            &Settings::new(1),
        );
        assert_eq!(p.len(), 1);
        let g = &p[0];
        assert_eq!(g.sessions.len(), 2);
        assert_eq!(g.sessions[0].session_id, "a");
        assert_eq!(g.sessions[0].median.point(), Some(104.5));
        assert_eq!(g.sessions[1].median.point(), Some(205.0));
        assert_eq!(g.pooled.n, 21);
        // numpy.percentile(list(range(100,110)) + list(range(200,210)) + [999], 50) = 200
        assert_eq!(g.pooled.p50.point(), Some(200.0));
        assert_eq!(g.median_of_session_medians, Some(154.75));
        assert_eq!(
            (g.min_session_median, g.max_session_median),
            (Some(104.5), Some(205.0))
        );
    }
}

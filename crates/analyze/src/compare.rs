//! Comparing two samples (sessions or groups): differences of the medians
//! and of the p95 with bootstrap CIs ([`crate::bootstrap`]), a Mann–Whitney
//! U test and Cliff's delta ([`crate::rank`]), and a verdict.
//!
//! The [`Direction`] is an increase or a decrease only when three things
//! hold at once (a deliberately conservative rule, as in hyperfine's and
//! criterion's "change within noise threshold"): the rank test is
//! significant (p < α, default 0.05), the CI of the median difference
//! excludes 0, and the median moved by more than the noise threshold
//! (default 5 %) relative to the baseline `b`. Otherwise, when the interval
//! lies inside the material band (the noise threshold of `b`'s median): no
//! detectable difference if it reaches 0, a difference too small to matter
//! if it excludes 0; inconclusive when it reaches past the band — or too
//! few samples when there is no interval, or when the samples are so few
//! that even completely separated ones could not pass the rank test
//! ([`rank::smallest_p`]; 3 against 3, say). Whether an
//! increase is better or worse depends on the metric
//! ([`Comparison::worse`]); the words are the report's.

use serde::Serialize;

use crate::estimate::{Percentile, Stat};
use crate::finding::Direction;
use crate::frame::{Frame, Metric, PhaseKind};
use crate::group::Group;
use crate::rank::{self, CliffsDelta, MannWhitney, cliffs_delta, mann_whitney};
use crate::samples::Samples;
use crate::{AnalyzeError, Settings, bootstrap};

/// `a` against the baseline `b`: both medians and p95s, their differences
/// (a − b) with CIs, the rank test, the effect size and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Name of the compared sample.
    pub a: String,
    /// Name of the baseline.
    pub b: String,
    /// What was compared.
    pub metric: Metric,
    /// Values in `a`.
    pub n_a: usize,
    /// Values in `b`.
    pub n_b: usize,
    /// Median of `a`.
    pub median_a: Stat,
    /// Median of `b`.
    pub median_b: Stat,
    /// Median of `a` − median of `b`.
    pub median_difference: Stat,
    /// (median a − median b) / median b.
    pub relative_median_difference: Option<f64>,
    /// p95 of `a`.
    pub p95_a: Stat,
    /// p95 of `b`.
    pub p95_b: Stat,
    /// p95 of `a` − p95 of `b`.
    pub p95_difference: Stat,
    /// Mann–Whitney U test of `a` against `b`.
    pub mann_whitney: Option<MannWhitney>,
    /// Cliff's delta of `a` against `b` (positive: `a` tends to be larger).
    pub cliffs_delta: Option<CliffsDelta>,
    /// Significance level used.
    pub alpha: f64,
    /// Relative median change below which nothing counts as a change.
    pub noise_threshold: f64,
    /// The material band (absolute: the noise threshold times b's median):
    /// an unconfirmed difference inside it is "no detectable difference"
    /// (its interval reaches 0) or "too small to matter" (it excludes 0),
    /// one reaching past it "inconclusive".
    pub material: f64,
    /// What the median difference supports, under the rule above.
    pub direction: Direction,
}

impl Comparison {
    /// True when `a` is detectably worse than `b`: slower for a latency,
    /// lower for a throughput.
    pub fn worse(&self) -> bool {
        match self.direction {
            Direction::Increase => !self.metric.higher_is_better(),
            Direction::Decrease => self.metric.higher_is_better(),
            _ => false,
        }
    }

    /// True when `a` is detectably better than `b`.
    pub fn better(&self) -> bool {
        self.direction.is_change() && !self.worse()
    }
}

/// Compare `a` (named `names.0`) against the baseline `b` (`names.1`).
/// Bootstrap draws are seeded from the settings' seed and the names.
pub fn compare(
    a: &Samples,
    b: &Samples,
    names: (&str, &str),
    metric: Metric,
    settings: &Settings,
) -> Comparison {
    let label = format!("compare/{}/{}/{}", names.0, names.1, metric.name());
    let median_difference =
        bootstrap::difference_stat(a, b, Percentile::P50, settings, &format!("{label}/p50"));
    let p95_difference =
        bootstrap::difference_stat(a, b, Percentile::P95, settings, &format!("{label}/p95"));
    let median_a = a.stat(Percentile::P50, settings);
    let median_b = b.stat(Percentile::P50, settings);
    let relative = match (median_a.point(), median_b.point()) {
        (Some(x), Some(y)) if y != 0.0 => Some((x - y) / y.abs()),
        _ => None,
    };
    let mw = mann_whitney(a, b);
    let cd = cliffs_delta(a, b);
    let significant = mw.is_some_and(|m| m.p_value < settings.alpha())
        && median_difference.ci().is_some_and(|c| c.excludes_zero())
        && relative.is_some_and(|r| r.abs() > settings.noise_threshold());
    // The material band: the noise threshold of the baseline's median.
    let material = median_b
        .point()
        .map_or(0.0, |m| m.abs() * settings.noise_threshold());
    let direction = match Direction::of(&median_difference, 0.0, 0.0, material) {
        // No data of these sizes can pass the rank test: say so, rather than
        // "no detectable difference" beside an interval that excludes zero.
        d if d != Direction::TooFewSamples
            && rank::smallest_p(a.len(), b.len()) >= settings.alpha() =>
        {
            Direction::TooFewSamples
        }
        // An interval clear of zero that the rank test or the noise
        // threshold does not confirm: inside the band, a difference too
        // small to matter (the interval excludes zero: never "no detectable
        // difference"); reaching past it, inconclusive.
        d if d.is_change() && !significant => match median_difference.ci() {
            Some(c) if c.lower >= -material && c.upper <= material => Direction::TooSmallToMatter,
            _ => Direction::Inconclusive,
        },
        d => d,
    };
    Comparison {
        a: names.0.to_string(),
        b: names.1.to_string(),
        metric,
        n_a: a.len(),
        n_b: b.len(),
        median_a,
        median_b,
        median_difference,
        relative_median_difference: relative,
        p95_a: a.stat(Percentile::P95, settings),
        p95_b: b.stat(Percentile::P95, settings),
        p95_difference,
        mann_whitney: mw,
        cliffs_delta: cd,
        alpha: settings.alpha(),
        material,
        noise_threshold: settings.noise_threshold(),
        direction,
    }
}

/// Compare two groups of a frame on `metric`. Groups of different
/// provenance are never compared: `Err(MixedProvenance)`.
pub fn compare_groups(
    frame: &Frame,
    a: &Group,
    b: &Group,
    metric: Metric,
    settings: &Settings,
) -> Result<Comparison, AnalyzeError> {
    if a.provenance != b.provenance {
        return Err(AnalyzeError::MixedProvenance {
            a: a.label.to_string(),
            b: b.label.to_string(),
        });
    }
    let sa = crate::samples::of_rows(frame, &a.rows, metric);
    let sb = crate::samples::of_rows(frame, &b.rows, metric);
    Ok(compare(
        &sa,
        &sb,
        (&a.label.to_string(), &b.label.to_string()),
        metric,
        settings,
    ))
}

/// Compare session `a` against session `b` on `metric`, per path: one
/// comparison for each path (stored `path` column) both sessions have rows
/// on, labelled `a · path chat`, then — when there are several — the
/// comparison of all their rows, labelled `… · all paths pooled` (a
/// summary: a change on one path can vanish in it). Over the rows of
/// `phase` (all phases when `None`).
pub fn compare_sessions_per_path(
    frame: &Frame,
    a: &str,
    b: &str,
    slice: Slice,
    metric: Metric,
    settings: &Settings,
) -> Result<Vec<PathComparison>, AnalyzeError> {
    let pooled = compare_sessions(frame, a, b, slice, metric, settings)?;
    let paths_of = |id: &str| -> Vec<u32> {
        let mut v: Vec<u32> = (0..frame.len() as u32)
            .map(|i| frame.obs(i))
            .filter(|o| frame.session_id(o) == id && slice.keeps(o))
            .map(|o| o.path)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (pa, pb) = (paths_of(a), paths_of(b));
    let mut common: Vec<u32> = pa.into_iter().filter(|p| pb.contains(p)).collect();
    common.sort_by(|x, y| frame.str(*x).cmp(&frame.str(*y)));
    let mut out = Vec::new();
    let at = slice.label();
    for &p in &common {
        let rows = |id: &str| -> Vec<u32> {
            (0..frame.len() as u32)
                .filter(|&i| {
                    let o = frame.obs(i);
                    frame.session_id(o) == id && o.path == p && slice.keeps(o)
                })
                .collect()
        };
        let name = frame.str(p).unwrap_or("-");
        let sa = crate::samples::of_rows(frame, &rows(a), metric);
        let sb = crate::samples::of_rows(frame, &rows(b), metric);
        out.push(PathComparison {
            slice,
            path: frame.str(p).map(str::to_string),
            comparison: compare(
                &sa,
                &sb,
                (
                    &format!("{a} · path {name} · {at}"),
                    &format!("{b} · path {name} · {at}"),
                ),
                metric,
                settings,
            ),
        });
    }
    if common.len() != 1 {
        let mut c = pooled;
        if common.len() > 1 {
            c.a = format!("{a} · all paths pooled · {at}");
            c.b = format!("{b} · all paths pooled · {at}");
        }
        out.push(PathComparison {
            slice,
            path: None,
            comparison: c,
        });
    }
    Ok(out)
}

/// The rows of each session a comparison takes: one phase and, in the
/// concurrency phase, one level. Phases and levels behave differently, so
/// a comparison never pools them ([`crate::group`]'s rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Slice {
    /// The phase.
    pub phase: PhaseKind,
    /// The concurrency level, in the concurrency phase.
    pub concurrency: Option<u32>,
}

impl Slice {
    /// A phase's rows (every level of it).
    pub fn phase(phase: PhaseKind) -> Slice {
        Slice {
            phase,
            concurrency: None,
        }
    }

    /// `warm`, `c=3`.
    pub fn label(&self) -> String {
        match self.concurrency {
            Some(k) => format!("c={k}"),
            None => self.phase.as_str().to_string(),
        }
    }

    pub(crate) fn keeps(&self, o: &crate::frame::Obs) -> bool {
        o.phase == self.phase && self.concurrency.is_none_or(|k| o.concurrency == k)
    }
}

/// The app slices `frame` has counted rows in, in headline order (as
/// [`common_slices`], for one set of rows).
pub fn slices(frame: &Frame) -> Vec<Slice> {
    slices_where(frame, |_| true)
}

fn slices_where(frame: &Frame, keep: impl Fn(&crate::frame::Obs) -> bool) -> Vec<Slice> {
    let mut v: Vec<Slice> = (0..frame.len() as u32)
        .map(|i| frame.obs(i))
        .filter(|o| keep(o) && o.phase.is_app() && o.counted())
        .map(|o| Slice {
            phase: o.phase,
            concurrency: (o.phase == PhaseKind::Concurrency && o.concurrency > 0)
                .then_some(o.concurrency),
        })
        .collect();
    v.sort_by_key(|s| (crate::group::phase_rank(s.phase), s.concurrency));
    v.dedup();
    v
}

/// The app slices both sessions `a` and `b` have rows in, in headline order
/// (warm, fresh, each concurrency level, rate, cold): every phase a
/// comparison can take without pooling. Direct requests (the provider's,
/// not the app's) and pings are left out.
pub fn common_slices(frame: &Frame, a: &str, b: &str) -> Vec<Slice> {
    let of = |id: &str| slices_where(frame, |o| frame.session_id(o) == id);
    let theirs = of(b);
    of(a).into_iter().filter(|s| theirs.contains(s)).collect()
}

/// One comparison of [`compare_sessions_per_path`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathComparison {
    /// The phase (and level) compared.
    pub slice: Slice,
    /// The path compared; `None` for the pooled summary (or when the
    /// sessions share no path).
    pub path: Option<String>,
    /// The comparison.
    pub comparison: Comparison,
}

/// What a comparison's line means for a gate (`check --against`): a path
/// that got slower fails, the pooled summary beside per-path verdicts is
/// only a note (the reading side decides which: `firsttoken_read::compare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Not slower.
    Pass,
    /// Slower.
    Fail,
    /// The pooled summary beside per-path verdicts: decides nothing.
    Note,
}

/// Compare session `a` against session `b` on `metric`, over the rows of
/// `slice` (one phase, or one concurrency level).
/// Pools the sessions' paths: [`compare_sessions_per_path`] does not.
pub fn compare_sessions(
    frame: &Frame,
    a: &str,
    b: &str,
    slice: Slice,
    metric: Metric,
    settings: &Settings,
) -> Result<Comparison, AnalyzeError> {
    let pick = |id: &str| -> Result<
        (Vec<u32>, Option<firsttoken_record::session::Provenance>),
        AnalyzeError,
    > {
        let six = frame
            .sessions
            .iter()
            .position(|s| s.id == id)
            .ok_or_else(|| AnalyzeError::UnknownSession { id: id.to_string() })?
            as u32;
        let mut prov = None;
        let rows = (0..frame.len() as u32)
            .filter(|&i| {
                let o = frame.obs(i);
                o.session == six && slice.keeps(o)
            })
            .inspect(|&i| prov = Some(frame.obs(i).provenance))
            .collect();
        Ok((rows, prov))
    };
    let (ra, pa) = pick(a)?;
    let (rb, pb) = pick(b)?;
    if let (Some(x), Some(y)) = (pa, pb)
        && x != y
    {
        return Err(AnalyzeError::MixedProvenance {
            a: format!("{a} ({})", x.as_str()),
            b: format!("{b} ({})", y.as_str()),
        });
    }
    let sa = crate::samples::of_rows(frame, &ra, metric);
    let sb = crate::samples::of_rows(frame, &rb, metric);
    Ok(compare(&sa, &sb, (a, b), metric, settings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{meta, row};
    use firsttoken_record::session::Provenance;

    fn spread(center: f64, n: usize) -> Samples {
        // Deterministic values around `center`, ±10 %.
        Samples::new(
            (0..n)
                .map(|i| center * (0.9 + 0.2 * (i as f64 * 0.618_034).fract()))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn clear_difference_is_faster_or_slower() {
        let s = Settings::new(7);
        let fast = spread(800.0, 60);
        let slow = spread(1000.0, 60);
        let c = compare(&fast, &slow, ("new", "old"), Metric::Ttft, &s);
        assert_eq!(c.direction, Direction::Decrease, "{c:?}");
        assert!(c.better() && !c.worse());
        assert!(c.median_difference.ci().unwrap().upper < 0.0);
        let c = compare(&slow, &fast, ("old", "new"), Metric::Ttft, &s);
        assert_eq!(c.direction, Direction::Increase);
        assert!(c.worse());
        // Higher throughput is better.
        let c = compare(&slow, &fast, ("a", "b"), Metric::TokensPerS, &s);
        assert_eq!(c.direction, Direction::Increase);
        assert!(c.better());
    }

    /// Issue 10: +990 ms on chat read as "no significant change" because
    /// the two versions' paths were pooled with a busy, unchanged docs path.
    #[test]
    fn sessions_are_compared_per_path() {
        let mut rows = Vec::new();
        for (id, chat) in [("v1", 1000.0), ("v2", 1990.0)] {
            for (i, t) in spread(chat, 12).sorted().iter().enumerate() {
                let mut r = row(id, "warm", Some("chat"), Some(*t));
                r.sample.seq = i as u64;
                rows.push(r);
            }
            for t in spread(300.0, 200).sorted() {
                rows.push(row(id, "warm", Some("docs"), Some(*t)));
            }
        }
        let sessions = [
            meta("v1", Provenance::Measured),
            meta("v2", Provenance::Measured),
        ];
        let f = Frame::from_rows(&rows, &sessions).unwrap();
        let s = Settings::new(3);
        let pooled = compare_sessions(
            &f,
            "v2",
            "v1",
            Slice::phase(PhaseKind::Warm),
            Metric::Ttft,
            &s,
        )
        .unwrap();
        assert!(
            !pooled.worse(),
            "pooled, the chat change vanishes: {pooled:?}"
        );
        let per = compare_sessions_per_path(
            &f,
            "v2",
            "v1",
            Slice::phase(PhaseKind::Warm),
            Metric::Ttft,
            &s,
        )
        .unwrap();
        assert_eq!(per.len(), 3);
        assert_eq!(per[0].path.as_deref(), Some("chat"));
        assert!(per[0].comparison.worse(), "{:?}", per[0]);
        assert_eq!(per[0].comparison.a, "v2 · path chat · warm");
        assert_eq!(
            per[1].comparison.direction,
            Direction::NoDetectableDifference
        );
        assert_eq!(per[2].path, None);
        assert_eq!(per[2].comparison.a, "v2 · all paths pooled · warm");
    }

    #[test]
    fn small_shift_is_within_noise() {
        let s = Settings::new(7);
        // 2 % apart: significant by the rank test with this many values, but
        // below the 5 % noise threshold.
        let a = spread(1020.0, 2000);
        let b = spread(1000.0, 2000);
        let c = compare(&a, &b, ("a", "b"), Metric::Ttft, &s);
        assert!(c.mann_whitney.unwrap().p_value < 0.05);
        // Issue 24, defect 5: its interval excludes zero, so this is a
        // difference too small to matter, not "no detectable difference".
        assert!(c.median_difference.ci().unwrap().excludes_zero(), "{c:?}");
        assert_eq!(c.direction, Direction::TooSmallToMatter, "{c:?}");
        let c = compare(&b, &b, ("b", "b"), Metric::Ttft, &s);
        assert_eq!(c.direction, Direction::NoDetectableDifference);
        let one = Samples::new(vec![1.0]).unwrap();
        let c = compare(&one, &b, ("one", "b"), Metric::Ttft, &s);
        assert_eq!(c.direction, Direction::TooFewSamples);
    }

    #[test]
    fn groups_of_different_provenance_are_not_compared() {
        let sessions = [
            meta("m", Provenance::Measured),
            meta("e", Provenance::Emulated),
        ];
        let mut rows = Vec::new();
        for i in 0..30 {
            rows.push(row("m", "warm", Some("chat"), Some(100.0 + f64::from(i))));
            let mut r = row("e", "warm", Some("chat"), Some(200.0 + f64::from(i)));
            r.provenance = Provenance::Emulated;
            rows.push(r);
        }
        let frame = Frame::from_rows(&rows, &sessions).unwrap();
        let s = Settings::new(1);
        assert!(matches!(
            compare_sessions(
                &frame,
                "m",
                "e",
                Slice::phase(PhaseKind::Warm),
                Metric::Ttft,
                &s
            ),
            Err(AnalyzeError::MixedProvenance { .. })
        ));
        let groups = crate::group::group(&frame, &[crate::group::GroupKey::Path]);
        assert_eq!(groups.len(), 2, "provenance splits the groups");
        assert!(compare_groups(&frame, &groups[0], &groups[1], Metric::Ttft, &s).is_err());
        assert!(
            compare_sessions(
                &frame,
                "m",
                "x",
                Slice::phase(PhaseKind::Warm),
                Metric::Ttft,
                &s
            )
            .is_err()
        );
        let c = compare_sessions(
            &frame,
            "m",
            "m",
            Slice::phase(PhaseKind::Warm),
            Metric::Ttft,
            &s,
        )
        .unwrap();
        assert!(c.direction.is_undecided(), "{c:?}");
    }
}

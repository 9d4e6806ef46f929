//! The engine's own clock joined per request (issue 28), and connections
//! that are not what they claim.
//!
//! An inference engine that reports its own prefill time in the stream
//! (llama.cpp's `timings.prompt_ms`: from its slot starting the prompt to
//! the first sampled token) splits each request's TTFT in two: **engine
//! prefill**, and **the rest** — TTFT − prefill: HTTP parsing, chat
//! templating, tokenization, any wait for a free slot, the network and the
//! client. Both come from different clocks (the engine's and firsttoken's)
//! but are durations, so no offset is needed; the rest is never negative
//! unless the engine's clock runs fast, and a negative value is kept (it is
//! data, not an error).
//!
//! - [`EngineSplit`]: per provenance, setup, path, phase and concurrency
//!   level, the median TTFT, prefill and rest with exact bootstrap CIs,
//!   and the rest's p10 and p90 (its spread);
//! - [`EngineWall`]: per path with concurrency levels, the rest's median
//!   change against the baseline (c=1, else warm) with a seeded bootstrap
//!   CI and the prefill's median ratio; judged with the span join's rule
//!   ([`WallReason`]): the rest rising while prefill stays flat is
//!   requests waiting for the engine (a queue), not the engine slowing;
//! - from spans: an engine that reports its own times in a span per
//!   request (vLLM's `llm_request`: `gen_ai.latency.time_in_queue`,
//!   `time_in_model_prefill`, `time_to_first_token`, … in seconds) is
//!   joined by trace id ([`SpanEngine`], through [`crate::attach_traces`]);
//!   its queue wait and its own TTFT are then split out too;
//! - [`Reconnections`]: per path, warm requests that used a new connection
//!   (the server closed the one they were to reuse, whatever its
//!   `Keep-Alive` header said), with the stale-connection retries among
//!   them and their TTFT beside the truly warm requests'. Such requests are
//!   left out of every warm figure ([`crate::Frame`]).
//!
//! Rows of different provenance kinds or code versions are never pooled.

use std::collections::{BTreeMap, HashMap};

use firsttoken_record::session::Provenance;
use serde::Serialize;

use crate::Settings;
use crate::bootstrap::{difference_stat, ratio_stat};
use crate::estimate::{Percentile, Stat};
use crate::finding::Finding;
use crate::frame::{Frame, FxBuild, Obs, PhaseKind};
use crate::samples::Samples;
use crate::traces::{TraceScope, WAIT_DOMINANCE, WallReason, judge_wall};

/// Whose clock an engine figure comes from; figures of two clocks are
/// never pooled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineClock {
    /// llama.cpp's `timings` in the stream's last chunk.
    LlamaCppStream,
    /// vLLM's per-request span (`gen_ai.latency.*` attributes).
    VllmSpan,
}

/// An engine's own times of one request, from its span, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanEngine {
    /// Waiting for the scheduler (`gen_ai.latency.time_in_queue`).
    pub queue_ms: Option<f64>,
    /// Prefill (`gen_ai.latency.time_in_model_prefill`).
    pub prefill_ms: f64,
    /// The engine's own TTFT, from its arrival
    /// (`gen_ai.latency.time_to_first_token`).
    pub ttft_ms: Option<f64>,
    /// Decode (`gen_ai.latency.time_in_model_decode`).
    pub decode_ms: Option<f64>,
    /// End to end (`gen_ai.latency.e2e`).
    pub e2e_ms: Option<f64>,
}

impl SpanEngine {
    /// The times of a span carrying vLLM's latency attributes (seconds);
    /// `None` without a usable `gen_ai.latency.time_in_model_prefill`. A
    /// value that is not a finite non-negative number is left out.
    pub fn of(attributes: &BTreeMap<String, serde_json::Value>) -> Option<SpanEngine> {
        let ms = |k: &str| {
            attributes
                .get(k)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v * 1e3)
        };
        Some(SpanEngine {
            queue_ms: ms("gen_ai.latency.time_in_queue"),
            prefill_ms: ms("gen_ai.latency.time_in_model_prefill")?,
            ttft_ms: ms("gen_ai.latency.time_to_first_token"),
            decode_ms: ms("gen_ai.latency.time_in_model_decode"),
            e2e_ms: ms("gen_ai.latency.e2e"),
        })
    }
}

/// Engine times from spans, by (frame session index, sample seq).
pub type SpanEngines = HashMap<(u32, u64), SpanEngine>;

/// One group's TTFT split into engine prefill and the rest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineSplit {
    /// Provenance, setup and path.
    #[serde(flatten)]
    pub scope: TraceScope,
    /// Whose clock the prefill comes from.
    pub clock: EngineClock,
    /// The protocol phase.
    pub phase: PhaseKind,
    /// Concurrency level (concurrency phase only).
    pub concurrency: Option<u32>,
    /// Warm requests that used a new connection, labelled apart from the
    /// warm requests that reused one.
    pub reconnected: bool,
    /// Successful counted requests of the group.
    pub requests: usize,
    /// Of which carried the engine's timing (the figures' n).
    pub timed_by_engine: usize,
    /// Median TTFT, ms, of those.
    pub ttft: Stat,
    /// Median engine prefill, ms.
    pub prefill: Stat,
    /// Median of TTFT − prefill per request, ms.
    pub rest: Stat,
    /// 10th and 90th percentiles of TTFT − prefill, ms (`None` under 10
    /// requests).
    pub rest_p10_p90: Option<(f64, f64)>,
    /// Median queue wait the engine itself reports (part of the rest),
    /// ms; `None` when its clock has none (llama.cpp's stream).
    pub engine_queue: Option<Stat>,
    /// Median of TTFT − the engine's own TTFT (what the engine's report
    /// cannot see: HTTP, templating before its arrival stamp, network,
    /// client), ms; `None` when it reports no TTFT.
    pub outside_engine: Option<Stat>,
}

/// One concurrency level against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineLevel {
    /// Requests in flight together.
    pub concurrency: u32,
    /// Requests with the engine's timing.
    pub n: usize,
    /// Median TTFT − prefill, ms.
    pub rest: Stat,
    /// Median prefill, ms.
    pub prefill: Stat,
    /// Rest median − the baseline's, ms (n: this level, baseline); its
    /// material band is the noise threshold × the baseline TTFT median.
    pub rest_change: Finding,
    /// Prefill median ÷ the baseline's, against 1 with the noise threshold.
    pub prefill_ratio: Finding,
}

/// The concurrency wall of one path, split by the engine's clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineWall {
    /// Provenance, setup and path.
    #[serde(flatten)]
    pub scope: TraceScope,
    /// Whose clock the prefill comes from.
    pub clock: EngineClock,
    /// `c=1` or `warm`: what each level is compared with.
    pub baseline: &'static str,
    /// Baseline median TTFT − prefill, ms.
    pub baseline_rest: Stat,
    /// Baseline median prefill, ms.
    pub baseline_prefill: Stat,
    /// Levels above the baseline, increasing.
    pub levels: Vec<EngineLevel>,
    /// Judged at the highest level: [`WallReason::WaitedForWorker`] reads
    /// "requests waited outside prefill (a queue for the engine)".
    pub reason: WallReason,
}

/// Warm requests that had to open a new connection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reconnections {
    /// Provenance, setup and path.
    #[serde(flatten)]
    pub scope: TraceScope,
    /// Successful counted warm requests.
    pub warm: usize,
    /// Of which used a new connection.
    pub new_connections: usize,
    /// Of those, how many were sent on the reused connection first and
    /// found it closed (the stale keep-alive retry).
    pub stale_retries: usize,
    /// Median TTFT of the warm requests that reused their connection, ms.
    pub reused_ttft: Stat,
    /// Median TTFT of those on a new connection, ms.
    pub new_connection_ttft: Stat,
}

/// Everything the engine's clock and the connections tell.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EngineTimes {
    /// Per group, TTFT split into prefill and the rest.
    pub splits: Vec<EngineSplit>,
    /// Per path with concurrency levels.
    pub walls: Vec<EngineWall>,
    /// Per path whose warm requests used new connections.
    pub reconnections: Vec<Reconnections>,
}

impl EngineTimes {
    /// True when there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.splits.is_empty() && self.walls.is_empty() && self.reconnections.is_empty()
    }
}

/// The scope of a row: provenance, setup (when the frame holds several
/// code versions) and path.
fn scope_of(frame: &Frame, o: &Obs, versions: usize) -> TraceScope {
    let version = frame.str(frame.label(o, 1)).unwrap_or_default();
    TraceScope {
        provenance: o.provenance,
        scope: if versions > 1 {
            format!("code_version={version}")
        } else {
            String::new()
        },
        path: frame.str(o.path).map(str::to_string),
    }
}

fn median(v: &[f64], settings: &Settings) -> Stat {
    Samples::new(v.to_vec())
        .unwrap_or_default()
        .stat(Percentile::P50, settings)
}

/// The group key of a split.
type SplitKey = (TraceScope, EngineClock, PhaseKind, Option<u32>, bool);

/// [`SplitKey`] with its scope as an index into the scopes seen.
type IndexKey = (usize, EngineClock, PhaseKind, Option<u32>, bool);

/// (TTFT, prefill) of each request with both, and what else its engine
/// said.
#[derive(Default)]
struct Pairs {
    requests: usize,
    ttft: Vec<f64>,
    prefill: Vec<f64>,
    queue: Vec<f64>,
    outside: Vec<f64>,
}

impl Pairs {
    fn rest(&self) -> Vec<f64> {
        self.ttft
            .iter()
            .zip(&self.prefill)
            .map(|(t, p)| t - p)
            .collect()
    }
}

/// The engine's split, walls and reconnections of `frame`, from the
/// engine timing its streams carried.
pub fn engine_times(frame: &Frame, settings: &Settings) -> EngineTimes {
    engine_times_with(frame, &SpanEngines::new(), settings)
}

/// As [`engine_times`], with the engine times of `spans` for the requests
/// whose stream carried none.
pub fn engine_times_with(frame: &Frame, spans: &SpanEngines, settings: &Settings) -> EngineTimes {
    let mut versions: Vec<u32> = frame
        .sessions
        .iter()
        .filter_map(|s| s.labels.map(|l| l[1]))
        .collect();
    versions.sort_unstable();
    versions.dedup();
    let versions = versions.len();
    // Rows are grouped under a small scope index (a scope's strings are
    // built once, not per row), then keyed by their scope for the output's
    // order.
    let mut index: HashMap<(Provenance, u32, u32), usize, FxBuild> = HashMap::default();
    let mut scopes: Vec<TraceScope> = Vec::new();
    // Requests no engine timed, per group, to count them in `requests`.
    let mut untimed: HashMap<(usize, PhaseKind, Option<u32>, bool), usize, FxBuild> =
        HashMap::default();
    let mut by_index: HashMap<IndexKey, Pairs, FxBuild> = HashMap::default();
    let mut warm_by_index: HashMap<usize, (Vec<f64>, Vec<f64>, usize), FxBuild> =
        HashMap::default();
    for o in frame.obs.iter() {
        if !o.phase.is_app() || !o.timed() || o.ttft.is_nan() {
            continue;
        }
        let version = if versions > 1 { frame.label(o, 1) } else { 0 };
        let scope = *index
            .entry((o.provenance, version, o.path))
            .or_insert_with(|| {
                let s = scope_of(frame, o, versions);
                scopes.iter().position(|x| *x == s).unwrap_or_else(|| {
                    scopes.push(s);
                    scopes.len() - 1
                })
            });
        if o.phase == PhaseKind::Warm {
            let w = warm_by_index.entry(scope).or_default();
            if o.fresh_connection {
                w.1.push(o.ttft);
                w.2 += usize::from(o.retried_stale);
            } else {
                w.0.push(o.ttft);
            }
        }
        let level = (o.concurrency > 0).then_some(o.concurrency);
        let span = spans.get(&(o.session, o.seq));
        let (clock, prefill) = match span {
            _ if !o.prefill.is_nan() => (EngineClock::LlamaCppStream, o.prefill),
            Some(e) => (EngineClock::VllmSpan, e.prefill_ms),
            None => {
                *untimed
                    .entry((scope, o.phase, level, o.reconnected_warm()))
                    .or_default() += 1;
                continue;
            }
        };
        let g = by_index
            .entry((scope, clock, o.phase, level, o.reconnected_warm()))
            .or_default();
        g.requests += 1;
        g.ttft.push(o.ttft);
        g.prefill.push(prefill);
        if let Some(e) = span.filter(|_| clock == EngineClock::VllmSpan) {
            g.queue.extend(e.queue_ms);
            g.outside.extend(e.ttft_ms.map(|t| o.ttft - t));
        }
    }
    // Requests of a group the engine did not time count in its
    // `requests`; a group no engine timed is no engine figure.
    let groups: BTreeMap<SplitKey, Pairs> = by_index
        .into_iter()
        .map(|((scope, clock, phase, level, reconnected), mut g)| {
            g.requests += untimed
                .get(&(scope, phase, level, reconnected))
                .copied()
                .unwrap_or(0);
            ((scopes[scope].clone(), clock, phase, level, reconnected), g)
        })
        .collect();
    let warm: BTreeMap<TraceScope, (Vec<f64>, Vec<f64>, usize)> = warm_by_index
        .into_iter()
        .map(|(scope, w)| (scopes[scope].clone(), w))
        .collect();
    let splits = groups
        .iter()
        .map(|((scope, clock, phase, level, reconnected), g)| {
            let rest = g.rest();
            EngineSplit {
                scope: scope.clone(),
                clock: *clock,
                phase: *phase,
                concurrency: *level,
                reconnected: *reconnected,
                requests: g.requests,
                timed_by_engine: g.ttft.len(),
                ttft: median(&g.ttft, settings),
                prefill: median(&g.prefill, settings),
                rest_p10_p90: (rest.len() >= 10).then(|| {
                    (
                        crate::percentile(&rest, 10.0).unwrap_or(f64::NAN),
                        crate::percentile(&rest, 90.0).unwrap_or(f64::NAN),
                    )
                }),
                rest: median(&rest, settings),
                engine_queue: (!g.queue.is_empty()).then(|| median(&g.queue, settings)),
                outside_engine: (!g.outside.is_empty()).then(|| median(&g.outside, settings)),
            }
        })
        .collect();
    let reconnections = warm
        .into_iter()
        .filter(|(_, (_, fresh, _))| !fresh.is_empty())
        .map(|(scope, (reused, fresh, stale))| Reconnections {
            scope,
            warm: reused.len() + fresh.len(),
            new_connections: fresh.len(),
            stale_retries: stale,
            reused_ttft: median(&reused, settings),
            new_connection_ttft: median(&fresh, settings),
        })
        .collect();
    EngineTimes {
        splits,
        walls: walls(&groups, settings),
        reconnections,
    }
}

/// One wall per scope with concurrency levels above a baseline.
fn walls(groups: &BTreeMap<SplitKey, Pairs>, settings: &Settings) -> Vec<EngineWall> {
    let mut scopes: BTreeMap<(&TraceScope, EngineClock), BTreeMap<u32, &Pairs>> = BTreeMap::new();
    for ((scope, clock, phase, level, _), g) in groups {
        if let (PhaseKind::Concurrency, Some(k)) = (phase, level) {
            scopes.entry((scope, *clock)).or_default().insert(*k, g);
        }
    }
    let mut out = Vec::new();
    for ((scope, clock), mut levels) in scopes {
        let warm = groups.get(&(scope.clone(), clock, PhaseKind::Warm, None, false));
        let (baseline, base) = match (levels.remove(&1), warm) {
            (Some(b), _) => ("c=1", b),
            (None, Some(w)) => ("warm", w),
            (None, None) => continue,
        };
        if levels.is_empty() {
            continue;
        }
        let (b_rest, b_prefill) = (
            Samples::new(base.rest()).unwrap_or_default(),
            Samples::new(base.prefill.clone()).unwrap_or_default(),
        );
        let b_ttft = Samples::new(base.ttft.clone()).unwrap_or_default();
        let band = b_ttft
            .percentile(Percentile::P50)
            .map_or(0.0, |m| m.abs() * settings.noise_threshold());
        let label = format!(
            "engine/wall/{}/{}/{}",
            scope.provenance.as_str(),
            scope.scope,
            scope.path.as_deref().unwrap_or("-")
        );
        let levels: Vec<EngineLevel> = levels
            .into_iter()
            .map(|(k, g)| {
                let rest = Samples::new(g.rest()).unwrap_or_default();
                let prefill = Samples::new(g.prefill.clone()).unwrap_or_default();
                EngineLevel {
                    concurrency: k,
                    n: g.ttft.len(),
                    rest: rest.stat(Percentile::P50, settings),
                    prefill: prefill.stat(Percentile::P50, settings),
                    rest_change: Finding::difference(
                        difference_stat(
                            &rest,
                            &b_rest,
                            Percentile::P50,
                            settings,
                            &format!("{label}/c{k}/rest"),
                        ),
                        band,
                        rest.len(),
                        b_rest.len(),
                    ),
                    prefill_ratio: Finding::ratio(
                        ratio_stat(
                            &prefill,
                            &b_prefill,
                            Percentile::P50,
                            settings,
                            &format!("{label}/c{k}/prefill"),
                        ),
                        settings.noise_threshold(),
                        prefill.len(),
                        b_prefill.len(),
                    ),
                }
            })
            .collect();
        let reason = match (levels.last(), b_prefill.percentile(Percentile::P50)) {
            (Some(top), Some(p)) => attribute(top, p),
            _ => WallReason::CannotTell,
        };
        out.push(EngineWall {
            scope: scope.clone(),
            clock,
            baseline,
            baseline_rest: b_rest.stat(Percentile::P50, settings),
            baseline_prefill: b_prefill.stat(Percentile::P50, settings),
            levels,
            reason,
        });
    }
    out
}

/// The wall's reason at the highest level `top`, the baseline prefill
/// median being `base` ms: the span join's rule ([`judge_wall`]), except
/// that a prefill that rose is still "requests queued for the engine" when
/// its largest possible growth, in ms, is at most [`WAIT_DOMINANCE`] of
/// the rest's smallest possible rise: the queue then explains at least
/// 10/11 of the combined rise (on a shared CPU, requests waiting in the
/// engine's HTTP threads slow its one compute thread a little).
fn attribute(top: &EngineLevel, base: f64) -> WallReason {
    let reason = judge_wall(&top.rest_change, &top.prefill_ratio, base);
    let bound = top
        .prefill_ratio
        .estimate
        .ci()
        .map(|ci| ((ci.upper - 1.0) * base).max(0.0));
    let dominated = match (bound, top.rest_change.estimate.ci()) {
        (Some(b), Some(ci)) => b <= WAIT_DOMINANCE * ci.lower,
        _ => false,
    };
    match reason {
        WallReason::Both if dominated => WallReason::WaitedForWorker,
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{meta, row, spread};
    use firsttoken_record::session::{Provenance, SampleRow};
    use firsttoken_record::{Connection, EngineSource, EngineTiming};

    fn engine(prefill: f64) -> Option<EngineTiming> {
        Some(EngineTiming {
            source: EngineSource::LlamaCpp,
            prompt_n: Some(17),
            prompt_ms: Some(prefill),
            predicted_n: Some(8),
            predicted_ms: Some(40.0),
            cache_n: Some(0),
        })
    }

    /// One slot: at c=k the i-th request of a burst waits for the i
    /// before it, prefill stays ~100 ms.
    fn one_slot() -> Vec<SampleRow> {
        let mut rows = Vec::new();
        for k in [1u32, 5] {
            for (i, p) in spread(100.0, 4.0, 30).into_iter().enumerate() {
                let queue = 140.0 * (i as u32 % k) as f64;
                let mut r = row("s", "concurrency", Some("chat"), Some(p + 3.0 + queue));
                r.concurrency = Some(k);
                r.sample.engine = engine(p);
                rows.push(r);
            }
        }
        rows
    }

    #[test]
    fn a_queue_for_one_slot_is_the_rest_rising_while_prefill_stays_flat() {
        let rows = one_slot();
        let frame = Frame::from_rows(&rows, &[meta("s", Provenance::Measured)]).unwrap();
        let t = engine_times(&frame, &Settings::new(5));
        assert_eq!(t.splits.len(), 2, "c=1 and c=5");
        let c1 = &t.splits[0];
        assert_eq!((c1.concurrency, c1.timed_by_engine), (Some(1), 30));
        let rest = c1.rest.point().unwrap();
        assert!((rest - 3.0).abs() < 1e-9, "{rest}");
        assert_eq!(t.walls.len(), 1);
        let w = &t.walls[0];
        assert_eq!(w.baseline, "c=1");
        let top = &w.levels[0];
        assert_eq!(top.concurrency, 5);
        assert_eq!(top.rest_change.direction, crate::Direction::Increase);
        let ci = top.rest_change.estimate.ci().unwrap();
        assert!(ci.lower > 100.0, "{ci:?}");
        assert_eq!(w.reason, WallReason::WaitedForWorker);
    }

    #[test]
    fn prefill_that_grows_a_little_beside_a_long_queue_is_still_the_queue() {
        // Queued behind 0–4 requests of 1.4 s each; prefill up 10 %.
        let mut rows = one_slot();
        for (i, r) in rows
            .iter_mut()
            .filter(|r| r.concurrency == Some(5))
            .enumerate()
        {
            let e = r.sample.engine.as_mut().unwrap();
            e.prompt_ms = e.prompt_ms.map(|p| p * 1.1);
            r.sample.ttft_ms = r.sample.ttft_ms.map(|t| t + 10.0 + 1260.0 * (i % 5) as f64);
        }
        let frame = Frame::from_rows(&rows, &[meta("s", Provenance::Measured)]).unwrap();
        let t = engine_times(&frame, &Settings::new(5));
        let top = &t.walls[0].levels[0];
        assert_eq!(top.prefill_ratio.direction, crate::Direction::Increase);
        assert_eq!(t.walls[0].reason, WallReason::WaitedForWorker);
    }

    #[test]
    fn prefill_that_grows_is_not_called_a_queue() {
        let mut rows = one_slot();
        for r in rows.iter_mut().filter(|r| r.concurrency == Some(5)) {
            let e = r.sample.engine.as_mut().unwrap();
            e.prompt_ms = e.prompt_ms.map(|p| p * 3.0);
            r.sample.ttft_ms = r.sample.ttft_ms.map(|t| t + 200.0);
        }
        let frame = Frame::from_rows(&rows, &[meta("s", Provenance::Measured)]).unwrap();
        let t = engine_times(&frame, &Settings::new(5));
        assert_ne!(t.walls[0].reason, WallReason::WaitedForWorker);
    }

    #[test]
    fn warm_requests_on_new_connections_are_counted_and_kept_apart() {
        let mut rows = Vec::new();
        for (i, t) in spread(50.0, 2.0, 20).into_iter().enumerate() {
            let mut r = row(
                "s",
                "warm",
                Some("chat"),
                Some(t + if i < 9 { 5.0 } else { 0.0 }),
            );
            if i < 12 {
                r.sample.connection = Connection::Fresh;
                r.sample.retried_stale = i < 9;
            }
            r.sample.engine = engine(t - 3.0);
            rows.push(r);
        }
        let frame = Frame::from_rows(&rows, &[meta("s", Provenance::Measured)]).unwrap();
        let t = engine_times(&frame, &Settings::new(5));
        let r = &t.reconnections[0];
        assert_eq!((r.warm, r.new_connections, r.stale_retries), (20, 12, 9));
        let labelled: Vec<(bool, usize)> = t
            .splits
            .iter()
            .map(|s| (s.reconnected, s.timed_by_engine))
            .collect();
        assert_eq!(labelled, vec![(false, 8), (true, 12)]);
        // No warm figure of the main analysis includes them.
        let groups = crate::group::group(&frame, &[crate::GroupKey::Phase]);
        let warm = groups.iter().find(|g| g.rows.len() == 8);
        assert!(warm.is_some(), "the warm group holds the 8 reused requests");
        assert_eq!(frame.rows(Provenance::Measured, PhaseKind::Warm).len(), 8);
    }
}

//! Providers and routing strategies: the trade-off between a fast first
//! token and sustained throughput.
//!
//! Over the direct requests (app overhead would blur it), per routing
//! strategy and per provider that actually served the request (the stream's
//! `provider` field): TTFT percentiles, median output tokens/s after the
//! first token, and median completion time (e2e), each with its bootstrap
//! CI, plus which providers each strategy landed on. The winners on each
//! axis are named by their point estimates (a ranking, not a claim), and
//! the leader on first token and on throughput — among strategies and
//! among served providers — is compared with the next one
//! ([`mod@crate::compare`]): its direction says whether that lead is real.

use std::collections::HashMap;

use firsttoken_record::session::Provenance;
use serde::Serialize;

use super::{provenances_with, rows_of};
use crate::Settings;
use crate::compare::{Comparison, compare};
use crate::estimate::{Percentile, Stat};
use crate::frame::{Frame, FxBuild, Metric, NONE, PhaseKind, partition};
use crate::samples::{MetricSummary, Samples, gather};

/// How many requests went one way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Share {
    /// Provider (for a strategy) or strategy (for a provider).
    pub name: String,
    /// Requests.
    pub count: usize,
}

/// One strategy or provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderStats {
    /// Strategy name (`default` when unnamed) or provider (`unreported` when the stream did not say).
    pub name: String,
    /// TTFT, with counts and error rate.
    pub ttft: MetricSummary,
    /// Median output tokens/s after the first token.
    pub tokens_per_s: Stat,
    /// Median completion time (e2e), ms.
    pub e2e: Stat,
    /// Where its requests went (providers of a strategy, strategies of a provider), most first.
    pub mix: Vec<Share>,
}

/// Strategies and providers for one provenance kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Providers {
    /// Provenance of every row used.
    pub provenance: Provenance,
    /// The setup these numbers describe when a report covers several
    /// (e.g. `code_version=before`); empty when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// Per routing strategy, by name.
    pub strategies: Vec<ProviderStats>,
    /// Per served provider, by name; requests whose stream named no
    /// provider are counted in `provider_not_reported`, not listed here
    /// (they would repeat the strategies' figures under another name).
    pub providers: Vec<ProviderStats>,
    /// Counted direct requests whose stream named no provider.
    pub provider_not_reported: usize,
    /// Strategy with the lowest median TTFT.
    pub fastest_first_token: Option<String>,
    /// Strategy with the highest median tokens/s.
    pub highest_throughput: Option<String>,
    /// Strategy with the lowest median e2e.
    pub fastest_completion: Option<String>,
    /// Fastest-first-token strategy against the runner-up, on TTFT.
    pub ttft_comparison: Option<Comparison>,
    /// Highest-throughput strategy against the runner-up, on tokens/s.
    pub throughput_comparison: Option<Comparison>,
    /// The served provider with the lowest median TTFT (`a`) against the
    /// next one (`b`); its direction says whether the lead is real.
    pub first_token_leader: Option<Comparison>,
    /// The served provider with the highest median tokens/s (`a`) against
    /// the next one (`b`).
    pub throughput_leader: Option<Comparison>,
}

/// Strategies and providers per provenance kind with direct requests.
pub fn providers(frame: &Frame, settings: &Settings) -> Vec<Providers> {
    provenances_with(frame, &[PhaseKind::Direct])
        .into_iter()
        .map(|p| one(frame, p, settings))
        .collect()
}

fn name_of(frame: &Frame, id: u32, missing: &str) -> String {
    if id == NONE {
        missing.to_string()
    } else {
        frame.str(id).unwrap_or(missing).to_string()
    }
}

/// Stats per value of the interned id `key` (named by `name`), with the
/// mix over the id `other`; each with its rows. In name order.
fn per(
    frame: &Frame,
    rows: &[u32],
    key: impl Fn(u32) -> u32,
    other: impl Fn(u32) -> u32,
    name: impl Fn(u32) -> String,
    other_name: impl Fn(u32) -> String,
    settings: &Settings,
) -> Vec<(ProviderStats, Vec<u32>)> {
    let mut parts = partition(rows, |i| u64::from(key(i)));
    parts.sort_by_cached_key(|(k, _)| name(*k as u32));
    parts
        .into_iter()
        .map(|(k, idx)| {
            let med =
                |m: Metric| crate::samples::of_rows(frame, &idx, m).stat(Percentile::P50, settings);
            let mut by_other: HashMap<u32, usize, FxBuild> = HashMap::default();
            for &i in &idx {
                // A provider the stream did not name is no share of a mix.
                if frame.obs(i).counted() && other(i) != NONE {
                    *by_other.entry(other(i)).or_default() += 1;
                }
            }
            let mut mix: Vec<Share> = by_other
                .into_iter()
                .map(|(id, count)| Share {
                    name: other_name(id),
                    count,
                })
                .collect();
            mix.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
            let (ttft, counts) = gather(frame, &idx, Metric::Ttft);
            let stats = ProviderStats {
                name: name(k as u32),
                ttft: MetricSummary::new(Metric::Ttft, &ttft, counts, settings),
                tokens_per_s: med(Metric::TokensPerS),
                e2e: med(Metric::E2e),
                mix,
            };
            (stats, idx)
        })
        .collect()
}

fn best(
    v: &[ProviderStats],
    f: impl Fn(&ProviderStats) -> Option<f64>,
    higher: bool,
) -> Option<&ProviderStats> {
    v.iter()
        .filter_map(|s| f(s).map(|x| (s, x)))
        .min_by(|a, b| {
            if higher {
                b.1.total_cmp(&a.1)
            } else {
                a.1.total_cmp(&b.1)
            }
        })
        .map(|(s, _)| s)
}

/// The group with the best median of `metric` (lowest, or highest when
/// higher is better) compared with the next best: `a` leads, `b` follows.
/// `None` with fewer than two groups that have a median.
fn leader(
    frame: &Frame,
    groups: &[(ProviderStats, Vec<u32>)],
    metric: Metric,
    settings: &Settings,
) -> Option<Comparison> {
    let mut ranked: Vec<(&str, Samples, f64)> = groups
        .iter()
        .filter_map(|(s, idx)| {
            let v = crate::samples::of_rows(frame, idx, metric);
            let m = v.stat(Percentile::P50, settings).point()?;
            Some((s.name.as_str(), v, m))
        })
        .collect();
    if metric.higher_is_better() {
        ranked.sort_by(|a, b| b.2.total_cmp(&a.2));
    } else {
        ranked.sort_by(|a, b| a.2.total_cmp(&b.2));
    }
    let [(first, a, _), (second, b, _), ..] = ranked.as_slice() else {
        return None;
    };
    Some(compare(a, b, (first, second), metric, settings))
}

fn one(frame: &Frame, prov: Provenance, settings: &Settings) -> Providers {
    let rows = rows_of(frame, prov, &[PhaseKind::Direct]);
    let strategy = |i: u32| frame.obs(i).strategy;
    let provider = |i: u32| frame.obs(i).provider;
    let strategy_name = |id: u32| name_of(frame, id, "default");
    let provider_name = |id: u32| name_of(frame, id, "unreported");
    let by_strategy = per(
        frame,
        &rows,
        strategy,
        provider,
        strategy_name,
        provider_name,
        settings,
    );
    let named: Vec<u32> = rows
        .iter()
        .copied()
        .filter(|&i| provider(i) != NONE)
        .collect();
    let provider_not_reported = rows
        .iter()
        .filter(|&&i| frame.obs(i).counted() && provider(i) == NONE)
        .count();
    let by_provider = per(
        frame,
        &named,
        provider,
        strategy,
        provider_name,
        strategy_name,
        settings,
    );
    let strategies: Vec<ProviderStats> = by_strategy.iter().map(|(s, _)| s.clone()).collect();
    let providers: Vec<ProviderStats> = by_provider.iter().map(|(s, _)| s.clone()).collect();
    let ttft = |s: &ProviderStats| s.ttft.p50.point();
    let fast = best(&strategies, ttft, false);
    let thr = best(&strategies, |s| s.tokens_per_s.point(), true);
    let done = best(&strategies, |s| s.e2e.point(), false);
    let ttft_comparison = leader(frame, &by_strategy, Metric::Ttft, settings);
    let throughput_comparison = leader(frame, &by_strategy, Metric::TokensPerS, settings);
    let first_token_leader = leader(frame, &by_provider, Metric::Ttft, settings);
    let throughput_leader = leader(frame, &by_provider, Metric::TokensPerS, settings);
    Providers {
        provenance: prov,
        scope: String::new(),
        fastest_first_token: fast.map(|s| s.name.clone()),
        highest_throughput: thr.map(|s| s.name.clone()),
        fastest_completion: done.map(|s| s.name.clone()),
        ttft_comparison,
        throughput_comparison,
        first_token_leader,
        throughput_leader,
        strategies,
        providers,
        provider_not_reported,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testutil::{frame, row, spread};
    use firsttoken_record::vocab::Destination;

    /// Issue 10, item 4: with no provider reported, the providers list was
    /// an `unreported` row repeating the `default` strategy's figures.
    #[test]
    fn an_unreported_provider_is_counted_once_not_listed() {
        let mut rows: Vec<_> = spread(500.0, 40.0, 30)
            .into_iter()
            .map(|t| row("s", "direct", Some("direct"), Some(t)))
            .collect();
        rows[0].sample.provider = Some("a".into());
        let p = &providers(&frame(&rows), &Settings::new(3))[0];
        assert_eq!(p.strategies.len(), 1);
        assert_eq!(p.providers.len(), 1, "{:?}", p.providers);
        assert_eq!(p.providers[0].name, "a");
        assert_eq!(p.provider_not_reported, 29);
        assert_eq!(
            p.strategies[0].mix,
            vec![Share {
                name: "a".into(),
                count: 1
            }]
        );
    }

    #[test]
    fn first_token_versus_throughput() {
        let mut rows = Vec::new();
        // "latency": fast first token (400 ms) from provider a, slow stream (40 tok/s).
        // "throughput": slower first token (900 ms) from b/c, fast stream (90 tok/s).
        for (i, t) in spread(400.0, 40.0, 30).into_iter().enumerate() {
            let mut r = row("s", "direct", Some("direct"), Some(t));
            r.dest = Destination::Direct {
                strategy: Some("latency".into()),
            };
            r.sample.provider = Some("a".into());
            r.sample.tokens_per_s = Some(40.0 + (i % 3) as f64);
            r.sample.e2e_ms = Some(t + 5000.0);
            rows.push(r);
        }
        for (i, t) in spread(900.0, 60.0, 30).into_iter().enumerate() {
            let mut r = row("s", "direct", Some("direct"), Some(t));
            r.dest = Destination::Direct {
                strategy: Some("throughput".into()),
            };
            r.sample.provider = Some(if i % 3 == 0 { "c" } else { "b" }.into());
            r.sample.tokens_per_s = Some(90.0 + (i % 3) as f64);
            r.sample.e2e_ms = Some(t + 2200.0);
            rows.push(r);
        }
        let p = &providers(&frame(&rows), &Settings::new(3))[0];
        assert_eq!(p.strategies.len(), 2);
        assert_eq!(p.providers.len(), 3);
        assert_eq!(p.fastest_first_token.as_deref(), Some("latency"));
        assert_eq!(p.highest_throughput.as_deref(), Some("throughput"));
        assert_eq!(p.fastest_completion.as_deref(), Some("throughput"));
        let t = &p.strategies[1];
        assert_eq!(
            t.mix,
            vec![
                Share {
                    name: "b".into(),
                    count: 20
                },
                Share {
                    name: "c".into(),
                    count: 10
                }
            ]
        );
        assert_eq!(t.tokens_per_s.point(), Some(91.0));
        assert_eq!(
            p.ttft_comparison.as_ref().unwrap().direction,
            Direction::Decrease
        );
        let tc = p.throughput_comparison.as_ref().unwrap();
        assert_eq!((tc.a.as_str(), tc.b.as_str()), ("throughput", "latency"));
        assert_eq!(tc.direction, Direction::Increase);
        // Providers: a leads the first token by far; b leads throughput
        // over c by 1.5 tok/s, within the noise: named, not separated (its
        // interval excludes zero: a difference too small to matter).
        let ft = p.first_token_leader.as_ref().unwrap();
        assert_eq!(ft.a, "a");
        assert_eq!(ft.direction, Direction::Decrease);
        let tl = p.throughput_leader.as_ref().unwrap();
        assert_eq!((tl.a.as_str(), tl.b.as_str()), ("b", "c"));
        assert_eq!(tl.direction, Direction::TooSmallToMatter);
    }

    #[test]
    fn one_provider_has_no_leader() {
        let rows: Vec<_> = spread(500.0, 40.0, 10)
            .into_iter()
            .map(|t| {
                let mut r = row("s", "direct", Some("direct"), Some(t));
                r.sample.provider = Some("only".into());
                r
            })
            .collect();
        let p = &providers(&frame(&rows), &Settings::new(3))[0];
        assert!(p.first_token_leader.is_none() && p.throughput_leader.is_none());
    }
}

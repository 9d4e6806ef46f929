//! Load segments: agent `i` of `n` takes its share of a protocol, so that
//! `n` agents together send exactly the whole protocol, nothing lost or
//! doubled (`--segment i/n`, `i` counted from 0 like Kubernetes'
//! `JOB_COMPLETION_INDEX`).
//!
//! Every agent expands the same protocol (same config, same seed) and keeps
//! its share of each step:
//!
//! | step | share of agent `i` |
//! |---|---|
//! | single request, idle-gap probe | the `k`-th one of its phase goes to agent `(s + k) mod n`, `s` the number of single requests of the phases that appear before it: each phase, and all of them together, split within one request |
//! | burst of `c` | members `j` with `(s + j) mod n = i` (`s` the members of earlier bursts): `c/n` or `c/n + 1` each, so the in-flight requests of all agents add up to `c`; the remainder moves on to the next agents burst by burst |
//! | open-loop arrivals at rate `r` | arrivals `j` with `(s + j) mod n = i` (`s` the arrivals of earlier steps), at their intended offsets: rate `r/n` each, and the union is the whole schedule |
//! | closed loop, `w` workers, `m` requests | `w/n` workers (the remainder to the first agents) and the requests in proportion to the workers |
//! | conversation | whole, to the agent with the fewest conversation turns so far (the lowest index on a tie) |
//!
//! Each request of a segment has an index (its place in the segment's
//! steps, counted as drive counts a sample's `seq`), which lets a rerun of
//! a failed segment skip what was already stored ([`Segment::remaining`]).
//!
//! ```
//! use firsttoken_plan::segment::Segment;
//! let s: Segment = "1/4".parse().unwrap();
//! assert_eq!((s.index, s.count), (1, 4));
//! assert_eq!(Segment::share(10, s.index, s.count), 3);
//! ```

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::protocol::{PhaseKind, Protocol, Step};

/// Agent `index` of `count` (0 ≤ index < count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// This agent's index, from 0.
    pub index: u32,
    /// Agents in all.
    pub count: u32,
}

/// Most agents of one run.
pub const MAX_SEGMENTS: u32 = 10_000;

impl std::fmt::Display for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Segment {
    type Err = String;
    fn from_str(s: &str) -> Result<Segment, String> {
        let bad =
            || format!("--segment {s:?}: expected i/n with 0 ≤ i < n ≤ {MAX_SEGMENTS}, e.g. 0/4");
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SEGMENTS || index >= count {
            return Err(bad());
        }
        Ok(Segment { index, count })
    }
}

impl Segment {
    /// The whole protocol: one agent.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// Agent `i`'s share of `total` items dealt round-robin over `n`:
    /// `total / n`, plus one for the first `total % n` agents.
    pub fn share(total: u64, i: u32, n: u32) -> u64 {
        let n = u64::from(n.max(1));
        total / n + u64::from(u64::from(i) < total % n)
    }

    fn mine(&self, k: usize) -> bool {
        k % self.count as usize == self.index as usize
    }

    /// This agent's share of `whole` (empty steps dropped).
    pub fn apply(&self, whole: &Protocol) -> Protocol {
        let mut per_phase = phase_offsets(whole);
        let (mut members, mut arrivals) = (0usize, 0usize);
        let mut owners = conversation_owners(whole, self.count as usize).into_iter();
        let mut steps = Vec::new();
        for step in &whole.steps {
            let share = match step {
                Step::One(p) | Step::AfterIdle(_, p) => {
                    let k = per_phase.entry(p.phase).or_default();
                    let mine = self.mine(*k);
                    *k += 1;
                    mine.then(|| step.clone())
                }
                Step::Burst(v) => {
                    let mine = self.deal(v, &mut members);
                    (!mine.is_empty()).then_some(Step::Burst(mine))
                }
                Step::Arrivals(v) => {
                    let mine = self.deal(v, &mut arrivals);
                    (!mine.is_empty()).then_some(Step::Arrivals(mine))
                }
                Step::Closed {
                    workers,
                    requests,
                    template,
                } => {
                    let w = Segment::share(u64::from(*workers), self.index, self.count);
                    // Requests in proportion to workers: agent i gets the
                    // requests of its workers' positions, dealt over all workers.
                    let before: u64 = (0..self.index)
                        .map(|a| Segment::share(u64::from(*workers), a, self.count))
                        .sum();
                    let m: u64 = (before..before + w)
                        .map(|k| Segment::share(*requests, k as u32, *workers))
                        .sum();
                    (w > 0 && m > 0).then(|| Step::closed(w as u32, m, template.clone()))
                }
                // Whole conversations: a conversation's turns belong to one
                // agent, the one with the fewest turns so far.
                Step::Conversations(v) => {
                    let mine: Vec<_> = v
                        .iter()
                        .filter(|_| owners.next() == Some(self.index as usize))
                        .cloned()
                        .collect();
                    (!mine.is_empty()).then_some(Step::Conversations(mine))
                }
            };
            steps.extend(share);
        }
        Protocol { steps }
    }

    /// This agent's members of `v`, dealt round-robin on from where the
    /// previous step of its kind ended (`dealt`), so the remainders of
    /// successive steps fall on successive agents.
    fn deal<T: Clone>(&self, v: &[T], dealt: &mut usize) -> Vec<T> {
        let start = *dealt;
        *dealt += v.len();
        (0..v.len())
            .filter(|j| self.mine(j + start))
            .map(|j| v[j].clone())
            .collect()
    }

    /// The steps of `segment` (this agent's share) that are not fully in
    /// `done` (request indices already stored by earlier sessions of the
    /// segment), and the index ranges of the requests they hold, in order:
    /// the `k`-th request the returned protocol sends is the `k`-th index of
    /// the ranges. A step is rerun whole when part of it is missing (a
    /// burst's members belong together); the report keeps the newest
    /// sample of each index, so nothing counts twice.
    pub fn remaining(
        segment: &Protocol,
        done: &dyn Fn(u64) -> bool,
    ) -> (Protocol, Vec<Range<u64>>) {
        let mut steps = Vec::new();
        let mut ranges: Vec<Range<u64>> = Vec::new();
        let mut at = 0u64;
        for step in &segment.steps {
            let len = step.len() as u64;
            let range = at..at + len;
            at += len;
            if range.clone().all(done) {
                continue;
            }
            match ranges.last_mut() {
                Some(last) if last.end == range.start => last.end = range.end,
                _ => ranges.push(range),
            }
            steps.push(step.clone());
        }
        (Protocol { steps }, ranges)
    }
}

/// The segment index of a session's `seq`, given the ranges it ran
/// ([`Segment::remaining`]); `None` past their end.
pub fn index_of(ranges: &[Range<u64>], seq: u64) -> Option<u64> {
    let mut k = seq;
    for r in ranges {
        let len = r.end - r.start;
        if k < len {
            return Some(r.start + k);
        }
        k -= len;
    }
    None
}

/// Where each phase's single requests start being dealt: after every
/// earlier phase's (in order of first appearance), so that agent 0 does not
/// take the remainder of every phase.
fn phase_offsets(whole: &Protocol) -> BTreeMap<PhaseKind, usize> {
    let mut totals: Vec<(PhaseKind, usize)> = Vec::new();
    for step in &whole.steps {
        if let Step::One(p) | Step::AfterIdle(_, p) = step {
            match totals.iter_mut().find(|(k, _)| *k == p.phase) {
                Some((_, n)) => *n += 1,
                None => totals.push((p.phase, 1)),
            }
        }
    }
    let mut at = 0;
    totals
        .into_iter()
        .map(|(phase, n)| {
            let start = at;
            at += n;
            (phase, start)
        })
        .collect()
}

/// The agent of each conversation of `whole`, in order: the one with the
/// fewest turns so far (the lowest index on a tie), so the agents' request
/// counts differ by at most one conversation's turns.
fn conversation_owners(whole: &Protocol, agents: usize) -> Vec<usize> {
    let mut load = vec![0usize; agents.max(1)];
    let mut owners = Vec::new();
    for step in &whole.steps {
        let Step::Conversations(v) = step else {
            continue;
        };
        for turns in v {
            let (agent, _) = load
                .iter()
                .enumerate()
                .min_by_key(|&(i, l)| (*l, i))
                .expect("at least one agent");
            load[agent] += turns.len();
            owners.push(agent);
        }
    }
    owners
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        Arrival, ColdSection, ConcurrencySection, ConversationsSection, Order, PhasesSection,
        RateSection,
    };
    use crate::protocol::{Dest, Layout, Planned};
    use proptest::prelude::*;
    use std::time::Duration;

    /// Every planned request of a protocol with what identifies it: the
    /// step's kind and order-independent facts (phase, destination, prompt,
    /// intended offset, burst level).
    fn requests(p: &Protocol) -> Vec<String> {
        let mut out = Vec::new();
        for s in &p.steps {
            match s {
                Step::One(q) => out.push(format!("one {q:?}")),
                Step::AfterIdle(g, q) => out.push(format!("idle {g:?} {q:?}")),
                Step::Burst(v) => out.extend(v.iter().map(|q| format!("burst {q:?}"))),
                Step::Arrivals(v) => out.extend(v.iter().map(|(at, q)| format!("at {at:?} {q:?}"))),
                Step::Closed {
                    template, requests, ..
                } => out.extend((0..*requests).map(|_| format!("closed {template:?}"))),
                Step::Conversations(v) => {
                    out.extend(v.iter().flatten().map(|q| format!("conversation {q:?}")))
                }
            }
        }
        out.sort();
        out
    }

    fn phases(
        ping: u32,
        cold: u32,
        warm: u32,
        levels: Vec<u32>,
        per_level: u32,
        rate: u32,
    ) -> PhasesSection {
        PhasesSection {
            ping,
            cold: (cold > 0).then(|| ColdSection {
                count: cold,
                idle_gap: Duration::from_millis(1),
                paths: None,
            }),
            warm: warm.into(),
            fresh: (warm / 2).into(),
            direct: warm / 3,
            concurrency: (!levels.is_empty()).then_some(ConcurrencySection {
                levels,
                requests: per_level,
                paths: None,
                mixed: false,
            }),
            rate: (rate > 0).then_some(RateSection {
                per_second: 50.0,
                requests: rate,
                arrival: Arrival::Poisson,
                paths: None,
            }),
            conversations: (cold > 0).then(|| ConversationsSection {
                count: 2 * cold,
                turns: None,
                concurrency: 1 + cold % 2,
                paths: None,
            }),
            browser: None,
        }
    }

    /// The input on which the dealing of stop 36 left three agents 17
    /// requests apart (bursts rotated by their number, conversations by
    /// count, every phase's remainder on agent 0): now within one request
    /// per kind of step and one conversation's turns.
    #[test]
    fn interleaved_levels_and_conversations_stay_balanced() {
        let whole = Protocol::expand(
            &phases(1, 4, 22, vec![3, 7, 2], 25, 38),
            &Layout {
                path_conversations: vec![vec![3, 1], vec![2]],
                ..Layout::simple(2, 3, 4)
            },
            Order::Interleaved,
            12594961744037459087,
        );
        let sizes: Vec<usize> = (0..3)
            .map(|i| Segment { index: i, count: 3 }.apply(&whole).requests())
            .collect();
        assert_eq!(sizes.iter().sum::<usize>(), whole.requests());
        let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(hi - lo <= 3 + 3, "{sizes:?}");
    }

    proptest! {
        /// The done test of issue 14: for n = 1…7 the segments' requests
        /// are exactly the whole protocol's, none lost, none doubled.
        #[test]
        fn segments_add_up_to_the_whole(
            ping in 0u32..12, cold in 0u32..5, warm in 0u32..40,
            levels in proptest::collection::vec(1u32..12, 0..4), per_level in 1u32..30,
            rate in 0u32..40, seed in any::<u64>(), interleaved in any::<bool>(),
        ) {
            let order = if interleaved { Order::Interleaved } else { Order::Blocks };
            let whole = Protocol::expand(
                &phases(ping, cold, warm, levels.clone(), per_level, rate),
                &Layout {
                    path_conversations: vec![vec![3, 1], vec![2]],
                    ..Layout::simple(2, 3, 4)
                },
                order,
                seed,
            );
            for n in 1..=7u32 {
                let parts: Vec<Protocol> = (0..n).map(|i| Segment { index: i, count: n }.apply(&whole)).collect();
                let mut union: Vec<String> = parts.iter().flat_map(requests).collect();
                union.sort();
                prop_assert_eq!(&union, &requests(&whole), "n = {}", n);
                prop_assert_eq!(parts.iter().map(Protocol::requests).sum::<usize>(), whole.requests());
                // Shares differ by at most one request per step kind and phase.
                let sizes: Vec<usize> = parts.iter().map(Protocol::requests).collect();
                // Singles, bursts and arrivals each split within one request;
                // conversations within one conversation's turns.
                let longest = whole.steps.iter().filter_map(|s| match s {
                    Step::Conversations(v) => v.iter().map(Vec::len).max(),
                    _ => None,
                }).max().unwrap_or(0);
                let (lo, hi) = (sizes.iter().min().copied().unwrap_or(0), sizes.iter().max().copied().unwrap_or(0));
                prop_assert!(hi - lo <= 3 + longest, "unbalanced shares {:?} (n = {})", sizes, n);
            }
        }

        /// Concurrency is split so the agents' in-flight requests add up to
        /// the level, burst by burst, each agent within one request of the
        /// level's `1/n`, and the remainders spread: the agents' totals
        /// differ by at most one request.
        #[test]
        fn burst_levels_add_up(extra in proptest::collection::vec(0u32..20, 1..12), n in 1u32..8) {
            // Every level at least n, so every agent has a member of every burst.
            let levels: Vec<u32> = extra.iter().map(|e| n + e).collect();
            let member = |c: u32| Planned { phase: PhaseKind::Concurrency, dest: Dest::App(0), fresh: false, concurrency: Some(c), prompt: 0, turn: None };
            let whole = Protocol { steps: levels.iter().map(|&c| Step::Burst(vec![member(c); c as usize])).collect() };
            let parts: Vec<Protocol> = (0..n).map(|i| Segment { index: i, count: n }.apply(&whole)).collect();
            for part in &parts {
                prop_assert_eq!(part.steps.len(), whole.steps.len());
            }
            for (b, s) in whole.steps.iter().enumerate() {
                let c = s.len();
                let shares: Vec<usize> = parts.iter().map(|p| p.steps[b].len()).collect();
                prop_assert_eq!(shares.iter().sum::<usize>(), c);
                let (lo, hi) = (c / n as usize, c.div_ceil(n as usize));
                prop_assert!(shares.iter().all(|&k| lo <= k && k <= hi), "burst {} of {}: {:?}", b, c, shares);
            }
            let totals: Vec<usize> = parts.iter().map(Protocol::requests).collect();
            let (lo, hi) = (totals.iter().min().unwrap(), totals.iter().max().unwrap());
            prop_assert!(hi - lo <= 1, "totals {:?}", totals);
        }

        /// Closed loops: workers and requests both add up.
        #[test]
        fn closed_loops_add_up(workers in 1u32..30, requests in 1u64..500, n in 1u32..8) {
            let template = Planned { phase: PhaseKind::Warm, dest: Dest::App(0), fresh: false, concurrency: None, prompt: 0, turn: None };
            let whole = Protocol { steps: vec![Step::closed(workers, requests, template)] };
            let Step::Closed { workers: w_all, .. } = whole.steps[0] else { unreachable!() };
            let (mut w, mut m) = (0u64, 0u64);
            for i in 0..n {
                for s in &(Segment { index: i, count: n }.apply(&whole)).steps {
                    let Step::Closed { workers, requests, .. } = s else { unreachable!() };
                    prop_assert!(*workers as u64 <= *requests);
                    w += u64::from(*workers);
                    m += requests;
                }
            }
            prop_assert_eq!(m, requests);
            prop_assert!(w <= u64::from(w_all));
        }
    }

    #[test]
    fn open_loop_rate_is_divided_and_the_union_is_the_schedule() {
        let whole = Protocol::expand(
            &phases(0, 0, 0, vec![], 1, 100),
            &Layout::simple(1, 0, 1),
            Order::Blocks,
            4,
        );
        let Step::Arrivals(all) = &whole.steps[0] else {
            panic!()
        };
        let a = Segment { index: 0, count: 4 }.apply(&whole);
        let Step::Arrivals(mine) = &a.steps[0] else {
            panic!()
        };
        assert_eq!(mine.len(), 25);
        assert_eq!(mine[1], all[4], "arrival 4 keeps its intended offset");
    }

    #[test]
    fn parsing_refuses_what_is_not_a_segment() {
        assert_eq!(
            "3/4".parse::<Segment>().unwrap(),
            Segment { index: 3, count: 4 }
        );
        for bad in ["4/4", "0/0", "1", "a/2", "-1/2", "1/10001"] {
            assert!(bad.parse::<Segment>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_rerun_skips_whole_steps_already_stored_and_maps_seq_back() {
        let whole = Protocol::expand(
            &phases(3, 0, 4, vec![3], 6, 0),
            &Layout::simple(1, 0, 1),
            Order::Blocks,
            2,
        );
        // Steps: 3 pings, 4 warm, 2 fresh, 1 direct, 2 bursts of 3 → 16 requests.
        assert_eq!(whole.requests(), 16);
        // Stored: the pings, the first warm and one member of the first burst (index 10).
        let done = |k: u64| k < 4 || k == 10;
        let (rest, ranges) = Segment::remaining(&whole, &done);
        assert_eq!(ranges, std::iter::once(4..16).collect::<Vec<_>>());
        assert_eq!(
            rest.requests(),
            12,
            "the half-stored burst runs again whole"
        );
        assert_eq!(index_of(&ranges, 0), Some(4));
        assert_eq!(index_of(&ranges, 11), Some(15));
        assert_eq!(index_of(&ranges, 12), None);
        let (none, r) = Segment::remaining(&whole, &|_| true);
        assert!(none.steps.is_empty() && r.is_empty());
        let (gappy, r) = Segment::remaining(&whole, &|k| (4..8).contains(&k));
        assert_eq!(r, vec![0..4, 8..16]);
        assert_eq!(gappy.requests(), 12);
    }
}

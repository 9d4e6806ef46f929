//! A session's protocol: the phases expanded into an ordered list of steps,
//! each a single request, a burst that starts together, an open-loop batch
//! with intended start offsets, or closed-loop workers (the probe's `-c`).
//! Deterministic for a given seed.
//!
//! A protocol plans the work it will send: [`Protocol::requests`] measured
//! requests plus [`Protocol::warmups`] warm-ups, one per warm connection the
//! executor opens ([`Protocol::planned`], which progress bars and banners
//! show); an app that closes idle connections costs more warm-ups, never
//! beyond [`Protocol::max_warmups`] ([`Protocol::announced`], the bound the
//! large-session confirmation uses).

use std::time::Duration;

use serde::{Deserialize, Serialize};

#[cfg(test)]
use crate::config::PhaseCount;
use crate::config::{Arrival, ColdSection, ConcurrencySection, Order, PhasesSection};

/// Protocol phase of a request: the stored vocabulary, owned by record
/// ([`firsttoken_record::vocab::PhaseKind`]) and re-exported here.
pub use firsttoken_record::vocab::PhaseKind;

/// Where a request goes, by index into the config's paths and strategies.
/// Stored as the names it resolves to ([`firsttoken_record::vocab::Destination`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Dest {
    /// The app, path by index into `app.paths`.
    App(usize),
    /// The provider, strategy by index into `direct.strategies` (0 when none are configured).
    Direct(usize),
    /// The ping URL.
    Ping,
}

/// One planned request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Planned {
    /// Its phase.
    pub phase: PhaseKind,
    /// Its destination.
    pub dest: Dest,
    /// True: new DNS/TCP/TLS; false: reuse the slot's connection.
    pub fresh: bool,
    /// Concurrency level for burst requests.
    pub concurrency: Option<u32>,
    /// Index of the prompt to send; in a conversation, of the
    /// conversation in its path's conversations file.
    pub prompt: usize,
    /// In a conversation, the turn's number (1 for the first message of
    /// a new conversation); `None` outside conversations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
}

/// A unit of work in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// One request.
    One(Planned),
    /// Wait this long with no traffic, then send the request (cold probe).
    AfterIdle(Duration, Planned),
    /// Requests that start together.
    Burst(Vec<Planned>),
    /// Requests at intended offsets from the step's start (open loop).
    Arrivals(Vec<(Duration, Planned)>),
    /// Closed loop: `workers` clients, each sending its next request as soon
    /// as its previous one ended, until `requests` copies of `template` were
    /// sent. Never more workers than requests: see [`Step::closed`].
    Closed {
        /// Concurrent clients, each with its own connection.
        workers: u32,
        /// Measured requests in all.
        requests: u64,
        /// What every request is.
        template: Planned,
    },
    /// Conversations side by side, each on its own connection: a list of
    /// turns sent in order, each when the previous answer ended.
    Conversations(Vec<Vec<Planned>>),
}

impl Step {
    /// A closed-loop step with at most as many workers as requests (a worker
    /// that would send nothing would still send its warm-up).
    pub fn closed(workers: u32, requests: u64, template: Planned) -> Step {
        let workers = u32::try_from(requests).map_or(workers, |n| workers.min(n));
        Step::Closed {
            workers,
            requests,
            template,
        }
    }

    /// Measured requests in this step.
    pub fn len(&self) -> usize {
        match self {
            Step::One(_) | Step::AfterIdle(..) => 1,
            Step::Burst(v) => v.len(),
            Step::Arrivals(v) => v.len(),
            Step::Closed { requests, .. } => usize::try_from(*requests).unwrap_or(usize::MAX),
            Step::Conversations(v) => v.iter().map(Vec::len).sum(),
        }
    }

    /// Most warm-up requests this step can send. A warm (not fresh) request
    /// whose connection is not open is preceded by a warm-up on the same
    /// connection: at most one per request of a single step or a burst, one
    /// per closed-loop worker before its first request, none for open-loop
    /// arrivals (a warm-up would delay their intended start), one per
    /// conversation before its first turn.
    pub fn max_warmups(&self) -> usize {
        let warm = |p: &Planned| usize::from(!p.fresh);
        match self {
            Step::Conversations(v) => v.iter().filter_map(|c| c.first()).map(warm).sum(),
            Step::One(p) | Step::AfterIdle(_, p) => warm(p),
            Step::Burst(v) => v.iter().map(warm).sum(),
            Step::Arrivals(_) => 0,
            Step::Closed {
                workers,
                requests,
                template,
            } => {
                let workers = u64::from(*workers).min(*requests);
                warm(template) * usize::try_from(workers).unwrap_or(usize::MAX)
            }
        }
    }

    /// True for a step with no request.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The article's session: 10 ping, 3 cold, 120 warm, 40 fresh, 30 direct
/// for each of 3 strategies (90), 60 concurrent (c = 1, 3, 5 × 20): 323
/// requests. (Only 30 direct requests *per strategy* make the story's total
/// of 323; 30 in all would give 263.)
pub fn preset(name: &str) -> Option<PhasesSection> {
    match name {
        "article" => Some(PhasesSection {
            ping: 10,
            cold: Some(ColdSection {
                count: 3,
                idle_gap: Duration::from_secs(30),
                paths: None,
            }),
            warm: 120.into(),
            fresh: 40.into(),
            direct: 90,
            concurrency: Some(ConcurrencySection {
                levels: vec![1, 3, 5],
                requests: 20,
                paths: None,
                mixed: false,
            }),
            rate: None,
            conversations: None,
            browser: None,
        }),
        _ => None,
    }
}

/// Names of the built-in presets.
pub const PRESETS: [&str; 1] = ["article"];

/// SplitMix64: small, fast, and good enough for shuffles and arrival gaps.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// The expanded protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Protocol {
    /// Steps in run order.
    pub steps: Vec<Step>,
}

/// What a protocol is expanded over: the app's paths (names, in index
/// order, each with the size of its own prompt list), the direct
/// strategies and the shared prompt list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layout {
    /// App path names, in index order (at least one is assumed).
    pub paths: Vec<String>,
    /// Per app path, the length of its own prompt list; 0: it uses the
    /// shared list.
    pub path_prompts: Vec<usize>,
    /// Direct strategies (0 when none are configured).
    pub strategies: usize,
    /// Prompts of the shared list.
    pub prompts: usize,
    /// Per app path, the number of turns of each conversation in its
    /// conversations file (empty: the path runs no conversations).
    pub path_conversations: Vec<Vec<u32>>,
}

impl Layout {
    /// `paths` unnamed app paths (`path0`, …) with the shared prompts: the
    /// shape of a config without per-path settings.
    pub fn simple(paths: usize, strategies: usize, prompts: usize) -> Layout {
        Layout {
            paths: (0..paths.max(1)).map(|i| format!("path{i}")).collect(),
            path_prompts: vec![0; paths.max(1)],
            strategies,
            prompts,
            path_conversations: Vec::new(),
        }
    }

    /// Indices of `names` (a phase's `paths`), or every path for `None`.
    /// Names are checked by config validation; an unknown one is skipped.
    fn indices(&self, names: &Option<Vec<String>>) -> Vec<usize> {
        let all = || (0..self.paths.len().max(1)).collect();
        match names {
            None => all(),
            Some(v) => {
                let idx: Vec<usize> = v
                    .iter()
                    .filter_map(|n| self.paths.iter().position(|p| p == n))
                    .collect();
                if idx.is_empty() { all() } else { idx }
            }
        }
    }
}

/// Prompt rotation: one counter for the shared list and one for each path
/// with its own list, each starting at a seeded offset.
struct Prompts {
    shared: (usize, usize),
    own: Vec<Option<(usize, usize)>>,
}

impl Prompts {
    fn new(layout: &Layout, rng: &mut SplitMix) -> Prompts {
        let shared_n = layout.prompts.max(1);
        let shared = (rng.below(shared_n), shared_n);
        let own = layout
            .path_prompts
            .iter()
            .map(|&n| (n > 0).then(|| (rng.below(n), n)))
            .collect();
        Prompts { shared, own }
    }

    /// The next prompt index for `dest`, in the list it uses.
    fn next(&mut self, dest: Dest) -> usize {
        let slot = match dest {
            Dest::App(i) => match self.own.get_mut(i) {
                Some(Some(s)) => s,
                _ => &mut self.shared,
            },
            _ => &mut self.shared,
        };
        let p = slot.0;
        slot.0 = (slot.0 + 1) % slot.1;
        p
    }
}

/// The conversations phase: `count` conversations over the paths that
/// have conversations (the phase's `paths`, else every such path),
/// round-robin, each path's conversations taken in file order (wrapping
/// round), at most `turns` turns each; `concurrency` conversations a step.
fn conversations(phases: &PhasesSection, layout: &Layout) -> Vec<Step> {
    let Some(c) = &phases.conversations else {
        return Vec::new();
    };
    let has = |p: &usize| {
        layout
            .path_conversations
            .get(*p)
            .is_some_and(|v| !v.is_empty())
    };
    let paths: Vec<usize> = layout.indices(&c.paths).into_iter().filter(has).collect();
    if paths.is_empty() {
        return Vec::new();
    }
    let mut next = vec![0usize; layout.path_conversations.len()];
    let level = c.concurrency.max(1);
    let all: Vec<Vec<Planned>> = round_robin(&paths, c.count as usize)
        .map(|p| {
            let file = &layout.path_conversations[p];
            let ix = next[p] % file.len();
            next[p] += 1;
            let turns = c.turns.map_or(file[ix], |t| t.min(file[ix]));
            (1..=turns)
                .map(|turn| Planned {
                    phase: PhaseKind::Conversation,
                    dest: Dest::App(p),
                    fresh: false,
                    concurrency: (level > 1).then_some(level),
                    prompt: ix,
                    turn: Some(turn),
                })
                .collect()
        })
        .collect();
    all.chunks(level as usize)
        .map(|c| Step::Conversations(c.to_vec()))
        .collect()
}

/// `n` requests over `paths`, round-robin.
fn round_robin(paths: &[usize], n: usize) -> impl Iterator<Item = usize> + '_ {
    (0..n).map(move |i| paths[i % paths.len()])
}

impl Protocol {
    /// Expand phases over `layout`, ordered by `order` with `seed`. Each
    /// app phase goes to its `paths` (all app paths by default),
    /// round-robin; cold probes and concurrency requests are split equally
    /// over them, each burst to one path unless `mixed`.
    pub fn expand(phases: &PhasesSection, layout: &Layout, order: Order, seed: u64) -> Protocol {
        let mut rng = SplitMix::new(seed);
        let mut prompts = Prompts::new(layout, &mut rng);
        let mut planned = |phase, dest, fresh, concurrency| Planned {
            phase,
            dest,
            fresh,
            concurrency,
            prompt: prompts.next(dest),
            turn: None,
        };
        let mut cold = Vec::new();
        let mut rest: Vec<Step> = Vec::new();
        for _ in 0..phases.ping {
            rest.push(Step::One(Planned {
                phase: PhaseKind::Ping,
                dest: Dest::Ping,
                fresh: false,
                concurrency: None,
                prompt: 0,
                turn: None,
            }));
        }
        if let Some(c) = &phases.cold {
            let paths = layout.indices(&c.paths);
            for p in round_robin(&paths, c.count as usize) {
                let p = planned(PhaseKind::Cold, Dest::App(p), true, None);
                cold.push(Step::AfterIdle(c.idle_gap, p));
            }
        }
        for (phase, count, fresh) in [
            (PhaseKind::Warm, &phases.warm, false),
            (PhaseKind::Fresh, &phases.fresh, true),
        ] {
            let paths = layout.indices(&count.paths);
            for p in round_robin(&paths, count.count as usize) {
                rest.push(Step::One(planned(phase, Dest::App(p), fresh, None)));
            }
        }
        let strategies = layout.strategies.max(1);
        for i in 0..phases.direct as usize {
            // Evenly split: strategy i*S/N keeps counts within one of each other.
            let s = i * strategies / phases.direct.max(1) as usize;
            rest.push(Step::One(planned(
                PhaseKind::Direct,
                Dest::Direct(s),
                false,
                None,
            )));
        }
        if let Some(c) = &phases.concurrency {
            let paths = layout.indices(&c.paths);
            for &level in &c.levels {
                let mut burst = |dests: Vec<usize>| {
                    let v = dests
                        .into_iter()
                        .map(|p| planned(PhaseKind::Concurrency, Dest::App(p), false, Some(level)))
                        .collect();
                    rest.push(Step::Burst(v));
                };
                if c.mixed || paths.len() == 1 {
                    let mut left = c.requests;
                    let mut turn = 0usize;
                    while left > 0 {
                        let k = left.min(level);
                        burst(
                            (0..k as usize)
                                .map(|i| paths[(turn + i) % paths.len()])
                                .collect(),
                        );
                        turn += k as usize;
                        left -= k;
                    }
                } else {
                    // Each path's equal share, in bursts of one path each,
                    // the paths taking turns so drift hits them alike.
                    let n = paths.len() as u32;
                    let mut left: Vec<u32> = (0..n)
                        .map(|i| c.requests / n + u32::from(i < c.requests % n))
                        .collect();
                    while left.iter().any(|&l| l > 0) {
                        for (i, &p) in paths.iter().enumerate() {
                            let k = left[i].min(level);
                            if k > 0 {
                                burst(vec![p; k as usize]);
                                left[i] -= k;
                            }
                        }
                    }
                }
            }
        }
        rest.extend(conversations(phases, layout));
        let mut arrivals = None;
        if let Some(r) = &phases.rate {
            let paths = layout.indices(&r.paths);
            let mut at = 0.0f64;
            let mut v = Vec::new();
            for p in round_robin(&paths, r.requests as usize) {
                v.push((
                    Duration::from_secs_f64(at),
                    planned(PhaseKind::Rate, Dest::App(p), false, None),
                ));
                at += match r.arrival {
                    Arrival::Constant => 1.0 / r.per_second,
                    // Inverse-CDF sampling of an exponential gap.
                    Arrival::Poisson => -(1.0 - rng.next_f64()).ln() / r.per_second,
                };
            }
            arrivals = Some(Step::Arrivals(v));
        }
        if order == Order::Interleaved {
            for i in (1..rest.len()).rev() {
                let j = rng.below(i + 1);
                rest.swap(i, j);
            }
        }
        let mut steps = cold;
        steps.extend(rest);
        steps.extend(arrivals);
        Protocol { steps }
    }

    /// The probe as a protocol: one closed-loop step of `spec.requests`
    /// requests on `min(spec.concurrency, spec.requests)` workers, all to
    /// [`Dest::App`]`(0)`, warm or fresh by `spec.mode`.
    pub fn probe(spec: &crate::ProbeSpec) -> Protocol {
        let fresh = spec.mode == crate::ConnectionMode::Fresh;
        let step = Step::closed(
            spec.concurrency,
            spec.requests,
            Planned {
                phase: if fresh {
                    PhaseKind::Fresh
                } else {
                    PhaseKind::Warm
                },
                dest: Dest::App(0),
                fresh,
                concurrency: Some(spec.concurrency),
                prompt: 0,
                turn: None,
            },
        );
        Protocol { steps: vec![step] }
    }

    /// Total planned (measured) requests.
    pub fn requests(&self) -> usize {
        self.steps.iter().map(Step::len).sum()
    }

    /// Most warm-up requests the protocol can send (see [`Step::max_warmups`]).
    pub fn max_warmups(&self) -> usize {
        self.steps.iter().map(Step::max_warmups).sum()
    }

    /// Everything the protocol may send: measured requests plus the most
    /// warm-ups. Nothing beyond this is ever sent.
    pub fn announced(&self) -> usize {
        self.requests().saturating_add(self.max_warmups())
    }

    /// The warm-ups the executor sends when every connection it opens stays
    /// open: one on the first warm request of each numbered slot of a
    /// destination — slot 0 for single requests and idle-gap probes, slot i
    /// for a burst's i-th request, slot w for closed-loop worker w; fresh
    /// requests and open-loop arrivals never warm up (drive's `exec`
    /// module). Requests on a slot already warm reuse its connection, so a
    /// session of 120 warm requests sends one warm-up, not 120. A connection
    /// the app closes in between costs one more, up to [`Protocol::max_warmups`].
    pub fn warmups(&self) -> usize {
        let mut warm: std::collections::BTreeSet<(Dest, u64)> = Default::default();
        let mut first =
            |p: &Planned, slot: u64| usize::from(!p.fresh && warm.insert((p.dest, slot)));
        self.steps
            .iter()
            .map(|s| match s {
                Step::One(p) | Step::AfterIdle(_, p) => first(p, 0),
                Step::Burst(v) => (0u64..).zip(v).map(|(i, p)| first(p, i)).sum(),
                Step::Arrivals(_) => 0,
                Step::Closed {
                    workers,
                    requests,
                    template,
                } => (0..u64::from(*workers).min(*requests))
                    .map(|w| first(template, w))
                    .sum(),
                Step::Conversations(v) => (0u64..)
                    .zip(v)
                    .filter_map(|(w, c)| Some(first(c.first()?, w)))
                    .sum(),
            })
            .sum()
    }

    /// What the protocol will send when the app keeps its connections open:
    /// measured requests plus [`Protocol::warmups`]. At most
    /// [`Protocol::announced`].
    pub fn planned(&self) -> usize {
        self.requests().saturating_add(self.warmups())
    }

    /// The least time the protocol takes whatever the server does: its
    /// cold probes' idle gaps plus the span of each open-loop schedule.
    pub fn min_duration(&self) -> Duration {
        self.steps
            .iter()
            .map(|s| match s {
                Step::AfterIdle(gap, _) => *gap,
                Step::Arrivals(v) => v.iter().map(|(at, _)| *at).max().unwrap_or_default(),
                _ => Duration::ZERO,
            })
            .fold(Duration::ZERO, |a, b| a.saturating_add(b))
    }

    /// Planned requests per phase name, in first-seen order.
    pub fn counts(&self) -> Vec<(PhaseKind, usize)> {
        let mut out: Vec<(PhaseKind, usize)> = Vec::new();
        for s in &self.steps {
            let (phase, n) = match s {
                Step::One(p) | Step::AfterIdle(_, p) => (p.phase, 1),
                Step::Burst(v) => (
                    v.first().map(|p| p.phase).unwrap_or(PhaseKind::Concurrency),
                    v.len(),
                ),
                Step::Arrivals(v) => (PhaseKind::Rate, v.len()),
                Step::Closed { template, .. } => (template.phase, s.len()),
                Step::Conversations(_) => (PhaseKind::Conversation, s.len()),
            };
            match out.iter_mut().find(|(k, _)| *k == phase) {
                Some((_, c)) => *c += n,
                None => out.push((phase, n)),
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;

//! Tests of the protocol's expansion and its counts.

use super::*;

#[test]
fn article_preset_is_the_story_session() {
    let phases = preset("article").unwrap();
    let p = Protocol::expand(&phases, &Layout::simple(2, 3, 4), Order::Blocks, 7);
    assert_eq!(p.requests(), 323);
    let counts = p.counts();
    let get = |k| {
        counts
            .iter()
            .find(|(c, _)| *c == k)
            .map(|(_, n)| *n)
            .unwrap_or(0)
    };
    assert_eq!(
        (
            get(PhaseKind::Ping),
            get(PhaseKind::Cold),
            get(PhaseKind::Warm)
        ),
        (10, 3, 120)
    );
    assert_eq!(
        (
            get(PhaseKind::Fresh),
            get(PhaseKind::Direct),
            get(PhaseKind::Concurrency)
        ),
        (40, 90, 60)
    );
    assert!(
        matches!(p.steps[0], Step::AfterIdle(..)),
        "cold probes come first"
    );
    let mut per_strategy = [0; 3];
    let mut bursts = std::collections::BTreeMap::new();
    for s in &p.steps {
        match s {
            Step::One(Planned {
                dest: Dest::Direct(i),
                ..
            }) => per_strategy[*i] += 1,
            Step::Burst(v) => *bursts.entry(v[0].concurrency.unwrap()).or_insert(0) += v.len(),
            _ => {}
        }
    }
    assert_eq!(per_strategy, [30, 30, 30]);
    assert_eq!(
        bursts.into_iter().collect::<Vec<_>>(),
        vec![(1, 20), (3, 20), (5, 20)]
    );
}

#[test]
fn interleaving_is_seeded_and_keeps_cold_first() {
    let phases = preset("article").unwrap();
    let a = Protocol::expand(&phases, &Layout::simple(2, 3, 4), Order::Interleaved, 1);
    let b = Protocol::expand(&phases, &Layout::simple(2, 3, 4), Order::Interleaved, 1);
    let c = Protocol::expand(&phases, &Layout::simple(2, 3, 4), Order::Interleaved, 2);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.requests(), 323);
    assert!(
        a.steps[..3]
            .iter()
            .all(|s| matches!(s, Step::AfterIdle(..)))
    );
    let blocks = Protocol::expand(&phases, &Layout::simple(2, 3, 4), Order::Blocks, 1);
    assert_ne!(a, blocks);
}

fn planned(fresh: bool) -> Planned {
    Planned {
        phase: PhaseKind::Concurrency,
        dest: Dest::App(0),
        fresh,
        concurrency: None,
        prompt: 0,
        turn: None,
    }
}

#[test]
fn announced_work_counts_warmups_and_never_more_workers_than_requests() {
    // Defect 3 of issue 8: `probe -c 1000 -n 1` sent 1,001 requests.
    let r = crate::RequestTemplate::new(
        crate::Target::parse("http://127.0.0.1:1/").unwrap(),
        None,
        None,
    )
    .unwrap();
    let mut spec = crate::ProbeSpec::new(r);
    spec.concurrency = 1000;
    spec.requests = 1;
    let p = Protocol::probe(&spec);
    assert!(matches!(
        p.steps[0],
        Step::Closed {
            workers: 1,
            requests: 1,
            ..
        }
    ));
    assert_eq!((p.requests(), p.max_warmups(), p.announced()), (1, 1, 2));
    spec.mode = crate::ConnectionMode::Fresh;
    spec.concurrency = 4;
    spec.requests = 10;
    let p = Protocol::probe(&spec);
    assert_eq!((p.requests(), p.max_warmups(), p.announced()), (10, 0, 10));
    // A burst of 2000 warm requests: 2000 announced as measured, up to 4000 sent.
    let burst = Protocol {
        steps: vec![Step::Burst(vec![planned(false); 2000])],
    };
    assert_eq!(burst.announced(), 4000);
    let mixed = Protocol {
        steps: vec![
            Step::One(planned(false)),
            Step::AfterIdle(Duration::from_secs(1), planned(true)),
            Step::Arrivals(vec![(Duration::ZERO, planned(false)); 3]),
            Step::closed(8, 5, planned(false)),
        ],
    };
    assert_eq!((mixed.requests(), mixed.max_warmups()), (10, 1 + 5));
    assert_eq!(
        mixed.counts(),
        vec![(PhaseKind::Concurrency, 7), (PhaseKind::Rate, 3)]
    );
}

/// Issue 24, defect 6: a session announced 362 requests "warm-ups
/// included" and sent 211: every warm request counted a warm-up, but
/// only the first request on each connection sends one.
#[test]
fn planned_warmups_are_one_per_warm_connection() {
    let on = |dest, fresh| Planned {
        dest,
        fresh,
        ..planned(false)
    };
    let mut steps: Vec<Step> = (0..120)
        .map(|_| Step::One(on(Dest::App(0), false)))
        .collect();
    steps.extend((0..40).map(|_| Step::One(on(Dest::App(0), true))));
    steps.extend((0..30).map(|_| Step::One(on(Dest::Direct(0), false))));
    // Bursts of 1, 3 and 5: slot 0 is warm already, slots 1..5 are new.
    for k in [1, 3, 5] {
        steps.push(Step::Burst(vec![on(Dest::App(0), false); k]));
    }
    steps.push(Step::closed(4, 10, on(Dest::App(1), false)));
    steps.push(Step::Arrivals(vec![
        (
            Duration::ZERO,
            on(Dest::App(0), false)
        );
        5
    ]));
    let p = Protocol { steps };
    assert_eq!(p.requests(), 120 + 40 + 30 + 9 + 10 + 5);
    // App path 0: slots 0..5 (5); direct: slot 0 (1); path 1: 4 workers.
    assert_eq!(p.warmups(), 5 + 1 + 4);
    assert_eq!(p.planned(), p.requests() + 10);
    assert_eq!(p.max_warmups(), 120 + 30 + 9 + 4);
    assert!(p.planned() <= p.announced());
}

fn layout() -> Layout {
    Layout {
        paths: vec!["chat".into(), "docs".into(), "router".into()],
        path_prompts: vec![0, 5, 0],
        strategies: 0,
        prompts: 3,
        path_conversations: vec![vec![3, 2], Vec::new(), vec![4]],
    }
}

/// Issue 25: conversations are dealt over the paths that have them, each
/// one's turns in order with its number, `concurrency` a step, and a path
/// without a conversations file gets none.
#[test]
fn conversations_keep_their_turns_in_order_on_the_paths_that_have_them() {
    let phases = PhasesSection {
        conversations: Some(crate::config::ConversationsSection {
            count: 5,
            turns: Some(3),
            concurrency: 2,
            paths: None,
        }),
        ..PhasesSection::default()
    };
    let p = Protocol::expand(&phases, &layout(), Order::Blocks, 4);
    let steps: Vec<&Vec<Vec<Planned>>> = p
        .steps
        .iter()
        .map(|s| match s {
            Step::Conversations(v) => v,
            other => panic!("not a conversations step: {other:?}"),
        })
        .collect();
    assert_eq!(steps.iter().map(|v| v.len()).collect::<Vec<_>>(), [2, 2, 1]);
    let all: Vec<&Vec<Planned>> = steps.into_iter().flatten().collect();
    // chat, router, chat, router, chat: chat's conversations 0, 1, 0 (3
    // and 2 turns), router's 0 twice (4 turns, at most 3).
    let shape: Vec<(Dest, usize, usize)> = all
        .iter()
        .map(|c| (c[0].dest, c[0].prompt, c.len()))
        .collect();
    assert_eq!(
        shape,
        [
            (Dest::App(0), 0, 3),
            (Dest::App(2), 0, 3),
            (Dest::App(0), 1, 2),
            (Dest::App(2), 0, 3),
            (Dest::App(0), 0, 3),
        ]
    );
    for c in &all {
        let numbers: Vec<Option<u32>> = c.iter().map(|t| t.turn).collect();
        let want: Vec<Option<u32>> = (1..=c.len() as u32).map(Some).collect();
        assert_eq!(numbers, want);
        assert!(c.iter().all(|t| t.phase == PhaseKind::Conversation
            && !t.fresh
            && t.concurrency == Some(2)
            && t.prompt == c[0].prompt));
    }
    assert_eq!(p.requests(), 3 + 3 + 2 + 3 + 3);
    assert_eq!(
        p.max_warmups(),
        5,
        "one per conversation, before its first turn"
    );
    assert_eq!(p.counts(), [(PhaseKind::Conversation, 14)]);
}

fn names(v: &[&str]) -> Option<Vec<String>> {
    Some(v.iter().map(|s| s.to_string()).collect())
}

/// Issue 10: phases aimed at paths; cold probes and bursts per path in
/// equal numbers, one path per burst unless `mixed`.
#[test]
fn phases_aimed_at_paths_split_equally_and_never_mix_a_burst() {
    let mut phases = PhasesSection {
        cold: Some(ColdSection {
            count: 4,
            idle_gap: Duration::from_secs(1),
            paths: names(&["chat", "docs"]),
        }),
        warm: PhaseCount {
            count: 6,
            paths: names(&["docs"]),
        },
        fresh: 3.into(),
        concurrency: Some(ConcurrencySection {
            levels: vec![1, 3, 5],
            requests: 20,
            paths: names(&["chat", "docs"]),
            mixed: false,
        }),
        ..PhasesSection::default()
    };
    let p = Protocol::expand(&phases, &layout(), Order::Interleaved, 5);
    let mut cold = [0; 3];
    let mut warm = [0; 3];
    let mut fresh = [0; 3];
    let mut burst = std::collections::BTreeMap::new();
    for s in &p.steps {
        match s {
            Step::AfterIdle(_, q) if q.dest == Dest::App(0) => cold[0] += 1,
            Step::AfterIdle(_, q) if q.dest == Dest::App(1) => cold[1] += 1,
            Step::AfterIdle(..) => cold[2] += 1,
            Step::One(q) => {
                let Dest::App(i) = q.dest else { continue };
                match q.phase {
                    PhaseKind::Warm => warm[i] += 1,
                    _ => fresh[i] += 1,
                }
            }
            Step::Burst(v) => {
                assert!(
                    v.iter().all(|q| q.dest == v[0].dest),
                    "a mixed burst: {v:?}"
                );
                *burst
                    .entry((v[0].concurrency.unwrap(), v[0].dest))
                    .or_insert(0) += v.len();
            }
            _ => {}
        }
    }
    assert_eq!(cold, [2, 2, 0]);
    assert_eq!(warm, [0, 6, 0]);
    assert_eq!(fresh, [1, 1, 1], "no paths given: every app path");
    for k in [1, 3, 5] {
        assert_eq!(burst[&(k, Dest::App(0))], 10);
        assert_eq!(burst[&(k, Dest::App(1))], 10);
        assert!(!burst.contains_key(&(k, Dest::App(2))));
    }
    // `mixed = true`: bursts may hold several paths.
    if let Some(c) = phases.concurrency.as_mut() {
        c.mixed = true;
    }
    let p = Protocol::expand(&phases, &layout(), Order::Blocks, 5);
    assert!(p.steps.iter().any(|s| matches!(s,
        Step::Burst(v) if v.iter().any(|q| q.dest != v[0].dest))));
}

/// A path with its own prompts rotates over its own list; the others
/// over the shared list.
#[test]
fn each_path_rotates_over_its_own_prompts() {
    let phases = PhasesSection {
        warm: 30.into(),
        ..PhasesSection::default()
    };
    let p = Protocol::expand(&phases, &layout(), Order::Blocks, 9);
    let mut seen: [Vec<usize>; 3] = Default::default();
    for s in &p.steps {
        if let Step::One(q) = s
            && let Dest::App(i) = q.dest
        {
            seen[i].push(q.prompt);
        }
    }
    let mut docs = seen[1].clone();
    docs.sort_unstable();
    assert_eq!(
        docs,
        [0, 0, 1, 1, 2, 2, 3, 3, 4, 4],
        "docs: its 5 prompts, twice"
    );
    assert!(seen[0].iter().chain(&seen[2]).all(|&i| i < 3));
    let mut shared: Vec<usize> = seen[0].iter().chain(&seen[2]).copied().collect();
    shared.sort_unstable();
    shared.dedup();
    assert_eq!(
        shared,
        [0, 1, 2],
        "the shared list rotates over chat and router"
    );
}

#[test]
fn poisson_arrivals_have_the_right_mean_rate() {
    let phases = PhasesSection {
        rate: Some(crate::config::RateSection {
            per_second: 10.0,
            requests: 2000,
            arrival: Arrival::Poisson,
            paths: None,
        }),
        ..PhasesSection::default()
    };
    let p = Protocol::expand(&phases, &Layout::simple(1, 1, 1), Order::Blocks, 3);
    let Step::Arrivals(v) = &p.steps[0] else {
        panic!("arrivals")
    };
    let span = v.last().unwrap().0.as_secs_f64();
    // 1999 gaps of mean 0.1 s: 199.9 s expected; 5 % is > 4 standard deviations.
    assert!((span - 199.9).abs() < 10.0, "{span}");
    assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
}

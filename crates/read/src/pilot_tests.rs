use super::*;
use crate::testutil::{frame, meta, put, rows, spread, store, warm};
use firsttoken_record::session::Provenance::{Emulated, Measured};

const WARM: PhaseKind = PhaseKind::Warm;

/// Each raw group's key value, path and number of values.
fn shape(raws: &[Raw]) -> Vec<(String, String, usize)> {
    raws.iter()
        .map(|r| (r.value.to_string(), r.path.to_string(), r.samples.len()))
        .collect()
}

fn sessions() -> [SessionMeta; 3] {
    [
        meta("a", "v2", Measured),
        meta("b", "v1", Measured),
        meta("c", "v1", Emulated),
    ]
}

#[test]
fn pilot_groups_are_per_path_within_the_phase_and_of_one_kind() {
    let mut all = warm(&[
        ("a", "chat", 300.0, 30),
        ("a", "docs", 100.0, 20),
        ("b", "chat", 300.0, 25),
    ]);
    let cold = (PhaseKind::Cold, "chat");
    all.extend(rows("a", Measured, cold, 50, spread(900.0, 5)));
    let f = frame(&sessions(), &all);
    let ttft = Metric::Ttft;
    let (raws, paths) = groups_by(&f, None, Some(WARM), ttft).unwrap();
    assert!(paths, "two paths: groups are named by theirs");
    let mut got = shape(&raws);
    got.sort();
    assert_eq!(got[0].1, "chat");
    assert_eq!((got[0].2, got[1].1.as_str(), got[1].2), (55, "docs", 20));
    // Every phase: the cold probes join their path.
    let (raws, _) = groups_by(&f, None, None, ttft).unwrap();
    assert!(shape(&raws).iter().any(|(_, p, n)| p == "chat" && *n == 60));
    // By a key, still per path.
    let (raws, paths) = groups_by(&f, Some(GroupKey::CodeVersion), Some(WARM), ttft).unwrap();
    let mut got = shape(&raws);
    got.sort();
    let want = [("v1", "chat", 25), ("v2", "chat", 30), ("v2", "docs", 20)];
    let want: Vec<(String, String, usize)> = want
        .iter()
        .map(|(v, p, n)| (v.to_string(), p.to_string(), *n))
        .collect();
    assert_eq!((got, paths), (want, true));
    // By path, the path is the key: no second split, no path suffix.
    let (_, paths) = groups_by(&f, Some(GroupKey::Path), Some(WARM), ttft).unwrap();
    assert!(!paths);
    // Rows of two provenance kinds never pool into a pilot.
    all.extend(rows("c", Emulated, (WARM, "chat"), 0, spread(300.0, 10)));
    let f = frame(&sessions(), &all);
    let e = groups_by(&f, None, Some(WARM), ttft).err().unwrap();
    assert!(
        e.to_string()
            .starts_with("the pilot in the warm phase holds rows of several provenance kinds"),
        "{e}"
    );
}

#[test]
fn pairs_are_formed_path_by_path() {
    // Each session its own pilot, as `--between A B` forms them.
    let side = |id: &str, paths: [&str; 2]| {
        let all = warm(&[(id, paths[0], 300.0, 12), (id, paths[1], 100.0, 12)]);
        let f = frame(&[meta(id, "v1", Measured)], &all);
        groups_by(&f, None, Some(WARM), Metric::Ttft).unwrap().0
    };
    let a = || side("a", ["chat", "docs"]);
    let b = || side("b", ["docs", "help"]);
    let paired = pair_by_path(a(), b(), ("A", "B"), true).unwrap();
    assert_eq!(paired.len(), 1, "docs is the one path both have");
    let (name, compared, baseline) = &paired[0];
    assert_eq!(name, "A, path=docs vs B, path=docs");
    assert_eq!(compared.as_ref().unwrap().pilot.len(), 12);
    assert_eq!(baseline.name, "B, path=docs");
    // Paths unnamed when the pilots have one each.
    let paired = pair_by_path(a(), a(), ("A", "A2"), false).unwrap();
    let names: Vec<&str> = paired.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, ["A vs A2", "A vs A2"]);
    let e = pair_by_path(a(), side("c", ["help", "about"]), ("A", "C"), true)
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "A and C have no path in common");
}

fn planned(phase: PhaseKind, dest: Dest, concurrency: Option<u32>) -> Planned {
    Planned {
        phase,
        dest,
        fresh: false,
        concurrency,
        prompt: 0,
        turn: None,
    }
}

/// 20 warm requests to chat, 12 closed-loop to docs, a burst of two at
/// concurrency 2 on chat, two more warm ones to chat after an idle gap, and
/// a ping.
fn protocol() -> Protocol {
    let chat = planned(WARM, Dest::App(0), None);
    let pair = planned(PhaseKind::Concurrency, Dest::App(0), Some(2));
    let mut steps = vec![Step::One(chat.clone()); 20];
    steps.push(Step::closed(3, 12, planned(WARM, Dest::App(1), None)));
    steps.push(Step::Burst(vec![pair.clone(), pair]));
    steps.push(Step::AfterIdle(
        std::time::Duration::from_secs(1),
        chat.clone(),
    ));
    steps.push(Step::Arrivals(vec![(std::time::Duration::ZERO, chat)]));
    steps.push(Step::One(planned(PhaseKind::Ping, Dest::Ping, None)));
    Protocol { steps }
}

#[test]
fn planned_counts_are_per_phase_destination_and_level_first_seen_first() {
    let counts = planned_counts(&protocol());
    assert_eq!(
        counts,
        [
            ((WARM, Dest::App(0), None), 22),
            ((WARM, Dest::App(1), None), 12),
            ((PhaseKind::Concurrency, Dest::App(0), Some(2)), 2),
            ((PhaseKind::Ping, Dest::Ping, None), 1),
        ]
    );
}

/// The commented default config: paths chat and docs.
fn config() -> Config {
    let cfg = Config::parse(firsttoken_plan::config::DEFAULT_CONFIG, "t.toml").unwrap();
    let paths: Vec<&str> = cfg.app.paths.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(paths, ["chat", "docs"]);
    cfg
}

fn ask() -> Ask {
    Ask {
        settings: PlanSettings::default().with_simulations(50).unwrap(),
        ..Ask::default()
    }
}

/// Per row: the phase, the destination, the pilot's values, whether a
/// difference is detectable, the cost.
type Claimed = (PhaseKind, String, usize, bool, Option<f64>);

fn claimed(doc: &PlanDoc) -> Vec<Claimed> {
    let claims = doc.claims.as_ref().unwrap();
    assert_eq!(claims.config, "t.toml");
    claims
        .rows
        .iter()
        .map(|r| {
            let cost = r.cost_usd.map(|c| (c * 1e6).round() / 1e6);
            (
                r.phase,
                r.destination.clone(),
                r.pilot_values,
                r.detectable.is_some(),
                cost,
            )
        })
        .collect()
}

#[tokio::test]
async fn claims_say_what_each_count_supports_from_the_store_s_pilot() {
    let (cfg, p) = (config(), protocol());
    let (chat, docs) = ("chat".to_string(), "docs".to_string());
    // No store: nothing detectable, no cost, the protocol's seed.
    let doc = claims(None, &[], (&cfg, "t.toml"), (&p, 7), &ask())
        .await
        .unwrap();
    assert!(doc.sessions.is_empty());
    let pinged = (PhaseKind::Ping, "ping".to_string(), 0, false, None);
    assert_eq!(
        claimed(&doc),
        [
            (WARM, chat.clone(), 0, false, None),
            (WARM, docs.clone(), 0, false, None),
            (
                PhaseKind::Concurrency,
                "chat @ 2 concurrent".into(),
                0,
                false,
                None
            ),
            pinged.clone(),
        ]
    );
    assert!(
        claims_at(
            "/nonexistent/dir/s.db",
            &[],
            (&cfg, "t.toml"),
            (&p, 7),
            &ask()
        )
        .await
        .is_ok()
    );
    // A store with 30 warm chat requests at $0.001 each: the warm chat
    // row is planned from them; the others have no pilot.
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).await;
    let mut pilot = rows("p", Measured, (WARM, "chat"), 0, spread(300.0, 30));
    for r in &mut pilot {
        r.sample.cost_usd = Some(0.001);
    }
    put(&s, &meta("p", "v1", Measured), &pilot).await;
    let doc = claims(Some(&s), &[], (&cfg, "t.toml"), (&p, 7), &ask())
        .await
        .unwrap();
    assert_eq!(doc.sessions, ["p"]);
    assert_eq!(
        claimed(&doc),
        [
            (WARM, chat, 30, true, Some(0.022)),
            (WARM, docs, 0, false, None),
            (
                PhaseKind::Concurrency,
                "chat @ 2 concurrent".into(),
                0,
                false,
                None
            ),
            pinged,
        ]
    );
}

#[test]
fn a_pilot_is_n_warm_requests_a_path_tagged_as_one() {
    assert!(matches!(PilotRun::new(0), Err(ReadError::EmptyPilot)));
    let pilot = PilotRun::new(6).unwrap();
    let mut cfg = config();
    cfg.phases.fresh = PhaseCount::from(40);
    assert_eq!(pilot.requests(&cfg), 12);
    let run = pilot.config(cfg);
    assert_eq!(run.phases.warm.count, 12);
    assert_eq!(
        run.phases.fresh.count, 0,
        "the config's phases are replaced"
    );
    assert_eq!(run.app.paths.len(), 2);
    assert_eq!(PilotRun::tags()["purpose"], "pilot");
}

use super::*;
use crate::bootstrap::SplitMix64;
use crate::compare::compare;
use crate::finding::Direction;

/// Log-normal draws (Box–Muller), ms.
fn lognormal(n: usize, mu: f64, sigma: f64, seed: u64) -> Samples {
    let mut rng = SplitMix64::new(seed);
    let v = (0..n)
        .map(|_| {
            let (u1, u2) = (rng.next_open01(), rng.next_open01());
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            (mu + sigma * z).exp()
        })
        .collect();
    Samples::new(v).unwrap()
}

/// 100 simulations per estimate: enough for the properties tested here.
fn fast() -> PlanSettings {
    PlanSettings::default().with_simulations(100).unwrap()
}

#[test]
fn the_simulated_median_rule_is_compare_s_verdict() {
    // The simulation checks compare()'s conditions itself (cheapest first)
    // and bootstraps with compare()'s label; it must agree with compare()
    // on every experiment, detected or not.
    let pilot = Pilot::new("p", &lognormal(300, 6.5, 0.6, 3));
    let settings = Settings::new(11);
    let plan = PlanSettings::default();
    let sim = sim::Sim::new(&pilot, &pilot, Percentile::P50, &settings, &plan);
    let (mut yes, mut no) = (0, 0);
    for i in 0..150 {
        let n = 5 + i % 60;
        let shift = (i % 7) as f64 * 40.0 - 60.0;
        let a = Samples::from_finite(pilot.sample(&settings, "a", i, n, shift));
        let b = Samples::from_finite(pilot.sample(&settings, "b", i, n + i % 3, 0.0));
        let s = settings.with_seed(stream_seed(&settings, "boot", i));
        let want = compare(&a, &b, ("a", "b"), Metric::Ttft, &s).direction == Direction::Increase;
        assert_eq!(sim.detects(i, &a, &b), want, "experiment {i}");
        if want {
            yes += 1;
        } else {
            no += 1;
        }
    }
    assert!(yes > 10 && no > 10, "both outcomes exercised: {yes} / {no}");
}

#[test]
fn search_finds_the_first_n_reaching_the_target_within_two_percent() {
    for edge in [4usize, 5, 137, 1000, 4321] {
        let got = search_n(4, 100_000, 0.8, |n| if n >= edge { 0.9 } else { 0.1 });
        let Needed::Reached { n, power } = got else {
            panic!("{got:?}");
        };
        assert!(n >= edge && n <= edge + (edge / 50).max(1), "{edge}: {n}");
        assert_eq!(power, 0.9);
    }
    assert_eq!(
        search_n(4, 300, 0.8, |_| 0.5),
        Needed::Beyond {
            max_n: 300,
            power: 0.5
        }
    );
}

#[test]
fn plans_are_deterministic_and_consistent() {
    let pilot = Pilot::new("p", &lognormal(120, 6.7, 0.5, 1));
    let s = Settings::new(5);
    let effect = Effect::Absolute(250.0);
    let p1 = plan_power(&pilot, None, Percentile::P50, effect, &s, &fast()).unwrap();
    let again = Question::new(&pilot, None, Percentile::P50, effect, &s, &fast()).unwrap();
    assert_eq!(again.needed(), p1.needed);
    assert_eq!(again.power_at(120, 120), p1.power_now);
    assert_eq!(
        (p1.n_a, p1.n_b, p1.rule),
        (120, 120, Rule::MedianComparison)
    );
    let Needed::Reached { n, power } = p1.needed else {
        panic!("{p1:?}");
    };
    assert!(power >= 0.8 && n >= least_n(Percentile::P50, &s), "{p1:?}");
    // n needed and the power now tell the same story.
    assert_eq!(n <= 120, p1.power_now >= 0.8, "{p1:?}");
    let Detectable::Found {
        difference,
        relative,
    } = p1.detectable_now
    else {
        panic!("{p1:?}");
    };
    // Nothing within the noise threshold is ever called.
    assert!(relative.unwrap() > 0.05, "{p1:?}");
    let q = Question::new(&pilot, None, Percentile::P50, effect, &s, &fast()).unwrap();
    // At the detectable difference the power reaches the target; below it, not.
    let at = Question::new(
        &pilot,
        None,
        Percentile::P50,
        Effect::Absolute(difference),
        &s,
        &fast(),
    )
    .unwrap();
    assert!(at.power_at(120, 120) >= 0.8);
    let below = Question::new(
        &pilot,
        None,
        Percentile::P50,
        Effect::Absolute(0.97 * difference),
        &s,
        &fast(),
    )
    .unwrap();
    assert!(below.power_at(120, 120) < 0.8);
    // More values, more power.
    assert!(q.power_at(40, 40) < q.power_at(400, 400));
}

#[test]
fn a_median_change_within_the_noise_threshold_is_never_called() {
    let pilot = Pilot::new("p", &lognormal(100, 6.9, 0.4, 2));
    let s = Settings::new(5);
    let plan = plan_power(
        &pilot,
        None,
        Percentile::P50,
        Effect::Relative(0.04),
        &s,
        &fast(),
    )
    .unwrap();
    assert!(
        matches!(plan.needed, Needed::BelowNoise { relative, threshold }
            if (relative - 0.04).abs() < 1e-9 && threshold == 0.05),
        "{plan:?}"
    );
    // p95 has no noise band: its rule is the interval alone.
    let q = Question::new(
        &pilot,
        None,
        Percentile::P95,
        Effect::Relative(0.5),
        &s,
        &fast(),
    )
    .unwrap();
    assert_eq!(rule_for(Percentile::P95), Rule::QuantileInterval);
    assert!(matches!(q.needed(), Needed::Reached { .. }));
}

#[test]
fn two_pilot_groups_keep_their_own_shapes() {
    // A wide compared group needs more than a narrow one to show the same
    // difference against the same baseline.
    let base = Pilot::new("old", &lognormal(200, 6.5, 0.3, 1));
    let narrow = Pilot::new("new", &lognormal(200, 6.0, 0.3, 2));
    let wide = Pilot::new("new", &lognormal(200, 6.0, 0.9, 3));
    let s = Settings::new(9);
    let n = |a: &Pilot| match Question::new(
        &base,
        Some(a),
        Percentile::P50,
        Effect::Absolute(120.0),
        &s,
        &fast(),
    )
    .unwrap()
    .needed()
    {
        Needed::Reached { n, .. } => n,
        other => panic!("{other:?}"),
    };
    assert!(n(&narrow) < n(&wide));
}

#[test]
fn bad_pilots_and_differences_are_errors() {
    let s = Settings::new(1);
    let tiny = Pilot::new("group x", &lognormal(9, 6.0, 0.5, 1));
    let err = plan_power(
        &tiny,
        None,
        Percentile::P50,
        Effect::Absolute(10.0),
        &s,
        &fast(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PlanError::PilotTooSmall {
            group: "group x".into(),
            n: 9,
            needed: 10
        }
    );
    assert!(err.to_string().contains("group x: 9 values"));
    let small = Pilot::new("g", &lognormal(15, 6.0, 0.5, 1));
    // p95 needs 20 values even to be shown.
    assert!(matches!(
        plan_power(
            &small,
            None,
            Percentile::P95,
            Effect::Absolute(10.0),
            &s,
            &fast()
        ),
        Err(PlanError::PilotTooSmall { needed: 20, .. })
    ));
    assert!(matches!(
        plan_power(
            &small,
            None,
            Percentile::P50,
            Effect::Absolute(-5.0),
            &s,
            &fast()
        ),
        Err(PlanError::BadDifference { .. })
    ));
    assert!(PlanSettings::default().with_power(1.0).is_err());
    assert!(PlanSettings::default().with_simulations(10).is_err());
}

#[test]
fn width_plan_matches_the_median_s_known_precision() {
    // LogNormal(σ = 0.5): the sample median's log has sd ≈ 1.2533·σ/√n, so
    // a 95 % interval is about 3.92·0.627/√n = 2.46/√n of the median wide:
    // 20 % needs n ≈ 150 on average, a little more to be sure 80 % of the time.
    let pilot = Pilot::new("p", &lognormal(5000, 6.7, 0.5, 4));
    let plans = plan_width(&pilot, 0.20, &Settings::new(3), &fast()).unwrap();
    assert_eq!(plans.len(), 4);
    let p50 = &plans[0];
    assert_eq!((p50.percentile, p50.shown_from), (Percentile::P50, 2));
    let Needed::Reached { n, .. } = p50.needed else {
        panic!("{p50:?}");
    };
    assert!((140..=210).contains(&n), "{p50:?}");
    // Its width now, with 5,000 values: about 2.46/√5000 = 3.5 %.
    assert!((p50.width_now.unwrap() - 0.035).abs() < 0.008, "{p50:?}");
    // A tail percentile needs more.
    let p99 = &plans[3];
    assert_eq!(p99.shown_from, 100);
    assert!(
        matches!(p99.needed, Needed::Reached { n: m, .. } if m > n),
        "{p99:?}"
    );
    assert!(plan_width(&pilot, 0.0, &Settings::new(3), &fast()).is_err());
}

#[test]
fn a_small_pilot_says_it_has_not_seen_the_tail() {
    let pilot = Pilot::new("p", &lognormal(40, 6.7, 0.5, 4));
    let plans = plan_width(&pilot, 0.2, &Settings::new(3), &fast()).unwrap();
    assert!(plans[0].pilot_shows && plans[2].pilot_shows);
    assert!(!plans[3].pilot_shows);
    assert_eq!(plans[3].width_now, None);
}

#[test]
fn pace_turns_values_into_requests_and_time() {
    let pace = Pace {
        requests: 100,
        values: 80,
        mean_request_ms: Some(1500.0),
    };
    assert_eq!(pace.requests_for(0), 0);
    assert_eq!(pace.requests_for(40), 50);
    assert_eq!(pace.requests_for(41), 52);
    assert_eq!(pace.time_ms(50), Some(75_000.0));
}

#[test]
fn to_go_sums_the_sides() {
    let pace = |values, ms| Pace {
        requests: 50,
        values,
        mean_request_ms: ms,
    };
    // The baseline has 40 of 100, the other side is new.
    let t = to_go(
        100,
        &[(40, pace(40, Some(2000.0))), (0, pace(40, Some(2000.0)))],
    );
    assert_eq!(t.values, 160);
    // 60 values at 40 of 50 requests → 75 requests; 100 → 125.
    assert_eq!(t.requests, 200);
    assert_eq!(t.time_ms, Some(400_000.0));
    // A side already there costs nothing, even without a duration.
    let t = to_go(30, &[(40, pace(40, None)), (10, pace(50, Some(1000.0)))]);
    assert_eq!((t.values, t.requests, t.time_ms), (20, 20, Some(20_000.0)));
    assert_eq!(to_go(30, &[(0, pace(40, None))]).time_ms, None);
}

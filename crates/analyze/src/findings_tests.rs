use super::*;
use crate::testutil::{meta, row, spread};
use crate::{Frame, Settings, analyze};
use firsttoken_record::session::{PromptRef, Provenance, SampleRow, SessionMeta};
use firsttoken_record::vocab::Destination;

/// One session with a slow chat path (+600 ms), fresh connections costing
/// 300 ms, a one-at-a-time wall on chat, a cold probe and a router that
/// sends 16 of 20 document questions to chat.
fn session() -> (Vec<SampleRow>, Vec<SessionMeta>) {
    let mut m = meta("s", Provenance::Measured);
    m.spec = serde_json::json!({"config": {"app": {"paths": [
        {"name": "chat"}, {"name": "docs"}, {"name": "router", "expect_route": "docs"}
    ]}}});
    let mut rows = Vec::new();
    for (path, center) in [("chat", 1600.0), ("docs", 1000.0)] {
        for t in spread(center, 50.0, 40) {
            let mut r = row("s", "warm", Some(path), Some(t));
            r.sample.route = Some(path.into());
            rows.push(r);
        }
    }
    for i in 0..20u32 {
        let astray = i % 5 != 0;
        let t = if astray { 1600.0 } else { 1000.0 } + f64::from(i);
        let mut r = row("s", "warm", Some("router"), Some(t));
        r.sample.route = Some(if astray { "chat" } else { "docs" }.into());
        r.prompt = Some(PromptRef {
            index: i,
            hash: format!("{i:012x}"),
        });
        rows.push(r);
    }
    for t in spread(1900.0, 50.0, 30) {
        rows.push(row("s", "fresh", Some("chat"), Some(t)));
    }
    rows.push(row("s", "cold", Some("chat"), Some(4000.0)));
    for (i, t) in spread(900.0, 40.0, 30).into_iter().enumerate() {
        let mut r = row("s", "direct", Some("direct"), Some(t));
        r.dest = Destination::Direct {
            strategy: Some("default".into()),
        };
        let _ = i;
        rows.push(r);
    }
    for k in [1u32, 3, 5] {
        for t in spread(1600.0 * f64::from(k + 1) / 2.0, 40.0, 20) {
            let mut r = row("s", "concurrency", Some("chat"), Some(t));
            r.concurrency = Some(k);
            rows.push(r);
        }
    }
    (rows, vec![m])
}

fn ranked() -> (Analysis, Vec<RankedFinding>) {
    let (rows, sessions) = session();
    let frame = Frame::from_rows(&rows, &sessions).unwrap();
    let a = analyze(&frame, &sessions, &[], &Settings::new(5));
    let f = rank_findings(&a, &[]);
    (a, f)
}

#[test]
fn findings_are_ranked_by_the_wait_they_explain() {
    let (a, f) = ranked();
    assert!(!f.is_empty() && f.len() <= MAX_FINDINGS);
    let ranks: Vec<usize> = f.iter().map(|x| x.rank).collect();
    assert_eq!(ranks, (1..=f.len()).collect::<Vec<_>>());
    let waits: Vec<f64> = f.iter().filter_map(|x| x.wait_ms).collect();
    assert!(waits.windows(2).all(|w| w[0] >= w[1]), "{waits:?}");
    // The wall at c=5 explains the most: (ratio − 1) × baseline median,
    // about (3 − 1) × 1600 ms.
    let top = &f[0];
    let FindingKind::Concurrency {
        level,
        verdict,
        baseline_ms,
    } = top.kind
    else {
        panic!("the wall first: {top:?}")
    };
    assert_eq!((level, verdict), (5, WallVerdict::OneAtATime));
    let r = top.finding.unwrap().estimate.estimate().copied().unwrap();
    let (w, ci) = (top.wait_ms.unwrap(), top.wait_ci.unwrap());
    assert!((w - (r.point - 1.0) * baseline_ms).abs() < 1e-6);
    assert!((ci.lower - (r.ci.lower - 1.0) * baseline_ms).abs() < 1e-6);
    assert!((3000.0..3400.0).contains(&w), "{w:?}");
    assert_eq!((top.section, top.plot), ("concurrency", "concurrency"));
    assert_eq!(top.groups, vec!["chat".to_string()]);
    // The overhead's wait is its own median difference.
    let o = a
        .overhead
        .iter()
        .find(|o| {
            o.paths
                == PathScope::One {
                    path: Some("chat".into()),
                }
        })
        .unwrap();
    let of = f
        .iter()
        .find(|x| x.kind == FindingKind::Overhead && x.groups == ["chat"])
        .unwrap();
    assert_eq!(of.wait_ms, o.overhead_median.estimate.point());
}

#[test]
fn only_changes_are_ranked_and_pooled_summaries_never() {
    let (_, f) = ranked();
    for x in &f {
        assert!(!x.groups.iter().any(|g| g.contains("pooled")), "{x:?}");
        match &x.kind {
            FindingKind::Misrouting { .. } if x.wait_ms.is_none() => {}
            FindingKind::ColdStart { .. } => {
                panic!("one probe is not a repeated cold start: {x:?}")
            }
            _ => {
                assert!(x.finding.unwrap().direction.is_change(), "{x:?}");
                let ci = x.wait_ci.unwrap();
                assert!(ci.lower > 0.0, "a wait whose interval excludes zero: {x:?}");
            }
        }
    }
}

#[test]
fn misrouting_weighs_the_route_difference_by_the_share_astray() {
    let (a, f) = ranked();
    let m = f
        .iter()
        .find(|x| matches!(x.kind, FindingKind::Misrouting { .. }))
        .expect("the router's misrouting is a finding");
    let FindingKind::Misrouting {
        astray,
        reported,
        route_difference,
        ref route,
        ref expected,
        ..
    } = m.kind
    else {
        unreachable!()
    };
    assert_eq!((route.as_str(), expected.as_str()), ("chat", "docs"));
    assert_eq!((astray, reported), (16, 20));
    let chat_docs = a.routes[0]
        .comparisons
        .iter()
        .find(|c| c.a == "chat" && c.b == "docs")
        .unwrap();
    assert_eq!(route_difference.estimate, chat_docs.median_difference);
    let d = chat_docs.median_difference.point().unwrap();
    assert!((m.wait_ms.unwrap() - d * 0.8).abs() < 1e-6);
    assert_eq!(m.groups, vec!["router".to_string()]);
    assert_eq!(m.section, "routes");
}

fn cmp(a: &str, diff: f64, lower: f64, upper: f64, direction: Direction) -> Comparison {
    let (rows, sessions) = session();
    let frame = Frame::from_rows(&rows, &sessions).unwrap();
    let base = analyze(&frame, &sessions, &[], &Settings::new(5));
    let mut c = base.routes[0].comparisons[0].clone();
    c.a = a.into();
    c.b = "base".into();
    c.median_difference = Stat::Ok(Estimate {
        point: diff,
        standard_error: 1.0,
        ci: Ci {
            level: 0.95,
            lower,
            upper,
        },
    });
    c.direction = direction;
    c
}

#[test]
fn an_interval_reaching_zero_is_not_a_finding_and_the_list_is_capped() {
    let frame = Frame::from_rows(&[], &[]).unwrap();
    let empty = analyze(&frame, &[], &[], &Settings::new(1));
    let mut cs = vec![cmp(
        "noise",
        -900.0,
        -2000.0,
        50.0,
        Direction::NoDetectableDifference,
    )];
    for i in 0..10 {
        let d = 100.0 * f64::from(i + 1);
        cs.push(cmp(
            &format!("c{i}"),
            -d,
            -d - 20.0,
            -d + 20.0,
            Direction::Decrease,
        ));
    }
    let f = rank_findings(&empty, &cs);
    assert_eq!(f.len(), MAX_FINDINGS);
    assert!(f.iter().all(|x| x.groups[0] != "noise"));
    let names: Vec<&str> = f.iter().map(|x| x.groups[0].as_str()).collect();
    assert_eq!(names, ["c9", "c8", "c7", "c6", "c5", "c4", "c3", "c2"]);
    // A decrease explains wait saved: its magnitude, its interval flipped.
    let (w, ci) = (f[0].wait_ms.unwrap(), f[0].wait_ci.unwrap());
    assert_eq!((w, ci.lower, ci.upper), (1000.0, 980.0, 1020.0));
    assert_eq!(f[0].section, "comparisons");
}

#[test]
fn short_labels_keep_values_only() {
    assert_eq!(
        short_label("code_version=before", Some("chat")),
        "before · chat"
    );
    assert_eq!(short_label("", Some("chat")), "chat");
    assert_eq!(short_label("code_version=after", None), "after");
    assert_eq!(
        short_label("code_version=v2, network=4g", Some("docs")),
        "v2 · 4g · docs"
    );
}

/// A new connection's set-up, measured directly, is a finding when the
/// fresh − warm TTFT difference is lost in the answers' spread.
#[test]
fn connection_setup_stands_in_for_a_ttft_difference_lost_in_the_spread() {
    let m = meta("s", Provenance::Measured);
    let mut rows = Vec::new();
    // Warm median 200 ms: set-up beyond 5 % of it (10 ms) is a finding.
    for t in spread(200.0, 80.0, 20) {
        rows.push(row("s", "warm", Some("chat"), Some(t)));
    }
    for (i, t) in spread(226.0, 80.0, 20).into_iter().enumerate() {
        let mut r = row("s", "fresh", Some("chat"), Some(t));
        r.sample.connect_ms = Some(0.5);
        r.sample.tls_ms = Some(25.0 + (i % 3) as f64);
        rows.push(r);
    }
    let sessions = vec![m];
    let frame = Frame::from_rows(&rows, &sessions).unwrap();
    let a = analyze(&frame, &sessions, &[], &Settings::new(5));
    let c = &a.connection[0];
    assert!(!c.cost_median.direction.is_change(), "{c:?}");
    let f = rank_findings(&a, &[]);
    let s = f
        .iter()
        .find(|x| x.kind == FindingKind::ConnectionSetup)
        .expect("the set-up is a finding");
    assert_eq!(s.groups, vec!["chat".to_string()]);
    let w = s.wait_ms.unwrap();
    assert!((25.0..28.0).contains(&w), "{w:?}");
    assert!(!f.iter().any(|x| x.kind == FindingKind::Connection));

    // The same set-up under answers ten times slower is within their noise:
    // shown (never zero), too small to matter.
    for r in &mut rows {
        r.sample.ttft_ms = r.sample.ttft_ms.map(|t| t * 10.0);
    }
    let frame = Frame::from_rows(&rows, &sessions).unwrap();
    let a = analyze(&frame, &sessions, &[], &Settings::new(5));
    assert_eq!(a.connection[0].setup.direction, Direction::TooSmallToMatter);
    let f = rank_findings(&a, &[]);
    assert!(!f.iter().any(|x| x.kind == FindingKind::ConnectionSetup));
}

/// Issue 24, defects 1 and 7: a cold start is ranked only when it
/// repeats, and then stated by its probes' values, never an interval.
#[test]
fn a_cold_start_is_ranked_when_it_repeats_and_stated_by_values() {
    let m = meta("s", Provenance::Measured);
    let mut rows: Vec<SampleRow> = spread(300.0, 20.0, 30)
        .into_iter()
        .map(|t| row("s", "warm", Some("chat"), Some(t)))
        .collect();
    rows.push(row("s", "cold", Some("chat"), Some(700.0)));
    let sessions = vec![m];
    let ranked = |rows: &[SampleRow]| {
        let frame = Frame::from_rows(rows, &sessions).unwrap();
        let a = analyze(&frame, &sessions, &[], &Settings::new(5));
        rank_findings(&a, &[])
    };
    let cold = |f: &[RankedFinding]| {
        f.iter()
            .find(|x| matches!(x.kind, FindingKind::ColdStart { .. }))
            .cloned()
    };
    assert!(
        cold(&ranked(&rows)).is_none(),
        "one probe is a value, not a finding"
    );
    rows.push(row("s", "cold", Some("chat"), Some(310.0)));
    assert!(
        cold(&ranked(&rows)).is_none(),
        "one of two beyond does not repeat"
    );
    rows.push(row("s", "cold", Some("chat"), Some(900.0)));
    let c = cold(&ranked(&rows)).expect("two of three beyond repeat");
    let FindingKind::ColdStart {
        probes,
        beyond,
        threshold,
        warm_median_ms,
        ref excess_ms,
        ..
    } = c.kind
    else {
        unreachable!()
    };
    assert_eq!(
        (probes, beyond, threshold),
        (3, 2, crate::diagnose::ColdThreshold::Maximum)
    );
    assert_eq!(
        excess_ms,
        &vec![700.0 - warm_median_ms, 900.0 - warm_median_ms]
    );
    assert!(
        c.finding.is_none() && c.wait_ci.is_none(),
        "values, no interval: {c:?}"
    );
    assert_eq!(c.wait_ms, Some(800.0 - warm_median_ms), "the median excess");
}

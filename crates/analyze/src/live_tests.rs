use super::*;

use firsttoken_record::session::SampleRow;
use firsttoken_record::{Connection, SampleError, UtcTime};

fn app(path: &str) -> Destination {
    Destination::App {
        path: Some(path.into()),
    }
}

fn row(phase: PhaseKind, dest: Destination, ttft: Option<f64>, warmup: bool) -> SampleRow {
    let mut s = Sample::empty(0, 0, Connection::Reused);
    s.warmup = warmup;
    s.ttft_ms = ttft;
    if ttft.is_none() {
        s.error = Some(SampleError {
            kind: ErrorKind::HttpStatus,
            message: "HTTP 503".into(),
        });
    }
    let at = UtcTime::from(std::time::SystemTime::UNIX_EPOCH);
    SampleRow::new("s", phase, dest, at, s)
}

fn state() -> LiveState {
    LiveState::new(5, vec![(PhaseKind::Warm, 4)], Some(1.0))
}

#[test]
fn samples_land_in_their_group_and_failures_are_kept_with_their_message() {
    let mut s = state();
    s.record(&row(PhaseKind::Warm, app("chat"), Some(100.0), true), 0.0);
    s.record(&row(PhaseKind::Warm, app("chat"), Some(120.0), false), 0.1);
    s.record(&row(PhaseKind::Warm, app("chat"), None, false), 0.2);
    s.record(&row(PhaseKind::Warm, app("docs"), Some(90.0), false), 0.3);
    assert_eq!(s.stored, 4);
    assert_eq!(s.done(), 3);
    assert_eq!(s.done_in(PhaseKind::Warm), 3);
    s.record(
        &row(PhaseKind::Ping, Destination::Ping, Some(1.0), false),
        0.3,
    );
    assert_eq!(s.groups[2].0.to_string(), "ping");
    assert_eq!(s.done_in(PhaseKind::Ping), 1);
    assert_eq!(s.groups[0].0.to_string(), "warm · chat");
    let chat = &s.groups[0].1;
    assert_eq!((chat.done, chat.warmups, chat.failed), (2, 1, 1));
    assert_eq!(chat.ttft_ms, [120.0]);
    assert_eq!(s.errors["http_status"], 1);
    assert_eq!(
        s.last_errors[0].group,
        LiveKey::of(&row(PhaseKind::Warm, app("chat"), None, false))
    );
    assert_eq!(s.last_errors[0].kind, ErrorKind::HttpStatus);
    assert_eq!(s.last_errors[0].message, "HTTP 503");
    assert_eq!(s.spent_usd, 0.3);
}

/// Groups are phases and destinations, not names: a path named like
/// another phase counts in its own phase, and each phase counts only its
/// own groups.
#[test]
fn a_phase_counts_its_own_groups_whatever_their_names() {
    let mut s = state();
    s.record(&row(PhaseKind::Warm, app("fresh"), Some(10.0), false), 0.0);
    s.record(&row(PhaseKind::Fresh, app("chat"), Some(10.0), false), 0.0);
    s.record(&row(PhaseKind::Fresh, app("chat"), Some(10.0), false), 0.0);
    let direct = Destination::Direct {
        strategy: Some("default".into()),
    };
    s.record(&row(PhaseKind::Direct, direct, Some(10.0), false), 0.0);
    s.record(
        &row(
            PhaseKind::Direct,
            Destination::Direct { strategy: None },
            Some(10.0),
            false,
        ),
        0.0,
    );
    assert_eq!(s.done_in(PhaseKind::Warm), 1);
    assert_eq!(s.done_in(PhaseKind::Fresh), 2);
    assert_eq!(s.done_in(PhaseKind::Direct), 2);
    assert_eq!(s.done_in(PhaseKind::Cold), 0);
    let names: Vec<String> = s.groups.iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(
        names,
        ["warm · fresh", "fresh · chat", "direct · default", "direct"]
    );
    let unnamed = LiveKey {
        phase: PhaseKind::Warm,
        dest: Destination::App { path: None },
    };
    assert_eq!(unnamed.to_string(), "warm · -");
}

#[test]
fn the_last_errors_are_bounded() {
    let mut s = state();
    for _ in 0..(LAST_ERRORS + 3) {
        s.record(&row(PhaseKind::Warm, app("chat"), None, false), 0.0);
    }
    assert_eq!(s.last_errors.len(), LAST_ERRORS);
    assert_eq!(s.errors["http_status"], (LAST_ERRORS + 3) as u64);
}

#[test]
fn the_start_lag_is_of_arrivals_and_its_p99_waits_for_enough() {
    let mut s = state();
    assert_eq!(s.start_lag(), None);
    for i in 0..10 {
        let mut r = row(PhaseKind::Rate, app("chat"), Some(10.0), false);
        r.intended_start_ms = Some(100.0 * f64::from(i));
        // Late by i ms; the first started early, which is no lag.
        r.actual_start_ms = 100.0 * f64::from(i) + f64::from(i) - 0.5 * f64::from(i == 0);
        s.record(&r, 0.0);
    }
    // A closed-loop request has no intended start: no lag.
    s.record(&row(PhaseKind::Warm, app("chat"), Some(10.0), false), 0.0);
    let lag = s.start_lag().unwrap();
    assert_eq!(lag.n, 10);
    assert_eq!(lag.p50_ms, 4.5);
    assert_eq!(lag.p99_ms, None, "p99 needs 100 arrivals");
    for _ in 0..90 {
        s.start_lag_ms.push(1.0);
    }
    assert!(s.start_lag().unwrap().p99_ms.is_some());
}

#[test]
fn the_fullest_group_is_the_one_with_the_most_values() {
    let mut s = state();
    assert!(s.fullest().is_none());
    s.record(&row(PhaseKind::Warm, app("chat"), Some(10.0), false), 0.0);
    s.record(&row(PhaseKind::Warm, app("docs"), Some(10.0), false), 0.0);
    s.record(&row(PhaseKind::Warm, app("docs"), Some(12.0), false), 0.0);
    s.record(&row(PhaseKind::Warm, app("help"), None, false), 0.0);
    assert_eq!(s.fullest().unwrap().0.to_string(), "warm · docs");
    let g = &s.fullest().unwrap().1;
    assert_eq!(
        g.ttft(Percentile::P50, &Settings::new(1)).point(),
        Some(11.0)
    );
    assert_eq!(
        g.ttft(Percentile::P95, &Settings::new(1)),
        Stat::TooSmall { n: 2, needed: 20 }
    );
    assert_eq!(
        LiveGroup::default().ttft(Percentile::P50, &Settings::new(1)),
        Stat::TooSmall { n: 0, needed: 2 }
    );
}

#[test]
fn a_histogram_spreads_values_between_their_extremes() {
    assert_eq!(histogram(&[1.0, 2.0, 3.0, 4.0], 2), vec![2, 2]);
    assert_eq!(histogram(&[5.0, 5.0], 3), vec![2, 0, 0]);
    assert_eq!(histogram(&[], 3), vec![0, 0, 0]);
    assert_eq!(histogram(&[1.0], 0), vec![1]);
}

//! Cold probes: each one request, so each is stated as a value — its TTFT,
//! its excess over the warm median and where it falls among the warm
//! requests — never with an interval. A cold start is claimed only when it
//! repeats (analyze's `diagnose::cold`); a probe beyond the warm requests
//! that does not repeat is stated as what it is.

use firsttoken_analyze::diagnose::{ColdStart, ColdThreshold};
use firsttoken_analyze::{FindingKind, Stat};

use crate::format::{Unit, ms, ratio, signed, too_few};

/// What a probe must pass: `the warm p99 (812 ms)`, `all 12 warm requests
/// (at most 420 ms)`.
pub fn cold_threshold(threshold: ColdThreshold, threshold_ms: f64, warm_n: usize) -> String {
    match threshold {
        ColdThreshold::P99 => format!("the warm p99 ({})", ms(threshold_ms)),
        ColdThreshold::Maximum => {
            format!("all {warm_n} warm requests (at most {})", ms(threshold_ms))
        }
    }
}

/// What a probe on a new connection is judged without: `its own set-up
/// (DNS, connect, TLS)`, or the fresh requests' larger cost.
pub fn new_connection_left_out(cost: Option<f64>) -> String {
    match cost {
        Some(c) => format!(
            "its own set-up, or {} (the fresh requests' median − the warm median) when larger",
            ms(c)
        ),
        None => "its own set-up (DNS, connect, TLS)".to_string(),
    }
}

/// `+411 ms, +398 ms`: excesses as values.
fn excesses(values: &[f64]) -> String {
    values
        .iter()
        .map(|&v| signed(Unit::Ms, v))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Cold probes against the warm requests of their path.
pub fn cold(c: &ColdStart) -> String {
    let failed = c.probes.iter().filter(|p| p.error.is_some()).count();
    let (Some(threshold), Some(threshold_ms), Some(warm)) =
        (c.threshold, c.threshold_ms, c.warm_median.point())
    else {
        let why = match c.warm_median {
            Stat::TooSmall { n, needed } => too_few(n, needed),
            Stat::Ok(_) => "no value".to_string(),
        };
        return format!(
            "{} cold probe(s), but {why} among the warm requests to compare them with",
            c.probes.len()
        );
    };
    let bar = cold_threshold(threshold, threshold_ms, c.warm_n);
    let warm = format!("the warm median {} (n = {})", ms(warm), c.warm_n);
    let beyond: Vec<_> = c
        .probes
        .iter()
        .filter(|p| p.beyond_warm == Some(true))
        .collect();
    let values = excesses(&c.excesses_beyond());
    let ratios = |ps: &mut dyn Iterator<Item = Option<f64>>| {
        ps.flatten().map(ratio).collect::<Vec<_>>().join(", ")
    };
    let mut s = if c.repeats {
        format!(
            "cold start: {} of {} probes beyond {bar}, {values} over {warm} ({})",
            c.beyond,
            c.judged,
            ratios(&mut beyond.iter().map(|p| p.ratio))
        )
    } else if c.beyond > 0 {
        let what = if c.judged == 1 {
            "one probe is a value: a cold start is shown only when it repeats (send two or more cold probes)"
        } else {
            "it does not repeat across the probes, so no cold start is shown"
        };
        format!(
            "{} of {} probe(s) beyond {bar} ({values} over {warm}, {}): {what}",
            c.beyond,
            c.judged,
            ratios(&mut beyond.iter().map(|p| p.ratio))
        )
    } else {
        let ranks: Vec<String> = c
            .probes
            .iter()
            .filter_map(|p| p.warm_rank)
            .map(|r| format!("{:.0} %", 100.0 * r))
            .collect();
        format!(
            "no cold start shown: none of {} probe(s) beyond {bar}; at {} of {warm}, above {} of the warm requests",
            c.judged,
            ratios(&mut c.probes.iter().map(|p| p.ratio)),
            ranks.join(", ")
        )
    };
    if failed > 0 {
        s.push_str(&format!("; {failed} probe(s) failed"));
    }
    s
}

/// The findings line of a repeated cold start, short enough for one line:
/// `cold start in 3/3 probes, +411 ms, +398 ms, +420 ms over warm
/// 277 ms` (the warm median); more than three excesses as their range and median.
/// `None` for another kind.
pub fn cold_finding(kind: &FindingKind) -> Option<String> {
    let FindingKind::ColdStart {
        probes,
        beyond,
        warm_median_ms,
        excess_ms,
        ..
    } = kind
    else {
        return None;
    };
    let values = if excess_ms.len() <= 3 {
        excesses(excess_ms)
    } else {
        let mut v = excess_ms.clone();
        v.sort_by(f64::total_cmp);
        let median = firsttoken_analyze::percentile_sorted(&v, 50.0).unwrap_or(v[0]);
        format!(
            "{} to {} (median {})",
            signed(Unit::Ms, v[0]),
            signed(Unit::Ms, v[v.len() - 1]),
            signed(Unit::Ms, median)
        )
    };
    Some(format!(
        "cold start in {beyond}/{probes} probes, {values} over warm {}",
        ms(*warm_median_ms)
    ))
}

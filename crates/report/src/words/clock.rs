//! The measuring client's clock, one sentence per session: which clock
//! stamped the arrivals, the client lag and its verdict against the
//! threshold (words follow the p99's interval), how often the first token
//! shared its socket read, and the open-loop start lag.

use firsttoken_analyze::Direction;
use firsttoken_analyze::diagnose::{ClientClock, SessionClock};

use crate::format::{self, Unit, ms, stat};

/// Above this share of shared first-token reads, TTFT's 99th percentile
/// can be a shared read's late stamp.
const SHARED_READ_P99_SHARE: f64 = 0.01;

/// The sentences for one session's client clock, each with a short name
/// of what it is about (`clock`, `client lag`, `shared reads`, `start lag`).
pub fn session_clock(c: &SessionClock, threshold_ms: f64) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let who = format!("session {}", c.session);
    if c.kernel + c.user > 0 {
        out.push(("clock", match (c.kernel, c.user) {
            (k, 0) => format!(
                "{who}: all {k} requests stamped on arrival with the kernel's receive time"
            ),
            (0, u) => format!(
                "{who}: all {u} requests stamped in user space (no kernel timestamps): \
                 their arrival times include the client's own lag"
            ),
            (k, u) => format!(
                "{who}: {k} requests stamped with the kernel's receive time, {u} in user space; \
                 the two are not pooled in this sentence's figures"
            ),
        }));
    }
    if c.lag_n > 0 {
        let limit = ms(threshold_ms);
        let judged = match c.verdict {
            Direction::Increase => format!(
                "above the {limit} threshold: the client was overloaded (see the claims and limits)"
            ),
            Direction::Decrease => format!("below the {limit} threshold"),
            Direction::TooFewSamples => "not judged against the threshold".to_string(),
            Direction::TooSmallToMatter => format!(
                "{} from the {limit} threshold",
                crate::words::TOO_SMALL_TO_MATTER
            ),
            Direction::NoDetectableDifference | Direction::Inconclusive => format!(
                "its interval reaches the {limit} threshold: overload is {}",
                crate::words::INCONCLUSIVE
            ),
        };
        out.push((
            "client lag",
            format!(
                "{who}: client lag (kernel receive → handled) p50 = {}, p99 = {}: {judged}",
                stat(Unit::Ms, &c.lag_p50),
                stat(Unit::Ms, &c.lag_p99)
            ),
        ));
    }
    if c.read_counted > 0 {
        let share = c.shared_read as f64 / c.read_counted as f64;
        let mut line = format!(
            "{who}: the first content token shared its socket read with other stream events in \
             {} of {} requests ({}); for those the stamp is the read's last segment",
            c.shared_read,
            c.read_counted,
            format::percent(Some(share))
        );
        // More than 1 % of the requests: the 99th percentile of TTFT can
        // be one of those late stamps.
        if share > SHARED_READ_P99_SHARE {
            line.push_str(
                ", which is late by as long as the read's later events took to follow the first \
                 token; more than 1 % of requests, so TTFT's p99 can be such a stamp",
            );
        }
        out.push(("shared reads", line));
    }
    if let Some(l) = c.start_lag_p99_ms {
        out.push((
            "start lag",
            format!(
                "{who}: open-loop start lag p99 = {} (how late requests left against their schedule)",
                ms(l)
            ),
        ));
    }
    out
}

/// Every session's sentences, in order.
pub fn client_clock(c: &ClientClock) -> Vec<String> {
    c.sessions
        .iter()
        .flat_map(|s| session_clock(s, c.threshold_ms))
        .map(|(_, line)| line)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_analyze::{Ci, Estimate, Stat};

    fn est(point: f64, lower: f64, upper: f64) -> Stat {
        Stat::Ok(Estimate {
            point,
            standard_error: 0.1,
            ci: Ci {
                level: 0.95,
                lower,
                upper,
            },
        })
    }

    fn clock(verdict: Direction, p99: Stat) -> SessionClock {
        SessionClock {
            session: "s1".into(),
            kernel: 200,
            user: 0,
            lag_n: 200,
            lag_p50: est(0.2, 0.1, 0.3),
            lag_p99: p99,
            verdict,
            shared_read: 3,
            read_counted: 200,
            start_lag_p99_ms: Some(1.5),
        }
    }

    #[test]
    fn words_follow_the_p99_interval() {
        let over = session_clock(&clock(Direction::Increase, est(9.0, 7.0, 11.0)), 5.0);
        let text: Vec<&str> = over.iter().map(|(_, l)| l.as_str()).collect();
        assert!(text[0].contains("all 200 requests stamped on arrival with the kernel"));
        assert!(text[1].contains("overloaded"), "{}", text[1]);
        assert!(text[2].contains("3 of 200 requests (1.5 %)"), "{}", text[2]);
        assert!(
            text[2].contains("TTFT's p99 can be such a stamp"),
            "{}",
            text[2]
        );
        let mut few = clock(Direction::Decrease, est(0.5, 0.4, 0.7));
        few.shared_read = 2;
        let few = session_clock(&few, 5.0);
        assert!(
            few[2].1.contains("2 of 200 requests (1.0 %)"),
            "{}",
            few[2].1
        );
        assert!(!few[2].1.contains("p99"), "{}", few[2].1);
        assert!(text[3].contains("open-loop start lag"));
        let under = session_clock(&clock(Direction::Decrease, est(0.5, 0.4, 0.7)), 5.0);
        assert!(under[1].1.contains("below the 5"), "{}", under[1].1);
        assert!(!under[1].1.contains("overloaded"));
        let unsure = session_clock(&clock(Direction::Inconclusive, est(5.5, 3.0, 8.0)), 5.0);
        assert!(unsure[1].1.contains(crate::words::INCONCLUSIVE));
        assert!(!unsure[1].1.contains("was overloaded"));
        let names: Vec<&str> = over.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["clock", "client lag", "shared reads", "start lag"]);
    }
}

//! The measuring client's clock, one sentence per session: which clock
//! stamped the arrivals, the client lag and its verdict against the
//! threshold (words follow the p99's interval), how often the first token
//! shared its socket read, and the open-loop start lag.

use firsttoken_analyze::Direction;
use firsttoken_analyze::diagnose::{ClientClock, SessionClock};

use crate::format::{self, Unit, ms, stat};

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
            Direction::NoDetectableDifference | Direction::Inconclusive => format!(
                "its interval reaches the {limit} threshold: whether the client was overloaded is {}",
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
        out.push((
            "shared reads",
            format!(
                "{who}: the first content token shared its socket read with other stream events in \
                 {} of {} requests ({}); for those the stamp is the read's last segment",
                c.shared_read,
                c.read_counted,
                format::percent(Some(share))
            ),
        ));
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

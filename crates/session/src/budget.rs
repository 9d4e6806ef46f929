//! Spending: the recorder prices each sample, stores it and only then charges
//! the budget; the executor only asks whether the next requests may start.

use std::sync::Mutex;

use firsttoken_plan::config::Config;
use firsttoken_plan::protocol::{Dest, Planned};
use firsttoken_record::Sample;

/// Spending so far and the limit. The session stops before requests whose
/// expected cost (the running mean of the charged requests) would cross it.
#[derive(Debug, Default)]
pub struct Budget {
    inner: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    limit_usd: Option<f64>,
    spent_usd: f64,
    charged: u64,
}

impl Budget {
    /// A budget of `limit_usd` (no limit when `None`).
    pub fn new(limit_usd: Option<f64>) -> Budget {
        Budget {
            inner: Mutex::new(State {
                limit_usd,
                ..State::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain numbers, each update complete: a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Charge a stored request's cost.
    pub fn charge(&self, cost_usd: f64) {
        let mut b = self.lock();
        b.spent_usd += cost_usd;
        b.charged += 1;
    }

    /// Spent so far, USD.
    pub fn spent(&self) -> f64 {
        self.lock().spent_usd
    }

    /// The limit, USD.
    pub fn limit(&self) -> Option<f64> {
        self.lock().limit_usd
    }

    /// True when `n` more requests are expected to stay within the limit.
    pub fn allows(&self, n: usize) -> bool {
        let b = self.lock();
        match b.limit_usd {
            None => true,
            Some(limit) => {
                let mean = if b.charged == 0 {
                    0.0
                } else {
                    b.spent_usd / b.charged as f64
                };
                b.spent_usd + mean * n as f64 <= limit
            }
        }
    }
}

impl firsttoken_drive::Gate for Budget {
    fn allows(&self, n: usize) -> bool {
        Budget::allows(self, n)
    }
}

/// Fill in a direct request's cost from the config's price table when the
/// stream reported none (a reported cost is kept).
pub fn price(cfg: &Config, planned: &Planned, sample: &mut Sample) {
    if sample.cost_usd.is_some() {
        return;
    }
    let model = match planned.dest {
        Dest::Direct(_) => cfg.direct.as_ref().map(|d| d.model.as_str()),
        _ => None,
    };
    if let (Some(p), Some(out)) = (model.and_then(|m| cfg.prices.get(m)), sample.output_tokens) {
        let input = sample.input_tokens.unwrap_or(0);
        sample.cost_usd = Some((input as f64 * p.input + out as f64 * p.output) / 1e6);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_plan::protocol::PhaseKind;

    fn planned(dest: Dest) -> Planned {
        Planned {
            phase: PhaseKind::Direct,
            dest,
            fresh: false,
            concurrency: None,
            prompt: 0,
        }
    }

    #[test]
    fn direct_costs_come_from_the_price_table_only_without_usage_cost() {
        let cfg = Config::parse(firsttoken_plan::config::DEFAULT_CONFIG, "t").unwrap();
        let mut sample = Sample::empty(0, 0, firsttoken_record::Connection::Reused);
        sample.input_tokens = Some(1_000_000);
        sample.output_tokens = Some(2_000_000);
        price(&cfg, &planned(Dest::App(0)), &mut sample);
        assert_eq!(sample.cost_usd, None, "app requests are not priced");
        price(&cfg, &planned(Dest::Direct(0)), &mut sample);
        // 1 M input × $0.50 + 2 M output × $1.50 (the example config's prices).
        assert_eq!(sample.cost_usd, Some(3.5));
        sample.cost_usd = Some(0.01);
        price(&cfg, &planned(Dest::Direct(0)), &mut sample);
        assert_eq!(sample.cost_usd, Some(0.01), "a reported cost is kept");
    }

    #[test]
    fn the_running_mean_stops_before_the_limit() {
        let b = Budget::new(Some(1.0));
        assert!(b.allows(100), "nothing charged yet: no estimate");
        b.charge(0.3);
        b.charge(0.3);
        assert!(b.allows(0));
        assert!(!b.allows(2), "0.6 + 2 × 0.3 > 1.0");
        assert!(Budget::new(None).allows(usize::MAX));
    }
}

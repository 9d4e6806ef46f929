//! Spending: the recorder prices each sample, stores it and only then
//! settles it with the budget; the executor only asks whether the next
//! requests may start.
//!
//! Only direct requests are priced (an app's own upstream spending is not
//! ours to see). So a direct request is admitted only once every earlier
//! direct request has been priced: the budget then knows exactly what was
//! spent, and stops before a request whose expected cost (the mean of the
//! priced requests so far) would cross the limit. Direct requests run one at
//! a time, so the wait is the recorder's few milliseconds, not a request.

use std::sync::Mutex;

use tokio::sync::Notify;

use firsttoken_drive::{Gate, GateAnswer};
use firsttoken_plan::config::Config;
use firsttoken_plan::protocol::{Dest, Planned};
use firsttoken_record::Sample;

/// Spending so far and the limit.
#[derive(Debug, Default)]
pub struct Budget {
    inner: Mutex<State>,
    settled: Notify,
}

#[derive(Debug, Default)]
struct State {
    limit_usd: Option<f64>,
    spent_usd: f64,
    /// Requests that carried a cost.
    charged: u64,
    /// Direct requests admitted and not yet settled.
    unpriced_direct: u64,
}

impl State {
    /// Whether `direct` more direct requests are expected to fit.
    fn fits(&self, direct: usize) -> bool {
        let Some(limit) = self.limit_usd else {
            return true;
        };
        let mean = if self.charged == 0 {
            0.0
        } else {
            self.spent_usd / self.charged as f64
        };
        self.spent_usd + mean * direct as f64 <= limit
    }
}

impl Budget {
    /// A budget of `limit_usd` (no limit when `None`).
    pub fn new(limit_usd: Option<f64>) -> Budget {
        Budget {
            inner: Mutex::new(State {
                limit_usd,
                ..State::default()
            }),
            settled: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain numbers, each update complete: a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A stored request: its destination and its cost, if it had one.
    pub fn settle(&self, dest: Dest, cost_usd: Option<f64>) {
        {
            let mut b = self.lock();
            if matches!(dest, Dest::Direct(_)) {
                b.unpriced_direct = b.unpriced_direct.saturating_sub(1);
            }
            if let Some(c) = cost_usd {
                b.spent_usd += c;
                b.charged += 1;
            }
        }
        self.settled.notify_waiters();
    }

    /// Spent so far, USD.
    pub fn spent(&self) -> f64 {
        self.lock().spent_usd
    }

    /// May `requests` start? Direct requests wait until every earlier direct
    /// request is priced, then are admitted when their expected cost fits.
    pub async fn admit(&self, requests: &[Dest]) -> bool {
        let direct = requests
            .iter()
            .filter(|d| matches!(d, Dest::Direct(_)))
            .count();
        loop {
            // Register before looking, so a settle in between is not missed.
            let settled = self.settled.notified();
            {
                let mut b = self.lock();
                if b.limit_usd.is_none() {
                    return true;
                }
                if direct == 0 || b.unpriced_direct == 0 {
                    let ok = b.fits(direct);
                    if ok {
                        b.unpriced_direct += direct as u64;
                    }
                    return ok;
                }
            }
            settled.await;
        }
    }
}

impl Gate for Budget {
    fn allows<'a>(&'a self, requests: &'a [Dest]) -> GateAnswer<'a> {
        Box::pin(self.admit(requests))
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
            turn: None,
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

    #[tokio::test]
    async fn direct_requests_wait_for_the_previous_price_and_stop_before_the_limit() {
        let b = std::sync::Arc::new(Budget::new(Some(1.0)));
        let d = [Dest::Direct(0)];
        assert!(b.admit(&d).await, "nothing priced yet: no estimate");
        // The second waits until the first is priced.
        let waiting = tokio::spawn({
            let b = b.clone();
            async move { b.admit(&[Dest::Direct(0)]).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "must wait for the first price");
        b.settle(Dest::Direct(0), Some(0.4));
        assert!(waiting.await.unwrap(), "0.4 + 0.4 fits in 1.0");
        b.settle(Dest::Direct(0), Some(0.4));
        assert!(!b.admit(&d).await, "0.8 + 0.4 > 1.0");
        assert!(
            b.admit(&[Dest::App(0), Dest::App(0)]).await,
            "app requests cost nothing"
        );
        assert!(Budget::new(None).admit(&[Dest::Direct(0); 3]).await);
    }
}

//! The slots of a run: one shared [`Endpoint`] per destination (built once,
//! TLS configuration included), numbered slots kept between steps, and a
//! pool for open-loop arrivals.
//!
//! Numbered slots: a warm single request uses slot 0 of its destination, a
//! burst of k slots 0..k, closed-loop worker w slot w. Fresh requests use
//! their own numbered slots, so they never close a warm connection. Pooled
//! slots serve arrivals: an idle one of the destination, else a new one.

use std::collections::HashMap;
use std::sync::Arc;

use firsttoken_plan::protocol::{Dest, Protocol};

use super::RequestSource;
use crate::DriveError;
use crate::slot::{Endpoint, Slot};

/// A destination as a map key.
pub(super) type DestKey = (u8, usize);

/// The key of a destination.
pub(super) fn dest_key(d: Dest) -> DestKey {
    match d {
        Dest::App(i) => (0, i),
        Dest::Direct(i) => (1, i),
        Dest::Ping => (2, 0),
    }
}

/// Where a lane's slot is kept between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Home {
    /// Numbered slot `index` of a destination, for fresh or warm requests.
    Numbered {
        /// The destination.
        dest: DestKey,
        /// True for the slots of fresh requests.
        fresh: bool,
        /// The slot's number.
        index: u32,
    },
    /// The arrivals pool of a destination; the lane's worker is the slot's id.
    Pool(DestKey),
}

/// Every slot of a run.
pub(super) struct Slots {
    endpoints: HashMap<DestKey, Arc<Endpoint>>,
    numbered: HashMap<(DestKey, bool, u32), Slot>,
    /// Idle pooled slots with their ids.
    pool: Vec<(DestKey, u32, Slot)>,
    next_pooled: u32,
}

impl Slots {
    /// One endpoint per destination the protocol uses.
    pub(super) fn for_protocol<S: RequestSource>(
        protocol: &Protocol,
        source: &S,
    ) -> Result<Slots, DriveError> {
        let mut endpoints = HashMap::new();
        for p in protocol.steps.iter().flat_map(super::planned) {
            if let std::collections::hash_map::Entry::Vacant(e) = endpoints.entry(dest_key(p.dest))
            {
                e.insert(Endpoint::new(source.spec(p.dest))?);
            }
        }
        Ok(Slots {
            endpoints,
            numbered: HashMap::new(),
            pool: Vec::new(),
            next_pooled: 0,
        })
    }

    /// One untimed TLS handshake per https destination, all at once, each
    /// bounded by its connect timeout (see [`Endpoint::prime`]).
    /// The returned future does not borrow the slots.
    pub(super) fn prime(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let mut all = tokio::task::JoinSet::new();
        for e in self.endpoints.values() {
            let e = e.clone();
            all.spawn(async move { e.prime().await });
        }
        async move {
            // A panic in a handshake is the first real request's to report.
            while all.join_next().await.is_some() {}
        }
    }

    fn fresh_slot(&self, dest: DestKey) -> Slot {
        // Invariant: `for_protocol` built an endpoint for every destination
        // of the protocol, and lanes only come from the protocol.
        let endpoint = self
            .endpoints
            .get(&dest)
            .expect("an endpoint for every destination of the protocol");
        Slot::on(endpoint.clone())
    }

    /// The slot for `home`, and its worker number.
    pub(super) fn take(&mut self, home: Home) -> (Slot, u32) {
        match home {
            Home::Numbered { dest, fresh, index } => {
                let slot = self
                    .numbered
                    .remove(&(dest, fresh, index))
                    .unwrap_or_else(|| self.fresh_slot(dest));
                (slot, index)
            }
            Home::Pool(dest) => match self.pool.iter().position(|(d, ..)| *d == dest) {
                Some(i) => {
                    let (_, id, slot) = self.pool.swap_remove(i);
                    (slot, id)
                }
                None => {
                    let id = self.next_pooled;
                    self.next_pooled = self.next_pooled.saturating_add(1);
                    (self.fresh_slot(dest), id)
                }
            },
        }
    }

    /// Keep `slot` (with worker number `worker`) at `home`.
    pub(super) fn put(&mut self, home: Home, worker: u32, slot: Slot) {
        match home {
            Home::Numbered { dest, fresh, index } => {
                self.numbered.insert((dest, fresh, index), slot);
            }
            Home::Pool(dest) => self.pool.push((dest, worker, slot)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_plan::protocol::{PhaseKind, Planned, Step};
    use firsttoken_plan::{ProbeSpec, RequestTemplate, Target};

    struct Two(ProbeSpec, ProbeSpec);

    impl RequestSource for Two {
        fn spec(&self, dest: Dest) -> &ProbeSpec {
            match dest {
                Dest::App(_) => &self.0,
                _ => &self.1,
            }
        }
        fn request(&self, _: &Planned) -> RequestTemplate {
            self.0.request.clone()
        }
    }

    fn spec(url: &str) -> ProbeSpec {
        let t = Target::parse(url).unwrap();
        ProbeSpec::new(RequestTemplate::new(t, None, None).unwrap())
    }

    #[test]
    fn tls_is_configured_once_per_destination_and_shared_by_its_slots() {
        let mut app = spec("https://127.0.0.1:1/");
        app.tls.insecure = true;
        let mut ping = spec("https://127.0.0.1:2/");
        ping.tls.insecure = true;
        let planned = |dest| Planned {
            phase: PhaseKind::Warm,
            dest,
            fresh: false,
            concurrency: None,
            prompt: 0,
            turn: None,
        };
        let protocol = Protocol {
            steps: vec![
                Step::closed(64, 64, planned(Dest::App(0))),
                Step::One(planned(Dest::Ping)),
            ],
        };
        let mut slots = Slots::for_protocol(&protocol, &Two(app, ping)).unwrap();
        assert_eq!(slots.endpoints.len(), 2);
        let app = dest_key(Dest::App(0));
        let a: Vec<Slot> = (0..64)
            .map(|index| {
                let home = Home::Numbered {
                    dest: app,
                    fresh: index % 2 == 0,
                    index,
                };
                slots.take(home).0
            })
            .collect();
        let b = slots.take(Home::Pool(app)).0;
        let first = a[0]
            .endpoint()
            .tls()
            .expect("https has a TLS configuration");
        for s in a.iter().chain([&b]) {
            assert!(Arc::ptr_eq(s.endpoint(), a[0].endpoint()));
            assert!(Arc::ptr_eq(s.endpoint().tls().unwrap(), first));
        }
        let ping = slots.take(Home::Pool(dest_key(Dest::Ping))).0;
        assert!(!Arc::ptr_eq(ping.endpoint(), a[0].endpoint()));
    }
}

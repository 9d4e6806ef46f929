//! The database across a network, as a hosted PostgreSQL behaves: every
//! database call first waits the modelled round-trip time (`db_rtt`), and a
//! call on a new connection (`db_connect_per_call`, a driver without a
//! pool) waits `db_handshake_rtts` more for TCP, TLS and authentication.
//! The query itself then runs on the real store (SQLite or PostgreSQL).
//!
//! How the wait happens is the point of the known-bad `blocking_db` mode:
//! a synchronous driver sleeps the thread it runs on
//! (`std::thread::sleep`), which on an async worker stops every other task
//! scheduled there; pooled async access awaits a timer (`tokio::time::sleep`)
//! and the worker serves others meanwhile.

use std::time::Duration;

use crate::config::{Config, DbFaultScope};
use crate::route::Route;

/// How one piece of code reaches the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Access {
    /// A synchronous driver on the async worker (`blocking_db`).
    pub blocking: bool,
    /// A new connection per call (`db_connect_per_call`).
    pub connect_per_call: bool,
    /// Extra sequential queries before streaming (`db_roundtrips`).
    pub extra_queries: u32,
}

impl Access {
    /// Pooled, async, no extra queries: the good way.
    pub const POOLED: Access = Access {
        blocking: false,
        connect_per_call: false,
        extra_queries: 0,
    };
}

/// The modelled link to the database and which code uses which access.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DbLink {
    rtt: Duration,
    handshake_rtts: u32,
    faulty: Access,
    scope: DbFaultScope,
}

impl DbLink {
    pub(crate) fn new(config: &Config) -> DbLink {
        let o = config.options();
        DbLink {
            rtt: o.db_rtt,
            handshake_rtts: o.db_handshake_rtts,
            faulty: Access {
                blocking: o.blocking_db,
                connect_per_call: o.db_connect_per_call,
                extra_queries: o.db_roundtrips,
            },
            scope: o.db_fault_scope,
        }
    }

    /// The access of code outside the answer paths (accounts, auth, health).
    pub(crate) fn shared(&self) -> Access {
        match self.scope {
            DbFaultScope::AllPaths => self.faulty,
            DbFaultScope::ChatPath => Access::POOLED,
        }
    }

    /// The access of an answer path.
    pub(crate) fn path(&self, route: Route) -> Access {
        match (self.scope, route) {
            (DbFaultScope::AllPaths, _) | (DbFaultScope::ChatPath, Route::Chat) => self.faulty,
            (DbFaultScope::ChatPath, Route::Docs) => Access::POOLED,
        }
    }

    /// Round trips of one call with `access`.
    pub(crate) fn round_trips(&self, access: Access) -> u32 {
        1 + if access.connect_per_call {
            self.handshake_rtts
        } else {
            0
        }
    }

    /// Pay the network cost of one call: wait its round trips, add them to
    /// `trips`. With `blocking` access the wait holds the calling thread.
    pub(crate) async fn call(&self, access: Access, trips: &mut u32) {
        let n = self.round_trips(access);
        *trips += n;
        let wait = self.rtt * n;
        if wait.is_zero() {
            return;
        }
        if access.blocking {
            // The known-bad mode: a synchronous driver waiting for the
            // network on the async worker thread.
            std::thread::sleep(wait);
        } else {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Options;

    fn link(tweak: impl FnOnce(&mut Options)) -> DbLink {
        let mut o = Options::default();
        tweak(&mut o);
        DbLink::new(&Config::new(o).expect("valid"))
    }

    #[test]
    fn scope_picks_the_faulty_access() {
        let l = link(|o| {
            o.blocking_db = true;
            o.db_roundtrips = 3;
            o.db_fault_scope = DbFaultScope::ChatPath;
        });
        assert!(l.path(Route::Chat).blocking);
        assert_eq!(l.path(Route::Chat).extra_queries, 3);
        assert_eq!(l.path(Route::Docs), Access::POOLED);
        assert_eq!(l.shared(), Access::POOLED);
        let l = link(|o| o.blocking_db = true);
        assert!(l.path(Route::Docs).blocking && l.shared().blocking);
    }

    #[test]
    fn a_new_connection_pays_its_handshake() {
        let l = link(|o| o.db_connect_per_call = true);
        assert_eq!(l.round_trips(Access::POOLED), 1);
        assert_eq!(l.round_trips(l.shared()), 5);
    }
}

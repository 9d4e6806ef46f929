//! A network between the user and the app, on loopback.
//!
//! [`Relay`] is a TCP relay: it listens on a local address, opens one
//! upstream connection per client connection, and in each direction adds a
//! one-way delay, jitter and a bandwidth limit ([`Link`]). Bytes keep their
//! order (jitter spreads reads out but each direction is a FIFO: see
//! [`schedule`]), every connection has its own state, and each direction
//! queues at most [`ShapeSpec::buffer_bytes`] before it stops reading and
//! lets TCP's flow control push back on the sender. A FIN is delivered after
//! the bytes queued before it, so connections close in both directions.
//!
//! Release instants are computed when bytes arrive and kept by a
//! high-resolution timer thread (tokio's timer rounds to whole
//! milliseconds), so the added round trip is twice the delay to within
//! tens of microseconds on an idle machine.
//!
//! What it does not emulate: loss, reordering, and TCP's own handshake (the
//! kernel completes it before the relay accepts, so a connect through the
//! relay costs loopback time; TLS and HTTP round trips pay the delay).
//!
//! # Example
//! ```no_run
//! # async fn f() -> Result<(), firsttoken_shape::ShapeError> {
//! use firsttoken_shape::{Profile, Relay, ShapeSpec};
//! let spec = ShapeSpec::new(Profile::FourG.link());
//! let relay = Relay::start("127.0.0.1:0".parse().unwrap(), "127.0.0.1:8090", spec).await?;
//! println!("point the client at http://{}", relay.local_addr());
//! // … measure …
//! relay.stop().await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod profile;
mod relay;
pub mod schedule;
mod timer;

pub use profile::{Link, Profile, Rate};
pub use relay::{READ_CHUNK, Relay, RelayStats, ShapeSpec, serve};

use std::net::SocketAddr;

/// Everything that can go wrong setting up a relay. Errors on one
/// connection close that connection and are not reported.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    /// A rate that is not `NUMBER{bit,kbit,mbit,gbit}` in range.
    #[error("invalid rate {text:?}: {reason}")]
    InvalidRate {
        /// What was given.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A delay or jitter out of range.
    #[error("invalid link: {reason}")]
    InvalidLink {
        /// What is wrong.
        reason: String,
    },
    /// A profile name that is not one of [`Profile::ALL`].
    #[error("unknown network profile {name:?} (expected fibre, cable, 4g or congested-mobile)")]
    UnknownProfile {
        /// What was given.
        name: String,
    },
    /// A buffer or burst size out of range.
    #[error("invalid buffer of {bytes} bytes: it must be between {min} and {max}")]
    InvalidBuffer {
        /// What was given.
        bytes: usize,
        /// The smallest accepted.
        min: usize,
        /// The largest accepted.
        max: usize,
    },
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The bound listener has no local address.
    #[error("cannot read the listener's address")]
    LocalAddr {
        /// Why.
        source: std::io::Error,
    },
    /// The timer thread could not be started.
    #[error("cannot start the relay's timer thread")]
    Timer {
        /// Why.
        source: std::io::Error,
    },
    /// A listen address other computers could reach, not allowed.
    #[error(
        "{addr} is not a loopback address: the relay would be open to the network (listen on 127.0.0.1 or ::1, or pass --allow-public if that is what you want)"
    )]
    NotLoopback {
        /// The address.
        addr: SocketAddr,
    },
}

/// Refuse a listen address outside loopback unless `allow_public`: a
/// relay on `0.0.0.0` relays for anyone who reaches the machine.
pub fn check_listen(addr: SocketAddr, allow_public: bool) -> Result<(), ShapeError> {
    if allow_public || addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(ShapeError::NotLoopback { addr })
    }
}

#[cfg(test)]
mod listen_tests {
    use super::*;

    /// Issue 29, item 16: `shape --listen 0.0.0.0:…` was an open relay.
    #[test]
    fn only_loopback_listens_unless_allowed() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(check_listen(at("127.0.0.1:0"), false).is_ok());
        assert!(check_listen(at("[::1]:9"), false).is_ok());
        let e = check_listen(at("0.0.0.0:8091"), false).unwrap_err();
        assert!(e.to_string().contains("--allow-public"), "{e}");
        assert!(check_listen(at("192.168.1.5:1"), false).is_err());
        assert!(check_listen(at("0.0.0.0:8091"), true).is_ok());
    }
}

//! The relay: accept on loopback, connect upstream, and move bytes in both
//! directions through a [`Schedule`] each.
//!
//! Per direction, a reader stamps every read on arrival, asks the schedule
//! when it may leave and queues it; a writer sleeps until that instant and
//! writes. The queue holds at most the buffer's worth of bytes: when it is
//! full the reader stops reading, the kernel's receive buffer fills and TCP
//! flow control slows the sender, as a full router queue would (minus the
//! drops). A FIN is queued like data and delivered (shutdown of the write
//! side) after every byte before it. An error on either socket ends the
//! connection: both sockets are closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::ShapeError;
use crate::profile::Link;
use crate::schedule::Schedule;
use crate::timer::Timer;

/// The most bytes taken from a socket in one read.
pub const READ_CHUNK: usize = 16 * 1024;

/// How a relay shapes each connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeSpec {
    /// Delay, jitter and rate, the same in both directions.
    pub link: Link,
    /// Bytes queued per direction at most (read, not yet written). Also
    /// bounds throughput to `buffer_bytes / delay` when that is below the
    /// rate.
    pub buffer_bytes: usize,
    /// Token bucket depth in bytes: how much may pass at once after an idle
    /// spell before the rate applies.
    pub burst_bytes: usize,
    /// Seed of the jitter draws (each connection and direction derives its own).
    pub seed: u64,
}

impl ShapeSpec {
    /// The default queue: 256 KiB per direction, above the bandwidth-delay
    /// product of every profile (100 Mbit/s × 5 ms = 62.5 kB).
    pub const DEFAULT_BUFFER: usize = 256 * 1024;
    /// The largest queue accepted: 64 MiB per direction.
    pub const MAX_BUFFER: usize = 64 * 1024 * 1024;
    /// The default bucket depth: one read.
    pub const DEFAULT_BURST: usize = READ_CHUNK;

    /// `link` with the default buffer, burst and seed 0.
    pub fn new(link: Link) -> ShapeSpec {
        ShapeSpec {
            link,
            buffer_bytes: Self::DEFAULT_BUFFER,
            burst_bytes: Self::DEFAULT_BURST,
            seed: 0,
        }
    }

    /// Check the link and the buffer (at least one read, at most [`Self::MAX_BUFFER`]).
    pub fn validate(&self) -> Result<(), ShapeError> {
        self.link.validate()?;
        if !(READ_CHUNK..=Self::MAX_BUFFER).contains(&self.buffer_bytes) {
            return Err(ShapeError::InvalidBuffer {
                bytes: self.buffer_bytes,
                min: READ_CHUNK,
                max: Self::MAX_BUFFER,
            });
        }
        if self.burst_bytes > Self::MAX_BUFFER {
            return Err(ShapeError::InvalidBuffer {
                bytes: self.burst_bytes,
                min: 0,
                max: Self::MAX_BUFFER,
            });
        }
        Ok(())
    }
}

/// Counters of a running relay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Client connections accepted.
    pub accepted: u64,
    /// Connections dropped because the upstream did not accept.
    pub upstream_failures: u64,
    /// Connections open now.
    pub active: u64,
    /// The most bytes ever queued in one direction of one connection.
    pub peak_queued_bytes: usize,
}

#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    upstream_failures: AtomicU64,
    active: AtomicU64,
    peak_queued: AtomicUsize,
}

impl Counters {
    fn snapshot(&self) -> RelayStats {
        RelayStats {
            accepted: self.accepted.load(Ordering::Relaxed),
            upstream_failures: self.upstream_failures.load(Ordering::Relaxed),
            active: self.active.load(Ordering::Relaxed),
            peak_queued_bytes: self.peak_queued.load(Ordering::Relaxed),
        }
    }
}

/// A relay running on the current tokio runtime; stops (and closes every
/// connection) when dropped.
#[derive(Debug)]
pub struct Relay {
    addr: SocketAddr,
    cancel: CancellationToken,
    task: Option<JoinHandle<Result<(), ShapeError>>>,
    counters: Arc<Counters>,
}

impl Relay {
    /// Listen on `listen` (port 0 picks one) and relay every connection to
    /// `upstream` (`host:port`, resolved per connection).
    pub async fn start(
        listen: SocketAddr,
        upstream: impl Into<String>,
        spec: ShapeSpec,
    ) -> Result<Relay, ShapeError> {
        spec.validate()?;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| ShapeError::Bind {
                addr: listen,
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ShapeError::LocalAddr { source })?;
        let cancel = CancellationToken::new();
        let counters = Arc::new(Counters::default());
        let task = tokio::spawn(serve_counted(
            listener,
            upstream.into(),
            spec,
            cancel.clone(),
            counters.clone(),
        ));
        Ok(Relay {
            addr,
            cancel,
            task: Some(task),
            counters,
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters so far.
    pub fn stats(&self) -> RelayStats {
        self.counters.snapshot()
    }

    /// Stop accepting, close every connection and wait for the accept loop.
    pub async fn stop(mut self) -> Result<(), ShapeError> {
        self.cancel.cancel();
        match self.task.take() {
            Some(task) => match task.await {
                Ok(r) => r,
                // The accept loop panicked: carry the panic to the caller
                // rather than report a clean stop.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => Ok(()), // cancelled with the runtime
            },
            None => Ok(()),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Relay every connection accepted on `listener` to `upstream` until
/// `shutdown` is cancelled; then close every connection.
pub async fn serve(
    listener: TcpListener,
    upstream: String,
    spec: ShapeSpec,
    shutdown: CancellationToken,
) -> Result<(), ShapeError> {
    spec.validate()?;
    serve_counted(
        listener,
        upstream,
        spec,
        shutdown,
        Arc::new(Counters::default()),
    )
    .await
}

async fn serve_counted(
    listener: TcpListener,
    upstream: String,
    spec: ShapeSpec,
    shutdown: CancellationToken,
    counters: Arc<Counters>,
) -> Result<(), ShapeError> {
    let timer = Timer::start().map_err(|source| ShapeError::Timer { source })?;
    let upstream: Arc<str> = upstream.into();
    let spec = Arc::new(spec);
    let mut number = 0u64;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            a = listener.accept() => a,
        };
        let client = match accepted {
            Ok((client, _)) => client,
            Err(_) => {
                // Out of descriptors or a connection reset before accept:
                // back off a little and keep serving.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        number += 1;
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        let conn = Connection {
            upstream: upstream.clone(),
            spec: spec.clone(),
            timer: timer.clone(),
            counters: counters.clone(),
            // Distinct, reproducible jitter per connection.
            seed: spec
                .seed
                .wrapping_add(number.wrapping_mul(0xA24B_AED4_963E_E407)),
        };
        tokio::spawn(conn.run(client, shutdown.child_token()));
    }
}

struct Connection {
    upstream: Arc<str>,
    spec: Arc<ShapeSpec>,
    timer: Timer,
    counters: Arc<Counters>,
    seed: u64,
}

impl Connection {
    async fn run(self, client: TcpStream, cancel: CancellationToken) {
        self.counters.active.fetch_add(1, Ordering::Relaxed);
        let server = tokio::select! {
            _ = cancel.cancelled() => None,
            s = TcpStream::connect(&*self.upstream) => s.ok(),
        };
        if let Some(server) = server {
            // Small writes (SSE events) must leave at their release instant,
            // not wait for an ACK under Nagle's algorithm.
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let now = Instant::now();
            let up = Schedule::new(&self.spec.link, self.spec.burst_bytes, self.seed, now);
            let down = Schedule::new(
                &self.spec.link,
                self.spec.burst_bytes,
                self.seed ^ 0x5555_5555_5555_5555,
                now,
            );
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            let both = async {
                tokio::try_join!(
                    self.direction(client_read, server_write, up),
                    self.direction(server_read, client_write, down),
                )
            };
            tokio::select! {
                _ = cancel.cancelled() => {},
                _ = both => {},
            }
        } else if !cancel.is_cancelled() {
            self.counters
                .upstream_failures
                .fetch_add(1, Ordering::Relaxed);
        }
        self.counters.active.fetch_sub(1, Ordering::Relaxed);
    }

    /// One direction: `from` → queue → `to`, until the FIN is delivered.
    async fn direction(
        &self,
        from: OwnedReadHalf,
        to: OwnedWriteHalf,
        schedule: Schedule,
    ) -> std::io::Result<()> {
        let room = Arc::new(Semaphore::new(self.spec.buffer_bytes));
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::try_join!(
            self.read_side(from, schedule, room, tx),
            self.write_side(to, rx),
        )?;
        Ok(())
    }

    async fn read_side(
        &self,
        mut from: OwnedReadHalf,
        mut schedule: Schedule,
        room: Arc<Semaphore>,
        queue: mpsc::UnboundedSender<Item>,
    ) -> std::io::Result<()> {
        let cap = self.spec.buffer_bytes;
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            // Read only when a whole read fits in the queue: otherwise leave
            // the bytes in the kernel, so TCP's window pushes back.
            let Ok(mut permit) = room.clone().acquire_many_owned(READ_CHUNK as u32).await else {
                return Ok(()); // never closed; nothing more to read into
            };
            let n = from.read(&mut buf).await?;
            // Stamp first: the schedule starts at the arrival.
            let arrival = Instant::now();
            let at = schedule.release(n, arrival);
            if n == 0 {
                let _ = queue.send(Item::Fin { at });
                return Ok(());
            }
            // Keep `n` bytes of room for the queued read; give back the rest.
            let held = permit.split(n);
            drop(permit);
            let queued = cap - room.available_permits();
            self.counters
                .peak_queued
                .fetch_max(queued, Ordering::Relaxed);
            let item = Item::Data {
                at,
                bytes: buf[..n].to_vec(),
                _room: held,
            };
            if queue.send(item).is_err() {
                return Ok(()); // the writer ended with an error, reported there
            }
        }
    }

    async fn write_side(
        &self,
        mut to: OwnedWriteHalf,
        mut queue: mpsc::UnboundedReceiver<Item>,
    ) -> std::io::Result<()> {
        while let Some(item) = queue.recv().await {
            match item {
                Item::Data { at, bytes, _room } => {
                    self.timer.sleep_until(at).await;
                    to.write_all(&bytes).await?;
                    // `_room` is dropped here: the bytes left the queue.
                }
                Item::Fin { at } => {
                    self.timer.sleep_until(at).await;
                    to.shutdown().await?;
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// One queued read, or the end of the stream.
enum Item {
    Data {
        at: Instant,
        bytes: Vec<u8>,
        /// The queue room these bytes hold until written.
        _room: Option<OwnedSemaphorePermit>,
    },
    Fin {
        at: Instant,
    },
}

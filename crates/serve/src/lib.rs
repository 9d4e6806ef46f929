//! The connection handling firsttoken's servers share (the reference app
//! and the provider emulator), around hyper's HTTP/1 + HTTP/2 server.
//!
//! A plain accept loop would let a client that opens sockets and never
//! finishes a request head (slowloris), or trickles bytes, or just holds
//! idle sockets, keep them forever, and accept without bound. Here:
//!
//! - [`accept`] waits for a slot before it accepts: every socket holds a
//!   permit of a semaphore sized to [`Limits::max_connections`] (further
//!   clients wait in the kernel's listen backlog); an accept error (a
//!   reset, EMFILE) never stops the server;
//! - [`serve_connection`] has hyper close an HTTP/1 connection whose head
//!   does not arrive within [`Limits::header_read`], and a watchdog close
//!   any connection on which no byte moves for [`Limits::idle`] (or that
//!   sends nothing at all within the header deadline, before hyper has even
//!   picked the protocol); on shutdown it ends the connection gracefully.
//!
//! A TLS handshake runs in the connection's task, which should bound it by
//! [`Limits::header_read`] (see [`Limits::handshake`]).

use std::error::Error as StdError;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use http_body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// How a server bounds its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Deadline for a connection's first byte, an HTTP/1 request head and a
    /// TLS handshake.
    pub header_read: Duration,
    /// A connection on which no byte moves either way for this long is
    /// closed (a stream that writes keeps its connection).
    pub idle: Duration,
}

impl Limits {
    /// A TLS handshake (or any setup step) bounded by the header deadline:
    /// `None` when it did not finish in time.
    pub async fn handshake<F: std::future::Future>(&self, f: F) -> Option<F::Output> {
        tokio::time::timeout(self.header_read, f).await.ok()
    }
}

/// The connection slots of one server: a semaphore of
/// [`Limits::max_connections`] permits.
#[derive(Debug, Clone)]
pub struct Slots(Arc<Semaphore>);

impl Slots {
    /// Slots for `limits`.
    pub fn new(limits: &Limits) -> Slots {
        Slots(Arc::new(Semaphore::new(limits.max_connections.max(1))))
    }
}

/// The next connection, once a slot is free: the socket (TCP_NODELAY set:
/// without it Nagle's algorithm and delayed ACKs hold small SSE writes back
/// by ~40 ms) and the slot's permit, to drop when the connection ends.
/// `None` once `shutdown` is cancelled. Accept errors (a reset before
/// accept, out of file descriptors) are skipped, the latter after a short
/// back-off.
pub async fn accept(
    listener: &TcpListener,
    slots: &Slots,
    shutdown: &CancellationToken,
) -> Option<(TcpStream, OwnedSemaphorePermit)> {
    let permit = tokio::select! {
        p = slots.0.clone().acquire_owned() => p.ok()?,
        () = shutdown.cancelled() => return None,
    };
    loop {
        let r = tokio::select! {
            r = listener.accept() => r,
            () = shutdown.cancelled() => return None,
        };
        match r {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                return Some((s, permit));
            }
            Err(e) => {
                if !matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
                ) {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// Serves one connection (plain or TLS) with `service` until it ends, goes
/// silent past `limits` or, after `shutdown`, its open requests finish.
pub async fn serve_connection<S, Svc, B>(
    stream: S,
    service: Svc,
    limits: Limits,
    shutdown: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    Svc: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    Svc::Future: Send + 'static,
    Svc::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    builder.http2().timer(TokioTimer::new());
    let conn = builder.serve_connection_with_upgrades(io, service);
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!("connection ended: {e}");
                }
                return;
            }
            () = activity.expired(limits) => {
                tracing::debug!("closing a silent connection");
                return; // dropping the connection closes the socket
            }
            () = shutdown.cancelled(), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// When bytes last moved on a connection, for the idle watchdog.
struct Activity {
    opened: Instant,
    /// Nanoseconds after `opened` of the last read or write.
    last: AtomicU64,
    /// Whether the client has sent any byte yet.
    heard: AtomicBool,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            opened: Instant::now(),
            last: AtomicU64::new(0),
            heard: AtomicBool::new(false),
        }
    }

    fn touch(&self) {
        let nanos = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last.store(nanos, Ordering::Relaxed);
    }

    /// Resolves once the connection has been silent too long: no byte at
    /// all within the header timeout, or none either way within the idle
    /// timeout.
    async fn expired(&self, limits: Limits) {
        loop {
            let now = Instant::now();
            let wake = if self.heard.load(Ordering::Relaxed) {
                let last = self.opened + Duration::from_nanos(self.last.load(Ordering::Relaxed));
                last + limits.idle
            } else if now >= self.opened + limits.header_read {
                return;
            } else {
                // Bytes may arrive meanwhile, after which only the idle
                // limit counts: wake early enough for either.
                self.opened + limits.header_read.min(limits.idle)
            };
            if now >= wake && self.heard.load(Ordering::Relaxed) {
                return;
            }
            tokio::time::sleep_until(wake.into()).await;
        }
    }
}

/// A socket (plain or TLS) that records when bytes move.
struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
            self.activity.heard.store(true, Ordering::Relaxed);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

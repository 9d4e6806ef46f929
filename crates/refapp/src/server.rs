//! The accept loop: a connection cap, a header-read timeout, an idle
//! timeout and graceful shutdown around hyper's HTTP/1 + HTTP/2 server.
//!
//! `axum::serve` has none of these knobs, so a client that opens sockets and
//! never finishes a request head (slowloris) would hold them forever. Here
//! every accepted socket takes a permit of a semaphore sized to
//! `max_connections` (further clients wait in the kernel's listen backlog),
//! hyper closes an HTTP/1 connection whose head does not arrive within
//! `header_read_timeout`, and a watchdog closes any connection on which no
//! byte moves for `idle_timeout` (or that sends nothing at all within the
//! header timeout, before hyper has even picked the protocol).
//!
//! With TLS on, the handshake runs in the connection's task (bounded by the
//! header timeout, so a client that stalls it cannot hold a slot) and the
//! same server runs over the TLS stream; hyper picks HTTP/2 or HTTP/1.1 from
//! the bytes, which follow the protocol agreed by ALPN.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::{AppState, RefappError, app};

/// The connection limits of [`crate::Options`].
#[derive(Debug, Clone, Copy)]
struct Limits {
    header_read: Duration,
    idle: Duration,
}

pub(crate) async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> Result<(), RefappError> {
    let o = &state.inner.config.options;
    let limits = Limits {
        header_read: o.header_read_timeout,
        idle: o.idle_timeout,
    };
    let slots = Arc::new(Semaphore::new(o.max_connections));
    let acceptor = state
        .inner
        .tls
        .as_ref()
        .map(|e| TlsAcceptor::from(e.config.clone()));
    let router = app(state.clone());
    let tracker = TaskTracker::new();
    loop {
        // Wait for a free slot before accepting: past the cap, clients wait
        // in the backlog instead of costing a task and buffers each.
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break, // never closed
            },
            () = shutdown.cancelled() => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    // Like axum::serve: per-connection errors (reset before
                    // accept) and resource errors (EMFILE) must not stop the
                    // server; back off briefly on the latter.
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
                    ) {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        // Without TCP_NODELAY, Nagle's algorithm and delayed ACKs hold small
        // SSE writes back by ~40 ms.
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let shutdown = shutdown.clone();
        let acceptor = acceptor.clone();
        tracker.spawn(async move {
            match acceptor {
                None => serve_connection(stream, router, limits, shutdown).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(limits.header_read, acceptor.accept(stream)).await;
                    match handshake {
                        Ok(Ok(tls)) => serve_connection(tls, router, limits, shutdown).await,
                        Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!("TLS handshake timed out"),
                    }
                }
            }
            drop(permit);
        });
    }
    tracker.close();
    tracker.wait().await;
    // The spans of the last requests, exported before the app stops.
    let _ = tokio::task::spawn_blocking(move || state.flush_telemetry()).await;
    Ok(())
}

async fn serve_connection<S>(
    stream: S,
    router: axum::Router,
    limits: Limits,
    shutdown: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let service =
        TowerToHyperService::new(router.map_request(|req: Request<Incoming>| req.map(Body::new)));
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

//! The accept loop: the connection cap, header-read and idle deadlines and
//! graceful stop of [`firsttoken_serve`], around the app's router.
//!
//! With TLS on, the handshake runs in the connection's task (bounded by the
//! header deadline, so a client that stalls it cannot hold a slot) and the
//! same server runs over the TLS stream; hyper picks HTTP/2 or HTTP/1.1 from
//! the bytes, which follow the protocol agreed by ALPN.

use axum::body::Body;
use axum::extract::Request;
use firsttoken_serve::{Limits, Slots, accept, serve_connection};
use hyper::body::Incoming;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::{AppState, RefappError, app};

pub(crate) async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> Result<(), RefappError> {
    let o = &state.inner.config.options;
    let limits = Limits {
        max_connections: o.max_connections,
        header_read: o.header_read_timeout,
        idle: o.idle_timeout,
    };
    let slots = Slots::new(&limits);
    let acceptor = state
        .inner
        .tls
        .as_ref()
        .map(|e| TlsAcceptor::from(e.config.clone()));
    let router = app(state.clone());
    let tracker = TaskTracker::new();
    while let Some((stream, permit)) = accept(&listener, &slots, &shutdown).await {
        let service = TowerToHyperService::new(
            router
                .clone()
                .map_request(|req: Request<Incoming>| req.map(Body::new)),
        );
        let shutdown = shutdown.clone();
        let acceptor = acceptor.clone();
        tracker.spawn(async move {
            match acceptor {
                None => serve_connection(stream, service, limits, shutdown).await,
                Some(acceptor) => match limits.handshake(acceptor.accept(stream)).await {
                    Some(Ok(tls)) => serve_connection(tls, service, limits, shutdown).await,
                    Some(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
                    None => tracing::debug!("TLS handshake timed out"),
                },
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

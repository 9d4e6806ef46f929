//! Serving a router on a listener, cleartext or TLS, HTTP/1.1 and HTTP/2
//! (ALPN over TLS, prior knowledge in cleartext), with TCP_NODELAY on every
//! accepted socket, its wire clock ([`crate::wire`]), the connection limits
//! of [`firsttoken_serve`] and a graceful stop.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use firsttoken_serve::{Limits, Slots, accept, serve_connection};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::wire::{self, Wire, WireStream};

/// How long a stop waits for open responses before closing them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The emulator's connection limits unless told otherwise: 1,024
/// connections at once, 60 s for a first byte, a request head or a TLS
/// handshake, and a connection closed after 180 s on which no byte moved
/// (a `stall` fault longer than that is cut there).
pub const DEFAULT_LIMITS: Limits = Limits {
    max_connections: 1024,
    header_read: Duration::from_secs(60),
    idle: Duration::from_secs(180),
};

/// [`serve_with`] under [`DEFAULT_LIMITS`].
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    serve_with(listener, app, tls, DEFAULT_LIMITS, shutdown).await
}

/// Serve `app` on `listener` until `shutdown` is cancelled, then wait up to
/// [`SHUTDOWN_GRACE`] for open requests to finish. With `tls`, every
/// connection is a TLS one. Connections are bounded by `limits` (a cap,
/// header-read and idle deadlines: [`firsttoken_serve`]).
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: Limits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    wire::keep_timestamps_on();
    let acceptor = tls.map(TlsAcceptor::from);
    let slots = Slots::new(&limits);
    let tracker = TaskTracker::new();
    while let Some((tcp, permit)) = accept(&listener, &slots, &shutdown).await {
        // The connection's wire clock, below TLS, handed to every request.
        let wire = Arc::new(Wire::default());
        let tcp = WireStream::new(tcp, wire.clone());
        let service = TowerToHyperService::new(app.clone().map_request(
            move |mut r: http::Request<hyper::body::Incoming>| {
                r.extensions_mut().insert(wire.clone());
                r
            },
        ));
        let (acceptor, shutdown) = (acceptor.clone(), shutdown.clone());
        tracker.spawn(async move {
            match acceptor {
                None => serve_connection(tcp, service, limits, shutdown).await,
                Some(acc) => {
                    if let Some(Ok(stream)) = limits.handshake(acc.accept(tcp)).await {
                        serve_connection(stream, service, limits, shutdown).await;
                    }
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    tracker.close();
    // Let open responses finish, but not forever: a stalled stream
    // (`stall: forever`) must not keep the process alive after Ctrl-C.
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait()).await;
    Ok(())
}

/// A TLS server configuration from PEM certificate chain and key, offering
/// h2 and http/1.1 by ALPN.
pub fn tls_server_config(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, crate::EmulatorError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad =
        |what: &str, e: &dyn std::fmt::Display| crate::EmulatorError::Tls(format!("{what}: {e}"));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| bad("certificate PEM", &e))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad("private key PEM", &e))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("protocol versions", &e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad("certificate and key", &e))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

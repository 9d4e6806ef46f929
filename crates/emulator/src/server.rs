//! Serving a router on a listener, cleartext or TLS, HTTP/1.1 and HTTP/2
//! (ALPN over TLS, prior knowledge in cleartext), with TCP_NODELAY on every
//! accepted socket, its wire clock ([`crate::wire`]) and a graceful stop.

use std::sync::Arc;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::wire::{self, Wire, WireStream};

/// How long a stop waits for open responses before closing them.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Serve `app` on `listener` until `shutdown` is cancelled, then wait up to
/// [`SHUTDOWN_GRACE`] for open requests to finish. With `tls`, every connection is a TLS one.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    wire::keep_timestamps_on();
    let graceful = GracefulShutdown::new();
    let acceptor = tls.map(TlsAcceptor::from);
    loop {
        let (tcp, _) = tokio::select! {
            _ = shutdown.cancelled() => break,
            r = listener.accept() => match r {
                Ok(x) => x,
                // Out of file descriptors and the like: back off, keep serving.
                Err(_) => { tokio::time::sleep(std::time::Duration::from_millis(20)).await; continue; }
            },
        };
        // Without it, Nagle + delayed ACK hold small SSE writes back ~40 ms.
        let _ = tcp.set_nodelay(true);
        // The connection's wire clock, below TLS, handed to every request.
        let wire = Arc::new(Wire::default());
        let tcp = WireStream::new(tcp, wire.clone());
        let service = TowerToHyperService::new(app.clone().map_request(
            move |mut r: http::Request<hyper::body::Incoming>| {
                r.extensions_mut().insert(wire.clone());
                r
            },
        ));
        let builder = auto::Builder::new(TokioExecutor::new());
        match &acceptor {
            None => {
                let conn = builder
                    .serve_connection_with_upgrades(TokioIo::new(tcp), service)
                    .into_owned();
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            Some(acc) => {
                let acc = acc.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let Ok(stream) = acc.accept(tcp).await else {
                        return;
                    };
                    let conn = builder
                        .serve_connection_with_upgrades(TokioIo::new(stream), service)
                        .into_owned();
                    let _ = watcher.watch(conn).await;
                });
            }
        }
    }
    drop(listener);
    // Let open responses finish, but not forever: a stalled stream
    // (`stall: forever`) must not keep the process alive after Ctrl-C.
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
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

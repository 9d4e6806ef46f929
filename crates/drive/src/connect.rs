//! Opening a connection phase by phase: DNS, TCP connect, TLS, then an
//! HTTP/1.1 or HTTP/2 handshake over a [`TimedIo`] tap. Each phase is stamped
//! against the request's start instant.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use firsttoken_plan::{
    HttpVersion, ProbeSpec, Proxy, RequestTemplate, Target, TlsOptions, Transport,
};
use firsttoken_record::{ErrorKind, HandshakeKind, TlsInfo};

use crate::inline::{H2Driver, InlineExec};
use crate::kstamp::RecvStream;
use crate::tap::{Tap, TimedIo};
use crate::tunnel;
use crate::{DriveError, Failure};

/// Build the rustls client configuration for these options and HTTP version.
///
/// Everything a first handshake would otherwise initialise lazily inside
/// the timed TLS phase happens here: the verifier and trust store are
/// built, and each key-exchange group generates one throwaway key share
/// (the first one costs tens of milliseconds, once per process). Without
/// [`TlsOptions::resume`] the session cache is off, so every new
/// connection pays a full handshake, as a first visit does.
pub fn tls_config(
    opts: &TlsOptions,
    http: HttpVersion,
) -> Result<Arc<rustls::ClientConfig>, DriveError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| DriveError::Tls(e.to_string()))?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(insecure::AcceptAll(provider.clone())))
            .with_no_client_auth()
    } else if let Some(pem) = &opts.ca_pem {
        let mut roots = rustls::RootCertStore::empty();
        let certs: Vec<CertificateDer<'static>> =
            rustls_pki_types::pem::PemObject::pem_slice_iter(pem)
                .collect::<Result<_, _>>()
                .map_err(|e| DriveError::Tls(format!("cannot read the CA file as PEM: {e}")))?;
        if certs.is_empty() {
            return Err(DriveError::Tls(
                "the CA file holds no PEM certificate".into(),
            ));
        }
        for c in certs {
            roots
                .add(c)
                .map_err(|e| DriveError::Tls(format!("unusable CA certificate: {e}")))?;
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        use rustls_platform_verifier::BuilderVerifierExt;
        builder
            .with_platform_verifier()
            .map_err(|e| DriveError::Tls(format!("cannot load the system trust store: {e}")))?
            .with_no_client_auth()
    };
    config.resumption = if opts.resume {
        rustls::client::Resumption::default()
    } else {
        rustls::client::Resumption::disabled()
    };
    for group in provider.kx_groups.iter() {
        // Ignored on failure: a group that cannot start fails the real
        // handshake in its own phase, with its own message.
        let _ = group.start();
    }
    config.alpn_protocols = match http {
        HttpVersion::Auto => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        HttpVersion::Http1 => vec![b"http/1.1".to_vec()],
        HttpVersion::Http2 => vec![b"h2".to_vec()],
    };
    Ok(Arc::new(config))
}

mod insecure {
    use std::sync::Arc;

    use rustls::DigitallySignedStruct;
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::crypto::CryptoProvider;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    /// `--insecure`: accepts any certificate, still checks handshake signatures.
    #[derive(Debug)]
    pub(super) struct AcceptAll(pub(super) Arc<CryptoProvider>);

    impl ServerCertVerifier for AcceptAll {
        fn verify_server_cert(
            &self,
            _end_entity: &CertificateDer<'_>,
            _intermediates: &[CertificateDer<'_>],
            _server_name: &ServerName<'_>,
            _ocsp: &[u8],
            _now: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }
        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }
        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
}

/// The request sender of an open connection.
pub(crate) enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// A connection's I/O future. It is polled inside the request's own task
/// (see `Conn::drive`), so bytes reach the request without a cross-thread
/// wake-up between the read and the stamp.
type Driver = Pin<Box<dyn Future<Output = Result<(), hyper::Error>> + Send>>;

/// A plaintext byte stream of either kind (TCP, or TLS over TCP).
pub(crate) trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// A boxed [`Io`].
pub(crate) type BoxIo = Box<dyn Io>;

/// Stamps of connection setup.
#[derive(Debug, Clone, Default)]
pub(crate) struct Setup {
    pub dns: Option<Instant>,
    pub connect: Option<Instant>,
    pub proxy: Option<Instant>,
    pub tls: Option<Instant>,
    pub tls_info: Option<TlsInfo>,
}

/// An open, tapped HTTP connection.
pub(crate) struct Conn {
    pub sender: Sender,
    driver: Option<Driver>,
    pub tap: Tap,
    pub http2: bool,
}

impl Conn {
    /// Run `fut` while also driving the connection's I/O, in one task.
    ///
    /// Each poll drives the connection, then `fut`, then the connection
    /// again: bytes the driver reads are seen by `fut` in the same poll, and
    /// a request `fut` just queued is written in that same poll too. (With
    /// one driver poll before `fut`, a new request waited for the task's
    /// next turn, behind every other ready task: with 256 streams released
    /// together, most requests were written milliseconds after their start.)
    pub(crate) async fn drive<F: Future>(driver: &mut Option<Driver>, fut: F) -> F::Output {
        use std::task::Poll;
        let mut fut = std::pin::pin!(fut);
        let poll_driver = |driver: &mut Option<Driver>, cx: &mut std::task::Context<'_>| {
            if let Some(d) = driver.as_mut()
                && d.as_mut().poll(cx).is_ready()
            {
                *driver = None;
                return true;
            }
            false
        };
        std::future::poll_fn(|cx| {
            poll_driver(driver, cx);
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            if poll_driver(driver, cx) {
                // The connection ended: `fut` learns it now.
                return fut.as_mut().poll(cx);
            }
            Poll::Pending
        })
        .await
    }

    /// Split into the sender and the driver slot, for [`Conn::drive`].
    pub(crate) fn parts(&mut self) -> (&mut Sender, &mut Option<Driver>) {
        (&mut self.sender, &mut self.driver)
    }

    /// True when the connection can carry another request.
    pub(crate) async fn ready(&mut self) -> bool {
        let (sender, driver) = self.parts();
        if driver.is_none() {
            return false;
        }
        match sender {
            Sender::H1(s) => Conn::drive(driver, s.ready()).await.is_ok() && !s.is_closed(),
            Sender::H2(s) => Conn::drive(driver, s.ready()).await.is_ok() && !s.is_closed(),
        }
    }
}

/// Opens connections to one target with fixed options. Everything TLS
/// needs (configuration, verifier, trust store, server name) is prepared
/// here, once, so nothing of it runs between the "connect" and "tls" stamps.
pub(crate) struct Connector {
    target: Target,
    tls: Option<Tls>,
    http: HttpVersion,
    addr_override: Option<std::net::IpAddr>,
    proxy: Option<Proxy>,
    kernel_clock: bool,
    /// The target is reached over a WebSocket.
    websocket: bool,
}

/// The prepared TLS side of a [`Connector`].
struct Tls {
    config: Arc<rustls::ClientConfig>,
    /// The same configuration with no session cache, for [`Connector::prime`].
    priming: Arc<rustls::ClientConfig>,
    /// The server name, or why the host cannot be one (a per-request failure).
    name: Result<ServerName<'static>, String>,
}

impl Connector {
    pub(crate) fn new(spec: &ProbeSpec) -> Result<Connector, DriveError> {
        if spec.kernel_clock {
            crate::kstamp::keep_timestamps_on();
        }
        let target = spec.request.target.clone();
        // A WebSocket upgrade is an HTTP/1.1 request: ALPN offers only that.
        let http = match spec.transport {
            Transport::Http => spec.http,
            Transport::WebSocket(_) => HttpVersion::Http1,
        };
        let tls = if target.tls() {
            let host = target.host.clone();
            let config = tls_config(&spec.tls, http)?;
            let mut priming = (*config).clone();
            priming.resumption = rustls::client::Resumption::disabled();
            Some(Tls {
                config,
                priming: Arc::new(priming),
                name: ServerName::try_from(host.clone())
                    .map_err(|e| format!("{host} is not a valid TLS server name: {e}")),
            })
        } else {
            None
        };
        Ok(Connector {
            target,
            tls,
            http,
            addr_override: spec.resolved_addr(),
            proxy: spec.proxy.clone(),
            kernel_clock: spec.kernel_clock,
            websocket: spec.transport.websocket().is_some(),
        })
    }

    /// The TLS configuration, if the target is https.
    #[cfg(test)]
    pub(crate) fn tls(&self) -> Option<&Arc<rustls::ClientConfig>> {
        self.tls.as_ref().map(|t| &t.config)
    }

    /// Resolve the target (unless overridden) and open a TCP connection to
    /// the first address that accepts. Stamps DNS and connect into `setup`.
    async fn tcp(&self, setup: &mut Setup) -> Result<TcpStream, Failure> {
        let (host, port, addr_override) = match &self.proxy {
            // Through a proxy, the proxy resolves the target.
            Some(p) => (p.host.as_str(), p.port, None),
            None => (
                self.target.host.as_str(),
                self.target.port,
                self.addr_override,
            ),
        };
        let addrs: Vec<SocketAddr> = if let Some(ip) = addr_override {
            vec![SocketAddr::new(ip, port)]
        } else if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            vec![SocketAddr::new(ip, port)]
        } else {
            let found = tokio::net::lookup_host((host, port))
                .await
                .map_err(|e| Failure::new(ErrorKind::Dns, format!("cannot resolve {host}: {e}")))?;
            setup.dns = Some(Instant::now());
            let v: Vec<SocketAddr> = found.collect();
            if v.is_empty() {
                return Err(Failure::new(
                    ErrorKind::Dns,
                    format!("{host} resolved to no address"),
                ));
            }
            v
        };
        let mut last_err = None;
        for a in &addrs {
            match TcpStream::connect(a).await {
                Ok(s) => {
                    setup.connect = Some(Instant::now());
                    // Nagle's algorithm would hold small request writes back (~40 ms with delayed ACKs).
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Err(e) => {
                    last_err = Some(match &self.proxy {
                        Some(p) => format!("cannot connect to the proxy {} ({a}): {e}", p.masked()),
                        None => format!("cannot connect to {a}: {e}"),
                    })
                }
            }
        }
        Err(Failure::new(
            ErrorKind::Connect,
            last_err.unwrap_or_default(),
        ))
    }

    /// The byte stream to the target: TCP, through a proxy's `CONNECT`
    /// tunnel for an https target behind one (stamped as `proxy`).
    async fn transport(&self, setup: &mut Setup) -> Result<TcpStream, Failure> {
        let mut tcp = self.tcp(setup).await?;
        // A WebSocket is a long-lived byte stream: through a proxy it
        // always needs a tunnel, cleartext or not.
        if let Some(p) = &self.proxy
            && (self.tls.is_some() || self.websocket)
        {
            tunnel::open(&mut tcp, p, &self.target).await?;
            setup.proxy = Some(Instant::now());
        }
        Ok(tcp)
    }

    /// `req` as it must go out: for a plain-http target behind a proxy, in
    /// absolute form (`POST http://host/path`) with the proxy's credentials;
    /// otherwise unchanged.
    pub(crate) fn via_proxy<B>(
        &self,
        mut req: http::Request<B>,
        template: &RequestTemplate,
    ) -> http::Request<B> {
        let Some(p) = self.proxy.as_ref().filter(|_| self.tls.is_none()) else {
            return req;
        };
        if let Ok(uri) = template.target.url().parse::<http::Uri>() {
            *req.uri_mut() = uri;
        }
        if let Some(auth) = p.authorization()
            && let Ok(mut v) = http::HeaderValue::from_str(&auth)
        {
            v.set_sensitive(true);
            req.headers_mut()
                .insert(http::header::PROXY_AUTHORIZATION, v);
        }
        req
    }

    /// One untimed TLS handshake with the target, before any timed request:
    /// the client's one-time set-up (code paths, tables, the verifier's
    /// first use for this kind of certificate) then never lands in a timed
    /// TLS phase. No request is sent; the connection is closed at once, and
    /// no session from it is kept. A no-op for cleartext targets; a failure
    /// is ignored (the first real request fails in its own phase).
    pub(crate) async fn prime(&self) {
        let Some(tls) = &self.tls else { return };
        let Ok(name) = tls.name.clone() else { return };
        let mut setup = Setup::default();
        if let Ok(tcp) = self.transport(&mut setup).await {
            let _ = TlsConnector::from(tls.priming.clone())
                .connect(name, tcp)
                .await;
        }
    }

    /// DNS → TCP → TLS → HTTP handshake. Stamps go into `setup` as they
    /// happen, so a failure keeps the phases that completed.
    pub(crate) async fn open(&self, setup: &mut Setup) -> Result<Conn, Failure> {
        let (tcp, tap) = self.raw(setup).await?;
        match &self.tls {
            None => {
                let h2 = self.http == HttpVersion::Http2;
                self.handshake(TimedIo::new(tcp, tap.clone()), tap, h2)
                    .await
            }
            Some(tls) => {
                let stream = self.secure(tls, tcp, setup).await?;
                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                self.handshake(TimedIo::new(stream, tap.clone()), tap, h2)
                    .await
            }
        }
    }

    /// DNS → TCP → TLS, and no HTTP handshake: the tapped plaintext byte
    /// stream, for a transport that speaks its own upgrade (WebSocket).
    pub(crate) async fn open_io(
        &self,
        setup: &mut Setup,
    ) -> Result<(TimedIo<BoxIo>, Tap), Failure> {
        let (tcp, tap) = self.raw(setup).await?;
        let io: BoxIo = match &self.tls {
            None => Box::new(tcp),
            Some(tls) => Box::new(self.secure(tls, tcp, setup).await?),
        };
        Ok((TimedIo::new(io, tap.clone()), tap))
    }

    /// The TCP stream (through a proxy's tunnel when one is used) with every
    /// socket read reporting its kernel receive time to a new tap.
    async fn raw(&self, setup: &mut Setup) -> Result<(RecvStream, Tap), Failure> {
        let tcp = self.transport(setup).await?;
        let tap = Tap::default();
        // Below TLS: every socket read reports its kernel receive time to the tap.
        Ok((RecvStream::new(tcp, tap.clone(), self.kernel_clock), tap))
    }

    /// The TLS handshake over `tcp`, stamped as `tls` with what it negotiated.
    async fn secure(
        &self,
        tls: &Tls,
        tcp: RecvStream,
        setup: &mut Setup,
    ) -> Result<tokio_rustls::client::TlsStream<RecvStream>, Failure> {
        let host = self.target.host.as_str();
        let name = tls
            .name
            .clone()
            .map_err(|m| Failure::new(ErrorKind::Tls, m))?;
        let stream = TlsConnector::from(tls.config.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| {
                Failure::new(
                    ErrorKind::Tls,
                    format!("TLS handshake with {host} failed: {e}"),
                )
            })?;
        setup.tls = Some(Instant::now());
        let c = stream.get_ref().1;
        setup.tls_info = Some(TlsInfo {
            version: c
                .protocol_version()
                .map(|v| format!("{v:?}"))
                .unwrap_or_default(),
            cipher: c
                .negotiated_cipher_suite()
                .map(|s| format!("{:?}", s.suite()))
                .unwrap_or_default(),
            kx_group: c
                .negotiated_key_exchange_group()
                .map(|g| format!("{:?}", g.name())),
            handshake: c.handshake_kind().map(|k| match k {
                rustls::HandshakeKind::Resumed => HandshakeKind::Resumed,
                _ => HandshakeKind::Full,
            }),
        });
        Ok(stream)
    }

    async fn handshake<S>(&self, io: TimedIo<S>, tap: Tap, h2: bool) -> Result<Conn, Failure>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let fail = |e: hyper::Error| {
            Failure::new(ErrorKind::Connect, format!("HTTP handshake failed: {e}"))
        };
        if h2 {
            tap.set_http2();
            // hyper's HTTP/2 futures run in the request's task (inline.rs).
            let exec = InlineExec::default();
            let (sender, conn) = http2::handshake(exec.clone(), TokioIo::new(io))
                .await
                .map_err(fail)?;
            Ok(Conn {
                sender: Sender::H2(sender),
                driver: Some(Box::pin(H2Driver::new(conn, exec))),
                tap,
                http2: true,
            })
        } else {
            let (sender, conn) = http1::handshake(TokioIo::new(io)).await.map_err(fail)?;
            Ok(Conn {
                sender: Sender::H1(sender),
                driver: Some(Box::pin(conn)),
                tap,
                http2: false,
            })
        }
    }
}

//! Connecting to PostgreSQL over TLS the way libpq does, on rustls.
//!
//! tokio-postgres knows `sslmode=disable|prefer|require` but neither the
//! verifying modes nor `sslrootcert`. [`PgTarget::parse`] reads both from a
//! `postgres://` URL, hands tokio-postgres the rest, and builds a rustls
//! connector (aws-lc-rs provider) that checks what the mode asks for:
//!
//! | `sslmode`          | encrypted                   | server certificate checked                                    |
//! |--------------------|-----------------------------|---------------------------------------------------------------|
//! | `disable`          | no                          | –                                                             |
//! | `prefer` (default) | when the server offers TLS  | no; with `sslrootcert=FILE` its chain (libpq's rule)          |
//! | `require`          | yes                         | no; with `sslrootcert=FILE` its chain, as `verify-ca` (libpq) |
//! | `verify-ca`        | yes                         | chain up to `sslrootcert=FILE` (required)                     |
//! | `verify-full`      | yes                         | chain up to `sslrootcert=FILE`, else the system trust store, and the host name |
//!
//! Where libpq, under `prefer`, retries in plain text after a failed
//! handshake, this fails: a connection is never silently left unencrypted
//! once TLS was offered.
//!
//! `sslrootcert=system` selects the system trust store and, as in libpq,
//! makes `verify-full` the default and refuses weaker modes. Unlike libpq,
//! `~/.postgresql/root.crt` and the `PGSSL*` environment variables are not
//! read: everything is in the URL. Client certificates (`sslcert`,
//! `sslkey`) are not supported and refused with a message saying so.
//!
//! A failed handshake keeps rustls's reason in the error chain;
//! [`hint`] turns the common ones (unknown CA, wrong host name, a server
//! without TLS) into what to change.
//!
//! # Example
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let target = firsttoken_pgtls::PgTarget::parse(
//!     "postgres://app@db.example:5432/app?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.crt",
//! )?;
//! let (client, connection) = target.connect().await?;
//! tokio::spawn(connection);
//! client.simple_query("SELECT 1").await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod hint;
mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use percent_encoding::percent_decode_str;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, Connection, Socket};

pub use hint::{describe, hint};

/// The TLS connector handed to tokio-postgres (and to deadpool's manager).
pub type Tls = tokio_postgres_rustls::MakeRustlsConnect;

/// The stream of a connection made with [`Tls`].
pub type TlsStream = <Tls as MakeTlsConnect<Socket>>::Stream;

/// libpq's `sslmode`, less `allow` (plain first, TLS on refusal), which
/// tokio-postgres cannot do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS when the server offers it, plain otherwise; no certificate check.
    Prefer,
    /// TLS or fail; the certificate is not checked unless `sslrootcert` names a file.
    Require,
    /// TLS, certificate chained to `sslrootcert`; any host name.
    VerifyCa,
    /// TLS, certificate chained to a trusted root and valid for the host name.
    VerifyFull,
}

impl SslMode {
    /// The URL spelling (`verify-full`).
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn from_param(value: &str) -> Result<SslMode, PgTlsError> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => {
                return Err(PgTlsError::Unsupported {
                    what: "sslmode=allow".into(),
                    instead: "use sslmode=prefer (TLS when the server offers it) or sslmode=disable",
                });
            }
            other => {
                return Err(PgTlsError::BadSslMode {
                    value: other.to_owned(),
                });
            }
        })
    }
}

impl std::fmt::Display for SslMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where trusted CA certificates come from (`sslrootcert`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// `sslrootcert=system`: the operating system's trust store.
    System,
    /// A PEM file of one or more CA certificates.
    File(PathBuf),
}

/// Why a connection string or its TLS settings cannot be used. No variant
/// carries the URL, so none can leak its password; callers add the masked
/// URL themselves.
#[derive(Debug, thiserror::Error)]
pub enum PgTlsError {
    /// tokio-postgres refused the connection string.
    #[error("{}", hint::chain(.source))]
    BadUrl {
        /// What tokio-postgres said (names the option, never its value).
        #[source]
        source: tokio_postgres::Error,
    },
    /// `sslmode` has a value libpq does not know.
    #[error("sslmode={value:?} is not one of disable, prefer, require, verify-ca, verify-full")]
    BadSslMode {
        /// The value given.
        value: String,
    },
    /// A libpq setting this client does not implement.
    #[error("{what} is not supported: {instead}")]
    Unsupported {
        /// The setting.
        what: String,
        /// What to do instead.
        instead: &'static str,
    },
    /// `verify-ca` without a CA file to verify against.
    #[error(
        "sslmode={mode} needs sslrootcert=/path/to/ca.crt (the CA certificate that signed the server's certificate)"
    )]
    NeedsRootCert {
        /// The mode given.
        mode: SslMode,
    },
    /// `sslrootcert=system` with a mode that would not use it.
    #[error("sslrootcert=system needs sslmode=verify-full (as in libpq), not sslmode={mode}")]
    SystemNeedsVerifyFull {
        /// The mode given.
        mode: SslMode,
    },
    /// The `sslrootcert` file cannot be read.
    #[error("cannot read sslrootcert {}: {source}", .path.display())]
    ReadRootCert {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The `sslrootcert` file holds no usable CA certificate.
    #[error("sslrootcert {}: {message}", .path.display())]
    BadRootCert {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The system trust store cannot be loaded.
    #[error("cannot load the system trust store for sslmode=verify-full: {message}")]
    SystemStore {
        /// What the platform verifier said.
        message: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[source] rustls::Error),
}

/// A parsed connection string and the TLS connector its `sslmode` asks for.
#[derive(Clone)]
pub struct PgTarget {
    config: Config,
    tls: Tls,
    mode: SslMode,
    root_cert: Option<RootCert>,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The config holds the password: show only the TLS settings.
        f.debug_struct("PgTarget")
            .field("mode", &self.mode)
            .field("root_cert", &self.root_cert)
            .finish_non_exhaustive()
    }
}

/// How much of the server's certificate to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    ChainAndName,
}

impl PgTarget {
    /// Parses a `postgres://` (or `postgresql://`) URL, or a libpq
    /// `key=value` string (whose `sslmode` tokio-postgres reads itself, so
    /// only `disable`, `prefer` and `require` work there), and builds the
    /// connector. The CA file is read now, so a wrong path fails here.
    pub fn parse(url: &str) -> Result<PgTarget, PgTlsError> {
        let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
        let (rest, mode, root) = if is_url {
            split_tls_params(url)?
        } else {
            (url.to_owned(), None, None)
        };
        let mut config: Config = rest
            .parse()
            .map_err(|source| PgTlsError::BadUrl { source })?;
        let root_cert = root.map(|r| {
            if r == "system" {
                RootCert::System
            } else {
                RootCert::File(PathBuf::from(r))
            }
        });
        let mode = match mode {
            Some(m) => SslMode::from_param(&m)?,
            None if root_cert == Some(RootCert::System) => SslMode::VerifyFull,
            None => match config.get_ssl_mode() {
                tokio_postgres::config::SslMode::Disable => SslMode::Disable,
                tokio_postgres::config::SslMode::Require => SslMode::Require,
                _ => SslMode::Prefer,
            },
        };
        let check = match (mode, &root_cert) {
            (SslMode::VerifyFull, _) => Check::ChainAndName,
            (mode, Some(RootCert::System)) => {
                return Err(PgTlsError::SystemNeedsVerifyFull { mode });
            }
            (SslMode::Disable, _) | (SslMode::Prefer | SslMode::Require, None) => Check::Nothing,
            // libpq checks the chain whenever it has a root certificate.
            (SslMode::Prefer | SslMode::Require | SslMode::VerifyCa, Some(RootCert::File(_))) => {
                Check::Chain
            }
            (SslMode::VerifyCa, None) => return Err(PgTlsError::NeedsRootCert { mode }),
        };
        config.ssl_mode(match mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        });
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(client_config(
            check,
            root_cert.as_ref(),
        )?);
        Ok(PgTarget {
            config,
            tls,
            mode,
            root_cert,
        })
    }

    /// The tokio-postgres configuration (`sslmode` already mapped).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The configuration, to set defaults such as a connect timeout.
    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    /// The TLS connector (cheap to clone).
    pub fn tls(&self) -> Tls {
        self.tls.clone()
    }

    /// The effective `sslmode`.
    pub fn ssl_mode(&self) -> SslMode {
        self.mode
    }

    /// The `sslrootcert` setting, if any.
    pub fn root_cert(&self) -> Option<&RootCert> {
        self.root_cert.as_ref()
    }

    /// The configuration and the connector, e.g. for a connection pool.
    pub fn into_parts(self) -> (Config, Tls) {
        (self.config, self.tls)
    }

    /// Opens one connection. Spawn the returned connection future.
    pub async fn connect(
        &self,
    ) -> Result<(Client, Connection<Socket, TlsStream>), tokio_postgres::Error> {
        self.config.connect(self.tls.clone()).await
    }
}

/// Splits `sslmode` and `sslrootcert` off the URL's query (tokio-postgres
/// refuses the verifying modes and does not know `sslrootcert`); refuses
/// the client-certificate settings by name.
fn split_tls_params(url: &str) -> Result<(String, Option<String>, Option<String>), PgTlsError> {
    let Some((head, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None, None));
    };
    let (mut mode, mut root) = (None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key_text = percent_decode_str(key).decode_utf8_lossy();
        let value_text = || percent_decode_str(value).decode_utf8_lossy().into_owned();
        match key_text.as_ref() {
            "sslmode" => mode = Some(value_text()),
            "sslrootcert" => root = Some(value_text()),
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" => {
                return Err(PgTlsError::Unsupported {
                    what: key_text.into_owned(),
                    instead: "client certificates and CRLs are not implemented; remove it from the URL",
                });
            }
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    Ok((rest, mode, root))
}

fn client_config(
    check: Check,
    root: Option<&RootCert>,
) -> Result<rustls::ClientConfig, PgTlsError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(PgTlsError::Tls)?;
    let verifier: Arc<dyn ServerCertVerifier> = match (check, root) {
        (Check::Nothing, _) => Arc::new(verify::Unverified(provider)),
        (Check::Chain, Some(RootCert::File(path))) => Arc::new(verify::ChainOnly {
            roots: Arc::new(load_roots(path)?),
            provider,
        }),
        (Check::ChainAndName, Some(RootCert::File(path))) => {
            WebPkiServerVerifier::builder_with_provider(Arc::new(load_roots(path)?), provider)
                .build()
                .map_err(|e| PgTlsError::BadRootCert {
                    path: path.clone(),
                    message: e.to_string(),
                })?
        }
        // `parse` only asks for a chain check with a CA file.
        (Check::Chain | Check::ChainAndName, _) => Arc::new(
            rustls_platform_verifier::Verifier::new(provider).map_err(|e| {
                PgTlsError::SystemStore {
                    message: e.to_string(),
                }
            })?,
        ),
    };
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    // What libpq 17 sends; servers before 17 ignore it.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(config)
}

fn load_roots(path: &Path) -> Result<rustls::RootCertStore, PgTlsError> {
    let pem = std::fs::read(path).map_err(|source| PgTlsError::ReadRootCert {
        path: path.to_owned(),
        source,
    })?;
    let bad = |message: String| PgTlsError::BadRootCert {
        path: path.to_owned(),
        message,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| bad(format!("not a PEM file of certificates: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no PEM certificate".into()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| bad(format!("unusable CA certificate: {e}")))?;
    }
    Ok(roots)
}

#[cfg(test)]
mod tests;

//! TLS on the app's edge: a rustls server configuration offering HTTP/2 and
//! HTTP/1.1 by ALPN, from PEM files or from a throwaway CA generated at
//! start (rcgen), whose certificate clients are given to trust.

use std::path::Path;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::TlsSource;

/// TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate, key or CA file cannot be read or written.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Generating or loading the certificate failed.
    #[error("TLS setup: {0}")]
    Setup(String),
}

/// The server side of TLS, and the CA to trust when it was generated.
pub(crate) struct Edge {
    pub config: Arc<rustls::ServerConfig>,
    pub ca_pem: Option<String>,
}

fn setup(e: impl std::fmt::Display) -> TlsError {
    TlsError::Setup(e.to_string())
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> TlsError {
    TlsError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Build the edge for `source`; a self-signed CA is written to its
/// `ca_out` file when one is given.
pub(crate) fn edge(source: &TlsSource) -> Result<Edge, TlsError> {
    let (chain, key, ca_pem) = match source {
        TlsSource::SelfSigned { ca_out } => {
            let (chain, key, ca_pem) = self_signed()?;
            if let Some(path) = ca_out {
                std::fs::write(path, &ca_pem).map_err(|e| file_error(path, e))?;
            }
            (chain, key, Some(ca_pem))
        }
        TlsSource::Files { cert, key } => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
                .map_err(|e| file_error(cert, e))?
                .collect::<Result<_, _>>()
                .map_err(|e| file_error(cert, e))?;
            if chain.is_empty() {
                return Err(file_error(cert, "no PEM certificate in it"));
            }
            let k = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e))?;
            (chain, k, None)
        }
    };
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(setup)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(setup)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Edge {
        config: Arc::new(config),
        ca_pem,
    })
}

type Chain = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, String);

/// A CA and a leaf for `localhost` and 127.0.0.1 (and ::1) signed by it.
fn self_signed() -> Result<Chain, TlsError> {
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(setup)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name
        .push(DnType::CommonName, "firsttoken-refapp throwaway CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca =
        CertifiedIssuer::self_signed(ca, KeyPair::generate().map_err(setup)?).map_err(setup)?;
    let mut leaf = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])
    .map_err(setup)?;
    leaf.distinguished_name
        .push(DnType::CommonName, "localhost");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate().map_err(setup)?;
    let cert = leaf.signed_by(&key, &ca).map_err(setup)?;
    let der = PrivateKeyDer::try_from(key.serialize_der()).map_err(setup)?;
    Ok((vec![cert.der().clone()], der, ca.pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_writes_its_ca() {
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("ca.pem");
        let e = edge(&TlsSource::SelfSigned {
            ca_out: Some(out.clone()),
        })
        .expect("edge");
        let written = std::fs::read_to_string(&out).expect("CA file");
        assert!(written.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(e.ca_pem.as_deref(), Some(written.as_str()));
        assert_eq!(e.config.alpn_protocols[0], b"h2");
    }

    #[test]
    fn pem_files_are_served() {
        let dir = tempfile::tempdir().expect("dir");
        let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert, c.cert.pem()).expect("write cert");
        std::fs::write(&key, c.signing_key.serialize_pem()).expect("write key");
        let e = edge(&TlsSource::Files { cert, key }).expect("edge from files");
        assert!(e.ca_pem.is_none());
        // A key file without a key is named.
        let bad = dir.path().join("empty.pem");
        std::fs::write(&bad, "").expect("write");
        let e = edge(&TlsSource::Files {
            cert: dir.path().join("cert.pem"),
            key: bad,
        })
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.contains("empty.pem"), "{e}");
    }

    #[test]
    fn missing_files_are_named() {
        let e = edge(&TlsSource::Files {
            cert: "/nonexistent/cert.pem".into(),
            key: "/nonexistent/key.pem".into(),
        })
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.contains("/nonexistent/cert.pem"), "{e}");
    }
}

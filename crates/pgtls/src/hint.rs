//! What to change when a TLS connection to PostgreSQL fails.

use std::error::Error as StdError;

use rustls::CertificateError;

/// An error and its sources, joined with ": ", each text once.
pub(crate) fn chain(e: &(dyn StdError + 'static)) -> String {
    let mut out = String::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        cur = err.source();
    }
    out
}

/// The rustls error behind a failed handshake. tokio-rustls wraps it in an
/// `io::Error`, whose `source()` skips it, so look inside each `io::Error`.
fn rustls_error<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(inner);
        }
        cur = err.source();
    }
    None
}

/// What to do about a TLS failure, or `None` when `e` is not one.
pub fn hint(e: &tokio_postgres::Error) -> Option<String> {
    if let Some(err) = rustls_error(e) {
        return Some(match err {
            rustls::Error::InvalidCertificate(cert) => certificate_hint(cert),
            rustls::Error::AlertReceived(_) | rustls::Error::PeerIncompatible(_) => {
                "the server refused the TLS handshake: check its ssl settings (ssl_min_protocol_version, ssl_ciphers) and its log".to_owned()
            }
            _ => return None,
        });
    }
    if chain(e).contains("server does not support TLS") {
        return Some(
            "the server does not accept TLS: turn on ssl in its postgresql.conf, or (only on a trusted network) use sslmode=prefer or sslmode=disable"
                .to_owned(),
        );
    }
    None
}

fn certificate_hint(cert: &CertificateError) -> String {
    match cert {
        CertificateError::UnknownIssuer | CertificateError::BadSignature => {
            "the server's certificate is not signed by the CA in sslrootcert (without sslrootcert: by any of the system's CAs): pass the CA certificate that signed it as sslrootcert=/path/to/ca.crt in the URL, or use sslmode=require to encrypt without verifying the server".to_owned()
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "the server's certificate does not name the host in the URL: connect with a host name the certificate lists (hostaddr=IP can set the address separately), or use sslmode=verify-ca to check the CA but not the name".to_owned()
        }
        CertificateError::Expired
        | CertificateError::ExpiredContext { .. }
        | CertificateError::NotValidYet
        | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is outside its validity period: renew it, or check this machine's clock".to_owned()
        }
        _ => "the server's certificate was rejected: check it, and the CA file given as sslrootcert".to_owned(),
    }
}

/// `e` with its sources and, for a TLS failure, [`hint`]: one line for a
/// person at a terminal. It never contains a password (tokio-postgres
/// errors do not repeat the connection string).
pub fn describe(e: &tokio_postgres::Error) -> String {
    let text = chain(e);
    match hint(e) {
        Some(h) => format!("{text} (hint: {h})"),
        None => text,
    }
}

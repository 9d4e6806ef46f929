//! Parsing, and handshakes against an in-process server that speaks just
//! enough of the PostgreSQL protocol: it answers the SSLRequest, completes
//! the TLS handshake, then refuses the login with SQLSTATE 28000, so a
//! client that reaches that error has passed the certificate check.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, name);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("CA key")).expect("CA")
}

/// A CA file in a temporary directory.
struct CaFile {
    _dir: tempfile::TempDir,
    path: String,
}

fn ca_file(pem: &str) -> CaFile {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ca.crt");
    std::fs::write(&path, pem).expect("write CA");
    CaFile {
        path: path.display().to_string(),
        _dir: dir,
    }
}

/// A fake server with a certificate for `localhost` and 127.0.0.1 signed by
/// `ca`; serves connections until the test ends. Returns its port.
async fn fake_server(ca: &CertifiedIssuer<'static, KeyPair>) -> u16 {
    let mut leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .expect("leaf params");
    leaf.distinguished_name
        .push(DnType::CommonName, "localhost");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().expect("leaf key");
    let leaf = leaf.signed_by(&key, ca).expect("leaf");
    let chain = vec![CertificateDer::from_pem_slice(leaf.pem().as_bytes()).expect("leaf pem")];
    let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).expect("key pem");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let mut req = [0u8; 8];
                if tcp.read_exact(&mut req).await.is_err() || tcp.write_all(b"S").await.is_err() {
                    return;
                }
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let _ = tls.write_all(&refusal()).await;
                let _ = tls.flush().await;
                let mut sink = [0u8; 1024];
                let _ = tokio::time::timeout(Duration::from_secs(2), tls.read(&mut sink)).await;
            });
        }
    });
    port
}

/// An ErrorResponse: FATAL, SQLSTATE 28000.
fn refusal() -> Vec<u8> {
    let mut fields = Vec::new();
    for (tag, text) in [
        (b'S', "FATAL"),
        (b'C', "28000"),
        (b'M', "fake server: TLS ok"),
    ] {
        fields.push(tag);
        fields.extend_from_slice(text.as_bytes());
        fields.push(0);
    }
    fields.push(0);
    let mut msg = vec![b'E'];
    msg.extend_from_slice(&(fields.len() as u32 + 4).to_be_bytes());
    msg.extend_from_slice(&fields);
    msg
}

async fn try_connect(url: &str) -> tokio_postgres::Error {
    let target = PgTarget::parse(url).expect("parse");
    match tokio::time::timeout(Duration::from_secs(10), target.connect()).await {
        Ok(Ok(_)) => panic!("the fake server never accepts a login"),
        Ok(Err(e)) => e,
        Err(_) => panic!("connect did not finish in time"),
    }
}

fn reached_login(e: &tokio_postgres::Error) -> bool {
    e.code().map(|c| c.code()) == Some("28000")
}

#[test]
fn default_is_prefer_and_tls_params_are_stripped() {
    let t = PgTarget::parse("postgres://u:pw@127.0.0.1:5/db?application_name=x").unwrap();
    assert_eq!(t.ssl_mode(), SslMode::Prefer);
    assert_eq!(
        t.config().get_ssl_mode(),
        tokio_postgres::config::SslMode::Prefer
    );
    assert_eq!(t.config().get_application_name(), Some("x"));
    assert_eq!(t.config().get_password(), Some(&b"pw"[..]));

    let t = PgTarget::parse("postgresql://u@h/db?sslmode=require&connect_timeout=3").unwrap();
    assert_eq!(t.ssl_mode(), SslMode::Require);
    assert_eq!(t.root_cert(), None);
    assert_eq!(
        t.config().get_ssl_mode(),
        tokio_postgres::config::SslMode::Require
    );
    assert_eq!(
        t.config().get_connect_timeout(),
        Some(&Duration::from_secs(3))
    );

    let t = PgTarget::parse("postgres://u@h/db?sslmode=disable").unwrap();
    assert_eq!(
        t.config().get_ssl_mode(),
        tokio_postgres::config::SslMode::Disable
    );
}

#[test]
fn verify_modes_read_the_ca_file_percent_decoded() {
    let ca = ca_file(&ca("test CA").pem());
    let encoded = ca.path.replace('/', "%2F");
    let t = PgTarget::parse(&format!(
        "postgres://u@h/db?sslrootcert={encoded}&sslmode=verify-full"
    ))
    .unwrap();
    assert_eq!(t.ssl_mode(), SslMode::VerifyFull);
    assert_eq!(t.root_cert(), Some(&RootCert::File(ca.path.clone().into())));
    assert_eq!(
        t.config().get_ssl_mode(),
        tokio_postgres::config::SslMode::Require
    );
    let t = PgTarget::parse(&format!(
        "postgres://u@h/db?sslmode=verify-ca&sslrootcert={}",
        ca.path
    ))
    .unwrap();
    assert_eq!(t.ssl_mode(), SslMode::VerifyCa);
}

#[test]
fn system_root_cert_defaults_to_verify_full_and_refuses_weaker_modes() {
    let t = PgTarget::parse("postgres://u@h/db?sslrootcert=system").unwrap();
    assert_eq!(t.ssl_mode(), SslMode::VerifyFull);
    assert_eq!(t.root_cert(), Some(&RootCert::System));
    let e = PgTarget::parse("postgres://u@h/db?sslrootcert=system&sslmode=require").unwrap_err();
    assert!(matches!(e, PgTlsError::SystemNeedsVerifyFull { .. }), "{e}");
}

#[test]
fn bad_settings_say_what_to_do() {
    let e = PgTarget::parse("postgres://u@h/db?sslmode=verify-ca").unwrap_err();
    assert!(e.to_string().contains("sslrootcert=/path/to/ca.crt"), "{e}");
    let e = PgTarget::parse("postgres://u@h/db?sslmode=allow").unwrap_err();
    assert!(e.to_string().contains("sslmode=prefer"), "{e}");
    let e = PgTarget::parse("postgres://u@h/db?sslmode=verify_full").unwrap_err();
    assert!(matches!(e, PgTlsError::BadSslMode { .. }), "{e}");
    let e = PgTarget::parse("postgres://u@h/db?sslcert=/c.pem").unwrap_err();
    assert!(e.to_string().contains("sslcert is not supported"), "{e}");
    let e =
        PgTarget::parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt")
            .unwrap_err();
    assert!(e.to_string().contains("/nonexistent/ca.crt"), "{e}");
    let empty = ca_file("");
    let e = PgTarget::parse(&format!(
        "postgres://u@h/db?sslmode=verify-full&sslrootcert={}",
        empty.path
    ))
    .unwrap_err();
    assert!(e.to_string().contains("no PEM certificate"), "{e}");
    let e = PgTarget::parse("postgres://u:hunter2@h/db?bogus=1").unwrap_err();
    assert!(e.to_string().contains("bogus"), "{e}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[test]
fn debug_hides_the_password() {
    let t = PgTarget::parse("postgres://u:hunter2@h/db").unwrap();
    assert!(!format!("{t:?}").contains("hunter2"));
}

#[tokio::test]
async fn verify_full_passes_with_the_right_ca_and_fails_with_a_hint_otherwise() {
    let good = ca("good CA");
    let port = fake_server(&good).await;
    let good_file = ca_file(&good.pem());
    let wrong_file = ca_file(&ca("wrong CA").pem());

    for host in ["127.0.0.1", "localhost"] {
        let e = try_connect(&format!(
            "postgres://u@{host}:{port}/db?sslmode=verify-full&sslrootcert={}",
            good_file.path
        ))
        .await;
        assert!(reached_login(&e), "{host}: {}", describe(&e));
        assert_eq!(hint(&e), None);
    }

    let e = try_connect(&format!(
        "postgres://u@127.0.0.1:{port}/db?sslmode=verify-full&sslrootcert={}",
        wrong_file.path
    ))
    .await;
    assert!(!reached_login(&e));
    let text = describe(&e);
    assert!(text.contains("UnknownIssuer"), "{text}");
    assert!(text.contains("sslrootcert=/path/to/ca.crt"), "{text}");

    // require with a CA file checks the chain (libpq's rule) ...
    let e = try_connect(&format!(
        "postgres://u@127.0.0.1:{port}/db?sslmode=require&sslrootcert={}",
        wrong_file.path
    ))
    .await;
    assert!(!reached_login(&e), "{}", describe(&e));
    // ... so does prefer (the server offers TLS, so it is used) ...
    let e = try_connect(&format!(
        "postgres://u@127.0.0.1:{port}/db?sslrootcert={}",
        wrong_file.path
    ))
    .await;
    assert!(!reached_login(&e), "{}", describe(&e));
    // ... and without one neither checks anything.
    let e = try_connect(&format!("postgres://u@127.0.0.1:{port}/db")).await;
    assert!(reached_login(&e), "{}", describe(&e));
    let e = try_connect(&format!("postgres://u@127.0.0.1:{port}/db?sslmode=require")).await;
    assert!(reached_login(&e), "{}", describe(&e));
}

#[tokio::test]
async fn a_name_mismatch_fails_verify_full_but_not_verify_ca() {
    let good = ca("good CA");
    let port = fake_server(&good).await;
    let file = ca_file(&good.pem());
    // hostaddr: the TCP connection goes to 127.0.0.1 without a DNS lookup,
    // and the certificate is checked against the host name.
    let url = |mode: &str| {
        format!(
            "postgres://u@not-in-the-cert.firsttoken.test:{port}/db?hostaddr=127.0.0.1&sslmode={mode}&sslrootcert={}",
            file.path
        )
    };
    let e = try_connect(&url("verify-full")).await;
    let text = describe(&e);
    assert!(!reached_login(&e), "{text}");
    assert!(text.contains("not-in-the-cert.firsttoken.test"), "{text}");
    assert!(text.contains("sslmode=verify-ca"), "{text}");

    let e = try_connect(&url("verify-ca")).await;
    assert!(reached_login(&e), "{}", describe(&e));
}

#[tokio::test]
async fn require_refuses_a_server_without_tls() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut req = [0u8; 8];
                if tcp.read_exact(&mut req).await.is_ok() && tcp.write_all(b"N").await.is_ok() {
                    // A client that goes on in plain text sends its startup message.
                    let mut sink = [0u8; 1024];
                    let _ = tokio::time::timeout(Duration::from_secs(2), tcp.read(&mut sink)).await;
                }
            });
        }
    });
    let e = try_connect(&format!("postgres://u@127.0.0.1:{port}/db?sslmode=require")).await;
    let text = describe(&e);
    assert!(text.contains("server does not support TLS"), "{text}");
    assert!(text.contains("turn on ssl"), "{text}");
    // prefer goes on in plain text (and then meets a server that says nothing).
    let e = try_connect(&format!(
        "postgres://u@127.0.0.1:{port}/db?connect_timeout=5"
    ))
    .await;
    assert_eq!(hint(&e), None, "{}", describe(&e));
}

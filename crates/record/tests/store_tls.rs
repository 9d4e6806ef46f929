//! The PostgreSQL store over TLS. Needs `DATABASE_URL` and, for the server's
//! CA, `FIRSTTOKEN_TEST_PG_CA` (`.ci/run` makes both); without them the tests
//! say so loudly and pass.

mod common;

use std::time::Duration;

use common::{TestDb, full_row, full_session, pg_connect, run, with_param};
use firsttoken_record::store::{Store, StoreError};

/// The CA file, or `None` after saying why the test is skipped.
fn ca() -> Option<String> {
    match std::env::var("FIRSTTOKEN_TEST_PG_CA") {
        Ok(ca) if !ca.trim().is_empty() => Some(ca),
        _ => {
            eprintln!(
                "SKIPPED: FIRSTTOKEN_TEST_PG_CA not set (PostgreSQL TLS tests did not run; .ci/pg-tls makes it)"
            );
            None
        }
    }
}

/// A private schema in `DATABASE_URL`, when both variables are set.
async fn tls_db() -> Option<(TestDb, String)> {
    let ca = ca()?;
    Some((TestDb::postgres().await?, ca))
}

/// Writes and reads back a session through a store at `url`, then checks
/// that every connection the store holds is encrypted.
async fn round_trip(db: &TestDb, url: &str) {
    let store = tokio::time::timeout(Duration::from_secs(30), Store::open(url))
        .await
        .expect("store opens in time")
        .expect("store opens over TLS");
    let meta = full_session("20261201T050000Z-7777", "2026-12-01T05:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let row = full_row(&meta.id, 0, 12.5);
    store.append_sample(&row).await.unwrap();
    assert_eq!(store.samples(&meta.id).await.unwrap(), vec![row]);

    let TestDb::Postgres {
        schema, admin_url, ..
    } = db
    else {
        unreachable!("tls_db gives PostgreSQL")
    };
    let admin = pg_connect(admin_url).await;
    let r = admin
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a
             JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = $1",
            &[schema],
        )
        .await
        .unwrap();
    let (all, encrypted): (i64, i64) = (r.get(0), r.get(1));
    assert!(all > 0, "the store holds no connection");
    assert_eq!(encrypted, all, "a store connection is not encrypted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_with_sslmode_require() {
    let Some((db, _ca)) = tls_db().await else {
        return;
    };
    run(Some(db), |db| async move {
        let url = with_param(db.url(), "sslmode=require");
        round_trip(&db, &url).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_with_verify_full_and_the_servers_ca() {
    let Some((db, ca)) = tls_db().await else {
        return;
    };
    run(Some(db), |db| async move {
        let url = with_param(
            &with_param(db.url(), "sslmode=verify-full"),
            &format!("sslrootcert={ca}"),
        );
        round_trip(&db, &url).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_against_another_ca_fails_saying_what_to_do() {
    let Some((db, _ca)) = tls_db().await else {
        return;
    };
    run(Some(db), |db| async move {
        let dir = tempfile::tempdir().unwrap();
        let wrong = dir.path().join("other-ca.crt");
        std::fs::write(&wrong, other_ca_pem()).unwrap();
        // A password in the URL must not reach the message.
        let url = db.url().replacen("://postgres@", "://postgres:hunter2@", 1);
        let url = with_param(
            &with_param(&url, "sslmode=verify-full"),
            &format!("sslrootcert={}", wrong.display()),
        );
        let err = tokio::time::timeout(Duration::from_secs(60), Store::open(&url))
            .await
            .expect("open gives up in time")
            .expect_err("a server certificate from another CA is refused");
        assert!(
            matches!(err, StoreError::Pool { .. } | StoreError::Postgres { .. }),
            "{err:?}"
        );
        let text = err.to_string();
        eprintln!("refused as expected: {text}");
        assert!(text.contains("UnknownIssuer"), "{text}");
        assert!(text.contains("sslrootcert=/path/to/ca.crt"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_name_the_certificate_lacks_fails_verify_full_but_not_verify_ca() {
    let Some((db, ca)) = tls_db().await else {
        return;
    };
    run(Some(db), |db| async move {
        // The same server under a name its certificate does not list; hostaddr
        // keeps the connection on 127.0.0.1 without a DNS lookup.
        let Some(url) = renamed(db.url()) else {
            eprintln!("SKIPPED: DATABASE_URL is not on 127.0.0.1 (name-mismatch test did not run)");
            return;
        };
        let url = |mode: &str| {
            with_param(
                &with_param(&url, &format!("sslmode={mode}")),
                &format!("sslrootcert={ca}"),
            )
        };
        let err = tokio::time::timeout(Duration::from_secs(60), Store::open(&url("verify-full")))
            .await
            .expect("open gives up in time")
            .expect_err("a certificate without this host name is refused");
        let text = err.to_string();
        eprintln!("refused as expected: {text}");
        assert!(text.contains("not-in-the-cert.firsttoken.test"), "{text}");
        assert!(text.contains("sslmode=verify-ca"), "{text}");

        round_trip(&db, &url("verify-ca")).await;
    })
    .await;
}

/// `url` (on 127.0.0.1) addressed as `not-in-the-cert.firsttoken.test`
/// with `hostaddr=127.0.0.1`.
fn renamed(url: &str) -> Option<String> {
    url.contains("@127.0.0.1:").then(|| {
        with_param(
            &url.replacen("@127.0.0.1:", "@not-in-the-cert.firsttoken.test:", 1),
            "hostaddr=127.0.0.1",
        )
    })
}

#[tokio::test]
async fn a_missing_ca_file_is_a_bad_url_naming_the_file() {
    let err = Store::open(
        "postgres://u:hunter2@127.0.0.1:1/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt",
    )
    .await
    .expect_err("no CA file");
    assert!(matches!(err, StoreError::BadUrl { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("/nonexistent/ca.crt"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

/// A CA that signed nothing the server has: a self-signed P-256 CA made
/// once with openssl, valid until 2126 (only its public certificate).
fn other_ca_pem() -> &'static str {
    "-----BEGIN CERTIFICATE-----
MIIBqTCCAU+gAwIBAgIUTe/3K3qUAkLWHaWGeGrdTHOB8MgwCgYIKoZIzj0EAwIw
KTEnMCUGA1UEAwweZmlyc3R0b2tlbiB0ZXN0OiBzb21lIG90aGVyIENBMCAXDTI2
MTIwMTA1MzIyNloYDzIxMjYxMTA3MDUzMjI2WjApMScwJQYDVQQDDB5maXJzdHRv
a2VuIHRlc3Q6IHNvbWUgb3RoZXIgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC
AASrI2d+Uhct4IfCZzr2ekJ/E3vY2WoiwYNXBunMxU20/6X6sNXgM9rVbHeSplf0
De29e6T0IP69ERSdCNZZITiOo1MwUTAdBgNVHQ4EFgQU7MM1NDic7xkl3xvcLpG4
emTsbjEwHwYDVR0jBBgwFoAU7MM1NDic7xkl3xvcLpG4emTsbjEwDwYDVR0TAQH/
BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEAppm+cSogvPJnSR/ITyHRNuyC9RFT
DtEB3mK+6h0iaGMCIFqmGBRFbLWTHry6x7GiTBa49kHd1QZrx+ttZaO0Z+zy
-----END CERTIFICATE-----
"
}

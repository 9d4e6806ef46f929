//! Connections against the emulator: warm and fresh modes (counted at a TCP
//! proxy in front of it), TLS with a test CA, HTTP/2 by ALPN and h2c, the
//! phase order of every sample, and TLS failures.

mod common;

use std::time::Duration;

use common::*;
use firsttoken_emulator::Settings;
use firsttoken_plan::{ConnectionMode, HttpVersion};
use firsttoken_record::{Connection, HandshakeKind, Sample};

fn settings() -> Settings {
    Settings {
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(5),
        tokens: 5,
        ..Default::default()
    }
}

/// Success and the emulator's stream in every sample. The phase order is
/// checked separately, at the end of each test, so that the other checks
/// still run when only the order is wrong.
#[track_caller]
fn assert_all_ok(samples: &[Sample]) {
    for s in samples {
        assert_ok(s);
        assert_eq!(s.content_chunks, 5, "{s:#?}");
        assert_eq!(s.output_tokens, Some(5), "{s:#?}");
        assert!(
            s.ttft_ms.unwrap() >= 50.0,
            "the emulator waits 50 ms: {s:#?}"
        );
    }
}

/// Every stamp in every sample in the order a request passes them.
#[track_caller]
fn assert_order(samples: &[Sample]) {
    for s in samples {
        assert_phase_order(s);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_reuses_one_connection_per_worker() {
    let emu = emulator(settings(), None).await;
    let proxy = counting_proxy(emu.addr).await;
    let mut s = spec(&format!("http://{}/v1/chat/completions", proxy.addr));
    s.mode = ConnectionMode::Warm;
    s.concurrency = 2;
    s.requests = 6;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 8, "2 warm-ups + 6: {samples:#?}");
    assert_all_ok(&samples);
    let (warm, counted): (Vec<&Sample>, Vec<&Sample>) = samples.iter().partition(|s| s.warmup);
    assert_eq!(warm.len(), 2);
    let mut workers: Vec<u32> = warm.iter().map(|s| s.worker).collect();
    workers.sort_unstable();
    assert_eq!(workers, [0, 1], "one warm-up per worker");
    for w in &warm {
        assert_eq!(w.connection, Connection::Fresh, "{w:#?}");
        assert!(w.connect_ms.is_some(), "{w:#?}");
    }
    let mut seqs: Vec<u64> = counted.iter().map(|s| s.seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..6).collect::<Vec<_>>());
    for c in &counted {
        assert_eq!(c.connection, Connection::Reused, "{c:#?}");
        assert_eq!(
            (c.dns_ms, c.connect_ms, c.tls_ms),
            (None, None, None),
            "{c:#?}"
        );
        assert!(c.sent_ms.is_some() && c.ttfb_ms.is_some(), "{c:#?}");
    }
    assert_eq!(
        proxy.connections(),
        2,
        "warm -c 2 opens exactly 2 connections"
    );
    assert_order(&samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_opens_a_connection_per_request() {
    let emu = emulator(settings(), None).await;
    let proxy = counting_proxy(emu.addr).await;
    let mut s = spec(&format!("http://{}/v1/chat/completions", proxy.addr));
    s.mode = ConnectionMode::Fresh;
    s.requests = 4;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 4, "no warm-up in fresh mode: {samples:#?}");
    assert_all_ok(&samples);
    for s in &samples {
        assert!(!s.warmup);
        assert_eq!(s.connection, Connection::Fresh, "{s:#?}");
        assert!(s.connect_ms.is_some(), "{s:#?}");
        assert_eq!(s.dns_ms, None, "an IP literal needs no DNS: {s:#?}");
        assert_eq!(s.tls_ms, None, "cleartext: {s:#?}");
    }
    assert_eq!(proxy.connections(), 4, "fresh -n 4 opens 4 connections");
    assert_order(&samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn localhost_by_name_has_a_dns_phase() {
    let emu = emulator(settings(), None).await;
    let s = spec(&format!(
        "http://localhost:{}/v1/chat/completions",
        emu.addr.port()
    ));
    let samples = probe(s).await;
    // `localhost` may resolve to ::1 first, where nothing listens; the
    // connector must then go on to 127.0.0.1.
    assert_all_ok(&samples);
    assert!(samples[0].dns_ms.is_some(), "{:#?}", samples[0]);
    assert_order(&samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_fresh_samples_carry_the_handshake() {
    let (emu, pki) = tls_emulator(settings()).await;
    let mut s = tls_spec(&emu, &pki);
    s.requests = 2;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 2);
    assert_all_ok(&samples);
    for s in &samples {
        assert_eq!(s.connection, Connection::Fresh);
        let (connect, tls) = (s.connect_ms.unwrap(), s.tls_ms.unwrap());
        assert!(connect <= tls, "{s:#?}");
        assert_eq!(s.dns_ms, None, "--resolve skips DNS: {s:#?}");
        let info = s.tls.as_ref().expect("TLS info on a fresh TLS connection");
        assert_eq!(info.version, "TLSv1_3", "{info:?}");
        assert!(info.cipher.starts_with("TLS13_"), "{info:?}");
        assert!(info.kx_group.is_some(), "{info:?}");
        // A first visit each time: no session cache carries a ticket over.
        assert_eq!(info.handshake, Some(HandshakeKind::Full), "{info:?}");
    }
    assert_order(&samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_resume_is_a_returning_visitor() {
    let (emu, pki) = tls_emulator(settings()).await;
    let mut s = tls_spec(&emu, &pki);
    s.requests = 3;
    s.tls.resume = true;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 3);
    assert_all_ok(&samples);
    let kinds: Vec<_> = samples
        .iter()
        .map(|s| s.tls.as_ref().and_then(|t| t.handshake))
        .collect();
    assert_eq!(
        kinds,
        [
            Some(HandshakeKind::Full),
            Some(HandshakeKind::Resumed),
            Some(HandshakeKind::Resumed)
        ],
        "the first connection gets the ticket the next ones resume with"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_alpn_picks_the_http_version() {
    let (emu, pki) = tls_emulator(settings()).await;
    let mut all = Vec::new();
    for (http, want) in [
        (HttpVersion::Auto, "HTTP/2"),
        (HttpVersion::Http2, "HTTP/2"),
        (HttpVersion::Http1, "HTTP/1.1"),
    ] {
        let mut s = tls_spec(&emu, &pki);
        s.http = http;
        s.mode = ConnectionMode::Warm;
        s.requests = 3;
        let samples = probe(s).await;
        assert_eq!(samples.len(), 4, "{http:?}: {samples:#?}");
        assert_all_ok(&samples);
        for s in &samples {
            assert_eq!(s.http_version.as_deref(), Some(want), "{http:?}: {s:#?}");
            if s.warmup {
                assert!(s.tls_ms.is_some() && s.tls.is_some(), "{http:?}: {s:#?}");
            } else {
                assert_eq!(s.connection, Connection::Reused, "{http:?}: {s:#?}");
                assert_eq!(
                    (s.dns_ms, s.connect_ms, s.tls_ms),
                    (None, None, None),
                    "{http:?}"
                );
                assert!(s.tls.is_none(), "{http:?}: no handshake on reuse: {s:#?}");
            }
        }
        all.extend(samples);
    }
    assert_order(&all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleartext_http2_is_h2c_and_auto_is_http1() {
    let emu = emulator(settings(), None).await;
    let url = format!("http://{}/v1/chat/completions", emu.addr);
    let mut all = Vec::new();
    for (http, mode, want) in [
        (HttpVersion::Http2, ConnectionMode::Fresh, "HTTP/2"),
        (HttpVersion::Http2, ConnectionMode::Warm, "HTTP/2"),
        (HttpVersion::Auto, ConnectionMode::Fresh, "HTTP/1.1"),
        (HttpVersion::Http1, ConnectionMode::Warm, "HTTP/1.1"),
    ] {
        let mut s = spec(&url);
        s.http = http;
        s.mode = mode;
        s.requests = 2;
        let samples = probe(s).await;
        assert_all_ok(&samples);
        for s in &samples {
            assert_eq!(
                s.http_version.as_deref(),
                Some(want),
                "{http:?} {mode:?}: {s:#?}"
            );
        }
        all.extend(samples);
    }
    assert_order(&all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_http2_workers_keep_phase_order() {
    let (emu, pki) = tls_emulator(settings()).await;
    let mut s = tls_spec(&emu, &pki);
    s.mode = ConnectionMode::Warm;
    s.concurrency = 3;
    s.requests = 9;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 12);
    assert_all_ok(&samples);
    assert!(
        samples
            .iter()
            .all(|s| s.http_version.as_deref() == Some("HTTP/2"))
    );
    assert_order(&samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_name_mismatch_is_a_tls_error() {
    let (emu, pki) = tls_emulator(settings()).await;
    // The certificate names "localhost"; the URL names the IP.
    let mut s = spec(&format!("https://{}/v1/chat/completions", emu.addr));
    s.tls.ca_pem = Some(pki.ca_pem.clone().into_bytes());
    s.requests = 2;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 2);
    for s in &samples {
        assert_failed(s, "tls");
        assert!(s.connect_ms.is_some(), "TCP worked: {s:#?}");
        assert_eq!(
            (s.tls_ms, s.status, s.ttft_ms),
            (None, None, None),
            "{s:#?}"
        );
    }
    // Another name resolved to the right address fails the same way.
    let port = emu.addr.port();
    let mut s = spec(&format!(
        "https://api.example.test:{port}/v1/chat/completions"
    ));
    s.resolve = vec![
        format!("api.example.test:{port}:127.0.0.1")
            .parse()
            .unwrap(),
    ];
    s.tls.ca_pem = Some(pki.ca_pem.clone().into_bytes());
    let samples = probe(s).await;
    assert_failed(&samples[0], "tls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_ca_is_a_tls_error_and_insecure_accepts_it() {
    let (emu, pki) = tls_emulator(settings()).await;
    let mut s = tls_spec(&emu, &pki);
    s.tls.ca_pem = None; // the platform verifier does not know the test CA
    let samples = probe(s).await;
    let m = assert_failed(&samples[0], "tls");
    assert!(m.contains("localhost"), "the message names the host: {m}");
    // --insecure: any certificate, even for a name it does not carry.
    for url in [
        format!("https://localhost:{}/v1/chat/completions", emu.addr.port()),
        format!("https://{}/v1/chat/completions", emu.addr),
    ] {
        let mut s = tls_spec(&emu, &pki);
        s.request.target = firsttoken_plan::Target::parse(&url).unwrap();
        s.tls = firsttoken_plan::TlsOptions {
            insecure: true,
            ..Default::default()
        };
        let samples = probe(s).await;
        assert_all_ok(&samples);
        assert!(samples[0].tls.is_some(), "{:#?}", samples[0]);
    }
    // A CA file that holds no certificate stops the probe before it starts.
    let mut s = tls_spec(&emu, &pki);
    s.tls.ca_pem = Some(b"not a pem file".to_vec());
    let (tx, _rx) = tokio::sync::mpsc::channel(4);
    let r = firsttoken_drive::run_probe(s, tx, Default::default()).await;
    assert!(r.is_err(), "an unusable CA file is a setup error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_reconnects_when_the_server_closes_each_connection() {
    let reply = Reply::ok(
        "text/event-stream",
        at_once([oa_role(), oa_content("A"), oa_done()]),
    )
    .header("connection", "close")
    .ending(Ending::Close);
    let server = script_server(reply).await;
    let mut s = spec(&server.url());
    s.mode = ConnectionMode::Warm;
    s.requests = 3;
    let samples = probe(s).await;
    assert_eq!(samples.len(), 4, "{samples:#?}");
    for s in &samples {
        assert_ok(s);
        assert_eq!(
            s.connection,
            Connection::Fresh,
            "a closed connection is not reused: {s:#?}"
        );
        assert!(s.connect_ms.is_some(), "{s:#?}");
    }
    assert_eq!(server.connections(), 4);
    assert_order(&samples);
}

//! Cold starts, serial-mode queueing and seeded determinism, over real
//! sockets on loopback. Timing assertions use ordering and generous bounds.

mod common;

use std::time::Duration;

use common::{Emu, THREE, chat_body, start, start_with};
use firsttoken_emulator::{Settings, TruthRecord};
use serde_json::json;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test]
async fn cold_start_hits_the_first_request_and_the_first_after_a_gap() {
    let toml = r#"
cold_start_ms = 300
idle_gap_s = 0.6
tokens_min = 2
tokens_max = 2
[[provider]]
name = "a"
ttft_median_ms = 20
tokens_per_s = 500
[[provider]]
name = "b"
ttft_median_ms = 20
tokens_per_s = 500
cold_start_ms = 200
idle_gap_s = 60
"#;
    let mut emu = start_with(toml, 1).await;
    let first = emu.chat(&[], chat_body("hi", true, None)).await;
    let t1 = first.ttft().expect("tokens");
    assert!(t1 >= ms(320), "first request TTFT {t1:?}");
    assert_eq!(emu.truth_of(&first.id()).await.cold_start_ms, 300.0);

    let second = emu.chat(&[], chat_body("hi", true, None)).await;
    let t2 = second.ttft().expect("tokens");
    assert_eq!(emu.truth_of(&second.id()).await.cold_start_ms, 0.0);
    assert!(t2 < t1, "warm {t2:?} vs cold {t1:?}");

    // Provider b has never served: its own cold start applies, the
    // emulator-wide one does not (it is warm).
    let b = emu
        .chat(&[], chat_body("hi", true, Some(json!({"only": ["b"]}))))
        .await;
    assert!(b.ttft().expect("tokens") >= ms(220));
    assert_eq!(emu.truth_of(&b.id()).await.cold_start_ms, 200.0);

    // After an idle gap of 0.6 s the emulator is cold again.
    tokio::time::sleep(ms(700)).await;
    let third = emu.chat(&[], chat_body("hi", true, None)).await;
    assert!(third.ttft().expect("tokens") >= ms(320));
    assert_eq!(emu.truth_of(&third.id()).await.cold_start_ms, 300.0);
}

/// Fire `n` identical requests at once; their truth records by start.
async fn concurrent(
    emu: &mut Emu,
    n: usize,
    headers: &[(&str, &str)],
    routing: Option<serde_json::Value>,
) -> Vec<TruthRecord> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let addr = emu.addr;
        let h: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let body = chat_body("hi", true, routing.clone());
        tasks.push(tokio::spawn(async move {
            let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            common::post(addr, "/v1/chat/completions", &h, &body, common::DEADLINE).await
        }));
    }
    let mut recs = Vec::new();
    for t in tasks {
        let r = t.await.expect("request task");
        assert!(r.done(), "{r:?}");
        recs.push(emu.truth_of(&r.id()).await);
    }
    recs.sort_by(|a, b| (a.read_ms + a.queue_wait_ms).total_cmp(&(b.read_ms + b.queue_wait_ms)));
    recs
}

// Each response: TTFT 300 ms, then 2 more tokens 10 ms apart.
const ONE_RESPONSE_MS: f64 = 320.0;
const SLOW: [(&str, &str); 3] = [
    ("x-emulator-ttft-ms", "300"),
    ("x-emulator-itl-ms", "10"),
    ("x-emulator-tokens", "3"),
];

#[tokio::test]
async fn serial_mode_queues_requests_one_after_another() {
    let mut emu = start(Settings {
        profile: Some(common::profile(THREE)),
        serial: true,
        ..Settings::default()
    })
    .await;
    let recs = concurrent(&mut emu, 3, &SLOW, None).await;
    let waits: Vec<f64> = recs.iter().map(|r| r.queue_wait_ms).collect();
    // Requests arrive within a few ms of each other; allow 100 ms for it.
    assert!(waits[1] >= ONE_RESPONSE_MS - 100.0, "{waits:?}");
    assert!(waits[2] >= 2.0 * ONE_RESPONSE_MS - 100.0, "{waits:?}");
    // No overlap: each starts after the previous one's last token.
    for w in recs.windows(2) {
        let next_start = w[1].read_ms + w[1].queue_wait_ms;
        let prev_last = w[0].last_token_ms.expect("tokens");
        assert!(next_start >= prev_last, "{:?}", recs);
    }
}

#[tokio::test]
async fn without_serial_mode_requests_overlap() {
    let mut emu = start_with(THREE, 1).await;
    let recs = concurrent(&mut emu, 3, &SLOW, None).await;
    for r in &recs {
        assert!(r.queue_wait_ms < 100.0, "{recs:?}");
    }
}

#[tokio::test]
async fn serial_providers_queue_only_their_own_requests() {
    let toml = THREE.replacen("name = \"alpha\"", "name = \"alpha\"\nserial = true", 1);
    let mut emu = start_with(&toml, 1).await;
    let on_alpha = concurrent(&mut emu, 2, &SLOW, None).await;
    assert!(
        on_alpha[1].queue_wait_ms >= ONE_RESPONSE_MS - 100.0,
        "{on_alpha:?}"
    );
    let on_beta = concurrent(&mut emu, 2, &SLOW, Some(json!({"only": ["beta"]}))).await;
    assert!(
        on_beta.iter().all(|r| r.queue_wait_ms < 100.0),
        "{on_beta:?}"
    );
}

const RANDOM: &str = r#"
tokens_min = 1
tokens_max = 4
[[provider]]
name = "a"
ttft_median_ms = 3
ttft_p90_ms = 12
tokens_per_s = 1000
faults = { error_rate = 0.5 }
[[provider]]
name = "b"
ttft_median_ms = 3
ttft_p90_ms = 12
tokens_per_s = 1000
"#;

/// Request id, serving provider, target TTFT, planned tokens.
type Draw = (String, Option<String>, f64, u32);

/// The draws of 12 requests, by request index.
async fn draws(seed: u64, at_once: bool) -> Vec<Draw> {
    let mut emu = start_with(RANDOM, seed).await;
    let recs = if at_once {
        concurrent(&mut emu, 12, &[], None).await
    } else {
        let mut v = Vec::new();
        for _ in 0..12 {
            let r = emu.chat(&[], chat_body("hi", true, None)).await;
            v.push(emu.truth_of(&r.id()).await);
        }
        v
    };
    let mut out: Vec<_> = recs
        .into_iter()
        .map(|r| (r.request_id, r.provider, r.target_ttft_ms, r.tokens_planned))
        .collect();
    out.sort_by_key(|d| d.0[4..].parse::<u64>().unwrap_or(u64::MAX));
    out
}

#[tokio::test]
async fn the_same_seed_draws_the_same_for_each_request_index() {
    let a = draws(42, false).await;
    let b = draws(42, false).await;
    assert_eq!(a, b);
    // Concurrency does not change what request n draws.
    let c = draws(42, true).await;
    assert_eq!(a, c);
    // Both providers serve some (a refuses about half the time), and the
    // TTFT targets vary.
    assert!(a.iter().any(|d| d.1.as_deref() == Some("a")), "{a:?}");
    assert!(a.iter().any(|d| d.1.as_deref() == Some("b")), "{a:?}");
    assert!(a.iter().any(|d| d.2 != a[0].2), "{a:?}");
    let other = draws(43, false).await;
    assert_ne!(a, other);
    let providers = |v: &[Draw]| -> Vec<Option<String>> { v.iter().map(|d| d.1.clone()).collect() };
    let ttfts = |v: &[Draw]| -> Vec<f64> { v.iter().map(|d| d.2).collect() };
    assert_ne!(ttfts(&a), ttfts(&other));
    // With 12 coin flips, two seeds almost surely route differently; this
    // pair does (checked once, stable since the draws are seeded).
    assert_ne!(providers(&a), providers(&other));
}

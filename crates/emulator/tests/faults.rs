//! Each injected fault's observable effect, over real sockets on loopback.

mod common;

use std::time::Duration;

use common::{THREE, chat_body, post, start_with};
use serde_json::json;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn ms_f(x: f64) -> Duration {
    Duration::from_secs_f64(x / 1000.0)
}

#[tokio::test]
async fn stream_error_is_an_event_in_a_200_stream_then_no_done() {
    let mut emu = start_with(THREE, 1).await;
    let h = [
        ("x-emulator-fault", "stream-error"),
        ("x-emulator-fault-after-tokens", "2"),
    ];
    let r = emu.chat(&h, chat_body("hi", true, None)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.content_times().len(), 2);
    let last = r.chunks().pop().expect("events");
    assert!(last["error"]["message"].is_string(), "{last}");
    assert_eq!(last["provider"], "alpha");
    assert!(!r.done());
    assert!(r.chunks().iter().all(|c| c.get("usage").is_none()));
    let t = emu.truth_of(&r.id()).await;
    assert_eq!(t.fault.as_deref(), Some("stream-error"));
    assert_eq!(t.tokens_sent, 2);
    assert!(!t.completed);
    // A stream fault does not fall back: the stream has begun.
    assert_eq!(t.attempts.len(), 1);
}

#[tokio::test]
async fn drop_closes_the_connection_mid_stream() {
    let mut emu = start_with(THREE, 1).await;
    let h = [
        ("x-emulator-fault", "drop"),
        ("x-emulator-fault-after-tokens", "3"),
    ];
    let r = emu.chat(&h, chat_body("hi", true, None)).await;
    assert_eq!(r.status, 200);
    assert!(!r.timed_out);
    assert!(!r.complete, "the chunked body must be truncated");
    assert!(!r.done());
    assert_eq!(r.content_times().len(), 3);
    let t = emu.truth_of(&r.id()).await;
    assert_eq!((t.fault.as_deref(), t.completed), (Some("drop"), false));
}

#[tokio::test]
async fn stall_holds_the_stream_then_resumes() {
    let mut emu = start_with(THREE, 1).await;
    let h = [
        ("x-emulator-fault", "stall"),
        ("x-emulator-fault-after-tokens", "2"),
        ("x-emulator-stall-ms", "400"),
    ];
    let r = emu.chat(&h, chat_body("hi", true, None)).await;
    assert!(r.complete && r.done());
    let times = r.content_times();
    assert_eq!(times.len(), 5);
    let t = emu.truth_of(&r.id()).await;
    assert_eq!((t.fault.as_deref(), t.completed), (Some("stall"), true));
    // The third token is due 400 ms after its schedule: planned TTFT, two
    // 5 ms intervals, the stall. Counted from the request, which the
    // schedule cannot precede, so a late read of an earlier token cannot
    // shrink it (the 10 ms of intervals absorb the client's own stamp).
    let third = ms_f(t.target_ttft_ms) + ms(400);
    assert!(
        times[2] >= third,
        "third token at {:?}, due {third:?}",
        times[2]
    );
    // The tokens before it came without the stall (generous bound).
    assert!(times[1] < ms(300), "second token at {:?}", times[1]);
}

#[tokio::test]
async fn stall_forever_lasts_until_the_client_gives_up() {
    let emu = start_with(THREE, 1).await;
    let h = [
        ("x-emulator-fault", "stall"),
        ("x-emulator-fault-after-tokens", "1"),
        ("x-emulator-stall-ms", "forever"),
    ];
    let r = post(
        emu.addr,
        "/v1/chat/completions",
        &h,
        &chat_body("hi", true, None),
        ms(800),
    )
    .await;
    assert!(r.timed_out);
    assert_eq!(r.content_times().len(), 1);
    assert!(!r.done());
}

#[tokio::test]
async fn slow_headers_delay_the_status_line() {
    let mut emu = start_with(THREE, 1).await;
    let h = [
        ("x-emulator-fault", "slow-headers"),
        ("x-emulator-slow-headers-ms", "400"),
    ];
    let r = emu.chat(&h, chat_body("hi", true, None)).await;
    assert_eq!(r.status, 200);
    assert!(
        r.first_byte.expect("bytes") >= ms(400),
        "{:?}",
        r.first_byte
    );
    assert!(r.done());
    let t = emu.truth_of(&r.id()).await;
    assert_eq!(t.fault.as_deref(), Some("slow-headers"));
}

#[tokio::test]
async fn cold_fault_delays_the_first_token() {
    let mut emu = start_with(THREE, 1).await;
    // This profile has no cold start of its own: only the forced one applies.
    let h = [
        ("x-emulator-fault", "cold"),
        ("x-emulator-cold-start-ms", "300"),
    ];
    let r = emu.chat(&h, chat_body("hi", true, None)).await;
    // alpha's TTFT is 30 ms.
    assert!(r.ttft().expect("tokens") >= ms(330), "{:?}", r.ttft());
    let t = emu.truth_of(&r.id()).await;
    assert_eq!(t.cold_start_ms, 300.0);
    assert_eq!(t.fault.as_deref(), Some("cold"));
}

#[tokio::test]
async fn profile_fault_rates_apply_per_provider() {
    let toml = r#"
tokens_min = 6
tokens_max = 6
[faults]
after_tokens = 2
[[provider]]
name = "flaky"
ttft_median_ms = 10
tokens_per_s = 500
faults = { drop_rate = 1.0 }
[[provider]]
name = "solid"
ttft_median_ms = 10
tokens_per_s = 500
"#;
    let mut emu = start_with(toml, 3).await;
    for _ in 0..3 {
        let r = emu.chat(&[], chat_body("hi", true, None)).await;
        assert_eq!(r.header("x-provider"), Some("flaky"));
        assert!(!r.complete);
        assert_eq!(r.content_times().len(), 2, "global after_tokens applies");
        let t = emu.truth_of(&r.id()).await;
        assert_eq!(t.fault.as_deref(), Some("drop"));
    }
    let r = emu
        .chat(&[], chat_body("hi", true, Some(json!({"only": ["solid"]}))))
        .await;
    assert!(r.complete && r.done());
}

#[tokio::test]
async fn non_streaming_replies_show_the_faults_too() {
    let emu = start_with(THREE, 1).await;
    let r = emu
        .chat(
            &[("x-emulator-fault", "stream-error")],
            chat_body("hi", false, None),
        )
        .await;
    assert_eq!(r.status, 502);
    assert!(r.json()["error"]["message"].is_string());

    let r = emu
        .chat(
            &[("x-emulator-fault", "drop")],
            chat_body("hi", false, None),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(!r.complete);

    let h = [
        ("x-emulator-fault", "stall"),
        ("x-emulator-stall-ms", "300"),
    ];
    let r = emu.chat(&h, chat_body("hi", false, None)).await;
    assert_eq!(r.status, 200);
    assert!(r.elapsed >= ms(300));
    assert_eq!(r.json()["provider"], "alpha");
}

#[tokio::test]
async fn bad_fault_headers_are_refused() {
    let emu = start_with(THREE, 1).await;
    for h in [
        ("x-emulator-fault", "meteor"),
        ("x-emulator-stall-ms", "soon"),
        ("x-emulator-fault-after-tokens", "-1"),
    ] {
        let r = emu.chat(&[h], chat_body("hi", true, None)).await;
        assert_eq!(r.status, 400, "{h:?}");
        assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    }
}

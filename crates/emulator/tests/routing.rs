//! Routing, fallbacks on injected errors, the `provider` field, and cost,
//! over real sockets on loopback.

mod common;

use std::time::Duration;

use common::{THREE, chat_body, start, start_with};
use firsttoken_emulator::{Profile, Settings};
use serde_json::json;

const TEN_WORDS: &str = "one two three four five six seven eight nine ten";

#[tokio::test]
async fn default_order_serves_and_every_chunk_names_the_provider() {
    let mut emu = start_with(THREE, 1).await;
    let r = emu.chat(&[], chat_body("hi", true, None)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-provider"), Some("alpha"));
    assert!(r.header("x-request-id").is_some());
    assert!(r.complete && r.done(), "{r:?}");
    let chunks = r.chunks();
    // Role chunk, 5 tokens, final chunk.
    assert_eq!(chunks.len(), 7);
    for c in &chunks {
        assert_eq!(c["provider"], "alpha", "{c}");
    }
    let t = emu.truth_of(&r.id()).await;
    assert_eq!(t.provider.as_deref(), Some("alpha"));
    assert_eq!(t.attempts.len(), 1);
    assert_eq!(t.fault, None);
    assert!(t.completed);
}

#[tokio::test]
async fn order_ignore_and_only_choose_the_provider() {
    let emu = start_with(THREE, 1).await;
    let cases = [
        (json!({"order": ["gamma", "beta"]}), "gamma"),
        (json!({"order": ["nope", "beta"]}), "beta"),
        (json!({"ignore": ["alpha"]}), "beta"),
        (json!({"only": ["gamma"]}), "gamma"),
        (json!({"order": ["alpha"], "ignore": ["alpha"]}), "beta"),
        (json!({"order": ["beta"], "allow_fallbacks": false}), "beta"),
    ];
    for (routing, want) in cases {
        let r = emu
            .chat(&[], chat_body("hi", true, Some(routing.clone())))
            .await;
        assert_eq!(r.status, 200, "{routing}");
        assert_eq!(r.header("x-provider"), Some(want), "{routing}");
        assert!(
            r.chunks().iter().all(|c| c["provider"] == want),
            "{routing}"
        );
    }
}

#[tokio::test]
async fn no_provider_left_is_a_503_saying_why() {
    let mut emu = start_with(THREE, 1).await;
    for routing in [
        json!({"ignore": ["alpha", "beta", "gamma"]}),
        json!({"order": ["nope"], "allow_fallbacks": false}),
        json!({"only": ["nope"]}),
    ] {
        let r = emu.chat(&[], chat_body("hi", true, Some(routing))).await;
        assert_eq!(r.status, 503);
        let e = r.json();
        let msg = e["error"]["message"].as_str().expect("message");
        assert!(
            msg.contains("no provider meets the routing requirements"),
            "{msg}"
        );
        assert_eq!(e["error"]["code"], 503);
        let t = emu.truth_of(&r.id()).await;
        assert_eq!((t.status, t.provider), (503, None));
    }
    let r = emu
        .chat(&[], chat_body("hi", true, Some(json!({"order": "alpha"}))))
        .await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn each_injected_error_falls_back_when_allowed() {
    let mut emu = start_with(THREE, 1).await;
    for code in ["429", "500", "503"] {
        let h = [("x-emulator-fault", code)];
        // Allowed (the default): the next provider serves.
        let r = emu.chat(&h, chat_body("hi", true, None)).await;
        assert_eq!(r.status, 200, "{code}");
        assert_eq!(r.header("x-provider"), Some("beta"), "{code}");
        assert!(r.done(), "{code}");
        let t = emu.truth_of(&r.id()).await;
        let tried: Vec<(&str, Option<&str>)> = t
            .attempts
            .iter()
            .map(|a| (a.provider.as_str(), a.fault.as_deref()))
            .collect();
        assert_eq!(tried, [("alpha", Some(code)), ("beta", None)]);
        assert_eq!(t.provider.as_deref(), Some("beta"));

        // Not allowed: the error itself.
        let r = emu
            .chat(
                &h,
                chat_body("hi", true, Some(json!({"allow_fallbacks": false}))),
            )
            .await;
        assert_eq!(r.status.to_string(), code);
        let e = r.json();
        assert_eq!(e["error"]["code"].to_string(), code);
        assert!(e["error"]["message"].is_string() && e["error"]["type"].is_string());
        assert_eq!(r.header("retry-after").is_some(), code == "429", "{code}");
        let t = emu.truth_of(&r.id()).await;
        assert_eq!(t.status.to_string(), code);
        assert_eq!(t.fault.as_deref(), Some(code));
        assert_eq!(t.provider, None);
    }
}

#[tokio::test]
async fn fallbacks_stay_inside_order_when_disallowed() {
    let emu = start_with(THREE, 1).await;
    let h = [("x-emulator-fault", "503")];
    let routing = json!({"order": ["gamma", "alpha"], "allow_fallbacks": false});
    let r = emu.chat(&h, chat_body("hi", true, Some(routing))).await;
    assert_eq!(r.header("x-provider"), Some("alpha"));
    // The fault aimed at a later provider hits only that one.
    let h = [
        ("x-emulator-fault", "500"),
        ("x-emulator-fault-provider", "beta"),
    ];
    let routing = json!({"order": ["beta"], "allow_fallbacks": false});
    let r = emu.chat(&h, chat_body("hi", true, Some(routing))).await;
    assert_eq!(r.status, 500);
    let r = emu.chat(&h, chat_body("hi", true, None)).await;
    assert_eq!(r.header("x-provider"), Some("alpha"));
}

#[tokio::test]
async fn retry_after_is_configurable() {
    let emu = start_with(THREE, 1).await;
    let h = [
        ("x-emulator-fault", "429"),
        ("x-emulator-retry-after-s", "7"),
    ];
    let r = emu
        .chat(
            &h,
            chat_body("hi", true, Some(json!({"allow_fallbacks": false}))),
        )
        .await;
    assert_eq!((r.status, r.header("retry-after")), (429, Some("7")));
}

#[tokio::test]
async fn profile_error_rates_fall_back_and_exhaust() {
    // alpha always refuses with 429, beta always with 500: gamma serves.
    let toml = r#"
tokens_min = 3
tokens_max = 3
[[provider]]
name = "alpha"
ttft_median_ms = 10
tokens_per_s = 500
faults = { error_rate = 1.0, error_status = 429, retry_after_s = 3 }
[[provider]]
name = "beta"
ttft_median_ms = 10
tokens_per_s = 500
faults = { error_rate = 1.0, error_status = 500 }
[[provider]]
name = "gamma"
ttft_median_ms = 10
tokens_per_s = 500
"#;
    let mut emu = start_with(toml, 9).await;
    let r = emu.chat(&[], chat_body("hi", true, None)).await;
    assert_eq!(r.header("x-provider"), Some("gamma"));
    let t = emu.truth_of(&r.id()).await;
    let faults: Vec<Option<&str>> = t.attempts.iter().map(|a| a.fault.as_deref()).collect();
    assert_eq!(faults, [Some("429"), Some("500"), None]);

    // Only the refusing ones: the last error comes back.
    let routing = json!({"order": ["beta", "alpha"], "allow_fallbacks": false});
    let r = emu.chat(&[], chat_body("hi", true, Some(routing))).await;
    assert_eq!((r.status, r.header("retry-after")), (429, Some("3")));
    let msg = r.json()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(msg.contains("beta") && msg.contains("alpha"), "{msg}");
}

#[tokio::test]
async fn usage_carries_cost_by_hand() {
    let emu = start_with(THREE, 1).await;
    // alpha: 10 prompt tokens · $3/M + 5 completion tokens · $15/M
    //      = 0.000030 + 0.000075 = 0.000105
    let r = emu.chat(&[], chat_body(TEN_WORDS, true, None)).await;
    let u = r.usage();
    assert_eq!(
        (
            &u["prompt_tokens"],
            &u["completion_tokens"],
            &u["total_tokens"]
        ),
        (&json!(10), &json!(5), &json!(15))
    );
    let cost = u["cost"].as_f64().expect("cost");
    assert!((cost - 0.000105).abs() < 1e-12, "{cost}");

    // beta, non-streaming: 10 · 0.5/M + 5 · 2/M = 0.000005 + 0.00001 = 0.000015
    let r = emu
        .chat(
            &[],
            chat_body(TEN_WORDS, false, Some(json!({"only": ["beta"]}))),
        )
        .await;
    let v = r.json();
    assert_eq!(v["provider"], "beta");
    let cost = v["usage"]["cost"].as_f64().expect("cost");
    assert!((cost - 0.000015).abs() < 1e-12, "{cost}");

    // gamma with max_tokens 2: 10 · 0 + 2 · 1/M = 0.000002
    let mut body = chat_body(TEN_WORDS, true, Some(json!({"only": ["gamma"]})));
    body["max_tokens"] = json!(2);
    let u = emu.chat(&[], body).await.usage();
    assert_eq!(u["completion_tokens"], 2);
    assert!((u["cost"].as_f64().expect("cost") - 0.000002).abs() < 1e-12);
}

#[tokio::test]
async fn without_a_profile_timing_is_fixed_and_free() {
    let mut emu = start(Settings {
        ttft: Duration::from_millis(120),
        itl: Duration::from_millis(10),
        tokens: 4,
        ..Settings::default()
    })
    .await;
    let r = emu.chat(&[], chat_body("a b", true, None)).await;
    assert_eq!(r.header("x-provider"), Some("emulator"));
    let chunks = r.chunks();
    assert_eq!(chunks.len(), 6);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(r.ttft().expect("tokens") >= Duration::from_millis(120));
    assert_eq!(r.usage()["cost"], 0.0);
    let t = emu.truth_of(&r.id()).await;
    assert_eq!(t.target_ttft_ms, 120.0);
    assert_eq!(t.target_itl_ms, 10.0);
    assert_eq!(t.tokens_planned, 4);

    // The per-request headers still fix the timing.
    let h = [
        ("x-emulator-ttft-ms", "30"),
        ("x-emulator-tokens", "2"),
        ("x-emulator-itl-ms", "5"),
    ];
    let r = emu.chat(&h, chat_body("a", true, None)).await;
    assert_eq!(r.content_times().len(), 2);
    let t = emu.truth_of(&r.id()).await;
    assert_eq!((t.target_ttft_ms, t.target_itl_ms), (30.0, 5.0));
}

#[tokio::test]
async fn the_default_profile_serves_its_three_providers() {
    let emu = start(Settings {
        profile: Some(Profile::builtin()),
        ..Settings::default()
    })
    .await;
    let h = [("x-emulator-tokens", "2")];
    for name in ["quickstart", "steady", "bulk"] {
        let r = emu
            .chat(&h, chat_body("hi", true, Some(json!({"only": [name]}))))
            .await;
        assert_eq!(r.header("x-provider"), Some(name));
        assert!(r.done());
        assert!(r.usage()["cost"].as_f64().expect("cost") > 0.0);
    }
}

/// With a cost per input token, the planned TTFT grows with the request's
/// input (its words, as `prompt_tokens` reports them); a TTFT fixed by the
/// request's header stays fixed.
#[tokio::test]
async fn ttft_grows_with_the_input_when_asked() {
    let mut emu = start(Settings {
        ttft: Duration::from_millis(40),
        itl: Duration::from_millis(1),
        tokens: 2,
        ttft_per_input_token: Duration::from_micros(2500),
        ..Settings::default()
    })
    .await;
    let short = emu.chat(&[], chat_body("a b", true, None)).await;
    let long_prompt = vec!["word"; 40].join(" ");
    let long = emu.chat(&[], chat_body(&long_prompt, true, None)).await;
    assert_eq!(short.usage()["prompt_tokens"], 2);
    assert_eq!(long.usage()["prompt_tokens"], 40);
    assert_eq!(emu.truth_of(&short.id()).await.target_ttft_ms, 45.0);
    assert_eq!(emu.truth_of(&long.id()).await.target_ttft_ms, 140.0);
    assert!(long.ttft().expect("tokens") >= Duration::from_millis(140));
    let fixed = emu
        .chat(
            &[("x-emulator-ttft-ms", "30")],
            chat_body(&long_prompt, true, None),
        )
        .await;
    assert_eq!(emu.truth_of(&fixed.id()).await.target_ttft_ms, 30.0);
}

//! Each known-bad mode has an effect a client can see over HTTP, and the
//! default build does not.

mod common;

use std::time::Duration;

use common::{App, Emulator, Streamed, ms};
use reqwest::StatusCode;
use serde_json::json;

async fn chat(app: &App, token: &str) -> Streamed {
    let r = app
        .ask("/api/chat", token, json!({"message": "hello there"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r
}

/// Two chats, the second sent once the first's headers arrived: the app
/// is serving the first (with `--serial` it holds the one permit, taken
/// before the headers), its stream of 150 ms and more still to come.
async fn overlapping(app: &App, token: &str) -> (Streamed, Streamed) {
    let (opened, open) = tokio::sync::oneshot::channel();
    let first = common::read_stream_telling(
        app.http
            .post(app.url("/api/chat"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(json!({"message": "hello there"}).to_string()),
        Some(opened),
    );
    let (a, b) = tokio::join!(first, async {
        open.await.expect("the first chat's headers");
        chat(app, token).await
    });
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    (a, b)
}

#[tokio::test]
async fn serial_makes_the_second_request_wait_for_the_first() {
    // 150 ms to the first token, then four more 40 ms apart: the first
    // chat's permit is released at least 160 ms after its first token left.
    let emu = Emulator::start(150, 40, 5).await;

    let normal = App::sqlite(&emu.base_url(), |_| {}).await;
    let (_, token) = normal.user().await;
    let (a, b) = overlapping(&normal, &token).await;
    let a_done = a.done().expect("[DONE]").at;
    assert!(
        b.headers_at < a_done,
        "by default the second request starts at once"
    );
    normal.stop().await;

    let serial = App::sqlite(&emu.base_url(), |o| o.serial = true).await;
    let (_, token) = serial.user().await;
    let (a, b) = overlapping(&serial, &token).await;
    // Compared with the first chat's first token, not its last: the permit
    // may be released while the last bytes are still being flushed, so the
    // order in which the client sees the two sockets at the end is a race.
    let a_first = a.first_content().expect("a first token").at;
    assert!(
        b.headers_at > a_first,
        "with --serial the second waits for the first's stream"
    );
    // It waited at least for the rest of the first stream (4 gaps of 40 ms).
    assert!(
        ms(b.headers_at - b.sent) >= 150.0,
        "{}",
        ms(b.headers_at - b.sent)
    );
    serial.stop().await;
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::test]
async fn db_roundtrips_grow_the_db_phase() {
    let emu = Emulator::start(20, 1, 2).await;
    let mut medians = Vec::new();
    for n in [0, 400] {
        let app = App::sqlite(&emu.base_url(), |o| o.db_roundtrips = n).await;
        let (_, token) = app.user().await;
        let mut db = Vec::new();
        for _ in 0..3 {
            db.push(chat(&app, &token).await.server_timing_header()["db"]);
        }
        medians.push(median(db));
        app.stop().await;
    }
    assert!(
        medians[1] > medians[0] && medians[1] > 1.0,
        "db phase (ms) with 0 and 400 extra round trips: {medians:?}"
    );
}

#[tokio::test]
async fn buffered_sends_the_whole_answer_at_once() {
    let (ttft, itl, tokens) = (60, 15, 6);
    let emu = Emulator::start(ttft, itl, tokens).await;
    let app = App::sqlite(&emu.base_url(), |o| o.buffered = true).await;
    let (_, token) = app.user().await;
    let r = chat(&app, &token).await;
    // Nothing, not even headers, before the upstream has finished.
    let upstream_total = (ttft + itl * (u64::from(tokens) - 1)) as f64;
    assert!(
        ms(r.headers_at - r.sent) >= upstream_total * 0.9,
        "{}",
        ms(r.headers_at - r.sent)
    );
    // One chunk carries all the content.
    let with_content: Vec<_> = r
        .chunks_json()
        .into_iter()
        .filter(|(v, _)| {
            v.pointer("/choices/0/delta/content")
                .and_then(|c| c.as_str())
                .is_some_and(|c| !c.is_empty())
        })
        .collect();
    assert_eq!(with_content.len(), 1, "{}", r.body);
    assert_eq!(r.content().split_whitespace().count(), tokens as usize);
    assert!(r.done().is_some());
    assert!(r.server_timing_event().contains_key("upstream_ttft"));
    app.stop().await;

    // By default the tokens arrive spread out.
    let app = App::sqlite(&emu.base_url(), |_| {}).await;
    let (_, token) = app.user().await;
    let r = chat(&app, &token).await;
    let first = r.first_content().unwrap().at;
    let done = r.done().unwrap().at;
    assert!(ms(done - first) >= (itl * (u64::from(tokens) - 1)) as f64 * 0.8);
    assert!(ms(r.headers_at - r.sent) < ttft as f64);
    app.stop().await;
}

#[tokio::test]
async fn cold_start_delays_the_first_request_after_an_idle_gap() {
    let emu = Emulator::start(20, 1, 2).await;
    let app = App::sqlite(&emu.base_url(), |o| {
        o.cold_start = Some(Duration::from_millis(300));
        o.cold_start_idle = Duration::from_millis(600);
    })
    .await;
    // Signing up is the first request: it pays the cold start.
    let t = std::time::Instant::now();
    let (_, token) = app.user().await;
    assert!(t.elapsed() >= Duration::from_millis(300));
    let warm = chat(&app, &token).await;
    assert!(!warm.server_timing_header().contains_key("cold_start"));
    tokio::time::sleep(Duration::from_millis(700)).await;
    let cold = chat(&app, &token).await;
    let h = cold.server_timing_header();
    assert!(h.get("cold_start").is_some_and(|d| *d >= 300.0), "{h:?}");
    assert!(ms(cold.headers_at - cold.sent) >= 300.0);
    assert!(ms(cold.headers_at - cold.sent) > ms(warm.headers_at - warm.sent));
    app.stop().await;
}

/// The largest gap between content chunks of one long stream while eight
/// other requests each make 3000 database round trips.
async fn stall_while_others_query(blocking: bool) -> f64 {
    let emu = Emulator::start(20, 10, 60).await;
    let app = App::sqlite(&emu.base_url(), |o| {
        o.blocking_db = blocking;
        o.db_roundtrips = 3000;
    })
    .await;
    let (_, token) = app.user().await;
    let long = async {
        let r = app
            .ask("/api/chat", &token, json!({"message": "long one"}))
            .await;
        let times: Vec<_> = r
            .chunks_json()
            .into_iter()
            .filter(|(v, _)| v.pointer("/choices/0/delta/content").is_some())
            .map(|(_, e)| e.at)
            .collect();
        times
            .windows(2)
            .map(|w| ms(w[1] - w[0]))
            .fold(0.0, f64::max)
    };
    let others = async {
        // Modelled arrivals: 100 ms into the long stream's ~620 ms (its
        // first token is due at 20 ms), so their database work falls
        // while it streams, which is what the gaps compare.
        tokio::time::sleep(Duration::from_millis(100)).await;
        futures_util::future::join_all((0..8).map(|_| chat(&app, &token))).await
    };
    let (gap, _) = tokio::join!(long, others);
    app.stop().await;
    gap
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_db_stalls_other_streams() {
    let normal = stall_while_others_query(false).await;
    let blocking = stall_while_others_query(true).await;
    eprintln!("largest inter-chunk gap: default {normal:.1} ms, --blocking-db {blocking:.1} ms");
    assert!(
        blocking > normal,
        "default {normal:.1} ms, blocking {blocking:.1} ms"
    );
}

#[tokio::test]
async fn blocking_db_still_answers_under_concurrency() {
    let emu = Emulator::start(50, 2, 4).await;
    let app = App::sqlite(&emu.base_url(), |o| o.blocking_db = true).await;
    let (_, token) = app.user().await;
    let runs = futures_util::future::join_all((0..16).map(|_| chat(&app, &token))).await;
    for r in &runs {
        assert!(r.done().is_some(), "{}", r.body);
        assert!(r.server_timing_header().contains_key("db"));
    }
    app.stop().await;
}

/// `X-Route` of each document question sent to the router.
async fn routes(rule: firsttoken_refapp::RouterRule) -> Vec<String> {
    let emu = Emulator::start(5, 1, 2).await;
    let app = App::sqlite(&emu.base_url(), |o| o.router = rule).await;
    let (_, token) = app.user().await;
    let mut out = Vec::new();
    for q in firsttoken_refapp::route::DOC_QUESTIONS {
        let r = app.ask("/api/message", &token, json!({"message": q})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        out.push(r.header("x-route").unwrap_or("").to_string());
    }
    app.stop().await;
    out
}

#[tokio::test]
async fn keyword_router_sends_most_document_questions_to_chat_and_corpus_router_none() {
    use firsttoken_refapp::RouterRule;
    let keywords = routes(RouterRule::Keywords).await;
    let to_chat = keywords.iter().filter(|r| *r == "chat").count();
    eprintln!(
        "keyword router: {to_chat} of {} document questions reached chat",
        keywords.len()
    );
    assert!(to_chat * 3 >= keywords.len() * 2, "{keywords:?}");
    let corpus = routes(RouterRule::Corpus).await;
    assert!(corpus.iter().all(|r| r == "docs"), "{corpus:?}");
}

//! The modelled remote database: every call pays `db_rtt`, a new connection
//! per call pays its handshake, the known-bad blocking access holds the
//! app's worker for the whole wait while pooled async access lets requests
//! overlap, and `Server-Timing` counts the round trips. Real HTTP on
//! loopback against the app and the emulator.

mod common;

use std::time::{Duration, Instant};

use common::{App, Emulator, Streamed, ms};
use firsttoken_refapp::{DbFaultScope, Options};
use reqwest::StatusCode;
use serde_json::json;

/// The modelled round-trip time.
const RTT_MS: u64 = 40;

/// `desc` of a `Server-Timing` entry (`db;dur=…;desc="4 rt"` → `4 rt`).
fn desc(r: &Streamed, name: &str) -> Option<String> {
    let h = r.header("server-timing")?;
    h.split(',').find_map(|e| {
        let mut parts = e.trim().split(';');
        (parts.next()? == name).then_some(())?;
        parts.find_map(|p| Some(p.strip_prefix("desc=")?.trim_matches('"').to_string()))
    })
}

async fn ask(app: &App, token: &str, path: &str) -> Streamed {
    let r = app
        .ask(path, token, json!({"message": "What is the grace period?"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.done().is_some(), "{}", r.body);
    r
}

fn ttft(r: &Streamed) -> f64 {
    ms(r.first_content().expect("content").at - r.sent)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The "before" database: a blocking driver with three extra queries on the
/// chat path (four round trips in its db phase), the document path pooled
/// and async, on one worker thread.
fn before(o: &mut Options) {
    o.db_rtt = Duration::from_millis(RTT_MS);
    o.blocking_db = true;
    o.db_roundtrips = 3;
    o.db_fault_scope = DbFaultScope::ChatPath;
    o.worker_threads = Some(1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_chat_pays_four_round_trips_and_docs_one() {
    let emu = Emulator::start(30, 2, 4).await;
    let app = App::sqlite(&emu.base_url(), before).await;
    let (_, token) = app.user().await;
    let (mut chat_db, mut docs_db, mut chat_ttft, mut docs_ttft) = (vec![], vec![], vec![], vec![]);
    for _ in 0..3 {
        let c = ask(&app, &token, "/api/chat").await;
        assert_eq!(desc(&c, "db").as_deref(), Some("4 rt"), "{:?}", c.headers);
        assert_eq!(desc(&c, "auth").as_deref(), Some("1 rt"));
        chat_db.push(c.server_timing_header()["db"]);
        chat_ttft.push(ttft(&c));
        let d = ask(&app, &token, "/api/docs/ask").await;
        assert_eq!(desc(&d, "db").as_deref(), Some("1 rt"), "{:?}", d.headers);
        assert!(d.server_timing_header().contains_key("retrieve"));
        docs_db.push(d.server_timing_header()["db"]);
        docs_ttft.push(ttft(&d));
    }
    let (cdb, ddb) = (median(chat_db), median(docs_db));
    let (ct, dt) = (median(chat_ttft), median(docs_ttft));
    eprintln!(
        "rtt {RTT_MS} ms: chat db {cdb:.1} ms (4 rt), docs db {ddb:.1} ms (1 rt); \
         TTFT chat {ct:.1} ms, docs {dt:.1} ms, gap {:.1} ms",
        ct - dt
    );
    let four = 4.0 * RTT_MS as f64;
    assert!(
        (four * 0.85..=four * 1.15).contains(&cdb),
        "chat db {cdb:.1} ms, expected {four} ms ± 15 %"
    );
    let one = RTT_MS as f64;
    assert!(
        (one * 0.85..=one * 1.3).contains(&ddb),
        "docs db {ddb:.1} ms"
    );
    // Chat makes three round trips more before its first token.
    assert!(
        ct - dt >= 3.0 * one * 0.85,
        "TTFT chat {ct:.1} ms, docs {dt:.1} ms"
    );
    app.stop().await;
}

/// Headers latency of one chat alone, three times (fastest and slowest:
/// a busy machine only ever adds time, so each check below compares with
/// the side that makes it harder to pass), then the time until both of two
/// concurrent chats have their headers.
async fn alone_and_two(app: &App, token: &str) -> ((f64, f64), f64) {
    let (mut fastest, mut slowest) = (f64::INFINITY, 0.0f64);
    for _ in 0..3 {
        let r = ask(app, token, "/api/chat").await;
        let t = ms(r.headers_at - r.sent);
        fastest = fastest.min(t);
        slowest = slowest.max(t);
    }
    let t = Instant::now();
    let (a, b) = tokio::join!(ask(app, token, "/api/chat"), ask(app, token, "/api/chat"));
    let both = ms(a.headers_at.max(b.headers_at) - t);
    ((fastest, slowest), both)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_access_holds_the_worker_and_pooled_access_overlaps() {
    let emu = Emulator::start(30, 2, 4).await;
    let db = 4.0 * RTT_MS as f64;

    let app = App::sqlite(&emu.base_url(), before).await;
    let (_, token) = app.user().await;
    let ((alone, _), both) = alone_and_two(&app, &token).await;
    eprintln!("blocking, 1 worker: one chat {alone:.1} ms to headers, two at once {both:.1} ms");
    assert!(
        both - alone >= db * 0.85,
        "the second chat's db wait should follow the first's: {alone:.1} ms vs {both:.1} ms"
    );
    app.stop().await;

    let app = App::sqlite(&emu.base_url(), |o| {
        before(o);
        o.blocking_db = false;
    })
    .await;
    let (_, token) = app.user().await;
    let ((_, alone), both) = alone_and_two(&app, &token).await;
    eprintln!("pooled async, 1 worker: one chat {alone:.1} ms, two at once {both:.1} ms");
    assert!(
        both - alone < db * 0.5,
        "pooled waits should overlap: {alone:.1} ms vs {both:.1} ms"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_per_call_pays_its_handshake() {
    let emu = Emulator::start(20, 1, 2).await;
    let mut db = Vec::new();
    for per_call in [false, true] {
        let app = App::sqlite(&emu.base_url(), |o| {
            o.db_rtt = Duration::from_millis(RTT_MS);
            o.db_connect_per_call = per_call;
            o.db_fault_scope = DbFaultScope::ChatPath;
        })
        .await;
        let (_, token) = app.user().await;
        let c = ask(&app, &token, "/api/chat").await;
        let want = if per_call { "5 rt" } else { "1 rt" };
        assert_eq!(desc(&c, "db").as_deref(), Some(want), "{:?}", c.headers);
        let st = c.server_timing_event();
        assert!(st.contains_key("store"), "{st:?}");
        db.push(c.server_timing_header()["db"]);
        // The document path keeps its pooled connections.
        let d = ask(&app, &token, "/api/docs/ask").await;
        assert_eq!(desc(&d, "db").as_deref(), Some("1 rt"));
        app.stop().await;
    }
    eprintln!(
        "rtt {RTT_MS} ms: db pooled {:.1} ms, a new connection per call {:.1} ms",
        db[0], db[1]
    );
    let handshake = 4.0 * RTT_MS as f64;
    assert!(
        db[1] - db[0] >= handshake * 0.85 && db[1] - db[0] <= handshake * 1.3,
        "{db:?}"
    );
}

#[tokio::test]
async fn no_rtt_is_a_local_database() {
    let emu = Emulator::start(20, 1, 2).await;
    let app = App::sqlite(&emu.base_url(), |o| o.db_roundtrips = 3).await;
    let (_, token) = app.user().await;
    let c = ask(&app, &token, "/api/chat").await;
    assert_eq!(desc(&c, "db").as_deref(), Some("4 rt"));
    assert!(c.server_timing_header()["db"] < 30.0, "{:?}", c.headers);
    app.stop().await;
}

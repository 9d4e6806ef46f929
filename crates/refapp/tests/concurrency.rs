//! The default build under load: 64 concurrent streams over the emulator.
//! Alone in its test binary so other tests do not compete for the CPU.

mod common;

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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The default build at 64 concurrent streams (connections warm, as in a
/// steady load): median time to first content stays close to a lone
/// stream's, and a lone stream's is close to the upstream's own. The bounds
/// are generous for debug builds on a shared 2-core machine, with client,
/// app and emulator in one process; the release figures are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_does_not_delay_first_tokens_by_default() {
    let ttft = 200;
    let emu = Emulator::start(ttft, 10, 8).await;
    let app = App::sqlite(&emu.base_url(), |_| {}).await;
    let (_, token) = app.user().await;
    let ttft_of = |r: &Streamed| ms(r.first_content().unwrap().at - r.sent);

    let mut direct = Vec::new();
    for _ in 0..5 {
        let req = app
            .http
            .post(format!("{}/chat/completions", emu.base_url()))
            .body(json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hello there"}]}).to_string());
        direct.push(ttft_of(&common::read_stream(req).await));
    }
    let direct = median(direct);
    let mut lone = Vec::new();
    for _ in 0..5 {
        lone.push(ttft_of(&chat(&app, &token).await));
    }
    let lone = median(lone);
    // Warm the client's and the app's connection pools, then measure.
    futures_util::future::join_all((0..64).map(|_| chat(&app, &token))).await;
    let runs = futures_util::future::join_all((0..64).map(|_| chat(&app, &token))).await;
    let many = median(runs.iter().map(ttft_of).collect());
    let phase = |k: &str| median(runs.iter().map(|r| r.server_timing_header()[k]).collect());
    eprintln!(
        "median TTFT: upstream direct {direct:.1} ms, via app 1 stream {lone:.1} ms, \
         64 streams {many:.1} ms (auth {:.2}, db {:.2}, upstream_connect {:.2})",
        phase("auth"),
        phase("db"),
        phase("upstream_connect")
    );
    assert!(direct >= ttft as f64 * 0.95, "{direct}");
    assert!(lone - direct <= 25.0, "added {:.1} ms", lone - direct);
    assert!(
        many <= lone * 1.35,
        "median TTFT: 1 stream {lone:.1} ms, 64 streams {many:.1} ms"
    );
    app.stop().await;
}

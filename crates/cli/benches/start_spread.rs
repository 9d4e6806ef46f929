//! Start spread of four agents (issue 14: "the c=8 burst, 2 per agent,
//! starts within 5 ms across agents").
//!
//! The run of `tests/agents.rs`, repeated: four `firsttoken run` agents on
//! loopback, `--segment i/4`, one PostgreSQL store, a shared `--start-at`
//! 2 s ahead, against the reference app over the emulator (both their own
//! processes). Per run it reports
//! - the release spread: the largest minus the smallest `began_at_ms`
//!   (each agent's release of its first measured request, on the store's
//!   clock);
//! - the lateness: the last release minus the common start;
//! - the spread of the burst's own request starts (`started_at`, whole ms),
//!   which adds each agent's time to get its 2 requests going;
//!
//! and then their median, p90 and maximum, and how many runs met 5 ms.
//!
//! Run: `DATABASE_URL=postgres://… cargo bench -p firsttoken --bench
//! start_spread` (10 runs; `FT_BENCH_RUNS=N` to change). It works in a
//! schema of its own, dropped at the end. The figures belong to the
//! machine and its load: the test keeps the ordering (no release before
//! the start) and a generous bound, this bench the precise figure.

#[path = "../tests/common/mod.rs"]
mod common;

use common::agents::{Schema, agent_on, finish, start_in, with_client, world, write_config};
use firsttoken_record::UtcTime;

fn main() {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("start_spread needs DATABASE_URL (a PostgreSQL the agents share)");
        std::process::exit(2);
    };
    let runs: usize = std::env::var("FT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let schema = Schema::new(&url, "bench");
    let store = schema.url.as_str();
    let w = world();
    let cfg = write_config(&w, &w.app.base, 24);
    println!(
        "| run | release spread (ms) | last release − start (ms) | burst request starts spread (ms) |"
    );
    println!("|---:|---:|---:|---:|");
    let (mut spreads, mut lates, mut stamps) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        let run = format!("spread-{i}");
        let start = start_in(2.0);
        let at = start.parse::<UtcTime>().expect("a start").unix_ms() as f64;
        let agents: Vec<_> = (0..4)
            .map(|seg| agent_on(None, &cfg, store, &run, seg, Some(&start), &w.app_db))
            .collect();
        for (seg, a) in agents.into_iter().enumerate() {
            let (code, out) = finish(a);
            assert_eq!(code, Some(0), "agent {seg}:\n{out}");
        }
        let (began, starts): (Vec<f64>, Vec<f64>) = with_client(store, async |c| {
            let began = c
                .query(
                    "SELECT began_at_ms FROM run_sessions WHERE run_id = $1",
                    &[&run],
                )
                .await
                .expect("releases")
                .iter()
                .map(|r| r.get::<_, f64>(0))
                .collect();
            let starts = c
                .query(
                    "SELECT p.started_at FROM samples p
                     JOIN run_sessions r ON r.session_id = p.session_id
                     WHERE r.run_id = $1 AND p.phase = 'concurrency' AND NOT p.warmup",
                    &[&run],
                )
                .await
                .expect("the burst")
                .iter()
                .map(|r| {
                    let t: String = r.get(0);
                    t.parse::<UtcTime>().expect("a stamp").unix_ms() as f64
                })
                .collect();
            (began, starts)
        });
        assert_eq!((began.len(), starts.len()), (4, 8), "run {run}");
        let spread = max(&began) - min(&began);
        let late = max(&began) - at;
        let stamp = max(&starts) - min(&starts);
        println!("| {i} | {spread:.2} | {late:.2} | {stamp:.0} |");
        spreads.push(spread);
        lates.push(late);
        stamps.push(stamp);
    }
    let met = spreads.iter().filter(|&&s| s <= 5.0).count();
    println!();
    println!("| over {runs} runs | median | p90 | max |");
    println!("|---|---:|---:|---:|");
    for (what, v) in [
        ("release spread (ms)", &spreads),
        ("last release − start (ms)", &lates),
        ("burst request starts spread (ms)", &stamps),
    ] {
        println!(
            "| {what} | {:.2} | {:.2} | {:.2} |",
            pct(v, 50.0),
            pct(v, 90.0),
            max(v)
        );
    }
    println!();
    println!("{met} of {runs} runs released the burst within 5 ms across agents");
}

fn pct(v: &[f64], p: f64) -> f64 {
    firsttoken_record::percentile(v, p).unwrap_or(f64::NAN)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::MIN, f64::max)
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::MAX, f64::min)
}

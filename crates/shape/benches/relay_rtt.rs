//! How precisely the relay adds its round trip: with a one-way delay `d`
//! and no jitter or rate, a request → echo round trip through the relay
//! should take 2·`d` more than the same round trip straight to the echo
//! server. The aim is ± 1 ms at the median of a sitting.
//!
//! A sitting is what `tests/relay.rs` measures once: 41 round trips of 64
//! bytes straight to a loopback echo server, then 41 through a relay in
//! front of it, on one connection each; its figure is the difference of
//! the two medians minus 2·`d`. The bench runs `FT_BENCH_SITTINGS`
//! sittings (default 30) for each delay (3 and 12 ms) on a tokio runtime
//! of 2 workers, as the test does, and prints per delay the median, p90
//! and largest error over the sittings and how many were within ± 1 ms.
//!
//! Run: `cargo bench -p firsttoken-shape --bench relay_rtt`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use firsttoken_shape::{Link, Relay, ShapeSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An echo server on loopback.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let (mut r, mut w) = s.into_split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
                let _ = w.shutdown().await;
            });
        }
    });
    addr
}

/// The median of `n` round trips of 64 bytes on one connection, in ms.
async fn median_round_trip(addr: SocketAddr, n: usize) -> f64 {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let (msg, mut back) = ([7u8; 64], [0u8; 64]);
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(&msg).await.expect("write");
        s.read_exact(&mut back).await.expect("read");
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    percentile(&mut v, 50.0)
}

/// Linear interpolation between closest ranks (numpy's default).
fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = p / 100.0 * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
}

fn main() {
    let sittings: usize = std::env::var("FT_BENCH_SITTINGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let echo = echo_server().await;
        println!("| delay (ms) | sittings | added − 2·delay, median (ms) | p90 of abs (ms) | largest abs (ms) | within ± 1 ms |");
        println!("|---:|---:|---:|---:|---:|---:|");
        for delay_ms in [3u32, 12] {
            let link = Link {
                delay: Duration::from_millis(u64::from(delay_ms)),
                jitter: Duration::ZERO,
                rate: None,
            };
            let relay = Relay::start(
                "127.0.0.1:0".parse().expect("an address"),
                echo.to_string(),
                ShapeSpec::new(link),
            )
            .await
            .expect("a relay");
            let want = 2.0 * f64::from(delay_ms);
            let mut errors = Vec::with_capacity(sittings);
            for _ in 0..sittings {
                let direct = median_round_trip(echo, 41).await;
                let shaped = median_round_trip(relay.local_addr(), 41).await;
                errors.push(shaped - direct - want);
            }
            relay.stop().await.expect("stop");
            let within = errors.iter().filter(|e| e.abs() <= 1.0).count();
            let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
            let largest = abs.iter().copied().fold(0.0, f64::max);
            println!(
                "| {delay_ms} | {sittings} | {:+.3} | {:.3} | {largest:.3} | {within} of {sittings} |",
                percentile(&mut errors, 50.0),
                percentile(&mut abs, 90.0),
            );
        }
    });
}

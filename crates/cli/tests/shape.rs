//! `firsttoken shape`: the relay as a subcommand in front of the emulator,
//! its profile list and its argument errors.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{EmulatorProcess, assert_code, firsttoken, text};

/// Time from sending `GET /health` to the first response byte, and the response.
fn get_health(base: &str) -> (Duration, String) {
    let addr = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).expect("nodelay");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let t = Instant::now();
    s.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .expect("write");
    let mut first = [0u8; 1];
    s.read_exact(&mut first).expect("a response");
    let ttfb = t.elapsed();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).expect("the response to its end");
    let mut all = first.to_vec();
    all.extend(rest);
    (ttfb, text(&all))
}

#[test]
fn the_relay_adds_its_round_trip_in_front_of_the_emulator() {
    let emu = EmulatorProcess::start();
    let shaped = EmulatorProcess::start_with(&[
        "shape",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &emu.base,
        "--profile",
        "fibre",
        "--delay-ms",
        "25",
    ]);
    let (direct, body) = get_health(&emu.base);
    assert!(
        body.starts_with("HTTP/1.1 200") && body.ends_with("ok"),
        "{body}"
    );
    let (through, body) = get_health(&shaped.base);
    assert!(
        body.starts_with("HTTP/1.1 200") && body.ends_with("ok"),
        "{body}"
    );
    eprintln!(
        "GET /health first byte: direct {direct:?}, through shape --delay-ms 25: {through:?}"
    );
    // One request/response round trip: at least 2 × 25 ms more, and not
    // wildly more (a generous bound on a loaded machine).
    assert!(through >= Duration::from_millis(50), "{through:?}");
    assert!(
        through < direct + Duration::from_millis(1000),
        "{through:?}"
    );
}

#[test]
fn profiles_are_listed_with_their_round_trips_and_rates() {
    let out = firsttoken(&["shape", "--list-profiles"], &[]);
    assert_code(&out, 0);
    let s = text(&out.stdout);
    for (name, rtt, rate) in [
        ("fibre", "10", "100mbit"),
        ("cable", "25", "50mbit"),
        ("4g", "60", "20mbit"),
        ("congested-mobile", "150", "2mbit"),
    ] {
        let line = s
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no line for {name} in\n{s}"));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1], rtt, "{line}");
        assert_eq!(cols[4], rate, "{line}");
    }
}

#[test]
fn bad_settings_are_usage_errors() {
    for (args, says) in [
        (vec!["--rate", "20mbps"], "invalid rate"),
        (vec!["--profile", "5g"], "unknown network profile"),
        (vec!["--delay-ms=-1"], "--delay-ms"),
        (vec!["--buffer-kib", "1"], "invalid buffer"),
    ] {
        let mut all = vec![
            "shape",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
        ];
        all.extend(args);
        let out = firsttoken(&all, &[]);
        assert_code(&out, 2);
        let err = text(&out.stderr);
        assert!(err.contains(says), "{all:?}: {err}");
    }
}

//! Forward proxies as users have them, against Debian's tinyproxy on
//! loopback: a `CONNECT` tunnel for https (timed as its own phase), the
//! absolute form for http, the environment as curl reads it, Basic
//! credentials that are never printed, and a proxy that is down.

mod common;

use std::path::Path;

use common::edge::{Nginx, Pki, Tinyproxy, have, openssl_pki};
use common::{EmulatorProcess, assert_code, text};
use serde_json::Value;

const BODY: &str = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
const PASSWORD: &str = "pr0xy-s3cret-pw";

fn tools(test: &str) -> bool {
    have("tinyproxy", test) & have("nginx", test) & have("openssl", test)
}

/// `firsttoken probe URL --json ARGS` with exactly these proxy variables
/// in its environment (every other proxy variable removed).
fn probe(url: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = assert_cmd::Command::cargo_bin("firsttoken").expect("the firsttoken binary");
    cmd.args(["probe", url, "--body", BODY, "--json"])
        .args(args)
        .timeout(common::COMMAND_TIMEOUT);
    for v in [
        "https_proxy",
        "HTTPS_PROXY",
        "http_proxy",
        "HTTP_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("firsttoken ran")
}

fn samples(out: &std::process::Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON sample per line"))
        .collect()
}

fn ms(s: &Value, key: &str) -> f64 {
    s[key].as_f64().unwrap_or_else(|| panic!("{key} in {s}"))
}

fn edge(dir: &Path) -> (EmulatorProcess, Nginx, Pki) {
    let pki = openssl_pki(dir);
    let emu = EmulatorProcess::start();
    let edge = Nginx::tls_edge(dir, &pki, &emu.base, "");
    (emu, edge, pki)
}

#[test]
fn https_through_a_connect_tunnel_is_timed_as_its_own_phase() {
    if !tools("https_through_a_connect_tunnel_is_timed_as_its_own_phase") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (_emu, edge, pki) = edge(dir.path());
    let proxy = Tinyproxy::start(dir.path(), None);
    // The leaf names 127.0.0.1 too, so the proxy need not resolve "localhost".
    let url = format!("https://127.0.0.1:{}/v1/chat/completions", edge.port);
    let ca = pki.ca.display().to_string();
    let out = probe(
        &url,
        &[
            "--fresh",
            "-n",
            "3",
            "--cacert",
            &ca,
            "--proxy",
            &proxy.url(None),
        ],
        &[],
    );
    assert_code(&out, 0);
    let got = samples(&out);
    assert_eq!(got.len(), 3);
    for s in &got {
        let (connect, tunnel, tls) = (ms(s, "connect_ms"), ms(s, "proxy_ms"), ms(s, "tls_ms"));
        assert!(
            connect <= tunnel && tunnel <= tls,
            "connect ≤ proxy ≤ tls: {s}"
        );
        assert!(ms(s, "ttft_ms") > tls, "{s}");
        assert_eq!(
            s["http_version"], "HTTP/2",
            "h2 by ALPN through the tunnel: {s}"
        );
    }
    assert!(
        text(&out.stderr).contains("through the proxy http://127.0.0.1:"),
        "{}",
        text(&out.stderr)
    );
    let log = proxy.log();
    let tunnels = log
        .matches(&format!("CONNECT 127.0.0.1:{}", edge.port))
        .count();
    // Three timed connections and the untimed one that primes the client.
    assert_eq!(
        tunnels, 4,
        "every connection went through the proxy:\n{log}"
    );

    // The same proxy from the environment; no_proxy bypasses it.
    let env_proxy = proxy.url(None);
    let out = probe(
        &url,
        &["-n", "1", "--cacert", &ca],
        &[("HTTPS_PROXY", &env_proxy)],
    );
    assert_code(&out, 0);
    assert!(
        samples(&out)[0]["proxy_ms"].is_number(),
        "HTTPS_PROXY is used"
    );
    let before = proxy.log().matches("CONNECT 127.0.0.1").count();
    let out = probe(
        &url,
        &["-n", "1", "--cacert", &ca],
        &[
            ("HTTPS_PROXY", &env_proxy),
            ("NO_PROXY", "localhost,127.0.0.1"),
        ],
    );
    assert_code(&out, 0);
    assert!(
        samples(&out)[0]["proxy_ms"].is_null(),
        "NO_PROXY bypasses it"
    );
    assert_eq!(proxy.log().matches("CONNECT 127.0.0.1").count(), before);
}

#[test]
fn http_goes_to_the_proxy_in_absolute_form() {
    if !tools("http_goes_to_the_proxy_in_absolute_form") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let emu = EmulatorProcess::start();
    let proxy = Tinyproxy::start(dir.path(), None);
    let out = probe(
        &emu.url(),
        &["-n", "2"],
        &[("http_proxy", &proxy.url(None))],
    );
    assert_code(&out, 0);
    for s in samples(&out) {
        assert!(s["proxy_ms"].is_null(), "no tunnel for http: {s}");
        assert!(s["ttft_ms"].is_number(), "{s}");
    }
    // tinyproxy closes each client connection after one answer; a warm
    // probe finds its kept-alive connection closed and sends again on a
    // new one (a stale keep-alive retry), instead of failing as `connect`.
    let out = probe(
        &emu.url(),
        &["-n", "3"],
        &[("http_proxy", &proxy.url(None))],
    );
    assert_code(&out, 0);
    for s in samples(&out) {
        assert!(s["error"].is_null(), "{s}");
        if s["connection"] == "reused" {
            assert_eq!(s["retried_stale"], false, "{s}");
        }
    }
    let log = proxy.log();
    assert!(
        log.contains(&format!("POST {}", emu.url())),
        "the request reached the proxy in absolute form:\n{log}"
    );
}

#[test]
fn proxy_credentials_work_and_are_never_printed() {
    if !tools("proxy_credentials_work_and_are_never_printed") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (_emu, edge, pki) = edge(dir.path());
    let auth = Some(("probe", PASSWORD));
    let proxy = Tinyproxy::start(dir.path(), auth);
    let url = format!("https://127.0.0.1:{}/v1/chat/completions", edge.port);
    let ca = pki.ca.display().to_string();

    let out = probe(
        &url,
        &["-n", "1", "--cacert", &ca, "--proxy", &proxy.url(None)],
        &[],
    );
    assert_code(&out, 1);
    let s = &samples(&out)[0];
    assert_eq!(s["error"]["kind"], "connect", "{s}");
    let m = s["error"]["message"].as_str().unwrap_or_default();
    assert!(m.contains("407") && m.contains("credentials"), "{m}");

    for args in [vec!["--proxy".to_string(), proxy.url(auth)], vec![]] {
        let mut a: Vec<&str> = vec!["-n", "2", "--cacert", &ca];
        a.extend(args.iter().map(String::as_str));
        let env_url = proxy.url(auth);
        let env: Vec<(&str, &str)> = if args.is_empty() {
            vec![("https_proxy", env_url.as_str())]
        } else {
            vec![]
        };
        let out = probe(&url, &a, &env);
        assert_code(&out, 0);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(
            !all.contains(PASSWORD),
            "the proxy password was printed:\n{all}"
        );
        assert!(
            all.contains("probe:***@127.0.0.1"),
            "the proxy is named, masked:\n{all}"
        );
    }
}

#[test]
fn a_proxy_that_is_down_is_a_named_connect_failure() {
    if !have(
        "tinyproxy",
        "a_proxy_that_is_down_is_a_named_connect_failure",
    ) {
        return;
    }
    let emu = EmulatorProcess::start();
    let closed = common::edge::free_port();
    let proxy = format!("http://u:{PASSWORD}@127.0.0.1:{closed}");
    let out = probe(&emu.url(), &["-n", "1", "--proxy", &proxy], &[]);
    assert_code(&out, 1);
    let s = &samples(&out)[0];
    assert_eq!(s["error"]["kind"], "connect", "{s}");
    let m = s["error"]["message"].as_str().unwrap_or_default();
    assert!(m.contains("cannot connect to the proxy"), "{m}");
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!all.contains(PASSWORD), "{all}");
}

//! `firsttoken browse` in a real headless Chromium against the reference
//! app's chat page, everything on loopback: the painted TTFT minus the
//! network TTFT is the page's configured render delay, a buffering page is
//! flagged, and a page that shows nothing ends in a named error.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{
    ChatWorld, EmulatorProcess, chat_world, firsttoken, json_lines, median, num as f, text,
};

/// One browser at a time: the render-lag test measures the page's main
/// thread, which other tests' browsers on the same cores would delay.
static ONE_BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_browser() -> std::sync::MutexGuard<'static, ()> {
    // A test that panicked while holding it leaves nothing to clean up.
    ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner())
}

fn browse(w: &ChatWorld, chromium: &Path, extra: &[&str]) -> std::process::Output {
    browse_on(w, chromium, "#message", ".assistant", extra)
}

fn browse_on(
    w: &ChatWorld,
    chromium: &Path,
    input: &str,
    answer: &str,
    extra: &[&str],
) -> std::process::Output {
    let url = format!("{}/chat", w.app.base);
    let mut args = vec![
        "browse",
        &url,
        "--input",
        input,
        "--answer",
        answer,
        "--local-storage",
        "refapp_token=$FT_TEST_TOKEN",
        "--chromium",
        chromium.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    firsttoken(&args, &[("FT_TEST_TOKEN", &w.token)])
}

#[test]
fn render_lag_is_the_pages_render_delay() {
    let Some(chromium) = common::chromium("render_lag_is_the_pages_render_delay") else {
        return;
    };
    let _one = one_browser();
    const DELAY_MS: f64 = 25.0;
    let w = chat_world(&["--page-render-delay-ms", "25"]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("browse.db").display().to_string();
    let out = browse(
        &w,
        &chromium,
        &[
            "-n",
            "12",
            "--json",
            "--message",
            "Hello there",
            "--store",
            &store,
        ],
    );
    assert!(
        out.status.success(),
        "{} {}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let samples = json_lines(&out);
    assert_eq!(samples.len(), 12);
    let mut lags = Vec::new();
    let mut chunks_before = Vec::new();
    for s in &samples {
        assert!(s["error"].is_null(), "{s}");
        // One clock: the action, the request, the network's first token,
        // the DOM change, its frame, the last paint, in that order.
        let lead = f(s, "/painted/input_lead_ms");
        assert!((0.0..1000.0).contains(&lead), "{s}");
        let (ttft, dom, painted, last) = (
            f(s, "/ttft_ms"),
            f(s, "/painted/first_dom_ms"),
            f(s, "/painted/painted_ttft_ms"),
            f(s, "/painted/painted_last_ms"),
        );
        assert!(f(s, "/headers_ms") <= ttft, "{s}");
        assert!(ttft >= 150.0, "the emulator's TTFT is 150 ms: {s}");
        assert!(ttft < dom && dom <= painted && painted <= last, "{s}");
        // Eight tokens; two may share one delivery on a busy machine.
        assert!((1.0..=8.0).contains(&f(s, "/content_chunks")), "{s}");
        chunks_before.push(f(s, "/painted/chunks_before_first_paint"));
        lags.push(painted - ttft);
    }
    // Each token is shown as it comes: the first paint follows the first
    // chunk, not a later one.
    assert_eq!(median(chunks_before), 1.0);
    let m = median(lags.clone());
    assert!(
        (m - DELAY_MS).abs() <= 5.0,
        "median render lag {m:.2} ms, configured {DELAY_MS} ms: {lags:?}"
    );

    // `--store`: the same twelve messages kept as a complete session, path
    // `browser`, phase warm, each with its paints; the report reads them.
    let ids = common::session_ids(&store);
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(
        text(&out.stderr).contains(&format!("session {} stored (12 messages)", ids[0])),
        "{}",
        text(&out.stderr)
    );
    let export = firsttoken(&["export", "--store", &store, "--session", &ids[0]], &[]);
    let lines: Vec<serde_json::Value> = text(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["status"]["state"], "complete", "{}", lines[0]);
    assert_eq!(lines[0]["spec"]["browse"]["visit"], "warm");
    let rows = &lines[1..];
    assert_eq!(rows.len(), 12);
    for (r, s) in rows.iter().zip(&samples) {
        assert_eq!(
            (r["phase"].as_str(), r["path"].as_str()),
            (Some("warm"), Some("browser")),
            "{r}"
        );
        assert_eq!(r["sample"]["ttft_ms"], s["ttft_ms"], "{r}");
        assert_eq!(r["sample"]["painted"], s["painted"], "{r}");
    }
    let j = common::report_json(&store, &[]);
    // A warm message the browser sent on a new connection is not warm:
    // left out of the warm figures, as for the HTTP client.
    let reused = samples.iter().filter(|s| s["connect_ms"].is_null()).count();
    let warm_n = j["analysis"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["label"]["phase"] == "warm" && g["label"]["path"] == "browser")
        .map_or(0, |g| g["pooled"]["n"].as_u64().unwrap_or(0) as usize);
    assert_eq!(warm_n, reused, "{}", j["analysis"]["groups"]);
    // The stored report's render lag: the same twelve, the same median.
    let render = &j["analysis"]["render"][0];
    assert_eq!(
        (
            render["phase"].as_str(),
            render["path"].as_str(),
            render["lag"]["n"].as_u64()
        ),
        (Some("warm"), Some("browser"), Some(12)),
        "{render}"
    );
    // firsttoken's one percentile definition, over the same lags.
    let stored = f(render, "/lag/median_ms/point");
    let mut sorted = lags.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(
        sorted.first() <= Some(&stored)
            && Some(&stored) <= sorted.last()
            && (stored - DELAY_MS).abs() <= 5.0,
        "stored median {stored} ms, lags {lags:?}"
    );
    markdown_report_says(&store, "Render lag (browser)");
}

/// `--contexts 3`: three users at once, each its own browser context, two
/// rounds; every message is painted, each context sends one message a
/// round, and the store keeps them in phase `concurrency` at level 3,
/// which the report's render lag keeps apart from any other phase.
#[test]
fn contexts_send_at_once_and_are_stored_at_their_level() {
    let Some(chromium) = common::chromium("contexts_send_at_once_and_are_stored_at_their_level")
    else {
        return;
    };
    let _one = one_browser();
    let w = chat_world(&[]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("browse.db").display().to_string();
    let out = browse(
        &w,
        &chromium,
        &["-n", "6", "--contexts", "3", "--json", "--store", &store],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let samples = json_lines(&out);
    assert_eq!(samples.len(), 6);
    let mut workers: Vec<u64> = samples
        .iter()
        .map(|s| s["worker"].as_u64().unwrap())
        .collect();
    workers.sort_unstable();
    assert_eq!(workers, [0, 0, 1, 1, 2, 2]);
    for s in &samples {
        assert!(s["error"].is_null(), "{s}");
        assert!(f(s, "/painted/painted_ttft_ms") >= f(s, "/ttft_ms"), "{s}");
    }
    let ids = common::session_ids(&store);
    let export = firsttoken(&["export", "--store", &store, "--session", &ids[0]], &[]);
    let lines: Vec<serde_json::Value> = text(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["spec"]["browse"]["contexts"], 3, "{}", lines[0]);
    for r in &lines[1..] {
        assert_eq!(
            (r["phase"].as_str(), r["concurrency"].as_u64()),
            (Some("concurrency"), Some(3)),
            "{r}"
        );
    }
    let j = common::report_json(&store, &[]);
    let render = j["analysis"]["render"].as_array().unwrap();
    assert_eq!(render.len(), 1, "{render:?}");
    assert_eq!(render[0]["phase"], "concurrency", "{render:?}");
    assert_eq!(render[0]["concurrency"], 3, "{render:?}");
    assert_eq!(render[0]["lag"]["n"], 6, "{render:?}");
    markdown_report_says(&store, "· concurrency 3 · browser");
}

/// The stored report in Markdown holds `needle`.
fn markdown_report_says(store: &str, needle: &str) {
    let page = firsttoken(&["report", "--store", store, "--format", "markdown"], &[]);
    assert!(
        text(&page.stdout).contains(needle),
        "{needle:?} not in {}",
        text(&page.stdout)
    );
}

/// Each message's requests carry a fresh `traceparent`; with
/// `--otlp-listen` the app's own spans (the reference app exporting OTLP to
/// it) are stored with the session and join every message, as for the
/// HTTP client's samples.
#[test]
fn the_apps_spans_join_each_browser_message() {
    let Some(chromium) = common::chromium("the_apps_spans_join_each_browser_message") else {
        return;
    };
    let _one = one_browser();
    let listen = format!("127.0.0.1:{}", common::edge::free_port());
    let otlp = format!("http://{listen}");
    let w = chat_world(&["--otlp-endpoint", &otlp]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("browse.db").display().to_string();
    let out = browse(
        &w,
        &chromium,
        &[
            "-n",
            "4",
            "--json",
            "--store",
            &store,
            "--otlp-listen",
            &listen,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let measured = json_lines(&out);
    let traces: std::collections::BTreeSet<&str> = measured
        .iter()
        .map(|s| {
            s["trace_id"]
                .as_str()
                .unwrap_or_else(|| panic!("a trace id: {s}"))
        })
        .collect();
    assert_eq!(traces.len(), 4, "a fresh trace id per message: {traces:?}");
    let said = text(&out.stderr);
    assert!(
        said.contains("spans: ") && !said.contains("spans: 0 stored"),
        "{said}"
    );
    let j = common::report_json(&store, &[]);
    let coverage = j["analysis"]["traces"]["coverage"]
        .as_array()
        .unwrap_or_else(|| panic!("a span join: {}", j["analysis"]["traces"]));
    assert!(!coverage.is_empty());
    for c in coverage {
        assert_eq!(c["requests"], c["traced"], "every message joined: {c}");
    }
    // Without the header nothing is sent to join by.
    let out = browse(&w, &chromium, &["-n", "1", "--json", "--no-traceparent"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(json_lines(&out)[0]["trace_id"].is_null());
}

#[test]
fn a_page_that_buffers_is_flagged() {
    let Some(chromium) = common::chromium("a_page_that_buffers_is_flagged") else {
        return;
    };
    let _one = one_browser();
    let w = chat_world(&["--page-buffer", "end"]);
    let out = browse(&w, &chromium, &["-n", "3"]);
    assert!(
        out.status.success(),
        "{} {}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let said = text(&out.stdout);
    assert!(
        said.contains("The front end buffers: in most answers nothing was painted until the last token had arrived."),
        "{said}"
    );
    assert!(said.contains("after 8 of 8 chunks"), "{said}");

    let w = chat_world(&["--page-buffer", "4"]);
    let out = browse(&w, &chromium, &["-n", "3"]);
    assert!(
        out.status.success(),
        "{} {}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let said = text(&out.stdout);
    assert!(
        said.contains("the first paint came after 4 tokens had arrived (median)"),
        "{said}"
    );

    // The same app without buffering: no such sentence.
    let w = chat_world(&[]);
    let out = browse(&w, &chromium, &["-n", "3"]);
    assert!(
        out.status.success(),
        "{} {}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let said = text(&out.stdout);
    assert!(said.contains("Render lag"), "{said}");
    assert!(!said.contains("buffers"), "{said}");
}

#[test]
fn a_page_that_shows_nothing_ends_in_a_named_error() {
    let Some(chromium) = common::chromium("a_page_that_shows_nothing_ends_in_a_named_error") else {
        return;
    };
    let _one = one_browser();
    let w = chat_world(&[]);
    // The answer streams, but into no element the selector names.
    let out = browse_on(&w, &chromium, "#message", "#no-such-answer", &["--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let s = &json_lines(&out)[0];
    assert_eq!(s["error"]["kind"], "no_content", "{s}");
    assert!(
        f(s, "/ttft_ms") >= 150.0,
        "the network still saw the token: {s}"
    );

    // The input selector matches nothing, however long it waits for the
    // page to render it: the page cannot be used.
    let out = browse_on(
        &w,
        &chromium,
        "#no-such-input",
        ".assistant",
        &["--json", "--timeout-ms", "2000"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let s = &json_lines(&out)[0];
    assert_eq!(s["error"]["kind"], "page_error", "{s}");
    assert!(
        s["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("matched nothing within 2 s")),
        "{s}"
    );

    // Without a token the page's request gets 401 and it logs an error.
    let url = format!("{}/chat", w.app.base);
    let out = firsttoken(
        &[
            "browse",
            &url,
            "--input",
            "#message",
            "--answer",
            ".assistant",
            "--json",
            "--chromium",
            chromium.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{} {}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let s = &json_lines(&out)[0];
    assert_eq!(s["error"]["kind"], "page_error", "{s}");
    assert!(
        s["error"]["message"].as_str().unwrap().contains("401"),
        "{s}"
    );
}

/// Every process whose parent is `pid`, with its process group.
#[cfg(target_os = "linux")]
fn children(pid: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp …; comm may hold spaces, so split after ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(1).and_then(|v| v.parse::<u32>().ok()) == Some(pid) {
            out.push((p, f[2].parse().unwrap_or(0)));
        }
    }
    out
}

/// Processes still alive (not zombies) in process group `pgid`.
#[cfg(target_os = "linux")]
fn group_alive(pgid: u32) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .filter_map(|stat| {
            let rest = stat.rsplit_once(')')?.1.to_string();
            let f: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
            Some((f.first()?.clone(), f.get(2)?.parse::<u32>().ok()?))
        })
        .filter(|(state, g)| *g == pgid && state != "Z")
        .count()
}

/// Poll `cond` every 20 ms for up to `within`.
fn wait_for(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + within;
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

#[cfg(target_os = "linux")]
#[test]
fn the_browser_is_reaped_on_ctrl_c_and_on_kill() {
    let Some(chromium) = common::chromium("the_browser_is_reaped_on_ctrl_c_and_on_kill") else {
        return;
    };
    let _one = one_browser();
    // An upstream that takes a minute: the message is in flight when the
    // signal comes.
    let emu = EmulatorProcess::start_with(&[
        "emulate",
        "--listen",
        "127.0.0.1:0",
        "--ttft-ms",
        "60000",
        "--tokens",
        "2",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    let app = EmulatorProcess::refapp(&emu, db.to_str().unwrap(), &[]);
    let token = common::sign_up(&app.base);
    let url = format!("{}/chat", app.base);
    for signal in ["-INT", "-KILL"] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_firsttoken"))
            .args([
                "browse",
                &url,
                "--input",
                "#message",
                "--answer",
                ".assistant",
                "--local-storage",
                "refapp_token=$FT_TEST_TOKEN",
                "--chromium",
                chromium.to_str().unwrap(),
            ])
            .env("FT_TEST_TOKEN", &token)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Chromium is the child in a process group of its own.
        let mut group = None;
        assert!(
            wait_for(Duration::from_secs(30), || {
                group = children(pid)
                    .into_iter()
                    .map(|(_, g)| g)
                    .find(|g| *g != 0 && *g != pid);
                group.is_some()
            }),
            "no browser started"
        );
        let pgid = group.unwrap();
        // Wait until the browser has forked its helpers (a renderer at least).
        assert!(wait_for(Duration::from_secs(30), || group_alive(pgid) >= 2));
        let status = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let _ = child.wait();
        assert!(
            wait_for(Duration::from_secs(10), || group_alive(pgid) == 0),
            "after kill {signal}: {} browser processes left",
            group_alive(pgid)
        );
    }
}

/// `[app.browser]` in a session: `run` measures the app's own chat page
/// after its HTTP phases, each browser context signed in as one of the
/// session's test accounts (`{token}` in its localStorage); returning and
/// first visits, a level of two users and a cold probe are stored as path
/// `browser` beside the HTTP path, and the accounts are deleted after.
#[test]
fn a_session_measures_the_page_in_a_browser_beside_its_http_path() {
    let Some(chromium) =
        common::chromium("a_session_measures_the_page_in_a_browser_beside_its_http_path")
    else {
        return;
    };
    let _one = one_browser();
    let w = chat_world(&[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ft.toml");
    std::fs::write(
        &cfg,
        format!(
            r##"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "{base}"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'

[app.browser]
page = "/chat"
input = "#message"
answer = ".assistant"
local_storage = {{ refapp_token = "{{token}}" }}
chromium = "{chromium}"

{accounts}
accounts = 2

[prompts]
list = ["hello", "and then?"]

[phases]
warm = 3
fresh = 0

[phases.browser]
warm = 3
fresh = 2
levels = [2]
cold = {{ count = 1, idle_gap = "200ms" }}
"##,
            base = w.app.base,
            chromium = chromium.display(),
            accounts = common::REFAPP_ACCOUNTS,
        ),
    )
    .unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
        &[("FT_TEST_APP_DB", &w.app_db)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ids = common::session_ids(&store);
    let export = firsttoken(&["export", "--store", &store, "--session", &ids[0]], &[]);
    let lines: Vec<serde_json::Value> = text(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["status"]["state"], "complete", "{}", lines[0]);
    let browser: Vec<&serde_json::Value> = lines[1..]
        .iter()
        .filter(|r| r["path"] == "browser")
        .collect();
    let mut phases: Vec<(String, Option<u64>)> = browser
        .iter()
        .map(|r| {
            (
                r["phase"].as_str().unwrap().to_string(),
                r["concurrency"].as_u64(),
            )
        })
        .collect();
    phases.sort();
    let want = [
        ("cold", None),
        ("concurrency", Some(2)),
        ("concurrency", Some(2)),
        ("fresh", None),
        ("fresh", None),
        ("warm", None),
        ("warm", None),
        ("warm", None),
    ];
    let want: Vec<(String, Option<u64>)> = want.iter().map(|(p, c)| (p.to_string(), *c)).collect();
    assert_eq!(phases, want);
    for r in &browser {
        let s = &r["sample"];
        assert!(s["error"].is_null(), "{r}");
        // Signed in: the page's request was answered (a token the app
        // refused would be a 401 and no answer).
        assert_eq!(s["status"], 200, "{r}");
        assert!(f(s, "/painted/painted_ttft_ms") >= f(s, "/ttft_ms"), "{r}");
    }
    let http = lines[1..].iter().filter(|r| r["path"] == "chat").count();
    assert!(http >= 3, "the HTTP path's requests are stored too");
    // The accounts the browser signed in as are gone.
    let users: i64 = rusqlite::Connection::open(&w.app_db)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM users WHERE email LIKE '%firsttoken%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(users, 0);
    markdown_report_says(&store, "Render lag (browser)");
}

/// A sign-in saved as a storage-state file (Playwright's `storageState`
/// JSON) signs every context in: its `localStorage` entry for the page's
/// origin is set before the page's scripts run, so the page's requests are
/// answered; the token shows nowhere.
#[test]
fn a_storage_state_file_signs_the_page_in() {
    let Some(chromium) = common::chromium("a_storage_state_file_signs_the_page_in") else {
        return;
    };
    let _one = one_browser();
    let w = chat_world(&[]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let saved = serde_json::json!({
        "cookies": [],
        "origins": [{
            "origin": w.app.base,
            "localStorage": [{ "name": "refapp_token", "value": w.token }],
        }],
    });
    std::fs::write(&state, saved.to_string()).unwrap();
    let url = format!("{}/chat", w.app.base);
    let out = firsttoken(
        &[
            "browse",
            &url,
            "--input",
            "#message",
            "--answer",
            ".assistant",
            "--storage-state",
            state.to_str().unwrap(),
            "--visit",
            "fresh",
            "-n",
            "2",
            "--json",
            "--chromium",
            chromium.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for s in json_lines(&out) {
        assert!(s["error"].is_null(), "{s}");
        assert_eq!(s["status"], 200, "{s}");
    }
    assert!(!text(&out.stdout).contains(&w.token));
    assert!(!text(&out.stderr).contains(&w.token));
}

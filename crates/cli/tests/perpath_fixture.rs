//! Issue 10, done-when: a session against a fixture app with known faults
//! (`tests/fixtures/perpath_app.py`, Python standard library only): a chat
//! path whose handler blocks the app's one event loop for 100 ms, an async
//! docs path, a keyword router meant to send document questions to docs,
//! and a cold start after idle. The session aims its phases at paths, gives
//! each path its own prompts and the router `expect_route = "docs"`; the
//! report must show chat's own concurrency ratios (within 15 % of the
//! fixture's own figures at c = 3 and c = 5), docs scaling, the router's
//! funnel with the exact count of questions that reached docs and the
//! identities of those that did not, and cold start per path.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{assert_code, firsttoken, text};
use serde_json::Value;

/// The fixture app as a child process, killed when dropped.
struct Fixture {
    child: Child,
    base: String,
}

impl Fixture {
    fn start() -> Fixture {
        Fixture::with_chat_block_ms(100)
    }

    fn with_chat_block_ms(ms: u32) -> Fixture {
        Fixture::with_env(&[("PERPATH_CHAT_BLOCK_MS", &ms.to_string())])
    }

    fn with_env(env: &[(&str, &str)]) -> Fixture {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/perpath_app.py");
        let mut child = Command::new("python3")
            .arg(script)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the fixture app");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            for _ in lines {}
        });
        let mut f = Fixture {
            child,
            base: String::new(),
        };
        let first = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the fixture prints its address");
        f.base = first
            .strip_prefix("listening on ")
            .expect("listening on URL")
            .to_string();
        assert!(f.base.starts_with("http://127.0.0.1:"), "{first}");
        f
    }

    /// The app's own figures (`GET /stats`), over a plain loopback socket.
    fn stats(&self) -> Value {
        use std::io::Write;
        let addr = self.base.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut buf = String::new();
        // The fixture answers with Content-Length and keeps the connection;
        // read until the body is complete.
        let mut chunk = [0u8; 65536];
        loop {
            let n = s.read(&mut chunk).unwrap();
            buf.push_str(&String::from_utf8_lossy(&chunk[..n]));
            if let Some((head, body)) = buf.split_once("\r\n\r\n") {
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .unwrap()
                    .parse()
                    .unwrap();
                if body.len() >= len {
                    return serde_json::from_str(&body[..len]).unwrap();
                }
            }
            assert!(n > 0, "the fixture closed before /stats was complete");
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const CHAT: [&str; 4] = [
    "Tell me a joke about latency.",
    "How are you today?",
    "Write a haiku about queues.",
    "What is a good name for a cat?",
];

/// Ten document questions; three carry the router's keyword.
const DOCUMENT_QUESTIONS: [&str; 10] = [
    "What was the operating margin in the annual report?",
    "Summarise the cash flow statement.",
    "Who signed the auditor's opinion?",
    "Which risks does the annual report list first?",
    "How many employees were there at year end?",
    "What dividend was proposed?",
    "Where is the segment breakdown?",
    "What does the annual report say about debt?",
    "When does the fiscal year end?",
    "Which subsidiaries were sold?",
];

fn toml_list(v: &[&str]) -> String {
    let quoted: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

fn config(base: &str) -> String {
    let docs = toml_list(&DOCUMENT_QUESTIONS);
    format!(
        r#"
[session]
network = "loopback"
code_version = "fixture"
seed = 11
timeout = "20s"

[app]
base_url = "{base}"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'
format = "openai-chat"

[[app.paths]]
name = "docs"
path = "/api/docs"
body = '{{"message": "{{prompt}}"}}'
format = "openai-chat"
prompts = {docs}

[[app.paths]]
name = "router"
path = "/api/router"
body = '{{"message": "{{prompt}}"}}'
format = "openai-chat"
prompts = {docs}
expect_route = "docs"

[prompts]
list = {chat}

[phases]
cold = {{ count = 2, idle_gap = "1s", paths = ["chat", "docs"] }}
warm = 30
concurrency = {{ levels = [1, 3, 5], requests = 30, paths = ["chat", "docs"] }}
"#,
        chat = toml_list(&CHAT),
    )
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The entry of a per-path diagnostic for one path.
fn on_path<'a>(entries: &'a Value, path: &str) -> &'a Value {
    entries
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["paths"]["kind"] == "one" && e["paths"]["path"] == path)
        .unwrap_or_else(|| panic!("no entry for path {path}: {entries:#}"))
}

#[test]
fn a_session_against_the_fixture_app_reports_each_path_on_its_own() {
    let app = Fixture::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("firsttoken.toml");
    std::fs::write(&cfg, config(&app.base)).unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store],
        &[],
    );
    assert_code(&out, 0);
    let out = firsttoken(&["report", "--store", &store, "--format", "json"], &[]);
    assert_code(&out, 0);
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("a JSON report");
    let a = &report["analysis"];

    // Concurrency, chat alone: against the fixture's own figures. The app
    // serves one chat request at a time, each taking its measured service
    // time S: the i-th of a burst of k gets its first token after i·S (plus
    // the client's own overhead o, seen at c = 1), so its median ratio is
    // median_i(i·S + o) / (S + o).
    let wall = on_path(&a["concurrency"], "chat");
    let stats = app.stats();
    let mut service: Vec<f64> = stats["chat_service_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let s = median(&mut service);
    assert!((95.0..200.0).contains(&s), "chat service time {s} ms");
    let level = |k: u64| {
        wall["levels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["concurrency"] == k)
            .unwrap_or_else(|| panic!("no level {k}: {wall:#}"))
    };
    let c1 = level(1)["ttft"]["p50"]["point"].as_f64().unwrap();
    let o = (c1 - s).max(0.0);
    for k in [3u64, 5] {
        let mut waits: Vec<f64> = (1..=k).map(|i| i as f64 * s + o).collect();
        let expected = median(&mut waits) / (s + o);
        let got = level(k)["ratio"]["estimate"]["point"].as_f64().unwrap();
        assert!(
            (got - expected).abs() <= 0.15 * expected,
            "chat at c={k}: {got} against the fixture's {expected}"
        );
    }
    assert_eq!(wall["verdict"], "one_at_a_time", "{wall:#}");
    assert_eq!(on_path(&a["concurrency"], "docs")["verdict"], "scales");
    let levels = |w: &Value| w["levels"].as_array().unwrap().len();
    assert!(
        a["concurrency"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["paths"]["path"] != "router"),
        "no burst went to the router"
    );
    assert_eq!(levels(wall), 3);

    // The router's funnel: exactly the three keyword questions reached
    // docs; the seven others went to chat, named by number and hash.
    let routes = &a["routes"][0]["paths"];
    let router = routes
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "router")
        .unwrap();
    let f = &router["funnel"];
    assert_eq!(f["expected"], "docs");
    assert_eq!(
        (f["sent"].as_u64(), f["reached"].as_u64()),
        (Some(10), Some(3))
    );
    assert_eq!(
        (f["questions"].as_u64(), f["questions_reached"].as_u64()),
        (Some(10), Some(3))
    );
    let astray = f["astray"].as_array().unwrap();
    assert_eq!(astray.len(), 1, "{f:#}");
    assert_eq!(astray[0]["route"], "chat");
    let mut got: Vec<(u64, String)> = astray[0]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["index"].as_u64().unwrap(),
                p["hash"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let want: Vec<(u64, String)> = DOCUMENT_QUESTIONS
        .iter()
        .enumerate()
        .filter(|(_, q)| !q.to_lowercase().contains("annual report"))
        .map(|(i, q)| (i as u64, firsttoken_session::prompt_ref(i, q).hash))
        .collect();
    assert_eq!(got, want);
    let lines: Vec<String> = report["text"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["lines"].as_array().unwrap().iter())
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    let sentence = lines
        .iter()
        .find(|l| l.starts_with("of 10 requests sent to router"))
        .expect("the router's funnel sentence");
    assert!(
        sentence.contains("3 reached docs") && sentence.contains("these 7 went to chat: #2 ("),
        "{sentence}"
    );

    // Cold start per path: each path's probe against its own warm requests.
    for path in ["chat", "docs"] {
        let c = on_path(&a["cold"], path);
        let probes = c["probes"].as_array().unwrap();
        assert_eq!(probes.len(), 1, "{c:#}");
        assert_eq!(probes[0]["path"], path);
        assert_eq!(probes[0]["beyond_warm"], true, "{c:#}");
        assert!(probes[0]["excess_ms"].as_f64().unwrap() > 0.0, "{c:#}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("chat: behaves like a one-at-a-time server")),
        "{lines:#?}"
    );
}

/// Issue 10: `compare` judges each path on its own. Version b's chat path
/// blocks 250 ms instead of 100 ms; docs is unchanged. compare prints a
/// verdict per path, says chat is slower and exits 1; docs shows no
/// detectable difference; the pooled figure is labelled as such.
#[test]
fn compare_judges_each_path_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let mut ids = Vec::new();
    for (version, block) in [("a", 100), ("b", 250)] {
        let app = Fixture::with_chat_block_ms(block);
        let cfg = dir.path().join(format!("{version}.toml"));
        let text_cfg = format!(
            r#"
[session]
seed = 5
timeout = "20s"

[app]
base_url = "{}"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'
format = "openai-chat"

[[app.paths]]
name = "docs"
path = "/api/docs"
body = '{{"message": "{{prompt}}"}}'
format = "openai-chat"

[prompts]
list = ["one", "two", "three"]

[phases]
warm = 24
"#,
            app.base
        );
        std::fs::write(&cfg, text_cfg).unwrap();
        let out = firsttoken(
            &[
                "run",
                "-c",
                cfg.to_str().unwrap(),
                "--store",
                &store,
                "--code-version",
                version,
                "-q",
            ],
            &[],
        );
        assert_code(&out, 0);
        ids.push(common::session_ids(&store).remove(0));
    }
    let out = firsttoken(&["compare", "--store", &store, &ids[1], &ids[0]], &[]);
    assert_code(&out, 1);
    let t = text(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        t.contains(&format!("{} · path chat · warm is slower", ids[1])),
        "{t}"
    );
    // The docs path did not change: no change shown — inside the material
    // band (reaching zero or, a few tenths of a millisecond apart, not),
    // or reaching past it at this n; never a direction.
    let docs = format!("{} · path docs", ids[1]);
    assert!(
        t.contains(&format!("no detectable difference between {docs}"))
            || t.contains(&format!("a difference too small to matter between {docs}"))
            || t.contains(&format!("{docs} vs "))
                && t[t.find(&format!("{docs} vs ")).unwrap()..].contains("inconclusive at this n"),
        "{t}"
    );
    assert!(!t.contains(&format!("{docs} is ")), "{t}");
    assert!(t.contains("all paths pooled"), "{t}");
}

/// Issue 10: an app that names its route in the stream, not a header. With
/// `route_field` the funnel reads it from there: exactly the keyword
/// questions reach docs; without it, every request is "route not reported".
#[test]
fn a_route_named_in_a_json_field_feeds_the_funnel() {
    let app = Fixture::with_env(&[("PERPATH_ROUTE_IN", "body")]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let docs = toml_list(&DOCUMENT_QUESTIONS);
    let mut funnels = Vec::new();
    for field in ["route_field = \"/route\"", ""] {
        let cfg = dir.path().join("f.toml");
        let text_cfg = format!(
            r#"
[session]
seed = 3
timeout = "20s"

[app]
base_url = "{}"

[[app.paths]]
name = "router"
path = "/api/router"
body = '{{"message": "{{prompt}}"}}'
format = "openai-chat"
prompts = {docs}
expect_route = "docs"
{field}

[prompts]
list = ["unused: the path has its own"]

[phases]
warm = 10
"#,
            app.base
        );
        std::fs::write(&cfg, text_cfg).unwrap();
        let out = firsttoken(
            &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
            &[],
        );
        assert_code(&out, 0);
        let id = common::session_ids(&store).remove(0);
        let out = firsttoken(
            &[
                "report",
                "--store",
                &store,
                "--session",
                &id,
                "--format",
                "json",
            ],
            &[],
        );
        assert_code(&out, 0);
        let report: Value = serde_json::from_str(&text(&out.stdout)).expect("a JSON report");
        let paths = report["analysis"]["routes"][0]["paths"].clone();
        let router = paths
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == "router")
            .cloned()
            .unwrap_or_else(|| panic!("no router in {paths:#}"));
        funnels.push(router["funnel"].clone());
    }
    let (with, without) = (&funnels[0], &funnels[1]);
    assert_eq!(
        (with["sent"].as_u64(), with["reached"].as_u64()),
        (Some(10), Some(3)),
        "{with:#}"
    );
    assert_eq!(with["astray"][0]["route"], "chat", "{with:#}");
    assert_eq!(without["reached"].as_u64(), Some(0), "{without:#}");
}

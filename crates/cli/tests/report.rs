//! `firsttoken report`, `compare`, `check` and `demo` end to end, over
//! sessions run against the emulator as a child process.

mod common;

use common::{EmulatorProcess, assert_code, firsttoken, session_ids, text, write_config};

/// Two sessions labelled `v1` and `v2` in one store; returns (dir, store, [id_v1, id_v2]).
fn two_sessions() -> (tempfile::TempDir, String, Vec<String>) {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &emu.base, 24);
    let store = dir.path().join("s.db").display().to_string();
    let mut ids = Vec::new();
    for v in ["v1", "v2"] {
        let out = firsttoken(
            &[
                "run",
                "-c",
                &cfg,
                "--store",
                &store,
                "--code-version",
                v,
                "-q",
            ],
            &[],
        );
        assert_code(&out, 0);
        ids.push(session_ids(&store).remove(0));
    }
    (dir, store, ids)
}

#[test]
fn report_compare_and_check_over_stored_sessions() {
    let (dir, store, ids) = two_sessions();

    let out = firsttoken(&["report", "--store", &store], &[]);
    assert_code(&out, 0);
    let t = text(&out.stdout);
    for section in [
        "TTFT by group",
        "App overhead",
        "Connection cost",
        "Concurrency wall",
        "Claims and limits",
    ] {
        assert!(t.contains(section), "missing {section}:\n{t}");
    }
    assert!(
        t.contains("code_version=v1") && t.contains("code_version=v2"),
        "{t}"
    );
    assert!(
        t.lines().all(|l| l.chars().count() <= 100),
        "the terminal report fits 100 columns"
    );

    let out = firsttoken(
        &[
            "report",
            "--store",
            &store,
            "--format",
            "json",
            "--group-by",
            "phase",
        ],
        &[],
    );
    assert_code(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON report");
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/schema/report.v1.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(&v),
        "{:?}",
        validator
            .iter_errors(&v)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(v["sessions"].as_array().map(Vec::len), Some(2));

    let md = firsttoken(
        &[
            "report",
            "--store",
            &store,
            "--format",
            "markdown",
            "--session",
            &ids[0],
        ],
        &[],
    );
    assert_code(&md, 0);
    assert!(
        text(&md.stdout).starts_with("# firsttoken report"),
        "{}",
        text(&md.stdout)
    );

    let html = dir.path().join("r.html");
    let out = firsttoken(
        &[
            "report",
            "--store",
            &store,
            "--format",
            "html",
            "--out",
            html.to_str().unwrap(),
        ],
        &[],
    );
    assert_code(&out, 0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-plot=\"ttft-cdf\"") && page.contains("Emulated upstream"));

    // Same emulator, same settings: no significant change either way.
    let out = firsttoken(&["compare", "--store", &store, &ids[1], &ids[0]], &[]);
    assert_code(&out, 0);
    assert!(
        text(&out.stdout).contains("Comparison"),
        "{}",
        text(&out.stdout)
    );
    // Issue 24, defects 2 and 3: the headline table pooled phases ("chat,
    // n = 164": warm, c = 3/5 and cold probes together) and `compare`
    // opened with one group per code version, app and direct rows pooled.
    // Every group holds one phase (and one level, one strategy), direct
    // rows are never in an app group, and no group pools paths unlabelled.
    let out = firsttoken(
        &[
            "compare", "--store", &store, &ids[1], &ids[0], "--format", "json",
        ],
        &[],
    );
    assert_code(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    let groups = v["analysis"]["groups"].as_array().unwrap();
    assert!(groups.len() > 4, "{groups:#?}");
    for g in groups {
        let l = &g["label"];
        let phase = l["phase"].as_str().unwrap_or_else(|| panic!("{g:#}"));
        assert_eq!(phase == "direct", l["path"] == "direct", "{g:#}");
        assert_eq!(
            phase == "concurrency",
            l["concurrency"].is_number(),
            "a level per row: {g:#}"
        );
        assert_eq!(g["pools"], serde_json::json!([]), "{g:#}");
    }
    let headline = firsttoken(&["compare", "--store", &store, &ids[1], &ids[0]], &[]);
    let t = text(&headline.stdout);
    let ttft = &t[t.find("== TTFT by group").unwrap()..];
    let ttft = &ttft[..ttft[3..].find("\n== ").map_or(ttft.len(), |i| i + 3)];
    assert!(
        ttft.contains("v2 · chat · warm") && ttft.contains("v2 · direct"),
        "{ttft}"
    );
    let out = firsttoken(
        &[
            "compare",
            "--store",
            &store,
            "--by",
            "code_version",
            "v2",
            "v1",
        ],
        &[],
    );
    assert_code(&out, 0);
    let out = firsttoken(
        &[
            "compare",
            "--store",
            &store,
            "--by",
            "code_version",
            "v9",
            "v1",
        ],
        &[],
    );
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("v9"), "{}", text(&out.stderr));

    // The emulator answers in ~30 ms: a 10 s limit holds, a 1 ms one fails.
    let out = firsttoken(
        &[
            "check",
            "--store",
            &store,
            "--max",
            "ttft.p95=10s",
            "--max",
            "error_rate=1%",
        ],
        &[],
    );
    assert_code(&out, 0);
    assert!(text(&out.stdout).contains("PASS"), "{}", text(&out.stdout));
    let out = firsttoken(&["check", "--store", &store, "--max", "ttft.p50=1ms"], &[]);
    assert_code(&out, 1);
    assert!(text(&out.stdout).contains("FAIL"), "{}", text(&out.stdout));
    let out = firsttoken(&["check", "--store", &store, "--against", &ids[0]], &[]);
    assert_code(&out, 0);
    let out = firsttoken(&["check", "--store", &store, "--max", "ttft.p97=1s"], &[]);
    assert_code(&out, 2);
    let out = firsttoken(&["check", "--store", &store], &[]);
    assert_code(&out, 2);
}

#[test]
fn report_on_an_empty_store_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("empty.db").display().to_string();
    let out = firsttoken(&["report", "--store", &store], &[]);
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("firsttoken run"),
        "{}",
        text(&out.stderr)
    );
}

/// The README's main command, end to end, on the minimal protocol
/// (`--minimal`: the scaled protocol less the requests no finding below
/// needs, seven eighths of its time): every finding the demo exists to
/// show.
#[test]
fn demo_runs_both_apps_and_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("demo.db").display().to_string();
    let html = dir.path().join("demo.html");
    let mut cmd = assert_cmd::Command::cargo_bin("firsttoken").unwrap();
    cmd.args([
        "demo",
        "--minimal",
        "-q",
        "--store",
        &store,
        "--html",
        html.to_str().unwrap(),
    ])
    .current_dir(dir.path())
    .timeout(std::time::Duration::from_secs(600));
    let out = cmd.output().unwrap();
    assert_code(&out, 0);
    let screen = text(&out.stdout);
    // Issue 24: the demo tells it in one screen: its findings in the first
    // 30 lines, then a table per app, then the full report as a command
    // that works as printed.
    let first: Vec<&str> = screen.lines().take(30).collect();
    let heading = first
        .iter()
        .position(|l| l.starts_with("== Findings"))
        .unwrap_or_else(|| panic!("the findings open the screen:\n{screen}"));
    let ranked: Vec<&&str> = first[heading..]
        .iter()
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && l.chars().nth(2).is_some_and(|c| c.is_ascii_digit()))
        .collect();
    assert!(ranked.len() >= 4, "{screen}");
    // Defect 7: no cold probe carries an interval of its own.
    for l in screen.lines().filter(|l| l.contains("cold start")) {
        assert!(!l.contains('['), "a cold probe is a value: {l}");
    }
    assert_eq!(
        screen.matches("┌─").count(),
        2,
        "one table per app: {screen}"
    );
    assert!(
        screen.lines().count() <= 90,
        "one screen, not the report: {screen}"
    );
    let command = screen
        .lines()
        .find_map(|l| l.trim().strip_prefix("firsttoken compare "))
        .unwrap_or_else(|| panic!("the full report's command: {screen}"));
    let args: Vec<&str> = std::iter::once("compare")
        .chain(command.split_whitespace())
        .collect();
    let full = firsttoken(&args, &[]);
    assert_code(&full, 0);
    let t = text(&full.stdout);
    assert!(
        t.contains("code_version=before") && t.contains("code_version=after"),
        "{t}"
    );
    // Sentences wrap at 100 columns: compare them with whitespace flattened.
    let t_flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    // Issue 11, item 8: the before → after verdict per phase, level and
    // path (levels never pooled, issue 24).
    for side in [
        "after · chat · warm",
        "after · docs · warm",
        "after · chat · c=5",
        "after · chat · cold",
    ] {
        assert!(
            t_flat.contains(side),
            "the before/after comparison lacks {side}: {t}"
        );
    }
    // The fixes show: the chat path's warm and concurrent TTFT, and the
    // cold probes (no cold start after the fix), each decided.
    for fixed in [
        "after · chat · warm is faster than before",
        "after · chat · c=5 is faster than before",
        "after · chat · cold is faster than before",
    ] {
        assert!(t_flat.contains(fixed), "{fixed}: {t}");
    }
    assert!(
        !t_flat.contains("after · all paths pooled · warm"),
        "warm paths behave differently and are not pooled: {t}"
    );
    assert!(t.contains("Concurrency wall"), "{t}");
    let page = std::fs::read_to_string(&html).expect("the HTML report");
    assert!(page.contains("data-plot=\"concurrency\""));
    // Defect 6: the page carries the before/after verdicts the terminal shows
    // (old main's HTML page had no requested comparisons).
    assert!(
        page.contains("requested, ttft") && page.contains("after · chat · warm"),
        "no before/after comparison in the page"
    );
    let sessions = firsttoken(&["sessions", "--store", &store], &[]);
    let listing = text(&sessions.stdout);
    assert_eq!(listing.matches("complete").count(), 2, "{listing}");
    assert!(listing.contains("emulated"));

    // Issue 11: the mechanisms, from the JSON report's analysis.
    let out = firsttoken(&["report", "--store", &store, "--format", "json"], &[]);
    assert_code(&out, 0);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let analysis = &json["analysis"];
    // The app's own database time (Server-Timing) on one path of one app:
    // the 95 % interval of its median.
    let db = |version: &str, path: &str| -> (f64, f64) {
        let o = analysis["overhead"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| {
                o["scope"] == format!("code_version={version}")
                    && o["paths"]["kind"] == "one"
                    && o["paths"]["path"] == path
            })
            .unwrap_or_else(|| panic!("no overhead for {version} · {path}"));
        let part = o["server_timing"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "db")
            .unwrap_or_else(|| panic!("no db part for {version} · {path}: {o}"));
        let ci = &part["median"]["ci"];
        (ci["lower"].as_f64().unwrap(), ci["upper"].as_f64().unwrap())
    };
    // "before"'s chat path pays three extra serial round trips: its app
    // overhead exceeds "after"'s, the two intervals apart.
    let (before_chat, after_chat) = (db("before", "chat"), db("after", "chat"));
    assert!(
        before_chat.0 > after_chat.1,
        "before {before_chat:?} vs after {after_chat:?}"
    );
    // In "before", chat's database time exceeds the document path's.
    let before_docs = db("before", "docs");
    assert!(
        before_chat.0 > before_docs.1,
        "chat {before_chat:?} vs docs {before_docs:?}"
    );
    // The router funnel: document questions sent to the router reach chat
    // mostly in "before", always docs in "after".
    let funnel = |version: &str| -> (u64, u64) {
        let r = analysis["routes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scope"] == format!("code_version={version}"))
            .unwrap_or_else(|| panic!("no routes for {version}"));
        let p = r["paths"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == "router")
            .unwrap_or_else(|| panic!("no router path for {version}: {r}"));
        let sent = p["funnel"]["sent"].as_u64().unwrap();
        let to_docs = p["funnel"]["routes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["name"] == "docs")
            .map(|x| x["count"].as_u64().unwrap())
            .sum();
        (sent, to_docs)
    };
    let (sent, to_docs) = funnel("before");
    assert!(
        sent > 0 && to_docs * 2 < sent,
        "before: {to_docs} of {sent} to docs"
    );
    let (sent, to_docs) = funnel("after");
    assert!(
        sent > 0 && to_docs == sent,
        "after: {to_docs} of {sent} to docs"
    );
    // The concurrency wall on the chat path: before handles one request at
    // a time, after does not.
    let wall = |version: &str| -> String {
        analysis["concurrency"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| {
                w["scope"] == format!("code_version={version}")
                    && w["paths"]["kind"] == "one"
                    && w["paths"]["path"] == "chat"
            })
            .unwrap_or_else(|| panic!("no concurrency wall for {version} · chat"))["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(wall("before"), "one_at_a_time");
    assert_ne!(wall("after"), "one_at_a_time");

    let scoped = |key: &str, version: &str| -> Vec<serde_json::Value> {
        analysis[key]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["scope"] == format!("code_version={version}"))
            .cloned()
            .collect()
    };
    for version in ["before", "after"] {
        // Every request crosses the emulated cable link: a new connection's
        // set-up (TLS 1.3, one round trip of 25 ms) is measured directly,
        // its interval above zero, and about one RTT.
        for c in scoped("connection", version) {
            let setup = &c["setup"];
            assert_eq!(setup["direction"], "increase", "{version}: {c:#}");
            let ms = setup["estimate"]["point"].as_f64().unwrap();
            assert!((20.0..60.0).contains(&ms), "{version}: set-up {ms} ms");
        }
        // Providers: the first-token and throughput leaders, each separated
        // from the next one by its interval.
        let p = &scoped("providers", version)[0];
        for (key, direction) in [
            ("first_token_leader", "decrease"),
            ("throughput_leader", "increase"),
        ] {
            assert_eq!(p[key]["a"], "quickstart", "{version} {key}: {p:#}");
            assert_eq!(p[key]["direction"], direction, "{version} {key}: {p:#}");
        }
    }
    // "before"'s chat path is slower than its document path (the three
    // extra round trips), with an interval above zero.
    let routes = &scoped("routes", "before")[0];
    let chat_docs = routes["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["a"] == "chat" && c["b"] == "docs")
        .unwrap_or_else(|| panic!("chat against docs: {routes:#}"));
    assert_eq!(chat_docs["direction"], "increase", "{chat_docs:#}");
    // The cold start, in "before" only, beyond the warm requests on the
    // chat path.
    let cold = scoped("cold", "before");
    let chat = cold
        .iter()
        .find(|c| c["paths"]["kind"] == "one" && c["paths"]["path"] == "chat")
        .expect("a cold start on before · chat");
    assert_eq!(chat["probes"][0]["beyond_warm"], true, "{chat:#}");
    let network = text(&firsttoken(&["sessions", "--store", &store], &[]).stdout);
    assert!(network.contains("emulated:cable"), "{network}");

    // Issue 12, item 5: both apps export their own spans (the Rust
    // OpenTelemetry SDK) and the findings use them. Every app request is
    // joined; "before"'s chat overhead is its database calls (six spans:
    // auth's lookup, the conversation, three extra round trips, the stored
    // answer); its wall is requests waiting for the one worker.
    let traces = &json["analysis"]["traces"];
    for c in traces["coverage"].as_array().unwrap() {
        assert_eq!(c["requests"], c["traced"], "every request joined: {c}");
    }
    let before_chat = |key: &str| -> serde_json::Value {
        traces[key]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["scope"] == "code_version=before" && s["path"] == "chat")
            .unwrap_or_else(|| panic!("before · chat in traces.{key}: {traces:#}"))
            .clone()
    };
    let split = before_chat("splits");
    let db = split["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["group"] == "database")
        .unwrap_or_else(|| panic!("a database part: {split:#}"))
        .clone();
    assert_eq!(db["median_calls"], 6.0, "{db:#}");
    // The database explains the overhead: its median lies inside the
    // overhead's interval (over seeds 1–5: 204–218 ms inside [135–196 ms,
    // 222–274 ms]).
    let overhead = &split["overhead_median"]["estimate"]["ci"];
    let db_ms = db["median"]["point"].as_f64().unwrap();
    assert!(
        overhead["lower"].as_f64().unwrap() <= db_ms
            && db_ms <= overhead["upper"].as_f64().unwrap(),
        "the database explains before's chat overhead: {split:#}"
    );
    let wall = before_chat("walls");
    assert_eq!(wall["reason"], "waited_for_worker", "{wall:#}");
    assert!(
        t_flat.contains("before · chat: requests waited for the worker"),
        "{t}"
    );
    assert!(
        page.contains("id=\"spans\""),
        "no spans section in the page"
    );
}

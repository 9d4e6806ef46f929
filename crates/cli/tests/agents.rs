//! Issue 14: many vantage points, one store. Four agents — separate
//! `firsttoken run` processes on loopback, `--segment i/4`, distinct
//! `--vantage`, one PostgreSQL store, a shared `--start-at` 2 s ahead —
//! against the reference app: the merged run holds exactly the planned
//! requests, no agent releases the c=8 burst (2 per agent) before the
//! common start (how close together they release it is the `start_spread`
//! bench's figure, docs/PERFORMANCE.md), `report --run` pools the raw rows
//! (its percentiles are the union's) and breaks them down by vantage; an
//! agent killed mid-run leaves a `partial` run naming it, and rerunning its
//! segment completes the run without counting anything twice. The same run over verify-full TLS to the store.
//!
//! These are the commands of docs/DISTRIBUTED.md ("One machine, four
//! agents"). Skipped loudly without `DATABASE_URL` (and, for TLS, without
//! `FIRSTTOKEN_TEST_PG_CA`, which `.ci/run` exports).

mod common;

use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant};

use common::agents::{
    Schema, agent_args, agent_on, finish, start_in, with_client, world, write_config,
};
use common::{assert_code, firsttoken, text};

/// One group of agents at a time: four agents, the app and the emulator
/// already share 2 cores; another test's agents beside them would stretch
/// every bound here for nothing.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Per sample of the run: (vantage, segment, phase, warm-up, ok, ttft, started_at).
type Row = (String, i64, String, bool, bool, Option<f64>, String);

fn run_rows(store_url: &str, run: &str) -> Vec<Row> {
    with_client(store_url, async |c| {
        c.query(
            "SELECT s.vantage, r.segment_index, p.phase, p.warmup, p.error_kind IS NULL,
                    p.ttft_ms, p.started_at
             FROM samples p JOIN sessions s ON s.id = p.session_id
             JOIN run_sessions r ON r.session_id = p.session_id
             WHERE r.run_id = $1",
            &[&run],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                r.get(2),
                r.get(3),
                r.get(4),
                r.get(5),
                r.get(6),
            )
        })
        .collect()
    })
}

/// The report's percentile (firsttoken's one definition) of the union of rows.
fn percentile(v: &[f64], p: f64) -> f64 {
    firsttoken_record::percentile(v, p).expect("rows to take a percentile of")
}

/// `report --run RUN --group-by KEYS --format json`, checked against the
/// published schema (its `run` object included).
fn run_report_json(store: &str, run: &str, group_by: &str) -> serde_json::Value {
    let v = common::report_json(store, &["--run", run, "--group-by", group_by]);
    // Every run report is valid against the published schema, `run` included.
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/schema/report.v1.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(v["run"]["run_id"], run, "the run object names its run");
    v
}

fn point(stat: &serde_json::Value) -> Option<f64> {
    stat["point"]
        .as_f64()
        .or_else(|| stat["estimate"]["point"].as_f64())
}

/// Four agents, one run, on the store at `store` (whose plain-text twin
/// `plain` the test reads directly), checked whole: every check holds on
/// every run. How close together the agents release the burst (issue 14
/// asks for 5 ms) is a figure for the `start_spread` bench, not a bound
/// for a shared 2-core machine, where four agents, the app, the emulator
/// and the store wake at the same instant.
fn four_agents(store: &str, plain: &str) -> String {
    let run = "four-agents";
    let (spread, began) = four_agents_once(store, plain, run);
    eprintln!("run {run}: the agents released the burst over {spread:.3} ms: {began:?}");
    run.to_string()
}

/// One four-agent run under `run`, every check; returns the spread of
/// the agents' releases (ms) and each agent's release time.
fn four_agents_once(store: &str, plain: &str, run: &str) -> (f64, Vec<f64>) {
    let w = world();
    let app = w.app.base.clone();
    let cfg = write_config(&w, &app, 24);
    let start = start_in(2.0);
    let agents: Vec<Child> = (0..4)
        .map(|i| agent_on(None, &cfg, store, run, i, Some(&start), &w.app_db))
        .collect();
    for (i, a) in agents.into_iter().enumerate() {
        let (code, out) = finish(a);
        assert_eq!(code, Some(0), "agent {i}:\n{out}");
    }

    // Exactly the planned requests: 8 in the burst, 24 arrivals.
    let rows = run_rows(plain, run);
    let measured: Vec<&Row> = rows.iter().filter(|r| !r.3).collect();
    assert_eq!(measured.len(), 32, "{rows:?}");
    let mut per_agent: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &measured {
        *per_agent.entry(r.0.as_str()).or_default() += 1;
    }
    assert_eq!(
        per_agent.values().copied().collect::<Vec<_>>(),
        vec![8; 4],
        "{per_agent:?}"
    );

    // The burst of 8, 2 per agent. Ordering, which holds on every run:
    // no agent released it before the common start (an agent that ignored
    // `--start-at` would have, by the 2 s lead), and no request started
    // before it. Bounds, generous: every release and every request's start
    // within `LATE_MS` of the start (an agent that waited for the wrong
    // instant, e.g. a clock offset applied twice, would be seconds off).
    // The spread itself is the `start_spread` bench's figure.
    const LATE_MS: f64 = 500.0;
    let began: Vec<f64> = with_client(plain, async |c| {
        c.query(
            "SELECT began_at_ms FROM run_sessions WHERE run_id = $1",
            &[&run],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<_, f64>(0))
        .collect()
    });
    assert_eq!(began.len(), 4);
    let at = start
        .parse::<firsttoken_record::UtcTime>()
        .unwrap()
        .unix_ms();
    // `began_at_ms` is the agent's wall clock plus its offset to the
    // store's, where the agent waited for the start minus that offset, on
    // a monotonic sleep: 1 ms allows for the wall clock slewed (at most
    // 500 ppm) during the 2 s wait.
    assert!(
        began
            .iter()
            .all(|&b| b >= at as f64 - 1.0 && b - at as f64 <= LATE_MS),
        "releases {began:?} against the start {at} (+{LATE_MS} ms at most)"
    );
    let spread = began.iter().copied().fold(f64::MIN, f64::max)
        - began.iter().copied().fold(f64::MAX, f64::min);
    let burst: Vec<&Row> = measured
        .iter()
        .copied()
        .filter(|r| r.2 == "concurrency")
        .collect();
    assert_eq!(burst.len(), 8);
    // A request's `started_at` is its agent's wall clock, to the
    // millisecond (truncated); the start is the store's clock. On the
    // store's clock (plus the agent's measured offset to it) a request
    // starts no earlier than the start, less the 1 ms of slew allowed
    // above and the 1 ms the stored time can lie below the instant.
    let offsets: BTreeMap<String, f64> = with_client(plain, async |c| {
        c.query(
            "SELECT s.vantage, r.clock_offset_ms FROM run_sessions r
             JOIN sessions s ON s.id = r.session_id WHERE r.run_id = $1",
            &[&run],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get::<_, Option<f64>>(1).unwrap_or(0.0)))
        .collect()
    });
    let starts: Vec<f64> = burst
        .iter()
        .map(|r| {
            let local = r.6.parse::<firsttoken_record::UtcTime>().unwrap().unix_ms() as f64;
            local + offsets[&r.0]
        })
        .collect();
    assert!(
        starts
            .iter()
            .all(|&s| s >= at as f64 - 2.0 && s - at as f64 <= LATE_MS),
        "the burst's requests started at {starts:?} (store clock), the start is {start}: {burst:?}, offsets {offsets:?}"
    );

    // `runs`: the run, complete, with its four agents and its count.
    let listed = firsttoken(&["runs", "--store", store], &[]);
    assert_code(&listed, 0);
    let t = text(&listed.stdout);
    assert!(
        t.contains(run) && t.contains("complete") && t.contains("32 of 32"),
        "{t}"
    );
    assert!((0..4).all(|i| t.contains(&format!("agent-{i}"))), "{t}");

    // `report --run`: the head states the start spread; the pooled
    // percentiles are the union's; one row per vantage.
    let out = firsttoken(
        &[
            "report",
            "--store",
            store,
            "--run",
            run,
            "--group-by",
            "vantage",
        ],
        &[],
    );
    assert_code(&out, 0);
    let head = text(&out.stdout);
    assert!(
        head.contains(&format!(
            "run {run} · complete · 32 of 32 planned requests stored"
        )),
        "{head}"
    );
    assert!(head.contains("start spread across 4 segments:"), "{head}");
    assert!(!head.contains("no concurrency verdict"), "{head}");
    let ttft = |pick: &dyn Fn(&Row) -> bool| -> Vec<f64> {
        measured
            .iter()
            .filter(|r| r.4 && r.2 != "ping" && pick(r))
            .filter_map(|r| r.5)
            .collect()
    };
    // Grouped by provenance alone, every phase (and level) is still a row
    // of its own (phases never pool, issue 24): each row's percentiles are
    // the union of the agents' rows of that phase.
    let phase_of = |g: &serde_json::Value| g["label"]["phase"].as_str().unwrap().to_string();
    let pooled = run_report_json(store, run, "provenance");
    let groups = pooled["analysis"]["groups"].as_array().unwrap();
    let mut phases: Vec<String> = measured
        .iter()
        .filter(|r| r.4 && r.2 != "ping")
        .map(|r| r.2.clone())
        .collect();
    phases.sort();
    phases.dedup();
    assert_eq!(groups.len(), phases.len(), "one row per phase: {groups:?}");
    for g in groups {
        let phase = phase_of(g);
        let all = ttft(&|r| r.2 == phase);
        let p50 = point(&g["pooled"]["p50"]).expect("a pooled p50");
        assert!(
            (p50 - percentile(&all, 50.0)).abs() < 1e-9,
            "{phase}: {p50} vs the union's"
        );
        if let Some(p90) = point(&g["pooled"]["p90"]) {
            assert!(
                (p90 - percentile(&all, 90.0)).abs() < 1e-9,
                "{phase}: {p90} vs the union's"
            );
        }
    }
    let by_vantage = run_report_json(store, run, "vantage");
    let groups = by_vantage["analysis"]["groups"].as_array().unwrap();
    assert_eq!(
        groups.len(),
        4 * phases.len(),
        "one row per vantage and phase"
    );
    for g in groups {
        let label = g["label"].to_string();
        let v = (0..4)
            .map(|i| format!("agent-{i}"))
            .find(|v| label.contains(v.as_str()));
        let v = v.unwrap_or_else(|| panic!("a vantage in {label}"));
        let phase = phase_of(g);
        let mine = ttft(&|r| r.0 == v && r.2 == phase);
        assert_eq!(
            g["pooled"]["n"].as_u64(),
            Some(mine.len() as u64),
            "{label}"
        );
        let p50 = point(&g["pooled"]["p50"]).expect("a p50 per vantage");
        assert!((p50 - percentile(&mine, 50.0)).abs() < 1e-9, "{label}");
    }
    (spread, began)
}

#[test]
fn four_agents_one_run_on_postgres() {
    let _serial = serial();
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("SKIPPED: DATABASE_URL not set (four agents, one PostgreSQL store)");
        return;
    };
    let schema = Schema::new(&url, "plain");
    let run = four_agents(&schema.url, &schema.url);
    // Had one agent's clock been known only to ± 25 ms, the report would
    // give no concurrency verdict across agents.
    let store = schema.url.as_str();
    let before = run_report_json(store, &run, "vantage");
    assert!(
        !before["analysis"]["concurrency"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    with_client(store, async |c| {
        c.execute(
            "UPDATE run_sessions SET clock_uncertainty_ms = 25 WHERE run_id = $1 AND segment_index = 3",
            &[&run],
        )
        .await
        .unwrap()
    });
    let out = firsttoken(&["report", "--store", store, "--run", &run], &[]);
    assert_code(&out, 0);
    // The run's head is a section of the report, wrapped to its width.
    let t = text(&out.stdout);
    let words = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("no concurrency verdict across agents: an agent's clock is known only to ± 25 ms, above the 20 ms limit"), "{t}");
    let after = run_report_json(store, &run, "vantage");
    assert!(
        after["analysis"]["concurrency"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn four_agents_one_run_over_verify_full_tls() {
    let _serial = serial();
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("SKIPPED: DATABASE_URL not set (four agents over TLS)");
        return;
    };
    let Ok(ca) = std::env::var("FIRSTTOKEN_TEST_PG_CA") else {
        eprintln!(
            "SKIPPED: FIRSTTOKEN_TEST_PG_CA not set (.ci/run exports it): four agents over TLS"
        );
        return;
    };
    let schema = Schema::new(&url, "tls");
    let tls = format!("{}&sslmode=verify-full&sslrootcert={ca}", schema.url);
    four_agents(&tls, &schema.url);
    // A wrong CA is refused: the agents really checked the certificate.
    let bad = format!(
        "{}&sslmode=verify-full&sslrootcert=/nonexistent/ca.crt",
        schema.url
    );
    let out = firsttoken(&["runs", "--store", &bad], &[]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn a_killed_agent_leaves_a_partial_run_and_its_rerun_completes_it() {
    let _serial = serial();
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("SKIPPED: DATABASE_URL not set (a killed agent)");
        return;
    };
    let schema = Schema::new(&url, "kill");
    let store = schema.url.as_str();
    let w = world();
    let app = w.app.base.clone();
    // 8 in the burst, 80 arrivals over 4 s: 22 requests per agent.
    let cfg = write_config(&w, &app, 80);
    let run = "kill-one";
    let start = start_in(2.0);
    // Agent 2 runs on "another host": no agent here can see its process.
    let mut agents: Vec<Child> = (0..4)
        .map(|i| match i {
            2 => agent_on(
                Some("agent-host-2"),
                &cfg,
                store,
                run,
                i,
                Some(&start),
                &w.app_db,
            ),
            _ => agent_on(None, &cfg, store, run, i, Some(&start), &w.app_db),
        })
        .collect();
    // Kill agent 2 (SIGKILL) mid-run: once its share of the burst and its
    // first arrival are stored (the burst step ends before the arrivals
    // begin), with most of its 20 arrivals, 4 s of them, still to send.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (burst, arrivals): (i64, i64) = with_client(store, async |c| {
            c.query_one(
                "SELECT count(*) FILTER (WHERE p.phase = 'concurrency'),
                            count(*) FILTER (WHERE p.phase = 'rate')
                     FROM samples p JOIN sessions s ON s.id = p.session_id
                     JOIN run_sessions r ON r.session_id = p.session_id
                     WHERE r.run_id = $1 AND s.host = 'agent-host-2' AND NOT p.warmup",
                &[&run],
            )
            .await
            // Before the first agent created the tables: nothing stored yet.
            .map_or((0, 0), |r| (r.get(0), r.get(1)))
        });
        if burst == 2 && arrivals >= 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "agent 2 stored {burst} of its burst and {arrivals} arrivals within 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut killed = agents.remove(2);
    killed.kill().unwrap();
    killed.wait().unwrap();
    for a in agents {
        let (code, out) = finish(a);
        assert_eq!(code, Some(0), "{out}");
    }
    // Its session still reads running (no one here could see it die)
    // until its heartbeat is 4 beats late; then the run reads partial.
    let deadline = Instant::now() + Duration::from_secs(20);
    let t = loop {
        let listed = firsttoken(&["runs", "--store", store], &[]);
        assert_code(&listed, 0);
        let t = text(&listed.stdout);
        if !t.contains("running") || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        t.contains("partial: segment 2/4 missing (agent agent-2@agent-host-2, silent for"),
        "{t}"
    );
    eprintln!("runs, with agent 2 killed on another host:\n{t}");
    let status = |reason: bool| {
        with_client(store, async |c| {
            let row = c
                .query_one(
                    "SELECT s.status, coalesce(s.status_reason, '') FROM sessions s
                     JOIN run_sessions r ON r.session_id = s.id
                     WHERE r.run_id = $1 AND s.host = 'agent-host-2'",
                    &[&run],
                )
                .await
                .unwrap();
            let (st, why): (String, String) = (row.get(0), row.get(1));
            if reason { format!("{st}: {why}") } else { st }
        })
    };
    assert_eq!(status(false), "running", "only its heartbeat tells");
    let stored_before = run_rows(store, run).iter().filter(|r| !r.3).count();
    assert!(
        stored_before < 88,
        "the killed agent stored all its share? {stored_before}"
    );

    // The same segment again, with the same run id: a new session of the
    // run that sends only what was not stored (the burst was), no start given.
    let rerun = agent_on(None, &cfg, store, run, 2, None, &w.app_db);
    let (code, out) = finish(rerun);
    assert_eq!(code, Some(0), "{out}");
    let marked = status(true);
    assert!(
        marked.starts_with("partial: agent silent: no heartbeat for"),
        "the rerun marks the silent agent's session: {marked}"
    );
    let listed = firsttoken(&["runs", "--store", store], &[]);
    let t = text(&listed.stdout);
    assert!(t.contains("complete") && t.contains("88 of 88"), "{t}");
    let rows = run_rows(store, run);
    let seg2_burst = rows
        .iter()
        .filter(|r| r.1 == 2 && r.2 == "concurrency" && !r.3)
        .count();
    assert_eq!(
        seg2_burst, 2,
        "the burst, stored before the kill, was not sent again"
    );
    let out = firsttoken(&["report", "--store", store, "--run", run], &[]);
    assert_code(&out, 0);
    let t = text(&out.stdout);
    assert!(
        t.contains("complete · 88 of 88 planned requests stored"),
        "{t}"
    );
    // Counted once: the union of stored rows is larger than what the report pools.
    let pooled = run_report_json(store, run, "provenance");
    let n: u64 = pooled["analysis"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["pooled"]["requests"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(n, 88, "{}", pooled["analysis"]["groups"]);
    let head = &pooled["run"];
    assert_eq!(head["state"]["state"], "complete", "{head}");
    assert_eq!(head["counted_requests"], 88, "{head}");
    assert_eq!(head["members"].as_array().map(Vec::len), Some(5), "{head}");
    let stored_now = rows.iter().filter(|r| !r.3).count();
    assert!(
        stored_now > 88,
        "the killed session's arrivals were sent again: {stored_now}"
    );
}

/// docs/DISTRIBUTED.md's loopback walkthrough runs the commands above: the
/// agents' command line, `runs`, `report --run` and the rerun of a segment.
#[test]
fn the_walkthrough_shows_the_commands_these_tests_run() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/DISTRIBUTED.md"
    ))
    .expect("docs/DISTRIBUTED.md");
    let line = |args: Vec<String>| format!("firsttoken {}", args.join(" "));
    let wanted = [
        line(agent_args(
            "ft.toml",
            "\"$STORE\"",
            "four-agents",
            "$i",
            Some("\"$START\""),
        )),
        line(agent_args("ft.toml", "\"$STORE\"", "kill-one", "2", None)),
        "firsttoken runs --store \"$STORE\"".to_string(),
        "firsttoken report --store \"$STORE\" --run four-agents --group-by vantage".to_string(),
    ];
    for w in wanted {
        assert!(doc.contains(&w), "docs/DISTRIBUTED.md lacks `{w}`");
    }
    // The config shown is the one the tests write.
    for part in [
        "concurrency = { levels = [8], requests = 8 }",
        "seed = 14",
        "accounts = 1",
    ] {
        assert!(doc.contains(part), "docs/DISTRIBUTED.md lacks `{part}`");
    }
}

//! Issue 14: many vantage points, one store. Four agents — separate
//! `firsttoken run` processes on loopback, `--segment i/4`, distinct
//! `--vantage`, one PostgreSQL store, a shared `--start-at` 2 s ahead —
//! against the reference app: the merged run holds exactly the planned
//! requests, the c=8 burst (2 per agent) starts within 5 ms across agents,
//! `report --run` pools the raw rows (its percentiles are the union's) and
//! breaks them down by vantage; an agent killed mid-run leaves a `partial`
//! run naming it, and rerunning its segment completes the run without
//! counting anything twice. The same run over verify-full TLS to the store.
//!
//! These are the commands of docs/DISTRIBUTED.md ("One machine, four
//! agents"). Skipped loudly without `DATABASE_URL` (and, for TLS, without
//! `FIRSTTOKEN_TEST_PG_CA`, which `.ci/run` exports).

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::{EmulatorProcess, assert_code, firsttoken, text};

/// One group of agents at a time: the start-spread bound is about the
/// agents' clocks and wake-ups, not about sharing 2 cores with another test's agents.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The reference app over the emulator, with its own SQLite database.
struct World {
    _emu: EmulatorProcess,
    _app: EmulatorProcess,
    dir: tempfile::TempDir,
    app_db: String,
}

fn world() -> World {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let app_db = dir.path().join("app.db").display().to_string();
    let upstream = format!("{}/v1", emu.base);
    let app = EmulatorProcess::start_with(&[
        "refapp",
        "--listen",
        "127.0.0.1:0",
        "--database-url",
        &app_db,
        "--upstream-url",
        &upstream,
    ]);
    let w = World {
        _emu: emu,
        _app: app,
        dir,
        app_db,
    };
    let _ = &w.app_db;
    w
}

/// The run's config: one burst of 8, then `rate` open-loop arrivals at
/// 20 per second; one test account per agent, deleted by that agent.
fn write_config(w: &World, app: &str, rate: u32) -> String {
    let cfg = format!(
        r#"
[session]
network = "loopback"
emulated = true
seed = 14

[app]
base_url = "{app}"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'

[app.auth]
signup_path = "/api/auth/signup"
body = '{{"email": "{{email}}", "password": "{{password}}"}}'
token_pointer = "/token"
id_pointer = "/user_id"
accounts = 1

[app.cleanup]
database_url_env = "FT_TEST_APP_DB"
delete_sql = "DELETE FROM users WHERE id IN ({{ids}})"
count_sql = "SELECT count(*) FROM users WHERE id IN ({{ids}})"

[ping]
url = "{app}/health"

[prompts]
list = ["hello", "what is a token?"]

[phases]
concurrency = {{ levels = [8], requests = 8 }}
rate = {{ per_second = 20, requests = {rate} }}
"#
    );
    let p = w.dir.path().join(format!("ft-{rate}.toml"));
    std::fs::write(&p, cfg).unwrap();
    p.display().to_string()
}

/// A schema of its own in the test database, dropped at the end.
struct Schema {
    admin: String,
    name: String,
    /// `admin` with `search_path` set to the schema.
    url: String,
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn with_client<T>(url: &str, f: impl AsyncFnOnce(&tokio_postgres::Client) -> T) -> T {
    block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to DATABASE_URL");
        tokio::spawn(conn);
        f(&client).await
    })
}

impl Schema {
    fn new(admin: &str, tag: &str) -> Schema {
        let name = format!("ft_agents_{tag}_{}", std::process::id());
        with_client(admin, async |c| {
            c.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .await
            .unwrap()
        });
        let sep = if admin.contains('?') { '&' } else { '?' };
        Schema {
            url: format!("{admin}{sep}options=-c%20search_path%3D{name}"),
            admin: admin.to_string(),
            name,
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        with_client(&self.admin, async |c| {
            let _ = c.batch_execute(&sql).await;
        });
    }
}

/// The arguments of agent `seg` of 4 (`--start-at` when given): the
/// command docs/DISTRIBUTED.md shows, checked by
/// `the_walkthrough_shows_the_commands_these_tests_run`.
fn agent_args(cfg: &str, store: &str, run: &str, seg: &str, start_at: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "-c",
        cfg,
        "--store",
        store,
        "--run-id",
        run,
        "--segment",
        &format!("{seg}/4"),
        "--vantage",
        &format!("agent-{seg}"),
        "--quiet",
    ]
    .map(String::from)
    .to_vec();
    if let Some(at) = start_at {
        args.extend(["--start-at".to_string(), at.to_string()]);
    }
    args
}

/// An agent: `firsttoken run` as its own process; on `host` (`Some`), in a
/// UTS namespace of its own with that host name (`unshare -u`) and a
/// heartbeat every 250 ms, so no process on this host can see it die and
/// only its heartbeat tells.
fn agent_on(
    host: Option<&str>,
    cfg: &str,
    store: &str,
    run: &str,
    seg: u32,
    start_at: Option<&str>,
    app_db: &str,
) -> Child {
    let args = agent_args(cfg, store, run, &seg.to_string(), start_at);
    let mut cmd = match host {
        None => Command::new(env!("CARGO_BIN_EXE_firsttoken")),
        Some(host) => {
            let probe = Command::new("unshare").args(["-u", "true"]).status();
            assert!(
                probe.is_ok_and(|s| s.success()),
                "`unshare -u` (util-linux, run as root) is needed to run an agent under another host name"
            );
            let mut c = Command::new("unshare");
            c.args(["-u", "sh", "-c", r#"hostname "$0" && exec "$@""#, host])
                .arg(env!("CARGO_BIN_EXE_firsttoken"));
            c
        }
    };
    cmd.args(&args);
    if host.is_some() {
        cmd.args(["--heartbeat", "250ms"]);
    }
    cmd.env("FT_TEST_APP_DB", app_db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start an agent")
}

/// Wait for an agent with a deadline; its exit code and output.
fn finish(mut c: Child) -> (Option<i32>, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while c.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "an agent ran past 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = c.wait_with_output().unwrap();
    (
        out.status.code(),
        format!("{}{}", text(&out.stdout), text(&out.stderr)),
    )
}

/// RFC 3339 UTC `secs` from now, to the millisecond.
fn start_in(secs: f64) -> String {
    let t = SystemTime::now() + Duration::from_secs_f64(secs);
    let ms = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    firsttoken_record::UtcTime::from_unix_ms(ms).to_string()
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
/// `plain` the test reads directly).
/// The four-agent run, checked whole; returns the id of the run that met
/// the start-spread bound. That bound (5 ms) is a timing bound on a
/// shared 2-core machine, where four agents, the app, the emulator and the
/// store wake at the same instant: a run that misses it is run once more
/// under a new id, and the test fails if that one misses it too. Every
/// other check holds on every run.
fn four_agents(store: &str, plain: &str) -> String {
    for run in ["four-agents", "four-agents-again"] {
        let (spread, began) = four_agents_once(store, plain, run);
        if spread <= 5.0 {
            return run.to_string();
        }
        eprintln!("run {run}: the agents released the burst over {spread} ms: {began:?}");
    }
    panic!("the agents released the burst over more than 5 ms in two runs (above)");
}

/// One four-agent run under `run`: every check but the start-spread bound;
/// returns the spread (ms) and each agent's release time.
fn four_agents_once(store: &str, plain: &str, run: &str) -> (f64, Vec<f64>) {
    let w = world();
    let app = w._app.base.clone();
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

    // The burst of 8, 2 per agent: the agents released it within 5 ms of
    // each other (each agent's release, on the store's clock), and no
    // request started before the common start.
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
    let spread = began.iter().copied().fold(f64::MIN, f64::max)
        - began.iter().copied().fold(f64::MAX, f64::min);
    let burst: Vec<&Row> = measured
        .iter()
        .copied()
        .filter(|r| r.2 == "concurrency")
        .collect();
    assert_eq!(burst.len(), 8);
    let starts: Vec<i64> = burst
        .iter()
        .map(|r| r.6.parse::<firsttoken_record::UtcTime>().unwrap().unix_ms())
        .collect();
    let at = start
        .parse::<firsttoken_record::UtcTime>()
        .unwrap()
        .unix_ms();
    assert!(
        starts.iter().all(|&s| s >= at),
        "a request started before {start}: {starts:?}"
    );
    // The requests' own start stamps (whole ms) add each agent's time to
    // get 8 requests onto 2 cores: a generous bound here, the release above
    // is what the common start controls.
    let stamps = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    assert!(
        stamps <= 15,
        "the burst's requests started over {stamps} ms: {burst:?}"
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
    let pooled = run_report_json(store, run, "provenance");
    let groups = pooled["analysis"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let all = ttft(&|_| true);
    let p50 = point(&groups[0]["pooled"]["p50"]).expect("a pooled p50");
    let p90 = point(&groups[0]["pooled"]["p90"]).expect("a pooled p90");
    assert!(
        (p50 - percentile(&all, 50.0)).abs() < 1e-9,
        "{p50} vs the union's"
    );
    assert!(
        (p90 - percentile(&all, 90.0)).abs() < 1e-9,
        "{p90} vs the union's"
    );
    let by_vantage = run_report_json(store, run, "vantage");
    let groups = by_vantage["analysis"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 4, "one row per vantage");
    for g in groups {
        let label = g["label"].to_string();
        let v = (0..4)
            .map(|i| format!("agent-{i}"))
            .find(|v| label.contains(v.as_str()));
        let v = v.unwrap_or_else(|| panic!("a vantage in {label}"));
        let mine = ttft(&|r| r.0 == v);
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
    let app = w._app.base.clone();
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
    // Kill agent 2 (SIGKILL) a second and a half into the run.
    let at = start
        .parse::<firsttoken_record::UtcTime>()
        .unwrap()
        .unix_ms();
    loop {
        let now = firsttoken_record::UtcTime::now().unix_ms();
        if now >= at + 1500 {
            break;
        }
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

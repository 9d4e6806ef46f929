//! Four agents on one machine (issue 14), shared by `tests/agents.rs`
//! and the `start_spread` bench: the reference app over the emulator, the
//! agents' config and command line, a PostgreSQL schema of their own.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use super::{EmulatorProcess, text};

/// The reference app over the emulator, with its own SQLite database.
pub struct World {
    /// Held for the emulator's lifetime.
    pub emu: EmulatorProcess,
    pub app: EmulatorProcess,
    pub dir: tempfile::TempDir,
    pub app_db: String,
}

pub fn world() -> World {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let app_db = dir.path().join("app.db").display().to_string();
    let app = EmulatorProcess::refapp(&emu, &app_db, &[]);
    World {
        emu,
        app,
        dir,
        app_db,
    }
}

/// The run's config: one burst of 8, then `rate` open-loop arrivals at
/// 20 per second; one test account per agent, deleted by that agent.
pub fn write_config(w: &World, app: &str, rate: u32) -> String {
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
pub struct Schema {
    admin: String,
    name: String,
    /// `admin` with `search_path` set to the schema.
    pub url: String,
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

pub fn with_client<T>(url: &str, f: impl AsyncFnOnce(&tokio_postgres::Client) -> T) -> T {
    block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to DATABASE_URL");
        tokio::spawn(conn);
        f(&client).await
    })
}

impl Schema {
    pub fn new(admin: &str, tag: &str) -> Schema {
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
pub fn agent_args(
    cfg: &str,
    store: &str,
    run: &str,
    seg: &str,
    start_at: Option<&str>,
) -> Vec<String> {
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
pub fn agent_on(
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
pub fn finish(mut c: Child) -> (Option<i32>, String) {
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
pub fn start_in(secs: f64) -> String {
    let t = SystemTime::now() + Duration::from_secs_f64(secs);
    let ms = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    firsttoken_record::UtcTime::from_unix_ms(ms).to_string()
}

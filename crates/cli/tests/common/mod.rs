//! Shared helpers for the CLI tests: the emulator as a child process, running
//! `firsttoken` with a deadline, exit-code assertions.
#![allow(dead_code)]

pub mod agents;
pub mod edge;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest any one command may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// `firsttoken emulate` as a child process, killed when dropped (also when a test panics).
pub struct EmulatorProcess {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl EmulatorProcess {
    pub fn start() -> EmulatorProcess {
        EmulatorProcess::start_with(&[
            "emulate",
            "--listen",
            "127.0.0.1:0",
            "--ttft-ms",
            "30",
            "--itl-ms",
            "2",
            "--tokens",
            "4",
        ])
    }

    /// Any `firsttoken` server subcommand that prints `listening on URL` first.
    pub fn start_with(args: &[&str]) -> EmulatorProcess {
        EmulatorProcess::start_with_env(args, &[])
    }

    /// [`EmulatorProcess::start_with`] with `env` set for the server.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> EmulatorProcess {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_firsttoken"))
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start firsttoken emulate");
        let mut guard = EmulatorProcess {
            child,
            base: String::new(),
        };
        let first = first_line(&mut guard.child, Duration::from_secs(30))
            .expect("the emulator prints its address within 30 s");
        guard.base = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_string();
        assert!(guard.base.starts_with("http://127.0.0.1:"), "{first}");
        guard
    }

    pub fn url(&self) -> String {
        format!("{}/v1/chat/completions", self.base)
    }

    /// `firsttoken refapp` on 127.0.0.1 over the emulator `emu`, its
    /// database at `app_db`, with `extra` flags.
    pub fn refapp(emu: &EmulatorProcess, app_db: &str, extra: &[&str]) -> EmulatorProcess {
        let upstream = format!("{}/v1", emu.base);
        let mut args = vec![
            "refapp",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            app_db,
            "--upstream-url",
            &upstream,
        ];
        args.extend_from_slice(extra);
        EmulatorProcess::start_with(&args)
    }
}

impl Drop for EmulatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first line `child` prints on its piped stdout, waiting at most
/// `within`; the rest is drained on a thread so the child never blocks on
/// a full pipe. `None` when nothing came in time.
pub fn first_line(child: &mut Child, within: Duration) -> Option<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = tx.send(first);
        }
        for _ in lines {}
    });
    rx.recv_timeout(within).ok()
}

/// The python of the wire fixtures' venv (`.ci/run` creates it from
/// `tests/fixtures/wire.requirements.txt` and names it in
/// `FIRSTTOKEN_TEST_WIRE_PYTHON`), or `None`, after saying why, when
/// `test` must skip: only outside CI (`CI` set: it never skips).
pub fn wire_python(test: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var("FIRSTTOKEN_TEST_WIRE_PYTHON")
        .ok()
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_file());
    if found.is_none() {
        let why = "FIRSTTOKEN_TEST_WIRE_PYTHON does not name the wire fixtures' venv python \
                   (.ci/run creates it: python3 -m venv, pip install -r \
                   crates/cli/tests/fixtures/wire.requirements.txt)";
        assert!(
            std::env::var_os("CI").is_none(),
            "in CI this test never skips: {why}"
        );
        eprintln!("SKIPPED {test}: {why}");
    }
    found
}

/// llama.cpp's `llama-server` and the tiny GGUF model (`.ci/run` builds
/// the one with `.ci/llama-server` and writes the other with
/// `tests/fixtures/llama/make_model.py`, and names them in
/// `FIRSTTOKEN_TEST_LLAMA_SERVER` and `FIRSTTOKEN_TEST_LLAMA_MODEL`), or
/// `None`, after saying why, when `test` must skip: only outside CI (`CI`
/// set: it never skips).
pub fn llama_server(test: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let file = |var: &str| {
        std::env::var(var)
            .ok()
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_file())
    };
    let found = file("FIRSTTOKEN_TEST_LLAMA_SERVER").zip(file("FIRSTTOKEN_TEST_LLAMA_MODEL"));
    if found.is_none() {
        let why = "FIRSTTOKEN_TEST_LLAMA_SERVER and FIRSTTOKEN_TEST_LLAMA_MODEL do not name \
                   llama-server and a GGUF model (.ci/run builds them: bash .ci/llama-server, \
                   python crates/cli/tests/fixtures/llama/make_model.py OUT.gguf)";
        assert!(
            std::env::var_os("CI").is_none(),
            "in CI this test never skips: {why}"
        );
        eprintln!("SKIPPED {test}: {why}");
    }
    found
}

/// Run `firsttoken ARGS…` with a deadline.
pub fn firsttoken(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = assert_cmd::Command::cargo_bin("firsttoken").expect("the firsttoken binary");
    cmd.args(args).timeout(COMMAND_TIMEOUT);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("firsttoken ran")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
pub fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// A config against the emulator at `base`; `warm` warm requests.
pub fn config(base: &str, warm: u32) -> String {
    format!(
        r#"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "{base}"

[[app.paths]]
name = "chat"
path = "/v1/chat/completions"
body = '{{"model":"m","stream":true,"messages":[{{"role":"user","content":"{{prompt}}"}}]}}'

[direct]
url = "{base}/v1/chat/completions"
model = "emulated-model"
[[direct.strategies]]
name = "default"
[[direct.strategies]]
name = "ignore-one"
extra = {{ provider = {{ ignore = ["quickstart"] }} }}

[ping]
url = "{base}/health"

[prompts]
list = ["hello", "what is a \"token\"?"]

[phases]
ping = 2
warm = {warm}
fresh = 2
direct = 2
concurrency = {{ levels = [1, 2], requests = 2 }}

[prices]
"emulated-model" = {{ input = 0.5, output = 1.5 }}
"#
    )
}

pub fn write_config(dir: &Path, base: &str, warm: u32) -> String {
    let p = dir.join("ft.toml");
    std::fs::write(&p, config(base, warm)).expect("write the config");
    p.display().to_string()
}

/// Session ids in the store, newest first, as `firsttoken sessions` lists them.
pub fn session_ids(store: &str) -> Vec<String> {
    let out = firsttoken(&["sessions", "--store", store], &[]);
    assert_code(&out, 0);
    // The table's rows only: the notes below it name partial sessions again.
    text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('│'))
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || c == '│' || c == '┆'))
        .filter(|w| w.len() > 16 && w.as_bytes()[8] == b'T' && w.contains("Z-"))
        .map(str::to_string)
        .collect()
}

/// The reference app's test accounts in a session config: sign-up, and
/// deletion by id through the database named by `FT_TEST_APP_DB`. The
/// `[app.auth]` table stays open: add `accounts = N` right after it.
pub const REFAPP_ACCOUNTS: &str = r#"[app.cleanup]
database_url_env = "FT_TEST_APP_DB"
delete_sql = "DELETE FROM users WHERE id IN ({ids})"
count_sql = "SELECT count(*) FROM users WHERE id IN ({ids})"

[app.auth]
signup_path = "/api/auth/signup"
body = '{"email": "{email}", "password": "{password}"}'
token_pointer = "/token"
id_pointer = "/user_id""#;

/// Note every message the app stores with its conversation's title (the
/// cleanup deletes the accounts, and with them their conversations).
pub fn audit(app_db: &str) {
    rusqlite::Connection::open(app_db)
        .unwrap()
        .execute_batch(
            "CREATE TABLE audit (conversation_id INTEGER, title TEXT);
             CREATE TRIGGER audit_messages AFTER INSERT ON messages BEGIN
               INSERT INTO audit SELECT NEW.conversation_id, c.title
               FROM conversations c WHERE c.id = NEW.conversation_id;
             END;",
        )
        .unwrap();
}

/// `firsttoken run -c DIR/ft.toml --store DIR/s.db --otlp-listen LISTEN
/// --run-id spans` with `config` written first (a run of one agent, so
/// `report --run spans` reads it too); the store and the finished command
/// (exit 0 and a spans line checked).
pub fn run_collecting_spans(
    dir: &Path,
    config: &str,
    listen: &str,
    env: &[(&str, &str)],
) -> (String, Output) {
    let cfg = dir.join("ft.toml");
    std::fs::write(&cfg, config).unwrap();
    let store = dir.join("s.db").display().to_string();
    let out = firsttoken(
        &[
            "run",
            "-c",
            cfg.to_str().unwrap(),
            "--store",
            &store,
            "--otlp-listen",
            listen,
            "--run-id",
            "spans",
        ],
        env,
    );
    assert_code(&out, 0);
    assert!(
        text(&out.stdout).contains("spans: "),
        "{}",
        text(&out.stdout)
    );
    (store, out)
}

/// `firsttoken report --store STORE --format json ARGS…`, parsed (exit 0
/// checked).
pub fn report_json(store: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["report", "--store", store, "--format", "json"];
    all.extend_from_slice(args);
    let report = firsttoken(&all, &[]);
    assert_code(&report, 0);
    serde_json::from_slice(&report.stdout).unwrap()
}

/// Assert that `report` (a `report --format json` document) is valid
/// against the published schema, docs/schema/report.v1.schema.json.
pub fn assert_report_schema(report: &serde_json::Value) {
    let schema: serde_json::Value = serde_json::from_str(include_str!(
        "../../../../docs/schema/report.v1.schema.json"
    ))
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// Wait until the store at `store` (a SQLite path or a `postgres://` URL)
/// holds at least `n` samples of a running session, while `child` (the
/// `firsttoken run` writing them) still runs; fails after 60 s or when the
/// child ended first. Read with a connection of its own, as another
/// process would: the child's store is never opened through firsttoken
/// here (an open marks a dead writer's session partial).
pub fn wait_for_samples(child: &mut Child, store: &str, n: i64) {
    const SQL: &str = "SELECT count(*) FROM samples p JOIN sessions s ON s.id = p.session_id
                       WHERE s.status = 'running'";
    let count = || -> i64 {
        if store.starts_with("postgres://") || store.starts_with("postgresql://") {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async {
                let Ok((c, conn)) = tokio_postgres::connect(store, tokio_postgres::NoTls).await
                else {
                    return 0;
                };
                tokio::spawn(conn);
                // Before the run created its tables: none yet.
                c.query_one(SQL, &[]).await.map_or(0, |r| r.get(0))
            })
        } else {
            let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
            rusqlite::Connection::open_with_flags(store, flags)
                .and_then(|c| c.query_row(SQL, [], |r| r.get(0)))
                .unwrap_or(0)
        }
    };
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    loop {
        let stored = count();
        if stored >= n {
            return;
        }
        if let Some(status) = child.try_wait().expect("wait for the run") {
            panic!("the run ended ({status}) with {stored} of {n} samples stored");
        }
        assert!(
            Instant::now() < deadline,
            "{stored} of {n} samples stored within {COMMAND_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The Chromium for browser tests (`.ci/run` installs Debian's, pinned,
/// and names it in `FIRSTTOKEN_TEST_CHROMIUM`), or `None`, after saying
/// why, when `test` must skip: only outside CI (`CI` set: it never skips).
pub fn chromium(test: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var("FIRSTTOKEN_TEST_CHROMIUM")
        .ok()
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_file());
    if found.is_none() {
        let why = "FIRSTTOKEN_TEST_CHROMIUM does not name a Chromium executable \
                   (.ci/run installs Debian's chromium and sets it)";
        assert!(
            std::env::var_os("CI").is_none(),
            "in CI this test never skips: {why}"
        );
        eprintln!("SKIPPED {test}: {why}");
    }
    found
}

/// Sign up one `@bench.invalid` user on the reference app at `base`
/// (`http://127.0.0.1:PORT`); its bearer token.
pub fn sign_up(base: &str) -> String {
    use std::io::{Read, Write};
    let addr = base.strip_prefix("http://").expect("http base");
    let body = format!(
        r#"{{"email":"browser-{}@bench.invalid","password":"password123"}}"#,
        std::process::id()
    );
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the app");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        s,
        "POST /api/auth/signup HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("sign-up response");
    let json = out.split("\r\n\r\n").nth(1).expect("a body");
    let v: serde_json::Value = serde_json::from_str(json.trim()).expect("JSON");
    v["token"].as_str().expect("a token").to_string()
}

/// The emulator (TTFT 150 ms, a token every 60 ms, 8 tokens: slower than
/// any render delay the browser tests use, so no token arrives while the
/// page renders the first), the reference app over it with `page` flags,
/// and a signed-up user.
pub struct ChatWorld {
    _emu: EmulatorProcess,
    /// The reference app.
    pub app: EmulatorProcess,
    _dir: tempfile::TempDir,
    /// The user's bearer token.
    pub token: String,
    /// The app's database (its users, for a session's cleanup).
    pub app_db: String,
}

/// The browser tests' emulator: TTFT 150 ms, a token every 60 ms, 8
/// tokens.
pub fn chat_emulator() -> EmulatorProcess {
    EmulatorProcess::start_with(&[
        "emulate",
        "--listen",
        "127.0.0.1:0",
        "--ttft-ms",
        "150",
        "--itl-ms",
        "60",
        "--tokens",
        "8",
    ])
}

/// A [`ChatWorld`] with the app started with `page` flags.
pub fn chat_world(page: &[&str]) -> ChatWorld {
    let emu = chat_emulator();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    let app = EmulatorProcess::refapp(&emu, db.to_str().unwrap(), page);
    let token = sign_up(&app.base);
    ChatWorld {
        _emu: emu,
        app,
        _dir: dir,
        token,
        app_db: db.display().to_string(),
    }
}

/// A Python fixture of tests/fixtures (`gradio_chat.py`,
/// `socketio_chat.py`, …) as a child process, killed when dropped.
pub struct PyFixture {
    child: std::process::Child,
    /// Where it listens, `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its port.
    pub port: u16,
}

impl Drop for PyFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PyFixture {
    /// Start `script` in `python` (the wire venv's) over the provider at
    /// `upstream`, with `extra` arguments; it says where it listens on its
    /// first line.
    pub fn start(
        python: &std::path::Path,
        script: &str,
        upstream: &str,
        extra: &[&str],
    ) -> PyFixture {
        let mut child = std::process::Command::new(python)
            .arg(format!(
                "{}/tests/fixtures/{script}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .args(["--listen", "127.0.0.1:0", "--upstream", upstream])
            .args(extra)
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("the venv's python starts the fixture");
        let first = first_line(&mut child, std::time::Duration::from_secs(60))
            .unwrap_or_else(|| panic!("{script} says where it listens within 60 s"));
        let port = first
            .strip_prefix("listening 127.0.0.1:")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"));
        PyFixture {
            child,
            base: format!("http://127.0.0.1:{port}"),
            port,
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `gradio_chat.py` (a Gradio `ChatInterface`), four jobs at once.
    pub fn gradio(python: &std::path::Path, upstream: &str) -> PyFixture {
        PyFixture::start(
            python,
            "gradio_chat.py",
            upstream,
            &["--concurrency-limit", "4"],
        )
    }
}

/// A session config measuring Gradio's HTTP API at `base` as a flow
/// (`POST /gradio_api/call/chat`, then its stream, timed from the POST),
/// `warm` requests.
pub fn gradio_flow_config(base: &str, warm: u32) -> String {
    format!(
        r#"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "{base}"

[[app.paths]]
name = "gradio"
method = "GET"
path = "/gradio_api/call/chat/{{event_id}}"
body = ""
format = "sse-json:/0"

[[app.paths.steps]]
name = "call"
path = "/gradio_api/call/chat"
body = '{{"data": ["{{prompt}}"]}}'
capture = {{ event_id = "/event_id" }}

[prompts]
list = ["hello gradio"]

[phases]
warm = {warm}
fresh = 0
"#
    )
}

/// A session config whose one path makes the calls Gradio's own page makes
/// for a `ChatInterface` message (tests/fixtures/WIRE-NOTES.md: the page's
/// two `run/predict` calls, then `queue/join`, then the session's
/// `queue/data` stream, read as format `gradio`), with session hash `hash`,
/// `warm` requests.
pub fn gradio_page_flow_config(base: &str, warm: u32, hash: &str) -> String {
    format!(
        r#"
[session]
network = "loopback-test"
emulated = true

[app]
base_url = "{base}"

[[app.paths]]
name = "gradio-page"
method = "GET"
path = "/gradio_api/queue/data?session_hash={hash}"
body = ""
format = "gradio"

[[app.paths.steps]]
name = "clear"
path = "/gradio_api/run/predict"
body = '{{"data":["{{prompt}}"],"event_data":null,"fn_index":0,"trigger_id":10,"session_hash":"{hash}"}}'

[[app.paths.steps]]
name = "append"
path = "/gradio_api/run/predict"
body = '{{"data":[null,[]],"event_data":null,"fn_index":1,"trigger_id":10,"session_hash":"{hash}"}}'

[[app.paths.steps]]
name = "join"
path = "/gradio_api/queue/join"
body = '{{"data":[null,null],"event_data":null,"fn_index":2,"trigger_id":10,"session_hash":"{hash}"}}'

[prompts]
list = ["hello gradio"]

[phases]
warm = {warm}
fresh = 0
"#
    )
}

/// The number at JSON pointer `key` of `v`; panics naming it when absent.
pub fn num(v: &serde_json::Value, key: &str) -> f64 {
    v.pointer(key)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// The median of `v` (the mean of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A command's stdout as JSON Lines, one value a line.
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

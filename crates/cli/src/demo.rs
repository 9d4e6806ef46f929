//! `firsttoken demo`: the whole story offline on one machine. Starts the
//! provider emulator and two reference apps on loopback — `before` with the
//! story's problems (`--serial --db-roundtrips 4`) and `after` without — runs
//! the `article` protocol (scaled down unless `--full`) against each, stores
//! everything as `emulated`, prints the report with the before/after
//! comparison and writes a self-contained HTML report.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use firsttoken_emulator::{Profile, Settings, TruthLog};

use crate::session::{RunArgs, run_session_cmd};

/// `firsttoken demo`.
#[derive(Debug, Args)]
#[command(
    after_help = "Everything runs on 127.0.0.1 with an emulated upstream; results are labelled `emulated`.
The scaled protocol takes about two minutes on 2 cores; --full runs all 323 requests per app (much longer)."
)]
pub struct DemoArgs {
    /// Run the article's full protocol (323 requests per app, 30 s idle gaps before cold probes).
    #[arg(long)]
    pub full: bool,
    /// Result store.
    #[arg(long, default_value = "firsttoken-demo.db")]
    pub store: String,
    /// Where to write the HTML report.
    #[arg(long, default_value = "firsttoken-demo.html")]
    pub html: PathBuf,
    /// Seed for the emulator and the sessions.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
}

const PROMPTS: &str = r#"[
  "What drives the time to first token of a streamed answer?",
  "According to the annual report, what was the operating margin?",
  "Summarise the liquidity policy in two sentences.",
  "Explain keep-alive connections to a new engineer.",
  "What does the quarterly statement say about cash flow?",
  "Give me three tips for faster onboarding."
]"#;

fn phases(full: bool) -> &'static str {
    if full {
        // The article's protocol: 10 ping, 3 cold, 120 warm, 40 fresh, 90 direct (30 per strategy), 60 concurrent.
        r#"ping = 10
cold = { count = 3, idle_gap = "30s" }
warm = 120
fresh = 40
direct = 90
concurrency = { levels = [1, 3, 5], requests = 20 }"#
    } else {
        // The same shape at about a fifth of the size.
        r#"ping = 5
cold = { count = 2, idle_gap = "3s" }
warm = 24
fresh = 8
direct = 9
concurrency = { levels = [1, 3, 5], requests = 10 }"#
    }
}

fn config(app: &str, emulator: &str, label: &str, app_db: &str, seed: u64, full: bool) -> String {
    format!(
        r#"[session]
network = "loopback-demo"
code_version = "{label}"
seed = {seed}
emulated = true
timeout = "60s"

[app]
base_url = "{app}"
version_path = "/version"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'

[[app.paths]]
name = "docs"
path = "/api/message"
body = '{{"message": "{{prompt}}"}}'

[app.auth]
signup_path = "/api/auth/signup"
body = '{{"email": "{{email}}", "password": "{{password}}"}}'
token_pointer = "/token"
id_pointer = "/user_id"
accounts = 3

[app.cleanup]
database_url = "{app_db}"
delete_sql = "DELETE FROM users WHERE id IN ({{ids}})"
count_sql = "SELECT count(*) FROM users WHERE id IN ({{ids}})"

[direct]
url = "{emulator}/v1/chat/completions"
model = "emulated-model"

[[direct.strategies]]
name = "default"

[[direct.strategies]]
name = "ignore-one"
extra = {{ provider = {{ ignore = ["quickstart"] }} }}

[[direct.strategies]]
name = "ignore-two"
extra = {{ provider = {{ ignore = ["quickstart", "steady"] }} }}

[ping]
url = "{app}/health"

[prompts]
list = {PROMPTS}

[phases]
{phases}

[prices]
"emulated-model" = {{ input = 0.50, output = 1.50 }}
"#,
        phases = phases(full)
    )
}

async fn listen() -> anyhow::Result<(TcpListener, String)> {
    let l = TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen on 127.0.0.1")?;
    let base = format!("http://{}", l.local_addr()?);
    Ok((l, base))
}

/// Start a reference app on loopback; returns its base URL.
async fn refapp(
    upstream: &str,
    db: &str,
    label: &str,
    bad: bool,
    shutdown: &CancellationToken,
) -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let (listener, base) = listen().await?;
    let options = firsttoken_refapp::Options {
        database_url: db.to_string(),
        upstream_url: format!("{upstream}/v1"),
        version_label: Some(label.to_string()),
        serial: bad,
        db_roundtrips: if bad { 4 } else { 0 },
        ..firsttoken_refapp::Options::default()
    };
    let config = firsttoken_refapp::Config::new(options).context("reference app settings")?;
    let state = firsttoken_refapp::AppState::new(config)
        .await
        .context("cannot start the reference app")?;
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = firsttoken_refapp::serve(listener, state, stop).await {
            eprintln!("reference app stopped: {e}");
        }
    });
    Ok((base, task))
}

/// Run the demo.
pub async fn run(a: DemoArgs) -> anyhow::Result<ExitCode> {
    let work = tempfile::tempdir().context("cannot create a temporary directory")?;
    let shutdown = CancellationToken::new();
    // The upstream: the built-in provider profile (quickstart, steady, bulk)
    // with short answers so the whole demo stays near two minutes.
    let mut profile = Profile::builtin();
    profile.pin_tokens(if a.full { 64 } else { 24 });
    let settings = Settings {
        profile: Some(profile),
        seed: a.seed,
        truth: TruthLog::disabled(),
        ..Settings::default()
    };
    let (emu_listener, emu_base) = listen().await?;
    let emu_stop = shutdown.clone();
    let emu = tokio::spawn(async move {
        let _ = firsttoken_emulator::serve(
            emu_listener,
            firsttoken_emulator::app(settings),
            None,
            emu_stop,
        )
        .await;
    });
    eprintln!("emulator on {emu_base} (profile: quickstart / steady / bulk)");
    let mut sessions = Vec::new();
    let mut code = ExitCode::SUCCESS;
    for (label, bad) in [("before", true), ("after", false)] {
        let db = work
            .path()
            .join(format!("refapp-{label}.db"))
            .display()
            .to_string();
        let (app, task) = refapp(&emu_base, &db, label, bad, &shutdown).await?;
        eprintln!(
            "\n== {label}: reference app on {app}{}",
            if bad {
                " with --serial --db-roundtrips 4"
            } else {
                " (default build)"
            }
        );
        let cfg_path = work.path().join(format!("{label}.toml"));
        std::fs::write(
            &cfg_path,
            config(&app, &emu_base, label, &db, a.seed, a.full),
        )?;
        let outcome = run_session_cmd(RunArgs {
            config: cfg_path,
            preset: None,
            store: Some(a.store.clone()),
            network: None,
            code_version: None,
            vantage: None,
            tags: vec!["demo=true".into()],
            seed: Some(a.seed),
            budget_usd: None,
            emulated: true,
            quiet: a.quiet,
        })
        .await?;
        if outcome.code != ExitCode::SUCCESS {
            code = outcome.code;
        }
        sessions.extend(outcome.session_id);
        drop(task);
    }
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(6), emu).await;
    let report = crate::report::demo_report(&a.store, &sessions, &a.html).await?;
    println!("{report}");
    eprintln!("HTML report: {}   store: {}", a.html.display(), a.store);
    Ok(code)
}

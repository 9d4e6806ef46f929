//! `firsttoken`: measure the time to first token that users of a streaming
//! LLM app really wait, phase by phase.
//!
//! Each command module turns its arguments into a validated spec, calls one
//! library and renders: `probe` (drive), `run` and `demo`
//! (`firsttoken-session`; the demo builds its configs in memory and puts
//! every request behind a `shape` relay), `report`, `compare`, `check`,
//! `plan` and `runs` (`firsttoken-read`, rendered by `firsttoken-report`
//! through [`render`]), `export`/`import`/`sessions` (`firsttoken-record`),
//! `import-spans` (`firsttoken-collect`), `cleanup` (`firsttoken-session`),
//! `emulate`, `refapp` and `shape` (their crates); every sentence is
//! `firsttoken-report`'s.
//! Running a session spec is [`measure`]'s, shared by `run`, `plan
//! --pilot` and `demo`: progress bars are an `Observer`
//! (`measure/progress.rs`); `--watch` is the live view (`watch/`: the
//! stored samples folded into analyze's live state, drawn with ratatui;
//! `q` cancels like Ctrl-C, `p` pauses between steps). Ctrl-C and SIGTERM
//! stop cleanly. No command module calls another: what two commands share
//! lives in a module of its own (`measure`, `render`, `out`, `watch`).

/// `println!` that survives a closed stdout (see [`out`]).
macro_rules! outln {
    ($($t:tt)*) => {
        $crate::out::line(format_args!($($t)*))
    };
}

/// `print!` that survives a closed stdout (see [`out`]).
macro_rules! out {
    ($($t:tt)*) => {
        $crate::out::text(format_args!($($t)*))
    };
}

mod browse;
mod check;
mod compare;
mod demo;
mod emulate;
mod measure;
mod out;
mod plan;
mod probe;
mod refapp;
mod render;
mod report;
mod runs;
mod session;
mod shape;
mod store_arg;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Measure the time to first token of streaming LLM endpoints, phase by phase:
/// DNS, connect, TLS, request sent, first byte, first event, first reasoning
/// token, first content token, every later token and the stream end.
#[derive(Debug, Parser)]
#[command(
    name = "firsttoken",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Send streaming requests to an endpoint and time every phase of each.
    Probe(Box<probe::ProbeArgs>),
    /// Run the OpenAI-compatible provider emulator (known TTFT, for tests and demos).
    Emulate(emulate::EmulateArgs),
    /// Write a commented session config (firsttoken.toml).
    Init(session::InitArgs),
    /// Run one measurement session from the config (or a preset) and store every sample.
    Run(Box<session::RunArgs>),
    /// List stored sessions.
    Sessions(session::SessionsArgs),
    /// List runs across agents (`run --run-id`): their agents, state and counts.
    Runs(runs::RunsArgs),
    /// Write a session's raw samples as JSON lines or CSV.
    Export(session::ExportArgs),
    /// Read a JSONL export into the store (marked imported).
    Import(session::ImportArgs),
    /// Read an app's spans (OTLP JSON lines, as the OpenTelemetry Collector's file exporter writes) into a stored session.
    ImportSpans(session::ImportSpansArgs),
    /// Retry a session's test-account cleanup.
    Cleanup(session::CleanupArgs),
    /// Measure messages in a real browser (headless Chromium): network and painted TTFT, render lag.
    Browse(Box<browse::BrowseArgs>),
    /// Run the reference streaming LLM app (the system under test in demos).
    Refapp(Box<refapp::RefappArgs>),
    /// Relay TCP on loopback through an emulated network: delay, jitter, a rate limit.
    Shape(shape::ShapeArgs),
    /// Analyse stored sessions: grouped percentiles with CIs and every diagnostic.
    Report(report::ReportArgs),
    /// Compare a session against a baseline: differences with CIs and a verdict.
    Compare(compare::CompareArgs),
    /// How many requests a comparison or a percentile needs, by simulation on stored pilot data.
    Plan(Box<plan::PlanArgs>),
    /// Fail (exit 1) when thresholds or a baseline comparison fail: for CI pipelines.
    Check(check::CheckArgs),
    /// Run the whole story offline: emulator, a slow and a fixed app, both measured and compared.
    Demo(demo::DemoArgs),
}

/// Exit status: 0 all requests ok, 1 some failed (or the output could not
/// be written), 2 usage or configuration error.
pub(crate) const EXIT_FAILED_REQUESTS: u8 = 1;
pub(crate) const EXIT_USAGE: u8 = 2;

/// An error that is a failure of the work, not of its arguments: exit 1
/// (the output could not be written, say), never 2.
#[derive(Debug)]
pub(crate) struct Failed(pub String);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The multi-threaded runtime, or why it cannot start. Tokio panics when
/// the OS refuses a worker thread (`ulimit -u` reached): that panic is
/// caught, unprinted, and said as an error with what to check.
fn start_runtime() -> Result<tokio::runtime::Runtime, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let built = std::panic::catch_unwind(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    });
    std::panic::set_hook(hook);
    match built {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a thread could not be started");
            Err(format!(
                "{why} — this user may start no more threads or processes (see `ulimit -u`)"
            ))
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match start_runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILED_REQUESTS);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Probe(args) => probe::run(*args).await,
            Command::Emulate(args) => emulate::run(args).await,
            Command::Init(args) => session::init(args),
            Command::Run(args) => session::run(*args).await,
            Command::Sessions(args) => session::sessions(args).await,
            Command::Runs(args) => on_worker(runs::runs(args)).await,
            Command::Export(args) => session::export(args).await,
            Command::Import(args) => session::import(args).await,
            Command::ImportSpans(args) => session::import_spans(args).await,
            Command::Cleanup(args) => session::cleanup(args).await,
            Command::Report(args) => on_worker(report::report(args)).await,
            Command::Compare(args) => on_worker(compare::compare(args)).await,
            Command::Check(args) => on_worker(check::check(args)).await,
            Command::Plan(args) => on_worker(plan::plan(*args)).await,
            Command::Demo(args) => demo::run(args).await,
            Command::Refapp(args) => refapp::run(*args).await,
            Command::Browse(args) => browse::run(*args).await,
            Command::Shape(args) => shape::run(args).await,
        }
    });
    match result {
        // Output that could not be written (a full disk, a closed file):
        // the work is lost, never a success.
        Ok(_) if out::failed() => ExitCode::from(EXIT_FAILED_REQUESTS),
        Ok(code) => code,
        // A reader that stops early (`| head`) is not an error.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e)
            if e.downcast_ref::<Failed>().is_some()
                || e.chain().any(|c| {
                    c.downcast_ref::<firsttoken_session::SessionError>()
                        .is_some_and(|s| s.after_start())
                }) =>
        {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_FAILED_REQUESTS)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// A token cancelled by the first Ctrl-C or SIGTERM.
pub(crate) fn shutdown_token() -> tokio_util::sync::CancellationToken {
    let token = tokio_util::sync::CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = match signal(SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    t.cancel();
                    return;
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {},
                _ = term.recv() => {},
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        t.cancel();
    });
    token
}

/// Runs `f` as a task of the runtime rather than on the thread that
/// blocks on it: a task reading from a PostgreSQL connection then shares a
/// worker with the connection's own task (tokio runs a woken task next on
/// the waking worker), instead of handing every batch of rows across
/// threads. A panic in `f` is this call's panic.
async fn on_worker<F>(f: F) -> anyhow::Result<ExitCode>
where
    F: std::future::Future<Output = anyhow::Result<ExitCode>> + Send + 'static,
{
    match tokio::spawn(f).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(anyhow::anyhow!("the command's task stopped: {e}")),
    }
}
